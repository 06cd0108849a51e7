//! [`ArrowsmithOptions`]: the `'format.*'` keys of `CREATE EXTERNAL TABLE … OPTIONS (…)` and
//! `COPY … TO … OPTIONS (…)`, and the bridge from them to the core's readers and writers.
//!
//! The keys are the core's settings ([`arrowsmith::SETTINGS`], docs/settings.md) with
//! DataFusion's `format.` prefix (`'format.bcolz_chunklen'` sets `bcolz_chunklen`); `-` is
//! read as `_`, flags take `'true'` or `'false'`, and `'format.type_name'` is the older
//! spelling of the write key `type`. The scan's own settings (`format`, `columns`, `limit`,
//! `batch_size`, `salvage`) come from the statement, not from keys. A key DataFusion did not
//! prefix (`OPTIONS (type 'x')`) gets the prefix from DataFusion's SQL planner. Keys of other
//! namespaces (`execution.*`) are DataFusion's and are left to it. An unknown `format.*` key,
//! or one that does not apply to the table's format, is an error that names it.
//!
//! The settings of remote storage are spelled as datafusion-cli spells them, `'aws.*'`,
//! `'gcp.*'` and `'azure.*'` ([`storage_key`]), and kept as object_store's own keys in
//! [`ArrowsmithOptions::storage`]; their values hold credentials, so nothing here shows them
//! (not an error, not `Debug`).
//!
//! This module is the only one that builds the core's `ReadOptions` / `WriteOptions` or picks a
//! core reader or writer, so a change of the core's option types stays here.

use std::collections::HashMap;
use std::path::Path;

use arrow_schema::SchemaRef;
use arrowsmith::options;
use arrowsmith::source::{is_url, registered_storage, StorageOptions};
use arrowsmith::{
    BatchWriter, Format, FormatOptions, Projection, ReadOptions, ScanOptions, WriteOptions,
};
use datafusion::error::{DataFusionError, Result};

use crate::stores::SessionStorage;

/// Format options of one table or one `COPY`, parsed from `'format.*'` keys: the core's own
/// option values, at their defaults unless a key set them.
///
/// Build it with [`default`](Default::default) or [`from_map`](Self::from_map) and set its
/// public fields; it also carries what the session registered for its stores, which only a
/// session's format factory sets, so it has no struct literal outside this crate.
///
/// ```
/// use arrowsmith_datafusion::ArrowsmithOptions;
///
/// let mut options = ArrowsmithOptions::default();
/// options.write.jay = arrowsmith::jay::WriterOptions::default()
///     .with_sentinel_collisions(arrowsmith::CollisionPolicy::AsNull);
/// ```
#[derive(Debug, Clone, Default)]
pub struct ArrowsmithOptions {
    /// Reading: every read setting but the scan's (the DataSeries extent type, the VS
    /// end-of-file mode, the bcolz read-ahead, …).
    pub read: FormatOptions,
    /// Writing: codec, Parquet row groups, Jay sentinel collisions, Filo chunks and encoding,
    /// bcolz layout, DataSeries level, extent size, type and XML, the write mode.
    pub write: WriteOptions,
    /// Remote storage: object_store's keys (`aws_access_key_id`, …), from the `'aws.*'`,
    /// `'gcp.*'` and `'azure.*'` keys. `Debug` shows the keys, never the values.
    pub storage: StorageOptions,
    /// The storage settings the session's stores were registered with
    /// ([`register_object_store`](crate::register_object_store)), by store URL: an object is
    /// read or written with its store's when `storage` is empty. The session's format factory
    /// sets them.
    pub(crate) session_storage: SessionStorage,
}

/// The core settings a statement gives otherwise than by a `'format.*'` key.
pub const NOT_KEYS: &[&str] = &["format", "columns", "limit", "batch_size", "salvage"];

/// The `'format.*'` spellings that name a core key by another name.
const ALIASES: &[(&str, &str)] = &[("type_name", "type")];

/// The core key of the SQL key `name` (without its `format.` prefix), if it has one.
pub fn core_key(name: &str) -> Option<&'static str> {
    let name = name.replace('-', "_");
    let name = ALIASES
        .iter()
        .find(|(alias, _)| *alias == name)
        .map_or(name.as_str(), |(_, key)| key);
    options::SETTINGS
        .iter()
        .map(|s| s.key)
        .find(|key| *key == name && !NOT_KEYS.contains(key))
}

