//! Arrow → bcolz (spec B4).
//!
//! `write()` only checks a batch (nulls, string widths) and queues its columns as rows of the
//! Arrow arrays themselves; each time a column holds a full chunk of `chunklen` rows, a chunk
//! job is started on the rayon pool and `write()` returns. A job encodes the rows (nothing to
//! do for a fixed-width column without nulls: c-blosc compresses straight from the Arrow
//! buffer), compresses them (one c-blosc ctx call) and writes the chunk file, so encoding,
//! compression and file writes of all columns overlap each other and the caller's next batch.
//! At most a few jobs per thread run at a time, which bounds memory.
//!
//! The dataset is built in a temporary sibling directory and renamed into place by `finish()`;
//! nothing is left behind on error or drop. When durable (the default), the whole directory is
//! flushed to disk once, just before the rename (see `durable`), instead of file by file.
//!
//! String widths: a column's width is the largest value seen; chunks compressed while the width
//! was smaller are re-encoded (decompressed, re-padded, recompressed) at `finish()`.
//!
//! The work is divided so, each module using only those before it: `options` holds the
//! options; `piece` the rows queued (slices of the caller's arrays); `encode` their stored
//! form; `chunk` one chunk's job (encode, compress, write); `column` a column's queue of pending
//! rows; `jobs` the jobs in flight; `meta_files` the JSON files beside the chunks. This file
//! holds the [`Writer`] itself: checking the schema, `write` and `finish`.

mod chunk;
mod column;
mod encode;
mod jobs;
mod meta_files;
mod options;
mod piece;

use std::collections::{HashSet, VecDeque};
use std::fs;
use std::path::{Path, PathBuf};

use arrow_array::RecordBatch;
use arrow_buffer::Buffer;
use arrow_schema::{DataType, Field, SchemaRef};

use self::chunk::ChunkJob;
use self::meta_files::{check_attrs, column_attrs, merge_carray_attrs, write_meta};
use super::blosc;
use super::durable;
use super::json::python_string;
use super::mapping::{self, Base, DType, ATTRS_KEY, DTYPE_KEY, KIND_KEY};
use super::meta::{is_plain_component, Kind};
use crate::atomic::{check_target, refuse_stream, AtomicDir, DatasetKind, Existing, Replaceable};
use crate::error::{Error, ErrorClass, Result};
use crate::write::{check_batch, BatchWriter, WriteSummary};

pub(super) use self::chunk::ChunkFiles;
pub(super) use self::column::{take_column, Column};
pub(super) use self::jobs::{queue_full_chunks, queue_leftovers, ChunkJobs};
pub(super) use self::meta_files::{sizes_text, write_text};
pub use self::options::{default_chunklen, Compression, NullPolicy, WriterOptions};
pub(super) use self::piece::Piece;

/// The length `write()` assumes when choosing a column's chunklen before the row count is
/// known and no expected length was given.
const UNKNOWN_LEN: u64 = 1 << 20;

/// What a bcolz dataset is to [`AtomicDir`]: the only kind of directory the writer replaces
/// (with the overwrite option), recognised as `Format::detect` recognises one.
pub(crate) const DATASET: DatasetKind = DatasetKind {
    what: "bcolz dataset",
    marker: "__rootdirs__ or meta/sizes",
    is_dataset,
};

fn is_dataset(dir: &Path) -> bool {
    dir.join("__rootdirs__").is_file() || dir.join("meta").join("sizes").is_file()
}

/// Writes record batches into a new bcolz carray or ctable directory.
pub struct Writer {
    /// Declared before `dir`: dropping it waits for running jobs before the directory goes.
    jobs: ChunkJobs,
    /// fsyncs chunk files in the background (durable writes only).
    syncer: Option<durable::Syncer>,
    dir: AtomicDir,
    kind: Kind,
    columns: Vec<Column>,
    options: WriterOptions,
    rows: u64,
    root_attrs: String,
    types: Vec<DataType>,
}

