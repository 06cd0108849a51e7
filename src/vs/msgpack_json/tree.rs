//! MessagePack ⇄ JSON through a value tree (spec §9.2, §9.3): the reference conversion. The
//! printer in the parent module gives the same text and errors without building the tree and
//! falls back to this one for what it does not handle.

use rmpv::ValueRef;

use crate::error::{Error, ErrorClass, Result};

/// Decodes exactly one msgpack value that uses all of `bytes`; the error
/// ([`ErrorClass::BadValue`]) reads "invalid msgpack: …".
pub fn parse_msgpack(bytes: &[u8]) -> Result<ValueRef<'_>> {
    let invalid = |why: String| Error::new(ErrorClass::BadValue, format!("invalid msgpack: {why}"));
    let mut rd = bytes;
    let value = rmpv::decode::read_value_ref(&mut rd).map_err(|e| invalid(e.to_string()))?;
    if !rd.is_empty() {
        return Err(invalid(format!(
            "{} trailing bytes after the value",
            rd.len()
        )));
    }
    Ok(value)
}

// ---------------------------------------------------------------------------------------------
// MessagePack → JSON text (spec §9.2)

/// The error of a value without a JSON form.
fn unrepresentable(message: impl Into<String>) -> Error {
    Error::new(ErrorClass::UnsupportedType, message)
}

/// Appends the JSON text of a msgpack value; fails ([`ErrorClass::UnsupportedType`]) when the
/// value has no JSON form.
pub fn msgpack_to_json(value: &ValueRef<'_>, out: &mut String) -> Result<()> {
    match value {
        ValueRef::Nil => out.push_str("null"),
        ValueRef::Boolean(b) => out.push_str(if *b { "true" } else { "false" }),
        ValueRef::Integer(i) => {
            if let Some(u) = i.as_u64() {
                out.push_str(itoa::Buffer::new().format(u));
            } else if let Some(s) = i.as_i64() {
                out.push_str(itoa::Buffer::new().format(s));
            }
        }
        ValueRef::F32(f) => {
            if f.is_finite() {
                out.push_str(
                    &serde_json::to_string(f).map_err(|e| unrepresentable(e.to_string()))?,
                );
            } else {
                out.push_str("null");
            }
        }
        ValueRef::F64(f) => {
            if f.is_finite() {
                out.push_str(
                    &serde_json::to_string(f).map_err(|e| unrepresentable(e.to_string()))?,
                );
            } else {
                out.push_str("null");
            }
        }
        ValueRef::String(s) => {
            let text = s
                .as_str()
                .ok_or_else(|| unrepresentable("invalid string: msgpack str is not UTF-8"))?;
            push_json_string(text, out);
        }
        ValueRef::Binary(bytes) => push_byte_array(bytes, out),
        ValueRef::Ext(ty, bytes) => {
            out.push('[');
            out.push_str(itoa::Buffer::new().format(*ty));
            out.push(',');
            push_byte_array(bytes, out);
            out.push(']');
        }
        ValueRef::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                msgpack_to_json(item, out)?;
            }
            out.push(']');
        }
        ValueRef::Map(entries) => {
            out.push('{');
            let mut seen = std::collections::HashSet::new();
            for (i, (key, item)) in entries.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                let key_text = json_key(key)?;
                if entries.len() > 1 && !seen.insert(key_text.clone()) {
                    return Err(unrepresentable(format!(
                        "app_data not representable as JSON; use app_data=msgpack (map key {key_text:?} appears twice)"
                    )));
                }
                push_json_string(&key_text, out);
                out.push(':');
                msgpack_to_json(item, out)?;
            }
            out.push('}');
        }
    }
    Ok(())
}

fn json_key(key: &ValueRef<'_>) -> Result<String> {
    match key {
        ValueRef::String(s) => s
            .as_str()
            .map(str::to_owned)
            .ok_or_else(|| unrepresentable("invalid string: msgpack map key is not UTF-8")),
        ValueRef::Nil
        | ValueRef::Boolean(_)
        | ValueRef::Integer(_)
        | ValueRef::F32(_)
        | ValueRef::F64(_) => {
            let mut text = String::new();
            msgpack_to_json(key, &mut text)?;
            Ok(text)
        }
        other => Err(unrepresentable(format!(
            "app_data not representable as JSON; use app_data=msgpack (a map key of type {})",
            match other {
                ValueRef::Binary(_) => "bin",
                ValueRef::Ext(..) => "ext",
                ValueRef::Array(_) => "array",
                _ => "map",
            }
        ))),
    }
}

