//! `open` and `Dataset`: a source with its options, opened once and read by every consumer.

use std::path::PathBuf;

use arrow_array::RecordBatchReader;
use arrow_schema::SchemaRef;
use arrowsmith::Input;
use pyo3::exceptions::PyImportError;
use pyo3::prelude::*;
use pyo3::types::{PyCapsule, PyDict};

use crate::errors::{self, IntoPyResult};
use crate::options::ReadSpec;
use crate::reader::{open_spec, schema_capsule, stream_capsule, PyReader, PySchema};

/// Opens a source for one pass over its batches.
#[pyfunction]
#[pyo3(signature = (source, *, format = None, columns = None, limit = None, batch_size = None, storage_options = None, **options))]
#[allow(clippy::too_many_arguments)]
pub fn open(
    py: Python<'_>,
    source: PathBuf,
    format: Option<&str>,
    columns: Option<&Bound<'_, PyAny>>,
    limit: Option<i64>,
    batch_size: Option<i64>,
    storage_options: Option<&Bound<'_, PyAny>>,
    options: Option<&Bound<'_, PyDict>>,
) -> PyResult<PyReader> {
    let spec = ReadSpec::new(
        source,
        format,
        columns,
        limit,
        batch_size,
        options,
        storage_options,
    )?;
    open_spec(py, &spec)
}

/// A source that can be read any number of times: it is opened once (its header, index or
/// footer read and checked), and every `__arrow_c_stream__` (every scan by DuckDB, every
/// `pyarrow.table(ds)`) builds a fresh reader from that opened input, so a self-join works.
/// A VS file is opened again for each read: its opened input holds the lock writers wait for.
#[pyclass(module = "arrowsmith", name = "Dataset", frozen)]
pub struct PyDataset {
    spec: ReadSpec,
    /// The opened input; `None` for one that holds a lock on its file (VS), which is opened
    /// for each read instead, so that a dataset kept open does not stall writers.
    kept: Option<Input>,
    schema: SchemaRef,
}

impl PyDataset {
    /// The opened input: the one kept, or one opened for this read. Blocks.
    fn input(&self) -> arrowsmith::Result<Input> {
        match &self.kept {
            Some(input) => Ok(input.clone()),
            None => Input::open(&self.spec.path, &self.spec.options),
        }
    }

    /// A fresh reader of the input with `spec`'s scan, the GIL released.
    fn reader(&self, py: Python<'_>, spec: &ReadSpec) -> PyResult<PyReader> {
        let reader = py
            .detach(|| self.input()?.reader(&spec.options.scan))
            .py_err()?;
        Ok(PyReader::new(reader, Some(spec.path.clone())))
    }
}

#[pymethods]
impl PyDataset {
    #[new]
    #[pyo3(signature = (source, *, format = None, columns = None, limit = None, batch_size = None, storage_options = None, **options))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        source: PathBuf,
        format: Option<&str>,
        columns: Option<&Bound<'_, PyAny>>,
        limit: Option<i64>,
        batch_size: Option<i64>,
        storage_options: Option<&Bound<'_, PyAny>>,
        options: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<PyDataset> {
        let spec = ReadSpec::new(
            source,
            format,
            columns,
            limit,
            batch_size,
            options,
            storage_options,
        )?;
        // Opening once checks the source and the options now, not at the first scan.
        let (input, schema) = py
            .detach(|| -> arrowsmith::Result<(Input, SchemaRef)> {
                let input = Input::open(&spec.path, &spec.options)?;
                let mut probe = spec.options.scan.clone();
                probe.limit = Some(0);
                let schema = input.reader(&probe)?.schema();
                Ok((input, schema))
            })
            .py_err()?;
        Ok(PyDataset {
            spec,
            kept: (!input.holds_lock()).then_some(input),
            schema,
        })
    }

    /// The schema of the batches (after `columns`).
    #[getter]
    fn schema(&self) -> PySchema {
        PySchema(SchemaRef::clone(&self.schema))
    }

    /// The source's path.
    #[getter]
    fn source(&self) -> String {
        crate::options::shown_source(&self.spec.path)
    }