impl Writer {
    /// Starts writing a bcolz directory at `path` for batches of `schema`. Nothing appears at
    /// `path` until [`Writer::finish`].
    pub fn try_new(
        path: impl AsRef<Path>,
        schema: SchemaRef,
        options: WriterOptions,
    ) -> Result<Writer> {
        let path = path.as_ref();
        let fail = |e: Error| e.with_file(path);
        check_options(&options).map_err(fail)?;
        if check_target(path, Replaceable::Dataset(DATASET), options.overwrite)? == Existing::Stream
        {
            return Err(refuse_stream(path, "bcolz"));
        }
        let kind = dataset_kind(&schema, options.kind).map_err(fail)?;
        let mut seen = HashSet::new();
        let plans = (schema.fields().iter().enumerate())
            .map(|(i, field)| {
                ColumnPlan::new(field, kind, &options, &mut seen)
                    .map_err(|e| e.with_column(i, Some(field.name())).with_file(path))
            })
            .collect::<Result<Vec<_>>>()?;
        let root_attrs = match schema.metadata().get(ATTRS_KEY) {
            Some(text) => {
                check_attrs(text).map_err(|e| fail(e.with_field("schema metadata bcolz.attrs")))?
            }
            None => "{}".to_owned(),
        };
        let mut dir = AtomicDir::create(path, DATASET)?;
        dir.set_durable(options.durable);
        let syncer = options.durable.then(durable::Syncer::start);
        let files = match &syncer {
            Some(syncer) => ChunkFiles::SyncedLater(syncer.queue()),
            None => ChunkFiles::Unsynced,
        };
        let columns = plans
            .into_iter()
            .map(|plan| {
                let col_dir = match kind {
                    Kind::Carray => dir.path().to_path_buf(),
                    Kind::Ctable => dir.path().join(&plan.name),
                };
                plan.create(col_dir, kind, &root_attrs, &options, files.clone())
                    .map_err(fail)
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Writer {
            jobs: ChunkJobs::new(),
            syncer,
            dir,
            kind,
            columns,
            options,
            rows: 0,
            root_attrs,
            types: schema
                .fields()
                .iter()
                .map(|f| f.data_type().clone())
                .collect(),
        })
    }

    fn target(&self) -> &Path {
        self.dir.target()
    }

    /// Adds the batch's rows; full chunks are compressed and written in the background.
    pub fn write(&mut self, batch: &RecordBatch) -> Result<()> {
        let target = self.target().to_path_buf();
        self.jobs.check().map_err(|e| e.with_file(&target))?;
        check_batch(batch, &self.types).map_err(|e| e.with_file(&target))?;
        let first_row = self.rows;
        let policy = self.options.null_policy;
        for (i, col) in self.columns.iter_mut().enumerate() {
            take_column(col, batch.column(i), first_row, policy)
                .map_err(|e| e.with_column(i, Some(&col.name)).with_file(&target))?;
        }
        self.rows += batch.num_rows() as u64;
        // Decide chunklens once a column holds enough rows that a chunk must be cut.
        let expected = self.options.expected_len.unwrap_or(UNKNOWN_LEN);
        for col in &mut self.columns {
            if col.chunklen.is_none() {
                let cl = default_chunklen(expected, col.atomsize_for(col.width));
                if col.pending_rows as u64 >= cl || self.options.expected_len.is_some() {
                    col.chunklen = Some(cl);
                }
            }
        }
        queue_full_chunks(&mut self.columns, &mut self.jobs).map_err(|e| e.with_file(&target))
    }

    /// Writes the remaining chunks and the metadata, then moves the directory into place.
    pub fn finish(self) -> Result<WriteSummary> {
        self.finish_impl()
    }
}

impl Writer {
    fn finish_impl(mut self) -> Result<WriteSummary> {
        let total = self.rows;
        let expected = self.options.expected_len.unwrap_or(total.max(1));
        for col in &mut self.columns {
            if col.chunklen.is_none() {
                col.chunklen = Some(default_chunklen(expected, col.atomsize_for(col.width)));
            }
        }
        let target = self.target().to_path_buf();
        let at = |e: Error, c: usize, name: &str| e.with_column(c, Some(name)).with_file(&target);
        queue_full_chunks(&mut self.columns, &mut self.jobs)
            .and_then(|_| self.jobs.finish(&mut self.columns))
            .map_err(|e| e.with_file(&target))?;
        // Chunks written while a string column was narrower: decoded and re-encoded at the
        // final width (jobs again, in parallel).
        for c in 0..self.columns.len() {
            let col = &self.columns[c];
            let chunklen = col.chunklen.unwrap_or(1) as usize;
            let mut redo = Vec::new();
            for (k, &(old, _)) in col.chunks.iter().enumerate() {
                if old == col.width {
                    continue;
                }
                let path = col.dir.join("data").join(format!("__{k}.blp"));
                let file = fs::read(&path)
                    .map_err(|e| at(Error::from(e).with_file(&path), c, &col.name))?;
                let item = col.atomsize_for(old);
                let raw = blosc::decompress(file.get(16..).unwrap_or_default(), chunklen * item)
                    .map_err(|e| {
                        at(
                            Error::new(ErrorClass::Io, e.to_string()).with_file(&path),
                            c,
                            &col.name,
                        )
                    })?;
                redo.push(ChunkJob {
                    column: c,
                    index: k as u64,
                    spec: col.chunk_spec(col.width),
                    pieces: vec![Piece::Stored {
                        bytes: Buffer::from_vec(raw),
                        item,
                        offset: 0,
                        len: chunklen,
                    }],
                });
            }
            let width = self.columns[c].width;
            for job in redo {
                self.columns[c].chunks[job.index as usize].0 = width;
                self.jobs
                    .submit(&mut self.columns, job)
                    .map_err(|e| e.with_file(&target))?;
            }
        }
        queue_leftovers(&mut self.columns, &mut self.jobs)
            .and_then(|_| self.jobs.finish(&mut self.columns))
            .map_err(|e| e.with_file(&target))?;
        let options = self.options.clone();
        for (c, col) in self.columns.iter().enumerate() {
            write_meta(col, total, &options).map_err(|e| at(e, c, &col.name))?;
        }
        if self.kind == Kind::Ctable {
            let names: Vec<String> = self
                .columns
                .iter()
                .map(|c| python_string(&c.name))
                .collect();
            write_text(
                &self.dir.path().join("__rootdirs__"),
                &format!("{{\"names\": [{}]}}", names.join(", ")),
                false,
            )?;
            write_text(&self.dir.path().join("__attrs__"), &self.root_attrs, false)?;
        }
        if let Some(syncer) = self.syncer.take() {
            syncer.finish().map_err(|e| e.with_file(&target))?;
        }
        crate::cancel::check().map_err(|e| e.with_file(&target))?;
        // Durable unless told otherwise: flushes what the syncer has not, then the rename.
        self.dir.commit(self.options.overwrite)?;
        let warnings = self
            .columns
            .iter()
            .filter_map(Column::trailing_nul_warning)
            .collect();
        Ok(WriteSummary {
            rows: total,
            warnings,
        })
    }
}

/// Refuses options no dataset can be written with.
fn check_options(options: &WriterOptions) -> Result<()> {
    if !options.codec.available() {
        return Err(Error::unsupported(format!(
            "codec {} is not compiled into this build of arrowsmith (cargo feature bcolz-snappy)",
            options.codec.name()
        )));
    }
    if options.clevel > 9 {
        return Err(Error::invalid_argument(format!(
            "clevel {} is not in 0..=9",
            options.clevel
        )));
    }
    if options.chunklen == Some(0) {
        return Err(Error::invalid_argument("chunklen must be at least 1"));
    }
    Ok(())
}

/// A carray or a ctable: as the options say, else a carray when the one column's schema was
/// read from one.
fn dataset_kind(schema: &SchemaRef, chosen: Option<Kind>) -> Result<Kind> {
    let fields = schema.fields();
    if fields.is_empty() {
        return Err(Error::invalid_argument(
            "bcolz cannot store a table without columns",
        ));
    }
    Ok(match chosen {
        Some(Kind::Carray) if fields.len() != 1 => {
            return Err(Error::invalid_argument(format!(
                "a carray holds one column, the schema has {}",
                fields.len()
            )))
        }
        Some(k) => k,
        None if fields.len() == 1
            && schema.metadata().get(KIND_KEY).map(String::as_str) == Some("carray") =>
        {
            Kind::Carray
        }
        None => Kind::Ctable,
    })
}

/// A column as the schema and options declare it, checked before anything is created.
struct ColumnPlan {
    name: String,
    dtype: DType,
    row_shape: Vec<usize>,
    /// The fixed string width, from the options, the stored dtype or a fixed-size binary.
    fixed_width: Option<usize>,
    attrs_text: String,
}

impl ColumnPlan {
    /// The plan of `field`; `seen` holds the lower-cased names of the columns before it (a
    /// ctable's columns are directories, and some file systems ignore case).
    fn new(
        field: &Field,
        kind: Kind,
        options: &WriterOptions,
        seen: &mut HashSet<String>,
    ) -> Result<ColumnPlan> {
        let name = field.name();
        if kind == Kind::Ctable {
            if !is_plain_component(name) || name == "__attrs__" || name == "__rootdirs__" {
                return Err(Error::invalid_argument(format!(
                    "column name {name:?} cannot be a bcolz column directory"
                )));
            }
            if !seen.insert(name.to_lowercase()) {
                return Err(Error::invalid_argument(format!(
                    "column name {name:?} is not unique (also case-insensitively)"
                )));
            }
        }
        let (dtype, row_shape) = mapping::dtype_for_arrow(field).ok_or_else(|| {
            Error::new(
                ErrorClass::UnsupportedType,
                format!("Arrow type {} has no bcolz dtype", field.data_type()),
            )
        })?;
        let fixed_width = options
            .widths
            .get(name.as_str())
            .copied()
            .or_else(|| stored_width(field, &dtype))
            .or(match field.data_type() {
                DataType::FixedSizeBinary(k) => Some((*k).max(1) as usize),
                _ => None,
            });
        if fixed_width == Some(0) {
            return Err(Error::invalid_argument("a string width must be at least 1"));
        }
        let attrs_text = column_attrs(field, &dtype)?;
        Ok(ColumnPlan {
            name: name.clone(),
            dtype,
            row_shape,
            fixed_width,
            attrs_text,
        })
    }

