//! Column encoders: Arrow arrays in, Jay column buffers out (spec B3.2–B3.5).
//!
//! One encoder per column (and per array child) accumulates the column across batches in
//! [`Stream`]s. Each `append` stores Jay's encoding of one batch (sentinels for nulls, NA bits
//! in string offsets, rebased offsets) and, while the batch is still in cache, counts the NAs
//! and tracks min/max: fixed-width values are copied once, their null slots overwritten, and
//! summarised in vectorisable passes; values without nulls are not copied at all. Encoders
//! touch no file: they run in parallel, and the writer moves their streams to the spool when
//! its memory limit is reached.

use std::io;

use arrow_array::cast::AsArray;
use arrow_array::types::{
    ArrowDictionaryKeyType, Date32Type, Date64Type, Float16Type, Float32Type, Float64Type,
    Int16Type, Int32Type, Int64Type, Int8Type, TimestampMicrosecondType, TimestampMillisecondType,
    TimestampNanosecondType, TimestampSecondType, UInt16Type, UInt32Type, UInt64Type, UInt8Type,
};
use arrow_array::{
    Array, ArrowPrimitiveType, GenericListArray, GenericStringArray, OffsetSizeTrait,
};
use arrow_buffer::{ArrowNativeType, BooleanBuffer, NullBuffer, ScalarBuffer};
use arrow_schema::{DataType, TimeUnit};

use super::spool::{BitStream, Spool, Stream};
use crate::error::ErrorClass;
use crate::jay::mapping::{JayType, WriteMapping};
use crate::sentinel::{self, CollisionPolicy, Sentinel, SentinelSummary};

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
fn nulls_of(array: &dyn Array) -> Option<&NullBuffer> {
    array.nulls().filter(|n| n.null_count() > 0)
}

// ---------------------------------------------------------------------------------------------
// Fixed-width columns

/// The values of a batch as the Jay type: the Arrow buffer itself, or converted into scratch.
enum Extracted<T: ArrowNativeType> {
    Shared(ScalarBuffer<T>),
    Scratch,
}

/// A fixed-width Jay value type and the Arrow types that convert to it.
trait Fixed: Sentinel + Default + Send + Sync + 'static + std::fmt::Display {
    fn extract(array: &dyn Array, scratch: &mut Vec<Self>) -> Result<Extracted<Self>, EncodeError>;
    /// NA count, minimum and maximum of stored values (the sentinel, or any NaN, is NA).
    fn summarize(values: &[Self]) -> SentinelSummary<Self>;
    fn stats(min: Self, max: Self) -> StatsValue;
}

fn same<P: ArrowPrimitiveType>(array: &dyn Array) -> Result<Extracted<P::Native>, EncodeError> {
    let a = array
        .as_primitive_opt::<P>()
        .ok_or_else(|| EncodeError::mismatch(array, "a primitive array"))?;
    Ok(Extracted::Shared(a.values().clone()))
}

/// Converts every valid value with `f`; null slots get a placeholder (they become sentinels).
fn convert<P: ArrowPrimitiveType, T: ArrowNativeType + Default>(
    array: &dyn Array,
    scratch: &mut Vec<T>,
    f: impl Fn(P::Native) -> Result<T, String>,
) -> Result<Extracted<T>, EncodeError> {
    let a = array
        .as_primitive_opt::<P>()
        .ok_or_else(|| EncodeError::mismatch(array, "a primitive array"))?;
    scratch.clear();
    scratch.reserve(a.len());
    let values = a.values();
    let fail = |i: usize, m: String| EncodeError::at(i, ErrorClass::ValueOutOfRange, m);
    match nulls_of(a) {
        None => {
            for (i, &v) in values.iter().enumerate() {
                scratch.push(f(v).map_err(|m| fail(i, m))?);
            }
        }
        Some(nulls) => {
            for (i, &v) in values.iter().enumerate() {
                scratch.push(if nulls.is_valid(i) {
                    f(v).map_err(|m| fail(i, m))?
                } else {
                    T::default()
                });
            }
        }
    }
    Ok(Extracted::Scratch)
}

/// NA count, min and max of stored integers, in passes the compiler vectorises. The sentinel
/// is the type's minimum, so it is never the maximum unless every value is NA.
fn summarize_int<T: Sentinel + Ord>(values: &[T]) -> SentinelSummary<T> {
    let mut na = 0u64;
    let mut max = T::NA;
    for block in values.chunks(4096) {
        let (n, m) = block.iter().fold((0u32, max), |(n, m), &v| {
            (n + (v == T::NA) as u32, m.max(v))
        });
        na += n as u64;
        max = m;
    }
    if na == values.len() as u64 {
        return SentinelSummary {
            na_count: na,
            min_max: None,
        };
    }
    let min = values
        .iter()
        .fold(max, |m, &v| if v != T::NA && v < m { v } else { m });
    SentinelSummary {
        na_count: na,
        min_max: Some((min, max)),
    }
}

