//! Appending in place to datasets bcolz wrote (spec B5): leftover chunks completed, new chunks
//! added, big-endian and string columns kept in their dtype; an append dropped before
//! `finish()` leaves the previous contents readable; mismatched inputs are refused.

mod common;
#[path = "common/small_disk.rs"]
mod small_disk;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::{ArrayRef, RecordBatch, RecordBatchReader, StringArray, UInt32Array};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use arrowsmith::bcolz::LockWait;
use arrowsmith::bcolz::{Appender, NullPolicy, ReaderBuilder};
use common::{copy_dir, data};
use small_disk::SmallDisk;

fn read_one(path: &Path) -> RecordBatch {
    let reader = ReaderBuilder::new()
        .with_batch_size(500)
        .build(path)
        .unwrap();
    let schema = reader.schema();
    let batches: Vec<RecordBatch> = reader.map(Result::unwrap).collect();
    arrow::compute::concat_batches(&schema, &batches).unwrap()
}

fn append(path: &Path, batch: &RecordBatch, split: usize) {
    let mut a = Appender::try_new(path, batch.schema(), NullPolicy::Sentinel).unwrap();
    let mut start = 0;
    while start < batch.num_rows() {
        let len = split.min(batch.num_rows() - start);
        a.write(&batch.slice(start, len)).unwrap();
        start += len;
    }
    a.finish().unwrap();
}

#[test]
fn appending_to_datasets_bcolz_wrote() {
    for name in [
        "num_int32",
        "stale_leftover",
        "big_endian_i4",
        "unicode_U5",
        "bytes_S8",
        "twod_f8",
        "datetime64_ns",
        "ctable_zipline_like",
        "ctable_mixed",
        "ctable_altered",
        "empty_i8",
        "single_partial",
        "legacy_meta_v0",
        "cp_zstd_sh1",
    ] {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join(name);
        copy_dir(&data("bcolz/datasets").join(name), &path);
        let before = read_one(&path);
        // Twice, in odd-sized pieces, so that leftovers are completed and chunks added.
        append(&path, &before, 333);
        append(&path, &before.slice(0, before.num_rows().min(10)), 3);
        let after = read_one(&path);
        let expected = arrow::compute::concat_batches(
            &before.schema(),
            &[
                before.clone(),
                before.clone(),
                before.slice(0, before.num_rows().min(10)),
            ],
        )
        .unwrap();
        assert_eq!(after.num_rows(), expected.num_rows(), "{name}");
        for c in 0..expected.num_columns() {
            assert_eq!(
                after.column(c).to_data(),
                expected.column(c).to_data(),
                "{name} column {c}"
            );
        }
        // The dtype and cparams are kept.
        let first = after.schema().field(0).metadata()["bcolz.dtype"].clone();
        assert_eq!(
            first,
            before.schema().field(0).metadata()["bcolz.dtype"],
            "{name}"
        );
    }
}

#[test]
fn an_append_dropped_before_finish_changes_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("t");
    copy_dir(&data("bcolz/datasets").join("ctable_zipline_like"), &path);
    let before = read_one(&path);
    let mut a = Appender::try_new(&path, before.schema(), NullPolicy::Reject).unwrap();
    for _ in 0..20 {
        a.write(&before).unwrap(); // cuts and writes many chunks
    }
    drop(a);
    let after = read_one(&path);
    assert_eq!(after.num_rows(), before.num_rows());
    for c in 0..before.num_columns() {
        assert_eq!(after.column(c).to_data(), before.column(c).to_data());
    }
    // And the next append starts from the committed length.
    append(&path, &before, 1000);
    assert_eq!(read_one(&path).num_rows(), 2 * before.num_rows());
}

#[test]
fn mismatched_inputs_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("u");
    copy_dir(&data("bcolz/datasets").join("unicode_U5"), &path);
    let strings = Arc::new(Schema::new(vec![Field::new("x", DataType::Utf8, false)]));
    let long = RecordBatch::try_new(
        strings.clone(),
        vec![Arc::new(StringArray::from(vec!["ok", "toolong"]))],
    )
    .unwrap();
    let mut a = Appender::try_new(&path, strings, NullPolicy::Reject).unwrap();
    let err = a.write(&long).unwrap_err();
    assert!(
        err.to_string().contains("row 1") && err.to_string().contains("width 5"),
        "{err}"
    );
    drop(a);
    assert_eq!(read_one(&path).num_rows(), 1200);

    let ints = Arc::new(Schema::new(vec![Field::new("x", DataType::Int32, false)]));
    let err = Appender::try_new(&path, ints.clone(), NullPolicy::Reject)
        .err()
        .unwrap();
    assert!(err.to_string().contains("<U5"), "{err}");

    let table = tmp.path().join("t");
    copy_dir(&data("bcolz/datasets").join("ctable_altered"), &table);
    let err = Appender::try_new(&table, ints, NullPolicy::Reject)
        .err()
        .unwrap();
    assert!(err.to_string().contains("\"x\""), "{err}");
    let b = RecordBatch::try_new(
        Arc::new(Schema::new(vec![Field::new("b", DataType::Float64, false)])),
        vec![Arc::new(arrow_array::Float64Array::from(vec![1.0]))],
    )
    .unwrap();
    let err = Appender::try_new(&table, b.schema(), NullPolicy::Reject)
        .err()
        .unwrap();
    assert!(err.to_string().contains("café"), "{err}");
}

