import os
import subprocess

import pytest

import interop


def pytest_report_header(config):
    try:
        import datatable
        import pyarrow
        versions = "datatable %s, pyarrow %s" % (datatable.__version__, pyarrow.__version__)
    except ImportError as e:  # reported properly by the tests themselves
        versions = "missing: %s" % e
    try:
        binary = interop.binary()
    except RuntimeError as e:
        binary = str(e)
    return ["arrowsmith: %s" % binary, versions]


@pytest.fixture(scope="session", autouse=True)
def _arrowsmith_binary():
    path = interop.binary()
    assert os.access(path, os.X_OK), "ARROWSMITH_BIN=%s is not an executable" % path
    proc = subprocess.run([path, "formats"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, "`arrowsmith formats` fails: " + interop.describe(proc)
    return path


@pytest.fixture(scope="session", autouse=True)
def _reference_datatable():
    import datatable
    assert datatable.__version__ == "1.1.0", "the interop tests need datatable 1.1.0, found " + datatable.__version__
