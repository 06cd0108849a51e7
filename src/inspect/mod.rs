//! What a file holds, for a person or a program to read: its format, schema and row count, the
//! format's own structure (a Jay file's buffers, DataSeries extents, Filo column chunks, VS
//! blocks, bcolz chunks, Parquet row groups, Arrow IPC batches), and, when asked, whether every
//! batch reads.
//!
//! [`inspect()`] builds a [`Report`]; [`Report::to_json`] is what `arrowsmith inspect --json`
//! prints and Python's `arrowsmith.inspect` returns, [`Report::to_text`] the command line's text
//! report. A format adds its structure with one function returning a [`Structure`] (see
//! `structure` in this module's source); the schema, the row count and the verification are
//! shared.
//!
//! ```
//! use arrowsmith::inspect::{inspect, InspectOptions};
//!
//! let options = InspectOptions {
//!     verify: true,
//!     ..Default::default()
//! };
//! let report = inspect("data/jay/tiny.jay", &options)?;
//! assert_eq!(report.rows, Some(3));
//! let json = report.to_json();
//! assert_eq!(json["structure"]["columns"][1]["name"], "B");
//! assert_eq!(json["verify"]["ok"], true);
//! assert!(report.to_text().contains("verify: ok, read 3 rows in 1 batch"));
//! # Ok::<(), arrowsmith::Error>(())
//! ```

mod bcolz;
mod dataseries;
mod filo;
mod ipc;
mod jay;
mod parquet;
mod table;
mod text;
mod vs;

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use arrow_array::RecordBatchReader;
use arrow_schema::{Field, SchemaRef};
use serde_json::{json, Map, Value};

use std::sync::Arc;

use crate::dataseries::DsFile;
use crate::error::{Error, ErrorClass, Result};
use crate::format::Format;
use crate::input::remote::Origin;
use crate::input::Input;
use crate::jay::JayFile;
use crate::options::ReadOptions;
use crate::salvage::{SalvageReport, Skipped};
use crate::scan::ScanOptions;
use crate::vs::VsFile;

pub use table::TextTable;

/// What [`inspect`] reads, and whether it verifies.
#[derive(Debug, Clone, Default)]
pub struct InspectOptions {
    /// The format (recognised from the content, then the name, when `None`) and the format's
    /// read settings: the DataSeries extent type, Utf8 fields and checks, a bare Filo vector's
    /// element type, VS parsing. Its scan settings are not used: the report describes every
    /// column, and counts and verifies every row.
    pub read: ReadOptions,
    /// Also read every batch and report whether the whole file reads
    /// ([`Report::verification`]); for the formats that salvage, a file that does not is read
    /// again skipping its damaged parts, to list every one of them.
    pub verify: bool,
}

/// The report of [`inspect`].
#[derive(Debug)]
pub struct Report {
    /// The path inspected, as given.
    pub file: PathBuf,
    /// The format it was read as.
    pub format: Format,
    /// The format in words ([`Format::description`]).
    pub description: String,
    /// The schema of the batches a read gives (with verification on a damaged file, that of
    /// what salvage can read, as a note says).
    pub schema: SchemaRef,
    /// The row count: as the format's metadata holds it, or as counted by reading every batch
    /// (CSV, NDJSON); `None` when neither could tell.
    pub rows: Option<u64>,
    /// The format's own structure; `None` only when verification found damage that hides it
    /// (a note says why).
    pub structure: Option<Structure>,
    /// What a reader of the report should know: which extent type of several is reported, why
    /// the structure or the row count is missing.
    pub notes: Vec<String>,
    /// How reading every batch went, when [`InspectOptions::verify`] asked for it.
    pub verification: Option<Verification>,
    /// The error verification met, for a caller that fails with it after printing the report.
    failure: Option<Error>,
    /// How the rendering spells the report's own words: see [`Report::spell_with`].
    spelling: fn(&str) -> String,
}

/// What a format tells about its own layout.
#[derive(Debug, Clone)]
pub struct Structure {
    /// The row count, when the structure knows it without reading the data.
    pub rows: Option<u64>,
    /// The structure as JSON: an object whose keys are the format's own terms.
    pub json: Value,
    /// The structure as lines of text, each ending with a line break, without indentation.
    pub text: String,
}

