//! String and bytes vectors: SimpleStringVector, ConstStringVector, DictStringVector (also as
//! an Arrow dictionary) and arrowsmith's SimpleFixedStringVector and SimpleBinaryVector
//! (specs/filo.md sections 7, 8 and 11).

use std::sync::Arc;

use arrow_array::builder::{BinaryBuilder, StringBuilder};
use arrow_array::types::Int32Type;
use arrow_array::{Array, ArrayRef, BinaryArray, DictionaryArray, Int32Array, StringArray};
use arrow_buffer::{Buffer, NullBuffer, OffsetBuffer, ScalarBuffer};
use arrow_schema::DataType;

use super::ints::{int_width, Ints};
use super::table::{
    bad_info, bounded_length, check_expansion, data_bytes, length, missing, offset_of,
    required_info, root, validity,
};
use super::wire::{split_header, WireType};
use super::{decode, Source, MAX_CONST_STRING_BYTES};
use crate::error::{Error, ErrorClass, Result};
use crate::filo::gen::vector as fb;
use crate::filo::mapping::FiloType;

/// Strings as the type asked for: `Utf8`, or their bytes as `Binary`.
fn string_result(array: StringArray, filo_type: FiloType) -> ArrayRef {
    if filo_type == FiloType::Binary {
        let (offsets, values, nulls) = array.into_parts();
        Arc::new(BinaryArray::new(offsets, values, nulls))
    } else {
        Arc::new(array)
    }
}

/// Bytes as the type asked for: `Binary`, or `Utf8` when every element is UTF-8.
fn binary_result(array: BinaryArray, filo_type: FiloType) -> Result<ArrayRef> {
    if filo_type == FiloType::Binary {
        return Ok(Arc::new(array));
    }
    let (offsets, values, nulls) = array.into_parts();
    Ok(Arc::new(
        StringArray::try_new(offsets, values, nulls).map_err(|e| {
            Error::new(
                ErrorClass::InvalidUtf8,
                format!("an element is not UTF-8: {e}"),
            )
        })?,
    ))
}

pub(super) fn simple_string(src: &Source<'_>) -> Result<ArrayRef> {
    let t = root::<fb::SimpleStringVector>(src.fbuf, "SimpleStringVector")?;
    let strings = t.data();
    let len = strings.map_or(0, |d| d.len());
    let nulls = validity(t.naMask(), len)?;
    let mut builder = StringBuilder::with_capacity(len, 0);
    if let Some(strings) = strings {
        for (i, s) in strings.iter().enumerate() {
            if nulls.as_ref().is_some_and(|n| n.is_null(i)) {
                builder.append_null();
            } else {
                builder.append_value(s);
            }
        }
    }
    Ok(string_result(builder.finish(), src.filo_type))
}

pub(super) fn const_string(src: &Source<'_>) -> Result<ArrayRef> {
    let t = root::<fb::ConstStringVector>(src.fbuf, "ConstStringVector")?;
    let len = length(t.len(), "ConstStringVector.len")?;
    check_expansion(len, src.bytes.len())?;
    let nulls = validity(t.naMask(), len)?;
    let all_na = nulls.as_ref().is_some_and(|n| n.null_count() == len);
    let value = match t.str() {
        Some(s) => s,
        None if all_na || len == 0 => "",
        None => return Err(missing("ConstStringVector.str")),
    };
    // The element count is bounded above; the bytes the copies take are bounded too, or a
    // vector of a hundred bytes could claim gigabytes. Arrow's i32 offsets end at 2 GiB in
    // any case.
    let limit = MAX_CONST_STRING_BYTES
        .max(src.bytes.len().saturating_mul(64))
        .min(i32::MAX as usize);
    let total = value.len().checked_mul(len).filter(|t| *t <= limit);
    let total = total.ok_or_else(|| {
        Error::new(
            ErrorClass::BadValue,
            format!(
                "{len} copies of a {}-byte string in a vector of {} bytes exceed the {limit} \
                 bytes it may expand to",
                value.len(),
                src.bytes.len()
            ),
        )
        .with_field("ConstStringVector.str")
    })?;
    // Both fit in i32: `total` (≥ every offset) is at most i32::MAX.
    let step = value.len() as i32;
    let offsets: Vec<i32> = (0..=len as i32).map(|i| i * step).collect();
    let mut values = Vec::with_capacity(total);
    for _ in 0..len {
        values.extend_from_slice(value.as_bytes());
    }
    let array = StringArray::try_new(
        OffsetBuffer::new(ScalarBuffer::from(offsets)),
        Buffer::from_vec(values),
        nulls,
    )?;
    Ok(string_result(array, src.filo_type))
}

