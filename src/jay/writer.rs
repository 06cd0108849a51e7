//! Arrow → Jay: a streaming writer of record batches (spec B3.2–B3.6).
//!
//! Every column of a Jay file is one contiguous buffer, but record batches interleave columns,
//! so the writer encodes each batch's columns into per-column streams (in parallel), keeps them
//! in memory up to a limit and spills them to one temporary spool file beyond it. `finish()`
//! copies the streams out in column order into a temporary file next to the target, appends the
//! meta record and the trailer, and renames the file over the target. Nothing appears at the
//! target until then, and a failed or abandoned write leaves an existing target untouched.
//!
//! Files are written so that every datatable release can read them as far as the column types
//! allow: non-array columns in the old layout, arrays (and their children) in the new layout.

mod direct;
mod encode;
mod frame;
mod keys;
mod spool;

use std::fs::File;
use std::io::{self, BufWriter, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
use rayon::prelude::*;

use self::direct::Held;
use self::encode::{Buf, EncodeError, EncodeOptions, Encoder, Finished};
use self::frame::Placed;
use self::keys::{KeyCheck, KeyRequest};
use self::spool::{CopyTarget, Spool, Stream};
use super::mapping::WriteMapping;
use super::meta::{BufferRange, HEADER, TRAILER};
use crate::atomic::AtomicFile;
use crate::error::ErrorClass;
use crate::error::{Error, Result};
use crate::sentinel::CollisionPolicy;
use crate::write::{BatchWriter, WriteSummary};

/// The most rows encoded at once: larger batches are encoded slice by slice.
const ENCODE_SLICE_ROWS: usize = 1 << 16;

/// Encoded bytes the writer keeps in memory before it spills them to its spool file.
const DEFAULT_MEMORY_LIMIT: usize = 256 << 20;

/// The most text bytes or rows of a Str32 column, and elements of an Arr32 column: beyond
/// it a column is written with 64-bit offsets (Str64, Arr64).
const OFFSET32_LIMIT: u64 = i32::MAX as u64;

/// FlatBuffers cannot build a meta record of 2 GiB or more.
const META_LIMIT: u64 = (1 << 31) - (1 << 16);

/// Options of the Jay [`Writer`].
#[derive(Debug, Clone)]
pub struct WriterOptions {
    sentinel_collisions: CollisionPolicy,
    durable: bool,
    spill_dir: Option<PathBuf>,
    memory_limit: usize,
    offset32_limit: u64,
}

impl Default for WriterOptions {
    fn default() -> Self {
        WriterOptions {
            sentinel_collisions: CollisionPolicy::Error,
            durable: true,
            spill_dir: None,
            memory_limit: DEFAULT_MEMORY_LIMIT,
            offset32_limit: OFFSET32_LIMIT,
        }
    }
}

impl WriterOptions {
    /// What to do with a valid value equal to the Jay sentinel of its type, such as an Int32
    /// −2^31 (default: [`CollisionPolicy::Error`]; [`CollisionPolicy::AsNull`] stores it as NA).
    pub fn with_sentinel_collisions(mut self, policy: CollisionPolicy) -> Self {
        self.sentinel_collisions = policy;
        self
    }

    /// Whether `finish()` flushes the file to disk (fsync) before renaming it over the target
    /// (default `true`). Without it a crash right after the rename may leave an empty or
    /// partial target on some file systems. Has no effect when writing to a sink.
    pub fn with_durable(mut self, durable: bool) -> Self {
        self.durable = durable;
        self
    }

    /// The directory of the temporary spool file that holds column data beyond the memory
    /// limit (default: the target's directory, or the system's temporary directory when
    /// writing to a sink). Its free space must hold the spilled data until `finish()`.
    pub fn with_spill_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.spill_dir = Some(dir.into());
        self
    }

    /// How many bytes of column data the writer holds in memory before it moves them to the
    /// spool file (default 256 MiB). 0 spills after every batch.
    /// Memory use is about this limit plus the batch being written.
    ///
    /// Up to this limit, a writer to a file keeps the batches themselves (shared, not copied)
    /// and encodes them at `finish()` straight into their place in the file; a frame beyond it
    /// is encoded as it arrives.
    pub fn with_memory_limit(mut self, bytes: usize) -> Self {
        self.memory_limit = bytes;
        self
    }

    /// Lowers the 2^31 − 1 limit beyond which Str32 columns become Str64 and Arr32 columns
    /// Arr64, so that tests can exercise the switch with little data.
    #[doc(hidden)]
    pub fn with_offset32_limit(mut self, limit: u64) -> Self {
        self.offset32_limit = limit.min(OFFSET32_LIMIT);
        self
    }
}

