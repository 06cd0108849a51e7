//! CSV and NDJSON read front to back with bounded memory, from a file or a stream alike.
//!
//! arrow's text readers keep a record's bytes until its end: an input whose record never ends
//! (`/dev/zero`, a damaged quote, a runaway producer) would grow them until the process is
//! killed. `RecordCap` sits under them, finds where records end as they do, and fails once
//! one record is longer than [`MAX_RECORD_BYTES`]. Schema inference reads the input's first
//! records; `TextInput` keeps those (whole records, at most about [`INFERENCE_BYTES`]) so
//! that they are read again after it, since a stream cannot be rewound.

use std::io::{self, Cursor, Read};
use std::path::Path;

use crate::error::{Error, ErrorClass, Result};

/// The most bytes one CSV record or NDJSON line may hold (256 MiB).
pub const MAX_RECORD_BYTES: u64 = 256 << 20;

/// Schema inference looks at the first records up to this many bytes (64 MiB), and at least
/// one record, when the records before the inference limit hold more.
pub const INFERENCE_BYTES: u64 = 64 << 20;

/// How records are delimited.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Framing {
    /// CSV: a record ends at a line break (`\n`, `\r\n` or `\r`, as the `csv` crate reads
    /// them) outside double quotes (`""` inside quotes is a quote).
    Csv,
    /// NDJSON: a record ends at a line break (JSON text holds none inside a value).
    Ndjson,
}

impl Framing {
    fn what(self) -> &'static str {
        match self {
            Framing::Csv => "a CSV record",
            Framing::Ndjson => "an NDJSON line",
        }
    }
}

/// Where a CSV reader is inside a record, as the `csv` crate's reader with its default quoting
/// sees it: a quote opens a quoted field only at the start of a field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum CsvState {
    FieldStart,
    Unquoted,
    Quoted,
    /// A quote inside a quoted field: the field's end, or the first half of `""`.
    QuoteInQuoted,
    /// A carriage return ended a record; a line feed right after it ends none.
    AfterCr,
}

/// A reader that follows record boundaries and fails on a record longer than the cap.
pub(crate) struct RecordCap<R> {
    inner: R,
    framing: Framing,
    state: CsvState,
    cap: u64,
    /// Bytes read so far.
    offset: u64,
    /// Where the record being read began.
    record_start: u64,
    /// Records ended so far, and where the last one ended.
    records: u64,
    last_end: u64,
}

impl<R: Read> RecordCap<R> {
    pub fn new(inner: R, framing: Framing) -> Self {
        RecordCap::with_cap(inner, framing, MAX_RECORD_BYTES)
    }

    fn with_cap(inner: R, framing: Framing, cap: u64) -> Self {
        RecordCap {
            inner,
            framing,
            state: CsvState::FieldStart,
            cap,
            offset: 0,
            record_start: 0,
            records: 0,
            last_end: 0,
        }
    }

    /// Follows `bytes` (read at `self.offset`), failing if the record open at their end is
    /// longer than the cap.
    fn follow(&mut self, bytes: &[u8]) -> Result<()> {
        for (i, &byte) in bytes.iter().enumerate() {
            let ends = match self.framing {
                Framing::Ndjson => byte == b'\n',
                Framing::Csv => {
                    let (state, ends) = csv_step(self.state, byte);
                    self.state = state;
                    ends
                }
            };
            if ends {
                let end = self.offset + i as u64 + 1;
                if end - self.record_start > self.cap {
                    return Err(self.too_long());
                }
                self.records += 1;
                self.last_end = end;
                self.record_start = end;
            }
        }
        self.offset += bytes.len() as u64;
        if self.offset - self.record_start > self.cap {
            return Err(self.too_long());
        }
        Ok(())
    }

    /// The error for the record open at `record_start`.
    fn too_long(&self) -> Error {
        Error::new(
            ErrorClass::BadValue,
            format!(
                "{} is longer than {} MiB, the most one may hold (a cap that bounds memory \
                     on an input without line breaks); check that the input is {}",
                self.framing.what(),
                self.cap >> 20,
                match self.framing {
                    Framing::Csv => "CSV and that its quotes are balanced",
                    Framing::Ndjson => "NDJSON, one JSON value per line",
                }
            ),
        )
        .at_offset(self.record_start)
    }
}

/// One byte of CSV: the state after it, and whether it ended a record.
fn csv_step(state: CsvState, byte: u8) -> (CsvState, bool) {
    use CsvState::*;
    match (state, byte) {
        (Quoted, b'"') => (QuoteInQuoted, false),
        (Quoted, _) => (Quoted, false),
        (QuoteInQuoted, b'"') => (Quoted, false),
        (AfterCr, b'\n') => (FieldStart, false),
        (FieldStart | AfterCr, b'"') => (Quoted, false),
        (_, b'\r') => (AfterCr, true),
        (_, b'\n') => (FieldStart, true),
        (_, b',') => (FieldStart, false),
        _ => (Unquoted, false),
    }
}

