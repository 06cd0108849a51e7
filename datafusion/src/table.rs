//! [`ArrowsmithTable`]: a [`TableProvider`] over one arrowsmith dataset (a file, a bcolz or Filo
//! directory) or a directory of many files of one format, and [`ArrowsmithTableFactory`], which
//! makes one for `CREATE EXTERNAL TABLE … STORED AS BCOLZ | FILO` (and any other arrowsmith
//! format).
//!
//! DataFusion's `ListingTable` lists a directory's files, which is wrong for a bcolz table or a
//! Filo set: their files are parts of one dataset. This table keeps such a directory whole and
//! builds the same scan as [`crate::ArrowsmithFormat`] does, an [`ArrowsmithSource`] over its
//! datasets, so the two share the opener, the statistics and the partitioning.
//!
//! A location may be a URL (`s3://bucket/t.bcolz`, a dataset's key prefix; `s3://bucket/t.jay`):
//! the core opens it through the process's registered storage. A URL ending in `/` names a
//! prefix of files, which DataFusion lists through its object store: that is a listing table
//! (`CREATE EXTERNAL TABLE … STORED AS JAY LOCATION 's3://bucket/dir/'`), not this one.
//!
//! Opening a table reads each file's metadata (schema and row count) once, on the calling
//! thread; [`ArrowsmithTable::open`] does it on tokio's blocking pool.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_schema::SchemaRef;
use arrowsmith::source::is_url;
use arrowsmith::{Error, Format};
use async_trait::async_trait;
use datafusion::catalog::{Session, TableProvider, TableProviderFactory};
use datafusion::common::Statistics;
use datafusion::datasource::listing::PartitionedFile;
use datafusion::datasource::physical_plan::FileScanConfigBuilder;
use datafusion::datasource::source::DataSourceExec;
use datafusion::datasource::table_schema::TableSchema;
use datafusion::datasource::TableType;
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::object_store::ObjectStoreUrl;
use datafusion::logical_expr::{CreateExternalTable, Expr};
use datafusion::physical_plan::ExecutionPlan;

use crate::inputs::InputCache;
use crate::options::{check_remote, ArrowsmithOptions};
use crate::source::{core_error, fragment_groups, ArrowsmithSource, DatasetPath};
use crate::statistics::file_statistics;

/// One table over arrowsmith data of one format and one schema.
pub struct ArrowsmithTable {
    format: Format,
    options: Arc<ArrowsmithOptions>,
    /// The files' opened inputs (see [`crate::inputs`]).
    inputs: Arc<InputCache>,
    /// The datasets, absolute and sorted (or one URL); a bcolz or Filo directory is one.
    paths: Vec<PathBuf>,
    schema: SchemaRef,
    /// Per path, in the table's schema.
    statistics: Vec<Statistics>,
}

impl fmt::Debug for ArrowsmithTable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ArrowsmithTable")
            .field("format", &self.format)
            .field("paths", &self.paths)
            .finish()
    }
}

impl ArrowsmithTable {
    /// Opens `location`: a file or dataset directory of `format` (found as
    /// [`Format::detect`] finds it when `None`), or a directory of files of that format.
    /// Reads each file's metadata; blocks.
    pub fn try_new(
        location: impl AsRef<Path>,
        format: Option<Format>,
        options: ArrowsmithOptions,
    ) -> Result<Self> {
        let location = strip_file_scheme(location.as_ref());
        let (format, paths) = if is_url(&location) {
            resolve_url(&location, format).map_err(core_error)?
        } else {
            resolve(&location, format).map_err(core_error)?
        };
        let inputs = Arc::new(InputCache::default());
        let mut schema: Option<SchemaRef> = None;
        let mut opened = Vec::with_capacity(paths.len());
        for path in &paths {
            let input = inputs
                .input(path, None, format, &options)
                .map_err(|e| core_error(e.with_file(path)))?;
            let file_schema = input.schema();
            opened.push(input);
            match &schema {
                None => schema = Some(file_schema),
                Some(first) if first.fields() != file_schema.fields() => {
                    return Err(core_error(
                        Error::invalid_argument(format!(
                            "its columns differ from those of {}; the files of one table share one schema",
                            paths[0].display()
                        ))
                        .with_file(path),
                    ));
                }
                Some(_) => {}
            }
        }
        let schema = schema.expect("resolve returns at least one path");
        let statistics = opened
            .iter()
            .map(|input| file_statistics(input, &schema))
            .collect();
        Ok(ArrowsmithTable {
            format,
            options: Arc::new(options),
            inputs,
            paths,
            schema,
            statistics,
        })
    }

