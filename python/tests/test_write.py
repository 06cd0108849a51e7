"""`arrowsmith.write` from the libraries people export from (Polars, DuckDB, DataFusion,
pyarrow, pandas) into each of the five legacy formats, read back by arrowsmith and, where they
apply, by the reference implementations (datatable for Jay, bcolz for bcolz)."""
import pathlib

import pyarrow as pa
import pytest

import arrowsmith

ROWS = 3000
IDS = list(range(ROWS))
XS = [i * 1.5 for i in IDS]
NAMES = ["r%d" % i for i in IDS]


def from_polars():
    import polars as pl

    # Polars exports its strings as Utf8View.
    return pl.DataFrame({"id": IDS, "x": XS, "s": NAMES})


def from_duckdb():
    import duckdb

    return duckdb.sql(
        "SELECT range AS id, (range * 1.5)::DOUBLE AS x, 'r' || range AS s FROM range(%d) ORDER BY id" % ROWS)


def from_datafusion():
    import datafusion

    ctx = datafusion.SessionContext()
    ctx.register_record_batches("t", [[pa.record_batch({"id": IDS, "x": XS, "s": NAMES})]])
    return ctx.sql("SELECT id, x, s FROM t ORDER BY id")


def from_pyarrow():
    return pa.table({"id": IDS, "x": XS, "s": NAMES})


def from_pandas():
    import pandas as pd

    return pd.DataFrame({"id": IDS, "x": XS, "s": NAMES})


PRODUCERS = [from_polars, from_duckdb, from_datafusion, from_pyarrow, from_pandas]
TABLE_FORMATS = ["jay", "ds", "filo", "bcolz"]


def text(value):
    return value.decode() if isinstance(value, bytes) else value


def check_columns(columns):
    assert [int(v) for v in columns["id"]] == IDS
    assert [float(v) for v in columns["x"]] == XS
    assert [text(v) for v in columns["s"]] == NAMES


@pytest.mark.parametrize("ext", TABLE_FORMATS)
@pytest.mark.parametrize("producer", PRODUCERS, ids=lambda p: p.__name__)
def test_write_each_format(producer, ext, tmp_path):
    target = tmp_path / ("out." + ext)
    summary = arrowsmith.write(producer(), target)
    assert summary.rows == ROWS and summary.path == str(target)
    assert summary.format == {"ds": "dataseries"}.get(ext, ext)
    check_columns(arrowsmith.read(target).to_pydict())
    if ext == "jay":
        import datatable

        frame = datatable.fread(str(target))
        check_columns(dict(zip(frame.names, frame.to_list())))
    if ext == "bcolz":
        import bcolz

        ctable = bcolz.open(str(target))
        check_columns({name: list(ctable[name][:]) for name in ctable.names})


def vectors_from_polars():
    import polars as pl

    return pl.DataFrame({"vector": [[float(i), i + 0.5] for i in range(10)], "label": ["p%d" % i for i in range(10)]},
                        schema={"vector": pl.Array(pl.Float64, 2), "label": pl.String})


def vectors_from_duckdb():
    import duckdb

    return duckdb.sql("SELECT [range::DOUBLE, range + 0.5]::DOUBLE[2] AS vector, 'p' || range AS label "
                      "FROM range(10) ORDER BY range")


def vectors_from_datafusion():
    import datafusion

    ctx = datafusion.SessionContext()
    return ctx.sql("SELECT arrow_cast(make_array(CAST(v AS DOUBLE), v + 0.5), 'FixedSizeList(2, Float64)') AS vector, "
                   "concat('p', CAST(v AS VARCHAR)) AS label FROM unnest(range(10)) AS t(v) ORDER BY v")


@pytest.mark.parametrize("producer", [vectors_from_polars, vectors_from_duckdb, vectors_from_datafusion],
                         ids=lambda p: p.__name__)
def test_write_vs(producer, tmp_path):
    """VS holds points: a fixed-size vector per row; the other columns become its app_data."""
    import json

    target = tmp_path / "points.vs"
    assert arrowsmith.write(producer(), target).rows == 10
    back = arrowsmith.read(target)
    assert back.column("vector").to_pylist() == [[float(i), i + 0.5] for i in range(10)]
    assert [json.loads(v) for v in back.column("app_data").to_pylist()] == [{"label": "p%d" % i} for i in range(10)]


