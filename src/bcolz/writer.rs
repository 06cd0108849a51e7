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

use std::collections::{HashMap, VecDeque};
use std::fs;
use std::io::Write;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::mpsc;

use arrow::compute::cast;
use arrow_array::cast::AsArray;
use arrow_array::{Array, ArrayRef, RecordBatch};
use arrow_buffer::Buffer;
use arrow_schema::{DataType, Field, SchemaRef};
use serde_json::Value;

use super::background;
use super::blosc::{self, Codec, Shuffle};
use super::durable;
use super::json::{escape_non_ascii, parse_lenient, python_string};
use super::mapping::{self, Base, DType, ATTRS_KEY, DTYPE_KEY, KIND_KEY};
use super::meta::{is_plain_component, Kind};
use crate::atomic::AtomicDir;
use crate::error::{Error, ErrorClass, Result};
use crate::write::{BatchWriter, WriteSummary};

/// What the writer does with Arrow nulls (bcolz cannot store them).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum NullPolicy {
    /// The first null is an error naming the column and the row.
    #[default]
    Reject,
    /// Nulls in float columns become NaN, in temporal columns NaT; others are still errors.
    Sentinel,
}

/// Options of the bcolz [`Writer`].
#[derive(Debug, Clone)]
pub struct WriterOptions {
    kind: Option<Kind>,
    chunklen: Option<u64>,
    expected_len: Option<u64>,
    codec: Codec,
    clevel: u8,
    shuffle: Shuffle,
    null_policy: NullPolicy,
    overwrite: bool,
    widths: HashMap<String, usize>,
    durable: bool,
}

impl Default for WriterOptions {
    fn default() -> Self {
        WriterOptions {
            kind: None,
            chunklen: None,
            expected_len: None,
            codec: Codec::Lz4,
            clevel: 5,
            shuffle: Shuffle::Byte,
            null_policy: NullPolicy::Reject,
            overwrite: false,
            widths: HashMap::new(),
            durable: true,
        }
    }
}

impl WriterOptions {
    /// carray (exactly one column) or ctable; default: ctable, unless the schema metadata says
    /// `bcolz.kind = carray` and there is one column.
    pub fn with_kind(mut self, kind: Kind) -> Self {
        self.kind = Some(kind);
        self
    }
    /// Rows per chunk for every column (default: bcolz's own choice per column).
    pub fn with_chunklen(mut self, chunklen: u64) -> Self {
        self.chunklen = Some(chunklen);
        self
    }
    /// The length hint bcolz's chunklen formula uses (default: the row count when known).
    pub fn with_expected_len(mut self, len: u64) -> Self {
        self.expected_len = Some(len);
        self
    }
    /// The Blosc codec (default [`Codec::Lz4`], as bcolz).
    pub fn with_codec(mut self, codec: Codec) -> Self {
        self.codec = codec;
        self
    }
    /// Compression level 0–9 (default 5).
    pub fn with_clevel(mut self, clevel: u8) -> Self {
        self.clevel = clevel;
        self
    }
    /// Byte or bit shuffle before compression (default [`Shuffle::Byte`], as bcolz).
    pub fn with_shuffle(mut self, shuffle: Shuffle) -> Self {
        self.shuffle = shuffle;
        self
    }
    /// What to do with Arrow nulls (default [`NullPolicy::Reject`]).
    pub fn with_null_policy(mut self, policy: NullPolicy) -> Self {
        self.null_policy = policy;
        self
    }
    /// The null policy in effect.
    pub fn null_policy(&self) -> NullPolicy {
        self.null_policy
    }
    /// Sets the codec and optionally the level from `codec[:level]` (`lz4`, `zstd:9`, …;
    /// default `lz4:5`).
    pub fn with_compression(mut self, spec: &str) -> Result<Self> {
        let (name, level) = match spec.split_once(':') {
            Some((n, l)) => (n, Some(l)),
            None => (spec, None),
        };
        self.codec = Codec::from_name(&name.to_ascii_lowercase()).ok_or_else(|| {
            Error::invalid_argument(format!(
                "unknown bcolz codec {name:?}; known: blosclz, lz4, lz4hc, zlib, zstd, snappy"
            ))
        })?;
        if let Some(l) = level {
            self.clevel = l.parse::<u8>().ok().filter(|&l| l <= 9).ok_or_else(|| {
                Error::invalid_argument(format!("bcolz clevel {l:?} is not in 0..=9"))
            })?;
        }
        Ok(self)
    }
    /// Whether the finished dataset is flushed to disk (every file and directory, fsync) before
    /// it is renamed into place, and the rename after it (default true). bcolz itself never
    /// syncs; without it a power loss soon after `finish()` can leave empty or missing files.
    pub fn with_durable(mut self, durable: bool) -> Self {
        self.durable = durable;
        self
    }
    /// Replace an existing directory at the target (default `false`: an existing one is an
    /// error).
    pub fn with_overwrite(mut self, overwrite: bool) -> Self {
        self.overwrite = overwrite;
        self
    }
    /// A fixed width (`|S` bytes or `<U` code points) for a string or binary column (default:
    /// the longest value written).
    pub fn with_width(mut self, column: impl Into<String>, width: usize) -> Self {
        self.widths.insert(column.into(), width);
        self
    }
}

