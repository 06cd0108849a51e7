//! Jay → Arrow. (Being written.)

use std::path::Path;
use std::sync::Arc;

use arrow_array::{RecordBatch, RecordBatchReader};
use arrow_schema::{ArrowError, Schema, SchemaRef};

use super::meta::FrameInfo;
use crate::{Error, Projection, Result, DEFAULT_BATCH_SIZE};

/// An opened, verified Jay file.
pub struct JayFile {
    info: FrameInfo,
}

impl JayFile {
    pub fn open(path: impl AsRef<Path>) -> Result<JayFile> {
        let path = path.as_ref();
        let bytes = std::fs::read(path).map_err(|e| Error::from(e).with_file(path))?;
        let info = super::meta::parse(&bytes).map_err(|e| e.with_file(path))?;
        Ok(JayFile { info })
    }

    pub fn info(&self) -> &FrameInfo {
        &self.info
    }
}

/// Builds a Jay [`Reader`].
#[derive(Debug, Clone)]
pub struct ReaderBuilder {
    batch_size: usize,
    projection: Option<Projection>,
    limit: Option<usize>,
}

impl Default for ReaderBuilder {
    fn default() -> Self {
        ReaderBuilder {
            batch_size: DEFAULT_BATCH_SIZE,
            projection: None,
            limit: None,
        }
    }
}

impl ReaderBuilder {
    pub fn new() -> Self {
        Self::default()
    }
    pub fn with_batch_size(mut self, batch_size: usize) -> Self {
        self.batch_size = batch_size.max(1);
        self
    }
    pub fn with_projection(mut self, projection: impl Into<Projection>) -> Self {
        self.projection = Some(projection.into());
        self
    }
    pub fn with_limit(mut self, limit: usize) -> Self {
        self.limit = Some(limit);
        self
    }
    pub fn build(self, path: impl AsRef<Path>) -> Result<Reader> {
        let _file = JayFile::open(path)?;
        Ok(Reader {
            schema: Arc::new(Schema::empty()),
        })
    }
}

/// Record batches of a Jay file.
pub struct Reader {
    schema: SchemaRef,
}

impl Iterator for Reader {
    type Item = Result<RecordBatch, ArrowError>;
    fn next(&mut self) -> Option<Self::Item> {
        None
    }
}

impl RecordBatchReader for Reader {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }
}
