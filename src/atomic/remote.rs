//! Output to remote storage that appears whole or not at all, the object-store form of
//! [`AtomicFile`](super::AtomicFile) and [`AtomicDir`](super::AtomicDir).
//!
//! - A single-file format whose writer takes a sink (Jay, DataSeries, Parquet, Arrow IPC file
//!   and stream, CSV, NDJSON) streams into one multipart upload ([`Storage::create_file`],
//!   an [`ObjectSink`]) that is completed only when the writer has finished and aborted on
//!   any failure, so no partial object is ever visible. (Jay's writer keeps its columns in
//!   local spill files and writes the file into the sink at its finish.)
//! - The other single-file formats (VS, a bare Filo vector) are written by their own writer
//!   into a local scratch file, sent up the same way when the writer finishes.
//! - A directory format (bcolz, Filo set) is written into a local scratch directory, then
//!   sent up object by object, the objects that mark a dataset
//!   ([`Format::dataset_markers`]) last, so that a reader never finds a dataset half written;
//!   a failed upload deletes the objects it put.
//!
//! Dropping an unfinished output uploads nothing, and the scratch directory goes with it.
//! Flushing to disk (`durable`, `--no-sync`) means nothing here: the local copy is scratch,
//! and the store says when an object is stored.

use std::collections::BTreeSet;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use tempfile::TempDir;

use crate::error::{Error, ErrorClass, Result};
use crate::format::Format;
use crate::source::{LocalDir, ObjectSource, ObjectWrite, RemoteEntry, Storage, StorageOptions};

/// A remote output being written: the local scratch copy and where it goes.
pub(crate) struct RemoteOutput {
    storage: Arc<dyn Storage>,
    url: String,
    format: Format,
    options: StorageOptions,
    /// The keys of the dataset the output replaces (a directory format's, with overwrite):
    /// what is not written again is deleted once the new dataset is complete.
    replaced: Option<Vec<String>>,
    scratch: TempDir,
    local: PathBuf,
}

impl RemoteOutput {
    /// Checks what is at `url` against the existing-output rule (an object for a single-file
    /// format, a dataset of the format for bcolz and Filo; replaced only with `overwrite`) and
    /// starts a scratch directory for the format's writer.
    pub(crate) fn start(
        storage: Arc<dyn Storage>,
        url: &str,
        format: Format,
        overwrite: bool,
        options: &StorageOptions,
    ) -> Result<RemoteOutput> {
        let replaced = check_remote_target(storage.as_ref(), url, format, overwrite, options)?;
        let scratch = tempfile::Builder::new()
            .prefix(".arrowsmith-upload-")
            .tempdir()
            .map_err(|e| Error::from(e).with_file(std::env::temp_dir()))?;
        let local = scratch.path().join(scratch_name(url));
        Ok(RemoteOutput {
            storage,
            url: url.to_owned(),
            format,
            options: options.clone(),
            replaced,
            scratch,
            local,
        })
    }

    /// Starts the multipart upload of a single-file output that its writer streams into.
    pub(crate) fn open_upload(&self) -> Result<ObjectSink> {
        let upload = self.storage.create_file(&self.url, &self.options)?;
        Ok(ObjectSink {
            upload: Arc::new(Mutex::new(Pending(Some(upload)))),
            url: self.url.clone(),
        })
    }

    /// Where the format's writer writes the local copy.
    pub(crate) fn local_path(&self) -> &Path {
        &self.local
    }

    /// Sends the finished local copy up: see the [module](self) documentation.
    pub(crate) fn upload(self) -> Result<()> {
        let uploaded = if self.format.is_directory() {
            self.upload_dataset()
        } else {
            self.upload_file()
        };
        drop(self.scratch);
        uploaded
    }

    fn upload_file(&self) -> Result<()> {
        self.send(&self.local, &self.url)
    }

    /// Streams the local file at `path` up as the object at `url`, in one multipart upload.
    fn send(&self, path: &Path, url: &str) -> Result<()> {
        let mut file = std::fs::File::open(path).map_err(|e| Error::from(e).with_file(path))?;
        let mut object = self.storage.create_file(url, &self.options)?;
        match io::copy(&mut file, &mut object).and_then(|_| object.flush()) {
            Ok(_) => object.finish(),
            Err(e) => {
                // The upload's own error is the one to report; an abort that fails too leaves
                // only unfinished parts, which the store expires.
                let _ = object.abort();
                Err(Error::from(e).with_file(url))
            }
        }
    }

    fn upload_dataset(&self) -> Result<()> {
        let keys = LocalDir::new(&self.local).list("")?.unwrap_or_default();
        let markers = self.format.dataset_markers();
        let (last, first): (Vec<&String>, Vec<&String>) =
            keys.iter().partition(|key| markers.contains(&key.as_str()));
        if let Some(old) = &self.replaced {
            // The old dataset stops being one before any of its objects is replaced, so that
            // no reader opens a mix of the two.
            for marker in markers.iter().filter(|m| old.iter().any(|k| k == *m)) {
                self.storage.delete(&self.key_url(marker), &self.options)?;
            }
        }
        let mut put = Vec::with_capacity(keys.len());
        for key in first.into_iter().chain(last) {
            if let Err(e) = self.put(key) {
                self.remove(&put);
                return Err(e);
            }
            put.push(key.as_str());
        }
        if let Some(old) = &self.replaced {
            let new: BTreeSet<&str> = keys.iter().map(String::as_str).collect();
            for stale in old.iter().filter(|k| !new.contains(k.as_str())) {
                self.storage.delete(&self.key_url(stale), &self.options)?;
            }
        }
        Ok(())
    }

