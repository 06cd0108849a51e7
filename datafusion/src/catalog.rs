//! Paths as tables: `SELECT … FROM 'data/trace.ds'`.
//!
//! [`ArrowsmithUrlTableFactory`] turns a table name that is a local path into an
//! [`ArrowsmithTable`] when the path holds arrowsmith data, recognised as `arrowsmith convert`
//! recognises its input: by content, then by extension, bcolz and Filo directories by their
//! structure, and a plain directory by the extension of the files in it. Other paths (CSV,
//! JSON, Arrow IPC) go on to DataFusion's own dynamic file tables, so one session reads both.
//! A URL goes to DataFusion's dynamic tables too (they list it through the registered object
//! store and read Jay, DataSeries and VS objects with [`crate::ArrowsmithFormat`]), except a
//! bcolz or Filo dataset's key prefix (`s3://bucket/t.bcolz`), which is one
//! [`ArrowsmithTable`] as a local directory is.
//!
//! DataFusion consults such a factory when a name is not a registered table, through a wrapper
//! around each catalog; [`install`] puts the wrappers around the session's catalogs in place,
//! so registration needs no new `SessionContext` (`enable_url_table` makes one).

use std::path::Path;
use std::sync::Arc;

use arrowsmith::source::is_url;
use arrowsmith::Format;
use async_trait::async_trait;
use datafusion::catalog::{
    CatalogProvider, DynamicFileSchemaProvider, SchemaProvider, TableProvider, UrlTableFactory,
};
use datafusion::datasource::dynamic_file::DynamicListTableFactory;
use datafusion::error::Result;
use datafusion::execution::context::{SessionContext, SessionState};
use datafusion_session::SessionStore;

use crate::table::{resolve, ArrowsmithTable};

/// Makes tables of local paths holding arrowsmith data; hands other names to DataFusion.
#[derive(Debug)]
pub struct ArrowsmithUrlTableFactory {
    fallback: DynamicListTableFactory,
}

impl ArrowsmithUrlTableFactory {
    /// A factory for the session of `ctx`, which it refers to weakly (the session owns it).
    pub fn new(ctx: &SessionContext) -> Self {
        let store = SessionStore::new();
        store.with_state(ctx.state_weak_ref());
        ArrowsmithUrlTableFactory {
            fallback: DynamicListTableFactory::new(store),
        }
    }
}

/// Whether arrowsmith, rather than DataFusion, reads `format` when it is a path's format.
fn read_by_arrowsmith(format: Format) -> bool {
    match format {
        Format::Csv | Format::Ndjson | Format::Arrow => false,
        Format::Parquet => !cfg!(feature = "parquet"),
        _ => true,
    }
}

#[async_trait]
impl UrlTableFactory for ArrowsmithUrlTableFactory {
    async fn try_new(&self, url: &str) -> Result<Option<Arc<dyn TableProvider>>> {
        let path = url.strip_prefix("file://").unwrap_or(url);
        if is_url(path) {
            let dataset = Format::from_extension(Path::new(path.trim_end_matches('/')))
                .filter(|format| format.is_directory());
            if let Some(format) = dataset {
                let table = ArrowsmithTable::open(path, Some(format), Default::default()).await?;
                return Ok(Some(Arc::new(table)));
            }
            return self.fallback.try_new(url).await;
        }
        // Only existing local paths are ours; anything else may be DataFusion's (a glob).
        let ours = Path::new(path).exists()
            && matches!(resolve(Path::new(path), None), Ok((format, _)) if read_by_arrowsmith(format));
        if ours {
            let table = ArrowsmithTable::open(path, None, Default::default()).await?;
            return Ok(Some(Arc::new(table)));
        }
        self.fallback.try_new(url).await
    }
}

/// Wraps a catalog so that its schemas look names up as paths when they are not tables.
#[derive(Debug)]
struct PathCatalog {
    inner: Arc<dyn CatalogProvider>,
    factory: Arc<dyn UrlTableFactory>,
}

impl CatalogProvider for PathCatalog {
    fn schema_names(&self) -> Vec<String> {
        self.inner.schema_names()
    }

    fn schema(&self, name: &str) -> Option<Arc<dyn SchemaProvider>> {
        let inner = self.inner.schema(name)?;
        Some(Arc::new(DynamicFileSchemaProvider::new(
            inner,
            Arc::clone(&self.factory),
        )))
    }

    fn register_schema(
        &self,
        name: &str,
        schema: Arc<dyn SchemaProvider>,
    ) -> Result<Option<Arc<dyn SchemaProvider>>> {
        self.inner.register_schema(name, schema)
    }

    fn deregister_schema(
        &self,
        name: &str,
        cascade: bool,
    ) -> Result<Option<Arc<dyn SchemaProvider>>> {
        self.inner.deregister_schema(name, cascade)
    }
}

/// Puts a path-resolving wrapper around every catalog of `state`.
pub(crate) fn install(state: &SessionState, factory: Arc<dyn UrlTableFactory>) {
    let catalogs = state.catalog_list();
    for name in catalogs.catalog_names() {
        let Some(inner) = catalogs.catalog(&name) else {
            continue;
        };
        if inner.as_ref().is::<PathCatalog>() {
            continue;
        }
        catalogs.register_catalog(
            name,
            Arc::new(PathCatalog {
                inner,
                factory: Arc::clone(&factory),
            }),
        );
    }
}
