//! Python arguments → the core's read and write options: the one place that builds
//! `ReadOptions` and `WriteOptions`.
//!
//! A `**options` keyword is a key of the core's settings table ([`arrowsmith::SETTINGS`],
//! docs/settings.md), its value typed as Python types it: a bool for a flag, an int for a
//! count, a str for text (a path for `xml`), True or a list of names for `utf8`. The settings
//! Python gives as parameters of their own (`format=`, `columns=`, `limit=`, `batch_size=`,
//! `mode=`, `compression=`, `durable=`) are not keywords. An unknown keyword is a `TypeError`,
//! as for any Python function; a known one that does not apply to the format is an
//! `ArgumentError` (a `ValueError`), so that an option never silently does nothing.
//!
//! The settings of remote storage (object_store's keys: `aws_region`, `azure_storage_sas_key`,
//! …) come in a dict of their own, `storage_options={…}`, as Polars, Dask and deltalake take
//! them; they are not `**options` keywords, so that a distributed read can hand them to its
//! tasks whole. No message names their values.

use std::path::{Path, PathBuf};

use arrow_array::RecordBatchReader;
use arrowsmith::options::{Setting, SettingKind, ValueKind};
use arrowsmith::source::StorageOptions;
use arrowsmith::{Format, Fragment, Projection, ReadOptions, ScanOptions, WriteMode, WriteOptions};
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyString};

use crate::errors::{self, IntoPyResult};

/// The read settings Python takes as parameters of `open`/`read`/`dataset`, or not at all
/// (salvage reports what it skipped, which these functions have no place for).
pub const READ_PARAMETERS: &[&str] = &["format", "columns", "limit", "batch_size", "salvage"];

/// The write settings Python takes as parameters of `write` (`durable=` is `no_sync`'s
/// opposite, `mode="overwrite"` is `overwrite`).
pub const WRITE_PARAMETERS: &[&str] = &["format", "mode", "overwrite", "no_sync", "compression"];

/// The setting the keyword `keyword` names, if it is one.
pub fn keyword_setting(kind: SettingKind, keyword: &str) -> Option<&'static Setting> {
    let parameters = match kind {
        SettingKind::Read => READ_PARAMETERS,
        SettingKind::Write => WRITE_PARAMETERS,
    };
    arrowsmith::options::setting(kind, keyword).filter(|s| !parameters.contains(&s.key))
}

/// The text form of a keyword's value, as the core's `set` takes it; `None` for `None`.
fn keyword_text(setting: &Setting, value: &Bound<'_, PyAny>) -> PyResult<Option<String>> {
    if value.is_none() {
        return Ok(None);
    }
    let is_bool = value.is_instance_of::<PyBool>();
    let text = match setting.value_kind() {
        ValueKind::Flag if is_bool => Some(value.extract::<bool>()?.to_string()),
        ValueKind::Count if !is_bool => value.extract::<i64>().ok().map(|n| n.to_string()),
        ValueKind::Text => match value.extract::<String>() {
            Ok(text) => Some(text),
            Err(_) => value
                .extract::<PathBuf>()
                .ok()
                .map(|p| p.display().to_string()),
        },
        ValueKind::Names if is_bool => Some(value.extract::<bool>()?.to_string()),
        ValueKind::Names if value.is_instance_of::<PyString>() => Some(value.extract()?),
        ValueKind::Names => value.extract::<Vec<String>>().ok().map(|n| n.join(",")),
        _ => None,
    };
    text.map(Some).ok_or_else(|| {
        let found = value
            .get_type()
            .name()
            .map(|n| n.to_string())
            .unwrap_or_default();
        let expected = match setting.value_kind() {
            ValueKind::Flag => "bool",
            ValueKind::Count => "int",
            ValueKind::Text => "str",
            ValueKind::Names => "True or a list of names",
        };
        PyTypeError::new_err(format!(
            "option {}= has the wrong type ({found}): expected {expected}",
            setting.key
        ))
    })
}

