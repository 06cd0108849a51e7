//! Reading a Filo set as Arrow record batches: chunk by chunk, opening only the selected
//! columns' files and decoding them in parallel.

use std::path::Path;
use std::sync::Arc;

use arrow_array::{RecordBatch, RecordBatchOptions, RecordBatchReader};
use arrow_schema::{ArrowError, DataType, Schema, SchemaRef};
use rayon::prelude::*;

use super::set::{column_file, column_key, decode_column_chunk, SetInfo};
use crate::error::{Error, ErrorClass, Result};
use crate::salvage::{Salvage, SalvageReport, Skipped};
use crate::scan::{group_units, FragmentRange, FragmentSpan, ScanOptions, Unit};

/// The fragments of an opened Filo set: runs of chunks of about `target_rows` rows, from
/// `schema.json` alone. Bytes are the sizes of the chunks' column files (a stat each) for a set
/// opened from a local path; for one opened from an
/// [`ObjectSource`](crate::source::ObjectSource), where a size would take a request per file,
/// they are the rows' fixed-width size (a value per row; a bit per row for booleans, an offset
/// for strings).
pub fn fragments(set: &SetInfo, target_rows: usize) -> Result<Vec<FragmentSpan>> {
    let dir = set.dir();
    let row_width: u64 = set
        .columns
        .iter()
        .map(|c| {
            let data_type = c.filo_type.arrow_type();
            match data_type.primitive_width() {
                Some(width) => width as u64,
                None if data_type == DataType::Boolean => 1,
                None => 4,
            }
        })
        .sum();
    let bytes = |k: usize, rows: usize| -> u64 {
        if !set.is_local_path() {
            return rows as u64 * row_width;
        }
        (0..set.columns.len())
            .filter_map(|c| std::fs::metadata(column_file(dir, k, c)).ok())
            .map(|m| m.len())
            .sum()
    };
    let units = set.chunks.iter().enumerate().map(|(k, &rows)| Unit {
        start: k as u64,
        end: k as u64 + 1,
        rows: rows as u64,
        bytes: bytes(k, rows),
    });
    Ok(group_units(
        units,
        target_rows,
        |start, end| FragmentRange::Chunks { start, end },
        FragmentRange::Chunks { start: 0, end: 0 },
    ))
}

/// Configures and opens a [`Reader`] of a Filo set.
#[derive(Debug, Clone, Default)]
pub struct ReaderBuilder {
    scan: ScanOptions,
    dictionary_strings: bool,
}

impl ReaderBuilder {
    /// A builder with every option at its default: at most 65,536 rows per batch
    /// ([`DEFAULT_BATCH_SIZE`](crate::DEFAULT_BATCH_SIZE); a batch never spans two chunks, so
    /// smaller chunks give smaller batches), every column (only the selected columns' files are
    /// opened), every chunk.
    pub fn new() -> Self {
        Self::default()
    }

    crate::scan::scan_setters!();

    /// Reads String columns as Arrow `Dictionary(Int32, Utf8)`: the codes of filo's
    /// DictStringVectors become the keys without expanding the strings (other string vectors
    /// are dictionary-encoded). Default: `false`, plain `Utf8`.
    pub fn with_dictionary_strings(mut self, dictionary: bool) -> Self {
        self.dictionary_strings = dictionary;
        self
    }

    /// Opens the set directory at `path`, reading `schema.json`, and returns a reader.
    pub fn build(self, path: impl AsRef<Path>) -> Result<Reader> {
        self.build_from_file(Arc::new(SetInfo::open(path)?))
    }

    /// Returns a reader of a set already opened, without reading `schema.json` again.
    pub fn build_from_file(self, set: Arc<SetInfo>) -> Result<Reader> {
        let dir = set.dir();
        let columns = match &self.scan.projection {
            None => (0..set.columns.len()).collect(),
            Some(p) => p
                .resolve(set.columns.iter().map(|c| c.name.as_str()))
                .map_err(|e| e.with_file(dir))?,
        };
        let (first, last) = chunk_range(self.scan.range, set.chunks.len(), dir)?;
        let mut full = set.schema();
        if self.dictionary_strings {
            full = dictionary_strings(&full);
        }
        let schema = Arc::new(full.project(&columns)?);
        Ok(Reader {
            set,
            columns,
            schema,
            batch_size: self.scan.batch_size_or(crate::DEFAULT_BATCH_SIZE),
            remaining: self.scan.limit.map_or(u64::MAX, |l| l as u64),
            next_chunk: first,
            end_chunk: last,
            current: None,
            salvage: Salvage::from_scan(&self.scan),
        })
    }
}

