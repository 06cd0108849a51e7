//! The parallel pipelines of the bcolz reader and writer: read-ahead (chunks of the next batches
//! decoded in the background) yields exactly what on-demand decoding yields, whatever the batch
//! size, projection, limit or damage; the writer's background chunk jobs (encoding straight from
//! Arrow buffers or from copies) write the same bytes however the input is split, durable or
//! not, and neither side deadlocks inside a one-thread rayon pool. Read through an object
//! source (as from object storage), every fixture reads as it does locally, and a fragment
//! fetches only the chunk files of its rows and columns.

mod common;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::*;
use arrow_schema::{DataType, Field, Schema};
use arrowsmith::bcolz::{self, DatasetInfo, NullPolicy, ReaderBuilder, Writer, WriterOptions};
use arrowsmith::source::{CountingObjects, Counts, LocalDir};
use common::{assert_fetched_within_share, data, fetch_bound, FETCH_SLACK};

/// Every batch (or the error text where reading stops) of one reader.
fn scan(reader: ReaderBuilder, path: &Path) -> Vec<Result<RecordBatch, String>> {
    match reader.build(path) {
        Err(e) => vec![Err(e.to_string())],
        Ok(r) => r.map(|b| b.map_err(|e| e.to_string())).collect(),
    }
}

fn assert_same_scans(path: &Path, configure: impl Fn(ReaderBuilder) -> ReaderBuilder, what: &str) {
    let on_demand = scan(configure(ReaderBuilder::new().with_read_ahead(0)), path);
    for ahead in [1, 2, 5] {
        let ahead_scan = scan(configure(ReaderBuilder::new().with_read_ahead(ahead)), path);
        assert_eq!(
            ahead_scan.len(),
            on_demand.len(),
            "{what}, read-ahead {ahead}: number of batches"
        );
        for (i, (a, b)) in ahead_scan.iter().zip(&on_demand).enumerate() {
            assert_eq!(a, b, "{what}, read-ahead {ahead}, batch {i}");
        }
    }
}

/// A ctable whose columns have different chunklens (bcolz's choice per row size) and many
/// chunks: `id` int64, `small` int8, `name` `<U…`, `raw` `|S…`.
fn mixed(n: usize) -> RecordBatch {
    let schema = Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new("small", DataType::Int8, false),
        Field::new("name", DataType::Utf8, false),
        Field::new("raw", DataType::Binary, false),
    ]));
    let words = ["", "α", "béta", "γάμμα", "delta-delta", "😀"];
    RecordBatch::try_new(
        schema,
        vec![
            Arc::new(Int64Array::from_iter_values(0..n as i64)),
            Arc::new(Int8Array::from_iter_values((0..n).map(|k| (k % 251) as i8))),
            Arc::new(StringArray::from_iter_values(
                (0..n).map(|k| format!("{}{}", words[k % 6], k % 13)),
            )),
            Arc::new(BinaryArray::from_iter_values(
                (0..n).map(|k| vec![(k % 255) as u8 + 1; k % 9]),
            )),
        ],
    )
    .unwrap()
}

fn write_in(path: &Path, batch: &RecordBatch, options: WriterOptions, split: usize) {
    let mut w = Writer::try_new(path, batch.schema(), options).unwrap();
    let mut start = 0;
    while start < batch.num_rows() {
        let len = split.min(batch.num_rows() - start);
        w.write(&batch.slice(start, len)).unwrap();
        start += len;
    }
    w.finish().unwrap();
}

#[test]
fn read_ahead_yields_the_batches_of_on_demand_decoding_on_every_fixture() {
    for entry in std::fs::read_dir(data("bcolz/datasets")).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let chunklen = arrowsmith::bcolz::open_info(&path)
            .ok()
            .and_then(|i| i.columns.first().map(|c| c.chunklen as usize))
            .unwrap_or(100);
        for batch_size in [1, 7, chunklen.max(2) - 1, chunklen, chunklen + 1, 100_000] {
            assert_same_scans(
                &path,
                |r| r.with_batch_size(batch_size),
                &format!("{name}, batch size {batch_size}"),
            );
        }
    }
}

