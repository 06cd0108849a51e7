//! The structure of an Arrow IPC file or stream: its record batches and dictionaries.

use std::path::Path;
use std::sync::Arc;

use crate::ecosystem::ipc::{
    describe_file, describe_file_source, describe_stream, describe_stream_source, IpcInfo,
};
use crate::source::ByteSource;

use super::{count, Structure, TextTable, TEXT_ROWS};

pub(super) fn file_structure(path: &Path) -> crate::Result<Structure> {
    Ok(render(describe_file(path)?))
}

pub(super) fn stream_structure(path: &Path) -> crate::Result<Structure> {
    Ok(render(describe_stream(path)?))
}

/// The structure of a remote Arrow IPC file (`stream` false) or stream.
pub(super) fn source_structure(
    source: Arc<dyn ByteSource>,
    stream: bool,
) -> crate::Result<Structure> {
    Ok(render(if stream {
        describe_stream_source(source)?
    } else {
        describe_file_source(source)?
    }))
}

fn render(info: IpcInfo) -> Structure {
    let json = serde_json::to_value(&info).unwrap_or_default();
    let mut out = String::new();
    out.push_str(&format!(
        "{}, {}, {}, metadata version {}, {} bytes\n",
        count(info.num_rows, "row", "rows"),
        count(info.batches.len() as u64, "record batch", "record batches"),
        count(
            info.dictionaries as u64,
            "dictionary batch",
            "dictionary batches"
        ),
        info.version,
        info.file_size,
    ));
    if let Some(eos) = info.end_of_stream_marker {
        out.push_str(if eos {
            "ends with the end-of-stream marker\n"
        } else {
            "ends without an end-of-stream marker\n"
        });
    }
    if !info.metadata_keys.is_empty() {
        out.push_str(&format!(
            "metadata keys: {}\n",
            info.metadata_keys.join(", ")
        ));
    }
    if !info.batches.is_empty() {
        let mut batches =
            TextTable::new(["batch", "rows", "offset", "metadata", "body", "compression"])
                .right_align(&[0, 1, 2, 3, 4]);
        for (i, b) in info.batches.iter().enumerate().take(TEXT_ROWS) {
            batches.row([
                i.to_string(),
                b.rows.to_string(),
                b.offset.to_string(),
                b.metadata_length.to_string(),
                b.body_length.to_string(),
                b.compression.clone().unwrap_or_else(|| "none".to_string()),
            ]);
        }
        out.push('\n');
        out.push_str(&batches.render(""));
        if info.batches.len() > TEXT_ROWS {
            out.push_str(&format!(
                "… and {} more batches (the JSON report lists them all)\n",
                info.batches.len() - TEXT_ROWS
            ));
        }
    }
    Structure {
        rows: Some(info.num_rows),
        json,
        text: out,
    }
}
