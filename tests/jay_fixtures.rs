//! Every Jay fixture written by datatable 1.1.0 (and every damaged variant) against its
//! manifest: structure, Arrow types and every value; damaged files must fail with their class.

mod common;

use std::path::Path;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::*;
use arrow_array::{Array, ArrayRef, RecordBatch};
use arrow_schema::{DataType, TimeUnit};
use arrowsmith::jay::{ColumnInfo, JayFile, Layout, ReaderBuilder, Stats};
use arrowsmith::Error;
use common::data;
use serde_json::Value;

fn manifest() -> serde_json::Map<String, Value> {
    let text = std::fs::read_to_string(data("jay").join("manifest.json")).unwrap();
    serde_json::from_str::<Value>(&text)
        .unwrap()
        .as_object()
        .unwrap()
        .clone()
}

/// arrow-rs spelling of the manifest's `arrow_type`.
fn spell(t: &DataType) -> String {
    match t {
        DataType::Timestamp(TimeUnit::Nanosecond, None) => "Timestamp(Nanosecond, None)".into(),
        DataType::List(f) => format!("List({})", spell(f.data_type())),
        DataType::LargeList(f) => format!("LargeList({})", spell(f.data_type())),
        other => format!("{other:?}"),
    }
}

fn read_all(path: &Path, batch_size: usize) -> (Arc<arrow_schema::Schema>, Vec<RecordBatch>) {
    let reader = ReaderBuilder::new()
        .with_batch_size(batch_size)
        .build(path)
        .unwrap();
    let schema = arrow_array::RecordBatchReader::schema(&reader);
    let batches = reader.collect::<Result<Vec<_>, _>>().unwrap();
    (schema, batches)
}

/// Compares row `i` of `array` with a manifest value; the error says where they differ.
fn check_value(array: &ArrayRef, i: usize, expected: &Value) -> Result<(), String> {
    // Logical nulls, so that a Null column counts as all null.
    let is_null = array.logical_nulls().is_some_and(|n| n.is_null(i));
    if expected.is_null() {
        return if is_null {
            Ok(())
        } else {
            Err("expected null".into())
        };
    }
    if is_null {
        return Err(format!("got null, expected {expected}"));
    }
    let int = |got: i64| {
        if expected.as_i64() == Some(got) {
            Ok(())
        } else {
            Err(format!("got {got}, expected {expected}"))
        }
    };
    let float = |got: f64| {
        let want = match expected {
            Value::String(s) if s == "inf" => f64::INFINITY,
            Value::String(s) if s == "-inf" => f64::NEG_INFINITY,
            other => other.as_f64().ok_or(format!("expected {other}"))?,
        };
        if got.to_bits() == want.to_bits() {
            Ok(())
        } else {
            Err(format!("got {got:?}, expected {want:?}"))
        }
    };
    match array.data_type() {
        DataType::Boolean => {
            let got = array.as_boolean().value(i);
            if expected.as_bool() == Some(got) {
                Ok(())
            } else {
                Err(format!("got {got}, expected {expected}"))
            }
        }
        DataType::Int8 => int(array.as_primitive::<Int8Type>().value(i) as i64),
        DataType::Int16 => int(array.as_primitive::<Int16Type>().value(i) as i64),
        DataType::Int32 => int(array.as_primitive::<Int32Type>().value(i) as i64),
        DataType::Int64 => int(array.as_primitive::<Int64Type>().value(i)),
        DataType::Date32 => int(array.as_primitive::<Date32Type>().value(i) as i64),
        DataType::Timestamp(TimeUnit::Nanosecond, None) => {
            int(array.as_primitive::<TimestampNanosecondType>().value(i))
        }
        DataType::Float32 => float(array.as_primitive::<Float32Type>().value(i) as f64),
        DataType::Float64 => float(array.as_primitive::<Float64Type>().value(i)),
        DataType::Utf8 | DataType::LargeUtf8 => {
            let got = if let Some(a) = array.as_string_opt::<i32>() {
                a.value(i)
            } else {
                array.as_string::<i64>().value(i)
            };
            if expected.as_str() == Some(got) {
                Ok(())
            } else {
                Err(format!("got {got:?}, expected {expected}"))
            }
        }
        DataType::List(_) | DataType::LargeList(_) => {
            let items = if let Some(l) = array.as_list_opt::<i32>() {
                l.value(i)
            } else {
                array.as_list::<i64>().value(i)
            };
            let want = expected
                .as_array()
                .ok_or(format!("expected {expected}, got a list"))?;
            if items.len() != want.len() {
                return Err(format!(
                    "list of {} items, expected {expected}",
                    items.len()
                ));
            }
            for (j, w) in want.iter().enumerate() {
                check_value(&items, j, w).map_err(|e| format!("item {j}: {e}"))?;
            }
            Ok(())
        }
        DataType::Null => Err(format!(
            "a Null column holds only nulls, expected {expected}"
        )),
        other => Err(format!("unexpected type {other}")),
    }
}

