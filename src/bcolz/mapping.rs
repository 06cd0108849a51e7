//! The bcolz dtype ↔ Arrow type mapping (spec B3 for reading, B4.2 for writing).

use std::collections::HashMap;
use std::sync::Arc;

use arrow_schema::{DataType, Field, TimeUnit};

use crate::error::{Error, ErrorClass, Result};

/// Schema metadata: `carray` or `ctable`.
pub const KIND_KEY: &str = "bcolz.kind";
/// Schema metadata (root `__attrs__`) and field metadata (a ctable column's `__attrs__`).
pub const ATTRS_KEY: &str = "bcolz.attrs";
/// Field metadata: the `meta/storage.dtype` string, verbatim.
pub const DTYPE_KEY: &str = "bcolz.dtype";
/// Field metadata key of an Arrow extension type's name (a multi-dimensional column).
pub const EXTENSION_NAME_KEY: &str = "ARROW:extension:name";
/// Field metadata key of an Arrow extension type's parameters.
pub const EXTENSION_METADATA_KEY: &str = "ARROW:extension:metadata";
/// The extension name of a column whose rows are fixed-shape arrays (`shape` beyond rows).
pub const TENSOR_EXTENSION: &str = "arrow.fixed_shape_tensor";

/// A numpy datetime64 / timedelta64 unit that bcolz data uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DtUnit {
    /// Days (`D`).
    Day,
    /// Seconds (`s`).
    Second,
    /// Milliseconds (`ms`).
    Milli,
    /// Microseconds (`us`).
    Micro,
    /// Nanoseconds (`ns`).
    Nano,
}

impl DtUnit {
    fn parse(s: &str) -> Option<DtUnit> {
        Some(match s {
            "D" => DtUnit::Day,
            "s" => DtUnit::Second,
            "ms" => DtUnit::Milli,
            "us" => DtUnit::Micro,
            "ns" => DtUnit::Nano,
            _ => return None,
        })
    }
    /// The unit as numpy spells it inside `datetime64[…]` (`"D"`, `"ms"`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            DtUnit::Day => "D",
            DtUnit::Second => "s",
            DtUnit::Milli => "ms",
            DtUnit::Micro => "us",
            DtUnit::Nano => "ns",
        }
    }
    fn time_unit(self) -> TimeUnit {
        match self {
            DtUnit::Day | DtUnit::Second => TimeUnit::Second,
            DtUnit::Milli => TimeUnit::Millisecond,
            DtUnit::Micro => TimeUnit::Microsecond,
            DtUnit::Nano => TimeUnit::Nanosecond,
        }
    }
    fn from_time_unit(unit: TimeUnit) -> DtUnit {
        match unit {
            TimeUnit::Second => DtUnit::Second,
            TimeUnit::Millisecond => DtUnit::Milli,
            TimeUnit::Microsecond => DtUnit::Micro,
            TimeUnit::Nanosecond => DtUnit::Nano,
        }
    }
}

/// The base scalar type of a bcolz column.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Base {
    /// Signed integer of this many bytes.
    Int(u8),
    /// Unsigned integer of this many bytes.
    UInt(u8),
    /// IEEE float of this many bytes (4 or 8).
    Float(u8),
    /// One byte, 0 or 1.
    Bool,
    /// `|S<n>`: n bytes, NUL-padded.
    Bytes(usize),
    /// `<U<n>`: n UTF-32 code units, NUL-padded.
    Unicode(usize),
    /// `datetime64[unit]`: a signed 64-bit count of units since the epoch.
    DateTime(DtUnit),
    /// `timedelta64[unit]`: a signed 64-bit count of units.
    TimeDelta(DtUnit),
}

/// A parsed `meta/storage.dtype`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DType {
    /// The scalar type of each element.
    pub base: Base,
    /// Chunk bytes are big-endian (`>` prefix).
    pub big_endian: bool,
}

impl DType {
    /// The type in the machine's (little-endian) byte order.
    pub fn native(base: Base) -> DType {
        DType {
            base,
            big_endian: false,
        }
    }

