//! An opened VS file ([`VsFile`]): its bytes (mapped, under the shared lock that guards them,
//! or read by ranges from a [`ByteSource`]), and the meta block, found by walking the blocks
//! before it when the file is opened.

use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use arrow_buffer::Buffer;
use arrow_schema::SchemaRef;

use super::fetch::{FileBytes, Windows};
use super::schema::schema_for;
use super::table::BlockTable;
use super::ReaderOptions;
use crate::error::{Error, ErrorClass, Result};
use crate::source::ByteSource;
use crate::vs::codec::{self, Block, Meta, ParseOptions, UnknownBlocks};
use crate::vs::lock::{self, LockKind, LockedFile};

/// An opened VS file: its bytes (mapped, or read by ranges), its meta and the lock that
/// guards them.
pub struct VsFile {
    path: Option<PathBuf>,
    pub(super) bytes: FileBytes,
    _lock: Option<LockedFile>,
    pub(super) meta: Option<Meta>,
    /// Offset of the first block after the meta block (or of the end, without meta).
    pub(super) data_start: usize,
    pub(super) options: ReaderOptions,
    /// The point blocks of a file read by ranges, walked when its fragments are first listed.
    pub(super) table: OnceLock<Arc<BlockTable>>,
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
        Self::from_parts(
            FileBytes::whole(bytes),
            Some(locked),
            Some(path.to_path_buf()),
            options,
        )
    }

    /// Opens the VS file `source` reads (a remote object, say) without a lock: a remote
    /// object has none, and is never changed in place. A local source is read whole (its
    /// ranges are slices of a map); any other is read by ranges: the first 64 KiB now (the
    /// header and meta block, and the whole of a smaller file), in one round trip, and the
    /// blocks a read needs when it needs them.
    pub fn open_source(source: Arc<dyn ByteSource>, options: ReaderOptions) -> Result<VsFile> {
        Self::open_source_with(source, options, Windows::default())
    }

    /// [`open_source`](Self::open_source) reading `windows` at a time.
    pub(super) fn open_source_with(
        source: Arc<dyn ByteSource>,
        options: ReaderOptions,
        windows: Windows,
    ) -> Result<VsFile> {
        let location = PathBuf::from(source.location());
        let bytes = FileBytes::open(source, windows)?;
        Self::from_parts(bytes, None, Some(location), options)
    }

    /// VS bytes held in memory (no lock).
    pub fn from_bytes(bytes: Vec<u8>, options: ReaderOptions) -> Result<VsFile> {
        Self::from_parts(
            FileBytes::whole(Buffer::from_vec(bytes)),
            None,
            None,
            options,
        )
    }

    fn from_parts(
        bytes: FileBytes,
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
            table: OnceLock::new(),
        })
    }

    /// The meta block; `None` for the empty store.
    pub fn meta(&self) -> Option<&Meta> {
        self.meta.as_ref()
    }

    /// The file's path (or the source's location), unless it was opened from bytes.
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// The whole file's bytes, when they are in memory: always for a local file, for one
    /// read by ranges only when it is smaller than its first read (64 KiB).
    pub fn bytes(&self) -> Option<&[u8]> {
        self.bytes.all().map(|b| b.as_slice())
    }

    /// The file's size in bytes.
    pub fn size(&self) -> u64 {
        self.bytes.size
    }

    /// The source the file is read from by ranges (`None` when opened from a path or bytes).
    pub fn source(&self) -> Option<&Arc<dyn ByteSource>> {
        self.bytes.source()
    }

    /// The Arrow schema of every column this file reads as.
    pub fn schema(&self) -> SchemaRef {
        Arc::new(schema_for(self.meta.as_ref(), &self.options))
    }
}

/// Walks the blocks from offset 4 to the meta block (spec §4 placement rules): over the bytes
/// read when the file was opened, and over windows that double from there when the meta block
/// lies further (a file read by ranges).
fn scan_to_meta(bytes: &FileBytes, parse: &ParseOptions) -> Result<(Option<Meta>, usize)> {
    codec::check_header(&bytes.head)?;
    let mut meta = None;
    let visit = |block: &Block<'_>| match block.kind {
        codec::META => {
            meta = Some(codec::parse_meta(block, parse.varint)?);
            Ok(ControlFlow::Break(()))
        }
        codec::POINT => Err(codec::block_error(
            block.kind,
            block.offset,
            ErrorClass::BadMeta,
            "point before meta block",
        )),
        kind => check_other_block(kind, block, parse).map(ControlFlow::Continue),
    };
    let end = bytes.walk_blocks(4, parse.eof, bytes.windows.open, visit)?;
    Ok((meta, end.position as usize))
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
