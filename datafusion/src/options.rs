//! [`ArrowsmithOptions`]: the `'format.*'` keys of `CREATE EXTERNAL TABLE … OPTIONS (…)` and
//! `COPY … TO … OPTIONS (…)`, and the bridge from them to the core's readers and writers.
//!
//! The keys are the command line's format options with DataFusion's `format.` prefix and `_`
//! for `-` (`--type` is `'format.type'`, `--filo-chunk-size` is `'format.filo_chunk_size'`);
//! flags take `'true'` or `'false'`. A key DataFusion did not prefix (`OPTIONS (type 'x')`) gets
//! the prefix from DataFusion's SQL planner. Keys of other namespaces (`execution.*`) are
//! DataFusion's and are left to it. An unknown `format.*` key, or one that does not apply to
//! the table's format, is an error that names it.
//!
//! This module is the only one that builds the core's `ReadOptions` / `WriteOptions` or picks a
//! core reader or writer, so a change of the core's option types stays here.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use arrow::array::RecordBatchReader;
use arrow_schema::SchemaRef;
use arrowsmith::bcolz::{self, blosc::Shuffle, NullPolicy};
use arrowsmith::filo::{FiloType, Hint};
use arrowsmith::vs::{AppDataMode, EofMode, VarintOrder};
use arrowsmith::{dataseries, BatchWriter, CollisionPolicy, Format, ReadOptions, WriteOptions};
use datafusion::error::{DataFusionError, Result};

/// Which variable32 fields of a DataSeries file are read as validated Utf8.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Utf8Fields {
    /// `'format.utf8' 'true'`: every one.
    All,
    /// `'format.utf8' 'a,b'`: the named ones.
    Named(Vec<String>),
}

/// Format options of one table or one `COPY`, parsed from `'format.*'` keys; every field is
/// `None` / `false` (the format's default) unless a key set it.
#[derive(Debug, Clone, Default)]
pub struct ArrowsmithOptions {
    /// DataSeries input: the extent type to read (`'format.type'`).
    pub ds_type: Option<String>,
    /// DataSeries input: variable32 fields read as Utf8 (`'format.utf8'`).
    pub utf8: Option<Utf8Fields>,
    /// DataSeries input: skip the adler32, hash and variable32 checks (`'format.no_checks'`).
    pub no_checks: bool,
    /// filo-vector input or output: the element type (`'format.filo_type'`).
    pub filo_type: Option<FiloType>,
    /// VS input: accept a file without its terminal (`'format.lenient_eof'`).
    pub lenient_eof: bool,
    /// VS input: varint byte order (`'format.varint'`: `leb128` or `msb-first`).
    pub varint: Option<VarintOrder>,
    /// VS input: app_data as `json` text or `msgpack` bytes (`'format.app_data'`).
    pub app_data: Option<AppDataMode>,
    /// Output codec, as the command line's `--compression` (`'format.compression'`).
    pub compression: Option<String>,
    /// Parquet output: rows per row group (`'format.row_group_size'`).
    pub row_group_size: Option<usize>,
    /// Jay output: a valid value equal to a sentinel is written as NA
    /// (`'format.sentinel_collisions_as_na'`).
    pub sentinel_collisions_as_na: bool,
    /// Filo output: rows per chunk (`'format.filo_chunk_size'`).
    pub filo_chunk_size: Option<usize>,
    /// Filo output: encoding hint (`'format.filo_encoding'`).
    pub filo_encoding: Option<Hint>,
    /// bcolz output: nulls of float and temporal columns as NaN / NaT
    /// (`'format.bcolz_nulls_as_nan'`).
    pub bcolz_nulls_as_nan: bool,
    /// bcolz output: rows per chunk (`'format.bcolz_chunklen'`).
    pub bcolz_chunklen: Option<u64>,
    /// bcolz output: shuffle 0, 1 or 2 (`'format.bcolz_shuffle'`).
    pub bcolz_shuffle: Option<u8>,
    /// bcolz output: a carray instead of a ctable (`'format.bcolz_carray'`).
    pub bcolz_carray: bool,
    /// bcolz output: skip the flush before the rename (`'format.bcolz_no_sync'`).
    pub bcolz_no_sync: bool,
    /// bcolz output: replace an existing directory (`'format.overwrite'`).
    pub overwrite: bool,
    /// DataSeries output: compression level 1..9 (`'format.compress_level'`).
    pub compress_level: Option<u32>,
    /// DataSeries output: target uncompressed bytes per extent (`'format.extent_size'`).
    pub extent_size: Option<usize>,
    /// DataSeries output: the type name (`'format.type_name'`).
    pub type_name: Option<String>,
    /// DataSeries output: a file holding the ExtentType XML to store (`'format.xml'`).
    pub xml: Option<PathBuf>,
}

