//! arrowsmith errors as Python exceptions: the one place where an [`ErrorClass`] becomes an
//! exception type.
//!
//! Every exception is an `arrowsmith.ArrowsmithError` and also the built-in a Python user
//! would catch for its cause: bad data is a `ValueError` (`DataError`), a missing file a
//! `FileNotFoundError` (`NotFoundError`), other I/O an `OSError` (`StorageError`), a bad
//! argument a `ValueError` (`ArgumentError`), a feature this build lacks a
//! `NotImplementedError` (`UnsupportedError`). The message is the command line's `error:`
//! line without its prefix; `kind`, `file`, `column`, `field`, `row` and `offset` carry the
//! parts of it a program wants.

use std::path::Path;

use arrow_schema::ArrowError;
use arrowsmith::{Error, ErrorClass};
use pyo3::exceptions::{
    PyException, PyFileExistsError, PyFileNotFoundError, PyNotImplementedError, PyOSError,
    PyValueError,
};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyTuple, PyType};

/// The exception types, made once per interpreter (with two bases each, which
/// `create_exception!` cannot express).
struct Types {
    base: Py<PyType>,
    data: Py<PyType>,
    argument: Py<PyType>,
    unsupported: Py<PyType>,
    not_found: Py<PyType>,
    exists: Py<PyType>,
    storage: Py<PyType>,
}

static TYPES: PyOnceLock<Types> = PyOnceLock::new();

fn new_type<'py>(
    py: Python<'py>,
    name: &str,
    bases: Vec<Bound<'py, PyType>>,
    doc: &str,
) -> PyResult<Py<PyType>> {
    let namespace = PyDict::new(py);
    namespace.set_item("__module__", "arrowsmith")?;
    namespace.set_item("__doc__", doc)?;
    for attribute in ["kind", "file", "column", "field", "row", "offset"] {
        namespace.set_item(attribute, py.None())?;
    }
    let created = py
        .get_type::<PyType>()
        .call1((name, PyTuple::new(py, bases)?, namespace))?;
    Ok(created.cast_into::<PyType>()?.unbind())
}

fn types(py: Python<'_>) -> &Types {
    TYPES.get_or_init(py, || {
        let make = || -> PyResult<Types> {
            let base = new_type(
                py,
                "ArrowsmithError",
                vec![py.get_type::<PyException>()],
                "Base class of every error arrowsmith raises. `kind` is the stable error class \
                 (e.g. 'bad_meta'); `file`, `column`, `field`, `row` and `offset` say where, \
                 when known.",
            )?;
            let under = |name: &str, builtin: Bound<'_, PyType>, doc: &str| {
                new_type(py, name, vec![base.bind(py).clone(), builtin], doc)
            };
            Ok(Types {
                data: under(
                    "DataError",
                    py.get_type::<PyValueError>(),
                    "The data is damaged or cannot be represented in the target format.",
                )?,
                argument: under(
                    "ArgumentError",
                    py.get_type::<PyValueError>(),
                    "An argument or option that cannot be used (unknown column, bad value, …).",
                )?,
                unsupported: under(
                    "UnsupportedError",
                    py.get_type::<PyNotImplementedError>(),
                    "A format or feature this build of arrowsmith does not implement.",
                )?,
                not_found: under(
                    "NotFoundError",
                    py.get_type::<PyFileNotFoundError>(),
                    "The source does not exist.",
                )?,
                exists: under(
                    "ExistsError",
                    py.get_type::<PyFileExistsError>(),
                    "The target exists and mode='error' forbids replacing it.",
                )?,
                storage: under(
                    "StorageError",
                    py.get_type::<PyOSError>(),
                    "Reading or writing the file system failed.",
                )?,
                base,
            })
        };
        // Creating a handful of classes with `type()` only fails when the interpreter is out
        // of memory; nothing sensible can follow then.
        make().expect("cannot create the arrowsmith exception types")
    })
}

