//! Writing a Filo set: the writer buffers one chunk of rows at most, encodes its columns in
//! parallel, and renames the finished directory into place.

use std::collections::HashMap;
use std::path::Path;

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
use rayon::prelude::*;

use super::decode::MAX_EMPTY_LEN;
use super::encode::{encode, EncodeOptions, Hint};
use super::mapping::FiloType;
use super::set::{chunk_dir, schema_json, SetColumn, DATASET, DEFAULT_CHUNK_SIZE};
use crate::atomic::{check_target, refuse_stream, AtomicDir, Existing, Replaceable};
use crate::error::{Error, ErrorClass, Result};
use crate::write::{BatchWriter, WriteSummary};

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
        let text = schema_json(self.columns.iter().map(|(c, _)| c), &self.chunks)?;
        let path = self.out.path().join("schema.json");
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
