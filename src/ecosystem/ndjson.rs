//! Newline-delimited JSON: one object per line, through `arrow::json`. The schema is inferred
//! from the first [`INFER_SCHEMA_RECORDS`] records. Without a projection the reader is strict:
//! a key that inference did not see is an error rather than silently dropped.

use std::fs::File;
use std::io::{BufReader, Read};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow::json::reader::infer_json_schema;
use arrow::json::writer::LineDelimited;
use arrow::json::{ReaderBuilder, WriterBuilder};
use arrow_array::{RecordBatch, RecordBatchReader};
use arrow_schema::{Schema, SchemaRef};
use serde::Serialize;

use super::records::{Framing, TextInput};
use super::{Adapted, InFile, ProjectionPlan, INFER_SCHEMA_RECORDS};
use crate::atomic::{Destination, StreamOutput};
use crate::error::Result;
use crate::format::Format;
use crate::options::WriteOptions;
use crate::scan::ScanOptions;
use crate::write::{BatchWriter, WriteSummary};

/// The input with the lines inference looks at kept.
fn start(input: Box<dyn Read + Send>, name: &Path) -> Result<TextInput> {
    TextInput::start(input, Framing::Ndjson, INFER_SCHEMA_RECORDS as u64, name)
}

fn infer(input: &TextInput, name: &Path) -> Result<(Schema, usize)> {
    infer_json_schema(input.sample(), Some(INFER_SCHEMA_RECORDS)).in_file(name)
}

pub(crate) fn open(
    path: &Path,
    options: &ScanOptions,
) -> Result<Box<dyn RecordBatchReader + Send>> {
    read(Box::new(File::open(path).in_file(path)?), path, options)
}

/// Reads NDJSON front to back from `input` (a file or a stream), naming `path` in errors
/// (`<stdin>` for standard input).
pub(crate) fn read(
    input: Box<dyn Read + Send>,
    path: &Path,
    options: &ScanOptions,
) -> Result<Box<dyn RecordBatchReader + Send>> {
    let input = start(input, path)?;
    let (schema, _) = infer(&input, path)?;
    let plan = ProjectionPlan::new(options, &schema, path)?;
    let (schema, order, strict) = match plan {
        Some(plan) => (
            Arc::new(schema.project(&plan.read).in_file(path)?),
            plan.order,
            false,
        ),
        None => (Arc::new(schema), None, true),
    };
    let reader = ReaderBuilder::new(schema.clone())
        .with_batch_size(super::parsing_batch_size(options))
        .with_strict_mode(strict)
        .build(BufReader::new(input.into_reader()))
        .in_file(path)?;
    Ok(Box::new(Adapted::new(
        reader, schema, path, order, options,
    )?))
}

/// Writes record batches into a new NDJSON file, nulls written as `null`.
pub struct Writer {
    inner: arrow::json::Writer<StreamOutput, LineDelimited>,
    path: PathBuf,
    rows: u64,
}

impl Writer {
    /// Starts writing NDJSON at `path` (`-`: standard output); NDJSON has no schema header, so
    /// `schema` is unused.
    /// `options` must not ask for compression.
    pub fn try_new(path: &Path, schema: SchemaRef, options: &WriteOptions) -> Result<Writer> {
        Writer::start(Destination::FileOrStdout(path.into()), schema, options)
    }

    super::sink_constructor!();

    fn start(output: Destination, _schema: SchemaRef, options: &WriteOptions) -> Result<Writer> {
        let path = output.name().to_path_buf();
        super::no_compression(Format::Ndjson, options, &path)?;
        Ok(Writer {
            // Explicit nulls keep a column that is null in every row.
            inner: WriterBuilder::new()
                .with_explicit_nulls(true)
                .build(output.open(options.durable)?),
            path,
            rows: 0,
        })
    }
}

impl BatchWriter for Writer {
    fn write(&mut self, batch: &RecordBatch) -> Result<()> {
        self.inner.write(batch).in_file(&self.path)?;
        self.rows += batch.num_rows() as u64;
        Ok(())
    }

    fn finish(mut self: Box<Self>) -> Result<WriteSummary> {
        self.inner.finish().in_file(&self.path)?;
        let file = self.inner.into_inner();
        file.commit()?;
        Ok(WriteSummary {
            rows: self.rows,
            warnings: Vec::new(),
        })
    }
}

/// How an NDJSON file is read.
#[derive(Debug, Clone, Serialize)]
pub struct NdjsonInfo {
    /// Records looked at to infer the schema.
    pub records_inferred_from: usize,
    /// The most records inference looks at.
    pub inference_limit: usize,
}

/// Infers the schema of an NDJSON file as reading it does.
pub fn describe(path: &Path) -> Result<NdjsonInfo> {
    let input = start(Box::new(File::open(path).in_file(path)?), path)?;
    let (_, records) = infer(&input, path)?;
    Ok(NdjsonInfo {
        records_inferred_from: records,
        inference_limit: INFER_SCHEMA_RECORDS,
    })
}
