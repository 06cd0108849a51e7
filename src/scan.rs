//! What every reader is asked for, whatever its format: [`ScanOptions`] (batch size, projection,
//! row limit, the fragment to read and whether to salvage a damaged file) and the [`FragmentRange`] a fragment covers in its
//! format's own unit.
//!
//! Format modules take these from here, never from the crate root that dispatches over them.

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::salvage::{Salvage, SalvageReport};

/// The number of rows per batch of every reader when the caller does not choose one: the
/// command line's too, and large enough that the cost of each batch is small beside decoding.
pub const DEFAULT_BATCH_SIZE: usize = 65_536;

/// The bytes of a file held in memory, as every `build_from_bytes` takes them (`Vec<u8>`,
/// `Buffer`, `bytes::Bytes` through `Buffer`…), for a reader that keeps a `Vec<u8>`: a `Vec`
/// or a `Buffer` that owns its `Vec` is taken over, anything else is copied once.
pub(crate) fn owned_bytes(bytes: impl Into<arrow_buffer::Buffer>) -> Vec<u8> {
    let buffer: arrow_buffer::Buffer = bytes.into();
    buffer
        .into_vec::<u8>()
        .unwrap_or_else(|shared| shared.as_slice().to_vec())
}

/// The default `target_rows` of a fragment listing: about a million rows, enough that opening
/// a fragment costs little beside decoding it, few enough that a worker holds one in memory.
pub const DEFAULT_TARGET_ROWS: usize = 1 << 20;

/// Which columns to read: by position or by name, in the order wanted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Projection {
    /// Column positions in the file's schema.
    Indices(Vec<usize>),
    /// Column names.
    Names(Vec<String>),
}

impl Projection {
    /// Resolves the projection against the column names of a file, in the order asked for.
    pub fn resolve<'a>(&self, names: impl IntoIterator<Item = &'a str>) -> Result<Vec<usize>> {
        let names: Vec<&str> = names.into_iter().collect();
        match self {
            Projection::Indices(indices) => {
                for &i in indices {
                    if i >= names.len() {
                        return Err(Error::invalid_argument(format!(
                            "column index {i} is out of range: the data has {} columns",
                            names.len()
                        )));
                    }
                }
                Ok(indices.clone())
            }
            Projection::Names(wanted) => wanted
                .iter()
                .map(|w| {
                    names.iter().position(|n| n == w).ok_or_else(|| {
                        Error::invalid_argument(format!(
                            "no column named {w:?}; the columns are {}",
                            quote_list(&names)
                        ))
                    })
                })
                .collect(),
        }
    }
}

fn quote_list(names: &[&str]) -> String {
    const SHOWN: usize = 20;
    let mut text: Vec<String> = names.iter().take(SHOWN).map(|n| format!("{n:?}")).collect();
    if names.len() > SHOWN {
        text.push(format!("… ({} in all)", names.len()));
    }
    text.join(", ")
}

impl From<Vec<usize>> for Projection {
    fn from(v: Vec<usize>) -> Self {
        Projection::Indices(v)
    }
}
impl<const N: usize> From<[usize; N]> for Projection {
    fn from(v: [usize; N]) -> Self {
        Projection::Indices(v.to_vec())
    }
}
impl From<Vec<String>> for Projection {
    fn from(v: Vec<String>) -> Self {
        Projection::Names(v)
    }
}
impl From<Vec<&str>> for Projection {
    fn from(v: Vec<&str>) -> Self {
        Projection::Names(v.into_iter().map(str::to_owned).collect())
    }
}
impl<const N: usize> From<[&str; N]> for Projection {
    fn from(v: [&str; N]) -> Self {
        Projection::Names(v.iter().map(|s| s.to_string()).collect())
    }
}

