//! [`ArrowsmithSource`]: the one DataFusion [`FileSource`] of every arrowsmith format, keyed by
//! [`arrowsmith::Format`], and its opener, which hands each file of a scan to the core reader
//! with the scan's projection, limit and batch size.
//!
//! A "file" here may be a directory (a bcolz table, a Filo set): the opener gives the core reader
//! a local path, whatever it names. A file on another object store (`s3://bucket/`, …) is
//! handed to the core as its URL, the store's URL followed by the object's path, which the core
//! reads through the process's registered [`Storage`](arrowsmith::source::Storage); without
//! one, the scan fails with the core's error saying so.
//!
//! The core readers block (on a memory map's page faults, on a remote object's requests), so
//! none runs inside DataFusion's polls: opening (which reads and verifies a file's metadata)
//! runs on tokio's blocking pool, once per file (the plan's entries of one file carry its one
//! opened [`Input`], see [`crate::inputs`]), and each scan entry's reader runs there too,
//! feeding a channel of [`READ_AHEAD`] batches that the stream polls. Dropping the stream (a
//! satisfied `LIMIT`, a cancelled query) closes the channel, and the reader stops at its next
//! batch.
//!
//! The core readers decode on the rayon pool. With a pool of one thread (`RAYON_NUM_THREADS=1`),
//! every partition's reader would queue behind that one thread, and a scan would not go faster
//! with more partitions; there, each entry's reader runs on a one-thread pool of its own (see
//! [`ReaderPool`]): one decode thread per reader, as one process per reader would have.

use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::SystemTime;

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
use datafusion::execution::object_store::ObjectStoreUrl;
use datafusion::physical_expr::projection::ProjectionExprs;
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_expr_common::sort_expr::LexOrdering;
use datafusion::physical_plan::metrics::ExecutionPlanMetricsSet;
use datafusion::physical_plan::DisplayFormatType;
use futures::{FutureExt, StreamExt};
use object_store::{ObjectMeta, ObjectStore};

