//! MessagePack ⇄ JSON of app data and JSON elements (spec §9.2, §9.3).
//!
//! `tree` holds the reference conversions through an `rmpv::ValueRef` tree, both ways. The
//! reader turns every point's app_data into JSON, and a tree costs allocations per point, so
//! this module's printer walks the msgpack bytes once and writes the JSON straight into the
//! caller's buffer. It only claims the cases it handles exactly like [`msgpack_to_json`] over
//! [`parse_msgpack`]; anything else — malformed input, values without a JSON form, very deep
//! nesting — makes it step back, and the caller runs the tree-based path, which then decides
//! (and words the error). So both paths give the same text and the same errors by
//! construction; `tests` check the fast path against the tree on random values.

mod tree;

use std::collections::HashSet;

use crate::error::Result;

pub use self::tree::{
    json_text_to_msgpack, msgpack_to_json, parse_msgpack, push_json_string, write_json_value,
};

/// Nesting beyond this is left to the tree-based path (which has its own depth limit).
const MAX_FAST_DEPTH: usize = 100;

/// Maps with up to this many keys check for duplicates without allocating.
const INLINE_KEYS: usize = 16;

/// Appends the JSON text of the single msgpack value `bytes` to `out`; `Ok(true)` when the value
/// is nil (its text `null` is appended like any other). On error `out` is as it was; the error
/// is [`ErrorClass::BadValue`](crate::ErrorClass::BadValue) for bytes that are not one
/// well-formed msgpack value ("invalid msgpack: …"), and
/// [`ErrorClass::UnsupportedType`](crate::ErrorClass::UnsupportedType) for a value without a
/// JSON form (bad UTF-8, a duplicate or non-scalar map key).
pub fn append_json(bytes: &[u8], out: &mut Vec<u8>) -> Result<bool> {
    let start = out.len();
    let mut printer = Printer {
        bytes,
        pos: 0,
        out: &mut *out,
    };
    if printer.value(0).is_some() && printer.pos == bytes.len() {
        return Ok(is_nil_marker(bytes[0]));
    }
    out.truncate(start);
    let value = parse_msgpack(bytes)?;
    let mut text = String::new();
    msgpack_to_json(&value, &mut text)?;
    out.extend_from_slice(text.as_bytes());
    Ok(matches!(value, rmpv::ValueRef::Nil))
}

/// Checks that `bytes` hold exactly one msgpack value, with the verdict and error of
/// [`parse_msgpack`] but without building the value.
pub fn validate(bytes: &[u8]) -> Result<()> {
    let mut skipper = Skipper { bytes, pos: 0 };
    if skipper.value(0).is_some() && skipper.pos == bytes.len() {
        return Ok(());
    }
    parse_msgpack(bytes).map(|_| ())
}

/// `rmpv` reads the reserved marker `C1` as nil, like `C0`.
fn is_nil_marker(marker: u8) -> bool {
    marker == 0xC0 || marker == 0xC1
}

/// What follows a marker byte, as far as the walk needs to know.
enum Item {
    Nil,
    Bool(bool),
    Unsigned(u64),
    Signed(i64),
    F32(f32),
    F64(f64),
    Str(usize),
    Bin(usize),
    /// Type byte, then the data.
    Ext(usize),
    Array(usize),
    Map(usize),
}

