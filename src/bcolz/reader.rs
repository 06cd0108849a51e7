//! bcolz → Arrow.
//!
//! The dataset's metadata is read and checked when it is opened; chunk files are read only
//! when a batch needs their rows. Each chunk is read and decompressed once per scan (one c-blosc
//! call, one thread) straight into an Arrow buffer. With read-ahead (the default) the chunks of
//! the next batches are decoded on the rayon pool, earliest rows first, while the current batch
//! is assembled and consumed; memory stays bounded by the batch plus the read-ahead window
//! (about two chunks per column at the default batch size). Without it, the chunks a batch needs
//! are decoded in parallel when the batch is asked for. A batch lying inside one chunk shares
//! the decoded bytes without a copy. Chunk files come from the dataset's
//! [`ObjectSource`](crate::source::ObjectSource), a few to a batched request: only those of the
//! projected columns that the scan's rows overlap.

use std::collections::{BTreeMap, VecDeque};
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

use super::background::{self, Pending};
use super::mapping::{self, Base, DtUnit, ATTRS_KEY, KIND_KEY};
use super::meta::{self, CarrayInfo, DatasetInfo, Kind};
use crate::error::{Error, ErrorClass, Result};
use crate::salvage::{Salvage, SalvageReport, Skipped};
use crate::scan::{split_rows, FragmentRange, FragmentSpan, ScanOptions, DEFAULT_BATCH_SIZE};
use crate::sentinel::pack_bits;

/// Builds a bcolz [`Reader`].
#[derive(Debug, Clone)]
pub struct ReaderBuilder {
    scan: ScanOptions,
    nat_as_null: bool,
    carray_name: Option<String>,
    read_ahead: usize,
}

impl Default for ReaderBuilder {
    fn default() -> Self {
        ReaderBuilder {
            scan: ScanOptions::default(),
            nat_as_null: true,
            carray_name: None,
            read_ahead: 2,
        }
    }
}

impl ReaderBuilder {
    /// A builder with every option at its default: 65,536 rows per batch, every column (a
    /// column not selected is never opened beyond its metadata), the whole dataset, NaT as
    /// null, two batches of read-ahead.
    pub fn new() -> Self {
        Self::default()
    }

    crate::scan::scan_setters!();

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

    /// How many batches ahead chunks are decoded in the background (rayon) while the current
    /// batch is consumed: the chunks of rows up to `n × max(batch size, chunklen)` beyond it.
    /// Default 2 (about two chunks per column beyond the batch at the default batch size);
    /// 0 decodes a batch's chunks only when the batch is asked for (still in parallel).
    pub fn with_read_ahead(mut self, n: usize) -> Self {
        self.read_ahead = n;
        self
    }

    /// Opens the carray or ctable directory at `path` and returns a reader.
    pub fn build(self, path: impl AsRef<Path>) -> Result<Reader> {
        let info = meta::open(path.as_ref(), self.carray_name.as_deref())?;
        self.build_from_file(Arc::new(info))
    }