/// Hands every keyword of `options` to `set` as a core key and text value, refusing unknown
/// keywords (TypeError) and known ones that do not apply to `format`. A keyword set to
/// `None`, or a flag set to its default `False`, is accepted for any format, so that callers
/// can pass their settings through unconditionally.
fn apply_keywords(
    options: Option<&Bound<'_, PyDict>>,
    kind: SettingKind,
    format: Format,
    mut set: impl FnMut(&str, &str) -> arrowsmith::Result<()>,
) -> PyResult<()> {
    let Some(dict) = options else {
        return Ok(());
    };
    for (keyword, value) in dict.iter() {
        let keyword: String = keyword.extract()?;
        let Some(setting) = keyword_setting(kind, &keyword) else {
            let known: Vec<&str> = arrowsmith::options::keys(kind)
                .filter(|k| keyword_setting(kind, k).is_some_and(|s| !s.is_storage()))
                .collect();
            return Err(PyTypeError::new_err(format!(
                "unexpected option {keyword}=; the {} options are {} (and remote storage's \
                 settings go in storage_options={{…}})",
                kind.side(),
                known.join(", ")
            )));
        };
        let Some(text) = keyword_text(setting, &value)? else {
            continue;
        };
        if text == "false" && setting.default == "false" {
            continue;
        }
        set(setting.key, &text).py_err()?;
        arrowsmith::options::check_applies(kind, setting.key, format).py_err()?;
    }
    Ok(())
}

/// Refuses a keyword that is a setting of remote storage (before anything is opened): those
/// go in `storage_options`.
fn refuse_storage_keywords(options: Option<&Bound<'_, PyDict>>, kind: SettingKind) -> PyResult<()> {
    for keyword in options.into_iter().flat_map(|dict| dict.keys()) {
        let keyword: String = keyword.extract()?;
        if keyword_setting(kind, &keyword).is_some_and(|s| s.is_storage()) {
            return Err(PyTypeError::new_err(format!(
                "{keyword}= is a setting of remote storage; pass it in storage_options={{\"{keyword}\": …}}"
            )));
        }
    }
    Ok(())
}

/// The settings of remote storage `storage_options` gives: each entry a storage key of the
/// core's settings table (set through `ReadOptions::set`/`WriteOptions::set`), its value a str, or a bool or int as its text (`True` →
/// "true"); `None` leaves the key unset. A key that is not one of remote storage's is an
/// `ArgumentError`, a value of another type a `TypeError`; no message shows a value.
pub fn storage_settings(
    storage_options: Option<&Bound<'_, PyAny>>,
    kind: SettingKind,
) -> PyResult<StorageOptions> {
    let mut read = ReadOptions::default();
    let mut write = WriteOptions::default();
    apply_storage(storage_options, |key, text| match kind {
        SettingKind::Read => read.set(key, text),
        SettingKind::Write => write.set(key, text),
    })?;
    Ok(match kind {
        SettingKind::Read => read.storage,
        SettingKind::Write => write.storage,
    })
}

fn apply_storage(
    storage_options: Option<&Bound<'_, PyAny>>,
    mut set: impl FnMut(&str, &str) -> arrowsmith::Result<()>,
) -> PyResult<()> {
    let Some(given) = storage_options.filter(|o| !o.is_none()) else {
        return Ok(());
    };
    let dict = given.cast::<PyDict>().map_err(|_| {
        PyTypeError::new_err(format!(
            "storage_options must be a dict of object_store's keys and str values, not {}",
            type_name(given)
        ))
    })?;
    for (key, value) in dict.iter() {
        let key: String = key
            .extract()
            .map_err(|_| PyTypeError::new_err("storage_options keys must be str"))?;
        if !arrowsmith::options::is_storage_key(&key) {
            return Err(errors::argument(format!(
                "storage_options: {key:?} is not a setting of remote storage; give object_store's \
                 keys (aws_*, google_*, azure_*, and client keys such as allow_http or timeout), \
                 and the other settings as keywords"
            )));
        }
        if value.is_none() {
            continue;
        }
        let text = if value.is_instance_of::<PyBool>() {
            value.extract::<bool>()?.to_string()
        } else if let Ok(text) = value.extract::<String>() {
            text
        } else if let Ok(number) = value.extract::<i64>() {
            number.to_string()
        } else {
            return Err(PyTypeError::new_err(format!(
                "storage_options[{key:?}] has the wrong type ({}): expected str",
                type_name(&value)
            )));
        };
        set(&key, &text).py_err()?;
    }
    Ok(())
}