/// Every key, and the formats it applies to (reading or writing).
const KEYS: &[(&str, &[Format])] = &[
    ("type", &[Format::DataSeries]),
    ("utf8", &[Format::DataSeries]),
    ("no_checks", &[Format::DataSeries]),
    ("filo_type", &[Format::FiloVector]),
    ("lenient_eof", &[Format::Vs]),
    ("varint", &[Format::Vs]),
    ("app_data", &[Format::Vs]),
    (
        "compression",
        &[
            Format::Parquet,
            Format::Arrow,
            Format::ArrowStream,
            Format::DataSeries,
            Format::Vs,
            Format::Bcolz,
        ],
    ),
    ("row_group_size", &[Format::Parquet]),
    ("sentinel_collisions_as_na", &[Format::Jay]),
    ("filo_chunk_size", &[Format::Filo]),
    ("filo_encoding", &[Format::Filo, Format::FiloVector]),
    ("bcolz_nulls_as_nan", &[Format::Bcolz]),
    ("bcolz_chunklen", &[Format::Bcolz]),
    ("bcolz_shuffle", &[Format::Bcolz]),
    ("bcolz_carray", &[Format::Bcolz]),
    ("bcolz_no_sync", &[Format::Bcolz]),
    ("overwrite", &[Format::Bcolz]),
    ("compress_level", &[Format::DataSeries]),
    ("extent_size", &[Format::DataSeries]),
    ("type_name", &[Format::DataSeries]),
    ("xml", &[Format::DataSeries]),
];

impl ArrowsmithOptions {
    /// Parses the `'format.*'` keys of `options` for a table or output of `format`, ignoring
    /// other namespaces. Unknown keys, keys of another format and bad values are errors.
    pub fn from_map(options: &HashMap<String, String>, format: Format) -> Result<Self> {
        let mut parsed = ArrowsmithOptions::default();
        let mut unknown = Vec::new();
        let mut sorted: Vec<_> = options.iter().collect();
        sorted.sort();
        for (key, value) in sorted {
            let Some(name) = key.strip_prefix("format.") else {
                continue;
            };
            let name = name.replace('-', "_");
            match KEYS.iter().find(|(known, _)| *known == name) {
                None => unknown.push(key.clone()),
                Some((_, formats)) if !formats.contains(&format) => {
                    let names: Vec<_> = formats.iter().map(|f| f.name()).collect();
                    return Err(config_error(format!(
                        "option '{key}' applies to {}, not to {format}",
                        names.join(", ")
                    )));
                }
                Some(_) => parsed
                    .set(&name, value)
                    .map_err(|why| config_error(format!("option '{key}' = '{value}': {why}")))?,
            }
        }
        if !unknown.is_empty() {
            let known: Vec<_> = KEYS.iter().map(|(k, _)| format!("format.{k}")).collect();
            return Err(config_error(format!(
                "unknown option{} {}; the arrowsmith options are {}",
                if unknown.len() == 1 { "" } else { "s" },
                unknown
                    .iter()
                    .map(|k| format!("'{k}'"))
                    .collect::<Vec<_>>()
                    .join(", "),
                known.join(", ")
            )));
        }
        Ok(parsed)
    }

