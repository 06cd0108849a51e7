//! One Arrow array → one Filo vector, making filo-scala 0.2.6's encoding choices
//! (specs/filo.md section 12) and writing its bytes (section 13, Appendix A).

use rustc_hash::FxHashMap;
use std::str::FromStr;

use arrow::compute::cast;
use arrow_array::cast::AsArray;
use arrow_array::types::*;
use arrow_array::{Array, ArrayRef};
use arrow_buffer::NullBuffer;
use arrow_schema::{DataType, TimeUnit};

use super::builder::Builder;
use super::decode::{WireType, MAX_EMPTY_LEN};
use super::mapping::{fixed_offset_quarter_hours, FiloType};
use crate::error::{Error, ErrorClass, Result};

/// filo's encoding hints, plus arrowsmith's fixed-string encoding (section 12).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
pub enum Hint {
    /// filo's default: the writer chooses.
    #[default]
    AutoDetect,
    /// No Diff for integers, no Dict for strings (Const still applies).
    SimpleEncoding,
    /// Dict for strings with two or more distinct values.
    DictionaryEncoding,
    /// Allows Diff where it pays; it does not force it (as in filo).
    DiffEncoding,
    /// arrowsmith's SimpleFixedStringVector (0x0302) for a String column.
    FixedString,
}

impl Hint {
    /// The hint's name as filo spells it (`"DictionaryEncoding"`, …).
    pub fn name(self) -> &'static str {
        match self {
            Hint::AutoDetect => "AutoDetect",
            Hint::SimpleEncoding => "SimpleEncoding",
            Hint::DictionaryEncoding => "DictionaryEncoding",
            Hint::DiffEncoding => "DiffEncoding",
            Hint::FixedString => "FixedString",
        }
    }
}

impl FromStr for Hint {
    type Err = Error;
    fn from_str(s: &str) -> Result<Hint> {
        Ok(match s {
            "AutoDetect" | "auto" => Hint::AutoDetect,
            "SimpleEncoding" | "simple" => Hint::SimpleEncoding,
            "DictionaryEncoding" | "dict" => Hint::DictionaryEncoding,
            "DiffEncoding" | "diff" => Hint::DiffEncoding,
            "FixedString" | "fixed" => Hint::FixedString,
            other => {
                return Err(Error::invalid_argument(format!(
                    "unknown Filo encoding hint {other:?}: expected auto, simple, dict, diff or \
                     fixed"
                )))
            }
        })
    }
}

/// Options of [`encode`] (and of each column a [`Writer`](super::Writer) encodes): `Default`,
/// a `with_…` setter and a getter per setting, as [`WriterOptions`](super::WriterOptions).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct EncodeOptions {
    hint: Hint,
}

impl EncodeOptions {
    /// The encoding hint (default [`Hint::AutoDetect`]: the encoder chooses, as filo does).
    pub fn with_hint(mut self, hint: Hint) -> Self {
        self.hint = hint;
        self
    }
    /// The encoding hint in effect.
    pub fn hint(&self) -> Hint {
        self.hint
    }
}

