"""bcolz <-> Arrow against the real bcolz (bcolz-zipline 1.13.0, spec B9).

- datasets written by bcolz at test time (every codec and shuffle, carray and ctable, appended
  ones, a trimmed one with a stale chunk file) are converted by arrowsmith and compared with
  what bcolz itself reads;
- datasets written by arrowsmith are opened by bcolz, compared, appended to by bcolz and read
  back by arrowsmith;
- a bcolz -> Parquet conversion is read back by pyarrow.
"""
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import bcolz
import interop

bcolz.set_nthreads(1)

CODECS = ["blosclz", "lz4", "lz4hc", "zlib", "zstd"]


def arrow_of(src, tmp_path, *flags):
    out = tmp_path / "out.arrow"
    interop.convert(src, out, "--overwrite", *flags)
    return interop.read_ipc_file(out)


def assert_column_matches(column, values, what):
    """An Arrow column against the numpy array bcolz returns, exactly."""
    values = np.asarray(values)
    column = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    assert len(column) == len(values), what
    kind = values.dtype.kind
    if values.ndim > 1:
        assert isinstance(column.type, pa.FixedShapeTensorType), (what, column.type)
        assert list(column.type.shape) == list(values.shape[1:]), what
        got = column.to_numpy_ndarray()
        assert got.dtype == values.dtype.newbyteorder("="), what
        assert np.array_equal(got.view(np.uint8), np.ascontiguousarray(values).astype(got.dtype).view(np.uint8)), what
    elif kind in "iuf":
        got = column.to_numpy(zero_copy_only=False)
        native = values.astype(values.dtype.newbyteorder("="))
        assert got.dtype == native.dtype, (what, got.dtype, native.dtype)
        assert np.array_equal(got.view(np.uint8), native.view(np.uint8)), what
    elif kind == "b":
        assert column.to_pylist() == values.tolist(), what
    elif kind == "S":
        assert column.to_pylist() == values.tolist(), what
    elif kind == "U":
        assert column.to_pylist() == values.tolist(), what
    elif kind in "Mm":
        nat = np.isnat(values)
        assert column.null_count == int(nat.sum()), what
        ticks = values.view(np.int64)
        if pa.types.is_date32(column.type):
            column = column.view(pa.int32()).cast(pa.int64())
        else:
            column = column.view(pa.int64())
        got = np.array([v if v is not None else np.iinfo(np.int64).min for v in column.to_pylist()],
                       dtype=np.int64)
        assert np.array_equal(got, ticks), what
    else:
        raise AssertionError("unexpected dtype %s" % values.dtype)


def sample(n, seed=1):
    rng = np.random.default_rng(seed)
    walk = np.cumsum(rng.integers(-3, 4, n)).astype(np.int32)
    return walk


@pytest.mark.parametrize("cname", CODECS)
@pytest.mark.parametrize("shuffle", [0, 1, 2])
def test_carray_written_by_bcolz(tmp_path, cname, shuffle):
    data = sample(40_000)
    path = tmp_path / "c.bcolz"
    bcolz.carray(data, rootdir=str(path), mode="w", chunklen=16384,
                 cparams=bcolz.cparams(clevel=5, shuffle=shuffle, cname=cname)).flush()
    table = arrow_of(path, tmp_path)
    assert table.schema.metadata[b"bcolz.kind"] == b"carray"
    assert_column_matches(table.column(0), bcolz.open(str(path), mode="r")[:], cname)


def mixed_table(n, seed=2):
    rng = np.random.default_rng(seed)
    ts = (np.datetime64("2015-01-02T00:00:00", "ns") + np.arange(n).astype("m8[m]")).astype("M8[ns]")
    ts[::7] = np.datetime64("NaT")
    words = np.array(["", "a", "béta", "漢字", "😀x", "long value"])
    return {
        "id": np.arange(n, dtype=np.int64),
        "price": rng.normal(100, 5, n),
        "qty": rng.integers(-1000, 1000, n).astype(np.int32),
        "flag": rng.integers(0, 2, n).astype(bool),
        "sym": np.array([b"AAPL", b"MSFT", b"\x00X", b"", b"GOOG\x00Z"])[rng.integers(0, 5, n)],
        "name": words[rng.integers(0, len(words), n)],
        "ts": ts,
        "u16": (np.arange(n) % 65536).astype(np.uint16),
        "half": rng.normal(0, 1, n).astype(np.float16),
    }


