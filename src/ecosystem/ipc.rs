//! The Arrow IPC formats: the file (Feather v2, `ARROW1` … footer … `ARROW1`) and the stream
//! (a sequence of encapsulated messages), through `arrow::ipc`. Reading and describing are
//! here, writing in `ipc/writer.rs`.
//!
//! Reading walks the messages itself and checks each one against its body before `arrow::ipc`
//! decodes it: buffers that lie outside the body, negative lengths, and compressed buffers whose
//! length prefix does not match what they decompress to. Arrow's decoder trusts those and would
//! panic, or abort on an impossible allocation, on a damaged file; what it still panics on after
//! the checks is contained by `panic_guard`.
//!
//! The walker works around these arrow-rs weaknesses: a stream message's body length allocated
//! before it is read (apache/arrow-rs#10521, fixed by #10522), a file block's body zero-filled
//! before it is read (apache/arrow-rs#10921, open), a compressed buffer shorter than its length
//! prefix (apache/arrow-rs#9801, fixed by #9802), and buffers or nodes outside the body
//! (apache/arrow-rs#541, #7124, #8931). It can give way to `arrow::ipc`'s own readers when the
//! arrow release arrowsmith depends on has all of these fixed and the IPC regression tests of
//! the fuzz findings (docs/reliability.md) pass on those readers alone.

