//! Arrow → VS (spec §13.2–13.5, §14.2): writing a new file, appending points crash-safely,
//! deleting a point in place and compacting.

use std::fs::File;
use std::io::Write;
use std::path::Path;

use arrow::compute::cast;
use arrow_array::cast::AsArray;
use arrow_array::types::*;
use arrow_array::{Array, ArrayRef, FixedSizeListArray, RecordBatch, RecordBatchReader};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use base64::Engine;
use rayon::prelude::*;

use super::codec::{self, Blocks, EofMode, Meta, VarintOrder};
use super::lock::{self, LockKind, LockWait};
use super::mapping::*;
use super::vector_codec::VectorEncoder;
use crate::atomic::{AtomicFile, StreamOutput, SINK_NAME};
use crate::error::{Error, ErrorClass, Result};
use crate::write::{BatchWriter, WriteSummary};

/// Rows per parallel encoding task.
const CHUNK_ROWS: usize = 256;

/// Options of the VS writer and appender.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VsWriteOptions {
    /// Vector compression; `None`: the schema's `vs.pack` when 0–2 (appender: the file's
    /// `pack`), else none.
    pub compression: Option<Compression>,
    /// The input column that holds the vectors (default `"vector"`).
    pub vector_column: String,
    /// The input column that holds the points' app data (default `"app_data"`).
    pub app_data_column: String,
    /// Whether to wait for the file's lock (default [`LockWait::Block`]).
    pub lock: LockWait,
    /// Appender: a file that ends at a block boundary without `'$'` gets one first.
    pub lenient_eof: bool,
}

impl Default for VsWriteOptions {
    fn default() -> Self {
        VsWriteOptions {
            compression: None,
            vector_column: VECTOR_COLUMN.to_owned(),
            app_data_column: APP_DATA_COLUMN.to_owned(),
            lock: LockWait::Block,
            lenient_eof: false,
        }
    }
}

