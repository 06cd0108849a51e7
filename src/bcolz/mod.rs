//! bcolz 1.x: carray and ctable directories of Blosc-compressed chunks (the format of the
//! Python package bcolz and its fork bcolz-zipline).
//!
#![doc = include_str!("../../docs/bcolz.md")]

mod append;
mod background;
pub mod blosc;
mod durable;
mod journal;
mod json;
pub mod mapping;
mod meta;
mod read_options;
mod reader;
mod writer;

/// Whether an appender waits for another one to finish or fails at once.
pub use crate::vs::LockWait;
pub use append::Appender;
pub use meta::{detect_kind, CarrayInfo, Cparams, DatasetInfo, Kind};
pub(crate) use meta::{open_columns, open_columns_from};
pub use read_options::ReaderOptions;
pub use reader::{fragments, schema_of, Reader, ReaderBuilder};
pub(crate) use writer::DATASET;
pub use writer::{default_chunklen, Compression, NullPolicy, Writer, WriterOptions};

crate::write::record_batch_writer!(Writer, Appender);

/// Opens and checks a bcolz directory (metadata only; chunks are read by a [`Reader`]). The
/// directory's files are read as the objects of a [`LocalDir`](crate::source::LocalDir).
pub fn open_info(path: impl AsRef<std::path::Path>) -> crate::Result<DatasetInfo> {
    meta::open(path.as_ref(), None)
}

/// [`open_info`] with the column name of a carray given (`None`: the directory's name), as
/// [`ReaderBuilder::with_carray_name`] names it.
pub fn open_info_with(
    path: impl AsRef<std::path::Path>,
    carray_name: Option<&str>,
) -> crate::Result<DatasetInfo> {
    meta::open(path.as_ref(), carray_name)
}

/// Opens and checks the bcolz dataset whose files are the objects under `objects` (an
/// object-store prefix, or a [`LocalDir`](crate::source::LocalDir)): its metadata objects are
/// fetched by the keys the format fixes, without a listing, and a [`Reader`] of the opened
/// dataset fetches only the chunk files of the columns and rows it reads. `carray_name` names
/// the column of a carray (`None`: the last segment of the location).
pub fn open_info_from(
    objects: std::sync::Arc<dyn crate::source::ObjectSource>,
    carray_name: Option<&str>,
) -> crate::Result<DatasetInfo> {
    meta::open_from(objects, carray_name)
}
