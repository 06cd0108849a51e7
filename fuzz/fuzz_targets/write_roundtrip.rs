//! The writers: an arbitrary batch (up to four columns of Int32, Int64, Float64, Utf8 and
//! Boolean, with nulls) is written by every writer and read back. Each write either fails
//! cleanly, leaving nothing at the target path, or gives back the same values, up to what the
//! format documents it changes (normalised below).
//!
//! VS holds one vector per point and packs the other columns into the point's app data, so its
//! writer gets the same columns next to an arbitrary `vector` column (any element type VS
//! writes, 1 to 4 elements, sometimes with a null element, which VS must refuse), in one of
//! its three compressions; the columns come back as JSON objects in `app_data`.
#![no_main]

use std::path::Path;
use std::sync::Arc;

use arbitrary::Arbitrary;
use arrow::compute::cast;
use arrow_array::cast::AsArray;
use arrow_array::{
    Array, ArrayRef, BooleanArray, FixedSizeListArray, Float32Array, Float64Array, Int16Array,
    Int32Array, Int64Array, Int8Array, RecordBatch, StringArray, UInt16Array, UInt32Array,
    UInt64Array, UInt8Array,
};
use arrow_schema::{DataType, Field, Schema};
use arrowsmith::{vs, Format, ReadOptions, WriteOptions};
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

/// The elements of a VS vector column, one variant per resolution the writer takes.
#[derive(Arbitrary, Debug)]
enum Elements {
    Bool(Vec<bool>),
    UInt8(Vec<u8>),
    Int8(Vec<i8>),
    UInt16(Vec<u16>),
    Int16(Vec<i16>),
    UInt32(Vec<u32>),
    Int32(Vec<i32>),
    UInt64(Vec<u64>),
    Int64(Vec<i64>),
    Float32(Vec<f32>),
    Float64(Vec<f64>),
    Utf8(Vec<String>),
}

#[derive(Arbitrary, Debug)]
struct Vector {
    /// Elements per vector, 1 to 4.
    length: u8,
    elements: Elements,
    /// An element made null, when it is within the column.
    null_element: Option<u8>,
    /// None, gzip or snappy.
    compression: u8,
}