/// NA count, min and max of stored floats (NaN is NA) with the tie rule of
/// `sentinel::encode_sentinels`: of −0.0 and +0.0 the first one met. Eight independent lanes
/// let the compiler vectorise; the sign of a zero result is then settled by the first zero.
macro_rules! summarize_float {
    ($name:ident, $t:ty) => {
        fn $name(values: &[$t]) -> SentinelSummary<$t> {
            const LANES: usize = 8;
            let mut lo = [<$t>::INFINITY; LANES];
            let mut hi = [<$t>::NEG_INFINITY; LANES];
            let mut nan = [0usize; LANES];
            let chunks = values.chunks_exact(LANES);
            let rest = chunks.remainder();
            for c in chunks {
                for j in 0..LANES {
                    lo[j] = lo[j].min(c[j]);
                    hi[j] = hi[j].max(c[j]);
                    nan[j] += c[j].is_nan() as usize;
                }
            }
            for &v in rest {
                lo[0] = lo[0].min(v);
                hi[0] = hi[0].max(v);
                nan[0] += v.is_nan() as usize;
            }
            let na = nan.iter().sum::<usize>() as u64;
            if na == values.len() as u64 {
                return SentinelSummary {
                    na_count: na,
                    min_max: None,
                };
            }
            let first_zero = || values.iter().copied().find(|&v| v == 0.0);
            let mut min = lo.iter().fold(<$t>::INFINITY, |a, &b| a.min(b));
            let mut max = hi.iter().fold(<$t>::NEG_INFINITY, |a, &b| a.max(b));
            if min == 0.0 {
                min = first_zero().unwrap_or(min);
            }
            if max == 0.0 {
                max = first_zero().unwrap_or(max);
            }
            SentinelSummary {
                na_count: na,
                min_max: Some((min, max)),
            }
        }
    };
}
summarize_float!(summarize_f32, f32);
summarize_float!(summarize_f64, f64);

/// The first valid value equal to the sentinel (never for floats: a NaN is no collision).
fn first_collision<T: Sentinel>(values: &[T], nulls: Option<&NullBuffer>) -> Option<usize> {
    if !T::NA.collides() || !sentinel::any_na(values) {
        return None;
    }
    values
        .iter()
        .enumerate()
        .position(|(i, v)| v.collides() && nulls.is_none_or(|n| n.is_valid(i)))
}

/// Overwrites the null slots of `values` with the sentinel, 64 validity bits at a time.
fn fill_nulls<T: Copy>(values: &mut [T], nulls: &NullBuffer, na: T) {
    let mut row = 0usize;
    for (word, n) in bit_words(nulls.inner()) {
        let mask = if n == 64 { u64::MAX } else { (1u64 << n) - 1 };
        let mut missing = !word & mask;
        while missing != 0 {
            values[row + missing.trailing_zeros() as usize] = na;
            missing &= missing - 1;
        }
        row += n as usize;
    }
}

const MS_PER_DAY: i64 = 86_400_000;

fn date64_to_days(ms: i64) -> Result<i32, String> {
    if ms % MS_PER_DAY != 0 {
        return Err(format!(
            "Date64 value {ms} ms is not a whole number of days; Jay's Date32 stores days only"
        ));
    }
    i32::try_from(ms / MS_PER_DAY).map_err(|_| {
        format!(
            "Date64 value {ms} ms is {} days, outside Jay's Date32 range",
            ms / MS_PER_DAY
        )
    })
}

fn scale_to_ns(v: i64, factor: i64, unit: &str) -> Result<i64, String> {
    v.checked_mul(factor).ok_or_else(|| {
        format!("timestamp {v} {unit} does not fit Jay's Time64 (64-bit nanoseconds since 1970)")
    })
}

impl Fixed for i8 {
    fn extract(array: &dyn Array, _: &mut Vec<i8>) -> Result<Extracted<i8>, EncodeError> {
        same::<Int8Type>(array)
    }
    fn summarize(values: &[i8]) -> SentinelSummary<i8> {
        summarize_int(values)
    }
    fn stats(min: i8, max: i8) -> StatsValue {
        StatsValue::Int8(min, max)
    }
}

