//! VS → Arrow (spec §13.1, §14.1).
//!
//! The file is opened under the shared header lock and memory-mapped; the lock is held for the
//! reader's whole life. The blocks before the meta block are walked when the reader is built
//! (the schema needs the meta); the points are then walked one batch at a time, so memory stays
//! bounded by the batch. Compressed vectors of a batch are decompressed in parallel.

use std::collections::VecDeque;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow::array::ArrayDataBuilder;
use arrow_array::{
    make_array, ArrayRef, BinaryArray, BooleanArray, FixedSizeListArray, RecordBatch,
    RecordBatchOptions, RecordBatchReader, StringArray, UInt64Array,
};
use arrow_buffer::{BooleanBufferBuilder, Buffer, MutableBuffer, NullBuffer, OffsetBuffer};
use arrow_schema::{ArrowError, DataType, Field, Schema, SchemaRef};
use base64::Engine;
use memmap2::Mmap;
use rayon::prelude::*;

use super::codec::{self, Block, Blocks, Meta, ParseOptions, UnknownBlocks, VarintOrder};
use super::lock::{self, LockKind, LockWait, LockedFile};
use super::mapping::*;
use super::msgpack_json::{self, JsonFailure};
use super::vector_codec::VectorDecoder;
use crate::error::{Error, ErrorClass, Result};
use crate::salvage::{Salvage, SalvageReport, Skipped};
use crate::scan::{group_units, FragmentRange, FragmentSpan, ScanOptions, Unit};

/// Rows per batch unless the caller chooses: the one default of every reader (it was 1,024 for
/// VS alone; a batch of 65,536 points of 1,024 `f32` each is 256 MiB, so callers with wide
/// vectors choose a smaller one with `with_batch_size`).
pub const DEFAULT_BATCH_SIZE: usize = crate::scan::DEFAULT_BATCH_SIZE;

/// Rows per parallel task when a batch is built in parallel.
const CHUNK_ROWS: usize = 256;

/// How `app_data` (and JSON-resolution elements) reach Arrow.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AppDataMode {
    /// JSON text in a `Utf8` column tagged `arrow.json`.
    #[default]
    Json,
    /// The exact msgpack bytes in a `Binary` column (byte-exact round trips).
    Msgpack,
}

/// The options of a VS reader that are not common to every format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct VsReadOptions {
    /// How bytes are parsed (default: the format's strict rules).
    pub parse: ParseOptions,
    /// How the app data column is typed (default [`AppDataMode::Json`]).
    pub app_data: AppDataMode,
    /// Whether to add the `vs_offset` column (default `false`).
    pub with_offsets: bool,
    /// Whether to wait for a writer's lock (default [`LockWait::Block`]).
    pub lock: LockWait,
}

/// An opened VS file: its bytes (mapped), its meta and the lock that guards them.
pub struct VsFile {
    path: Option<PathBuf>,
    bytes: Bytes,
    _lock: Option<LockedFile>,
    meta: Option<Meta>,
    /// Offset of the first block after the meta block (or of the end, without meta).
    data_start: usize,
    options: VsReadOptions,
}

enum Bytes {
    Map(Mmap),
    Vec(Vec<u8>),
}

impl std::ops::Deref for Bytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            Bytes::Map(m) => m,
            Bytes::Vec(v) => v,
        }
    }
}

fn map_file(file: &File) -> std::io::Result<Bytes> {
    let len = file.metadata()?.len();
    if len < 4096 {
        use std::io::Read;
        let mut v = Vec::with_capacity(len as usize);
        let mut f = file;
        f.read_to_end(&mut v)?;
        return Ok(Bytes::Vec(v));
    }
    // SAFETY: read-only private map. Writers that follow the format take the exclusive lock,
    // which our shared lock excludes, and appenders only write past the terminal anyway.
    Ok(Bytes::Map(unsafe { Mmap::map(file)? }))
}

impl VsFile {
    /// Opens a file under the shared lock and reads everything up to the meta block.
    pub fn open(path: impl AsRef<Path>, options: VsReadOptions) -> Result<VsFile> {
        let path = path.as_ref();
        let locked = lock::open_locked(path, LockKind::Shared, options.lock)?;
        let bytes = map_file(&locked.file).map_err(|e| Error::from(e).with_file(path))?;
        Self::from_parts(bytes, Some(locked), Some(path.to_path_buf()), options)
    }

    /// VS bytes held in memory (no lock).
    pub fn from_bytes(bytes: Vec<u8>, options: VsReadOptions) -> Result<VsFile> {
        Self::from_parts(Bytes::Vec(bytes), None, None, options)
    }

    fn from_parts(
        bytes: Bytes,
        lock: Option<LockedFile>,
        path: Option<PathBuf>,
        options: VsReadOptions,
    ) -> Result<VsFile> {
        let attach = |e: Error| match &path {
            Some(p) => e.with_file(p),
            None => e,
        };
        let (meta, data_start) = scan_to_meta(&bytes, &options.parse).map_err(attach)?;
        Ok(VsFile {
            path,
            bytes,
            _lock: lock,
            meta,
            data_start,
            options,
        })
    }

    /// The meta block; `None` for the empty store.
    pub fn meta(&self) -> Option<&Meta> {
        self.meta.as_ref()
    }

    /// The file's path, unless it was opened from bytes.
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// The whole file's bytes.
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// The Arrow schema of every column this file reads as.
    pub fn schema(&self) -> SchemaRef {
        Arc::new(schema_for(self.meta.as_ref(), &self.options))
    }
}

