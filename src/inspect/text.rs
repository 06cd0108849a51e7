//! CSV and NDJSON: how the schema was inferred. Their rows are counted by reading the file.

use std::path::Path;

use crate::ecosystem::{csv, ndjson};

use super::Structure;

pub(super) fn csv_structure(path: &Path) -> crate::Result<Structure> {
    let info = csv::describe(path)?;
    Ok(Structure {
        rows: None,
        json: serde_json::to_value(&info).unwrap_or_default(),
        text: format!(
            "header row, delimiter {:?}; schema inferred from the first {} records (at most {})\n",
            info.delimiter, info.records_inferred_from, info.inference_limit
        ),
    })
}

pub(super) fn ndjson_structure(path: &Path) -> crate::Result<Structure> {
    let info = ndjson::describe(path)?;
    Ok(Structure {
        rows: None,
        json: serde_json::to_value(&info).unwrap_or_default(),
        text: format!(
            "one JSON object per line; schema inferred from the first {} records (at most {})\n",
            info.records_inferred_from, info.inference_limit
        ),
    })
}