impl Fixed for i16 {
    fn extract(array: &dyn Array, scratch: &mut Vec<i16>) -> Result<Extracted<i16>, EncodeError> {
        match array.data_type() {
            DataType::UInt8 => convert::<UInt8Type, _>(array, scratch, |v| Ok(v as i16)),
            _ => same::<Int16Type>(array),
        }
    }
    fn summarize(values: &[i16]) -> SentinelSummary<i16> {
        summarize_int(values)
    }
    fn stats(min: i16, max: i16) -> StatsValue {
        StatsValue::Int16(min, max)
    }
}

impl Fixed for i32 {
    fn extract(array: &dyn Array, scratch: &mut Vec<i32>) -> Result<Extracted<i32>, EncodeError> {
        match array.data_type() {
            DataType::Date32 => same::<Date32Type>(array),
            DataType::UInt16 => convert::<UInt16Type, _>(array, scratch, |v| Ok(v as i32)),
            DataType::Date64 => convert::<Date64Type, _>(array, scratch, date64_to_days),
            _ => same::<Int32Type>(array),
        }
    }
    fn summarize(values: &[i32]) -> SentinelSummary<i32> {
        summarize_int(values)
    }
    fn stats(min: i32, max: i32) -> StatsValue {
        StatsValue::Int32(min, max)
    }
}

impl Fixed for i64 {
    fn extract(array: &dyn Array, scratch: &mut Vec<i64>) -> Result<Extracted<i64>, EncodeError> {
        match array.data_type() {
            DataType::UInt32 => convert::<UInt32Type, _>(array, scratch, |v| Ok(v as i64)),
            DataType::UInt64 => convert::<UInt64Type, _>(array, scratch, |v| {
                i64::try_from(v).map_err(|_| {
                    format!("UInt64 value {v} does not fit Jay's Int64 (at most 2^63 - 1)")
                })
            }),
            DataType::Timestamp(TimeUnit::Nanosecond, _) => same::<TimestampNanosecondType>(array),
            DataType::Timestamp(TimeUnit::Microsecond, _) => {
                convert::<TimestampMicrosecondType, _>(array, scratch, |v| {
                    scale_to_ns(v, 1_000, "µs")
                })
            }
            DataType::Timestamp(TimeUnit::Millisecond, _) => {
                convert::<TimestampMillisecondType, _>(array, scratch, |v| {
                    scale_to_ns(v, 1_000_000, "ms")
                })
            }
            DataType::Timestamp(TimeUnit::Second, _) => {
                convert::<TimestampSecondType, _>(array, scratch, |v| {
                    scale_to_ns(v, 1_000_000_000, "s")
                })
            }
            _ => same::<Int64Type>(array),
        }
    }
    fn summarize(values: &[i64]) -> SentinelSummary<i64> {
        summarize_int(values)
    }
    fn stats(min: i64, max: i64) -> StatsValue {
        StatsValue::Int64(min, max)
    }
}

impl Fixed for f32 {
    fn extract(array: &dyn Array, scratch: &mut Vec<f32>) -> Result<Extracted<f32>, EncodeError> {
        match array.data_type() {
            DataType::Float16 => convert::<Float16Type, _>(array, scratch, |v| Ok(v.to_f32())),
            _ => same::<Float32Type>(array),
        }
    }
    fn summarize(values: &[f32]) -> SentinelSummary<f32> {
        summarize_f32(values)
    }
    fn stats(min: f32, max: f32) -> StatsValue {
        StatsValue::Float32(min, max)
    }
}

impl Fixed for f64 {
    fn extract(array: &dyn Array, _: &mut Vec<f64>) -> Result<Extracted<f64>, EncodeError> {
        same::<Float64Type>(array)
    }
    fn summarize(values: &[f64]) -> SentinelSummary<f64> {
        summarize_f64(values)
    }
    fn stats(min: f64, max: f64) -> StatsValue {
        StatsValue::Float64(min, max)
    }
}

/// Bool8 excepted, every fixed-width column: integers (widened), floats, Date32, Time64.
struct FixedEncoder<T: Fixed> {
    jay_type: JayType,
    policy: CollisionPolicy,
    data: Stream,
    rows: u64,
    summary: SentinelSummary<T>,
    /// Converted values (for types that need a conversion).
    converted: Vec<T>,
    /// Values with sentinels (for batches with nulls or collisions).
    encoded: Vec<T>,
}

