"""Arrow -> Jay: pyarrow tables written as Arrow IPC files (Feather v2), converted by
`arrowsmith convert x.arrow x.jay`, read back by datatable 1.1.0 (`dt.fread`) and compared with
the source table under the type mapping of spec B3.3. datatable also reports the stats and NA
counts stored in the file (it trusts them), which are compared with the real ones (B3.5)."""
import datetime as _dt
import decimal
import random

import pyarrow as pa
import pyarrow.feather as feather
import pyarrow.parquet as pq
import pytest

import interop

UTC_NY = "America/New_York"


def write_ipc(tbl, path, max_chunksize=None):
    """An uncompressed Arrow IPC file, with several record batches if `max_chunksize` is set."""
    with pa.OSFile(str(path), "wb") as sink:
        with pa.ipc.new_file(sink, tbl.schema) as writer:
            for batch in tbl.to_batches(max_chunksize=max_chunksize):
                writer.write_batch(batch)


def dictionary(values, index_type=pa.int32(), value_type=pa.string()):
    """A dictionary array whose dictionary holds a null and whose indices hold a null."""
    dictionary_values = pa.array(["b", None, "a", "ü"], value_type)
    lookup = {"b": 0, "a": 2, "ü": 3}
    indices = [None if v is None else (1 if v == "<nullvalue>" else lookup[v]) for v in values]
    return pa.DictionaryArray.from_arrays(pa.array(indices, index_type), dictionary_values)


def random_table(nrows, seed):
    rnd = random.Random(seed)

    def col(gen, p=0.1):
        return [None if rnd.random() < p else gen() for _ in range(nrows)]

    return pa.table({
        "b": pa.array(col(lambda: rnd.random() < 0.5), pa.bool_()),
        "i8": pa.array(col(lambda: rnd.randint(-127, 127)), pa.int8()),
        "i32": pa.array(col(lambda: rnd.randint(-2**31 + 1, 2**31 - 1)), pa.int32()),
        "i64": pa.array(col(lambda: rnd.randint(-2**63 + 1, 2**63 - 1)), pa.int64()),
        "u16": pa.array(col(lambda: rnd.randint(0, 65535)), pa.uint16()),
        "f32": pa.array(col(lambda: rnd.uniform(-1e30, 1e30)), pa.float32()),
        "f64": pa.array(col(lambda: rnd.choice([rnd.gauss(0, 1e-200), float("inf"), -0.0, 1.0])), pa.float64()),
        "s": pa.array(col(lambda: "".join(rnd.choice("abcü✓𝄞 \n") for _ in range(rnd.randrange(0, 9))))),
        "d": pa.array(col(lambda: rnd.randint(-719162, 2932896)), pa.int32()).cast(pa.date32()),
        "t": pa.array(col(lambda: rnd.randint(-2**62, 2**62)), pa.timestamp("ns")),
        "l": pa.array(col(lambda: [rnd.choice([None, 1, 2**40]) for _ in range(rnd.randrange(0, 4))]),
                      pa.list_(pa.int64())),
    })