/// bcolz's default chunklen for rows of `atomsize` bytes and an expected length (spec A7.1).
pub fn default_chunklen(expectedlen: u64, atomsize: usize) -> u64 {
    let size_mb = (expectedlen as f64 * atomsize as f64 / 1_048_576.0).clamp(1e-4, 1e4);
    let zone = size_mb.log10().trunc() as i32;
    let chunksize = 4096f64 * 2f64.powi(zone + 6);
    let chunksize = chunksize as u64;
    let atom = atomsize as u64;
    let chunksize = ((chunksize / atom) * atom).max(atom);
    chunksize / atom
}

const UNKNOWN_LEN: u64 = 1 << 20;

pub(super) struct Column {
    pub(super) name: String,
    pub(super) dtype: DType,
    pub(super) row_shape: Vec<usize>,
    /// Fixed width (string/binary) from an option or `bcolz.dtype`; values beyond it fail.
    pub(super) fixed_width: Option<usize>,
    /// The current width of a string/binary column (≥ 1).
    pub(super) width: usize,
    pub(super) dir: PathBuf,
    pub(super) chunklen: Option<u64>,
    /// Rows not yet cut into a chunk, in order.
    pub(super) pending: VecDeque<Piece>,
    pub(super) pending_rows: usize,
    /// Full chunks written, with the width they were encoded with and their cbytes.
    pub(super) chunks: Vec<(usize, u64)>,
    pub(super) attrs_text: String,
    pub(super) codec: Codec,
    pub(super) clevel: u8,
    pub(super) shuffle: Shuffle,
    /// Chunks hold big-endian values (appending to a `>` dtype); pending rows are little-endian.
    pub(super) big_endian: bool,
    /// How chunk files reach the disk.
    pub(super) files: ChunkFiles,
}

/// How a chunk file is written.
#[derive(Debug, Clone)]
pub(super) enum ChunkFiles {
    /// Into a dataset directory nobody sees yet, never flushed (`with_durable(false)`).
    Unsynced,
    /// Into a dataset directory nobody sees yet; the kernel is asked to start writing it out
    /// at once (Linux) and the file is queued to the syncer threads; the whole directory is
    /// flushed again before it is renamed into place.
    SyncedLater(durable::SyncQueue),
    /// Into a live dataset (an append): under a temporary name, flushed (fsync) and renamed
    /// over `__k.blp`, so a chunk file is never half-written or empty after a crash.
    Live,
}

/// Rows waiting to be cut into chunks.
#[derive(Debug, Clone)]
pub(super) enum Piece {
    /// Rows of an input column, already checked (nulls, widths) and cast to the base type.
    Rows {
        array: ArrayRef,
        offset: usize,
        len: usize,
    },
    /// Rows in stored form (the committed rows of a leftover chunk being appended to):
    /// little-endian, `item` bytes a row, strings NUL-padded.
    Stored {
        bytes: Buffer,
        item: usize,
        offset: usize,
        len: usize,
    },
}

impl Piece {
    fn len(&self) -> usize {
        match self {
            Piece::Rows { len, .. } | Piece::Stored { len, .. } => *len,
        }
    }

    /// The first `n` rows, leaving the rest in `self`.
    fn split_front(&mut self, n: usize) -> Piece {
        let mut front = self.clone();
        match (&mut front, self) {
            (Piece::Rows { len: fl, .. }, Piece::Rows { offset, len, .. })
            | (Piece::Stored { len: fl, .. }, Piece::Stored { offset, len, .. }) => {
                *fl = n;
                *offset += n;
                *len -= n;
            }
            _ => unreachable!("a clone has the same variant"),
        }
        front
    }
}

impl Column {
    pub(super) fn dtype_with(&self, width: usize) -> DType {
        let base = match self.dtype.base {
            Base::Bytes(_) => Base::Bytes(width),
            Base::Unicode(_) => Base::Unicode(width),
            b => b,
        };
        DType::native(base)
    }

    pub(super) fn atomsize_for(&self, width: usize) -> usize {
        let item = self.dtype_with(width).itemsize().unwrap_or(1);
        self.row_shape.iter().product::<usize>().max(1) * item
    }

    /// Bytes per code unit of a string column (4 for `U`, 1 for `S`).
    pub(super) fn unit(&self) -> usize {
        if matches!(self.dtype.base, Base::Unicode(_)) {
            4
        } else {
            1
        }
    }

    pub(super) fn push_rows(&mut self, piece: Piece) {
        self.pending_rows += piece.len();
        if piece.len() > 0 {
            self.pending.push_back(piece);
        }
    }

    /// Takes the first `n` pending rows (at most all of them).
    fn take_rows(&mut self, n: usize) -> Vec<Piece> {
        let mut out = Vec::new();
        let mut left = n.min(self.pending_rows);
        self.pending_rows -= left;
        while left > 0 {
            let front = self.pending.front_mut().expect("pending rows are counted");
            if front.len() <= left {
                left -= front.len();
                out.push(self.pending.pop_front().expect("just seen"));
            } else {
                out.push(front.split_front(left));
                left = 0;
            }
        }
        out
    }

