#!/usr/bin/env bash
# The main job side by side: Jay and bcolz (10 000 000 rows, the inputs of bench-jay.sh and
# bench-bcolz.sh, written by datatable and bcolz) -> Parquet with zstd, `arrowsmith convert`
# (all threads and one) against the Python pipeline of the reference tool + pyarrow
# (benches/parquet_reference.py). Goal (issue 14): arrowsmith >= 3x the Python pipeline.
#
#   scripts/bench-parquet.sh
#   ARROWSMITH_BENCH_ROWS=1000000 ARROWSMITH_BENCH_REPS=3 scripts/bench-parquet.sh
set -euo pipefail
cd "$(dirname "$0")/.."

rows=${ARROWSMITH_BENCH_ROWS:-10000000}
reps=${ARROWSMITH_BENCH_REPS:-5}
target_dir=${CARGO_TARGET_DIR:-target}
venv=$(scripts/venv.sh)
py=$venv/bin/python

echo "==> building arrowsmith (release)"
cargo build --release --bin arrowsmith

jay_dir=target/bench-jay
bcolz_dir=target/bench-bcolz
mkdir -p "$jay_dir" "$bcolz_dir"
jay=$jay_dir/bench_3col_$rows.jay
bcolz=$bcolz_dir/bench_3col_$rows.bcolz
[ -f "$jay" ] || "$py" benches/jay_datatable.py --generate --rows "$rows" "$jay"
[ -d "$bcolz" ] || "$py" benches/bcolz_reference.py --generate --rows "$rows" "$bcolz"

echo "==> side by side ($reps runs each)"
"$py" benches/parquet_reference.py --bin "$target_dir/release/arrowsmith" \
    --jay "$jay" --bcolz "$bcolz" --reps "$reps" --json "$target_dir/bench-parquet.json"