# name -> (table, the datatable type names the columns must come back as)
def cases():
    ts_us = [_dt.datetime(2020, 1, 2, 3, 4, 5, 678901), None, _dt.datetime(1969, 12, 31, 23, 59, 59, 999999),
             _dt.datetime(1677, 9, 22)]
    return {
        "ints": (pa.table({
            "i8": pa.array([-127, 127, None, 0], pa.int8()),
            "i16": pa.array([-32767, 32767, None, 0], pa.int16()),
            "i32": pa.array([-2**31 + 1, 2**31 - 1, None, 0], pa.int32()),
            "i64": pa.array([-2**63 + 1, 2**63 - 1, None, 0], pa.int64()),
        }), ["int8", "int16", "int32", "int64"]),
        "uints_widened": (pa.table({
            "u8": pa.array([0, 255, None, 128], pa.uint8()),
            "u16": pa.array([0, 65535, None, 32768], pa.uint16()),
            "u32": pa.array([0, 2**32 - 1, None, 2**31], pa.uint32()),
            "u64": pa.array([0, 2**63 - 1, None, 12345], pa.uint64()),
        }), ["int16", "int32", "int64", "int64"]),
        "floats": (pa.table({
            "f16": pa.array([1.5, None, -0.0, float("inf"), 65504.0, 6e-08], pa.float32()).cast(pa.float16()),
            "f32": pa.array([float("nan"), None, -0.0, float("-inf"), 3.4028234663852886e38, 1e-45], pa.float32()),
            "f64": pa.array([5e-324, float("nan"), None, 1.7976931348623157e308, -1.0, 0.1], pa.float64()),
        }), ["float32", "float32", "float64"]),
        "booleans": (pa.table({
            "b": pa.array([True, None, False] * 6 + [True]),
            "all_true": pa.array([True] * 19),
            "all_null": pa.array([None] * 19, pa.bool_()),
        }), ["bool8", "bool8", "bool8"]),
        "strings": (pa.table({
            "s": pa.array(["", None, "a", "ünïcødé ✓ 𝄞", "a\x00b", "tab\tnl\n", None, "x" * 5000]),
            "ls": pa.array(["", None, "a", "ünïcødé ✓ 𝄞", "a\x00b", "tab\tnl\n", None, "y" * 70000],
                           pa.large_string()),
            "sv": pa.array(["v", None, "", "long enough to be out of line", None, "ü", "", "z"], pa.string_view()),
            "all_null": pa.array([None] * 8, pa.string()),
            "all_empty": pa.array([""] * 8, pa.string()),
        }), ["str32", "str64", "str32", "str32", "str32"]),
        "dictionaries": (pa.table({
            "d8": dictionary(["a", None, "<nullvalue>", "ü", "b", "a"], pa.int8()),
            "d32": dictionary(["b", "b", None, "a", "<nullvalue>", "ü"], pa.int32()),
            "dl": dictionary(["ü", None, "a", "a", "b", "<nullvalue>"], pa.uint16(), pa.large_string()),
        }), ["str32", "str32", "str64"]),
        "dates": (pa.table({
            "d32": pa.array([0, 1, -1, 2932896, -719162, None], pa.int32()).cast(pa.date32()),
            "d64": pa.array([0, 86_400_000, -86_400_000, 2932896 * 86_400_000, None, 18263 * 86_400_000],
                            pa.int64()).cast(pa.date64()),
        }), ["date32", "date32"]),
        "timestamps": (pa.table({
            "ns": pa.array([1, -1, None, 2**63 - 1], pa.timestamp("ns")),
            "us": pa.array(ts_us, pa.timestamp("us")),
            "ms": pa.array([1, -1, None, 9_000_000_000_000], pa.timestamp("ms")),
            "s": pa.array([1, -1, None, 9_000_000_000], pa.timestamp("s")),
            "us_utc": pa.array(ts_us, pa.timestamp("us", tz="UTC")),
            "ms_ny": pa.array([1_600_000_000_000, None, 0, -1], pa.timestamp("ms", tz=UTC_NY)),
        }), ["time64"] * 6),
        "nulls": (pa.table({"n": pa.nulls(5), "x": pa.array([1, 2, 3, 4, 5], pa.int32())}), ["void", "int32"]),
        "lists": (pa.table({
            "li": pa.array([[1, 2], None, [], [None], [2**31 - 1]], pa.list_(pa.int32())),
            "ls": pa.array([["x", None], None, ["", "yz"], [], ["ü"]], pa.list_(pa.string())),
            "lli": pa.array([[[1], [2, 3]], [], None, [None], [[]]], pa.list_(pa.list_(pa.int64()))),
            "Lf": pa.array([[0.5], None, [], [float("inf"), None], [-0.0]], pa.large_list(pa.float64())),
            "lb": pa.array([[True], [False, None], None, [], [True]], pa.list_(pa.bool_())),
            "lu8": pa.array([[255], [0, None], None, [], [1]], pa.list_(pa.uint8())),
            "lts": pa.array([[1_577_934_245_678], [-1, None], None, [], [-9_223_286_400_000]],
                            pa.list_(pa.timestamp("ms"))),
            "ln": pa.array([[None], [], None, [None, None], []], pa.list_(pa.null())),
        }), ["arr32(int32)", "arr32(str32)", "arr32(arr32(int64))", "arr64(float64)", "arr32(bool8)",
             "arr32(int16)", "arr32(time64)", "arr32(void)"]),
        "empty": (pa.table({
            "i": pa.array([], pa.int32()), "s": pa.array([], pa.string()), "ls": pa.array([], pa.large_string()),
            "b": pa.array([], pa.bool_()), "f": pa.array([], pa.float64()), "t": pa.array([], pa.timestamp("us")),
            "n": pa.array([], pa.null()), "l": pa.array([], pa.list_(pa.int32())),
        }), ["int32", "str32", "str64", "bool8", "float64", "time64", "void", "arr32(int32)"]),
        "no_columns": (pa.table({}), []),
        "random_5000_in_batches": (random_table(5000, seed=99), ["bool8", "int8", "int32", "int64", "int32",
                                                                  "float32", "float64", "str32", "date32",
                                                                  "time64", "arr32(int64)"]),
    }