#[derive(Arbitrary, Debug)]
struct Input {
    rows: u8,
    vector: Vector,
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
    let fields: Vec<Field> = columns
        .iter()
        .enumerate()
        .map(|(i, c)| Field::new(format!("c{i}"), c.data_type().clone(), true))
        .collect();
    let dir = tempfile::tempdir().expect("a temporary directory");
    vs_round_trip(&input.vector, &fields, &columns, rows, dir.path());
    if columns.is_empty() {
        return;
    }
    let batch = RecordBatch::try_new(Arc::new(Schema::new(fields)), columns).unwrap();
    for (format, name) in FORMATS {
        let options = WriteOptions {
            format: Some(format),
            ..Default::default()
        };
        let Some(back) = write_and_read(&batch, &dir.path().join(name), &options) else {
            continue;
        };
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

/// Writes `batch` with `options` and reads it back whole, checking every array. `None` when
/// the write failed, which must leave nothing at `path`.
fn write_and_read(batch: &RecordBatch, path: &Path, options: &WriteOptions) -> Option<RecordBatch> {
    let format = options.format.expect("a format");
    let written = arrowsmith::create(path, batch.schema(), options).and_then(|mut w| {
        w.write(batch)?;
        w.finish()
    });
    if written.is_err() {
        assert!(
            !path.exists(),
            "{format:?}: a failed write left {path:?} behind"
        );
        return None;
    }
    let reader = arrowsmith::open(path, &ReadOptions::for_format(format))
        .unwrap_or_else(|e| panic!("{format:?}: what was written does not open: {e}"));
    let schema = reader.schema();
    let batches: Vec<RecordBatch> = reader
        .collect::<Result<_, _>>()
        .unwrap_or_else(|e| panic!("{format:?}: what was written does not read: {e}"));
    let back = arrow::compute::concat_batches(&schema, &batches).unwrap();
    check_batch(&back);
    Some(back)
}

/// The vector column of `rows` vectors: the input's elements, padded with the type's default.
fn vector_column(vector: &Vector, rows: usize) -> (ArrayRef, usize) {
    fn padded<T: Clone + Default>(values: &[T], n: usize) -> Vec<T> {
        (0..n)
            .map(|i| values.get(i).cloned().unwrap_or_default())
            .collect()
    }
    let length = vector.length as usize % 4 + 1;
    let n = rows * length;
    let values: ArrayRef = match &vector.elements {
        Elements::Bool(v) => Arc::new(BooleanArray::from(padded(v, n))),
        Elements::UInt8(v) => Arc::new(UInt8Array::from(padded(v, n))),
        Elements::Int8(v) => Arc::new(Int8Array::from(padded(v, n))),
        Elements::UInt16(v) => Arc::new(UInt16Array::from(padded(v, n))),
        Elements::Int16(v) => Arc::new(Int16Array::from(padded(v, n))),
        Elements::UInt32(v) => Arc::new(UInt32Array::from(padded(v, n))),
        Elements::Int32(v) => Arc::new(Int32Array::from(padded(v, n))),
        Elements::UInt64(v) => Arc::new(UInt64Array::from(padded(v, n))),
        Elements::Int64(v) => Arc::new(Int64Array::from(padded(v, n))),
        Elements::Float32(v) => Arc::new(Float32Array::from(padded(v, n))),
        Elements::Float64(v) => Arc::new(Float64Array::from(padded(v, n))),
        Elements::Utf8(v) => Arc::new(StringArray::from(padded(v, n))),
    };
    let values = match vector.null_element.map(usize::from) {
        Some(null) if null < n => {
            let validity: Vec<bool> = (0..n).map(|i| i != null).collect();
            let data = values
                .to_data()
                .into_builder()
                .nulls(Some(validity.into()))
                .build()
                .unwrap();
            arrow_array::make_array(data)
        }
        _ => values,
    };
    let item = Arc::new(Field::new("item", values.data_type().clone(), true));
    let list = FixedSizeListArray::try_new(item, length as i32, values, None).unwrap();
    (Arc::new(list), length)
}

/// VS: `vector` next to the columns, which come back as each point's app data, a JSON object
/// keyed by column name.
fn vs_round_trip(vector: &Vector, fields: &[Field], columns: &[ArrayRef], rows: usize, dir: &Path) {
    let (vectors, length) = vector_column(vector, rows);
    let mut all_fields = vec![Field::new("vector", vectors.data_type().clone(), true)];
    all_fields.extend(fields.iter().cloned());
    let mut all_columns = vec![vectors.clone()];
    all_columns.extend(columns.iter().cloned());
    let batch = RecordBatch::try_new(Arc::new(Schema::new(all_fields)), all_columns).unwrap();
    let compression = [
        vs::Compression::None,
        vs::Compression::Gzip,
        vs::Compression::Snappy,
    ][vector.compression as usize % 3];
    let options = WriteOptions {
        format: Some(Format::Vs),
        vs: vs::WriterOptions::default().with_compression(compression),
        ..Default::default()
    };
    let has_null = vectors.as_fixed_size_list().values().null_count() > 0;
    let Some(back) = write_and_read(&batch, &dir.join("out.vs"), &options) else {
        return;
    };
    assert!(!has_null, "VS: a null element was written\n{batch:?}");
    assert_eq!(back.num_rows(), rows, "VS: rows");
    let back_vectors = back
        .column_by_name("vector")
        .expect("VS: a vector column")
        .as_fixed_size_list();
    assert_eq!(
        back_vectors.value_length() as usize,
        length,
        "VS: vector length"
    );
    assert_eq!(
        back_vectors.values().to_data(),
        vectors.as_fixed_size_list().values().to_data(),
        "VS: vectors changed\n{batch:?}"
    );
    let app_data = back
        .column_by_name("app_data")
        .expect("VS: an app_data column")
        .as_string::<i32>();
    for row in 0..rows {
        let text = app_data.value(row);
        let object: serde_json::Map<String, serde_json::Value> = serde_json::from_str(text)
            .unwrap_or_else(|e| panic!("VS: app_data {text:?} of row {row}: {e}"));
        assert_eq!(object.len(), columns.len(), "VS: app_data {text:?}");
        for (field, column) in fields.iter().zip(columns) {
            let value = &object[field.name()];
            assert!(
                json_holds(column, row, value),
                "VS: row {row}, {}: {value} for {:?}",
                field.name(),
                column.slice(row, 1)
            );
        }
    }
}

/// Whether `value`, read back from app data, is row `row` of `column`: an integer exactly, a
/// float to the bit (NaN and the infinities become null), a string exactly, a null as null.
fn json_holds(column: &ArrayRef, row: usize, value: &serde_json::Value) -> bool {
    use arrow_array::types::{Float64Type, Int32Type, Int64Type};
    if column.is_null(row) {
        return value.is_null();
    }
    match column.data_type() {
        DataType::Int32 => {
            value.as_i64() == Some(column.as_primitive::<Int32Type>().value(row).into())
        }
        DataType::Int64 => value.as_i64() == Some(column.as_primitive::<Int64Type>().value(row)),
        DataType::Float64 => {
            let want = column.as_primitive::<Float64Type>().value(row);
            if want.is_finite() {
                value.as_f64() == Some(want)
            } else {
                value.is_null()
            }
        }
        DataType::Utf8 => value.as_str() == Some(column.as_string::<i32>().value(row)),
        DataType::Boolean => value.as_bool() == Some(column.as_boolean().value(row)),
        other => panic!("no JSON rule for {other}"),
    }
}

/// What each format documents that it changes: Jay has no NaN that is not NA (docs/jay.md);
/// bcolz strings are NUL-padded, so a value's trailing NULs do not come back (docs/bcolz.md,
/// and the writer warns).
fn normalised(format: Format, array: &ArrayRef) -> ArrayRef {
    match (format, array.data_type()) {
        (Format::Bcolz, DataType::Utf8) => Arc::new(
            array
                .as_string::<i32>()
                .iter()
                .map(|v| v.map(|v| v.trim_end_matches('\0')))
                .collect::<StringArray>(),
        ),
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
