//! A file's block structure from its block headers alone, nothing decoded: the [`fragments`]
//! a scan can be split into, and the [`Description`] `inspect` shows.
//!
//! VS has no index, so listing fragments walks every block header. A file in memory (a local
//! map) is walked in place at each listing. A file read by ranges is walked once, at its first
//! listing, into a [`BlockTable`] of its point blocks (offset and payload length, 12 bytes a
//! point; not their bytes), from which every listing is then cut. That walk reads header
//! windows: each starts at the header the last one did not reach, so a payload that runs past
//! a window is stepped over, not read. While blocks average under [`SKIP_PAYLOAD`] the windows
//! double up to a full read window (8 MiB) and the walk reads about the whole file in few round trips;
//! past that each header is read with a [`HEADER_PROBE`] of its own, so listing a file of
//! large vectors reads a fraction of it, one round trip per block. A fragment's reader then
//! reads only its own range, a window at a time (see `fetch`).

use std::ops::ControlFlow;

use super::table::BlockTable;
use super::{attach, VsFile};
use crate::error::Result;
use crate::scan::{group_units, FragmentRange, FragmentSpan, Unit};
use crate::vs::codec::{self, Blocks, Headers, Meta};

/// Mean block size from which a header walk stops reading payloads: past it, one more round
/// trip costs less than the payload bytes it skips (object_store coalesces ranges under 1 MiB
/// apart on the same reckoning).
const SKIP_PAYLOAD: u64 = 1 << 20;

/// Bytes read for one header when blocks are large.
const HEADER_PROBE: u64 = 64 << 10;

impl BlockTable {
    /// Walks the headers of `file`'s blocks after its meta block, in header windows read from
    /// its source (the head first).
    fn walk(file: &VsFile) -> Result<BlockTable> {
        let bytes = &file.bytes;
        let start = file.data_start as u64;
        let mut table = BlockTable::default();
        let mut held = bytes.head_window();
        let mut position = start;
        let mut window = bytes.head.len().max(1) as u64;
        let mut blocks = 0u64;
        loop {
            let mut headers = Headers::window(
                &held.bytes,
                held.base,
                bytes.size,
                position,
                file.options.parse.eof,
            );
            while let Some(header) = headers.next_header()? {
                blocks += 1;
                if header.kind == codec::POINT {
                    table.offsets.push(header.offset);
                    table.lengths.push(header.length);
                }
            }
            let Some(wanted) = headers.wanted() else {
                return Ok(table);
            };
            position = wanted.start;
            let mean = (position - start) / blocks.max(1);
            window = if mean >= SKIP_PAYLOAD {
                HEADER_PROBE
            } else {
                (window * 2).min(bytes.windows.read)
            };
            let end = wanted.end.max(position + window).min(bytes.size);
            held = held.advance(bytes, position, end)?;
        }
    }

    /// The table of `file`, walked on first asking.
    fn of(file: &VsFile) -> Result<&BlockTable> {
        if let Some(table) = file.table.get() {
            return Ok(table);
        }
        let table = std::sync::Arc::new(BlockTable::walk(file)?);
        Ok(file.table.get_or_init(|| table))
    }

    /// Its point blocks as fragment units.
    fn units(&self) -> impl Iterator<Item = Unit> + '_ {
        self.offsets
            .iter()
            .zip(&self.lengths)
            .map(|(&start, &length)| {
                let bytes = (codec::BLOCK_HEADER as u64) + length as u64;
                Unit {
                    start,
                    end: start + bytes,
                    rows: 1,
                    bytes,
                }
            })
    }
}

