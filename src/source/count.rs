//! Sources that count what is read through them: how tests and benchmarks hold a reader to
//! fetching only what it needs.

use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use arrow_buffer::Buffer;

use super::{ByteSource, ObjectSource};
use crate::error::Result;

/// What a [`Counting`] or [`CountingObjects`] source has served so far.
#[derive(Debug, Default)]
pub struct Counts {
    round_trips: AtomicU64,
    ranges: AtomicU64,
    bytes: AtomicU64,
}

impl Counts {
    /// Batched calls: each `read_ranges`, `open`, `get_all` or `list` is one round trip,
    /// however many ranges or objects it asks for.
    pub fn round_trips(&self) -> u64 {
        self.round_trips.load(Ordering::Relaxed)
    }

    /// Ranges (or whole objects) read.
    pub fn ranges(&self) -> u64 {
        self.ranges.load(Ordering::Relaxed)
    }

    /// Bytes read.
    pub fn bytes(&self) -> u64 {
        self.bytes.load(Ordering::Relaxed)
    }

    /// Starts counting afresh.
    pub fn reset(&self) {
        self.round_trips.store(0, Ordering::Relaxed);
        self.ranges.store(0, Ordering::Relaxed);
        self.bytes.store(0, Ordering::Relaxed);
    }

    fn trip(&self) {
        self.round_trips.fetch_add(1, Ordering::Relaxed);
    }

    fn served<'a>(&self, buffers: impl IntoIterator<Item = &'a Buffer>) {
        for buffer in buffers {
            self.ranges.fetch_add(1, Ordering::Relaxed);
            self.bytes.fetch_add(buffer.len() as u64, Ordering::Relaxed);
        }
    }
}

/// A [`ByteSource`] that counts the round trips, ranges and bytes read through it.
#[derive(Debug)]
pub struct Counting<S> {
    inner: S,
    counts: Arc<Counts>,
}

impl<S: ByteSource> Counting<S> {
    /// Counts what is read of `inner`.
    pub fn new(inner: S) -> Counting<S> {
        Counting::with_counts(inner, Arc::default())
    }

    /// Counts into `counts`, shared with other sources.
    pub fn with_counts(inner: S, counts: Arc<Counts>) -> Counting<S> {
        Counting { inner, counts }
    }

    /// What has been read so far.
    pub fn counts(&self) -> Arc<Counts> {
        Arc::clone(&self.counts)
    }
}

impl<S: ByteSource> ByteSource for Counting<S> {
    fn location(&self) -> &str {
        self.inner.location()
    }

    fn size(&self) -> u64 {
        self.inner.size()
    }

    fn read_ranges(&self, ranges: &[Range<u64>]) -> Result<Vec<Buffer>> {
        self.counts.trip();
        let buffers = self.inner.read_ranges(ranges)?;
        self.counts.served(&buffers);
        Ok(buffers)
    }

    fn version(&self) -> Option<&str> {
        self.inner.version()
    }

    // Deliberately not local: a reader under count reads as it would a remote object.
    fn is_local(&self) -> bool {
        false
    }
}

/// An [`ObjectSource`] that counts the round trips, objects, ranges and bytes read through it
/// and through the objects it opens.
#[derive(Debug)]
pub struct CountingObjects<S> {
    inner: S,
    counts: Arc<Counts>,
}

impl<S: ObjectSource> CountingObjects<S> {
    /// Counts what is read of `inner`.
    pub fn new(inner: S) -> CountingObjects<S> {
        CountingObjects {
            inner,
            counts: Arc::default(),
        }
    }

    /// What has been read so far.
    pub fn counts(&self) -> Arc<Counts> {
        Arc::clone(&self.counts)
    }
}

impl<S: ObjectSource> ObjectSource for CountingObjects<S> {
    fn location(&self) -> &str {
        self.inner.location()
    }

    fn open(&self, key: &str) -> Result<Option<Arc<dyn ByteSource>>> {
        self.counts.trip();
        Ok(self.inner.open(key)?.map(|object| {
            Arc::new(Counting::with_counts(object, Arc::clone(&self.counts))) as Arc<dyn ByteSource>
        }))
    }

    fn get_all(&self, keys: &[&str]) -> Result<Vec<Option<Buffer>>> {
        self.counts.trip();
        let objects = self.inner.get_all(keys)?;
        self.counts.served(objects.iter().flatten());
        Ok(objects)
    }

    fn list(&self, prefix: &str) -> Result<Option<Vec<String>>> {
        self.counts.trip();
        self.inner.list(prefix)
    }
}
