//! `arrowsmith fragments` and `convert --fragment K` for all eleven formats, standard output
//! as a conversion's target, the permissions of what arrowsmith creates, and the other things
//! a new user trips on.

mod common;

use common::{arrowsmith, assert_ok_bytes, data, p};

use std::io::Cursor;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use arrow::compute::concat_batches;
use arrow::ipc::reader::StreamReader;
use arrow_array::{ArrayRef, Float64Array, Int64Array, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema};
use arrowsmith::{Format, ReadOptions, WriteOptions};
use serde_json::Value;

/// The Arrow IPC stream a conversion to `-` printed, as one batch.
fn stream_batch(bytes: &[u8]) -> RecordBatch {
    let reader = StreamReader::try_new(Cursor::new(bytes.to_vec()), None).expect("an IPC stream");
    let schema = reader.schema();
    let batches: Vec<RecordBatch> = reader.collect::<Result<_, _>>().unwrap();
    concat_batches(&schema, &batches).unwrap()
}

fn sample(rows: usize) -> RecordBatch {
    let schema = Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new("x", DataType::Float64, false),
        Field::new("s", DataType::Utf8, false),
    ]));
    let columns: Vec<ArrayRef> = vec![
        Arc::new(Int64Array::from_iter_values(0..rows as i64)),
        Arc::new(Float64Array::from_iter_values(
            (0..rows).map(|i| i as f64 * 0.5),
        )),
        Arc::new(StringArray::from_iter_values(
            (0..rows).map(|i| format!("s{}", i % 97)),
        )),
    ];
    RecordBatch::try_new(schema, columns).unwrap()
}

/// A file of `format` holding many of its units (extents, chunks, row groups, batches), and
/// the extra arguments reading it needs.
fn input(dir: &Path, format: Format) -> (PathBuf, Vec<&'static str>) {
    if format == Format::Vs {
        return (data("vs/f64_r1_plain.vs"), vec![]);
    }
    let mut batch = sample(6_000);
    let mut extra = vec![];
    if format == Format::FiloVector {
        batch = batch.project(&[0]).unwrap();
        extra = vec!["--filo-type", "Long"];
    }
    let path = dir.join(format!("in.{}", format.name()));
    let mut options = WriteOptions {
        format: Some(format),
        row_group_size: Some(500),
        ..Default::default()
    };
    options.filo = options
        .filo
        .with_chunk_size(500)
        .with_vector_type(arrowsmith::filo::FiloType::Long);
    options.dataseries = options.dataseries.with_extent_size(8 * 1024);
    options.bcolz = options.bcolz.with_chunklen(500);
    let mut writer = arrowsmith::create(&path, batch.schema(), &options).unwrap();
    for start in (0..batch.num_rows()).step_by(500) {
        writer.write(&batch.slice(start, 500)).unwrap();
    }
    writer.finish().unwrap();
    (path, extra)
}

#[test]
fn every_format_lists_fragments_and_converts_each_one() {
    let dir = tempfile::tempdir().unwrap();
    for format in Format::ALL {
        let (path, extra) = input(dir.path(), format);
        let from = ["--from", format.name()];
        let mut args = vec!["fragments", p(&path), "--target-rows", "1500"];
        args.extend(from);
        args.extend(&extra);
        let listing = String::from_utf8(assert_ok_bytes(&arrowsmith(&args)).to_vec()).unwrap();
        let fragments: Vec<Value> = listing
            .lines()
            .map(|l| serde_json::from_str(l).expect("one JSON object per line"))
            .collect();
        assert!(!fragments.is_empty(), "{format}");

        let mut whole_args = vec!["convert", p(&path), "-"];
        whole_args.extend(from);
        whole_args.extend(&extra);
        let whole = stream_batch(assert_ok_bytes(&arrowsmith(&whole_args)));

        let mut parts = Vec::new();
        for (k, f) in fragments.iter().enumerate() {
            assert_eq!(f["index"], k as u64, "{format}");
            assert!(f["range"]["unit"].is_string(), "{format}: {f}");
            assert!(f["bytes"].as_u64().is_some(), "{format}: {f}");
            let k = k.to_string();
            let mut args = vec!["convert", p(&path), "-", "--fragment", &k];
            args.extend(["--target-rows", "1500"]);
            args.extend(from);
            args.extend(&extra);
            let part = stream_batch(assert_ok_bytes(&arrowsmith(&args)));
            if f["rows_exact"] == true {
                assert_eq!(
                    part.num_rows() as u64,
                    f["rows"].as_u64().unwrap(),
                    "{format}"
                );
            }
            parts.push(part);
        }
        let joined = concat_batches(&whole.schema(), &parts).unwrap();
        assert_eq!(
            joined, whole,
            "{format}: fragments in order are the whole file"
        );
        let splits = !matches!(
            format,
            Format::ArrowStream | Format::Csv | Format::Ndjson | Format::FiloVector | Format::Vs
        );
        if splits {
            assert!(
                fragments.len() >= 4,
                "{format}: {} fragments",
                fragments.len()
            );
        }
    }
}

