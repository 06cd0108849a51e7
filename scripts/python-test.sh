#!/usr/bin/env bash
# The Python package's tests: builds the extension into a virtualenv with `maturin develop`
# (a debug build in the workspace's target dir, shared with cargo), installs
# python/tests/requirements.txt there, and runs pytest on python/tests against the debug CLI.
#
#   scripts/python-test.sh                      # venv target/venv (the interop tests' too)
#   scripts/python-test.sh path/to/venv -k scan # a venv of your own; the rest goes to pytest
#
# Needs cargo and python3 >= 3.10. pip runs only when the requirements changed since the last
# successful install (a stamp file inside the venv holds their hash).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

venv=${1:-target/venv}
[ $# -gt 0 ] && shift
case $venv in /*) ;; *) venv=$root/$venv ;; esac
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$root/target}

step() { printf '\n==> %s\n' "$*"; }

req=python/tests/requirements.txt
stamp=$venv/.arrowsmith-python-requirements.sha256
want=$( (cat "$req" tests/interop/requirements.txt; python3 --version) | sha256sum | cut -d' ' -f1)
if [ ! -x "$venv/bin/python" ]; then
    step "python3 -m venv $venv"
    mkdir -p "$(dirname "$venv")"
    python3 -m venv "$venv"
fi
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
    step "pip install -r $req"
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$req"
    echo "$want" > "$stamp"
fi

# The CLI is the reference the tests compare with; scripts/test.sh has built it already (with
# `cargo test`'s features; building it again here would recompile DataFusion).
if [ ! -x "$CARGO_TARGET_DIR/debug/arrowsmith" ]; then
    step "cargo build --bin arrowsmith (the reference the tests compare with)"
    cargo build --bin arrowsmith
fi

step "maturin develop (debug, $CARGO_TARGET_DIR)"
VIRTUAL_ENV=$venv "$venv/bin/maturin" develop --quiet
"$venv/bin/python" -c "import arrowsmith, sys; print('arrowsmith', arrowsmith.__version__, 'from', arrowsmith.__file__)"

step "pytest python/tests"
export ARROWSMITH_BIN=$CARGO_TARGET_DIR/debug/arrowsmith
# -p no:cacheprovider: pytest writes nothing into the source tree.
"$venv/bin/python" -m pytest python/tests -p no:cacheprovider -q -ra "$@"
