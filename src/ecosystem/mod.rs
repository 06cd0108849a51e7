//! The Arrow ecosystem's own formats (Parquet, Arrow IPC file and stream, CSV, NDJSON),
//! read and written through the arrow-rs crates so that every legacy format converts to them.
//!
//! Readers honour [`ReadOptions`](crate::ReadOptions): the batch size, the projection (pushed down to the format's
//! reader, then put in the order asked for) and the row limit (pushed down where the format's
//! reader can stop early, and enforced by a wrapper that stops pulling batches once it is
//! reached). Writers go through [`AtomicFile`](crate::atomic::AtomicFile): until `finish`
//! returns `Ok`, nothing exists at the target path. Every error names the file.
//!
//! Each format module also has a `describe` function that reports the file's own structure
//! (Parquet row groups, IPC batches, the CSV/NDJSON inference) for `arrowsmith inspect`.

pub mod csv;
pub mod ipc;
pub mod ndjson;
mod object;
pub mod parquet;
pub mod records;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::{RecordBatch, RecordBatchReader};
use arrow_schema::{ArrowError, Schema, SchemaRef};

use crate::error::{Error, ErrorClass, Result};
use crate::format::Format;
use crate::options::WriteOptions;
use crate::scan::FragmentRange;
use crate::scan::ScanOptions;
use crate::source::ByteSource;
use crate::write::BatchWriter;

/// How many records the CSV and NDJSON readers look at to infer a schema.
pub const INFER_SCHEMA_RECORDS: usize = 1000;

/// The largest batch the text readers are asked to build, whatever `batch_size` says: beyond
/// this, bigger batches only cost memory.
const MAX_BATCH_SIZE: usize = 1 << 24;

/// Opens a Parquet, Arrow IPC, CSV or NDJSON file as a stream of record batches.
pub fn open(
    path: &Path,
    format: Format,
    options: &ScanOptions,
) -> Result<Box<dyn RecordBatchReader + Send>> {
    match format {
        Format::Parquet => parquet::open(path, options),
        Format::Arrow => ipc::open_file(path, options),
        Format::ArrowStream | Format::Csv | Format::Ndjson => {
            whole_only(format, options, path)?;
            match format {
                Format::ArrowStream => ipc::open_stream(path, options),
                Format::Csv => csv::open(path, options),
                _ => ndjson::open(path, options),
            }
        }
        other => Err(not_ecosystem(other).with_file(path)),
    }
}

/// Opens a remote Parquet, Arrow IPC, CSV or NDJSON object as a stream of record batches:
/// Parquet fetches its footer and then the column chunks the scan needs, the others read the
/// object front to back (an IPC file from its footer's blocks) in windows.
pub(crate) fn open_source(
    source: Arc<dyn ByteSource>,
    format: Format,
    options: &ScanOptions,
) -> Result<Box<dyn RecordBatchReader + Send>> {
    let name = PathBuf::from(source.location());
    match format {
        Format::Parquet => parquet::open_source(source, options),
        Format::Arrow => ipc::open_file_source(source, options),
        Format::ArrowStream | Format::Csv | Format::Ndjson => {
            whole_only(format, options, &name)?;
            match format {
                Format::ArrowStream => ipc::open_stream_source(source, options),
                Format::Csv => {
                    csv::read(Box::new(object::ObjectReader::new(source)), &name, options)
                }
                _ => ndjson::read(Box::new(object::ObjectReader::new(source)), &name, options),
            }
        }
        other => Err(not_ecosystem(other).with_file(&name)),
    }
}

/// Refuses a fragment range other than the whole input, for the formats read whole.
pub(crate) fn whole_only(format: Format, options: &ScanOptions, path: &Path) -> Result<()> {
    match options.range {
        None | Some(FragmentRange::Whole) => Ok(()),
        Some(other) => Err(other
            .wrong_unit(format.name(), "the whole input")
            .with_file(path)),
    }
}

/// Creates a Parquet, Arrow IPC, CSV or NDJSON writer for batches of `schema`.
pub fn create(
    path: &Path,
    format: Format,
    schema: SchemaRef,
    options: &WriteOptions,
) -> Result<Box<dyn BatchWriter + Send>> {
    match format {
        Format::Parquet => Ok(Box::new(parquet::Writer::try_new(path, schema, options)?)),
        Format::Arrow => Ok(Box::new(ipc::Writer::try_new_file(path, schema, options)?)),
        Format::ArrowStream => Ok(Box::new(ipc::Writer::try_new_stream(
            path, schema, options,
        )?)),
        Format::Csv => Ok(Box::new(csv::Writer::try_new(path, schema, options)?)),
        Format::Ndjson => Ok(Box::new(ndjson::Writer::try_new(path, schema, options)?)),
        other => Err(not_ecosystem(other).with_file(path)),
    }
}

