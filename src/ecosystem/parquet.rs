//! Apache Parquet, through the `parquet` crate's Arrow reader and writer: reading and describing
//! a file here, writing it in `parquet/writer.rs`.

use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use ::parquet::arrow::arrow_reader::{ParquetRecordBatchReader, ParquetRecordBatchReaderBuilder};
use ::parquet::arrow::ProjectionMask;
use ::parquet::file::metadata::ParquetMetaData;
use ::parquet::file::reader::{ChunkReader, FileReader, Length, SerializedFileReader};
use arrow_array::{RecordBatch, RecordBatchReader};
use arrow_schema::ArrowError;
use bytes::Bytes;
use serde::Serialize;

use super::object::ObjectChunks;
use super::{Adapted, InFile, ProjectionPlan};
use crate::error::{Error, ErrorClass, Result};
use crate::panic_guard::quietly;
use crate::scan::{FragmentRange, ScanOptions};
use crate::source::ByteSource;

mod footer;
mod writer;

pub use writer::{compression, Writer, DEFAULT_ZSTD_LEVEL};

pub(crate) fn open(
    path: &Path,
    options: &ScanOptions,
) -> Result<Box<dyn RecordBatchReader + Send>> {
    read(EndOfFileIsAnError::open(path)?, path, options, |_, _| {})
}

/// Reads a remote Parquet object: its footer from its tail, then each column chunk the scan
/// needs by range.
pub(crate) fn open_source(
    source: Arc<dyn ByteSource>,
    options: &ScanOptions,
) -> Result<Box<dyn RecordBatchReader + Send>> {
    let name = PathBuf::from(source.location());
    let chunks = ObjectChunks::open(source).in_file(&name)?;
    let ranges = chunks.ranges();
    let file = EndOfFileIsAnError::checked(chunks, &name)?;
    read(file, &name, options, |meta, projection| {
        ranges.set(meta, projection)
    })
}

/// Reads `file`, telling `footer_read` the footer once it is read and checked, and the
/// projection (`None`: every column).
fn read<R: ChunkReader + 'static>(
    file: EndOfFileIsAnError<R>,
    path: &Path,
    options: &ScanOptions,
    footer_read: impl FnOnce(&ParquetMetaData, Option<&ProjectionMask>),
) -> Result<Box<dyn RecordBatchReader + Send>> {
    // The Arrow schema a writer embeds is decoded by arrow-ipc 59, which panics on some
    // malformed ones (an integer of 16,777,216 bits).
    let mut builder = quietly(|| ParquetRecordBatchReaderBuilder::try_new(file))
        .map_err(|why| {
            Error::new(
                ErrorClass::BadMeta,
                format!("the embedded Arrow schema is malformed: {why}"),
            )
            .with_file(path)
        })?
        .in_file(path)?;
    check_chunk_ranges(builder.metadata(), path)?;
    // The built reader's schema (and its batches') lose the schema-level metadata that the
    // embedded Arrow schema carries, e.g. `bcolz.attrs` or `dataseries.xml` of a converted
    // file; put it back so a round trip through Parquet keeps it.
    let file_metadata = builder.schema().metadata().clone();
    let plan = ProjectionPlan::new(options, builder.schema(), path)?;
    let mut order = None;
    let mask = plan.map(|plan| {
        order = plan.order;
        ProjectionMask::roots(builder.parquet_schema(), plan.read)
    });
    footer_read(builder.metadata(), mask.as_ref());
    if let Some(mask) = mask {
        builder = builder.with_projection(mask);
    }
    builder = builder.with_batch_size(super::batch_size(options));
    match options.range {
        None | Some(FragmentRange::Whole) => {}
        Some(FragmentRange::RowGroups { start, end }) => {
            let groups = builder.metadata().num_row_groups() as u64;
            if start > end || end > groups {
                return Err(Error::invalid_argument(format!(
                    "row groups {start}..{end} are not a range of the file's {groups} row groups"
                ))
                .with_file(path));
            }
            builder = builder.with_row_groups((start as usize..end as usize).collect());
        }
        Some(other) => return Err(other.wrong_unit("Parquet", "row groups").with_file(path)),
    }
    if let Some(limit) = options.limit {
        builder = builder.with_limit(limit);
    }
    let reader = builder.build().in_file(path)?;
    let schema = Arc::new(
        reader
            .schema()
            .as_ref()
            .clone()
            .with_metadata(file_metadata),
    );
    let reader = PanicsAsErrors {
        inner: Some(reader),
    };
    Ok(Box::new(Adapted::new(
        reader, schema, path, order, options,
    )?))
}

/// The file as parquet reads it, except that a read at its end is an error rather than the
/// zero bytes that mean the end to `io::copy`.
///
/// parquet 59 skips a page header's binary fields by copying `take(n)` of the file into a sink,
/// which stops quietly at the end of the file and reports success. A header that declares a long
/// list of strings past the end then costs a `read` call for every one of them: a 963-byte file
/// took nine minutes (fuzz finding 16, docs/reliability.md). Every element's length takes at
/// least one byte of the file, so once the end is an error the skipping is bounded by the file.
struct EndOfFileIsAnError<R>(R);

