//! Jay → Arrow.
//!
//! A file is memory-mapped and its meta verified when it is opened; nothing else is read until
//! a batch asks for rows. Each batch decodes only its rows of the selected columns, in
//! parallel. Fixed-width values and string bytes are handed to Arrow without copying (the
//! mapping is page-aligned and every Jay buffer starts at a multiple of 8), so a batch costs
//! one scan for missing values per column plus, for strings, the UTF-8 check.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::mapped::{aligned_copy, read_aligned};
use arrow_array::types::{
    ArrowPrimitiveType, Date32Type, Float32Type, Float64Type, Int16Type, Int32Type, Int64Type,
    Int8Type, TimestampNanosecondType,
};
use arrow_array::{
    ArrayRef, BooleanArray, GenericListArray, GenericStringArray, NullArray, OffsetSizeTrait,
    PrimitiveArray, RecordBatch, RecordBatchOptions, RecordBatchReader,
};
use arrow_buffer::{
    ArrowNativeType, BooleanBuffer, Buffer, NullBuffer, OffsetBuffer, ScalarBuffer,
};
use arrow_schema::{ArrowError, Field, Schema, SchemaRef};
use memmap2::Mmap;
use rayon::prelude::*;

use super::mapping::{JayType, NKEYS_METADATA_KEY};
use super::meta::{self, BufferRange, ColumnInfo, DroppedColumn, FrameInfo, Layout, UncheckedEnd};
use super::ranged::{self, Pieces};
use crate::error::{Error, ErrorClass, Result};
use crate::pipeline::Pipeline;
use crate::salvage::{Salvage, SalvageReport, Skipped};
use crate::scan::{
    split_rows, FragmentRange, FragmentSpan, Projection, ScanOptions, DEFAULT_BATCH_SIZE,
};
use crate::sentinel::{self, pack_bits, Sentinel};
use crate::source::{ByteSource, LocalFile};

/// Rows × columns below which a batch is decoded on the calling thread.
const PARALLEL_THRESHOLD: usize = 1 << 16;

/// How many batches ahead a reader maps in the pages it will read.
const PREFETCH_BATCHES: usize = 8;

/// Rows × columns from which a reader decodes the next batches on the pool while the caller
/// takes the current one (see [`Reader`]).
const PIPELINE_THRESHOLD: usize = 1 << 18;

/// The most rows a reader yields that no bytes of the file stand behind, unless raised with
/// [`ReaderBuilder::with_max_dataless_rows`]: the rows of a frame whose columns are all void
/// (or that has none), and the elements of a void array child. Such a row count is one number
/// in the meta, so a file of a few bytes can claim 2^62 rows, which every writer downstream
/// would then have to produce; 2^32 leaves room for any real frame.
pub const DEFAULT_MAX_DATALESS_ROWS: u64 = 1 << 32;

/// Rows of a batch of columns that hold no data (void ones, or none): at least this many
/// (when the batch size is smaller), so that a dataless frame of billions of rows comes in a
/// few hundred batches, each small enough for a writer to handle at once.
const DATALESS_BATCH_ROWS: usize = 1 << 24;

/// An opened, verified Jay file: its bytes (a memory map, bytes in memory, or a source read
/// by ranges) and its description.
pub struct JayFile {
    path: Option<PathBuf>,
    bytes: FileBytes,
    info: FrameInfo,
    schema: SchemaRef,
    /// The position in the file of each column of `info` (they differ only when a salvaging
    /// open dropped damaged columns).
    positions: Vec<usize>,
    /// The columns a salvaging open dropped, in file order.
    dropped: Vec<Skipped>,
}

/// Where the bytes of a [`JayFile`] are.
enum FileBytes {
    /// All of them, addressable: a memory map or bytes in memory. Batches slice them.
    Whole {
        bytes: Buffer,
        /// The mapping behind `bytes`, when the file is mapped: the reader asks the kernel to
        /// fault in the parts it will read.
        map: Option<Arc<Mmap>>,
    },
    /// A source that is not local: each batch fetches the parts of its columns it needs.
    Ranged {
        source: Arc<dyn ByteSource>,
        /// What the open fetched (the header and the tail, with the meta): reads take what
        /// they need from it before asking the source.
        held: Pieces,
        /// String and array columns whose last offset lay outside `held`, checked by the first
        /// read of each reader that reads them instead of when the file was opened.
        unchecked_ends: Vec<UncheckedEnd>,
    },
}

impl JayFile {
    /// Memory-maps a file and verifies its envelope and meta. Files that cannot be mapped
    /// (pipes, character devices) are read into memory instead.
    pub fn open(path: impl AsRef<Path>) -> Result<JayFile> {
        Self::open_with(path, false, false)
    }

    /// Opens a file for salvage: the columns whose description or buffers are damaged are
    /// left out of [`info`](Self::info) and [`schema`](Self::schema) and listed by
    /// [`dropped`](Self::dropped); damage to the whole file (envelope, meta) still fails it.
    pub fn open_salvaging(path: impl AsRef<Path>) -> Result<JayFile> {
        Self::open_with(path, false, true)
    }

    /// Reads a file into memory (no mapping): immune to the file being truncated while read.
    pub fn open_copy(path: impl AsRef<Path>) -> Result<JayFile> {
        Self::open_with(path, true, false)
    }

    fn open_with(path: impl AsRef<Path>, copy: bool, salvage: bool) -> Result<JayFile> {
        let path = path.as_ref();
        if copy {
            let bytes = read_aligned(path).map_err(|e| Error::from(e).with_file(path))?;
            return Self::from_buffer(bytes, None, Some(path.to_path_buf()), salvage);
        }
        Self::open_local(&LocalFile::open(path)?, salvage)
    }

