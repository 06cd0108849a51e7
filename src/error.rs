//! The one error type of arrowsmith.
//!
//! Every error says what was wrong (`class` + message) and where: the file, the column or meta
//! field, the byte offset and the row, whichever apply. Readers hand it to Arrow as
//! `ArrowError::ExternalError`, so it survives the `RecordBatchReader` interface and can be
//! recovered with [`Error::from_arrow`].
//!
//! The error it was caused by stays attached as [`Error::cause`]: an [`std::io::Error`] (whose
//! kind [`Error::io_kind`] reads without parsing text), a [`parquet::errors::ParquetError`] or an
//! [`ArrowError`], so a caller can tell a missing file from a permission problem from bad data by
//! type, not by message.
//!
//! # Display and `source()`
//!
//! An error's text is printed once, whoever prints it. [`Display`](fmt::Display) is the whole
//! message: the location, what was wrong, the class and the cause's own text (unless the message
//! already holds it), so the command line's `error:` line, a Python exception's `str()` and a
//! DataFusion error (which prints only the `Display` of what it wraps) need nothing else.
//! [`std::error::Error::source`] therefore skips the cause, whose text `Display` already
//! shows, and returns the cause's own source, the next error not yet printed: a printer that walks
//! the chain (`anyhow`'s `{:#}`) shows each text once. The cause itself is [`Error::cause`].

use std::fmt;
use std::path::{Path, PathBuf};

use arrow_schema::ArrowError;

/// The result type of every fallible arrowsmith call.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// The boxed cause an [`Error`] keeps, as [`ArrowError::ExternalError`] and
/// [`parquet::errors::ParquetError::External`] box theirs.
type Source = Box<dyn std::error::Error + Send + Sync + 'static>;

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
    /// The class's stable snake-case name, as tests, manifests and the Python exceptions use it.
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
    /// Zero-based position of the column in the file's schema.
    pub index: usize,
    /// The column's name, when the format gives it one.
    pub name: Option<String>,
}

/// An arrowsmith failure: what went wrong, where, and what caused it.
///
/// - [`class`](Error::class) is a stable [`ErrorClass`] to match on; [`message`](Error::message)
///   says what was found and what was expected.
/// - [`file`](Error::file), [`column`](Error::column), [`field`](Error::field),
///   [`offset`](Error::offset) and [`row`](Error::row) locate it; each `with_*` / `at_*` keeps the
///   innermost location, so a reader deep in a file is not overruled by its caller.
/// - [`cause`](Error::cause) is the underlying error, when another library raised it:
///   [`std::io::Error`] (see [`io_kind`](Error::io_kind)), [`parquet::errors::ParquetError`] or
///   [`ArrowError`]. Downcast it to inspect it. Its text is part of this error's `Display`, so
///   [`source`](std::error::Error::source) returns the cause's own source, not the cause (see the
///   module docs).
///
/// Readers return it inside [`ArrowError::ExternalError`]; [`Error::from_arrow`] and
/// `Error::from(ArrowError)` take it back out with its source intact.
///
/// ```
/// use std::io::ErrorKind;
///
/// let error = arrowsmith::open("data/no-such-file.jay", &Default::default()).err().unwrap();
/// assert_eq!(error.class(), arrowsmith::ErrorClass::Io);
/// assert_eq!(error.io_kind(), Some(ErrorKind::NotFound));
/// ```
pub struct Error {
    // Boxed, so that a `Result` of a small value stays small on the paths that decode every
    // value (a variable32 slot, an LZO step) and only the error path pays for the allocation.
    inner: Box<Inner>,
}

#[derive(Debug)]
struct Inner {
    class: ErrorClass,
    message: String,
    file: Option<PathBuf>,
    column: Option<ColumnRef>,
    field: Option<String>,
    offset: Option<u64>,
    row: Option<u64>,
    setting: Option<String>,
    setting_kind: Option<SettingKind>,
    source: Option<Source>,
}

