//! Salvage: reading the parts of a damaged file that are still whole.
//!
//! With [`ScanOptions::salvage`](crate::ScanOptions::salvage) on, a reader that meets a damaged
//! part skips it instead of failing, and records what it skipped in a [`SalvageReport`]: one
//! [`Skipped`] per part, naming the part (an extent, chunk, block or column), where it is, how
//! many rows it held when that is known, and the error that made it unreadable. The report is
//! a handle shared between the caller and the reader, so it can be read after the scan even
//! when the reader is boxed behind `dyn RecordBatchReader` (the CLI, Python and DataFusion all
//! read it that way).
//!
//! What a format skips, and what stays aligned:
//!
//! | format | unit skipped | the other rows |
//! |---|---|---|
//! | DataSeries | an extent (its rows) | every other extent of the type |
//! | bcolz | a chunk of one column: its rows in **every** column | rows stay aligned |
//! | VS | a point block (one row); past a broken block header, the rest of the file | |
//! | Filo set | a chunk (its rows in every column) | |
//! | Jay | a column (dropped from the schema) | every row of the other columns |
//!
//! Without salvage nothing changes: the first damage is an error.

use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard};

use serde_json::{json, Value};

use crate::error::Error;

/// One part of a file that a salvaging reader skipped.
#[derive(Debug)]
pub struct Skipped {
    /// What kind of part: `"extent"`, `"chunk"`, `"block"`, `"column"`, `"index"` (a damaged
    /// DataSeries index, which costs no rows) or `"rest"` (everything from `offset` on, when
    /// the damage leaves no way to find the next part).
    pub part: String,
    /// Its number, where the format numbers its parts: the chunk number, the column's position
    /// in the file, the extent's position among the extents of its type.
    pub index: Option<u64>,
    /// The column it belongs to (a Jay column, a bcolz column's chunk), when it has one.
    pub column: Option<String>,
    /// Its byte offset in the file, for formats that are one file.
    pub offset: Option<u64>,
    /// Rows it held, when the undamaged part of the file says so.
    pub rows: Option<u64>,
    /// Why it could not be read.
    pub reason: Error,
}

impl Skipped {
    /// A skipped part of kind `part` (see [`Skipped::part`]).
    pub fn new(part: impl Into<String>, reason: Error) -> Self {
        Skipped {
            part: part.into(),
            index: None,
            column: None,
            offset: None,
            rows: None,
            reason,
        }
    }

    /// The part's position among its kind (the extent, chunk or block number).
    pub fn with_index(mut self, index: u64) -> Self {
        self.index = Some(index);
        self
    }

    /// The column the part belongs to (a dropped Jay column, a bcolz column's chunk).
    pub fn with_column(mut self, column: impl Into<String>) -> Self {
        self.column = Some(column.into());
        self
    }

    /// Where the part starts in its file.
    pub fn at_offset(mut self, offset: u64) -> Self {
        self.offset = Some(offset);
        self
    }

    /// How many rows were lost with the part.
    pub fn with_rows(mut self, rows: u64) -> Self {
        self.rows = Some(rows);
        self
    }

    /// The JSON form the CLI prints (`inspect --verify --json`): every field, the reason as
    /// its text and its stable error class.
    pub fn to_json(&self) -> Value {
        json!({
            "part": self.part,
            "index": self.index,
            "column": self.column,
            "offset": self.offset,
            "rows": self.rows,
            "class": self.reason.class().as_str(),
            "reason": self.reason.to_string(),
        })
    }
}

impl fmt::Display for Skipped {
    /// One line: `chunk 3 of column "price" at byte 4096 (4,096 rows): <reason>`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.part.as_str() {
            "rest" => f.write_str("the rest of the file")?,
            part => {
                f.write_str(part)?;
                if let Some(i) = self.index {
                    write!(f, " {i}")?;
                }
            }
        }
        if let Some(column) = &self.column {
            if self.part == "column" {
                write!(f, " {column:?}")?;
            } else {
                write!(f, " of column {column:?}")?;
            }
        }
        if let Some(offset) = self.offset {
            write!(f, " at byte {offset}")?;
        }
        match self.rows {
            Some(1) => f.write_str(" (1 row)")?,
            Some(n) => write!(f, " ({n} rows)")?,
            None if self.part == "column" => {}
            None => f.write_str(" (rows unknown)")?,
        }
        write!(f, ": {}", self.reason)
    }
}

