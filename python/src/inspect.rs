//! `inspect`, `formats` and the row count a format's metadata holds.

use std::collections::HashMap;
use std::path::PathBuf;

use arrow_schema::{Field, Schema};
use arrowsmith::{Error, ErrorClass, Format};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use serde_json::{json, Map, Value};

use crate::errors::IntoPyResult;
use crate::options::ReadSpec;

/// The row count if the source's structure holds it, without decoding the data: the sum of
/// its fragments' rows when each is exact (every format but CSV, NDJSON and IPC streams).
pub fn known_rows(spec: &ReadSpec) -> Option<u64> {
    // One fragment per natural unit at most: the listing only reads headers.
    const WHOLE: usize = 1 << 40;
    let fragments = arrowsmith::fragments(&spec.path, &spec.options, WHOLE).ok()?;
    fragments
        .iter()
        .all(|f| f.rows_exact)
        .then(|| fragments.iter().map(|f| f.rows).sum())
}

/// Every row read: how many, in how many batches, and the error that stopped it, if one did.
struct ReadThrough {
    rows: u64,
    batches: u64,
    error: Option<Error>,
}

fn read_through(spec: &ReadSpec) -> ReadThrough {
    let mut outcome = ReadThrough {
        rows: 0,
        batches: 0,
        error: None,
    };
    match spec.open() {
        Err(e) => outcome.error = Some(e.with_file(&spec.path)),
        Ok(reader) => {
            for batch in reader {
                match batch {
                    Ok(batch) => {
                        outcome.rows += batch.num_rows() as u64;
                        outcome.batches += 1;
                    }
                    Err(e) => {
                        outcome.error = Some(Error::from_arrow_owned(e).with_file(&spec.path));
                        break;
                    }
                }
            }
        }
    }
    outcome
}

/// The report of `arrowsmith inspect --json` without the format's own structure, as JSON text
/// (the Python side turns it into a dict).
#[pyfunction]
#[pyo3(signature = (source, *, format = None, verify = false, **options))]
pub fn inspect_json(
    py: Python<'_>,
    source: PathBuf,
    format: Option<&str>,
    verify: bool,
    options: Option<&Bound<'_, PyDict>>,
) -> PyResult<String> {
    let mut spec = ReadSpec::new(source, format, None, None, None, options)?;
    let report = py.detach(|| report(&mut spec, verify)).py_err()?;
    Ok(report.to_string())
}

fn report(spec: &mut ReadSpec, verify: bool) -> arrowsmith::Result<Value> {
    let mut notes = Vec::new();
    if spec.format() == Format::DataSeries && spec.dataseries_type().is_none() {
        // A file of several extent types: report the first one, as the command line does.
        let file = arrowsmith::dataseries::DsFile::open(&spec.path, Default::default())
            .map_err(|e| e.with_file(&spec.path))?;
        if arrowsmith::dataseries::choose_type(&file, None).is_err() {
            if let Some(first) = file.candidate_types().first() {
                notes.push(format!(
                    "the file declares several extent types; the schema and rows are those of {:?} (choose with type=)",
                    first.name
                ));
                spec.set_dataseries_type(first.name.clone());
            }
        }
    }
    let schema = {
        let mut first = spec.clone();
        first.options.scan.limit = Some(0);
        first.open()?.schema()
    };
    let mut rows = known_rows(spec);
    let mut verification = None;
    if verify || rows.is_none() {
        let read = read_through(spec);
        let mut error = read.error.map(|e| e.to_string());
        match (rows, &error) {
            (None, None) => rows = Some(read.rows),
            (Some(expected), None) if expected != read.rows => {
                error = Some(
                    Error::new(
                        ErrorClass::RowCountMismatch,
                        format!(
                            "the file says it holds {expected} rows but {} were read",
                            read.rows
                        ),
                    )
                    .with_file(&spec.path)
                    .to_string(),
                );
            }
            (None, Some(e)) => notes.push(format!("the rows could not be counted: {e}")),
            _ => {}
        }
        if verify {
            verification = Some(json!({
                "ok": error.is_none(),
                "rows": read.rows,
                "batches": read.batches,
                "error": error,
            }));
        }
    }
    let mut report = Map::new();
    report.insert("file".into(), json!(spec.path.display().to_string()));
    report.insert("format".into(), json!(spec.format().name()));
    report.insert("description".into(), json!(spec.format().description()));
    report.insert("rows".into(), json!(rows));
    report.insert("columns".into(), json!(schema.fields().len()));
    report.insert("schema".into(), schema_json(&schema));
    report.insert("notes".into(), json!(notes));
    if let Some(v) = verification {
        report.insert("verify".into(), v);
    }
    Ok(Value::Object(report))
}

fn schema_json(schema: &Schema) -> Value {
    json!({
        "fields": schema.fields().iter().map(|f| field_json(f)).collect::<Vec<_>>(),
        "metadata": metadata_json(schema.metadata()),
    })
}

fn field_json(field: &Field) -> Value {
    json!({
        "name": field.name(),
        "type": field.data_type().to_string(),
        "nullable": field.is_nullable(),
        "metadata": metadata_json(field.metadata()),
    })
}

fn metadata_json(metadata: &HashMap<String, String>) -> Value {
    let mut keys: Vec<&String> = metadata.keys().collect();
    keys.sort();
    Value::Object(
        keys.into_iter()
            .map(|k| (k.clone(), Value::String(metadata[k].clone())))
            .collect(),
    )
}

/// The formats, as `arrowsmith formats` lists them.
#[pyfunction]
pub fn formats(py: Python<'_>) -> PyResult<Bound<'_, PyList>> {
    let list = PyList::empty(py);
    for format in Format::ALL {
        let entry = PyDict::new(py);
        entry.set_item("name", format.name())?;
        entry.set_item(
            "extensions",
            format
                .extensions()
                .iter()
                .map(|e| format!(".{e}"))
                .collect::<Vec<_>>(),
        )?;
        entry.set_item("directory", format.is_directory())?;
        entry.set_item("read", format.is_implemented())?;
        entry.set_item("write", format.is_implemented())?;
        entry.set_item("description", format.description())?;
        list.append(entry)?;
    }
    Ok(list)
}
