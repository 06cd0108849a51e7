//! Jay ↔ Arrow type mapping (`docs/jay.md` has the tables).
//!
//! Reading is total: every Jay type has one Arrow type. Writing maps each supported Arrow type
//! to the Jay type that holds it without loss where one exists (unsigned integers widen,
//! `Date64` and timestamps convert to days and nanoseconds).

use std::fmt;
use std::sync::Arc;

use arrow_schema::{DataType, Field, TimeUnit};

use crate::error::{Error, ErrorClass, Result};

/// Schema metadata key holding the number of key columns of a keyed frame.
pub const NKEYS_METADATA_KEY: &str = "jay.nkeys";

/// A Jay column type: one of datatable's fourteen storage types, arrays with their element.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum JayType {
    /// Booleans, one byte each (NA −128).
    Bool8,
    /// 8-bit signed integers.
    Int8,
    /// 16-bit signed integers.
    Int16,
    /// 32-bit signed integers.
    Int32,
    /// 64-bit signed integers.
    Int64,
    /// 32-bit floats.
    Float32,
    /// 64-bit floats.
    Float64,
    /// Strings with 32-bit offsets.
    Str32,
    /// Strings with 64-bit offsets.
    Str64,
    /// Days since 1970-01-01, 32-bit.
    Date32,
    /// Nanoseconds since 1970-01-01T00:00:00 without a time zone, 64-bit.
    Time64,
    /// A column of NAs only, with no buffers.
    Void0,
    /// Arrays of the element type, with 32-bit offsets.
    Arr32(Box<JayType>),
    /// Arrays of the element type, with 64-bit offsets.
    Arr64(Box<JayType>),
}

/// How a Jay type lays its values out (spec A2): what the meta verifier checks sizes against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Storage<'a> {
    /// No buffers: every row is NA.
    Void,
    /// One byte per row, or one bit when copied from Arrow (see `ColumnInfo::bool_packed`).
    Bool,
    /// This many bytes per row.
    Fixed(usize),
    /// `nrows + 1` offsets of this width into a buffer of UTF-8 bytes.
    Strings {
        /// The width the type names; datatable also stores Str64 with 4-byte offsets.
        offset_width: u8,
    },
    /// `nrows + 1` offsets of this width into a child column of `element`.
    Arrays {
        /// The type of the child column.
        element: &'a JayType,
        /// Bytes per offset.
        offset_width: u8,
    },
}

/// The type codes of datatable's `SType` enum, as stored in the file.
pub mod code {
    /// Code of [`JayType::Bool8`](super::JayType::Bool8).
    pub const BOOL8: u8 = 0;
    /// Code of [`JayType::Int8`](super::JayType::Int8).
    pub const INT8: u8 = 1;
    /// Code of [`JayType::Int16`](super::JayType::Int16).
    pub const INT16: u8 = 2;
    /// Code of [`JayType::Int32`](super::JayType::Int32).
    pub const INT32: u8 = 3;
    /// Code of [`JayType::Int64`](super::JayType::Int64).
    pub const INT64: u8 = 4;
    /// Code of [`JayType::Float32`](super::JayType::Float32).
    pub const FLOAT32: u8 = 5;
    /// Code of [`JayType::Float64`](super::JayType::Float64).
    pub const FLOAT64: u8 = 6;
    /// Code of [`JayType::Str32`](super::JayType::Str32).
    pub const STR32: u8 = 7;
    /// Code of [`JayType::Str64`](super::JayType::Str64).
    pub const STR64: u8 = 8;
    /// Code of [`JayType::Date32`](super::JayType::Date32).
    pub const DATE32: u8 = 9;
    /// Code of [`JayType::Time64`](super::JayType::Time64).
    pub const TIME64: u8 = 10;
    /// Code of [`JayType::Void0`](super::JayType::Void0).
    pub const VOID0: u8 = 11;
    /// Code of [`JayType::Arr32`](super::JayType::Arr32).
    pub const ARR32: u8 = 12;
    /// Code of [`JayType::Arr64`](super::JayType::Arr64).
    pub const ARR64: u8 = 13;
}

