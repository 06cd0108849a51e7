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

mod dir;
mod remote;
mod stream;
mod sync;
mod target;
mod temps;

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use tempfile::NamedTempFile;

use crate::error::{Error, ErrorClass, Result};

pub use dir::AtomicDir;
pub(crate) use remote::{ObjectSink, RemoteOutput};
pub(crate) use stream::Destination;
pub use stream::{StreamOutput, SINK_NAME};
pub(crate) use sync::{sync_dir, sync_path};
pub use target::{check_target, refuse_stream, DatasetKind, Existing, Replaceable};
pub use temps::remove_stale_temps;
use temps::{hold, temp_sibling, TEMP_ATTEMPTS};

/// The directory a target lives in: its temporary sibling goes there, since a rename is atomic
/// only within one file system.
pub(crate) fn parent_dir(target: &Path) -> &Path {
    match target.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

/// The mode of a new file before the umask.
const FILE_MODE: u32 = 0o666;

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
