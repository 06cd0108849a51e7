"""Helpers shared by the interop tests: running the arrowsmith binary, reading its output with
pyarrow, and turning Arrow columns and datatable frames into one canonical form to compare.

Canonical form ("manifest encoding", as in data/jay/manifest.json): a list per column; None
for null/NA; bool, int and float as Python values (floats compared bit-exactly apart from NaN,
which never appears because every NaN is NA); "inf" / "-inf" for infinities; strings as str;
date32 as int days since 1970-01-01; timestamps as int nanoseconds since the epoch; lists as
nested lists.
"""
import datetime as _dt
import math
import os
import pathlib
import subprocess

import pyarrow as pa
import pyarrow.parquet as pq

ROOT = pathlib.Path(__file__).resolve().parents[2]
DATA = ROOT / "data" / "jay"


def binary():
    """The arrowsmith binary: $ARROWSMITH_BIN, else the newest of target/{debug,release}."""
    env = os.environ.get("ARROWSMITH_BIN")
    if env:
        return env
    found = [p for p in (ROOT / "target" / "debug" / "arrowsmith", ROOT / "target" / "release" / "arrowsmith")
             if p.exists()]
    if not found:
        raise RuntimeError("no arrowsmith binary: set ARROWSMITH_BIN or run `cargo build` first")
    return str(max(found, key=lambda p: p.stat().st_mtime))


def run(*args, timeout=300):
    """Runs `arrowsmith ARGS...` and returns the CompletedProcess (text mode, never raises on exit)."""
    return subprocess.run([binary(), *map(str, args)], capture_output=True, text=True, timeout=timeout,
                          stdin=subprocess.DEVNULL)


def describe(proc):
    return "exit %d\n--- stdout ---\n%s\n--- stderr ---\n%s" % (proc.returncode, proc.stdout[-4000:],
                                                             proc.stderr[-4000:])


def convert(src, dst, *flags):
    """`arrowsmith convert SRC DST FLAGS...`, which must succeed and leave DST behind."""
    proc = run("convert", src, dst, *flags)
    assert proc.returncode == 0, "convert %s -> %s failed: %s" % (src, dst, describe(proc))
    assert os.path.exists(dst), "convert exited 0 but wrote no %s" % dst
    return proc


def assert_clean_error(proc, output=None):
    """A refusal as the CLI contract wants it: exit 1, `error: ...` on stderr, no panic, and
    (when `output` is given) no output file left behind."""
    assert proc.returncode != 101, "arrowsmith panicked: " + describe(proc)
    assert proc.returncode == 1, "expected exit 1, got " + describe(proc)
    assert proc.stderr.startswith("error:"), "stderr does not start with 'error:': " + describe(proc)
    for bad in ("panicked", "RUST_BACKTRACE", "stack backtrace"):
        assert bad not in proc.stderr, "stderr shows a panic: " + describe(proc)
    if output is not None:
        leftovers = [p.name for p in pathlib.Path(output).parent.iterdir()
                     if p.name.startswith(pathlib.Path(output).name)]
        assert not os.path.exists(output), "a failed convert left %s behind" % output
        assert not leftovers, "a failed convert left %s behind" % leftovers


def read_ipc_file(path):
    """Reads an Arrow IPC *file* (Feather v2) as a Table; checks the magic so that a stream is refused."""
    with open(path, "rb") as fh:
        head = fh.read(6)
    assert head == b"ARROW1", "%s is not an Arrow IPC file (starts with %r)" % (path, head)
    with pa.OSFile(str(path), "rb") as src:
        return pa.ipc.open_file(src).read_all()


def read_parquet(path):
    return pq.read_table(str(path))


# ---------------------------------------------------------------------------------------------
# types
# ---------------------------------------------------------------------------------------------

_RS_NAMES = {
    pa.bool_(): "Boolean", pa.int8(): "Int8", pa.int16(): "Int16", pa.int32(): "Int32",
    pa.int64(): "Int64", pa.uint8(): "UInt8", pa.uint16(): "UInt16", pa.uint32(): "UInt32",
    pa.uint64(): "UInt64", pa.float16(): "Float16", pa.float32(): "Float32", pa.float64(): "Float64",
    pa.string(): "Utf8", pa.large_string(): "LargeUtf8", pa.date32(): "Date32", pa.date64(): "Date64",
    pa.null(): "Null",
}


def rs_type(t):
    """A pyarrow type in arrow-rs spelling (`List(Int32)`, `Timestamp(Nanosecond, None)`), the way
    the manifest writes it. List element fields must be named `item` and be nullable (spec B3.1)."""
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        field = t.value_field
        assert field.name == "item" and field.nullable, "list element field is %s, want nullable 'item'" % field
        return "%s(%s)" % ("List" if pa.types.is_list(t) else "LargeList", rs_type(t.value_type))
    if pa.types.is_timestamp(t):
        unit = {"s": "Second", "ms": "Millisecond", "us": "Microsecond", "ns": "Nanosecond"}[t.unit]
        return "Timestamp(%s, %s)" % (unit, '"%s"' % t.tz if t.tz else "None")
    if t in _RS_NAMES:
        return _RS_NAMES[t]
    return str(t)


# datatable type name -> the Arrow type of spec B3.1, in arrow-rs spelling
_JAY_TO_ARROW = {
    "bool8": "Boolean", "int8": "Int8", "int16": "Int16", "int32": "Int32", "int64": "Int64",
    "float32": "Float32", "float64": "Float64", "str32": "Utf8", "str64": "LargeUtf8",
    "date32": "Date32", "time64": "Timestamp(Nanosecond, None)", "void": "Null",
}