#[test]
fn a_fragment_that_is_not_there_is_a_usage_error() {
    let out = arrowsmith(&["convert", p(&data("jay/tiny.jay")), "-", "--fragment", "7"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("there is no fragment 7"), "{err}");
    let out = arrowsmith(&["convert", "a.jay", "b.arrow", "--target-rows", "10"]);
    assert_eq!(out.status.code(), Some(2), "--target-rows needs --fragment");
}

#[test]
fn standard_output_carries_streaming_formats_only() {
    let jay = data("jay/all_types.jay");
    let expected = arrowsmith::open(&jay, &ReadOptions::default()).unwrap();
    let schema = expected.schema();
    let batches: Vec<RecordBatch> = expected.collect::<Result<_, _>>().unwrap();
    let expected = concat_batches(&schema, &batches).unwrap();
    assert_eq!(
        stream_batch(assert_ok_bytes(&arrowsmith(&["convert", p(&jay), "-"]))),
        expected
    );

    let csv = arrowsmith(&["convert", p(&data("jay/tiny.jay")), "-", "--to", "csv"]);
    let text = String::from_utf8(assert_ok_bytes(&csv).to_vec()).unwrap();
    assert!(text.lines().count() > 1, "a header and rows: {text}");
    let ndjson = arrowsmith(&["convert", p(&data("jay/tiny.jay")), "-", "--to", "ndjson"]);
    assert!(assert_ok_bytes(&ndjson).starts_with(b"{"));

    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_arrowsmith"))
        .args(["convert", p(&jay), "-", "--to", "parquet"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("standard output"));
    assert!(!dir.path().join("-").exists(), "no file named '-'");
}

#[cfg(unix)]
#[test]
fn outputs_get_the_permissions_of_the_umask() {
    use std::os::unix::fs::PermissionsExt;
    let source = tempfile::tempdir().unwrap();
    let jay = input(source.path(), Format::Arrow).0;
    for (umask, file_mode, dir_mode) in [("022", 0o644, 0o755), ("077", 0o600, 0o700)] {
        let dir = tempfile::tempdir().unwrap();
        for name in ["out.parquet", "out.jay", "out.ds", "out.filo", "out.bcolz"] {
            let target = dir.path().join(name);
            let script = format!("umask {umask} && exec \"$0\" convert \"$1\" \"$2\"",);
            let out = Command::new("sh")
                .args([
                    "-c",
                    &script,
                    env!("CARGO_BIN_EXE_arrowsmith"),
                    p(&jay),
                    p(&target),
                ])
                .output()
                .unwrap();
            assert_ok_bytes(&out);
            let mode = target.metadata().unwrap().permissions().mode() & 0o777;
            let want = if target.is_dir() { dir_mode } else { file_mode };
            assert_eq!(mode, want, "{name} under umask {umask}: {mode:o}");
        }
    }
}

#[test]
fn type_names_a_dataseries_outputs_extent_type() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("t.ds");
    let jay = data("jay/tiny.jay");
    assert_ok_bytes(&arrowsmith(&[
        "convert",
        p(&jay),
        p(&out),
        "--type",
        "Test::Tiny",
    ]));
    let file = arrowsmith::dataseries::DsFile::open(&out, Default::default()).unwrap();
    assert!(
        file.find_type("Test::Tiny").is_some(),
        "the type is named Test::Tiny"
    );

    // The older spelling is gone: clap refuses it as a usage error.
    let older = arrowsmith(&[
        "convert",
        p(&jay),
        p(&dir.path().join("u.ds")),
        "--type-name",
        "Test::Other",
    ]);
    assert_eq!(older.status.code(), Some(2));
    // With another output, --type still belongs to DataSeries input only.
    let wrong = arrowsmith(&[
        "convert",
        p(&jay),
        p(&dir.path().join("w.arrow")),
        "--type",
        "A",
    ]);
    assert_eq!(wrong.status.code(), Some(2));
}

#[test]
fn a_bcolz_null_error_names_the_flag_that_fixes_it() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("nulls.arrow");
    let schema = Arc::new(Schema::new(vec![Field::new("x", DataType::Float64, true)]));
    let batch = RecordBatch::try_new(
        schema.clone(),
        vec![Arc::new(Float64Array::from(vec![Some(1.0), None]))],
    )
    .unwrap();
    let mut w = arrowsmith::create(&src, schema, &WriteOptions::default()).unwrap();
    w.write(&batch).unwrap();
    w.finish().unwrap();
    let out = arrowsmith(&["convert", p(&src), p(&dir.path().join("t.bcolz"))]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--bcolz-nulls-as-nan"), "{err}");
    assert!(!err.contains("NullPolicy"), "{err}");
}
