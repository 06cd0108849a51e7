//! Tables on object stores: [`register_object_store`], which a front end calls for each
//! store a statement names (`CREATE EXTERNAL TABLE … LOCATION 's3://bucket/…'`), and the
//! lookup that names a listed object by its URL.
//!
//! DataFusion lists a table's files through the store registered for the table's URL, and
//! hands a format only the store and each object's path in it (`FileFormat::infer_schema`
//! gets no URL). The core reads objects by URL through its own registered
//! [`Storage`](arrowsmith::source::Storage), so a format must find the URL a store was
//! registered under: the session keeps the URLs registered through this module, and a store
//! is found among them by identity. It keeps each store's storage settings too, by its URL,
//! so that two buckets registered with different settings are each read with their own.

use std::path::Path;
use std::sync::Arc;

use arrowsmith::source::StorageOptions;
use datafusion::catalog::Session;
use datafusion::datasource::listing::ListingTableUrl;
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::object_store::ObjectStoreUrl;
use datafusion::prelude::SessionContext;
use object_store::ObjectStore;

/// The stores of a session registered through [`register_object_store`]: each store's URL and
/// the storage settings it was built with, those of a table on it whose `OPTIONS` give none.
/// `Debug` shows the URLs and the settings' keys, never their values.
#[derive(Debug, Clone, Default)]
pub(crate) struct SessionStorage {
    stores: Arc<Vec<(ObjectStoreUrl, StorageOptions)>>,
}

impl SessionStorage {
    /// The stores registered in `state`.
    pub(crate) fn of(state: &dyn Session) -> SessionStorage {
        state
            .config()
            .get_extension::<SessionStorage>()
            .map(|registered| SessionStorage::clone(&registered))
            .unwrap_or_default()
    }

    /// The storage settings of the store that holds `path` (a URL), if it was registered with
    /// some.
    pub(crate) fn for_path(&self, path: &Path) -> Option<&StorageOptions> {
        let url = ListingTableUrl::parse(path.to_str()?).ok()?.object_store();
        self.stores
            .iter()
            .find(|(registered, storage)| *registered == url && !storage.is_empty())
            .map(|(_, storage)| storage)
    }

    fn urls(&self) -> impl Iterator<Item = ObjectStoreUrl> + '_ {
        self.stores.iter().map(|(url, _)| url.clone())
    }
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
    let mut stores = config
        .get_extension::<SessionStorage>()
        .map(|registered| registered.stores.to_vec())
        .unwrap_or_default();
    stores.retain(|(url, _)| *url != store_url);
    stores.push((store_url, storage.clone()));
    config.set_extension(Arc::new(SessionStorage {
        stores: Arc::new(stores),
    }));
    Ok(())
}

