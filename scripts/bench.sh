#!/usr/bin/env bash
# Every side-by-side benchmark of docs/performance.md, one after another, each printing its
# table: run it on an otherwise idle machine (the figures in the doc say the load they had).
#
#   scripts/bench.sh            # everything (about an hour on 2 cores, most of it building)
#   scripts/bench.sh parquet    # only the named ones: jay bcolz parquet peers dataseries filo
#                               # vs fragments partitions remote python
set -euo pipefail
cd "$(dirname "$0")/.."

all=(jay bcolz parquet peers dataseries filo vs fragments partitions remote python)
if [ $# -gt 0 ]; then wanted=("$@"); else wanted=("${all[@]}"); fi

for name in "${wanted[@]}"; do
    printf '\n######## %s ########\n' "$name"
    case $name in
        jay) scripts/bench-jay.sh ;;
        bcolz) scripts/bench-bcolz.sh ;;
        parquet) scripts/bench-parquet.sh ;;
        peers) scripts/bench-parquet-peers.sh ;;
        partitions) scripts/bench-sql-partitions.sh ;;
        remote) scripts/bench-remote.sh ;;
        dataseries | filo | vs | fragments) cargo bench --bench "$name" ;;
        python)
            venv=$(scripts/venv.sh)
            "$venv/bin/python" -m pip install --quiet -r python/tests/requirements.txt
            VIRTUAL_ENV=$venv "$venv/bin/maturin" develop --release --quiet
            "$venv/bin/python" benches/python_reference.py
            ;;
        *) echo "unknown benchmark $name; known: ${all[*]}" >&2; exit 2 ;;
    esac
done
