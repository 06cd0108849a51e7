//! The DSv1 container: header (§2), extents (§3), trailer (§4), index (§5.2), and decoding one
//! extent to its partly unpacked form with every check (§11, §12, §13).

use std::borrow::Cow;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::buffers::SpareBuffers;
use super::codec::{self, Mode};
use super::types::{ExtentType, Kind, INDEX_NAME, XMLTYPE_NAME};
use crate::error::{Error, ErrorClass, Result};
use crate::salvage::Skipped;

/// Bytes of the file header (§2).
pub const HEADER_LEN: usize = 40;
/// Bytes of the file trailer (§4).
pub const TRAILER_LEN: usize = 28;
/// Reference limit on a compressed part (§3).
pub const MAX_PART: i64 = 512 << 20;
/// arrowsmith's cap on an uncompressed part (§16.2).
pub const MAX_UNPACKED: usize = (2 << 30) - 1;

/// Byte order of a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ByteOrder {
    /// Least significant byte first.
    Little,
    /// Most significant byte first.
    Big,
}

impl ByteOrder {
    /// Reads a `u32` from the first 4 bytes of `b` (which must hold them).
    #[inline(always)]
    pub fn u32(self, b: &[u8]) -> u32 {
        let a = [b[0], b[1], b[2], b[3]];
        match self {
            ByteOrder::Little => u32::from_le_bytes(a),
            ByteOrder::Big => u32::from_be_bytes(a),
        }
    }
    /// Reads an `i32` from the first 4 bytes of `b` (which must hold them).
    #[inline(always)]
    pub fn i32(self, b: &[u8]) -> i32 {
        self.u32(b) as i32
    }
    /// Reads a `u64` from the first 8 bytes of `b` (which must hold them).
    #[inline(always)]
    pub fn u64(self, b: &[u8]) -> u64 {
        let a = [b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]];
        match self {
            ByteOrder::Little => u64::from_le_bytes(a),
            ByteOrder::Big => u64::from_be_bytes(a),
        }
    }
    /// Reads an `i64` from the first 8 bytes of `b` (which must hold them).
    #[inline(always)]
    pub fn i64(self, b: &[u8]) -> i64 {
        self.u64(b) as i64
    }
    /// Reads an `f64` from the first 8 bytes of `b` (which must hold them).
    #[inline(always)]
    pub fn f64(self, b: &[u8]) -> f64 {
        f64::from_bits(self.u64(b))
    }
    /// The 4 bytes of `v` in this order.
    pub fn put_u32(self, v: u32) -> [u8; 4] {
        match self {
            ByteOrder::Little => v.to_le_bytes(),
            ByteOrder::Big => v.to_be_bytes(),
        }
    }
    /// The 8 bytes of `v` in this order.
    pub fn put_u64(self, v: u64) -> [u8; 8] {
        match self {
            ByteOrder::Little => v.to_le_bytes(),
            ByteOrder::Big => v.to_be_bytes(),
        }
    }
    /// `"little-endian"` or `"big-endian"`.
    pub fn name(self) -> &'static str {
        match self {
            ByteOrder::Little => "little-endian",
            ByteOrder::Big => "big-endian",
        }
    }
}

/// One extent's header, as read from the file.
#[derive(Debug, Clone)]
pub struct ExtentHeader {
    /// Byte offset of the extent in the file.
    pub offset: u64,
    /// CF: compressed size of the fixed-data part.
    pub cf: usize,
    /// CV: compressed size of the variable-data part.
    pub cv: usize,
    /// N: number of records.
    pub rows: usize,
    /// VS: uncompressed size of the variable-data area, its 4 leading zero bytes included.
    pub vs: usize,
    /// The stored adler32 of the extent (§12.1).
    pub adler: u32,
    /// The stored lookup2 hash of the partly unpacked data (§12.2).
    pub hash: u32,
    /// Compression mode id of the fixed part (see [`Mode`]).
    pub mode_fixed: u8,
    /// Compression mode id of the variable part.
    pub mode_var: u8,
    /// The extent type's name.
    pub type_name: String,
    /// H: bytes of the header, type name and padding included.
    pub header_len: usize,
    /// Bytes of the whole extent: `H + round4(CF) + round4(CV)`.
    pub len: usize,
}

