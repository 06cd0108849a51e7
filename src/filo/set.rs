//! The Filo set container (specs/filo.md section 14): `NAME.filo/schema.json` plus one Filo
//! vector file per column per chunk. This module holds the layout (the schema file, where each
//! column chunk lives, how one is read); [`Reader`](super::Reader) and
//! [`Writer`](super::Writer) read and write whole sets.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::{new_null_array, ArrayRef};
use arrow_buffer::Buffer;
use arrow_schema::{DataType, Schema, SchemaRef};
use serde::{Deserialize, Serialize};

use super::decode::{decode_rows_buffer, MAX_EMPTY_LEN};
use super::mapping::{set_field, FiloType};
use crate::atomic::DatasetKind;
use crate::error::{Error, ErrorClass, Result};
use crate::source::{LocalDir, ObjectSource};

/// The `format` value of a Filo set's `schema.json`.
pub const SET_FORMAT: &str = "arrowsmith-filo-set";
/// What a Filo set is to [`AtomicDir`]: the only kind of directory the writer replaces (with
/// the overwrite option).
pub(crate) const DATASET: DatasetKind = DatasetKind {
    what: "filo set",
    marker: "a schema.json whose format is \"arrowsmith-filo-set\"",
    is_dataset: is_set,
};

/// Whether `dir/schema.json` says it is a Filo set's; its other fields are not checked, so a
/// damaged set is still recognised (and can be replaced).
fn is_set(dir: &Path) -> bool {
    #[derive(Deserialize)]
    struct Marker {
        format: serde_json::Value,
    }
    let path = dir.join("schema.json");
    // A set's schema is small; a large file of that name is someone else's.
    const MAX_SCHEMA_BYTES: u64 = 64 << 20;
    if !std::fs::metadata(&path).is_ok_and(|m| m.is_file() && m.len() <= MAX_SCHEMA_BYTES) {
        return false;
    }
    std::fs::read(&path)
        .ok()
        .and_then(|text| serde_json::from_slice::<Marker>(&text).ok())
        .is_some_and(|m| m.format == SET_FORMAT)
}

/// The default rows per chunk.
pub const DEFAULT_CHUNK_SIZE: usize = 65_536;

#[derive(Debug, Clone, Serialize, Deserialize)]
struct SchemaJson {
    format: serde_json::Value,
    version: serde_json::Value,
    columns: Vec<ColumnJson>,
    chunks: Vec<ChunkJson>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct ColumnJson {
    name: String,
    filo_type: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct ChunkJson {
    rows: u64,
}

/// A column of a Filo set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SetColumn {
    /// The column's name.
    pub name: String,
    /// The Filo type its vectors hold.
    pub filo_type: FiloType,
}

/// An opened Filo set: where it is and what its `schema.json` says, validated. Open it once
/// and share it (`Arc<SetInfo>`) between [`fragments`](super::fragments) and the readers
/// [`ReaderBuilder::build_from_file`](super::ReaderBuilder::build_from_file) builds.
#[derive(Debug, Clone)]
pub struct SetInfo {
    dir: PathBuf,
    /// The set's files, as objects under its root: what the column chunks are read from.
    objects: Arc<dyn ObjectSource>,
    /// Whether it was opened from a local path (its files' sizes are then a stat each).
    local: bool,
    /// The columns, in order.
    pub columns: Vec<SetColumn>,
    /// Rows of each chunk, in row order.
    pub chunks: Vec<usize>,
}

/// Two opened sets are equal when they are at the same place and say the same.
impl PartialEq for SetInfo {
    fn eq(&self, other: &SetInfo) -> bool {
        self.dir == other.dir && self.columns == other.columns && self.chunks == other.chunks
    }
}

impl Eq for SetInfo {}

/// The key of a set's schema file under its root.
const SCHEMA_KEY: &str = "schema.json";

impl SetInfo {
    /// Reads and checks `DIR/schema.json`; the set's files are then read as the objects of a
    /// [`LocalDir`].
    pub fn open(dir: impl AsRef<Path>) -> Result<SetInfo> {
        let dir = dir.as_ref();
        let mut set = SetInfo::open_at(Arc::new(LocalDir::new(dir)), dir)?;
        set.local = true;
        Ok(set)
    }