/// A cursor over msgpack bytes; `None` means "not handled here".
trait Cursor<'a> {
    fn bytes(&self) -> &'a [u8];
    fn pos_mut(&mut self) -> &mut usize;

    #[inline(always)]
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let bytes = self.bytes();
        let pos = *self.pos_mut();
        let end = pos.checked_add(n).filter(|&end| end <= bytes.len())?;
        *self.pos_mut() = end;
        Some(&bytes[pos..end])
    }

    #[inline(always)]
    fn be<const N: usize>(&mut self) -> Option<[u8; N]> {
        self.take(N).map(|b| b.try_into().expect("N bytes"))
    }

    #[inline(always)]
    fn item(&mut self) -> Option<Item> {
        let marker = self.take(1)?[0];
        Some(match marker {
            0x00..=0x7F => Item::Unsigned(marker as u64),
            0x80..=0x8F => Item::Map((marker & 0x0F) as usize),
            0x90..=0x9F => Item::Array((marker & 0x0F) as usize),
            0xA0..=0xBF => Item::Str((marker & 0x1F) as usize),
            0xC0 | 0xC1 => Item::Nil,
            0xC2 => Item::Bool(false),
            0xC3 => Item::Bool(true),
            0xC4 => Item::Bin(u8::from_be_bytes(self.be()?) as usize),
            0xC5 => Item::Bin(u16::from_be_bytes(self.be()?) as usize),
            0xC6 => Item::Bin(u32::from_be_bytes(self.be()?) as usize),
            0xC7 => Item::Ext(u8::from_be_bytes(self.be()?) as usize),
            0xC8 => Item::Ext(u16::from_be_bytes(self.be()?) as usize),
            0xC9 => Item::Ext(u32::from_be_bytes(self.be()?) as usize),
            0xCA => Item::F32(f32::from_be_bytes(self.be()?)),
            0xCB => Item::F64(f64::from_be_bytes(self.be()?)),
            0xCC => Item::Unsigned(u8::from_be_bytes(self.be()?) as u64),
            0xCD => Item::Unsigned(u16::from_be_bytes(self.be()?) as u64),
            0xCE => Item::Unsigned(u32::from_be_bytes(self.be()?) as u64),
            0xCF => Item::Unsigned(u64::from_be_bytes(self.be()?)),
            0xD0 => Item::Signed(i8::from_be_bytes(self.be()?) as i64),
            0xD1 => Item::Signed(i16::from_be_bytes(self.be()?) as i64),
            0xD2 => Item::Signed(i32::from_be_bytes(self.be()?) as i64),
            0xD3 => Item::Signed(i64::from_be_bytes(self.be()?)),
            0xD4 => Item::Ext(1),
            0xD5 => Item::Ext(2),
            0xD6 => Item::Ext(4),
            0xD7 => Item::Ext(8),
            0xD8 => Item::Ext(16),
            0xD9 => Item::Str(u8::from_be_bytes(self.be()?) as usize),
            0xDA => Item::Str(u16::from_be_bytes(self.be()?) as usize),
            0xDB => Item::Str(u32::from_be_bytes(self.be()?) as usize),
            0xDC => Item::Array(u16::from_be_bytes(self.be()?) as usize),
            0xDD => Item::Array(u32::from_be_bytes(self.be()?) as usize),
            0xDE => Item::Map(u16::from_be_bytes(self.be()?) as usize),
            0xDF => Item::Map(u32::from_be_bytes(self.be()?) as usize),
            0xE0..=0xFF => Item::Signed(marker as i8 as i64),
        })
    }
}

/// Walks one value without output (validation).
struct Skipper<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> for Skipper<'a> {
    fn bytes(&self) -> &'a [u8] {
        self.bytes
    }
    fn pos_mut(&mut self) -> &mut usize {
        &mut self.pos
    }
}

impl Skipper<'_> {
    fn value(&mut self, depth: usize) -> Option<()> {
        if depth > MAX_FAST_DEPTH {
            return None;
        }
        match self.item()? {
            Item::Str(n) | Item::Bin(n) => {
                self.take(n)?;
            }
            Item::Ext(n) => {
                self.take(1 + n)?;
            }
            Item::Array(n) => {
                for _ in 0..n {
                    self.value(depth + 1)?;
                }
            }
            Item::Map(n) => {
                for _ in 0..n {
                    self.value(depth + 1)?;
                    self.value(depth + 1)?;
                }
            }
            _ => {}
        }
        Some(())
    }
}

struct Printer<'a, 'o> {
    bytes: &'a [u8],
    pos: usize,
    out: &'o mut Vec<u8>,
}

impl<'a> Cursor<'a> for Printer<'a, '_> {
    fn bytes(&self) -> &'a [u8] {
        self.bytes
    }
    fn pos_mut(&mut self) -> &mut usize {
        &mut self.pos
    }
}

