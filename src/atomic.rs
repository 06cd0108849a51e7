//! Output that appears whole or not at all: a writer fills a temporary file beside the target
//! and renames it over the target only when everything has been written. Dropping an
//! uncommitted [`AtomicFile`] deletes the temporary file, so a failed write leaves an existing
//! target untouched and never a half-written file.
//!
//! What an existing target may be replaced by is [`check_target`]'s rule: only an output of
//! the same kind (a file for a file format, a dataset of the format for a directory format),
//! and only when the caller asks to overwrite. A directory dataset is replaced by swapping the
//! two directories in one step (`renameat2(RENAME_EXCHANGE)` on Linux), so the path always
//! holds the old dataset or the whole new one.
//!
//! A writer holds an advisory lock (`flock`) on its temporary file or directory while it
//! writes. A process killed in the middle leaves the temporary behind, unlocked; the next
//! writer of the same target removes every such sibling whose lock it can take
//! ([`remove_stale_temps`]).

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use tempfile::NamedTempFile;

use crate::error::{Error, ErrorClass, Result};

/// The directory a target lives in: its temporary sibling goes there, since a rename is atomic
/// only within one file system.
pub(crate) fn parent_dir(target: &Path) -> &Path {
    match target.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

/// A hidden temporary beside `target`, named `.TARGET.XXXXXX.tmp` so that it says what it is for.
///
/// It is created with the permissions any tool gives a new file or directory (`mode` 0o666 or
/// 0o777, less the umask), not the 0o600 / 0o700 of a private temporary: once renamed, it is the
/// output that other users and services of the folder read.
fn temp_sibling<T>(
    target: &Path,
    mode: u32,
    make: impl FnOnce(&tempfile::Builder, &Path) -> io::Result<T>,
) -> Result<T> {
    let name = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let prefix = format!(".{name}.");
    let mut builder = tempfile::Builder::new();
    builder.prefix(&prefix).suffix(".tmp");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        builder.permissions(std::fs::Permissions::from_mode(mode));
    }
    #[cfg(not(unix))]
    let _ = mode;
    make(&builder, parent_dir(target)).map_err(|e| Error::from(e).with_file(target))
}

/// How many times a writer makes a new temporary when a cleaner removed the last one in the
/// moment between its creation and the writer's lock on it.
const TEMP_ATTEMPTS: usize = 8;

/// The writer's lock on its temporary at `path`, open as `file`: taken (waiting for a cleaner
/// that holds it), then checked to still name the same file, since a cleaner that took the
/// lock first has removed it. `false` when it was removed: the writer makes another.
#[cfg(unix)]
fn hold(path: &Path, file: &File) -> io::Result<bool> {
    use std::os::unix::fs::MetadataExt;
    flock(file, true)?;
    let named = match std::fs::symlink_metadata(path) {
        Ok(named) => named,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(e),
    };
    let held = file.metadata()?;
    Ok(held.dev() == named.dev() && held.ino() == named.ino())
}

#[cfg(not(unix))]
fn hold(_path: &Path, _file: &File) -> io::Result<bool> {
    Ok(true)
}

/// An exclusive `flock` on `file`, waiting for it or not; `false` when it is held elsewhere.
#[cfg(unix)]
fn flock(file: &File, wait: bool) -> io::Result<bool> {
    use std::os::fd::AsRawFd;
    let operation = libc::LOCK_EX | if wait { 0 } else { libc::LOCK_NB };
    loop {
        // SAFETY: a valid open descriptor for the duration of the call.
        if unsafe { libc::flock(file.as_raw_fd(), operation) } == 0 {
            return Ok(true);
        }
        let e = io::Error::last_os_error();
        match e.raw_os_error() {
            Some(libc::EINTR) => continue,
            Some(libc::EWOULDBLOCK) => return Ok(false),
            _ => return Err(e),
        }
    }
}

/// Whether `name` is that of a temporary [`temp_sibling`] made for a target named
/// `target_name`: `.TARGET.XXXXXX.tmp`, six letters or digits in the middle.
fn is_temp_name(name: &str, target_name: &str) -> bool {
    let Some(rest) = name
        .strip_prefix('.')
        .and_then(|r| r.strip_prefix(target_name))
        .and_then(|r| r.strip_prefix('.'))
    else {
        return false;
    };
    rest.strip_suffix(".tmp").is_some_and(|random| {
        random.len() == 6 && random.bytes().all(|b| b.is_ascii_alphanumeric())
    })
}