    fn set(&mut self, name: &str, value: &str) -> std::result::Result<(), String> {
        match name {
            "type" => self.ds_type = Some(value.to_owned()),
            "utf8" => {
                self.utf8 = match value.trim() {
                    "true" | "" => Some(Utf8Fields::All),
                    "false" => None,
                    names => Some(Utf8Fields::Named(
                        names.split(',').map(|n| n.trim().to_owned()).collect(),
                    )),
                }
            }
            "no_checks" => self.no_checks = flag(value)?,
            "filo_type" => self.filo_type = Some(value.parse().map_err(core_message)?),
            "lenient_eof" => self.lenient_eof = flag(value)?,
            "varint" => {
                self.varint = Some(match value {
                    "leb128" => VarintOrder::Leb128,
                    "msb-first" | "msb_first" => VarintOrder::MsbFirst,
                    _ => return Err("expected leb128 or msb-first".into()),
                })
            }
            "app_data" => {
                self.app_data = Some(match value {
                    "json" => AppDataMode::Json,
                    "msgpack" => AppDataMode::Msgpack,
                    _ => return Err("expected json or msgpack".into()),
                })
            }
            "compression" => self.compression = Some(value.to_owned()),
            "row_group_size" => self.row_group_size = Some(positive(value)?),
            "sentinel_collisions_as_na" => self.sentinel_collisions_as_na = flag(value)?,
            "filo_chunk_size" => self.filo_chunk_size = Some(positive(value)?),
            "filo_encoding" => self.filo_encoding = Some(value.parse().map_err(core_message)?),
            "bcolz_nulls_as_nan" => self.bcolz_nulls_as_nan = flag(value)?,
            "bcolz_chunklen" => self.bcolz_chunklen = Some(positive(value)? as u64),
            "bcolz_shuffle" => {
                self.bcolz_shuffle = Some(match value {
                    "0" => 0,
                    "1" => 1,
                    "2" => 2,
                    _ => return Err("expected 0 (none), 1 (byte) or 2 (bit)".into()),
                })
            }
            "bcolz_carray" => self.bcolz_carray = flag(value)?,
            "bcolz_no_sync" => self.bcolz_no_sync = flag(value)?,
            "overwrite" => self.overwrite = flag(value)?,
            "compress_level" => {
                self.compress_level = Some(value.parse().map_err(|_| "expected 1 to 9")?)
            }
            "extent_size" => self.extent_size = Some(positive(value)?),
            "type_name" => self.type_name = Some(value.to_owned()),
            "xml" => self.xml = Some(PathBuf::from(value)),
            other => return Err(format!("no such option {other}")),
        }
        Ok(())
    }

    /// Opens `path` with the core reader of `format`, reading what `scan` asks for.
    pub(crate) fn open(
        &self,
        path: &Path,
        format: Format,
        scan: &Scan,
    ) -> arrowsmith::Result<Box<dyn RecordBatchReader + Send>> {
        let read = self.read_options(format, scan);
        if format != Format::DataSeries {
            return arrowsmith::open(path, &read);
        }
        // The DataSeries options are not in the core's `ReadOptions` (yet): the builder takes them.
        let mut builder = dataseries::ReaderBuilder::new()
            .with_batch_size(read.batch_size)
            .with_checks(!self.no_checks);
        if let Some(projection) = read.projection {
            builder = builder.with_projection(projection);
        }
        if let Some(limit) = read.limit {
            builder = builder.with_limit(limit);
        }
        if let Some(name) = &self.ds_type {
            builder = builder.with_type(name.clone());
        }
        match &self.utf8 {
            Some(Utf8Fields::All) => builder = builder.with_utf8_all(),
            Some(Utf8Fields::Named(names)) => builder = builder.with_utf8(names.iter().cloned()),
            None => {}
        }
        Ok(Box::new(builder.build(path)?))
    }

    fn read_options(&self, format: Format, scan: &Scan) -> ReadOptions {
        let mut vs = arrowsmith::vs::VsReadOptions::default();
        if self.lenient_eof {
            vs.parse.eof = EofMode::Lenient;
        }
        if let Some(order) = self.varint {
            vs.parse.varint = order;
        }
        if let Some(mode) = self.app_data {
            vs.app_data = mode;
        }
        ReadOptions {
            format: Some(format),
            batch_size: scan.batch_size.unwrap_or(arrowsmith::DEFAULT_BATCH_SIZE),
            projection: scan.projection.clone().map(arrowsmith::Projection::Indices),
            limit: scan.limit,
            filo_type: self.filo_type,
            vs,
        }
    }

    /// Creates the core writer of `format` at `path`: nothing is there until its `finish`.
    pub(crate) fn create(
        &self,
        path: &Path,
        format: Format,
        schema: SchemaRef,
    ) -> arrowsmith::Result<Box<dyn BatchWriter + Send>> {
        let write = self.write_options(format)?;
        if format != Format::DataSeries {
            return arrowsmith::create(path, schema, &write);
        }
        let mut ds = dataseries::WriterOptions::from_compression(write.compression.as_deref())?;
        if let Some(level) = self.compress_level {
            ds = ds.with_level(level);
        }
        if let Some(bytes) = self.extent_size {
            ds = ds.with_extent_size(bytes);
        }
        if let Some(name) = &self.type_name {
            ds = ds.with_type_name(name.clone());
        }
        if let Some(xml) = &self.xml {
            let text = std::fs::read_to_string(xml)
                .map_err(|e| arrowsmith::Error::from(e).with_file(xml))?;
            ds = ds.with_extent_type_xml(text);
        }
        Ok(Box::new(dataseries::Writer::try_new(path, schema, ds)?))
    }

