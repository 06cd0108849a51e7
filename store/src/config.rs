//! From a URL and the settings to a store and a path in it: object_store's own URL parsing and
//! configuration keys, over the environment, with one store per bucket and settings.

use std::sync::Arc;
use std::time::Duration;

use arrowsmith::source::StorageOptions;
use arrowsmith::{Error, ErrorClass, Result};
use object_store::aws::{AmazonS3Builder, AmazonS3ConfigKey};
use object_store::azure::{AzureConfigKey, MicrosoftAzureBuilder};
use object_store::gcp::{GoogleCloudStorageBuilder, GoogleConfigKey};
use object_store::http::HttpBuilder;
use object_store::local::LocalFileSystem;
use object_store::path::Path;
use object_store::{ClientConfigKey, ObjectStore, ObjectStoreScheme, RetryConfig};
use url::Url;

use crate::redact::Redactor;
use crate::runtime::cached_store;

/// Settings of ours beside object_store's keys: how often and how long a failed request is
/// retried (object_store's `RetryConfig`, which has no configuration key of its own). The
/// names are those deltalake and Polars take.
const MAX_RETRIES: &str = "max_retries";
const RETRY_TIMEOUT: &str = "retry_timeout";

/// The schemes object_store recognises with the features this crate builds.
const KNOWN_SCHEMES: [&str; 10] = [
    "s3", "s3a", "gs", "az", "adl", "azure", "abfs", "abfss", "http", "https",
];

/// What a URL resolves to. Its `Debug` shows the URL only: a store's own `Debug` shows its
/// configuration, credentials included (object_store prints an Azure key's bytes).
#[derive(Clone)]
pub(crate) struct Target {
    pub(crate) store: Arc<dyn ObjectStore>,
    /// The object (or prefix) in the store.
    pub(crate) path: Path,
    /// The URL as messages name it: as given, without credentials.
    pub(crate) shown: String,
    pub(crate) redactor: Redactor,
    /// Whether the store can list and upload in parts (a plain HTTP server can do neither:
    /// a write there is one PUT at the end).
    pub(crate) listable: bool,
}

impl std::fmt::Debug for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Target").field("url", &self.shown).finish()
    }
}

/// Resolves `url` with `options`; an unknown key or a URL object_store does not recognise is
/// an error naming it.
pub(crate) fn resolve(url: &str, options: &StorageOptions) -> Result<Target> {
    let shown = arrowsmith::source::shown_url(std::path::Path::new(url))
        .to_string_lossy()
        .into_owned();
    let redactor = Redactor::new(options);
    let invalid = |message: String| {
        Error::new(ErrorClass::InvalidArgument, message).with_file(shown.as_str())
    };
    check_keys(options).map_err(|e| e.with_file(shown.as_str()))?;
    let parsed = Url::parse(url).map_err(|e| invalid(format!("this is not a valid URL ({e})")))?;
    let (scheme, path) = ObjectStoreScheme::parse(&parsed).map_err(|e| {
        if KNOWN_SCHEMES.contains(&parsed.scheme()) {
            let detail = redactor.clean(&e.to_string());
            invalid(format!(
                "the path of this URL is not a valid object key ({detail})"
            ))
        } else {
            invalid(format!(
                "the scheme {:?} is not one of {}",
                parsed.scheme(),
                KNOWN_SCHEMES.join(", ")
            ))
        }
    })?;
    let store_url = store_url(&parsed, &scheme);
    let mut key = format!("{store_url}\n");
    for (name, value) in options.iter() {
        key.push_str(&format!("{name}={value}\n"));
    }
    let store = cached_store(key, || build(&scheme, &store_url, options))
        .map_err(|e| configuration_error(e, &shown, &redactor))?;
    Ok(Target {
        store,
        path,
        listable: !matches!(scheme, ObjectStoreScheme::Http),
        shown,
        redactor,
    })
}

/// The part of `url` that names the store (scheme, userinfo, host, and the bucket where an
/// `https` URL of a cloud carries it in its path): one store serves every object under it.
fn store_url(url: &Url, scheme: &ObjectStoreScheme) -> String {
    let base = &url[..url::Position::BeforePath];
    match scheme {
        ObjectStoreScheme::AmazonS3 | ObjectStoreScheme::MicrosoftAzure
            if matches!(url.scheme(), "http" | "https") =>
        {
            let bucket = url.path_segments().and_then(|mut s| s.next()).unwrap_or("");
            format!("{base}/{bucket}")
        }
        _ => base.to_string(),
    }
}

