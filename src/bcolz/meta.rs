//! Opening a bcolz directory: the JSON files, the dtype, the sizes, every check of spec B2
//! steps 1–8 (chunk files are checked when they are read, step 9).

use std::fs;
use std::io::Read;
use std::path::{Component, Path, PathBuf};

use arrow_buffer::Buffer;
use serde_json::Value;

use super::blosc::{self, ChunkHeader, Codec, Shuffle};
use super::json::parse_lenient;
use super::mapping::DType;
use crate::error::{Error, ErrorClass, Result};

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
    /// The carray's directory.
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

    /// The file of chunk `k`: `data/__k.blp`.
    pub fn chunk_path(&self, k: u64) -> PathBuf {
        self.dir.join("data").join(format!("__{k}.blp"))
    }

    /// The time zone of a datetime column, written by arrowsmith into `__attrs__`.
    pub fn timezone(&self) -> Option<&str> {
        self.attrs.get("timezone").and_then(Value::as_str)
    }

    /// Reads chunk `k` and returns its first `need_rows` rows (checked against the file, spec
    /// B2 step 9). `own_rows` is the column's committed length.
    /// The bytes are decompressed straight into an Arrow (64-byte aligned) buffer.
    pub fn read_chunk(&self, k: u64, need_rows: usize) -> Result<Buffer> {
        let path = self.chunk_path(k);
        let (header, bytes) = self.read_chunk_file(k, &path)?;
        let nbytes = header.nbytes as usize;
        let mut out =
            blosc::decompress_to_buffer(&bytes[16..], nbytes).map_err(|e| blosc_error(e, &path))?;
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

    /// The Blosc header of chunk `k` (checked as a read checks it, without decompressing).
    pub fn chunk_header(&self, k: u64) -> Result<ChunkHeader> {
        let path = self.chunk_path(k);
        Ok(self.read_chunk_file(k, &path)?.0)
    }

    /// Reads and checks a chunk file's `blpk` header and Blosc header; returns the header and
    /// the whole file (`16 + cbytes` bytes, trailing bytes dropped).
    pub fn read_chunk_file(&self, k: u64, path: &Path) -> Result<(ChunkHeader, Vec<u8>)> {
        let rows_here = self
            .chunklen
            .min(self.rows.saturating_sub(k * self.chunklen));
        let first = k * self.chunklen;
        let mut file = fs::File::open(path).map_err(|e| {
            let msg = if e.kind() == std::io::ErrorKind::NotFound {
                format!(
                    "missing chunk file: it must hold rows {first}..{}",
                    first + rows_here
                )
            } else {
                e.to_string()
            };
            Error::new(ErrorClass::Io, msg)
                .with_file(path)
                .with_source(e)
        })?;
        let size = file
            .metadata()
            .map_err(|e| Error::from(e).with_file(path))?
            .len();
        if size < 32 {
            return Err(Error::new(
                ErrorClass::TooSmall,
                format!(
                    "a chunk file is at least 32 bytes (blpk + Blosc headers), this one has {size}"
                ),
            )
            .with_file(path));
        }
        let mut head = [0u8; 32];
        file.read_exact(&mut head)
            .map_err(|e| Error::from(e).with_file(path))?;
        check_blpk(&head).map_err(|e| e.with_file(path))?;
        let header = blosc::parse_header(&head[16..]).map_err(|e| blosc_error(e, path))?;
        self.check_chunk_sizes(k, &header, size)
            .map_err(|e| e.with_file(path))?;
        let len = 16 + header.cbytes as usize;
        let mut bytes = Vec::with_capacity(len);
        bytes.extend_from_slice(&head);
        // Read into the spare capacity (no zeroing); the size was checked against the file.
        (&mut file)
            .take((len - 32) as u64)
            .read_to_end(&mut bytes)
            .map_err(|e| Error::from(e).with_file(path))?;
        if bytes.len() != len {
            return Err(Error::new(
                ErrorClass::TooSmall,
                format!(
                    "the chunk file ended after {} of its {len} bytes",
                    bytes.len()
                ),
            )
            .with_file(path));
        }
        Ok((header, bytes))
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
    /// The dataset's directory.
    pub path: PathBuf,
    /// carray or ctable.
    pub kind: Kind,
    /// Root `__attrs__` text, trimmed (`None` when absent).
    pub attrs_text: Option<String>,
    /// Its columns, in `__rootdirs__` order (one for a carray).
    pub columns: Vec<CarrayInfo>,
    /// Rows of the dataset: the first column's `shape[0]` for a ctable.
    pub nrows: u64,
}

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

/// Opens and checks a bcolz directory. `only` limits the columns that are opened (by index
/// into `__rootdirs__`); all names are still read.
pub fn open(path: &Path, carray_name: Option<&str>) -> Result<DatasetInfo> {
    let md = fs::metadata(path).map_err(|e| Error::from(e).with_file(path))?;
    if !md.is_dir() {
        return Err(Error::new(
            ErrorClass::BadSignature,
            "not a bcolz directory: a carray or ctable is a directory",
        )
        .with_file(path));
    }
    match detect_kind(path) {
        Some(Kind::Ctable) => open_ctable(path),
        Some(Kind::Carray) => {
            let name = match carray_name {
                Some(n) => n.to_owned(),
                None => directory_name(path),
            };
            let carray = open_carray(path, name)?;
            let nrows = carray.rows;
            Ok(DatasetInfo {
                path: path.to_path_buf(),
                kind: Kind::Carray,
                attrs_text: carray.attrs_text.clone(),
                columns: vec![carray],
                nrows,
            })
        }
        None => Err(Error::new(
            ErrorClass::BadSignature,
            "not a bcolz directory: it has neither __rootdirs__ (ctable) nor meta/ (carray)",
        )
        .with_file(path)),
    }
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

fn read_text(path: &Path) -> Result<String> {
    let bytes = fs::read(path).map_err(|e| {
        let msg = if e.kind() == std::io::ErrorKind::NotFound {
            "missing file".to_owned()
        } else {
            e.to_string()
        };
        Error::new(ErrorClass::Io, msg)
            .with_file(path)
            .with_source(e)
    })?;
    String::from_utf8(bytes).map_err(|e| {
        Error::new(ErrorClass::InvalidUtf8, "the JSON file is not ASCII/UTF-8")
            .with_file(path)
            .at_offset(e.utf8_error().valid_up_to() as u64)
    })
}

fn read_json(path: &Path) -> Result<(String, Value)> {
    let text = read_text(path)?;
    let value = parse_lenient(&text).map_err(|e| e.with_file(path))?;
    Ok((text.trim_end().to_owned(), value))
}

fn read_attrs(dir: &Path) -> Result<(Option<String>, Value)> {
    let path = dir.join("__attrs__");
    if !path.exists() {
        return Ok((None, Value::Object(Default::default())));
    }
    let (text, value) = read_json(&path)?;
    if !value.is_object() {
        return Err(
            Error::new(ErrorClass::BadMeta, "__attrs__ must hold a JSON object").with_file(&path),
        );
    }
    Ok((Some(text), value))
}

fn open_ctable(path: &Path) -> Result<DatasetInfo> {
    let rootdirs = path.join("__rootdirs__");
    let (_, value) = read_json(&rootdirs)?;
    let names = value
        .get("names")
        .and_then(Value::as_array)
        .ok_or_else(|| {
            Error::new(
                ErrorClass::MissingField,
                "__rootdirs__ must be an object with a \"names\" array",
            )
            .with_file(&rootdirs)
            .with_field("names")
        })?;
    if names.is_empty() {
        return Err(
            Error::new(ErrorClass::BadMeta, "a ctable needs at least one column")
                .with_file(&rootdirs)
                .with_field("names"),
        );
    }
    let mut seen = std::collections::HashSet::new();
    let mut columns = Vec::with_capacity(names.len());
    for (i, name) in names.iter().enumerate() {
        let name = name.as_str().ok_or_else(|| {
            Error::new(ErrorClass::BadMeta, format!("names[{i}] is not a string"))
                .with_file(&rootdirs)
                .with_field("names")
        })?;
        if !is_plain_component(name) {
            return Err(Error::new(
                ErrorClass::BadMeta,
                format!("refusing column name {name:?}: it is not a single plain path component (path traversal)"),
            )
            .with_file(&rootdirs)
            .with_field("names"));
        }
        if !seen.insert(name) {
            return Err(Error::new(
                ErrorClass::BadMeta,
                format!("column {name:?} is listed twice"),
            )
            .with_file(&rootdirs)
            .with_field("names"));
        }
        let dir = path.join(name);
        if !dir.is_dir() {
            return Err(Error::new(
                ErrorClass::Io,
                format!("column {name:?} is listed in __rootdirs__ but its directory is missing"),
            )
            .with_file(&dir)
            .with_column(i, Some(name)));
        }
        columns.push(open_carray(&dir, name.to_owned()).map_err(|e| e.with_column(i, Some(name)))?);
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
        .with_file(path));
    }
    let (attrs_text, _) = read_attrs(path)?;
    Ok(DatasetInfo {
        path: path.to_path_buf(),
        kind: Kind::Ctable,
        attrs_text,
        columns,
        nrows,
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

fn open_carray(dir: &Path, name: String) -> Result<CarrayInfo> {
    let sizes_path = dir.join("meta").join("sizes");
    let storage_path = dir.join("meta").join("storage");
    let (_, sizes) = read_json(&sizes_path)?;
    let (_, storage) = read_json(&storage_path)?;
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
    let (attrs_text, attrs) = read_attrs(dir)?;
    Ok(CarrayInfo {
        dir: dir.to_path_buf(),
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
