//! Packed integers of 8, 16, 32 or 64 bits (the bodies of Int, Long, Diff, DictString codes and
//! DiffDateTime vectors), widened to Arrow's `i32` or `i64`.

use flatbuffers::Vector;

use super::table::{bad_info, data_bytes};
use crate::error::Result;

/// The width of packed integers, one of the `nbits` filo writes for integers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Width {
    W8,
    W16,
    W32,
    W64,
}

impl Width {
    fn bits(self) -> u16 {
        match self {
            Width::W8 => 8,
            Width::W16 => 16,
            Width::W32 => 32,
            Width::W64 => 64,
        }
    }
}

/// The width of an Int body (or of DictString codes, DiffDateTime offsets): 8, 16 or 32 bits.
pub(super) fn int_width(nbits: u16, signed: bool, field: &str) -> Result<Width> {
    match nbits {
        8 => Ok(Width::W8),
        16 => Ok(Width::W16),
        32 => Ok(Width::W32),
        _ => Err(bad_info(nbits, signed, field, "Int widths 8, 16 or 32")),
    }
}

/// The width of a Long (or Timestamp, millis) body: 8, 16, 32 or 64 bits.
pub(super) fn long_width(nbits: u16, signed: bool, field: &str) -> Result<Width> {
    match nbits {
        64 => Ok(Width::W64),
        _ => int_width(nbits, signed, field)
            .map_err(|_| bad_info(nbits, signed, field, "Long widths 8, 16, 32 or 64")),
    }
}

/// `count` packed integers whose bytes are checked to be in the vector: only
/// [`Ints::new`] makes one, so widening them never reads past the body.
pub(super) struct Ints<'a> {
    bytes: &'a [u8],
    width: Width,
    signed: bool,
}

macro_rules! widen {
    ($bytes:expr, $src:ty, $dst:ty) => {{
        const W: usize = std::mem::size_of::<$src>();
        $bytes
            .chunks_exact(W)
            .map(|c| {
                let mut b = [0u8; W];
                b.copy_from_slice(c);
                <$src>::from_le_bytes(b) as $dst
            })
            .collect::<Vec<$dst>>()
    }};
}

impl<'a> Ints<'a> {
    /// The first `count` integers of `data`, an error naming `field` if it is too short.
    pub fn new(
        data: Option<Vector<'a, u8>>,
        count: usize,
        (width, signed): (Width, bool),
        fbuf: &[u8],
        field: &str,
    ) -> Result<Ints<'a>> {
        let bytes = data_bytes(data, count, width.bits(), fbuf, field)?;
        Ok(Ints {
            bytes,
            width,
            signed,
        })
    }

    /// The packed bytes, exactly `count` integers' worth.
    pub fn bytes(&self) -> &'a [u8] {
        self.bytes
    }

    /// The integers widened to `i32`; a 64-bit body (never accepted for an Int) is truncated.
    pub fn to_i32(&self) -> Vec<i32> {
        let b = self.bytes;
        match (self.width, self.signed) {
            (Width::W8, true) => b.iter().map(|&v| v as i8 as i32).collect(),
            (Width::W8, false) => b.iter().map(|&v| v as i32).collect(),
            (Width::W16, true) => widen!(b, i16, i32),
            (Width::W16, false) => widen!(b, u16, i32),
            (Width::W32, _) => widen!(b, i32, i32),
            (Width::W64, _) => widen!(b, i64, i32),
        }
    }

    /// The integers widened to `i64`. filo marks 64-bit data unsigned whatever its sign; the
    /// bytes are `i64`'s.
    pub fn to_i64(&self) -> Vec<i64> {
        let b = self.bytes;
        match (self.width, self.signed) {
            (Width::W8, true) => b.iter().map(|&v| v as i8 as i64).collect(),
            (Width::W8, false) => b.iter().map(|&v| v as i64).collect(),
            (Width::W16, true) => widen!(b, i16, i64),
            (Width::W16, false) => widen!(b, u16, i64),
            (Width::W32, true) => widen!(b, i32, i64),
            (Width::W32, false) => widen!(b, u32, i64),
            (Width::W64, _) => widen!(b, i64, i64),
        }
    }
}
