//! The small JSON text files beside the chunks: a column's `meta/storage` and `meta/sizes`
//! (the latter also the commit record of an append), and the `__attrs__` of columns and
//! tables, taken from the `bcolz.attrs` metadata of the Arrow fields and schema.

use std::fs;
use std::io::Write;
use std::path::Path;

use arrow_schema::{DataType, Field};
use serde_json::Value;

use super::column::Column;
use super::WriterOptions;
use crate::bcolz::json::{escape_non_ascii, parse_lenient, python_string};
use crate::bcolz::mapping::{Base, DType, ATTRS_KEY};
use crate::error::{Error, ErrorClass, Result};

/// Writes a small text file (and a final newline); `sync` flushes it to disk before returning.
pub(in crate::bcolz) fn write_text(path: &Path, text: &str, sync: bool) -> Result<()> {
    let mut f = fs::File::create(path).map_err(|e| Error::from(e).with_file(path))?;
    f.write_all(format!("{text}\n").as_bytes())
        .and_then(|_| if sync { f.sync_all() } else { Ok(()) })
        .map_err(|e| Error::from(e).with_file(path))
}

/// A column's `meta/storage`, `__attrs__` and `meta/sizes`, once its chunks are written.
pub(super) fn write_meta(col: &Column, rows: u64, options: &WriterOptions) -> Result<()> {
    let dtype = col.dtype_with(col.width);
    let chunklen = col.chunklen.unwrap_or(1);
    let dflt = match dtype.base {
        Base::Float(_) => "0.0",
        Base::Bool => "false",
        Base::Bytes(_) | Base::Unicode(_) => "\"\"",
        _ => "0",
    };
    let expectedlen = options.expected_len.unwrap_or(rows);
    let storage = format!(
        "{{\"dtype\": \"{}\", \"cparams\": {{\"clevel\": {}, \"shuffle\": {}, \"cname\": \"{}\", \"quantize\": 0}}, \"chunklen\": {chunklen}, \"expectedlen\": {expectedlen}, \"dflt\": {dflt}}}",
        dtype.to_numpy_str(),
        options.clevel,
        options.shuffle.code(),
        options.codec.name()
    );
    write_text(&col.dir.join("meta").join("storage"), &storage, false)?;
    write_text(&col.dir.join("__attrs__"), &col.attrs_text, false)?;
    write_text(
        &col.dir.join("meta").join("sizes"),
        &sizes_text(col, rows),
        false,
    )
}

/// The text of a column's `meta/sizes` for `rows` rows (the commit record of an append).
pub(in crate::bcolz) fn sizes_text(col: &Column, rows: u64) -> String {
    let chunklen = col.chunklen.unwrap_or(1);
    let atom = col.atomsize_for(col.width) as u64;
    let mut shape = vec![rows.to_string()];
    shape.extend(col.row_shape.iter().map(|d| d.to_string()));
    let cbytes: u64 = col.chunks.iter().map(|c| c.1).sum::<u64>() + chunklen * atom;
    format!(
        "{{\"shape\": [{}], \"nbytes\": {}, \"cbytes\": {cbytes}}}",
        shape.join(", "),
        rows * atom
    )
}

/// `bcolz.attrs` checked (lenient JSON object) and made ASCII.
pub(super) fn check_attrs(text: &str) -> Result<String> {
    // The caller names the metadata field; the offset is into its text.
    let value = parse_lenient(text)?;
    if !value.is_object() {
        return Err(Error::new(
            ErrorClass::BadMeta,
            "bcolz.attrs must be a JSON object",
        ));
    }
    Ok(escape_non_ascii(text.trim()))
}

/// A column's `__attrs__`: its field's `bcolz.attrs`, plus `timezone` for zoned timestamps.
pub(super) fn column_attrs(field: &Field, _dtype: &DType) -> Result<String> {
    let mut text = match field.metadata().get(ATTRS_KEY) {
        Some(t) => check_attrs(t).map_err(|e| e.with_field("field metadata bcolz.attrs"))?,
        None => "{}".to_owned(),
    };
    if let DataType::Timestamp(_, Some(tz)) = field.data_type() {
        let has = parse_lenient(&text)
            .ok()
            .and_then(|v| v.get("timezone").cloned())
            .is_some();
        if !has {
            text = add_key(&text, "\"timezone\"", &python_string(tz));
        }
    }
    Ok(text)
}

/// Inserts `"key": value` (both JSON text) at the front of a JSON object's text.
fn add_key(object_text: &str, key_json: &str, value_json: &str) -> String {
    let inner = object_text.trim().trim_start_matches('{').trim_start();
    if inner.starts_with('}') {
        format!("{{{key_json}: {value_json}}}")
    } else {
        format!("{{{key_json}: {value_json}, {inner}")
    }
}

/// A carray's `__attrs__`: the schema's attributes merged with the field's (field keys win).
pub(super) fn merge_carray_attrs(root: &str, field: &str) -> String {
    let empty = |t: &str| t.chars().filter(|c| !c.is_whitespace()).collect::<String>() == "{}";
    if empty(field) {
        return root.to_owned();
    }
    if empty(root) {
        return field.to_owned();
    }
    let (Ok(Value::Object(r)), Ok(Value::Object(f))) = (parse_lenient(root), parse_lenient(field))
    else {
        return field.to_owned();
    };
    // Keys of the root that the field does not have, re-serialised (their NaN tokens become null).
    let mut text = field.to_owned();
    for (k, v) in r.iter().rev() {
        if !f.contains_key(k) {
            text = add_key(&text, &python_string(k), &escape_non_ascii(&v.to_string()));
        }
    }
    text
}
