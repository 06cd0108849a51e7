//! What every writer shares: the [`BatchWriter`] trait the dispatch drives and the
//! [`WriteSummary`] a finished write reports.

use arrow_array::RecordBatch;
use arrow_schema::DataType;

use crate::error::{Error, Result};

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
///
/// Every writer also implements arrow's [`RecordBatchWriter`](arrow_array::RecordBatchWriter),
/// whose `close` is this `finish` without the summary, and whose errors are ours inside
/// `ArrowError::ExternalError` (see [`Error::from_arrow`](crate::Error::from_arrow)).
pub trait BatchWriter {
    /// Writes one batch; its schema must be the one the writer was created with.
    fn write(&mut self, batch: &RecordBatch) -> Result<()>;
    /// Completes the output. Until this returns `Ok`, no output exists at the target path.
    fn finish(self: Box<Self>) -> Result<WriteSummary>;
}

/// Checks that `batch` has the columns a writer was made for: their number and types.
pub(crate) fn check_batch(batch: &RecordBatch, types: &[DataType]) -> Result<()> {
    if batch.num_columns() != types.len() {
        return Err(Error::invalid_argument(format!(
            "the batch has {} columns, the writer {}",
            batch.num_columns(),
            types.len()
        )));
    }
    for (i, (array, want)) in batch.columns().iter().zip(types).enumerate() {
        if array.data_type() != want {
            return Err(Error::invalid_argument(format!(
                "the batch's column {i} is {}, but the writer was made for {want}",
                array.data_type()
            )));
        }
    }
    Ok(())
}

/// Implements arrow's [`RecordBatchWriter`](arrow_array::RecordBatchWriter) for writers that
/// implement [`BatchWriter`]. Each format's module root names its own writers with it, so that
/// the formats depend on this module and not the other way round.
macro_rules! record_batch_writer {
    ($($writer:ty),* $(,)?) => {
        $(
            impl arrow_array::RecordBatchWriter for $writer {
                fn write(
                    &mut self,
                    batch: &arrow_array::RecordBatch,
                ) -> std::result::Result<(), arrow_schema::ArrowError> {
                    $crate::write::BatchWriter::write(self, batch)
                        .map_err(arrow_schema::ArrowError::from)
                }

                fn close(self) -> std::result::Result<(), arrow_schema::ArrowError> {
                    $crate::write::BatchWriter::finish(Box::new(self))
                        .map(drop)
                        .map_err(arrow_schema::ArrowError::from)
                }
            }
        )*
    };
}
pub(crate) use record_batch_writer;
