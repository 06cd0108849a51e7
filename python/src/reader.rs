//! `Reader` (one pass over a file, exported as an Arrow C stream), the `RecordBatch`es it
//! yields and the `Schema` both have.
//!
//! Decoding runs with the GIL released: other Python threads go on while a batch is read. The
//! lock around the underlying reader is only ever taken while detached, so a thread that waits
//! for it never holds the GIL that the thread holding it needs in order to return.

use std::collections::HashMap;
use std::ffi::CStr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};

use arrow::ffi_stream::FFI_ArrowArrayStream;
use arrow_array::{Array, RecordBatch, RecordBatchIterator, RecordBatchReader, StructArray};
use arrow_schema::{DataType, Field, SchemaRef};
use pyo3::prelude::*;
use pyo3::types::{PyCapsule, PyTuple};

use crate::errors::{self, IntoPyResult};
use crate::options::ReadSpec;

const STREAM_CAPSULE: &CStr = c"arrow_array_stream";

type BoxedReader = Box<dyn RecordBatchReader + Send>;

/// One pass over the batches of a source. Iterate it for `RecordBatch`es, or hand it to any
/// Arrow consumer through `__arrow_c_stream__` (`pyarrow.table(r)`, `polars.DataFrame(r)`,
/// `duckdb.sql("SELECT … FROM r")`); either way it is consumed once.
#[pyclass(module = "arrowsmith", name = "Reader", frozen)]
pub struct PyReader {
    inner: Mutex<Option<BoxedReader>>,
    schema: SchemaRef,
    /// Named in errors that come without a file.
    source: Option<PathBuf>,
}

/// Opens `spec` for one pass, with the GIL released (opening may read and check a whole
/// header or index).
pub fn open_spec(py: Python<'_>, spec: &ReadSpec) -> PyResult<PyReader> {
    let reader = py.detach(|| spec.open()).py_err()?;
    Ok(PyReader::new(reader, Some(spec.path.clone())))
}

impl PyReader {
    pub fn new(reader: BoxedReader, source: Option<PathBuf>) -> PyReader {
        PyReader {
            schema: reader.schema(),
            inner: Mutex::new(Some(reader)),
            source,
        }
    }

    /// A reader over batches already in memory (nothing left to fail).
    pub fn new_in_memory(batches: Vec<RecordBatch>, schema: SchemaRef) -> PyReader {
        let reader = RecordBatchIterator::new(batches.into_iter().map(Ok), schema);
        PyReader::new(Box::new(reader), None)
    }

    fn lock(&self) -> MutexGuard<'_, Option<BoxedReader>> {
        // A panic while decoding poisons the lock; the reader it guards is then simply done.
        self.inner.lock().unwrap_or_else(|poisoned| {
            let mut guard = poisoned.into_inner();
            *guard = None;
            guard
        })
    }

    /// Takes the reader out, for a consumer that reads it all.
    fn take(&self, py: Python<'_>) -> PyResult<BoxedReader> {
        py.detach(|| self.lock().take()).ok_or_else(|| {
            errors::argument(
                "this Reader was already read (a Reader is one pass; open the source again, or use arrowsmith.dataset() for a re-openable source)",
            )
        })
    }

    /// Reads every batch, releasing the GIL for each and checking for Ctrl-C between them;
    /// `progress` is called with the rows of each batch.
    pub fn collect(
        &self,
        py: Python<'_>,
        progress: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Vec<RecordBatch>> {
        let mut reader = self.take(py)?;
        let mut batches = Vec::new();
        loop {
            match py.detach(|| reader.next()) {
                None => break,
                Some(Ok(batch)) => {
                    if let Some(callback) = progress {
                        callback.call1((batch.num_rows(),))?;
                    }
                    batches.push(batch);
                }
                Some(Err(e)) => return Err(errors::from_arrow(e, self.source.as_deref())),
            }
            py.check_signals()?;
        }
        Ok(batches)
    }

    pub fn schema_ref(&self) -> SchemaRef {
        Arc::clone(&self.schema)
    }
}

#[pymethods]
impl PyReader {
    /// The schema of the batches.
    #[getter]
    fn schema(&self) -> PySchema {
        PySchema(Arc::clone(&self.schema))
    }

    /// Whether the batches were consumed (or the reader closed).
    #[getter]
    fn closed(&self, py: Python<'_>) -> bool {
        py.detach(|| self.lock().is_none())
    }

    fn __arrow_c_schema__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyCapsule>> {
        schema_capsule(py, &self.schema)
    }

    /// Hands the remaining batches to an Arrow consumer; `requested_schema` is ignored (the
    /// batches keep their own types), as the PyCapsule protocol allows.
    #[pyo3(signature = (requested_schema = None))]
    fn __arrow_c_stream__<'py>(
        &self,
        py: Python<'py>,
        requested_schema: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyCapsule>> {
        let _ = requested_schema;
        let reader = self.take(py)?;
        stream_capsule(py, reader)
    }

    fn __iter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    fn __next__(&self, py: Python<'_>) -> PyResult<Option<PyRecordBatch>> {
        let next = py.detach(|| {
            let mut guard = self.lock();
            let reader = guard.as_mut()?;
            let next = reader.next();
            if !matches!(next, Some(Ok(_))) {
                // Finished or failed: a reader stops after its first error.
                *guard = None;
            }
            next
        });
        match next {
            None => Ok(None),
            Some(Ok(batch)) => Ok(Some(PyRecordBatch(batch))),
            Some(Err(e)) => Err(errors::from_arrow(e, self.source.as_deref())),
        }
    }