def test_write_nulls_where_formats_hold_them(tmp_path):
    import polars as pl

    df = pl.DataFrame({"id": [1, None, 3], "s": ["a", None, "c"]})
    for ext in ("jay", "ds", "filo"):
        target = tmp_path / ("nulls." + ext)
        arrowsmith.write(df, target)
        assert arrowsmith.read(target).to_pydict() == {"id": [1, None, 3], "s": ["a", None, "c"]}


def test_write_format_options(tmp_path):
    table = pa.table({"x": [1.0, None, 3.0]})
    target = tmp_path / "nan.bcolz"
    arrowsmith.write(table, target, bcolz_nulls_as_nan=True, bcolz_chunklen=2, compression="zstd:5")
    import bcolz

    values = list(bcolz.open(str(target))["x"][:])
    assert values[0] == 1.0 and values[1] != values[1] and values[2] == 3.0
    ds = tmp_path / "named.ds"
    arrowsmith.write(table, ds, type="Test::Named", compress_level=9, extent_size=4096)
    assert arrowsmith.inspect(ds)["rows"] == 3
    assert arrowsmith.read(ds, type="Test::Named").num_rows == 3


def test_write_modes(tmp_path):
    table = pa.table({"id": [1, 2, 3]})
    target = tmp_path / "t.jay"
    arrowsmith.write(table, target)
    with pytest.raises(FileExistsError) as raised:
        arrowsmith.write(table, target)
    assert isinstance(raised.value, arrowsmith.ExistsError)
    arrowsmith.write(pa.table({"id": [7]}), target, mode="overwrite")
    assert arrowsmith.read(target).to_pydict() == {"id": [7]}
    with pytest.raises(ValueError, match="append"):
        arrowsmith.write(table, target, mode="append")

    bc = tmp_path / "t.bcolz"
    arrowsmith.write(table, bc, mode="append")  # a missing target is created
    arrowsmith.write(table, bc, mode="append")
    assert arrowsmith.read(bc).to_pydict() == {"id": [1, 2, 3, 1, 2, 3]}
    vs = tmp_path / "t.vs"
    points = pa.table({"vector": pa.array([[1.0, 2.0]], pa.list_(pa.float32(), 2))})
    arrowsmith.write(points, vs, mode="append")
    arrowsmith.write(points, vs, mode="append")
    assert arrowsmith.dataset(vs).count_rows() == 2


def test_write_streams_a_reader(tmp_path):
    """A RecordBatchReader of many batches, and an arrowsmith Reader, pass through batch by batch."""
    batches = [pa.record_batch({"id": list(range(i * 100, i * 100 + 100))}) for i in range(50)]
    reader = pa.RecordBatchReader.from_batches(batches[0].schema, iter(batches))
    first = tmp_path / "a.filo"
    assert arrowsmith.write(reader, first, filo_chunk_size=1000).rows == 5000
    second = tmp_path / "b.jay"
    assert arrowsmith.write(arrowsmith.open(first), second).rows == 5000
    assert arrowsmith.read(second).column("id").to_pylist() == list(range(5000))


def test_failed_write_leaves_nothing(tmp_path):
    # 2**31 - 1 ... Jay's int32 NA sentinel is -2**31: a valid value equal to it cannot be written.
    table = pa.table({"x": pa.array([1, -2**31], pa.int32())})
    target = tmp_path / "t.jay"
    with pytest.raises(arrowsmith.DataError) as raised:
        arrowsmith.write(table, target)
    assert raised.value.kind == "sentinel_collision"
    assert list(tmp_path.iterdir()) == []
    summary = arrowsmith.write(table, target, sentinel_collisions_as_na=True)
    assert arrowsmith.read(target).column("x").to_pylist() == [1, None]
    assert summary.rows == 2


def test_python_exception_stops_the_write(tmp_path):
    """An exception in Python between batches (as Ctrl-C raises KeyboardInterrupt) ends the
    write; the target is not created."""
    batches = [pa.record_batch({"id": [i]}) for i in range(10)]
    reader = pa.RecordBatchReader.from_batches(batches[0].schema, iter(batches))
    seen = []

    def progress(rows):
        seen.append(rows)
        if len(seen) == 3:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        arrowsmith._arrowsmith.write(reader, tmp_path / "t.jay", progress=progress)
    assert list(tmp_path.iterdir()) == []


def test_progress_bar(tmp_path, capsys):
    summary = arrowsmith.write(from_polars(), tmp_path / "p.jay", progress=True)
    assert summary.rows == ROWS
    assert "writing" in capsys.readouterr().err


