//! Tables on object stores: [`register_object_store`], which a front end calls for each
//! store a statement names (`CREATE EXTERNAL TABLE … LOCATION 's3://bucket/…'`), and the
//! lookup that names a listed object by its URL.
//!
//! DataFusion lists a table's files through the store registered for the table's URL, and
//! hands a format only the store and each object's path in it (`FileFormat::infer_schema`
//! gets no URL). The core reads objects by URL through its own registered
//! [`Storage`](arrowsmith::source::Storage), so a format must find the URL a store was
//! registered under: the session keeps the URLs registered through this module, and a store
//! is found among them by identity.

use std::sync::Arc;

use arrowsmith::source::StorageOptions;
use datafusion::catalog::Session;
use datafusion::datasource::listing::ListingTableUrl;
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::object_store::ObjectStoreUrl;
use datafusion::prelude::SessionContext;
use object_store::ObjectStore;

/// The store URLs of a session registered through [`register_object_store`], and the storage
/// settings they were built with: those of a table whose `OPTIONS` give none.
#[derive(Debug, Default)]
struct RegisteredStores {
    urls: Vec<ObjectStoreUrl>,
    storage: StorageOptions,
}

/// Registers `store` for the store of `url` (its scheme and authority: `s3://bucket` of
/// `s3://bucket/path/t.jay`), so that DataFusion lists a table's files there and arrowsmith
/// names each one by its URL for the core. The front end builds the store from the
/// statement's storage settings (`arrowsmith_store::object_store_for`), and gives them here
/// too: the core reads the objects of a table whose `OPTIONS` name no storage setting (a
/// `FROM 's3://…'` table, say) with them. A store registered again for the same URL replaces
/// the one before.
pub fn register_object_store(
    ctx: &SessionContext,
    url: &str,
    store: Arc<dyn ObjectStore>,
    storage: &StorageOptions,
) -> Result<()> {
    let store_url = ListingTableUrl::parse(url)?.object_store();
    ctx.runtime_env()
        .register_object_store(store_url.as_ref(), store);
    let state = ctx.state_ref();
    let mut state = state.write();
    let config = state.config_mut();
    let mut urls = config
        .get_extension::<RegisteredStores>()
        .map(|registered| registered.urls.clone())
        .unwrap_or_default();
    if !urls.contains(&store_url) {
        urls.push(store_url);
    }
    config.set_extension(Arc::new(RegisteredStores {
        urls,
        storage: storage.clone(),
    }));
    Ok(())
}

/// The storage settings the session's stores were registered with, if any.
pub(crate) fn session_storage(state: &dyn Session) -> Option<StorageOptions> {
    state
        .config()
        .get_extension::<RegisteredStores>()
        .map(|registered| registered.storage.clone())
        .filter(|storage| !storage.is_empty())
}

/// The URL `store` is registered under in `state`: the local file system's, or one
/// registered through [`register_object_store`].
pub(crate) fn store_url(
    state: &dyn Session,
    store: &Arc<dyn ObjectStore>,
) -> Result<ObjectStoreUrl> {
    let runtime = state.runtime_env();
    let registered = state
        .config()
        .get_extension::<RegisteredStores>()
        .map(|registered| registered.urls.clone())
        .unwrap_or_default();
    std::iter::once(ObjectStoreUrl::local_filesystem())
        .chain(registered)
        .find(|url| {
            runtime
                .object_store(url)
                .is_ok_and(|found| Arc::ptr_eq(&found, store))
        })
        .ok_or_else(|| {
            DataFusionError::Plan(format!(
                "arrowsmith cannot name the objects of the store {store}: it was registered \
                 without arrowsmith_datafusion::register_object_store; register it with that \
                 function"
            ))
        })
}