impl Error {
    /// An error of `class` saying `message`, with no location and no source yet.
    pub fn new(class: ErrorClass, message: impl Into<String>) -> Self {
        Error {
            inner: Box::new(Inner {
                class,
                message: message.into(),
                file: None,
                column: None,
                field: None,
                offset: None,
                row: None,
                setting: None,
                setting_kind: None,
                source: None,
            }),
        }
    }

    /// An [`ErrorClass::InvalidArgument`] error: the caller asked for something impossible.
    pub fn invalid_argument(message: impl Into<String>) -> Self {
        Self::new(ErrorClass::InvalidArgument, message)
    }

    /// An [`ErrorClass::InvalidArgument`] error about the setting `key` (a key of
    /// [`options::SETTINGS`](crate::options::SETTINGS)): its message begins with the setting
    /// named as [`Error::setting_phrase`] does, which each front end spells its own way with
    /// [`Error::to_string_spelled`].
    pub fn for_setting(key: &str, message: impl AsRef<str>) -> Self {
        Self::invalid_argument(format!(
            "{}: {}",
            Self::setting_phrase(key),
            message.as_ref()
        ))
        .with_setting(key)
    }

    /// How a message names the setting `key`: `the KEY option`. A front end replaces exactly
    /// this phrase with its own spelling (a flag, a keyword, an SQL key).
    pub fn setting_phrase(key: &str) -> String {
        format!("the {key} option")
    }

    /// Names the setting the error is about (its message names it as
    /// [`Error::setting_phrase`] does), unless an inner call already named one.
    pub fn with_setting(mut self, key: &str) -> Self {
        if self.inner.setting.is_none() {
            self.inner.setting = Some(key.to_owned());
        }
        self
    }

    /// Says whether the setting named is the read or the write one, for the keys that are
    /// both (`format`, `type`, `filo_type`, `lenient_eof`).
    pub fn with_setting_kind(mut self, kind: SettingKind) -> Self {
        if self.inner.setting_kind.is_none() {
            self.inner.setting_kind = Some(kind);
        }
        self
    }

    /// An [`ErrorClass::Unsupported`] error: valid, but not implemented by this build.
    pub fn unsupported(message: impl Into<String>) -> Self {
        Self::new(ErrorClass::Unsupported, message)
    }

    /// Names the file, unless a more specific location already named one. A URL is named
    /// without its credentials (user, password, query).
    pub fn with_file(mut self, path: impl AsRef<Path>) -> Self {
        if self.inner.file.is_none() {
            self.inner.file = Some(crate::location::shown_url(path.as_ref()));
        }
        self
    }

    /// Names `to` where the error names `from` or a path under it: the output a writer's
    /// scratch copy or sink stands for (a URL), in place of the scratch path.
    pub(crate) fn with_file_renamed(mut self, from: &Path, to: &Path) -> Self {
        if let Some(file) = &self.inner.file {
            if let Ok(rest) = file.strip_prefix(from) {
                let renamed = match rest.as_os_str().is_empty() {
                    true => to.to_path_buf(),
                    false => to.join(rest),
                };
                self.inner.file = Some(renamed);
            }
        }
        self.with_file(to)
    }

    /// Names the column (position and name), unless an inner call already named one.
    pub fn with_column(mut self, index: usize, name: Option<&str>) -> Self {
        if self.inner.column.is_none() {
            self.inner.column = Some(ColumnRef {
                index,
                name: name.map(str::to_owned),
            });
        }
        self
    }

    /// Names the metadata field, unless an inner call already named one.
    pub fn with_field(mut self, field: impl Into<String>) -> Self {
        if self.inner.field.is_none() {
            self.inner.field = Some(field.into());
        }
        self
    }

    /// Gives the byte offset in the file, unless an inner call already gave one.
    pub fn at_offset(mut self, offset: u64) -> Self {
        if self.inner.offset.is_none() {
            self.inner.offset = Some(offset);
        }
        self
    }

    /// Gives the row, unless an inner call already gave one.
    pub fn at_row(mut self, row: u64) -> Self {
        if self.inner.row.is_none() {
            self.inner.row = Some(row);
        }
        self
    }