fn push_byte_array(bytes: &[u8], out: &mut String) {
    out.push('[');
    for (i, b) in bytes.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(itoa::Buffer::new().format(*b));
    }
    out.push(']');
}

/// A JSON string literal: only `"`, `\` and control characters escaped, UTF-8 kept.
pub fn push_json_string(text: &str, out: &mut String) {
    out.push('"');
    let mut start = 0;
    for (i, c) in text.char_indices() {
        let escape: Option<&str> = match c {
            '"' => Some("\\\""),
            '\\' => Some("\\\\"),
            '\n' => Some("\\n"),
            '\r' => Some("\\r"),
            '\t' => Some("\\t"),
            '\u{08}' => Some("\\b"),
            '\u{0C}' => Some("\\f"),
            c if (c as u32) < 0x20 => None,
            _ => continue,
        };
        out.push_str(&text[start..i]);
        match escape {
            Some(e) => out.push_str(e),
            None => out.push_str(&format!("\\u{:04x}", c as u32)),
        }
        start = i + c.len_utf8();
    }
    out.push_str(&text[start..]);
    out.push('"');
}

// ---------------------------------------------------------------------------------------------
// JSON text → MessagePack (spec §9.3)

/// Packs one JSON text as msgpack (smallest int forms, str for strings, key order kept); the
/// error ([`ErrorClass::BadValue`]) reads "invalid JSON: …".
pub fn json_text_to_msgpack(text: &str, out: &mut Vec<u8>) -> Result<()> {
    let value: serde_json::Value = serde_json::from_str(text)
        .map_err(|e| Error::new(ErrorClass::BadValue, format!("invalid JSON: {e}")))?;
    write_json_value(&value, out);
    Ok(())
}

/// Appends `value` to `out` as msgpack (integers as the smallest msgpack integer).
pub fn write_json_value(value: &serde_json::Value, out: &mut Vec<u8>) {
    use serde_json::Value;
    // Writing into a Vec cannot fail.
    match value {
        Value::Null => out.push(0xC0),
        Value::Bool(b) => out.push(if *b { 0xC3 } else { 0xC2 }),
        Value::Number(n) => {
            if let Some(u) = n.as_u64() {
                let _ = rmp::encode::write_uint(out, u);
            } else if let Some(i) = n.as_i64() {
                let _ = rmp::encode::write_sint(out, i);
            } else {
                let _ = rmp::encode::write_f64(out, n.as_f64().unwrap_or(f64::NAN));
            }
        }
        Value::String(s) => {
            let _ = rmp::encode::write_str(out, s);
        }
        Value::Array(items) => {
            let _ = rmp::encode::write_array_len(out, items.len() as u32);
            for item in items {
                write_json_value(item, out);
            }
        }
        Value::Object(map) => {
            let _ = rmp::encode::write_map_len(out, map.len() as u32);
            for (k, v) in map {
                let _ = rmp::encode::write_str(out, k);
                write_json_value(v, out);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn msgpack_json_both_ways() {
        let mut packed = Vec::new();
        json_text_to_msgpack(r#"{"a":1,"b":[-1,300,1.5,null,true],"c":"β"}"#, &mut packed).unwrap();
        let mut text = String::new();
        msgpack_to_json(&parse_msgpack(&packed).unwrap(), &mut text).unwrap();
        assert_eq!(text, r#"{"a":1,"b":[-1,300,1.5,null,true],"c":"β"}"#);
        // {} is 80; the spec's JSON example.
        packed.clear();
        json_text_to_msgpack(r#"[1,"x",null]"#, &mut packed).unwrap();
        assert_eq!(packed, [0x93, 0x01, 0xA1, 0x78, 0xC0]);
        // Duplicate keys after conversion: error.
        let dup = [0x82, 0x01, 0xC0, 0xA1, b'1', 0xC0];
        assert!(msgpack_to_json(&parse_msgpack(&dup).unwrap(), &mut String::new()).is_err());
        // f32 shortest, u64 max, bin and ext.
        let v = [
            0x94, 0xCA, 0x3D, 0xCC, 0xCC, 0xCD, 0xCF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF,
            0xFF, 0xC4, 0x02, 1, 255, 0xD4, 0x05, 0x07,
        ];
        let mut text = String::new();
        msgpack_to_json(&parse_msgpack(&v).unwrap(), &mut text).unwrap();
        assert_eq!(text, "[0.1,18446744073709551615,[1,255],[5,[7]]]");
        assert!(parse_msgpack(&[0xC0, 0xC0]).is_err());
        assert!(parse_msgpack(&[0x92, 0x01]).is_err());
    }
}