/// The outcome of reading every batch of the file.
#[derive(Debug, Clone)]
pub struct Verification {
    /// Rows read before the end or the first error.
    pub rows: u64,
    /// Batches read before the end or the first error.
    pub batches: u64,
    /// The error that stopped the read, or the disagreement between the rows read and the row
    /// count the file states, as a one-line message; `None` when the whole file read.
    pub error: Option<String>,
    /// Every damaged part a salvaging read skipped; a damage that stops even that read is
    /// listed as the part `"file"`. Empty when the file read whole.
    pub damaged: Vec<Skipped>,
}

/// Inspects the file or directory at `path`: see the [module](self) documentation.
///
/// Fails when the file cannot be read at all, or when its structure or schema cannot be, unless
/// verification is on for a format that salvages (Jay, DataSeries, Filo, VS, bcolz): then the
/// notes say what could not be read and the verification lists the damage. A failed
/// verification is in the report, not an `Err`; [`Report::failure`] holds its error.
pub fn inspect(path: impl AsRef<Path>, options: &InspectOptions) -> Result<Report> {
    inspect_with_progress(path, options, &mut |_| {})
}

/// As [`inspect`], calling `progress` after each batch a reading pass (the row count, the
/// verification, the listing of damaged parts) reads, with the rows that pass has read so far:
/// a front end draws a progress bar with it.
pub fn inspect_with_progress(
    path: impl AsRef<Path>,
    options: &InspectOptions,
    progress: &mut dyn FnMut(u64),
) -> Result<Report> {
    let path = path.as_ref();
    crate::input::refuse_stream(path, "inspect")?;
    let mut origin = Origin::resolve(path, &options.read.storage)?;
    let format = match options.read.format {
        Some(format) => format,
        None => origin.detect()?,
    };
    let mut read = ReadOptions {
        format: Some(format),
        scan: ScanOptions::default(),
        format_options: options.read.format_options.clone(),
        storage: options.read.storage.clone(),
    };
    let mut notes = Vec::new();
    // With verification, damage that hides the structure (a Jay column's buffers, a DataSeries
    // index) is listed below instead of stopping the report.
    let lists_damage = options.verify && format.salvages();
    let structure = match structure(path, &origin, format, &read, options.verify) {
        Ok(s) => Some(s),
        Err(e) if lists_damage => {
            notes.push(format!("the structure could not be read: {e}"));
            None
        }
        Err(e) => return Err(e),
    };
    if format == Format::DataSeries {
        choose_first_of_several_types(&origin, &mut read, &mut notes);
    }
    let (input, schema) = open_for_report(path, &read, lists_damage, &mut notes)?;

    let mut rows = structure.as_ref().and_then(|s| s.rows);
    // Formats whose metadata does not count rows (CSV, NDJSON) are counted by reading them.
    let mut verification = None;
    let mut failure = None;
    if options.verify || rows.is_none() {
        let reader = match &input {
            Some(input) => input.reader(&ScanOptions::default()),
            // The error the first opening met, met again.
            None => Input::open(path, &read).and_then(|i| i.reader(&ScanOptions::default())),
        };
        let pass = read_through(path, reader, progress);
        let read_failed = pass.error.is_some();
        let mut error = None;
        match (pass.error, rows) {
            (None, None) => rows = Some(pass.rows),
            (None, Some(expected)) if expected != pass.rows => {
                error = Some(
                    Error::new(
                        ErrorClass::RowCountMismatch,
                        format!(
                            "the file says it holds {expected} rows but {} were read",
                            pass.rows
                        ),
                    )
                    .with_file(path),
                );
            }
            (None, Some(_)) => {}
            (Some(e), _) => {
                if rows.is_none() {
                    notes.push(format!("the rows could not be counted: {e}"));
                }
                error = Some(e);
            }
        }
        if options.verify {
            // A file that fails to read is read again with salvage, to list every damaged part,
            // not only the first.
            let damaged = if read_failed && format.salvages() {
                damaged_parts(path, &read, progress)
            } else {
                Vec::new()
            };
            verification = Some(Verification {
                rows: pass.rows,
                batches: pass.batches,
                error: error.as_ref().map(Error::to_string),
                damaged,
            });
            failure = error;
        }
    }
    Ok(Report {
        file: path.to_path_buf(),
        format,
        description: format.description().to_string(),
        schema,
        rows,
        structure,
        notes,
        verification,
        failure,
        spelling: as_written,
    })
}

