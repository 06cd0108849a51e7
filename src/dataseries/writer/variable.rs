//! The variable area of an extent (§9): variable32 values appended record by record, equal
//! `pack_unique` values stored once.

use std::hash::{Hash, Hasher};

use arrow_array::cast::AsArray;
use arrow_array::types::Int32Type;
use arrow_array::{Array, ArrayRef};
use arrow_buffer::BooleanBuffer;
use rustc_hash::FxHashMap;

use super::super::byte_order::ByteOrder;
use super::super::extent::roundup_var;
use super::super::types::{ExtentType, Kind};
use crate::error::{Error, ErrorClass, Result};

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

/// A batch slice of a variable32 column as packed: Binary, or for a `pack_unique` field given
/// a dictionary, Int32 keys into Binary values (its canonical types, see `schema::canonical`).
pub(super) struct VarSlice<'a> {
    /// The values' offsets and bytes: the column's own, or its dictionary's.
    offsets: &'a [i32],
    data: &'a [u8],
    /// Each row's dictionary key, for a dictionary column.
    keys: Option<&'a [i32]>,
    /// Which rows hold a value, `None` when all do (a null key or a null dictionary value is
    /// a null row).
    valid: Option<BooleanBuffer>,
}

impl<'a> VarSlice<'a> {
    pub(super) fn of(a: &'a dyn Array) -> VarSlice<'a> {
        let valid = a
            .logical_nulls()
            .filter(|nb| nb.null_count() > 0)
            .map(|nb| nb.inner().clone());
        match a.as_dictionary_opt::<Int32Type>() {
            Some(d) => {
                let values = d.values().as_binary::<i32>();
                VarSlice {
                    offsets: values.value_offsets(),
                    data: values.value_data(),
                    keys: Some(d.keys().values()),
                    valid,
                }
            }
            None => {
                let a = a.as_binary::<i32>();
                VarSlice {
                    offsets: a.value_offsets(),
                    data: a.value_data(),
                    keys: None,
                    valid,
                }
            }
        }
    }

    fn rows(&self) -> usize {
        self.keys.map_or(self.offsets.len() - 1, |k| k.len())
    }

    fn is_valid(&self, r: usize) -> bool {
        self.valid.as_ref().is_none_or(|b| b.value(r))
    }

    /// The bytes of value `i` (a row, or a dictionary entry).
    #[inline]
    fn value(&self, i: usize) -> &'a [u8] {
        &self.data[self.offsets[i] as usize..self.offsets[i + 1] as usize]
    }

    /// Adds to `out[i]` the bytes row `from + i`'s value takes in the variable area as appended
    /// without deduplication (§14's rule for closing extents).
    pub(super) fn add_entry_bytes(&self, from: usize, out: &mut [usize]) {
        let entry = |len: usize| if len == 0 { 0 } else { 4 + roundup_var(len) };
        let value_len = |i: usize| (self.offsets[i + 1] - self.offsets[i]) as usize;
        let Some(keys) = self.keys else {
            let lens = self.offsets[from..=from + out.len()]
                .windows(2)
                .map(|w| (w[1] - w[0]) as usize);
            match &self.valid {
                None => out
                    .iter_mut()
                    .zip(lens)
                    .for_each(|(o, len)| *o += entry(len)),
                Some(valid) => {
                    let valid = valid.slice(from, out.len());
                    for ((o, len), valid) in out.iter_mut().zip(lens).zip(&valid) {
                        if valid {
                            *o += entry(len);
                        }
                    }
                }
            }
            return;
        };
        for (r, o) in (from..).zip(out.iter_mut()) {
            if self.is_valid(r) {
                *o += entry(value_len(keys[r] as usize));
            }
        }
    }
}

