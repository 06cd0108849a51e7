//! Every fixture dataset written by bcolz(-zipline), read and compared with its expected JSON:
//! names, types, metadata, nulls, head and tail values, and the SHA-256 of the raw bytes
//! rebuilt from Arrow; every bare Blosc chunk decoded; damaged inputs refused.

mod common;

use std::path::{Path, PathBuf};

use arrow_array::cast::AsArray;
use arrow_array::types::*;
use arrow_array::{Array, ArrayRef, RecordBatch};
use arrow_schema::{DataType, TimeUnit};
use arrowsmith::bcolz::{blosc, ReaderBuilder};
use arrowsmith::Error;
use common::{copy_dir, data};
use serde_json::Value;
use sha2::{Digest, Sha256};

fn expected(name: &str) -> Value {
    let text = std::fs::read_to_string(data("bcolz").join("expected").join(format!("{name}.json")))
        .unwrap();
    serde_json::from_str(&text).unwrap()
}

fn all_expected() -> Vec<(String, Value)> {
    let mut out: Vec<(String, Value)> = std::fs::read_dir(data("bcolz").join("expected"))
        .unwrap()
        .map(|e| {
            let p = e.unwrap().path();
            let name = p.file_stem().unwrap().to_str().unwrap().to_owned();
            let v = expected(&name);
            (name, v)
        })
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    assert!(out.len() >= 34, "fixtures missing: {}", out.len());
    out
}

fn read_all(
    path: &Path,
    batch_size: usize,
) -> Result<(arrow_schema::SchemaRef, Vec<RecordBatch>), Error> {
    let reader = ReaderBuilder::new()
        .with_batch_size(batch_size)
        .build(path)?;
    let schema = arrow_array::RecordBatchReader::schema(&reader);
    let batches = reader
        .collect::<Result<Vec<_>, _>>()
        .map_err(Error::from_arrow_owned)?;
    Ok((schema, batches))
}

fn spell(t: &DataType, field: &arrow_schema::Field) -> String {
    let unit = |u: &TimeUnit| match u {
        TimeUnit::Second => "Second",
        TimeUnit::Millisecond => "Millisecond",
        TimeUnit::Microsecond => "Microsecond",
        TimeUnit::Nanosecond => "Nanosecond",
    };
    match t {
        DataType::Timestamp(u, None) => format!("Timestamp({})", unit(u)),
        DataType::Duration(u) => format!("Duration({})", unit(u)),
        DataType::FixedSizeList(child, _) => {
            assert_eq!(
                field
                    .metadata()
                    .get("ARROW:extension:name")
                    .map(String::as_str),
                Some("arrow.fixed_shape_tensor")
            );
            let meta: Value =
                serde_json::from_str(&field.metadata()["ARROW:extension:metadata"]).unwrap();
            let dims: Vec<String> = meta["shape"]
                .as_array()
                .unwrap()
                .iter()
                .map(|d| d.to_string())
                .collect();
            format!(
                "FixedShapeTensor({}, [{}])",
                spell(child.data_type(), field),
                dims.join(", ")
            )
        }
        other => format!("{other:?}"),
    }
}