CASES = cases()


def expected_values(tbl):
    """The source table's values as datatable must see them (B3.3): widened integers keep their
    values, float16 widens exactly, every NaN is NA, dates are days, timestamps are UTC ns,
    dictionaries are decoded."""
    out = []
    for col in tbl.columns:
        if pa.types.is_dictionary(col.type):
            col = col.cast(col.type.value_type)
        out.append(interop.arrow_values(col))
    return out


def check_stats(got, want_cols, names):
    """datatable's trusted min/max/countna (from the stats and nullcount arrowsmith stored) must
    be the real ones."""
    for name, dt_type, stats, want in zip(names, got["types"], got["stats"], want_cols):
        if stats is None:  # datatable has no stats for arrays
            continue
        gmin, gmax, gna = stats
        nas = sum(v is None for v in want)
        assert gna == nas, "column %r: datatable's NA count %r, the data has %d" % (name, gna, nas)
        if dt_type.startswith("str") or dt_type == "void":
            continue
        present = [v for v in want if v is not None]
        if dt_type.startswith("float"):
            present = [{"inf": float("inf"), "-inf": float("-inf")}.get(v, v) for v in present]
            gmin, gmax = ({"inf": float("inf"), "-inf": float("-inf")}.get(v, v) for v in (gmin, gmax))
        if not present:
            assert gmin is None and gmax is None, "column %r: min/max %r of no values" % (name, (gmin, gmax))
            continue
        wmin, wmax = min(present), max(present)
        if dt_type == "time64":  # datatable hands out datetimes: microsecond precision
            ok = abs(gmin - wmin) < 1000 and abs(gmax - wmax) < 1000
        else:
            ok = gmin == wmin and gmax == wmax
        assert ok, "column %r: datatable's min/max %r, the data's %r" % (name, (gmin, gmax), (wmin, wmax))


def check_jay(path, tbl, dt_types):
    got = interop.dt_read(path)
    assert got["names"] == tbl.column_names
    assert got["types"] == dt_types, "datatable types %r, want %r (spec B3.3)" % (got["types"], dt_types)
    assert got["nrows"] == tbl.num_rows
    want = expected_values(tbl)
    interop.assert_same_columns(got["values"], want, tbl.column_names)
    check_stats(got, want, tbl.column_names)
    return got


@pytest.mark.parametrize("name", list(CASES))
def test_arrow_ipc_to_jay(name, tmp_path):
    tbl, dt_types = CASES[name]
    src, jay = tmp_path / "x.arrow", tmp_path / "x.jay"
    write_ipc(tbl, src, max_chunksize=333 if tbl.num_rows > 1000 else None)
    interop.convert(src, jay)
    got = check_jay(jay, tbl, dt_types)
    assert got["key"] == []


