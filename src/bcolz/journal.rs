//! What an append changes in a live dataset, so that a failed append can be undone exactly and
//! what a crashed one left can be found by the next.
//!
//! Every file an append puts in place (a chunk `data/__k.blp`, a `meta/sizes`) is written under
//! a temporary name and renamed over its final name through [`Journal::replace`], which first
//! keeps the file it replaces as a hard link beside it (`.NAME.arrowsmith-orig`). Until the
//! commit, [`Journal::roll_back`] renames the kept files back and removes the new ones; after
//! it, [`Journal::discard`] removes the kept files. A process that dies in between leaves its
//! temporary and kept files; [`remove_leftovers`] removes them under the next append's lock.
//!
//! It sits beneath both `append` and the writer, whose chunk jobs write an append's chunks
//! through it.

use std::fs;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use crate::error::{Error, Result};

/// The suffix of a file an append replaced, kept until it commits.
const KEPT_SUFFIX: &str = ".arrowsmith-orig";
/// The suffix of a file being written, before it is renamed into place.
pub(in crate::bcolz) const TEMP_SUFFIX: &str = ".arrowsmith-tmp";

/// A file the append renamed into place, and where the file it replaced is kept (`None`: the
/// name was free before).
#[derive(Debug)]
struct Replaced {
    path: PathBuf,
    kept: Option<PathBuf>,
}

/// The files an append has put in place so far (shared with the chunk jobs).
#[derive(Debug, Clone, Default)]
pub(in crate::bcolz) struct Journal(Arc<Mutex<Vec<Replaced>>>);

/// `dir/.NAME{suffix}` for `dir/NAME`: hidden, and never a name bcolz reads.
pub(in crate::bcolz) fn beside(path: &Path, suffix: &str) -> PathBuf {
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    path.with_file_name(format!(".{name}{suffix}"))
}

impl Journal {
    fn entries(&self) -> std::sync::MutexGuard<'_, Vec<Replaced>> {
        // A job that panicked while holding the lock pushed a whole entry or none.
        self.0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Renames the finished file `temp` over `path`, keeping the file `path` named until then.
    pub(in crate::bcolz) fn replace(&self, temp: &Path, path: &Path) -> Result<()> {
        let kept = beside(path, KEPT_SUFFIX);
        let existed = match keep(path, &kept) {
            Ok(existed) => existed,
            Err(e) => {
                let _ = fs::remove_file(temp);
                return Err(Error::from(e).with_file(&kept));
            }
        };
        self.entries().push(Replaced {
            path: path.to_path_buf(),
            kept: existed.then_some(kept),
        });
        fs::rename(temp, path).map_err(|e| {
            let _ = fs::remove_file(temp);
            Error::from(e).with_file(path)
        })
    }

    /// Puts back every file replaced so far and removes the new ones (latest first); the first
    /// error, after trying all.
    pub(in crate::bcolz) fn roll_back(&self) -> Result<()> {
        let mut first_error = None;
        let mut entries = self.entries();
        while let Some(Replaced { path, kept }) = entries.pop() {
            let outcome = match &kept {
                Some(kept) => fs::rename(kept, &path),
                None => fs::remove_file(&path).or_else(ignore_missing),
            };
            if let Err(e) = outcome {
                first_error.get_or_insert(Error::from(e).with_file(&path));
            }
        }
        first_error.map_or(Ok(()), Err)
    }

    /// Forgets the replaced files once the append has committed (they are no longer needed;
    /// one that cannot be removed is left for the next append to remove).
    pub(in crate::bcolz) fn discard(&self) {
        for Replaced { kept, .. } in self.entries().drain(..) {
            if let Some(kept) = kept {
                let _ = fs::remove_file(kept);
            }
        }
    }
}

/// Keeps the file at `path` as `kept` (a hard link, or a copy where the file system has none);
/// whether there was one.
fn keep(path: &Path, kept: &Path) -> std::io::Result<bool> {
    match fs::hard_link(path, kept) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == ErrorKind::NotFound => Ok(false),
        Err(e) if e.kind() == ErrorKind::AlreadyExists => {
            // Left by a process that died before this append took the lock (and not removed):
            // that copy means nothing now.
            fs::remove_file(kept)?;
            keep(path, kept)
        }
        Err(_) => match fs::copy(path, kept) {
            Ok(_) => Ok(true),
            Err(e) if e.kind() == ErrorKind::NotFound => Ok(false),
            Err(e) => {
                let _ = fs::remove_file(kept);
                Err(e)
            }
        },
    }
}

