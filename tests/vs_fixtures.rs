//! Every VS fixture against its manifest: meta, Arrow types and every value; rejected files must
//! fail with the error their manifest names. Read by ranges (through a counting source, which
//! reads as a remote object does), every fixture reads as it does mapped, and a fragment of a
//! larger file fetches about its own bytes.

mod common;

use std::path::Path;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::*;
use arrow_array::{
    Array, FixedSizeListArray, Float32Array, RecordBatch, RecordBatchIterator, RecordBatchReader,
    StringArray,
};
use arrow_schema::{DataType, Field, Schema};
use arrowsmith::scan::FragmentSpan;
use arrowsmith::source::{ByteSource, Counting, Counts, LocalFile};
use arrowsmith::vs::{self, AppDataMode, Compression, ReaderBuilder, VsFile, WriterOptions};
use arrowsmith::Error;
use common::{assert_fetched_within_share, data};
use serde_json::Value;

fn manifest() -> serde_json::Map<String, Value> {
    let text = std::fs::read_to_string(data("vs").join("manifest.json")).unwrap();
    serde_json::from_str::<Value>(&text)
        .unwrap()
        .as_object()
        .unwrap()
        .clone()
}

/// The flattened vector of row `row` as JSON values.
fn vector_values(batch: &RecordBatch, row: usize) -> Vec<Value> {
    let list = batch.column(0).as_fixed_size_list();
    let values = list.value(row);
    let n = values.len();
    macro_rules! ints {
        ($t:ty) => {
            (0..n)
                .map(|i| Value::from(values.as_primitive::<$t>().value(i)))
                .collect()
        };
    }
    match values.data_type() {
        DataType::Boolean => (0..n)
            .map(|i| Value::from(values.as_boolean().value(i)))
            .collect(),
        DataType::Int16 => ints!(Int16Type),
        DataType::Float32 => (0..n)
            .map(|i| Value::from(values.as_primitive::<Float32Type>().value(i) as f64))
            .collect(),
        DataType::Float64 => ints!(Float64Type),
        DataType::Utf8 => (0..n)
            .map(|i| Value::from(values.as_string::<i32>().value(i)))
            .collect(),
        other => panic!("no manifest comparison for {other}"),
    }
}

fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) if x.is_f64() || y.is_f64() => {
            x.as_f64().map(f64::to_bits) == y.as_f64().map(f64::to_bits)
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| same(a, b))
        }
        _ => a == b,
    }
}

fn check_valid(name: &str, entry: &Value, lenient: bool) {
    let path = data("vs").join(name);
    let reader = ReaderBuilder::new()
        .with_lenient_eof(lenient)
        .with_batch_size(2)
        .build(&path)
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    let schema = reader.schema();
    let batches: Vec<RecordBatch> = reader
        .collect::<Result<_, _>>()
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    let md = schema.metadata();
    assert_eq!(md["vs.version"], entry["version"].to_string(), "{name}");
    let meta = &entry["meta"];
    if meta.is_null() {
        assert_eq!(md["vs.meta"], "absent");
        assert_eq!(schema.fields().len(), 1);
        assert!(batches.iter().all(|b| b.num_rows() == 0));
        return;
    }
    for key in ["rank", "resolution", "pack", "paging"] {
        assert_eq!(
            md[&format!("vs.{key}")],
            meta[key].to_string(),
            "{name} {key}"
        );
    }
    assert_eq!(
        md["vs.resolution_name"],
        meta["resolution_name"].as_str().unwrap()
    );
    assert_eq!(
        serde_json::from_str::<Value>(&md["vs.dimensions"]).unwrap(),
        meta["dimensions"]
    );
    assert_eq!(
        serde_json::from_str::<Value>(&md["vs.attributes"]).unwrap(),
        meta["attributes"],
        "{name}"
    );
    let vector = schema.field(0);
    let n = entry["element_count"].as_u64().unwrap() as i32;
    match vector.data_type() {
        DataType::FixedSizeList(item, size) => {
            assert_eq!(*size, n, "{name}");
            assert!(!item.is_nullable());
        }
        other => panic!("{name}: vector is {other}"),
    }
    let resolution = meta["resolution"].as_i64().unwrap();
    let shape = format!("{{\"shape\":{}}}", md["vs.dimensions"]);
    if resolution < 100 {
        assert_eq!(
            vector.metadata()["ARROW:extension:name"],
            "arrow.fixed_shape_tensor"
        );
        assert_eq!(vector.metadata()["ARROW:extension:metadata"], shape);
    } else {
        assert_eq!(vector.metadata()["vs.shape"], md["vs.dimensions"]);
    }
    assert_eq!(
        schema.field(1).metadata()["ARROW:extension:name"],
        "arrow.json"
    );

    let points = entry["points"].as_array().unwrap();
    let rows: usize = batches.iter().map(|b| b.num_rows()).sum();
    assert_eq!(rows, points.len(), "{name}");
    let mut i = 0;
    for batch in &batches {
        assert!(batch.num_rows() <= 2);
        for row in 0..batch.num_rows() {
            let want = &points[i];
            let app = batch.column(1).as_string::<i32>();
            let got_app = if app.is_null(row) {
                Value::Null
            } else {
                serde_json::from_str(app.value(row)).unwrap()
            };
            assert_eq!(got_app, want["app_data"], "{name} point {i}");
            let got: Vec<Value> = if resolution == 101 {
                let list = batch.column(0).as_fixed_size_list().value(row);
                let s = list.as_string::<i32>();
                (0..s.len())
                    .map(|k| serde_json::from_str(s.value(k)).unwrap())
                    .collect()
            } else {
                vector_values(batch, row)
            };
            let want_vec = want["vector"].as_array().unwrap();
            assert!(
                got.len() == want_vec.len() && got.iter().zip(want_vec).all(|(a, b)| same(a, b)),
                "{name} point {i}: got {got:?}, want {want_vec:?}"
            );
            i += 1;
        }
    }
}