/// Removes the temporaries that writers of `target` killed in mid-write left beside it (and
/// old datasets a crash left between the swap and their removal): every sibling named as
/// `temp_sibling` names them whose lock no live writer holds. Best effort: what cannot be
/// removed stays for the next time. Returns how many were removed.
pub fn remove_stale_temps(target: &Path) -> usize {
    #[cfg(unix)]
    {
        let Some(target_name) = target.file_name().and_then(|n| n.to_str()) else {
            return 0;
        };
        let Ok(entries) = std::fs::read_dir(parent_dir(target)) else {
            return 0;
        };
        let mut removed = 0;
        for entry in entries.flatten() {
            let name = entry.file_name();
            if !name.to_str().is_some_and(|n| is_temp_name(n, target_name)) {
                continue;
            }
            if remove_if_unlocked(&entry.path()) {
                removed += 1;
            }
        }
        removed
    }
    #[cfg(not(unix))]
    {
        let _ = target;
        0
    }
}

/// Removes a temporary file or directory if no writer holds its lock (never following a
/// symbolic link); the lock is held while it goes, so a writer cannot take it over meanwhile.
#[cfg(unix)]
fn remove_if_unlocked(path: &Path) -> bool {
    use std::os::unix::fs::OpenOptionsExt;
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return false;
    };
    if !meta.is_dir() && !meta.is_file() {
        return false;
    }
    let Ok(handle) = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
    else {
        return false;
    };
    if !matches!(flock(&handle, false), Ok(true)) {
        return false;
    }
    let removed = if meta.is_dir() {
        std::fs::remove_dir_all(path)
    } else {
        std::fs::remove_file(path)
    };
    removed.is_ok()
}

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

/// The mode of a new file before the umask.
const FILE_MODE: u32 = 0o666;
/// The mode of a new directory before the umask.
const DIR_MODE: u32 = 0o777;

/// A file output that appears whole or not at all: written to a temporary sibling of the target
/// and renamed into place by [`AtomicFile::commit`]. Dropping it uncommitted deletes the
/// temporary file.
pub struct AtomicFile {
    writer: BufWriter<NamedTempFile>,
    target: PathBuf,
    durable: bool,
}

impl AtomicFile {
    /// Starts a temporary file in the target's directory (a rename is atomic only there).
    /// An existing target that is not a file (a directory, a device) is refused; the rule
    /// about whether an existing file may be replaced is the caller's ([`check_target`]).
    /// Stale temporaries of the target's earlier writers are removed first.
    pub fn create(target: &Path) -> Result<AtomicFile> {
        if check_target(target, Replaceable::File, true)? == Existing::Stream {
            return Err(refuse_stream(target, "this"));
        }
        remove_stale_temps(target);
        for _ in 0..TEMP_ATTEMPTS {
            let temp = temp_sibling(target, FILE_MODE, |b, dir| b.tempfile_in(dir))?;
            let held =
                hold(temp.path(), temp.as_file()).map_err(|e| Error::from(e).with_file(target))?;
            if held {
                return Ok(AtomicFile {
                    writer: BufWriter::with_capacity(1 << 20, temp),
                    target: target.to_path_buf(),
                    durable: true,
                });
            }
        }
        Err(Error::new(
            ErrorClass::Io,
            "the temporary file beside the output kept being removed by another process",
        )
        .with_file(target))
    }

    /// Whether `commit` flushes the data to disk before the rename (the default). Without it
    /// a power loss right after the rename may leave an empty target on some file systems.
    pub fn set_durable(&mut self, durable: bool) {
        self.durable = durable;
    }

    /// The path the file will have once committed.
    pub fn target(&self) -> &Path {
        &self.target
    }

    /// The underlying file, for copies that bypass the buffer (flushes the buffer first).
    pub fn file_mut(&mut self) -> io::Result<&mut File> {
        self.writer.flush()?;
        Ok(self.writer.get_mut().as_file_mut())
    }

    /// Asks the kernel to start writing the bytes `offset..offset + len` of the file out to
    /// disk (Linux; elsewhere, and for a file that is not durable, nothing), so that the flush
    /// at [`AtomicFile::commit`] finds most of the file on disk already instead of waiting for
    /// all of it. Bytes still in the buffer are not covered.
    pub fn start_writeback(&mut self, offset: u64, len: u64) {
        if self.durable {
            start_writeback(self.writer.get_ref().as_file(), offset, len);
        }
    }

