//! One Filo vector → one Arrow array (specs/filo.md sections 3–11).
//!
//! The FlatBuffer is checked by the `flatbuffers` verifier (bounds, alignment relative to the
//! FlatBuffer's start, string terminators and UTF-8) before any field is read, and every size
//! taken from it is checked against the buffer before anything sized by it is allocated.
//! 8-byte items of a Filo vector sit at file offsets ≡ 4 (mod 8), so numbers are read with
//! unaligned little-endian loads into fresh Arrow buffers.

use std::sync::Arc;

use arrow_array::builder::{BinaryBuilder, StringBuilder};
use arrow_array::types::{
    Float32Type, Float64Type, Int32Type, Int64Type, TimestampMillisecondType,
};
use arrow_array::{
    new_null_array, Array, ArrayRef, BooleanArray, PrimitiveArray, StringArray, StructArray,
};
use arrow_buffer::{BooleanBuffer, Buffer, NullBuffer, OffsetBuffer, ScalarBuffer};
use arrow_schema::{DataType, TimeUnit};
use flatbuffers::{Follow, InvalidFlatbuffer, Vector, Verifiable, VerifierOptions};

use super::gen::vector as fb;
use super::mapping::{datetime_fields, timestamp_utc, FiloType};
use crate::error::{Error, ErrorClass, Result};

/// The largest length of an EmptyVector (24 bits of the header).
pub const MAX_EMPTY_LEN: usize = 0xFF_FFFF;

/// The most string bytes a ConstStringVector expands to, unless 64 per byte of the vector is
/// more: what the longest constant vector of 8-byte numbers takes (`MAX_EMPTY_LEN` × 8).
const MAX_CONST_STRING_BYTES: usize = MAX_EMPTY_LEN * 8;

/// The vector types of specs/filo.md section 4.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum WireType {
    /// `EmptyVector`: a length and nothing else; every element is NA.
    Empty,
    /// `SimplePrimitiveVector`: bit-packed numbers.
    SimplePrimitive,
    /// `SimpleStringVector`: an offset per string.
    SimpleString,
    /// `SimpleBinaryVector`: arrowsmith's bytes vector, laid out as strings.
    SimpleBinary,
    /// `SimpleFixedStringVector`: arrowsmith's strings of one fixed length.
    SimpleFixedString,
    /// `DictStringVector`: a dictionary of strings and a code per element.
    DictString,
    /// `ConstPrimitiveVector`: one number repeated.
    ConstPrimitive,
    /// `ConstStringVector`: one string repeated.
    ConstString,
    /// `DiffPrimitiveVector`: bit-packed differences from a base.
    DiffPrimitive,
    /// `DiffDateTimeVector`: millis and time zone offsets, each as differences from a base.
    DiffDateTime,
}

impl WireType {
    /// The vector type's name, as filo names its class (`"SimplePrimitiveVector"`, …).
    pub fn name(self) -> &'static str {
        match self {
            WireType::Empty => "EmptyVector",
            WireType::SimplePrimitive => "SimplePrimitiveVector",
            WireType::SimpleString => "SimpleStringVector",
            WireType::SimpleBinary => "SimpleBinaryVector",
            WireType::SimpleFixedString => "SimpleFixedStringVector",
            WireType::DictString => "DictStringVector",
            WireType::ConstPrimitive => "ConstPrimitiveVector",
            WireType::ConstString => "ConstStringVector",
            WireType::DiffPrimitive => "DiffPrimitiveVector",
            WireType::DiffDateTime => "DiffDateTimeVector",
        }
    }

    /// The header word of a non-empty vector of this type.
    pub fn header(self) -> u32 {
        match self {
            WireType::Empty => 0x01,
            WireType::SimplePrimitive => 0x0002,
            WireType::SimpleString => 0x0102,
            WireType::SimpleBinary => 0x0202,
            WireType::SimpleFixedString => 0x0302,
            WireType::DictString => 0x0103,
            WireType::ConstPrimitive => 0x0004,
            WireType::ConstString => 0x0104,
            WireType::DiffPrimitive => 0x0005,
            WireType::DiffDateTime => 0x0405,
        }
    }

    /// The vector type a header word names.
    pub fn from_header(header: u32) -> Result<WireType> {
        let major = header & 0xFF;
        if major == 0x01 {
            return Ok(WireType::Empty);
        }
        let bad = |what: String| Err(Error::new(ErrorClass::UnknownType, what).at_offset(0));
        if major == 0xFF {
            return bad(format!(
                "header 0x{header:08x} starts with 0xFF, FiloDB's LZ4-compressed chunk framing, \
                 not a Filo vector: decompress it first"
            ));
        }
        if matches!(major, 0x06..=0x08) {
            return bad(format!(
                "header 0x{header:08x} is a filo 0.3 BinaryVector (major type 0x{major:02x}), \
                 which arrowsmith does not read"
            ));
        }
        if header >> 16 != 0 {
            return bad(format!(
                "header 0x{header:08x} has nonzero bits 16–31, which only an EmptyVector may have"
            ));
        }
        Ok(match header {
            0x0002 => WireType::SimplePrimitive,
            0x0102 => WireType::SimpleString,
            0x0202 => WireType::SimpleBinary,
            0x0302 => WireType::SimpleFixedString,
            0x0103 => WireType::DictString,
            0x0004 => WireType::ConstPrimitive,
            0x0104 => WireType::ConstString,
            0x0005 => WireType::DiffPrimitive,
            0x0405 => WireType::DiffDateTime,
            _ => return bad(format!("header 0x{header:08x} is not a Filo vector type")),
        })
    }

    /// Whether a vector of this type can hold elements of `t` (section 10.2).
    pub fn holds(self, t: FiloType) -> bool {
        use FiloType as F;
        use WireType as W;
        match self {
            W::Empty => true,
            W::SimplePrimitive | W::ConstPrimitive => matches!(
                t,
                F::Int | F::Long | F::Double | F::Float | F::Boolean | F::Timestamp
            ),
            W::DiffPrimitive => matches!(t, F::Int | F::Long | F::Timestamp),
            W::SimpleString | W::ConstString | W::DictString => {
                matches!(t, F::String | F::Binary)
            }
            W::SimpleFixedString | W::SimpleBinary => matches!(t, F::String | F::Binary),
            W::DiffDateTime => matches!(t, F::DateTime | F::Timestamp),
        }
    }
}

