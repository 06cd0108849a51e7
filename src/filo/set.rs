//! The Filo set container (specs/filo.md section 14): `NAME.filo/schema.json` plus one Filo
//! vector file per column per chunk, read and written as Arrow record batches.
//!
//! Reading goes chunk by chunk and only opens the selected columns' files, decoding them in
//! parallel; writing buffers one chunk of rows at most, encodes its columns in parallel, and
//! renames the finished directory into place.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::{new_null_array, ArrayRef, RecordBatch, RecordBatchOptions, RecordBatchReader};
use arrow_schema::{ArrowError, DataType, Schema, SchemaRef};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use super::decode::{decode_rows_buffer, MAX_EMPTY_LEN};
use super::encode::{encode, EncodeOptions, Hint};
use super::mapping::{set_field, FiloType};
use crate::atomic::{check_target, refuse_stream, AtomicDir, DatasetKind, Existing, Replaceable};
use crate::error::{Error, ErrorClass, Result};
use crate::salvage::{Salvage, SalvageReport, Skipped};
use crate::scan::{group_units, FragmentRange, FragmentSpan, ScanOptions, Unit};
use crate::write::{BatchWriter, WriteSummary};

/// The `format` value of a Filo set's `schema.json`.
pub const SET_FORMAT: &str = "arrowsmith-filo-set";
/// What a Filo set is to [`AtomicDir`]: the only kind of directory the writer replaces (with
/// the overwrite option).
pub(crate) const DATASET: DatasetKind = DatasetKind {
    what: "filo set",
    marker: "a schema.json whose format is \"arrowsmith-filo-set\"",
    is_dataset: is_set,
};

/// Whether `dir/schema.json` says it is a Filo set's; its other fields are not checked, so a
/// damaged set is still recognised (and can be replaced).
fn is_set(dir: &Path) -> bool {
    #[derive(Deserialize)]
    struct Marker {
        format: serde_json::Value,
    }
    let path = dir.join("schema.json");
    // A set's schema is small; a large file of that name is someone else's.
    const MAX_SCHEMA_BYTES: u64 = 64 << 20;
    if !std::fs::metadata(&path).is_ok_and(|m| m.is_file() && m.len() <= MAX_SCHEMA_BYTES) {
        return false;
    }
    std::fs::read(&path)
        .ok()
        .and_then(|text| serde_json::from_slice::<Marker>(&text).ok())
        .is_some_and(|m| m.format == SET_FORMAT)
}

/// The default rows per chunk.
pub const DEFAULT_CHUNK_SIZE: usize = 65_536;

#[derive(Debug, Clone, Serialize, Deserialize)]
struct SchemaJson {
    format: serde_json::Value,
    version: serde_json::Value,
    columns: Vec<ColumnJson>,
    chunks: Vec<ChunkJson>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct ColumnJson {
    name: String,
    filo_type: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct ChunkJson {
    rows: u64,
}

/// A column of a Filo set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SetColumn {
    /// The column's name.
    pub name: String,
    /// The Filo type its vectors hold.
    pub filo_type: FiloType,
}

/// What `schema.json` says, validated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SetInfo {
    /// The columns, in order.
    pub columns: Vec<SetColumn>,
    /// Rows of each chunk, in row order.
    pub chunks: Vec<usize>,
}

impl SetInfo {
    /// Reads and checks `DIR/schema.json`.
    pub fn open(dir: &Path) -> Result<SetInfo> {
        let path = dir.join("schema.json");
        let text = std::fs::read(&path).map_err(|e| Error::from(e).with_file(&path))?;
        let bad = |field: &str, message: String| {
            Error::new(ErrorClass::BadMeta, message)
                .with_file(&path)
                .with_field(field.to_string())
        };
        let raw: SchemaJson = serde_json::from_slice(&text)
            .map_err(|e| bad("schema.json", format!("not a Filo set schema: {e}")))?;
        if raw.format != SET_FORMAT {
            return Err(bad(
                "format",
                format!("expected \"{SET_FORMAT}\", found {}", raw.format),
            ));
        }
        if raw.version != 1 {
            return Err(bad("version", format!("expected 1, found {}", raw.version)));
        }
        if raw.columns.is_empty() {
            return Err(bad("columns", "a Filo set has at least one column".into()));
        }
        let mut seen = HashSet::new();
        let mut columns = Vec::with_capacity(raw.columns.len());
        for (i, c) in raw.columns.iter().enumerate() {
            let field = format!("columns[{i}]");
            if c.name.is_empty() {
                return Err(bad(&field, "the column name is empty".into()));
            }
            if !seen.insert(c.name.as_str()) {
                return Err(bad(
                    &field,
                    format!("column name {:?} appears twice", c.name),
                ));
            }
            let filo_type = FiloType::SET_TYPES
                .into_iter()
                .find(|t| t.name() == c.filo_type)
                .ok_or_else(|| {
                    bad(
                        &field,
                        format!(
                            "unknown filo_type {:?}: expected Int, Long, Double, Float, Boolean, \
                             String, Timestamp or DateTime",
                            c.filo_type
                        ),
                    )
                })?;
            columns.push(SetColumn {
                name: c.name.clone(),
                filo_type,
            });
        }
        let mut chunks = Vec::with_capacity(raw.chunks.len());
        for (i, c) in raw.chunks.iter().enumerate() {
            if c.rows == 0 || c.rows > MAX_EMPTY_LEN as u64 {
                return Err(bad(
                    &format!("chunks[{i}].rows"),
                    format!("{} is outside 1 … {MAX_EMPTY_LEN}", c.rows),
                ));
            }
            chunks.push(c.rows as usize);
        }
        Ok(SetInfo { columns, chunks })
    }