/// The part of a file a fragment covers, in the unit along which its format divides: the
/// format's natural seams, never inside one. Every range is half-open, `start..end`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "unit", rename_all = "snake_case")]
pub enum FragmentRange {
    /// The whole input (CSV, NDJSON, an Arrow IPC stream, a bare Filo vector).
    Whole,
    /// Rows `start..end` (Jay: any row; bcolz: on the chunk grid).
    Rows {
        /// First row.
        start: u64,
        /// One past the last row.
        end: u64,
    },
    /// The units that begin at byte offsets `start..end` (DataSeries extents of the chosen
    /// type, VS blocks).
    Bytes {
        /// Offset of the first unit.
        start: u64,
        /// Offsets of units in the fragment are below this.
        end: u64,
    },
    /// Chunks `start..end` (Filo sets).
    Chunks {
        /// First chunk.
        start: u64,
        /// One past the last chunk.
        end: u64,
    },
    /// Row groups `start..end` (Parquet).
    RowGroups {
        /// First row group.
        start: u64,
        /// One past the last row group.
        end: u64,
    },
    /// Record batches `start..end` (Arrow IPC file).
    Batches {
        /// First batch.
        start: u64,
        /// One past the last batch.
        end: u64,
    },
}

impl FragmentRange {
    /// The unit's name, as it appears in the JSON form (`"rows"`, `"bytes"`, …).
    pub fn unit(&self) -> &'static str {
        match self {
            FragmentRange::Whole => "whole",
            FragmentRange::Rows { .. } => "rows",
            FragmentRange::Bytes { .. } => "bytes",
            FragmentRange::Chunks { .. } => "chunks",
            FragmentRange::RowGroups { .. } => "row_groups",
            FragmentRange::Batches { .. } => "batches",
        }
    }

    /// `start..end` of a ranged unit; `None` for [`FragmentRange::Whole`].
    pub fn bounds(&self) -> Option<(u64, u64)> {
        match *self {
            FragmentRange::Whole => None,
            FragmentRange::Rows { start, end }
            | FragmentRange::Bytes { start, end }
            | FragmentRange::Chunks { start, end }
            | FragmentRange::RowGroups { start, end }
            | FragmentRange::Batches { start, end } => Some((start, end)),
        }
    }

    /// The error a reader gives for a range in a unit its format does not divide by.
    pub fn wrong_unit(&self, format: &str, expected: &str) -> Error {
        Error::invalid_argument(format!(
            "a {format} fragment is a range of {expected}, not of {}",
            self.unit()
        ))
    }
}

/// What every reader is asked for: the batch size, the columns, the row limit, the fragment
/// and salvage. Every `ReaderBuilder` takes one
/// ([`with_scan`](crate::jay::ReaderBuilder::with_scan)) and has a setter for each field.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScanOptions {
    /// Rows per batch at most; `None` is every reader's default, [`DEFAULT_BATCH_SIZE`]. A
    /// batch never spans two DataSeries extents or two Filo chunks. The Jay and ecosystem
    /// readers hand out a batch without columns (a Jay frame of none, an Arrow IPC batch of an
    /// empty schema) whole, whatever its row count: it costs nothing, and nothing in the file
    /// bounds that count.
    pub batch_size: Option<usize>,
    /// The columns to read, in this order; `None` reads them all.
    pub projection: Option<Projection>,
    /// Read at most this many rows (of the fragment, when one is given).
    pub limit: Option<usize>,
    /// Read only this part of the file; `None` reads it whole.
    pub range: Option<FragmentRange>,
    /// Skip the damaged parts of the file (extents, chunks, point blocks, columns) instead of
    /// failing at the first, and record each in `report` (see [`crate::salvage`]). Default:
    /// off, so the first damage is an error. The Arrow ecosystem's formats refuse it.
    #[serde(default)]
    pub salvage: bool,
    /// Where a salvaging reader records what it skipped. [`crate::open`] needs one when
    /// `salvage` is on; a format's reader makes its own when none is given (its
    /// `salvage_report()` returns it). Not part of a scan's serialized form.
    #[serde(skip)]
    pub report: Option<SalvageReport>,
}

impl Salvage {
    /// Whether a reader with these scan options salvages, and where it reports.
    pub(crate) fn from_scan(scan: &ScanOptions) -> Self {
        Salvage {
            on: scan.salvage,
            report: scan.report.clone().unwrap_or_default(),
        }
    }
}

impl ScanOptions {
    /// The batch size, or `default` when none was chosen.
    pub fn batch_size_or(&self, default: usize) -> usize {
        self.batch_size.unwrap_or(default).max(1)
    }
}

