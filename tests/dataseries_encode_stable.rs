//! The DataSeries writer's bytes do not change when its implementation does. The reference
//! fixtures pin small files; these cases pin what they reach less: many extents of mixed
//! batch sizes and slices, pack_unique and plain variable32 columns with nulls, empty values and
//! values larger than the extent target, relative packing across extent boundaries, null
//! compaction, big_to_small ordering, the other byte order and several codecs. Each expected
//! digest was taken from the writer at commit c015d9c (before the encoder was pipelined); a
//! changed digest means changed bytes, which the format's readers would see.

mod common;

use std::path::Path;
use std::sync::Arc;

use arrow_array::types::Int32Type;
use arrow_array::*;
use arrow_schema::{DataType, Field, Schema, TimeUnit};
use arrowsmith::dataseries::{ByteOrder, DsFile, Mode, ReaderBuilder, Writer, WriterOptions};
use common::{ds_metadata, Rng};

/// `n` rows of every packing the writer does; `fixedwidth` only where the type allows it.
fn rows(n: usize, seed: u64, type_md: &[(&str, &str)], fixedwidth: bool) -> RecordBatch {
    let mut r = Rng(seed);
    // Hosts include an empty value (no entry) and long values: some extents hold fewer,
    // larger strings than the target allows for.
    let hosts: Vec<Vec<u8>> = (0..40)
        .map(|i| match i {
            0 => Vec::new(),
            7 | 23 => vec![b'h'; 900 + i],
            _ => format!("host{i:02}.example.org").into_bytes(),
        })
        .collect();
    let mut t = 1_700_000_000i64 << 32;
    let mut time = Vec::with_capacity(n);
    let mut end = Vec::with_capacity(n);
    let mut seq = Vec::with_capacity(n);
    let mut lat = Vec::with_capacity(n);
    let mut based = Vec::with_capacity(n);
    let mut host = Vec::with_capacity(n);
    let mut path = Vec::with_capacity(n);
    let mut payload: Vec<Option<Vec<u8>>> = Vec::with_capacity(n);
    let mut flag = Vec::with_capacity(n);
    let mut byte = Vec::with_capacity(n);
    let mut fsb = Vec::with_capacity(n);
    let mut ts = Vec::with_capacity(n);
    let mut dict = Vec::with_capacity(n);
    for i in 0..n {
        let x = r.next();
        let null = |k: u64| (x >> k) % 6 == 0;
        t += (x % 50_000) as i64;
        time.push(t);
        end.push((!null(1)).then_some(t + (x >> 30) as i64 % 9_000));
        seq.push((!null(2)).then_some(i as i32 * 3 - (x % 5) as i32));
        lat.push(((x >> 24) % 1_000_000) as f64 * 1e-3);
        based.push((!null(3)).then_some(1.0e6 + (x >> 40) as f64 / 8.0));
        host.push(hosts[((x >> 8) % 40) as usize].clone());
        path.push((!null(4)).then(|| format!("/srv/{}/{}", (x >> 12) % 300, (x >> 20) % 7)));
        let len = ((x >> 33) % 61) as usize;
        payload.push((!null(5)).then(|| (0..len).map(|k| (x >> (k % 56)) as u8).collect()));
        flag.push((!null(6)).then_some(x & 1 == 0));
        byte.push((!null(7)).then_some((x >> 50) as u8));
        fsb.push((!null(8)).then_some([(x >> 3) as u8, 1, 2, 3, (x >> 11) as u8]));
        ts.push((!null(9)).then_some(t >> 3));
        dict.push(["read", "write", "", "getattr"][((x >> 44) % 4) as usize]);
    }
    let mut fields = vec![
        Field::new("time", DataType::Int64, false)
            .with_metadata(ds_metadata(&[("pack_relative", "time")])),
        Field::new("end", DataType::Int64, true)
            .with_metadata(ds_metadata(&[("pack_relative", "time")])),
        Field::new("seq", DataType::Int32, true)
            .with_metadata(ds_metadata(&[("pack_relative", "seq")])),
        Field::new("lat", DataType::Float64, false)
            .with_metadata(ds_metadata(&[("pack_scale", "1e-3")])),
        Field::new("based", DataType::Float64, true)
            .with_metadata(ds_metadata(&[("opt_doublebase", "1000000")])),
        Field::new("host", DataType::Binary, false)
            .with_metadata(ds_metadata(&[("pack_unique", "yes")])),
        Field::new("path", DataType::Utf8, true)
            .with_metadata(ds_metadata(&[("pack_unique", "yes")])),
        Field::new("payload", DataType::Binary, true),
        Field::new("flag", DataType::Boolean, true),
        Field::new("byte", DataType::UInt8, true),
        Field::new("ts", DataType::Timestamp(TimeUnit::Microsecond, None), true),
    ];
    let mut cols: Vec<ArrayRef> = vec![
        Arc::new(Int64Array::from(time)),
        Arc::new(Int64Array::from(end)),
        Arc::new(Int32Array::from(seq)),
        Arc::new(Float64Array::from(lat)),
        Arc::new(Float64Array::from(based)),
        Arc::new(BinaryArray::from_iter_values(host)),
        Arc::new(StringArray::from(path)),
        Arc::new(BinaryArray::from_iter(payload)),
        Arc::new(BooleanArray::from(flag)),
        Arc::new(UInt8Array::from(byte)),
        Arc::new(TimestampMicrosecondArray::from(ts)),
    ];
    let d: DictionaryArray<Int32Type> = dict.into_iter().collect();
    fields.push(Field::new("op", d.data_type().clone(), false));
    cols.push(Arc::new(d));
    if fixedwidth {
        fields.push(Field::new("fsb", DataType::FixedSizeBinary(5), true));
        cols.push(Arc::new(
            FixedSizeBinaryArray::try_from_sparse_iter_with_size(fsb.into_iter(), 5).unwrap(),
        ));
    }
    let schema = Schema::new(fields).with_metadata(ds_metadata(type_md));
    RecordBatch::try_new(Arc::new(schema), cols).unwrap()
}

