"""`arrowsmith sql` against the reference tools (docs/sql.md):

- a group-by over a Jay frame that datatable wrote gives what pyarrow computes over the same
  data;
- `COPY … TO` Jay and bcolz writes what datatable and bcolz read back as the query's result.
"""
import json

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import interop


def sql_json(*args):
    """Runs `arrowsmith sql ARGS --format json` and returns its rows."""
    proc = interop.run("sql", *args, "--format", "json")
    assert proc.returncode == 0, interop.describe(proc)
    return [json.loads(line) for line in proc.stdout.splitlines() if line]


@pytest.fixture(scope="module")
def frame(tmp_path_factory):
    """A Jay file written by datatable, and the same data as a pyarrow table."""
    import datatable as dt

    n = 50_000
    keys = [i % 7 for i in range(n)]
    values = [None if i % 13 == 0 else i * 0.5 for i in range(n)]
    ids = list(range(n))
    path = tmp_path_factory.mktemp("sql") / "frame.jay"
    dt.Frame(key=keys, value=values, id=ids).to_jay(str(path))
    table = pa.table({"key": pa.array(keys, pa.int32()), "value": pa.array(values, pa.float64()),
                      "id": pa.array(ids, pa.int32())})
    return path, table


def test_group_by_over_a_datatable_frame_matches_pyarrow(frame):
    path, table = frame
    rows = sql_json("SELECT key, count(*) AS n, count(value) AS nv, sum(value) AS s, max(id) AS hi "
                    "FROM '%s' GROUP BY key ORDER BY key" % path)
    want = table.group_by("key").aggregate([("key", "count"), ("value", "count"), ("value", "sum"),
                                            ("id", "max")]).sort_by("key")
    assert [r["key"] for r in rows] == want["key"].to_pylist()
    assert [r["n"] for r in rows] == want["key_count"].to_pylist()
    assert [r["nv"] for r in rows] == want["value_count"].to_pylist()
    assert [r["hi"] for r in rows] == want["id_max"].to_pylist()
    for got, expected in zip((r["s"] for r in rows), want["value_sum"].to_pylist()):
        assert got == pytest.approx(expected, rel=1e-12)


def test_filter_projection_and_limit_match_pyarrow(frame):
    path, table = frame
    rows = sql_json("SELECT id, value FROM '%s' WHERE value > 1000 ORDER BY id LIMIT 5" % path)
    mask = pc.greater(table["value"], 1000)
    want = table.filter(mask).sort_by("id").slice(0, 5)
    assert [r["id"] for r in rows] == want["id"].to_pylist()
    assert [r["value"] for r in rows] == want["value"].to_pylist()


def test_copy_to_jay_is_read_by_datatable(frame, tmp_path):
    import datatable as dt

    path, table = frame
    out = tmp_path / "big.jay"
    proc = interop.run("sql", "COPY (SELECT id, key, value FROM '%s' WHERE key = 3 ORDER BY id) TO '%s'"
                       % (path, out))
    assert proc.returncode == 0, interop.describe(proc)
    got = dt.fread(str(out))
    want = table.filter(pc.equal(table["key"], 3)).sort_by("id")
    assert got.names == ("id", "key", "value")
    assert got["id"].to_list()[0] == want["id"].to_pylist()
    assert got["value"].to_list()[0] == want["value"].to_pylist()


def test_copy_to_bcolz_is_read_by_bcolz(frame, tmp_path):
    import bcolz

    path, table = frame
    out = tmp_path / "big.bcolz"
    proc = interop.run("sql", "COPY (SELECT id, key FROM '%s' WHERE id < 20000 ORDER BY id) TO '%s'"
                       % (path, out))
    assert proc.returncode == 0, interop.describe(proc)
    ct = bcolz.open(str(out))
    want = table.filter(pc.less(table["id"], 20000)).sort_by("id")
    assert list(ct.names) == ["id", "key"]
    assert np.array_equal(ct["id"][:], want["id"].to_numpy())
    assert np.array_equal(ct["key"][:], want["key"].to_numpy())