    /// Whether `commit` flushes the file to disk.
    pub fn durable(&self) -> bool {
        self.durable
    }

    /// Renames the finished temporary file over the target.
    pub fn commit(self) -> Result<()> {
        let target = self.target;
        let temp = self
            .writer
            .into_inner()
            .map_err(|e| Error::from(e.into_error()).with_file(&target))?;
        if self.durable {
            temp.as_file()
                .sync_all()
                .map_err(|e| Error::from(e).with_file(&target))?;
        }
        crate::test_hooks::crash_point("file-synced");
        crate::test_hooks::pause_point("file-commit");
        // The commit point: a stop requested until here leaves the target as it was.
        crate::cancel::check().map_err(|e| e.with_file(&target))?;
        temp.persist(&target)
            .map_err(|e| Error::from(e.error).with_file(&target))?;
        if self.durable {
            sync_parent(&target)?;
        }
        Ok(())
    }
}

/// Asks the kernel to start writing the bytes `offset..offset + len` of `file` out to disk
/// (Linux; elsewhere nothing), without waiting for it.
pub(crate) fn start_writeback(file: &File, offset: u64, len: u64) {
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd;
        let (offset, len) = (offset.min(i64::MAX as u64), len.min(i64::MAX as u64));
        // SAFETY: a valid open descriptor; the call only starts asynchronous writeback of the
        // range's dirty pages. Its result is ignored: the flush at the commit is what the
        // durability rests on.
        unsafe {
            libc::sync_file_range(
                file.as_raw_fd(),
                offset as libc::off64_t,
                len as libc::off64_t,
                libc::SYNC_FILE_RANGE_WRITE,
            );
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (file, offset, len);
}

/// Flushes the directory holding `path`: a rename is on disk only once the directory whose
/// entry it changed is, so without this a crash could bring back the old target (or none).
/// Directories cannot be opened for fsync on Windows; there the rename is left to the OS.
pub(crate) fn sync_parent(path: &Path) -> Result<()> {
    let parent = parent_dir(path);
    #[cfg(unix)]
    File::open(parent)
        .and_then(|dir| dir.sync_all())
        .map_err(|e| Error::from(e).with_file(parent))?;
    #[cfg(not(unix))]
    let _ = parent;
    Ok(())
}

impl Write for AtomicFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.writer.write(buf)
    }
    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        self.writer.write_all(buf)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.writer.flush()
    }
}

/// The output of a single-file writer: a file that appears whole at [`StreamOutput::commit`],
/// standard output when the target is `-` (for a pipe into another program), or a sink the
/// caller hands in.
pub enum StreamOutput {
    /// A new file, renamed into place at the commit.
    File(AtomicFile),
    /// Standard output, flushed at the commit.
    Stdout(BufWriter<io::Stdout>),
    /// The caller's sink (a pipe, a socket, a buffer), flushed at the commit. A sink cannot be
    /// taken back, so a write that fails half-way may leave part of the output in it.
    Sink(BufWriter<Box<dyn Write + Send>>),
    /// A character device, FIFO or socket at the target path (`/dev/null`, a named pipe),
    /// written straight into and flushed at the commit, as standard output is.
    Device(BufWriter<File>, PathBuf),
}

/// How errors of a writer to a sink name their "file".
pub const SINK_NAME: &str = "<sink>";

impl StreamOutput {
    /// A new file at `target` (never standard output), renamed into place at the commit.
    pub fn file(target: &Path) -> Result<StreamOutput> {
        Ok(StreamOutput::File(AtomicFile::create(target)?))
    }

    /// The caller's sink, buffered.
    pub fn sink(sink: impl Write + Send + 'static) -> StreamOutput {
        StreamOutput::Sink(BufWriter::with_capacity(1 << 20, Box::new(sink)))
    }

    /// Whether the commit of a file flushes it to disk first (see [`AtomicFile::set_durable`]);
    /// no effect on standard output or a sink.
    pub fn set_durable(&mut self, durable: bool) {
        if let StreamOutput::File(file) = self {
            file.set_durable(durable);
        }
    }