impl Clone for Skipped {
    /// The reason is rebuilt from its parts; an underlying source error (which cannot be
    /// cloned) is kept as its text.
    fn clone(&self) -> Self {
        let e = &self.reason;
        let mut reason = Error::new(e.class(), e.message());
        if let Some(file) = e.file() {
            reason = reason.with_file(file);
        }
        if let Some(column) = e.column() {
            reason = reason.with_column(column.index, column.name.as_deref());
        }
        if let Some(field) = e.field() {
            reason = reason.with_field(field);
        }
        if let Some(offset) = e.offset() {
            reason = reason.at_offset(offset);
        }
        if let Some(row) = e.row() {
            reason = reason.at_row(row);
        }
        if let Some(source) = e.cause() {
            reason = reason.with_source(SourceText(source.to_string()));
        }
        Skipped {
            part: self.part.clone(),
            index: self.index,
            column: self.column.clone(),
            offset: self.offset,
            rows: self.rows,
            reason,
        }
    }
}

/// An error's source, as text, in a cloned [`Skipped`].
#[derive(Debug)]
struct SourceText(String);

impl fmt::Display for SourceText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for SourceText {}

/// Where a salvaging reader records what it skipped: a handle that clones cheaply, shared by
/// the caller and the reader (and by the readers of every fragment of one scan, if the caller
/// gives them the same one). Readers only append; the caller reads it during or after the scan.
#[derive(Debug, Clone, Default)]
pub struct SalvageReport(Arc<Mutex<Vec<Skipped>>>);

impl SalvageReport {
    /// An empty report.
    pub fn new() -> Self {
        Self::default()
    }

    fn list(&self) -> MutexGuard<'_, Vec<Skipped>> {
        // A reader that panicked while pushing leaves a list that is still whole.
        self.0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Records one skipped part.
    pub fn push(&self, skipped: Skipped) {
        self.list().push(skipped);
    }

    /// What was skipped so far, in the order it was met.
    pub fn skipped(&self) -> Vec<Skipped> {
        self.list().clone()
    }

    /// Empties the report and returns what it held.
    pub fn take(&self) -> Vec<Skipped> {
        std::mem::take(&mut *self.list())
    }

    /// How many parts were skipped.
    pub fn len(&self) -> usize {
        self.list().len()
    }

    /// Whether nothing was skipped.
    pub fn is_empty(&self) -> bool {
        self.list().is_empty()
    }

    /// Rows skipped in all, counting only the parts whose row count is known.
    pub fn rows_skipped(&self) -> u64 {
        self.list().iter().filter_map(|s| s.rows).sum()
    }

    /// Whether two handles share one list.
    pub fn same_as(&self, other: &SalvageReport) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl PartialEq for SalvageReport {
    /// Two handles are equal when they share one list.
    fn eq(&self, other: &Self) -> bool {
        self.same_as(other)
    }
}

impl Eq for SalvageReport {}

/// What a reader that salvages holds: whether it does, and where it reports. Built from a
/// reader's scan options by `Salvage::from_scan`, which `scan.rs` defines so that the scan
/// options depend on this module and not the other way round.
#[derive(Debug, Clone, Default)]
pub(crate) struct Salvage {
    pub on: bool,
    pub report: SalvageReport,
}

impl Salvage {
    pub fn push(&self, skipped: Skipped) {
        self.report.push(skipped);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ErrorClass;

    #[test]
    fn test_a_skipped_part_prints_as_one_line_naming_where_and_why() {
        let s = Skipped::new(
            "chunk",
            Error::new(ErrorClass::BadEnvelope, "bad header").at_offset(20),
        )
        .with_index(3)
        .with_column("price")
        .with_rows(4096);
        assert_eq!(
            s.to_string(),
            "chunk 3 of column \"price\" (4096 rows): at byte 20: bad header [bad_envelope]"
        );
        let c = Skipped::new("column", Error::new(ErrorClass::BadValue, "x")).with_column("b8");
        assert_eq!(c.to_string(), "column \"b8\": x [bad_value]");
    }

    #[test]
    fn test_clones_of_a_report_share_one_list_and_a_clone_keeps_every_field() {
        let report = SalvageReport::new();
        let reader_side = report.clone();
        reader_side.push(
            Skipped::new(
                "extent",
                Error::new(ErrorClass::BadValue, "adler32 mismatch")
                    .with_file("a.ds")
                    .at_offset(9)
                    .with_source(std::io::Error::other("inner")),
            )
            .at_offset(96)
            .with_rows(10),
        );
        assert_eq!(report.len(), 1);
        assert_eq!(report.rows_skipped(), 10);
        assert!(report == reader_side && report != SalvageReport::new());
        let copy = report.skipped().remove(0);
        assert_eq!(copy.to_string(), report.take()[0].to_string());
        assert!(report.is_empty());
    }
}
