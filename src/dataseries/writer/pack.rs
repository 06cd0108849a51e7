//! Record packing (§9, §10): an extent's rows, given as consecutive batch slices, become its
//! fixed part (records of `record_size` bytes) and its variable area, as the reference packs
//! them; compression and the extent around them are `extent`'s.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use arrow_array::cast::AsArray;
use arrow_array::types::{ArrowPrimitiveType, Float64Type, Int32Type, Int64Type, UInt8Type};
use arrow_array::{Array, ArrayRef, BinaryArray, RecordBatch};

use super::super::file::{roundup_var, ByteOrder};
use super::super::types::{ExtentType, Kind, Relative};
use crate::error::{Error, ErrorClass, Result};

/// One packed extent before compression.
pub(super) struct Packed {
    pub(super) rows: usize,
    pub(super) fixed: Vec<u8>,
    pub(super) var: Vec<u8>,
}

/// A hasher for pack_unique's value → offset map: a multiply-rotate over 8-byte words (the
/// FxHash construction). The keys are the caller's own values, so SipHash's resistance to
/// chosen collisions buys nothing here, and it costs most of the lookup.
#[derive(Default, Clone, Copy)]
struct WordHasher(u64);

impl WordHasher {
    #[inline(always)]
    fn add(&mut self, w: u64) {
        self.0 = (self.0.rotate_left(5) ^ w).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
}

impl Hasher for WordHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        let mut words = bytes.chunks_exact(8);
        for w in &mut words {
            self.add(u64::from_le_bytes(w.try_into().expect("8 bytes")));
        }
        // The last partial word is read with loads that overlap bytes already hashed (the
        // length is hashed too, so no two keys are confused); copying it into a zeroed word
        // stalls on the store.
        let n = bytes.len();
        let word = |at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().expect("8 bytes"));
        let half = |at: usize| u32::from_le_bytes(bytes[at..at + 4].try_into().expect("4 bytes"));
        match words.remainder().len() {
            0 => {}
            _ if n >= 8 => self.add(word(n - 8)),
            4.. => self.add(u64::from(half(0)) << 32 | u64::from(half(n - 4))),
            r => self.add(
                u64::from(bytes[0]) << 16 | u64::from(bytes[r / 2]) << 8 | u64::from(bytes[r - 1]),
            ),
        }
    }
    #[inline]
    fn write_usize(&mut self, n: usize) {
        self.add(n as u64);
    }
    #[inline]
    fn finish(&self) -> u64 {
        self.0
    }
}