/// Where the finished file goes.
enum Output {
    File(AtomicFile),
    Sink(BufWriter<Box<dyn Write + Send>>),
}

impl Write for Output {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Output::File(f) => f.write(buf),
            Output::Sink(s) => s.write(buf),
        }
    }
    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        match self {
            Output::File(f) => f.write_all(buf),
            Output::Sink(s) => s.write_all(buf),
        }
    }
    fn flush(&mut self) -> io::Result<()> {
        match self {
            Output::File(f) => f.flush(),
            Output::Sink(s) => s.flush(),
        }
    }
}

impl CopyTarget for Output {
    fn copy_from(&mut self, reader: &mut io::Take<&mut File>) -> io::Result<u64> {
        match self {
            // File to file: `io::copy` uses copy_file_range on Linux.
            Output::File(f) => io::copy(reader, f.file_mut()?),
            Output::Sink(s) => io::copy(reader, s),
        }
    }
    fn write_direct(&mut self, bytes: &[u8]) -> io::Result<()> {
        match self {
            // Flushes the buffer, then one write from the piece itself.
            Output::File(f) => f.file_mut()?.write_all(bytes),
            Output::Sink(s) => s.write_all(bytes),
        }
    }
}

/// Writes record batches into a new Jay file.
///
/// ```no_run
/// use std::sync::Arc;
/// use arrow_array::{Int32Array, RecordBatch, StringArray};
/// use arrow_schema::{DataType, Field, Schema};
/// use arrowsmith::jay::{Writer, WriterOptions};
///
/// let schema = Arc::new(Schema::new(vec![
///     Field::new("A", DataType::Int32, true),
///     Field::new("B", DataType::Utf8, true),
/// ]));
/// let batch = RecordBatch::try_new(
///     schema.clone(),
///     vec![
///         Arc::new(Int32Array::from(vec![Some(1), None, Some(3)])),
///         Arc::new(StringArray::from(vec![Some("a"), None, Some("")])),
///     ],
/// )?;
/// let mut writer = Writer::try_new("tiny.jay", schema, WriterOptions::default())?;
/// writer.write(&batch)?;
/// let summary = writer.finish()?;
/// assert_eq!(summary.rows, 3);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Writer {
    schema: SchemaRef,
    mappings: Vec<WriteMapping>,
    encoders: Vec<Box<dyn Encoder>>,
    /// Batches kept whole for `finish()` (see `direct`), while `holding`.
    held: Vec<Held>,
    held_bytes: usize,
    holding: bool,
    spool: Spool,
    memory_limit: usize,
    output: Output,
    /// The target path, for error messages.
    target: Option<PathBuf>,
    rows: u64,
    keys: KeyRequest,
    warnings: Vec<String>,
    /// Set when a write failed: the writer refuses to go on.
    failed: bool,
}

