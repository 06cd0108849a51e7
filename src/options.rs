//! The options of the format-independent entry points ([`open`](crate::open),
//! [`create`](crate::create), [`fragments`](crate::fragments)): the shared
//! [`ScanOptions`] plus each format's own settings, so that every front end (the CLI, SQL
//! `OPTIONS`, Python keywords) fills in one value.
//!
//! Every setting also has a key: [`ReadOptions::set`] and [`WriteOptions::set`] take it with
//! its value as text, and [`SETTINGS`] lists every key with its default and doc
//! (docs/settings.md is its reference). The front ends are spellings of these keys: the
//! command line's `--bcolz-chunklen`, SQL's `'format.bcolz_chunklen'` and Python's
//! `bcolz_chunklen=` all set `bcolz_chunklen`. An error about a setting names its key
//! ([`Error::setting`]), so each front end can name it in its own spelling.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::format::Format;
use crate::salvage::SalvageReport;
use crate::scan::{Projection, ScanOptions};
use crate::sentinel::CollisionPolicy;
use crate::source::StorageOptions;
use crate::{bcolz, dataseries, filo, vs};

mod parse;
mod table;

pub use table::{
    check_applies, is_storage_key, keys, lookup, setting, Setting, SettingKind, ValueKind,
    SETTINGS, STORAGE_CLIENT_KEYS, STORAGE_PREFIXES,
};

/// Options of [`open`](crate::open) and [`fragments`](crate::fragments).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ReadOptions {
    /// The input format; detected from the content and the name when `None`.
    pub format: Option<Format>,
    /// Batch size, projection, limit and fragment.
    pub scan: ScanOptions,
    /// The settings only some formats have.
    pub format_options: FormatOptions,
    /// The settings of remote storage, for an input that is a URL (`s3://…`): object_store's
    /// keys, set by key like every setting (`set("aws_region", …)`). Its `Debug` shows the
    /// keys and never the values; a fragment never carries them.
    pub storage: StorageOptions,
}

impl ReadOptions {
    /// Reads `format`, with every other option at its default.
    pub fn for_format(format: Format) -> Self {
        ReadOptions {
            format: Some(format),
            ..Default::default()
        }
    }

    /// Turns salvage on: damaged parts are skipped and recorded in `report`, which the caller
    /// keeps a clone of and reads after the scan.
    pub fn with_salvage(mut self, report: SalvageReport) -> Self {
        self.scan.salvage = true;
        self.scan.report = Some(report);
        self
    }
}

/// The read settings that only some formats have. A [`Fragment`](crate::Fragment) carries
/// them, since its range means something only under the settings it was listed with (the
/// DataSeries extent type, above all).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct FormatOptions {
    /// The element type of a bare Filo vector (`Format::FiloVector`), which its bytes lack.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub filo_type: Option<filo::FiloType>,
    /// Filo sets: read String columns as `Dictionary(Int32, Utf8)`, keeping filo's dictionary
    /// codes instead of expanding them (default `false`: `Utf8`).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub filo_dictionary: bool,
    /// VS: end-of-file mode, varint order, app_data mode, lock wait.
    pub vs: vs::VsReadOptions,
    /// DataSeries: the extent type, Utf8 fields, checks.
    pub dataseries: dataseries::DsReadOptions,
    /// Jay: the most rows read that no data stands behind, as in a frame of void columns only
    /// (default [`jay::DEFAULT_MAX_DATALESS_ROWS`](crate::jay::DEFAULT_MAX_DATALESS_ROWS), 2^32; see
    /// [`jay::ReaderBuilder::with_max_dataless_rows`](crate::jay::ReaderBuilder::with_max_dataless_rows)).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_dataless_rows: Option<u64>,
    /// bcolz: NaT as null, the carray's column name, read-ahead.
    #[serde(skip_serializing_if = "BcolzReadOptions::is_default")]
    pub bcolz: BcolzReadOptions,
}

