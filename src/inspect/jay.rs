//! The structure of a Jay file: the frame, and every column's type, layout, counts, stats and
//! buffers (recursively for array children).

use serde_json::{json, Value};

use crate::jay::{BufferRange, ColumnInfo, FrameInfo, JayFile, Layout, Stats};

use super::{count, Structure, TextTable};

/// The structure of an opened Jay file (a local one's or a remote object's).
pub(super) fn structure(file: &JayFile) -> Structure {
    let info = file.info();
    Structure {
        rows: Some(info.nrows),
        json: frame_json(info),
        text: frame_text(info),
    }
}

fn trailer(info: &FrameInfo) -> &'static str {
    if info.legacy_trailer {
        "JAY1 (2018 legacy trailer)"
    } else {
        "1JAY"
    }
}

fn layout_name(layout: Layout) -> &'static str {
    match layout {
        Layout::Old => "old",
        Layout::New => "new",
    }
}

fn stats_json(stats: &Option<Stats>) -> Value {
    match stats {
        None => Value::Null,
        Some(Stats::Int { min, max }) => json!({ "min": min, "max": max }),
        // JSON has no NaN or infinities: those become strings.
        Some(Stats::Float { min, max }) => {
            json!({ "min": float_json(*min), "max": float_json(*max) })
        }
    }
}

fn float_json(x: f64) -> Value {
    if x.is_finite() {
        json!(x)
    } else {
        json!(x.to_string())
    }
}

fn stats_text(stats: &Option<Stats>) -> String {
    match stats {
        None => "-".to_string(),
        Some(Stats::Int { min, max }) => format!("{min} .. {max}"),
        Some(Stats::Float { min, max }) => format!("{min} .. {max}"),
    }
}

fn buffer_json(buffer: Option<BufferRange>) -> Value {
    match buffer {
        None => Value::Null,
        Some(b) => json!({
            "offset": b.file_offset(),
            "data_offset": b.offset,
            "length": b.length,
        }),
    }
}

fn column_json(index: Option<usize>, column: &ColumnInfo) -> Value {
    let mut value = json!({
        "name": column.name,
        "jay_type": column.jay_type.to_string(),
        "arrow_type": column.jay_type.arrow_type().to_string(),
        "layout": layout_name(column.layout),
        "nrows": column.nrows,
        "nullcount": column.nullcount,
        "stats": stats_json(&column.stats),
        "offset_width": column.offset_width,
        "bool_packed": column.bool_packed,
        "buffers": {
            "validity": buffer_json(column.validity),
            "data": buffer_json(column.data),
            "strdata": buffer_json(column.strdata),
        },
        "child": column.child.as_deref().map_or(Value::Null, |c| column_json(None, c)),
    });
    if let Some(index) = index {
        value["index"] = json!(index);
    }
    value
}

fn frame_json(info: &FrameInfo) -> Value {
    json!({
        "nrows": info.nrows,
        "ncols": info.columns.len(),
        "ncols_stored": info.ncols_stored,
        "nkeys": info.nkeys,
        "file_size": info.file_size,
        "data_size": info.data_size,
        "meta_size": info.meta_size,
        "trailer": if info.legacy_trailer { "JAY1" } else { "1JAY" },
        "legacy_trailer": info.legacy_trailer,
        "columns": info.columns.iter().enumerate().map(|(i, c)| column_json(Some(i), c)).collect::<Vec<_>>(),
    })
}

/// Adds a column and its children to the two tables; `label` is `3`, `3.child`, ….
fn column_rows(label: &str, column: &ColumnInfo, columns: &mut TextTable, buffers: &mut TextTable) {
    let mut detail = Vec::new();
    if column.offset_width > 0 {
        detail.push(format!("u{} offsets", column.offset_width as u32 * 8));
    }
    if column.bool_packed {
        detail.push("bit-packed".to_string());
    }
    columns.row([
        label.to_string(),
        column.name.clone().unwrap_or_else(|| "(child)".to_string()),
        column.jay_type.to_string(),
        column.jay_type.arrow_type().to_string(),
        layout_name(column.layout).to_string(),
        column.nrows.to_string(),
        column.nullcount.to_string(),
        stats_text(&column.stats),
        detail.join(", "),
    ]);
    for (kind, buffer) in [
        ("validity", column.validity),
        ("data", column.data),
        ("strdata", column.strdata),
    ] {
        if let Some(b) = buffer {
            buffers.row([
                label.to_string(),
                kind.to_string(),
                b.file_offset().to_string(),
                b.length.to_string(),
                b.file_offset().saturating_add(b.length).to_string(),
            ]);
        }
    }
    if let Some(child) = &column.child {
        column_rows(&format!("{label}.child"), child, columns, buffers);
    }
}

fn frame_text(info: &FrameInfo) -> String {
    let mut out = String::new();
    let mut ncols = count(info.columns.len() as u64, "column", "columns");
    if info.ncols_stored != info.columns.len() as u64 {
        ncols.push_str(&format!(" (Frame.ncols says {})", info.ncols_stored));
    }
    out.push_str(&format!(
        "{}, {ncols}, {} key {}\n",
        count(info.nrows, "row", "rows"),
        info.nkeys,
        if info.nkeys == 1 { "column" } else { "columns" },
    ));
    out.push_str(&format!(
        "file {} bytes: header 8, data section {}, meta {}, footer 16; trailer {}\n",
        info.file_size,
        info.data_size,
        info.meta_size,
        trailer(info),
    ));
    if info.columns.is_empty() {
        return out;
    }
    let mut columns = TextTable::new([
        "#",
        "name",
        "jay type",
        "arrow type",
        "layout",
        "nrows",
        "nulls",
        "stats (min .. max)",
        "",
    ])
    .right_align(&[5, 6]);
    let mut buffers =
        TextTable::new(["#", "buffer", "offset", "length", "end"]).right_align(&[2, 3, 4]);
    for (i, column) in info.columns.iter().enumerate() {
        column_rows(&i.to_string(), column, &mut columns, &mut buffers);
    }
    out.push('\n');
    out.push_str(&columns.render(""));
    if !buffers.is_empty() {
        out.push_str("\nbuffers (byte offsets in the file)\n");
        out.push_str(&buffers.render(""));
    }
    out
}