    /// Starts writing a range of a file out early (see [`AtomicFile::start_writeback`]); no
    /// effect on standard output or a sink.
    pub fn start_writeback(&mut self, offset: u64, len: u64) {
        if let StreamOutput::File(file) = self {
            file.start_writeback(offset, len);
        }
    }

    /// The path the output will have: the target of a file, `<stdout>` or [`SINK_NAME`].
    pub fn name(&self) -> &Path {
        match self {
            StreamOutput::File(file) => file.target(),
            StreamOutput::Stdout(_) => Path::new("<stdout>"),
            StreamOutput::Sink(_) => Path::new(SINK_NAME),
            StreamOutput::Device(_, path) => path,
        }
    }

    /// Where to write one large piece: a file itself once its buffer is flushed (so the piece
    /// is not copied through the buffer), else the buffered stream.
    pub fn unbuffered(&mut self) -> io::Result<&mut dyn Write> {
        Ok(match self {
            StreamOutput::File(file) => file.file_mut()?,
            StreamOutput::Stdout(out) => out,
            StreamOutput::Sink(out) => out,
            StreamOutput::Device(out, _) => out,
        })
    }

    /// Standard output for `-`; the device, FIFO or socket at `target` if it is one, written
    /// straight into; else an [`AtomicFile`] at `target`.
    pub fn create(target: &Path) -> Result<StreamOutput> {
        if target == Path::new("-") {
            return Ok(StreamOutput::Stdout(BufWriter::with_capacity(
                1 << 20,
                io::stdout(),
            )));
        }
        if check_target(target, Replaceable::File, true)? == Existing::Stream {
            let device = std::fs::OpenOptions::new()
                .write(true)
                .open(target)
                .map_err(|e| Error::from(e).with_file(target))?;
            return Ok(StreamOutput::Device(
                BufWriter::with_capacity(1 << 20, device),
                target.to_path_buf(),
            ));
        }
        Ok(StreamOutput::File(AtomicFile::create(target)?))
    }

    /// Completes the output: the rename of a file, the flush of standard output.
    pub fn commit(self) -> Result<()> {
        match self {
            StreamOutput::File(file) => file.commit(),
            StreamOutput::Stdout(mut out) => out
                .flush()
                .map_err(|e| Error::from(e).with_file(Path::new("<stdout>"))),
            StreamOutput::Sink(mut out) => out
                .flush()
                .map_err(|e| Error::from(e).with_file(Path::new(SINK_NAME))),
            StreamOutput::Device(mut out, path) => {
                out.flush().map_err(|e| Error::from(e).with_file(&path))
            }
        }
    }
}

impl Write for StreamOutput {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            StreamOutput::File(f) => f.write(buf),
            StreamOutput::Stdout(o) => o.write(buf),
            StreamOutput::Sink(o) => o.write(buf),
            StreamOutput::Device(o, _) => o.write(buf),
        }
    }
    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        match self {
            StreamOutput::File(f) => f.write_all(buf),
            StreamOutput::Stdout(o) => o.write_all(buf),
            StreamOutput::Sink(o) => o.write_all(buf),
            StreamOutput::Device(o, _) => o.write_all(buf),
        }
    }
    fn flush(&mut self) -> io::Result<()> {
        match self {
            StreamOutput::File(f) => f.flush(),
            StreamOutput::Stdout(o) => o.flush(),
            StreamOutput::Sink(o) => o.flush(),
            StreamOutput::Device(o, _) => o.flush(),
        }
    }
}

/// Where a single-file writer is to send its bytes, before anything is opened: a writer checks
/// its options and schema first, naming [`Destination::name`] in its errors, and opens the
/// output only once they pass, so a refused write never creates a temporary file.
pub(crate) enum Destination {
    /// A new file at the path, renamed into place at the commit.
    File(PathBuf),
    /// A new file at the path, standard output when the path is `-`, or the device or FIFO
    /// at the path, written straight into.
    FileOrStdout(PathBuf),
    /// The caller's sink, named [`SINK_NAME`] in errors.
    Sink(StreamOutput),
}

impl Destination {
    /// The caller's sink, buffered.
    pub(crate) fn sink(sink: impl Write + Send + 'static) -> Destination {
        Destination::Sink(StreamOutput::sink(sink))
    }

    /// The name errors give the output: the path as the caller gave it, or [`SINK_NAME`].
    pub(crate) fn name(&self) -> &Path {
        match self {
            Destination::File(path) | Destination::FileOrStdout(path) => path,
            Destination::Sink(_) => Path::new(SINK_NAME),
        }
    }

