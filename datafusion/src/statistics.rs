//! What a file's metadata says about its data, as DataFusion [`Statistics`]: the exact row
//! count (so `SELECT count(*)` is answered without a scan), and for Jay the column minimum,
//! maximum and null count that datatable stores.
//!
//! Jay's stored statistics are given as inexact: the core verifies a file's buffers, not that
//! its stored minimum is the data's minimum (a file from another writer may carry stale ones),
//! and DataFusion answers `min()` / `max()` from exact statistics without reading the data.
//! Inexact, they still order and prune the plan.

use arrow_schema::{DataType, SchemaRef};
use arrowsmith::jay::{JayFile, Stats};
use arrowsmith::Input;
use datafusion::common::stats::Precision;
use datafusion::common::{ColumnStatistics, ScalarValue, Statistics};

/// The statistics of one opened file or directory under `schema` (its table's schema).
pub(crate) fn file_statistics(input: &Input, schema: &SchemaRef) -> Statistics {
    let path = input.path();
    let mut statistics = Statistics::new_unknown(schema);
    if let Some(rows) = input.rows() {
        statistics.num_rows = Precision::Exact(rows as usize);
    }
    if let Ok(bytes) = std::fs::metadata(path).map(|m| m.len()) {
        if !path.is_dir() {
            statistics.total_byte_size = Precision::Inexact(bytes as usize);
        }
    }
    if let Some(file) = input.handle::<JayFile>() {
        add_jay_columns(file, schema, &mut statistics);
    }
    statistics
}

fn add_jay_columns(file: &JayFile, schema: &SchemaRef, statistics: &mut Statistics) {
    for column in &file.info().columns {
        let Some(name) = &column.name else { continue };
        let Ok(index) = schema.index_of(name) else {
            continue;
        };
        let data_type = schema.field(index).data_type();
        let mut stats = ColumnStatistics::new_unknown();
        stats.null_count = Precision::Inexact(column.nullcount as usize);
        if let Some((min, max)) = column.stats.as_ref().and_then(|s| bounds(s, data_type)) {
            stats.min_value = Precision::Inexact(min);
            stats.max_value = Precision::Inexact(max);
        }
        statistics.column_statistics[index] = stats;
    }
}

/// Jay's stored bounds in the column's Arrow type, for the numeric types they are kept for.
fn bounds(stats: &Stats, data_type: &DataType) -> Option<(ScalarValue, ScalarValue)> {
    let numeric = data_type.is_integer() || data_type.is_floating();
    if !numeric {
        return None;
    }
    let (min, max) = match *stats {
        Stats::Int { min, max } => (ScalarValue::Int64(Some(min)), ScalarValue::Int64(Some(max))),
        Stats::Float { min, max } => (
            ScalarValue::Float64(Some(min)),
            ScalarValue::Float64(Some(max)),
        ),
    };
    Some((min.cast_to(data_type).ok()?, max.cast_to(data_type).ok()?))
}
