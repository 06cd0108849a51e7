//! The formats arrowsmith knows, their names on the command line, and how a path's format is
//! recognised: magic bytes first, then directory structure, then the file name's extension.

use std::fmt;
use std::io::Read;
use std::path::Path;
use std::str::FromStr;

use arrow_buffer::Buffer;

use crate::error::{Error, ErrorClass, Result};
use crate::source::{ByteSource, ObjectSource};

/// A format arrowsmith reads or writes (or knows of), by its command-line and `format`
/// setting name ([`Format::name`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(into = "&'static str", try_from = "String")]
pub enum Format {
    /// h2oai/datatable's `.jay`.
    Jay,
    /// HP Labs' DataSeries DSv1 `.ds`.
    DataSeries,
    /// A Filo set: a `NAME.filo/` directory of Filo vectors.
    Filo,
    /// One bare Filo vector; its element type comes from the `filo_type` option.
    FiloVector,
    /// torao/anthidium's vector-space data file `.vs`.
    Vs,
    /// A bcolz 1.x carray or ctable directory.
    Bcolz,
    /// Apache Parquet.
    Parquet,
    /// Arrow IPC file (Feather v2).
    Arrow,
    /// Arrow IPC stream.
    ArrowStream,
    /// CSV with a header row.
    Csv,
    /// Newline-delimited JSON.
    Ndjson,
}

/// Whether `path` names standard input or output (`-`): input is read as a stream (an Arrow
/// IPC stream unless another format is named); output is written as one of the formats that
/// stream (arrows, csv, ndjson).
pub fn is_stdin(path: &Path) -> bool {
    path == Path::new("-")
}

impl Format {
    /// Every format, in the order `arrowsmith formats` lists them.
    pub const ALL: [Format; 11] = [
        Format::Jay,
        Format::DataSeries,
        Format::Filo,
        Format::FiloVector,
        Format::Vs,
        Format::Bcolz,
        Format::Parquet,
        Format::Arrow,
        Format::ArrowStream,
        Format::Csv,
        Format::Ndjson,
    ];

    /// Whether the format is written and read front to back, so that it can go through a pipe
    /// (standard output, standard input, a FIFO): the Arrow IPC stream, CSV and NDJSON.
    pub fn streams(self) -> bool {
        matches!(self, Format::ArrowStream | Format::Csv | Format::Ndjson)
    }

    /// Whether a reader of the format can salvage a damaged input, skipping its damaged parts
    /// (see [`crate::salvage`]): the legacy formats whose files divide into such parts. A
    /// bare Filo vector is one part.
    pub fn salvages(self) -> bool {
        matches!(
            self,
            Format::Jay | Format::DataSeries | Format::Filo | Format::Vs | Format::Bcolz
        )
    }

