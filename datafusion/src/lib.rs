//! SQL over legacy files: arrowsmith's formats (Jay, DataSeries, VS, bcolz, Filo) as
//! [DataFusion](https://datafusion.apache.org) data sources and `COPY … TO` targets, queried in
//! place, without converting them first.
//!
//! ```no_run
//! use arrowsmith_datafusion::SessionContextArrowsmithExt;
//! use datafusion::prelude::SessionContext;
//!
//! # async fn example() -> datafusion::error::Result<()> {
//! let ctx = SessionContext::new();
//! ctx.register_arrowsmith()?;
//!
//! // A path is a table; its format is recognised as `arrowsmith convert` recognises it.
//! ctx.sql("SELECT count(*) FROM 'data/jay/tiny.jay'").await?.show().await?;
//!
//! // A table with format options, and a query's result written as a DataSeries file.
//! ctx.sql(
//!     "CREATE EXTERNAL TABLE nfs STORED AS DATASERIES LOCATION 'trace.ds' \
//!      OPTIONS ('format.type' 'Trace::NFS::common')",
//! )
//! .await?;
//! ctx.sql("COPY (SELECT * FROM nfs LIMIT 10) TO 'head.ds'").await?.collect().await?;
//!
//! // The DataFrame API.
//! let frame = ctx.read_jay("data/jay/tiny.jay", Default::default()).await?;
//! frame.show().await?;
//! # Ok(())
//! # }
//! ```
//!
//! What [`SessionContextArrowsmithExt::register_arrowsmith`] adds to a session:
//! - a [`FileFormatFactory`](datafusion::datasource::file_format::FileFormatFactory) per format
//!   ([`ArrowsmithFormatFactory`]), found by `STORED AS` and by the extension of a `COPY` target;
//! - `CREATE EXTERNAL TABLE … STORED AS JAY | DATASERIES | VS` through DataFusion's listing
//!   tables (a `LOCATION` may be a directory of many files), `… STORED AS BCOLZ | FILO` through
//!   [`ArrowsmithTableFactory`], which keeps a dataset directory whole;
//! - paths as table names (`FROM 'trace.ds'`), through [`ArrowsmithUrlTableFactory`].
//!
//! Every scan reads through the core readers ([`ArrowsmithSource`]) with the query's projection,
//! limit and batch size, and starts from exact row counts, so `SELECT count(*)` reads no data.
//! Every write goes through the core writers, all-or-nothing ([`ArrowsmithSink`]). An error
//! inside a scan or a write is a [`DataFusionError::External`] holding the [`arrowsmith::Error`],
//! whose text names the file, the offset and what was wrong.
//!
//! Tables and `COPY` targets may be on object stores (`s3://bucket/trace.ds`, a prefix
//! `s3://bucket/traces/` of files of one format): the core reads and writes them by URL
//! through the process's registered [`Storage`](arrowsmith::source::Storage), with the
//! statement's `'aws.*'`, `'gcp.*'` or `'azure.*'` settings ([`storage_key`]). DataFusion lists
//! a table's objects through the store a front end registers with [`register_object_store`].

mod catalog;
mod file_format;
mod inputs;
mod options;
mod sink;
mod source;
mod statistics;
mod stores;
mod table;

use std::path::PathBuf;
use std::sync::Arc;

use arrowsmith::{Format, WriteSummary};
use async_trait::async_trait;
use datafusion::dataframe::DataFrame;
use datafusion::datasource::listing_table_factory::ListingTableFactory;
use datafusion::error::{DataFusionError, Result};
use datafusion::prelude::SessionContext;

pub use catalog::ArrowsmithUrlTableFactory;
pub use file_format::{ArrowsmithFormat, ArrowsmithFormatFactory};
pub use options::{core_key, sql_keys, storage_key, ArrowsmithOptions};
pub use sink::ArrowsmithSink;
pub use source::ArrowsmithSource;
pub use stores::register_object_store;
pub use table::{ArrowsmithTable, ArrowsmithTableFactory};

/// The formats this crate adds to DataFusion, and the names SQL finds them by.
const FORMATS: &[(Format, &[&str])] = &[
    (Format::Jay, &["jay"]),
    (Format::DataSeries, &["dataseries", "ds"]),
    (Format::Vs, &["vs"]),
    (Format::Bcolz, &["bcolz"]),
    (Format::Filo, &["filo"]),
];

