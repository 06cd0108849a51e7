//! Arrow → bcolz → Arrow over every mappable type and sizes around chunk boundaries; the
//! fixtures bcolz → Arrow → bcolz → Arrow; nulls, widths, layout and atomicity rules.

mod common;

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::*;
use arrow_array::*;
use arrow_schema::{DataType, Field, Schema, SchemaRef, TimeUnit};
use arrowsmith::bcolz::{
    blosc::{Codec, Shuffle},
    Kind, NullPolicy, ReaderBuilder, Writer, WriterOptions,
};
use arrowsmith::Error;
use common::data;
use proptest::prelude::*;

fn read(path: &Path) -> (SchemaRef, Vec<RecordBatch>) {
    let reader = ReaderBuilder::new()
        .with_batch_size(1000)
        .build(path)
        .unwrap();
    let schema = RecordBatchReader::schema(&reader);
    (schema, reader.map(Result::unwrap).collect())
}

fn read_one(path: &Path) -> RecordBatch {
    let (schema, batches) = read(path);
    arrow::compute::concat_batches(&schema, &batches).unwrap()
}

fn write(path: &Path, batch: &RecordBatch, options: WriterOptions, split: usize) {
    let mut w = Writer::try_new(path, batch.schema(), options).unwrap();
    let mut start = 0;
    while start < batch.num_rows() {
        let len = split.min(batch.num_rows() - start);
        w.write(&batch.slice(start, len)).unwrap();
        start += len;
    }
    let summary = w.finish().unwrap();
    assert_eq!(summary.rows as usize, batch.num_rows());
}

fn tensor_field(name: &str, child: DataType, dims: &[usize]) -> Field {
    let k: usize = dims.iter().product();
    let dims: Vec<String> = dims.iter().map(|d| d.to_string()).collect();
    Field::new(
        name,
        DataType::FixedSizeList(Arc::new(Field::new("item", child, true)), k as i32),
        false,
    )
    .with_metadata(HashMap::from([
        (
            "ARROW:extension:name".to_owned(),
            "arrow.fixed_shape_tensor".to_owned(),
        ),
        (
            "ARROW:extension:metadata".to_owned(),
            format!("{{\"shape\":[{}]}}", dims.join(",")),
        ),
    ]))
}

