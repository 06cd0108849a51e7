//! Python arguments → the core's read and write options: the one place that builds
//! `ReadOptions` and `WriteOptions`, and that knows which `**options` keyword applies to which
//! format.
//!
//! The keywords are the command line's format options with underscores (`--filo-type` is
//! `filo_type=`, DataSeries' `--type` is `type=`). An unknown keyword is a `TypeError`, as for
//! any Python function; a known one that does not apply to the format is an `ArgumentError`
//! (a `ValueError`), so that an option never silently does nothing.

use std::path::{Path, PathBuf};

use arrow_array::RecordBatchReader;
use arrowsmith::bcolz::{self, blosc::Shuffle, NullPolicy};
use arrowsmith::dataseries::{DsWriteOptions, Utf8Fields};
use arrowsmith::filo::{FiloType, Hint};
use arrowsmith::vs::{AppDataMode, EofMode, VarintOrder, VsWriteOptions};
use arrowsmith::{
    BatchWriter, CollisionPolicy, Error, Format, FormatOptions, Fragment, Projection, ReadOptions,
    ScanOptions, WriteOptions,
};
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString};

use crate::errors::{self, IntoPyResult};

/// The read keywords and the input formats each applies to.
const READ_OPTIONS: &[(&str, &[Format])] = &[
    ("type", &[Format::DataSeries]),
    ("utf8", &[Format::DataSeries]),
    ("no_checks", &[Format::DataSeries]),
    ("filo_type", &[Format::FiloVector]),
    ("lenient_eof", &[Format::Vs]),
    ("varint", &[Format::Vs]),
    ("app_data", &[Format::Vs]),
];

/// The write keywords and the output formats each applies to.
const WRITE_OPTIONS: &[(&str, &[Format])] = &[
    ("row_group_size", &[Format::Parquet]),
    ("sentinel_collisions_as_na", &[Format::Jay]),
    ("filo_type", &[Format::FiloVector]),
    ("filo_chunk_size", &[Format::Filo]),
    ("filo_encoding", &[Format::Filo, Format::FiloVector]),
    ("lenient_eof", &[Format::Vs]),
    ("bcolz_nulls_as_nan", &[Format::Bcolz]),
    ("bcolz_chunklen", &[Format::Bcolz]),
    ("bcolz_shuffle", &[Format::Bcolz]),
    ("bcolz_carray", &[Format::Bcolz]),
    ("bcolz_no_sync", &[Format::Bcolz]),
    ("compress_level", &[Format::DataSeries]),
    ("extent_size", &[Format::DataSeries]),
    ("xml", &[Format::DataSeries]),
    ("type_name", &[Format::DataSeries]),
    ("type", &[Format::DataSeries]),
];

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
    ) -> PyResult<ReadSpec> {
        let format = input_format(&path, format)?;
        let mut kw = Keywords::new(options, READ_OPTIONS, "input", format)?;
        let mut formats = FormatOptions::default();
        let ds = &mut formats.dataseries;
        ds.type_name = kw.take("type")?;
        if let Some(value) = kw.take::<Bound<'_, PyAny>>("utf8")? {
            ds.utf8 = utf8_fields(&value)?;
        }
        ds.no_checks = kw.flag("no_checks")?;
        formats.filo_type = kw.parsed("filo_type", |s| s.parse::<FiloType>())?;
        if kw.flag("lenient_eof")? {
            formats.vs.parse.eof = EofMode::Lenient;
        }
        if let Some(order) = kw.parsed("varint", parse_varint)? {
            formats.vs.parse.varint = order;
        }
        if let Some(mode) = kw.parsed("app_data", parse_app_data)? {
            formats.vs.app_data = mode;
        }
        let mut spec = ReadSpec {
            path,
            options: ReadOptions {
                format: Some(format),
                scan: ScanOptions::default(),
                format_options: formats,
            },
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

    /// Reads one fragment, with its own format and format options.
    pub fn for_fragment(fragment: &Fragment) -> ReadSpec {
        ReadSpec {
            path: fragment.path.clone(),
            options: ReadOptions {
                format: Some(fragment.format),
                scan: ScanOptions::default(),
                format_options: fragment.options.clone(),
            },
            fragment: Some(fragment.clone()),
        }
    }

    /// A fresh reader.
    pub fn open(&self) -> arrowsmith::Result<Box<dyn RecordBatchReader + Send>> {
        match &self.fragment {
            Some(fragment) => arrowsmith::open_fragment(fragment, &self.options),
            None => arrowsmith::open(&self.path, &self.options),
        }
    }

    /// The extent type a DataSeries read was asked for (`type=`).
    pub fn dataseries_type(&self) -> Option<&str> {
        self.options.format_options.dataseries.type_name.as_deref()
    }

    pub fn set_dataseries_type(&mut self, name: String) {
        self.options.format_options.dataseries.type_name = Some(name);
    }
}