fn check_stats(info: &ColumnInfo, expected: &Value) -> Result<(), String> {
    match (&info.stats, expected) {
        (None, Value::Null) => Ok(()),
        (Some(Stats::Int { min, max }), Value::Array(v))
            if v[0].as_i64() == Some(*min) && v[1].as_i64() == Some(*max) =>
        {
            Ok(())
        }
        (Some(Stats::Float { min, max }), Value::Array(v)) => {
            let same = |got: f64, want: &Value| match want {
                Value::String(s) if s == "nan" => got.is_nan(),
                Value::String(s) if s == "inf" => got == f64::INFINITY,
                Value::String(s) if s == "-inf" => got == f64::NEG_INFINITY,
                w => w
                    .as_f64()
                    .map(|w| w.to_bits() == got.to_bits())
                    .unwrap_or(false),
            };
            if same(*min, &v[0]) && same(*max, &v[1]) {
                Ok(())
            } else {
                Err(format!("stats {min} {max} != {expected}"))
            }
        }
        (got, want) => Err(format!("stats {got:?} != {want}")),
    }
}

fn check_ok_fixture(name: &str, entry: &Value) {
    let path = data("jay").join(name);
    let file = JayFile::open(&path).unwrap_or_else(|e| panic!("{name}: {e}"));
    let info = file.info();
    assert_eq!(Some(info.nrows), entry["nrows"].as_u64(), "{name}: nrows");
    assert_eq!(
        Some(info.nkeys as u64),
        entry["nkeys"].as_u64(),
        "{name}: nkeys"
    );
    let columns = entry["columns"].as_array().unwrap();
    assert_eq!(info.columns.len(), columns.len(), "{name}: column count");
    for (col, want) in info.columns.iter().zip(columns) {
        let cname = want["name"].as_str().unwrap();
        assert_eq!(col.name.as_deref(), Some(cname), "{name}: column name");
        assert_eq!(
            col.jay_type.to_string(),
            want["jay_type"].as_str().unwrap(),
            "{name}/{cname}: jay type"
        );
        let layout = if col.layout == Layout::Old {
            "old"
        } else {
            "new"
        };
        assert_eq!(
            layout,
            want["layout"].as_str().unwrap(),
            "{name}/{cname}: layout"
        );
        assert_eq!(
            Some(col.nullcount),
            want["nullcount"].as_u64(),
            "{name}/{cname}: nullcount"
        );
        check_stats(col, &want["stats"]).unwrap_or_else(|e| panic!("{name}/{cname}: {e}"));
    }

    // Several batch sizes, so that values are checked across batch boundaries too.
    for batch_size in [1, 2, 7, 65_536] {
        let (schema, batches) = read_all(&path, batch_size);
        let nkeys_meta = schema.metadata().get("jay.nkeys").cloned();
        let nkeys = entry["nkeys"].as_u64().unwrap();
        assert_eq!(
            nkeys_meta,
            (nkeys > 0).then(|| nkeys.to_string()),
            "{name}: jay.nkeys metadata"
        );
        let total: usize = batches.iter().map(|b| b.num_rows()).sum();
        assert_eq!(
            total as u64, info.nrows,
            "{name}: rows read with batch size {batch_size}"
        );
        for (c, want) in columns.iter().enumerate() {
            let field = schema.field(c);
            assert_eq!(field.name(), want["name"].as_str().unwrap());
            assert!(field.is_nullable());
            assert_eq!(
                spell(field.data_type()),
                want["arrow_type"].as_str().unwrap(),
                "{name}: arrow type of {}",
                field.name()
            );
            let values = want["values"].as_array().unwrap();
            let mut row = 0;
            for batch in &batches {
                let array = batch.column(c);
                assert_eq!(array.data_type(), field.data_type());
                for i in 0..batch.num_rows() {
                    check_value(array, i, &values[row]).unwrap_or_else(|e| {
                        panic!("{name}: column {:?} row {row}: {e}", field.name())
                    });
                    row += 1;
                }
            }
            assert_eq!(row, values.len());
        }
    }
}

