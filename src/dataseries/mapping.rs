//! DataSeries ⇄ Arrow type mapping (spec §20): schema of a type, and a decoded extent's columns.

use std::collections::HashMap;
use std::sync::Arc;

use arrow_array::{
    ArrayRef, BinaryArray, BooleanArray, FixedSizeBinaryArray, Float64Array, Int32Array,
    Int64Array, StringArray, TimestampMicrosecondArray, TimestampMillisecondArray,
    TimestampNanosecondArray, TimestampSecondArray, UInt8Array,
};
use arrow_buffer::{BooleanBuffer, Buffer, NullBuffer, OffsetBuffer, ScalarBuffer};
use arrow_schema::{DataType, Field, Schema, SchemaRef, TimeUnit};

use super::byte_order::ByteOrder;
use super::extent::{var_value, RawExtent};
use super::types::{ExtentType, Kind, Relative};
use crate::error::{Error, ErrorClass, Result};

/// Which variable32 fields are read as Utf8.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Utf8Fields {
    /// Only fields whose XML says `arrow_type="utf8"`.
    #[default]
    Hinted,
    /// Every variable32 field.
    All,
    /// These fields (plus the hinted ones).
    Named(Vec<String>),
}

/// The Timestamp unit of an int64 field, if its `units`/`epoch` make it one.
pub fn timestamp_unit(f: &super::types::Field) -> Option<TimeUnit> {
    if f.kind != Kind::Int64 || f.attr("epoch") != Some("unix") {
        return None;
    }
    match f.attr("units")? {
        "seconds" => Some(TimeUnit::Second),
        "milliseconds" => Some(TimeUnit::Millisecond),
        "microseconds" => Some(TimeUnit::Microsecond),
        "nanoseconds" => Some(TimeUnit::Nanosecond),
        _ => None,
    }
}

fn is_utf8(f: &super::types::Field, utf8: &Utf8Fields) -> bool {
    f.kind == Kind::Variable32
        && (f.attr("arrow_type") == Some("utf8")
            || match utf8 {
                Utf8Fields::Hinted => false,
                Utf8Fields::All => true,
                Utf8Fields::Named(n) => n.contains(&f.name),
            })
}

/// The Arrow type of a field, before type hints other than utf8.
fn base_type(f: &super::types::Field, utf8: &Utf8Fields) -> DataType {
    match f.kind {
        Kind::Bool => DataType::Boolean,
        Kind::Byte => DataType::UInt8,
        Kind::Int32 => DataType::Int32,
        Kind::Int64 => match timestamp_unit(f) {
            Some(u) => DataType::Timestamp(u, Some("UTC".into())),
            None => DataType::Int64,
        },
        Kind::Double => DataType::Float64,
        Kind::Variable32 if is_utf8(f, utf8) => DataType::Utf8,
        Kind::Variable32 => DataType::Binary,
        Kind::FixedWidth(n) => DataType::FixedSizeBinary(n as i32),
    }
}

/// The Arrow type a field is returned as, honouring `arrow_type` hints (§20.2).
pub fn arrow_type(f: &super::types::Field, utf8: &Utf8Fields) -> DataType {
    let hinted = match (f.kind, f.attr("arrow_type")) {
        (Kind::Int32, Some("int8")) => Some(DataType::Int8),
        (Kind::Int32, Some("int16")) => Some(DataType::Int16),
        (Kind::Int32, Some("uint16")) => Some(DataType::UInt16),
        (Kind::Int64, Some("uint32")) => Some(DataType::UInt32),
        (Kind::Double, Some("float16")) => Some(DataType::Float16),
        (Kind::Double, Some("float32")) => Some(DataType::Float32),
        _ => None,
    };
    hinted.unwrap_or_else(|| base_type(f, utf8))
}

/// The Arrow schema of a type: visible fields in XML order, with `dataseries.*` metadata.
pub fn schema_of(t: &ExtentType, utf8: &Utf8Fields) -> SchemaRef {
    let fields: Vec<Field> = t
        .visible
        .iter()
        .map(|&i| {
            let f = &t.fields[i];
            let md: HashMap<String, String> = f
                .attrs
                .iter()
                .map(|(k, v)| (format!("dataseries.{k}"), v.clone()))
                .collect();
            Field::new(&f.name, arrow_type(f, utf8), f.null_field.is_some()).with_metadata(md)
        })
        .collect();
    let mut md: HashMap<String, String> = t
        .attrs
        .iter()
        .map(|(k, v)| (format!("dataseries.{k}"), v.clone()))
        .collect();
    md.insert("dataseries.xml".into(), t.xml.clone());
    Arc::new(Schema::new_with_metadata(fields, md))
}

