//! Record packing (§9, §10): an extent's rows, given as consecutive batch slices, become its
//! fixed part (records of `record_size` bytes) and its variable area, as the reference packs
//! them; compression and the extent around them are `extent`'s.
//!
//! Each step is a typed loop over one column at a time (the variable area excepted: its
//! entries must be appended record by record). Null rows are visited from the inverted
//! validity bits, which are few, rather than testing every row.

use std::hash::{Hash, Hasher};

use arrow_array::cast::AsArray;
use arrow_array::types::{ArrowPrimitiveType, Float64Type, Int32Type, Int64Type, UInt8Type};
use arrow_array::{Array, ArrayRef, RecordBatch};
use arrow_buffer::BooleanBuffer;
use rustc_hash::FxHashMap;

use super::super::file::{roundup_var, ByteOrder};
use super::super::types::{ExtentType, Kind, Relative};
use crate::error::{Error, ErrorClass, Result};

/// One packed extent before compression.
pub(super) struct Packed {
    pub(super) rows: usize,
    pub(super) fixed: Vec<u8>,
    /// The variable area as held in memory: 4 zero bytes, then the entries.
    pub(super) var: Vec<u8>,
}

/// Packs the rows of an extent, given as consecutive slices of batches (canonical column types,
/// visible fields in order) (§10.1, §9).
pub(super) fn pack(t: &ExtentType, batches: &[RecordBatch], order: ByteOrder) -> Result<Packed> {
    let n: usize = batches.iter().map(|b| b.num_rows()).sum();
    let rs = t.record_size;
    let mut fixed = vec![0u8; n * rs];
    // Each visible field with its arrays, one per slice, in field (XML) order.
    let mut visible: Vec<(usize, Vec<&ArrayRef>)> = t
        .visible
        .iter()
        .enumerate()
        .map(|(k, &fi)| (fi, batches.iter().map(|b| b.column(k)).collect()))
        .collect();
    visible.sort_by_key(|(fi, _)| *fi);
    for (fi, slices) in &visible {
        let f = &t.fields[*fi];
        let mut first = 0;
        for a in slices {
            let records = &mut fixed[first * rs..(first + a.len()) * rs];
            first += a.len();
            let nulls = null_rows(a.as_ref());
            if let Some(nulls) = &nulls {
                let Some(nf) = f.null_field else {
                    return Err(Error::new(
                        ErrorClass::BadValue,
                        format!(
                            "field {:?} is not nullable but the column holds nulls",
                            f.name
                        ),
                    ));
                };
                let (at, mask) = (t.fields[nf].offset, t.fields[nf].mask);
                for r in nulls.set_indices() {
                    records[r * rs + at] |= mask;
                }
            }
            pack_bytes(
                f.kind,
                f.offset,
                f.mask,
                a.as_ref(),
                nulls.as_ref(),
                records,
                rs,
            );
        }
    }
    let var = pack_variable(t, &visible, &mut fixed, n, order)?;
    pack_numbers(t, &visible, &mut fixed, n, order);
    Ok(Packed {
        rows: n,
        fixed,
        var,
    })
}

/// The rows of `a` that are null, as set bits; `None` when there are none.
fn null_rows(a: &dyn Array) -> Option<BooleanBuffer> {
    a.nulls()
        .filter(|nb| nb.null_count() > 0)
        .map(|nb| !nb.inner())
}

/// Bool, byte and fixedwidth values of valid rows into their records (null rows stay 0).
fn pack_bytes(
    kind: Kind,
    at: usize,
    mask: u8,
    a: &dyn Array,
    nulls: Option<&BooleanBuffer>,
    records: &mut [u8],
    rs: usize,
) {
    match kind {
        Kind::Bool => {
            let a = a.as_boolean();
            let set = match a.nulls() {
                Some(valid) => a.values() & valid.inner(),
                None => a.values().clone(),
            };
            for r in set.set_indices() {
                records[r * rs + at] |= mask;
            }
        }
        Kind::Byte => {
            let values = a.as_primitive::<UInt8Type>().values();
            for (rec, &v) in records.chunks_exact_mut(rs).zip(values.iter()) {
                rec[at] = v;
            }
            for r in nulls.iter().flat_map(|n| n.set_indices()) {
                records[r * rs + at] = 0;
            }
        }
        Kind::FixedWidth(w) => {
            let a = a.as_fixed_size_binary();
            for (r, rec) in records.chunks_exact_mut(rs).enumerate() {
                rec[at..at + w].copy_from_slice(a.value(r));
            }
            for r in nulls.iter().flat_map(|n| n.set_indices()) {
                records[r * rs + at..r * rs + at + w].fill(0);
            }
        }
        _ => {}
    }
}

/// A variable32 value as a `pack_unique` key. Equality is checked inline for short values
/// (the usual keys): a call to `memcmp` for each lookup cost more than the probe itself.
#[derive(Clone, Copy)]
struct Key<'a>(&'a [u8]);

impl PartialEq for Key<'_> {
    #[inline]
    fn eq(&self, other: &Self) -> bool {
        let (a, b) = (self.0, other.0);
        let n = a.len();
        if n != b.len() {
            return false;
        }
        let word = |s: &[u8], at: usize| u64::from_le_bytes(s[at..at + 8].try_into().expect("8"));
        let half = |s: &[u8], at: usize| u32::from_le_bytes(s[at..at + 4].try_into().expect("4"));
        match n {
            // Loads from each end cover every byte, overlapping in the middle.
            17..=32 => {
                word(a, 0) == word(b, 0)
                    && word(a, 8) == word(b, 8)
                    && word(a, n - 16) == word(b, n - 16)
                    && word(a, n - 8) == word(b, n - 8)
            }
            8..=16 => word(a, 0) == word(b, 0) && word(a, n - 8) == word(b, n - 8),
            4..=7 => half(a, 0) == half(b, 0) && half(a, n - 4) == half(b, n - 4),
            _ => a == b,
        }
    }
}

