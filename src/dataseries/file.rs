//! The DSv1 container: header (§2), extent headers (§3), trailer (§4) and index (§5.2); what
//! lies inside one extent is decoded by [`super::extent`].
//!
//! A file is read through a [`ByteSource`] by byte ranges. Opening takes one batched read of
//! its head (the file header and the XmlType extent) and its tail (the trailer and the index),
//! and a second only when the XmlType extent or the index is longer than guessed: the extent
//! list comes from the index, so no extent header is walked. The extent headers (row counts,
//! sizes, modes) are read in one more batched call when first asked for; a reader of some
//! extents reads their headers with their bytes. A local file's ranges are slices of its map,
//! so there its headers cost nothing and are checked against the index at open.

use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use arrow_buffer::Buffer;

use super::byte_order::ByteOrder;
use super::checksum;
use super::extent::{
    decode_raw, parse_extent_header, read_extent_header, Checks, ExtentHeader, MAX_PART,
};
use super::types::{ExtentType, INDEX_NAME, XMLTYPE_NAME};
use crate::error::{Error, ErrorClass, Result};
use crate::salvage::Skipped;
use crate::source::{read_exact, read_range_exact, ByteSource, LocalFile, Prefetched};

/// Bytes of the file header (§2).
pub const HEADER_LEN: usize = 40;
/// Bytes of the file trailer (§4).
pub const TRAILER_LEN: usize = 28;
/// Bytes read from the start of a remote file when it is opened: the header and, in most
/// files, the whole XmlType extent (a few KiB of compressed XML).
const HEAD_GUESS: u64 = 16 << 10;
/// Bytes read from the end of a remote file when it is opened: the trailer and, in most
/// files, the whole index (a few bytes an extent, compressed).
const TAIL_GUESS: u64 = 32 << 10;
/// The most bytes of extents a remote reader holds fetched at once.
pub(crate) const FETCH_BYTES: usize = 64 << 20;

/// One extent as the index (or a lenient scan) lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExtentEntry {
    /// Byte offset of the extent in the file.
    pub offset: u64,
    /// Bytes of the whole extent: up to the next extent (the trailer, for the last).
    pub len: usize,
    /// The extent type's name.
    pub type_name: String,
}

/// An opened DataSeries file: where its bytes are, its types and extent list.
pub struct DsFile {
    path: Option<PathBuf>,
    /// Where its bytes are read: a local file itself, else the remote object with what the
    /// open read held (its head and tail, or all of a small file, in a [`Prefetched`]; all of
    /// it after a lenient scan), which later reads take their bytes from before asking it.
    source: Arc<dyn ByteSource>,
    /// The file's byte order, from its header.
    pub order: ByteOrder,
    /// Declared types, in XmlType order (sorted by name).
    pub types: Vec<Arc<ExtentType>>,
    /// Every extent in file order (XmlType and index included), from the index.
    entries: Vec<ExtentEntry>,
    /// Every extent's header, in file order: read at open from a local file, else when first
    /// asked for.
    headers: OnceLock<Vec<ExtentHeader>>,
    /// Whether the trailer and index were found and verified.
    pub has_trailer: bool,
    /// What a lenient open skipped over.
    pub warnings: Vec<String>,
    /// The damage a lenient open met, each with the extent type it belongs to when the
    /// damaged header still names one: a damaged index, an extent whose header is whole but
    /// whose body runs past the end, or the rest of the file past a header that does not parse.
    pub damaged: Vec<(Option<String>, Skipped)>,
}

/// How to open a file: a read derives them from its [`ReaderOptions`](super::ReaderOptions)
/// and whether it salvages ([`ReaderOptions::open_options`](super::ReaderOptions::open_options)).
#[derive(Debug, Clone, Copy)]
pub struct OpenOptions {
    /// Which checks decoding runs.
    pub checks: Checks,
    /// Scan sequentially when the trailer or index is missing or damaged (§16.3).
    pub lenient: bool,
}

impl Default for OpenOptions {
    fn default() -> Self {
        OpenOptions {
            checks: Checks::ALL,
            lenient: false,
        }
    }
}

