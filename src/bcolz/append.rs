//! Appending to an existing carray / ctable in place (spec B5), crash-safe: chunk files are
//! written under temporary names and renamed; `meta/sizes` — the commit record — is rewritten
//! last, the first column's last of all (bcolz and our reader take the table length from it).
//! Until then readers see the previous contents; an interrupted append can simply be re-run.
//!
//! An append holds the dataset's append lock (`lock`) from its opening to its end, so two never
//! write at once. Every file it puts in place goes through a `journal`: an append that fails or
//! is dropped before its commit puts the dataset back as it was, file for file; what one that
//! died left (temporary files, kept originals, chunks past the committed rows) is removed by
//! the next append when it opens the dataset.

mod lock;

use std::path::{Path, PathBuf};

use arrow_array::RecordBatch;
use arrow_buffer::Buffer;
use arrow_schema::{DataType, SchemaRef};

use super::blosc::Codec;
use super::journal::{self, beside, Journal, TEMP_SUFFIX};
use super::mapping::{self, Base};
use super::meta::{self, Kind};
use super::writer::{
    queue_full_chunks, queue_leftovers, sizes_text, take_column, write_text, ChunkFiles, ChunkJobs,
    Column, Piece,
};
use super::NullPolicy;
use crate::error::{Error, ErrorClass, Result};
use crate::vs::LockWait;
use crate::write::{check_batch, BatchWriter, WriteSummary};

/// Appends record batches to an existing bcolz directory.
pub struct Appender {
    jobs: ChunkJobs,
    path: PathBuf,
    /// The dataset's columns, in `__rootdirs__` order.
    columns: Vec<Column>,
    /// For each input column, the dataset column it feeds.
    input_to_column: Vec<usize>,
    types: Vec<DataType>,
    committed: u64,
    rows: u64,
    null_policy: NullPolicy,
    /// The files put in place so far, to be put back if the append does not commit.
    journal: Journal,
    /// Whether the append has committed or been rolled back (nothing left to undo).
    settled: bool,
    /// Released (dropped) only after a roll-back, so the next appender finds the dataset whole.
    _lock: lock::AppendLock,
}

impl Appender {
    /// Opens `path` (checked as the reader checks it) for batches of `schema`, whose columns
    /// must match the dataset's by name (a carray: exactly one column) and type. Waits while
    /// another process appends to the dataset (see [`Appender::try_new_with_lock`]).
    pub fn try_new(
        path: impl AsRef<Path>,
        schema: SchemaRef,
        null_policy: NullPolicy,
    ) -> Result<Appender> {
        Appender::try_new_with_lock(path, schema, null_policy, LockWait::Block)
    }

    /// Like [`Appender::try_new`], but with `LockWait::Try` fails at once ("… is being appended
    /// to by another process") instead of waiting while another appender holds the dataset's
    /// append lock.
    pub fn try_new_with_lock(
        path: impl AsRef<Path>,
        schema: SchemaRef,
        null_policy: NullPolicy,
        wait: LockWait,
    ) -> Result<Appender> {
        let path = path.as_ref();
        crate::source::refuse_url(path, "appending to a bcolz dataset")?;
        // Anything but a directory is refused by `meta::open` below, with its own message.
        let held = if path.is_dir() {
            Some(lock::lock_for_append(path, wait)?)
        } else {
            None
        };
        let info = open_recovered(path)?;
        let Some(held) = held else {
            return Err(Error::invalid_argument("not a bcolz directory").with_file(path));
        };
        let fields = schema.fields();
        let input_to_column = match_columns(&info, &schema).map_err(|e| e.with_file(path))?;
        let committed = info.nrows;
        let journal = Journal::default();
        let mut columns: Vec<Column> = Vec::with_capacity(info.columns.len());
        for (c, carray) in info.columns.iter().enumerate() {
            let input = input_to_column
                .iter()
                .position(|&x| x == c)
                .expect("every column is fed");
            let column = open_column(carray, &fields[input], committed, &journal)
                .map_err(|e| e.with_column(c, Some(&carray.name)).with_file(path))?;
            columns.push(column);
        }
        let types = fields.iter().map(|f| f.data_type().clone()).collect();
        Ok(Appender {
            jobs: ChunkJobs::new(),
            path: path.to_path_buf(),
            columns,
            input_to_column,
            types,
            committed,
            rows: 0,
            null_policy,
            journal,
            settled: false,
            _lock: held,
        })
    }

    /// Appends the batch's rows; they become visible only when [`Appender::finish`] commits.
    pub fn write(&mut self, batch: &RecordBatch) -> Result<()> {
        self.jobs.check().map_err(|e| e.with_file(&self.path))?;
        check_batch(batch, &self.types).map_err(|e| e.with_file(&self.path))?;
        let first_row = self.rows;
        for (input, &c) in self.input_to_column.iter().enumerate() {
            let col = &mut self.columns[c];
            take_column(col, batch.column(input), first_row, self.null_policy)
                .map_err(|e| e.with_column(c, Some(&col.name)).with_file(&self.path))?;
        }
        self.rows += batch.num_rows() as u64;
        queue_full_chunks(&mut self.columns, &mut self.jobs).map_err(|e| e.with_file(&self.path))
    }

