//! What every writer shares: the [`BatchWriter`] trait the dispatch drives and the
//! [`WriteSummary`] a finished write reports.

use arrow_array::RecordBatch;

use crate::error::Result;

/// What a finished write reports.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WriteSummary {
    /// Rows written.
    pub rows: u64,
    /// Things the writer did that the caller may want to know (a time zone dropped, a key not
    /// written, …). The data was written in spite of them.
    pub warnings: Vec<String>,
}

/// A writer of any format: batches in, a finished file out.
pub trait BatchWriter {
    /// Writes one batch; its schema must be the one the writer was created with.
    fn write(&mut self, batch: &RecordBatch) -> Result<()>;
    /// Completes the output. Until this returns `Ok`, no output exists at the target path.
    fn finish(self: Box<Self>) -> Result<WriteSummary>;
}
