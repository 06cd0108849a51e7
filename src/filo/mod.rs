//! Filo, the binary vector format of velvia/filo 0.2.x (the storage of early FiloDB): one
//! FlatBuffers vector per column chunk, and the "Filo set" directory that arrowsmith uses to
//! store whole tables of them.
//!
#![doc = include_str!("../../docs/filo.md")]

mod builder;
mod decode;
mod encode;
mod gen;
pub mod mapping;
mod set;
mod vector;

pub use decode::{
    decode, decode_buffer, decode_rows, decode_rows_buffer, fuzz_decode, header, inspect, MaskKind,
    VectorInfo, WireType, MAX_EMPTY_LEN,
};
pub use encode::{encode, encode_array, should_diff, width, EncodeOptions, Hint};
pub use mapping::FiloType;
pub(crate) use set::DATASET;
pub use set::{
    chunk_dir, column_file, fragments, read_column_chunk, read_column_chunk_as, Reader,
    ReaderBuilder, SetColumn, SetInfo, Writer, WriterOptions, DEFAULT_CHUNK_SIZE, SET_FORMAT,
};
pub use vector::{VectorReader, VectorWriter, VECTOR_COLUMN};

crate::write::record_batch_writer!(Writer, VectorWriter);
