//! Arrow → bcolz (spec B4).
//!
//! Rows are buffered per column until a full chunk of `chunklen` rows exists; full chunks of
//! all columns are then compressed in parallel (rayon, one c-blosc ctx call per chunk) and
//! written by the workers. The dataset is built in a temporary sibling directory and renamed
//! into place by `finish()`; nothing is left behind on error or drop.
//!
//! String widths: a column's width is the largest value seen; chunks compressed while the width
//! was smaller are re-encoded (decompressed, re-padded, recompressed) at `finish()`.

use std::collections::HashMap;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use arrow::compute::cast;
use arrow_array::cast::AsArray;
use arrow_array::{Array, ArrayRef, RecordBatch};
use arrow_schema::{DataType, Field, SchemaRef};
use rayon::prelude::*;
use serde_json::Value;

use super::blosc::{self, Codec, Shuffle};
use super::json::{escape_non_ascii, parse_lenient, python_string};
use super::mapping::{self, Base, DType, ATTRS_KEY, DTYPE_KEY, KIND_KEY};
use super::meta::{is_plain_component, Kind};
use crate::atomic::AtomicDir;
use crate::error::{Error, ErrorClass, Result};
use crate::{BatchWriter, WriteSummary};

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
    pub fn with_codec(mut self, codec: Codec) -> Self {
        self.codec = codec;
        self
    }
    /// Compression level 0–9 (default 5).
    pub fn with_clevel(mut self, clevel: u8) -> Self {
        self.clevel = clevel;
        self
    }
    pub fn with_shuffle(mut self, shuffle: Shuffle) -> Self {
        self.shuffle = shuffle;
        self
    }
    pub fn with_null_policy(mut self, policy: NullPolicy) -> Self {
        self.null_policy = policy;
        self
    }
    pub fn null_policy(&self) -> NullPolicy {
        self.null_policy
    }
    /// Sets the codec and optionally the level from `codec[:level]` (`lz4`, `zstd:9`, …).
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
    /// Whether chunk files are flushed to disk (fsync) before they are renamed into place
    /// (default true). bcolz itself never syncs; without it a power loss can leave files empty.
    pub fn with_durable(mut self, durable: bool) -> Self {
        self.durable = durable;
        self
    }
    /// Replace an existing directory at the target.
    pub fn with_overwrite(mut self, overwrite: bool) -> Self {
        self.overwrite = overwrite;
        self
    }
    /// A fixed width (`|S` bytes or `<U` code points) for a string or binary column.
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
    /// Pending rows: raw bytes (fixed-size types) or items (strings, unpadded).
    pub(super) pending: Vec<u8>,
    pub(super) pending_items: Items,
    /// Full chunks written, with the width they were encoded with and their cbytes.
    pub(super) chunks: Vec<(usize, u64)>,
    pub(super) attrs_text: String,
    pub(super) codec: Codec,
    pub(super) clevel: u8,
    pub(super) shuffle: Shuffle,
    /// Chunks hold big-endian values (appending to a `>` dtype); pending rows are little-endian.
    pub(super) big_endian: bool,
    /// fsync each chunk file before renaming it.
    pub(super) durable: bool,
}

impl Column {
    pub(super) fn is_string(&self) -> bool {
        matches!(self.dtype.base, Base::Bytes(_) | Base::Unicode(_))
    }

    pub(super) fn pending_rows(&self) -> usize {
        if self.is_string() {
            self.pending_items.len()
        } else {
            self.pending.len() / self.atomsize_for(self.width)
        }
    }

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

    /// Encodes string items `[from, to)` NUL-padded to `width`.
    pub(super) fn encode_items(
        &self,
        items: &Items,
        from: usize,
        to: usize,
        width: usize,
    ) -> Vec<u8> {
        let size = width * self.unit();
        let mut out = Vec::with_capacity((to - from) * size);
        for i in from..to {
            let item = items.get(i);
            out.extend_from_slice(item);
            out.resize(out.len() + size - item.len(), 0);
        }
        out
    }
}

