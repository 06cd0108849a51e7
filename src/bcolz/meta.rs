//! Opening a bcolz directory: the JSON files, the dtype, the sizes, every check of spec B2
//! steps 1–8 (chunk files are checked when they are read, step 9).

use std::fs;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use arrow_buffer::Buffer;
use serde_json::Value;

use super::blosc::{self, ChunkHeader, Codec, Shuffle};
use super::json::parse_lenient;
use super::mapping::DType;
use crate::error::{Error, ErrorClass, Result};
use crate::source::{LocalDir, ObjectSource};

/// carray (one column) or ctable (a directory of columns).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A single column (`meta/` and `data/` at the top of the directory).
    Carray,
    /// A table: one carray directory per column, listed in `__rootdirs__`.
    Ctable,
}

impl Kind {
    /// The kind as bcolz names it (`"carray"`, `"ctable"`).
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Carray => "carray",
            Kind::Ctable => "ctable",
        }
    }
}

/// `meta/storage.cparams`, normalised (a missing `cname` is blosclz, `shuffle: true` is 1).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cparams {
    /// Compression level, 0–9.
    pub clevel: u8,
    /// Shuffle applied before compression.
    pub shuffle: Shuffle,
    /// The codec name as stored (may be one this build lacks, or unknown).
    pub cname: String,
    /// `quantize` digits for floats (0: off); recorded, not applied on reading.
    pub quantize: i64,
}

impl Cparams {
    /// The codec `cname` names, if this build knows it.
    pub fn codec(&self) -> Option<Codec> {
        Codec::from_name(&self.cname)
    }
}

/// One carray: a bare carray, or a column of a ctable.
#[derive(Debug, Clone)]
pub struct CarrayInfo {
    /// The carray's directory (for a dataset under an object-store prefix, that prefix's URL
    /// joined with the column name: where its objects are, for messages).
    pub dir: PathBuf,
    /// The column name (the directory name in a ctable, `""` for a bare carray).
    pub name: String,
    /// The parsed `meta/storage.dtype`.
    pub dtype: DType,
    /// `meta/storage.dtype` verbatim.
    pub dtype_text: String,
    /// Its own `shape[0]`.
    pub rows: u64,
    /// The row shape beyond the first dimension (empty for scalars).
    pub row_shape: Vec<usize>,
    /// Rows per chunk file.
    pub chunklen: u64,
    /// Bytes per row.
    pub atomsize: usize,
    /// Compression settings of the chunks.
    pub cparams: Cparams,
    /// `meta/storage.expectedlen`, when it is stored.
    pub expectedlen: Option<u64>,
    /// `__attrs__` text with trailing whitespace removed; `None` when absent.
    pub attrs_text: Option<String>,
    /// The parsed `__attrs__` (non-finite numbers read as null).
    pub attrs: Value,
    /// The dataset's objects, which its chunk files are read from.
    objects: Arc<dyn ObjectSource>,
    /// The key of its directory under the dataset's root: `""` for a bare carray, `"NAME/"`
    /// for a ctable column.
    prefix: String,
}

impl CarrayInfo {
    /// Bytes of a full chunk (checked ≤ Blosc's limit when opened).
    pub fn chunksize(&self) -> usize {
        self.chunklen as usize * self.atomsize
    }

    /// Number of chunk files holding rows `0 .. rows`.
    pub fn chunks_for(&self, rows: u64) -> u64 {
        rows.div_ceil(self.chunklen)
    }

    /// The file of chunk `k`: `data/__k.blp` (where it is, for messages).
    pub fn chunk_path(&self, k: u64) -> PathBuf {
        self.dir.join("data").join(format!("__{k}.blp"))
    }

    /// The key of chunk `k`'s file under the dataset's root.
    pub fn chunk_key(&self, k: u64) -> String {
        format!("{}data/__{k}.blp", self.prefix)
    }

    /// The time zone of a datetime column, written by arrowsmith into `__attrs__`.
    pub fn timezone(&self) -> Option<&str> {
        self.attrs.get("timezone").and_then(Value::as_str)
    }

