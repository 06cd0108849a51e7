//! The format's lock: a byte-range lock on the 4 header bytes, shared for readers and exclusive
//! for writers (spec §12). Linux uses open-file-description locks (`F_OFD_SETLK[W]`), other Unix
//! systems classic POSIX record locks on the same range. Never `flock(2)`: on Linux it does not
//! interact with `fcntl` locks, so it would not exclude a program that follows the format.
//!
//! The lock is held by the [`LockedFile`] and released when it is dropped (closing the
//! descriptor releases an OFD lock).

use std::fs::{File, OpenOptions};
use std::path::Path;

use crate::error::{Error, ErrorClass, Result};

/// Shared (readers) or exclusive (writers).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LockKind {
    /// Shared: for readers; many may hold it at once.
    Shared,
    /// Exclusive: for writers; no other lock may be held.
    Exclusive,
}

/// Whether to wait for the lock or fail at once with "file is locked".
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LockWait {
    /// Wait until the lock is free (the default).
    #[default]
    Block,
    /// Fail at once with "file is locked".
    Try,
}

/// An open file holding the header lock.
#[derive(Debug)]
pub struct LockedFile {
    /// The open file; the lock lasts as long as it is open.
    pub file: File,
    /// The lock held.
    pub kind: LockKind,
}

/// Opens `path` (read-only for a shared lock, read-write for an exclusive one) and takes the
/// header lock. If the path was replaced by a rename while waiting, retries on the new file.
pub fn open_locked(path: &Path, kind: LockKind, wait: LockWait) -> Result<LockedFile> {
    loop {
        let file = OpenOptions::new()
            .read(true)
            .write(kind == LockKind::Exclusive)
            .open(path)
            .map_err(|e| Error::from(e).with_file(path))?;
        lock(&file, kind, wait).map_err(|e| e.with_file(path))?;
        if same_file(&file, path)? {
            return Ok(LockedFile { file, kind });
        }
        // The path names a new file now (a writer renamed over it): drop this one and retry.
    }
}

#[cfg(unix)]
fn same_file(file: &File, path: &Path) -> Result<bool> {
    use std::os::unix::fs::MetadataExt;
    let open = file
        .metadata()
        .map_err(|e| Error::from(e).with_file(path))?;
    match std::fs::metadata(path) {
        Ok(now) => Ok(open.dev() == now.dev() && open.ino() == now.ino()),
        Err(e) => Err(Error::from(e).with_file(path)),
    }
}

#[cfg(not(unix))]
fn same_file(_file: &File, _path: &Path) -> Result<bool> {
    Ok(true)
}

/// Takes the lock on bytes [0, 4) of an open file.
#[cfg(unix)]
pub fn lock(file: &File, kind: LockKind, wait: LockWait) -> Result<()> {
    use std::os::fd::AsRawFd;
    // SAFETY: an all-zero flock is a valid value of the C struct.
    let mut fl: libc::flock = unsafe { std::mem::zeroed() };
    fl.l_type = match kind {
        LockKind::Shared => libc::F_RDLCK,
        LockKind::Exclusive => libc::F_WRLCK,
    } as _;
    fl.l_whence = libc::SEEK_SET as _;
    fl.l_start = 0;
    fl.l_len = 4;
    fl.l_pid = 0;
    #[cfg(any(target_os = "linux", target_os = "android"))]
    let cmd = match wait {
        LockWait::Block => libc::F_OFD_SETLKW,
        LockWait::Try => libc::F_OFD_SETLK,
    };
    #[cfg(not(any(target_os = "linux", target_os = "android")))]
    let cmd = match wait {
        LockWait::Block => libc::F_SETLKW,
        LockWait::Try => libc::F_SETLK,
    };
    loop {
        // SAFETY: `fl` is a valid flock and the descriptor is open for the call's duration.
        let rc = unsafe { libc::fcntl(file.as_raw_fd(), cmd, &mut fl as *mut libc::flock) };
        if rc == 0 {
            return Ok(());
        }
        let e = std::io::Error::last_os_error();
        match e.raw_os_error() {
            Some(libc::EINTR) => continue,
            Some(libc::EAGAIN) | Some(libc::EACCES) => {
                return Err(Error::new(
                    ErrorClass::Io,
                    format!(
                        "file is locked: another process holds the {} lock on the header bytes",
                        match kind {
                            LockKind::Shared => "exclusive",
                            LockKind::Exclusive => "shared or exclusive",
                        }
                    ),
                ))
            }
            _ => {
                return Err(Error::new(
                    ErrorClass::Io,
                    format!("cannot lock the header bytes: {e}"),
                )
                .with_source(e))
            }
        }
    }
}

/// No byte-range lock on this platform yet: the lock is a no-op.
#[cfg(not(unix))]
pub fn lock(_file: &File, _kind: LockKind, _wait: LockWait) -> Result<()> {
    Ok(())
}