/// A table of `n` rows with one column of every mappable type.
fn every_type(n: usize) -> RecordBatch {
    let words = ["", "a", "héllo", "漢字😀", "x\u{0}y", "long string value"];
    let fields = vec![
        Field::new("i8", DataType::Int8, false),
        Field::new("i16", DataType::Int16, false),
        Field::new("i32", DataType::Int32, false),
        Field::new("i64", DataType::Int64, false),
        Field::new("u8", DataType::UInt8, false),
        Field::new("u16", DataType::UInt16, false),
        Field::new("u32", DataType::UInt32, false),
        Field::new("u64", DataType::UInt64, false),
        Field::new("f16", DataType::Float16, false),
        Field::new("f32", DataType::Float32, false),
        Field::new("f64", DataType::Float64, false),
        Field::new("flag", DataType::Boolean, false),
        Field::new("text", DataType::Utf8, false),
        Field::new("blob", DataType::Binary, false),
        Field::new(
            "ts",
            DataType::Timestamp(TimeUnit::Nanosecond, Some("UTC".into())),
            true,
        ),
        Field::new("ts_s", DataType::Timestamp(TimeUnit::Second, None), true),
        Field::new("day", DataType::Date32, true),
        Field::new("dur", DataType::Duration(TimeUnit::Microsecond), true),
        tensor_field("vec3", DataType::Float64, &[3]),
        tensor_field("mat", DataType::Int16, &[2, 3]),
    ];
    let i = |k: usize| (k as i64).wrapping_mul(2_654_435_761) ^ (k as i64 >> 3);
    let columns: Vec<ArrayRef> = vec![
        Arc::new(Int8Array::from_iter_values((0..n).map(|k| i(k) as i8))),
        Arc::new(Int16Array::from_iter_values((0..n).map(|k| i(k) as i16))),
        Arc::new(Int32Array::from_iter_values((0..n).map(|k| i(k) as i32))),
        Arc::new(Int64Array::from_iter_values((0..n).map(i))),
        Arc::new(UInt8Array::from_iter_values((0..n).map(|k| i(k) as u8))),
        Arc::new(UInt16Array::from_iter_values((0..n).map(|k| i(k) as u16))),
        Arc::new(UInt32Array::from_iter_values((0..n).map(|k| i(k) as u32))),
        Arc::new(UInt64Array::from_iter_values((0..n).map(|k| i(k) as u64))),
        Arc::new(Float16Array::from_iter_values(
            (0..n).map(|k| half::f16::from_bits(i(k) as u16)),
        )),
        Arc::new(Float32Array::from_iter_values(
            (0..n).map(|k| f32::from_bits(i(k) as u32)),
        )),
        Arc::new(Float64Array::from_iter_values(
            (0..n).map(|k| f64::from_bits(i(k) as u64)),
        )),
        Arc::new(BooleanArray::from_iter((0..n).map(|k| Some(i(k) % 3 == 0)))),
        Arc::new(StringArray::from_iter_values(
            (0..n).map(|k| format!("{}{}", words[k % 6], k % 7)),
        )),
        Arc::new(BinaryArray::from_iter_values(
            (0..n).map(|k| [0u8, (k % 251) as u8, 7].repeat(k % 4)),
        )),
        Arc::new(TimestampNanosecondArray::from_iter_values((0..n).map(i)).with_timezone("UTC")),
        Arc::new(TimestampSecondArray::from_iter_values(
            (0..n).map(|k| i(k) >> 20),
        )),
        Arc::new(Date32Array::from_iter_values(
            (0..n).map(|k| i(k) as i32 >> 8),
        )),
        Arc::new(DurationMicrosecondArray::from_iter_values(
            (0..n).map(|k| i(k) >> 1),
        )),
        Arc::new(FixedSizeListArray::new(
            Arc::new(Field::new("item", DataType::Float64, true)),
            3,
            Arc::new(Float64Array::from_iter_values(
                (0..3 * n).map(|k| k as f64 * 0.5),
            )),
            None,
        )),
        Arc::new(FixedSizeListArray::new(
            Arc::new(Field::new("item", DataType::Int16, true)),
            6,
            Arc::new(Int16Array::from_iter_values((0..6 * n).map(|k| k as i16))),
            None,
        )),
    ];
    RecordBatch::try_new(Arc::new(Schema::new(fields)), columns).unwrap()
}

/// Arrow data equal as values (floats bit for bit), ignoring field metadata and nullability.
fn assert_same(got: &RecordBatch, want: &RecordBatch, what: &str) {
    assert_eq!(got.num_rows(), want.num_rows(), "{what}");
    assert_eq!(got.num_columns(), want.num_columns(), "{what}");
    for c in 0..want.num_columns() {
        let name = want.schema().field(c).name().clone();
        assert_eq!(got.schema().field(c).name(), &name, "{what}");
        let g = got.column(c).to_data();
        let w = want.column(c).to_data();
        assert_eq!(g.data_type(), w.data_type(), "{what}.{name}");
        assert_eq!(g, w, "{what}.{name}");
    }
}

fn tmp() -> tempfile::TempDir {
    tempfile::tempdir().unwrap()
}

#[test]
fn every_type_across_chunk_boundaries() {
    let chunklen = 16u64;
    for n in [0usize, 1, 15, 16, 17, 16 * 5 + 3] {
        let batch = every_type(n);
        for split in [1000, 7] {
            let dir = tmp();
            let path = dir.path().join("t.bcolz");
            write(
                &path,
                &batch,
                WriterOptions::default().with_chunklen(chunklen),
                split,
            );
            let back = read_one(&path);
            assert_same(&back, &batch, &format!("n={n} split={split}"));
            // Only the chunk files that are needed, each holding at most chunklen rows.
            let files = std::fs::read_dir(path.join("i64/data")).unwrap().count();
            assert_eq!(files as u64, (n as u64).div_ceil(chunklen), "n={n}");
            assert_eq!(
                back.schema().field(14).data_type(),
                &DataType::Timestamp(TimeUnit::Nanosecond, Some("UTC".into()))
            );
        }
    }
}

