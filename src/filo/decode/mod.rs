//! One Filo vector → one Arrow array (specs/filo.md sections 3–11).
//!
//! The FlatBuffer is checked by the `flatbuffers` verifier (bounds, alignment relative to the
//! FlatBuffer's start, string terminators and UTF-8) before any field is read, and every size
//! taken from it is checked against the buffer before anything sized by it is allocated.
//! 8-byte items of a Filo vector sit at file offsets ≡ 4 (mod 8), so numbers are read with
//! unaligned little-endian loads into fresh Arrow buffers.
//!
//! The work divides by vector kind: `wire` reads the header word and what the tables say
//! ([`inspect`]), `table` the FlatBuffer's checked fields and NA masks, `ints` packed
//! integers, and `numbers`, `strings` and `datetime` decode the vectors of each kind.

mod datetime;
mod ints;
mod numbers;
mod strings;
mod table;
mod wire;

use arrow_array::{new_null_array, Array, ArrayRef};
use arrow_buffer::Buffer;
use arrow_schema::DataType;

use super::mapping::FiloType;
use crate::error::{Error, ErrorClass, Result};
pub use table::MaskKind;
pub use wire::{header, inspect, VectorInfo, WireType};

/// The largest length of an EmptyVector (24 bits of the header).
pub const MAX_EMPTY_LEN: usize = 0xFF_FFFF;

/// The most string bytes a ConstStringVector expands to, unless 64 per byte of the vector is
/// more: what the longest constant vector of 8-byte numbers takes (`MAX_EMPTY_LEN` × 8).
const MAX_CONST_STRING_BYTES: usize = MAX_EMPTY_LEN * 8;

/// Decodes one Filo vector into an Arrow array of `data_type` (section 10.2 says which types
/// each vector can be read as). The array has no null buffer when no element is NA.
pub fn decode(bytes: &[u8], data_type: &DataType) -> Result<ArrayRef> {
    decode_from(bytes, None, data_type)
}

/// [`decode`] of a vector held in an Arrow buffer (a mapped file, say): the values of a plain
/// Double, Float, 32-bit Int, 64-bit Long or Timestamp vector, and a Boolean bitmap, are then
/// sliced out of `bytes` without a copy where they are aligned for their type, as Arrow
/// requires. Writers align a body to its element size within the FlatBuffer, which follows the
/// vector's 4-byte header: 32-bit values and bitmaps are aligned and shared, 64-bit values sit
/// 4 bytes off an 8-byte boundary in every file filo or arrowsmith writes, and are copied.
pub fn decode_buffer(bytes: &Buffer, data_type: &DataType) -> Result<ArrayRef> {
    decode_from(bytes.as_slice(), Some(bytes), data_type)
}

/// One vector being decoded, and what it is read as.
struct Source<'a> {
    /// The whole vector, header included.
    bytes: &'a [u8],
    /// The FlatBuffer after the header word.
    fbuf: &'a [u8],
    /// The buffer `bytes` are in, when arrays may share its memory.
    owner: Option<&'a Buffer>,
    filo_type: FiloType,
    data_type: &'a DataType,
}

/// `owner`, when given, holds `bytes`, and arrays may share its memory.
fn decode_from(bytes: &[u8], owner: Option<&Buffer>, data_type: &DataType) -> Result<ArrayRef> {
    if let DataType::Dictionary(key, value) = data_type {
        return strings::decode_dictionary(bytes, key, value);
    }
    let filo_type = FiloType::for_read(data_type)?;
    let (header, fbuf) = wire::split_header(bytes)?;
    let wire_type = WireType::from_header(header)?;
    if !wire_type.holds(filo_type) {
        return Err(Error::new(
            ErrorClass::UnsupportedType,
            format!(
                "a {} (header 0x{header:08x}) cannot hold {filo_type} values",
                wire_type.name()
            ),
        )
        .at_offset(0));
    }
    let src = Source {
        bytes,
        fbuf,
        owner,
        filo_type,
        data_type,
    };
    match wire_type {
        WireType::Empty => Ok(new_null_array(data_type, (header >> 8) as usize)),
        WireType::SimplePrimitive => numbers::simple_or_const(&src, false),
        WireType::ConstPrimitive => numbers::simple_or_const(&src, true),
        WireType::DiffPrimitive => numbers::diff(&src),
        WireType::SimpleString => strings::simple_string(&src),
        WireType::ConstString => strings::const_string(&src),
        WireType::DictString => strings::dict_string(&src),
        WireType::SimpleFixedString => strings::fixed_string(&src),
        WireType::SimpleBinary => strings::simple_binary(&src),
        WireType::DiffDateTime => datetime::diff_datetime(&src),
    }
}

/// Decodes a vector and checks that it has `rows` elements (a Filo set chunk).
pub fn decode_rows(bytes: &[u8], data_type: &DataType, rows: usize) -> Result<ArrayRef> {
    decode_rows_from(bytes, None, data_type, rows)
}

/// [`decode_rows`] of a vector held in an Arrow buffer, sharing its memory as
/// [`decode_buffer`] does.
pub fn decode_rows_buffer(bytes: &Buffer, data_type: &DataType, rows: usize) -> Result<ArrayRef> {
    decode_rows_from(bytes.as_slice(), Some(bytes), data_type, rows)
}

fn decode_rows_from(
    bytes: &[u8],
    owner: Option<&Buffer>,
    data_type: &DataType,
    rows: usize,
) -> Result<ArrayRef> {
    // An EmptyVector declares up to 16M elements in its 4-byte header, and a constant vector as
    // many in a few dozen bytes: decoding one costs what 16M Arrow elements cost, whatever the
    // file's size. So the declared count is compared with the chunk's before anything is
    // allocated. A vector whose tables do not verify is left to `decode`, which names the damage.
    if let Ok(info) = inspect(bytes) {
        if info.len != rows {
            let field = match info.wire_type {
                WireType::Empty => "EmptyVector header (bits 8-31)".to_string(),
                other => format!("{} length", other.name()),
            };
            return Err(Error::new(
                ErrorClass::RowCountMismatch,
                format!(
                    "the vector declares {} elements, the chunk has {rows} rows",
                    info.len
                ),
            )
            .with_field(field)
            .at_offset(0));
        }
    }
    let array = decode_from(bytes, owner, data_type)?;
    if array.len() != rows {
        return Err(Error::new(
            ErrorClass::RowCountMismatch,
            format!(
                "the vector holds {} elements, the chunk has {rows} rows",
                array.len()
            ),
        ));
    }
    Ok(array)
}

/// Fuzzing entry point: decodes `bytes` as every element type, and must never panic.
pub fn fuzz_decode(bytes: &[u8]) {
    for t in FiloType::SET_TYPES.into_iter().chain([FiloType::Binary]) {
        let _ = decode(bytes, &t.arrow_type());
    }
    let _ = inspect(bytes);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_and_unknown_headers_are_errors() {
        assert_eq!(
            decode(&[1, 0], &DataType::Int32).unwrap_err().class(),
            ErrorClass::TooSmall
        );
        let e = decode(&[0x07, 0, 0, 0, 0, 0, 0, 0], &DataType::Int32).unwrap_err();
        assert!(e.message().contains("filo 0.3"), "{e}");
        let e = decode(&[0xFF, 1, 2, 3], &DataType::Int32).unwrap_err();
        assert!(e.message().contains("LZ4"), "{e}");
        let e = decode(&[0x02, 0, 1, 0], &DataType::Int32).unwrap_err();
        assert_eq!(e.class(), ErrorClass::UnknownType);
    }
}