fn ignore_missing(e: std::io::Error) -> std::io::Result<()> {
    if e.kind() == ErrorKind::NotFound {
        Ok(())
    } else {
        Err(e)
    }
}

/// Removes from one column directory what appends that died left: temporary and kept files
/// (`data/.__k.blp.*`, `meta/.sizes.*`) and chunk files from `first_unused` on (chunks past
/// the committed rows, which no reader reads). `meta/sizes` is left as it is.
pub(in crate::bcolz) fn remove_leftovers(column_dir: &Path, first_unused: u64) -> Result<()> {
    let data = column_dir.join("data");
    let entries = match fs::read_dir(&data) {
        Ok(entries) => entries,
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(Error::from(e).with_file(&data)),
    };
    for entry in entries {
        let entry = entry.map_err(|e| Error::from(e).with_file(&data))?;
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        let stale = match chunk_index(name) {
            Some(k) => k >= first_unused,
            None => is_ours(name, "__", ".blp"),
        };
        if stale {
            let path = entry.path();
            fs::remove_file(&path)
                .or_else(ignore_missing)
                .map_err(|e| Error::from(e).with_file(&path))?;
        }
    }
    for suffix in [TEMP_SUFFIX, KEPT_SUFFIX] {
        let path = beside(&column_dir.join("meta").join("sizes"), suffix);
        fs::remove_file(&path)
            .or_else(ignore_missing)
            .map_err(|e| Error::from(e).with_file(&path))?;
    }
    Ok(())
}

/// `k` of a chunk file name `__k.blp` (decimal, as bcolz names them).
fn chunk_index(name: &str) -> Option<u64> {
    let digits = name.strip_prefix("__")?.strip_suffix(".blp")?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// Whether `name` is a temporary or kept file an append made of a file `{prefix}…{stem_end}`.
fn is_ours(name: &str, prefix: &str, stem_end: &str) -> bool {
    let Some(rest) = name.strip_prefix('.') else {
        return false;
    };
    [TEMP_SUFFIX, KEPT_SUFFIX].iter().any(|suffix| {
        rest.strip_suffix(suffix)
            .is_some_and(|stem| stem.starts_with(prefix) && stem.ends_with(stem_end))
    })
}

/// The kept `meta/sizes` of a column whose append died before it committed, if there is one.
pub(in crate::bcolz) fn kept_sizes(column_dir: &Path) -> Option<PathBuf> {
    let kept = beside(&column_dir.join("meta").join("sizes"), KEPT_SUFFIX);
    kept.is_file().then_some(kept)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        assert_eq!(chunk_index("__12.blp"), Some(12));
        assert_eq!(chunk_index("__.blp"), None);
        assert_eq!(chunk_index("__1a.blp"), None);
        assert!(is_ours(".__3.blp.arrowsmith-tmp", "__", ".blp"));
        assert!(is_ours(".__3.blp.arrowsmith-orig", "__", ".blp"));
        assert!(!is_ours("__3.blp", "__", ".blp"));
        assert!(!is_ours(".notes.arrowsmith-tmp", "__", ".blp"));
        assert_eq!(
            beside(Path::new("a/meta/sizes"), KEPT_SUFFIX),
            Path::new("a/meta/.sizes.arrowsmith-orig")
        );
    }

    #[test]
    fn roll_back_restores_and_removes() {
        let dir = tempfile::tempdir().unwrap();
        let old = dir.path().join("old");
        let new = dir.path().join("new");
        fs::write(&old, b"before").unwrap();
        let journal = Journal::default();
        for path in [&old, &new] {
            let temp = beside(path, TEMP_SUFFIX);
            fs::write(&temp, b"after").unwrap();
            journal.replace(&temp, path).unwrap();
        }
        assert_eq!(fs::read(&old).unwrap(), b"after");
        journal.roll_back().unwrap();
        assert_eq!(fs::read(&old).unwrap(), b"before");
        assert!(!new.exists());
        let names: Vec<_> = fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(names.len(), 1);
    }
}
