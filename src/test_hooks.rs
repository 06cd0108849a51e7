//! The hooks the fault tests drive through the environment: a process that kills itself at a
//! named step of a commit, and one that waits at a named point for a signal. Both cost one
//! environment look-up at the point, on paths that run once per output, so they stay compiled
//! into every build: the tests run the same binary a user runs.
//!
//! Steps of `ARROWSMITH_CRASH_AT`: `file-synced` (a file written and flushed, before its
//! rename), `dir-synced` (a directory written and flushed, before it is moved into place),
//! `dir-exchanged` (the new dataset in place, the old one not yet removed), `dir-aside` (the
//! fallback without an atomic swap: the old dataset moved aside, the new one not yet in
//! place), `vs-append-synced` and `bcolz-append-synced` (an append's new bytes flushed, before
//! the write that commits them).
//!
//! Points of `ARROWSMITH_PAUSE_AT`: `file-commit`, `dir-commit` (just before a stop request is
//! last checked, ahead of the rename), `jay-finish`, `vs-append-blocks`, `vs-append-commit`.

/// Makes the process kill itself (SIGKILL) at the named step of a commit.
#[doc(hidden)]
pub const CRASH_AT_ENV: &str = "ARROWSMITH_CRASH_AT";

/// Makes the process wait at the named point until a stop is requested (up to a minute).
#[doc(hidden)]
pub const PAUSE_AT_ENV: &str = "ARROWSMITH_PAUSE_AT";

fn named(variable: &str, name: &str) -> bool {
    std::env::var_os(variable).is_some_and(|v| v == name)
}

/// Dies at once, as a kill -9 would, when [`CRASH_AT_ENV`] names `step`.
pub(crate) fn crash_point(step: &str) {
    if !named(CRASH_AT_ENV, step) {
        return;
    }
    #[cfg(unix)]
    // SAFETY: sending a signal to this process.
    unsafe {
        libc::kill(libc::getpid(), libc::SIGKILL);
    }
    std::process::abort();
}

/// Says `arrowsmith: paused at <point>` on standard error and waits there for a stop request
/// (up to a minute), when [`PAUSE_AT_ENV`] names `point`, so that a test can send a signal at
/// a chosen moment of a write.
pub(crate) fn pause_point(point: &str) {
    if !named(PAUSE_AT_ENV, point) {
        return;
    }
    eprintln!("arrowsmith: paused at {point}");
    let until = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !crate::cancel::requested() && std::time::Instant::now() < until {
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}