#[test]
fn every_good_fixture_reads_as_its_manifest_says() {
    let mut checked = 0;
    for (name, entry) in manifest() {
        if entry["expect"] == "ok" {
            check_ok_fixture(&name, &entry);
            checked += 1;
        }
    }
    assert!(checked >= 40, "only {checked} good fixtures found");
}

#[test]
fn every_bad_fixture_fails_with_its_class() {
    let mut checked = 0;
    for (name, entry) in manifest() {
        if entry["expect"] != "error" {
            continue;
        }
        let class = entry["error_class"].as_str().unwrap();
        let path = data("jay").join(&name);
        let outcome = ReaderBuilder::new()
            .build(&path)
            .and_then(|reader| reader.collect::<Result<Vec<_>, _>>().map_err(Error::from));
        let error = match outcome {
            Ok(_) => panic!("{name}: read without error, expected {class}"),
            Err(e) => e,
        };
        assert_eq!(error.class().as_str(), class, "{name}: {error}");
        let text = error.to_string();
        assert!(
            text.contains(&name),
            "{name}: the message does not name the file: {text}"
        );
        checked += 1;
    }
    assert!(checked >= 30, "only {checked} bad fixtures found");
}

#[test]
fn projection_limit_and_zero_copy() {
    let path = data("jay").join("all_types.jay");
    let reader = ReaderBuilder::new()
        .with_projection(["s64", "i32"])
        .with_limit(3)
        .build(&path)
        .unwrap();
    let batches: Vec<_> = reader.collect::<Result<_, _>>().unwrap();
    assert_eq!(batches.len(), 1);
    let batch = &batches[0];
    assert_eq!(batch.num_rows(), 3);
    assert_eq!(batch.schema().field(0).name(), "s64");
    assert_eq!(batch.schema().field(1).name(), "i32");
    let i32s = batch.column(1).as_primitive::<Int32Type>();
    assert_eq!(
        i32s.iter().collect::<Vec<_>>(),
        vec![Some(591), Some(0), None]
    );

    // Index projection, and an unknown name is a clear error.
    let reader = ReaderBuilder::new()
        .with_projection([3usize])
        .build(&path)
        .unwrap();
    assert_eq!(
        arrow_array::RecordBatchReader::schema(&reader)
            .field(0)
            .name(),
        "i32"
    );
    let err = ReaderBuilder::new()
        .with_projection(["nope"])
        .build(&path)
        .err()
        .unwrap();
    assert!(err.to_string().contains("nope"), "{err}");
}

#[test]
fn fixed_width_values_and_string_bytes_are_not_copied() {
    let bytes = std::fs::read(data("jay").join("all_types.jay")).unwrap();
    let buffer = arrow_buffer::Buffer::from_vec(bytes);
    let file = Arc::new(JayFile::from_bytes(buffer.clone()).unwrap());
    let range = buffer.as_ptr() as usize..buffer.as_ptr() as usize + buffer.len();
    let inside = |p: *const u8| range.contains(&(p as usize));
    let batch = ReaderBuilder::new()
        .with_batch_size(2)
        .build_from_file(file)
        .unwrap()
        .nth(1)
        .unwrap()
        .unwrap();
    let i32s = batch
        .column_by_name("i32")
        .unwrap()
        .as_primitive::<Int32Type>();
    let f64s = batch
        .column_by_name("f64")
        .unwrap()
        .as_primitive::<Float64Type>();
    let strs = batch.column_by_name("s32").unwrap().as_string::<i32>();
    if buffer.as_ptr().align_offset(8) == 0 {
        assert!(
            inside(i32s.values().inner().as_ptr()),
            "int32 values were copied"
        );
        assert!(
            inside(f64s.values().inner().as_ptr()),
            "float64 values were copied"
        );
    }
    assert!(inside(strs.values().as_ptr()), "string bytes were copied");
    // Rows 2 and 3 of the file: the slice starts inside the column, not at its first row.
    assert_eq!(i32s.iter().collect::<Vec<_>>(), vec![None, Some(-395734)]);
}

