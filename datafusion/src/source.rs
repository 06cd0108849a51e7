//! [`ArrowsmithSource`]: the one DataFusion [`FileSource`] of every arrowsmith format, keyed by
//! [`arrowsmith::Format`], and its opener, which hands each file of a scan to the core reader
//! with the scan's projection, limit and batch size.
//!
//! A "file" here may be a directory (a bcolz table, a Filo set): the opener gives the core reader
//! a local path, whatever it names. Only the local file system is read, since the core readers
//! map or open paths; a table on another object store is refused when the scan is planned.
//!
//! Decoding happens as DataFusion polls the stream, on its threads, as for its own formats;
//! opening (which reads and verifies a file's metadata) runs on tokio's blocking pool, once per
//! file: the plan's entries of one file carry its one opened [`Input`] (see [`crate::inputs`]).

use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;

use arrow::array::{RecordBatch, RecordBatchOptions};
use arrow_schema::{Schema, SchemaRef};
use arrowsmith::{Format, Fragment, Input, DEFAULT_TARGET_ROWS};
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::datasource::listing::PartitionedFile;
use datafusion::datasource::physical_plan::{
    FileGroup, FileOpenFuture, FileOpener, FileScanConfig, FileSource,
};
use datafusion::datasource::projection::{ProjectionOpener, SplitProjection};
use datafusion::datasource::table_schema::TableSchema;
use datafusion::error::{DataFusionError, Result};
use datafusion::physical_expr::projection::ProjectionExprs;
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_expr_common::sort_expr::LexOrdering;
use datafusion::physical_plan::metrics::ExecutionPlanMetricsSet;
use datafusion::physical_plan::DisplayFormatType;
use futures::{FutureExt, StreamExt};
use object_store::ObjectStore;

use crate::inputs::{self, InputCache};
use crate::options::{ArrowsmithOptions, Scan};

/// The scan of files of one arrowsmith format.
#[derive(Clone)]
pub struct ArrowsmithSource {
    format: Format,
    options: Arc<ArrowsmithOptions>,
    table_schema: TableSchema,
    projection: SplitProjection,
    batch_size: Option<usize>,
    metrics: ExecutionPlanMetricsSet,
}

impl ArrowsmithSource {
    /// A source reading files of `format` with `options`, whose data has `table_schema`.
    pub fn new(
        format: Format,
        options: Arc<ArrowsmithOptions>,
        table_schema: impl Into<TableSchema>,
    ) -> Self {
        let table_schema = table_schema.into();
        ArrowsmithSource {
            format,
            options,
            projection: SplitProjection::unprojected(&table_schema),
            table_schema,
            batch_size: None,
            metrics: ExecutionPlanMetricsSet::new(),
        }
    }

    /// The format this source reads.
    pub fn format(&self) -> Format {
        self.format
    }
}

impl FileSource for ArrowsmithSource {
    fn create_file_opener(
        &self,
        _object_store: Arc<dyn ObjectStore>,
        base_config: &FileScanConfig,
        _partition: usize,
    ) -> Result<Arc<dyn FileOpener>> {
        if base_config.object_store_url.as_str() != "file:///" {
            return Err(DataFusionError::NotImplemented(format!(
                "arrowsmith reads {} tables from the local file system only, not from {}",
                self.format,
                base_config.object_store_url.as_str()
            )));
        }
        let opener = Arc::new(ArrowsmithOpener {
            format: self.format,
            file_schema: Arc::clone(self.table_schema.file_schema()),
            options: Arc::clone(&self.options),
            scan: Scan {
                batch_size: self.batch_size.or(base_config.batch_size),
                projection: Some(self.projection.file_indices.clone()),
                limit: base_config.limit,
            },
        });
        ProjectionOpener::try_new(
            self.projection.clone(),
            opener,
            self.table_schema.file_schema(),
        )
    }

    fn table_schema(&self) -> &TableSchema {
        &self.table_schema
    }

    fn with_batch_size(&self, batch_size: usize) -> Arc<dyn FileSource> {
        Arc::new(ArrowsmithSource {
            batch_size: Some(batch_size),
            ..self.clone()
        })
    }

    fn metrics(&self) -> &ExecutionPlanMetricsSet {
        &self.metrics
    }

    fn file_type(&self) -> &str {
        self.format.name()
    }

    fn fmt_extra(&self, _t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, ", reader=arrowsmith")
    }

    fn supports_repartitioning(&self) -> bool {
        false
    }

    /// Byte ranges mean nothing to the core readers: a DataSeries extent or a bcolz chunk
    /// starts where the file's own index says, not at a byte DataFusion picks. The scan's
    /// partitions are the files (and, per file, the core's fragments) that the table planned.
    fn repartitioned(
        &self,
        _target_partitions: usize,
        _repartition_file_min_size: usize,
        _output_ordering: Option<LexOrdering>,
        _config: &FileScanConfig,
    ) -> Result<Option<FileScanConfig>> {
        Ok(None)
    }

    fn try_pushdown_projection(
        &self,
        projection: &ProjectionExprs,
    ) -> Result<Option<Arc<dyn FileSource>>> {
        let mut source = self.clone();
        source.projection = SplitProjection::new(
            self.table_schema.file_schema(),
            &self.projection.source.try_merge(projection)?,
        );
        Ok(Some(Arc::new(source)))
    }

    fn projection(&self) -> Option<&ProjectionExprs> {
        Some(&self.projection.source)
    }

    fn apply_expressions(
        &self,
        f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> Result<TreeNodeRecursion>,
    ) -> Result<TreeNodeRecursion> {
        datafusion::physical_plan::apply_expression_roots(self.projection.source.iter(), f)
    }
}