fn not_ecosystem(format: Format) -> Error {
    Error::unsupported(format!(
        "{format} is not one of the Arrow ecosystem formats (parquet, arrow, arrows, csv, ndjson)"
    ))
}

/// The batch size to hand to a format's reader: at least 1, at most [`MAX_BATCH_SIZE`].
pub(crate) fn batch_size(options: &ScanOptions) -> usize {
    options
        .batch_size_or(crate::scan::DEFAULT_BATCH_SIZE)
        .clamp(1, MAX_BATCH_SIZE)
}

/// The batch size for a reader that parses rows as it goes (CSV, NDJSON): no larger than the
/// row limit, so that it stops parsing where the limit does.
pub(crate) fn parsing_batch_size(options: &ScanOptions) -> usize {
    match options.limit {
        Some(limit) => batch_size(options).min(limit.max(1)),
        None => batch_size(options),
    }
}

/// Converts an error of the Arrow or Parquet libraries into ours, naming the file.
pub(crate) fn arrow_error(error: ArrowError, path: &Path) -> Error {
    let error = match error {
        ArrowError::ParquetError(message) => Error::new(ErrorClass::Parquet, message),
        other => Error::from_arrow_owned(other),
    };
    error.with_file(path)
}

/// Attaches the file name to any error on its way out of a function that knows the path.
pub(crate) trait InFile<T> {
    fn in_file(self, path: &Path) -> Result<T>;
}

impl<T, E: Into<Error>> InFile<T> for std::result::Result<T, E> {
    fn in_file(self, path: &Path) -> Result<T> {
        self.map_err(|e| e.into().with_file(path))
    }
}

/// A projection split into what the format's reader is asked for (column indices in file
/// order, each once) and the order the caller wants them in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ProjectionPlan {
    /// Sorted, distinct indices into the file's columns: what to push down.
    pub read: Vec<usize>,
    /// For each wanted column, its position among `read`; `None` when that is `read` itself.
    pub order: Option<Vec<usize>>,
}

impl ProjectionPlan {
    /// Resolves `options.projection` against `schema`; `None` reads every column.
    pub fn new(options: &ScanOptions, schema: &Schema, path: &Path) -> Result<Option<Self>> {
        let Some(projection) = &options.projection else {
            return Ok(None);
        };
        let wanted = projection
            .resolve(schema.fields().iter().map(|f| f.name().as_str()))
            .map_err(|e| e.with_file(path))?;
        let read: Vec<usize> = wanted
            .iter()
            .copied()
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        let order = if wanted == read {
            None
        } else {
            Some(
                wanted
                    .iter()
                    .map(|w| read.iter().position(|r| r == w).unwrap_or_default())
                    .collect(),
            )
        };
        Ok(Some(ProjectionPlan { read, order }))
    }
}

/// What every ecosystem reader is wrapped in: puts projected columns in the order asked for,
/// cuts batches larger than the batch size, stops at the row limit without reading further,
/// names the file in errors, and ends after the first error.
pub(crate) struct Adapted<R> {
    inner: R,
    schema: SchemaRef,
    path: PathBuf,
    order: Option<Vec<usize>>,
    remaining: Option<usize>,
    max_rows: usize,
    pending: Option<RecordBatch>,
    done: bool,
}

impl<R: Iterator<Item = Result<RecordBatch, ArrowError>>> Adapted<R> {
    pub fn new(
        inner: R,
        inner_schema: SchemaRef,
        path: &Path,
        order: Option<Vec<usize>>,
        options: &ScanOptions,
    ) -> Result<Self> {
        let schema = match &order {
            Some(order) => Arc::new(
                inner_schema
                    .project(order)
                    .map_err(|e| arrow_error(e, path))?,
            ),
            None => inner_schema,
        };
        Ok(Adapted {
            inner,
            schema,
            path: path.to_path_buf(),
            order,
            remaining: options.limit,
            max_rows: batch_size(options),
            pending: None,
            done: false,
        })
    }

