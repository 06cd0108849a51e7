//! The DSv1 container: header (§2), extent headers (§3), trailer (§4) and index (§5.2); what
//! lies inside one extent is decoded by [`super::extent`].

use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_buffer::Buffer;

use super::byte_order::ByteOrder;
use super::checksum;
use super::extent::{decode_raw, read_extent_header, Checks, ExtentHeader, MAX_PART};
use super::types::{ExtentType, INDEX_NAME, XMLTYPE_NAME};
use crate::error::{Error, ErrorClass, Result};
use crate::salvage::Skipped;

/// Bytes of the file header (§2).
pub const HEADER_LEN: usize = 40;
/// Bytes of the file trailer (§4).
pub const TRAILER_LEN: usize = 28;
/// An opened DataSeries file: its bytes, types and extent list.
pub struct DsFile {
    path: Option<PathBuf>,
    bytes: Buffer,
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
        // Mapped (see `mapped::file_bytes` about a file truncated meanwhile).
        let (bytes, _) = std::fs::File::open(path)
            .and_then(|file| crate::mapped::file_bytes(&file))
            .map_err(|e| Error::from(e).with_file(path))?;
        Self::from_parts(Some(path.to_path_buf()), bytes, options).map_err(|e| e.with_file(path))
    }

    /// Opens the file `source` reads (a local file, a remote object): its header, types,
    /// trailer and index.
    pub fn open_source(
        source: std::sync::Arc<dyn crate::source::ByteSource>,
        options: OpenOptions,
    ) -> Result<DsFile> {
        let location = PathBuf::from(source.location());
        let bytes = source.read_all().map_err(|e| e.with_file(&location))?;
        Self::from_parts(Some(location.clone()), bytes, options).map_err(|e| e.with_file(&location))
    }

    /// Opens a file held in memory.
    pub fn from_bytes(bytes: Vec<u8>, options: OpenOptions) -> Result<DsFile> {
        Self::from_parts(None, Buffer::from_vec(bytes), options)
    }

    /// The whole file's bytes.
    pub fn bytes(&self) -> &[u8] {
        self.bytes.as_slice()
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

    fn from_parts(path: Option<PathBuf>, bytes: Buffer, options: OpenOptions) -> Result<DsFile> {
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
    let computed = checksum::lookup2(&t[..24], 1776);
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
