//! Jay: the bytes are a whole file, read from memory; also `inspect --verify`'s path (the
//! verified description, as JSON, and a full decode).
#![no_main]

use std::sync::Arc;

use arrowsmith::jay::{JayFile, ReaderBuilder};
use arrowsmith_fuzz::{drain, strict_and_salvaging};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(file) = JayFile::from_bytes(data.to_vec()) {
        let _ = serde_json::to_string(file.info());
        let _ = Arc::new(file).verify();
    }
    if let Ok(file) = JayFile::from_bytes_salvaging(data.to_vec()) {
        let _ = file.dropped().len();
    }
    strict_and_salvaging(|report| {
        let mut builder = ReaderBuilder::new().with_batch_size(3);
        if let Some(report) = report {
            builder = builder.with_salvage(true).with_salvage_report(report);
        }
        drain(builder.build_from_bytes(data.to_vec()).ok()?)
    });
});