/// Walks the blocks from offset 4 to the meta block (spec §4 placement rules).
fn scan_to_meta(bytes: &[u8], parse: &ParseOptions) -> Result<(Option<Meta>, usize)> {
    codec::check_header(bytes)?;
    let mut blocks = Blocks::new(bytes, 4, parse.eof);
    while let Some(block) = blocks.next_block()? {
        match block.kind {
            codec::META => {
                let meta = codec::parse_meta(&block, parse.varint)?;
                return Ok((Some(meta), blocks.position()));
            }
            codec::POINT => {
                return Err(codec::block_error(
                    block.kind,
                    block.offset,
                    ErrorClass::BadMeta,
                    "point before meta block",
                ))
            }
            kind => check_other_block(kind, &block, parse)?,
        }
    }
    Ok((None, blocks.position()))
}

fn check_other_block(kind: u8, block: &Block<'_>, parse: &ParseOptions) -> Result<()> {
    if kind != codec::BLANK && parse.unknown_blocks == UnknownBlocks::Error {
        return Err(codec::block_error(
            kind,
            block.offset,
            ErrorClass::UnknownType,
            "unknown block (unknown_blocks=error)",
        ));
    }
    Ok(())
}

/// The schema of §14.1.
pub fn schema_for(meta: Option<&Meta>, options: &VsReadOptions) -> Schema {
    let exact = options.app_data == AppDataMode::Msgpack;
    let mut metadata = std::collections::HashMap::new();
    metadata.insert(META_VERSION.to_owned(), "0".to_owned());
    let app_field = app_data_field(exact);
    let Some(meta) = meta else {
        metadata.insert(META_META.to_owned(), "absent".to_owned());
        return Schema::new(vec![app_field]).with_metadata(metadata);
    };
    metadata.insert(META_RANK.to_owned(), meta.rank().to_string());
    metadata.insert(META_DIMENSIONS.to_owned(), shape_json(&meta.dims));
    metadata.insert(
        META_RESOLUTION.to_owned(),
        meta.resolution.code().to_string(),
    );
    metadata.insert(
        META_RESOLUTION_NAME.to_owned(),
        meta.resolution.name().to_owned(),
    );
    metadata.insert(META_PACK.to_owned(), meta.pack.to_string());
    metadata.insert(META_PAGING.to_owned(), meta.paging.to_string());
    if let Some(attributes) = &meta.attributes {
        // Validated when parsed; a value without a JSON form is left out of the text key.
        if let Ok(value) = codec::parse_msgpack(attributes) {
            let mut text = String::new();
            if codec::msgpack_to_json(&value, &mut text).is_ok() {
                metadata.insert(META_ATTRIBUTES.to_owned(), text);
            }
        }
        if exact {
            metadata.insert(
                META_ATTRIBUTES_MSGPACK.to_owned(),
                base64::engine::general_purpose::STANDARD.encode(attributes),
            );
        }
    }
    let mut fields = vec![vector_field(meta, exact), app_field];
    if options.with_offsets {
        fields.push(Field::new(OFFSET_COLUMN, DataType::UInt64, false));
    }
    Schema::new(fields).with_metadata(metadata)
}

fn json_tag() -> std::collections::HashMap<String, String> {
    [
        (EXTENSION_NAME.to_owned(), JSON_EXTENSION.to_owned()),
        (EXTENSION_METADATA.to_owned(), String::new()),
    ]
    .into()
}

fn app_data_field(exact: bool) -> Field {
    if exact {
        Field::new(APP_DATA_COLUMN, DataType::Binary, true).with_metadata(
            std::collections::HashMap::from([(FIELD_ENCODING.to_owned(), "msgpack".to_owned())]),
        )
    } else {
        Field::new(APP_DATA_COLUMN, DataType::Utf8, true).with_metadata(json_tag())
    }
}

fn item_field(meta: &Meta, exact: bool) -> Field {
    let item = Field::new("item", meta.resolution.arrow_type(exact), false);
    if meta.resolution == Resolution::Json && !exact {
        item.with_metadata(json_tag())
    } else {
        item
    }
}

fn vector_field(meta: &Meta, exact: bool) -> Field {
    let list = DataType::FixedSizeList(Arc::new(item_field(meta, exact)), meta.n as i32);
    let metadata: std::collections::HashMap<String, String> = if meta.resolution.is_variable() {
        [(FIELD_SHAPE.to_owned(), shape_json(&meta.dims))].into()
    } else {
        [
            (EXTENSION_NAME.to_owned(), TENSOR_EXTENSION.to_owned()),
            (EXTENSION_METADATA.to_owned(), tensor_metadata(&meta.dims)),
        ]
        .into()
    };
    Field::new(VECTOR_COLUMN, list, false).with_metadata(metadata)
}

/// Builds a VS [`Reader`].
#[derive(Debug, Clone, Default)]
pub struct ReaderBuilder {
    scan: ScanOptions,
    options: VsReadOptions,
}

impl ReaderBuilder {
    /// A builder with every option at its default: 65,536 rows per batch
    /// ([`DEFAULT_BATCH_SIZE`](crate::DEFAULT_BATCH_SIZE)), every column, the
    /// whole file, the format's strict end of file, LEB128 varints, app_data as JSON.
    pub fn new() -> Self {
        Self::default()
    }

    crate::scan::scan_setters!();

    /// All VS-specific options at once (default: [`VsReadOptions::default`]).
    pub fn with_options(mut self, options: VsReadOptions) -> Self {
        self.options = options;
        self
    }

