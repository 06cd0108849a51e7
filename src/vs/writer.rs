//! Arrow → VS (spec §13.2–13.5, §14.2): writing a new file, appending points crash-safely,
//! deleting a point in place and compacting.
//!
//! `plan` reads the schema into a plan of how its batches become points, `encode` writes the
//! points, `msgpack` the app data of Struct and plain columns; `in_place` appends to, deletes
//! from and compacts existing files. This file holds the options and the [`Writer`] of new
//! files.

mod encode;
mod in_place;
mod msgpack;
mod plan;

use std::io::Write;
use std::path::Path;

use arrow_array::{RecordBatch, RecordBatchReader};
use arrow_schema::{DataType, SchemaRef};

use self::plan::Plan;
use super::codec;
use super::lock::{self, LockKind, LockWait};
use super::mapping::*;
use crate::atomic::{AtomicFile, Destination, StreamOutput};
use crate::error::{Error, Result};
use crate::write::{BatchWriter, WriteSummary};

pub use self::in_place::{
    append, compact, delete_ordinal, delete_point, AppendSummary, CompactSummary,
};

/// Options of the VS [`Writer`] and of [`append`]: `Default` and a `with_…` setter per
/// setting, as the other formats' `WriterOptions`. A vector or app data column that is not
/// there, or a compression the file cannot hold, is refused by [`Writer::try_new`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WriterOptions {
    compression: Option<Compression>,
    vector_column: String,
    app_data_column: String,
    lock: LockWait,
    lenient_eof: bool,
    durable: bool,
}

impl Default for WriterOptions {
    fn default() -> Self {
        WriterOptions {
            compression: None,
            vector_column: VECTOR_COLUMN.to_owned(),
            app_data_column: APP_DATA_COLUMN.to_owned(),
            lock: LockWait::Block,
            lenient_eof: false,
            durable: true,
        }
    }
}

impl WriterOptions {
    /// Vector compression (default: the schema's `vs.pack` when 0–2, the appended file's
    /// `pack` for [`append`], else none).
    pub fn with_compression(mut self, compression: Compression) -> Self {
        self.compression = Some(compression);
        self
    }

    /// The input column that holds the vectors (default `"vector"`).
    pub fn with_vector_column(mut self, name: impl Into<String>) -> Self {
        self.vector_column = name.into();
        self
    }

    /// The input column that holds the points' app data (default `"app_data"`).
    pub fn with_app_data_column(mut self, name: impl Into<String>) -> Self {
        self.app_data_column = name.into();
        self
    }

    /// Whether to wait for the file's lock (default [`LockWait::Block`]).
    pub fn with_lock(mut self, lock: LockWait) -> Self {
        self.lock = lock;
        self
    }

    /// [`append`]: a file that ends at a block boundary without `'$'` gets one first (default
    /// `false`: such a file is refused).
    pub fn with_lenient_eof(mut self, lenient: bool) -> Self {
        self.lenient_eof = lenient;
        self
    }

    /// Whether the writer flushes the new file to disk (fsync) before renaming it into place
    /// (default `true`). Without, the rename still makes it appear whole, but a crash soon
    /// after may lose it. An append always flushes.
    pub fn with_durable(mut self, durable: bool) -> Self {
        self.durable = durable;
        self
    }
}

/// An invalid-argument error: what the caller asked for does not fit VS.
fn arg(message: impl Into<String>) -> Error {
    Error::invalid_argument(message)
}

/// Writes record batches into a new VS file (temporary file + rename, spec §13.2).
pub struct Writer {
    out: Option<StreamOutput>,
    /// The column types the writer was made for; a batch of others is refused, not decoded.
    types: Vec<DataType>,
    plan: Plan,
    options: WriterOptions,
    rows: u64,
    buf: Vec<u8>,
}

