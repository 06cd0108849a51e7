//! The structure of a Filo set (its columns, chunks, and every column chunk's vector) or of one
//! bare Filo vector: wire type, header, length, nbits/signed, NA mask, base, dictionary size
//! and byte size.

use std::path::Path;

use serde_json::{json, Value};

use crate::filo::{self, MaskKind, SetInfo, VectorInfo};

use super::{count, Structure, TextTable, TEXT_ROWS};

fn vector_json(v: &VectorInfo) -> Value {
    json!({
        "wire_type": v.wire_type.name(),
        "header": format!("0x{:08x}", v.header),
        "len": v.len,
        "nbits": v.info.map(|i| i.0),
        "signed": v.info.map(|i| i.1),
        "na_mask": v.mask.name(),
        "na_mask_words": match v.mask { MaskKind::SimpleBitMask { words } => Some(words), _ => None },
        "base": v.base,
        "base_tz_quarter_hours": v.base_tz,
        "tz_nbits": v.tz_info.map(|i| i.0),
        "tz_signed": v.tz_info.map(|i| i.1),
        "dictionary_size": v.dictionary_size,
        "bytes": v.byte_size,
    })
}

fn cells(v: &VectorInfo) -> [String; 8] {
    let opt = |x: Option<String>| x.unwrap_or_else(|| "-".into());
    [
        v.wire_type.name().to_string(),
        format!("0x{:08x}", v.header),
        v.len.to_string(),
        opt(v
            .info
            .map(|(n, s)| format!("{n}/{}", if s { "signed" } else { "unsigned" }))),
        match v.mask {
            MaskKind::SimpleBitMask { words } => format!("SimpleBitMask ({words} words)"),
            m => m.name().to_string(),
        },
        opt(v.base.map(|b| b.to_string())),
        opt(v.dictionary_size.map(|d| d.to_string())),
        v.byte_size.to_string(),
    ]
}

const HEADER: [&str; 8] = [
    "wire type",
    "header",
    "len",
    "nbits",
    "NA mask",
    "base",
    "dict",
    "bytes",
];

pub(super) fn vector_structure(path: &Path) -> crate::Result<Structure> {
    let bytes = std::fs::read(path).map_err(|e| crate::Error::from(e).with_file(path))?;
    let info = filo::inspect(&bytes).map_err(|e| e.with_file(path))?;
    let mut table = TextTable::new(HEADER).right_align(&[2, 7]);
    table.row(cells(&info));
    Ok(Structure {
        rows: Some(info.len as u64),
        json: vector_json(&info),
        text: table.render(""),
    })
}

pub(super) fn set_structure(path: &Path) -> crate::Result<Structure> {
    let info = SetInfo::open(path)?;
    let mut vectors = Vec::new();
    let mut table = TextTable::new(
        ["chunk", "column"]
            .into_iter()
            .chain(HEADER)
            .collect::<Vec<_>>(),
    )
    .right_align(&[0, 4, 9]);
    let mut shown = 0;
    let mut total = 0;
    for (chunk, &rows) in info.chunks.iter().enumerate() {
        for (c, column) in info.columns.iter().enumerate() {
            total += 1;
            let file = filo::column_file(path, chunk, c);
            let (json, row): (Value, Vec<String>) = match std::fs::read(&file) {
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => (
                    json!({"chunk": chunk, "column": c, "missing": true, "rows": rows}),
                    vec!["missing (all NA)".to_string()],
                ),
                Err(e) => return Err(crate::Error::from(e).with_file(&file)),
                Ok(bytes) => match filo::inspect(&bytes) {
                    Ok(v) => {
                        let mut j = vector_json(&v);
                        j["chunk"] = json!(chunk);
                        j["column"] = json!(c);
                        (j, cells(&v).to_vec())
                    }
                    Err(e) => (
                        json!({"chunk": chunk, "column": c, "error": e.to_string()}),
                        vec![format!("error: {e}")],
                    ),
                },
            };
            vectors.push(json);
            if shown < TEXT_ROWS {
                shown += 1;
                let mut line = vec![chunk.to_string(), format!("{c} {}", column.name)];
                line.extend(row);
                table.row(line);
            }
        }
    }
    let mut text = format!(
        "{}, {}, {}\n",
        count(info.rows(), "row", "rows"),
        count(info.columns.len() as u64, "column", "columns"),
        count(info.chunks.len() as u64, "chunk", "chunks"),
    );
    let mut columns = TextTable::new(["column", "name", "filo type"]).right_align(&[0]);
    for (i, c) in info.columns.iter().enumerate() {
        columns.row([
            i.to_string(),
            c.name.clone(),
            c.filo_type.name().to_string(),
        ]);
    }
    text.push('\n');
    text.push_str(&columns.render(""));
    if !table.is_empty() {
        text.push('\n');
        text.push_str(&table.render(""));
    }
    if total > shown {
        text.push_str(&format!(
            "… and {} more column chunks (the JSON report lists them all)\n",
            total - shown
        ));
    }
    Ok(Structure {
        rows: Some(info.rows()),
        json: json!({
            "columns": info.columns.iter().map(|c| json!({"name": c.name, "filo_type": c.filo_type.name()})).collect::<Vec<_>>(),
            "chunks": info.chunks.iter().map(|r| json!({"rows": r})).collect::<Vec<_>>(),
            "vectors": vectors,
        }),
        text,
    })
}
