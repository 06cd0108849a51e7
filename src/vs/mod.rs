//! VS, the vector-space data file of torao/anthidium: a header, TLV blocks (one meta block, one
//! block per point) and a `'$'` terminal. Each point holds application data (MessagePack) and a
//! vector of a fixed shape, read as an `arrow.fixed_shape_tensor` column. Files can be appended
//! to crash-safely, points deleted in place, and files compacted.
//!
#![doc = include_str!("../../docs/vs.md")]

pub mod codec;
mod gzip;
pub mod lock;
pub mod mapping;
pub mod msgpack_json;
mod read_options;
mod reader;
mod vector_codec;
mod writer;

pub use codec::{EofMode, Meta, ParseOptions, UnknownBlocks, VarintOrder};
pub use lock::{LockKind, LockWait};
pub use mapping::{Compression, Resolution};
pub use read_options::{AppDataMode, ReaderOptions};
pub use reader::{fragments, schema_for, BlockInfo, Description, Reader, ReaderBuilder, VsFile};
pub use writer::{
    append, compact, delete_ordinal, delete_point, write_file, AppendSummary, CompactSummary,
    Writer, WriterOptions,
};

crate::write::record_batch_writer!(Writer);
