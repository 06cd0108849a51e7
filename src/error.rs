//! The one error type of arrowsmith.
//!
//! Every error says what was wrong (`class` + message) and where: the file, the column or meta
//! field, the byte offset and the row, whichever apply. Readers hand it to Arrow as
//! `ArrowError::ExternalError`, so it survives the `RecordBatchReader` interface and can be
//! recovered with [`Error::from_arrow`].

use std::fmt;
use std::path::{Path, PathBuf};

use arrow_schema::ArrowError;

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What went wrong, as a stable name (`ErrorClass::as_str`) that tests and manifests use.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorClass {
    /// Reading or writing the file system failed.
    Io,
    /// The file is shorter than the smallest valid file.
    TooSmall,
    /// Magic bytes or trailer are not the format's.
    BadSignature,
    /// A version the format defines but arrowsmith does not read.
    UnsupportedVersion,
    /// The file's outer framing (sizes of its sections) is inconsistent.
    BadEnvelope,
    /// The metadata record cannot be parsed or verified.
    BadMeta,
    /// A field the data needs is absent.
    MissingField,
    /// A type code the format does not define.
    UnknownType,
    /// Text that is not UTF-8.
    InvalidUtf8,
    /// The key-column count is out of range.
    BadKeys,
    /// Row counts of parts of the file disagree.
    RowCountMismatch,
    /// A buffer lies outside the section that must hold it.
    BufferOutOfBounds,
    /// A buffer is not aligned as the format requires.
    BufferMisaligned,
    /// A buffer's length does not fit its row count and type.
    BufferSize,
    /// Two buffers share bytes.
    BufferOverlap,
    /// Offsets that decrease or point outside their target.
    BadOffsets,
    /// A stored value outside the domain of its type.
    BadValue,
    /// An Arrow type (or legacy type) with no mapping in this direction.
    UnsupportedType,
    /// A valid value that equals the target format's missing-value sentinel.
    SentinelCollision,
    /// A value that does not fit the target type.
    ValueOutOfRange,
    /// A format or feature that this build does not implement.
    Unsupported,
    /// The caller asked for something that cannot be done (bad option, unknown column, ...).
    InvalidArgument,
    /// An error raised inside the Arrow libraries.
    Arrow,
    /// An error raised inside the Parquet library.
    Parquet,
}

impl ErrorClass {
    pub fn as_str(self) -> &'static str {
        use ErrorClass::*;
        match self {
            Io => "io",
            TooSmall => "too_small",
            BadSignature => "bad_signature",
            UnsupportedVersion => "unsupported_version",
            BadEnvelope => "bad_envelope",
            BadMeta => "bad_meta",
            MissingField => "missing_field",
            UnknownType => "unknown_type",
            InvalidUtf8 => "invalid_utf8",
            BadKeys => "bad_nkeys",
            RowCountMismatch => "row_count_mismatch",
            BufferOutOfBounds => "buffer_out_of_bounds",
            BufferMisaligned => "buffer_misaligned",
            BufferSize => "buffer_size",
            BufferOverlap => "buffer_overlap",
            BadOffsets => "bad_offsets",
            BadValue => "bad_value",
            UnsupportedType => "unsupported_type",
            SentinelCollision => "sentinel_collision",
            ValueOutOfRange => "value_out_of_range",
            Unsupported => "unsupported",
            InvalidArgument => "invalid_argument",
            Arrow => "arrow",
            Parquet => "parquet",
        }
    }

    /// True for errors caused by the caller's request rather than by the data or the system.
    pub fn is_usage(self) -> bool {
        matches!(self, ErrorClass::InvalidArgument)
    }
}

impl fmt::Display for ErrorClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A column named in an error: its position and, when it has one, its name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ColumnRef {
    pub index: usize,
    pub name: Option<String>,
}

#[derive(Debug)]
pub struct Error {
    class: ErrorClass,
    message: String,
    file: Option<PathBuf>,
    column: Option<ColumnRef>,
    field: Option<String>,
    offset: Option<u64>,
    row: Option<u64>,
    source: Option<Box<dyn std::error::Error + Send + Sync + 'static>>,
}

impl Error {
    pub fn new(class: ErrorClass, message: impl Into<String>) -> Self {
        Error {
            class,
            message: message.into(),
            file: None,
            column: None,
            field: None,
            offset: None,
            row: None,
            source: None,
        }
    }

