//! The DataSeries writer against the reference: rewriting a reference file's rows with the same
//! XML, extent size, mode and level reproduces the reference's bytes where the codec's output is
//! the C library's (none, zlib through C zlib, bz2, lz4 and lz4hc through liblz4); every written file reads back through our
//! reader, with every check on, to the values of the original.

mod common;

use std::path::Path;

use arrow_array::RecordBatch;
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
    let mut w = Writer::try_new(dst, schema, options).unwrap();
    // Feed the rows in odd-sized pieces: extent boundaries must not depend on batch boundaries.
    for b in &batches {
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
        .extents
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
        .extents
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
        let in_trailer = i >= want.len() - 28 || i >= f.extents.last().unwrap().offset as usize;
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
