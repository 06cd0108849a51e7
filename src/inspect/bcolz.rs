//! The structure of a bcolz directory: kind, attributes, and per column the dtype, shape,
//! chunking, cparams, chunk count and compression ratio (from the chunk headers).

use std::path::Path;

use serde_json::{json, Value};

use crate::bcolz::{self, blosc, CarrayInfo, DatasetInfo};

use super::{count, Structure, TextTable};

pub(super) fn structure(path: &Path) -> crate::Result<Structure> {
    let info = bcolz::open_info(path)?;
    let columns: Vec<ColumnSummary> = info
        .columns
        .iter()
        .enumerate()
        .map(|(i, c)| {
            summarize(c, info.nrows).map_err(|e| e.with_column(i, Some(&c.name)).with_file(path))
        })
        .collect::<crate::Result<_>>()?;
    let unreadable: u64 = columns.iter().map(|s| s.unreadable).sum();
    Ok(Structure {
        rows: Some(info.nrows),
        json: dataset_json(&info, &columns),
        text: {
            let mut text = dataset_text(&info, &columns);
            if unreadable > 0 {
                text.push_str(&format!(
                    "{} unreadable (see the verify option)\n",
                    count(unreadable, "chunk header is", "chunk headers are")
                ));
            }
            text
        },
    })
}

struct ColumnSummary {
    chunks: u64,
    /// Chunks whose file or header is damaged: left out of the byte counts, so that the
    /// structure of a damaged dataset still shows (verification lists them).
    unreadable: u64,
    nbytes: u64,
    cbytes: u64,
    codecs: Vec<&'static str>,
}

fn summarize(c: &CarrayInfo, rows: u64) -> crate::Result<ColumnSummary> {
    let chunks = c.chunks_for(rows);
    let mut cbytes = 0;
    let mut codecs = Vec::new();
    let mut unreadable = 0;
    for k in 0..chunks {
        let Ok(h) = c.chunk_header(k) else {
            unreadable += 1;
            continue;
        };
        cbytes += h.cbytes as u64;
        let name = if h.memcpyed() {
            "memcpy"
        } else {
            blosc::format_name(h.codec_code()).unwrap_or("?")
        };
        if !codecs.contains(&name) {
            codecs.push(name);
        }
    }
    Ok(ColumnSummary {
        chunks,
        unreadable,
        nbytes: rows * c.atomsize as u64,
        cbytes,
        codecs,
    })
}

fn ratio(nbytes: u64, cbytes: u64) -> Value {
    if cbytes == 0 {
        Value::Null
    } else {
        json!((nbytes as f64 / cbytes as f64 * 100.0).round() / 100.0)
    }
}

fn shape(c: &CarrayInfo, rows: u64) -> Vec<u64> {
    let mut s = vec![rows];
    s.extend(c.row_shape.iter().map(|&d| d as u64));
    s
}

fn dataset_json(info: &DatasetInfo, columns: &[ColumnSummary]) -> Value {
    json!({
        "kind": info.kind.as_str(),
        "nrows": info.nrows,
        "attrs": info.attrs_text,
        "columns": info.columns.iter().zip(columns).enumerate().map(|(i, (c, s))| json!({
            "index": i,
            "name": c.name,
            "dtype": c.dtype_text,
            "shape": shape(c, info.nrows),
            "stored_rows": c.rows,
            "chunklen": c.chunklen,
            "cparams": {
                "clevel": c.cparams.clevel,
                "shuffle": c.cparams.shuffle.code(),
                "cname": c.cparams.cname,
                "quantize": c.cparams.quantize,
            },
            "chunks": s.chunks,
            "unreadable_chunks": s.unreadable,
            "chunk_codecs": s.codecs,
            "nbytes": s.nbytes,
            "cbytes": s.cbytes,
            "ratio": ratio(s.nbytes, s.cbytes),
            "attrs": if info.kind == bcolz::Kind::Ctable { json!(c.attrs_text) } else { Value::Null },
        })).collect::<Vec<_>>(),
    })
}

fn dataset_text(info: &DatasetInfo, columns: &[ColumnSummary]) -> String {
    let mut out = format!(
        "bcolz {}, {}, {}\n",
        info.kind.as_str(),
        count(info.nrows, "row", "rows"),
        count(info.columns.len() as u64, "column", "columns"),
    );
    if let Some(attrs) = &info.attrs_text {
        out.push_str(&format!("attrs {attrs}\n"));
    }
    let mut table = TextTable::new([
        "#",
        "name",
        "dtype",
        "shape",
        "chunklen",
        "cparams",
        "chunks",
        "nbytes",
        "cbytes",
        "ratio",
        "chunk codecs",
    ])
    .right_align(&[4, 6, 7, 8, 9]);
    let nbytes: u64 = columns.iter().map(|s| s.nbytes).sum();
    let cbytes: u64 = columns.iter().map(|s| s.cbytes).sum();
    for (i, (c, s)) in info.columns.iter().zip(columns).enumerate() {
        table.row([
            i.to_string(),
            c.name.clone(),
            c.dtype_text.clone(),
            format!("{:?}", shape(c, info.nrows)),
            c.chunklen.to_string(),
            format!(
                "{} clevel {} shuffle {}",
                c.cparams.cname,
                c.cparams.clevel,
                c.cparams.shuffle.code()
            ),
            s.chunks.to_string(),
            s.nbytes.to_string(),
            s.cbytes.to_string(),
            ratio(s.nbytes, s.cbytes).to_string(),
            s.codecs.join(", "),
        ]);
    }
    out.push_str(&format!(
        "{nbytes} bytes of data in {cbytes} compressed bytes (ratio {})\n\n",
        ratio(nbytes, cbytes)
    ));
    out.push_str(&table.render(""));
    if info.kind == bcolz::Kind::Ctable {
        for c in &info.columns {
            if let Some(a) = c.attrs_text.as_deref().filter(|a| a.trim() != "{}") {
                out.push_str(&format!("column {:?} attrs {a}\n", c.name));
            }
        }
    }
    out
}