/// Numeric values of one field of one extent, after unpacking.
enum Num {
    I32(Vec<i32>),
    I64(Vec<i64>),
    F64(Vec<f64>),
}

/// The `W`-byte value at `offset` of every record, converted by `conv` (a `from_le_bytes` or
/// `from_be_bytes`, so each byte order gets its own tight loop).
#[inline(always)]
fn column<T, const W: usize>(
    fixed: &[u8],
    record_size: usize,
    offset: usize,
    conv: impl Fn([u8; W]) -> T,
) -> Vec<T> {
    fixed
        .chunks_exact(record_size)
        .map(|rec| conv(rec[offset..offset + W].try_into().expect("W bytes")))
        .collect()
}

/// The bit `mask` of byte `offset` of every record (bool values and null flags).
fn flag_bits(fixed: &[u8], record_size: usize, offset: usize, mask: u8) -> BooleanBuffer {
    let n = fixed.len().checked_div(record_size).unwrap_or(0);
    BooleanBuffer::collect_bool(n, |r| fixed[r * record_size + offset] & mask != 0)
}

/// A self-relative field's running sum, skipping the rows `skip` marks (null-compacted nulls).
fn running_sum<T: Copy>(
    v: &mut [T],
    skip: Option<&BooleanBuffer>,
    mut add: impl FnMut(T, T) -> T,
    zero: T,
) {
    let mut prev = zero;
    match skip {
        None => v.iter_mut().for_each(|x| {
            *x = add(*x, prev);
            prev = *x;
        }),
        Some(skip) => v.iter_mut().zip(skip.iter()).for_each(|(x, s)| {
            if !s {
                *x = add(*x, prev);
                prev = *x;
            }
        }),
    }
}

/// Adds a base field's values to an other-relative field's, skipping the rows `skip` marks.
fn add_base<T: Copy>(
    v: &mut [T],
    base: &[T],
    skip: Option<&BooleanBuffer>,
    add: impl Fn(T, T) -> T,
) {
    match skip {
        None => v.iter_mut().zip(base).for_each(|(x, &b)| *x = add(*x, b)),
        Some(skip) => v
            .iter_mut()
            .zip(base)
            .zip(skip.iter())
            .for_each(|((x, &b), s)| {
                if !s {
                    *x = add(*x, b)
                }
            }),
    }
}

/// Everything needed to turn raw extents of a type into columns.
pub struct Decoder {
    /// The extent type decoded.
    pub t: Arc<ExtentType>,
    /// The file's byte order.
    pub order: ByteOrder,
    /// The schema of the batches it makes.
    pub schema: SchemaRef,
    /// Visible field positions (in `t.visible`) to output, in output order.
    pub columns: Vec<usize>,
    /// Fields (indices in `t.fields`) whose values must be unpacked: outputs and their bases.
    needed: Vec<bool>,
    /// Whether to check that variable32 entries lie inside the variable area.
    pub check_var: bool,
}

impl Decoder {
    /// A decoder of the visible fields at positions `columns`, reading the fields named in `utf8`
    /// as Utf8.
    pub fn new(
        t: Arc<ExtentType>,
        order: ByteOrder,
        utf8: &Utf8Fields,
        columns: Vec<usize>,
        check_var: bool,
    ) -> Decoder {
        let full = schema_of(&t, utf8);
        let schema = Arc::new(Schema::new_with_metadata(
            columns
                .iter()
                .map(|&c| full.field(c).clone())
                .collect::<Vec<_>>(),
            full.metadata().clone(),
        ));
        let mut needed = vec![false; t.fields.len()];
        for &c in &columns {
            let mut i = t.visible[c];
            loop {
                needed[i] = true;
                match t.fields[i].relative {
                    Some(Relative::Other(b)) if !needed[b] => i = b,
                    _ => break,
                }
            }
        }
        Decoder {
            t,
            order,
            schema,
            columns,
            needed,
            check_var,
        }
    }