/// Every key must be one some store knows, or one of ours; each store takes the keys it
/// knows, so that one set of settings serves a copy from S3 to Azure.
fn check_keys(options: &StorageOptions) -> Result<()> {
    for (key, value) in options.iter() {
        let known = key.parse::<AmazonS3ConfigKey>().is_ok()
            || key.parse::<GoogleConfigKey>().is_ok()
            || key.parse::<AzureConfigKey>().is_ok()
            || key.parse::<ClientConfigKey>().is_ok()
            || key == MAX_RETRIES
            || key == RETRY_TIMEOUT;
        if !known {
            return Err(Error::invalid_argument(format!(
                "the storage option {key:?} is not a key any object store knows; the keys are \
                 object_store's own (aws_…, google_…, azure_… and client keys such as \
                 allow_http and timeout), see docs/object-storage.md"
            )));
        }
        let number = |text: &str| text.parse::<usize>().is_ok();
        let duration = |text: &str| humantime::parse_duration(text).is_ok();
        let (ok, expected) = match key {
            MAX_RETRIES => (number(value), "a number of retries, such as 3"),
            RETRY_TIMEOUT => (duration(value), "a duration, such as 30s"),
            _ => (true, ""),
        };
        if !ok {
            return Err(Error::invalid_argument(format!(
                "the storage option {key:?} is {value:?}; expected {expected}"
            )));
        }
    }
    Ok(())
}

/// The retry settings, when either of ours is set.
fn retry_config(options: &StorageOptions) -> Option<RetryConfig> {
    let max_retries = options.get(MAX_RETRIES).and_then(|v| v.parse().ok());
    let timeout = options
        .get(RETRY_TIMEOUT)
        .and_then(|v| humantime::parse_duration(v).ok());
    if max_retries.is_none() && timeout.is_none() {
        return None;
    }
    let default = RetryConfig::default();
    Some(RetryConfig {
        max_retries: max_retries.unwrap_or(default.max_retries),
        retry_timeout: timeout.unwrap_or(default.retry_timeout),
        backoff: object_store::BackoffConfig {
            init_backoff: Duration::from_millis(100),
            ..default.backoff
        },
    })
}

/// The keys of `options` that `K` parses (one store's keys), with their values.
fn keys_of<K: std::str::FromStr>(options: &StorageOptions) -> impl Iterator<Item = (K, &str)> {
    options
        .iter()
        .filter_map(|(key, value)| Some((key.parse::<K>().ok()?, value)))
}

/// Builds the store of `scheme` for `store_url`: the environment first, the options over it,
/// and the URL over both (object_store's order).
fn build(
    scheme: &ObjectStoreScheme,
    store_url: &str,
    options: &StorageOptions,
) -> Result<Arc<dyn ObjectStore>> {
    let retry = retry_config(options);
    let built: object_store::Result<Arc<dyn ObjectStore>> = match scheme {
        ObjectStoreScheme::Local => Ok(Arc::new(LocalFileSystem::new())),
        ObjectStoreScheme::AmazonS3 => {
            let mut builder = AmazonS3Builder::from_env().with_url(store_url);
            for (key, value) in keys_of::<AmazonS3ConfigKey>(options) {
                builder = builder.with_config(key, value);
            }
            if let Some(retry) = retry {
                builder = builder.with_retry(retry);
            }
            builder.build().map(|s| Arc::new(s) as _)
        }
        ObjectStoreScheme::GoogleCloudStorage => {
            let mut builder = GoogleCloudStorageBuilder::from_env().with_url(store_url);
            for (key, value) in keys_of::<GoogleConfigKey>(options) {
                builder = builder.with_config(key, value);
            }
            if let Some(retry) = retry {
                builder = builder.with_retry(retry);
            }
            builder.build().map(|s| Arc::new(s) as _)
        }
        ObjectStoreScheme::MicrosoftAzure => {
            let mut builder = MicrosoftAzureBuilder::from_env().with_url(store_url);
            for (key, value) in keys_of::<AzureConfigKey>(options) {
                builder = builder.with_config(key, value);
            }
            if let Some(retry) = retry {
                builder = builder.with_retry(retry);
            }
            builder.build().map(|s| Arc::new(s) as _)
        }
        ObjectStoreScheme::Http => {
            let mut builder = HttpBuilder::new().with_url(store_url);
            for (key, value) in keys_of::<ClientConfigKey>(options) {
                builder = builder.with_config(key, value);
            }
            if let Some(retry) = retry {
                builder = builder.with_retry(retry);
            }
            builder.build().map(|s| Arc::new(s) as _)
        }
        other => {
            return Err(Error::new(
                ErrorClass::InvalidArgument,
                format!("{other:?} URLs are not remote storage"),
            ))
        }
    };
    built.map_err(|e| {
        Error::new(
            ErrorClass::InvalidArgument,
            "the storage settings do not make a store",
        )
        .with_source(e)
    })
}