impl Writer {
    /// Starts a Jay file at `path` for batches of `schema`.
    ///
    /// Fails at once, with an `unsupported_type` error naming the column (index and name) and
    /// its Arrow type, when a column's type has no Jay equivalent. Creates the temporary file
    /// beside `path` now; `path` itself is only replaced by a successful [`Writer::finish`].
    pub fn try_new(
        path: impl AsRef<Path>,
        schema: SchemaRef,
        options: WriterOptions,
    ) -> Result<Writer> {
        let path = path.as_ref();
        let spill_dir = match &options.spill_dir {
            Some(dir) => dir.clone(),
            None => crate::atomic::parent_dir(path).to_path_buf(),
        };
        let (mappings, warnings) = check_schema(&schema).map_err(|e| e.with_file(path))?;
        let mut file = AtomicFile::create(path)?;
        file.set_durable(options.durable);
        Writer::start(
            schema,
            mappings,
            warnings,
            options,
            Output::File(file),
            spill_dir,
            Some(path.to_path_buf()),
        )
    }

    /// Like [`Writer::try_new`], but `finish()` writes the file into `sink` (a pipe, a socket,
    /// a buffer). Nothing is written to the sink before `finish()`; if `finish()` fails, the
    /// sink may have received part of the file.
    pub fn try_new_to_sink(
        sink: impl Write + Send + 'static,
        schema: SchemaRef,
        options: WriterOptions,
    ) -> Result<Writer> {
        let spill_dir = options.spill_dir.clone().unwrap_or_else(std::env::temp_dir);
        let (mappings, warnings) = check_schema(&schema)?;
        Writer::start(
            schema,
            mappings,
            warnings,
            options,
            Output::Sink(BufWriter::with_capacity(1 << 20, Box::new(sink))),
            spill_dir,
            None,
        )
    }

    fn start(
        schema: SchemaRef,
        mappings: Vec<WriteMapping>,
        warnings: Vec<String>,
        options: WriterOptions,
        output: Output,
        spill_dir: PathBuf,
        target: Option<PathBuf>,
    ) -> Result<Writer> {
        let encode_options = EncodeOptions {
            policy: options.sentinel_collisions,
            offset32_limit: options.offset32_limit,
        };
        let encoders = new_encoders(&schema, &mappings, encode_options)?;
        let keys = KeyRequest::from_schema(&schema);
        let holding = matches!(output, Output::File(_))
            && encoders.iter().all(|e| e.direct_layout(0, 0).is_some());
        Ok(Writer {
            schema,
            mappings,
            encoders,
            held: Vec::new(),
            held_bytes: 0,
            holding,
            spool: Spool::new(spill_dir),
            memory_limit: options.memory_limit,
            output,
            target,
            rows: 0,
            keys,
            warnings,
            failed: false,
        })
    }

    fn locate(&self, error: Error) -> Error {
        in_target(self.target.as_deref(), error)
    }

    fn column_error(&self, index: usize, error: Error) -> Error {
        let name = self.schema.field(index).name();
        self.locate(error.with_column(index, Some(name)))
    }

    /// Appends the rows of `batch`, whose columns must have the writer's schema's types (or
    /// types that map to the same Jay types).
    ///
    /// A batch of the wrong shape is refused and the writer goes on. Any other error (a value
    /// that cannot be stored, a failing spool file) leaves the writer unusable: later writes
    /// and `finish()` fail, and the target is left untouched. A writer to a file holds batches
    /// up to its memory limit and encodes them in `finish()` (see
    /// [`WriterOptions::with_memory_limit`]), so a value in them that cannot be stored is
    /// refused there, with the same error.
    pub fn write(&mut self, batch: &RecordBatch) -> Result<()> {
        if self.failed {
            return Err(self.locate(Error::invalid_argument(
                "an earlier write to this Jay writer failed; it cannot continue",
            )));
        }
        self.check_batch(batch)?;
        let result = self.take(batch);
        if result.is_err() {
            self.failed = true;
        }
        result
    }

    fn take(&mut self, batch: &RecordBatch) -> Result<()> {
        if self.holding {
            if let Some((held, size)) = Held::new(batch, &self.encoders, &self.mappings) {
                let size = usize::try_from(size).unwrap_or(usize::MAX);
                if self.held_bytes.saturating_add(size) <= self.memory_limit {
                    self.held_bytes += size;
                    self.held.push(held);
                    self.count_rows(batch);
                    return Ok(());
                }
            }
            self.release_held()?;
        }
        self.encode(batch, self.rows)?;
        self.count_rows(batch);
        Ok(())
    }