/// The core fragment a scan entry reads, and its file's opened input, shared by every entry
/// of that file; an entry without one reads its whole file.
#[derive(Debug, Clone)]
pub(crate) struct FragmentOf {
    pub input: Input,
    pub fragment: Fragment,
}

/// Splits the files of a scan into the core's fragments and deals them into at most
/// `partitions` groups, so that one big file is read by all partitions at once. Fragments are
/// about `rows / partitions` rows (no more than the core's default), when the files' row counts
/// are known; the core never cuts a format's natural unit (an extent, a chunk), so a file has
/// at most as many fragments as it has units. Blocks: opens each file (or takes its input
/// from `inputs`) and reads its structure.
pub(crate) fn fragment_groups(
    files: Vec<PartitionedFile>,
    format: Format,
    options: &ArrowsmithOptions,
    inputs: &InputCache,
    partitions: usize,
) -> Result<Vec<FileGroup>> {
    let partitions = partitions.max(1);
    let known_rows: Option<usize> = files
        .iter()
        .map(|f| {
            f.statistics
                .as_ref()
                .and_then(|s| s.num_rows.get_value().copied())
        })
        .sum();
    let target_rows = match known_rows {
        Some(rows) => rows.div_ceil(partitions).clamp(1, DEFAULT_TARGET_ROWS),
        None => DEFAULT_TARGET_ROWS,
    };
    let mut pieces = Vec::new();
    for file in files {
        let path = local_path(&file)?;
        let input = inputs.input(&path, format, options).map_err(core_error)?;
        for fragment in input.fragments(target_rows).map_err(core_error)? {
            // The file's statistics describe the file, not the piece: the scan keeps the
            // table's totals.
            let mut piece = file.clone();
            piece.statistics = None;
            let input = input.clone();
            pieces.push(piece.with_extension(FragmentOf { input, fragment }));
        }
    }
    let count = partitions.min(pieces.len()).max(1);
    // Contiguous runs, not round robin: a partition reads neighbouring fragments in order.
    let per_group = pieces.len().div_ceil(count).max(1);
    let mut groups: Vec<FileGroup> = Vec::with_capacity(count);
    let mut pieces = pieces.into_iter().peekable();
    while pieces.peek().is_some() {
        groups.push(FileGroup::new(pieces.by_ref().take(per_group).collect()));
    }
    if groups.is_empty() {
        groups.push(FileGroup::new(Vec::new()));
    }
    Ok(groups)
}

/// Where a scanned file is on the local file system: the path a table put in the file's
/// extensions, else the object store location of a listed file.
#[derive(Debug, Clone)]
pub(crate) struct LocalPath(pub PathBuf);

pub(crate) fn local_path(file: &PartitionedFile) -> Result<PathBuf> {
    if let Some(LocalPath(path)) = file.extension::<LocalPath>() {
        return Ok(path.clone());
    }
    let local = object_store::local::LocalFileSystem::new();
    local
        .path_to_filesystem(&file.object_meta.location)
        .map_err(|e| DataFusionError::ObjectStore(Box::new(e)))
}

struct ArrowsmithOpener {
    format: Format,
    file_schema: SchemaRef,
    options: Arc<ArrowsmithOptions>,
    scan: Scan,
}

impl FileOpener for ArrowsmithOpener {
    fn open(&self, file: PartitionedFile) -> Result<FileOpenFuture> {
        let path = local_path(&file)?;
        let format = self.format;
        let options = Arc::clone(&self.options);
        let mut scan = self.scan.clone();
        // No columns wanted (count(*) without statistics): read the narrowest thing there is,
        // the first column, and keep only the row counts.
        let rows_only = scan.projection.as_ref().is_some_and(|p| p.is_empty());
        if rows_only {
            // A file without columns (a Jay frame can have rows and none) is read whole.
            scan.projection = (!self.file_schema.fields().is_empty()).then(|| vec![0]);
        }
        let piece = file.extension::<FragmentOf>().cloned();
        let scan = options.read_options(format, &scan).scan;
        Ok(async move {
            let reader = tokio::task::spawn_blocking(move || match &piece {
                Some(piece) => piece.input.fragment_reader(&piece.fragment, &scan),
                None => inputs::open(&path, format, &options)?.reader(&scan),
            })
            .await
            .map_err(|e| DataFusionError::ExecutionJoin(Box::new(e)))?
            .map_err(core_error)?;
            let empty = Arc::new(Schema::empty());
            let stream = futures::stream::iter(reader).map(move |batch| {
                let batch = batch?;
                if rows_only {
                    let options = RecordBatchOptions::new().with_row_count(Some(batch.num_rows()));
                    Ok(RecordBatch::try_new_with_options(
                        Arc::clone(&empty),
                        vec![],
                        &options,
                    )?)
                } else {
                    Ok(batch)
                }
            });
            Ok(stream.boxed())
        }
        .boxed())
    }
}

/// An arrowsmith error as a DataFusion error that displays it whole (file, offset, what was
/// wrong) and keeps it reachable through `std::error::Error::source`.
pub(crate) fn core_error(e: arrowsmith::Error) -> DataFusionError {
    DataFusionError::External(Box::new(e))
}
