//! HP Labs' DataSeries DSv1 (`.ds`): a self-describing file of extents, each holding records of
//! one ExtentType, compressed part by part.
//!
#![doc = include_str!("../../docs/dataseries.md")]

mod buffers;
mod byte_order;
pub mod checksum;
pub mod codec;
pub mod extent;
pub mod file;
pub mod mapping;
mod read_options;
mod reader;
pub mod types;
mod writer;

pub use byte_order::ByteOrder;
pub use codec::Mode;
pub use extent::{Checks, ExtentHeader};
pub use file::{DsFile, ExtentEntry, OpenOptions};
pub use mapping::Utf8Fields;
pub use read_options::ReaderOptions;
pub use reader::{choose_type, fragments, Reader, ReaderBuilder, TypedFile};
pub use types::{ExtentType, Kind};
pub use writer::{Compression, Writer, WriterOptions};

crate::write::record_batch_writer!(Writer);