/// A DataSeries file of several extent types, none chosen: the structure describes them all;
/// the schema and the rows are the first one's, as a note says.
fn choose_first_of_several_types(origin: &Origin, read: &mut ReadOptions, notes: &mut Vec<String>) {
    if read.format_options.dataseries.type_name.is_some() {
        return;
    }
    let Ok(file) = open_dataseries(origin) else {
        return;
    };
    if crate::dataseries::choose_type(&file, None).is_ok() {
        return;
    }
    if let Some(first) = file.candidate_types().first() {
        notes.push(format!(
            "the file declares several extent types; the schema and rows are those of {:?} (choose with the type option)",
            first.name
        ));
        read.format_options.dataseries.type_name = Some(first.name.clone());
    }
}

/// The input (one opening serves the schema and the reading pass) and the report's schema. A
/// file that does not open whole is, when damage is listed, opened for salvage for the schema
/// of what can be read; the input is then `None`.
fn open_for_report(
    path: &Path,
    read: &ReadOptions,
    lists_damage: bool,
    notes: &mut Vec<String>,
) -> Result<(Option<Input>, SchemaRef)> {
    match Input::open(path, read) {
        Ok(input) => {
            let schema = input.schema();
            Ok((Some(input), schema))
        }
        Err(e) if lists_damage => {
            let salvaging = read.clone().with_salvage(SalvageReport::new());
            let salvaged = Input::open(path, &salvaging).map_err(|_| e)?;
            notes.push("the schema is that of the columns salvage can read".to_string());
            Ok((None, salvaged.schema()))
        }
        Err(e) => Err(e),
    }
}

/// The library's own spelling of a report's words.
fn as_written(text: &str) -> String {
    text.to_string()
}

/// The format's own structure; a format to come adds its arm here. A remote input is
/// described by the formats whose structure is read by ranges (Jay, DataSeries, VS, Parquet,
/// Arrow IPC); another one fails as its opening does.
fn structure(
    path: &Path,
    origin: &Origin,
    format: Format,
    read: &ReadOptions,
    verify: bool,
) -> Result<Structure> {
    let wanted = read.format_options.dataseries.type_name.as_deref();
    let local = match origin {
        Origin::Local(local) => local.as_path(),
        Origin::Object(source) => {
            return match format {
                Format::Jay => Ok(jay::structure(&JayFile::open_source(
                    Arc::clone(source),
                    false,
                )?)),
                Format::DataSeries => {
                    dataseries::structure(&open_dataseries(origin)?, path, verify, wanted)
                }
                Format::Vs => {
                    vs::structure(&VsFile::open_source(Arc::clone(source), vs::options())?)
                }
                Format::Parquet => parquet::source_structure(Arc::clone(source)),
                Format::Arrow | Format::ArrowStream => {
                    ipc::source_structure(Arc::clone(source), format == Format::ArrowStream)
                }
                _ => Err(undescribed(path, read)),
            }
        }
        Origin::Prefix(_) => return Err(undescribed(path, read)),
    };
    match format {
        Format::Jay => Ok(jay::structure(&JayFile::open(local)?)),
        Format::DataSeries => {
            dataseries::structure(&open_dataseries(origin)?, local, verify, wanted)
        }
        Format::Filo => filo::set_structure(local),
        Format::FiloVector => filo::vector_structure(local),
        Format::Bcolz => bcolz::structure(local),
        Format::Parquet => parquet::structure(local),
        Format::Arrow => ipc::file_structure(local),
        Format::ArrowStream => ipc::stream_structure(local),
        Format::Csv => text::csv_structure(local),
        Format::Ndjson => text::ndjson_structure(local),
        Format::Vs => vs::structure(&VsFile::open(local, vs::options())?),
    }
}

/// A DataSeries file as the report describes it, wherever it is.
fn open_dataseries(origin: &Origin) -> Result<DsFile> {
    let options = crate::dataseries::OpenOptions::default();
    match origin {
        Origin::Local(path) => DsFile::open(path, options),
        Origin::Object(source) => DsFile::open_source(Arc::clone(source), options),
        Origin::Prefix(_) => Err(Error::invalid_argument(
            "the URL names a prefix, not one object",
        )),
    }
}

/// The error for a remote input whose structure is not described: its opening's, which says
/// why it is not read remotely.
fn undescribed(path: &Path, read: &ReadOptions) -> Error {
    match Input::open(path, read) {
        Err(e) => e,
        Ok(input) => Error::unsupported(format!(
            "the structure of a remote {} input is not described",
            input.format()
        ))
        .with_file(path),
    }
}

