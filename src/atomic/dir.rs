//! A directory output, moved into place in one step.

use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};

use crate::error::{Error, ErrorClass, Result};

use super::sync::sync_tree;
use super::sync_parent;
use super::target::{check_target, refuse_stream, DatasetKind, Existing, Replaceable};
use super::temps::{flock, hold, remove_stale_temps, temp_sibling, TEMP_ATTEMPTS};

/// The mode of a new directory before the umask.
const DIR_MODE: u32 = 0o777;

/// A directory output that appears whole or not at all: filled as a hidden temporary sibling
/// of the target and moved into place by [`AtomicDir::commit`]. Dropping it uncommitted
/// removes the temporary directory.
pub struct AtomicDir {
    temp: Option<tempfile::TempDir>,
    /// The writer's lock on the temporary directory (see [`remove_stale_temps`]).
    _lock: Option<File>,
    target: PathBuf,
    kind: DatasetKind,
    durable: bool,
}

impl AtomicDir {
    /// Starts a temporary directory beside the target (a rename is atomic only within one file
    /// system, so it must sit in the target's parent), for a dataset of `kind`: the only kind
    /// of directory the commit replaces. Stale temporaries of the target's earlier writers are
    /// removed first.
    pub fn create(target: &Path, kind: DatasetKind) -> Result<AtomicDir> {
        remove_stale_temps(target);
        for _ in 0..TEMP_ATTEMPTS {
            let temp = temp_sibling(target, DIR_MODE, |b, dir| b.tempdir_in(dir))?;
            let io = |e: io::Error| Error::from(e).with_file(target);
            let lock = open_dir(temp.path()).map_err(io)?;
            let held = match &lock {
                Some(lock) => hold(temp.path(), lock).map_err(io)?,
                None => true,
            };
            if held {
                return Ok(AtomicDir {
                    temp: Some(temp),
                    _lock: lock,
                    target: target.to_path_buf(),
                    kind,
                    durable: true,
                });
            }
        }
        Err(Error::new(
            ErrorClass::Io,
            "the temporary directory beside the output kept being removed by another process",
        )
        .with_file(target))
    }

    /// Whether `commit` flushes every file and directory of the new tree to disk before the
    /// rename, and the parent directory after it (the default). Without it a power loss soon
    /// after the commit may leave the target with missing or empty files.
    pub fn set_durable(&mut self, durable: bool) {
        self.durable = durable;
    }

    /// Where to write the contents until the commit.
    pub fn path(&self) -> &Path {
        self.temp.as_ref().map_or(&self.target, |t| t.path())
    }

    /// The path the directory will have once committed.
    pub fn target(&self) -> &Path {
        &self.target
    }

    /// Moves the finished directory into place. A new target is created by a rename that
    /// refuses to replace anything, so of two writers only one creates it. An existing target
    /// is replaced only if `overwrite` and it is a dataset of the kind (see [`check_target`]):
    /// the two directories are swapped in one step, then the old one (now at the temporary
    /// name) is removed. The path holds the old dataset or the whole new one at every moment,
    /// except on a file system without the swap (then the old one is renamed aside first; see
    /// docs/reliability.md).
    pub fn commit(mut self, overwrite: bool) -> Result<()> {
        let target = self.target.clone();
        let kind = Replaceable::Dataset(self.kind);
        // Checked before the flush, so that a refused commit costs nothing.
        if check_target(&target, kind, overwrite)? == Existing::Stream {
            return Err(refuse_stream(&target, self.kind.what));
        }
        if self.durable {
            if let Some(temp) = &self.temp {
                sync_tree(temp.path()).map_err(|e| e.with_file(&target))?;
            }
        }
        crate::test_hooks::crash_point("dir-synced");
        crate::test_hooks::pause_point("dir-commit");
        // The commit point: a stop requested until here (during the flush, say) leaves the
        // target as it was, and the temporary is removed with `self`.
        crate::cancel::check().map_err(|e| e.with_file(&target))?;
        let temp = self.temp.take().expect("committed once").keep();
        let placed = match rename_new(&temp, &target) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists || is_not_empty(&e) => {
                // The target exists, or appeared since the check: the rule again, then the swap.
                check_target(&target, kind, overwrite).and_then(|existing| match existing {
                    Existing::Stream => Err(refuse_stream(&target, self.kind.what)),
                    _ => swap_dirs(&temp, &target).map_err(|e| Error::from(e).with_file(&target)),
                })
            }
            Err(e) => Err(Error::from(e).with_file(&target)),
        };
        if let Err(e) = placed {
            let _ = std::fs::remove_dir_all(&temp);
            return Err(e);
        }
        if self.durable {
            sync_parent(&target)?;
        }
        Ok(())
    }
}