#[test]
fn default_chunklen_codecs_and_shuffles() {
    let batch = every_type(3000);
    for codec in [
        Codec::BloscLz,
        Codec::Lz4,
        Codec::Lz4hc,
        Codec::Zlib,
        Codec::Zstd,
    ] {
        for shuffle in [Shuffle::None, Shuffle::Byte, Shuffle::Bit] {
            let dir = tmp();
            let path = dir.path().join("t.bcolz");
            let options = WriterOptions::default()
                .with_codec(codec)
                .with_shuffle(shuffle)
                .with_clevel(if codec == Codec::Zstd { 1 } else { 5 })
                .with_chunklen(1024);
            write(&path, &batch, options, 999);
            assert_same(&read_one(&path), &batch, &format!("{codec:?} {shuffle:?}"));
            let storage = std::fs::read_to_string(path.join("f64/meta/storage")).unwrap();
            assert!(
                storage.contains(&format!("\"cname\": \"{}\"", codec.name())),
                "{storage}"
            );
        }
    }
    // bcolz's own chunklen choice from the row count: 3000 int64 rows → 16384.
    let dir = tmp();
    let path = dir.path().join("t.bcolz");
    write(
        &path,
        &batch,
        WriterOptions::default().with_expected_len(3000),
        3000,
    );
    let storage = std::fs::read_to_string(path.join("i64/meta/storage")).unwrap();
    assert_eq!(
        storage,
        "{\"dtype\": \"int64\", \"cparams\": {\"clevel\": 5, \"shuffle\": 1, \"cname\": \"lz4\", \"quantize\": 0}, \"chunklen\": 16384, \"expectedlen\": 3000, \"dflt\": 0}\n"
    );
    let sizes = std::fs::read_to_string(path.join("vec3/meta/sizes")).unwrap();
    assert!(
        sizes.starts_with("{\"shape\": [3000, 3], \"nbytes\": 72000, \"cbytes\": "),
        "{sizes}"
    );
    assert_eq!(
        std::fs::read_to_string(path.join("__rootdirs__")).unwrap(),
        "{\"names\": [\"i8\", \"i16\", \"i32\", \"i64\", \"u8\", \"u16\", \"u32\", \"u64\", \"f16\", \"f32\", \"f64\", \"flag\", \"text\", \"blob\", \"ts\", \"ts_s\", \"day\", \"dur\", \"vec3\", \"mat\"]}\n"
    );
    assert_eq!(
        std::fs::read_to_string(path.join("ts/__attrs__")).unwrap(),
        "{\"timezone\": \"UTC\"}\n"
    );
}

#[test]
fn string_widths_grow_and_earlier_chunks_are_reencoded() {
    let values: Vec<String> = (0..100).map(|k| "é".repeat(1 + k / 10)).collect();
    let schema = Arc::new(Schema::new(vec![
        Field::new("s", DataType::Utf8, false),
        Field::new("b", DataType::Binary, false),
    ]));
    let batch = RecordBatch::try_new(
        schema,
        vec![
            Arc::new(StringArray::from_iter_values(values.iter())),
            Arc::new(BinaryArray::from_iter_values(
                values.iter().map(|v| v.as_bytes()),
            )),
        ],
    )
    .unwrap();
    let dir = tmp();
    let path = dir.path().join("t.bcolz");
    write(&path, &batch, WriterOptions::default().with_chunklen(8), 5);
    assert_same(&read_one(&path), &batch, "widths");
    let storage = std::fs::read_to_string(path.join("s/meta/storage")).unwrap();
    assert!(storage.contains("\"dtype\": \"<U10\""), "{storage}");
    let storage = std::fs::read_to_string(path.join("b/meta/storage")).unwrap();
    assert!(storage.contains("\"dtype\": \"|S20\""), "{storage}");
    // A fixed width is kept, and a longer value is an error naming column and row.
    let dir = tmp();
    let path = dir.path().join("w.bcolz");
    let mut w = Writer::try_new(
        &path,
        batch.schema(),
        WriterOptions::default().with_width("s", 3),
    )
    .unwrap();
    let err = w.write(&batch).unwrap_err();
    assert!(
        err.to_string().contains("\"s\"") && err.row() == Some(30),
        "{err}"
    );
    drop(w);
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        0,
        "nothing left behind"
    );
}