    /// Opens the output: creates the temporary file, or takes standard output or the sink.
    /// `durable` says whether a file is flushed to disk before its rename (see
    /// [`AtomicFile::set_durable`]).
    pub(crate) fn open(self, durable: bool) -> Result<StreamOutput> {
        let mut output = match self {
            Destination::File(path) => StreamOutput::file(&path)?,
            Destination::FileOrStdout(path) => StreamOutput::create(&path)?,
            Destination::Sink(sink) => sink,
        };
        output.set_durable(durable);
        Ok(output)
    }
}

/// A directory output that appears whole or not at all: filled as a hidden temporary sibling
/// of the target and moved into place by [`AtomicDir::commit`]. Dropping it uncommitted
/// removes the temporary directory.
pub struct AtomicDir {
    temp: Option<tempfile::TempDir>,
    /// The writer's lock on the temporary directory (see [`remove_stale_temps`]).
    _lock: Option<File>,
    target: PathBuf,
    kind: DatasetKind,
    durable: bool,
}

impl AtomicDir {
    /// Starts a temporary directory beside the target (a rename is atomic only within one file
    /// system, so it must sit in the target's parent), for a dataset of `kind`: the only kind
    /// of directory the commit replaces. Stale temporaries of the target's earlier writers are
    /// removed first.
    pub fn create(target: &Path, kind: DatasetKind) -> Result<AtomicDir> {
        remove_stale_temps(target);
        for _ in 0..TEMP_ATTEMPTS {
            let temp = temp_sibling(target, DIR_MODE, |b, dir| b.tempdir_in(dir))?;
            let io = |e: io::Error| Error::from(e).with_file(target);
            let lock = open_dir(temp.path()).map_err(io)?;
            let held = match &lock {
                Some(lock) => hold(temp.path(), lock).map_err(io)?,
                None => true,
            };
            if held {
                return Ok(AtomicDir {
                    temp: Some(temp),
                    _lock: lock,
                    target: target.to_path_buf(),
                    kind,
                    durable: true,
                });
            }
        }
        Err(Error::new(
            ErrorClass::Io,
            "the temporary directory beside the output kept being removed by another process",
        )
        .with_file(target))
    }

    /// Whether `commit` flushes every file and directory of the new tree to disk before the
    /// rename, and the parent directory after it (the default). Without it a power loss soon
    /// after the commit may leave the target with missing or empty files.
    pub fn set_durable(&mut self, durable: bool) {
        self.durable = durable;
    }

    /// Where to write the contents until the commit.
    pub fn path(&self) -> &Path {
        self.temp.as_ref().map_or(&self.target, |t| t.path())
    }

    /// The path the directory will have once committed.
    pub fn target(&self) -> &Path {
        &self.target
    }

    /// Moves the finished directory into place. A new target is created by a rename that
    /// refuses to replace anything, so of two writers only one creates it. An existing target
    /// is replaced only if `overwrite` and it is a dataset of the kind (see [`check_target`]):
    /// the two directories are swapped in one step, then the old one (now at the temporary
    /// name) is removed. The path holds the old dataset or the whole new one at every moment,
    /// except on a file system without the swap (then the old one is renamed aside first; see
    /// docs/reliability.md).
    pub fn commit(mut self, overwrite: bool) -> Result<()> {
        let target = self.target.clone();
        let kind = Replaceable::Dataset(self.kind);
        // Checked before the flush, so that a refused commit costs nothing.
        if check_target(&target, kind, overwrite)? == Existing::Stream {
            return Err(refuse_stream(&target, self.kind.what));
        }
        if self.durable {
            if let Some(temp) = &self.temp {
                sync_tree(temp.path()).map_err(|e| e.with_file(&target))?;
            }
        }
        crate::test_hooks::crash_point("dir-synced");
        crate::test_hooks::pause_point("dir-commit");
        // The commit point: a stop requested until here (during the flush, say) leaves the
        // target as it was, and the temporary is removed with `self`.
        crate::cancel::check().map_err(|e| e.with_file(&target))?;
        let temp = self.temp.take().expect("committed once").keep();
        let placed = match rename_new(&temp, &target) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists || is_not_empty(&e) => {
                // The target exists, or appeared since the check: the rule again, then the swap.
                check_target(&target, kind, overwrite).and_then(|existing| match existing {
                    Existing::Stream => Err(refuse_stream(&target, self.kind.what)),
                    _ => swap_dirs(&temp, &target).map_err(|e| Error::from(e).with_file(&target)),
                })
            }
            Err(e) => Err(Error::from(e).with_file(&target)),
        };
        if let Err(e) = placed {
            let _ = std::fs::remove_dir_all(&temp);
            return Err(e);
        }
        if self.durable {
            sync_parent(&target)?;
        }
        Ok(())
    }
}