/// Which checks to run while decoding.
#[derive(Debug, Clone, Copy)]
pub struct Checks {
    /// Verify each extent's adler32.
    pub adler: bool,
    /// Verify each extent's lookup2 hash.
    pub hash: bool,
    /// Verify that variable32 entries lie inside the variable area.
    pub variable32: bool,
}

impl Checks {
    /// Every check (the default).
    pub const ALL: Checks = Checks {
        adler: true,
        hash: true,
        variable32: true,
    };
    /// No checks: faster, for trusted files.
    pub const NONE: Checks = Checks {
        adler: false,
        hash: false,
        variable32: false,
    };
}

enum Bytes {
    Map(memmap2::Mmap),
    Vec(Vec<u8>),
}

/// An opened DataSeries file: its bytes, types and extent list.
pub struct DsFile {
    path: Option<PathBuf>,
    bytes: Bytes,
    /// The file's byte order, from its header.
    pub order: ByteOrder,
    /// Declared types, in XmlType order (sorted by name).
    pub types: Vec<Arc<ExtentType>>,
    /// Every extent in file order (XmlType and index included).
    pub extents: Vec<ExtentHeader>,
    /// Whether the trailer and index were found and verified.
    pub has_trailer: bool,
    /// What a lenient open skipped over.
    pub warnings: Vec<String>,
    /// The damage a lenient open met, each with the extent type it belongs to when the
    /// damaged header still names one: a damaged index, an extent whose header is whole but
    /// whose body runs past the end, or the rest of the file past a header that does not parse.
    pub damaged: Vec<(Option<String>, Skipped)>,
}

/// How to open a file.
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
        let file = std::fs::File::open(path).map_err(|e| Error::from(e).with_file(path))?;
        // SAFETY: the map is read only and its slices are only read. Another process that
        // rewrites the file meanwhile changes the bytes under us (the checksums report it); one
        // that truncates it makes a read past the new end fault with SIGBUS, which ends the
        // process: mapping trades that for no copy (as src/mapped.rs says).
        let map =
            unsafe { memmap2::Mmap::map(&file) }.map_err(|e| Error::from(e).with_file(path))?;
        Self::from_parts(Some(path.to_path_buf()), Bytes::Map(map), options)
            .map_err(|e| e.with_file(path))
    }

    /// Opens a file held in memory.
    pub fn from_bytes(bytes: Vec<u8>, options: OpenOptions) -> Result<DsFile> {
        Self::from_parts(None, Bytes::Vec(bytes), options)
    }

    /// The whole file's bytes.
    pub fn bytes(&self) -> &[u8] {
        match &self.bytes {
            Bytes::Map(m) => m,
            Bytes::Vec(v) => v,
        }
    }

    /// The file's path, unless it was opened from bytes.
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

    fn from_parts(path: Option<PathBuf>, bytes: Bytes, options: OpenOptions) -> Result<DsFile> {
        let mut f = DsFile {
            path,
            bytes,
            order: ByteOrder::Little,
            types: Vec::new(),
            extents: Vec::new(),
            has_trailer: false,
            warnings: Vec::new(),
            damaged: Vec::new(),
        };
        f.order = read_header(f.bytes())?;
        let data_end = f.bytes().len();
        // The XmlType extent.
        let first = read_extent_header(f.bytes(), f.order, HEADER_LEN, data_end)?;
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
        let xmltype = Arc::new(ExtentType::xmltype());
        let raw = decode_raw(f.bytes(), f.order, &first, &xmltype, options.checks)?;
        let mut types: Vec<Arc<ExtentType>> = Vec::new();
        for i in 0..first.rows {
            let slot = &raw.fixed[i * 8..i * 8 + 4];
            let bytes = raw
                .var_value(f.order, slot, options.checks.variable32)
                .map_err(|e| e.at_offset(first.offset).at_row(i as u64))?;
            let xml = std::str::from_utf8(bytes).map_err(|_| {
                Error::new(ErrorClass::BadMeta, "an ExtentType XML is not UTF-8")
                    .at_offset(first.offset)
                    .at_row(i as u64)
            })?;
            let t =
                ExtentType::parse(xml).map_err(|e| e.at_offset(first.offset).at_row(i as u64))?;
            if types.iter().any(|u| u.name == t.name) {
                return Err(Error::new(
                    ErrorClass::BadMeta,
                    format!("type {:?} is declared twice", t.name),
                )
                .at_offset(first.offset));
            }
            types.push(Arc::new(t));
        }
        f.types = types;

        // Trailer and index, or a sequential scan.
        let trailer = read_trailer(f.bytes(), f.order);
        match trailer {
            Ok((p, idx_off)) => {
                let end = data_end - TRAILER_LEN;
                let scanned = scan(
                    f.bytes(),
                    f.order,
                    first.offset as usize + first.len,
                    end,
                    &f.types,
                );
                match scanned.and_then(|mut list| {
                    list.insert(0, first.clone());
                    let last = list.last().cloned();
                    match last {
                        Some(ix)
                            if ix.type_name == INDEX_NAME
                                && ix.offset == idx_off
                                && ix.len == p =>
                        {
                            verify_index(f.bytes(), f.order, &ix, &list, options.checks)?;
                            Ok(list)
                        }
                        _ => Err(Error::new(
                            ErrorClass::BadEnvelope,
                            "the trailer does not point at an index extent that ends the file",
                        )
                        .at_offset(idx_off)),
                    }
                }) {
                    Ok(list) => {
                        f.extents = list;
                        f.has_trailer = true;
                    }
                    Err(e) if options.lenient => {
                        f.index_damaged(e, Some(idx_off));
                        f.extents = lenient_scan(&mut f, &first);
                    }
                    Err(e) => return Err(e),
                }
            }
            Err(e) if options.lenient => {
                f.index_damaged(e, None);
                f.extents = lenient_scan(&mut f, &first);
            }
            Err(e) => return Err(e),
        }
        Ok(f)
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

    /// Extents of one type, in file order.
    pub fn extents_of<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a ExtentHeader> + 'a {
        self.extents.iter().filter(move |e| e.type_name == name)
    }

    /// Row count of a type (from the extent headers; nothing is decompressed).
    pub fn rows_of(&self, name: &str) -> u64 {
        self.extents_of(name).map(|e| e.rows as u64).sum()
    }
}

