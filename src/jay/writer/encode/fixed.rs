//! Fixed-width columns: Bool8 excepted, every integer (unsigned ones widened), float, Date32
//! (also from Date64) and Time64 (from any timestamp).

use std::io;

use arrow_array::cast::AsArray;
use arrow_array::types::{
    Date32Type, Date64Type, Float16Type, Float32Type, Float64Type, Int16Type, Int32Type, Int64Type,
    Int8Type, TimestampMicrosecondType, TimestampMillisecondType, TimestampNanosecondType,
    TimestampSecondType, UInt16Type, UInt32Type, UInt64Type, UInt8Type,
};
use arrow_array::{Array, ArrowPrimitiveType};
use arrow_buffer::{ArrowNativeType, NullBuffer, ScalarBuffer};
use arrow_schema::{DataType, TimeUnit};

use super::super::spool::{Spool, Stream};
use super::{bit_words, nulls_of, Buf, EncodeError, Encoder, Finished, StatsValue};
use crate::error::{Error, ErrorClass};
use crate::jay::mapping::JayType;
use crate::sentinel::{self, CollisionPolicy, Sentinel, SentinelSummary};

/// The values of a batch as the Jay type: the Arrow buffer itself, or converted into scratch.
pub(super) enum Extracted<T: ArrowNativeType> {
    Shared(ScalarBuffer<T>),
    Scratch,
}

/// A fixed-width Jay value type and the Arrow types that convert to it.
pub(super) trait Fixed:
    Sentinel + Default + Send + Sync + 'static + std::fmt::Display
{
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
    f: impl Fn(P::Native) -> Result<T, Error>,
) -> Result<Extracted<T>, EncodeError> {
    let a = array
        .as_primitive_opt::<P>()
        .ok_or_else(|| EncodeError::mismatch(array, "a primitive array"))?;
    scratch.clear();
    scratch.reserve(a.len());
    let values = a.values();
    let fail = |i: usize, e: Error| EncodeError::at(i, e.class(), e.message().to_owned());
    match nulls_of(a) {
        None => {
            for (i, &v) in values.iter().enumerate() {
                scratch.push(f(v).map_err(|e| fail(i, e))?);
            }
        }
        Some(nulls) => {
            for (i, &v) in values.iter().enumerate() {
                scratch.push(if nulls.is_valid(i) {
                    f(v).map_err(|e| fail(i, e))?
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

/// A value that the Jay type cannot hold.
fn out_of_range(message: String) -> Error {
    Error::new(ErrorClass::ValueOutOfRange, message)
}

fn date64_to_days(ms: i64) -> Result<i32, Error> {
    if ms % MS_PER_DAY != 0 {
        return Err(out_of_range(format!(
            "Date64 value {ms} ms is not a whole number of days; Jay's Date32 stores days only"
        )));
    }
    i32::try_from(ms / MS_PER_DAY).map_err(|_| {
        out_of_range(format!(
            "Date64 value {ms} ms is {} days, outside Jay's Date32 range",
            ms / MS_PER_DAY
        ))
    })
}

fn scale_to_ns(v: i64, factor: i64, unit: &str) -> Result<i64, Error> {
    v.checked_mul(factor).ok_or_else(|| {
        out_of_range(format!(
            "timestamp {v} {unit} does not fit Jay's Time64 (64-bit nanoseconds since 1970)"
        ))
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
                    out_of_range(format!(
                        "UInt64 value {v} does not fit Jay's Int64 (at most 2^63 - 1)"
                    ))
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
pub(super) struct FixedEncoder<T: Fixed> {
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
    pub(super) fn new(jay_type: JayType, policy: CollisionPolicy) -> Self {
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

    fn direct_layout(&self, rows: u64, _text: u64) -> Option<Vec<u64>> {
        Some(vec![rows * std::mem::size_of::<T>() as u64])
    }

    fn drain(&mut self, out: &mut dyn FnMut(usize, &[u8]) -> io::Result<()>) -> io::Result<()> {
        self.data.drain(&mut |b| out(0, b))
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
