//! The DataSeries writer against the reference: rewriting a reference file's rows with the same
//! XML, extent size, mode and level reproduces the reference's bytes where the codec's output is
//! the C library's (none, zlib through C zlib, bz2, lz4 and lz4hc through liblz4); every written file reads back through our
//! reader, with every check on, to the values of the original.

mod common;

use std::path::Path;

use std::sync::Arc;

use arrow::compute::cast;
use arrow_array::cast::AsArray;
use arrow_array::types::Int32Type;
use arrow_array::{Array, ArrayRef, BinaryArray, DictionaryArray, Int32Array, RecordBatch};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use arrowsmith::dataseries::{
    ByteOrder, DsFile, Mode, OpenOptions, ReaderBuilder, Writer, WriterOptions,
};
use common::{data, ds2txt};

fn read(path: &Path) -> (arrow_schema::SchemaRef, Vec<RecordBatch>) {
    let r = ReaderBuilder::new()
        .build(path)
        .unwrap_or_else(|e| panic!("{e}"));
    let s = arrow_array::RecordBatchReader::schema(&r);
    (
        s,
        r.collect::<Result<Vec<_>, _>>()
            .unwrap_or_else(|e| panic!("{e}")),
    )
}

fn rewrite(src: &Path, dst: &Path, options: WriterOptions) {
    let (schema, batches) = read(src);
    write_in_pieces(dst, schema, &batches, options);
}

fn write_in_pieces(
    dst: &Path,
    schema: arrow_schema::SchemaRef,
    batches: &[RecordBatch],
    options: WriterOptions,
) {
    let mut w = Writer::try_new(dst, schema, options).unwrap();
    // Feed the rows in odd-sized pieces: extent boundaries must not depend on batch boundaries.
    for b in batches {
        let mut s = 0;
        while s < b.num_rows() {
            let n = 7.min(b.num_rows() - s);
            w.write(&b.slice(s, n)).unwrap();
            s += n;
        }
    }
    w.finish().unwrap();
}

fn rendered(path: &Path) -> Vec<String> {
    read(path).1.iter().flat_map(ds2txt::render).collect()
}

fn options(mode: Mode, size: usize) -> WriterOptions {
    WriterOptions::default()
        .with_modes([mode])
        .with_level(9)
        .with_extent_size(size)
}

/// (fixture, mode, extent size) of files whose bytes we reproduce exactly (csv2ds's default level 9).
const IDENTICAL: &[(&str, Mode, usize)] = &[
    ("generated/basic-none.ds", Mode::None, 1024),
    ("generated/basic-zlib.ds", Mode::Zlib, 1024),
    ("generated/basic-bz2.ds", Mode::Bz2, 1024),
    ("generated/basic-lz4hc.ds", Mode::Lz4Hc, 1024),
    ("generated/basic-lz4.ds", Mode::Lz4, 1024),
    ("generated/nullcompact.ds", Mode::Zlib, 2048),
    ("bigendian/le-bigtosmall-bz2.ds", Mode::Bz2, 1_000_000),
    ("bigendian/le-basic-zlib.ds", Mode::Zlib, 1_000_000),
    ("bigendian/le-nullcompact-zlib.ds", Mode::Zlib, 1_000_000),
];

#[test]
fn reproduces_the_reference_bytes() {
    let dir = tempfile::tempdir().unwrap();
    for &(rel, mode, size) in IDENTICAL {
        let dst = dir.path().join("out.ds");
        rewrite(&data("dataseries").join(rel), &dst, options(mode, size));
        let want = std::fs::read(data("dataseries").join(rel)).unwrap();
        let got = std::fs::read(&dst).unwrap();
        let first = want.iter().zip(&got).position(|(a, b)| a != b);
        assert!(
            got == want,
            "{rel}: {} vs {} bytes, first difference at {first:?}",
            got.len(),
            want.len()
        );
        // And the big-endian twin, where there is one.
        if let Some(stem) = rel.strip_prefix("bigendian/le-") {
            let dst = dir.path().join("out-be.ds");
            rewrite(
                &data("dataseries").join(rel),
                &dst,
                options(mode, size).with_byte_order(ByteOrder::Big),
            );
            let want =
                std::fs::read(data("dataseries").join(format!("bigendian/be-{stem}"))).unwrap();
            assert!(std::fs::read(&dst).unwrap() == want, "be-{stem}");
        }
    }
}

