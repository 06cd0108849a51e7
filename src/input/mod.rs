//! Opened inputs: [`Input`] is a file or directory of any format, opened and parsed once, from
//! which its schema, its known row count, its [fragments](Fragment) and readers of the whole or
//! of one fragment all come. Every front end (the generic entry points, `inspect`, DataFusion's
//! file source, Python's `Dataset`) holds one per file instead of opening it again for each
//! piece. [`StreamInput`] is the other kind of input: one that can be read only once, front to
//! back.
//!
//! Behind [`Input`] each format has one opened shape (`OpenedFormat`), implemented once in
//! `formats`: the format's handle (`JayFile`, `DsFile`, `VsFile`, bcolz's `DatasetInfo`, Filo's
//! `SetInfo`, a Parquet or IPC footer's layout) and the settings it was opened with; its
//! fragments are listed from the handle and its readers built from it. The schema is that of
//! a reader of no rows built at the open. The handle's bytes are where a format's reads come
//! from, so a remote byte range plugs in there.
//!
//! A path that is a URL (`s3://bucket/x.jay`; see [`crate::source::is_url`]) opens through
//! the registered [`Storage`](crate::source::Storage) with the settings of
//! [`ReadOptions::storage`]: an object as a Jay, DataSeries or VS file or a bare Filo vector,
//! read by byte ranges; a `file://` URL is its local path. A remote input takes no lock.

mod formats;
pub(crate) mod remote;
#[cfg(test)]
mod remote_tests;
mod stream;

use std::any::Any;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::RecordBatchReader;
use arrow_schema::SchemaRef;

use crate::error::{Error, Result};
use crate::format::Format;
use crate::fragment::Fragment;
use crate::options::{FormatOptions, ReadOptions};
use crate::scan::{FragmentSpan, ScanOptions};

pub use crate::format::is_stdin;
pub use stream::{is_stream, refuse_stream, StreamInput};

use crate::fragment::ObjectVersion;
use remote::Origin;

/// What every format's opened handle provides to [`Input`]; implemented once per format.
pub(crate) trait OpenedFormat: Send + Sync {
    /// The format's own opened handle, for [`Input::handle`].
    fn handle(&self) -> &dyn Any;
    /// The row count the structure holds, without decoding data; `None` when it holds none.
    fn rows(&self) -> Option<u64>;
    /// Pieces of about `target_rows` rows along the format's seams.
    fn fragments(&self, target_rows: usize) -> Result<Vec<FragmentSpan>>;
    /// A reader of what `scan` asks (its range in the format's own unit).
    fn reader(&self, scan: ScanOptions) -> Result<Box<dyn RecordBatchReader + Send>>;
}

/// One input of any format, opened and parsed once; cheap to clone and share between threads
/// (the opened file is behind an `Arc`). See the [module](self) documentation.
///
/// A VS input holds the file's shared lock for as long as it (or a reader built from it)
/// lives, as a VS reader does: a writer waits for it.
#[derive(Clone)]
pub struct Input {
    inner: Arc<Inner>,
}

struct Inner {
    path: PathBuf,
    format: Format,
    options: FormatOptions,
    schema: SchemaRef,
    opened: Box<dyn OpenedFormat>,
    /// Whether the bytes are remote (a URL read through the registered storage).
    remote: bool,
    /// The remote object's size and version, which its fragments carry.
    object: Option<ObjectVersion>,
}

/// An input recognised and opened, before its schema is found.
struct Opened {
    format: Format,
    opened: Box<dyn OpenedFormat>,
    remote: bool,
    object: Option<ObjectVersion>,
}

impl fmt::Debug for Input {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Input")
            .field("path", &self.inner.path)
            .field("format", &self.inner.format)
            .finish_non_exhaustive()
    }
}

impl Input {
    /// Opens the file or directory at `path`: its format is `options.format`, else recognised
    /// from its content and name; `options.format_options` are the format's settings, and
    /// `options.scan.salvage` opens it for salvage (a damaged Jay column or DataSeries index
    /// does not fail the open). The other scan settings are each read's own. A stream (`-`, a
    /// FIFO) is refused: it can be read only once (see [`StreamInput`]). A URL is opened
    /// through the registered storage with `options.storage` (see the [module](self)
    /// documentation).
    pub fn open(path: impl AsRef<Path>, options: &ReadOptions) -> Result<Input> {
        let path = path.as_ref();
        let Opened {
            format,
            opened,
            remote,
            object,
        } = open_format(path, options, None, false)?;
        // What every read of all columns gives; for most formats, built from the handle alone.
        let probe = ScanOptions {
            limit: Some(0),
            salvage: options.scan.salvage,
            ..ScanOptions::default()
        };
        let schema = opened
            .reader(probe)
            .map_err(|e| e.with_file(path))?
            .schema();
        Ok(Input {
            inner: Arc::new(Inner {
                path: path.to_path_buf(),
                format,
                options: options.format_options.clone(),
                schema,
                opened,
                remote,
                object,
            }),
        })
    }