impl<T: Fixed> FixedEncoder<T> {
    fn new(jay_type: JayType, policy: CollisionPolicy) -> Self {
        FixedEncoder {
            jay_type,
            policy,
            data: Stream::new(),
            rows: 0,
            summary: SentinelSummary::empty(),
            converted: Vec::new(),
            encoded: Vec::new(),
        }
    }

    fn collision(&self, index: usize, value: T) -> EncodeError {
        EncodeError::at(
            index,
            ErrorClass::SentinelCollision,
            format!(
                "value {value} equals the NA sentinel of Jay's {} type, so it would read back as null; \
                 write collisions as nulls to store it anyway",
                self.jay_type
            ),
        )
    }
}

impl<T: Fixed> Encoder for FixedEncoder<T> {
    fn append(&mut self, array: &dyn Array) -> Result<(), EncodeError> {
        let extracted = T::extract(array, &mut self.converted)?;
        let nulls = nulls_of(array);
        {
            let values: &[T] = match &extracted {
                Extracted::Shared(buffer) => buffer,
                Extracted::Scratch => &self.converted,
            };
            // A valid value equal to the sentinel already is the sentinel's bit pattern, so
            // under `AsNull` it needs no rewriting: it is stored, and counted, as NA.
            if let Some(i) = first_collision(values, nulls) {
                if self.policy == CollisionPolicy::Error {
                    return Err(self.collision(i, values[i]));
                }
            }
        }
        self.rows += array.len() as u64;
        match (extracted, nulls) {
            (Extracted::Shared(buffer), None) => {
                self.summary.merge(&T::summarize(&buffer));
                self.data.push_buffer(buffer.into_inner());
            }
            (Extracted::Shared(buffer), Some(nulls)) => {
                self.encoded.clear();
                self.encoded.extend_from_slice(&buffer);
                fill_nulls(&mut self.encoded, nulls, T::NA);
                self.summary.merge(&T::summarize(&self.encoded));
                self.data.push_vec(&mut self.encoded);
            }
            (Extracted::Scratch, nulls) => {
                if let Some(nulls) = nulls {
                    fill_nulls(&mut self.converted, nulls, T::NA);
                }
                self.summary.merge(&T::summarize(&self.converted));
                self.data.push_vec(&mut self.converted);
            }
        }
        Ok(())
    }

    fn held(&self) -> usize {
        self.data.held()
    }

    fn spill(&mut self, spool: &mut Spool) -> io::Result<()> {
        self.data.spill(spool)
    }