    /// Accept a file that ends at a block boundary without `'$'` (default `false`).
    pub fn with_lenient_eof(mut self, lenient: bool) -> Self {
        self.options.parse.eof = if lenient {
            codec::EofMode::Lenient
        } else {
            codec::EofMode::Strict
        };
        self
    }

    /// Varint byte order (default [`VarintOrder::Leb128`], the format's rule).
    pub fn with_varint_order(mut self, order: VarintOrder) -> Self {
        self.options.parse.varint = order;
        self
    }

    /// What to do with unknown block types (default [`UnknownBlocks::Skip`]).
    pub fn with_unknown_blocks(mut self, unknown: UnknownBlocks) -> Self {
        self.options.parse.unknown_blocks = unknown;
        self
    }

    /// How the app data column is typed (default [`AppDataMode::Json`]).
    pub fn with_app_data(mut self, mode: AppDataMode) -> Self {
        self.options.app_data = mode;
        self
    }

    /// Adds the `vs_offset` column: the byte offset of each point's block (default `false`).
    pub fn with_offsets(mut self, with_offsets: bool) -> Self {
        self.options.with_offsets = with_offsets;
        self
    }

    /// Fail at once with "file is locked" instead of waiting for a writer (default `false`:
    /// wait).
    pub fn with_try_lock(mut self, try_lock: bool) -> Self {
        self.options.lock = if try_lock {
            LockWait::Try
        } else {
            LockWait::Block
        };
        self
    }

    /// Opens, locks (shared) and memory-maps the VS file at `path` and returns a reader.
    pub fn build(self, path: impl AsRef<Path>) -> Result<Reader> {
        let file = VsFile::open(path, self.options)?;
        self.build_from_file(Arc::new(file))
    }

    /// Returns a reader of a file held in memory. A `Vec<u8>` is taken over without a copy.
    pub fn build_from_bytes(self, bytes: impl Into<arrow_buffer::Buffer>) -> Result<Reader> {
        let file = VsFile::from_bytes(crate::scan::owned_bytes(bytes), self.options)?;
        self.build_from_file(Arc::new(file))
    }

    /// Returns a reader of a file already opened (and locked) by [`VsFile::open`], without
    /// reading its meta block again; several readers (of different fragments, say) can share
    /// it. The file's parse options are the ones it was opened with.
    pub fn build_from_file(self, file: Arc<VsFile>) -> Result<Reader> {
        let full = file.schema();
        let columns = match &self.scan.projection {
            None => None,
            Some(p) => Some(
                p.resolve(full.fields().iter().map(|f| f.name().as_str()))
                    .map_err(|e| attach(e, file.path()))?,
            ),
        };
        let schema = match &columns {
            None => full.clone(),
            Some(c) => Arc::new(full.project(c)?),
        };
        let (pos, end) = match self.scan.range {
            None | Some(FragmentRange::Whole) => (file.data_start, usize::MAX),
            Some(FragmentRange::Bytes { start, end }) => (
                usize::try_from(start).unwrap_or(usize::MAX),
                usize::try_from(end).unwrap_or(usize::MAX),
            ),
            Some(other) => {
                return Err(attach(other.wrong_unit("VS", "block offsets"), file.path()))
            }
        };
        if pos < end && pos < file.data_start {
            return Err(attach(
                Error::invalid_argument(format!(
                    "a fragment cannot start at offset {pos}, before the first block after the \
                     meta block ({})",
                    file.data_start
                )),
                file.path(),
            ));
        }
        let done = file.meta.is_none() || pos >= end;
        let app_wanted = match (&columns, full.index_of(APP_DATA_COLUMN)) {
            (Some(columns), Ok(app)) => columns.contains(&app),
            _ => true,
        };
        Ok(Reader {
            file,
            full,
            schema,
            columns,
            app_wanted,
            decoder: VectorDecoder::default(),
            batch_size: self.scan.batch_size_or(DEFAULT_BATCH_SIZE),
            left: self.scan.limit.unwrap_or(usize::MAX),
            walk: Walk {
                pos,
                end,
                pending: VecDeque::new(),
                deferred: None,
                done,
                salvage: Salvage::from_scan(&self.scan),
            },
        })
    }
}

fn attach(e: Error, path: Option<&Path>) -> Error {
    match path {
        Some(p) => e.with_file(p),
        None => e,
    }
}

/// The record batches of a VS file: one row per live point, in file order.
pub struct Reader {
    file: Arc<VsFile>,
    full: SchemaRef,
    schema: SchemaRef,
    columns: Option<Vec<usize>>,
    /// Whether `app_data` is projected; when not, its msgpack is only validated.
    app_wanted: bool,
    /// The vector decompressor of batches built on this thread.
    decoder: VectorDecoder,
    batch_size: usize,
    left: usize,
    walk: Walk,
}

/// How far ahead of the walk the mapped bytes are prefetched. On the bench file (530-byte
/// blocks) 8 KiB ahead took the uncompressed read from 162 ms to 137 ms; 4 KiB gave 139 ms,
/// 12 KiB 132 ms, and 16 KiB or more nothing (a prefetch into a page not mapped yet is dropped),
/// so this stays well inside the range that helped.
const PREFETCH_DISTANCE: usize = 8192;

/// Where the walk over the blocks stands.
struct Walk {
    /// Offset of the next block to walk.
    pos: usize,
    /// Where the walk stops: the end of the fragment (`usize::MAX` for the whole file).
    end: usize,
    /// Point blocks walked but not yet turned into rows: (offset, payload start, length).
    pending: VecDeque<(u64, usize, usize)>,
    /// An error met while walking, reported after the rows before it.
    deferred: Option<Error>,
    done: bool,
    /// When salvaging, walk errors are recorded here instead of deferred.
    salvage: Salvage,
}

