//! Reading a Jay file by byte ranges, for a source whose bytes are not local (an object in a
//! bucket): opening fetches the header and the tail, which holds `meta_size` and usually the
//! whole meta; each read fetches, one request per phase, the parts of the projected columns'
//! buffers that hold its rows.

use std::ops::Range;

use arrow_buffer::Buffer;

use super::mapping::Storage;
use super::meta::{self, BufferRange, ColumnInfo, Envelope, FileBytes, Parsed, FOOTER_LEN};
use crate::error::{Error, ErrorClass, Result};
use crate::mapped::aligned_copy;
use crate::source::{read_exact, read_range_exact, ByteSource};

/// Bytes of the tail fetched with the header when a file is opened: the meta of a frame of
/// several hundred columns, and all of a small file, in the first round trip.
pub(crate) const TAIL_BYTES: u64 = 64 << 10;

/// Ranges closer than this are fetched as one: the padding between two buffers, or a
/// column's validity next to its values, is not worth a range of its own.
const MERGE_GAP: u64 = 64;

/// Byte ranges of a file at hand. Each piece starts at a multiple of 8 and at an 8-aligned
/// address, as a memory map's bytes do: a slice at file offset `o` is as aligned as `o`, and
/// every Jay buffer starts at a multiple of 8, so values are handed to Arrow without a copy.
#[derive(Debug, Default)]
pub(crate) struct Pieces {
    /// `(file offset, bytes)`, sorted by offset.
    pieces: Vec<(u64, Buffer)>,
}

impl Pieces {
    fn insert(&mut self, start: u64, bytes: Buffer) {
        debug_assert_eq!(start % 8, 0, "pieces start at multiples of 8");
        let bytes = if bytes.as_ptr().align_offset(8) == 0 {
            bytes
        } else {
            aligned_copy(&bytes)
        };
        let at = self.pieces.partition_point(|(s, _)| *s <= start);
        self.pieces.insert(at, (start, bytes));
    }

    /// The piece that holds all of `at..at + len`, and where in it `at` is.
    fn find(&self, at: u64, len: u64) -> Option<(&Buffer, usize)> {
        let end = at.checked_add(len)?;
        let upto = self.pieces.partition_point(|(s, _)| *s <= at);
        self.pieces[..upto]
            .iter()
            .rev()
            .find(|(s, b)| s + b.len() as u64 >= end)
            .map(|(s, b)| (b, (at - s) as usize))
    }

    /// `len` bytes at file offset `at`, when one piece holds them (a slice, not a copy).
    pub(crate) fn get(&self, at: u64, len: u64) -> Option<Buffer> {
        let (buffer, from) = self.find(at, len)?;
        Some(buffer.slice_with_length(from, len as usize))
    }
}

impl FileBytes for Pieces {
    fn bytes_at(&self, at: u64, len: u64) -> Option<&[u8]> {
        let (buffer, from) = self.find(at, len)?;
        buffer.get(from..from + len as usize)
    }
}

/// Fetches `ranges` of `source` into `into`, in one request: what `held` (the bytes kept
/// since the file was opened) already has is taken from it instead. Starts are rounded down
/// to a multiple of 8 and ranges a few bytes apart are merged.
pub(crate) fn fetch(
    source: &dyn ByteSource,
    held: &Pieces,
    mut ranges: Vec<Range<u64>>,
    into: &mut Pieces,
) -> Result<()> {
    ranges.retain(|r| r.end > r.start);
    for r in &mut ranges {
        r.start &= !7;
    }
    ranges.sort_by_key(|r| r.start);
    let mut merged: Vec<Range<u64>> = Vec::with_capacity(ranges.len());
    for r in ranges {
        match merged.last_mut() {
            Some(last) if r.start <= last.end.saturating_add(MERGE_GAP) => {
                last.end = last.end.max(r.end)
            }
            _ => merged.push(r),
        }
    }
    let mut wanted = Vec::new();
    for r in merged {
        match held.get(r.start, r.end - r.start) {
            Some(bytes) => into.insert(r.start, bytes),
            None => wanted.push(r),
        }
    }
    if wanted.is_empty() {
        return Ok(());
    }
    let buffers = read_exact(source, &wanted)?;
    for (range, bytes) in wanted.into_iter().zip(buffers) {
        into.insert(range.start, bytes);
    }
    Ok(())
}

