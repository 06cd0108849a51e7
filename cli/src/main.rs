//! The `arrowsmith` command line, a thin layer over the `arrowsmith` library: argument parsing, the subcommands, and how failures become exit codes.
//!
//! Exit codes: 0 success; 1 bad data or I/O (one `error:` line on stderr naming the file);
//! 2 usage (clap's errors and [`ErrorClass::InvalidArgument`](arrowsmith::ErrorClass)).
//! Nothing here unwraps; a panic inside a library is still caught at the top and reported as
//! an internal error (exit 1), after the unwinding has removed any half-written output.

mod convert;
mod dataseries;
mod formats;
mod fragments;
mod head;
mod inspect;
mod interrupt;
mod progress;
mod settings;
// Without the `sql` feature, a stand-in whose `sql` says how to get it.
#[cfg_attr(not(feature = "sql"), path = "sql_missing.rs")]
mod sql;
mod storage;
mod summary;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Mutex;

use arrowsmith::options::SettingKind;
use arrowsmith::source::urls_shown;
use arrowsmith::{Error, ErrorClass, Format, DEFAULT_BATCH_SIZE};
use clap::{Args, Parser, Subcommand};

const ABOUT: &str = "Convert legacy binary data formats (Jay, DataSeries, Filo, VS, bcolz) to and \
from Apache Arrow's formats (Parquet, Arrow IPC, CSV, NDJSON)";

const AFTER_HELP: &str =
    "Formats are named jay, dataseries, filo, filo-vector, vs, bcolz, parquet, \
arrow (IPC file: .arrow/.feather/.ipc), arrows (IPC stream), csv and ndjson; `arrowsmith formats` \
lists them. Without --from, the input format is recognised by its content, then its extension; \
without --to, the output format by its extension.

INPUT and OUTPUT may be URLs (s3://, gs://, az://, abfss://, http(s)://): a bcolz or Filo dataset \
is its key prefix, without a trailing slash. The store's settings come from the environment \
(AWS_*, GOOGLE_*, AZURE_*) and --storage-option KEY=VALUE; see docs/object-storage.md.

Exit status: 0 success, 1 bad data or I/O error, 2 usage error.";

#[derive(Debug, Parser)]
#[command(
    name = "arrowsmith",
    version,
    about = ABOUT,
    after_help = AFTER_HELP,
    propagate_version = true,
    arg_required_else_help = true
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Convert INPUT to OUTPUT, streaming batches from the reader to the writer
    #[command(after_help = convert::AFTER_HELP)]
    Convert(Box<ConvertArgs>),
    /// Show a file's format, schema, row count and the format's own structure
    Inspect(InspectArgs),
    /// Print the first rows of a file as a table
    Head(HeadArgs),
    /// List the pieces a file splits into for parallel reading, one JSON object per line
    #[command(after_help = fragments::AFTER_HELP)]
    Fragments(FragmentsArgs),
    /// List the formats, their extensions and what this build reads and writes
    Formats,
    #[command(about = sql::ABOUT, after_help = sql::AFTER_HELP)]
    Sql(sql::SqlArgs),
}

