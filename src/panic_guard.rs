//! Panic containment around arrow-rs and parquet calls that panic on malformed input.
//!
//! A file's bytes must never panic arrowsmith, but arrow-ipc and parquet 59 still panic on some
//! damaged input where they should return an error. [`quietly`] runs such a call under
//! [`std::panic::catch_unwind`] and turns a panic into a [`CaughtPanic`], which the caller
//! makes a data error naming the file and offset. Everything else in the crate checks the
//! bytes before it trusts them; this module is the last resort for what cannot be checked
//! beforehand.
//!
//! # What it costs a caller
//!
//! - **It relies on unwinding.** A program built with `panic = "abort"` loses the
//!   containment: the same malformed file then aborts the process instead of failing with an
//!   error. The checks that run before each call (the IPC message walker in
//!   `ecosystem/ipc.rs`, the Parquet footer walker in `ecosystem/parquet/footer.rs`) still
//!   refuse most damaged files without a panic, but not all.
//! - **It changes the process-wide panic hook,** once, on the first call: the hook it installs
//!   forwards every panic to the hook that was there before, except a panic on a thread that is
//!   inside [`quietly`] at that moment, whose message goes into the error instead of onto
//!   stderr. A program that sets its own hook *after* that first call replaces this one; the
//!   containment still works, only the message is printed as well.
//! - The library's state after a panic is not trusted: callers stop reading the input there
//!   (the Parquet batch reader ends; the IPC readers fail that message).
//!
//! # Upstream issues, and when this module can go
//!
//! | arrowsmith call | panics upstream on | upstream |
//! |---|---|---|
//! | `fb_to_schema` (IPC schema messages; a Parquet file's embedded `ARROW:schema`) | a schema without fields, an unknown type or bit width | apache/arrow-rs#10575, #10437, fixed by #10647 (`try_fb_to_schema`) |
//! | `read_record_batch`, `read_dictionary` | buffers and nodes that do not add up to the arrays they describe | apache/arrow-rs#7124, #8931 |
//! | `ParquetRecordBatchReader::next` | a data page that uses a dictionary its chunk never gave (`Decoder for dict should have been set`: no upstream issue found yet); out-of-range dictionary indices or index bit widths | apache/arrow-rs#9434, #10722 |
//!
//! Each call can leave this module when the arrow and parquet release arrowsmith depends on
//! returns errors for all of them (for the schema: once a release has `try_fb_to_schema`, which
//! replaces `fb_to_schema` here) and the regression tests of those fuzz findings
//! (docs/reliability.md) pass without the guard. The module goes when no call is left.

use std::cell::Cell;
use std::fmt;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Once;

/// A panic caught by [`quietly`]: its message, or a placeholder when the payload is not text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CaughtPanic(String);

impl fmt::Display for CaughtPanic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

thread_local!(static QUIET: Cell<bool> = const { Cell::new(false) });

/// Runs `call`, which may panic on malformed input, and returns its result, or the panic as a
/// [`CaughtPanic`]. The panic's message is not printed (see the module docs for the hook).
pub(crate) fn quietly<T>(call: impl FnOnce() -> T) -> Result<T, CaughtPanic> {
    static QUIET_HOOK: Once = Once::new();
    QUIET_HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !QUIET.with(Cell::get) {
                previous(info)
            }
        }));
    });

    let was_quiet = QUIET.with(|q| q.replace(true));
    let outcome = catch_unwind(AssertUnwindSafe(call));
    QUIET.with(|q| q.set(was_quiet));
    outcome.map_err(|panic| {
        let text = panic
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_else(|| "a panic without a message".to_string());
        CaughtPanic(text)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panic_becomes_its_message_and_a_value_passes_through() {
        assert_eq!(quietly(|| 7), Ok(7));
        let caught = quietly(|| -> u8 { panic!("bad width {}", 3) }).unwrap_err();
        assert_eq!(caught.to_string(), "bad width 3");
        // The thread is not left quiet: a later panic outside reaches the previous hook.
        assert!(!QUIET.with(Cell::get));
    }
}
