//! `arrowsmith inspect INPUT [--verify] [--json]`: the format, the schema, the row count and the
//! format's own structure.
//!
//! A format plugs its structure in with one function returning a [`Structure`] (a JSON value
//! and its text rendering); see [`structure`]. Everything else (schema, rows, verification,
//! output) is shared.

mod bcolz;
mod dataseries;
mod filo;
mod ipc;
mod jay;
mod parquet;
mod text;
mod vs;

use std::path::Path;

use arrow_schema::{Field, Schema};
use arrowsmith::filo::FiloType;
use arrowsmith::{Error, Format, ReadOptions, SalvageReport, Skipped};
use serde_json::{json, Map, Value};

use super::progress::Progress;
use super::table::Table;
use super::{input_format, print_out, CliResult, Failure, InspectArgs};

/// What a format tells about its own layout.
pub(crate) struct Structure {
    /// The row count, when the structure knows it without reading the data.
    pub rows: Option<u64>,
    pub json: Value,
    /// Lines for the text report, without indentation.
    pub text: String,
}

/// The format's own structure; formats to come add their arm here.
fn structure(
    path: &Path,
    format: Format,
    args: &InspectArgs,
) -> arrowsmith::Result<Option<Structure>> {
    Ok(Some(match format {
        Format::Jay => jay::structure(path)?,
        Format::DataSeries => {
            dataseries::structure(path, args.verify, args.ds_read.ds_type.as_deref())?
        }
        Format::Filo => filo::set_structure(path)?,
        Format::FiloVector => filo::vector_structure(path)?,
        Format::Bcolz => bcolz::structure(path)?,
        Format::Parquet => parquet::structure(path)?,
        Format::Arrow => ipc::file_structure(path)?,
        Format::ArrowStream => ipc::stream_structure(path)?,
        Format::Csv => text::csv_structure(path)?,
        Format::Ndjson => text::ndjson_structure(path)?,
        Format::Vs => vs::structure(path)?,
    }))
}

/// The row count if the file's metadata holds it (for the progress bar of `convert`).
pub(crate) fn known_rows(path: &Path, format: Format) -> Option<u64> {
    match format {
        Format::Jay => jay::known_rows(path),
        Format::Filo => filo::known_rows(path),
        Format::Vs => vs::known_rows(path),
        Format::Bcolz => arrowsmith::bcolz::open_info(path).ok().map(|i| i.nrows),
        Format::Parquet => arrowsmith::ecosystem::parquet::describe(path)
            .ok()
            .and_then(|i| u64::try_from(i.num_rows).ok()),
        Format::Arrow => arrowsmith::ecosystem::ipc::describe_file(path)
            .ok()
            .map(|i| i.num_rows),
        _ => None,
    }
}

/// The outcome of reading every batch.
struct ReadThrough {
    rows: u64,
    batches: u64,
    error: Option<Error>,
}

fn read_through(
    path: &Path,
    format: Format,
    ds: &super::DsReadArgs,
    filo_type: Option<FiloType>,
    salvage: Option<&SalvageReport>,
) -> ReadThrough {
    let mut outcome = ReadThrough {
        rows: 0,
        batches: 0,
        error: None,
    };
    let mut options = ReadOptions::for_format(format);
    options.format_options.filo_type = filo_type;
    if let Some(report) = salvage {
        options = options.with_salvage(report.clone());
    }
    let reader = match super::dataseries::open(path, &options, ds) {
        Ok(reader) => reader,
        Err(e) => {
            outcome.error = Some(e.with_file(path));
            return outcome;
        }
    };
    let mut progress = Progress::new(|| known_rows(path, format), None);
    for batch in reader {
        match batch {
            Ok(batch) => {
                outcome.rows += batch.num_rows() as u64;
                outcome.batches += 1;
                progress.add(batch.num_rows());
            }
            Err(e) => {
                outcome.error = Some(Error::from_arrow_owned(e).with_file(path));
                break;
            }
        }
    }
    outcome
}