impl DsFile {
    /// Opens and memory-maps the file at `path`, reading its header, types, trailer and index.
    pub fn open(path: impl AsRef<Path>, options: OpenOptions) -> Result<DsFile> {
        let path = path.as_ref();
        let source = LocalFile::open(path)?;
        Self::from_source(Some(path.to_path_buf()), Arc::new(source), options)
            .map_err(|e| e.with_file(path))
    }

    /// Opens the file `source` reads (a local file, a remote object): its header, types,
    /// trailer and index, in one batched read of its head and tail (two when the XmlType
    /// extent or the index is longer than the first read guessed).
    pub fn open_source(source: Arc<dyn ByteSource>, options: OpenOptions) -> Result<DsFile> {
        let location = PathBuf::from(source.location());
        Self::from_source(Some(location.clone()), source, options)
            .map_err(|e| e.with_file(&location))
    }

    /// Opens a file held in memory.
    pub fn from_bytes(bytes: Vec<u8>, options: OpenOptions) -> Result<DsFile> {
        let source = LocalFile::from_bytes("", Buffer::from_vec(bytes));
        Self::from_source(None, Arc::new(source), options)
    }

    /// The source the file is read from.
    pub fn source(&self) -> &Arc<dyn ByteSource> {
        &self.source
    }

    /// The file's path (or a remote object's location), unless it was opened from bytes.
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// Names this file in `e`, when it has a path.
    pub fn err(&self, e: Error) -> Error {
        match &self.path {
            Some(p) => e.with_file(p),
            None => e,
        }
    }

    /// The bytes of each of `ranges`, in one batched read of those the open did not already
    /// read. An error names the file and the offset of the range that failed.
    pub fn read_ranges(&self, ranges: &[Range<u64>]) -> Result<Vec<Buffer>> {
        read_exact(self.source.as_ref(), ranges).map_err(|e| self.err(e))
    }

    fn from_source(
        path: Option<PathBuf>,
        source: Arc<dyn ByteSource>,
        options: OpenOptions,
    ) -> Result<DsFile> {
        let size = source.size();
        if size < (HEADER_LEN + TRAILER_LEN) as u64 {
            return Err(too_small(size));
        }
        // A local file's ranges are slices of its map: nothing to hold.
        let source = match source.is_local() {
            true => source,
            false => Arc::new(Prefetched::fetch_ends(source, HEAD_GUESS, TAIL_GUESS)?),
        };
        let mut f = DsFile {
            path,
            source,
            order: ByteOrder::Little,
            types: Vec::new(),
            entries: Vec::new(),
            headers: OnceLock::new(),
            has_trailer: false,
            warnings: Vec::new(),
            damaged: Vec::new(),
        };
        let read = |range: Range<u64>| read_range_exact(f.source.as_ref(), range);
        let head = read(0..HEADER_LEN as u64)?;
        f.order = header_order(&head)?;
        // The XmlType extent's header (the head read holds it: a header is at most 284 bytes).
        let header_end = size.min(HEAD_GUESS);
        let first_header = read(HEADER_LEN as u64..header_end)?;
        let first = parse_extent_header(&first_header, f.order, HEADER_LEN as u64, size)?;
        if first.type_name != XMLTYPE_NAME {
            return Err(Error::new(
                ErrorClass::BadEnvelope,
                format!(
                    "the first extent has type {:?}, expected {XMLTYPE_NAME:?}",
                    first.type_name
                ),
            )
            .at_offset(HEADER_LEN as u64));
        }
        let trailer_at = size - TRAILER_LEN as u64;
        let trailer_bytes = read(trailer_at..size)?;
        let trailer = parse_trailer(&trailer_bytes, trailer_at, f.order);
        // The XmlType extent and the index whole, in one read of what the first did not hold.
        let xmltype_range = first.offset..first.offset + first.len as u64;
        let index_range = trailer
            .as_ref()
            .ok()
            .map(|&(index_len, index_offset)| index_offset..index_offset + index_len as u64);
        let ranges: Vec<Range<u64>> = std::iter::once(xmltype_range).chain(index_range).collect();
        let mut parts = f.read_ranges(&ranges)?.into_iter();
        let xmltype_bytes = parts.next().unwrap_or_default();
        f.types = read_types(&xmltype_bytes, f.order, &first, options.checks)?;

        // The extent list from the index, or a sequential scan.
        let listed = trailer.and_then(|(index_len, index_offset)| {
            let index_bytes = parts.next().unwrap_or_default();
            let entries = f.index_entries(&index_bytes, index_offset, index_len, options)?;
            Ok((entries, index_offset))
        });
        match listed {
            Ok((entries, index_offset)) => {
                f.entries = entries;
                // A local file's headers cost nothing to read; a lenient open reads them now,
                // so that one that disagrees with the index is scanned past like a bad index.
                let checked = if f.source.is_local() || options.lenient {
                    f.extents().map(|_| ())
                } else {
                    Ok(())
                };
                match checked {
                    Ok(()) => f.has_trailer = true,
                    Err(e) if options.lenient => f.scan_instead(e, Some(index_offset), &first)?,
                    Err(e) => return Err(e),
                }
            }
            Err(e) if options.lenient => f.scan_instead(e, None, &first)?,
            Err(e) => return Err(e),
        }
        Ok(f)
    }

