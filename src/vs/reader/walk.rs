//! The walk over a file's blocks ([`Walk`]): it gathers the next point blocks of a batch,
//! prefetching the mapped bytes ahead of it, and defers an error until the rows before it are
//! read (or, when salvaging, records it and goes on where the format allows).
//!
//! The walk reads the [`Window`] of the file it holds: the whole file when it is in memory,
//! else the part a walk over a file read by ranges has fetched. When a block runs past the
//! window, the walk reads the next one (from that block on, keeping the payloads of the
//! points it has gathered but not yet handed over), and goes on.

use std::collections::VecDeque;
use std::ops::Range;

use super::attach;
use super::fetch::Window;
use super::file::{check_other_block, VsFile};
use crate::error::{Error, ErrorClass};
use crate::salvage::{Salvage, Skipped};
use crate::vs::codec::{self, Blocks};

/// How far ahead of the walk the mapped bytes are prefetched. On the bench file (530-byte
/// blocks) 8 KiB ahead took the uncompressed read from 162 ms to 137 ms; 4 KiB gave 139 ms,
/// 12 KiB 132 ms, and 16 KiB or more nothing (a prefetch into a page not mapped yet is dropped),
/// so this stays well inside the range that helped.
const PREFETCH_DISTANCE: usize = 8192;

/// The first window of a walk that wants fewer points than a batch (a small limit): the
/// windows then double from there.
pub(super) const SMALL_FIRST_WINDOW: u64 = 64 << 10;

/// Where the walk over the blocks stands.
pub(super) struct Walk {
    /// Offset of the next block to walk.
    pub(super) pos: usize,
    /// Where the walk stops: the end of the fragment (`usize::MAX` for the whole file).
    pub(super) end: usize,
    /// Point blocks walked but not yet turned into rows: (offset, payload start, length),
    /// the payload start an offset in the file.
    pub(super) pending: VecDeque<(u64, usize, usize)>,
    /// An error met while walking, reported after the rows before it.
    pub(super) deferred: Option<Error>,
    pub(super) done: bool,
    /// When salvaging, walk errors are recorded here instead of deferred.
    pub(super) salvage: Salvage,
    /// The bytes the walk reads: they hold every pending payload and the block at `pos`.
    pub(super) window: Window,
    /// Bytes the next window reads at least (a file read by ranges).
    pub(super) window_len: u64,
}

impl Walk {
    /// A walk from `pos` to `end` over `file`, starting on the bytes it holds in memory; of a
    /// file read by ranges it reads `first_window` bytes first.
    pub(super) fn new(
        file: &VsFile,
        pos: usize,
        end: usize,
        first_window: u64,
        salvage: Salvage,
    ) -> Walk {
        let window = if pos as u64 <= file.bytes.head.len() as u64 {
            file.bytes.head_window()
        } else {
            Window::empty(pos as u64)
        };
        Walk {
            pos,
            end,
            pending: VecDeque::new(),
            deferred: None,
            done: false,
            salvage,
            window,
            window_len: first_window,
        }
    }

    /// The payload of the pending point at (payload start, length).
    #[inline]
    pub(super) fn payload(&self, start: usize, len: usize) -> &[u8] {
        let at = start - self.window.base as usize;
        &self.window.bytes[at..at + len]
    }

    /// Walks blocks until `want` points are pending or the data ends, reading the windows of
    /// a file read by ranges as it goes.
    pub(super) fn gather(&mut self, file: &VsFile, want: usize) {
        while let Some(wanted) = self.gather_held(file, want) {
            if let Err(e) = self.read_window(file, wanted) {
                // Not the file's bytes but reading them failed: no salvage goes past that.
                self.deferred = Some(e);
                self.done = true;
            }
        }
    }

