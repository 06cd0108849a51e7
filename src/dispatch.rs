//! One entry point over every format: [`open`] and [`create`] choose the format from the
//! content or the file name and hand the options to that format's builder; [`fragments`] and
//! [`open_fragment`] split an input and read one piece, each opening the input once per call
//! as [`Input`](crate::Input) does; to read a file more than once, keep an `Input`.

use std::path::{Path, PathBuf};

use arrow_array::RecordBatchReader;
use arrow_schema::SchemaRef;

use crate::atomic::{self, Existing, RemoteOutput, Replaceable};
use crate::error::SettingKind;
use crate::error::{Error, Result};
use crate::format::Format;
use crate::fragment::Fragment;
use crate::input::{Input, StreamInput};
use crate::options::{check_applies, ReadOptions, WriteMode, WriteOptions};
use crate::write::{BatchWriter, WriteSummary};
use crate::{bcolz, dataseries, ecosystem, filo, jay, source, vs};

pub use crate::format::is_stdin;

/// Opens any supported input as a stream of record batches. The path `-` is standard input;
/// it and any other input that is not a regular file or directory (a FIFO, a character
/// device, a socket) are opened once and read front to back (see [`open_stream`]).
pub fn open(
    path: impl AsRef<Path>,
    options: &ReadOptions,
) -> Result<Box<dyn RecordBatchReader + Send>> {
    let path = path.as_ref();
    if crate::input::is_stream(path) {
        let (input, _) = StreamInput::open_as(path, options.format)?;
        return open_stream(input, options);
    }
    crate::input::read_once(path, options, None)
}

/// Lists the fragments of `path`: pieces of about `target_rows` rows (a hint: each fragment
/// holds at least one natural unit and never cuts one). `options.format` and
/// `options.format_options` are used as [`open`] uses them; the scan options are not (a
/// listing is of the whole file). To list and then read the pieces with the file opened once,
/// use [`Input`] directly.
///
#[doc = include_str!("../docs/fragments.md")]
pub fn fragments(
    path: impl AsRef<Path>,
    options: &ReadOptions,
    target_rows: usize,
) -> Result<Vec<Fragment>> {
    let path = path.as_ref();
    crate::input::refuse_stream(path, "listing fragments")?;
    let listing = ReadOptions {
        scan: Default::default(),
        ..options.clone()
    };
    Input::open(path, &listing)?.fragments(target_rows)
}

/// Opens one fragment: its format and format settings come from the fragment, the batch
/// size, projection and limit from `options.scan` (the limit counts the fragment's rows), and
/// for a remote input the settings of storage from `options.storage` (a fragment carries no
/// credentials). A fragment of a remote object that has changed since the listing (another
/// size or version) is an error saying to list the fragments again.
pub fn open_fragment(
    fragment: &Fragment,
    options: &ReadOptions,
) -> Result<Box<dyn RecordBatchReader + Send>> {
    let mut read = ReadOptions {
        format: Some(fragment.format),
        scan: options.scan.clone(),
        format_options: fragment.options.clone(),
        storage: options.storage.clone(),
    };
    read.scan.range = Some(fragment.range);
    crate::input::read_once(&fragment.path, &read, fragment.object.as_ref())
}

/// Reads an input opened by [`StreamInput::open`] front to back: an Arrow IPC stream (what
/// `pyarrow`, Polars' `write_ipc_stream` and DataFusion write to a pipe), CSV or NDJSON. Its
/// format is `options.format`, else recognised by its first bytes, else by its name's
/// extension; standard input with neither is an Arrow IPC stream.
pub fn open_stream(
    input: StreamInput,
    options: &ReadOptions,
) -> Result<Box<dyn RecordBatchReader + Send>> {
    let format = input.format(options.format)?;
    let name = input.name().to_path_buf();
    if options.scan.salvage {
        return Err(Error::invalid_argument(
            "salvage reads files of the legacy formats, not a stream",
        )
        .with_file(&name));
    }
    ecosystem::whole_only(format, &options.scan, &name)?;
    let reader = input.into_reader();
    match format {
        Format::ArrowStream => ecosystem::ipc::read_stream(reader, &name, &options.scan),
        Format::Csv => ecosystem::csv::read(reader, &name, &options.scan),
        _ => ecosystem::ndjson::read(reader, &name, &options.scan),
    }
}