/// Checks the 40-byte header and returns the byte order (§2).
pub fn read_header(b: &[u8]) -> Result<ByteOrder> {
    if b.len() < HEADER_LEN + TRAILER_LEN {
        return Err(Error::new(
            ErrorClass::TooSmall,
            format!(
                "the file has {} bytes, fewer than a DataSeries header and trailer",
                b.len()
            ),
        ));
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

/// Reads and checks the trailer (§4): (index extent length, index offset).
pub fn read_trailer(b: &[u8], order: ByteOrder) -> Result<(usize, u64)> {
    let t0 = b.len() - TRAILER_LEN;
    let t = &b[t0..];
    let bad = |m: &str| {
        Error::new(ErrorClass::BadEnvelope, format!("bad trailer: {m}")).at_offset(t0 as u64)
    };
    if t[..4] != [0xff; 4] {
        return Err(bad("no FF FF FF FF marker"));
    }
    let p = order.i32(&t[4..8]);
    if order.i32(&t[8..12]) != !p {
        return Err(bad("the index size and its complement disagree"));
    }
    let stored = order.u32(&t[24..28]);
    let computed = codec::lookup2(&t[..24], 1776);
    if stored != computed {
        return Err(bad(&format!(
            "trailer hash mismatch (stored {stored:08x}, computed {computed:08x})"
        )));
    }
    let off = order.i64(&t[16..24]);
    if p < 0 || off < 0 || (off as u64).checked_add(p as u64) != Some(t0 as u64) {
        return Err(bad(&format!(
            "the index extent (offset {off}, {p} bytes) does not end where the trailer starts"
        )));
    }
    Ok((p as usize, off as u64))
}

/// Reads an extent header at `off`, checking its sizes against `end` (§3).
pub fn read_extent_header(
    b: &[u8],
    order: ByteOrder,
    off: usize,
    end: usize,
) -> Result<ExtentHeader> {
    let bad = |m: String| Error::new(ErrorClass::BadEnvelope, m).at_offset(off as u64);
    if off.checked_add(28).is_none_or(|e| e > end) {
        return Err(bad("an extent header runs past the end of the data".into()));
    }
    let h = &b[off..];
    let cf = order.i32(&h[0..4]) as i64;
    let cv = order.i32(&h[4..8]) as i64;
    let n = order.i32(&h[8..12]) as i64;
    let vs = order.i32(&h[12..16]) as i64;
    if !(0..MAX_PART).contains(&cf) || !(0..MAX_PART).contains(&cv) {
        return Err(bad(format!(
            "compressed sizes {cf}/{cv} are outside 0..512 MiB"
        )));
    }
    if n < 0 {
        return Err(bad(format!("negative record count {n}")));
    }
    if vs < 4 {
        return Err(bad(format!("variable-area size {vs} is below 4")));
    }
    let l = h[26] as usize;
    if l == 0 {
        return Err(bad("empty type name".into()));
    }
    let header_len = (28 + l).next_multiple_of(4);
    if off + header_len > end {
        return Err(bad(
            "an extent's type name runs past the end of the data".into()
        ));
    }
    let name = String::from_utf8_lossy(&h[28..28 + l]).into_owned();
    let len = header_len + (cf as usize).next_multiple_of(4) + (cv as usize).next_multiple_of(4);
    if off + len > end {
        return Err(bad(format!(
            "extent of type {name:?} ({len} bytes) runs past the end of the data at {end}"
        )));
    }
    Ok(ExtentHeader {
        offset: off as u64,
        cf: cf as usize,
        cv: cv as usize,
        rows: n as usize,
        vs: vs as usize,
        adler: order.u32(&h[16..20]),
        hash: order.u32(&h[20..24]),
        mode_fixed: h[24],
        mode_var: h[25],
        type_name: name,
        header_len,
        len,
    })
}

/// Sequential scan from `start` up to `end` (strict: every extent must be a known type).
fn scan(
    b: &[u8],
    order: ByteOrder,
    start: usize,
    end: usize,
    types: &[Arc<ExtentType>],
) -> Result<Vec<ExtentHeader>> {
    let mut out = Vec::new();
    let mut off = start;
    while off < end {
        let h = read_extent_header(b, order, off, end)?;
        check_type_name(&h, types)?;
        off += h.len;
        out.push(h);
    }
    Ok(out)
}

fn check_type_name(h: &ExtentHeader, types: &[Arc<ExtentType>]) -> Result<()> {
    if h.type_name == XMLTYPE_NAME {
        return Err(
            Error::new(ErrorClass::BadEnvelope, "a second XmlType extent").at_offset(h.offset),
        );
    }
    if h.type_name != INDEX_NAME && !types.iter().any(|t| t.name == h.type_name) {
        return Err(Error::new(
            ErrorClass::UnknownType,
            format!(
                "extent of type {:?}: no type of that name is registered",
                h.type_name
            ),
        )
        .at_offset(h.offset));
    }
    Ok(())
}

/// Lenient scan: every extent that parses, up to the first that does not or the trailer marker.
/// Where it stops short of the end, what it could not read is recorded in `f.damaged`.
fn lenient_scan(f: &mut DsFile, first: &ExtentHeader) -> Vec<ExtentHeader> {
    let mut out = vec![first.clone()];
    let mut off = first.offset as usize + first.len;
    let mut damage = Vec::new();
    {
        let b = f.bytes();
        loop {
            if off >= b.len() || (off + 4 <= b.len() && b[off..off + 4] == [0xff; 4]) {
                break;
            }
            match read_extent_header(b, f.order, off, b.len()) {
                Ok(h) => {
                    off += h.len;
                    match check_type_name(&h, &f.types) {
                        Ok(()) => out.push(h),
                        // A type name that is no declared type may be a damaged one of ours.
                        Err(e) => {
                            damage.push((None, Skipped::new("extent", e).at_offset(h.offset)))
                        }
                    }
                }
                Err(e) => {
                    damage.push(damaged_header(b, f.order, off, &f.types, e));
                    break;
                }
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

/// Decodes the index extent and checks that it lists exactly `list`.
fn verify_index(
    b: &[u8],
    order: ByteOrder,
    ix: &ExtentHeader,
    list: &[ExtentHeader],
    checks: Checks,
) -> Result<()> {
    let t = ExtentType::index();
    let raw = decode_raw(b, order, ix, &t, checks)?;
    let bad = |m: String| Error::new(ErrorClass::BadEnvelope, m).at_offset(ix.offset);
    if ix.rows != list.len() {
        return Err(bad(format!(
            "the index lists {} extents, the file holds {}",
            ix.rows,
            list.len()
        )));
    }
    for (i, e) in list.iter().enumerate() {
        let rec = &raw.fixed[i * 16..i * 16 + 16];
        let off = order.i64(&rec[8..16]);
        let name = raw
            .var_value(order, &rec[0..4], checks.variable32)
            .map_err(|e| e.at_offset(ix.offset).at_row(i as u64))?;
        if off as u64 != e.offset || name != e.type_name.as_bytes() {
            return Err(bad(format!(
                "index entry {i} ({:?} at {off}) does not match the extent found there ({:?} at {})",
                String::from_utf8_lossy(name),
                e.type_name,
                e.offset
            )));
        }
    }
    Ok(())
}

/// An extent decompressed, un-compacted and verified; values still packed, in file order.
/// Uncompressed parts are borrowed from the file's bytes rather than copied.
pub struct RawExtent<'a> {
    /// Number of records.
    pub rows: usize,
    /// N × record_size bytes.
    pub fixed: Cow<'a, [u8]>,
    /// The variable area after its 4 leading zeros: a slot value `s > 0` names the entry at
    /// `var[s - 4..]`.
    pub var: Cow<'a, [u8]>,
}

/// A variable32 payload of `len` bytes padded to the smallest size ≥ `len` that is ≡ 4 (mod 8),
/// so that with its 4-byte length every entry takes a multiple of 8 bytes (§9).
#[inline]
pub fn roundup_var(len: usize) -> usize {
    len + ((12 - len % 8) % 8)
}

impl RawExtent<'_> {
    /// The bytes of a variable32 value whose slot is `slot` (§9.1).
    pub fn var_value(&self, order: ByteOrder, slot: &[u8], check: bool) -> Result<&[u8]> {
        var_value(&self.var, order, order.i32(slot), check)
    }
}

/// The value at slot offset `off` of a variable area given without its 4 leading zeros. An
/// error is [`ErrorClass::BadOffsets`]; the caller names the field and row.
// Decoding calls this once per variable32 value: left to itself, the compiler stopped
// inlining it into the decoder when this file changed, and decoding got 4 % slower.
#[inline(always)]
pub fn var_value(body: &[u8], order: ByteOrder, off: i32, check: bool) -> Result<&[u8]> {
    if off == 0 {
        return Ok(&[]);
    }
    let bad = || bad_slot(off, body.len());
    // Entries start 4 bytes before a multiple of 8 of the whole area (§9.1), so at a multiple
    // of 8 of the body.
    if off < 4 || (check && (off - 4) % 8 != 0) {
        return Err(bad());
    }
    let at = off as usize - 4;
    let Some(len_bytes) = body.get(at..at + 4) else {
        return Err(bad());
    };
    let len = order.i32(len_bytes);
    if len < 0 {
        return Err(bad());
    }
    let len = len as usize;
    let end = if check {
        at + 4 + roundup_var(len)
    } else {
        at + 4 + len
    };
    if end > body.len() {
        return Err(bad());
    }
    Ok(&body[at + 4..at + 4 + len])
}

fn mode_of(id: u8, h: &ExtentHeader, part: &str) -> Result<Mode> {
    Mode::from_id(id).ok_or_else(|| {
        Error::new(
            ErrorClass::Unsupported,
            format!(
                "extent at offset {} ({}): unknown compression mode {id} of the {part} part",
                h.offset, h.type_name
            ),
        )
        .at_offset(h.offset)
    })
}

/// Decodes one extent to its partly unpacked form, running the checks asked for.
pub fn decode_raw<'a>(
    b: &'a [u8],
    order: ByteOrder,
    h: &ExtentHeader,
    t: &ExtentType,
    checks: Checks,
) -> Result<RawExtent<'a>> {
    let raw = unpack_parts(b, h, t, checks, None)?;
    let fixed_hash = if checks.hash {
        codec::lookup2(&raw.fixed, FIXED_HASH_INIT)
    } else {
        0
    };
    verify_partly_unpacked(order, h, &raw, fixed_hash, checks)?;
    Ok(raw)
}

/// [`decode_raw`] of several extents, one result each, decompressing into `spare`'s buffers:
/// their fixed parts are hashed together, as lanes of [`codec::lookup2_many`], which takes a
/// fraction of the time of one hash after the other (each is a chain of dependent steps).
pub(crate) fn decode_raw_group<'a>(
    b: &'a [u8],
    order: ByteOrder,
    hs: &[ExtentHeader],
    t: &ExtentType,
    checks: Checks,
    spare: &SpareBuffers,
) -> Vec<Result<RawExtent<'a>>> {
    let raws: Vec<Result<RawExtent>> = hs
        .iter()
        .map(|h| unpack_parts(b, h, t, checks, Some(spare)))
        .collect();
    let mut fixed_hashes = if checks.hash {
        let fixed: Vec<&[u8]> = raws.iter().flatten().map(|raw| &raw.fixed[..]).collect();
        codec::lookup2_many(&fixed, FIXED_HASH_INIT).into_iter()
    } else {
        Vec::new().into_iter()
    };
    hs.iter()
        .zip(raws)
        .map(|(h, raw)| {
            let raw = raw?;
            let fixed_hash = fixed_hashes.next().unwrap_or(0);
            verify_partly_unpacked(order, h, &raw, fixed_hash, checks)?;
            Ok(raw)
        })
        .collect()
}

