//! Numbers of an extent as packed (§10): doubles relative to `opt_doublebase`, other-relative
//! and self-relative deltas, `pack_scale`, then written into the records in the file's byte
//! order.

use arrow_array::cast::AsArray;
use arrow_array::types::{ArrowPrimitiveType, Float64Type, Int32Type, Int64Type};
use arrow_array::ArrayRef;

use super::null_rows;
use crate::dataseries::byte_order::ByteOrder;
use crate::dataseries::types::{ExtentType, Kind, Relative};

/// Numeric values of one field of an extent while they are packed.
#[derive(Clone)]
enum Nums {
    I32(Vec<i32>),
    I64(Vec<i64>),
    F64(Vec<f64>),
}

/// Numbers (§10): the originals (doubles relative to opt_doublebase; nulls are 0), then
/// other-relative and self-relative deltas and pack_scale, then into the records.
pub(super) fn pack_numbers(
    t: &ExtentType,
    visible: &[(usize, Vec<&ArrayRef>)],
    fixed: &mut [u8],
    n: usize,
    order: ByteOrder,
) {
    let rs = t.record_size;
    let mut nums: Vec<Option<Nums>> = vec![None; t.fields.len()];
    for (fi, slices) in visible {
        let f = &t.fields[*fi];
        nums[*fi] = match f.kind {
            Kind::Int32 => Some(Nums::I32(gather::<Int32Type, _>(slices, n, |x| x))),
            Kind::Int64 => Some(Nums::I64(gather::<Int64Type, _>(slices, n, |x| x))),
            Kind::Double => Some(Nums::F64(match f.doublebase {
                // No arithmetic without a base: `x - 0.0` turns a signalling NaN into a quiet
                // one, and a value's bits must come back as they were.
                None => gather::<Float64Type, _>(slices, n, |x| x),
                Some(b) => gather::<Float64Type, _>(slices, n, |x| x - b),
            })),
            _ => None,
        };
    }
    // Other-relative fields are packed against their base's original values: keep those.
    let mut originals: Vec<Option<Nums>> = vec![None; t.fields.len()];
    for f in &t.fields {
        if let Some(Relative::Other(b)) = f.relative {
            if originals[b].is_none() {
                originals[b] = nums[b].clone();
            }
        }
    }
    // With null compaction a null value is not stored, so it takes no part in the deltas.
    let null_flag = |fi: usize| {
        let nf = t.fields[fi].null_field.filter(|_| t.null_compact)?;
        Some((t.fields[nf].offset, t.fields[nf].mask))
    };
    let fixed_ref: &[u8] = fixed;
    let stored = |flag: Option<(usize, u8)>| {
        move |r: usize| flag.is_none_or(|(at, mask)| fixed_ref[r * rs + at] & mask == 0)
    };
    // Other-relative, reverse order, against the base's original value.
    for (fi, f) in t.fields.iter().enumerate().rev() {
        let Some(Relative::Other(b)) = f.relative else {
            continue;
        };
        let stored = stored(null_flag(fi));
        match (nums[fi].as_mut(), originals[b].as_ref()) {
            (Some(Nums::I32(v)), Some(Nums::I32(base))) => {
                minus(v, base, stored, i32::wrapping_sub)
            }
            (Some(Nums::I64(v)), Some(Nums::I64(base))) => {
                minus(v, base, stored, i64::wrapping_sub)
            }
            (Some(Nums::F64(v)), Some(Nums::F64(base))) => minus(v, base, stored, |x, y| x - y),
            _ => {}
        }
    }
    // Self-relative, against the previous stored record's original value.
    for (fi, f) in t.fields.iter().enumerate() {
        if f.relative != Some(Relative::SelfRel) {
            continue;
        }
        let stored = stored(null_flag(fi));
        match nums[fi].as_mut() {
            Some(Nums::I32(v)) => delta(v, stored, i32::wrapping_sub, 0),
            Some(Nums::I64(v)) => delta(v, stored, i64::wrapping_sub, 0),
            Some(Nums::F64(v)) => delta(v, stored, |x, prev| x - prev, 0.0),
            None => {}
        }
    }
    for (f, v) in t.fields.iter().zip(nums.iter_mut()) {
        if let (Some(s), Some(Nums::F64(v))) = (f.pack_scale, v) {
            let inv = 1.0 / s;
            v.iter_mut().for_each(|x| *x = round_half_away(*x * inv));
        }
    }
    for (f, v) in t.fields.iter().zip(&nums) {
        let at = f.offset;
        match (v, order) {
            (Some(Nums::I32(v)), ByteOrder::Little) => scatter(fixed, rs, at, v, i32::to_le_bytes),
            (Some(Nums::I32(v)), ByteOrder::Big) => scatter(fixed, rs, at, v, i32::to_be_bytes),
            (Some(Nums::I64(v)), ByteOrder::Little) => scatter(fixed, rs, at, v, i64::to_le_bytes),
            (Some(Nums::I64(v)), ByteOrder::Big) => scatter(fixed, rs, at, v, i64::to_be_bytes),
            (Some(Nums::F64(v)), ByteOrder::Little) => scatter(fixed, rs, at, v, f64::to_le_bytes),
            (Some(Nums::F64(v)), ByteOrder::Big) => scatter(fixed, rs, at, v, f64::to_be_bytes),
            (None, _) => {}
        }
    }
}