    /// Creates the column's directories in `col_dir` and the column that writes into them.
    fn create(
        self,
        col_dir: PathBuf,
        kind: Kind,
        root_attrs: &str,
        options: &WriterOptions,
        files: ChunkFiles,
    ) -> Result<Column> {
        fs::create_dir_all(col_dir.join("data"))?;
        fs::create_dir_all(col_dir.join("meta"))?;
        let attrs_text = if kind == Kind::Carray {
            merge_carray_attrs(root_attrs, &self.attrs_text)
        } else {
            self.attrs_text
        };
        Ok(Column {
            name: self.name,
            width: self.fixed_width.unwrap_or(1),
            dtype: self.dtype,
            row_shape: self.row_shape,
            fixed_width: self.fixed_width,
            dir: col_dir,
            chunklen: options.chunklen,
            pending: VecDeque::new(),
            pending_rows: 0,
            chunks: Vec::new(),
            attrs_text,
            codec: options.codec,
            clevel: options.clevel,
            shuffle: options.shuffle,
            big_endian: false,
            files,
            trailing_nuls: 0,
        })
    }
}

/// The width of a string column whose schema was read from a bcolz dtype of the same kind.
fn stored_width(field: &Field, dtype: &DType) -> Option<usize> {
    let stored = DType::parse(field.metadata().get(DTYPE_KEY)?).ok()?;
    match (stored.base, dtype.base) {
        (Base::Bytes(w), Base::Bytes(_)) | (Base::Unicode(w), Base::Unicode(_)) => Some(w),
        _ => None,
    }
}

impl BatchWriter for Writer {
    fn write(&mut self, batch: &RecordBatch) -> Result<()> {
        Writer::write(self, batch)
    }
    fn finish(self: Box<Self>) -> Result<WriteSummary> {
        Writer::finish(*self)
    }
}
