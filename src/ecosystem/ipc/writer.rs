//! Writing Arrow IPC: a file (the schema first, the footer at the end) or a stream (the schema
//! first, the end-of-stream marker at the end), through `arrow::ipc::writer`.

use std::path::{Path, PathBuf};

use arrow::ipc::writer::{FileWriter, IpcWriteOptions, StreamWriter};
use arrow::ipc::CompressionType;
use arrow_array::RecordBatch;
use arrow_schema::{ArrowError, Schema, SchemaRef};

use super::super::{split_compression, InFile};
use crate::atomic::{Destination, StreamOutput};
use crate::error::{Error, Result};
use crate::options::WriteOptions;
use crate::write::{BatchWriter, WriteSummary};

/// The IPC body compression named by a compression option: `none`, `lz4` or `zstd[:level]`.
pub fn compression(spec: Option<&str>) -> Result<(Option<CompressionType>, Option<i32>)> {
    let Some(spec) = spec else {
        return Ok((None, None));
    };
    let (name, level) = split_compression(spec)?;
    match (name.as_str(), level) {
        ("none" | "uncompressed", None) => Ok((None, None)),
        ("lz4" | "lz4_frame", None) => Ok((Some(CompressionType::LZ4_FRAME), None)),
        ("zstd", level) => Ok((Some(CompressionType::ZSTD), level)),
        ("none" | "uncompressed" | "lz4" | "lz4_frame", Some(_)) => Err(Error::invalid_argument(
            format!("the {name} codec takes no level: {spec:?}"),
        )),
        _ => Err(Error::invalid_argument(format!(
            "unknown Arrow IPC compression {spec:?}; use none, lz4 or zstd (zstd:LEVEL for a level)"
        ))),
    }
}

enum Inner {
    File(FileWriter<StreamOutput>),
    Stream(StreamWriter<StreamOutput>),
}

impl Inner {
    /// An IPC file writer: the schema now, the footer at the end.
    fn file(
        out: StreamOutput,
        schema: &Schema,
        options: IpcWriteOptions,
    ) -> std::result::Result<Inner, ArrowError> {
        FileWriter::try_new_with_options(out, schema, options).map(Inner::File)
    }

    /// An IPC stream writer: the schema now, the end-of-stream marker at the end.
    fn stream(
        out: StreamOutput,
        schema: &Schema,
        options: IpcWriteOptions,
    ) -> std::result::Result<Inner, ArrowError> {
        StreamWriter::try_new_with_options(out, schema, options).map(Inner::Stream)
    }
}

/// Writes record batches into a new Arrow IPC file or stream.
pub struct Writer {
    inner: Inner,
    path: PathBuf,
    rows: u64,
}

impl Writer {
    fn options(path: &Path, options: &WriteOptions) -> Result<IpcWriteOptions> {
        let (codec, level) =
            compression(options.compression.as_deref()).map_err(|e| e.with_file(path))?;
        let usage = |e: arrow_schema::ArrowError| {
            Error::invalid_argument(format!("Arrow IPC compression: {e}")).with_file(path)
        };
        IpcWriteOptions::default()
            .try_with_compression(codec)
            .and_then(|o| o.try_with_compression_level(level))
            .map_err(usage)
    }

    /// An IPC file (`.arrow`, `.feather`): `options.compression` may be `lz4` or `zstd`.
    pub fn try_new_file(path: &Path, schema: SchemaRef, options: &WriteOptions) -> Result<Writer> {
        Writer::start(Destination::File(path.into()), schema, options, Inner::file)
    }

    /// Like [`Writer::try_new_file`], but the file goes into `sink` as it is written (the
    /// footer last). A failed write may leave part of it in the sink; errors name the file
    /// [`SINK_NAME`](crate::atomic::SINK_NAME).
    pub fn try_new_file_to_sink(
        sink: impl std::io::Write + Send + 'static,
        schema: SchemaRef,
        options: &WriteOptions,
    ) -> Result<Writer> {
        Writer::start(Destination::sink(sink), schema, options, Inner::file)
    }

    /// Like [`Writer::try_new_stream`], but the stream goes into `sink` as it is written.
    pub fn try_new_stream_to_sink(
        sink: impl std::io::Write + Send + 'static,
        schema: SchemaRef,
        options: &WriteOptions,
    ) -> Result<Writer> {
        Writer::start(Destination::sink(sink), schema, options, Inner::stream)
    }

    /// An IPC stream (`.arrows`, `-` for standard output): `options.compression` may be `lz4`
    /// or `zstd`.
    pub fn try_new_stream(
        path: &Path,
        schema: SchemaRef,
        options: &WriteOptions,
    ) -> Result<Writer> {
        Writer::start(
            Destination::FileOrStdout(path.into()),
            schema,
            options,
            Inner::stream,
        )
    }

    /// Checks the options, then opens the output and starts the file or stream in it.
    fn start(
        output: Destination,
        schema: SchemaRef,
        options: &WriteOptions,
        inner: fn(StreamOutput, &Schema, IpcWriteOptions) -> std::result::Result<Inner, ArrowError>,
    ) -> Result<Writer> {
        let path = output.name().to_path_buf();
        let ipc_options = Self::options(&path, options)?;
        let inner = inner(output.open(options.durable)?, &schema, ipc_options).in_file(&path)?;
        Ok(Writer {
            inner,
            path,
            rows: 0,
        })
    }
}

impl BatchWriter for Writer {
    fn write(&mut self, batch: &RecordBatch) -> Result<()> {
        match &mut self.inner {
            Inner::File(w) => w.write(batch),
            Inner::Stream(w) => w.write(batch),
        }
        .in_file(&self.path)?;
        self.rows += batch.num_rows() as u64;
        Ok(())
    }

    fn finish(self: Box<Self>) -> Result<WriteSummary> {
        match self.inner {
            Inner::File(w) => w.into_inner().in_file(&self.path)?.commit()?,
            Inner::Stream(w) => w.into_inner().in_file(&self.path)?.commit()?,
        }
        Ok(WriteSummary {
            rows: self.rows,
            warnings: Vec::new(),
        })
    }
}
