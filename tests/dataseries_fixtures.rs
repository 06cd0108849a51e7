//! Every DataSeries fixture written by the reference tools, read and compared line by line with
//! the reference `ds2txt` output stored beside it; the manifest's structure (types, rows, extents,
//! modes, byte order); and upstream's own sample files, read from `../shared` when present.

mod common;

use std::path::{Path, PathBuf};

use arrow_array::RecordBatch;
use std::sync::Arc;

use arrow_array::RecordBatchReader;
use arrowsmith::dataseries::{
    fragments, DsFile, Mode, OpenOptions, ReaderBuilder, TypedFile, Writer, WriterOptions,
};
use arrowsmith::source::LocalFile;
use arrowsmith::{Error, FragmentRange};
use common::{assert_fetched_within_share, counted, data, ds2txt, fetch_bound, read_error};
use serde_json::Value;

/// The shared fixtures beside the checkout (or beside the directory of its worktrees).
fn upstream() -> Option<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let candidates =
        ["..", "../.."].map(|up| root.join(up).join("shared/fixtures/dataseries/upstream"));
    let found = candidates.iter().find(|p| p.is_dir()).cloned();
    if found.is_none() {
        eprintln!(
            "SKIPPED: upstream DataSeries sample files not found at {} (they are read from the shared fixtures, never copied)",
            candidates[0].display()
        );
    }
    found
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
                file.rows_of(name).unwrap(),
                info["rows"].as_u64().unwrap(),
                "{rel} {name}"
            );
            let extents: Vec<_> = file.extents_of(name).unwrap().collect();
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
            assert_eq!(ds.rows_of(name).unwrap(), *rows, "{file} {name}");
            assert_eq!(
                ds.extents_of(name).unwrap().count(),
                *extents,
                "{file} {name}"
            );
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

/// Every held fixture, and the upstream samples when present (the damaged ones aside).
fn every_fixture() -> Vec<PathBuf> {
    let mut paths = Vec::new();
    let mut dirs = vec![data("dataseries/generated"), data("dataseries/bigendian")];
    dirs.extend(upstream());
    for dir in dirs {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            let ds = name.ends_with(".ds") || name.contains(".ds-");
            if ds && !name.starts_with("corrupt") && !name.ends_with(".txt") {
                paths.push(path);
            }
        }
    }
    paths.sort();
    paths
}

fn collect(reader: impl RecordBatchReader) -> RecordBatch {
    let schema = reader.schema();
    let batches: Vec<RecordBatch> = reader.collect::<Result<_, _>>().unwrap();
    arrow::compute::concat_batches(&schema, &batches).unwrap()
}

#[test]
fn every_fixture_read_by_ranges_equals_its_local_read() {
    let mut compared = 0;
    for path in every_fixture() {
        let at = path.display().to_string();
        let local = Arc::new(DsFile::open(&path, OpenOptions::default()).unwrap());
        let (source, counts) = counted(LocalFile::open(&path).unwrap());
        let remote = Arc::new(DsFile::open_source(source, OpenOptions::default()).unwrap());
        assert!(counts.round_trips() <= 2, "{at}: open took {:?}", counts);
        assert_eq!(remote.entries(), local.entries(), "{at}");
        for t in local.candidate_types() {
            let name = t.name.as_str();
            let read = |file: &Arc<DsFile>, builder: ReaderBuilder| {
                collect(
                    builder
                        .with_type(name)
                        .build_from_file(Arc::clone(file))
                        .unwrap(),
                )
            };
            let both = |builder: ReaderBuilder, what: &str| {
                let want = read(&local, builder.clone());
                let got = read(&remote, builder);
                assert_eq!(got, want, "{at}: {name}: {what}");
                want.num_rows()
            };
            let rows = both(ReaderBuilder::new(), "whole");
            let last = t.visible.len().saturating_sub(1);
            if !t.visible.is_empty() {
                let column = t.fields[t.visible[last]].name.clone();
                both(
                    ReaderBuilder::new().with_projection(vec![column]),
                    "projection",
                );
            }
            both(ReaderBuilder::new().with_limit(rows / 2 + 1), "limit");
            let typed = TypedFile::new(Arc::clone(&local), Some(name)).unwrap();
            let remote_typed = TypedFile::new(Arc::clone(&remote), Some(name)).unwrap();
            assert_eq!(remote_typed.rows(), typed.rows(), "{at}: {name}");
            let spans = fragments(&typed, rows / 3 + 1).unwrap();
            assert_eq!(
                fragments(&remote_typed, rows / 3 + 1).unwrap(),
                spans,
                "{at}: {name}"
            );
            for (i, span) in spans.iter().enumerate() {
                let got = both(ReaderBuilder::new().with_range(span.range), "fragment");
                assert_eq!(got as u64, span.rows, "{at}: {name}: fragment {i}");
            }
            compared += 1;
        }
    }
    assert!(compared >= 20, "{compared} types compared");
}

