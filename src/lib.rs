//! arrowsmith reads legacy binary data formats straight into Apache Arrow `RecordBatch`es and
//! writes them from Arrow, so that Arrow is the one common representation.
//!
//! Each format has a module with the same shape (`jay`, …): a `ReaderBuilder` whose `build`
//! returns a reader that is both an `Iterator<Item = Result<RecordBatch, ArrowError>>` and a
//! `RecordBatchReader`, a `Writer` with `write(&batch)` and `finish()`, and a `mapping` file that
//! holds the format ↔ Arrow type mapping. [`open`] and [`create`] reach every format through one
//! entry point, choosing the format from the content or the file name.
//!
//! ```no_run
//! use arrowsmith::{jay, ReadOptions};
//!
//! // One format, explicitly:
//! let reader = jay::ReaderBuilder::new()
//!     .with_batch_size(65_536)
//!     .with_projection(["A", "B"])
//!     .build("data/jay/tiny.jay")?;
//! for batch in reader {
//!     println!("{} rows", batch?.num_rows());
//! }
//!
//! // Any format, by detection:
//! let reader = arrowsmith::open("data/jay/tiny.jay", &ReadOptions::default())?;
//! let summary = arrowsmith::write_all(reader, "tiny.parquet", &Default::default())?;
//! println!("wrote {} rows", summary.rows);
//! # Ok::<(), arrowsmith::Error>(())
//! ```

pub mod atomic;
pub mod bcolz;
pub mod dataseries;
pub mod ecosystem;
pub mod error;
pub mod filo;
pub mod format;
pub mod jay;
pub mod sentinel;
pub mod vs;

use std::path::Path;

use arrow_array::{RecordBatch, RecordBatchReader};
use arrow_schema::SchemaRef;

pub use error::{Error, ErrorClass, Result};
pub use format::Format;
pub use sentinel::CollisionPolicy;

/// The default number of rows per batch when the caller does not choose one.
pub const DEFAULT_BATCH_SIZE: usize = 65_536;

/// Which columns to read: by position or by name, in the order wanted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Projection {
    Indices(Vec<usize>),
    Names(Vec<String>),
}

impl Projection {
    /// Resolves the projection against the column names of a file, in the order asked for.
    pub fn resolve<'a>(&self, names: impl IntoIterator<Item = &'a str>) -> Result<Vec<usize>> {
        let names: Vec<&str> = names.into_iter().collect();
        match self {
            Projection::Indices(indices) => {
                for &i in indices {
                    if i >= names.len() {
                        return Err(Error::invalid_argument(format!(
                            "column index {i} is out of range: the data has {} columns",
                            names.len()
                        )));
                    }
                }
                Ok(indices.clone())
            }
            Projection::Names(wanted) => wanted
                .iter()
                .map(|w| {
                    names.iter().position(|n| n == w).ok_or_else(|| {
                        Error::invalid_argument(format!(
                            "no column named {w:?}; the columns are {}",
                            quote_list(&names)
                        ))
                    })
                })
                .collect(),
        }
    }
}

fn quote_list(names: &[&str]) -> String {
    const SHOWN: usize = 20;
    let mut text: Vec<String> = names.iter().take(SHOWN).map(|n| format!("{n:?}")).collect();
    if names.len() > SHOWN {
        text.push(format!("… ({} in all)", names.len()));
    }
    text.join(", ")
}

impl From<Vec<usize>> for Projection {
    fn from(v: Vec<usize>) -> Self {
        Projection::Indices(v)
    }
}
impl<const N: usize> From<[usize; N]> for Projection {
    fn from(v: [usize; N]) -> Self {
        Projection::Indices(v.to_vec())
    }
}
impl From<Vec<String>> for Projection {
    fn from(v: Vec<String>) -> Self {
        Projection::Names(v)
    }
}
impl From<Vec<&str>> for Projection {
    fn from(v: Vec<&str>) -> Self {
        Projection::Names(v.into_iter().map(str::to_owned).collect())
    }
}
impl<const N: usize> From<[&str; N]> for Projection {
    fn from(v: [&str; N]) -> Self {
        Projection::Names(v.iter().map(|s| s.to_string()).collect())
    }
}

