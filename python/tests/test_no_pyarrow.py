"""Without pyarrow: arrowsmith with Polars and DuckDB, in a virtualenv that holds only those."""
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
import duckdb
ds = arrowsmith.dataset(sys.argv[1])
assert duckdb.sql("SELECT count(*) FROM ds a JOIN ds b USING (A)").fetchall() == [(2,)]
assert "pyarrow" not in sys.modules
print("ok")
"""


def test_polars_and_duckdb_without_pyarrow(tmp_path):
    import duckdb
    import polars

    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=False).create(env_dir)
    python = env_dir / "bin" / "python"
    site = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True).stdout.strip()
    # Only arrowsmith, Polars (whose wheel may be split into polars and _polars_runtime_*) and
    # DuckDB are linked in from the test environment.
    packages = tmp_path / "packages"
    packages.mkdir()
    for module, prefix in ((polars, "polars"), (duckdb, "duckdb")):
        home = pathlib.Path(module.__file__).resolve().parents[1]
        for entry in home.iterdir():
            if entry.name.lstrip("_").startswith(prefix) and not (packages / entry.name).exists():
                (packages / entry.name).symlink_to(entry)
    (packages / "arrowsmith").symlink_to(pathlib.Path(arrowsmith.__file__).resolve().parent)
    pathlib.Path(site, "only-arrowsmith-and-polars.pth").write_text(str(packages) + "\n")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    proc = subprocess.run([str(python), "-c", SCRIPT, str(DATA / "jay" / "tiny.jay"), str(tmp_path / "out.jay")],
                          capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stdout + proc.stderr