/// Encodes `array` as one Filo vector of element type `filo_type` (section 10.2 lists the Arrow
/// types each accepts). Use [`FiloType::for_write`] to pick the natural type.
pub fn encode(array: &dyn Array, filo_type: FiloType, options: &EncodeOptions) -> Result<Vec<u8>> {
    let len = array.len();
    let nulls = array.logical_nulls().filter(|n| n.null_count() > 0);
    let na = nulls.as_ref().map_or(0, |n| n.null_count());
    if na == len && len <= MAX_EMPTY_LEN {
        return Ok(empty(len));
    }
    let hint = options.hint;
    let wrong = || {
        Error::new(
            ErrorClass::UnsupportedType,
            format!(
                "Arrow {} cannot be written as Filo {filo_type}",
                array.data_type()
            ),
        )
    };
    match filo_type {
        FiloType::Int | FiloType::Long => {
            let ok = match filo_type {
                FiloType::Int => matches!(
                    array.data_type(),
                    DataType::Int8
                        | DataType::Int16
                        | DataType::Int32
                        | DataType::UInt8
                        | DataType::UInt16
                ),
                _ => matches!(
                    array.data_type(),
                    DataType::Int8
                        | DataType::Int16
                        | DataType::Int32
                        | DataType::Int64
                        | DataType::UInt8
                        | DataType::UInt16
                        | DataType::UInt32
                ),
            };
            if !ok {
                return Err(wrong());
            }
            let wide = cast(array, &DataType::Int64)?;
            let values = wide.as_primitive::<Int64Type>().values();
            let long = filo_type == FiloType::Long;
            encode_integers(values, nulls.as_ref(), long, false, hint)
        }
        FiloType::Timestamp => {
            let millis = timestamp_millis(array).ok_or_else(wrong)??;
            encode_integers(&millis, nulls.as_ref(), true, true, hint)
        }
        FiloType::Double => match array.as_primitive_opt::<Float64Type>() {
            Some(a) => Ok(encode_floats(
                a.values(),
                nulls.as_ref(),
                |v| v.to_bits(),
                8,
            )),
            None => Err(wrong()),
        },
        FiloType::Float => match array.as_primitive_opt::<Float32Type>() {
            Some(a) => Ok(encode_floats(
                a.values(),
                nulls.as_ref(),
                |v| v.to_bits() as u64,
                4,
            )),
            None => Err(wrong()),
        },
        FiloType::Boolean => match array.as_boolean_opt() {
            Some(a) => Ok(encode_booleans(a, nulls.as_ref())),
            None => Err(wrong()),
        },
        FiloType::String => {
            if !matches!(
                array.data_type(),
                DataType::Utf8
                    | DataType::LargeUtf8
                    | DataType::Utf8View
                    | DataType::Dictionary(_, _)
            ) {
                return Err(wrong());
            }
            let strings = cast(array, &DataType::Utf8)?;
            let strings = strings.as_string::<i32>();
            let values: Vec<Option<&[u8]>> = (0..len)
                .map(|i| {
                    (nulls.as_ref().is_none_or(|n| n.is_valid(i)))
                        .then(|| strings.value(i).as_bytes())
                })
                .collect();
            encode_strings(&values, hint)
        }
        FiloType::Binary => {
            let bin = match array.data_type() {
                DataType::Binary | DataType::LargeBinary => cast(array, &DataType::Binary)?,
                _ => return Err(wrong()),
            };
            let bin = bin.as_binary::<i32>();
            let values: Vec<Option<&[u8]>> = (0..len)
                .map(|i| (nulls.as_ref().is_none_or(|n| n.is_valid(i))).then(|| bin.value(i)))
                .collect();
            Ok(encode_binary(&values))
        }
        FiloType::DateTime => {
            let (millis, qh) = datetime_parts(array).ok_or_else(wrong)??;
            encode_datetimes(&millis, &qh, nulls.as_ref())
        }
    }
}

fn empty(len: usize) -> Vec<u8> {
    (((len as u32) << 8) | 1).to_le_bytes().to_vec()
}

/// Epoch milliseconds of a timestamp array; an error for a value with a sub-ms remainder.
fn timestamp_millis(array: &dyn Array) -> Option<Result<Vec<i64>>> {
    let (values, per_ms): (&[i64], i64) = match array.data_type() {
        DataType::Timestamp(TimeUnit::Second, _) => {
            let v = array.as_primitive::<TimestampSecondType>().values();
            return Some(
                v.iter()
                    .enumerate()
                    .map(|(i, &s)| {
                        s.checked_mul(1000).ok_or_else(|| {
                            Error::new(
                                ErrorClass::ValueOutOfRange,
                                format!("{s} s overflows i64 milliseconds"),
                            )
                            .at_row(i as u64)
                        })
                    })
                    .collect(),
            );
        }
        DataType::Timestamp(TimeUnit::Millisecond, _) => {
            return Some(Ok(array
                .as_primitive::<TimestampMillisecondType>()
                .values()
                .to_vec()))
        }
        DataType::Timestamp(TimeUnit::Microsecond, _) => (
            array.as_primitive::<TimestampMicrosecondType>().values(),
            1000,
        ),
        DataType::Timestamp(TimeUnit::Nanosecond, _) => (
            array.as_primitive::<TimestampNanosecondType>().values(),
            1_000_000,
        ),
        _ => return None,
    };
    let nulls = array.logical_nulls();
    Some(
        values
            .iter()
            .enumerate()
            .map(|(i, &v)| {
                let valid = nulls.as_ref().is_none_or(|n| n.is_valid(i));
                if valid && v % per_ms != 0 {
                    Err(Error::new(
                        ErrorClass::ValueOutOfRange,
                        format!(
                            "timestamp {v} is not a whole number of milliseconds; Filo stores \
                             milliseconds"
                        ),
                    )
                    .at_row(i as u64))
                } else {
                    Ok(v.div_euclid(per_ms))
                }
            })
            .collect(),
    )
}

