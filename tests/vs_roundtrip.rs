//! Arrow → VS → Arrow: every resolution, ranks 0–3, shapes with zero sizes, every compression
//! and random app_data; byte-exact rewrites of the fixtures; the writer's errors.

mod common;

use std::path::Path;
use std::sync::Arc;

use arrow_array::builder::{BooleanBuilder, StringBuilder};
use arrow_array::cast::AsArray;
use arrow_array::{
    Array, ArrayRef, BinaryArray, FixedSizeListArray, Float16Array, Float32Array, Float64Array,
    Int16Array, Int32Array, Int64Array, Int8Array, ListArray, RecordBatch, RecordBatchIterator,
    StringArray, StructArray, UInt16Array, UInt32Array, UInt64Array, UInt8Array,
};
use arrow_schema::{DataType, Field, Schema};
use arrowsmith::vs::{self, AppDataMode, Compression, ReaderBuilder, WriterOptions};
use arrowsmith::ErrorClass;
use common::data;
use proptest::prelude::*;
use serde_json::Value;

fn tensor_field(item: DataType, dims: &[u64], nullable_child: bool) -> Field {
    let n: u64 = dims.iter().product();
    let shape: Vec<String> = dims.iter().map(u64::to_string).collect();
    Field::new(
        "vector",
        DataType::FixedSizeList(Arc::new(Field::new("item", item, nullable_child)), n as i32),
        false,
    )
    .with_metadata(std::collections::HashMap::from([
        (
            "ARROW:extension:name".to_string(),
            "arrow.fixed_shape_tensor".to_string(),
        ),
        (
            "ARROW:extension:metadata".to_string(),
            format!("{{\"shape\":[{}]}}", shape.join(",")),
        ),
    ]))
}

fn write(path: &Path, batch: &RecordBatch, options: WriterOptions) -> arrowsmith::Result<()> {
    let reader = RecordBatchIterator::new(vec![Ok(batch.clone())], batch.schema());
    vs::write_file(path, reader, options).map(|_| ())
}

fn read(path: &Path, mode: AppDataMode) -> Vec<RecordBatch> {
    ReaderBuilder::new()
        .with_app_data(mode)
        .with_batch_size(3)
        .build(path)
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap()
}

fn concat(batches: &[RecordBatch]) -> RecordBatch {
    arrow::compute::concat_batches(&batches[0].schema(), batches).unwrap()
}

/// Element values of every resolution, generated from raw bits so NaN payloads, -0.0 and
/// subnormals are exercised.
fn values_array(kind: usize, bits: &[u64]) -> (ArrayRef, DataType) {
    let a: ArrayRef = match kind {
        0 => Arc::new(arrow_array::BooleanArray::from(
            bits.iter().map(|b| b & 1 == 1).collect::<Vec<_>>(),
        )),
        1 => Arc::new(UInt8Array::from_iter_values(bits.iter().map(|&b| b as u8))),
        2 => Arc::new(Int8Array::from_iter_values(bits.iter().map(|&b| b as i8))),
        3 => Arc::new(UInt16Array::from_iter_values(
            bits.iter().map(|&b| b as u16),
        )),
        4 => Arc::new(Int16Array::from_iter_values(bits.iter().map(|&b| b as i16))),
        5 => Arc::new(UInt32Array::from_iter_values(
            bits.iter().map(|&b| b as u32),
        )),
        6 => Arc::new(Int32Array::from_iter_values(bits.iter().map(|&b| b as i32))),
        7 => Arc::new(UInt64Array::from_iter_values(bits.iter().copied())),
        8 => Arc::new(Int64Array::from_iter_values(bits.iter().map(|&b| b as i64))),
        9 => Arc::new(Float32Array::from_iter_values(
            bits.iter().map(|&b| f32::from_bits(b as u32)),
        )),
        10 => Arc::new(Float64Array::from_iter_values(
            bits.iter().map(|&b| f64::from_bits(b)),
        )),
        11 => Arc::new(StringArray::from_iter_values(
            bits.iter()
                .map(|&b| ["", "a", "β-ß", "日本", "x\"y\\"][(b % 5) as usize]),
        )),
        _ => {
            let mut s = StringBuilder::new();
            for &b in bits {
                s.append_value(
                    [
                        r#"{"a":1}"#,
                        r#"[1,"x",null]"#,
                        "null",
                        "-5",
                        "1.5",
                        r#""ü""#,
                    ][(b % 6) as usize],
                );
            }
            Arc::new(s.finish())
        }
    };
    let t = a.data_type().clone();
    (a, t)
}