fn type_name(value: &Bound<'_, PyAny>) -> String {
    value
        .get_type()
        .name()
        .map(|n| n.to_string())
        .unwrap_or_default()
}

/// How a repr or summary names a source: a URL without its userinfo's password (the whole
/// userinfo for http(s)), query string and fragment, where signed URLs and SAS tokens keep
/// credentials; a path as it is.
pub fn shown_source(path: &Path) -> String {
    let text = path.display().to_string();
    if !arrowsmith::source::is_url(path) {
        return text;
    }
    let Some((scheme, rest)) = text.split_once("://") else {
        return text;
    };
    let rest = &rest[..rest.find(['?', '#']).unwrap_or(rest.len())];
    let (authority, key) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let authority = match authority.rsplit_once('@') {
        Some((_, host))
            if scheme.eq_ignore_ascii_case("http") || scheme.eq_ignore_ascii_case("https") =>
        {
            host.to_string()
        }
        Some((userinfo, host)) => {
            let user = userinfo.split_once(':').map_or(userinfo, |(user, _)| user);
            format!("{user}@{host}")
        }
        None => authority.to_string(),
    };
    format!("{scheme}://{authority}{key}")
}

/// Everything a read needs: the source, its format, the scan (columns, limit, batch size) and
/// the format's options. A `Dataset` keeps one and opens a fresh reader from it each time.
#[derive(Debug, Clone)]
pub struct ReadSpec {
    pub path: PathBuf,
    /// `format` is always set: resolved when the spec is made.
    pub options: ReadOptions,
    /// The piece of the source to read, when only one is.
    fragment: Option<Fragment>,
}