    fn open_local(file: &LocalFile, salvage: bool) -> Result<JayFile> {
        let map = file.map().cloned();
        Self::from_buffer(
            file.bytes().clone(),
            map,
            Some(file.path().to_path_buf()),
            salvage,
        )
    }

    /// Opens the Jay file `source` reads and verifies its envelope and meta. A local file is
    /// mapped whole, as [`open`](Self::open) does. Any other source is read by ranges: the
    /// open fetches the header and the file's last 64 KiB (and the rest of the meta when it
    /// is larger), and each batch fetches only the parts of its columns' buffers that hold
    /// its rows. The last offset of a string column outside those bytes is checked by the
    /// first batch that reads the column. A salvaging open reads a non-local file whole.
    pub fn open_source(source: Arc<dyn ByteSource>, salvage: bool) -> Result<JayFile> {
        if let Some(file) = source.as_local() {
            return Self::open_local(file, salvage);
        }
        let location = PathBuf::from(source.location());
        if source.is_local() || salvage {
            let mut bytes = source.read_all().map_err(|e| e.with_file(&location))?;
            if bytes.as_ptr().align_offset(8) != 0 {
                bytes = aligned_copy(&bytes);
            }
            return Self::from_buffer(bytes, None, Some(location), salvage);
        }
        let (held, parsed) = ranged::open(source.as_ref()).map_err(|e| e.with_file(&location))?;
        let bytes = FileBytes::Ranged {
            source,
            held,
            unchecked_ends: parsed.unchecked_ends,
        };
        Ok(Self::assemble(
            bytes,
            Some(location),
            parsed.info,
            parsed.dropped,
        ))
    }

    /// Verifies Jay bytes held in memory.
    pub fn from_bytes(bytes: impl Into<Buffer>) -> Result<JayFile> {
        Self::from_bytes_with(bytes, false)
    }

    /// Jay bytes held in memory, opened for salvage (see [`open_salvaging`](Self::open_salvaging)).
    pub fn from_bytes_salvaging(bytes: impl Into<Buffer>) -> Result<JayFile> {
        Self::from_bytes_with(bytes, true)
    }

    fn from_bytes_with(bytes: impl Into<Buffer>, salvage: bool) -> Result<JayFile> {
        let mut bytes: Buffer = bytes.into();
        if bytes.as_ptr().align_offset(8) != 0 {
            bytes = aligned_copy(&bytes);
        }
        Self::from_buffer(bytes, None, None, salvage)
    }

    fn from_buffer(
        bytes: Buffer,
        map: Option<Arc<Mmap>>,
        path: Option<PathBuf>,
        salvage: bool,
    ) -> Result<JayFile> {
        let (info, dropped) =
            meta::parse_with(&bytes, salvage).map_err(|e| attach_path(e, path.as_deref()))?;
        Ok(Self::assemble(
            FileBytes::Whole { bytes, map },
            path,
            info,
            dropped,
        ))
    }

    fn assemble(
        bytes: FileBytes,
        path: Option<PathBuf>,
        info: FrameInfo,
        dropped: Vec<DroppedColumn>,
    ) -> JayFile {
        let positions: Vec<usize> = (0..info.columns.len() + dropped.len())
            .filter(|i| !dropped.iter().any(|d| d.0 == *i))
            .collect();
        let dropped = dropped
            .into_iter()
            .map(|(index, name, e)| {
                let skipped = Skipped::new("column", attach_path(e, path.as_deref()))
                    .with_index(index as u64);
                match name {
                    Some(name) => skipped.with_column(name),
                    None => skipped,
                }
            })
            .collect();
        let fields: Vec<Field> = info
            .columns
            .iter()
            .map(|c| {
                Field::new(
                    c.name.clone().unwrap_or_default(),
                    c.jay_type.arrow_type(),
                    true,
                )
            })
            .collect();
        let mut schema = Schema::new(fields);
        if info.nkeys > 0 {
            schema
                .metadata
                .insert(NKEYS_METADATA_KEY.to_owned(), info.nkeys.to_string());
        }
        JayFile {
            path,
            bytes,
            info,
            schema: Arc::new(schema),
            positions,
            dropped,
        }
    }

    /// The columns a salvaging open left out, each with its position in the file and why.
    pub fn dropped(&self) -> &[Skipped] {
        &self.dropped
    }

    /// The verified description: row count, keys, and every column's layout and buffers.
    pub fn info(&self) -> &FrameInfo {
        &self.info
    }

    /// The Arrow schema of all columns.
    pub fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    /// The file's path, unless it was opened from bytes.
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// Fails with a `bad_meta` error when the frame has no column that holds data (only void
    /// ones, or none) and more than `cap` rows, which nothing in the file stands behind (see
    /// [`ReaderBuilder::with_max_dataless_rows`]).
    pub fn check_dataless_rows(&self, cap: u64) -> Result<()> {
        check_dataless_rows(&self.info, &[], self.info.nrows, cap)
            .map_err(|e| attach_path(e, self.path()))
    }