#[test]
fn every_fixture_matches_its_manifest() {
    let manifest = manifest();
    let mut seen = 0;
    for (name, entry) in &manifest {
        seen += 1;
        let path = data("vs").join(name);
        match &entry["valid"] {
            Value::Bool(true) => {
                check_valid(name, entry, false);
                check_valid(name, entry, true);
            }
            Value::String(s) if s == "lenient-only" => {
                let e = ReaderBuilder::new()
                    .build(&path)
                    .and_then(|r| {
                        r.collect::<Result<Vec<_>, _>>()
                            .map_err(Error::from_arrow_owned)
                    })
                    .map(|_| ())
                    .expect_err(name);
                let want = entry["error"].as_str().unwrap();
                assert!(e.to_string().contains(want), "{name}: {e}");
                assert!(e.to_string().contains(name.as_str()), "{name}: {e}");
                check_valid(name, entry, true);
            }
            Value::Bool(false) => {
                for lenient in [false, true] {
                    let e = ReaderBuilder::new()
                        .with_lenient_eof(lenient)
                        .build(&path)
                        .and_then(|r| {
                            r.collect::<Result<Vec<_>, _>>()
                                .map_err(Error::from_arrow_owned)
                        })
                        .map(|_| ())
                        .expect_err(name);
                    let want = entry["error"].as_str().unwrap();
                    assert!(e.to_string().contains(want), "{name}: {e}");
                    assert!(e.to_string().contains(name.as_str()), "{name}: {e}");
                }
            }
            other => panic!("{name}: valid = {other}"),
        }
    }
    assert_eq!(seen, 11);
}

#[test]
fn deleted_point_and_blank_block_give_no_row_and_offsets_are_block_starts() {
    let reader = ReaderBuilder::new()
        .with_offsets(true)
        .build(data("vs").join("bool_r1_deleted.vs"))
        .unwrap();
    let batch = reader.into_iter().next().unwrap().unwrap();
    let offsets = batch.column(2).as_primitive::<UInt64Type>();
    // header 4 + meta 12 + blank 5 = 21; live point 19 bytes, deleted 19 bytes.
    assert_eq!(offsets.values().to_vec(), vec![21, 59]);
    let bytes = std::fs::read(data("vs").join("bool_r1_deleted.vs")).unwrap();
    assert!(offsets.values().iter().all(|&o| bytes[o as usize] == b'P'));
}

#[test]
fn exact_mode_keeps_msgpack_bytes() {
    let reader = ReaderBuilder::new()
        .with_app_data(AppDataMode::Msgpack)
        .build(data("vs").join("json_r1.vs"))
        .unwrap();
    let schema = reader.schema();
    assert_eq!(schema.metadata()["vs.attributes.msgpack"], "gA==");
    let batch = reader.into_iter().next().unwrap().unwrap();
    let app = batch.column(1).as_binary::<i32>();
    assert_eq!(app.value(0), [0x81, 0xA2, b'i', b'd', 0x01]);
    let elems = batch.column(0).as_fixed_size_list().value(0);
    let elems = elems.as_binary::<i32>();
    assert_eq!(elems.value(0), [0x81, 0xA1, b'a', 0x01]);
    assert_eq!(elems.value(1), [0x93, 0x01, 0xA1, b'x', 0xC0]);
}