    /// Reads the remaining batches into memory and returns them as a new Reader, so that an
    /// error in the data is raised here (as `DataError`) rather than inside a consumer.
    #[pyo3(signature = (*, progress = None))]
    fn read_all(&self, py: Python<'_>, progress: Option<Bound<'_, PyAny>>) -> PyResult<PyReader> {
        let batches = self.collect(py, progress.as_ref())?;
        Ok(PyReader::new_in_memory(batches, self.schema_ref()))
    }

    /// Drops the underlying reader (and the file it holds open).
    fn close(&self, py: Python<'_>) {
        py.detach(|| self.lock().take());
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    #[pyo3(signature = (*_args))]
    fn __exit__(&self, py: Python<'_>, _args: &Bound<'_, PyTuple>) {
        self.close(py);
    }

    fn __repr__(&self) -> String {
        let source = match &self.source {
            Some(path) => format!("{:?}, ", crate::options::shown_source(path)),
            None => String::new(),
        };
        format!(
            "arrowsmith.Reader({source}{})",
            describe_fields(&self.schema)
        )
    }
}

/// A batch of rows, as decoded. It implements `__arrow_c_array__`: `pyarrow.record_batch(b)`
/// and `polars.DataFrame(b)` take it without a copy.
#[pyclass(module = "arrowsmith", name = "RecordBatch", frozen)]
pub struct PyRecordBatch(pub RecordBatch);

#[pymethods]
impl PyRecordBatch {
    #[getter]
    fn num_rows(&self) -> usize {
        self.0.num_rows()
    }

    #[getter]
    fn num_columns(&self) -> usize {
        self.0.num_columns()
    }

    #[getter]
    fn schema(&self) -> PySchema {
        PySchema(self.0.schema())
    }

    fn __len__(&self) -> usize {
        self.0.num_rows()
    }

    fn __arrow_c_schema__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyCapsule>> {
        schema_capsule(py, &self.0.schema())
    }

    /// The batch as a struct array whose fields are the columns (the PyCapsule protocol's
    /// form of a record batch); `requested_schema` is ignored.
    #[pyo3(signature = (requested_schema = None))]
    fn __arrow_c_array__<'py>(
        &self,
        py: Python<'py>,
        requested_schema: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyTuple>> {
        let _ = requested_schema;
        let schema = self.0.schema();
        let array = StructArray::from(self.0.clone());
        let field = Field::new("", DataType::Struct(schema.fields().clone()), false)
            .with_metadata(schema.metadata().clone());
        pyo3_arrow::ffi::to_array_pycapsules(py, Arc::new(field), &array as &dyn Array, None)
            .map_err(PyErr::from)
    }

    /// The batch as a stream of one batch, for consumers that take streams only.
    #[pyo3(signature = (requested_schema = None))]
    fn __arrow_c_stream__<'py>(
        &self,
        py: Python<'py>,
        requested_schema: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyCapsule>> {
        let _ = requested_schema;
        let one = RecordBatchIterator::new([Ok(self.0.clone())], self.0.schema());
        stream_capsule(py, Box::new(one))
    }

    fn __repr__(&self) -> String {
        format!(
            "arrowsmith.RecordBatch({} rows, {})",
            self.0.num_rows(),
            describe_fields(&self.0.schema())
        )
    }
}

/// The column names, Arrow types and metadata of a Reader, Dataset or RecordBatch.
/// `pyarrow.schema(s)` converts it (through `__arrow_c_schema__`).
#[pyclass(module = "arrowsmith", name = "Schema", frozen)]
pub struct PySchema(pub SchemaRef);

#[pymethods]
impl PySchema {
    /// The column names, in order.
    #[getter]
    fn names(&self) -> Vec<String> {
        self.0.fields().iter().map(|f| f.name().clone()).collect()
    }

    /// The Arrow type of each column, as Arrow spells it (e.g. "Int64", "Utf8").
    #[getter]
    fn types(&self) -> Vec<String> {
        self.0
            .fields()
            .iter()
            .map(|f| f.data_type().to_string())
            .collect()
    }

    /// The schema-level metadata (e.g. "jay.nkeys").
    #[getter]
    fn metadata(&self) -> HashMap<String, String> {
        self.0.metadata().clone()
    }

    fn __len__(&self) -> usize {
        self.0.fields().len()
    }

    fn __eq__(&self, other: &Bound<'_, PyAny>) -> bool {
        match other.cast::<PySchema>() {
            Ok(other) => self.0 == other.get().0,
            Err(_) => false,
        }
    }

    fn __arrow_c_schema__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyCapsule>> {
        schema_capsule(py, &self.0)
    }

    fn __repr__(&self) -> String {
        format!("arrowsmith.Schema({})", describe_fields(&self.0))
    }
}

fn describe_fields(schema: &SchemaRef) -> String {
    const SHOWN: usize = 10;
    let mut parts: Vec<String> = schema
        .fields()
        .iter()
        .take(SHOWN)
        .map(|f| format!("{}: {}", f.name(), f.data_type()))
        .collect();
    if schema.fields().len() > SHOWN {
        parts.push(format!("… {} columns in all", schema.fields().len()));
    }
    format!("[{}]", parts.join(", "))
}

pub fn schema_capsule<'py>(py: Python<'py>, schema: &SchemaRef) -> PyResult<Bound<'py, PyCapsule>> {
    pyo3_arrow::ffi::to_schema_pycapsule(py, schema.as_ref()).map_err(PyErr::from)
}

/// Exports a reader as an Arrow C stream. The consumer pulls batches through C calls that
/// never touch Python, so it may do so with or without the GIL.
pub fn stream_capsule<'py>(
    py: Python<'py>,
    reader: BoxedReader,
) -> PyResult<Bound<'py, PyCapsule>> {
    let stream = FFI_ArrowArrayStream::new(reader);
    PyCapsule::new_with_value(py, stream, STREAM_CAPSULE)
}
