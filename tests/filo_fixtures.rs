//! Every Filo fixture written by filo-scala 0.2.6 against its manifest: header, wire type and
//! every value decoded; then re-encoded from its values with its hint and compared byte for
//! byte (and so by wire type and size).

mod common;

use std::sync::Arc;

use arrow_array::builder::{BooleanBuilder, StringBuilder};
use arrow_array::cast::AsArray;
use arrow_array::types::*;
use arrow_array::{Array, ArrayRef, PrimitiveArray, RecordBatchReader, StructArray};
use arrow_buffer::NullBuffer;
use arrowsmith::filo::{self, mapping, FiloType, Hint};
use arrowsmith::source::{Counting, LocalFile};
use common::data;
use serde_json::Value;

struct Fixture {
    name: String,
    filo_type: FiloType,
    hint: Hint,
    header: u32,
    size: usize,
    values: Vec<Value>,
    bytes: Vec<u8>,
}

fn manifest() -> Vec<Fixture> {
    let text = std::fs::read_to_string(data("filo/vectors").join("manifest.jsonl")).unwrap();
    let all: Vec<Fixture> = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|line| {
            let v: Value = serde_json::from_str(line).unwrap();
            let name = v["name"].as_str().unwrap().to_string();
            let bytes = std::fs::read(data("filo/vectors").join(format!("{name}.bin"))).unwrap();
            Fixture {
                filo_type: v["type"].as_str().unwrap().parse().unwrap(),
                hint: v["hint"].as_str().unwrap().parse().unwrap(),
                header: u32::from_str_radix(&v["header"].as_str().unwrap()[2..], 16).unwrap(),
                size: v["size"].as_u64().unwrap() as usize,
                values: v["values"].as_array().unwrap().clone(),
                bytes,
                name,
            }
        })
        .collect();
    assert_eq!(all.len(), 52, "the manifest lists 52 vectors");
    all
}

fn float_of(v: &Value) -> f64 {
    match v {
        Value::String(s) if s == "NaN" => f64::NAN,
        Value::String(s) if s == "Infinity" => f64::INFINITY,
        Value::String(s) if s == "-Infinity" => f64::NEG_INFINITY,
        other => other.as_f64().unwrap(),
    }
}

/// The Arrow array a correct reader returns for a manifest's values.
fn expected_array(t: FiloType, values: &[Value]) -> ArrayRef {
    match t {
        FiloType::Int => Arc::new(
            values
                .iter()
                .map(|v| v.as_i64().map(|x| x as i32))
                .collect::<PrimitiveArray<Int32Type>>(),
        ),
        FiloType::Long => Arc::new(
            values
                .iter()
                .map(Value::as_i64)
                .collect::<PrimitiveArray<Int64Type>>(),
        ),
        FiloType::Timestamp => Arc::new(
            values
                .iter()
                .map(Value::as_i64)
                .collect::<PrimitiveArray<TimestampMillisecondType>>()
                .with_timezone("UTC"),
        ),
        FiloType::Double => Arc::new(
            values
                .iter()
                .map(|v| (!v.is_null()).then(|| float_of(v)))
                .collect::<PrimitiveArray<Float64Type>>(),
        ),
        FiloType::Float => Arc::new(
            values
                .iter()
                .map(|v| (!v.is_null()).then(|| float_of(v) as f32))
                .collect::<PrimitiveArray<Float32Type>>(),
        ),
        FiloType::Boolean => {
            let mut b = BooleanBuilder::new();
            values.iter().for_each(|v| b.append_option(v.as_bool()));
            Arc::new(b.finish())
        }
        FiloType::String | FiloType::Binary => {
            let mut b = StringBuilder::new();
            values.iter().for_each(|v| b.append_option(v.as_str()));
            Arc::new(b.finish())
        }
        FiloType::DateTime => {
            let millis: Vec<i64> = values
                .iter()
                .map(|v| v["millis"].as_i64().unwrap_or(0))
                .collect();
            let qh: Vec<i8> = values
                .iter()
                .map(|v| v["tz_offset_quarter_hours"].as_i64().unwrap_or(0) as i8)
                .collect();
            let nulls = NullBuffer::from(values.iter().map(|v| !v.is_null()).collect::<Vec<_>>());
            Arc::new(
                StructArray::try_new(
                    mapping::datetime_fields(),
                    vec![
                        Arc::new(
                            PrimitiveArray::<TimestampMillisecondType>::from(millis)
                                .with_timezone("UTC"),
                        ),
                        Arc::new(PrimitiveArray::<Int8Type>::from(qh)),
                    ],
                    Some(nulls),
                )
                .unwrap(),
            )
        }
    }
}

