//! Appends, deletes, compaction, the header lock across two processes, and a crash test that
//! kills appending processes at random points.
//!
//! The child processes are this test binary itself, started on one test (`child_*`) with an
//! environment variable that tells it what to do; without the variable those tests return.

mod common;
#[path = "common/small_disk.rs"]
mod small_disk;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use arrow_array::cast::AsArray;
use arrow_array::types::Float64Type;
use arrow_array::{
    Array, FixedSizeListArray, Float64Array, RecordBatch, RecordBatchIterator, StringArray,
};
use arrow_schema::{DataType, Field, Schema};
use arrowsmith::vs::{self, LockKind, LockWait, ReaderBuilder, WriterOptions};
use common::data;
use small_disk::SmallDisk;

/// Points `first..first+count` with vector [i, i + 0.5] and app_data {"i": i}.
fn points(first: u64, count: u64) -> RecordBatch {
    let values: Vec<f64> = (first..first + count)
        .flat_map(|i| [i as f64, i as f64 + 0.5])
        .collect();
    let list = FixedSizeListArray::try_new(
        Arc::new(Field::new("item", DataType::Float64, false)),
        2,
        Arc::new(Float64Array::from(values)),
        None,
    )
    .unwrap();
    let app: Vec<String> = (first..first + count)
        .map(|i| format!("{{\"i\":{i}}}"))
        .collect();
    let schema = Arc::new(Schema::new(vec![
        Field::new("vector", list.data_type().clone(), false),
        Field::new("app_data", DataType::Utf8, true),
    ]));
    RecordBatch::try_new(
        schema,
        vec![Arc::new(list), Arc::new(StringArray::from(app))],
    )
    .unwrap()
}

fn append(path: &Path, batch: RecordBatch) -> arrowsmith::Result<vs::AppendSummary> {
    let schema = batch.schema();
    vs::append(
        path,
        RecordBatchIterator::new(vec![Ok(batch)], schema),
        &WriterOptions::default(),
    )
}

fn read_all(path: &Path) -> arrowsmith::Result<Vec<RecordBatch>> {
    ReaderBuilder::new()
        .with_offsets(true)
        .build(path)?
        .collect::<Result<Vec<_>, _>>()
        .map_err(arrowsmith::Error::from_arrow_owned)
}

fn rows(path: &Path) -> usize {
    read_all(path).unwrap().iter().map(|b| b.num_rows()).sum()
}

/// Checks that the file holds exactly points 0..n of [`points`]; returns n.
fn check_sequence(path: &Path) -> Result<u64, String> {
    let batches = read_all(path).map_err(|e| e.to_string())?;
    let mut i = 0u64;
    for b in &batches {
        let v = b.column(0).as_fixed_size_list();
        let app = b.column(1).as_string::<i32>();
        for r in 0..b.num_rows() {
            let vals = v.value(r);
            let vals = vals.as_primitive::<Float64Type>();
            if vals.values().to_vec() != vec![i as f64, i as f64 + 0.5]
                || app.value(r) != format!("{{\"i\":{i}}}")
            {
                return Err(format!("point {i} is wrong"));
            }
            i += 1;
        }
    }
    Ok(i)
}

fn new_store(dir: &Path, n: u64) -> PathBuf {
    let path = dir.join("store.vs");
    let batch = points(0, n);
    let schema = batch.schema();
    vs::write_file(
        &path,
        RecordBatchIterator::new(vec![Ok(batch)], schema),
        WriterOptions::default(),
    )
    .unwrap();
    path
}

#[test]
fn append_keeps_old_bytes_and_adds_points() {
    let dir = tempfile::tempdir().unwrap();
    let path = new_store(dir.path(), 3);
    let before = std::fs::read(&path).unwrap();
    let summary = append(&path, points(3, 4)).unwrap();
    assert_eq!(summary.rows, 4);
    assert_eq!(summary.offset, before.len() as u64 - 1);
    let after = std::fs::read(&path).unwrap();
    assert_eq!(&after[..before.len() - 1], &before[..before.len() - 1]);
    assert_eq!(after[before.len() - 1], b'P');
    assert_eq!(*after.last().unwrap(), b'$');
    assert_eq!(check_sequence(&path), Ok(7));

    // A shape or type that differs from the file's meta: an error, and the file is unchanged.
    let wrong = {
        let list = FixedSizeListArray::try_new(
            Arc::new(Field::new("item", DataType::Float64, false)),
            3,
            Arc::new(Float64Array::from(vec![1.0, 2.0, 3.0])),
            None,
        )
        .unwrap();
        RecordBatch::try_new(
            Arc::new(Schema::new(vec![Field::new(
                "vector",
                list.data_type().clone(),
                false,
            )])),
            vec![Arc::new(list)],
        )
        .unwrap()
    };
    let e = append(&path, wrong).unwrap_err();
    assert!(
        e.to_string()
            .contains("the new points are FLOAT64 [3], the file holds FLOAT64 [2]"),
        "{e}"
    );
    assert_eq!(std::fs::read(&path).unwrap(), after);
}