/// How a vector marks its NAs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MaskKind {
    /// No NaMask table (DictStringVector, which uses code 0; or a writer that left it out).
    Absent,
    /// No element is NA.
    AllZeroes,
    /// A bitmap of this many u64 words.
    SimpleBitMask {
        /// Number of `u64` words of the bitmap.
        words: usize,
    },
    /// Every element is NA.
    AllOnes,
    /// EmptyVector: everything is NA, no table.
    Empty,
}

impl MaskKind {
    /// The mask kind's name, as the FlatBuffer schema spells it (`"AllZeroes"`, …).
    pub fn name(self) -> &'static str {
        match self {
            MaskKind::Absent => "absent",
            MaskKind::AllZeroes => "AllZeroes",
            MaskKind::SimpleBitMask { .. } => "SimpleBitMask",
            MaskKind::AllOnes => "AllOnes",
            MaskKind::Empty => "empty",
        }
    }
}

/// What a vector's header and FlatBuffer say, without decoding the elements.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VectorInfo {
    /// The 32-bit header word: the vector type and subtype.
    pub header: u32,
    /// The vector type it names.
    pub wire_type: WireType,
    /// Number of elements.
    pub len: usize,
    /// `(nbits, signed)` of the data, codes or millis.
    pub info: Option<(u16, bool)>,
    /// How NAs are marked.
    pub mask: MaskKind,
    /// Diff base, or DiffDateTime's base millis.
    pub base: Option<i64>,
    /// DiffDateTime: base offset (quarter-hours) and the tz deltas' `(nbits, signed)`.
    pub base_tz: Option<i8>,
    /// DiffDateTime: `(nbits, signed)` of the time zone deltas.
    pub tz_info: Option<(u16, bool)>,
    /// DictStringVector: dictionary entries, the NA placeholder included.
    pub dictionary_size: Option<usize>,
    /// Bytes of the whole vector, header included.
    pub byte_size: usize,
}

/// The header word of a vector, or an error if the buffer is shorter than one.
pub fn header(bytes: &[u8]) -> Result<u32> {
    match bytes.get(..4) {
        Some(h) => Ok(u32::from_le_bytes([h[0], h[1], h[2], h[3]])),
        None => Err(Error::new(
            ErrorClass::TooSmall,
            format!(
                "a Filo vector is at least 4 bytes (its header word), this one is {}",
                bytes.len()
            ),
        )
        .at_offset(0)),
    }
}

/// Reads a vector's header and tables (with every structural check) but not its elements.
pub fn inspect(bytes: &[u8]) -> Result<VectorInfo> {
    let header = header(bytes)?;
    let wire_type = WireType::from_header(header)?;
    let mut out = VectorInfo {
        header,
        wire_type,
        len: 0,
        info: None,
        mask: MaskKind::Empty,
        base: None,
        base_tz: None,
        tz_info: None,
        dictionary_size: None,
        byte_size: bytes.len(),
    };
    let fbuf = &bytes[4..];
    match wire_type {
        WireType::Empty => out.len = (header >> 8) as usize,
        WireType::SimplePrimitive | WireType::ConstPrimitive | WireType::SimpleFixedString => {
            let t = root::<fb::SimplePrimitiveVector>(fbuf, "SimplePrimitiveVector")?;
            out.len = length(t.len(), "SimplePrimitiveVector.len")?;
            out.mask = mask_kind(t.naMask())?;
            out.info = t.info().map(info_pair);
        }
        WireType::DiffPrimitive => {
            let t = root::<fb::DiffPrimitiveVector>(fbuf, "DiffPrimitiveVector")?;
            out.len = length(t.len(), "DiffPrimitiveVector.len")?;
            out.mask = mask_kind(t.naMask())?;
            out.info = t.info().map(info_pair);
            out.base = Some(t.base());
        }
        WireType::SimpleString => {
            let t = root::<fb::SimpleStringVector>(fbuf, "SimpleStringVector")?;
            out.len = t.data().map_or(0, |d| d.len());
            out.mask = mask_kind(t.naMask())?;
        }
        WireType::ConstString => {
            let t = root::<fb::ConstStringVector>(fbuf, "ConstStringVector")?;
            out.len = length(t.len(), "ConstStringVector.len")?;
            out.mask = mask_kind(t.naMask())?;
        }
        WireType::DictString => {
            let t = root::<fb::DictStringVector>(fbuf, "DictStringVector")?;
            out.len = length(t.len(), "DictStringVector.len")?;
            out.mask = MaskKind::Absent;
            out.info = t.info().map(info_pair);
            out.dictionary_size = Some(t.dictionary().map_or(0, |d| d.len()));
        }
        WireType::DiffDateTime => {
            let t = root::<fb::DiffDateTimeVector>(fbuf, "DiffDateTimeVector")?;
            let vars = t.vars().ok_or_else(|| missing("DiffDateTimeVector.vars"))?;
            let (len, base_tz, base_millis) = ddt_vars(vars);
            out.len = length(len, "DiffDateTimeVector.vars.len")?;
            out.mask = mask_kind(t.naMask())?;
            out.info = t.millisInfo().map(info_pair);
            out.base = Some(base_millis);
            out.base_tz = Some(base_tz);
            out.tz_info = t.tzInfo().map(info_pair);
        }
        WireType::SimpleBinary => {
            let t = root::<fb::SimpleBinaryVector>(fbuf, "SimpleBinaryVector")?;
            out.len = t.offsets().map_or(0, |o| o.len().saturating_sub(1));
            out.mask = mask_kind(t.naMask())?;
        }
    }
    Ok(out)
}

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