/// A DictStringVector's codes, each checked to name an entry of its dictionary (0 is NA).
/// Only [`dict_codes`] makes one.
struct Codes<'a> {
    codes: Vec<i32>,
    /// The dictionary's entries, the NA placeholder at 0 included.
    entries: Vec<&'a str>,
}

fn dict_codes<'a>(t: &fb::DictStringVector<'a>, fbuf: &[u8]) -> Result<Codes<'a>> {
    let len = bounded_length(t.len(), fbuf, "DictStringVector.len")?;
    let (nbits, signed) = required_info(t.info(), "DictStringVector.info")?;
    let width = int_width(nbits, signed, "DictStringVector.info")?;
    let codes_vec = t.codes();
    let codes = Ints::new(
        codes_vec,
        len,
        (width, signed),
        fbuf,
        "DictStringVector.codes",
    )?;
    let codes = codes.to_i32();
    let entries: Vec<&str> = t.dictionary().map_or(Vec::new(), |d| d.iter().collect());
    let count = entries.len();
    let outside = |c: i32| c != 0 && usize::try_from(c).map_or(true, |c| c >= count);
    if let Some(i) = codes.iter().position(|&c| outside(c)) {
        let off = codes_vec.map_or(0, |v| offset_of(fbuf, v.bytes()));
        return Err(Error::new(
            ErrorClass::BadValue,
            format!(
                "code {} of element {i} is outside the dictionary of {count} entries",
                codes[i]
            ),
        )
        .with_field("DictStringVector.codes")
        .at_offset(off)
        .at_row(i as u64));
    }
    Ok(Codes { codes, entries })
}

impl<'a> Codes<'a> {
    /// The string of each element, `None` for NA.
    fn strings(&self) -> impl Iterator<Item = Option<&'a str>> + '_ {
        self.codes.iter().map(move |&code| match code {
            0 => None,
            code => self.entries.get(code as usize).copied(),
        })
    }
}

pub(super) fn dict_string(src: &Source<'_>) -> Result<ArrayRef> {
    let t = root::<fb::DictStringVector>(src.fbuf, "DictStringVector")?;
    let codes = dict_codes(&t, src.fbuf)?;
    let len = codes.codes.len();
    // The strings' total is counted before anything is built: a few bytes of codes may stand
    // for many copies of a long entry.
    let total = codes.strings().fold(0usize, |total, s| {
        total.saturating_add(s.map_or(0, str::len))
    });
    if total > i32::MAX as usize {
        return Err(Error::new(
            ErrorClass::ValueOutOfRange,
            format!(
                "the {len} strings take {total} bytes, more than a string array holds (2 GiB); \
                 read the column as a dictionary instead (`with_dictionary_strings`, \
                 `--filo-dictionary`)"
            ),
        )
        .with_field("DictStringVector.codes"));
    }
    let mut builder = StringBuilder::with_capacity(len, total);
    builder.extend(codes.strings());
    Ok(string_result(builder.finish(), src.filo_type))
}

/// A String vector as an Arrow `Dictionary(Int32, Utf8)`: a DictStringVector's codes become
/// the keys as they are (code 0, NA, a null key) over its dictionary, "" placeholder included;
/// other string vectors are dictionary-encoded after decoding.
pub(super) fn decode_dictionary(
    bytes: &[u8],
    key: &DataType,
    value: &DataType,
) -> Result<ArrayRef> {
    if (key, value) != (&DataType::Int32, &DataType::Utf8) {
        return Err(Error::new(
            ErrorClass::UnsupportedType,
            format!(
                "a Filo string vector is read as Dictionary(Int32, Utf8), not \
                 Dictionary({key}, {value})"
            ),
        ));
    }
    let (header, fbuf) = split_header(bytes)?;
    let wire_type = WireType::from_header(header)?;
    if wire_type != WireType::DictString {
        let strings = decode(bytes, &DataType::Utf8)?;
        let dictionary = DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Utf8));
        return Ok(arrow::compute::cast(&strings, &dictionary)?);
    }
    let t = root::<fb::DictStringVector>(fbuf, "DictStringVector")?;
    let codes = dict_codes(&t, fbuf)?;
    let values = StringArray::from(codes.entries);
    let nulls = NullBuffer::from(codes.codes.iter().map(|&c| c != 0).collect::<Vec<_>>());
    let nulls = (nulls.null_count() > 0).then_some(nulls);
    let values: ArrayRef = if values.is_empty() {
        // Every code is 0 (NA): the keys need one entry to point at.
        Arc::new(StringArray::from(vec![""]))
    } else {
        Arc::new(values)
    };
    let keys = Int32Array::try_new(ScalarBuffer::from(codes.codes), nulls)?;
    Ok(Arc::new(DictionaryArray::<Int32Type>::try_new(
        keys, values,
    )?))
}

