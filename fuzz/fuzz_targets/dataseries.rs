//! DataSeries: the bytes are a whole file (the seeds hold both byte orders), read from memory
//! with the checks on and off, every declared type; also `inspect`'s path (the extent list,
//! row counts and fragments).
#![no_main]

use arrowsmith::dataseries::{fragments, DsFile, OpenOptions, ReaderBuilder, TypedFile};
use arrowsmith_fuzz::{drain, strict_and_salvaging};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(file) = DsFile::from_bytes(data.to_vec(), OpenOptions::default()) else {
        // A salvaging open still has to cope.
        let lenient = OpenOptions {
            lenient: true,
            ..OpenOptions::default()
        };
        if let Ok(file) = DsFile::from_bytes(data.to_vec(), lenient) {
            let _ = file.damaged.len();
        }
        strict_and_salvaging(|report| read(data, None, true, report));
        return;
    };
    let file = std::sync::Arc::new(file);
    let names: Vec<String> = file.types.iter().map(|t| t.name.clone()).collect();
    for name in &names {
        let _ = file.rows_of(name);
        if let Ok(typed) = TypedFile::new(file.clone(), Some(name)) {
            let _ = fragments(&typed, 7);
        }
    }
    // Only the data types: the XmlType and index extents are read by the open.
    for name in names.iter().take(4) {
        for checks in [true, false] {
            strict_and_salvaging(|report| read(data, Some(name), checks, report));
        }
    }
});

fn read(
    data: &[u8],
    type_name: Option<&str>,
    checks: bool,
    report: Option<arrowsmith::SalvageReport>,
) -> Option<usize> {
    let mut builder = ReaderBuilder::new()
        .with_checks(checks)
        .with_utf8_all()
        .with_batch_size(5);
    if let Some(name) = type_name {
        builder = builder.with_type(name);
    }
    if let Some(report) = report {
        builder = builder.with_salvage(true).with_salvage_report(report);
    }
    drain(builder.build_from_bytes(data.to_vec()).ok()?)
}
