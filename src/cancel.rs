//! Stopping a write from outside, before its commit point.
//!
//! A program that catches SIGINT or SIGTERM (the `arrowsmith` command does) calls [`request`]
//! from its handler. Every writer polls the request between batches it reads itself (a VS
//! `append`), between columns and blocks of its final work (the Jay writer's `finish`, a VS
//! append's blocks) and last just before its commit (the rename into place, or the byte that
//! makes a VS append visible). A writer that sees the request gives up with an `io` error whose
//! [`io_kind`](crate::Error::io_kind) is [`Interrupted`](std::io::ErrorKind::Interrupted); its
//! unfinished output is removed as after any failure, so nothing is written. After the commit
//! the write is complete and a request no longer changes it.
//!
//! The request is process-wide, as signals are, and stays until [`clear`].

use std::sync::atomic::{AtomicBool, Ordering};

use crate::error::{Error, ErrorClass, Result};

static REQUESTED: AtomicBool = AtomicBool::new(false);

/// Asks every write in progress to stop before its commit point. Async-signal-safe: a single
/// atomic store, so a signal handler may call it.
pub fn request() {
    REQUESTED.store(true, Ordering::SeqCst);
}

/// Whether [`request`] was called (and not [`clear`]ed since).
pub fn requested() -> bool {
    REQUESTED.load(Ordering::SeqCst)
}

/// Withdraws a request, so that later writes run to their end.
pub fn clear() {
    REQUESTED.store(false, Ordering::SeqCst);
}

/// The error of a write that stopped on request.
pub(crate) fn cancelled() -> Error {
    Error::new(
        ErrorClass::Io,
        "the write was cancelled before its commit; nothing was written",
    )
    .with_source(std::io::Error::from(std::io::ErrorKind::Interrupted))
}

/// `Err` when a stop was requested: for the writers to poll between units of work.
pub(crate) fn check() -> Result<()> {
    if requested() {
        Err(cancelled())
    } else {
        Ok(())
    }
}