    /// Decodes the index extent (`index_len` bytes at `index_offset`, held in `bytes`) and
    /// checks that its entries describe extents back to back from the XmlType extent to
    /// itself, each of a declared type.
    fn index_entries(
        &self,
        bytes: &[u8],
        index_offset: u64,
        index_len: usize,
        options: OpenOptions,
    ) -> Result<Vec<ExtentEntry>> {
        let end = index_offset + index_len as u64;
        let ix = parse_extent_header(bytes, self.order, index_offset, end)?;
        if ix.type_name != INDEX_NAME || ix.len != index_len {
            return Err(Error::new(
                ErrorClass::BadEnvelope,
                "the trailer does not point at an index extent that ends the file",
            )
            .at_offset(index_offset));
        }
        let t = ExtentType::index();
        let raw = decode_raw(bytes, self.order, &ix, &t, options.checks)?;
        let bad = |m: String| Error::new(ErrorClass::BadEnvelope, m).at_offset(index_offset);
        let mut entries: Vec<ExtentEntry> = Vec::with_capacity(ix.rows.min(raw.fixed.len() / 16));
        for i in 0..ix.rows {
            let rec = &raw.fixed[i * 16..i * 16 + 16];
            let offset = self.order.i64(&rec[8..16]);
            let name = raw
                .var_value(self.order, &rec[0..4], options.checks.variable32)
                .map_err(|e| e.at_offset(index_offset).at_row(i as u64))?;
            let name = String::from_utf8_lossy(name).into_owned();
            let previous = entries.last().map_or(0, |e| e.offset);
            let first = i == 0;
            let last = i + 1 == ix.rows;
            let placed = if first {
                offset == HEADER_LEN as i64 && name == XMLTYPE_NAME
            } else if last {
                offset as u64 == index_offset && name == INDEX_NAME
            } else {
                offset as u64 > previous && (offset as u64) < index_offset
            };
            if offset < 0 || !placed {
                return Err(bad(format!(
                    "index entry {i} ({name:?} at {offset}) does not match the extent found there"
                )));
            }
            if !first {
                check_type_name(&name, offset as u64)?;
                self.check_declared(&name, offset as u64)?;
                let previous = entries.last_mut().expect("entry 0 is pushed first");
                previous.len = (offset as u64 - previous.offset) as usize;
            }
            entries.push(ExtentEntry {
                offset: offset as u64,
                len: index_len,
                type_name: name,
            });
        }
        if entries.len() < 2 {
            return Err(bad(format!(
                "the index lists {} extents, the file holds at least 2",
                entries.len()
            )));
        }
        Ok(entries)
    }

    fn check_declared(&self, name: &str, offset: u64) -> Result<()> {
        if name != INDEX_NAME && !self.types.iter().any(|t| t.name == name) {
            return Err(unknown_type(name, offset));
        }
        Ok(())
    }

    /// The trailer or index failed its checks (`e`): reads the whole file and finds the
    /// extents by a sequential scan, recording the damage, which costs no rows by itself.
    fn scan_instead(
        &mut self,
        e: Error,
        index_offset: Option<u64>,
        first: &ExtentHeader,
    ) -> Result<()> {
        self.index_damaged(e, index_offset);
        let bytes = self
            .read_ranges(std::slice::from_ref(&(0..self.source.size())))?
            .remove(0);
        let headers = lenient_scan(self, &bytes, first);
        self.entries = headers.iter().map(entry_of).collect();
        self.headers = OnceLock::from(headers);
        if !self.source.is_local() {
            self.source = Arc::new(Prefetched::whole(Arc::clone(&self.source), bytes));
        }
        Ok(())
    }