    /// Rows over all chunks.
    pub fn rows(&self) -> u64 {
        self.chunks.iter().map(|&r| r as u64).sum()
    }

    /// The Arrow schema: names in order, types from the mapping, all nullable.
    pub fn schema(&self) -> SchemaRef {
        Arc::new(Schema::new(
            self.columns
                .iter()
                .map(|c| set_field(&c.name, c.filo_type))
                .collect::<Vec<_>>(),
        ))
    }
}

/// The directory of chunk `index`.
pub fn chunk_dir(set: &Path, index: usize) -> PathBuf {
    set.join(format!("chunk-{index:05}"))
}

/// The file of column `column` in chunk `index`.
pub fn column_file(set: &Path, index: usize, column: usize) -> PathBuf {
    chunk_dir(set, index).join(format!("{column}.bin"))
}

/// Reads one column chunk; a missing file is an all-NA chunk.
pub fn read_column_chunk(
    set: &Path,
    chunk: usize,
    column: usize,
    column_info: &SetColumn,
    rows: usize,
) -> Result<ArrayRef> {
    let data_type = column_info.filo_type.arrow_type();
    read_column_chunk_as(set, chunk, column, column_info, rows, &data_type)
}

/// [`read_column_chunk`] as an Arrow type of the column's choosing (a String column as
/// `Dictionary(Int32, Utf8)`).
pub fn read_column_chunk_as(
    set: &Path,
    chunk: usize,
    column: usize,
    column_info: &SetColumn,
    rows: usize,
    data_type: &DataType,
) -> Result<ArrayRef> {
    let path = column_file(set, chunk, column);
    // Mapped (when large enough to pay): plain numeric vectors are then sliced out of the
    // mapping without a copy (see `mapped::map_or_read` about files truncated meanwhile).
    let bytes = match crate::mapped::map_or_read(&path) {
        Ok((bytes, _)) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Ok(new_null_array(data_type, rows))
        }
        Err(e) => return Err(Error::from(e).with_file(&path)),
    };
    decode_rows_buffer(&bytes, data_type, rows).map_err(|e| {
        e.with_file(&path)
            .with_column(column, Some(&column_info.name))
    })
}

/// The fragments of a Filo set: runs of chunks of about `target_rows` rows, from
/// `schema.json` alone; bytes are the sizes of the chunks' column files (a stat each).
pub fn fragments(dir: &Path, target_rows: usize) -> Result<Vec<FragmentSpan>> {
    let info = SetInfo::open(dir)?;
    let units = info.chunks.iter().enumerate().map(|(k, &rows)| Unit {
        start: k as u64,
        end: k as u64 + 1,
        rows: rows as u64,
        bytes: (0..info.columns.len())
            .filter_map(|c| std::fs::metadata(column_file(dir, k, c)).ok())
            .map(|m| m.len())
            .sum(),
    });
    Ok(group_units(
        units,
        target_rows,
        |start, end| FragmentRange::Chunks { start, end },
        FragmentRange::Chunks { start: 0, end: 0 },
    ))
}

/// Configures and opens a [`Reader`] of a Filo set.
#[derive(Debug, Clone, Default)]
pub struct ReaderBuilder {
    scan: ScanOptions,
    dictionary_strings: bool,
}