    /// The numeric values of field `f`, still packed.
    fn numbers(&self, fixed: &[u8], f: &super::types::Field) -> Option<Num> {
        let (rs, off) = (self.t.record_size, f.offset);
        Some(match (f.kind, self.order) {
            (Kind::Int32, ByteOrder::Little) => {
                Num::I32(column(fixed, rs, off, i32::from_le_bytes))
            }
            (Kind::Int32, ByteOrder::Big) => Num::I32(column(fixed, rs, off, i32::from_be_bytes)),
            (Kind::Int64, ByteOrder::Little) => {
                Num::I64(column(fixed, rs, off, i64::from_le_bytes))
            }
            (Kind::Int64, ByteOrder::Big) => Num::I64(column(fixed, rs, off, i64::from_be_bytes)),
            (Kind::Double, ByteOrder::Little) => {
                Num::F64(column(fixed, rs, off, f64::from_le_bytes))
            }
            (Kind::Double, ByteOrder::Big) => Num::F64(column(fixed, rs, off, f64::from_be_bytes)),
            _ => return None,
        })
    }

    /// Turns one raw extent into columns (rows `start..start+len` are sliced later by the caller).
    pub fn decode(&self, raw: &RawExtent) -> Result<Vec<ArrayRef>> {
        let t = &*self.t;
        let rs = t.record_size;
        let fixed: &[u8] = &raw.fixed;
        debug_assert_eq!(fixed.len(), raw.rows * rs);
        // Null flags (set = null) of every needed nullable field.
        let nulls: Vec<Option<BooleanBuffer>> = t
            .fields
            .iter()
            .enumerate()
            .map(|(i, f)| {
                let nf = &t.fields[f.null_field.filter(|_| self.needed[i])?];
                Some(flag_bits(fixed, rs, nf.offset, nf.mask))
            })
            .collect();
        let mut nums = self.unpack_numbers(fixed, &nulls);

        let mut out = Vec::with_capacity(self.columns.len());
        for (pos, &c) in self.columns.iter().enumerate() {
            let i = t.visible[c];
            let f = &t.fields[i];
            let validity = nulls[i].as_ref().map(|nb| NullBuffer::new(!nb));
            let target = self.schema.field(pos).data_type();
            let arr = match nums[i].take() {
                Some(num) => number_array(f, num, validity),
                None => self.other_array(raw, f, nulls[i].as_ref(), target, validity)?,
            };
            out.push(cast_to_hint(arr, target, f)?);
        }
        Ok(out)
    }

    /// The values of every needed numeric field, unpacked in XML order (§10.2): scaled, then
    /// self-relative fields summed, then other-relative fields added to their base.
    fn unpack_numbers(&self, fixed: &[u8], nulls: &[Option<BooleanBuffer>]) -> Vec<Option<Num>> {
        let t = &*self.t;
        // Rows whose relative unpacking is skipped: the nulls, when nulls are compacted.
        let skip = |i: usize| nulls[i].as_ref().filter(|_| t.null_compact);
        let mut nums: Vec<Option<Num>> = t
            .fields
            .iter()
            .enumerate()
            .map(|(i, f)| self.numbers(fixed, f).filter(|_| self.needed[i]))
            .collect();
        // 1. pack_scale.
        for (f, v) in t.fields.iter().zip(nums.iter_mut()) {
            if let (Some(s), Some(Num::F64(v))) = (f.pack_scale, v) {
                v.iter_mut().for_each(|x| *x *= s);
            }
        }
        // 2. self-relative.
        for (i, f) in t.fields.iter().enumerate() {
            if f.relative != Some(Relative::SelfRel) {
                continue;
            }
            match &mut nums[i] {
                Some(Num::I32(v)) => running_sum(v, skip(i), i32::wrapping_add, 0),
                Some(Num::I64(v)) => running_sum(v, skip(i), i64::wrapping_add, 0),
                Some(Num::F64(v)) => {
                    let s = f.pack_scale.unwrap_or(1.0);
                    let inv = 1.0 / s;
                    running_sum(v, skip(i), |x, prev| ((x + prev) * inv).round() * s, 0.0)
                }
                None => {}
            }
        }
        // 3. other-relative, forward. The type parser makes the base an earlier field of the
        // same kind, and `Decoder::new` marks the base of a needed field needed.
        for (i, f) in t.fields.iter().enumerate() {
            let Some(Relative::Other(b)) = f.relative else {
                continue;
            };
            if b >= i {
                continue;
            }
            let (earlier, rest) = nums.split_at_mut(i);
            match (&mut rest[0], &earlier[b]) {
                (Some(Num::I32(v)), Some(Num::I32(bv))) => {
                    add_base(v, bv, skip(i), i32::wrapping_add)
                }
                (Some(Num::I64(v)), Some(Num::I64(bv))) => {
                    add_base(v, bv, skip(i), i64::wrapping_add)
                }
                (Some(Num::F64(v)), Some(Num::F64(bv))) => add_base(v, bv, skip(i), |x, b| x + b),
                _ => {}
            }
        }
        nums
    }

