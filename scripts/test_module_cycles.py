#!/usr/bin/env python3
"""Tests of scripts/module-cycles.py on small made-up crates (the real tree is checked in CI).

    python3 scripts/test_module_cycles.py
"""

import os
import subprocess
import sys
import tempfile
import textwrap
import unittest

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "module-cycles.py")


def run(files, allow=None):
    """Writes `files` ({path: text}) under a temporary src/ and runs the check on it."""
    with tempfile.TemporaryDirectory() as root:
        for path, text in files.items():
            full = os.path.join(root, "src", path)
            os.makedirs(os.path.dirname(full), exist_ok=True)
            with open(full, "w", encoding="utf-8") as f:
                f.write(textwrap.dedent(text))
        allow_path = os.path.join(root, "allow")
        with open(allow_path, "w", encoding="utf-8") as f:
            f.write(allow or "")
        done = subprocess.run(
            [sys.executable, SCRIPT, "--root", root, "--allow", allow_path,
             os.path.join(root, "src")],
            capture_output=True, text=True, check=False)
        return done.returncode, done.stdout + done.stderr


TWO_SIBLINGS = {
    "lib.rs": "mod a;\nmod b;\n",
    "a.rs": """\
        use crate::b::B;
        pub struct A(B);
        """,
    "b.rs": """\
        pub struct B;
        pub fn make() -> crate::a::A {
            todo!()
        }
        """,
}


class ModuleCycles(unittest.TestCase):
    def test_two_siblings_using_each_other_fail_with_both_edges(self):
        code, out = run(TWO_SIBLINGS)
        self.assertEqual(code, 1, out)
        self.assertIn("cycle in src among the children of crate: a -> b -> a", out)
        self.assertIn("crate::a uses crate::b at src/a.rs:1", out)
        self.assertIn("crate::b uses crate::a at src/b.rs:2", out)

    def test_one_way_dependencies_and_parent_child_pass(self):
        code, out = run({
            "lib.rs": "mod a;\nmod b;\npub use a::A;\n",
            "a.rs": "mod inner;\npub struct A;\npub use self::inner::I;\n",
            "a/inner.rs": "pub struct I(super::A);\n",
            "b.rs": "use crate::a::{self, I};\npub struct B(a::A, I);\n",
        })
        self.assertEqual(code, 0, out)
        self.assertIn("0 cycle(s)", out)

    def test_a_sibling_reached_through_the_parents_re_export_counts(self):
        code, out = run({
            "lib.rs": "mod p;\n",
            "p.rs": "mod one;\nmod two;\npub use self::one::One;\n",
            "p/one.rs": "pub struct One(super::two::Two);\n",
            "p/two.rs": "pub struct Two;\nfn f(_: &super::One) {}\n",
        })
        self.assertEqual(code, 1, out)
        self.assertIn("among the children of crate::p: one -> two -> one", out)
        self.assertIn("crate::p::two uses crate::p::one at src/p/two.rs:2", out)

    def test_a_subtree_counts_as_its_top_module(self):
        code, out = run({
            "lib.rs": "mod append;\nmod writer;\n",
            "append.rs": "use crate::writer::Column;\npub struct Appender(Column);\n",
            "writer.rs": "mod chunk;\npub struct Column;\n",
            "writer/chunk.rs": "use crate::append::Appender;\n",
        })
        self.assertEqual(code, 1, out)
        self.assertIn("append -> writer -> append", out)
        self.assertIn("crate::writer::chunk uses crate::append at src/writer/chunk.rs:1", out)

    def test_comments_strings_and_test_modules_are_not_dependencies(self):
        code, out = run({
            "lib.rs": "mod a;\nmod b;\n",
            "a.rs": "pub struct A(crate::b::B);\n",
            "b.rs": """\
                // crate::a::A in a comment
                /* and crate::a::A in a block comment */
                pub const NAME: &str = "crate::a::A";
                pub struct B;
                #[cfg(test)]
                mod tests {
                    use crate::a::A;
                }
                """,
        })
        self.assertEqual(code, 0, out)

    def test_an_allowed_cycle_passes_and_is_still_printed(self):
        code, out = run(TWO_SIBLINGS, allow="src crate: a b  # owned elsewhere\n")
        self.assertEqual(code, 0, out)
        self.assertIn("allowed cycle in src among the children of crate: a -> b -> a", out)
        code, out = run(TWO_SIBLINGS, allow="src crate: a c\n")
        self.assertEqual(code, 1, out)

    def test_a_missing_module_file_is_an_error(self):
        code, out = run({"lib.rs": "mod gone;\n"})
        self.assertNotEqual(code, 0)
        self.assertIn("no file for `mod gone;`", out)


if __name__ == "__main__":
    unittest.main()
