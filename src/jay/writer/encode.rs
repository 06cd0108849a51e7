//! Column encoders: Arrow arrays in, Jay column buffers out (spec B3.2–B3.5).
//!
//! One encoder per column (and per array child) accumulates the column across batches in
//! [`Stream`]s. Each `append` stores Jay's encoding of one batch (sentinels for nulls, NA bits
//! in string offsets, rebased offsets) and, while the batch is still in cache, counts the NAs
//! and tracks min/max: fixed-width values are copied once, their null slots overwritten, and
//! summarised in vectorisable passes; values without nulls are not copied at all. Encoders
//! touch no file: they run in parallel, and the writer moves their streams to the spool when
//! its memory limit is reached.

mod fixed;
mod list;
mod offsets;
mod text;

pub(crate) use self::text::text_len;

use std::io;

use arrow_array::cast::AsArray;
use arrow_array::Array;
use arrow_buffer::{BooleanBuffer, NullBuffer};
use arrow_schema::DataType;

use self::fixed::FixedEncoder;
use self::list::ListEncoder;
use self::text::TextEncoder;
use super::spool::{Spool, Stream};
use crate::error::ErrorClass;
use crate::jay::mapping::{JayType, WriteMapping};
use crate::sentinel::CollisionPolicy;

/// What every encoder needs to know.
#[derive(Debug, Clone, Copy)]
pub(crate) struct EncodeOptions {
    pub policy: CollisionPolicy,
    /// The most text bytes (and rows) a Str32 column, and the most elements an Arr32 column,
    /// may hold before it is written with 64-bit offsets instead: 2^31 − 1 in the format.
    pub offset32_limit: u64,
}

/// A value that cannot be written, located by its index in the array passed to `append`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct EncodeError {
    pub class: ErrorClass,
    /// Index of the offending row within the appended array, when one row is at fault.
    pub index: Option<usize>,
    pub message: String,
}

impl EncodeError {
    fn at(index: usize, class: ErrorClass, message: String) -> EncodeError {
        EncodeError {
            class,
            index: Some(index),
            message,
        }
    }

    fn mismatch(array: &dyn Array, expected: &str) -> EncodeError {
        EncodeError {
            class: ErrorClass::InvalidArgument,
            index: None,
            message: format!(
                "the batch holds an array of type {} where the column's encoder expects {expected}",
                array.data_type()
            ),
        }
    }
}

/// Minimum and maximum of a column, in the Stats struct of its Jay type (A3.1).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum StatsValue {
    Bool(i8, i8),
    Int8(i8, i8),
    Int16(i16, i16),
    Int32(i32, i32),
    Int64(i64, i64),
    Float32(f32, f32),
    Float64(f64, f64),
}

/// A column buffer as the encoder left it.
#[derive(Debug)]
pub(crate) enum Buf {
    Plain(Stream),
    /// String or array offsets: a prefix of u32 offsets and, once the column outgrew 32-bit
    /// offsets, a suffix of u64 offsets; in that case the whole buffer is written as u64.
    Offsets(OffsetStreams),
}

#[derive(Debug)]
pub(crate) struct OffsetStreams {
    pub narrow: Stream,
    pub wide: Stream,
    pub wide_mode: bool,
}

impl OffsetStreams {
    pub(crate) fn len(&self) -> u64 {
        if self.wide_mode {
            self.narrow.len() * 2 + self.wide.len()
        } else {
            self.narrow.len()
        }
    }
}

/// A finished column: its type, counts and buffers, ready to be placed in the file.
#[derive(Debug)]
pub(crate) struct Finished {
    pub jay_type: JayType,
    pub nrows: u64,
    pub nullcount: u64,
    /// For Bool8, integer, float, Date32 and Time64 columns (dropped for array children).
    pub stats: Option<StatsValue>,
    /// Arrays only: the list validity bitmap, `None` when no list is null.
    pub validity: Option<Stream>,
    /// Values; or offsets then bytes (strings); or offsets (arrays); nothing for Void0.
    pub data: Vec<Buf>,
    pub child: Option<Box<Finished>>,
}

