#!/usr/bin/env bash
# The project's one test command: Rust tests, the interop tests against the real datatable
# 1.1.0 and bcolz (tests/interop, pytest), then the Python package's tests (python/tests,
# through scripts/python-test.sh) against pyarrow, Polars, DuckDB, pandas, datafusion, Ray and
# Dask. Needs only cargo and python3 on the machine: the Python packages are installed into
# target/venv on first use (scripts/venv.sh), in the background while cargo compiles.
#
#   scripts/test.sh                 # everything
#   scripts/test.sh -k keyed        # extra arguments go to pytest
#
# The interop tests use the debug binary: a release build of the dependencies costs over ten
# minutes on two cores, the debug one is shared with `cargo test`, and the test data is small.
set -euo pipefail
cd "$(dirname "$0")/.."

step_start=$SECONDS
step_name=
step() {
    [ -z "$step_name" ] || printf '==> %s: %d s\n' "$step_name" $((SECONDS - step_start))
    step_name=$*
    step_start=$SECONDS
    [ -z "$step_name" ] || printf '\n==> %s\n' "$step_name"
}
trap 'step ""' EXIT

mkdir -p target
venv_log=target/venv-setup.log
scripts/venv.sh >"$venv_log" 2>&1 &
venv_pid=$!

# `cargo test` also builds the binary the interop tests run (target/debug/arrowsmith), with the
# test build's features: a separate `cargo build` would compile DataFusion a second time.
step "cargo test"
cargo test

step "python venv (python/tests/requirements.txt, which includes tests/interop's)"
if ! wait "$venv_pid"; then
    cat "$venv_log" >&2
    echo "error: could not set up the Python venv (scripts/venv.sh)" >&2
    exit 1
fi
venv=$(tail -n 1 "$venv_log")
grep -v "^$venv\$" "$venv_log" || true

step "pytest tests/interop"
export ARROWSMITH_BIN=$PWD/target/debug/arrowsmith
# -p no:cacheprovider: pytest writes nothing into the source tree.
"$venv/bin/python" -m pytest tests/interop -p no:cacheprovider -q -ra "$@"

step "python package (scripts/python-test.sh)"
scripts/python-test.sh "$venv" "$@"
