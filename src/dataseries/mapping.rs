//! DataSeries ⇄ Arrow type mapping (spec §20): schema of a type, and a decoded extent's columns.

use std::collections::HashMap;
use std::sync::Arc;

use arrow_array::builder::BooleanBufferBuilder;
use arrow_array::{
    ArrayRef, BinaryArray, BooleanArray, FixedSizeBinaryArray, Float64Array, Int32Array,
    Int64Array, StringArray, TimestampMicrosecondArray, TimestampMillisecondArray,
    TimestampNanosecondArray, TimestampSecondArray, UInt8Array,
};
use arrow_buffer::{Buffer, NullBuffer, OffsetBuffer, ScalarBuffer};
use arrow_schema::{DataType, Field, Schema, SchemaRef, TimeUnit};

use super::file::{var_value, ByteOrder, RawExtent};
use super::types::{ExtentType, Kind, Relative};
use crate::{Error, ErrorClass, Result};

/// Which variable32 fields are read as Utf8.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
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

/// Everything needed to turn raw extents of a type into columns.
pub struct Decoder {
    pub t: Arc<ExtentType>,
    pub order: ByteOrder,
    pub schema: SchemaRef,
    /// Visible field positions (in `t.visible`) to output, in output order.
    pub columns: Vec<usize>,
    /// Fields (indices in `t.fields`) whose values must be unpacked: outputs and their bases.
    needed: Vec<bool>,
    pub check_var: bool,
}

impl Decoder {
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

    fn null_bits(&self, raw: &RawExtent, field: usize) -> Option<Vec<bool>> {
        let nf = self.t.fields[field].null_field?;
        let (off, mask) = (self.t.fields[nf].offset, self.t.fields[nf].mask);
        let rs = self.t.record_size;
        Some(
            (0..raw.rows)
                .map(|r| raw.fixed[r * rs + off] & mask != 0)
                .collect(),
        )
    }

