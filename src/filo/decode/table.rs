//! Reading a vector's FlatBuffer tables safely: verification, lengths checked against the
//! buffer before anything is allocated for them, NA masks, and errors that name the field and
//! the file offset.

use arrow_buffer::{BooleanBuffer, Buffer, NullBuffer};
use flatbuffers::{Follow, InvalidFlatbuffer, Vector, Verifiable, VerifierOptions};

use super::MAX_EMPTY_LEN;
use crate::error::{Error, ErrorClass, Result};
use crate::filo::gen::vector as fb;

fn verifier_options() -> VerifierOptions {
    VerifierOptions {
        max_apparent_size: 1 << 40,
        ..VerifierOptions::default()
    }
}

pub(super) fn root<'a, T>(fbuf: &'a [u8], table: &str) -> Result<T::Inner>
where
    T: Follow<'a> + Verifiable + 'a,
{
    flatbuffers::root_with_opts::<T>(&verifier_options(), fbuf)
        .map_err(|e| flatbuffer_error(e, table))
}

/// A verifier error as an arrowsmith error: the file offset of the trouble and the field path.
fn flatbuffer_error(e: InvalidFlatbuffer, table: &str) -> Error {
    use InvalidFlatbuffer as I;
    let (class, position) = match &e {
        I::Utf8Error { range, .. } => (ErrorClass::InvalidUtf8, Some(range.start)),
        I::MissingNullTerminator { range, .. } => (ErrorClass::BufferOutOfBounds, Some(range.end)),
        I::Unaligned { position, .. } => (ErrorClass::BufferMisaligned, Some(*position)),
        I::RangeOutOfBounds { range, .. } => (ErrorClass::BufferOutOfBounds, Some(range.start)),
        I::SignedOffsetOutOfBounds { position, .. } => {
            (ErrorClass::BufferOutOfBounds, Some(*position))
        }
        _ => (ErrorClass::BadMeta, None),
    };
    let text = e.to_string();
    let text: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    let mut err = Error::new(
        class,
        format!("the FlatBuffer is damaged: {}", text.join("; ")),
    )
    .with_field(table.to_string());
    if let Some(p) = position {
        err = err.at_offset(p as u64 + 4);
    }
    err
}

/// The file offset of a slice inside the FlatBuffer.
pub(super) fn offset_of(fbuf: &[u8], part: &[u8]) -> u64 {
    (part.as_ptr() as usize).saturating_sub(fbuf.as_ptr() as usize) as u64 + 4
}

pub(super) fn missing(field: &str) -> Error {
    Error::new(ErrorClass::MissingField, "required field is absent").with_field(field.to_string())
}

pub(super) fn length(len: i32, field: &str) -> Result<usize> {
    usize::try_from(len).map_err(|_| {
        Error::new(ErrorClass::BadValue, format!("length {len} is negative"))
            .with_field(field.to_string())
    })
}

/// The length of a vector whose elements take at least one bit each of the buffer, checked
/// against it before anything is allocated for them (NA masks included).
pub(super) fn bounded_length(len: i32, fbuf: &[u8], field: &str) -> Result<usize> {
    let n = length(len, field)?;
    if n / 8 > fbuf.len() {
        return Err(Error::new(
            ErrorClass::BufferSize,
            format!(
                "{n} elements cannot fit in a vector of {} bytes",
                fbuf.len() + 4
            ),
        )
        .with_field(field.to_string()));
    }
    Ok(n)
}

/// Const vectors (and ConstString) expand a few bytes into `len` elements; their length is not
/// bounded by the buffer, so it is bounded here: an EmptyVector's maximum, or 64 elements per
/// byte of the vector, whichever is more.
pub(super) fn check_expansion(len: usize, byte_len: usize) -> Result<()> {
    let limit = MAX_EMPTY_LEN.max(byte_len.saturating_mul(64));
    if len > limit {
        return Err(Error::new(
            ErrorClass::BadValue,
            format!("a constant vector of {byte_len} bytes claims {len} elements (limit {limit})"),
        ));
    }
    Ok(())
}

pub(super) fn info_pair(info: &fb::DataInfo) -> (u16, bool) {
    // Read the struct's bytes directly: `signed` may hold any byte (nonzero = 1).
    (u16::from_le_bytes([info.0[0], info.0[1]]), info.0[2] != 0)
}