    /// The name used on the command line (`--from`, `--to`).
    pub fn name(self) -> &'static str {
        match self {
            Format::Jay => "jay",
            Format::DataSeries => "dataseries",
            Format::Filo => "filo",
            Format::FiloVector => "filo-vector",
            Format::Vs => "vs",
            Format::Bcolz => "bcolz",
            Format::Parquet => "parquet",
            Format::Arrow => "arrow",
            Format::ArrowStream => "arrows",
            Format::Csv => "csv",
            Format::Ndjson => "ndjson",
        }
    }

    /// A one-line description, as `arrowsmith formats` shows it.
    pub fn description(self) -> &'static str {
        match self {
            Format::Jay => "h2oai/datatable Jay file",
            Format::DataSeries => "HP Labs DataSeries DSv1 file",
            Format::Filo => "Filo set directory (one Filo vector per column chunk)",
            Format::FiloVector => "one Filo binary vector (needs the filo_type option)",
            Format::Vs => "anthidium vector-space data file",
            Format::Bcolz => "bcolz 1.x carray/ctable directory",
            Format::Parquet => "Apache Parquet",
            Format::Arrow => "Arrow IPC file (Feather v2)",
            Format::ArrowStream => "Arrow IPC stream",
            Format::Csv => "CSV with a header row",
            Format::Ndjson => "newline-delimited JSON",
        }
    }

    /// File name extensions, without the dot; the first is the one to write.
    pub fn extensions(self) -> &'static [&'static str] {
        match self {
            Format::Jay => &["jay"],
            Format::DataSeries => &["ds"],
            Format::Filo => &["filo"],
            Format::FiloVector => &[],
            Format::Vs => &["vs"],
            Format::Bcolz => &["bcolz"],
            Format::Parquet => &["parquet"],
            Format::Arrow => &["arrow", "feather", "ipc"],
            Format::ArrowStream => &["arrows"],
            Format::Csv => &["csv"],
            Format::Ndjson => &["ndjson", "jsonl"],
        }
    }

    /// Whether the format is stored as a directory rather than a single file.
    pub fn is_directory(self) -> bool {
        matches!(self, Format::Filo | Format::Bcolz)
    }

    /// The format a file name's extension stands for, if any.
    pub fn from_extension(path: &Path) -> Option<Format> {
        let ext = path.extension()?.to_str()?.to_ascii_lowercase();
        Format::ALL
            .into_iter()
            .find(|f| f.extensions().contains(&ext.as_str()))
    }

    /// Recognises an existing input: magic bytes, then directory structure, then extension.
    /// An input that is not a regular file or directory is not read: `-` is an Arrow IPC
    /// stream, another one is known by its extension (see [`crate::StreamInput`]). A remote
    /// prefix is recognised by the same rules ([`Format::detect_objects`]); a remote object
    /// opened by URL is known by its extension first when that names a format (its reader then
    /// checks the magic), so that recognising it costs no request of its own.
    pub fn detect(path: &Path) -> Result<Format> {
        if is_stdin(path) {
            return Ok(Format::ArrowStream);
        }
        let metadata = std::fs::metadata(path).map_err(|e| Error::from(e).with_file(path))?;
        let detected = if metadata.is_dir() {
            Format::detect_dataset(|key| Ok(path.join(key).is_file()))?
        } else if !metadata.is_file() {
            // A FIFO, a device, a socket: reading its first bytes here would take them from
            // whoever reads it next; `StreamInput` recognises it from the bytes it keeps.
            None
        } else {
            let mut head = [0u8; MAGIC_LEN as usize];
            let n = read_prefix(path, &mut head).map_err(|e| Error::from(e).with_file(path))?;
            detect_magic(&head[..n])
        };
        detected
            .or_else(|| Format::from_extension(path))
            .ok_or_else(|| undetected(path))
    }

    /// Recognises the file `source` reads (a remote object) as [`Format::detect`] recognises
    /// a local file: its first bytes (one read of at most 8), then its name's extension.
    pub fn detect_source(source: &dyn ByteSource) -> Result<Format> {
        let name = Path::new(source.location());
        let head = match source.size().min(MAGIC_LEN) {
            0 => Buffer::from_vec(Vec::<u8>::new()),
            len => source.read_range(0..len).map_err(|e| e.with_file(name))?,
        };
        detect_magic(head.as_slice())
            .or_else(|| Format::from_extension(name))
            .ok_or_else(|| undetected(name))
    }

    /// Recognises the directory `objects` holds (a remote prefix) as [`Format::detect`]
    /// recognises a local directory: by the objects that mark a dataset
    /// ([`Format::dataset_markers`]), then its name's extension.
    pub fn detect_objects(objects: &dyn ObjectSource) -> Result<Format> {
        let name = Path::new(objects.location());
        Format::detect_dataset(|key| Ok(objects.open(key)?.is_some()))
            .map_err(|e| e.with_file(name))?
            .or_else(|| Format::from_extension(name))
            .ok_or_else(|| undetected(name))
    }

    /// The keys, relative to a dataset's root, whose presence makes a directory (or a prefix)
    /// a dataset of a directory format: bcolz's `__rootdirs__` (a ctable) or `meta/sizes` (a
    /// carray), a Filo set's `schema.json`; none for a single-file format. A writer to object
    /// storage puts these last, so that a reader never finds a dataset half written.
    pub fn dataset_markers(self) -> &'static [&'static str] {
        match self {
            Format::Bcolz => &["__rootdirs__", "meta/sizes"],
            Format::Filo => &["schema.json"],
            _ => &[],
        }
    }

    /// The directory format whose marker `exists` says a directory holds, if any.
    fn detect_dataset(mut exists: impl FnMut(&str) -> Result<bool>) -> Result<Option<Format>> {
        for format in [Format::Bcolz, Format::Filo] {
            for key in format.dataset_markers() {
                if exists(key)? {
                    return Ok(Some(format));
                }
            }
        }
        Ok(None)
    }

    /// The format of an output path: by extension only, since the file does not exist yet.
    pub fn for_output(path: &Path) -> Result<Format> {
        Format::from_extension(path).ok_or_else(|| {
            Error::invalid_argument(
                "cannot tell the output format from the extension; name it with the format option",
            )
            .with_setting("format")
            .with_setting_kind(crate::error::SettingKind::Write)
            .with_file(path)
        })
    }
}

