//! Changing an existing file in place, under its exclusive lock: appending points crash-safely
//! (spec §13.3), deleting one by blanking its type byte (§13.4), and compacting the file
//! (§13.5). Each walks the whole file's block headers first.

use std::fs::File;
use std::io::Write;
use std::path::Path;

use arrow_array::RecordBatchReader;

use super::plan::Plan;
use super::{arg, WriterOptions};
use crate::atomic::AtomicFile;
use crate::error::{Error, ErrorClass, Result};
use crate::vs::codec::{self, Blocks, EofMode, Meta, VarintOrder};
use crate::vs::lock::{self, LockKind, LockWait};
use crate::vs::mapping::shape_json;

/// The bytes of a file we hold the exclusive lock of (so nobody else changes them while the
/// mapping is in use; we write through the descriptor only after the walk).
fn map(file: &File) -> Result<arrow_buffer::Buffer> {
    Ok(crate::mapped::file_bytes(file)?.0)
}

/// (type, start, end) of every block before the terminal.
type BlockList = Vec<(u8, u64, u64)>;

/// Walks a whole file: its meta, the offset of its terminal (`None`: no `'$'`) and its blocks.
fn walk(bytes: &[u8], lenient: bool) -> Result<(Option<Meta>, Option<u64>, BlockList)> {
    codec::check_header(bytes)?;
    let eof = if lenient {
        EofMode::Lenient
    } else {
        EofMode::Strict
    };
    let mut blocks = Blocks::new(bytes, 4, eof);
    let mut meta = None;
    let mut list = Vec::new();
    while let Some(b) = blocks.next_block()? {
        match b.kind {
            codec::META if meta.is_some() => {
                return Err(codec::block_error(
                    b.kind,
                    b.offset,
                    ErrorClass::BadMeta,
                    "duplicate meta block",
                ))
            }
            codec::META => meta = Some(codec::parse_meta(&b, VarintOrder::Leb128)?),
            codec::POINT if meta.is_none() => {
                return Err(codec::block_error(
                    b.kind,
                    b.offset,
                    ErrorClass::BadMeta,
                    "point before meta block",
                ))
            }
            _ => {}
        }
        list.push((b.kind, b.offset, b.end()));
    }
    Ok((meta, blocks.terminal, list))
}

/// What an append did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AppendSummary {
    /// Points appended.
    pub rows: u64,
    /// Offset of the first new block (the old terminal).
    pub offset: u64,
}

/// Appends the rows of `reader` to an existing file, crash-safely (spec §13.3): the new blocks
/// and a new `'$'` are written after the old `'$'` and synced; then the old `'$'` is replaced
/// by the first new type byte and synced. A crash at any point leaves the old or the new file;
/// an error before the commit cuts the file back to its length before the append.
pub fn append(
    path: impl AsRef<Path>,
    reader: impl RecordBatchReader,
    options: &WriterOptions,
) -> Result<AppendSummary> {
    let path = path.as_ref();
    crate::source::refuse_url(path, "appending to a vs file")?;
    append_inner(path, reader, options).map_err(|e| e.with_file(path))
}