pub(crate) fn run(args: InspectArgs) -> CliResult {
    let path = args.input.as_path();
    let format = input_format(path, args.from)?;
    super::dataseries::check_read_args(format, &args.ds_read)?;
    let mut notes = Vec::new();
    // With --verify, damage that hides the structure (a Jay column's buffers, a DataSeries
    // index) is listed below instead of stopping the report.
    let lists_damage = args.verify && format.salvages();
    let structure = match structure(path, format, &args) {
        Ok(s) => s,
        Err(e) if lists_damage => {
            notes.push(format!("the structure could not be read: {e}"));
            None
        }
        Err(e) => return Err(e.into()),
    };
    let mut ds_read = args.ds_read.clone();
    if format == Format::DataSeries && ds_read.ds_type.is_none() {
        // A file of several types: describe them all, and show the first one's schema.
        if let Ok(file) = arrowsmith::dataseries::DsFile::open(path, Default::default()) {
            if arrowsmith::dataseries::choose_type(&file, None).is_err() {
                if let Some(t) = file.candidate_types().first() {
                    notes.push(format!(
                        "the file declares several extent types; the schema and rows are those of {:?} (choose with --type)",
                        t.name
                    ));
                    ds_read.ds_type = Some(t.name.clone());
                }
            }
        }
    }
    let mut schema_only = ReadOptions::for_format(format);
    schema_only.scan.limit = Some(0);
    schema_only.format_options.filo_type = args.filo_type;
    let schema = match super::dataseries::open(path, &schema_only, &ds_read) {
        Ok(reader) => reader.schema(),
        Err(e) if lists_damage => {
            // The schema of what salvage can read, if anything can.
            let salvaging = schema_only.clone().with_salvage(SalvageReport::new());
            let reader = super::dataseries::open(path, &salvaging, &ds_read).map_err(|_| e)?;
            notes.push("the schema is that of the columns salvage can read".to_string());
            reader.schema()
        }
        Err(e) => return Err(e.into()),
    };

    let mut rows = structure.as_ref().and_then(|s| s.rows);
    // Formats whose metadata does not count rows (CSV, NDJSON) are counted by reading them.
    let read = if args.verify || rows.is_none() {
        Some(read_through(path, format, &ds_read, args.filo_type, None))
    } else {
        None
    };
    // A file that fails to verify is read again with salvage, to list every damaged part, not
    // only the first.
    let damaged = match &read {
        Some(r) if args.verify && r.error.is_some() && format.salvages() => {
            Some(damaged_parts(path, format, &ds_read, args.filo_type))
        }
        _ if args.verify => Some(Vec::new()),
        _ => None,
    };
    let mut verify_error = None;
    let mut verify = None;
    if let Some(read) = read {
        match (read.error, rows) {
            (None, None) => rows = Some(read.rows),
            (None, Some(expected)) if expected != read.rows => {
                verify_error = Some(
                    Error::new(
                        arrowsmith::ErrorClass::RowCountMismatch,
                        format!(
                            "the file says it holds {expected} rows but {} were read",
                            read.rows
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
                verify_error = Some(e);
            }
        }
        if args.verify {
            verify = Some(Verification {
                rows: read.rows,
                batches: read.batches,
                error: verify_error.as_ref().map(|e| e.to_string()),
                damaged: damaged.unwrap_or_default(),
            });
        } else {
            verify_error = None;
        }
    }

    let report = Report {
        path,
        format,
        schema: &schema,
        rows,
        structure: structure.as_ref(),
        notes: &notes,
        verify: verify.as_ref(),
    };
    let text = if args.json {
        let mut text = serde_json::to_string_pretty(&report.json())
            .map_err(|e| Error::new(arrowsmith::ErrorClass::Io, e.to_string()))?;
        text.push('\n');
        text
    } else {
        report.text()
    };
    print_out(&text)?;
    match verify_error {
        Some(e) => Err(Failure::Error(e)),
        None => Ok(()),
    }
}

struct Verification {
    rows: u64,
    batches: u64,
    error: Option<String>,
    /// Every damaged part a salvaging read skipped; a damage that stops even that read is
    /// listed as the part `"file"`.
    damaged: Vec<Skipped>,
}

/// The damaged parts of a file that failed to verify, as a salvaging read finds them.
fn damaged_parts(
    path: &Path,
    format: Format,
    ds: &super::DsReadArgs,
    filo_type: Option<FiloType>,
) -> Vec<Skipped> {
    let report = SalvageReport::new();
    let read = read_through(path, format, ds, filo_type, Some(&report));
    let mut damaged = report.take();
    if let Some(e) = read.error {
        let offset = e.offset();
        let mut whole = Skipped::new("file", e);
        if let Some(offset) = offset {
            whole = whole.at_offset(offset);
        }
        damaged.push(whole);
    }
    damaged
}

struct Report<'a> {
    path: &'a Path,
    format: Format,
    schema: &'a Schema,
    rows: Option<u64>,
    structure: Option<&'a Structure>,
    notes: &'a [String],
    verify: Option<&'a Verification>,
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

fn metadata_json(metadata: &std::collections::HashMap<String, String>) -> Value {
    Value::Object(
        metadata
            .iter()
            .map(|(k, v)| (k.clone(), Value::String(v.clone())))
            .collect(),
    )
}

impl Report<'_> {
    fn json(&self) -> Value {
        let mut report = Map::new();
        report.insert("file".into(), json!(self.path.display().to_string()));
        report.insert("format".into(), json!(self.format.name()));
        report.insert(
            "description".into(),
            json!(crate::cli_spelling(self.format.description())),
        );
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
            self.structure.map_or(Value::Null, |s| s.json.clone()),
        );
        if !self.notes.is_empty() {
            report.insert("notes".into(), json!(self.notes));
        }
        if let Some(v) = self.verify {
            report.insert(
                "verify".into(),
                json!({
                    "ok": v.error.is_none(),
                    "rows": v.rows,
                    "batches": v.batches,
                    "error": v.error,
                    "damaged": v.damaged.iter().map(Skipped::to_json).collect::<Vec<_>>(),
                }),
            );
        }
        Value::Object(report)
    }

    fn text(&self) -> String {
        let mut out = String::new();
        let mut head = Table::new(["file", &self.path.display().to_string()]);
        head.row([
            "format".to_string(),
            format!(
                "{} ({})",
                self.format.name(),
                crate::cli_spelling(self.format.description())
            ),
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
            let mut fields = Table::new(["#", "name", "type", "nullable"]).right_align(&[0]);
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
            let mut keys: Vec<&String> = self.schema.metadata().keys().collect();
            keys.sort();
            let keys: Vec<&str> = keys.into_iter().map(String::as_str).collect();
            out.push_str(&format!("  metadata keys: {}\n", keys.join(", ")));
        }

        if let Some(structure) = self.structure {
            out.push_str(&format!("\n{} structure\n", self.format.name()));
            for line in structure.text.lines() {
                if line.is_empty() {
                    out.push('\n');
                } else {
                    out.push_str("  ");
                    out.push_str(line);
                    out.push('\n');
                }
            }
        }
        for note in self.notes {
            out.push_str(&format!("\nnote: {note}\n"));
        }
        if let Some(v) = self.verify {
            let batches = if v.batches == 1 { "batch" } else { "batches" };
            match &v.error {
                None => out.push_str(&format!(
                    "\nverify: ok, read {} rows in {} {batches}\n",
                    v.rows, v.batches
                )),
                Some(e) => out.push_str(&format!(
                    "\nverify: FAILED after {} rows in {} {batches}: {e}\n",
                    v.rows, v.batches
                )),
            }
            if !v.damaged.is_empty() {
                out.push_str(&format!(
                    "damaged: {} (convert --salvage reads the rest)\n",
                    count(v.damaged.len() as u64, "part", "parts")
                ));
                for part in &v.damaged {
                    out.push_str(&format!("  {part}\n"));
                }
            }
        }
        out
    }
}

/// `n` items, with the noun in the singular or the plural.
pub(crate) fn count(n: impl Into<u64>, one: &str, many: &str) -> String {
    let n = n.into();
    format!("{n} {}", if n == 1 { one } else { many })
}

/// The most rows a text report lists for a repeated part (batches, row groups).
pub(crate) const TEXT_ROWS: usize = 50;
