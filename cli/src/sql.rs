//! `arrowsmith sql QUERY` / `arrowsmith sql -f FILE`: SQL statements, `;`-separated, run by
//! DataFusion with every arrowsmith format registered (paths as tables, `CREATE EXTERNAL
//! TABLE … STORED AS JAY`, `COPY … TO 'out.ds'`). Every statement but the last runs for its
//! effect; the last one's result is printed (table, csv or json), or written to OUTPUT in any
//! format, streaming, all-or-nothing.

use std::path::PathBuf;
use std::sync::Arc;

use arrow::util::display::FormatOptions;
use arrow::util::pretty::{pretty_format_batches_with_options, pretty_format_batches_with_schema};
use arrow_array::RecordBatch;
use arrowsmith::source::{is_url, StorageOptions};
use arrowsmith::{Error, ErrorClass, Format, ReadOptions};
use arrowsmith_datafusion::{into_arrowsmith_error, ArrowsmithSink, SessionContextArrowsmithExt};
use clap::{Args, ValueEnum};
use datafusion::dataframe::DataFrame;
use datafusion::error::DataFusionError;
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::prelude::SessionContext;
use datafusion::sql::parser::DFParser;
use futures::StreamExt;

use super::{parse_format, print_err, print_out, CliResult, Failure};

pub(crate) const ABOUT: &str =
    "Run SQL over files of any format in place; print the last result or write it to OUTPUT";

pub(crate) const AFTER_HELP: &str = "Paths are tables: SELECT count(*) FROM 'trace.ds'. \
Formats are found as convert finds them; CREATE EXTERNAL TABLE t STORED AS JAY | DATASERIES | VS \
| BCOLZ | FILO LOCATION '…' OPTIONS ('format.type' '…') names one, with the format options of \
convert as 'format.*' keys. COPY (SELECT …) TO 'out.jay' writes any format. See docs/sql.md.

Examples:
  arrowsmith sql \"SELECT count(*) FROM 'trace.ds'\"
  arrowsmith sql \"SELECT host, sum(bytes) FROM 'trace.ds' GROUP BY host\" --format csv
  arrowsmith sql \"SELECT * FROM 'frame.jay' WHERE x > 0\" -o filtered.parquet
  arrowsmith sql -f report.sql
  arrowsmith sql \"SELECT count(*) FROM 's3://bucket/trace.ds'\" --storage-option aws_region=eu-west-1

URLs (s3://, gs://, az://, http(s)://) in quoted table paths, LOCATION and COPY … TO, and an \
OUTPUT URL, are read and written through object stores built from the environment and \
--storage-option.";

#[derive(Debug, Args)]
pub(crate) struct SqlArgs {
    /// The statements, separated by ';'
    #[arg(required_unless_present = "file", conflicts_with = "file")]
    query: Option<String>,
    /// Read the statements from FILE
    #[arg(short = 'f', long, value_name = "FILE")]
    pub(crate) file: Option<PathBuf>,
    /// Write the last statement's result to OUTPUT (it appears only when the query succeeds); `-`
    /// is standard output, as an Arrow IPC stream unless --to names csv or ndjson
    #[arg(short = 'o', long, value_name = "OUTPUT")]
    output: Option<PathBuf>,
    /// Replace an existing OUTPUT (only an output of the --to format; see convert --help)
    #[arg(long, requires = "output")]
    overwrite: bool,
    /// OUTPUT's format [default: from its extension]
    #[arg(long, value_name = "FMT", value_parser = parse_format, requires = "output")]
    to: Option<Format>,
    /// How the result is printed
    #[arg(long, value_enum, default_value_t = Printed::Table, conflicts_with = "output")]
    format: Printed,
    #[command(flatten)]
    storage: super::storage::StorageArgs,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Printed {
    /// A text table
    Table,
    /// CSV with a header row
    Csv,
    /// One JSON object per row, one per line
    Json,
}

pub(crate) fn run(args: SqlArgs) -> CliResult {
    let text = match (&args.query, &args.file) {
        (Some(query), _) => query.clone(),
        (None, Some(file)) => {
            std::fs::read_to_string(file).map_err(|e| Error::from(e).with_file(file))?
        }
        (None, None) => unreachable!("clap requires a query or a file"),
    };
    keep_freed_memory();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| {
            Error::new(
                ErrorClass::Io,
                format!("cannot start the query runtime: {e}"),
            )
        })?;
    super::interrupt::install();
    let outcome = runtime.block_on(run_statements(&text, &args));
    // A signal stops the query at the next batch; what the writer began is gone with it.
    if let Some(signal) = super::interrupt::received() {
        if let Some(output) = &args.output {
            return Err(Failure::Interrupted {
                signal,
                output: output.clone(),
            });
        }
    }
    outcome.map_err(|e| Failure::Error(with_script(e, &args)))
}

/// glibc's allocator thresholds, fixed for a query: a scan's batches are allocated on its
/// reader's thread and freed on the query's, and with glibc's defaults (a mapping of its own
/// for every block from 128 KiB, dynamic thresholds, the heap trimmed past twice that) each
/// decoded chunk or extent went back to the kernel and came back as fresh zeroed pages: a
/// third of a bcolz or Filo query's CPU was the kernel's, faulting pages in (docs/performance.md,
/// "SQL: 1 → 2 partitions"). The values are the top of glibc's own dynamic range (32 MiB on
/// 64-bit), set from the start, and a trim threshold twice that, glibc's own ratio.
fn keep_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets the allocator's parameters; no allocation is under way in
    // this call, and glibc serialises parameter changes.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 32 << 20);
        libc::mallopt(libc::M_TRIM_THRESHOLD, 64 << 20);
    }
}