def test_ctable_written_by_bcolz(tmp_path):
    cols = mixed_table(50_000)
    path = tmp_path / "t.bcolz"
    ct = bcolz.ctable(columns=list(cols.values()), names=list(cols), rootdir=str(path), mode="w")
    ct.attrs["note"] = "h\u00e9llo"
    ct.attrs["nan"] = float("nan")
    ct.flush()
    table = arrow_of(path, tmp_path)
    assert table.column_names == list(cols)
    ct = bcolz.open(str(path), mode="r")
    for name in cols:
        assert_column_matches(table.column(name), ct[name][:], name)
    assert b"NaN" in table.schema.metadata[b"bcolz.attrs"]
    # Projection and a limit through the CLI.
    part = arrow_of(path, tmp_path, "--columns", "name,id", "--limit", "1234")
    assert part.column_names == ["name", "id"] and part.num_rows == 1234
    assert_column_matches(part.column("name"), ct["name"][:1234], "name")


def test_ctable_appended_and_trimmed_by_bcolz(tmp_path):
    path = tmp_path / "z.bcolz"
    names = ["open", "high", "low", "close", "volume", "day", "id"]
    ct = bcolz.ctable(columns=[np.zeros(0, np.uint32)] * 7, names=names, rootdir=str(path), mode="w",
                      expectedlen=1000)
    rng = np.random.default_rng(3)
    for n in (500, 1, 3000, 777):
        ct = bcolz.open(str(path), mode="a")
        ct.append([rng.integers(0, 2**32, n, dtype=np.uint32) for _ in names])
        ct.flush()
    ct.trim(100)
    ct.flush()
    ct = bcolz.open(str(path), mode="r")
    table = arrow_of(path, tmp_path)
    assert table.num_rows == len(ct) == 4178
    for name in names:
        assert_column_matches(table.column(name), ct[name][:], name)


def test_two_d_carray_and_big_endian(tmp_path):
    path = tmp_path / "m.bcolz"
    data = np.arange(1100 * 3, dtype=np.float64).reshape(1100, 3) / 4
    bcolz.carray(data, rootdir=str(path), mode="w", chunklen=500).flush()
    table = arrow_of(path, tmp_path)
    assert_column_matches(table.column(0), bcolz.open(str(path), mode="r")[:], "2-D")
    path = tmp_path / "be.bcolz"
    bcolz.carray(np.arange(-500, 2000, dtype=">i4"), rootdir=str(path), mode="w", chunklen=1000).flush()
    table = arrow_of(path, tmp_path)
    assert_column_matches(table.column(0), bcolz.open(str(path), mode="r")[:], ">i4")


def test_bcolz_to_parquet_read_by_pyarrow(tmp_path):
    cols = mixed_table(20_000, seed=5)
    path = tmp_path / "t.bcolz"
    bcolz.ctable(columns=list(cols.values()), names=list(cols), rootdir=str(path), mode="w").flush()
    out = tmp_path / "t.parquet"
    interop.convert(path, out)
    table = interop.read_parquet(out)
    ct = bcolz.open(str(path), mode="r")
    for name in cols:
        assert_column_matches(table.column(name), ct[name][:], name)


def test_parquet_integers_fall_back_to_delta_encoding_that_every_reader_decodes(tmp_path):
    """Integer columns with too many distinct values for a dictionary are written
    DELTA_BINARY_PACKED (sequences become a few bits a value); pyarrow, DuckDB and Polars all
    read them back exactly, nulls included."""
    duckdb = pytest.importorskip("duckdb")
    pl = pytest.importorskip("polars")
    n = 300_000
    rng = np.random.default_rng(11)
    cols = {
        "id": np.arange(n, dtype=np.int64) * 3 + 1_000_000_000_000,
        "noise": rng.integers(-2**31, 2**31 - 1, n).astype(np.int32),
        "small": (np.arange(n) % 7).astype(np.int16),
        "price": rng.normal(100, 5, n),
    }
    path = tmp_path / "t.bcolz"
    bcolz.ctable(columns=list(cols.values()), names=list(cols), rootdir=str(path), mode="w").flush()
    out = tmp_path / "t.parquet"
    interop.convert(path, out)

    meta = pq.ParquetFile(str(out)).metadata
    encodings = {meta.row_group(0).column(i).path_in_schema: meta.row_group(0).column(i).encodings
                 for i in range(meta.num_columns)}
    assert "DELTA_BINARY_PACKED" in encodings["id"], encodings
    assert "DELTA_BINARY_PACKED" in encodings["noise"], encodings
    assert "DELTA_BINARY_PACKED" not in encodings["small"], encodings  # 7 values: a dictionary
    assert "DELTA_BINARY_PACKED" not in encodings["price"], encodings  # floats stay plain

    table = pq.read_table(str(out))
    frame = pl.read_parquet(str(out))
    for name, values in cols.items():
        assert np.array_equal(table.column(name).to_numpy(), values), name
        assert np.array_equal(frame[name].to_numpy(), values), name
    total, noise = duckdb.sql("SELECT sum(id), sum(noise::BIGINT) FROM '%s'" % out).fetchall()[0]
    assert total == int(cols["id"].sum()) and noise == int(cols["noise"].astype(np.int64).sum())


