//! object_store's errors as the core's: a class, a message in the project's style, the URL as
//! the user gave it, and object_store's own text (cleaned of credentials) as the cause, with
//! the `std::io::ErrorKind` it implies so that `Error::io_kind` works as for a local file.

use std::io::ErrorKind;

use arrowsmith::{Error, ErrorClass};

use crate::config::Target;

/// What went wrong, as far as the caller can act on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Failure {
    /// No object there.
    NotFound,
    /// No bucket or container there.
    NoBucket,
    /// The object is not the version that was opened.
    Changed,
    /// The credentials were refused.
    Denied,
    /// Anything else: the network, the server.
    Other,
}

/// Classifies an object_store error.
pub(crate) fn failure(error: &object_store::Error) -> Failure {
    use object_store::Error as E;
    let text = error.to_string();
    if text.contains("NoSuchBucket") || text.contains("ContainerNotFound") {
        return Failure::NoBucket;
    }
    match error {
        E::NotFound { .. } => Failure::NotFound,
        E::Precondition { .. } => Failure::Changed,
        E::PermissionDenied { .. } | E::Unauthenticated { .. } => Failure::Denied,
        _ => Failure::Other,
    }
}

/// The message that says `what` failed at `target` because of `error`.
pub(crate) fn remote_error(target: &Target, what: &str, error: &object_store::Error) -> Error {
    let (kind, message) = match failure(error) {
        Failure::NotFound => (
            ErrorKind::NotFound,
            format!("could not {what}: there is no object at this URL"),
        ),
        Failure::NoBucket => (
            ErrorKind::NotFound,
            format!("could not {what}: the bucket (or container) does not exist"),
        ),
        Failure::Changed => return changed_error(target),
        Failure::Denied => (
            ErrorKind::PermissionDenied,
            format!(
                "could not {what}: the server refused the credentials; check the storage \
                 options and the environment (AWS_*, GOOGLE_*, AZURE_*)"
            ),
        ),
        Failure::Other => (ErrorKind::Other, format!("could not {what}")),
    };
    let detail = one_line(&target.redactor.clean(&error.to_string()));
    Error::new(ErrorClass::Io, message)
        .with_file(target.shown.as_str())
        .with_source(std::io::Error::new(kind, detail))
}

/// object_store's text on one line (a server's XML answer spans several), without the
/// separator it leaves after an empty answer.
fn one_line(text: &str) -> String {
    let joined = text.split_whitespace().collect::<Vec<_>>().join(" ");
    joined.trim_end_matches([':', ' ']).to_string()
}

/// The object was replaced since it was opened: reading on would mix two versions.
pub(crate) fn changed_error(target: &Target) -> Error {
    Error::new(
        ErrorClass::Io,
        "the object changed since it was opened (its ETag differs); read it again",
    )
    .with_file(target.shown.as_str())
    .with_source(std::io::Error::other(
        "the object changed since it was opened",
    ))
}

/// An error that is ours, not the server's: a short answer, an upload already failed.
pub(crate) fn local_error(target: &Target, message: impl Into<String>) -> Error {
    Error::new(ErrorClass::Io, message).with_file(target.shown.as_str())
}

/// The error of a HEAD that failed. A HEAD answer has no body, so a missing bucket looks like
/// a missing object: on "not found", one listing under the key tells them apart.
pub(crate) fn head_error(target: &Target, what: &str, error: object_store::Error) -> Error {
    if failure(&error) != Failure::NotFound || !target.listable {
        return remote_error(target, what, &error);
    }
    let store = target.store.clone();
    let path = target.path.clone();
    let listed = crate::runtime::run(async move {
        use futures_util::StreamExt;
        store.list(Some(&path)).next().await
    });
    match listed {
        Ok(Some(Err(list_error))) if failure(&list_error) == Failure::NoBucket => {
            remote_error(target, what, &list_error)
        }
        _ => remote_error(target, what, &error),
    }
}