    /// [`ArrowsmithTable::try_new`] on tokio's blocking pool.
    pub async fn open(
        location: impl Into<PathBuf>,
        format: Option<Format>,
        options: ArrowsmithOptions,
    ) -> Result<Self> {
        let location = location.into();
        tokio::task::spawn_blocking(move || ArrowsmithTable::try_new(location, format, options))
            .await
            .map_err(|e| DataFusionError::ExecutionJoin(Box::new(e)))?
    }

    /// The format of the table's data.
    pub fn format(&self) -> Format {
        self.format
    }

    /// The files (or dataset directories) the table reads.
    pub fn paths(&self) -> &[PathBuf] {
        &self.paths
    }
}

#[async_trait]
impl TableProvider for ArrowsmithTable {
    fn schema(&self) -> SchemaRef {
        Arc::clone(&self.schema)
    }

    fn table_type(&self) -> TableType {
        TableType::Base
    }

    async fn scan(
        &self,
        state: &dyn Session,
        projection: Option<&Vec<usize>>,
        _filters: &[Expr],
        limit: Option<usize>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let source = Arc::new(ArrowsmithSource::new(
            self.format,
            Arc::clone(&self.options),
            TableSchema::from(Arc::clone(&self.schema)),
        ));
        let files: Vec<PartitionedFile> = self
            .paths
            .iter()
            .zip(&self.statistics)
            .map(|(path, statistics)| dataset_file(path, statistics.clone()))
            .collect();
        let partitions = state.config_options().execution.target_partitions;
        let (format, options) = (self.format, Arc::clone(&self.options));
        let inputs = Arc::clone(&self.inputs);
        let groups = tokio::task::spawn_blocking(move || {
            let store = ObjectStoreUrl::local_filesystem();
            fragment_groups(files, &store, format, &options, &inputs, partitions)
        })
        .await
        .map_err(|e| DataFusionError::ExecutionJoin(Box::new(e)))??;
        let config = FileScanConfigBuilder::new(ObjectStoreUrl::local_filesystem(), source)
            .with_file_groups(groups)
            .with_statistics(self.total_statistics()?)
            .with_limit(limit)
            .with_projection_indices(projection.cloned())?
            .build();
        Ok(DataSourceExec::from_data_source(config))
    }

    fn statistics(&self) -> Option<Statistics> {
        self.total_statistics().ok()
    }
}

impl ArrowsmithTable {
    fn total_statistics(&self) -> Result<Statistics> {
        Statistics::try_merge_iter(&self.statistics, &self.schema)
    }
}

/// A scan's file entry for a dataset (a local path or a URL); the path rides along as an
/// extension, so that a directory or a name the object store would percent-encode reaches the
/// core reader as is.
pub(crate) fn dataset_file(path: &Path, statistics: Statistics) -> PartitionedFile {
    let size = if is_url(path) || path.is_dir() {
        0
    } else {
        std::fs::metadata(path).map(|m| m.len()).unwrap_or(0)
    };
    PartitionedFile::new(path.display().to_string(), size)
        .with_extension(DatasetPath(path.to_path_buf()))
        .with_statistics(Arc::new(statistics))
}

/// The format and the dataset of a URL: the object, or a bcolz or Filo dataset's key prefix
/// (without its trailing `/`). A prefix of files is DataFusion's to list.
fn resolve_url(url: &Path, format: Option<Format>) -> arrowsmith::Result<(Format, Vec<PathBuf>)> {
    check_remote(url)?;
    let format = match format {
        Some(f) => f,
        None => Format::detect(url)?,
    };
    let text = url.to_string_lossy();
    let Some(prefix) = text.strip_suffix('/') else {
        return Ok((format, vec![url.to_path_buf()]));
    };
    if format.is_directory() {
        return Ok((format, vec![PathBuf::from(prefix)]));
    }
    Err(Error::invalid_argument(format!(
        "a URL ending in / is a prefix of {format} files, which DataFusion lists: \
         CREATE EXTERNAL TABLE … STORED AS {} LOCATION '{text}' reads it",
        format.name().to_ascii_uppercase()
    ))
    .with_file(url))
}

