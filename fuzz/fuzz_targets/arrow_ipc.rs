//! Arrow IPC, as the CLI takes it: the bytes as a file and as a stream, read through
//! `arrowsmith::open`, listed as fragments and described as `inspect` describes them. Salvage
//! is refused for these formats, cleanly.
#![no_main]

use arrowsmith::{ecosystem, Format, ReadOptions, SalvageReport};
use arrowsmith_fuzz::drain;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("in.arrow");
    std::fs::write(&path, data).unwrap();
    let _ = ecosystem::ipc::describe_file(&path);
    let _ = ecosystem::ipc::describe_stream(&path);
    for format in [Format::Arrow, Format::ArrowStream] {
        let _ = arrowsmith::fragments(&path, &ReadOptions::for_format(format), 3);
        let mut options = ReadOptions::for_format(format);
        options.scan.batch_size = Some(5);
        if let Ok(reader) = arrowsmith::open(&path, &options) {
            drain(reader);
        }
        let salvaging = options.with_salvage(SalvageReport::new());
        assert!(arrowsmith::open(&path, &salvaging).is_err());
    }
});