#[cold]
#[inline(never)]
fn bad_slot(off: i32, body_len: usize) -> Error {
    Error::new(
        ErrorClass::BadOffsets,
        format!(
            "variable32 offset {off} is not a valid entry of the {}-byte area",
            body_len + 4
        ),
    )
}

fn extent_error(h: &ExtentHeader, m: String) -> Error {
    Error::new(
        ErrorClass::BadValue,
        format!("extent at offset {} ({}): {m}", h.offset, h.type_name),
    )
    .at_offset(h.offset)
}

/// An error about one of an extent's parts (`part`: "fixed part: ", or ""), said of the
/// extent: its class kept, the extent's offset and type put before the message.
fn in_extent(h: &ExtentHeader, part: &str, e: Error) -> Error {
    Error::new(
        e.class(),
        format!(
            "extent at offset {} ({}): {part}{}",
            h.offset,
            h.type_name,
            e.message()
        ),
    )
    .at_offset(h.offset)
}

/// The §12.2 hash check (given the fixed part's lookup2 when `checks.hash`) and the variable
/// area's entry checks.
fn verify_partly_unpacked(
    order: ByteOrder,
    h: &ExtentHeader,
    raw: &RawExtent,
    fixed_hash: u32,
    checks: Checks,
) -> Result<()> {
    if checks.hash || checks.variable32 {
        let computed =
            partly_unpacked_hash_after_fixed(fixed_hash, order, &raw.var, checks.variable32)
                .map_err(|e| in_extent(h, "", e))?;
        if checks.hash && computed != h.hash {
            return Err(extent_error(
                h,
                format!(
                    "partly-unpacked hash mismatch (stored {:08x}, computed {computed:08x})",
                    h.hash
                ),
            ));
        }
    }
    Ok(())
}