/// Options of [`open`], common to every format.
#[derive(Debug, Clone)]
pub struct ReadOptions {
    /// The input format; detected from the content and the name when `None`.
    pub format: Option<Format>,
    pub batch_size: usize,
    pub projection: Option<Projection>,
    /// Read at most this many rows.
    pub limit: Option<usize>,
    /// The element type of a bare Filo vector (`Format::FiloVector`), which its bytes lack.
    pub filo_type: Option<filo::FiloType>,
    /// VS reader options (end-of-file mode, varint order, app_data mode, …).
    pub vs: vs::VsReadOptions,
}

impl Default for ReadOptions {
    fn default() -> Self {
        ReadOptions {
            format: None,
            batch_size: DEFAULT_BATCH_SIZE,
            projection: None,
            limit: None,
            filo_type: None,
            vs: vs::VsReadOptions::default(),
        }
    }
}

/// Options of [`create`], common to every format; each writer takes what applies to it.
#[derive(Debug, Clone, Default)]
pub struct WriteOptions {
    /// The output format; chosen by the file name's extension when `None`.
    pub format: Option<Format>,
    /// Codec name (Parquet: `zstd` (default), `snappy`, `gzip`, `lz4`, `brotli`, `none`;
    /// Arrow IPC: `lz4`, `zstd`, `none`), optionally with a level, as `zstd:9`.
    pub compression: Option<String>,
    /// Rows per Parquet row group.
    pub row_group_size: Option<usize>,
    /// What the writer of a sentinel-based format does with a valid value equal to its sentinel.
    pub sentinel_collisions: CollisionPolicy,
    /// Filo: rows per chunk of a Filo set (default 65,536).
    pub filo_chunk_size: Option<usize>,
    /// Filo: the encoding hint of every column (default: filo's AutoDetect).
    pub filo_hint: Option<filo::Hint>,
    /// Filo: the element type of a bare vector (default: the column's natural type).
    pub filo_type: Option<filo::FiloType>,
    /// VS writer options (`compression` above is parsed as none|gzip|snappy for VS).
    pub vs: vs::VsWriteOptions,
    /// bcolz: layout, chunklen, cparams, null policy, string widths, overwrite.
    pub bcolz: bcolz::WriterOptions,
}

/// What a finished write reports.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WriteSummary {
    pub rows: u64,
    /// Things the writer did that the caller may want to know (a time zone dropped, a key not
    /// written, …). The data was written in spite of them.
    pub warnings: Vec<String>,
}

/// A writer of any format: batches in, a finished file out.
pub trait BatchWriter {
    fn write(&mut self, batch: &RecordBatch) -> Result<()>;
    /// Completes the output. Until this returns `Ok`, no output exists at the target path.
    fn finish(self: Box<Self>) -> Result<WriteSummary>;
}

/// Whether `path` names standard input (`-`), which is read as an Arrow IPC stream.
pub fn is_stdin(path: &Path) -> bool {
    path == Path::new("-")
}

/// Opens any supported input as a stream of record batches. The path `-` is standard input,
/// read as an Arrow IPC stream (what `pyarrow`, Polars' `write_ipc_stream` and DataFusion
/// write to a pipe).
pub fn open(
    path: impl AsRef<Path>,
    options: &ReadOptions,
) -> Result<Box<dyn RecordBatchReader + Send>> {
    let path = path.as_ref();
    let format = match options.format {
        Some(f) => f,
        None => Format::detect(path)?,
    };
    if is_stdin(path) {
        if format != Format::ArrowStream {
            return Err(Error::invalid_argument(format!(
                "standard input (-) is read as an Arrow IPC stream (arrows), not as {}",
                format.name()
            )));
        }
        return ecosystem::ipc::open_stdin_stream(options);
    }
    format.ensure_implemented().map_err(|e| e.with_file(path))?;
    // Every format's ReaderBuilder has the same batch size / projection / limit setters.
    macro_rules! scan {
        ($builder:expr) => {{
            let mut builder = $builder.with_batch_size(options.batch_size);
            if let Some(p) = &options.projection {
                builder = builder.with_projection(p.clone());
            }
            if let Some(limit) = options.limit {
                builder = builder.with_limit(limit);
            }
            Ok(Box::new(builder.build(path)?))
        }};
    }
    match format {
        Format::Jay => scan!(jay::ReaderBuilder::new()),
        Format::DataSeries => scan!(dataseries::ReaderBuilder::new()),
        Format::Bcolz => scan!(bcolz::ReaderBuilder::new()),
        Format::Vs => scan!(vs::ReaderBuilder::new().with_options(options.vs)),
        Format::Filo => scan!(filo::ReaderBuilder::new()),
        Format::FiloVector => {
            let filo_type = options.filo_type.ok_or_else(|| {
                Error::invalid_argument(
                    "a bare Filo vector does not say its element type; give it (--filo-type)",
                )
                .with_file(path)
            })?;
            if options.projection.is_some() {
                return Err(Error::invalid_argument(
                    "a bare Filo vector has one column; it takes no projection",
                )
                .with_file(path));
            }
            let reader =
                filo::VectorReader::open(path, filo_type, options.batch_size, options.limit)?;
            Ok(Box::new(reader))
        }
        other => ecosystem::open(path, other, options),
    }
}

