//! CSV with a header row, through `arrow::csv`. The schema is inferred from the first
//! [`INFER_SCHEMA_RECORDS`] records; a later value that does not fit the inferred type is an
//! error when it is read.

use std::fs::File;
use std::io::{self, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use arrow::csv::reader::Format as CsvFormat;
use arrow::csv::{ReaderBuilder, WriterBuilder};
use arrow_array::{RecordBatch, RecordBatchReader};
use arrow_schema::{ArrowError, Schema, SchemaRef};
use serde::Serialize;

use super::records::{Framing, TextInput};
use super::{Adapted, InFile, ProjectionPlan, INFER_SCHEMA_RECORDS};
use crate::atomic::{Destination, StreamOutput};
use crate::error::{Error, ErrorClass, Result};
use crate::format::Format;
use crate::options::WriteOptions;
use crate::scan::ScanOptions;
use crate::write::{BatchWriter, WriteSummary};

fn csv_format() -> CsvFormat {
    CsvFormat::default().with_header(true)
}

/// The input with its first records kept: the header and the records inference looks at.
fn start(input: Box<dyn Read + Send>, name: &Path) -> Result<TextInput> {
    TextInput::start(input, Framing::Csv, INFER_SCHEMA_RECORDS as u64 + 1, name)
}

/// The schema inferred from the first records, and how many records were looked at.
fn infer(input: &TextInput, name: &Path) -> Result<(Schema, usize)> {
    csv_format()
        .infer_schema(input.sample(), Some(INFER_SCHEMA_RECORDS))
        .in_file(name)
}

pub(crate) fn open(
    path: &Path,
    options: &ScanOptions,
) -> Result<Box<dyn RecordBatchReader + Send>> {
    read(Box::new(File::open(path).in_file(path)?), path, options)
}

/// Reads CSV front to back from `input` (a file or a stream), naming `path` in errors
/// (`<stdin>` for standard input).
pub(crate) fn read(
    input: Box<dyn Read + Send>,
    path: &Path,
    options: &ScanOptions,
) -> Result<Box<dyn RecordBatchReader + Send>> {
    let input = start(input, path)?;
    let (schema, _) = infer(&input, path)?;
    let schema = Arc::new(schema);
    let plan = ProjectionPlan::new(options, &schema, path)?;
    if schema.fields().is_empty() {
        // An empty file: no header, no columns, no rows.
        let order = plan.and_then(|p| p.order);
        return Ok(Box::new(Adapted::new(
            std::iter::empty(),
            schema,
            path,
            order,
            options,
        )?));
    }
    let mut builder = ReaderBuilder::new(schema)
        .with_format(csv_format())
        .with_batch_size(super::parsing_batch_size(options));
    let mut order = None;
    if let Some(plan) = plan {
        builder = builder.with_projection(plan.read);
        order = plan.order;
    }
    let reader = builder
        .build_buffered(BufReader::new(input.into_reader()))
        .in_file(path)?;
    let schema = reader.schema();
    Ok(Box::new(Adapted::new(
        reader, schema, path, order, options,
    )?))
}

/// Writes record batches into a new CSV file with a header row.
pub struct Writer {
    inner: arrow::csv::Writer<KeptIoError>,
    /// The last I/O error of the output, which arrow's CSV writer reports only as text.
    io_error: Arc<Mutex<Option<io::Error>>>,
    schema: SchemaRef,
    path: PathBuf,
    rows: u64,
    batches: u64,
}

impl Writer {
    /// Nested columns (lists, structs, maps) have no CSV form and are refused.
    pub fn try_new(path: &Path, schema: SchemaRef, options: &WriteOptions) -> Result<Writer> {
        Writer::start(Destination::FileOrStdout(path.into()), schema, options)
    }

    super::sink_constructor!();

    fn start(output: Destination, schema: SchemaRef, options: &WriteOptions) -> Result<Writer> {
        let path = output.name().to_path_buf();
        super::no_compression(Format::Csv, options, &path)?;
        if let Some((i, field)) = schema
            .fields()
            .iter()
            .enumerate()
            .find(|(_, f)| f.data_type().is_nested())
        {
            return Err(Error::new(
                ErrorClass::UnsupportedType,
                format!(
                    "CSV has no form for a {} column; leave it out, or write parquet, arrow or ndjson",
                    field.data_type()
                ),
            )
            .with_column(i, Some(field.name()))
            .with_file(&path));
        }
        let io_error = Arc::new(Mutex::new(None));
        let output = KeptIoError {
            output: output.open(options.durable)?,
            error: io_error.clone(),
        };
        Ok(Writer {
            inner: WriterBuilder::new().with_header(true).build(output),
            io_error,
            schema,
            path,
            rows: 0,
            batches: 0,
        })
    }
}

impl Writer {
    /// arrow's error, or the I/O error behind it, so that its kind tells a closed pipe
    /// (`EPIPE`, which ends a command quietly) or a full disk from bad data.
    fn error(&self, error: ArrowError) -> Error {
        let kept = self.io_error.lock().ok().and_then(|mut slot| slot.take());
        match kept {
            Some(io) => Error::from(io),
            None => Error::from(error),
        }
        .with_file(&self.path)
    }
}

/// The CSV writer's output, keeping the I/O errors it returns for [`Writer::error`].
struct KeptIoError {
    output: StreamOutput,
    error: Arc<Mutex<Option<io::Error>>>,
}

impl KeptIoError {
    fn keep(&self, error: io::Error) -> io::Error {
        let copy = io::Error::new(error.kind(), error.to_string());
        if let Ok(mut slot) = self.error.lock() {
            *slot = Some(error);
        }
        copy
    }
}

impl Write for KeptIoError {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.output.write(buf).map_err(|e| self.keep(e))
    }
    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        self.output.write_all(buf).map_err(|e| self.keep(e))
    }
    fn flush(&mut self) -> io::Result<()> {
        self.output.flush().map_err(|e| self.keep(e))
    }
}

