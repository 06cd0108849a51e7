//! The append lock of a bcolz dataset: an exclusive `flock(2)` on the dataset's root directory
//! itself, held from the opening of an [`Appender`](super::Appender) to its commit or failure.
//!
//! bcolz has no lock of its own, and readers need none (an append is invisible until its
//! commit), so the lock only keeps appenders apart. Locking the directory adds no file that
//! bcolz or a listing would see. Closing the descriptor (the [`AppendLock`] dropped, or the
//! process gone) releases it.

use std::fs::File;
use std::path::Path;

use crate::error::{Error, ErrorClass, Result};
use crate::vs::LockWait;

/// The held lock of one dataset.
#[derive(Debug)]
pub(in crate::bcolz) struct AppendLock {
    _root: File,
}

/// Takes the append lock of the dataset directory at `path`: waits for another appender to
/// finish (`LockWait::Block`) or fails at once (`LockWait::Try`). If the directory was replaced
/// (renamed over) while waiting, locks the new one.
pub(in crate::bcolz) fn lock_for_append(path: &Path, wait: LockWait) -> Result<AppendLock> {
    loop {
        let root = File::open(path).map_err(|e| Error::from(e).with_file(path))?;
        flock(&root, wait).map_err(|e| e.with_file(path))?;
        if same_file(&root, path)? {
            return Ok(AppendLock { _root: root });
        }
    }
}

fn same_file(file: &File, path: &Path) -> Result<bool> {
    use std::os::unix::fs::MetadataExt;
    let open = file
        .metadata()
        .map_err(|e| Error::from(e).with_file(path))?;
    let now = std::fs::metadata(path).map_err(|e| Error::from(e).with_file(path))?;
    Ok(open.dev() == now.dev() && open.ino() == now.ino())
}

fn flock(file: &File, wait: LockWait) -> Result<()> {
    use std::os::fd::AsRawFd;
    let operation = match wait {
        LockWait::Block => libc::LOCK_EX,
        LockWait::Try => libc::LOCK_EX | libc::LOCK_NB,
    };
    loop {
        // SAFETY: the descriptor is open for the call's duration; flock takes no pointers.
        if unsafe { libc::flock(file.as_raw_fd(), operation) } == 0 {
            return Ok(());
        }
        let e = std::io::Error::last_os_error();
        match e.raw_os_error() {
            Some(libc::EINTR) => continue,
            Some(libc::EWOULDBLOCK) => {
                return Err(Error::new(
                    ErrorClass::Io,
                    "the dataset is being appended to by another process; wait for it to \
                     finish, or let this append wait for it",
                ))
            }
            _ => {
                return Err(Error::new(
                    ErrorClass::Io,
                    format!("cannot take the dataset's append lock: {e}"),
                )
                .with_source(e))
            }
        }
    }
}