/// `owner`, when given, holds `bytes`, and arrays may share its memory.
fn decode_from(bytes: &[u8], owner: Option<&Buffer>, data_type: &DataType) -> Result<ArrayRef> {
    if let DataType::Dictionary(key, value) = data_type {
        return decode_dictionary(bytes, key, value);
    }
    let filo_type = FiloType::for_read(data_type)?;
    let header = header(bytes)?;
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
    let fbuf = &bytes[4..];
    let array: ArrayRef = match wire_type {
        WireType::Empty => new_null_array(data_type, (header >> 8) as usize),
        WireType::SimplePrimitive | WireType::ConstPrimitive => {
            let t = root::<fb::SimplePrimitiveVector>(fbuf, "SimplePrimitiveVector")?;
            let constant = wire_type == WireType::ConstPrimitive;
            let len = if constant {
                let len = length(t.len(), "ConstPrimitiveVector.len")?;
                check_expansion(len, bytes.len())?;
                len
            } else {
                bounded_length(t.len(), fbuf, "SimplePrimitiveVector.len")?
            };
            let nulls = validity(t.naMask(), len)?;
            let data = PrimitiveData {
                info: t.info(),
                bytes: t.data(),
                constant,
                owner,
            };
            primitive(filo_type, data_type, len, data, fbuf, nulls)?
        }
        WireType::DiffPrimitive => {
            let t = root::<fb::DiffPrimitiveVector>(fbuf, "DiffPrimitiveVector")?;
            let len = bounded_length(t.len(), fbuf, "DiffPrimitiveVector.len")?;
            let nulls = validity(t.naMask(), len)?;
            let what = "DiffPrimitiveVector.data";
            let (nbits, signed) = required_info(t.info(), "DiffPrimitiveVector.info")?;
            let data = data_bytes(t.data(), len, nbits, fbuf, what)?;
            match filo_type {
                FiloType::Int => {
                    check_int_info(nbits, signed, "DiffPrimitiveVector.info")?;
                    let base = t.base() as i32;
                    let mut values = ints_i32(data, nbits, signed, len);
                    values.iter_mut().for_each(|v| *v = base.wrapping_add(*v));
                    Arc::new(PrimitiveArray::<Int32Type>::new(values.into(), nulls))
                }
                _ => {
                    check_long_info(nbits, signed, "DiffPrimitiveVector.info")?;
                    let base = t.base();
                    let mut values = ints_i64(data, nbits, signed, len);
                    values.iter_mut().for_each(|v| *v = base.wrapping_add(*v));
                    long_array(filo_type, data_type, values, nulls)
                }
            }
        }
        WireType::SimpleString => {
            let t = root::<fb::SimpleStringVector>(fbuf, "SimpleStringVector")?;
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
            string_result(builder.finish(), filo_type)
        }
        WireType::ConstString => {
            let t = root::<fb::ConstStringVector>(fbuf, "ConstStringVector")?;
            let len = length(t.len(), "ConstStringVector.len")?;
            check_expansion(len, bytes.len())?;
            let nulls = validity(t.naMask(), len)?;
            let all_na = nulls.as_ref().is_some_and(|n| n.null_count() == len);
            let value = match t.str() {
                Some(s) => s,
                None if all_na || len == 0 => "",
                None => return Err(missing("ConstStringVector.str")),
            };
            // The element count is bounded above; the bytes the copies take are bounded too,
            // or a vector of a hundred bytes could claim gigabytes. Arrow's i32 offsets end at
            // 2 GiB in any case.
            let limit = MAX_CONST_STRING_BYTES
                .max(bytes.len().saturating_mul(64))
                .min(i32::MAX as usize);
            let total = value.len().checked_mul(len).filter(|t| *t <= limit);
            let total = total.ok_or_else(|| {
                Error::new(
                    ErrorClass::BadValue,
                    format!(
                        "{len} copies of a {}-byte string in a vector of {} bytes exceed the \
                         {limit} bytes it may expand to",
                        value.len(),
                        bytes.len()
                    ),
                )
                .with_field("ConstStringVector.str")
            })?;
            let step = value.len() as i32;
            let offsets: Vec<i32> = (0..=len as i32).map(|i| i * step).collect();
            let mut values = Vec::with_capacity(total);
            for _ in 0..len {
                values.extend_from_slice(value.as_bytes());
            }
            let array = StringArray::new(
                OffsetBuffer::new(ScalarBuffer::from(offsets)),
                Buffer::from_vec(values),
                nulls,
            );
            string_result(array, filo_type)
        }
        WireType::DictString => {
            let t = root::<fb::DictStringVector>(fbuf, "DictStringVector")?;
            let len = bounded_length(t.len(), fbuf, "DictStringVector.len")?;
            let (nbits, signed) = required_info(t.info(), "DictStringVector.info")?;
            check_int_info(nbits, signed, "DictStringVector.info")?;
            let codes_vec = t.codes();
            let codes = data_bytes(codes_vec, len, nbits, fbuf, "DictStringVector.codes")?;
            let codes = ints_i32(codes, nbits, signed, len);
            let dict: Vec<&str> = t.dictionary().map_or(Vec::new(), |d| d.iter().collect());
            // Every code is checked, and the strings' total counted, before anything is built:
            // a few bytes of codes may stand for many copies of a long entry.
            check_codes(&codes, dict.len(), codes_vec, fbuf)?;
            let total = codes
                .iter()
                .filter(|&&code| code != 0)
                .fold(0usize, |total, &code| {
                    total.saturating_add(dict[code as usize].len())
                });
            if total > i32::MAX as usize {
                return Err(Error::new(
                    ErrorClass::ValueOutOfRange,
                    format!(
                        "the {len} strings take {total} bytes, more than a string array holds \
                         (2 GiB); read the column as a dictionary instead \
                         (`with_dictionary_strings`, `--filo-dictionary`)"
                    ),
                )
                .with_field("DictStringVector.codes"));
            }
            let mut builder = StringBuilder::with_capacity(len, total);
            for &code in &codes {
                match code {
                    0 => builder.append_null(),
                    code => builder.append_value(dict[code as usize]),
                }
            }
            string_result(builder.finish(), filo_type)
        }
        WireType::DiffDateTime => {
            let t = root::<fb::DiffDateTimeVector>(fbuf, "DiffDateTimeVector")?;
            let vars = t.vars().ok_or_else(|| missing("DiffDateTimeVector.vars"))?;
            let (len, base_tz, base_millis) = ddt_vars(vars);
            let len = bounded_length(len, fbuf, "DiffDateTimeVector.vars.len")?;
            let nulls = validity(t.naMask(), len)?;
            let field = "DiffDateTimeVector.millisInfo";
            let (nbits, signed) = required_info(t.millisInfo(), field)?;
            check_long_info(nbits, signed, field)?;
            let millis = data_bytes(t.millis(), len, nbits, fbuf, "DiffDateTimeVector.millis")?;
            let mut millis = ints_i64(millis, nbits, signed, len);
            millis
                .iter_mut()
                .for_each(|m| *m = base_millis.wrapping_add(*m));
            if filo_type == FiloType::Timestamp {
                long_array(filo_type, data_type, millis, nulls)
            } else {
                let mut tz = vec![base_tz as i32; len];
                if let Some(tz_vec) = t.tz().filter(|v| !v.is_empty()) {
                    let field = "DiffDateTimeVector.tzInfo";
                    let (nbits, signed) =
                        t.tzInfo().map(info_pair).ok_or_else(|| missing(field))?;
                    check_int_info(nbits, signed, field)?;
                    let deltas =
                        data_bytes(Some(tz_vec), len, nbits, fbuf, "DiffDateTimeVector.tz")?;
                    let deltas = ints_i32(deltas, nbits, signed, len);
                    for (t, d) in tz.iter_mut().zip(deltas) {
                        *t = t.wrapping_add(d);
                    }
                }
                let mut qh = Vec::with_capacity(len);
                for i in 0..len {
                    let valid = nulls.as_ref().is_none_or(|n| n.is_valid(i));
                    if !valid {
                        millis[i] = 0;
                        qh.push(0i8);
                    } else if (-95..=95).contains(&tz[i]) {
                        qh.push(tz[i] as i8);
                    } else {
                        return Err(Error::new(
                            ErrorClass::BadValue,
                            format!(
                                "UTC offset {} quarter-hours is outside -95 … 95 (under ±24 h)",
                                tz[i]
                            ),
                        )
                        .with_field("DiffDateTimeVector.tz")
                        .at_row(i as u64));
                    }
                }
                let millis = PrimitiveArray::<TimestampMillisecondType>::new(millis.into(), None)
                    .with_timezone("UTC");
                let qh = PrimitiveArray::<arrow_array::types::Int8Type>::new(qh.into(), None);
                Arc::new(StructArray::try_new(
                    datetime_fields(),
                    vec![Arc::new(millis), Arc::new(qh)],
                    nulls,
                )?)
            }
        }
        WireType::SimpleFixedString => {
            let t = root::<fb::SimplePrimitiveVector>(fbuf, "SimpleFixedStringVector")?;
            let len = bounded_length(t.len(), fbuf, "SimpleFixedStringVector.len")?;
            let nulls = validity(t.naMask(), len)?;
            let field = "SimpleFixedStringVector.info";
            let (nbits, _) = required_info(t.info(), field)?;
            if nbits % 8 != 0 || !(8..=2048).contains(&nbits) {
                return Err(bad_info(
                    nbits,
                    false,
                    field,
                    "a multiple of 8 from 8 to 2048",
                ));
            }
            let w = usize::from(nbits / 8);
            let slots = data_bytes(t.data(), len, nbits, fbuf, "SimpleFixedStringVector.data")?;
            let data_off = t.data().map_or(0, |v| offset_of(fbuf, v.bytes()));
            let mut builder = BinaryBuilder::with_capacity(len, 0);
            for i in 0..len {
                if nulls.as_ref().is_some_and(|n| n.is_null(i)) {
                    builder.append_null();
                    continue;
                }
                let slot = &slots[i * w..(i + 1) * w];
                let n = usize::from(slot[0]);
                if n > w - 1 {
                    return Err(Error::new(
                        ErrorClass::BadValue,
                        format!("slot length byte {n} exceeds the slot's {} bytes", w - 1),
                    )
                    .with_field("SimpleFixedStringVector.data")
                    .at_offset(data_off + (i * w) as u64)
                    .at_row(i as u64));
                }
                builder.append_value(&slot[1..1 + n]);
            }
            binary_result(builder.finish(), filo_type)?
        }
        WireType::SimpleBinary => {
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
            if offsets.first().is_some_and(|&o| o != 0) {
                return Err(bad(format!("offsets[0] is {}, not 0", offsets[0])));
            }
            for (i, pair) in offsets.windows(2).enumerate() {
                if pair[1] < pair[0] {
                    return Err(bad(format!("offsets[{}] < offsets[{i}]", i + 1)));
                }
            }
            if offsets.last().is_some_and(|&o| o as usize > data.len()) {
                return Err(bad(format!(
                    "the last offset {} is beyond the {} data bytes",
                    offsets[len],
                    data.len()
                )));
            }
            let mut builder = BinaryBuilder::with_capacity(len, 0);
            for i in 0..len {
                if nulls.as_ref().is_some_and(|n| n.is_null(i)) {
                    builder.append_null();
                } else {
                    builder.append_value(&data[offsets[i] as usize..offsets[i + 1] as usize]);
                }
            }
            binary_result(builder.finish(), filo_type)?
        }
    };
    Ok(array)
}