/// A directory opened to hold its lock (Unix; elsewhere there are no locks).
fn open_dir(path: &Path) -> io::Result<Option<File>> {
    if cfg!(unix) {
        File::open(path).map(Some)
    } else {
        Ok(None)
    }
}

/// Whether a rename failed because the target is a directory that is not empty.
fn is_not_empty(e: &io::Error) -> bool {
    #[cfg(unix)]
    if e.raw_os_error() == Some(libc::ENOTEMPTY) {
        return true;
    }
    e.kind() == io::ErrorKind::DirectoryNotEmpty
}

/// Renames `from` to `to` only if nothing is at `to` (`AlreadyExists` otherwise): Linux's
/// `renameat2(RENAME_NOREPLACE)`. Where the file system or system lacks it, a check then a
/// plain rename, which a writer creating `to` in between could race.
fn rename_new(from: &Path, to: &Path) -> io::Result<()> {
    #[cfg(target_os = "linux")]
    match renameat2(from, to, libc::RENAME_NOREPLACE) {
        Err(e) if is_unsupported(&e) => {}
        done => return done,
    }
    if to.symlink_metadata().is_ok() {
        return Err(io::ErrorKind::AlreadyExists.into());
    }
    std::fs::rename(from, to)
}

/// Puts the directory `new` at `target` in place of the one there, and removes the old one.
/// On Linux the two are swapped by one `renameat2(RENAME_EXCHANGE)`, so `target` always names
/// one whole directory; a crash after the swap leaves the old directory at `new`'s temporary
/// name, which [`remove_stale_temps`] removes. Where the file system refuses the swap (or on
/// another system) the old directory is renamed aside to `.TARGET.XXXXXX.old` first: a crash
/// between the two renames leaves nothing at `target` and the old dataset there, to be renamed
/// back by hand. A failure to remove the old directory after the swap is not an error: the new
/// one is in place, and the old one is removed by the next writer.
fn swap_dirs(new: &Path, target: &Path) -> io::Result<()> {
    // The old dataset's lock, held until it is gone, so that a cleaner does not remove it
    // under us; it also waits for a writer that holds the dataset's lock.
    let old_lock = open_dir(target)?;
    #[cfg(unix)]
    if let Some(lock) = &old_lock {
        flock(lock, true)?;
    }
    #[cfg(target_os = "linux")]
    match renameat2(new, target, libc::RENAME_EXCHANGE) {
        Ok(()) => {
            crate::test_hooks::crash_point("dir-exchanged");
            let _ = std::fs::remove_dir_all(new);
            return Ok(());
        }
        Err(e) if is_unsupported(&e) => {}
        Err(e) => return Err(e),
    }
    let aside = new.with_extension("old");
    std::fs::rename(target, &aside)?;
    crate::test_hooks::crash_point("dir-aside");
    if let Err(e) = std::fs::rename(new, target) {
        let _ = std::fs::rename(&aside, target);
        return Err(e);
    }
    drop(old_lock);
    let _ = std::fs::remove_dir_all(&aside);
    Ok(())
}

/// Whether `renameat2` failed because the system or file system does not offer the flag.
#[cfg(target_os = "linux")]
fn is_unsupported(e: &io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::EINVAL | libc::ENOSYS))
}

/// Linux's `renameat2` with `flags` (`RENAME_NOREPLACE`, `RENAME_EXCHANGE`).
#[cfg(target_os = "linux")]
fn renameat2(from: &Path, to: &Path, flags: libc::c_uint) -> io::Result<()> {
    use std::os::unix::ffi::OsStrExt;
    let c = |p: &Path| {
        std::ffi::CString::new(p.as_os_str().as_bytes())
            .map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))
    };
    let (from, to) = (c(from)?, c(to)?);
    // SAFETY: two valid NUL-terminated paths, relative to the working directory.
    let rc = unsafe {
        libc::renameat2(
            libc::AT_FDCWD,
            from.as_ptr(),
            libc::AT_FDCWD,
            to.as_ptr(),
            flags,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}