/// The variable area (§9): record by record, fields in XML order, each non-null, non-empty
/// value appended (or, `pack_unique`, found among the extent's earlier values) and its offset
/// put in the record's slot. The area is built in `var`, emptied first.
///
/// The result is what that record-major walk gives, but the work is done a column at a time:
/// each `pack_unique` column first numbers its own distinct values (one lookup per row, in a
/// map of that column's keys only), then only the first occurrences are merged in record order
/// to place values in the area, and last each row's number becomes its offset. Interleaving the
/// columns row by row took 15 % of an lz4 encode's profile; this takes 13 %.
pub(super) fn pack_variable(
    t: &ExtentType,
    visible: &[(usize, Vec<&ArrayRef>)],
    fixed: &mut [u8],
    n: usize,
    order: ByteOrder,
    mut var: Vec<u8>,
) -> Result<Vec<u8>> {
    let columns: Vec<VarColumn> = visible
        .iter()
        .filter(|(fi, _)| t.fields[*fi].kind == Kind::Variable32)
        .map(|(fi, slices)| VarColumn {
            slot: t.fields[*fi].offset,
            unique: t.fields[*fi].pack_unique,
            slices: slices.iter().map(|a| VarSlice::of(a.as_ref())).collect(),
        })
        .collect();
    var.clear();
    var.extend_from_slice(&[0; 4]);
    if columns.is_empty() || n == 0 {
        return Ok(var);
    }
    let rs = t.record_size;
    let events: Vec<Events> = columns.iter().map(|c| Events::of(c, n)).collect();
    // The merge: events in record order, a record's fields in XML order.
    let mut unique: FxHashMap<Key, i32> = FxHashMap::default();
    // Each pack_unique column's offsets by value number; number 0 is a row without a value,
    // whose slot stays 0.
    let mut at_of: Vec<Vec<i32>> = events.iter().map(|_| vec![0]).collect();
    let mut next = vec![0usize; events.len()];
    loop {
        let mut first: Option<(u32, usize)> = None;
        for (k, e) in events.iter().enumerate() {
            if let Some(&row) = e.list.rows.get(next[k]) {
                if first.is_none_or(|(r, _)| row < r) {
                    first = Some((row, k));
                }
            }
        }
        let Some((row, k)) = first else { break };
        let (e, i) = (&events[k], next[k]);
        next[k] += 1;
        let value = e.list.values[i];
        if e.ids.is_some() {
            let at = match unique.get(&Key(value)) {
                Some(&at) => at,
                None => {
                    let at = append_var(&mut var, value, order)?;
                    unique.insert(Key(value), at);
                    at
                }
            };
            at_of[k].push(at);
        } else {
            let at = append_var(&mut var, value, order)?;
            let slot = row as usize * rs + columns[k].slot;
            fixed[slot..slot + 4].copy_from_slice(&order.put_u32(at as u32));
        }
    }
    for ((c, e), at_of) in columns.iter().zip(&events).zip(&at_of) {
        if let Some(ids) = &e.ids {
            match order {
                ByteOrder::Little => put_slots(fixed, rs, c.slot, ids, at_of, u32::to_le_bytes),
                ByteOrder::Big => put_slots(fixed, rs, c.slot, ids, at_of, u32::to_be_bytes),
            }
        }
    }
    Ok(var)
}

/// What a variable32 column contributes to the record-order merge: the rows where it has a
/// value to place (for a `pack_unique` column, only each distinct value's first row) with
/// those values, and for a `pack_unique` column the number of every row's value (1 for the
/// first distinct value, 0 for a row without one).
struct Events<'a> {
    list: EventList<'a>,
    ids: Option<Vec<u32>>,
}

/// Rows with a value to place, and those values.
#[derive(Default)]
struct EventList<'a> {
    rows: Vec<u32>,
    values: Vec<&'a [u8]>,
}