/// Checks that every code of a DictStringVector but 0 (NA) names one of its `entries`.
fn check_codes(
    codes: &[i32],
    entries: usize,
    codes_vec: Option<Vector<'_, u8>>,
    fbuf: &[u8],
) -> Result<()> {
    let outside = |c: i32| c != 0 && usize::try_from(c).map_or(true, |c| c >= entries);
    match codes.iter().position(|&c| outside(c)) {
        None => Ok(()),
        Some(i) => {
            let off = codes_vec.map_or(0, |v| offset_of(fbuf, v.bytes()));
            Err(Error::new(
                ErrorClass::BadValue,
                format!(
                    "code {} of element {i} is outside the dictionary of {entries} entries",
                    codes[i]
                ),
            )
            .with_field("DictStringVector.codes")
            .at_offset(off)
            .at_row(i as u64))
        }
    }
}

/// A String vector as an Arrow `Dictionary(Int32, Utf8)`: a DictStringVector's codes become
/// the keys as they are (code 0, NA, a null key) over its dictionary, "" placeholder included;
/// other string vectors are dictionary-encoded after decoding.
fn decode_dictionary(bytes: &[u8], key: &DataType, value: &DataType) -> Result<ArrayRef> {
    if (key, value) != (&DataType::Int32, &DataType::Utf8) {
        return Err(Error::new(
            ErrorClass::UnsupportedType,
            format!("a Filo string vector is read as Dictionary(Int32, Utf8), not Dictionary({key}, {value})"),
        ));
    }
    let wire_type = WireType::from_header(header(bytes)?)?;
    if wire_type != WireType::DictString {
        let strings = decode(bytes, &DataType::Utf8)?;
        let dictionary = DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Utf8));
        return Ok(arrow::compute::cast(&strings, &dictionary)?);
    }
    let fbuf = &bytes[4..];
    let t = root::<fb::DictStringVector>(fbuf, "DictStringVector")?;
    let len = bounded_length(t.len(), fbuf, "DictStringVector.len")?;
    let (nbits, signed) = required_info(t.info(), "DictStringVector.info")?;
    check_int_info(nbits, signed, "DictStringVector.info")?;
    let codes_vec = t.codes();
    let codes = data_bytes(codes_vec, len, nbits, fbuf, "DictStringVector.codes")?;
    let codes = ints_i32(codes, nbits, signed, len);
    let values: StringArray = t.dictionary().map_or_else(
        || StringArray::new_null(0),
        |d| d.iter().map(Some).collect(),
    );
    let entries = values.len();
    check_codes(&codes, entries, codes_vec, fbuf)?;
    let nulls = NullBuffer::from(codes.iter().map(|&c| c != 0).collect::<Vec<_>>());
    let nulls = (nulls.null_count() > 0).then_some(nulls);
    let values: ArrayRef = if entries == 0 {
        // Every code is 0 (NA): the keys need one entry to point at.
        Arc::new(StringArray::from(vec![""]))
    } else {
        Arc::new(values)
    };
    let keys = arrow_array::Int32Array::new(ScalarBuffer::from(codes), nulls);
    Ok(Arc::new(
        arrow_array::DictionaryArray::<Int32Type>::try_new(keys, values)?,
    ))
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

