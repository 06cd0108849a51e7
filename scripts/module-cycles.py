#!/usr/bin/env python3
"""Reports dependency cycles among the modules of a Rust crate.

The rule (docs/architecture.md): among the children of any module, dependencies point one
way. Each child counts with everything beneath it, so `bcolz::append` and `bcolz::writer`
form a cycle when `append.rs` uses the writer and `writer/chunk.rs` uses `append`'s journal.
A module using its own parent or child is not a cycle: a parent owns its children.

A dependency is a `use` item or a path in code that starts with `crate::`, `super::`,
`self::`, a child module or a name the module imported. Paths are followed through `use`
re-exports to the module that defines the item, so `super::Foo` re-exported from a sibling
counts as a use of that sibling. Comments, string literals and `$crate` paths in macro
definitions are not dependencies.

    scripts/module-cycles.py [--allow FILE] [CRATE_SRC ...]

CRATE_SRC is a directory with `lib.rs` or `main.rs` (default: `src python/src`). Each cycle
is printed with the file:line of the first reference on each edge. The exit code is 1 when a
cycle is found that the allow-list (default `scripts/module-cycles.allow` beside this script,
when present) does not name, 2 on bad arguments, 0 otherwise.

Allow-list lines read `<crate src> <parent module>: <child> <child> ...` (`#` starts a
comment): a cycle among children of that parent is allowed when all its members are listed.
"""

import argparse
import os
import re
import sys

IDENT = r"[A-Za-z_][A-Za-z0-9_]*"
ITEM_RE = re.compile(
    r"\b(?:fn|struct|enum|trait|type|const|static|union)\s+(" + IDENT + r")"
    r"|\bmacro_rules!\s*(" + IDENT + r")"
)
MOD_DECL_RE = re.compile(r"\bmod\s+(" + IDENT + r")\s*([;{])")
VIS_RE = re.compile(r"\bpub\s*\(\s*(?:in\s+[A-Za-z_:\s]+|crate|super|self)\s*\)")
PATH_RE = re.compile(r"(?<![\w$:])(" + IDENT + r"(?:\s*::\s*" + IDENT + r")+)")
# `#[cfg(test)]` (or `cfg(all(test, …))`) and any other attributes, then the `mod` keyword.
TEST_ATTR_RE = re.compile(r"#\[cfg\((?:all\()?\s*test\b[^\]]*\]\s*(?:#\[[^\]]*\]\s*)*(?:pub\s*)?\Z")
USE_RE = re.compile(r"(?<![\w$])use\s+([^;]*);")
KEYWORD_STARTS = {"Self", "std", "core", "alloc"}


def strip_source(text):
    """Blanks comments and string/char literals, keeping line breaks and columns."""
    out = []
    i, n = 0, len(text)

    def blank(segment):
        return "".join(c if c == "\n" else " " for c in segment)

    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(blank(text[i:j]))
            i = j
        elif text.startswith("/*", i):
            depth, j = 1, i + 2
            while j < n and depth:
                if text.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif text.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            out.append(blank(text[i:j]))
            i = j
        elif re.match(r'b?r(#*)"', text[i:i + 260]) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            m = re.match(r'b?r(#*)"', text[i:])
            close = '"' + m.group(1)
            j = text.find(close, i + m.end())
            j = n if j < 0 else j + len(close)
            out.append(blank(text[i:j]))
            i = j
        elif c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
            out.append(blank(text[i:j]))
            i = j
        elif c == "'":
            # A char literal ('a', '\n', '\u{1F600}') or a lifetime ('a): blank only the former.
            m = re.match(r"'(?:\\(?:u\{[0-9a-fA-F]*\}|x[0-9a-fA-F]{2}|.)|[^\\'\n])'", text[i:i + 16])
            if m:
                out.append(blank(m.group(0)))
                i += m.end()
            else:
                out.append(c)
                i += 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def line_of(text, pos):
    return text.count("\n", 0, pos) + 1


class Module:
    def __init__(self, path, file):
        self.path = path  # tuple of names from the crate root
        self.file = file
        self.children = {}  # name -> tuple path
        self.items = set()
        self.imports = {}  # name -> absolute segment list, or None for an external crate
        self.globs = []
        self.refs = []  # (segments relative to this module, line)


