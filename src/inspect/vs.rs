//! The structure of a VS file: the meta block, the point count, the blocks (live points, blanks
//! and deleted points, unknown blocks) with their offsets, and the compression used.

use serde_json::{json, Value};

use crate::vs::codec::printable;
use crate::vs::{Compression, Description, EofMode, ReaderOptions, VsFile};

use super::{count, Structure, TextTable, TEXT_ROWS};

/// Blocks listed in the JSON report.
const JSON_BLOCKS: usize = 1000;

/// How a VS file is opened to describe it: one that ends without its terminal is described
/// too.
pub(super) fn options() -> ReaderOptions {
    let mut options = ReaderOptions::default();
    options.parse.eof = EofMode::Lenient;
    options
}

/// The structure of a VS file opened with [`options`] (a local one's or a remote object's).
pub(super) fn structure(file: &VsFile) -> crate::Result<Structure> {
    let d = file.describe(JSON_BLOCKS)?;
    Ok(Structure {
        rows: Some(d.live_points),
        json: description_json(&d),
        text: description_text(&d),
    })
}

fn kind_name(kind: u8) -> &'static str {
    match kind {
        b'^' => "meta",
        b'P' => "point",
        b'0' => "blank",
        _ => "unknown",
    }
}

fn code_name(code: u8) -> String {
    Compression::from_code(code).map_or(format!("code {code}"), |c| c.name().to_string())
}

fn attributes_text(d: &Description) -> Option<String> {
    let bytes = d.meta.as_ref()?.attributes.as_ref()?;
    let value = crate::vs::msgpack_json::parse_msgpack(bytes).ok()?;
    let mut text = String::new();
    crate::vs::msgpack_json::msgpack_to_json(&value, &mut text).ok()?;
    Some(text)
}

fn description_json(d: &Description) -> Value {
    let meta = d.meta.as_ref().map_or(Value::Null, |m| {
        json!({
            "offset": m.offset,
            "rank": m.rank(),
            "dimensions": m.dims,
            "element_count": m.n,
            "resolution": m.resolution.code(),
            "resolution_name": m.resolution.name(),
            "pack": m.pack,
            "paging": m.paging,
            "attributes": attributes_text(d).and_then(|t| serde_json::from_str::<Value>(&t).ok()),
        })
    });
    let compression: serde_json::Map<String, Value> = d
        .compression_counts
        .iter()
        .enumerate()
        .filter(|(_, &n)| n > 0)
        .map(|(c, &n)| (code_name(c as u8), json!(n)))
        .collect();
    json!({
        "meta": meta,
        "points": d.live_points,
        "blank_blocks": d.blank_blocks,
        "unknown_blocks": d.unknown_blocks,
        "compression": compression,
        "terminal": d.terminal,
        "trailing_bytes": d.trailing_bytes,
        "file_size": d.file_size,
        "blocks": d.blocks.iter().map(|b| json!({
            "type": printable(b.kind),
            "kind": kind_name(b.kind),
            "offset": b.offset,
            "length": b.length,
            "compression": b.compression.map(code_name),
        })).collect::<Vec<_>>(),
        "blocks_listed": d.blocks.len(),
    })
}

fn description_text(d: &Description) -> String {
    let mut out = String::new();
    match &d.meta {
        None => out.push_str("meta: none (an empty store)\n"),
        Some(m) => {
            let mut t = TextTable::new(["meta", &format!("block at offset {}", m.offset)]);
            t.row([
                "dimensions".to_string(),
                format!("{:?} (rank {}, {} elements)", m.dims, m.rank(), m.n),
            ]);
            t.row([
                "resolution".to_string(),
                format!("{} ({})", m.resolution.name(), m.resolution.code()),
            ]);
            t.row([
                "pack".to_string(),
                format!("{} ({})", m.pack, code_name(m.pack)),
            ]);
            t.row(["paging".to_string(), m.paging.to_string()]);
            t.row([
                "attributes".to_string(),
                attributes_text(d).unwrap_or_else(|| "(absent)".into()),
            ]);
            out.push_str(&t.render(""));
        }
    }
    out.push('\n');
    out.push_str(&format!(
        "{}, {}, {}\n",
        count(d.live_points, "live point", "live points"),
        count(
            d.blank_blocks,
            "blank block (free or deleted)",
            "blank blocks (free or deleted)"
        ),
        count(d.unknown_blocks, "unknown block", "unknown blocks"),
    ));
    let used: Vec<String> = d
        .compression_counts
        .iter()
        .enumerate()
        .filter(|(_, &n)| n > 0)
        .map(|(c, &n)| format!("{} × {n}", code_name(c as u8)))
        .collect();
    out.push_str(&format!(
        "vector compression: {}\n",
        if used.is_empty() {
            "-".to_string()
        } else {
            used.join(", ")
        }
    ));
    match d.terminal {
        Some(t) => out.push_str(&format!(
            "terminal '$' at offset {t}, {} after it, file size {}\n",
            count(d.trailing_bytes, "byte", "bytes"),
            d.file_size
        )),
        None => out.push_str(&format!(
            "no terminal '$': the file ends at a block boundary (size {})\n",
            d.file_size
        )),
    }
    out.push('\n');
    let mut t =
        TextTable::new(["offset", "type", "kind", "length", "compression"]).right_align(&[0, 3]);
    for b in d.blocks.iter().take(TEXT_ROWS) {
        t.row([
            b.offset.to_string(),
            printable(b.kind),
            kind_name(b.kind).to_string(),
            b.length.to_string(),
            b.compression.map(code_name).unwrap_or_default(),
        ]);
    }
    out.push_str(&t.render(""));
    let total = d.live_points + d.blank_blocks + d.unknown_blocks + u64::from(d.meta.is_some());
    if total > TEXT_ROWS as u64 {
        out.push_str(&format!("… {} blocks in all\n", total));
    }
    out
}
