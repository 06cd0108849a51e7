//! bcolz → Arrow.
//!
//! The dataset's metadata is read and checked when it is opened; chunk files are read only
//! when a batch needs their rows. For each batch, every chunk it needs (across all selected
//! columns) that is not already decoded is read and decompressed in parallel (rayon, one
//! c-blosc call with one thread per chunk); a partly used chunk is kept for the next batch, so
//! each chunk is decoded once per scan and memory stays bounded by the batch plus about one
//! chunk per column. A batch lying inside one chunk shares the decoded bytes without a copy.

use std::path::Path;
use std::sync::Arc;

use arrow::array::ArrayData;
use arrow_array::{
    make_array, Array, ArrayRef, BinaryArray, BooleanArray, FixedSizeListArray, RecordBatch,
    RecordBatchOptions, RecordBatchReader, StringArray,
};
use arrow_buffer::{Buffer, MutableBuffer, NullBuffer, OffsetBuffer, ScalarBuffer};
use arrow_schema::{ArrowError, DataType, Field, Schema, SchemaRef};
use rayon::prelude::*;

use super::mapping::{self, Base, DtUnit, ATTRS_KEY, KIND_KEY};
use super::meta::{self, CarrayInfo, DatasetInfo, Kind};
use crate::error::{Error, ErrorClass, Result};
use crate::sentinel::pack_bits;
use crate::{Projection, DEFAULT_BATCH_SIZE};

/// Builds a bcolz [`Reader`].
#[derive(Debug, Clone)]
pub struct ReaderBuilder {
    batch_size: usize,
    projection: Option<Projection>,
    limit: Option<usize>,
    nat_as_null: bool,
    carray_name: Option<String>,
}

impl Default for ReaderBuilder {
    fn default() -> Self {
        ReaderBuilder {
            batch_size: DEFAULT_BATCH_SIZE,
            projection: None,
            limit: None,
            nat_as_null: true,
            carray_name: None,
        }
    }
}

impl ReaderBuilder {
    pub fn new() -> Self {
        Self::default()
    }

    /// Rows per batch (the last batch may be shorter). Default 65 536.
    pub fn with_batch_size(mut self, batch_size: usize) -> Self {
        self.batch_size = batch_size.max(1);
        self
    }

    /// Reads only these columns, in this order, by index (into `__rootdirs__`) or by name.
    /// Columns not selected are never opened beyond their metadata.
    pub fn with_projection(mut self, projection: impl Into<Projection>) -> Self {
        self.projection = Some(projection.into());
        self
    }

    /// Reads at most this many rows.
    pub fn with_limit(mut self, limit: usize) -> Self {
        self.limit = Some(limit);
        self
    }

    /// Whether NaT in datetime64/timedelta64 columns becomes an Arrow null (default) or stays
    /// the raw value i64::MIN.
    pub fn with_nat_as_null(mut self, nat_as_null: bool) -> Self {
        self.nat_as_null = nat_as_null;
        self
    }

    /// The column name of a carray (default: the directory's name).
    pub fn with_carray_name(mut self, name: impl Into<String>) -> Self {
        self.carray_name = Some(name.into());
        self
    }

    pub fn build(self, path: impl AsRef<Path>) -> Result<Reader> {
        let info = meta::open(path.as_ref(), self.carray_name.as_deref())?;
        self.build_from_info(Arc::new(info))
    }

    pub fn build_from_info(self, info: Arc<DatasetInfo>) -> Result<Reader> {
        let all = schema_of(&info, self.nat_as_null);
        let columns: Vec<usize> = match &self.projection {
            None => (0..info.columns.len()).collect(),
            Some(p) => p
                .resolve(info.columns.iter().map(|c| c.name.as_str()))
                .map_err(|e| e.with_file(&info.path))?,
        };
        let schema = Arc::new(all.project(&columns)?);
        let nrows = usize::try_from(info.nrows).map_err(|_| {
            Error::new(
                ErrorClass::BadMeta,
                "the row count does not fit this machine",
            )
            .with_file(&info.path)
        })?;
        let end = self.limit.map_or(nrows, |l| l.min(nrows));
        Ok(Reader {
            states: columns.iter().map(|_| None).collect(),
            info,
            schema,
            columns,
            next_row: 0,
            end_row: end,
            batch_size: self.batch_size,
            nat_as_null: self.nat_as_null,
            failed: false,
        })
    }
}

