//! Filo, the binary vector format of velvia/filo 0.2.x (the storage of early FiloDB): one
//! FlatBuffers vector per column chunk, and the "Filo set" directory that arrowsmith uses to
//! store whole tables of them.
//!
//! The module has the shape of the other formats:
//!
//! - `mapping`: Filo element types ↔ Arrow types.
//! - `set`: the set's layout: `schema.json` ([`SetInfo`], opened once and shared), where each
//!   column chunk lives ([`column_file`]) and how one is read ([`read_column_chunk`]).
//! - `reader`: [`ReaderBuilder`] and [`Reader`] of a set, and its [`fragments`] (runs of
//!   chunks); [`ReaderBuilder::build_from_file`] reads a set already opened.
//! - `writer`: [`WriterOptions`] and [`Writer`] of a set.
//! - `vector`: one bare vector file as a one-column table ([`VectorReaderBuilder`],
//!   [`VectorReader`], [`VectorWriter`]).
//! - `decode` and `encode`: one vector ↔ one Arrow array ([`decode`], [`encode`]); `builder`
//!   writes the FlatBuffer bytes as filo's Java runtime lays them out.
//!
#![doc = include_str!("../../docs/filo.md")]

mod builder;
mod decode;
mod encode;
mod gen;
pub mod mapping;
mod read_options;
mod reader;
mod set;
mod vector;
mod writer;

pub use decode::{
    decode, decode_buffer, decode_rows, decode_rows_buffer, fuzz_decode, header, inspect, MaskKind,
    VectorInfo, WireType, MAX_EMPTY_LEN,
};
pub use encode::{encode, encode_array, should_diff, width, EncodeOptions, Hint};
pub use mapping::FiloType;
pub use read_options::ReaderOptions;
pub use reader::{fragments, Reader, ReaderBuilder};
pub(crate) use set::DATASET;
pub use set::{
    chunk_dir, column_file, column_key, read_column_chunk, read_column_chunk_as, SetColumn,
    SetInfo, DEFAULT_CHUNK_SIZE, SET_FORMAT,
};
pub use vector::{VectorReader, VectorReaderBuilder, VectorWriter, VECTOR_COLUMN};
pub use writer::{Writer, WriterOptions};

crate::write::record_batch_writer!(Writer, VectorWriter);