/// Compares element by element: NA positions, then values (floats by bits), never what sits
/// under an NA.
fn assert_same_values(name: &str, got: &ArrayRef, want: &ArrayRef) {
    assert_eq!(got.data_type(), want.data_type(), "{name}: type");
    assert_eq!(got.len(), want.len(), "{name}: length");
    for i in 0..want.len() {
        assert_eq!(got.is_null(i), want.is_null(i), "{name}: NA at {i}");
        if want.is_null(i) {
            continue;
        }
        let same = match want.data_type() {
            arrow_schema::DataType::Float64 => {
                got.as_primitive::<Float64Type>().value(i).to_bits()
                    == want.as_primitive::<Float64Type>().value(i).to_bits()
            }
            arrow_schema::DataType::Float32 => {
                got.as_primitive::<Float32Type>().value(i).to_bits()
                    == want.as_primitive::<Float32Type>().value(i).to_bits()
            }
            _ => got.slice(i, 1).to_data() == want.slice(i, 1).to_data(),
        };
        assert!(same, "{name}: value at {i}: got {got:?}, want {want:?}");
    }
    assert_eq!(got.null_count(), want.null_count(), "{name}: NA count");
    if want.null_count() == 0 {
        assert!(got.nulls().is_none(), "{name}: no NA, so no null buffer");
    }
}

#[test]
fn every_fixture_decodes_to_its_manifest_values() {
    for f in manifest() {
        assert_eq!(f.bytes.len(), f.size, "{}: size", f.name);
        let info = filo::inspect(&f.bytes).unwrap_or_else(|e| panic!("{}: {e}", f.name));
        assert_eq!(info.header, f.header, "{}: header", f.name);
        assert_eq!(info.len, f.values.len(), "{}: len", f.name);
        assert_eq!(info.byte_size, f.size);
        let got = filo::decode(&f.bytes, &f.filo_type.arrow_type())
            .unwrap_or_else(|e| panic!("{}: {e}", f.name));
        let want = expected_array(f.filo_type, &f.values);
        assert_same_values(&f.name, &got, &want);
    }
}

#[test]
fn every_fixture_reencodes_byte_for_byte() {
    for f in manifest() {
        let input = expected_array(f.filo_type, &f.values);
        let options = filo::EncodeOptions::default().with_hint(f.hint);
        // double_zero_signs_const's values are two -0.0 (filo's Const of [0.0, -0.0]), which
        // arrowsmith also encodes as Const, so it is reproduced from its values too.
        let bytes = filo::encode(&input, f.filo_type, &options)
            .unwrap_or_else(|e| panic!("{}: {e}", f.name));
        assert_eq!(
            filo::WireType::from_header(filo::header(&bytes).unwrap()).unwrap(),
            filo::WireType::from_header(f.header).unwrap(),
            "{}: wire type",
            f.name
        );
        assert_eq!(bytes.len(), f.size, "{}: size", f.name);
        assert_eq!(bytes, f.bytes, "{}: bytes", f.name);
        let back = filo::decode(&bytes, &f.filo_type.arrow_type()).unwrap();
        assert_same_values(&f.name, &back, &input);
    }
}

#[test]
fn zero_signs_stay_when_encoded_from_the_input() {
    // filo's Const −0.0 for [0.0, −0.0] is the one place arrowsmith deviates (spec 12.2).
    let input: ArrayRef = Arc::new(PrimitiveArray::<Float64Type>::from(vec![0.0, -0.0]));
    let bytes = filo::encode(&input, FiloType::Double, &Default::default()).unwrap();
    assert_eq!(
        filo::inspect(&bytes).unwrap().wire_type,
        filo::WireType::SimplePrimitive
    );
    let back = filo::decode(&bytes, &arrow_schema::DataType::Float64).unwrap();
    let back = back.as_primitive::<Float64Type>();
    assert_eq!(back.value(0).to_bits(), 0.0f64.to_bits());
    assert_eq!(back.value(1).to_bits(), (-0.0f64).to_bits());
}

#[test]
fn datetime_reads_as_plain_timestamps_when_asked() {
    let bytes = std::fs::read(data("filo/vectors").join("datetime_mixed_tz.bin")).unwrap();
    let t = arrow_schema::DataType::Timestamp(arrow_schema::TimeUnit::Millisecond, None);
    let got = filo::decode(&bytes, &t).unwrap();
    let got = got.as_primitive::<TimestampMillisecondType>();
    assert_eq!(got.value(0), 1326339900000);
    assert_eq!(got.value(3), 1326339890000);
}