/// The instants and quarter-hour offsets of a DateTime column: the struct form, or a
/// timestamp column with one fixed offset (section 10.3).
#[allow(clippy::type_complexity)]
fn datetime_parts(array: &dyn Array) -> Option<Result<(Vec<i64>, Vec<i32>)>> {
    match array.data_type() {
        DataType::Timestamp(_, tz) => {
            let qh = match fixed_offset_quarter_hours(tz.as_deref()) {
                Some(q) => q,
                None => {
                    return Some(Err(Error::new(
                        ErrorClass::UnsupportedType,
                        format!(
                            "time zone {:?} is not a fixed offset that is a multiple of 15 \
                             minutes; write DateTime from the struct {{millis, \
                             tz_offset_quarter_hours}} instead",
                            tz.as_deref().unwrap_or("")
                        ),
                    )))
                }
            };
            Some(timestamp_millis(array)?.map(|m| {
                let n = m.len();
                (m, vec![qh as i32; n])
            }))
        }
        DataType::Struct(_) => {
            let s = array.as_struct_opt()?;
            let millis = match timestamp_millis(s.column(0).as_ref())? {
                Ok(m) => m,
                Err(e) => return Some(Err(e)),
            };
            let qh_arr = s.column(1).as_primitive_opt::<Int8Type>()?;
            let nulls = array.logical_nulls();
            let mut qh = Vec::with_capacity(millis.len());
            for (i, &q) in qh_arr.values().iter().enumerate() {
                let valid = nulls.as_ref().is_none_or(|n| n.is_valid(i));
                if valid && !(-95..=95).contains(&q) {
                    return Some(Err(Error::new(
                        ErrorClass::ValueOutOfRange,
                        format!("tz_offset_quarter_hours {q} is outside -95 … 95"),
                    )
                    .at_row(i as u64)));
                }
                qh.push(q as i32);
            }
            Some(Ok((millis, qh)))
        }
        _ => None,
    }
}

/// The width chooser of section 12.3.
pub fn width(min: i64, max: i64, long: bool) -> (u16, bool) {
    if min >= -128 && max <= 127 {
        (8, true)
    } else if min >= 0 && max <= 255 {
        (8, false)
    } else if min >= -32768 && max <= 32767 {
        (16, true)
    } else if min >= 0 && max <= 65535 {
        (16, false)
    } else if !long || (min >= i32::MIN as i64 && max <= i32::MAX as i64) {
        (32, true)
    } else if min >= 0 && max <= u32::MAX as i64 {
        (32, false)
    } else {
        (64, false)
    }
}

/// `shouldDiff` of section 12.4.
pub fn should_diff(min: i64, max: i64, long: bool) -> bool {
    let d = max as i128 - min as i128;
    if d <= 0 {
        return false;
    }
    let (lo, hi) = (min as i128, max as i128);
    if min >= 0 {
        (d < 256 && hi >= 256)
            || (d < 65_536 && hi >= 65_536)
            || (long && d < (1 << 32) && hi >= (1 << 32))
    } else {
        (d < 256 && (lo < -128 || hi > 127))
            || (d < 65_536 && (lo < -32_768 || hi > 32_767))
            || (long && d < (1 << 32) && (lo < i32::MIN as i128 || hi > i32::MAX as i128))
    }
}

/// Appends the low `nbits` of each value, little-endian.
fn pack(values: impl Iterator<Item = i64>, nbits: u16, out: &mut Vec<u8>) {
    match nbits {
        8 => out.extend(values.map(|v| v as u8)),
        16 => values.for_each(|v| out.extend_from_slice(&(v as u16).to_le_bytes())),
        32 => values.for_each(|v| out.extend_from_slice(&(v as u32).to_le_bytes())),
        _ => values.for_each(|v| out.extend_from_slice(&v.to_le_bytes())),
    }
}

