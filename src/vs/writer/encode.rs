//! Points and the meta block as bytes: [`Plan::encode`] turns a batch into `'P'` blocks, in
//! parallel chunks of rows when compression or wide vectors make that worth it, each task
//! reusing its compressor and buffers.

use arrow::compute::cast;
use arrow_array::cast::AsArray;
use arrow_array::{Array, ArrayRef, FixedSizeListArray, RecordBatch};
use arrow_schema::DataType;
use rayon::prelude::*;

use super::arg;
use super::msgpack::arrow_to_msgpack;
use super::plan::{AppPlan, Elements, Plan, VectorPlan};
use crate::error::{Error, Result};
use crate::vs::codec;
use crate::vs::mapping::Compression;
use crate::vs::msgpack_json;
use crate::vs::vector_codec::VectorEncoder;

/// Rows per parallel encoding task.
const CHUNK_ROWS: usize = 256;

impl Plan {
    /// The `'^'` block of this plan.
    pub(super) fn meta_block(&self, out: &mut Vec<u8>) {
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
    pub(super) fn encode(
        &self,
        batch: &RecordBatch,
        row_base: u64,
        out: &mut Vec<u8>,
    ) -> Result<()> {
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
        let plain = self
            .plain_vector(start, &mut scratch.plain, &mut scratch.element)
            .map_err(at)?;
        let (code, stored) = scratch
            .encoder
            .compress(plain, self.plan.compression)
            .map_err(at)?;
        let stored_len = u32::try_from(stored.len())
            .map_err(|_| at(arg("a vector of more than 4 GiB does not fit a VS point")))?;
        let app = &mut scratch.app;
        let app_present = self.app_data(row, app).map_err(at)?;
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

    /// The plain bytes of the vector whose elements start at `start` of the list's values:
    /// borrowed from the Arrow buffer for fixed-size elements, else encoded into `plain_owned`
    /// (`element`: a buffer for one JSON element's msgpack).
    fn plain_vector<'s>(
        &'s self,
        start: usize,
        plain_owned: &'s mut Vec<u8>,
        element: &mut Vec<u8>,
    ) -> Result<&'s [u8]> {
        let v = self.v;
        let values = self.list.values();
        plain_owned.clear();
        Ok(match v.elements {
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
                let packed = element;
                for e in 0..v.n {
                    packed.clear();
                    msgpack_json::json_text_to_msgpack(s.value(start + e), packed)
                        .map_err(|m| arg(format!("element {e}: {}", m.message())))?;
                    codec::write_json_field(plain_owned, Some(packed));
                }
                &plain_owned[..]
            }
            Elements::JsonMsgpack => {
                let s = self.texts.as_ref().expect("texts").as_binary::<i64>();
                for e in 0..v.n {
                    let bytes = s.value(start + e);
                    if !bytes.is_empty() {
                        msgpack_json::validate(bytes)
                            .map_err(|m| arg(format!("element {e}: {}", m.message())))?;
                    }
                    codec::write_json_field(plain_owned, Some(bytes));
                }
                &plain_owned[..]
            }
        })
    }

    /// Writes the app data of `row` as msgpack into `app`; whether the point has any.
    fn app_data(&self, row: usize, app: &mut Vec<u8>) -> Result<bool> {
        app.clear();
        match &self.plan.app {
            AppPlan::Text(_) => {
                let s = self.app[0].as_string::<i64>();
                if s.is_null(row) {
                    app.push(0xC0);
                } else {
                    msgpack_json::json_text_to_msgpack(s.value(row), app)
                        .map_err(|m| arg(format!("app_data: {}", m.message())))?;
                }
            }
            AppPlan::Binary(_) => {
                let b = self.app[0].as_binary::<i64>();
                if b.is_null(row) || b.value(row).is_empty() {
                    return Ok(false);
                } else {
                    msgpack_json::validate(b.value(row))
                        .map_err(|m| arg(format!("app_data: {}", m.message())))?;
                    app.extend_from_slice(b.value(row));
                }
            }
            AppPlan::Struct(_) => {
                let value = arrow_to_msgpack(self.app[0].as_ref(), row)?;
                rmpv::encode::write_value(app, &value)
                    .map_err(|e| arg(format!("app_data: {e}")))?;
            }
            AppPlan::Columns(cols) => {
                let _ = rmp::encode::write_map_len(app, cols.len() as u32);
                for (k, &i) in cols.iter().enumerate() {
                    let _ = rmp::encode::write_str(app, &self.plan.names[i]);
                    let value = arrow_to_msgpack(self.app[k].as_ref(), row)?;
                    rmpv::encode::write_value(app, &value)
                        .map_err(|e| arg(format!("app_data: {e}")))?;
                }
            }
        }
        Ok(true)
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

/// Bytes of `v` as a LEB128 varint.
fn varuint_len(mut v: u64) -> usize {
    let mut n = 1;
    while v >= 0x80 {
        v >>= 7;
        n += 1;
    }
    n
}