    fn count_rows(&mut self, batch: &RecordBatch) {
        if let KeyRequest::Check(check) = &mut self.keys {
            check.check(batch, self.rows);
        }
        self.rows += batch.num_rows() as u64;
    }

    /// Encodes the held batches into the column streams, and every later batch as it comes.
    fn release_held(&mut self) -> Result<()> {
        self.holding = false;
        let held = std::mem::take(&mut self.held);
        self.held_bytes = 0;
        let mut first_row = self.rows - held.iter().map(|h| h.batch.num_rows() as u64).sum::<u64>();
        for Held { batch, .. } in &held {
            crate::cancel::check().map_err(|e| self.locate(e))?;
            self.encode(batch, first_row)?;
            first_row += batch.num_rows() as u64;
        }
        Ok(())
    }

    /// Encodes `batch`, whose first row is row `first_row` of the file, into the column
    /// streams. A huge batch (a Polars frame arrives as one) is encoded in slices, so each
    /// column's copy, sentinel fill and statistics run on data still in cache.
    fn encode(&mut self, batch: &RecordBatch, first_row: u64) -> Result<()> {
        let rows = batch.num_rows();
        if rows <= ENCODE_SLICE_ROWS {
            return self.append_batch(batch, first_row);
        }
        (0..rows).step_by(ENCODE_SLICE_ROWS).try_for_each(|start| {
            let len = ENCODE_SLICE_ROWS.min(rows - start);
            self.append_batch(&batch.slice(start, len), first_row + start as u64)
        })
    }

    fn check_batch(&self, batch: &RecordBatch) -> Result<()> {
        let ncols = self.mappings.len();
        if batch.num_columns() != ncols {
            return Err(self.locate(Error::invalid_argument(format!(
                "the batch has {} columns but the writer's schema has {ncols}",
                batch.num_columns()
            ))));
        }
        for (i, (column, mapping)) in batch.columns().iter().zip(&self.mappings).enumerate() {
            if WriteMapping::for_arrow(column.data_type()).ok().as_ref() != Some(mapping) {
                let expected = self.schema.field(i).data_type();
                return Err(self.column_error(
                    i,
                    Error::invalid_argument(format!(
                        "the batch's column has type {} but the writer's schema says {expected}",
                        column.data_type()
                    )),
                ));
            }
        }
        Ok(())
    }

    fn append_batch(&mut self, batch: &RecordBatch, first_row: u64) -> Result<()> {
        let ncols = self.mappings.len();
        let columns = batch.columns();
        let parallel = ncols > 1 && batch.num_rows().saturating_mul(ncols) >= 1 << 15;
        let append = |(encoder, column): (&mut Box<dyn Encoder>, &arrow_array::ArrayRef)| {
            encoder.append(column.as_ref())
        };
        let results: Vec<Result<(), EncodeError>> = if parallel {
            self.encoders
                .par_iter_mut()
                .zip(columns.par_iter())
                .map(append)
                .collect()
        } else {
            self.encoders
                .iter_mut()
                .zip(columns.iter())
                .map(append)
                .collect()
        };
        if let Some((i, e)) = results
            .into_iter()
            .enumerate()
            .find_map(|(i, r)| r.err().map(|e| (i, e)))
        {
            let mut error = Error::new(e.class, e.message);
            if let Some(index) = e.index {
                error = error.at_row(first_row + index as u64);
            }
            return Err(self.column_error(i, error));
        }

        let held: usize = self.encoders.iter().map(|e| e.held()).sum();
        if held > self.memory_limit {
            if let Err(e) = self.spill() {
                let error = spool_error(e, self.spool.dir());
                return Err(self.locate(error));
            }
        }
        Ok(())
    }