/// One column of an extent's values across the batch slices that make up the extent, nulls
/// as 0 (`map` turns each value into what is packed).
fn gather<T: ArrowPrimitiveType, U: Copy + Default>(
    slices: &[&ArrayRef],
    n: usize,
    map: impl Fn(T::Native) -> U,
) -> Vec<U> {
    let mut v = Vec::with_capacity(n);
    for a in slices {
        let a = a.as_primitive::<T>();
        match a.nulls().filter(|nb| nb.null_count() > 0) {
            None => v.extend(a.values().iter().map(|&x| map(x))),
            Some(nb) => v.extend(a.values().iter().zip(nb.iter()).map(|(&x, valid)| {
                if valid {
                    map(x)
                } else {
                    U::default()
                }
            })),
        }
    }
    v
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

/// Packs the rows of an extent, given as consecutive slices of batches (canonical column types,
/// visible fields in order) (§10.1, §9).
pub(super) fn pack(t: &ExtentType, batches: &[RecordBatch], order: ByteOrder) -> Result<Packed> {
    let n: usize = batches.iter().map(|b| b.num_rows()).sum();
    let rs = t.record_size;
    let mut fixed = vec![0u8; n * rs];
    // Each visible field's arrays, one per slice.
    let mut cols: Vec<Option<Vec<&ArrayRef>>> = vec![None; t.fields.len()];
    for (k, &fi) in t.visible.iter().enumerate() {
        cols[fi] = Some(batches.iter().map(|b| b.column(k)).collect());
    }
    let visible = || {
        cols.iter()
            .enumerate()
            .filter_map(|(fi, c)| Some((fi, &t.fields[fi], c.as_ref()?)))
    };
    // Null bits, then values field by field; `first` is the record index of a slice's row 0.
    for (_, f, slices) in visible() {
        let mut first = 0;
        for a in slices {
            let len = a.len();
            let recs = fixed[first * rs..(first + len) * rs].chunks_exact_mut(rs);
            first += len;
            if let Some(nb) = a.nulls().filter(|nb| nb.null_count() > 0) {
                let Some(nf) = f.null_field else {
                    return Err(Error::new(
                        ErrorClass::BadValue,
                        format!(
                            "field {:?} is not nullable but the column holds nulls",
                            f.name
                        ),
                    ));
                };
                let (off, mask) = (t.fields[nf].offset, t.fields[nf].mask);
                for (rec, valid) in fixed_rows(recs, nb) {
                    if !valid {
                        rec[off] |= mask;
                    }
                }
            }
        }
    }
    for (_, f, slices) in visible() {
        let mut first = 0;
        for a in slices {
            let len = a.len();
            let recs = fixed[first * rs..(first + len) * rs].chunks_exact_mut(rs);
            first += len;
            let valid = |r: usize| a.is_valid(r);
            match f.kind {
                Kind::Bool => {
                    let a = a.as_boolean();
                    for (r, rec) in recs.enumerate() {
                        if a.value(r) && valid(r) {
                            rec[f.offset] |= f.mask;
                        }
                    }
                }
                Kind::Byte => {
                    let a = a.as_primitive::<UInt8Type>();
                    for (r, rec) in recs.enumerate() {
                        if valid(r) {
                            rec[f.offset] = a.value(r);
                        }
                    }
                }
                Kind::FixedWidth(w) => {
                    let a = a.as_fixed_size_binary();
                    for (r, rec) in recs.enumerate() {
                        if valid(r) {
                            rec[f.offset..f.offset + w].copy_from_slice(a.value(r));
                        }
                    }
                }
                _ => {}
            }
        }
    }
    // Variable32, record by record, fields in XML order.
    let vfields: Vec<(usize, Vec<&BinaryArray>)> = visible()
        .filter(|(_, f, _)| f.kind == Kind::Variable32)
        .map(|(fi, _, slices)| {
            (
                t.fields[fi].offset,
                slices.iter().map(|a| a.as_binary::<i32>()).collect(),
            )
        })
        .collect();
    let unique_fields: Vec<bool> = visible()
        .filter(|(_, f, _)| f.kind == Kind::Variable32)
        .map(|(_, f, _)| f.pack_unique)
        .collect();
    let mut var: Vec<u8> = vec![0; 4];
    if !vfields.is_empty() {
        let mut unique: HashMap<&[u8], i32, BuildHasherDefault<WordHasher>> = HashMap::default();
        let mut recs = fixed.chunks_exact_mut(rs.max(1));
        for s in 0..batches.len() {
            for r in 0..batches[s].num_rows() {
                let rec = recs.next().expect("one record per row");
                for ((offset, arrays), &is_unique) in vfields.iter().zip(&unique_fields) {
                    let a = arrays[s];
                    if a.is_null(r) {
                        continue;
                    }
                    let v = a.value(r);
                    if v.is_empty() {
                        continue;
                    }
                    let off = if is_unique {
                        match unique.get(v) {
                            Some(&o) => o,
                            None => {
                                let o = append_var(&mut var, v, order)?;
                                unique.insert(v, o);
                                o
                            }
                        }
                    } else {
                        append_var(&mut var, v, order)?
                    };
                    rec[*offset..*offset + 4].copy_from_slice(&order.put_u32(off as u32));
                }
            }
        }
    }
    // Numbers: originals (relative to opt_doublebase; nulls are 0), then the transforms.
    let compact = t.null_compact;
    let mut nums: Vec<Option<Nums>> = vec![None; t.fields.len()];
    for (fi, f, slices) in visible() {
        nums[fi] = match f.kind {
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
    let null_at = |fi: usize| {
        let nf = t.fields[fi].null_field.filter(|_| compact)?;
        Some((t.fields[nf].offset, t.fields[nf].mask))
    };
    let skip = |flag: Option<(usize, u8)>, r: usize| {
        flag.is_some_and(|(off, mask)| fixed[r * rs + off] & mask != 0)
    };
    // Other-relative, reverse order, against the base's original value.
    for (fi, f) in t.fields.iter().enumerate().rev() {
        let Some(Relative::Other(b)) = f.relative else {
            continue;
        };
        let flag = null_at(fi);
        match (nums[fi].as_mut(), originals[b].as_ref()) {
            (Some(Nums::I32(v)), Some(Nums::I32(bv))) => {
                for r in 0..n {
                    if !skip(flag, r) {
                        v[r] = v[r].wrapping_sub(bv[r]);
                    }
                }
            }
            (Some(Nums::I64(v)), Some(Nums::I64(bv))) => {
                for r in 0..n {
                    if !skip(flag, r) {
                        v[r] = v[r].wrapping_sub(bv[r]);
                    }
                }
            }
            (Some(Nums::F64(v)), Some(Nums::F64(bv))) => {
                for r in 0..n {
                    if !skip(flag, r) {
                        v[r] -= bv[r];
                    }
                }
            }
            _ => {}
        }
    }
    // Self-relative, against the previous record's original value.
    for (fi, f) in t.fields.iter().enumerate() {
        if f.relative != Some(Relative::SelfRel) {
            continue;
        }
        let flag = null_at(fi);
        match nums[fi].as_mut() {
            Some(Nums::I32(v)) => delta(v, |r| skip(flag, r), i32::wrapping_sub, 0),
            Some(Nums::I64(v)) => delta(v, |r| skip(flag, r), i64::wrapping_sub, 0),
            Some(Nums::F64(v)) => delta(v, |r| skip(flag, r), |x, prev| x - prev, 0.0),
            None => {}
        }
    }
    // pack_scale.
    for (f, v) in t.fields.iter().zip(nums.iter_mut()) {
        if let (Some(s), Some(Nums::F64(v))) = (f.pack_scale, v) {
            let inv = 1.0 / s;
            v.iter_mut().for_each(|x| *x = (*x * inv).round());
        }
    }
    for (f, v) in t.fields.iter().zip(&nums) {
        let off = f.offset;
        match (v, order) {
            (Some(Nums::I32(v)), ByteOrder::Little) => {
                scatter(&mut fixed, rs, off, v, i32::to_le_bytes)
            }
            (Some(Nums::I32(v)), ByteOrder::Big) => {
                scatter(&mut fixed, rs, off, v, i32::to_be_bytes)
            }
            (Some(Nums::I64(v)), ByteOrder::Little) => {
                scatter(&mut fixed, rs, off, v, i64::to_le_bytes)
            }
            (Some(Nums::I64(v)), ByteOrder::Big) => {
                scatter(&mut fixed, rs, off, v, i64::to_be_bytes)
            }
            (Some(Nums::F64(v)), ByteOrder::Little) => {
                scatter(&mut fixed, rs, off, v, f64::to_le_bytes)
            }
            (Some(Nums::F64(v)), ByteOrder::Big) => {
                scatter(&mut fixed, rs, off, v, f64::to_be_bytes)
            }
            (None, _) => {}
        }
    }
    Ok(Packed {
        rows: n,
        fixed,
        var,
    })
}

/// Numeric values of one field of an extent while they are packed.
#[derive(Clone)]
enum Nums {
    I32(Vec<i32>),
    I64(Vec<i64>),
    F64(Vec<f64>),
}

/// Self-relative packing: each value minus the previous packed record's original value.
fn delta<T: Copy>(v: &mut [T], skip: impl Fn(usize) -> bool, sub: impl Fn(T, T) -> T, zero: T) {
    let mut prev = zero;
    for (r, x) in v.iter_mut().enumerate() {
        if skip(r) {
            continue;
        }
        let orig = *x;
        *x = sub(orig, prev);
        prev = orig;
    }
}

/// Records paired with their row's validity.
fn fixed_rows<'a>(
    recs: std::slice::ChunksExactMut<'a, u8>,
    nulls: &'a arrow_buffer::NullBuffer,
) -> impl Iterator<Item = (&'a mut [u8], bool)> + 'a {
    recs.zip(nulls.iter())
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

