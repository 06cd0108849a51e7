"""`arrowsmith.read` against the command line: every sample file of every format gives the
same table as `arrowsmith convert FILE out.arrow` (schema, metadata and values), or, when the
command line refuses the file, the same one-line error as an arrowsmith exception (each front end
spelling the settings its own way: the CLI names its flags, the library its settings)."""
import pyarrow as pa
import pytest

import arrowsmith
from conftest import DATA, assert_same_table, cli_flags, fixtures, python_error_of, run_cli


@pytest.mark.parametrize("path, options", fixtures())
def test_read_equals_cli(path, options, tmp_path):
    out = tmp_path / "out.arrow"
    proc = run_cli("convert", path, out, *cli_flags(options))
    assert proc.returncode in (0, 1, 2), proc.stderr
    if proc.returncode == 0:
        want = pa.ipc.open_file(out).read_all()
        assert_same_table(arrowsmith.read(path, **options), want)
    else:
        with pytest.raises(arrowsmith.ArrowsmithError) as raised:
            arrowsmith.read(path, **options)
        assert python_error_of(proc.stderr.strip()) == "error: " + str(raised.value)
        if proc.returncode == 2:
            assert isinstance(raised.value, ValueError)


def test_every_family_is_sampled():
    ids = [p.id for p in fixtures()]
    for family in ("jay/", "dataseries/", "filo/set.filo", "filo/vectors/", "vs/", "bcolz/"):
        assert sum(i.startswith(family) for i in ids) >= 1, family
    assert len(ids) > 150


def test_columns_limit_and_batch_size():
    path = DATA / "jay" / "all_types.jay"
    full = arrowsmith.read(path)
    got = arrowsmith.read(path, columns=["s32", "i8"], limit=3)
    assert got.column_names == ["s32", "i8"]
    assert got.equals(full.select(["s32", "i8"]).slice(0, 3))
    by_position = arrowsmith.read(path, columns=[7, 1], limit=3)
    assert by_position.equals(got)
    batches = list(arrowsmith.open(path, batch_size=2))
    assert [b.num_rows for b in batches] == [2] * (full.num_rows // 2) + [full.num_rows % 2] * (full.num_rows % 2)
    assert pa.Table.from_batches([pa.record_batch(b) for b in batches]).equals(full)


def test_dataseries_options_are_the_clis(tmp_path):
    path = DATA / "dataseries" / "generated" / "multitype.ds"
    out = tmp_path / "out.arrow"
    proc = run_cli("convert", path, out, "--type", "Test::Basic", "--utf8")
    assert proc.returncode == 0, proc.stderr
    got = arrowsmith.read(path, type="Test::Basic", utf8=True)
    assert_same_table(got, pa.ipc.open_file(out).read_all())


def test_reader_speaks_pycapsule():
    import polars as pl

    path = DATA / "jay" / "tiny.jay"
    reader = arrowsmith.open(path)
    assert pa.schema(reader.schema) == pa.schema(reader)
    assert reader.schema.names == ["A", "B"]
    table = pa.table(reader)
    assert reader.closed
    assert pl.DataFrame(arrowsmith.open(path)).equals(pl.from_arrow(table))
    batch = next(iter(arrowsmith.open(path)))
    assert pa.record_batch(batch).num_rows == len(batch) == batch.num_rows == 3
    assert pl.DataFrame(batch).height == 3


def test_reader_is_one_pass():
    reader = arrowsmith.open(DATA / "jay" / "tiny.jay")
    pa.table(reader)
    with pytest.raises(arrowsmith.ArgumentError, match="already read"):
        pa.table(reader)


def test_inspect_and_formats():
    report = arrowsmith.inspect(DATA / "jay" / "tiny.jay", verify=True)
    assert report["format"] == "jay" and report["rows"] == 3 and report["columns"] == 2
    assert [f["name"] for f in report["schema"]["fields"]] == ["A", "B"]
    assert report["verify"] == {"ok": True, "rows": 3, "batches": 1, "error": None, "damaged": []}
    bad = arrowsmith.inspect(DATA / "vs" / "bad_truncated_block.vs", verify=True)
    assert bad["verify"]["ok"] is False and bad["verify"]["error"]
    names = [f["name"] for f in arrowsmith.formats()]
    assert {"jay", "dataseries", "filo", "filo-vector", "vs", "bcolz", "parquet"} <= set(names)


def test_progress_is_quiet_without_tqdm_and_counts_with_it():
    table = arrowsmith.read(DATA / "jay" / "all_types.jay", progress=True)
    assert table.num_rows == 5
