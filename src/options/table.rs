//! [`SETTINGS`]: every key [`ReadOptions::set`](super::ReadOptions::set) and
//! [`WriteOptions::set`](super::WriteOptions::set) take, with its documented default, the
//! formats it applies to and a line of doc. The command line's flags, SQL's
//! `OPTIONS ('format.KEY' …)` and Python's keywords are spellings of these keys.

use crate::error::{Error, Result};
use crate::format::Format;

pub use crate::error::SettingKind;

/// What a setting's value is, for the front ends that type their arguments (a command-line
/// flag takes no value; a Python keyword takes a bool, an int or a str).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ValueKind {
    /// `true` or `false`.
    Flag,
    /// A whole number.
    Count,
    /// Text: a name, a codec, a file name.
    Text,
    /// Names, comma-separated (or, for `utf8`, `true` for all).
    Names,
}

/// One row of [`SETTINGS`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Setting {
    /// The key, as `set` takes it (snake_case).
    pub key: &'static str,
    /// Read or write.
    pub kind: SettingKind,
    /// The default, as the reference documents it.
    pub default: &'static str,
    /// The values it takes.
    pub values: &'static str,
    /// The formats it applies to; empty: every format.
    pub formats: &'static [Format],
    /// One line of doc.
    pub doc: &'static str,
}

impl Setting {
    /// Whether the setting is one of remote storage's (see [`is_storage_key`]): a key of
    /// object_store's, handed to the registered [`Storage`](crate::source::Storage).
    pub fn is_storage(&self) -> bool {
        is_storage_key(self.key)
    }

    /// Whether the setting means something for `format`.
    pub fn applies_to(&self, format: Format) -> bool {
        self.formats.is_empty() || self.formats.contains(&format)
    }

    /// What its value is.
    pub fn value_kind(&self) -> ValueKind {
        match self.values {
            BOOL => ValueKind::Flag,
            COUNT | COUNT0 | LEVEL | BYTES | SHUFFLE => ValueKind::Count,
            NAMES | UTF8 => ValueKind::Names,
            _ => ValueKind::Text,
        }
    }

    /// The names of the formats it applies to, `"every format"` when it applies to all.
    pub fn format_names(&self) -> String {
        if self.formats.is_empty() {
            return "every format".to_owned();
        }
        let names: Vec<&str> = self.formats.iter().map(|f| f.name()).collect();
        names.join(", ")
    }
}

const LEGACY: &[Format] = &[
    Format::Jay,
    Format::DataSeries,
    Format::Filo,
    Format::Vs,
    Format::Bcolz,
];
const DS: &[Format] = &[Format::DataSeries];
const VS: &[Format] = &[Format::Vs];
const BCOLZ: &[Format] = &[Format::Bcolz];
const COMPRESSED: &[Format] = &[
    Format::Parquet,
    Format::Arrow,
    Format::ArrowStream,
    Format::DataSeries,
    Format::Vs,
    Format::Bcolz,
];
/// The prefixes of object_store's keys of each store: a row `aws_*` of [`SETTINGS`] stands
/// for every key that starts with `aws_`, which the store checks when it opens a URL.
pub const STORAGE_PREFIXES: &[&str] = &["aws_", "google_", "azure_"];

/// object_store's HTTP client keys, which every store takes (an `http(s)://` URL takes only
/// these), also with a store's prefix (`aws_timeout`).
pub const STORAGE_CLIENT_KEYS: &[&str] = &[
    "allow_http",
    "allow_invalid_certificates",
    "connect_timeout",
    "default_content_type",
    "http1_only",
    "http2_only",
    "http2_keep_alive_interval",
    "http2_keep_alive_timeout",
    "http2_keep_alive_while_idle",
    "http2_max_frame_size",
    "max_retries",
    "pool_idle_timeout",
    "pool_max_idle_per_host",
    "proxy_url",
    "proxy_ca_certificate",
    "proxy_excludes",
    "randomize_addresses",
    "retry_timeout",
    "timeout",
    "user_agent",
];