/// A multi-extent file (256 KiB extents stored uncompressed, about 4.6 MiB) written to `dir`.
fn several_extents(dir: &Path) -> PathBuf {
    let rows = 300_000i64;
    let schema = Arc::new(arrow_schema::Schema::new(vec![
        arrow_schema::Field::new("id", arrow_schema::DataType::Int64, false),
        arrow_schema::Field::new("value", arrow_schema::DataType::Float64, false),
    ]));
    let ids = arrow_array::Int64Array::from_iter_values(0..rows);
    let values = arrow_array::Float64Array::from_iter_values((0..rows).map(|i| i as f64 * 0.5));
    let batch =
        RecordBatch::try_new(schema.clone(), vec![Arc::new(ids), Arc::new(values)]).unwrap();
    let path = dir.join("several.ds");
    let options = WriterOptions::default()
        .with_modes([Mode::None])
        .with_extent_size(256 << 10);
    let mut w = Writer::try_new(&path, schema, options).unwrap();
    w.write(&batch).unwrap();
    w.finish().unwrap();
    path
}

#[test]
fn a_fragment_read_by_ranges_fetches_its_extents_and_little_else() {
    let dir = tempfile::tempdir().unwrap();
    let mut paths = vec![several_extents(dir.path())];
    if let Some(up) = upstream() {
        paths.extend(
            [
                "complex.ds-littleend",
                "nfs-2.set-1.20k.ds",
                "lsb.acct.2007-01-01-p1.ds",
            ]
            .map(|f| up.join(f)),
        );
    }
    let mut checked = 0;
    for path in paths {
        let at = path.display().to_string();
        let size = std::fs::metadata(&path).unwrap().len();
        // The planner: types, extent headers and fragments.
        let (source, counts) = counted(LocalFile::open(&path).unwrap());
        let planned = Arc::new(DsFile::open_source(source, OpenOptions::default()).unwrap());
        assert!(counts.round_trips() <= 2, "{at}: open took {counts:?}");
        assert!(
            counts.bytes() < size,
            "{at}: open read the whole file: {counts:?}"
        );
        eprintln!("FIGURES {at}: {size} bytes; open {counts:?}");
        for t in planned.candidate_types() {
            let name = t.name.as_str();
            let typed = TypedFile::new(Arc::clone(&planned), Some(name)).unwrap();
            let spans = fragments(&typed, (typed.rows() / 4).max(1) as usize).unwrap();
            if spans.len() < 2 {
                continue;
            }
            let headers = planned.extents().unwrap();
            for span in &spans {
                let FragmentRange::Bytes { start, end } = span.range else {
                    panic!("{at}: {span:?}");
                };
                let share: u64 = headers
                    .iter()
                    .filter(|e| e.type_name == name && (start..end).contains(&e.offset))
                    .map(|e| e.len as u64)
                    .sum();
                // A worker: opens the file and reads its fragment.
                let (source, counts) = counted(LocalFile::open(&path).unwrap());
                let file = Arc::new(DsFile::open_source(source, OpenOptions::default()).unwrap());
                let reader = ReaderBuilder::new()
                    .with_type(name)
                    .with_range(span.range)
                    .build_from_file(file)
                    .unwrap();
                assert_eq!(collect(reader).num_rows() as u64, span.rows, "{at}: {name}");
                assert_fetched_within_share(
                    format_args!("{at}: {name}: {span:?} of {size} bytes ({counts:?})"),
                    counts.bytes(),
                    share,
                );
                // One to open, one for the extents.
                assert!(counts.round_trips() <= 2, "{at}: {name}: {counts:?}");
                eprintln!("FIGURES {at}: {name}: fragment share {share}: worker {counts:?}");
                checked += 1;
            }
            // A limit stops at the extents it needs: here the first (and the headers).
            let first = headers
                .iter()
                .find(|e| e.type_name == name && e.rows > 0)
                .unwrap();
            let (source, counts) = counted(LocalFile::open(&path).unwrap());
            let file = Arc::new(DsFile::open_source(source, OpenOptions::default()).unwrap());
            let reader = ReaderBuilder::new()
                .with_type(name)
                .with_limit(first.rows)
                .build_from_file(file)
                .unwrap();
            assert_eq!(collect(reader).num_rows(), first.rows, "{at}: {name}");
            let bound = fetch_bound(first.len as u64) + headers.len() as u64 * 288;
            assert!(
                counts.bytes() <= bound,
                "{at}: {name}: limit fetched {counts:?}"
            );
            eprintln!(
                "FIGURES {at}: {name}: limit {} (first extent {} bytes): {counts:?}",
                first.rows, first.len
            );
        }
    }
    assert!(checked >= 4, "{checked} fragments checked");
}