    /// What a chunk job of this column needs, with rows encoded at `width`.
    fn chunk_spec(&self, width: usize) -> ChunkSpec {
        let dtype = self.dtype_with(width);
        let swap_unit = if self.big_endian {
            self.dtype.swap_unit()
        } else {
            1
        };
        ChunkSpec {
            data_dir: self.dir.join("data"),
            codec: self.codec,
            clevel: self.clevel,
            shuffle: self.shuffle,
            typesize: dtype.typesize(),
            atomsize: self.atomsize_for(width),
            item_unit: self.unit(),
            width,
            swap_unit,
            files: self.files.clone(),
        }
    }
}

/// Everything needed to encode, compress and write one chunk, away from the writer.
#[derive(Debug, Clone)]
pub(super) struct ChunkSpec {
    data_dir: PathBuf,
    codec: Codec,
    clevel: u8,
    shuffle: Shuffle,
    typesize: usize,
    atomsize: usize,
    /// Bytes per code unit of a string column (4 for `U`, 1 for `S`, 1 otherwise).
    item_unit: usize,
    /// String width in code units.
    width: usize,
    /// Bytes swapped as one unit for a big-endian column (1: little-endian, nothing to do).
    swap_unit: usize,
    files: ChunkFiles,
}

/// One chunk to encode, compress and write.
pub(super) struct ChunkJob {
    pub(super) column: usize,
    pub(super) index: u64,
    spec: ChunkSpec,
    pieces: Vec<Piece>,
}

impl ChunkJob {
    /// Encodes, compresses and writes the chunk; returns its Blosc cbytes.
    fn run(self) -> Result<u64> {
        SCRATCH.with(|scratch| {
            let mut fresh = Scratch::default();
            let mut borrowed = scratch.try_borrow_mut();
            let scratch = borrowed.as_deref_mut().unwrap_or(&mut fresh);
            let direct = direct_bytes(&self.pieces, &self.spec);
            let src: &[u8] = match &direct {
                Some(buffer) => buffer.as_slice(),
                None => {
                    scratch.encoded.clear();
                    for piece in &self.pieces {
                        encode_piece(piece, &self.spec, &mut scratch.encoded)?;
                    }
                    if self.spec.swap_unit > 1 {
                        for group in scratch.encoded.chunks_exact_mut(self.spec.swap_unit) {
                            group.reverse();
                        }
                    }
                    &scratch.encoded
                }
            };
            compress_and_write(&self.spec, self.index, src, &mut scratch.file)
        })
    }
}

/// Buffers a worker thread reuses from chunk to chunk (no allocation, no page faults).
#[derive(Default)]
struct Scratch {
    encoded: Vec<u8>,
    file: Vec<u8>,
}

thread_local! {
    static SCRATCH: std::cell::RefCell<Scratch> = std::cell::RefCell::new(Scratch::default());
}

/// The chunk's bytes straight from the Arrow buffer, when they are stored as they are: one
/// piece of a fixed-width primitive (or tensor of one) without nulls, little-endian.
fn direct_bytes(pieces: &[Piece], spec: &ChunkSpec) -> Option<Buffer> {
    let [Piece::Rows { array, offset, len }] = pieces else {
        return None;
    };
    if spec.swap_unit > 1 {
        return None;
    }
    let (mut array, mut offset, mut len) = (array.clone(), *offset, *len);
    while let DataType::FixedSizeList(_, k) = array.data_type() {
        let k = *k as usize;
        let list = array.as_fixed_size_list();
        if list.null_count() > 0 {
            return None;
        }
        let values = list.values().slice(list.offset() * k, list.len() * k);
        (array, offset, len) = (values, offset * k, len * k);
    }
    let size = match array.data_type() {
        DataType::Boolean | DataType::Date32 => return None,
        dt => dt.primitive_width()?,
    };
    if array.null_count() > 0 {
        return None;
    }
    let data = array.to_data();
    Some(data.buffers()[0].slice_with_length((data.offset() + offset) * size, len * size))
}

