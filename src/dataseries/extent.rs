//! Decoding one extent to its partly unpacked form (§11, §12, §13): its parts decompressed
//! and checked, its fixed records un-compacted, its variable area walked. Values stay packed;
//! [`super::mapping`] unpacks them into columns.

use std::borrow::Cow;

use arrow_buffer::Buffer;

use super::buffers::SpareBuffers;
use super::byte_order::ByteOrder;
use super::checksum;
use super::codec::{self, Mode};
use super::types::{ExtentType, Kind};
use crate::error::{Error, ErrorClass, Result};

/// Reference limit on a compressed part (§3).
pub const MAX_PART: i64 = 512 << 20;
/// arrowsmith's cap on an uncompressed part (§16.2).
pub const MAX_UNPACKED: usize = (2 << 30) - 1;

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

/// Reads an extent header at `off`, checking its sizes against `end` (§3).
pub fn read_extent_header(
    b: &[u8],
    order: ByteOrder,
    off: usize,
    end: usize,
) -> Result<ExtentHeader> {
    let at = b.get(off..end.min(b.len())).unwrap_or_default();
    parse_extent_header(at, order, off as u64, end as u64)
}

/// Reads the extent header that starts `h` (the bytes of the file from offset `off`: at least
/// the header, or everything up to `end`), checking its sizes against `end`, the offset the
/// extent must end by (§3).
pub fn parse_extent_header(h: &[u8], order: ByteOrder, off: u64, end: u64) -> Result<ExtentHeader> {
    let bad = |m: String| Error::new(ErrorClass::BadEnvelope, m).at_offset(off);
    let room = end.saturating_sub(off);
    if room < 28 || h.len() < 28 {
        return Err(bad("an extent header runs past the end of the data".into()));
    }
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
    if header_len as u64 > room || h.len() < 28 + l {
        return Err(bad(
            "an extent's type name runs past the end of the data".into()
        ));
    }
    let name = String::from_utf8_lossy(&h[28..28 + l]).into_owned();
    let len = header_len + (cf as usize).next_multiple_of(4) + (cv as usize).next_multiple_of(4);
    if len as u64 > room {
        return Err(bad(format!(
            "extent of type {name:?} ({len} bytes) runs past the end of the data at {end}"
        )));
    }
    Ok(ExtentHeader {
        offset: off,
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

/// Decodes one extent to its partly unpacked form, running the checks asked for. `extent` is
/// the extent's bytes, all `h.len` of them (what a source gives for `h.offset..h.offset + h.len`).
pub fn decode_raw<'a>(
    extent: &'a [u8],
    order: ByteOrder,
    h: &ExtentHeader,
    t: &ExtentType,
    checks: Checks,
) -> Result<RawExtent<'a>> {
    let raw = unpack_parts(extent, h, t, checks, None)?;
    let fixed_hash = if checks.hash {
        checksum::lookup2(&raw.fixed, FIXED_HASH_INIT)
    } else {
        0
    };
    verify_partly_unpacked(order, h, &raw, fixed_hash, checks)?;
    Ok(raw)
}

/// [`decode_raw`] of several extents, one result each, decompressing into `spare`'s buffers:
/// their fixed parts are hashed together, as lanes of [`checksum::lookup2_many`], which takes a
/// fraction of the time of one hash after the other (each is a chain of dependent steps).
pub(crate) fn decode_raw_group<'a>(
    extents: &'a [(ExtentHeader, Buffer)],
    order: ByteOrder,
    t: &ExtentType,
    checks: Checks,
    spare: &SpareBuffers,
) -> Vec<Result<RawExtent<'a>>> {
    let raws: Vec<Result<RawExtent>> = extents
        .iter()
        .map(|(h, bytes)| unpack_parts(bytes, h, t, checks, Some(spare)))
        .collect();
    let mut fixed_hashes = if checks.hash {
        let fixed: Vec<&[u8]> = raws.iter().flatten().map(|raw| &raw.fixed[..]).collect();
        checksum::lookup2_many(&fixed, FIXED_HASH_INIT).into_iter()
    } else {
        Vec::new().into_iter()
    };
    extents
        .iter()
        .zip(raws)
        .map(|((h, _), raw)| {
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
    ext: &'a [u8],
    h: &ExtentHeader,
    t: &ExtentType,
    checks: Checks,
    spare: Option<&SpareBuffers>,
) -> Result<RawExtent<'a>> {
    let buffer = || spare.map(SpareBuffers::take).unwrap_or_default();
    let where_ = |m: String| extent_error(h, m);
    if ext.len() != h.len {
        return Err(where_(format!(
            "{} bytes were read of an extent of {}",
            ext.len(),
            h.len
        )));
    }
    if checks.adler {
        let computed = checksum::extent_adler32(ext);
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
    let fixed_hash = checksum::lookup2(fixed, FIXED_HASH_INIT);
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
    let mut h = checksum::lookup2_zero_prefixed(var_body, fixed_hash);
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
            h = checksum::lookup2(&words, h);
            words.clear();
        }
        at += step;
    }
    Ok(checksum::lookup2(&words, h))
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