    /// The source's format name (as `formats()` lists it).
    #[getter]
    fn format(&self) -> &'static str {
        self.spec.format().name()
    }

    /// A new one-pass Reader; `columns`, `limit` and `batch_size` narrow this dataset's own
    /// (a limit can only lower the dataset's).
    #[pyo3(signature = (*, columns = None, limit = None, batch_size = None))]
    fn open(
        &self,
        py: Python<'_>,
        columns: Option<&Bound<'_, PyAny>>,
        limit: Option<i64>,
        batch_size: Option<i64>,
    ) -> PyResult<PyReader> {
        let mut spec = self.spec.clone();
        spec.set_scan(columns, limit, batch_size)?;
        if let (Some(own), Some(asked)) = (self.spec.limit(), spec.limit()) {
            spec.options.scan.limit = Some(own.min(asked));
        }
        self.reader(py, &spec)
    }

    /// The first `n` rows as a `pyarrow.Table` (needs pyarrow).
    #[pyo3(signature = (n = 5))]
    fn head<'py>(&self, py: Python<'py>, n: i64) -> PyResult<Bound<'py, PyAny>> {
        let pyarrow = py.import("pyarrow").map_err(|_| {
            PyImportError::new_err(
                "Dataset.head() returns a pyarrow.Table and needs pyarrow (pip install pyarrow); without it, use polars.DataFrame(dataset.open(limit=n))",
            )
        })?;
        let reader = self.open(py, None, Some(n), None)?;
        let loaded = PyReader::new_in_memory(reader.collect(py, None)?, reader.schema_ref());
        pyarrow.call_method1("table", (loaded,))
    }

    /// The number of rows: from the metadata where the format records it (Jay, bcolz, Filo,
    /// VS, DataSeries, Parquet, Arrow IPC files), else by reading every batch.
    fn count_rows(&self, py: Python<'_>) -> PyResult<u64> {
        let known = py.detach(|| self.input().ok()?.rows());
        let rows = match known {
            Some(rows) => rows,
            None => {
                let scan = &self.spec.options.scan;
                let mut reader = py.detach(|| self.input()?.reader(scan)).py_err()?;
                let mut rows = 0u64;
                while let Some(batch) = py.detach(|| reader.next()) {
                    let batch =
                        batch.map_err(|e| errors::from_arrow(e, Some(self.spec.path.as_path())))?;
                    rows += batch.num_rows() as u64;
                    py.check_signals()?;
                }
                return Ok(rows);
            }
        };
        Ok(match self.spec.limit() {
            Some(limit) => rows.min(limit as u64),
            None => rows,
        })
    }

    /// The dataset's fragments: pieces of about `target_rows` rows that `open_fragment` reads
    /// independently (the dataset's columns and limit do not apply to them).
    #[pyo3(signature = (*, target_rows = None))]
    fn fragments(
        &self,
        py: Python<'_>,
        target_rows: Option<i64>,
    ) -> PyResult<Vec<crate::fragment::PyFragment>> {
        let target = crate::fragment::target_rows_or_default(target_rows)?;
        let fragments = py.detach(|| self.input()?.fragments(target)).py_err()?;
        Ok(fragments
            .into_iter()
            .map(crate::fragment::PyFragment)
            .collect())
    }

    /// The row count from the metadata alone (after `limit`), or None; for progress bars.
    fn _known_rows(&self, py: Python<'_>) -> Option<u64> {
        let rows = py.detach(|| self.input().ok()?.rows())?;
        Some(
            self.spec
                .limit()
                .map_or(rows, |limit| rows.min(limit as u64)),
        )
    }

    fn __arrow_c_schema__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyCapsule>> {
        schema_capsule(py, &self.schema)
    }

    /// A fresh reader over the whole dataset, as an Arrow C stream.
    #[pyo3(signature = (requested_schema = None))]
    fn __arrow_c_stream__<'py>(
        &self,
        py: Python<'py>,
        requested_schema: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyCapsule>> {
        let _ = requested_schema;
        let scan = &self.spec.options.scan;
        let reader: Box<dyn RecordBatchReader + Send> =
            py.detach(|| self.input()?.reader(scan)).py_err()?;
        stream_capsule(py, reader)
    }

    fn __repr__(&self) -> String {
        format!(
            "arrowsmith.Dataset({:?}, format={:?}, columns={:?})",
            crate::options::shown_source(&self.spec.path),
            self.spec.format().name(),
            self.schema
                .fields()
                .iter()
                .map(|f| f.name().as_str())
                .collect::<Vec<_>>()
        )
    }
}