/// An extent's parts decompressed (into `spare`'s buffers, if given) and its fixed part
/// uncompacted, after the adler32 check: everything of [`decode_raw`] but the hash and
/// variable32 checks.
fn unpack_parts<'a>(
    b: &'a [u8],
    h: &ExtentHeader,
    t: &ExtentType,
    checks: Checks,
    spare: Option<&SpareBuffers>,
) -> Result<RawExtent<'a>> {
    let buffer = || spare.map(SpareBuffers::take).unwrap_or_default();
    let where_ = |m: String| extent_error(h, m);
    let ext = &b[h.offset as usize..h.offset as usize + h.len];
    if checks.adler {
        let computed = codec::extent_adler32(ext);
        if computed != h.adler {
            return Err(where_(format!(
                "adler32 mismatch (stored {:08x}, computed {computed:08x})",
                h.adler
            )));
        }
    }
    let fixed_len = h
        .rows
        .checked_mul(t.record_size)
        .filter(|&n| n <= MAX_UNPACKED)
        .ok_or_else(|| {
            where_(format!(
                "{} records of {} bytes is too large",
                h.rows, t.record_size
            ))
        })?;
    let var_len = h.vs - 4;
    if var_len > MAX_UNPACKED {
        return Err(where_(format!(
            "variable area of {} bytes is too large",
            h.vs
        )));
    }
    let fpart = &ext[h.header_len..h.header_len + h.cf];
    let vstart = h.header_len + h.cf.next_multiple_of(4);
    let vpart = &ext[vstart..vstart + h.cv];

    // Fixed part.
    let fixed: Cow<'a, [u8]> = if fixed_len == 0 {
        if h.cf != 0 {
            return Err(where_(format!(
                "an empty fixed part has {} stored bytes",
                h.cf
            )));
        }
        Cow::Borrowed(&[])
    } else {
        let mode = mode_of(h.mode_fixed, h, "fixed")?;
        if t.null_compact {
            let packed = part(mode, fpart, fixed_len, false, buffer)
                .map_err(|e| in_extent(h, "fixed part: ", e))?;
            let fixed = uncompact(t, &packed, h.rows).map_err(|e| in_extent(h, "", e))?;
            if let (Some(spare), Cow::Owned(packed)) = (spare, packed) {
                spare.give(packed);
            }
            Cow::Owned(fixed)
        } else {
            part(mode, fpart, fixed_len, true, buffer)
                .map_err(|e| in_extent(h, "fixed part: ", e))?
        }
    };
    // Variable part.
    let var: Cow<'a, [u8]> = if var_len == 0 {
        if h.cv != 0 {
            return Err(where_(format!(
                "an empty variable part has {} stored bytes",
                h.cv
            )));
        }
        Cow::Borrowed(&[])
    } else {
        let mode = mode_of(h.mode_var, h, "variable")?;
        part(mode, vpart, var_len, true, buffer).map_err(|e| in_extent(h, "variable part: ", e))?
    };
    Ok(RawExtent {
        rows: h.rows,
        fixed,
        var,
    })
}