    /// Turns one raw extent into columns (rows `start..start+len` are sliced later by the caller).
    pub fn decode(&self, raw: &RawExtent) -> Result<Vec<ArrayRef>> {
        let t = &*self.t;
        let rs = t.record_size;
        let n = raw.rows;
        let o = self.order;
        let compact = t.null_compact;
        // Unpack every needed numeric field, in XML order (§10.2).
        let mut nums: HashMap<usize, Num> = HashMap::new();
        let mut nulls: HashMap<usize, Vec<bool>> = HashMap::new();
        for (i, f) in t.fields.iter().enumerate() {
            if !self.needed[i] {
                continue;
            }
            if let Some(nb) = self.null_bits(raw, i) {
                nulls.insert(i, nb);
            }
            let col = |w: usize| {
                (0..n)
                    .map(move |r| r * rs + f.offset)
                    .map(move |p| (p, p + w))
            };
            let v = match f.kind {
                Kind::Int32 => Num::I32(col(4).map(|(a, b)| o.i32(&raw.fixed[a..b])).collect()),
                Kind::Int64 => Num::I64(col(8).map(|(a, b)| o.i64(&raw.fixed[a..b])).collect()),
                Kind::Double => Num::F64(col(8).map(|(a, b)| o.f64(&raw.fixed[a..b])).collect()),
                _ => continue,
            };
            nums.insert(i, v);
        }
        // 1. pack_scale.
        for (i, f) in t.fields.iter().enumerate() {
            if let (Some(s), Some(Num::F64(v))) = (f.pack_scale, nums.get_mut(&i)) {
                v.iter_mut().for_each(|x| *x *= s);
            }
        }
        // 2. self-relative.
        for (i, f) in t.fields.iter().enumerate() {
            if f.relative != Some(Relative::SelfRel) || !nums.contains_key(&i) {
                continue;
            }
            let skip = |r: usize| compact && nulls.get(&i).is_some_and(|nb| nb[r]);
            match nums.get_mut(&i).expect("present") {
                Num::I32(v) => {
                    let mut prev = 0i32;
                    for (r, x) in v.iter_mut().enumerate() {
                        if skip(r) {
                            continue;
                        }
                        *x = x.wrapping_add(prev);
                        prev = *x;
                    }
                }
                Num::I64(v) => {
                    let mut prev = 0i64;
                    for (r, x) in v.iter_mut().enumerate() {
                        if skip(r) {
                            continue;
                        }
                        *x = x.wrapping_add(prev);
                        prev = *x;
                    }
                }
                Num::F64(v) => {
                    let s = f.pack_scale.unwrap_or(1.0);
                    let inv = 1.0 / s;
                    let mut prev = 0f64;
                    for (r, x) in v.iter_mut().enumerate() {
                        if skip(r) {
                            continue;
                        }
                        *x = ((*x + prev) * inv).round() * s;
                        prev = *x;
                    }
                }
            }
        }
        // 3. other-relative, forward.
        for (i, f) in t.fields.iter().enumerate() {
            let Some(Relative::Other(b)) = f.relative else {
                continue;
            };
            if !nums.contains_key(&i) {
                continue;
            }
            let base = nums.remove(&b).expect("bases are unpacked");
            let nb = nulls.get(&i);
            let skip = |r: usize| compact && nb.is_some_and(|nb| nb[r]);
            match (nums.get_mut(&i).expect("present"), &base) {
                (Num::I32(v), Num::I32(bv)) => {
                    for r in 0..n {
                        if !skip(r) {
                            v[r] = v[r].wrapping_add(bv[r]);
                        }
                    }
                }
                (Num::I64(v), Num::I64(bv)) => {
                    for r in 0..n {
                        if !skip(r) {
                            v[r] = v[r].wrapping_add(bv[r]);
                        }
                    }
                }
                (Num::F64(v), Num::F64(bv)) => {
                    for r in 0..n {
                        if !skip(r) {
                            v[r] += bv[r];
                        }
                    }
                }
                _ => unreachable!("relative fields have the base's type"),
            }
            nums.insert(b, base);
        }

        let mut out = Vec::with_capacity(self.columns.len());
        for (pos, &c) in self.columns.iter().enumerate() {
            let i = t.visible[c];
            let f = &t.fields[i];
            let validity = nulls
                .get(&i)
                .map(|nb| NullBuffer::from(nb.iter().map(|&x| !x).collect::<Vec<bool>>()));
            let target = self.schema.field(pos).data_type().clone();
            let arr: ArrayRef = match f.kind {
                Kind::Bool => {
                    let mut b = BooleanBufferBuilder::new(n);
                    for r in 0..n {
                        b.append(raw.fixed[r * rs + f.offset] & f.mask != 0);
                    }
                    Arc::new(BooleanArray::new(b.finish(), validity))
                }
                Kind::Byte => Arc::new(UInt8Array::new(
                    (0..n).map(|r| raw.fixed[r * rs + f.offset]).collect(),
                    validity,
                )),
                Kind::FixedWidth(w) => {
                    let mut vals = Vec::with_capacity(n * w);
                    for r in 0..n {
                        vals.extend_from_slice(
                            &raw.fixed[r * rs + f.offset..r * rs + f.offset + w],
                        );
                    }
                    Arc::new(FixedSizeBinaryArray::new(
                        w as i32,
                        Buffer::from_vec(vals),
                        validity,
                    ))
                }
                Kind::Int32 => {
                    let Some(Num::I32(v)) = nums.remove(&i) else {
                        unreachable!()
                    };
                    Arc::new(Int32Array::new(ScalarBuffer::from(v), validity))
                }
                Kind::Int64 => {
                    let Some(Num::I64(v)) = nums.remove(&i) else {
                        unreachable!()
                    };
                    let v = ScalarBuffer::from(v);
                    match timestamp_unit(f) {
                        Some(u) => {
                            let tz = Some("UTC");
                            match u {
                                arrow_schema::TimeUnit::Second => Arc::new(
                                    TimestampSecondArray::new(v, validity).with_timezone_opt(tz),
                                ),
                                arrow_schema::TimeUnit::Millisecond => Arc::new(
                                    TimestampMillisecondArray::new(v, validity)
                                        .with_timezone_opt(tz),
                                ),
                                arrow_schema::TimeUnit::Microsecond => Arc::new(
                                    TimestampMicrosecondArray::new(v, validity)
                                        .with_timezone_opt(tz),
                                ),
                                arrow_schema::TimeUnit::Nanosecond => Arc::new(
                                    TimestampNanosecondArray::new(v, validity)
                                        .with_timezone_opt(tz),
                                ),
                            }
                        }
                        None => Arc::new(Int64Array::new(v, validity)),
                    }
                }
                Kind::Double => {
                    let Some(Num::F64(mut v)) = nums.remove(&i) else {
                        unreachable!()
                    };
                    if let Some(b) = f.doublebase {
                        v.iter_mut().for_each(|x| *x += b);
                    }
                    Arc::new(Float64Array::new(ScalarBuffer::from(v), validity))
                }
                Kind::Variable32 => {
                    let mut offsets: Vec<i32> = Vec::with_capacity(n + 1);
                    offsets.push(0);
                    let mut data: Vec<u8> = Vec::new();
                    let nb = nulls.get(&i);
                    for r in 0..n {
                        let slot = o.i32(&raw.fixed[r * rs + f.offset..r * rs + f.offset + 4]);
                        let v = var_value(&raw.var, o, slot, self.check_var).map_err(|m| {
                            Error::new(ErrorClass::BadOffsets, m)
                                .with_field(f.name.clone())
                                .at_row(r as u64)
                        })?;
                        if !nb.is_some_and(|nb| nb[r]) {
                            data.extend_from_slice(v);
                        }
                        let end = i32::try_from(data.len()).map_err(|_| {
                            Error::new(
                                ErrorClass::BufferSize,
                                "more than 2 GiB of strings in one extent",
                            )
                            .with_field(f.name.clone())
                        })?;
                        offsets.push(end);
                    }
                    let offsets = OffsetBuffer::new(ScalarBuffer::from(offsets));
                    if is_utf8_type(&target) {
                        if let Err(e) = simdutf8::basic::from_utf8(&data) {
                            let _ = e;
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
                        Arc::new(StringArray::try_new(
                            offsets,
                            Buffer::from_vec(data),
                            validity,
                        )?)
                    } else {
                        Arc::new(BinaryArray::try_new(
                            offsets,
                            Buffer::from_vec(data),
                            validity,
                        )?)
                    }
                }
            };
            let arr = if arr.data_type() != &target {
                let opts = arrow::compute::CastOptions {
                    safe: false,
                    ..Default::default()
                };
                arrow::compute::cast_with_options(&arr, &target, &opts).map_err(|e| {
                    Error::new(
                        ErrorClass::ValueOutOfRange,
                        format!("value does not fit the hinted type {target}: {e}"),
                    )
                    .with_field(f.name.clone())
                })?
            } else {
                arr
            };
            out.push(arr);
        }
        Ok(out)
    }
}

fn is_utf8_type(t: &DataType) -> bool {
    matches!(t, DataType::Utf8)
}