    /// Uploads the local file of `key` as one object.
    fn put(&self, key: &str) -> Result<()> {
        self.send(&self.local.join(key), &self.key_url(key))
    }

    /// Deletes the objects of `keys`, after a failed upload; a failure to delete one is not
    /// the error to report.
    fn remove(&self, keys: &[&str]) {
        for key in keys.iter().rev() {
            let _ = self.storage.delete(&self.key_url(key), &self.options);
        }
    }

    fn key_url(&self, key: &str) -> String {
        format!("{}/{key}", self.url.trim_end_matches('/'))
    }
}

/// A multipart upload a writer streams into as a sink: shared by the writer and the
/// [`RemoteOutput`]'s owner, who completes it once the writer has finished
/// ([`ObjectSink::finish`]). An upload never completed is aborted when the last holder lets
/// go of it: no object appears.
#[derive(Clone)]
pub(crate) struct ObjectSink {
    upload: Arc<Mutex<Pending>>,
    url: String,
}

/// An upload not yet completed; aborted when dropped.
struct Pending(Option<Box<dyn ObjectWrite>>);

impl Drop for Pending {
    fn drop(&mut self) {
        if let Some(upload) = self.0.take() {
            let _ = upload.abort();
        }
    }
}

impl ObjectSink {
    fn take(&self) -> Option<Box<dyn ObjectWrite>> {
        self.upload
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .0
            .take()
    }

    /// Completes the upload: the object appears whole.
    pub(crate) fn finish(&self) -> Result<()> {
        match self.take() {
            Some(upload) => upload.finish(),
            None => {
                Err(Error::new(ErrorClass::Io, "the upload was already closed")
                    .with_file(&self.url))
            }
        }
    }

    /// Abandons the upload; its own failure is not the error to report.
    pub(crate) fn abort(&self) {
        if let Some(upload) = self.take() {
            let _ = upload.abort();
        }
    }
}

impl io::Write for ObjectSink {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let mut pending = self
            .upload
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        match pending.0.as_mut() {
            Some(upload) => upload.write(buf),
            None => Err(io::Error::other("the upload was already closed")),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        let mut pending = self
            .upload
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        match pending.0.as_mut() {
            Some(upload) => upload.flush(),
            None => Ok(()),
        }
    }
}

/// The name of the local copy: the URL's last segment (a bcolz carray's column is named after
/// it), or `output`.
fn scratch_name(url: &str) -> String {
    let name = url.trim_end_matches('/').rsplit('/').next().unwrap_or("");
    let valid = !name.is_empty() && !name.contains("://") && name != "." && name != "..";
    match valid {
        true => name.to_owned(),
        false => "output".to_owned(),
    }
}

/// The existing-output rule at a URL: nothing there is a new output; an object of a
/// single-file format, or a dataset of a directory format (a prefix holding its marker), is
/// replaced only with `overwrite`; anything else is refused. Gives the keys of a dataset
/// being replaced (`None` when the store cannot list them, or for a single file).
fn check_remote_target(
    storage: &dyn Storage,
    url: &str,
    format: Format,
    overwrite: bool,
    options: &StorageOptions,
) -> Result<Option<Vec<String>>> {
    let refused = |what: &str| {
        Error::new(
            ErrorClass::Io,
            format!(
                "the output exists and is {what}; arrowsmith replaces only an output it could \
                 have written; remove it or choose another URL"
            ),
        )
        .with_file(url)
    };
    let exists = || {
        Error::invalid_argument("the output already exists; set the overwrite option to replace it")
            .with_setting("overwrite")
            .with_file(url)
    };
    match (storage.stat(url, options)?, format.is_directory()) {
        (RemoteEntry::Missing, _) => Ok(None),
        (RemoteEntry::Object { .. }, false) if overwrite => Ok(None),
        (RemoteEntry::Object { .. }, false) => Err(exists()),
        (RemoteEntry::Object { .. }, true) => Err(refused(&format!(
            "an object, not a {format} dataset (a prefix)"
        ))),
        (RemoteEntry::Prefix, false) => Err(refused("a prefix of objects, not one object")),
        (RemoteEntry::Prefix, true) => {
            let objects = storage.open_dir(url, options)?;
            if !is_dataset(objects.as_ref(), format)? {
                return Err(refused(&format!(
                    "not a {format} dataset (a prefix with {})",
                    format.dataset_markers().join(" or ")
                )));
            }
            if !overwrite {
                return Err(exists());
            }
            Ok(Some(match objects.list("")? {
                Some(keys) => keys,
                None => format
                    .dataset_markers()
                    .iter()
                    .map(|m| (*m).to_owned())
                    .collect(),
            }))
        }
    }
}

/// Whether `objects` holds a marker of a `format` dataset.
fn is_dataset(objects: &dyn ObjectSource, format: Format) -> Result<bool> {
    for marker in format.dataset_markers() {
        if objects.open(marker)?.is_some() {
            return Ok(true);
        }
    }
    Ok(false)
}
