"""Jay -> Arrow / Parquet: frames written by datatable 1.1.0 at test time, converted by
`arrowsmith convert`, read back with pyarrow and compared with what datatable itself holds
(values, and the Arrow types of spec B3.1)."""
import datetime as _dt
import random
import warnings

import datatable as dt
import pyarrow as pa
import pytest
from datatable import f

import interop

T = dt.Type
ALL_TYPES = [T.bool8, T.int8, T.int16, T.int32, T.int64, T.float32, T.float64, T.str32, T.str64,
             T.date32, T.time64, T.void]
NAMES = ["b8", "i8", "i16", "i32", "i64", "f32", "f64", "s32", "s64", "d32", "t64", "v"]


# ---------------------------------------------------------------------------------------------
# the frames, each built fresh by datatable
# ---------------------------------------------------------------------------------------------

def time64_col(ns_values):
    """A time64 column from raw nanoseconds (datatable's own cast, so no precision is lost)."""
    return dt.Frame(t=ns_values, type=T.int64)[:, dt.as_type(f.t, T.time64)]


def date32_col(days):
    return dt.Frame(d=days, type=T.int32)[:, dt.as_type(f.d, T.date32)]


def frame_all_types():
    DT = dt.Frame(
        [[True, None, False, True], [None, -127, 127, 0], [-32767, 32767, None, 7],
         [None, -2147483647, 2147483647, 0], [9223372036854775807, None, -9223372036854775807, 1],
         [1.5, float("inf"), None, -0.0], [float("-inf"), 5e-324, -0.0, None],
         ["", None, "ünïcødé ✓ 𝄞", "a\x00b"], [None, "кохайтеся", "", "x" * 1000],
         [None, None, None, None], [None, None, None, None], [None] * 4],
        types=ALL_TYPES, names=NAMES)
    DT["d32"] = date32_col([0, None, -719162, 2932896])
    DT["t64"] = time64_col([1, -1, None, 9223372036854775807])
    return DT


def frame_zero_rows():
    return dt.Frame([[]] * len(ALL_TYPES), types=ALL_TYPES, names=NAMES)


def frame_all_na():
    DT = dt.Frame([[None] * 3] * len(ALL_TYPES), types=ALL_TYPES, names=NAMES)
    DT.min()  # stored as stats: min = max = the NA sentinel
    DT.max()
    return DT


def frame_random(nrows=3000, seed=20240611):
    """A few thousand rows of every type with ~10 % NAs at random places; stats computed for
    some columns (datatable then stores them)."""
    rnd = random.Random(seed)

    def col(gen):
        return [None if rnd.random() < 0.1 else gen() for _ in range(nrows)]

    alphabet = "abcxyz ünï✓𝄞\t\"\\,"
    strs = lambda: "".join(rnd.choice(alphabet) for _ in range(rnd.randrange(0, 12)))  # noqa: E731
    DT = dt.Frame(
        [col(lambda: rnd.random() < 0.5), col(lambda: rnd.randint(-127, 127)),
         col(lambda: rnd.randint(-32767, 32767)), col(lambda: rnd.randint(-2**31 + 1, 2**31 - 1)),
         col(lambda: rnd.randint(-2**63 + 1, 2**63 - 1)), col(lambda: rnd.uniform(-1e6, 1e6)),
         col(lambda: rnd.choice([rnd.gauss(0, 1e100), float("inf"), -0.0, 0.0])), col(strs), col(strs),
         [None] * nrows, [None] * nrows, [None] * nrows],
        types=ALL_TYPES, names=NAMES)
    DT["d32"] = date32_col(col(lambda: rnd.randint(-800000, 3000000)))
    DT["t64"] = time64_col(col(lambda: rnd.randint(-2**63 + 1, 2**63 - 1)))
    DT[:, ["i32", "f64", "d32"]].min()
    return DT


def frame_keyed1():
    DT = dt.Frame(name=["pear", "apple", "fig", "kiwi", "banana", "Zucchini"], n=[3, 1, 4, 1, 5, 9])
    DT.key = "name"
    return DT


def frame_keyed2():
    DT = dt.Frame(k1=[2, 1, 1, 2, 3], k2=["b", "b", "a", "a", None], v=[0.5, 1.5, 2.5, 3.5, None])
    DT.key = ["k1", "k2"]
    return DT


def frame_wide():
    cols = {}
    for i in range(1500):
        kind = i % 5
        cols["c%04d" % i] = ([i, None, -i, 7] if kind == 0 else
                             [i / 3, None, 1e300, -0.0] if kind == 1 else
                             ["w%d" % i, None, "", "é"] if kind == 2 else
                             [True, None, False, True] if kind == 3 else
                             [None, 2**40 + i, -(2**40), 0])
    return dt.Frame(cols)


def frame_arrays():
    return dt.Frame(ai=[[1, 2], [3], None, [], [None, 5]],
                    af=[[0.5], None, [], [float("inf"), None], [-0.0]],
                    as_=[["x", None], None, ["", "yz"], [], ["ü"]],
                    ab=[[True], [False, None], None, [], [True, True]],
                    aa=[[[1], [2, 3]], [], None, [None], [[]]])


