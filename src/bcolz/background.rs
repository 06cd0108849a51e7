//! Work handed to the rayon pool now and collected later: the reader's read-ahead decodes and
//! the writer's chunk jobs. Results come back through a channel, so the caller keeps its own
//! order and bounds how much is in flight.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::mpsc::{self, Receiver, SyncSender, TryRecvError};

/// The result of a job running on the rayon pool.
pub(super) struct Pending<T> {
    result: Receiver<T>,
}

/// Runs `job` on the rayon pool (first come, first served) and sends its result into `tx`.
/// A panic in the job is caught and drops `tx`, which its [`Pending`] shows as `None`, never
/// as an abort of the process.
pub(super) fn spawn_into<T: Send + 'static>(
    tx: SyncSender<T>,
    job: impl FnOnce() -> T + Send + 'static,
) {
    rayon::spawn_fifo(move || {
        if let Ok(value) = catch_unwind(AssertUnwindSafe(job)) {
            // The receiver is gone when its reader or writer was dropped early: nothing to do.
            let _ = tx.send(value);
        }
    });
}

/// `n` results to come: the senders to hand to the work that produces them, and what waits
/// for each.
pub(super) fn channels<T>(n: usize) -> (Vec<SyncSender<T>>, Vec<Pending<T>>) {
    (0..n)
        .map(|_| {
            let (tx, rx) = mpsc::sync_channel(1);
            (tx, Pending { result: rx })
        })
        .unzip()
}

/// Runs `job` off the caller's thread: on the rayon pool when `on_pool` (work that computes or
/// touches only local memory), else on a thread of its own (work that waits on the network
/// and would hold a pool thread that decodes). A panic in it ends it, nothing more.
pub(super) fn detach(on_pool: bool, job: impl FnOnce() + Send + 'static) {
    let job = move || {
        let _ = catch_unwind(AssertUnwindSafe(job));
    };
    if on_pool {
        rayon::spawn_fifo(job);
    } else {
        // Without a thread to be had, the job is dropped with the senders it holds, and
        // whoever waits on them gets `None` (an error), never a hang.
        let _ = std::thread::Builder::new()
            .name("arrowsmith-fetch".into())
            .spawn(job);
    }
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