fn float_json(v: f64) -> Value {
    if v.is_nan() {
        "NaN".into()
    } else if v == f64::INFINITY {
        "Infinity".into()
    } else if v == f64::NEG_INFINITY {
        "-Infinity".into()
    } else if v == 0.0 && v.is_sign_negative() {
        "-0.0".into()
    } else {
        Value::from(v)
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The JSON encoding of the README of value `i` of `array`.
fn value_json(array: &ArrayRef, i: usize) -> Value {
    if array.is_null(i) {
        return Value::Null;
    }
    match array.data_type() {
        DataType::Int8 => array.as_primitive::<Int8Type>().value(i).into(),
        DataType::Int16 => array.as_primitive::<Int16Type>().value(i).into(),
        DataType::Int32 => array.as_primitive::<Int32Type>().value(i).into(),
        DataType::Int64 => array.as_primitive::<Int64Type>().value(i).into(),
        DataType::UInt8 => array.as_primitive::<UInt8Type>().value(i).into(),
        DataType::UInt16 => array.as_primitive::<UInt16Type>().value(i).into(),
        DataType::UInt32 => array.as_primitive::<UInt32Type>().value(i).into(),
        DataType::UInt64 => array.as_primitive::<UInt64Type>().value(i).into(),
        DataType::Float16 => float_json(array.as_primitive::<Float16Type>().value(i).to_f64()),
        DataType::Float32 => float_json(array.as_primitive::<Float32Type>().value(i) as f64),
        DataType::Float64 => float_json(array.as_primitive::<Float64Type>().value(i)),
        DataType::Boolean => array.as_boolean().value(i).into(),
        DataType::Binary => hex(array.as_binary::<i32>().value(i)).into(),
        DataType::Utf8 => array.as_string::<i32>().value(i).into(),
        DataType::Date32 => array.as_primitive::<Date32Type>().value(i).into(),
        DataType::Timestamp(_, _) | DataType::Duration(_) => {
            let data = array.to_data();
            let values: &[i64] = data.buffers()[0].typed_data();
            values[data.offset() + i].into()
        }
        DataType::FixedSizeList(_, _) => {
            let list = array.as_fixed_size_list();
            let row = list.value(i);
            Value::Array((0..row.len()).map(|j| value_json(&row, j)).collect())
        }
        other => panic!("unexpected type {other:?}"),
    }
}

/// Nests a flat tensor row into the tensor shape.
fn nest(flat: &[Value], dims: &[usize]) -> Value {
    if dims.len() <= 1 {
        return Value::Array(flat.to_vec());
    }
    let step = flat.len() / dims[0];
    Value::Array(flat.chunks(step).map(|c| nest(c, &dims[1..])).collect())
}

fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => {
            if let (Some(x), Some(y)) = (x.as_i64(), y.as_i64()) {
                return x == y;
            }
            if let (Some(x), Some(y)) = (x.as_u64(), y.as_u64()) {
                return x == y;
            }
            x.as_f64() == y.as_f64()
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| same(a, b))
        }
        _ => a == b,
    }
}

/// The bytes bcolz stores for `array` (numpy dtype `np`), rebuilt from Arrow.
fn raw_bytes(array: &ArrayRef, np: &str, out: &mut Vec<u8>) {
    let big = np.starts_with('>');
    let code = &np[1..];
    let width: usize = code
        .trim_start_matches(|c: char| c.is_alphabetic())
        .split('[')
        .next()
        .unwrap()
        .parse()
        .unwrap_or(1);
    let push = |out: &mut Vec<u8>, le: &[u8]| {
        if big {
            out.extend(le.iter().rev());
        } else {
            out.extend_from_slice(le);
        }
    };
    match array.data_type() {
        DataType::FixedSizeList(_, _) => {
            raw_bytes(array.as_fixed_size_list().values(), np, out);
        }
        DataType::Boolean => {
            let a = array.as_boolean();
            out.extend((0..a.len()).map(|i| a.value(i) as u8));
        }
        DataType::Binary => {
            let a = array.as_binary::<i32>();
            for i in 0..a.len() {
                let v = a.value(i);
                out.extend_from_slice(v);
                out.extend(std::iter::repeat_n(0u8, width - v.len()));
            }
        }
        DataType::Utf8 => {
            let a = array.as_string::<i32>();
            for i in 0..a.len() {
                let chars: Vec<char> = a.value(i).chars().collect();
                for c in &chars {
                    push(out, &(*c as u32).to_le_bytes());
                }
                for _ in chars.len()..width {
                    out.extend_from_slice(&[0; 4]);
                }
            }
        }
        DataType::Date32 => {
            let a = array.as_primitive::<Date32Type>();
            for i in 0..a.len() {
                let v = if a.is_null(i) {
                    i64::MIN
                } else {
                    a.value(i) as i64
                };
                push(out, &v.to_le_bytes());
            }
        }
        DataType::Timestamp(_, _) | DataType::Duration(_) => {
            let data = array.to_data();
            let values: &[i64] = data.buffers()[0].typed_data();
            for i in 0..array.len() {
                let v = if array.is_null(i) {
                    i64::MIN
                } else {
                    values[data.offset() + i]
                };
                push(out, &v.to_le_bytes());
            }
        }
        _ => {
            let data = array.to_data();
            let size = data.data_type().primitive_width().unwrap();
            let bytes = &data.buffers()[0].as_slice()
                [data.offset() * size..(data.offset() + data.len()) * size];
            for item in bytes.chunks_exact(size) {
                push(out, item);
            }
        }
    }
}

