//! [`ArrowsmithSink`]: `COPY … TO` (and `DataFrame` writes) through the core writers.
//!
//! A sink writes one output, file or directory, at the path `COPY` names, whatever the query's
//! partitioning: the core writers build one dataset from a stream of batches, and their
//! `finish` is all-or-nothing. Until the last batch is written and `finish` returns, nothing is
//! at the target path; a failed query, a failed write or a dropped stream leaves what was there
//! before (the writer's temporary output is removed when it is dropped unfinished).
//!
//! A target on an object store (`COPY … TO 's3://bucket/out.jay'`) is handed to the core as the
//! URL the statement gave; the core writes it through the process's registered storage (a
//! multipart upload that completes only at `finish`), and without one fails before writing.
//!
//! The writer runs on tokio's blocking pool, fed through a channel of two batches, so the
//! query keeps computing while the previous batch is encoded and written.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow::array::RecordBatch;
use arrow_schema::SchemaRef;
use arrowsmith::{Format, WriteSummary};
use async_trait::async_trait;
use datafusion::datasource::physical_plan::FileSinkConfig;
use datafusion::datasource::sink::DataSink;
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::object_store::ObjectStoreUrl;
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::logical_expr::dml::InsertOp;
use datafusion::physical_plan::{DisplayAs, DisplayFormatType};
use futures::StreamExt;

use crate::options::ArrowsmithOptions;
use crate::source::core_error;

/// Writes a query's result as one arrowsmith dataset.
pub struct ArrowsmithSink {
    format: Format,
    options: Arc<ArrowsmithOptions>,
    path: PathBuf,
    schema: SchemaRef,
}

enum Message {
    Batch(RecordBatch),
    /// The input ended well: finish the output. Without it, the writer is dropped unfinished.
    End,
}

impl ArrowsmithSink {
    /// A sink writing batches of `schema` to `path` (a local path or a URL) as `format`.
    pub fn new(
        format: Format,
        options: Arc<ArrowsmithOptions>,
        path: impl Into<PathBuf>,
        schema: SchemaRef,
    ) -> Self {
        ArrowsmithSink {
            format,
            options,
            path: path.into(),
            schema,
        }
    }

    pub(crate) fn for_copy(
        format: Format,
        options: Arc<ArrowsmithOptions>,
        conf: &FileSinkConfig,
    ) -> Result<Self> {
        if !conf.table_partition_cols.is_empty() {
            return Err(DataFusionError::NotImplemented(format!(
                "COPY … PARTITIONED BY into {format}: arrowsmith writes one {format} output"
            )));
        }
        // COPY comes with no files; INSERT INTO a listing table comes with the table's files,
        // which one all-or-nothing writer at the table's path would replace, not append to.
        if !conf.file_group.is_empty() || conf.insert_op != InsertOp::Append {
            return Err(DataFusionError::NotImplemented(format!(
                "INSERT into a {format} table: arrowsmith writes whole new outputs; \
                 use COPY (…) TO a new path"
            )));
        }
        let url = conf.original_url.as_str();
        let path = if conf.object_store_url == ObjectStoreUrl::local_filesystem() {
            url.strip_prefix("file://").unwrap_or(url)
        } else {
            url
        };
        Ok(Self::new(
            format,
            options,
            path,
            Arc::clone(conf.output_schema()),
        ))
    }

    /// The output path (or URL).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Writes every batch of `data`, then finishes the output; returns what the writer reported.
    pub async fn write_stream(&self, mut data: SendableRecordBatchStream) -> Result<WriteSummary> {
        let (sender, mut receiver) = tokio::sync::mpsc::channel::<Message>(2);
        let format = self.format;
        let options = Arc::clone(&self.options);
        let path = self.path.clone();
        let schema = data.schema();
        let writer =
            tokio::task::spawn_blocking(move || -> arrowsmith::Result<Option<WriteSummary>> {
                let mut writer = options
                    .create(&path, format, schema)
                    .map_err(|e| e.with_file(&path))?;
                while let Some(message) = receiver.blocking_recv() {
                    match message {
                        Message::Batch(batch) => {
                            writer.write(&batch).map_err(|e| e.with_file(&path))?
                        }
                        Message::End => {
                            return writer.finish().map(Some).map_err(|e| e.with_file(&path))
                        }
                    }
                }
                // The query failed or was dropped: the unfinished writer goes, and its output with it.
                Ok(None)
            });
        let mut failure = None;
        while let Some(batch) = data.next().await {
            match batch {
                Ok(batch) => {
                    if sender.send(Message::Batch(batch)).await.is_err() {
                        break; // The writer stopped; its error is reported below.
                    }
                }
                Err(e) => {
                    failure = Some(e);
                    break;
                }
            }
        }
        if failure.is_none() {
            let _ = sender.send(Message::End).await;
        }
        drop(sender);
        let written = writer
            .await
            .map_err(|e| DataFusionError::ExecutionJoin(Box::new(e)))?
            .map_err(core_error)?;
        if let Some(e) = failure {
            return Err(e);
        }
        written.ok_or_else(|| {
            DataFusionError::Execution(format!(
                "{}: the writer stopped before the end of the data; nothing was written",
                self.path.display()
            ))
        })
    }
}

impl fmt::Debug for ArrowsmithSink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ArrowsmithSink")
            .field("format", &self.format)
            .field("path", &self.path)
            .finish()
    }
}

impl DisplayAs for ArrowsmithSink {
    fn fmt_as(&self, t: DisplayFormatType, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match t {
            DisplayFormatType::Default | DisplayFormatType::Verbose => write!(
                f,
                "ArrowsmithSink(format={}, path={})",
                self.format,
                self.path.display()
            ),
            DisplayFormatType::TreeRender => {
                writeln!(f, "format: {}", self.format)?;
                write!(f, "path={}", self.path.display())
            }
        }
    }
}

#[async_trait]
impl DataSink for ArrowsmithSink {
    fn schema(&self) -> &SchemaRef {
        &self.schema
    }

    async fn write_all(
        &self,
        data: SendableRecordBatchStream,
        _context: &Arc<TaskContext>,
    ) -> Result<u64> {
        Ok(self.write_stream(data).await?.rows)
    }
}
