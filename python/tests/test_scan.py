"""`arrowsmith.scan`: a Polars LazyFrame whose queries equal the same queries on the eager
frame, with columns, head and batch size pushed into the reader."""
import polars as pl
import pytest

import arrowsmith
from conftest import DATA


@pytest.fixture(scope="module")
def frame_path(tmp_path_factory):
    path = tmp_path_factory.mktemp("scan") / "frame.jay"
    n = 20_000
    df = pl.DataFrame({
        "id": range(n),
        "group": [i % 7 for i in range(n)],
        "value": [i * 0.25 for i in range(n)],
        "name": ["n%d" % (i % 100) for i in range(n)],
    })
    arrowsmith.write(df, path)
    return path


QUERIES = {
    "filter_select_head": lambda lf: lf.filter(pl.col("group") == 3).select("id", "name").head(25),
    "select_only": lambda lf: lf.select("value"),
    "head_only": lambda lf: lf.head(7),
    "filter_on_unselected": lambda lf: lf.filter(pl.col("value") > 4000).select("name"),
    "count": lambda lf: lf.select(pl.len()),
    "filtered_count": lambda lf: lf.filter(pl.col("name") == "n5").select(pl.len()),
    "group_by": lambda lf: lf.group_by("group").agg(pl.col("value").sum()).sort("group"),
    "tail": lambda lf: lf.tail(3),
}


@pytest.mark.parametrize("query", QUERIES, ids=list(QUERIES))
def test_scan_equals_eager(frame_path, query):
    eager = pl.DataFrame(arrowsmith.read(frame_path))
    lazy = QUERIES[query](arrowsmith.scan(frame_path, batch_size=1000)).collect()
    assert lazy.equals(QUERIES[query](eager.lazy()).collect())


def test_scan_options_and_plan(frame_path):
    lf = arrowsmith.scan(frame_path, columns=["id", "name"], limit=100)
    assert lf.collect_schema().names() == ["id", "name"]
    assert lf.collect().height == 100
    assert "arrowsmith" in lf.explain()


def test_scan_reads_each_collect_afresh():
    lf = arrowsmith.scan(DATA / "dataseries" / "generated" / "multitype.ds", type="Test::Basic")
    assert lf.collect().equals(lf.collect())


def test_scan_raises_data_errors():
    with pytest.raises(Exception, match="bad_offsets"):
        arrowsmith.scan(DATA / "jay" / "bad" / "array_offsets_beyond_child.jay").collect()
