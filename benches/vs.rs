//! VS benchmarks: 1M points of 128 float32 elements (a 525 MB file uncompressed), read into
//! Arrow and written from Arrow, with no compression, raw snappy and gzip; and `cat FILE` of the
//! uncompressed file as the floor for reads (warm page cache).
//!
//! Writes are timed once per codec while the input files are made, and with Criterion for none
//! and snappy.
//!
//! Environment:
//! * `ARROWSMITH_BENCH_ROWS` — number of points (default 1 000 000);
//! * `ARROWSMITH_BENCH_DIR` — where the files are written (default: a temporary directory);
//! * `ARROWSMITH_BENCH_CODECS` — a comma-separated subset of `none,snappy,gzip` (default: all),
//!   to keep a timing run short on a shared machine.
//!
//! Each point's app_data is `{"id": i}`. The vector elements are pseudo-random floats rounded
//! to 1/256, like quantised embeddings: compressible, but not trivially.

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use arrow_array::{
    FixedSizeListArray, Float32Array, RecordBatch, RecordBatchIterator, StringArray,
};
use arrow_schema::{DataType, Field, Schema};
use criterion::{criterion_group, criterion_main, Criterion, SamplingMode, Throughput};

use arrowsmith::vs::{self, Compression, ReaderBuilder, WriterOptions};

const DIMS: usize = 128;
const BATCH: usize = 8192;

fn rows() -> usize {
    std::env::var("ARROWSMITH_BENCH_ROWS")
        .ok()
        .map(|v| {
            v.replace('_', "")
                .parse()
                .expect("ARROWSMITH_BENCH_ROWS: a number")
        })
        .unwrap_or(1_000_000)
}

fn batches(n: usize) -> Vec<RecordBatch> {
    let item = Arc::new(Field::new("item", DataType::Float32, false));
    let schema = Arc::new(Schema::new(vec![
        Field::new(
            "vector",
            DataType::FixedSizeList(item.clone(), DIMS as i32),
            false,
        ),
        Field::new("app_data", DataType::Utf8, true),
    ]));
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    let mut out = Vec::new();
    let mut start = 0;
    while start < n {
        let end = (start + BATCH).min(n);
        let values: Float32Array = (0..(end - start) * DIMS)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                ((state >> 40) as i32 % 512 - 256) as f32 / 256.0
            })
            .collect();
        let list =
            FixedSizeListArray::try_new(item.clone(), DIMS as i32, Arc::new(values), None).unwrap();
        let app: StringArray = (start..end)
            .map(|i| Some(format!("{{\"id\":{i}}}")))
            .collect();
        out.push(
            RecordBatch::try_new(schema.clone(), vec![Arc::new(list), Arc::new(app)]).unwrap(),
        );
        start = end;
    }
    out
}

fn write(path: &Path, data: &[RecordBatch], compression: Compression) {
    let schema = data[0].schema();
    let reader = RecordBatchIterator::new(data.iter().cloned().map(Ok), schema);
    vs::write_file(
        path,
        reader,
        WriterOptions::default().with_compression(compression),
    )
    .unwrap();
}

fn read(path: &Path) -> usize {
    ReaderBuilder::new()
        .with_batch_size(BATCH)
        .build(path)
        .unwrap()
        .map(|b| b.unwrap().num_rows())
        .sum()
}

/// Walks the blocks of a VS file written by this bench (plain vectors) and, with `copy`, copies
/// every vector into a values buffer allocated per batch; returns the number of points.
fn floor_walk(path: &Path, copy: bool) -> usize {
    let file = std::fs::File::open(path).unwrap();
    // SAFETY: the bench's own file, not modified while mapped.
    let bytes = unsafe { memmap2::Mmap::map(&file).unwrap() };
    let mut pos = 4;
    let mut points = 0;
    let mut values: Vec<u8> = Vec::new();
    let mut checksum = 0u8;
    loop {
        let kind = bytes[pos];
        if kind == b'$' {
            break;
        }
        let len = u32::from_le_bytes(bytes[pos + 1..pos + 5].try_into().unwrap()) as usize;
        let payload = &bytes[pos + 5..pos + 5 + len];
        pos += 5 + len;
        checksum ^= payload[0];
        if kind != b'P' {
            continue;
        }
        points += 1;
        if copy {
            // option, app_data (length < 128 here), vector option, stored length, vector.
            let app = payload[1] as usize;
            let vector = &payload[2 + app + 5..];
            if values.len() + vector.len() > values.capacity() {
                black_box(&values);
                values = Vec::with_capacity(BATCH * DIMS * 4);
            }
            values.extend_from_slice(vector);
        }
    }
    black_box((checksum, values));
    points
}