    /// Asks the kernel to map in, ahead of the reads, the parts of the buffers of `columns`
    /// that hold rows `first..last` (string data in proportion). A scan that touches mapped
    /// pages one fault at a time spent about a fifth of its time in page faults; one
    /// `MADV_POPULATE_READ` per buffer does the same work in a batch. Advisory: a kernel
    /// without it (before Linux 5.14) falls back to read-ahead, and failures are ignored.
    fn prefetch(&self, columns: &[usize], first: u64, last: u64) {
        let FileBytes::Whole { map: Some(map), .. } = &self.bytes else {
            return;
        };
        let rows = self.info.nrows.max(1);
        for &c in columns {
            let Some(column) = self.info.columns.get(c) else {
                continue;
            };
            for buffer in [&column.validity, &column.data, &column.strdata]
                .into_iter()
                .flatten()
            {
                let share =
                    |row: u64| (buffer.length as u128 * row as u128 / rows as u128) as usize;
                let start = buffer.start().saturating_add(share(first));
                let len = share(last).saturating_sub(share(first));
                if len == 0 || start.saturating_add(len) > map.len() {
                    continue;
                }
                #[cfg(target_os = "linux")]
                if map
                    .advise_range(memmap2::Advice::PopulateRead, start, len)
                    .is_ok()
                {
                    continue;
                }
                #[cfg(unix)]
                let _ = map.advise_range(memmap2::Advice::WillNeed, start, len);
            }
        }
    }

    /// Decodes every value of every column, checking all that a read checks.
    pub fn verify(self: &Arc<Self>) -> Result<()> {
        let reader = ReaderBuilder::new()
            .with_batch_size(1 << 20)
            .build_from_file(self.clone())?;
        for batch in reader {
            batch.map_err(Error::from)?;
        }
        Ok(())
    }

    /// Decodes rows `[start, start + len)` of column `index`.
    pub fn read_column(&self, index: usize, start: usize, len: usize) -> Result<ArrayRef> {
        if index >= self.info.columns.len() {
            return Err(Error::invalid_argument(format!(
                "column index {index} is out of range: the file has {} columns",
                self.info.columns.len()
            )));
        }
        let rows = self.info.nrows as usize;
        if start > rows || len > rows - start {
            return Err(Error::invalid_argument(format!(
                "rows [{start}, +{len}) are out of range: the file has {rows} rows"
            )));
        }
        let fetched = self.fetch(&[index], start, len, true)?;
        self.decode_column(fetched.as_ref(), index, start, len)
    }

    /// For a file read by ranges, fetches what rows `start..start + len` of `columns` need
    /// (with, when `check_ends`, the last offsets of those string columns that the open left
    /// unchecked, which are checked here); `None` for a file whose bytes are all at hand.
    fn fetch(
        &self,
        columns: &[usize],
        start: usize,
        len: usize,
        check_ends: bool,
    ) -> Result<Option<Pieces>> {
        let FileBytes::Ranged {
            source,
            held,
            unchecked_ends,
        } = &self.bytes
        else {
            return Ok(None);
        };
        let ends: Vec<&UncheckedEnd> = unchecked_ends
            .iter()
            .filter(|end| check_ends && columns.contains(&end.column))
            .collect();
        let infos: Vec<&ColumnInfo> = columns.iter().map(|&c| &self.info.columns[c]).collect();
        let extra = ends.iter().map(|end| end.range()).collect();
        let fetched = ranged::fetch_rows(source.as_ref(), held, &infos, start, len, extra)
            .map_err(|e| attach_path(e, self.path()))?;
        for end in ends {
            let bytes = fetched.get(end.at, end.width as u64).unwrap_or_default();
            end.check(&bytes).map_err(|e| {
                let column = &self.info.columns[end.column];
                let e = e.with_column(self.positions[end.column], column.name.as_deref());
                attach_path(e, self.path())
            })?;
        }
        Ok(Some(fetched))
    }

    /// Decodes rows `[start, start + len)` of column `index` (checked to exist and hold them)
    /// from the file's bytes or, for a file read by ranges, from what [`fetch`](Self::fetch)
    /// fetched for them.
    fn decode_column(
        &self,
        fetched: Option<&Pieces>,
        index: usize,
        start: usize,
        len: usize,
    ) -> Result<ArrayRef> {
        let column = &self.info.columns[index];
        let bytes = match (&self.bytes, fetched) {
            (FileBytes::Whole { bytes, .. }, _) => Bytes::Whole(bytes),
            (FileBytes::Ranged { .. }, Some(pieces)) => Bytes::Pieces(pieces),
            (FileBytes::Ranged { held, .. }, None) => Bytes::Pieces(held),
        };
        Decoder { bytes }.decode(column, start, len).map_err(|e| {
            let position = self.positions[index];
            attach_path(e.with_column(position, column.name.as_deref()), self.path())
        })
    }
}

fn attach_path(error: Error, path: Option<&Path>) -> Error {
    match path {
        Some(p) => error.with_file(p),
        None => error,
    }
}

/// Builds a Jay [`Reader`].
#[derive(Debug, Clone, Default)]
pub struct ReaderBuilder {
    scan: ScanOptions,
    copy: bool,
    max_dataless_rows: Option<u64>,
}

impl ReaderBuilder {
    /// A builder with every option at its default: 65,536 rows per batch, every column, the
    /// whole file, mapped rather than copied.
    pub fn new() -> Self {
        Self::default()
    }

    crate::scan::scan_setters!();

    /// Reads the file into memory instead of mapping it (default `false`: mapped).
    pub fn with_copy(mut self, copy: bool) -> Self {
        self.copy = copy;
        self
    }

    /// The most rows to read that no data of the file stands behind: the rows of a frame
    /// whose columns are all void (or that has no columns), and the elements of a void array
    /// child (default [`DEFAULT_MAX_DATALESS_ROWS`], 2^32). Beyond it the reader is not built:
    /// a `bad_meta` error names the row count and this setting.
    pub fn with_max_dataless_rows(mut self, rows: u64) -> Self {
        self.max_dataless_rows = Some(rows);
        self
    }

