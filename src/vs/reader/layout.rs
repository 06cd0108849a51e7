//! A file's block structure from its block headers alone, nothing decoded: the [`fragments`]
//! a scan can be split into, and the [`Description`] `inspect` shows.

use super::{attach, VsFile};
use crate::error::{Error, Result};
use crate::scan::{group_units, FragmentRange, FragmentSpan, Unit};
use crate::vs::codec::{self, Blocks, Meta};

/// The fragments of a VS file: runs of point blocks of about `target_rows` live points, found
/// by walking the block headers (nothing is decoded). A run begins at its first point block
/// and ends past its last one; blank (deleted) and unknown blocks between runs are skipped.
pub fn fragments(file: &VsFile, target_rows: usize) -> Result<Vec<FragmentSpan>> {
    let mut failure = None;
    let spans = if file.meta.is_none() {
        Vec::new()
    } else {
        let mut blocks = Blocks::new(&file.bytes, file.data_start, file.options.parse.eof);
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
        group_units(
            units,
            target_rows,
            |start, end| FragmentRange::Bytes { start, end },
            FragmentRange::Bytes { start: 0, end: 0 },
        )
    };
    if let Some(e) = failure {
        return Err(attach(e, file.path()));
    }
    if spans.is_empty() {
        return Ok(vec![FragmentSpan {
            range: FragmentRange::Bytes { start: 0, end: 0 },
            rows: 0,
            rows_exact: true,
            bytes: 0,
        }]);
    }
    Ok(spans)
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
    /// was there) and lists the first `max_blocks` of them.
    pub fn describe(&self, max_blocks: usize) -> Result<Description> {
        let bytes: &[u8] = &self.bytes;
        let mut d = Description {
            meta: self.meta.clone(),
            file_size: bytes.len() as u64,
            ..Description::default()
        };
        let mut blocks = Blocks::new(bytes, 4, codec::EofMode::Lenient);
        let result = (|| {
            while let Some(b) = blocks.next_block()? {
                let mut compression = None;
                match b.kind {
                    codec::POINT => {
                        d.live_points += 1;
                        let point = codec::parse_point(&b, self.options.parse.varint)?;
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
            }
            Ok::<(), Error>(())
        })();
        result.map_err(|e| attach(e, self.path()))?;
        d.terminal = blocks.terminal;
        if let Some(t) = d.terminal {
            d.trailing_bytes = d.file_size - t - 1;
        }
        Ok(d)
    }
}