use std::collections::{HashMap, VecDeque};
use std::fs::File;
use std::io::{self, BufReader, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow::ipc::convert::fb_to_schema;
use arrow::ipc::reader::{read_dictionary, read_record_batch};
use arrow::ipc::{CompressionType, MessageHeader};
use arrow_array::{ArrayRef, RecordBatch, RecordBatchReader};
use arrow_buffer::{Buffer, MutableBuffer};
use arrow_schema::{ArrowError, SchemaRef};
use serde::Serialize;

use super::object::{ObjectReader, HEADER_WINDOW};
use super::{Adapted, InFile, ProjectionPlan};
use crate::error::{Error, ErrorClass, Result};
use crate::panic_guard::quietly;
use crate::scan::{FragmentRange, ScanOptions};
use crate::source::ByteSource;

mod writer;

pub use writer::{compression, Writer};

pub(crate) fn open_file(
    path: &Path,
    options: &ScanOptions,
) -> Result<Box<dyn RecordBatchReader + Send>> {
    let reader = IpcReader::open_file(path).map_err(|e| e.with_file(path))?;
    select_batches(reader, path, options)
}

/// Reads a remote Arrow IPC file: its footer (its length, then itself, each fetched exactly),
/// then the blocks of the dictionaries and of the batches asked for, exactly as the footer
/// places them, as many in one request as fit in [`BLOCK_FETCH_BYTES`].
pub(crate) fn open_file_source(
    source: Arc<dyn ByteSource>,
    options: &ScanOptions,
) -> Result<Box<dyn RecordBatchReader + Send>> {
    let name = PathBuf::from(source.location());
    let size = source.size();
    let footer_reader = Box::new(ObjectReader::new(Arc::clone(&source)));
    let blocks = BlockFile::Ranges {
        source,
        held: VecDeque::new(),
    };
    let reader = IpcReader::open_file_from(footer_reader, size, Some(blocks))
        .map_err(|e| e.with_file(&name))?;
    select_batches(reader, &name, options)
}

fn select_batches(
    mut reader: IpcReader,
    path: &Path,
    options: &ScanOptions,
) -> Result<Box<dyn RecordBatchReader + Send>> {
    if let Source::File { blocks, .. } = &mut reader.source {
        match options.range {
            None | Some(FragmentRange::Whole) => {}
            Some(FragmentRange::Batches { start, end }) => {
                let count = blocks.len() as u64;
                if start > end || end > count {
                    return Err(Error::invalid_argument(format!(
                        "batches {start}..{end} are not a range of the file's {count} record batches"
                    ))
                    .with_file(path));
                }
                let chosen: Vec<Block> = blocks
                    .as_slice()
                    .get(start as usize..end as usize)
                    .unwrap_or_default()
                    .to_vec();
                *blocks = chosen.into_iter();
            }
            Some(other) => {
                return Err(other
                    .wrong_unit("Arrow IPC file", "record batches")
                    .with_file(path))
            }
        }
    }
    adapt(reader, path, options)
}

pub(crate) fn open_stream(
    path: &Path,
    options: &ScanOptions,
) -> Result<Box<dyn RecordBatchReader + Send>> {
    let reader = IpcReader::open_stream(path).map_err(|e| e.with_file(path))?;
    adapt(reader, path, options)
}

/// Reads a remote Arrow IPC stream front to back, through windows of the object.
pub(crate) fn open_stream_source(
    source: Arc<dyn ByteSource>,
    options: &ScanOptions,
) -> Result<Box<dyn RecordBatchReader + Send>> {
    let name = PathBuf::from(source.location());
    let size = source.size();
    let reader = IpcReader::open_stream_from(Box::new(ObjectReader::new(source)), Some(size))
        .map_err(|e| e.with_file(&name))?;
    adapt(reader, &name, options)
}

/// What errors name as the file when the stream comes from standard input.
pub const STDIN_NAME: &str = "<stdin>";

/// An Arrow IPC stream read front to back from `input`: standard input or another stream
/// (a FIFO, a socket), e.g. piped from Polars, DataFusion or pyarrow; errors name `path`. Its
/// size is unknown, so buffers grow with the bytes that actually arrive rather than with the
/// lengths the messages claim.
pub(crate) fn read_stream(
    input: Box<dyn Read + Send>,
    path: &Path,
    options: &ScanOptions,
) -> Result<Box<dyn RecordBatchReader + Send>> {
    let reader = IpcReader::open_stream_from(input, None).map_err(|e| e.with_file(path))?;
    adapt(reader, path, options)
}

fn adapt(
    mut reader: IpcReader,
    path: &Path,
    options: &ScanOptions,
) -> Result<Box<dyn RecordBatchReader + Send>> {
    let mut schema = reader.schema.clone();
    let mut order = None;
    if let Some(plan) = ProjectionPlan::new(options, &schema, path)? {
        schema = Arc::new(schema.project(&plan.read).in_file(path)?);
        reader.projection = Some(plan.read);
        order = plan.order;
    }
    Ok(Box::new(Adapted::new(
        reader, schema, path, order, options,
    )?))
}

/// Where one message lies in a file: its metadata (with prefix and padding), then its body.
#[derive(Debug, Clone, Copy)]
struct Block {
    offset: u64,
    meta_len: u64,
    body_len: u64,
}

impl Block {
    /// Where the whole message lies, checked by [`blocks`] to fit before the footer.
    fn range(&self) -> std::ops::Range<u64> {
        self.offset..self.offset + self.meta_len + self.body_len
    }
}

/// The most bytes of blocks a remote file's reader fetches in one request (and holds fetched
/// ahead of the batch it decodes).
const BLOCK_FETCH_BYTES: u64 = 64 << 20;

/// A file read at any offset: a local file, or a remote object's [`ObjectReader`].
trait ReadSeek: Read + Seek + Send {}

impl<T: Read + Seek + Send> ReadSeek for T {}

/// Where the blocks of a file are read from.
enum BlockFile {
    /// A local file (or a reader given), read at each block's offset.
    Seek(BufReader<Box<dyn ReadSeek>>),
    /// A remote object: each block is fetched as the footer places it, the blocks to be read
    /// next in the same request.
    Ranges {
        source: Arc<dyn ByteSource>,
        /// Blocks fetched and not yet read, in the order they are to be read.
        held: VecDeque<(u64, Buffer)>,
    },
}

impl BlockFile {
    /// The metadata and body of `block`, which `upcoming` are to follow.
    fn read(&mut self, block: Block, upcoming: &[Block]) -> Result<(Vec<u8>, Buffer)> {
        let (source, held) = match self {
            BlockFile::Seek(file) => {
                file.seek(SeekFrom::Start(block.offset))?;
                let mut meta = vec![0u8; block.meta_len as usize];
                file.read_exact(&mut meta)?;
                let body = read_body(file, block.body_len)?;
                return Ok((meta, body));
            }
            BlockFile::Ranges { source, held } => (source, held),
        };
        if held
            .front()
            .is_none_or(|(offset, _)| *offset != block.offset)
        {
            held.clear();
            let mut ranges = vec![block.range()];
            let mut bytes = block.meta_len + block.body_len;
            for next in upcoming {
                let len = next.meta_len + next.body_len;
                if bytes.saturating_add(len) > BLOCK_FETCH_BYTES {
                    break;
                }
                bytes += len;
                ranges.push(next.range());
            }
            let fetched = source.read_ranges(&ranges)?;
            held.extend(ranges.iter().map(|r| r.start).zip(fetched));
        }
        let (_, message) = held
            .pop_front()
            .filter(|(_, m)| m.len() as u64 == block.meta_len + block.body_len)
            .ok_or_else(|| bad("a block came back short of its length").at_offset(block.offset))?;
        let meta = message.as_slice()[..block.meta_len as usize].to_vec();
        // Copied out of the fetched bytes: an aligned body, as a local read gives, and the
        // request's bytes are let go once its blocks are read.
        let body = Buffer::from_slice_ref(&message.as_slice()[block.meta_len as usize..]);
        Ok((meta, body))
    }
}

enum Source {
    File {
        file: BlockFile,
        blocks: std::vec::IntoIter<Block>,
    },
    Stream {
        reader: BufReader<Box<dyn Read + Send>>,
        pos: u64,
        /// The file's size; `None` for a pipe.
        size: Option<u64>,
        finished: bool,
    },
}

/// Record batches of an IPC file or stream, each message checked before it is decoded.
struct IpcReader {
    source: Source,
    schema: SchemaRef,
    projection: Option<Vec<usize>>,
    dictionaries: HashMap<i64, ArrayRef>,
}

impl IpcReader {
    fn open_file(path: &Path) -> Result<IpcReader> {
        let file = File::open(path)?;
        let size = file.metadata()?.len();
        IpcReader::open_file_from(Box::new(file), size, None)
    }

    /// Reads the footer through `file`, and the blocks through `blocks` (through `file` when
    /// `None`).
    fn open_file_from(
        mut file: Box<dyn ReadSeek>,
        size: u64,
        blocks_from: Option<BlockFile>,
    ) -> Result<IpcReader> {
        let (footer_bytes, footer_start) = read_footer(&mut file, size)?;
        let footer = arrow::ipc::root_as_footer(&footer_bytes).map_err(|e| {
            bad(format!("the footer is not a valid Arrow IPC footer: {e}")).at_offset(footer_start)
        })?;
        let fb_schema = footer
            .schema()
            .ok_or_else(|| bad("the footer has no schema").at_offset(footer_start))?;
        if !fb_schema.endianness().equals_to_target_endianness() {
            return Err(Error::unsupported(
                "the file is big-endian; only little-endian Arrow IPC files are read",
            ));
        }
        let schema = Arc::new(schema_from_fb(fb_schema).map_err(|e| e.at_offset(footer_start))?);
        let dictionaries = blocks(footer.dictionaries(), footer_start)?;
        let batches = blocks(footer.recordBatches(), footer_start)?;
        let mut reader = IpcReader {
            source: Source::File {
                file: blocks_from.unwrap_or_else(|| BlockFile::Seek(BufReader::new(file))),
                blocks: batches.into_iter(),
            },
            schema,
            projection: None,
            dictionaries: HashMap::new(),
        };
        for (i, &block) in dictionaries.iter().enumerate() {
            if reader.read_block(block, &dictionaries[i + 1..])?.is_some() {
                return Err(
                    bad("the footer lists a record batch among the dictionaries")
                        .at_offset(block.offset),
                );
            }
        }
        Ok(reader)
    }

    fn open_stream(path: &Path) -> Result<IpcReader> {
        let file = File::open(path)?;
        let size = file.metadata()?.len();
        IpcReader::open_stream_from(Box::new(file), Some(size))
    }

    fn open_stream_from(input: Box<dyn Read + Send>, size: Option<u64>) -> Result<IpcReader> {
        let mut reader = BufReader::new(input);
        let mut pos = 0;
        let Some((meta, _body)) = next_message(&mut reader, &mut pos, size)? else {
            return Err(bad("the stream is empty: it has no schema message"));
        };
        let message = root_message(&meta, 0)?;
        let schema = message
            .header_as_schema()
            .ok_or_else(|| bad("the stream does not start with a schema message").at_offset(0))?;
        if !schema.endianness().equals_to_target_endianness() {
            return Err(Error::unsupported(
                "the stream is big-endian; only little-endian Arrow IPC streams are read",
            ));
        }
        let schema = Arc::new(schema_from_fb(schema).map_err(|e| e.at_offset(0))?);
        Ok(IpcReader {
            source: Source::Stream {
                reader,
                pos,
                size,
                finished: false,
            },
            schema,
            projection: None,
            dictionaries: HashMap::new(),
        })
    }

    /// Reads and decodes the message of a file block, which `upcoming` are to follow.
    fn read_block(&mut self, block: Block, upcoming: &[Block]) -> Result<Option<RecordBatch>> {
        let Source::File { file, .. } = &mut self.source else {
            return Ok(None);
        };
        let (meta, body) = file.read(block, upcoming)?;
        self.decode_block(block, &meta, &body)
    }

    /// Decodes the message of a file block, read.
    fn decode_block(
        &mut self,
        block: Block,
        meta: &[u8],
        body: &Buffer,
    ) -> Result<Option<RecordBatch>> {
        let flatbuffer = message_flatbuffer(meta, block.offset)?;
        self.decode(flatbuffer, body, block.offset)
    }

    fn next_batch(&mut self) -> Result<Option<RecordBatch>> {
        loop {
            let (meta, body, offset) = match &mut self.source {
                Source::File { file, blocks } => match blocks.next() {
                    Some(block) => {
                        let (meta, body) = file.read(block, blocks.as_slice())?;
                        match self.decode_block(block, &meta, &body)? {
                            Some(batch) => return Ok(Some(batch)),
                            None => {
                                return Err(bad(
                                    "the footer lists a dictionary among the record batches",
                                )
                                .at_offset(block.offset))
                            }
                        }
                    }
                    None => return Ok(None),
                },
                Source::Stream {
                    reader,
                    pos,
                    size,
                    finished,
                } => {
                    if *finished {
                        return Ok(None);
                    }
                    let offset = *pos;
                    match next_message(reader, pos, *size)? {
                        Some((meta, body)) => (meta, body, offset),
                        None => {
                            *finished = true;
                            return Ok(None);
                        }
                    }
                }
            };
            if let Some(batch) = self.decode(&meta, &body, offset)? {
                return Ok(Some(batch));
            }
        }
    }

    /// Decodes a record batch, or records a dictionary (and returns `None`).
    fn decode(
        &mut self,
        flatbuffer: &[u8],
        body: &Buffer,
        offset: u64,
    ) -> Result<Option<RecordBatch>> {
        let message = root_message(flatbuffer, offset)?;
        let version = message.version();
        match message.header_type() {
            MessageHeader::RecordBatch => {
                let batch = message.header_as_record_batch().ok_or_else(|| {
                    bad("a record batch message without its header").at_offset(offset)
                })?;
                check_batch(batch, body, offset)?;
                let decoded = quietly(|| {
                    read_record_batch(
                        body,
                        batch,
                        self.schema.clone(),
                        &self.dictionaries,
                        self.projection.as_deref(),
                        &version,
                    )
                })
                .map_err(|why| {
                    bad(format!("the record batch is malformed: {why}")).at_offset(offset)
                })?
                .map_err(|e| Error::from(e).at_offset(offset))?;
                Ok(Some(decoded))
            }
            MessageHeader::DictionaryBatch => {
                let dictionary = message.header_as_dictionary_batch().ok_or_else(|| {
                    bad("a dictionary batch message without its header").at_offset(offset)
                })?;
                let data = dictionary
                    .data()
                    .ok_or_else(|| bad("a dictionary batch without its data").at_offset(offset))?;
                check_batch(data, body, offset)?;
                let dictionaries = &mut self.dictionaries;
                quietly(|| read_dictionary(body, dictionary, &self.schema, dictionaries, &version))
                    .map_err(|why| {
                        bad(format!("the dictionary batch is malformed: {why}")).at_offset(offset)
                    })?
                    .map_err(|e| Error::from(e).at_offset(offset))?;
                Ok(None)
            }
            MessageHeader::Schema => Err(bad("a second schema message").at_offset(offset)),
            other => Err(bad(format!("an unexpected {other:?} message")).at_offset(offset)),
        }
    }
}

impl Iterator for IpcReader {
    type Item = Result<RecordBatch, ArrowError>;

    fn next(&mut self) -> Option<Self::Item> {
        self.next_batch().map_err(ArrowError::from).transpose()
    }
}

fn bad(message: impl Into<String>) -> Error {
    Error::new(ErrorClass::Arrow, message)
}

fn root_message(flatbuffer: &[u8], offset: u64) -> Result<arrow::ipc::Message<'_>> {
    arrow::ipc::root_as_message(flatbuffer).map_err(|e| {
        bad(format!("the message is not a valid Arrow IPC message: {e}")).at_offset(offset)
    })
}

