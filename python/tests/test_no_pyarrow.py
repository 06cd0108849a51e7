"""Without pyarrow: arrowsmith and Polars alone, in a virtualenv that holds only those two."""
import os
import pathlib
import subprocess
import venv

import arrowsmith
from conftest import DATA

SCRIPT = r"""
import sys
try:
    import pyarrow
except ImportError:
    pass
else:
    raise SystemExit("pyarrow is importable: " + pyarrow.__file__)
import polars as pl
import arrowsmith

df = pl.DataFrame(arrowsmith.open(sys.argv[1]))
assert df.columns == ["A", "B"] and df.height == 3, df
assert arrowsmith.scan(sys.argv[1]).filter(pl.col("A") > 1).collect()["A"].to_list() == [3]
out = sys.argv[2]
summary = arrowsmith.write(pl.DataFrame({"x": [1, 2, 3], "s": ["a", "b", None]}), out)
assert summary.rows == 3
assert pl.DataFrame(arrowsmith.dataset(out))["s"].to_list() == ["a", "b", None]
try:
    arrowsmith.read(sys.argv[1])
except ImportError as e:
    assert "pyarrow" in str(e)
else:
    raise SystemExit("read() without pyarrow did not raise ImportError")
assert "pyarrow" not in sys.modules
print("ok")
"""


def test_polars_without_pyarrow(tmp_path):
    import polars

    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=False).create(env_dir)
    python = env_dir / "bin" / "python"
    site = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True).stdout.strip()
    # Only arrowsmith and Polars (whose wheel may be split into polars and _polars_runtime_*)
    # are linked in from the test environment.
    packages = tmp_path / "packages"
    packages.mkdir()
    polars_home = pathlib.Path(polars.__file__).resolve().parents[1]
    for entry in polars_home.iterdir():
        if entry.name.lstrip("_").startswith("polars"):
            (packages / entry.name).symlink_to(entry)
    (packages / "arrowsmith").symlink_to(pathlib.Path(arrowsmith.__file__).resolve().parent)
    pathlib.Path(site, "only-arrowsmith-and-polars.pth").write_text(str(packages) + "\n")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    proc = subprocess.run([str(python), "-c", SCRIPT, str(DATA / "jay" / "tiny.jay"), str(tmp_path / "out.jay")],
                          capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stdout + proc.stderr