    /// Returns a reader of a dataset already opened (by [`open_info`](super::open_info)),
    /// without reading its metadata again: the name every format's builder gives this.
    pub fn build_from_file(self, info: Arc<DatasetInfo>) -> Result<Reader> {
        let all = schema_of(&info, self.nat_as_null);
        let columns: Vec<usize> = match &self.scan.projection {
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
        let (first, last) = match self.scan.range {
            None | Some(FragmentRange::Whole) => (0, nrows),
            Some(FragmentRange::Rows { start, end }) if start <= end && end <= nrows as u64 => {
                (start as usize, end as usize)
            }
            Some(FragmentRange::Rows { start, end }) => {
                return Err(Error::invalid_argument(format!(
                    "rows {start}..{end} are not a range of the dataset's {nrows} rows"
                ))
                .with_file(&info.path))
            }
            Some(other) => return Err(other.wrong_unit("bcolz", "rows").with_file(&info.path)),
        };
        let end = self
            .scan
            .limit
            .map_or(last, |l| first + l.min(last - first));
        Ok(Reader {
            // A fragment's scan starts at the chunk that holds its first row: the chunks
            // before it are never read.
            chunks: columns
                .iter()
                .map(|&c| ColumnChunks {
                    queue: VecDeque::new(),
                    next: first as u64 / info.columns[c].chunklen.max(1),
                })
                .collect(),
            sources: columns
                .iter()
                .enumerate()
                .map(|(slot, &c)| ChunkSource {
                    info: info.clone(),
                    column: c,
                    data_type: schema.field(slot).data_type().clone(),
                    nat_as_null: self.nat_as_null,
                })
                .collect(),
            info,
            schema,
            columns,
            first_row: first,
            next_row: first,
            end_row: end,
            batch_size: self.scan.batch_size_or(DEFAULT_BATCH_SIZE),
            read_ahead: self.read_ahead,
            nat_as_null: self.nat_as_null,
            salvage: Salvage::from_scan(&self.scan),
            bad_rows: RowRanges::default(),
            failed: false,
        })
    }
}

/// The fragments of a bcolz dataset: row ranges on the first column's chunk grid of about
/// `target_rows` rows, so a fragment reads only its own chunks. Bytes are the sizes of those
/// chunk files (a stat each, nothing read) for a dataset opened from a local path; for one
/// opened from an [`ObjectSource`](crate::source::ObjectSource), where a size would take a
/// request per chunk, they are the rows' decoded size, an upper bound of what is fetched.
pub fn fragments(info: &DatasetInfo, target_rows: usize) -> Result<Vec<FragmentSpan>> {
    let grid = info.columns.first().map_or(1, |c| c.chunklen.max(1));
    let local = info.is_local_path();
    Ok(split_rows(info.nrows, target_rows, grid, |start, end| {
        info.columns
            .iter()
            .map(|c| {
                let chunklen = c.chunklen.max(1);
                let chunks = start / chunklen..end.div_ceil(chunklen);
                if !local {
                    let rows = (chunks.end * chunklen).min(info.nrows) - chunks.start * chunklen;
                    return rows * c.atomsize as u64;
                }
                chunks
                    .filter_map(|k| std::fs::metadata(c.chunk_path(k)).ok())
                    .map(|m| m.len())
                    .sum::<u64>()
            })
            .sum()
    }))
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

/// A chunk of one column, decoded or being decoded.
enum Chunk {
    Ready(Decoded),
    /// Being decoded on the rayon pool (read-ahead).
    Decoding(Pending<Result<Decoded>>),
    /// Unreadable (salvage only): the error, until a batch takes it.
    Failed(Option<Error>),
}

/// The committed rows of a decoded chunk.
#[derive(Clone)]
enum Decoded {
    /// Converted to the column's Arrow type as a whole, where the work is done in parallel;
    /// batches are slices of it.
    Array(ArrayRef),
    /// The stored bytes (`rows × atomsize`, 64-byte aligned) of a chunk that did not convert as
    /// a whole (a bad value somewhere): each batch converts only its own rows, so the error
    /// comes with the batch that holds the bad row, as without read-ahead.
    Stored(Buffer),
}

/// The chunks of one selected column from the current batch's first onwards, in order.
#[derive(Default)]
struct ColumnChunks {
    queue: VecDeque<(u64, Chunk)>,
    /// The next chunk not yet in the queue (chunks are queued in order, each once per scan).
    next: u64,
}

/// What decoding a chunk needs, shared with the rayon jobs.
#[derive(Clone)]
struct ChunkSource {
    info: Arc<DatasetInfo>,
    /// The dataset column.
    column: usize,
    data_type: DataType,
    nat_as_null: bool,
}

impl ChunkSource {
    /// Decompresses and converts chunk `k` (its committed rows only) from its file as fetched.
    fn decode(&self, k: u64, file: Result<Option<Buffer>>) -> Result<Decoded> {
        let info = &self.info;
        let col = &info.columns[self.column];
        let rows = col.chunklen.min(info.nrows - k * col.chunklen) as usize;
        let stored = file
            .and_then(|file| col.decode_chunk(k, file, rows))
            .map_err(|e| locate(e, info, self.column))?;
        let first_row = (k * col.chunklen) as usize;
        Ok(
            match convert(
                col,
                &self.data_type,
                stored.clone(),
                rows,
                first_row,
                self.nat_as_null,
            ) {
                Ok(array) => Decoded::Array(array),
                Err(_) => Decoded::Stored(stored),
            },
        )
    }
}

/// The record batches of a bcolz dataset, in row order.
pub struct Reader {
    info: Arc<DatasetInfo>,
    schema: SchemaRef,
    columns: Vec<usize>,
    sources: Vec<ChunkSource>,
    chunks: Vec<ColumnChunks>,
    first_row: usize,
    next_row: usize,
    end_row: usize,
    batch_size: usize,
    read_ahead: usize,
    nat_as_null: bool,
    salvage: Salvage,
    /// Salvage: the row ranges of the damaged chunks met so far, skipped in every column.
    bad_rows: RowRanges,
    failed: bool,
}

/// A batch that could not be built: the chunk to blame (selected column slot, chunk number)
/// when one chunk's data is at fault, and the error.
type BatchFailure = (Option<(usize, u64)>, Error);

impl Reader {
    /// Where this reader records the chunks it skips when salvaging.
    pub fn salvage_report(&self) -> &SalvageReport {
        &self.salvage.report
    }

    /// The opened dataset.
    pub fn info(&self) -> &Arc<DatasetInfo> {
        &self.info
    }

    /// Rows this reader will yield in all.
    pub fn total_rows(&self) -> usize {
        self.end_row - self.first_row
    }

    /// Queues every chunk of rows `..upto` that is not queued yet: with read-ahead fetched
    /// and decoded in the background (earliest rows first, across columns), else fetched and
    /// decoded here, in parallel. Chunk files are fetched [`FETCH_BATCH`] to a request.
    fn queue_chunks(&mut self, upto: usize) -> Result<()> {
        let mut wanted: Vec<(u64, usize, u64)> = Vec::new();
        for (slot, &c) in self.columns.iter().enumerate() {
            let chunklen = self.info.columns[c].chunklen;
            let state = &mut self.chunks[slot];
            let last = (upto as u64).div_ceil(chunklen);
            while state.next < last {
                wanted.push((state.next * chunklen, slot, state.next));
                state.next += 1;
            }
        }
        if self.read_ahead > 0 {
            wanted.sort_unstable();
            for group in wanted.chunks(FETCH_BATCH) {
                let (senders, pending) = background::channels(group.len());
                let jobs: Vec<(ChunkSource, u64)> = group
                    .iter()
                    .map(|&(_, slot, k)| (self.sources[slot].clone(), k))
                    .collect();
                background::detach(self.info.is_local_path(), move || {
                    let files = fetch_chunks(&jobs);
                    for (((source, k), file), tx) in jobs.into_iter().zip(files).zip(senders) {
                        background::spawn_into(tx, move || source.decode(k, file));
                    }
                });
                for (&(_, slot, k), job) in group.iter().zip(pending) {
                    self.chunks[slot].queue.push_back((k, Chunk::Decoding(job)));
                }
            }
            return Ok(());
        }
        let jobs: Vec<(ChunkSource, u64)> = wanted
            .iter()
            .map(|&(_, slot, k)| (self.sources[slot].clone(), k))
            .collect();
        let files: Vec<Result<Option<Buffer>>> =
            jobs.chunks(FETCH_BATCH).flat_map(fetch_chunks).collect();
        let decode = |((source, k), file): ((ChunkSource, u64), Result<Option<Buffer>>)| {
            source.decode(k, file)
        };
        // Collected in order before the first error is taken, so that a damaged file reports
        // the same (earliest) chunk whichever thread finished first.
        let decoded: Vec<Result<Decoded>> = if jobs.len() > 1 {
            jobs.into_par_iter().zip(files).map(decode).collect()
        } else {
            jobs.into_iter().zip(files).map(decode).collect()
        };
        if self.salvage.on {
            // Each chunk keeps its own outcome: a damaged one costs only its rows.
            for (&(_, slot, k), result) in wanted.iter().zip(decoded) {
                let chunk = match result {
                    Ok(chunk) => Chunk::Ready(chunk),
                    Err(e) => Chunk::Failed(Some(e)),
                };
                self.chunks[slot].queue.push_back((k, chunk));
            }
            return Ok(());
        }
        let decoded: Vec<Decoded> = decoded.into_iter().collect::<Result<_>>()?;
        for (&(_, slot, k), chunk) in wanted.iter().zip(decoded) {
            self.chunks[slot].queue.push_back((k, Chunk::Ready(chunk)));
        }
        Ok(())
    }

    /// Chunk `k` of a selected column, which must be queued, waiting for its decode if needed.
    fn chunk(&mut self, slot: usize, k: u64) -> Result<Decoded> {
        let entry = self.chunks[slot]
            .queue
            .iter_mut()
            .find(|(kk, _)| *kk == k)
            .expect("a batch's chunks are queued before they are used");
        match &mut entry.1 {
            Chunk::Ready(chunk) => return Ok(chunk.clone()),
            Chunk::Failed(error) => {
                return Err(error.take().unwrap_or_else(|| {
                    Error::new(ErrorClass::Io, format!("chunk {k} could not be read"))
                }))
            }
            Chunk::Decoding(_) => {}
        }
        let Chunk::Decoding(job) = std::mem::replace(&mut entry.1, Chunk::Failed(None)) else {
            unreachable!("neither ready nor failed, so decoding");
        };
        let chunk = job.wait().ok_or_else(|| {
            let source = &self.sources[slot];
            locate(
                Error::new(
                    ErrorClass::Io,
                    format!("decoding chunk {k} stopped unexpectedly"),
                ),
                &source.info,
                source.column,
            )
        })??;
        entry.1 = Chunk::Ready(chunk.clone());
        Ok(chunk)
    }

    fn read_batch(&mut self, start: usize, len: usize) -> Result<RecordBatch, BatchFailure> {
        let info = self.info.clone();
        let whole = |e: Error| (None, e);
        let end = start + len;
        // Chunks wholly before this batch are done with.
        for (slot, &c) in self.columns.iter().enumerate() {
            let first = start as u64 / info.columns[c].chunklen;
            let queue = &mut self.chunks[slot].queue;
            while queue.front().is_some_and(|(k, _)| *k < first) {
                queue.pop_front();
            }
        }
        self.queue_chunks(end).map_err(whole)?;
        if self.read_ahead > 0 {
            // The next batches' chunks decode while this one is assembled and handed out.
            let ahead = self.read_ahead * self.batch_size.max(self.max_chunklen());
            self.queue_chunks(end.saturating_add(ahead).min(self.end_row))
                .map_err(whole)?;
        }
        let mut arrays: Vec<ArrayRef> = Vec::with_capacity(self.columns.len());
        for slot in 0..self.columns.len() {
            let c = self.columns[slot];
            let col = &info.columns[c];
            let chunklen = col.chunklen as usize;
            let first = start / chunklen;
            let last = (end - 1) / chunklen;
            let mut parts: Vec<ArrayRef> = Vec::with_capacity(last - first + 1);
            for k in first..=last {
                let lo = start.max(k * chunklen) - k * chunklen;
                let hi = end.min((k + 1) * chunklen) - k * chunklen;
                let blame = |e: Error| (Some((slot, k as u64)), e);
                parts.push(match self.chunk(slot, k as u64).map_err(blame)? {
                    Decoded::Array(array) => array.slice(lo, hi - lo),
                    Decoded::Stored(stored) => {
                        let atom = col.atomsize;
                        let raw = stored.slice_with_length(lo * atom, (hi - lo) * atom);
                        let data_type = self.schema.field(slot).data_type();
                        let first_row = k * chunklen + lo;
                        convert(col, data_type, raw, hi - lo, first_row, self.nat_as_null)
                            .map_err(|e| blame(locate(e, &info, c)))?
                    }
                });
            }
            arrays.push(if parts.len() == 1 {
                parts.pop().expect("one part")
            } else {
                let parts: Vec<&dyn Array> = parts.iter().map(|a| a.as_ref()).collect();
                arrow::compute::concat(&parts).map_err(|e| whole(e.into()))?
            });
        }
        let options = RecordBatchOptions::new().with_row_count(Some(len));
        RecordBatch::try_new_with_options(self.schema.clone(), arrays, &options)
            .map_err(|e| whole(e.into()))
    }

    /// The next batch of a salvaging scan: rows of damaged chunks are left out of every
    /// column, so the rows that remain stay aligned. A damaged chunk is found when the first
    /// batch that needs it is built; its rows are then marked bad and the batch is built again
    /// without them, so each attempt either succeeds or marks more rows bad.
    fn next_salvaged(&mut self) -> Option<Result<RecordBatch>> {
        loop {
            if let Some(bad_end) = self.bad_rows.end_of_range_holding(self.next_row) {
                self.next_row = bad_end.min(self.end_row);
            }
            if self.next_row >= self.end_row {
                return None;
            }
            let start = self.next_row;
            let next_bad = self.bad_rows.next_start_after(start).unwrap_or(usize::MAX);
            let len = self
                .batch_size
                .min(self.end_row - start)
                .min(next_bad - start);
            match self.read_batch(start, len) {
                Ok(batch) => {
                    self.next_row += len;
                    return Some(Ok(batch));
                }
                Err((Some((slot, k)), e)) => self.skip_chunk(slot, k, e),
                Err((None, e)) => return Some(Err(e)),
            }
        }
    }

    /// Marks the rows of chunk `k` of a selected column bad in every column, and reports them.
    fn skip_chunk(&mut self, slot: usize, k: u64, e: Error) {
        let c = self.columns[slot];
        let col = &self.info.columns[c];
        let chunklen = col.chunklen as usize;
        let lo = (k as usize).saturating_mul(chunklen);
        let hi = lo.saturating_add(chunklen).min(self.info.nrows as usize);
        // The rows this chunk costs that no damaged chunk before it already cost.
        let rows = self.bad_rows.insert(lo, hi, self.first_row..self.end_row);
        self.salvage.push(
            Skipped::new("chunk", locate(e, &self.info, c))
                .with_index(k)
                .with_column(col.name.clone())
                .with_rows(rows as u64),
        );
    }

    fn max_chunklen(&self) -> usize {
        self.columns
            .iter()
            .map(|&c| self.info.columns[c].chunklen as usize)
            .max()
            .unwrap_or(1)
    }
}

/// Disjoint row ranges, kept merged and ordered by start, so that a scan past many damaged
/// chunks looks each one up in logarithmic time (a list walked per chunk made thousands of
/// missing chunks quadratic).
#[derive(Default)]
struct RowRanges(BTreeMap<usize, usize>);

impl RowRanges {
    /// The end of the range that holds `row`, if one does.
    fn end_of_range_holding(&self, row: usize) -> Option<usize> {
        let (_, &end) = self.0.range(..=row).next_back()?;
        (row < end).then_some(end)
    }

    /// The start of the first range that begins after `row`.
    fn next_start_after(&self, row: usize) -> Option<usize> {
        self.0.range(row + 1..).next().map(|(&start, _)| start)
    }

    /// Adds `lo..hi` and returns how many rows of it inside `window` were not in a range yet.
    fn insert(&mut self, lo: usize, hi: usize, window: std::ops::Range<usize>) -> usize {
        if lo >= hi {
            return 0;
        }
        let clip = |a: usize, b: usize| b.min(window.end).saturating_sub(a.max(window.start));
        let mut new_rows = clip(lo, hi);
        let (mut start, mut end) = (lo, hi);
        // Every range that overlaps or touches lo..hi: the one starting at or before lo, then
        // those starting inside it.
        let touching: Vec<(usize, usize)> = self
            .0
            .range(..=lo)
            .next_back()
            .filter(|(_, &e)| e >= lo)
            .into_iter()
            .chain(self.0.range(lo + 1..=hi))
            .map(|(&s, &e)| (s, e))
            .collect();
        for (s, e) in touching {
            new_rows -= clip(s.max(lo), e.min(hi)).min(new_rows);
            self.0.remove(&s);
            start = start.min(s);
            end = end.max(e);
        }
        self.0.insert(start, end);
        new_rows
    }
}

/// Chunk files fetched in one request at most: a read-ahead window's worth at the default
/// batch size, bounded so that a huge batch of small chunks still fetches in pieces (each a
/// job of its own, overlapping the others).
const FETCH_BATCH: usize = 16;

/// The files of the chunks `jobs` name, fetched in one batched request, each `Ok(None)` when
/// missing. When the request fails as a whole, each file is fetched again on its own, so that
/// each chunk gets its own outcome (salvage skips only the chunks that fail).
fn fetch_chunks(jobs: &[(ChunkSource, u64)]) -> Vec<Result<Option<Buffer>>> {
    let Some((first, _)) = jobs.first() else {
        return Vec::new();
    };
    let info = &first.info;
    fn column(source: &ChunkSource) -> &CarrayInfo {
        &source.info.columns[source.column]
    }
    let keys: Vec<String> = jobs.iter().map(|(s, k)| column(s).chunk_key(*k)).collect();
    let key_refs: Vec<&str> = keys.iter().map(String::as_str).collect();
    match info.objects().get_all(&key_refs) {
        Ok(files) if files.len() == jobs.len() => files.into_iter().map(Ok).collect(),
        _ => jobs
            .iter()
            .zip(&keys)
            .map(|((source, k), key)| {
                info.objects()
                    .get(key)
                    .map_err(|e| e.with_file(column(source).chunk_path(*k)))
            })
            .collect(),
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
        if self.salvage.on {
            let batch = self.next_salvaged();
            self.failed = !matches!(batch, Some(Ok(_)));
            if self.failed || self.next_row >= self.end_row {
                self.chunks.iter_mut().for_each(|c| c.queue.clear());
            }
            return batch.map(|b| b.map_err(ArrowError::from));
        }
        let start = self.next_row;
        let len = self.batch_size.min(self.end_row - start);
        self.next_row += len;
        let batch = self.read_batch(start, len).map_err(|(_, e)| e);
        self.failed = batch.is_err();
        if self.failed || self.next_row >= self.end_row {
            self.chunks.iter_mut().for_each(|c| c.queue.clear());
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
        Base::Bytes(w) => bytes_array(raw.as_slice(), w, len, first_row),
        Base::Unicode(w) => unicode_array(raw.as_slice(), w, len, first_row),
        Base::DateTime(DtUnit::Day) => date_array(raw, len, first_row, nat_as_null),
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

/// `S{w}` items as binary values, NUL padding trimmed.
fn bytes_array(bytes: &[u8], w: usize, len: usize, first_row: usize) -> Result<ArrayRef> {
    // Two passes: the trimmed lengths first, so the values are allocated exactly once.
    let item = |i: usize| &bytes[i * w..(i + 1) * w];
    let mut offsets = Vec::with_capacity(len + 1);
    offsets.push(0i32);
    let mut total = 0usize;
    for i in 0..len {
        total += trimmed_len(item(i));
        offsets.push(i32::try_from(total).map_err(|_| too_many_bytes(first_row))?);
    }
    // Narrow items are copied 16 bytes at a time (a fixed-size copy, no memcpy call):
    // the bytes beyond an item's length are overwritten by the next item or cut off.
    let mut values = vec![0u8; total + 16];
    let mut at = 0;
    for (i, ends) in offsets.windows(2).enumerate() {
        let n = (ends[1] - ends[0]) as usize;
        match bytes.get(i * w..i * w + 16) {
            Some(wide) if w <= 16 => values[at..at + 16].copy_from_slice(wide),
            _ => values[at..at + n].copy_from_slice(&item(i)[..n]),
        }
        at += n;
    }
    values.truncate(total);
    Ok(Arc::new(BinaryArray::try_new(
        OffsetBuffer::new(ScalarBuffer::from(offsets)),
        Buffer::from_vec(values),
        None,
    )?))
}

/// `U{w}` items (UTF-32) as UTF-8 strings, NUL padding trimmed.
fn unicode_array(bytes: &[u8], w: usize, len: usize, first_row: usize) -> Result<ArrayRef> {
    let mut offsets = Vec::with_capacity(len + 1);
    offsets.push(0i32);
    // Most `<U` text is ASCII: one byte per code unit, so the items' widths are a close
    // upper bound that keeps the values from growing more than once or twice.
    let mut values: Vec<u8> = Vec::with_capacity(len.saturating_mul(w).min(1 << 30));
    for (i, item) in bytes.chunks_exact(w * 4).take(len).enumerate() {
        let mut units = item.chunks_exact(4);
        // numpy pads with NUL code units; a NUL inside the text stays.
        let end = units.rposition(|u| u != [0; 4]).map_or(0, |j| j + 1);
        let units = item[..end * 4].chunks_exact(4);
        if units.clone().all(|u| u[0] < 0x80 && u[1..] == [0; 3]) {
            values.extend(units.map(|u| u[0]));
        } else {
            for u in units {
                let u = u32::from_le_bytes([u[0], u[1], u[2], u[3]]);
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
        }
        offsets.push(i32::try_from(values.len()).map_err(|_| too_many_bytes(first_row))?);
    }
    let offsets = OffsetBuffer::new(ScalarBuffer::from(offsets));
    // SAFETY: every value is ASCII or the UTF-8 encoding of a `char`, one after another,
    // and the offsets rise from 0 to the values' length at those boundaries: the array's
    // invariants hold without validating the UTF-8 a second time.
    Ok(Arc::new(unsafe {
        StringArray::new_unchecked(offsets, Buffer::from_vec(values), None)
    }))
}

/// `datetime64[D]` ticks as `Date32` days; NaT is null when `nat_as_null`.
fn date_array(raw: Buffer, len: usize, first_row: usize, nat_as_null: bool) -> Result<ArrayRef> {
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

/// The length of a NUL-padded item without its trailing NULs (numpy's rule for `|S`).
fn trimmed_len(item: &[u8]) -> usize {
    let mut end = item.len();
    // Eight bytes at a time from the end: the highest non-zero byte of a little-endian word is
    // the last non-NUL byte of those eight.
    while end >= 8 {
        let word = u64::from_le_bytes(item[end - 8..end].try_into().expect("8 bytes"));
        if word != 0 {
            return end - (word.leading_zeros() / 8) as usize;
        }
        end -= 8;
    }
    item[..end]
        .iter()
        .rposition(|&b| b != 0)
        .map_or(0, |p| p + 1)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trimmed_len_is_numpys_rule_for_every_width_and_nul_pattern() {
        for width in 0..=20usize {
            for pattern in 0u32..64 {
                // Bytes non-zero where the pattern says so, spread over the item.
                let item: Vec<u8> = (0..width)
                    .map(|i| {
                        u8::from(((pattern >> (i % 6)) & 1) == 1 && i % 3 != 1) * (i as u8 + 1)
                    })
                    .collect();
                let want = item.iter().rposition(|&b| b != 0).map_or(0, |p| p + 1);
                assert_eq!(trimmed_len(&item), want, "{item:?}");
            }
        }
    }

    #[test]
    fn fixed_width_bytes_become_trimmed_binary_values() {
        let items: [&[u8]; 5] = [
            b"AAPL\0\0\0\0\0\0",
            b"\0\0\0\0\0\0\0\0\0\0",
            b"a\0b\0\0\0\0\0\0\0",
            b"0123456789",
            b"\0x\0\0\0\0\0\0\0\0",
        ];
        let raw = Buffer::from_vec(items.concat());
        let array = scalar(Base::Bytes(10), &DataType::Binary, raw, 5, 0, true).unwrap();
        let got: Vec<&[u8]> = array
            .as_any()
            .downcast_ref::<BinaryArray>()
            .unwrap()
            .iter()
            .map(Option::unwrap)
            .collect();
        assert_eq!(got, [&b"AAPL"[..], b"", b"a\0b", b"0123456789", b"\0x"]);
    }

    fn utf32(items: &[&str], width: usize) -> Buffer {
        let mut raw = Vec::new();
        for item in items {
            let units: Vec<u32> = item.chars().map(u32::from).collect();
            assert!(units.len() <= width);
            for j in 0..width {
                raw.extend_from_slice(&units.get(j).copied().unwrap_or(0).to_le_bytes());
            }
        }
        Buffer::from_vec(raw)
    }

    #[test]
    fn utf32_items_become_trimmed_utf8_strings_ascii_or_not() {
        let items = ["AAPL", "", "a\0b", "héllo", "😀x", "\0x", "12345"];
        let raw = utf32(&items, 5);
        let array = scalar(Base::Unicode(5), &DataType::Utf8, raw, items.len(), 0, true).unwrap();
        let strings = array.as_any().downcast_ref::<StringArray>().unwrap();
        let got: Vec<&str> = strings.iter().map(Option::unwrap).collect();
        assert_eq!(got, items);
        // The unchecked construction must still be valid UTF-8 with sound offsets.
        strings.to_data().validate_full().unwrap();
    }

    #[test]
    fn a_utf32_unit_that_is_no_scalar_value_is_a_bad_value_at_its_row() {
        let mut raw = utf32(&["ok", "ok"], 2).as_slice().to_vec();
        raw[8..12].copy_from_slice(&0xD800u32.to_le_bytes());
        let err = scalar(
            Base::Unicode(2),
            &DataType::Utf8,
            Buffer::from_vec(raw),
            2,
            40,
            true,
        )
        .unwrap_err();
        assert_eq!(err.class(), ErrorClass::BadValue);
        assert_eq!(err.row(), Some(41));
    }
}
