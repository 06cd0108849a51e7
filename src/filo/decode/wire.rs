//! What a vector's header word and tables say, without decoding its elements: its wire
//! type, length, NA mask and encoding parameters (specs/filo.md sections 3–5).

use super::table::{ddt_vars, info_pair, length, mask_kind, missing, root, MaskKind};
use crate::error::{Error, ErrorClass, Result};
use crate::filo::gen::vector as fb;
use crate::filo::mapping::FiloType;

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
    split_header(bytes).map(|(header, _)| header)
}

/// The header word of a vector and the FlatBuffer after it.
pub(super) fn split_header(bytes: &[u8]) -> Result<(u32, &[u8])> {
    match bytes.split_first_chunk::<4>() {
        Some((h, fbuf)) => Ok((u32::from_le_bytes(*h), fbuf)),
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
    let (header, fbuf) = split_header(bytes)?;
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
