//! One remote object as a [`ByteSource`]: opened with one HEAD (its size and ETag), read by
//! bounded ranged GETs that carry the ETag, concurrently, with ranges a few KiB apart merged.

use std::ops::Range;

use arrow_buffer::{Buffer, MutableBuffer};
use arrowsmith::source::{check_range, ByteSource};
use arrowsmith::{Error, Result};
use bytes::Bytes;
use futures_util::{StreamExt, TryStreamExt};
use object_store::path::Path;
use object_store::{GetOptions, GetRange, ObjectStoreExt};

use crate::config::Target;
use crate::failure::{changed_error, head_error, local_error, remote_error};
use crate::runtime::run;

/// Ranges closer than this are fetched in one GET: a request costs more than these bytes.
/// object_store's own `get_ranges` merges ranges up to 1 MiB apart, which for Jay's
/// column-after-column layout would fetch the columns a projection skips.
pub(crate) const COALESCE_GAP: u64 = 4 * 1024;

/// GETs in flight at once for one read (of ranges, or of a directory's objects).
pub(crate) const CONCURRENCY: usize = 8;

/// A remote object of known size and version.
#[derive(Debug)]
pub(crate) struct RemoteFile {
    target: Target,
    size: u64,
    etag: Option<String>,
}

impl RemoteFile {
    /// Opens the object at `target` with one HEAD request.
    pub(crate) fn open(target: Target) -> Result<RemoteFile> {
        let store = target.store.clone();
        let path = target.path.clone();
        match run(async move { store.head(&path).await })? {
            Ok(meta) => Ok(RemoteFile::with_meta(target, meta.size, meta.e_tag)),
            Err(e) => Err(head_error(&target, "open the object", e)),
        }
    }

    /// An object whose size and ETag a listing or a HEAD already gave.
    pub(crate) fn with_meta(target: Target, size: u64, etag: Option<String>) -> RemoteFile {
        RemoteFile { target, size, etag }
    }
}

/// The ranges to fetch for `ranges`: sorted, each request merged with the next when the gap
/// between them is under [`COALESCE_GAP`]. Empty ranges need no request.
pub(crate) fn coalesce(ranges: &[Range<u64>]) -> Vec<Range<u64>> {
    let mut sorted: Vec<Range<u64>> = ranges.iter().filter(|r| r.end > r.start).cloned().collect();
    sorted.sort_by_key(|r| r.start);
    let mut merged: Vec<Range<u64>> = Vec::with_capacity(sorted.len());
    for range in sorted {
        match merged.last_mut() {
            Some(last) if range.start <= last.end.saturating_add(COALESCE_GAP) => {
                last.end = last.end.max(range.end);
            }
            _ => merged.push(range),
        }
    }
    merged
}

/// `bytes`, fetched from `start`, as a buffer whose address is `start` modulo 8, as a slice of
/// a memory map would be: a reader then finds the file's aligned values aligned, without a copy.
fn aligned(bytes: Bytes, start: u64) -> (Buffer, usize) {
    let pad = (start % 8) as usize;
    if (bytes.as_ptr() as usize) % 8 == pad {
        return (Buffer::from(bytes), 0);
    }
    let mut copy = MutableBuffer::new(pad + bytes.len());
    copy.extend_zeros(pad);
    copy.extend_from_slice(&bytes);
    (copy.into(), pad)
}

impl ByteSource for RemoteFile {
    fn location(&self) -> &str {
        &self.target.shown
    }

    fn size(&self) -> u64 {
        self.size
    }

    fn version(&self) -> Option<&str> {
        self.etag.as_deref()
    }

