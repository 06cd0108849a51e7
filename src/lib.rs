//! arrowsmith reads legacy binary data formats straight into Apache Arrow `RecordBatch`es and
//! writes them from Arrow, so that Arrow is the one common representation.
//!
//! Each format has a module with the same shape (`jay`, …): a `ReaderBuilder` whose `build`
//! returns a reader that is both an `Iterator<Item = Result<RecordBatch, ArrowError>>` and a
//! `RecordBatchReader`, a `Writer` with `write(&batch)` and `finish()`, and a `mapping` file that
//! holds the format ↔ Arrow type mapping. [`open`] and [`create`] reach every format through one
//! entry point, choosing the format from the content or the file name; [`fragments`] splits any
//! input into pieces that [`open_fragment`] reads independently; [`inspect()`] reports what a
//! file holds, down to the format's own structure. An [`Input`] is a file of any format opened
//! and parsed once, from which its schema, row count, fragments and readers all come: what to
//! keep when one file is read more than once.
//!
//! ```no_run
//! use arrowsmith::{jay, ReadOptions, ScanOptions};
//!
//! // One format, explicitly:
//! let reader = jay::ReaderBuilder::new()
//!     .with_batch_size(65_536)
//!     .with_projection(["A", "B"])
//!     .build("data/jay/tiny.jay")?;
//! for batch in reader {
//!     println!("{} rows", batch?.num_rows());
//! }
//!
//! // Any format, by detection:
//! let reader = arrowsmith::open("data/jay/tiny.jay", &ReadOptions::default())?;
//! let summary = arrowsmith::write_all(reader, "tiny.parquet", &Default::default())?;
//! println!("wrote {} rows", summary.rows);
//!
//! // The same file opened once, in independently readable pieces:
//! let input = arrowsmith::Input::open("data/jay/tiny.jay", &ReadOptions::default())?;
//! println!("{} rows of {} columns", input.rows().unwrap_or(0), input.schema().fields().len());
//! for fragment in input.fragments(1_000)? {
//!     let rows: usize = input
//!         .fragment_reader(&fragment, &ScanOptions::default())?
//!         .map(|b| b.map(|b| b.num_rows()))
//!         .sum::<Result<_, _>>()?;
//!     println!("fragment {}: {rows} rows", fragment.index);
//! }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![warn(missing_docs)]
#![cfg_attr(docsrs, feature(doc_cfg))]

/// The README's example, compiled and run as a doctest.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;

pub mod atomic;
pub mod bcolz;
pub mod cancel;
pub mod dataseries;
mod dispatch;
pub mod ecosystem;
pub mod error;
pub mod filo;
pub mod format;
mod fragment;
pub mod input;
pub mod inspect;
pub mod jay;
mod location;
mod mapped;
pub mod options;
mod panic_guard;
mod pipeline;
pub mod read_ahead;
pub mod salvage;
pub mod scan;
pub mod sentinel;
pub mod source;
#[doc(hidden)]
pub mod test_hooks;
pub mod vs;
pub mod write;

pub use dispatch::{check_write, create, fragments, open, open_fragment, open_stream, write_all};
pub use error::{Error, ErrorClass, Result};
pub use format::Format;
pub use fragment::{Fragment, ObjectVersion};
pub use input::{is_stdin, Input, StreamInput};
pub use inspect::{inspect, InspectOptions};
pub use options::{
    FormatOptions, ReadOptions, Setting, SettingKind, WriteMode, WriteOptions, SETTINGS,
};
pub use read_ahead::{read_ahead, ReadAhead, DEFAULT_READ_AHEAD};
pub use salvage::{SalvageReport, Skipped};
pub use scan::{FragmentRange, Projection, ScanOptions, DEFAULT_BATCH_SIZE, DEFAULT_TARGET_ROWS};
pub use sentinel::CollisionPolicy;
pub use write::{BatchWriter, WriteSummary};
