//! [`ArrowsmithFormat`]: a DataFusion [`FileFormat`] per arrowsmith format, and
//! [`ArrowsmithFormatFactory`], which DataFusion finds by the SQL name (`STORED AS JAY`,
//! `DATASERIES`, `VS`, `BCOLZ`, `FILO`) or the output extension of `COPY … TO 'out.ds'`.
//!
//! The single-file formats (Jay, DataSeries, VS) are read through DataFusion's `ListingTable`
//! with this format; the directory formats are read through [`crate::ArrowsmithTable`] (a
//! listing would take a bcolz table's chunk files for tables) and written through this format's
//! sink like the others. No format here is compressed as a whole file, so DataFusion's file
//! compression (`.jay.gz`) is refused.

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use arrow_schema::{Schema, SchemaRef};
use arrowsmith::Format;
use async_trait::async_trait;
use datafusion::catalog::Session;
use datafusion::common::{GetExt, Statistics};
use datafusion::datasource::file_format::file_compression_type::FileCompressionType;
use datafusion::datasource::file_format::{FileFormat, FileFormatFactory};
use datafusion::datasource::listing::PartitionedFile;
use datafusion::datasource::physical_plan::{
    FileScanConfig, FileScanConfigBuilder, FileSinkConfig, FileSource,
};
use datafusion::datasource::sink::DataSinkExec;
use datafusion::datasource::source::DataSourceExec;
use datafusion::datasource::table_schema::TableSchema;
use datafusion::error::{DataFusionError, Result};
use datafusion::physical_expr::LexRequirement;
use datafusion::physical_plan::ExecutionPlan;
use object_store::{ObjectMeta, ObjectStore};

use crate::inputs::InputCache;
use crate::options::ArrowsmithOptions;
use crate::sink::ArrowsmithSink;
use crate::source::{core_error, fragment_groups, object_location, object_stamp, ArrowsmithSource};
use crate::statistics::file_statistics;
use crate::stores::{store_url, SessionStorage};

/// Makes [`ArrowsmithFormat`]s of one arrowsmith format, registered under one name.
#[derive(Debug, Clone)]
pub struct ArrowsmithFormatFactory {
    format: Format,
    /// The lower-case name DataFusion looks the factory up by: the SQL name or an extension.
    name: String,
}

impl ArrowsmithFormatFactory {
    /// A factory of `format` under its own name (`jay`, `dataseries`, …).
    pub fn new(format: Format) -> Self {
        Self::with_name(format, format.name())
    }

    /// A factory of `format` under another name, such as its extension (`ds`).
    pub fn with_name(format: Format, name: &str) -> Self {
        ArrowsmithFormatFactory {
            format,
            name: name.to_ascii_lowercase(),
        }
    }

    /// The format this factory makes.
    pub fn format(&self) -> Format {
        self.format
    }
}

impl GetExt for ArrowsmithFormatFactory {
    fn get_ext(&self) -> String {
        self.name.clone()
    }
}

impl FileFormatFactory for ArrowsmithFormatFactory {
    fn create(
        &self,
        state: &dyn Session,
        format_options: &HashMap<String, String>,
    ) -> Result<Arc<dyn FileFormat>> {
        let mut options = ArrowsmithOptions::from_map(format_options, self.format)?;
        options.session_storage = SessionStorage::of(state);
        Ok(Arc::new(ArrowsmithFormat::new(self.format, options)))
    }

    fn default(&self) -> Arc<dyn FileFormat> {
        Arc::new(ArrowsmithFormat::new(self.format, Default::default()))
    }
}

/// The DataFusion [`FileFormat`] of one arrowsmith format with its options.
#[derive(Debug, Clone)]
pub struct ArrowsmithFormat {
    format: Format,
    options: Arc<ArrowsmithOptions>,
    /// The files' opened inputs, shared by schema inference, statistics and scans.
    inputs: Arc<InputCache>,
}

impl ArrowsmithFormat {
    /// `format` read and written with `options`.
    pub fn new(format: Format, options: ArrowsmithOptions) -> Self {
        ArrowsmithFormat {
            format,
            options: Arc::new(options),
            inputs: Arc::default(),
        }
    }

    /// The arrowsmith format.
    pub fn format(&self) -> Format {
        self.format
    }
}

#[async_trait]
impl FileFormat for ArrowsmithFormat {
    fn get_ext(&self) -> String {
        self.format
            .extensions()
            .first()
            .copied()
            .unwrap_or_else(|| self.format.name())
            .to_owned()
    }

