//! One bare Filo vector file as a one-column table (the `filo-vector` format): its element type
//! comes from the caller, since the bytes do not hold it.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::{ArrayRef, RecordBatch, RecordBatchReader};
use arrow_schema::{ArrowError, Field, Schema, SchemaRef};

use super::decode::decode_buffer;
use super::encode::{encode, EncodeOptions};
use super::mapping::FiloType;
use crate::atomic::{AtomicFile, StreamOutput, SINK_NAME};
use crate::error::{Error, Result};
use crate::write::{BatchWriter, WriteSummary};

/// The name of the one column of a bare vector read as a table.
pub const VECTOR_COLUMN: &str = "value";

/// Reads one vector file as one record batch (column [`VECTOR_COLUMN`]), sliced to
/// `batch_size` rows and cut to `limit`.
pub struct VectorReader {
    schema: SchemaRef,
    array: ArrayRef,
    at: usize,
    end: usize,
    batch_size: usize,
}

impl VectorReader {
    /// Opens and decodes the vector file at `path`, whose elements are `filo_type` (the file does
    /// not say), to be read `batch_size` rows at a time, at most `limit` rows.
    pub fn open(
        path: impl AsRef<Path>,
        filo_type: FiloType,
        batch_size: usize,
        limit: Option<usize>,
    ) -> Result<VectorReader> {
        let path = path.as_ref();
        // Plain numeric vectors are sliced out of the mapped file without a copy.
        let (bytes, _) =
            crate::mapped::map_or_read(path).map_err(|e| Error::from(e).with_file(path))?;
        let data_type = filo_type.arrow_type();
        let array = decode_buffer(&bytes, &data_type).map_err(|e| e.with_file(path))?;
        let schema = Arc::new(Schema::new(vec![Field::new(
            VECTOR_COLUMN,
            data_type,
            true,
        )]));
        let end = limit.map_or(array.len(), |l| l.min(array.len()));
        Ok(VectorReader {
            schema,
            array,
            at: 0,
            end,
            batch_size: batch_size.max(1),
        })
    }
}

impl Iterator for VectorReader {
    type Item = std::result::Result<RecordBatch, ArrowError>;
    fn next(&mut self) -> Option<Self::Item> {
        if self.at >= self.end {
            return None;
        }
        let n = self.batch_size.min(self.end - self.at);
        let column = self.array.slice(self.at, n);
        self.at += n;
        Some(RecordBatch::try_new(self.schema.clone(), vec![column]))
    }
}

impl RecordBatchReader for VectorReader {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }
}

/// Writes the one column of its batches as one Filo vector file. The vector is encoded whole
/// at `finish`, so the column is held in memory until then.
pub struct VectorWriter {
    /// The target file, or [`SINK_NAME`] for a sink.
    path: PathBuf,
    /// The caller's sink, when the vector goes there instead of to `path`.
    sink: Option<StreamOutput>,
    schema: SchemaRef,
    filo_type: FiloType,
    options: EncodeOptions,
    parts: Vec<ArrayRef>,
    durable: bool,
}

impl VectorWriter {
    /// `filo_type` `None` takes the column's natural Filo type.
    pub fn try_new(
        path: impl AsRef<Path>,
        schema: SchemaRef,
        filo_type: Option<FiloType>,
        options: EncodeOptions,
    ) -> Result<VectorWriter> {
        VectorWriter::start(
            path.as_ref().to_path_buf(),
            None,
            schema,
            filo_type,
            options,
        )
    }

    /// Like [`VectorWriter::try_new`], but the vector goes into `sink` (a pipe, a socket, a
    /// buffer) at [`VectorWriter::finish`].
    pub fn try_new_to_sink(
        sink: impl std::io::Write + Send + 'static,
        schema: SchemaRef,
        filo_type: Option<FiloType>,
        options: EncodeOptions,
    ) -> Result<VectorWriter> {
        let sink = Some(StreamOutput::sink(sink));
        VectorWriter::start(PathBuf::from(SINK_NAME), sink, schema, filo_type, options)
    }

    fn start(
        path: PathBuf,
        sink: Option<StreamOutput>,
        schema: SchemaRef,
        filo_type: Option<FiloType>,
        options: EncodeOptions,
    ) -> Result<VectorWriter> {
        if schema.fields().len() != 1 {
            return Err(Error::invalid_argument(format!(
                "a Filo vector holds one column, the input has {}; choose one with the columns option",
                schema.fields().len()
            ))
            .with_setting("columns")
            .with_setting_kind(crate::options::SettingKind::Read)
            .with_file(&path));
        }
        let field = &schema.fields()[0];
        let filo_type = match filo_type {
            Some(t) => t,
            None => FiloType::for_write(field.data_type())
                .map_err(|e| e.with_column(0, Some(field.name())).with_file(&path))?,
        };
        Ok(VectorWriter {
            path,
            sink,
            schema,
            filo_type,
            options,
            parts: Vec::new(),
            durable: true,
        })
    }

    /// Whether `finish()` flushes the file to disk (fsync) before renaming it over the target
    /// (default `true`). Without, the rename still makes the file appear whole, but a crash soon
    /// after may lose it. No effect on a sink.
    pub fn with_durable(mut self, durable: bool) -> Self {
        self.durable = durable;
        self
    }

    /// Adds the batch's one column; the vector is encoded at [`VectorWriter::finish`].
    pub fn write(&mut self, batch: &RecordBatch) -> Result<()> {
        self.parts.push(batch.column(0).clone());
        Ok(())
    }

    /// Encodes the column as one vector and writes the file.
    pub fn finish(self) -> Result<WriteSummary> {
        let parts: Vec<&dyn arrow_array::Array> = self.parts.iter().map(|a| a.as_ref()).collect();
        let array = if parts.is_empty() {
            arrow_array::new_empty_array(self.schema.field(0).data_type())
        } else {
            arrow::compute::concat(&parts)?
        };
        let bytes = encode(array.as_ref(), self.filo_type, &self.options)
            .map_err(|e| e.with_file(&self.path))?;
        let mut out = match self.sink {
            Some(sink) => sink,
            None => {
                let mut file = AtomicFile::create(&self.path)?;
                file.set_durable(self.durable);
                StreamOutput::File(file)
            }
        };
        std::io::Write::write_all(&mut out, &bytes)
            .map_err(|e| Error::from(e).with_file(&self.path))?;
        out.commit()?;
        Ok(WriteSummary {
            rows: array.len() as u64,
            warnings: Vec::new(),
        })
    }
}

impl BatchWriter for VectorWriter {
    fn write(&mut self, batch: &RecordBatch) -> Result<()> {
        VectorWriter::write(self, batch)
    }
    fn finish(self: Box<Self>) -> Result<WriteSummary> {
        VectorWriter::finish(*self)
    }
}
