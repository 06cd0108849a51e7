#!/usr/bin/env bash
# Makes sure target/venv is a Python venv with python/tests/requirements.txt installed (the
# Python package's test dependencies, which include tests/interop/requirements.txt), and prints
# its path. Idempotent: pip runs only when the requirements changed since the last
# successful install (a stamp file inside the venv holds their hash).
# Override the location with ARROWSMITH_VENV.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=${ARROWSMITH_VENV:-target/venv}
req=python/tests/requirements.txt
# The same stamp and hash as scripts/python-test.sh, so that it does not install again.
stamp=$venv/.arrowsmith-python-requirements.sha256
want=$( (cat "$req" tests/interop/requirements.txt; python3 --version) | sha256sum | cut -d' ' -f1)
if [ ! -x "$venv/bin/python" ]; then
    echo "venv: creating $venv" >&2
    mkdir -p "$(dirname "$venv")"
    python3 -m venv "$venv" >&2
fi
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
    echo "venv: installing $req" >&2
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$req" >&2
    echo "$want" > "$stamp"
fi
echo "$venv"
