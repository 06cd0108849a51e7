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

/// `path` as messages show it: a URL without its query or fragment (a signed URL's signature,
/// an Azure SAS token) and without its userinfo when that may be a credential: all of it for
/// `http(s)` (a user may be a token), and user and password both where it has a password.
/// The `container@account` of an `abfss://` URL is no credential and stays. Anything else (a
/// local path, which may hold `?`, `#` or `@`) is shown as it is.
pub fn shown_url(path: &Path) -> PathBuf {
    let (Some(scheme_name), Some(text)) = (scheme(path), path.to_str()) else {
        return path.to_path_buf();
    };
    let (scheme, rest) = text.split_once("://").unwrap_or(("", text));
    let rest = rest.split(['?', '#']).next().unwrap_or_default();
    let authority_end = rest.find('/').unwrap_or(rest.len());
    let web = matches!(scheme_name.as_str(), "http" | "https");
    let rest = match rest[..authority_end].rfind('@') {
        Some(at) if web || rest[..at].contains(':') => &rest[at + 1..],
        _ => rest,
    };
    PathBuf::from(format!("{scheme}://{rest}"))
}

/// `text` (a message) with every URL in it shown as [`shown_url`] shows one: a message may
/// name a URL as the user gave it, or quote a library's message that does. A URL ends at
/// white space or a quote, bracket or comma; a `:` after it (`…/k.jay?sig=…: no object`) stays.
pub fn urls_shown(text: &str) -> String {
    let is_scheme_char = |c: char| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.');
    let ends_url = |c: char| c.is_whitespace() || matches!(c, '"' | '\'' | ')' | '<' | '>' | ',');
    let mut shown = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("://") {
        let start = rest[..at]
            .rfind(|c: char| !is_scheme_char(c))
            .map_or(0, |i| i + 1);
        let end = rest[at..].find(ends_url).map_or(rest.len(), |i| at + i);
        let (url, colon) = match rest[start..end].strip_suffix(':') {
            Some(url) => (url, ":"),
            None => (&rest[start..end], ""),
        };
        shown.push_str(&rest[..start]);
        shown.push_str(&shown_url(Path::new(url)).to_string_lossy());
        shown.push_str(colon);
        rest = &rest[end..];
    }
    shown.push_str(rest);
    shown
}