/// Opens the Jay file `source` reads: its header and tail in one request, the rest of the
/// meta in a second when the meta is larger than the tail, and (only for array columns whose
/// last offsets lie outside both) those offsets in a third. Returns the bytes fetched, which
/// reads take what they need from first, and the verified description.
pub(crate) fn open(source: &dyn ByteSource) -> Result<(Pieces, Parsed)> {
    let size = source.size();
    let tail_start = size.saturating_sub(TAIL_BYTES) & !7;
    // A small file is fetched whole.
    let whole = 0..size;
    let first = if tail_start <= 8 {
        vec![whole]
    } else {
        vec![0..8, tail_start..size]
    };
    let mut held = Pieces::default();
    fetch(source, &Pieces::default(), first, &mut held)?;
    let part = |held: &Pieces, at: u64, len: u64| held.get(at, len).unwrap_or_default();
    let header = part(&held, 0, size.min(8));
    let footer_len = size.min(FOOTER_LEN);
    let footer = part(&held, size - footer_len, footer_len);
    let envelope = Envelope::check_parts(&header, &footer, size)?;

    let meta_from = envelope.meta_start & !7;
    if meta_from < tail_start {
        // The meta is larger than the tail: fetch the rest, kept as one piece with the tail.
        let rest = read_range_exact(source, meta_from..tail_start)?;
        let tail = part(&held, tail_start, size - tail_start);
        let mut joined = Vec::with_capacity(rest.len() + tail.len());
        joined.extend_from_slice(&rest);
        joined.extend_from_slice(&tail);
        held = Pieces::default();
        held.insert(0, header);
        held.insert(meta_from, Buffer::from_vec(joined));
    }
    let meta = held
        .get(envelope.meta_start, envelope.meta_size)
        .ok_or_else(|| {
            Error::new(ErrorClass::Io, "the meta record was not fetched")
                .at_offset(envelope.meta_start)
        })?;
    let parsed = meta::parse_meta(&envelope, &meta, &held, false)?;
    if parsed.missing.is_empty() {
        return Ok((held, parsed));
    }
    let mut more = Pieces::default();
    fetch(source, &held, parsed.missing, &mut more)?;
    held.pieces.append(&mut more.pieces);
    held.pieces.sort_by_key(|(s, _)| *s);
    let parsed = meta::parse_meta(&envelope, &meta, &held, false)?;
    Ok((held, parsed))
}

/// The bytes of a bitmap (validity, or bit-packed booleans) of `length` bytes that hold the
/// bits of rows `start..start + len`: `(first byte, end byte)`; row `start` is bit
/// `start % 8` of the first.
pub(crate) fn bit_window(start: usize, len: usize, length: u64) -> (usize, usize) {
    let lo = start / 8;
    let hi = (start + len).div_ceil(8).min(length as usize);
    (lo, hi.max(lo))
}

/// The bytes of string data a read of rows whose masked offsets run from `first` to `last`
/// takes: their text and the byte after it (to tell whether `last` splits a character).
pub(crate) fn text_window(first: u64, last: u64, strdata_len: u64) -> Range<u64> {
    first..(last + 1).min(strdata_len).max(first)
}

/// Rows `start..start + len` of one column, which a read needs.
struct Want<'c> {
    col: &'c ColumnInfo,
    start: u64,
    len: u64,
}

/// File bytes `lo..hi` of buffer `b` (clipped to it), when there are any.
fn part_of(b: Option<BufferRange>, lo: u64, hi: u64) -> Option<Range<u64>> {
    let b = b?;
    let hi = hi.min(b.length);
    (hi > lo).then(|| b.file_offset() + lo..b.file_offset() + hi)
}