#[test]
fn in_memory_and_copied_reads_match_the_mapped_read() {
    for name in [
        "all_types.jay",
        "arrays.jay",
        "strings.jay",
        "wide_1000.jay",
    ] {
        let path = data("jay").join(name);
        let (_, mapped) = read_all(&path, 3);
        let bytes = std::fs::read(&path).unwrap();
        let in_memory: Vec<_> = ReaderBuilder::new()
            .with_batch_size(3)
            .build_from_bytes(bytes)
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        let copied: Vec<_> = ReaderBuilder::new()
            .with_batch_size(3)
            .with_copy(true)
            .build(&path)
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(mapped, in_memory, "{name}");
        assert_eq!(mapped, copied, "{name}");
    }
}

#[test]
fn truncated_and_bit_flipped_files_never_panic() {
    // Every prefix and many single-byte corruptions of real files must give Ok or an error.
    for name in [
        "tiny.jay",
        "arrays.jay",
        "all_types_stats.jay",
        "oldstyle_rbound.jay",
    ] {
        let bytes = std::fs::read(data("jay").join(name)).unwrap();
        let step = (bytes.len() / 300).max(1);
        for cut in (0..bytes.len()).step_by(step) {
            let _ = ReaderBuilder::new()
                .build_from_bytes(bytes[..cut].to_vec())
                .map(|r| r.count());
        }
        for at in (0..bytes.len()).step_by(step) {
            for flip in [0x01u8, 0x80, 0xFF] {
                let mut damaged = bytes.clone();
                damaged[at] ^= flip;
                if let Ok(reader) = ReaderBuilder::new()
                    .with_batch_size(2)
                    .build_from_bytes(damaged)
                {
                    for batch in reader {
                        if batch.is_err() {
                            break;
                        }
                    }
                }
            }
        }
    }
}

#[test]
fn rows_without_data_count_against_the_dataless_cap() {
    // arr_void.jay: a list<null> column, rows [null], [], null, [null, null]; its void child
    // holds its 3 elements in no bytes. void_only.jay: 3 rows of two void columns.
    let arrays = data("jay").join("arr_void.jay");
    let read = |path: &Path, cap: u64| {
        ReaderBuilder::new()
            .with_max_dataless_rows(cap)
            .build(path)
            .map(|r| r.map(|b| b.unwrap().num_rows()).sum::<usize>())
    };
    assert_eq!(read(&arrays, 3).unwrap(), 4);
    let error = read(&arrays, 2).unwrap_err();
    assert_eq!(error.class(), arrowsmith::ErrorClass::BadMeta, "{error}");
    let text = error.to_string();
    assert!(
        text.contains("arr_void.jay")
            && text.contains("column 0 \"l\"")
            && text.contains("3 elements"),
        "{text}"
    );
    let void = data("jay").join("void_only.jay");
    assert_eq!(read(&void, 3).unwrap(), 3);
    let error = read(&void, 2).unwrap_err();
    assert!(error.to_string().contains("claims 3 rows"), "{error}");
    // A limit reads fewer rows, within the cap.
    let limited = ReaderBuilder::new()
        .with_max_dataless_rows(2)
        .with_limit(2)
        .build(&void)
        .unwrap();
    assert_eq!(limited.map(|b| b.unwrap().num_rows()).sum::<usize>(), 2);
    // The rows of a frame with a column of data are backed by its bytes: no cap applies.
    let tiny = data("jay").join("tiny.jay");
    assert_eq!(read(&tiny, 0).unwrap(), 3);
}