def split_use_tree(tree):
    """Expands a use tree (`a::{b, c::{self, d@e}}`, `@` for `as`) into segment lists."""
    tree = re.sub(r"\s+", "", tree)
    results = []

    def expand(prefix, text):
        depth, parts, start = 0, [], 0
        for k, ch in enumerate(text):
            if ch == "{":
                depth += 1
            elif ch == "}":
                depth -= 1
            elif ch == "," and depth == 0:
                parts.append(text[start:k])
                start = k + 1
        parts.append(text[start:])
        for part in parts:
            if not part:
                continue
            brace = part.find("{")
            if brace >= 0:
                head = part[:brace].rstrip(":")
                inner = part[brace + 1:part.rfind("}")]
                expand(prefix + [s for s in head.split("::") if s], inner)
                continue
            results.append(prefix + part.split("::"))

    expand([], tree)
    return results


def parse_use(text):
    """(segments, name bound) for each leaf of a `use` item's tree."""
    # Keep `as` aliases: rewrite `x as y` to `x@y` before whitespace goes.
    text = re.sub(r"\s+as\s+", "@", text.strip())
    text = text.lstrip(":")
    out = []
    for segs in split_use_tree(text):
        last = segs[-1]
        alias = None
        if "@" in last:
            last, alias = last.split("@", 1)
            segs = segs[:-1] + [last]
        if last == "self":
            segs = segs[:-1]
            bound = alias or (segs[-1] if segs else None)
        elif last == "*":
            bound = "*"
        else:
            bound = alias or last
        out.append((segs, bound))
    return out


