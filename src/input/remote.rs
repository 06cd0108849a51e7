//! Where an input's bytes are: a local path, or a URL read through the registered
//! [`Storage`](crate::source::Storage). A URL naming an object opens as a [`ByteSource`], one
//! naming a prefix (a bcolz or Filo dataset's root) as an [`ObjectSource`]; a `file://` URL is
//! its local path. The object's size and version are what its fragments carry, so that a read
//! of a fragment finds an object changed since the listing.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::error::{Error, ErrorClass, Result};
use crate::format::{detect_magic, undetected, Format, MAGIC_LEN};
use crate::fragment::ObjectVersion;
use crate::source::{
    is_url, local_path, registered_storage, ByteSource, ObjectSource, Prefetched, RemoteOpened,
    StorageOptions,
};

/// Where an input's bytes are.
#[derive(Clone)]
pub(crate) enum Origin {
    /// A local file or directory, opened by the format's own path entry point (a memory map).
    Local(PathBuf),
    /// A remote object.
    Object(Arc<dyn ByteSource>),
    /// A remote prefix: a directory format's root.
    Prefix(Arc<dyn ObjectSource>),
}

impl Origin {
    /// Finds what `path` names: a local path (a `file://` URL's too), or, for a URL, what the
    /// registered storage opens there ([`Storage::open_entry`](crate::source::Storage): the
    /// object, else the prefix).
    pub(crate) fn resolve(path: &Path, storage: &StorageOptions) -> Result<Origin> {
        let Some(url) = path.to_str().filter(|_| is_url(path)) else {
            return Ok(Origin::Local(local_path(path)));
        };
        match registered_storage(url)?.open_entry(url, storage)? {
            RemoteOpened::Object(object) => Ok(Origin::Object(object)),
            RemoteOpened::Prefix(objects) => Ok(Origin::Prefix(objects)),
        }
    }

    /// Whether the bytes are remote.
    pub(crate) fn is_remote(&self) -> bool {
        !matches!(self, Origin::Local(_))
    }

    /// The format its content and name say. A remote object is known by its name's extension
    /// when that names a format, so recognising it costs no request; otherwise by its first
    /// bytes, fetched with its last in the one request its reader opens with
    /// ([`Prefetched`]), which then serves the reader's first reads.
    pub(crate) fn detect(&mut self) -> Result<Format> {
        match self {
            Origin::Local(path) => Format::detect(path),
            Origin::Object(source) => {
                let name = Path::new(source.location());
                if let Some(format) = Format::from_extension(name) {
                    return Ok(format);
                }
                let fetched =
                    Prefetched::fetch(Arc::clone(source)).map_err(|e| e.with_file(name))?;
                let format = detect_magic(fetched.head(MAGIC_LEN)).ok_or_else(|| undetected(name));
                *source = Arc::new(fetched);
                format
            }
            Origin::Prefix(objects) => Format::detect_objects(objects.as_ref()),
        }
    }

    /// The size and version of the remote object read; `None` for a local path and a prefix.
    pub(crate) fn object_version(&self) -> Option<ObjectVersion> {
        match self {
            Origin::Object(source) => Some(ObjectVersion {
                size: source.size(),
                version: source.version().map(str::to_owned),
            }),
            _ => None,
        }
    }

    /// The error for a format that `self` is not the shape of: a single-file format at a
    /// prefix, a directory format at an object.
    pub(crate) fn wrong_shape(&self, format: Format) -> Error {
        let (found, expected) = match self {
            Origin::Prefix(_) => ("a prefix (objects under it, as a directory)", "one object"),
            _ => ("one object", "a prefix holding the dataset's objects"),
        };
        Error::invalid_argument(format!(
            "the URL names {found}, but {format} input is {expected}; \
             check the URL, or name the format with the format option"
        ))
    }
}

/// Checks that the object `origin` opened is the one a fragment was listed from: the same
/// size and version. An object replaced since the listing is an error, never rows of two
/// versions.
pub(crate) fn check_unchanged(
    origin: &Origin,
    listed: Option<&ObjectVersion>,
    location: &Path,
) -> Result<()> {
    let Some(listed) = listed else {
        return Ok(());
    };
    let now = origin.object_version();
    if now.as_ref() == Some(listed) {
        return Ok(());
    }
    Err(changed(listed, now.as_ref()).with_file(location))
}

/// The error for an object found at `now` (`None`: no longer an object) that a fragment
/// listed at `listed`.
pub(crate) fn changed(listed: &ObjectVersion, now: Option<&ObjectVersion>) -> Error {
    let now = now.map_or_else(|| "no longer an object".to_owned(), ObjectVersion::describe);
    Error::new(
        ErrorClass::Io,
        format!(
            "the object changed since its fragments were listed (listed: {}; now: {now}); \
             list them again",
            listed.describe()
        ),
    )
}