fn check_ok(name: &str, exp: &Value, batch_size: usize) {
    let path = data("bcolz").join("datasets").join(name);
    let (schema, batches) = read_all(&path, batch_size).unwrap_or_else(|e| panic!("{name}: {e}"));
    assert_eq!(
        schema.metadata()["bcolz.kind"],
        exp["kind"].as_str().unwrap(),
        "{name}"
    );
    let attrs = exp["attrs_json"].as_str().unwrap();
    if attrs.trim() == "{}" {
        assert!(!schema.metadata().contains_key("bcolz.attrs"), "{name}");
    } else {
        assert_eq!(schema.metadata()["bcolz.attrs"], attrs.trim_end(), "{name}");
    }
    let nrows: usize = batches.iter().map(|b| b.num_rows()).sum();
    assert_eq!(nrows as u64, exp["nrows"].as_u64().unwrap(), "{name}");
    for b in &batches {
        assert!(b.num_rows() <= batch_size);
    }
    let columns = exp["columns"].as_array().unwrap();
    assert_eq!(schema.fields().len(), columns.len(), "{name}");
    for (c, col) in columns.iter().enumerate() {
        let field = schema.field(c);
        let what = format!("{name}.{}", field.name());
        assert_eq!(field.name(), col["name"].as_str().unwrap(), "{what}");
        assert_eq!(
            spell(field.data_type(), field),
            col["arrow_type"].as_str().unwrap(),
            "{what}"
        );
        assert_eq!(
            field.metadata()["bcolz.dtype"],
            col["bcolz_dtype"].as_str().unwrap(),
            "{what}"
        );
        if let Some(a) = col.get("attrs_json").and_then(Value::as_str) {
            if a.trim() != "{}" {
                assert_eq!(field.metadata()["bcolz.attrs"], a.trim_end(), "{what}");
            }
        }
        let arrays: Vec<ArrayRef> = batches.iter().map(|b| b.column(c).clone()).collect();
        let refs: Vec<&dyn Array> = arrays.iter().map(|a| a.as_ref()).collect();
        let array: ArrayRef = if refs.is_empty() {
            arrow_array::new_empty_array(field.data_type())
        } else {
            arrow::compute::concat(&refs).unwrap()
        };
        assert_eq!(array.len() as u64, col["count"].as_u64().unwrap(), "{what}");
        assert_eq!(
            array.null_count() as u64,
            col["null_count"].as_u64().unwrap(),
            "{what}"
        );
        let nulls: Vec<u64> = (0..array.len())
            .filter(|&i| array.is_null(i))
            .map(|i| i as u64)
            .collect();
        let want_nulls: Vec<u64> = col["null_positions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_u64().unwrap())
            .collect();
        assert_eq!(nulls, want_nulls, "{what}");
        let dims: Vec<usize> = col["shape"].as_array().unwrap()[1..]
            .iter()
            .map(|d| d.as_u64().unwrap() as usize)
            .collect();
        let render = |i: usize| {
            let v = value_json(&array, i);
            match v {
                Value::Array(flat) if !dims.is_empty() => nest(&flat, &dims),
                other => other,
            }
        };
        let head = col["head"].as_array().unwrap();
        for (i, want) in head.iter().enumerate() {
            let got = render(i);
            assert!(same(&got, want), "{what} row {i}: got {got}, want {want}");
        }
        let tail = col["tail"].as_array().unwrap();
        let start = array.len() - tail.len();
        for (j, want) in tail.iter().enumerate() {
            let got = render(start + j);
            assert!(
                same(&got, want),
                "{what} row {}: got {got}, want {want}",
                start + j
            );
        }
        let mut raw = Vec::new();
        raw_bytes(&array, col["numpy_dtype"].as_str().unwrap(), &mut raw);
        assert_eq!(
            hex(&Sha256::digest(&raw)),
            col["raw_sha256"].as_str().unwrap(),
            "{what}: raw bytes"
        );
    }
}

#[test]
fn every_dataset_reads_as_expected() {
    let mut checked = 0;
    for (name, exp) in all_expected() {
        let path = data("bcolz").join("datasets").join(&name);
        if exp["expect"] == "error" {
            let err = read_all(&path, 1000)
                .err()
                .unwrap_or_else(|| panic!("{name} must fail"));
            let text = err.to_string();
            assert!(
                text.contains(exp["bcolz_dtype"].as_str().unwrap_or("")),
                "{name}: {text}"
            );
            checked += 1;
            continue;
        }
        if exp.get("requires_codec").and_then(Value::as_str) == Some("snappy")
            && !cfg!(feature = "bcolz-snappy")
        {
            let err = read_all(&path, 65536)
                .err()
                .unwrap_or_else(|| panic!("{name} must fail"));
            assert!(err.to_string().contains("snappy"), "{name}: {err}");
            checked += 1;
            continue;
        }
        for batch_size in [65_536, 333, 1] {
            if batch_size == 1 && exp["nrows"].as_u64().unwrap() > 3000 {
                continue;
            }
            check_ok(&name, &exp, batch_size);
        }
        checked += 1;
    }
    assert_eq!(checked, 34);
}

#[test]
fn every_bare_chunk_decodes_to_its_manifest() {
    let dir = data("bcolz").join("blosc_chunks");
    let manifest: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("manifest.json")).unwrap()).unwrap();
    let entries = manifest.as_array().unwrap();
    assert_eq!(entries.len(), 28);
    for e in entries {
        let name = e["name"].as_str().unwrap();
        let chunk = std::fs::read(dir.join(format!("{name}.blosc"))).unwrap();
        let header = blosc::parse_header(&chunk).unwrap();
        assert_eq!(
            header.nbytes as u64,
            e["nbytes"].as_u64().unwrap(),
            "{name}"
        );
        assert_eq!(
            header.cbytes as u64,
            e["cbytes"].as_u64().unwrap(),
            "{name}"
        );
        assert_eq!(header.flags as u64, e["flags"].as_u64().unwrap(), "{name}");
        assert_eq!(
            header.typesize as u64,
            e["typesize_hdr"].as_u64().unwrap(),
            "{name}"
        );
        let result = blosc::decompress(&chunk, header.nbytes as usize);
        if e["cname"] == "snappy" && !cfg!(feature = "bcolz-snappy") {
            let err = result.unwrap_err();
            assert!(err.to_string().contains("snappy"), "{name}: {err}");
            continue;
        }
        let raw = result.unwrap_or_else(|err| panic!("{name}: {err}"));
        assert_eq!(
            hex(&Sha256::digest(&raw)),
            e["raw_sha256"].as_str().unwrap(),
            "{name}"
        );
        let head = e["raw_head_hex"].as_str().unwrap();
        assert_eq!(hex(&raw[..raw.len().min(head.len() / 2)]), head, "{name}");
    }
}