/// The smallest power-of-two word capacity filo's growing bit set has after setting `highest`.
fn bitset_words(len: usize, highest: Option<usize>) -> usize {
    let mut c = 1usize;
    if let Some(h) = highest {
        while c <= h >> 6 {
            c *= 2;
        }
    }
    len.div_ceil(64).max(c)
}

/// The NaMask recipe of Appendix A.5; returns the table's position.
fn na_mask(b: &mut Builder, len: usize, nulls: Option<&NullBuffer>) -> usize {
    let na = nulls.map_or(0, |n| n.null_count());
    // Some NAs, not all: a bitmap (none, or all, is a mask type alone).
    let partial = nulls.filter(|_| na > 0 && na < len);
    let bit_mask = if let Some(n) = partial {
        let highest = (0..len).rev().find(|&i| n.is_null(i));
        let words = bitset_words(len, highest);
        let mut w = vec![0u64; words];
        for i in 0..len {
            if n.is_null(i) {
                w[i >> 6] |= 1 << (i & 63);
            }
        }
        Some(b.long_vector(&w))
    } else {
        None
    };
    b.start_table(2);
    if na < len || len == 0 {
        b.add_i8(if na == 0 { 0 } else { 1 });
        b.slot(0);
    }
    if let Some(bm) = bit_mask {
        b.add_uoffset(bm);
        b.slot(1);
    }
    b.end_table()
}

fn is_na(nulls: Option<&NullBuffer>, i: usize) -> bool {
    nulls.is_some_and(|n| n.is_null(i))
}

/// Simple / Const primitive table (section 13): NaMask → data → table(4).
fn primitive_table(
    header: WireType,
    len: usize,
    nulls: Option<&NullBuffer>,
    body: &[u8],
    align: usize,
    info: (u16, bool),
) -> Vec<u8> {
    let mut b = Builder::with_capacity(body.len() + 128);
    let mask = na_mask(&mut b, len, nulls);
    let data = b.byte_vector(body, align);
    b.start_table(4);
    b.add_uoffset(mask);
    b.slot(1);
    if len != 0 {
        b.add_i32(len as i32);
        b.slot(0);
    }
    b.add_uoffset(data);
    b.slot(3);
    b.data_info(info.0, info.1);
    b.slot(2);
    let root = b.end_table();
    b.finish(root, header.header())
}

fn encode_integers(
    values: &[i64],
    nulls: Option<&NullBuffer>,
    long: bool,
    timestamp: bool,
    hint: Hint,
) -> Result<Vec<u8>> {
    let len = values.len();
    let (mut min, mut max) = if long {
        (i64::MAX, i64::MIN)
    } else {
        (i32::MAX as i64, i32::MIN as i64)
    };
    for (i, &v) in values.iter().enumerate() {
        if !is_na(nulls, i) {
            min = min.min(v);
            max = max.max(v);
        }
    }
    if !timestamp && min == max {
        let info = width(min, max, long);
        let mut body = Vec::with_capacity(8);
        pack(std::iter::once(min), info.0, &mut body);
        let align = usize::from(info.0 / 8);
        return Ok(primitive_table(
            WireType::ConstPrimitive,
            len,
            nulls,
            &body,
            align,
            info,
        ));
    }
    let diff = timestamp
        || (matches!(hint, Hint::AutoDetect | Hint::DiffEncoding) && should_diff(min, max, long));
    if diff {
        let span = if min <= max {
            max.checked_sub(min).ok_or_else(|| {
                Error::new(
                    ErrorClass::ValueOutOfRange,
                    format!(
                        "the timestamps span {min} … {max} ms, more than i64 milliseconds can \
                         hold as a difference"
                    ),
                )
            })?
        } else {
            max.wrapping_sub(min)
        };
        let info = width(0, span, long);
        let base = min;
        let mut body = Vec::with_capacity(len * usize::from(info.0 / 8));
        let deltas = values.iter().enumerate().map(|(i, &v)| {
            let v = if is_na(nulls, i) { 0 } else { v };
            if long {
                v.wrapping_sub(base)
            } else {
                (v as i32).wrapping_sub(base as i32) as i64
            }
        });
        pack(deltas, info.0, &mut body);
        let mut b = Builder::with_capacity(body.len() + 128);
        let mask = na_mask(&mut b, len, nulls);
        let data = b.byte_vector(&body, usize::from(info.0 / 8));
        b.start_table(5);
        b.add_uoffset(mask);
        b.slot(1);
        if len != 0 {
            b.add_i32(len as i32);
            b.slot(0);
        }
        b.add_uoffset(data);
        b.slot(4);
        b.data_info(info.0, info.1);
        b.slot(3);
        if base != 0 {
            b.add_i64(base);
            b.slot(2);
        }
        let root = b.end_table();
        return Ok(b.finish(root, WireType::DiffPrimitive.header()));
    }
    let info = width(min, max, long);
    let mut body = Vec::with_capacity(len * usize::from(info.0 / 8));
    let simple = values
        .iter()
        .enumerate()
        .map(|(i, &v)| if is_na(nulls, i) { 0 } else { v });
    pack(simple, info.0, &mut body);
    Ok(primitive_table(
        WireType::SimplePrimitive,
        len,
        nulls,
        &body,
        usize::from(info.0 / 8),
        info,
    ))
}