    pub fn invalid_argument(message: impl Into<String>) -> Self {
        Self::new(ErrorClass::InvalidArgument, message)
    }

    pub fn unsupported(message: impl Into<String>) -> Self {
        Self::new(ErrorClass::Unsupported, message)
    }

    /// Names the file, unless a more specific location already named one.
    pub fn with_file(mut self, path: impl AsRef<Path>) -> Self {
        if self.file.is_none() {
            self.file = Some(path.as_ref().to_path_buf());
        }
        self
    }

    pub fn with_column(mut self, index: usize, name: Option<&str>) -> Self {
        if self.column.is_none() {
            self.column = Some(ColumnRef {
                index,
                name: name.map(str::to_owned),
            });
        }
        self
    }

    pub fn with_field(mut self, field: impl Into<String>) -> Self {
        if self.field.is_none() {
            self.field = Some(field.into());
        }
        self
    }

    pub fn at_offset(mut self, offset: u64) -> Self {
        if self.offset.is_none() {
            self.offset = Some(offset);
        }
        self
    }

    pub fn at_row(mut self, row: u64) -> Self {
        if self.row.is_none() {
            self.row = Some(row);
        }
        self
    }

    pub fn with_source(mut self, source: impl std::error::Error + Send + Sync + 'static) -> Self {
        self.source = Some(Box::new(source));
        self
    }

    pub fn class(&self) -> ErrorClass {
        self.class
    }
    pub fn message(&self) -> &str {
        &self.message
    }
    pub fn file(&self) -> Option<&Path> {
        self.file.as_deref()
    }
    pub fn column(&self) -> Option<&ColumnRef> {
        self.column.as_ref()
    }
    pub fn field(&self) -> Option<&str> {
        self.field.as_deref()
    }
    pub fn offset(&self) -> Option<u64> {
        self.offset
    }
    pub fn row(&self) -> Option<u64> {
        self.row
    }

    /// The arrowsmith error carried inside an `ArrowError`, if there is one.
    pub fn from_arrow(error: &ArrowError) -> Option<&Error> {
        match error {
            ArrowError::ExternalError(inner) => inner.downcast_ref::<Error>(),
            _ => None,
        }
    }

    /// Converts an `ArrowError` back into the arrowsmith error it carries, or wraps it.
    pub fn from_arrow_owned(error: ArrowError) -> Error {
        match error {
            ArrowError::ExternalError(inner) => match inner.downcast::<Error>() {
                Ok(ours) => *ours,
                Err(other) => Error::new(ErrorClass::Arrow, other.to_string()),
            },
            ArrowError::IoError(message, io) => Error::new(ErrorClass::Io, message).with_source(io),
            other => Error::new(ErrorClass::Arrow, other.to_string()),
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(file) = &self.file {
            write!(f, "{}: ", file.display())?;
        }
        if let Some(column) = &self.column {
            match &column.name {
                Some(name) => write!(f, "column {} {:?}: ", column.index, name)?,
                None => write!(f, "column {}: ", column.index)?,
            }
        }
        if let Some(field) = &self.field {
            write!(f, "{field}: ")?;
        }
        if let Some(row) = self.row {
            write!(f, "row {row}: ")?;
        }
        if let Some(offset) = self.offset {
            write!(f, "at byte {offset}: ")?;
        }
        write!(f, "{} [{}]", self.message, self.class)?;
        if let Some(source) = &self.source {
            let text = source.to_string();
            if !text.is_empty() && !self.message.contains(&text) {
                write!(f, ": {text}")?;
            }
        }
        Ok(())
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source
            .as_deref()
            .map(|s| s as &(dyn std::error::Error + 'static))
    }
}

impl From<std::io::Error> for Error {
    fn from(error: std::io::Error) -> Self {
        Error::new(ErrorClass::Io, error.to_string())
    }
}

impl From<ArrowError> for Error {
    fn from(error: ArrowError) -> Self {
        Error::from_arrow_owned(error)
    }
}

impl From<parquet::errors::ParquetError> for Error {
    fn from(error: parquet::errors::ParquetError) -> Self {
        Error::new(ErrorClass::Parquet, error.to_string())
    }
}

impl From<Error> for ArrowError {
    fn from(error: Error) -> Self {
        ArrowError::ExternalError(Box::new(error))
    }
}
