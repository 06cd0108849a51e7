#!/usr/bin/env bash
# `arrowsmith sql` over a multi-fragment file of each format (Jay, DataSeries, bcolz, Filo set,
# VS) at 1, 2, ... target partitions, one decode thread per reader (RAYON_NUM_THREADS=1), each
# run held to as many cores as partitions (--no-pin: all of them), so that 1 -> 2 partitions
# shows on any machine with two cores (issue 29 section 4). Builds the release CLI, makes the
# inputs with it into target/bench-sql/ once, and prints the table of docs/performance.md
# ("SQL: 1 -> 2 partitions"). Goal: 1 -> 2 partitions >= 1.7x for every file of
# two or more fragments. Arguments go to benches/sql_partitions.py:
#
#   scripts/bench-sql-partitions.sh                    # --cores 1,2, 10,000,000 rows
#   scripts/bench-sql-partitions.sh --cores 1,2,4,8    # the curve on a bigger machine
#   scripts/bench-sql-partitions.sh --no-pin           # every run on all the cores
#   scripts/bench-sql-partitions.sh --rows 1000000 --repeat 3 --formats jay,dataseries
set -euo pipefail
cd "$(dirname "$0")/.."

target_dir=${CARGO_TARGET_DIR:-target}
echo "==> building arrowsmith (release)" >&2
cargo build --release --bin arrowsmith >&2
python3 benches/sql_partitions.py --bin "$target_dir/release/arrowsmith" "$@"
