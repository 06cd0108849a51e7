//! `arrowsmith convert INPUT OUTPUT`: batches stream from `arrowsmith::open` to
//! `arrowsmith::create`; the output appears only when everything was written.

use std::path::Path;
use std::time::Instant;

use arrow_array::{RecordBatch, RecordBatchReader};
use arrow_schema::{ArrowError, SchemaRef};
use arrowsmith::source::is_url;
use arrowsmith::{
    Error, ErrorClass, Format, Input, ReadOptions, SalvageReport, Skipped, WriteMode, WriteOptions,
};

use super::progress::Progress;
use super::settings::{spell_text, Settings};
use super::{print_err, CliResult, ConvertArgs};

pub(crate) const AFTER_HELP: &str = "Examples:
  arrowsmith convert frame.jay frame.parquet
  arrowsmith convert frame.jay frame.arrow --compression zstd --columns id,name
  arrowsmith convert data.csv data.jay --limit 1000000
  arrowsmith convert in.parquet out.parquet --compression gzip:9 --row-group-size 100000
  arrowsmith convert trace.ds trace.parquet --type Trace::NFS::common --utf8
  arrowsmith convert trace.parquet trace.ds --compress lz4 --extent-size 4194304
  arrowsmith convert table.parquet table.filo --filo-chunk-size 100000
  arrowsmith convert column.bin column.arrow --from filo-vector --filo-type Long
  arrowsmith convert damaged.ds rescued.parquet --salvage

  arrowsmith convert table.bcolz table.parquet
  arrowsmith convert frame.arrow frame.bcolz --compression zstd:5 --bcolz-shuffle 2

  arrowsmith convert s3://bucket/archive.jay archive.parquet --storage-option aws_region=eu-west-1
  arrowsmith convert trace.ds s3://bucket/trace.parquet";

pub(crate) fn run(args: ConvertArgs) -> CliResult {
    let started = Instant::now();
    if args.append {
        arrowsmith::source::refuse_url(&args.output, "--append")?;
    }
    let (from, stream) = super::open_input(&args.input, args.from)?;
    let (read, mut write) = options(&args, from)?;
    refuse_same_file(&args.input, &args.output)?;
    let report = read.scan.report.clone();

    super::interrupt::install();
    // A file is opened once: its row count (the progress bar's total, bcolz's expected
    // length) and its batches come from the same opened input.
    let (reader, input) = match stream {
        Some(stream) => (arrowsmith::open_stream(stream, &read)?, None),
        None => {
            let input = Input::open(&args.input, &read)?;
            if from.is_none() {
                // A URL, recognised as it was opened: its settings checked as a local input's.
                options(&args, Some(input.format()))?;
            }
            let reader = match args.fragment {
                Some(k) => fragment_reader(&args, k, &input, &read)?,
                None => input.reader(&read.scan)?,
            };
            (reader, Some(input))
        }
    };
    let known_rows = || match &input {
        Some(input) if args.fragment.is_none() => input.rows(),
        _ => None,
    };
    if write.format == Some(Format::Bcolz) {
        // bcolz chooses chunklen from the expected length: the input's row count when known.
        if let Some(rows) = known_rows() {
            let rows = args.limit.map_or(rows, |l| rows.min(l as u64));
            write.bcolz = write.bcolz.with_expected_len(rows.max(1));
        }
    }
    let columns = reader.schema().fields().len();
    let mut progress = Progress::new(known_rows, args.limit);
    if args.quiet {
        progress.silence();
    }
    // Decoding the next batches overlaps with writing this one.
    let reader = arrowsmith::read_ahead(reader, arrowsmith::DEFAULT_READ_AHEAD)
        .map_err(|e| Error::from(e).with_file(&args.input))?;
    let mut skipped = Vec::new();
    let watched = Watched {
        inner: Box::new(reader),
        args: &args,
        progress: &mut progress,
        report: report.as_ref(),
        skipped: &mut skipped,
        rows: 0,
    };
    let summary = arrowsmith::write_all(watched, &args.output, &write)?;
    progress.finish();
    for warning in &summary.warnings {
        print_err(&format!("warning: {}", spell_text(warning)));
    }
    warn_salvaged(&skipped, summary.rows);
    report_written(&args, &write, summary.rows, columns, started)
}