    /// The path it was opened at, as given.
    pub fn path(&self) -> &Path {
        &self.inner.path
    }

    /// Its format.
    pub fn format(&self) -> Format {
        self.inner.format
    }

    /// Whether it holds a lock on its file while it lives: a VS input holds the shared lock,
    /// which VS writers (appends, deletes, in this process too) wait for. A front end that
    /// keeps inputs beyond one read (a cache, a long-lived dataset) does not keep these.
    pub fn holds_lock(&self) -> bool {
        self.format() == Format::Vs && !self.inner.remote
    }

    /// Whether it was opened from remote storage (a URL).
    pub fn is_remote(&self) -> bool {
        self.inner.remote
    }

    /// The size and version of the remote object it reads, which its fragments carry;
    /// `None` for a local input and a remote prefix.
    pub fn object_version(&self) -> Option<&ObjectVersion> {
        self.inner.object.as_ref()
    }

    /// The format settings it was opened with (those its fragments carry).
    pub fn format_options(&self) -> &FormatOptions {
        &self.inner.options
    }

    /// The format's own opened handle, when it is a `T`: [`jay::JayFile`](crate::jay::JayFile),
    /// [`dataseries::DsFile`](crate::dataseries::DsFile), [`vs::VsFile`](crate::vs::VsFile),
    /// [`bcolz::DatasetInfo`](crate::bcolz::DatasetInfo) or
    /// [`filo::SetInfo`](crate::filo::SetInfo), for what only that format describes (Jay's
    /// stored column statistics, say). The ecosystem formats and a bare Filo vector have none.
    pub fn handle<T: Any>(&self) -> Option<&T> {
        self.inner.opened.handle().downcast_ref::<T>()
    }

    /// The schema of a read of every column.
    pub fn schema(&self) -> SchemaRef {
        SchemaRef::clone(&self.inner.schema)
    }

    /// The row count its structure holds without decoding data: the one definition of "known
    /// rows" (a progress bar's total, `count(*)` without a scan). `None` for CSV, NDJSON and a
    /// bare Filo vector, and when the structure cannot be read. A DataSeries count is that of
    /// the extent type read; a VS count is of live points; an Arrow IPC stream's is found by
    /// walking its message headers, once.
    pub fn rows(&self) -> Option<u64> {
        self.inner.opened.rows()
    }

    /// Its fragments: pieces of about `target_rows` rows (a hint: each fragment holds at least
    /// one natural unit and never cuts one), from the structure alone. The rows of all
    /// fragments, in order, are the rows of the input.
    pub fn fragments(&self, target_rows: usize) -> Result<Vec<Fragment>> {
        let spans = self
            .inner
            .opened
            .fragments(target_rows)
            .map_err(|e| e.with_file(self.path()))?;
        Ok(spans
            .into_iter()
            .enumerate()
            .map(|(index, span)| Fragment {
                index,
                path: self.path().to_path_buf(),
                format: self.format(),
                range: span.range,
                rows: span.rows,
                rows_exact: span.rows_exact,
                bytes: span.bytes,
                options: self.inner.options.clone(),
                object: self.inner.object.clone(),
            })
            .collect())
    }

    /// A reader of the whole input, or of `scan.range` (in the format's own unit), with the
    /// scan's batch size, projection, limit and salvage.
    pub fn reader(&self, scan: &ScanOptions) -> Result<Box<dyn RecordBatchReader + Send>> {
        if scan.salvage {
            check_salvage(self.format(), scan).map_err(|e| e.with_file(self.path()))?;
        }
        self.inner
            .opened
            .reader(scan.clone())
            .map_err(|e| e.with_file(self.path()))
    }