impl ReaderBuilder {
    /// A builder with every option at its default: at most 65,536 rows per batch
    /// ([`DEFAULT_BATCH_SIZE`](crate::DEFAULT_BATCH_SIZE); a batch never spans two chunks, so
    /// smaller chunks give smaller batches), every column (only the selected columns' files are
    /// opened), every chunk.
    pub fn new() -> Self {
        Self::default()
    }

    crate::scan::scan_setters!();

    /// Reads String columns as Arrow `Dictionary(Int32, Utf8)`: the codes of filo's
    /// DictStringVectors become the keys without expanding the strings (other string vectors
    /// are dictionary-encoded). Default: `false`, plain `Utf8`.
    pub fn with_dictionary_strings(mut self, dictionary: bool) -> Self {
        self.dictionary_strings = dictionary;
        self
    }

    /// Opens the set directory at `path`, reading `schema.json`, and returns a reader.
    pub fn build(self, path: impl AsRef<Path>) -> Result<Reader> {
        let dir = path.as_ref().to_path_buf();
        let info = SetInfo::open(&dir)?;
        let columns = match &self.scan.projection {
            None => (0..info.columns.len()).collect(),
            Some(p) => p
                .resolve(info.columns.iter().map(|c| c.name.as_str()))
                .map_err(|e| e.with_file(&dir))?,
        };
        let count = info.chunks.len() as u64;
        let (first, last) = match self.scan.range {
            None | Some(FragmentRange::Whole) => (0, count),
            Some(FragmentRange::Chunks { start, end }) if start <= end && end <= count => {
                (start, end)
            }
            Some(FragmentRange::Chunks { start, end }) => {
                return Err(Error::invalid_argument(format!(
                    "chunks {start}..{end} are not a range of the set's {count} chunks"
                ))
                .with_file(&dir))
            }
            Some(other) => return Err(other.wrong_unit("Filo set", "chunks").with_file(&dir)),
        };
        let mut full = info.schema();
        if self.dictionary_strings {
            full = Arc::new(Schema::new(
                full.fields()
                    .iter()
                    .map(|f| match f.data_type() {
                        DataType::Utf8 => {
                            Arc::new(f.as_ref().clone().with_data_type(DataType::Dictionary(
                                Box::new(DataType::Int32),
                                Box::new(DataType::Utf8),
                            )))
                        }
                        _ => f.clone(),
                    })
                    .collect::<Vec<_>>(),
            ));
        }
        let schema = Arc::new(full.project(&columns)?);
        Ok(Reader {
            dir,
            info,
            columns,
            schema,
            batch_size: Some(self.scan.batch_size_or(crate::DEFAULT_BATCH_SIZE)),
            remaining: self.scan.limit.map_or(u64::MAX, |l| l as u64),
            next_chunk: first as usize,
            end_chunk: last as usize,
            current: None,
            salvage: Salvage::from_scan(&self.scan),
        })
    }
}

/// Reads a Filo set as record batches of at most `batch_size` rows, none spanning two chunks.
pub struct Reader {
    dir: PathBuf,
    info: SetInfo,
    columns: Vec<usize>,
    schema: SchemaRef,
    batch_size: Option<usize>,
    remaining: u64,
    next_chunk: usize,
    /// One past the last chunk to read.
    end_chunk: usize,
    /// The chunk being handed out and how far.
    current: Option<(RecordBatch, usize)>,
    salvage: Salvage,
}

impl Reader {
    /// What the set's `schema.json` says.
    pub fn info(&self) -> &SetInfo {
        &self.info
    }

    /// Where this reader records the chunks it skips when salvaging.
    pub fn salvage_report(&self) -> &SalvageReport {
        &self.salvage.report
    }

    fn read_chunk(&self, index: usize) -> Result<RecordBatch> {
        let rows = self.info.chunks[index];
        let arrays = self
            .columns
            .par_iter()
            .zip(self.schema.fields().par_iter())
            .map(|(&c, field)| {
                let column = &self.info.columns[c];
                read_column_chunk_as(&self.dir, index, c, column, rows, field.data_type())
            })
            .collect::<Result<Vec<_>>>()?;
        let options = RecordBatchOptions::new().with_row_count(Some(rows));
        Ok(RecordBatch::try_new_with_options(
            self.schema.clone(),
            arrays,
            &options,
        )?)
    }