#[test]
fn padrecord_differs_only_in_the_garbage_mode_byte() {
    // The reference leaves the mode byte of an empty part uninitialised (223 here); we write 0,
    // so the data extent's byte 25 and its adler32 differ, and through the adler32 the trailer's
    // chained checksum and hash; nothing else.
    let dir = tempfile::tempdir().unwrap();
    let src = data("dataseries").join("generated/padrecord.ds");
    let dst = dir.path().join("out.ds");
    rewrite(&src, &dst, options(Mode::Lzf, 1024));
    let want = std::fs::read(&src).unwrap();
    let got = std::fs::read(&dst).unwrap();
    let f = DsFile::open(&src, OpenOptions::default()).unwrap();
    let e = f
        .extents()
        .unwrap()
        .iter()
        .find(|e| e.type_name == "Test::PadRecord")
        .unwrap();
    let o = e.offset as usize;
    let diffs: Vec<usize> = (0..want.len()).filter(|&i| want[i] != got[i]).collect();
    assert_eq!(want[o + 25], 223);
    assert_eq!(got[o + 25], 0);
    let trailer = want.len() - 28;
    assert!(
        diffs
            .iter()
            .all(|&i| i == o + 25 || (o + 16..o + 20).contains(&i) || i >= trailer),
        "{diffs:?}"
    );
    assert!(diffs.contains(&(o + 25)));
}

#[test]
fn every_codec_and_packing_reads_back_equal() {
    // Codecs whose Rust implementation emits other (valid) bytes than the C library, and files
    // with opt_doublebase (stored = value - base can differ from the original by one rounding).
    let dir = tempfile::tempdir().unwrap();
    let cases: &[(&str, usize)] = &[
        ("generated/basic-none.ds", 1024),
        ("generated/packing.ds", 4096),
        ("generated/nullcompact.ds", 2048),
        ("generated/padrecord.ds", 1024),
        ("bigendian/le-bigtosmall-bz2.ds", 1024),
    ];
    for &(rel, size) in cases {
        let src = data("dataseries").join(rel);
        let want = rendered(&src);
        for mode in Mode::ALL {
            for order in [ByteOrder::Little, ByteOrder::Big] {
                let dst = dir.path().join("out.ds");
                rewrite(
                    &src,
                    &dst,
                    options(mode, size).with_level(6).with_byte_order(order),
                );
                let got = rendered(&dst);
                assert_eq!(got.len(), want.len(), "{rel} {mode:?}");
                for (i, (g, w)) in got.iter().zip(&want).enumerate() {
                    assert_eq!(g, w, "{rel} {mode:?} {order:?} row {i}");
                }
            }
        }
        // Several modes at once: the smallest result per part, as the reference chooses.
        let dst = dir.path().join("best.ds");
        rewrite(
            &src,
            &dst,
            WriterOptions::default()
                .with_modes(Mode::ALL)
                .with_extent_size(size),
        );
        assert_eq!(rendered(&dst), want, "{rel} best");
    }
}

#[test]
fn packing_matches_reference_values_exactly_without_doublebase() {
    // le-packing-none's bytes are reproduced except the opt_doublebase field's last bits.
    let dir = tempfile::tempdir().unwrap();
    let src = data("dataseries").join("bigendian/le-packing-none.ds");
    let dst = dir.path().join("out.ds");
    rewrite(&src, &dst, options(Mode::None, 1_000_000));
    let want = std::fs::read(&src).unwrap();
    let got = std::fs::read(&dst).unwrap();
    assert_eq!(want.len(), got.len());
    let f = DsFile::open(&src, OpenOptions::default()).unwrap();
    let t = f.find_type("Test::Packing").unwrap();
    let based = t.fields.iter().find(|f| f.name == "based").unwrap().offset;
    let e = f
        .extents()
        .unwrap()
        .iter()
        .find(|e| e.type_name == "Test::Packing")
        .unwrap();
    let start = e.offset as usize + e.header_len;
    for i in 0..want.len() {
        if want[i] == got[i] {
            continue;
        }
        let in_header = (e.offset as usize + 16..e.offset as usize + 24).contains(&i);
        let in_based = i >= start
            && i < start + e.cf
            && (i - start) % t.record_size >= based
            && (i - start) % t.record_size < based + 8;
        let in_trailer =
            i >= want.len() - 28 || i >= f.extents().unwrap().last().unwrap().offset as usize;
        assert!(
            in_header || in_based || in_trailer,
            "unexpected difference at byte {i}"
        );
    }
}

