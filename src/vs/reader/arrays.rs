//! The arrays of one batch, filled point by point ([`BatchBuilder`]): vector values straight
//! into one buffer, STRING / JSON elements split and checked, `app_data` turned into JSON text
//! (or kept as msgpack) and a point whose text would overflow a string array left for the
//! next batch.

use std::sync::Arc;

use arrow::array::ArrayDataBuilder;
use arrow_array::{
    make_array, ArrayRef, BinaryArray, BooleanArray, FixedSizeListArray, RecordBatch,
    RecordBatchOptions, StringArray, UInt64Array,
};
use arrow_buffer::{BooleanBufferBuilder, Buffer, MutableBuffer, NullBuffer, OffsetBuffer};
use arrow_schema::SchemaRef;

use super::schema::item_field;
use super::{AppDataMode, ReaderOptions};
use crate::error::{ErrorClass, Result};
use crate::vs::codec::{self, Meta, VarintOrder};
use crate::vs::mapping::Resolution;
use crate::vs::msgpack_json;

/// The most bytes one Arrow string array (32-bit offsets) holds.
pub(super) const MAX_TEXT: usize = i32::MAX as usize;

/// The most a batch reserves for its vectors before any is decoded.
const PREALLOCATE_MAX: usize = 16 << 20;

/// The arrays of one batch, filled point by point.
pub(super) struct BatchBuilder<'m> {
    meta: &'m Meta,
    exact: bool,
    /// Whether the `app_data` text is built (else only validated, and the column left empty).
    app_wanted: bool,
    with_offsets: bool,
    /// Element lengths follow the file's varint order.
    varint: VarintOrder,
    rows: usize,
    pub(super) values: MutableBuffer,
    bits: BooleanBufferBuilder,
    /// STRING / JSON elements.
    elem_offsets: Vec<i32>,
    elem_data: Vec<u8>,
    app_offsets: Vec<i32>,
    app_data: Vec<u8>,
    app_valid: BooleanBufferBuilder,
    offsets: Vec<u64>,
    scratch_elems: Vec<u8>,
    scratch_ends: Vec<usize>,
}

impl<'m> BatchBuilder<'m> {
    pub(super) fn new(
        meta: &'m Meta,
        options: &ReaderOptions,
        rows: usize,
        app_wanted: bool,
    ) -> Self {
        // What the meta block claims a vector holds is only reserved up to a bound: a few
        // bytes of meta may claim gigabytes per vector, and the buffers grow as points are
        // actually decoded anyway.
        let plain = meta
            .resolution
            .plain_size(meta.n)
            .unwrap_or(0)
            .min(PREALLOCATE_MAX / rows.max(1));
        BatchBuilder {
            meta,
            exact: options.app_data == AppDataMode::Msgpack,
            app_wanted,
            with_offsets: options.with_offsets,
            varint: options.parse.varint,
            rows: 0,
            values: MutableBuffer::new(if meta.resolution == Resolution::Bool {
                0
            } else {
                plain.saturating_mul(rows)
            }),
            bits: BooleanBufferBuilder::new(if meta.resolution == Resolution::Bool {
                meta.n.saturating_mul(rows).min(PREALLOCATE_MAX * 8)
            } else {
                0
            }),
            elem_offsets: vec![0],
            elem_data: Vec::new(),
            app_offsets: vec![0],
            app_data: Vec::new(),
            app_valid: BooleanBufferBuilder::new(rows),
            offsets: Vec::new(),
            scratch_elems: Vec::new(),
            scratch_ends: Vec::new(),
        }
    }