/// The Arrow schema of a dataset (spec B3.3).
pub fn schema_of(info: &DatasetInfo, nat_as_null: bool) -> Schema {
    let fields: Vec<Field> = info
        .columns
        .iter()
        .map(|c| {
            let mut field = mapping::arrow_field(
                &c.name,
                &c.dtype,
                &c.dtype_text,
                &c.row_shape,
                c.timezone(),
                nat_as_null,
            );
            if info.kind == Kind::Ctable {
                if let Some(text) = c.attrs_text.as_deref().filter(|t| !is_empty_object(t)) {
                    let mut md = field.metadata().clone();
                    md.insert(ATTRS_KEY.to_owned(), text.to_owned());
                    field = field.with_metadata(md);
                }
            }
            field
        })
        .collect();
    let mut schema = Schema::new(fields);
    schema
        .metadata
        .insert(KIND_KEY.to_owned(), info.kind.as_str().to_owned());
    if let Some(text) = info.attrs_text.as_deref().filter(|t| !is_empty_object(t)) {
        schema
            .metadata
            .insert(ATTRS_KEY.to_owned(), text.to_owned());
    }
    schema
}

fn is_empty_object(text: &str) -> bool {
    let t: String = text.chars().filter(|c| !c.is_whitespace()).collect();
    t == "{}"
}

/// A decoded chunk kept between batches.
struct Decoded {
    index: u64,
    /// The committed rows of the chunk, `rows × atomsize` bytes, 64-byte aligned.
    bytes: Buffer,
}

/// The record batches of a bcolz dataset, in row order.
pub struct Reader {
    info: Arc<DatasetInfo>,
    schema: SchemaRef,
    columns: Vec<usize>,
    states: Vec<Option<Decoded>>,
    next_row: usize,
    end_row: usize,
    batch_size: usize,
    nat_as_null: bool,
    failed: bool,
}

impl Reader {
    /// The opened dataset.
    pub fn info(&self) -> &Arc<DatasetInfo> {
        &self.info
    }

    /// Rows this reader will yield in all.
    pub fn total_rows(&self) -> usize {
        self.end_row
    }

    fn read_batch(&mut self, start: usize, len: usize) -> Result<RecordBatch> {
        let info = self.info.clone();
        let table_rows = info.nrows;
        // Every chunk this batch needs and does not have yet, across the selected columns.
        let mut wanted: Vec<(usize, u64)> = Vec::new();
        for (slot, &c) in self.columns.iter().enumerate() {
            let col = &info.columns[c];
            let first = start as u64 / col.chunklen;
            let last = (start + len - 1) as u64 / col.chunklen;
            for k in first..=last {
                if self.states[slot].as_ref().map(|d| d.index) != Some(k) {
                    wanted.push((slot, k));
                }
            }
        }
        let columns = &self.columns;
        let decode = |&(slot, k): &(usize, u64)| -> Result<(usize, u64, Buffer)> {
            let c = columns[slot];
            let col = &info.columns[c];
            let rows = col.chunklen.min(table_rows - k * col.chunklen) as usize;
            let bytes = col.read_chunk(k, rows).map_err(|e| locate(e, &info, c))?;
            Ok((slot, k, bytes))
        };
        let decoded: Vec<(usize, u64, Buffer)> = if wanted.len() > 1 {
            wanted.par_iter().map(decode).collect::<Result<_>>()?
        } else {
            wanted.iter().map(decode).collect::<Result<_>>()?
        };
        let mut raws: Vec<Buffer> = Vec::with_capacity(self.columns.len());
        for (slot, &c) in self.columns.iter().enumerate() {
            let col = &info.columns[c];
            let chunklen = col.chunklen as usize;
            let atom = col.atomsize;
            let get = |k: u64| -> Buffer {
                if let Some(d) = self.states[slot].as_ref().filter(|d| d.index == k) {
                    return d.bytes.clone();
                }
                decoded
                    .iter()
                    .find(|(s, kk, _)| *s == slot && *kk == k)
                    .map(|(_, _, b)| b.clone())
                    .expect("every needed chunk was decoded")
            };
            let first = start / chunklen;
            let last = (start + len - 1) / chunklen;
            let raw = if first == last {
                let off = (start - first * chunklen) * atom;
                get(first as u64).slice_with_length(off, len * atom)
            } else {
                let mut buf = MutableBuffer::new(len * atom);
                for k in first..=last {
                    let chunk = get(k as u64);
                    let lo = start.max(k * chunklen) - k * chunklen;
                    let hi = (start + len).min((k + 1) * chunklen) - k * chunklen;
                    buf.extend_from_slice(&chunk.as_slice()[lo * atom..hi * atom]);
                }
                buf.into()
            };
            let last_chunk = get(last as u64);
            self.states[slot] = Some(Decoded {
                index: last as u64,
                bytes: last_chunk,
            });
            raws.push(raw);
        }
        let schema = &self.schema;
        let nat_as_null = self.nat_as_null;
        let columns = &self.columns;
        let convert_one = |(slot, raw): (usize, Buffer)| {
            let c = columns[slot];
            let field = schema.field(slot);
            convert(
                &info.columns[c],
                field.data_type(),
                raw,
                len,
                start,
                nat_as_null,
            )
            .map_err(|e| locate(e, &info, c))
        };
        let arrays: Vec<ArrayRef> = if columns.len() > 1 && len * columns.len() >= 1 << 15 {
            raws.into_par_iter()
                .enumerate()
                .map(convert_one)
                .collect::<Result<_>>()?
        } else {
            raws.into_iter()
                .enumerate()
                .map(convert_one)
                .collect::<Result<_>>()?
        };
        let options = RecordBatchOptions::new().with_row_count(Some(len));
        Ok(RecordBatch::try_new_with_options(
            self.schema.clone(),
            arrays,
            &options,
        )?)
    }
}