impl VsWriteOptions {
    /// Vector compression (default: as the schema's `vs.pack` says, or the appended file's).
    pub fn with_compression(mut self, compression: Compression) -> Self {
        self.compression = Some(compression);
        self
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Elements {
    Fixed(usize),
    Bool,
    String,
    JsonText,
    JsonMsgpack,
}

#[derive(Debug, Clone)]
struct VectorPlan {
    index: usize,
    resolution: Resolution,
    dims: Vec<u64>,
    n: usize,
    elements: Elements,
}

#[derive(Debug, Clone)]
enum AppPlan {
    Text(usize),
    Binary(usize),
    Struct(usize),
    /// The other columns, packed as a map per row (may be empty: `{}`).
    Columns(Vec<usize>),
}

/// How the batches of one schema become VS bytes.
#[derive(Debug, Clone)]
struct Plan {
    /// `None`: the empty store (no meta block, no point).
    vector: Option<VectorPlan>,
    app: AppPlan,
    compression: Compression,
    attributes: Vec<u8>,
    names: Vec<String>,
}

fn arg(message: impl Into<String>) -> Error {
    Error::invalid_argument(message)
}

impl Plan {
    fn new(schema: &Schema, options: &VsWriteOptions, default_pack: Option<u8>) -> Result<Plan> {
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

    /// The `'^'` block of this plan.
    fn meta_block(&self, out: &mut Vec<u8>) {
        let Some(v) = &self.vector else { return };
        let mut payload = Vec::new();
        codec::write_varuint(&mut payload, v.dims.len() as u64);
        for &d in &v.dims {
            codec::write_varuint(&mut payload, d);
        }
        payload.push(v.resolution.code() as u8);
        payload.push(self.compression.code());
        payload.push(0);
        codec::write_json_field(&mut payload, Some(&self.attributes));
        out.push(codec::META);
        out.extend_from_slice(&(payload.len() as u32).to_le_bytes());
        out.extend_from_slice(&payload);
    }

    /// The `'P'` blocks of every row of `batch`, appended to `out`.
    fn encode(&self, batch: &RecordBatch, row_base: u64, out: &mut Vec<u8>) -> Result<()> {
        let Some(v) = &self.vector else {
            if batch.num_rows() > 0 {
                return Err(arg("rows without a vector column cannot be written"));
            }
            return Ok(());
        };
        let prepared = Prepared::new(self, v, batch)?;
        let rows = batch.num_rows();
        let heavy = self.compression != Compression::None || rows * v.n >= 1 << 16;
        if heavy && rows > CHUNK_ROWS {
            let chunks: Vec<Vec<u8>> = (0..rows.div_ceil(CHUNK_ROWS))
                .into_par_iter()
                .map(|c| {
                    let mut buf = Vec::new();
                    let mut scratch = PointScratch::default();
                    let end = ((c + 1) * CHUNK_ROWS).min(rows);
                    for row in c * CHUNK_ROWS..end {
                        prepared.point(row, row_base, &mut buf, &mut scratch)?;
                    }
                    Ok(buf)
                })
                .collect::<Result<_>>()?;
            for chunk in chunks {
                out.extend_from_slice(&chunk);
            }
        } else {
            let mut scratch = PointScratch::default();
            for row in 0..rows {
                prepared.point(row, row_base, out, &mut scratch)?;
            }
        }
        Ok(())
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
        codec::validate_msgpack(&bytes)
            .map_err(|m| arg(format!("schema metadata {META_ATTRIBUTES_MSGPACK}: {m}")))?;
        return Ok(bytes);
    }
    if let Some(text) = md.get(META_ATTRIBUTES) {
        let mut out = Vec::new();
        codec::json_text_to_msgpack(text, &mut out)
            .map_err(|m| arg(format!("schema metadata {META_ATTRIBUTES}: {m}")))?;
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
    let n = codec::element_count(&dims).map_err(arg)?;
    if n != size {
        return Err(arg(format!(
            "shape {dims:?} holds {n} elements but the list size is {size}"
        )));
    }
    Ok(dims)
}

/// A batch's columns, cast once into the forms the encoder reads.
struct Prepared<'p> {
    plan: &'p Plan,
    v: &'p VectorPlan,
    list: FixedSizeListArray,
    /// Fixed-width values: the bytes of element 0 of the list's values.
    fixed: Option<(arrow::array::ArrayData, usize)>,
    /// STRING / JSON text elements, or JSON msgpack elements.
    texts: Option<ArrayRef>,
    app: Vec<ArrayRef>,
}

impl<'p> Prepared<'p> {
    fn new(plan: &'p Plan, v: &'p VectorPlan, batch: &RecordBatch) -> Result<Prepared<'p>> {
        let list = batch.column(v.index).as_fixed_size_list().clone();
        let values = list.values();
        let (fixed, texts) = match v.elements {
            Elements::Fixed(w) => (Some((values.to_data(), w)), None),
            Elements::Bool => (None, None),
            Elements::String | Elements::JsonText => {
                (None, Some(cast(values, &DataType::LargeUtf8)?))
            }
            Elements::JsonMsgpack => (None, Some(cast(values, &DataType::LargeBinary)?)),
        };
        let app = match &plan.app {
            AppPlan::Text(i) => vec![cast(batch.column(*i), &DataType::LargeUtf8)?],
            AppPlan::Binary(i) => vec![cast(batch.column(*i), &DataType::LargeBinary)?],
            AppPlan::Struct(i) => vec![batch.column(*i).clone()],
            AppPlan::Columns(cols) => cols.iter().map(|&i| batch.column(i).clone()).collect(),
        };
        Ok(Prepared {
            plan,
            v,
            list,
            fixed,
            texts,
            app,
        })
    }

    /// Appends the `'P'` block of `row`.
    fn point(
        &self,
        row: usize,
        row_base: u64,
        out: &mut Vec<u8>,
        scratch: &mut PointScratch,
    ) -> Result<()> {
        let at = |e: Error| e.at_row(row_base + row as u64);
        let v = self.v;
        if self.list.is_null(row) {
            return Err(at(arg("null vector: a VS point always has a vector")
                .with_column(v.index, Some(&self.plan.names[v.index]))));
        }
        // A sliced FixedSizeListArray slices its values too, so offsets start at zero.
        let start = row * self.list.value_length() as usize;
        let values = self.list.values();
        if let Some(nulls) = values.logical_nulls() {
            if let Some(e) = (0..v.n).find(|&e| nulls.is_null(start + e)) {
                return Err(at(arg(format!(
                    "element {e}: null: VS vectors have no missing elements"
                ))
                .with_column(v.index, Some(&self.plan.names[v.index]))));
            }
        }
        let plain_owned = &mut scratch.plain;
        plain_owned.clear();
        let plain: &[u8] = match v.elements {
            Elements::Fixed(w) => {
                let (data, _) = self.fixed.as_ref().expect("fixed data");
                let base = (data.offset() + start) * w;
                &data.buffers()[0].as_slice()[base..base + v.n * w]
            }
            Elements::Bool => {
                let bits = values.as_boolean().values().slice(start, v.n);
                let packed = bits.sliced();
                plain_owned.extend_from_slice(&packed.as_slice()[..v.n.div_ceil(8)]);
                if v.n % 8 != 0 {
                    if let Some(last) = plain_owned.last_mut() {
                        *last &= (1u8 << (v.n % 8)) - 1;
                    }
                }
                &plain_owned[..]
            }
            Elements::String => {
                let s = self.texts.as_ref().expect("texts").as_string::<i64>();
                for e in 0..v.n {
                    let text = s.value(start + e);
                    codec::write_varuint(plain_owned, text.len() as u64);
                    plain_owned.extend_from_slice(text.as_bytes());
                }
                &plain_owned[..]
            }
            Elements::JsonText => {
                let s = self.texts.as_ref().expect("texts").as_string::<i64>();
                let packed = &mut scratch.element;
                for e in 0..v.n {
                    packed.clear();
                    codec::json_text_to_msgpack(s.value(start + e), packed)
                        .map_err(|m| at(arg(format!("element {e}: {m}"))))?;
                    codec::write_json_field(plain_owned, Some(packed));
                }
                &plain_owned[..]
            }
            Elements::JsonMsgpack => {
                let s = self.texts.as_ref().expect("texts").as_binary::<i64>();
                for e in 0..v.n {
                    let bytes = s.value(start + e);
                    if !bytes.is_empty() {
                        codec::validate_msgpack(bytes)
                            .map_err(|m| at(arg(format!("element {e}: {m}"))))?;
                    }
                    codec::write_json_field(plain_owned, Some(bytes));
                }
                &plain_owned[..]
            }
        };
        let (code, stored) = scratch
            .encoder
            .compress(plain, self.plan.compression)
            .map_err(at)?;
        let stored_len = u32::try_from(stored.len())
            .map_err(|_| at(arg("a vector of more than 4 GiB does not fit a VS point")))?;

        // app_data
        let app = &mut scratch.app;
        app.clear();
        let mut app_present = true;
        match &self.plan.app {
            AppPlan::Text(_) => {
                let s = self.app[0].as_string::<i64>();
                if s.is_null(row) {
                    app.push(0xC0);
                } else {
                    codec::json_text_to_msgpack(s.value(row), app)
                        .map_err(|m| at(arg(format!("app_data: {m}"))))?;
                }
            }
            AppPlan::Binary(_) => {
                let b = self.app[0].as_binary::<i64>();
                if b.is_null(row) || b.value(row).is_empty() {
                    app_present = false;
                } else {
                    codec::validate_msgpack(b.value(row))
                        .map_err(|m| at(arg(format!("app_data: {m}"))))?;
                    app.extend_from_slice(b.value(row));
                }
            }
            AppPlan::Struct(_) => {
                let value = arrow_to_msgpack(self.app[0].as_ref(), row).map_err(at)?;
                rmpv::encode::write_value(app, &value)
                    .map_err(|e| at(arg(format!("app_data: {e}"))))?;
            }
            AppPlan::Columns(cols) => {
                let _ = rmp::encode::write_map_len(app, cols.len() as u32);
                for (k, &i) in cols.iter().enumerate() {
                    let _ = rmp::encode::write_str(app, &self.plan.names[i]);
                    let value = arrow_to_msgpack(self.app[k].as_ref(), row).map_err(at)?;
                    rmpv::encode::write_value(app, &value)
                        .map_err(|e| at(arg(format!("app_data: {e}"))))?;
                }
            }
        }
        let mut payload_len = 1 + 1 + 4 + stored.len();
        if app_present {
            payload_len += varuint_len(app.len() as u64) + app.len();
        } else {
            payload_len += 1;
        }
        let payload_len = u32::try_from(payload_len)
            .map_err(|_| at(arg("a point of more than 4 GiB does not fit a VS block")))?;
        out.push(codec::POINT);
        out.extend_from_slice(&payload_len.to_le_bytes());
        out.push(0);
        codec::write_json_field(out, app_present.then_some(&app[..]));
        out.push(code);
        out.extend_from_slice(&stored_len.to_le_bytes());
        out.extend_from_slice(stored);
        Ok(())
    }
}

/// Buffers and compressor state one writer task reuses from point to point.
#[derive(Default)]
struct PointScratch {
    encoder: VectorEncoder,
    plain: Vec<u8>,
    element: Vec<u8>,
    app: Vec<u8>,
}

fn varuint_len(mut v: u64) -> usize {
    let mut n = 1;
    while v >= 0x80 {
        v >>= 7;
        n += 1;
    }
    n
}

/// One Arrow value as msgpack (the Struct rules of spec §14.2).
fn arrow_to_msgpack(array: &dyn Array, row: usize) -> Result<rmpv::Value> {
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

fn dictionary_value_type(t: &DataType) -> &DataType {
    match t {
        DataType::Dictionary(_, v) => v,
        other => other,
    }
}

fn list_to_msgpack(values: &ArrayRef) -> Result<rmpv::Value> {
    (0..values.len())
        .map(|i| arrow_to_msgpack(values.as_ref(), i))
        .collect::<Result<Vec<_>>>()
        .map(rmpv::Value::Array)
}

/// Writes record batches into a new VS file (temporary file + rename, spec §13.2).
pub struct Writer {
    out: Option<StreamOutput>,
    /// The column types the writer was made for; a batch of others is refused, not decoded.
    types: Vec<DataType>,
    plan: Plan,
    options: VsWriteOptions,
    rows: u64,
    buf: Vec<u8>,
}

impl Writer {
    /// Starts writing a VS file at `path` for batches of `schema`. Nothing appears at `path` until
    /// [`Writer::finish`].
    pub fn try_new(
        path: impl AsRef<Path>,
        schema: SchemaRef,
        options: VsWriteOptions,
    ) -> Result<Writer> {
        let path = path.as_ref();
        Writer::start(path, || StreamOutput::file(path), schema, options)
    }

    /// Like [`Writer::try_new`], but the file goes into `sink` (a pipe, a socket, a buffer) as
    /// it is written, without the lock a file on disk is replaced under. A failed write may
    /// leave part of the file in the sink.
    pub fn try_new_to_sink(
        sink: impl Write + Send + 'static,
        schema: SchemaRef,
        options: VsWriteOptions,
    ) -> Result<Writer> {
        let sink = StreamOutput::sink(sink);
        Writer::start(Path::new(SINK_NAME), || Ok(sink), schema, options)
    }

    fn start(
        path: &Path,
        output: impl FnOnce() -> Result<StreamOutput>,
        schema: SchemaRef,
        options: VsWriteOptions,
    ) -> Result<Writer> {
        let plan = Plan::new(&schema, &options, None).map_err(|e| e.with_file(path))?;
        let mut out = output()?;
        let mut head = b"VS\0\0".to_vec();
        plan.meta_block(&mut head);
        out.write_all(&head)
            .map_err(|e| Error::from(e).with_file(path))?;
        Ok(Writer {
            out: Some(out),
            types: schema
                .fields()
                .iter()
                .map(|f| f.data_type().clone())
                .collect(),
            plan,
            options,
            rows: 0,
            buf: Vec::new(),
        })
    }

    /// Encodes the batch's points into blocks.
    pub fn write(&mut self, batch: &RecordBatch) -> Result<()> {
        let out = self
            .out
            .as_mut()
            .ok_or_else(|| arg("the writer has failed before"))?;
        let target = out.name().to_path_buf();
        crate::write::check_batch(batch, &self.types).map_err(|e| e.with_file(&target))?;
        self.buf.clear();
        let result = self.plan.encode(batch, self.rows, &mut self.buf);
        if let Err(e) = result {
            self.out = None; // deletes the temporary file
            return Err(e.with_file(target));
        }
        out.write_all(&self.buf)
            .map_err(|e| Error::from(e).with_file(&target))?;
        self.rows += batch.num_rows() as u64;
        Ok(())
    }

    /// Writes the terminal block, then moves the file into place.
    pub fn finish(mut self) -> Result<WriteSummary> {
        let mut out = self
            .out
            .take()
            .ok_or_else(|| arg("the writer has failed before"))?;
        let target = out.name().to_path_buf();
        out.write_all(&[codec::TERMINAL])
            .map_err(|e| Error::from(e).with_file(&target))?;
        match out {
            StreamOutput::File(file) => commit_over(file, &target, self.options.lock)?,
            other => other.commit()?,
        }
        Ok(WriteSummary {
            rows: self.rows,
            warnings: Vec::new(),
        })
    }
}

/// Renames a finished temporary file over `target` under the exclusive lock of the file it
/// replaces (the commit also flushes the directory, so the rename is durable).
fn commit_over(out: AtomicFile, target: &Path, wait: LockWait) -> Result<()> {
    let guard = if target.exists() {
        Some(lock::open_locked(target, LockKind::Exclusive, wait)?)
    } else {
        None
    };
    out.commit()?;
    drop(guard);
    Ok(())
}

impl BatchWriter for Writer {
    fn write(&mut self, batch: &RecordBatch) -> Result<()> {
        Writer::write(self, batch)
    }
    fn finish(self: Box<Self>) -> Result<WriteSummary> {
        Writer::finish(*self)
    }
}

/// The bytes of a file we hold the exclusive lock of (so nobody else changes them).
fn map(file: &File) -> Result<memmap2::Mmap> {
    // SAFETY: read-only map; the exclusive header lock keeps writers that follow the format
    // away while the map is in use, and we write through the descriptor only after the walk.
    Ok(unsafe { memmap2::Mmap::map(file)? })
}

/// (type, start, end) of every block before the terminal.
type BlockList = Vec<(u8, u64, u64)>;

/// Walks a whole file: its meta, the offset of its terminal (`None`: no `'$'`) and its blocks.
fn walk(bytes: &[u8], lenient: bool) -> Result<(Option<Meta>, Option<u64>, BlockList)> {
    codec::check_header(bytes)?;
    let eof = if lenient {
        EofMode::Lenient
    } else {
        EofMode::Strict
    };
    let mut blocks = Blocks::new(bytes, 4, eof);
    let mut meta = None;
    let mut list = Vec::new();
    while let Some(b) = blocks.next_block()? {
        match b.kind {
            codec::META if meta.is_some() => {
                return Err(codec::block_error(
                    b.kind,
                    b.offset,
                    ErrorClass::BadMeta,
                    "duplicate meta block",
                ))
            }
            codec::META => meta = Some(codec::parse_meta(&b, VarintOrder::Leb128)?),
            codec::POINT if meta.is_none() => {
                return Err(codec::block_error(
                    b.kind,
                    b.offset,
                    ErrorClass::BadMeta,
                    "point before meta block",
                ))
            }
            _ => {}
        }
        list.push((b.kind, b.offset, b.end()));
    }
    Ok((meta, blocks.terminal, list))
}

/// What an append did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AppendSummary {
    /// Points appended.
    pub rows: u64,
    /// Offset of the first new block (the old terminal).
    pub offset: u64,
}

/// Appends the rows of `reader` to an existing file, crash-safely (spec §13.3): the new blocks
/// and a new `'$'` are written after the old `'$'` and synced; then the old `'$'` is replaced
/// by the first new type byte and synced. A crash at any point leaves the old or the new file.
pub fn append(
    path: impl AsRef<Path>,
    reader: impl RecordBatchReader,
    options: &VsWriteOptions,
) -> Result<AppendSummary> {
    let path = path.as_ref();
    append_inner(path, reader, options).map_err(|e| e.with_file(path))
}

fn append_inner(
    path: &Path,
    reader: impl RecordBatchReader,
    options: &VsWriteOptions,
) -> Result<AppendSummary> {
    use std::os::unix::fs::FileExt;
    let locked = lock::open_locked(path, LockKind::Exclusive, options.lock)?;
    let file = &locked.file;
    let bytes = map(file)?;
    let (meta, terminal, _) = walk(&bytes, options.lenient_eof)?;
    let size = bytes.len() as u64;
    drop(bytes);
    let schema = reader.schema();
    let plan = Plan::new(&schema, options, meta.as_ref().map(|m| m.pack))?;
    if let (Some(meta), Some(v)) = (&meta, &plan.vector) {
        if meta.resolution != v.resolution || meta.dims != v.dims {
            return Err(arg(format!(
                "the new points are {} {}, the file holds {} {}",
                v.resolution.name(),
                shape_json(&v.dims),
                meta.resolution.name(),
                shape_json(&meta.dims)
            )));
        }
    }
    let terminal = match terminal {
        Some(t) => t,
        None => {
            // Lenient: the file ended at a block boundary. Give it its '$' first.
            file.write_all_at(&[codec::TERMINAL], size)?;
            file.sync_data()?;
            size
        }
    };
    let mut pos = terminal + 1;
    let mut first: Option<u8> = None;
    let mut emit = |chunk: &[u8]| -> Result<()> {
        if chunk.is_empty() {
            return Ok(());
        }
        let rest = if first.is_none() {
            first = Some(chunk[0]);
            &chunk[1..]
        } else {
            chunk
        };
        file.write_all_at(rest, pos)?;
        pos += rest.len() as u64;
        Ok(())
    };
    let mut buf = Vec::new();
    if meta.is_none() {
        plan.meta_block(&mut buf);
        emit(&buf)?;
    }
    let mut rows = 0u64;
    for batch in reader {
        let batch = batch?;
        buf.clear();
        plan.encode(&batch, rows, &mut buf)?;
        emit(&buf)?;
        rows += batch.num_rows() as u64;
    }
    let Some(first) = first else {
        return Ok(AppendSummary {
            rows: 0,
            offset: terminal,
        });
    };
    file.write_all_at(&[codec::TERMINAL], pos)?;
    pos += 1;
    file.sync_data()?;
    crash_point("before-commit");
    file.write_all_at(&[first], terminal)?;
    file.sync_data()?;
    if pos < size {
        file.set_len(pos)?;
        file.sync_data()?;
    }
    Ok(AppendSummary {
        rows,
        offset: terminal,
    })
}

/// Test hook: with `ARROWSMITH_VS_CRASH_AT=<name>` in the environment the process dies here at
/// once, as a kill would. Used by the crash tests to hit the window between the two syncs.
fn crash_point(name: &str) {
    if std::env::var_os("ARROWSMITH_VS_CRASH_AT").is_some_and(|v| v == name) {
        std::process::abort();
    }
}

/// Deletes the live point whose block starts at `offset`, by overwriting its `'P'` with `'0'`
/// (spec §13.4).
pub fn delete_point(path: impl AsRef<Path>, offset: u64, wait: LockWait) -> Result<()> {
    let path = path.as_ref();
    delete_where(path, wait, |list| {
        if list.iter().any(|&(k, o, _)| o == offset && k == codec::POINT) {
            Ok(offset)
        } else {
            Err(arg(format!(
                "no live point starts at offset {offset} (deleted already, or not the start of a 'P' block)"
            )))
        }
    })
    .map(|_| ())
}

/// Deletes the `ordinal`-th live point (0-based); returns the offset of its block.
pub fn delete_ordinal(path: impl AsRef<Path>, ordinal: u64, wait: LockWait) -> Result<u64> {
    delete_where(path.as_ref(), wait, |list| {
        list.iter()
            .filter(|&&(k, _, _)| k == codec::POINT)
            .nth(ordinal as usize)
            .map(|&(_, o, _)| o)
            .ok_or_else(|| arg(format!("no live point number {ordinal}")))
    })
}

fn delete_where(
    path: &Path,
    wait: LockWait,
    find: impl FnOnce(&[(u8, u64, u64)]) -> Result<u64>,
) -> Result<u64> {
    use std::os::unix::fs::FileExt;
    let inner = || {
        let locked = lock::open_locked(path, LockKind::Exclusive, wait)?;
        let bytes = map(&locked.file)?;
        let (_, _, list) = walk(&bytes, false)?;
        let offset = find(&list)?;
        locked.file.write_all_at(&[codec::BLANK], offset)?;
        locked.file.sync_data()?;
        Ok(offset)
    };
    inner().map_err(|e: Error| e.with_file(path))
}

/// What a compaction did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompactSummary {
    /// Bytes of the file before.
    pub bytes_before: u64,
    /// Bytes of the file after.
    pub bytes_after: u64,
    /// Points kept.
    pub points: u64,
}

/// Rewrites a file without its blank blocks and deleted points (spec §13.5).
pub fn compact(path: impl AsRef<Path>, wait: LockWait) -> Result<CompactSummary> {
    let path = path.as_ref();
    let inner = || {
        let locked = lock::open_locked(path, LockKind::Exclusive, wait)?;
        let bytes = map(&locked.file)?;
        let (_, _, list) = walk(&bytes, false)?;
        let mut out = AtomicFile::create(path)?;
        out.write_all(&bytes[..4])?;
        let mut points = 0;
        let mut written = 4u64;
        for &(kind, start, end) in &list {
            if kind == codec::BLANK {
                continue;
            }
            points += u64::from(kind == codec::POINT);
            written += end - start;
            out.write_all(&bytes[start as usize..end as usize])?;
        }
        out.write_all(&[codec::TERMINAL])?;
        out.commit()?;
        Ok(CompactSummary {
            bytes_before: bytes.len() as u64,
            bytes_after: written + 1,
            points,
        })
    };
    inner().map_err(|e: Error| e.with_file(path))
}

/// A convenience: every batch of `reader` into a new file.
pub fn write_file(
    path: impl AsRef<Path>,
    reader: impl RecordBatchReader,
    options: VsWriteOptions,
) -> Result<WriteSummary> {
    let mut writer = Writer::try_new(path, reader.schema(), options)?;
    for batch in reader {
        writer.write(&batch?)?;
    }
    writer.finish()
}
