//! Every output format under every fault a user meets: a full disk, a signal before the commit,
//! kill -9 at each step of the commit, a folder of the user's own at the output path, a missing
//! parent. After each, the output path holds the old output byte for byte (or the whole new
//! one, once the commit is done), nothing else is left beside it, and the disk space is back.

mod common;
#[path = "../../tests/common/small_disk.rs"]
mod small_disk;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::{
    Array, ArrayRef, FixedSizeListArray, Float32Array, Float64Array, Int64Array, RecordBatch,
};
use arrow_schema::{DataType, Field, Schema};
use common::{
    arrowsmith, assert_fails, assert_ok_quietly, convert_killed_at, p, signalled_at, stderr,
};
use small_disk::SmallDisk;

/// Every format `convert --to` writes to a path, and whether it is a directory.
const OUTPUTS: [(&str, bool); 10] = [
    ("parquet", false),
    ("arrow", false),
    ("arrows", false),
    ("csv", false),
    ("ndjson", false),
    ("jay", false),
    ("dataseries", false),
    ("vs", false),
    ("filo", true),
    ("bcolz", true),
];

/// An xorshift sequence: values that no codec shrinks much, so that an output of many rows is
/// about as large as its values.
fn noise() -> impl FnMut() -> u64 {
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    }
}

/// `rows` rows of noise in the columns that format `to` takes: an id and a float for every
/// format, a vector of four floats for VS (its points are vectors).
fn noisy_batch(to: &str, rows: usize) -> RecordBatch {
    let mut next = noise();
    if to == "vs" {
        let values: Vec<f32> = (0..rows * 4).map(|_| (next() >> 40) as f32).collect();
        let vectors = FixedSizeListArray::new(
            Arc::new(Field::new("item", DataType::Float32, false)),
            4,
            Arc::new(Float32Array::from(values)),
            None,
        );
        let schema = Arc::new(Schema::new(vec![Field::new(
            "vector",
            vectors.data_type().clone(),
            false,
        )]));
        return RecordBatch::try_new(schema, vec![Arc::new(vectors)]).unwrap();
    }
    let ids: Vec<i64> = (0..rows).map(|_| next() as i64).collect();
    let x: Vec<f64> = (0..rows).map(|_| (next() >> 11) as f64 * 1e-3).collect();
    RecordBatch::try_from_iter([
        ("id", Arc::new(Int64Array::from(ids)) as ArrayRef),
        ("x", Arc::new(Float64Array::from(x)) as ArrayRef),
    ])
    .unwrap()
}

/// An Arrow IPC file in `dir` of `rows` noisy rows for output format `to`.
fn arrow_input(dir: &Path, name: &str, to: &str, rows: usize) -> PathBuf {
    let path = dir.join(format!("{name}-{to}.arrow"));
    let batch = noisy_batch(to, rows);
    let file = std::fs::File::create(&path).unwrap();
    let mut writer = arrow::ipc::writer::FileWriter::try_new(file, &batch.schema()).unwrap();
    writer.write(&batch).unwrap();
    writer.finish().unwrap();
    path
}

/// Every file and directory under `dir`, with the bytes of each file: what a fault must leave
/// as it was.
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, Option<Vec<u8>>> {
    fn walk(root: &Path, dir: &Path, into: &mut BTreeMap<PathBuf, Option<Vec<u8>>>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            let rel = path.strip_prefix(root).unwrap().to_path_buf();
            if path.is_dir() {
                into.insert(rel, None);
                walk(root, &path, into);
            } else {
                into.insert(rel, Some(std::fs::read(&path).unwrap()));
            }
        }
    }
    let mut all = BTreeMap::new();
    walk(dir, dir, &mut all);
    all
}

#[track_caller]
fn assert_same(before: &BTreeMap<PathBuf, Option<Vec<u8>>>, dir: &Path, what: &str) {
    let after = snapshot(dir);
    let names = |s: &BTreeMap<PathBuf, Option<Vec<u8>>>| s.keys().cloned().collect::<Vec<_>>();
    assert_eq!(names(&after), names(before), "{what}: the entries changed");
    assert!(after == *before, "{what}: a file's bytes changed");
}

fn convert(input: &Path, output: &Path, to: &str, more: &[&str]) -> std::process::Output {
    let mut args = vec!["convert", p(input), p(output), "--to", to];
    args.extend_from_slice(more);
    arrowsmith(&args)
}

#[test]
fn a_full_disk_leaves_every_format_s_old_output_and_the_space_as_they_were() {
    let Some(disk) = SmallDisk::mount(512 << 10) else {
        return;
    };
    let work = tempfile::tempdir().unwrap();
    for (to, _) in OUTPUTS {
        let small = arrow_input(work.path(), "small", to, 10);
        // 16 bytes of noise a row: 3 MB of values, six times the disk.
        let big = arrow_input(work.path(), "big", to, 200_000);
        let target = disk.path().join(format!("out.{to}"));
        assert_ok_quietly(&convert(&small, &target, to, &["--quiet"]));
        let before = snapshot(disk.path());
        let free = disk.free_bytes();
        let out = convert(&big, &target, to, &["--overwrite", "--quiet"]);
        assert_fails(&out, 1, "No space left on device");
        assert_same(&before, disk.path(), to);
        assert_eq!(disk.free_bytes(), free, "{to}: the space is not back");
        // A fresh output on the full disk leaves nothing either.
        let fresh = disk.path().join(format!("fresh.{to}"));
        assert_fails(&convert(&big, &fresh, to, &["--quiet"]), 1, "No space");
        assert_same(&before, disk.path(), to);
        let _ = std::fs::remove_dir_all(&target);
        let _ = std::fs::remove_file(&target);
    }
}