#[derive(Debug, Args)]
struct ConvertArgs {
    /// The file (or directory, or URL) to read
    input: PathBuf,
    /// The file (a directory for bcolz and filo; or a URL) to write; it appears only when the conversion
    /// succeeds, and an existing one is replaced only with --overwrite. `-` is standard output,
    /// for the formats that stream (arrows, the default there; csv; ndjson)
    output: PathBuf,
    /// Input format [default: from the content, then the extension]
    #[arg(long, value_name = "FMT", value_parser = parse_format)]
    from: Option<Format>,
    /// Output format [default: from the extension]
    #[arg(long, value_name = "FMT", value_parser = parse_format)]
    to: Option<Format>,
    /// Columns to keep, by name, in this order (comma-separated)
    #[arg(long, value_name = "a,b,...", value_delimiter = ',')]
    columns: Option<Vec<String>>,
    /// Convert at most N rows
    #[arg(long, value_name = "N")]
    limit: Option<usize>,
    /// Rows per batch passed from the reader to the writer
    #[arg(long, value_name = "N", default_value_t = DEFAULT_BATCH_SIZE, value_parser = parse_positive)]
    batch_size: usize,
    /// Convert only fragment K of the listing `arrowsmith fragments INPUT` prints (with the
    /// same --target-rows and format options)
    #[arg(long, value_name = "K")]
    fragment: Option<usize>,
    /// With --fragment: about N rows per fragment [default: 1048576]
    #[arg(long, value_name = "N", value_parser = parse_positive, requires = "fragment")]
    target_rows: Option<usize>,
    /// Read what is still whole of a damaged jay, dataseries, filo, vs or bcolz input: skip
    /// each damaged part (extent, chunk, point block, column), name it in a `warning:` line,
    /// and convert the rest (exit 1 only when nothing could be read)
    #[arg(long, conflicts_with = "append")]
    salvage: bool,
    /// Output compression: parquet none|snappy|gzip|lz4|zstd|brotli (default zstd), arrow and
    /// arrows none|lz4|zstd (default none); a level as zstd:9; dataseries
    /// none|lzo|zlib|bz2|lzf|snappy|lz4|lz4hc, several comma-separated, or best (default zlib:6)
    #[arg(long, visible_alias = "compress", value_name = "C")]
    compression: Option<String>,
    /// Do not flush the output to disk (fsync) before renaming it into place: faster, and what
    /// most tools do, but a power loss soon after may lose it (--append always flushes). No
    /// meaning for a URL OUTPUT, which appears only once the store has it
    #[arg(long, conflicts_with = "append")]
    no_sync: bool,
    /// Print no progress bar and no closing line saying what was written (warnings and errors
    /// still print); nothing is printed either when OUTPUT is `-`
    #[arg(short, long)]
    quiet: bool,
    /// Parquet output: at most N rows per row group
    #[arg(long, value_name = "N", value_parser = parse_positive, help_heading = "Format options")]
    row_group_size: Option<usize>,
    /// Jay output: write a valid value that equals Jay's missing-value sentinel of its type as
    /// NA instead of failing
    #[arg(long, help_heading = "Format options")]
    sentinel_collisions_as_na: bool,
    /// filo-vector input or output: the vector's element type (Int, Long, Double, Float,
    /// Boolean, String, Timestamp, DateTime, Binary); Filo bytes do not record it
    #[arg(long, value_name = "T", value_parser = settings::value_of(SettingKind::Read, "filo_type"), help_heading = "Format options")]
    filo_type: Option<String>,
    /// filo input: read String columns as Arrow dictionaries (Dictionary(Int32, Utf8)), keeping
    /// filo's dictionary codes instead of expanding every string
    #[arg(long, help_heading = "Format options")]
    filo_dictionary: bool,
    /// filo output: rows per chunk [default: 65536]
    #[arg(long, value_name = "N", value_parser = parse_positive, help_heading = "Format options")]
    filo_chunk_size: Option<usize>,
    /// filo and filo-vector output: encoding hint auto|simple|dict|diff|fixed [default: auto,
    /// filo's own choice]
    #[arg(long, value_name = "E", value_parser = settings::value_of(SettingKind::Write, "filo_encoding"), help_heading = "Format options")]
    filo_encoding: Option<String>,
    /// VS input: accept a file that ends at a block boundary without its '$' terminal (with
    /// --append: give such an OUTPUT its terminal first)
    #[arg(long, help_heading = "Format options")]
    lenient_eof: bool,
    /// VS input: varint byte order, leb128 (the format's) or msb-first (upstream's prototype)
    #[arg(long, value_name = "ORDER", value_parser = settings::value_of(SettingKind::Read, "varint"), help_heading = "Format options")]
    varint: Option<String>,
    /// VS input: app_data as json text (default) or the exact msgpack bytes (Binary)
    #[arg(long, value_name = "MODE", value_parser = settings::value_of(SettingKind::Read, "app_data"), help_heading = "Format options")]
    app_data: Option<String>,
    /// jay input: read at most N rows that no data stands behind (a frame of void columns
    /// only) [default: 4294967296]
    #[arg(long, value_name = "N", help_heading = "Format options")]
    max_dataless_rows: Option<u64>,
    /// bcolz input: whether NaT in datetime64/timedelta64 columns reads as null (true) or as
    /// the raw value -9223372036854775808 (false) [default: true]
    #[arg(long, value_name = "BOOL", value_parser = settings::value_of(SettingKind::Read, "nat_as_null"), help_heading = "Format options")]
    nat_as_null: Option<String>,
    /// bcolz input: the column name of a carray [default: the directory's name]
    #[arg(long, value_name = "NAME", help_heading = "Format options")]
    carray_name: Option<String>,
    /// bcolz input: batches decoded ahead in the background while one is written (0: none)
    /// [default: 2]
    #[arg(long, value_name = "N", help_heading = "Format options")]
    read_ahead: Option<usize>,
    /// bcolz output: write nulls of float columns as NaN and of temporal columns as NaT
    /// instead of failing
    #[arg(long, help_heading = "Format options")]
    bcolz_nulls_as_nan: bool,
    /// bcolz output: rows per chunk [default: bcolz's choice from the row count]
    #[arg(long, value_name = "N", value_parser = parse_positive, help_heading = "Format options")]
    bcolz_chunklen: Option<usize>,
    /// bcolz output: shuffle before compressing, 0 none, 1 byte, 2 bit [default: 1]
    #[arg(long, value_name = "0|1|2", value_parser = clap::value_parser!(u8).range(0..=2), help_heading = "Format options")]
    bcolz_shuffle: Option<u8>,
    /// bcolz output: write a carray (one column) instead of a ctable
    #[arg(long, help_heading = "Format options")]
    bcolz_carray: bool,
    /// bcolz output: do not flush the new dataset to disk (fsync) before renaming it into
    /// place; faster, and what bcolz itself does, but a power loss soon after may leave it
    /// incomplete (--append always flushes before it commits)
    #[arg(long, help_heading = "Format options", conflicts_with = "append")]
    bcolz_no_sync: bool,
    /// Replace an existing OUTPUT, which must be an output of the --to format: a file for the
    /// single-file formats, a dataset of the format for bcolz and filo (anything else is
    /// refused, untouched). Without it an existing OUTPUT is an error. A device or FIFO
    /// (/dev/null, a named pipe) is written into by arrows, csv and ndjson, refused by the rest
    #[arg(long)]
    overwrite: bool,
    /// vs and bcolz output: append the rows to the existing OUTPUT instead of replacing it
    /// (vs: crash-safe, under its lock; bcolz: carray/ctable, columns matched by name)
    #[arg(long, help_heading = "Format options", conflicts_with = "overwrite")]
    append: bool,
    #[command(flatten)]
    ds_read: DsReadArgs,
    #[command(flatten)]
    ds_write: DsWriteArgs,
    #[command(flatten)]
    storage: storage::StorageArgs,
}