#[test]
fn read_ahead_with_projection_limit_and_columns_of_different_chunklens() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mixed.bcolz");
    let batch = mixed(70_001);
    write_in(
        &path,
        &batch,
        WriterOptions::default().with_expected_len(1000),
        10_000,
    );
    let info = arrowsmith::bcolz::open_info(&path).unwrap();
    let chunklens: Vec<u64> = info.columns.iter().map(|c| c.chunklen).collect();
    assert!(
        chunklens.iter().any(|&c| c != chunklens[0]),
        "the test needs columns of different chunklens: {chunklens:?}"
    );
    let first = chunklens[0] as usize;
    for batch_size in [1000, first - 1, first, first + 1, 65_536] {
        for projection in [vec![3usize, 0], vec![2], vec![0, 1, 2, 3]] {
            for limit in [None, Some(first * 2 + 3)] {
                let what = format!("batch {batch_size}, columns {projection:?}, limit {limit:?}");
                assert_same_scans(
                    &path,
                    |r| {
                        let r = r
                            .with_batch_size(batch_size)
                            .with_projection(projection.clone());
                        match limit {
                            Some(l) => r.with_limit(l),
                            None => r,
                        }
                    },
                    &what,
                );
            }
        }
    }
    // And the read-ahead scan is the data that was written.
    let reader = ReaderBuilder::new()
        .with_batch_size(first + 1)
        .build(&path)
        .unwrap();
    let schema = RecordBatchReader::schema(&reader);
    let batches: Vec<RecordBatch> = reader.map(Result::unwrap).collect();
    let back = arrow::compute::concat_batches(&schema, &batches).unwrap();
    for c in 0..batch.num_columns() {
        assert_eq!(
            back.column(c).to_data(),
            batch.column(c).to_data(),
            "column {c}"
        );
    }
}

#[test]
fn a_damaged_chunk_stops_the_read_ahead_scan_at_its_own_batch() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.bcolz");
    let batch = mixed(1000);
    write_in(
        &path,
        &batch,
        WriterOptions::default().with_chunklen(100),
        1000,
    );
    // Chunk 5 of `id` (rows 500..600) cut short by one byte.
    let chunk = path.join("id/data/__5.blp");
    let bytes = std::fs::read(&chunk).unwrap();
    std::fs::write(&chunk, &bytes[..bytes.len() - 1]).unwrap();
    for ahead in [0, 1, 4] {
        let reader = ReaderBuilder::new()
            .with_batch_size(100)
            .with_read_ahead(ahead)
            .build(&path)
            .unwrap();
        let results: Vec<_> = reader.collect();
        assert_eq!(
            results.len(),
            6,
            "read-ahead {ahead}: five batches, then the error"
        );
        assert!(results[..5].iter().all(Result::is_ok), "read-ahead {ahead}");
        let err = results[5].as_ref().unwrap_err().to_string();
        assert!(err.contains("__5.blp"), "read-ahead {ahead}: {err}");
    }
}

#[test]
fn reading_and_writing_inside_a_one_thread_pool_does_not_deadlock() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.bcolz");
    let batch = mixed(20_000);
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .unwrap();
    let back = pool.install(|| {
        write_in(
            &path,
            &batch,
            WriterOptions::default().with_chunklen(500),
            777,
        );
        let reader = ReaderBuilder::new()
            .with_batch_size(300)
            .with_read_ahead(3)
            .build(&path)
            .unwrap();
        let schema = RecordBatchReader::schema(&reader);
        let batches: Vec<RecordBatch> = reader.map(Result::unwrap).collect();
        arrow::compute::concat_batches(&schema, &batches).unwrap()
    });
    for c in 0..batch.num_columns() {
        assert_eq!(
            back.column(c).to_data(),
            batch.column(c).to_data(),
            "column {c}"
        );
    }
}

/// Every file of a directory tree, by relative path, with its bytes.
fn tree(root: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let p = entry.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push((
                    p.strip_prefix(root).unwrap().to_path_buf(),
                    std::fs::read(&p).unwrap(),
                ));
            }
        }
    }
    out.sort();
    out
}

