//! The native module `arrowsmith._arrowsmith`, under the pure-Python API of
//! `python/arrowsmith/__init__.py`: the classes (`Reader`, `RecordBatch`, `Schema`, `Dataset`,
//! `WriteSummary`, `Fragment`), the functions the API wraps, and the exception types.
//!
//! Everything is a thin layer over the `arrowsmith` crate: decoding and encoding happen there,
//! with the GIL released; Arrow data crosses into Python through the Arrow PyCapsule interface,
//! so no Python package (pyarrow included) is needed to move it.

mod dataset;
mod errors;
mod fragment;
mod inspect;
mod options;
mod reader;
mod write;

use pyo3::prelude::*;

#[pymodule]
fn _arrowsmith(m: &Bound<'_, PyModule>) -> PyResult<()> {
    // URLs are read and written through the object_store-backed storage; a second import (a
    // subinterpreter, a reload) changes nothing.
    arrowsmith_store::register();
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    // Benchmarks refuse a debug build (maturin develop's default), whose timings mean nothing.
    m.add("_debug_build", cfg!(debug_assertions))?;
    m.add_class::<reader::PyReader>()?;
    m.add_class::<reader::PyRecordBatch>()?;
    m.add_class::<reader::PySchema>()?;
    m.add_class::<dataset::PyDataset>()?;
    m.add_class::<write::PyWriteSummary>()?;
    m.add_class::<fragment::PyFragment>()?;
    m.add_function(wrap_pyfunction!(dataset::open, m)?)?;
    m.add_function(wrap_pyfunction!(write::write, m)?)?;
    m.add_function(wrap_pyfunction!(fragment::fragments, m)?)?;
    m.add_function(wrap_pyfunction!(fragment::open_fragment, m)?)?;
    m.add_function(wrap_pyfunction!(inspect::inspect_json, m)?)?;
    m.add_function(wrap_pyfunction!(inspect::formats, m)?)?;
    errors::register(m)?;
    Ok(())
}