#[test]
fn a_remote_extent_that_disagrees_with_the_index_is_an_error_naming_the_file_and_offset() {
    let dir = tempfile::tempdir().unwrap();
    let path = several_extents(dir.path());
    let mut bytes = std::fs::read(&path).unwrap();
    let file = DsFile::open(&path, OpenOptions::default()).unwrap();
    let name = file.candidate_types()[0].name.clone();
    let second = file.extents_of(&name).unwrap().nth(1).unwrap().clone();
    // Its record count alone changed: the index still fits, the extent's header does not
    // hash, and the adler32 check names it.
    let at = second.offset as usize + 8;
    bytes[at] ^= 0x01;
    let read_by_ranges = |bytes: Vec<u8>| {
        let (source, _) = counted(LocalFile::from_bytes("bucket/several.ds", bytes));
        let remote = DsFile::open_source(source, OpenOptions::default()).unwrap();
        read_error(
            "a damaged extent",
            ReaderBuilder::new().build_from_file(Arc::new(remote)),
        )
    };
    let err = read_by_ranges(bytes.clone());
    assert_eq!(err.file(), Some(Path::new("bucket/several.ds")), "{err}");
    assert_eq!(err.offset(), Some(second.offset), "{err}");

    // Its compressed size changed: the header no longer ends where the index puts the next.
    bytes[at] ^= 0x01;
    bytes[second.offset as usize] ^= 0x04;
    let err = read_by_ranges(bytes);
    assert_eq!(err.file(), Some(Path::new("bucket/several.ds")), "{err}");
    assert_eq!(err.offset(), Some(second.offset), "{err}");
    assert!(err.to_string().contains("index entry"), "{err}");
}

#[test]
fn a_damaged_file_salvages_the_same_read_by_ranges() {
    let src = data("dataseries/generated/basic-lz4.ds");
    let bytes = std::fs::read(&src).unwrap();
    let file = DsFile::open(&src, OpenOptions::default()).unwrap();
    let extents: Vec<_> = file.extents_of("Test::Basic").unwrap().cloned().collect();
    let dir = tempfile::tempdir().unwrap();
    // Cut inside the third extent (trailer and index gone), and a flipped byte in the second.
    let mut damaged = bytes[..extents[2].offset as usize + extents[2].len / 2].to_vec();
    damaged[extents[1].offset as usize + extents[1].len - 8] ^= 0x5a;
    let path = dir.path().join("damaged.ds");
    std::fs::write(&path, &damaged).unwrap();
    let lenient = OpenOptions {
        lenient: true,
        ..OpenOptions::default()
    };
    let read = |file: DsFile| {
        let report = arrowsmith::SalvageReport::new();
        let reader = ReaderBuilder::new()
            .with_salvage(true)
            .with_salvage_report(report.clone())
            .build_from_file(Arc::new(file))
            .unwrap();
        let batch = collect(reader);
        let skipped: Vec<_> = report
            .take()
            .iter()
            .map(|s| (s.part.clone(), s.offset, s.rows, s.index))
            .collect();
        (batch, skipped)
    };
    let want = read(DsFile::open(&path, lenient).unwrap());
    let (source, _) = counted(LocalFile::open(&path).unwrap());
    let got = read(DsFile::open_source(source, lenient).unwrap());
    assert_eq!(got, want);
    assert_eq!(want.0.num_rows(), extents[0].rows);
    assert_eq!(want.1.len(), 3, "{:?}", want.1);
}