    /// Reads chunk `k` and returns its first `need_rows` rows (checked against the file, spec
    /// B2 step 9). The bytes are decompressed straight into an Arrow (64-byte aligned) buffer.
    pub fn read_chunk(&self, k: u64, need_rows: usize) -> Result<Buffer> {
        let file = self
            .objects
            .get(&self.chunk_key(k))
            .map_err(|e| e.with_file(self.chunk_path(k)))?;
        self.decode_chunk(k, file, need_rows)
    }

    /// Decodes chunk `k` from its file's bytes (`None`: the file is missing) and returns its
    /// first `need_rows` rows, every size checked against the bytes first.
    pub fn decode_chunk(&self, k: u64, file: Option<Buffer>, need_rows: usize) -> Result<Buffer> {
        let path = self.chunk_path(k);
        let file = file.ok_or_else(|| self.missing_chunk(k))?;
        let header = self.check_chunk_file(k, &file, file.len() as u64)?;
        let nbytes = header.nbytes as usize;
        let compressed = &file[16..16 + header.cbytes as usize];
        let mut out =
            blosc::decompress_to_buffer(compressed, nbytes).map_err(|e| blosc_error(e, &path))?;
        out.truncate(need_rows * self.atomsize);
        if out.len() != need_rows * self.atomsize {
            return Err(Error::new(
                ErrorClass::BufferSize,
                format!(
                    "the chunk decoded to {} bytes, fewer than the {} needed",
                    out.len(),
                    need_rows * self.atomsize
                ),
            )
            .with_file(&path));
        }
        Ok(out.into())
    }

    /// The Blosc header of chunk `k` (checked as a read checks it, without decompressing):
    /// only the file's first 32 bytes are read.
    pub fn chunk_header(&self, k: u64) -> Result<ChunkHeader> {
        let path = self.chunk_path(k);
        let object = self
            .objects
            .open(&self.chunk_key(k))
            .map_err(|e| e.with_file(&path))?
            .ok_or_else(|| self.missing_chunk(k))?;
        let size = object.size();
        let head = object
            .read_range(0..size.min(32))
            .map_err(|e| e.with_file(&path))?;
        self.check_chunk_file(k, &head, size)
    }

    /// The error for chunk `k`'s file missing.
    fn missing_chunk(&self, k: u64) -> Error {
        let first = k * self.chunklen;
        let rows_here = self
            .chunklen
            .min(self.rows.saturating_sub(k * self.chunklen));
        Error::new(
            ErrorClass::Io,
            format!(
                "missing chunk file: it must hold rows {first}..{}",
                first + rows_here
            ),
        )
        .with_file(self.chunk_path(k))
        .with_source(not_found())
    }

    /// Checks the `blpk` header and the Blosc header at the start of chunk `k`'s file of
    /// `size` bytes (`head` holds at least its first 32 bytes, when it has them) and returns
    /// the Blosc header.
    fn check_chunk_file(&self, k: u64, head: &[u8], size: u64) -> Result<ChunkHeader> {
        let path = self.chunk_path(k);
        let head: &[u8; 32] = head
            .get(..32)
            .and_then(|h| h.try_into().ok())
            .ok_or_else(|| {
                Error::new(
                    ErrorClass::TooSmall,
                    format!(
                        "a chunk file is at least 32 bytes (blpk + Blosc headers), this one has {size}"
                    ),
                )
                .with_file(&path)
            })?;
        check_blpk(head).map_err(|e| e.with_file(&path))?;
        let header = blosc::parse_header(&head[16..]).map_err(|e| blosc_error(e, &path))?;
        self.check_chunk_sizes(k, &header, size)
            .map_err(|e| e.with_file(&path))?;
        Ok(header)
    }