/// Reads `len` bytes (already checked to lie in the file) into an aligned buffer.
fn read_body(reader: &mut impl Read, len: u64) -> Result<Buffer> {
    let len = usize::try_from(len).map_err(|_| bad("a message body is too large"))?;
    let mut body = MutableBuffer::from_len_zeroed(len);
    reader.read_exact(body.as_slice_mut())?;
    Ok(body.into())
}

/// Reads `len` bytes whose presence nothing has vouched for (a pipe): the buffer grows with the
/// bytes that arrive, so a damaged length costs no more memory than the input itself.
fn read_unvouched(reader: &mut impl Read, len: u64, pos: u64, what: &str) -> Result<Vec<u8>> {
    let mut bytes = Vec::new();
    reader.take(len).read_to_end(&mut bytes)?;
    if bytes.len() as u64 != len {
        return Err(bad(format!(
            "the stream ends inside a message's {what}: {len} bytes announced, {} there",
            bytes.len()
        ))
        .at_offset(pos));
    }
    Ok(bytes)
}

/// A little-endian word, or `None` when the input ends before its first byte.
fn read_word_or_end(reader: &mut impl Read) -> io::Result<Option<u32>> {
    let mut word = [0u8; 4];
    let mut filled = 0;
    while filled < word.len() {
        match reader.read(&mut word[filled..]) {
            Ok(0) if filled == 0 => return Ok(None),
            Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
            Ok(n) => filled += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(Some(u32::from_le_bytes(word)))
}

/// The next message of a stream at `pos`: its flatbuffer (with padding) and its body, or `None`
/// at the end-of-stream marker or the end of the file.
fn next_message(
    reader: &mut impl Read,
    pos: &mut u64,
    size: Option<u64>,
) -> Result<Option<(Vec<u8>, Buffer)>> {
    let Some(header) = next_message_header(reader, pos, size)? else {
        return Ok(None);
    };
    let body = match size {
        Some(_) => read_body(reader, header.body_len)?,
        None => Buffer::from_vec(read_unvouched(reader, header.body_len, *pos, "body")?),
    };
    *pos += header.body_len;
    Ok(Some((header.meta, body)))
}

/// A stream message read up to its body.
struct MessageHeaderBytes {
    start: u64,
    meta: Vec<u8>,
    body_len: u64,
}

/// Reads the next message's length prefix and metadata at `pos`, leaving the reader at its
/// body (which is checked to fit in the file); `None` at the end-of-stream marker or the end
/// of the file.
fn next_message_header(
    reader: &mut impl Read,
    pos: &mut u64,
    size: Option<u64>,
) -> Result<Option<MessageHeaderBytes>> {
    let start = *pos;
    if size == Some(start) {
        return Ok(None);
    }
    let cut_short = |at: u64| bad("the stream is cut short inside a message header").at_offset(at);
    // A pipe ends where its data does: a clean end before a message is the end of the stream.
    // A file must reach its known size.
    let mut len = match read_word_or_end(reader).map_err(|_| cut_short(start))? {
        Some(word) => word,
        None if size.is_none() => return Ok(None),
        None => return Err(cut_short(start)),
    };
    *pos += 4;
    if len == 0xFFFF_FFFF {
        len = read_word_or_end(reader)
            .ok()
            .flatten()
            .ok_or_else(|| cut_short(*pos))?;
        *pos += 4;
    }
    if len == 0 {
        return Ok(None);
    }
    let len = u64::from(len);
    let meta = match size {
        Some(size) => {
            if len > size - *pos {
                return Err(bad(format!(
                    "a message's metadata length {len} runs past the end of the stream"
                ))
                .at_offset(start));
            }
            let mut meta = vec![0u8; len as usize];
            reader.read_exact(&mut meta)?;
            meta
        }
        None => read_unvouched(reader, len, start, "metadata")?,
    };
    *pos += len;
    let body_len = root_message(&meta, start)?.bodyLength();
    let body_len = u64::try_from(body_len)
        .ok()
        .filter(|&l| size.is_none_or(|size| l <= size - *pos))
        .ok_or_else(|| {
            bad(format!(
                "a message's body length {body_len} runs past the end of the stream"
            ))
            .at_offset(start)
        })?;
    Ok(Some(MessageHeaderBytes {
        start,
        meta,
        body_len,
    }))
}

/// Checks a record batch's nodes and buffers against its body, before Arrow trusts them.
fn check_batch(batch: arrow::ipc::RecordBatch<'_>, body: &[u8], offset: u64) -> Result<()> {
    let fail = |message: String| Err(bad(message).at_offset(offset));
    if batch.length() < 0 {
        return fail(format!("a record batch of {} rows", batch.length()));
    }
    for node in batch.nodes().iter().flatten() {
        if node.length() < 0 || node.null_count() < 0 {
            return fail(format!(
                "a field node of length {} with {} nulls",
                node.length(),
                node.null_count()
            ));
        }
    }
    for count in batch.variadicBufferCounts().iter().flatten() {
        if count < 0 {
            return fail(format!("a variadic buffer count of {count}"));
        }
    }
    let codec = batch.compression().map(|c| c.codec());
    for (i, buffer) in batch.buffers().iter().flatten().enumerate() {
        let range = u64::try_from(buffer.offset())
            .ok()
            .zip(u64::try_from(buffer.length()).ok())
            .and_then(|(start, len)| Some((start, start.checked_add(len)?)))
            .filter(|&(_, end)| end <= body.len() as u64);
        let Some((start, end)) = range else {
            return fail(format!(
                "buffer {i} at [{}, +{}) lies outside the message body of {} bytes",
                buffer.offset(),
                buffer.length(),
                body.len()
            ));
        };
        if let (Some(codec), true) = (codec, end > start) {
            check_compressed(&body[start as usize..end as usize], codec)
                .map_err(|e| e.at_offset(offset).with_field(format!("buffer {i}")))?;
        }
    }
    Ok(())
}

/// A compressed buffer is its uncompressed length (i64; -1 for "stored uncompressed") and the
/// compressed bytes. Arrow allocates the length it is told; make sure it is the real one.
fn check_compressed(bytes: &[u8], codec: CompressionType) -> Result<()> {
    let Some(prefix) = bytes.get(..8).and_then(|p| <[u8; 8]>::try_from(p).ok()) else {
        return Err(bad(format!(
            "a compressed buffer of {} bytes has no 8-byte length prefix",
            bytes.len()
        )));
    };
    let claimed = i64::from_le_bytes(prefix);
    if claimed == -1 || claimed == 0 {
        return Ok(());
    }
    let Ok(claimed) = u64::try_from(claimed) else {
        return Err(bad(format!("a compressed buffer claims {claimed} bytes")));
    };
    let data = &bytes[8..];
    let limit = claimed.saturating_add(1);
    let counted = match codec {
        CompressionType::LZ4_FRAME => io::copy(
            &mut lz4_flex::frame::FrameDecoder::new(data).take(limit),
            &mut io::sink(),
        ),
        CompressionType::ZSTD => zstd::stream::read::Decoder::with_buffer(data)
            .and_then(|d| io::copy(&mut d.take(limit), &mut io::sink())),
        other => return Err(bad(format!("unknown body compression {other:?}"))),
    };
    match counted {
        Ok(n) if n == claimed => Ok(()),
        Ok(n) if n > claimed => Err(bad(format!(
            "a compressed buffer holds more than the {claimed} bytes its prefix says"
        ))),
        Ok(n) => Err(bad(format!(
            "a compressed buffer holds {n} bytes, not the {claimed} its prefix says"
        ))),
        Err(e) => Err(bad(format!("a compressed buffer does not decompress: {e}"))),
    }
}

/// The footer of an IPC file and where it starts.
fn read_footer(file: &mut (impl Read + Seek + ?Sized), size: u64) -> Result<(Vec<u8>, u64)> {
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
    let mut footer = vec![0u8; footer_len as usize];
    file.seek(SeekFrom::Start(footer_start))?;
    file.read_exact(&mut footer)?;
    Ok((footer, footer_start))
}

/// The footer's blocks, each checked to lie before the footer.
fn blocks(
    blocks: Option<flatbuffers::Vector<'_, arrow::ipc::Block>>,
    footer_start: u64,
) -> Result<Vec<Block>> {
    blocks
        .iter()
        .flatten()
        .map(|b| {
            let block = u64::try_from(b.offset())
                .ok()
                .zip(u64::try_from(b.metaDataLength()).ok())
                .zip(u64::try_from(b.bodyLength()).ok())
                .map(|((offset, meta_len), body_len)| Block {
                    offset,
                    meta_len,
                    body_len,
                })
                .filter(|b| {
                    b.offset
                        .checked_add(b.meta_len)
                        .and_then(|e| e.checked_add(b.body_len))
                        .is_some_and(|end| end <= footer_start)
                });
            block.ok_or_else(|| {
                bad(format!(
                    "the block at {} (+{} +{}) does not lie inside the data",
                    b.offset(),
                    b.metaDataLength(),
                    b.bodyLength()
                ))
            })
        })
        .collect()
}

/// The structure of an Arrow IPC file or stream: its record batches and dictionaries, read
/// from the message headers without decoding any body.
#[derive(Debug, Clone, Serialize)]
pub struct IpcInfo {
    /// The metadata version (`V5` for everything written since Arrow 1.0).
    pub version: String,
    /// Bytes of the file (or of the stream read).
    pub file_size: u64,
    /// Rows over all record batches.
    pub num_rows: u64,
    /// Number of dictionary batch messages.
    pub dictionaries: usize,
    /// Every record batch message, in order.
    pub batches: Vec<IpcBatch>,
    /// The footer's (file) or the schema message's (stream) custom metadata keys.
    pub metadata_keys: Vec<String>,
    /// A stream only: whether it ends with the end-of-stream marker.
    pub end_of_stream_marker: Option<bool>,
}

/// One record batch message.
#[derive(Debug, Clone, Serialize)]
pub struct IpcBatch {
    /// Rows in the batch.
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

/// What one message's metadata says.
struct MessageInfo {
    header: MessageHeader,
    version: String,
    rows: u64,
    compression: Option<String>,
    metadata_keys: Vec<String>,
}

/// Parses one encapsulated message's flatbuffer.
fn parse_message(bytes: &[u8], offset: u64) -> Result<MessageInfo> {
    let message = arrow::ipc::root_as_message(bytes).map_err(|e| {
        bad(format!("the message is not a valid Arrow IPC message: {e}")).at_offset(offset)
    })?;
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
    let opened = File::open(path).and_then(|file| Ok((file.metadata()?.len(), file)));
    let described = opened
        .map_err(Error::from)
        .and_then(|(size, mut file)| describe_file_inner(&mut file, size));
    described.map_err(|e| e.with_file(path))
}

/// Reads the footer of a remote Arrow IPC file and the header of each of its record batches.
pub(crate) fn describe_file_source(source: Arc<dyn ByteSource>) -> Result<IpcInfo> {
    let name = PathBuf::from(source.location());
    let size = source.size();
    describe_file_inner(&mut ObjectReader::with_window(source, HEADER_WINDOW), size)
        .map_err(|e| e.with_file(&name))
}

fn describe_file_inner(file: &mut (impl Read + Seek), size: u64) -> Result<IpcInfo> {
    let (footer_bytes, footer_start) = read_footer(file, size)?;
    let footer = arrow::ipc::root_as_footer(&footer_bytes).map_err(|e| {
        bad(format!("the footer is not a valid Arrow IPC footer: {e}")).at_offset(footer_start)
    })?;
    let mut batches = Vec::new();
    for block in blocks(footer.recordBatches(), footer_start)? {
        let mut meta = vec![0u8; block.meta_len as usize];
        file.seek(SeekFrom::Start(block.offset))?;
        file.read_exact(&mut meta)?;
        let info = parse_message(message_flatbuffer(&meta, block.offset)?, block.offset)?;
        if info.header != MessageHeader::RecordBatch {
            return Err(bad(format!(
                "the footer points at a {:?} message where a record batch should be",
                info.header
            ))
            .at_offset(block.offset));
        }
        batches.push(IpcBatch {
            rows: info.rows,
            offset: block.offset,
            metadata_length: block.meta_len,
            body_length: block.body_len,
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

/// Walks the messages of an Arrow IPC stream file, skipping their bodies. It opens `path` as a
/// file: its callers (inspect, the fragment listing) refuse standard input and other streams
/// first.
pub fn describe_stream(path: &Path) -> Result<IpcInfo> {
    let opened = File::open(path).and_then(|file| Ok((file.metadata()?.len(), file)));
    let described = opened
        .map_err(Error::from)
        .and_then(|(size, file)| describe_stream_inner(BufReader::new(file), size));
    described.map_err(|e| e.with_file(path))
}

/// Walks the messages of a remote Arrow IPC stream, skipping their bodies.
pub(crate) fn describe_stream_source(source: Arc<dyn ByteSource>) -> Result<IpcInfo> {
    let name = PathBuf::from(source.location());
    let size = source.size();
    let reader = ObjectReader::with_window(source, HEADER_WINDOW);
    describe_stream_inner(BufReader::new(reader), size).map_err(|e| e.with_file(&name))
}

fn describe_stream_inner(mut reader: BufReader<impl Read + Seek>, size: u64) -> Result<IpcInfo> {
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
        let before = pos;
        let Some(header) = next_message_header(&mut reader, &mut pos, Some(size))? else {
            // The end-of-stream marker was read, or the file just ended.
            info.end_of_stream_marker = Some(pos > before);
            break;
        };
        let start = header.start;
        let message = parse_message(&header.meta, start)?;
        let skip = i64::try_from(header.body_len)
            .map_err(|_| bad("a message's body length is out of range").at_offset(start))?;
        reader.seek_relative(skip)?;
        pos += header.body_len;
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
                    metadata_length: pos - start - header.body_len,
                    body_length: header.body_len,
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

/// arrow 59's `fb_to_schema` panics on a schema it cannot convert (a missing field list, an
/// unknown bit width, …; apache/arrow-rs#10575, #10437); the panic is contained and becomes a
/// data error. Replace it by `try_fb_to_schema` (apache/arrow-rs#10647) once arrowsmith's arrow
/// release has it.
fn schema_from_fb(fb: arrow::ipc::Schema<'_>) -> Result<arrow_schema::Schema> {
    quietly(|| fb_to_schema(fb))
        .map_err(|why| bad(format!("the schema message is malformed: {why}")))
}