#[test]
fn the_same_bytes_however_the_input_is_split_and_whether_durable_or_not() {
    let n = 5_003;
    // Nulls in some batches only: chunks mix rows taken straight from Arrow buffers with rows
    // encoded at `write()` (NaN for the nulls).
    let price = Float64Array::from_iter((0..n).map(|k| (k % 700 >= 10).then_some(k as f64 * 0.25)));
    let tensor = FixedSizeListArray::new(
        Arc::new(Field::new("item", DataType::Int32, true)),
        2,
        Arc::new(Int32Array::from_iter_values(0..2 * n as i32)),
        None,
    );
    let base = mixed(n);
    let mut fields: Vec<Field> = base
        .schema()
        .fields()
        .iter()
        .map(|f| f.as_ref().clone())
        .collect();
    fields.push(Field::new("price", DataType::Float64, true));
    fields.push(Field::new("pair", tensor.data_type().clone(), false));
    let mut columns = base.columns().to_vec();
    columns.push(Arc::new(price));
    columns.push(Arc::new(tensor));
    let batch = RecordBatch::try_new(Arc::new(Schema::new(fields)), columns).unwrap();

    let dir = tempfile::tempdir().unwrap();
    let mut trees = Vec::new();
    for (i, (split, durable)) in [(n, true), (1000, false), (333, true), (97, false)]
        .into_iter()
        .enumerate()
    {
        let path = dir.path().join(format!("t{i}.bcolz"));
        let options = WriterOptions::default()
            .with_chunklen(256)
            .with_null_policy(NullPolicy::Sentinel)
            .with_durable(durable);
        write_in(&path, &batch, options, split);
        trees.push(tree(&path));
    }
    assert!(trees[0].len() > 100, "chunk files of every column");
    for (i, t) in trees.iter().enumerate().skip(1) {
        assert_eq!(t, &trees[0], "write {i} differs from the first");
    }
    let reader = ReaderBuilder::new()
        .build(dir.path().join("t3.bcolz"))
        .unwrap();
    let schema = RecordBatchReader::schema(&reader);
    let batches: Vec<RecordBatch> = reader.map(Result::unwrap).collect();
    let back = arrow::compute::concat_batches(&schema, &batches).unwrap();
    let price = back
        .column(4)
        .as_any()
        .downcast_ref::<Float64Array>()
        .unwrap();
    assert!(price.value(700).is_nan() && price.value(710) == 177.5);
    use arrow_array::cast::AsArray;
    assert_eq!(
        back.column(5).as_fixed_size_list().values().to_data(),
        batch.column(5).as_fixed_size_list().values().to_data()
    );
}

#[test]
fn a_writer_dropped_with_chunk_jobs_running_leaves_nothing_behind() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.bcolz");
    let batch = mixed(50_000);
    let mut w = Writer::try_new(
        &path,
        batch.schema(),
        WriterOptions::default().with_chunklen(100),
    )
    .unwrap();
    for start in (0..50_000).step_by(5_000) {
        w.write(&batch.slice(start, 5_000)).unwrap();
    }
    drop(w);
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

/// A scan to compare, and what it is called in messages.
type NamedScan<'a> = (&'a str, Box<dyn Fn() -> ReaderBuilder + 'a>);

/// Every batch (or the error text where reading stops) of one reader of an opened dataset.
fn scan_opened(
    info: &Result<Arc<DatasetInfo>, String>,
    reader: ReaderBuilder,
) -> Vec<Result<RecordBatch, String>> {
    let info = match info {
        Ok(info) => Arc::clone(info),
        Err(e) => return vec![Err(e.clone())],
    };
    match reader.build_from_file(info) {
        Err(e) => vec![Err(e.to_string())],
        Ok(r) => r.map(|b| b.map_err(|e| e.to_string())).collect(),
    }
}

/// The dataset at `path` opened through a counting [`ObjectSource`] over its directory, and
/// the counts of what is fetched through it.
fn open_counted(path: &Path) -> (Result<Arc<DatasetInfo>, String>, Arc<Counts>) {
    let objects = CountingObjects::new(LocalDir::new(path));
    let counts = objects.counts();
    let info = bcolz::open_info_from(Arc::new(objects), None)
        .map(Arc::new)
        .map_err(|e| e.to_string());
    (info, counts)
}