impl Printer<'_, '_> {
    fn value(&mut self, depth: usize) -> Option<()> {
        if depth > MAX_FAST_DEPTH {
            return None;
        }
        match self.item()? {
            Item::Str(n) => push_string(utf8(self.take(n)?)?, self.out),
            Item::Bin(n) => {
                let data = self.take(n)?;
                push_bytes(data, self.out);
            }
            Item::Ext(n) => {
                let kind = self.take(1)?[0] as i8;
                let data = self.take(n)?;
                self.out.push(b'[');
                self.out
                    .extend_from_slice(itoa::Buffer::new().format(kind).as_bytes());
                self.out.push(b',');
                push_bytes(data, self.out);
                self.out.push(b']');
            }
            Item::Array(n) => {
                self.out.push(b'[');
                for i in 0..n {
                    if i > 0 {
                        self.out.push(b',');
                    }
                    self.value(depth + 1)?;
                }
                self.out.push(b']');
            }
            Item::Map(n) => self.map(n, depth)?,
            scalar => push_scalar(&scalar, self.out),
        }
        Some(())
    }

    fn map(&mut self, n: usize, depth: usize) -> Option<()> {
        if n <= 1 {
            // No key can clash.
            self.out.push(b'{');
            if n == 1 {
                self.key()?;
                self.out.push(b':');
                self.value(depth + 1)?;
            }
            self.out.push(b'}');
            return Some(());
        }
        // Where each key's quoted text lies in `out`: two keys clash when these bytes are
        // equal (escaping is one-to-one), as the tree path's set of unescaped keys says.
        let mut inline = [(0usize, 0usize); INLINE_KEYS];
        let mut spilled = Vec::new();
        self.out.push(b'{');
        for i in 0..n {
            if i > 0 {
                self.out.push(b',');
            }
            let start = self.out.len();
            self.key()?;
            let span = (start, self.out.len());
            match inline.get_mut(i) {
                Some(slot) if n <= INLINE_KEYS => *slot = span,
                _ => spilled.push(span),
            }
            self.out.push(b':');
            self.value(depth + 1)?;
        }
        self.out.push(b'}');
        if n > 1 {
            let spans = if n <= INLINE_KEYS {
                &inline[..n]
            } else {
                &spilled[..]
            };
            let out: &[u8] = self.out;
            let key = |&(s, e): &(usize, usize)| &out[s..e];
            let clash = if n <= INLINE_KEYS {
                spans
                    .iter()
                    .enumerate()
                    .any(|(i, a)| spans[..i].iter().any(|b| key(a) == key(b)))
            } else {
                let mut seen = HashSet::with_capacity(n);
                !spans.iter().all(|s| seen.insert(key(s)))
            };
            if clash {
                return None;
            }
        }
        Some(())
    }

    /// A map key as a JSON string: strings as they are, nil/bool/number keys as their JSON
    /// text; other keys have no JSON form.
    fn key(&mut self) -> Option<()> {
        match self.item()? {
            Item::Str(n) => push_string(utf8(self.take(n)?)?, self.out),
            Item::Bin(_) | Item::Ext(_) | Item::Array(_) | Item::Map(_) => return None,
            scalar => {
                // Number, bool and null texts hold nothing that needs escaping.
                self.out.push(b'"');
                push_scalar(&scalar, self.out);
                self.out.push(b'"');
            }
        }
        Some(())
    }
}

/// `bytes` when they are UTF-8.
#[inline]
fn utf8(bytes: &[u8]) -> Option<&[u8]> {
    // Keys and short values are mostly ASCII: checked a word at a time.
    if bytes.is_ascii() || simdutf8::basic::from_utf8(bytes).is_ok() {
        Some(bytes)
    } else {
        None
    }
}

#[inline]
fn push_scalar(item: &Item, out: &mut Vec<u8>) {
    match *item {
        Item::Nil => out.extend_from_slice(b"null"),
        Item::Bool(b) => out.extend_from_slice(if b { b"true" } else { b"false" }),
        Item::Unsigned(u) => out.extend_from_slice(itoa::Buffer::new().format(u).as_bytes()),
        Item::Signed(i) => out.extend_from_slice(itoa::Buffer::new().format(i).as_bytes()),
        // serde_json's own float text, as the tree path prints it.
        Item::F32(f) if f.is_finite() => {
            serde_json::to_writer(&mut *out, &f).expect("a Vec takes any text")
        }
        Item::F64(f) if f.is_finite() => {
            serde_json::to_writer(&mut *out, &f).expect("a Vec takes any text")
        }
        Item::F32(_) | Item::F64(_) => out.extend_from_slice(b"null"),
        Item::Str(_) | Item::Bin(_) | Item::Ext(_) | Item::Array(_) | Item::Map(_) => {
            unreachable!("not a scalar")
        }
    }
}

