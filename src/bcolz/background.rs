//! Work handed to the rayon pool now and collected later: the reader's read-ahead decodes and
//! the writer's chunk jobs. Results come back through a channel, so the caller keeps its own
//! order and bounds how much is in flight.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::mpsc::{self, Receiver, TryRecvError};

/// The result of a job running on the rayon pool.
pub(super) struct Pending<T> {
    result: Receiver<T>,
}

/// Runs `job` on the rayon pool (first come, first served). A panic in the job is caught and
/// shows as `None` from [`Pending::wait`], never as an abort of the process.
pub(super) fn spawn<T: Send + 'static>(job: impl FnOnce() -> T + Send + 'static) -> Pending<T> {
    let (tx, rx) = mpsc::sync_channel(1);
    rayon::spawn_fifo(move || {
        if let Ok(value) = catch_unwind(AssertUnwindSafe(job)) {
            // The receiver is gone when its reader or writer was dropped early: nothing to do.
            let _ = tx.send(value);
        }
    });
    Pending { result: rx }
}

impl<T> Pending<T> {
    /// The job's result, once it is there; `None` if the job panicked.
    pub(super) fn wait(self) -> Option<T> {
        receive(&self.result)
    }
}

/// Blocks until `rx` yields a value (`None` once every sender is gone). On a rayon worker this
/// runs other pool jobs while waiting instead of blocking the thread, so a caller that is itself
/// a rayon job (or a one-thread pool) cannot deadlock on work queued behind it.
pub(super) fn receive<T>(rx: &Receiver<T>) -> Option<T> {
    if rayon::current_thread_index().is_none() {
        return rx.recv().ok();
    }
    loop {
        match rx.try_recv() {
            Ok(value) => return Some(value),
            Err(TryRecvError::Disconnected) => return None,
            Err(TryRecvError::Empty) => {
                if rayon::yield_now() != Some(rayon::Yield::Executed) {
                    std::thread::yield_now();
                }
            }
        }
    }
}
