//! Missing values: legacy formats mark them in-band with a sentinel value (or NaN), Arrow with
//! a validity bitmap. These helpers convert one into the other in a single linear pass, and are
//! shared by every format that uses sentinels.

use arrow_buffer::{ArrowNativeType, BooleanBuffer, Buffer, MutableBuffer, NullBuffer};

/// A fixed-width value type with an in-band missing-value marker.
pub trait Sentinel: ArrowNativeType + PartialOrd {
    /// The value a writer stores for a missing value.
    const NA: Self;
    /// Floats: every NaN is missing, and a validity bitmap does not make a NaN valid.
    const IS_FLOAT: bool;
    /// Whether a stored value means "missing". For floats every NaN does.
    fn is_na(self) -> bool;
    /// Whether a valid Arrow value cannot be stored because it reads back as missing.
    /// Floats never collide: a NaN is stored as NaN and its loss is documented.
    fn collides(self) -> bool;
}

macro_rules! integer_sentinel {
    ($($t:ty),*) => {$(
        impl Sentinel for $t {
            const NA: Self = <$t>::MIN;
            const IS_FLOAT: bool = false;
            #[inline(always)]
            fn is_na(self) -> bool { self == <$t>::MIN }
            #[inline(always)]
            fn collides(self) -> bool { self == <$t>::MIN }
        }
    )*};
}
integer_sentinel!(i8, i16, i32, i64);

macro_rules! float_sentinel {
    ($($t:ty),*) => {$(
        impl Sentinel for $t {
            const NA: Self = <$t>::NAN;
            const IS_FLOAT: bool = true;
            #[inline(always)]
            #[allow(clippy::eq_op)]
            fn is_na(self) -> bool { self != self }
            #[inline(always)]
            fn collides(self) -> bool { false }
        }
    )*};
}
float_sentinel!(f32, f64);

/// Packs `len` booleans, produced by `bit(i)`, into an Arrow bitmap (LSB first), 64 at a time.
#[inline]
pub fn pack_bits(len: usize, mut bit: impl FnMut(usize) -> bool) -> BooleanBuffer {
    let words = len.div_ceil(64);
    let mut buffer = MutableBuffer::new(words * 8);
    let full = len / 64;
    for w in 0..full {
        let base = w * 64;
        let mut word = 0u64;
        for b in 0..64 {
            word |= (bit(base + b) as u64) << b;
        }
        buffer.push(word);
    }
    if len % 64 != 0 {
        let base = full * 64;
        let mut word = 0u64;
        for b in 0..len % 64 {
            word |= (bit(base + b) as u64) << b;
        }
        buffer.push(word);
    }
    BooleanBuffer::new(buffer.into(), 0, len)
}

/// The validity of `values` where every sentinel (NaN for floats) is a null, or `None` when no
/// value is missing (so that a column without nulls carries no bitmap at all).
pub fn validity_from_sentinels<T: Sentinel>(values: &[T]) -> Option<NullBuffer> {
    if !any_na(values) {
        return None;
    }
    Some(NullBuffer::new(pack_bits(values.len(), |i| {
        !values[i].is_na()
    })))
}

/// Whether any value is a sentinel, checked in blocks the compiler can vectorise.
#[inline]
pub fn any_na<T: Sentinel>(values: &[T]) -> bool {
    values
        .chunks(256)
        .any(|block| block.iter().fold(false, |acc, v| acc | v.is_na()))
}

/// Combines two validities: a row is valid only where both say so.
pub fn intersect_validity(a: Option<NullBuffer>, b: Option<NullBuffer>) -> Option<NullBuffer> {
    let combined = NullBuffer::union(a.as_ref(), b.as_ref())?;
    (combined.null_count() > 0).then_some(combined)
}

/// Reads an LSB-first bitmap of `len` bits starting at bit 0 of `bytes` as a validity, or
/// `None` when every bit is set. `bytes` must hold at least `len` bits.
pub fn validity_from_bitmap(bytes: Buffer, offset: usize, len: usize) -> Option<NullBuffer> {
    let nulls = NullBuffer::new(BooleanBuffer::new(bytes, offset, len));
    (nulls.null_count() > 0).then_some(nulls)
}

/// What a writer does with a valid value that equals the target's missing-value sentinel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CollisionPolicy {
    /// Refuse to write: the value would silently read back as missing.
    #[default]
    Error,
    /// Store it as missing and count it as such.
    AsNull,
}

/// A valid value at `index` that equals the sentinel, under [`CollisionPolicy::Error`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Collision {
    /// Row of the colliding value.
    pub index: usize,
}