fn encode_floats<T: Copy + PartialEq>(
    values: &[T],
    nulls: Option<&NullBuffer>,
    bits: impl Fn(T) -> u64,
    size: usize,
) -> Vec<u8> {
    let len = values.len();
    // arrowsmith rule (section 12.2): Const only for finite, bit-identical values.
    let mut first: Option<u64> = None;
    let mut constant = true;
    for (i, &v) in values.iter().enumerate() {
        if is_na(nulls, i) {
            continue;
        }
        let b = bits(v);
        let finite = if size == 8 {
            f64::from_bits(b).is_finite()
        } else {
            f32::from_bits(b as u32).is_finite()
        };
        if !finite || first.is_some_and(|f| f != b) {
            constant = false;
            break;
        }
        first = Some(b);
    }
    let nbits = (size * 8) as u16;
    let to_bytes = |b: u64, out: &mut Vec<u8>| out.extend_from_slice(&b.to_le_bytes()[..size]);
    if constant {
        if let Some(f) = first {
            let mut body = Vec::with_capacity(size);
            to_bytes(f, &mut body);
            return primitive_table(
                WireType::ConstPrimitive,
                len,
                nulls,
                &body,
                size,
                (nbits, false),
            );
        }
    }
    let mut body = Vec::with_capacity(len * size);
    for (i, &v) in values.iter().enumerate() {
        to_bytes(if is_na(nulls, i) { 0 } else { bits(v) }, &mut body);
    }
    primitive_table(
        WireType::SimplePrimitive,
        len,
        nulls,
        &body,
        size,
        (nbits, false),
    )
}

fn encode_booleans(array: &arrow_array::BooleanArray, nulls: Option<&NullBuffer>) -> Vec<u8> {
    let len = array.len();
    let value = |i: usize| !is_na(nulls, i) && array.value(i);
    let mut seen_true = false;
    let mut seen_false = false;
    for i in 0..len {
        if !is_na(nulls, i) {
            if array.value(i) {
                seen_true = true;
            } else {
                seen_false = true;
            }
        }
    }
    if seen_true != seen_false {
        let body = (seen_true as u64).to_le_bytes();
        return primitive_table(WireType::ConstPrimitive, len, nulls, &body, 8, (64, false));
    }
    let highest = (0..len).rev().find(|&i| value(i));
    let words = bitset_words(len, highest);
    let mut w = vec![0u64; words];
    for i in 0..len {
        if value(i) {
            w[i >> 6] |= 1 << (i & 63);
        }
    }
    let body: Vec<u8> = w.iter().flat_map(|x| x.to_le_bytes()).collect();
    primitive_table(WireType::SimplePrimitive, len, nulls, &body, 8, (64, false))
}

/// Java's `String.hashCode` over UTF-16 code units.
fn java_hash(s: &[u8]) -> u32 {
    let s = std::str::from_utf8(s).unwrap_or("");
    s.encode_utf16()
        .fold(0u32, |h, c| h.wrapping_mul(31).wrapping_add(c as u32))
}

