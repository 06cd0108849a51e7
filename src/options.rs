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
use crate::{bcolz, dataseries, filo, jay, vs};

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

/// The read settings that only some formats have: one [`ReaderOptions`](crate::jay::ReaderOptions)
/// per format, which that format's `ReaderBuilder::with_options` takes. A
/// [`Fragment`](crate::Fragment) carries them, since its range means something only under the
/// settings it was listed with (the DataSeries extent type, above all).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct FormatOptions {
    /// Jay: the most rows read that no data stands behind.
    #[serde(skip_serializing_if = "is_default")]
    pub jay: jay::ReaderOptions,
    /// DataSeries: the extent type, Utf8 fields, checks.
    #[serde(skip_serializing_if = "is_default")]
    pub dataseries: dataseries::ReaderOptions,
    /// Filo: a bare vector's element type; a set's String columns as dictionaries.
    #[serde(skip_serializing_if = "is_default")]
    pub filo: filo::ReaderOptions,
    /// VS: end-of-file mode, varint order, app_data mode, lock wait.
    #[serde(skip_serializing_if = "is_default")]
    pub vs: vs::ReaderOptions,
    /// bcolz: NaT as null, the carray's column name, read-ahead.
    #[serde(skip_serializing_if = "is_default")]
    pub bcolz: bcolz::ReaderOptions,
}

fn is_default<T: Default + PartialEq>(value: &T) -> bool {
    *value == T::default()
}