#[test]
fn projection_by_name_reads_only_those_columns() {
    let path = data("bcolz").join("datasets/ctable_mixed");
    let reader = ReaderBuilder::new()
        .with_projection(["name", "id"])
        .with_limit(5)
        .build(&path)
        .unwrap();
    let batches: Vec<RecordBatch> = reader.map(Result::unwrap).collect();
    assert_eq!(batches.len(), 1);
    let b = &batches[0];
    assert_eq!(b.num_rows(), 5);
    assert_eq!(b.schema().field(0).name(), "name");
    assert_eq!(b.column(0).as_string::<i32>().value(1), "béta");
    assert_eq!(b.column(1).as_primitive::<Int64Type>().value(4), 4);
    assert!(ReaderBuilder::new()
        .with_projection(["nope"])
        .build(&path)
        .is_err());
}

/// The bcolz read settings reach the generic `open` by key: NaT kept raw, the carray's
/// column named, no read-ahead.
#[test]
fn bcolz_read_settings_reach_the_generic_open() {
    let path = data("bcolz").join("datasets/datetime64_ns");
    let read = |settings: &[(&str, &str)]| {
        let mut options = arrowsmith::ReadOptions::for_format(arrowsmith::Format::Bcolz);
        options.set_all(settings.iter().copied()).unwrap();
        let batches: Vec<RecordBatch> = arrowsmith::open(&path, &options)
            .unwrap()
            .map(Result::unwrap)
            .collect();
        arrow::compute::concat_batches(&batches[0].schema(), &batches).unwrap()
    };
    let default = read(&[]);
    assert_eq!(default.schema().field(0).name(), "datetime64_ns");
    assert_eq!(default.column(0).null_count(), 1);
    let set = read(&[
        ("nat_as_null", "false"),
        ("carray_name", "when"),
        ("read_ahead", "0"),
    ]);
    assert_eq!(set.schema().field(0).name(), "when");
    assert_eq!(set.column(0).null_count(), 0);
    let raw = set.column(0).as_primitive::<TimestampNanosecondType>();
    assert_eq!(raw.value(1), i64::MIN);
    assert_eq!(set.num_rows(), default.num_rows());
}

/// A copy of a fixture dataset in a temporary directory, to damage.
fn scratch(name: &str) -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let dst = tmp.path().join(name);
    copy_dir(&data("bcolz").join("datasets").join(name), &dst);
    (tmp, dst)
}