/// The read and write options the flags ask for, checked against the input format `from` (when
/// known before opening: not for a URL) and the output's format (named, that of an OUTPUT
/// appended to, or from its extension).
fn options(args: &ConvertArgs, from: Option<Format>) -> CliResult<(ReadOptions, WriteOptions)> {
    let mut read = ReadOptions {
        format: from,
        ..Default::default()
    };
    let mut write = WriteOptions {
        format: args.to,
        ..Default::default()
    };
    if args.append {
        write.mode = WriteMode::Append;
    }
    write.format = Some(write.output_format(&args.output)?);
    settings(args)?.conversion(&mut read, &mut write)?;
    let to = write.format.unwrap_or(Format::ArrowStream);
    arrowsmith::check_write(&write, to)?;
    Ok((read, write))
}

/// The settings the flags of `convert` give, as the core's keys.
pub(crate) fn settings(args: &ConvertArgs) -> arrowsmith::Result<Settings> {
    let mut s = Settings::default();
    s.value("columns", args.columns.as_ref().map(|c| c.join(",")))
        .value("limit", args.limit)
        .value("batch_size", Some(args.batch_size))
        .flag("salvage", args.salvage)
        .value("compression", args.compression.as_ref())
        .flag("no_sync", args.no_sync)
        .value("row_group_size", args.row_group_size)
        .flag("sentinel_collisions_as_na", args.sentinel_collisions_as_na)
        .value("filo_type", args.filo_type.as_ref())
        .flag("filo_dictionary", args.filo_dictionary)
        .value("filo_chunk_size", args.filo_chunk_size)
        .value("filo_encoding", args.filo_encoding.as_ref())
        .flag("lenient_eof", args.lenient_eof)
        .value("varint", args.varint.as_ref())
        .value("app_data", args.app_data.as_ref())
        .value("max_dataless_rows", args.max_dataless_rows)
        .value("nat_as_null", args.nat_as_null.as_ref())
        .value("carray_name", args.carray_name.as_ref())
        .value("read_ahead", args.read_ahead)
        .flag("bcolz_nulls_as_nan", args.bcolz_nulls_as_nan)
        .value("bcolz_chunklen", args.bcolz_chunklen)
        .value("bcolz_shuffle", args.bcolz_shuffle)
        .flag("bcolz_carray", args.bcolz_carray)
        .flag("bcolz_no_sync", args.bcolz_no_sync)
        .flag("overwrite", args.overwrite);
    args.ds_read.settings(&mut s);
    args.ds_write.settings(&mut s);
    args.storage.settings(&mut s)?;
    Ok(s)
}

/// Fragment `k` of the input's listing at `--target-rows`, opened.
fn fragment_reader(
    args: &ConvertArgs,
    k: usize,
    input: &Input,
    read: &ReadOptions,
) -> arrowsmith::Result<Box<dyn RecordBatchReader + Send>> {
    let target = args.target_rows.unwrap_or(arrowsmith::DEFAULT_TARGET_ROWS);
    let fragments = input.fragments(target)?;
    let fragment = fragments.get(k).ok_or_else(|| {
        Error::invalid_argument(format!(
            "there is no fragment {k}: the input has {} at --target-rows {target} (0 to {})",
            fragments.len(),
            fragments.len().saturating_sub(1)
        ))
        .with_file(&args.input)
    })?;
    input.fragment_reader(fragment, &read.scan)
}

/// The batches on their way to the writer: counted for the progress bar, each followed by a
/// look for a signal, and at the end refused when salvage skipped everything (so the writer
/// is dropped unfinished, leaving no output).
struct Watched<'a, F: FnOnce() -> Option<u64>> {
    inner: Box<dyn RecordBatchReader + Send + 'a>,
    args: &'a ConvertArgs,
    progress: &'a mut Progress<F>,
    report: Option<&'a SalvageReport>,
    /// The parts salvage skipped, each named in a `warning:` line at the end of the input.
    skipped: &'a mut Vec<Skipped>,
    rows: u64,
}