/// The input's format: as named, or recognised from the content and the name.
fn input_format(path: &Path, named: Option<&str>) -> PyResult<Format> {
    match named {
        Some(name) => parse_format(name),
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

/// `utf8=True` reads every variable32 field as Utf8, `utf8=["a", "b"]` the named ones.
fn utf8_fields(value: &Bound<'_, PyAny>) -> PyResult<Utf8Fields> {
    if let Ok(all) = value.extract::<bool>() {
        return Ok(if all {
            Utf8Fields::All
        } else {
            Utf8Fields::Hinted
        });
    }
    if !value.is_instance_of::<PyString>() {
        if let Ok(names) = value.extract::<Vec<String>>() {
            return Ok(Utf8Fields::Named(names));
        }
    }
    Err(PyTypeError::new_err(
        "option utf8= takes True or a list of field names",
    ))
}

fn parse_varint(text: &str) -> arrowsmith::Result<VarintOrder> {
    match text {
        "leb128" => Ok(VarintOrder::Leb128),
        "msb-first" | "msb_first" => Ok(VarintOrder::MsbFirst),
        _ => Err(Error::invalid_argument(format!(
            "option varint={text:?}: expected \"leb128\" or \"msb-first\""
        ))),
    }
}

fn parse_app_data(text: &str) -> arrowsmith::Result<AppDataMode> {
    match text {
        "json" => Ok(AppDataMode::Json),
        "msgpack" => Ok(AppDataMode::Msgpack),
        _ => Err(Error::invalid_argument(format!(
            "option app_data={text:?}: expected \"json\" or \"msgpack\""
        ))),
    }
}

/// `**options`, taken one by one; whatever is left over when it is dropped was checked by
/// [`Keywords::new`] to be known.
struct Keywords<'py> {
    dict: Option<Bound<'py, PyDict>>,
}

impl<'py> Keywords<'py> {
    /// Refuses unknown keywords (TypeError) and known ones that do not apply to `format`.
    fn new(
        options: Option<&Bound<'py, PyDict>>,
        table: &[(&str, &[Format])],
        direction: &str,
        format: Format,
    ) -> PyResult<Keywords<'py>> {
        let Some(dict) = options else {
            return Ok(Keywords { dict: None });
        };
        for key in dict.keys() {
            let key: String = key.extract()?;
            let Some((_, formats)) = table.iter().find(|(name, _)| *name == key) else {
                let mut known: Vec<&str> = table.iter().map(|(name, _)| *name).collect();
                known.sort_unstable();
                known.dedup();
                return Err(PyTypeError::new_err(format!(
                    "unexpected option {key}=; the {direction} options are {}",
                    known.join(", ")
                )));
            };
            // An option set to None or False is the default: accepted for any format, so that
            // callers can pass their settings through unconditionally.
            let value = dict.get_item(&key)?;
            let unset = match &value {
                None => true,
                Some(v) => v.is_none() || v.extract::<bool>().is_ok_and(|b| !b),
            };
            if !unset && !formats.contains(&format) {
                let applies: Vec<&str> = formats.iter().map(|f| f.name()).collect();
                return Err(errors::argument(format!(
                    "option {key}= applies to {} {direction}, not {}",
                    applies.join(" and "),
                    format.name()
                )));
            }
        }
        Ok(Keywords {
            dict: Some(dict.clone()),
        })
    }

    fn take<T>(&mut self, key: &str) -> PyResult<Option<T>>
    where
        T: for<'a> FromPyObject<'a, 'py>,
    {
        let Some(dict) = &self.dict else {
            return Ok(None);
        };
        match dict.get_item(key)? {
            None => Ok(None),
            Some(v) if v.is_none() => Ok(None),
            Some(v) => v.extract::<T>().map(Some).map_err(|_| {
                let found = v
                    .get_type()
                    .name()
                    .map(|n| n.to_string())
                    .unwrap_or_default();
                PyTypeError::new_err(format!(
                    "option {key}= has the wrong type ({found}): expected {}",
                    std::any::type_name::<T>()
                        .rsplit("::")
                        .next()
                        .unwrap_or("another type")
                ))
            }),
        }
    }

    fn flag(&mut self, key: &str) -> PyResult<bool> {
        Ok(self.take::<bool>(key)?.unwrap_or(false))
    }

    /// A text option parsed by the core's parser (its error names the valid values).
    fn parsed<T>(
        &mut self,
        key: &str,
        parse: impl FnOnce(&str) -> arrowsmith::Result<T>,
    ) -> PyResult<Option<T>> {
        match self.take::<String>(key)? {
            None => Ok(None),
            Some(text) => parse(&text)
                .map_err(|e| {
                    Error::invalid_argument(format!("option {key}={text:?}: {}", e.message()))
                })
                .py_err()
                .map(Some),
        }
    }

    fn positive(&mut self, key: &str) -> PyResult<Option<usize>> {
        match self.take::<i64>(key)? {
            None => Ok(None),
            Some(n) if n >= 1 => Ok(Some(n as usize)),
            Some(n) => Err(errors::argument(format!(
                "option {key}={n}: must be at least 1"
            ))),
        }
    }
}

