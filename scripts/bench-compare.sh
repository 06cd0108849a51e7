#!/usr/bin/env bash
# Runs one Criterion bench of two builds alternately: the commit REV and the work tree, several
# rounds, so that a change is told from the machine's drift (docs/performance.md).
#
#   scripts/bench-compare.sh REV BENCH [FILTER] [ROUNDS]
#   scripts/bench-compare.sh a2f48b8 filo "decode|encode" 3
#   DS_BENCH_CODECS=lz4 scripts/bench-compare.sh a2f48b8 dataseries decode
#
# REV is built in a temporary git worktree sharing this checkout's target directory (its
# dependencies are built once); each bench binary is copied aside before the other is built.
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 2 ] || { sed -n '2,10p' "$0"; exit 2; }
rev=$1 bench=$2 filter=${3:-} rounds=${4:-3}
target=$PWD/target
out=$(mktemp -d)
tree=$(mktemp -d)
trap 'git worktree remove --force "$tree" >/dev/null 2>&1 || true; rm -rf "$out"' EXIT

# The path of the bench binary cargo just built (the last "Executable" line).
build() {
    (cd "$1" && CARGO_TARGET_DIR=$target cargo bench -p arrowsmith --bench "$bench" --no-run 2>&1) |
        sed -n 's/.*Executable.*(\(.*\))$/\1/p' | tail -n 1
}

git worktree add --detach "$tree" "$rev" >/dev/null 2>&1
cp "$(build "$tree")" "$out/old"
touch src/lib.rs # the two trees share artifact names: rebuild this one's
cp "$(build "$PWD")" "$out/new"

args=(--bench)
[ -z "$filter" ] || args+=("$filter")
for round in $(seq "$rounds"); do
    for build in old new; do
        echo "== round $round: $build ($([ $build = old ] && echo "$rev" || echo "work tree"))"
        "$out/$build" "${args[@]}" 2>&1 | grep -E ' time: ' | grep -v -E '^ +time: +\[[+−-]'
    done
done
