//! `fragments`, `open_fragment` and `Fragment`: a source in independently readable pieces, for
//! threads, processes and clusters (Ray, Dask, Spark). A `Fragment` is plain data: it pickles
//! as the core fragment's JSON, so a listing made in one process is read in another.

use std::path::PathBuf;

use arrowsmith::{Fragment, FragmentRange, DEFAULT_TARGET_ROWS};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};

use crate::errors::{self, IntoPyResult};
use crate::options::ReadSpec;
use crate::reader::{open_spec, PyReader};

/// One independently readable piece of a source: a row range of a Jay frame, a run of
/// DataSeries extents, of bcolz chunks, of Parquet row groups, … Read it with
/// `arrowsmith.open_fragment`; it pickles, and prints what it covers.
#[pyclass(module = "arrowsmith", name = "Fragment", frozen, eq)]
#[derive(PartialEq)]
pub struct PyFragment(pub Fragment);

#[pymethods]
impl PyFragment {
    /// A fragment from the JSON of `to_json()` (what `arrowsmith fragments` prints).
    #[new]
    fn from_json_text(json: &str) -> PyResult<PyFragment> {
        Fragment::from_json(json).py_err().map(PyFragment)
    }

    /// Its position in the listing: 0, 1, …
    #[getter]
    fn index(&self) -> usize {
        self.0.index
    }

    /// The source it belongs to.
    #[getter]
    fn source(&self) -> String {
        crate::options::shown_source(&self.0.path)
    }

    /// The source's format name.
    #[getter]
    fn format(&self) -> &'static str {
        self.0.format.name()
    }

    /// The part of the source, in its format's unit: `(unit, start, end)`, e.g.
    /// `("rows", 0, 65536)`; `("whole", None, None)` for a source read whole.
    #[getter]
    fn range<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        let (unit, bounds) = range_parts(&self.0.range);
        let (start, end) = match bounds {
            Some((s, e)) => (Some(s), Some(e)),
            None => (None, None),
        };
        (unit, start, end).into_pyobject(py)
    }

    /// Rows in the fragment (an estimate when `rows_exact` is False).
    #[getter]
    fn rows(&self) -> u64 {
        self.0.rows
    }

    #[getter]
    fn rows_exact(&self) -> bool {
        self.0.rows_exact
    }

    /// Bytes of the source the fragment covers, as stored.
    #[getter]
    fn bytes(&self) -> u64 {
        self.0.bytes
    }

    /// The fragment as one line of JSON.
    fn to_json(&self) -> String {
        self.0.to_json()
    }

    fn __reduce__<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyTuple>> {
        let py = slf.py();
        let args = (slf.get().0.to_json(),).into_pyobject(py)?;
        (slf.get_type(), args).into_pyobject(py)
    }

    fn __hash__(&self) -> u64 {
        use std::hash::{DefaultHasher, Hash, Hasher};
        let mut hasher = DefaultHasher::new();
        self.0.to_json().hash(&mut hasher);
        hasher.finish()
    }

    fn __repr__(&self) -> String {
        let (unit, bounds) = range_parts(&self.0.range);
        let range = match bounds {
            Some((start, end)) => format!("{unit} {start}..{end}"),
            None => unit.to_string(),
        };
        let about = if self.0.rows_exact { "" } else { "about " };
        format!(
            "arrowsmith.Fragment({} of {:?} ({}): {range}, {about}{} rows, {} bytes)",
            self.0.index,
            crate::options::shown_source(&self.0.path),
            self.0.format.name(),
            self.0.rows,
            self.0.bytes
        )
    }
}

/// The range's unit and bounds, as the core names them (the JSON form's).
fn range_parts(range: &FragmentRange) -> (&'static str, Option<(u64, u64)>) {
    (range.unit(), range.bounds())
}

/// The `target_rows` keyword: at least 1, [`DEFAULT_TARGET_ROWS`] when not given.
pub fn target_rows_or_default(target_rows: Option<i64>) -> PyResult<usize> {
    match target_rows {
        None => Ok(DEFAULT_TARGET_ROWS),
        Some(n) if n >= 1 => Ok(n as usize),
        Some(n) => Err(errors::argument(format!(
            "target_rows must be at least 1, got {n}"
        ))),
    }
}

/// Lists the fragments of a read spec: pieces of about `target_rows` rows.
fn list(py: Python<'_>, spec: &ReadSpec, target_rows: Option<i64>) -> PyResult<Vec<PyFragment>> {
    let target = target_rows_or_default(target_rows)?;
    let fragments = py
        .detach(|| arrowsmith::fragments(&spec.path, &spec.options, target))
        .py_err()?;
    Ok(fragments.into_iter().map(PyFragment).collect())
}

#[pyfunction]
#[pyo3(signature = (source, *, format = None, target_rows = None, storage_options = None, **options))]
pub fn fragments(
    py: Python<'_>,
    source: PathBuf,
    format: Option<&str>,
    target_rows: Option<i64>,
    storage_options: Option<&Bound<'_, PyAny>>,
    options: Option<&Bound<'_, PyDict>>,
) -> PyResult<Vec<PyFragment>> {
    let spec = ReadSpec::new(source, format, None, None, None, options, storage_options)?;
    list(py, &spec, target_rows)
}

/// Opens one fragment; its format and format options come with it, the settings of remote
/// storage (which a fragment never carries) from `storage_options`.
#[pyfunction]
#[pyo3(signature = (fragment, *, columns = None, limit = None, batch_size = None, storage_options = None))]
pub fn open_fragment(
    py: Python<'_>,
    fragment: &Bound<'_, PyFragment>,
    columns: Option<&Bound<'_, PyAny>>,
    limit: Option<i64>,
    batch_size: Option<i64>,
    storage_options: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyReader> {
    let fragment = &fragment.get().0;
    let mut spec = ReadSpec::for_fragment(fragment, storage_options)?;
    spec.set_scan(columns, limit, batch_size)?;
    open_spec(py, &spec)
}
