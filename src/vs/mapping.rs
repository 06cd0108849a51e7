//! The VS ⇄ Arrow type mapping: resolution codes, element sizes, Arrow types and the metadata
//! keys of the schema (spec §5, §14).

use arrow_schema::DataType;

pub const META_VERSION: &str = "vs.version";
pub const META_RANK: &str = "vs.rank";
pub const META_DIMENSIONS: &str = "vs.dimensions";
pub const META_RESOLUTION: &str = "vs.resolution";
pub const META_RESOLUTION_NAME: &str = "vs.resolution_name";
pub const META_PACK: &str = "vs.pack";
pub const META_PAGING: &str = "vs.paging";
pub const META_ATTRIBUTES: &str = "vs.attributes";
pub const META_ATTRIBUTES_MSGPACK: &str = "vs.attributes.msgpack";
pub const META_META: &str = "vs.meta";
/// Field metadata: the dims of a STRING/JSON vector column (no tensor tag there).
pub const FIELD_SHAPE: &str = "vs.shape";
/// Field metadata of the exact-mode `app_data` column.
pub const FIELD_ENCODING: &str = "vs.encoding";

pub const EXTENSION_NAME: &str = "ARROW:extension:name";
pub const EXTENSION_METADATA: &str = "ARROW:extension:metadata";
pub const TENSOR_EXTENSION: &str = "arrow.fixed_shape_tensor";
pub const JSON_EXTENSION: &str = "arrow.json";

pub const VECTOR_COLUMN: &str = "vector";
pub const APP_DATA_COLUMN: &str = "app_data";
pub const OFFSET_COLUMN: &str = "vs_offset";

/// The element type of every vector of a file (the meta block's `resolution`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Resolution {
    Bool,
    UInt8,
    Int8,
    UInt16,
    Int16,
    UInt32,
    Int32,
    UInt64,
    Int64,
    /// Read only (a later upstream revision's code 10).
    Float16,
    Float32,
    Float64,
    String,
    Json,
}

impl Resolution {
    pub const ALL: [Resolution; 14] = [
        Resolution::Bool,
        Resolution::UInt8,
        Resolution::Int8,
        Resolution::UInt16,
        Resolution::Int16,
        Resolution::UInt32,
        Resolution::Int32,
        Resolution::UInt64,
        Resolution::Int64,
        Resolution::Float16,
        Resolution::Float32,
        Resolution::Float64,
        Resolution::String,
        Resolution::Json,
    ];

    pub fn from_code(code: i8) -> Option<Resolution> {
        Resolution::ALL.into_iter().find(|r| r.code() == code)
    }

    pub fn code(self) -> i8 {
        match self {
            Resolution::Bool => 0,
            Resolution::UInt8 => 1,
            Resolution::Int8 => -1,
            Resolution::UInt16 => 2,
            Resolution::Int16 => -2,
            Resolution::UInt32 => 3,
            Resolution::Int32 => -3,
            Resolution::UInt64 => 4,
            Resolution::Int64 => -4,
            Resolution::Float16 => 10,
            Resolution::Float32 => 11,
            Resolution::Float64 => 12,
            Resolution::String => 100,
            Resolution::Json => 101,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Resolution::Bool => "BOOL",
            Resolution::UInt8 => "UINT8",
            Resolution::Int8 => "INT8",
            Resolution::UInt16 => "UINT16",
            Resolution::Int16 => "INT16",
            Resolution::UInt32 => "UINT32",
            Resolution::Int32 => "INT32",
            Resolution::UInt64 => "UINT64",
            Resolution::Int64 => "INT64",
            Resolution::Float16 => "FLOAT16",
            Resolution::Float32 => "FLOAT32",
            Resolution::Float64 => "FLOAT64",
            Resolution::String => "STRING",
            Resolution::Json => "JSON",
        }
    }

    /// Bytes per element of the fixed-width types (`None` for BOOL, STRING and JSON).
    pub fn byte_width(self) -> Option<usize> {
        match self {
            Resolution::UInt8 | Resolution::Int8 => Some(1),
            Resolution::UInt16 | Resolution::Int16 | Resolution::Float16 => Some(2),
            Resolution::UInt32 | Resolution::Int32 | Resolution::Float32 => Some(4),
            Resolution::UInt64 | Resolution::Int64 | Resolution::Float64 => Some(8),
            Resolution::Bool | Resolution::String | Resolution::Json => None,
        }
    }

