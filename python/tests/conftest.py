"""Shared helpers of the Python package's tests: where the fixtures are, and the arrowsmith
command line (target/debug/arrowsmith, or $ARROWSMITH_BIN) as the reference for what a read
must give."""
import json
import os
import pathlib
import re
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
DATA = ROOT / "data"


def cli_binary():
    env = os.environ.get("ARROWSMITH_BIN")
    if env:
        return env
    path = ROOT / "target" / "debug" / "arrowsmith"
    if not path.exists():
        pytest.fail("no arrowsmith binary: run `cargo build --bin arrowsmith` or set ARROWSMITH_BIN")
    return str(path)


def run_cli(*args):
    return subprocess.run([cli_binary(), *map(str, args)], capture_output=True, text=True,
                          timeout=300, stdin=subprocess.DEVNULL)


def filo_vector_types():
    """The element type of every golden Filo vector, which its bytes do not record."""
    types = {}
    with open(DATA / "filo" / "vectors" / "manifest.jsonl", encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                entry = json.loads(line)
                types[entry["name"] + ".bin"] = entry["type"]
    return types


def fixtures():
    """Every sample input as (id, path, read options): all five formats, good and damaged."""
    found = []
    for path in sorted((DATA / "jay").rglob("*.jay")):
        found.append((path, {}))
    for path in sorted((DATA / "dataseries").rglob("*.ds")):
        found.append((path, {}))
    found.append((DATA / "filo" / "set.filo", {}))
    types = filo_vector_types()
    for path in sorted((DATA / "filo" / "vectors").glob("*.bin")):
        if path.name in types:
            found.append((path, {"format": "filo-vector", "filo_type": types[path.name]}))
    for path in sorted((DATA / "vs").glob("*.vs")):
        found.append((path, {}))
    for path in sorted((DATA / "bcolz" / "datasets").iterdir()):
        found.append((path, {}))
    return [pytest.param(p, o, id=str(p.relative_to(DATA))) for p, o in found]


def cli_flags(options):
    """The command line's spelling of read options."""
    flags = []
    for key, value in options.items():
        flag = "--from" if key == "format" else "--" + key.replace("_", "-")
        flags += [flag] if value is True else [flag, str(value)]
    return flags


# The inspect report's words: the CLI's flags for the settings the library's report names as
# "the KEY option" (Python keeps the library's words); the specific phrases first.
FLAG_SETTINGS = [
    ("choose one with --type", "choose one with the type option"),
    ("choose with --type", "choose with the type option"),
    ("name it with --from", "name it with the format option"),
    ("--filo-type", "the filo_type option"),
    ("--bcolz-nulls-as-nan", "the bcolz_nulls_as_nan option"),
]


def cli_spelling_of(line):
    """A line of the command line's report with its flags spelled as the library's settings."""
    for flag, setting in FLAG_SETTINGS:
        line = line.replace(flag, setting)
    return line


def python_error_of(line):
    """The command line's `error:` line as Python words it: an error names its setting by key,
    which the CLI spells as its flag and Python as its keyword (docs/settings.md)."""
    line = re.sub(r"--(from|to)\b", "format=", line)
    line = line.replace("--overwrite", 'mode="overwrite"').replace("--no-sync", "durable=False")
    line = line.replace("--append", "mode=")
    return re.sub(r"--([a-z0-9]+(?:-[a-z0-9]+)*)", lambda m: m.group(1).replace("-", "_") + "=", line)


def assert_same_table(got, want):
    """Equal schemas (metadata included) and values; floats compared by their bits, so that
    NaN equals NaN."""
    import pyarrow as pa

    assert got.schema.equals(want.schema, check_metadata=True), (got.schema, want.schema)
    assert got.num_rows == want.num_rows
    bits = {pa.float16(): pa.int16(), pa.float32(): pa.int32(), pa.float64(): pa.int64()}
    for name, a, b in zip(got.column_names, got.columns, want.columns):
        a, b = a.combine_chunks(), b.combine_chunks()
        if a.type in bits:
            a, b = a.view(bits[a.type]), b.view(bits[b.type])
        assert a.equals(b), "column %r differs:\n%s\n%s" % (name, a, b)


# --- Object storage: moto's S3 server ---------------------------------------------------------

# The secret the remote tests sign with; no message, repr, fragment or report may show it.
S3_SECRET = "arrowsmith-test-secret-Zq7uXw3v"


def _free_port():
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _require_moto():
    """Skips the test (fails it under CI=true) when moto's server cannot run here."""
    import importlib.util

    missing = [m for m in ("moto", "boto3", "flask") if importlib.util.find_spec(m) is None]
    if missing:
        reason = "moto's S3 server needs %s: pip install 'moto[server]'" % ", ".join(missing)
        if os.environ.get("CI") == "true":
            pytest.fail(reason)
        pytest.skip(reason)


def _wait_until_serving(endpoint, server):
    import time
    import urllib.request

    deadline = time.monotonic() + 60
    while True:
        try:
            urllib.request.urlopen(endpoint + "/moto-api/", timeout=2).close()
            return
        except OSError:
            if server.poll() is not None or time.monotonic() > deadline:
                pytest.fail("moto's S3 server did not start on %s" % endpoint)
            time.sleep(0.2)


def _stop(server):
    server.terminate()
    try:
        server.wait(timeout=10)
    except subprocess.TimeoutExpired:
        server.kill()
        server.wait()


@pytest.fixture(scope="session")
def s3_server():
    """moto's S3 server (``python -m moto.server``, from moto[server] in requirements.txt) on a
    free loopback port, stopped after the session: its endpoint URL. Without moto the tests
    that need it are skipped with the reason, except under CI=true, where they fail."""
    import sys

    _require_moto()
    port = _free_port()
    endpoint = "http://127.0.0.1:%d" % port
    server = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
    try:
        _wait_until_serving(endpoint, server)
        yield endpoint
    finally:
        _stop(server)


class CountedS3:
    """moto's S3 server behind counting_s3.py's recording middleware: ``endpoint``, and
    ``requests()``, every request answered since ``mark()`` (dicts of method, path, query,
    range, status and bytes), whichever process or thread sent it."""

    def __init__(self, endpoint, log_path):
        self.endpoint = endpoint
        self._log_path = log_path
        self._mark = 0

    def mark(self):
        self._mark = self._log_path.stat().st_size

    def requests(self):
        with open(self._log_path, "rb") as fh:
            fh.seek(self._mark)
            return [json.loads(line) for line in fh.read().splitlines()]


@pytest.fixture(scope="session")
def counted_s3(tmp_path_factory):
    """A second moto S3 server, run by python/tests/counting_s3.py, which records each request
    it answers; stopped after the session. Skipped (or failed under CI=true) as s3_server."""
    import sys

    _require_moto()
    log_path = tmp_path_factory.mktemp("counted-s3") / "requests.jsonl"
    log_path.touch()
    script = pathlib.Path(__file__).with_name("counting_s3.py")
    server = subprocess.Popen([sys.executable, str(script), str(log_path)],
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                              stdin=subprocess.DEVNULL, text=True)
    try:
        port = server.stdout.readline().strip()
        if not port.isdigit():
            pytest.fail("the counting S3 server did not start (printed %r)" % port)
        endpoint = "http://127.0.0.1:%s" % port
        _wait_until_serving(endpoint, server)
        yield CountedS3(endpoint, log_path)
    finally:
        _stop(server)


def s3_options_for(endpoint):
    """The storage_options of a read or write through the moto server at ``endpoint``."""
    return {
        "aws_endpoint_url": endpoint,
        "aws_allow_http": "true",
        "aws_access_key_id": "arrowsmith-test-key",
        "aws_secret_access_key": S3_SECRET,
        "aws_region": "us-east-1",
    }


def s3_client_for(endpoint):
    import boto3

    return boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1",
                        aws_access_key_id="arrowsmith-test-key",
                        aws_secret_access_key=S3_SECRET)


@pytest.fixture(scope="session")
def s3_options(s3_server):
    """The storage_options of a read or write through the moto server."""
    return s3_options_for(s3_server)


@pytest.fixture(scope="session")
def s3_client(s3_server):
    return s3_client_for(s3_server)
