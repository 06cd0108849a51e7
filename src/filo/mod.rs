//! Filo, the binary vector format of velvia/filo 0.2.x (the storage of early FiloDB): one
//! FlatBuffers vector per column chunk, and the "Filo set" directory that arrowsmith uses to
//! store whole tables of them. See `docs/filo.md` for the Arrow mapping and the encodings the
//! writer picks, and `specs/filo.md` for the bytes.
//!
//! `filo_generated.rs` is generated from `schema/filo/*.fbs` by `scripts/flatc.sh`.

#[allow(
    clippy::all,
    unsafe_op_in_unsafe_fn,
    mismatched_lifetime_syntaxes,
    dead_code,
    unused_imports,
    non_snake_case
)]
#[rustfmt::skip]
mod filo_generated;
mod builder;
mod decode;
mod encode;
pub mod mapping;
mod set;
mod vector;

pub use decode::{
    decode, decode_rows, fuzz_decode, header, inspect, MaskKind, VectorInfo, WireType,
    MAX_EMPTY_LEN,
};
pub use encode::{encode, encode_array, should_diff, width, EncodeOptions, Hint};
pub use mapping::FiloType;
pub use set::{
    chunk_dir, column_file, fragments, read_column_chunk, read_column_chunk_as, Reader,
    ReaderBuilder, SetColumn, SetInfo, Writer, WriterOptions, DEFAULT_CHUNK_SIZE, SET_FORMAT,
};
pub use vector::{VectorReader, VectorWriter, VECTOR_COLUMN};
