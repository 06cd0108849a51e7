//! The Arrow ecosystem's readers over a remote object ([`ByteSource`]): Parquet reads it as a
//! [`ChunkReader`] (its footer, then each column chunk a scan needs, by range); the IPC and
//! text readers read it through [`ObjectReader`], a `Read + Seek` over windows of the object.

use std::io::{self, Read, Seek, SeekFrom};
use std::ops::Range;
use std::sync::{Arc, Mutex, OnceLock};

use ::parquet::arrow::ProjectionMask;
use ::parquet::errors::ParquetError;
use ::parquet::file::metadata::ParquetMetaData;
use ::parquet::file::reader::{ChunkReader, Length};
use bytes::Bytes;

use crate::source::ByteSource;

/// How much of the object one request of [`ObjectReader`] fetches ahead of a read.
const WINDOW: u64 = 8 << 20;

/// The window of a walk over message headers (an IPC listing): a header is a few hundred
/// bytes, and the bodies between them are not read.
pub(crate) const HEADER_WINDOW: u64 = 64 << 10;

/// How much of a Parquet object's end is fetched at open: its footer (and the length and magic
/// after it) fits in one request unless it is larger than this.
const PARQUET_TAIL: u64 = 64 << 10;

/// Bytes of an object as `bytes` holds them, without a copy: the buffer owns them.
fn to_bytes(buffer: arrow_buffer::Buffer) -> Bytes {
    Bytes::from_owner(Owned(buffer))
}

/// An Arrow buffer as an owner of bytes for [`Bytes::from_owner`].
struct Owned(arrow_buffer::Buffer);

impl AsRef<[u8]> for Owned {
    fn as_ref(&self) -> &[u8] {
        self.0.as_slice()
    }
}

fn io_error(error: crate::error::Error) -> io::Error {
    io::Error::other(error)
}

/// A remote Parquet object as parquet's reader reads it: its tail fetched once at open (the
/// footer's length, then the footer, are served from it); once the footer is read
/// ([`ChunkRanges::set`]), a read inside a column chunk fetches that chunk and the other
/// projected chunks of its row group in one batched request (up to [`GROUP_FETCH_BYTES`]), and
/// serves their page headers and pages from them; the chunks of earlier row groups are let go.
/// parquet's own sync reader would ask for each page header and each page on its own, and its
/// `ChunkReader` is asked for one chunk at a time.
pub(crate) struct ObjectChunks {
    source: Arc<dyn ByteSource>,
    /// The object's last bytes and where they start.
    tail: (u64, Bytes),
    ranges: Arc<ChunkRanges>,
}

/// The most bytes of a row group's column chunks fetched in one request: a row group's
/// projected chunks larger than this take more than one.
const GROUP_FETCH_BYTES: u64 = 64 << 20;

/// One column chunk of a Parquet object, from its footer.
#[derive(Debug, Clone)]
struct ChunkPlace {
    range: Range<u64>,
    group: usize,
    /// Whether the scan reads its column: the chunks fetched together with a chunk are its
    /// row group's projected ones.
    projected: bool,
}

/// Where the column chunks of a Parquet object are, from its footer, and the chunks fetched.
#[derive(Default)]
pub(crate) struct ChunkRanges {
    /// Each chunk, by start.
    chunks: OnceLock<Vec<ChunkPlace>>,
    /// Chunks fetched: `(start, row group, bytes)`.
    held: Mutex<Vec<(u64, usize, Bytes)>>,
}

impl ChunkRanges {
    /// Records where the column chunks are, from the footer (checked by `check_chunk_ranges`),
    /// and which the scan reads: the leaf columns `projection` includes (every one for `None`).
    pub(crate) fn set(&self, meta: &ParquetMetaData, projection: Option<&ProjectionMask>) {
        let mut chunks = Vec::new();
        for (group, row_group) in meta.row_groups().iter().enumerate() {
            for (leaf, column) in row_group.columns().iter().enumerate() {
                let (start, len) = column.byte_range();
                chunks.push(ChunkPlace {
                    range: start..start.saturating_add(len),
                    group,
                    projected: projection.is_none_or(|mask| mask.leaf_included(leaf)),
                });
            }
        }
        chunks.sort_by_key(|chunk| chunk.range.start);
        let _ = self.chunks.set(chunks);
    }

