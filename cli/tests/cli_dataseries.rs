//! The command line on DataSeries files: `convert` both ways with `--type`, `--utf8`, codec and
//! extent-size options; `inspect` (types, XML, extents, `--verify`); `head`; and clear errors.

mod common;

use common::{arrowsmith, assert_ok, data, p};

use std::path::{Path, PathBuf};

use arrowsmith::dataseries::{DsFile, OpenOptions, ReaderBuilder};
use serde_json::Value;

fn read_all(path: &Path, ty: Option<&str>) -> Vec<arrow_array::RecordBatch> {
    let mut b = ReaderBuilder::new();
    if let Some(t) = ty {
        b = b.with_type(t);
    }
    b.build(path)
        .unwrap()
        .collect::<Result<Vec<_>, _>>()
        .unwrap()
}

fn fixture(name: &str) -> PathBuf {
    data("dataseries").join(name)
}

#[test]
fn convert_to_arrow_and_back_keeps_values_and_xml() {
    // Through Arrow IPC, which keeps schema metadata (the Parquet reader of this version hands
    // back only `ARROW:schema`, so a DataSeries file made from Parquet gets a generated XML).
    let dir = tempfile::tempdir().unwrap();
    let src = fixture("generated/multitype.ds");
    let pq = dir.path().join("p.arrow");
    // Several types and no --type: exit 2 and the list.
    let out = arrowsmith(&["convert", p(&src), p(&pq)]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("Test::Basic") && err.contains("Test::Packing") && err.contains("--type"),
        "{err}"
    );
    assert!(!pq.exists());
    assert_ok(&arrowsmith(&[
        "convert",
        p(&src),
        p(&pq),
        "--type",
        "Test::Packing",
    ]));
    let ds = dir.path().join("back.ds");
    assert_ok(&arrowsmith(&[
        "convert",
        p(&pq),
        p(&ds),
        "--compress",
        "lz4",
        "--extent-size",
        "2048",
    ]));
    let f = DsFile::open(&ds, OpenOptions::default()).unwrap();
    assert!(f.extents_of("Test::Packing").unwrap().count() > 9);
    assert!(f
        .extents_of("Test::Packing")
        .unwrap()
        .all(|e| e.mode_fixed == 6));
    let a = read_all(&src, Some("Test::Packing"));
    let b = read_all(&ds, None);
    let a = arrow::compute::concat_batches(&a[0].schema(), &a).unwrap();
    let b = arrow::compute::concat_batches(&b[0].schema(), &b).unwrap();
    assert_eq!(a.columns(), b.columns());
    assert_eq!(
        a.schema().metadata().get("dataseries.xml"),
        b.schema().metadata().get("dataseries.xml")
    );
}