/// Writes `all` in pieces of assorted sizes (empty, single rows, slices with an offset into
/// their buffers, whole batches larger than an extent).
fn write(path: &Path, all: &RecordBatch, options: WriterOptions) {
    let mut w = Writer::try_new(path, all.schema(), options).unwrap();
    let sizes = [0, 1, 5000, 7, 12_000, 333, 0, 2, 9000];
    let (mut at, mut k) = (0, 0);
    while at < all.num_rows() {
        let len = sizes[k % sizes.len()].min(all.num_rows() - at);
        w.write(&all.slice(at, len)).unwrap();
        at += len;
        k += 1;
    }
    w.finish().unwrap();
}

/// FNV-1a over the file's bytes: a short, stable stand-in for the bytes themselves.
fn digest(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

struct Case {
    name: &'static str,
    type_md: &'static [(&'static str, &'static str)],
    fixedwidth: bool,
    mode: Mode,
    extent_size: usize,
    order: ByteOrder,
    /// (file length, digest) as written at c015d9c.
    want: (usize, u64),
}

const CASES: &[Case] = &[
    Case {
        name: "none-4k",
        type_md: &[],
        fixedwidth: true,
        mode: Mode::None,
        extent_size: 4096,
        order: ByteOrder::Little,
        want: (5_320_060, 0x1437506c0c74f6cb),
    },
    Case {
        name: "lz4-64k",
        type_md: &[],
        fixedwidth: true,
        mode: Mode::Lz4,
        extent_size: 65_536,
        order: ByteOrder::Little,
        want: (2_225_896, 0x07cfffdf1aa87137),
    },
    Case {
        name: "zlib-16k",
        type_md: &[],
        fixedwidth: true,
        mode: Mode::Zlib,
        extent_size: 16_384,
        order: ByteOrder::Little,
        want: (1_861_260, 0x42b101574ec2adeb),
    },
    Case {
        name: "none-1k-big-endian",
        type_md: &[],
        fixedwidth: true,
        mode: Mode::None,
        extent_size: 1024,
        order: ByteOrder::Big,
        want: (6_060_776, 0xd89bbaf61fa24c2e),
    },
    Case {
        name: "null-compact-lz4-8k",
        type_md: &[("pack_null_compact", "non_bool")],
        fixedwidth: false,
        mode: Mode::Lz4,
        extent_size: 8192,
        order: ByteOrder::Little,
        want: (2_479_176, 0xae0a4e68b1b17a1a),
    },
    Case {
        name: "null-compact-none-32k-big-endian",
        type_md: &[("pack_null_compact", "non_bool")],
        fixedwidth: false,
        mode: Mode::None,
        extent_size: 32_768,
        order: ByteOrder::Big,
        want: (3_571_880, 0x664f7f474b28e2d9),
    },
    Case {
        name: "big-to-small-padded-none-4k",
        type_md: &[
            ("pack_field_ordering", "big_to_small_sep_var32"),
            ("pack_pad_record", "max_column_size"),
        ],
        fixedwidth: true,
        mode: Mode::None,
        extent_size: 4096,
        order: ByteOrder::Little,
        want: (5_385_896, 0x76709421545f5b9a),
    },
];

#[test]
fn multi_extent_files_keep_their_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let mut wrong = Vec::new();
    for (i, case) in CASES.iter().enumerate() {
        let all = rows(
            30_000,
            0x9e37_79b9_7f4a_7c15 ^ i as u64,
            case.type_md,
            case.fixedwidth,
        );
        let path = dir.path().join(format!("{}.ds", case.name));
        write(
            &path,
            &all,
            WriterOptions::default()
                .with_modes([case.mode])
                .with_extent_size(case.extent_size)
                .with_byte_order(case.order),
        );
        let bytes = std::fs::read(&path).unwrap();
        let got = (bytes.len(), digest(&bytes));
        // The case must reach what it is meant to: many extents, all rows readable.
        let extents = DsFile::open(&path, Default::default())
            .unwrap()
            .extents()
            .unwrap()
            .len();
        assert!(extents > 20, "{}: {extents} extents", case.name);
        let read: usize = ReaderBuilder::new()
            .build(&path)
            .unwrap()
            .map(|b| b.unwrap().num_rows())
            .sum();
        assert_eq!(read, all.num_rows(), "{}", case.name);
        if got != case.want {
            wrong.push(format!("{}: got {got:?}, want {:?}", case.name, case.want));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