/// Whether `key` is a setting of remote storage: it starts with a store's prefix
/// ([`STORAGE_PREFIXES`]) or is a client key ([`STORAGE_CLIENT_KEYS`]). Its value is a
/// credential or a connection setting, kept in [`StorageOptions`](crate::source::StorageOptions)
/// and never shown in an error or a `Debug`.
pub fn is_storage_key(key: &str) -> bool {
    STORAGE_PREFIXES.iter().any(|p| key.starts_with(p)) || STORAGE_CLIENT_KEYS.contains(&key)
}

const BOOL: &str = "true|false";
const COUNT: &str = "an integer ≥ 1";
const COUNT0: &str = "an integer ≥ 0";
const LEVEL: &str = "1..9";
const BYTES: &str = "bytes, 1024..268435456";
const NAMES: &str = "column names, comma-separated";
const SHUFFLE: &str = "0 (none), 1 (byte) or 2 (bit)";
const UTF8: &str = "true, false or field names, comma-separated";
const STORAGE: &str = "text, as object_store takes it";
const AWS: &str = "Remote storage: an Amazon S3 key of object_store (aws_access_key_id, aws_secret_access_key, aws_session_token, aws_region, aws_endpoint_url, aws_allow_http, …).";
const GOOGLE: &str = "Remote storage: a Google Cloud Storage key of object_store (google_service_account, google_service_account_key, google_application_credentials, …).";
const AZURE: &str = "Remote storage: an Azure Blob Storage key of object_store (azure_storage_account_name, azure_storage_account_key, azure_storage_sas_key, azure_use_emulator, …).";
const CLIENT: &str = "Remote storage: an HTTP client key of object_store, for every store.";
const CLIENT_DEFAULT: &str = "object_store's";
const RETRIES: &str = "Remote storage: how often a failed request is tried again (arrowsmith-store's own key; object_store has none).";
const RETRY_TIMEOUT: &str = "Remote storage: how long a request is tried again, as `30s` or `2 min` (arrowsmith-store's own key).";

const fn read(
    key: &'static str,
    formats: &'static [Format],
    values: &'static str,
    default: &'static str,
    doc: &'static str,
) -> Setting {
    Setting {
        key,
        kind: SettingKind::Read,
        default,
        values,
        formats,
        doc,
    }
}

const fn write(
    key: &'static str,
    formats: &'static [Format],
    values: &'static str,
    default: &'static str,
    doc: &'static str,
) -> Setting {
    Setting {
        key,
        kind: SettingKind::Write,
        default,
        values,
        formats,
        doc,
    }
}

/// A row of remote storage, for `kind`: every format, its value text.
const fn storage(
    kind: SettingKind,
    key: &'static str,
    default: &'static str,
    doc: &'static str,
) -> Setting {
    Setting {
        key,
        kind,
        default,
        values: STORAGE,
        formats: &[],
        doc,
    }
}

/// The table of every setting: the rows of the formats' settings as they are, then every row
/// of remote storage once as a read setting and once as a write setting (a conversion's
/// input and output may both be URLs).
macro_rules! settings_table {
    (formats: [$($row:expr,)*] storage: [$(($key:expr, $default:expr, $doc:expr),)*]) => {
        &[
            $($row,)*
            $(storage(SettingKind::Read, $key, $default, $doc),)*
            $(storage(SettingKind::Write, $key, $default, $doc),)*
        ]
    };
}