/// Creates a writer of any supported format for batches of `schema`.
///
/// A URL (`s3://bucket/out.parquet`; see [`crate::source::is_url`]) is written through the
/// registered storage with `options.storage`: the output appears only when the writer
/// finishes (a multipart upload completed at the end; a directory format's marker objects
/// last) and a failed write leaves nothing; appending to a URL is refused (see
/// docs/object-storage.md). A `file://` URL is its local path.
pub fn create(
    path: impl AsRef<Path>,
    schema: SchemaRef,
    options: &WriteOptions,
) -> Result<Box<dyn BatchWriter + Send>> {
    let path = path.as_ref();
    if source::is_url(path) {
        return create_remote(path, schema, options);
    }
    let local = source::local_path(path);
    let path = local.as_path();
    // Standard output has no extension: the IPC stream is what pipes carry.
    let format = options.output_format(path)?;
    check_write(options, format)?;
    if let Some(appender) = options.appender(path, format, schema.clone())? {
        return Ok(appender);
    }
    if is_stdin(path) && !format.streams() {
        return Err(Error::invalid_argument(format!(
            "{format} cannot be written to standard output (-): only arrows, csv and ndjson \
             stream; give a file name"
        )));
    }
    if !is_stdin(path) {
        check_output(path, format, options.overwrite())?;
    }
    match format {
        Format::Jay => Ok(Box::new(jay::Writer::try_new(
            path,
            schema,
            options.jay_writer(),
        )?)),
        Format::DataSeries => Ok(Box::new(dataseries::Writer::try_new(
            path,
            schema,
            options.dataseries_writer()?,
        )?)),
        Format::Filo => Ok(Box::new(filo::Writer::try_new(
            path,
            schema,
            options.filo_writer(),
        )?)),
        Format::FiloVector => Ok(Box::new(filo::VectorWriter::try_new(
            path,
            schema,
            options.filo_writer(),
        )?)),
        Format::Vs => Ok(Box::new(vs::Writer::try_new(
            path,
            schema,
            options.vs_writer()?,
        )?)),
        Format::Bcolz => Ok(Box::new(bcolz::Writer::try_new(
            path,
            schema,
            options.bcolz_writer()?,
        )?)),
        other => ecosystem::create(path, other, schema, options),
    }
}

/// A writer to the URL `path`. The formats whose writers take a sink stream into one
/// multipart upload, completed when the writer finishes ([`streaming_writer`]); the others
/// (VS, a bare Filo vector, the directory formats) fill a local scratch copy, which goes up
/// when the writer finishes ([`RemoteOutput`]). See docs/object-storage.md.
fn create_remote(
    path: &Path,
    schema: SchemaRef,
    options: &WriteOptions,
) -> Result<Box<dyn BatchWriter + Send>> {
    let url = path.to_str().unwrap_or_default();
    if options.mode == WriteMode::Append {
        source::refuse_url(path, "appending (the append mode)")
            .map_err(|e| e.with_setting("mode"))?;
    }
    let format = options.output_format(path)?;
    check_write(options, format)?;
    let storage = source::registered_storage(url)?;
    let output = RemoteOutput::start(storage, url, format, options.overwrite(), &options.storage)?;
    // The local copy is scratch: flushing it to disk buys nothing.
    let mut scratch = WriteOptions {
        format: Some(format),
        mode: WriteMode::Error,
        durable: false,
        bcolz: options.bcolz.clone().with_durable(false),
        ..options.clone()
    };
    if format == Format::DataSeries {
        name_extent_type_after(path, &schema, &mut scratch);
    }
    let named = |e: Error| {
        e.with_file_renamed(Path::new(atomic::SINK_NAME), path)
            .with_file_renamed(output.local_path(), path)
    };
    if streams_up(format) {
        let upload = output.open_upload()?;
        let writer = streaming_writer(upload.clone(), format, schema, &scratch)
            .map_err(named)?
            .ok_or_else(|| Error::unsupported(format!("{format} does not stream")))?;
        return Ok(Box::new(RemoteWriter {
            writer,
            output: Upload::Streaming(upload),
            url: path.to_path_buf(),
            scratch: PathBuf::from(atomic::SINK_NAME),
        }));
    }
    let writer = create(output.local_path(), schema, &scratch).map_err(named)?;
    Ok(Box::new(RemoteWriter {
        writer,
        scratch: output.local_path().to_path_buf(),
        output: Upload::Spooled(output),
        url: path.to_path_buf(),
    }))
}

