//! Jay, the binary format of h2oai/datatable (`Frame.to_jay()`): one frame per file, each
//! column one contiguous little-endian buffer (or a few), described by a FlatBuffers record at
//! the end of the file.
//!
#![doc = include_str!("../../docs/jay.md")]

mod gen;
pub mod mapping;
mod meta;
mod ranged;
mod read_options;
mod reader;
mod writer;

pub use meta::{BufferRange, ColumnInfo, FrameInfo, Layout, Stats};
pub use read_options::ReaderOptions;
pub use reader::{fragments, JayFile, Reader, ReaderBuilder, DEFAULT_MAX_DATALESS_ROWS};
pub use writer::{Writer, WriterOptions};

crate::write::record_batch_writer!(Writer);