/// One column of an extent's values across the batch slices that make up the extent, nulls
/// as 0 (`map` turns each valid value into what is packed).
fn gather<T: ArrowPrimitiveType, U: Copy + Default>(
    slices: &[&ArrayRef],
    n: usize,
    map: impl Fn(T::Native) -> U,
) -> Vec<U> {
    let mut v = Vec::with_capacity(n);
    for a in slices {
        let first = v.len();
        v.extend(a.as_primitive::<T>().values().iter().map(|&x| map(x)));
        for r in null_rows(a.as_ref()).iter().flat_map(|n| n.set_indices()) {
            v[first + r] = U::default();
        }
    }
    v
}

/// Other-relative packing: each stored value minus its base field's original value.
#[inline(always)]
fn minus<T: Copy>(
    v: &mut [T],
    base: &[T],
    stored: impl Fn(usize) -> bool,
    sub: impl Fn(T, T) -> T,
) {
    for (r, (x, &b)) in v.iter_mut().zip(base).enumerate() {
        if stored(r) {
            *x = sub(*x, b);
        }
    }
}

/// Self-relative packing: each value minus the previous stored record's original value.
#[inline(always)]
fn delta<T: Copy>(v: &mut [T], stored: impl Fn(usize) -> bool, sub: impl Fn(T, T) -> T, zero: T) {
    let mut prev = zero;
    for (r, x) in v.iter_mut().enumerate() {
        if !stored(r) {
            continue;
        }
        let orig = *x;
        *x = sub(orig, prev);
        prev = orig;
    }
}

/// `x.round()` (halfway cases away from zero), without the call to libm's `round` that the
/// baseline x86-64 target makes for it. A signaling NaN is returned as it is (libm quiets it);
/// the values rounded here are products, which never are one.
#[inline(always)]
fn round_half_away(x: f64) -> f64 {
    // From 2^52 on every double is an integer (and NaN and the infinities round to themselves).
    if x.is_nan() || x.abs() >= 4_503_599_627_370_496.0 {
        return x;
    }
    let whole = (x as i64) as f64; // toward zero, exactly
    let frac = x - whole; // exact
                          // Without branches: which way a value rounds is as unpredictable as the data.
    let away = (frac >= 0.5) as i64 - (frac <= -0.5) as i64;
    // round(-0.4) is -0.0: the result keeps the sign of x.
    (whole + away as f64).copysign(x)
}

/// Writes `W`-byte values at `offset` of every record.
#[inline(always)]
fn scatter<T: Copy, const W: usize>(
    fixed: &mut [u8],
    record_size: usize,
    offset: usize,
    values: &[T],
    conv: impl Fn(T) -> [u8; W],
) {
    for (rec, &x) in fixed.chunks_exact_mut(record_size).zip(values) {
        rec[offset..offset + W].copy_from_slice(&conv(x));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_half_away_is_f64_round() {
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let mut samples = vec![
            0.0,
            -0.0,
            0.5,
            -0.5,
            1.5,
            -1.5,
            2.5,
            -2.5,
            0.49999999999999994,
            -0.49999999999999994,
            4_503_599_627_370_495.5,
            -4_503_599_627_370_495.5,
            4_503_599_627_370_496.0,
            9.007_199_254_740_993e15,
            1e300,
            -1e300,
            f64::MIN_POSITIVE,
            -f64::MIN_POSITIVE,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::MAX,
            f64::MIN,
        ];
        for _ in 0..200_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            samples.push(f64::from_bits(x));
            samples.push((x % 2_000_001) as f64 / 2.0 - 500_000.0);
            samples.push((x >> 11) as f64 * 1e-6 - 4e6);
        }
        for s in samples {
            // What is rounded is a product, never a signaling NaN: libm would quiet one.
            let s = if s.is_nan() {
                f64::from_bits(s.to_bits() | 1 << 51)
            } else {
                s
            };
            assert_eq!(round_half_away(s).to_bits(), s.round().to_bits(), "{s:e}");
        }
    }
}
