//! The writers: an arbitrary batch (up to four columns of Int32, Int64, Float64, Utf8 and
//! Boolean, with nulls) is written by every writer and read back. Each write either fails
//! cleanly, leaving nothing at the target path, or gives back the same values, up to what the
//! format documents it changes (normalised below).
#![no_main]

use std::sync::Arc;

use arbitrary::Arbitrary;
use arrow::compute::cast;
use arrow_array::{
    Array, ArrayRef, BooleanArray, Float64Array, Int32Array, Int64Array, RecordBatch, StringArray,
};
use arrow_schema::{DataType, Field, Schema};
use arrowsmith::{Format, ReadOptions, WriteOptions};
use arrowsmith_fuzz::check_batch;
use libfuzzer_sys::fuzz_target;

#[derive(Arbitrary, Debug)]
enum Column {
    Int32(Vec<Option<i32>>),
    Int64(Vec<Option<i64>>),
    Float64(Vec<Option<f64>>),
    Utf8(Vec<Option<String>>),
    Boolean(Vec<Option<bool>>),
}

#[derive(Arbitrary, Debug)]
struct Input {
    rows: u8,
    columns: Vec<Column>,
}

fn padded<T: Clone>(values: &[Option<T>], rows: usize) -> Vec<Option<T>> {
    (0..rows)
        .map(|i| values.get(i).cloned().flatten())
        .collect()
}

fn array(column: &Column, rows: usize) -> ArrayRef {
    match column {
        Column::Int32(v) => Arc::new(Int32Array::from(padded(v, rows))),
        Column::Int64(v) => Arc::new(Int64Array::from(padded(v, rows))),
        Column::Float64(v) => Arc::new(Float64Array::from(padded(v, rows))),
        Column::Utf8(v) => Arc::new(StringArray::from(padded(v, rows))),
        Column::Boolean(v) => Arc::new(BooleanArray::from(padded(v, rows))),
    }
}

const FORMATS: [(Format, &str); 7] = [
    (Format::Jay, "out.jay"),
    (Format::DataSeries, "out.ds"),
    (Format::Filo, "out.filo"),
    (Format::Bcolz, "out.bcolz"),
    (Format::Parquet, "out.parquet"),
    (Format::Arrow, "out.arrow"),
    (Format::ArrowStream, "out.arrows"),
];

fuzz_target!(|input: Input| {
    let rows = input.rows as usize % 40;
    let columns: Vec<ArrayRef> = input
        .columns
        .iter()
        .take(4)
        .map(|c| array(c, rows))
        .collect();
    if columns.is_empty() {
        return;
    }
    let fields: Vec<Field> = columns
        .iter()
        .enumerate()
        .map(|(i, c)| Field::new(format!("c{i}"), c.data_type().clone(), true))
        .collect();
    let batch = RecordBatch::try_new(Arc::new(Schema::new(fields)), columns).unwrap();
    let dir = tempfile::tempdir().expect("a temporary directory");
    for (format, name) in FORMATS {
        let path = dir.path().join(name);
        let options = WriteOptions {
            format: Some(format),
            ..Default::default()
        };
        let written = arrowsmith::create(&path, batch.schema(), &options).and_then(|mut w| {
            w.write(&batch)?;
            w.finish()
        });
        if written.is_err() {
            assert!(
                !path.exists(),
                "{format:?}: a failed write left {path:?} behind"
            );
            continue;
        }
        let reader = arrowsmith::open(&path, &ReadOptions::for_format(format))
            .unwrap_or_else(|e| panic!("{format:?}: what was written does not open: {e}"));
        let schema = reader.schema();
        let batches: Vec<RecordBatch> = reader
            .collect::<Result<_, _>>()
            .unwrap_or_else(|e| panic!("{format:?}: what was written does not read: {e}"));
        let back = arrow::compute::concat_batches(&schema, &batches).unwrap();
        check_batch(&back);
        assert_eq!(back.num_rows(), rows, "{format:?}: rows");
        assert_eq!(
            back.num_columns(),
            batch.num_columns(),
            "{format:?}: columns"
        );
        for (i, original) in batch.columns().iter().enumerate() {
            let got = cast(back.column(i), original.data_type())
                .unwrap_or_else(|e| panic!("{format:?}: column {i} does not cast back: {e}"));
            let want = normalised(format, original);
            assert_eq!(
                got.to_data(),
                want.to_data(),
                "{format:?}: column {i} changed\n{batch:?}"
            );
        }
    }
});

/// What each format documents that it changes: Jay has no NaN that is not NA (docs/jay.md).
fn normalised(format: Format, array: &ArrayRef) -> ArrayRef {
    match (format, array.data_type()) {
        (Format::Jay, DataType::Float64) => {
            let values = array.as_any().downcast_ref::<Float64Array>().unwrap();
            Arc::new(
                values
                    .iter()
                    .map(|v| v.filter(|v| !v.is_nan()))
                    .collect::<Float64Array>(),
            )
        }
        _ => array.clone(),
    }
}