/// arrowsmith on a [`SessionContext`]: registration, and `read_*` helpers in the manner of
/// `SessionContext::read_parquet`.
#[async_trait]
pub trait SessionContextArrowsmithExt {
    /// Registers every arrowsmith format for `CREATE EXTERNAL TABLE`, `COPY … TO` and paths
    /// as table names. Calling it again changes nothing.
    fn register_arrowsmith(&self) -> Result<()>;

    /// Reads a file, a dataset directory or a directory of files of one format as a
    /// [`DataFrame`]; the format is recognised when `format` is `None`.
    async fn read_arrowsmith(
        &self,
        path: impl Into<PathBuf> + Send,
        format: Option<Format>,
        options: ArrowsmithOptions,
    ) -> Result<DataFrame>;

    /// Registers the data at `path` as the table `name`.
    async fn register_arrowsmith_table(
        &self,
        name: &str,
        path: impl Into<PathBuf> + Send,
        format: Option<Format>,
        options: ArrowsmithOptions,
    ) -> Result<()>;

    /// Reads a Jay file (or a directory of them).
    async fn read_jay(
        &self,
        path: impl Into<PathBuf> + Send,
        options: ArrowsmithOptions,
    ) -> Result<DataFrame> {
        self.read_arrowsmith(path, Some(Format::Jay), options).await
    }

    /// Reads a DataSeries file (or a directory of them).
    async fn read_dataseries(
        &self,
        path: impl Into<PathBuf> + Send,
        options: ArrowsmithOptions,
    ) -> Result<DataFrame> {
        self.read_arrowsmith(path, Some(Format::DataSeries), options)
            .await
    }

    /// Reads a VS file (or a directory of them).
    async fn read_vs(
        &self,
        path: impl Into<PathBuf> + Send,
        options: ArrowsmithOptions,
    ) -> Result<DataFrame> {
        self.read_arrowsmith(path, Some(Format::Vs), options).await
    }

    /// Reads a bcolz carray or ctable directory.
    async fn read_bcolz(
        &self,
        path: impl Into<PathBuf> + Send,
        options: ArrowsmithOptions,
    ) -> Result<DataFrame> {
        self.read_arrowsmith(path, Some(Format::Bcolz), options)
            .await
    }

    /// Reads a Filo set directory.
    async fn read_filo(
        &self,
        path: impl Into<PathBuf> + Send,
        options: ArrowsmithOptions,
    ) -> Result<DataFrame> {
        self.read_arrowsmith(path, Some(Format::Filo), options)
            .await
    }
}

#[async_trait]
impl SessionContextArrowsmithExt for SessionContext {
    fn register_arrowsmith(&self) -> Result<()> {
        {
            let state = self.state_ref();
            let mut state = state.write();
            for (format, names) in FORMATS {
                for name in *names {
                    let factory = ArrowsmithFormatFactory::with_name(*format, name);
                    state.register_file_format(Arc::new(factory), true)?;
                }
            }
            // Without DataFusion's own Parquet support, Parquet is read and written by the core.
            if !cfg!(feature = "parquet") {
                let factory = ArrowsmithFormatFactory::new(Format::Parquet);
                state.register_file_format(Arc::new(factory), true)?;
                state
                    .table_factories_mut()
                    .insert("PARQUET".into(), Arc::new(ListingTableFactory::new()));
            }
            let tables = state.table_factories_mut();
            for name in ["JAY", "DATASERIES", "VS"] {
                tables.insert(name.into(), Arc::new(ListingTableFactory::new()));
            }
            for format in [Format::Bcolz, Format::Filo] {
                tables.insert(
                    format.name().to_ascii_uppercase(),
                    Arc::new(ArrowsmithTableFactory::new(Some(format))),
                );
            }
        }
        let paths = Arc::new(ArrowsmithUrlTableFactory::new(self));
        catalog::install(&self.state(), paths);
        Ok(())
    }

    async fn read_arrowsmith(
        &self,
        path: impl Into<PathBuf> + Send,
        format: Option<Format>,
        options: ArrowsmithOptions,
    ) -> Result<DataFrame> {
        let table = ArrowsmithTable::open(path, format, options).await?;
        self.read_table(Arc::new(table))
    }