/// String values in one buffer (stored units, unpadded), without an allocation per value.
#[derive(Debug, Default)]
pub(super) struct Items {
    bytes: Vec<u8>,
    ends: Vec<usize>,
}

impl Items {
    pub(super) fn len(&self) -> usize {
        self.ends.len()
    }
    fn get(&self, i: usize) -> &[u8] {
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        &self.bytes[start..self.ends[i]]
    }
    pub(super) fn push(&mut self, item: &[u8]) {
        self.bytes.extend_from_slice(item);
        self.ends.push(self.bytes.len());
    }
    /// Appends a string as UTF-32LE; returns its number of code points.
    fn push_utf32(&mut self, s: &str) -> usize {
        let before = self.bytes.len();
        for c in s.chars() {
            self.bytes.extend_from_slice(&(c as u32).to_le_bytes());
        }
        self.ends.push(self.bytes.len());
        (self.bytes.len() - before) / 4
    }
    /// Items of `size` bytes each, as stored (padding included).
    pub(super) fn from_padded(raw: &[u8], size: usize) -> Items {
        let mut items = Items::default();
        for item in raw.chunks(size.max(1)) {
            items.push(item);
        }
        items
    }
    /// Removes the first `n` items.
    fn drain_front(&mut self, n: usize) {
        let cut = if n == 0 { 0 } else { self.ends[n - 1] };
        self.bytes.drain(..cut);
        self.ends.drain(..n);
        for e in &mut self.ends {
            *e -= cut;
        }
    }
}

/// Writes record batches into a new bcolz carray or ctable directory.
pub struct Writer {
    dir: AtomicDir,
    kind: Kind,
    columns: Vec<Column>,
    options: WriterOptions,
    rows: u64,
    root_attrs: String,
    types: Vec<DataType>,
}