class Crate:
    def __init__(self, src_dir):
        self.src_dir = src_dir
        root = None
        for name in ("lib.rs", "main.rs"):
            if os.path.exists(os.path.join(src_dir, name)):
                root = os.path.join(src_dir, name)
                break
        if root is None:
            raise SystemExit(f"module-cycles: no lib.rs or main.rs in {src_dir}")
        self.modules = {}
        self.load_file((), root, owns_dir=src_dir)

    def load_file(self, path, file, owns_dir):
        text = open(file, encoding="utf-8").read()
        code = strip_source(text)
        code = VIS_RE.sub(lambda m: " " * len(m.group(0)), code)
        self.parse_module(path, file, code, 0, len(code), owns_dir)

    def parse_module(self, path, file, code, start, end, owns_dir):
        module = Module(path, file)
        self.modules[path] = module
        # Inline modules (`mod tests { ... }`) are modules of their own: cut them out first.
        body = list(code[start:end])
        pos = start
        while True:
            m = MOD_DECL_RE.search(code, pos, end)
            if not m:
                break
            if not self.depth_zero(code, start, m.start()):
                pos = m.end()
                continue
            name = m.group(1)
            child = path + (name,)
            test_only = TEST_ATTR_RE.search(code, max(start, m.start() - 400), m.start())
            if not test_only:
                module.children[name] = child
            if test_only:
                # Tests may use any layer; they are not part of the library's graph.
                close = m.end() if m.group(2) == ";" else self.matching_brace(code, m.end() - 1, end)
                for k in range(m.start() - start, close - start):
                    if body[k] != "\n":
                        body[k] = " "
                pos = close + 1
            elif m.group(2) == ";":
                child_file = None
                for cand in (os.path.join(owns_dir, name + ".rs"), os.path.join(owns_dir, name, "mod.rs")):
                    if os.path.exists(cand):
                        child_file = cand
                        break
                if child_file is None:
                    raise SystemExit(f"module-cycles: {file}: no file for `mod {name};`")
                child_dir = (
                    os.path.dirname(child_file)
                    if child_file.endswith("mod.rs")
                    else os.path.join(owns_dir, name)
                )
                self.load_file(child, child_file, child_dir)
                pos = m.end()
            else:
                close = self.matching_brace(code, m.end() - 1, end)
                self.parse_module(child, file, code, m.end(), close, os.path.join(owns_dir, name))
                for k in range(m.end() - start, close - start):
                    if body[k] != "\n":
                        body[k] = " "
                pos = close + 1
        own = "".join(body)
        offset_line = code.count("\n", 0, start)

        def lineno(k):
            return offset_line + own.count("\n", 0, k) + 1

        # Items are names defined at this module's own level (depth 0 of its body).
        depth_at = self.depths(own)
        for m in ITEM_RE.finditer(own):
            if depth_at[m.start()] == 0:
                module.items.add(m.group(1) or m.group(2))
        # `use` items: bind names, and each leaf is a reference.
        used_spans = []
        for m in USE_RE.finditer(own):
            used_spans.append((m.start(), m.end()))
            line = lineno(m.start())
            for segs, bound in parse_use(m.group(1)):
                if not segs:
                    continue
                if bound == "*":
                    module.globs.append((segs[:-1], line))
                    module.refs.append((segs[:-1], line))
                    continue
                if bound is not None and depth_at[m.start()] == 0:
                    module.imports[bound] = (segs, line)
                module.refs.append((segs, line))
        rest = list(own)
        for s, e in used_spans:
            for k in range(s, e):
                if rest[k] != "\n":
                    rest[k] = " "
        rest = "".join(rest)
        for m in PATH_RE.finditer(rest):
            segs = [s.strip() for s in m.group(1).split("::")]
            module.refs.append((segs, lineno(m.start())))

    @staticmethod
    def depths(text):
        out, depth = [], 0
        for ch in text:
            out.append(depth)
            if ch == "{":
                depth += 1
            elif ch == "}":
                depth -= 1
        out.append(depth)
        return out

    @staticmethod
    def depth_zero(code, start, pos):
        return code.count("{", start, pos) == code.count("}", start, pos)

    @staticmethod
    def matching_brace(code, open_pos, end):
        depth = 0
        for k in range(open_pos, end):
            if code[k] == "{":
                depth += 1
            elif code[k] == "}":
                depth -= 1
                if depth == 0:
                    return k
        return end

    def absolute(self, path, segs):
        """Segments of a path written in module `path`, from the crate root; None if external."""
        if not segs:
            return None
        head = segs[0]
        if head == "crate":
            return list(segs[1:])
        if head == "super" or head == "self":
            cur = list(path)
            k = 0
            while k < len(segs) and segs[k] in ("super", "self"):
                if segs[k] == "super":
                    if not cur:
                        return None
                    cur.pop()
                k += 1
            return cur + list(segs[k:])
        module = self.modules[path]
        if head in module.children or head in module.items:
            return list(path) + list(segs)
        if head in module.imports:
            target, _ = module.imports[head]
            base = self.absolute(path, target)
            return None if base is None else base + list(segs[1:])
        # An enclosing inline module (`mod tests`) sees its parent's names only through
        # `super::`, so any other first segment is an external crate, a local or a type.
        return None

    def resolve(self, abs_segs, seen=None):
        """The module that defines the item an absolute path names (or the module named)."""
        seen = seen or set()
        cur = ()
        for k, seg in enumerate(abs_segs):
            module = self.modules.get(cur)
            if module is None:
                return cur
            if seg in module.children:
                cur = module.children[seg]
                continue
            if seg in module.items:
                return cur
            if seg in module.imports:
                key = (cur, seg)
                if key in seen:
                    return cur
                seen.add(key)
                target = self.absolute(cur, module.imports[seg][0])
                if target is None:
                    return cur
                return self.resolve(target + list(abs_segs[k + 1:]), seen)
            for glob, _ in module.globs:
                base = self.absolute(cur, glob)
                if base is None:
                    continue
                inner = self.modules.get(tuple(base))
                if inner and (seg in inner.items or seg in inner.imports or seg in inner.children):
                    key = (cur, "*" + seg)
                    if key in seen:
                        continue
                    seen.add(key)
                    return self.resolve(base + list(abs_segs[k:]), seen)
            return cur
        return cur

    def edges(self):
        """(from module, to module, line) for every reference to another module."""
        out = []
        for path, module in self.modules.items():
            for segs, line in module.refs:
                if segs and segs[0] in KEYWORD_STARTS:
                    continue
                target = self.absolute(path, segs)
                if target is None:
                    continue
                defining = self.resolve(target)
                if defining != path and defining in self.modules:
                    out.append((path, defining, module.file, line))
        return out


def name(path):
    return "crate" if not path else "crate::" + "::".join(path)


