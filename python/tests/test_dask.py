"""`arrowsmith.dask` on Dask's local schedulers: multi-file, multi-fragment reads give what a
single-process `arrowsmith.read` of the same files gives, Dask's column projection reaches the
fragments' reads, and a damaged file fails the computation with arrowsmith's error."""
import shutil

import pytest

dask = pytest.importorskip("dask")
dd = pytest.importorskip("dask.dataframe")

import pandas as pd  # noqa: E402
import pyarrow as pa  # noqa: E402

import arrowsmith  # noqa: E402
import arrowsmith.dask  # noqa: E402
from conftest import DATA  # noqa: E402


@pytest.fixture(autouse=True)
def synchronous():
    with dask.config.set(scheduler="synchronous"):
        yield


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    """Directories of several files per format, each file in several fragments."""
    root = tmp_path_factory.mktemp("dask-inputs")

    def table(n, start):
        return pa.table({
            "id": pa.array(range(start, start + n), pa.int64()),
            "x": pa.array([i * 0.25 if i % 7 else None for i in range(start, start + n)], pa.float64()),
            "s": pa.array(["w%d" % (i % 5) for i in range(start, start + n)], pa.string()),
        })

    found = {}
    for name, ext, options in [("dataseries", "ds", {"extent_size": 8192}), ("jay", "jay", {})]:
        directory = root / name
        directory.mkdir()
        for k in range(3):
            arrowsmith.write(table(2500, k * 2500), directory / ("p%d.%s" % (k, ext)), **options)
        (directory / "notes.txt").write_text("not data")
        found[name] = directory
    bcolz = root / "bcolz"
    bcolz.mkdir()
    numbers = table(3000, 0).select(["id"])
    arrowsmith.write(numbers.slice(0, 1800), bcolz / "a.bcolz", bcolz_chunklen=400)
    arrowsmith.write(numbers.slice(1800), bcolz / "b.bcolz", bcolz_chunklen=400)
    found["bcolz"] = bcolz
    return found


def single_process(directory, names, **options):
    tables = [arrowsmith.read(directory / n, **options) for n in names]
    return pa.concat_tables(tables).to_pandas(types_mapper=pd.ArrowDtype)


@pytest.mark.parametrize("name,files,options", [
    ("dataseries", ["p0.ds", "p1.ds", "p2.ds"], {"utf8": True}),
    ("jay", ["p0.jay", "p1.jay", "p2.jay"], {}),
    ("bcolz", ["a.bcolz", "b.bcolz"], {}),
])
def test_directory_reads_as_one_process_reads_its_files(inputs, name, files, options):
    want = single_process(inputs[name], files, **options)
    df = arrowsmith.dask.read(inputs[name], target_rows=800, **options)
    assert df.npartitions >= 2 * len(files)
    assert df.npartitions == sum(
        len(arrowsmith.fragments(inputs[name] / f, target_rows=800, **options)) for f in files)
    assert len(df) == len(want)
    assert df["id"].sum().compute() == want["id"].sum()
    pd.testing.assert_frame_equal(df.compute(), want)


def test_threaded_scheduler_gives_the_same(inputs):
    want = single_process(inputs["jay"], ["p0.jay", "p1.jay", "p2.jay"])
    with dask.config.set(scheduler="threads", num_workers=2):
        got = arrowsmith.dask.read(inputs["jay"], target_rows=800).compute()
    pd.testing.assert_frame_equal(got, want)


def test_meta_matches_the_partitions_and_divisions_are_row_numbers(inputs):
    df = arrowsmith.dask.read(inputs["dataseries"], target_rows=800, utf8=True)
    first = df.partitions[0].compute()
    assert dict(df.dtypes) == dict(first.dtypes)
    assert str(df.dtypes["x"]) == "double[pyarrow]" and first["x"].isna().any()
    assert df.known_divisions and df.divisions[0] == 0 and df.divisions[-1] == 7499
    assert df.loc[5000]["id"].compute().tolist() == [5000]


def test_columns_reach_each_fragments_read(inputs, monkeypatch):
    asked = []
    real = arrowsmith.open_fragment

    def spy(fragment, **kwargs):
        asked.append(kwargs.get("columns"))
        return real(fragment, **kwargs)

    monkeypatch.setattr(arrowsmith, "open_fragment", spy)
    want = single_process(inputs["jay"], ["p0.jay", "p1.jay", "p2.jay"])
    got = arrowsmith.dask.read(inputs["jay"], target_rows=800, columns=["s", "id"]).compute()
    pd.testing.assert_frame_equal(got, want[["s", "id"]])
    assert asked and all(c == ["s", "id"] for c in asked)
    # A selection after the read is pushed down by Dask's optimizer into the same argument.
    asked.clear()
    total = arrowsmith.dask.read(inputs["jay"], target_rows=800)["x"].sum().compute()
    assert total == want["x"].sum()
    assert asked and all(c == ["x"] for c in asked)


def test_damaged_file_fails_with_arrowsmiths_error(inputs, tmp_path):
    directory = tmp_path / "damaged"
    shutil.copytree(inputs["dataseries"], directory)
    path = directory / "p2.ds"
    _, start, _ = arrowsmith.fragments(path, target_rows=800)[1].range
    with open(path, "r+b") as fh:
        fh.seek(start + 64)
        byte = fh.read(1)
        fh.seek(start + 64)
        fh.write(bytes([byte[0] ^ 0xFF]))
    with pytest.raises(arrowsmith.DataError) as expected:
        arrowsmith.read(path)
    df = arrowsmith.dask.read(directory, target_rows=800)
    with pytest.raises(arrowsmith.DataError) as failed:
        df["id"].sum().compute()
    assert str(failed.value) == str(expected.value)
    assert "p2.ds" in str(failed.value)


def test_fixture_with_several_extent_types():
    path = DATA / "dataseries" / "generated" / "multitype.ds"
    want = arrowsmith.read(path, type="Test::Basic").to_pandas(types_mapper=pd.ArrowDtype)
    pd.testing.assert_frame_equal(arrowsmith.dask.read(path, type="Test::Basic").compute(), want)
