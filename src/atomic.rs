//! Output that appears whole or not at all: a writer fills a temporary file beside the target
//! and renames it over the target only when everything has been written. Dropping an
//! uncommitted [`AtomicFile`] deletes the temporary file, so a failed write leaves an existing
//! target untouched and never a half-written file.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use tempfile::NamedTempFile;

use crate::error::{Error, Result};

pub struct AtomicFile {
    writer: BufWriter<NamedTempFile>,
    target: PathBuf,
    durable: bool,
}

impl AtomicFile {
    /// Starts a temporary file in the target's directory (a rename is atomic only there).
    pub fn create(target: &Path) -> Result<AtomicFile> {
        let dir = match target.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        };
        let name = target
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let temp = tempfile::Builder::new()
            .prefix(&format!(".{name}."))
            .suffix(".tmp")
            .tempfile_in(dir)
            .map_err(|e| Error::from(e).with_file(target))?;
        Ok(AtomicFile {
            writer: BufWriter::with_capacity(1 << 20, temp),
            target: target.to_path_buf(),
            durable: true,
        })
    }

    /// Whether `commit` flushes the data to disk before the rename (the default). Without it
    /// a power loss right after the rename may leave an empty target on some file systems.
    pub fn set_durable(&mut self, durable: bool) {
        self.durable = durable;
    }

    pub fn target(&self) -> &Path {
        &self.target
    }

    /// The underlying file, for copies that bypass the buffer (flushes the buffer first).
    pub fn file_mut(&mut self) -> io::Result<&mut File> {
        self.writer.flush()?;
        Ok(self.writer.get_mut().as_file_mut())
    }

    /// Renames the finished temporary file over the target.
    pub fn commit(self) -> Result<()> {
        let target = self.target;
        let temp = self
            .writer
            .into_inner()
            .map_err(|e| Error::from(e.into_error()).with_file(&target))?;
        if self.durable {
            temp.as_file()
                .sync_all()
                .map_err(|e| Error::from(e).with_file(&target))?;
        }
        temp.persist(&target)
            .map_err(|e| Error::from(e.error).with_file(&target))?;
        Ok(())
    }
}

impl Write for AtomicFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.writer.write(buf)
    }
    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        self.writer.write_all(buf)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.writer.flush()
    }
}

/// A directory that appears whole or not at all: it is built under a temporary name beside the
/// target (same parent, so the rename is atomic) and renamed into place by [`AtomicDir::commit`].
/// Dropping it uncommitted removes the temporary directory.
pub struct AtomicDir {
    temp: PathBuf,
    target: PathBuf,
    committed: bool,
}

impl AtomicDir {
    pub fn create(target: &Path) -> Result<AtomicDir> {
        use std::sync::atomic::{AtomicU64, Ordering};
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let dir = match target.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        };
        let name = target
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let temp = dir.join(format!(".{name}.arrowsmith-tmp-{}-{n}", std::process::id()));
        std::fs::create_dir(&temp).map_err(|e| Error::from(e).with_file(&temp))?;
        Ok(AtomicDir {
            temp,
            target: target.to_path_buf(),
            committed: false,
        })
    }

    /// Where the contents are being built.
    pub fn path(&self) -> &Path {
        &self.temp
    }

    pub fn target(&self) -> &Path {
        &self.target
    }

    /// Renames the finished directory to the target. An existing target is an error unless
    /// `overwrite`; then it is renamed aside, the new one renamed in, and the old one removed.
    pub fn commit(mut self, overwrite: bool) -> Result<()> {
        let target = self.target.clone();
        if std::fs::symlink_metadata(&target).is_ok() {
            if !overwrite {
                return Err(Error::new(
                    crate::error::ErrorClass::InvalidArgument,
                    "the output already exists; ask for overwrite to replace it",
                )
                .with_file(&target));
            }
            let aside = self.temp.with_extension("old");
            std::fs::rename(&target, &aside).map_err(|e| Error::from(e).with_file(&target))?;
            if let Err(e) = std::fs::rename(&self.temp, &target) {
                let _ = std::fs::rename(&aside, &target);
                return Err(Error::from(e).with_file(&target));
            }
            self.committed = true;
            let removed = if aside.is_dir() {
                std::fs::remove_dir_all(&aside)
            } else {
                std::fs::remove_file(&aside)
            };
            removed.map_err(|e| Error::from(e).with_file(&aside))?;
        } else {
            std::fs::rename(&self.temp, &target).map_err(|e| Error::from(e).with_file(&target))?;
            self.committed = true;
        }
        if let Some(parent) = target.parent().filter(|p| !p.as_os_str().is_empty()) {
            if let Ok(dir) = File::open(parent) {
                let _ = dir.sync_all();
            }
        }
        Ok(())
    }
}

impl Drop for AtomicDir {
    fn drop(&mut self) {
        if !self.committed {
            let _ = std::fs::remove_dir_all(&self.temp);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn atomic_dir_appears_whole_or_not_at_all() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("t.bcolz");
        {
            let d = AtomicDir::create(&target).unwrap();
            std::fs::write(d.path().join("x"), b"1").unwrap();
        }
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
        let d = AtomicDir::create(&target).unwrap();
        std::fs::write(d.path().join("x"), b"1").unwrap();
        d.commit(false).unwrap();
        let d = AtomicDir::create(&target).unwrap();
        std::fs::write(d.path().join("y"), b"2").unwrap();
        assert!(d.commit(false).is_err());
        assert!(target.join("x").exists());
        let d = AtomicDir::create(&target).unwrap();
        std::fs::write(d.path().join("y"), b"2").unwrap();
        d.commit(true).unwrap();
        assert!(target.join("y").exists() && !target.join("x").exists());
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn dropped_file_leaves_the_target_alone() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("out.bin");
        std::fs::write(&target, b"good").unwrap();
        {
            let mut f = AtomicFile::create(&target).unwrap();
            f.write_all(b"half").unwrap();
        }
        assert_eq!(std::fs::read(&target).unwrap(), b"good");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);

        let mut f = AtomicFile::create(&target).unwrap();
        f.write_all(b"new").unwrap();
        f.commit().unwrap();
        assert_eq!(std::fs::read(&target).unwrap(), b"new");
    }
}
