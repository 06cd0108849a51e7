//! Rust for the Jay FlatBuffers schema (`schema/jay.fbs`), written by `scripts/flatc.sh` and
//! never edited by hand. The lints waived here are about the code flatc writes, so each waiver
//! covers only this module and says which habit of flatc it is for.

#[allow(
    clippy::all,
    reason = "flatc's accessors and builders trip style lints (needless lifetimes, derivable impls)"
)]
#[allow(
    unsafe_op_in_unsafe_fn,
    reason = "flatc calls unsafe functions inside `unsafe fn` bodies without inner `unsafe` blocks"
)]
#[allow(
    mismatched_lifetime_syntaxes,
    reason = "flatc elides the lifetimes of returned tables that its arguments name"
)]
#[allow(
    dead_code,
    reason = "the schema has tables, builders and verifiers that arrowsmith never calls"
)]
#[allow(
    unused_imports,
    reason = "flatc imports `core::mem` and `core::cmp::Ordering` in every module"
)]
#[rustfmt::skip]
mod jay_generated;

pub(crate) use jay_generated::jay;
