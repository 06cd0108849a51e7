//! An opened VS file ([`VsFile`]): its bytes (mapped), the shared lock that guards them, and
//! the meta block, found by walking the blocks before it when the file is opened.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_buffer::Buffer;
use arrow_schema::SchemaRef;

use super::schema::schema_for;
use super::ReaderOptions;
use crate::error::{Error, ErrorClass, Result};
use crate::vs::codec::{self, Block, Blocks, Meta, ParseOptions, UnknownBlocks};
use crate::vs::lock::{self, LockKind, LockedFile};

/// An opened VS file: its bytes (mapped), its meta and the lock that guards them.
pub struct VsFile {
    path: Option<PathBuf>,
    pub(super) bytes: Buffer,
    _lock: Option<LockedFile>,
    pub(super) meta: Option<Meta>,
    /// Offset of the first block after the meta block (or of the end, without meta).
    pub(super) data_start: usize,
    pub(super) options: ReaderOptions,
}

impl VsFile {
    /// Opens a file under the shared lock and reads everything up to the meta block.
    pub fn open(path: impl AsRef<Path>, options: ReaderOptions) -> Result<VsFile> {
        let path = path.as_ref();
        let locked = lock::open_locked(path, LockKind::Shared, options.lock)?;
        // Mapped: writers that follow the format take the exclusive lock, which this shared
        // lock excludes, and appenders only write past the terminal.
        let (bytes, _) =
            crate::mapped::file_bytes(&locked.file).map_err(|e| Error::from(e).with_file(path))?;
        Self::from_parts(bytes, Some(locked), Some(path.to_path_buf()), options)
    }

    /// Opens the VS file `source` reads (a remote object, say) without a lock: a remote
    /// object has none, and is never changed in place.
    pub fn open_source(
        source: Arc<dyn crate::source::ByteSource>,
        options: ReaderOptions,
    ) -> Result<VsFile> {
        let location = PathBuf::from(source.location());
        let bytes = source.read_all().map_err(|e| e.with_file(&location))?;
        Self::from_parts(bytes, None, Some(location), options)
    }

    /// VS bytes held in memory (no lock).
    pub fn from_bytes(bytes: Vec<u8>, options: ReaderOptions) -> Result<VsFile> {
        Self::from_parts(Buffer::from_vec(bytes), None, None, options)
    }

    fn from_parts(
        bytes: Buffer,
        lock: Option<LockedFile>,
        path: Option<PathBuf>,
        options: ReaderOptions,
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

/// Refuses a block that is neither a point nor the meta block when the options say so.
pub(super) fn check_other_block(kind: u8, block: &Block<'_>, parse: &ParseOptions) -> Result<()> {
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