/// The read settings of bcolz (see [`bcolz::ReaderBuilder`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct BcolzReadOptions {
    /// NaT in datetime64/timedelta64 columns becomes an Arrow null (default `true`).
    pub nat_as_null: bool,
    /// The column name of a carray (default: the directory's name).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub carray_name: Option<String>,
    /// Batches decoded ahead in the background (default 2).
    pub read_ahead: usize,
}

impl Default for BcolzReadOptions {
    fn default() -> Self {
        BcolzReadOptions {
            nat_as_null: true,
            carray_name: None,
            read_ahead: 2,
        }
    }
}

impl BcolzReadOptions {
    fn is_default(&self) -> bool {
        *self == Self::default()
    }

    /// `builder` with these settings.
    pub fn apply(&self, builder: bcolz::ReaderBuilder) -> bcolz::ReaderBuilder {
        let builder = builder
            .with_nat_as_null(self.nat_as_null)
            .with_read_ahead(self.read_ahead);
        match &self.carray_name {
            Some(name) => builder.with_carray_name(name.clone()),
            None => builder,
        }
    }
}

/// Options of [`create`](crate::create), common to every format; each writer takes what
/// applies to it.
#[derive(Debug, Clone)]
pub struct WriteOptions {
    /// The output format; chosen by the file name's extension when `None`.
    pub format: Option<Format>,
    /// Codec name (Parquet: `zstd` (default), `snappy`, `gzip`, `lz4`, `brotli`, `none`;
    /// Arrow IPC: `lz4`, `zstd`, `none`; DataSeries: see
    /// [`dataseries::WriterOptions::from_compression`]; VS: `none`, `gzip`, `snappy`;
    /// bcolz: Blosc's codecs), optionally with a level, as `zstd:9`.
    pub compression: Option<String>,
    /// Rows per Parquet row group.
    pub row_group_size: Option<usize>,
    /// What happens to an existing output (default [`WriteMode::Error`]). Only an output of the format is ever replaced: a file for a single-file format,
    /// a dataset of the format for bcolz and Filo sets; anything else at the path is refused
    /// untouched (see [`check_target`](crate::atomic::check_target)). A character device,
    /// FIFO or socket is no output to replace: arrows, csv and ndjson are written into it,
    /// with or without this; the other formats refuse it. [`WriteMode::Append`] adds to an
    /// existing vs file or bcolz dataset (and creates one that is not there).
    pub mode: WriteMode,
    /// Whether a new file or directory is flushed to disk (fsync) before it is renamed into
    /// place (default `true`). Without, the rename still makes the output appear whole, but a
    /// crash or power loss soon after may lose it: for scratch outputs, and for comparisons
    /// with tools that never flush. bcolz also honours its own
    /// [`WriterOptions::with_durable`](crate::bcolz::WriterOptions::with_durable). It has no
    /// meaning for a URL output, and is ignored there: the store says when an object is
    /// stored.
    pub durable: bool,
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
    /// bcolz: layout, chunklen, cparams, null policy, string widths (its own overwrite
    /// setting is also set by `mode` above).
    pub bcolz: bcolz::WriterOptions,
    /// DataSeries: level, extent size, extent type XML and type name (`compression` above
    /// chooses the codecs).
    pub dataseries: dataseries::DsWriteOptions,
    /// The settings of remote storage, for an output that is a URL, as
    /// [`ReadOptions::storage`].
    pub storage: StorageOptions,
}

impl Default for WriteOptions {
    fn default() -> Self {
        WriteOptions {
            format: None,
            compression: None,
            row_group_size: None,
            mode: WriteMode::Error,
            durable: true,
            sentinel_collisions: CollisionPolicy::default(),
            filo_chunk_size: None,
            filo_hint: None,
            filo_type: None,
            vs: vs::VsWriteOptions::default(),
            bcolz: bcolz::WriterOptions::default(),
            dataseries: dataseries::DsWriteOptions::default(),
            storage: StorageOptions::default(),
        }
    }
}