    /// Records a trailer or index that failed its checks; the extents are then found by a
    /// sequential scan, so the damage costs no rows by itself.
    fn index_damaged(&mut self, e: Error, index_offset: Option<u64>) {
        self.warnings
            .push(format!("{e}; scanning the extents instead"));
        let offset = e.offset().or(index_offset);
        let mut skipped = Skipped::new("index", e).with_rows(0);
        if let Some(offset) = offset {
            skipped = skipped.at_offset(offset);
        }
        self.damaged.push((None, skipped));
    }

    /// Every extent in file order (XmlType and index included) as the index lists it: where
    /// it is, its length and type, with nothing else read.
    pub fn entries(&self) -> &[ExtentEntry] {
        &self.entries
    }

    /// Every extent's header in file order (XmlType and index included), each checked against
    /// the index: read in one batched call the first time they are asked for, unless the
    /// open read them.
    pub fn extents(&self) -> Result<&[ExtentHeader]> {
        if let Some(headers) = self.headers.get() {
            return Ok(headers);
        }
        let ranges: Vec<Range<u64>> = self
            .entries
            .iter()
            .map(|e| e.offset..e.offset + e.len.min(header_len_of(&e.type_name)) as u64)
            .collect();
        let bytes = self.read_ranges(&ranges)?;
        let headers = self
            .entries
            .iter()
            .enumerate()
            .zip(&bytes)
            .map(|((i, entry), bytes)| self.header_of(i, entry, bytes))
            .collect::<Result<Vec<_>>>()
            .map_err(|e| self.err(e))?;
        Ok(self.headers.get_or_init(|| headers))
    }

    /// The extent headers, when they have been read (see [`extents`](Self::extents)).
    pub fn extents_read(&self) -> Option<&[ExtentHeader]> {
        self.headers.get().map(Vec::as_slice)
    }

    /// The header of the extent the index lists as entry `i`, from `bytes` (the file's bytes
    /// from its offset: the header at least), checked to be the extent the index says.
    pub(crate) fn header_of(
        &self,
        i: usize,
        entry: &ExtentEntry,
        bytes: &[u8],
    ) -> Result<ExtentHeader> {
        // Checked against the end of the data, then against the index: a header that runs
        // into the next extent is one that disagrees with the index.
        let end = self.source.size().saturating_sub(TRAILER_LEN as u64);
        let h = parse_extent_header(bytes, self.order, entry.offset, end)?;
        if h.type_name != entry.type_name || h.len != entry.len {
            return Err(Error::new(
                ErrorClass::BadEnvelope,
                format!(
                    "index entry {i} ({:?} at {}, {} bytes to the next) does not match the extent found there ({:?}, {} bytes)",
                    entry.type_name, entry.offset, entry.len, h.type_name, h.len
                ),
            )
            .at_offset(entry.offset));
        }
        Ok(h)
    }

    /// The declared extent type named `name`.
    pub fn find_type(&self, name: &str) -> Option<&Arc<ExtentType>> {
        self.types.iter().find(|t| t.name == name)
    }

    /// Declared data types that a plain `convert` may pick: all but `Info::DSRepack`.
    pub fn candidate_types(&self) -> Vec<&Arc<ExtentType>> {
        self.types
            .iter()
            .filter(|t| {
                t.name != XMLTYPE_NAME && t.name != INDEX_NAME && t.name != "Info::DSRepack"
            })
            .collect()
    }

    /// The headers of the extents of one type, in file order (read as
    /// [`extents`](Self::extents) says).
    pub fn extents_of<'a>(
        &'a self,
        name: &'a str,
    ) -> Result<impl Iterator<Item = &'a ExtentHeader> + 'a> {
        Ok(self.extents()?.iter().filter(move |e| e.type_name == name))
    }

    /// Row count of a type (from the extent headers; nothing is decompressed).
    pub fn rows_of(&self, name: &str) -> Result<u64> {
        Ok(self.extents_of(name)?.map(|e| e.rows as u64).sum())
    }
}

