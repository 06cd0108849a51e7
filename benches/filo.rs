//! Filo benchmarks: decoding and encoding one 10M-element vector of each of Int, Long, Double
//! and String, next to a plain copy of the same bytes (the "memory speed" a decoder that must
//! copy into fresh Arrow buffers can approach).
//!
//! Row `i` holds Int `i * 7` (32-bit Simple), Long `i * 1_000_003` (64-bit Simple), Double
//! `i * 0.5`, String `"s" + (i % 100_003)` (100,003 distinct values ≤ len/2, so filo's choice
//! is a DictStringVector with 32-bit codes); every column is NA where `i % 97 == 0`.
//!
//! `ARROWSMITH_BENCH_ROWS` sets the element count (default 10 000 000). filo-scala is not run
//! next to it: see docs/performance.md.

use std::hint::black_box;
use std::sync::Arc;
use std::time::Duration;

use arrow_array::{ArrayRef, Float64Array, Int32Array, Int64Array, StringArray};
use criterion::{criterion_group, criterion_main, Criterion, SamplingMode, Throughput};

use arrowsmith::filo::{decode, encode, inspect, EncodeOptions, FiloType};

fn rows() -> usize {
    match std::env::var("ARROWSMITH_BENCH_ROWS") {
        Ok(v) => v
            .replace('_', "")
            .parse()
            .expect("ARROWSMITH_BENCH_ROWS: a number"),
        Err(_) => 10_000_000,
    }
}

fn columns(n: usize) -> Vec<(&'static str, FiloType, ArrayRef)> {
    let na = |i: usize| i % 97 == 0;
    vec![
        (
            "Int",
            FiloType::Int,
            Arc::new(
                (0..n)
                    .map(|i| (!na(i)).then_some((i * 7) as i32))
                    .collect::<Int32Array>(),
            ),
        ),
        (
            "Long",
            FiloType::Long,
            Arc::new(
                (0..n)
                    .map(|i| (!na(i)).then_some(i as i64 * 1_000_003))
                    .collect::<Int64Array>(),
            ),
        ),
        (
            "Double",
            FiloType::Double,
            Arc::new(
                (0..n)
                    .map(|i| (!na(i)).then_some(i as f64 * 0.5))
                    .collect::<Float64Array>(),
            ),
        ),
        (
            "String",
            FiloType::String,
            Arc::new(
                (0..n)
                    .map(|i| (!na(i)).then(|| format!("s{}", i % 100_003)))
                    .collect::<StringArray>(),
            ),
        ),
    ]
}

fn bench(c: &mut Criterion) {
    let n = rows();
    let mut group = c.benchmark_group("filo");
    group
        .sample_size(10)
        .sampling_mode(SamplingMode::Flat)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(5));
    for (name, filo_type, array) in columns(n) {
        let options = EncodeOptions::default();
        let bytes = encode(array.as_ref(), filo_type, &options).unwrap();
        let info = inspect(&bytes).unwrap();
        eprintln!(
            "{name}: {} elements, {} ({:?}), {} bytes",
            info.len,
            info.wire_type.name(),
            info.info,
            bytes.len()
        );
        let data_type = filo_type.arrow_type();
        group.throughput(Throughput::Bytes(bytes.len() as u64));
        group.bench_function(format!("copy {name} bytes"), |b| {
            b.iter(|| black_box(bytes.to_vec()))
        });
        group.bench_function(format!("decode {name}"), |b| {
            b.iter(|| black_box(decode(&bytes, &data_type).unwrap()))
        });
        group.bench_function(format!("encode {name}"), |b| {
            b.iter(|| black_box(encode(array.as_ref(), filo_type, &options).unwrap()))
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