#[cfg(unix)]
#[test]
fn a_signal_before_the_commit_leaves_every_format_s_old_output() {
    let dir = tempfile::tempdir().unwrap();
    for (to, is_dir) in OUTPUTS {
        let old = arrow_input(dir.path(), "old", to, 30);
        let new = arrow_input(dir.path(), "new", to, 5_000);
        let target = dir.path().join(format!("out.{to}"));
        assert_ok_quietly(&convert(&old, &target, to, &["--quiet"]));
        let before = snapshot(dir.path());
        let point = if is_dir { "dir-commit" } else { "file-commit" };
        for (signal, code) in [(libc::SIGINT, 130), (libc::SIGTERM, 143)] {
            let out = signalled_at(
                point,
                signal,
                &[
                    "convert",
                    p(&new),
                    p(&target),
                    "--to",
                    to,
                    "--overwrite",
                    "--quiet",
                ],
            );
            assert_eq!(out.status.code(), Some(code), "{to}: {}", stderr(&out));
            assert!(stderr(&out).contains("nothing was written"), "{to}");
            assert_same(&before, dir.path(), to);
        }
    }
}

#[cfg(unix)]
#[test]
fn kill_9_at_every_step_of_the_commit_leaves_the_old_or_the_whole_new_output() {
    let dir = tempfile::tempdir().unwrap();
    for (to, is_dir) in OUTPUTS {
        let old = arrow_input(dir.path(), "old", to, 30);
        let new = arrow_input(dir.path(), "new", to, 5_000);
        let target = dir.path().join(format!("out.{to}"));
        assert_ok_quietly(&convert(&old, &target, to, &["--quiet"]));
        let old_output = snapshot(dir.path());
        let args = [p(&new), p(&target), "--to", to, "--overwrite", "--quiet"];
        let before_swap = if is_dir { "dir-synced" } else { "file-synced" };
        convert_killed_at(before_swap, &args);
        // The old output as it was; the killed writer's temporary beside it, which the next
        // write removes.
        let left = snapshot(dir.path());
        for (name, bytes) in &old_output {
            assert_eq!(left.get(name), Some(bytes), "{to}: {}", name.display());
        }
        assert_ok_quietly(&convert(&old, &target, to, &["--overwrite", "--quiet"]));
        assert_same(&old_output, dir.path(), to);
        if is_dir {
            // Swapped but the old one not yet removed: the new one is in place.
            convert_killed_at("dir-exchanged", &args);
            assert_ok_quietly(&convert(
                &new,
                &dir.path().join("expected"),
                to,
                &["--quiet"],
            ));
            let rows = |path: &Path| -> String {
                common::assert_ok(&arrowsmith(&["inspect", p(path), "--json"]))
                    .lines()
                    .find(|l| l.contains("\"rows\""))
                    .unwrap_or_default()
                    .to_string()
            };
            assert_eq!(rows(&target), rows(&dir.path().join("expected")), "{to}");
            std::fs::remove_dir_all(dir.path().join("expected")).unwrap();
            assert_ok_quietly(&convert(&old, &target, to, &["--overwrite", "--quiet"]));
            assert_same(&old_output, dir.path(), to);
        }
    }
}

#[test]
fn a_folder_of_the_user_s_own_at_the_output_path_is_never_touched() {
    let dir = tempfile::tempdir().unwrap();
    let folder = dir.path().join("mine");
    std::fs::create_dir(&folder).unwrap();
    std::fs::write(folder.join("thesis.tex"), b"years of work").unwrap();
    std::fs::create_dir(folder.join("figures")).unwrap();
    std::fs::write(folder.join("figures/plot.png"), b"\x89PNG").unwrap();
    for (to, _) in OUTPUTS {
        let input = arrow_input(dir.path(), "in", to, 30);
        let before = snapshot(dir.path());
        for more in [&[][..], &["--overwrite"][..]] {
            let out = convert(&input, &folder, to, more);
            assert!(
                matches!(out.status.code(), Some(1 | 2)),
                "{to} {more:?}: {:?} {}",
                out.status,
                stderr(&out)
            );
            assert!(stderr(&out).starts_with("error:"), "{to}: {}", stderr(&out));
            assert_same(&before, dir.path(), to);
        }
    }
}

#[test]
fn an_output_whose_folder_is_missing_fails_and_creates_nothing() {
    let dir = tempfile::tempdir().unwrap();
    for (to, _) in OUTPUTS {
        let input = arrow_input(dir.path(), "in", to, 30);
        let before = snapshot(dir.path());
        let target = dir.path().join("no/such/folder").join(format!("out.{to}"));
        assert_fails(&convert(&input, &target, to, &[]), 1, "out.");
        assert_same(&before, dir.path(), to);
    }
}