impl Writer {
    /// Starts writing a VS file at `path` for batches of `schema`. Nothing appears at `path` until
    /// [`Writer::finish`].
    pub fn try_new(
        path: impl AsRef<Path>,
        schema: SchemaRef,
        options: WriterOptions,
    ) -> Result<Writer> {
        Writer::start(Destination::File(path.as_ref().into()), schema, options)
    }

    /// Like [`Writer::try_new`], but the file goes into `sink` (a pipe, a socket, a buffer) as
    /// it is written, without the lock a file on disk is replaced under. A failed write may
    /// leave part of the file in the sink.
    pub fn try_new_to_sink(
        sink: impl Write + Send + 'static,
        schema: SchemaRef,
        options: WriterOptions,
    ) -> Result<Writer> {
        Writer::start(Destination::sink(sink), schema, options)
    }

    fn start(output: Destination, schema: SchemaRef, options: WriterOptions) -> Result<Writer> {
        let path = output.name().to_path_buf();
        let plan = Plan::new(&schema, &options, None).map_err(|e| e.with_file(&path))?;
        let mut out = output.open(options.durable)?;
        let mut head = b"VS\0\0".to_vec();
        plan.meta_block(&mut head);
        out.write_all(&head)
            .map_err(|e| Error::from(e).with_file(&path))?;
        Ok(Writer {
            out: Some(out),
            types: schema
                .fields()
                .iter()
                .map(|f| f.data_type().clone())
                .collect(),
            plan,
            options,
            rows: 0,
            buf: Vec::new(),
        })
    }

    /// Encodes the batch's points into blocks.
    pub fn write(&mut self, batch: &RecordBatch) -> Result<()> {
        let out = self
            .out
            .as_mut()
            .ok_or_else(|| arg("the writer has failed before"))?;
        let target = out.name().to_path_buf();
        crate::write::check_batch(batch, &self.types).map_err(|e| e.with_file(&target))?;
        self.buf.clear();
        let result = self.plan.encode(batch, self.rows, &mut self.buf);
        if let Err(e) = result {
            self.out = None; // deletes the temporary file
            return Err(e.with_file(target));
        }
        out.write_all(&self.buf)
            .map_err(|e| Error::from(e).with_file(&target))?;
        self.rows += batch.num_rows() as u64;
        Ok(())
    }

    /// Writes the terminal block, then moves the file into place.
    pub fn finish(mut self) -> Result<WriteSummary> {
        let mut out = self
            .out
            .take()
            .ok_or_else(|| arg("the writer has failed before"))?;
        let target = out.name().to_path_buf();
        out.write_all(&[codec::TERMINAL])
            .map_err(|e| Error::from(e).with_file(&target))?;
        match out {
            StreamOutput::File(file) => commit_over(file, &target, self.options.lock)?,
            other => other.commit()?,
        }
        Ok(WriteSummary {
            rows: self.rows,
            warnings: Vec::new(),
        })
    }
}

/// Renames a finished temporary file over `target` under the exclusive lock of the file it
/// replaces (the commit also flushes the directory, so the rename is durable).
fn commit_over(out: AtomicFile, target: &Path, wait: LockWait) -> Result<()> {
    let guard = if target.exists() {
        Some(lock::open_locked(target, LockKind::Exclusive, wait)?)
    } else {
        None
    };
    out.commit()?;
    drop(guard);
    Ok(())
}

impl BatchWriter for Writer {
    fn write(&mut self, batch: &RecordBatch) -> Result<()> {
        Writer::write(self, batch)
    }
    fn finish(self: Box<Self>) -> Result<WriteSummary> {
        Writer::finish(*self)
    }
}

/// A convenience: every batch of `reader` into a new file.
pub fn write_file(
    path: impl AsRef<Path>,
    reader: impl RecordBatchReader,
    options: WriterOptions,
) -> Result<WriteSummary> {
    let mut writer = Writer::try_new(path, reader.schema(), options)?;
    for batch in reader {
        writer.write(&batch?)?;
    }
    writer.finish()
}