    /// Opens and memory-maps the Jay file at `path` and returns a reader.
    pub fn build(self, path: impl AsRef<Path>) -> Result<Reader> {
        let file = JayFile::open_with(path, self.copy, self.scan.salvage)?;
        self.build_from_file(Arc::new(file))
    }

    /// A reader of Jay bytes already in memory.
    pub fn build_from_bytes(self, bytes: impl Into<Buffer>) -> Result<Reader> {
        let file = JayFile::from_bytes_with(bytes, self.scan.salvage)?;
        self.build_from_file(Arc::new(file))
    }

    /// Returns a reader of a file already opened, without reading its metadata again.
    pub fn build_from_file(self, file: Arc<JayFile>) -> Result<Reader> {
        let all = file.schema();
        let salvage = Salvage::from_scan(&self.scan);
        let mut columns = match &self.scan.projection {
            None => (0..all.fields().len()).collect(),
            Some(p) if salvage.on && !file.dropped.is_empty() => {
                select_intact(&file, p, &salvage).map_err(|e| attach_path(e, file.path()))?
            }
            Some(p) => p
                .resolve(all.fields().iter().map(|f| f.name().as_str()))
                .map_err(|e| attach_path(e, file.path()))?,
        };
        if salvage.on && self.scan.projection.is_none() {
            file.dropped.iter().for_each(|d| salvage.push(d.clone()));
        }
        let nrows = usize::try_from(file.info.nrows).map_err(|_| {
            attach_path(
                Error::new(
                    ErrorClass::BadMeta,
                    format!(
                        "{} rows do not fit this machine's address space",
                        file.info.nrows
                    ),
                ),
                file.path(),
            )
        })?;
        let (first, last) = match self.scan.range {
            None | Some(FragmentRange::Whole) => (0, nrows),
            Some(FragmentRange::Rows { start, end }) if start <= end && end <= nrows as u64 => {
                (start as usize, end as usize)
            }
            Some(FragmentRange::Rows { start, end }) => {
                return Err(attach_path(
                    Error::invalid_argument(format!(
                        "rows {start}..{end} are not a range of the file's {nrows} rows"
                    )),
                    file.path(),
                ))
            }
            Some(other) => return Err(attach_path(other.wrong_unit("Jay", "rows"), file.path())),
        };
        let mut end = self
            .scan
            .limit
            .map_or(last, |l| first + l.min(last - first));
        if salvage.on {
            columns = verify_columns(&file, columns, first, end, &salvage);
            if columns.is_empty() && !salvage.report.is_empty() {
                // Every column asked for is damaged: there are no rows to give.
                end = first;
            }
        }
        let cap = self.max_dataless_rows.unwrap_or(DEFAULT_MAX_DATALESS_ROWS);
        check_dataless_rows(&file.info, &columns, (end - first) as u64, cap)
            .map_err(|e| attach_path(e, file.path()))?;
        let schema = Arc::new(all.project(&columns)?);
        let pipelined = (end - first).saturating_mul(columns.len()) >= PIPELINE_THRESHOLD;
        Ok(Reader {
            file,
            schema,
            columns,
            pipeline: pipelined.then(Pipeline::new),
            prefetched_to: first,
            first_row: first,
            next_row: first,
            end_row: end,
            batch_size: self.scan.batch_size_or(DEFAULT_BATCH_SIZE),
            failed: false,
            salvage,
        })
    }
}

/// Resolves a projection against every column of the file, the dropped ones included, and
/// keeps the intact ones (as indices into the intact columns); a dropped column asked for is
/// reported.
fn select_intact(file: &JayFile, projection: &Projection, salvage: &Salvage) -> Result<Vec<usize>> {
    let total = file.positions.len() + file.dropped.len();
    let mut names: Vec<&str> = vec![""; total];
    for (slot, &position) in file.positions.iter().enumerate() {
        names[position] = file.info.columns[slot].name.as_deref().unwrap_or("");
    }
    for d in &file.dropped {
        if let (Some(i), Some(name)) = (d.index, d.column.as_deref()) {
            names[i as usize] = name;
        }
    }
    let mut intact = Vec::new();
    for position in projection.resolve(names.iter().copied())? {
        match file.positions.iter().position(|&p| p == position) {
            Some(slot) => intact.push(slot),
            None => {
                if let Some(d) = file
                    .dropped
                    .iter()
                    .find(|d| d.index == Some(position as u64))
                {
                    salvage.push(d.clone());
                }
            }
        }
    }
    Ok(intact)
}

/// Refuses to read `rows` rows that no bytes stand behind beyond `cap` (see
/// [`ReaderBuilder::with_max_dataless_rows`]): those of a frame without a column that holds
/// data, and the elements of the void children of the `columns` to read.
fn check_dataless_rows(info: &FrameInfo, columns: &[usize], rows: u64, cap: u64) -> Result<()> {
    let fix = "raise the max_dataless_rows option if the file is genuine";
    let holds_data = info.columns.iter().any(|c| c.jay_type != JayType::Void0);
    if !holds_data && rows > cap {
        let what = if info.columns.is_empty() {
            "has no columns"
        } else {
            "has only void columns"
        };
        return Err(Error::new(
            ErrorClass::BadMeta,
            format!(
                "the frame {what} but claims {} rows, more than the {cap} rows without data \
                 that are read; {fix}",
                info.nrows
            ),
        )
        .with_setting("max_dataless_rows")
        .with_field("Frame.nrows"));
    }
    for (index, column) in columns.iter().map(|&c| (c, &info.columns[c])) {
        let mut child = column.child.as_deref();
        while let Some(c) = child {
            if c.jay_type == JayType::Void0 && c.nrows > cap {
                return Err(Error::new(
                    ErrorClass::BadMeta,
                    format!(
                        "the array's void child claims {} elements, more than the {cap} \
                         elements without data that are read; {fix}",
                        c.nrows
                    ),
                )
                .with_column(index, column.name.as_deref())
                .with_setting("max_dataless_rows")
                .with_field("child"));
            }
            child = c.child.as_deref();
        }
    }
    Ok(())
}