def test_write_refuses_what_is_not_arrow(tmp_path):
    with pytest.raises(TypeError, match="__arrow_c_stream__"):
        arrowsmith.write([1, 2, 3], tmp_path / "t.jay")
    with pytest.raises(TypeError, match="typo"):
        arrowsmith.write(from_pyarrow(), tmp_path / "t.jay", typo=1)
    with pytest.raises(ValueError, match="bcolz_chunklen"):
        arrowsmith.write(from_pyarrow(), tmp_path / "t.jay", bcolz_chunklen=10)
    with pytest.raises(ValueError, match="compression"):
        arrowsmith.write(from_pyarrow(), tmp_path / "t.bcolz", compression="nope")
    assert not pathlib.Path(tmp_path / "t.jay").exists()


def _fsyncs(tmp_path, script):
    """The fsync/fdatasync calls of a Python process running `script`, counted by strace; None
    when strace cannot trace here."""
    import shutil
    import subprocess
    import sys

    if shutil.which("strace") is None:
        return None
    trace = tmp_path / "trace.txt"
    run = subprocess.run(["strace", "-f", "-qq", "-e", "trace=fsync,fdatasync", "-o", str(trace),
                          sys.executable, "-c", script], capture_output=True, text=True)
    if run.returncode != 0:
        assert "Error" not in run.stderr, run.stderr
        return None
    return sum(1 for line in trace.read_text().splitlines()
               if "fsync(" in line or "fdatasync(" in line)


@pytest.mark.parametrize("ext", ["jay", "ds", "filo", "bcolz", "parquet"])
def test_durable_false_skips_every_flush(ext, tmp_path):
    data = pa.table({"id": IDS, "x": XS})
    for durable in (True, False):
        target = tmp_path / ("out-%s.%s" % (durable, ext))
        script = ("import pyarrow as pa, arrowsmith\n"
                  "arrowsmith.write(pa.table({'id': %r, 'x': %r}), %r, durable=%r)"
                  % (IDS, XS, str(target), durable))
        flushes = _fsyncs(tmp_path, script)
        if flushes is None:
            arrowsmith.write(data, target, durable=durable)
        elif durable:
            assert flushes > 0
        else:
            assert flushes == 0
        back = arrowsmith.read(target)
        assert back.column("id").to_pylist() == IDS
        assert back.column("x").to_pylist() == XS


def test_durable_false_does_not_apply_to_append(tmp_path):
    target = tmp_path / "t.bcolz"
    arrowsmith.write(pa.table({"x": XS}), target)
    with pytest.raises(ValueError, match="durable=False"):
        arrowsmith.write(pa.table({"x": XS}), target, mode="append", durable=False)


@pytest.mark.parametrize("target, keywords, flags", [
    ("t.ds", {"type": "Test::Same", "compress_level": 9, "extent_size": 4096},
     ["--type", "Test::Same", "--compress-level", "9", "--extent-size", "4096"]),
    ("t.bcolz", {"bcolz_chunklen": 100, "bcolz_shuffle": 2},
     ["--bcolz-chunklen", "100", "--bcolz-shuffle", "2"]),
    ("t.filo", {"filo_chunk_size": 500, "filo_encoding": "simple"},
     ["--filo-chunk-size", "500", "--filo-encoding", "simple"]),
])
def test_keywords_and_flags_are_the_same_settings(tmp_path, target, keywords, flags):
    """The same settings as Python keywords and as command-line flags (each a spelling of a key
    of docs/settings.md) write outputs with the same structure and rows."""
    from conftest import run_cli

    table = from_pyarrow()
    source = tmp_path / "in.arrow"
    with pa.ipc.new_file(source, table.schema) as sink:
        sink.write_table(table)
    compression = {"t.ds": "zlib", "t.bcolz": "lz4"}.get(target)
    by_flags = tmp_path / "cli" / target
    by_flags.parent.mkdir()
    codec_flags = ["--compression", compression] if compression else []
    proc = run_cli("convert", source, by_flags, *codec_flags, *flags)
    assert proc.returncode == 0, proc.stderr
    by_keywords = tmp_path / "py" / target
    by_keywords.parent.mkdir()
    arrowsmith.write(table, by_keywords, compression=compression, **keywords)
    want = arrowsmith.inspect(by_flags)
    got = arrowsmith.inspect(by_keywords)
    for report in (want, got):
        report.pop("file", None)
    assert got == want
    assert arrowsmith.read(by_keywords).equals(arrowsmith.read(by_flags))
