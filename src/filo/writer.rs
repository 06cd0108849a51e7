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

/// Options of the Filo set [`Writer`] and of the bare [`VectorWriter`](super::VectorWriter),
/// in the style of [`EncodeOptions`]: `Default`, a `with_…` setter and a getter per setting.
/// Each column is encoded with the [`EncodeOptions`] that [`WriterOptions::encode_options`]
/// gives for it. The chunk size and overwrite apply to sets, the vector type to a bare vector;
/// [`Writer::try_new`] refuses a chunk size out of range.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WriterOptions {
    chunk_size: usize,
    encoding: EncodeOptions,
    column_encodings: HashMap<String, EncodeOptions>,
    column_types: HashMap<String, FiloType>,
    vector_type: Option<FiloType>,
    overwrite: bool,
    durable: bool,
}

impl Default for WriterOptions {
    fn default() -> Self {
        WriterOptions {
            chunk_size: DEFAULT_CHUNK_SIZE,
            encoding: EncodeOptions::default(),
            column_encodings: HashMap::new(),
            column_types: HashMap::new(),
            vector_type: None,
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
    /// Rows per chunk.
    pub fn chunk_size(&self) -> usize {
        self.chunk_size
    }
    /// The encoding hint of every column without its own (default [`Hint::AutoDetect`]).
    pub fn with_hint(mut self, hint: Hint) -> Self {
        self.encoding = self.encoding.with_hint(hint);
        self
    }
    /// The encoding hint of the columns without their own.
    pub fn hint(&self) -> Hint {
        self.encoding.hint()
    }
    /// The encoding hint of one column, overriding [`WriterOptions::with_hint`] (default: none).
    pub fn with_column_hint(mut self, column: impl Into<String>, hint: Hint) -> Self {
        let options = EncodeOptions::default().with_hint(hint);
        self.column_encodings.insert(column.into(), options);
        self
    }
    /// How the column named `column` is encoded: its own hint, else every column's.
    pub fn encode_options(&self, column: &str) -> EncodeOptions {
        self.column_encodings
            .get(column)
            .copied()
            .unwrap_or(self.encoding)
    }
    /// Stores a column as this Filo type instead of its natural one (for example a
    /// fixed-offset Timestamp as DateTime; default: the natural type of its Arrow type).
    pub fn with_column_type(mut self, column: impl Into<String>, filo_type: FiloType) -> Self {
        self.column_types.insert(column.into(), filo_type);
        self
    }
    /// The Filo type asked for the column named `column`, `None` for its natural one.
    pub fn column_type(&self, column: &str) -> Option<FiloType> {
        self.column_types.get(column).copied()
    }
    /// The element type of a bare vector, which [`VectorWriter`](super::VectorWriter) writes
    /// its one column as (default: the column's own [`WriterOptions::with_column_type`], else
    /// the natural type of its Arrow type).
    pub fn with_vector_type(mut self, filo_type: FiloType) -> Self {
        self.vector_type = Some(filo_type);
        self
    }
    /// The element type asked for a bare vector whose one column is named `column`, `None`
    /// for its natural one.
    pub fn vector_type(&self, column: &str) -> Option<FiloType> {
        self.vector_type.or_else(|| self.column_type(column))
    }
    /// Replaces an existing set at the target (default: refuse).
    pub fn with_overwrite(mut self, overwrite: bool) -> Self {
        self.overwrite = overwrite;
        self
    }
    /// Whether an existing set at the target is replaced.
    pub fn overwrite(&self) -> bool {
        self.overwrite
    }
    /// Whether `finish()` flushes every file and directory of the set to disk (fsync) before
    /// renaming it into place (default `true`). Without, the rename still makes the set appear
    /// whole, but a crash soon after may lose it.
    pub fn with_durable(mut self, durable: bool) -> Self {
        self.durable = durable;
        self
    }
    /// Whether `finish()` flushes the set to disk before renaming it into place.
    pub fn durable(&self) -> bool {
        self.durable
    }
}

/// Writes record batches into a new Filo set directory.
pub struct Writer {
    out: AtomicDir,
    schema: SchemaRef,
    columns: Vec<(SetColumn, EncodeOptions)>,
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
            let filo_type = match options.column_type(f.name()) {
                Some(t) => t,
                None => FiloType::for_write(f.data_type()).map_err(located)?,
            };
            if filo_type == FiloType::Binary {
                return Err(located(Error::new(
                    ErrorClass::UnsupportedType,
                    "binary columns cannot go in a Filo set (filo has no binary vector)",
                )));
            }
            columns.push((
                SetColumn {
                    name: f.name().clone(),
                    filo_type,
                },
                options.encode_options(f.name()),
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
            let (column, encoding) = &columns[c];
            let located = |e: Error| e.with_column(c, Some(&column.name));
            let array = arrow::compute::concat(&parts).map_err(|e| located(e.into()))?;
            let bytes = encode(array.as_ref(), column.filo_type, encoding)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_column_is_encoded_with_its_own_options_else_the_sets() {
        let options = WriterOptions::default()
            .with_hint(Hint::SimpleEncoding)
            .with_column_hint("name", Hint::DictionaryEncoding)
            .with_column_type("at", FiloType::DateTime);
        assert_eq!(options.hint(), Hint::SimpleEncoding);
        assert_eq!(
            options.encode_options("name"),
            EncodeOptions::default().with_hint(Hint::DictionaryEncoding)
        );
        assert_eq!(options.encode_options("n").hint(), Hint::SimpleEncoding);
        assert_eq!(options.column_type("at"), Some(FiloType::DateTime));
        assert_eq!(options.column_type("n"), None);
        let default = WriterOptions::default();
        assert_eq!(default.chunk_size(), DEFAULT_CHUNK_SIZE);
        assert_eq!(default.hint(), Hint::AutoDetect);
        assert!(default.durable() && !default.overwrite());
    }
}
