//! Reading a Filo set as Arrow record batches: chunk by chunk, opening only the selected
//! columns' files and decoding them in parallel. A set under an object-store prefix has the
//! files of several chunks fetched in one batched request.

use std::collections::VecDeque;
use std::path::Path;
use std::sync::Arc;

use arrow_array::{RecordBatch, RecordBatchOptions, RecordBatchReader};
use arrow_buffer::Buffer;
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
    let row_width: u64 = (0..set.columns.len()).map(|c| fixed_width(set, c, 4)).sum();
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

/// Bytes a row of column `c` takes in its vector's fixed-width part: a value; a bit (counted
/// as a byte) for booleans; `string_bytes` for a string.
fn fixed_width(set: &SetInfo, c: usize, string_bytes: u64) -> u64 {
    let data_type = set.columns[c].filo_type.arrow_type();
    match data_type.primitive_width() {
        Some(width) => width as u64,
        None if data_type == DataType::Boolean => 1,
        None => string_bytes,
    }
}

/// The most bytes of column files a reader of a remote set fetches in one request (the bound
/// DataSeries' remote reader holds too): the files of as many chunks as fit are asked for
/// together.
const FETCH_BYTES: u64 = 64 << 20;

/// What a string value is guessed to take before any file of the set has been fetched; after
/// the first request, the bytes per row of the files fetched are used.
const GUESSED_STRING_BYTES: u64 = 32;

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
        let row_bytes = columns
            .iter()
            .map(|&c| fixed_width(&set, c, GUESSED_STRING_BYTES))
            .sum::<u64>()
            .max(1);
        Ok(Reader {
            set,
            columns,
            row_bytes,
            fetched: VecDeque::new(),
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
    /// Bytes a row of the selected columns' files is reckoned to take, to size a request.
    row_bytes: u64,
    /// Chunks fetched and not yet decoded: their index and selected columns' files.
    fetched: VecDeque<(usize, Vec<Option<Buffer>>)>,
    batch_size: usize,
    remaining: u64,
    /// The next chunk to fetch.
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

    /// How many chunks from `next_chunk` on the next request fetches: one for a set read from
    /// a local path (a file is mapped when it is opened, so fetching ahead saves nothing);
    /// else as many as fit in [`FETCH_BYTES`] (at least one) and no more than the rows still
    /// wanted need.
    fn chunks_to_fetch(&self) -> usize {
        let left = self.end_chunk - self.next_chunk;
        if self.set.is_local_path() {
            return left.min(1);
        }
        let (mut count, mut rows, mut bytes) = (0, 0u64, 0u64);
        for &chunk_rows in &self.set.chunks[self.next_chunk..self.end_chunk] {
            let chunk_bytes = (chunk_rows as u64).saturating_mul(self.row_bytes);
            if count > 0 && (rows >= self.remaining || bytes + chunk_bytes > FETCH_BYTES) {
                break;
            }
            count += 1;
            rows += chunk_rows as u64;
            bytes = bytes.saturating_add(chunk_bytes);
        }
        count
    }

    /// Fetches the selected columns' files of `chunks` in one batched request: each chunk's
    /// files, in column order (`None`: missing, an all-NA column chunk).
    fn fetch(&self, chunks: std::ops::Range<usize>) -> Result<Vec<Vec<Option<Buffer>>>> {
        let keys: Vec<String> = chunks
            .clone()
            .flat_map(|k| self.columns.iter().map(move |&c| column_key(k, c)))
            .collect();
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
        let mut files = files.into_iter();
        Ok(chunks
            .map(|_| files.by_ref().take(self.columns.len()).collect())
            .collect())
    }

    /// Fetches the next chunks into `fetched`. An error is chunk `next_chunk`'s: when
    /// salvaging, a failed request of several chunks is retried for that chunk alone, so that
    /// one bad chunk is skipped and not its neighbours.
    fn fetch_ahead(&mut self) -> Result<()> {
        let first = self.next_chunk;
        let count = self.chunks_to_fetch();
        let fetched = match self.fetch(first..first + count) {
            Err(_) if count > 1 && self.salvage.on => self.fetch(first..first + 1),
            other => other,
        };
        let fetched = match fetched {
            Ok(fetched) => fetched,
            Err(e) => {
                self.next_chunk += 1;
                return Err(e);
            }
        };
        let rows: u64 = (first..first + fetched.len())
            .map(|k| self.set.chunks[k] as u64)
            .sum();
        let bytes: u64 = fetched
            .iter()
            .flatten()
            .flatten()
            .map(|f| f.len() as u64)
            .sum();
        if rows > 0 && bytes > 0 {
            self.row_bytes = bytes.div_ceil(rows);
        }
        self.next_chunk += fetched.len();
        self.fetched.extend((first..).zip(fetched));
        Ok(())
    }

    /// Decodes the selected columns' files of chunk `index` in parallel (a missing file is an
    /// all-NA column chunk).
    fn decode_chunk(&self, index: usize, files: Vec<Option<Buffer>>) -> Result<RecordBatch> {
        let rows = self.set.chunks[index];
        let arrays = self
            .columns
            .par_iter()
            .zip(self.schema.fields().par_iter())
            .zip(files.into_par_iter())
            .map(|((&c, field), file)| {
                let column = &self.set.columns[c];
                let path = self.set.dir().join(column_key(index, c));
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

    /// The next chunk, fetched (with those after it that the request takes) and decoded.
    fn read_chunk(&mut self, index: usize) -> Result<RecordBatch> {
        if self.fetched.is_empty() {
            self.fetch_ahead()?;
        }
        let (fetched, files) = self.fetched.pop_front().ok_or_else(|| {
            Error::new(ErrorClass::Io, "no chunk was fetched").with_file(self.set.dir())
        })?;
        debug_assert_eq!(fetched, index);
        self.decode_chunk(fetched, files)
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
            let index = match self.fetched.front() {
                Some(&(index, _)) => index,
                None if self.next_chunk < self.end_chunk => self.next_chunk,
                None => return Ok(None),
            };
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