/// The bytes of a file's start that say its format (see [`detect_magic`]).
pub(crate) const MAGIC_LEN: u64 = 8;

/// The error for an input whose format neither its content nor its name tells.
pub(crate) fn undetected(path: &Path) -> Error {
    Error::invalid_argument(
        "cannot tell the format from the content or the extension; name it with the format option",
    )
    .with_setting("format")
    .with_setting_kind(crate::error::SettingKind::Read)
    .with_file(path)
}

fn read_prefix(path: &Path, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut file = std::fs::File::open(path)?;
    let mut filled = 0;
    while filled < buf.len() {
        match file.read(&mut buf[filled..])? {
            0 => break,
            n => filled += n,
        }
    }
    Ok(filled)
}

/// The format whose magic bytes start `head` (up to 8 bytes of the file).
pub fn detect_magic(head: &[u8]) -> Option<Format> {
    if head.len() >= 4 && &head[..3] == b"JAY" && head[3].is_ascii_digit() {
        return Some(Format::Jay);
    }
    if head.starts_with(b"PAR1") {
        return Some(Format::Parquet);
    }
    if head.starts_with(b"ARROW1") {
        return Some(Format::Arrow);
    }
    if head.starts_with(&[0xFF, 0xFF, 0xFF, 0xFF]) {
        return Some(Format::ArrowStream);
    }
    if head.starts_with(b"DSv1") {
        return Some(Format::DataSeries);
    }
    if head.len() >= 4 && head.starts_with(b"VS") && head[2..4] == [0, 0] {
        return Some(Format::Vs);
    }
    None
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Format {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self> {
        let lower = s.to_ascii_lowercase();
        Format::ALL
            .into_iter()
            .find(|f| f.name() == lower || f.extensions().contains(&lower.as_str()))
            .ok_or_else(|| {
                let names: Vec<_> = Format::ALL.iter().map(|f| f.name()).collect();
                Error::new(
                    ErrorClass::InvalidArgument,
                    format!("unknown format {s:?}; known formats: {}", names.join(", ")),
                )
            })
    }
}

impl From<Format> for &'static str {
    fn from(format: Format) -> Self {
        format.name()
    }
}

impl TryFrom<String> for Format {
    type Error = Error;
    fn try_from(name: String) -> Result<Format> {
        name.parse()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn magic_bytes_win_over_extension() {
        assert_eq!(detect_magic(b"JAY1\0\0\0\0"), Some(Format::Jay));
        assert_eq!(detect_magic(b"PAR1"), Some(Format::Parquet));
        assert_eq!(detect_magic(b"ARROW1\0\0"), Some(Format::Arrow));
        assert_eq!(
            detect_magic(&[0xFF, 0xFF, 0xFF, 0xFF, 8, 0, 0, 0]),
            Some(Format::ArrowStream)
        );
        assert_eq!(detect_magic(b"DSv1xV4\x12"), Some(Format::DataSeries));
        assert_eq!(detect_magic(b"VS\0\0$"), Some(Format::Vs));
        assert_eq!(detect_magic(b"JAYX"), None);
        assert_eq!(detect_magic(b"a,b\n1,2"), None);
    }

    #[test]
    fn names_and_extensions_round_trip() {
        for format in Format::ALL {
            assert_eq!(format.name().parse::<Format>().unwrap(), format);
        }
        assert_eq!("feather".parse::<Format>().unwrap(), Format::Arrow);
        assert_eq!(
            Format::from_extension(Path::new("x.JSONL")),
            Some(Format::Ndjson)
        );
        assert!("xls".parse::<Format>().is_err());
    }
}