/// One fragment as a format lists it: the range and what it holds. The dispatch adds the path,
/// format and index to make a [`Fragment`](crate::Fragment).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FragmentSpan {
    /// The part of the file.
    pub range: FragmentRange,
    /// Rows in the range (after the format's own filtering, e.g. deleted VS points).
    pub rows: u64,
    /// Whether `rows` is exact or an estimate.
    pub rows_exact: bool,
    /// Bytes of the file the range covers (stored, i.e. compressed, size).
    pub bytes: u64,
}

/// One natural unit of a file (an extent, a chunk, a block, a row group, a batch), for
/// [`group_units`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Unit {
    /// Where the unit starts, in the range's unit (byte offset, chunk index, …).
    pub start: u64,
    /// Where the next unit starts.
    pub end: u64,
    /// Rows it holds.
    pub rows: u64,
    /// Bytes it takes in the file.
    pub bytes: u64,
}

/// Groups consecutive natural units into fragments of about `target_rows` rows: a fragment
/// closes once it reaches the target, so each holds at least one unit and fragments never cut
/// a unit. `range` makes the fragment's range from the first unit's start and the last unit's
/// end. No units (an empty file) give one empty fragment over `empty`, so every input lists
/// at least one fragment.
pub fn group_units(
    units: impl IntoIterator<Item = Unit>,
    target_rows: usize,
    range: impl Fn(u64, u64) -> FragmentRange,
    empty: FragmentRange,
) -> Vec<FragmentSpan> {
    let target = target_rows.max(1) as u64;
    let span = |(start, rows, bytes): (u64, u64, u64), end| FragmentSpan {
        range: range(start, end),
        rows,
        rows_exact: true,
        bytes,
    };
    let mut spans = Vec::new();
    let mut open: Option<(u64, u64, u64)> = None; // first unit's start, rows, bytes
    let mut last_end = 0;
    for unit in units {
        let (start, rows, bytes) = open.unwrap_or((unit.start, 0, 0));
        let grown = (start, rows + unit.rows, bytes + unit.bytes);
        last_end = unit.end;
        if grown.1 >= target {
            spans.push(span(grown, last_end));
            open = None;
        } else {
            open = Some(grown);
        }
    }
    if let Some(rest) = open {
        spans.push(span(rest, last_end));
    }
    if spans.is_empty() {
        spans.push(FragmentSpan {
            range: empty,
            rows: 0,
            rows_exact: true,
            bytes: 0,
        });
    }
    spans
}

/// The one fragment of an input read whole (an Arrow IPC stream, CSV, NDJSON, a bare Filo
/// vector), with its rows when they are known.
pub(crate) fn whole(path: &std::path::Path, rows: Option<u64>) -> Result<FragmentSpan> {
    Ok(whole_of(std::fs::metadata(path)?.len(), rows))
}

/// The one fragment of an input of `bytes` bytes read whole (a remote bare Filo vector).
pub(crate) fn whole_of(bytes: u64, rows: Option<u64>) -> FragmentSpan {
    FragmentSpan {
        range: FragmentRange::Whole,
        rows: rows.unwrap_or(0),
        rows_exact: rows.is_some(),
        bytes,
    }
}

/// Splits rows `0..total` into row ranges of about `target_rows`, aligned to multiples of
/// `grid` (1 for any row), each `bytes_of(start, end)` bytes.
pub fn split_rows(
    total: u64,
    target_rows: usize,
    grid: u64,
    bytes_of: impl Fn(u64, u64) -> u64,
) -> Vec<FragmentSpan> {
    let grid = grid.max(1);
    let step = (target_rows.max(1) as u64)
        .div_ceil(grid)
        .saturating_mul(grid);
    let mut spans = Vec::new();
    let mut start = 0;
    while start < total {
        let end = start.saturating_add(step).min(total);
        spans.push(FragmentSpan {
            range: FragmentRange::Rows { start, end },
            rows: end - start,
            rows_exact: true,
            bytes: bytes_of(start, end),
        });
        start = end;
    }
    if spans.is_empty() {
        spans.push(FragmentSpan {
            range: FragmentRange::Rows { start: 0, end: 0 },
            rows: 0,
            rows_exact: true,
            bytes: 0,
        });
    }
    spans
}