impl JayType {
    /// The non-array type of a code, `None` for arrays and unknown codes.
    pub fn scalar_from_code(c: u8) -> Option<JayType> {
        Some(match c {
            code::BOOL8 => JayType::Bool8,
            code::INT8 => JayType::Int8,
            code::INT16 => JayType::Int16,
            code::INT32 => JayType::Int32,
            code::INT64 => JayType::Int64,
            code::FLOAT32 => JayType::Float32,
            code::FLOAT64 => JayType::Float64,
            code::STR32 => JayType::Str32,
            code::STR64 => JayType::Str64,
            code::DATE32 => JayType::Date32,
            code::TIME64 => JayType::Time64,
            code::VOID0 => JayType::Void0,
            _ => return None,
        })
    }

    /// The type's code as stored in the file ([`code`] constants).
    pub fn code(&self) -> u8 {
        match self {
            JayType::Bool8 => code::BOOL8,
            JayType::Int8 => code::INT8,
            JayType::Int16 => code::INT16,
            JayType::Int32 => code::INT32,
            JayType::Int64 => code::INT64,
            JayType::Float32 => code::FLOAT32,
            JayType::Float64 => code::FLOAT64,
            JayType::Str32 => code::STR32,
            JayType::Str64 => code::STR64,
            JayType::Date32 => code::DATE32,
            JayType::Time64 => code::TIME64,
            JayType::Void0 => code::VOID0,
            JayType::Arr32(_) => code::ARR32,
            JayType::Arr64(_) => code::ARR64,
        }
    }

    /// How a column of the type lays its values out in its buffers.
    pub(crate) fn storage(&self) -> Storage<'_> {
        match self {
            JayType::Void0 => Storage::Void,
            JayType::Bool8 => Storage::Bool,
            JayType::Int8 => Storage::Fixed(1),
            JayType::Int16 => Storage::Fixed(2),
            JayType::Int32 | JayType::Float32 | JayType::Date32 => Storage::Fixed(4),
            JayType::Int64 | JayType::Float64 | JayType::Time64 => Storage::Fixed(8),
            JayType::Str32 => Storage::Strings { offset_width: 4 },
            JayType::Str64 => Storage::Strings { offset_width: 8 },
            JayType::Arr32(element) => Storage::Arrays {
                element,
                offset_width: 4,
            },
            JayType::Arr64(element) => Storage::Arrays {
                element,
                offset_width: 8,
            },
        }
    }

    /// Bytes per row of a fixed-width type.
    pub fn element_size(&self) -> Option<usize> {
        match self {
            JayType::Bool8 | JayType::Int8 => Some(1),
            JayType::Int16 => Some(2),
            JayType::Int32 | JayType::Float32 | JayType::Date32 => Some(4),
            JayType::Int64 | JayType::Float64 | JayType::Time64 => Some(8),
            _ => None,
        }
    }

    /// Whether it is `Str32` or `Str64`.
    pub fn is_string(&self) -> bool {
        matches!(self, JayType::Str32 | JayType::Str64)
    }

    /// Whether it is `Arr32` or `Arr64`.
    pub fn is_array(&self) -> bool {
        matches!(self, JayType::Arr32(_) | JayType::Arr64(_))
    }

    /// The Arrow type a column of this Jay type reads as.
    pub fn arrow_type(&self) -> DataType {
        match self {
            JayType::Bool8 => DataType::Boolean,
            JayType::Int8 => DataType::Int8,
            JayType::Int16 => DataType::Int16,
            JayType::Int32 => DataType::Int32,
            JayType::Int64 => DataType::Int64,
            JayType::Float32 => DataType::Float32,
            JayType::Float64 => DataType::Float64,
            JayType::Str32 => DataType::Utf8,
            JayType::Str64 => DataType::LargeUtf8,
            JayType::Date32 => DataType::Date32,
            JayType::Time64 => DataType::Timestamp(TimeUnit::Nanosecond, None),
            JayType::Void0 => DataType::Null,
            JayType::Arr32(element) => DataType::List(list_item(element)),
            JayType::Arr64(element) => DataType::LargeList(list_item(element)),
        }
    }
}

fn list_item(element: &JayType) -> Arc<Field> {
    Arc::new(Field::new("item", element.arrow_type(), true))
}

impl fmt::Display for JayType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            JayType::Arr32(e) => write!(f, "Arr32({e})"),
            JayType::Arr64(e) => write!(f, "Arr64({e})"),
            other => fmt::Debug::fmt(other, f),
        }
    }
}

