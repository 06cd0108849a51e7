//! Offsets of string and array columns: u32 (Str32, Arr32) until a column outgrows them, then
//! u64; the NA bit of string offsets.

use std::io;

use arrow_buffer::ArrowNativeType;

use super::super::spool::{Spool, Stream};
use super::{Buf, EncodeError, OffsetStreams};
use crate::error::ErrorClass;

/// An offset as stored: u32 with the NA bit 31, or u64 with the NA bit 63.
pub(super) trait OffsetWord: ArrowNativeType {
    const NA_BIT: Self;
    fn from_end(end: u64) -> Self;
    fn with_na(self) -> Self;
}

impl OffsetWord for u32 {
    const NA_BIT: u32 = 1 << 31;
    #[inline(always)]
    fn from_end(end: u64) -> u32 {
        end as u32
    }
    #[inline(always)]
    fn with_na(self) -> u32 {
        self | Self::NA_BIT
    }
}

impl OffsetWord for u64 {
    const NA_BIT: u64 = 1 << 63;
    #[inline(always)]
    fn from_end(end: u64) -> u64 {
        end
    }
    #[inline(always)]
    fn with_na(self) -> u64 {
        self | Self::NA_BIT
    }
}

/// The offsets of a string or array column as they are appended.
#[derive(Debug)]
pub(super) struct Offsets {
    pub(super) narrow: Stream,
    pub(super) wide: Stream,
    pub(super) wide_mode: bool,
    pub(super) scratch32: Vec<u32>,
    pub(super) scratch64: Vec<u64>,
}

impl Offsets {
    /// Starts the offsets with the leading 0.
    pub(super) fn new(wide: bool) -> Offsets {
        let mut offsets = Offsets {
            narrow: Stream::new(),
            wide: Stream::new(),
            wide_mode: wide,
            scratch32: Vec::new(),
            scratch64: Vec::new(),
        };
        if wide {
            offsets.wide.push_slice(&0u64.to_le_bytes());
        } else {
            offsets.narrow.push_slice(&0u32.to_le_bytes());
        }
        offsets
    }

    pub(super) fn flush(&mut self) {
        self.narrow.push_vec(&mut self.scratch32);
        self.wide.push_vec(&mut self.scratch64);
    }

    pub(super) fn held(&self) -> usize {
        self.narrow.held() + self.wide.held()
    }

    pub(super) fn spill(&mut self, spool: &mut Spool) -> io::Result<()> {
        self.narrow.spill(spool)?;
        self.wide.spill(spool)
    }

    pub(super) fn finish(self) -> Buf {
        Buf::Offsets(OffsetStreams {
            narrow: self.narrow,
            wide: self.wide,
            wide_mode: self.wide_mode,
        })
    }
}

/// Runs `$body` with `$out` bound to the scratch vector of the current offset width and `$W`
/// to its element type.
macro_rules! with_offsets {
    ($offsets:expr, |$out:ident: $W:ident| $body:expr) => {
        if $offsets.wide_mode {
            type $W = u64;
            let $out: &mut Vec<u64> = &mut $offsets.scratch64;
            $body
        } else {
            type $W = u32;
            let $out: &mut Vec<u32> = &mut $offsets.scratch32;
            $body
        }
    };
}

/// The row whose offsets decrease, if any (one vectorisable pass).
pub(super) fn first_decrease<O: ArrowNativeType + PartialOrd>(offsets: &[O]) -> Option<usize> {
    let ok = offsets.windows(2).fold(true, |ok, w| ok & (w[0] <= w[1]));
    if ok {
        None
    } else {
        offsets.windows(2).position(|w| w[0] > w[1])
    }
}

pub(super) fn bad_offsets(index: usize, what: &str) -> EncodeError {
    EncodeError::at(
        index,
        ErrorClass::BadOffsets,
        format!("the Arrow array's {what} offsets are invalid at this row"),
    )
}
pub(super) use with_offsets;
