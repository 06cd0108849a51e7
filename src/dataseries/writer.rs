//! Arrow → DataSeries (spec §17, §20.4): ExtentType from the schema (or given XML), records packed
//! as the reference packs them, extents compressed in parallel and written in order, then the
//! index and trailer; the file appears at its path only when complete.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::io::Write;
use std::path::Path;
use std::sync::Arc;

use arrow::compute::cast;
use arrow_array::cast::AsArray;
use arrow_array::types::{ArrowPrimitiveType, Float64Type, Int32Type, Int64Type, UInt8Type};
use arrow_array::{Array, ArrayRef, BinaryArray, Int64Array, RecordBatch};
use arrow_schema::{DataType, Field, Schema, SchemaRef, TimeUnit};
use rayon::prelude::*;

use super::codec::{self, Mode};
use super::file::{compact, partly_unpacked_hash, roundup_var, ByteOrder, HEADER_LEN};
use super::types::{ExtentType, Kind, Relative, INDEX_NAME};
use crate::atomic::{StreamOutput, SINK_NAME};
use crate::error::{Error, ErrorClass, Result};
use crate::write::{BatchWriter, WriteSummary};

/// The DataSeries settings of the format-independent [`WriteOptions`](crate::WriteOptions),
/// as every front end spells them (the codecs come from its `compression`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DsWriteOptions {
    /// Compression level 1..=9 (default 6; 9 with `best`).
    pub level: Option<u32>,
    /// Target uncompressed bytes per extent (default 1 MiB).
    pub extent_size: Option<usize>,
    /// The extent type's name (default: `dataseries.name` of the schema, else the file stem).
    pub type_name: Option<String>,
    /// An ExtentType XML to store verbatim (default: derived from the schema).
    pub xml: Option<String>,
}

/// Options of the DataSeries [`Writer`].
#[derive(Debug, Clone)]
pub struct WriterOptions {
    type_name: Option<String>,
    xml: Option<String>,
    modes: Vec<Mode>,
    level: u32,
    extent_size: usize,
    order: ByteOrder,
}

impl Default for WriterOptions {
    fn default() -> Self {
        WriterOptions {
            type_name: None,
            xml: None,
            modes: vec![Mode::Zlib],
            level: 6,
            extent_size: 1 << 20,
            order: ByteOrder::Little,
        }
    }
}

impl WriterOptions {
    /// The type name (default: `dataseries.name` from the schema, else the file's stem).
    pub fn with_type_name(mut self, name: impl Into<String>) -> Self {
        self.type_name = Some(name.into());
        self
    }
    /// A user-given ExtentType XML, stored verbatim (default: one derived from the schema).
    pub fn with_extent_type_xml(mut self, xml: impl Into<String>) -> Self {
        self.xml = Some(xml.into());
        self
    }
    /// The enabled compression modes; several use the reference's smallest-wins rule (default:
    /// zlib only).
    pub fn with_modes(mut self, modes: impl IntoIterator<Item = Mode>) -> Self {
        self.modes = modes.into_iter().collect();
        self
    }
    /// Compression level 1..=9 (lzo, zlib and bz2 use it; default 6).
    pub fn with_level(mut self, level: u32) -> Self {
        self.level = level;
        self
    }
    /// Target uncompressed bytes per extent (1 KiB ..= 256 MiB; default 1 MiB).
    pub fn with_extent_size(mut self, bytes: usize) -> Self {
        self.extent_size = bytes;
        self
    }
    /// Byte order of the output (little-endian by default; big-endian exists for tests).
    pub fn with_byte_order(mut self, order: ByteOrder) -> Self {
        self.order = order;
        self
    }

    /// Options from the format-independent settings: the codecs from `compression`, the rest
    /// from `options`.
    pub fn from_settings(compression: Option<&str>, options: &DsWriteOptions) -> Result<Self> {
        let mut o = Self::from_compression(compression)?;
        if let Some(level) = options.level {
            o = o.with_level(level);
        }
        if let Some(bytes) = options.extent_size {
            o = o.with_extent_size(bytes);
        }
        if let Some(name) = &options.type_name {
            o = o.with_type_name(name.clone());
        }
        if let Some(xml) = &options.xml {
            o = o.with_extent_type_xml(xml.clone());
        }
        Ok(o)
    }