/// Bit-exact comparison of two vector columns.
fn same_vectors(a: &dyn Array, b: &dyn Array, json: bool) -> bool {
    let (a, b) = (a.as_fixed_size_list(), b.as_fixed_size_list());
    if a.len() != b.len() || a.value_length() != b.value_length() {
        return false;
    }
    let (va, vb) = (a.values(), b.values());
    match va.data_type() {
        DataType::Boolean => va.as_boolean() == vb.as_boolean(),
        DataType::Utf8 if json => {
            let (sa, sb) = (va.as_string::<i32>(), vb.as_string::<i32>());
            (0..sa.len()).all(|i| {
                serde_json::from_str::<Value>(sa.value(i)).unwrap()
                    == serde_json::from_str::<Value>(sb.value(i)).unwrap()
            })
        }
        DataType::Utf8 => va.as_string::<i32>() == vb.as_string::<i32>(),
        _ => {
            let (da, db) = (va.to_data(), vb.to_data());
            let w = da.data_type().primitive_width().unwrap();
            da.buffers()[0].as_slice()[da.offset() * w..(da.offset() + da.len()) * w]
                == db.buffers()[0].as_slice()[db.offset() * w..(db.offset() + db.len()) * w]
        }
    }
}

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(Value::from),
        "\\PC{0,8}".prop_map(Value::from),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::vec(("\\PC{0,6}", inner), 0..4)
                .prop_map(|kv| Value::Object(kv.into_iter().collect())),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn arrow_vs_arrow(
        kind in 0usize..13,
        dims in prop::collection::vec(0u64..4, 0..4),
        rows in 0usize..5,
        compression in 0u8..3,
        seed in prop::collection::vec(any::<u64>(), 64),
        app in prop::collection::vec(prop::option::of(json_value()), 5),
    ) {
        let n: u64 = dims.iter().product();
        let bits: Vec<u64> = (0..rows as u64 * n).map(|i| seed[(i % 64) as usize].rotate_left(i as u32)).collect();
        let (values, item) = values_array(kind, &bits);
        let json = kind == 12;
        let mut item_field = Field::new("item", item.clone(), true);
        if json {
            item_field = item_field.with_metadata(std::collections::HashMap::from([("ARROW:extension:name".to_string(), "arrow.json".to_string())]));
        }
        let list = FixedSizeListArray::try_new_with_length(Arc::new(item_field.clone()), n as i32, values, None, rows).unwrap();
        let mut field = tensor_field(item, &dims, true);
        field = Field::new("vector", DataType::FixedSizeList(Arc::new(item_field), n as i32), false).with_metadata(field.metadata().clone());
        let app_text: Vec<Option<String>> = app.iter().take(rows).map(|v| v.as_ref().map(|v| v.to_string())).collect();
        let app_array = StringArray::from(app_text.clone());
        let schema = Arc::new(Schema::new(vec![field, Field::new("app_data", DataType::Utf8, true)])
            .with_metadata(std::collections::HashMap::from([("vs.attributes".to_string(), r#"{"k":[1,"β"]}"#.to_string())])));
        let batch = RecordBatch::try_new(schema, vec![Arc::new(list.clone()), Arc::new(app_array)]).unwrap();

        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.vs");
        let compression = [Compression::None, Compression::Gzip, Compression::Snappy][compression as usize];
        write(&path, &batch, WriterOptions::default().with_compression(compression)).unwrap();
        let back = read(&path, AppDataMode::Json);
        let schema = ReaderBuilder::new().build(&path).unwrap();
        let md = arrow_array::RecordBatchReader::schema(&schema).metadata().clone();
        prop_assert_eq!(&md["vs.pack"], &compression.code().to_string());
        prop_assert_eq!(&md["vs.attributes"], r#"{"k":[1,"β"]}"#);
        let dims_json = serde_json::to_string(&dims).unwrap();
        prop_assert_eq!(&md["vs.dimensions"], &dims_json);
        let got_rows: usize = back.iter().map(|b| b.num_rows()).sum();
        prop_assert_eq!(got_rows, rows);
        if rows > 0 {
            let all = concat(&back);
            prop_assert!(same_vectors(all.column(0).as_ref(), &list, json));
            let got = all.column(1).as_string::<i32>();
            for (i, want) in app.iter().take(rows).enumerate() {
                let want = match want { Some(Value::Null) | None => None, Some(v) => Some(v.clone()) };
                let got = (!got.is_null(i)).then(|| serde_json::from_str::<Value>(got.value(i)).unwrap());
                prop_assert_eq!(got, want);
            }
        }
    }
}

#[test]
fn uncompressed_fixtures_rewrite_byte_for_byte() {
    for name in [
        "empty.vs",
        "f64_r1_plain.vs",
        "f64_r0_scalar.vs",
        "string_r1.vs",
        "json_r1.vs",
    ] {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join(name);
        let reader = ReaderBuilder::new()
            .with_app_data(AppDataMode::Msgpack)
            .build(data("vs").join(name))
            .unwrap();
        vs::write_file(&out, reader, WriterOptions::default()).unwrap();
        assert_eq!(
            std::fs::read(&out).unwrap(),
            std::fs::read(data("vs").join(name)).unwrap(),
            "{name}"
        );
        // The JSON mode gives the same bytes too (canonical msgpack both ways).
        let reader = ReaderBuilder::new().build(data("vs").join(name)).unwrap();
        vs::write_file(&out, reader, WriterOptions::default()).unwrap();
        assert_eq!(
            std::fs::read(&out).unwrap(),
            std::fs::read(data("vs").join(name)).unwrap(),
            "{name} (json mode)"
        );
    }
}

#[test]
fn compressed_fixtures_keep_their_values_and_codec() {
    for (name, compression) in [
        ("i16_r2_gzip.vs", Compression::Gzip),
        ("f32_r1_d200_snappy.vs", Compression::Snappy),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join(name);
        // No compression option: the schema's vs.pack decides.
        let reader = ReaderBuilder::new().build(data("vs").join(name)).unwrap();
        vs::write_file(&out, reader, WriterOptions::default()).unwrap();
        let a = concat(&read(&data("vs").join(name), AppDataMode::Msgpack));
        let b = concat(&read(&out, AppDataMode::Msgpack));
        assert_eq!(a, b, "{name}");
        let d = vs::VsFile::open(&out, Default::default())
            .unwrap()
            .describe(10)
            .unwrap();
        assert_eq!(
            d.compression_counts[compression.code() as usize],
            d.live_points
        );
    }
}

#[test]
fn struct_and_plain_columns_become_msgpack_maps() {
    let list = FixedSizeListArray::try_new(
        Arc::new(Field::new("item", DataType::Float32, false)),
        2,
        Arc::new(Float32Array::from(vec![1.0, 2.0, 3.0, 4.0])),
        None,
    )
    .unwrap();
    let ids = Arc::new(Int64Array::from(vec![Some(7), None]));
    let names = Arc::new(StringArray::from(vec!["a", "ü"]));
    let tags = Arc::new(ListArray::from_iter_primitive::<
        arrow_array::types::Int32Type,
        _,
        _,
    >(vec![Some(vec![Some(1), None]), Some(vec![])]));
    let schema = Arc::new(Schema::new(vec![
        Field::new("vector", list.data_type().clone(), false),
        Field::new("id", DataType::Int64, true),
        Field::new("name", DataType::Utf8, false),
        Field::new("tags", tags.data_type().clone(), true),
    ]));
    let batch = RecordBatch::try_new(
        schema,
        vec![
            Arc::new(list.clone()),
            ids.clone(),
            names.clone(),
            tags.clone(),
        ],
    )
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.vs");
    write(&path, &batch, WriterOptions::default()).unwrap();
    let back = concat(&read(&path, AppDataMode::Json));
    let app = back.column(1).as_string::<i32>();
    assert_eq!(app.value(0), r#"{"id":7,"name":"a","tags":[1,null]}"#);
    assert_eq!(app.value(1), r#"{"id":null,"name":"ü","tags":[]}"#);
    // The shape falls back to the list size.
    assert_eq!(
        back.schema().field(0).metadata()["ARROW:extension:metadata"],
        r#"{"shape":[2]}"#
    );

    // The same through a Struct app_data column.
    let st = StructArray::from(vec![
        (
            Arc::new(Field::new("id", DataType::Int64, true)),
            ids as ArrayRef,
        ),
        (
            Arc::new(Field::new("name", DataType::Utf8, false)),
            names as ArrayRef,
        ),
    ]);
    let schema = Arc::new(Schema::new(vec![
        Field::new("vector", list.data_type().clone(), false),
        Field::new("app_data", st.data_type().clone(), true),
    ]));
    let batch = RecordBatch::try_new(schema, vec![Arc::new(list), Arc::new(st)]).unwrap();
    write(&path, &batch, WriterOptions::default()).unwrap();
    let back = concat(&read(&path, AppDataMode::Json));
    assert_eq!(
        back.column(1).as_string::<i32>().value(1),
        r#"{"id":null,"name":"ü"}"#
    );
}

fn one_column(field: Field, array: ArrayRef) -> RecordBatch {
    RecordBatch::try_new(Arc::new(Schema::new(vec![field])), vec![array]).unwrap()
}

#[test]
fn writer_errors_are_clear_and_leave_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad.vs");
    std::fs::write(&path, b"old").unwrap();
    let check = |batch: RecordBatch, want: &str, class: ErrorClass| {
        let e = write(&path, &batch, WriterOptions::default()).unwrap_err();
        assert!(e.to_string().contains(want), "{e}");
        assert_eq!(e.class(), class, "{e}");
        assert_eq!(std::fs::read(&path).unwrap(), b"old");
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names.len(), 1, "{names:?} after {e}");
    };
    // A null vector row and a null element.
    let values = Arc::new(Float32Array::from(vec![
        Some(1.0),
        None,
        Some(3.0),
        Some(4.0),
    ]));
    let item = Arc::new(Field::new("item", DataType::Float32, true));
    let nulls = arrow_buffer::NullBuffer::from(vec![true, false]);
    let list = FixedSizeListArray::try_new(item.clone(), 2, values.clone(), Some(nulls)).unwrap();
    let f = Field::new("vector", list.data_type().clone(), true);
    check(
        one_column(f.clone(), Arc::new(list)),
        "element 1: null",
        ErrorClass::InvalidArgument,
    );
    let values = Arc::new(Float32Array::from(vec![1.0, 2.0, 3.0, 4.0]));
    let nulls = arrow_buffer::NullBuffer::from(vec![true, false]);
    let list = FixedSizeListArray::try_new(item, 2, values, Some(nulls)).unwrap();
    check(
        one_column(f, Arc::new(list)),
        "row 1: null vector",
        ErrorClass::InvalidArgument,
    );
    // A List, a Float16 child, a wrong shape, a permutation.
    let l =
        ListArray::from_iter_primitive::<arrow_array::types::Int32Type, _, _>(vec![Some(vec![
            Some(1),
        ])]);
    check(
        one_column(
            Field::new("vector", l.data_type().clone(), true),
            Arc::new(l),
        ),
        "cast it to FixedSizeList",
        ErrorClass::UnsupportedType,
    );
    let h = FixedSizeListArray::try_new(
        Arc::new(Field::new("item", DataType::Float16, false)),
        1,
        Arc::new(Float16Array::from(vec![half::f16::ONE])),
        None,
    )
    .unwrap();
    check(
        one_column(
            Field::new("vector", h.data_type().clone(), false),
            Arc::new(h),
        ),
        "cast them to Float32",
        ErrorClass::UnsupportedType,
    );
    let values = Arc::new(Float32Array::from(vec![1.0; 6]));
    let list = FixedSizeListArray::try_new(
        Arc::new(Field::new("item", DataType::Float32, false)),
        6,
        values,
        None,
    )
    .unwrap();
    let mut f = tensor_field(DataType::Float32, &[2, 3], false);
    let mut md = f.metadata().clone();
    md.insert(
        "ARROW:extension:metadata".to_string(),
        r#"{"shape":[4,2]}"#.to_string(),
    );
    f = f.with_metadata(md.clone());
    check(
        one_column(f.clone(), Arc::new(list.clone())),
        "holds 8 elements but the list size is 6",
        ErrorClass::InvalidArgument,
    );
    md.insert(
        "ARROW:extension:metadata".to_string(),
        r#"{"shape":[2,3],"dim_names":null,"permutation":[1,0]}"#.to_string(),
    );
    check(
        one_column(f.clone().with_metadata(md.clone()), Arc::new(list.clone())),
        "materialize the tensor in row-major order first",
        ErrorClass::Unsupported,
    );
    // pyarrow's and arrow-rs's spellings of a trivial tensor are accepted.
    md.insert(
        "ARROW:extension:metadata".to_string(),
        r#"{"shape":[2,3],"dim_names":null,"permutations":null}"#.to_string(),
    );
    write(
        &tempfile::tempdir().unwrap().path().join("ok.vs"),
        &one_column(f.with_metadata(md), Arc::new(list)),
        WriterOptions::default(),
    )
    .unwrap();
    // Bad JSON app data names the row.
    let list = FixedSizeListArray::try_new(
        Arc::new(Field::new("item", DataType::Boolean, false)),
        1,
        Arc::new({
            let mut b = BooleanBuilder::new();
            b.append_value(true);
            b.append_value(false);
            b.finish()
        }),
        None,
    )
    .unwrap();
    let schema = Arc::new(Schema::new(vec![
        Field::new("vector", list.data_type().clone(), false),
        Field::new("app_data", DataType::Utf8, true),
        Field::new("extra", DataType::Utf8, true),
    ]));
    let batch = RecordBatch::try_new(
        schema,
        vec![
            Arc::new(list.clone()),
            Arc::new(StringArray::from(vec!["{}", "{"])),
            Arc::new(StringArray::from(vec!["x", "y"])),
        ],
    )
    .unwrap();
    check(
        batch.clone(),
        "columns extra have no place",
        ErrorClass::InvalidArgument,
    );
    let batch = batch.project(&[0, 1]).unwrap();
    check(
        batch,
        "row 1: app_data: invalid JSON",
        ErrorClass::InvalidArgument,
    );
    // Exact mode: msgpack that is not one value.
    let schema = Arc::new(Schema::new(vec![
        Field::new("vector", list.data_type().clone(), false),
        Field::new("app_data", DataType::Binary, true),
    ]));
    let batch = RecordBatch::try_new(
        schema,
        vec![
            Arc::new(list),
            Arc::new(BinaryArray::from(vec![&[0xC0u8][..], &[0xC0, 0xC0][..]])),
        ],
    )
    .unwrap();
    check(batch, "invalid msgpack", ErrorClass::InvalidArgument);
}

#[test]
fn damaged_files_fail_cleanly() {
    // Truncations and single-byte changes of every fixture: an error or a result, never a panic.
    for entry in std::fs::read_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join("data/vs")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().and_then(|e| e.to_str()) != Some("vs") {
            continue;
        }
        let bytes = std::fs::read(&path).unwrap();
        let mut variants = Vec::new();
        for cut in 0..bytes.len() {
            variants.push(bytes[..cut].to_vec());
        }
        for i in 0..bytes.len() {
            for x in [0x00u8, 0xFF, 0x80, 0x01] {
                let mut b = bytes.clone();
                b[i] ^= x;
                variants.push(b);
            }
        }
        for v in variants {
            for mode in [AppDataMode::Json, AppDataMode::Msgpack] {
                if let Ok(reader) = ReaderBuilder::new()
                    .with_app_data(mode)
                    .build_from_bytes(v.clone())
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
fn resource_bounds_hold_for_huge_declared_sizes() {
    // A 4 GiB block length in a 14-byte file.
    let bytes = b"VS\0\0P\xFF\xFF\xFF\xFF\0\0\0\0$".to_vec();
    let e = ReaderBuilder::new().build_from_bytes(bytes).err().unwrap();
    assert!(e.to_string().contains("runs past end of file"), "{e}");
    // dims [2^32-1, 2^32-1, 0] → N = 0; rank 2^32-1 is refused before allocating.
    let meta = |payload: &[u8]| {
        let mut b = b"VS\0\0^".to_vec();
        b.extend_from_slice(&(payload.len() as u32).to_le_bytes());
        b.extend_from_slice(payload);
        b.push(b'$');
        b
    };
    let r = ReaderBuilder::new()
        .build_from_bytes(meta(&[
            3, 0xFF, 0xFF, 0xFF, 0xFF, 0x0F, 0xFF, 0xFF, 0xFF, 0xFF, 0x0F, 0, 12, 0, 0, 0,
        ]))
        .unwrap();
    assert_eq!(
        arrow_array::RecordBatchReader::schema(&r).metadata()["vs.dimensions"],
        "[4294967295,4294967295,0]"
    );
    let e = ReaderBuilder::new()
        .build_from_bytes(meta(&[0xFF, 0xFF, 0xFF, 0xFF, 0x0F, 1]))
        .err()
        .unwrap();
    assert!(e.to_string().contains("rank 4294967295"), "{e}");
    let e = ReaderBuilder::new()
        .build_from_bytes(meta(&[
            2, 0xFF, 0xFF, 0xFF, 0xFF, 0x0F, 0xFF, 0xFF, 0xFF, 0xFF, 0x0F, 12, 0, 0, 0,
        ]))
        .err()
        .unwrap();
    assert!(e.to_string().contains("vector too large"), "{e}");
    // A snappy vector announcing 4 GiB for a 3-float vector fails before allocating.
    let mut f = std::fs::read(data("vs").join("f32_r1_d200_snappy.vs")).unwrap();
    // First point's stored bytes start after: point header 5, option 1, app (1+len), vec_option, len 4.
    let d = vs::VsFile::from_bytes(f.clone(), Default::default())
        .unwrap()
        .describe(4)
        .unwrap();
    let p = d.blocks.iter().find(|b| b.kind == b'P').unwrap().offset as usize;
    let app_len = f[p + 6] as usize;
    let stored = p + 5 + 1 + 1 + app_len + 1 + 4;
    f[stored..stored + 5].copy_from_slice(&[0xFF, 0xFF, 0xFF, 0xFF, 0x0F]);
    let e = ReaderBuilder::new()
        .build_from_bytes(f)
        .unwrap()
        .next()
        .unwrap()
        .unwrap_err();
    assert!(e.to_string().contains("vector length mismatch"), "{e}");
}

#[test]
fn msb_first_varints_are_an_opt_in() {
    // f32_r1_d200_snappy.vs with its dimension written MSB-first: 81 48 instead of C8 01.
    let mut bytes = std::fs::read(data("vs").join("f32_r1_d200_snappy.vs")).unwrap();
    assert_eq!(&bytes[10..12], &[0xC8, 0x01]);
    bytes[10..12].copy_from_slice(&[0x81, 0x48]);
    let reader = ReaderBuilder::new()
        .with_varint_order(vs::VarintOrder::MsbFirst)
        .build_from_bytes(bytes.clone())
        .unwrap();
    let batches: Vec<_> = reader.collect::<Result<_, _>>().unwrap();
    assert_eq!(
        batches[0].column(0).as_fixed_size_list().value_length(),
        200
    );
    // Read as LEB128, 81 48 is 9217 and the vectors no longer fit.
    let reader = ReaderBuilder::new().build_from_bytes(bytes).unwrap();
    assert!(reader.collect::<Result<Vec<_>, _>>().is_err());
}

#[test]
fn parallel_and_sequential_batches_agree() {
    // 3000 points, STRING vectors and app data with nulls: batches of 2048 rows are built in
    // parallel chunks, batches of 7 rows sequentially; the rows must be the same, with every
    // compression (the decompressors are reused from vector to vector).
    let n = 3000usize;
    let strings: Vec<String> = (0..n * 2).map(|i| format!("s{}", i % 37)).collect();
    let list = FixedSizeListArray::try_new(
        Arc::new(Field::new("item", DataType::Utf8, false)),
        2,
        Arc::new(StringArray::from_iter_values(strings)),
        None,
    )
    .unwrap();
    let app: StringArray = (0..n)
        .map(|i| (i % 5 != 0).then(|| format!("{{\"i\":{i},\"b\":[{}]}}", i % 3)))
        .collect();
    let schema = Arc::new(Schema::new(vec![
        Field::new("vector", list.data_type().clone(), false),
        Field::new("app_data", DataType::Utf8, true),
    ]));
    let batch = RecordBatch::try_new(schema, vec![Arc::new(list), Arc::new(app)]).unwrap();
    let dir = tempfile::tempdir().unwrap();
    for compression in [Compression::Snappy, Compression::Gzip, Compression::None] {
        let path = dir.path().join(format!("p_{}.vs", compression.name()));
        write(
            &path,
            &batch,
            WriterOptions::default().with_compression(compression),
        )
        .unwrap();
        let read_with = |size: usize| {
            let batches: Vec<RecordBatch> = ReaderBuilder::new()
                .with_batch_size(size)
                .with_offsets(true)
                .build(&path)
                .unwrap()
                .collect::<Result<_, _>>()
                .unwrap();
            assert!(batches.iter().all(|b| b.num_rows() <= size));
            concat(&batches)
        };
        let (a, b) = (read_with(2048), read_with(7));
        assert_eq!(a, b);
        assert_eq!(a.num_rows(), n);
        assert_eq!(a.column(0), batch.column(0));
        assert_eq!(a.column(1).null_count(), n / 5);
    }
}

#[test]
fn app_data_not_projected_is_validated_not_printed() {
    // app_data {1: true, "1": false} is valid msgpack with no JSON form (the keys clash as
    // JSON). Read with app_data projected it is an error; with only the vector projected it is
    // not needed, so only its msgpack is checked. Broken msgpack is an error either way.
    let n = 600usize;
    let values = Float32Array::from_iter_values((0..n * 2).map(|i| i as f32));
    let list = FixedSizeListArray::try_new(
        Arc::new(Field::new("item", DataType::Float32, false)),
        2,
        Arc::new(values),
        None,
    )
    .unwrap();
    let clash: &[u8] = &[0x82, 0x01, 0xC3, 0xA1, b'1', 0xC2];
    let marked: &[u8] = &[0x92, 0xA4, b'M', b'A', b'R', b'K', 0x07];
    let app =
        BinaryArray::from_iter_values((0..n).map(|i| if i == n - 1 { marked } else { clash }));
    let schema = Arc::new(Schema::new(vec![
        Field::new("vector", list.data_type().clone(), false),
        Field::new("app_data", DataType::Binary, true),
    ]));
    let batch = RecordBatch::try_new(schema, vec![Arc::new(list.clone()), Arc::new(app)]).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("clash.vs");
    write(&path, &batch, WriterOptions::default()).unwrap();
    let read_projected = |path: &Path, columns: &[&str], size: usize| {
        ReaderBuilder::new()
            .with_batch_size(size)
            .with_projection(columns.iter().map(|c| c.to_string()).collect::<Vec<_>>())
            .build(path)
            .unwrap()
            .collect::<Result<Vec<RecordBatch>, _>>()
    };
    for size in [7, 1024] {
        let e = read_projected(&path, &["vector", "app_data"], size).unwrap_err();
        assert!(e.to_string().contains("appears twice"), "{e}");
        let only_vector = concat(&read_projected(&path, &["vector"], size).unwrap());
        assert_eq!(only_vector.num_columns(), 1);
        assert_eq!(only_vector.column(0).as_ref(), &list as &dyn Array);
    }
    // The last point's app_data ["MARK", 7] made a 3-element array: one element short. (With
    // app_data projected, the first point's clash is met first.)
    let mut bytes = std::fs::read(&path).unwrap();
    let at = bytes
        .windows(5)
        .rposition(|w| w == [0x92, 0xA4, b'M', b'A', b'R'])
        .unwrap();
    bytes[at] = 0x93;
    std::fs::write(&path, &bytes).unwrap();
    for size in [7, 1024] {
        let e = read_projected(&path, &["vector"], size).unwrap_err();
        assert!(e.to_string().contains("invalid msgpack"), "{e}");
        assert!(e.to_string().contains("app_data"), "{e}");
    }
}

#[test]
fn parallel_fixed_size_batches_agree() {
    // Fixed-size compressed vectors in batches of 2048 are decompressed by parallel tasks that
    // write straight into the batch's values buffer; batches of 7 rows are built sequentially.
    let n = 3000usize;
    let values = Float32Array::from_iter_values((0..n * 3).map(|i| (i as f32).sin()));
    let list = FixedSizeListArray::try_new(
        Arc::new(Field::new("item", DataType::Float32, false)),
        3,
        Arc::new(values),
        None,
    )
    .unwrap();
    let app: StringArray = (0..n)
        .map(|i| (i % 7 != 0).then(|| format!("{{\"i\":{i},\"s\":\"é{}\"}}", i % 11)))
        .collect();
    let schema = Arc::new(Schema::new(vec![
        Field::new("vector", list.data_type().clone(), false),
        Field::new("app_data", DataType::Utf8, true),
    ]));
    let batch = RecordBatch::try_new(schema, vec![Arc::new(list), Arc::new(app.clone())]).unwrap();
    let dir = tempfile::tempdir().unwrap();
    for compression in [Compression::Snappy, Compression::Gzip, Compression::None] {
        let path = dir.path().join(format!("f_{}.vs", compression.name()));
        write(
            &path,
            &batch,
            WriterOptions::default().with_compression(compression),
        )
        .unwrap();
        let read_with = |size: usize| {
            let batches: Vec<RecordBatch> = ReaderBuilder::new()
                .with_batch_size(size)
                .with_offsets(true)
                .build(&path)
                .unwrap()
                .collect::<Result<_, _>>()
                .unwrap();
            concat(&batches)
        };
        let (a, b) = (read_with(2048), read_with(7));
        assert_eq!(a, b);
        assert_eq!(a.column(0), batch.column(0));
        assert_eq!(a.column(1).as_string::<i32>(), &app);
    }
}
