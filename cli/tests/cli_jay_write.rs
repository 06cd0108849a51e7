//! `arrowsmith convert … x.jay`: the Arrow ecosystem formats into Jay, the sentinel-collision
//! option, and the writer's warnings on stderr.
//!
//! Each test first asks the library whether this build writes Jay at all, and passes with a
//! note when it does not yet.

mod common;

use common::{arrowsmith, p, stderr};

use std::path::Path;
use std::sync::Arc;

use arrow::compute::{cast, concat_batches};
use arrow_array::{
    ArrayRef, Float64Array, Int32Array, Int64Array, RecordBatch, StringArray,
    TimestampMillisecondArray,
};
use arrow_schema::{DataType, Field, Schema};
use arrowsmith::{ErrorClass, Format, ReadOptions, WriteOptions};

fn jay_writer_available() -> bool {
    let dir = tempfile::tempdir().unwrap();
    let schema = Arc::new(Schema::new(vec![Field::new("a", DataType::Int32, true)]));
    let options = WriteOptions {
        format: Some(Format::Jay),
        ..Default::default()
    };
    match arrowsmith::create(dir.path().join("probe.jay"), schema, &options) {
        Ok(_) => true,
        Err(e) if e.class() == ErrorClass::Unsupported => {
            eprintln!("skipped: this build does not write Jay yet ({e})");
            false
        }
        Err(e) => panic!("creating a Jay writer: {e}"),
    }
}

fn write(path: &Path, format: Format, batch: &RecordBatch) {
    let options = WriteOptions {
        format: Some(format),
        ..Default::default()
    };
    let mut writer = arrowsmith::create(path, batch.schema(), &options).unwrap();
    writer.write(batch).unwrap();
    writer.finish().unwrap();
}

fn read_one(path: &Path) -> RecordBatch {
    let reader = arrowsmith::open(path, &ReadOptions::default()).unwrap();
    let schema = reader.schema();
    let batches: Vec<RecordBatch> = reader.collect::<Result<_, _>>().unwrap();
    concat_batches(&schema, &batches).unwrap()
}

#[track_caller]
fn assert_same_values(expected: &RecordBatch, actual: &RecordBatch) {
    assert_eq!(expected.num_rows(), actual.num_rows());
    assert_eq!(expected.num_columns(), actual.num_columns());
    for (i, want) in expected.columns().iter().enumerate() {
        let got = cast(actual.column(i), want.data_type()).unwrap();
        assert_eq!(want.to_data(), got.to_data(), "column {i}");
    }
}

fn sample() -> RecordBatch {
    RecordBatch::try_from_iter([
        (
            "id",
            Arc::new(Int64Array::from(vec![
                Some(1),
                None,
                Some(-5),
                Some(1 << 40),
            ])) as ArrayRef,
        ),
        (
            "x",
            Arc::new(Float64Array::from(vec![
                Some(0.5),
                Some(-1e300),
                None,
                Some(3.0),
            ])) as ArrayRef,
        ),
        (
            "s",
            Arc::new(StringArray::from(vec![
                Some("a"),
                Some(""),
                None,
                Some("ü ✓"),
            ])) as ArrayRef,
        ),
    ])
    .unwrap()
}

#[test]
fn ecosystem_formats_convert_to_jay() {
    if !jay_writer_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let batch = sample();
    for from in ["parquet", "arrow", "arrows", "ndjson"] {
        let input = dir.path().join(format!("in.{from}"));
        write(&input, from.parse().unwrap(), &batch);
        let output = dir.path().join(format!("{from}.jay"));
        let out = arrowsmith(&["convert", p(&input), p(&output)]);
        assert_eq!(out.status.code(), Some(0), "{from}: {}", stderr(&out));
        assert_same_values(&batch, &read_one(&output));
        let verify = arrowsmith(&["inspect", p(&output), "--verify"]);
        assert_eq!(verify.status.code(), Some(0), "{}", stderr(&verify));
    }
}

#[test]
fn jay_round_trips_through_parquet() {
    if !jay_writer_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let original = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join("data/jay/all_types.jay");
    let parquet = dir.path().join("all_types.parquet");
    let again = dir.path().join("again.jay");
    for (from, to) in [(original.as_path(), &parquet), (&parquet, &again)] {
        let out = arrowsmith(&["convert", p(from), p(to)]);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    }
    assert_same_values(&read_one(&original), &read_one(&again));
}

#[test]
fn sentinel_collisions_fail_unless_asked_to_become_na() {
    if !jay_writer_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let batch = RecordBatch::try_from_iter([(
        "n",
        Arc::new(Int32Array::from(vec![Some(1), Some(i32::MIN), None])) as ArrayRef,
    )])
    .unwrap();
    let input = dir.path().join("in.arrow");
    write(&input, Format::Arrow, &batch);
    let output = dir.path().join("out.jay");

    let out = arrowsmith(&["convert", p(&input), p(&output)]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.starts_with("error: ") && err.lines().count() == 1,
        "{err}"
    );
    assert!(err.contains("out.jay"), "{err}");
    assert!(err.contains("sentinel"), "{err}");
    assert!(!output.exists());

    let out = arrowsmith(&[
        "convert",
        p(&input),
        p(&output),
        "--sentinel-collisions-as-na",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let back = read_one(&output);
    let want = Int32Array::from(vec![Some(1), None, None]);
    assert_eq!(back.column(0).to_data(), arrow_array::Array::to_data(&want));
}

#[test]
fn writer_warnings_go_to_stderr() {
    if !jay_writer_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let times = TimestampMillisecondArray::from(vec![Some(0), Some(1_600_000_000_000)])
        .with_timezone("America/New_York");
    let batch = RecordBatch::try_from_iter([("t", Arc::new(times) as ArrayRef)]).unwrap();
    let input = dir.path().join("in.parquet");
    write(&input, Format::Parquet, &batch);
    let output = dir.path().join("out.jay");
    let out = arrowsmith(&["convert", p(&input), p(&output)]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.starts_with("warning: "), "{err}");
    assert!(err.contains("America/New_York"), "{err}");
    assert!(output.exists());
}

#[cfg(unix)]
#[test]
fn a_signal_while_the_jay_writer_finishes_writes_nothing() {
    // The Jay writer holds a small frame and writes the whole file in `finish()`, after the last
    // batch: a signal then was noted and ignored, the file committed, the exit 0.
    if !jay_writer_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.arrow");
    write(&input, Format::Arrow, &sample());
    let output = dir.path().join("out.jay");
    let names = |dir: &Path| {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    };
    for signal in [libc::SIGINT, libc::SIGTERM] {
        let out = common::signalled_at("jay-finish", signal, &["convert", p(&input), p(&output)]);
        assert_eq!(out.status.code(), Some(128 + signal), "{}", stderr(&out));
        assert!(
            stderr(&out).contains("interrupted by signal"),
            "{}",
            stderr(&out)
        );
        assert_eq!(
            names(dir.path()),
            ["in.arrow"],
            "no output, no temporary file"
        );
    }
    // An output that exists stays as it was.
    let old = b"not replaced".to_vec();
    std::fs::write(&output, &old).unwrap();
    let out = common::signalled_at(
        "jay-finish",
        libc::SIGINT,
        &["convert", p(&input), p(&output), "--overwrite"],
    );
    assert_eq!(out.status.code(), Some(130), "{}", stderr(&out));
    assert_eq!(std::fs::read(&output).unwrap(), old);
    assert_eq!(names(dir.path()), ["in.arrow", "out.jay"]);
}