fn strip_file_scheme(location: &Path) -> PathBuf {
    match location.to_str().and_then(|s| s.strip_prefix("file://")) {
        Some(rest) => PathBuf::from(rest),
        None => location.to_path_buf(),
    }
}

/// The format and the datasets of a location: itself when it is a file or a bcolz / Filo
/// directory, else the files of one arrowsmith format directly inside it.
pub(crate) fn resolve(
    location: &Path,
    format: Option<Format>,
) -> arrowsmith::Result<(Format, Vec<PathBuf>)> {
    // Canonical: the path is also the scan's file name, which DataFusion shows in plans.
    let absolute =
        std::fs::canonicalize(location).map_err(|e| Error::from(e).with_file(location))?;
    let metadata = std::fs::metadata(&absolute).map_err(|e| Error::from(e).with_file(location))?;
    let is_dataset_dir = metadata.is_dir()
        && match format {
            Some(f) => f.is_directory(),
            None => Format::detect(&absolute).is_ok(),
        };
    if !metadata.is_dir() || is_dataset_dir {
        let format = match format {
            Some(f) => f,
            None => Format::detect(&absolute)?,
        };
        return Ok((format, vec![absolute]));
    }
    let mut members = Vec::new();
    let entries = std::fs::read_dir(&absolute).map_err(|e| Error::from(e).with_file(location))?;
    for entry in entries {
        let path = entry
            .map_err(|e| Error::from(e).with_file(location))?
            .path();
        let hidden = path
            .file_name()
            .and_then(|n| n.to_str())
            .is_none_or(|n| n.starts_with('.') || n.starts_with('_'));
        if hidden {
            continue;
        }
        if let Some(found) = Format::from_extension(&path) {
            if format.is_none_or(|f| f == found) {
                members.push((found, path));
            }
        }
    }
    members.sort_by(|a, b| a.1.cmp(&b.1));
    let Some((first, _)) = members.first() else {
        let wanted = format.map_or("arrowsmith".to_owned(), |f| f.name().to_owned());
        return Err(Error::invalid_argument(format!(
            "the directory holds no {wanted} files (recognised by their extension)"
        ))
        .with_file(location));
    };
    let first = *first;
    if let Some((other, path)) = members.iter().find(|(f, _)| *f != first) {
        return Err(Error::invalid_argument(format!(
            "the directory holds {first} and {other} files (e.g. {}); name the format (STORED AS …)",
            path.display()
        ))
        .with_file(location));
    }
    Ok((first, members.into_iter().map(|(_, p)| p).collect()))
}

/// Makes an [`ArrowsmithTable`] for `CREATE EXTERNAL TABLE … STORED AS <format>`.
#[derive(Debug, Default)]
pub struct ArrowsmithTableFactory {
    format: Option<Format>,
}

impl ArrowsmithTableFactory {
    /// A factory for tables of `format`, or of the format `STORED AS` names when `None`.
    pub fn new(format: Option<Format>) -> Self {
        ArrowsmithTableFactory { format }
    }
}

#[async_trait]
impl TableProviderFactory for ArrowsmithTableFactory {
    async fn create(
        &self,
        _state: &dyn Session,
        cmd: &CreateExternalTable,
    ) -> Result<Arc<dyn TableProvider>> {
        let format = match self.format {
            Some(f) => f,
            None => cmd.file_type.parse().map_err(core_error)?,
        };
        let options = ArrowsmithOptions::from_map(&cmd.options, format)?;
        let [location] = cmd.locations.as_slice() else {
            return Err(DataFusionError::Plan(format!(
                "an arrowsmith table has one LOCATION, not {}",
                cmd.locations.len()
            )));
        };
        if !cmd.table_partition_cols.is_empty() {
            return Err(DataFusionError::NotImplemented(
                "arrowsmith tables have no PARTITIONED BY columns".into(),
            ));
        }
        let table = ArrowsmithTable::open(location, Some(format), options).await?;
        let declared = cmd.schema.inner();
        if !declared.fields().is_empty() {
            let names = |s: &SchemaRef| -> Vec<String> {
                s.fields().iter().map(|f| f.name().clone()).collect()
            };
            if names(declared) != names(&table.schema) {
                return Err(DataFusionError::Plan(format!(
                    "the declared columns {:?} are not the columns of {location}: {:?}",
                    names(declared),
                    names(&table.schema)
                )));
            }
        }
        Ok(Arc::new(table))
    }
}