#[test]
fn projection_and_limit() {
    let reader = ReaderBuilder::new()
        .with_projection(["app_data"])
        .with_limit(2)
        .build(data("vs").join("f64_r1_plain.vs"))
        .unwrap();
    let batches: Vec<_> = reader.collect::<Result<_, _>>().unwrap();
    assert_eq!(batches.iter().map(|b| b.num_rows()).sum::<usize>(), 2);
    assert_eq!(batches[0].num_columns(), 1);
    assert_eq!(
        batches[0].column(0).as_string::<i32>().value(1),
        r#"{"id":2,"label":"b"}"#
    );
}

/// The batches of `file` read with `builder`, or the error's text.
fn read_file(file: &Arc<VsFile>, builder: ReaderBuilder) -> Result<Vec<RecordBatch>, String> {
    builder
        .build_from_file(Arc::clone(file))
        .map_err(|e| e.to_string())?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| Error::from_arrow_owned(e).to_string())
}

/// `path` opened through a counting source, which reads as a remote object: by ranges.
fn open_counted(path: &Path) -> (Arc<VsFile>, Arc<Counts>) {
    let source = Counting::new(LocalFile::open(path).unwrap());
    let counts = source.counts();
    let file = VsFile::open_source(Arc::new(source), Default::default());
    (Arc::new(file.unwrap()), counts)
}

#[test]
fn every_fixture_read_by_ranges_reads_as_mapped() {
    let manifest = manifest();
    for name in manifest.keys() {
        let path = data("vs").join(name);
        let local = vs::VsFile::open(&path, Default::default());
        let source = Counting::new(LocalFile::open(&path).unwrap());
        let counts = source.counts();
        assert!(!source.is_local());
        let remote = VsFile::open_source(Arc::new(source), Default::default());
        let (local, remote) = match (local, remote) {
            (Ok(local), Ok(remote)) => (Arc::new(local), Arc::new(remote)),
            (Err(a), Err(b)) => {
                assert_eq!(a.to_string(), b.to_string(), "{name}");
                continue;
            }
            (a, b) => panic!("{name}: {:?} / {:?}", a.err(), b.err()),
        };
        // Opening reads the fixture (smaller than the first read) in one round trip.
        assert_eq!(counts.round_trips(), 1, "{name}");
        let builders: [fn() -> ReaderBuilder; 4] = [
            || ReaderBuilder::new(),
            || ReaderBuilder::new().with_projection(["app_data"]),
            || ReaderBuilder::new().with_limit(1),
            || {
                ReaderBuilder::new()
                    .with_lenient_eof(true)
                    .with_offsets(true)
            },
        ];
        for (i, builder) in builders.iter().enumerate() {
            assert_eq!(
                read_file(&local, builder()),
                read_file(&remote, builder()),
                "{name}: read {i}"
            );
        }
        for target in [1, 2] {
            let spans = vs::fragments(&local, target).map_err(|e| e.to_string());
            assert_eq!(
                format!("{spans:?}"),
                format!(
                    "{:?}",
                    vs::fragments(&remote, target).map_err(|e| e.to_string())
                ),
                "{name}"
            );
            for span in spans.unwrap_or_default() {
                let builder = || ReaderBuilder::new().with_range(span.range);
                assert_eq!(
                    read_file(&local, builder()),
                    read_file(&remote, builder()),
                    "{name}: {span:?}"
                );
            }
        }
        assert_eq!(counts.round_trips(), 1, "{name}: read again");
    }
}

/// Writes `points` points of `dims` float32 elements (pseudo-random, like quantised
/// embeddings) and app data `{"id": i}` to `path`.
fn write_points(path: &Path, points: usize, dims: usize, compression: Compression) {
    let item = Arc::new(Field::new("item", DataType::Float32, false));
    let schema = Arc::new(Schema::new(vec![
        Field::new(
            "vector",
            DataType::FixedSizeList(item.clone(), dims as i32),
            false,
        ),
        Field::new("app_data", DataType::Utf8, true),
    ]));
    let mut rng = common::Rng(0x9E37_79B9_7F4A_7C15);
    let batches: Vec<RecordBatch> = (0..points)
        .step_by(1000)
        .map(|start| {
            let end = (start + 1000).min(points);
            let values: Float32Array = (0..(end - start) * dims)
                .map(|_| (rng.next() >> 40) as i32 as f32 / 256.0)
                .collect();
            let list =
                FixedSizeListArray::try_new(item.clone(), dims as i32, Arc::new(values), None)
                    .unwrap();
            let app: StringArray = (start..end)
                .map(|i| Some(format!("{{\"id\":{i}}}")))
                .collect();
            RecordBatch::try_new(schema.clone(), vec![Arc::new(list), Arc::new(app)]).unwrap()
        })
        .collect();
    let reader = RecordBatchIterator::new(batches.into_iter().map(Ok), schema);
    vs::write_file(
        path,
        reader,
        WriterOptions::default().with_compression(compression),
    )
    .unwrap();
}

