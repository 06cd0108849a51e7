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

#[cfg(test)]
mod tests {
    use super::*;

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