/// One part decompressed into a buffer `out` gives: borrowed as stored when its mode is none (`exact`: its
/// length must be `expected`, else at most that).
fn part(
    mode: Mode,
    stored: &[u8],
    expected: usize,
    exact: bool,
    out: impl FnOnce() -> Vec<u8>,
) -> Result<Cow<'_, [u8]>> {
    if mode == Mode::None {
        if stored.len() > expected || (exact && stored.len() != expected) {
            return Err(Error::new(
                ErrorClass::BadValue,
                format!(
                    "none data decompressed to {} bytes, expected {expected}",
                    stored.len()
                ),
            ));
        }
        return Ok(Cow::Borrowed(stored));
    }
    let capacity = expected.min(stored.len().saturating_mul(1100).saturating_add(4096));
    let mut out = out();
    out.clear();
    if out.capacity() < capacity {
        // A kept buffer too small would be copied to grow: a fresh one costs no copy.
        out = Vec::with_capacity(capacity);
    }
    codec::decompress(mode, stored, expected, exact, &mut out)?;
    Ok(Cow::Owned(out))
}

/// §12.2 over the fixed records and the variable area given without its 4 leading zeros; also
/// walks the variable entries and, with `check`, verifies their padding (§9.1).
pub fn partly_unpacked_hash(
    order: ByteOrder,
    fixed: &[u8],
    var_body: &[u8],
    check: bool,
) -> Result<u32> {
    let fixed_hash = codec::lookup2(fixed, FIXED_HASH_INIT);
    partly_unpacked_hash_after_fixed(fixed_hash, order, var_body, check)
}

