//! Parquet, as the CLI takes it: read through `arrowsmith::open`, listed as fragments and
//! described as `inspect` describes it. Salvage is refused, cleanly.
#![no_main]

use arrowsmith::{ecosystem, Format, ReadOptions, SalvageReport};
use arrowsmith_fuzz::drain;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("in.parquet");
    std::fs::write(&path, data).unwrap();
    let _ = ecosystem::parquet::describe(&path);
    let mut options = ReadOptions::for_format(Format::Parquet);
    let _ = arrowsmith::fragments(&path, &options, 3);
    options.scan.batch_size = Some(5);
    if let Ok(reader) = arrowsmith::open(&path, &options) {
        drain(reader);
    }
    let salvaging = options.with_salvage(SalvageReport::new());
    assert!(arrowsmith::open(&path, &salvaging).is_err());
});