/// Adds the exception types to the native module.
pub fn register(module: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = module.py();
    let t = types(py);
    for ty in [
        &t.base,
        &t.data,
        &t.argument,
        &t.unsupported,
        &t.not_found,
        &t.exists,
        &t.storage,
    ] {
        let ty = ty.bind(py);
        module.add(ty.name()?, ty)?;
    }
    Ok(())
}

/// The Python exception for an arrowsmith error.
pub fn to_py(error: Error) -> PyErr {
    Python::attach(|py| match build(py, &error) {
        Ok(err) => err,
        Err(failed) => failed,
    })
}

fn build(py: Python<'_>, error: &Error) -> PyResult<PyErr> {
    let t = types(py);
    let missing = error.class() == ErrorClass::Io
        && (error.io_kind() == Some(std::io::ErrorKind::NotFound)
            || error.file().is_some_and(is_missing));
    let ty = match error.class() {
        // The core keeps only the text of an io::Error, so a missing file is recognised by
        // the path it names no longer existing.
        ErrorClass::Io if missing => &t.not_found,
        ErrorClass::Io => &t.storage,
        ErrorClass::InvalidArgument => &t.argument,
        ErrorClass::Unsupported => &t.unsupported,
        _ => &t.data,
    };
    let message = error.to_string_spelled(spelling);
    let exception = ty.bind(py).call1((message,))?;
    exception.setattr("kind", error.class().as_str())?;
    let file = error.file().map(|f| f.display().to_string());
    exception.setattr("file", &file)?;
    if missing {
        // Not `filename`: with it set, OSError's str() would no longer be the message.
        exception.setattr("errno", 2)?;
    }
    let column = match error.column() {
        Some(c) => match &c.name {
            Some(name) => name.clone().into_pyobject(py)?.into_any(),
            None => c.index.into_pyobject(py)?.into_any(),
        },
        None => py.None().into_bound(py),
    };
    exception.setattr("column", column)?;
    exception.setattr("field", error.field())?;
    exception.setattr("row", error.row())?;
    exception.setattr("offset", error.offset())?;
    Ok(PyErr::from_value(exception))
}

/// Whether the local file an error names is missing; a URL's missing object is known by the
/// error's kind instead.
fn is_missing(path: &Path) -> bool {
    !arrowsmith::source::is_url(path) && matches!(path.try_exists(), Ok(false))
}

/// The Python exception for an error that came through the `RecordBatchReader` interface, with
/// the file named when the error did not name one.
pub fn from_arrow(error: ArrowError, file: Option<&Path>) -> PyErr {
    let mut error = Error::from_arrow_owned(error);
    if let Some(file) = file {
        error = error.with_file(file);
    }
    to_py(error)
}

/// `ArgumentError(message)`: a bad argument found by the bindings themselves.
pub fn argument(message: impl Into<String>) -> PyErr {
    to_py(Error::invalid_argument(message))
}

/// `ExistsError` for a target that mode='error' may not replace.
pub fn exists(path: &Path) -> PyErr {
    Python::attach(|py| {
        let t = types(py);
        let message = format!(
            "{}: the target exists; pass mode=\"overwrite\" to replace it",
            path.display()
        );
        match t.exists.bind(py).call1((message,)) {
            Ok(exception) => {
                let file = path.display().to_string();
                let _ = exception.setattr("kind", ErrorClass::InvalidArgument.as_str());
                let _ = exception.setattr("file", &file);
                let _ = exception.setattr("errno", 17);
                PyErr::from_value(exception)
            }
            Err(failed) => failed,
        }
    })
}

/// `?` on an arrowsmith result in a pyfunction.
pub trait IntoPyResult<T> {
    fn py_err(self) -> PyResult<T>;
}

impl<T> IntoPyResult<T> for arrowsmith::Result<T> {
    fn py_err(self) -> PyResult<T> {
        self.map_err(to_py)
    }
}

/// How Python names the setting `key` in an error.
pub fn spelling(key: &str, _kind: Option<arrowsmith::error::SettingKind>) -> String {
    match key {
        "overwrite" => "mode=\"overwrite\"".to_owned(),
        "no_sync" => "durable=False".to_owned(),
        _ => format!("{key}="),
    }
}