fn locate(e: Error, info: &DatasetInfo, c: usize) -> Error {
    let e = if info.kind == Kind::Ctable {
        e.with_column(c, Some(&info.columns[c].name))
    } else {
        e
    };
    e.with_file(&info.path)
}

impl Iterator for Reader {
    type Item = Result<RecordBatch, ArrowError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed || self.next_row >= self.end_row {
            return None;
        }
        let start = self.next_row;
        let len = self.batch_size.min(self.end_row - start);
        self.next_row += len;
        let batch = self.read_batch(start, len);
        self.failed = batch.is_err();
        if self.failed || self.next_row >= self.end_row {
            self.states.iter_mut().for_each(|s| *s = None);
        }
        Some(batch.map_err(ArrowError::from))
    }
}

impl RecordBatchReader for Reader {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }
}

/// Swaps each `unit`-byte group of a big-endian buffer into a new little-endian buffer.
fn swapped(raw: &Buffer, unit: usize) -> Buffer {
    let mut out = MutableBuffer::new(raw.len());
    out.extend_from_slice(raw.as_slice());
    if unit > 1 {
        for group in out.as_slice_mut().chunks_exact_mut(unit) {
            group.reverse();
        }
    }
    out.into()
}

/// Turns `len` rows of stored bytes into the Arrow array of `data_type`. `first_row` is the
/// dataset row of the first one (for error messages).
fn convert(
    col: &CarrayInfo,
    data_type: &DataType,
    raw: Buffer,
    len: usize,
    first_row: usize,
    nat_as_null: bool,
) -> Result<ArrayRef> {
    let dtype = &col.dtype;
    let raw = if dtype.big_endian && dtype.swap_unit() > 1 {
        swapped(&raw, dtype.swap_unit())
    } else {
        raw
    };
    if let DataType::FixedSizeList(child, k) = data_type {
        let n = len * *k as usize;
        let values = scalar(dtype.base, child.data_type(), raw, n, first_row, false)?;
        return Ok(Arc::new(FixedSizeListArray::try_new(
            child.clone(),
            *k,
            values,
            None,
        )?));
    }
    scalar(dtype.base, data_type, raw, len, first_row, nat_as_null)
}