    /// Checks a chunk's Blosc sizes against the rows it must hold (a full chunk, or the
    /// leftover rows of the last) and against the file's `size`.
    fn check_chunk_sizes(&self, k: u64, header: &ChunkHeader, size: u64) -> Result<()> {
        let rows_here = self
            .chunklen
            .min(self.rows.saturating_sub(k * self.chunklen));
        let chunksize = self.chunksize();
        let nbytes = header.nbytes as usize;
        let nfull = self.rows / self.chunklen;
        if k < nfull {
            if nbytes != chunksize {
                return Err(Error::new(
                ErrorClass::BufferSize,
                format!(
                    "Blosc nbytes is {nbytes}, but a full chunk holds {chunksize} bytes ({} rows × {} bytes)",
                    self.chunklen, self.atomsize
                ),
            )
            .at_offset(20));
            }
        } else {
            let need = rows_here as usize * self.atomsize;
            if nbytes < need || nbytes > chunksize {
                return Err(Error::new(
                ErrorClass::BufferSize,
                format!(
                    "Blosc nbytes is {nbytes}, but the leftover chunk must hold at least {need} bytes ({rows_here} rows × {} bytes) and at most {chunksize}",
                    self.atomsize
                ),
            )
            .at_offset(20));
            }
        }
        let cbytes = header.cbytes as u64;
        if cbytes > nbytes as u64 + 16 {
            return Err(Error::new(
                ErrorClass::BadEnvelope,
                format!(
                    "Blosc cbytes {cbytes} exceeds nbytes + 16 = {}",
                    nbytes + 16
                ),
            )
            .at_offset(28));
        }
        if 16 + cbytes > size {
            return Err(Error::new(
                ErrorClass::TooSmall,
                format!(
                    "truncated chunk file: Blosc cbytes says {} bytes, the file has {size}",
                    16 + cbytes
                ),
            )
            .at_offset(28));
        }
        Ok(())
    }
}

/// Checks the `blpk` header that bcolz writes before the Blosc chunk.
fn check_blpk(head: &[u8; 32]) -> Result<()> {
    if &head[..4] != b"blpk" {
        return Err(Error::new(
            ErrorClass::BadSignature,
            format!(
                "the file does not start with \"blpk\" (found {:02x?})",
                &head[..4]
            ),
        )
        .at_offset(0));
    }
    if head[4] != 1 {
        return Err(Error::new(
            ErrorClass::UnsupportedVersion,
            format!("bloscpack format version is {}, expected 1", head[4]),
        )
        .at_offset(4));
    }
    Ok(())
}

/// The cause of a missing-object error, so that it reads as a missing file wherever the I/O
/// kind is looked at (Python's `FileNotFoundError`).
fn not_found() -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::NotFound, "no such file or object")
}

fn blosc_error(e: blosc::BloscError, path: &Path) -> Error {
    let class = if e.message.contains("does not include") {
        ErrorClass::Unsupported
    } else {
        ErrorClass::BadEnvelope
    };
    let mut err = Error::new(class, e.message).with_file(path);
    if let Some(o) = e.offset {
        err = err.at_offset(o + 16);
    }
    err
}

/// An opened, checked bcolz dataset.
#[derive(Debug, Clone)]
pub struct DatasetInfo {
    /// The dataset's directory (for one under an object-store prefix, that prefix's URL).
    pub path: PathBuf,
    /// carray or ctable.
    pub kind: Kind,
    /// Root `__attrs__` text, trimmed (`None` when absent).
    pub attrs_text: Option<String>,
    /// Its columns, in `__rootdirs__` order (one for a carray).
    pub columns: Vec<CarrayInfo>,
    /// Rows of the dataset: the first column's `shape[0]` for a ctable.
    pub nrows: u64,
    /// Its files, as objects under its root: what its chunk files are read from.
    objects: Arc<dyn ObjectSource>,
    /// Whether it was opened from a local path (its chunk files' sizes are then a stat each).
    local: bool,
}

impl DatasetInfo {
    /// The objects under the dataset's root that its chunk files are read from.
    pub fn objects(&self) -> &Arc<dyn ObjectSource> {
        &self.objects
    }

    /// Whether it was opened from a local path rather than from an [`ObjectSource`].
    pub(crate) fn is_local_path(&self) -> bool {
        self.local
    }
}

/// The metadata objects at a dataset's root, fetched together when it is opened: a ctable's
/// `__rootdirs__`, the root `__attrs__`, and a carray's `meta/sizes` and `meta/storage`.
const ROOT_KEYS: [&str; 4] = ["__rootdirs__", "__attrs__", "meta/sizes", "meta/storage"];

