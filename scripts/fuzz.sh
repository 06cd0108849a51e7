#!/bin/sh
# Runs every fuzz target of fuzz/ for N seconds (default 30) on its committed corpus, with
# libFuzzer's limits of 2 GiB and 10 s per input, at low priority. Needs the nightly toolchain
# and cargo-fuzz; without them it says so and exits 0, so CI can call it everywhere.
#
#   scripts/fuzz.sh [SECONDS] [TARGET...]
#
# New inputs that add coverage go to a scratch copy of the corpus, never into the committed
# one. A crash leaves its input under fuzz/artifacts/TARGET/ and makes the script exit 1.
set -eu

seconds=${1:-30}
[ $# -gt 0 ] && shift
root=$(cd "$(dirname "$0")/.." && pwd)

if ! rustup toolchain list 2>/dev/null | grep -q '^nightly'; then
    echo "fuzz: SKIPPED: no nightly toolchain (rustup toolchain install nightly)"
    exit 0
fi
if ! cargo +nightly fuzz --version >/dev/null 2>&1; then
    echo "fuzz: SKIPPED: cargo-fuzz is not installed (cargo install cargo-fuzz)"
    exit 0
fi

cd "$root/fuzz"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$root/target}/fuzz"
if [ $# -eq 0 ]; then
    targets=$(cargo +nightly fuzz list)
    nice -n 10 cargo +nightly fuzz build -O >/dev/null
else
    targets=$*
    for target in $targets; do
        nice -n 10 cargo +nightly fuzz build -O "$target" >/dev/null
    done
fi

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
status=0
for target in $targets; do
    mkdir -p "$scratch/$target" "corpus/$target"
    if ! nice -n 10 cargo +nightly fuzz run -O "$target" "$scratch/$target" "corpus/$target" -- \
        -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=10 -print_final_stats=1 \
        >"$scratch/$target.log" 2>&1; then
        echo "fuzz: $target FAILED; the input is under fuzz/artifacts/$target/:"
        tail -n 40 "$scratch/$target.log"
        status=1
        continue
    fi
    runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$scratch/$target.log" | grep -o '[0-9]*$' || true)
    cov=$(grep -o 'cov: [0-9]*' "$scratch/$target.log" | tail -n 1 || true)
    echo "fuzz: $target ok: ${runs:-?} runs in ${seconds}s, $cov"
done
exit $status