/// Names the statements' file in errors that name no file of their own.
fn with_script(error: Error, args: &SqlArgs) -> Error {
    match &args.file {
        Some(file) => error.with_file(file),
        None => error,
    }
}

async fn run_statements(text: &str, args: &SqlArgs) -> arrowsmith::Result<()> {
    let ctx = SessionContext::new();
    ctx.register_arrowsmith().map_err(into_arrowsmith_error)?;
    let storage = storage_options(args)?;
    register_object_stores(&ctx, text, &storage)?;
    let statements = DFParser::parse_sql(text).map_err(into_arrowsmith_error)?;
    let count = statements.len();
    if count == 0 {
        return Err(Error::invalid_argument("no SQL statement to run"));
    }
    for (i, statement) in statements.into_iter().enumerate() {
        let state = ctx.state();
        let plan = state
            .statement_to_plan(statement)
            .await
            .map_err(into_arrowsmith_error)?;
        let frame = ctx
            .execute_logical_plan(plan)
            .await
            .map_err(into_arrowsmith_error)?;
        if i + 1 < count {
            frame.collect().await.map_err(into_arrowsmith_error)?;
        } else {
            finish(frame, args).await?;
        }
    }
    Ok(())
}

/// The last statement: written to OUTPUT, or printed.
async fn finish(frame: DataFrame, args: &SqlArgs) -> arrowsmith::Result<()> {
    if let Some(output) = &args.output {
        let format = match args.to {
            Some(format) => format,
            // Standard output has no extension: the IPC stream is what pipes carry, as for
            // `convert … -`.
            None if arrowsmith::is_stdin(output) => Format::ArrowStream,
            None => Format::for_output(output)?,
        };
        let schema = Arc::clone(frame.schema().inner());
        let stream = frame
            .execute_stream()
            .await
            .map_err(into_arrowsmith_error)?;
        // A signal fails the stream at the next batch: the writer is dropped unfinished and its
        // temporary output removed.
        let checked = stream.map(|batch| match super::interrupt::received() {
            Some(signal) => Err(DataFusionError::Execution(format!(
                "interrupted by signal {signal}"
            ))),
            None => batch,
        });
        let stream = Box::pin(RecordBatchStreamAdapter::new(Arc::clone(&schema), checked));
        let mut options = arrowsmith_datafusion::ArrowsmithOptions::default();
        if args.overwrite {
            options.write.mode = arrowsmith::WriteMode::Overwrite;
        }
        options.write.storage = storage_options(args)?;
        let sink = ArrowsmithSink::new(format, Arc::new(options), output, schema);
        let summary = sink
            .write_stream(stream)
            .await
            .map_err(|e| into_arrowsmith_error(e).with_file(output))?;
        for warning in &summary.warnings {
            print_err(&format!("warning: {warning}"));
        }
        return Ok(());
    }
    let schema = Arc::clone(frame.schema().inner());
    if schema.fields().is_empty() {
        return Ok(()); // A statement without a result (CREATE …).
    }
    let mut stream = frame
        .execute_stream()
        .await
        .map_err(into_arrowsmith_error)?;
    match args.format {
        Printed::Table => {
            let mut batches: Vec<RecordBatch> = Vec::new();
            while let Some(batch) = stream.next().await {
                batches.push(batch.map_err(into_arrowsmith_error)?);
            }
            let options = FormatOptions::default()
                .with_null("null")
                .with_display_error(true);
            let table = if batches.iter().all(|b| b.num_rows() == 0) {
                pretty_format_batches_with_schema(schema, &[]).map(|t| t.to_string())
            } else {
                pretty_format_batches_with_options(&batches, &options).map(|t| t.to_string())
            }?;
            printed(print_out(&format!("{table}\n")))
        }
        Printed::Csv | Printed::Json => {
            let mut header = true;
            while let Some(batch) = stream.next().await {
                let batch = batch.map_err(into_arrowsmith_error)?;
                let text = match args.format {
                    Printed::Csv => csv_text(&batch, header)?,
                    _ => json_text(&batch)?,
                };
                header = false;
                printed(print_out(&text))?;
            }
            if header && args.format == Printed::Csv {
                // No rows: still the header, so the columns are known.
                printed(print_out(&csv_text(&RecordBatch::new_empty(schema), true)?))?;
            }
            Ok(())
        }
    }
}