    /// A column of a field that is not unpacked as a number: bits, bytes, fixed-width bytes or
    /// variable32 values.
    fn other_array(
        &self,
        raw: &RawExtent,
        f: &super::types::Field,
        nulls: Option<&BooleanBuffer>,
        target: &DataType,
        validity: Option<NullBuffer>,
    ) -> Result<ArrayRef> {
        let rs = self.t.record_size;
        let fixed: &[u8] = &raw.fixed;
        Ok(match f.kind {
            Kind::Bool => Arc::new(BooleanArray::new(
                flag_bits(fixed, rs, f.offset, f.mask),
                validity,
            )),
            Kind::Byte => Arc::new(UInt8Array::new(
                column(fixed, rs, f.offset, u8::from_ne_bytes).into(),
                validity,
            )),
            Kind::FixedWidth(w) => {
                let mut vals = Vec::with_capacity(raw.rows * w);
                for rec in fixed.chunks_exact(rs) {
                    vals.extend_from_slice(&rec[f.offset..f.offset + w]);
                }
                Arc::new(FixedSizeBinaryArray::new(
                    w as i32,
                    Buffer::from_vec(vals),
                    validity,
                ))
            }
            Kind::Variable32 => self.variable32(raw, f, nulls, target, validity)?,
            Kind::Int32 | Kind::Int64 | Kind::Double => return Err(Error::new(
                ErrorClass::BadMeta,
                "a numeric field was not unpacked; this is a bug in arrowsmith, please report it",
            )
            .with_field(f.name.clone())),
        })
    }

    /// A variable32 column: each row's value copied once, from the variable area into the
    /// Arrow value buffer (nulls keep an empty value).
    fn variable32(
        &self,
        raw: &RawExtent,
        f: &super::types::Field,
        nulls: Option<&BooleanBuffer>,
        target: &DataType,
        validity: Option<NullBuffer>,
    ) -> Result<ArrayRef> {
        let (rs, n, o) = (self.t.record_size, raw.rows, self.order);
        let fixed: &[u8] = &raw.fixed;
        // First where each row's value lies (checking its slot), then one exact allocation and
        // the copies: the value buffer never grows and is never moved.
        let mut spans: Vec<(u32, u32)> = Vec::with_capacity(n);
        let mut total = 0usize;
        for (r, rec) in fixed.chunks_exact(rs).enumerate() {
            let slot = o.i32(&rec[f.offset..f.offset + 4]);
            let v = var_value(&raw.var, o, slot, self.check_var)
                .map_err(|e| e.with_field(f.name.clone()).at_row(r as u64))?;
            let len = if nulls.is_some_and(|nb| nb.value(r)) {
                0
            } else {
                v.len()
            };
            // A value lies inside the area (below 2 GiB); an empty one may not, and needs none.
            let start = if len == 0 {
                0
            } else {
                v.as_ptr() as usize - raw.var.as_ptr() as usize
            };
            spans.push((start as u32, len as u32));
            total += len;
        }
        if total > i32::MAX as usize {
            return Err(Error::new(
                ErrorClass::BufferSize,
                "more than 2 GiB of strings in one extent",
            )
            .with_field(f.name.clone()));
        }
        let mut offsets: Vec<i32> = Vec::with_capacity(n + 1);
        offsets.push(0);
        let mut data: Vec<u8> = Vec::with_capacity(total);
        for &(start, len) in &spans {
            let start = start as usize;
            data.extend_from_slice(&raw.var[start..start + len as usize]);
            offsets.push(data.len() as i32);
        }
        let offsets = OffsetBuffer::new(ScalarBuffer::from(offsets));
        if !is_utf8_type(target) {
            return Ok(Arc::new(BinaryArray::try_new(
                offsets,
                Buffer::from_vec(data),
                validity,
            )?));
        }
        if simdutf8::basic::from_utf8(&data).is_err() {
            // Find the first bad row for the message.
            let row = (0..n)
                .find(|&r| {
                    let (a, b) = (offsets[r] as usize, offsets[r + 1] as usize);
                    std::str::from_utf8(&data[a..b]).is_err()
                })
                .unwrap_or(0);
            return Err(Error::new(
                ErrorClass::InvalidUtf8,
                "a variable32 value read as Utf8 is not valid UTF-8",
            )
            .with_field(f.name.clone())
            .at_row(row as u64));
        }
        Ok(Arc::new(StringArray::try_new(
            offsets,
            Buffer::from_vec(data),
            validity,
        )?))
    }
}

