//! `finish()` for a frame the writer still holds as record batches: each column is encoded
//! straight into its place in the file.
//!
//! The usual path encodes every batch into per-column streams when it arrives and copies the
//! streams out at `finish()`: for a frame exported whole (a Polars DataFrame), that is a second
//! copy of the frame in fresh memory, every page of it faulted in, and a serial copy into the
//! file after all the encoding. A frame that fits under the writer's memory limit is instead
//! kept as the caller's batches, with the text length of each string column (measured when the
//! batch arrives). At `finish()` every buffer's length follows from the row count and those
//! text lengths, so every buffer's offset is known before a byte is encoded; then the columns
//! are encoded in parallel, a slice at a time, each slice written at its offset while still in
//! cache, through encoder memory that is reused from slice to slice.

use std::fs::File;
use std::io;

use arrow_array::RecordBatch;
use rayon::prelude::*;

use super::encode::{text_len, Buf, Encoder};
use super::frame::Placed;
use super::ENCODE_SLICE_ROWS;
use crate::error::{Error, ErrorClass, Result};
use crate::jay::mapping::WriteMapping;
use crate::jay::meta::{BufferRange, HEADER};

/// How many written bytes of a buffer are handed to the disk at a time, for a durable file.
const WRITEBACK_STEP: u64 = 8 << 20;

/// A batch the writer holds, with the text bytes of each of its columns (0 for non-text).
pub(super) struct Held {
    pub batch: RecordBatch,
    pub text: Vec<u64>,
}

impl Held {
    /// `batch` and the bytes its columns will take in the file, or `None` when some column
    /// cannot be written directly (arrays; dictionaries, whose text length is not at hand).
    pub(super) fn new(
        batch: &RecordBatch,
        encoders: &[Box<dyn Encoder>],
        mappings: &[WriteMapping],
    ) -> Option<(Held, u64)> {
        let rows = batch.num_rows() as u64;
        let mut text = Vec::with_capacity(mappings.len());
        let mut size = 0u64;
        for ((column, encoder), mapping) in batch.columns().iter().zip(encoders).zip(mappings) {
            let t = match mapping {
                WriteMapping::Text { .. } => text_len(column.as_ref())?,
                _ => 0,
            };
            size += encoder.direct_layout(rows, t)?.iter().sum::<u64>();
            text.push(t);
        }
        let batch = batch.clone();
        Some((Held { batch, text }, size))
    }
}

/// Where each column's buffers go, relative to the data section (`None` for an empty one),
/// and where the section ends.
pub(super) struct Layout {
    columns: Vec<Vec<Option<BufferRange>>>,
    end: u64,
}

impl Layout {
    /// Bytes of the data section, padding included.
    pub(super) fn end(&self) -> u64 {
        self.end
    }
}

/// Plans the data section for the held batches with one fresh encoder per column, or `None`
/// when some column cannot be written directly (text beyond 32-bit offsets).
pub(super) fn plan(encoders: &[Box<dyn Encoder>], held: &[Held]) -> Option<Layout> {
    let rows: u64 = held.iter().map(|h| h.batch.num_rows() as u64).sum();
    let mut pos = 0u64;
    let mut columns = Vec::with_capacity(encoders.len());
    for (i, encoder) in encoders.iter().enumerate() {
        let text = held.iter().map(|h| h.text[i]).sum();
        let ranges = encoder
            .direct_layout(rows, text)?
            .into_iter()
            .map(|length| {
                (length > 0).then(|| {
                    let range = BufferRange {
                        offset: pos,
                        length,
                    };
                    pos += length.div_ceil(8) * 8;
                    range
                })
            })
            .collect();
        columns.push(ranges);
    }
    Some(Layout { columns, end: pos })
}

