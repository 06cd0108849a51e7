//! Filo ↔ Arrow type mapping (`docs/filo.md` has the table; specs/filo.md section 10).
//!
//! The bytes of a Filo vector never say which element type they hold, so every read is told:
//! by an Arrow `DataType` (library), a type name (CLI, `schema.json`).

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

use arrow_schema::{DataType, Field, Fields, TimeUnit};

use crate::error::{Error, ErrorClass, Result};

/// Name of the DateTime struct's instant child.
pub const DATETIME_MILLIS: &str = "millis";
/// Name of the DateTime struct's offset child (UTC offset / 15 minutes).
pub const DATETIME_TZ: &str = "tz_offset_quarter_hours";

/// The element type of a Filo vector: filo-scala's column classes, plus arrowsmith's Binary.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum FiloType {
    /// 32-bit signed integer (Arrow `Int32`).
    Int,
    /// 64-bit signed integer (Arrow `Int64`).
    Long,
    /// 64-bit float (Arrow `Float64`).
    Double,
    /// 32-bit float (Arrow `Float32`).
    Float,
    /// Boolean (Arrow `Boolean`).
    Boolean,
    /// UTF-8 text (Arrow `Utf8`).
    String,
    /// Milliseconds since the epoch, UTC (Arrow `Timestamp(ms)`).
    Timestamp,
    /// Milliseconds with a fixed UTC offset per value (an Arrow struct of millis and offset).
    DateTime,
    /// arrowsmith extension (single vectors only).
    Binary,
}

impl FiloType {
    /// The types a Filo set's `schema.json` may name.
    pub const SET_TYPES: [FiloType; 8] = [
        FiloType::Int,
        FiloType::Long,
        FiloType::Double,
        FiloType::Float,
        FiloType::Boolean,
        FiloType::String,
        FiloType::Timestamp,
        FiloType::DateTime,
    ];

    /// The type's name as filo and `schema.json` spell it (`"Long"`, …).
    pub fn name(self) -> &'static str {
        match self {
            FiloType::Int => "Int",
            FiloType::Long => "Long",
            FiloType::Double => "Double",
            FiloType::Float => "Float",
            FiloType::Boolean => "Boolean",
            FiloType::String => "String",
            FiloType::Timestamp => "Timestamp",
            FiloType::DateTime => "DateTime",
            FiloType::Binary => "Binary",
        }
    }

    /// The Arrow type the reader produces for this element type.
    pub fn arrow_type(self) -> DataType {
        match self {
            FiloType::Int => DataType::Int32,
            FiloType::Long => DataType::Int64,
            FiloType::Double => DataType::Float64,
            FiloType::Float => DataType::Float32,
            FiloType::Boolean => DataType::Boolean,
            FiloType::String => DataType::Utf8,
            FiloType::Timestamp => timestamp_utc(),
            FiloType::DateTime => datetime_type(),
            FiloType::Binary => DataType::Binary,
        }
    }

    /// The element type to read when the caller asks for `data_type` (section 10.2, read
    /// column). A `Timestamp(Millisecond, _)` reads Timestamp (and the instants of DateTime).
    pub fn for_read(data_type: &DataType) -> Result<FiloType> {
        Ok(match data_type {
            DataType::Int32 => FiloType::Int,
            DataType::Int64 => FiloType::Long,
            DataType::Float64 => FiloType::Double,
            DataType::Float32 => FiloType::Float,
            DataType::Boolean => FiloType::Boolean,
            DataType::Utf8 => FiloType::String,
            DataType::Binary => FiloType::Binary,
            DataType::Timestamp(TimeUnit::Millisecond, _) => FiloType::Timestamp,
            DataType::Struct(fields) if is_datetime_struct(fields) => FiloType::DateTime,
            other => {
                return Err(Error::new(
                    ErrorClass::UnsupportedType,
                    format!("a Filo vector cannot be read as Arrow {other}"),
                ))
            }
        })
    }

    /// The element type that stores an Arrow column of `data_type` (section 10.2, write column).
    pub fn for_write(data_type: &DataType) -> Result<FiloType> {
        Ok(match data_type {
            DataType::Int8
            | DataType::Int16
            | DataType::Int32
            | DataType::UInt8
            | DataType::UInt16 => FiloType::Int,
            DataType::Int64 | DataType::UInt32 => FiloType::Long,
            DataType::Float64 => FiloType::Double,
            DataType::Float32 => FiloType::Float,
            DataType::Boolean => FiloType::Boolean,
            DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => FiloType::String,
            DataType::Dictionary(_, v) if v.as_ref() == &DataType::Utf8 => FiloType::String,
            DataType::Binary | DataType::LargeBinary => FiloType::Binary,
            DataType::Timestamp(_, _) => FiloType::Timestamp,
            DataType::Struct(fields) if is_datetime_struct(fields) => FiloType::DateTime,
            other => {
                return Err(Error::new(
                    ErrorClass::UnsupportedType,
                    format!(
                        "Arrow {other} has no Filo type (Filo stores Int, Long, Double, Float, \
                         Boolean, String, Timestamp and DateTime)"
                    ),
                ))
            }
        })
    }
}

