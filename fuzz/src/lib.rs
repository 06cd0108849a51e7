//! What the fuzz targets share: draining a reader while checking every array it hands out, and
//! the container format that turns one fuzzer input into the several files of a Filo set or a
//! bcolz carray.
//!
//! Every target must never panic, hang or allocate beyond what its input justifies; errors are
//! expected and ignored. A target reads with salvage off and on, so the salvage paths (which
//! go on past damage) are fuzzed as hard as the strict ones.

use arrow_array::{RecordBatch, RecordBatchReader};
use arrowsmith::SalvageReport;

/// Reads every batch and validates every array fully (offsets, UTF-8, buffer sizes), since
/// several readers build arrays without Arrow's checks. Stops at the first error, as a caller
/// would. Returns the rows read, or `None` after an error.
pub fn drain(reader: impl RecordBatchReader) -> Option<usize> {
    let schema = reader.schema();
    let mut rows = 0;
    for batch in reader {
        let batch = batch.ok()?;
        check_batch(&batch);
        assert_eq!(
            batch.schema().fields(),
            schema.fields(),
            "a batch's schema is the reader's"
        );
        rows += batch.num_rows();
    }
    Some(rows)
}

/// Panics if an array of the batch breaks Arrow's invariants.
pub fn check_batch(batch: &RecordBatch) {
    for column in batch.columns() {
        assert_eq!(
            column.len(),
            batch.num_rows(),
            "every column has the batch's rows"
        );
        column
            .to_data()
            .validate_full()
            .expect("a reader hands out valid arrays");
    }
}

/// Runs `read` twice: strict, then salvaging with a fresh report (`read` returns the rows, or
/// `None` after an error). A file that reads whole must read the same with salvage on, with
/// nothing skipped.
pub fn strict_and_salvaging(read: impl Fn(Option<SalvageReport>) -> Option<usize>) {
    let strict = read(None);
    let report = SalvageReport::new();
    let salvaged = read(Some(report.clone()));
    let skipped = report.take();
    for part in &skipped {
        let _ = part.to_string();
        let _ = part.to_json();
    }
    if let Some(rows) = strict {
        assert!(
            skipped.is_empty(),
            "a file that reads whole has nothing to skip: {skipped:?}"
        );
        assert_eq!(
            salvaged,
            Some(rows),
            "salvage changes nothing on a whole file"
        );
    }
}

/// Splits a fuzzer input into parts: each is a little-endian u16 length and that many bytes;
/// a length past the end takes what is left. At most `max` parts.
pub fn split_parts(mut data: &[u8], max: usize) -> Vec<&[u8]> {
    let mut parts = Vec::new();
    while parts.len() < max && data.len() >= 2 {
        let len = u16::from_le_bytes([data[0], data[1]]) as usize;
        data = &data[2..];
        let len = len.min(data.len());
        parts.push(&data[..len]);
        data = &data[len..];
    }
    parts
}

/// The inverse of [`split_parts`], for seeds and regression inputs.
pub fn join_parts(parts: &[&[u8]]) -> Vec<u8> {
    let mut out = Vec::new();
    for part in parts {
        let len = u16::try_from(part.len()).expect("a part of at most 65535 bytes");
        out.extend_from_slice(&len.to_le_bytes());
        out.extend_from_slice(part);
    }
    out
}