impl Walk {
    /// Walks blocks until `want` points are pending or the data ends.
    fn gather(&mut self, file: &VsFile, want: usize) {
        if self.done {
            return;
        }
        let parse = file.options.parse;
        // A salvaging walk reads up to the end of a file that lost its terminal, and says so.
        let eof = if self.salvage.on {
            codec::EofMode::Lenient
        } else {
            parse.eof
        };
        let mut blocks = Blocks::new(&file.bytes, self.pos, eof);
        while self.pending.len() < want {
            if blocks.position() >= self.end {
                self.done = true;
                break;
            }
            codec::prefetch(&file.bytes, blocks.position() + PREFETCH_DISTANCE);
            match blocks.next_block() {
                Ok(Some(block)) => match block.kind {
                    codec::POINT => {
                        let start = block.offset as usize + codec::BLOCK_HEADER;
                        self.pending
                            .push_back((block.offset, start, block.payload.len()));
                    }
                    codec::META => {
                        let e = codec::block_error(
                            block.kind,
                            block.offset,
                            ErrorClass::BadMeta,
                            "duplicate meta block",
                        );
                        if self.salvage.on {
                            // Its length is known: the walk goes on past it.
                            self.skip_block(file, block.offset, 0, e);
                            continue;
                        }
                        self.deferred = Some(e);
                        self.done = true;
                        break;
                    }
                    kind => {
                        if let Err(e) = check_other_block(kind, &block, &parse) {
                            if self.salvage.on {
                                self.skip_block(file, block.offset, 0, e);
                                continue;
                            }
                            self.deferred = Some(e);
                            self.done = true;
                            break;
                        }
                    }
                },
                Ok(None) => {
                    if self.salvage.on
                        && blocks.terminal.is_none()
                        && parse.eof == codec::EofMode::Strict
                    {
                        let end = file.bytes.len() as u64;
                        let e = Error::new(
                            ErrorClass::BadEnvelope,
                            "missing terminal: the file ends without '$', so it may have been \
                             cut; any points written past its end are lost",
                        )
                        .at_offset(end);
                        self.salvage
                            .push(Skipped::new("rest", attach(e, file.path())).at_offset(end));
                    }
                    self.done = true;
                    break;
                }
                Err(e) => {
                    if self.salvage.on {
                        // Past a block whose header is broken nothing says where the next one
                        // starts: the rest of the file is lost. A cut point block is one row.
                        let at = e.offset().unwrap_or(blocks.position() as u64);
                        let is_point = file.bytes.get(at as usize) == Some(&codec::POINT);
                        let mut skipped = Skipped::new(
                            if is_point { "block" } else { "rest" },
                            attach(e, file.path()),
                        )
                        .at_offset(at);
                        if is_point {
                            skipped = skipped.with_rows(1);
                        }
                        self.salvage.push(skipped);
                    } else {
                        self.deferred = Some(e);
                    }
                    self.done = true;
                    break;
                }
            }
        }
        self.pos = blocks.position();
    }

    /// Records a block that a salvaging walk or batch skips.
    fn skip_block(&self, file: &VsFile, offset: u64, rows: u64, e: Error) {
        self.salvage.push(
            Skipped::new("block", attach(e, file.path()))
                .at_offset(offset)
                .with_rows(rows),
        );
    }
}

impl Reader {
    /// The opened file.
    pub fn file(&self) -> &VsFile {
        &self.file
    }

    /// Where this reader records the blocks it skips when salvaging.
    pub fn salvage_report(&self) -> &SalvageReport {
        &self.walk.salvage.report
    }

    /// A batch of a salvaging scan: built point by point, each point that does not parse or
    /// decode skipped (one row) and recorded.
    fn next_batch_salvaged(&mut self, want: usize) -> Result<Option<RecordBatch>> {
        let file = &self.file;
        let walk = &mut self.walk;
        let Some(meta) = file.meta.as_ref() else {
            return Ok(None);
        };
        let options = &file.options;
        let bytes: &[u8] = &file.bytes;
        let validate = options.app_data == AppDataMode::Msgpack || !self.app_wanted;
        let mut builder = BatchBuilder::new(meta, options, want, self.app_wanted);
        let mut used = 0;
        while used < want {
            if walk.pending.is_empty() {
                walk.gather(file, want - used);
                if walk.pending.is_empty() {
                    break;
                }
            }
            let (offset, start, len) = walk.pending[0];
            let block = Block {
                kind: codec::POINT,
                offset,
                payload: &bytes[start..start + len],
            };
            let pushed =
                codec::parse_point_with(&block, options.parse.varint, validate).and_then(|point| {
                    let plain =
                        self.decoder
                            .plain(&point, meta, options.parse.max_variable_vector)?;
                    builder.push(&point, plain)
                });
            match pushed {
                Ok(true) => used += 1,
                // The batch is full of text: the point starts the next batch.
                Ok(false) if used > 0 => break,
                Ok(false) => walk.skip_block(
                    file,
                    offset,
                    1,
                    codec::block_error(
                        codec::POINT,
                        offset,
                        ErrorClass::BufferSize,
                        "the point's text does not fit one Arrow string array (2 GiB)",
                    ),
                ),
                Err(e) => walk.skip_block(file, offset, 1, e),
            }
            walk.pending.pop_front();
        }
        if used == 0 {
            return Ok(None);
        }
        self.left -= used;
        let batch = builder.finish(self.full.clone())?;
        Ok(Some(match &self.columns {
            None => batch,
            Some(c) => batch.project(c)?,
        }))
    }

