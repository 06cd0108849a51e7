//! What the integration tests share: where the fixtures are, copying a fixture directory, and
//! the reference `ds2txt` rendering. Each test file is its own binary and brings this module in
//! with `mod common;`, using only part of it.
#![allow(
    dead_code,
    reason = "every test binary compiles this module and uses only some of its helpers"
)]

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::RecordBatch;
use arrow_schema::ArrowError;
use arrowsmith::source::{ByteSource, Counting, Counts};

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

/// What a ranged read may fetch besides its share of a file or dataset: an open's header,
/// tail or metadata objects.
pub const FETCH_SLACK: u64 = 64 << 10;

/// The most a ranged read of a fragment whose share of the bytes is `share` may fetch,
/// open included: 1.25 × its share + 64 KiB ([`FETCH_SLACK`]).
pub fn fetch_bound(share: u64) -> u64 {
    share + share / 4 + FETCH_SLACK
}

/// Asserts that a ranged read (`what`) that fetched `fetched` bytes for a share of `share`
/// stayed within [`fetch_bound`].
#[track_caller]
pub fn assert_fetched_within_share(what: impl std::fmt::Display, fetched: u64, share: u64) {
    let bound = fetch_bound(share);
    assert!(
        fetched <= bound,
        "{what}: fetched {fetched} bytes, more than {bound} (1.25 × its share of {share} bytes \
         + 64 KiB)"
    );
}

/// `source` as a reader sees a remote object (a counted source is not local, so it is read by
/// ranges), and the counts of the requests reading it takes.
pub fn counted<S: ByteSource + 'static>(source: S) -> (Arc<dyn ByteSource>, Arc<Counts>) {
    let source = Counting::new(source);
    let counts = source.counts();
    (Arc::new(source), counts)
}

/// The error a read fails with: `reader` (a built reader, or the error building it) read to
/// its end. Panics, naming `what`, when it reads without error.
#[track_caller]
pub fn read_error<R>(
    what: impl std::fmt::Display,
    reader: arrowsmith::Result<R>,
) -> arrowsmith::Error
where
    R: Iterator<Item = Result<RecordBatch, ArrowError>>,
{
    let read = reader.and_then(|reader| {
        reader
            .collect::<Result<Vec<_>, _>>()
            .map_err(arrowsmith::Error::from_arrow_owned)
    });
    match read {
        Ok(batches) => {
            let rows: usize = batches.iter().map(RecordBatch::num_rows).sum();
            panic!("{what}: read {rows} rows without error, expected one")
        }
        Err(error) => error,
    }
}