impl<'a> Events<'a> {
    fn of(c: &VarColumn<'a>, n: usize) -> Events<'a> {
        let mut events = Events {
            list: EventList::default(),
            ids: c.unique.then(|| Vec::with_capacity(n)),
        };
        let mut numbers: FxHashMap<Key<'a>, u32> = FxHashMap::default();
        let mut row = 0u32;
        for v in &c.slices {
            match (&mut events.ids, v.keys) {
                (Some(ids), None) => {
                    for r in 0..v.rows() {
                        let value = v.value(r);
                        let present = !value.is_empty() && v.is_valid(r);
                        let id = if present {
                            let fresh = numbers.len() as u32 + 1;
                            let id = *numbers.entry(Key(value)).or_insert(fresh);
                            if id == fresh {
                                events.list.rows.push(row);
                                events.list.values.push(value);
                            }
                            id
                        } else {
                            0
                        };
                        ids.push(id);
                        row += 1;
                    }
                }
                (Some(ids), Some(keys)) => {
                    number_keys(v, keys, ids, &mut numbers, &mut events.list, row);
                    row += keys.len() as u32;
                }
                (None, keys) => {
                    for r in 0..v.rows() {
                        let at = keys.map_or(r, |k| k[r] as usize);
                        if v.is_valid(r) && v.offsets[at + 1] > v.offsets[at] {
                            events.list.rows.push(row);
                            events.list.values.push(v.value(at));
                        }
                        row += 1;
                    }
                }
            }
        }
        events
    }
}

/// Numbers a dictionary slice's rows (the first at `row`): each key's value is looked up once,
/// its later rows take the number. Kept out of `Events::of`: sharing that function with the
/// loop over plain values, the map lookup was no longer inlined there (2 % of an encode).
#[inline(never)]
fn number_keys<'a>(
    v: &VarSlice<'a>,
    keys: &[i32],
    ids: &mut Vec<u32>,
    numbers: &mut FxHashMap<Key<'a>, u32>,
    events: &mut EventList<'a>,
    row: u32,
) {
    let mut number_of_key = if keys_worth_caching(v) {
        vec![UNSEEN; v.offsets.len() - 1]
    } else {
        Vec::new()
    };
    for (r, &key) in keys.iter().enumerate() {
        let at = key as usize;
        let id = match number_of_key.get_mut(at) {
            _ if !v.is_valid(r) => 0,
            Some(&mut known) if known != UNSEEN => known,
            cached => {
                let value = v.value(at);
                let id = match numbers.get(&Key(value)) {
                    _ if value.is_empty() => 0,
                    Some(&id) => id,
                    None => {
                        let id = numbers.len() as u32 + 1;
                        numbers.insert(Key(value), id);
                        events.rows.push(row + r as u32);
                        events.values.push(value);
                        id
                    }
                };
                if let Some(known) = cached {
                    *known = id;
                }
                id
            }
        };
        ids.push(id);
    }
}

/// A dictionary key whose value has not been looked up yet.
const UNSEEN: u32 = u32::MAX;

/// Whether numbering a dictionary slice's keys (a table as long as its dictionary) is cheaper
/// than hashing each row's value: not for a large dictionary under a short slice.
fn keys_worth_caching(v: &VarSlice) -> bool {
    v.offsets.len() - 1 <= v.rows().max(4096)
}