def test_feather_extension_and_sliced_batches(tmp_path):
    """A .feather file (Feather v2 = Arrow IPC file) written by pyarrow.feather from sliced,
    multi-chunk columns."""
    tbl = random_table(3000, seed=1).slice(7, 2500)
    tbl = pa.concat_tables([tbl.slice(0, 1000), tbl.slice(1000)])
    src, jay = tmp_path / "x.feather", tmp_path / "x.jay"
    feather.write_feather(tbl, str(src), compression="uncompressed", chunksize=777)
    interop.convert(src, jay)
    check_jay(jay, tbl, ["bool8", "int8", "int32", "int64", "int32", "float32", "float64", "str32", "date32",
                         "time64", "arr32(int64)"])


@pytest.mark.parametrize("codec", ["lz4", "zstd"])
def test_compressed_feather_to_jay(codec, tmp_path):
    """pyarrow.feather.write_feather compresses with lz4 unless told otherwise: such files are
    what users have."""
    tbl = random_table(2000, seed=len(codec))
    src, jay = tmp_path / "x.feather", tmp_path / "x.jay"
    feather.write_feather(tbl, str(src), compression=codec)
    interop.convert(src, jay)
    check_jay(jay, tbl, ["bool8", "int8", "int32", "int64", "int32", "float32", "float64", "str32", "date32",
                         "time64", "arr32(int64)"])


def stream_into_arrowsmith(tbl, *args, max_chunksize=None):
    """Runs `arrowsmith ARGS...` with `tbl` written by pyarrow as an Arrow IPC stream into its
    standard input, as a pipeline from pyarrow, Polars or DataFusion does."""
    import subprocess
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, tbl.schema) as writer:
        for batch in tbl.to_batches(max_chunksize=max_chunksize):
            writer.write_batch(batch)
    return subprocess.run([interop.binary(), *map(str, args)], input=sink.getvalue().to_pybytes(),
                          capture_output=True, timeout=300)


def test_arrow_stream_on_stdin_to_jay(tmp_path):
    """`... | arrowsmith convert - x.jay`: an Arrow IPC stream piped in becomes a Jay file that
    datatable reads as the table."""
    tbl = random_table(5000, seed=23)
    jay = tmp_path / "x.jay"
    proc = stream_into_arrowsmith(tbl, "convert", "-", jay, max_chunksize=777)
    assert proc.returncode == 0, proc.stderr.decode()
    check_jay(jay, tbl, ["bool8", "int8", "int32", "int64", "int32", "float32", "float64", "str32", "date32",
                         "time64", "arr32(int64)"])