/// Every `'format.*'` key, core keys then aliases, without duplicates.
pub fn sql_keys() -> Vec<String> {
    let mut keys: Vec<String> = Vec::new();
    for setting in options::SETTINGS {
        let key = format!("format.{}", setting.key);
        if !NOT_KEYS.contains(&setting.key) && !keys.contains(&key) {
            keys.push(key);
        }
    }
    keys.extend(ALIASES.iter().map(|(alias, _)| format!("format.{alias}")));
    keys
}

/// datafusion-cli's spellings that are not `<namespace>_<key>` in object_store.
const STORAGE_ALIASES: &[(&str, &str)] = &[
    ("aws.endpoint", "aws_endpoint_url"),
    ("aws.oss", "aws_endpoint_url"),
    ("aws.cos", "aws_endpoint_url"),
    ("gcp.service_account_path", "google_service_account"),
    (
        "gcp.application_credentials_path",
        "google_application_credentials",
    ),
];

/// The object_store key of a storage setting as SQL spells it, as datafusion-cli does:
/// `'aws.X'` is `aws_X`, `'gcp.X'` is `google_X`, `'azure.X'` is `azure_X` (with `-` read as
/// `_`, and datafusion-cli's `'aws.endpoint'` and `'gcp.application_credentials_path'`);
/// `None` for a key of another namespace.
pub fn storage_key(sql_key: &str) -> Option<String> {
    let key = sql_key.to_ascii_lowercase().replace('-', "_");
    if let Some((_, core)) = STORAGE_ALIASES.iter().find(|(alias, _)| *alias == key) {
        return Some((*core).to_owned());
    }
    let (namespace, name) = key.split_once('.')?;
    let prefix = match namespace {
        "aws" => "aws",
        "gcp" => "google",
        "azure" => "azure",
        _ => return None,
    };
    (!name.is_empty()).then(|| format!("{prefix}_{name}"))
}

/// An error of the core about a setting, naming it as SQL spells it.
fn sql_error(e: arrowsmith::Error) -> DataFusionError {
    config_error(e.to_string_spelled(|key, _| format!("'format.{key}'")))
}

impl ArrowsmithOptions {
    /// Parses the `'format.*'` keys of `options` for a table or output of `format`, ignoring
    /// other namespaces. Unknown keys, keys of another format and bad values are errors.
    pub fn from_map(options: &HashMap<String, String>, format: Format) -> Result<Self> {
        let mut parsed = ArrowsmithOptions::default();
        let mut unknown = Vec::new();
        let mut sorted: Vec<_> = options.iter().collect();
        sorted.sort();
        for (key, value) in sorted {
            if let Some(storage) = storage_key(key) {
                parsed.storage.set(&storage, value);
                continue;
            }
            let Some(name) = key.strip_prefix("format.") else {
                continue;
            };
            match core_key(name) {
                None => unknown.push(key.clone()),
                Some(core) => parsed.set(core, value, format).map_err(sql_error)?,
            }
        }
        if !unknown.is_empty() {
            return Err(config_error(format!(
                "unknown option{} {}; the arrowsmith options are {}",
                if unknown.len() == 1 { "" } else { "s" },
                unknown
                    .iter()
                    .map(|k| format!("'{k}'"))
                    .collect::<Vec<_>>()
                    .join(", "),
                sql_keys().join(", ")
            )));
        }
        Ok(parsed)
    }

    /// Sets the core key `key` on the read side, the write side or both, as the core's table
    /// has it; it must apply to `format` on one of them.
    fn set(&mut self, key: &str, value: &str, format: Format) -> arrowsmith::Result<()> {
        let mut read = ReadOptions {
            format: Some(format),
            format_options: std::mem::take(&mut self.read),
            ..Default::default()
        };
        let unset_format = self.write.format.replace(format);
        let set = options::set_either(&mut read, &mut self.write, key, value);
        self.read = read.format_options;
        self.write.format = unset_format;
        set
    }