/// Options of [`create`](crate::create): the settings common to every format, and one
/// `WriterOptions` builder per legacy format, which [`create`](crate::create) completes with
/// the common ones (`compression`, `mode`, `durable`) for the format it writes.
#[derive(Debug, Clone)]
pub struct WriteOptions {
    /// The output format; chosen by the file name's extension when `None`.
    pub format: Option<Format>,
    /// Codec name (Parquet: `zstd` (default), `snappy`, `gzip`, `lz4`, `brotli`, `none`;
    /// Arrow IPC: `lz4`, `zstd`, `none`; DataSeries: see [`dataseries::Compression`]; VS:
    /// `none`, `gzip`, `snappy`; bcolz: Blosc's codecs, see [`bcolz::Compression`]),
    /// optionally with a level, as `zstd:9`. Kept as text because what it means depends on
    /// the output format, which may be known only at [`create`](crate::create): there the
    /// format's own `FromStr` parses it.
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
    /// with tools that never flush. `false` overrides each format's own `with_durable`. It
    /// has no meaning for a URL output, and is ignored there: the store says when an object
    /// is stored.
    pub durable: bool,
    /// Jay: what happens to a valid value equal to its type's sentinel, spill settings.
    pub jay: jay::WriterOptions,
    /// DataSeries: level, extent size, extent type XML and type name (`compression` above
    /// chooses the codecs).
    pub dataseries: dataseries::WriterOptions,
    /// Filo: rows per chunk, encoding hints, a bare vector's element type.
    pub filo: filo::WriterOptions,
    /// VS: columns, lock wait, lenient end of file for an append (`compression` above is
    /// parsed as none|gzip|snappy for VS).
    pub vs: vs::WriterOptions,
    /// bcolz: layout, chunklen, shuffle, null policy, string widths (its overwrite is set by
    /// `mode` above, its codec by `compression`).
    pub bcolz: bcolz::WriterOptions,
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
            jay: jay::WriterOptions::default(),
            dataseries: dataseries::WriterOptions::default(),
            filo: filo::WriterOptions::default(),
            vs: vs::WriterOptions::default(),
            bcolz: bcolz::WriterOptions::default(),
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

/// Replaces a builder held in a field by what `with` makes of it.
fn update<T: Default>(slot: &mut T, with: impl FnOnce(T) -> T) {
    *slot = with(std::mem::take(slot));
}

/// Sets every `(key, value)` of `settings` with `set` and checks that each applies to the
/// format `format` reads from the options, when that is known: [`ReadOptions::set_all`] and
/// [`WriteOptions::set_all`], which differ only in `kind`.
fn set_each<'a, O>(
    options: &mut O,
    kind: SettingKind,
    settings: impl IntoIterator<Item = (&'a str, &'a str)>,
    set: fn(&mut O, &str, &str) -> Result<()>,
    format: fn(&O) -> Option<Format>,
) -> Result<()> {
    for (key, text) in settings {
        set(options, key, text)?;
        if let Some(format) = format(options) {
            check_applies(kind, key, format)?;
        }
    }
    Ok(())
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
            "filo_type" => formats.filo.vector_type = Some(value(key, text.parse())?),
            "filo_dictionary" => formats.filo.dictionary_strings = value(key, flag(text))?,
            "lenient_eof" => {
                formats.vs.parse.eof = match value(key, flag(text))? {
                    true => vs::EofMode::Lenient,
                    false => vs::EofMode::Strict,
                }
            }
            "varint" => formats.vs.parse.varint = value(key, text.parse())?,
            "app_data" => formats.vs.app_data = value(key, text.parse())?,
            "max_dataless_rows" => formats.jay.max_dataless_rows = value(key, count(text))?,
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
        set_each(self, SettingKind::Read, settings, Self::set, |o| o.format)
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
                let policy = match value(key, flag(text))? {
                    true => CollisionPolicy::AsNull,
                    false => CollisionPolicy::Error,
                };
                update(&mut self.jay, |o| o.with_sentinel_collisions(policy));
            }
            "type" | "compress_level" | "extent_size" | "xml" => self.set_dataseries(key, text)?,
            "filo_type" | "filo_chunk_size" | "filo_encoding" => self.set_filo(key, text)?,
            "lenient_eof" => {
                let lenient = value(key, flag(text))?;
                update(&mut self.vs, |o| o.with_lenient_eof(lenient));
            }
            _ => self.set_bcolz(key, text)?,
        }
        Ok(())
    }

    fn set_dataseries(&mut self, key: &str, text: &str) -> Result<()> {
        let options = std::mem::take(&mut self.dataseries);
        self.dataseries = match key {
            "type" => options.with_type_name(text),
            "compress_level" => options.with_level(value(key, parse::level_in(text, 1, 9))?),
            "extent_size" => options.with_extent_size(value(key, parse::positive(text))?),
            _ => {
                let xml = std::fs::read_to_string(text).map_err(|e| {
                    Error::for_setting(key, format!("cannot read the ExtentType XML: {e}"))
                        .with_file(text)
                })?;
                options.with_extent_type_xml(xml)
            }
        };
        Ok(())
    }

    fn set_filo(&mut self, key: &str, text: &str) -> Result<()> {
        let options = std::mem::take(&mut self.filo);
        self.filo = match key {
            "filo_type" => options.with_vector_type(value(key, text.parse())?),
            "filo_chunk_size" => options.with_chunk_size(value(key, parse::positive(text))?),
            _ => options.with_hint(value(key, text.parse())?),
        };
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
        set_each(self, SettingKind::Write, settings, Self::set, |o| o.format)
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

    /// `compression` parsed by the `FromStr` of the output format's codec type.
    fn codec<T: std::str::FromStr<Err = Error>>(&self) -> Result<Option<T>> {
        self.compression
            .as_deref()
            .map(|spec| value("compression", spec.parse()))
            .transpose()
    }

    /// The Jay writer's options: `jay` with `durable`.
    pub(crate) fn jay_writer(&self) -> jay::WriterOptions {
        let options = self.jay.clone();
        match self.durable {
            true => options,
            false => options.with_durable(false),
        }
    }

    /// The DataSeries writer's options: `dataseries` with the codecs of `compression` and
    /// `durable`.
    pub(crate) fn dataseries_writer(&self) -> Result<dataseries::WriterOptions> {
        let mut options = self.dataseries.clone();
        if let Some(codecs) = self.codec()? {
            options = options.with_compression(codecs);
        }
        if !self.durable {
            options = options.with_durable(false);
        }
        Ok(options)
    }

    /// The Filo writer's options (a set's or a bare vector's): `filo` with `mode` and
    /// `durable`.
    pub(crate) fn filo_writer(&self) -> filo::WriterOptions {
        let options = self.filo.clone().with_overwrite(self.overwrite());
        match self.durable {
            true => options,
            false => options.with_durable(false),
        }
    }

    /// The VS writer's and appender's options: `vs` with `compression` and `durable`.
    pub(crate) fn vs_writer(&self) -> Result<vs::WriterOptions> {
        let mut options = self.vs.clone();
        if let Some(compression) = self.codec()? {
            options = options.with_compression(compression);
        }
        if !self.durable {
            options = options.with_durable(false);
        }
        Ok(options)
    }

    /// The bcolz writer's options: `bcolz` with the codec of `compression`, `mode` and
    /// `durable`.
    pub(crate) fn bcolz_writer(&self) -> Result<bcolz::WriterOptions> {
        let mut options = self.bcolz.clone();
        if let Some(compression) = self.codec()? {
            options = options.with_compression(compression);
        }
        if self.overwrite() {
            options = options.with_overwrite(true);
        }
        if !self.durable {
            options = options.with_durable(false);
        }
        Ok(options)
    }
}

#[cfg(test)]
mod tests;
