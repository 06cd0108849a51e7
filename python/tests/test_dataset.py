"""`arrowsmith.dataset`: a source any consumer may read several times."""
import pyarrow as pa
import pytest

import arrowsmith
from conftest import DATA, assert_same_table

SOURCES = [
    (DATA / "jay" / "all_types.jay", {}),
    (DATA / "dataseries" / "generated" / "basic-zlib.ds", {}),
    (DATA / "filo" / "set.filo", {}),
    (DATA / "vs" / "f64_r1_plain.vs", {}),
    (DATA / "bcolz" / "datasets" / "ctable_mixed", {}),
    (DATA / "filo" / "vectors" / "int_i8_with_na.bin", {"format": "filo-vector", "filo_type": "Int"}),
]


@pytest.mark.parametrize("path, options", SOURCES, ids=lambda v: getattr(v, "name", ""))
def test_dataset_rereads_and_counts(path, options):
    ds = arrowsmith.dataset(path, **options)
    once = pa.table(ds)
    twice = pa.table(ds)
    assert_same_table(once, twice)
    assert ds.count_rows() == once.num_rows
    assert pa.schema(ds) == once.schema
    assert ds.schema.names == once.column_names
    n = min(2, once.num_rows)
    assert_same_table(ds.head(n), once.slice(0, n))
    assert ds.format in {f["name"] for f in arrowsmith.formats()}


def test_duckdb_self_join():
    import duckdb

    ds = arrowsmith.dataset(DATA / "jay" / "all_types.jay")
    rows = duckdb.sql("SELECT count(*) FROM ds a JOIN ds b ON a.i32 = b.i32").fetchall()
    values = pa.table(ds).column("i32").to_pylist()
    want = sum(1 for a in values for b in values if a is not None and a == b)
    assert rows == [(want,)]
    con = duckdb.connect()
    con.register("frame", ds)
    assert con.sql("SELECT count(*) FROM frame").fetchall() == [(ds.count_rows(),)]
    assert con.sql("SELECT count(*) FROM frame").fetchall() == [(ds.count_rows(),)]


def test_dataset_open_narrows():
    ds = arrowsmith.dataset(DATA / "jay" / "all_types.jay", limit=4)
    assert ds.count_rows() == 4
    table = pa.table(ds.open(columns=["i64", "b8"], limit=10, batch_size=1))
    assert table.column_names == ["i64", "b8"] and table.num_rows == 4
    assert len(list(ds.open(batch_size=1))) == 4


def test_count_rows_without_metadata(tmp_path):
    csv = tmp_path / "t.csv"
    csv.write_text("a,b\n1,x\n2,y\n3,z\n")
    assert arrowsmith.dataset(csv).count_rows() == 3


def test_dataset_checks_options_at_once():
    with pytest.raises(arrowsmith.ArgumentError, match="no column named"):
        arrowsmith.dataset(DATA / "jay" / "tiny.jay", columns=["nope"])
    with pytest.raises(FileNotFoundError):
        arrowsmith.dataset(DATA / "jay" / "missing.jay")
