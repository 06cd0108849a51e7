//! bcolz's JSON: Python's `json.dumps` output, which may hold the bare tokens `NaN`,
//! `Infinity` and `-Infinity`, and which bcolz reads as ASCII.

use serde_json::Value;

use crate::error::{Error, ErrorClass, Result};

/// Parses lenient JSON: the non-finite tokens outside string literals are read as `null`
/// (the reader never needs their values). The error is [`ErrorClass::BadMeta`] at the byte
/// offset in `text` where parsing stopped.
pub fn parse_lenient(text: &str) -> Result<Value> {
    let cleaned = replace_non_finite(text);
    serde_json::from_str(&cleaned).map_err(|e| {
        Error::new(ErrorClass::BadMeta, format!("invalid JSON: {e}")).at_offset(byte_offset(
            text,
            e.line(),
            e.column(),
        ))
    })
}

/// The byte offset of a 1-based line and column (as serde_json reports them) in `text`.
fn byte_offset(text: &str, line: usize, column: usize) -> u64 {
    let line_start: usize = text
        .split_inclusive('\n')
        .take(line.saturating_sub(1))
        .map(str::len)
        .sum();
    (line_start + column.saturating_sub(1)).min(text.len()) as u64
}

/// `text` with `NaN`, `Infinity`, `-Infinity` outside strings replaced by `null` padded to the
/// same length (so error positions stay right).
fn replace_non_finite(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    let mut in_string = false;
    let mut start = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if in_string {
            if b == b'\\' {
                i += 2;
                continue;
            }
            if b == b'"' {
                in_string = false;
            }
            i += 1;
            continue;
        }
        if b == b'"' {
            in_string = true;
            i += 1;
            continue;
        }
        if let Some(token) = ["-Infinity", "Infinity", "NaN"]
            .into_iter()
            .find(|t| bytes[i..].starts_with(t.as_bytes()))
        {
            out.push_str(&text[start..i]);
            out.push_str("null");
            out.extend(std::iter::repeat_n(' ', token.len().saturating_sub(4)));
            i += token.len();
            start = i;
            continue;
        }
        i += 1;
    }
    out.push_str(&text[start..]);
    out
}

/// Replaces every non-ASCII character by its `\uXXXX` escape (surrogate pairs above the BMP).
/// Non-ASCII can only occur inside string literals of valid JSON, so this keeps the meaning.
pub fn escape_non_ascii(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if c.is_ascii() {
            out.push(c);
        } else {
            let mut units = [0u16; 2];
            for unit in c.encode_utf16(&mut units) {
                out.push_str(&format!("\\u{unit:04x}"));
            }
        }
    }
    out
}

/// A JSON string literal as Python's `json.dumps(ensure_ascii=True)` writes it.
pub fn python_string(s: &str) -> String {
    escape_non_ascii(&serde_json::to_string(s).expect("strings serialize"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn non_finite_tokens_outside_strings() {
        let v = parse_lenient(r#"{"a": NaN, "b": [Infinity, -Infinity], "c": "NaN \" Infinity"}"#)
            .unwrap();
        assert!(v["a"].is_null());
        assert!(v["b"][0].is_null() && v["b"][1].is_null());
        assert_eq!(v["c"], "NaN \" Infinity");
        let bad = parse_lenient("{\n  \"a\": Nope}").unwrap_err();
        assert_eq!(bad.class(), ErrorClass::BadMeta);
        assert_eq!(bad.offset(), Some(9), "{bad}");
        assert!(parse_lenient("").is_err());
    }

    #[test]
    fn ascii_escapes() {
        assert_eq!(
            escape_non_ascii("h\u{e9}llo 😀"),
            "h\\u00e9llo \\ud83d\\ude00"
        );
        assert_eq!(python_string("caf\u{e9}"), "\"caf\\u00e9\"");
    }
}
