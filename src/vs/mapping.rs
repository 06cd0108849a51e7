//! The VS ⇄ Arrow type mapping: resolution codes, element sizes, Arrow types and the metadata
//! keys of the schema (spec §5, §14).

use arrow_schema::DataType;

/// Schema metadata: the header version.
pub const META_VERSION: &str = "vs.version";
/// Schema metadata: the rank, in decimal.
pub const META_RANK: &str = "vs.rank";
/// Schema metadata: the dimensions as compact JSON (`[2,3]`).
pub const META_DIMENSIONS: &str = "vs.dimensions";
/// Schema metadata: the resolution code, signed decimal.
pub const META_RESOLUTION: &str = "vs.resolution";
/// Schema metadata: the resolution's name (`INT16`).
pub const META_RESOLUTION_NAME: &str = "vs.resolution_name";
/// Schema metadata: the meta block's `pack` (default compression), decimal.
pub const META_PACK: &str = "vs.pack";
/// Schema metadata: the meta block's `paging`, decimal.
pub const META_PAGING: &str = "vs.paging";
/// Schema metadata: the attributes as compact JSON text; absent when the file has none.
pub const META_ATTRIBUTES: &str = "vs.attributes";
/// Schema metadata, exact mode only: the attribute bytes in base64.
pub const META_ATTRIBUTES_MSGPACK: &str = "vs.attributes.msgpack";
/// Schema metadata: `absent` when the file has no meta block.
pub const META_META: &str = "vs.meta";
/// Field metadata: the dims of a STRING/JSON vector column (no tensor tag there).
pub const FIELD_SHAPE: &str = "vs.shape";
/// Field metadata of the exact-mode `app_data` column.
pub const FIELD_ENCODING: &str = "vs.encoding";

/// Field metadata key of an Arrow extension type's name.
pub const EXTENSION_NAME: &str = "ARROW:extension:name";
/// Field metadata key of an Arrow extension type's parameters.
pub const EXTENSION_METADATA: &str = "ARROW:extension:metadata";
/// The extension of a numeric vector column: a fixed-shape tensor of the file's dims.
pub const TENSOR_EXTENSION: &str = "arrow.fixed_shape_tensor";
/// The extension of a column of JSON text (app data, JSON vectors).
pub const JSON_EXTENSION: &str = "arrow.json";

/// The column of the vectors.
pub const VECTOR_COLUMN: &str = "vector";
/// The column of the points' app data.
pub const APP_DATA_COLUMN: &str = "app_data";
/// The optional column of each point's block offset (`with_offsets`).
pub const OFFSET_COLUMN: &str = "vs_offset";

/// The element type of every vector of a file (the meta block's `resolution`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Resolution {
    /// Booleans, one byte each.
    Bool,
    /// 8-bit unsigned integers.
    UInt8,
    /// 8-bit signed integers.
    Int8,
    /// 16-bit unsigned integers.
    UInt16,
    /// 16-bit signed integers.
    Int16,
    /// 32-bit unsigned integers.
    UInt32,
    /// 32-bit signed integers.
    Int32,
    /// 64-bit unsigned integers.
    UInt64,
    /// 64-bit signed integers.
    Int64,
    /// Read only (a later upstream revision's code 10).
    Float16,
    /// 32-bit floats.
    Float32,
    /// 64-bit floats.
    Float64,
    /// One UTF-8 string per vector.
    String,
    /// One JSON value per vector.
    Json,
}

impl Resolution {
    /// Every resolution.
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

    /// The resolution with this code, if the format defines it.
    pub fn from_code(code: i8) -> Option<Resolution> {
        Resolution::ALL.into_iter().find(|r| r.code() == code)
    }

    /// The code stored in the meta block.
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

    /// The name the spec gives it (`"INT16"`, …).
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
    /// which the VS writer looks at).
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
    /// Stored as is.
    #[default]
    None,
    /// gzip (deflate with a gzip header).
    Gzip,
    /// Raw Snappy.
    Snappy,
}

impl Compression {
    /// The compression's code (the meta `pack` and option byte values).
    pub fn code(self) -> u8 {
        match self {
            Compression::None => 0,
            Compression::Gzip => 1,
            Compression::Snappy => 2,
        }
    }

    /// The compression with this code, if the format defines it.
    pub fn from_code(code: u8) -> Option<Compression> {
        match code {
            0 => Some(Compression::None),
            1 => Some(Compression::Gzip),
            2 => Some(Compression::Snappy),
            _ => None,
        }
    }

    /// The compression's name (`"gzip"`, …).
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