impl EndOfFileIsAnError<File> {
    fn open(path: &Path) -> Result<EndOfFileIsAnError<File>> {
        EndOfFileIsAnError::checked(File::open(path).in_file(path)?, path)
    }
}

impl<R: ChunkReader> EndOfFileIsAnError<R> {
    /// Takes the file once its footer's schema has been checked (see [`footer`]): parquet
    /// would reserve memory for whatever child count a schema element declares.
    fn checked(file: R, path: &Path) -> Result<EndOfFileIsAnError<R>> {
        let len = file.len();
        let tail = if len < 12 {
            None
        } else {
            file.get_bytes(len - 8, 8).ok()
        };
        let Some(tail) = tail.filter(|tail| &tail[4..] == b"PAR1") else {
            return Ok(EndOfFileIsAnError(file));
        };
        let metadata_len = u64::from(u32::from_le_bytes(tail[..4].try_into().expect("4")));
        let Some(start) = (len - 8).checked_sub(metadata_len) else {
            return Ok(EndOfFileIsAnError(file));
        };
        let metadata = file.get_bytes(start, metadata_len as usize).in_file(path)?;
        match footer::check_schema_children(&metadata) {
            Ok(()) => Ok(EndOfFileIsAnError(file)),
            Err(bad) => Err(Error::new(
                ErrorClass::BadMeta,
                format!(
                    "the footer's schema element {} declares {} children, but {} elements \
                     follow it",
                    bad.element, bad.declared, bad.following
                ),
            )
            .with_file(path)
            .at_offset(start)),
        }
    }
}

/// The reader [`EndOfFileIsAnError`] hands out from an offset.
struct EndIsAnError<R>(R);

impl<R: Read> Read for EndIsAnError<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self.0.read(buf)? {
            0 if !buf.is_empty() => Err(std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                "a page header reaches past the end of the file",
            )),
            read => Ok(read),
        }
    }
}

impl<R: ChunkReader> Length for EndOfFileIsAnError<R> {
    fn len(&self) -> u64 {
        self.0.len()
    }
}

impl<R: ChunkReader> ChunkReader for EndOfFileIsAnError<R> {
    type T = EndIsAnError<R::T>;

    fn get_read(&self, start: u64) -> ::parquet::errors::Result<Self::T> {
        self.0.get_read(start).map(EndIsAnError)
    }

    fn get_bytes(&self, start: u64, length: usize) -> ::parquet::errors::Result<Bytes> {
        self.0.get_bytes(start, length)
    }
}

/// parquet 59 panics on some malformed pages where it should return an error: a data page
/// that uses a dictionary its column chunk never gave (`Decoder for dict should have been
/// set`). The pages are only read batch by batch, so they cannot all be checked before the
/// scan; each batch is decoded under `catch_unwind` instead, and a panic becomes a Parquet
/// error (the wrapping reader names the file). The reader ends there: parquet's state after a
/// panic is not to be trusted.
struct PanicsAsErrors {
    inner: Option<ParquetRecordBatchReader>,
}

impl Iterator for PanicsAsErrors {
    type Item = std::result::Result<RecordBatch, ArrowError>;

    fn next(&mut self) -> Option<Self::Item> {
        let inner = self.inner.as_mut()?;
        match quietly(|| inner.next()) {
            Ok(next) => next,
            Err(why) => {
                self.inner = None;
                Some(Err(ArrowError::ParquetError(format!(
                    "a page is malformed: {why}"
                ))))
            }
        }
    }
}

/// Refuses a footer that places a column chunk at a negative offset or gives it a negative
/// length: parquet 59 asserts that neither is negative when it starts reading the chunk, so
/// such a footer would panic in the middle of a scan instead of failing to open.
fn check_chunk_ranges(meta: &ParquetMetaData, path: &Path) -> Result<()> {
    for (group, row_group) in meta.row_groups().iter().enumerate() {
        for chunk in row_group.columns() {
            // The chunk starts at its dictionary page when it has one, as parquet reads it.
            let (start, what) = match chunk.dictionary_page_offset() {
                Some(offset) => (offset, "dictionary page offset"),
                None => (chunk.data_page_offset(), "data page offset"),
            };
            let length = chunk.compressed_size();
            if start < 0 || length < 0 {
                return Err(Error::new(
                    ErrorClass::BadMeta,
                    format!(
                        "row group {group}, column {}: the footer gives the column chunk a {what} of {start} and a compressed size of {length}; neither may be negative",
                        chunk.column_path()
                    ),
                )
                .with_file(path));
            }
        }
    }
    Ok(())
}

