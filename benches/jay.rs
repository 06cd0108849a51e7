//! Jay benchmarks: Jay → Arrow (read every batch), Arrow → Jay (write), Jay → Parquet.
//!
//! The data is the frame of `benches/jay_datatable.py` (and of the spec's B4.1 table): row `i`
//! has int32 `i`, float64 `i * 0.5`, str32 `str(i % 100003)`, and every column is NA where
//! `i % 97 == 0` (about 1 %).
//!
//! Environment:
//! * `ARROWSMITH_BENCH_ROWS` — number of rows (default 10 000 000);
//! * `ARROWSMITH_BENCH_JAY` — an existing Jay file of that data to read (normally written by
//!   datatable, see `scripts/bench-jay.sh`); without it the file is written by arrowsmith's own
//!   writer first;
//! * `ARROWSMITH_BENCH_DIR` — where outputs are written (default: a temporary directory).
//!
//! `scripts/bench-jay.sh` runs this next to datatable and prints the comparison.

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use arrow_array::{Float64Array, Int32Array, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use criterion::{criterion_group, criterion_main, BatchSize, Criterion, SamplingMode, Throughput};

use arrowsmith::jay::{ReaderBuilder, Writer, WriterOptions};
use arrowsmith::{WriteOptions, DEFAULT_BATCH_SIZE};

fn rows() -> usize {
    match std::env::var("ARROWSMITH_BENCH_ROWS") {
        Ok(v) => v
            .replace('_', "")
            .parse()
            .expect("ARROWSMITH_BENCH_ROWS must be a number of rows"),
        Err(_) => 10_000_000,
    }
}

fn schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("i32", DataType::Int32, true),
        Field::new("f64", DataType::Float64, true),
        Field::new("s32", DataType::Utf8, true),
    ]))
}

/// The benchmark frame as in-memory record batches of `DEFAULT_BATCH_SIZE` rows.
fn make_batches(nrows: usize) -> Vec<RecordBatch> {
    let schema = schema();
    let mut batches = Vec::new();
    let mut start = 0;
    while start < nrows {
        let end = (start + DEFAULT_BATCH_SIZE).min(nrows);
        let na = |i: usize| i % 97 == 0;
        let i32s: Int32Array = (start..end).map(|i| (!na(i)).then_some(i as i32)).collect();
        let f64s: Float64Array = (start..end)
            .map(|i| (!na(i)).then_some(i as f64 * 0.5))
            .collect();
        let strs: StringArray = (start..end)
            .map(|i| (!na(i)).then(|| (i % 100_003).to_string()))
            .collect();
        batches.push(
            RecordBatch::try_new(
                schema.clone(),
                vec![Arc::new(i32s), Arc::new(f64s), Arc::new(strs)],
            )
            .expect("batch"),
        );
        start = end;
    }
    batches
}

fn write_jay(batches: &[RecordBatch], path: &Path) {
    let options = WriterOptions::default().with_durable(false);
    let mut writer = Writer::try_new(path, schema(), options).expect("create the Jay writer");
    for batch in batches {
        writer.write(batch).expect("write a batch");
    }
    writer.finish().expect("finish the Jay file");
}

fn read_jay(path: &Path) -> usize {
    let reader = ReaderBuilder::new()
        .with_batch_size(DEFAULT_BATCH_SIZE)
        .build(path)
        .expect("open the Jay file");
    let mut rows = 0;
    for batch in reader {
        rows += black_box(batch.expect("read a batch")).num_rows();
    }
    rows
}

fn bench_jay(c: &mut Criterion) {
    let nrows = rows();
    let scratch = match std::env::var_os("ARROWSMITH_BENCH_DIR") {
        Some(dir) => {
            std::fs::create_dir_all(&dir).expect("create ARROWSMITH_BENCH_DIR");
            tempfile::tempdir_in(dir)
        }
        None => tempfile::tempdir(),
    }
    .expect("scratch directory");

    let batches = make_batches(nrows);
    let input: PathBuf = match std::env::var_os("ARROWSMITH_BENCH_JAY") {
        Some(path) => PathBuf::from(path),
        None => {
            let path = scratch.path().join("input.jay");
            write_jay(&batches, &path);
            path
        }
    };
    let file_size = std::fs::metadata(&input).expect("input file").len();
    let read_rows = read_jay(&input); // also warms the page cache
    assert_eq!(
        read_rows,
        nrows,
        "{} holds {read_rows} rows, ARROWSMITH_BENCH_ROWS says {nrows}",
        input.display()
    );
    eprintln!(
        "jay bench: {} ({} rows, {:.1} MB)",
        input.display(),
        nrows,
        file_size as f64 / 1e6
    );

    let mut group = c.benchmark_group("jay");
    group
        .sample_size(10)
        .sampling_mode(SamplingMode::Flat)
        .warm_up_time(Duration::from_secs(2))
        .throughput(Throughput::Bytes(file_size));

    group.measurement_time(Duration::from_secs(8));
    group.bench_function("jay_to_arrow", |b| b.iter(|| black_box(read_jay(&input))));

    let out_jay = scratch.path().join("out.jay");
    group.measurement_time(Duration::from_secs(15));
    group.bench_function("arrow_to_jay", |b| {
        b.iter_batched(
            || {
                let _ = std::fs::remove_file(&out_jay);
            },
            |()| write_jay(&batches, &out_jay),
            BatchSize::PerIteration,
        )
    });

    let out_parquet = scratch.path().join("out.parquet");
    group.measurement_time(Duration::from_secs(30));
    group.bench_function("jay_to_parquet", |b| {
        b.iter_batched(
            || {
                let _ = std::fs::remove_file(&out_parquet);
            },
            |()| {
                let reader = ReaderBuilder::new()
                    .build(&input)
                    .expect("open the Jay file");
                arrowsmith::write_all(reader, &out_parquet, &WriteOptions::default())
                    .expect("write Parquet")
            },
            BatchSize::PerIteration,
        )
    });
    group.finish();
}

criterion_group!(benches, bench_jay);
criterion_main!(benches);