/// Salvage: decodes rows `first..end` of every selected column once, before the first batch,
/// and leaves out the columns whose data is damaged (a bad Bool8 byte, string offsets that
/// decrease, text that is not UTF-8). A column cannot leave the schema once batches have been
/// handed out, so this costs a second decode of the data read.
fn verify_columns(
    file: &JayFile,
    columns: Vec<usize>,
    first: usize,
    end: usize,
    salvage: &Salvage,
) -> Vec<usize> {
    const STEP: usize = 1 << 20;
    columns
        .into_iter()
        .filter(|&c| {
            // A void column has no data to be damaged, and its row count may be anything.
            if file.info.columns[c].jay_type == JayType::Void0 {
                return true;
            }
            let failure = (first..end)
                .step_by(STEP)
                .find_map(|start| file.read_column(c, start, STEP.min(end - start)).err());
            match failure {
                None => true,
                Some(e) => {
                    let mut skipped =
                        Skipped::new("column", e).with_index(file.positions[c] as u64);
                    if let Some(name) = &file.info.columns[c].name {
                        skipped = skipped.with_column(name.clone());
                    }
                    salvage.push(skipped);
                    false
                }
            }
        })
        .collect()
}

/// The fragments of a Jay file: row ranges of `target_rows` rows (its columns are contiguous,
/// so a fragment may start at any row). Bytes are the file's data bytes pro rata.
pub fn fragments(file: &JayFile, target_rows: usize) -> Result<Vec<FragmentSpan>> {
    let rows = file.info.nrows;
    let size = file.info.file_size;
    Ok(split_rows(rows, target_rows, 1, |start, end| {
        ((end - start) as u128 * size as u128 / rows.max(1) as u128) as u64
    }))
}

/// The record batches of a Jay file, in row order.
///
/// A large scan decodes batches on the rayon pool, a few ahead of the one handed out, each
/// batch a job that maps in its own pages and decodes its columns; memory stays at those few
/// batches. Decoding one batch's columns in parallel instead left a core idle behind the
/// string column and cost a handful of thread wake-ups per batch.
pub struct Reader {
    file: Arc<JayFile>,
    schema: SchemaRef,
    columns: Vec<usize>,
    /// Batches being decoded ahead, oldest first (for large scans).
    pipeline: Option<Pipeline<Result<RecordBatch>>>,
    /// Rows up to here have been handed to [`JayFile::prefetch`].
    prefetched_to: usize,
    first_row: usize,
    next_row: usize,
    end_row: usize,
    batch_size: usize,
    failed: bool,
    salvage: Salvage,
}

impl Reader {
    /// The opened file (its description and structure).
    pub fn file(&self) -> &Arc<JayFile> {
        &self.file
    }

    /// Where this reader recorded the columns it dropped when salvaging.
    pub fn salvage_report(&self) -> &SalvageReport {
        &self.salvage.report
    }

    /// Rows this reader will yield in all.
    pub fn total_rows(&self) -> usize {
        self.end_row - self.first_row
    }

    /// Rows of the batch that starts at `start`.
    fn batch_len(&self, start: usize) -> usize {
        // Without columns that hold data (none, or only void ones) a batch costs the reader
        // nothing whatever its row count, and a void frame may have billions of rows: large
        // batches rather than billions of small ones.
        let dataless = self
            .columns
            .iter()
            .all(|&c| self.file.info.columns[c].jay_type == JayType::Void0);
        let size = if dataless {
            self.batch_size.max(DATALESS_BATCH_ROWS)
        } else {
            self.batch_size
        };
        size.min(self.end_row - start)
    }

    /// The next batch from the pipeline, keeping as many batches under way as the pool has
    /// threads, plus one.
    fn next_pipelined(&mut self) -> Option<Result<RecordBatch>> {
        let depth = rayon::current_num_threads() + 1;
        while self.pipeline.as_ref().is_some_and(|p| p.len() < depth)
            && self.next_row < self.end_row
        {
            let start = self.next_row;
            let len = self.batch_len(start);
            self.next_row += len;
            let (file, schema, columns) =
                (self.file.clone(), self.schema.clone(), self.columns.clone());
            let first = start == self.first_row;
            let job = move || {
                file.prefetch(&columns, start as u64, (start + len) as u64);
                read_batch(&file, &schema, &columns, start, len, first)
            };
            self.pipeline.as_mut()?.submit(job);
        }
        self.pipeline.as_mut()?.next()
    }
}

