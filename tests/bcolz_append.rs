//! Appending in place to datasets bcolz wrote (spec B5): leftover chunks completed, new chunks
//! added, big-endian and string columns kept in their dtype; an append dropped before
//! `finish()` leaves the previous contents readable; mismatched inputs are refused.

mod common;

use std::path::Path;
use std::sync::Arc;

use arrow_array::{RecordBatch, RecordBatchReader, StringArray};
use arrow_schema::{DataType, Field, Schema};
use arrowsmith::bcolz::{Appender, NullPolicy, ReaderBuilder};
use common::{copy_dir, data};

fn read_one(path: &Path) -> RecordBatch {
    let reader = ReaderBuilder::new()
        .with_batch_size(500)
        .build(path)
        .unwrap();
    let schema = reader.schema();
    let batches: Vec<RecordBatch> = reader.map(Result::unwrap).collect();
    arrow::compute::concat_batches(&schema, &batches).unwrap()
}

fn append(path: &Path, batch: &RecordBatch, split: usize) {
    let mut a = Appender::try_new(path, batch.schema(), NullPolicy::Sentinel).unwrap();
    let mut start = 0;
    while start < batch.num_rows() {
        let len = split.min(batch.num_rows() - start);
        a.write(&batch.slice(start, len)).unwrap();
        start += len;
    }
    a.finish().unwrap();
}

#[test]
fn appending_to_datasets_bcolz_wrote() {
    for name in [
        "num_int32",
        "stale_leftover",
        "big_endian_i4",
        "unicode_U5",
        "bytes_S8",
        "twod_f8",
        "datetime64_ns",
        "ctable_zipline_like",
        "ctable_mixed",
        "ctable_altered",
        "empty_i8",
        "single_partial",
        "legacy_meta_v0",
        "cp_zstd_sh1",
    ] {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join(name);
        copy_dir(&data("bcolz/datasets").join(name), &path);
        let before = read_one(&path);
        // Twice, in odd-sized pieces, so that leftovers are completed and chunks added.
        append(&path, &before, 333);
        append(&path, &before.slice(0, before.num_rows().min(10)), 3);
        let after = read_one(&path);
        let expected = arrow::compute::concat_batches(
            &before.schema(),
            &[
                before.clone(),
                before.clone(),
                before.slice(0, before.num_rows().min(10)),
            ],
        )
        .unwrap();
        assert_eq!(after.num_rows(), expected.num_rows(), "{name}");
        for c in 0..expected.num_columns() {
            assert_eq!(
                after.column(c).to_data(),
                expected.column(c).to_data(),
                "{name} column {c}"
            );
        }
        // The dtype and cparams are kept.
        let first = after.schema().field(0).metadata()["bcolz.dtype"].clone();
        assert_eq!(
            first,
            before.schema().field(0).metadata()["bcolz.dtype"],
            "{name}"
        );
    }
}

#[test]
fn an_append_dropped_before_finish_changes_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("t");
    copy_dir(&data("bcolz/datasets").join("ctable_zipline_like"), &path);
    let before = read_one(&path);
    let mut a = Appender::try_new(&path, before.schema(), NullPolicy::Reject).unwrap();
    for _ in 0..20 {
        a.write(&before).unwrap(); // cuts and writes many chunks
    }
    drop(a);
    let after = read_one(&path);
    assert_eq!(after.num_rows(), before.num_rows());
    for c in 0..before.num_columns() {
        assert_eq!(after.column(c).to_data(), before.column(c).to_data());
    }
    // And the next append starts from the committed length.
    append(&path, &before, 1000);
    assert_eq!(read_one(&path).num_rows(), 2 * before.num_rows());
}

#[test]
fn mismatched_inputs_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("u");
    copy_dir(&data("bcolz/datasets").join("unicode_U5"), &path);
    let strings = Arc::new(Schema::new(vec![Field::new("x", DataType::Utf8, false)]));
    let long = RecordBatch::try_new(
        strings.clone(),
        vec![Arc::new(StringArray::from(vec!["ok", "toolong"]))],
    )
    .unwrap();
    let mut a = Appender::try_new(&path, strings, NullPolicy::Reject).unwrap();
    let err = a.write(&long).unwrap_err();
    assert!(
        err.to_string().contains("row 1") && err.to_string().contains("width 5"),
        "{err}"
    );
    drop(a);
    assert_eq!(read_one(&path).num_rows(), 1200);

    let ints = Arc::new(Schema::new(vec![Field::new("x", DataType::Int32, false)]));
    let err = Appender::try_new(&path, ints.clone(), NullPolicy::Reject)
        .err()
        .unwrap();
    assert!(err.to_string().contains("<U5"), "{err}");

    let table = tmp.path().join("t");
    copy_dir(&data("bcolz/datasets").join("ctable_altered"), &table);
    let err = Appender::try_new(&table, ints, NullPolicy::Reject)
        .err()
        .unwrap();
    assert!(err.to_string().contains("\"x\""), "{err}");
    let b = RecordBatch::try_new(
        Arc::new(Schema::new(vec![Field::new("b", DataType::Float64, false)])),
        vec![Arc::new(arrow_array::Float64Array::from(vec![1.0]))],
    )
    .unwrap();
    let err = Appender::try_new(&table, b.schema(), NullPolicy::Reject)
        .err()
        .unwrap();
    assert!(err.to_string().contains("café"), "{err}");
}
