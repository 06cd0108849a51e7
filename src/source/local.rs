//! Local files and directories as sources: a range of a local file is a slice of its memory
//! map (or of its bytes, for a file too small to map), so reading one costs no copy.

use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_buffer::Buffer;
use memmap2::Mmap;

use super::{check_range, ByteSource, ObjectSource};
use crate::error::{Error, Result};

/// A local file as a [`ByteSource`]: mapped once when opened (see `mapped::file_bytes` about
/// a file truncated meanwhile); every range is a slice of the map.
#[derive(Debug, Clone)]
pub struct LocalFile {
    path: PathBuf,
    location: String,
    bytes: Buffer,
    #[allow(dead_code)] // until a reader advises the kernel through it
    map: Option<Arc<Mmap>>,
}

impl LocalFile {
    /// Opens and maps the file at `path`.
    pub fn open(path: impl AsRef<Path>) -> Result<LocalFile> {
        let path = path.as_ref();
        let (bytes, map) =
            crate::mapped::map_or_read(path).map_err(|e| Error::from(e).with_file(path))?;
        Ok(LocalFile::from_parts(path, bytes, map))
    }

    /// Opens an already open file (one a caller holds a lock on, say).
    pub fn from_file(path: impl AsRef<Path>, file: &std::fs::File) -> Result<LocalFile> {
        let path = path.as_ref();
        let (bytes, map) =
            crate::mapped::file_bytes(file).map_err(|e| Error::from(e).with_file(path))?;
        Ok(LocalFile::from_parts(path, bytes, map))
    }

    /// Bytes held in memory, named `location` in messages.
    pub fn from_bytes(location: impl AsRef<Path>, bytes: impl Into<Buffer>) -> LocalFile {
        let bytes: Buffer = bytes.into();
        let bytes = if bytes.as_ptr().align_offset(8) != 0 {
            crate::mapped::aligned_copy(&bytes)
        } else {
            bytes
        };
        LocalFile::from_parts(location.as_ref(), bytes, None)
    }

    fn from_parts(path: &Path, bytes: Buffer, map: Option<Arc<Mmap>>) -> LocalFile {
        LocalFile {
            path: path.to_path_buf(),
            location: path.display().to_string(),
            bytes,
            map,
        }
    }

    /// Its path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// All of its bytes (a slice of the map).
    pub fn bytes(&self) -> &Buffer {
        &self.bytes
    }

    /// The mapping behind the bytes, when the file is mapped: a reader may advise the kernel
    /// of what it will read.
    #[allow(dead_code)]
    pub(crate) fn map(&self) -> Option<&Arc<Mmap>> {
        self.map.as_ref()
    }
}

impl ByteSource for LocalFile {
    fn location(&self) -> &str {
        &self.location
    }

    fn size(&self) -> u64 {
        self.bytes.len() as u64
    }

    fn read_ranges(&self, ranges: &[Range<u64>]) -> Result<Vec<Buffer>> {
        ranges
            .iter()
            .map(|range| {
                check_range(&self.location, self.size(), range)?;
                Ok(self
                    .bytes
                    .slice_with_length(range.start as usize, (range.end - range.start) as usize))
            })
            .collect()
    }

    fn is_local(&self) -> bool {
        true
    }

    fn as_local(&self) -> Option<&LocalFile> {
        Some(self)
    }
}

/// A local directory as an [`ObjectSource`]: a key is a relative path under it.
#[derive(Debug, Clone)]
pub struct LocalDir {
    root: PathBuf,
    location: String,
}

impl LocalDir {
    /// The directory at `root` (not checked here: a missing object is found when asked for).
    pub fn new(root: impl AsRef<Path>) -> LocalDir {
        let root = root.as_ref();
        LocalDir {
            root: root.to_path_buf(),
            location: root.display().to_string(),
        }
    }

    /// Its path.
    pub fn root(&self) -> &Path {
        &self.root
    }

    fn list_into(&self, dir: &Path, keys: &mut Vec<String>) -> Result<()> {
        let entries = match std::fs::read_dir(dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(Error::from(e).with_file(dir)),
        };
        for entry in entries {
            let entry = entry.map_err(|e| Error::from(e).with_file(dir))?;
            let path = entry.path();
            let kind = entry
                .file_type()
                .map_err(|e| Error::from(e).with_file(&path))?;
            if kind.is_dir() {
                self.list_into(&path, keys)?;
            } else if let Ok(relative) = path.strip_prefix(&self.root) {
                let key: Vec<_> = relative
                    .components()
                    .map(|c| c.as_os_str().to_string_lossy())
                    .collect();
                keys.push(key.join("/"));
            }
        }
        Ok(())
    }
}

impl ObjectSource for LocalDir {
    fn location(&self) -> &str {
        &self.location
    }

    fn open(&self, key: &str) -> Result<Option<Arc<dyn ByteSource>>> {
        let path = self.root.join(key);
        match std::fs::metadata(&path) {
            Ok(meta) if meta.is_file() => Ok(Some(Arc::new(LocalFile::open(&path)?))),
            Ok(_) => Ok(None),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(Error::from(e).with_file(&path)),
        }
    }

    fn list(&self, prefix: &str) -> Result<Option<Vec<String>>> {
        let mut keys = Vec::new();
        let start = self.root.join(prefix.trim_end_matches('/'));
        let dir = if start.is_dir() {
            start.as_path()
        } else {
            start.parent().unwrap_or(&self.root)
        };
        self.list_into(dir, &mut keys)?;
        keys.retain(|key| key.starts_with(prefix));
        keys.sort();
        Ok(Some(keys))
    }
}