#[test]
fn an_input_without_columns_is_refused_by_name() {
    // A batch of rows and no columns (Arrow allows it): rows of no fields would take no bytes.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("none.ds");
    let schema = std::sync::Arc::new(arrow_schema::Schema::empty());
    let err = arrowsmith::dataseries::Writer::try_new(&path, schema, WriterOptions::default())
        .err()
        .expect("refused");
    assert_eq!(
        err.class(),
        arrowsmith::ErrorClass::InvalidArgument,
        "{err}"
    );
    assert!(err.to_string().contains("at least one field"), "{err}");
    assert!(!path.exists());
}

/// `column` as a dictionary built to trip a writer that numbers values by key: the distinct
/// values in reverse order of first occurrence, each twice (rows alternate between the two
/// keys), and a null entry that half the null rows point to (the other half have null keys).
fn twisted_dictionary(column: &ArrayRef, key_type: &DataType) -> ArrayRef {
    let binary = cast(column, &DataType::Binary).unwrap();
    let binary = binary.as_binary::<i32>();
    let mut distinct: Vec<&[u8]> = Vec::new();
    for v in binary.iter().flatten() {
        if !distinct.contains(&v) {
            distinct.push(v);
        }
    }
    distinct.reverse();
    let index = |v: &[u8]| distinct.iter().position(|d| *d == v).unwrap() as i32;
    let values: BinaryArray = distinct
        .iter()
        .flat_map(|v| [Some(*v), Some(*v)])
        .chain([None])
        .collect();
    let null_entry = values.len() as i32 - 1;
    let keys: Int32Array = binary
        .iter()
        .enumerate()
        .map(|(r, v)| match v {
            Some(v) => Some(2 * index(v) + (r % 2) as i32),
            None if r % 2 == 0 => None,
            None => Some(null_entry),
        })
        .collect();
    let dictionary = DictionaryArray::new(keys, Arc::new(values));
    let value_type = match column.data_type() {
        DataType::Utf8 => DataType::Utf8,
        _ => DataType::Binary,
    };
    let wanted = DataType::Dictionary(Box::new(key_type.clone()), Box::new(value_type));
    cast(&dictionary, &wanted).unwrap()
}

/// The file's rows with every variable32 column given as a [`twisted_dictionary`].
fn as_dictionaries(
    schema: &SchemaRef,
    batches: &[RecordBatch],
    key_type: &DataType,
) -> (SchemaRef, Vec<RecordBatch>) {
    let variable = |dt: &DataType| matches!(dt, DataType::Binary | DataType::Utf8);
    let dictionary_type = |f: &Field| {
        let value = Box::new(f.data_type().clone());
        DataType::Dictionary(Box::new(key_type.clone()), value)
    };
    let fields: Vec<Field> = schema
        .fields()
        .iter()
        .map(|f| match variable(f.data_type()) {
            true => f.as_ref().clone().with_data_type(dictionary_type(f)),
            false => f.as_ref().clone(),
        })
        .collect();
    let new_schema = Arc::new(Schema::new_with_metadata(fields, schema.metadata().clone()));
    let batches = batches
        .iter()
        .map(|b| {
            let columns = b
                .columns()
                .iter()
                .map(|c| match variable(c.data_type()) {
                    true => twisted_dictionary(c, key_type),
                    false => c.clone(),
                })
                .collect();
            RecordBatch::try_new(new_schema.clone(), columns).unwrap()
        })
        .collect();
    (new_schema, batches)
}