def frame_arrays_from_arrow():
    tbl = pa.table({
        "l32": pa.array([[1, 2], None, [], [None]], pa.list_(pa.int64())),
        "l64": pa.array([["a"], None, [], [None, "bc"]], pa.large_list(pa.string())),
        "lnull": pa.array([[None], [], None, [None, None]], pa.list_(pa.null())),
    })
    return dt.Frame(tbl)


def frame_from_arrow_with_nulls():
    """Arrow-backed columns: validity bitmaps, bit-packed booleans, Arrow offsets, and valid
    values equal to Jay's NA sentinels (only the validity says what is null)."""
    tbl = pa.table({
        "i8": pa.array([-128, None, 5, 127], pa.int8()),
        "i16": pa.array([None, -32768, 0, 1], pa.int16()),
        "i32": pa.array([1, None, -2**31, 3], pa.int32()),
        "i64": pa.array([-2**63, 2**63 - 1, None, 0], pa.int64()),
        "b": pa.array([True, None, False, True]),
        "f32": pa.array([None, 1.5, -0.0, float("inf")], pa.float32()),
        "f64": pa.array([1.5, None, 2.5, -1e300]),
        "s": pa.array(["x", None, "yz", ""]),
        "ls": pa.array(["x", None, "yz", "ü"], pa.large_string()),
        "d": pa.array([_dt.date(2000, 1, 1), None, _dt.date(1969, 12, 31), _dt.date(1, 1, 1)]),
        "ts": pa.array([946684800000000001, None, -315619199999999000, 0], pa.timestamp("ns")),
        "nonull": pa.array([1, 2, 3, 4], pa.int64()),
        "bnonull": pa.array([True, False, False, True]),
    })
    return dt.Frame(tbl)


def frame_void_only():
    return dt.Frame(v1=[None] * 4, v2=[None] * 4)


def frame_view():
    DT = dt.Frame(v=[3.5, None, -1.0, 2.0, 0.0, 8.0], s=["c", "a", None, "b", "d", "e"],
                  i=[1, 2, 3, None, 5, 6])
    return DT[[5, 4, 2, 0], :]


def frame_chunked_fread():
    """Columns stitched from a chunked fread ("Rbound"), which datatable writes in the OLD
    layout: long rows first make fread under-estimate the row count."""
    rows = []
    n = 2000
    for i in range(4 * n):
        s = "NA" if i % 7 == 3 else ("" if i % 11 == 5 else "r%d" % (i % 13))
        b = "NA" if i % 17 == 6 else ("true" if i % 3 else "false")
        x = "NA" if i % 19 == 4 else repr(i * 0.25 - 100)
        rows.append("%s,%s,%s,%s,%s" % (s, "NA" if i % 13 == 4 else str(i - 1000), b, x,
                                         ("q" * 120) if i < n else ""))
    DT = dt.fread("S,I,B,X,pad\n" + "\n".join(rows) + "\n", na_strings=["NA"])
    assert all(dt.internal.frame_columns_virtual(DT)), "fread did not produce chunked columns"
    del DT["pad"]
    return DT


FRAMES = {
    "all_types": frame_all_types,
    "zero_rows": frame_zero_rows,
    "zero_cols": lambda: dt.Frame(),
    "zero_cols_5_rows": lambda: dt.Frame(a=[1, 2, 3, 4, 5])[:, []],
    "all_na_with_stats": frame_all_na,
    "random_3000": frame_random,
    "keyed1": frame_keyed1,
    "keyed2": frame_keyed2,
    "wide_1500": frame_wide,
    "arrays": frame_arrays,
    "arrays_from_arrow": frame_arrays_from_arrow,
    "from_arrow_with_nulls": frame_from_arrow_with_nulls,
    "void_only": frame_void_only,
    "row_view": frame_view,
    "chunked_fread": frame_chunked_fread,
    "str64_only": lambda: dt.Frame(S=["a", None, "", "bcd"] * 50, type=T.str64),
    "one_row": lambda: dt.Frame(b=[True], s=["only"], f=[0.1]),
    "unicode_names": lambda: dt.Frame([[1], [2.5], ["z"]], names=["日本語", "emoji 😀", "with space"]),
}