impl fmt::Display for FiloType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for FiloType {
    type Err = Error;
    fn from_str(s: &str) -> Result<FiloType> {
        FiloType::SET_TYPES
            .into_iter()
            .chain([FiloType::Binary])
            .find(|t| t.name() == s)
            .ok_or_else(|| {
                Error::invalid_argument(format!(
                    "unknown Filo type {s:?}: expected one of Int, Long, Double, Float, Boolean, \
                     String, Timestamp, DateTime, Binary"
                ))
            })
    }
}

/// `Timestamp(Millisecond, "UTC")`, the Arrow type of Filo's Timestamp.
pub fn timestamp_utc() -> DataType {
    DataType::Timestamp(TimeUnit::Millisecond, Some("UTC".into()))
}

/// The children of the DateTime struct (section 10.3).
pub fn datetime_fields() -> Fields {
    Fields::from(vec![
        Field::new(DATETIME_MILLIS, timestamp_utc(), false),
        Field::new(DATETIME_TZ, DataType::Int8, false),
    ])
}

/// The lossless Arrow form of Filo's DateTime: `Struct{millis, tz_offset_quarter_hours}`.
pub fn datetime_type() -> DataType {
    DataType::Struct(datetime_fields())
}

fn is_datetime_struct(fields: &Fields) -> bool {
    fields.len() == 2
        && fields[0].name() == DATETIME_MILLIS
        && matches!(fields[0].data_type(), DataType::Timestamp(_, _))
        && fields[1].name() == DATETIME_TZ
        && fields[1].data_type() == &DataType::Int8
}

/// The offset of a fixed-offset time zone label in quarter-hours, `None` for a named zone
/// (section 10.3: `UTC`, `Z`, `±HH:MM`, `±HHMM`, multiples of 15 minutes).
pub fn fixed_offset_quarter_hours(tz: Option<&str>) -> Option<i8> {
    let tz = match tz {
        None => return Some(0),
        Some(t) => t,
    };
    if matches!(tz, "UTC" | "Z" | "+00:00" | "-00:00" | "+0000") {
        return Some(0);
    }
    let bytes = tz.as_bytes();
    let sign = match bytes.first()? {
        b'+' => 1i32,
        b'-' => -1,
        _ => return None,
    };
    let digits: String = tz[1..].chars().filter(|c| *c != ':').collect();
    let shape_ok = (tz.len() == 6 && bytes[3] == b':') || (tz.len() == 5 && !tz.contains(':'));
    if !shape_ok || digits.len() != 4 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let hours: i32 = digits[..2].parse().ok()?;
    let minutes: i32 = digits[2..].parse().ok()?;
    if minutes >= 60 || minutes % 15 != 0 {
        return None;
    }
    let qh = sign * (hours * 4 + minutes / 15);
    if !(-95..=95).contains(&qh) {
        return None;
    }
    i8::try_from(qh).ok()
}

/// The Arrow field of a Filo set column.
pub fn set_field(name: &str, filo_type: FiloType) -> Arc<Field> {
    Arc::new(Field::new(name, filo_type.arrow_type(), true))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixed_offsets() {
        assert_eq!(fixed_offset_quarter_hours(None), Some(0));
        assert_eq!(fixed_offset_quarter_hours(Some("UTC")), Some(0));
        assert_eq!(fixed_offset_quarter_hours(Some("+05:30")), Some(22));
        assert_eq!(fixed_offset_quarter_hours(Some("-0500")), Some(-20));
        assert_eq!(fixed_offset_quarter_hours(Some("+05:10")), None);
        assert_eq!(fixed_offset_quarter_hours(Some("Europe/Paris")), None);
    }

    #[test]
    fn names_round_trip() {
        for t in FiloType::SET_TYPES {
            assert_eq!(t.name().parse::<FiloType>().unwrap(), t);
            let read = FiloType::for_read(&t.arrow_type()).unwrap();
            assert_eq!(read, t);
            assert_eq!(FiloType::for_write(&t.arrow_type()).unwrap(), t);
        }
        assert!("int".parse::<FiloType>().is_err());
    }
}