def arrow_type_of_dt(t):
    """The Arrow type (arrow-rs spelling) that spec B3.1 assigns to a datatable type."""
    s = str(t)
    s = s[len("Type."):] if s.startswith("Type.") else s
    if s.startswith("arr32(") or s.startswith("arr64("):
        return "%s(%s)" % ("List" if s.startswith("arr32") else "LargeList", arrow_type_of_dt(s[6:-1]))
    return _JAY_TO_ARROW[s]


def dt_type_name(t):
    s = str(t)
    return s[len("Type."):] if s.startswith("Type.") else s


# ---------------------------------------------------------------------------------------------
# values
# ---------------------------------------------------------------------------------------------

def enc(v):
    """Canonical form of one Python value (as produced by to_pylist / to_list)."""
    if isinstance(v, list):
        return [enc(x) for x in v]
    if isinstance(v, float):
        if math.isnan(v):
            return None
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
    if isinstance(v, _dt.datetime):
        d = v.replace(tzinfo=None) - _dt.datetime(1970, 1, 1)
        return (d.days * 86400 + d.seconds) * 10**9 + d.microseconds * 1000
    if isinstance(v, _dt.date):
        return (v - _dt.date(1970, 1, 1)).days
    return v


def arrow_values(arr):
    """Canonical values of a pyarrow Array or ChunkedArray (temporal types as raw integers,
    recursing into lists)."""
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks() if arr.num_chunks else pa.array([], arr.type)
    t = arr.type
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        child = arrow_values(arr.values)
        offs = arr.offsets.to_pylist()
        valid = arr.is_valid().to_pylist()
        return [child[offs[i]:offs[i + 1]] if valid[i] else None for i in range(len(arr))]
    if pa.types.is_timestamp(t):
        return enc(arr.cast(pa.timestamp("ns", tz=t.tz)).cast(pa.int64()).to_pylist())
    if pa.types.is_date32(t):
        return arr.cast(pa.int32()).to_pylist()
    if pa.types.is_date64(t):
        return [None if v is None else v // 86_400_000 for v in arr.cast(pa.int64()).to_pylist()]
    if pa.types.is_null(t):
        return [None] * len(arr)
    return enc(arr.to_pylist())


def table_values(tbl):
    return [arrow_values(c) for c in tbl.columns]


def frame_values(DT):
    """Canonical values of every column of a datatable Frame; temporal columns are cast to
    integers by datatable itself, so nanoseconds are not lost."""
    import datatable as dt
    from datatable import f
    out = []
    for i, t in enumerate(DT.types):
        if t == dt.Type.date32:
            vals = DT[:, dt.as_type(f[i], dt.Type.int32)].to_list()[0]
        elif t == dt.Type.time64:
            vals = DT[:, dt.as_type(f[i], dt.Type.int64)].to_list()[0]
        else:
            vals = DT[:, i].to_list()[0]
        out.append(enc(vals))
    return out


def same(a, b):
    """Equality of canonical values: floats exactly (-0.0 != 0.0), bools are not ints."""
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, float) and isinstance(b, float):
        return a == b and math.copysign(1, a) == math.copysign(1, b)
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if isinstance(a, float) != isinstance(b, float):
        return False
    return a == b


def first_difference(got, want):
    """A short description of where two canonical columns differ (for assertion messages)."""
    if not (isinstance(got, list) and isinstance(want, list)):
        return "got %r, want %r" % (got, want)
    if len(got) != len(want):
        return "length %d, want %d" % (len(got), len(want))
    for i, (x, y) in enumerate(zip(got, want)):
        if not same(x, y):
            return "row %d: got %r, want %r" % (i, x, y)
    return "no difference"


def assert_same_columns(got_cols, want_cols, names):
    assert len(got_cols) == len(want_cols), "%d columns, want %d" % (len(got_cols), len(want_cols))
    for name, g, w in zip(names, got_cols, want_cols):
        assert same(g, w), "column %r differs: %s" % (name, first_difference(g, w))


# ---------------------------------------------------------------------------------------------
# datatable's view of a Jay file, read in a child process: datatable's reader crashes on some
# malformed files (spec A7), and a crash must fail one test, not the whole session
# ---------------------------------------------------------------------------------------------

_DT_READ = r"""
import json, sys
sys.path.insert(0, sys.argv[2])
import datatable as dt
import interop
R = dt.fread(sys.argv[1])
stats = []
for i, t in enumerate(R.types):
    one = R[:, [i]]
    try:
        # Frame.min()/max()/countna() use the stats and nullcount stored in the file: datatable
        # trusts them (spec A6.1), so wrong stats show up here and not in the values.
        stats.append([interop.enc(one.min().to_list()[0][0]), interop.enc(one.max().to_list()[0][0]),
                      one.countna().to_list()[0][0]])
    except Exception:
        stats.append(None)
print(json.dumps({"names": list(R.names), "types": [interop.dt_type_name(t) for t in R.types],
                  "nrows": R.nrows, "key": list(R.key), "values": interop.frame_values(R),
                  "stats": stats}))
"""


def dt_read(path):
    """What datatable 1.1 makes of a Jay file: names, type names, nrows, key, canonical values and
    the trusted [min, max, countna] per column (None where datatable has no stats for the type)."""
    import json
    import sys
    proc = subprocess.run([sys.executable, "-c", _DT_READ, str(path), str(pathlib.Path(__file__).parent)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, "datatable could not read %s: %s" % (path, describe(proc))
    return json.loads(proc.stdout.strip().splitlines()[-1])