    /// Moves every column's in-memory bytes to the spool file.
    fn spill(&mut self) -> io::Result<()> {
        for encoder in &mut self.encoders {
            encoder.spill(&mut self.spool)?;
        }
        self.spool.flush()
    }

    /// Writes the file and, for a path, renames it over the target. Returns the number of rows
    /// written and warnings about what the file could not keep (time zones dropped, a key that
    /// was requested but could not be written).
    pub fn finish(mut self) -> Result<WriteSummary> {
        if self.failed {
            return Err(self.locate(Error::invalid_argument(
                "an earlier write to this Jay writer failed; no file was written",
            )));
        }
        crate::test_hooks::pause_point("jay-finish");
        if !self.held.is_empty() {
            if let Some(layout) = direct::plan(&self.encoders, &self.held) {
                return self.finish_direct(layout);
            }
            self.release_held()?;
        }
        let Writer {
            schema,
            encoders,
            mut spool,
            mut output,
            target,
            rows,
            keys,
            mut warnings,
            ..
        } = self;
        let locate = |e: Error| in_target(target.as_deref(), e);
        let nkeys = key_count(keys, &mut warnings);
        let finished: Vec<Finished> = encoders.into_iter().map(|e| e.finish()).collect();
        let mut data = DataSection {
            out: &mut output,
            pos: 0,
        };
        let placed = (|| -> Result<Vec<Placed>> {
            data.out.write_all(HEADER)?;
            finished
                .iter()
                .map(|f| {
                    crate::cancel::check()?;
                    Ok(data.place_column(&mut spool, f)?)
                })
                .collect()
        })()
        .map_err(locate)?;
        write_meta(&mut output, &schema, placed, rows, nkeys).map_err(locate)?;
        drop(spool);
        match output {
            Output::File(file) => file.commit()?,
            Output::Sink(sink) => {
                sink.into_inner()
                    .map_err(|e| locate(Error::from(e.into_error())))?;
            }
        }
        Ok(WriteSummary { rows, warnings })
    }

    /// `finish()` for held batches: every column encoded into its place (see `direct`).
    fn finish_direct(self, layout: direct::Layout) -> Result<WriteSummary> {
        let Writer {
            schema,
            encoders,
            held,
            output,
            target,
            rows,
            keys,
            mut warnings,
            ..
        } = self;
        let locate = |e: Error| in_target(target.as_deref(), e);
        let Output::File(mut file) = output else {
            return Err(Error::new(
                ErrorClass::Io,
                "internal error: a Jay writer to a sink held its batches",
            ));
        };
        let data_end = HEADER.len() as u64 + layout.end();
        let start = |file: &mut AtomicFile| -> io::Result<()> {
            file.write_all(HEADER)?;
            let file = file.file_mut()?;
            // Sized first, so that the columns written in parallel fill it rather than extend it.
            file.set_len(data_end)?;
            file.seek(SeekFrom::Start(data_end))?;
            Ok(())
        };
        start(&mut file).map_err(|e| locate(Error::from(e)))?;
        let durable = file.durable();
        let data_file = file.file_mut().map_err(|e| locate(Error::from(e)))?;
        let placed = direct::write(data_file, durable, &layout, encoders, &held)
            .map_err(|(i, e)| locate(e.with_column(i, Some(schema.field(i).name()))))?;
        drop(held);
        let nkeys = key_count(keys, &mut warnings);
        write_meta(&mut file, &schema, placed, rows, nkeys).map_err(locate)?;
        file.commit()?;
        Ok(WriteSummary { rows, warnings })
    }
}

impl BatchWriter for Writer {
    fn write(&mut self, batch: &RecordBatch) -> Result<()> {
        Writer::write(self, batch)
    }
    fn finish(self: Box<Self>) -> Result<WriteSummary> {
        Writer::finish(*self)
    }
}

