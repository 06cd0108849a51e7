//! The Jay writer, tested on the bytes it writes: structure through `JayFile::info()` (which
//! verifies the whole meta), values through an independent decoder of the raw buffers below,
//! and the byte rules of spec B3.2 (alignment, padding, envelope) directly.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::builder::{
    GenericListBuilder, Int32Builder, StringBuilder, StringDictionaryBuilder,
};
use arrow_array::cast::AsArray;
use arrow_array::types::*;
use arrow_array::*;
use arrow_buffer::{BooleanBuffer, Buffer, NullBuffer, OffsetBuffer, ScalarBuffer};
use arrow_schema::{DataType, Field, Schema, SchemaRef, TimeUnit};
use arrowsmith::jay::mapping::JayType;
use arrowsmith::jay::{
    ColumnInfo, FrameInfo, JayFile, Layout, ReaderBuilder, Stats, Writer, WriterOptions,
};
use arrowsmith::{CollisionPolicy, ErrorClass, WriteSummary};

// ---------------------------------------------------------------------------------------------
// Helpers

fn field(name: &str, data_type: DataType) -> Field {
    Field::new(name, data_type, true)
}

fn list_of(data_type: DataType) -> DataType {
    DataType::List(Arc::new(Field::new("item", data_type, true)))
}

fn large_list_of(data_type: DataType) -> DataType {
    DataType::LargeList(Arc::new(Field::new("item", data_type, true)))
}

fn schema_of(fields: Vec<Field>) -> SchemaRef {
    Arc::new(Schema::new(fields))
}

fn batch_of(schema: &SchemaRef, columns: Vec<ArrayRef>) -> RecordBatch {
    RecordBatch::try_new(schema.clone(), columns).unwrap()
}

/// A written file, its bytes and its verified description.
struct Written {
    _dir: tempfile::TempDir,
    path: PathBuf,
    summary: WriteSummary,
    bytes: Vec<u8>,
    info: FrameInfo,
}

impl Written {
    fn column(&self, name: &str) -> &ColumnInfo {
        self.info
            .columns
            .iter()
            .find(|c| c.name.as_deref() == Some(name))
            .unwrap_or_else(|| panic!("no column {name}"))
    }

    fn decode(&self, name: &str) -> ArrayRef {
        decode_column(&self.bytes, self.column(name))
    }

    /// The column as arrowsmith's Jay reader reads it, in batches of an odd size.
    fn read(&self, name: &str) -> ArrayRef {
        let reader = ReaderBuilder::new()
            .with_batch_size(3)
            .with_projection([name])
            .build(&self.path)
            .unwrap();
        let schema = reader.schema();
        let batches: Vec<RecordBatch> = reader.map(|b| b.unwrap()).collect();
        let all = arrow::compute::concat_batches(&schema, &batches).unwrap();
        assert_eq!(all.num_rows() as u64, self.info.nrows);
        all.column(0).clone()
    }
}

fn try_write(
    schema: &SchemaRef,
    batches: &[RecordBatch],
    options: WriterOptions,
) -> arrowsmith::Result<Written> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("out.jay");
    let mut writer = Writer::try_new(&path, schema.clone(), options)?;
    for batch in batches {
        writer.write(batch)?;
    }
    let summary = writer.finish()?;
    let bytes = std::fs::read(&path).unwrap();
    let info = JayFile::open(&path)
        .unwrap_or_else(|e| panic!("the written file does not verify: {e}"))
        .info()
        .clone();
    check_envelope(&bytes, &info);
    Ok(Written {
        _dir: dir,
        path,
        summary,
        bytes,
        info,
    })
}

fn write(schema: &SchemaRef, batches: &[RecordBatch]) -> Written {
    try_write(
        schema,
        batches,
        WriterOptions::default().with_durable(false),
    )
    .unwrap()
}

fn options() -> WriterOptions {
    WriterOptions::default().with_durable(false)
}

/// Spec B3.2's byte rules: header, trailer, meta_size, sizes multiple of 8, every non-empty
/// buffer 8-aligned and followed by zero padding, zero-length buffers `{0, 0}`, no overlap,
/// buffers in column order covering the whole data section.
fn check_envelope(bytes: &[u8], info: &FrameInfo) {
    assert_eq!(&bytes[..8], b"JAY1\0\0\0\0");
    assert_eq!(&bytes[bytes.len() - 8..], b"\0\0\0\x001JAY");
    assert_eq!(bytes.len() % 8, 0);
    assert_eq!(info.meta_size % 8, 0);
    assert_eq!(info.file_size, bytes.len() as u64);
    let mut ranges = Vec::new();
    fn collect(c: &ColumnInfo, out: &mut Vec<(u64, u64)>) {
        for b in [c.validity, c.data, c.strdata].into_iter().flatten() {
            out.push((b.offset, b.length));
        }
        if let Some(child) = &c.child {
            collect(child, out);
        }
    }
    for c in &info.columns {
        collect(c, &mut ranges);
    }
    let mut pos = 0u64;
    for (offset, length) in ranges {
        if length == 0 {
            assert_eq!(offset, 0, "a zero-length buffer is written as {{0, 0}}");
            continue;
        }
        assert_eq!(offset, pos, "buffers follow each other in column order");
        assert_eq!(offset % 8, 0);
        let end = offset + length;
        let padded = end.next_multiple_of(8);
        let pad = &bytes[(8 + end) as usize..(8 + padded) as usize];
        assert!(pad.iter().all(|&b| b == 0), "padding is zero");
        pos = padded;
    }
    assert_eq!(pos, info.data_size, "the buffers fill the data section");
}

// ---------------------------------------------------------------------------------------------
// An independent decoder of the written buffers (old layout and arrays).

fn slice(bytes: &[u8], range: Option<arrowsmith::jay::BufferRange>) -> &[u8] {
    match range {
        Some(r) if r.length > 0 => {
            &bytes[r.file_offset() as usize..(r.file_offset() + r.length) as usize]
        }
        _ => &[],
    }
}

fn le<const N: usize>(b: &[u8]) -> Vec<[u8; N]> {
    b.chunks_exact(N).map(|c| c.try_into().unwrap()).collect()
}

