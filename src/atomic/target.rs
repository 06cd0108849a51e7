//! What may stand at a target before a write: the one overwrite rule of every writer.

use std::io;
use std::path::Path;

use crate::error::{Error, ErrorClass, Result};

/// What a writer may replace at its target when asked to overwrite.
#[derive(Debug, Clone, Copy)]
pub enum Replaceable {
    /// A single file: a regular file, or a symbolic link (then the link is replaced by the new
    /// file, and what it points to is left as it was).
    File,
    /// A directory dataset of one format (never a symbolic link to one).
    Dataset(DatasetKind),
}

/// How a directory format's datasets are recognised, and what errors call them.
#[derive(Debug, Clone, Copy)]
pub struct DatasetKind {
    /// What errors call a dataset: "bcolz dataset".
    pub what: &'static str,
    /// What marks one, for errors: "__rootdirs__ or meta/sizes".
    pub marker: &'static str,
    /// Whether a directory is a dataset of the format.
    pub is_dataset: fn(&Path) -> bool,
}

/// What an output path holds before a write, as [`check_target`] found it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Existing {
    /// Nothing: the output will be new.
    Nothing,
    /// An output of the format, which the write replaces (overwrite was asked for).
    Output,
    /// A character device, FIFO or socket (`/dev/null`, a named pipe), possibly through a
    /// symbolic link: only a streaming format writes to one, straight through; nothing is
    /// renamed over it.
    Stream,
}

/// The one rule for an existing output path, for every format: it is replaced only when
/// `overwrite` is set, and only if it is an output of the format (`replaceable`); anything
/// else is refused, untouched. A device, FIFO or socket is reported as [`Existing::Stream`]
/// for the caller to write into or refuse ([`refuse_stream`]).
pub fn check_target(target: &Path, replaceable: Replaceable, overwrite: bool) -> Result<Existing> {
    let meta = match std::fs::symlink_metadata(target) {
        Ok(meta) => meta,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Existing::Nothing),
        Err(e) => return Err(Error::from(e).with_file(target)),
    };
    let followed = if meta.file_type().is_symlink() {
        std::fs::metadata(target).ok()
    } else {
        Some(meta.clone())
    };
    if followed.as_ref().and_then(stream_kind).is_some() {
        return Ok(Existing::Stream);
    }
    let refused = |what: String| {
        Error::new(
            ErrorClass::Io,
            format!(
                "the output exists and is {what}; arrowsmith replaces only an output it could                  have written; remove it or choose another path"
            ),
        )
        .with_file(target)
    };
    match replaceable {
        Replaceable::File if meta.is_file() || meta.file_type().is_symlink() => {}
        Replaceable::File if meta.is_dir() => {
            return Err(refused("a directory, not a file".into()))
        }
        Replaceable::File => return Err(refused("not a regular file".into())),
        Replaceable::Dataset(kind) if meta.is_dir() && (kind.is_dataset)(target) => {}
        Replaceable::Dataset(kind) => {
            return Err(refused(format!(
                "not a {} (a directory with {})",
                kind.what, kind.marker
            )))
        }
    }
    if !overwrite {
        return Err(Error::invalid_argument(
            "the output already exists; set the overwrite option to replace it",
        )
        .with_setting("overwrite")
        .with_file(target));
    }
    Ok(Existing::Output)
}

/// What kind of stream a file is, if it is a character device, FIFO or socket.
fn stream_kind(meta: &std::fs::Metadata) -> Option<&'static str> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        let kind = meta.file_type();
        if kind.is_char_device() {
            return Some("a character device");
        }
        if kind.is_fifo() {
            return Some("a FIFO");
        }
        if kind.is_socket() {
            return Some("a socket");
        }
    }
    let _ = meta;
    None
}

/// The error for a device, FIFO or socket as the output of `format`, which is written to a
/// new file renamed into place: the rename would replace the device itself.
pub fn refuse_stream(target: &Path, format: &str) -> Error {
    let what = std::fs::metadata(target)
        .ok()
        .as_ref()
        .and_then(stream_kind)
        .unwrap_or("not a regular file");
    Error::new(
        ErrorClass::Io,
        format!(
            "the output is {what}; {format} output is written to a new file and renamed into              place, never into a device or pipe; only arrows, csv and ndjson are written              straight into one; give a file name"
        ),
    )
    .with_file(target)
}