def write_jay(DT, path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        DT.to_jay(str(path))


def has_arrays(DT):
    return any(interop.dt_type_name(t).startswith("arr") for t in DT.types)


def check_against_frame(tbl, DT, source):
    """`tbl` (what pyarrow read from arrowsmith's output) holds exactly the frame `DT`."""
    assert tbl.column_names == list(DT.names), "%s: names %r, want %r" % (source, tbl.column_names, DT.names)
    got_types = [interop.rs_type(t) for t in tbl.schema.types]
    want_types = [interop.arrow_type_of_dt(t) for t in DT.types]
    assert got_types == want_types, "%s: Arrow types differ from spec B3.1" % source
    assert all(fld.nullable for fld in tbl.schema), "%s: every field must be nullable" % source
    assert tbl.num_rows == DT.nrows, "%s: %d rows, want %d" % (source, tbl.num_rows, DT.nrows)
    interop.assert_same_columns(interop.table_values(tbl), interop.frame_values(DT), DT.names)


@pytest.mark.parametrize("name", list(FRAMES))
def test_jay_to_arrow_ipc(name, tmp_path):
    DT = FRAMES[name]()
    jay, out = tmp_path / "x.jay", tmp_path / "x.arrow"
    write_jay(DT, jay)
    interop.convert(jay, out)
    tbl = interop.read_ipc_file(out)
    check_against_frame(tbl, DT, name)

    meta = tbl.schema.metadata or {}
    if DT.key:
        assert meta.get(b"jay.nkeys") == str(len(DT.key)).encode(), "nkeys metadata: %r" % meta
    else:
        assert b"jay.nkeys" not in meta, "unkeyed frame with nkeys metadata: %r" % meta

    # A second, independent opinion: datatable's own Arrow export of the same frame (it cannot
    # export arrays). The columns must be equal as Arrow data, types included.
    if not has_arrays(DT) and DT.ncols:
        ref = DT.to_arrow()
        for i, name_ in enumerate(DT.names):
            assert tbl.column(i).type == ref.column(i).type, name_
            assert tbl.column(i).equals(ref.column(i)) or interop.same(
                interop.arrow_values(tbl.column(i)), interop.arrow_values(ref.column(i))), \
                "column %r differs from datatable's to_arrow()" % name_


@pytest.mark.parametrize("name", [n for n in FRAMES if not n.startswith("zero_cols")])
def test_jay_to_parquet(name, tmp_path):
    DT = FRAMES[name]()
    jay, out = tmp_path / "x.jay", tmp_path / "x.parquet"
    write_jay(DT, jay)
    interop.convert(jay, out)
    tbl = interop.read_parquet(out)
    check_against_frame(tbl, DT, name)
    meta = tbl.schema.metadata or {}
    if DT.key:  # the key travels in the Arrow schema that the Parquet file stores
        assert meta.get(b"jay.nkeys") == str(len(DT.key)).encode(), "nkeys metadata: %r" % meta


def test_jay_to_parquet_with_codec(tmp_path):
    DT = frame_random(500, seed=7)
    jay = tmp_path / "x.jay"
    write_jay(DT, jay)
    for codec in ("snappy", "zstd", "none"):
        out = tmp_path / ("x-%s.parquet" % codec)
        interop.convert(jay, out, "--compression", codec)
        check_against_frame(interop.read_parquet(out), DT, codec)


def test_read_is_batched_correctly(tmp_path):
    """Row counts that are not multiples of the batch size, converted with a tiny batch size:
    batches must be sliced, not truncated or repeated."""
    DT = frame_random(1001, seed=3)
    jay, out = tmp_path / "x.jay", tmp_path / "x.arrow"
    write_jay(DT, jay)
    interop.convert(jay, out, "--batch-size", "64")
    tbl = interop.read_ipc_file(out)
    check_against_frame(tbl, DT, "batch-size 64")
    with pa.OSFile(str(out), "rb") as src:
        reader = pa.ipc.open_file(src)
        sizes = [reader.get_batch(i).num_rows for i in range(reader.num_record_batches)]
    assert max(sizes) <= 64 and sum(sizes) == 1001, sizes


def test_projection_and_limit(tmp_path):
    DT = frame_random(500, seed=11)
    jay, out = tmp_path / "x.jay", tmp_path / "x.arrow"
    write_jay(DT, jay)
    interop.convert(jay, out, "--columns", "s32,i32,t64", "--limit", "123")
    check_against_frame(interop.read_ipc_file(out), DT[:123, ["s32", "i32", "t64"]], "projection")


def test_projection_of_unknown_column_is_an_error(tmp_path):
    jay, out = tmp_path / "x.jay", tmp_path / "x.arrow"
    write_jay(frame_keyed2(), jay)
    proc = interop.run("convert", jay, out, "--columns", "k1,nope")
    assert proc.returncode in (1, 2), interop.describe(proc)
    assert proc.stderr.startswith("error:") and "nope" in proc.stderr, interop.describe(proc)
    assert not out.exists()


def test_jay_to_arrow_stream_and_back(tmp_path):
    """Jay -> Arrow IPC stream (.arrows) -> Jay, read by datatable: the whole pipeline keeps the frame."""
    DT = frame_random(700, seed=5)
    jay, stream, back = tmp_path / "x.jay", tmp_path / "x.arrows", tmp_path / "back.jay"
    write_jay(DT, jay)
    interop.convert(jay, stream)
    with pa.OSFile(str(stream), "rb") as src:
        check_against_frame(pa.ipc.open_stream(src).read_all(), DT, "stream")
    interop.convert(stream, back)
    got = interop.dt_read(back)
    assert got["names"] == list(DT.names)
    assert got["types"] == [interop.dt_type_name(t) for t in DT.types]
    interop.assert_same_columns(got["values"], interop.frame_values(DT), DT.names)