/// Tells a bcolz directory's kind by its structure (spec B2), or `None`.
pub fn detect_kind(path: &Path) -> Option<Kind> {
    if path.join("__rootdirs__").is_file() {
        Some(Kind::Ctable)
    } else if path.join("meta").is_dir() {
        Some(Kind::Carray)
    } else {
        None
    }
}

/// Opens and checks the bcolz directory at `path`.
pub fn open(path: &Path, carray_name: Option<&str>) -> Result<DatasetInfo> {
    open_columns(path, carray_name, None)
}

/// [`open`], reading the metadata of a ctable's first column and of the columns named in
/// `columns` only (`None`: every column). The dataset then has those columns, in the ctable's
/// order; its rows are the first column's, as always.
pub(crate) fn open_columns(
    path: &Path,
    carray_name: Option<&str>,
    columns: Option<&[String]>,
) -> Result<DatasetInfo> {
    let md = fs::metadata(path).map_err(|e| Error::from(e).with_file(path))?;
    if !md.is_dir() {
        return Err(Error::new(
            ErrorClass::BadSignature,
            "not a bcolz directory: a carray or ctable is a directory",
        )
        .with_file(path));
    }
    let objects = Arc::new(LocalDir::new(path));
    let name = || carray_name.map_or_else(|| directory_name(path), str::to_owned);
    let mut info = open_objects(objects, path, name, columns)?;
    info.local = true;
    Ok(info)
}

/// Opens and checks the bcolz dataset whose files are the objects under `objects` (an
/// object-store prefix): its metadata objects are fetched by their computed keys, in two
/// batched requests for a ctable (the root's, then every column's) and one for a carray.
pub fn open_from(objects: Arc<dyn ObjectSource>, carray_name: Option<&str>) -> Result<DatasetInfo> {
    open_columns_from(objects, carray_name, None)
}

/// [`open_from`], reading the metadata of the columns [`open_columns`] reads.
pub(crate) fn open_columns_from(
    objects: Arc<dyn ObjectSource>,
    carray_name: Option<&str>,
    columns: Option<&[String]>,
) -> Result<DatasetInfo> {
    let location = objects.location().trim_end_matches('/').to_owned();
    let name = carray_name.map_or_else(
        || match location.rsplit('/').next() {
            Some(last) if !last.is_empty() => last.to_owned(),
            _ => "values".to_owned(),
        },
        str::to_owned,
    );
    open_objects(objects, Path::new(&location), || name, columns)
}

fn open_objects(
    objects: Arc<dyn ObjectSource>,
    root: &Path,
    carray_name: impl FnOnce() -> String,
    columns: Option<&[String]>,
) -> Result<DatasetInfo> {
    let mut found = fetch_all(objects.as_ref(), root, &ROOT_KEYS)?.into_iter();
    let mut next = || found.next().flatten();
    let (rootdirs, attrs, sizes, storage) = (next(), next(), next(), next());
    if let Some(rootdirs) = rootdirs {
        return open_ctable(objects, root, rootdirs, attrs, columns);
    }
    if sizes.is_none() && storage.is_none() {
        return Err(Error::new(
            ErrorClass::BadSignature,
            "not a bcolz directory: it has neither __rootdirs__ (ctable) nor meta/sizes and \
             meta/storage (carray)",
        )
        .with_file(root));
    }
    let meta = CarrayMeta {
        sizes,
        storage,
        attrs,
    };
    let carray = open_carray(
        &objects,
        root.to_path_buf(),
        String::new(),
        carray_name(),
        meta,
    )?;
    let nrows = carray.rows;
    Ok(DatasetInfo {
        path: root.to_path_buf(),
        kind: Kind::Carray,
        attrs_text: carray.attrs_text.clone(),
        columns: vec![carray],
        nrows,
        objects,
        local: false,
    })
}

/// The objects at `keys`, in one batched request (`None` for each missing one), checked to be
/// one per key.
fn fetch_all(
    objects: &dyn ObjectSource,
    root: &Path,
    keys: &[&str],
) -> Result<Vec<Option<Buffer>>> {
    let got = objects.get_all(keys).map_err(|e| e.with_file(root))?;
    if got.len() != keys.len() {
        return Err(Error::new(
            ErrorClass::Io,
            format!(
                "{} objects were asked for and {} came back",
                keys.len(),
                got.len()
            ),
        )
        .with_file(root));
    }
    Ok(got)
}