/// DataSeries input options (convert, inspect, head).
#[derive(Debug, Args, Clone, Default)]
pub(crate) struct DsReadArgs {
    /// DataSeries input: the extent type to read (needed when the file declares several)
    #[arg(long = "type", value_name = "NAME", help_heading = "Format options")]
    pub(crate) ds_type: Option<String>,
    /// DataSeries input: read variable32 fields as Utf8, validated: all of them, or as
    /// --utf8=a,b the named ones [default: Binary, except fields marked arrow_type="utf8"]
    #[arg(long, value_name = "a,b,...", num_args = 0..=1, require_equals = true,
          default_missing_value = "", value_delimiter = ',', help_heading = "Format options")]
    pub(crate) utf8: Option<Vec<String>>,
    /// DataSeries input: skip the adler32, hash and variable32 checks
    #[arg(long, help_heading = "Format options")]
    pub(crate) no_checks: bool,
}

/// DataSeries output options (convert).
#[derive(Debug, Args, Clone, Default)]
pub(crate) struct DsWriteArgs {
    /// DataSeries output: compression level 1..9 (lzo, zlib, bz2) [default: 6; 9 with best]
    #[arg(long, value_name = "N", help_heading = "Format options")]
    pub(crate) compress_level: Option<u32>,
    /// DataSeries output: target uncompressed bytes per extent (1024 ..= 268435456)
    #[arg(long, value_name = "BYTES", help_heading = "Format options")]
    pub(crate) extent_size: Option<usize>,
    /// DataSeries output: the ExtentType XML to use, stored verbatim
    #[arg(long, value_name = "FILE", help_heading = "Format options")]
    pub(crate) xml: Option<PathBuf>,
}

#[derive(Debug, Args)]
struct InspectArgs {
    /// The file (or directory, or URL) to inspect
    input: PathBuf,
    /// Input format [default: from the content, then the extension]
    #[arg(long, value_name = "FMT", value_parser = parse_format)]
    from: Option<Format>,
    /// filo-vector input: the vector's element type (Filo bytes do not record it)
    #[arg(long, value_name = "T", value_parser = settings::value_of(SettingKind::Read, "filo_type"))]
    filo_type: Option<String>,
    /// Also read every batch, and report whether the whole file reads (exit 1 if not)
    #[arg(long)]
    verify: bool,
    /// Print the report as JSON
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    ds_read: DsReadArgs,
    #[command(flatten)]
    storage: storage::StorageArgs,
}