/// A DataSeries output written to a path is named after its file when nothing else names
/// its extent type; a sink has no name, so a URL's writer gets its object's name here, and
/// the object equals the local file of that name.
fn name_extent_type_after(url: &Path, schema: &SchemaRef, options: &mut WriteOptions) {
    let named = ["dataseries.xml", "dataseries.name"]
        .iter()
        .any(|key| schema.metadata().contains_key(*key));
    if options.dataseries.names_its_type() || named {
        return;
    }
    if let Some(stem) = url.file_stem().and_then(|s| s.to_str()) {
        options.dataseries = options.dataseries.clone().with_type_name(stem);
    }
}

/// Whether a remote output of `format` streams into its upload ([`streaming_writer`] has a
/// writer of it).
fn streams_up(format: Format) -> bool {
    matches!(
        format,
        Format::Jay
            | Format::DataSeries
            | Format::Parquet
            | Format::Arrow
            | Format::ArrowStream
            | Format::Csv
            | Format::Ndjson
    )
}

/// The writer of `format` into `sink`, for the formats whose writers take one: Jay (which
/// keeps its columns in spill files and writes the file at its finish), DataSeries, Parquet,
/// Arrow IPC file and stream, CSV and NDJSON. `None` for the others.
pub(crate) fn streaming_writer(
    sink: impl std::io::Write + Send + 'static,
    format: Format,
    schema: SchemaRef,
    options: &WriteOptions,
) -> Result<Option<Box<dyn BatchWriter + Send>>> {
    use ecosystem::{csv, ipc, ndjson, parquet};
    Ok(Some(match format {
        Format::Jay => Box::new(jay::Writer::try_new_to_sink(
            sink,
            schema,
            options.jay_writer(),
        )?),
        Format::DataSeries => Box::new(dataseries::Writer::try_new_to_sink(
            sink,
            schema,
            options.dataseries_writer()?,
        )?),
        Format::Parquet => Box::new(parquet::Writer::try_new_to_sink(sink, schema, options)?),
        Format::Arrow => Box::new(ipc::Writer::try_new_file_to_sink(sink, schema, options)?),
        Format::ArrowStream => {
            Box::new(ipc::Writer::try_new_stream_to_sink(sink, schema, options)?)
        }
        Format::Csv => Box::new(csv::Writer::try_new_to_sink(sink, schema, options)?),
        Format::Ndjson => Box::new(ndjson::Writer::try_new_to_sink(sink, schema, options)?),
        _ => return Ok(None),
    }))
}

/// Where a remote writer's bytes go.
enum Upload {
    /// Straight into one multipart upload.
    Streaming(atomic::ObjectSink),
    /// Into a local scratch copy, sent up at the finish.
    Spooled(RemoteOutput),
}

/// A writer of a remote output: see [`create_remote`].
struct RemoteWriter {
    writer: Box<dyn BatchWriter + Send>,
    output: Upload,
    url: PathBuf,
    /// What the writer's errors name in place of the URL: its sink or its scratch copy.
    scratch: PathBuf,
}

impl BatchWriter for RemoteWriter {
    fn write(&mut self, batch: &arrow_array::RecordBatch) -> Result<()> {
        self.writer
            .write(batch)
            .map_err(|e| e.with_file_renamed(&self.scratch, &self.url))
    }

    fn finish(self: Box<Self>) -> Result<WriteSummary> {
        let RemoteWriter {
            writer,
            output,
            url,
            scratch,
        } = *self;
        let summary = writer
            .finish()
            .map_err(|e| e.with_file_renamed(&scratch, &url));
        match output {
            Upload::Streaming(upload) => match summary {
                Ok(summary) => upload.finish().map(|()| summary),
                Err(e) => {
                    upload.abort();
                    Err(e)
                }
            },
            Upload::Spooled(output) => {
                let summary = summary?;
                output.upload()?;
                Ok(summary)
            }
        }
    }
}