/// The URL `store` is registered under in `state`: the local file system's, or one
/// registered through [`register_object_store`].
pub(crate) fn store_url(
    state: &dyn Session,
    store: &Arc<dyn ObjectStore>,
) -> Result<ObjectStoreUrl> {
    let runtime = state.runtime_env();
    let registered = SessionStorage::of(state);
    let found = std::iter::once(ObjectStoreUrl::local_filesystem())
        .chain(registered.urls())
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
        });
    found
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use arrow::array::{ArrayRef, Int64Array, RecordBatch, RecordBatchIterator};
    use arrowsmith::source::{
        register_storage, ByteSource, LocalFile, ObjectSource, ObjectWrite, RemoteEntry, Storage,
    };
    use object_store::{memory::InMemory, path::Path as ObjectPath, ObjectStoreExt, PutPayload};

    use super::*;
    use crate::SessionContextArrowsmithExt;

    /// Remote storage that serves one Jay file at every URL and records which `aws_region`
    /// each URL was read with.
    struct RecordingStorage {
        jay: Vec<u8>,
        reads: Mutex<Vec<(String, Option<String>)>>,
    }

    impl RecordingStorage {
        fn record(&self, url: &str, options: &StorageOptions) {
            let region = options.get("aws_region").map(str::to_owned);
            let mut reads = self.reads.lock().unwrap_or_else(|e| e.into_inner());
            reads.push((url.to_owned(), region));
        }
    }

    impl Storage for RecordingStorage {
        fn open_file(
            &self,
            url: &str,
            options: &StorageOptions,
        ) -> arrowsmith::Result<Arc<dyn ByteSource>> {
            self.record(url, options);
            Ok(Arc::new(LocalFile::from_bytes(url, self.jay.clone())))
        }

        fn open_dir(
            &self,
            url: &str,
            _: &StorageOptions,
        ) -> arrowsmith::Result<Arc<dyn ObjectSource>> {
            Err(arrowsmith::Error::unsupported("no directories here").with_file(url))
        }

        fn stat(&self, url: &str, options: &StorageOptions) -> arrowsmith::Result<RemoteEntry> {
            self.record(url, options);
            Ok(RemoteEntry::Object {
                size: self.jay.len() as u64,
            })
        }

        fn create_file(
            &self,
            url: &str,
            _: &StorageOptions,
        ) -> arrowsmith::Result<Box<dyn ObjectWrite>> {
            Err(arrowsmith::Error::unsupported("read only").with_file(url))
        }

        fn delete(&self, url: &str, _: &StorageOptions) -> arrowsmith::Result<()> {
            Err(arrowsmith::Error::unsupported("read only").with_file(url))
        }
    }

    fn jay_of_ids(ids: Vec<i64>) -> Vec<u8> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.jay");
        let ids: ArrayRef = Arc::new(Int64Array::from(ids));
        let batch = RecordBatch::try_from_iter([("id", ids)]).unwrap();
        let reader = RecordBatchIterator::new([Ok(batch.clone())], batch.schema());
        arrowsmith::write_all(reader, &path, &Default::default()).unwrap();
        std::fs::read(path).unwrap()
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn each_registered_store_is_read_with_its_own_storage_settings() {
        let jay = jay_of_ids(vec![1, 2, 3]);
        let storage = Arc::new(RecordingStorage {
            jay: jay.clone(),
            reads: Mutex::default(),
        });
        assert!(register_storage(Arc::clone(&storage) as Arc<dyn Storage>));
        let ctx = SessionContext::new();
        ctx.register_arrowsmith().unwrap();
        for bucket in ["one", "two"] {
            let store = InMemory::new();
            let key = ObjectPath::from("t.jay");
            store
                .put(&key, PutPayload::from(jay.clone()))
                .await
                .unwrap();
            let mut settings = StorageOptions::default();
            settings.set("aws_region", &format!("region-{bucket}"));
            let url = format!("s3://{bucket}");
            register_object_store(&ctx, &url, Arc::new(store), &settings).unwrap();
        }
        for bucket in ["one", "two"] {
            let sql = format!(
                "CREATE EXTERNAL TABLE t_{bucket} STORED AS JAY LOCATION 's3://{bucket}/t.jay'"
            );
            ctx.sql(&sql).await.unwrap().collect().await.unwrap();
            let sql = format!("SELECT sum(id) AS s FROM t_{bucket}");
            let batches = ctx.sql(&sql).await.unwrap().collect().await.unwrap();
            let sum = batches[0].column(0).as_any().downcast_ref::<Int64Array>();
            assert_eq!(sum.map(|s| s.value(0)), Some(6), "{bucket}");
        }
        let reads = storage.reads.lock().unwrap().clone();
        for bucket in ["one", "two"] {
            let url = format!("s3://{bucket}/t.jay");
            let regions: Vec<_> = reads.iter().filter(|(read, _)| *read == url).collect();
            assert!(!regions.is_empty(), "{url} was not read: {reads:?}");
            let expected = Some(format!("region-{bucket}"));
            assert!(
                regions.iter().all(|(_, region)| *region == expected),
                "{url} read with another store's settings: {reads:?}"
            );
        }
    }
}
