//! The walk over a file's blocks ([`Walk`]): it gathers the next point blocks of a batch,
//! prefetching the mapped bytes ahead of it, and defers an error until the rows before it are
//! read (or, when salvaging, records it and goes on where the format allows).

use std::collections::VecDeque;

use super::attach;
use super::file::{check_other_block, VsFile};
use crate::error::{Error, ErrorClass};
use crate::salvage::{Salvage, Skipped};
use crate::vs::codec::{self, Blocks};

/// How far ahead of the walk the mapped bytes are prefetched. On the bench file (530-byte
/// blocks) 8 KiB ahead took the uncompressed read from 162 ms to 137 ms; 4 KiB gave 139 ms,
/// 12 KiB 132 ms, and 16 KiB or more nothing (a prefetch into a page not mapped yet is dropped),
/// so this stays well inside the range that helped.
const PREFETCH_DISTANCE: usize = 8192;

/// Where the walk over the blocks stands.
pub(super) struct Walk {
    /// Offset of the next block to walk.
    pub(super) pos: usize,
    /// Where the walk stops: the end of the fragment (`usize::MAX` for the whole file).
    pub(super) end: usize,
    /// Point blocks walked but not yet turned into rows: (offset, payload start, length).
    pub(super) pending: VecDeque<(u64, usize, usize)>,
    /// An error met while walking, reported after the rows before it.
    pub(super) deferred: Option<Error>,
    pub(super) done: bool,
    /// When salvaging, walk errors are recorded here instead of deferred.
    pub(super) salvage: Salvage,
}

impl Walk {
    /// Walks blocks until `want` points are pending or the data ends.
    pub(super) fn gather(&mut self, file: &VsFile, want: usize) {
        if self.done {
            return;
        }
        let parse = file.options.parse;
        // A salvaging walk reads up to the end of a file that lost its terminal, and says so.
        let eof = if self.salvage.on {
            codec::EofMode::Lenient
        } else {
            parse.eof
        };
        let mut blocks = Blocks::new(&file.bytes, self.pos, eof);
        while self.pending.len() < want {
            if blocks.position() >= self.end {
                self.done = true;
                break;
            }
            codec::prefetch(&file.bytes, blocks.position() + PREFETCH_DISTANCE);
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
                    if self.salvage.on
                        && blocks.terminal.is_none()
                        && parse.eof == codec::EofMode::Strict
                    {
                        let end = file.bytes.len() as u64;
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
                        let is_point = file.bytes.get(at as usize) == Some(&codec::POINT);
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