impl<'c> Want<'c> {
    /// The parts of the column's buffers the description alone places: the rows' validity
    /// bits, values or offsets.
    fn direct(&self, ranges: &mut Vec<Range<u64>>) {
        let Want { col, start, len } = *self;
        let bits = |b: Option<BufferRange>| {
            let (lo, hi) = bit_window(start as usize, len as usize, b.map_or(0, |b| b.length));
            part_of(b, lo as u64, hi as u64)
        };
        ranges.extend(bits(col.validity));
        let data = match col.jay_type.storage() {
            Storage::Void => None,
            Storage::Bool if col.bool_packed => bits(col.data),
            Storage::Bool => part_of(col.data, start, start + len),
            Storage::Fixed(width) => {
                let width = width as u64;
                part_of(col.data, start * width, (start + len) * width)
            }
            Storage::Strings { .. } | Storage::Arrays { .. } => {
                let width = col.offset_width as u64;
                part_of(col.data, start * width, (start + len + 1) * width)
            }
        };
        ranges.extend(data);
    }

    /// What the rows need once their offsets are at hand: the string bytes they span, or
    /// the rows of the array's element column. Offsets that are out of order or out of
    /// bounds ask for nothing: decoding reports them.
    fn follow(&self, fetched: &Pieces, ranges: &mut Vec<Range<u64>>, next: &mut Vec<Want<'c>>) {
        let Want { col, start, len } = *self;
        let storage = col.jay_type.storage();
        if !matches!(storage, Storage::Strings { .. } | Storage::Arrays { .. }) {
            return;
        }
        let (Some(data), width) = (col.data, col.offset_width as u64) else {
            return;
        };
        let offset = |row: u64| -> Option<u64> {
            let bytes = fetched.bytes_at(data.file_offset() + row * width, width)?;
            Some(match width {
                4 => u32::from_le_bytes(bytes.try_into().ok()?) as u64,
                _ => u64::from_le_bytes(bytes.try_into().ok()?),
            })
        };
        let (Some(first), Some(last)) = (offset(start), offset(start + len)) else {
            return;
        };
        match storage {
            Storage::Strings { .. } => {
                let mask = !(1u64 << (width * 8 - 1));
                let (first, last) = (first & mask, last & mask);
                let strdata_len = col.strdata.map_or(0, |b| b.length);
                if first <= last && last <= strdata_len {
                    let text = text_window(first, last, strdata_len);
                    ranges.extend(part_of(col.strdata, text.start, text.end));
                }
            }
            Storage::Arrays { .. } => {
                if let Some(child) = col.child.as_deref() {
                    if first <= last && last <= child.nrows {
                        next.push(Want {
                            col: child,
                            start: first,
                            len: last - first,
                        });
                    }
                }
            }
            _ => {}
        }
    }
}

/// Fetches what rows `start..start + len` of `columns` need, one request per phase: first
/// their validity bits, values and offsets (with `extra`, ranges the caller wants checked),
/// then the string bytes and array elements the offsets span, and so on down nested arrays.
pub(crate) fn fetch_rows(
    source: &dyn ByteSource,
    held: &Pieces,
    columns: &[&ColumnInfo],
    start: usize,
    len: usize,
    extra: Vec<Range<u64>>,
) -> Result<Pieces> {
    let mut wants: Vec<Want<'_>> = columns
        .iter()
        .map(|&col| Want {
            col,
            start: start as u64,
            len: len as u64,
        })
        .collect();
    let mut fetched = Pieces::default();
    let mut ranges = extra;
    while !wants.is_empty() || !ranges.is_empty() {
        for want in &wants {
            want.direct(&mut ranges);
        }
        fetch(source, held, std::mem::take(&mut ranges), &mut fetched)?;
        let mut next = Vec::new();
        for want in &wants {
            want.follow(&fetched, &mut ranges, &mut next);
        }
        wants = next;
    }
    Ok(fetched)
}