/// Rows `start..start + len` of `columns` of `file`, as a batch of `schema`; the first batch
/// of a reader also checks what the open left unchecked of those columns (`check_ends`).
fn read_batch(
    file: &JayFile,
    schema: &SchemaRef,
    columns: &[usize],
    start: usize,
    len: usize,
    check_ends: bool,
) -> Result<RecordBatch> {
    let fetched = file.fetch(columns, start, len, check_ends)?;
    let decode = |&index: &usize| file.decode_column(fetched.as_ref(), index, start, len);
    let arrays: Vec<ArrayRef> = if columns.len() > 1 && len * columns.len() >= PARALLEL_THRESHOLD {
        columns.par_iter().map(decode).collect::<Result<_>>()?
    } else {
        columns.iter().map(decode).collect::<Result<_>>()?
    };
    let options = RecordBatchOptions::new().with_row_count(Some(len));
    Ok(RecordBatch::try_new_with_options(
        schema.clone(),
        arrays,
        &options,
    )?)
}

impl Iterator for Reader {
    type Item = Result<RecordBatch, ArrowError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed {
            return None;
        }
        if self.pipeline.is_some() {
            let batch = self.next_pipelined()?;
            self.failed = batch.is_err();
            return Some(batch.map_err(ArrowError::from));
        }
        if self.next_row >= self.end_row {
            return None;
        }
        let start = self.next_row;
        let len = self.batch_len(start);
        self.next_row += len;
        // Keep the pages of the next few batches mapped in ahead of the reads, in windows
        // (a whole large file at once would hold the first batch back and flood memory).
        // A frame of void columns comes in one batch of any length: saturate.
        let ahead = len.saturating_mul(PREFETCH_BATCHES / 2);
        if self.prefetched_to < self.next_row.saturating_add(ahead) {
            let from = self.prefetched_to.max(start);
            let window = len.max(1).saturating_mul(PREFETCH_BATCHES);
            let to = start.saturating_add(window).min(self.end_row);
            self.file.prefetch(&self.columns, from as u64, to as u64);
            self.prefetched_to = to;
        }
        let first = start == self.first_row;
        let batch = read_batch(&self.file, &self.schema, &self.columns, start, len, first);
        self.failed = batch.is_err();
        Some(batch.map_err(ArrowError::from))
    }
}

impl RecordBatchReader for Reader {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }
}

/// The bytes a [`Decoder`] slices: the whole file, or the parts of it fetched for a read.
enum Bytes<'a> {
    Whole(&'a Buffer),
    Pieces(&'a Pieces),
}

/// Decodes row ranges of columns out of the file's bytes.
struct Decoder<'a> {
    bytes: Bytes<'a>,
}