#[test]
fn nulls_are_rejected_or_written_as_nan_and_nat() {
    let schema = Arc::new(Schema::new(vec![
        Field::new("x", DataType::Float64, true),
        Field::new("t", DataType::Timestamp(TimeUnit::Millisecond, None), true),
        Field::new("d", DataType::Date32, true),
    ]));
    let batch = RecordBatch::try_new(
        schema.clone(),
        vec![
            Arc::new(Float64Array::from(vec![
                Some(1.0),
                None,
                Some(3.0),
                Some(4.0),
            ])),
            Arc::new(TimestampMillisecondArray::from(vec![
                Some(1),
                Some(2),
                None,
                Some(4),
            ])),
            Arc::new(Date32Array::from(vec![Some(1), Some(2), Some(3), None])),
        ],
    )
    .unwrap();
    let dir = tmp();
    let path = dir.path().join("n.bcolz");
    let mut w = Writer::try_new(&path, schema.clone(), WriterOptions::default()).unwrap();
    w.write(&batch.slice(0, 1)).unwrap();
    let err = w.write(&batch.slice(1, 3)).unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("column 0 \"x\"") && text.contains("row 1") && text.contains("null"),
        "{text}"
    );
    drop(w);
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);

    write(
        &path,
        &batch,
        WriterOptions::default().with_null_policy(NullPolicy::Sentinel),
        2,
    );
    let back = read_one(&path);
    let x = back.column(0).as_primitive::<Float64Type>();
    assert!(x.value(1).is_nan() && x.is_valid(1));
    assert_eq!(x.value(1).to_bits(), 0x7FF8_0000_0000_0000);
    assert!(back.column(1).is_null(2) && back.column(2).is_null(3));
    assert_eq!(back.column(1).null_count(), 1);

    // Other types have no sentinel: still an error.
    let ints = Arc::new(Schema::new(vec![Field::new("i", DataType::Int32, true)]));
    let b = RecordBatch::try_new(
        ints.clone(),
        vec![Arc::new(Int32Array::from(vec![Some(1), None]))],
    )
    .unwrap();
    let mut w = Writer::try_new(
        dir.path().join("i.bcolz"),
        ints,
        WriterOptions::default().with_null_policy(NullPolicy::Sentinel),
    )
    .unwrap();
    assert!(w.write(&b).unwrap_err().to_string().contains("row 1"));
}

#[test]
fn layout_names_and_unsupported_types() {
    let dir = tmp();
    // A carray: the directory is the name.
    let schema = Arc::new(Schema::new(vec![Field::new("v", DataType::UInt16, false)]));
    let batch = RecordBatch::try_new(
        schema.clone(),
        vec![Arc::new(UInt16Array::from(vec![1, 2, 3]))],
    )
    .unwrap();
    let path = dir.path().join("vals");
    write(
        &path,
        &batch,
        WriterOptions::default().with_kind(Kind::Carray),
        10,
    );
    assert!(path.join("meta/sizes").is_file() && path.join("__attrs__").is_file());
    let (s, _) = read(&path);
    assert_eq!(s.field(0).name(), "vals");
    assert_eq!(s.metadata()["bcolz.kind"], "carray");
    // Bad names, empty schema, unsupported types, an existing target.
    for (name, dt) in [
        ("../x", DataType::Int8),
        ("__attrs__", DataType::Int8),
        ("ok", DataType::Decimal128(10, 2)),
        (
            "ok",
            DataType::List(Arc::new(Field::new("item", DataType::Int8, true))),
        ),
    ] {
        let s = Arc::new(Schema::new(vec![Field::new(name, dt, false)]));
        assert!(
            Writer::try_new(dir.path().join("bad.bcolz"), s, WriterOptions::default()).is_err(),
            "{name}"
        );
    }
    let dup = Arc::new(Schema::new(vec![
        Field::new("A", DataType::Int8, false),
        Field::new("a", DataType::Int8, false),
    ]));
    assert!(Writer::try_new(dir.path().join("bad.bcolz"), dup, WriterOptions::default()).is_err());
    assert!(Writer::try_new(
        dir.path().join("bad.bcolz"),
        Arc::new(Schema::empty()),
        WriterOptions::default()
    )
    .is_err());
    assert!(Writer::try_new(&path, schema.clone(), WriterOptions::default()).is_err());
    write(
        &path,
        &batch,
        WriterOptions::default().with_overwrite(true),
        10,
    );
    assert!(path.join("__rootdirs__").is_file());
    let names: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names.len(), 1, "{names:?}");
}