    /// Options from a `--compression` value: `MODE[,MODE…][:LEVEL]` (see [`Self::parse_modes`]);
    /// `None` gives the defaults (zlib level 6).
    pub fn from_compression(spec: Option<&str>) -> Result<WriterOptions> {
        let mut o = WriterOptions::default();
        if let Some(spec) = spec {
            let (modes, level) = match spec.rsplit_once(':') {
                Some((m, l)) => (
                    m,
                    Some(
                        l.trim()
                            .parse::<u32>()
                            .ok()
                            .filter(|l| (1..=9).contains(l))
                            .ok_or_else(|| {
                                Error::invalid_argument(format!(
                                    "compression level {l:?} is not 1 to 9"
                                ))
                            })?,
                    ),
                ),
                None => (spec, None),
            };
            o.modes = Self::parse_modes(modes)?;
            if let Some(l) = level {
                o.level = l;
            } else if modes.trim() == "best" {
                // The reference tools' default: every codec at level 9.
                o.level = 9;
            }
        }
        Ok(o)
    }

    /// Parses a `--compress` value: `none`, a mode name, a comma list, or `best`.
    pub fn parse_modes(text: &str) -> Result<Vec<Mode>> {
        let mut out = Vec::new();
        for part in text.split(',').map(str::trim) {
            if part == "best" {
                out.extend(Mode::ALL);
                continue;
            }
            out.push(Mode::from_name(part).ok_or_else(|| {
                Error::invalid_argument(format!(
                    "unknown DataSeries compression {part:?}; use none, lzo, zlib, bz2, lzf, snappy, lz4, lz4hc or best"
                ))
            })?);
        }
        Ok(out)
    }
}

/// The DataSeries kind an Arrow type is written as, and its `arrow_type` hint (§20.4).
pub fn kind_for(dt: &DataType) -> Option<(Kind, Option<&'static str>)> {
    Some(match dt {
        DataType::Boolean => (Kind::Bool, None),
        DataType::UInt8 => (Kind::Byte, None),
        DataType::Int32 => (Kind::Int32, None),
        DataType::Int64 | DataType::Timestamp(_, _) => (Kind::Int64, None),
        DataType::Float64 => (Kind::Double, None),
        DataType::Binary | DataType::LargeBinary | DataType::BinaryView => (Kind::Variable32, None),
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => {
            (Kind::Variable32, Some("utf8"))
        }
        DataType::FixedSizeBinary(n) if *n > 0 => (Kind::FixedWidth(*n as usize), None),
        DataType::Int8 => (Kind::Int32, Some("int8")),
        DataType::Int16 => (Kind::Int32, Some("int16")),
        DataType::UInt16 => (Kind::Int32, Some("uint16")),
        DataType::UInt32 => (Kind::Int64, Some("uint32")),
        DataType::Float16 => (Kind::Double, Some("float16")),
        DataType::Float32 => (Kind::Double, Some("float32")),
        DataType::Dictionary(_, v) => match v.as_ref() {
            DataType::Utf8 | DataType::LargeUtf8 => (Kind::Variable32, Some("utf8")),
            DataType::Binary | DataType::LargeBinary => (Kind::Variable32, None),
            _ => return None,
        },
        _ => return None,
    })
}

fn canonical(kind: Kind) -> DataType {
    match kind {
        Kind::Bool => DataType::Boolean,
        Kind::Byte => DataType::UInt8,
        Kind::Int32 => DataType::Int32,
        Kind::Int64 => DataType::Int64,
        Kind::Double => DataType::Float64,
        Kind::Variable32 => DataType::Binary,
        Kind::FixedWidth(n) => DataType::FixedSizeBinary(n as i32),
    }
}

fn xml_escape(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&apos;"),
            c => o.push(c),
        }
    }
    o
}

