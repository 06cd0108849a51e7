//! Temporary siblings of a target: made with the modes of a new output, held under `flock`
//! while written, and removed by the next writer once no live writer holds them.

use std::fs::File;
use std::io;
use std::path::Path;

use crate::error::{Error, Result};

use super::parent_dir;

/// A hidden temporary beside `target`, named `.TARGET.XXXXXX.tmp` so that it says what it is for.
///
/// It is created with the permissions any tool gives a new file or directory (`mode` 0o666 or
/// 0o777, less the umask), not the 0o600 / 0o700 of a private temporary: once renamed, it is the
/// output that other users and services of the folder read.
pub(super) fn temp_sibling<T>(
    target: &Path,
    mode: u32,
    make: impl FnOnce(&tempfile::Builder, &Path) -> io::Result<T>,
) -> Result<T> {
    let name = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let prefix = format!(".{name}.");
    let mut builder = tempfile::Builder::new();
    builder.prefix(&prefix).suffix(".tmp");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        builder.permissions(std::fs::Permissions::from_mode(mode));
    }
    #[cfg(not(unix))]
    let _ = mode;
    make(&builder, parent_dir(target)).map_err(|e| Error::from(e).with_file(target))
}

/// How many times a writer makes a new temporary when a cleaner removed the last one in the
/// moment between its creation and the writer's lock on it.
pub(super) const TEMP_ATTEMPTS: usize = 8;

/// The writer's lock on its temporary at `path`, open as `file`: taken (waiting for a cleaner
/// that holds it), then checked to still name the same file, since a cleaner that took the
/// lock first has removed it. `false` when it was removed: the writer makes another.
#[cfg(unix)]
pub(super) fn hold(path: &Path, file: &File) -> io::Result<bool> {
    use std::os::unix::fs::MetadataExt;
    flock(file, true)?;
    let named = match std::fs::symlink_metadata(path) {
        Ok(named) => named,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(e),
    };
    let held = file.metadata()?;
    Ok(held.dev() == named.dev() && held.ino() == named.ino())
}

#[cfg(not(unix))]
pub(super) fn hold(_path: &Path, _file: &File) -> io::Result<bool> {
    Ok(true)
}

/// An exclusive `flock` on `file`, waiting for it or not; `false` when it is held elsewhere.
#[cfg(unix)]
pub(super) fn flock(file: &File, wait: bool) -> io::Result<bool> {
    use std::os::fd::AsRawFd;
    let operation = libc::LOCK_EX | if wait { 0 } else { libc::LOCK_NB };
    loop {
        // SAFETY: a valid open descriptor for the duration of the call.
        if unsafe { libc::flock(file.as_raw_fd(), operation) } == 0 {
            return Ok(true);
        }
        let e = io::Error::last_os_error();
        match e.raw_os_error() {
            Some(libc::EINTR) => continue,
            Some(libc::EWOULDBLOCK) => return Ok(false),
            _ => return Err(e),
        }
    }
}

/// Whether `name` is that of a temporary [`temp_sibling`] made for a target named
/// `target_name`: `.TARGET.XXXXXX.tmp`, six letters or digits in the middle.
pub(super) fn is_temp_name(name: &str, target_name: &str) -> bool {
    let Some(rest) = name
        .strip_prefix('.')
        .and_then(|r| r.strip_prefix(target_name))
        .and_then(|r| r.strip_prefix('.'))
    else {
        return false;
    };
    rest.strip_suffix(".tmp").is_some_and(|random| {
        random.len() == 6 && random.bytes().all(|b| b.is_ascii_alphanumeric())
    })
}

/// Removes the temporaries that writers of `target` killed in mid-write left beside it (and
/// old datasets a crash left between the swap and their removal): every sibling named as
/// `temp_sibling` names them whose lock no live writer holds. Best effort: what cannot be
/// removed stays for the next time. Returns how many were removed.
pub fn remove_stale_temps(target: &Path) -> usize {
    #[cfg(unix)]
    {
        let Some(target_name) = target.file_name().and_then(|n| n.to_str()) else {
            return 0;
        };
        let Ok(entries) = std::fs::read_dir(parent_dir(target)) else {
            return 0;
        };
        let mut removed = 0;
        for entry in entries.flatten() {
            let name = entry.file_name();
            if !name.to_str().is_some_and(|n| is_temp_name(n, target_name)) {
                continue;
            }
            if remove_if_unlocked(&entry.path()) {
                removed += 1;
            }
        }
        removed
    }
    #[cfg(not(unix))]
    {
        let _ = target;
        0
    }
}

/// Removes a temporary file or directory if no writer holds its lock (never following a
/// symbolic link); the lock is held while it goes, so a writer cannot take it over meanwhile.
#[cfg(unix)]
fn remove_if_unlocked(path: &Path) -> bool {
    use std::os::unix::fs::OpenOptionsExt;
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return false;
    };
    if !meta.is_dir() && !meta.is_file() {
        return false;
    }
    let Ok(handle) = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
    else {
        return false;
    };
    if !matches!(flock(&handle, false), Ok(true)) {
        return false;
    }
    let removed = if meta.is_dir() {
        std::fs::remove_dir_all(path)
    } else {
        std::fs::remove_file(path)
    };
    removed.is_ok()
}