/// The row count if the file's metadata holds it without reading the data (a progress bar's
/// total): [`Input::rows`] of `path` read as `format` with default settings; `None` when it
/// cannot be opened.
pub fn known_rows(path: &Path, format: Format) -> Option<u64> {
    Input::open(path, &ReadOptions::for_format(format))
        .ok()?
        .rows()
}

/// The outcome of reading every batch.
struct ReadThrough {
    rows: u64,
    batches: u64,
    error: Option<Error>,
}

fn read_through(
    path: &Path,
    reader: Result<Box<dyn RecordBatchReader + Send>>,
    progress: &mut dyn FnMut(u64),
) -> ReadThrough {
    let mut outcome = ReadThrough {
        rows: 0,
        batches: 0,
        error: None,
    };
    let reader = match reader {
        Ok(reader) => reader,
        Err(e) => {
            outcome.error = Some(e.with_file(path));
            return outcome;
        }
    };
    for batch in reader {
        match batch {
            Ok(batch) => {
                outcome.rows += batch.num_rows() as u64;
                outcome.batches += 1;
                progress(outcome.rows);
            }
            Err(e) => {
                outcome.error = Some(Error::from_arrow_owned(e).with_file(path));
                break;
            }
        }
    }
    outcome
}

/// The damaged parts of a file that failed to verify, as a salvaging read finds them.
fn damaged_parts(
    path: &Path,
    options: &ReadOptions,
    progress: &mut dyn FnMut(u64),
) -> Vec<Skipped> {
    let report = SalvageReport::new();
    let salvaging = options.clone().with_salvage(report.clone());
    let reader = Input::open(path, &salvaging).and_then(|i| i.reader(&salvaging.scan));
    let pass = read_through(path, reader, progress);
    let mut damaged = report.take();
    if let Some(e) = pass.error {
        let offset = e.offset();
        let mut whole = Skipped::new("file", e);
        if let Some(offset) = offset {
            whole = whole.at_offset(offset);
        }
        damaged.push(whole);
    }
    damaged
}

impl Report {
    /// The error verification met (the first damage, or a row count that disagrees with the
    /// file's), for a caller that fails with it after showing the report; `None` when the file
    /// verified or verification was not asked for.
    pub fn failure(&self) -> Option<&Error> {
        self.failure.as_ref()
    }

    /// The report's [failure](Report::failure), taken out of it.
    pub fn into_failure(self) -> Option<Error> {
        self.failure
    }

    /// Renders the report's own words (the description, the notes, the structure's text, the
    /// verification's error and its pointer to salvage) through `spell`. The library names a
    /// setting as Python's keywords and SQL's `OPTIONS` do (`the type option`); a front end that
    /// calls it otherwise (a command line's `--type`) gives its spelling once, before
    /// rendering. The fields keep the library's words.
    pub fn spell_with(&mut self, spell: fn(&str) -> String) {
        self.spelling = spell;
    }

    /// The report as JSON: `file`, `format`, `description`, `rows` (null when unknown),
    /// `columns`, `schema` (`fields` with `name`, `type`, `nullable` and, when there is some,
    /// `metadata`; the schema's `metadata`), `structure` (null when it could not be read),
    /// `notes` (only when there are some), and with verification `verify` (`ok`, `rows`,
    /// `batches`, `error`, `damaged`). Metadata keys are sorted.
    pub fn to_json(&self) -> Value {
        let mut report = Map::new();
        report.insert("file".into(), json!(self.file.display().to_string()));
        report.insert("format".into(), json!(self.format.name()));
        let spell = self.spelling;
        report.insert("description".into(), json!(spell(&self.description)));
        report.insert("rows".into(), json!(self.rows));
        report.insert("columns".into(), json!(self.schema.fields().len()));
        report.insert(
            "schema".into(),
            json!({
                "fields": self.schema.fields().iter().map(|f| field_json(f)).collect::<Vec<_>>(),
                "metadata": metadata_json(self.schema.metadata()),
            }),
        );
        report.insert(
            "structure".into(),
            self.structure
                .as_ref()
                .map_or(Value::Null, |s| s.json.clone()),
        );
        if !self.notes.is_empty() {
            let notes: Vec<String> = self.notes.iter().map(|n| spell(n)).collect();
            report.insert("notes".into(), json!(notes));
        }
        if let Some(v) = &self.verification {
            report.insert(
                "verify".into(),
                json!({
                    "ok": v.error.is_none(),
                    "rows": v.rows,
                    "batches": v.batches,
                    "error": v.error.as_deref().map(spell),
                    "damaged": v.damaged.iter().map(Skipped::to_json).collect::<Vec<_>>(),
                }),
            );
        }
        Value::Object(report)
    }

