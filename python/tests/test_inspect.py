"""`arrowsmith.inspect` against the command line: for every sample file of every format, with and
without verification, the dict is `arrowsmith inspect --json`'s, the format's structure
included, or, when the command line prints no report, the same one-line error is raised. The
two spell settings their own way (the CLI names its flags, the library its settings), which the
comparison undoes."""
import json

import pytest

import arrowsmith
from conftest import DATA, cli_flags, cli_spelling_of, fixtures, python_error_of, run_cli

# The formats the fixtures in data/ do not cover, written from one Jay file by the command line.
CONVERTED = ["parquet", "arrow", "arrows", "csv", "ndjson"]


@pytest.fixture(scope="module")
def converted(tmp_path_factory):
    folder = tmp_path_factory.mktemp("converted")
    paths = {}
    for fmt in CONVERTED:
        path = folder / ("all_types." + fmt)
        proc = run_cli("convert", DATA / "jay" / "all_types.jay", path, "--to", fmt)
        assert proc.returncode == 0, proc.stderr
        paths[fmt] = path
    return paths


def library_spelling(value):
    """The CLI's report with every string spelled as the library spells it."""
    if isinstance(value, str):
        return cli_spelling_of(value)
    if isinstance(value, list):
        return [library_spelling(v) for v in value]
    if isinstance(value, dict):
        return {k: library_spelling(v) for k, v in value.items()}
    return value


def assert_inspect_equals_cli(path, options, verify):
    flags = cli_flags(options) + (["--verify"] if verify else [])
    proc = run_cli("inspect", path, "--json", *flags)
    assert proc.returncode in (0, 1, 2), proc.stderr
    if proc.stdout:
        # A report, also when verification failed (exit 1): Python returns it without raising.
        assert proc.returncode == 0 or verify, proc.stderr
        want = library_spelling(json.loads(proc.stdout))
        got = arrowsmith.inspect(path, verify=verify, **options)
        assert got == want
        assert want["structure"] is not None or want.get("notes"), want
        return want
    with pytest.raises(arrowsmith.ArrowsmithError) as raised:
        arrowsmith.inspect(path, verify=verify, **options)
    assert python_error_of(proc.stderr.strip()) == "error: " + str(raised.value)
    return None


@pytest.mark.parametrize("verify", [False, True], ids=["plain", "verify"])
@pytest.mark.parametrize("path, options", fixtures())
def test_inspect_equals_cli_json(path, options, verify):
    assert_inspect_equals_cli(path, options, verify)


@pytest.mark.parametrize("verify", [False, True], ids=["plain", "verify"])
@pytest.mark.parametrize("fmt", CONVERTED)
def test_inspect_of_arrow_ecosystem_formats_equals_cli_json(converted, fmt, verify):
    report = assert_inspect_equals_cli(converted[fmt], {}, verify)
    assert report["format"] == fmt and report["rows"] == 5
    assert report["structure"], report


@pytest.mark.parametrize("verify", [False, True], ids=["plain", "verify"])
def test_inspect_of_csv_fixtures_equals_cli_json(verify):
    paths = sorted(DATA.rglob("*.csv"))
    assert paths
    for path in paths:
        assert_inspect_equals_cli(path, {}, verify)


def test_the_report_holds_each_formats_structure():
    jay = arrowsmith.inspect(DATA / "jay" / "tiny.jay")
    assert jay["structure"]["nrows"] == 3 and jay["structure"]["trailer"] == "1JAY"
    assert [c["name"] for c in jay["structure"]["columns"]] == ["A", "B"]
    assert "notes" not in jay and "verify" not in jay

    ds = arrowsmith.inspect(DATA / "dataseries" / "generated" / "multitype.ds")
    assert len(ds["structure"]["types"]) >= 2
    assert all(e["offset"] > 0 for e in ds["structure"]["extents"])
    # Several extent types: the note names the setting as Python spells it.
    assert any("choose with the type option" in n for n in ds["notes"]), ds.get("notes")

    bcolz = arrowsmith.inspect(DATA / "bcolz" / "datasets" / "cp_lz4_sh1", verify=True)
    assert bcolz["structure"]["columns"][0]["chunks"] > 0
    assert bcolz["verify"]["damaged"] == []


def test_a_damaged_file_lists_its_damaged_parts():
    report = arrowsmith.inspect(DATA / "jay" / "bad" / "buffer_out_of_file.jay", verify=True)
    assert report["verify"]["ok"] is False
    assert report["structure"] is None
    assert [(d["part"], d["column"]) for d in report["verify"]["damaged"]] == [("column", "A")]
    assert report["verify"]["damaged"][0]["class"] == "buffer_out_of_bounds"
    with pytest.raises(arrowsmith.DataError):
        arrowsmith.inspect(DATA / "jay" / "bad" / "buffer_out_of_file.jay")