    /// Whether STRING or JSON: variable-length elements.
    pub fn is_variable(self) -> bool {
        matches!(self, Resolution::String | Resolution::Json)
    }

    /// The plain (uncompressed) size of a vector of `n` elements, for the fixed-size types.
    pub fn plain_size(self, n: usize) -> Option<usize> {
        match self {
            Resolution::Bool => Some(n.div_ceil(8)),
            other => other.byte_width().and_then(|w| n.checked_mul(w)),
        }
    }

    /// The Arrow type of one element (`exact`: JSON elements as raw msgpack `Binary`).
    pub fn arrow_type(self, exact: bool) -> DataType {
        match self {
            Resolution::Bool => DataType::Boolean,
            Resolution::UInt8 => DataType::UInt8,
            Resolution::Int8 => DataType::Int8,
            Resolution::UInt16 => DataType::UInt16,
            Resolution::Int16 => DataType::Int16,
            Resolution::UInt32 => DataType::UInt32,
            Resolution::Int32 => DataType::Int32,
            Resolution::UInt64 => DataType::UInt64,
            Resolution::Int64 => DataType::Int64,
            Resolution::Float16 => DataType::Float16,
            Resolution::Float32 => DataType::Float32,
            Resolution::Float64 => DataType::Float64,
            Resolution::String => DataType::Utf8,
            Resolution::Json if exact => DataType::Binary,
            Resolution::Json => DataType::Utf8,
        }
    }

    /// The resolution an Arrow element type is written as (STRING/JSON need the field's tags,
    /// which [`super::writer`] looks at).
    pub fn for_arrow(data_type: &DataType) -> Option<Resolution> {
        Some(match data_type {
            DataType::Boolean => Resolution::Bool,
            DataType::UInt8 => Resolution::UInt8,
            DataType::Int8 => Resolution::Int8,
            DataType::UInt16 => Resolution::UInt16,
            DataType::Int16 => Resolution::Int16,
            DataType::UInt32 => Resolution::UInt32,
            DataType::Int32 => Resolution::Int32,
            DataType::UInt64 => Resolution::UInt64,
            DataType::Int64 => Resolution::Int64,
            DataType::Float32 => Resolution::Float32,
            DataType::Float64 => Resolution::Float64,
            DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => Resolution::String,
            DataType::Binary | DataType::LargeBinary | DataType::BinaryView => Resolution::Json,
            _ => return None,
        })
    }
}

/// Vector compression (the low 3 bits of a vector's option byte, and the meta `pack`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Compression {
    #[default]
    None,
    Gzip,
    Snappy,
}

impl Compression {
    pub fn code(self) -> u8 {
        match self {
            Compression::None => 0,
            Compression::Gzip => 1,
            Compression::Snappy => 2,
        }
    }

    pub fn from_code(code: u8) -> Option<Compression> {
        match code {
            0 => Some(Compression::None),
            1 => Some(Compression::Gzip),
            2 => Some(Compression::Snappy),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Compression::None => "none",
            Compression::Gzip => "gzip",
            Compression::Snappy => "snappy",
        }
    }

    /// Parses `none`, `gzip` or `snappy`.
    pub fn parse(text: &str) -> Option<Compression> {
        match text.to_ascii_lowercase().as_str() {
            "none" | "uncompressed" => Some(Compression::None),
            "gzip" => Some(Compression::Gzip),
            "snappy" => Some(Compression::Snappy),
            _ => None,
        }
    }
}

/// Compact JSON of a shape: `[2,3]`, `[]`.
pub fn shape_json(dims: &[u64]) -> String {
    let items: Vec<String> = dims.iter().map(u64::to_string).collect();
    format!("[{}]", items.join(","))
}

/// The `arrow.fixed_shape_tensor` metadata arrowsmith writes: `{"shape":[…]}` and nothing else.
pub fn tensor_metadata(dims: &[u64]) -> String {
    format!("{{\"shape\":{}}}", shape_json(dims))
}