    fn next_batch(&mut self) -> Result<Option<RecordBatch>> {
        loop {
            if self.remaining == 0 {
                return Ok(None);
            }
            if let Some((batch, at)) = &mut self.current {
                if *at < batch.num_rows() {
                    let step = self.batch_size.unwrap_or(batch.num_rows());
                    let n = step
                        .min(batch.num_rows() - *at)
                        .min(usize::try_from(self.remaining).unwrap_or(usize::MAX));
                    let out = batch.slice(*at, n);
                    *at += n;
                    self.remaining -= n as u64;
                    return Ok(Some(out));
                }
            }
            if self.next_chunk >= self.end_chunk {
                return Ok(None);
            }
            let index = self.next_chunk;
            self.next_chunk += 1;
            match self.read_chunk(index) {
                Ok(batch) => self.current = Some((batch, 0)),
                // A chunk is skipped whole, in every column, so the rows stay aligned.
                Err(e) if self.salvage.on => self.salvage.push(
                    Skipped::new("chunk", e.with_file(&self.dir))
                        .with_index(index as u64)
                        .with_rows(self.info.chunks[index] as u64),
                ),
                Err(e) => return Err(e),
            }
        }
    }
}

impl Iterator for Reader {
    type Item = std::result::Result<RecordBatch, ArrowError>;

    fn next(&mut self) -> Option<Self::Item> {
        match self.next_batch() {
            Ok(b) => b.map(Ok),
            Err(e) => {
                self.remaining = 0;
                Some(Err(e.with_file(&self.dir).into()))
            }
        }
    }
}

impl RecordBatchReader for Reader {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }
}

/// Options of the Filo set [`Writer`].
#[derive(Debug, Clone)]
pub struct WriterOptions {
    chunk_size: usize,
    hint: Hint,
    column_hints: HashMap<String, Hint>,
    column_types: HashMap<String, FiloType>,
    overwrite: bool,
    durable: bool,
}

impl Default for WriterOptions {
    fn default() -> Self {
        WriterOptions {
            chunk_size: DEFAULT_CHUNK_SIZE,
            hint: Hint::AutoDetect,
            column_hints: HashMap::new(),
            column_types: HashMap::new(),
            overwrite: false,
            durable: true,
        }
    }
}

impl WriterOptions {
    /// Rows per chunk, 1 … 16,777,215 (default 65,536).
    pub fn with_chunk_size(mut self, rows: usize) -> Self {
        self.chunk_size = rows;
        self
    }
    /// The encoding hint of every column without its own (default [`Hint::AutoDetect`]).
    pub fn with_hint(mut self, hint: Hint) -> Self {
        self.hint = hint;
        self
    }
    /// The encoding hint of one column, overriding [`WriterOptions::with_hint`] (default: none).
    pub fn with_column_hint(mut self, column: impl Into<String>, hint: Hint) -> Self {
        self.column_hints.insert(column.into(), hint);
        self
    }
    /// Stores a column as this Filo type instead of its natural one (for example a
    /// fixed-offset Timestamp as DateTime; default: the natural type of its Arrow type).
    pub fn with_column_type(mut self, column: impl Into<String>, filo_type: FiloType) -> Self {
        self.column_types.insert(column.into(), filo_type);
        self
    }
    /// Replaces an existing set at the target (default: refuse).
    pub fn with_overwrite(mut self, overwrite: bool) -> Self {
        self.overwrite = overwrite;
        self
    }
    /// Whether `finish()` flushes every file and directory of the set to disk (fsync) before
    /// renaming it into place (default `true`). Without, the rename still makes the set appear
    /// whole, but a crash soon after may lose it.
    pub fn with_durable(mut self, durable: bool) -> Self {
        self.durable = durable;
        self
    }
}

/// Writes record batches into a new Filo set directory.
pub struct Writer {
    out: AtomicDir,
    schema: SchemaRef,
    columns: Vec<(SetColumn, Hint)>,
    options: WriterOptions,
    pending: Vec<RecordBatch>,
    pending_rows: usize,
    chunks: Vec<usize>,
    rows: u64,
}