/// Creates a writer of any supported format for batches of `schema`.
pub fn create(
    path: impl AsRef<Path>,
    schema: SchemaRef,
    options: &WriteOptions,
) -> Result<Box<dyn BatchWriter + Send>> {
    let path = path.as_ref();
    let format = match options.format {
        Some(f) => f,
        None => Format::for_output(path)?,
    };
    format.ensure_implemented().map_err(|e| e.with_file(path))?;
    match format {
        Format::Jay => {
            let jay_options =
                jay::WriterOptions::default().with_sentinel_collisions(options.sentinel_collisions);
            Ok(Box::new(jay::Writer::try_new(path, schema, jay_options)?))
        }
        Format::DataSeries => {
            let ds_options =
                dataseries::WriterOptions::from_compression(options.compression.as_deref())
                    .map_err(|e| e.with_file(path))?;
            Ok(Box::new(dataseries::Writer::try_new(
                path, schema, ds_options,
            )?))
        }
        Format::Filo => {
            let mut filo_options = filo::WriterOptions::default()
                .with_hint(options.filo_hint.unwrap_or_default())
                .with_overwrite(true);
            if let Some(rows) = options.filo_chunk_size {
                filo_options = filo_options.with_chunk_size(rows);
            }
            Ok(Box::new(filo::Writer::try_new(path, schema, filo_options)?))
        }
        Format::FiloVector => {
            let encode =
                filo::EncodeOptions::default().with_hint(options.filo_hint.unwrap_or_default());
            Ok(Box::new(filo::VectorWriter::try_new(
                path,
                schema,
                options.filo_type,
                encode,
            )?))
        }
        Format::Vs => {
            let mut vs_options = options.vs.clone();
            if let Some(spec) = &options.compression {
                vs_options.compression = Some(vs::Compression::parse(spec).ok_or_else(|| {
                    Error::invalid_argument(format!(
                        "VS compression {spec:?}: expected none, gzip or snappy"
                    ))
                })?);
            }
            Ok(Box::new(vs::Writer::try_new(path, schema, vs_options)?))
        }
        Format::Bcolz => {
            let mut bcolz_options = options.bcolz.clone();
            if let Some(spec) = &options.compression {
                bcolz_options = bcolz_options.with_compression(spec)?;
            }
            Ok(Box::new(bcolz::Writer::try_new(
                path,
                schema,
                bcolz_options,
            )?))
        }
        other => ecosystem::create(path, other, schema, options),
    }
}

/// Streams every batch of `reader` into a new file at `path`: the library form of
/// `arrowsmith convert`. Works with any `RecordBatchReader`, such as an
/// `arrow::ffi_stream::ArrowArrayStreamReader` built from an Arrow C stream that DataFusion,
/// Polars or pyarrow exported.
pub fn write_all(
    reader: impl RecordBatchReader,
    path: impl AsRef<Path>,
    options: &WriteOptions,
) -> Result<WriteSummary> {
    let mut writer = create(path, reader.schema(), options)?;
    for batch in reader {
        writer.write(&batch?)?;
    }
    writer.finish()
}