    /// Parses a dtype string by the grammar of spec B3.1; the error
    /// ([`ErrorClass::UnsupportedType`], field `dtype`) says why it is unsupported.
    pub fn parse(text: &str) -> Result<DType> {
        let refusal = |why: &str| {
            Error::new(
                ErrorClass::UnsupportedType,
                format!("dtype {text:?} is not supported: {why}"),
            )
            .with_field("dtype")
        };
        let unsupported = |why: &str| Err(refusal(why));
        if text == "object" || text == "|O" || text == "O" {
            return unsupported(
                "pickled Python objects (one pickle per chunk file) cannot be read outside Python",
            );
        }
        if text.starts_with('[') || text.starts_with('(') || text.starts_with('{') {
            return unsupported("structured dtypes cannot be reopened even by bcolz (bcolz#415)");
        }
        if text.starts_with("complex") || text.contains('c') && text.len() <= 4 {
            return unsupported("complex numbers have no Arrow type");
        }
        let named = match text {
            "bool" => Some(Base::Bool),
            "int8" => Some(Base::Int(1)),
            "int16" => Some(Base::Int(2)),
            "int32" => Some(Base::Int(4)),
            "int64" => Some(Base::Int(8)),
            "uint8" => Some(Base::UInt(1)),
            "uint16" => Some(Base::UInt(2)),
            "uint32" => Some(Base::UInt(4)),
            "uint64" => Some(Base::UInt(8)),
            "float16" => Some(Base::Float(2)),
            "float32" => Some(Base::Float(4)),
            "float64" => Some(Base::Float(8)),
            _ => None,
        };
        if let Some(base) = named {
            return Ok(DType::native(base));
        }
        if let Some(rest) = text.strip_prefix("datetime64[") {
            return match rest.strip_suffix(']').and_then(DtUnit::parse) {
                Some(unit) => Ok(DType::native(Base::DateTime(unit))),
                None => unsupported("only the units D, s, ms, us and ns are read"),
            };
        }
        if let Some(rest) = text.strip_prefix("timedelta64[") {
            return match rest.strip_suffix(']').and_then(DtUnit::parse) {
                Some(unit) if unit != DtUnit::Day => Ok(DType::native(Base::TimeDelta(unit))),
                _ => unsupported("only the units s, ms, us and ns are read"),
            };
        }
        let (big_endian, code) = match text.as_bytes().first() {
            Some(b'>') => (true, &text[1..]),
            Some(b'<' | b'|' | b'=') => (false, &text[1..]),
            _ => (false, text),
        };
        let base = match code {
            "i1" => Base::Int(1),
            "i2" => Base::Int(2),
            "i4" => Base::Int(4),
            "i8" => Base::Int(8),
            "u1" => Base::UInt(1),
            "u2" => Base::UInt(2),
            "u4" => Base::UInt(4),
            "u8" => Base::UInt(8),
            "f2" => Base::Float(2),
            "f4" => Base::Float(4),
            "f8" => Base::Float(8),
            "b1" | "?" => Base::Bool,
            _ => {
                if let Some(unit) = code.strip_prefix("M8[").and_then(|r| r.strip_suffix(']')) {
                    match DtUnit::parse(unit) {
                        Some(u) => Base::DateTime(u),
                        None => return unsupported("only the units D, s, ms, us and ns are read"),
                    }
                } else if let Some(unit) =
                    code.strip_prefix("m8[").and_then(|r| r.strip_suffix(']'))
                {
                    match DtUnit::parse(unit) {
                        Some(u) if u != DtUnit::Day => Base::TimeDelta(u),
                        _ => return unsupported("only the units s, ms, us and ns are read"),
                    }
                } else if let Some(w) = code.strip_prefix('S') {
                    Base::Bytes(
                        parse_width(w).ok_or_else(|| refusal("the width must be a number ≥ 1"))?,
                    )
                } else if let Some(w) = code.strip_prefix('U') {
                    Base::Unicode(
                        parse_width(w).ok_or_else(|| refusal("the width must be a number ≥ 1"))?,
                    )
                } else {
                    return unsupported("not a numpy type that bcolz stores and Arrow can hold");
                }
            }
        };
        Ok(DType { base, big_endian })
    }

    /// numpy's `str(dtype)` of this type, as bcolz writes it into `meta/storage`.
    pub fn to_numpy_str(&self) -> String {
        let order = if self.big_endian { ">" } else { "<" };
        let name = |s: &str| {
            if self.big_endian {
                None
            } else {
                Some(s.to_owned())
            }
        };
        let (native, typestr) = match self.base {
            Base::Bool => (Some("bool".to_owned()), "|b1".to_owned()),
            Base::Int(n) => (name(&format!("int{}", n * 8)), format!("{order}i{n}")),
            Base::UInt(n) => (name(&format!("uint{}", n * 8)), format!("{order}u{n}")),
            Base::Float(n) => (name(&format!("float{}", n * 8)), format!("{order}f{n}")),
            Base::Bytes(w) => (None, format!("|S{w}")),
            Base::Unicode(w) => (None, format!("{order}U{w}")),
            Base::DateTime(u) => (
                name(&format!("datetime64[{}]", u.as_str())),
                format!("{order}M8[{}]", u.as_str()),
            ),
            Base::TimeDelta(u) => (
                name(&format!("timedelta64[{}]", u.as_str())),
                format!("{order}m8[{}]", u.as_str()),
            ),
        };
        match (native, self.base) {
            (Some(n), _) => n,
            // int8/uint8 have no byte order.
            (None, Base::Int(1)) => "int8".to_owned(),
            (None, Base::UInt(1)) => "uint8".to_owned(),
            _ => typestr,
        }
    }

