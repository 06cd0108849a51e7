//! Output that appears whole or not at all: a writer fills a temporary file beside the target
//! and renames it over the target only when everything has been written. Dropping an
//! uncommitted [`AtomicFile`] deletes the temporary file, so a failed write leaves an existing
//! target untouched and never a half-written file.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use tempfile::NamedTempFile;

use crate::error::{Error, Result};

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
    pub fn create(target: &Path) -> Result<AtomicFile> {
        let temp = temp_sibling(target, FILE_MODE, |b, dir| b.tempfile_in(dir))?;
        Ok(AtomicFile {
            writer: BufWriter::with_capacity(1 << 20, temp),
            target: target.to_path_buf(),
            durable: true,
        })
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
        }
    }

    /// Where to write one large piece: a file itself once its buffer is flushed (so the piece
    /// is not copied through the buffer), else the buffered stream.
    pub fn unbuffered(&mut self) -> io::Result<&mut dyn Write> {
        Ok(match self {
            StreamOutput::File(file) => file.file_mut()?,
            StreamOutput::Stdout(out) => out,
            StreamOutput::Sink(out) => out,
        })
    }

    /// Standard output for `-`, else an [`AtomicFile`] at `target`.
    pub fn create(target: &Path) -> Result<StreamOutput> {
        if target == Path::new("-") {
            Ok(StreamOutput::Stdout(BufWriter::with_capacity(
                1 << 20,
                io::stdout(),
            )))
        } else {
            Ok(StreamOutput::File(AtomicFile::create(target)?))
        }
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
        }
    }
}

impl Write for StreamOutput {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            StreamOutput::File(f) => f.write(buf),
            StreamOutput::Stdout(o) => o.write(buf),
            StreamOutput::Sink(o) => o.write(buf),
        }
    }
    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        match self {
            StreamOutput::File(f) => f.write_all(buf),
            StreamOutput::Stdout(o) => o.write_all(buf),
            StreamOutput::Sink(o) => o.write_all(buf),
        }
    }
    fn flush(&mut self) -> io::Result<()> {
        match self {
            StreamOutput::File(f) => f.flush(),
            StreamOutput::Stdout(o) => o.flush(),
            StreamOutput::Sink(o) => o.flush(),
        }
    }
}

/// Where a single-file writer is to send its bytes, before anything is opened: a writer checks
/// its options and schema first, naming [`Destination::name`] in its errors, and opens the
/// output only once they pass, so a refused write never creates a temporary file.
pub(crate) enum Destination {
    /// A new file at the path, renamed into place at the commit.
    File(PathBuf),
    /// A new file at the path, or standard output when the path is `-`.
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
/// of the target and renamed into place by [`AtomicDir::commit`]. Dropping it uncommitted
/// removes the temporary directory.
pub struct AtomicDir {
    temp: Option<tempfile::TempDir>,
    target: PathBuf,
    durable: bool,
}

impl AtomicDir {
    /// Starts a temporary directory beside the target (a rename is atomic only within one file
    /// system, so it must sit in the target's parent).
    pub fn create(target: &Path) -> Result<AtomicDir> {
        let temp = temp_sibling(target, DIR_MODE, |b, dir| b.tempdir_in(dir))?;
        Ok(AtomicDir {
            temp: Some(temp),
            target: target.to_path_buf(),
            durable: true,
        })
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

    /// Renames the finished directory into place. An existing target is refused unless
    /// `overwrite`; then it is renamed aside, the new one renamed in, and the old one removed.
    pub fn commit(mut self, overwrite: bool) -> Result<()> {
        let target = self.target.clone();
        let io = |e: io::Error| Error::from(e).with_file(&target);
        let exists = target.symlink_metadata().is_ok();
        if exists && !overwrite {
            return Err(Error::invalid_argument(
                "the output already exists; ask for it to be overwritten",
            )
            .with_file(&target));
        }
        if self.durable {
            if let Some(temp) = &self.temp {
                sync_tree(temp.path()).map_err(|e| e.with_file(&target))?;
            }
        }
        let temp = self.temp.take().expect("committed once").keep();
        let renamed = if exists {
            let aside = temp.with_extension("old");
            std::fs::rename(&target, &aside)
                .and_then(|_| std::fs::rename(&temp, &target))
                .and_then(|_| {
                    if aside.is_dir() {
                        std::fs::remove_dir_all(&aside)
                    } else {
                        std::fs::remove_file(&aside)
                    }
                })
        } else {
            std::fs::rename(&temp, &target)
        };
        if let Err(e) = renamed {
            let _ = std::fs::remove_dir_all(&temp);
            return Err(io(e));
        }
        if self.durable {
            sync_parent(&target)?;
        }
        Ok(())
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

    #[test]
    fn directories_commit_whole_durable_or_not() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("set");
        for (round, durable) in [(0, true), (1, false), (2, true)] {
            let mut out = AtomicDir::create(&target).unwrap();
            out.set_durable(durable);
            std::fs::create_dir_all(out.path().join("a/b")).unwrap();
            std::fs::write(out.path().join("a/b/c"), format!("{round}")).unwrap();
            assert!(!target.join("a/b/c").exists() || round > 0);
            out.commit(round > 0).unwrap();
            assert_eq!(
                std::fs::read_to_string(target.join("a/b/c")).unwrap(),
                round.to_string()
            );
        }
        // Only the target is left: no temporary or set-aside directories.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
        let refused = AtomicDir::create(&target).unwrap().commit(false);
        assert!(refused.unwrap_err().class().is_usage());
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