/// Encodes every column of the held batches into `file` at the offsets of `layout` (the data
/// section starting after the header), the columns in parallel. Returns the placed columns,
/// or the first failure with its column's index.
pub(super) fn write(
    file: &File,
    durable: bool,
    layout: &Layout,
    encoders: Vec<Box<dyn Encoder>>,
    held: &[Held],
) -> std::result::Result<Vec<Placed>, (usize, Error)> {
    let base = HEADER.len() as u64;
    let results: Vec<std::result::Result<Placed, (usize, Error)>> = encoders
        .into_par_iter()
        .zip(layout.columns.par_iter())
        .enumerate()
        .map(|(i, (encoder, ranges))| {
            write_column(file, durable, base, i, encoder, ranges, held).map_err(|e| (i, e))
        })
        .collect();
    results.into_iter().collect()
}

fn write_column(
    file: &File,
    durable: bool,
    base: u64,
    index: usize,
    mut encoder: Box<dyn Encoder>,
    ranges: &[Option<BufferRange>],
    held: &[Held],
) -> Result<Placed> {
    let mut written = vec![0u64; ranges.len()];
    // For a durable file: how much of each buffer the disk has been asked to take so far.
    // Starting the writeback as the column goes leaves less for the flush at the commit.
    let mut sent = vec![0u64; ranges.len()];
    let mut write_out = |buffer: usize, bytes: &[u8]| -> io::Result<()> {
        if bytes.is_empty() {
            return Ok(());
        }
        let at = written[buffer];
        match ranges.get(buffer).copied().flatten() {
            Some(range) if at + bytes.len() as u64 <= range.length => {
                let start = base + range.offset;
                write_all_at(file, bytes, start + at)?;
                let end = at + bytes.len() as u64;
                written[buffer] = end;
                if durable && (end - sent[buffer] >= WRITEBACK_STEP || end == range.length) {
                    crate::atomic::start_writeback(file, start + sent[buffer], end - sent[buffer]);
                    sent[buffer] = end;
                }
                Ok(())
            }
            _ => Err(io::Error::other(format!(
                "internal error: buffer {buffer} of the column outgrew its planned length"
            ))),
        }
    };
    let mut first_row = 0u64;
    for Held { batch, .. } in held {
        let column = batch.column(index);
        let rows = column.len();
        for start in (0..rows).step_by(ENCODE_SLICE_ROWS) {
            crate::cancel::check()?;
            let len = ENCODE_SLICE_ROWS.min(rows - start);
            encoder.append(&column.slice(start, len)).map_err(|e| {
                let mut error = Error::new(e.class, e.message);
                if let Some(at) = e.index {
                    error = error.at_row(first_row + (start + at) as u64);
                }
                error
            })?;
            encoder.drain(&mut write_out)?;
        }
        first_row += rows as u64;
    }
    // What an encoder holds before any row (the first string offset).
    encoder.drain(&mut write_out)?;
    let finished = encoder.finish();
    let mut data = Vec::with_capacity(ranges.len());
    for (j, (range, buf)) in ranges.iter().zip(&finished.data).enumerate() {
        let length = match buf {
            Buf::Plain(stream) => stream.len(),
            Buf::Offsets(offsets) => offsets.len(),
        };
        let planned = range.map_or(0, |r| r.length);
        if written[j] != length || planned != length {
            return Err(Error::new(
                ErrorClass::Io,
                format!(
                    "internal error: buffer {j} of the column came out as {length} bytes, \
                     {} written, {planned} planned",
                    written[j]
                ),
            ));
        }
        data.push(range.unwrap_or(BufferRange {
            offset: 0,
            length: 0,
        }));
    }
    Ok(Placed {
        jay_type: finished.jay_type,
        nrows: finished.nrows,
        nullcount: finished.nullcount,
        stats: finished.stats,
        validity: BufferRange {
            offset: 0,
            length: 0,
        },
        data,
        child: None,
    })
}

#[cfg(unix)]
fn write_all_at(file: &File, bytes: &[u8], offset: u64) -> io::Result<()> {
    std::os::unix::fs::FileExt::write_all_at(file, bytes, offset)
}

#[cfg(windows)]
fn write_all_at(file: &File, mut bytes: &[u8], mut offset: u64) -> io::Result<()> {
    use std::os::windows::fs::FileExt;
    while !bytes.is_empty() {
        match file.seek_write(bytes, offset) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => {
                bytes = &bytes[n..];
                offset += n as u64;
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}
