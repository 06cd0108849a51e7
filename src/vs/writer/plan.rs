//! How the batches of one schema become VS points ([`Plan`]): which column holds the vectors
//! and of what resolution and shape, where the app data comes from, and the meta block's
//! compression and attributes, all taken from the Arrow schema and its metadata (spec §14.2).

use arrow_schema::{DataType, Field, Schema};
use base64::Engine;

use super::{arg, WriterOptions};
use crate::error::{Error, ErrorClass, Result};
use crate::vs::codec;
use crate::vs::mapping::*;
use crate::vs::msgpack_json;

/// How a vector's elements are read from their Arrow values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Elements {
    Fixed(usize),
    Bool,
    String,
    JsonText,
    JsonMsgpack,
}

/// The vector column: where it is and what the meta block says of it.
#[derive(Debug, Clone)]
pub(super) struct VectorPlan {
    pub(super) index: usize,
    pub(super) resolution: Resolution,
    pub(super) dims: Vec<u64>,
    pub(super) n: usize,
    pub(super) elements: Elements,
}

/// Where a point's app data comes from.
#[derive(Debug, Clone)]
pub(super) enum AppPlan {
    Text(usize),
    Binary(usize),
    Struct(usize),
    /// The other columns, packed as a map per row (may be empty: `{}`).
    Columns(Vec<usize>),
}

/// How the batches of one schema become VS bytes.
#[derive(Debug, Clone)]
pub(super) struct Plan {
    /// `None`: the empty store (no meta block, no point).
    pub(super) vector: Option<VectorPlan>,
    pub(super) app: AppPlan,
    pub(super) compression: Compression,
    pub(super) attributes: Vec<u8>,
    pub(super) names: Vec<String>,
}

impl Plan {
    pub(super) fn new(
        schema: &Schema,
        options: &WriterOptions,
        default_pack: Option<u8>,
    ) -> Result<Plan> {
        let md = schema.metadata();
        let names: Vec<String> = schema.fields().iter().map(|f| f.name().clone()).collect();
        let compression = match options.compression {
            Some(c) => c,
            None => default_pack
                .or_else(|| md.get(META_PACK).and_then(|p| p.parse::<u8>().ok()))
                .and_then(Compression::from_code)
                .unwrap_or_default(),
        };
        let attributes = attributes_from(schema)?;
        let vector_index = schema.index_of(&options.vector_column).ok();
        let vector = match vector_index {
            None if md.get(META_META).map(String::as_str) == Some("absent") => None,
            None => {
                return Err(arg(format!(
                    "no column {:?}: a VS file needs a FixedSizeList vector column (name it with the vector column option)",
                    options.vector_column
                )))
            }
            Some(i) => Some(vector_plan(schema, i)?),
        };
        let app = match schema.index_of(&options.app_data_column).ok() {
            Some(i) => {
                let extra: Vec<&str> = names
                    .iter()
                    .enumerate()
                    .filter(|&(j, n)| j != i && Some(j) != vector_index && n != OFFSET_COLUMN)
                    .map(|(_, n)| n.as_str())
                    .collect();
                if !extra.is_empty() {
                    return Err(arg(format!(
                        "columns {} have no place next to the {:?} column; select the columns to write",
                        extra.join(", "),
                        options.app_data_column
                    )));
                }
                let field = schema.field(i);
                match field.data_type() {
                    DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => AppPlan::Text(i),
                    DataType::Binary | DataType::LargeBinary | DataType::BinaryView => {
                        AppPlan::Binary(i)
                    }
                    DataType::Struct(_) => AppPlan::Struct(i),
                    other => {
                        return Err(Error::new(
                            ErrorClass::UnsupportedType,
                            format!("app_data column of type {other}: expected JSON text (Utf8), msgpack (Binary) or a Struct"),
                        )
                        .with_column(i, Some(field.name())))
                    }
                }
            }
            None => AppPlan::Columns(
                (0..names.len())
                    .filter(|&j| Some(j) != vector_index && names[j] != OFFSET_COLUMN)
                    .collect(),
            ),
        };
        Ok(Plan {
            vector,
            app,
            compression,
            attributes,
            names,
        })
    }
}

fn attributes_from(schema: &Schema) -> Result<Vec<u8>> {
    let md = schema.metadata();
    if let Some(b64) = md.get(META_ATTRIBUTES_MSGPACK) {
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(b64)
            .map_err(|e| {
                arg(format!(
                    "schema metadata {META_ATTRIBUTES_MSGPACK}: not base64: {e}"
                ))
            })?;
        msgpack_json::validate(&bytes).map_err(|m| {
            arg(format!(
                "schema metadata {META_ATTRIBUTES_MSGPACK}: {}",
                m.message()
            ))
        })?;
        return Ok(bytes);
    }
    if let Some(text) = md.get(META_ATTRIBUTES) {
        let mut out = Vec::new();
        msgpack_json::json_text_to_msgpack(text, &mut out).map_err(|m| {
            arg(format!(
                "schema metadata {META_ATTRIBUTES}: {}",
                m.message()
            ))
        })?;
        return Ok(out);
    }
    Ok(vec![0x80])
}

