//! One bare Filo vector file as a one-column table (the `filo-vector` format): its element type
//! comes from the caller, since the bytes do not hold it.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::{ArrayRef, RecordBatch, RecordBatchReader};
use arrow_buffer::Buffer;
use arrow_schema::{ArrowError, Field, Schema, SchemaRef};

use super::decode::decode_buffer;
use super::encode::{encode, EncodeOptions};
use super::mapping::FiloType;
use super::writer::WriterOptions;
use crate::atomic::{AtomicFile, StreamOutput, SINK_NAME};
use crate::error::{Error, Result};
use crate::scan::{FragmentRange, ScanOptions};
use crate::source::{ByteSource, LocalFile};
use crate::write::{BatchWriter, WriteSummary};

/// The name of the one column of a bare vector read as a table.
pub const VECTOR_COLUMN: &str = "value";

/// Configures and opens a [`VectorReader`] of one bare Filo vector.
#[derive(Debug, Clone, Default)]
pub struct VectorReaderBuilder {
    scan: ScanOptions,
    filo_type: Option<FiloType>,
}

impl VectorReaderBuilder {
    /// A builder with every option at its default: at most 65,536 rows per batch
    /// ([`DEFAULT_BATCH_SIZE`](crate::DEFAULT_BATCH_SIZE)), every row; the element type must
    /// be given ([`VectorReaderBuilder::with_filo_type`]). A vector has one column and is read
    /// whole: a projection, a fragment other than the whole vector, or salvage is an error.
    pub fn new() -> Self {
        Self::default()
    }

    crate::scan::scan_setters!();

    /// The vector's element type (required: the bytes do not record it).
    pub fn with_filo_type(mut self, filo_type: FiloType) -> Self {
        self.filo_type = Some(filo_type);
        self
    }

    /// Opens and decodes the vector file at `path`. Plain numeric vectors are sliced out of
    /// the mapped file without a copy.
    pub fn build(self, path: impl AsRef<Path>) -> Result<VectorReader> {
        let path = path.as_ref();
        self.checked().map_err(|e| e.with_file(path))?;
        self.open_source(Arc::new(LocalFile::open(path)?))
    }

    /// Reads the vector whole from `source` (one request; a local file's bytes are its
    /// mapping) and decodes it: a bare vector in object storage.
    pub fn open_source(self, source: Arc<dyn ByteSource>) -> Result<VectorReader> {
        let location = source.location();
        let filo_type = self.checked().map_err(|e| e.with_file(location))?;
        let bytes = source.read_all().map_err(|e| e.with_file(location))?;
        self.decode(&bytes, filo_type)
            .map_err(|e| e.with_file(location))
    }

    /// A reader of a vector's bytes already in memory (shared, not copied, where they are
    /// aligned for their type).
    pub fn build_from_bytes(self, bytes: impl Into<Buffer>) -> Result<VectorReader> {
        let filo_type = self.checked()?;
        self.decode(&bytes.into(), filo_type)
    }

    /// The element type, once the scan is checked to be one a bare vector can serve.
    fn checked(&self) -> Result<FiloType> {
        let filo_type = self.filo_type.ok_or_else(|| {
            Error::invalid_argument(
                "a bare Filo vector does not say its element type; give it (the filo_type option)",
            )
            .with_setting("filo_type")
            .with_setting_kind(crate::error::SettingKind::Read)
        })?;
        if self.scan.projection.is_some() {
            return Err(Error::invalid_argument(
                "a bare Filo vector has one column; it takes no projection",
            ));
        }
        if let Some(range) = self.scan.range.filter(|r| *r != FragmentRange::Whole) {
            return Err(range.wrong_unit("bare Filo vector", "the whole vector"));
        }
        if self.scan.salvage {
            return Err(Error::invalid_argument(
                "a bare Filo vector is read whole or not at all; it cannot be salvaged",
            ));
        }
        Ok(filo_type)
    }

    fn decode(&self, bytes: &Buffer, filo_type: FiloType) -> Result<VectorReader> {
        let data_type = filo_type.arrow_type();
        let array = decode_buffer(bytes, &data_type)?;
        let schema = Arc::new(Schema::new(vec![Field::new(
            VECTOR_COLUMN,
            data_type,
            true,
        )]));
        let end = self.scan.limit.map_or(array.len(), |l| l.min(array.len()));
        Ok(VectorReader {
            schema,
            array,
            at: 0,
            end,
            batch_size: self.scan.batch_size_or(crate::DEFAULT_BATCH_SIZE),
        })
    }
}

/// Reads one vector file as record batches of its one column ([`VECTOR_COLUMN`]), made by a
/// [`VectorReaderBuilder`].
pub struct VectorReader {
    schema: SchemaRef,
    array: ArrayRef,
    at: usize,
    end: usize,
    batch_size: usize,
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
    encoding: EncodeOptions,
    parts: Vec<ArrayRef>,
    durable: bool,
}

impl VectorWriter {
    /// Starts writing the one column of `schema` as a vector file at `path`, with the element
    /// type, encoding hint and durability of `options` (see [`WriterOptions::vector_type`]).
    pub fn try_new(
        path: impl AsRef<Path>,
        schema: SchemaRef,
        options: WriterOptions,
    ) -> Result<VectorWriter> {
        VectorWriter::start(path.as_ref().to_path_buf(), None, schema, &options)
    }

    /// Like [`VectorWriter::try_new`], but the vector goes into `sink` (a pipe, a socket, a
    /// buffer) at [`VectorWriter::finish`].
    pub fn try_new_to_sink(
        sink: impl std::io::Write + Send + 'static,
        schema: SchemaRef,
        options: WriterOptions,
    ) -> Result<VectorWriter> {
        let sink = Some(StreamOutput::sink(sink));
        VectorWriter::start(PathBuf::from(SINK_NAME), sink, schema, &options)
    }

    fn start(
        path: PathBuf,
        sink: Option<StreamOutput>,
        schema: SchemaRef,
        options: &WriterOptions,
    ) -> Result<VectorWriter> {
        if schema.fields().len() != 1 {
            return Err(Error::invalid_argument(format!(
                "a Filo vector holds one column, the input has {}; choose one with the columns option",
                schema.fields().len()
            ))
            .with_setting("columns")
            .with_setting_kind(crate::error::SettingKind::Read)
            .with_file(&path));
        }
        let field = &schema.fields()[0];
        let filo_type = match options.vector_type(field.name()) {
            Some(t) => t,
            None => FiloType::for_write(field.data_type())
                .map_err(|e| e.with_column(0, Some(field.name())).with_file(&path))?,
        };
        Ok(VectorWriter {
            path,
            sink,
            encoding: options.encode_options(field.name()),
            schema,
            filo_type,
            parts: Vec::new(),
            durable: options.durable(),
        })
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
        let bytes = encode(array.as_ref(), self.filo_type, &self.encoding)
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