def test_truncated_stream_on_stdin_is_a_clean_error(tmp_path):
    tbl = random_table(2000, seed=5)
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, tbl.schema) as writer:
        writer.write_table(tbl)
    data = sink.getvalue().to_pybytes()
    jay = tmp_path / "x.jay"
    import subprocess
    for cut in (3, len(data) // 2, len(data) - 9):
        proc = subprocess.run([interop.binary(), "convert", "-", str(jay)], input=data[:cut],
                              capture_output=True, text=False, timeout=300)
        proc.stdout, proc.stderr = proc.stdout.decode(), proc.stderr.decode()
        interop.assert_clean_error(proc, jay)
        assert "<stdin>" in proc.stderr, proc.stderr


def test_parquet_to_jay(tmp_path):
    tbl = random_table(4000, seed=17).drop_columns(["l"])
    src, jay = tmp_path / "x.parquet", tmp_path / "x.jay"
    pq.write_table(tbl, str(src), row_group_size=1000)
    interop.convert(src, jay)
    check_jay(jay, tbl, ["bool8", "int8", "int32", "int64", "int32", "float32", "float64", "str32", "date32",
                         "time64"])


def test_round_trip_jay_arrow_jay_keeps_datatable_frame(tmp_path):
    """datatable -> Jay -> (arrowsmith) Arrow -> (arrowsmith) Jay -> datatable: same frame, key kept."""
    import datatable as dt
    DT = dt.Frame(k=[3, 1, 2, None], s=["c", "a", "b", None], f=[0.5, None, -0.0, 2.5])
    DT.key = "k"
    a, b, c = tmp_path / "a.jay", tmp_path / "b.arrow", tmp_path / "c.jay"
    DT.to_jay(str(a))
    interop.convert(a, b)
    interop.convert(b, c)
    got = interop.dt_read(c)
    assert got["key"] == ["k"]
    assert got["types"] == ["int32", "str32", "float64"]
    interop.assert_same_columns(got["values"], interop.frame_values(DT), list(DT.names))


# ---------------------------------------------------------------------------------------------
# keys (B3.6)
# ---------------------------------------------------------------------------------------------

def keyed(tbl, k):
    return tbl.replace_schema_metadata({"jay.nkeys": str(k)})


def test_nkeys_written_when_key_is_valid(tmp_path):
    tbl = keyed(pa.table({"k1": pa.array([None, 1, 1, 2], pa.int32()), "k2": ["z", "a", "b", "a"],
                          "v": [1.0, 2.0, 3.0, 4.0]}), 2)
    src, jay = tmp_path / "x.arrow", tmp_path / "x.jay"
    write_ipc(tbl, src)
    interop.convert(src, jay)
    got = check_jay(jay, tbl, ["int32", "str32", "float64"])
    assert got["key"] == ["k1", "k2"]


@pytest.mark.parametrize("case", ["unsorted", "duplicate", "too_many", "not_a_number"])
def test_nkeys_not_written_when_key_is_invalid(case, tmp_path):
    base = pa.table({"k": pa.array([1, 2, 2, 3], pa.int32()), "v": ["a", "b", "c", "d"]})
    tbl = {"unsorted": keyed(base.take([1, 0, 2, 3]), 1), "duplicate": keyed(base, 1),
           "too_many": keyed(base, 3), "not_a_number": keyed(base, "one")}[case]
    src, jay = tmp_path / "x.arrow", tmp_path / "x.jay"
    write_ipc(tbl, src)
    proc = interop.convert(src, jay)
    got = check_jay(jay, tbl, ["int32", "str32"])
    assert got["key"] == [], "an invalid key was written (%s)" % case
    assert "key" in proc.stderr.lower(), "no warning about the dropped key: " + interop.describe(proc)


# ---------------------------------------------------------------------------------------------
# sentinel collisions (B3.4)
# ---------------------------------------------------------------------------------------------

COLLISIONS = {
    "int8": (pa.array([5, -128, None], pa.int8()), "int8", "-128"),
    "int16": (pa.array([5, -32768, None], pa.int16()), "int16", "-32768"),
    "int32": (pa.array([5, -2**31, None], pa.int32()), "int32", "-2147483648"),
    "int64": (pa.array([5, -2**63, None], pa.int64()), "int64", "-9223372036854775808"),
    "date32": (pa.array([5, -2**31, None], pa.int32()).cast(pa.date32()), "date32", None),
    "timestamp_ns": (pa.array([5, -2**63, None], pa.timestamp("ns")), "time64", None),
    "list_child_int32": (pa.array([[5], [-2**31], None], pa.list_(pa.int32())), "arr32(int32)", None),
}


@pytest.mark.parametrize("case", list(COLLISIONS))
def test_sentinel_collision_is_an_error(case, tmp_path):
    arr, _, shown = COLLISIONS[case]
    tbl = pa.table({"other": pa.array([1, 2, 3], pa.int32()), "col_x": arr})
    src, jay = tmp_path / "x.arrow", tmp_path / "x.jay"
    write_ipc(tbl, src)
    proc = interop.run("convert", src, jay)
    interop.assert_clean_error(proc, output=jay)
    assert "col_x" in proc.stderr, "the error does not name the column: " + interop.describe(proc)
    if shown:
        assert shown in proc.stderr, "the error does not show the value: " + interop.describe(proc)


def test_failed_convert_leaves_existing_target_untouched(tmp_path):
    tbl = pa.table({"x": pa.array([-2**31], pa.int32())})
    src, jay = tmp_path / "x.arrow", tmp_path / "x.jay"
    write_ipc(tbl, src)
    jay.write_bytes(b"precious")
    proc = interop.run("convert", src, jay, "--overwrite")
    assert proc.returncode == 1, interop.describe(proc)
    assert jay.read_bytes() == b"precious"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["x.arrow", "x.jay"], "temporary files left behind"


@pytest.mark.parametrize("case", list(COLLISIONS))
def test_sentinel_collision_as_na(case, tmp_path):
    arr, dt_type, _ = COLLISIONS[case]
    tbl = pa.table({"col_x": arr})
    src, jay = tmp_path / "x.arrow", tmp_path / "x.jay"
    write_ipc(tbl, src)
    interop.convert(src, jay, "--sentinel-collisions-as-na")
    got = interop.dt_read(jay)
    assert got["types"] == [dt_type]
    want = expected_values(tbl)[0]
    if dt_type.startswith("arr"):
        want = [[5], [None], None]
    else:
        want = [want[0], None, None]
    interop.assert_same_columns(got["values"], [want], ["col_x"])
    if got["stats"][0] is not None:
        assert got["stats"][0][2] == (1 if dt_type.startswith("arr") else 2), "nullcount must count the collision"


# ---------------------------------------------------------------------------------------------
# values and types that cannot be written
# ---------------------------------------------------------------------------------------------

UNWRITABLE = {
    "uint64_too_big": pa.array([1, 2**63, None], pa.uint64()),
    "date64_not_whole_days": pa.array([86_400_000, 86_400_001, None], pa.date64()),
    "timestamp_overflows_ns": pa.array([0, 10**11, None], pa.timestamp("s")),
    "binary": pa.array([b"a", None, b"\xff"], pa.binary()),
    "fixed_size_binary": pa.array([b"ab", None, b"cd"], pa.binary(2)),
    "decimal": pa.array([decimal.Decimal("1.5"), None, decimal.Decimal("2")], pa.decimal128(5, 2)),
    "time32": pa.array([1, None, 2], pa.time32("s")),
    "duration": pa.array([1, None, 2], pa.duration("ms")),
    "struct": pa.array([{"a": 1}, None, {"a": 2}], pa.struct([("a", pa.int32())])),
    "fixed_size_list": pa.array([[1, 2], None, [3, 4]], pa.list_(pa.int32(), 2)),
    "dictionary_of_ints": pa.array([1, None, 1]).dictionary_encode(),
    "map": pa.array([[("k", 1)], None, []], pa.map_(pa.string(), pa.int32())),
    "list_of_binary": pa.array([[b"x"], None, []], pa.list_(pa.binary())),
}


@pytest.mark.parametrize("case", list(UNWRITABLE))
def test_unwritable_column_is_an_error(case, tmp_path):
    tbl = pa.table({"fine": pa.array([1, 2, 3], pa.int32()), "bad_col": UNWRITABLE[case]})
    src, jay = tmp_path / "x.arrow", tmp_path / "x.jay"
    write_ipc(tbl, src)
    proc = interop.run("convert", src, jay)
    interop.assert_clean_error(proc, output=jay)
    assert "bad_col" in proc.stderr, "the error does not name the column: " + interop.describe(proc)


def test_time_zone_dropped_with_a_warning(tmp_path):
    tbl = pa.table({"when": pa.array([0, 1_600_000_000_000_000, None], pa.timestamp("us", tz=UTC_NY))})
    src, jay = tmp_path / "x.arrow", tmp_path / "x.jay"
    write_ipc(tbl, src)
    proc = interop.convert(src, jay)
    check_jay(jay, tbl, ["time64"])
    assert "when" in proc.stderr and ("zone" in proc.stderr.lower() or UTC_NY in proc.stderr), \
        "dropping the time zone must be reported: " + interop.describe(proc)