/// The distinct values in the iteration order of Scala 2.11's `mutable.HashSet` (Appendix B).
pub(crate) fn dictionary_order<'a>(values: impl Iterator<Item = &'a [u8]>) -> Vec<&'a [u8]> {
    fn improve(h: u32, seed: u32) -> u32 {
        let i = h
            .wrapping_mul(0x9E37_75CD)
            .swap_bytes()
            .wrapping_mul(0x9E37_75CD);
        i.rotate_right(seed)
    }
    struct Table<'a> {
        slots: Vec<Option<(&'a [u8], u32)>>,
        log: u32,
        count: usize,
        threshold: usize,
    }
    impl<'a> Table<'a> {
        fn new(log: u32) -> Self {
            let n = 1usize << log;
            Table {
                slots: vec![None; n],
                log,
                count: 0,
                threshold: n * 450 / 1000,
            }
        }
        fn insert(&mut self, s: &'a [u8], h: u32) -> bool {
            let mask = self.slots.len() - 1;
            let mut p = (improve(h, self.log) >> (32 - self.log)) as usize;
            while let Some((t, _)) = self.slots[p] {
                if t == s {
                    return false;
                }
                p = (p + 1) & mask;
            }
            self.slots[p] = Some((s, h));
            self.count += 1;
            true
        }
    }
    let mut table = Table::new(5);
    for s in values {
        if table.insert(s, java_hash(s)) && table.count >= table.threshold {
            let old = std::mem::replace(&mut table, Table::new(0));
            table = Table::new(old.log + 1);
            for (s, h) in old.slots.into_iter().flatten() {
                table.insert(s, h);
            }
        }
    }
    table.slots.into_iter().flatten().map(|(s, _)| s).collect()
}

/// Each row's value as an index into the distinct values in first-seen order (`None` for NA),
/// and those values. With `give_up_above`, stops once there are more distinct values than
/// that and returns `None`: the caller then knows it will not use a dictionary.
#[allow(clippy::type_complexity)]
fn distinct_values<'a>(
    values: &[Option<&'a [u8]>],
    give_up_above: Option<usize>,
) -> Option<(Vec<Option<u32>>, Vec<&'a [u8]>)> {
    let mut index: FxHashMap<&'a [u8], u32> = FxHashMap::default();
    let mut distinct: Vec<&'a [u8]> = Vec::new();
    let mut ids = Vec::with_capacity(values.len());
    for v in values {
        ids.push(v.map(|s| {
            *index.entry(s).or_insert_with(|| {
                distinct.push(s);
                (distinct.len() - 1) as u32
            })
        }));
        if give_up_above.is_some_and(|limit| distinct.len() > limit) {
            return None;
        }
    }
    Some((ids, distinct))
}

fn encode_strings(values: &[Option<&[u8]>], hint: Hint) -> Result<Vec<u8>> {
    let len = values.len();
    let nulls = NullBuffer::from(values.iter().map(Option::is_some).collect::<Vec<_>>());
    let nulls = (nulls.null_count() > 0).then_some(nulls);
    let nulls = nulls.as_ref();
    if hint == Hint::FixedString {
        return encode_fixed_strings(values, nulls);
    }
    // A dictionary is used for at most len/2 distinct values unless asked for: past that the
    // distinct values need not be known, and counting them stops. (One distinct value — a
    // constant vector — is below that bound for every length but 1, which it stays within.)
    let dict_hint = hint == Hint::DictionaryEncoding;
    let auto = matches!(hint, Hint::AutoDetect | Hint::DiffEncoding);
    let limit = (!dict_hint).then_some((len / 2).max(1));
    if let Some((ids, distinct)) = distinct_values(values, limit) {
        let u = distinct.len();
        if u == 1 {
            let value = distinct[0];
            let mut b = Builder::with_capacity(value.len() + 128);
            let mask = na_mask(&mut b, len, nulls);
            let s = b.create_string(value);
            b.start_table(3);
            b.add_uoffset(s);
            b.slot(2);
            b.add_uoffset(mask);
            b.slot(1);
            if len != 0 {
                b.add_i32(len as i32);
                b.slot(0);
            }
            let root = b.end_table();
            return Ok(b.finish(root, WireType::ConstString.header()));
        }
        if dict_hint || (auto && u <= len / 2) {
            return Ok(encode_dictionary(&ids, &distinct, len));
        }
    }
    let total: usize = values.iter().map(|s| s.map_or(0, <[u8]>::len) + 12).sum();
    let mut b = Builder::with_capacity(total + 128);
    let mask = na_mask(&mut b, len, nulls);
    let mut strings: Vec<usize> = Vec::with_capacity(len);
    for v in values.iter().rev() {
        strings.push(b.create_string(v.unwrap_or(b"")));
    }
    strings.reverse();
    let data = b.offset_vector(&strings);
    b.start_table(2);
    b.add_uoffset(data);
    b.slot(1);
    b.add_uoffset(mask);
    b.slot(0);
    let root = b.end_table();
    Ok(b.finish(root, WireType::SimpleString.header()))
}