/// Every read and write setting: the one table the front ends spell. The rows of remote
/// storage come last: a row `aws_*` stands for every key that starts with `aws_`.
pub const SETTINGS: &[Setting] = settings_table! {
    formats: [
    read("format", &[], "a format name (`arrowsmith formats`)", "recognised from the content, then the extension", "The input format."),
    read("columns", &[], NAMES, "every column", "The columns to read, in this order."),
    read("limit", &[], COUNT0, "every row", "Read at most this many rows."),
    read("batch_size", &[], COUNT, "65536", "Rows per batch at most."),
    read("salvage", LEGACY, BOOL, "false", "Skip the damaged parts of a legacy file, recording each, instead of failing at the first."),
    read("type", DS, "an extent type name", "the one type that holds data", "DataSeries: the extent type to read (needed when the file declares several)."),
    read("utf8", DS, UTF8, "false (fields marked arrow_type=\"utf8\" only)", "DataSeries: read variable32 fields as Utf8, validated: all of them, or the named ones."),
    read("no_checks", DS, BOOL, "false", "DataSeries: skip the adler32, hash and variable32 checks."),
    read("filo_type", &[Format::FiloVector], "Int, Long, Double, Float, Boolean, String, Timestamp, DateTime or Binary", "none (required)", "filo-vector: the vector's element type, which Filo bytes do not record."),
    read("filo_dictionary", &[Format::Filo], BOOL, "false", "Filo: read String columns as Dictionary(Int32, Utf8), keeping filo's codes."),
    read("lenient_eof", VS, BOOL, "false", "VS: accept a file that ends at a block boundary without its '$' terminal."),
    read("varint", VS, "leb128|msb-first", "leb128", "VS: varint byte order, the format's (leb128) or upstream's prototype (msb-first)."),
    read("app_data", VS, "json|msgpack", "json", "VS: app_data as JSON text or as the exact msgpack bytes (Binary)."),
    read("max_dataless_rows", &[Format::Jay], COUNT0, "4294967296", "Jay: the most rows read that no data stands behind (a frame of void columns only)."),
    read("nat_as_null", BCOLZ, BOOL, "true", "bcolz: NaT in datetime64/timedelta64 columns reads as null (false: the raw i64::MIN)."),
    read("carray_name", BCOLZ, "a column name", "the directory's name", "bcolz: the column name of a carray."),
    read("read_ahead", BCOLZ, COUNT0, "2", "bcolz: batches decoded ahead in the background while one is consumed (0: none)."),
    write("format", &[], "a format name (`arrowsmith formats`)", "from the extension", "The output format."),
    write("mode", &[], "error|overwrite|append", "error", "What happens to an existing output: an error, replaced, or (vs and bcolz) appended to."),
    write("overwrite", &[], BOOL, "false", "Replace an existing output of the format: mode=overwrite (false: mode=error)."),
    write("no_sync", &[], BOOL, "false", "Do not flush the output to disk (fsync) before renaming it into place (no meaning for a URL: the store says when an object is stored)."),
    write("compression", COMPRESSED, "a codec, optionally with a level (zstd:9)", "parquet zstd, arrow none, dataseries zlib:6, vs none, bcolz lz4", "The output's compression."),
    write("row_group_size", &[Format::Parquet], COUNT, "the Parquet writer's", "Parquet: rows per row group at most."),
    write("sentinel_collisions_as_na", &[Format::Jay], BOOL, "false", "Jay: write a valid value equal to its type's NA sentinel as NA instead of failing."),
    write("type", DS, "an extent type name", "the input's type name, else the schema's", "DataSeries: the extent type name the output is written as."),
    write("compress_level", DS, LEVEL, "6 (9 with best)", "DataSeries: the compression level of lzo, zlib and bz2."),
    write("extent_size", DS, BYTES, "the writer's", "DataSeries: target uncompressed bytes per extent."),
    write("xml", DS, "a file name", "derived from the schema", "DataSeries: the file holding the ExtentType XML to use, stored verbatim."),
    write("filo_type", &[Format::FiloVector], "Int, Long, Double, Float, Boolean, String, Timestamp, DateTime or Binary", "the column's natural type", "filo-vector: the vector's element type."),
    write("filo_chunk_size", &[Format::Filo], COUNT, "65536", "Filo: rows per chunk."),
    write("filo_encoding", &[Format::Filo, Format::FiloVector], "auto|simple|dict|diff|fixed", "auto", "Filo: the encoding hint of every column."),
    write("lenient_eof", VS, BOOL, "false", "VS append: give an output that ends without its '$' terminal one first."),
    write("bcolz_nulls_as_nan", BCOLZ, BOOL, "false", "bcolz: write nulls of float columns as NaN and of temporal columns as NaT instead of failing."),
    write("bcolz_chunklen", BCOLZ, COUNT, "bcolz's choice from the row count", "bcolz: rows per chunk."),
    write("bcolz_shuffle", BCOLZ, SHUFFLE, "1", "bcolz: shuffle before compressing."),
    write("bcolz_carray", BCOLZ, BOOL, "false", "bcolz: write a carray (one column) instead of a ctable."),
    write("bcolz_no_sync", BCOLZ, BOOL, "false", "bcolz: do not flush the new dataset to disk before renaming it into place."),
    ]
    storage: [
    ("aws_*", "the environment's AWS_*", AWS),
    ("google_*", "the environment's GOOGLE_*", GOOGLE),
    ("azure_*", "the environment's AZURE_*", AZURE),
    ("allow_http", CLIENT_DEFAULT, CLIENT),
    ("allow_invalid_certificates", CLIENT_DEFAULT, CLIENT),
    ("connect_timeout", CLIENT_DEFAULT, CLIENT),
    ("default_content_type", CLIENT_DEFAULT, CLIENT),
    ("http1_only", CLIENT_DEFAULT, CLIENT),
    ("http2_only", CLIENT_DEFAULT, CLIENT),
    ("http2_keep_alive_interval", CLIENT_DEFAULT, CLIENT),
    ("http2_keep_alive_timeout", CLIENT_DEFAULT, CLIENT),
    ("http2_keep_alive_while_idle", CLIENT_DEFAULT, CLIENT),
    ("http2_max_frame_size", CLIENT_DEFAULT, CLIENT),
    ("max_retries", "10", RETRIES),
    ("pool_idle_timeout", CLIENT_DEFAULT, CLIENT),
    ("pool_max_idle_per_host", CLIENT_DEFAULT, CLIENT),
    ("proxy_url", CLIENT_DEFAULT, CLIENT),
    ("proxy_ca_certificate", CLIENT_DEFAULT, CLIENT),
    ("proxy_excludes", CLIENT_DEFAULT, CLIENT),
    ("randomize_addresses", CLIENT_DEFAULT, CLIENT),
    ("retry_timeout", "3 min", RETRY_TIMEOUT),
    ("timeout", CLIENT_DEFAULT, CLIENT),
    ("user_agent", CLIENT_DEFAULT, CLIENT),
    ]
};