fn append_inner(
    path: &Path,
    reader: impl RecordBatchReader,
    options: &WriterOptions,
) -> Result<AppendSummary> {
    use std::os::unix::fs::FileExt;
    let locked = lock::open_locked(path, LockKind::Exclusive, options.lock)?;
    let file = &locked.file;
    let bytes = map(file)?;
    let (meta, terminal, _) = walk(&bytes, options.lenient_eof)?;
    let size = bytes.len() as u64;
    drop(bytes);
    let schema = reader.schema();
    let plan = Plan::new(&schema, options, meta.as_ref().map(|m| m.pack))?;
    if let (Some(meta), Some(v)) = (&meta, &plan.vector) {
        if meta.resolution != v.resolution || meta.dims != v.dims {
            return Err(arg(format!(
                "the new points are {} {}, the file holds {} {}",
                v.resolution.name(),
                shape_json(&v.dims),
                meta.resolution.name(),
                shape_json(&meta.dims)
            )));
        }
    }
    if let Some(t) = terminal.filter(|&t| t + 1 < size) {
        // What an append that died before its commit left beyond the '$': readers ignore it,
        // and it is given back to the disk before anything new is written.
        file.set_len(t + 1)?;
        file.sync_data()?;
    }
    let committed = terminal.map_or(size, |t| t + 1);
    let mut tail = UncommittedTail {
        file,
        committed,
        armed: true,
    };
    let has_terminal = terminal.is_some();
    let terminal = terminal.unwrap_or(size);
    let written = write_uncommitted(file, terminal, has_terminal, meta.is_none(), &plan, reader);
    let (first, rows) = match written {
        Ok(w) => w,
        Err(e) => return Err(tail.roll_back(e)),
    };
    let Some(first) = first else {
        tail.roll_back_quietly();
        return Ok(AppendSummary {
            rows: 0,
            offset: terminal,
        });
    };
    crate::test_hooks::crash_point("vs-append-synced");
    crate::test_hooks::pause_point("vs-append-commit");
    // The commit point: until the old '$' is replaced, readers see the old points.
    if let Err(e) = crate::cancel::check() {
        return Err(tail.roll_back(e));
    }
    if let Err(e) = file.write_all_at(&[first], terminal) {
        return Err(tail.roll_back(e.into()));
    }
    // The commit byte is written: from here on the new points are the file's.
    tail.armed = false;
    file.sync_data()?;
    Ok(AppendSummary {
        rows,
        offset: terminal,
    })
}

/// Writes the new blocks and a new `'$'` after the `'$'` at `terminal` (written first if the
/// file has none), all but their first byte, and syncs them. Returns the first
/// byte (`None`: nothing to append) and the points written.
fn write_uncommitted(
    file: &File,
    terminal: u64,
    has_terminal: bool,
    needs_meta: bool,
    plan: &Plan,
    reader: impl RecordBatchReader,
) -> Result<(Option<u8>, u64)> {
    use std::os::unix::fs::FileExt;
    if !has_terminal {
        // Lenient: the file ended at a block boundary. Give it its '$' first.
        file.write_all_at(&[codec::TERMINAL], terminal)?;
        file.sync_data()?;
    }
    let mut pos = terminal + 1;
    let mut first: Option<u8> = None;
    let mut emit = |chunk: &[u8]| -> Result<()> {
        if chunk.is_empty() {
            return Ok(());
        }
        let rest = if first.is_none() {
            first = Some(chunk[0]);
            &chunk[1..]
        } else {
            chunk
        };
        file.write_all_at(rest, pos)?;
        pos += rest.len() as u64;
        Ok(())
    };
    let mut buf = Vec::new();
    if needs_meta {
        plan.meta_block(&mut buf);
        emit(&buf)?;
    }
    let mut rows = 0u64;
    crate::test_hooks::pause_point("vs-append-blocks");
    for batch in reader {
        crate::cancel::check()?;
        let batch = batch?;
        buf.clear();
        plan.encode(&batch, rows, &mut buf)?;
        emit(&buf)?;
        rows += batch.num_rows() as u64;
    }
    if first.is_none() {
        return Ok((None, 0));
    }
    file.write_all_at(&[codec::TERMINAL], pos)?;
    file.sync_data()?;
    Ok((first, rows))
}

/// The bytes an append has written past the file's committed length and not yet committed:
/// cut off again (the file back to its length before the append, the space back to the disk)
/// unless the commit byte was written. Dropping it armed (a panic) cuts them off too.
struct UncommittedTail<'a> {
    file: &'a File,
    /// The file's length before the append (after the cut of an earlier append's leftovers).
    committed: u64,
    armed: bool,
}