/// The rule for an existing output, the same for every format: replaced only with
/// `overwrite`, and only if it is an output of the format; a device or FIFO is written into by
/// the formats that stream and refused by the others.
fn check_output(path: &Path, format: Format, overwrite: bool) -> Result<()> {
    let replaceable = match format {
        Format::Bcolz => Replaceable::Dataset(bcolz::DATASET),
        Format::Filo => Replaceable::Dataset(filo::DATASET),
        _ => Replaceable::File,
    };
    match atomic::check_target(path, replaceable, overwrite)? {
        Existing::Stream if !format.streams() => Err(atomic::refuse_stream(path, format.name())),
        _ => Ok(()),
    }
}

/// Streams every batch of `reader` into a new file at `path`: the library form of
/// `arrowsmith convert`. Works with any `RecordBatchReader`, such as an
/// `arrow::ffi_stream::ArrowArrayStreamReader` built from an Arrow C stream that DataFusion,
/// Polars or pyarrow exported.
pub fn write_all(
    reader: impl RecordBatchReader,
    path: impl AsRef<Path>,
    options: &WriteOptions,
) -> Result<WriteSummary> {
    let path = path.as_ref();
    if source::is_url(path) && options.mode == WriteMode::Append {
        source::refuse_url(path, "appending (the append mode)")
            .map_err(|e| e.with_setting("mode"))?;
    }
    let local = source::local_path(path);
    let path = local.as_path();
    if options.appends_vs(path)? {
        check_write(options, Format::Vs)?;
        let summary = vs::append(path, reader, &options.vs_writer()?)?;
        return Ok(WriteSummary {
            rows: summary.rows,
            warnings: Vec::new(),
        });
    }
    let mut writer = create(path, reader.schema(), options).map_err(|e| e.with_file(path))?;
    for batch in reader {
        let batch = batch.map_err(Error::from_arrow_owned)?;
        writer.write(&batch).map_err(|e| e.with_file(path))?;
    }
    writer.finish().map_err(|e| e.with_file(path))
}

/// Checks, before any data is read, what can be checked of these settings for an output
/// of `format`: the compression codec, and that appending applies (vs and bcolz, which
/// always flush before they commit).
pub fn check_write(options: &WriteOptions, format: Format) -> Result<()> {
    if let Some(spec) = &options.compression {
        check_compression(format, spec)?;
    }
    if options.mode != WriteMode::Append {
        return Ok(());
    }
    if !matches!(format, Format::Vs | Format::Bcolz) {
        return Err(Error::invalid_argument(format!(
            "appending ({}) applies to vs and bcolz output, not {format}",
            Error::setting_phrase("mode")
        ))
        .with_setting("mode"));
    }
    let no_sync = if !options.durable {
        Some("no_sync")
    } else if !options.bcolz.durable() {
        Some("bcolz_no_sync")
    } else {
        None
    };
    match no_sync {
        Some(key) => Err(Error::for_setting(
            key,
            "does not apply to an append, which always flushes before it commits",
        )),
        None => Ok(()),
    }
}

/// A compression spec is checked before any data is read, by the parser of the target format.
fn check_compression(format: Format, spec: &str) -> Result<()> {
    let checked = match format {
        Format::Parquet => crate::ecosystem::parquet::compression(Some(spec)).map(|_| ()),
        Format::Arrow | Format::ArrowStream => {
            crate::ecosystem::ipc::compression(Some(spec)).map(|_| ())
        }
        Format::DataSeries => spec.parse::<dataseries::Compression>().map(|_| ()),
        Format::Vs => spec.parse::<vs::Compression>().map(|_| ()),
        Format::Bcolz => spec.parse::<bcolz::Compression>().map(|_| ()),
        _ => return check_applies(SettingKind::Write, "compression", format),
    };
    checked.map_err(|e| Error::for_setting("compression", e.message()))
}
