//! The structure of a Parquet file: its footer's row groups and column chunks.

use std::path::Path;
use std::sync::Arc;

use crate::ecosystem::parquet::{describe, describe_source, ParquetInfo};
use crate::source::ByteSource;

use super::{count, Structure, TextTable, TEXT_ROWS};

pub(super) fn structure(path: &Path) -> crate::Result<Structure> {
    render(describe(path)?)
}

/// The structure of a remote Parquet object, from its footer.
pub(super) fn source_structure(source: Arc<dyn ByteSource>) -> crate::Result<Structure> {
    render(describe_source(source)?)
}

fn render(info: ParquetInfo) -> crate::Result<Structure> {
    let json = serde_json::to_value(&info).unwrap_or_default();

    let mut out = String::new();
    out.push_str(&format!(
        "{}, {}, format version {}\n",
        count(info.num_rows.max(0) as u64, "row", "rows"),
        count(info.num_row_groups as u64, "row group", "row groups"),
        info.version,
    ));
    if let Some(created_by) = &info.created_by {
        out.push_str(&format!("created by {created_by}\n"));
    }
    if !info.metadata_keys.is_empty() {
        out.push_str(&format!(
            "metadata keys: {}\n",
            info.metadata_keys.join(", ")
        ));
    }
    if !info.columns.is_empty() {
        let mut columns = TextTable::new([
            "column",
            "physical",
            "logical",
            "compression",
            "compressed",
            "uncompressed",
        ])
        .right_align(&[4, 5]);
        for c in &info.columns {
            columns.row([
                c.path.clone(),
                c.physical_type.clone(),
                c.logical_type.clone().unwrap_or_else(|| "-".to_string()),
                if c.compression.is_empty() {
                    "-".to_string()
                } else {
                    c.compression.join(", ")
                },
                c.compressed_size.to_string(),
                c.uncompressed_size.to_string(),
            ]);
        }
        out.push('\n');
        out.push_str(&columns.render(""));
    }
    if !info.row_groups.is_empty() {
        let mut groups = TextTable::new(["row group", "rows", "compressed", "uncompressed"])
            .right_align(&[0, 1, 2, 3]);
        for (i, rg) in info.row_groups.iter().enumerate().take(TEXT_ROWS) {
            groups.row([
                i.to_string(),
                rg.num_rows.to_string(),
                rg.compressed_size.to_string(),
                rg.total_byte_size.to_string(),
            ]);
        }
        out.push('\n');
        out.push_str(&groups.render(""));
        if info.row_groups.len() > TEXT_ROWS {
            out.push_str(&format!(
                "… and {} more row groups (the JSON report lists them all)\n",
                info.row_groups.len() - TEXT_ROWS
            ));
        }
    }
    Ok(Structure {
        rows: u64::try_from(info.num_rows).ok(),
        json,
        text: out,
    })
}