    fn next_batch(&mut self) -> Result<Option<RecordBatch>> {
        let want = self.batch_size.min(self.left);
        if want == 0 {
            return Ok(None);
        }
        if self.walk.salvage.on {
            return self.next_batch_salvaged(want);
        }
        let file = &self.file;
        let walk = &mut self.walk;
        walk.gather(file, 1);
        if walk.pending.is_empty() {
            return match walk.deferred.take() {
                Some(e) => Err(e),
                None => Ok(None),
            };
        }
        let meta = file.meta.as_ref().expect("points only follow a meta block");
        let options = &file.options;
        let bytes: &[u8] = &file.bytes;
        let app_wanted = self.app_wanted;
        // JSON text comes from decoding the msgpack, which validates it; otherwise validate here.
        let validate = options.app_data == AppDataMode::Msgpack || !app_wanted;
        let max_variable = options.parse.max_variable_vector;
        let parse = |&(offset, start, len): &(u64, usize, usize)| {
            let block = Block {
                kind: codec::POINT,
                offset,
                payload: &bytes[start..start + len],
            };
            codec::parse_point_with(&block, options.parse.varint, validate)
        };
        // Large batches are built in parallel, a chunk of rows per task, when the batch's text
        // cannot come near Arrow's 2 GiB limit (a msgpack byte gives at most a few dozen bytes
        // of JSON) and either the vectors are compressed or they have a fixed size (their
        // values then go straight to their place in one buffer). Plain STRING/JSON/BOOL vectors
        // would need the parts concatenated, which costs more than a second core saves, so they
        // are built sequentially (docs/performance.md). The first point's codec stands for the
        // batch's.
        let compressed = parse(&walk.pending[0])?.vec_option & 0x07 != 0;
        let fixed_size = match meta.resolution {
            Resolution::Bool | Resolution::String | Resolution::Json => None,
            r => r.plain_size(meta.n).filter(|&size| size > 0),
        };
        if (compressed || fixed_size.is_some()) && want >= 2 * CHUNK_ROWS {
            walk.gather(file, want);
            let take = want.min(walk.pending.len());
            let refs: Vec<(u64, usize, usize)> = walk.pending.iter().take(take).copied().collect();
            let payload: usize = refs.iter().map(|r| r.2).sum();
            if refs.len() >= 2 * CHUNK_ROWS && payload.saturating_mul(64) < MAX_TEXT {
                let build_chunk = |chunk: &[(u64, usize, usize)]| {
                    let mut builder = BatchBuilder::new(meta, options, chunk.len(), app_wanted);
                    let mut decoder = VectorDecoder::default();
                    for r in chunk {
                        let point = parse(r)?;
                        let plain = decoder.plain(&point, meta, max_variable)?;
                        if !builder.push(&point, plain)? {
                            return Err(codec::block_error(
                                codec::POINT,
                                point.offset,
                                ErrorClass::BufferSize,
                                "the point's text does not fit one Arrow string array (2 GiB)",
                            ));
                        }
                    }
                    Ok(builder)
                };
                let batch = if let Some(size) = fixed_size {
                    // Each task copies its rows' values into its own part of the batch's values
                    // buffer, so the batch is never concatenated afterwards.
                    let total = refs.len() * size;
                    let mut values = MutableBuffer::with_capacity(total);
                    // SAFETY: the capacity holds `total` bytes; they are only written through
                    // `MaybeUninit` until every part has been filled.
                    let parts_out = unsafe {
                        std::slice::from_raw_parts_mut(
                            values.as_mut_ptr().cast::<std::mem::MaybeUninit<u8>>(),
                            total,
                        )
                    };
                    let parts: Vec<BatchBuilder> = parts_out
                        .par_chunks_mut(CHUNK_ROWS * size)
                        .zip(refs.par_chunks(CHUNK_ROWS))
                        .map(|(out, chunk)| {
                            let mut builder = build_chunk(chunk)?;
                            let filled = builder.values.as_slice();
                            assert_eq!(filled.len(), out.len(), "one fixed-size vector per row");
                            // SAFETY: same length, distinct allocations.
                            unsafe {
                                std::ptr::copy_nonoverlapping(
                                    filled.as_ptr(),
                                    out.as_mut_ptr().cast::<u8>(),
                                    out.len(),
                                )
                            };
                            builder.values = MutableBuffer::new(0);
                            Ok(builder)
                        })
                        .collect::<Result<_>>()?;
                    // SAFETY: every byte up to `total` was written by exactly one part above.
                    unsafe { values.set_len(total) };
                    let mut whole = BatchBuilder::new(meta, options, 0, app_wanted);
                    for part in parts {
                        whole.append(part);
                    }
                    whole.values = values;
                    whole.finish(self.full.clone())?
                } else {
                    let full = self.full.clone();
                    let parts: Vec<RecordBatch> = refs
                        .par_chunks(CHUNK_ROWS)
                        .map(|chunk| build_chunk(chunk)?.finish(full.clone()))
                        .collect::<Result<_>>()?;
                    arrow::compute::concat_batches(&self.full, &parts)?
                };
                walk.pending.drain(..refs.len());
                self.left -= refs.len();
                return Ok(Some(match &self.columns {
                    None => batch,
                    Some(c) => batch.project(c)?,
                }));
            }
        }
        // Sequentially. The block headers of the whole batch are walked first: measured faster
        // than walking a few points ahead of the rows (195 ms against 215 ms for the bench file).
        let mut builder = BatchBuilder::new(meta, options, want, app_wanted);
        let mut used = 0;
        while used < want {
            if walk.pending.is_empty() {
                walk.gather(file, want - used);
                if walk.pending.is_empty() {
                    break;
                }
            }
            let point = parse(&walk.pending[0])?;
            let plain = self.decoder.plain(&point, meta, max_variable)?;
            if !builder.push(&point, plain)? {
                break;
            }
            walk.pending.pop_front();
            used += 1;
        }
        if used == 0 {
            return Err(codec::block_error(
                codec::POINT,
                walk.pending[0].0,
                ErrorClass::BufferSize,
                "the point's text does not fit one Arrow string array (2 GiB)",
            ));
        }
        self.left -= used;
        let batch = builder.finish(self.full.clone())?;
        Ok(Some(match &self.columns {
            None => batch,
            Some(c) => batch.project(c)?,
        }))
    }
}