impl ReadSpec {
    /// Checks the arguments of `open`/`read`/`dataset`/`inspect` and resolves the format.
    pub fn new(
        path: PathBuf,
        format: Option<&str>,
        columns: Option<&Bound<'_, PyAny>>,
        limit: Option<i64>,
        batch_size: Option<i64>,
        options: Option<&Bound<'_, PyDict>>,
        storage_options: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<ReadSpec> {
        refuse_storage_keywords(options, SettingKind::Read)?;
        let storage = ReadOptions {
            storage: storage_settings(storage_options, SettingKind::Read)?,
            ..ReadOptions::default()
        };
        let format = input_format(&path, format, &storage)?;
        let mut read = ReadOptions::for_format(format);
        read.storage = storage.storage;
        apply_keywords(options, SettingKind::Read, format, |key, text| {
            read.set(key, text)
        })?;
        let mut spec = ReadSpec {
            path,
            options: read,
            fragment: None,
        };
        spec.set_scan(columns, limit, batch_size)?;
        Ok(spec)
    }

    /// Replaces the columns, limit and batch size; `None` keeps the current one.
    pub fn set_scan(
        &mut self,
        columns: Option<&Bound<'_, PyAny>>,
        limit: Option<i64>,
        batch_size: Option<i64>,
    ) -> PyResult<()> {
        let scan = &mut self.options.scan;
        if let Some(columns) = columns {
            if !columns.is_none() {
                scan.projection = Some(projection(columns)?);
            }
        }
        if let Some(limit) = limit {
            scan.limit = Some(non_negative("limit", limit)?);
        }
        if let Some(size) = batch_size {
            let size = non_negative("batch_size", size)?;
            if size == 0 {
                return Err(errors::argument("batch_size must be at least 1"));
            }
            scan.batch_size = Some(size);
        }
        Ok(())
    }

    pub fn format(&self) -> Format {
        self.options.format.unwrap_or(Format::Arrow)
    }

    pub fn limit(&self) -> Option<usize> {
        self.options.scan.limit
    }

    /// Reads one fragment, with its own format and format options; a fragment of a remote
    /// object with `storage_options` (a fragment carries no credentials).
    pub fn for_fragment(
        fragment: &Fragment,
        storage_options: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<ReadSpec> {
        Ok(ReadSpec {
            path: fragment.path.clone(),
            options: ReadOptions {
                format: Some(fragment.format),
                scan: ScanOptions::default(),
                format_options: fragment.options.clone(),
                storage: storage_settings(storage_options, SettingKind::Read)?,
            },
            fragment: Some(fragment.clone()),
        })
    }

    /// A fresh reader.
    pub fn open(&self) -> arrowsmith::Result<Box<dyn RecordBatchReader + Send>> {
        match &self.fragment {
            Some(fragment) => arrowsmith::open_fragment(fragment, &self.options),
            None => arrowsmith::open(&self.path, &self.options),
        }
    }
}

/// The input's format: as named, or recognised from the content and the name. A URL whose
/// name has no format's extension is opened with the storage settings of `storage`, without
/// the GIL: the request may wait on the network for as long as the store retries, and a
/// server in this process (a test's) needs the GIL to answer.
fn input_format(path: &Path, named: Option<&str>, storage: &ReadOptions) -> PyResult<Format> {
    match named {
        Some(name) => parse_format(name),
        None if arrowsmith::source::is_url(path) => match Format::from_extension(path) {
            Some(format) => Ok(format),
            None => Python::attach(|py| {
                py.detach(|| arrowsmith::Input::open(path, storage).map(|input| input.format()))
            })
            .py_err(),
        },
        None => Format::detect(path).py_err(),
    }
}

pub fn parse_format(name: &str) -> PyResult<Format> {
    name.parse::<Format>().py_err()
}

fn non_negative(name: &str, value: i64) -> PyResult<usize> {
    usize::try_from(value)
        .map_err(|_| errors::argument(format!("{name} must not be negative, got {value}")))
}

/// `columns=`: a list of names or a list of positions.
fn projection(columns: &Bound<'_, PyAny>) -> PyResult<Projection> {
    if columns.is_instance_of::<PyString>() {
        return Err(PyTypeError::new_err(
            "columns must be a list of column names or positions, not a string",
        ));
    }
    if let Ok(names) = columns.extract::<Vec<String>>() {
        return Ok(Projection::Names(names));
    }
    if let Ok(indices) = columns.extract::<Vec<usize>>() {
        return Ok(Projection::Indices(indices));
    }
    Err(PyTypeError::new_err(
        "columns must be a list of column names (str) or of positions (int), not a mix",
    ))
}

/// Everything a write needs besides the data.
#[derive(Debug)]
pub struct WriteSpec {
    pub path: PathBuf,
    pub format: Format,
    pub mode: WriteMode,
    options: WriteOptions,
}

impl WriteSpec {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        path: PathBuf,
        format: Option<&str>,
        mode: &str,
        compression: Option<String>,
        durable: bool,
        expected_rows: Option<u64>,
        options: Option<&Bound<'_, PyDict>>,
        storage_options: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<WriteSpec> {
        refuse_storage_keywords(options, SettingKind::Write)?;
        let mut write = parameters(format, mode, compression, durable).py_err()?;
        write.storage = storage_settings(storage_options, SettingKind::Write)?;
        let format = write.output_format(&path).py_err()?;
        write.format = Some(format);
        apply_keywords(options, SettingKind::Write, format, |key, text| {
            write.set(key, text)
        })?;
        if let Some(rows) = expected_rows {
            // bcolz chooses its chunk length from the expected length.
            write.bcolz = write.bcolz.with_expected_len(rows.max(1));
        }
        arrowsmith::check_write(&write, format).py_err()?;
        Ok(WriteSpec {
            path,
            format,
            mode: write.mode,
            options: write,
        })
    }

    /// Writes every batch of `input`: a new file, or appended to an existing vs file or bcolz
    /// dataset in mode="append".
    pub fn write_all(
        &self,
        input: impl RecordBatchReader,
    ) -> arrowsmith::Result<arrowsmith::WriteSummary> {
        arrowsmith::write_all(input, &self.path, &self.options)
    }
}

/// The settings `write` takes as parameters of its own.
fn parameters(
    format: Option<&str>,
    mode: &str,
    compression: Option<String>,
    durable: bool,
) -> arrowsmith::Result<WriteOptions> {
    let mut write = WriteOptions::default();
    write.set("mode", mode)?;
    if let Some(name) = format {
        write.format = Some(name.parse()?);
    }
    if !durable {
        write.set("no_sync", "true")?;
    }
    if let Some(spec) = &compression {
        write.set("compression", spec)?;
    }
    Ok(write)
}
