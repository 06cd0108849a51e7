//! An object-store prefix as an [`ObjectSource`]: a bcolz or Filo dataset's objects by key.

use std::sync::Arc;

use arrow_buffer::{Buffer, MutableBuffer};
use arrowsmith::source::{ByteSource, ObjectSource};
use arrowsmith::{Error, ErrorClass, Result};
use futures_util::{StreamExt, TryStreamExt};
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt};

use crate::config::Target;
use crate::failure::{failure, remote_error, Failure};
use crate::object::{RemoteFile, CONCURRENCY};
use crate::runtime::run;

/// The objects under one prefix.
#[derive(Debug)]
pub(crate) struct RemoteDir {
    target: Target,
}

impl RemoteDir {
    pub(crate) fn new(target: Target) -> RemoteDir {
        RemoteDir { target }
    }

    /// The object at `key` (relative, `/`-separated) as a target of its own.
    fn child(&self, key: &str) -> Result<Target> {
        let root = self.target.path.as_ref();
        let joined = if root.is_empty() {
            key.to_string()
        } else {
            format!("{root}/{key}")
        };
        let path = Path::parse(&joined).map_err(|e| {
            Error::new(
                ErrorClass::InvalidArgument,
                format!("the key {key:?} is not a valid object key ({e})"),
            )
            .with_file(self.target.shown.as_str())
        })?;
        let mut target = self.target.clone();
        target.shown = format!("{}/{key}", self.target.shown.trim_end_matches('/'));
        target.path = path;
        Ok(target)
    }
}

/// Whether `error` means "no such object", which a directory format asks about (an optional
/// file); a missing bucket stays an error.
fn is_missing(error: &object_store::Error) -> bool {
    failure(error) == Failure::NotFound
}

impl ObjectSource for RemoteDir {
    fn location(&self) -> &str {
        &self.target.shown
    }

    fn open(&self, key: &str) -> Result<Option<Arc<dyn ByteSource>>> {
        let target = self.child(key)?;
        let (store, path) = (target.store.clone(), target.path.clone());
        match run(async move { store.head(&path).await })? {
            Ok(meta) => Ok(Some(Arc::new(RemoteFile::with_meta(
                target, meta.size, meta.e_tag,
            )))),
            Err(e) if is_missing(&e) => Ok(None),
            Err(e) => Err(remote_error(&target, "open the object", &e)),
        }
    }

    fn get_all(&self, keys: &[&str]) -> Result<Vec<Option<Buffer>>> {
        let targets = keys
            .iter()
            .map(|key| self.child(key))
            .collect::<Result<Vec<_>>>()?;
        let paths: Vec<Path> = targets.iter().map(|t| t.path.clone()).collect();
        let store = self.target.store.clone();
        let results = run(async move {
            futures_util::stream::iter(paths)
                .map(|path| get_whole(store.clone(), path))
                .buffered(CONCURRENCY)
                .collect::<Vec<_>>()
                .await
        })?;
        results
            .into_iter()
            .zip(&targets)
            .map(|(result, target)| match result {
                Ok(bytes) => Ok(bytes.map(whole_object)),
                Err(e) => Err(remote_error(target, "read the object", &e)),
            })
            .collect()
    }

    fn list(&self, prefix: &str) -> Result<Option<Vec<String>>> {
        if !self.target.listable {
            return Ok(None);
        }
        let root = self.target.path.clone();
        let listed = if prefix.is_empty() {
            root.clone()
        } else {
            self.child(prefix.trim_end_matches('/'))?.path
        };
        let store = self.target.store.clone();
        let metas = run(async move {
            let prefix = (!listed.as_ref().is_empty()).then_some(listed);
            store.list(prefix.as_ref()).try_collect::<Vec<_>>().await
        })?
        .map_err(|e| remote_error(&self.target, "list the objects", &e))?;
        let root_len = if root.as_ref().is_empty() {
            0
        } else {
            root.as_ref().len() + 1
        };
        let mut keys: Vec<String> = metas
            .into_iter()
            .filter_map(|meta| meta.location.as_ref().get(root_len..).map(str::to_string))
            .collect();
        keys.sort();
        Ok(Some(keys))
    }
}

/// The whole object at `path`, `None` when there is none.
async fn get_whole(
    store: Arc<dyn ObjectStore>,
    path: Path,
) -> object_store::Result<Option<bytes::Bytes>> {
    let fetched = match store.get(&path).await {
        Ok(result) => result.bytes().await,
        Err(e) => Err(e),
    };
    match fetched {
        Ok(bytes) => Ok(Some(bytes)),
        Err(e) if is_missing(&e) => Ok(None),
        Err(e) => Err(e),
    }
}

/// A whole object's bytes, 8-byte aligned as a memory map's start is.
fn whole_object(bytes: bytes::Bytes) -> Buffer {
    if (bytes.as_ptr() as usize) % 8 == 0 {
        return Buffer::from(bytes);
    }
    let mut copy = MutableBuffer::new(bytes.len());
    copy.extend_from_slice(&bytes);
    copy.into()
}