/// arrowsmith's SimpleFixedStringVector: slots of `nbits / 8` bytes, a length byte and the
/// string's bytes.
pub(super) fn fixed_string(src: &Source<'_>) -> Result<ArrayRef> {
    let fbuf = src.fbuf;
    let t = root::<fb::SimplePrimitiveVector>(fbuf, "SimpleFixedStringVector")?;
    let len = bounded_length(t.len(), fbuf, "SimpleFixedStringVector.len")?;
    let nulls = validity(t.naMask(), len)?;
    let field = "SimpleFixedStringVector.info";
    let (nbits, _) = required_info(t.info(), field)?;
    if nbits % 8 != 0 || !(8..=2048).contains(&nbits) {
        let accepted = "a multiple of 8 from 8 to 2048";
        return Err(bad_info(nbits, false, field, accepted));
    }
    let w = usize::from(nbits / 8);
    let slots = data_bytes(t.data(), len, nbits, fbuf, "SimpleFixedStringVector.data")?;
    let data_off = t.data().map_or(0, |v| offset_of(fbuf, v.bytes()));
    let mut builder = BinaryBuilder::with_capacity(len, 0);
    for (i, slot) in slots.chunks_exact(w).enumerate() {
        if nulls.as_ref().is_some_and(|n| n.is_null(i)) {
            builder.append_null();
            continue;
        }
        let (n, text) = slot
            .split_first()
            .map_or((0, &[][..]), |(&n, text)| (usize::from(n), text));
        let value = text.get(..n).ok_or_else(|| {
            Error::new(
                ErrorClass::BadValue,
                format!("slot length byte {n} exceeds the slot's {} bytes", w - 1),
            )
            .with_field("SimpleFixedStringVector.data")
            .at_offset(data_off + (i * w) as u64)
            .at_row(i as u64)
        })?;
        builder.append_value(value);
    }
    binary_result(builder.finish(), src.filo_type)
}

/// arrowsmith's SimpleBinaryVector: `len + 1` offsets into one byte body.
pub(super) fn simple_binary(src: &Source<'_>) -> Result<ArrayRef> {
    let fbuf = src.fbuf;
    let t = root::<fb::SimpleBinaryVector>(fbuf, "SimpleBinaryVector")?;
    let offsets: Vec<i32> = t.offsets().map_or(Vec::new(), |o| o.iter().collect());
    let len = offsets.len().saturating_sub(1);
    let nulls = validity(t.naMask(), len)?;
    let data = t.data().map_or(&[][..], |d| d.bytes());
    let off_pos = t.offsets().map_or(0, |o| offset_of(fbuf, o.bytes()));
    let bad = |m: String| {
        Error::new(ErrorClass::BadOffsets, m)
            .with_field("SimpleBinaryVector.offsets")
            .at_offset(off_pos)
    };
    if let Some(&first) = offsets.first().filter(|&&o| o != 0) {
        return Err(bad(format!("offsets[0] is {first}, not 0")));
    }
    let mut builder = BinaryBuilder::with_capacity(len, 0);
    for (i, (&start, &end)) in offsets.iter().zip(offsets.iter().skip(1)).enumerate() {
        if end < start {
            return Err(bad(format!("offsets[{}] < offsets[{i}]", i + 1)));
        }
        let value = data.get(start as usize..end as usize).ok_or_else(|| {
            bad(format!(
                "offsets[{}] {end} is beyond the {} data bytes",
                i + 1,
                data.len()
            ))
        })?;
        if nulls.as_ref().is_some_and(|n| n.is_null(i)) {
            builder.append_null();
        } else {
            builder.append_value(value);
        }
    }
    binary_result(builder.finish(), src.filo_type)
}