/// Appends the stored bytes of a piece's rows (little-endian) to `out`.
fn encode_piece(piece: &Piece, spec: &ChunkSpec, out: &mut Vec<u8>) -> Result<()> {
    let size = spec.width * spec.item_unit;
    match piece {
        Piece::Stored {
            bytes,
            item,
            offset,
            len,
        } => {
            let raw = &bytes.as_slice()[offset * item..(offset + len) * item];
            if *item == spec.atomsize {
                out.extend_from_slice(raw);
            } else {
                // A string chunk stored narrower than the column is now.
                let start = out.len();
                out.resize(start + len * size, 0);
                for (i, value) in raw.chunks_exact(*item).enumerate() {
                    out[start + i * size..start + i * size + item].copy_from_slice(value);
                }
            }
            Ok(())
        }
        Piece::Rows { array, offset, len } => match array.data_type() {
            DataType::Binary => {
                let strings = array.as_binary::<i32>();
                let values = strings.value_data();
                let offsets = strings.value_offsets();
                let start = out.len();
                // 16 bytes of slack for the wide stores below, cut off at the end.
                out.resize(start + len * size + 16, 0);
                for i in 0..*len {
                    let lo = offsets[offset + i] as usize;
                    let hi = offsets[offset + i + 1] as usize;
                    let at = start + i * size;
                    match values.get(lo..lo + 16) {
                        // Narrow items: one 16-byte load and store instead of a memcpy call, the
                        // bytes past the value masked to zero (its padding; what spills into the
                        // next slot is zeros too, and that slot is written after this one).
                        Some(wide) if size <= 16 => {
                            let word = u128::from_le_bytes(wide.try_into().expect("16 bytes"));
                            let keep = match hi - lo {
                                n if n >= 16 => u128::MAX,
                                n => (1u128 << (8 * n)) - 1,
                            };
                            out[at..at + 16].copy_from_slice(&(word & keep).to_le_bytes());
                        }
                        _ => out[at..at + hi - lo].copy_from_slice(&values[lo..hi]),
                    }
                }
                out.truncate(start + len * size);
                Ok(())
            }
            DataType::Utf8 => {
                let strings = array.as_string::<i32>();
                let start = out.len();
                out.resize(start + len * size, 0);
                for i in 0..*len {
                    let slot = &mut out[start + i * size..start + (i + 1) * size];
                    for (unit, c) in slot
                        .chunks_exact_mut(4)
                        .zip(strings.value(offset + i).chars())
                    {
                        unit.copy_from_slice(&(c as u32).to_le_bytes());
                    }
                }
                Ok(())
            }
            _ => {
                let itemsize = spec.atomsize / spec.width.max(1);
                flat_bytes(&array.slice(*offset, *len), itemsize, 0, true, out)
            }
        },
    }
}

/// Compresses `src` into a chunk file (`blpk` header + one Blosc chunk) at `data/__{k}.blp`;
/// returns the Blosc cbytes.
fn compress_and_write(spec: &ChunkSpec, k: u64, src: &[u8], file: &mut Vec<u8>) -> Result<u64> {
    file.clear();
    file.extend_from_slice(BLPK_HEADER);
    let cbytes = blosc::compress_append(
        src,
        spec.typesize,
        spec.clevel,
        spec.shuffle,
        spec.codec,
        file,
    )
    .map_err(|e| Error::new(ErrorClass::Io, e.to_string()))?;
    let path = spec.data_dir.join(format!("__{k}.blp"));
    match &spec.files {
        ChunkFiles::Unsynced => {
            fs::write(&path, &file[..]).map_err(|e| Error::from(e).with_file(&path))?
        }
        ChunkFiles::SyncedLater(queue) => {
            let mut f = fs::File::create(&path).map_err(|e| Error::from(e).with_file(&path))?;
            f.write_all(file)
                .map_err(|e| Error::from(e).with_file(&path))?;
            durable::start_writeback(&f);
            drop(f);
            queue.flush_later(path);
        }
        ChunkFiles::Live => {
            let temp = spec.data_dir.join(format!(".__{k}.blp.arrowsmith-tmp"));
            let mut f = fs::File::create(&temp).map_err(|e| Error::from(e).with_file(&temp))?;
            f.write_all(file)
                .and_then(|_| f.sync_all())
                .map_err(|e| Error::from(e).with_file(&temp))?;
            fs::rename(&temp, &path).map_err(|e| Error::from(e).with_file(&path))?;
        }
    }
    Ok(cbytes as u64)
}

/// The bloscpack header bcolz writes before the Blosc chunk of every chunk file.
const BLPK_HEADER: &[u8; 16] = b"blpk\x01\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00";

/// Chunk jobs running on the rayon pool while the caller goes on with the next batch; at most
/// `limit` at a time (each holds one chunk's rows and output), so memory stays bounded.
pub(super) struct ChunkJobs {
    done_tx: mpsc::Sender<(usize, u64, Result<u64>)>,
    done: mpsc::Receiver<(usize, u64, Result<u64>)>,
    in_flight: usize,
    limit: usize,
    failed: Option<Error>,
}

impl ChunkJobs {
    pub(super) fn new() -> ChunkJobs {
        let (done_tx, done) = mpsc::channel();
        ChunkJobs {
            done_tx,
            done,
            in_flight: 0,
            limit: 2 * rayon::current_num_threads() + 2,
            failed: None,
        }
    }

    /// Starts a job, after waiting for an earlier one if `limit` are running.
    pub(super) fn submit(&mut self, columns: &mut [Column], job: ChunkJob) -> Result<()> {
        while self.in_flight >= self.limit {
            self.collect_one(columns);
        }
        self.check()?;
        let tx = self.done_tx.clone();
        self.in_flight += 1;
        rayon::spawn_fifo(move || {
            let (c, k) = (job.column, job.index);
            let result = catch_unwind(AssertUnwindSafe(|| job.run())).unwrap_or_else(|_| {
                Err(Error::new(
                    ErrorClass::Io,
                    format!("writing chunk {k} failed unexpectedly"),
                ))
            });
            let _ = tx.send((c, k, result));
        });
        Ok(())
    }