#[test]
fn append_to_the_empty_store_writes_the_meta_block() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("e.vs");
    std::fs::copy(data("vs").join("empty.vs"), &path).unwrap();
    append(&path, points(0, 2)).unwrap();
    assert_eq!(check_sequence(&path), Ok(2));
    let bytes = std::fs::read(&path).unwrap();
    assert_eq!(bytes[4], b'^');
}

#[test]
fn append_to_a_file_without_terminal_needs_lenient() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("n.vs");
    std::fs::copy(data("vs").join("no_terminal.vs"), &path).unwrap();
    let e = append(&path, points(0, 1)).unwrap_err();
    assert!(e.to_string().contains("missing terminal"), "{e}");
    let schema = points(0, 1).schema();
    vs::append(
        &path,
        RecordBatchIterator::new(vec![Ok(points(5, 1))], schema),
        &WriterOptions::default().with_lenient_eof(true),
    )
    .unwrap();
    assert_eq!(rows(&path), 2);
}

#[test]
fn delete_and_compact() {
    let dir = tempfile::tempdir().unwrap();
    let path = new_store(dir.path(), 5);
    let offsets: Vec<u64> = read_all(&path).unwrap()[0]
        .column(2)
        .as_primitive::<arrow_array::types::UInt64Type>()
        .values()
        .to_vec();
    let size = std::fs::metadata(&path).unwrap().len();
    vs::delete_point(&path, offsets[1], LockWait::Block).unwrap();
    // Deleting it again, or at an offset that is not a block start, is an error.
    let e = vs::delete_point(&path, offsets[1], LockWait::Block).unwrap_err();
    assert!(
        e.to_string().contains("no live point starts at offset"),
        "{e}"
    );
    assert!(vs::delete_point(&path, offsets[2] + 1, LockWait::Block).is_err());
    // Ordinal 2 among live points is now point 3.
    assert_eq!(
        vs::delete_ordinal(&path, 2, LockWait::Block).unwrap(),
        offsets[3]
    );
    assert_eq!(std::fs::metadata(&path).unwrap().len(), size);
    let left: Vec<String> = read_all(&path).unwrap()[0]
        .column(1)
        .as_string::<i32>()
        .iter()
        .map(|s| s.unwrap().to_string())
        .collect();
    assert_eq!(left, [r#"{"i":0}"#, r#"{"i":2}"#, r#"{"i":4}"#]);
    let summary = vs::compact(&path, LockWait::Block).unwrap();
    assert_eq!(summary.points, 3);
    assert_eq!(summary.bytes_after, std::fs::metadata(&path).unwrap().len());
    assert!(summary.bytes_after < size);
    let d = vs::VsFile::open(&path, Default::default())
        .unwrap()
        .describe(100)
        .unwrap();
    assert_eq!((d.live_points, d.blank_blocks), (3, 0));
    let after: Vec<String> = read_all(&path).unwrap()[0]
        .column(1)
        .as_string::<i32>()
        .iter()
        .map(|s| s.unwrap().to_string())
        .collect();
    assert_eq!(after, left);
    // The fixture with a blank block and a deleted point compacts to its two live points.
    let f = dir.path().join("b.vs");
    std::fs::copy(data("vs").join("bool_r1_deleted.vs"), &f).unwrap();
    let before = read_all(&f).unwrap();
    vs::compact(&f, LockWait::Block).unwrap();
    let after = read_all(&f).unwrap();
    assert_eq!(before[0].column(0), after[0].column(0));
    assert_eq!(std::fs::metadata(&f).unwrap().len(), 79 - 5 - 19);
}

/// Child: takes the exclusive lock, says so, holds it, appends one point, exits.
#[test]
fn child_lock_holder() {
    let Some(path) = std::env::var_os("VS_LOCK_CHILD") else {
        return;
    };
    let path = PathBuf::from(path);
    let held = vs::lock::open_locked(&path, LockKind::Exclusive, LockWait::Block).unwrap();
    println!("locked");
    std::thread::sleep(Duration::from_millis(400));
    drop(held);
    // `append` takes the lock itself; there is no other writer, so this is prompt.
    append(&path, points(3, 1)).unwrap();
}

fn child(test: &str, var: &str, path: &Path) -> Command {
    let mut c = Command::new(std::env::current_exe().unwrap());
    c.args(["--exact", test, "--nocapture", "--test-threads", "1"])
        .env(var, path)
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    c
}

#[test]
fn two_processes_exclude_each_other() {
    let dir = tempfile::tempdir().unwrap();
    let path = new_store(dir.path(), 3);
    let mut holder = child("child_lock_holder", "VS_LOCK_CHILD", &path)
        .spawn()
        .unwrap();
    let mut out = BufReader::new(holder.stdout.take().unwrap());
    let mut line = String::new();
    while !line.contains("locked") {
        line.clear();
        assert!(out.read_line(&mut line).unwrap() > 0, "child exited early");
    }
    // A non-blocking reader fails at once.
    let e = ReaderBuilder::new()
        .with_try_lock(true)
        .build(&path)
        .err()
        .unwrap();
    assert!(e.to_string().contains("file is locked"), "{e}");
    let e = vs::delete_point(&path, 0, LockWait::Try).unwrap_err();
    assert!(e.to_string().contains("file is locked"), "{e}");
    // A blocking reader waits until the holder is done.
    let start = Instant::now();
    let reader = ReaderBuilder::new().build(&path).unwrap();
    assert!(start.elapsed() >= Duration::from_millis(100));
    // While we read, the holder's append waits for our shared lock.
    let n: usize = reader.map(|b| b.unwrap().num_rows()).sum();
    assert!(n == 3 || n == 4, "{n}");
    assert!(holder.wait().unwrap().success());
    assert_eq!(check_sequence(&path), Ok(4));
    // Shared locks do not exclude each other.
    let a = ReaderBuilder::new()
        .with_try_lock(true)
        .build(&path)
        .unwrap();
    let b = ReaderBuilder::new()
        .with_try_lock(true)
        .build(&path)
        .unwrap();
    drop((a, b));
}

/// Child: appends batches of 3 points forever (until killed).
#[test]
fn child_appender() {
    let Some(path) = std::env::var_os("VS_CRASH_CHILD") else {
        return;
    };
    let path = PathBuf::from(path);
    println!("started");
    loop {
        let n = check_sequence(&path).unwrap();
        append(&path, points(n, 3)).unwrap();
    }
}

struct XorShift(u64);
impl XorShift {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

#[test]
fn killed_appenders_leave_the_old_or_the_new_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = new_store(dir.path(), 0);
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64
        | 1;
    let mut rng = XorShift(seed);
    let deadline = Instant::now() + Duration::from_secs(4);
    let mut iterations = 0;
    let mut last = 0;
    while iterations < 40 && Instant::now() < deadline {
        let mut c = child("child_appender", "VS_CRASH_CHILD", &path)
            .spawn()
            .unwrap();
        let mut out = BufReader::new(c.stdout.take().unwrap());
        let mut line = String::new();
        out.read_line(&mut line).unwrap();
        std::thread::sleep(Duration::from_micros(rng.next() % 30_000));
        c.kill().unwrap();
        c.wait().unwrap();
        iterations += 1;
        let n = check_sequence(&path)
            .unwrap_or_else(|e| panic!("seed {seed}, iteration {iterations}: {e}"));
        assert_eq!(n % 3, 0, "seed {seed}: a partial append is visible");
        assert!(n >= last, "seed {seed}: points were lost");
        last = n;
    }
    eprintln!("crash test: seed {seed}, {iterations} kills, {last} points survived");
    assert!(iterations >= 10);
    assert!(last > 0, "no append ever completed");
}

/// Child: one append that dies between writing the new blocks and committing them.
#[test]
fn child_dies_before_commit() {
    let Some(path) = std::env::var_os("VS_ABORT_CHILD") else {
        return;
    };
    let path = PathBuf::from(path);
    let n = check_sequence(&path).unwrap();
    let _ = append(&path, points(n, 3));
}

#[test]
fn an_append_cut_before_its_commit_leaves_the_old_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = new_store(dir.path(), 3);
    let before = std::fs::read(&path).unwrap();
    let status = child("child_dies_before_commit", "VS_ABORT_CHILD", &path)
        .env("ARROWSMITH_CRASH_AT", "vs-append-synced")
        .status()
        .unwrap();
    assert!(!status.success());
    let after = std::fs::read(&path).unwrap();
    // Everything up to the old '$' is intact, the new blocks are past it, ignored.
    assert!(after.len() > before.len());
    assert_eq!(&after[..before.len()], &before[..]);
    assert_eq!(check_sequence(&path), Ok(3));
    // The next append overwrites the abandoned bytes.
    append(&path, points(3, 1)).unwrap();
    assert_eq!(check_sequence(&path), Ok(4));
    let d = vs::VsFile::open(&path, Default::default())
        .unwrap()
        .describe(0)
        .unwrap();
    assert_eq!(d.trailing_bytes, 0);
}

#[test]
fn appending_to_or_deleting_from_a_non_vs_file_fails_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("zero.vs");
    std::fs::write(&path, b"").unwrap();
    let e = append(&path, points(0, 1)).unwrap_err();
    assert!(e.to_string().contains("truncated header"), "{e}");
    assert!(e.to_string().contains("zero.vs"), "{e}");
    std::fs::write(&path, b"VX\0\0$").unwrap();
    let e = vs::delete_point(&path, 4, LockWait::Block).unwrap_err();
    assert!(e.to_string().contains("bad signature"), "{e}");
    let e = vs::compact(&path, LockWait::Block).unwrap_err();
    assert!(e.to_string().contains("bad signature"), "{e}");
    assert_eq!(std::fs::read(&path).unwrap(), b"VX\0\0$");
}