#[test]
fn dictionary_columns_are_written_as_their_values() {
    // pack_unique values given as a dictionary are numbered by key; the file must still be
    // the one their plain values make: the reference's bytes, whatever the key order,
    // duplicate entries, null entries and key width.
    let dir = tempfile::tempdir().unwrap();
    let key_types = [
        DataType::Int8,
        DataType::UInt16,
        DataType::Int32,
        DataType::UInt64,
    ];
    for (k, &(rel, mode, size)) in IDENTICAL.iter().enumerate() {
        let key_type = &key_types[k % key_types.len()];
        let (schema, batches) = read(&data("dataseries").join(rel));
        let (schema, batches) = as_dictionaries(&schema, &batches, key_type);
        let dst = dir.path().join("out.ds");
        write_in_pieces(&dst, schema, &batches, options(mode, size));
        let want = std::fs::read(data("dataseries").join(rel)).unwrap();
        assert!(
            std::fs::read(&dst).unwrap() == want,
            "{rel} with {key_type} keys"
        );
    }
    // Two pack_unique fields sharing values (host, path), in whole batches and big extents.
    let src = data("dataseries").join("bigendian/le-packing-none.ds");
    let plain = dir.path().join("plain.ds");
    rewrite(&src, &plain, options(Mode::Lz4, 4096));
    let (schema, batches) = read(&src);
    let (schema, batches) = as_dictionaries(&schema, &batches, &DataType::Int16);
    let dst = dir.path().join("dictionaries.ds");
    let mut w = Writer::try_new(&dst, schema, options(Mode::Lz4, 4096)).unwrap();
    for b in &batches {
        w.write(b).unwrap();
    }
    w.finish().unwrap();
    assert!(std::fs::read(&dst).unwrap() == std::fs::read(&plain).unwrap());
}

#[test]
fn a_null_dictionary_value_in_a_field_without_nulls_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let (schema, batches) = read(&data("dataseries").join("bigendian/le-packing-none.ds"));
    let host = schema.index_of("host").unwrap();
    assert!(!schema.field(host).is_nullable());
    let (schema, mut batches) = as_dictionaries(&schema, &batches, &DataType::Int32);
    // Row 1 of `host` now points at the dictionary's null entry.
    let mut columns = batches[0].columns().to_vec();
    let d = columns[host].as_dictionary::<Int32Type>();
    let mut keys: Vec<Option<i32>> = d.keys().iter().collect();
    keys[1] = Some(d.values().len() as i32 - 1);
    columns[host] = Arc::new(DictionaryArray::new(
        Int32Array::from(keys),
        d.values().clone(),
    ));
    batches[0] = RecordBatch::try_new(schema.clone(), columns).unwrap();
    let dst = dir.path().join("out.ds");
    let mut w = Writer::try_new(&dst, schema, options(Mode::None, 1_000_000)).unwrap();
    let err = w.write(&batches[0]).and_then(|()| w.finish().map(|_| ()));
    let err = err.expect_err("a null in a field without nulls");
    assert!(err.to_string().contains("not nullable"), "{err}");
    assert!(!dst.exists());
}

#[test]
fn a_dictionary_key_outside_its_values_is_an_error_not_a_panic() {
    // Arrays from the C data interface are not validated on import: a key may point anywhere.
    let dir = tempfile::tempdir().unwrap();
    let values = Arc::new(BinaryArray::from(vec![&b"a"[..], b"bb"]));
    let keys = Int32Array::from(vec![Some(0), None, Some(1), Some(7), Some(0)]);
    // SAFETY (of the test's intent): the key 7 is out of range on purpose; the writer must
    // check keys before it uses them, and must not read through this one.
    let column = unsafe { DictionaryArray::new_unchecked(keys, values) };
    let schema = Arc::new(Schema::new(vec![Field::new(
        "s",
        column.data_type().clone(),
        true,
    )]));
    let batch = RecordBatch::try_new(schema.clone(), vec![Arc::new(column)]).unwrap();
    let dst = dir.path().join("out.ds");
    let mut w = Writer::try_new(&dst, schema, WriterOptions::default()).unwrap();
    w.write(&batch.slice(0, 3)).unwrap();
    let err = w.write(&batch).expect_err("key 7 of 2 values");
    let text = err.to_string();
    assert!(text.contains("dictionary key 7"), "{text}");
    assert!(text.contains("\"s\""), "names the column: {text}");
    assert!(
        text.contains("row 6"),
        "the row counted over both batches: {text}"
    );
    drop(w);
    assert!(!dst.exists());
}