impl Writer {
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
                "the output already exists; ask for overwrite (--overwrite) to replace it",
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
        let dir = AtomicDir::create(path)?;
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
                pending: Vec::new(),
                pending_items: Items::default(),
                chunks: Vec::new(),
                attrs_text,
                codec: options.codec,
                clevel: options.clevel,
                shuffle: options.shuffle,
                big_endian: false,
                durable: options.durable,
            });
        }
        Ok(Writer {
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

    pub fn write(&mut self, batch: &RecordBatch) -> Result<()> {
        super::append::check_batch(batch, &self.types).map_err(|e| e.with_file(self.target()))?;
        let first_row = self.rows;
        let target = self.target().to_path_buf();
        let policy = self.options.null_policy;
        for (i, col) in self.columns.iter_mut().enumerate() {
            encode_column(col, batch.column(i), first_row, policy)
                .map_err(|e| e.with_column(i, Some(&col.name)).with_file(&target))?;
        }
        self.rows += batch.num_rows() as u64;
        // Decide chunklens once a column holds enough rows that a chunk must be cut.
        let expected = self.options.expected_len.unwrap_or(UNKNOWN_LEN);
        for col in &mut self.columns {
            if col.chunklen.is_none() {
                let cl = default_chunklen(expected, col.atomsize_for(col.width));
                if col.pending_rows() as u64 >= cl || self.options.expected_len.is_some() {
                    col.chunklen = Some(cl);
                }
            }
        }
        flush_full_chunks(&mut self.columns).map_err(|e| e.with_file(self.dir.target()))
    }

    pub fn finish(self) -> Result<WriteSummary> {
        self.finish_impl()
    }
}

/// Compresses and writes every full chunk pending in any column, in parallel.
pub(super) fn flush_full_chunks(all: &mut [Column]) -> Result<()> {
    let mut jobs: Vec<(usize, u64, Vec<u8>, usize)> = Vec::new();
    for (c, col) in all.iter_mut().enumerate() {
        let Some(chunklen) = col.chunklen else {
            continue;
        };
        let chunklen = chunklen as usize;
        let nfull = col.pending_rows() / chunklen;
        if nfull == 0 {
            continue;
        }
        let width = col.width;
        if col.is_string() {
            for j in 0..nfull {
                let k = (col.chunks.len() + j) as u64;
                let bytes =
                    col.encode_items(&col.pending_items, j * chunklen, (j + 1) * chunklen, width);
                jobs.push((c, k, bytes, width));
            }
            col.pending_items.drain_front(nfull * chunklen);
        } else {
            let atom = col.atomsize_for(width);
            let bytes: Vec<u8> = col.pending.drain(..nfull * chunklen * atom).collect();
            for (j, part) in bytes.chunks(chunklen * atom).enumerate() {
                let k = (col.chunks.len() + j) as u64;
                jobs.push((c, k, part.to_vec(), width));
            }
        }
        for _ in 0..nfull {
            col.chunks.push((width, 0));
        }
    }
    let columns = &*all;
    let results: Vec<(usize, u64, u64)> = jobs
        .par_iter()
        .map(|(c, k, bytes, width)| {
            let col = &columns[*c];
            let cbytes = write_chunk(col, *k, bytes, col.dtype_with(*width).typesize())
                .map_err(|e| e.with_column(*c, Some(&col.name)))?;
            Ok((*c, *k, cbytes))
        })
        .collect::<Result<_>>()?;
    for (c, k, cbytes) in results {
        all[c].chunks[k as usize].1 = cbytes;
    }
    Ok(())
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
        flush_full_chunks(&mut self.columns).map_err(|e| e.with_file(self.dir.target()))?;
        let target = self.target().to_path_buf();
        let options = self.options.clone();
        let at = |e: Error, c: usize, name: &str| e.with_column(c, Some(name)).with_file(&target);
        // Re-encode chunks written with a smaller string width, in parallel.
        let mut redo: Vec<(usize, u64, usize)> = Vec::new();
        for (c, col) in self.columns.iter().enumerate() {
            for (k, (w, _)) in col.chunks.iter().enumerate() {
                if *w != col.width {
                    redo.push((c, k as u64, *w));
                }
            }
        }
        let columns = &self.columns;
        let redone: Vec<(usize, u64, u64)> = redo
            .par_iter()
            .map(|&(c, k, old)| {
                let col = &columns[c];
                let path = col.dir.join("data").join(format!("__{k}.blp"));
                let file = fs::read(&path).map_err(|e| at(e.into(), c, &col.name))?;
                let chunklen = col.chunklen.unwrap_or(1) as usize;
                let raw = blosc::decompress(&file[16..], chunklen * col.atomsize_for(old))
                    .map_err(|e| at(Error::new(ErrorClass::Io, e.to_string()), c, &col.name))?;
                let items = Items::from_padded(&raw, old * col.unit());
                let bytes = col.encode_items(&items, 0, items.len(), col.width);
                let cbytes = write_chunk(col, k, &bytes, col.dtype_with(col.width).typesize())
                    .map_err(|e| at(e, c, &col.name))?;
                Ok((c, k, cbytes))
            })
            .collect::<Result<_>>()?;
        for (c, k, cbytes) in redone {
            self.columns[c].chunks[k as usize] = (self.columns[c].width, cbytes);
        }
        // Leftovers, then metadata.
        for (c, col) in self.columns.iter_mut().enumerate() {
            let k = col.chunks.len() as u64;
            let width = col.width;
            let leftover = if col.is_string() {
                col.encode_items(&col.pending_items, 0, col.pending_items.len(), width)
            } else {
                std::mem::take(&mut col.pending)
            };
            if !leftover.is_empty() {
                write_chunk(col, k, &leftover, col.dtype_with(width).typesize())
                    .map_err(|e| at(e, c, &col.name))?;
            }
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
            )?;
            write_text(&self.dir.path().join("__attrs__"), &self.root_attrs)?;
        }
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

fn write_text(path: &Path, text: &str) -> Result<()> {
    let mut f = fs::File::create(path).map_err(|e| Error::from(e).with_file(path))?;
    f.write_all(text.as_bytes())
        .and_then(|_| f.write_all(b"\n"))
        .and_then(|_| f.sync_all())
        .map_err(|e| Error::from(e).with_file(path))
}

/// Compresses `bytes` and writes `data/__{k}.blp`; returns the Blosc cbytes.
/// The file is written under a temporary name in `data/` and renamed over `__{k}.blp`, so a
/// chunk file is never half-written (what appending in place relies on).
pub(super) fn write_chunk(col: &Column, k: u64, bytes: &[u8], typesize: usize) -> Result<u64> {
    let swapped;
    let bytes = if col.big_endian && col.dtype.swap_unit() > 1 {
        let mut b = bytes.to_vec();
        for group in b.chunks_exact_mut(col.dtype.swap_unit()) {
            group.reverse();
        }
        swapped = b;
        &swapped[..]
    } else {
        bytes
    };
    let chunk = blosc::compress(bytes, typesize, col.clevel, col.shuffle, col.codec)
        .map_err(|e| Error::new(ErrorClass::Io, e.to_string()))?;
    let path = col.dir.join("data").join(format!("__{k}.blp"));
    let temp = col
        .dir
        .join("data")
        .join(format!(".__{k}.blp.arrowsmith-tmp"));
    let mut f = fs::File::create(&temp).map_err(|e| Error::from(e).with_file(&temp))?;
    f.write_all(b"blpk\x01\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00")
        .and_then(|_| f.write_all(&chunk))
        .and_then(|_| if col.durable { f.sync_all() } else { Ok(()) })
        .map_err(|e| Error::from(e).with_file(&temp))?;
    fs::rename(&temp, &path).map_err(|e| Error::from(e).with_file(&path))?;
    Ok(chunk.len() as u64)
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
    write_text(&col.dir.join("meta").join("storage"), &storage)?;
    write_text(&col.dir.join("__attrs__"), &col.attrs_text)?;
    write_sizes(col, rows)
}

/// `meta/sizes`, written to a temporary file and renamed into place: the commit record.
pub(super) fn write_sizes(col: &Column, rows: u64) -> Result<()> {
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
    write_text(&temp, &sizes)?;
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
        "has a null; bcolz cannot store nulls (use NullPolicy::Sentinel or --bcolz-nulls-as-nan to write NaN/NaT in float and temporal columns)",
    )
    .at_row(row)
}