use crate::inputs::{self, InputCache, Stamp};
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
        let opener = Arc::new(ArrowsmithOpener {
            format: self.format,
            store: base_config.object_store_url.clone(),
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
    store: &ObjectStoreUrl,
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
        let location = file_location(&file, store)?;
        let input = inputs
            .input(&location, file_stamp(&file).as_ref(), format, options)
            .map_err(core_error)?;
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

/// The dataset an [`crate::ArrowsmithTable`] put in a scan entry's extensions: a local path
/// or a URL, as the core opens it (a directory, or a name the object store would
/// percent-encode, reaches the core as is).
#[derive(Debug, Clone)]
pub(crate) struct DatasetPath(pub PathBuf);

/// Where a scan entry's file is, as the core opens it: the table's own path, else the
/// listed object's location in `store`.
pub(crate) fn file_location(file: &PartitionedFile, store: &ObjectStoreUrl) -> Result<PathBuf> {
    if let Some(DatasetPath(path)) = file.extension::<DatasetPath>() {
        return Ok(path.clone());
    }
    object_location(store, &file.object_meta.location)
}

/// Where an object of `store` is, as the core opens it: a local path on the local file system,
/// else the object's URL as the store's URL spells it (`s3://bucket/` and the object's path).
pub(crate) fn object_location(
    store: &ObjectStoreUrl,
    location: &object_store::path::Path,
) -> Result<PathBuf> {
    if *store == ObjectStoreUrl::local_filesystem() {
        return object_store::local::LocalFileSystem::new()
            .path_to_filesystem(location)
            .map_err(|e| DataFusionError::ObjectStore(Box::new(e)));
    }
    Ok(PathBuf::from(format!("{}{}", store.as_str(), location)))
}

/// The version of a listed object, as its store describes it; `None` for a table's own entry,
/// whose listing meta is made up (its input is kept by the local file's own stamp).
fn file_stamp(file: &PartitionedFile) -> Option<Stamp> {
    if file.extension::<DatasetPath>().is_some() {
        return None;
    }
    Some(object_stamp(&file.object_meta))
}

/// The version of a listed object: its size, time and ETag.
pub(crate) fn object_stamp(object: &ObjectMeta) -> Stamp {
    Stamp {
        size: object.size,
        modified: Some(SystemTime::from(object.last_modified)),
        version: object.e_tag.clone(),
    }
}

/// How many decoded batches a scan entry's reader keeps ahead of the query: enough that
/// decoding and the query overlap, few enough that an abandoned scan has decoded little.
pub(crate) const READ_AHEAD: usize = 2;

struct ArrowsmithOpener {
    format: Format,
    store: ObjectStoreUrl,
    file_schema: SchemaRef,
    options: Arc<ArrowsmithOptions>,
    scan: Scan,
}

impl FileOpener for ArrowsmithOpener {
    fn open(&self, file: PartitionedFile) -> Result<FileOpenFuture> {
        let location = file_location(&file, &self.store)?;
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
        let scan = options.read_options(&location, format, &scan).scan;
        Ok(async move {
            let opened = location.clone();
            let (reader, pool) = tokio::task::spawn_blocking(move || {
                let pool = ReaderPool::for_scan()?;
                let reader = pool.run(|| match &piece {
                    Some(piece) => piece.input.fragment_reader(&piece.fragment, &scan),
                    None => inputs::open(&opened, format, &options)?.reader(&scan),
                })?;
                Ok((reader, pool))
            })
            .await
            .map_err(|e| DataFusionError::ExecutionJoin(Box::new(e)))?
            .map_err(core_error)?;
            Ok(read_ahead(reader, pool, rows_only, location))
        }
        .boxed())
    }
}

/// Where a scan entry's reader is opened and read: on the caller's thread, the reader handing
/// its decoding to the process's rayon pool; or, when that pool has a single thread, on a
/// one-thread pool of the entry's own, so that two partitions decode on two threads.
enum ReaderPool {
    Shared,
    Own(rayon::ThreadPool),
}

impl ReaderPool {
    /// The pool for a new scan entry (blocks: may start a thread).
    fn for_scan() -> arrowsmith::Result<ReaderPool> {
        if rayon::current_num_threads() > 1 {
            return Ok(ReaderPool::Shared);
        }
        rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .thread_name(|_| "arrowsmith-scan".to_owned())
            .build()
            .map(ReaderPool::Own)
            .map_err(|e| {
                arrowsmith::Error::new(
                    arrowsmith::ErrorClass::Io,
                    format!("cannot start a reader's decode thread: {e}"),
                )
            })
    }

    /// Runs `work` (opening or reading a core reader) where the reader's decoding goes: on the
    /// entry's own pool, whose thread its rayon jobs then use, or right here.
    fn run<R: Send>(&self, work: impl FnOnce() -> R + Send) -> R {
        match self {
            ReaderPool::Shared => work(),
            ReaderPool::Own(pool) => pool.install(work),
        }
    }
}

/// The batches of `reader`, decoded on tokio's blocking pool (through `pool`)
/// [`READ_AHEAD`] batches ahead of the stream; the reader stops when the stream is dropped.
/// With `rows_only`, each batch is its row count alone. `location` names the file in the
/// tests' record of what each reader decoded.
fn read_ahead(
    reader: Box<dyn arrow::array::RecordBatchReader + Send>,
    pool: ReaderPool,
    rows_only: bool,
    location: PathBuf,
) -> futures::stream::BoxStream<'static, Result<RecordBatch>> {
    let (sender, receiver) = tokio::sync::mpsc::channel::<Result<RecordBatch>>(READ_AHEAD);
    let producer = tokio::task::spawn_blocking(move || {
        pool.run(move || send_all(reader, &sender, rows_only, location))
    });
    // The channel ends when the reader does; a reader that panicked ends it too, and its
    // join error is the stream's last item, so a scan never ends short without an error.
    let state = (receiver, Some(producer));
    futures::stream::unfold(state, |(mut receiver, producer)| async move {
        if let Some(item) = receiver.recv().await {
            return Some((item, (receiver, producer)));
        }
        match producer?.await {
            Ok(()) => None,
            Err(e) => Some((
                Err(DataFusionError::ExecutionJoin(Box::new(e))),
                (receiver, None),
            )),
        }
    })
    .boxed()
}

/// Sends each batch of `reader` into `sender` (its row count alone with `rows_only`), until the
/// reader ends or fails, or the stream is dropped.
fn send_all(
    reader: Box<dyn arrow::array::RecordBatchReader + Send>,
    sender: &tokio::sync::mpsc::Sender<Result<RecordBatch>>,
    rows_only: bool,
    location: PathBuf,
) {
    let empty = Arc::new(Schema::empty());
    #[cfg(test)]
    let mut sent = tests::Produced::start(location);
    #[cfg(not(test))]
    let _ = location;
    for batch in reader {
        let batch = batch.map_err(DataFusionError::from).and_then(|batch| {
            if !rows_only {
                return Ok(batch);
            }
            let options = RecordBatchOptions::new().with_row_count(Some(batch.num_rows()));
            Ok(RecordBatch::try_new_with_options(
                Arc::clone(&empty),
                vec![],
                &options,
            )?)
        });
        let failed = batch.is_err();
        // The stream was dropped: nobody reads on, so neither does the reader.
        if sender.blocking_send(batch).is_err() || failed {
            return;
        }
        #[cfg(test)]
        sent.batch();
    }
}

/// An arrowsmith error as a DataFusion error that displays it whole (file, offset, what was
/// wrong) and keeps it reachable through `std::error::Error::source`.
pub(crate) fn core_error(e: arrowsmith::Error) -> DataFusionError {
    DataFusionError::External(Box::new(e))
}

#[cfg(test)]
mod tests {
    use std::path::Path;
    use std::sync::Mutex;
    use std::time::{Duration, Instant};

    use arrow::array::{ArrayRef, Int64Array, RecordBatchIterator, StringArray};
    use datafusion::prelude::{SessionConfig, SessionContext};

    use super::*;
    use crate::SessionContextArrowsmithExt;

    /// Each reader that ended, with the file it read and the batches it handed to its stream.
    static FINISHED: Mutex<Vec<(PathBuf, usize)>> = Mutex::new(Vec::new());

    /// The record of one reader thread, kept when the thread ends.
    pub(super) struct Produced {
        location: PathBuf,
        batches: usize,
    }

    impl Produced {
        pub(super) fn start(location: PathBuf) -> Self {
            Produced {
                location,
                batches: 0,
            }
        }

        pub(super) fn batch(&mut self) {
            self.batches += 1;
        }
    }

    impl Drop for Produced {
        fn drop(&mut self) {
            let mut finished = FINISHED.lock().unwrap_or_else(|e| e.into_inner());
            finished.push((self.location.clone(), self.batches));
        }
    }

    /// The batches handed on by the readers of `path` that ended, waiting up to ten seconds
    /// for `readers` of them.
    fn finished_readers(path: &Path, readers: usize) -> Vec<usize> {
        let until = Instant::now() + Duration::from_secs(10);
        loop {
            let finished: Vec<usize> = FINISHED
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .iter()
                .filter(|(location, _)| location == path)
                .map(|(_, batches)| *batches)
                .collect();
            if finished.len() >= readers || Instant::now() > until {
                return finished;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// A DataSeries file of `rows` rows (an id and a text), zlib-compressed.
    fn compressed_ds(path: &Path, rows: i64) {
        let ids: ArrayRef = Arc::new(Int64Array::from_iter_values(0..rows));
        let texts: ArrayRef = Arc::new(StringArray::from_iter_values(
            (0..rows).map(|i| format!("row {i} of {}", (i * 7919) % 1_000_003)),
        ));
        let batch = RecordBatch::try_from_iter([("id", ids), ("text", texts)]).unwrap();
        let mut options = arrowsmith::WriteOptions {
            compression: Some("zlib".into()),
            ..Default::default()
        };
        options.dataseries = options.dataseries.with_extent_size(256 * 1024);
        let reader = RecordBatchIterator::new([Ok(batch.clone())], batch.schema());
        arrowsmith::write_all(reader, path, &options).unwrap();
    }

    async fn session_over(path: &Path, batch_size: usize) -> SessionContext {
        let config = SessionConfig::new()
            .with_target_partitions(1)
            .with_batch_size(batch_size);
        let ctx = SessionContext::new_with_config(config);
        ctx.register_arrowsmith().unwrap();
        let sql = format!(
            "CREATE EXTERNAL TABLE t STORED AS DATASERIES LOCATION '{}'",
            path.display()
        );
        ctx.sql(&sql).await.unwrap().collect().await.unwrap();
        ctx
    }

    #[tokio::test]
    async fn a_satisfied_limit_stops_the_reader_within_its_read_ahead() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("big.ds");
        compressed_ds(&path, 200_000);
        let ctx = session_over(&path, 1024).await;
        // The filter keeps the limit from reaching the reader: the stream is dropped instead.
        let sql = "SELECT id FROM t WHERE id % 1000 = 7 LIMIT 1";
        let batches = ctx.sql(sql).await.unwrap().collect().await.unwrap();
        let rows: usize = batches.iter().map(RecordBatch::num_rows).sum();
        assert_eq!(rows, 1);
        let readers = finished_readers(&path, 1);
        assert_eq!(readers.len(), 1, "the reader did not stop: {readers:?}");
        // The batch that answered, those read ahead, and what the query's operators pulled
        // on the way; not the file's ~200 batches.
        assert!(readers[0] <= 8, "{} batches were decoded", readers[0]);
    }
}