fn verifier_options() -> VerifierOptions {
    VerifierOptions {
        max_apparent_size: 1 << 40,
        ..VerifierOptions::default()
    }
}

fn root<'a, T>(fbuf: &'a [u8], table: &str) -> Result<T::Inner>
where
    T: Follow<'a> + Verifiable + 'a,
{
    flatbuffers::root_with_opts::<T>(&verifier_options(), fbuf)
        .map_err(|e| flatbuffer_error(e, table))
}

/// A verifier error as an arrowsmith error: the file offset of the trouble and the field path.
fn flatbuffer_error(e: InvalidFlatbuffer, table: &str) -> Error {
    use InvalidFlatbuffer as I;
    let (class, position) = match &e {
        I::Utf8Error { range, .. } => (ErrorClass::InvalidUtf8, Some(range.start)),
        I::MissingNullTerminator { range, .. } => (ErrorClass::BufferOutOfBounds, Some(range.end)),
        I::Unaligned { position, .. } => (ErrorClass::BufferMisaligned, Some(*position)),
        I::RangeOutOfBounds { range, .. } => (ErrorClass::BufferOutOfBounds, Some(range.start)),
        I::SignedOffsetOutOfBounds { position, .. } => {
            (ErrorClass::BufferOutOfBounds, Some(*position))
        }
        _ => (ErrorClass::BadMeta, None),
    };
    let text = e.to_string();
    let text: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    let mut err = Error::new(
        class,
        format!("the FlatBuffer is damaged: {}", text.join("; ")),
    )
    .with_field(table.to_string());
    if let Some(p) = position {
        err = err.at_offset(p as u64 + 4);
    }
    err
}