/// The row of `key` of `kind`, if there is one.
/// A key of remote storage is found by its family's row (`aws_access_key_id` by `aws_*`).
pub fn setting(kind: SettingKind, key: &str) -> Option<&'static Setting> {
    let of_kind = || SETTINGS.iter().filter(move |s| s.kind == kind);
    of_kind().find(|s| s.key == key).or_else(|| {
        of_kind().find(|s| {
            s.key
                .strip_suffix('*')
                .is_some_and(|prefix| key.len() > prefix.len() && key.starts_with(prefix))
        })
    })
}

/// The keys of `kind`, in the table's order.
pub fn keys(kind: SettingKind) -> impl Iterator<Item = &'static str> {
    SETTINGS
        .iter()
        .filter(move |s| s.kind == kind)
        .map(|s| s.key)
}

/// The row of `key` of `kind`, or an error naming the unknown key and listing the valid ones.
pub fn lookup(kind: SettingKind, key: &str) -> Result<&'static Setting> {
    setting(kind, key).ok_or_else(|| {
        let known: Vec<&str> = keys(kind).filter(|k| !is_storage_key(k)).collect();
        Error::invalid_argument(format!(
            "unknown {} setting {key:?}; the {} settings are {}, and remote storage's \
             (aws_*, google_*, azure_* and object_store's client keys: {})",
            kind.name(),
            kind.name(),
            known.join(", "),
            STORAGE_CLIENT_KEYS.join(", ")
        ))
    })
}

/// Refuses `key` of `kind` for a `format` it does not apply to, rather than ignoring it.
pub fn check_applies(kind: SettingKind, key: &str, format: Format) -> Result<()> {
    let setting = lookup(kind, key)?;
    if setting.applies_to(format) {
        return Ok(());
    }
    Err(Error::invalid_argument(format!(
        "{} applies to {} {}, not {format}",
        Error::setting_phrase(key),
        setting.format_names(),
        kind.side()
    ))
    .with_setting(key)
    .with_setting_kind(kind))
}