/// `error` with the writer's target file named in it, when there is one.
fn in_target(target: Option<&Path>, error: Error) -> Error {
    match target {
        Some(path) => error.with_file(path),
        None => error,
    }
}

/// The number of key columns to record, with a warning when a requested key was not kept.
fn key_count(keys: KeyRequest, warnings: &mut Vec<String>) -> i32 {
    match keys {
        KeyRequest::None => 0,
        KeyRequest::Invalid(why) => {
            warnings.push(format!("no key written: {}", why.message()));
            0
        }
        KeyRequest::Check(check) => match KeyCheck::verdict(check) {
            Ok(k) => k as i32,
            Err(why) => {
                warnings.push(why.message().to_owned());
                0
            }
        },
    }
}

/// Ends the file after its data section: the meta record, its length and the trailer.
fn write_meta(
    out: &mut impl Write,
    schema: &SchemaRef,
    placed: Vec<Placed>,
    rows: u64,
    nkeys: i32,
) -> Result<()> {
    let named: Vec<(&str, Placed)> = schema
        .fields()
        .iter()
        .map(|f| f.name().as_str())
        .zip(placed)
        .collect();
    let meta = frame::build(&named, rows, nkeys);
    out.write_all(&meta)?;
    out.write_all(&(meta.len() as u64).to_le_bytes())?;
    out.write_all(TRAILER)?;
    out.flush()?;
    Ok(())
}

/// The encoder of every column.
fn new_encoders(
    schema: &SchemaRef,
    mappings: &[WriteMapping],
    options: EncodeOptions,
) -> Result<Vec<Box<dyn Encoder>>> {
    mappings
        .iter()
        .zip(schema.fields())
        .enumerate()
        .map(|(i, (mapping, field))| {
            encode::encoder_for(mapping, field.data_type(), options).ok_or_else(|| {
                Error::new(
                    ErrorClass::UnsupportedType,
                    format!("no Jay encoder for the column's mapping {mapping:?}"),
                )
                .with_column(i, Some(field.name()))
            })
        })
        .collect()
}

fn spool_error(e: io::Error, dir: &Path) -> Error {
    Error::from(e).with_field(format!("spool file in {}", dir.display()))
}

/// The Jay mapping of every column, warnings about time zones that will be dropped, or an
/// `unsupported_type` error naming the first column that cannot be written.
fn check_schema(schema: &SchemaRef) -> Result<(Vec<WriteMapping>, Vec<String>)> {
    let mut mappings = Vec::with_capacity(schema.fields().len());
    let mut warnings = Vec::new();
    let mut meta_bound = 256u64;
    for (i, field) in schema.fields().iter().enumerate() {
        let data_type = field.data_type();
        let mapping = WriteMapping::for_arrow(data_type).map_err(|e| {
            Error::new(
                ErrorClass::UnsupportedType,
                format!(
                    "the column's Arrow type {data_type} cannot be written to Jay: {}",
                    e.message()
                ),
            )
            .with_column(i, Some(field.name()))
        })?;
        if let Some(tz) = dropped_time_zone(&mapping) {
            warnings.push(format!(
                "column {i} {:?}: the time zone {tz:?} of its timestamps was dropped; \
                 Jay's Time64 stores the UTC instant without a zone",
                field.name()
            ));
        }
        meta_bound += field.name().len() as u64 + frame::mapping_meta_bound(&mapping);
        mappings.push(mapping);
    }
    if meta_bound > META_LIMIT {
        return Err(Error::new(
            ErrorClass::Unsupported,
            format!(
                "{} columns need a Jay meta record of up to {meta_bound} bytes, beyond the 2 GiB \
                 that FlatBuffers can build",
                mappings.len()
            ),
        ));
    }
    Ok((mappings, warnings))
}

fn dropped_time_zone(mapping: &WriteMapping) -> Option<&str> {
    match mapping {
        WriteMapping::TimestampToTime64 { tz: Some(tz), .. } => Some(tz),
        WriteMapping::List { element, .. } => dropped_time_zone(element),
        _ => None,
    }
}

