//! `--storage-option KEY=VALUE`: the settings of the object store a URL is read or written
//! through, as object_store's own keys (`aws_region`, `aws_endpoint_url`,
//! `azure_storage_account_name`, …), handed to the core's settings table like every other
//! setting. The store reads the environment (`AWS_*`, `GOOGLE_*`, `AZURE_*`) itself; these go
//! over it. A value may be a credential: it is never shown, not even in a usage error.

use std::fmt;

use arrowsmith::options::is_storage_key;
use arrowsmith::Error;
use clap::Args;

/// Registers the remote storage URLs are read and written through: object_store's, or in a
/// build without the `remote` feature, one that refuses every URL saying how to get it.
pub(crate) fn register() {
    #[cfg(feature = "remote")]
    arrowsmith_store::register();
    #[cfg(not(feature = "remote"))]
    arrowsmith::source::register_storage(std::sync::Arc::new(without_remote::NoRemoteStorage));
}

#[cfg(not(feature = "remote"))]
mod without_remote {
    use std::sync::Arc;

    use arrowsmith::source::{
        ByteSource, ObjectSource, ObjectWrite, RemoteEntry, Storage, StorageOptions,
    };
    use arrowsmith::{Error, Result};

    /// The storage of a CLI built without object storage.
    pub(crate) struct NoRemoteStorage;

    fn refused<T>(url: &str) -> Result<T> {
        Err(Error::unsupported(
            "this arrowsmith was built without remote storage (the `remote` feature), so it \
             reads and writes local paths only; build it with its default features \
             (cargo install --path cli) or with --features remote",
        )
        .with_file(url))
    }

    impl Storage for NoRemoteStorage {
        fn open_file(&self, url: &str, _: &StorageOptions) -> Result<Arc<dyn ByteSource>> {
            refused(url)
        }
        fn open_dir(&self, url: &str, _: &StorageOptions) -> Result<Arc<dyn ObjectSource>> {
            refused(url)
        }
        fn stat(&self, url: &str, _: &StorageOptions) -> Result<RemoteEntry> {
            refused(url)
        }
        fn create_file(&self, url: &str, _: &StorageOptions) -> Result<Box<dyn ObjectWrite>> {
            refused(url)
        }
        fn delete(&self, url: &str, _: &StorageOptions) -> Result<()> {
            refused(url)
        }
    }
}

use super::settings::Settings;

/// The storage settings of a command that reads or writes URLs.
#[derive(Debug, Args, Clone, Default)]
pub(crate) struct StorageArgs {
    /// A setting of the object store a URL is read or written through, as object_store's key:
    /// aws_region=eu-west-1, aws_endpoint_url=http://…, google_service_account=…,
    /// azure_storage_account_name=…, timeout=30s (repeatable; over the AWS_*, GOOGLE_* and
    /// AZURE_* environment). Its value is never shown
    #[arg(long = "storage-option", value_name = "KEY=VALUE", value_parser = StorageOption::parse)]
    pub(crate) storage_options: Vec<StorageOption>,
}

impl StorageArgs {
    /// Adds each `KEY=VALUE` to `settings`; a key that is no storage key of the core's table,
    /// or an option without `=`, is a usage error naming the key only.
    pub(crate) fn settings(&self, settings: &mut Settings) -> arrowsmith::Result<()> {
        for option in &self.storage_options {
            let Some((key, value)) = option.0.split_once('=') else {
                return Err(Error::invalid_argument(
                    "--storage-option takes KEY=VALUE (as aws_region=eu-west-1), \
                     and this one has no '='",
                ));
            };
            let key = key.trim();
            if !is_storage_key(key) {
                return Err(Error::invalid_argument(format!(
                    "--storage-option {key}=…: {key:?} is no setting of remote storage; \
                     give object_store's keys (aws_*, google_*, azure_*, or an HTTP client key \
                     such as timeout), and format settings as their own flags"
                )));
            }
            settings.value(key, Some(value));
        }
        Ok(())
    }
}

/// One `KEY=VALUE` as given; its `Debug` shows the key only.
#[derive(Clone)]
pub(crate) struct StorageOption(String);

impl StorageOption {
    /// Never fails: clap would print the whole text, value and all, in its error; the text is
    /// checked by [`StorageArgs::settings`] instead.
    fn parse(text: &str) -> Result<StorageOption, String> {
        Ok(StorageOption(text.to_owned()))
    }
}

impl fmt::Debug for StorageOption {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let key = self.0.split_once('=').map_or("?", |(key, _)| key);
        write!(f, "StorageOption({key}=…)")
    }
}