    fn finish(self: Box<Self>) -> Finished {
        let (min, max) = self.summary.min_max.unwrap_or((T::NA, T::NA));
        Finished {
            jay_type: self.jay_type,
            nrows: self.rows,
            nullcount: self.summary.na_count,
            stats: Some(T::stats(min, max)),
            validity: None,
            data: vec![Buf::Plain(self.data)],
            child: None,
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Bool8

/// The 64-bit words of a bitmap with the number of meaningful bits in each.
fn bit_words(bits: &BooleanBuffer) -> impl Iterator<Item = (u64, u32)> + '_ {
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

// ---------------------------------------------------------------------------------------------
// Offsets (strings and arrays)

/// An offset as stored: u32 with the NA bit 31, or u64 with the NA bit 63.
trait OffsetWord: ArrowNativeType {
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
struct Offsets {
    narrow: Stream,
    wide: Stream,
    wide_mode: bool,
    scratch32: Vec<u32>,
    scratch64: Vec<u64>,
}

impl Offsets {
    /// Starts the offsets with the leading 0.
    fn new(wide: bool) -> Offsets {
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

    fn flush(&mut self) {
        self.narrow.push_vec(&mut self.scratch32);
        self.wide.push_vec(&mut self.scratch64);
    }

    fn held(&self) -> usize {
        self.narrow.held() + self.wide.held()
    }

    fn spill(&mut self, spool: &mut Spool) -> io::Result<()> {
        self.narrow.spill(spool)?;
        self.wide.spill(spool)
    }

    fn finish(self) -> Buf {
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
fn first_decrease<O: ArrowNativeType + PartialOrd>(offsets: &[O]) -> Option<usize> {
    let ok = offsets.windows(2).fold(true, |ok, w| ok & (w[0] <= w[1]));
    if ok {
        None
    } else {
        offsets.windows(2).position(|w| w[0] > w[1])
    }
}

fn bad_offsets(index: usize, what: &str) -> EncodeError {
    EncodeError::at(
        index,
        ErrorClass::BadOffsets,
        format!("the Arrow array's {what} offsets are invalid at this row"),
    )
}

// ---------------------------------------------------------------------------------------------
// Text: Utf8, LargeUtf8, Utf8View, dictionaries of those

struct TextEncoder {
    limit: u64,
    offsets: Offsets,
    bytes: Stream,
    /// Text bytes so far (the last offset).
    end: u64,
    rows: u64,
    nullcount: u64,
    /// Dictionary indices of the current batch.
    indices: Vec<usize>,
}

impl TextEncoder {
    fn new(large: bool, options: EncodeOptions) -> Self {
        TextEncoder {
            limit: options.offset32_limit,
            offsets: Offsets::new(large),
            bytes: Stream::new(),
            end: 0,
            rows: 0,
            nullcount: 0,
            indices: Vec::new(),
        }
    }

    /// Switches to 64-bit offsets if the column, with `rows` more rows and `text` more bytes,
    /// would outgrow Str32 (A5.2). The whole column is then written as Str64.
    fn fit(&mut self, rows: usize, text: u64) {
        if !self.offsets.wide_mode
            && (self.end.saturating_add(text) > self.limit
                || self.rows.saturating_add(rows as u64) > self.limit)
        {
            self.offsets.wide_mode = true;
        }
    }

    fn append_offsets_array<O: OffsetSizeTrait>(
        &mut self,
        a: &GenericStringArray<O>,
    ) -> Result<(), EncodeError> {
        let n = a.len();
        let offs = a.value_offsets();
        let values = a.values();
        // Arrow guarantees this for arrays built safely; checking it once makes the loops below
        // free of checks and of any risk of panicking on a hand-made array.
        if let Some(i) = first_decrease(offs) {
            return Err(bad_offsets(i, "string"));
        }
        let (first, last) = (offs[0].as_usize(), offs[n].as_usize());
        if last > values.len() {
            return Err(bad_offsets(n.saturating_sub(1), "string"));
        }
        let nulls = nulls_of(a);
        let slots = (last - first) as u64;
        let text = match nulls {
            Some(nulls) if self.end.saturating_add(slots) > self.limit => (0..n)
                .filter(|&i| nulls.is_valid(i))
                .map(|i| (offs[i + 1].as_usize() - offs[i].as_usize()) as u64)
                .sum(),
            _ => slots,
        };
        self.fit(n, text);
        let base = self.end;
        let bytes = &mut self.bytes;
        let end =
            with_offsets!(self.offsets, |out: W| {
                out.reserve(n);
                match nulls {
                    None => {
                        bytes.push_buffer(values.slice_with_length(first, last - first));
                        let shift = base.wrapping_sub(first as u64);
                        out.extend(
                            offs[1..]
                                .iter()
                                .map(|o| W::from_end((o.as_usize() as u64).wrapping_add(shift))),
                        );
                        base + slots
                    }
                    Some(nulls) => {
                        let mut end = base;
                        // A run of source bytes still to copy, [run_start, run_end): the bytes of
                        // consecutive valid rows, interrupted only where a null slot holds bytes.
                        let (mut run_start, mut run_end) = (first, first);
                        let mut flush = |from: usize, to: usize| {
                            if to > from {
                                bytes.push_buffer(values.slice_with_length(from, to - from));
                            }
                        };
                        // Valid rows [from, to): one shift of their offsets, one run of bytes.
                        let mut valid_rows =
                            |from: usize, to: usize, end: &mut u64, out: &mut Vec<W>| {
                                let (s, e) = (offs[from].as_usize(), offs[to].as_usize());
                                if s != run_end {
                                    flush(run_start, run_end);
                                    run_start = s;
                                }
                                run_end = e;
                                let shift = end.wrapping_sub(s as u64);
                                out.extend(offs[from + 1..=to].iter().map(|o| {
                                    W::from_end((o.as_usize() as u64).wrapping_add(shift))
                                }));
                                *end += (e - s) as u64;
                            };
                        let mut row = 0usize;
                        for (word, k) in bit_words(nulls.inner()) {
                            let k = k as usize;
                            let mut b = 0usize;
                            while b < k {
                                let ones = ((word >> b).trailing_ones() as usize).min(k - b);
                                if ones > 0 {
                                    valid_rows(row + b, row + b + ones, &mut end, out);
                                    b += ones;
                                }
                                if b < k {
                                    out.push(W::from_end(end).with_na());
                                    b += 1;
                                }
                            }
                            row += k;
                        }
                        flush(run_start, run_end);
                        end
                    }
                }
            });
        self.nullcount += nulls.map_or(0, |n| n.null_count()) as u64;
        self.end = end;
        Ok(())
    }

    /// Text given row by row (views, dictionaries): `row(i)` is `None` for NA.
    fn append_rows<'a>(
        &mut self,
        n: usize,
        row: impl Fn(usize) -> Option<&'a [u8]>,
    ) -> Result<(), EncodeError> {
        let text: u64 = (0..n).filter_map(&row).map(|r| r.len() as u64).sum();
        self.fit(n, text);
        let mut end = self.end;
        let mut nulls = 0u64;
        let bytes = &mut self.bytes;
        with_offsets!(self.offsets, |out: W| {
            out.reserve(n);
            for i in 0..n {
                match row(i) {
                    Some(r) => {
                        bytes.push_slice(r);
                        end += r.len() as u64;
                        out.push(W::from_end(end));
                    }
                    None => {
                        nulls += 1;
                        out.push(W::from_end(end).with_na());
                    }
                }
            }
        });
        self.end = end;
        self.nullcount += nulls;
        Ok(())
    }

    fn append_dictionary<K: ArrowDictionaryKeyType>(
        &mut self,
        array: &dyn Array,
    ) -> Result<bool, EncodeError> {
        let Some(dict) = array.as_dictionary_opt::<K>() else {
            return Ok(false);
        };
        let values = dict.values();
        let keys = dict.keys();
        let nv = values.len();
        let mut indices = std::mem::take(&mut self.indices);
        indices.clear();
        indices.reserve(keys.len());
        for (i, k) in keys.iter().enumerate() {
            indices.push(match k {
                None => usize::MAX,
                Some(k) => match k.to_usize() {
                    Some(k) if k < nv => k,
                    _ => {
                        return Err(EncodeError::at(
                            i,
                            ErrorClass::BadValue,
                            format!("dictionary key {k:?} is outside the {nv} dictionary values"),
                        ))
                    }
                },
            });
        }
        let result = match text_source(values.as_ref()) {
            Some(source) => self.append_rows(indices.len(), |i| match indices[i] {
                usize::MAX => None,
                k => source.get(k),
            }),
            None => Err(EncodeError::mismatch(
                values.as_ref(),
                "text dictionary values",
            )),
        };
        self.indices = indices;
        result.map(|_| true)
    }
}

/// Row access to any of Arrow's three string layouts.
enum TextSource<'a> {
    Utf8(&'a GenericStringArray<i32>),
    Large(&'a GenericStringArray<i64>),
    View(&'a arrow_array::StringViewArray),
}

fn text_source(array: &dyn Array) -> Option<TextSource<'_>> {
    match array.data_type() {
        DataType::Utf8 => array.as_string_opt::<i32>().map(TextSource::Utf8),
        DataType::LargeUtf8 => array.as_string_opt::<i64>().map(TextSource::Large),
        DataType::Utf8View => array.as_string_view_opt().map(TextSource::View),
        _ => None,
    }
}

impl<'a> TextSource<'a> {
    #[inline]
    fn get(&self, i: usize) -> Option<&'a [u8]> {
        match self {
            TextSource::Utf8(a) => a.is_valid(i).then(|| a.value(i).as_bytes()),
            TextSource::Large(a) => a.is_valid(i).then(|| a.value(i).as_bytes()),
            TextSource::View(a) => a.is_valid(i).then(|| a.value(i).as_bytes()),
        }
    }
}

impl Encoder for TextEncoder {
    fn append(&mut self, array: &dyn Array) -> Result<(), EncodeError> {
        let n = array.len();
        match array.data_type() {
            DataType::Utf8 => self.append_offsets_array(array.as_string::<i32>())?,
            DataType::LargeUtf8 => self.append_offsets_array(array.as_string::<i64>())?,
            DataType::Utf8View => {
                let a = array.as_string_view();
                self.append_rows(n, |i| a.is_valid(i).then(|| a.value(i).as_bytes()))?
            }
            DataType::Dictionary(key, _) => {
                let done = match key.as_ref() {
                    DataType::Int8 => self.append_dictionary::<Int8Type>(array)?,
                    DataType::Int16 => self.append_dictionary::<Int16Type>(array)?,
                    DataType::Int32 => self.append_dictionary::<Int32Type>(array)?,
                    DataType::Int64 => self.append_dictionary::<Int64Type>(array)?,
                    DataType::UInt8 => self.append_dictionary::<UInt8Type>(array)?,
                    DataType::UInt16 => self.append_dictionary::<UInt16Type>(array)?,
                    DataType::UInt32 => self.append_dictionary::<UInt32Type>(array)?,
                    DataType::UInt64 => self.append_dictionary::<UInt64Type>(array)?,
                    _ => false,
                };
                if !done {
                    return Err(EncodeError::mismatch(array, "a dictionary of text"));
                }
            }
            _ => return Err(EncodeError::mismatch(array, "text")),
        }
        self.rows += n as u64;
        self.offsets.flush();
        Ok(())
    }

    fn held(&self) -> usize {
        self.offsets.held() + self.bytes.held()
    }

    fn spill(&mut self, spool: &mut Spool) -> io::Result<()> {
        self.offsets.spill(spool)?;
        self.bytes.spill(spool)
    }

    fn finish(self: Box<Self>) -> Finished {
        let jay_type = if self.offsets.wide_mode {
            JayType::Str64
        } else {
            JayType::Str32
        };
        Finished {
            jay_type,
            nrows: self.rows,
            nullcount: self.nullcount,
            stats: None,
            validity: None,
            data: vec![self.offsets.finish(), Buf::Plain(self.bytes)],
            child: None,
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Arrays: List, LargeList

struct ListEncoder {
    limit: u64,
    validity: BitStream,
    offsets: Offsets,
    /// Child elements so far (the last offset).
    end: u64,
    rows: u64,
    null_lists: u64,
    child: Box<dyn Encoder>,
    /// Ranges of child elements that the current batch's valid lists refer to.
    ranges: Vec<(usize, usize)>,
}

impl ListEncoder {
    fn new(large: bool, child: Box<dyn Encoder>, options: EncodeOptions) -> Self {
        ListEncoder {
            limit: options.offset32_limit,
            validity: BitStream::new(),
            offsets: Offsets::new(large),
            end: 0,
            rows: 0,
            null_lists: 0,
            child,
            ranges: Vec::new(),
        }
    }

    fn append_list<O: OffsetSizeTrait>(
        &mut self,
        a: &GenericListArray<O>,
    ) -> Result<(), EncodeError> {
        let n = a.len();
        let offs = a.value_offsets();
        let child_len = a.values().len();
        let nulls = nulls_of(a);
        let valid = |i: usize| nulls.is_none_or(|nb| nb.is_valid(i));

        // Pass 1: check the offsets, gather the child ranges of valid lists (the elements of a
        // null list are dropped), count the elements.
        self.ranges.clear();
        let mut kept = 0u64;
        for i in 0..n {
            let (s, e) = (offs[i].as_usize(), offs[i + 1].as_usize());
            if e < s || e > child_len {
                return Err(bad_offsets(i, "list"));
            }
            if !valid(i) || s == e {
                continue;
            }
            kept += (e - s) as u64;
            match self.ranges.last_mut() {
                Some(last) if last.1 == s => last.1 = e,
                _ => self.ranges.push((s, e)),
            }
        }
        if !self.offsets.wide_mode && self.end.saturating_add(kept) > self.limit {
            self.offsets.wide_mode = true;
        }

        // The child first: if one of its values cannot be written, nothing of this batch is.
        for &(s, e) in &self.ranges {
            let slice = a.values().slice(s, e - s);
            self.child.append(slice.as_ref()).map_err(|err| {
                let Some(j) = err.index else { return err };
                let element = s + j;
                let row = offs
                    .partition_point(|o| o.as_usize() <= element)
                    .saturating_sub(1);
                let within = element - offs[row].as_usize();
                EncodeError {
                    class: err.class,
                    index: Some(row),
                    message: format!("element {within} of the list: {}", err.message),
                }
            })?;
        }

        // Pass 2: validity and offsets.
        match nulls {
            None => self.validity.push_ones(n as u64),
            Some(nb) => {
                for (w, k) in bit_words(nb.inner()) {
                    self.validity.push_bits(w, k);
                }
            }
        }
        self.validity.flush_words();
        let mut end = self.end;
        with_offsets!(self.offsets, |out: W| {
            out.reserve(n);
            for i in 0..n {
                if valid(i) {
                    end += (offs[i + 1].as_usize() - offs[i].as_usize()) as u64;
                }
                out.push(W::from_end(end));
            }
        });
        self.offsets.flush();
        self.end = end;
        self.rows += n as u64;
        self.null_lists += nulls.map_or(0, |nb| nb.null_count()) as u64;
        Ok(())
    }
}

impl Encoder for ListEncoder {
    fn append(&mut self, array: &dyn Array) -> Result<(), EncodeError> {
        match array.data_type() {
            DataType::List(_) => self.append_list(array.as_list::<i32>()),
            DataType::LargeList(_) => self.append_list(array.as_list::<i64>()),
            _ => Err(EncodeError::mismatch(array, "a list")),
        }
    }

    fn held(&self) -> usize {
        self.validity.held() + self.offsets.held() + self.child.held()
    }

    fn spill(&mut self, spool: &mut Spool) -> io::Result<()> {
        self.validity.spill(spool)?;
        self.offsets.spill(spool)?;
        self.child.spill(spool)
    }

    fn finish(self: Box<Self>) -> Finished {
        let this = *self;
        let child = this.child.finish();
        let element = Box::new(child.jay_type.clone());
        let jay_type = if this.offsets.wide_mode {
            JayType::Arr64(element)
        } else {
            JayType::Arr32(element)
        };
        let validity = (this.null_lists > 0).then(|| this.validity.finish());
        Finished {
            jay_type,
            nrows: this.rows,
            nullcount: this.null_lists,
            stats: None,
            validity,
            data: vec![this.offsets.finish()],
            child: Some(Box::new(child)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sentinel::encode_sentinels;
    use arrow_array::PrimitiveArray;
    use arrow_buffer::ToByteSlice;

    /// Reproducible pseudo-random numbers.
    fn noise(seed: u64) -> impl FnMut() -> u64 {
        let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
        move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        }
    }

    /// The bytes, NA count and stats the fast fixed-width path stores equal those of the
    /// reference `sentinel::encode_sentinels`, collisions included.
    fn same_as_reference<P>(pick: impl Fn(u64) -> P::Native)
    where
        P: arrow_array::ArrowPrimitiveType,
        P::Native: Fixed,
    {
        for seed in 0..300u64 {
            let mut r = noise(seed);
            let n = (r() % 300) as usize;
            let null_pct = [0, 3, 50, 100][seed as usize % 4];
            let values: Vec<P::Native> = (0..n).map(|_| pick(r())).collect();
            let valid: Vec<bool> = (0..n).map(|_| r() % 100 >= null_pct).collect();
            let skip = (seed % 5) as usize;
            let array = PrimitiveArray::<P>::new(values.into(), Some(NullBuffer::from(valid)));
            let array = array.slice(skip.min(n), n - skip.min(n));
            for policy in [CollisionPolicy::Error, CollisionPolicy::AsNull] {
                let nulls = nulls_of(&array);
                let mut want_values = Vec::new();
                let want = encode_sentinels(array.values(), nulls, policy, &mut want_values);
                let mut encoder = FixedEncoder::<P::Native>::new(JayType::Int32, policy);
                let got = encoder.append(&array);
                match want {
                    Err(c) => assert_eq!(got.unwrap_err().index, Some(c.index), "seed {seed}"),
                    Ok(want) => {
                        got.unwrap();
                        let mut spool = Spool::new(std::env::temp_dir());
                        let mut bytes = Vec::new();
                        encoder
                            .data
                            .for_each_chunk(&mut spool, 1, |c| {
                                bytes.extend_from_slice(c);
                                Ok(())
                            })
                            .unwrap();
                        let want_bytes: Vec<u8> = want_values
                            .iter()
                            .flat_map(|v| v.to_byte_slice().to_vec())
                            .collect();
                        assert_eq!(bytes, want_bytes, "seed {seed}");
                        let got = encoder.summary;
                        assert_eq!(got.na_count, want.na_count, "seed {seed}");
                        match (got.min_max, want.min_max) {
                            (None, None) => {}
                            (Some((a, b)), Some((c, d))) => {
                                // Bitwise: the sign of a zero counts.
                                assert_eq!(
                                    [a, b].to_byte_slice(),
                                    [c, d].to_byte_slice(),
                                    "seed {seed}: {a} {b} vs {c} {d}"
                                );
                            }
                            other => panic!("seed {seed}: {other:?}"),
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn fast_fixed_path_matches_encode_sentinels() {
        same_as_reference::<arrow_array::types::Int32Type>(|x| match x % 50 {
            0 => i32::MIN,
            1 => i32::MAX,
            _ => (x >> 8) as i32 % 1000,
        });
        same_as_reference::<arrow_array::types::Int8Type>(|x| (x >> 3) as i8);
        let float = |x: u64| match x % 13 {
            0 => f64::NAN,
            1 => -0.0,
            2 => 0.0,
            3 => f64::INFINITY,
            4 => f64::NEG_INFINITY,
            _ => ((x >> 11) % 2000) as f64 / 7.0 - 100.0,
        };
        same_as_reference::<arrow_array::types::Float64Type>(float);
        same_as_reference::<arrow_array::types::Float32Type>(move |x| float(x) as f32);
    }
}
