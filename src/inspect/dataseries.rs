//! The structure of a DataSeries file: byte order, the declared types with their XML, and every
//! extent with its offset, sizes, compression modes and row count. With verification, every
//! extent of every type is decompressed and checked (adler32, hash, variable32 entries).

use std::path::Path;

use serde_json::{json, Value};

use crate::dataseries::codec::mode_name;
use crate::dataseries::extent::{decode_raw, Checks};
use crate::dataseries::{DsFile, ExtentHeader, ExtentType};

use super::{Structure, TextTable};

/// The structure of an opened DataSeries file (a local one's or a remote object's) at
/// `path`, as errors name it.
pub(super) fn structure(
    file: &DsFile,
    path: &Path,
    verify: bool,
    wanted: Option<&str>,
) -> crate::Result<Structure> {
    let all = file.extents().map_err(|e| e.with_file(path))?;
    let extents_of = |name: &str| all.iter().filter(|e| e.type_name == name).count();
    let rows_of = |name: &str| {
        all.iter()
            .filter(|e| e.type_name == name)
            .map(|e| e.rows as u64)
            .sum::<u64>()
    };
    if verify {
        verify_extents(file, all, path)?;
    }
    let rows = match wanted {
        Some(name) => file.find_type(name).map(|t| rows_of(&t.name)),
        None => crate::dataseries::choose_type(file, None)
            .ok()
            .map(|t| rows_of(&t.name)),
    };
    let types: Vec<Value> = file
        .types
        .iter()
        .map(|t| {
            json!({
                "name": t.name,
                "rows": rows_of(&t.name),
                "extents": extents_of(&t.name),
                "record_size": t.record_size,
                "fields": t.visible.len(),
                "xml": t.xml,
            })
        })
        .collect();
    let extents: Vec<Value> = all
        .iter()
        .map(|e| {
            json!({
                "offset": e.offset,
                "type": e.type_name,
                "length": e.len,
                "rows": e.rows,
                "fixed_compressed": e.cf,
                "variable_compressed": e.cv,
                "variable_size": e.vs,
                "fixed_mode": mode_name(e.mode_fixed),
                "variable_mode": mode_name(e.mode_var),
            })
        })
        .collect();
    let json = json!({
        "byte_order": file.order.name(),
        "trailer": file.has_trailer,
        "types": types,
        "extents": extents,
    });

    let mut text = String::new();
    text.push_str(&format!("byte order: {}\n", file.order.name()));
    let mut tt = TextTable::new(["type", "rows", "extents", "record bytes", "fields"]);
    for t in &file.types {
        tt.row([
            t.name.clone(),
            rows_of(&t.name).to_string(),
            extents_of(&t.name).to_string(),
            t.record_size.to_string(),
            t.visible.len().to_string(),
        ]);
    }
    text.push_str(&tt.render(""));
    for t in &file.types {
        text.push_str(&format!(
            "\nExtentType {:?}:\n{}\n",
            t.name,
            t.xml.trim_end()
        ));
    }
    let mut et = TextTable::new([
        "offset", "type", "bytes", "rows", "fixed", "variable", "modes",
    ]);
    for e in all {
        let mode = |id: u8, empty: bool| {
            if empty {
                "-".to_string()
            } else {
                mode_name(id).to_string()
            }
        };
        et.row([
            e.offset.to_string(),
            e.type_name.clone(),
            e.len.to_string(),
            e.rows.to_string(),
            e.cf.to_string(),
            e.cv.to_string(),
            format!(
                "{},{}",
                mode(e.mode_fixed, e.cf == 0),
                mode(e.mode_var, e.cv == 0)
            ),
        ]);
    }
    text.push('\n');
    text.push_str(&et.render(""));
    Ok(Structure { rows, json, text })
}

/// Decompresses and checks every extent of every type, the built-in ones included.
fn verify_extents(file: &DsFile, all: &[ExtentHeader], path: &Path) -> crate::Result<()> {
    let xt = ExtentType::xmltype();
    let it = ExtentType::index();
    let ranges: Vec<_> = all
        .iter()
        .map(|e| e.offset..e.offset + e.len as u64)
        .collect();
    for (e, bytes) in all.iter().zip(file.read_ranges(&ranges)?) {
        let t = match e.type_name.as_str() {
            "DataSeries: XmlType" => &xt,
            "DataSeries: ExtentIndex" => &it,
            name => file.find_type(name).map(|t| t.as_ref()).unwrap_or(&it),
        };
        decode_raw(&bytes, file.order, e, t, Checks::ALL).map_err(|e| e.with_file(path))?;
    }
    Ok(())
}