/// The file offset of a slice inside the FlatBuffer.
fn offset_of(fbuf: &[u8], part: &[u8]) -> u64 {
    (part.as_ptr() as usize).saturating_sub(fbuf.as_ptr() as usize) as u64 + 4
}

fn missing(field: &str) -> Error {
    Error::new(ErrorClass::MissingField, "required field is absent").with_field(field.to_string())
}

/// The length of a vector whose elements take at least one bit each of the buffer, checked
/// against it before anything is allocated for them (NA masks included).
fn bounded_length(len: i32, fbuf: &[u8], field: &str) -> Result<usize> {
    let n = length(len, field)?;
    if n / 8 > fbuf.len() {
        return Err(Error::new(
            ErrorClass::BufferSize,
            format!(
                "{n} elements cannot fit in a vector of {} bytes",
                fbuf.len() + 4
            ),
        )
        .with_field(field.to_string()));
    }
    Ok(n)
}

fn length(len: i32, field: &str) -> Result<usize> {
    usize::try_from(len).map_err(|_| {
        Error::new(ErrorClass::BadValue, format!("length {len} is negative"))
            .with_field(field.to_string())
    })
}

/// Const vectors (and ConstString) expand a few bytes into `len` elements; their length is not
/// bounded by the buffer, so it is bounded here: an EmptyVector's maximum, or 64 elements per
/// byte of the vector, whichever is more.
fn check_expansion(len: usize, byte_len: usize) -> Result<()> {
    let limit = MAX_EMPTY_LEN.max(byte_len.saturating_mul(64));
    if len > limit {
        return Err(Error::new(
            ErrorClass::BadValue,
            format!("a constant vector of {byte_len} bytes claims {len} elements (limit {limit})"),
        ));
    }
    Ok(())
}

fn info_pair(info: &fb::DataInfo) -> (u16, bool) {
    // Read the struct's bytes directly: `signed` may hold any byte (nonzero = 1).
    (u16::from_le_bytes([info.0[0], info.0[1]]), info.0[2] != 0)
}

fn ddt_vars(vars: &fb::DDTVars) -> (i32, i8, i64) {
    let b = &vars.0;
    let len = i32::from_le_bytes([b[0], b[1], b[2], b[3]]);
    let base_tz = b[4] as i8;
    let mut m = [0u8; 8];
    m.copy_from_slice(&b[8..16]);
    (len, base_tz, i64::from_le_bytes(m))
}

fn required_info(info: Option<&fb::DataInfo>, field: &str) -> Result<(u16, bool)> {
    info.map(info_pair).ok_or_else(|| missing(field))
}

fn bad_info(nbits: u16, signed: bool, field: &str, accepted: &str) -> Error {
    Error::new(
        ErrorClass::BadMeta,
        format!(
            "(nbits {nbits}, signed {}) is not accepted here: expected {accepted}",
            signed as u8
        ),
    )
    .with_field(field.to_string())
}

fn check_int_info(nbits: u16, signed: bool, field: &str) -> Result<()> {
    match nbits {
        8 | 16 | 32 => Ok(()),
        _ => Err(bad_info(nbits, signed, field, "Int widths 8, 16 or 32")),
    }
}

fn check_long_info(nbits: u16, signed: bool, field: &str) -> Result<()> {
    match nbits {
        8 | 16 | 32 | 64 => Ok(()),
        _ => Err(bad_info(
            nbits,
            signed,
            field,
            "Long widths 8, 16, 32 or 64",
        )),
    }
}

