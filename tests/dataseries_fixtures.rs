//! Every DataSeries fixture written by the reference tools, read and compared line by line with
//! the reference `ds2txt` output stored beside it; the manifest's structure (types, rows, extents,
//! modes, byte order); and upstream's own sample files, read from `../shared` when present.

mod common;

use std::path::{Path, PathBuf};

use arrow_array::RecordBatch;
use arrowsmith::dataseries::{DsFile, OpenOptions, ReaderBuilder};
use arrowsmith::Error;
use common::{data, ds2txt};
use serde_json::Value;

fn upstream() -> Option<PathBuf> {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/fixtures/dataseries/upstream");
    if p.is_dir() {
        Some(p)
    } else {
        eprintln!(
            "SKIPPED: upstream DataSeries sample files not found at {} (they are read from the shared fixtures, never copied)",
            p.display()
        );
        None
    }
}

fn read_type(path: &Path, name: &str) -> Vec<RecordBatch> {
    ReaderBuilder::new()
        .with_type(name)
        .build(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .collect::<Result<Vec<_>, _>>()
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn rendered(batches: &[RecordBatch]) -> Vec<String> {
    batches.iter().flat_map(ds2txt::render).collect()
}

fn compare(path: &Path, name: &str, expected: &[String]) {
    let got = rendered(&read_type(path, name));
    assert_eq!(
        got.len(),
        expected.len(),
        "{}: {name}: row count",
        path.display()
    );
    for (i, (g, e)) in got.iter().zip(expected).enumerate() {
        assert!(
            same_row(g, e),
            "{}: {name}: row {i}\n got: {g}\nwant: {e}",
            path.display()
        );
    }
}

/// Equal lines, or lines that differ only in a number's last printed digit: Arrow holds
/// `stored + opt_doublebase` and the text shows the stored value, so the renderer subtracts the
/// base again, which can move a `%.9g` value across a rounding boundary.
fn same_row(got: &str, want: &str) -> bool {
    if got == want {
        return true;
    }
    let (g, w): (Vec<&str>, Vec<&str>) = (got.split(' ').collect(), want.split(' ').collect());
    g.len() == w.len()
        && g.iter().zip(&w).all(|(a, b)| {
            a == b
                || match (a.parse::<f64>(), b.parse::<f64>()) {
                    (Ok(x), Ok(y)) => (x - y).abs() <= 1e-8 * x.abs().max(y.abs()),
                    _ => false,
                }
        })
}

#[test]
fn every_fixture_matches_its_manifest_and_ds2txt_text() {
    let manifest: Value = serde_json::from_str(
        &std::fs::read_to_string(data("dataseries").join("manifest.json")).unwrap(),
    )
    .unwrap();
    let mut checked = 0;
    for entry in manifest["files"].as_array().unwrap() {
        let rel = entry["file"].as_str().unwrap();
        if rel.starts_with("upstream/") {
            continue;
        }
        let path = data("dataseries").join(rel);
        let file =
            DsFile::open(&path, OpenOptions::default()).unwrap_or_else(|e| panic!("{rel}: {e}"));
        let order = match file.order {
            arrowsmith::dataseries::ByteOrder::Little => "little",
            arrowsmith::dataseries::ByteOrder::Big => "big",
        };
        assert_eq!(entry["byte_order"].as_str().unwrap(), order, "{rel}");
        let text = std::fs::read_to_string(
            data("dataseries").join(entry["expected_text"].as_str().unwrap()),
        )
        .unwrap();
        for (name, info) in entry["types"].as_object().unwrap() {
            let t = file
                .find_type(name)
                .unwrap_or_else(|| panic!("{rel}: no type {name}"));
            assert_eq!(
                t.record_size as u64,
                info["record_bytes"].as_u64().unwrap(),
                "{rel} {name}"
            );
            assert_eq!(
                file.rows_of(name),
                info["rows"].as_u64().unwrap(),
                "{rel} {name}"
            );
            let extents: Vec<_> = file.extents_of(name).collect();
            assert_eq!(
                extents.len() as u64,
                info["extents"].as_u64().unwrap(),
                "{rel} {name}"
            );
            let mut modes: Vec<String> = extents
                .iter()
                .map(|e| format!("{},{}", e.mode_fixed, e.mode_var))
                .collect();
            modes.sort();
            modes.dedup();
            let mut want: Vec<String> = info["modes"]
                .as_array()
                .unwrap()
                .iter()
                .map(|m| m.as_str().unwrap().to_string())
                .collect();
            want.sort();
            assert_eq!(modes, want, "{rel} {name}: modes");
            let fields: Vec<(String, bool)> = t
                .visible
                .iter()
                .map(|&i| (t.fields[i].name.clone(), t.fields[i].null_field.is_some()))
                .collect();
            let want_fields: Vec<(String, bool)> = info["fields"]
                .as_array()
                .unwrap()
                .iter()
                .map(|f| {
                    (
                        f["name"].as_str().unwrap().to_string(),
                        f["nullable"].as_bool().unwrap(),
                    )
                })
                .collect();
            assert_eq!(fields, want_fields, "{rel} {name}");
            compare(&path, name, &ds2txt::rows_of_type(&text, name));
            checked += 1;
        }
    }
    assert!(checked >= 20, "only {checked} types checked");
}

#[test]
fn big_endian_twins_read_like_their_little_endian_files() {
    for pair in [
        "basic-zlib",
        "nullcompact-zlib",
        "packing-none",
        "bigtosmall-bz2",
    ] {
        let le = data("dataseries").join(format!("bigendian/le-{pair}.ds"));
        let be = data("dataseries").join(format!("bigendian/be-{pair}.ds"));
        let lf = DsFile::open(&le, OpenOptions::default()).unwrap();
        let name = lf.candidate_types()[0].name.clone();
        let a = read_type(&le, &name);
        let b = read_type(&be, &name);
        assert_eq!(rendered(&a), rendered(&b), "{pair}");
        assert!(!a.is_empty());
    }
}

#[test]
fn multitype_file_needs_a_type_and_lists_them() {
    let path = data("dataseries").join("generated/multitype.ds");
    let err = ReaderBuilder::new()
        .build(&path)
        .err()
        .expect("several types");
    let msg = err.to_string();
    assert!(
        msg.contains("Test::Basic") && msg.contains("Test::Packing"),
        "{msg}"
    );
    let dsrepack = read_type(&path, "Info::DSRepack");
    assert_eq!(dsrepack.iter().map(|b| b.num_rows()).sum::<usize>(), 1);
}

#[test]
fn empty_file_yields_the_schema_and_no_batches() {
    let r = ReaderBuilder::new()
        .build(data("dataseries").join("generated/empty.ds"))
        .unwrap();
    assert_eq!(
        arrow_array::RecordBatchReader::schema(&r).fields().len(),
        12
    );
    assert_eq!(r.count(), 0);
}

#[test]
fn upstream_files_match_the_reference_text() {
    let Some(up) = upstream() else { return };
    let complex = {
        use std::io::Read;
        let mut s = String::new();
        flate2::read::GzDecoder::new(std::fs::File::open(up.join("complex.txt.gz")).unwrap())
            .read_to_string(&mut s)
            .unwrap();
        s
    };
    let want = ds2txt::rows_of_type(&complex, "complex test type");
    assert_eq!(want.len(), 10_000);
    for f in ["complex.ds-littleend", "complex.ds-bigend"] {
        let got = rendered(&read_type(&up.join(f), "complex test type"));
        assert_eq!(got.len(), want.len());
        for (i, (g, e)) in got.iter().zip(&want).enumerate() {
            // ds2txt --skip-index ends each row with a space.
            assert_eq!(g.trim_end(), e.trim_end(), "{f}: row {i}");
        }
    }
}

#[test]
fn upstream_files_read_with_every_check_and_their_counts() {
    let Some(up) = upstream() else { return };
    type Counts<'a> = &'a [(&'a str, u64, usize)];
    let cases: &[(&str, Counts)] = &[
        ("complex.ds-bigend", &[("complex test type", 10_000, 42)]),
        ("complex.ds-littleend", &[("complex test type", 10_000, 42)]),
        ("ellard.ds", &[("Trace::NFS::Ellard", 176, 1)]),
        ("h03126.ds-bigend", &[("I/O trace: SRT-V7", 43_000, 1)]),
        ("h03126.ds-littleend", &[("I/O trace: SRT-V7", 43_000, 1)]),
        (
            "lsb.acct.2007-01-01-p1.ds",
            &[("Batch::LSF::Grizzly", 496, 8)],
        ),
        (
            "nfs-2.set-0.ip.ds",
            &[("Trace::Network::IP", 19_684, 10), ("Info::DSRepack", 1, 1)],
        ),
        (
            "nfs-2.set-1.20k.ds",
            &[
                ("Trace::NFS::attr-ops", 9_806, 19),
                ("Trace::NFS::common", 20_000, 22),
                ("Trace::NFS::read-write", 3_859, 5),
                ("Info::DSRepack", 1, 1),
            ],
        ),
        ("pss5.ds-bigend", &[("Process sample", 200_000, 2)]),
        ("pss5.ds-littleend", &[("Process sample", 200_000, 2)]),
    ];
    for (file, types) in cases {
        let path = up.join(file);
        let ds = DsFile::open(&path, OpenOptions::default()).unwrap_or_else(|e| panic!("{e}"));
        for (name, rows, extents) in *types {
            assert_eq!(ds.rows_of(name), *rows, "{file} {name}");
            assert_eq!(ds.extents_of(name).count(), *extents, "{file} {name}");
            let got: usize = read_type(&path, name).iter().map(|b| b.num_rows()).sum();
            assert_eq!(got as u64, *rows, "{file} {name}");
        }
    }
    // Little/big pairs decode to the same values.
    for (stem, name) in [
        ("complex", "complex test type"),
        ("pss5", "Process sample"),
        ("h03126", "I/O trace: SRT-V7"),
    ] {
        let a = read_type(&up.join(format!("{stem}.ds-littleend")), name);
        let b = read_type(&up.join(format!("{stem}.ds-bigend")), name);
        assert_eq!(rendered(&a), rendered(&b), "{stem}");
    }
}

#[test]
fn upstream_ellard_matches_reference_text() {
    let Some(up) = upstream() else { return };
    let text = std::fs::read_to_string(up.join("ellard.ds.txt.ref")).unwrap();
    let want = ds2txt::rows_of_type(&text, "Trace::NFS::Ellard");
    let got = rendered(&read_type(&up.join("ellard.ds"), "Trace::NFS::Ellard"));
    assert_eq!(got.len(), want.len());
    for (i, (g, e)) in got.iter().zip(&want).enumerate() {
        assert_eq!(g.trim_end(), e.trim_end(), "ellard row {i}");
    }
}

#[test]
fn upstream_damaged_files_fail_with_the_right_check() {
    let Some(up) = upstream() else { return };
    // 100 zeros at 50 000: the extent holding that offset fails its adler32.
    let path = up.join("corrupt-100-zeros-at-50K.ds");
    let r = ReaderBuilder::new()
        .with_type("Trace::Network::IP")
        .build(&path);
    let err = match r {
        Err(e) => e,
        Ok(r) => {
            let e = r
                .collect::<Result<Vec<_>, _>>()
                .expect_err("damaged extent");
            Error::from_arrow_owned(e)
        }
    };
    let msg = err.to_string();
    assert!(
        msg.contains("adler32 mismatch") && msg.contains("corrupt-100-zeros"),
        "{msg}"
    );
    // With the checks off and leniency on, the other extents still read.
    let r = ReaderBuilder::new()
        .with_type("Trace::Network::IP")
        .with_checks(false)
        .with_salvage(true)
        .build(&path)
        .unwrap();
    let rows: usize = r.map(|b| b.map(|b| b.num_rows()).unwrap_or(0)).sum();
    assert!(rows > 15_000, "{rows}");

    // The end stomped: the trailer is gone.
    let path = up.join("corrupt-stomp-end.ds");
    let err = ReaderBuilder::new()
        .with_type("Trace::Network::IP")
        .build(&path)
        .err()
        .expect("bad trailer");
    assert!(err.to_string().contains("trailer"), "{err}");
    let r = ReaderBuilder::new()
        .with_type("Trace::Network::IP")
        .with_salvage(true)
        .build(&path)
        .unwrap();
    let rows: usize = r.map(|b| b.unwrap().num_rows()).sum();
    assert_eq!(rows, 19_684);
}
