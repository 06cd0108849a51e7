//! Remote storage behind URLs (`s3://`, `gs://`, `az://`, `abfss://`, `http(s)://`): the core
//! reads and writes it through a [`Storage`] that a front end registers once per process. The
//! CLI, SQL and Python register the `arrowsmith-store` member's, built on object_store; a
//! library caller does the same (`arrowsmith_store::register()`) or registers its own.

use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;
use std::sync::{Arc, OnceLock};

use super::{ByteSource, ObjectSource};
use crate::error::{Error, ErrorClass, Result};
use crate::location::is_url;

/// The settings of remote storage: object_store's own keys (`aws_access_key_id`,
/// `aws_endpoint_url`, `aws_allow_http`, `google_service_account`,
/// `azure_storage_account_name`, …) with their values, over what the environment sets. Its
/// `Debug` shows the keys and never the values: they hold credentials.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct StorageOptions {
    values: BTreeMap<String, String>,
}

impl StorageOptions {
    /// Sets `key` (lower-cased, as object_store spells its keys) to `value`.
    pub fn set(&mut self, key: &str, value: &str) {
        self.values
            .insert(key.to_ascii_lowercase(), value.to_string());
    }

    /// The value of `key`.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.values.get(key).map(String::as_str)
    }

    /// Every key and value, sorted by key.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.values.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }

    /// Whether none is set.
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }
}

impl fmt::Debug for StorageOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set().entries(self.values.keys()).finish()
    }
}

/// A remote object being written: bytes go up as they are written (a multipart upload), and
/// the object appears only when [`finish`](ObjectWrite::finish) completes it. Dropping it
/// unfinished, or [`abort`](ObjectWrite::abort), leaves no object.
pub trait ObjectWrite: std::io::Write + Send {
    /// Completes the upload: the object appears whole.
    fn finish(self: Box<Self>) -> Result<()>;
    /// Abandons the upload: nothing appears, and the parts uploaded are released.
    fn abort(self: Box<Self>) -> Result<()>;
}

/// What is at a URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RemoteEntry {
    /// An object of this many bytes.
    Object {
        /// Its size.
        size: u64,
    },
    /// No object, but objects under it as a prefix (a bcolz or Filo dataset, a folder).
    Prefix,
    /// Nothing.
    Missing,
}

/// What [`Storage::open_entry`] found at a URL, opened.
#[derive(Debug, Clone)]
pub enum RemoteOpened {
    /// An object.
    Object(Arc<dyn ByteSource>),
    /// No object, but objects under it as a prefix (a bcolz or Filo dataset's root).
    Prefix(Arc<dyn ObjectSource>),
}

/// Remote storage: what the core needs of an object store, with no object_store type in it.
/// Every method takes the URL as the user gave it, and names it without credentials in its
/// errors.
pub trait Storage: Send + Sync {
    /// Opens the object at `url` (one request for its size and version).
    fn open_file(&self, url: &str, options: &StorageOptions) -> Result<Arc<dyn ByteSource>>;
    /// The objects under the prefix `url` (a directory format's root).
    fn open_dir(&self, url: &str, options: &StorageOptions) -> Result<Arc<dyn ObjectSource>>;
    /// What is at `url`.
    fn stat(&self, url: &str, options: &StorageOptions) -> Result<RemoteEntry>;
    /// Opens what is at `url`: the object, or when there is none, the prefix; an error of
    /// kind [`NotFound`](std::io::ErrorKind::NotFound) when neither is there. Reading an
    /// object, the common case, costs only its open: the prefix is looked for after the
    /// object is not found, which this default takes from [`open_file`](Self::open_file)
    /// failing with `NotFound` (as a store's HEAD of a prefix does). A store overrides it when
    /// it can tell the two apart in fewer requests than `open_file` then [`stat`](Self::stat).
    fn open_entry(&self, url: &str, options: &StorageOptions) -> Result<RemoteOpened> {
        let not_found = match self.open_file(url, options) {
            Ok(object) => return Ok(RemoteOpened::Object(object)),
            Err(e) if e.io_kind() == Some(std::io::ErrorKind::NotFound) => e,
            Err(e) => return Err(e),
        };
        match self.stat(url, options)? {
            RemoteEntry::Prefix => Ok(RemoteOpened::Prefix(self.open_dir(url, options)?)),
            // An object that appeared since: open it as such.
            RemoteEntry::Object { .. } => Ok(RemoteOpened::Object(self.open_file(url, options)?)),
            RemoteEntry::Missing => Err(not_found),
        }
    }
    /// Starts writing the object at `url`.
    fn create_file(&self, url: &str, options: &StorageOptions) -> Result<Box<dyn ObjectWrite>>;
    /// Deletes the object at `url`; deleting one that is not there is no error.
    fn delete(&self, url: &str, options: &StorageOptions) -> Result<()>;
}

static STORAGE: OnceLock<Arc<dyn Storage>> = OnceLock::new();

/// Registers the storage URLs are read and written through, once per process; `false` when
/// one was registered already (it stays).
pub fn register_storage(storage: Arc<dyn Storage>) -> bool {
    STORAGE.set(storage).is_ok()
}

/// The registered storage, for `url`; an error saying how to get one when none is.
pub fn registered_storage(url: &str) -> Result<Arc<dyn Storage>> {
    STORAGE.get().cloned().ok_or_else(|| {
        Error::new(
            ErrorClass::Unsupported,
            "this is a URL, and no remote storage is registered in this process; \
             the arrowsmith CLI, SQL and Python read URLs, and a library caller registers \
             arrowsmith_store::register() first",
        )
        .with_file(url)
    })
}

/// Refuses `what` (an append, a delete) on `path` when it is a URL: a remote object cannot
/// be changed in place.
pub fn refuse_url(path: &Path, what: &str) -> Result<()> {
    if !is_url(path) {
        return Ok(());
    }
    Err(Error::unsupported(format!(
        "{what} changes a file in place, which an object in remote storage cannot be; \
         write a new object instead, or work on a local copy"
    ))
    .with_file(path))
}