#[test]
fn every_fixture_reads_the_same_through_an_object_source() {
    let mut read = 0;
    for entry in std::fs::read_dir(data("bcolz/datasets")).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let local = bcolz::open_info(&path)
            .map(Arc::new)
            .map_err(|e| e.to_string());
        let (remote, _) = open_counted(&path);
        let (l, r) = match (&local, &remote) {
            (Err(a), Err(b)) => {
                assert_eq!(a, b, "{name}: the same error opening it");
                continue;
            }
            (Ok(l), Ok(r)) => (l, r),
            _ => panic!("{name}: local {local:?}, through objects {remote:?}"),
        };
        read += 1;
        assert_eq!(
            bcolz::schema_of(l, true),
            bcolz::schema_of(r, true),
            "{name}"
        );
        let last = l.columns.last().unwrap().name.clone();
        let scans: [NamedScan; 5] = [
            (
                "whole",
                Box::new(|| ReaderBuilder::new().with_batch_size(777)),
            ),
            (
                "on demand",
                Box::new(|| ReaderBuilder::new().with_read_ahead(0).with_batch_size(500)),
            ),
            (
                "projection",
                Box::new(|| ReaderBuilder::new().with_projection(vec![last.as_str()])),
            ),
            ("limit", Box::new(|| ReaderBuilder::new().with_limit(7))),
            (
                "salvage",
                Box::new(|| ReaderBuilder::new().with_salvage(true).with_batch_size(300)),
            ),
        ];
        for (what, builder) in &scans {
            let want = scan_opened(&local, builder());
            assert_eq!(scan_opened(&remote, builder()), want, "{name}, {what}");
        }
        let target = (l.nrows as usize / 3).max(1);
        let spans = bcolz::fragments(l, target).unwrap();
        let remote_spans = bcolz::fragments(r, target).unwrap();
        assert_eq!(
            spans.iter().map(|s| (s.range, s.rows)).collect::<Vec<_>>(),
            remote_spans
                .iter()
                .map(|s| (s.range, s.rows))
                .collect::<Vec<_>>(),
            "{name}: the same fragments"
        );
        for span in &spans {
            let builder = || ReaderBuilder::new().with_range(span.range);
            let want = scan_opened(&local, builder());
            assert_eq!(
                scan_opened(&remote, builder()),
                want,
                "{name}, {:?}",
                span.range
            );
        }
    }
    assert!(read >= 30, "only {read} fixtures read");
}

/// The bytes of the chunk files of `columns` that rows `start..end` overlap.
fn chunk_bytes(info: &DatasetInfo, columns: &[usize], start: u64, end: u64) -> u64 {
    columns
        .iter()
        .map(|&c| {
            let col = &info.columns[c];
            (start / col.chunklen..end.div_ceil(col.chunklen))
                .map(|k| std::fs::metadata(col.chunk_path(k)).unwrap().len())
                .sum::<u64>()
        })
        .sum()
}

/// Reads every batch of `reader` and gives the rows.
fn rows_of(info: &Result<Arc<DatasetInfo>, String>, reader: ReaderBuilder) -> usize {
    scan_opened(info, reader)
        .into_iter()
        .map(|b| b.unwrap().num_rows())
        .sum()
}