impl Iterator for Reader {
    type Item = Result<RecordBatch, ArrowError>;

    fn next(&mut self) -> Option<Self::Item> {
        match self.next_batch() {
            Ok(Some(batch)) => Some(Ok(batch)),
            Ok(None) => None,
            Err(e) => {
                self.walk.done = true;
                self.walk.pending.clear();
                self.left = 0;
                Some(Err(attach(e, self.file.path()).into()))
            }
        }
    }
}

impl RecordBatchReader for Reader {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }
}

const MAX_TEXT: usize = i32::MAX as usize;

/// The most a batch reserves for its vectors before any is decoded.
const PREALLOCATE_MAX: usize = 16 << 20;

/// The arrays of one batch, filled point by point.
struct BatchBuilder<'m> {
    meta: &'m Meta,
    exact: bool,
    /// Whether the `app_data` text is built (else only validated, and the column left empty).
    app_wanted: bool,
    with_offsets: bool,
    /// Element lengths follow the file's varint order.
    varint: VarintOrder,
    rows: usize,
    values: MutableBuffer,
    bits: BooleanBufferBuilder,
    /// STRING / JSON elements.
    elem_offsets: Vec<i32>,
    elem_data: Vec<u8>,
    app_offsets: Vec<i32>,
    app_data: Vec<u8>,
    app_valid: BooleanBufferBuilder,
    offsets: Vec<u64>,
    scratch_elems: Vec<u8>,
    scratch_ends: Vec<usize>,
}

impl<'m> BatchBuilder<'m> {
    fn new(meta: &'m Meta, options: &VsReadOptions, rows: usize, app_wanted: bool) -> Self {
        // What the meta block claims a vector holds is only reserved up to a bound: a few
        // bytes of meta may claim gigabytes per vector, and the buffers grow as points are
        // actually decoded anyway.
        let plain = meta
            .resolution
            .plain_size(meta.n)
            .unwrap_or(0)
            .min(PREALLOCATE_MAX / rows.max(1));
        BatchBuilder {
            meta,
            exact: options.app_data == AppDataMode::Msgpack,
            app_wanted,
            with_offsets: options.with_offsets,
            varint: options.parse.varint,
            rows: 0,
            values: MutableBuffer::new(if meta.resolution == Resolution::Bool {
                0
            } else {
                plain.saturating_mul(rows)
            }),
            bits: BooleanBufferBuilder::new(if meta.resolution == Resolution::Bool {
                meta.n.saturating_mul(rows).min(PREALLOCATE_MAX * 8)
            } else {
                0
            }),
            elem_offsets: vec![0],
            elem_data: Vec::new(),
            app_offsets: vec![0],
            app_data: Vec::new(),
            app_valid: BooleanBufferBuilder::new(rows),
            offsets: Vec::new(),
            scratch_elems: Vec::new(),
            scratch_ends: Vec::new(),
        }
    }

    /// Adds one point; `false` when its text would overflow this batch's string arrays.
    fn push(&mut self, point: &codec::Point<'_>, plain: &[u8]) -> Result<bool> {
        let err = |class: ErrorClass, field: &str, message: String| {
            codec::block_error(
                codec::POINT,
                point.offset,
                class,
                format!("{field}: {message}"),
            )
        };
        // app_data first, straight into the column's text; taken back if the point does not fit.
        let app_start = self.app_data.len();
        let app_valid = match point.app_data {
            None => false,
            // Validated when the point was parsed.
            Some(_) if !self.app_wanted => false,
            Some(bytes) if self.exact => {
                self.app_data.extend_from_slice(bytes);
                true
            }
            Some(bytes) => match msgpack_json::append_json(bytes, &mut self.app_data) {
                Ok(true) => {
                    self.app_data.truncate(app_start);
                    false
                }
                Ok(false) => true,
                // The text written so far is taken back, so a salvaging reader can go on.
                Err(JsonFailure::Invalid(m)) => {
                    self.app_data.truncate(app_start);
                    return Err(err(ErrorClass::BadValue, "app_data", m));
                }
                Err(JsonFailure::Unrepresentable(m)) => {
                    self.app_data.truncate(app_start);
                    return Err(err(ErrorClass::UnsupportedType, "app_data", m));
                }
            },
        };
        let fits = |builder: &Self| -> bool {
            if builder.app_data.len() > MAX_TEXT {
                return false;
            }
            if builder.meta.resolution.is_variable() {
                let elems = builder.elem_data.len() + builder.scratch_elems.len();
                if builder.scratch_elems.len() > MAX_TEXT || (elems > MAX_TEXT && builder.rows > 0)
                {
                    return false;
                }
            }
            true
        };
        if self.meta.resolution.is_variable() {
            if let Err(e) = self.decode_variable(point, plain) {
                self.app_data.truncate(app_start);
                return Err(e);
            }
        }
        if !fits(self) {
            self.app_data.truncate(app_start);
            return Ok(false);
        }
        // Commit.
        match self.meta.resolution {
            Resolution::Bool => self.bits.append_packed_range(0..self.meta.n, plain),
            r if r.is_variable() => {
                let base = self.elem_data.len();
                self.elem_data.extend_from_slice(&self.scratch_elems);
                for &end in &self.scratch_ends {
                    self.elem_offsets.push((base + end) as i32);
                }
            }
            _ => self.values.extend_from_slice(plain),
        }
        self.app_offsets.push(self.app_data.len() as i32);
        self.app_valid.append(app_valid);
        self.offsets.push(point.offset);
        self.rows += 1;
        Ok(true)
    }

