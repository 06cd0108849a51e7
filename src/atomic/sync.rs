//! Flushing files and directories to disk, in parallel where there are many.

use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// Flushes to disk every file and directory under `root` (and `root` itself).
pub(crate) fn sync_tree(root: &Path) -> Result<()> {
    let mut files = Vec::new();
    let mut dirs = Vec::new();
    collect(root, &mut files, &mut dirs)?;
    sync_all_parallel(&files)?;
    // Directories after their files (their entries name them), deepest first. Windows cannot
    // open a directory for fsync; there its entries are left to the OS.
    if cfg!(not(unix)) {
        return Ok(());
    }
    dirs.reverse();
    sync_all_parallel(&dirs)
}

/// Flushes a directory (its entries: files created or renamed in it).
pub(crate) fn sync_dir(dir: &Path) -> Result<()> {
    sync_path(dir).map_err(|e| Error::from(e).with_file(dir))
}

fn collect(dir: &Path, files: &mut Vec<PathBuf>, dirs: &mut Vec<PathBuf>) -> Result<()> {
    dirs.push(dir.to_path_buf());
    let entries = std::fs::read_dir(dir).map_err(|e| Error::from(e).with_file(dir))?;
    for entry in entries {
        let entry = entry.map_err(|e| Error::from(e).with_file(dir))?;
        let kind = entry
            .file_type()
            .map_err(|e| Error::from(e).with_file(entry.path()))?;
        if kind.is_dir() {
            collect(&entry.path(), files, dirs)?;
        } else {
            files.push(entry.path());
        }
    }
    Ok(())
}

/// fsync of one file or directory (opened read-only, which Linux allows for both).
pub(crate) fn sync_path(path: &Path) -> io::Result<()> {
    File::open(path)?.sync_all()
}

/// fsync waits on the disk, not the CPU: many at once let the file system commit them together,
/// so they run on their own short-lived threads rather than on the (CPU-sized) rayon pool.
fn sync_all_parallel(paths: &[PathBuf]) -> Result<()> {
    const THREADS: usize = 32;
    if paths.len() <= 1 {
        return paths
            .iter()
            .try_for_each(|p| sync_path(p).map_err(|e| Error::from(e).with_file(p)));
    }
    let per_thread = paths.len().div_ceil(THREADS);
    std::thread::scope(|scope| {
        let workers: Vec<_> = paths
            .chunks(per_thread)
            .map(|share| {
                scope.spawn(move || {
                    share
                        .iter()
                        .try_for_each(|p| sync_path(p).map_err(|e| Error::from(e).with_file(p)))
                })
            })
            .collect();
        workers
            .into_iter()
            .map(|w| {
                w.join()
                    .unwrap_or_else(|_| Err(Error::from(io::Error::other("fsync thread panicked"))))
            })
            .collect::<Result<Vec<()>>>()
            .map(|_| ())
    })
}