impl<F: FnOnce() -> Option<u64>> Watched<'_, F> {
    /// A stop request, named by the output, which is left untouched.
    fn interrupted(&self) -> Result<(), ArrowError> {
        match super::interrupt::received() {
            Some(_) => {
                let stop = Error::from(std::io::Error::from(std::io::ErrorKind::Interrupted))
                    .with_file(&self.args.output);
                Err(ArrowError::ExternalError(Box::new(stop)))
            }
            None => Ok(()),
        }
    }

    /// At the end: the parts skipped, named; an error when nothing could be salvaged from an
    /// input whose every part read was damaged.
    fn nothing_salvaged(&mut self) -> Option<Error> {
        *self.skipped = self.report?.take();
        for part in self.skipped.iter() {
            print_err(&format!("warning: skipped {part}"));
        }
        let skipped = self.skipped.len();
        (skipped > 0 && self.rows == 0).then(|| {
            Error::new(
                ErrorClass::BadValue,
                format!(
                    "nothing could be salvaged: every part read was damaged ({skipped} skipped)"
                ),
            )
            .with_file(&self.args.input)
        })
    }
}

impl<F: FnOnce() -> Option<u64>> Iterator for Watched<'_, F> {
    type Item = Result<RecordBatch, ArrowError>;

    fn next(&mut self) -> Option<Self::Item> {
        if let Err(e) = self.interrupted() {
            return Some(Err(e));
        }
        match self.inner.next() {
            Some(Ok(batch)) => {
                self.rows += batch.num_rows() as u64;
                self.progress.add(batch.num_rows());
                Some(Ok(batch))
            }
            Some(Err(e)) => Some(Err(ArrowError::ExternalError(Box::new(
                Error::from_arrow_owned(e).with_file(&self.args.input),
            )))),
            None => self
                .nothing_salvaged()
                .map(|e| Err(ArrowError::ExternalError(Box::new(e)))),
        }
    }
}

impl<F: FnOnce() -> Option<u64>> RecordBatchReader for Watched<'_, F> {
    fn schema(&self) -> SchemaRef {
        self.inner.schema()
    }
}

/// The closing `warning:` line of a salvaging read: what it skipped in all.
fn warn_salvaged(skipped: &[Skipped], rows: u64) {
    if skipped.is_empty() {
        return;
    }
    let lost: u64 = skipped.iter().filter_map(|s| s.rows).sum();
    let unknown = skipped
        .iter()
        .any(|s| s.rows.is_none() && s.part != "column");
    print_err(&format!(
        "warning: salvaged {rows} rows; skipped {} damaged {} ({lost} rows{})",
        skipped.len(),
        if skipped.len() == 1 { "part" } else { "parts" },
        if unknown {
            " and more whose count is unknown"
        } else {
            ""
        }
    ));
}

/// The closing line on stderr, unless `--quiet` or the output is standard output, whose
/// reader (a pipeline) wants the data and nothing else.
fn report_written(
    args: &ConvertArgs,
    write: &WriteOptions,
    rows: u64,
    columns: usize,
    started: Instant,
) -> CliResult {
    if !args.quiet && !arrowsmith::is_stdin(&args.output) {
        let written = super::summary::Written {
            output: &args.output,
            storage: &write.storage,
            rows,
            columns,
            appended: args.append,
            elapsed: started.elapsed(),
        };
        print_err(&written.line());
    }
    Ok(())
}

/// Writing over the input while reading it would lose it (a local file), or replace the object
/// being read (a URL, as given).
fn refuse_same_file(input: &Path, output: &Path) -> arrowsmith::Result<()> {
    let same_url = is_url(input) && input == output;
    if same_url {
        return Err(Error::invalid_argument(
            "INPUT and OUTPUT are the same URL; write to another object",
        )
        .with_file(output));
    }
    if let (Ok(a), Ok(b)) = (input.canonicalize(), output.canonicalize()) {
        if a == b {
            return Err(Error::invalid_argument(
                "INPUT and OUTPUT are the same file; write to another file",
            )
            .with_file(output));
        }
    }
    Ok(())
}