/// Bytes of the header of an extent of type `name` (§3).
fn header_len_of(name: &str) -> usize {
    (28 + name.len()).next_multiple_of(4)
}

fn entry_of(h: &ExtentHeader) -> ExtentEntry {
    ExtentEntry {
        offset: h.offset,
        len: h.len,
        type_name: h.type_name.clone(),
    }
}

fn too_small(size: u64) -> Error {
    Error::new(
        ErrorClass::TooSmall,
        format!("the file has {size} bytes, fewer than a DataSeries header and trailer"),
    )
}

/// Decodes the XmlType extent (`first`, whose bytes are `bytes`) into the declared types.
fn read_types(
    bytes: &[u8],
    order: ByteOrder,
    first: &ExtentHeader,
    checks: Checks,
) -> Result<Vec<Arc<ExtentType>>> {
    let xmltype = ExtentType::xmltype();
    let raw = decode_raw(bytes, order, first, &xmltype, checks)?;
    let mut types: Vec<Arc<ExtentType>> = Vec::new();
    for i in 0..first.rows {
        let slot = &raw.fixed[i * 8..i * 8 + 4];
        let bytes = raw
            .var_value(order, slot, checks.variable32)
            .map_err(|e| e.at_offset(first.offset).at_row(i as u64))?;
        let xml = std::str::from_utf8(bytes).map_err(|_| {
            Error::new(ErrorClass::BadMeta, "an ExtentType XML is not UTF-8")
                .at_offset(first.offset)
                .at_row(i as u64)
        })?;
        let t = ExtentType::parse(xml).map_err(|e| e.at_offset(first.offset).at_row(i as u64))?;
        if types.iter().any(|u| u.name == t.name) {
            return Err(Error::new(
                ErrorClass::BadMeta,
                format!("type {:?} is declared twice", t.name),
            )
            .at_offset(first.offset));
        }
        types.push(Arc::new(t));
    }
    Ok(types)
}

/// Checks the 40-byte header and returns the byte order (§2).
pub fn read_header(b: &[u8]) -> Result<ByteOrder> {
    if b.len() < HEADER_LEN + TRAILER_LEN {
        return Err(too_small(b.len() as u64));
    }
    header_order(&b[..HEADER_LEN])
}

/// The byte order the 40-byte header `b` gives, after its checks (§2).
fn header_order(b: &[u8]) -> Result<ByteOrder> {
    if b.len() < HEADER_LEN {
        return Err(too_small(b.len() as u64));
    }
    if &b[..4] != b"DSv1" {
        return Err(Error::new(
            ErrorClass::BadSignature,
            "the file does not start with DSv1",
        )
        .at_offset(0));
    }
    let order = match &b[4..8] {
        [0x78, 0x56, 0x34, 0x12] => ByteOrder::Little,
        [0x12, 0x34, 0x56, 0x78] => ByteOrder::Big,
        _ => {
            return Err(Error::new(ErrorClass::BadSignature, "bad int32 check value").at_offset(4))
        }
    };
    if order.u64(&b[8..16]) != 0x1234_5678_9ABC_DEF0 {
        return Err(Error::new(ErrorClass::BadSignature, "bad int64 check value").at_offset(8));
    }
    if (order.f64(&b[16..24]) - std::f64::consts::PI).abs() > 1e-18 {
        return Err(Error::new(ErrorClass::BadSignature, "bad pi check value").at_offset(16));
    }
    if order.f64(&b[24..32]) != f64::INFINITY {
        return Err(Error::new(ErrorClass::BadSignature, "bad infinity check value").at_offset(24));
    }
    if !order.f64(&b[32..40]).is_nan() {
        return Err(Error::new(ErrorClass::BadSignature, "bad NaN check value").at_offset(32));
    }
    Ok(order)
}

/// Reads and checks the trailer (§4) that ends `b`: (index extent length, index offset).
pub fn read_trailer(b: &[u8], order: ByteOrder) -> Result<(usize, u64)> {
    if b.len() < TRAILER_LEN {
        return Err(too_small(b.len() as u64));
    }
    let t0 = b.len() - TRAILER_LEN;
    parse_trailer(&b[t0..], t0 as u64, order)
}

