#!/usr/bin/env bash
# Object storage: bytes, round trips, HTTP requests and time of remote reads of every format
# against moto's S3 server, side by side with downloading the object and reading it locally
# (store/benches/remote.rs; docs/performance.md, "Object storage: bytes and requests").
#
#   scripts/bench-remote.sh                                # 1 000 000 rows, best of 3 runs
#   ARROWSMITH_BENCH_ROWS=100000 ARROWSMITH_BENCH_RUNS=1 scripts/bench-remote.sh
#
# moto runs from $ARROWSMITH_PYTHON, else target/venv's (scripts/venv.sh installs moto[server]),
# on a free loopback port, started and stopped by the benchmark.
set -euo pipefail
cd "$(dirname "$0")/.."

export ARROWSMITH_PYTHON=${ARROWSMITH_PYTHON:-$(scripts/venv.sh)/bin/python}

echo "==> building the benchmark (cargo bench profile)"
cargo bench -p arrowsmith-store --bench remote --no-run
echo "==> running it"
cargo bench -p arrowsmith-store --bench remote
