//! Jobs on the rayon pool whose results the caller takes oldest first, while it goes on: the
//! DataSeries writer packs and compresses extents this way and writes them in row order, the
//! Jay reader decodes the next batches while the caller handles the current one.
//!
//! Dropping a pipeline (a reader or writer dropped unfinished, on an error or while a panic
//! unwinds) cancels the jobs not yet started and waits for those running: once the drop
//! returns, none of its jobs reads the input or holds memory any more.

use std::collections::VecDeque;
use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, TryRecvError};
use std::sync::Arc;
use std::thread;

/// Jobs under way, oldest first; each delivers its result through its own channel.
pub(crate) struct Pipeline<T> {
    pending: VecDeque<Receiver<thread::Result<T>>>,
    /// Set when the pipeline is dropped: a job that has not started then does not run.
    cancelled: Arc<AtomicBool>,
}

impl<T: Send + 'static> Pipeline<T> {
    pub(crate) fn new() -> Self {
        Pipeline {
            pending: VecDeque::new(),
            cancelled: Arc::default(),
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
        let cancelled = Arc::clone(&self.cancelled);
        rayon::spawn_fifo(move || {
            // A job of a dropped pipeline drops its sender unsent: the drop, waiting, sees it
            // end without running.
            if !cancelled.load(Ordering::Acquire) {
                let _ = tx.send(panic::catch_unwind(AssertUnwindSafe(job)));
            }
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
            Err(TryRecvError::Disconnected) => {
                unreachable!("a job of a live pipeline sends its result")
            }
        }
    }

    /// The oldest job's result, waiting for it; `None` when no job is under way.
    pub(crate) fn next(&mut self) -> Option<T> {
        let rx = self.pending.pop_front()?;
        let done = wait(&rx).expect("a job of a live pipeline sends its result");
        Some(unwind(done))
    }
}

impl<T> Drop for Pipeline<T> {
    /// Cancels the jobs not yet started and waits for the running ones, dropping their
    /// results (a job's panic included: this may run while another panic unwinds).
    fn drop(&mut self) {
        self.cancelled.store(true, Ordering::Release);
        for rx in self.pending.drain(..) {
            drop(wait(&rx));
        }
    }
}

/// The result `rx` receives, waiting for it; `None` when its job ended without sending one
/// (cancelled). A caller on a pool thread runs queued jobs while it waits: blocking would take
/// a worker from the pool its own jobs need (all of it, in a one-thread pool).
fn wait<T>(rx: &Receiver<thread::Result<T>>) -> Option<thread::Result<T>> {
    loop {
        match rx.try_recv() {
            Ok(done) => return Some(done),
            Err(TryRecvError::Disconnected) => return None,
            Err(TryRecvError::Empty) => {}
        }
        match rayon::yield_now() {
            None => return rx.recv().ok(),
            Some(rayon::Yield::Idle) => thread::yield_now(),
            Some(rayon::Yield::Executed) => {}
        }
    }
}

/// A job's value, or its panic continued on the caller's thread (as a parallel iterator
/// would propagate it).
fn unwind<T>(done: thread::Result<T>) -> T {
    done.unwrap_or_else(|payload| panic::resume_unwind(payload))
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicUsize;
    use std::time::Duration;

    use super::*;

    #[test]
    fn a_dropped_pipeline_waits_for_its_running_jobs_and_starts_no_other() {
        let started = Arc::new(AtomicUsize::new(0));
        let running = Arc::new(AtomicUsize::new(0));
        let jobs = 4 * rayon::current_num_threads() + 4;
        let mut pipeline = Pipeline::new();
        for _ in 0..jobs {
            let (started, running) = (Arc::clone(&started), Arc::clone(&running));
            pipeline.submit(move || {
                started.fetch_add(1, Ordering::SeqCst);
                running.fetch_add(1, Ordering::SeqCst);
                thread::sleep(Duration::from_millis(30));
                running.fetch_sub(1, Ordering::SeqCst);
            });
        }
        while started.load(Ordering::SeqCst) == 0 {
            thread::yield_now();
        }
        drop(pipeline);
        assert_eq!(
            running.load(Ordering::SeqCst),
            0,
            "a job ran on after the drop"
        );
        let after = started.load(Ordering::SeqCst);
        thread::sleep(Duration::from_millis(100));
        assert_eq!(
            started.load(Ordering::SeqCst),
            after,
            "a job started after the drop"
        );
        assert!(
            after < jobs,
            "the jobs not yet started were run, not cancelled"
        );
    }

    #[test]
    fn a_pipeline_dropped_on_a_pool_thread_runs_its_queued_jobs_instead_of_blocking() {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .build()
            .unwrap();
        let finished = pool.install(|| {
            let mut pipeline = Pipeline::new();
            for i in 0..4 {
                pipeline.submit(move || i);
            }
            assert_eq!(pipeline.next(), Some(0));
            drop(pipeline);
            true
        });
        assert!(finished);
    }
}