/// Every file under `dir` and its bytes.
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    fn walk(root: &Path, dir: &Path, into: &mut BTreeMap<PathBuf, Vec<u8>>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(root, &path, into);
            } else {
                let bytes = std::fs::read(&path).unwrap();
                into.insert(path.strip_prefix(root).unwrap().to_path_buf(), bytes);
            }
        }
    }
    let mut files = BTreeMap::new();
    walk(dir, dir, &mut files);
    files
}

/// The names in `after` that are not in `before` or differ, for a readable failure.
fn changes(before: &BTreeMap<PathBuf, Vec<u8>>, after: &BTreeMap<PathBuf, Vec<u8>>) -> String {
    let mut out = Vec::new();
    for (name, bytes) in after {
        match before.get(name) {
            None => out.push(format!("+{}", name.display())),
            Some(old) if old != bytes => out.push(format!("~{}", name.display())),
            _ => {}
        }
    }
    for name in before.keys().filter(|n| !after.contains_key(*n)) {
        out.push(format!("-{}", name.display()));
    }
    out.join(" ")
}

/// `rows` rows of random values (which no codec compresses) for `schema`'s uint32 columns.
fn random_rows(schema: &SchemaRef, rows: usize, seed: u64) -> RecordBatch {
    let mut state = seed | 1;
    let columns = schema
        .fields()
        .iter()
        .map(|_| {
            let values: Vec<u32> = (0..rows)
                .map(|_| {
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    state as u32
                })
                .collect();
            Arc::new(UInt32Array::from(values)) as ArrayRef
        })
        .collect();
    RecordBatch::try_new(schema.clone(), columns).unwrap()
}

#[test]
fn an_append_that_fills_the_disk_leaves_the_dataset_as_it_was() {
    let Some(disk) = SmallDisk::mount(2 << 20) else {
        return;
    };
    let path = disk.path().join("bars");
    copy_dir(&data("bcolz/datasets").join("ctable_zipline_like"), &path);
    let before = snapshot(&path);
    let rows_before = read_one(&path).num_rows();
    let free = disk.free_bytes();
    let schema = read_one(&path).schema();
    let mut appender = Appender::try_new(&path, schema.clone(), NullPolicy::Reject).unwrap();
    let mut seed = 1;
    let e = loop {
        seed += 1;
        let written = appender.write(&random_rows(&schema, 50_000, seed));
        if let Err(e) = written {
            drop(appender); // what the command line does after a failed write
            break e;
        }
        if seed > 100 {
            // Not full yet after 35 MB: the last chunks must not fit.
            break appender.finish().unwrap_err();
        }
    };
    assert_eq!(e.io_kind(), Some(std::io::ErrorKind::StorageFull), "{e}");
    let after = snapshot(&path);
    assert!(after == before, "changed: {}", changes(&before, &after));
    assert_eq!(disk.free_bytes(), free, "the space is not back");
    assert_eq!(read_one(&path).num_rows(), rows_before);

    // The same when the disk fills in finish(), at every point: with the disk filled up to
    // one page more each round, the last chunks (7 of 12 pages), then each meta/sizes
    // fail, until the append fits.
    let filler = disk.path().join("filler");
    let page = 4096;
    let more = random_rows(&schema, 10_000, 5);
    let mut failures = 0;
    for budget in 40..200u64 {
        let _ = std::fs::remove_file(&filler);
        let fill = disk.free_bytes() - budget * page;
        std::fs::write(&filler, vec![0u8; fill as usize]).unwrap();
        let free = disk.free_bytes();
        let mut appender = Appender::try_new(&path, schema.clone(), NullPolicy::Reject).unwrap();
        appender.write(&more).unwrap(); // less than a chunk: nothing written yet
        match appender.finish() {
            Ok(_) => break,
            Err(e) => {
                assert_eq!(e.io_kind(), Some(std::io::ErrorKind::StorageFull), "{e}");
                failures += 1;
            }
        }
        let after = snapshot(&path);
        assert!(
            after == before,
            "{budget} pages: changed: {}",
            changes(&before, &after)
        );
        assert_eq!(
            disk.free_bytes(),
            free,
            "{budget} pages: the space is not back"
        );
    }
    assert!(failures > 0, "no append failed: the budgets are too large");
    assert_eq!(read_one(&path).num_rows(), rows_before + 10_000);
    std::fs::remove_file(&filler).unwrap();

    // And the space is usable: a small append fits and commits.
    let more = random_rows(&schema, 1000, 7);
    append(&path, &more, 1000);
    assert_eq!(read_one(&path).num_rows(), rows_before + 11_000);
}