/// Accumulates one column.
pub(crate) trait Encoder: Send {
    /// Appends every row of `array`, whose type must be the column's.
    fn append(&mut self, array: &dyn Array) -> Result<(), EncodeError>;
    /// Bytes held in memory.
    fn held(&self) -> usize;
    /// Moves every held byte to the spool.
    fn spill(&mut self, spool: &mut Spool) -> io::Result<()>;
    /// The lengths of the column's buffers (those of [`Finished::data`]) after `rows` rows
    /// holding `text` bytes of text (for text columns), for a column written straight into
    /// its place in the file. `None` when the column cannot be written that way (arrays, or
    /// text beyond 32-bit offsets). Asked of a fresh encoder.
    fn direct_layout(&self, rows: u64, text: u64) -> Option<Vec<u64>> {
        let _ = (rows, text);
        None
    }
    /// Hands the bytes held in memory to `out`, with the index of their buffer in
    /// [`Finished::data`], and forgets them. Only for columns with a `direct_layout`.
    fn drain(&mut self, out: &mut dyn FnMut(usize, &[u8]) -> io::Result<()>) -> io::Result<()> {
        let _ = out;
        Err(io::Error::other(
            "internal error: this column cannot be written directly",
        ))
    }
    fn finish(self: Box<Self>) -> Finished;
}

/// The encoder of a column whose Arrow type maps as `mapping`; `None` for a mapping that
/// `WriteMapping::for_arrow` never produces (an array type as a direct mapping).
pub(crate) fn encoder_for(
    mapping: &WriteMapping,
    data_type: &DataType,
    options: EncodeOptions,
) -> Option<Box<dyn Encoder>> {
    let policy = options.policy;
    Some(match mapping {
        WriteMapping::Direct(t) | WriteMapping::Widen(t) => match t {
            JayType::Bool8 => Box::new(BoolEncoder::new()),
            JayType::Int8 => Box::new(FixedEncoder::<i8>::new(t.clone(), policy)),
            JayType::Int16 => Box::new(FixedEncoder::<i16>::new(t.clone(), policy)),
            JayType::Int32 | JayType::Date32 => {
                Box::new(FixedEncoder::<i32>::new(t.clone(), policy))
            }
            JayType::Int64 | JayType::Time64 => {
                Box::new(FixedEncoder::<i64>::new(t.clone(), policy))
            }
            JayType::Float32 => Box::new(FixedEncoder::<f32>::new(t.clone(), policy)),
            JayType::Float64 => Box::new(FixedEncoder::<f64>::new(t.clone(), policy)),
            JayType::Void0 => Box::new(VoidEncoder::default()),
            // `WriteMapping::for_arrow` maps text and lists to their own variants.
            JayType::Str32 => Box::new(TextEncoder::new(false, options)),
            JayType::Str64 => Box::new(TextEncoder::new(true, options)),
            JayType::Arr32(_) | JayType::Arr64(_) => return None,
        },
        WriteMapping::HalfToFloat32 => Box::new(FixedEncoder::<f32>::new(JayType::Float32, policy)),
        WriteMapping::Date64ToDate32 => Box::new(FixedEncoder::<i32>::new(JayType::Date32, policy)),
        WriteMapping::TimestampToTime64 { .. } => {
            Box::new(FixedEncoder::<i64>::new(JayType::Time64, policy))
        }
        WriteMapping::Text { large } => Box::new(TextEncoder::new(*large, options)),
        WriteMapping::List { large, element } => {
            let item_type = match data_type {
                DataType::List(f) | DataType::LargeList(f) => f.data_type().clone(),
                other => other.clone(),
            };
            Box::new(ListEncoder::new(
                *large,
                encoder_for(element, &item_type, options)?,
                options,
            ))
        }
    })
}

/// The nulls of an array, or `None` when it has none.
pub(crate) fn nulls_of(array: &dyn Array) -> Option<&NullBuffer> {
    array.nulls().filter(|n| n.null_count() > 0)
}

/// The 64-bit words of a bitmap with the number of meaningful bits in each.
pub(crate) fn bit_words(bits: &BooleanBuffer) -> impl Iterator<Item = (u64, u32)> + '_ {
    let chunks = bits.bit_chunks();
    let full = chunks.chunk_len();
    let rem = chunks.remainder_len() as u32;
    chunks
        .iter()
        .chain(std::iter::once(chunks.remainder_bits()))
        .enumerate()
        .map(move |(i, w)| (w, if i < full { 64 } else { rem }))
        .filter(|&(_, n)| n > 0)
}