/// A directory opened to hold its lock (Unix; elsewhere there are no locks).
fn open_dir(path: &Path) -> io::Result<Option<File>> {
    if cfg!(unix) {
        File::open(path).map(Some)
    } else {
        Ok(None)
    }
}

/// Whether a rename failed because the target is a directory that is not empty.
fn is_not_empty(e: &io::Error) -> bool {
    #[cfg(unix)]
    if e.raw_os_error() == Some(libc::ENOTEMPTY) {
        return true;
    }
    e.kind() == io::ErrorKind::DirectoryNotEmpty
}

/// Renames `from` to `to` only if nothing is at `to` (`AlreadyExists` otherwise): Linux's
/// `renameat2(RENAME_NOREPLACE)`. Where the file system or system lacks it, a check then a
/// plain rename, which a writer creating `to` in between could race.
fn rename_new(from: &Path, to: &Path) -> io::Result<()> {
    #[cfg(target_os = "linux")]
    match renameat2(from, to, libc::RENAME_NOREPLACE) {
        Err(e) if is_unsupported(&e) => {}
        done => return done,
    }
    if to.symlink_metadata().is_ok() {
        return Err(io::ErrorKind::AlreadyExists.into());
    }
    std::fs::rename(from, to)
}

/// Puts the directory `new` at `target` in place of the one there, and removes the old one.
/// On Linux the two are swapped by one `renameat2(RENAME_EXCHANGE)`, so `target` always names
/// one whole directory; a crash after the swap leaves the old directory at `new`'s temporary
/// name, which [`remove_stale_temps`] removes. Where the file system refuses the swap (or on
/// another system) the old directory is renamed aside to `.TARGET.XXXXXX.old` first: a crash
/// between the two renames leaves nothing at `target` and the old dataset there, to be renamed
/// back by hand. A failure to remove the old directory after the swap is not an error: the new
/// one is in place, and the old one is removed by the next writer.
fn swap_dirs(new: &Path, target: &Path) -> io::Result<()> {
    // The old dataset's lock, held until it is gone, so that a cleaner does not remove it
    // under us; it also waits for a writer that holds the dataset's lock.
    let old_lock = open_dir(target)?;
    #[cfg(unix)]
    if let Some(lock) = &old_lock {
        flock(lock, true)?;
    }
    #[cfg(target_os = "linux")]
    match renameat2(new, target, libc::RENAME_EXCHANGE) {
        Ok(()) => {
            crate::test_hooks::crash_point("dir-exchanged");
            let _ = std::fs::remove_dir_all(new);
            return Ok(());
        }
        Err(e) if is_unsupported(&e) => {}
        Err(e) => return Err(e),
    }
    let aside = new.with_extension("old");
    std::fs::rename(target, &aside)?;
    crate::test_hooks::crash_point("dir-aside");
    if let Err(e) = std::fs::rename(new, target) {
        let _ = std::fs::rename(&aside, target);
        return Err(e);
    }
    drop(old_lock);
    let _ = std::fs::remove_dir_all(&aside);
    Ok(())
}

/// Whether `renameat2` failed because the system or file system does not offer the flag.
#[cfg(target_os = "linux")]
fn is_unsupported(e: &io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::EINVAL | libc::ENOSYS))
}