    /// Attaches the error that caused this one, returned by [`Error::cause`]; its text becomes
    /// part of this error's `Display`.
    pub fn with_source(self, source: impl std::error::Error + Send + Sync + 'static) -> Self {
        self.with_boxed_source(Box::new(source))
    }

    fn with_boxed_source(mut self, source: Source) -> Self {
        self.inner.source = Some(source);
        self
    }

    /// What went wrong, as a stable class.
    pub fn class(&self) -> ErrorClass {
        self.inner.class
    }
    /// What was found and what was expected, without the location.
    pub fn message(&self) -> &str {
        &self.inner.message
    }
    /// The file the error is in, if one is known.
    pub fn file(&self) -> Option<&Path> {
        self.inner.file.as_deref()
    }
    /// The column the error is in, if one is known.
    pub fn column(&self) -> Option<&ColumnRef> {
        self.inner.column.as_ref()
    }
    /// The metadata field the error is in, if one is known.
    pub fn field(&self) -> Option<&str> {
        self.inner.field.as_deref()
    }
    /// The byte offset in the file, if one is known.
    pub fn offset(&self) -> Option<u64> {
        self.inner.offset
    }
    /// The row, if one is known.
    pub fn row(&self) -> Option<u64> {
        self.inner.row
    }
    /// The key of the setting the error is about, if it is about one.
    pub fn setting(&self) -> Option<&str> {
        self.inner.setting.as_deref()
    }
    /// Whether [`Error::setting`] is the read or the write setting, when that was said.
    pub fn setting_kind(&self) -> Option<SettingKind> {
        self.inner.setting_kind
    }

    /// The error's `Display` text with its setting named by `spell(key, kind)` (a front end's
    /// flag, keyword or key) instead of [`Error::setting_phrase`].
    pub fn to_string_spelled(&self, spell: impl Fn(&str, Option<SettingKind>) -> String) -> String {
        let text = self.to_string();
        match self.setting() {
            Some(key) => text.replace(
                &Self::setting_phrase(key),
                &spell(key, self.inner.setting_kind),
            ),
            None => text,
        }
    }

    /// The error that caused this one, when another library raised it. Its text is already part
    /// of this error's `Display`.
    pub fn cause(&self) -> Option<&(dyn std::error::Error + Send + Sync + 'static)> {
        self.inner.source.as_deref()
    }

    /// The kind of the [`std::io::Error`] that caused this error, if one did.
    ///
    /// It looks through the whole chain of sources, so an I/O error that Arrow or Parquet wrapped
    /// is found too. `None` means the data or the request was at fault, not the system.
    pub fn io_kind(&self) -> Option<std::io::ErrorKind> {
        let mut cause = self
            .cause()
            .map(|c| c as &(dyn std::error::Error + 'static));
        while let Some(error) = cause {
            if let Some(io) = error.downcast_ref::<std::io::Error>() {
                return Some(io.kind());
            }
            if let Some(ArrowError::IoError(_, io)) = error.downcast_ref::<ArrowError>() {
                return Some(io.kind());
            }
            cause = error.source();
        }
        None
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
                Err(other) => match other.downcast::<std::io::Error>() {
                    Ok(io) => Error::from(*io),
                    Err(other) => {
                        Error::new(ErrorClass::Arrow, other.to_string()).with_boxed_source(other)
                    }
                },
            },
            ArrowError::IoError(_, io) if io.get_ref().is_some_and(|e| e.is::<Error>()) => {
                Error::from(io)
            }
            ArrowError::IoError(message, io) => Error::new(ErrorClass::Io, message).with_source(io),
            other => Error::new(ErrorClass::Arrow, other.to_string()).with_source(other),
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(file) = &self.inner.file {
            write!(f, "{}: ", file.display())?;
        }
        if let Some(column) = &self.inner.column {
            match &column.name {
                Some(name) => write!(f, "column {} {:?}: ", column.index, name)?,
                None => write!(f, "column {}: ", column.index)?,
            }
        }
        if let Some(field) = &self.inner.field {
            write!(f, "{field}: ")?;
        }
        if let Some(row) = self.inner.row {
            write!(f, "row {row}: ")?;
        }
        if let Some(offset) = self.inner.offset {
            write!(f, "at byte {offset}: ")?;
        }
        write!(f, "{} [{}]", self.inner.message, self.inner.class)?;
        if let Some(source) = &self.inner.source {
            let text = source.to_string();
            if !text.is_empty() && !self.inner.message.contains(&text) {
                write!(f, ": {text}")?;
            }
        }
        Ok(())
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.inner.fmt(f)
    }
}

impl std::error::Error for Error {
    /// The cause's own source: the cause's text is already in this error's `Display`.
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.inner.source.as_deref()?.source()
    }
}