/// The column of an unpacked numeric field: Int64 fields with a time unit become UTC
/// timestamps, doubles get their `doublebase` added.
fn number_array(f: &super::types::Field, num: Num, validity: Option<NullBuffer>) -> ArrayRef {
    match num {
        Num::I32(v) => Arc::new(Int32Array::new(ScalarBuffer::from(v), validity)),
        Num::I64(v) => {
            let v = ScalarBuffer::from(v);
            let tz = Some("UTC");
            match timestamp_unit(f) {
                Some(TimeUnit::Second) => {
                    Arc::new(TimestampSecondArray::new(v, validity).with_timezone_opt(tz))
                }
                Some(TimeUnit::Millisecond) => {
                    Arc::new(TimestampMillisecondArray::new(v, validity).with_timezone_opt(tz))
                }
                Some(TimeUnit::Microsecond) => {
                    Arc::new(TimestampMicrosecondArray::new(v, validity).with_timezone_opt(tz))
                }
                Some(TimeUnit::Nanosecond) => {
                    Arc::new(TimestampNanosecondArray::new(v, validity).with_timezone_opt(tz))
                }
                None => Arc::new(Int64Array::new(v, validity)),
            }
        }
        Num::F64(mut v) => {
            if let Some(b) = f.doublebase {
                v.iter_mut().for_each(|x| *x += b);
            }
            Arc::new(Float64Array::new(ScalarBuffer::from(v), validity))
        }
    }
}

/// The column cast to the type its field's hint asks for; a value that does not fit fails.
fn cast_to_hint(arr: ArrayRef, target: &DataType, f: &super::types::Field) -> Result<ArrayRef> {
    if arr.data_type() == target {
        return Ok(arr);
    }
    let opts = arrow::compute::CastOptions {
        safe: false,
        ..Default::default()
    };
    arrow::compute::cast_with_options(&arr, target, &opts).map_err(|e| {
        Error::new(
            ErrorClass::ValueOutOfRange,
            format!("value does not fit the hinted type {target}: {e}"),
        )
        .with_field(f.name.clone())
    })
}

fn is_utf8_type(t: &DataType) -> bool {
    matches!(t, DataType::Utf8)
}

#[cfg(test)]
mod tests {
    use std::borrow::Cow;

    use super::*;

    #[test]
    fn a_numeric_column_left_unpacked_is_an_error_naming_its_field() {
        let t = Arc::new(
            ExtentType::parse(
                "<ExtentType name=\"t\">\n  <field type=\"int32\" name=\"n\" />\n</ExtentType>\n",
            )
            .unwrap(),
        );
        let raw = RawExtent {
            rows: 2,
            fixed: Cow::Owned(vec![0; 2 * t.record_size]),
            var: Cow::Owned(Vec::new()),
        };
        let mut decoder = Decoder::new(
            Arc::clone(&t),
            ByteOrder::Little,
            &Utf8Fields::default(),
            vec![0],
            true,
        );
        assert_eq!(decoder.decode(&raw).unwrap()[0].len(), 2);
        // `Decoder::new` marks every output field needed; were one not, it would be an error.
        decoder.needed[t.visible[0]] = false;
        let e = decoder.decode(&raw).unwrap_err();
        assert_eq!(e.field(), Some("n"), "{e}");
        assert!(e.to_string().contains("was not unpacked"), "{e}");
    }
}