/// Reads each fragment of `spans` as a worker does, from a file it opens itself: what it
/// fetches, open included, stays within 1.25 × the fragment's bytes + 64 KiB, and it reads the
/// rows the mapped file gives for that fragment.
fn check_fragments_fetch_their_share(path: &Path, spans: &[FragmentSpan], mapped: &Arc<VsFile>) {
    for span in spans {
        let (file, counts) = open_counted(path);
        let builder = || ReaderBuilder::new().with_range(span.range);
        let rows = read_file(&file, builder()).unwrap();
        assert_eq!(rows, read_file(mapped, builder()).unwrap(), "{span:?}");
        assert_fetched_within_share(
            format_args!("{span:?} in {} round trips", counts.round_trips()),
            counts.bytes(),
            span.bytes,
        );
        eprintln!(
            "fragment of {} rows, {} bytes: {} bytes fetched in {} round trips (open included)",
            span.rows,
            span.bytes,
            counts.bytes(),
            counts.round_trips()
        );
    }
}

#[test]
fn a_fragment_read_by_ranges_fetches_its_share() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("points.vs");
    // 6,000 points of 2 KiB vectors: 12.5 MB, the larger fragments past one 8 MiB window.
    write_points(&path, 6000, 512, Compression::None);
    let size = std::fs::metadata(&path).unwrap().len();
    let mapped = Arc::new(VsFile::open(&path, Default::default()).unwrap());

    let (file, counts) = open_counted(&path);
    let (open_trips, open_bytes) = (counts.round_trips(), counts.bytes());
    eprintln!("open: {open_bytes} bytes in {open_trips} round trip(s)");
    assert_eq!(open_trips, 1);
    assert!(open_bytes <= 64 << 10, "open read {open_bytes} bytes");

    counts.reset();
    let spans = vs::fragments(&file, 1000).unwrap();
    let listing = (counts.round_trips(), counts.bytes());
    eprintln!(
        "listing {} fragments of a {size}-byte file: {} bytes in {} round trips",
        spans.len(),
        listing.1,
        listing.0
    );
    assert_eq!(spans, vs::fragments(&mapped, 1000).unwrap());
    assert_eq!(spans.len(), 6);
    assert!(listing.1 <= size, "{listing:?}");
    // The table is kept: listing again (with another target) reads nothing.
    counts.reset();
    let big = vs::fragments(&file, 4500).unwrap();
    assert_eq!(big, vs::fragments(&mapped, 4500).unwrap());
    assert_eq!(file.live_points().unwrap(), 6000);
    assert_eq!(counts.round_trips(), 0);

    check_fragments_fetch_their_share(&path, &spans, &mapped);
    assert!(big[0].bytes > 8 << 20, "{big:?}");
    check_fragments_fetch_their_share(&path, &big, &mapped);

    // The whole file, and the first rows of it.
    let (file, counts) = open_counted(&path);
    assert_eq!(
        read_file(&file, ReaderBuilder::new()).unwrap(),
        read_file(&mapped, ReaderBuilder::new()).unwrap()
    );
    assert!(counts.bytes() <= size, "{:?}", counts);
    let (file, counts) = open_counted(&path);
    let limited = || ReaderBuilder::new().with_limit(10);
    assert_eq!(
        read_file(&file, limited()).unwrap(),
        read_file(&mapped, limited()).unwrap()
    );
    assert!(counts.bytes() <= 2 * (64 << 10), "{:?}", counts);
}

#[test]
fn listing_a_file_of_large_vectors_by_ranges_reads_its_headers_not_its_vectors() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("large.vs");
    // 10 points of 2 MiB vectors.
    write_points(&path, 10, 512 << 10, Compression::None);
    let size = std::fs::metadata(&path).unwrap().len();
    let (file, counts) = open_counted(&path);
    counts.reset();
    let spans = vs::fragments(&file, 3).unwrap();
    let mapped = Arc::new(VsFile::open(&path, Default::default()).unwrap());
    assert_eq!(spans, vs::fragments(&mapped, 3).unwrap());
    eprintln!(
        "listing a {size}-byte file of 2 MiB points: {} bytes in {} round trips",
        counts.bytes(),
        counts.round_trips()
    );
    assert!(counts.bytes() < size / 8, "{counts:?}");
    check_fragments_fetch_their_share(&path, &spans, &mapped);
}