/// Appends one Arrow column's values to a column's pending rows.
pub(super) fn encode_column(
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
    match col.dtype.base {
        Base::Bytes(_) | Base::Unicode(_) => {
            let unicode = matches!(col.dtype.base, Base::Unicode(_));
            for i in 0..array.len() {
                if array.is_null(i) {
                    return Err(null_error(first_row + i as u64));
                }
                let width = if unicode {
                    col.pending_items
                        .push_utf32(array.as_string::<i32>().value(i))
                } else {
                    let b = array.as_binary::<i32>().value(i);
                    col.pending_items.push(b);
                    b.len()
                };
                if width > col.width {
                    if let Some(fixed) = col.fixed_width {
                        return Err(Error::new(
                            ErrorClass::ValueOutOfRange,
                            format!(
                                "a value of length {width} does not fit the fixed width {fixed}"
                            ),
                        )
                        .at_row(first_row + i as u64));
                    }
                    col.width = width;
                }
            }
            Ok(())
        }
        _ => {
            let mut bytes = Vec::new();
            flat_bytes(&array, col, first_row, sentinel_ok, &mut bytes)?;
            col.pending.extend_from_slice(&bytes);
            Ok(())
        }
    }
}

/// Little-endian bytes of a fixed-size column (tensor rows flattened), nulls checked.
fn flat_bytes(
    array: &ArrayRef,
    col: &Column,
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
        flat_bytes(&values, col, first_row, sentinel_ok, out)?;
        if list.null_count() > 0 {
            if !sentinel_ok {
                let i = (0..list.len()).find(|&i| list.is_null(i)).unwrap_or(0);
                return Err(null_error(first_row + i as u64));
            }
            let item = col.dtype.itemsize().unwrap_or(1);
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