/// The initial value of the fixed part's lookup2 in the partly-unpacked hash (§12.2).
pub const FIXED_HASH_INIT: u32 = 1972;

/// [`partly_unpacked_hash`] given the hash of the fixed part, `lookup2(fixed, 1972)`, which a
/// writer computes for several extents at a time.
pub fn partly_unpacked_hash_after_fixed(
    fixed_hash: u32,
    order: ByteOrder,
    var_body: &[u8],
    check: bool,
) -> Result<u32> {
    let entry = |m: String| Error::new(ErrorClass::BadValue, m);
    let mut h = codec::lookup2_zero_prefixed(var_body, fixed_hash);
    let mut words: Vec<u8> = Vec::with_capacity(4096);
    let mut at = 0usize;
    while at < var_body.len() {
        // Offsets in messages count the 4 leading zeros, as slot values do.
        let off = at + 4;
        if at + 4 > var_body.len() {
            return Err(entry(format!(
                "variable entry at {off} runs past the area's end"
            )));
        }
        let len = order.i32(&var_body[at..at + 4]);
        if len < 0 {
            return Err(entry(format!(
                "variable entry at {off} has negative length {len}"
            )));
        }
        let step = 4 + roundup_var(len as usize);
        if at + step > var_body.len() {
            return Err(entry(format!(
                "variable entry at {off} ({len} bytes) runs past the area's end"
            )));
        }
        if check
            && var_body[at + 4 + len as usize..at + step]
                .iter()
                .any(|&x| x != 0)
        {
            return Err(entry(format!(
                "variable entry at {off} has non-zero padding"
            )));
        }
        words.extend_from_slice(&var_body[at..at + 4]);
        if words.len() == 4096 {
            h = codec::lookup2(&words, h);
            words.clear();
        }
        at += step;
    }
    Ok(codec::lookup2(&words, h))
}