/// How an Arrow column is stored in Jay: the Jay type and the conversion on the way.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WriteMapping {
    /// Stored as it is (Boolean, signed integers, Float32/64, Date32, Null).
    Direct(JayType),
    /// An unsigned integer widened to the next signed type (UInt64 must fit Int64).
    Widen(JayType),
    /// Float16 widened exactly to Float32.
    HalfToFloat32,
    /// Date64 milliseconds to whole days.
    Date64ToDate32,
    /// A timestamp scaled to nanoseconds; the time zone, if any, is dropped.
    TimestampToTime64 {
        /// The unit of the Arrow timestamps.
        unit: TimeUnit,
        /// Their time zone, which Time64 cannot keep.
        tz: Option<String>,
    },
    /// Text (Utf8, Utf8View or a dictionary of text); `large` forces Str64.
    Text {
        /// Whether the offsets are 64-bit (Str64).
        large: bool,
    },
    /// A list of elements mapped by the same rules; `large` is Arr64.
    List {
        /// Whether the offsets are 64-bit (Arr64).
        large: bool,
        /// The mapping of the elements.
        element: Box<WriteMapping>,
    },
}

impl WriteMapping {
    /// The mapping of an Arrow type, or an `unsupported_type` error naming it.
    pub fn for_arrow(data_type: &DataType) -> Result<WriteMapping> {
        use DataType::*;
        Ok(match data_type {
            Boolean => WriteMapping::Direct(JayType::Bool8),
            Int8 => WriteMapping::Direct(JayType::Int8),
            Int16 => WriteMapping::Direct(JayType::Int16),
            Int32 => WriteMapping::Direct(JayType::Int32),
            Int64 => WriteMapping::Direct(JayType::Int64),
            UInt8 => WriteMapping::Widen(JayType::Int16),
            UInt16 => WriteMapping::Widen(JayType::Int32),
            UInt32 | UInt64 => WriteMapping::Widen(JayType::Int64),
            Float16 => WriteMapping::HalfToFloat32,
            Float32 => WriteMapping::Direct(JayType::Float32),
            Float64 => WriteMapping::Direct(JayType::Float64),
            Date32 => WriteMapping::Direct(JayType::Date32),
            Date64 => WriteMapping::Date64ToDate32,
            Timestamp(unit, tz) => WriteMapping::TimestampToTime64 {
                unit: *unit,
                tz: tz.as_ref().map(|t| t.to_string()),
            },
            Null => WriteMapping::Direct(JayType::Void0),
            Utf8 | Utf8View => WriteMapping::Text { large: false },
            LargeUtf8 => WriteMapping::Text { large: true },
            Dictionary(_, value) => match value.as_ref() {
                Utf8 | Utf8View => WriteMapping::Text { large: false },
                LargeUtf8 => WriteMapping::Text { large: true },
                _ => return Err(unsupported(data_type)),
            },
            List(item) => WriteMapping::List {
                large: false,
                element: Box::new(WriteMapping::for_arrow(item.data_type())?),
            },
            LargeList(item) => WriteMapping::List {
                large: true,
                element: Box::new(WriteMapping::for_arrow(item.data_type())?),
            },
            _ => return Err(unsupported(data_type)),
        })
    }
}

fn unsupported(data_type: &DataType) -> Error {
    Error::new(
        ErrorClass::UnsupportedType,
        format!("Arrow type {data_type} has no Jay equivalent"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_code_reads_as_its_arrow_type() {
        for c in 0..=11u8 {
            let t = JayType::scalar_from_code(c).unwrap();
            assert_eq!(t.code(), c);
        }
        assert_eq!(JayType::scalar_from_code(12), None);
        assert_eq!(JayType::scalar_from_code(14), None);
        assert_eq!(
            JayType::Arr64(Box::new(JayType::Str32)).arrow_type(),
            DataType::LargeList(Arc::new(Field::new("item", DataType::Utf8, true)))
        );
        assert_eq!(
            JayType::Arr32(Box::new(JayType::Arr32(Box::new(JayType::Int32)))).to_string(),
            "Arr32(Arr32(Int32))"
        );
    }

    #[test]
    fn unmappable_arrow_types_are_named() {
        let err = WriteMapping::for_arrow(&DataType::Binary).unwrap_err();
        assert_eq!(err.class(), ErrorClass::UnsupportedType);
        assert!(err.to_string().contains("Binary"));
        assert!(WriteMapping::for_arrow(&DataType::Dictionary(
            Box::new(DataType::Int8),
            Box::new(DataType::Int32)
        ))
        .is_err());
    }
}