/// Builds the ExtentType XML for a schema (§20.4, rule 3).
pub fn generate_xml(schema: &Schema, name: &str) -> Result<String> {
    let md = schema.metadata();
    let mut root: Vec<(String, String)> = vec![
        ("name".into(), name.to_string()),
        (
            "namespace".into(),
            md.get("dataseries.namespace")
                .cloned()
                .unwrap_or_else(|| "arrowsmith".into()),
        ),
        (
            "version".into(),
            md.get("dataseries.version")
                .cloned()
                .unwrap_or_else(|| "1.0".into()),
        ),
    ];
    let mut rest: Vec<(String, String)> = md
        .iter()
        .filter_map(|(k, v)| {
            k.strip_prefix("dataseries.")
                .map(|k| (k.to_string(), v.clone()))
        })
        .filter(|(k, _)| !matches!(k.as_str(), "xml" | "name" | "namespace" | "version"))
        .collect();
    rest.sort();
    root.extend(rest);
    let mut xml = String::from("<ExtentType");
    for (k, v) in &root {
        xml.push_str(&format!(" {k}=\"{}\"", xml_escape(v)));
    }
    xml.push_str(">\n");
    for (i, f) in schema.fields().iter().enumerate() {
        let (kind, hint) = kind_for(f.data_type()).ok_or_else(|| {
            Error::new(
                ErrorClass::UnsupportedType,
                format!(
                    "DataSeries has no type for Arrow {}; cast the column to a supported type (e.g. Int64, Float64, Utf8)",
                    f.data_type()
                ),
            )
            .with_column(i, Some(f.name()))
        })?;
        let mut attrs: Vec<(String, String)> = f
            .metadata()
            .iter()
            .filter_map(|(k, v)| {
                k.strip_prefix("dataseries.")
                    .map(|k| (k.to_string(), v.clone()))
            })
            .filter(|(k, _)| !matches!(k.as_str(), "type" | "name" | "opt_nullable" | "arrow_type"))
            .collect();
        if let Kind::FixedWidth(n) = kind {
            attrs.retain(|(k, _)| k != "size");
            attrs.push(("size".into(), n.to_string()));
        }
        if let DataType::Timestamp(u, _) = f.data_type() {
            attrs.retain(|(k, _)| k != "units" && k != "epoch");
            let units = match u {
                TimeUnit::Second => "seconds",
                TimeUnit::Millisecond => "milliseconds",
                TimeUnit::Microsecond => "microseconds",
                TimeUnit::Nanosecond => "nanoseconds",
            };
            attrs.push(("units".into(), units.into()));
            attrs.push(("epoch".into(), "unix".into()));
        }
        if matches!(f.data_type(), DataType::Dictionary(_, _))
            && !attrs.iter().any(|(k, _)| k == "pack_unique")
        {
            attrs.push(("pack_unique".into(), "yes".into()));
        }
        if let Some(h) = hint {
            attrs.push(("arrow_type".into(), h.into()));
        }
        if f.is_nullable() {
            attrs.push(("opt_nullable".into(), "yes".into()));
        }
        attrs.sort();
        xml.push_str(&format!(
            "  <field type=\"{}\" name=\"{}\"",
            kind.name(),
            xml_escape(f.name())
        ));
        for (k, v) in &attrs {
            xml.push_str(&format!(" {k}=\"{}\"", xml_escape(v)));
        }
        xml.push_str(" />\n");
    }
    xml.push_str("</ExtentType>\n");
    Ok(xml)
}

/// Checks that a type fits a schema: same visible names in order, kinds, nullability.
fn type_matches(t: &ExtentType, schema: &Schema) -> std::result::Result<(), String> {
    if t.visible.len() != schema.fields().len() {
        return Err(format!(
            "the type has {} fields, the data {} columns",
            t.visible.len(),
            schema.fields().len()
        ));
    }
    for (&i, f) in t.visible.iter().zip(schema.fields()) {
        let df = &t.fields[i];
        if df.name != *f.name() {
            return Err(format!(
                "field {:?} of the type meets column {:?}",
                df.name,
                f.name()
            ));
        }
        let kind = kind_for(f.data_type()).map(|k| k.0);
        if kind != Some(df.kind) {
            return Err(format!(
                "field {:?} is {} but the column is Arrow {}",
                df.name,
                df.kind.name(),
                f.data_type()
            ));
        }
        if df.null_field.is_some() != f.is_nullable() {
            return Err(format!(
                "field {:?}: nullability differs from the column's",
                df.name
            ));
        }
    }
    Ok(())
}