    /// The chunk `range` lies in.
    fn chunk_of(&self, range: &Range<u64>) -> Option<&ChunkPlace> {
        let chunks = self.chunks.get()?;
        let after = chunks.partition_point(|chunk| chunk.range.start <= range.start);
        let chunk = chunks.get(after.checked_sub(1)?)?;
        (range.end <= chunk.range.end && chunk.range.start < chunk.range.end).then_some(chunk)
    }

    /// The chunks to fetch with `chunk`: it, then the other projected chunks of its row group
    /// not in `held`, in file order, as many as fit in [`GROUP_FETCH_BYTES`].
    fn fetch_with(&self, chunk: &ChunkPlace, held: &[(u64, usize, Bytes)]) -> Vec<Range<u64>> {
        let mut ranges = vec![chunk.range.clone()];
        let mut bytes = chunk.range.end - chunk.range.start;
        let others = self.chunks.get().into_iter().flatten().filter(|other| {
            other.group == chunk.group
                && other.projected
                && other.range.start < other.range.end
                && other.range.start != chunk.range.start
                && !held.iter().any(|(start, ..)| *start == other.range.start)
        });
        for other in others {
            let len = other.range.end - other.range.start;
            if bytes.saturating_add(len) > GROUP_FETCH_BYTES {
                break;
            }
            bytes += len;
            ranges.push(other.range.clone());
        }
        ranges
    }
}

impl ObjectChunks {
    pub(crate) fn open(source: Arc<dyn ByteSource>) -> crate::error::Result<ObjectChunks> {
        let size = source.size();
        let start = size.saturating_sub(PARQUET_TAIL);
        let tail = to_bytes(source.read_range(start..size)?);
        Ok(ObjectChunks {
            source,
            tail: (start, tail),
            ranges: Arc::default(),
        })
    }

    /// Where the column chunks are to be recorded once the footer is read.
    pub(crate) fn ranges(&self) -> Arc<ChunkRanges> {
        Arc::clone(&self.ranges)
    }

    /// The held bytes `range` lies in, and where they start: the tail, or the column chunk,
    /// fetched now if it is not held.
    fn held(&self, range: &Range<u64>) -> crate::error::Result<Option<(u64, Bytes)>> {
        let (tail_start, tail) = &self.tail;
        if range.start >= *tail_start && range.end <= tail_start + tail.len() as u64 {
            return Ok(Some((*tail_start, tail.clone())));
        }
        let Some(chunk) = self.ranges.chunk_of(range) else {
            return Ok(None);
        };
        let start = chunk.range.start;
        let mut held = self.ranges.held.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((_, _, bytes)) = held.iter().find(|(at, ..)| *at == start) {
            return Ok(Some((start, bytes.clone())));
        }
        let ranges = self.ranges.fetch_with(chunk, &held);
        let fetched = self.source.read_ranges(&ranges)?;
        let bytes = fetched.first().cloned().map(to_bytes).unwrap_or_default();
        for (range, piece) in ranges.iter().zip(fetched) {
            held.push((range.start, chunk.group, to_bytes(piece)));
        }
        // A chunk is let go when its last page is read (see `range`). Columns read a batch's
        // rows one after the other, so one column may be row groups ahead of another, and
        // the chunks of an earlier group are still to be read: they are let go only past a
        // bound, earliest group first (a chunk let go too soon is fetched again).
        let mut total: u64 = held.iter().map(|(.., b)| b.len() as u64).sum();
        while total > 2 * GROUP_FETCH_BYTES {
            let Some(oldest) = held.iter().map(|(_, g, _)| *g).min() else {
                break;
            };
            if oldest >= chunk.group {
                break;
            }
            held.retain(|(_, g, b)| {
                let keep = *g != oldest;
                if !keep {
                    total -= b.len() as u64;
                }
                keep
            });
        }
        Ok(Some((start, bytes)))
    }

