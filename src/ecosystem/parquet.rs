//! Apache Parquet, through the `parquet` crate's Arrow reader and writer.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use ::parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use ::parquet::arrow::{ArrowWriter, ProjectionMask};
use ::parquet::basic::{BrotliLevel, Compression, GzipLevel, ZstdLevel};
use ::parquet::file::metadata::ParquetMetaData;
use ::parquet::file::properties::WriterProperties;
use ::parquet::file::reader::{FileReader, SerializedFileReader};
use arrow_array::{RecordBatch, RecordBatchReader};
use arrow_schema::SchemaRef;
use serde::Serialize;

use super::{Adapted, InFile, ProjectionPlan};
use crate::atomic::AtomicFile;
use crate::error::{Error, ErrorClass, Result};
use crate::options::WriteOptions;
use crate::scan::{FragmentRange, ScanOptions};
use crate::write::{BatchWriter, WriteSummary};

/// The zstd level written when `--compression zstd` names none (zstd's own default).
pub const DEFAULT_ZSTD_LEVEL: i32 = 3;

pub(crate) fn open(
    path: &Path,
    options: &ScanOptions,
) -> Result<Box<dyn RecordBatchReader + Send>> {
    let file = File::open(path).in_file(path)?;
    // The Arrow schema a writer embeds is decoded by arrow-ipc 59, which panics on some
    // malformed ones (an integer of 16,777,216 bits).
    let mut builder = super::ipc::quietly(|| ParquetRecordBatchReaderBuilder::try_new(file))
        .map_err(|why| {
            Error::new(
                ErrorClass::BadMeta,
                format!("the embedded Arrow schema is malformed: {why}"),
            )
            .with_file(path)
        })?
        .in_file(path)?;
    // The built reader's schema (and its batches') lose the schema-level metadata that the
    // embedded Arrow schema carries, e.g. `bcolz.attrs` or `dataseries.xml` of a converted
    // file; put it back so a round trip through Parquet keeps it.
    let file_metadata = builder.schema().metadata().clone();
    let plan = ProjectionPlan::new(options, builder.schema(), path)?;
    let mut order = None;
    if let Some(plan) = plan {
        let mask = ProjectionMask::roots(builder.parquet_schema(), plan.read);
        builder = builder.with_projection(mask);
        order = plan.order;
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
    Ok(Box::new(Adapted::new(
        reader, schema, path, order, options,
    )?))
}

/// The Parquet codec named by a compression option (`zstd` when there is none).
pub fn compression(spec: Option<&str>) -> Result<Compression> {
    let Some(spec) = spec else {
        return zstd(DEFAULT_ZSTD_LEVEL);
    };
    let (name, level) = super::split_compression(spec)?;
    let no_level = |c: Compression| match level {
        None => Ok(c),
        Some(_) => Err(Error::invalid_argument(format!(
            "the {name} codec takes no level: {spec:?}"
        ))),
    };
    let bad_level = |e: ::parquet::errors::ParquetError| {
        Error::invalid_argument(format!("compression {spec:?}: {e}"))
    };
    match name.as_str() {
        "none" | "uncompressed" => no_level(Compression::UNCOMPRESSED),
        "snappy" => no_level(Compression::SNAPPY),
        "lz4" | "lz4_raw" => no_level(Compression::LZ4_RAW),
        "zstd" => zstd(level.unwrap_or(DEFAULT_ZSTD_LEVEL)),
        "gzip" => {
            let level = match level {
                None => GzipLevel::default(),
                Some(l) => u32::try_from(l)
                    .map_err(|_| Error::invalid_argument(format!("compression {spec:?}: the gzip level is 0 to 9")))
                    .and_then(|l| GzipLevel::try_new(l).map_err(bad_level))?,
            };
            Ok(Compression::GZIP(level))
        }
        "brotli" => {
            let level = match level {
                None => BrotliLevel::default(),
                Some(l) => u32::try_from(l)
                    .map_err(|_| Error::invalid_argument(format!("compression {spec:?}: the brotli level is 0 to 11")))
                    .and_then(|l| BrotliLevel::try_new(l).map_err(bad_level))?,
            };
            Ok(Compression::BROTLI(level))
        }
        _ => Err(Error::invalid_argument(format!(
            "unknown Parquet compression {spec:?}; use none, snappy, gzip, lz4, zstd or brotli, with an optional level as zstd:9"
        ))),
    }
}

fn zstd(level: i32) -> Result<Compression> {
    ZstdLevel::try_new(level)
        .map(Compression::ZSTD)
        .map_err(|e| Error::invalid_argument(format!("zstd level {level}: {e}")))
}

/// Writes record batches into a new Parquet file.
pub struct Writer {
    inner: ArrowWriter<AtomicFile>,
    path: PathBuf,
    rows: u64,
}

impl Writer {
    /// Zstd unless `options.compression` says otherwise; `options.row_group_size` rows per row
    /// group (the `parquet` crate's default otherwise).
    pub fn try_new(path: &Path, schema: SchemaRef, options: &WriteOptions) -> Result<Writer> {
        let codec = compression(options.compression.as_deref()).map_err(|e| e.with_file(path))?;
        let mut props = WriterProperties::builder().set_compression(codec);
        match options.row_group_size {
            Some(0) => {
                return Err(
                    Error::invalid_argument("the row group size must be at least 1 row")
                        .with_file(path),
                )
            }
            Some(n) => props = props.set_max_row_group_row_count(Some(n)),
            None => {}
        }
        let file = AtomicFile::create(path)?;
        let inner = ArrowWriter::try_new(file, schema, Some(props.build())).in_file(path)?;
        Ok(Writer {
            inner,
            path: path.to_path_buf(),
            rows: 0,
        })
    }
}

impl BatchWriter for Writer {
    fn write(&mut self, batch: &RecordBatch) -> Result<()> {
        self.inner.write(batch).in_file(&self.path)?;
        self.rows += batch.num_rows() as u64;
        Ok(())
    }

    fn finish(self: Box<Self>) -> Result<WriteSummary> {
        let file = self.inner.into_inner().in_file(&self.path)?;
        file.commit()?;
        Ok(WriteSummary {
            rows: self.rows,
            warnings: Vec::new(),
        })
    }
}

/// The structure of a Parquet file, from its footer.
#[derive(Debug, Clone, Serialize)]
pub struct ParquetInfo {
    pub version: i32,
    pub created_by: Option<String>,
    pub num_rows: i64,
    pub num_row_groups: usize,
    /// The key-value metadata of the footer, by key (the values can be large: the Arrow schema).
    pub metadata_keys: Vec<String>,
    /// Leaf columns, over all row groups.
    pub columns: Vec<ParquetColumn>,
    pub row_groups: Vec<ParquetRowGroup>,
}

#[derive(Debug, Clone, Serialize)]
pub struct ParquetColumn {
    /// The dotted path of the leaf column.
    pub path: String,
    pub physical_type: String,
    pub logical_type: Option<String>,
    /// The codecs of the column's chunks, each once.
    pub compression: Vec<String>,
    pub compressed_size: i64,
    pub uncompressed_size: i64,
}

#[derive(Debug, Clone, Serialize)]
pub struct ParquetRowGroup {
    pub num_rows: i64,
    pub total_byte_size: i64,
    pub compressed_size: i64,
    pub columns: Vec<ParquetChunk>,
}

#[derive(Debug, Clone, Serialize)]
pub struct ParquetChunk {
    pub path: String,
    pub compression: String,
    pub file_offset: i64,
    pub compressed_size: i64,
    pub uncompressed_size: i64,
    pub num_values: i64,
    pub encodings: Vec<String>,
}

/// Reads the footer of a Parquet file.
pub fn describe(path: &Path) -> Result<ParquetInfo> {
    let file = File::open(path).in_file(path)?;
    let reader = SerializedFileReader::new(file).in_file(path)?;
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