impl UncommittedTail<'_> {
    /// Cuts the tail off after `error`; a failure to do so is added to the error.
    fn roll_back(mut self, error: Error) -> Error {
        self.armed = false;
        match self
            .file
            .set_len(self.committed)
            .and_then(|_| self.file.sync_data())
        {
            Ok(()) => error,
            Err(e) => Error::new(
                error.class(),
                format!(
                    "{}; cutting the file back to its {} committed bytes failed too ({e}): the \
                     uncommitted bytes after its '$' stay until the next append removes them",
                    error.message(),
                    self.committed
                ),
            ),
        }
    }

    fn roll_back_quietly(&mut self) {
        if std::mem::take(&mut self.armed) {
            let _ = self.file.set_len(self.committed);
            let _ = self.file.sync_data();
        }
    }
}

impl Drop for UncommittedTail<'_> {
    fn drop(&mut self) {
        self.roll_back_quietly();
    }
}

/// Deletes the live point whose block starts at `offset`, by overwriting its `'P'` with `'0'`
/// (spec §13.4).
pub fn delete_point(path: impl AsRef<Path>, offset: u64, wait: LockWait) -> Result<()> {
    let path = path.as_ref();
    crate::source::refuse_url(path, "deleting a point")?;
    delete_where(path, wait, |list| {
        if list.iter().any(|&(k, o, _)| o == offset && k == codec::POINT) {
            Ok(offset)
        } else {
            Err(arg(format!(
                "no live point starts at offset {offset} (deleted already, or not the start of a 'P' block)"
            )))
        }
    })
    .map(|_| ())
}

/// Deletes the `ordinal`-th live point (0-based); returns the offset of its block.
pub fn delete_ordinal(path: impl AsRef<Path>, ordinal: u64, wait: LockWait) -> Result<u64> {
    crate::source::refuse_url(path.as_ref(), "deleting a point")?;
    delete_where(path.as_ref(), wait, |list| {
        list.iter()
            .filter(|&&(k, _, _)| k == codec::POINT)
            .nth(ordinal as usize)
            .map(|&(_, o, _)| o)
            .ok_or_else(|| arg(format!("no live point number {ordinal}")))
    })
}

fn delete_where(
    path: &Path,
    wait: LockWait,
    find: impl FnOnce(&[(u8, u64, u64)]) -> Result<u64>,
) -> Result<u64> {
    use std::os::unix::fs::FileExt;
    let inner = || {
        let locked = lock::open_locked(path, LockKind::Exclusive, wait)?;
        let bytes = map(&locked.file)?;
        let (_, _, list) = walk(&bytes, false)?;
        let offset = find(&list)?;
        locked.file.write_all_at(&[codec::BLANK], offset)?;
        locked.file.sync_data()?;
        Ok(offset)
    };
    inner().map_err(|e: Error| e.with_file(path))
}

/// What a compaction did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompactSummary {
    /// Bytes of the file before.
    pub bytes_before: u64,
    /// Bytes of the file after.
    pub bytes_after: u64,
    /// Points kept.
    pub points: u64,
}

/// Rewrites a file without its blank blocks and deleted points (spec §13.5).
pub fn compact(path: impl AsRef<Path>, wait: LockWait) -> Result<CompactSummary> {
    let path = path.as_ref();
    crate::source::refuse_url(path, "compacting a vs file")?;
    let inner = || {
        let locked = lock::open_locked(path, LockKind::Exclusive, wait)?;
        let bytes = map(&locked.file)?;
        let (_, _, list) = walk(&bytes, false)?;
        let mut out = AtomicFile::create(path)?;
        out.write_all(&bytes[..4])?;
        let mut points = 0;
        let mut written = 4u64;
        for &(kind, start, end) in &list {
            if kind == codec::BLANK {
                continue;
            }
            points += u64::from(kind == codec::POINT);
            written += end - start;
            out.write_all(&bytes[start as usize..end as usize])?;
        }
        out.write_all(&[codec::TERMINAL])?;
        out.commit()?;
        Ok(CompactSummary {
            bytes_before: bytes.len() as u64,
            bytes_after: written + 1,
            points,
        })
    };
    inner().map_err(|e: Error| e.with_file(path))
}