    /// The storage settings `path` is read or written with: the table's own, or else those
    /// its store was registered with.
    fn storage_for(&self, path: &Path) -> StorageOptions {
        match self.session_storage.for_path(path) {
            Some(registered) if self.storage.is_empty() => registered.clone(),
            _ => self.storage.clone(),
        }
    }

    /// The core's read options of `path` as `format` with `scan`.
    pub(crate) fn read_options(&self, path: &Path, format: Format, scan: &Scan) -> ReadOptions {
        ReadOptions {
            format: Some(format),
            scan: ScanOptions {
                batch_size: scan.batch_size,
                projection: scan.projection.clone().map(Projection::Indices),
                limit: scan.limit,
                ..Default::default()
            },
            format_options: self.read.clone(),
            storage: self.storage_for(path),
        }
    }

    /// Creates the core writer of `format` at `path`, a local path or a URL: nothing is
    /// there until its `finish`.
    pub(crate) fn create(
        &self,
        path: &Path,
        format: Format,
        schema: SchemaRef,
    ) -> arrowsmith::Result<Box<dyn BatchWriter + Send>> {
        let write = WriteOptions {
            format: Some(format),
            storage: self.storage_for(path),
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

/// A URL is read and written through the process's registered storage: without one, the
/// core's error saying so, before anything touches the file system.
pub(crate) fn check_remote(path: &Path) -> arrowsmith::Result<()> {
    if is_url(path) {
        registered_storage(&path.to_string_lossy())?;
    }
    Ok(())
}

fn config_error(message: String) -> DataFusionError {
    DataFusionError::Configuration(message)
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrowsmith::dataseries::Utf8Fields;

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
        assert!(
            e.contains("'format.type' applies to dataseries input, not jay"),
            "{e}"
        );
    }

    #[test]
    fn test_bad_values_say_what_was_expected() {
        let e = ArrowsmithOptions::from_map(&map(&[("format.bcolz_shuffle", "7")]), Format::Bcolz)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("'format.bcolz_shuffle': expected 0 (none), 1 (byte) or 2 (bit)"),
            "{e}"
        );
    }

    #[test]
    fn test_storage_keys_are_spelled_as_datafusion_cli_spells_them() {
        let cases = [
            ("aws.access_key_id", Some("aws_access_key_id")),
            ("aws.secret_access_key", Some("aws_secret_access_key")),
            ("aws.session_token", Some("aws_session_token")),
            ("aws.region", Some("aws_region")),
            ("aws.endpoint", Some("aws_endpoint_url")),
            ("aws.allow_http", Some("aws_allow_http")),
            ("gcp.service_account_path", Some("google_service_account")),
            (
                "gcp.service_account_key",
                Some("google_service_account_key"),
            ),
            (
                "gcp.application_credentials_path",
                Some("google_application_credentials"),
            ),
            (
                "azure.storage_account_name",
                Some("azure_storage_account_name"),
            ),
            ("azure.allow-http", Some("azure_allow_http")),
            ("format.type", None),
            ("execution.keep_partition_by_columns", None),
            ("aws.", None),
        ];
        for (sql, core) in cases {
            assert_eq!(storage_key(sql).as_deref(), core, "{sql}");
        }
    }

    #[test]
    fn test_storage_values_are_kept_and_never_shown() {
        let secret = "wJalrXUtnFEMI-K7MDENG-EXAMPLEKEY";
        let options = ArrowsmithOptions::from_map(
            &map(&[
                ("aws.secret_access_key", secret),
                ("aws.endpoint", "http://127.0.0.1:9000"),
                ("format.type", "Trace::NFS::common"),
            ]),
            Format::DataSeries,
        )
        .unwrap();
        assert_eq!(options.storage.get("aws_secret_access_key"), Some(secret));
        assert_eq!(
            options.storage.get("aws_endpoint_url"),
            Some("http://127.0.0.1:9000")
        );
        let shown = format!("{options:?}");
        assert!(shown.contains("aws_secret_access_key"), "{shown}");
        assert!(!shown.contains(secret), "{shown}");

        // A bad format key beside a credential: the error names the key, not the credential.
        let e = ArrowsmithOptions::from_map(
            &map(&[("aws.secret_access_key", secret), ("format.nope", "1")]),
            Format::Jay,
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("'format.nope'") && !e.contains(secret), "{e}");
    }
}