/// Chooses the ExtentType (§20.4): user XML, else the schema's `dataseries.xml` if it fits, else generated.
pub fn resolve_type(schema: &Schema, options: &WriterOptions, stem: &str) -> Result<ExtentType> {
    let bad = |m: String| Error::new(ErrorClass::BadMeta, m);
    if let Some(xml) = &options.xml {
        let t =
            ExtentType::parse(xml).map_err(|m| bad(format!("the given ExtentType XML: {m}")))?;
        type_matches(&t, schema).map_err(|m| {
            Error::invalid_argument(format!("the given ExtentType does not fit the data: {m}"))
        })?;
        return Ok(t);
    }
    if let Some(xml) = schema.metadata().get("dataseries.xml") {
        if let Ok(t) = ExtentType::parse(xml) {
            let name_ok = options.type_name.as_ref().is_none_or(|n| *n == t.name);
            if name_ok && type_matches(&t, schema).is_ok() {
                return Ok(t);
            }
        }
    }
    let name = options
        .type_name
        .clone()
        .or_else(|| schema.metadata().get("dataseries.name").cloned())
        .unwrap_or_else(|| stem.to_string());
    let xml = generate_xml(schema, &name)?;
    let t = ExtentType::parse(&xml)
        .map_err(|m| bad(format!("the generated ExtentType is invalid: {m}")))?;
    Ok(t)
}

/// Validates the writer-side constraints of §17.2.
fn check_writable(t: &ExtentType) -> Result<()> {
    let bad = |m: &str| Error::new(ErrorClass::Unsupported, format!("type {:?}: {m}", t.name));
    if t.null_compact && t.big_to_small {
        return Err(bad(
            "null compaction with big_to_small_sep_var32 ordering cannot be read by the reference",
        ));
    }
    if t.null_compact
        && t.fields
            .iter()
            .any(|f| matches!(f.kind, Kind::FixedWidth(_)))
    {
        return Err(bad(
            "fixedwidth fields with null compaction cannot be read by the reference",
        ));
    }
    Ok(())
}