/// A build error, with its object_store text cleaned of credentials.
fn configuration_error(error: Error, shown: &str, redactor: &Redactor) -> Error {
    let detail = error
        .cause()
        .map(|cause| redactor.clean(&cause.to_string()));
    let message = match detail {
        Some(detail) => format!("{}: {detail}", error.message()),
        None => error.message().to_string(),
    };
    Error::new(error.class(), message).with_file(shown)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECRET: &str = "very-secret-value-42";

    fn error(url: &str, options: &StorageOptions) -> Error {
        resolve(url, options).unwrap_err()
    }

    #[test]
    fn bad_urls_and_settings_are_errors_naming_what_is_wrong() {
        let none = StorageOptions::default();
        let bad_scheme = error("ftp://host/file.jay", &none);
        assert!(bad_scheme
            .to_string()
            .starts_with("ftp://host/file.jay: the scheme \"ftp\""));
        let bad_path = error("s3://bucket/a//b.jay", &none);
        assert!(
            bad_path.to_string().contains("not a valid object key"),
            "{bad_path}"
        );
        let not_url = error("s3:/nohost", &none);
        assert_eq!(not_url.class(), ErrorClass::InvalidArgument);

        let mut options = StorageOptions::default();
        options.set("max_retries", "many");
        let retries = error("s3://bucket/k", &options);
        assert!(
            retries.to_string().contains("\"max_retries\" is \"many\""),
            "{retries}"
        );
        let mut options = StorageOptions::default();
        options.set("retry_timeout", "soon");
        assert!(error("s3://bucket/k", &options)
            .to_string()
            .contains("a duration"));
    }

    #[test]
    fn a_store_that_cannot_be_built_says_why_without_the_secret() {
        let mut options = StorageOptions::default();
        options.set("azure_storage_account_key", SECRET);
        options.set("azure_storage_account_name", "account");
        options.set("azure_storage_endpoint", &format!("not a url {SECRET}"));
        let failed = error("az://container/key", &options);
        assert_eq!(failed.class(), ErrorClass::InvalidArgument);
        assert!(
            failed.to_string().starts_with("az://container/key: "),
            "{failed}"
        );
        assert!(!failed.to_string().contains(SECRET), "{failed}");
        assert!(!format!("{failed:?}").contains(SECRET), "{failed:?}");
    }

    #[test]
    fn keys_of_every_store_are_accepted_and_stores_are_shared() {
        let mut options = StorageOptions::default();
        for key in [
            "aws_region",
            "region",
            "google_service_account",
            "azure_storage_account_name",
            "allow_http",
            "timeout",
            "max_retries",
        ] {
            options.set(key, if key == "max_retries" { "2" } else { "x" });
        }
        options.set("allow_http", "true");
        options.set("timeout", "5s");
        let first = resolve("s3://bucket/a.jay", &options).unwrap();
        let second = resolve("s3://bucket/b/c.jay", &options).unwrap();
        assert!(Arc::ptr_eq(&first.store, &second.store));
        assert_eq!(second.path.as_ref(), "b/c.jay");
        let other_bucket = resolve("s3://other/a.jay", &options).unwrap();
        assert!(!Arc::ptr_eq(&first.store, &other_bucket.store));
        let local = resolve("file:///tmp/x.jay", &StorageOptions::default()).unwrap();
        assert_eq!(local.path.as_ref(), "tmp/x.jay");
    }
}