    /// The report as text for a person: a head (file, format, rows, columns), the schema, the
    /// format's structure indented under its heading, the notes, and the verification with
    /// every damaged part.
    pub fn to_text(&self) -> String {
        let spell = self.spelling;
        let mut out = String::new();
        let mut head = TextTable::new(["file", &self.file.display().to_string()]);
        head.row([
            "format".to_string(),
            format!("{} ({})", self.format.name(), spell(&self.description)),
        ]);
        head.row([
            "rows".to_string(),
            self.rows.map_or("unknown".to_string(), |r| r.to_string()),
        ]);
        head.row([
            "columns".to_string(),
            self.schema.fields().len().to_string(),
        ]);
        out.push_str(&head.render(""));

        out.push_str("\nschema\n");
        if self.schema.fields().is_empty() {
            out.push_str("  (no columns)\n");
        } else {
            let mut fields = TextTable::new(["#", "name", "type", "nullable"]).right_align(&[0]);
            for (i, f) in self.schema.fields().iter().enumerate() {
                fields.row([
                    i.to_string(),
                    f.name().to_string(),
                    f.data_type().to_string(),
                    if f.is_nullable() { "yes" } else { "no" }.to_string(),
                ]);
            }
            out.push_str(&fields.render("  "));
        }
        if !self.schema.metadata().is_empty() {
            let keys = sorted_keys(self.schema.metadata());
            let keys: Vec<&str> = keys.into_iter().map(String::as_str).collect();
            out.push_str(&format!("  metadata keys: {}\n", keys.join(", ")));
        }

        if let Some(structure) = &self.structure {
            out.push_str(&format!("\n{} structure\n", self.format.name()));
            for line in spell(&structure.text).lines() {
                if line.is_empty() {
                    out.push('\n');
                } else {
                    out.push_str("  ");
                    out.push_str(line);
                    out.push('\n');
                }
            }
        }
        for note in &self.notes {
            out.push_str(&format!("\nnote: {}\n", spell(note)));
        }
        if let Some(v) = &self.verification {
            let batches = if v.batches == 1 { "batch" } else { "batches" };
            match &v.error {
                None => out.push_str(&format!(
                    "\nverify: ok, read {} rows in {} {batches}\n",
                    v.rows, v.batches
                )),
                Some(e) => out.push_str(&format!(
                    "\nverify: FAILED after {} rows in {} {batches}: {}\n",
                    v.rows,
                    v.batches,
                    spell(e)
                )),
            }
            if !v.damaged.is_empty() {
                out.push_str(&spell(&format!(
                    "damaged: {} (the salvage option reads the rest)\n",
                    count(v.damaged.len() as u64, "part", "parts")
                )));
                for part in &v.damaged {
                    out.push_str(&format!("  {part}\n"));
                }
            }
        }
        out
    }
}

fn field_json(field: &Field) -> Value {
    let mut value = json!({
        "name": field.name(),
        "type": field.data_type().to_string(),
        "nullable": field.is_nullable(),
    });
    if !field.metadata().is_empty() {
        value["metadata"] = metadata_json(field.metadata());
    }
    value
}

fn sorted_keys(metadata: &HashMap<String, String>) -> Vec<&String> {
    let mut keys: Vec<&String> = metadata.keys().collect();
    keys.sort();
    keys
}

/// Metadata as a JSON object, its keys sorted so that the report is the same on every run.
fn metadata_json(metadata: &HashMap<String, String>) -> Value {
    Value::Object(
        sorted_keys(metadata)
            .into_iter()
            .map(|k| (k.clone(), Value::String(metadata[k].clone())))
            .collect(),
    )
}

/// `n` items, with the noun in the singular or the plural.
fn count(n: impl Into<u64>, one: &str, many: &str) -> String {
    let n = n.into();
    format!("{n} {}", if n == 1 { one } else { many })
}

/// The most rows a text report lists for a repeated part (batches, row groups).
const TEXT_ROWS: usize = 50;