/// Fields of a type grouped for null compaction: (field index, class), in class then offset order.
pub fn compaction_order(t: &ExtentType) -> Vec<usize> {
    let mut v: Vec<usize> = (0..t.fields.len())
        .filter(|&i| t.fields[i].kind != Kind::Bool)
        .collect();
    v.sort_by_key(|&i| (t.fields[i].kind.class(), t.fields[i].offset));
    v
}

fn is_null(t: &ExtentType, rec: &[u8], field: usize) -> bool {
    match t.fields[field].null_field {
        Some(nf) => rec[t.fields[nf].offset] & t.fields[nf].mask != 0,
        None => false,
    }
}

/// Reverses null compaction (§11).
fn uncompact(t: &ExtentType, input: &[u8], rows: usize) -> Result<Vec<u8>> {
    let rs = t.record_size;
    let mut out = vec![0u8; rows * rs];
    let order = compaction_order(t);
    let mut cur = 0usize;
    let short = || {
        Error::new(
            ErrorClass::BadValue,
            "null-compacted fixed data ends inside a record",
        )
    };
    for r in 0..rows {
        let rec = &mut out[r * rs..(r + 1) * rs];
        if cur + t.bool_bytes > input.len() {
            return Err(short());
        }
        rec[..t.bool_bytes].copy_from_slice(&input[cur..cur + t.bool_bytes]);
        cur += t.bool_bytes;
        for &fi in &order {
            if is_null(t, rec, fi) {
                continue;
            }
            let f = &t.fields[fi];
            let class = f.kind.class();
            cur = cur.next_multiple_of(class);
            let w = f.kind.width();
            if cur + w > input.len() {
                return Err(short());
            }
            rec[f.offset..f.offset + w].copy_from_slice(&input[cur..cur + w]);
            cur += w;
        }
    }
    if cur != input.len() {
        return Err(Error::new(
            ErrorClass::BadValue,
            format!(
                "null-compacted fixed data has {} bytes left after {rows} records",
                input.len() - cur
            ),
        ));
    }
    Ok(out)
}

/// Applies null compaction (§11) to packed records.
pub fn compact(t: &ExtentType, fixed: &[u8], rows: usize) -> Vec<u8> {
    let rs = t.record_size;
    let order = compaction_order(t);
    let mut out = Vec::with_capacity(fixed.len());
    for r in 0..rows {
        let rec = &fixed[r * rs..(r + 1) * rs];
        out.extend_from_slice(&rec[..t.bool_bytes]);
        for &fi in &order {
            if is_null(t, rec, fi) {
                continue;
            }
            let f = &t.fields[fi];
            let target = out.len().next_multiple_of(f.kind.class());
            out.resize(target, 0);
            out.extend_from_slice(&rec[f.offset..f.offset + f.kind.width()]);
        }
    }
    out
}