fn decode_column(bytes: &[u8], c: &ColumnInfo) -> ArrayRef {
    let n = c.nrows as usize;
    let data = slice(bytes, c.data);
    macro_rules! ints {
        ($t:ty, $arrow:ty, $size:literal) => {{
            assert_eq!(data.len(), n * $size, "data length of {}", c.jay_type);
            let values: Vec<Option<$t>> = le::<$size>(data)
                .into_iter()
                .map(<$t>::from_le_bytes)
                .map(|v| (v != <$t>::MIN).then_some(v))
                .collect();
            Arc::new(PrimitiveArray::<$arrow>::from(values)) as ArrayRef
        }};
    }
    match &c.jay_type {
        JayType::Bool8 => {
            assert_eq!(data.len(), n);
            Arc::new(
                data.iter()
                    .map(|&b| match b {
                        0 => Some(false),
                        1 => Some(true),
                        0x80 => None,
                        other => panic!("Bool8 byte {other}"),
                    })
                    .collect::<BooleanArray>(),
            )
        }
        JayType::Int8 => ints!(i8, Int8Type, 1),
        JayType::Int16 => ints!(i16, Int16Type, 2),
        JayType::Int32 => ints!(i32, Int32Type, 4),
        JayType::Int64 => ints!(i64, Int64Type, 8),
        JayType::Date32 => ints!(i32, Date32Type, 4),
        JayType::Time64 => ints!(i64, TimestampNanosecondType, 8),
        JayType::Float32 => {
            assert_eq!(data.len(), n * 4);
            let v: Vec<Option<f32>> = le::<4>(data)
                .into_iter()
                .map(f32::from_le_bytes)
                .map(|v| (!v.is_nan()).then_some(v))
                .collect();
            Arc::new(Float32Array::from(v))
        }
        JayType::Float64 => {
            assert_eq!(data.len(), n * 8);
            let v: Vec<Option<f64>> = le::<8>(data)
                .into_iter()
                .map(f64::from_le_bytes)
                .map(|v| (!v.is_nan()).then_some(v))
                .collect();
            Arc::new(Float64Array::from(v))
        }
        JayType::Str32 | JayType::Str64 => {
            let wide = c.jay_type == JayType::Str64;
            assert_eq!(c.offset_width, if wide { 8 } else { 4 });
            let offsets: Vec<u64> = if wide {
                le::<8>(data).into_iter().map(u64::from_le_bytes).collect()
            } else {
                le::<4>(data)
                    .into_iter()
                    .map(|b| {
                        let v = u32::from_le_bytes(b) as u64;
                        (v & 0x7fff_ffff) | ((v >> 31) << 63)
                    })
                    .collect()
            };
            assert_eq!(offsets.len(), n + 1);
            assert_eq!(offsets[0], 0, "the first offset is 0");
            let text = slice(bytes, c.strdata);
            let mask = (1u64 << 63) - 1;
            let mut strings = Vec::with_capacity(n);
            for i in 0..n {
                let (s, e) = (offsets[i] & mask, offsets[i + 1]);
                if e >> 63 == 1 {
                    assert_eq!(e & mask, s, "an NA row repeats the previous end");
                    strings.push(None);
                } else {
                    strings.push(Some(
                        std::str::from_utf8(&text[s as usize..e as usize]).unwrap(),
                    ));
                }
            }
            assert_eq!(offsets[n] & mask, text.len() as u64);
            if wide {
                Arc::new(LargeStringArray::from(strings))
            } else {
                Arc::new(StringArray::from(strings))
            }
        }
        JayType::Void0 => {
            assert!(c.data.is_none() || c.data.unwrap().length == 0);
            Arc::new(NullArray::new(n))
        }
        JayType::Arr32(_) | JayType::Arr64(_) => {
            let wide = matches!(c.jay_type, JayType::Arr64(_));
            let offsets: Vec<u64> = if wide {
                le::<8>(data).into_iter().map(u64::from_le_bytes).collect()
            } else {
                le::<4>(data)
                    .into_iter()
                    .map(|b| u32::from_le_bytes(b) as u64)
                    .collect()
            };
            assert_eq!(offsets.len(), n + 1);
            assert_eq!(offsets[0], 0);
            let child = c.child.as_ref().expect("arrays have a child");
            assert_eq!(child.name, None, "array children have no name");
            assert_eq!(child.layout, Layout::New);
            if !child.jay_type.is_array() {
                assert_eq!(child.validity, None, "children use sentinels, not validity");
            }
            assert_eq!(child.stats, None, "children have no stats");
            assert_eq!(
                offsets[n], child.nrows,
                "the child holds exactly the elements"
            );
            let values = decode_column(bytes, child);
            let validity = slice(bytes, c.validity);
            let nulls = if validity.is_empty() {
                assert_eq!(c.nullcount, 0);
                None
            } else {
                assert_eq!(validity.len(), n.div_ceil(8));
                if n % 8 != 0 {
                    assert_eq!(validity[n / 8] >> (n % 8), 0, "unused bits are zero");
                }
                let bits = BooleanBuffer::new(Buffer::from(validity.to_vec()), 0, n);
                Some(NullBuffer::new(bits))
            };
            assert_eq!(
                nulls.as_ref().map_or(0, |b| b.null_count()) as u64,
                c.nullcount
            );
            for i in 0..n {
                if nulls.as_ref().is_some_and(|b| b.is_null(i)) {
                    assert_eq!(offsets[i], offsets[i + 1], "a null list is empty");
                }
            }
            let item = Arc::new(Field::new("item", values.data_type().clone(), true));
            if wide {
                let o = OffsetBuffer::new(ScalarBuffer::from(
                    offsets.iter().map(|&o| o as i64).collect::<Vec<_>>(),
                ));
                Arc::new(LargeListArray::new(item, o, values, nulls))
            } else {
                let o = OffsetBuffer::new(ScalarBuffer::from(
                    offsets.iter().map(|&o| o as i32).collect::<Vec<_>>(),
                ));
                Arc::new(ListArray::new(item, o, values, nulls))
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// What a column reads back as: the Arrow value of spec B3.1 for a value written by B3.3.

fn jay_arrow_type(t: &JayType) -> DataType {
    t.arrow_type()
}

/// The expected read-back of `array` when written as `jay_type`: widened, converted, NaN and
/// (under `AsNull`) sentinels turned into nulls.
fn expected(array: &dyn Array, jay_type: &JayType, as_null: bool) -> ArrayRef {
    let target = jay_arrow_type(jay_type);
    let casted: ArrayRef = match (array.data_type(), jay_type) {
        (DataType::Timestamp(unit, _), JayType::Time64) => {
            let factor = match unit {
                TimeUnit::Second => 1_000_000_000,
                TimeUnit::Millisecond => 1_000_000,
                TimeUnit::Microsecond => 1_000,
                TimeUnit::Nanosecond => 1,
            };
            let a = arrow::compute::cast(array, &DataType::Int64).unwrap();
            let a = a.as_primitive::<Int64Type>();
            Arc::new(
                a.iter()
                    .map(|v| v.map(|v| v * factor))
                    .collect::<TimestampNanosecondArray>(),
            )
        }
        (DataType::List(_) | DataType::LargeList(_), JayType::Arr32(e) | JayType::Arr64(e)) => {
            let (offsets, values, nulls): (Vec<i64>, ArrayRef, Option<NullBuffer>) =
                match array.data_type() {
                    DataType::List(_) => {
                        let l = array.as_list::<i32>();
                        (
                            l.value_offsets().iter().map(|&o| o as i64).collect(),
                            l.values().clone(),
                            l.nulls().cloned(),
                        )
                    }
                    _ => {
                        let l = array.as_list::<i64>();
                        (
                            l.value_offsets().to_vec(),
                            l.values().clone(),
                            l.nulls().cloned(),
                        )
                    }
                };
            // Keep only the elements of valid lists, as the writer does.
            let mut new_offsets = vec![0i64];
            let mut pieces = Vec::new();
            for i in 0..array.len() {
                let valid = nulls.as_ref().is_none_or(|n| n.is_valid(i));
                let (s, e) = (offsets[i] as usize, offsets[i + 1] as usize);
                let len = if valid { e - s } else { 0 };
                if valid && len > 0 {
                    pieces.push(values.slice(s, len));
                }
                new_offsets.push(new_offsets.last().unwrap() + len as i64);
            }
            let element = if pieces.is_empty() {
                values.slice(0, 0)
            } else {
                let refs: Vec<&dyn Array> = pieces.iter().map(|p| p.as_ref()).collect();
                arrow::compute::concat(&refs).unwrap()
            };
            let child = expected(element.as_ref(), e, as_null);
            let item = Arc::new(Field::new("item", child.data_type().clone(), true));
            let nulls = nulls.filter(|n| n.null_count() > 0);
            match jay_type {
                JayType::Arr32(_) => Arc::new(ListArray::new(
                    item,
                    OffsetBuffer::new(ScalarBuffer::from(
                        new_offsets.iter().map(|&o| o as i32).collect::<Vec<_>>(),
                    )),
                    child,
                    nulls,
                )),
                _ => Arc::new(LargeListArray::new(
                    item,
                    OffsetBuffer::new(ScalarBuffer::from(new_offsets)),
                    child,
                    nulls,
                )),
            }
        }
        _ => arrow::compute::cast(array, &target).unwrap(),
    };
    na_to_null(casted, as_null)
}

fn na_to_null(array: ArrayRef, sentinels: bool) -> ArrayRef {
    fn null_where<P: ArrowPrimitiveType>(a: &ArrayRef, f: impl Fn(P::Native) -> bool) -> ArrayRef {
        let a = a.as_primitive::<P>();
        let valid = BooleanBuffer::collect_bool(a.len(), |i| a.is_valid(i) && !f(a.value(i)));
        Arc::new(
            PrimitiveArray::<P>::new(a.values().clone(), Some(NullBuffer::new(valid)))
                .with_data_type(a.data_type().clone()),
        )
    }
    match array.data_type() {
        DataType::Float32 => null_where::<Float32Type>(&array, |v| v.is_nan()),
        DataType::Float64 => null_where::<Float64Type>(&array, |v| v.is_nan()),
        DataType::Int8 if sentinels => null_where::<Int8Type>(&array, |v| v == i8::MIN),
        DataType::Int16 if sentinels => null_where::<Int16Type>(&array, |v| v == i16::MIN),
        DataType::Int32 if sentinels => null_where::<Int32Type>(&array, |v| v == i32::MIN),
        DataType::Int64 if sentinels => null_where::<Int64Type>(&array, |v| v == i64::MIN),
        DataType::Date32 if sentinels => null_where::<Date32Type>(&array, |v| v == i32::MIN),
        DataType::Timestamp(_, _) if sentinels => {
            null_where::<TimestampNanosecondType>(&array, |v| v == i64::MIN)
        }
        _ => array,
    }
}

/// Asserts that the column named `name` reads back as the concatenation of `inputs`.
fn assert_column(w: &Written, name: &str, inputs: &[&dyn Array], as_null: bool) {
    let info = w.column(name);
    let input = arrow::compute::concat(inputs).unwrap();
    let want = expected(input.as_ref(), &info.jay_type, as_null);
    let got = w.decode(name);
    assert_eq!(
        got.as_ref(),
        want.as_ref(),
        "column {name} ({}):\n got {got:?}\nwant {want:?}",
        info.jay_type
    );
    assert_eq!(
        info.nullcount,
        want.logical_null_count() as u64,
        "nullcount of {name}"
    );
    let read = w.read(name);
    assert_eq!(
        read.as_ref(),
        want.as_ref(),
        "column {name} through the reader"
    );
}

// ---------------------------------------------------------------------------------------------
// Types

fn ts(unit: TimeUnit, tz: Option<&str>) -> DataType {
    DataType::Timestamp(unit, tz.map(Into::into))
}

/// One column per mapped type, each with nulls, split in two batches.
fn every_type() -> (SchemaRef, Vec<RecordBatch>) {
    let dict_type = DataType::Dictionary(Box::new(DataType::Int8), Box::new(DataType::Utf8));
    let schema = schema_of(vec![
        field("b", DataType::Boolean),
        field("i8", DataType::Int8),
        field("i16", DataType::Int16),
        field("i32", DataType::Int32),
        field("i64", DataType::Int64),
        field("u8", DataType::UInt8),
        field("u16", DataType::UInt16),
        field("u32", DataType::UInt32),
        field("u64", DataType::UInt64),
        field("f16", DataType::Float16),
        field("f32", DataType::Float32),
        field("f64", DataType::Float64),
        field("s", DataType::Utf8),
        field("ls", DataType::LargeUtf8),
        field("vs", DataType::Utf8View),
        field("ds", dict_type),
        field("d32", DataType::Date32),
        field("d64", DataType::Date64),
        field("ts_s", ts(TimeUnit::Second, None)),
        field("ts_ms", ts(TimeUnit::Millisecond, None)),
        field("ts_us", ts(TimeUnit::Microsecond, None)),
        field("ts_ns", ts(TimeUnit::Nanosecond, None)),
        field("ts_tz", ts(TimeUnit::Microsecond, Some("Europe/Paris"))),
        field("v", DataType::Null),
        field("l", list_of(DataType::Int32)),
        field("ll", large_list_of(DataType::Utf8)),
        field("nested", list_of(list_of(DataType::Float64))),
        field("lb", list_of(DataType::Boolean)),
        field("lv", list_of(DataType::Null)),
    ]);
    let batch = |k: i64| -> RecordBatch {
        let list = ListArray::from_iter_primitive::<Int32Type, _, _>(vec![
            Some(vec![Some(1 + k as i32), None]),
            None,
            Some(vec![]),
            Some(vec![Some(-7)]),
        ]);
        let mut ll = GenericListBuilder::<i64, _>::new(StringBuilder::new());
        ll.values().append_value("x");
        ll.values().append_null();
        ll.append(true);
        ll.append(false);
        ll.values().append_value("");
        ll.values().append_value("yz");
        ll.append(true);
        ll.append(true);
        let mut nested = GenericListBuilder::<i32, _>::new(GenericListBuilder::<i32, _>::new(
            arrow_array::builder::Float64Builder::new(),
        ));
        nested.values().values().append_value(1.5);
        nested.values().append(true);
        nested.values().append(false);
        nested.append(true);
        nested.append(false);
        nested.values().values().append_value(f64::NAN);
        nested.values().values().append_null();
        nested.values().append(true);
        nested.append(true);
        nested.append(true);
        let mut dict = StringDictionaryBuilder::<Int8Type>::new();
        dict.append_value("cat");
        dict.append_null();
        dict.append_value("dog");
        dict.append_value("cat");
        let lb = ListArray::from_iter_primitive::<Int32Type, _, _>(vec![
            Some(vec![Some(1)]),
            Some(vec![Some(0), None]),
            None,
            Some(vec![]),
        ]);
        let lb = arrow::compute::cast(&lb, &list_of(DataType::Boolean)).unwrap();
        let lv: ArrayRef = Arc::new(ListArray::new(
            Arc::new(Field::new("item", DataType::Null, true)),
            OffsetBuffer::new(ScalarBuffer::from(vec![0i32, 1, 1, 1, 3])),
            Arc::new(NullArray::new(3)),
            Some(NullBuffer::from(vec![true, true, false, true])),
        ));
        let day = 86_400_000i64;
        batch_of(
            &schema,
            vec![
                Arc::new(BooleanArray::from(vec![
                    Some(true),
                    None,
                    Some(false),
                    Some(true),
                ])),
                Arc::new(Int8Array::from(vec![
                    Some(-127),
                    None,
                    Some(127),
                    Some(k as i8),
                ])),
                Arc::new(Int16Array::from(vec![
                    Some(-32767),
                    Some(5),
                    None,
                    Some(32767),
                ])),
                Arc::new(Int32Array::from(vec![
                    None,
                    Some(i32::MAX),
                    Some(-i32::MAX),
                    Some(0),
                ])),
                Arc::new(Int64Array::from(vec![
                    Some(i64::MAX),
                    Some(-i64::MAX),
                    None,
                    Some(k),
                ])),
                Arc::new(UInt8Array::from(vec![Some(255), None, Some(0), Some(1)])),
                Arc::new(UInt16Array::from(vec![Some(65535), None, Some(0), Some(1)])),
                Arc::new(UInt32Array::from(vec![
                    Some(u32::MAX),
                    None,
                    Some(0),
                    Some(1),
                ])),
                Arc::new(UInt64Array::from(vec![
                    Some(i64::MAX as u64),
                    None,
                    Some(0),
                    Some(1),
                ])),
                Arc::new(Float16Array::from(vec![
                    Some(half::f16::from_f32(1.5)),
                    None,
                    Some(half::f16::MAX),
                    Some(half::f16::NAN),
                ])),
                Arc::new(Float32Array::from(vec![
                    Some(-0.0),
                    Some(f32::NAN),
                    None,
                    Some(f32::INFINITY),
                ])),
                Arc::new(Float64Array::from(vec![
                    Some(2.5),
                    None,
                    Some(f64::NEG_INFINITY),
                    Some(1e-300),
                ])),
                Arc::new(StringArray::from(vec![
                    Some("Life"),
                    Some(""),
                    None,
                    Some("ünïcødé ✓ 𝄞"),
                ])),
                Arc::new(LargeStringArray::from(vec![
                    None,
                    Some("кохайтеся"),
                    Some(""),
                    Some("a\0b"),
                ])),
                Arc::new(StringViewArray::from(vec![
                    Some("a string longer than twelve bytes"),
                    None,
                    Some("short"),
                    Some(""),
                ])),
                Arc::new(dict.finish()),
                Arc::new(Date32Array::from(vec![
                    Some(18263),
                    None,
                    Some(-719162),
                    Some(2932896),
                ])),
                Arc::new(Date64Array::from(vec![
                    Some(0),
                    Some(-day),
                    None,
                    Some(18263 * day),
                ])),
                Arc::new(TimestampSecondArray::from(vec![
                    Some(1),
                    None,
                    Some(-1),
                    Some(k),
                ])),
                Arc::new(TimestampMillisecondArray::from(vec![
                    Some(1),
                    None,
                    Some(-1),
                    Some(k),
                ])),
                Arc::new(TimestampMicrosecondArray::from(vec![
                    Some(1),
                    None,
                    Some(-1),
                    Some(k),
                ])),
                Arc::new(TimestampNanosecondArray::from(vec![
                    Some(1),
                    None,
                    Some(i64::MAX),
                    Some(-i64::MAX),
                ])),
                Arc::new(
                    TimestampMicrosecondArray::from(vec![Some(1), None, Some(-1), Some(k)])
                        .with_timezone("Europe/Paris"),
                ),
                Arc::new(NullArray::new(4)),
                Arc::new(list),
                Arc::new(ll.finish()),
                Arc::new(nested.finish()),
                lb,
                lv,
            ],
        )
    };
    (schema.clone(), vec![batch(0), batch(1)])
}

#[test]
fn every_mapped_type_reads_back() {
    let (schema, batches) = every_type();
    let w = write(&schema, &batches);
    assert_eq!(w.summary.rows, 8);
    assert_eq!(w.info.nrows, 8);
    assert_eq!(w.info.ncols_stored, schema.fields().len() as u64);
    assert_eq!(w.info.nkeys, 0);

    let types: Vec<String> = w
        .info
        .columns
        .iter()
        .map(|c| c.jay_type.to_string())
        .collect();
    assert_eq!(
        types,
        [
            "Bool8",
            "Int8",
            "Int16",
            "Int32",
            "Int64",
            "Int16",
            "Int32",
            "Int64",
            "Int64",
            "Float32",
            "Float32",
            "Float64",
            "Str32",
            "Str64",
            "Str32",
            "Str32",
            "Date32",
            "Date32",
            "Time64",
            "Time64",
            "Time64",
            "Time64",
            "Time64",
            "Void0",
            "Arr32(Int32)",
            "Arr64(Str32)",
            "Arr32(Arr32(Float64))",
            "Arr32(Bool8)",
            "Arr32(Void0)"
        ]
    );
    for c in &w.info.columns {
        let expect = if c.jay_type.is_array() {
            Layout::New
        } else {
            Layout::Old
        };
        assert_eq!(c.layout, expect, "{:?}", c.name);
        assert_eq!(c.nrows, 8);
    }
    for (i, f) in schema.fields().iter().enumerate() {
        let inputs: Vec<&dyn Array> = batches.iter().map(|b| b.column(i).as_ref()).collect();
        assert_column(&w, f.name(), &inputs, false);
    }
    // The time zone was dropped, and said so.
    assert_eq!(w.summary.warnings.len(), 1, "{:?}", w.summary.warnings);
    assert!(w.summary.warnings[0].contains("ts_tz"));
    assert!(w.summary.warnings[0].contains("Europe/Paris"));
}

#[test]
fn stats_and_nullcounts_are_exact() {
    let (schema, batches) = every_type();
    let w = write(&schema, &batches);
    let stats = |name: &str| w.column(name).stats;
    let int = |min, max| Some(Stats::Int { min, max });
    let float = |min, max| Some(Stats::Float { min, max });
    assert_eq!(stats("b"), int(0, 1));
    assert_eq!(stats("i8"), int(-127, 127));
    assert_eq!(stats("i16"), int(-32767, 32767));
    assert_eq!(stats("i32"), int(-(i32::MAX as i64), i32::MAX as i64));
    assert_eq!(stats("i64"), int(-i64::MAX, i64::MAX));
    assert_eq!(stats("u8"), int(0, 255));
    assert_eq!(stats("u16"), int(0, 65535));
    assert_eq!(stats("u32"), int(0, u32::MAX as i64));
    assert_eq!(stats("u64"), int(0, i64::MAX));
    assert_eq!(stats("f16"), float(1.5, 65504.0));
    assert_eq!(stats("f64"), float(f64::NEG_INFINITY, 2.5));
    match stats("f32") {
        Some(Stats::Float { min, max }) => {
            assert!(min == 0.0 && min.is_sign_negative(), "−0.0 met first stays");
            assert_eq!(max, f64::INFINITY);
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(stats("d32"), int(-719162, 2932896));
    assert_eq!(stats("d64"), int(-1, 18263));
    assert_eq!(stats("ts_s"), int(-1_000_000_000, 1_000_000_000));
    assert_eq!(stats("ts_ns"), int(-i64::MAX, i64::MAX));
    for name in ["s", "ls", "vs", "ds", "v", "l", "ll", "nested"] {
        assert_eq!(stats(name), None, "{name} has no stats");
    }
    // nullcount = nulls + NaNs, as stored.
    assert_eq!(w.column("f32").nullcount, 4);
    assert_eq!(w.column("f16").nullcount, 4);
    assert_eq!(w.column("v").nullcount, 8);
    assert_eq!(w.column("l").nullcount, 2);
    assert_eq!(w.column("i32").nullcount, 2);
}

#[test]
fn all_na_and_zero_rows_store_sentinel_stats() {
    let schema = schema_of(vec![
        field("b", DataType::Boolean),
        field("i8", DataType::Int8),
        field("i32", DataType::Int32),
        field("f32", DataType::Float32),
        field("f64", DataType::Float64),
        field("d", DataType::Date32),
        field("t", ts(TimeUnit::Nanosecond, None)),
        field("s", DataType::Utf8),
    ]);
    let all_na = batch_of(
        &schema,
        vec![
            Arc::new(BooleanArray::from(vec![None, None])),
            Arc::new(Int8Array::from(vec![None, None])),
            Arc::new(Int32Array::from(vec![None, None])),
            Arc::new(Float32Array::from(vec![None, Some(f32::NAN)])),
            Arc::new(Float64Array::from(vec![Some(f64::NAN), None])),
            Arc::new(Date32Array::from(vec![None, None])),
            Arc::new(TimestampNanosecondArray::from(vec![None, None])),
            Arc::new(StringArray::from(vec![None::<&str>, None])),
        ],
    );
    for batches in [vec![all_na.clone()], vec![all_na.slice(0, 0)], vec![]] {
        let w = write(&schema, &batches);
        let nrows = batches.iter().map(|b| b.num_rows() as u64).sum::<u64>();
        assert_eq!(w.info.nrows, nrows);
        let int = |min, max| Some(Stats::Int { min, max });
        assert_eq!(w.column("b").stats, int(-128, -128));
        assert_eq!(w.column("i8").stats, int(-128, -128));
        assert_eq!(w.column("i32").stats, int(i32::MIN as i64, i32::MIN as i64));
        assert_eq!(w.column("d").stats, int(i32::MIN as i64, i32::MIN as i64));
        assert_eq!(w.column("t").stats, int(i64::MIN, i64::MIN));
        for f in ["f32", "f64"] {
            match w.column(f).stats {
                Some(Stats::Float { min, max }) => assert!(min.is_nan() && max.is_nan()),
                other => panic!("{other:?}"),
            }
        }
        for c in &w.info.columns {
            assert_eq!(c.nullcount, nrows, "{:?}", c.name);
        }
        // Strings: offsets are a single 0 for zero rows; the byte buffer is empty.
        let s = w.column("s");
        assert_eq!(s.data.unwrap().length, 4 * (nrows + 1));
        assert_eq!(s.strdata.unwrap().length, 0);
        if nrows == 0 {
            assert_eq!(s.data.unwrap().offset, 0);
            assert_eq!(w.column("i32").data.unwrap().length, 0);
        }
    }
}

#[test]
fn zero_columns_keep_the_row_count() {
    let schema = schema_of(vec![]);
    let batch = RecordBatch::try_new_with_options(
        schema.clone(),
        vec![],
        &RecordBatchOptions::new().with_row_count(Some(5)),
    )
    .unwrap();
    let w = write(&schema, &[batch.clone(), batch]);
    assert_eq!(w.info.nrows, 10);
    assert_eq!(w.summary.rows, 10);
    assert!(w.info.columns.is_empty());
    assert_eq!(w.info.data_size, 0);

    let empty = write(&schema, &[]);
    assert_eq!(empty.bytes.len(), 56, "the smallest file, as zero_cols.jay");
    assert_eq!(empty.info.nrows, 0);
}

#[test]
fn sliced_arrays_are_rebased() {
    let schema = schema_of(vec![
        field("i", DataType::Int32),
        field("b", DataType::Boolean),
        field("s", DataType::Utf8),
        field("ls", DataType::LargeUtf8),
        field(
            "d",
            DataType::Dictionary(Box::new(DataType::UInt16), Box::new(DataType::Utf8)),
        ),
        field("l", list_of(DataType::Utf8)),
        field("u", DataType::UInt64),
    ]);
    let n = 300;
    let strings: Vec<Option<String>> = (0..n)
        .map(|i| (i % 7 != 3).then(|| "x".repeat(i % 5)))
        .collect();
    let mut lists = GenericListBuilder::<i32, _>::new(StringBuilder::new());
    for i in 0..n {
        for j in 0..i % 3 {
            lists
                .values()
                .append_option((j != 1).then(|| format!("{i}.{j}")));
        }
        lists.append(i % 11 != 4);
    }
    let full = batch_of(
        &schema,
        vec![
            Arc::new(Int32Array::from_iter(
                (0..n as i32).map(|i| (i % 5 != 0).then_some(i)),
            )),
            Arc::new(BooleanArray::from_iter(
                (0..n).map(|i| (i % 3 != 0).then_some(i % 2 == 0)),
            )),
            Arc::new(StringArray::from(strings.clone())),
            Arc::new(LargeStringArray::from(strings.clone())),
            Arc::new(
                strings
                    .iter()
                    .map(|s| s.as_deref())
                    .collect::<DictionaryArray<UInt16Type>>(),
            ),
            Arc::new(lists.finish()),
            Arc::new(UInt64Array::from_iter_values(0..n as u64)),
        ],
    );
    // Odd offsets and lengths: bit-level and byte-level slicing both.
    let parts = [
        full.slice(3, 61),
        full.slice(64, 0),
        full.slice(101, 150),
        full.slice(299, 1),
    ];
    let w = write(&schema, &parts);
    assert_eq!(w.info.nrows, 212);
    for (i, f) in schema.fields().iter().enumerate() {
        let inputs: Vec<&dyn Array> = parts.iter().map(|b| b.column(i).as_ref()).collect();
        assert_column(&w, f.name(), &inputs, false);
    }
}

#[test]
fn bytes_under_null_slots_are_not_copied() {
    // A string array whose null slots cover bytes (allowed by Arrow): "aa", null("bbb"), "c".
    let offsets = OffsetBuffer::new(ScalarBuffer::from(vec![0i32, 2, 5, 6]));
    let nulls = NullBuffer::from(vec![true, false, true]);
    let strings = StringArray::new(offsets, Buffer::from(b"aabbbc".to_vec()), Some(nulls));
    // A list array whose null list covers elements: [1, 2], null([3, 4]), [5].
    let list = ListArray::new(
        Arc::new(Field::new("item", DataType::Int32, true)),
        OffsetBuffer::new(ScalarBuffer::from(vec![0i32, 2, 4, 5])),
        Arc::new(Int32Array::from(vec![1, 2, 3, 4, 5])),
        Some(NullBuffer::from(vec![true, false, true])),
    );
    let schema = schema_of(vec![
        field("s", DataType::Utf8),
        field("l", list_of(DataType::Int32)),
    ]);
    let batch = batch_of(&schema, vec![Arc::new(strings), Arc::new(list)]);
    let w = write(&schema, std::slice::from_ref(&batch));
    let s = w.column("s");
    assert_eq!(slice(&w.bytes, s.strdata), b"aac");
    let offsets: Vec<u32> = le::<4>(slice(&w.bytes, s.data))
        .into_iter()
        .map(u32::from_le_bytes)
        .collect();
    assert_eq!(offsets, [0, 2, 2 | 1 << 31, 3]);
    let l = w.column("l");
    assert_eq!(l.child.as_ref().unwrap().nrows, 3);
    let offsets: Vec<u32> = le::<4>(slice(&w.bytes, l.data))
        .into_iter()
        .map(u32::from_le_bytes)
        .collect();
    assert_eq!(offsets, [0, 2, 2, 3]);
    assert_eq!(slice(&w.bytes, l.validity), [0b101]);
    for (i, f) in schema.fields().iter().enumerate() {
        assert_column(&w, f.name(), &[batch.column(i).as_ref()], false);
    }
}

#[test]
fn arrays_without_null_lists_have_an_empty_validity() {
    let schema = schema_of(vec![field("l", large_list_of(DataType::Int64))]);
    let list = LargeListArray::from_iter_primitive::<Int64Type, _, _>(vec![
        Some(vec![Some(1), None]),
        Some(vec![]),
    ]);
    let w = write(&schema, &[batch_of(&schema, vec![Arc::new(list)])]);
    let l = w.column("l");
    assert_eq!(l.jay_type.to_string(), "Arr64(Int64)");
    assert_eq!(l.validity, None);
    assert_eq!(l.nullcount, 0);
    assert_eq!(l.offset_width, 8);
    let child = l.child.as_ref().unwrap();
    assert_eq!(child.nullcount, 1);
    assert_eq!(child.nrows, 2);
}

// ---------------------------------------------------------------------------------------------
// Str32 → Str64 and Arr32 → Arr64

fn strings(batch: usize, n: usize) -> StringArray {
    (0..n)
        .map(|i| (i % 4 != 1).then(|| format!("b{batch}r{i}{}", "é".repeat(i % 3))))
        .collect()
}

#[test]
fn text_that_outgrows_str32_becomes_str64() {
    let schema = schema_of(vec![
        field("s", DataType::Utf8),
        field("k", DataType::Utf8View),
        field("i", DataType::Int16),
    ]);
    let batches: Vec<RecordBatch> = (0..6)
        .map(|b| {
            let s = strings(b, 50 + b);
            let k: StringViewArray = s.iter().collect();
            let i = Int16Array::from_iter_values((0..s.len()).map(|x| x as i16));
            batch_of(&schema, vec![Arc::new(s), Arc::new(k), Arc::new(i)])
        })
        .collect();
    let text_bytes: usize = batches
        .iter()
        .map(|b| {
            let s = b.column(0).as_string::<i32>();
            s.iter().flatten().map(str::len).sum::<usize>()
        })
        .sum();
    for memory_limit in [0, usize::MAX] {
        // Under the limit: Str32. Just over it (by bytes): Str64, the prefix widened.
        for (limit, want) in [
            (text_bytes as u64, JayType::Str32),
            (text_bytes as u64 - 1, JayType::Str64),
        ] {
            let w = try_write(
                &schema,
                &batches,
                options()
                    .with_offset32_limit(limit)
                    .with_memory_limit(memory_limit),
            )
            .unwrap();
            for name in ["s", "k"] {
                assert_eq!(w.column(name).jay_type, want, "limit {limit}");
                let inputs: Vec<&dyn Array> =
                    batches.iter().map(|b| b.column(0).as_ref()).collect();
                let got = w.decode(name);
                let got = arrow::compute::cast(&got, &DataType::Utf8).unwrap();
                let want = arrow::compute::concat(&inputs).unwrap();
                assert_eq!(got.as_ref(), want.as_ref());
            }
            assert_eq!(w.column("i").jay_type, JayType::Int16);
        }
        // By rows: more rows than the limit also means Str64.
        let rows: usize = batches.iter().map(|b| b.num_rows()).sum();
        let w = try_write(
            &schema,
            &batches,
            options()
                .with_offset32_limit(rows as u64 - 1)
                .with_memory_limit(memory_limit),
        )
        .unwrap();
        assert!(
            text_bytes < rows - 1 || text_bytes > rows,
            "the test separates the two"
        );
        assert_eq!(w.column("s").jay_type, JayType::Str64);
    }
}

#[test]
fn lists_that_outgrow_arr32_become_arr64() {
    let schema = schema_of(vec![field("l", list_of(DataType::Int32))]);
    let batches: Vec<RecordBatch> = (0..5)
        .map(|b| {
            let mut builder = GenericListBuilder::<i32, _>::new(Int32Builder::new());
            for i in 0..20 {
                for j in 0..(i + b) % 4 {
                    builder.values().append_value(j);
                }
                builder.append(i % 6 != 2);
            }
            batch_of(&schema, vec![Arc::new(builder.finish())])
        })
        .collect();
    let w = write(&schema, &batches);
    let elements = w.column("l").child.as_ref().unwrap().nrows;
    for memory_limit in [0, usize::MAX] {
        for (limit, wide) in [(elements, false), (elements - 1, true)] {
            let w = try_write(
                &schema,
                &batches,
                options()
                    .with_offset32_limit(limit)
                    .with_memory_limit(memory_limit),
            )
            .unwrap();
            let l = w.column("l");
            assert_eq!(matches!(l.jay_type, JayType::Arr64(_)), wide);
            let inputs: Vec<&dyn Array> = batches.iter().map(|b| b.column(0).as_ref()).collect();
            assert_column(&w, "l", &inputs, false);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Errors

fn write_err(
    schema: &SchemaRef,
    batches: &[RecordBatch],
    options: WriterOptions,
) -> arrowsmith::Error {
    match try_write(schema, batches, options) {
        Ok(_) => panic!("the write succeeded"),
        Err(e) => e,
    }
}

#[test]
fn unmappable_types_fail_at_once() {
    let cases = [
        (DataType::Binary, "Binary"),
        (DataType::Decimal128(10, 2), "Decimal128(10, 2)"),
        (DataType::Time32(TimeUnit::Second), "Time32"),
        (DataType::Duration(TimeUnit::Second), "Duration"),
        (
            DataType::Struct(vec![field("x", DataType::Int8)].into()),
            "Struct",
        ),
        (list_of(DataType::Binary), "Binary"),
        (
            DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Int32)),
            "Dictionary",
        ),
        (
            DataType::FixedSizeList(Arc::new(field("item", DataType::Int8)), 2),
            "FixedSizeList",
        ),
    ];
    for (data_type, shown) in cases {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.jay");
        let schema = schema_of(vec![field("ok", DataType::Int8), field("bad", data_type)]);
        let err = Writer::try_new(&path, schema, options()).err().unwrap();
        assert_eq!(err.class(), ErrorClass::UnsupportedType);
        let column = err.column().unwrap();
        assert_eq!((column.index, column.name.as_deref()), (1, Some("bad")));
        assert!(err.to_string().contains(shown), "{err}");
        assert_eq!(
            std::fs::read_dir(dir.path()).unwrap().count(),
            0,
            "nothing created"
        );
    }
}

#[test]
fn sentinel_collisions_fail_naming_column_row_and_value() {
    let cases: Vec<(DataType, ArrayRef, ArrayRef, &str)> = vec![
        (
            DataType::Int8,
            Arc::new(Int8Array::from(vec![1, 2, 3])),
            Arc::new(Int8Array::from(vec![Some(4), None, Some(-128)])),
            "-128",
        ),
        (
            DataType::Int32,
            Arc::new(Int32Array::from(vec![1, 2, 3])),
            Arc::new(Int32Array::from(vec![4, 5, i32::MIN])),
            "-2147483648",
        ),
        (
            DataType::Int64,
            Arc::new(Int64Array::from(vec![1, 2, 3])),
            Arc::new(Int64Array::from(vec![Some(4), None, Some(i64::MIN)])),
            "-9223372036854775808",
        ),
        (
            DataType::Date32,
            Arc::new(Date32Array::from(vec![1, 2, 3])),
            Arc::new(Date32Array::from(vec![4, 5, i32::MIN])),
            "-2147483648",
        ),
        (
            DataType::Date64,
            Arc::new(Date64Array::from(vec![0, 0, 0])),
            Arc::new(Date64Array::from(vec![0, 0, i32::MIN as i64 * 86_400_000])),
            "-2147483648",
        ),
        (
            ts(TimeUnit::Nanosecond, None),
            Arc::new(TimestampNanosecondArray::from(vec![1, 2, 3])),
            Arc::new(TimestampNanosecondArray::from(vec![4, 5, i64::MIN])),
            "-9223372036854775808",
        ),
    ];
    for (data_type, first, second, value) in cases {
        let schema = schema_of(vec![
            field("pad", DataType::Utf8),
            field("c", data_type.clone()),
        ]);
        let pad = |n| Arc::new(StringArray::from(vec!["p"; n])) as ArrayRef;
        let batches = [
            batch_of(&schema, vec![pad(3), first.clone()]),
            batch_of(&schema, vec![pad(3), second.clone()]),
        ];
        let err = write_err(&schema, &batches, options());
        assert_eq!(
            err.class(),
            ErrorClass::SentinelCollision,
            "{data_type}: {err}"
        );
        assert_eq!(err.column().unwrap().index, 1);
        assert_eq!(err.row(), Some(5), "the row counts across batches: {err}");
        assert!(err.to_string().contains(value), "{err}");

        let w = try_write(
            &schema,
            &batches,
            options().with_sentinel_collisions(CollisionPolicy::AsNull),
        )
        .unwrap();
        assert_column(&w, "c", &[first.as_ref(), second.as_ref()], true);
        let nulls = second.null_count() as u64 + 1;
        assert_eq!(w.column("c").nullcount, nulls);
        if let Some(Stats::Int { min, .. }) = w.column("c").stats {
            assert!(
                min > i64::MIN && min != i32::MIN as i64 && min != -128,
                "NA not in stats"
            );
        }
    }
}

#[test]
fn collisions_inside_lists_name_the_list_row() {
    let schema = schema_of(vec![field("l", list_of(DataType::Int8))]);
    let list = ListArray::from_iter_primitive::<Int8Type, _, _>(vec![
        Some(vec![Some(1)]),
        None,
        Some(vec![Some(2), Some(-128)]),
    ]);
    let batch = batch_of(&schema, vec![Arc::new(list)]);
    let err = write_err(&schema, &[batch.clone(), batch.clone()], options());
    assert_eq!(err.class(), ErrorClass::SentinelCollision);
    assert_eq!(err.row(), Some(2));
    assert!(err.to_string().contains("element 1"), "{err}");

    let w = try_write(
        &schema,
        &[batch.clone(), batch.clone()],
        options().with_sentinel_collisions(CollisionPolicy::AsNull),
    )
    .unwrap();
    assert_column(
        &w,
        "l",
        &[batch.column(0).as_ref(), batch.column(0).as_ref()],
        true,
    );
}

#[test]
fn values_out_of_range_fail_naming_column_row_and_value() {
    let day = 86_400_000i64;
    let cases: Vec<(DataType, ArrayRef, u64, &str)> = vec![
        (
            DataType::UInt64,
            Arc::new(UInt64Array::from(vec![
                Some(1),
                None,
                Some(i64::MAX as u64 + 1),
            ])),
            2,
            "9223372036854775808",
        ),
        (
            DataType::Date64,
            Arc::new(Date64Array::from(vec![Some(day), Some(day + 1)])),
            1,
            "86400001",
        ),
        (
            DataType::Date64,
            Arc::new(Date64Array::from(vec![None, Some(day * (1 << 32))])),
            1,
            "days",
        ),
        (
            ts(TimeUnit::Second, Some("UTC")),
            Arc::new(TimestampSecondArray::from(vec![0, i64::MAX / 1000]).with_timezone("UTC")),
            1,
            "9223372036854775",
        ),
        (
            ts(TimeUnit::Millisecond, None),
            Arc::new(TimestampMillisecondArray::from(vec![
                Some(i64::MIN / 10),
                None,
            ])),
            0,
            "ms",
        ),
    ];
    for (data_type, array, row, value) in cases {
        let schema = schema_of(vec![
            field("ok", DataType::Int8),
            field("x", data_type.clone()),
        ]);
        let n = array.len();
        let ok = Arc::new(Int8Array::from(vec![0; n])) as ArrayRef;
        let first = batch_of(&schema, vec![ok.slice(0, 0), array.slice(0, 0)]);
        let batch = batch_of(&schema, vec![ok, array]);
        let err = write_err(&schema, &[first, batch], options());
        assert_eq!(
            err.class(),
            ErrorClass::ValueOutOfRange,
            "{data_type}: {err}"
        );
        let column = err.column().unwrap();
        assert_eq!((column.index, column.name.as_deref()), (1, Some("x")));
        assert_eq!(err.row(), Some(row), "{err}");
        assert!(err.to_string().contains(value), "{err}");
    }
}

#[test]
fn batches_of_another_schema_are_refused() {
    let schema = schema_of(vec![
        field("a", DataType::Int32),
        field("b", DataType::Utf8),
    ]);
    let other = schema_of(vec![
        field("a", DataType::Int32),
        field("b", DataType::Int32),
    ]);
    let batch = batch_of(
        &other,
        vec![
            Arc::new(Int32Array::from(vec![1])),
            Arc::new(Int32Array::from(vec![1])),
        ],
    );
    let err = write_err(&schema, std::slice::from_ref(&batch), options());
    assert_eq!(err.class(), ErrorClass::InvalidArgument);
    assert_eq!(err.column().unwrap().index, 1);
    // A refused batch leaves the writer usable.
    let dir = tempfile::tempdir().unwrap();
    let mut writer = Writer::try_new(dir.path().join("x.jay"), schema.clone(), options()).unwrap();
    assert!(writer.write(&batch).is_err());
    let good = batch_of(
        &schema,
        vec![
            Arc::new(Int32Array::from(vec![1])),
            Arc::new(StringArray::from(vec!["s"])),
        ],
    );
    writer.write(&good).unwrap();
    assert_eq!(writer.finish().unwrap().rows, 1);

    // Types that map to the same Jay type are accepted (UInt32 and UInt64 are both Int64;
    // a dictionary's key type does not matter; Utf8View is Str32 like Utf8).
    let schema = schema_of(vec![
        field("u", DataType::UInt64),
        field("s", DataType::Utf8),
    ]);
    let other = schema_of(vec![
        field("u", DataType::UInt32),
        field("s", DataType::Utf8View),
    ]);
    let batch = batch_of(
        &other,
        vec![
            Arc::new(UInt32Array::from(vec![7])),
            Arc::new(StringViewArray::from(vec!["v"])),
        ],
    );
    let w = write(&schema, &[batch]);
    assert_eq!(w.decode("s").as_string::<i32>().value(0), "v");
}

#[test]
fn a_failed_write_leaves_no_file_and_an_existing_target_untouched() {
    let schema = schema_of(vec![field("i", DataType::Int32)]);
    let good = batch_of(&schema, vec![Arc::new(Int32Array::from(vec![1, 2]))]);
    let bad = batch_of(&schema, vec![Arc::new(Int32Array::from(vec![3, i32::MIN]))]);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.jay");
    for existing in [None, Some(b"precious".as_slice())] {
        if let Some(bytes) = existing {
            std::fs::write(&path, bytes).unwrap();
        }
        for memory_limit in [0, usize::MAX] {
            let mut writer = Writer::try_new(
                &path,
                schema.clone(),
                options().with_memory_limit(memory_limit),
            )
            .unwrap();
            writer.write(&good).unwrap();
            // Under its memory limit the writer holds batches and encodes them at `finish()`,
            // so the value is refused there; otherwise by the `write()` of its batch.
            let held = memory_limit > 0;
            let err = match writer.write(&bad) {
                Err(err) => {
                    assert!(!held, "{err}");
                    // The writer refuses to go on, and finishing writes nothing.
                    assert!(writer.write(&good).is_err());
                    assert!(writer.finish().is_err());
                    err
                }
                Ok(()) => {
                    assert!(held);
                    writer.finish().unwrap_err()
                }
            };
            assert_eq!(err.class(), ErrorClass::SentinelCollision);
            assert_eq!(err.row(), Some(3));
            assert_eq!(err.file(), Some(path.as_path()));
            let names: Vec<_> = std::fs::read_dir(dir.path())
                .unwrap()
                .map(|e| e.unwrap().file_name())
                .collect();
            match existing {
                None => assert!(names.is_empty(), "{names:?}"),
                Some(bytes) => {
                    assert_eq!(names.len(), 1, "{names:?}");
                    assert_eq!(std::fs::read(&path).unwrap(), bytes);
                }
            }
        }
        // An abandoned writer leaves nothing either.
        let mut writer = Writer::try_new(&path, schema.clone(), options()).unwrap();
        writer.write(&good).unwrap();
        drop(writer);
        assert_eq!(
            std::fs::read_dir(dir.path()).unwrap().count(),
            existing.is_some() as usize
        );
    }
    // A successful write replaces the target.
    let w = Writer::try_new(&path, schema.clone(), options()).unwrap();
    w.finish().unwrap();
    assert!(JayFile::open(&path).is_ok());
}

// ---------------------------------------------------------------------------------------------
// Streaming: spilling, sinks

fn mixed_batches(nbatches: usize, rows: usize) -> (SchemaRef, Vec<RecordBatch>) {
    let schema = schema_of(vec![
        field("i", DataType::Int32),
        field("f", DataType::Float64),
        field("s", DataType::Utf8),
        field("b", DataType::Boolean),
        field("l", list_of(DataType::Int64)),
    ]);
    let batches = (0..nbatches)
        .map(|b| {
            let base = (b * rows) as i64;
            let mut lists =
                GenericListBuilder::<i32, _>::new(arrow_array::builder::Int64Builder::new());
            for i in 0..rows as i64 {
                for j in 0..(i % 3) {
                    lists.values().append_option((j != 1).then_some(base + i));
                }
                lists.append(i % 9 != 0);
            }
            batch_of(
                &schema,
                vec![
                    Arc::new(Int32Array::from_iter(
                        (0..rows as i32).map(|i| (i % 100 != 7).then_some(i * 3 - 500)),
                    )),
                    Arc::new(Float64Array::from_iter(
                        (0..rows).map(|i| (i % 50 != 1).then_some(i as f64 / 7.0)),
                    )),
                    Arc::new(StringArray::from_iter((0..rows).map(|i| {
                        (i % 13 != 2).then(|| format!("s{}", base as usize + i))
                    }))),
                    Arc::new(BooleanArray::from_iter(
                        (0..rows).map(|i| (i % 17 != 5).then_some(i % 3 == 0)),
                    )),
                    Arc::new(lists.finish()),
                ],
            )
        })
        .collect();
    (schema, batches)
}

#[test]
fn spilling_does_not_change_a_byte() {
    let (schema, batches) = mixed_batches(9, 20_000);
    let in_memory = write(&schema, &batches);
    for limit in [0, 100_000, 1 << 20] {
        let spilled = try_write(&schema, &batches, options().with_memory_limit(limit)).unwrap();
        assert!(spilled.bytes == in_memory.bytes, "memory limit {limit}");
    }
    for (i, f) in schema.fields().iter().enumerate() {
        let inputs: Vec<&dyn Array> = batches.iter().map(|b| b.column(i).as_ref()).collect();
        assert_column(&in_memory, f.name(), &inputs, false);
    }
}

#[test]
fn many_tiny_batches() {
    let (schema, batches) = mixed_batches(1, 3000);
    let tiny: Vec<RecordBatch> = (0..3000).map(|i| batches[0].slice(i, 1)).collect();
    let whole = write(&schema, &batches);
    let pieces = try_write(&schema, &tiny, options().with_memory_limit(10_000)).unwrap();
    assert!(pieces.bytes == whole.bytes);
}

#[test]
fn spill_dir_is_where_spooling_happens() {
    let (schema, batches) = mixed_batches(2, 100);
    let missing = tempfile::tempdir().unwrap().path().join("gone");
    let err = write_err(
        &schema,
        &batches,
        options().with_memory_limit(0).with_spill_dir(&missing),
    );
    assert_eq!(err.class(), ErrorClass::Io);
    assert!(err.to_string().contains("gone"), "{err}");
    assert!(err.file().is_some_and(|f| f.ends_with("out.jay")), "{err}");
    // Within the memory limit the spill directory is never touched.
    try_write(&schema, &batches, options().with_spill_dir(&missing)).unwrap();
}

#[derive(Clone, Default)]
struct SharedSink(Arc<std::sync::Mutex<Vec<u8>>>);

impl std::io::Write for SharedSink {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[test]
fn a_sink_receives_the_same_bytes_only_at_finish() {
    let (schema, batches) = mixed_batches(3, 5000);
    let file = write(&schema, &batches);
    for limit in [0, usize::MAX] {
        let sink = SharedSink::default();
        let mut writer = Writer::try_new_to_sink(
            Box::new(sink.clone()),
            schema.clone(),
            options().with_memory_limit(limit),
        )
        .unwrap();
        for b in &batches {
            writer.write(b).unwrap();
        }
        assert!(sink.0.lock().unwrap().is_empty(), "nothing before finish()");
        let summary = writer.finish().unwrap();
        assert_eq!(summary.rows, 15_000);
        assert!(*sink.0.lock().unwrap() == file.bytes);
    }
}

#[test]
fn wide_frames() {
    let n = 1500;
    let schema = schema_of(
        (0..n)
            .map(|i| {
                let t = match i % 3 {
                    0 => DataType::Int32,
                    1 => DataType::Utf8,
                    _ => list_of(DataType::Float32),
                };
                field(&format!("C{i}"), t)
            })
            .collect(),
    );
    let columns = |rows: usize| -> Vec<ArrayRef> {
        (0..n)
            .map(|i| -> ArrayRef {
                match i % 3 {
                    0 => Arc::new(Int32Array::from_iter_values(
                        (0..rows as i32).map(|r| r + i as i32),
                    )),
                    1 => Arc::new(StringArray::from_iter_values(
                        (0..rows).map(|r| format!("{i}:{r}")),
                    )),
                    _ => Arc::new(ListArray::from_iter_primitive::<Float32Type, _, _>(
                        (0..rows).map(|r| Some(vec![Some(r as f32); r % 3])),
                    )),
                }
            })
            .collect()
    };
    let batches = [batch_of(&schema, columns(3)), batch_of(&schema, columns(2))];
    let w = try_write(&schema, &batches, options().with_memory_limit(0)).unwrap();
    assert_eq!(w.info.columns.len(), n);
    for i in [0, 1, 2, n - 1] {
        let inputs: Vec<&dyn Array> = batches.iter().map(|b| b.column(i).as_ref()).collect();
        assert_column(&w, &format!("C{i}"), &inputs, false);
    }
}

#[test]
fn names_are_written_verbatim() {
    let names = ["A", "A", "", "\u{1}", "日本語 😀", "with space"];
    let schema = schema_of(names.iter().map(|n| field(n, DataType::Int8)).collect());
    let batch = batch_of(
        &schema,
        names
            .iter()
            .map(|_| Arc::new(Int8Array::from(vec![1])) as ArrayRef)
            .collect(),
    );
    let w = write(&schema, &[batch]);
    let got: Vec<&str> = w
        .info
        .columns
        .iter()
        .map(|c| c.name.as_deref().unwrap())
        .collect();
    assert_eq!(got, names);
}

// ---------------------------------------------------------------------------------------------
// nkeys

fn keyed(schema: SchemaRef, k: &str) -> SchemaRef {
    let mut metadata = std::collections::HashMap::new();
    metadata.insert("jay.nkeys".to_string(), k.to_string());
    Arc::new(schema.as_ref().clone().with_metadata(metadata))
}

fn key_batches(schema: &SchemaRef, k1: Vec<Option<i32>>, k2: Vec<Option<&str>>) -> RecordBatch {
    let n = k1.len();
    batch_of(
        schema,
        vec![
            Arc::new(Int32Array::from(k1)),
            Arc::new(StringArray::from(k2)),
            Arc::new(Float64Array::from_iter_values((0..n).map(|i| i as f64))),
        ],
    )
}

fn key_schema(k: &str) -> SchemaRef {
    keyed(
        schema_of(vec![
            field("k1", DataType::Int32),
            field("k2", DataType::Utf8),
            field("v", DataType::Float64),
        ]),
        k,
    )
}

#[test]
fn nkeys_is_written_for_sorted_unique_keys() {
    let schema = key_schema("2");
    // NA first; strings by UTF-8 bytes ("B" < "a"); checked across batch boundaries.
    let batches = [
        key_batches(
            &schema,
            vec![None, None, Some(1)],
            vec![None, Some("a"), Some("a")],
        ),
        key_batches(&schema, vec![], vec![]),
        key_batches(&schema, vec![Some(1), Some(2)], vec![Some("ab"), Some("B")]),
        key_batches(&schema, vec![Some(2)], vec![Some("a")]),
    ];
    let w = write(&schema, &batches);
    assert_eq!(w.info.nkeys, 2);
    assert!(w.summary.warnings.is_empty(), "{:?}", w.summary.warnings);

    // The same data keyed by k1 alone is not unique.
    let schema1 = key_schema("1");
    let batches1: Vec<RecordBatch> = batches
        .iter()
        .map(|b| RecordBatch::try_new(schema1.clone(), b.columns().to_vec()).unwrap())
        .collect();
    let w = write(&schema1, &batches1);
    assert_eq!(w.info.nkeys, 0);
    assert_eq!(w.summary.warnings.len(), 1);
    assert!(
        w.summary.warnings[0].contains("rows 0 and 1"),
        "{:?}",
        w.summary.warnings
    );
}

#[test]
fn keys_that_break_across_batches_are_not_written() {
    let schema = key_schema("2");
    let unsorted = [
        key_batches(&schema, vec![Some(1), Some(5)], vec![Some("a"), Some("a")]),
        key_batches(&schema, vec![Some(4)], vec![Some("z")]),
    ];
    let w = write(&schema, &unsorted);
    assert_eq!(w.info.nkeys, 0);
    assert!(
        w.summary.warnings[0].contains("row 2"),
        "{:?}",
        w.summary.warnings
    );
    assert!(
        w.summary.warnings[0].contains("ascending"),
        "{:?}",
        w.summary.warnings
    );

    let duplicate = [
        key_batches(&schema, vec![Some(1), Some(5)], vec![Some("a"), None]),
        key_batches(&schema, vec![Some(5)], vec![None]),
    ];
    let w = write(&schema, &duplicate);
    assert_eq!(w.info.nkeys, 0);
    assert!(
        w.summary.warnings[0].contains("rows 1 and 2"),
        "{:?}",
        w.summary.warnings
    );
    assert!(
        w.summary.warnings[0].contains("unique"),
        "{:?}",
        w.summary.warnings
    );
}

#[test]
fn invalid_key_requests_become_warnings() {
    for (k, warned) in [
        ("0", false),
        ("x", true),
        ("4", true),
        ("-1", true),
        ("", true),
    ] {
        let schema = key_schema(k);
        let w = write(
            &schema,
            &[key_batches(&schema, vec![Some(1)], vec![Some("a")])],
        );
        assert_eq!(w.info.nkeys, 0, "{k}");
        assert_eq!(
            !w.summary.warnings.is_empty(),
            warned,
            "{k}: {:?}",
            w.summary.warnings
        );
    }
    let schema = keyed(schema_of(vec![field("l", list_of(DataType::Int8))]), "1");
    let list = ListArray::from_iter_primitive::<Int8Type, _, _>(vec![Some(vec![Some(1)])]);
    let w = write(&schema, &[batch_of(&schema, vec![Arc::new(list)])]);
    assert_eq!(w.info.nkeys, 0);
    assert!(
        w.summary.warnings[0].contains("list"),
        "{:?}",
        w.summary.warnings
    );
}

#[test]
fn float_keys_sort_nan_as_na_and_negative_zero_first() {
    let schema = keyed(schema_of(vec![field("f", DataType::Float64)]), "1");
    let one = |v: Vec<Option<f64>>| batch_of(&schema, vec![Arc::new(Float64Array::from(v))]);
    let w = write(
        &schema,
        &[
            one(vec![Some(f64::NAN), Some(-0.0)]),
            one(vec![Some(0.0), Some(1.0)]),
        ],
    );
    assert_eq!(w.info.nkeys, 1, "{:?}", w.summary.warnings);
    let w = write(&schema, &[one(vec![Some(1.0), Some(f64::NAN)])]);
    assert_eq!(w.info.nkeys, 0, "NaN is NA, which sorts first");
    let w = write(&schema, &[one(vec![None, Some(f64::NAN)])]);
    assert_eq!(w.info.nkeys, 0, "null and NaN are the same NA");
    let w = write(&schema, &[one(vec![Some(0.0), Some(-0.0)])]);
    assert_eq!(w.info.nkeys, 0, "+0.0 after −0.0 only");
}

#[test]
fn collisions_written_as_na_sort_as_na_in_keys() {
    let schema = keyed(schema_of(vec![field("i", DataType::Int16)]), "1");
    let batch = batch_of(
        &schema,
        vec![Arc::new(Int16Array::from(vec![Some(3), Some(i16::MIN)]))],
    );
    let w = try_write(
        &schema,
        &[batch],
        options().with_sentinel_collisions(CollisionPolicy::AsNull),
    )
    .unwrap();
    assert_eq!(w.info.nkeys, 0, "3 then NA is not ascending");
}

// ---------------------------------------------------------------------------------------------
// datatable itself

/// Writes the every-type frame and asks datatable 1.1 (and the fixture tool) to read it.
/// Needs `target/venv` with datatable: run through `scripts/test.sh`, or
/// `cargo test -- --ignored datatable`.
#[test]
#[ignore = "needs datatable: run scripts/test.sh"]
fn datatable_reads_what_we_write() {
    let python = std::env::var_os("JAY_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("target/venv/bin/python"));
    let jaydump = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/fixtures/jay/jaydump.py");
    assert!(
        python.exists() && jaydump.exists(),
        "needs {} with datatable 1.1 (or JAY_PYTHON) and {}",
        python.display(),
        jaydump.display()
    );
    let (schema, batches) = every_type();
    let w = write(&schema, &batches);
    let check = std::process::Command::new(&python)
        .arg(&jaydump)
        .arg("--check")
        .arg(&w.path)
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&check.stdout);
    assert!(out.trim().ends_with("ok"), "{out}");
    let script = r#"
import sys, json, math, datatable as dt
f = dt.fread(sys.argv[1])
def enc(v):
    if isinstance(v, float) and math.isinf(v): return "inf" if v > 0 else "-inf"
    if isinstance(v, list): return [enc(x) for x in v]
    if hasattr(v, "isoformat"): return v.isoformat()
    return v
# datatable trusts stored stats and NA counts: compare them with a frame rebuilt from values.
bad = []
for i, st in enumerate(f.stypes):
    if st in (dt.stype.str32, dt.stype.str64, dt.stype.arr32, dt.stype.arr64, dt.stype.void):
        continue
    if f.names[i] == "ts_ns":  # ±(2^63 - 1) ns: Python datetimes (µs) cannot rebuild it
        continue
    g = dt.Frame(f[:, i].to_list()[0], stype=st)
    for stat in ("min", "max", "countna"):
        a, b = getattr(f[:, i], stat)()[0, 0], getattr(g, stat)()[0, 0]
        same = (a == b) or (a is None and b is None) or (isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b))
        if not same:
            bad.append([f.names[i], stat, str(a), str(b)])
print(json.dumps({"names": list(f.names), "stypes": [str(s) for s in f.stypes],
                  "values": enc(f.to_list()), "bad_stats": bad}))
"#;
    let run = std::process::Command::new(&python)
        .arg("-c")
        .arg(script)
        .arg(&w.path)
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let got: serde_json::Value = serde_json::from_slice(&run.stdout).unwrap();
    assert_eq!(got["bad_stats"].to_string(), "[]", "stats datatable trusts");
    let values = &got["values"];
    let col = |name: &str| {
        let i = schema.index_of(name).unwrap();
        values[i].to_string()
    };
    assert_eq!(
        col("i32"),
        "[null,2147483647,-2147483647,0,null,2147483647,-2147483647,0]"
    );
    assert_eq!(col("b"), "[true,null,false,true,true,null,false,true]");
    assert_eq!(
        col("s"),
        r#"["Life","",null,"ünïcødé ✓ 𝄞","Life","",null,"ünïcødé ✓ 𝄞"]"#
    );
    assert_eq!(
        col("ds"),
        r#"["cat",null,"dog","cat","cat",null,"dog","cat"]"#
    );
    assert_eq!(
        col("u64"),
        "[9223372036854775807,null,0,1,9223372036854775807,null,0,1]"
    );
    assert_eq!(col("f32"), r#"[-0.0,null,null,"inf",-0.0,null,null,"inf"]"#);
    assert_eq!(col("v"), "[null,null,null,null,null,null,null,null]");
    assert_eq!(col("l"), "[[1,null],null,[],[-7],[2,null],null,[],[-7]]");
    assert_eq!(
        col("nested"),
        "[[[1.5],null],null,[[null,null]],[],[[1.5],null],null,[[null,null]],[]]"
    );
    assert_eq!(
        col("lv"),
        "[[null],[],null,[null,null],[null],[],null,[null,null]]"
    );
    assert_eq!(
        col("d64"),
        r#"["1970-01-01","1969-12-31",null,"2020-01-02","1970-01-01","1969-12-31",null,"2020-01-02"]"#
    );
    assert_eq!(
        col("ts_s"),
        r#"["1970-01-01T00:00:01",null,"1969-12-31T23:59:59","1970-01-01T00:00:00","1970-01-01T00:00:01",null,"1969-12-31T23:59:59","1970-01-01T00:00:01"]"#
    );
}

// ---------------------------------------------------------------------------------------------
// Property: Arrow → Jay → Arrow over random schemas, NA patterns, slices and batchings.

mod round_trip {
    use super::*;
    use proptest::prelude::*;

    #[derive(Debug, Clone)]
    enum Kind {
        Bool,
        I8,
        I16,
        I32,
        I64,
        U8,
        U16,
        U32,
        U64,
        F16,
        F32,
        F64,
        Utf8,
        LargeUtf8,
        View,
        Dict,
        Date32,
        Date64,
        Ts(TimeUnit, bool),
        Null,
        List(Box<Kind>),
        LargeList(Box<Kind>),
    }

    fn kind() -> impl Strategy<Value = Kind> {
        let leaf = prop_oneof![
            Just(Kind::Bool),
            Just(Kind::I8),
            Just(Kind::I16),
            Just(Kind::I32),
            Just(Kind::I64),
            Just(Kind::U8),
            Just(Kind::U16),
            Just(Kind::U32),
            Just(Kind::U64),
            Just(Kind::F16),
            Just(Kind::F32),
            Just(Kind::F64),
            Just(Kind::Utf8),
            Just(Kind::LargeUtf8),
            Just(Kind::View),
            Just(Kind::Dict),
            Just(Kind::Date32),
            Just(Kind::Date64),
            Just(Kind::Ts(TimeUnit::Second, false)),
            Just(Kind::Ts(TimeUnit::Millisecond, true)),
            Just(Kind::Ts(TimeUnit::Microsecond, false)),
            Just(Kind::Ts(TimeUnit::Nanosecond, true)),
            Just(Kind::Null),
        ];
        leaf.prop_recursive(2, 6, 1, |inner| {
            prop_oneof![
                inner.clone().prop_map(|k| Kind::List(Box::new(k))),
                inner.prop_map(|k| Kind::LargeList(Box::new(k))),
            ]
        })
    }

    fn data_type(k: &Kind) -> DataType {
        match k {
            Kind::Bool => DataType::Boolean,
            Kind::I8 => DataType::Int8,
            Kind::I16 => DataType::Int16,
            Kind::I32 => DataType::Int32,
            Kind::I64 => DataType::Int64,
            Kind::U8 => DataType::UInt8,
            Kind::U16 => DataType::UInt16,
            Kind::U32 => DataType::UInt32,
            Kind::U64 => DataType::UInt64,
            Kind::F16 => DataType::Float16,
            Kind::F32 => DataType::Float32,
            Kind::F64 => DataType::Float64,
            Kind::Utf8 => DataType::Utf8,
            Kind::LargeUtf8 => DataType::LargeUtf8,
            Kind::View => DataType::Utf8View,
            Kind::Dict => DataType::Dictionary(Box::new(DataType::Int16), Box::new(DataType::Utf8)),
            Kind::Date32 => DataType::Date32,
            Kind::Date64 => DataType::Date64,
            Kind::Ts(unit, tz) => ts(*unit, tz.then_some("+05:30")),
            Kind::Null => DataType::Null,
            Kind::List(k) => list_of(data_type(k)),
            Kind::LargeList(k) => large_list_of(data_type(k)),
        }
    }

    /// SplitMix64: reproducible values from the proptest seed.
    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = self.0;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^ (z >> 31)
        }
        fn below(&mut self, n: u64) -> u64 {
            self.next() % n.max(1)
        }
        fn chance(&mut self, percent: u64) -> bool {
            self.below(100) < percent
        }
        /// Mostly small values, sometimes the extremes of the type.
        fn int(&mut self, min: i64, max: i64) -> i64 {
            match self.below(10) {
                0 => min,
                1 => max,
                2..=5 => self.below(200) as i64 - 100,
                _ => {
                    let span = (max as i128 - min as i128 + 1) as u128;
                    (min as i128 + (self.next() as u128 % span) as i128) as i64
                }
            }
        }
        fn float(&mut self) -> f64 {
            match self.below(12) {
                0 => f64::NAN,
                1 => f64::INFINITY,
                2 => f64::NEG_INFINITY,
                3 => -0.0,
                4 => 0.0,
                _ => (self.next() as i64 as f64) / (1u64 << (self.below(60))) as f64,
            }
        }
        fn text(&mut self) -> String {
            const PIECES: [&str; 8] = ["a", "B", "é", "日本", "𝄞", "\0", " ", "xyz"];
            (0..self.below(6))
                .map(|_| PIECES[self.below(8) as usize])
                .collect()
        }
    }

    /// An array of `n` values of kind `k`; `min_ok` lets integer values hit the Jay sentinel.
    fn array(k: &Kind, n: usize, rng: &mut Rng, null_pct: u64, min_ok: bool) -> ArrayRef {
        let valid = |rng: &mut Rng| !rng.chance(null_pct);
        macro_rules! ints {
            ($arr:ty, $t:ty, $lo:expr) => {{
                let lo = if min_ok { <$t>::MIN as i64 } else { $lo as i64 };
                Arc::new(
                    (0..n)
                        .map(|_| valid(rng).then(|| rng.int(lo, <$t>::MAX as i64) as $t))
                        .collect::<$arr>(),
                ) as ArrayRef
            }};
        }
        match k {
            Kind::Bool => Arc::new(
                (0..n)
                    .map(|_| valid(rng).then(|| rng.chance(50)))
                    .collect::<BooleanArray>(),
            ),
            Kind::I8 => ints!(Int8Array, i8, i8::MIN + 1),
            Kind::I16 => ints!(Int16Array, i16, i16::MIN + 1),
            Kind::I32 => ints!(Int32Array, i32, i32::MIN + 1),
            Kind::I64 => ints!(Int64Array, i64, i64::MIN + 1),
            Kind::Date32 => ints!(Date32Array, i32, i32::MIN + 1),
            Kind::U8 => ints!(UInt8Array, u8, 0),
            Kind::U16 => ints!(UInt16Array, u16, 0),
            Kind::U32 => ints!(UInt32Array, u32, 0),
            Kind::U64 => Arc::new(
                (0..n)
                    .map(|_| valid(rng).then(|| rng.int(0, i64::MAX).unsigned_abs()))
                    .collect::<UInt64Array>(),
            ),
            Kind::F16 => Arc::new(
                (0..n)
                    .map(|_| valid(rng).then(|| half::f16::from_f64(rng.float())))
                    .collect::<Float16Array>(),
            ),
            Kind::F32 => Arc::new(
                (0..n)
                    .map(|_| valid(rng).then(|| rng.float() as f32))
                    .collect::<Float32Array>(),
            ),
            Kind::F64 => Arc::new(
                (0..n)
                    .map(|_| valid(rng).then(|| rng.float()))
                    .collect::<Float64Array>(),
            ),
            Kind::Utf8 | Kind::LargeUtf8 | Kind::View | Kind::Dict => {
                let values: Vec<Option<String>> =
                    (0..n).map(|_| valid(rng).then(|| rng.text())).collect();
                let values = values.iter().map(|v| v.as_deref());
                match k {
                    Kind::Utf8 => Arc::new(values.collect::<StringArray>()),
                    Kind::LargeUtf8 => Arc::new(values.collect::<LargeStringArray>()),
                    Kind::View => Arc::new(values.collect::<StringViewArray>()),
                    _ => Arc::new(values.collect::<DictionaryArray<Int16Type>>()),
                }
            }
            Kind::Date64 => {
                let lo = if min_ok {
                    i32::MIN as i64
                } else {
                    i32::MIN as i64 + 1
                };
                Arc::new(
                    (0..n)
                        .map(|_| valid(rng).then(|| rng.int(lo, i32::MAX as i64) * 86_400_000))
                        .collect::<Date64Array>(),
                )
            }
            Kind::Ts(unit, tz) => {
                let factor = match unit {
                    TimeUnit::Second => 1_000_000_000,
                    TimeUnit::Millisecond => 1_000_000,
                    TimeUnit::Microsecond => 1_000,
                    TimeUnit::Nanosecond => 1,
                };
                let lo = if min_ok && factor == 1 {
                    i64::MIN
                } else {
                    i64::MIN / factor + 1
                };
                let values: Vec<Option<i64>> = (0..n)
                    .map(|_| valid(rng).then(|| rng.int(lo, i64::MAX / factor)))
                    .collect();
                let tz = tz.then_some("+05:30");
                match unit {
                    TimeUnit::Second => {
                        Arc::new(TimestampSecondArray::from(values).with_timezone_opt(tz))
                    }
                    TimeUnit::Millisecond => {
                        Arc::new(TimestampMillisecondArray::from(values).with_timezone_opt(tz))
                    }
                    TimeUnit::Microsecond => {
                        Arc::new(TimestampMicrosecondArray::from(values).with_timezone_opt(tz))
                    }
                    TimeUnit::Nanosecond => {
                        Arc::new(TimestampNanosecondArray::from(values).with_timezone_opt(tz))
                    }
                }
            }
            Kind::Null => Arc::new(NullArray::new(n)),
            Kind::List(inner) | Kind::LargeList(inner) => {
                let mut offsets = vec![0usize];
                for _ in 0..n {
                    let len = rng.below(4) as usize;
                    offsets.push(offsets.last().unwrap() + len);
                }
                let child = array(inner, *offsets.last().unwrap(), rng, null_pct, min_ok);
                let nulls: Vec<bool> = (0..n).map(|_| valid(rng)).collect();
                let nulls = Some(NullBuffer::from(nulls)).filter(|b| b.null_count() > 0);
                let item = Arc::new(Field::new("item", child.data_type().clone(), true));
                match k {
                    Kind::List(_) => Arc::new(ListArray::new(
                        item,
                        OffsetBuffer::new(ScalarBuffer::from(
                            offsets.iter().map(|&o| o as i32).collect::<Vec<_>>(),
                        )),
                        child,
                        nulls,
                    )),
                    _ => Arc::new(LargeListArray::new(
                        item,
                        OffsetBuffer::new(ScalarBuffer::from(
                            offsets.iter().map(|&o| o as i64).collect::<Vec<_>>(),
                        )),
                        child,
                        nulls,
                    )),
                }
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

        #[test]
        fn arrow_jay_arrow(
            kinds in prop::collection::vec(kind(), 0..6),
            sizes in prop::collection::vec(0usize..40, 0..5),
            big in prop::bool::weighted(0.15),
            seed in any::<u64>(),
            null_pct in prop_oneof![Just(0u64), Just(10), Just(50), Just(100)],
            as_null in any::<bool>(),
            spill in any::<bool>(),
            small_limit in prop::bool::weighted(0.3),
        ) {
            let mut rng = Rng(seed);
            let schema = schema_of(
                kinds.iter().enumerate().map(|(i, k)| field(&format!("c{i}"), data_type(k))).collect(),
            );
            let mut sizes = sizes;
            if big {
                sizes.push(4000);
            }
            let batches: Vec<RecordBatch> = sizes
                .iter()
                .map(|&n| {
                    // Generate more rows than needed and slice, so that offsets are non-zero.
                    let skip = rng.below(5) as usize;
                    let columns: Vec<ArrayRef> = kinds
                        .iter()
                        .map(|k| array(k, n + skip, &mut rng, null_pct, as_null).slice(skip, n))
                        .collect();
                    RecordBatch::try_new_with_options(
                        schema.clone(),
                        columns,
                        &RecordBatchOptions::new().with_row_count(Some(n)),
                    )
                    .unwrap()
                })
                .collect();
            let mut opts = options()
                .with_memory_limit(if spill { 0 } else { usize::MAX })
                .with_sentinel_collisions(if as_null { CollisionPolicy::AsNull } else { CollisionPolicy::Error });
            if small_limit {
                opts = opts.with_offset32_limit(50);
            }
            let w = try_write(&schema, &batches, opts).unwrap();
            prop_assert_eq!(w.info.nrows, sizes.iter().sum::<usize>() as u64);
            for (i, f) in schema.fields().iter().enumerate() {
                let inputs: Vec<&dyn Array> = batches.iter().map(|b| b.column(i).as_ref()).collect();
                if inputs.is_empty() {
                    prop_assert_eq!(w.column(f.name()).nrows, 0);
                    continue;
                }
                assert_column(&w, f.name(), &inputs, as_null);
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Speed

/// Times the write of bench_datatable.py's "3col" frame (10M rows: int32 i, float64 i/2,
/// str32 str(i % 100003), NA in every column where i % 97 == 0) in 64Ki-row batches and in one
/// batch. Run: `cargo test --release --test jay_writer write_speed -- --ignored --nocapture`
/// (JAY_BENCH_ROWS, JAY_BENCH_DIR to change the size and the directory).
#[test]
#[ignore = "a timing, not a test: run it in release mode"]
fn write_speed() {
    let rows: usize = std::env::var("JAY_BENCH_ROWS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(10_000_000);
    let dir = match std::env::var("JAY_BENCH_DIR") {
        Ok(d) => tempfile::tempdir_in(d).unwrap(),
        Err(_) => tempfile::tempdir().unwrap(),
    };
    let schema = schema_of(vec![
        field("i32", DataType::Int32),
        field("f64", DataType::Float64),
        field("s32", DataType::Utf8),
    ]);
    let na = |i: usize| i % 97 == 0;
    let make = |rows: std::ops::Range<usize>| {
        batch_of(
            &schema,
            vec![
                Arc::new(Int32Array::from_iter(
                    rows.clone().map(|i| (!na(i)).then_some(i as i32)),
                )),
                Arc::new(Float64Array::from_iter(
                    rows.clone().map(|i| (!na(i)).then_some(i as f64 * 0.5)),
                )),
                Arc::new(StringArray::from_iter(
                    rows.map(|i| (!na(i)).then(|| (i % 100_003).to_string())),
                )),
            ],
        )
    };
    // Separate arrays per batch, as a reader produces them.
    let batches: Vec<RecordBatch> = (0..rows)
        .step_by(65_536)
        .map(|s| make(s..(s + 65_536).min(rows)))
        .collect();
    let whole = make(0..rows);
    let path = dir.path().join("bench.jay");
    /// User + system CPU seconds of this process so far (Linux).
    fn cpu_seconds() -> f64 {
        let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
        let fields: Vec<&str> = stat
            .rsplit(')')
            .next()
            .unwrap_or("")
            .split_whitespace()
            .collect();
        let ticks: f64 = fields.get(11..13).map_or(0.0, |f| {
            f.iter().map(|t| t.parse::<f64>().unwrap_or(0.0)).sum()
        });
        ticks / 100.0
    }
    let run = |label: &str, batches: &[RecordBatch], options: WriterOptions| {
        let mut times = Vec::new();
        let mut cpu = f64::MAX;
        for _ in 0..5 {
            let _ = std::fs::remove_file(&path);
            let c = cpu_seconds();
            let t = std::time::Instant::now();
            let mut w = Writer::try_new(&path, schema.clone(), options.clone()).unwrap();
            for b in batches {
                w.write(b).unwrap();
            }
            let written = t.elapsed().as_secs_f64();
            w.finish().unwrap();
            times.push((t.elapsed().as_secs_f64(), written));
            cpu = cpu.min(cpu_seconds() - c);
        }
        times.sort_by(|a, b| a.0.total_cmp(&b.0));
        let size = std::fs::metadata(&path).unwrap().len() as f64;
        println!(
            "{label:<40} best {:.3} s (write {:.3} + finish {:.3})  median {:.3} s  {:5.0} MB/s  \
             cpu {cpu:.2} s  ({:.1} MB)",
            times[0].0,
            times[0].1,
            times[0].0 - times[0].1,
            times[2].0,
            size / 1e6 / times[0].0,
            size / 1e6
        );
    };
    let fast = WriterOptions::default().with_durable(false);
    run("64Ki-row batches", &batches, fast.clone());
    run(
        "64Ki-row batches, memory limit 64 MiB",
        &batches,
        fast.clone().with_memory_limit(64 << 20),
    );
    run(
        "64Ki-row batches, spill every batch",
        &batches,
        fast.clone().with_memory_limit(0),
    );
    run(
        "64Ki-row batches, durable (fsync)",
        &batches,
        WriterOptions::default(),
    );
    run("one batch", std::slice::from_ref(&whole), fast);
}

#[test]
fn keys_of_every_comparable_type() {
    let day = 86_400_000i64;
    let columns: Vec<(DataType, ArrayRef)> = vec![
        (
            DataType::Boolean,
            Arc::new(BooleanArray::from(vec![None, Some(false), Some(true)])),
        ),
        (
            DataType::UInt64,
            Arc::new(UInt64Array::from(vec![
                None,
                Some(0),
                Some(u32::MAX as u64 + 1),
            ])),
        ),
        (
            DataType::Float16,
            Arc::new(Float16Array::from(vec![
                None,
                Some(half::f16::NEG_INFINITY),
                Some(half::f16::ONE),
            ])),
        ),
        (
            DataType::LargeUtf8,
            Arc::new(LargeStringArray::from(vec![None, Some(""), Some("a")])),
        ),
        (
            DataType::Utf8View,
            Arc::new(StringViewArray::from(vec![None, Some("Z"), Some("a")])),
        ),
        (
            DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Utf8)),
            // Keys out of value order: the key sorts by value ("b" < "c"), not by dictionary key.
            Arc::new(DictionaryArray::<Int32Type>::new(
                Int32Array::from(vec![None, Some(1), Some(0)]),
                Arc::new(StringArray::from(vec!["c", "b"])),
            )),
        ),
        (
            DataType::Date64,
            Arc::new(Date64Array::from(vec![None, Some(-day), Some(day)])),
        ),
        (
            ts(TimeUnit::Millisecond, Some("UTC")),
            Arc::new(
                TimestampMillisecondArray::from(vec![None, Some(-1), Some(1)]).with_timezone("UTC"),
            ),
        ),
    ];
    for (data_type, array) in columns {
        let schema = keyed(schema_of(vec![field("k", data_type.clone())]), "1");
        let sorted = batch_of(&schema, vec![array.clone()]);
        let w = write(&schema, &[sorted.slice(0, 2), sorted.slice(2, 1)]);
        assert_eq!(w.info.nkeys, 1, "{data_type}: {:?}", w.summary.warnings);
        let reversed =
            arrow::compute::take(&array, &UInt32Array::from(vec![2, 1, 0]), None).unwrap();
        let w = write(&schema, &[batch_of(&schema, vec![reversed])]);
        assert_eq!(w.info.nkeys, 0, "{data_type}");
    }
    // A void key column is all NA: unique only with at most one row.
    let schema = keyed(schema_of(vec![field("v", DataType::Null)]), "1");
    let one = batch_of(&schema, vec![Arc::new(NullArray::new(1))]);
    assert_eq!(write(&schema, std::slice::from_ref(&one)).info.nkeys, 1);
    assert_eq!(write(&schema, &[one.clone(), one]).info.nkeys, 0);
}

/// Peak memory while writing a 10M-row, 208 MB file from batches generated one at a time:
/// about the memory limit plus a batch, not the file size. Process-wide, so run it alone:
/// `cargo test --release --test jay_writer peak_memory -- --ignored --nocapture`.
#[test]
#[ignore = "a measurement of the whole process: run it alone"]
fn peak_memory() {
    fn peak_rss_mb() -> f64 {
        let status = std::fs::read_to_string("/proc/self/status").unwrap();
        let line = status.lines().find(|l| l.starts_with("VmHWM:")).unwrap();
        line.split_whitespace()
            .nth(1)
            .unwrap()
            .parse::<f64>()
            .unwrap()
            / 1024.0
    }
    let rows = 10_000_000usize;
    let schema = schema_of(vec![
        field("i32", DataType::Int32),
        field("f64", DataType::Float64),
        field("s32", DataType::Utf8),
    ]);
    let make = |range: std::ops::Range<usize>| {
        let na = |i: usize| i % 97 == 0;
        batch_of(
            &schema,
            vec![
                Arc::new(Int32Array::from_iter(
                    range.clone().map(|i| (!na(i)).then_some(i as i32)),
                )),
                Arc::new(Float64Array::from_iter(
                    range.clone().map(|i| (!na(i)).then_some(i as f64 * 0.5)),
                )),
                Arc::new(StringArray::from_iter(
                    range.map(|i| (!na(i)).then(|| (i % 100_003).to_string())),
                )),
            ],
        )
    };
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let before = peak_rss_mb();
    let limit = 32 << 20;
    let path = dir.path().join("big.jay");
    let mut w = Writer::try_new(&path, schema.clone(), options().with_memory_limit(limit)).unwrap();
    for start in (0..rows).step_by(65_536) {
        w.write(&make(start..(start + 65_536).min(rows))).unwrap();
    }
    w.finish().unwrap();
    let size = std::fs::metadata(&path).unwrap().len() as f64 / 1e6;
    let grew = peak_rss_mb() - before;
    println!("file {size:.0} MB, memory limit 32 MiB: peak RSS grew by {grew:.0} MB");
    assert!(grew < 100.0, "peak memory grew by {grew} MB");
}

#[test]
fn a_string_view_outside_its_buffers_is_an_error_not_a_panic() {
    // Only unsafe code (or a foreign producer over the C interface) builds such a view: 16 bytes
    // from offset 10 of a 20-byte data buffer. The write fails naming it, and nothing is left.
    let schema = schema_of(vec![field("s", DataType::Utf8View)]);
    let data = Buffer::from(b"0123456789abcdefghij".as_slice());
    let past_the_end: u128 = 16 | (u128::from(u32::from_le_bytes(*b"abcd")) << 32) | (10u128 << 96);
    let inline: u128 = 3 | (u128::from(u32::from_le_bytes(*b"xyz\0")) << 32);
    let views = ScalarBuffer::from(vec![inline, past_the_end]);
    // SAFETY: deliberately invalid (the second view points past its buffer); the writer must
    // check views before it reads through them.
    let bad = unsafe { StringViewArray::new_unchecked(views, vec![data], None) };
    let batch = batch_of(&schema, vec![Arc::new(bad)]);
    let dir = tempfile::tempdir().unwrap();
    for memory_limit in [0, usize::MAX] {
        let options = options().with_memory_limit(memory_limit);
        let mut writer =
            Writer::try_new(dir.path().join("x.jay"), schema.clone(), options).unwrap();
        // Refused by `write()`, or by `finish()` when the writer holds the batch.
        let err = match writer.write(&batch) {
            Err(err) => {
                assert!(writer.finish().is_err());
                err
            }
            Ok(()) => writer.finish().unwrap_err(),
        };
        assert_eq!(err.class(), ErrorClass::BadValue, "{err}");
        assert!(err.to_string().contains("outside"), "{err}");
        assert_eq!(err.row(), Some(1), "{err}");
        assert!(!dir.path().join("x.jay").exists());
    }
}

#[test]
fn batches_held_to_the_end_make_the_same_bytes_as_batches_encoded_on_arrival() {
    // Under its memory limit the writer keeps a file's batches and encodes each column straight
    // into its place at `finish()`; with a limit of 0 it encodes every batch as it comes. Both
    // must make the same file, for every flat column kind: nulls, text in the middle and at the
    // end (views, 32- and 64-bit offsets), booleans, void, a batch larger than one encoding
    // slice, and an empty batch.
    let schema = schema_of(vec![
        field("i32", DataType::Int32),
        field("s", DataType::Utf8),
        field("b", DataType::Boolean),
        field("v", DataType::Null),
        field("f64", DataType::Float64),
        field("ls", DataType::LargeUtf8),
        field("u8", DataType::UInt8),
        field("view", DataType::Utf8View),
    ]);
    let batch = |rows: usize, seed: usize| {
        let text = |i: usize| {
            let k = (i * 7 + seed) % 29;
            (k % 5 != 0).then(|| "x".repeat(k) + &i.to_string())
        };
        batch_of(
            &schema,
            vec![
                Arc::new(Int32Array::from_iter(
                    (0..rows).map(|i| (i % 13 != 0).then_some((i + seed) as i32)),
                )),
                Arc::new(StringArray::from_iter((0..rows).map(text))),
                Arc::new(BooleanArray::from_iter(
                    (0..rows).map(|i| (i % 7 != 0).then_some(i % 3 == 0)),
                )),
                Arc::new(NullArray::new(rows)),
                Arc::new(Float64Array::from_iter_values(
                    (0..rows).map(|i| i as f64 * 0.25 - seed as f64),
                )),
                Arc::new(LargeStringArray::from_iter((0..rows).map(text))),
                Arc::new(UInt8Array::from_iter_values(
                    (0..rows).map(|i| (i % 251) as u8),
                )),
                Arc::new(StringViewArray::from_iter((0..rows).map(|i| text(i + 1)))),
            ],
        )
    };
    let batches = [batch(1000, 1), batch(0, 2), batch(70_000, 3), batch(17, 4)];
    let held = write(&schema, &batches);
    let encoded = try_write(&schema, &batches, options().with_memory_limit(0)).unwrap();
    assert_eq!(held.summary.rows, 71_017);
    assert_eq!(held.bytes, encoded.bytes);

    // The same for one batch (a Polars frame arrives as one), and the frame reads back.
    let whole = arrow::compute::concat_batches(&schema, &batches).unwrap();
    let held = write(&schema, std::slice::from_ref(&whole));
    assert_eq!(held.bytes, encoded.bytes);
    let back = ReaderBuilder::new().build(&held.path).unwrap();
    let back: Vec<RecordBatch> = back.collect::<Result<_, _>>().unwrap();
    let back = arrow::compute::concat_batches(&back[0].schema(), &back).unwrap();
    assert_eq!(back.num_rows(), whole.num_rows());
    for name in ["i32", "s", "b", "f64"] {
        let i = schema.index_of(name).unwrap();
        assert_eq!(
            back.column(i).as_ref(),
            whole.column(i).as_ref(),
            "column {name}"
        );
    }
}

#[test]
fn a_large_scan_decodes_ahead_in_order_and_stops_at_a_damaged_batch() {
    // 300,000 rows × 2 columns is a scan the reader decodes ahead on the pool; batches must
    // still come in row order, and damage in a later batch must end the scan there, after the
    // intact batches before it.
    let rows = 300_000;
    let schema = schema_of(vec![
        field("i", DataType::Int64),
        field("s", DataType::Utf8),
    ]);
    let batch = batch_of(
        &schema,
        vec![
            Arc::new(Int64Array::from_iter_values(0..rows as i64)),
            Arc::new(StringArray::from_iter_values(
                (0..rows).map(|i| format!("{i:06}")),
            )),
        ],
    );
    let w = write(&schema, std::slice::from_ref(&batch));
    let batches: Vec<RecordBatch> = ReaderBuilder::new()
        .with_batch_size(10_000)
        .build(&w.path)
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(batches.len(), 30);
    for (k, b) in batches.iter().enumerate() {
        assert_eq!(b.num_rows(), 10_000);
        assert_eq!(
            b.column(0).as_primitive::<Int64Type>().value(0),
            k as i64 * 10_000
        );
        assert_eq!(
            b.column(1).as_string::<i32>().value(9_999),
            format!("{:06}", k * 10_000 + 9_999)
        );
    }

    // Row 250,000's string (6 bytes a row) gets a byte that is not UTF-8.
    let strdata = w.column("s").strdata.unwrap();
    let mut bytes = w.bytes.clone();
    bytes[strdata.file_offset() as usize + 6 * 250_000] = 0xff;
    let damaged = w.path.with_file_name("damaged.jay");
    std::fs::write(&damaged, &bytes).unwrap();
    let mut reader = ReaderBuilder::new()
        .with_batch_size(10_000)
        .build(&damaged)
        .unwrap();
    for k in 0..25 {
        let b = reader
            .next()
            .unwrap()
            .unwrap_or_else(|e| panic!("batch {k}: {e}"));
        assert_eq!(b.column(0).as_primitive::<Int64Type>().value(0), k * 10_000);
    }
    let err = reader.next().unwrap().unwrap_err();
    assert!(err.to_string().contains("UTF-8"), "{err}");
    assert!(
        reader.next().is_none(),
        "the scan ends at the damaged batch"
    );
}
