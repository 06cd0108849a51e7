//! The [`Reader`]: record batches of the points its walk gathers, built sequentially, or in
//! parallel chunks of rows when the vectors are compressed or of a fixed size; a salvaging
//! reader builds them point by point and skips the points that fail.

use std::sync::Arc;

use arrow_array::{RecordBatch, RecordBatchReader};
use arrow_buffer::MutableBuffer;
use arrow_schema::{ArrowError, SchemaRef};
use rayon::prelude::*;

use super::arrays::{BatchBuilder, MAX_TEXT};
use super::fetch::Window;
use super::walk::Walk;
use super::{attach, AppDataMode, ReaderOptions, VsFile};
use crate::error::{ErrorClass, Result};
use crate::salvage::SalvageReport;
use crate::vs::codec::{self, Block, Meta, Point};
use crate::vs::mapping::Resolution;
use crate::vs::vector_codec::VectorDecoder;

/// Rows per parallel task when a batch is built in parallel.
const CHUNK_ROWS: usize = 256;

/// The record batches of a VS file: one row per live point, in file order.
pub struct Reader {
    pub(super) file: Arc<VsFile>,
    pub(super) full: SchemaRef,
    pub(super) schema: SchemaRef,
    pub(super) columns: Option<Vec<usize>>,
    /// Whether `app_data` is projected; when not, its msgpack is only validated.
    pub(super) app_wanted: bool,
    /// The vector decompressor of batches built on this thread.
    pub(super) decoder: VectorDecoder,
    pub(super) batch_size: usize,
    pub(super) left: usize,
    pub(super) walk: Walk,
}

impl Reader {
    /// The opened file.
    pub fn file(&self) -> &VsFile {
        &self.file
    }

    /// Where this reader records the blocks it skips when salvaging.
    pub fn salvage_report(&self) -> &SalvageReport {
        &self.walk.salvage.report
    }

    /// A batch of a salvaging scan: built point by point, each point that does not parse or
    /// decode skipped (one row) and recorded.
    fn next_batch_salvaged(&mut self, want: usize) -> Result<Option<RecordBatch>> {
        let file = &self.file;
        let walk = &mut self.walk;
        let Some(meta) = file.meta.as_ref() else {
            return Ok(None);
        };
        let options = &file.options;
        let validate = options.app_data == AppDataMode::Msgpack || !self.app_wanted;
        let mut builder = BatchBuilder::new(meta, options, want, self.app_wanted);
        let mut used = 0;
        while used < want {
            if walk.pending.is_empty() {
                walk.gather(file, want - used);
                if walk.pending.is_empty() {
                    // Reading the file failed (no salvage goes past that): after the rows before.
                    if let Some(e) = walk.deferred.take() {
                        if used == 0 {
                            return Err(e);
                        }
                        walk.deferred = Some(e);
                    }
                    break;
                }
            }
            let (offset, start, len) = walk.pending[0];
            let block = Block {
                kind: codec::POINT,
                offset,
                payload: walk.payload(start, len),
            };
            let pushed =
                codec::parse_point_with(&block, options.parse.varint, validate).and_then(|point| {
                    let plain =
                        self.decoder
                            .plain(&point, meta, options.parse.max_variable_vector)?;
                    builder.push(&point, plain)
                });
            match pushed {
                Ok(true) => used += 1,
                // The batch is full of text: the point starts the next batch.
                Ok(false) if used > 0 => break,
                Ok(false) => walk.skip_block(
                    file,
                    offset,
                    1,
                    codec::block_error(
                        codec::POINT,
                        offset,
                        ErrorClass::BufferSize,
                        "the point's text does not fit one Arrow string array (2 GiB)",
                    ),
                ),
                Err(e) => walk.skip_block(file, offset, 1, e),
            }
            walk.pending.pop_front();
        }
        if used == 0 {
            return Ok(None);
        }
        self.left -= used;
        let batch = builder.finish(self.full.clone())?;
        Ok(Some(match &self.columns {
            None => batch,
            Some(c) => batch.project(c)?,
        }))
    }