    /// Appends the rows of `part` except its fixed-size values (which the caller places).
    fn append(&mut self, mut part: BatchBuilder<'_>) {
        let base = self.app_data.len() as i32;
        self.app_data.extend_from_slice(&part.app_data);
        self.app_offsets
            .extend(part.app_offsets[1..].iter().map(|end| base + end));
        self.app_valid.append_buffer(&part.app_valid.finish());
        self.offsets.extend_from_slice(&part.offsets);
        self.rows += part.rows;
    }

    /// Splits STRING / JSON vector bytes into N elements (spec §5).
    fn decode_variable(&mut self, point: &codec::Point<'_>, plain: &[u8]) -> Result<()> {
        let err = |class: ErrorClass, message: String| {
            codec::block_error(
                codec::POINT,
                point.offset,
                class,
                format!("vector: {message}"),
            )
        };
        self.scratch_elems.clear();
        self.scratch_ends.clear();
        let mut pos = 0usize;
        for i in 0..self.meta.n {
            let (len, used) = codec::read_varuint(&plain[pos..], 5, u32::MAX as u64, self.varint)
                .map_err(|m| {
                err(
                    ErrorClass::BufferSize,
                    format!("vector length mismatch: element {i}: {m}"),
                )
            })?;
            pos += used;
            let len = len as usize;
            if len > plain.len() - pos {
                return Err(err(
                    ErrorClass::BufferSize,
                    format!(
                        "vector length mismatch: element {i} needs {len} bytes, {} remain",
                        plain.len() - pos
                    ),
                ));
            }
            let bytes = &plain[pos..pos + len];
            pos += len;
            match self.meta.resolution {
                Resolution::String => {
                    simdutf8::basic::from_utf8(bytes).map_err(|_| {
                        err(
                            ErrorClass::InvalidUtf8,
                            format!("invalid string: element {i} is not UTF-8"),
                        )
                    })?;
                    self.scratch_elems.extend_from_slice(bytes);
                }
                _ => {
                    if len == 0 {
                        if !self.exact {
                            self.scratch_elems.extend_from_slice(b"null");
                        }
                    } else if self.exact {
                        msgpack_json::validate(bytes)
                            .map_err(|m| err(ErrorClass::BadValue, format!("element {i}: {m}")))?;
                        self.scratch_elems.extend_from_slice(bytes);
                    } else {
                        // A nil element is the JSON text `null`, not a missing element.
                        msgpack_json::append_json(bytes, &mut self.scratch_elems).map_err(
                            |failure| match failure {
                                JsonFailure::Invalid(m) => {
                                    err(ErrorClass::BadValue, format!("element {i}: {m}"))
                                }
                                JsonFailure::Unrepresentable(m) => {
                                    err(ErrorClass::UnsupportedType, format!("element {i}: {m}"))
                                }
                            },
                        )?;
                    }
                }
            }
            self.scratch_ends.push(self.scratch_elems.len());
        }
        if pos != plain.len() {
            return Err(err(
                ErrorClass::BufferSize,
                format!(
                    "vector length mismatch: {} bytes left after {} elements",
                    plain.len() - pos,
                    self.meta.n
                ),
            ));
        }
        Ok(())
    }

    fn finish(mut self, schema: SchemaRef) -> Result<RecordBatch> {
        let rows = self.rows;
        let meta = self.meta;
        let n = meta.n;
        let item = Arc::new(item_field(meta, self.exact));
        let values: ArrayRef = match meta.resolution {
            Resolution::Bool => Arc::new(BooleanArray::new(self.bits.finish(), None)),
            Resolution::String => {
                // SAFETY: offsets are monotonic and every element was checked as UTF-8.
                Arc::new(unsafe {
                    StringArray::new_unchecked(
                        OffsetBuffer::new_unchecked(self.elem_offsets.into()),
                        Buffer::from_vec(self.elem_data),
                        None,
                    )
                })
            }
            Resolution::Json if self.exact => Arc::new(BinaryArray::new(
                OffsetBuffer::new(self.elem_offsets.into()),
                Buffer::from_vec(self.elem_data),
                None,
            )),
            Resolution::Json => {
                // SAFETY: monotonic offsets; the text was produced as Rust strings.
                Arc::new(unsafe {
                    StringArray::new_unchecked(
                        OffsetBuffer::new_unchecked(self.elem_offsets.into()),
                        Buffer::from_vec(self.elem_data),
                        None,
                    )
                })
            }
            r => {
                let data = ArrayDataBuilder::new(r.arrow_type(false))
                    .len(rows * n)
                    .add_buffer(self.values.into())
                    .build()?;
                make_array(data)
            }
        };
        let vector = FixedSizeListArray::try_new_with_length(item, n as i32, values, None, rows)?;
        let nulls = NullBuffer::new(self.app_valid.finish());
        let nulls = (nulls.null_count() > 0).then_some(nulls);
        let app: ArrayRef = if self.exact {
            Arc::new(BinaryArray::try_new(
                OffsetBuffer::new(self.app_offsets.into()),
                Buffer::from_vec(self.app_data),
                nulls,
            )?)
        } else {
            // SAFETY: monotonic offsets; the text was produced as Rust strings.
            Arc::new(unsafe {
                StringArray::new_unchecked(
                    OffsetBuffer::new_unchecked(self.app_offsets.into()),
                    Buffer::from_vec(self.app_data),
                    nulls,
                )
            })
        };
        let mut columns: Vec<ArrayRef> = vec![Arc::new(vector), app];
        if self.with_offsets {
            columns.push(Arc::new(UInt64Array::from(self.offsets)));
        }
        let options = RecordBatchOptions::new().with_row_count(Some(rows));
        Ok(RecordBatch::try_new_with_options(
            schema, columns, &options,
        )?)
    }
}

