//! In place vs Parquet: one group-by aggregate, run by DataFusion over a Jay file and over a
//! multi-extent DataSeries trace read through arrowsmith, and over the Parquet file that
//! `arrowsmith convert` makes of each, at 1, 2 and 4 target partitions.
//!
//! ```text
//! SELECT key, count(*), sum(value), min(id), max(id) FROM t GROUP BY key
//! ```
//!
//! The data: row `i` has int32 `key = i % 1000`, float64 `value = i * 0.25` and int64
//! `id = i`. The files are written once into `ARROWSMITH_BENCH_DIR` (default
//! `target/bench-sql`) and reused; the Jay file by arrowsmith's Jay writer, the DataSeries file
//! by its DataSeries writer (zlib, 1 MiB extents: hundreds of extents; and the same trace with
//! lz4, to show what the codec costs), the Parquet files by `arrowsmith::write_all` as
//! `arrowsmith convert` does (zstd). The lz4 trace holds the same rows as the zlib one, so its
//! Parquet counterpart is the zlib trace's.
//!
//! Environment: `ARROWSMITH_BENCH_ROWS` (default 10 000 000; the trace gets the same number).
//!
//! Run (a release build; it needs DataFusion's Parquet reader):
//! `cargo bench -p arrowsmith-datafusion --features parquet --bench sql`

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use arrow::array::{Float64Array, Int32Array, Int64Array, RecordBatch};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use arrowsmith::{Format, ReadOptions, WriteOptions};
use arrowsmith_datafusion::SessionContextArrowsmithExt;
use criterion::{criterion_group, criterion_main, Criterion, SamplingMode};
use datafusion::prelude::{ParquetReadOptions, SessionConfig, SessionContext};

const QUERY: &str = "SELECT key, count(*), sum(value), min(id), max(id) FROM t GROUP BY key";
const BATCH: usize = 65_536;

fn rows() -> usize {
    std::env::var("ARROWSMITH_BENCH_ROWS")
        .map(|v| {
            v.replace('_', "")
                .parse()
                .expect("ARROWSMITH_BENCH_ROWS: a number")
        })
        .unwrap_or(10_000_000)
}

fn bench_dir() -> PathBuf {
    let dir = match std::env::var_os("ARROWSMITH_BENCH_DIR") {
        Some(dir) => PathBuf::from(dir),
        None => {
            let target = std::env::var_os("CARGO_TARGET_DIR")
                .map(PathBuf::from)
                .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../target"));
            target.join("bench-sql")
        }
    };
    std::fs::create_dir_all(&dir).expect("create the benchmark directory");
    dir
}

fn schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("key", DataType::Int32, false),
        Field::new("value", DataType::Float64, false),
        Field::new("id", DataType::Int64, false),
    ]))
}

fn batch(start: usize, end: usize) -> RecordBatch {
    let keys: Int32Array = (start..end).map(|i| (i % 1000) as i32).collect();
    let values: Float64Array = (start..end).map(|i| i as f64 * 0.25).collect();
    let ids: Int64Array = (start..end).map(|i| i as i64).collect();
    RecordBatch::try_new(
        schema(),
        vec![Arc::new(keys), Arc::new(values), Arc::new(ids)],
    )
    .expect("a valid batch")
}

/// Writes `path` as `format` (with `compression`, else the format's default) unless a file of
/// that name is there already.
fn ensure(path: &Path, format: Format, compression: Option<&str>, rows: usize) {
    if path.exists() {
        return;
    }
    let options = WriteOptions {
        format: Some(format),
        compression: compression.map(str::to_owned),
        ..Default::default()
    };
    let mut writer = arrowsmith::create(path, schema(), &options).expect("create");
    let mut start = 0;
    while start < rows {
        let end = (start + BATCH).min(rows);
        writer.write(&batch(start, end)).expect("write");
        start = end;
    }
    writer.finish().expect("finish");
}

/// The Parquet file `arrowsmith convert SOURCE PARQUET` makes.
fn ensure_parquet(source: &Path, parquet: &Path) {
    if parquet.exists() {
        return;
    }
    let reader = arrowsmith::open(source, &ReadOptions::default()).expect("open");
    arrowsmith::write_all(reader, parquet, &WriteOptions::default()).expect("convert");
}

fn session(partitions: usize) -> SessionContext {
    let ctx =
        SessionContext::new_with_config(SessionConfig::new().with_target_partitions(partitions));
    ctx.register_arrowsmith().expect("register");
    ctx
}

fn bench_sql(c: &mut Criterion) {
    let rows = rows();
    let dir = bench_dir();
    let jay = dir.join(format!("frame-{rows}.jay"));
    let ds = dir.join(format!("trace-{rows}.ds"));
    let ds_lz4 = dir.join(format!("trace-{rows}-lz4.ds"));
    ensure(&jay, Format::Jay, None, rows);
    ensure(&ds, Format::DataSeries, None, rows);
    ensure(&ds_lz4, Format::DataSeries, Some("lz4"), rows);
    let jay_parquet = dir.join(format!("frame-{rows}.jay.parquet"));
    let ds_parquet = dir.join(format!("trace-{rows}.ds.parquet"));
    ensure_parquet(&jay, &jay_parquet);
    ensure_parquet(&ds, &ds_parquet);

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let mut group = c.benchmark_group("sql_group_by");
    group
        .sample_size(10)
        .sampling_mode(SamplingMode::Flat)
        .measurement_time(Duration::from_secs(20));
    for (name, source, parquet) in [
        ("jay", &jay, Some(&jay_parquet)),
        ("dataseries", &ds, Some(&ds_parquet)),
        ("dataseries_lz4", &ds_lz4, None),
    ] {
        for partitions in [1, 2, 4] {
            let ctx = session(partitions);
            runtime.block_on(async {
                ctx.register_arrowsmith_table("t", source, None, Default::default())
                    .await
                    .expect("register the legacy file");
            });
            group.bench_function(format!("{name}_in_place/{partitions}"), |b| {
                b.iter(|| runtime.block_on(async { ctx.sql(QUERY).await?.collect().await }))
            });
            let Some(parquet) = parquet else {
                continue;
            };
            let ctx = session(partitions);
            runtime.block_on(async {
                ctx.register_parquet(
                    "t",
                    parquet.to_str().expect("UTF-8"),
                    ParquetReadOptions::default(),
                )
                .await
                .expect("register the Parquet file");
            });
            group.bench_function(format!("{name}_parquet/{partitions}"), |b| {
                b.iter(|| runtime.block_on(async { ctx.sql(QUERY).await?.collect().await }))
            });
        }
    }
    group.finish();
}

criterion_group!(benches, bench_sql);
criterion_main!(benches);
