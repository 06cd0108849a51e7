//! A VS file's bytes as a reader reaches them ([`FileBytes`]): all of them in memory (a local
//! file's map, or bytes), or the first read of an object read by ranges and the
//! [`ByteSource`] the rest comes from, a [`Window`] at a time.
//!
//! VS has no index: a block is found by walking the headers before it. Over a source read by
//! ranges a walk therefore reads windows of the file in order, each starting at the block the
//! last one cut; the part of that block (and of the points a batch still holds) already read
//! is copied into the new window, so no byte is fetched twice. Window sizes:
//! * opening reads the first [`OPEN_PREFIX`] bytes in one round trip: the header, the meta
//!   block, and the whole of a small file; a walk to a meta block further on (past large blank
//!   blocks, or a meta block larger than that) reads windows that double from there;
//! * a reader reads [`READ_WINDOW`] at a time, never past the end of its fragment, and at
//!   least as much as the points its batch still holds, so that copying them stays linear;
//! * listing the blocks reads header windows (see `layout`).

use std::ops::{ControlFlow, Range};
use std::sync::Arc;

use arrow_buffer::{Buffer, MutableBuffer};

use crate::error::Result;
use crate::source::{read_range_exact, ByteSource};
use crate::vs::codec::{Block, Blocks, EofMode};

/// Bytes read when a file is opened by ranges: its header and meta block in one round trip.
pub(super) const OPEN_PREFIX: u64 = 64 << 10;

/// Bytes a reader reads at a time: several MiB, so that a round trip's latency is small next
/// to its transfer, and memory stays bounded by this and the batch.
pub(super) const READ_WINDOW: u64 = 8 << 20;

/// How much a walk over a file read by ranges reads at a time: [`OPEN_PREFIX`] and
/// [`READ_WINDOW`] (smaller in the tests, so that the fixtures are read by many windows).
#[derive(Debug, Clone, Copy)]
pub(super) struct Windows {
    /// Bytes read when the file is opened.
    pub(super) open: u64,
    /// The most a window reads at a time (unless a block or a batch needs more).
    pub(super) read: u64,
}

impl Default for Windows {
    fn default() -> Self {
        Windows {
            open: OPEN_PREFIX,
            read: READ_WINDOW,
        }
    }
}

/// A VS file's bytes: the first of them in memory, the rest read from a source by ranges.
#[derive(Debug)]
pub(super) struct FileBytes {
    /// Bytes `0..head.len()` of the file: all of it when local or small.
    pub(super) head: Buffer,
    /// Size of the file.
    pub(super) size: u64,
    /// Where the bytes past `head` come from (none for bytes held in memory).
    source: Option<Arc<dyn ByteSource>>,
    /// How much is read at a time.
    pub(super) windows: Windows,
}

/// Bytes `base..base + bytes.len()` of a file, held in memory.
#[derive(Debug, Clone)]
pub(super) struct Window {
    pub(super) base: u64,
    pub(super) bytes: Buffer,
}

/// Where a walk over a file's blocks ended: the offset after its last block, and the offset
/// of the terminal when it reached one.
pub(super) struct WalkEnd {
    pub(super) position: u64,
    pub(super) terminal: Option<u64>,
}

impl FileBytes {
    /// The whole file, held in memory.
    pub(super) fn whole(bytes: Buffer) -> FileBytes {
        FileBytes {
            size: bytes.len() as u64,
            head: bytes,
            source: None,
            windows: Windows::default(),
        }
    }

    /// The file `source` reads: wholly when it is local (its ranges are slices of a map),
    /// else its first `windows.open` bytes, in one round trip.
    pub(super) fn open(source: Arc<dyn ByteSource>, windows: Windows) -> Result<FileBytes> {
        let size = source.size();
        let head = if source.is_local() {
            source
                .read_all()
                .map_err(|e| e.with_file(source.location()))?
        } else {
            // The 4-byte header at least, which is checked before the walk.
            read_range_exact(source.as_ref(), 0..size.min(windows.open.max(4)))?
        };
        Ok(FileBytes {
            head,
            size,
            source: Some(source),
            windows,
        })
    }