#[derive(Debug, Args)]
struct FragmentsArgs {
    /// The file (or directory, or URL) to split
    input: PathBuf,
    /// Input format [default: from the content, then the extension]
    #[arg(long, value_name = "FMT", value_parser = parse_format)]
    from: Option<Format>,
    /// About N rows per fragment; each holds at least one of the format's units
    #[arg(long, value_name = "N", default_value_t = arrowsmith::DEFAULT_TARGET_ROWS, value_parser = parse_positive)]
    target_rows: usize,
    /// filo-vector input: the vector's element type (Filo bytes do not record it)
    #[arg(long, value_name = "T", value_parser = settings::value_of(SettingKind::Read, "filo_type"))]
    filo_type: Option<String>,
    #[command(flatten)]
    vs_read: VsReadArgs,
    #[command(flatten)]
    ds_read: DsReadArgs,
    #[command(flatten)]
    storage: storage::StorageArgs,
}

/// VS input options (fragments).
#[derive(Debug, Args, Clone, Default)]
pub(crate) struct VsReadArgs {
    /// VS input: accept a file that ends at a block boundary without its '$' terminal
    #[arg(long, help_heading = "Format options")]
    pub(crate) lenient_eof: bool,
    /// VS input: varint byte order, leb128 (the format's) or msb-first (upstream's prototype)
    #[arg(long, value_name = "ORDER", value_parser = settings::value_of(SettingKind::Read, "varint"), help_heading = "Format options")]
    pub(crate) varint: Option<String>,
}

impl VsReadArgs {
    pub(crate) fn settings(&self, settings: &mut settings::Settings) {
        settings
            .flag("lenient_eof", self.lenient_eof)
            .value("varint", self.varint.as_ref());
    }
}

#[derive(Debug, Args)]
struct HeadArgs {
    /// The file (or directory, or URL) to read
    input: PathBuf,
    /// Number of rows to print
    #[arg(short = 'n', long = "rows", value_name = "N", default_value_t = 10)]
    rows: usize,
    /// Input format [default: from the content, then the extension]
    #[arg(long, value_name = "FMT", value_parser = parse_format)]
    from: Option<Format>,
    /// filo-vector input: the vector's element type (Filo bytes do not record it)
    #[arg(long, value_name = "T", value_parser = settings::value_of(SettingKind::Read, "filo_type"))]
    filo_type: Option<String>,
    /// Columns to show, by name, in this order (comma-separated)
    #[arg(long, value_name = "a,b,...", value_delimiter = ',')]
    columns: Option<Vec<String>>,
    #[command(flatten)]
    ds_read: DsReadArgs,
    #[command(flatten)]
    storage: storage::StorageArgs,
}

fn parse_format(name: &str) -> Result<Format, String> {
    name.parse::<Format>().map_err(|e| e.message().to_string())
}

fn parse_positive(text: &str) -> Result<usize, String> {
    match text.parse::<usize>() {
        Ok(0) => Err("must be at least 1".to_string()),
        Ok(n) => Ok(n),
        Err(e) => Err(e.to_string()),
    }
}

/// Why a command stopped early.
#[derive(Debug)]
pub(crate) enum Failure {
    /// Report on stderr; exit 2 for usage errors, 1 otherwise.
    Error(Error),
    /// Whoever read our standard output went away: stop quietly.
    BrokenPipe,
    /// A signal stopped the command; the unfinished output was removed.
    Interrupted { signal: i32, output: PathBuf },
}

impl From<Error> for Failure {
    fn from(e: Error) -> Self {
        // A writer that gave up on a signal's stop request, before its commit.
        match interrupt::received() {
            Some(signal) if e.io_kind() == Some(std::io::ErrorKind::Interrupted) => {
                let output = e.file().map(Path::to_path_buf).unwrap_or_default();
                Failure::Interrupted { signal, output }
            }
            _ => Failure::Error(e),
        }
    }
}

pub(crate) type CliResult<T = ()> = std::result::Result<T, Failure>;

/// Writes to standard output; a closed pipe ends the command quietly.
pub(crate) fn print_out(text: &str) -> CliResult {
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Err(Failure::BrokenPipe),
        Err(e) => Err(Error::new(
            ErrorClass::Io,
            format!("cannot write to standard output: {e}"),
        )
        .into()),
    }
}

/// Writes one line to standard error, whatever became of it, with no URL's credentials in it.
pub(crate) fn print_err(line: &str) {
    // One line: messages from libraries may hold line breaks.
    let line: String = line
        .chars()
        .map(|c| if c == '\n' || c == '\r' { ' ' } else { c })
        .collect();
    let line = urls_shown(&line);
    let mut err = std::io::stderr().lock();
    let _ = writeln!(err, "{line}");
}