fn fails_with(path: &Path, needle: &str) {
    let start = std::time::Instant::now();
    let err = read_all(path, 65536)
        .err()
        .unwrap_or_else(|| panic!("{} must fail ({needle})", path.display()));
    let text = err.to_string();
    assert!(text.contains(needle), "{text:?} lacks {needle:?}");
    assert!(
        text.contains(&path.display().to_string()),
        "{text:?} names no file"
    );
    assert!(start.elapsed().as_secs() < 5);
}

#[test]
fn damaged_inputs_are_clear_errors() {
    // Truncated chunk file.
    let (_t, p) = scratch("num_int32");
    let f = p.join("data/__0.blp");
    let bytes = std::fs::read(&f).unwrap();
    std::fs::write(&f, &bytes[..bytes.len() - 10]).unwrap();
    fails_with(&p, "truncated");
    // Missing chunk file.
    std::fs::remove_file(&f).unwrap();
    fails_with(&p, "missing chunk file: it must hold rows 0..1000");
    // Reserved flag bit and undefined codec.
    for (flags, needle) in [(0x29u8, "reserved"), (0xE1, "does not define")] {
        let (_t, p) = scratch("num_int32");
        let f = p.join("data/__1.blp");
        let mut bytes = std::fs::read(&f).unwrap();
        bytes[18] = flags;
        std::fs::write(&f, &bytes).unwrap();
        fails_with(&p, needle);
    }
    // Garbage in the compressed stream: an error, never zeros.
    let (_t, p) = scratch("cp_lz4_sh1");
    let f = p.join("data/__0.blp");
    let mut bytes = std::fs::read(&f).unwrap();
    let n = bytes.len();
    for b in &mut bytes[60..n - 4] {
        *b = 0xFF;
    }
    std::fs::write(&f, &bytes).unwrap();
    fails_with(&p, "c-blosc");
    // shape[0] larger than the chunks hold: the leftover is too short.
    let (_t, p) = scratch("num_int32");
    std::fs::write(
        p.join("meta/sizes"),
        "{\"shape\": [2900], \"nbytes\": 0, \"cbytes\": 0}\n",
    )
    .unwrap();
    fails_with(&p, "leftover chunk must hold at least 3600 bytes");
    // Missing meta files, unknown dtype, garbage JSON.
    let (_t, p) = scratch("num_int32");
    std::fs::remove_file(p.join("meta/storage")).unwrap();
    fails_with(&p, "storage");
    let (_t, p) = scratch("num_int32");
    std::fs::remove_file(p.join("meta/sizes")).unwrap();
    fails_with(&p, "sizes");
    let (_t, p) = scratch("num_int32");
    let storage = std::fs::read_to_string(p.join("meta/storage")).unwrap();
    std::fs::write(p.join("meta/storage"), storage.replace("int32", "int24")).unwrap();
    fails_with(&p, "int24");
    let (_t, p) = scratch("num_int32");
    std::fs::write(p.join("meta/sizes"), "{\"shape\": [25").unwrap();
    fails_with(&p, "invalid JSON");
    // __rootdirs__ naming a missing column, or escaping the directory.
    let (_t, p) = scratch("ctable_altered");
    std::fs::write(p.join("__rootdirs__"), "{\"names\": [\"b\", \"ghost\"]}\n").unwrap();
    fails_with(&p, "ghost");
    std::fs::write(p.join("__rootdirs__"), "{\"names\": [\"../b\"]}\n").unwrap();
    fails_with(&p, "path traversal");
    // Huge sizes are refused before anything is allocated.
    let (_t, p) = scratch("num_int32");
    std::fs::write(
        p.join("meta/storage"),
        storage.replace("\"chunklen\": 1000", "\"chunklen\": 1000000000000"),
    )
    .unwrap();
    fails_with(&p, "limit");
}

#[test]
fn truncations_and_bit_flips_never_panic() {
    let (_t, p) = scratch("cp_zstd_sh1");
    let f = p.join("data/__0.blp");
    let good = std::fs::read(&f).unwrap();
    for cut in [0, 16, 31, 32, 40, good.len() / 2] {
        std::fs::write(&f, &good[..cut]).unwrap();
        assert!(read_all(&p, 65536).is_err(), "cut at {cut}");
    }
    for at in (16..good.len()).step_by(97) {
        let mut bad = good.clone();
        bad[at] ^= 0x5A;
        std::fs::write(&f, &bad).unwrap();
        // Either an error, or (where the flip hits a don't-care byte) the right values.
        if let Ok((_, batches)) = read_all(&p, 65536) {
            assert_eq!(batches.iter().map(|b| b.num_rows()).sum::<usize>(), 40000);
        }
    }
}
