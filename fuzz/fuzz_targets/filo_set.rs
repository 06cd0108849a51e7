//! A Filo set: the input is split into parts (see `split_parts`); the first is schema.json,
//! each other part is one column file: its first byte the chunk (0–3), its second the
//! column (0–3), the rest the vector. Read strict and salvaging; also the fragment listing.
#![no_main]

use arrowsmith::filo::{self, ReaderBuilder};
use arrowsmith_fuzz::{drain, split_parts, strict_and_salvaging};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let parts = split_parts(data, 17);
    let Some((schema, files)) = parts.split_first() else {
        return;
    };
    let dir = tempfile::tempdir().expect("a temporary directory");
    let set = dir.path().join("t.filo");
    std::fs::create_dir(&set).unwrap();
    std::fs::write(set.join("schema.json"), schema).unwrap();
    for file in files {
        if file.len() < 2 {
            continue;
        }
        let chunk = filo::chunk_dir(&set, (file[0] % 4) as usize);
        std::fs::create_dir_all(&chunk).unwrap();
        std::fs::write(chunk.join(format!("{}.bin", file[1] % 4)), &file[2..]).unwrap();
    }
    if let Ok(opened) = filo::SetInfo::open(&set) {
        let _ = filo::fragments(&opened, 3);
    }
    strict_and_salvaging(|report| {
        let mut builder = ReaderBuilder::new().with_batch_size(4);
        if let Some(report) = report {
            builder = builder.with_salvage(true).with_salvage_report(report);
        }
        drain(builder.build(&set).ok()?)
    });
});
