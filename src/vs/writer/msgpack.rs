//! Arrow values as msgpack, for app data taken from a Struct column or from the other columns
//! of a row (spec §14.2).

use arrow::compute::cast;
use arrow_array::cast::AsArray;
use arrow_array::types::*;
use arrow_array::{Array, ArrayRef};
use arrow_schema::DataType;

use crate::error::{Error, ErrorClass, Result};

/// One Arrow value as msgpack (the Struct rules of spec §14.2).
pub(super) fn arrow_to_msgpack(array: &dyn Array, row: usize) -> Result<rmpv::Value> {
    use rmpv::Value as V;
    if array.is_null(row) {
        return Ok(V::Nil);
    }
    macro_rules! int {
        ($t:ty) => {
            V::from(array.as_primitive::<$t>().value(row))
        };
    }
    Ok(match array.data_type() {
        DataType::Null => V::Nil,
        DataType::Boolean => V::Boolean(array.as_boolean().value(row)),
        DataType::Int8 => int!(Int8Type),
        DataType::Int16 => int!(Int16Type),
        DataType::Int32 => int!(Int32Type),
        DataType::Int64 => int!(Int64Type),
        DataType::UInt8 => int!(UInt8Type),
        DataType::UInt16 => int!(UInt16Type),
        DataType::UInt32 => int!(UInt32Type),
        DataType::UInt64 => int!(UInt64Type),
        DataType::Float16 => V::F32(array.as_primitive::<Float16Type>().value(row).to_f32()),
        DataType::Float32 => V::F32(array.as_primitive::<Float32Type>().value(row)),
        DataType::Float64 => V::F64(array.as_primitive::<Float64Type>().value(row)),
        DataType::Utf8 => V::from(array.as_string::<i32>().value(row)),
        DataType::LargeUtf8 => V::from(array.as_string::<i64>().value(row)),
        DataType::Utf8View => V::from(array.as_string_view().value(row)),
        DataType::Binary => V::from(array.as_binary::<i32>().value(row)),
        DataType::LargeBinary => V::from(array.as_binary::<i64>().value(row)),
        DataType::BinaryView => V::from(array.as_binary_view().value(row)),
        DataType::List(_) => list_to_msgpack(&array.as_list::<i32>().value(row))?,
        DataType::LargeList(_) => list_to_msgpack(&array.as_list::<i64>().value(row))?,
        DataType::FixedSizeList(_, _) => list_to_msgpack(&array.as_fixed_size_list().value(row))?,
        DataType::Struct(fields) => {
            let s = array.as_struct();
            let mut entries = Vec::with_capacity(fields.len());
            for (i, f) in fields.iter().enumerate() {
                entries.push((
                    V::from(f.name().as_str()),
                    arrow_to_msgpack(s.column(i).as_ref(), row)?,
                ));
            }
            V::Map(entries)
        }
        DataType::Map(_, _) => {
            let m = array.as_map();
            let entry = m.value(row);
            let (keys, values) = (entry.column(0), entry.column(1));
            let mut entries = Vec::with_capacity(entry.len());
            for i in 0..entry.len() {
                entries.push((
                    arrow_to_msgpack(keys.as_ref(), i)?,
                    arrow_to_msgpack(values.as_ref(), i)?,
                ));
            }
            V::Map(entries)
        }
        DataType::Dictionary(_, _) => {
            let one = array.slice(row, 1);
            let plain = cast(&one, dictionary_value_type(array.data_type()))?;
            arrow_to_msgpack(plain.as_ref(), 0)?
        }
        other => {
            let one = array.slice(row, 1);
            let text = cast(&one, &DataType::Utf8).map_err(|e| {
                Error::new(
                    ErrorClass::UnsupportedType,
                    format!("app_data: a value of type {other} has no msgpack form: {e}"),
                )
            })?;
            arrow_to_msgpack(text.as_ref(), 0)?
        }
    })
}

/// The value type of a dictionary (any other type is its own).
fn dictionary_value_type(t: &DataType) -> &DataType {
    match t {
        DataType::Dictionary(_, v) => v,
        other => other,
    }
}

/// A list's values as one msgpack array.
fn list_to_msgpack(values: &ArrayRef) -> Result<rmpv::Value> {
    (0..values.len())
        .map(|i| arrow_to_msgpack(values.as_ref(), i))
        .collect::<Result<Vec<_>>>()
        .map(rmpv::Value::Array)
}