/// An append to `fixture` (copied onto a 1 MiB tmpfs) of its own points over and over, until
/// the disk is full: the error is the full disk's, and the file is byte for byte what it was,
/// with the disk's space back. Then a small append fits again.
fn full_disk_append(fixture: &str, lenient_eof: bool) {
    let Some(disk) = SmallDisk::mount(1 << 20) else {
        return;
    };
    let path = disk.path().join(fixture);
    std::fs::copy(data("vs").join(fixture), &path).unwrap();
    let options = WriterOptions::default().with_lenient_eof(lenient_eof);
    let own: Vec<RecordBatch> = ReaderBuilder::new()
        .with_lenient_eof(lenient_eof)
        .build(&path)
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let schema = own[0].schema();
    let copies = vec![own[0].clone(); 2000];
    let many = arrow::compute::concat_batches(&schema, &copies).unwrap();
    let before = std::fs::read(&path).unwrap();
    let free = disk.free_bytes();
    let endless = std::iter::repeat_with(|| Ok(many.clone())).take(10_000);
    let e = vs::append(
        &path,
        RecordBatchIterator::new(endless, schema.clone()),
        &options,
    )
    .unwrap_err();
    assert_eq!(e.io_kind(), Some(std::io::ErrorKind::StorageFull), "{e}");
    assert!(e.to_string().contains(fixture), "{e}");
    assert!(
        std::fs::read(&path).unwrap() == before,
        "{fixture}: the file changed"
    );
    assert_eq!(disk.free_bytes(), free, "{fixture}: the space is not back");
    vs::append(
        &path,
        RecordBatchIterator::new(vec![Ok(own[0].clone())], schema),
        &options,
    )
    .unwrap();
    assert_eq!(
        ReaderBuilder::new()
            .build(&path)
            .unwrap()
            .map(|b| b.unwrap().num_rows())
            .sum::<usize>(),
        2 * own[0].num_rows()
    );
}