/// Checks the 28 trailer bytes `t`, found at offset `t0` (§4): (index extent length, index
/// offset).
fn parse_trailer(t: &[u8], t0: u64, order: ByteOrder) -> Result<(usize, u64)> {
    let bad =
        |m: &str| Error::new(ErrorClass::BadEnvelope, format!("bad trailer: {m}")).at_offset(t0);
    if t.len() != TRAILER_LEN {
        return Err(bad("the file ends before its trailer"));
    }
    if t[..4] != [0xff; 4] {
        return Err(bad("no FF FF FF FF marker"));
    }
    let p = order.i32(&t[4..8]);
    if order.i32(&t[8..12]) != !p {
        return Err(bad("the index size and its complement disagree"));
    }
    let stored = order.u32(&t[24..28]);
    let computed = checksum::lookup2(&t[..24], 1776);
    if stored != computed {
        return Err(bad(&format!(
            "trailer hash mismatch (stored {stored:08x}, computed {computed:08x})"
        )));
    }
    let off = order.i64(&t[16..24]);
    if p < 0 || off < 0 || (off as u64).checked_add(p as u64) != Some(t0) {
        return Err(bad(&format!(
            "the index extent (offset {off}, {p} bytes) does not end where the trailer starts"
        )));
    }
    Ok((p as usize, off as u64))
}

/// Refuses a second XmlType extent, at `offset`.
fn check_type_name(name: &str, offset: u64) -> Result<()> {
    if name == XMLTYPE_NAME {
        return Err(
            Error::new(ErrorClass::BadEnvelope, "a second XmlType extent").at_offset(offset),
        );
    }
    Ok(())
}

fn unknown_type(name: &str, offset: u64) -> Error {
    Error::new(
        ErrorClass::UnknownType,
        format!("extent of type {name:?}: no type of that name is registered"),
    )
    .at_offset(offset)
}

/// Lenient scan of the file's bytes `b`: every extent that parses, up to the first that does
/// not or the trailer marker. Where it stops short of the end, what it could not read is
/// recorded in `f.damaged`.
fn lenient_scan(f: &mut DsFile, b: &[u8], first: &ExtentHeader) -> Vec<ExtentHeader> {
    let mut out = vec![first.clone()];
    let mut off = first.offset as usize + first.len;
    let mut damage = Vec::new();
    loop {
        if off >= b.len() || (off + 4 <= b.len() && b[off..off + 4] == [0xff; 4]) {
            break;
        }
        match read_extent_header(b, f.order, off, b.len()) {
            Ok(h) => {
                off += h.len;
                let named = check_type_name(&h.type_name, h.offset)
                    .and_then(|()| f.check_declared(&h.type_name, h.offset));
                match named {
                    Ok(()) => out.push(h),
                    // A type name that is no declared type may be a damaged one of ours.
                    Err(e) => damage.push((None, Skipped::new("extent", e).at_offset(h.offset))),
                }
            }
            Err(e) => {
                damage.push(damaged_header(b, f.order, off, &f.types, e));
                break;
            }
        }
    }
    f.damaged.extend(damage);
    out
}

/// What is lost at a header that does not parse: the extent, with its type and rows, when the
/// header is whole and only the body runs past the end of the file (a cut file); else
/// everything from `off` on, since nothing says where the next extent starts.
fn damaged_header(
    b: &[u8],
    order: ByteOrder,
    off: usize,
    types: &[Arc<ExtentType>],
    e: Error,
) -> (Option<String>, Skipped) {
    let named = b.get(off..off + 28).and_then(|h| {
        // Only a header whose sizes are sane is believed about its rows.
        let sizes = [order.i32(&h[0..4]) as i64, order.i32(&h[4..8]) as i64];
        if sizes.iter().any(|s| !(0..MAX_PART).contains(s)) || order.i32(&h[12..16]) < 4 {
            return None;
        }
        let rows = order.i32(&h[8..12]);
        let l = h[26] as usize;
        let name = b.get(off + 28..off + 28 + l)?;
        let name = std::str::from_utf8(name).ok()?;
        let t = types.iter().find(|t| t.name == name)?;
        Some((t.name.clone(), u64::try_from(rows).ok()?))
    });
    match named {
        Some((name, rows)) => (
            Some(name),
            Skipped::new("extent", e)
                .at_offset(off as u64)
                .with_rows(rows),
        ),
        None => (None, Skipped::new("rest", e).at_offset(off as u64)),
    }
}
