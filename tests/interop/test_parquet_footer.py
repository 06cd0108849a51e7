"""The schema metadata of every legacy format reaches readers that never decode the embedded
Arrow schema: a Parquet file written by arrowsmith carries it twice, as pyarrow writes it, in the
`ARROW:schema` entry and as plain key/value pairs of the footer, which pyarrow's
`ParquetFile.metadata.metadata` and Polars' `read_parquet_metadata` show as they are."""
import json

import numpy as np
import pyarrow.parquet as pq
import pytest

import bcolz
import interop

ROOT = interop.ROOT / "data"


def footer(path):
    """The footer's key/value pairs as pyarrow and Polars see them; both must agree."""
    pl = pytest.importorskip("polars")
    by_pyarrow = {k.decode(): v.decode() for k, v in pq.ParquetFile(str(path)).metadata.metadata.items()}
    by_polars = pl.read_parquet_metadata(str(path))
    assert by_polars == by_pyarrow
    return by_pyarrow


def test_zipline_daily_bars_attrs_are_plain_footer_keys(tmp_path):
    """A daily-bars ctable as zipline's BcolzDailyBarWriter writes it (uint32 OHLCV, day, id;
    the root attrs that map each sid to its rows and calendar offset), written by bcolz-zipline:
    after the conversion, a reader of the footer alone gets the attrs back."""
    path = tmp_path / "daily_equities.bcolz"
    names = ["open", "high", "low", "close", "volume", "day", "id"]
    sids, days = [1, 2, 24], 6
    rng = np.random.default_rng(7)
    n = len(sids) * days
    columns = [rng.integers(900, 1100, n, dtype=np.uint32) for _ in names[:5]]
    columns.append(np.tile(np.arange(days, dtype=np.uint32) * 86400 + 1_420_070_400, len(sids)))
    columns.append(np.repeat(np.array(sids, dtype=np.uint32), days))
    ct = bcolz.ctable(columns=columns, names=names, rootdir=str(path), mode="w")
    ct.attrs["first_trading_day"] = 1_420_070_400
    ct.attrs["calendar_name"] = "XNYS"
    ct.attrs["start_session_ns"] = 1_420_070_400 * 10**9
    ct.attrs["end_session_ns"] = (1_420_070_400 + (days - 1) * 86400) * 10**9
    ct.attrs["first_row"] = {str(s): i * days for i, s in enumerate(sids)}
    ct.attrs["last_row"] = {str(s): i * days + days - 1 for i, s in enumerate(sids)}
    ct.attrs["calendar_offset"] = {str(s): 0 for s in sids}
    ct.flush()
    stored = bcolz.open(str(path), mode="r").attrs.getall()

    out = tmp_path / "bars.parquet"
    interop.convert(path, out)
    keys = footer(out)
    assert set(keys) == {"ARROW:schema", "bcolz.kind", "bcolz.attrs"}, keys
    assert keys["bcolz.kind"] == "ctable"
    attrs = json.loads(keys["bcolz.attrs"])
    assert attrs == stored
    assert attrs["first_row"] == {"1": 0, "2": 6, "24": 12}
    assert attrs["last_row"]["24"] == 17 and attrs["calendar_offset"]["2"] == 0
    # pyarrow's reader of the Arrow schema sees the same, once.
    assert pq.read_schema(str(out)).metadata[b"bcolz.attrs"] == keys["bcolz.attrs"].encode()


@pytest.mark.parametrize("rel, key, part", [
    ("jay/keyed2.jay", "jay.nkeys", "2"),
    ("dataseries/generated/basic-all.ds", "dataseries.xml", "<ExtentType"),
    ("vs/f64_r1_plain.vs", "vs.attributes", '"metric":"euclidean"'),
])
def test_schema_metadata_of_each_format_is_in_the_footer(tmp_path, rel, key, part):
    out = tmp_path / "out.parquet"
    interop.convert(ROOT / rel, out)
    keys = footer(out)
    schema_metadata = {k.decode(): v.decode() for k, v in pq.read_schema(str(out)).metadata.items()}
    assert keys == {"ARROW:schema": keys["ARROW:schema"], **schema_metadata}
    assert part in keys[key], keys[key]