/// The final component of the resolved path, or `values`.
fn directory_name(path: &Path) -> String {
    let resolved = fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    resolved
        .file_name()
        .and_then(|n| n.to_str())
        .filter(|n| !n.is_empty())
        .unwrap_or("values")
        .to_owned()
}

/// The text of the JSON file at `path`, from its bytes (`None`: it is missing).
fn json_text(bytes: Option<&Buffer>, path: &Path) -> Result<String> {
    let bytes = bytes
        .ok_or_else(|| {
            Error::new(ErrorClass::Io, "missing file")
                .with_file(path)
                .with_source(not_found())
        })?
        .as_slice();
    String::from_utf8(bytes.to_vec()).map_err(|e| {
        Error::new(ErrorClass::InvalidUtf8, "the JSON file is not ASCII/UTF-8")
            .with_file(path)
            .at_offset(e.utf8_error().valid_up_to() as u64)
    })
}

fn parse_json(bytes: Option<&Buffer>, path: &Path) -> Result<(String, Value)> {
    let text = json_text(bytes, path)?;
    let value = parse_lenient(&text).map_err(|e| e.with_file(path))?;
    Ok((text.trim_end().to_owned(), value))
}

/// `__attrs__` at `path` from its bytes: absent is `{}`.
fn parse_attrs(bytes: Option<&Buffer>, path: &Path) -> Result<(Option<String>, Value)> {
    if bytes.is_none() {
        return Ok((None, Value::Object(Default::default())));
    }
    let (text, value) = parse_json(bytes, path)?;
    if !value.is_object() {
        return Err(
            Error::new(ErrorClass::BadMeta, "__attrs__ must hold a JSON object").with_file(path),
        );
    }
    Ok((Some(text), value))
}

/// The column names `__rootdirs__` lists, each checked to be a plain path component, once.
fn column_names(rootdirs: &Buffer, path: &Path) -> Result<Vec<String>> {
    let (_, value) = parse_json(Some(rootdirs), path)?;
    let names = value
        .get("names")
        .and_then(Value::as_array)
        .ok_or_else(|| {
            Error::new(
                ErrorClass::MissingField,
                "__rootdirs__ must be an object with a \"names\" array",
            )
            .with_file(path)
            .with_field("names")
        })?;
    if names.is_empty() {
        return Err(
            Error::new(ErrorClass::BadMeta, "a ctable needs at least one column")
                .with_file(path)
                .with_field("names"),
        );
    }
    let mut seen = std::collections::HashSet::new();
    let mut out = Vec::with_capacity(names.len());
    for (i, name) in names.iter().enumerate() {
        let name = name.as_str().ok_or_else(|| {
            Error::new(ErrorClass::BadMeta, format!("names[{i}] is not a string"))
                .with_file(path)
                .with_field("names")
        })?;
        if !is_plain_component(name) {
            return Err(Error::new(
                ErrorClass::BadMeta,
                format!("refusing column name {name:?}: it is not a single plain path component (path traversal)"),
            )
            .with_file(path)
            .with_field("names"));
        }
        if !seen.insert(name) {
            return Err(Error::new(
                ErrorClass::BadMeta,
                format!("column {name:?} is listed twice"),
            )
            .with_file(path)
            .with_field("names"));
        }
        out.push(name.to_owned());
    }
    Ok(out)
}

/// The per-column metadata objects of a ctable, in the order [`open_ctable`] asks for them.
const COLUMN_KEYS: [&str; 3] = ["meta/sizes", "meta/storage", "__attrs__"];