/// What `write` does when the target exists.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Error,
    Overwrite,
    Append,
}

impl Mode {
    pub fn parse(text: &str) -> PyResult<Mode> {
        match text {
            "error" => Ok(Mode::Error),
            "overwrite" => Ok(Mode::Overwrite),
            "append" => Ok(Mode::Append),
            _ => Err(errors::argument(format!(
                "mode={text:?}: expected \"error\", \"overwrite\" or \"append\""
            ))),
        }
    }
}

/// Everything a write needs besides the data.
#[derive(Debug)]
pub struct WriteSpec {
    pub path: PathBuf,
    pub format: Format,
    pub mode: Mode,
    options: WriteOptions,
}

impl WriteSpec {
    pub fn new(
        path: PathBuf,
        format: Option<&str>,
        mode: &str,
        compression: Option<String>,
        durable: bool,
        expected_rows: Option<u64>,
        options: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<WriteSpec> {
        let mode = Mode::parse(mode)?;
        let format = match format {
            Some(name) => parse_format(name)?,
            // Appending: the target exists, so its structure tells.
            None if mode == Mode::Append && path.exists() => Format::detect(&path).py_err()?,
            None => Format::for_output(&path).py_err()?,
        };
        if mode == Mode::Append && !matches!(format, Format::Vs | Format::Bcolz) {
            return Err(errors::argument(format!(
                "mode=\"append\" applies to vs and bcolz, not {}",
                format.name()
            )));
        }
        if !durable && mode == Mode::Append {
            return Err(errors::argument(
                "durable=False does not apply to mode=\"append\", which always flushes before it commits",
            ));
        }
        if let Some(spec) = &compression {
            check_compression(format, spec)
                .map_err(|e| match e.message().contains("compression") {
                    true => e,
                    false => {
                        Error::invalid_argument(format!("compression={spec:?}: {}", e.message()))
                    }
                })
                .py_err()?;
        }
        let mut kw = Keywords::new(options, WRITE_OPTIONS, "output", format)?;
        let mut options = WriteOptions {
            format: Some(format),
            compression,
            row_group_size: kw.positive("row_group_size")?,
            overwrite: mode == Mode::Overwrite,
            durable,
            sentinel_collisions: if kw.flag("sentinel_collisions_as_na")? {
                CollisionPolicy::AsNull
            } else {
                CollisionPolicy::default()
            },
            filo_chunk_size: kw.positive("filo_chunk_size")?,
            filo_hint: kw.parsed("filo_encoding", |s| s.parse::<Hint>())?,
            filo_type: kw.parsed("filo_type", |s| s.parse::<FiloType>())?,
            vs: VsWriteOptions {
                lenient_eof: kw.flag("lenient_eof")?,
                ..Default::default()
            },
            bcolz: bcolz::WriterOptions::default(),
            dataseries: DsWriteOptions::default(),
        };
        let mut bcolz_options = bcolz::WriterOptions::default();
        if kw.flag("bcolz_nulls_as_nan")? {
            bcolz_options = bcolz_options.with_null_policy(NullPolicy::Sentinel);
        }
        if let Some(n) = kw.positive("bcolz_chunklen")? {
            bcolz_options = bcolz_options.with_chunklen(n as u64);
        }
        if let Some(code) = kw.take::<i64>("bcolz_shuffle")? {
            let shuffle = Shuffle::from_code(code).ok_or_else(|| {
                errors::argument(format!(
                    "option bcolz_shuffle={code}: expected 0 (none), 1 (byte) or 2 (bit)"
                ))
            })?;
            bcolz_options = bcolz_options.with_shuffle(shuffle);
        }
        if kw.flag("bcolz_carray")? {
            bcolz_options = bcolz_options.with_kind(bcolz::Kind::Carray);
        }
        if kw.flag("bcolz_no_sync")? {
            if mode == Mode::Append {
                return Err(errors::argument(
                    "option bcolz_no_sync= does not apply to mode=\"append\", which always flushes before it commits",
                ));
            }
            bcolz_options = bcolz_options.with_durable(false);
        }
        if let Some(rows) = expected_rows {
            // bcolz chooses its chunk length from the expected length.
            bcolz_options = bcolz_options.with_expected_len(rows.max(1));
        }
        options.bcolz = bcolz_options;
        options.dataseries = DsWriteOptions {
            level: kw.take("compress_level")?,
            extent_size: kw.positive("extent_size")?,
            type_name: output_type_name(kw.take("type_name")?, kw.take("type")?)?,
            // The command line's --xml names a file; the library takes its text.
            xml: match kw.take::<PathBuf>("xml")? {
                Some(file) => Some(
                    std::fs::read_to_string(&file)
                        .map_err(|e| Error::from(e).with_file(&file))
                        .py_err()?,
                ),
                None => None,
            },
        };
        Ok(WriteSpec {
            path,
            format,
            mode,
            options,
        })
    }

    /// The writer for batches of `schema`: a new file, or an appender for mode="append" on
    /// an existing bcolz dataset.
    pub fn create(
        &self,
        schema: arrow_schema::SchemaRef,
    ) -> arrowsmith::Result<Box<dyn BatchWriter + Send>> {
        if self.mode == Mode::Append && self.format == Format::Bcolz && self.path.exists() {
            return Ok(Box::new(bcolz::Appender::try_new(
                &self.path,
                schema,
                self.options.bcolz.null_policy(),
            )?));
        }
        arrowsmith::create(&self.path, schema, &self.options)
    }

    /// Whether the rows go through `vs::append` (an existing VS file in mode="append").
    pub fn appends_vs(&self) -> bool {
        self.mode == Mode::Append && self.format == Format::Vs && self.path.exists()
    }

    pub fn vs_append_options(&self) -> VsWriteOptions {
        let mut vs = self.options.vs.clone();
        if let Some(spec) = &self.options.compression {
            vs.compression = arrowsmith::vs::Compression::parse(spec);
        }
        vs
    }
}

/// The DataSeries output's extent type: `type_name=`, or `type=` as the command line also
/// spells it.
fn output_type_name(type_name: Option<String>, type_: Option<String>) -> PyResult<Option<String>> {
    match (type_name, type_) {
        (Some(a), Some(b)) if a != b => Err(errors::argument(format!(
            "type={b:?} and type_name={a:?} name different extent types; give one"
        ))),
        (a, b) => Ok(a.or(b)),
    }
}

/// A compression spec is checked before any data is read, by the parser of the target format.
fn check_compression(format: Format, spec: &str) -> arrowsmith::Result<()> {
    match format {
        Format::Parquet => arrowsmith::ecosystem::parquet::compression(Some(spec)).map(|_| ()),
        Format::Arrow | Format::ArrowStream => {
            arrowsmith::ecosystem::ipc::compression(Some(spec)).map(|_| ())
        }
        Format::DataSeries => {
            arrowsmith::dataseries::WriterOptions::from_compression(Some(spec)).map(|_| ())
        }
        Format::Vs => match arrowsmith::vs::Compression::parse(spec) {
            Some(_) => Ok(()),
            None => Err(Error::invalid_argument(format!(
                "compression={spec:?}: vs output takes none, gzip or snappy"
            ))),
        },
        Format::Bcolz => bcolz::WriterOptions::default()
            .with_compression(spec)
            .map(|_| ()),
        other => Err(Error::invalid_argument(format!(
            "compression= applies to parquet, arrow, arrows, dataseries, vs and bcolz output, not {}",
            other.name()
        ))),
    }
}