    fn read_ranges(&self, ranges: &[Range<u64>]) -> Result<Vec<Buffer>> {
        for range in ranges {
            check_range(self.target.shown.as_str(), self.size, range)?;
        }
        let requests = coalesce(ranges);
        let fetched = if requests.is_empty() {
            Vec::new()
        } else {
            let store = self.target.store.clone();
            let path = self.target.path.clone();
            let etag = self.etag.clone();
            run(fetch_all(store, path, etag, requests.clone()))?.map_err(|e| self.fetch_error(e))?
        };
        let mut pieces = Vec::with_capacity(fetched.len());
        for (request, bytes) in requests.iter().zip(fetched) {
            if bytes.len() as u64 != request.end - request.start {
                return Err(local_error(
                    &self.target,
                    format!(
                        "the server sent {} bytes for bytes {}..{}; expected {}",
                        bytes.len(),
                        request.start,
                        request.end,
                        request.end - request.start
                    ),
                ));
            }
            pieces.push(aligned(bytes, request.start));
        }
        Ok(ranges
            .iter()
            .map(|range| {
                if range.is_empty() {
                    return Buffer::from(MutableBuffer::new(0));
                }
                // The last request starting at or before the range holds it whole.
                let at = requests.partition_point(|r| r.start <= range.start) - 1;
                let (buffer, pad) = &pieces[at];
                let offset = pad + (range.start - requests[at].start) as usize;
                buffer.slice_with_length(offset, (range.end - range.start) as usize)
            })
            .collect())
    }
}

/// Why a fetch failed.
pub(crate) enum FetchError {
    Store(object_store::Error),
    /// The server answered with another version than the one asked for.
    Changed,
}

impl RemoteFile {
    fn fetch_error(&self, error: FetchError) -> Error {
        match error {
            FetchError::Changed => changed_error(&self.target),
            FetchError::Store(e) => remote_error(&self.target, "read the object", &e),
        }
    }
}

/// Fetches `requests` of the object at `path`, [`CONCURRENCY`] at a time, each a bounded
/// range (Azure refuses suffix ranges) that must still be version `etag`.
async fn fetch_all(
    store: std::sync::Arc<dyn object_store::ObjectStore>,
    path: Path,
    etag: Option<String>,
    requests: Vec<Range<u64>>,
) -> std::result::Result<Vec<Bytes>, FetchError> {
    futures_util::stream::iter(requests)
        .map(|range| {
            let options = GetOptions::new()
                .with_range(Some(GetRange::Bounded(range)))
                .with_if_match(etag.clone());
            let (store, path, etag) = (store.clone(), path.clone(), etag.clone());
            async move {
                let result = store
                    .get_opts(&path, options)
                    .await
                    .map_err(FetchError::Store)?;
                // A server that ignores If-Match still names the version it sent.
                if etag.is_some() && result.meta.e_tag.is_some() && result.meta.e_tag != etag {
                    return Err(FetchError::Changed);
                }
                result.bytes().await.map_err(FetchError::Store)
            }
        })
        .buffered(CONCURRENCY)
        .try_collect()
        .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_a_few_kib_apart_are_merged_and_far_ones_are_not() {
        let near = coalesce(&[0..10, 100..200, 50..60]);
        assert_eq!(near, vec![0..200]);
        let far = coalesce(&[0..10, (1 << 20)..(1 << 20) + 10]);
        assert_eq!(far, vec![0..10, (1 << 20)..(1 << 20) + 10]);
        let gap = coalesce(&[0..10, 10 + COALESCE_GAP + 1..10 + COALESCE_GAP + 2]);
        assert_eq!(gap.len(), 2);
        assert_eq!(coalesce(&[5..5, 0..0]), Vec::<Range<u64>>::new());
        assert_eq!(coalesce(&[0..100, 10..20]), vec![0..100]);
    }

    #[test]
    fn fetched_bytes_keep_the_alignment_of_their_offset() {
        for start in [0u64, 3, 8, 13] {
            let bytes = Bytes::from((0..64u8).collect::<Vec<_>>()).slice(1..41);
            let (buffer, pad) = aligned(bytes.clone(), start);
            assert_eq!((buffer.as_ptr() as usize + pad) % 8, (start % 8) as usize);
            assert_eq!(&buffer.as_slice()[pad..], &bytes[..]);
        }
    }
}
