//! VS → Arrow (spec §13.1, §14.1).
//!
//! A local file is opened under the shared header lock and memory-mapped; the lock is held for
//! the reader's whole life. A file a [`ByteSource`](crate::source::ByteSource) reads by ranges
//! (a remote object) has no lock; its bytes are fetched in windows as the walk needs them (see
//! `fetch`, `layout` and docs/vs.md for what each step costs). The blocks before the meta block
//! are walked when the file is opened (the schema needs the meta); the points are then walked
//! one batch at a time, so memory stays bounded by the batch. Compressed vectors of a batch are
//! decompressed in parallel.
//!
//! `file` opens a file and finds its meta block, `fetch` holds its bytes and reads the windows
//! of a file read by ranges, `schema` gives the Arrow schema, `walk` walks the blocks, `batches`
//! holds the [`Reader`] that turns them into record batches and `arrays` the arrays of one
//! batch; `layout` lists fragments and blocks without decoding. This file holds the options and
//! the [`ReaderBuilder`].

mod arrays;
mod batches;
mod fetch;
mod file;
mod layout;
mod schema;
mod table;
mod walk;

use std::path::Path;
use std::sync::Arc;

use self::walk::Walk;
use super::codec::{self, UnknownBlocks, VarintOrder};
use super::lock::LockWait;
use super::mapping::APP_DATA_COLUMN;
pub(crate) use super::read_options::AppDataMode;
use super::read_options::ReaderOptions;
use super::vector_codec::VectorDecoder;
use crate::error::{Error, Result};
use crate::salvage::Salvage;
use crate::scan::{FragmentRange, ScanOptions};

pub use self::batches::Reader;
pub use self::file::VsFile;
pub use self::layout::{fragments, BlockInfo, Description};
pub use self::schema::schema_for;

/// Rows per batch unless the caller chooses: the one default of every reader (it was 1,024 for
/// VS alone; a batch of 65,536 points of 1,024 `f32` each is 256 MiB, so callers with wide
/// vectors choose a smaller one with `with_batch_size`).
pub const DEFAULT_BATCH_SIZE: usize = crate::scan::DEFAULT_BATCH_SIZE;

/// Builds a VS [`Reader`].
#[derive(Debug, Clone, Default)]
pub struct ReaderBuilder {
    scan: ScanOptions,
    options: ReaderOptions,
}

impl ReaderBuilder {
    /// A builder with every option at its default: 65,536 rows per batch
    /// ([`DEFAULT_BATCH_SIZE`](crate::DEFAULT_BATCH_SIZE)), every column, the
    /// whole file, the format's strict end of file, LEB128 varints, app_data as JSON.
    pub fn new() -> Self {
        Self::default()
    }

    crate::scan::scan_setters!();

    /// All VS-specific options at once (default: [`ReaderOptions::default`]).
    pub fn with_options(mut self, options: &ReaderOptions) -> Self {
        self.options = *options;
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
        if pos < end && pos as u64 > file.size() {
            return Err(attach(
                Error::invalid_argument(format!(
                    "a fragment cannot start at offset {pos}, past the end of the file ({} bytes)",
                    file.size()
                )),
                file.path(),
            ));
        }
        let done = file.meta.is_none() || pos >= end;
        let app_wanted = match (&columns, full.index_of(APP_DATA_COLUMN)) {
            (Some(columns), Ok(app)) => columns.contains(&app),
            _ => true,
        };
        let limit = self.scan.limit.unwrap_or(usize::MAX);
        let batch_size = self.scan.batch_size_or(DEFAULT_BATCH_SIZE);
        // A walk for a few rows (a small limit) starts with a small window of a file read by
        // ranges; any other with a full one (never more than its fragment).
        let read_window = file.bytes.windows.read;
        let first_window = if limit < batch_size {
            walk::SMALL_FIRST_WINDOW.min(read_window)
        } else {
            read_window
        };
        let mut walk = Walk::new(
            &file,
            pos,
            end,
            first_window,
            Salvage::from_scan(&self.scan),
        );
        walk.done = done;
        Ok(Reader {
            file,
            full,
            schema,
            columns,
            app_wanted,
            decoder: VectorDecoder::default(),
            batch_size,
            left: limit,
            walk,
        })
    }
}

#[cfg(test)]
mod tests;

/// Names the file in an error, when the bytes came from one.
fn attach(e: Error, path: Option<&Path>) -> Error {
    match path {
        Some(p) => e.with_file(p),
        None => e,
    }
}