fn push_bytes(data: &[u8], out: &mut Vec<u8>) {
    out.push(b'[');
    for (i, b) in data.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(itoa::Buffer::new().format(*b).as_bytes());
    }
    out.push(b']');
}

/// A JSON string literal of UTF-8 `text`, escaped like [`push_json_string`].
#[inline]
fn push_string(text: &[u8], out: &mut Vec<u8>) {
    out.push(b'"');
    let mut start = 0;
    for (i, &b) in text.iter().enumerate() {
        let escape: &[u8] = match b {
            b'"' => b"\\\"",
            b'\\' => b"\\\\",
            b'\n' => b"\\n",
            b'\r' => b"\\r",
            b'\t' => b"\\t",
            0x08 => b"\\b",
            0x0C => b"\\f",
            0x00..=0x1F => b"",
            _ => continue,
        };
        out.extend_from_slice(&text[start..i]);
        if escape.is_empty() {
            const HEX: &[u8; 16] = b"0123456789abcdef";
            out.extend_from_slice(b"\\u00");
            out.push(HEX[(b >> 4) as usize]);
            out.push(HEX[(b & 0xF) as usize]);
        } else {
            out.extend_from_slice(escape);
        }
        start = i + 1;
    }
    out.extend_from_slice(&text[start..]);
    out.push(b'"');
}