#[test]
fn fixtures_round_trip_through_our_writer() {
    for entry in std::fs::read_dir(data("bcolz/datasets")).unwrap() {
        let src = entry.unwrap().path();
        let name = src.file_name().unwrap().to_str().unwrap().to_owned();
        let Ok(reader) = ReaderBuilder::new().with_batch_size(777).build(&src) else {
            continue;
        };
        let schema = RecordBatchReader::schema(&reader);
        let Ok(batches) = reader.collect::<Result<Vec<_>, _>>() else {
            continue;
        };
        let original = arrow::compute::concat_batches(&schema, &batches).unwrap();
        let dir = tmp();
        let dst = dir.path().join(&name);
        let options = WriterOptions::default().with_null_policy(NullPolicy::Sentinel);
        let mut w = Writer::try_new(&dst, schema.clone(), options).unwrap();
        for b in &batches {
            w.write(b).unwrap();
        }
        w.finish().unwrap();
        let (schema2, batches2) = read(&dst);
        let back = arrow::compute::concat_batches(&schema2, &batches2).unwrap();
        assert_same(&back, &original, &name);
        assert_eq!(schema2.metadata(), schema.metadata(), "{name}");
        for (f, g) in schema.fields().iter().zip(schema2.fields()) {
            let mut want: HashMap<String, String> = f
                .metadata()
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            // Explicit big-endian dtypes come back native.
            if let Some(d) = want.get_mut("bcolz.dtype") {
                if d == ">i4" {
                    *d = "int32".to_owned();
                }
            }
            let got: HashMap<String, String> = g
                .metadata()
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            assert_eq!(got, want, "{name}.{}", f.name());
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, .. ProptestConfig::default() })]
    #[test]
    fn random_tables_round_trip(
        rows in prop::collection::vec((any::<i64>(), any::<f64>(), "\\PC{0,6}", prop::collection::vec(any::<u8>(), 0..5)), 0..150),
        chunklen in 1u64..40,
        split in 1usize..60,
    ) {
        let schema = Arc::new(Schema::new(vec![
            Field::new("i", DataType::Int64, false),
            Field::new("f", DataType::Float64, false),
            Field::new("s", DataType::Utf8, false),
            Field::new("b", DataType::Binary, false),
        ]));
        // Trailing NULs are not kept by bcolz (numpy semantics): strip them from the input.
        let strip = |v: &[u8]| v[..v.iter().rposition(|&b| b != 0).map_or(0, |p| p + 1)].to_vec();
        let batch = RecordBatch::try_new(schema, vec![
            Arc::new(Int64Array::from_iter_values(rows.iter().map(|r| r.0))),
            Arc::new(Float64Array::from_iter_values(rows.iter().map(|r| r.1))),
            Arc::new(StringArray::from_iter_values(rows.iter().map(|r| r.2.trim_end_matches('\0').to_owned()))),
            Arc::new(BinaryArray::from_iter_values(rows.iter().map(|r| strip(&r.3)))),
        ]).unwrap();
        let dir = tmp();
        let path = dir.path().join("p.bcolz");
        write(&path, &batch, WriterOptions::default().with_chunklen(chunklen), split);
        let back = read_one(&path);
        assert_same(&back, &batch, "proptest");
    }
}

#[test]
fn errors_name_the_file() {
    let err = ReaderBuilder::new()
        .build("/nonexistent/x.bcolz")
        .err()
        .unwrap();
    assert!(Error::to_string(&err).contains("/nonexistent/x.bcolz"));
}

#[test]
fn utf32_surrogates_are_errors_naming_the_row() {
    let dir = tmp();
    let path = dir.path().join("u");
    let schema = Arc::new(Schema::new(vec![Field::new("u", DataType::Utf8, false)]));
    let batch = RecordBatch::try_new(
        schema,
        vec![Arc::new(StringArray::from(vec!["ab", "cd", "ef"]))],
    )
    .unwrap();
    // clevel 0: the chunk is stored memcpyed, so its UTF-32 units sit at file offset 32.
    write(
        &path,
        &batch,
        WriterOptions::default()
            .with_kind(Kind::Carray)
            .with_clevel(0),
        10,
    );
    let chunk = path.join("data/__0.blp");
    let mut bytes = std::fs::read(&chunk).unwrap();
    assert_eq!(&bytes[32..36], &(b'a' as u32).to_le_bytes());
    bytes[32 + 8..32 + 12].copy_from_slice(&0xD800u32.to_le_bytes()); // row 1, first unit
    std::fs::write(&chunk, &bytes).unwrap();
    let err = ReaderBuilder::new()
        .build(&path)
        .unwrap()
        .next()
        .unwrap()
        .unwrap_err();
    let text = err.to_string();
    assert!(text.contains("row 1") && text.contains("0xd800"), "{text}");
}