/// The data section being written: places buffers at 8-aligned offsets in column order.
struct DataSection<'a> {
    out: &'a mut Output,
    /// Bytes written after the header.
    pos: u64,
}

impl DataSection<'_> {
    fn place_column(&mut self, spool: &mut Spool, column: &Finished) -> io::Result<Placed> {
        let validity = match &column.validity {
            Some(stream) => self.place_stream(spool, stream)?,
            None => EMPTY,
        };
        let data = column
            .data
            .iter()
            .map(|buf| self.place(spool, buf))
            .collect::<io::Result<Vec<_>>>()?;
        let child = match &column.child {
            Some(child) => Some(Box::new(self.place_column(spool, child)?)),
            None => None,
        };
        Ok(Placed {
            jay_type: column.jay_type.clone(),
            nrows: column.nrows,
            nullcount: column.nullcount,
            stats: column.stats,
            validity,
            data,
            child,
        })
    }

    fn place_stream(&mut self, spool: &mut Spool, stream: &Stream) -> io::Result<BufferRange> {
        self.place_with(stream.len(), |out| stream.write_to(spool, out))
    }

    fn place(&mut self, spool: &mut Spool, buf: &Buf) -> io::Result<BufferRange> {
        match buf {
            Buf::Plain(stream) => self.place_stream(spool, stream),
            Buf::Offsets(o) if !o.wide_mode => self.place_stream(spool, &o.narrow),
            Buf::Offsets(o) => self.place_with(o.len(), |out| {
                // A column that outgrew 32-bit offsets: widen the u32 prefix on the way out.
                let mut wide: Vec<u8> = Vec::new();
                o.narrow.for_each_chunk(spool, 4, |chunk| {
                    for part in chunk.chunks(1 << 16) {
                        wide.clear();
                        for v in part.chunks_exact(4) {
                            let v = u32::from_le_bytes([v[0], v[1], v[2], v[3]]);
                            let w = (v & !(1 << 31)) as u64 | ((v as u64 >> 31) << 63);
                            wide.extend_from_slice(&w.to_le_bytes());
                        }
                        out.write_all(&wide)?;
                    }
                    Ok(())
                })?;
                o.wide.write_to(spool, out)
            }),
        }
    }

    /// Writes one buffer of `len` bytes with `write` and pads it to a multiple of 8.
    fn place_with(
        &mut self,
        len: u64,
        write: impl FnOnce(&mut Counted<'_>) -> io::Result<()>,
    ) -> io::Result<BufferRange> {
        if len == 0 {
            return Ok(EMPTY);
        }
        let offset = self.pos;
        let mut counted = Counted {
            out: self.out,
            written: 0,
        };
        write(&mut counted)?;
        if counted.written != len {
            return Err(io::Error::other(format!(
                "internal error: a column buffer of {len} bytes came out as {} bytes",
                counted.written
            )));
        }
        let pad = (8 - len % 8) % 8;
        self.out.write_all(&[0u8; 8][..pad as usize])?;
        self.pos += len + pad;
        Ok(BufferRange {
            offset,
            length: len,
        })
    }
}

const EMPTY: BufferRange = BufferRange {
    offset: 0,
    length: 0,
};

/// An output that counts what goes through it.
struct Counted<'a> {
    out: &'a mut Output,
    written: u64,
}

impl Write for Counted<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.out.write(buf)?;
        self.written += n as u64;
        Ok(n)
    }
    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        self.out.write_all(buf)?;
        self.written += buf.len() as u64;
        Ok(())
    }
    fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}

impl CopyTarget for Counted<'_> {
    fn copy_from(&mut self, reader: &mut io::Take<&mut File>) -> io::Result<u64> {
        let n = self.out.copy_from(reader)?;
        self.written += n;
        Ok(n)
    }
    fn write_direct(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.out.write_direct(bytes)?;
        self.written += bytes.len() as u64;
        Ok(())
    }
}