fn open_ctable(
    objects: Arc<dyn ObjectSource>,
    root: &Path,
    rootdirs: Buffer,
    attrs: Option<Buffer>,
    wanted: Option<&[String]>,
) -> Result<DatasetInfo> {
    let names = column_names(&rootdirs, &root.join("__rootdirs__"))?;
    // A name the ctable lacks is the reader's error, which lists every column.
    let wanted = wanted.filter(|wanted| wanted.iter().all(|name| names.contains(name)));
    // The first column is always read: its length is the ctable's.
    let selected: Vec<(usize, &String)> = names
        .iter()
        .enumerate()
        .filter(|&(i, name)| i == 0 || wanted.is_none_or(|wanted| wanted.contains(name)))
        .collect();
    let keys: Vec<String> = selected
        .iter()
        .flat_map(|(_, name)| COLUMN_KEYS.iter().map(move |key| format!("{name}/{key}")))
        .collect();
    let keys: Vec<&str> = keys.iter().map(String::as_str).collect();
    let mut found = fetch_all(objects.as_ref(), root, &keys)?.into_iter();
    let mut columns = Vec::with_capacity(selected.len());
    for (i, name) in selected {
        let mut next = || found.next().flatten();
        let meta = CarrayMeta {
            sizes: next(),
            storage: next(),
            attrs: next(),
        };
        let dir = root.join(name);
        if meta.sizes.is_none() && meta.storage.is_none() {
            return Err(Error::new(
                ErrorClass::Io,
                format!(
                    "column {name:?} is listed in __rootdirs__ but its directory is missing \
                     (it has no meta/sizes or meta/storage)"
                ),
            )
            .with_file(&dir)
            .with_column(i, Some(name))
            .with_source(not_found()));
        }
        let prefix = format!("{name}/");
        columns.push(
            open_carray(&objects, dir, prefix, name.clone(), meta)
                .map_err(|e| e.with_column(i, Some(name)))?,
        );
    }
    let nrows = columns[0].rows;
    if let Some(short) = columns.iter().find(|c| c.rows < nrows) {
        let lengths: Vec<String> = columns
            .iter()
            .map(|c| format!("{} {}", c.name, c.rows))
            .collect();
        return Err(Error::new(
            ErrorClass::RowCountMismatch,
            format!(
                "column {:?} has fewer rows than the first column ({} < {nrows}); lengths: {}",
                short.name,
                short.rows,
                lengths.join(", ")
            ),
        )
        .with_file(root));
    }
    let (attrs_text, _) = parse_attrs(attrs.as_ref(), &root.join("__attrs__"))?;
    Ok(DatasetInfo {
        path: root.to_path_buf(),
        kind: Kind::Ctable,
        attrs_text,
        columns,
        nrows,
        objects,
        local: false,
    })
}

/// Whether `name` is one normal path component (no traversal, separators or NUL).
pub fn is_plain_component(name: &str) -> bool {
    if name.is_empty() || name.contains(['/', '\\', '\0']) {
        return false;
    }
    let mut comps = Path::new(name).components();
    matches!(comps.next(), Some(Component::Normal(_))) && comps.next().is_none()
}

fn get_u64(value: &Value, key: &str, file: &Path) -> Result<u64> {
    value.get(key).and_then(Value::as_u64).ok_or_else(|| {
        Error::new(
            ErrorClass::MissingField,
            format!("{key:?} must be a non-negative integer"),
        )
        .with_file(file)
        .with_field(key)
    })
}

/// The metadata objects of one carray (`None`: missing).
struct CarrayMeta {
    sizes: Option<Buffer>,
    storage: Option<Buffer>,
    attrs: Option<Buffer>,
}