    /// Bytes of one scalar.
    pub fn itemsize(&self) -> Option<usize> {
        Some(match self.base {
            Base::Int(n) | Base::UInt(n) | Base::Float(n) => n as usize,
            Base::Bool => 1,
            Base::Bytes(w) => w,
            Base::Unicode(w) => w.checked_mul(4)?,
            Base::DateTime(_) | Base::TimeDelta(_) => 8,
        })
    }

    /// The Blosc typesize bcolz compresses with: 1 for `S`, 4 for `U`, else the itemsize.
    pub fn typesize(&self) -> usize {
        match self.base {
            Base::Bytes(_) => 1,
            Base::Unicode(_) => 4,
            _ => self.itemsize().unwrap_or(1).min(255),
        }
    }

    /// Bytes that are swapped as one unit on big-endian data (1 = nothing to swap).
    pub fn swap_unit(&self) -> usize {
        match self.base {
            Base::Bytes(_) | Base::Bool => 1,
            Base::Unicode(_) => 4,
            _ => self.itemsize().unwrap_or(1),
        }
    }

    /// Whether an N-D carray of this base type can be read (as a tensor).
    pub fn tensor_element(&self) -> bool {
        matches!(
            self.base,
            Base::Int(_) | Base::UInt(_) | Base::Float(_) | Base::Bool
        )
    }

    /// Whether the type has a NaT value (`datetime64` and `timedelta64` do).
    pub fn may_hold_nat(&self) -> bool {
        matches!(self.base, Base::DateTime(_) | Base::TimeDelta(_))
    }

    /// The Arrow type of one scalar (`timezone` from the column's attributes).
    pub fn arrow_scalar_type(&self, timezone: Option<&str>) -> DataType {
        match self.base {
            Base::Int(1) => DataType::Int8,
            Base::Int(2) => DataType::Int16,
            Base::Int(4) => DataType::Int32,
            Base::Int(_) => DataType::Int64,
            Base::UInt(1) => DataType::UInt8,
            Base::UInt(2) => DataType::UInt16,
            Base::UInt(4) => DataType::UInt32,
            Base::UInt(_) => DataType::UInt64,
            Base::Float(2) => DataType::Float16,
            Base::Float(4) => DataType::Float32,
            Base::Float(_) => DataType::Float64,
            Base::Bool => DataType::Boolean,
            Base::Bytes(_) => DataType::Binary,
            Base::Unicode(_) => DataType::Utf8,
            Base::DateTime(DtUnit::Day) => DataType::Date32,
            Base::DateTime(u) => DataType::Timestamp(u.time_unit(), timezone.map(Arc::from)),
            Base::TimeDelta(u) => DataType::Duration(u.time_unit()),
        }
    }
}

fn parse_width(w: &str) -> Option<usize> {
    if w.is_empty() || !w.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    w.parse::<usize>().ok().filter(|&n| n >= 1)
}

/// The Arrow field of a column: scalar, or a `arrow.fixed_shape_tensor` for N-D carrays.
pub fn arrow_field(
    name: &str,
    dtype: &DType,
    dtype_text: &str,
    row_shape: &[usize],
    timezone: Option<&str>,
    nat_as_null: bool,
) -> Field {
    let scalar = dtype.arrow_scalar_type(timezone);
    let mut metadata = HashMap::new();
    metadata.insert(DTYPE_KEY.to_owned(), dtype_text.to_owned());
    let data_type = if row_shape.is_empty() {
        scalar
    } else {
        let k: usize = row_shape.iter().product();
        metadata.insert(EXTENSION_NAME_KEY.to_owned(), TENSOR_EXTENSION.to_owned());
        let dims: Vec<String> = row_shape.iter().map(|d| d.to_string()).collect();
        metadata.insert(
            EXTENSION_METADATA_KEY.to_owned(),
            format!("{{\"shape\":[{}]}}", dims.join(",")),
        );
        DataType::FixedSizeList(Arc::new(Field::new("item", scalar, true)), k as i32)
    };
    let nullable = nat_as_null && dtype.may_hold_nat();
    Field::new(name, data_type, nullable).with_metadata(metadata)
}