/// What [`create`](crate::create) and [`write_all`](crate::write_all) do with an existing
/// output (the `mode` setting; `overwrite` is its boolean spelling).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum WriteMode {
    /// An existing output is an error.
    #[default]
    Error,
    /// An existing output of the format is replaced, whole, when the new one is finished.
    Overwrite,
    /// The rows are appended to an existing vs file or bcolz dataset, crash-safely; a missing
    /// one is created.
    Append,
}

impl WriteMode {
    /// `"error"`, `"overwrite"` or `"append"`.
    pub fn name(self) -> &'static str {
        match self {
            WriteMode::Error => "error",
            WriteMode::Overwrite => "overwrite",
            WriteMode::Append => "append",
        }
    }
}

/// Runs a value parser for `key`, naming the key in its error.
fn value<T>(key: &str, parsed: Result<T>) -> Result<T> {
    parsed.map_err(|e| Error::for_setting(key, e.message()))
}

impl ReadOptions {
    /// Sets the read setting `key` (a key of [`SETTINGS`] of kind [`SettingKind::Read`]) from
    /// its text form. An unknown key or a bad value is an [`ErrorClass::InvalidArgument`]
    /// error; a bad value's names the key ([`Error::setting`]). Whether the key applies to
    /// the input's format is [`check_applies`]'s to say.
    ///
    /// [`ErrorClass::InvalidArgument`]: crate::ErrorClass::InvalidArgument
    pub fn set(&mut self, key: &str, text: &str) -> Result<()> {
        use parse::{count, flag, positive};
        let row = lookup(SettingKind::Read, key)?;
        if row.is_storage() {
            return set_storage(&mut self.storage, key, text);
        }
        let scan = &mut self.scan;
        let formats = &mut self.format_options;
        match row.key {
            "format" => self.format = Some(value(key, text.parse())?),
            "columns" => {
                let names = text.split(',').map(str::to_owned).collect();
                scan.projection = Some(Projection::Names(names));
            }
            "limit" => scan.limit = Some(value(key, count(text))?),
            "batch_size" => scan.batch_size = Some(value(key, positive(text))?),
            "salvage" => {
                scan.salvage = value(key, flag(text))?;
                scan.report = match scan.salvage {
                    true => scan.report.take().or_else(|| Some(SalvageReport::new())),
                    false => None,
                };
            }
            "type" => formats.dataseries.type_name = Some(text.to_owned()),
            "utf8" => formats.dataseries.utf8 = value(key, text.parse())?,
            "no_checks" => formats.dataseries.no_checks = value(key, flag(text))?,
            "filo_type" => formats.filo_type = Some(value(key, text.parse())?),
            "filo_dictionary" => formats.filo_dictionary = value(key, flag(text))?,
            "lenient_eof" => {
                formats.vs.parse.eof = match value(key, flag(text))? {
                    true => vs::EofMode::Lenient,
                    false => vs::EofMode::Strict,
                }
            }
            "varint" => formats.vs.parse.varint = value(key, text.parse())?,
            "app_data" => formats.vs.app_data = value(key, text.parse())?,
            "max_dataless_rows" => formats.max_dataless_rows = Some(value(key, count(text))?),
            "nat_as_null" => formats.bcolz.nat_as_null = value(key, flag(text))?,
            "carray_name" => formats.bcolz.carray_name = Some(text.to_owned()),
            "read_ahead" => formats.bcolz.read_ahead = value(key, count(text))?,
            other => unreachable_key(other)?,
        }
        Ok(())
    }

    /// Sets every `(key, value)` of `settings` and checks that each applies to the input's
    /// format, when that is known.
    pub fn set_all<'a>(
        &mut self,
        settings: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) -> Result<()> {
        for (key, text) in settings {
            self.set(key, text)?;
            if let Some(format) = self.format {
                check_applies(SettingKind::Read, key, format)?;
            }
        }
        Ok(())
    }
}