/// Each record's slot at `slot` gets the offset of its row's value number.
#[inline(always)]
fn put_slots(
    fixed: &mut [u8],
    record_size: usize,
    slot: usize,
    ids: &[u32],
    at_of: &[i32],
    bytes: impl Fn(u32) -> [u8; 4],
) {
    for (rec, &id) in fixed.chunks_exact_mut(record_size).zip(ids) {
        rec[slot..slot + 4].copy_from_slice(&bytes(at_of[id as usize] as u32));
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    /// §9 as written: record by record, fields in XML order, one shared `pack_unique` map.
    fn record_major(
        t: &ExtentType,
        visible: &[(usize, Vec<&ArrayRef>)],
        fixed: &mut [u8],
        order: ByteOrder,
    ) -> Vec<u8> {
        let mut var = vec![0u8; 4];
        let mut unique: std::collections::HashMap<Vec<u8>, i32> = Default::default();
        let rows: Vec<usize> = visible[0].1.iter().map(|a| a.len()).collect();
        let mut record = 0;
        for (s, &n) in rows.iter().enumerate() {
            for r in 0..n {
                for (fi, slices) in visible {
                    let f = &t.fields[*fi];
                    let a = slices[s].as_binary::<i32>();
                    if f.kind != Kind::Variable32 || a.is_null(r) || a.value(r).is_empty() {
                        continue;
                    }
                    let value = a.value(r);
                    let at = match (f.pack_unique, unique.get(value)) {
                        (true, Some(&at)) => at,
                        (unique_field, _) => {
                            let at = append_var(&mut var, value, order).unwrap();
                            if unique_field {
                                unique.insert(value.to_vec(), at);
                            }
                            at
                        }
                    };
                    let slot = record * t.record_size + f.offset;
                    fixed[slot..slot + 4].copy_from_slice(&order.put_u32(at as u32));
                }
                record += 1;
            }
        }
        var
    }

    #[test]
    fn the_area_is_the_record_major_walks_whatever_the_columns_share() {
        use arrow_array::BinaryArray;
        use std::sync::Arc;
        let t = ExtentType::parse(
            r#"<ExtentType name="t" namespace="n" version="1.0">
  <field type="variable32" name="a" pack_unique="yes" opt_nullable="yes"/>
  <field type="variable32" name="b"/>
  <field type="variable32" name="c" pack_unique="yes"/>
  <field type="variable32" name="d" pack_unique="yes" opt_nullable="yes"/>
</ExtentType>"#,
        )
        .unwrap();
        let vocabulary: Vec<Vec<u8>> = (0..40u32)
            .map(|i| match i {
                0 => Vec::new(),
                _ => format!("{}{i}", "v".repeat(i as usize % 23)).into_bytes(),
            })
            .collect();
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let mut visible_fields: Vec<usize> = t
            .visible
            .iter()
            .copied()
            .filter(|&fi| t.fields[fi].kind == Kind::Variable32)
            .collect();
        visible_fields.sort();
        assert_eq!(visible_fields.len(), 4);
        for order in [ByteOrder::Little, ByteOrder::Big] {
            for slice_rows in [vec![0, 1, 700], vec![5000], vec![3, 0, 2, 1000, 17]] {
                let columns: Vec<Vec<ArrayRef>> = visible_fields
                    .iter()
                    .enumerate()
                    .map(|(k, _)| {
                        slice_rows
                            .iter()
                            .map(|&n| {
                                let values = (0..n).map(|_| {
                                    let r = next();
                                    // Columns 0 and 3 draw from the same words, and every
                                    // column from part of the others'.
                                    let word = (r % 13) as usize + [0, 20, 8, 0][k];
                                    (k % 3 != 0 || r >> 40 & 7 != 0)
                                        .then(|| vocabulary[word].as_slice())
                                });
                                Arc::new(BinaryArray::from_iter(values)) as ArrayRef
                            })
                            .collect()
                    })
                    .collect();
                let visible: Vec<(usize, Vec<&ArrayRef>)> = visible_fields
                    .iter()
                    .zip(&columns)
                    .map(|(&fi, slices)| (fi, slices.iter().collect()))
                    .collect();
                let n: usize = slice_rows.iter().sum();
                let mut fixed = vec![0u8; n * t.record_size];
                let var = pack_variable(&t, &visible, &mut fixed, n, order, Vec::new()).unwrap();
                let mut want_fixed = vec![0u8; n * t.record_size];
                let want_var = record_major(&t, &visible, &mut want_fixed, order);
                assert!(var == want_var, "{order:?} {slice_rows:?}: variable area");
                assert!(fixed == want_fixed, "{order:?} {slice_rows:?}: slots");
                assert!(
                    var.len() > 200,
                    "{} bytes: the case reaches too little",
                    var.len()
                );
            }
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
