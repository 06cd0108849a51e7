//! `write`: any Arrow producer (`__arrow_c_stream__` or `__arrow_c_array__`) into any format,
//! batch by batch through the core's writers, with the GIL released. All or nothing, as the
//! command line: the target appears (or changes) only when every batch was written.

use std::path::PathBuf;
use std::sync::Mutex;

use arrow_array::{RecordBatch, RecordBatchReader};
use arrow_schema::{ArrowError, SchemaRef};
use arrowsmith::Error;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use pyo3_arrow::input::AnyRecordBatch;

use crate::errors::{self, IntoPyResult};
use crate::options::WriteSpec;

/// What a finished write reports.
#[pyclass(module = "arrowsmith", name = "WriteSummary", frozen)]
pub struct PyWriteSummary {
    /// The rows written.
    #[pyo3(get)]
    rows: u64,
    /// Things the writer did that the caller may want to know (a time zone dropped, …); the
    /// data was written in spite of them.
    #[pyo3(get)]
    warnings: Vec<String>,
    /// The target's path.
    #[pyo3(get)]
    path: String,
    /// The format written.
    #[pyo3(get)]
    format: &'static str,
}

#[pymethods]
impl PyWriteSummary {
    fn __repr__(&self) -> String {
        format!(
            "arrowsmith.WriteSummary(rows={}, format={:?}, path={:?}, warnings={:?})",
            self.rows, self.format, self.path, self.warnings
        )
    }
}

#[pyfunction]
#[pyo3(signature = (data, target, *, format = None, mode = "error", compression = None, durable = true, progress = None, expected_rows = None, storage_options = None, **options))]
#[allow(clippy::too_many_arguments)]
pub fn write(
    py: Python<'_>,
    data: AnyRecordBatch,
    target: PathBuf,
    format: Option<&str>,
    mode: &str,
    compression: Option<String>,
    durable: bool,
    progress: Option<Py<PyAny>>,
    expected_rows: Option<u64>,
    storage_options: Option<&Bound<'_, PyAny>>,
    options: Option<&Bound<'_, PyDict>>,
) -> PyResult<PyWriteSummary> {
    let spec = WriteSpec::new(
        target,
        format,
        mode,
        compression,
        durable,
        expected_rows,
        options,
        storage_options,
    )?;
    if spec.mode == arrowsmith::WriteMode::Error && spec.path.exists() {
        return Err(errors::exists(&spec.path));
    }
    let failure = Mutex::new(None);
    let input = Watched {
        inner: data.into_reader()?,
        progress: progress.as_ref(),
        failure: &failure,
    };
    let outcome = py.detach(|| write_watched(&spec, input));
    // An exception from Python (Ctrl-C, a failing progress callback) stopped the input: raise
    // it rather than the write error it caused.
    if let Some(raised) = failure.lock().ok().and_then(|mut f| f.take()) {
        return Err(raised);
    }
    let summary = outcome.py_err()?;
    Ok(PyWriteSummary {
        rows: summary.rows,
        warnings: summary.warnings,
        path: crate::options::shown_source(&spec.path),
        format: spec.format.name(),
    })
}

fn write_watched(
    spec: &WriteSpec,
    input: Watched<'_>,
) -> arrowsmith::Result<arrowsmith::WriteSummary> {
    spec.write_all(input)
}

/// The input stream, with a look at Python between batches: Ctrl-C and the progress callback.
struct Watched<'a> {
    inner: Box<dyn RecordBatchReader + Send>,
    progress: Option<&'a Py<PyAny>>,
    /// Where the Python exception that stopped the input is kept.
    failure: &'a Mutex<Option<PyErr>>,
}

impl Watched<'_> {
    /// Runs between batches, attached to Python; an error ends the input.
    fn between(&self, rows: usize) -> Result<(), ArrowError> {
        let outcome = Python::attach(|py| {
            py.check_signals()?;
            if let Some(callback) = self.progress {
                callback.call1(py, (rows,))?;
            }
            Ok::<(), PyErr>(())
        });
        outcome.map_err(|raised| {
            let text = raised.to_string();
            if let Ok(mut slot) = self.failure.lock() {
                slot.get_or_insert(raised);
            }
            ArrowError::ExternalError(Box::new(Error::invalid_argument(format!(
                "stopped by Python: {text}"
            ))))
        })
    }
}

impl Iterator for Watched<'_> {
    type Item = Result<RecordBatch, ArrowError>;

    fn next(&mut self) -> Option<Self::Item> {
        let batch = self.inner.next()?;
        Some(batch.and_then(|b| {
            self.between(b.num_rows())?;
            Ok(b)
        }))
    }
}

impl RecordBatchReader for Watched<'_> {
    fn schema(&self) -> SchemaRef {
        self.inner.schema()
    }
}
