//! What the integration tests share: where the fixtures are, copying a fixture directory, and
//! the reference `ds2txt` rendering. Each test file is its own binary and brings this module in
//! with `mod common;`, using only part of it.
#![allow(
    dead_code,
    reason = "every test binary compiles this module and uses only some of its helpers"
)]

use std::collections::HashMap;
use std::path::{Path, PathBuf};

pub mod ds2txt;

/// `data/<path>` of the repository: the fixtures, written by the formats' reference tools.
pub fn data(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("data")
        .join(path)
}

/// Copies the directory tree `from` to `to` (created as needed), for tests that change a
/// fixture directory (bcolz, Filo sets) without touching the original.
pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

/// A deterministic pseudo-random sequence (xorshift64), so generated test data is the same on
/// every run and a failure can be replayed from its seed.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

/// DataSeries field metadata: each `(key, value)` under the `dataseries.` prefix the reader
/// and writer use for a field's XML attributes.
pub fn ds_metadata(pairs: &[(&str, &str)]) -> HashMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (format!("dataseries.{k}"), v.to_string()))
        .collect()
}