/// What one pass of [`encode_sentinels`] learnt about the values it wrote.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SentinelSummary<T> {
    /// Rows stored as missing: nulls, NaNs and collisions turned into nulls.
    pub na_count: u64,
    /// Smallest and largest non-missing value, in order of first occurrence for ties
    /// (so of −0.0 and +0.0 the first one met is kept).
    pub min_max: Option<(T, T)>,
}

impl<T: Sentinel> SentinelSummary<T> {
    /// The summary of no values.
    pub fn empty() -> Self {
        SentinelSummary {
            na_count: 0,
            min_max: None,
        }
    }

    /// Folds the summary of a later part of the same column into this one.
    pub fn merge(&mut self, later: &SentinelSummary<T>) {
        self.na_count += later.na_count;
        if let Some((lo, hi)) = later.min_max {
            self.include_range(lo, hi);
        }
    }

    #[inline(always)]
    fn include_range(&mut self, lo: T, hi: T) {
        match &mut self.min_max {
            None => self.min_max = Some((lo, hi)),
            Some((min, max)) => {
                if lo < *min {
                    *min = lo;
                }
                if hi > *max {
                    *max = hi;
                }
            }
        }
    }
}

/// Appends `values` to `out` with every null replaced by the sentinel, in one pass that also
/// counts what is stored as missing and finds the minimum and maximum of the rest.
pub fn encode_sentinels<T: Sentinel>(
    values: &[T],
    validity: Option<&NullBuffer>,
    policy: CollisionPolicy,
    out: &mut Vec<T>,
) -> Result<SentinelSummary<T>, Collision> {
    out.reserve(values.len());
    let mut summary = SentinelSummary::empty();
    let mut na_count = 0u64;
    let mut min_max: Option<(T, T)> = None;
    for (i, &v) in values.iter().enumerate() {
        let valid = validity.is_none_or(|n| n.is_valid(i));
        let stored = if !valid {
            T::NA
        } else if v.collides() {
            match policy {
                CollisionPolicy::Error => return Err(Collision { index: i }),
                CollisionPolicy::AsNull => T::NA,
            }
        } else {
            v
        };
        out.push(stored);
        if stored.is_na() {
            na_count += 1;
        } else {
            match &mut min_max {
                None => min_max = Some((stored, stored)),
                Some((min, max)) => {
                    if stored < *min {
                        *min = stored;
                    }
                    if stored > *max {
                        *max = stored;
                    }
                }
            }
        }
    }
    summary.na_count = na_count;
    summary.min_max = min_max;
    Ok(summary)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sentinels_become_nulls_and_back() {
        let stored = [1i32, i32::MIN, 3, i32::MIN];
        let validity = validity_from_sentinels(&stored).unwrap();
        assert_eq!(validity.null_count(), 2);
        assert!(validity.is_valid(0) && validity.is_null(1) && validity.is_null(3));

        let mut out = Vec::new();
        let summary = encode_sentinels(
            &[1, 0, 3, 0],
            Some(&validity),
            CollisionPolicy::Error,
            &mut out,
        )
        .unwrap();
        assert_eq!(out, stored);
        assert_eq!(summary.na_count, 2);
        assert_eq!(summary.min_max, Some((1, 3)));
    }

    #[test]
    fn no_sentinel_means_no_bitmap() {
        assert!(validity_from_sentinels(&[0i64, 1, i64::MAX]).is_none());
        assert!(validity_from_sentinels::<f64>(&[]).is_none());
        let v = validity_from_sentinels(
            &(0..1000)
                .map(|i| if i == 999 { f64::NAN } else { 1.0 })
                .collect::<Vec<_>>(),
        )
        .unwrap();
        assert_eq!(v.null_count(), 1);
        assert!(v.is_null(999));
    }

    #[test]
    fn collisions_follow_the_policy() {
        let mut out = Vec::new();
        let err = encode_sentinels(&[5i8, i8::MIN], None, CollisionPolicy::Error, &mut out);
        assert_eq!(err, Err(Collision { index: 1 }));
        out.clear();
        let ok =
            encode_sentinels(&[5i8, i8::MIN], None, CollisionPolicy::AsNull, &mut out).unwrap();
        assert_eq!(ok.na_count, 1);
        assert_eq!(ok.min_max, Some((5, 5)));
    }

    #[test]
    fn floats_keep_nan_and_first_signed_zero() {
        let mut out = Vec::new();
        let s = encode_sentinels(
            &[-0.0f64, 0.0, f64::NAN, f64::INFINITY],
            None,
            CollisionPolicy::Error,
            &mut out,
        )
        .unwrap();
        assert_eq!(s.na_count, 1);
        let (min, max) = s.min_max.unwrap();
        assert!(min == 0.0 && min.is_sign_negative());
        assert_eq!(max, f64::INFINITY);
    }
}