    fn next_batch(&mut self) -> Result<Option<RecordBatch>> {
        let want = self.batch_size.min(self.left);
        if want == 0 {
            return Ok(None);
        }
        if self.walk.salvage.on {
            return self.next_batch_salvaged(want);
        }
        let file = &self.file;
        let walk = &mut self.walk;
        // The block headers of the whole batch are walked first: measured faster than walking
        // a few points ahead of the rows (195 ms against 215 ms for the bench file), and the
        // window a file read by ranges holds then has every payload of the batch.
        walk.gather(file, want);
        if walk.pending.is_empty() {
            return match walk.deferred.take() {
                Some(e) => Err(e),
                None => Ok(None),
            };
        }
        let window = walk.window.clone();
        let points = Points::of(file, &window, self.app_wanted);
        let batch = match points.parallel_rows(walk, want)? {
            Some(refs) => {
                let batch = points.build_parallel(&refs, &self.full)?;
                walk.pending.drain(..refs.len());
                self.left -= refs.len();
                batch
            }
            None => {
                let (builder, used) = points.build_sequential(walk, &mut self.decoder, want)?;
                self.left -= used;
                builder.finish(self.full.clone())?
            }
        };
        Ok(Some(match &self.columns {
            None => batch,
            Some(c) => batch.project(c)?,
        }))
    }
}

/// Where a point's block is in the file: its offset, and its payload's start and length.
type PointRef = (u64, usize, usize);

/// What building a batch of points needs from the opened file and the walk's window.
#[derive(Clone, Copy)]
struct Points<'a> {
    /// The walk's window: it holds the payload of every point of the batch.
    bytes: &'a [u8],
    /// Offset in the file of `bytes[0]`.
    base: usize,
    meta: &'a Meta,
    options: &'a ReaderOptions,
    app_wanted: bool,
    /// Whether parsing validates app_data: JSON text comes from decoding the msgpack, which
    /// validates it, so only msgpack output or an unprojected column needs it here.
    validate: bool,
}