fn vector_plan(schema: &Schema, index: usize) -> Result<VectorPlan> {
    let field = schema.field(index);
    let col = |e: Error| e.with_column(index, Some(field.name()));
    let (item, size) = match field.data_type() {
        DataType::FixedSizeList(item, size) => (item, *size as usize),
        DataType::List(_) | DataType::LargeList(_) | DataType::ListView(_) => {
            return Err(col(Error::new(
                ErrorClass::UnsupportedType,
                format!("vector column is {}: cast it to FixedSizeList (every VS vector has the same shape)", field.data_type()),
            )))
        }
        other => {
            return Err(col(Error::new(
                ErrorClass::UnsupportedType,
                format!("vector column is {other}: a VS vector must be a FixedSizeList"),
            )))
        }
    };
    let json_tagged =
        item.metadata().get(EXTENSION_NAME).map(String::as_str) == Some(JSON_EXTENSION);
    let (resolution, elements) = match item.data_type() {
        DataType::Float16 => {
            return Err(col(Error::new(
                ErrorClass::UnsupportedType,
                "Float16 vectors are read only in VS: cast them to Float32",
            )))
        }
        DataType::Boolean => (Resolution::Bool, Elements::Bool),
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => {
            if json_tagged
                || schema.metadata().get(META_RESOLUTION).map(String::as_str) == Some("101")
            {
                (Resolution::Json, Elements::JsonText)
            } else {
                (Resolution::String, Elements::String)
            }
        }
        DataType::Binary | DataType::LargeBinary | DataType::BinaryView => {
            (Resolution::Json, Elements::JsonMsgpack)
        }
        other => match Resolution::for_arrow(other) {
            Some(r) => (r, Elements::Fixed(r.byte_width().unwrap_or(1))),
            None => {
                return Err(col(Error::new(
                    ErrorClass::UnsupportedType,
                    format!("vector elements of type {other} have no VS resolution"),
                )))
            }
        },
    };
    let dims = shape_of(schema, field, size).map_err(col)?;
    Ok(VectorPlan {
        index,
        resolution,
        dims,
        n: size,
        elements,
    })
}

/// The shape, first match wins (spec §14.2).
fn shape_of(schema: &Schema, field: &Field, size: usize) -> Result<Vec<u64>> {
    let md = field.metadata();
    let parse_dims = |text: &str, what: &str| -> Result<Vec<u64>> {
        serde_json::from_str::<Vec<u64>>(text)
            .map_err(|e| arg(format!("{what} {text:?} is not a list of sizes: {e}")))
    };
    let dims = if md.get(EXTENSION_NAME).map(String::as_str) == Some(TENSOR_EXTENSION) {
        let text = md.get(EXTENSION_METADATA).map(String::as_str).unwrap_or("");
        let value: serde_json::Value = serde_json::from_str(text)
            .map_err(|e| arg(format!("tensor metadata {text:?} is not JSON: {e}")))?;
        let shape = value
            .get("shape")
            .and_then(|s| s.as_array())
            .ok_or_else(|| arg(format!("tensor metadata {text:?} has no shape")))?;
        let dims: Vec<u64> = shape
            .iter()
            .map(|d| {
                d.as_u64()
                    .ok_or_else(|| arg(format!("tensor shape {text:?}: {d} is not a size")))
            })
            .collect::<Result<_>>()?;
        for key in ["permutation", "permutations"] {
            if let Some(p) = value.get(key).and_then(|p| p.as_array()) {
                let trivial = p
                    .iter()
                    .enumerate()
                    .all(|(i, v)| v.as_u64() == Some(i as u64));
                if !trivial {
                    return Err(Error::new(
                        ErrorClass::Unsupported,
                        format!(
                            "tensor {key} {p:?}: materialize the tensor in row-major order first"
                        ),
                    ));
                }
            }
        }
        dims
    } else if let Some(text) = md.get(FIELD_SHAPE) {
        parse_dims(text, "field metadata vs.shape")?
    } else if let Some(text) = schema.metadata().get(META_DIMENSIONS) {
        parse_dims(text, "schema metadata vs.dimensions")?
    } else {
        vec![size as u64]
    };
    if dims.iter().any(|&d| d > u32::MAX as u64) {
        return Err(arg(format!(
            "shape {dims:?}: a VS dimension is at most 2^32-1"
        )));
    }
    let n = codec::element_count(&dims).map_err(|e| arg(e.message()))?;
    if n != size {
        return Err(arg(format!(
            "shape {dims:?} holds {n} elements but the list size is {size}"
        )));
    }
    Ok(dims)
}