impl Decoder<'_> {
    fn decode(&self, col: &ColumnInfo, start: usize, len: usize) -> Result<ArrayRef> {
        Ok(match &col.jay_type {
            JayType::Void0 => Arc::new(NullArray::new(len)),
            JayType::Bool8 => Arc::new(self.bool8(col, start, len)?),
            JayType::Int8 => Arc::new(self.primitive::<Int8Type>(col, start, len)?),
            JayType::Int16 => Arc::new(self.primitive::<Int16Type>(col, start, len)?),
            JayType::Int32 => Arc::new(self.primitive::<Int32Type>(col, start, len)?),
            JayType::Int64 => Arc::new(self.primitive::<Int64Type>(col, start, len)?),
            JayType::Float32 => Arc::new(self.primitive::<Float32Type>(col, start, len)?),
            JayType::Float64 => Arc::new(self.primitive::<Float64Type>(col, start, len)?),
            JayType::Date32 => Arc::new(self.primitive::<Date32Type>(col, start, len)?),
            JayType::Time64 => {
                Arc::new(self.primitive::<TimestampNanosecondType>(col, start, len)?)
            }
            JayType::Str32 => self.string::<i32>(col, start, len)?,
            JayType::Str64 => self.string::<i64>(col, start, len)?,
            JayType::Arr32(_) => self.list::<i32>(col, start, len)?,
            JayType::Arr64(_) => self.list::<i64>(col, start, len)?,
        })
    }

    /// The bytes of a buffer's part; a zero-length buffer's offset is never looked at.
    fn slice(&self, b: Option<BufferRange>, byte_start: usize, byte_len: usize) -> Result<Buffer> {
        let b = match b {
            Some(b) if byte_len > 0 => b,
            _ => return Ok(Buffer::from(&[][..])),
        };
        let at = b.start() + byte_start;
        match &self.bytes {
            Bytes::Whole(bytes) => Ok(bytes.slice_with_length(at, byte_len)),
            Bytes::Pieces(pieces) => pieces.get(at as u64, byte_len as u64).ok_or_else(|| {
                Error::new(
                    ErrorClass::Io,
                    format!("bytes {at}..{} were not fetched", at + byte_len),
                )
                .at_offset(at as u64)
            }),
        }
    }

    /// The bytes of bitmap `b` that hold the bits of rows `[start, start + len)`, and the
    /// position of row `start`'s bit in them.
    fn bits(&self, b: BufferRange, start: usize, len: usize) -> Result<(Buffer, usize)> {
        let (lo, hi) = ranged::bit_window(start, len, b.length);
        Ok((self.slice(Some(b), lo, hi - lo)?, start % 8))
    }

    /// Rows `[start, start + len)` of the column's validity bitmap: `None` when the column has
    /// none (then its sentinels decide), `Some(None)` when every row of the range is valid.
    fn validity(
        &self,
        col: &ColumnInfo,
        start: usize,
        len: usize,
    ) -> Result<Option<Option<NullBuffer>>> {
        let Some(v) = col.validity else {
            return Ok(None);
        };
        let (bits, offset) = self.bits(v, start, len)?;
        Ok(Some(sentinel::validity_from_bitmap(bits, offset, len)))
    }

    fn values<N: ArrowNativeType>(
        &self,
        b: Option<BufferRange>,
        start: usize,
        len: usize,
    ) -> Result<ScalarBuffer<N>> {
        let size = std::mem::size_of::<N>();
        let buffer = self.slice(b, start * size, len * size)?;
        Ok(
            if buffer.as_ptr().align_offset(std::mem::align_of::<N>()) == 0 {
                ScalarBuffer::new(buffer, 0, len)
            } else {
                ScalarBuffer::new(aligned_copy(&buffer), 0, len)
            },
        )
    }

    fn primitive<T>(&self, col: &ColumnInfo, start: usize, len: usize) -> Result<PrimitiveArray<T>>
    where
        T: ArrowPrimitiveType,
        T::Native: Sentinel,
    {
        let values: ScalarBuffer<T::Native> = self.values(col.data, start, len)?;
        let nulls = match self.validity(col, start, len)? {
            // Arrow data: the bitmap decides; floats are null where NaN as well.
            Some(bitmap) if T::Native::IS_FLOAT => {
                sentinel::intersect_validity(bitmap, sentinel::validity_from_sentinels(&values))
            }
            Some(bitmap) => bitmap,
            None => sentinel::validity_from_sentinels(&values),
        };
        Ok(PrimitiveArray::new(values, nulls))
    }

    fn bool8(&self, col: &ColumnInfo, start: usize, len: usize) -> Result<BooleanArray> {
        let validity = self.validity(col, start, len)?;
        if col.bool_packed {
            let (bits, offset) = match col.data {
                Some(data) => self.bits(data, start, len)?,
                None => (Buffer::from(&[][..]), 0),
            };
            return Ok(BooleanArray::new(
                BooleanBuffer::new(bits, offset, len),
                validity.flatten(),
            ));
        }
        let bytes = self.slice(col.data, start, len)?;
        let bytes: &[u8] = &bytes;
        // A one-row column imported from Arrow keeps its bit-packed byte with stray high bits.
        let lone_packed_byte = col.layout == Layout::New
            && col.nrows == 1
            && validity.is_none()
            && !matches!(bytes.first(), None | Some(0 | 1 | 0x80));
        if lone_packed_byte {
            return Ok(BooleanArray::from(vec![bytes[0] & 1 == 1]));
        }
        let checked = validity.as_ref().and_then(Option::as_ref);
        if let Some(i) = bytes
            .iter()
            .enumerate()
            .position(|(i, &b)| !matches!(b, 0 | 1 | 0x80) && checked.is_none_or(|v| v.is_valid(i)))
        {
            return Err(Error::new(
                ErrorClass::BadValue,
                format!("Bool8 byte {} is not 0, 1 or -128 (NA)", bytes[i] as i8),
            )
            .at_row((start + i) as u64)
            .at_offset((col.data.unwrap().start() + start + i) as u64));
        }
        let values = pack_bits(len, |i| bytes[i] == 1);
        let nulls = match validity {
            Some(bitmap) => bitmap,
            None if bytes.contains(&0x80) => {
                Some(NullBuffer::new(pack_bits(len, |i| bytes[i] != 0x80)))
            }
            None => None,
        };
        Ok(BooleanArray::new(values, nulls))
    }

    /// The `len + 1` offsets that bound rows `[start, start + len)`, widened to u64.
    fn raw_offsets(&self, col: &ColumnInfo, start: usize, len: usize) -> Result<RawOffsets> {
        Ok(if col.offset_width == 4 {
            RawOffsets::U32(self.values(col.data, start, len + 1)?)
        } else {
            RawOffsets::U64(self.values(col.data, start, len + 1)?)
        })
    }

    fn string<O: OffsetSizeTrait>(
        &self,
        col: &ColumnInfo,
        start: usize,
        len: usize,
    ) -> Result<ArrayRef> {
        if col.offset_width == 4 {
            self.string_with::<O, u32>(col, start, len)
        } else {
            self.string_with::<O, u64>(col, start, len)
        }
    }

    /// Strings whose stored offsets are `R` (u32 or u64, each with its NA bit on top).
    fn string_with<O: OffsetSizeTrait, R: StoredOffset>(
        &self,
        col: &ColumnInfo,
        start: usize,
        len: usize,
    ) -> Result<ArrayRef> {
        let raw: ScalarBuffer<R> = self.values(col.data, start, len + 1)?;
        let strdata_len = col.strdata.map_or(0, |b| b.length);
        let offsets_at = |i: usize| (col.data.unwrap().start() + (start + i) * R::WIDTH) as u64;
        let masked = |i: usize| raw[i].masked();

        // One pass that the compiler vectorises: any NA bit, any decrease, any overrun.
        let any_na_bit = raw
            .iter()
            .fold(R::default(), |acc, &r| acc | r)
            .has_na_bit();
        let ordered = raw
            .windows(2)
            .fold(true, |ok, w| ok & (w[1].masked() >= w[0].masked()));
        if !ordered || masked(len) > strdata_len {
            let bad = (0..=len)
                .find(|&i| masked(i) > strdata_len || (i > 0 && masked(i) < masked(i - 1)))
                .unwrap_or(len);
            let what = if masked(bad) <= strdata_len {
                format!(
                    "string offset {} is below the previous offset {}",
                    masked(bad),
                    masked(bad - 1)
                )
            } else {
                format!(
                    "string offset {} is past the {strdata_len} bytes of string data",
                    masked(bad)
                )
            };
            return Err(Error::new(ErrorClass::BadOffsets, what)
                .at_row((start + bad).saturating_sub(1) as u64)
                .at_offset(offsets_at(bad)));
        }

        let first = masked(0) as usize;
        let last = masked(len) as usize;
        // The whole string buffer when the file is at hand (the offsets index it as they are);
        // the rows' text (and the byte after) when it was fetched, `base` bytes into it.
        let (strdata, base) = match self.bytes {
            Bytes::Whole(_) => (self.slice(col.strdata, 0, strdata_len as usize)?, 0),
            Bytes::Pieces(_) => {
                let text = ranged::text_window(first as u64, last as u64, strdata_len);
                let len = (text.end - text.start) as usize;
                (self.slice(col.strdata, first, len)?, first)
            }
        };
        if let Err(e) = simdutf8::compat::from_utf8(&strdata[first - base..last - base]) {
            return Err(
                Error::new(ErrorClass::InvalidUtf8, "string data is not valid UTF-8")
                    .at_offset((col.strdata.unwrap().start() + first + e.valid_up_to()) as u64),
            );
        }
        let splits_char = |i: usize| {
            let at = masked(i) as usize - base;
            at < strdata.len() && (strdata[at] & 0xC0) == 0x80
        };
        if let Some(i) = (0..=len).find(|&i| splits_char(i)) {
            return Err(Error::new(
                ErrorClass::InvalidUtf8,
                format!("string offset {} splits a UTF-8 character", masked(i)),
            )
            .at_row((start + i).saturating_sub(1) as u64)
            .at_offset(offsets_at(i)));
        }

        let offsets: ScalarBuffer<O> =
            if base == 0 && !any_na_bit && R::WIDTH == std::mem::size_of::<O>() {
                // The stored offsets are already Arrow offsets.
                ScalarBuffer::new(raw.inner().clone(), 0, len + 1)
            } else {
                raw.iter()
                    .map(|r| O::usize_as(r.masked() as usize - base))
                    .collect()
            };
        let na_bits =
            any_na_bit.then(|| NullBuffer::new(pack_bits(len, |i| !raw[i + 1].has_na_bit())));
        let nulls =
            sentinel::intersect_validity(self.validity(col, start, len)?.flatten(), na_bits);
        // SAFETY: the offsets were checked above to be non-decreasing, inside the string data,
        // and on character boundaries of text that is valid UTF-8.
        let array = unsafe {
            GenericStringArray::<O>::new_unchecked(
                OffsetBuffer::new_unchecked(offsets),
                strdata,
                nulls,
            )
        };
        Ok(Arc::new(array))
    }

    fn list<O: OffsetSizeTrait>(
        &self,
        col: &ColumnInfo,
        start: usize,
        len: usize,
    ) -> Result<ArrayRef> {
        let child = col.child.as_deref().expect("arrays have a verified child");
        let raw = self.raw_offsets(col, start, len)?;
        let limit = if O::IS_LARGE {
            i64::MAX as u64
        } else {
            i32::MAX as u64
        }
        .min(child.nrows);
        let mut previous = raw.get(0);
        for i in 0..=len {
            let r = raw.get(i);
            if r < previous || r > limit {
                let what = if r < previous {
                    format!("array offset {r} is below the previous offset {previous}")
                } else {
                    format!("array offset {r} is past the child's {} rows", child.nrows)
                };
                return Err(Error::new(ErrorClass::BadOffsets, what)
                    .at_row((start + i).saturating_sub(1) as u64)
                    .at_offset(
                        (col.data.unwrap().start() + (start + i) * col.offset_width as usize)
                            as u64,
                    ));
            }
            previous = r;
        }
        let first = raw.get(0);
        let values = self
            .decode(child, first as usize, (raw.get(len) - first) as usize)
            .map_err(|e| e.with_field("array elements"))?;
        let offsets: ScalarBuffer<O> = (0..=len)
            .map(|i| O::usize_as((raw.get(i) - first) as usize))
            .collect();
        let field = Arc::new(Field::new("item", child.jay_type.arrow_type(), true));
        // SAFETY: checked above to start at 0 and never decrease.
        let offsets = unsafe { OffsetBuffer::new_unchecked(offsets) };
        let array = GenericListArray::<O>::try_new(
            field,
            offsets,
            values,
            self.validity(col, start, len)?.flatten(),
        )?;
        Ok(Arc::new(array))
    }
}

enum RawOffsets {
    U32(ScalarBuffer<u32>),
    U64(ScalarBuffer<u64>),
}

impl RawOffsets {
    #[inline(always)]
    fn get(&self, i: usize) -> u64 {
        match self {
            RawOffsets::U32(v) => v[i] as u64,
            RawOffsets::U64(v) => v[i],
        }
    }
}

/// A stored string offset: u32 (Str32) or u64 (Str64), whose top bit marks the row as NA.
trait StoredOffset: ArrowNativeType + Default + std::ops::BitOr<Output = Self> {
    const WIDTH: usize;
    fn masked(self) -> u64;
    fn has_na_bit(self) -> bool;
}

impl StoredOffset for u32 {
    const WIDTH: usize = 4;
    #[inline(always)]
    fn masked(self) -> u64 {
        (self & !(1 << 31)) as u64
    }
    #[inline(always)]
    fn has_na_bit(self) -> bool {
        self >> 31 != 0
    }
}

impl StoredOffset for u64 {
    const WIDTH: usize = 8;
    #[inline(always)]
    fn masked(self) -> u64 {
        self & !(1 << 63)
    }
    #[inline(always)]
    fn has_na_bit(self) -> bool {
        self >> 63 != 0
    }
}