def arrow_input(tmp_path, n):
    rng = np.random.default_rng(7)
    tensor_type = pa.fixed_shape_tensor(pa.float32(), [2, 3])
    flat = pa.array(rng.normal(0, 1, n * 6).astype(np.float32))
    tensors = pa.ExtensionArray.from_storage(tensor_type, pa.FixedSizeListArray.from_arrays(flat, 6))
    table = pa.table({
        "i8": pa.array(rng.integers(-128, 128, n).astype(np.int8)),
        "u64": pa.array(rng.integers(0, 2**63, n, dtype=np.uint64) * 2 + 1),
        "f64": pa.array(rng.normal(0, 1, n)),
        "f32": pa.array(rng.normal(0, 1, n).astype(np.float32)),
        "flag": pa.array(rng.integers(0, 2, n).astype(bool)),
        "text": pa.array(["v%d-%s" % (i, "é" * (i % 5)) for i in range(n)]),
        "blob": pa.array([bytes([i % 256, 0, 65]) * (i % 3) for i in range(n)], pa.binary()),
        "ts": pa.array(np.arange(n).astype("M8[us]")),
        "day": pa.array(np.arange(n, dtype=np.int32), pa.date32()),
        "dur": pa.array(np.arange(n).astype("m8[ns]")),
        "grid": tensors,
    })
    src = tmp_path / "in.arrow"
    with pa.OSFile(str(src), "wb") as sink, pa.ipc.new_file(sink, table.schema) as writer:
        writer.write_table(table, max_chunksize=7000)
    return src, table


EXPECTED_DTYPES = {
    "i8": "int8", "u64": "uint64", "f64": "float64", "f32": "float32", "flag": "bool",
    "text": "<U11", "blob": "|S6", "ts": "<M8[us]", "day": "<M8[D]", "dur": "<m8[ns]", "grid": "float32",
}


@pytest.mark.parametrize("flags", [[], ["--compression", "zstd:3", "--bcolz-shuffle", "2"],
                                   ["--compression", "blosclz:9", "--bcolz-chunklen", "1000"],
                                   ["--bcolz-no-sync", "--bcolz-chunklen", "777"]])
def test_arrowsmith_output_opened_by_bcolz_and_appended(tmp_path, flags):
    n = 30_001
    src, table = arrow_input(tmp_path, n)
    out = tmp_path / "out.bcolz"
    interop.convert(src, out, *flags)
    ct = bcolz.open(str(out), mode="r")
    assert ct.names == table.column_names
    assert len(ct) == n
    for name in table.column_names:
        col = ct[name]
        assert col.dtype.str == np.dtype(EXPECTED_DTYPES[name]).str, (name, col.dtype)
        assert_column_matches(table.column(name), col[:], name)
    assert ct["grid"].shape == (n, 2, 3)
    # bcolz keeps appending to what we wrote, and we read its appends.
    ct = bcolz.open(str(out), mode="a")
    extra = [ct[name][:5] for name in ct.names]
    ct.append(extra)
    ct.flush()
    back = arrow_of(out, tmp_path)
    assert back.num_rows == n + 5
    ct = bcolz.open(str(out), mode="r")
    for name in table.column_names:
        assert_column_matches(back.column(name), ct[name][:], name)


def test_carray_output_and_nulls(tmp_path):
    values = pa.table({"v": pa.array([1.5, None, 3.0])})
    src = tmp_path / "n.arrow"
    with pa.OSFile(str(src), "wb") as sink, pa.ipc.new_file(sink, values.schema) as writer:
        writer.write_table(values)
    out = tmp_path / "n.bcolz"
    proc = interop.run("convert", src, out)
    interop.assert_clean_error(proc, out)
    assert "null" in proc.stderr and "row 1" in proc.stderr
    interop.convert(src, out, "--bcolz-nulls-as-nan", "--bcolz-carray")
    ca = bcolz.open(str(out), mode="r")
    assert isinstance(ca, bcolz.carray)
    got = ca[:]
    assert got[0] == 1.5 and np.isnan(got[1]) and got[2] == 3.0