    /// Writes the last partial chunks, then commits the new length in every `meta/sizes`
    /// (the first column's last). On an error before the commit, the dataset is put back as
    /// it was.
    pub fn finish(mut self) -> Result<WriteSummary> {
        if let Err(e) = self.write_uncommitted() {
            return Err(self.roll_back(e));
        }
        crate::test_hooks::crash_point("bcolz-append-synced");
        // A stop requested until here leaves the dataset as it was.
        if let Err(e) = crate::cancel::check() {
            return Err(self.roll_back(e.with_file(&self.path)));
        }
        // The commit: the first column's meta/sizes.
        if let Err(e) = self.replace_sizes(0) {
            return Err(self.roll_back(e));
        }
        self.settled = true;
        self.journal.discard();
        crate::atomic::sync_dir(&self.columns[0].dir.join("meta")).map_err(|e| {
            Error::new(
                ErrorClass::Io,
                format!(
                    "the rows were appended, but flushing the commit to disk failed: {}",
                    e.message()
                ),
            )
            .with_file(&self.path)
        })?;
        Ok(WriteSummary {
            rows: self.rows,
            warnings: self
                .columns
                .iter()
                .filter_map(Column::trailing_nul_warning)
                .collect(),
        })
    }

    /// Everything but the commit: the last chunks, every chunk flushed with its rename, then
    /// the `meta/sizes` of every column but the first.
    fn write_uncommitted(&mut self) -> Result<()> {
        queue_full_chunks(&mut self.columns, &mut self.jobs)
            .and_then(|_| queue_leftovers(&mut self.columns, &mut self.jobs))
            .and_then(|_| self.jobs.finish(&mut self.columns))
            .map_err(|e| e.with_file(&self.path))?;
        // Every chunk file is on disk (each was flushed before its rename); the renames too,
        // before any meta/sizes names rows they hold.
        for (c, col) in self.columns.iter().enumerate() {
            let data = col.dir.join("data");
            // An empty dataset may have no data/ yet, and then nothing was written into it.
            if data.is_dir() {
                crate::atomic::sync_dir(&data)
                    .map_err(|e| e.with_column(c, Some(&col.name)).with_file(&self.path))?;
            }
        }
        for c in 1..self.columns.len() {
            self.replace_sizes(c)?;
        }
        Ok(())
    }

    /// Puts column `c`'s new `meta/sizes` in place (written, flushed, renamed; the rename
    /// flushed too, so no other column's survives a crash that the first column's does not).
    fn replace_sizes(&self, c: usize) -> Result<()> {
        let col = &self.columns[c];
        let at = |e: Error| e.with_column(c, Some(&col.name)).with_file(&self.path);
        let meta = col.dir.join("meta");
        let path = meta.join("sizes");
        let temp = beside(&path, TEMP_SUFFIX);
        let text = sizes_text(col, self.committed + self.rows);
        if let Err(e) = write_text(&temp, &text, true) {
            let _ = std::fs::remove_file(&temp);
            return Err(at(e));
        }
        self.journal.replace(&temp, &path).map_err(at)?;
        if c > 0 {
            crate::atomic::sync_dir(&meta).map_err(at)?;
        }
        Ok(())
    }

    /// Waits for the chunk jobs, then puts back every file the append replaced; returns
    /// `error`, with a failure to put back added to it.
    fn roll_back(&mut self, error: Error) -> Error {
        self.settled = true;
        let _ = self.jobs.finish(&mut self.columns);
        match self.journal.roll_back() {
            Ok(()) => error,
            Err(e) => Error::new(
                error.class(),
                format!(
                    "{}; putting the dataset back as it was failed too ({e}): the next append \
                     removes what is left",
                    error.message()
                ),
            )
            .with_file(&self.path),
        }
    }
}

impl Drop for Appender {
    /// An append dropped before its commit (an error in `write`, a caller that gave up) leaves
    /// the dataset as it was.
    fn drop(&mut self) {
        if !self.settled {
            let _ = self.roll_back(Error::new(ErrorClass::Io, String::new()));
        }
    }
}