/// One packed extent before compression.
struct Packed {
    rows: usize,
    fixed: Vec<u8>,
    var: Vec<u8>,
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
fn pack(t: &ExtentType, batches: &[RecordBatch], order: ByteOrder) -> Result<Packed> {
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

/// Compresses and assembles one extent (§3, §12, §13.2); returns its bytes and `hash ^ adler`.
fn assemble(
    t: &ExtentType,
    p: &Packed,
    order: ByteOrder,
    modes: &[Mode],
    level: u32,
) -> Result<(Vec<u8>, u32)> {
    let hash = partly_unpacked_hash(order, &p.fixed, &p.var[4..], false)
        .map_err(|m| Error::new(ErrorClass::BadValue, m))?;
    let compacted;
    let fixed_src: &[u8] = if t.null_compact {
        compacted = compact(t, &p.fixed, p.rows);
        &compacted
    } else {
        &p.fixed
    };
    let var_src = &p.var[4..];
    let (fm, fbytes) = codec::compress_best(modes, fixed_src, level);
    let (vm, vbytes) = codec::compress_best(modes, var_src, level);
    let fdata: &[u8] = fbytes.as_deref().unwrap_or(fixed_src);
    let vdata: &[u8] = vbytes.as_deref().unwrap_or(var_src);
    for (what, d) in [("fixed", fdata), ("variable", vdata)] {
        if d.len() as i64 >= super::file::MAX_PART {
            return Err(Error::new(
                ErrorClass::ValueOutOfRange,
                format!("an extent's {what} part is 512 MiB or more; lower the extent size"),
            ));
        }
    }
    let name = t.name.as_bytes();
    let h = (28 + name.len()).next_multiple_of(4);
    let total = h + fdata.len().next_multiple_of(4) + vdata.len().next_multiple_of(4);
    let mut e = Vec::with_capacity(total);
    e.extend_from_slice(&order.put_u32(fdata.len() as u32));
    e.extend_from_slice(&order.put_u32(vdata.len() as u32));
    e.extend_from_slice(&order.put_u32(p.rows as u32));
    e.extend_from_slice(&order.put_u32(p.var.len() as u32));
    e.extend_from_slice(&[0; 4]);
    e.extend_from_slice(&order.put_u32(hash));
    e.push(if fdata.is_empty() { 0 } else { fm.id() });
    e.push(if vdata.is_empty() { 0 } else { vm.id() });
    e.push(name.len() as u8);
    e.push(0);
    e.extend_from_slice(name);
    e.resize(h, 0);
    e.extend_from_slice(fdata);
    e.resize(h + fdata.len().next_multiple_of(4), 0);
    e.extend_from_slice(vdata);
    e.resize(total, 0);
    let adler = codec::extent_adler32(&e);
    e[16..20].copy_from_slice(&order.put_u32(adler));
    Ok((e, hash ^ adler))
}

fn header_bytes(order: ByteOrder) -> [u8; 40] {
    let mut h = [0u8; 40];
    h[..4].copy_from_slice(b"DSv1");
    h[4..8].copy_from_slice(&order.put_u32(0x1234_5678));
    h[8..16].copy_from_slice(&order.put_u64(0x1234_5678_9ABC_DEF0));
    h[16..24].copy_from_slice(&order.put_u64(std::f64::consts::PI.to_bits()));
    h[24..32].copy_from_slice(&order.put_u64(f64::INFINITY.to_bits()));
    h[32..40].copy_from_slice(&order.put_u64(0x7ff8_0000_0000_0000));
    h
}

/// Writes record batches into a new DataSeries file.
pub struct Writer {
    file: Option<StreamOutput>,
    t: Arc<ExtentType>,
    canon_schema: SchemaRef,
    options: WriterOptions,
    /// Rows of the extent being filled.
    current: Vec<RecordBatch>,
    current_rows: usize,
    current_var: usize,
    /// Extents filled and not yet compressed, each as its batch slices.
    queue: Vec<Vec<RecordBatch>>,
    offset: u64,
    index: Vec<(u64, String)>,
    chain: u32,
    rows: u64,
    warnings: Vec<String>,
}

impl Writer {
    /// Starts writing a DataSeries file at `path` for batches of `schema`. Nothing appears at
    /// `path` until [`Writer::finish`].
    pub fn try_new(
        path: impl AsRef<Path>,
        schema: SchemaRef,
        options: WriterOptions,
    ) -> Result<Writer> {
        let path = path.as_ref();
        let stem = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| "data".into());
        Writer::start(path, &stem, || StreamOutput::file(path), schema, options)
    }

    /// Like [`Writer::try_new`], but the file goes into `sink` (a pipe, a socket, a buffer) as
    /// it is written, the index and trailer last. A failed write may leave part of the file in
    /// the sink. Without a type name in the options or the schema, the type is named `data`.
    pub fn try_new_to_sink(
        sink: impl Write + Send + 'static,
        schema: SchemaRef,
        options: WriterOptions,
    ) -> Result<Writer> {
        let sink = StreamOutput::sink(sink);
        Writer::start(Path::new(SINK_NAME), "data", || Ok(sink), schema, options)
    }

    fn start(
        path: &Path,
        stem: &str,
        output: impl FnOnce() -> Result<StreamOutput>,
        schema: SchemaRef,
        options: WriterOptions,
    ) -> Result<Writer> {
        let e = |e: Error| e.with_file(path);
        if !(1024..=256 << 20).contains(&options.extent_size) {
            return Err(e(Error::invalid_argument(format!(
                "extent size {} is outside 1 KiB ..= 256 MiB",
                options.extent_size
            ))));
        }
        if !(1..=9).contains(&options.level) {
            return Err(e(Error::invalid_argument(format!(
                "compression level {} is outside 1..=9",
                options.level
            ))));
        }
        let t = resolve_type(&schema, &options, stem).map_err(e)?;
        check_writable(&t).map_err(e)?;
        let mut warnings = Vec::new();
        for (i, f) in schema.fields().iter().enumerate() {
            if let DataType::Timestamp(_, Some(tz)) = f.data_type() {
                if tz.as_ref() != "UTC" && tz.as_ref() != "+00:00" {
                    warnings.push(format!(
                        "column {i} {:?}: time zone {tz:?} is not kept (the instants are)",
                        f.name()
                    ));
                }
            }
        }
        let canon_schema = Arc::new(Schema::new(
            t.visible
                .iter()
                .map(|&i| Field::new(&t.fields[i].name, canonical(t.fields[i].kind), true))
                .collect::<Vec<_>>(),
        ));
        let mut file = output().map_err(e)?;
        let order = options.order;
        let mut w = Writer {
            file: None,
            t: Arc::new(t),
            canon_schema,
            options,
            current: Vec::new(),
            current_rows: 0,
            current_var: 4,
            queue: Vec::new(),
            offset: 0,
            index: Vec::new(),
            chain: 0,
            rows: 0,
            warnings,
        };
        let out = file.unbuffered().map_err(|x| e(x.into()))?;
        out.write_all(&header_bytes(order))
            .map_err(|x| e(x.into()))?;
        w.offset = HEADER_LEN as u64;
        w.file = Some(file);
        // The XmlType extent: one record holding our type's XML.
        let xml_batch = RecordBatch::try_new(
            Arc::new(Schema::new(vec![Field::new(
                "xmltype",
                DataType::Binary,
                false,
            )])),
            vec![Arc::new(BinaryArray::from(vec![w.t.xml.as_bytes()]))],
        )?;
        let xt = ExtentType::xmltype();
        let packed = pack(&xt, std::slice::from_ref(&xml_batch), order).map_err(e)?;
        let (bytes, x) =
            assemble(&xt, &packed, order, &w.options.modes, w.options.level).map_err(e)?;
        w.emit(&xt.name, bytes, x).map_err(e)?;
        Ok(w)
    }

    fn path(&self) -> &Path {
        self.file.as_ref().expect("open").name()
    }

    fn emit(&mut self, name: &str, bytes: Vec<u8>, x: u32) -> Result<()> {
        let f = self.file.as_mut().expect("open").unbuffered()?;
        f.write_all(&bytes)?;
        self.index.push((self.offset, name.to_string()));
        let (mut a, mut b, mut c) = (x, self.chain, 1972u32);
        codec::mix(&mut a, &mut b, &mut c);
        self.chain = c;
        self.offset += bytes.len() as u64;
        Ok(())
    }

    /// Converts a batch to the canonical column types of the type's fields.
    fn canonicalize(&self, batch: &RecordBatch) -> Result<RecordBatch> {
        let cols = batch
            .columns()
            .iter()
            .zip(self.canon_schema.fields())
            .map(|(c, f)| {
                let mut c = c.clone();
                if let DataType::Dictionary(_, v) = c.data_type() {
                    c = cast(&c, v)?;
                }
                if c.data_type() != f.data_type() {
                    c = cast(&c, f.data_type())?;
                }
                Ok(c)
            })
            .collect::<std::result::Result<Vec<_>, arrow_schema::ArrowError>>()?;
        Ok(RecordBatch::try_new(self.canon_schema.clone(), cols)?)
    }

    /// Encodes the batch's rows; full extents are compressed in parallel and written.
    pub fn write(&mut self, batch: &RecordBatch) -> Result<()> {
        let path = self.path().to_path_buf();
        self.write_inner(batch).map_err(|e| e.with_file(&path))
    }

    fn write_inner(&mut self, batch: &RecordBatch) -> Result<()> {
        if batch.num_columns() != self.canon_schema.fields().len() {
            return Err(Error::invalid_argument(format!(
                "the batch has {} columns, the writer's schema {}",
                batch.num_columns(),
                self.canon_schema.fields().len()
            )));
        }
        let batch = self.canonicalize(batch)?;
        let t = self.t.clone();
        let rs = t.record_size;
        let target = self.options.extent_size;
        let vcols: Vec<&BinaryArray> = t
            .visible
            .iter()
            .zip(batch.columns())
            .filter(|(&i, _)| t.fields[i].kind == Kind::Variable32)
            .map(|(_, c)| c.as_binary::<i32>())
            .collect();
        let mut start = 0;
        for r in 0..batch.num_rows() {
            // The reference's rule (§14): before a record is added, the extent is closed if its
            // fixed bytes + variable bytes as appended (no deduplication, 4 leading zeros) + one
            // more record exceed the target. The new record's own strings are not counted.
            if self.current_rows > 0 && self.current_rows * rs + self.current_var + rs > target {
                if r > start {
                    self.current.push(batch.slice(start, r - start));
                }
                start = r;
                self.close_extent()?;
            }
            for a in &vcols {
                if !a.is_null(r) && a.value_length(r) > 0 {
                    self.current_var += 4 + roundup_var(a.value_length(r) as usize);
                }
            }
            self.current_rows += 1;
        }
        if batch.num_rows() > start {
            self.current
                .push(batch.slice(start, batch.num_rows() - start));
        }
        self.rows += batch.num_rows() as u64;
        Ok(())
    }

    fn close_extent(&mut self) -> Result<()> {
        if self.current_rows == 0 {
            return Ok(());
        }
        let b = std::mem::take(&mut self.current);
        self.current_rows = 0;
        self.current_var = 4;
        self.queue.push(b);
        if self.queue.len() >= (rayon::current_num_threads() * 2).max(2) {
            self.flush_queue()?;
        }
        Ok(())
    }

    fn flush_queue(&mut self) -> Result<()> {
        let t = self.t.clone();
        let order = self.options.order;
        let (modes, level) = (self.options.modes.clone(), self.options.level);
        let queue = std::mem::take(&mut self.queue);
        let done: Vec<Result<(Vec<u8>, u32)>> = queue
            .par_iter()
            .map(|b| {
                let p = pack(&t, b, order)?;
                assemble(&t, &p, order, &modes, level)
            })
            .collect();
        for d in done {
            let (bytes, x) = d?;
            self.emit(&t.name, bytes, x)?;
        }
        Ok(())
    }

    /// Writes the last extent, the index and the trailer, then moves the file into place.
    pub fn finish(mut self) -> Result<WriteSummary> {
        let path = self.path().to_path_buf();
        self.finish_inner().map_err(|e| e.with_file(&path))
    }

    fn finish_inner(&mut self) -> Result<WriteSummary> {
        self.close_extent()?;
        self.flush_queue()?;
        let order = self.options.order;
        // The index lists every extent, itself last.
        let index_offset = self.offset;
        let mut offs: Vec<i64> = self.index.iter().map(|(o, _)| *o as i64).collect();
        let mut names: Vec<Vec<u8>> = self
            .index
            .iter()
            .map(|(_, n)| n.as_bytes().to_vec())
            .collect();
        offs.push(index_offset as i64);
        names.push(INDEX_NAME.as_bytes().to_vec());
        let it = ExtentType::index();
        let batch = RecordBatch::try_new(
            Arc::new(Schema::new(vec![
                Field::new("offset", DataType::Int64, false),
                Field::new("extenttype", DataType::Binary, false),
            ])),
            vec![
                Arc::new(Int64Array::from(offs)),
                Arc::new(BinaryArray::from(
                    names.iter().map(|v| v.as_slice()).collect::<Vec<_>>(),
                )),
            ],
        )?;
        let p = pack(&it, std::slice::from_ref(&batch), order)?;
        let (bytes, x) = assemble(&it, &p, order, &self.options.modes, self.options.level)?;
        let plen = bytes.len();
        self.emit(INDEX_NAME, bytes, x)?;
        let mut tr = Vec::with_capacity(28);
        tr.extend_from_slice(&[0xff; 4]);
        tr.extend_from_slice(&order.put_u32(plen as u32));
        tr.extend_from_slice(&order.put_u32(!(plen as u32)));
        tr.extend_from_slice(&order.put_u32(self.chain));
        tr.extend_from_slice(&order.put_u64(index_offset));
        let h = codec::lookup2(&tr, 1776);
        tr.extend_from_slice(&order.put_u32(h));
        let mut file = self.file.take().expect("open");
        file.unbuffered()?.write_all(&tr)?;
        file.commit()?;
        Ok(WriteSummary {
            rows: self.rows,
            warnings: std::mem::take(&mut self.warnings),
        })
    }
}

impl BatchWriter for Writer {
    fn write(&mut self, batch: &RecordBatch) -> Result<()> {
        Writer::write(self, batch)
    }
    fn finish(self: Box<Self>) -> Result<WriteSummary> {
        Writer::finish(*self)
    }
}