fn bench(c: &mut Criterion) {
    let n = rows();
    let (_tmp, dir) = match std::env::var_os("ARROWSMITH_BENCH_DIR") {
        Some(d) => (None, PathBuf::from(d)),
        None => {
            let t = tempfile::tempdir().unwrap();
            let p = t.path().to_path_buf();
            (Some(t), p)
        }
    };
    std::fs::create_dir_all(&dir).unwrap();
    let data = batches(n);
    let wanted = std::env::var("ARROWSMITH_BENCH_CODECS").unwrap_or_default();
    let codecs: Vec<(&str, Compression)> = [
        ("none", Compression::None),
        ("snappy", Compression::Snappy),
        ("gzip", Compression::Gzip),
    ]
    .into_iter()
    .filter(|(name, _)| wanted.is_empty() || wanted.split(',').any(|w| w.trim() == *name))
    .collect();
    assert!(
        codecs.first().is_some_and(|c| c.0 == "none"),
        "ARROWSMITH_BENCH_CODECS must include none (the cat floor reads its file)"
    );
    let files: Vec<PathBuf> = codecs
        .iter()
        .map(|(name, codec)| {
            let path = dir.join(format!("bench_{n}_{name}.vs"));
            // One timed write per codec (gzip is too slow for Criterion's ten samples).
            let start = std::time::Instant::now();
            write(&path, &data, *codec);
            eprintln!(
                "write {name}: {:.2} s (one run)",
                start.elapsed().as_secs_f64()
            );
            path
        })
        .collect();

    let mut g = c.benchmark_group("vs_read");
    g.sampling_mode(SamplingMode::Flat)
        .sample_size(10)
        .measurement_time(Duration::from_secs(10));
    let plain_size = std::fs::metadata(&files[0]).unwrap().len();
    g.throughput(Throughput::Bytes(plain_size));
    g.bench_function("cat_none", |b| {
        b.iter(|| {
            let status = Command::new("cat")
                .arg(&files[0])
                .stdout(Stdio::null())
                .status()
                .unwrap();
            assert!(status.success());
        })
    });
    // Floors for the uncompressed read, to tell the reader's own cost from the machine's:
    // walking the mapped file block by block (touching each block header), and walking it while
    // copying every vector into a fresh values buffer per batch of 8192 — the least any reader
    // producing an Arrow values buffer does.
    g.bench_function("floor_walk_none", |b| {
        b.iter(|| assert_eq!(black_box(floor_walk(&files[0], false)), n))
    });
    g.bench_function("floor_walk_copy_none", |b| {
        b.iter(|| assert_eq!(black_box(floor_walk(&files[0], true)), n))
    });
    for ((name, _), path) in codecs.iter().zip(&files) {
        eprintln!(
            "{name}: {} bytes ({:.1} % of uncompressed)",
            std::fs::metadata(path).unwrap().len(),
            100.0 * std::fs::metadata(path).unwrap().len() as f64 / plain_size as f64
        );
        g.bench_function(*name, |b| b.iter(|| assert_eq!(black_box(read(path)), n)));
    }
    g.finish();

    let mut g = c.benchmark_group("vs_write");
    g.sampling_mode(SamplingMode::Flat)
        .sample_size(10)
        .measurement_time(Duration::from_secs(10));
    g.throughput(Throughput::Bytes(plain_size));
    for (name, codec) in codecs.iter().filter(|c| c.0 != "gzip") {
        let codec = *codec;
        let out = dir.join(format!("out_{name}.vs"));
        g.bench_function(*name, |b| b.iter(|| write(&out, &data, codec)));
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