    fn collect_one(&mut self, columns: &mut [Column]) {
        let Some((c, k, result)) = background::receive(&self.done) else {
            unreachable!("this struct holds a sender");
        };
        self.in_flight -= 1;
        match result {
            Ok(cbytes) => {
                // A leftover chunk is not listed: its cbytes do not count in meta/sizes.
                if let Some(chunk) = columns[c].chunks.get_mut(k as usize) {
                    chunk.1 = cbytes;
                }
            }
            Err(e) => {
                if self.failed.is_none() {
                    self.failed = Some(e.with_column(c, Some(&columns[c].name)));
                }
            }
        }
    }

    /// The first error of a finished job, if any.
    pub(super) fn check(&mut self) -> Result<()> {
        match self.failed.take() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// Waits for every job; the first error if one failed.
    pub(super) fn finish(&mut self, columns: &mut [Column]) -> Result<()> {
        while self.in_flight > 0 {
            self.collect_one(columns);
        }
        self.check()
    }
}

impl Drop for ChunkJobs {
    /// Jobs still running write into the dataset directory: wait for them before it is removed.
    fn drop(&mut self) {
        while self.in_flight > 0 && background::receive(&self.done).is_some() {
            self.in_flight -= 1;
        }
    }
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
        if !options.codec.available() {
            return Err(fail(Error::unsupported(format!(
                "codec {} is not compiled into this build of arrowsmith (cargo feature bcolz-snappy)",
                options.codec.name()
            ))));
        }
        if options.clevel > 9 {
            return Err(fail(Error::invalid_argument(format!(
                "clevel {} is not in 0..=9",
                options.clevel
            ))));
        }
        if options.chunklen == Some(0) {
            return Err(fail(Error::invalid_argument("chunklen must be at least 1")));
        }
        if !options.overwrite && fs::symlink_metadata(path).is_ok() {
            return Err(fail(Error::invalid_argument(
                "the output already exists; set the overwrite option to replace it",
            )));
        }
        let fields = schema.fields();
        if fields.is_empty() {
            return Err(fail(Error::invalid_argument(
                "bcolz cannot store a table without columns",
            )));
        }
        let kind = match options.kind {
            Some(Kind::Carray) if fields.len() != 1 => {
                return Err(fail(Error::invalid_argument(format!(
                    "a carray holds one column, the schema has {}",
                    fields.len()
                ))))
            }
            Some(k) => k,
            None if fields.len() == 1
                && schema.metadata().get(KIND_KEY).map(String::as_str) == Some("carray") =>
            {
                Kind::Carray
            }
            None => Kind::Ctable,
        };
        let mut seen = std::collections::HashSet::new();
        let mut plans = Vec::new();
        for (i, field) in fields.iter().enumerate() {
            let name = field.name();
            let at = |e: Error| e.with_column(i, Some(name)).with_file(path);
            if kind == Kind::Ctable {
                if !is_plain_component(name) || name == "__attrs__" || name == "__rootdirs__" {
                    return Err(at(Error::invalid_argument(format!(
                        "column name {name:?} cannot be a bcolz column directory"
                    ))));
                }
                if !seen.insert(name.to_lowercase()) {
                    return Err(at(Error::invalid_argument(format!(
                        "column name {name:?} is not unique (also case-insensitively)"
                    ))));
                }
            }
            let (dtype, row_shape) = mapping::dtype_for_arrow(field).ok_or_else(|| {
                at(Error::new(
                    ErrorClass::UnsupportedType,
                    format!("Arrow type {} has no bcolz dtype", field.data_type()),
                ))
            })?;
            let mut fixed_width = options.widths.get(name.as_str()).copied();
            if fixed_width.is_none() {
                if let Some(text) = field.metadata().get(DTYPE_KEY) {
                    if let Ok(stored) = DType::parse(text) {
                        fixed_width = match (stored.base, dtype.base) {
                            (Base::Bytes(w), Base::Bytes(_))
                            | (Base::Unicode(w), Base::Unicode(_)) => Some(w),
                            _ => None,
                        };
                    }
                }
            }
            if let DataType::FixedSizeBinary(k) = field.data_type() {
                fixed_width = fixed_width.or(Some((*k).max(1) as usize));
            }
            if fixed_width == Some(0) {
                return Err(at(Error::invalid_argument(
                    "a string width must be at least 1",
                )));
            }
            let attrs_text = column_attrs(field, &dtype).map_err(at)?;
            plans.push((name.clone(), dtype, row_shape, fixed_width, attrs_text));
        }
        let root_attrs = match schema.metadata().get(ATTRS_KEY) {
            Some(text) => {
                check_attrs(text).map_err(|e| fail(e.with_field("schema metadata bcolz.attrs")))?
            }
            None => "{}".to_owned(),
        };
        let mut dir = AtomicDir::create(path)?;
        dir.set_durable(options.durable);
        let syncer = options.durable.then(durable::Syncer::start);
        let mut columns = Vec::with_capacity(plans.len());
        for (name, dtype, row_shape, fixed_width, attrs_text) in plans {
            let col_dir = match kind {
                Kind::Carray => dir.path().to_path_buf(),
                Kind::Ctable => dir.path().join(&name),
            };
            fs::create_dir_all(col_dir.join("data")).map_err(|e| fail(e.into()))?;
            fs::create_dir_all(col_dir.join("meta")).map_err(|e| fail(e.into()))?;
            let attrs_text = if kind == Kind::Carray {
                merge_carray_attrs(&root_attrs, &attrs_text)
            } else {
                attrs_text
            };
            columns.push(Column {
                name,
                width: fixed_width.unwrap_or(1),
                dtype,
                row_shape,
                fixed_width,
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
                files: match &syncer {
                    Some(syncer) => ChunkFiles::SyncedLater(syncer.queue()),
                    None => ChunkFiles::Unsynced,
                },
            });
        }
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
        super::append::check_batch(batch, &self.types).map_err(|e| e.with_file(&target))?;
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

/// Cuts every full chunk pending in any column and hands it to the chunk jobs.
pub(super) fn queue_full_chunks(columns: &mut [Column], jobs: &mut ChunkJobs) -> Result<()> {
    let mut queued = Vec::new();
    for (c, col) in columns.iter_mut().enumerate() {
        let Some(chunklen) = col.chunklen else {
            continue;
        };
        let chunklen = chunklen as usize;
        while col.pending_rows >= chunklen {
            queued.push(cut_chunk(col, c, chunklen));
        }
    }
    for job in queued {
        jobs.submit(columns, job)?;
    }
    Ok(())
}

/// Hands the rows left in each column (fewer than a chunk) to the chunk jobs as its last chunk.
pub(super) fn queue_leftovers(columns: &mut [Column], jobs: &mut ChunkJobs) -> Result<()> {
    let mut queued = Vec::new();
    for (c, col) in columns.iter_mut().enumerate() {
        if col.pending_rows > 0 {
            let rows = col.pending_rows;
            let mut job = cut_chunk(col, c, rows);
            // The leftover is not a full chunk: it does not count in `chunks`.
            col.chunks.pop();
            job.index = col.chunks.len() as u64;
            queued.push(job);
        }
    }
    for job in queued {
        jobs.submit(columns, job)?;
    }
    Ok(())
}

fn cut_chunk(col: &mut Column, c: usize, rows: usize) -> ChunkJob {
    let width = col.width;
    let index = col.chunks.len() as u64;
    col.chunks.push((width, 0));
    ChunkJob {
        column: c,
        index,
        spec: col.chunk_spec(width),
        pieces: col.take_rows(rows),
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
        // Durable unless told otherwise: flushes what the syncer has not, then the rename.
        self.dir.commit(self.options.overwrite)?;
        Ok(WriteSummary {
            rows: total,
            warnings: Vec::new(),
        })
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

/// Writes a small text file (and a final newline); `sync` flushes it to disk before returning.
fn write_text(path: &Path, text: &str, sync: bool) -> Result<()> {
    let mut f = fs::File::create(path).map_err(|e| Error::from(e).with_file(path))?;
    f.write_all(format!("{text}\n").as_bytes())
        .and_then(|_| if sync { f.sync_all() } else { Ok(()) })
        .map_err(|e| Error::from(e).with_file(path))
}

fn write_meta(col: &Column, rows: u64, options: &WriterOptions) -> Result<()> {
    let dtype = col.dtype_with(col.width);
    let chunklen = col.chunklen.unwrap_or(1);
    let dflt = match dtype.base {
        Base::Float(_) => "0.0",
        Base::Bool => "false",
        Base::Bytes(_) | Base::Unicode(_) => "\"\"",
        _ => "0",
    };
    let expectedlen = options.expected_len.unwrap_or(rows);
    let storage = format!(
        "{{\"dtype\": \"{}\", \"cparams\": {{\"clevel\": {}, \"shuffle\": {}, \"cname\": \"{}\", \"quantize\": 0}}, \"chunklen\": {chunklen}, \"expectedlen\": {expectedlen}, \"dflt\": {dflt}}}",
        dtype.to_numpy_str(),
        options.clevel,
        options.shuffle.code(),
        options.codec.name()
    );
    write_text(&col.dir.join("meta").join("storage"), &storage, false)?;
    write_text(&col.dir.join("__attrs__"), &col.attrs_text, false)?;
    write_sizes(col, rows, false)
}

/// `meta/sizes`, written to a temporary file (flushed to disk if `sync`) and renamed into
/// place: the commit record of an append.
pub(super) fn write_sizes(col: &Column, rows: u64, sync: bool) -> Result<()> {
    let chunklen = col.chunklen.unwrap_or(1);
    let atom = col.atomsize_for(col.width) as u64;
    let mut shape = vec![rows.to_string()];
    shape.extend(col.row_shape.iter().map(|d| d.to_string()));
    let cbytes: u64 = col.chunks.iter().map(|c| c.1).sum::<u64>() + chunklen * atom;
    let sizes = format!(
        "{{\"shape\": [{}], \"nbytes\": {}, \"cbytes\": {cbytes}}}",
        shape.join(", "),
        rows * atom
    );
    let path = col.dir.join("meta").join("sizes");
    let temp = col.dir.join("meta").join(".sizes.arrowsmith-tmp");
    write_text(&temp, &sizes, sync)?;
    fs::rename(&temp, &path).map_err(|e| Error::from(e).with_file(&path))
}

/// `bcolz.attrs` checked (lenient JSON object) and made ASCII.
fn check_attrs(text: &str) -> Result<String> {
    let value = parse_lenient(text)
        .map_err(|m| Error::new(ErrorClass::BadMeta, format!("bcolz.attrs: {m}")))?;
    if !value.is_object() {
        return Err(Error::new(
            ErrorClass::BadMeta,
            "bcolz.attrs must be a JSON object",
        ));
    }
    Ok(escape_non_ascii(text.trim()))
}

/// A column's `__attrs__`: its field's `bcolz.attrs`, plus `timezone` for zoned timestamps.
fn column_attrs(field: &Field, _dtype: &DType) -> Result<String> {
    let mut text = match field.metadata().get(ATTRS_KEY) {
        Some(t) => check_attrs(t).map_err(|e| e.with_field("field metadata bcolz.attrs"))?,
        None => "{}".to_owned(),
    };
    if let DataType::Timestamp(_, Some(tz)) = field.data_type() {
        let has = parse_lenient(&text)
            .ok()
            .and_then(|v| v.get("timezone").cloned())
            .is_some();
        if !has {
            text = add_key(&text, "\"timezone\"", &python_string(tz));
        }
    }
    Ok(text)
}

/// Inserts `"key": value` (both JSON text) at the front of a JSON object's text.
fn add_key(object_text: &str, key_json: &str, value_json: &str) -> String {
    let inner = object_text.trim().trim_start_matches('{').trim_start();
    if inner.starts_with('}') {
        format!("{{{key_json}: {value_json}}}")
    } else {
        format!("{{{key_json}: {value_json}, {inner}")
    }
}

/// A carray's `__attrs__`: the schema's attributes merged with the field's (field keys win).
fn merge_carray_attrs(root: &str, field: &str) -> String {
    let empty = |t: &str| t.chars().filter(|c| !c.is_whitespace()).collect::<String>() == "{}";
    if empty(field) {
        return root.to_owned();
    }
    if empty(root) {
        return field.to_owned();
    }
    let (Ok(Value::Object(r)), Ok(Value::Object(f))) = (parse_lenient(root), parse_lenient(field))
    else {
        return field.to_owned();
    };
    // Keys of the root that the field does not have, re-serialised (their NaN tokens become null).
    let mut text = field.to_owned();
    for (k, v) in r.iter().rev() {
        if !f.contains_key(k) {
            text = add_key(&text, &python_string(k), &escape_non_ascii(&v.to_string()));
        }
    }
    text
}

fn null_error(row: u64) -> Error {
    Error::new(
        ErrorClass::BadValue,
        "has a null; bcolz cannot store nulls (set the bcolz_nulls_as_nan option to write them as NaN/NaT in float and temporal columns)",
    )
    .at_row(row)
}

/// Checks one Arrow column (nulls, string widths) and appends it to the column's pending rows,
/// without copying its values: they are encoded when a chunk job takes them.
pub(super) fn take_column(
    col: &mut Column,
    array: &ArrayRef,
    first_row: u64,
    policy: NullPolicy,
) -> Result<()> {
    let array: ArrayRef = match array.data_type() {
        DataType::Dictionary(_, v) => cast(array, v)?,
        _ => array.clone(),
    };
    let array: ArrayRef = match array.data_type() {
        DataType::LargeUtf8 | DataType::Utf8View => cast(&array, &DataType::Utf8)?,
        DataType::LargeBinary | DataType::BinaryView | DataType::FixedSizeBinary(_) => {
            cast(&array, &DataType::Binary)?
        }
        _ => array,
    };
    let sentinel_ok = policy == NullPolicy::Sentinel
        && matches!(
            col.dtype.base,
            Base::Float(_) | Base::DateTime(_) | Base::TimeDelta(_)
        );
    let len = array.len();
    match col.dtype.base {
        Base::Bytes(_) | Base::Unicode(_) => {
            if let Some(i) = array
                .nulls()
                .and_then(|nulls| nulls.iter().position(|valid| !valid))
            {
                return Err(null_error(first_row + i as u64));
            }
            let widest = if matches!(col.dtype.base, Base::Unicode(_)) {
                let strings = array.as_string::<i32>();
                (0..len).map(|i| strings.value(i).chars().count()).max()
            } else {
                let offsets = array.as_binary::<i32>().value_offsets();
                offsets.windows(2).map(|w| (w[1] - w[0]) as usize).max()
            };
            if let Some(widest) = widest.filter(|&w| w > col.width) {
                if let Some(fixed) = col.fixed_width {
                    let (i, width) = first_wider(&array, col, fixed);
                    return Err(Error::new(
                        ErrorClass::ValueOutOfRange,
                        format!("a value of length {width} does not fit the fixed width {fixed}"),
                    )
                    .at_row(first_row + i as u64));
                }
                col.width = widest;
            }
            col.push_rows(Piece::Rows {
                array,
                offset: 0,
                len,
            });
        }
        _ if has_nulls(&array) => {
            // Refused (an error naming the row), or written as NaN / NaT: encoded now.
            let item = col.atomsize_for(col.width);
            let mut bytes = Vec::with_capacity(len * item);
            flat_bytes(
                &array,
                col.dtype.itemsize().unwrap_or(1),
                first_row,
                sentinel_ok,
                &mut bytes,
            )?;
            col.push_rows(Piece::Stored {
                bytes: Buffer::from_vec(bytes),
                item,
                offset: 0,
                len,
            });
        }
        _ => col.push_rows(Piece::Rows {
            array,
            offset: 0,
            len,
        }),
    }
    Ok(())
}

/// The first value longer than `fixed` code units, and its length.
fn first_wider(array: &ArrayRef, col: &Column, fixed: usize) -> (usize, usize) {
    (0..array.len())
        .map(|i| match col.dtype.base {
            Base::Unicode(_) => array.as_string::<i32>().value(i).chars().count(),
            _ => array.as_binary::<i32>().value(i).len(),
        })
        .enumerate()
        .find(|&(_, w)| w > fixed)
        .unwrap_or((0, fixed))
}

/// Whether an array or, for a fixed-size list, its values hold a null.
fn has_nulls(array: &ArrayRef) -> bool {
    array.null_count() > 0
        || matches!(array.data_type(), DataType::FixedSizeList(..))
            && has_nulls(array.as_fixed_size_list().values())
}

/// Little-endian bytes of a fixed-size column (tensor rows flattened), nulls checked.
fn flat_bytes(
    array: &ArrayRef,
    itemsize: usize,
    first_row: u64,
    sentinel_ok: bool,
    out: &mut Vec<u8>,
) -> Result<()> {
    if let DataType::FixedSizeList(_, k) = array.data_type() {
        let list = array.as_fixed_size_list();
        let k = *k as usize;
        let values = list.values().slice(list.offset() * k, list.len() * k);
        let start = out.len();
        // Row index of a child element, for error messages.
        if values.null_count() > 0 && !sentinel_ok {
            let e = (0..values.len()).find(|&e| values.is_null(e)).unwrap_or(0);
            return Err(null_error(first_row + (e / k.max(1)) as u64));
        }
        flat_bytes(&values, itemsize, first_row, sentinel_ok, out)?;
        if list.null_count() > 0 {
            if !sentinel_ok {
                let i = (0..list.len()).find(|&i| list.is_null(i)).unwrap_or(0);
                return Err(null_error(first_row + i as u64));
            }
            let item = itemsize;
            let per_row = out.len().saturating_sub(start) / list.len().max(1);
            for i in (0..list.len()).filter(|&i| list.is_null(i)) {
                for e in 0..per_row / item {
                    let at = start + i * per_row + e * item;
                    out[at..at + item].copy_from_slice(&nan_bytes(item));
                }
            }
        }
        return Ok(());
    }
    let n = array.len();
    match array.data_type() {
        DataType::Boolean => {
            let a = array.as_boolean();
            if let Some(i) = (0..n).find(|&i| a.is_null(i)) {
                return Err(null_error(first_row + i as u64));
            }
            out.extend((0..n).map(|i| a.value(i) as u8));
        }
        DataType::Date32 => {
            let a = array.as_primitive::<arrow_array::types::Date32Type>();
            for i in 0..n {
                let v = if a.is_null(i) {
                    if !sentinel_ok {
                        return Err(null_error(first_row + i as u64));
                    }
                    i64::MIN
                } else {
                    a.value(i) as i64
                };
                out.extend_from_slice(&v.to_le_bytes());
            }
        }
        dt => {
            let size = dt.primitive_width().ok_or_else(|| {
                Error::new(
                    ErrorClass::UnsupportedType,
                    format!("Arrow type {dt} has no bcolz dtype"),
                )
            })?;
            let data = array.to_data();
            let buf =
                &data.buffers()[0].as_slice()[data.offset() * size..(data.offset() + n) * size];
            let start = out.len();
            out.extend_from_slice(buf);
            if array.null_count() > 0 {
                if !sentinel_ok {
                    let i = (0..n).find(|&i| array.is_null(i)).unwrap_or(0);
                    return Err(null_error(first_row + i as u64));
                }
                let fill = match dt {
                    DataType::Float16 | DataType::Float32 | DataType::Float64 => nan_bytes(size),
                    _ => i64::MIN.to_le_bytes().to_vec(),
                };
                for i in (0..n).filter(|&i| array.is_null(i)) {
                    out[start + i * size..start + (i + 1) * size].copy_from_slice(&fill);
                }
            }
        }
    }
    Ok(())
}

fn nan_bytes(size: usize) -> Vec<u8> {
    match size {
        2 => 0x7E00u16.to_le_bytes().to_vec(),
        4 => 0x7FC0_0000u32.to_le_bytes().to_vec(),
        _ => 0x7FF8_0000_0000_0000u64.to_le_bytes().to_vec(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunklen_like_bcolz() {
        assert_eq!(default_chunklen(10, 1), 16384);
        assert_eq!(default_chunklen(2, 20), 819);
        assert_eq!(default_chunklen(2000, 8), 16384);
        assert_eq!(default_chunklen(9999, 28), 9362);
        assert_eq!(default_chunklen(10_000_000, 8), 65536);
    }
}
