//! Jobs on the rayon pool whose results the caller takes oldest first, while it goes on: the
//! DataSeries writer packs and compresses extents this way and writes them in row order, the
//! Jay reader decodes the next batches while the caller handles the current one.

use std::collections::VecDeque;
use std::panic::{self, AssertUnwindSafe};
use std::sync::mpsc::{self, Receiver, TryRecvError};
use std::thread;

/// Jobs under way, oldest first; each delivers its result through its own channel.
pub(crate) struct Pipeline<T> {
    pending: VecDeque<Receiver<thread::Result<T>>>,
}

impl<T: Send + 'static> Pipeline<T> {
    pub(crate) fn new() -> Self {
        Pipeline {
            pending: VecDeque::new(),
        }
    }

    /// Jobs submitted and not yet taken.
    pub(crate) fn len(&self) -> usize {
        self.pending.len()
    }

    /// Starts `job` on the pool. Jobs start in the order they are submitted (FIFO even from a
    /// pool thread), so the oldest, which the caller waits for first, is never left behind.
    pub(crate) fn submit(&mut self, job: impl FnOnce() -> T + Send + 'static) {
        let (tx, rx) = mpsc::sync_channel(1);
        rayon::spawn_fifo(move || {
            // The receiver is gone only when the writer was dropped: nobody wants the result.
            let _ = tx.send(panic::catch_unwind(AssertUnwindSafe(job)));
        });
        self.pending.push_back(rx);
    }

    /// The oldest job's result if it has finished.
    pub(crate) fn try_next(&mut self) -> Option<T> {
        let rx = self.pending.front()?;
        match rx.try_recv() {
            Ok(done) => {
                self.pending.pop_front();
                Some(unwind(done))
            }
            Err(TryRecvError::Empty) => None,
            Err(TryRecvError::Disconnected) => unreachable!("every job sends its result"),
        }
    }

    /// The oldest job's result, waiting for it; `None` when no job is under way.
    pub(crate) fn next(&mut self) -> Option<T> {
        let rx = self.pending.pop_front()?;
        loop {
            match rx.try_recv() {
                Ok(done) => return Some(unwind(done)),
                Err(TryRecvError::Empty) => {}
                Err(TryRecvError::Disconnected) => unreachable!("every job sends its result"),
            }
            // A caller on a pool thread runs queued jobs while it waits: blocking would take a
            // worker from the pool its own jobs need (all of it, in a one-thread pool).
            match rayon::yield_now() {
                None => {
                    let done = rx.recv().expect("every job sends its result");
                    return Some(unwind(done));
                }
                Some(rayon::Yield::Idle) => thread::yield_now(),
                Some(rayon::Yield::Executed) => {}
            }
        }
    }
}

/// A job's value, or its panic continued on the caller's thread (as a parallel iterator
/// would propagate it).
fn unwind<T>(done: thread::Result<T>) -> T {
    done.unwrap_or_else(|payload| panic::resume_unwind(payload))
}