pub(super) fn ddt_vars(vars: &fb::DDTVars) -> (i32, i8, i64) {
    let b = &vars.0;
    let len = i32::from_le_bytes([b[0], b[1], b[2], b[3]]);
    let base_tz = b[4] as i8;
    let mut m = [0u8; 8];
    m.copy_from_slice(&b[8..16]);
    (len, base_tz, i64::from_le_bytes(m))
}

pub(super) fn required_info(info: Option<&fb::DataInfo>, field: &str) -> Result<(u16, bool)> {
    info.map(info_pair).ok_or_else(|| missing(field))
}

pub(super) fn bad_info(nbits: u16, signed: bool, field: &str, accepted: &str) -> Error {
    Error::new(
        ErrorClass::BadMeta,
        format!(
            "(nbits {nbits}, signed {}) is not accepted here: expected {accepted}",
            signed as u8
        ),
    )
    .with_field(field.to_string())
}

/// The `[ubyte]` body holding `count` elements of `nbits`, checked to be long enough.
pub(super) fn data_bytes<'a>(
    data: Option<Vector<'a, u8>>,
    count: usize,
    nbits: u16,
    fbuf: &[u8],
    field: &str,
) -> Result<&'a [u8]> {
    let need = count
        .checked_mul(usize::from(nbits))
        .map(|b| b.div_ceil(8))
        .ok_or_else(|| Error::new(ErrorClass::BufferSize, "size overflows").with_field(field))?;
    let bytes = data.map_or(&[][..], |d| d.bytes());
    if bytes.len() < need {
        let mut e = Error::new(
            ErrorClass::BufferSize,
            format!(
                "{count} elements of {nbits} bits need {need} bytes, the vector has {}",
                bytes.len()
            ),
        )
        .with_field(field.to_string());
        if let Some(d) = data {
            e = e.at_offset(offset_of(fbuf, d.bytes()));
        }
        return Err(e);
    }
    Ok(&bytes[..need])
}

pub(super) fn mask_kind(mask: Option<fb::NaMask<'_>>) -> Result<MaskKind> {
    Ok(match mask {
        None => MaskKind::Absent,
        Some(m) => match m.maskType().0 {
            0 => MaskKind::AllZeroes,
            1 => MaskKind::SimpleBitMask {
                words: m.bitMask().map_or(0, |b| b.len()),
            },
            2 => MaskKind::AllOnes,
            other => return Err(bad_mask_type(other)),
        },
    })
}

fn bad_mask_type(value: i8) -> Error {
    Error::new(
        ErrorClass::BadValue,
        format!("maskType {value} is not AllZeroes (0), SimpleBitMask (1) or AllOnes (2)"),
    )
    .with_field("NaMask.maskType")
}

/// Arrow validity from a NaMask (bit set = NA), `None` when no element is NA.
pub(super) fn validity(mask: Option<fb::NaMask<'_>>, len: usize) -> Result<Option<NullBuffer>> {
    let mask = match mask {
        None => return Ok(None),
        Some(m) => m,
    };
    match mask.maskType().0 {
        0 => Ok(None),
        2 => Ok((len > 0).then(|| NullBuffer::new_null(len))),
        1 => {
            let words = match mask.bitMask() {
                None => return Ok(None),
                Some(w) => w.bytes(),
            };
            let nbytes = len.div_ceil(8);
            let mut valid = vec![0xFFu8; nbytes];
            let shared = nbytes.min(words.len());
            for (v, m) in valid[..shared].iter_mut().zip(&words[..shared]) {
                *v = !m;
            }
            let nulls = NullBuffer::new(BooleanBuffer::new(Buffer::from_vec(valid), 0, len));
            Ok((nulls.null_count() > 0).then_some(nulls))
        }
        other => Err(bad_mask_type(other)),
    }
}

/// How a vector marks its NAs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MaskKind {
    /// No NaMask table (DictStringVector, which uses code 0; or a writer that left it out).
    Absent,
    /// No element is NA.
    AllZeroes,
    /// A bitmap of this many u64 words.
    SimpleBitMask {
        /// Number of `u64` words of the bitmap.
        words: usize,
    },
    /// Every element is NA.
    AllOnes,
    /// EmptyVector: everything is NA, no table.
    Empty,
}

impl MaskKind {
    /// The mask kind's name, as the FlatBuffer schema spells it (`"AllZeroes"`, …).
    pub fn name(self) -> &'static str {
        match self {
            MaskKind::Absent => "absent",
            MaskKind::AllZeroes => "AllZeroes",
            MaskKind::SimpleBitMask { .. } => "SimpleBitMask",
            MaskKind::AllOnes => "AllOnes",
            MaskKind::Empty => "empty",
        }
    }
}
