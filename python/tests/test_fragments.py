"""`arrowsmith.fragments` / `open_fragment`: the pieces of a source read back to the whole, and
a Fragment survives pickling, into another process too."""
import concurrent.futures
import multiprocessing
import pickle

import pyarrow as pa
import pytest

import arrowsmith
from conftest import DATA, assert_same_table


@pytest.fixture(scope="module")
def sources(tmp_path_factory):
    """Sources of every fragmenting format, big enough for several fragments."""
    root = tmp_path_factory.mktemp("fragments")
    n = 10_000
    table = pa.table({"id": pa.array(range(n), pa.int64()), "s": ["v%d" % (i % 13) for i in range(n)]})
    found = {}
    for ext, options in [("jay", {}), ("bcolz", {"bcolz_chunklen": 1000}), ("ds", {"extent_size": 16384}),
                         ("filo", {"filo_chunk_size": 1000}), ("parquet", {"row_group_size": 1000})]:
        path = root / ("t." + ext)
        arrowsmith.write(table, path, **options)
        found[ext] = path
    points = pa.table({"vector": pa.array([[float(i), 1.0] for i in range(2000)], pa.list_(pa.float64(), 2))})
    found["vs"] = root / "t.vs"
    for start in range(0, 2000, 500):
        arrowsmith.write(points.slice(start, 500), found["vs"], mode="append")
    found["arrow"] = root / "t.arrow"
    arrowsmith.write(pa.RecordBatchReader.from_batches(table.schema, table.to_batches(max_chunksize=1000)),
                     found["arrow"])
    return found


@pytest.mark.parametrize("ext", ["jay", "bcolz", "ds", "filo", "parquet", "vs", "arrow"])
def test_fragments_read_back_the_whole(sources, ext):
    path = sources[ext]
    whole = arrowsmith.read(path)
    pieces = arrowsmith.fragments(path, target_rows=1500)
    assert len(pieces) > 1, pieces
    assert [f.index for f in pieces] == list(range(len(pieces)))
    assert sum(f.rows for f in pieces) == whole.num_rows
    tables = [pa.table(arrowsmith.open_fragment(f)) for f in pieces]
    assert [t.num_rows for t in tables] == [f.rows for f in pieces]
    assert_same_table(pa.concat_tables(tables), whole)
    assert pieces == arrowsmith.dataset(path).fragments(target_rows=1500)


def test_fragment_pickles_and_prints(sources):
    fragment = arrowsmith.fragments(sources["jay"], target_rows=4000)[1]
    copy = pickle.loads(pickle.dumps(fragment))
    assert copy == fragment and hash(copy) == hash(fragment)
    assert arrowsmith.Fragment(fragment.to_json()) == fragment
    assert fragment.range == ("rows", 4000, 8000)
    assert (fragment.format, fragment.rows, fragment.rows_exact) == ("jay", 4000, True)
    assert repr(fragment).startswith("arrowsmith.Fragment(1 of ") and "rows 4000..8000" in repr(fragment)


def test_open_fragment_scan_options(sources):
    fragment = arrowsmith.fragments(sources["bcolz"], target_rows=2000)[2]
    table = pa.table(arrowsmith.open_fragment(fragment, columns=["id"], limit=5, batch_size=2))
    assert table.column("id").to_pylist() == list(range(4000, 4005))


def test_fragments_keep_format_options():
    path = DATA / "dataseries" / "generated" / "multitype.ds"
    pieces = arrowsmith.fragments(path, type="Test::Basic", utf8=True)
    again = pickle.loads(pickle.dumps(pieces))
    table = pa.concat_tables([pa.table(arrowsmith.open_fragment(f)) for f in again])
    assert_same_table(table, arrowsmith.read(path, type="Test::Basic", utf8=True))


def _rows_of(fragment):
    return pa.table(arrowsmith.open_fragment(fragment)).num_rows


def test_fragments_in_other_processes(sources):
    pieces = arrowsmith.fragments(sources["ds"], target_rows=2500)
    context = multiprocessing.get_context("spawn")
    with concurrent.futures.ProcessPoolExecutor(2, mp_context=context) as pool:
        assert list(pool.map(_rows_of, pieces)) == [f.rows for f in pieces]


def test_fragments_errors():
    with pytest.raises(ValueError, match="target_rows"):
        arrowsmith.fragments(DATA / "jay" / "tiny.jay", target_rows=0)
    with pytest.raises(ValueError, match="not a fragment"):
        arrowsmith.Fragment("{}")
    with pytest.raises(FileNotFoundError):
        arrowsmith.fragments(DATA / "jay" / "missing.jay")