    fn next_batch(&mut self) -> Option<Result<RecordBatch, Error>> {
        if self.remaining == Some(0) {
            return None;
        }
        let mut batch = match self.pending.take() {
            Some(batch) => batch,
            None => match self.inner.next()? {
                Ok(batch) => match &self.order {
                    Some(order) => match batch.project(order) {
                        Ok(b) => b,
                        Err(e) => return Some(Err(arrow_error(e, &self.path))),
                    },
                    None => batch,
                },
                Err(e) => return Some(Err(arrow_error(e, &self.path))),
            },
        };
        if !Arc::ptr_eq(&batch.schema(), &self.schema) && batch.schema() != self.schema {
            batch = match batch.with_schema(self.schema.clone()) {
                Ok(b) => b,
                Err(e) => return Some(Err(arrow_error(e, &self.path))),
            };
        }
        // Nothing in a file bounds the row count of a batch without columns (an IPC record
        // batch of an empty schema may declare 2^63 rows), and such a batch costs nothing
        // whole: cut to the batch size, it would be millions of empty batches. Jay's reader
        // hands such frames out whole for the same reason.
        if batch.num_rows() > self.max_rows && batch.num_columns() > 0 {
            self.pending = Some(batch.slice(self.max_rows, batch.num_rows() - self.max_rows));
            batch = batch.slice(0, self.max_rows);
        }
        if let Some(remaining) = &mut self.remaining {
            if batch.num_rows() >= *remaining {
                batch = batch.slice(0, *remaining);
                self.pending = None;
            }
            *remaining -= batch.num_rows();
        }
        Some(Ok(batch))
    }
}

impl<R: Iterator<Item = Result<RecordBatch, ArrowError>>> Iterator for Adapted<R> {
    type Item = Result<RecordBatch, ArrowError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        match self.next_batch() {
            Some(Ok(batch)) => Some(Ok(batch)),
            Some(Err(e)) => {
                self.done = true;
                Some(Err(e.into()))
            }
            None => {
                self.done = true;
                None
            }
        }
    }
}

impl<R: Iterator<Item = Result<RecordBatch, ArrowError>>> RecordBatchReader for Adapted<R> {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }
}

/// Splits a compression option `name[:level]` into its lower-case name and its level.
pub(crate) fn split_compression(spec: &str) -> Result<(String, Option<i32>)> {
    let (name, level) = match spec.split_once(':') {
        Some((name, level)) => {
            let level = level.trim().parse::<i32>().map_err(|_| {
                Error::invalid_argument(format!(
                    "compression level {level:?} in {spec:?} is not a whole number"
                ))
            })?;
            (name, Some(level))
        }
        None => (spec, None),
    };
    Ok((name.trim().to_ascii_lowercase(), level))
}

/// Refuses a compression option for a format that is not compressed.
pub(crate) fn no_compression(format: Format, options: &WriteOptions, path: &Path) -> Result<()> {
    match options.compression.as_deref() {
        None => Ok(()),
        Some(spec) if split_compression(spec)?.0 == "none" => Ok(()),
        Some(spec) => Err(Error::invalid_argument(format!(
            "{format} output is not compressed, so the compression {spec:?} does not apply"
        ))
        .with_file(path)),
    }
}

/// `try_new_to_sink` of the CSV, NDJSON and Parquet writers, written once: each writer's
/// `start(Destination, SchemaRef, &WriteOptions)` does the work for a path and a sink alike.
macro_rules! sink_constructor {
    () => {
        /// Like [`Writer::try_new`], but the output goes into `sink` (a pipe, a socket, a buffer) as
        /// it is written. A failed write may leave part of the output in the sink; errors name
        /// the file [`SINK_NAME`](crate::atomic::SINK_NAME).
        pub fn try_new_to_sink(
            sink: impl std::io::Write + Send + 'static,
            schema: SchemaRef,
            options: &WriteOptions,
        ) -> Result<Writer> {
            Writer::start(crate::atomic::Destination::sink(sink), schema, options)
        }
    };
}
pub(crate) use sink_constructor;