/// The `[ubyte]` body holding `count` elements of `nbits`, checked to be long enough.
fn data_bytes<'a>(
    data: Option<Vector<'a, u8>>,
    count: usize,
    nbits: u16,
    fbuf: &[u8],
    field: &str,
) -> Result<&'a [u8]> {
    let need = count
        .checked_mul(usize::from(nbits))
        .map(|b| b.div_ceil(8))
        .ok_or_else(|| Error::new(ErrorClass::BufferSize, "size overflows").with_field(field))?;
    let bytes = data.map_or(&[][..], |d| d.bytes());
    if bytes.len() < need {
        let mut e = Error::new(
            ErrorClass::BufferSize,
            format!(
                "{count} elements of {nbits} bits need {need} bytes, the vector has {}",
                bytes.len()
            ),
        )
        .with_field(field.to_string());
        if let Some(d) = data {
            e = e.at_offset(offset_of(fbuf, d.bytes()));
        }
        return Err(e);
    }
    Ok(&bytes[..need])
}

macro_rules! widen {
    ($data:expr, $n:expr, $src:ty, $dst:ty) => {{
        const W: usize = std::mem::size_of::<$src>();
        $data[..$n * W]
            .chunks_exact(W)
            .map(|c| {
                let mut b = [0u8; W];
                b.copy_from_slice(c);
                <$src>::from_le_bytes(b) as $dst
            })
            .collect::<Vec<$dst>>()
    }};
}

/// `n` integers of `nbits` (8/16/32, checked by the caller) widened to i32.
fn ints_i32(data: &[u8], nbits: u16, signed: bool, n: usize) -> Vec<i32> {
    match (nbits, signed) {
        (8, true) => data[..n].iter().map(|&b| b as i8 as i32).collect(),
        (8, false) => data[..n].iter().map(|&b| b as i32).collect(),
        (16, true) => widen!(data, n, i16, i32),
        (16, false) => widen!(data, n, u16, i32),
        _ => widen!(data, n, i32, i32),
    }
}

/// `n` integers of `nbits` (8/16/32/64, checked by the caller) widened to i64.
fn ints_i64(data: &[u8], nbits: u16, signed: bool, n: usize) -> Vec<i64> {
    match (nbits, signed) {
        (8, true) => data[..n].iter().map(|&b| b as i8 as i64).collect(),
        (8, false) => data[..n].iter().map(|&b| b as i64).collect(),
        (16, true) => widen!(data, n, i16, i64),
        (16, false) => widen!(data, n, u16, i64),
        (32, true) => widen!(data, n, i32, i64),
        (32, false) => widen!(data, n, u32, i64),
        _ => widen!(data, n, i64, i64),
    }
}

fn long_array(
    filo_type: FiloType,
    data_type: &DataType,
    values: impl Into<ScalarBuffer<i64>>,
    nulls: Option<NullBuffer>,
) -> ArrayRef {
    let values = values.into();
    match (filo_type, data_type) {
        (FiloType::Long, _) => Arc::new(PrimitiveArray::<Int64Type>::new(values, nulls)),
        (_, DataType::Timestamp(TimeUnit::Millisecond, tz)) => Arc::new(
            PrimitiveArray::<TimestampMillisecondType>::new(values, nulls)
                .with_timezone_opt(tz.clone()),
        ),
        _ => Arc::new(
            PrimitiveArray::<TimestampMillisecondType>::new(values, nulls)
                .with_data_type(timestamp_utc()),
        ),
    }
}

/// The body of a Simple or Const primitive vector.
struct PrimitiveData<'a> {
    info: Option<&'a fb::DataInfo>,
    bytes: Option<Vector<'a, u8>>,
    constant: bool,
    /// The buffer the vector's bytes are in, when values may be shared with it.
    owner: Option<&'a Buffer>,
}

impl PrimitiveData<'_> {
    /// The `len` values in `bytes` as a typed buffer: a slice of the owner's memory when there
    /// is one and the bytes are aligned for `T`, else a copy.
    fn values<T: arrow_buffer::ArrowNativeType>(
        &self,
        bytes: &[u8],
        len: usize,
    ) -> ScalarBuffer<T> {
        let buffer = self
            .owner
            .and_then(|owner| crate::mapped::shared_slice::<T>(owner, bytes))
            .unwrap_or_else(|| crate::mapped::aligned_copy(bytes));
        ScalarBuffer::new(buffer, 0, len)
    }
}

