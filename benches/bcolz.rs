//! bcolz benchmarks: bcolz → Arrow (read every batch of every column) and Arrow → bcolz (write
//! a ctable with bcolz's default cparams: lz4, clevel 5, byte shuffle).
//!
//! The data is the spec's B8 table (`benches/bcolz_reference.py`): `id` int64, `price` float64
//! random walk in cents, `sym` `|S10` from 8 symbols.
//!
//! Environment:
//! * `ARROWSMITH_BENCH_ROWS` — number of rows (default 10 000 000);
//! * `ARROWSMITH_BENCH_BCOLZ` — an existing ctable of that data (normally written by bcolz, see
//!   `scripts/bench-bcolz.sh`); without it arrowsmith's writer makes one first;
//! * `ARROWSMITH_BENCH_DIR` — where outputs are written (default: a temporary directory).

use std::hint::black_box;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use arrow_array::{BinaryArray, Float64Array, Int64Array, RecordBatch, RecordBatchReader};
use arrow_schema::{DataType, Field, Schema};
use criterion::{criterion_group, criterion_main, BatchSize, Criterion, SamplingMode, Throughput};

use arrowsmith::bcolz::{ReaderBuilder, Writer, WriterOptions};

fn rows() -> usize {
    std::env::var("ARROWSMITH_BENCH_ROWS")
        .ok()
        .map(|v| {
            v.replace('_', "")
                .parse()
                .expect("ARROWSMITH_BENCH_ROWS: a number")
        })
        .unwrap_or(10_000_000)
}

fn make_batches(n: usize) -> Vec<RecordBatch> {
    let schema = Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new("price", DataType::Float64, false),
        Field::new("sym", DataType::Binary, false),
    ]));
    let symbols: [&[u8]; 8] = [
        b"AAPL", b"MSFT", b"GOOG", b"AMZN", b"BRK.B", b"JPM", b"XOM", b"TSLA",
    ];
    let mut state = 42u64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let mut price = 10_000i64;
    let mut out = Vec::new();
    let mut start = 0;
    while start < n {
        let end = (start + 65_536).min(n);
        let ids = Int64Array::from_iter_values(start as i64..end as i64);
        let prices = Float64Array::from_iter_values((start..end).map(|_| {
            price += (next() % 101) as i64 - 50;
            price as f64 / 100.0
        }));
        let syms =
            BinaryArray::from_iter_values((start..end).map(|_| symbols[(next() % 8) as usize]));
        out.push(
            RecordBatch::try_new(
                schema.clone(),
                vec![Arc::new(ids), Arc::new(prices), Arc::new(syms)],
            )
            .expect("batch"),
        );
        start = end;
    }
    out
}

fn write(batches: &[RecordBatch], path: &PathBuf, expected: u64, durable: bool) {
    let options = WriterOptions::default()
        .with_durable(durable)
        .with_overwrite(true)
        .with_expected_len(expected);
    let mut w = Writer::try_new(path, batches[0].schema(), options).expect("writer");
    for b in batches {
        w.write(b).expect("write");
    }
    w.finish().expect("finish");
}

/// Flushes dirty pages left by earlier benchmarks, so that their writeback is not timed here.
fn settle() {
    let _ = std::process::Command::new("sync").status();
}

fn bench(c: &mut Criterion) {
    let n = rows();
    let tmp = tempfile::tempdir().expect("temp dir");
    let dir = std::env::var_os("ARROWSMITH_BENCH_DIR")
        .map_or_else(|| tmp.path().to_path_buf(), PathBuf::from);
    let input = match std::env::var_os("ARROWSMITH_BENCH_BCOLZ") {
        Some(p) => PathBuf::from(p),
        None => {
            let p = dir.join("bench_input.bcolz");
            write(&make_batches(n), &p, n as u64, true);
            p
        }
    };
    // The batches to write: the dataset itself, in memory.
    let reader = ReaderBuilder::new().build(&input).expect("open the input");
    let schema = reader.schema();
    let batches: Vec<RecordBatch> = reader.map(|b| b.expect("read")).collect();
    let raw: usize = batches.iter().map(|b| b.get_array_memory_size()).sum();
    let _ = schema;

    let mut group = c.benchmark_group("bcolz");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(10))
        .sampling_mode(SamplingMode::Flat);
    group.throughput(Throughput::Bytes(raw as u64));
    group.bench_function("bcolz_to_arrow", |b| {
        b.iter(|| {
            let reader = ReaderBuilder::new().build(&input).expect("open");
            for batch in reader {
                black_box(batch.expect("batch"));
            }
        })
    });
    // The same scan without read-ahead (each batch's chunks decoded only when it is asked for):
    // what the background decoding of the next batches buys.
    group.bench_function("bcolz_to_arrow_no_read_ahead", |b| {
        b.iter(|| {
            let reader = ReaderBuilder::new()
                .with_read_ahead(0)
                .build(&input)
                .expect("open");
            for batch in reader {
                black_box(batch.expect("batch"));
            }
        })
    });
    // The same rows with the symbols as numpy text (`<U10`, UTF-32): the conversion of
    // fixed-width UTF-32 to Arrow's UTF-8.
    let unicode = dir.join("bench_unicode.bcolz");
    if !unicode.exists() {
        let text: Vec<RecordBatch> = batches.iter().map(as_unicode).collect();
        write(&text, &unicode, n as u64, false);
    }
    group.bench_function("bcolz_to_arrow_unicode_U10", |b| {
        b.iter(|| {
            let reader = ReaderBuilder::new().build(&unicode).expect("open");
            for batch in reader {
                black_box(batch.expect("batch"));
            }
        })
    });
    let out = dir.join("bench_output.bcolz");
    // Each write creates ~520 files and deletes the previous output's: on ext4, creating files
    // right after many deletions is slower (the inode allocator skips recently deleted inodes),
    // so the writes run about as many times as bcolz's own reference loop does (one iteration a
    // sample, a short warm-up), and each starts with nothing dirty (as the script does before
    // bcolz's).
    group
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(2));
    settle();
    group.bench_function("arrow_to_bcolz", |b| {
        b.iter_batched(
            || (),
            |_| write(&batches, &out, n as u64, true),
            BatchSize::PerIteration,
        )
    });
    // bcolz never fsyncs: the same write without durability, for a like-for-like comparison.
    settle();
    group.bench_function("arrow_to_bcolz_nosync", |b| {
        b.iter_batched(
            || (),
            |_| write(&batches, &out, n as u64, false),
            BatchSize::PerIteration,
        )
    });
    group.finish();
}

/// The batch with its `sym` bytes as a Utf8 column, which the writer stores as `<U`.
fn as_unicode(batch: &RecordBatch) -> RecordBatch {
    let sym = arrow::compute::cast(batch.column(2), &DataType::Utf8).expect("ASCII symbols");
    let schema = Arc::new(Schema::new(vec![
        batch.schema().field(0).clone(),
        batch.schema().field(1).clone(),
        Field::new("sym", DataType::Utf8, false),
    ]));
    RecordBatch::try_new(
        schema,
        vec![batch.column(0).clone(), batch.column(1).clone(), sym],
    )
    .expect("same rows")
}

criterion_group!(benches, bench);
criterion_main!(benches);
