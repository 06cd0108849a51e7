//! The Arrow IPC formats: the file (Feather v2, `ARROW1` … footer … `ARROW1`) and the stream
//! (a sequence of encapsulated messages), through `arrow::ipc`.

use std::fs::File;
use std::io::{BufReader, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use arrow::ipc::reader::{FileReader, StreamReader};
use arrow::ipc::writer::{FileWriter, IpcWriteOptions, StreamWriter};
use arrow::ipc::{CompressionType, MessageHeader};
use arrow_array::{RecordBatch, RecordBatchReader};
use arrow_schema::SchemaRef;
use serde::Serialize;

use super::{Adapted, ProjectionPlan};
use crate::atomic::AtomicFile;
use crate::error::ResultExt;
use crate::{BatchWriter, Error, ErrorClass, ReadOptions, Result, WriteOptions, WriteSummary};

pub(crate) fn open_file(
    path: &Path,
    options: &ReadOptions,
) -> Result<Box<dyn RecordBatchReader + Send>> {
    let open = |projection: Option<Vec<usize>>| -> Result<FileReader<BufReader<File>>> {
        let file = File::open(path).in_file(path)?;
        FileReader::try_new_buffered(file, projection).in_file(path)
    };
    let reader = open(None)?;
    let (reader, order) = match ProjectionPlan::new(options, &reader.schema(), path)? {
        Some(plan) => (open(Some(plan.read))?, plan.order),
        None => (reader, None),
    };
    let schema = reader.schema();
    Ok(Box::new(Adapted::new(
        reader, schema, path, order, options,
    )?))
}

pub(crate) fn open_stream(
    path: &Path,
    options: &ReadOptions,
) -> Result<Box<dyn RecordBatchReader + Send>> {
    let open = |projection: Option<Vec<usize>>| -> Result<StreamReader<BufReader<File>>> {
        let file = File::open(path).in_file(path)?;
        StreamReader::try_new_buffered(file, projection).in_file(path)
    };
    let reader = open(None)?;
    let (reader, order) = match ProjectionPlan::new(options, &reader.schema(), path)? {
        Some(plan) => (open(Some(plan.read))?, plan.order),
        None => (reader, None),
    };
    let schema = reader.schema();
    Ok(Box::new(Adapted::new(
        reader, schema, path, order, options,
    )?))
}

/// The IPC body compression named by a compression option: `none`, `lz4` or `zstd[:level]`.
pub fn compression(spec: Option<&str>) -> Result<(Option<CompressionType>, Option<i32>)> {
    let Some(spec) = spec else {
        return Ok((None, None));
    };
    let (name, level) = super::split_compression(spec)?;
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
    File(FileWriter<AtomicFile>),
    Stream(StreamWriter<AtomicFile>),
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
        let ipc_options = Self::options(path, options)?;
        let file = AtomicFile::create(path)?;
        let inner = FileWriter::try_new_with_options(file, &schema, ipc_options).in_file(path)?;
        Ok(Writer {
            inner: Inner::File(inner),
            path: path.to_path_buf(),
            rows: 0,
        })
    }

    /// An IPC stream (`.arrows`): `options.compression` may be `lz4` or `zstd`.
    pub fn try_new_stream(
        path: &Path,
        schema: SchemaRef,
        options: &WriteOptions,
    ) -> Result<Writer> {
        let ipc_options = Self::options(path, options)?;
        let file = AtomicFile::create(path)?;
        let inner = StreamWriter::try_new_with_options(file, &schema, ipc_options).in_file(path)?;
        Ok(Writer {
            inner: Inner::Stream(inner),
            path: path.to_path_buf(),
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
        let file = match self.inner {
            Inner::File(w) => w.into_inner(),
            Inner::Stream(w) => w.into_inner(),
        }
        .in_file(&self.path)?;
        file.commit()?;
        Ok(WriteSummary {
            rows: self.rows,
            warnings: Vec::new(),
        })
    }
}

/// The structure of an Arrow IPC file or stream: its record batches and dictionaries, read
/// from the message headers without decoding any body.
#[derive(Debug, Clone, Serialize)]
pub struct IpcInfo {
    /// The metadata version (`V5` for everything written since Arrow 1.0).
    pub version: String,
    pub file_size: u64,
    pub num_rows: u64,
    pub dictionaries: usize,
    pub batches: Vec<IpcBatch>,
    /// The footer's (file) or the schema message's (stream) custom metadata keys.
    pub metadata_keys: Vec<String>,
    /// A stream only: whether it ends with the end-of-stream marker.
    pub end_of_stream_marker: Option<bool>,
}

/// One record batch message.
#[derive(Debug, Clone, Serialize)]
pub struct IpcBatch {
    pub rows: u64,
    /// Where its message starts in the file.
    pub offset: u64,
    /// Bytes of the message's metadata (with its length prefix and padding).
    pub metadata_length: u64,
    /// Bytes of its body (the buffers).
    pub body_length: u64,
    /// The body codec, `None` when uncompressed.
    pub compression: Option<String>,
}

fn bad(message: impl Into<String>) -> Error {
    Error::new(ErrorClass::Arrow, message)
}

/// What one message's metadata says.
struct MessageInfo {
    header: MessageHeader,
    version: String,
    body_length: u64,
    rows: u64,
    compression: Option<String>,
    metadata_keys: Vec<String>,
}

/// Parses one encapsulated message's flatbuffer.
fn parse_message(bytes: &[u8], offset: u64) -> Result<MessageInfo> {
    let message = arrow::ipc::root_as_message(bytes).map_err(|e| {
        bad(format!("the message is not a valid Arrow IPC message: {e}")).at_offset(offset)
    })?;
    let body_length = u64::try_from(message.bodyLength())
        .map_err(|_| bad("the message body length is negative").at_offset(offset))?;
    let (rows, compression) = match message.header_as_record_batch() {
        Some(batch) => (
            u64::try_from(batch.length())
                .map_err(|_| bad("the record batch length is negative").at_offset(offset))?,
            batch.compression().map(|c| codec_name(c.codec())),
        ),
        None => (0, None),
    };
    let metadata_keys = message
        .header_as_schema()
        .and_then(|s| s.custom_metadata())
        .map(|kv| {
            kv.iter()
                .filter_map(|kv| kv.key().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    Ok(MessageInfo {
        header: message.header_type(),
        version: format!("{:?}", message.version()),
        body_length,
        rows,
        compression,
        metadata_keys,
    })
}

fn codec_name(codec: CompressionType) -> String {
    match codec {
        CompressionType::LZ4_FRAME => "lz4".to_string(),
        CompressionType::ZSTD => "zstd".to_string(),
        other => format!("{other:?}"),
    }
}

/// Splits an encapsulated message's metadata (`0xFFFFFFFF`, length, flatbuffer, padding, or
/// the pre-1.0 form without the marker) into the flatbuffer.
fn message_flatbuffer(bytes: &[u8], offset: u64) -> Result<&[u8]> {
    let word = |at: usize| -> Option<u32> {
        bytes
            .get(at..at + 4)
            .and_then(|b| b.try_into().ok())
            .map(u32::from_le_bytes)
    };
    let (start, len): (usize, Option<u32>) = match word(0) {
        Some(0xFFFF_FFFF) => (8, word(4)),
        other => (4, other),
    };
    let len = len.ok_or_else(|| bad("a message is cut short").at_offset(offset))? as usize;
    bytes
        .get(start..start.saturating_add(len))
        .ok_or_else(|| bad("a message's metadata runs past its block").at_offset(offset))
}

/// Reads the footer of an Arrow IPC file and the header of each of its record batches.
pub fn describe_file(path: &Path) -> Result<IpcInfo> {
    describe_file_inner(path).map_err(|e| e.with_file(path))
}

fn describe_file_inner(path: &Path) -> Result<IpcInfo> {
    let mut file = File::open(path)?;
    let size = file.metadata()?.len();
    if size < 18 {
        return Err(bad(format!(
            "the file is {size} bytes, too small for an Arrow IPC file"
        )));
    }
    let mut tail = [0u8; 10];
    file.seek(SeekFrom::End(-10))?;
    file.read_exact(&mut tail)?;
    if &tail[4..] != b"ARROW1" {
        return Err(bad("the file does not end in \"ARROW1\"").at_offset(size - 6));
    }
    let footer_len = u64::from(u32::from_le_bytes([tail[0], tail[1], tail[2], tail[3]]));
    if footer_len > size - 18 {
        return Err(bad(format!(
            "the footer length {footer_len} is larger than the file"
        ))
        .at_offset(size - 10));
    }
    let footer_start = size - 10 - footer_len;
    let mut footer_bytes = vec![0u8; footer_len as usize];
    file.seek(SeekFrom::Start(footer_start))?;
    file.read_exact(&mut footer_bytes)?;
    let footer = arrow::ipc::root_as_footer(&footer_bytes).map_err(|e| {
        bad(format!("the footer is not a valid Arrow IPC footer: {e}")).at_offset(footer_start)
    })?;

    let mut batches = Vec::new();
    for block in footer.recordBatches().iter().flatten() {
        let offset = u64::try_from(block.offset()).ok();
        let meta_len = u64::try_from(block.metaDataLength()).ok();
        let body_len = u64::try_from(block.bodyLength()).ok();
        let (Some(offset), Some(meta_len), Some(body_len)) = (offset, meta_len, body_len) else {
            return Err(bad("a record batch block has a negative offset or length"));
        };
        if offset
            .checked_add(meta_len)
            .and_then(|end| end.checked_add(body_len))
            .is_none_or(|end| end > footer_start)
        {
            return Err(bad(format!(
                "the record batch block at {offset} (+{meta_len} +{body_len}) runs past the data"
            )));
        }
        let mut meta = vec![0u8; meta_len as usize];
        file.seek(SeekFrom::Start(offset))?;
        file.read_exact(&mut meta)?;
        let info = parse_message(message_flatbuffer(&meta, offset)?, offset)?;
        if info.header != MessageHeader::RecordBatch {
            return Err(bad(format!(
                "the footer points at a {:?} message where a record batch should be",
                info.header
            ))
            .at_offset(offset));
        }
        batches.push(IpcBatch {
            rows: info.rows,
            offset,
            metadata_length: meta_len,
            body_length: body_len,
            compression: info.compression,
        });
    }
    Ok(IpcInfo {
        version: format!("{:?}", footer.version()),
        file_size: size,
        num_rows: batches.iter().map(|b| b.rows).sum(),
        dictionaries: footer.dictionaries().map_or(0, |d| d.len()),
        batches,
        metadata_keys: footer
            .custom_metadata()
            .map(|kv| {
                kv.iter()
                    .filter_map(|kv| kv.key().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default(),
        end_of_stream_marker: None,
    })
}

/// Walks the messages of an Arrow IPC stream, skipping their bodies.
pub fn describe_stream(path: &Path) -> Result<IpcInfo> {
    describe_stream_inner(path).map_err(|e| e.with_file(path))
}

fn describe_stream_inner(path: &Path) -> Result<IpcInfo> {
    let file = File::open(path)?;
    let size = file.metadata()?.len();
    let mut reader = BufReader::new(file);
    let mut pos = 0u64;
    let mut info = IpcInfo {
        version: String::new(),
        file_size: size,
        num_rows: 0,
        dictionaries: 0,
        batches: Vec::new(),
        metadata_keys: Vec::new(),
        end_of_stream_marker: Some(false),
    };
    let mut seen_schema = false;
    loop {
        let start = pos;
        if pos == size {
            break;
        }
        let mut word = [0u8; 4];
        let read_word = |reader: &mut BufReader<File>, word: &mut [u8; 4], pos: &mut u64| {
            reader.read_exact(word).map_err(|_| {
                bad("the stream is cut short inside a message header").at_offset(*pos)
            })?;
            *pos += 4;
            Ok::<u32, Error>(u32::from_le_bytes(*word))
        };
        let mut len = read_word(&mut reader, &mut word, &mut pos)?;
        if len == 0xFFFF_FFFF {
            len = read_word(&mut reader, &mut word, &mut pos)?;
        }
        if len == 0 {
            info.end_of_stream_marker = Some(true);
            break;
        }
        let len = u64::from(len);
        if len > size - pos {
            return Err(bad(format!(
                "a message's metadata length {len} runs past the end of the stream"
            ))
            .at_offset(start));
        }
        let mut meta = vec![0u8; len as usize];
        reader.read_exact(&mut meta)?;
        pos += len;
        let message = parse_message(&meta, start)?;
        if message.body_length > size - pos {
            return Err(bad(format!(
                "a message's body length {} runs past the end of the stream",
                message.body_length
            ))
            .at_offset(start));
        }
        let skip = i64::try_from(message.body_length)
            .map_err(|_| bad("a message's body length is out of range").at_offset(start))?;
        reader.seek_relative(skip)?;
        pos += message.body_length;
        match message.header {
            MessageHeader::Schema => {
                if seen_schema {
                    return Err(bad("a second schema message in the stream").at_offset(start));
                }
                seen_schema = true;
                info.version = message.version;
                info.metadata_keys = message.metadata_keys;
            }
            MessageHeader::DictionaryBatch => info.dictionaries += 1,
            MessageHeader::RecordBatch => {
                info.num_rows += message.rows;
                info.batches.push(IpcBatch {
                    rows: message.rows,
                    offset: start,
                    metadata_length: pos - start - message.body_length,
                    body_length: message.body_length,
                    compression: message.compression,
                })
            }
            other => {
                return Err(
                    bad(format!("an unexpected {other:?} message in the stream")).at_offset(start),
                )
            }
        }
        if !seen_schema {
            return Err(bad("the stream does not start with a schema message").at_offset(start));
        }
    }
    if !seen_schema {
        return Err(bad("the stream is empty: it has no schema message"));
    }
    Ok(info)
}