/// Simple and Const primitive vectors.
fn primitive(
    filo_type: FiloType,
    data_type: &DataType,
    len: usize,
    data: PrimitiveData<'_>,
    fbuf: &[u8],
    nulls: Option<NullBuffer>,
) -> Result<ArrayRef> {
    let constant = data.constant;
    let table = if constant {
        "ConstPrimitiveVector"
    } else {
        "SimplePrimitiveVector"
    };
    let field_info = format!("{table}.info");
    let field_data = format!("{table}.data");
    if len == 0 {
        return Ok(new_null_array(data_type, 0).slice(0, 0));
    }
    let (nbits, signed) = required_info(data.info, &field_info)?;
    let count = if constant { 1 } else { len };
    let body = |count: usize, nbits: u16| data_bytes(data.bytes, count, nbits, fbuf, &field_data);
    Ok(match filo_type {
        FiloType::Boolean => {
            if nbits != 64 {
                return Err(bad_info(
                    nbits,
                    signed,
                    &field_info,
                    "(64, any): a u64 bitmap",
                ));
            }
            let bytes = body(count, 1)?;
            let values = if constant {
                if bytes[0] & 1 == 1 {
                    BooleanBuffer::new_set(len)
                } else {
                    BooleanBuffer::new_unset(len)
                }
            } else {
                BooleanBuffer::new(data.values::<u8>(bytes, bytes.len()).into_inner(), 0, len)
            };
            Arc::new(BooleanArray::new(values, nulls))
        }
        FiloType::Double => {
            if (nbits, signed) != (64, false) {
                return Err(bad_info(nbits, signed, &field_info, "(64, 0)"));
            }
            let bytes = body(count, 64)?;
            let values = if constant {
                vec![f64::from_le_bytes(bytes[..8].try_into().expect("8 bytes")); len].into()
            } else {
                data.values::<f64>(bytes, len)
            };
            Arc::new(PrimitiveArray::<Float64Type>::new(values, nulls))
        }
        FiloType::Float => {
            if (nbits, signed) != (32, false) {
                return Err(bad_info(nbits, signed, &field_info, "(32, 0)"));
            }
            let bytes = body(count, 32)?;
            let values = if constant {
                vec![f32::from_le_bytes(bytes[..4].try_into().expect("4 bytes")); len].into()
            } else {
                data.values::<f32>(bytes, len)
            };
            Arc::new(PrimitiveArray::<Float32Type>::new(values, nulls))
        }
        FiloType::Int => {
            check_int_info(nbits, signed, &field_info)?;
            let bytes = body(count, nbits)?;
            let values = if constant {
                vec![ints_i32(bytes, nbits, signed, 1)[0]; len].into()
            } else if (nbits, signed) == (32, true) {
                data.values::<i32>(bytes, len)
            } else {
                ints_i32(bytes, nbits, signed, len).into()
            };
            Arc::new(PrimitiveArray::<Int32Type>::new(values, nulls))
        }
        _ => {
            check_long_info(nbits, signed, &field_info)?;
            let bytes = body(count, nbits)?;
            let values = if constant {
                vec![ints_i64(bytes, nbits, signed, 1)[0]; len].into()
            } else if nbits == 64 {
                // filo marks 64-bit data unsigned whatever its sign; the bytes are i64's.
                data.values::<i64>(bytes, len)
            } else {
                ints_i64(bytes, nbits, signed, len).into()
            };
            long_array(filo_type, data_type, values, nulls)
        }
    })
}

fn string_result(array: StringArray, filo_type: FiloType) -> ArrayRef {
    if filo_type == FiloType::Binary {
        let (offsets, values, nulls) = array.into_parts();
        Arc::new(arrow_array::BinaryArray::new(offsets, values, nulls))
    } else {
        Arc::new(array)
    }
}

fn binary_result(array: arrow_array::BinaryArray, filo_type: FiloType) -> Result<ArrayRef> {
    if filo_type == FiloType::Binary {
        return Ok(Arc::new(array));
    }
    let (offsets, values, nulls): (OffsetBuffer<i32>, Buffer, Option<NullBuffer>) =
        array.into_parts();
    Ok(Arc::new(
        StringArray::try_new(offsets, values, nulls).map_err(|e| {
            Error::new(
                ErrorClass::InvalidUtf8,
                format!("an element is not UTF-8: {e}"),
            )
        })?,
    ))
}

fn mask_kind(mask: Option<fb::NaMask<'_>>) -> Result<MaskKind> {
    Ok(match mask {
        None => MaskKind::Absent,
        Some(m) => match m.maskType().0 {
            0 => MaskKind::AllZeroes,
            1 => MaskKind::SimpleBitMask {
                words: m.bitMask().map_or(0, |b| b.len()),
            },
            2 => MaskKind::AllOnes,
            other => return Err(bad_mask_type(other)),
        },
    })
}

fn bad_mask_type(value: i8) -> Error {
    Error::new(
        ErrorClass::BadValue,
        format!("maskType {value} is not AllZeroes (0), SimpleBitMask (1) or AllOnes (2)"),
    )
    .with_field("NaMask.maskType")
}

/// Arrow validity from a NaMask (bit set = NA), `None` when no element is NA.
fn validity(mask: Option<fb::NaMask<'_>>, len: usize) -> Result<Option<NullBuffer>> {
    let mask = match mask {
        None => return Ok(None),
        Some(m) => m,
    };
    match mask.maskType().0 {
        0 => Ok(None),
        2 => Ok((len > 0).then(|| NullBuffer::new_null(len))),
        1 => {
            let words = match mask.bitMask() {
                None => return Ok(None),
                Some(w) => w.bytes(),
            };
            let nbytes = len.div_ceil(8);
            let mut valid = vec![0xFFu8; nbytes];
            let shared = nbytes.min(words.len());
            for (v, m) in valid[..shared].iter_mut().zip(&words[..shared]) {
                *v = !m;
            }
            let nulls = NullBuffer::new(BooleanBuffer::new(Buffer::from_vec(valid), 0, len));
            Ok((nulls.null_count() > 0).then_some(nulls))
        }
        other => Err(bad_mask_type(other)),
    }
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