/// The chunks `first..last` a scan's range selects out of a set's `count`.
fn chunk_range(range: Option<FragmentRange>, count: usize, dir: &Path) -> Result<(usize, usize)> {
    match range {
        None | Some(FragmentRange::Whole) => Ok((0, count)),
        Some(FragmentRange::Chunks { start, end }) if start <= end && end <= count as u64 => {
            Ok((start as usize, end as usize))
        }
        Some(FragmentRange::Chunks { start, end }) => Err(Error::invalid_argument(format!(
            "chunks {start}..{end} are not a range of the set's {count} chunks"
        ))
        .with_file(dir)),
        Some(other) => Err(other.wrong_unit("Filo set", "chunks").with_file(dir)),
    }
}

/// `schema` with its `Utf8` fields as `Dictionary(Int32, Utf8)`.
fn dictionary_strings(schema: &Schema) -> SchemaRef {
    let dictionary = DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Utf8));
    Arc::new(Schema::new(
        schema
            .fields()
            .iter()
            .map(|f| match f.data_type() {
                DataType::Utf8 => Arc::new(f.as_ref().clone().with_data_type(dictionary.clone())),
                _ => f.clone(),
            })
            .collect::<Vec<_>>(),
    ))
}

/// Reads a Filo set as record batches of at most `batch_size` rows, none spanning two chunks.
pub struct Reader {
    set: Arc<SetInfo>,
    columns: Vec<usize>,
    schema: SchemaRef,
    batch_size: usize,
    remaining: u64,
    next_chunk: usize,
    /// One past the last chunk to read.
    end_chunk: usize,
    /// The chunk being handed out and how far.
    current: Option<(RecordBatch, usize)>,
    salvage: Salvage,
}

impl Reader {
    /// What the set's `schema.json` says.
    pub fn info(&self) -> &SetInfo {
        &self.set
    }

    /// Where this reader records the chunks it skips when salvaging.
    pub fn salvage_report(&self) -> &SalvageReport {
        &self.salvage.report
    }

    /// Fetches the selected columns' files of chunk `index` in one batched request and
    /// decodes them in parallel (a missing file is an all-NA column chunk).
    fn read_chunk(&self, index: usize) -> Result<RecordBatch> {
        let rows = self.set.chunks[index];
        let keys: Vec<String> = self.columns.iter().map(|&c| column_key(index, c)).collect();
        let key_refs: Vec<&str> = keys.iter().map(String::as_str).collect();
        let files = self
            .set
            .objects()
            .get_all(&key_refs)
            .map_err(|e| e.with_file(self.set.dir()))?;
        if files.len() != keys.len() {
            return Err(Error::new(
                ErrorClass::Io,
                format!(
                    "{} objects were asked for and {} came back",
                    keys.len(),
                    files.len()
                ),
            )
            .with_file(self.set.dir()));
        }
        let arrays = self
            .columns
            .par_iter()
            .zip(self.schema.fields().par_iter())
            .zip(files.into_par_iter().zip(keys.par_iter()))
            .map(|((&c, field), (file, key))| {
                let column = &self.set.columns[c];
                let path = self.set.dir().join(key);
                decode_column_chunk(file, &path, c, column, rows, field.data_type())
            })
            .collect::<Result<Vec<_>>>()?;
        let options = RecordBatchOptions::new().with_row_count(Some(rows));
        Ok(RecordBatch::try_new_with_options(
            self.schema.clone(),
            arrays,
            &options,
        )?)
    }

    fn next_batch(&mut self) -> Result<Option<RecordBatch>> {
        loop {
            if self.remaining == 0 {
                return Ok(None);
            }
            if let Some((batch, at)) = &mut self.current {
                if *at < batch.num_rows() {
                    let n = self
                        .batch_size
                        .min(batch.num_rows() - *at)
                        .min(usize::try_from(self.remaining).unwrap_or(usize::MAX));
                    let out = batch.slice(*at, n);
                    *at += n;
                    self.remaining -= n as u64;
                    return Ok(Some(out));
                }
            }
            if self.next_chunk >= self.end_chunk {
                return Ok(None);
            }
            let index = self.next_chunk;
            self.next_chunk += 1;
            match self.read_chunk(index) {
                Ok(batch) => self.current = Some((batch, 0)),
                // A chunk is skipped whole, in every column, so the rows stay aligned.
                Err(e) if self.salvage.on => self.salvage.push(
                    Skipped::new("chunk", e.with_file(self.set.dir()))
                        .with_index(index as u64)
                        .with_rows(self.set.chunks[index] as u64),
                ),
                Err(e) => return Err(e),
            }
        }
    }
}

impl Iterator for Reader {
    type Item = std::result::Result<RecordBatch, ArrowError>;

    fn next(&mut self) -> Option<Self::Item> {
        match self.next_batch() {
            Ok(b) => b.map(Ok),
            Err(e) => {
                self.remaining = 0;
                Some(Err(e.with_file(self.set.dir()).into()))
            }
        }
    }
}

impl RecordBatchReader for Reader {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }
}
