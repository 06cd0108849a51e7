//! The command line on the Jay fixtures of `data/jay` (described by `data/jay/manifest.json`):
//! `inspect` shows the structure down to the buffers, conversions keep every value, and every
//! damaged file fails with exit code 1 and one `error:` line, never a panic.

mod common;

use common::{arrowsmith, assert_fails, assert_ok_quietly, data, p, stderr};

use std::fs::File;
use std::path::{Path, PathBuf};

use arrow::compute::concat_batches;
use arrow_array::cast::AsArray;
use arrow_array::types::*;
use arrow_array::{Array, ArrayRef, RecordBatch, RecordBatchReader};
use arrow_schema::{DataType, TimeUnit};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use serde_json::Value;

fn manifest() -> serde_json::Map<String, Value> {
    let text = std::fs::read_to_string(fixture("manifest.json")).unwrap();
    match serde_json::from_str(&text).unwrap() {
        Value::Object(map) => map,
        _ => panic!("the manifest is an object"),
    }
}

fn fixture(name: &str) -> PathBuf {
    data("jay").join(name)
}

#[test]
fn inspect_shows_the_buffers_of_tiny_jay() {
    let tiny = fixture("tiny.jay");
    let text = assert_ok_quietly(&arrowsmith(&["inspect", p(&tiny)]));
    for expected in [
        "format   jay (h2oai/datatable Jay file)",
        "rows     3",
        "3 rows, 2 columns, 0 key columns",
        "trailer 1JAY",
        "buffers (byte offsets in the file)",
    ] {
        assert!(text.contains(expected), "{expected:?} in\n{text}");
    }
    // Column, type, Arrow type, layout, counts; then each buffer: offset, length, end.
    let squeezed: Vec<String> = text
        .lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect();
    for line in [
        "0 A Int32 Int32 new 3 1 -",
        "1 B Str32 Utf8 new 3 1 - u32 offsets",
        "0 data 8 12 20",
        "1 data 24 16 40",
        "1 strdata 40 1 41",
    ] {
        assert!(squeezed.iter().any(|l| l == line), "{line:?} in\n{text}");
    }

    let out = arrowsmith(&["inspect", p(&tiny), "--json"]);
    let report: Value = serde_json::from_str(&assert_ok_quietly(&out)).unwrap();
    assert_eq!(report["format"], "jay");
    assert_eq!(report["rows"], 3);
    let jay = &report["structure"];
    assert_eq!(jay["nrows"], 3);
    assert_eq!(jay["nkeys"], 0);
    assert_eq!(jay["trailer"], "1JAY");
    assert_eq!(jay["file_size"], 344);
    let a = &jay["columns"][0];
    assert_eq!(a["name"], "A");
    assert_eq!(a["jay_type"], "Int32");
    assert_eq!(a["arrow_type"], "Int32");
    assert_eq!(a["layout"], "new");
    assert_eq!(a["nullcount"], 1);
    assert_eq!(a["buffers"]["validity"], Value::Null);
    assert_eq!(a["buffers"]["data"]["offset"], 8);
    assert_eq!(a["buffers"]["data"]["data_offset"], 0);
    assert_eq!(a["buffers"]["data"]["length"], 12);
    let b = &jay["columns"][1];
    assert_eq!(b["offset_width"], 4);
    assert_eq!(b["buffers"]["strdata"]["offset"], 40);
    assert_eq!(b["buffers"]["strdata"]["length"], 1);
}

#[test]
fn inspect_goes_down_into_array_children() {
    let out = arrowsmith(&["inspect", p(&fixture("arrays.jay")), "--json", "--verify"]);
    let report: Value = serde_json::from_str(&assert_ok_quietly(&out)).unwrap();
    let aa = &report["structure"]["columns"][2];
    assert_eq!(aa["jay_type"], "Arr32(Arr32(Int32))");
    assert_eq!(aa["child"]["jay_type"], "Arr32(Int32)");
    assert_eq!(aa["child"]["child"]["jay_type"], "Int32");
    assert_eq!(aa["child"]["child"]["child"], Value::Null);
    assert!(aa["child"]["child"]["buffers"]["data"]["offset"].is_u64());
    assert_eq!(report["verify"]["ok"], true);

    let text = assert_ok_quietly(&arrowsmith(&["inspect", p(&fixture("arrays.jay"))]));
    assert!(text.contains("2.child.child"), "{text}");
}

