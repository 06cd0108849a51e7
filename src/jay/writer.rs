//! Arrow → Jay. (Being written: see issue 2, section 4.)

use std::path::Path;

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;

use crate::sentinel::CollisionPolicy;
use crate::{BatchWriter, Error, Result, WriteSummary};

/// Options of the Jay [`Writer`].
#[derive(Debug, Clone, Default)]
pub struct WriterOptions {
    sentinel_collisions: CollisionPolicy,
}

impl WriterOptions {
    /// What to do with a valid value equal to the Jay sentinel of its type (default: error).
    pub fn with_sentinel_collisions(mut self, policy: CollisionPolicy) -> Self {
        self.sentinel_collisions = policy;
        self
    }
}

/// Writes record batches into a new Jay file.
pub struct Writer {
    _options: WriterOptions,
}

impl Writer {
    pub fn try_new(
        path: impl AsRef<Path>,
        _schema: SchemaRef,
        _options: WriterOptions,
    ) -> Result<Writer> {
        Err(Error::unsupported("the Jay writer is not written yet").with_file(path.as_ref()))
    }

    pub fn write(&mut self, _batch: &RecordBatch) -> Result<()> {
        Err(Error::unsupported("the Jay writer is not written yet"))
    }

    pub fn finish(self) -> Result<WriteSummary> {
        Err(Error::unsupported("the Jay writer is not written yet"))
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