    /// The whole file, when all of it is in memory.
    pub(super) fn all(&self) -> Option<&Buffer> {
        (self.head.len() as u64 == self.size).then_some(&self.head)
    }

    /// The source the file is read from, if any.
    pub(super) fn source(&self) -> Option<&Arc<dyn ByteSource>> {
        self.source.as_ref()
    }

    /// A window at the start of the file (its head).
    pub(super) fn head_window(&self) -> Window {
        Window {
            base: 0,
            bytes: self.head.clone(),
        }
    }

    /// Bytes `range` of the file (inside it): a slice of the head when it holds them, else
    /// one round trip to the source.
    fn read(&self, range: Range<u64>) -> Result<Buffer> {
        if range.end <= self.head.len() as u64 {
            return Ok(self
                .head
                .slice_with_length(range.start as usize, (range.end - range.start) as usize));
        }
        let source = self
            .source
            .as_ref()
            .expect("a file not wholly in memory has a source");
        // A walk that wants bytes it was not given would ask for them again, forever: the
        // read is checked to be whole.
        read_range_exact(source.as_ref(), range)
    }

    /// Walks the blocks from offset `start` and calls `visit` with each until it breaks: over
    /// the head, then (for a file read by ranges) over windows read as the walk needs them,
    /// the first of `window` bytes and each next one twice the last, up to a full window.
    pub(super) fn walk_blocks(
        &self,
        start: u64,
        eof: EofMode,
        mut window: u64,
        mut visit: impl FnMut(&Block<'_>) -> Result<ControlFlow<()>>,
    ) -> Result<WalkEnd> {
        let mut held = if start <= self.head.len() as u64 {
            self.head_window()
        } else {
            Window::empty(start)
        };
        let mut position = start;
        loop {
            let mut blocks = Blocks::window(&held.bytes, held.base, self.size, position, eof);
            while let Some(block) = blocks.next_block()? {
                if visit(&block)?.is_break() {
                    return Ok(WalkEnd {
                        position: blocks.position() as u64,
                        terminal: None,
                    });
                }
            }
            let Some(wanted) = blocks.wanted() else {
                return Ok(WalkEnd {
                    position: blocks.position() as u64,
                    terminal: blocks.terminal,
                });
            };
            position = wanted.start;
            let end = wanted.end.max(position + window).min(self.size);
            held = held.advance(self, position, end)?;
            window = (window * 2).min(self.windows.read);
        }
    }
}

impl Window {
    /// An empty window at `offset`.
    pub(super) fn empty(offset: u64) -> Window {
        Window {
            base: offset,
            bytes: Buffer::from_vec(Vec::<u8>::new()),
        }
    }

    /// Offset just past the window.
    pub(super) fn end(&self) -> u64 {
        self.base + self.bytes.len() as u64
    }

    /// The byte at file offset `at`, if the window holds it.
    pub(super) fn byte_at(&self, at: u64) -> Option<u8> {
        let i = usize::try_from(at.checked_sub(self.base)?).ok()?;
        self.bytes.get(i).copied()
    }

    /// The window of bytes `from..to` of `file` (`from` at or after this window's start,
    /// `to` inside the file): what this window holds of them is kept (a slice when it holds
    /// them all, else copied), the rest read in one round trip.
    pub(super) fn advance(&self, file: &FileBytes, from: u64, to: u64) -> Result<Window> {
        debug_assert!(self.base <= from && from <= to && to <= file.size);
        let held_end = self.end();
        if to <= held_end {
            let start = (from - self.base) as usize;
            return Ok(Window {
                base: from,
                bytes: self.bytes.slice_with_length(start, (to - from) as usize),
            });
        }
        if from >= held_end {
            return Ok(Window {
                base: from,
                bytes: file.read(from..to)?,
            });
        }
        let fetched = file.read(held_end..to)?;
        let kept = &self.bytes[(from - self.base) as usize..];
        let mut joined = MutableBuffer::with_capacity(kept.len() + fetched.len());
        joined.extend_from_slice(kept);
        joined.extend_from_slice(&fetched);
        Ok(Window {
            base: from,
            bytes: joined.into(),
        })
    }
}
