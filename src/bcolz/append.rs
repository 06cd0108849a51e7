//! Appending to an existing carray / ctable in place (spec B5), crash-safe: chunk files are
//! written under temporary names and renamed; `meta/sizes` — the commit record — is rewritten
//! last, the first column's last of all (bcolz and our reader take the table length from it).
//! Until then readers see the previous contents; an interrupted append can simply be re-run.

use std::path::{Path, PathBuf};

use arrow_array::RecordBatch;
use arrow_buffer::Buffer;
use arrow_schema::{DataType, SchemaRef};

use super::blosc::Codec;
use super::mapping::{self, Base};
use super::meta::{self, Kind};
use super::writer::{
    queue_full_chunks, queue_leftovers, take_column, write_sizes, ChunkFiles, ChunkJobs, Column,
    Piece,
};
use super::NullPolicy;
use crate::error::{Error, ErrorClass, Result};
use crate::write::{BatchWriter, WriteSummary};

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
}

impl Appender {
    /// Opens `path` (checked as the reader checks it) for batches of `schema`, whose columns
    /// must match the dataset's by name (a carray: exactly one column) and type.
    pub fn try_new(
        path: impl AsRef<Path>,
        schema: SchemaRef,
        null_policy: NullPolicy,
    ) -> Result<Appender> {
        let path = path.as_ref();
        let info = meta::open(path, None)?;
        let fields = schema.fields();
        let input_to_column: Vec<usize> = match info.kind {
            Kind::Carray => {
                if fields.len() != 1 {
                    return Err(Error::invalid_argument(format!(
                        "a carray takes one column, the input has {}",
                        fields.len()
                    ))
                    .with_file(path));
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
                        .with_file(path)
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
                    ))
                    .with_file(path));
                }
                map
            }
        };
        let committed = info.nrows;
        let mut columns: Vec<Column> = Vec::with_capacity(info.columns.len());
        for (c, carray) in info.columns.iter().enumerate() {
            let at = |e: Error| e.with_column(c, Some(&carray.name)).with_file(path);
            let input = input_to_column
                .iter()
                .position(|&x| x == c)
                .expect("every column is fed");
            let field = &fields[input];
            let mismatch = || {
                at(Error::new(
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
                ))
            };
            let (dtype, row_shape) = mapping::dtype_for_arrow(field).ok_or_else(mismatch)?;
            let compatible = match (dtype.base, carray.dtype.base) {
                (Base::Bytes(_), Base::Bytes(_)) | (Base::Unicode(_), Base::Unicode(_)) => true,
                (a, b) => a == b,
            };
            if !compatible || row_shape != carray.row_shape {
                return Err(mismatch());
            }
            let codec = Codec::from_name(&carray.cparams.cname)
                .filter(|c| c.available())
                .ok_or_else(|| {
                    at(Error::unsupported(format!(
                        "the column's codec {:?} is not available in this build of arrowsmith",
                        carray.cparams.cname
                    )))
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
                files: ChunkFiles::Live,
                trailing_nuls: 0,
            };
            // Full chunks stay as they are (their cbytes count in meta/sizes); the committed
            // rows of the leftover chunk become the start of the new rows.
            let nfull = committed / carray.chunklen;
            for k in 0..nfull {
                let header = carray.chunk_header(k).map_err(at)?;
                col.chunks.push((width, header.cbytes as u64));
            }
            let left = (committed % carray.chunklen) as usize;
            if left > 0 {
                let mut raw = carray
                    .read_chunk(nfull, left)
                    .map_err(at)?
                    .as_slice()
                    .to_vec();
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
            columns.push(col);
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
    /// (the first column's last).
    pub fn finish(mut self) -> Result<WriteSummary> {
        queue_full_chunks(&mut self.columns, &mut self.jobs)
            .and_then(|_| queue_leftovers(&mut self.columns, &mut self.jobs))
            .and_then(|_| self.jobs.finish(&mut self.columns))
            .map_err(|e| e.with_file(&self.path))?;
        let total = self.committed + self.rows;
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
        // The commit point: the new length in every meta/sizes.
        crate::cancel::check().map_err(|e| e.with_file(&self.path))?;
        for c in (1..self.columns.len()).chain([0]) {
            let col = &self.columns[c];
            write_sizes(col, total, true)
                .map_err(|e| e.with_column(c, Some(&col.name)).with_file(&self.path))?;
        }
        Ok(WriteSummary {
            rows: self.rows,
            warnings: self
                .columns
                .iter()
                .filter_map(Column::trailing_nul_warning)
                .collect(),
        })
    }
}

pub(super) use crate::write::check_batch;

impl BatchWriter for Appender {
    fn write(&mut self, batch: &RecordBatch) -> Result<()> {
        Appender::write(self, batch)
    }
    fn finish(self: Box<Self>) -> Result<WriteSummary> {
        Appender::finish(*self)
    }
}
