//! A file read by ranges in windows of a few bytes reads as the same file mapped whole: every
//! fixture (valid and damaged), whole and by fragments, with projection, limit, offsets,
//! lenient end of file and salvage, and its listing and description. Windows this small cut
//! every header and payload somewhere, which the default windows (64 KiB, 8 MiB) never do on
//! files this size.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::RecordBatch;

use super::fetch::Windows;
use super::{fragments, ReaderBuilder, ReaderOptions, VsFile};
use crate::error::{Error, Result};
use crate::scan::FragmentRange;
use crate::source::{ByteSource, Counting, LocalFile};
use crate::vs::codec::EofMode;

fn fixtures() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("data/vs");
    let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "vs"))
        .collect();
    paths.sort();
    assert!(paths.len() >= 11, "{paths:?}");
    paths
}

/// What one read or listing gave.
#[derive(Debug, PartialEq)]
enum Outcome {
    /// Batches (compared as batches: their schema metadata is a hash map) and what the
    /// salvage report says.
    Batches(Vec<RecordBatch>, String),
    /// Anything else, or an error, as text.
    Text(String),
}

/// What a read of `file` with `builder` gives: its batches and salvage report, or its error.
fn read(file: &Arc<VsFile>, builder: ReaderBuilder) -> Outcome {
    let reader = match builder.build_from_file(Arc::clone(file)) {
        Ok(reader) => reader,
        Err(e) => return Outcome::Text(format!("build: {e}")),
    };
    let report = reader.salvage_report().clone();
    match reader.collect::<std::result::Result<Vec<_>, _>>() {
        Ok(batches) => Outcome::Batches(batches, format!("{:?}", report.skipped())),
        Err(e) => Outcome::Text(format!("read: {}", Error::from_arrow_owned(e))),
    }
}

fn text<T: std::fmt::Debug>(result: Result<T>) -> Outcome {
    Outcome::Text(match result {
        Ok(value) => format!("{value:?}"),
        Err(e) => format!("error: {e}"),
    })
}

/// Every read of a file this test compares, opened by `open`.
fn reads(open: &dyn Fn(ReaderOptions) -> Result<VsFile>) -> Vec<Outcome> {
    let mut out = Vec::new();
    for lenient in [false, true] {
        let mut options = ReaderOptions::default();
        if lenient {
            options.parse.eof = EofMode::Lenient;
        }
        let file = match open(options) {
            Ok(file) => Arc::new(file),
            Err(e) => {
                out.push(Outcome::Text(format!("open: {e}")));
                continue;
            }
        };
        out.push(text(file.describe(usize::MAX)));
        out.push(text(file.live_points()));
        let builder = || {
            ReaderBuilder::new()
                .with_options(&options)
                .with_batch_size(2)
        };
        out.push(read(&file, builder()));
        out.push(read(&file, builder().with_salvage(true)));
        out.push(read(
            &file,
            builder().with_projection(["app_data"]).with_offsets(true),
        ));
        out.push(read(&file, builder().with_limit(1)));
        for target in [1, 2, 1000] {
            let spans = fragments(&file, target);
            out.push(Outcome::Text(match &spans {
                Ok(spans) => format!("{spans:?}"),
                Err(e) => format!("error: {e}"),
            }));
            for span in spans.unwrap_or_default() {
                let range = builder().with_range(span.range);
                out.push(read(&file, range));
            }
        }
        let bogus = FragmentRange::Bytes {
            start: file.data_start as u64 + 1,
            end: file.size() + 7,
        };
        out.push(read(&file, builder().with_range(bogus)));
    }
    out
}

#[test]
fn fixtures_read_by_tiny_windows_read_as_mapped() {
    for path in fixtures() {
        let local = reads(&|options| VsFile::open(&path, options));
        for (open, read) in [(1, 1), (1, 2), (3, 5), (5, 4), (6, 3), (7, 64), (64, 7)] {
            let windows = Windows { open, read };
            let counted = Arc::new(Counting::new(LocalFile::open(&path).unwrap()));
            let counts = counted.counts();
            let remote =
                reads(&|options| VsFile::open_source_with(counted.clone(), options, windows));
            for (i, (a, b)) in local.iter().zip(&remote).enumerate() {
                assert_eq!(a, b, "{}: windows {open}/{read}, read {i}", path.display());
            }
            assert_eq!(local.len(), remote.len());
            let size = std::fs::metadata(&path).unwrap().len();
            if size > open {
                assert!(counts.round_trips() > 1, "{}: {counts:?}", path.display());
            }
        }
    }
}

#[test]
fn a_local_source_is_read_whole_without_copies() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("data/vs/f64_r1_plain.vs");
    let source = Arc::new(LocalFile::open(&path).unwrap());
    let file = VsFile::open_source(source.clone(), ReaderOptions::default()).unwrap();
    assert_eq!(file.bytes().unwrap().as_ptr(), source.bytes().as_ptr());
}

/// A source that gives one byte less than asked for each range longer than one byte.
#[derive(Debug)]
struct ShortReads(LocalFile);

impl ByteSource for ShortReads {
    fn location(&self) -> &str {
        self.0.location()
    }

    fn size(&self) -> u64 {
        self.0.size()
    }

    fn read_ranges(&self, ranges: &[std::ops::Range<u64>]) -> Result<Vec<arrow_buffer::Buffer>> {
        let buffers = self.0.read_ranges(ranges)?;
        Ok(buffers
            .into_iter()
            .map(|b| b.slice_with_length(0, b.len() - usize::from(b.len() > 1)))
            .collect())
    }
}

#[test]
fn a_source_that_gives_fewer_bytes_than_asked_is_an_error_not_a_hang() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("data/vs/f32_r1_d200_snappy.vs");
    let windows = Windows { open: 8, read: 16 };
    let source = Arc::new(ShortReads(LocalFile::open(&path).unwrap()));
    let e = VsFile::open_source_with(source, ReaderOptions::default(), windows)
        .and_then(|file| {
            let reader = ReaderBuilder::new().build_from_file(Arc::new(file))?;
            reader
                .collect::<std::result::Result<Vec<_>, _>>()
                .map_err(Error::from_arrow_owned)
        })
        .unwrap_err();
    assert!(e.to_string().contains("gave"), "{e}");
    assert_eq!(e.file(), Some(path.as_path()));
}