/// The fragments of a VS file: runs of point blocks of about `target_rows` live points, found
/// by walking the block headers (nothing is decoded). A run begins at its first point block
/// and ends past its last one; blank (deleted) and unknown blocks between runs are skipped.
pub fn fragments(
    path: &Path,
    options: VsReadOptions,
    target_rows: usize,
) -> Result<Vec<FragmentSpan>> {
    let file = VsFile::open(path, options)?;
    let mut failure = None;
    let spans = if file.meta.is_none() {
        Vec::new()
    } else {
        let mut blocks = Blocks::new(&file.bytes, file.data_start, options.parse.eof);
        let units = std::iter::from_fn(|| loop {
            match blocks.next_block() {
                Ok(Some(block)) if block.kind == codec::POINT => {
                    let length = (codec::BLOCK_HEADER + block.payload.len()) as u64;
                    return Some(Unit {
                        start: block.offset,
                        end: block.offset + length,
                        rows: 1,
                        bytes: length,
                    });
                }
                Ok(Some(_)) => continue,
                Ok(None) => return None,
                Err(e) => {
                    failure = Some(e);
                    return None;
                }
            }
        });
        group_units(
            units,
            target_rows,
            |start, end| FragmentRange::Bytes { start, end },
            FragmentRange::Bytes { start: 0, end: 0 },
        )
    };
    if let Some(e) = failure {
        return Err(attach(e, file.path()));
    }
    if spans.is_empty() {
        return Ok(vec![FragmentSpan {
            range: FragmentRange::Bytes { start: 0, end: 0 },
            rows: 0,
            rows_exact: true,
            bytes: 0,
        }]);
    }
    Ok(spans)
}

/// One block as `inspect` lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlockInfo {
    /// Type byte.
    pub kind: u8,
    /// Offset of the block in the file.
    pub offset: u64,
    /// Payload length.
    pub length: u32,
    /// Points: the vector's compression code (low 3 bits of its option byte).
    pub compression: Option<u8>,
}

/// The block structure of a file, for `inspect`.
#[derive(Debug, Clone, Default)]
pub struct Description {
    /// The meta block, if there is one.
    pub meta: Option<Meta>,
    /// Point blocks.
    pub live_points: u64,
    /// Blank (deleted) blocks.
    pub blank_blocks: u64,
    /// Blocks of types the format does not define.
    pub unknown_blocks: u64,
    /// Number of live points per compression code 0–7.
    pub compression_counts: [u64; 8],
    /// The first `max_blocks` blocks in file order.
    pub blocks: Vec<BlockInfo>,
    /// Offset of the terminal `'$'`, if the file has one.
    pub terminal: Option<u64>,
    /// Bytes after the terminal (ignored by readers).
    pub trailing_bytes: u64,
    /// Bytes of the file.
    pub file_size: u64,
}

impl VsFile {
    /// Walks every block (leniently at the end of the file; the terminal says whether `'$'`
    /// was there) and lists the first `max_blocks` of them.
    pub fn describe(&self, max_blocks: usize) -> Result<Description> {
        let bytes: &[u8] = &self.bytes;
        let mut d = Description {
            meta: self.meta.clone(),
            file_size: bytes.len() as u64,
            ..Description::default()
        };
        let mut blocks = Blocks::new(bytes, 4, codec::EofMode::Lenient);
        let result = (|| {
            while let Some(b) = blocks.next_block()? {
                let mut compression = None;
                match b.kind {
                    codec::POINT => {
                        d.live_points += 1;
                        let point = codec::parse_point(&b, self.options.parse.varint)?;
                        let code = point.vec_option & 7;
                        d.compression_counts[code as usize] += 1;
                        compression = Some(code);
                    }
                    codec::BLANK => d.blank_blocks += 1,
                    codec::META => {}
                    _ => d.unknown_blocks += 1,
                }
                if d.blocks.len() < max_blocks {
                    d.blocks.push(BlockInfo {
                        kind: b.kind,
                        offset: b.offset,
                        length: b.payload.len() as u32,
                        compression,
                    });
                }
            }
            Ok::<(), Error>(())
        })();
        result.map_err(|e| attach(e, self.path()))?;
        d.terminal = blocks.terminal;
        if let Some(t) = d.terminal {
            d.trailing_bytes = d.file_size - t - 1;
        }
        Ok(d)
    }
}