impl BatchWriter for Writer {
    fn write(&mut self, batch: &RecordBatch) -> Result<()> {
        self.inner.write(batch).map_err(|e| self.error(e))?;
        self.rows += batch.num_rows() as u64;
        self.batches += 1;
        Ok(())
    }

    fn finish(mut self: Box<Self>) -> Result<WriteSummary> {
        if self.batches == 0 {
            // The header row is written with the first batch: an empty one writes just it.
            let empty = RecordBatch::new_empty(self.schema.clone());
            self.inner.write(&empty).map_err(|e| self.error(e))?;
        }
        let file = self.inner.into_inner().output;
        file.commit()?;
        Ok(WriteSummary {
            rows: self.rows,
            warnings: Vec::new(),
        })
    }
}

/// How a CSV file is read.
#[derive(Debug, Clone, Serialize)]
pub struct CsvInfo {
    /// Whether the first row is read as column names.
    pub header: bool,
    /// The field separator, as text.
    pub delimiter: String,
    /// Records looked at to infer the schema.
    pub records_inferred_from: usize,
    /// The most records inference looks at.
    pub inference_limit: usize,
}

/// Infers the schema of a CSV file as reading it does.
pub fn describe(path: &Path) -> Result<CsvInfo> {
    let input = start(Box::new(File::open(path).in_file(path)?), path)?;
    let (_, records) = infer(&input, path)?;
    Ok(CsvInfo {
        header: true,
        delimiter: ",".to_string(),
        records_inferred_from: records,
        inference_limit: INFER_SCHEMA_RECORDS,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::StringArray;
    use arrow_schema::{DataType, Field};

    /// A pipe whose reader went away.
    struct ClosedPipe;

    impl Write for ClosedPipe {
        fn write(&mut self, _: &[u8]) -> io::Result<usize> {
            Err(io::ErrorKind::BrokenPipe.into())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_closed_pipe_is_told_by_the_kind_of_the_error() {
        let schema = Arc::new(Schema::new(vec![Field::new("a", DataType::Utf8, false)]));
        let mut writer =
            Writer::try_new_to_sink(ClosedPipe, schema.clone(), &WriteOptions::default()).unwrap();
        let batch =
            RecordBatch::try_new(schema, vec![Arc::new(StringArray::from(vec!["x"]))]).unwrap();
        let error = writer.write(&batch).unwrap_err();
        assert_eq!(error.io_kind(), Some(io::ErrorKind::BrokenPipe), "{error}");
        assert_eq!(error.class(), ErrorClass::Io);
    }
}