impl<R: Read> Read for RecordCap<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        // The error travels inside the io::Error; `Error::from` takes it back out.
        self.follow(&buf[..n]).map_err(io::Error::other)?;
        Ok(n)
    }
}

/// A CSV or NDJSON input under a [`RecordCap`], its first whole records kept for schema
/// inference ([`TextInput::sample`]) and read again first ([`TextInput::into_reader`]).
pub(crate) struct TextInput {
    kept: Vec<u8>,
    /// How many of the kept bytes are whole records (all of them at the end of the input).
    whole: usize,
    rest: RecordCap<Box<dyn Read + Send>>,
}

impl TextInput {
    /// Reads `input` up to its first `records` records, or as many whole ones as fill
    /// [`INFERENCE_BYTES`] (at least one), or its end.
    pub fn start(
        input: Box<dyn Read + Send>,
        framing: Framing,
        records: u64,
        name: &Path,
    ) -> Result<TextInput> {
        TextInput::start_capped(RecordCap::new(input, framing), records, name)
    }

    fn start_capped(
        mut rest: RecordCap<Box<dyn Read + Send>>,
        records: u64,
        name: &Path,
    ) -> Result<TextInput> {
        let mut kept = Vec::new();
        let mut chunk = vec![0u8; 64 << 10];
        let mut ended = false;
        while rest.records < records && !(rest.records > 0 && rest.last_end >= INFERENCE_BYTES) {
            match rest.read(&mut chunk) {
                Ok(0) => {
                    ended = true;
                    break;
                }
                Ok(n) => kept.extend_from_slice(&chunk[..n]),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(Error::from(e).with_file(name)),
            }
        }
        let whole = if ended {
            kept.len()
        } else {
            rest.last_end as usize
        };
        Ok(TextInput { kept, whole, rest })
    }

    /// The whole records read so far: what inference looks at.
    pub fn sample(&self) -> Cursor<&[u8]> {
        Cursor::new(&self.kept[..self.whole])
    }

    /// The input from its first byte.
    pub fn into_reader(self) -> Box<dyn Read + Send> {
        Box::new(Cursor::new(self.kept).chain(self.rest))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ends(framing: Framing, text: &[u8]) -> (u64, u64) {
        let mut cap = RecordCap::new(text, framing);
        io::copy(&mut cap, &mut io::sink()).unwrap();
        (cap.records, cap.last_end)
    }

    #[test]
    fn csv_records_end_at_line_breaks_outside_quotes() {
        assert_eq!(ends(Framing::Csv, b"a,b\n1,2\n"), (2, 8));
        assert_eq!(ends(Framing::Csv, b"a,b\n\"x\ny\",2\n3,4"), (2, 12));
        assert_eq!(ends(Framing::Csv, b"a\n\"x\"\"\n\"\n"), (2, 9));
        // A quote inside an unquoted field is text, as the csv crate reads it.
        assert_eq!(ends(Framing::Csv, b"a\nx\"y\nz\n"), (3, 8));
        assert_eq!(ends(Framing::Csv, b"a\r\nb\r\nc\rd\n"), (4, 10));
        assert_eq!(ends(Framing::Csv, b"a\r\"x\ry\"\r\n"), (2, 8));
        assert_eq!(ends(Framing::Ndjson, b"{\"a\":\"\\\"\"}\n{}\n"), (2, 14));
    }

    #[test]
    fn a_record_longer_than_the_cap_is_an_error_at_its_start() {
        let text = b"a,b\n1,2\n3333333333,4\n5,6\n";
        let mut cap = RecordCap::with_cap(&text[..], Framing::Csv, 8);
        let error = io::copy(&mut cap, &mut io::sink()).unwrap_err();
        let error = Error::from(error);
        assert_eq!(error.class(), ErrorClass::BadValue);
        assert_eq!(error.offset(), Some(8));
        assert!(error.to_string().contains("a CSV record"), "{error}");
        // Under the cap, everything reads.
        let mut cap = RecordCap::with_cap(&text[..], Framing::Csv, 16);
        assert_eq!(io::copy(&mut cap, &mut io::sink()).unwrap(), 25);
    }

    #[test]
    fn the_kept_records_are_read_again_and_only_whole_ones_are_sampled() {
        let text = b"a\n1\n2\n3\n4\n".repeat(10_000);
        let input: Box<dyn Read + Send> = Box::new(Cursor::new(text.clone()));
        let started = TextInput::start(input, Framing::Csv, 3, Path::new("x")).unwrap();
        // Whole records only, however many the first read brought.
        let sample = *started.sample().get_ref();
        assert!(sample.len() >= 6 && sample.len() < text.len());
        assert!(text.starts_with(sample) && sample.ends_with(b"\n"));
        let mut all = Vec::new();
        started.into_reader().read_to_end(&mut all).unwrap();
        assert_eq!(all, text);
    }
}
