//! CSV with a header row, through `arrow::csv`. The schema is inferred from the first
//! [`INFER_SCHEMA_RECORDS`] records; a later value that does not fit the inferred type is an
//! error when it is read.

use std::fs::File;
use std::io::{BufReader, Seek};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow::csv::reader::Format as CsvFormat;
use arrow::csv::{ReaderBuilder, WriterBuilder};
use arrow_array::{RecordBatch, RecordBatchReader};
use arrow_schema::{Schema, SchemaRef};
use serde::Serialize;

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

/// The schema inferred from the first records, and how many records were looked at.
fn infer(reader: &mut BufReader<File>, path: &Path) -> Result<(Schema, usize)> {
    let inferred = csv_format()
        .infer_schema(&mut *reader, Some(INFER_SCHEMA_RECORDS))
        .in_file(path)?;
    reader.rewind().in_file(path)?;
    Ok(inferred)
}

pub(crate) fn open(
    path: &Path,
    options: &ScanOptions,
) -> Result<Box<dyn RecordBatchReader + Send>> {
    let mut reader = BufReader::new(File::open(path).in_file(path)?);
    let (schema, _) = infer(&mut reader, path)?;
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
    let reader = builder.build_buffered(reader).in_file(path)?;
    let schema = reader.schema();
    Ok(Box::new(Adapted::new(
        reader, schema, path, order, options,
    )?))
}

/// Writes record batches into a new CSV file with a header row.
pub struct Writer {
    inner: arrow::csv::Writer<StreamOutput>,
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
        Ok(Writer {
            inner: WriterBuilder::new()
                .with_header(true)
                .build(output.open(options.durable)?),
            schema,
            path,
            rows: 0,
            batches: 0,
        })
    }
}

impl BatchWriter for Writer {
    fn write(&mut self, batch: &RecordBatch) -> Result<()> {
        self.inner.write(batch).in_file(&self.path)?;
        self.rows += batch.num_rows() as u64;
        self.batches += 1;
        Ok(())
    }

    fn finish(mut self: Box<Self>) -> Result<WriteSummary> {
        if self.batches == 0 {
            // The header row is written with the first batch: an empty one writes just it.
            let empty = RecordBatch::new_empty(self.schema.clone());
            self.inner.write(&empty).in_file(&self.path)?;
        }
        let file = self.inner.into_inner();
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
    let mut reader = BufReader::new(File::open(path).in_file(path)?);
    let (_, records) = infer(&mut reader, path)?;
    Ok(CsvInfo {
        header: true,
        delimiter: ",".to_string(),
        records_inferred_from: records,
        inference_limit: INFER_SCHEMA_RECORDS,
    })
}