def sccs(nodes, succ):
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(succ.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(nodes):
        if v not in index:
            visit(v)
    return out


def shortest_cycle(start, members, succ):
    """One shortest cycle through `start` inside the component, as a list of nodes."""
    prev, frontier = {start: None}, [start]
    while frontier:
        nxt = []
        for v in frontier:
            for w in sorted(succ.get(v, ())):
                if w not in members:
                    continue
                if w == start:
                    path = [v]
                    while prev[path[-1]] is not None:
                        path.append(prev[path[-1]])
                    return list(reversed(path)) + [start]
                if w not in prev:
                    prev[w] = v
                    nxt.append(w)
        frontier = nxt
    return [start]


def load_allow(path):
    allow = []
    if not path or not os.path.exists(path):
        return allow
    for raw in open(path, encoding="utf-8"):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        head, _, members = line.rpartition(":")
        parts = head.split()
        if len(parts) != 2 or not members.split():
            raise SystemExit(f"module-cycles: {path}: cannot read `{raw.strip()}`")
        allow.append((os.path.normpath(parts[0]), parts[1], set(members.split())))
    return allow


def check(src_dir, allow, root):
    crate = Crate(src_dir)
    # Lift each edge to the level where the two modules are siblings.
    level_edges = {}  # parent -> {(a, b): [(from, to, file, line)]}
    for frm, to, file, line in crate.edges():
        common = 0
        while common < min(len(frm), len(to)) and frm[common] == to[common]:
            common += 1
        if common == len(frm) or common == len(to):
            continue  # a module and its own ancestor
        parent = frm[:common]
        key = (frm[: common + 1], to[: common + 1])
        level_edges.setdefault(parent, {}).setdefault(key, []).append((frm, to, file, line))
    failures = allowed = 0
    rel_src = os.path.normpath(os.path.relpath(src_dir, root))
    for parent in sorted(level_edges):
        edges = level_edges[parent]
        succ, nodes = {}, set()
        for a, b in edges:
            succ.setdefault(a, set()).add(b)
            nodes.update((a, b))
        for comp in sccs(nodes, succ):
            short = [c[-1] for c in comp]
            ok = any(
                s == rel_src and p == name(parent) and set(short) <= members
                for s, p, members in allow
            )
            label = "allowed cycle" if ok else "cycle"
            if ok:
                allowed += 1
            else:
                failures += 1
            members = set(comp)
            loop = shortest_cycle(comp[0], members, succ)
            print(f"{label} in {rel_src} among the children of {name(parent)}: "
                  + " -> ".join(c[-1] for c in loop))
            if ok:
                continue
            for a in comp:
                for b in sorted(succ.get(a, ())):
                    if b not in members:
                        continue
                    refs = sorted(edges[(a, b)], key=lambda r: (r[2], r[3]))
                    print(f"  {a[-1]} -> {b[-1]}:")
                    shown = {}
                    for frm, to, file, line in refs:
                        shown.setdefault((frm, to), []).append(
                            f"{os.path.relpath(file, root)}:{line}")
                    for (frm, to), places in shown.items():
                        more = f" (+{len(places) - 1} more)" if len(places) > 1 else ""
                        print(f"    {name(frm)} uses {name(to)} at {places[0]}{more}")
    return failures, allowed


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.dirname(here)
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--allow", default=os.path.join(here, "module-cycles.allow"),
                        help="allow-list file (default: scripts/module-cycles.allow)")
    parser.add_argument("--root", default=None,
                        help="directory that paths are printed relative to (default: the repository)")
    parser.add_argument("src", nargs="*", help="crate source directories (default: src python/src)")
    args = parser.parse_args()
    root = os.path.abspath(args.root) if args.root else root
    dirs = args.src or [os.path.join(root, "src"), os.path.join(root, "python", "src")]
    allow = load_allow(args.allow)
    failures = allowed = 0
    for d in dirs:
        if not os.path.isdir(d):
            print(f"module-cycles: no directory {d}", file=sys.stderr)
            return 2
        f, a = check(os.path.abspath(d), allow, root)
        failures += f
        allowed += a
    print(f"module-cycles: {failures} cycle(s), {allowed} allowed, in {len(dirs)} crate(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
