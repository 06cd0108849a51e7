//! Where an input or output is: a local path, or a URL (`scheme://…`) read and written
//! through remote storage. A leaf of the crate: errors name URLs by these rules too.

use std::path::{Path, PathBuf};

/// The scheme of `path` when it is a URL (`scheme://…`), lower-cased.
fn scheme(path: &Path) -> Option<String> {
    let text = path.to_str()?;
    let (scheme, _) = text.split_once("://")?;
    let mut chars = scheme.chars();
    let valid = chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
    valid.then(|| scheme.to_ascii_lowercase())
}

/// Whether `path` is a remote URL (any `scheme://` but `file://`), read through [`Storage`](crate::source::Storage).
pub fn is_url(path: impl AsRef<Path>) -> bool {
    scheme(path.as_ref()).is_some_and(|s| s != "file")
}

/// The local path of a `file://` URL; `path` itself when it is not a URL.
pub fn local_path(path: &Path) -> PathBuf {
    match (scheme(path).as_deref(), path.to_str()) {
        (Some("file"), Some(text)) => PathBuf::from(&text["file://".len()..]),
        _ => path.to_path_buf(),
    }
}

/// `path` as messages show it: a URL without its user, password, query or fragment (which
/// may hold credentials, such as a signed URL's signature); anything else as it is.
pub fn shown_url(path: &Path) -> PathBuf {
    let Some(text) = path.to_str().filter(|_| scheme(path).is_some()) else {
        return path.to_path_buf();
    };
    let (scheme, rest) = text.split_once("://").unwrap_or(("", text));
    let rest = rest.split(['?', '#']).next().unwrap_or_default();
    let authority_end = rest.find('/').unwrap_or(rest.len());
    let rest = match rest[..authority_end].rfind('@') {
        // An Azure abfss:// URL names its container before the @: that is no credential; an
        // HTTP URL's user may be a token.
        Some(at) if scheme.starts_with("http") || rest[..at].contains(':') => &rest[at + 1..],
        _ => rest,
    };
    PathBuf::from(format!("{scheme}://{rest}"))
}