// ---------------------------------------------------------------------------------------------
// Bool8

const BOOL_NA: u8 = 0x80;

struct BoolEncoder {
    data: Stream,
    rows: u64,
    nullcount: u64,
    any_true: bool,
    any_false: bool,
    bytes: Vec<u8>,
}

impl BoolEncoder {
    fn new() -> Self {
        BoolEncoder {
            data: Stream::new(),
            rows: 0,
            nullcount: 0,
            any_true: false,
            any_false: false,
            bytes: Vec::new(),
        }
    }
}

impl Encoder for BoolEncoder {
    fn append(&mut self, array: &dyn Array) -> Result<(), EncodeError> {
        let a = array
            .as_boolean_opt()
            .ok_or_else(|| EncodeError::mismatch(array, "Boolean"))?;
        let out = &mut self.bytes;
        out.clear();
        out.reserve(a.len());
        let (mut any_true, mut any_false) = (0u64, 0u64);
        let mut valid_count = 0u64;
        let mut put = |v: u64, m: u64, n: u32| {
            let mask = if n == 64 { u64::MAX } else { (1u64 << n) - 1 };
            let m = m & mask;
            any_true |= v & m;
            any_false |= !v & m;
            valid_count += m.count_ones() as u64;
            for b in 0..n {
                out.push(if (m >> b) & 1 == 1 {
                    ((v >> b) & 1) as u8
                } else {
                    BOOL_NA
                });
            }
        };
        match nulls_of(a) {
            None => bit_words(a.values()).for_each(|(v, n)| put(v, u64::MAX, n)),
            Some(nulls) => bit_words(a.values())
                .zip(bit_words(nulls.inner()))
                .for_each(|((v, n), (m, _))| put(v, m, n)),
        }
        self.any_true |= any_true != 0;
        self.any_false |= any_false != 0;
        self.nullcount += a.len() as u64 - valid_count;
        self.rows += a.len() as u64;
        self.data.push_vec(&mut self.bytes);
        Ok(())
    }

    fn held(&self) -> usize {
        self.data.held()
    }

    fn spill(&mut self, spool: &mut Spool) -> io::Result<()> {
        self.data.spill(spool)
    }

    fn direct_layout(&self, rows: u64, _text: u64) -> Option<Vec<u64>> {
        Some(vec![rows])
    }

    fn drain(&mut self, out: &mut dyn FnMut(usize, &[u8]) -> io::Result<()>) -> io::Result<()> {
        self.data.drain(&mut |b| out(0, b))
    }

    fn finish(self: Box<Self>) -> Finished {
        let na = BOOL_NA as i8;
        let (min, max) = match (self.any_false, self.any_true) {
            (false, false) => (na, na),
            (true, false) => (0, 0),
            (false, true) => (1, 1),
            (true, true) => (0, 1),
        };
        Finished {
            jay_type: JayType::Bool8,
            nrows: self.rows,
            nullcount: self.nullcount,
            stats: Some(StatsValue::Bool(min, max)),
            validity: None,
            data: vec![Buf::Plain(self.data)],
            child: None,
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Void0

#[derive(Default)]
struct VoidEncoder {
    rows: u64,
}

impl Encoder for VoidEncoder {
    fn append(&mut self, array: &dyn Array) -> Result<(), EncodeError> {
        if array.data_type() != &DataType::Null {
            return Err(EncodeError::mismatch(array, "Null"));
        }
        self.rows += array.len() as u64;
        Ok(())
    }
    fn held(&self) -> usize {
        0
    }
    fn spill(&mut self, _: &mut Spool) -> io::Result<()> {
        Ok(())
    }
    fn direct_layout(&self, _rows: u64, _text: u64) -> Option<Vec<u64>> {
        Some(Vec::new())
    }
    fn drain(&mut self, _: &mut dyn FnMut(usize, &[u8]) -> io::Result<()>) -> io::Result<()> {
        Ok(())
    }
    fn finish(self: Box<Self>) -> Finished {
        Finished {
            jay_type: JayType::Void0,
            nrows: self.rows,
            nullcount: self.rows,
            stats: None,
            validity: None,
            data: Vec::new(),
            child: None,
        }
    }
}