    async fn register_arrowsmith_table(
        &self,
        name: &str,
        path: impl Into<PathBuf> + Send,
        format: Option<Format>,
        options: ArrowsmithOptions,
    ) -> Result<()> {
        let table = ArrowsmithTable::open(path, format, options).await?;
        self.register_table(name, Arc::new(table))?;
        Ok(())
    }
}

/// Writing a [`DataFrame`] through the arrowsmith writers.
#[async_trait]
pub trait DataFrameArrowsmithExt {
    /// Runs the query and writes its result to `path` as `format` (by the extension when
    /// `None`): any format the core writes, legacy or not. All-or-nothing.
    async fn write_arrowsmith(
        self,
        path: impl Into<PathBuf> + Send,
        format: Option<Format>,
        options: ArrowsmithOptions,
    ) -> Result<WriteSummary>;
}

#[async_trait]
impl DataFrameArrowsmithExt for DataFrame {
    async fn write_arrowsmith(
        self,
        path: impl Into<PathBuf> + Send,
        format: Option<Format>,
        options: ArrowsmithOptions,
    ) -> Result<WriteSummary> {
        let path = path.into();
        let format = match format {
            Some(f) => f,
            None => Format::for_output(&path).map_err(source::core_error)?,
        };
        let schema = Arc::clone(self.schema().inner());
        let stream = self.execute_stream().await?;
        let sink = ArrowsmithSink::new(format, Arc::new(options), path, schema);
        sink.write_stream(stream).await
    }
}

/// The [`arrowsmith::Error`] inside a DataFusion error, if it carries one: raised by a reader
/// or writer (directly or through Arrow), however deep DataFusion wrapped it.
pub fn arrowsmith_error(error: &DataFusionError) -> Option<&arrowsmith::Error> {
    let mut current: &(dyn std::error::Error + 'static) = error;
    loop {
        if let Some(ours) = current.downcast_ref::<arrowsmith::Error>() {
            return Some(ours);
        }
        if let Some(arrow) = current.downcast_ref::<arrow_schema::ArrowError>() {
            if let Some(ours) = arrowsmith::Error::from_arrow(arrow) {
                return Some(ours);
            }
        }
        current = current.source()?;
    }
}

/// A DataFusion error as one [`arrowsmith::Error`]: the one a reader or writer raised, with
/// its file, offset and class, when the error carries one; otherwise DataFusion's message,
/// classed so that a front end can tell a bad query ([`ErrorClass::InvalidArgument`]: SQL,
/// planning, schema and option errors) from a failure while running it.
///
/// [`ErrorClass::InvalidArgument`]: arrowsmith::ErrorClass::InvalidArgument
pub fn into_arrowsmith_error(error: DataFusionError) -> arrowsmith::Error {
    use arrowsmith::ErrorClass;
    let text = error.strip_backtrace();
    let class = match error.find_root() {
        DataFusionError::SQL(..)
        | DataFusionError::Plan(_)
        | DataFusionError::SchemaError(..)
        | DataFusionError::Configuration(_) => ErrorClass::InvalidArgument,
        DataFusionError::NotImplemented(_) => ErrorClass::Unsupported,
        DataFusionError::IoError(_) | DataFusionError::ObjectStore(_) => ErrorClass::Io,
        _ => ErrorClass::Arrow,
    };
    match error {
        DataFusionError::External(inner) => match inner.downcast::<arrowsmith::Error>() {
            Ok(ours) => *ours,
            Err(other) => match other.downcast::<arrow_schema::ArrowError>() {
                Ok(arrow) => arrowsmith::Error::from_arrow_owned(*arrow),
                Err(_) => arrowsmith::Error::new(class, text),
            },
        },
        DataFusionError::ArrowError(arrow, _)
            if arrowsmith::Error::from_arrow(&arrow).is_some() =>
        {
            arrowsmith::Error::from_arrow_owned(*arrow)
        }
        DataFusionError::Context(_, inner) | DataFusionError::Diagnostic(_, inner)
            if arrowsmith_error(&inner).is_some() =>
        {
            into_arrowsmith_error(*inner)
        }
        DataFusionError::Shared(shared) if arrowsmith_error(&shared).is_some() => {
            match Arc::try_unwrap(shared) {
                Ok(inner) => into_arrowsmith_error(inner),
                Err(shared) => arrowsmith::Error::new(class, shared.strip_backtrace()),
            }
        }
        _ => arrowsmith::Error::new(class, text),
    }
}
