//! Inputs that are not regular files or directories: standard input (`-`), FIFOs, character
//! devices and sockets. Such an input can be opened only once and read only front to back, so
//! it is opened once, its first bytes are looked at to recognise its format and then read again
//! by the format's reader, and only the formats that read front to back take it: the Arrow IPC
//! stream, CSV and NDJSON (those [`Format::streams`]). The others fail before reading with an
//! error naming the input and the format.

use std::fs::File;
use std::io::{self, Cursor, Read};
use std::path::{Path, PathBuf};

use crate::ecosystem::ipc::STDIN_NAME;
use crate::error::{Error, Result};
use crate::format::{detect_magic, is_stdin, Format};

/// Bytes looked at to recognise a stream's format (as many as [`detect_magic`] reads).
const MAGIC_BYTES: usize = 8;

/// Whether `path` is read as a stream: `-` (standard input), or an existing path that is
/// neither a regular file nor a directory (a FIFO, a character device, a socket). Looking
/// does not open it.
pub fn is_stream(path: &Path) -> bool {
    is_stdin(path) || stream_kind(path).is_some()
}

/// What kind of non-regular file `path` is, as errors name it; `None` for a regular file, a
/// directory, or a path that cannot be looked at (opening it reports why).
fn stream_kind(path: &Path) -> Option<&'static str> {
    let file_type = std::fs::metadata(path).ok()?.file_type();
    if file_type.is_file() || file_type.is_dir() {
        return None;
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if file_type.is_fifo() {
            return Some("a FIFO");
        }
        if file_type.is_char_device() {
            return Some("a character device");
        }
        if file_type.is_block_device() {
            return Some("a block device");
        }
        if file_type.is_socket() {
            return Some("a socket");
        }
    }
    Some("not a regular file")
}

/// The name errors give a stream input (`<stdin>` for `-`), and what kind of input it is.
fn name_and_kind(path: &Path) -> (&Path, &'static str) {
    if is_stdin(path) {
        (Path::new(STDIN_NAME), "standard input")
    } else {
        (path, stream_kind(path).unwrap_or("not a regular file"))
    }
}

/// A stream input, opened once. Its first bytes, read to recognise its format, are kept and
/// handed back first to whoever reads it ([`StreamInput::into_reader`]).
pub struct StreamInput {
    name: PathBuf,
    kind: &'static str,
    head: Vec<u8>,
    rest: Box<dyn Read + Send>,
}

impl StreamInput {
    /// Opens `path` (`-`: standard input) and reads its first bytes. A FIFO's open waits for
    /// its writer, as any reader of a FIFO does.
    pub fn open(path: &Path) -> Result<StreamInput> {
        let (name, kind) = name_and_kind(path);
        let name = name.to_path_buf();
        let mut rest: Box<dyn Read + Send> = if is_stdin(path) {
            Box::new(io::stdin())
        } else {
            Box::new(File::open(path).map_err(|e| Error::from(e).with_file(path))?)
        };
        let mut head = Vec::with_capacity(MAGIC_BYTES);
        (&mut rest)
            .take(MAGIC_BYTES as u64)
            .read_to_end(&mut head)
            .map_err(|e| Error::from(e).with_file(&name))?;
        Ok(StreamInput {
            name,
            kind,
            head,
            rest,
        })
    }

    /// Opens `path` as [`open`](StreamInput::open) does and recognises its format as
    /// [`format`](StreamInput::format) does; a `named` format that is not read front to back
    /// is refused before the input is opened (a FIFO's open would wait for its writer).
    pub fn open_as(path: &Path, named: Option<Format>) -> Result<(StreamInput, Format)> {
        if let Some(format) = named.filter(|f| !f.streams()) {
            let (name, kind) = name_and_kind(path);
            return Err(needs_a_file(name, kind, format));
        }
        let input = StreamInput::open(path)?;
        let format = input.format(named)?;
        Ok((input, format))
    }

    /// The name errors give the input: its path, or `<stdin>`.
    pub fn name(&self) -> &Path {
        &self.name
    }

    /// The input's format: `named` if given, else recognised by its first bytes, else by its
    /// name's extension; standard input with neither is an Arrow IPC stream. A format that is
    /// not read front to back is an error naming the input.
    pub fn format(&self, named: Option<Format>) -> Result<Format> {
        let format = match named.or_else(|| detect_magic(&self.head)) {
            Some(format) => format,
            None if self.kind == "standard input" => Format::ArrowStream,
            None => Format::from_extension(&self.name).ok_or_else(|| {
                Error::invalid_argument(
                    "cannot tell the format from the content or the extension; name it with the format option",
                )
                .with_setting("format")
                .with_setting_kind(crate::error::SettingKind::Read)
                .with_file(&self.name)
            })?,
        };
        if !format.streams() {
            return Err(needs_a_file(&self.name, self.kind, format));
        }
        Ok(format)
    }

    /// The whole input from its first byte.
    pub fn into_reader(self) -> Box<dyn Read + Send> {
        Box::new(Cursor::new(self.head).chain(self.rest))
    }
}

/// The error for a format whose reader needs a regular file (or a directory).
fn needs_a_file(name: &Path, kind: &str, format: Format) -> Error {
    let what = if format.is_directory() {
        "a directory"
    } else {
        "a regular file it can seek in"
    };
    Error::invalid_argument(format!(
        "{} input is read from {what}, and this is {kind}, which can only be read once front \
         to back; save it to a file first (arrows, csv and ndjson are read from a stream)",
        format.name(),
    ))
    .with_file(name)
}

/// Refuses a stream input for a command that reads its input more than once (`what`, e.g.
/// "inspect"), before opening it.
pub fn refuse_stream(path: &Path, what: &str) -> Result<()> {
    if !is_stream(path) {
        return Ok(());
    }
    let (name, kind) = name_and_kind(path);
    Err(Error::invalid_argument(format!(
        "{what} reads a file, and this is {kind}, which can only be read once front to back; \
         save it to a file first, or convert it or show its first rows with head"
    ))
    .with_file(name))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn regular_files_and_directories_are_not_streams() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("x.csv");
        std::fs::write(&file, "a\n1\n").unwrap();
        assert!(!is_stream(&file));
        assert!(!is_stream(dir.path()));
        assert!(!is_stream(&dir.path().join("missing")));
        assert!(is_stream(Path::new("-")));
        assert!(is_stream(Path::new("/dev/zero")));
    }

    #[test]
    fn the_bytes_read_to_recognise_a_stream_are_read_again() {
        let input = StreamInput::open(Path::new("/dev/zero")).unwrap();
        assert_eq!(input.head.len(), MAGIC_BYTES);
        let mut first = [1u8; 16];
        input.into_reader().read_exact(&mut first).unwrap();
        assert_eq!(first, [0u8; 16]);
    }

    #[test]
    fn formats_that_seek_are_refused_on_a_stream_naming_both() {
        let input = StreamInput::open(Path::new("/dev/zero")).unwrap();
        let error = input.format(Some(Format::Jay)).unwrap_err();
        let text = error.to_string();
        assert!(text.contains("/dev/zero") && text.contains("jay"), "{text}");
        assert!(text.contains("character device"), "{text}");
        assert_eq!(input.format(Some(Format::Csv)).unwrap(), Format::Csv);
    }
}