    fn range(&self, range: Range<u64>) -> crate::error::Result<Bytes> {
        match self.held(&range)? {
            Some((start, bytes)) => {
                let end = start + bytes.len() as u64;
                if range.end == end {
                    // The chunk's last page: parquet reads a chunk front to back, once.
                    let mut held = self.ranges.held.lock().unwrap_or_else(|e| e.into_inner());
                    held.retain(|(at, ..)| *at != start);
                }
                Ok(bytes.slice((range.start - start) as usize..(range.end - start) as usize))
            }
            None => Ok(to_bytes(self.source.read_range(range)?)),
        }
    }
}

impl Length for ObjectChunks {
    fn len(&self) -> u64 {
        self.source.size()
    }
}

impl ChunkReader for ObjectChunks {
    type T = ObjectReader;

    fn get_read(&self, start: u64) -> ::parquet::errors::Result<ObjectReader> {
        let mut reader = ObjectReader::new(Arc::clone(&self.source));
        reader.pos = start;
        let held = self.held(&(start..start.saturating_add(1)));
        if let Some((from, bytes)) = held.map_err(|e| ParquetError::External(Box::new(e)))? {
            // A page header is read from its chunk, and never past it.
            reader.end = from + bytes.len() as u64;
            reader.window = (from, bytes);
        }
        Ok(reader)
    }

    fn get_bytes(&self, start: u64, length: usize) -> ::parquet::errors::Result<Bytes> {
        let end = start.saturating_add(length as u64);
        self.range(start..end)
            .map_err(|e| ParquetError::External(Box::new(e)))
    }
}

/// A remote object read front to back (or from where it is sought), a window of up to
/// [`WINDOW`] bytes (or the window it is given) per request.
pub(crate) struct ObjectReader {
    source: Arc<dyn ByteSource>,
    pos: u64,
    /// Where its reads end: the object's end, or a Parquet column chunk's.
    end: u64,
    /// How much one request fetches.
    window_len: u64,
    /// The window last fetched and where it starts.
    window: (u64, Bytes),
}

impl ObjectReader {
    pub(crate) fn new(source: Arc<dyn ByteSource>) -> ObjectReader {
        ObjectReader::with_window(source, WINDOW)
    }

    /// A reader fetching `window_len` bytes (at least one) a request.
    pub(crate) fn with_window(source: Arc<dyn ByteSource>, window_len: u64) -> ObjectReader {
        ObjectReader {
            window_len: window_len.max(1),
            end: source.size(),
            source,
            pos: 0,
            window: (0, Bytes::new()),
        }
    }

    /// The held bytes from `pos` on, fetching the window at `pos` when none are held.
    fn held(&mut self) -> io::Result<&[u8]> {
        let size = self.end;
        let (start, bytes) = &self.window;
        let in_window = self.pos >= *start && self.pos < start + bytes.len() as u64;
        if !in_window && self.pos < size {
            let end = size.min(self.pos.saturating_add(self.window_len));
            let fetched = self.source.read_range(self.pos..end).map_err(io_error)?;
            self.window = (self.pos, to_bytes(fetched));
        }
        let (start, bytes) = &self.window;
        let held_end = (start + bytes.len() as u64).min(size);
        if self.pos < *start || self.pos >= held_end {
            return Ok(&[]);
        }
        Ok(&bytes[(self.pos - start) as usize..(held_end - start) as usize])
    }
}

impl Read for ObjectReader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let held = self.held()?;
        let n = held.len().min(buf.len());
        buf[..n].copy_from_slice(&held[..n]);
        self.pos += n as u64;
        Ok(n)
    }
}

impl Seek for ObjectReader {
    fn seek(&mut self, to: SeekFrom) -> io::Result<u64> {
        let pos = match to {
            SeekFrom::Start(n) => Some(n),
            SeekFrom::End(n) => self.source.size().checked_add_signed(n),
            SeekFrom::Current(n) => self.pos.checked_add_signed(n),
        };
        self.pos = pos.ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                "a seek before the start of the object",
            )
        })?;
        Ok(self.pos)
    }
}