/// For each input column, the dataset column it feeds (a ctable's by name, all of them).
fn match_columns(info: &meta::DatasetInfo, schema: &SchemaRef) -> Result<Vec<usize>> {
    let fields = schema.fields();
    Ok(match info.kind {
        Kind::Carray => {
            if fields.len() != 1 {
                return Err(Error::invalid_argument(format!(
                    "a carray takes one column, the input has {}",
                    fields.len()
                )));
            }
            vec![0]
        }
        Kind::Ctable => {
            let names: Vec<&str> = info.columns.iter().map(|c| c.name.as_str()).collect();
            let mut map = Vec::with_capacity(fields.len());
            for f in fields {
                let c = names.iter().position(|n| n == f.name()).ok_or_else(|| {
                    Error::invalid_argument(format!(
                        "the input column {:?} is not a column of the ctable ({})",
                        f.name(),
                        names.join(", ")
                    ))
                })?;
                map.push(c);
            }
            if fields.len() != names.len() {
                let missing: Vec<&str> = names
                    .iter()
                    .enumerate()
                    .filter(|(i, _)| !map.contains(i))
                    .map(|(_, n)| *n)
                    .collect();
                return Err(Error::invalid_argument(format!(
                    "the input lacks the ctable columns {}",
                    missing.join(", ")
                )));
            }
            map
        }
    })
}

/// The column `carray` of the dataset, opened for rows of `field`: checked against it, what a
/// crashed append left removed, its committed leftover rows read as the first pending rows.
fn open_column(
    carray: &meta::CarrayInfo,
    field: &arrow_schema::Field,
    committed: u64,
    journal: &Journal,
) -> Result<Column> {
    let mismatch = || {
        Error::new(
            ErrorClass::UnsupportedType,
            format!(
                "cannot append Arrow {} to dtype {:?}{}",
                field.data_type(),
                carray.dtype_text,
                if carray.row_shape.is_empty() {
                    String::new()
                } else {
                    format!(" with row shape {:?}", carray.row_shape)
                }
            ),
        )
    };
    let (dtype, row_shape) = mapping::dtype_for_arrow(field).ok_or_else(mismatch)?;
    let compatible = match (dtype.base, carray.dtype.base) {
        (Base::Bytes(_), Base::Bytes(_)) | (Base::Unicode(_), Base::Unicode(_)) => true,
        (a, b) => a == b,
    };
    if !compatible || row_shape != carray.row_shape {
        return Err(mismatch());
    }
    // Chunks past what any length claims were left by an append that died.
    journal::remove_leftovers(&carray.dir, carray.chunks_for(carray.rows.max(committed)))?;
    let codec = Codec::from_name(&carray.cparams.cname)
        .filter(|c| c.available())
        .ok_or_else(|| {
            Error::unsupported(format!(
                "the column's codec {:?} is not available in this build of arrowsmith",
                carray.cparams.cname
            ))
        })?;
    let width = match carray.dtype.base {
        Base::Bytes(w) | Base::Unicode(w) => w,
        _ => 1,
    };
    let mut col = Column {
        name: carray.name.clone(),
        dtype: carray.dtype.clone(),
        row_shape: carray.row_shape.clone(),
        fixed_width: Some(width),
        width,
        dir: carray.dir.clone(),
        chunklen: Some(carray.chunklen),
        pending: Default::default(),
        pending_rows: 0,
        chunks: Vec::new(),
        attrs_text: String::new(),
        codec,
        clevel: carray.cparams.clevel,
        shuffle: carray.cparams.shuffle,
        big_endian: carray.dtype.big_endian,
        files: ChunkFiles::Live(journal.clone()),
        trailing_nuls: 0,
    };
    // Full chunks stay as they are (their cbytes count in meta/sizes); the committed
    // rows of the leftover chunk become the start of the new rows.
    let nfull = committed / carray.chunklen;
    for k in 0..nfull {
        let header = carray.chunk_header(k)?;
        col.chunks.push((width, header.cbytes as u64));
    }
    let left = (committed % carray.chunklen) as usize;
    if left > 0 {
        let mut raw = carray.read_chunk(nfull, left)?.as_slice().to_vec();
        let unit = carray.dtype.swap_unit();
        if carray.dtype.big_endian && unit > 1 {
            for group in raw.chunks_exact_mut(unit) {
                group.reverse();
            }
        }
        col.push_rows(Piece::Stored {
            bytes: Buffer::from_vec(raw),
            item: carray.atomsize,
            offset: 0,
            len: left,
        });
    }
    Ok(col)
}

/// Opens the dataset after a crashed append: a column other than the first whose `meta/sizes`
/// was replaced but whose table never committed gets its kept `meta/sizes` back (so its length
/// is the table's again, and its extra chunks can go).
fn open_recovered(path: &Path) -> Result<meta::DatasetInfo> {
    let info = meta::open(path, None)?;
    let mut restored = false;
    for carray in info.columns.iter().skip(1) {
        if let Some(kept) = journal::kept_sizes(&carray.dir) {
            if carray.rows != info.nrows {
                let sizes = carray.dir.join("meta").join("sizes");
                std::fs::rename(&kept, &sizes).map_err(|e| Error::from(e).with_file(&sizes))?;
                restored = true;
            }
        }
    }
    if restored {
        meta::open(path, None)
    } else {
        Ok(info)
    }
}

impl BatchWriter for Appender {
    fn write(&mut self, batch: &RecordBatch) -> Result<()> {
        Appender::write(self, batch)
    }
    fn finish(self: Box<Self>) -> Result<WriteSummary> {
        Appender::finish(*self)
    }
}