impl<'a> Points<'a> {
    fn of(file: &'a VsFile, window: &'a Window, app_wanted: bool) -> Points<'a> {
        let options = &file.options;
        Points {
            bytes: &window.bytes,
            base: window.base as usize,
            meta: file.meta.as_ref().expect("points only follow a meta block"),
            options,
            app_wanted,
            validate: options.app_data == AppDataMode::Msgpack || !app_wanted,
        }
    }

    fn parse(&self, &(offset, start, len): &PointRef) -> Result<Point<'a>> {
        let at = start - self.base;
        let block = Block {
            kind: codec::POINT,
            offset,
            payload: &self.bytes[at..at + len],
        };
        codec::parse_point_with(&block, self.options.parse.varint, self.validate)
    }

    /// The points of a batch to build in parallel, a chunk of rows per task, or `None` to
    /// build it sequentially. Parallel when the batch's text cannot come near Arrow's 2 GiB
    /// limit (a msgpack byte gives at most a few dozen bytes of JSON) and either the vectors
    /// are compressed or they have a fixed size (their values then go straight to their place
    /// in one buffer). Plain STRING/JSON/BOOL vectors would need the parts concatenated, which
    /// costs more than a second core saves (docs/performance.md). The first point's codec
    /// stands for the batch's.
    fn parallel_rows(&self, walk: &Walk, want: usize) -> Result<Option<Vec<PointRef>>> {
        let compressed = self.parse(&walk.pending[0])?.vec_option & 0x07 != 0;
        if !(compressed || self.fixed_size().is_some()) || want < 2 * CHUNK_ROWS {
            return Ok(None);
        }
        let take = want.min(walk.pending.len());
        let refs: Vec<PointRef> = walk.pending.iter().take(take).copied().collect();
        let payload: usize = refs.iter().map(|r| r.2).sum();
        Ok((refs.len() >= 2 * CHUNK_ROWS && payload.saturating_mul(64) < MAX_TEXT).then_some(refs))
    }

    /// Bytes of one plain vector when all have the same size (not BOOL, STRING or JSON).
    fn fixed_size(&self) -> Option<usize> {
        match self.meta.resolution {
            Resolution::Bool | Resolution::String | Resolution::Json => None,
            r => r.plain_size(self.meta.n).filter(|&size| size > 0),
        }
    }

    /// The rows of `chunk`, with a decoder of its own (one parallel task).
    fn build_chunk(&self, chunk: &[PointRef]) -> Result<BatchBuilder<'a>> {
        let mut builder = BatchBuilder::new(self.meta, self.options, chunk.len(), self.app_wanted);
        let mut decoder = VectorDecoder::default();
        let max_variable = self.options.parse.max_variable_vector;
        for r in chunk {
            let point = self.parse(r)?;
            let plain = decoder.plain(&point, self.meta, max_variable)?;
            if !builder.push(&point, plain)? {
                return Err(too_much_text(point.offset));
            }
        }
        Ok(builder)
    }

    /// The batch of `refs`, built in parallel chunks of rows.
    fn build_parallel(&self, refs: &[PointRef], full: &SchemaRef) -> Result<RecordBatch> {
        if let Some(size) = self.fixed_size() {
            return self.build_parallel_fixed(refs, size, full);
        }
        let parts: Vec<RecordBatch> = refs
            .par_chunks(CHUNK_ROWS)
            .map(|chunk| self.build_chunk(chunk)?.finish(full.clone()))
            .collect::<Result<_>>()?;
        Ok(arrow::compute::concat_batches(full, &parts)?)
    }

    /// The batch of `refs` whose vectors have `size` bytes each: each task copies its rows'
    /// values into its own part of the batch's values buffer, so the batch is never
    /// concatenated afterwards.
    fn build_parallel_fixed(
        &self,
        refs: &[PointRef],
        size: usize,
        full: &SchemaRef,
    ) -> Result<RecordBatch> {
        let total = refs.len() * size;
        let mut values = MutableBuffer::with_capacity(total);
        // SAFETY: the capacity holds `total` bytes; they are only written through
        // `MaybeUninit` until every part has been filled.
        let parts_out = unsafe {
            std::slice::from_raw_parts_mut(
                values.as_mut_ptr().cast::<std::mem::MaybeUninit<u8>>(),
                total,
            )
        };
        let parts: Vec<BatchBuilder<'a>> = parts_out
            .par_chunks_mut(CHUNK_ROWS * size)
            .zip(refs.par_chunks(CHUNK_ROWS))
            .map(|(out, chunk)| {
                let mut builder = self.build_chunk(chunk)?;
                let filled = builder.values.as_slice();
                assert_eq!(filled.len(), out.len(), "one fixed-size vector per row");
                // SAFETY: same length, distinct allocations.
                unsafe {
                    std::ptr::copy_nonoverlapping(
                        filled.as_ptr(),
                        out.as_mut_ptr().cast::<u8>(),
                        out.len(),
                    )
                };
                builder.values = MutableBuffer::new(0);
                Ok(builder)
            })
            .collect::<Result<_>>()?;
        // SAFETY: every byte up to `total` was written by exactly one part above.
        unsafe { values.set_len(total) };
        let mut whole = BatchBuilder::new(self.meta, self.options, 0, self.app_wanted);
        for part in parts {
            whole.append(part);
        }
        whole.values = values;
        whole.finish(full.clone())
    }

    /// Up to `want` rows built one after another, of the points the walk has gathered (all
    /// of the batch's: the walk has no more when they run out); the builder and the rows it
    /// holds.
    fn build_sequential(
        &self,
        walk: &mut Walk,
        decoder: &mut VectorDecoder,
        want: usize,
    ) -> Result<(BatchBuilder<'a>, usize)> {
        let max_variable = self.options.parse.max_variable_vector;
        let mut builder = BatchBuilder::new(self.meta, self.options, want, self.app_wanted);
        let mut used = 0;
        while used < want && !walk.pending.is_empty() {
            let point = self.parse(&walk.pending[0])?;
            let plain = decoder.plain(&point, self.meta, max_variable)?;
            if !builder.push(&point, plain)? {
                break;
            }
            walk.pending.pop_front();
            used += 1;
        }
        if used == 0 {
            return Err(too_much_text(walk.pending[0].0));
        }
        Ok((builder, used))
    }
}

/// The error of a point whose text alone does not fit a batch.
fn too_much_text(offset: u64) -> crate::Error {
    codec::block_error(
        codec::POINT,
        offset,
        ErrorClass::BufferSize,
        "the point's text does not fit one Arrow string array (2 GiB)",
    )
}

impl Iterator for Reader {
    type Item = Result<RecordBatch, ArrowError>;

    fn next(&mut self) -> Option<Self::Item> {
        match self.next_batch() {
            Ok(Some(batch)) => Some(Ok(batch)),
            Ok(None) => None,
            Err(e) => {
                self.walk.done = true;
                self.walk.pending.clear();
                self.left = 0;
                Some(Err(attach(e, self.file.path()).into()))
            }
        }
    }
}

impl RecordBatchReader for Reader {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }
}