fn open_carray(
    objects: &Arc<dyn ObjectSource>,
    dir: PathBuf,
    prefix: String,
    name: String,
    meta: CarrayMeta,
) -> Result<CarrayInfo> {
    let sizes_path = dir.join("meta").join("sizes");
    let storage_path = dir.join("meta").join("storage");
    let (_, sizes) = parse_json(meta.sizes.as_ref(), &sizes_path)?;
    let (_, storage) = parse_json(meta.storage.as_ref(), &storage_path)?;
    let shape = sizes
        .get("shape")
        .and_then(Value::as_array)
        .filter(|a| !a.is_empty())
        .ok_or_else(|| {
            Error::new(
                ErrorClass::MissingField,
                "\"shape\" must be a non-empty array of integers",
            )
            .with_file(&sizes_path)
            .with_field("shape")
        })?;
    let shape: Vec<u64> = shape
        .iter()
        .map(Value::as_u64)
        .collect::<Option<_>>()
        .ok_or_else(|| {
            Error::new(
                ErrorClass::BadMeta,
                "\"shape\" must hold non-negative integers",
            )
            .with_file(&sizes_path)
            .with_field("shape")
        })?;
    let dtype_text = storage
        .get("dtype")
        .and_then(Value::as_str)
        .ok_or_else(|| {
            Error::new(ErrorClass::MissingField, "\"dtype\" must be a string")
                .with_file(&storage_path)
                .with_field("dtype")
        })?
        .to_owned();
    let chunklen = get_u64(&storage, "chunklen", &storage_path)?;
    if chunklen == 0 {
        return Err(
            Error::new(ErrorClass::BadMeta, "chunklen must be at least 1")
                .with_file(&storage_path)
                .with_field("chunklen"),
        );
    }
    let dtype = DType::parse(&dtype_text).map_err(|e| e.with_file(&storage_path))?;
    let row_shape: Vec<usize> = shape[1..]
        .iter()
        .map(|&d| usize::try_from(d).ok())
        .collect::<Option<_>>()
        .ok_or_else(|| Error::new(ErrorClass::BadMeta, "shape too large").with_file(&sizes_path))?;
    if !row_shape.is_empty() && !dtype.tensor_element() {
        return Err(Error::new(
            ErrorClass::UnsupportedType,
            format!(
                "an N-D carray of dtype {dtype_text:?} is not supported (only numbers and bool)"
            ),
        )
        .with_file(&storage_path)
        .with_field("dtype"));
    }
    let too_big = || {
        Error::new(
            ErrorClass::BadMeta,
            format!("shape {shape:?} with dtype {dtype_text:?} and chunklen {chunklen} exceeds Blosc's chunk limit"),
        )
        .with_file(&sizes_path)
        .with_field("shape")
    };
    let atomsize = row_shape
        .iter()
        .try_fold(dtype.itemsize().ok_or_else(too_big)?, |a, &d| {
            a.checked_mul(d)
        })
        .filter(|&a| a > 0)
        .ok_or_else(|| {
            Error::new(
                ErrorClass::BadMeta,
                format!("shape {shape:?} gives rows of 0 bytes or too many"),
            )
            .with_file(&sizes_path)
            .with_field("shape")
        })?;
    let chunksize = (chunklen as usize)
        .checked_mul(atomsize)
        .filter(|&c| c <= blosc::MAX_NBYTES && chunklen <= usize::MAX as u64)
        .ok_or_else(too_big)?;
    let _ = chunksize;
    shape[0].checked_mul(atomsize as u64).ok_or_else(too_big)?;
    let cparams = parse_cparams(&storage);
    let (attrs_text, attrs) = parse_attrs(meta.attrs.as_ref(), &dir.join("__attrs__"))?;
    Ok(CarrayInfo {
        dir,
        name,
        dtype,
        dtype_text,
        rows: shape[0],
        row_shape,
        chunklen,
        atomsize,
        cparams,
        expectedlen: storage.get("expectedlen").and_then(Value::as_u64),
        attrs_text,
        attrs,
        objects: Arc::clone(objects),
        prefix,
    })
}

fn parse_cparams(storage: &Value) -> Cparams {
    let cp = storage.get("cparams");
    let clevel = cp
        .and_then(|c| c.get("clevel"))
        .and_then(Value::as_u64)
        .map_or(5, |c| c.min(9) as u8);
    let shuffle = match cp.and_then(|c| c.get("shuffle")) {
        Some(Value::Bool(true)) => Shuffle::Byte,
        Some(Value::Bool(false)) => Shuffle::None,
        Some(v) => v
            .as_i64()
            .and_then(Shuffle::from_code)
            .unwrap_or(Shuffle::Byte),
        None => Shuffle::Byte,
    };
    let cname = cp
        .and_then(|c| c.get("cname"))
        .and_then(Value::as_str)
        .unwrap_or("blosclz")
        .to_owned();
    let quantize = cp
        .and_then(|c| c.get("quantize"))
        .and_then(Value::as_i64)
        .unwrap_or(0);
    Cparams {
        clevel,
        shuffle,
        cname,
        quantize,
    }
}