/// Sets `key` on the read side, the write side or both, as [`SETTINGS`] has it: a setting of
/// a conversion (the command line's `convert`, an SQL table that is read and copied to), which
/// must apply to the input's format (`read.format`) or to the output's (`write.format`); a
/// side whose format is not known yet is not checked. `type`, `filo_type` and `lenient_eof`
/// are set on both sides.
pub fn set_either(
    read: &mut ReadOptions,
    write: &mut WriteOptions,
    key: &str,
    text: &str,
) -> Result<()> {
    let read_setting = setting(SettingKind::Read, key);
    let write_setting = setting(SettingKind::Write, key);
    let applies = |s: Option<&Setting>, format: Option<Format>| {
        s.is_some_and(|s| format.is_none_or(|f| s.applies_to(f)))
    };
    if !applies(read_setting, read.format) && !applies(write_setting, write.format) {
        return match (read_setting, read.format, write_setting, write.format) {
            (Some(_), Some(format), _, _) => check_applies(SettingKind::Read, key, format),
            (_, _, Some(_), Some(format)) => check_applies(SettingKind::Write, key, format),
            _ => lookup(SettingKind::Read, key).map(|_| ()),
        };
    }
    if read_setting.is_some() {
        read.set(key, text)?;
    }
    if write_setting.is_some() {
        write.set(key, text)?;
    }
    Ok(())
}

/// Sets the storage key `key` (of a row [`lookup`] found) to `text`, which no error shows:
/// it may be a credential. The store checks the key's name when it opens a URL.
fn set_storage(storage: &mut StorageOptions, key: &str, text: &str) -> Result<()> {
    if key.ends_with('*') {
        return Err(Error::for_setting(
            key,
            "names a family of keys of remote storage; give one of them, as aws_region",
        ));
    }
    storage.set(key, text);
    Ok(())
}

/// A key [`lookup`] found but `set` does not handle: a row of [`SETTINGS`] without its setter,
/// which the unit tests rule out.
fn unreachable_key(key: &str) -> Result<()> {
    Err(Error::invalid_argument(format!(
        "the setting {key:?} is listed but not implemented; please report it"
    )))
}

impl WriteOptions {
    /// Sets the write setting `key` (a key of [`SETTINGS`] of kind [`SettingKind::Write`]) from
    /// its text form, as [`ReadOptions::set`] does. `xml` names a file, which is read here.
    pub fn set(&mut self, key: &str, text: &str) -> Result<()> {
        use parse::{flag, positive};
        let row = lookup(SettingKind::Write, key)?;
        if row.is_storage() {
            return set_storage(&mut self.storage, key, text);
        }
        match row.key {
            "format" => self.format = Some(value(key, text.parse())?),
            "mode" => self.mode = value(key, text.parse())?,
            "overwrite" => {
                self.mode = match value(key, flag(text))? {
                    true => WriteMode::Overwrite,
                    false if self.mode == WriteMode::Overwrite => WriteMode::Error,
                    false => self.mode,
                }
            }
            "no_sync" => self.durable = !value(key, flag(text))?,
            "compression" => self.compression = Some(text.to_owned()),
            "row_group_size" => self.row_group_size = Some(value(key, positive(text))?),
            "sentinel_collisions_as_na" => {
                self.sentinel_collisions = match value(key, flag(text))? {
                    true => CollisionPolicy::AsNull,
                    false => CollisionPolicy::Error,
                }
            }
            "type" => self.dataseries.type_name = Some(text.to_owned()),
            "compress_level" => {
                self.dataseries.level = Some(match text.trim().parse() {
                    Ok(level @ 1..=9) => level,
                    _ => {
                        return Err(Error::for_setting(
                            key,
                            format!("expected 1 to 9, got {text:?}"),
                        ))
                    }
                })
            }
            "extent_size" => self.dataseries.extent_size = Some(value(key, positive(text))?),
            "xml" => {
                let xml = std::fs::read_to_string(text).map_err(|e| {
                    Error::for_setting(key, format!("cannot read the ExtentType XML: {e}"))
                        .with_file(text)
                })?;
                self.dataseries.xml = Some(xml);
            }
            "filo_type" => self.filo_type = Some(value(key, text.parse())?),
            "filo_chunk_size" => self.filo_chunk_size = Some(value(key, positive(text))?),
            "filo_encoding" => self.filo_hint = Some(value(key, text.parse())?),
            "lenient_eof" => self.vs.lenient_eof = value(key, flag(text))?,
            _ => self.set_bcolz(key, text)?,
        }
        Ok(())
    }

