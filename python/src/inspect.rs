//! `inspect` and `formats`.

use std::path::PathBuf;

use arrowsmith::{Format, InspectOptions};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

use crate::errors::IntoPyResult;
use crate::options::ReadSpec;

/// The report of `arrowsmith inspect --json`, structure included, as JSON text (the Python
/// side turns it into a dict). The library names its settings as the keywords do.
#[pyfunction]
#[pyo3(signature = (source, *, format = None, verify = false, storage_options = None, **options))]
pub fn inspect_json(
    py: Python<'_>,
    source: PathBuf,
    format: Option<&str>,
    verify: bool,
    storage_options: Option<&Bound<'_, PyAny>>,
    options: Option<&Bound<'_, PyDict>>,
) -> PyResult<String> {
    let spec = ReadSpec::new(source, format, None, None, None, options, storage_options)?;
    let options = InspectOptions {
        read: spec.options.clone(),
        verify,
    };
    let report = py
        .detach(|| arrowsmith::inspect(&spec.path, &options))
        .py_err()?;
    Ok(report.to_json().to_string())
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
        entry.set_item("description", format.description())?;
        list.append(entry)?;
    }
    Ok(list)
}