/// Linux's `renameat2` with `flags` (`RENAME_NOREPLACE`, `RENAME_EXCHANGE`).
#[cfg(target_os = "linux")]
fn renameat2(from: &Path, to: &Path, flags: libc::c_uint) -> io::Result<()> {
    use std::os::unix::ffi::OsStrExt;
    let c = |p: &Path| {
        std::ffi::CString::new(p.as_os_str().as_bytes())
            .map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))
    };
    let (from, to) = (c(from)?, c(to)?);
    // SAFETY: two valid NUL-terminated paths, relative to the working directory.
    let rc = unsafe {
        libc::renameat2(
            libc::AT_FDCWD,
            from.as_ptr(),
            libc::AT_FDCWD,
            to.as_ptr(),
            flags,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Flushes to disk every file and directory under `root` (and `root` itself).
pub(crate) fn sync_tree(root: &Path) -> Result<()> {
    let mut files = Vec::new();
    let mut dirs = Vec::new();
    collect(root, &mut files, &mut dirs)?;
    sync_all_parallel(&files)?;
    // Directories after their files (their entries name them), deepest first. Windows cannot
    // open a directory for fsync; there its entries are left to the OS.
    if cfg!(not(unix)) {
        return Ok(());
    }
    dirs.reverse();
    sync_all_parallel(&dirs)
}

/// Flushes a directory (its entries: files created or renamed in it).
pub(crate) fn sync_dir(dir: &Path) -> Result<()> {
    sync_path(dir).map_err(|e| Error::from(e).with_file(dir))
}

fn collect(dir: &Path, files: &mut Vec<PathBuf>, dirs: &mut Vec<PathBuf>) -> Result<()> {
    dirs.push(dir.to_path_buf());
    let entries = std::fs::read_dir(dir).map_err(|e| Error::from(e).with_file(dir))?;
    for entry in entries {
        let entry = entry.map_err(|e| Error::from(e).with_file(dir))?;
        let kind = entry
            .file_type()
            .map_err(|e| Error::from(e).with_file(entry.path()))?;
        if kind.is_dir() {
            collect(&entry.path(), files, dirs)?;
        } else {
            files.push(entry.path());
        }
    }
    Ok(())
}

/// fsync of one file or directory (opened read-only, which Linux allows for both).
pub(crate) fn sync_path(path: &Path) -> io::Result<()> {
    File::open(path)?.sync_all()
}

/// fsync waits on the disk, not the CPU: many at once let the file system commit them together,
/// so they run on their own short-lived threads rather than on the (CPU-sized) rayon pool.
fn sync_all_parallel(paths: &[PathBuf]) -> Result<()> {
    const THREADS: usize = 32;
    if paths.len() <= 1 {
        return paths
            .iter()
            .try_for_each(|p| sync_path(p).map_err(|e| Error::from(e).with_file(p)));
    }
    let per_thread = paths.len().div_ceil(THREADS);
    std::thread::scope(|scope| {
        let workers: Vec<_> = paths
            .chunks(per_thread)
            .map(|share| {
                scope.spawn(move || {
                    share
                        .iter()
                        .try_for_each(|p| sync_path(p).map_err(|e| Error::from(e).with_file(p)))
                })
            })
            .collect();
        workers
            .into_iter()
            .map(|w| {
                w.join()
                    .unwrap_or_else(|_| Err(Error::from(io::Error::other("fsync thread panicked"))))
            })
            .collect::<Result<Vec<()>>>()
            .map(|_| ())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A dataset of the tests: a directory with a file `MARK`.
    const MARKED: DatasetKind = DatasetKind {
        what: "marked set",
        marker: "MARK",
        is_dataset: is_marked,
    };

    fn is_marked(dir: &Path) -> bool {
        dir.join("MARK").is_file()
    }

    fn names(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn directories_commit_whole_durable_or_not() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("set");
        for (round, durable) in [(0, true), (1, false), (2, true)] {
            let mut out = AtomicDir::create(&target, MARKED).unwrap();
            out.set_durable(durable);
            std::fs::create_dir_all(out.path().join("a/b")).unwrap();
            std::fs::write(out.path().join("a/b/c"), format!("{round}")).unwrap();
            std::fs::write(out.path().join("MARK"), "").unwrap();
            assert!(!target.join("a/b/c").exists() || round > 0);
            out.commit(round > 0).unwrap();
            assert_eq!(
                std::fs::read_to_string(target.join("a/b/c")).unwrap(),
                round.to_string()
            );
        }
        // Only the target is left: no temporary or set-aside directories.
        assert_eq!(names(dir.path()), ["set"]);
        let refused = AtomicDir::create(&target, MARKED).unwrap().commit(false);
        assert!(refused.unwrap_err().class().is_usage());
    }

    #[test]
    fn a_directory_that_is_not_a_dataset_is_never_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("photos");
        std::fs::create_dir(&target).unwrap();
        std::fs::write(target.join("holiday.jpg"), b"mine").unwrap();
        let file = dir.path().join("notes.txt");
        std::fs::write(&file, b"mine too").unwrap();
        for (path, overwrite) in [(&target, true), (&target, false), (&file, true)] {
            let out = AtomicDir::create(path, MARKED).unwrap();
            std::fs::write(out.path().join("MARK"), "").unwrap();
            let error = out.commit(overwrite).unwrap_err();
            assert!(
                error.to_string().contains("exists and is not a marked set"),
                "{error}"
            );
            assert_eq!(error.class(), ErrorClass::Io);
        }
        assert_eq!(std::fs::read(target.join("holiday.jpg")).unwrap(), b"mine");
        assert_eq!(std::fs::read(&file).unwrap(), b"mine too");
        assert_eq!(names(dir.path()), ["notes.txt", "photos"]);
        // An empty directory is no dataset either (a plain rename would replace it).
        let empty = dir.path().join("empty");
        std::fs::create_dir(&empty).unwrap();
        let out = AtomicDir::create(&empty, MARKED).unwrap();
        std::fs::write(out.path().join("MARK"), "").unwrap();
        assert!(out.commit(true).is_err());
        assert!(!empty.join("MARK").exists());
    }

    #[test]
    #[cfg(unix)]
    fn a_device_or_fifo_is_a_stream_never_a_file_to_replace() {
        let null = Path::new("/dev/null");
        assert_eq!(
            check_target(null, Replaceable::File, false).unwrap(),
            Existing::Stream
        );
        let error = AtomicFile::create(null).err().unwrap();
        assert!(error.to_string().contains("character device"), "{error}");
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("pipe");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        assert_eq!(
            check_target(&fifo, Replaceable::Dataset(MARKED), true).unwrap(),
            Existing::Stream
        );
        assert!(AtomicFile::create(&fifo).is_err());
        let out = AtomicDir::create(&fifo, MARKED).unwrap();
        assert!(out.commit(true).is_err());
        use std::os::unix::fs::FileTypeExt;
        assert!(fifo.symlink_metadata().unwrap().file_type().is_fifo());
        assert_eq!(names(dir.path()), ["pipe"]);
    }

    #[test]
    #[cfg(unix)]
    fn stale_temporaries_go_and_live_ones_stay() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("out.parquet");
        // What killed writers left: a file, a directory tree.
        let stale_file = dir.path().join(".out.parquet.aB3xYz.tmp");
        std::fs::write(&stale_file, b"half").unwrap();
        let stale_dir = dir.path().join(".out.parquet.Qq9Rr0.tmp");
        std::fs::create_dir_all(stale_dir.join("c/d")).unwrap();
        // Not the target's temporaries: another target's, a name of another shape.
        let keep = [
            ".out.parquet.x.tmp",
            ".out.parquetX.abcdef.tmp",
            ".out.abcdef.tmp",
        ];
        for name in keep {
            std::fs::write(dir.path().join(name), b"keep").unwrap();
        }
        // A live writer's temporary, locked.
        let mut live = AtomicFile::create(&target).unwrap();
        live.write_all(b"new").unwrap();
        // The writer's create already removed the stale ones.
        assert!(!stale_file.exists() && !stale_dir.exists());
        std::fs::write(&stale_file, b"half").unwrap();
        assert_eq!(remove_stale_temps(&target), 1);
        assert_eq!(names(dir.path()).len(), keep.len() + 1);
        live.commit().unwrap();
        assert_eq!(std::fs::read(&target).unwrap(), b"new");
        let live_dir = AtomicDir::create(&dir.path().join("set"), MARKED).unwrap();
        assert_eq!(remove_stale_temps(&dir.path().join("set")), 0);
        assert!(live_dir.path().is_dir());
    }

    #[test]
    fn dropped_file_leaves_the_target_alone() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("out.bin");
        std::fs::write(&target, b"good").unwrap();
        {
            let mut f = AtomicFile::create(&target).unwrap();
            f.write_all(b"half").unwrap();
        }
        assert_eq!(std::fs::read(&target).unwrap(), b"good");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);

        let mut f = AtomicFile::create(&target).unwrap();
        f.write_all(b"new").unwrap();
        f.commit().unwrap();
        assert_eq!(std::fs::read(&target).unwrap(), b"new");
    }
}