/// Child: one append that dies just before its commit (the test hook in `finish`).
#[test]
fn child_bcolz_append_dies_before_commit() {
    let Some(path) = std::env::var_os("BCOLZ_ABORT_CHILD") else {
        return;
    };
    let path = PathBuf::from(path);
    let schema = read_one(&path).schema();
    let mut appender = Appender::try_new(&path, schema.clone(), NullPolicy::Reject).unwrap();
    appender.write(&random_rows(&schema, 100_000, 3)).unwrap();
    let _ = appender.finish();
}

#[test]
fn what_a_crashed_append_leaves_goes_with_the_next_append() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("bars");
    copy_dir(&data("bcolz/datasets").join("ctable_zipline_like"), &path);
    let before = snapshot(&path);
    let rows_before = read_one(&path);
    let status = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "child_bcolz_append_dies_before_commit",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("BCOLZ_ABORT_CHILD", &path)
        .env("ARROWSMITH_CRASH_AT", "bcolz-append-synced")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .unwrap();
    assert!(!status.success());
    // What the crash left: new chunks past the committed rows, the chunks' and the other
    // columns' meta/sizes' originals kept beside them, other columns' meta/sizes ahead.
    let crashed = snapshot(&path);
    let left = changes(&before, &crashed);
    assert!(
        left.contains("+close/data/__3.blp") && left.contains("+close/meta/.sizes.arrowsmith-orig"),
        "{left}"
    );
    // Readers see the rows before the append.
    let read = read_one(&path);
    assert_eq!(read.num_rows(), rows_before.num_rows());
    assert_eq!(read.column(6).to_data(), rows_before.column(6).to_data());
    // Opening for append removes it all; the replaced leftover chunks hold the committed rows
    // first (and more after them, which no reader reads).
    drop(Appender::try_new(&path, read.schema(), NullPolicy::Reject).unwrap());
    let cleaned = snapshot(&path);
    let left = changes(&before, &cleaned);
    assert!(
        left.split(' ')
            .all(|c| c.starts_with('~') && c.ends_with("/data/__0.blp")),
        "{left}"
    );
    let read = read_one(&path);
    for c in 0..read.num_columns() {
        assert_eq!(read.column(c).to_data(), rows_before.column(c).to_data());
    }
    // And the next append goes on from the committed rows.
    append(&path, &rows_before, 4000);
    assert_eq!(read_one(&path).num_rows(), 2 * rows_before.num_rows());
}

#[test]
fn a_second_appender_waits_or_is_told_the_dataset_is_busy() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("bars");
    copy_dir(&data("bcolz/datasets").join("ctable_zipline_like"), &path);
    let rows = read_one(&path);
    let schema = rows.schema();
    let mut first = Appender::try_new(&path, schema.clone(), NullPolicy::Reject).unwrap();
    first.write(&rows).unwrap();
    let e = Appender::try_new_with_lock(&path, schema.clone(), NullPolicy::Reject, LockWait::Try)
        .err()
        .unwrap();
    assert!(
        e.to_string()
            .contains("is being appended to by another process"),
        "{e}"
    );
    assert!(e.to_string().contains("bars"), "{e}");
    // A waiting appender starts once the first has committed, from its rows.
    let waiting = {
        let (path, rows) = (path.clone(), rows.clone());
        std::thread::spawn(move || append(&path, &rows, 700))
    };
    std::thread::sleep(std::time::Duration::from_millis(200));
    assert!(!waiting.is_finished(), "the second appender did not wait");
    first.finish().unwrap();
    waiting.join().unwrap();
    assert_eq!(read_one(&path).num_rows(), 3 * rows.num_rows());
}

/// `mode = append` is resolved by the core's `write_all`: the rows go after those of an existing
/// bcolz dataset (its format recognised from it), a missing one is created, and `mode = error`
/// refuses an existing one, naming the setting that replaces it.
#[test]
fn the_append_mode_of_write_all_appends_to_a_bcolz_dataset() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("num_int32");
    copy_dir(&data("bcolz").join("datasets/num_int32"), &path);
    let before = read_one(&path);
    let mut options = arrowsmith::WriteOptions::default();
    let reader = || arrow_array::RecordBatchIterator::new([Ok(before.clone())], before.schema());
    options.set("format", "bcolz").unwrap();
    let e = arrowsmith::write_all(reader(), &path, &options).unwrap_err();
    assert_eq!(e.setting(), Some("overwrite"), "{e}");
    // Appending, the dataset's own format is the output's.
    options.format = None;
    options.set("mode", "append").unwrap();
    let summary = arrowsmith::write_all(reader(), &path, &options).unwrap();
    assert_eq!(summary.rows, before.num_rows() as u64);
    let after = read_one(&path);
    assert_eq!(after.num_rows(), 2 * before.num_rows());
    assert_eq!(after.slice(before.num_rows(), before.num_rows()), before);

    let missing = tmp.path().join("new.bcolz");
    arrowsmith::write_all(reader(), &missing, &options).unwrap();
    assert_eq!(read_one(&missing).num_rows(), before.num_rows());
}