    fn get_ext_with_compression(&self, compression: &FileCompressionType) -> Result<String> {
        if compression.is_compressed() {
            return Err(DataFusionError::NotImplemented(format!(
                "{} files are not compressed as a whole; their codecs are format options",
                self.format
            )));
        }
        Ok(self.get_ext())
    }

    /// Uncompressed rather than unknown: DataFusion then lists a directory LOCATION as
    /// `*.ds`, the extension, not `*.dataseries`, the name `STORED AS` used.
    fn compression_type(&self) -> Option<FileCompressionType> {
        Some(FileCompressionType::UNCOMPRESSED)
    }

    async fn infer_schema(
        &self,
        state: &dyn Session,
        store: &Arc<dyn ObjectStore>,
        objects: &[ObjectMeta],
    ) -> Result<SchemaRef> {
        let mut objects: Vec<ObjectMeta> = objects.to_vec();
        // Listing order is the store's; the merged schema must not depend on it.
        objects.sort_by(|a, b| a.location.cmp(&b.location));
        let store = store_url(state, store)?;
        let format = self.format;
        let (options, inputs) = (Arc::clone(&self.options), Arc::clone(&self.inputs));
        let schemas = tokio::task::spawn_blocking(move || -> Result<Vec<Schema>> {
            objects
                .iter()
                .map(|object| {
                    let path = object_location(&store, &object.location)?;
                    let input = inputs
                        .input(&path, Some(&object_stamp(object)), format, &options)
                        .map_err(|e| core_error(e.with_file(&path)))?;
                    Ok(Arc::unwrap_or_clone(input.schema()))
                })
                .collect()
        })
        .await
        .map_err(|e| DataFusionError::ExecutionJoin(Box::new(e)))??;
        Ok(Arc::new(Schema::try_merge(schemas)?))
    }

    async fn infer_stats(
        &self,
        state: &dyn Session,
        store: &Arc<dyn ObjectStore>,
        table_schema: SchemaRef,
        object: &ObjectMeta,
    ) -> Result<Statistics> {
        let path = object_location(&store_url(state, store)?, &object.location)?;
        let stamp = object_stamp(object);
        let format = self.format;
        let (options, inputs) = (Arc::clone(&self.options), Arc::clone(&self.inputs));
        tokio::task::spawn_blocking(move || {
            match inputs.input(&path, Some(&stamp), format, &options) {
                Ok(input) => file_statistics(&input, &table_schema),
                // The scan reports why the file does not open.
                Err(_) => Statistics::new_unknown(&table_schema),
            }
        })
        .await
        .map_err(|e| DataFusionError::ExecutionJoin(Box::new(e)))
    }

    /// The listed files, split into the core's fragments over the session's partitions.
    async fn create_physical_plan(
        &self,
        state: &dyn Session,
        conf: FileScanConfig,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let files: Vec<PartitionedFile> = conf
            .file_groups
            .iter()
            .flat_map(|group| group.files().iter().cloned())
            .collect();
        let partitions = state.config_options().execution.target_partitions;
        let format = self.format;
        let (options, inputs) = (Arc::clone(&self.options), Arc::clone(&self.inputs));
        let store = conf.object_store_url.clone();
        let groups = tokio::task::spawn_blocking(move || {
            fragment_groups(files, &store, format, &options, &inputs, partitions)
        })
        .await
        .map_err(|e| DataFusionError::ExecutionJoin(Box::new(e)))??;
        let conf = FileScanConfigBuilder::from(conf)
            .with_file_groups(groups)
            .build();
        Ok(DataSourceExec::from_data_source(conf))
    }

    async fn create_writer_physical_plan(
        &self,
        input: Arc<dyn ExecutionPlan>,
        _state: &dyn Session,
        conf: FileSinkConfig,
        order_requirements: Option<LexRequirement>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let sink = ArrowsmithSink::for_copy(self.format, Arc::clone(&self.options), &conf)?;
        Ok(Arc::new(DataSinkExec::new(
            input,
            Arc::new(sink),
            order_requirements,
        )))
    }

    fn file_source(&self, table_schema: TableSchema) -> Arc<dyn FileSource> {
        Arc::new(ArrowsmithSource::new(
            self.format,
            Arc::clone(&self.options),
            table_schema,
        ))
    }
}

impl fmt::Display for ArrowsmithFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.format)
    }
}