    /// Reads the window that holds the pending payloads and `wanted`, the bytes the walk needs
    /// next, and at least [`window_len`](Self::window_len) bytes more (no more than the
    /// fragment needs), or as much as it keeps, so that copying those stays linear.
    fn read_window(&mut self, file: &VsFile, wanted: Range<u64>) -> crate::Result<()> {
        let keep_from = match self.pending.front() {
            Some(&(_, start, _)) => (start as u64).min(wanted.start),
            None => wanted.start,
        };
        let kept = self.window.end().saturating_sub(keep_from);
        let read = self.window_len.max(kept);
        let limit = (self.end as u64).min(file.bytes.size);
        let to = wanted
            .end
            .max(limit.min(self.window.end().max(wanted.start) + read))
            .min(file.bytes.size);
        self.window = self.window.advance(&file.bytes, keep_from, to)?;
        self.window_len = (self.window_len * 2).min(file.bytes.windows.read);
        Ok(())
    }

    /// [`gather`](Self::gather) over the window held; the bytes it wants next when the window
    /// ends before the walk does.
    fn gather_held(&mut self, file: &VsFile, want: usize) -> Option<Range<u64>> {
        if self.done {
            return None;
        }
        let parse = file.options.parse;
        // A salvaging walk reads up to the end of a file that lost its terminal, and says so.
        let eof = if self.salvage.on {
            codec::EofMode::Lenient
        } else {
            parse.eof
        };
        let held = &self.window.bytes;
        let base = self.window.base as usize;
        let mut blocks = Blocks::window(held, base as u64, file.bytes.size, self.pos as u64, eof);
        let mut wanted = None;
        while self.pending.len() < want {
            if blocks.position() >= self.end {
                self.done = true;
                break;
            }
            codec::prefetch(held, blocks.position() - base + PREFETCH_DISTANCE);
            match blocks.next_block() {
                Ok(Some(block)) => match block.kind {
                    codec::POINT => {
                        let start = block.offset as usize + codec::BLOCK_HEADER;
                        self.pending
                            .push_back((block.offset, start, block.payload.len()));
                    }
                    codec::META => {
                        let e = codec::block_error(
                            block.kind,
                            block.offset,
                            ErrorClass::BadMeta,
                            "duplicate meta block",
                        );
                        if self.salvage.on {
                            // Its length is known: the walk goes on past it.
                            self.skip_block(file, block.offset, 0, e);
                            continue;
                        }
                        self.deferred = Some(e);
                        self.done = true;
                        break;
                    }
                    kind => {
                        if let Err(e) = check_other_block(kind, &block, &parse) {
                            if self.salvage.on {
                                self.skip_block(file, block.offset, 0, e);
                                continue;
                            }
                            self.deferred = Some(e);
                            self.done = true;
                            break;
                        }
                    }
                },
                Ok(None) => {
                    wanted = blocks.wanted();
                    if wanted.is_some() {
                        break;
                    }
                    if self.salvage.on
                        && blocks.terminal.is_none()
                        && parse.eof == codec::EofMode::Strict
                    {
                        let end = file.bytes.size;
                        let e = Error::new(
                            ErrorClass::BadEnvelope,
                            "missing terminal: the file ends without '$', so it may have been \
                             cut; any points written past its end are lost",
                        )
                        .at_offset(end);
                        self.salvage
                            .push(Skipped::new("rest", attach(e, file.path())).at_offset(end));
                    }
                    self.done = true;
                    break;
                }
                Err(e) => {
                    if self.salvage.on {
                        // Past a block whose header is broken nothing says where the next one
                        // starts: the rest of the file is lost. A cut point block is one row.
                        let at = e.offset().unwrap_or(blocks.position() as u64);
                        let is_point = self.window.byte_at(at) == Some(codec::POINT);
                        let mut skipped = Skipped::new(
                            if is_point { "block" } else { "rest" },
                            attach(e, file.path()),
                        )
                        .at_offset(at);
                        if is_point {
                            skipped = skipped.with_rows(1);
                        }
                        self.salvage.push(skipped);
                    } else {
                        self.deferred = Some(e);
                    }
                    self.done = true;
                    break;
                }
            }
        }
        self.pos = blocks.position();
        wanted
    }

    /// Records a block that a salvaging walk or batch skips.
    pub(super) fn skip_block(&self, file: &VsFile, offset: u64, rows: u64, e: Error) {
        self.salvage.push(
            Skipped::new("block", attach(e, file.path()))
                .at_offset(offset)
                .with_rows(rows),
        );
    }
}
