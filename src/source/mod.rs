//! Where a reader's bytes come from, and where a writer's go: the one I/O seam of the core.
//!
//! A single-file format reads a [`ByteSource`]: its size and batched reads of byte ranges into
//! Arrow [`Buffer`]s. A directory format (bcolz, Filo sets) reads an [`ObjectSource`]: named
//! objects under a root, each a [`ByteSource`], with "not found" distinct from an error. Local
//! files are [`LocalFile`] and [`LocalDir`]: a local range is a slice of the file's memory map,
//! so the zero-copy path of the readers stays. Remote objects (S3, GCS, Azure, HTTP) come from
//! a [`Storage`] that a front end registers ([`register_storage`]); the core names no
//! `object_store` type, so it does not follow object_store's majors.
//!
//! Readers ask for what a phase needs in one [`read_ranges`](ByteSource::read_ranges) call
//! (a file's tail, then its metadata, then the projected columns of one fragment), so that a
//! remote read fetches that and not the file. [`Counting`] counts the requests and bytes a
//! read takes, which is how the tests hold each format to it.

mod count;
mod local;
mod prefetch;
mod storage;

use std::fmt;
use std::ops::Range;
use std::sync::Arc;

use arrow_buffer::Buffer;

use crate::error::{Error, ErrorClass, Result};

pub use crate::location::{is_url, local_path, shown_url, urls_shown};
pub use count::{Counting, CountingObjects, Counts};
pub use local::{LocalDir, LocalFile};
pub(crate) use prefetch::Prefetched;
pub use storage::{
    refuse_url, register_storage, registered_storage, ObjectWrite, RemoteEntry, RemoteOpened,
    Storage, StorageOptions,
};

/// A source of byte ranges: one file or object of known size.
pub trait ByteSource: Send + Sync + fmt::Debug {
    /// Where it is, for messages: a path, or a URL without credentials.
    fn location(&self) -> &str;

    /// Its size in bytes, known when it was opened.
    fn size(&self) -> u64;

    /// Reads each of `ranges`, in one batched request where the source can batch, and gives
    /// their bytes in the order asked. A range past [`size`](Self::size) is an error naming
    /// it; nothing is allocated for it. A remote source coalesces only ranges a few KiB
    /// apart, so the bytes between the columns a reader skips are not fetched.
    fn read_ranges(&self, ranges: &[Range<u64>]) -> Result<Vec<Buffer>>;

    /// The version of the object it reads (a remote object's ETag; a local file has none).
    /// A read of a remote object that no longer has this version fails instead of mixing
    /// two versions' bytes.
    fn version(&self) -> Option<&str> {
        None
    }

    /// Whether its bytes are local and already addressable (a memory map): reading all of
    /// it costs nothing, so a reader may take the whole file in one range.
    fn is_local(&self) -> bool {
        false
    }

    /// The [`LocalFile`] this source is, when it is one: a reader may then take the file's
    /// memory map whole and advise the kernel through it.
    #[doc(hidden)]
    fn as_local(&self) -> Option<&LocalFile> {
        None
    }

    /// Reads one range.
    fn read_range(&self, range: Range<u64>) -> Result<Buffer> {
        let mut buffers = self.read_ranges(std::slice::from_ref(&range))?;
        buffers.pop().ok_or_else(|| {
            Error::new(ErrorClass::Io, format!("a read of {range:?} gave no bytes"))
                .with_file(self.location())
        })
    }

    /// Reads all of it.
    fn read_all(&self) -> Result<Buffer> {
        self.read_range(0..self.size())
    }
}

/// A shared source reads as the source it shares, so an opened object
/// (`Arc<dyn ByteSource>`) can be wrapped as any other source is (in a [`Counting`]).
impl<S: ByteSource + ?Sized> ByteSource for Arc<S> {
    fn location(&self) -> &str {
        (**self).location()
    }

    fn size(&self) -> u64 {
        (**self).size()
    }

    fn read_ranges(&self, ranges: &[Range<u64>]) -> Result<Vec<Buffer>> {
        (**self).read_ranges(ranges)
    }

    fn version(&self) -> Option<&str> {
        (**self).version()
    }

    fn is_local(&self) -> bool {
        (**self).is_local()
    }