impl Writer {
    /// Starts writing a Filo set directory at `path` for batches of `schema`. Nothing appears at
    /// `path` until [`Writer::finish`].
    pub fn try_new(
        path: impl AsRef<Path>,
        schema: SchemaRef,
        options: WriterOptions,
    ) -> Result<Writer> {
        let path = path.as_ref();
        if options.chunk_size == 0 || options.chunk_size > MAX_EMPTY_LEN {
            return Err(Error::invalid_argument(format!(
                "Filo chunk size {} is outside 1 … {MAX_EMPTY_LEN}",
                options.chunk_size
            )));
        }
        if schema.fields().is_empty() {
            return Err(
                Error::invalid_argument("a Filo set needs at least one column").with_file(path),
            );
        }
        if check_target(path, Replaceable::Dataset(DATASET), options.overwrite)? == Existing::Stream
        {
            return Err(refuse_stream(path, "filo"));
        }
        let mut columns = Vec::with_capacity(schema.fields().len());
        for (i, f) in schema.fields().iter().enumerate() {
            let located = |e: Error| e.with_column(i, Some(f.name())).with_file(path);
            let filo_type = match options.column_types.get(f.name()) {
                Some(t) => *t,
                None => FiloType::for_write(f.data_type()).map_err(located)?,
            };
            if filo_type == FiloType::Binary {
                return Err(located(Error::new(
                    ErrorClass::UnsupportedType,
                    "binary columns cannot go in a Filo set (filo has no binary vector)",
                )));
            }
            let hint = options
                .column_hints
                .get(f.name())
                .copied()
                .unwrap_or(options.hint);
            columns.push((
                SetColumn {
                    name: f.name().clone(),
                    filo_type,
                },
                hint,
            ));
        }
        let mut out = AtomicDir::create(path, DATASET)?;
        out.set_durable(options.durable);
        Ok(Writer {
            out,
            schema,
            columns,
            options,
            pending: Vec::new(),
            pending_rows: 0,
            chunks: Vec::new(),
            rows: 0,
        })
    }

    /// Adds the batch's rows; each full chunk is encoded, one vector per column, and written.
    pub fn write(&mut self, batch: &RecordBatch) -> Result<()> {
        if batch.schema().fields().len() != self.schema.fields().len() {
            return Err(Error::invalid_argument(format!(
                "the batch has {} columns, the set {}",
                batch.num_columns(),
                self.schema.fields().len()
            )));
        }
        let mut batch = batch.clone();
        while batch.num_rows() > 0 {
            let room = self.options.chunk_size - self.pending_rows;
            let take = room.min(batch.num_rows());
            self.pending.push(batch.slice(0, take));
            self.pending_rows += take;
            batch = batch.slice(take, batch.num_rows() - take);
            if self.pending_rows == self.options.chunk_size {
                self.flush()?;
            }
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<()> {
        if self.pending_rows == 0 {
            return Ok(());
        }
        let rows = self.pending_rows;
        let index = self.chunks.len();
        let dir = chunk_dir(self.out.path(), index);
        std::fs::create_dir(&dir).map_err(|e| Error::from(e).with_file(&dir))?;
        let pending = std::mem::take(&mut self.pending);
        let columns = &self.columns;
        (0..columns.len()).into_par_iter().try_for_each(|c| {
            let parts: Vec<&dyn arrow_array::Array> =
                pending.iter().map(|b| b.column(c).as_ref()).collect();
            let (column, hint) = &columns[c];
            let located = |e: Error| e.with_column(c, Some(&column.name));
            let array = arrow::compute::concat(&parts).map_err(|e| located(e.into()))?;
            let options = EncodeOptions::default().with_hint(*hint);
            let bytes = encode(array.as_ref(), column.filo_type, &options)
                .map_err(|e| located(e.at_row(self.rows)))?;
            let file = dir.join(format!("{c}.bin"));
            std::fs::write(&file, bytes).map_err(|e| located(Error::from(e).with_file(&file)))
        })?;
        self.chunks.push(rows);
        self.rows += rows as u64;
        self.pending_rows = 0;
        Ok(())
    }

    /// Writes the last chunk and `schema.json`, then moves the directory into place.
    pub fn finish(mut self) -> Result<WriteSummary> {
        self.flush()?;
        let json = SchemaJson {
            format: SET_FORMAT.into(),
            version: 1.into(),
            columns: self
                .columns
                .iter()
                .map(|(c, _)| ColumnJson {
                    name: c.name.clone(),
                    filo_type: c.filo_type.name().to_string(),
                })
                .collect(),
            chunks: self
                .chunks
                .iter()
                .map(|&r| ChunkJson { rows: r as u64 })
                .collect(),
        };
        let path = self.out.path().join("schema.json");
        let mut text = serde_json::to_vec_pretty(&json)
            .map_err(|e| Error::new(ErrorClass::Io, e.to_string()))?;
        text.push(b'\n');
        std::fs::write(&path, text).map_err(|e| Error::from(e).with_file(&path))?;
        crate::cancel::check().map_err(|e| e.with_file(self.out.target()))?;
        self.out.commit(self.options.overwrite)?;
        Ok(WriteSummary {
            rows: self.rows,
            warnings: Vec::new(),
        })
    }
}

impl BatchWriter for Writer {
    fn write(&mut self, batch: &RecordBatch) -> Result<()> {
        Writer::write(self, batch)
    }
    fn finish(self: Box<Self>) -> Result<WriteSummary> {
        Writer::finish(*self)
    }
}
