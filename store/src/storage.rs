//! The core's [`Storage`] on object_store.

use std::sync::Arc;

use arrowsmith::source::{
    ByteSource, ObjectSource, ObjectWrite, RemoteEntry, RemoteOpened, Storage, StorageOptions,
};
use arrowsmith::{Error, Result};
use futures_util::StreamExt;
use object_store::ObjectStoreExt;

use crate::config::{resolve, Target};
use crate::failure::{failure, remote_error, Failure};
use crate::object::RemoteFile;
use crate::prefix::RemoteDir;
use crate::runtime::run;

/// S3, GCS, Azure, HTTP(S) and `file://` URLs through object_store, with object_store's
/// settings keys over the environment. [`crate::register`] registers one for the process.
#[derive(Debug, Default, Clone, Copy)]
pub struct ObjectStoreStorage;

impl Storage for ObjectStoreStorage {
    fn open_file(&self, url: &str, options: &StorageOptions) -> Result<Arc<dyn ByteSource>> {
        Ok(Arc::new(RemoteFile::open(resolve(url, options)?)?))
    }

    fn open_dir(&self, url: &str, options: &StorageOptions) -> Result<Arc<dyn ObjectSource>> {
        Ok(Arc::new(RemoteDir::new(resolve(url, options)?)))
    }

    /// One HEAD; when there is no object, one listing of at most one key under the prefix.
    fn stat(&self, url: &str, options: &StorageOptions) -> Result<RemoteEntry> {
        let target = resolve(url, options)?;
        let store = target.store.clone();
        let path = target.path.clone();
        if !path.as_ref().is_empty() {
            match run(async move { store.head(&path).await })? {
                Ok(meta) => return Ok(RemoteEntry::Object { size: meta.size }),
                Err(e) if failure(&e) == Failure::NotFound => {}
                Err(e) => return Err(remote_error(&target, "look up the object", &e)),
            }
        }
        if !target.listable {
            return Ok(RemoteEntry::Missing);
        }
        match first_key(&target, "list the prefix")? {
            Some(_) => Ok(RemoteEntry::Prefix),
            None => Ok(RemoteEntry::Missing),
        }
    }

    /// One HEAD for an object (its size and ETag, which its reads need); when there is none,
    /// one listing of at most one key under it as a prefix, which also tells a missing bucket.
    fn open_entry(&self, url: &str, options: &StorageOptions) -> Result<RemoteOpened> {
        let target = resolve(url, options)?;
        if !target.path.as_ref().is_empty() {
            let store = target.store.clone();
            let path = target.path.clone();
            match run(async move { store.head(&path).await })? {
                Ok(meta) => {
                    let object = RemoteFile::with_meta(target, meta.size, meta.e_tag);
                    return Ok(RemoteOpened::Object(Arc::new(object)));
                }
                Err(e) if failure(&e) == Failure::NotFound && target.listable => {}
                Err(e) => return Err(remote_error(&target, "open the object", &e)),
            }
        }
        match first_key(&target, "open the object")? {
            Some(_) => Ok(RemoteOpened::Prefix(Arc::new(RemoteDir::new(target)))),
            None => Err(Error::from(std::io::Error::new(
                std::io::ErrorKind::NotFound,
                "could not open the object: there is no object at this URL, and no objects \
                 under it as a prefix",
            ))
            .with_file(target.shown.as_str())),
        }
    }

    fn create_file(&self, url: &str, options: &StorageOptions) -> Result<Box<dyn ObjectWrite>> {
        Ok(crate::write::create(resolve(url, options)?))
    }

    fn delete(&self, url: &str, options: &StorageOptions) -> Result<()> {
        let target = resolve(url, options)?;
        let store = target.store.clone();
        let path = target.path.clone();
        match run(async move { store.delete(&path).await })? {
            Ok(()) => Ok(()),
            Err(e) if failure(&e) == Failure::NotFound => Ok(()),
            Err(e) => Err(remote_error(&target, "delete the object", &e)),
        }
    }
}

/// The first key under `target` as a prefix (the whole store when its path is empty), from
/// one listing that stops at one key; `None` when there is none. A failed listing is an error
/// saying it could not do `what`.
fn first_key(target: &Target, what: &str) -> Result<Option<object_store::path::Path>> {
    let store = target.store.clone();
    let path = target.path.clone();
    let first = run(async move {
        let prefix = (!path.as_ref().is_empty()).then_some(path);
        store.list(prefix.as_ref()).next().await
    })?;
    first
        .transpose()
        .map(|meta| meta.map(|meta| meta.location))
        .map_err(|e| remote_error(target, what, &e))
}
