//! A remote object whose first and last bytes are fetched once, up front: the bytes that
//! recognise its format are the bytes its reader opens with, so recognising it costs no round
//! trip of its own.

use std::ops::Range;
use std::sync::Arc;

use arrow_buffer::Buffer;

use super::ByteSource;
use crate::error::Result;

/// Bytes held from the start: what the single-file readers read first when they open a remote
/// object (VS its first 64 KiB, DataSeries 16 KiB, Jay 8 bytes).
const HEAD: u64 = 64 << 10;

/// Bytes held from the end: Jay reads its last 64 KiB from an 8-byte boundary, DataSeries its
/// last 32 KiB.
const TAIL: u64 = (64 << 10) + 8;

/// An object with its head and tail held: a read inside them is served without a request,
/// the rest of a batched read goes to the object in one request.
#[derive(Debug)]
pub(crate) struct Prefetched {
    inner: Arc<dyn ByteSource>,
    /// `(offset, bytes)`: the whole object when it is small, else its head and its tail.
    held: Vec<(u64, Buffer)>,
}

impl Prefetched {
    /// Fetches the head and tail of `inner` in one round trip: as much of each as a
    /// single-file reader opens with.
    pub(crate) fn fetch(inner: Arc<dyn ByteSource>) -> Result<Prefetched> {
        Self::fetch_ends(inner, HEAD, TAIL)
    }

    /// Fetches the first `head` and last `tail` bytes of `inner` in one round trip (the whole
    /// object when it is no larger than both).
    pub(crate) fn fetch_ends(
        inner: Arc<dyn ByteSource>,
        head: u64,
        tail: u64,
    ) -> Result<Prefetched> {
        let size = inner.size();
        let whole = 0..size;
        let ranges = if size <= head + tail {
            vec![whole]
        } else {
            vec![0..head, size - tail..size]
        };
        let pieces = inner.read_ranges(&ranges)?;
        let held = ranges.iter().map(|r| r.start).zip(pieces).collect();
        Ok(Prefetched { inner, held })
    }

    /// `inner` with all of its bytes held: `bytes`, read already.
    pub(crate) fn whole(inner: Arc<dyn ByteSource>, bytes: Buffer) -> Prefetched {
        Prefetched {
            inner,
            held: vec![(0, bytes)],
        }
    }

    /// The first bytes of the object, up to `len`.
    pub(crate) fn head(&self, len: u64) -> &[u8] {
        let head = self.held.first().map_or(&[][..], |(_, b)| b.as_slice());
        &head[..head.len().min(len as usize)]
    }

    fn get(&self, range: &Range<u64>) -> Option<Buffer> {
        self.held.iter().find_map(|(at, piece)| {
            let end = at + piece.len() as u64;
            (range.start >= *at && range.end <= end && range.start <= range.end).then(|| {
                piece.slice_with_length(
                    (range.start - at) as usize,
                    (range.end - range.start) as usize,
                )
            })
        })
    }
}

impl ByteSource for Prefetched {
    fn location(&self) -> &str {
        self.inner.location()
    }

    fn size(&self) -> u64 {
        self.inner.size()
    }

    fn read_ranges(&self, ranges: &[Range<u64>]) -> Result<Vec<Buffer>> {
        let mut out: Vec<Option<Buffer>> = ranges.iter().map(|r| self.get(r)).collect();
        let missing: Vec<Range<u64>> = ranges
            .iter()
            .zip(&out)
            .filter(|(_, held)| held.is_none())
            .map(|(r, _)| r.clone())
            .collect();
        if !missing.is_empty() {
            let mut fetched = self.inner.read_ranges(&missing)?.into_iter();
            for slot in out.iter_mut().filter(|slot| slot.is_none()) {
                *slot = fetched.next();
            }
        }
        Ok(out.into_iter().flatten().collect())
    }

    fn version(&self) -> Option<&str> {
        self.inner.version()
    }
}