    /// Adds one point; `false` when its text would overflow this batch's string arrays.
    pub(super) fn push(&mut self, point: &codec::Point<'_>, plain: &[u8]) -> Result<bool> {
        let err = |class: ErrorClass, field: &str, message: String| {
            codec::block_error(
                codec::POINT,
                point.offset,
                class,
                format!("{field}: {message}"),
            )
        };
        // app_data first, straight into the column's text; taken back if the point does not fit.
        let app_start = self.app_data.len();
        let app_valid = match point.app_data {
            None => false,
            // Validated when the point was parsed.
            Some(_) if !self.app_wanted => false,
            Some(bytes) if self.exact => {
                self.app_data.extend_from_slice(bytes);
                true
            }
            Some(bytes) => match msgpack_json::append_json(bytes, &mut self.app_data) {
                Ok(true) => {
                    self.app_data.truncate(app_start);
                    false
                }
                Ok(false) => true,
                // The text written so far is taken back, so a salvaging reader can go on.
                Err(e) => {
                    self.app_data.truncate(app_start);
                    return Err(err(e.class(), "app_data", e.message().to_owned()));
                }
            },
        };
        let fits = |builder: &Self| -> bool {
            if builder.app_data.len() > MAX_TEXT {
                return false;
            }
            if builder.meta.resolution.is_variable() {
                let elems = builder.elem_data.len() + builder.scratch_elems.len();
                if builder.scratch_elems.len() > MAX_TEXT || (elems > MAX_TEXT && builder.rows > 0)
                {
                    return false;
                }
            }
            true
        };
        if self.meta.resolution.is_variable() {
            if let Err(e) = self.decode_variable(point, plain) {
                self.app_data.truncate(app_start);
                return Err(e);
            }
        }
        if !fits(self) {
            self.app_data.truncate(app_start);
            return Ok(false);
        }
        // Commit.
        match self.meta.resolution {
            Resolution::Bool => self.bits.append_packed_range(0..self.meta.n, plain),
            r if r.is_variable() => {
                let base = self.elem_data.len();
                self.elem_data.extend_from_slice(&self.scratch_elems);
                for &end in &self.scratch_ends {
                    self.elem_offsets.push((base + end) as i32);
                }
            }
            _ => self.values.extend_from_slice(plain),
        }
        self.app_offsets.push(self.app_data.len() as i32);
        self.app_valid.append(app_valid);
        self.offsets.push(point.offset);
        self.rows += 1;
        Ok(true)
    }

    /// Appends the rows of `part` except its fixed-size values (which the caller places).
    pub(super) fn append(&mut self, mut part: BatchBuilder<'_>) {
        let base = self.app_data.len() as i32;
        self.app_data.extend_from_slice(&part.app_data);
        self.app_offsets
            .extend(part.app_offsets[1..].iter().map(|end| base + end));
        self.app_valid.append_buffer(&part.app_valid.finish());
        self.offsets.extend_from_slice(&part.offsets);
        self.rows += part.rows;
    }

    /// Splits STRING / JSON vector bytes into N elements (spec §5).
    fn decode_variable(&mut self, point: &codec::Point<'_>, plain: &[u8]) -> Result<()> {
        let err = |class: ErrorClass, message: String| {
            codec::block_error(
                codec::POINT,
                point.offset,
                class,
                format!("vector: {message}"),
            )
        };
        self.scratch_elems.clear();
        self.scratch_ends.clear();
        let mut pos = 0usize;
        for i in 0..self.meta.n {
            let (len, used) = codec::read_varuint(&plain[pos..], 5, u32::MAX as u64, self.varint)
                .map_err(|e| {
                err(
                    ErrorClass::BufferSize,
                    format!("vector length mismatch: element {i}: {}", e.message()),
                )
            })?;
            pos += used;
            let len = len as usize;
            if len > plain.len() - pos {
                return Err(err(
                    ErrorClass::BufferSize,
                    format!(
                        "vector length mismatch: element {i} needs {len} bytes, {} remain",
                        plain.len() - pos
                    ),
                ));
            }
            let bytes = &plain[pos..pos + len];
            pos += len;
            match self.meta.resolution {
                Resolution::String => {
                    simdutf8::basic::from_utf8(bytes).map_err(|_| {
                        err(
                            ErrorClass::InvalidUtf8,
                            format!("invalid string: element {i} is not UTF-8"),
                        )
                    })?;
                    self.scratch_elems.extend_from_slice(bytes);
                }
                _ => {
                    if len == 0 {
                        if !self.exact {
                            self.scratch_elems.extend_from_slice(b"null");
                        }
                    } else if self.exact {
                        msgpack_json::validate(bytes)
                            .map_err(|e| err(e.class(), format!("element {i}: {}", e.message())))?;
                        self.scratch_elems.extend_from_slice(bytes);
                    } else {
                        // A nil element is the JSON text `null`, not a missing element.
                        msgpack_json::append_json(bytes, &mut self.scratch_elems)
                            .map_err(|e| err(e.class(), format!("element {i}: {}", e.message())))?;
                    }
                }
            }
            self.scratch_ends.push(self.scratch_elems.len());
        }
        if pos != plain.len() {
            return Err(err(
                ErrorClass::BufferSize,
                format!(
                    "vector length mismatch: {} bytes left after {} elements",
                    plain.len() - pos,
                    self.meta.n
                ),
            ));
        }
        Ok(())
    }

