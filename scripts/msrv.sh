#!/usr/bin/env bash
# Checks that the core crate builds with its stated MSRV (`rust-version` in Cargo.toml).
#
# With that toolchain installed (`rustup toolchain install 1.85`), it simply builds with it.
# Without it (this machine is offline, so CI falls back to this), two checks stand in for it:
#   1. clippy's `incompatible_msrv` lint, which reads `rust-version` and fails on any standard
#      library API stabilised after it; it does not see language features (let chains, …);
#   2. no dependency in the build declares a `rust-version` newer than ours.
set -euo pipefail
cd "$(dirname "$0")/.."

msrv=$(sed -n 's/^rust-version = "\(.*\)"$/\1/p' Cargo.toml | head -1)
[ -n "$msrv" ] || { echo "msrv.sh: no rust-version in Cargo.toml" >&2; exit 1; }

if rustup toolchain list 2>/dev/null | grep -q "^$msrv"; then
  echo "msrv.sh: building arrowsmith with Rust $msrv"
  exec cargo "+$msrv" check -p arrowsmith --lib --locked
fi

echo "msrv.sh: Rust $msrv is not installed; checking with clippy::incompatible_msrv and the dependencies' rust-version"
cargo clippy -p arrowsmith --lib --locked -- -A clippy::all -D clippy::incompatible_msrv

cargo metadata --format-version 1 --locked --filter-platform "$(rustc -vV | sed -n 's/^host: //p')" |
  python3 -c '
import json, sys
msrv = tuple(int(x) for x in sys.argv[1].split("."))
meta = json.load(sys.stdin)
# Only what the library itself builds: follow normal dependencies from arrowsmith.
nodes = {n["id"]: n for n in meta["resolve"]["nodes"]}
packages = {p["id"]: p for p in meta["packages"]}
root = next(p["id"] for p in meta["packages"] if p["name"] == "arrowsmith")
seen, todo, newer = set(), [root], []
while todo:
    pid = todo.pop()
    if pid in seen:
        continue
    seen.add(pid)
    need = packages[pid].get("rust_version")
    if need and tuple(int(x) for x in need.split(".")) > msrv + (0,) * (3 - len(msrv)):
        package = packages[pid]
        newer.append(" ".join([package["name"], package["version"], "needs Rust", need]))
    for dep in nodes[pid]["deps"]:
        if any(k["kind"] in (None, "build") for k in dep["dep_kinds"]):
            todo.append(dep["pkg"])
if newer:
    sys.exit("msrv.sh: dependencies newer than the MSRV:\n  " + "\n  ".join(sorted(newer)))
print(f"msrv.sh: {len(seen)} crates, none needs a Rust newer than {sys.argv[1]}")
' "$msrv"