    /// Reads and checks the `schema.json` of the set whose files are the objects under
    /// `objects` (an object-store prefix, or a [`LocalDir`]). A reader of the opened set
    /// fetches only the column chunks of the columns and chunks it reads, by the keys the set's
    /// layout fixes (no listing).
    pub fn open_source(objects: Arc<dyn ObjectSource>) -> Result<SetInfo> {
        let dir = PathBuf::from(objects.location().trim_end_matches('/'));
        SetInfo::open_at(objects, &dir)
    }

    fn open_at(objects: Arc<dyn ObjectSource>, dir: &Path) -> Result<SetInfo> {
        let path = dir.join(SCHEMA_KEY);
        let text = objects
            .get(SCHEMA_KEY)
            .map_err(|e| e.with_file(&path))?
            .ok_or_else(|| {
                Error::new(
                    ErrorClass::Io,
                    "missing file: a Filo set has a schema.json at its root",
                )
                .with_file(&path)
                .with_source(std::io::Error::new(
                    std::io::ErrorKind::NotFound,
                    "no such file or object",
                ))
            })?;
        let (columns, chunks) = parse_schema(&text, &path)?;
        Ok(SetInfo {
            dir: dir.to_path_buf(),
            objects,
            local: false,
            columns,
            chunks,
        })
    }

    /// The set's directory, as it was given to [`SetInfo::open`] (for a set opened by
    /// [`SetInfo::open_source`], its objects' location): where it is, for messages.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The objects under the set's root that its column chunks are read from.
    pub fn objects(&self) -> &Arc<dyn ObjectSource> {
        &self.objects
    }

    /// Whether it was opened from a local path rather than from an [`ObjectSource`].
    pub(crate) fn is_local_path(&self) -> bool {
        self.local
    }

    /// Rows over all chunks.
    pub fn rows(&self) -> u64 {
        self.chunks.iter().map(|&r| r as u64).sum()
    }

