//! Flushing a finished dataset directory to disk before it is renamed into place.
//!
//! The writer builds the dataset in a hidden directory that no reader sees until `finish()`
//! renames it to the target. For that rename to be crash-safe, every file and directory in it
//! must be on disk first; then the rename itself is made durable by flushing the parent.
//! The chunk jobs never wait on the disk for this: each asks the kernel to start writing its
//! file out at once ([`start_writeback`]) and hands its path to a [`Syncer`], a few I/O threads
//! that fsync chunk files while later chunks are compressed. What is left at the end (the last
//! chunks, the metadata, the directories) is flushed by the durable commit of the
//! [`AtomicDir`](crate::atomic::AtomicDir), which fsyncs every file of the dataset again:
//! cheap for files already clean, and the guarantee does not depend on the syncer having seen
//! every file.

use std::fs::File;
use std::io;
use std::path::PathBuf;
use std::sync::{mpsc, Arc, Mutex};
use std::thread::JoinHandle;

use crate::error::{Error, Result};

/// Asks the kernel to start writing a just-written file out (Linux; elsewhere nothing), so that
/// the disk works while the next chunks are compressed and the final flush has little left.
pub(super) fn start_writeback(file: &File) {
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd;
        // SAFETY: a valid open descriptor; the call only starts asynchronous writeback of the
        // file's dirty pages (offset 0, length 0 = the whole file). Its result is ignored:
        // the flush before the rename is what the durability rests on.
        unsafe {
            libc::sync_file_range(file.as_raw_fd(), 0, 0, libc::SYNC_FILE_RANGE_WRITE);
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = file;
}

enum SyncRequest {
    /// A path, not the open file: a syncer lagging behind the disk must not pile up descriptors.
    Flush(PathBuf),
    Stop,
}

/// Where chunk jobs hand their written files to be flushed (a clone of the [`Syncer`]'s queue).
#[derive(Debug, Clone)]
pub(super) struct SyncQueue(mpsc::Sender<SyncRequest>);

impl std::fmt::Debug for SyncRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SyncRequest::Flush(path) => write!(f, "Flush({})", path.display()),
            SyncRequest::Stop => f.write_str("Stop"),
        }
    }
}

impl SyncQueue {
    /// Queues the file just written at `path` to be flushed to disk by the syncer threads.
    pub(super) fn flush_later(&self, path: PathBuf) {
        // Gone only once the syncer has stopped (the writer was dropped): nothing to flush for.
        let _ = self.0.send(SyncRequest::Flush(path));
    }
}

/// A few threads that fsync the files queued to them, in the background; the first error is
/// reported by [`Syncer::finish`].
pub(super) struct Syncer {
    queue: SyncQueue,
    threads: Vec<JoinHandle<Result<()>>>,
}

impl Syncer {
    /// fsyncs wait on the disk, not the CPU: these threads sleep most of the time, and several
    /// at once let the file system commit their files together.
    const THREADS: usize = 4;

    pub(super) fn start() -> Syncer {
        let (tx, rx) = mpsc::channel::<SyncRequest>();
        let rx = Arc::new(Mutex::new(rx));
        let threads = (0..Self::THREADS)
            .map(|_| {
                let rx = rx.clone();
                std::thread::spawn(move || {
                    let mut first_error = None;
                    loop {
                        let request = rx
                            .lock()
                            .map_err(|_| ())
                            .and_then(|r| r.recv().map_err(|_| ()));
                        match request {
                            Ok(SyncRequest::Flush(path)) => {
                                if first_error.is_none() {
                                    if let Err(e) = crate::atomic::sync_path(&path) {
                                        first_error = Some(Error::from(e).with_file(path));
                                    }
                                }
                            }
                            Ok(SyncRequest::Stop) | Err(()) => break,
                        }
                    }
                    first_error.map_or(Ok(()), Err)
                })
            })
            .collect();
        Syncer {
            queue: SyncQueue(tx),
            threads,
        }
    }

    pub(super) fn queue(&self) -> SyncQueue {
        self.queue.clone()
    }

    /// Flushes everything queued so far, stops the threads; the first error if one failed.
    pub(super) fn finish(mut self) -> Result<()> {
        self.stop()
    }

    fn stop(&mut self) -> Result<()> {
        for _ in 0..self.threads.len() {
            let _ = self.queue.0.send(SyncRequest::Stop);
        }
        let mut result = Ok(());
        for thread in self.threads.drain(..) {
            let outcome = thread
                .join()
                .unwrap_or_else(|_| Err(Error::from(io::Error::other("an fsync thread panicked"))));
            if result.is_ok() {
                result = outcome;
            }
        }
        result
    }
}

impl Drop for Syncer {
    fn drop(&mut self) {
        let _ = self.stop();
    }
}