    fn set_bcolz(&mut self, key: &str, text: &str) -> Result<()> {
        use parse::{flag, positive};
        let options = self.bcolz.clone();
        self.bcolz = match key {
            "bcolz_nulls_as_nan" => options.with_null_policy(match value(key, flag(text))? {
                true => bcolz::NullPolicy::Sentinel,
                false => bcolz::NullPolicy::Reject,
            }),
            "bcolz_chunklen" => options.with_chunklen(value(key, positive(text))? as u64),
            "bcolz_shuffle" => options.with_shuffle(value(key, text.parse())?),
            "bcolz_carray" if value(key, flag(text))? => options.with_kind(bcolz::Kind::Carray),
            "bcolz_carray" => options,
            "bcolz_no_sync" => options.with_durable(!value(key, flag(text))?),
            other => return unreachable_key(other),
        };
        Ok(())
    }

    /// Sets every `(key, value)` of `settings` and checks that each applies to the output's
    /// format, when that is known.
    pub fn set_all<'a>(
        &mut self,
        settings: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) -> Result<()> {
        for (key, text) in settings {
            self.set(key, text)?;
            if let Some(format) = self.format {
                check_applies(SettingKind::Write, key, format)?;
            }
        }
        Ok(())
    }

    /// Whether an existing output is replaced ([`WriteMode::Overwrite`]).
    pub fn overwrite(&self) -> bool {
        self.mode == WriteMode::Overwrite
    }

    /// The format written at `path`: the `format` setting; else, appending to an existing
    /// output, the format it is; else the IPC stream for standard output; else the one the
    /// extension names.
    pub fn output_format(&self, path: &Path) -> Result<Format> {
        match self.format {
            Some(format) => Ok(format),
            None if self.mode == WriteMode::Append && path.exists() => Format::detect(path),
            None if crate::is_stdin(path) => Ok(Format::ArrowStream),
            None => Format::for_output(path).map_err(|e| {
                e.with_setting("format")
                    .with_setting_kind(SettingKind::Write)
            }),
        }
    }

    /// The appender for an existing bcolz dataset at `path` in [`WriteMode::Append`] (`None`:
    /// anything else, which [`create`](crate::create) makes new). A vs file is appended to by
    /// [`write_all`](crate::write_all) alone, which has the whole input.
    pub(crate) fn appender(
        &self,
        path: &Path,
        format: Format,
        schema: arrow_schema::SchemaRef,
    ) -> Result<Option<Box<dyn crate::BatchWriter + Send>>> {
        if self.mode != WriteMode::Append || !path.exists() {
            return Ok(None);
        }
        match format {
            Format::Bcolz => Ok(Some(Box::new(bcolz::Appender::try_new(
                path,
                schema,
                self.bcolz.null_policy(),
            )?))),
            _ => Err(Error::invalid_argument(
                "appending to a vs file takes the whole input at once; use write_all",
            )
            .with_file(path)),
        }
    }

    /// Whether [`write_all`](crate::write_all) appends to the vs file at `path`.
    pub(crate) fn appends_vs(&self, path: &Path) -> Result<bool> {
        Ok(self.mode == WriteMode::Append
            && path.exists()
            && self.output_format(path)? == Format::Vs)
    }

    /// The vs appender's settings: `vs` with this `compression`.
    pub fn vs_append_options(&self) -> Result<vs::VsWriteOptions> {
        let mut options = self.vs.clone();
        if let Some(spec) = &self.compression {
            options.compression = Some(value("compression", spec.parse())?);
        }
        Ok(options)
    }
}

#[cfg(test)]
mod tests;