#[test]
fn a_fragment_fetches_only_the_chunk_files_of_its_rows_and_columns() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mixed.bcolz");
    write_in(
        &path,
        &mixed(300_000),
        WriterOptions::default().with_expected_len(1000),
        50_000,
    );
    let local = bcolz::open_info(&path).unwrap();
    let all: Vec<usize> = (0..local.columns.len()).collect();
    let whole = chunk_bytes(&local, &all, 0, local.nrows);
    let spans = bcolz::fragments(&local, 50_000).unwrap();
    assert!(spans.len() >= 4, "{} fragments", spans.len());
    let name = local.columns.iter().position(|c| c.name == "name").unwrap();
    for span in &spans {
        let arrowsmith::FragmentRange::Rows { start, end } = span.range else {
            panic!("{:?}", span.range)
        };
        for columns in [all.clone(), vec![name], vec![0]] {
            let share = chunk_bytes(&local, &columns, start, end);
            let bound = fetch_bound(share);
            assert!(
                whole > bound,
                "the dataset ({whole} bytes) must be larger than a fragment's bound ({bound})"
            );
            // Opened afresh: the metadata objects count too.
            let (info, counts) = open_counted(&path);
            let opening = counts.bytes();
            assert!(opening < FETCH_SLACK, "opening fetched {opening} bytes");
            assert_eq!(
                counts.round_trips(),
                2,
                "the root's objects, then the columns'"
            );
            let reader = ReaderBuilder::new()
                .with_range(span.range)
                .with_projection(columns.clone())
                .with_batch_size(7_000);
            assert_eq!(rows_of(&info, reader), span.rows as usize);
            let fetched = counts.bytes() - opening;
            let what = format!("rows {start}..{end}, columns {columns:?}");
            assert_eq!(
                fetched, share,
                "{what}: the chunk files it overlaps, each once"
            );
            assert_fetched_within_share(&what, counts.bytes(), share);
        }
    }
    // A one-column projection of the whole dataset fetches that column's chunk files; a
    // limit, the chunks of its rows.
    for (c, col) in local.columns.iter().enumerate() {
        let (info, counts) = open_counted(&path);
        let opening = counts.bytes();
        let reader = ReaderBuilder::new().with_projection(vec![c]);
        assert_eq!(rows_of(&info, reader), 300_000);
        let column = chunk_bytes(&local, &[c], 0, local.nrows);
        assert_eq!(counts.bytes() - opening, column, "column {:?}", col.name);
        assert!(whole > fetch_bound(column));
    }
    let (info, counts) = open_counted(&path);
    let opening = counts.bytes();
    assert_eq!(rows_of(&info, ReaderBuilder::new().with_limit(10)), 10);
    assert_eq!(counts.bytes() - opening, chunk_bytes(&local, &all, 0, 10));
}

#[test]
fn a_missing_or_damaged_object_is_an_error_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.bcolz");
    write_in(
        &path,
        &mixed(1000),
        WriterOptions::default().with_chunklen(100),
        1000,
    );
    let chunk = path.join("name/data/__3.blp");
    std::fs::remove_file(&chunk).unwrap();
    for ahead in [0, 2] {
        let (info, _) = open_counted(&path);
        let scan = scan_opened(&info, ReaderBuilder::new().with_read_ahead(ahead));
        let err = scan.last().unwrap().as_ref().unwrap_err();
        assert!(
            err.contains("missing chunk file: it must hold rows 300..400"),
            "{err}"
        );
        assert!(err.contains(&chunk.display().to_string()), "{err}");
        // Salvage skips its rows in every column.
        let salvaged = scan_opened(&info, ReaderBuilder::new().with_salvage(true));
        let rows: usize = salvaged
            .iter()
            .map(|b| b.as_ref().unwrap().num_rows())
            .sum();
        assert_eq!(rows, 900);
    }
    std::fs::write(&chunk, b"blpk").unwrap();
    let (info, _) = open_counted(&path);
    let err = scan_opened(&info, ReaderBuilder::new())
        .pop()
        .unwrap()
        .unwrap_err();
    assert!(err.contains("at least 32 bytes"), "{err}");
    assert!(err.contains(&chunk.display().to_string()), "{err}");
    // A column's metadata object, and the whole dataset, missing.
    let storage = path.join("raw/meta/storage");
    std::fs::remove_file(&storage).unwrap();
    let err = open_counted(&path).0.unwrap_err();
    assert!(err.contains("missing file"), "{err}");
    assert!(err.contains(&storage.display().to_string()), "{err}");
    let nothing = dir.path().join("nothing");
    let err = open_counted(&nothing).0.unwrap_err();
    assert!(err.contains("not a bcolz directory"), "{err}");
    assert!(err.contains(&nothing.display().to_string()), "{err}");
}
