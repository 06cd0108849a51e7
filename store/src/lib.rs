//! Object storage for arrowsmith: the core's remote [`Storage`](arrowsmith::source::Storage) on
//! [object_store](https://docs.rs/object_store) (the major DataFusion is built on), for `s3://`,
//! `gs://`, `az://`, `abfss://`, `http(s)://` and `file://` URLs.
//!
//! ```no_run
//! use std::sync::Arc;
//! use arrowsmith::source::{registered_storage, StorageOptions};
//!
//! arrowsmith_store::register();
//! let url = "s3://bucket/table.jay";
//! let mut options = StorageOptions::default();
//! options.set("aws_region", "eu-west-1");
//! let object = registered_storage(url)?.open_file(url, &options)?;
//! let jay = arrowsmith::jay::JayFile::open_source(object, false)?;
//! # Ok::<(), arrowsmith::Error>(())
//! ```
//!
//! Settings are object_store's own keys (`aws_access_key_id`, `aws_endpoint_url`,
//! `google_service_account`, `azure_storage_account_name`, client keys such as `allow_http` and
//! `timeout`) over the environment (`AWS_*`, `GOOGLE_*`, `AZURE_*`), plus `max_retries` and
//! `retry_timeout`; an unknown key is an error naming it. A read checks the object's ETag on
//! every request, so it never mixes two versions; a write is a multipart upload that completes
//! at `finish`, so no partial object is ever visible. docs/object-storage.md has the details.

mod config;
mod failure;
mod object;
mod prefix;
mod redact;
mod runtime;
mod storage;
mod write;

use std::sync::Arc;

use arrowsmith::source::{register_storage, StorageOptions};
use arrowsmith::Result;
use object_store::ObjectStore;

pub use storage::ObjectStoreStorage;

/// Registers [`ObjectStoreStorage`] as the process's remote storage, once: later calls (and a
/// call after another storage was registered) change nothing.
pub fn register() {
    static REGISTERED: std::sync::Once = std::sync::Once::new();
    REGISTERED.call_once(|| {
        register_storage(Arc::new(ObjectStoreStorage));
    });
}

/// The store `url` is read through with `options`, and the path in it: the very store (cached
/// per bucket and settings) the readers use, for DataFusion to list and read files through.
pub fn object_store_for(
    url: &str,
    options: &StorageOptions,
) -> Result<(Arc<dyn ObjectStore>, object_store::path::Path)> {
    let target = config::resolve(url, options)?;
    Ok((target.store, target.path))
}
