//! A small tmpfs for full-disk tests: mounted on a temporary directory (we run as root in CI),
//! unmounted when dropped. Where it cannot be mounted (not root, no `mount`), [`SmallDisk::mount`]
//! prints why and returns `None`, and the test skips.

use std::path::Path;
use std::process::Command;

pub struct SmallDisk {
    dir: tempfile::TempDir,
}

impl SmallDisk {
    /// A tmpfs of `bytes` bytes, or `None` (with a message saying the test is skipped).
    pub fn mount(bytes: u64) -> Option<SmallDisk> {
        let dir = tempfile::tempdir().ok()?;
        let status = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={bytes}"), "tmpfs"])
            .arg(dir.path())
            .stderr(std::process::Stdio::null())
            .status();
        match status {
            Ok(s) if s.success() => Some(SmallDisk { dir }),
            other => {
                eprintln!(
                    "skipped: cannot mount a {bytes}-byte tmpfs on {} ({other:?}); the full-disk \
                     test needs root",
                    dir.path().display()
                );
                None
            }
        }
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Bytes free on the disk, as `df` shows them.
    pub fn free_bytes(&self) -> u64 {
        let path = std::ffi::CString::new(self.path().to_str().unwrap()).unwrap();
        // SAFETY: an all-zero statvfs is a valid value of the C struct, filled by the call.
        let mut stats: libc::statvfs = unsafe { std::mem::zeroed() };
        // SAFETY: a NUL-terminated path and a valid pointer to a statvfs.
        assert_eq!(unsafe { libc::statvfs(path.as_ptr(), &mut stats) }, 0);
        stats.f_bavail as u64 * stats.f_frsize as u64
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(self.dir.path()).status();
    }
}