@pytest.mark.parametrize("trim", [0, 500])
def test_arrowsmith_appends_to_what_bcolz_wrote(tmp_path, trim):
    """Appending with arrowsmith to a ctable with a leftover chunk (and, trimmed to a chunk
    boundary, a stale chunk file); bcolz reads the result and keeps appending."""
    cols = mixed_table(2500, seed=9)
    path = tmp_path / "t.bcolz"
    ct = bcolz.ctable(columns=list(cols.values()), names=list(cols), rootdir=str(path), mode="w",
                      chunklen=1000)
    if trim:
        ct.trim(trim)
    ct.flush()
    before = bcolz.open(str(path), mode="r")
    n = len(before)
    original = {name: before[name][:] for name in cols}
    # The rows to append: the table itself, through Arrow.
    src = tmp_path / "rows.arrow"
    interop.convert(path, src)
    proc = interop.run("convert", src, path, "--append", "--bcolz-nulls-as-nan")
    assert proc.returncode == 0, interop.describe(proc)
    after = bcolz.open(str(path), mode="a")
    assert len(after) == 2 * n
    for name in cols:
        both = np.concatenate([original[name], original[name]])
        got = after[name][:]
        assert got.dtype == both.dtype, name
        if got.dtype.kind in "fMm":
            assert np.array_equal(got.view(np.uint8), both.view(np.uint8)), name
        else:
            assert np.array_equal(got, both), name
    after.append([original[name][:3] for name in cols])
    after.flush()
    table = arrow_of(path, tmp_path)
    assert table.num_rows == 2 * n + 3


def bcolz_table_and_rows(tmp_path, n, copies):
    """A ctable bcolz wrote (leftover chunks, chunklen 1000) and an Arrow file of its rows
    repeated `copies` times."""
    cols = mixed_table(n, seed=11)
    path = tmp_path / "t.bcolz"
    ct = bcolz.ctable(columns=list(cols.values()), names=list(cols), rootdir=str(path), mode="w",
                      chunklen=1000)
    ct.flush()
    once = tmp_path / "once.arrow"
    interop.convert(path, once)
    table = interop.read_ipc_file(once)
    src = tmp_path / "rows.arrow"
    with pa.OSFile(str(src), "wb") as sink, pa.ipc.new_file(sink, table.schema) as writer:
        for _ in range(copies):
            writer.write_table(table)
    return path, cols, src


def assert_bcolz_reads(path, cols, times):
    ct = bcolz.open(str(path), mode="r")
    assert len(ct) == times * len(cols["id"])
    for name in cols:
        want = np.concatenate([cols[name]] * times)
        got = ct[name][:]
        if got.dtype.kind in "fMm":
            assert np.array_equal(got.view(np.uint8), want.view(np.uint8)), name
        else:
            assert np.array_equal(got, want), name


def test_two_arrowsmith_appends_at_once_are_both_kept(tmp_path):
    import subprocess
    path, cols, src = bcolz_table_and_rows(tmp_path, 2500, 40)
    for round in range(3):
        procs = [subprocess.Popen([interop.binary(), "convert", str(src), str(path), "--append",
                                   "--bcolz-nulls-as-nan"], stdin=subprocess.DEVNULL,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                 for _ in range(2)]
        for proc in procs:
            _, err = proc.communicate(timeout=300)
            assert proc.returncode == 0, err
        assert_bcolz_reads(path, cols, 1 + 2 * 40 * (round + 1))


def test_an_append_that_fills_the_disk_leaves_what_bcolz_reads(tmp_path):
    import shutil
    import subprocess
    disk = tmp_path / "disk"
    disk.mkdir()
    mount = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(disk)],
                           capture_output=True, text=True)
    if mount.returncode != 0:
        pytest.skip("cannot mount a tmpfs (needs root): " + mount.stderr.strip())
    try:
        path, cols, src = bcolz_table_and_rows(tmp_path, 2500, 200)
        on_disk = disk / "t.bcolz"
        shutil.copytree(path, on_disk)
        listing = sorted(str(p.relative_to(on_disk)) for p in on_disk.rglob("*"))
        proc = interop.run("convert", src, on_disk, "--append", "--bcolz-nulls-as-nan")
        assert proc.returncode == 1, interop.describe(proc)
        assert "No space left" in proc.stderr, interop.describe(proc)
        assert sorted(str(p.relative_to(on_disk)) for p in on_disk.rglob("*")) == listing
        assert_bcolz_reads(on_disk, cols, 1)
        # bcolz keeps appending to it.
        ct = bcolz.open(str(on_disk), mode="a")
        ct.append([cols[name] for name in cols])
        ct.flush()
        assert_bcolz_reads(on_disk, cols, 2)
    finally:
        subprocess.run(["umount", str(disk)])