    /// The batch of every point pushed, in the columns of `schema` (the file's full schema).
    pub(super) fn finish(mut self, schema: SchemaRef) -> Result<RecordBatch> {
        let rows = self.rows;
        let meta = self.meta;
        let n = meta.n;
        let item = Arc::new(item_field(meta, self.exact));
        let values: ArrayRef = match meta.resolution {
            Resolution::Bool => Arc::new(BooleanArray::new(self.bits.finish(), None)),
            Resolution::String => {
                // SAFETY: offsets are monotonic and every element was checked as UTF-8.
                Arc::new(unsafe {
                    StringArray::new_unchecked(
                        OffsetBuffer::new_unchecked(self.elem_offsets.into()),
                        Buffer::from_vec(self.elem_data),
                        None,
                    )
                })
            }
            Resolution::Json if self.exact => Arc::new(BinaryArray::new(
                OffsetBuffer::new(self.elem_offsets.into()),
                Buffer::from_vec(self.elem_data),
                None,
            )),
            Resolution::Json => {
                // SAFETY: monotonic offsets; the text was produced as Rust strings.
                Arc::new(unsafe {
                    StringArray::new_unchecked(
                        OffsetBuffer::new_unchecked(self.elem_offsets.into()),
                        Buffer::from_vec(self.elem_data),
                        None,
                    )
                })
            }
            r => {
                let data = ArrayDataBuilder::new(r.arrow_type(false))
                    .len(rows * n)
                    .add_buffer(self.values.into())
                    .build()?;
                make_array(data)
            }
        };
        let vector = FixedSizeListArray::try_new_with_length(item, n as i32, values, None, rows)?;
        let nulls = NullBuffer::new(self.app_valid.finish());
        let nulls = (nulls.null_count() > 0).then_some(nulls);
        let app: ArrayRef = if self.exact {
            Arc::new(BinaryArray::try_new(
                OffsetBuffer::new(self.app_offsets.into()),
                Buffer::from_vec(self.app_data),
                nulls,
            )?)
        } else {
            // SAFETY: monotonic offsets; the text was produced as Rust strings.
            Arc::new(unsafe {
                StringArray::new_unchecked(
                    OffsetBuffer::new_unchecked(self.app_offsets.into()),
                    Buffer::from_vec(self.app_data),
                    nulls,
                )
            })
        };
        let mut columns: Vec<ArrayRef> = vec![Arc::new(vector), app];
        if self.with_offsets {
            columns.push(Arc::new(UInt64Array::from(self.offsets)));
        }
        let options = RecordBatchOptions::new().with_row_count(Some(rows));
        Ok(RecordBatch::try_new_with_options(
            schema, columns, &options,
        )?)
    }
}
