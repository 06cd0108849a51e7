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
use std::path::Path;

use arrow_schema::SchemaRef;
use arrowsmith::bcolz::{self, blosc::Shuffle, NullPolicy};
use arrowsmith::dataseries::Utf8Fields;
use arrowsmith::filo::FiloType;
use arrowsmith::vs::{AppDataMode, EofMode, VarintOrder};
use arrowsmith::{
    BatchWriter, CollisionPolicy, Format, FormatOptions, Projection, ReadOptions, ScanOptions,
    WriteOptions,
};
use datafusion::error::{DataFusionError, Result};

/// Format options of one table or one `COPY`, parsed from `'format.*'` keys: the core's own
/// option values, at their defaults unless a key set them.
#[derive(Debug, Clone, Default)]
pub struct ArrowsmithOptions {
    /// Reading: the DataSeries extent type, Utf8 fields and checks (`'format.type'`,
    /// `'format.utf8'`, `'format.no_checks'`), the VS end-of-file mode, varint order and
    /// app_data mode (`'format.lenient_eof'`, `'format.varint'`, `'format.app_data'`), the
    /// element type of a bare Filo vector (`'format.filo_type'`).
    pub read: FormatOptions,
    /// Writing: codec, Parquet row groups, Jay sentinel collisions, Filo chunks and encoding,
    /// bcolz layout, DataSeries level, extent size, type name and XML.
    pub write: WriteOptions,
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
    ("no_sync", &Format::ALL),
    ("sentinel_collisions_as_na", &[Format::Jay]),
    ("filo_chunk_size", &[Format::Filo]),
    ("filo_encoding", &[Format::Filo, Format::FiloVector]),
    ("bcolz_nulls_as_nan", &[Format::Bcolz]),
    ("bcolz_chunklen", &[Format::Bcolz]),
    ("bcolz_shuffle", &[Format::Bcolz]),
    ("bcolz_carray", &[Format::Bcolz]),
    ("bcolz_no_sync", &[Format::Bcolz]),
    ("overwrite", &Format::ALL),
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
        let read = &mut self.read;
        let write = &mut self.write;
        match name {
            "type" => read.dataseries.type_name = Some(value.to_owned()),
            "utf8" => {
                read.dataseries.utf8 = match value.trim() {
                    "true" | "" => Utf8Fields::All,
                    "false" => Utf8Fields::Hinted,
                    names => {
                        Utf8Fields::Named(names.split(',').map(|n| n.trim().to_owned()).collect())
                    }
                }
            }
            "no_checks" => read.dataseries.no_checks = flag(value)?,
            "filo_type" => {
                let filo_type: FiloType = value.parse().map_err(core_message)?;
                read.filo_type = Some(filo_type);
                write.filo_type = Some(filo_type);
            }
            "lenient_eof" => {
                read.vs.parse.eof = if flag(value)? {
                    EofMode::Lenient
                } else {
                    EofMode::default()
                }
            }
            "varint" => {
                read.vs.parse.varint = match value {
                    "leb128" => VarintOrder::Leb128,
                    "msb-first" | "msb_first" => VarintOrder::MsbFirst,
                    _ => return Err("expected leb128 or msb-first".into()),
                }
            }
            "app_data" => {
                read.vs.app_data = match value {
                    "json" => AppDataMode::Json,
                    "msgpack" => AppDataMode::Msgpack,
                    _ => return Err("expected json or msgpack".into()),
                }
            }
            "compression" => write.compression = Some(value.to_owned()),
            "row_group_size" => write.row_group_size = Some(positive(value)?),
            "no_sync" => write.durable = !flag(value)?,
            "sentinel_collisions_as_na" => {
                write.sentinel_collisions = if flag(value)? {
                    CollisionPolicy::AsNull
                } else {
                    CollisionPolicy::default()
                }
            }
            "filo_chunk_size" => write.filo_chunk_size = Some(positive(value)?),
            "filo_encoding" => write.filo_hint = Some(value.parse().map_err(core_message)?),
            "bcolz_nulls_as_nan" => {
                let policy = if flag(value)? {
                    NullPolicy::Sentinel
                } else {
                    NullPolicy::default()
                };
                write.bcolz = write.bcolz.clone().with_null_policy(policy);
            }
            "bcolz_chunklen" => {
                write.bcolz = write.bcolz.clone().with_chunklen(positive(value)? as u64)
            }
            "bcolz_shuffle" => {
                let shuffle = match value {
                    "0" | "1" | "2" => Shuffle::from_code(value.parse().unwrap_or(1)),
                    _ => None,
                }
                .ok_or("expected 0 (none), 1 (byte) or 2 (bit)")?;
                write.bcolz = write.bcolz.clone().with_shuffle(shuffle);
            }
            "bcolz_carray" => {
                if flag(value)? {
                    write.bcolz = write.bcolz.clone().with_kind(bcolz::Kind::Carray);
                }
            }
            "bcolz_no_sync" => write.bcolz = write.bcolz.clone().with_durable(!flag(value)?),
            "overwrite" => write.overwrite = flag(value)?,
            "compress_level" => {
                write.dataseries.level = Some(match value.trim().parse() {
                    Ok(level @ 1..=9) => level,
                    _ => return Err("expected 1 to 9".into()),
                })
            }
            "extent_size" => write.dataseries.extent_size = Some(positive(value)?),
            "type_name" => write.dataseries.type_name = Some(value.to_owned()),
            "xml" => {
                let text = std::fs::read_to_string(value)
                    .map_err(|e| format!("cannot read the ExtentType XML: {e}"))?;
                write.dataseries.xml = Some(text);
            }
            other => return Err(format!("no such option {other}")),
        }
        Ok(())
    }

    pub(crate) fn read_options(&self, format: Format, scan: &Scan) -> ReadOptions {
        ReadOptions {
            format: Some(format),
            scan: ScanOptions {
                batch_size: scan.batch_size,
                projection: scan.projection.clone().map(Projection::Indices),
                limit: scan.limit,
                ..Default::default()
            },
            format_options: self.read.clone(),
        }
    }

    /// Creates the core writer of `format` at `path`: nothing is there until its `finish`.
    pub(crate) fn create(
        &self,
        path: &Path,
        format: Format,
        schema: SchemaRef,
    ) -> arrowsmith::Result<Box<dyn BatchWriter + Send>> {
        let write = WriteOptions {
            format: Some(format),
            ..self.write.clone()
        };
        arrowsmith::create(path, schema, &write)
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
        let ds = &options.read.dataseries;
        assert_eq!(ds.type_name.as_deref(), Some("Trace::NFS::common"));
        assert_eq!(ds.utf8, Utf8Fields::Named(vec!["a".into(), "b".into()]));
        assert!(ds.no_checks);
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
