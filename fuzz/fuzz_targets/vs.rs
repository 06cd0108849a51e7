//! VS: the bytes are a whole file, read from memory with the default options and with every
//! other reading mode at once (lenient end, msb-first varints, msgpack app data, offsets);
//! also `inspect`'s path (the block walk).
#![no_main]

use arrowsmith::vs::{AppDataMode, EofMode, ReaderBuilder, ReaderOptions, VarintOrder, VsFile};
use arrowsmith_fuzz::{drain, strict_and_salvaging};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut other = ReaderOptions::default();
    other.parse.eof = EofMode::Lenient;
    other.parse.varint = VarintOrder::MsbFirst;
    other.app_data = AppDataMode::Msgpack;
    other.with_offsets = true;
    for options in [ReaderOptions::default(), other] {
        if let Ok(file) = VsFile::from_bytes(data.to_vec(), options) {
            let _ = file.describe(64);
        }
        strict_and_salvaging(|report| {
            let mut builder = ReaderBuilder::new()
                .with_options(&options)
                .with_batch_size(3);
            if let Some(report) = report {
                builder = builder.with_salvage(true).with_salvage_report(report);
            }
            drain(builder.build_from_bytes(data.to_vec()).ok()?)
        });
    }
});