/// The fragments of a VS file: runs of point blocks of about `target_rows` live points, found
/// by walking the block headers (nothing is decoded). A run begins at its first point block
/// and ends past its last one; blank (deleted) and unknown blocks between runs are skipped.
/// A file read by ranges is walked once, at its first listing (see the module docs).
pub fn fragments(file: &VsFile, target_rows: usize) -> Result<Vec<FragmentSpan>> {
    let range = |start, end| FragmentRange::Bytes { start, end };
    let empty = FragmentRange::Bytes { start: 0, end: 0 };
    if file.meta.is_none() {
        return Ok(group_units(std::iter::empty(), target_rows, range, empty));
    }
    let Some(all) = file.bytes.all() else {
        let table = BlockTable::of(file).map_err(|e| attach(e, file.path()))?;
        return Ok(group_units(table.units(), target_rows, range, empty));
    };
    let mut failure = None;
    let mut blocks = Blocks::new(all, file.data_start, file.options.parse.eof);
    let units = std::iter::from_fn(|| loop {
        match blocks.next_block() {
            Ok(Some(block)) if block.kind == codec::POINT => {
                let length = (codec::BLOCK_HEADER + block.payload.len()) as u64;
                return Some(Unit {
                    start: block.offset,
                    end: block.offset + length,
                    rows: 1,
                    bytes: length,
                });
            }
            Ok(Some(_)) => continue,
            Ok(None) => return None,
            Err(e) => {
                failure = Some(e);
                return None;
            }
        }
    });
    let spans = group_units(units, target_rows, range, empty);
    if let Some(e) = failure {
        return Err(attach(e, file.path()));
    }
    Ok(spans)
}

impl VsFile {
    /// The live points (rows) from the block headers after the meta block, nothing decoded:
    /// walked in memory, or, for a file read by ranges, counted in the table its first
    /// listing keeps (walked now when no listing has been).
    pub fn live_points(&self) -> Result<u64> {
        if self.meta.is_none() {
            return Ok(0);
        }
        let Some(all) = self.bytes.all() else {
            let table = BlockTable::of(self).map_err(|e| attach(e, self.path()))?;
            return Ok(table.offsets.len() as u64);
        };
        let mut blocks = Blocks::new(all, self.data_start, self.options.parse.eof);
        let mut points = 0;
        while let Some(block) = blocks.next_block().map_err(|e| attach(e, self.path()))? {
            points += u64::from(block.kind == codec::POINT);
        }
        Ok(points)
    }
}

/// One block as `inspect` lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlockInfo {
    /// Type byte.
    pub kind: u8,
    /// Offset of the block in the file.
    pub offset: u64,
    /// Payload length.
    pub length: u32,
    /// Points: the vector's compression code (low 3 bits of its option byte).
    pub compression: Option<u8>,
}

/// The block structure of a file, for `inspect`.
#[derive(Debug, Clone, Default)]
pub struct Description {
    /// The meta block, if there is one.
    pub meta: Option<Meta>,
    /// Point blocks.
    pub live_points: u64,
    /// Blank (deleted) blocks.
    pub blank_blocks: u64,
    /// Blocks of types the format does not define.
    pub unknown_blocks: u64,
    /// Number of live points per compression code 0–7.
    pub compression_counts: [u64; 8],
    /// The first `max_blocks` blocks in file order.
    pub blocks: Vec<BlockInfo>,
    /// Offset of the terminal `'$'`, if the file has one.
    pub terminal: Option<u64>,
    /// Bytes after the terminal (ignored by readers).
    pub trailing_bytes: u64,
    /// Bytes of the file.
    pub file_size: u64,
}

impl VsFile {
    /// Walks every block (leniently at the end of the file; the terminal says whether `'$'`
    /// was there) and lists the first `max_blocks` of them. A file read by ranges is read
    /// whole for it, a window at a time.
    pub fn describe(&self, max_blocks: usize) -> Result<Description> {
        let mut d = Description {
            meta: self.meta.clone(),
            file_size: self.bytes.size,
            ..Description::default()
        };
        let varint = self.options.parse.varint;
        let visit = |b: &codec::Block<'_>| {
            let mut compression = None;
            match b.kind {
                codec::POINT => {
                    d.live_points += 1;
                    let point = codec::parse_point(b, varint)?;
                    let code = point.vec_option & 7;
                    d.compression_counts[code as usize] += 1;
                    compression = Some(code);
                }
                codec::BLANK => d.blank_blocks += 1,
                codec::META => {}
                _ => d.unknown_blocks += 1,
            }
            if d.blocks.len() < max_blocks {
                d.blocks.push(BlockInfo {
                    kind: b.kind,
                    offset: b.offset,
                    length: b.payload.len() as u32,
                    compression,
                });
            }
            Ok(ControlFlow::Continue(()))
        };
        let end = self
            .bytes
            .walk_blocks(4, codec::EofMode::Lenient, self.bytes.windows.read, visit)
            .map_err(|e| attach(e, self.path()))?;
        d.terminal = end.terminal;
        if let Some(t) = d.terminal {
            d.trailing_bytes = d.file_size - t - 1;
        }
        Ok(d)
    }
}
