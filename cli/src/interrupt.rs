//! Ctrl-C (SIGINT), SIGTERM and SIGHUP during `convert` and `sql`: the command stops after the
//! batch in hand, and a writer busy with its final work (the Jay writer's `finish`, a VS
//! `--append`) stops at its next check ([`arrowsmith::cancel`]), so that unwinding removes the
//! unfinished output instead of committing it. Up to the commit point the exit is 128 + the
//! signal (130 for SIGINT, 143 for SIGTERM) and nothing is written; after it the output is
//! whole and the exit 0. A second signal acts as usual (the handler removes itself).

use std::sync::atomic::{AtomicI32, Ordering};

static SIGNAL: AtomicI32 = AtomicI32::new(0);

/// Starts catching the signals (where they are not ignored already, as under `nohup`).
#[cfg(unix)]
pub(crate) fn install() {
    extern "C" fn on_signal(signal: libc::c_int) {
        SIGNAL.store(signal, Ordering::SeqCst);
        arrowsmith::cancel::request();
        // SAFETY: `signal` is async-signal-safe; restoring the default lets a second signal
        // end the process at once.
        unsafe {
            libc::signal(signal, libc::SIG_DFL);
        }
    }
    for signal in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        // SAFETY: installs a handler that only stores to an atomic and calls `signal`.
        unsafe {
            let handler = on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
            if libc::signal(signal, handler) == libc::SIG_IGN {
                libc::signal(signal, libc::SIG_IGN);
            }
        }
    }
}

#[cfg(not(unix))]
pub(crate) fn install() {}

/// The signal received since [`install`], if any.
pub(crate) fn received() -> Option<i32> {
    match SIGNAL.load(Ordering::SeqCst) {
        0 => None,
        signal => Some(signal),
    }
}