#[test]
fn an_append_that_fills_the_disk_leaves_the_file_as_it_was() {
    full_disk_append("f64_r1_plain.vs", false);
    // A file without '$' gets one for the append; it goes again with the rest.
    full_disk_append("no_terminal.vs", true);
}

/// `mode = append` is resolved by the core's `write_all`: a missing vs file is created, an
/// existing one (its format recognised from it) is appended to in place, and `create` alone,
/// which has no whole input, refuses to append to one.
#[test]
fn the_append_mode_of_write_all_appends_to_a_vs_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("points.vs");
    let mut options = arrowsmith::WriteOptions::default();
    options.set("mode", "append").unwrap();
    let input = |first, count| {
        let batch = points(first, count);
        let schema = batch.schema();
        RecordBatchIterator::new(vec![Ok(batch)], schema)
    };
    arrowsmith::write_all(input(0, 5), &path, &options).unwrap();
    let summary = arrowsmith::write_all(input(5, 7), &path, &options).unwrap();
    assert_eq!(summary.rows, 7);
    assert_eq!(check_sequence(&path), Ok(12));
    let e = arrowsmith::create(&path, points(0, 1).schema(), &options)
        .err()
        .unwrap();
    assert!(e.to_string().contains("use write_all"), "{e}");
    options.set("mode", "error").unwrap();
    assert!(arrowsmith::write_all(input(0, 1), &path, &options).is_err());
    assert_eq!(check_sequence(&path), Ok(12));
}