/// The input's format: as named, or recognised by content then extension. `None` for a URL
/// not named: the core recognises it when it opens it (one request fewer than looking first),
/// and the command then checks its settings against that format ([`check_read_settings`]).
pub(crate) fn input_format(
    path: &Path,
    named: Option<Format>,
) -> arrowsmith::Result<Option<Format>> {
    match named {
        Some(format) => Ok(Some(format)),
        None if arrowsmith::source::is_url(path) => Ok(None),
        None => Format::detect(path).map(Some),
    }
}

/// The input's format (see [`input_format`]), and the input itself when it is a stream
/// (standard input, a FIFO, a device): that is opened once, here, and recognised by the first
/// bytes it keeps.
pub(crate) fn open_input(
    path: &Path,
    named: Option<Format>,
) -> arrowsmith::Result<(Option<Format>, Option<arrowsmith::StreamInput>)> {
    if arrowsmith::input::is_stream(path) {
        let (input, format) = arrowsmith::StreamInput::open_as(path, named)?;
        return Ok((Some(format), Some(input)));
    }
    Ok((input_format(path, named)?, None))
}

/// The read settings checked against `format`, the format a URL was recognised as when it was
/// opened: a setting of another format is the error it is for a local input.
pub(crate) fn check_read_settings(
    settings: &settings::Settings,
    format: Format,
) -> arrowsmith::Result<()> {
    settings.read(&mut arrowsmith::ReadOptions::for_format(format))
}

/// A projection by column names, if any were given.
pub(crate) fn projection(columns: &Option<Vec<String>>) -> Option<arrowsmith::Projection> {
    columns
        .as_ref()
        .map(|names| arrowsmith::Projection::Names(names.clone()))
}

static PANIC_MESSAGE: Mutex<Option<String>> = Mutex::new(None);

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return ExitCode::from(u8::try_from(e.exit_code()).unwrap_or(2));
        }
    };
    let input = match &cli.command {
        Command::Convert(a) => Some(a.input.clone()),
        Command::Inspect(a) => Some(a.input.clone()),
        Command::Head(a) => Some(a.input.clone()),
        Command::Fragments(a) => Some(a.input.clone()),
        Command::Formats => None,
        Command::Sql(a) => a.file.clone(),
    };

    // A last resort for a panic inside a library: keep its message for one `error:` line
    // instead of a backtrace; the unwinding drops (and so deletes) any unfinished output.
    std::panic::set_hook(Box::new(|info| {
        let message = match info.payload().downcast_ref::<&str>() {
            Some(s) => s.to_string(),
            None => match info.payload().downcast_ref::<String>() {
                Some(s) => s.clone(),
                None => "unknown panic".to_string(),
            },
        };
        let at = info
            .location()
            .map(|l| format!(" at {}:{}", l.file(), l.line()))
            .unwrap_or_default();
        if let Ok(mut slot) = PANIC_MESSAGE.lock() {
            slot.get_or_insert(format!("{message}{at}"));
        }
    }));
    storage::register();
    let outcome = std::panic::catch_unwind(|| run(cli));

    match outcome {
        Ok(Ok(())) | Ok(Err(Failure::BrokenPipe)) => ExitCode::SUCCESS,
        // A writer to standard output whose reader went away (`convert … - | head`): as for
        // printed text, the command ends quietly.
        Ok(Err(Failure::Error(e))) if e.io_kind() == Some(std::io::ErrorKind::BrokenPipe) => {
            ExitCode::SUCCESS
        }
        Ok(Err(Failure::Interrupted { signal, output })) => {
            print_err(&format!(
                "error: {}: interrupted by signal {signal}; nothing was written",
                output.display()
            ));
            ExitCode::from(u8::try_from(128 + signal).unwrap_or(130))
        }
        Ok(Err(Failure::Error(e))) => {
            print_err(&format!("error: {}", settings::spell_error(&e)));
            if e.class().is_usage() {
                ExitCode::from(2)
            } else {
                ExitCode::FAILURE
            }
        }
        Err(_) => {
            let message = PANIC_MESSAGE
                .lock()
                .ok()
                .and_then(|mut m| m.take())
                .unwrap_or_else(|| "unknown panic".to_string());
            let file = input
                .map(|p| format!("{}: ", p.display()))
                .unwrap_or_default();
            print_err(&format!(
                "error: {file}internal error (a bug in arrowsmith or a library it uses; please report it): {message}"
            ));
            ExitCode::FAILURE
        }
    }
}

fn run(cli: Cli) -> CliResult {
    match cli.command {
        Command::Convert(args) => convert::run(*args),
        Command::Inspect(args) => inspect::run(args),
        Command::Head(args) => head::run(args),
        Command::Fragments(args) => fragments::run(args),
        Command::Formats => formats::run(),
        Command::Sql(args) => sql::run(args),
    }
}
