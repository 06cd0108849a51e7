//! DataSeries decode and encode speed on the spec's §21 trace-like data (3 000 000 rows: int64
//! time in 2^-32 s, self-relative; int32; two pack_unique variable32 from small vocabularies;
//! double with pack_scale 1e-6; bool; nullable int64), with none, lz4 and zlib, 1 MiB extents.
//!
//! `cargo bench --bench dataseries` (set DS_BENCH_ROWS to change the row count, and
//! DS_BENCH_CODECS=none,lz4 to write and time only those codecs). `encode-dictionary` writes the
//! same rows with `host` and `op` given as dictionaries (as Polars categoricals and DataFusion's
//! dictionary columns arrive), which the writer numbers by key instead of hashing each row.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use arrow_array::*;
use arrow_schema::{DataType, Field, Schema};
use arrowsmith::dataseries::{Mode, ReaderBuilder, Writer, WriterOptions};
use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};

fn rows() -> usize {
    std::env::var("DS_BENCH_ROWS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3_000_000)
}

fn md(pairs: &[(&str, &str)]) -> HashMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (format!("dataseries.{k}"), v.to_string()))
        .collect()
}

/// The trace-like batches, 65 536 rows each.
pub fn trace(n: usize) -> Vec<RecordBatch> {
    let schema = Arc::new(Schema::new(vec![
        Field::new("time", DataType::Int64, false)
            .with_metadata(md(&[("pack_relative", "time"), ("units", "2^-32 seconds")])),
        Field::new("bytes", DataType::Int32, false),
        Field::new("host", DataType::Binary, false).with_metadata(md(&[("pack_unique", "yes")])),
        Field::new("op", DataType::Binary, false).with_metadata(md(&[("pack_unique", "yes")])),
        Field::new("latency", DataType::Float64, false)
            .with_metadata(md(&[("pack_scale", "1e-6")])),
        Field::new("is_read", DataType::Boolean, false),
        Field::new("fh", DataType::Int64, true),
    ]));
    let hosts: Vec<Vec<u8>> = (0..50)
        .map(|i| format!("host{i:03}.example.com").into_bytes())
        .collect();
    let ops: [&[u8]; 6] = [
        b"read", b"write", b"getattr", b"lookup", b"access", b"readdir",
    ];
    let mut x = 0x2545_f491_4f6c_dd1du64;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let mut t: i64 = 1_700_000_000i64 << 32;
    let mut out = Vec::new();
    let mut start = 0;
    while start < n {
        let m = (n - start).min(65_536);
        let mut time = Vec::with_capacity(m);
        let mut bytes = Vec::with_capacity(m);
        let mut host = Vec::with_capacity(m);
        let mut op = Vec::with_capacity(m);
        let mut lat = Vec::with_capacity(m);
        let mut rd = Vec::with_capacity(m);
        let mut fh = Vec::with_capacity(m);
        for _ in 0..m {
            let r = next();
            t += (r % 40_000) as i64;
            time.push(t);
            bytes.push(((r >> 20) % 65_536) as i32);
            host.push(hosts[((r >> 8) % 50) as usize].as_slice());
            op.push(ops[((r >> 16) % 6) as usize]);
            lat.push(((r >> 24) % 1_000_000) as f64 * 1e-6);
            rd.push(r & 1 == 0);
            fh.push(if r % 10 == 0 {
                None
            } else {
                Some((r >> 3) as i64 % 1_000_000)
            });
        }
        out.push(
            RecordBatch::try_new(
                schema.clone(),
                vec![
                    Arc::new(Int64Array::from(time)),
                    Arc::new(Int32Array::from(bytes)),
                    Arc::new(BinaryArray::from(host)),
                    Arc::new(BinaryArray::from(op)),
                    Arc::new(Float64Array::from(lat)),
                    Arc::new(BooleanArray::from(rd)),
                    Arc::new(Int64Array::from(fh)),
                ],
            )
            .unwrap(),
        );
        start += m;
    }
    out
}

/// The trace with its `pack_unique` columns dictionary-encoded, one dictionary per batch.
fn as_dictionaries(batches: &[RecordBatch]) -> Vec<RecordBatch> {
    let dictionary = DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Utf8));
    let schema = batches[0].schema();
    let fields: Vec<Field> = schema
        .fields()
        .iter()
        .map(|f| match f.name().as_str() {
            "host" | "op" => f.as_ref().clone().with_data_type(dictionary.clone()),
            _ => f.as_ref().clone(),
        })
        .collect();
    let schema = Arc::new(Schema::new(fields));
    batches
        .iter()
        .map(|b| {
            let columns = b
                .columns()
                .iter()
                .zip(schema.fields())
                .map(|(c, f)| arrow::compute::cast(c, f.data_type()).unwrap())
                .collect();
            RecordBatch::try_new(schema.clone(), columns).unwrap()
        })
        .collect()
}

fn write(path: &std::path::Path, batches: &[RecordBatch], mode: Mode) {
    let mut w = Writer::try_new(
        path,
        batches[0].schema(),
        WriterOptions::default().with_modes([mode]),
    )
    .unwrap();
    for b in batches {
        w.write(b).unwrap();
    }
    w.finish().unwrap();
}

fn bench(c: &mut Criterion) {
    let n = rows();
    let batches = trace(n);
    let dictionary_batches = as_dictionaries(&batches);
    let dir = tempfile::tempdir().unwrap();
    let mut g = c.benchmark_group("dataseries");
    g.sample_size(10)
        .measurement_time(Duration::from_secs(8))
        .warm_up_time(Duration::from_secs(1));
    g.throughput(Throughput::Elements(n as u64));
    let codecs = std::env::var("DS_BENCH_CODECS").unwrap_or_else(|_| "none,lz4,zlib".into());
    let modes: Vec<Mode> = codecs
        .split(',')
        .map(|c| Mode::from_name(c.trim()).expect("DS_BENCH_CODECS: a DataSeries mode name"))
        .collect();
    for mode in modes {
        let path = dir.path().join(format!("trace-{}.ds", mode.name()));
        write(&path, &batches, mode);
        eprintln!(
            "{}: {} bytes",
            path.display(),
            std::fs::metadata(&path).unwrap().len()
        );
        g.bench_function(format!("decode/{}", mode.name()), |b| {
            b.iter(|| {
                let r = ReaderBuilder::new().build(&path).unwrap();
                let mut rows = 0;
                for batch in r {
                    rows += batch.unwrap().num_rows();
                }
                assert_eq!(rows, n);
            })
        });
        // Each run writes a new file, as the Jay and bcolz benches do: the previous output is
        // deleted before the clock starts. Renaming over it would free its 120 MB of page cache
        // inside the timed rename, a cost of the file system's and not of the encoder's.
        let out = dir.path().join("out.ds");
        for (name, input) in [
            ("encode", &batches),
            ("encode-dictionary", &dictionary_batches),
        ] {
            g.bench_function(format!("{name}/{}", mode.name()), |b| {
                b.iter_batched(
                    || {
                        let _ = std::fs::remove_file(&out);
                    },
                    |()| write(&out, input, mode),
                    BatchSize::PerIteration,
                )
            });
        }
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