    /// A reader of one of this input's fragments (the limit counts the fragment's rows). A
    /// fragment of another input, or listed under other format settings, is refused; so is a
    /// fragment listed from another version of this input's remote object.
    pub fn fragment_reader(
        &self,
        fragment: &Fragment,
        scan: &ScanOptions,
    ) -> Result<Box<dyn RecordBatchReader + Send>> {
        if fragment.path != self.inner.path
            || fragment.format != self.inner.format
            || fragment.options != self.inner.options
        {
            return Err(Error::invalid_argument(format!(
                "fragment {} is of {} read as {} with its own settings, not of this input; \
                 open its own input (arrowsmith::open_fragment does)",
                fragment.index,
                fragment.path.display(),
                fragment.format.name(),
            ))
            .with_file(self.path()));
        }
        if let Some(listed) = &fragment.object {
            if fragment.object != self.inner.object {
                return Err(
                    remote::changed(listed, self.inner.object.as_ref()).with_file(self.path())
                );
            }
        }
        let mut scan = scan.clone();
        scan.range = Some(fragment.range);
        self.reader(&scan)
    }
}

/// Recognises and opens `path` as [`Input::open`] does, without the reader of no rows that
/// finds its schema. With `listed`, the remote object must still be the one a fragment was
/// listed from.
/// Opens `path`; `projected_only` when the input is read once, with `options.scan`'s
/// projection (a format may then open only what that projection reads).
fn open_format(
    path: &Path,
    options: &ReadOptions,
    listed: Option<&ObjectVersion>,
    projected_only: bool,
) -> Result<Opened> {
    refuse_stream(path, "opening an input for reuse")?;
    let mut origin = Origin::resolve(path, &options.storage)?;
    remote::check_unchanged(&origin, listed, path)?;
    let format = match options.format {
        Some(format) => format,
        None => origin.detect()?,
    };
    let salvage = options.scan.salvage;
    if salvage {
        check_salvage(format, &options.scan).map_err(|e| e.with_file(path))?;
    }
    let columns = match &options.scan.projection {
        Some(crate::scan::Projection::Names(names)) if projected_only => Some(names.as_slice()),
        _ => None,
    };
    let opened = formats::open(&origin, format, &options.format_options, salvage, columns)
        .map_err(|e| e.with_file(path))?;
    Ok(Opened {
        format,
        opened,
        remote: origin.is_remote(),
        object: origin.object_version(),
    })
}

/// One reader of `path` with `options.scan`, for a caller that reads the input once
/// ([`open`](crate::open), [`open_fragment`](crate::open_fragment)): the input is opened as
/// [`Input::open`] opens it, without finding the schema first, and not kept. With `listed`
/// (a fragment's object), a remote object that is no longer that version is an error.
pub(crate) fn read_once(
    path: &Path,
    options: &ReadOptions,
    listed: Option<&ObjectVersion>,
) -> Result<Box<dyn RecordBatchReader + Send>> {
    open_format(path, options, listed, true)?
        .opened
        .reader(options.scan.clone())
        .map_err(|e| e.with_file(path))
}

/// Salvage is for the formats whose files divide into parts that can be lost one by one, and
/// what is skipped must go somewhere the caller can read it.
fn check_salvage(format: Format, scan: &ScanOptions) -> Result<()> {
    if !format.salvages() {
        return Err(Error::invalid_argument(format!(
            "salvage reads the parts of a damaged jay, dataseries, filo, vs or bcolz file; \
             {} input is read whole or not at all",
            format.name()
        )));
    }
    if scan.report.is_none() {
        return Err(Error::invalid_argument(
            "salvage is on but no report was given to record what is skipped; \
             set ScanOptions::report (ReadOptions::with_salvage does both)",
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data(path: &str) -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("data")
            .join(path)
    }

    #[test]
    fn an_input_is_shared_between_threads() {
        fn shared<T: Send + Sync + Clone>() {}
        shared::<Input>();
    }

    #[test]
    fn a_fragment_of_another_input_or_other_settings_is_refused() {
        let jay = Input::open(data("jay/tiny.jay"), &ReadOptions::default()).unwrap();
        let other = Input::open(data("jay/all_types.jay"), &ReadOptions::default()).unwrap();
        let fragment = other.fragments(1).unwrap().remove(0);
        let Err(error) = jay.fragment_reader(&fragment, &ScanOptions::default()) else {
            panic!("a fragment of all_types.jay was read from tiny.jay");
        };
        let error = error.to_string();
        assert!(
            error.contains("all_types.jay") && error.contains("not of this input"),
            "{error}"
        );

        let mut relisted = jay.fragments(1).unwrap().remove(0);
        assert!(jay
            .fragment_reader(&relisted, &ScanOptions::default())
            .is_ok());
        relisted.options.jay.max_dataless_rows = 7;
        assert!(jay
            .fragment_reader(&relisted, &ScanOptions::default())
            .is_err());
    }

    #[test]
    fn a_stream_is_refused_naming_what_to_do() {
        let error = Input::open("/dev/zero", &ReadOptions::default())
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("character device") && error.contains("/dev/zero"),
            "{error}"
        );
    }
}