#[test]
fn inspect_matches_the_manifest_for_every_good_fixture() {
    for (name, entry) in manifest() {
        if entry["expect"] != "ok" {
            continue;
        }
        let out = arrowsmith(&["inspect", p(&fixture(&name)), "--json", "--verify"]);
        let report: Value = serde_json::from_str(&assert_ok_quietly(&out)).unwrap();
        assert_eq!(report["verify"]["ok"], true, "{name}");
        assert_eq!(report["structure"]["nrows"], entry["nrows"], "{name}");
        assert_eq!(report["structure"]["nkeys"], entry["nkeys"], "{name}");
        let columns = entry["columns"].as_array().unwrap();
        let described = report["structure"]["columns"].as_array().unwrap();
        assert_eq!(described.len(), columns.len(), "{name}");
        for (want, got) in columns.iter().zip(described) {
            for key in ["name", "jay_type", "layout", "nullcount"] {
                assert_eq!(got[key], want[key], "{name}: {key}");
            }
        }
    }
}

/// Row `i` of a column as the manifest writes it: numbers, strings, booleans or null (dates
/// as days, times as nanoseconds).
fn value(array: &ArrayRef, i: usize) -> Value {
    if array.logical_nulls().is_some_and(|n| n.is_null(i)) {
        return Value::Null;
    }
    match array.data_type() {
        DataType::Boolean => Value::from(array.as_boolean().value(i)),
        DataType::Int8 => Value::from(array.as_primitive::<Int8Type>().value(i)),
        DataType::Int16 => Value::from(array.as_primitive::<Int16Type>().value(i)),
        DataType::Int32 => Value::from(array.as_primitive::<Int32Type>().value(i)),
        DataType::Int64 => Value::from(array.as_primitive::<Int64Type>().value(i)),
        DataType::Float32 => Value::from(array.as_primitive::<Float32Type>().value(i) as f64),
        DataType::Float64 => Value::from(array.as_primitive::<Float64Type>().value(i)),
        DataType::Utf8 => Value::from(array.as_string::<i32>().value(i)),
        DataType::LargeUtf8 => Value::from(array.as_string::<i64>().value(i)),
        DataType::Date32 => Value::from(array.as_primitive::<Date32Type>().value(i)),
        DataType::Timestamp(TimeUnit::Nanosecond, None) => {
            Value::from(array.as_primitive::<TimestampNanosecondType>().value(i))
        }
        other => panic!("no manifest form for {other}"),
    }
}

fn read_parquet(path: &Path) -> RecordBatch {
    let reader = ParquetRecordBatchReaderBuilder::try_new(File::open(path).unwrap())
        .unwrap()
        .build()
        .unwrap();
    let schema = reader.schema();
    let batches: Vec<RecordBatch> = reader.collect::<Result<_, _>>().unwrap();
    concat_batches(&schema, &batches).unwrap()
}

#[test]
fn all_types_converts_to_parquet_value_for_value() {
    let dir = tempfile::tempdir().unwrap();
    let output = dir.path().join("all_types.parquet");
    assert_ok_quietly(&arrowsmith(&[
        "convert",
        p(&fixture("all_types.jay")),
        p(&output),
        "--batch-size",
        "2",
    ]));
    let batch = read_parquet(&output);
    let entry = &manifest()["all_types.jay"];
    assert_eq!(batch.num_rows() as u64, entry["nrows"].as_u64().unwrap());
    let columns = entry["columns"].as_array().unwrap();
    assert_eq!(batch.num_columns(), columns.len());
    for (i, column) in columns.iter().enumerate() {
        let field = batch.schema().field(i).clone();
        assert_eq!(field.name(), column["name"].as_str().unwrap());
        let array = batch.column(i);
        let values = column["values"].as_array().unwrap();
        for (row, want) in values.iter().enumerate() {
            let got = value(array, row);
            let same = match (&got, want) {
                (Value::Number(a), Value::Number(b)) => a.as_f64() == b.as_f64(),
                (a, b) => a == b,
            };
            assert!(same, "{} row {row}: got {got}, want {want}", field.name());
        }
    }
}