/// The storage settings of `--storage-option`, through the core's table.
fn storage_options(args: &SqlArgs) -> arrowsmith::Result<StorageOptions> {
    let mut settings = super::settings::Settings::default();
    args.storage.settings(&mut settings)?;
    let mut read = ReadOptions::default();
    settings.read(&mut read)?;
    Ok(read.storage)
}

/// Registers, in the session's runtime, the object store of every URL the statements quote
/// (table paths, `LOCATION`, `COPY … TO`), built with `storage` over the environment: the very
/// stores the arrowsmith readers and writers use, so DataFusion lists and reads through them.
fn register_object_stores(
    ctx: &SessionContext,
    text: &str,
    storage: &StorageOptions,
) -> arrowsmith::Result<()> {
    for quoted in quoted_urls(text) {
        let (store, _) = arrowsmith_store::object_store_for(&quoted, storage)?;
        arrowsmith_datafusion::register_object_store(ctx, &quoted, store, storage)
            .map_err(|e| Error::invalid_argument(e.to_string()).with_file(&quoted))?;
    }
    Ok(())
}

/// The text of every single-quoted SQL string in `text` that is a remote URL.
fn quoted_urls(text: &str) -> Vec<String> {
    let mut urls = Vec::new();
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\'' {
            continue;
        }
        let mut literal = String::new();
        while let Some(c) = chars.next() {
            match c {
                '\'' if chars.peek() == Some(&'\'') => {
                    chars.next();
                    literal.push('\'');
                }
                '\'' => break,
                c => literal.push(c),
            }
        }
        if is_url(&literal) && !urls.contains(&literal) {
            urls.push(literal);
        }
    }
    urls
}

fn csv_text(batch: &RecordBatch, header: bool) -> arrowsmith::Result<String> {
    let mut bytes = Vec::new();
    {
        let mut writer = arrow::csv::WriterBuilder::new()
            .with_header(header)
            .build(&mut bytes);
        writer.write(batch)?;
    }
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

fn json_text(batch: &RecordBatch) -> arrowsmith::Result<String> {
    let mut bytes = Vec::new();
    {
        let mut writer = arrow::json::LineDelimitedWriter::new(&mut bytes);
        writer.write(batch)?;
        writer.finish()?;
    }
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

/// Standard output closed by its reader ends the command quietly, as elsewhere.
fn printed(result: CliResult) -> arrowsmith::Result<()> {
    match result {
        Ok(()) | Err(Failure::BrokenPipe) => Ok(()),
        Err(Failure::Error(e)) => Err(e),
        Err(Failure::Interrupted { .. }) => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::quoted_urls;

    /// Minor page faults of the calling thread so far.
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    fn thread_page_faults() -> i64 {
        // SAFETY: getrusage writes the struct it is given, zeroed here.
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        assert_eq!(
            unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut usage) },
            0
        );
        usage.ru_minflt
    }

    /// A scan's pattern: buffers of a decoded chunk filled on one thread, dropped on another.
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    fn chunk_handed_on() {
        let buffers: Vec<Vec<u8>> = (0..8).map(|i| vec![i as u8 + 1; 1 << 20]).collect();
        std::thread::spawn(move || drop(buffers)).join().unwrap();
    }

    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    #[test]
    fn freed_batches_are_reused_not_faulted_in_again() {
        super::keep_freed_memory();
        chunk_handed_on();
        let before = thread_page_faults();
        for _ in 0..20 {
            chunk_handed_on();
        }
        let faults = thread_page_faults() - before;
        // With glibc's defaults the trimmed heap top comes back as fresh pages, about a
        // hundred each time (2,049 over these 20 chunks); kept by the allocator, none do.
        assert!(faults < 256, "{faults} page faults for reused memory");
    }

    #[test]
    fn urls_are_found_in_quoted_strings_only() {
        let text = "CREATE EXTERNAL TABLE t STORED AS JAY LOCATION 's3://b/t.jay'; \
                    SELECT 'it''s', x FROM 'local.ds' JOIN 'gs://c/p/' ON 1=1 -- s3://not/quoted\n\
                    ; COPY t TO 's3://b/t.jay'";
        assert_eq!(quoted_urls(text), ["s3://b/t.jay", "gs://c/p/"]);
    }
}