#[test]
fn convert_options_and_errors() {
    let dir = tempfile::tempdir().unwrap();
    let src = fixture("generated/basic-zlib.ds");
    let out = dir.path().join("o.ds");
    for (args, code) in [
        (vec!["--compress", "zstd"], 2),
        (vec!["--compress", "zlib:12"], 2),
        (vec!["--extent-size", "10"], 2),
        (vec!["--type", "Nope"], 2),
    ] {
        let mut all = vec!["convert", p(&src), p(&out)];
        all.extend(args.iter().copied());
        let o = arrowsmith(&all);
        assert_eq!(
            o.status.code(),
            Some(code),
            "{args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        assert!(!out.exists());
    }
    // --utf8 turns variable32 into Utf8 on the way to Parquet; best uses the reference's rule.
    let pq = dir.path().join("u.parquet");
    assert_ok(&arrowsmith(&["convert", p(&src), p(&pq), "--utf8"]));
    assert_ok(&arrowsmith(&[
        "convert",
        p(&pq),
        p(&out),
        "--compress",
        "best",
        "--type",
        "Renamed",
    ]));
    let f = DsFile::open(&out, OpenOptions::default()).unwrap();
    assert_eq!(f.types[0].name, "Renamed");
    assert_eq!(
        f.types[0]
            .fields
            .iter()
            .find(|x| x.name == "s")
            .unwrap()
            .attr("arrow_type"),
        Some("utf8")
    );
    // A damaged file: exit 1, one error line naming the file and the check.
    let mut bytes = std::fs::read(&src).unwrap();
    bytes[900] ^= 1;
    let bad = dir.path().join("bad.ds");
    std::fs::write(&bad, &bytes).unwrap();
    let o = arrowsmith(&["convert", p(&bad), p(&pq), "--overwrite"]);
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("bad.ds") && err.contains("adler32 mismatch"),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");
    // And with --no-checks the undamaged extents... the damaged one decodes to garbage or fails.
    let _ = arrowsmith(&["convert", p(&bad), p(&pq), "--no-checks"]);
}

#[test]
fn inspect_lists_types_extents_and_verifies() {
    let src = fixture("generated/basic-all.ds");
    let text = assert_ok(&arrowsmith(&["inspect", p(&src), "--verify"]));
    assert!(
        text.contains("Test::Basic") && text.contains("<field type=\"int32\" name=\"i\" />"),
        "{text}"
    );
    assert!(
        text.contains("zlib,lzo") || text.contains("zlib,zlib"),
        "{text}"
    );
    let json: Value =
        serde_json::from_str(&assert_ok(&arrowsmith(&["inspect", p(&src), "--json"]))).unwrap();
    let s = &json["structure"];
    assert_eq!(s["byte_order"], "little-endian");
    assert_eq!(s["types"][0]["rows"], 40);
    let ext = s["extents"].as_array().unwrap();
    assert_eq!(ext[0]["offset"], 40);
    assert_eq!(ext.last().unwrap()["type"], "DataSeries: ExtentIndex");
    assert_eq!(json["rows"], 40);
    // --verify fails on a damaged extent.
    let dir = tempfile::tempdir().unwrap();
    let mut bytes = std::fs::read(&src).unwrap();
    bytes[1000] ^= 0x10;
    let bad = dir.path().join("bad.ds");
    std::fs::write(&bad, &bytes).unwrap();
    let o = arrowsmith(&["inspect", p(&bad), "--verify"]);
    assert_eq!(o.status.code(), Some(1));
    // Big-endian files say so.
    let text = assert_ok(&arrowsmith(&[
        "inspect",
        p(&fixture("bigendian/be-basic-zlib.ds")),
    ]));
    assert!(text.contains("big-endian"), "{text}");
}

#[test]
fn head_reads_one_type() {
    // (Test::Packing has Timestamp(ns, "UTC") columns, which this build's table printer cannot
    // show without arrow's chrono-tz feature; Info::DSRepack is plain.)
    let multitype = fixture("generated/multitype.ds");
    let text = assert_ok(&arrowsmith(&[
        "head",
        "-n",
        "2",
        p(&multitype),
        "--type",
        "Info::DSRepack",
    ]));
    assert!(
        text.contains("enable_lzf") && text.contains("4096"),
        "{text}"
    );
    let o = arrowsmith(&[
        "head",
        p(&fixture("generated/basic-zlib.ds")),
        "--utf8=s,ns",
    ]);
    assert!(assert_ok(&o).contains("hello world"));
}

/// One little-endian extent of uncompressed parts (spec §3): `fixed`, and the variable area
/// after its four leading zero bytes, with its adler32 and hash (§12) filled in.
fn ds_extent(type_name: &str, records: i32, fixed: &[u8], var: &[u8]) -> Vec<u8> {
    use arrowsmith::dataseries::checksum::{extent_adler32, lookup2};
    let round4 = |n: usize| n.div_ceil(4) * 4;
    let mut e = Vec::new();
    for word in [
        fixed.len() as i32,
        var.len() as i32,
        records,
        4 + var.len() as i32,
    ] {
        e.extend(word.to_le_bytes());
    }
    let mut area = vec![0u8; 4];
    area.extend(var);
    let mut hash = lookup2(&area, lookup2(fixed, 1972));
    let mut lengths = Vec::new();
    let mut at = 4;
    while at < area.len() {
        let length = u32::from_le_bytes(area[at..at + 4].try_into().unwrap()) as usize;
        lengths.extend(&area[at..at + 4]);
        at += 4 + length + (12 - length % 8) % 8;
    }
    hash = lookup2(&lengths, hash);
    e.extend(0u32.to_le_bytes());
    e.extend(hash.to_le_bytes());
    e.extend([0, 0, type_name.len() as u8, 0]);
    e.extend(type_name.as_bytes());
    e.resize(round4(e.len()), 0);
    e.extend(fixed);
    e.resize(round4(e.len()), 0);
    e.extend(var);
    e.resize(round4(e.len()), 0);
    let adler = extent_adler32(&e);
    e[16..20].copy_from_slice(&adler.to_le_bytes());
    e
}

/// Variable-area entries (spec §9.1) for `values`, and the offset of each.
fn ds_entries(values: &[&[u8]]) -> (Vec<u8>, Vec<i32>) {
    let mut var = Vec::new();
    let mut offsets = Vec::new();
    for value in values {
        offsets.push(4 + var.len() as i32);
        var.extend((value.len() as i32).to_le_bytes());
        var.extend(*value);
        var.resize(var.len() + (12 - value.len() % 8) % 8, 0);
    }
    (var, offsets)
}

/// A DataSeries file of one type without fields, `Test::NoFields`, and one extent of it that
/// claims `records` records: rows that take no bytes, which the format allows.
fn ds_fieldless_file(records: i32) -> Vec<u8> {
    use arrowsmith::dataseries::checksum::lookup2;
    let mut file = b"DSv1".to_vec();
    file.extend(0x1234_5678i32.to_le_bytes());
    file.extend(0x1234_5678_9ABC_DEF0i64.to_le_bytes());
    for x in [std::f64::consts::PI, f64::INFINITY, f64::NAN] {
        file.extend(x.to_le_bytes());
    }
    let name = "Test::NoFields";
    let xml = format!(r#"<ExtentType name="{name}" namespace="test" version="1.0"></ExtentType>"#);
    let (var, offsets) = ds_entries(&[xml.as_bytes()]);
    let fixed: Vec<u8> = [offsets[0].to_le_bytes(), [0; 4]].concat();
    let mut extents = vec![("DataSeries: XmlType", file.len() as i64)];
    file.extend(ds_extent("DataSeries: XmlType", 1, &fixed, &var));
    extents.push((name, file.len() as i64));
    file.extend(ds_extent(name, records, &[], &[]));
    let index_offset = file.len() as i64;
    extents.push(("DataSeries: ExtentIndex", index_offset));
    let names: Vec<&[u8]> = extents.iter().map(|(n, _)| n.as_bytes()).collect();
    let (var, offsets) = ds_entries(&names);
    let mut fixed = Vec::new();
    for ((_, offset), slot) in extents.iter().zip(offsets) {
        fixed.extend(slot.to_le_bytes());
        fixed.extend([0; 4]);
        fixed.extend(offset.to_le_bytes());
    }
    let index = ds_extent("DataSeries: ExtentIndex", 3, &fixed, &var);
    let len = index.len() as i32;
    file.extend(index);
    let mut trailer = vec![0xFF; 4];
    trailer.extend(len.to_le_bytes());
    trailer.extend((!len).to_le_bytes());
    trailer.extend(0u32.to_le_bytes());
    trailer.extend(index_offset.to_le_bytes());
    let hash = lookup2(&trailer, 1776);
    trailer.extend(hash.to_le_bytes());
    file.extend(trailer);
    file
}

#[test]
fn head_of_a_fieldless_extent_of_billions_of_records_reads_only_its_rows() {
    // Rows of no fields take no bytes, so one 28-byte extent header can claim 2^31 - 1 of them.
    // `head` asks for batches of -n rows; the reader cut the whole extent into such batches
    // before handing out the first (hundreds of millions of them, gigabytes), where `convert`'s
    // 65,536-row batches made that only 32,768. Under a 1 GiB address-space limit it must
    // print its rows as `convert` does, at once.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("fieldless.ds");
    std::fs::write(&path, ds_fieldless_file(i32::MAX)).unwrap();
    let file = DsFile::open(&path, OpenOptions::default()).unwrap();
    let extents: Vec<_> = file.extents_of("Test::NoFields").unwrap().collect();
    assert_eq!(extents.len(), 1);
    assert_eq!(extents[0].rows, i32::MAX as usize);

    let limited = |args: &[&str]| {
        std::process::Command::new("sh")
            .arg("-c")
            .arg(r#"ulimit -v 1048576 && exec "$0" "$@""#)
            .arg(env!("CARGO_BIN_EXE_arrowsmith"))
            .args(args)
            .output()
            .unwrap()
    };
    let started = std::time::Instant::now();
    for rows in ["1", "10"] {
        let out = limited(&["head", "-n", rows, p(&path)]);
        assert_eq!(
            out.status.code(),
            Some(0),
            "head -n {rows}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let out = limited(&[
        "convert",
        p(&path),
        p(&dir.path().join("f.arrow")),
        "--limit",
        "10",
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(started.elapsed().as_secs() < 20, "{:?}", started.elapsed());
}