fn scalar(
    base: Base,
    data_type: &DataType,
    raw: Buffer,
    len: usize,
    first_row: usize,
    nat_as_null: bool,
) -> Result<ArrayRef> {
    match base {
        Base::Bool => {
            let bytes = raw.as_slice();
            Ok(Arc::new(BooleanArray::new(
                pack_bits(len, |i| bytes[i] != 0),
                None,
            )))
        }
        Base::Bytes(w) => {
            let bytes = raw.as_slice();
            let mut offsets = Vec::with_capacity(len + 1);
            let mut values = MutableBuffer::new(0);
            offsets.push(0i32);
            for i in 0..len {
                let item = &bytes[i * w..(i + 1) * w];
                let end = item.iter().rposition(|&b| b != 0).map_or(0, |p| p + 1);
                values.extend_from_slice(&item[..end]);
                offsets.push(i32::try_from(values.len()).map_err(|_| too_many_bytes(first_row))?);
            }
            Ok(Arc::new(BinaryArray::try_new(
                OffsetBuffer::new(ScalarBuffer::from(offsets)),
                values.into(),
                None,
            )?))
        }
        Base::Unicode(w) => {
            let bytes = raw.as_slice();
            let mut offsets = Vec::with_capacity(len + 1);
            let mut values: Vec<u8> = Vec::new();
            offsets.push(0i32);
            for i in 0..len {
                let item = &bytes[i * w * 4..(i + 1) * w * 4];
                let unit = |j: usize| {
                    u32::from_le_bytes(item[4 * j..4 * j + 4].try_into().expect("4 bytes"))
                };
                let end = (0..w).rev().find(|&j| unit(j) != 0).map_or(0, |j| j + 1);
                for j in 0..end {
                    let u = unit(j);
                    if u < 0x80 {
                        values.push(u as u8);
                        continue;
                    }
                    let c = char::from_u32(u).ok_or_else(|| {
                        Error::new(
                            ErrorClass::BadValue,
                            format!("UTF-32 code unit 0x{u:x} is not a Unicode scalar value"),
                        )
                        .at_row((first_row + i) as u64)
                    })?;
                    let mut tmp = [0u8; 4];
                    values.extend_from_slice(c.encode_utf8(&mut tmp).as_bytes());
                }
                offsets.push(i32::try_from(values.len()).map_err(|_| too_many_bytes(first_row))?);
            }
            Ok(Arc::new(StringArray::try_new(
                OffsetBuffer::new(ScalarBuffer::from(offsets)),
                Buffer::from_vec(values),
                None,
            )?))
        }
        Base::DateTime(DtUnit::Day) => {
            let ticks: ScalarBuffer<i64> = ScalarBuffer::new(raw, 0, len);
            let mut days = Vec::with_capacity(len);
            let mut valid = Vec::with_capacity(len);
            for (i, &t) in ticks.iter().enumerate() {
                if t == i64::MIN && nat_as_null {
                    days.push(0);
                    valid.push(false);
                    continue;
                }
                let d = i32::try_from(t).map_err(|_| {
                    Error::new(
                        ErrorClass::ValueOutOfRange,
                        format!("datetime64[D] value {t} does not fit Date32"),
                    )
                    .at_row((first_row + i) as u64)
                })?;
                days.push(d);
                valid.push(true);
            }
            let nulls = NullBuffer::from(valid);
            let nulls = (nulls.null_count() > 0).then_some(nulls);
            Ok(Arc::new(arrow_array::Date32Array::new(
                ScalarBuffer::from(days),
                nulls,
            )))
        }
        Base::DateTime(_) | Base::TimeDelta(_) => {
            let nulls = if nat_as_null {
                let ticks: ScalarBuffer<i64> = ScalarBuffer::new(raw.clone(), 0, len);
                if ticks.contains(&i64::MIN) {
                    Some(NullBuffer::new(pack_bits(len, |i| ticks[i] != i64::MIN)))
                } else {
                    None
                }
            } else {
                None
            };
            primitive(data_type, raw, len, nulls)
        }
        Base::Int(_) | Base::UInt(_) | Base::Float(_) => primitive(data_type, raw, len, None),
    }
}

fn primitive(
    data_type: &DataType,
    raw: Buffer,
    len: usize,
    nulls: Option<NullBuffer>,
) -> Result<ArrayRef> {
    let data = ArrayData::builder(data_type.clone())
        .len(len)
        .add_buffer(raw)
        .nulls(nulls)
        .build()?;
    Ok(make_array(data))
}

fn too_many_bytes(first_row: usize) -> Error {
    Error::new(
        ErrorClass::BufferSize,
        "the string bytes of one batch exceed 2 GiB; read with a smaller batch size",
    )
    .at_row(first_row as u64)
}

#[allow(dead_code)]
fn _assert_send(r: Reader) -> impl Send {
    r
}

#[allow(dead_code)]
fn _array_len(a: &dyn Array) -> usize {
    a.len()
}