impl Eq for Key<'_> {}

impl Hash for Key<'_> {
    #[inline]
    fn hash<H: Hasher>(&self, state: &mut H) {
        // FxHasher's `write` mixes in the length: no prefix needed. (Measured on the bench's
        // keys, a lookup costs 5.0 ns with rustc-hash and 4.9 ns with the multiply-rotate hash
        // this module used to define: under 0.5 % of an encode, not worth a hasher of our own.)
        state.write(self.0);
    }
}

/// One variable32 field of an extent: its slot's offset and, per slice, its values.
struct VarColumn<'a> {
    slot: usize,
    unique: bool,
    slices: Vec<VarSlice<'a>>,
}

/// A slice's variable32 values: offsets (one more than rows) into `data`, and validity.
struct VarSlice<'a> {
    offsets: &'a [i32],
    data: &'a [u8],
    valid: Option<BooleanBuffer>,
}

/// The variable area (§9): record by record, fields in XML order, each non-null, non-empty
/// value appended (or, `pack_unique`, found among the extent's earlier values) and its offset
/// put in the record's slot.
fn pack_variable(
    t: &ExtentType,
    visible: &[(usize, Vec<&ArrayRef>)],
    fixed: &mut [u8],
    n: usize,
    order: ByteOrder,
) -> Result<Vec<u8>> {
    let columns: Vec<VarColumn> = visible
        .iter()
        .filter(|(fi, _)| t.fields[*fi].kind == Kind::Variable32)
        .map(|(fi, slices)| VarColumn {
            slot: t.fields[*fi].offset,
            unique: t.fields[*fi].pack_unique,
            slices: slices
                .iter()
                .map(|a| {
                    let a = a.as_binary::<i32>();
                    VarSlice {
                        offsets: a.value_offsets(),
                        data: a.value_data(),
                        valid: a
                            .nulls()
                            .filter(|nb| nb.null_count() > 0)
                            .map(|nb| nb.inner().clone()),
                    }
                })
                .collect(),
        })
        .collect();
    let mut var: Vec<u8> = vec![0; 4];
    if columns.is_empty() {
        return Ok(var);
    }
    let rs = t.record_size;
    let slice_rows: Vec<usize> = match visible.first() {
        Some((_, slices)) => slices.iter().map(|a| a.len()).collect(),
        None => return Ok(var),
    };
    debug_assert_eq!(slice_rows.iter().sum::<usize>(), n);
    // Shared by every pack_unique field, as in the reference.
    let mut unique: FxHashMap<Key, i32> = FxHashMap::default();
    let mut record = 0;
    for (s, &rows) in slice_rows.iter().enumerate() {
        for r in 0..rows {
            let rec = &mut fixed[record * rs..(record + 1) * rs];
            record += 1;
            for c in &columns {
                let v = &c.slices[s];
                if v.valid.as_ref().is_some_and(|valid| !valid.value(r)) {
                    continue;
                }
                let (from, to) = (v.offsets[r] as usize, v.offsets[r + 1] as usize);
                if from == to {
                    continue;
                }
                let value = &v.data[from..to];
                let at = if c.unique {
                    match unique.get(&Key(value)) {
                        Some(&at) => at,
                        None => {
                            let at = append_var(&mut var, value, order)?;
                            unique.insert(Key(value), at);
                            at
                        }
                    }
                } else {
                    append_var(&mut var, value, order)?
                };
                rec[c.slot..c.slot + 4].copy_from_slice(&order.put_u32(at as u32));
            }
        }
    }
    Ok(var)
}

fn append_var(var: &mut Vec<u8>, v: &[u8], order: ByteOrder) -> Result<i32> {
    let off = var.len();
    let len = i32::try_from(v.len()).map_err(|_| {
        Error::new(
            ErrorClass::ValueOutOfRange,
            "a variable32 value is 2 GiB or longer",
        )
    })?;
    var.extend_from_slice(&order.put_u32(len as u32));
    var.extend_from_slice(v);
    var.resize(off + 4 + roundup_var(v.len()), 0);
    i32::try_from(off).map_err(|_| {
        Error::new(
            ErrorClass::ValueOutOfRange,
            "an extent's variable data exceeds 2 GiB; lower the extent size",
        )
    })
}

/// Numeric values of one field of an extent while they are packed.
#[derive(Clone)]
enum Nums {
    I32(Vec<i32>),
    I64(Vec<i64>),
    F64(Vec<f64>),
}

/// Numbers (§10): the originals (doubles relative to opt_doublebase; nulls are 0), then
/// other-relative and self-relative deltas and pack_scale, then into the records.
fn pack_numbers(
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
            Kind::Double => {
                let b = f.doublebase.unwrap_or(0.0);
                Some(Nums::F64(gather::<Float64Type, _>(slices, n, |x| x - b)))
            }
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

    #[test]
    fn keys_are_equal_exactly_when_their_bytes_are() {
        let values: Vec<Vec<u8>> = (0..48usize)
            .flat_map(|len| {
                let base: Vec<u8> = (0..len as u8).collect();
                // The same length with each byte changed in turn.
                let mut out = vec![base.clone()];
                for i in 0..len {
                    let mut v = base.clone();
                    v[i] ^= 0x80;
                    out.push(v);
                }
                out
            })
            .collect();
        for a in &values {
            for b in &values {
                assert_eq!(Key(a) == Key(b), a == b, "{a:?} {b:?}");
            }
        }
    }
}