#[test]
fn every_good_fixture_converts_to_every_ecosystem_format() {
    let dir = tempfile::tempdir().unwrap();
    for (name, entry) in manifest() {
        if entry["expect"] != "ok" {
            continue;
        }
        let nested = entry["columns"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["jay_type"].as_str().unwrap().starts_with("Arr"));
        for to in ["parquet", "arrow", "arrows", "csv", "ndjson"] {
            let stem = name.replace('/', "-");
            let output = dir.path().join(format!("{stem}.{to}"));
            let out = arrowsmith(&["convert", p(&fixture(&name)), p(&output)]);
            if nested && to == "csv" {
                assert_eq!(out.status.code(), Some(1), "{name}: {}", stderr(&out));
                assert!(stderr(&out).contains("CSV has no form"), "{}", stderr(&out));
                assert!(!output.exists());
                continue;
            }
            assert_ok_quietly(&out);
            if entry["columns"].as_array().unwrap().is_empty() {
                continue;
            }
            let report: Value = serde_json::from_str(&assert_ok_quietly(&arrowsmith(&[
                "inspect",
                p(&output),
                "--json",
            ])))
            .unwrap();
            assert_eq!(report["rows"], entry["nrows"], "{name} -> {to}");
        }
    }
}

#[test]
fn head_shows_jay_rows() {
    let text = assert_ok_quietly(&arrowsmith(&["head", p(&fixture("tiny.jay")), "-n", "2"]));
    assert_eq!(
        text,
        "+------+------+\n| A    | B    |\n+------+------+\n| 1    | a    |\n| null | null |\n+------+------+\n"
    );
    let text = assert_ok_quietly(&arrowsmith(&[
        "head",
        p(&fixture("all_types.jay")),
        "--columns",
        "s64,i8",
    ]));
    assert!(text.contains("| s64       | i8   |"), "{text}");
    assert!(text.contains("𝄞 clef"), "{text}");
}