/// The setters every `ReaderBuilder` has, written once: the builder keeps a [`ScanOptions`]
/// in a field named `scan`.
macro_rules! scan_setters {
    () => {
        /// Rows per batch at most (default [`DEFAULT_BATCH_SIZE`](crate::DEFAULT_BATCH_SIZE),
        /// 65,536; the last batch of a file, fragment, DataSeries extent or Filo chunk may be
        /// shorter).
        pub fn with_batch_size(mut self, batch_size: usize) -> Self {
            self.scan.batch_size = Some(batch_size.max(1));
            self
        }

        /// Reads only these columns, in this order, by index or by name. Default: all.
        pub fn with_projection(mut self, projection: impl Into<$crate::scan::Projection>) -> Self {
            self.scan.projection = Some(projection.into());
            self
        }

        /// Reads at most this many rows. Default: no limit.
        pub fn with_limit(mut self, limit: usize) -> Self {
            self.scan.limit = Some(limit);
            self
        }

        /// Reads only this fragment of the file (see [`crate::fragments`]). Default: the
        /// whole file.
        pub fn with_range(mut self, range: $crate::scan::FragmentRange) -> Self {
            self.scan.range = Some(range);
            self
        }

        /// Skips the damaged parts of a file instead of failing, recording each in the
        /// reader's [`SalvageReport`](crate::salvage::SalvageReport). Default: off.
        pub fn with_salvage(mut self, salvage: bool) -> Self {
            self.scan.salvage = salvage;
            self
        }

        /// Where a salvaging reader records what it skipped (several readers may share one).
        /// Default: a report of the reader's own.
        pub fn with_salvage_report(mut self, report: $crate::salvage::SalvageReport) -> Self {
            self.scan.report = Some(report);
            self
        }

        /// Sets the batch size, projection, limit, fragment and salvage at once (default:
        /// [`ScanOptions::default`](crate::ScanOptions), every column of the whole file).
        pub fn with_scan(mut self, scan: $crate::scan::ScanOptions) -> Self {
            self.scan = scan;
            self
        }

        /// The batch size, projection, limit, fragment and salvage this builder reads with.
        pub fn scan(&self) -> &$crate::scan::ScanOptions {
            &self.scan
        }
    };
}
pub(crate) use scan_setters;

#[cfg(test)]
mod tests {
    use super::*;

    fn unit(start: u64, rows: u64) -> Unit {
        Unit {
            start,
            end: start + 10,
            rows,
            bytes: 10,
        }
    }

    #[test]
    fn test_group_units_closes_a_fragment_once_it_reaches_the_target() {
        let units = [unit(0, 5), unit(10, 5), unit(20, 5), unit(30, 1)];
        let spans = group_units(
            units,
            10,
            |start, end| FragmentRange::Bytes { start, end },
            FragmentRange::Whole,
        );
        let ranges: Vec<_> = spans.iter().map(|s| (s.range, s.rows)).collect();
        assert_eq!(
            ranges,
            [
                (FragmentRange::Bytes { start: 0, end: 20 }, 10),
                (FragmentRange::Bytes { start: 20, end: 40 }, 6)
            ]
        );
    }

    #[test]
    fn test_group_units_of_nothing_is_one_empty_fragment() {
        let spans = group_units([], 10, |s, e| FragmentRange::Chunks { start: s, end: e }, {
            FragmentRange::Chunks { start: 0, end: 0 }
        });
        assert_eq!(spans.len(), 1);
        assert_eq!(spans[0].rows, 0);
    }

    #[test]
    fn test_split_rows_stays_on_the_grid_and_covers_every_row() {
        let spans = split_rows(25, 7, 4, |s, e| e - s);
        let ranges: Vec<_> = spans.iter().filter_map(|s| s.range.bounds()).collect();
        assert_eq!(ranges, [(0, 8), (8, 16), (16, 24), (24, 25)]);
    }

    #[test]
    fn test_fragment_range_json_names_its_unit() {
        let json = serde_json::to_string(&FragmentRange::Bytes { start: 8, end: 99 }).unwrap();
        assert_eq!(json, r#"{"unit":"bytes","start":8,"end":99}"#);
        let back: FragmentRange = serde_json::from_str(&json).unwrap();
        assert_eq!(back, FragmentRange::Bytes { start: 8, end: 99 });
    }
}
