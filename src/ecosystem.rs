//! The Arrow ecosystem's own formats (Parquet, Arrow IPC file and stream, CSV, NDJSON),
//! read and written through the arrow-rs crates so that every legacy format converts to them.

use std::path::Path;

use arrow_array::RecordBatchReader;
use arrow_schema::SchemaRef;

use crate::{BatchWriter, Error, Format, ReadOptions, Result, WriteOptions};

pub fn open(
    path: &Path,
    format: Format,
    _options: &ReadOptions,
) -> Result<Box<dyn RecordBatchReader + Send>> {
    Err(Error::unsupported(format!("reading {format} is not wired up yet")).with_file(path))
}

pub fn create(
    path: &Path,
    format: Format,
    _schema: SchemaRef,
    _options: &WriteOptions,
) -> Result<Box<dyn BatchWriter + Send>> {
    Err(Error::unsupported(format!("writing {format} is not wired up yet")).with_file(path))
}