#[test]
fn type_mismatch_is_an_error() {
    let bytes = std::fs::read(data("filo/vectors").join("string_dict.bin")).unwrap();
    let e = filo::decode(&bytes, &arrow_schema::DataType::Int32).unwrap_err();
    assert!(e.to_string().contains("DictStringVector"), "{e}");
    let bytes = std::fs::read(data("filo/vectors").join("int_diff_u8.bin")).unwrap();
    let e = filo::decode(&bytes, &arrow_schema::DataType::Float64).unwrap_err();
    assert!(e.to_string().contains("DiffPrimitiveVector"), "{e}");
}

/// The one column of a bare-vector reader's batches (at least one), concatenated.
fn vector_column(reader: filo::VectorReader, batch_size: usize) -> ArrayRef {
    let batches: Vec<_> = reader.collect::<Result<_, _>>().unwrap();
    for b in &batches {
        assert!(b.num_rows() <= batch_size && b.num_rows() > 0);
        assert_eq!(b.schema().field(0).name(), filo::VECTOR_COLUMN);
    }
    let columns: Vec<&dyn Array> = batches.iter().map(|b| b.column(0).as_ref()).collect();
    arrow::compute::concat(&columns).unwrap()
}

#[test]
fn every_fixture_reads_through_the_vector_reader_builder() {
    for f in manifest() {
        let path = data("filo/vectors").join(format!("{}.bin", f.name));
        let want = expected_array(f.filo_type, &f.values);
        let builder = filo::VectorReaderBuilder::new()
            .with_filo_type(f.filo_type)
            .with_batch_size(2);
        let reader = builder.clone().build(&path).unwrap();
        assert_eq!(reader.schema().field(0).data_type(), want.data_type());
        if want.is_empty() {
            assert_eq!(reader.count(), 0, "{}", f.name);
            continue;
        }
        let got = vector_column(reader, 2);
        assert_same_values(&f.name, &got, &want);
        let from_bytes = builder.clone().build_from_bytes(f.bytes.clone()).unwrap();
        assert_same_values(&f.name, &vector_column(from_bytes, 2), &want);
        // Through a byte source (as from object storage): one request for the whole vector.
        let source = Counting::new(LocalFile::open(&path).unwrap());
        let counts = source.counts();
        let from_source = builder.open_source(Arc::new(source)).unwrap();
        assert_same_values(&f.name, &vector_column(from_source, 2), &want);
        assert_eq!(counts.round_trips(), 1, "{}", f.name);
        assert_eq!(counts.bytes(), f.bytes.len() as u64, "{}", f.name);
        // The limit cuts; the scan options are the same as every other reader's.
        let scan = arrowsmith::ScanOptions {
            limit: Some(3),
            ..Default::default()
        };
        let limited = filo::VectorReaderBuilder::new()
            .with_scan(scan)
            .with_filo_type(f.filo_type)
            .build(&path)
            .unwrap();
        let got = vector_column(limited, arrowsmith::DEFAULT_BATCH_SIZE);
        let decoded = filo::decode(&f.bytes, &f.filo_type.arrow_type()).unwrap();
        // Logical equality: a slice keeps its array's null buffer.
        assert_eq!(&got, &decoded.slice(0, want.len().min(3)), "{}", f.name);
    }
}

#[test]
fn the_vector_reader_builder_refuses_what_a_bare_vector_cannot_do() {
    let path = data("filo/vectors").join("int_i8.bin");
    let refused = |builder: filo::VectorReaderBuilder, want: &str| {
        let e = builder.build(&path).err().unwrap();
        assert_eq!(e.class(), arrowsmith::ErrorClass::InvalidArgument, "{e}");
        assert!(e.to_string().contains(want), "{want} in {e}");
        assert!(e.to_string().contains("int_i8.bin"), "{e}");
    };
    refused(filo::VectorReaderBuilder::new(), "element type");
    let typed = filo::VectorReaderBuilder::new().with_filo_type(FiloType::Int);
    refused(typed.clone().with_projection(["value"]), "projection");
    let range = arrowsmith::FragmentRange::Chunks { start: 0, end: 1 };
    refused(typed.clone().with_range(range), "whole vector");
    refused(typed.clone().with_salvage(true), "salvaged");
    // The type is checked against the bytes, as `decode` does.
    let e = typed
        .with_filo_type(FiloType::String)
        .build(&path)
        .err()
        .unwrap();
    assert!(e.to_string().contains("SimplePrimitiveVector"), "{e}");
}
