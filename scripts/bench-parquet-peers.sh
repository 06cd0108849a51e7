#!/usr/bin/env bash
# Parquet output against the best writers (issue 29 §3), in one process tree on one machine:
# the Jay benchmark's 10M rows to zstd Parquet with arrowsmith (from the Jay file and from Arrow
# IPC), Polars and DuckDB (from the Arrow IPC file), where arrowsmith's time goes and the floor
# of zstd -3 on two cores (benches/parquet_peers.py); then the other open goals measured the same
# way in the same run: Jay / bcolz -> Parquet against the Python pipelines
# (benches/parquet_reference.py) and Polars -> Jay against datatable's to_jay
# (benches/python_reference.py, on the release Python extension).
#
#   scripts/bench-parquet-peers.sh
#   ARROWSMITH_BENCH_ROWS=1000000 ARROWSMITH_BENCH_REPS=3 scripts/bench-parquet-peers.sh
#
# ARROWSMITH_BIN: an arrowsmith binary to time instead of building the release one.
# ARROWSMITH_BENCH_PYTHON: `build` (default; `maturin develop --release` into the venv, as
# `scripts/bench.sh python` does), `installed` (the package already in the venv; a debug build
# is timed too, to check this script, and its figures mean nothing) or `skip`.
set -euo pipefail
cd "$(dirname "$0")/.."

rows=${ARROWSMITH_BENCH_ROWS:-10000000}
reps=${ARROWSMITH_BENCH_REPS:-5}
python_step=${ARROWSMITH_BENCH_PYTHON:-build}
target_dir=${CARGO_TARGET_DIR:-target}
venv=$(scripts/venv.sh)
py=$venv/bin/python

bin=${ARROWSMITH_BIN:-}
if [ -z "$bin" ]; then
    # Converting needs no DataFusion: the conversion-only CLI is the same code for this.
    echo "==> building arrowsmith (release, conversion only)"
    cargo build --release --bin arrowsmith -p arrowsmith-cli --no-default-features
    bin=$target_dir/release/arrowsmith
fi

jay_dir=target/bench-jay
bcolz_dir=target/bench-bcolz
mkdir -p "$jay_dir" "$bcolz_dir" "$target_dir"
jay=$jay_dir/bench_3col_$rows.jay
bcolz=$bcolz_dir/bench_3col_$rows.bcolz
[ -f "$jay" ] || "$py" benches/jay_datatable.py --generate --rows "$rows" "$jay"
[ -d "$bcolz" ] || "$py" benches/bcolz_reference.py --generate --rows "$rows" "$bcolz"
echo "==> load before: $(cut -d' ' -f1-3 /proc/loadavg)"

echo "==> Parquet against Polars and DuckDB ($reps runs each)"
"$py" benches/parquet_peers.py --bin "$bin" --jay "$jay" --ipc "$jay_dir/bench_3col_$rows.arrow" \
    --reps "$reps" --json "$target_dir/bench-parquet-peers.json"

echo
echo "==> Jay / bcolz -> Parquet against the Python pipelines ($reps runs each)"
"$py" benches/parquet_reference.py --bin "$bin" --jay "$jay" --bcolz "$bcolz" --reps "$reps" \
    --json "$target_dir/bench-parquet.json"

echo
case $python_step in
    build)
        echo "==> Polars -> Jay against datatable's to_jay (release extension)"
        VIRTUAL_ENV=$venv "$venv/bin/maturin" develop --release --quiet
        "$py" benches/python_reference.py --rows "$rows" --reps "$reps" \
            --json "$target_dir/bench-python.json"
        ;;
    installed)
        echo "==> Polars -> Jay against datatable's to_jay (the installed extension)"
        "$py" benches/python_reference.py --rows "$rows" --reps "$reps" --allow-debug \
            --json "$target_dir/bench-python.json"
        ;;
    skip) echo "==> Polars -> Jay: skipped (ARROWSMITH_BENCH_PYTHON=skip)" ;;
    *) echo "ARROWSMITH_BENCH_PYTHON is build, installed or skip, not $python_step" >&2; exit 2 ;;
esac
echo "==> load after: $(cut -d' ' -f1-3 /proc/loadavg)"