    /// The Arrow schema: names in order, types from the mapping, all nullable.
    pub fn schema(&self) -> SchemaRef {
        Arc::new(Schema::new(
            self.columns
                .iter()
                .map(|c| set_field(&c.name, c.filo_type))
                .collect::<Vec<_>>(),
        ))
    }
}

/// The columns and chunk sizes a set's `schema.json` (at `path`, for messages) says, checked.
fn parse_schema(text: &[u8], path: &Path) -> Result<(Vec<SetColumn>, Vec<usize>)> {
    let bad = |field: &str, message: String| {
        Error::new(ErrorClass::BadMeta, message)
            .with_file(path)
            .with_field(field.to_string())
    };
    let raw: SchemaJson = serde_json::from_slice(text)
        .map_err(|e| bad("schema.json", format!("not a Filo set schema: {e}")))?;
    if raw.format != SET_FORMAT {
        return Err(bad(
            "format",
            format!("expected \"{SET_FORMAT}\", found {}", raw.format),
        ));
    }
    if raw.version != 1 {
        return Err(bad("version", format!("expected 1, found {}", raw.version)));
    }
    if raw.columns.is_empty() {
        return Err(bad("columns", "a Filo set has at least one column".into()));
    }
    let mut seen = HashSet::new();
    let mut columns = Vec::with_capacity(raw.columns.len());
    for (i, c) in raw.columns.iter().enumerate() {
        let field = format!("columns[{i}]");
        if c.name.is_empty() {
            return Err(bad(&field, "the column name is empty".into()));
        }
        if !seen.insert(c.name.as_str()) {
            return Err(bad(
                &field,
                format!("column name {:?} appears twice", c.name),
            ));
        }
        let filo_type = FiloType::SET_TYPES
            .into_iter()
            .find(|t| t.name() == c.filo_type)
            .ok_or_else(|| {
                bad(
                    &field,
                    format!(
                        "unknown filo_type {:?}: expected Int, Long, Double, Float, Boolean, \
                         String, Timestamp or DateTime",
                        c.filo_type
                    ),
                )
            })?;
        columns.push(SetColumn {
            name: c.name.clone(),
            filo_type,
        });
    }
    let mut chunks = Vec::with_capacity(raw.chunks.len());
    for (i, c) in raw.chunks.iter().enumerate() {
        if c.rows == 0 || c.rows > MAX_EMPTY_LEN as u64 {
            return Err(bad(
                &format!("chunks[{i}].rows"),
                format!("{} is outside 1 … {MAX_EMPTY_LEN}", c.rows),
            ));
        }
        chunks.push(c.rows as usize);
    }
    Ok((columns, chunks))
}

/// The directory of chunk `index`.
pub fn chunk_dir(set: &Path, index: usize) -> PathBuf {
    set.join(format!("chunk-{index:05}"))
}

/// The file of column `column` in chunk `index`.
pub fn column_file(set: &Path, index: usize, column: usize) -> PathBuf {
    chunk_dir(set, index).join(format!("{column}.bin"))
}

/// The key of column `column`'s file in chunk `index` under a set's root.
pub fn column_key(index: usize, column: usize) -> String {
    format!("chunk-{index:05}/{column}.bin")
}

/// Reads one column chunk; a missing file is an all-NA chunk.
pub fn read_column_chunk(
    set: &Path,
    chunk: usize,
    column: usize,
    column_info: &SetColumn,
    rows: usize,
) -> Result<ArrayRef> {
    let data_type = column_info.filo_type.arrow_type();
    read_column_chunk_as(set, chunk, column, column_info, rows, &data_type)
}

/// [`read_column_chunk`] as an Arrow type of the column's choosing (a String column as
/// `Dictionary(Int32, Utf8)`).
pub fn read_column_chunk_as(
    set: &Path,
    chunk: usize,
    column: usize,
    column_info: &SetColumn,
    rows: usize,
    data_type: &DataType,
) -> Result<ArrayRef> {
    let path = column_file(set, chunk, column);
    // Mapped (when large enough to pay): plain numeric vectors are then sliced out of the
    // mapping without a copy (see `mapped::map_or_read` about files truncated meanwhile).
    let bytes = match crate::mapped::map_or_read(&path) {
        Ok((bytes, _)) => Some(bytes),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(Error::from(e).with_file(&path)),
    };
    decode_column_chunk(bytes, &path, column, column_info, rows, data_type)
}

/// Decodes one column chunk from its file's bytes (`None`: missing, an all-NA chunk) as
/// `data_type`; `path` names the file in messages.
pub(super) fn decode_column_chunk(
    bytes: Option<Buffer>,
    path: &Path,
    column: usize,
    column_info: &SetColumn,
    rows: usize,
    data_type: &DataType,
) -> Result<ArrayRef> {
    let Some(bytes) = bytes else {
        return Ok(new_null_array(data_type, rows));
    };
    decode_rows_buffer(&bytes, data_type, rows).map_err(|e| {
        e.with_file(path)
            .with_column(column, Some(&column_info.name))
    })
}

/// The text of a set's `schema.json` for `columns` and `chunks` (rows of each).
pub(super) fn schema_json<'a>(
    columns: impl IntoIterator<Item = &'a SetColumn>,
    chunks: &[usize],
) -> Result<Vec<u8>> {
    let json = SchemaJson {
        format: SET_FORMAT.into(),
        version: 1.into(),
        columns: columns
            .into_iter()
            .map(|c| ColumnJson {
                name: c.name.clone(),
                filo_type: c.filo_type.name().to_string(),
            })
            .collect(),
        chunks: chunks
            .iter()
            .map(|&r| ChunkJson { rows: r as u64 })
            .collect(),
    };
    let mut text =
        serde_json::to_vec_pretty(&json).map_err(|e| Error::new(ErrorClass::Io, e.to_string()))?;
    text.push(b'\n');
    Ok(text)
}