/// A DictStringVector: codes 1… in the order filo's Scala `HashSet` iterates the distinct
/// values (0 is NA), then the dictionary with "" in front.
fn encode_dictionary(ids: &[Option<u32>], distinct: &[&[u8]], len: usize) -> Vec<u8> {
    let u = distinct.len();
    // The set's iteration order depends only on the order values first arrive, so the distinct
    // values in first-seen order give the order all rows would.
    let order = dictionary_order(distinct.iter().copied());
    let position: FxHashMap<&[u8], i64> = order
        .iter()
        .enumerate()
        .map(|(i, s)| (*s, i as i64 + 1))
        .collect();
    let code_of_id: Vec<i64> = distinct.iter().map(|s| position[s]).collect();
    let info = width(0, u as i64 + 1, false);
    let mut body = Vec::with_capacity(len * usize::from(info.0 / 8));
    pack(
        ids.iter()
            .map(|id| id.map_or(0, |id| code_of_id[id as usize])),
        info.0,
        &mut body,
    );
    let total: usize = order.iter().map(|s| s.len() + 8).sum();
    let mut b = Builder::with_capacity(body.len() + total + 128);
    let codes = b.byte_vector(&body, usize::from(info.0 / 8));
    let mut strings: Vec<usize> = Vec::with_capacity(order.len() + 1);
    for s in order.iter().rev() {
        strings.push(b.create_string(s));
    }
    strings.push(b.create_string(b""));
    strings.reverse();
    let dictionary = b.offset_vector(&strings);
    b.start_table(4);
    b.add_uoffset(dictionary);
    b.slot(1);
    if len != 0 {
        b.add_i32(len as i32);
        b.slot(0);
    }
    b.add_uoffset(codes);
    b.slot(3);
    b.data_info(info.0, info.1);
    b.slot(2);
    let root = b.end_table();
    b.finish(root, WireType::DictString.header())
}

fn encode_fixed_strings(values: &[Option<&[u8]>], nulls: Option<&NullBuffer>) -> Result<Vec<u8>> {
    let len = values.len();
    let max_len = values.iter().flatten().map(|s| s.len()).max().unwrap_or(0);
    if max_len > 255 {
        return Err(Error::new(
            ErrorClass::ValueOutOfRange,
            format!(
                "a value of {max_len} bytes is too long for a fixed-string vector (255 at most)"
            ),
        ));
    }
    let w = max_len + 1;
    let mut body = vec![0u8; len * w];
    for (i, v) in values.iter().enumerate() {
        if let Some(s) = v {
            body[i * w] = s.len() as u8;
            body[i * w + 1..i * w + 1 + s.len()].copy_from_slice(s);
        }
    }
    Ok(primitive_table(
        WireType::SimpleFixedString,
        len,
        nulls,
        &body,
        1,
        ((8 * w) as u16, false),
    ))
}

fn encode_binary(values: &[Option<&[u8]>]) -> Vec<u8> {
    let len = values.len();
    let nulls = NullBuffer::from(values.iter().map(Option::is_some).collect::<Vec<_>>());
    let nulls = (nulls.null_count() > 0).then_some(nulls);
    let mut data = Vec::new();
    let mut offsets = Vec::with_capacity(len + 1);
    offsets.push(0i32);
    for v in values {
        data.extend_from_slice(v.unwrap_or(b""));
        offsets.push(data.len() as i32);
    }
    let mut b = Builder::with_capacity(data.len() + 4 * len + 128);
    let mask = na_mask(&mut b, len, nulls.as_ref());
    let d = b.byte_vector(&data, 1);
    let o = b.int_vector(&offsets);
    b.start_table(3);
    b.add_uoffset(d);
    b.slot(2);
    b.add_uoffset(o);
    b.slot(1);
    b.add_uoffset(mask);
    b.slot(0);
    let root = b.end_table();
    b.finish(root, WireType::SimpleBinary.header())
}

