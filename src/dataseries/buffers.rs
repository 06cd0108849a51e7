//! Extent-sized buffers kept for reuse between extents.

use std::sync::{Arc, Mutex};

/// Buffers of extents already done with, for the next ones: the writer packs and compresses
/// into them, the reader decompresses into them. Each extent needs a few buffers of about its
/// size; fresh ones cost a page fault per 4 KiB (the allocator returns freed megabytes to the
/// kernel): about 6 % of an lz4 encode's CPU, and 10 % of a read that decompresses eight
/// extents at a time.
#[derive(Clone)]
pub(crate) struct SpareBuffers {
    kept: Arc<Mutex<Vec<Vec<u8>>>>,
    most: usize,
}

impl SpareBuffers {
    /// Keeps at most `most` buffers: enough for the extents under way, so that the memory
    /// held stays within what those extents take anyway.
    pub(crate) fn new(most: usize) -> SpareBuffers {
        SpareBuffers {
            kept: Arc::default(),
            most,
        }
    }

    /// An empty buffer, one of the kept ones when there is one.
    pub(crate) fn take(&self) -> Vec<u8> {
        let spare = self.kept.lock().map(|mut kept| kept.pop());
        let mut buffer = spare.ok().flatten().unwrap_or_default();
        buffer.clear();
        buffer
    }

    pub(crate) fn give(&self, buffer: Vec<u8>) {
        // Small ones cost no page faults worth saving, and would come back for a large part.
        if buffer.capacity() < 64 << 10 {
            return;
        }
        if let Ok(mut kept) = self.kept.lock() {
            if kept.len() < self.most {
                kept.push(buffer);
            }
        }
    }
}