impl From<std::io::Error> for Error {
    fn from(error: std::io::Error) -> Self {
        // A reader of ours that fails inside `io::Read` (a cap on a record's size) carries its
        // own error there.
        match error.downcast::<Error>() {
            Ok(ours) => ours,
            Err(error) => Error::new(ErrorClass::Io, error.to_string()).with_source(error),
        }
    }
}

impl From<ArrowError> for Error {
    fn from(error: ArrowError) -> Self {
        Error::from_arrow_owned(error)
    }
}

impl From<parquet::errors::ParquetError> for Error {
    fn from(error: parquet::errors::ParquetError) -> Self {
        use parquet::errors::ParquetError;
        match error {
            // Parquet boxes what its Arrow reader or our own sources raised: take ours back out
            // and keep an I/O error's kind.
            ParquetError::External(inner) => match inner.downcast::<Error>() {
                Ok(ours) => *ours,
                Err(other) => match other.downcast::<std::io::Error>() {
                    Ok(io) => Error::from(*io),
                    Err(other) => {
                        Error::new(ErrorClass::Parquet, other.to_string()).with_boxed_source(other)
                    }
                },
            },
            other => Error::new(ErrorClass::Parquet, other.to_string()).with_source(other),
        }
    }
}

impl From<Error> for ArrowError {
    fn from(error: Error) -> Self {
        ArrowError::ExternalError(Box::new(error))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::ErrorKind;

    fn open_error(path: &Path) -> Error {
        match crate::open(path, &crate::ReadOptions::default()) {
            Ok(_) => panic!("{} opened", path.display()),
            Err(e) => e,
        }
    }

    #[test]
    fn io_errors_keep_their_kind_through_arrow_and_parquet() {
        for kind in [ErrorKind::NotFound, ErrorKind::PermissionDenied] {
            let ours = Error::from(std::io::Error::from(kind)).with_file("x.jay");
            assert_eq!(ours.io_kind(), Some(kind));
            let through_arrow = ArrowError::from(ours);
            assert_eq!(
                Error::from_arrow(&through_arrow).unwrap().io_kind(),
                Some(kind)
            );
            let back = Error::from(through_arrow);
            assert_eq!((back.class(), back.io_kind()), (ErrorClass::Io, Some(kind)));
            assert_eq!(back.file(), Some(Path::new("x.jay")));

            let arrow_io = ArrowError::IoError("read".into(), std::io::Error::from(kind));
            assert_eq!(Error::from(arrow_io).io_kind(), Some(kind));
            let parquet_io = parquet::errors::ParquetError::from(std::io::Error::from(kind));
            assert_eq!(Error::from(parquet_io).io_kind(), Some(kind));
        }
    }

    #[test]
    fn library_errors_stay_their_own_type_as_cause() {
        let parquet = Error::from(parquet::errors::ParquetError::General("bad page".into()));
        assert_eq!(parquet.class(), ErrorClass::Parquet);
        let source = parquet.cause().expect("a cause");
        assert!(source.is::<parquet::errors::ParquetError>());
        assert_eq!(parquet.io_kind(), None);

        let arrow = Error::from(ArrowError::ComputeError("overflow".into()));
        assert_eq!(arrow.class(), ErrorClass::Arrow);
        let source = arrow.cause().expect("a cause");
        assert!(matches!(
            source.downcast_ref::<ArrowError>(),
            Some(ArrowError::ComputeError(_))
        ));

        // Ours, boxed by Parquet, comes back whole rather than as Parquet's text.
        let inner = Error::new(ErrorClass::BadValue, "negative length").at_row(7);
        let back = Error::from(parquet::errors::ParquetError::External(Box::new(inner)));
        assert_eq!((back.class(), back.row()), (ErrorClass::BadValue, Some(7)));
    }

    /// What a printer that walks `source()` shows (anyhow's `{:#}`, a Python `__cause__` chain).
    fn chain_text(error: &Error) -> String {
        let mut text = error.to_string();
        let mut next = std::error::Error::source(error);
        while let Some(e) = next {
            text.push_str(&format!(": {e}"));
            next = e.source();
        }
        text
    }

    #[test]
    fn the_cause_is_printed_once_by_display_and_by_a_chain_printer() {
        let dir = tempfile::tempdir().unwrap();
        let missing = open_error(&dir.path().join("absent.jay"));
        let system = missing.cause().expect("the io::Error").to_string();
        let wrapped = Error::new(ErrorClass::Io, "cannot lock the header bytes")
            .with_file("x.vs")
            .with_source(std::io::Error::other("resource busy"));
        let nested = Error::new(ErrorClass::BadMeta, "bad attribute").with_source(
            Error::new(ErrorClass::Io, "read failed").with_source(std::io::Error::other(
                Error::new(ErrorClass::BadValue, "innermost"),
            )),
        );
        for (error, cause) in [
            (&missing, system.as_str()),
            (&wrapped, "resource busy"),
            (&nested, "innermost"),
        ] {
            assert_eq!(error.to_string().matches(cause).count(), 1, "{error}");
            let chain = chain_text(error);
            assert_eq!(chain.matches(cause).count(), 1, "{chain}");
        }
        // The cause stays reachable by type.
        assert!(wrapped.cause().unwrap().is::<std::io::Error>());
        assert_eq!(missing.io_kind(), Some(ErrorKind::NotFound));
    }

    #[test]
    fn a_missing_file_a_forbidden_file_and_bad_data_are_told_apart() {
        let dir = tempfile::tempdir().unwrap();

        let missing = open_error(&dir.path().join("absent.jay"));
        assert_eq!(missing.class(), ErrorClass::Io);
        assert_eq!(missing.io_kind(), Some(ErrorKind::NotFound));

        let garbage = dir.path().join("garbage.jay");
        std::fs::write(&garbage, b"this is not a Jay file at all, just text").unwrap();
        let bad = open_error(&garbage);
        assert_ne!(bad.class(), ErrorClass::Io);
        assert_eq!(bad.io_kind(), None, "{bad}");

        let forbidden = dir.path().join("forbidden.jay");
        std::fs::copy("data/jay/tiny.jay", &forbidden).unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&forbidden, std::fs::Permissions::from_mode(0o000)).unwrap();
            // A privileged user (root in a container) reads it anyway: then there is no
            // permission error to observe, and the conversion test above covers the kind.
            if std::fs::File::open(&forbidden).is_err() {
                let denied = open_error(&forbidden);
                assert_eq!(denied.class(), ErrorClass::Io);
                assert_eq!(denied.io_kind(), Some(ErrorKind::PermissionDenied));
            } else {
                eprintln!("running privileged: a mode-000 file is readable, skipped");
            }
        }
    }
}

/// Whether a setting is one of reading or of writing. A key may be both (`format`, `type`,
/// `filo_type`, `lenient_eof`): one row of each kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SettingKind {
    /// A key of [`ReadOptions::set`](crate::ReadOptions::set).
    Read,
    /// A key of [`WriteOptions::set`](crate::WriteOptions::set).
    Write,
}

impl SettingKind {
    /// `"read"` or `"write"`.
    pub fn name(self) -> &'static str {
        match self {
            SettingKind::Read => "read",
            SettingKind::Write => "write",
        }
    }

    /// `"input"` or `"output"`: what a setting of this kind applies to.
    pub fn side(self) -> &'static str {
        match self {
            SettingKind::Read => "input",
            SettingKind::Write => "output",
        }
    }
}