fn encode_datetimes(millis: &[i64], qh: &[i32], nulls: Option<&NullBuffer>) -> Result<Vec<u8>> {
    let len = millis.len();
    let (mut min, mut max) = (i64::MAX, i64::MIN);
    let (mut tmin, mut tmax) = (i32::MAX, i32::MIN);
    for i in 0..len {
        if !is_na(nulls, i) {
            min = min.min(millis[i]);
            max = max.max(millis[i]);
            tmin = tmin.min(qh[i]);
            tmax = tmax.max(qh[i]);
        }
    }
    let span = if min <= max {
        max.checked_sub(min).ok_or_else(|| {
            Error::new(
                ErrorClass::ValueOutOfRange,
                "the DateTime instants span more than i64 milliseconds can hold as a difference",
            )
        })?
    } else {
        0
    };
    let minfo = width(0, span, true);
    let mut mbody = Vec::with_capacity(len * usize::from(minfo.0 / 8));
    pack(
        (0..len).map(|i| {
            let v = if is_na(nulls, i) { 0 } else { millis[i] };
            v.wrapping_sub(min)
        }),
        minfo.0,
        &mut mbody,
    );
    let mut b = Builder::with_capacity(mbody.len() + len + 160);
    let mask = na_mask(&mut b, len, nulls);
    let m = b.byte_vector(&mbody, usize::from(minfo.0 / 8));
    let tz = if tmin < tmax {
        let tinfo = width(0, (tmax - tmin) as i64, false);
        let mut tbody = Vec::with_capacity(len * usize::from(tinfo.0 / 8));
        pack(
            (0..len).map(|i| {
                let v = if is_na(nulls, i) { 0 } else { qh[i] };
                v.wrapping_sub(tmin) as i64
            }),
            tinfo.0,
            &mut tbody,
        );
        Some((b.byte_vector(&tbody, usize::from(tinfo.0 / 8)), tinfo))
    } else {
        None
    };
    b.start_table(6);
    b.add_uoffset(mask);
    b.slot(0);
    b.ddt_vars(len as i32, tmin as i8, min);
    b.slot(1);
    b.data_info(minfo.0, minfo.1);
    b.slot(2);
    b.add_uoffset(m);
    b.slot(3);
    if let Some((t, tinfo)) = tz {
        b.data_info(tinfo.0, tinfo.1);
        b.slot(4);
        b.add_uoffset(t);
        b.slot(5);
    }
    let root = b.end_table();
    Ok(b.finish(root, WireType::DiffDateTime.header()))
}

/// Encodes `array` with the Filo type its Arrow type maps to (section 10.2).
pub fn encode_array(array: &ArrayRef, options: &EncodeOptions) -> Result<Vec<u8>> {
    let t = FiloType::for_write(array.data_type())?;
    encode(array.as_ref(), t, options)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn width_table() {
        assert_eq!(width(-128, 127, false), (8, true));
        assert_eq!(width(0, 255, false), (8, false));
        assert_eq!(width(0, 40000, false), (16, false));
        assert_eq!(width(0, 70000, false), (32, true));
        assert_eq!(width(0, 1 << 32, true), (64, false));
        assert_eq!(width(0, u32::MAX as i64, true), (32, false));
    }

    #[test]
    fn diff_tiers() {
        assert!(!should_diff(100, 200, false));
        assert!(should_diff(200, 300, false));
        assert!(should_diff(-200, -100, false));
        assert!(!should_diff(-100, 100, false));
        assert!(should_diff(100000, 140000, false));
        assert!(!should_diff(5, 5, false));
    }

    #[test]
    fn dictionary_order_of_the_spec_example() {
        let v: Vec<&[u8]> = vec![b"apple", b"banana"];
        assert_eq!(
            dictionary_order(v.into_iter()),
            vec![&b"banana"[..], &b"apple"[..]]
        );
    }
}
