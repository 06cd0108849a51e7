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
    assert!(f.extents_of("Test::Packing").count() > 9);
    assert!(f.extents_of("Test::Packing").all(|e| e.mode_fixed == 6));
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
    let o = arrowsmith(&["convert", p(&bad), p(&pq)]);
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