    fn as_local(&self) -> Option<&LocalFile> {
        (**self).as_local()
    }

    fn read_range(&self, range: Range<u64>) -> Result<Buffer> {
        (**self).read_range(range)
    }

    fn read_all(&self) -> Result<Buffer> {
        (**self).read_all()
    }
}

/// A source of named objects under one root: a local directory, or an object-store prefix.
/// Keys are relative to the root and `/`-separated.
pub trait ObjectSource: Send + Sync + fmt::Debug {
    /// Where the root is, for messages: a path, or a URL without credentials.
    fn location(&self) -> &str;

    /// The object at `key` as a source of byte ranges, or `None` when there is no such object.
    fn open(&self, key: &str) -> Result<Option<Arc<dyn ByteSource>>>;

    /// The whole objects at `keys`, each `None` when missing, fetched concurrently where the
    /// source can (a bcolz reader asks for the chunk files of a fragment in one call).
    fn get_all(&self, keys: &[&str]) -> Result<Vec<Option<Buffer>>> {
        keys.iter()
            .map(|key| self.open(key)?.map(|object| object.read_all()).transpose())
            .collect()
    }

    /// The whole object at `key`, or `None` when there is none.
    fn get(&self, key: &str) -> Result<Option<Buffer>> {
        Ok(self.get_all(&[key])?.pop().flatten())
    }

    /// The keys of the objects under `prefix` (relative to the root, `""` for all), sorted;
    /// `None` when the source cannot list (a plain HTTP server).
    fn list(&self, prefix: &str) -> Result<Option<Vec<String>>>;
}

/// Checks that `range` lies inside a source of `size` bytes at `location` (as messages show
/// it): an error of class `BufferOutOfBounds` naming the location, the range and the size
/// otherwise. Every [`ByteSource`] checks a range with it before fetching anything, so a range
/// past the end fails the same way from a local file and from any store.
pub fn check_range(location: &str, size: u64, range: &Range<u64>) -> Result<()> {
    if range.start > range.end || range.end > size {
        return Err(Error::new(
            ErrorClass::BufferOutOfBounds,
            format!(
                "bytes {}..{} were asked of an object of {size} bytes",
                range.start, range.end
            ),
        )
        .with_file(location)
        .at_offset(range.start));
    }
    Ok(())
}

/// Reads `ranges` of `source` in one call and checks that every range came back whole: each
/// range is checked against the source's size first (nothing is asked past its end), and a
/// source that gives fewer ranges or fewer bytes than asked (an object changed while it was
/// read, a server that cut a response) is an error naming the source, the range's offset and
/// the bytes expected and given, never a short buffer a reader would misparse or ask for again.
pub(crate) fn read_exact(source: &dyn ByteSource, ranges: &[Range<u64>]) -> Result<Vec<Buffer>> {
    let location = source.location();
    for range in ranges {
        check_range(location, source.size(), range)?;
    }
    let buffers = source.read_ranges(ranges).map_err(|e| {
        let e = e.with_file(location);
        match ranges {
            [only] => e.at_offset(only.start),
            _ => e,
        }
    })?;
    if buffers.len() != ranges.len() {
        return Err(Error::new(
            ErrorClass::Io,
            format!(
                "{} byte {} asked for and {} came back",
                ranges.len(),
                if ranges.len() == 1 {
                    "range was"
                } else {
                    "ranges were"
                },
                buffers.len()
            ),
        )
        .with_file(location));
    }
    for (range, buffer) in ranges.iter().zip(&buffers) {
        let expected = range.end - range.start;
        if buffer.len() as u64 != expected {
            return Err(Error::new(
                ErrorClass::Io,
                format!(
                    "a read of bytes {}..{} gave {} bytes, not {expected}; the object may \
                     have changed while it was read",
                    range.start,
                    range.end,
                    buffer.len()
                ),
            )
            .with_file(location)
            .at_offset(range.start));
        }
    }
    Ok(buffers)
}

/// Reads one range of `source`, checked as [`read_exact`] checks it.
pub(crate) fn read_range_exact(source: &dyn ByteSource, range: Range<u64>) -> Result<Buffer> {
    let mut buffers = read_exact(source, std::slice::from_ref(&range))?;
    Ok(buffers.remove(0))
}

#[cfg(test)]
mod tests;