/// The dtype an Arrow type is written as (spec B4.2), string widths still open; plus the row
/// shape of tensors. `None` when the type has no mapping.
pub fn dtype_for_arrow(field: &Field) -> Option<(DType, Vec<usize>)> {
    let data_type = match field.data_type() {
        DataType::Dictionary(_, v) => v.as_ref(),
        other => other,
    };
    if let DataType::FixedSizeList(_, _) = data_type {
        let mut shape = Vec::new();
        let mut t = data_type;
        while let DataType::FixedSizeList(child, k) = t {
            shape.push(usize::try_from(*k).ok().filter(|&k| k > 0)?);
            t = child.data_type();
        }
        if field.metadata().get(EXTENSION_NAME_KEY).map(String::as_str) == Some(TENSOR_EXTENSION) {
            let meta = field.metadata().get(EXTENSION_METADATA_KEY)?;
            let v: serde_json::Value = serde_json::from_str(meta).ok()?;
            if v.get("permutation").is_some_and(|p| !p.is_null()) {
                return None;
            }
            let dims: Vec<usize> = v
                .get("shape")?
                .as_array()?
                .iter()
                .map(|d| d.as_u64().map(|d| d as usize))
                .collect::<Option<_>>()?;
            if dims.iter().product::<usize>() != shape.iter().product::<usize>() || dims.is_empty()
            {
                return None;
            }
            shape = dims;
        }
        let base = scalar_base(t)?;
        let dtype = DType::native(base);
        return dtype.tensor_element().then_some((dtype, shape));
    }
    Some((DType::native(scalar_base(data_type)?), Vec::new()))
}

fn scalar_base(data_type: &DataType) -> Option<Base> {
    Some(match data_type {
        DataType::Int8 => Base::Int(1),
        DataType::Int16 => Base::Int(2),
        DataType::Int32 => Base::Int(4),
        DataType::Int64 => Base::Int(8),
        DataType::UInt8 => Base::UInt(1),
        DataType::UInt16 => Base::UInt(2),
        DataType::UInt32 => Base::UInt(4),
        DataType::UInt64 => Base::UInt(8),
        DataType::Float16 => Base::Float(2),
        DataType::Float32 => Base::Float(4),
        DataType::Float64 => Base::Float(8),
        DataType::Boolean => Base::Bool,
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => Base::Unicode(1),
        DataType::Binary | DataType::LargeBinary | DataType::BinaryView => Base::Bytes(1),
        DataType::FixedSizeBinary(k) => Base::Bytes((*k).max(1) as usize),
        DataType::Timestamp(u, _) => Base::DateTime(DtUnit::from_time_unit(*u)),
        DataType::Date32 => Base::DateTime(DtUnit::Day),
        DataType::Date64 => Base::DateTime(DtUnit::Milli),
        DataType::Duration(u) => Base::TimeDelta(DtUnit::from_time_unit(*u)),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dtype_grammar() {
        for (text, base, be) in [
            ("int32", Base::Int(4), false),
            (">i4", Base::Int(4), true),
            ("<u8", Base::UInt(8), false),
            ("|S8", Base::Bytes(8), false),
            ("<U5", Base::Unicode(5), false),
            (">U3", Base::Unicode(3), true),
            ("datetime64[ns]", Base::DateTime(DtUnit::Nano), false),
            ("datetime64[D]", Base::DateTime(DtUnit::Day), false),
            (">m8[us]", Base::TimeDelta(DtUnit::Micro), true),
            ("?", Base::Bool, false),
            ("float16", Base::Float(2), false),
        ] {
            let d = DType::parse(text).unwrap();
            assert_eq!((d.base, d.big_endian), (base, be), "{text}");
        }
        for bad in [
            "object",
            "int24",
            "|S0",
            "timedelta64[D]",
            "datetime64[Y]",
            "complex128",
            "[('a', '<i4')]",
            "float128",
            "|V8",
        ] {
            assert!(DType::parse(bad).is_err(), "{bad}");
        }
        assert_eq!(DType::parse(">i4").unwrap().to_numpy_str(), ">i4");
        assert_eq!(DType::parse("<U5").unwrap().to_numpy_str(), "<U5");
        assert_eq!(DType::parse("<i8").unwrap().to_numpy_str(), "int64");
    }
}