#[test]
fn every_damaged_fixture_fails_with_one_error_line() {
    let dir = tempfile::tempdir().unwrap();
    let bad: Vec<PathBuf> = std::fs::read_dir(fixture("bad"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "jay"))
        .collect();
    assert!(bad.len() >= 30, "the damaged fixtures are there");
    let output = dir.path().join("out.parquet");
    for path in &bad {
        let name = path.file_name().unwrap().to_str().unwrap();
        // Without --verify, inspect reads the structure only, and some damage lies in the data.
        let out = arrowsmith(&["inspect", p(path)]);
        assert!(
            matches!(out.status.code(), Some(0 | 1)),
            "{name}: {}",
            stderr(&out)
        );
        let structural = out.status.code() == Some(1);
        for args in [
            vec!["convert", p(path), p(&output)],
            vec!["inspect", p(path), "--verify", "--json"],
            vec!["inspect", p(path)],
            vec!["head", p(path)],
        ] {
            if args.len() == 2 && !structural {
                continue;
            }
            let out = arrowsmith(&args);
            let err = stderr(&out);
            assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
            assert!(err.starts_with("error: "), "{args:?}: {err}");
            assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
            assert!(err.contains(name), "{args:?} names the file: {err}");
            assert!(!err.contains("internal error"), "{args:?}: {err}");
            assert!(!output.exists(), "{args:?} left an output");
        }
    }
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

#[test]
fn an_existing_output_survives_a_damaged_jay() {
    let dir = tempfile::tempdir().unwrap();
    let output = dir.path().join("keep.arrow");
    std::fs::write(&output, b"precious").unwrap();
    let out = arrowsmith(&[
        "convert",
        p(&fixture("bad/str_invalid_utf8.jay")),
        p(&output),
        "--overwrite",
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(std::fs::read(&output).unwrap(), b"precious");
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
}

/// `bytes` of a Jay file with its `Frame.nrows` set to `nrows` (the slot must be present).
fn with_frame_nrows(mut bytes: Vec<u8>, nrows: u64) -> Vec<u8> {
    let n = bytes.len();
    let u32_at = |b: &[u8], at: usize| u32::from_le_bytes(b[at..at + 4].try_into().unwrap());
    let meta_size = u64::from_le_bytes(bytes[n - 16..n - 8].try_into().unwrap()) as usize;
    let meta = n - 16 - meta_size;
    let frame = meta + u32_at(&bytes, meta) as usize;
    let vtable = (frame as i64 - u32_at(&bytes, frame) as i32 as i64) as usize;
    let slot = u16::from_le_bytes(bytes[vtable + 4..vtable + 6].try_into().unwrap()) as usize;
    assert_ne!(slot, 0, "the file stores Frame.nrows");
    bytes[frame + slot..frame + slot + 8].copy_from_slice(&nrows.to_le_bytes());
    bytes
}

#[test]
fn void_columns_that_claim_more_rows_than_the_cap_are_refused_at_once() {
    // void_only.jay (160 bytes, two void columns of 3 rows) claiming 2^62 rows: nothing in the
    // file stands behind them, and every writer ran on, producing them, until killed.
    let dir = tempfile::tempdir().unwrap();
    let claimed = 1u64 << 62;
    let original = std::fs::read(fixture("void_only.jay")).unwrap();
    let huge = dir.path().join("huge.jay");
    std::fs::write(&huge, with_frame_nrows(original.clone(), claimed)).unwrap();
    let info = arrowsmith::jay::JayFile::open(&huge).unwrap();
    assert_eq!(
        (info.info().nrows, std::fs::metadata(&huge).unwrap().len()),
        (claimed, 160)
    );
    for to in ["parquet", "csv", "jay"] {
        for salvage in [false, true] {
            let output = dir.path().join(format!("out.{to}"));
            let mut args = vec!["convert", p(&huge), p(&output)];
            if salvage {
                args.push("--salvage");
            }
            let out = common::within_seconds(10, &args);
            assert_fails(&out, 1, "huge.jay");
            let err = stderr(&out);
            assert!(
                err.contains(&claimed.to_string()) && err.contains("--max-dataless-rows"),
                "{err}"
            );
            assert!(!output.exists(), "{to}");
        }
    }
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);

    // Under the cap such rows convert; the setting lowers or raises it.
    let million = dir.path().join("million.jay");
    std::fs::write(&million, with_frame_nrows(original, 1 << 20)).unwrap();
    let csv = dir.path().join("million.csv");
    assert_ok_quietly(&arrowsmith(&["convert", p(&million), p(&csv)]));
    let text = std::fs::read_to_string(&csv).unwrap();
    assert_eq!(text.lines().count(), 1 + (1 << 20));
    let out = arrowsmith(&[
        "convert",
        p(&million),
        p(&dir.path().join("capped.csv")),
        "--max-dataless-rows",
        "1000",
    ]);
    assert_fails(&out, 1, "million.jay");
    let jay = dir.path().join("five.jay");
    assert_ok_quietly(&arrowsmith(&["convert", p(&huge), p(&jay), "--limit", "5"]));
    let out = arrowsmith(&[
        "convert",
        p(&csv),
        p(&dir.path().join("x.csv")),
        "--max-dataless-rows",
        "5",
    ]);
    assert_fails(&out, 2, "--max-dataless-rows applies to jay input");
}