crate::write::record_batch_writer!(parquet::Writer, ipc::Writer, csv::Writer, ndjson::Writer);

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_schema::{DataType, Field};

    fn schema() -> Schema {
        Schema::new(vec![
            Field::new("a", DataType::Int32, true),
            Field::new("b", DataType::Utf8, true),
            Field::new("c", DataType::Float64, true),
        ])
    }

    #[test]
    fn projection_plans_read_in_file_order() {
        let options = ScanOptions {
            projection: Some(vec!["c", "a", "c"].into()),
            ..Default::default()
        };
        let plan = ProjectionPlan::new(&options, &schema(), Path::new("x"))
            .unwrap()
            .unwrap();
        assert_eq!(plan.read, vec![0, 2]);
        assert_eq!(plan.order, Some(vec![1, 0, 1]));

        let options = ScanOptions {
            projection: Some(vec![0usize, 2].into()),
            ..Default::default()
        };
        let plan = ProjectionPlan::new(&options, &schema(), Path::new("x"))
            .unwrap()
            .unwrap();
        assert_eq!(plan.order, None);
    }

    #[test]
    fn unknown_columns_are_usage_errors_naming_the_file() {
        let options = ScanOptions {
            projection: Some(vec!["zz"].into()),
            ..Default::default()
        };
        let err = ProjectionPlan::new(&options, &schema(), Path::new("in.csv")).unwrap_err();
        assert!(err.class().is_usage());
        assert_eq!(err.file(), Some(Path::new("in.csv")));
    }

    /// A write refused for its options names the path it was given (or the sink), and leaves no
    /// file behind, not even a temporary one.
    #[test]
    fn a_refused_write_names_its_output_and_leaves_no_file() {
        let schema = Arc::new(schema());
        let bad = WriteOptions {
            compression: Some("no-such-codec".into()),
            ..Default::default()
        };
        type ToPath = fn(&Path, SchemaRef, &WriteOptions) -> Result<Box<dyn BatchWriter + Send>>;
        type ToSink = fn(SchemaRef, &WriteOptions) -> Result<Box<dyn BatchWriter + Send>>;
        let writers: [(&str, ToPath, ToSink); 5] = [
            (
                "t.csv",
                |p, s, o| Ok(Box::new(csv::Writer::try_new(p, s, o)?)),
                |s, o| {
                    Ok(Box::new(csv::Writer::try_new_to_sink(
                        std::io::sink(),
                        s,
                        o,
                    )?))
                },
            ),
            (
                "t.ndjson",
                |p, s, o| Ok(Box::new(ndjson::Writer::try_new(p, s, o)?)),
                |s, o| {
                    Ok(Box::new(ndjson::Writer::try_new_to_sink(
                        std::io::sink(),
                        s,
                        o,
                    )?))
                },
            ),
            (
                "t.parquet",
                |p, s, o| Ok(Box::new(parquet::Writer::try_new(p, s, o)?)),
                |s, o| {
                    Ok(Box::new(parquet::Writer::try_new_to_sink(
                        std::io::sink(),
                        s,
                        o,
                    )?))
                },
            ),
            (
                "t.arrow",
                |p, s, o| Ok(Box::new(ipc::Writer::try_new_file(p, s, o)?)),
                |s, o| {
                    Ok(Box::new(ipc::Writer::try_new_file_to_sink(
                        std::io::sink(),
                        s,
                        o,
                    )?))
                },
            ),
            (
                "t.arrows",
                |p, s, o| Ok(Box::new(ipc::Writer::try_new_stream(p, s, o)?)),
                |s, o| {
                    Ok(Box::new(ipc::Writer::try_new_stream_to_sink(
                        std::io::sink(),
                        s,
                        o,
                    )?))
                },
            ),
        ];
        for (name, to_path, to_sink) in writers {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join(name);
            let Err(err) = to_path(&path, schema.clone(), &bad) else {
                panic!("{name}: the codec was accepted");
            };
            assert!(err.class().is_usage(), "{name}: {err}");
            assert_eq!(err.file(), Some(path.as_path()), "{name}");
            let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
            assert!(left.is_empty(), "{name}: left {left:?}");

            let Err(err) = to_sink(schema.clone(), &bad) else {
                panic!("{name}: the codec was accepted for a sink");
            };
            assert_eq!(
                err.file(),
                Some(Path::new(crate::atomic::SINK_NAME)),
                "{name}"
            );
        }
    }

    #[test]
    fn compression_specs() {
        assert_eq!(
            split_compression("ZSTD:9").unwrap(),
            ("zstd".to_string(), Some(9))
        );
        assert_eq!(split_compression("lz4").unwrap(), ("lz4".to_string(), None));
        assert!(split_compression("zstd:x").unwrap_err().class().is_usage());
    }
}
