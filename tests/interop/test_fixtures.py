"""Every file of data/jay/manifest.json through the CLI: "ok" files converted to Arrow IPC and
read by pyarrow must hold exactly the manifest's content (an independent check of the Rust
fixture tests: different reader of the output, different comparison code); "error" files must
be refused cleanly."""
import json

import pyarrow as pa
import pytest

import interop

MANIFEST = json.loads((interop.DATA / "manifest.json").read_text(encoding="utf-8"))
OK = sorted(k for k, v in MANIFEST.items() if v["expect"] == "ok")
BAD = sorted(k for k, v in MANIFEST.items() if v["expect"] == "error")


def test_manifest_is_complete():
    on_disk = sorted(str(p.relative_to(interop.DATA)) for p in interop.DATA.rglob("*.jay"))
    assert on_disk == sorted(MANIFEST), "data/jay and its manifest disagree"
    assert len(OK) >= 40 and len(BAD) >= 30


@pytest.mark.parametrize("rel", OK)
def test_ok_fixture_to_arrow(rel, tmp_path):
    entry = MANIFEST[rel]
    out = tmp_path / "out.arrow"
    interop.convert(interop.DATA / rel, out)
    tbl = interop.read_ipc_file(out)

    names = [c["name"] for c in entry["columns"]]
    assert tbl.column_names == names
    assert [interop.rs_type(t) for t in tbl.schema.types] == [c["arrow_type"] for c in entry["columns"]]
    assert all(f.nullable for f in tbl.schema)
    assert tbl.num_rows == entry["nrows"]
    interop.assert_same_columns(interop.table_values(tbl), [c["values"] for c in entry["columns"]], names)

    meta = tbl.schema.metadata or {}
    if entry["nkeys"]:
        assert meta.get(b"jay.nkeys") == str(entry["nkeys"]).encode(), meta
    else:
        assert b"jay.nkeys" not in meta, meta


@pytest.mark.parametrize("rel", OK)
def test_ok_fixture_head_and_verify(rel):
    """`inspect --verify` accepts the file; `head` prints without failing."""
    proc = interop.run("inspect", interop.DATA / rel, "--verify")
    assert proc.returncode == 0, interop.describe(proc)
    proc = interop.run("head", interop.DATA / rel, "-n", "3")
    assert proc.returncode == 0, interop.describe(proc)


@pytest.mark.parametrize("rel", BAD)
def test_bad_fixture_is_refused(rel, tmp_path):
    for ext in ("arrow", "parquet"):
        out = tmp_path / ("out." + ext)
        proc = interop.run("convert", interop.DATA / rel, out, "--from", "jay")
        interop.assert_clean_error(proc, output=out)
    proc = interop.run("inspect", interop.DATA / rel, "--verify")
    interop.assert_clean_error(proc)


def test_projection_of_fixture_matches_manifest(tmp_path):
    entry = MANIFEST["all_types.jay"]
    out = tmp_path / "out.arrow"
    interop.convert(interop.DATA / "all_types.jay", out, "--columns", "t64,s32,b8", "--limit", "4")
    tbl = interop.read_ipc_file(out)
    by_name = {c["name"]: c for c in entry["columns"]}
    assert tbl.column_names == ["t64", "s32", "b8"]
    interop.assert_same_columns(interop.table_values(tbl), [by_name[n]["values"][:4] for n in tbl.column_names],
                                tbl.column_names)
    assert isinstance(tbl.column(0).type, pa.TimestampType)