/// The structure of a Parquet file, from its footer.
#[derive(Debug, Clone, Serialize)]
pub struct ParquetInfo {
    /// The format version in the footer (1 or 2).
    pub version: i32,
    /// The writer that made the file, as it named itself.
    pub created_by: Option<String>,
    /// Rows of the file.
    pub num_rows: i64,
    /// Number of row groups.
    pub num_row_groups: usize,
    /// The key-value metadata of the footer, by key (the values can be large: the Arrow schema).
    pub metadata_keys: Vec<String>,
    /// Leaf columns, over all row groups.
    pub columns: Vec<ParquetColumn>,
    /// Every row group, in order.
    pub row_groups: Vec<ParquetRowGroup>,
}

/// A leaf column of a Parquet file, summed over its row groups.
#[derive(Debug, Clone, Serialize)]
pub struct ParquetColumn {
    /// The dotted path of the leaf column.
    pub path: String,
    /// Its Parquet physical type (`INT64`, `BYTE_ARRAY`, …).
    pub physical_type: String,
    /// Its logical type annotation, if any.
    pub logical_type: Option<String>,
    /// The codecs of the column's chunks, each once.
    pub compression: Vec<String>,
    /// Compressed bytes over all row groups.
    pub compressed_size: i64,
    /// Uncompressed bytes over all row groups.
    pub uncompressed_size: i64,
}

/// One row group of a Parquet file.
#[derive(Debug, Clone, Serialize)]
pub struct ParquetRowGroup {
    /// Rows in the group.
    pub num_rows: i64,
    /// Uncompressed bytes of the group's data, as the footer gives it.
    pub total_byte_size: i64,
    /// Compressed bytes of the group's column chunks.
    pub compressed_size: i64,
    /// Its column chunks, one per leaf column.
    pub columns: Vec<ParquetChunk>,
}

/// One column chunk of a row group.
#[derive(Debug, Clone, Serialize)]
pub struct ParquetChunk {
    /// The dotted path of its leaf column.
    pub path: String,
    /// Its codec.
    pub compression: String,
    /// Where the chunk starts in the file.
    pub file_offset: i64,
    /// Compressed bytes of the chunk.
    pub compressed_size: i64,
    /// Uncompressed bytes of the chunk.
    pub uncompressed_size: i64,
    /// Values in the chunk, nulls included.
    pub num_values: i64,
    /// The encodings its pages use.
    pub encodings: Vec<String>,
}

/// Reads the footer of a Parquet file.
pub fn describe(path: &Path) -> Result<ParquetInfo> {
    let file = EndOfFileIsAnError::open(path)?;
    let reader = SerializedFileReader::new(file).in_file(path)?;
    Ok(info(reader.metadata()))
}

/// Reads the footer of a remote Parquet object, fetched from its tail.
pub(crate) fn describe_source(source: Arc<dyn ByteSource>) -> Result<ParquetInfo> {
    let name = PathBuf::from(source.location());
    let chunks = ObjectChunks::open(source).in_file(&name)?;
    let file = EndOfFileIsAnError::checked(chunks, &name)?;
    let reader = SerializedFileReader::new(file).in_file(&name)?;
    Ok(info(reader.metadata()))
}

fn info(meta: &ParquetMetaData) -> ParquetInfo {
    let file_meta = meta.file_metadata();
    let schema = file_meta.schema_descr();
    let mut columns: Vec<ParquetColumn> = schema
        .columns()
        .iter()
        .map(|c| ParquetColumn {
            path: c.path().string(),
            physical_type: c.physical_type().to_string(),
            logical_type: c.logical_type_ref().map(|t| format!("{t:?}")),
            compression: Vec::new(),
            compressed_size: 0,
            uncompressed_size: 0,
        })
        .collect();
    let row_groups = meta
        .row_groups()
        .iter()
        .map(|rg| ParquetRowGroup {
            num_rows: rg.num_rows(),
            total_byte_size: rg.total_byte_size(),
            compressed_size: rg.compressed_size(),
            columns: rg
                .columns()
                .iter()
                .enumerate()
                .map(|(i, chunk)| {
                    let codec = format!("{:?}", chunk.compression_codec());
                    if let Some(column) = columns.get_mut(i) {
                        if !column.compression.contains(&codec) {
                            column.compression.push(codec.clone());
                        }
                        column.compressed_size += chunk.compressed_size();
                        column.uncompressed_size += chunk.uncompressed_size();
                    }
                    ParquetChunk {
                        path: chunk.column_path().string(),
                        compression: codec,
                        file_offset: chunk.file_offset(),
                        compressed_size: chunk.compressed_size(),
                        uncompressed_size: chunk.uncompressed_size(),
                        num_values: chunk.num_values(),
                        encodings: chunk.encodings().map(|e| format!("{e:?}")).collect(),
                    }
                })
                .collect(),
        })
        .collect();
    ParquetInfo {
        version: file_meta.version(),
        created_by: file_meta.created_by().map(str::to_owned),
        num_rows: file_meta.num_rows(),
        num_row_groups: meta.num_row_groups(),
        metadata_keys: file_meta
            .key_value_metadata()
            .map(|kv| kv.iter().map(|kv| kv.key.clone()).collect())
            .unwrap_or_default(),
        columns,
        row_groups,
    }
}