    fn write_options(&self, format: Format) -> arrowsmith::Result<WriteOptions> {
        let mut bcolz = bcolz::WriterOptions::default().with_overwrite(self.overwrite);
        if self.bcolz_nulls_as_nan {
            bcolz = bcolz.with_null_policy(NullPolicy::Sentinel);
        }
        if let Some(rows) = self.bcolz_chunklen {
            bcolz = bcolz.with_chunklen(rows);
        }
        if let Some(code) = self.bcolz_shuffle {
            bcolz = bcolz.with_shuffle(Shuffle::from_code(code as i64).unwrap_or_default());
        }
        if self.bcolz_carray {
            bcolz = bcolz.with_kind(bcolz::Kind::Carray);
        }
        if self.bcolz_no_sync {
            bcolz = bcolz.with_durable(false);
        }
        Ok(WriteOptions {
            format: Some(format),
            compression: self.compression.clone(),
            row_group_size: self.row_group_size,
            sentinel_collisions: if self.sentinel_collisions_as_na {
                CollisionPolicy::AsNull
            } else {
                CollisionPolicy::default()
            },
            filo_chunk_size: self.filo_chunk_size,
            filo_hint: self.filo_encoding,
            filo_type: self.filo_type,
            vs: Default::default(),
            bcolz,
        })
    }

    /// The rows of the table `path` holds, when its metadata says so without decoding data.
    pub(crate) fn known_rows(&self, path: &Path, format: Format) -> Option<u64> {
        match format {
            Format::Jay => arrowsmith::jay::JayFile::open(path)
                .ok()
                .map(|f| f.info().nrows),
            Format::DataSeries => {
                let file = dataseries::DsFile::open(path, Default::default()).ok()?;
                let chosen = dataseries::choose_type(&file, self.ds_type.as_deref()).ok()?;
                Some(file.rows_of(&chosen.name))
            }
            Format::Bcolz => bcolz::open_info(path).ok().map(|i| i.nrows),
            Format::Filo => arrowsmith::filo::SetInfo::open(path).ok().map(|i| i.rows()),
            _ => None,
        }
    }
}

/// What one scan reads: the core readers' batch size, projection (file column indices) and
/// row limit.
#[derive(Debug, Clone, Default)]
pub(crate) struct Scan {
    pub batch_size: Option<usize>,
    pub projection: Option<Vec<usize>>,
    pub limit: Option<usize>,
}

fn flag(value: &str) -> std::result::Result<bool, String> {
    match value.trim().to_ascii_lowercase().as_str() {
        "true" | "1" | "yes" | "" => Ok(true),
        "false" | "0" | "no" => Ok(false),
        _ => Err("expected true or false".into()),
    }
}

fn positive(value: &str) -> std::result::Result<usize, String> {
    match value.trim().parse::<usize>() {
        Ok(0) => Err("must be at least 1".into()),
        Ok(n) => Ok(n),
        Err(e) => Err(e.to_string()),
    }
}

fn core_message(e: arrowsmith::Error) -> String {
    e.message().to_owned()
}

fn config_error(message: String) -> DataFusionError {
    DataFusionError::Configuration(message)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(pairs: &[(&str, &str)]) -> HashMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn test_format_keys_become_reader_options() {
        let options = ArrowsmithOptions::from_map(
            &map(&[
                ("format.type", "Trace::NFS::common"),
                ("format.utf8", "a,b"),
                ("format.no_checks", "true"),
                ("execution.keep_partition_by_columns", "true"),
            ]),
            Format::DataSeries,
        )
        .unwrap();
        assert_eq!(options.ds_type.as_deref(), Some("Trace::NFS::common"));
        assert_eq!(
            options.utf8,
            Some(Utf8Fields::Named(vec!["a".into(), "b".into()]))
        );
        assert!(options.no_checks);
    }

    #[test]
    fn test_unknown_keys_are_named_in_the_error() {
        let e = ArrowsmithOptions::from_map(
            &map(&[("format.nope", "1"), ("format.also_nope", "2")]),
            Format::Jay,
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("'format.also_nope', 'format.nope'"), "{e}");
    }

    #[test]
    fn test_a_key_of_another_format_is_refused() {
        let e = ArrowsmithOptions::from_map(&map(&[("format.type", "x")]), Format::Jay)
            .unwrap_err()
            .to_string();
        assert!(e.contains("applies to dataseries, not to jay"), "{e}");
    }

    #[test]
    fn test_bad_values_say_what_was_expected() {
        let e = ArrowsmithOptions::from_map(&map(&[("format.bcolz_shuffle", "7")]), Format::Bcolz)
            .unwrap_err()
            .to_string();
        assert!(e.contains("expected 0 (none), 1 (byte) or 2 (bit)"), "{e}");
    }
}
