//! bcolz: the input is split into parts (see `split_parts`): `meta/storage`, `meta/sizes`,
//! then up to three chunk files `data/__K.blp` (bloscpack header + one Blosc chunk), then the
//! carray's `__attrs__`. Read strict and salvaging, with and without read-ahead; also
//! `inspect`'s path (every chunk header) and a raw decompression of each chunk.
#![no_main]

use arrowsmith::bcolz::{self, blosc, ReaderBuilder};
use arrowsmith_fuzz::{drain, split_parts, strict_and_salvaging};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let parts = split_parts(data, 6);
    if parts.len() < 3 {
        return;
    }
    let dir = tempfile::tempdir().expect("a temporary directory");
    let carray = dir.path().join("c");
    std::fs::create_dir_all(carray.join("meta")).unwrap();
    std::fs::create_dir_all(carray.join("data")).unwrap();
    std::fs::write(carray.join("meta/storage"), parts[0]).unwrap();
    std::fs::write(carray.join("meta/sizes"), parts[1]).unwrap();
    let chunks = &parts[2..parts.len().min(5)];
    for (k, chunk) in chunks.iter().enumerate() {
        std::fs::write(carray.join(format!("data/__{k}.blp")), chunk).unwrap();
        if chunk.len() > 16 {
            let _ = blosc::decompress(&chunk[16..], 1 << 20);
        }
    }
    if let Some(attrs) = parts.get(5) {
        std::fs::write(carray.join("__attrs__"), attrs).unwrap();
    }
    if let Ok(info) = bcolz::open_info(&carray) {
        for c in &info.columns {
            for k in 0..c.chunks_for(info.nrows).min(4) {
                let _ = c.chunk_header(k);
            }
        }
        let _ = bcolz::fragments(&info, 10);
    }
    for read_ahead in [0, 2] {
        strict_and_salvaging(|report| {
            let mut builder = ReaderBuilder::new()
                .with_batch_size(100)
                .with_read_ahead(read_ahead);
            if let Some(report) = report {
                builder = builder.with_salvage(true).with_salvage_report(report);
            }
            drain(builder.build(&carray).ok()?)
        });
    }
});
