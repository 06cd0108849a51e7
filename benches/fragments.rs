//! Fragments: opening and reading one fragment costs work in proportion to the fragment, not
//! to the file. For each format, one file of `ARROWSMITH_BENCH_ROWS` rows (default 4 000 000)
//! split into 16 fragments: the whole file, fragment 0 and the last fragment are read side by
//! side, so the report shows each fragment at about 1/16 of the whole, wherever it lies.
//!
//! `cargo bench --bench fragments` (docs/fragments.md has the figures).

use std::hint::black_box;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use arrow_array::{Float64Array, Int64Array, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema};
use arrowsmith::{Format, Fragment, ReadOptions, WriteOptions};
use criterion::{criterion_group, criterion_main, Criterion, SamplingMode};

fn rows() -> usize {
    std::env::var("ARROWSMITH_BENCH_ROWS")
        .ok()
        .and_then(|v| v.replace('_', "").parse().ok())
        .unwrap_or(4_000_000)
}

fn batch(start: usize, len: usize) -> RecordBatch {
    let schema = Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new("price", DataType::Float64, false),
        Field::new("sym", DataType::Utf8, false),
    ]));
    let symbols = [
        "AAPL", "MSFT", "GOOG", "AMZN", "BRK.B", "JPM", "XOM", "TSLA",
    ];
    let range = start..start + len;
    RecordBatch::try_new(
        schema,
        vec![
            Arc::new(Int64Array::from_iter_values(
                range.clone().map(|i| i as i64),
            )),
            Arc::new(Float64Array::from_iter_values(
                range.clone().map(|i| (i % 10_007) as f64 / 100.0),
            )),
            Arc::new(StringArray::from_iter_values(
                range.map(|i| symbols[i % symbols.len()]),
            )),
        ],
    )
    .unwrap()
}

fn write(path: &Path, format: Format, rows: usize) {
    let mut options = WriteOptions {
        format: Some(format),
        ..Default::default()
    };
    options.dataseries = options.dataseries.with_extent_size(1 << 20).with_level(1);
    options.compression = match format {
        Format::DataSeries => Some("lz4".into()),
        _ => None,
    };
    let schema = batch(0, 0).schema();
    let mut writer = arrowsmith::create(path, schema, &options).unwrap();
    for start in (0..rows).step_by(65_536) {
        writer
            .write(&batch(start, 65_536.min(rows - start)))
            .unwrap();
    }
    writer.finish().unwrap();
}

fn read_rows(reader: Box<dyn arrow_array::RecordBatchReader + Send>) -> usize {
    reader.map(|b| b.unwrap().num_rows()).sum()
}

fn bench(c: &mut Criterion) {
    let rows = rows();
    let dir = tempfile::tempdir().unwrap();
    let mut group = c.benchmark_group("fragments");
    group
        .sampling_mode(SamplingMode::Flat)
        .sample_size(10)
        .measurement_time(Duration::from_secs(5));
    for (format, name) in [
        (Format::Jay, "t.jay"),
        (Format::Bcolz, "t.bcolz"),
        (Format::DataSeries, "t.ds"),
        (Format::Parquet, "t.parquet"),
    ] {
        let path = dir.path().join(name);
        write(&path, format, rows);
        let options = ReadOptions::for_format(format);
        let fragments: Vec<Fragment> =
            arrowsmith::fragments(&path, &options, rows.div_ceil(16)).unwrap();
        let last = fragments.last().unwrap().clone();
        let first = fragments[0].clone();
        group.bench_function(format!("{}/whole", format.name()), |b| {
            b.iter(|| black_box(read_rows(arrowsmith::open(&path, &options).unwrap())))
        });
        group.bench_function(
            format!("{}/first_of_{}", format.name(), fragments.len()),
            |b| {
                b.iter(|| {
                    black_box(read_rows(
                        arrowsmith::open_fragment(&first, &options).unwrap(),
                    ))
                })
            },
        );
        group.bench_function(
            format!("{}/last_of_{}", format.name(), fragments.len()),
            |b| {
                b.iter(|| {
                    black_box(read_rows(
                        arrowsmith::open_fragment(&last, &options).unwrap(),
                    ))
                })
            },
        );
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
