//! Record packing (§9, §10): an extent's rows, given as consecutive batch slices, become its
//! fixed part (records of `record_size` bytes) and its variable area, as the reference packs
//! them; compression and the extent around them are `extent`'s. Bools, bytes and fixedwidth
//! values are packed here, variable32 values by `variable`, numbers by `numbers`.
//!
//! Each step is a typed loop over one column at a time (the variable area excepted: its
//! entries must be appended record by record). Null rows are visited from the inverted
//! validity bits, which are few, rather than testing every row.

mod numbers;

use arrow_array::cast::AsArray;
use arrow_array::types::UInt8Type;
use arrow_array::{Array, ArrayRef, RecordBatch};
use arrow_buffer::BooleanBuffer;

use self::numbers::pack_numbers;
use super::super::buffers::SpareBuffers;
use super::super::byte_order::ByteOrder;
use super::super::types::{ExtentType, Kind};
use super::variable::pack_variable;
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
pub(super) fn pack(
    t: &ExtentType,
    batches: &[RecordBatch],
    order: ByteOrder,
    spare: &SpareBuffers,
) -> Result<Packed> {
    let n: usize = batches.iter().map(|b| b.num_rows()).sum();
    let rs = t.record_size;
    let mut fixed = spare.take();
    fixed.resize(n * rs, 0);
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
    let var = pack_variable(t, &visible, &mut fixed, n, order, spare.take())?;
    pack_numbers(t, &visible, &mut fixed, n, order);
    Ok(Packed {
        rows: n,
        fixed,
        var,
    })
}

/// The rows of `a` that are null, as set bits; `None` when there are none. A dictionary's row
/// is null where its key or the key's value is.
pub(super) fn null_rows(a: &dyn Array) -> Option<BooleanBuffer> {
    a.logical_nulls()
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