/// The fast path alone: `Some(is_nil)` when it printed the whole value, `None` when it stepped
/// back (then `out` may hold partial text).
#[cfg(test)]
fn fast_only(bytes: &[u8], out: &mut Vec<u8>) -> Option<bool> {
    let mut printer = Printer { bytes, pos: 0, out };
    printer.value(0)?;
    (printer.pos == bytes.len()).then(|| is_nil_marker(bytes[0]))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use rmpv::Value;

    use crate::error::{Error, ErrorClass};

    /// What an error says: its class and message.
    type Verdict = (ErrorClass, String);

    fn verdict(e: Error) -> Verdict {
        (e.class(), e.message().to_owned())
    }

    /// The tree path: what the reader printed before the fast path existed.
    fn tree(bytes: &[u8]) -> std::result::Result<(String, bool), Verdict> {
        let value = parse_msgpack(bytes).map_err(verdict)?;
        let mut text = String::new();
        msgpack_to_json(&value, &mut text).map_err(verdict)?;
        Ok((text, matches!(value, rmpv::ValueRef::Nil)))
    }

    /// Encodes `value` choosing, from `seed`, among the valid widths of every item (msgpack
    /// allows non-minimal forms; other writers use them).
    fn encode(value: &Value, seed: &mut u64, out: &mut Vec<u8>) {
        let mut pick = |n: u64| {
            *seed ^= *seed << 13;
            *seed ^= *seed >> 7;
            *seed ^= *seed << 17;
            *seed % n
        };
        fn len_prefix(out: &mut Vec<u8>, len: usize, fix: Option<u8>, markers: [u8; 3], pick: u64) {
            match (fix, pick) {
                (Some(base), 0) if len < 16 || (base == 0xA0 && len < 32) => {
                    out.push(base | len as u8)
                }
                (_, 0 | 1) if len < 256 && markers[0] != 0 => {
                    out.push(markers[0]);
                    out.push(len as u8);
                }
                (_, 0..=2) if len < 65536 => {
                    out.push(markers[1]);
                    out.extend_from_slice(&(len as u16).to_be_bytes());
                }
                _ => {
                    out.push(markers[2]);
                    out.extend_from_slice(&(len as u32).to_be_bytes());
                }
            }
        }
        match value {
            Value::Integer(i) => {
                if let Some(u) = i.as_u64() {
                    let widest = pick(4);
                    match widest {
                        0 if u < 128 => out.push(u as u8),
                        0 | 1 if u < 256 => out.extend_from_slice(&[0xCC, u as u8]),
                        0..=2 if u < 65536 => {
                            out.push(0xCD);
                            out.extend_from_slice(&(u as u16).to_be_bytes())
                        }
                        _ if u <= i64::MAX as u64 && pick(2) == 0 => {
                            out.push(0xD3);
                            out.extend_from_slice(&(u as i64).to_be_bytes())
                        }
                        _ => {
                            out.push(0xCF);
                            out.extend_from_slice(&u.to_be_bytes())
                        }
                    }
                } else {
                    let s = i.as_i64().expect("signed");
                    match pick(3) {
                        0 if s >= -32 => out.push(s as i8 as u8),
                        0 | 1 if s >= -128 => out.extend_from_slice(&[0xD0, s as i8 as u8]),
                        _ => {
                            out.push(0xD3);
                            out.extend_from_slice(&s.to_be_bytes())
                        }
                    }
                }
            }
            Value::String(s) => {
                let bytes = s.as_bytes();
                len_prefix(out, bytes.len(), Some(0xA0), [0xD9, 0xDA, 0xDB], pick(4));
                out.extend_from_slice(bytes);
            }
            Value::Binary(b) => {
                len_prefix(out, b.len(), None, [0xC4, 0xC5, 0xC6], pick(4));
                out.extend_from_slice(b);
            }
            Value::Array(items) => {
                len_prefix(out, items.len(), Some(0x90), [0, 0xDC, 0xDD], pick(4));
                for item in items {
                    encode(item, seed, out);
                }
            }
            Value::Map(entries) => {
                len_prefix(out, entries.len(), Some(0x80), [0, 0xDE, 0xDF], pick(4));
                for (k, v) in entries {
                    encode(k, seed, out);
                    encode(v, seed, out);
                }
            }
            Value::Ext(kind, data) => {
                let fixed = [1usize, 2, 4, 8, 16].iter().position(|&n| n == data.len());
                match fixed {
                    Some(i) if pick(2) == 0 => out.push(0xD4 + i as u8),
                    _ => len_prefix(out, data.len(), None, [0xC7, 0xC8, 0xC9], pick(4)),
                }
                out.push(*kind as u8);
                out.extend_from_slice(data);
            }
            // Nil, booleans and floats have one form each (nil also reads from C1).
            Value::Nil if pick(4) == 0 => out.push(0xC1),
            other => rmpv::encode::write_value(out, other).expect("Vec"),
        }
    }

    fn text() -> impl Strategy<Value = String> {
        prop_oneof![
            "[a-c]{0,2}",
            any::<String>(),
            "[\\x00-\\x1f\"\\\\/\\x7f é€😀]{0,8}",
        ]
    }

    fn scalar() -> impl Strategy<Value = Value> {
        prop_oneof![
            Just(Value::Nil),
            any::<bool>().prop_map(Value::Boolean),
            any::<u64>().prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            (-300i64..300).prop_map(Value::from),
            any::<f32>().prop_map(Value::F32),
            any::<f64>().prop_map(Value::F64),
            prop_oneof![Just(f64::NAN), Just(f64::INFINITY), Just(1e300), Just(-0.0)]
                .prop_map(Value::F64),
            text().prop_map(Value::from),
        ]
    }

    fn value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            4 => scalar(),
            1 => proptest::collection::vec(any::<u8>(), 0..20).prop_map(Value::Binary),
            1 => (any::<i8>(), proptest::collection::vec(any::<u8>(), 0..20))
                .prop_map(|(k, d)| Value::Ext(k, d)),
        ];
        leaf.prop_recursive(5, 64, 20, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..20).prop_map(Value::Array),
                // Keys from a small set clash often; some keys have no JSON form.
                proptest::collection::vec(
                    (
                        prop_oneof![
                            6 => "[a-c1]{0,1}".prop_map(Value::from),
                            2 => scalar(),
                            1 => inner.clone(),
                        ],
                        inner
                    ),
                    0..20
                )
                .prop_map(Value::Map),
            ]
        })
    }

    fn check(bytes: &[u8]) -> Result<(), TestCaseError> {
        let expected = tree(bytes);
        let mut fast = b"prefix".to_vec();
        if let Some(nil) = fast_only(bytes, &mut fast) {
            let (text, tree_nil) = expected.clone().map_err(|e| {
                TestCaseError::fail(format!("fast path printed {fast:?}, tree path: {e:?}"))
            })?;
            prop_assert_eq!(&fast[6..], text.as_bytes());
            prop_assert_eq!(nil, tree_nil);
        }
        let mut out = b"prefix".to_vec();
        match (append_json(bytes, &mut out).map_err(verdict), expected) {
            (Ok(nil), Ok((text, tree_nil))) => {
                prop_assert_eq!(&out[6..], text.as_bytes());
                prop_assert_eq!(nil, tree_nil);
            }
            (Err(e), Err(f)) => {
                prop_assert_eq!(e, f);
                prop_assert_eq!(&out[..], b"prefix");
            }
            (got, want) => prop_assert!(false, "got {:?}, want {:?}", got, want),
        }
        prop_assert_eq!(
            validate(bytes).map_err(verdict),
            parse_msgpack(bytes).map(|_| ()).map_err(verdict)
        );
        Ok(())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        /// Same text, same nil-ness, same errors as the tree path; and the fast path really is
        /// the one taken for every value that has a JSON form.
        #[test]
        fn prints_like_the_tree_path(v in value(), seed in any::<u64>()) {
            let mut bytes = Vec::new();
            encode(&v, &mut (seed | 1), &mut bytes);
            check(&bytes)?;
            if tree(&bytes).is_ok() {
                prop_assert!(fast_only(&bytes, &mut Vec::new()).is_some(), "fast path stepped back");
            }
        }

        /// Damaged, truncated and extended encodings: the fast path never accepts what the tree
        /// path refuses.
        #[test]
        fn damaged_bytes_agree(
            v in value(),
            seed in any::<u64>(),
            edits in proptest::collection::vec((any::<usize>(), any::<u8>()), 0..3),
            cut in proptest::option::of(any::<usize>()),
            tail in proptest::collection::vec(any::<u8>(), 0..3),
        ) {
            let mut bytes = Vec::new();
            encode(&v, &mut (seed | 1), &mut bytes);
            for (at, byte) in edits {
                let at = at % bytes.len();
                bytes[at] = byte;
            }
            if let Some(cut) = cut {
                bytes.truncate(cut % (bytes.len() + 1));
            }
            bytes.extend_from_slice(&tail);
            if !bytes.is_empty() {
                check(&bytes)?;
            }
        }

        #[test]
        fn random_bytes_agree(bytes in proptest::collection::vec(any::<u8>(), 1..40)) {
            check(&bytes)?;
        }
    }

    #[test]
    fn cases_by_hand() {
        let cases: &[(&[u8], &str)] = &[
            (&[0x81, 0xA2, b'i', b'd', 0xCD, 0x01, 0x2C], r#"{"id":300}"#),
            // Non-string keys print as strings; 1 and "1" clash.
            (
                &[0x82, 0x01, 0xC3, 0xC0, 0xC2],
                r#"{"1":true,"null":false}"#,
            ),
            (&[0x92, 0xC1, 0xCA, 0x3D, 0xCC, 0xCC, 0xCD], "[null,0.1]"),
            (&[0xD4, 0xFF, 0x07], "[-1,[7]]"),
            (&[0xA3, 0x61, 0x0A, 0x01], r#""a\n\u0001""#),
        ];
        for (bytes, text) in cases {
            let mut out = Vec::new();
            assert_eq!(fast_only(bytes, &mut out), Some(false));
            assert_eq!(out, text.as_bytes());
        }
        let mut out = Vec::new();
        assert!(append_json(&[0xC1], &mut out).unwrap());
        let dup = [0x82, 0x01, 0xC0, 0xA1, b'1', 0xC0];
        let (class, message) = verdict(append_json(&dup, &mut out).unwrap_err());
        assert_eq!(class, ErrorClass::UnsupportedType);
        assert!(message.contains("appears twice"), "{message}");
        let (class, message) = verdict(append_json(&[0x92, 0x01], &mut out).unwrap_err());
        assert_eq!(class, ErrorClass::BadValue);
        assert!(message.starts_with("invalid msgpack"), "{message}");
        // Deep nesting goes to the tree path, which still prints it.
        let mut deep = vec![0x91; 300];
        deep.push(0x01);
        out.clear();
        assert_eq!(fast_only(&deep, &mut Vec::new()), None);
        assert!(!append_json(&deep, &mut out).unwrap());
        assert_eq!(out.len(), 601);
    }
}
