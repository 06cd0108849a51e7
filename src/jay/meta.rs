//! The envelope and the FlatBuffers meta record of a Jay file: parsed, verified and checked
//! against the file before any column data is touched (spec B1, steps 1–3.6). What needs a scan
//! of the data (offsets that decrease, UTF-8, Bool8 bytes) is checked while decoding.

use std::cell::RefCell;

use serde::Serialize;

use super::gen::jay as fb;
use super::mapping::{code, JayType, Storage};
use crate::error::{Error, ErrorClass, Result};

/// Bytes of the header (`JAY1 00 00 00 00`); buffer offsets count from here.
pub(crate) const HEADER_LEN: u64 = 8;
/// Bytes after the meta: `meta_size` and the trailer.
pub(crate) const FOOTER_LEN: u64 = 16;
pub(crate) const HEADER: &[u8; 8] = b"JAY1\0\0\0\0";
pub(crate) const TRAILER: &[u8; 8] = b"\0\0\0\0\x31JAY";

/// One buffer of a column: a byte range of the data section.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct BufferRange {
    /// Offset from the start of the data section (file byte 8), as stored.
    pub offset: u64,
    /// Exact length in bytes, without padding.
    pub length: u64,
}

impl BufferRange {
    /// The buffer's first byte, counted from the start of the file.
    pub fn file_offset(&self) -> u64 {
        HEADER_LEN + self.offset
    }
    pub(crate) fn start(&self) -> usize {
        self.file_offset() as usize
    }
}

/// The two ways a Jay column can be described (spec A1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Layout {
    /// `stype` + inline `data`/`strdata` buffers: datatable 0.7 – 1.0, and 1.1 for void columns.
    Old,
    /// `type` + `nrows` + `buffers` (+ `children`): datatable 1.1.
    New,
}

/// The minimum and maximum datatable stored for a column (raw, so an all-NA column shows the
/// sentinel or NaN).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Stats {
    /// Of an integer, boolean or temporal column.
    Int {
        /// The smallest value.
        min: i64,
        /// The largest value.
        max: i64,
    },
    /// Of a float column.
    Float {
        /// The smallest value.
        min: f64,
        /// The largest value.
        max: f64,
    },
}

/// A verified column description.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ColumnInfo {
    /// Absent only in array children.
    pub name: Option<String>,
    /// The column's storage type.
    #[serde(serialize_with = "serialize_display")]
    pub jay_type: JayType,
    /// Which of datatable's buffer layouts the column uses.
    pub layout: Layout,
    /// Rows of the column.
    pub nrows: u64,
    /// As stored; informational (nulls come from the data).
    pub nullcount: u64,
    /// The stored minimum and maximum, when datatable computed them.
    pub stats: Option<Stats>,
    /// A non-empty Arrow-style validity bitmap (new layout only).
    pub validity: Option<BufferRange>,
    /// Values, or the offsets of strings and arrays.
    pub data: Option<BufferRange>,
    /// String bytes.
    pub strdata: Option<BufferRange>,
    /// Bytes per string or array offset (4 or 8); 0 for other types.
    pub offset_width: u8,
    /// Bool8 stored one bit per row, as datatable copies it from Arrow.
    pub bool_packed: bool,
    /// The element column of an array.
    pub child: Option<Box<ColumnInfo>>,
}

fn serialize_display<S: serde::Serializer>(t: &JayType, s: S) -> Result<S::Ok, S::Error> {
    s.collect_str(t)
}

/// A verified Jay file description: everything but the column data.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FrameInfo {
    /// Rows of the frame.
    pub nrows: u64,
    /// `Frame.ncols` as stored (ignored: the `columns` vector counts).
    pub ncols_stored: u64,
    /// Number of key columns (the first `nkeys` columns, sorted and unique).
    pub nkeys: usize,
    /// Every column, in order.
    pub columns: Vec<ColumnInfo>,
    /// Bytes of the file.
    pub file_size: u64,
    /// Length of the data section.
    pub data_size: u64,
    /// Length of the FlatBuffers metadata.
    pub meta_size: u64,
    /// The file ends in the 2018 trailer `00 00 00 00 "JAY1"`.
    pub legacy_trailer: bool,
}

fn err(class: ErrorClass, message: impl Into<String>) -> Error {
    Error::new(class, message)
}

fn read_u64(bytes: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(bytes[at..at + 8].try_into().expect("8 bytes"))
}

/// A column that a salvaging parse left out: its position in the file, its name when it has
/// a readable one, and what is wrong with it.
pub(crate) type DroppedColumn = (usize, Option<String>, Error);

/// Parses and verifies the whole description of a Jay file held in `bytes`. When `salvage`
/// is on, a column whose description or buffers are damaged
/// is left out (and returned) instead of failing the file. What concerns the whole file (the
/// envelope, the meta record, the row count) still fails it.
pub(crate) fn parse_with(bytes: &[u8], salvage: bool) -> Result<(FrameInfo, Vec<DroppedColumn>)> {
    let envelope = Envelope::check(bytes)?;
    let meta = &bytes[envelope.meta_start as usize..envelope.meta_end() as usize];
    let parsed = parse_meta(&envelope, meta, &bytes, salvage)?;
    // Every byte is at hand: nothing was left to check later.
    debug_assert!(parsed.unchecked_ends.is_empty() && parsed.missing.is_empty());
    Ok((parsed.info, parsed.dropped))
}

/// Bytes of a Jay file that a parse may look into beyond the meta: the whole file, or the
/// parts of a remote file fetched so far. `None` when the bytes at `at` are not at hand.
pub(crate) trait FileBytes {
    fn bytes_at(&self, at: u64, len: u64) -> Option<&[u8]>;
}

impl FileBytes for &[u8] {
    fn bytes_at(&self, at: u64, len: u64) -> Option<&[u8]> {
        let start = usize::try_from(at).ok()?;
        let end = start.checked_add(usize::try_from(len).ok()?)?;
        self.get(start..end)
    }
}

/// The description of a Jay file, as [`parse_meta`] verified it.
pub(crate) struct Parsed {
    pub info: FrameInfo,
    /// The columns a salvaging parse left out.
    pub dropped: Vec<DroppedColumn>,
    /// The last offsets of string and array columns that lay outside the bytes at hand:
    /// checked when the column is read.
    pub unchecked_ends: Vec<UncheckedEnd>,
    /// The last offsets of array columns with a void child in the old layout that lay outside
    /// the bytes at hand. Such a child's row count is its parent's last offset, so these
    /// cannot wait: the parse was done with a stand-in and must be done again once these
    /// bytes are at hand.
    pub missing: Vec<std::ops::Range<u64>>,
}

/// The last offset of a string or array column, left to be checked when the column is read
/// because a parse did not have it at hand (spec B1 step 3.7).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct UncheckedEnd {
    /// The column, an index into [`FrameInfo::columns`].
    pub column: usize,
    /// Whether the offsets are those of an array's element column (at any depth).
    pub in_child: bool,
    /// File offset of the last offset.
    pub at: u64,
    /// Bytes per offset: 4 or 8.
    pub width: u8,
    /// What the last offset must be.
    pub rule: EndRule,
}

/// What a column's last offset must be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum EndRule {
    /// A string column's: the length of its string bytes (masked of the NA bit).
    StringBytes(u64),
    /// An array column's: at most the child's rows (and 2^31 - 1 for Arr32).
    ArrayRows(u64),
}

impl UncheckedEnd {
    /// The bytes of the last offset.
    pub fn range(&self) -> std::ops::Range<u64> {
        self.at..self.at + self.width as u64
    }

    /// Checks the last offset, given its bytes (little-endian, `width` of them).
    pub fn check(&self, bytes: &[u8]) -> Result<()> {
        let raw = bytes
            .iter()
            .take(self.width as usize)
            .rev()
            .fold(0u64, |acc, &b| acc << 8 | b as u64);
        let result = match self.rule {
            EndRule::StringBytes(len) => check_string_end(raw, self.width, len, self.at),
            EndRule::ArrayRows(rows) => check_arr32_end(raw, self.width, self.at)
                .and_then(|()| check_array_end(raw, rows, self.at)),
        };
        if self.in_child {
            result.map_err(|e| e.with_field("child"))
        } else {
            result
        }
    }
}

/// Fails unless the last string offset `raw` (with its NA bit, stored at file offset `at`)
/// ends the `strdata_len` string bytes.
fn check_string_end(raw: u64, width: u8, strdata_len: u64, at: u64) -> Result<()> {
    let mask: u64 = if width == 4 { 1 << 31 } else { 1 << 63 };
    let last = raw & !mask;
    if last != strdata_len {
        return Err(err(
            ErrorClass::BadOffsets,
            format!(
                "the last string offset is {last} but the string buffer holds {strdata_len} bytes"
            ),
        )
        .at_offset(at));
    }
    Ok(())
}

/// Fails when the last offset of an Arr32 column (stored at `at`) exceeds 2^31 - 1.
fn check_arr32_end(last: u64, width: u8, at: u64) -> Result<()> {
    if width == 4 && last > i32::MAX as u64 {
        return Err(err(
            ErrorClass::BadOffsets,
            format!("the last Arr32 offset {last} exceeds 2^31 - 1"),
        )
        .at_offset(at));
    }
    Ok(())
}

/// Fails when the last offset of an array column (stored at `at`) is past its child's rows.
fn check_array_end(last: u64, child_rows: u64, at: u64) -> Result<()> {
    if last > child_rows {
        return Err(err(
            ErrorClass::BadOffsets,
            format!("the last array offset {last} is past the child's {child_rows} rows"),
        )
        .at_offset(at));
    }
    Ok(())
}

/// Verifies the meta record `meta` of a file whose sections `envelope` gives, looking into
/// `file` for the last offsets of string and array columns; those outside the bytes `file`
/// holds are listed in the result instead.
pub(crate) fn parse_meta(
    envelope: &Envelope,
    meta: &[u8],
    file: &dyn FileBytes,
    salvage: bool,
) -> Result<Parsed> {
    let frame = verify_frame(meta, envelope.meta_start)?;
    let ctx = MetaContext {
        meta,
        meta_start: envelope.meta_start,
        data_size: envelope.data_size,
        file,
        unchecked_ends: RefCell::new(Vec::new()),
        missing: RefCell::new(Vec::new()),
    };

    let columns = frame.columns().ok_or_else(|| {
        err(ErrorClass::MissingField, "the Frame has no columns vector").with_field("Frame.columns")
    })?;
    let mut dropped = unnamed_columns(columns, salvage)?;
    let nkeys = frame.nkeys();
    if nkeys < 0 || nkeys as usize > columns.len() {
        return Err(err(
            ErrorClass::BadKeys,
            format!(
                "nkeys = {nkeys} but the frame has {} columns",
                columns.len()
            ),
        )
        .with_field("Frame.nkeys"));
    }

    let nrows = frame.nrows();
    let mut infos = Vec::with_capacity(columns.len());
    for (i, col) in columns.iter().enumerate() {
        if dropped.iter().any(|d| d.0 == i) {
            continue;
        }
        let unchecked_before = ctx.unchecked_ends.borrow().len();
        match ctx.column(col, Rows::Frame(nrows), 0) {
            Ok(info) => {
                for end in &mut ctx.unchecked_ends.borrow_mut()[unchecked_before..] {
                    end.column = infos.len();
                }
                infos.push(info);
            }
            Err(e) if salvage => {
                ctx.unchecked_ends.borrow_mut().truncate(unchecked_before);
                let e = e.with_column(i, col.name());
                dropped.push((i, col.name().map(str::to_owned), e));
            }
            Err(e) => return Err(e.with_column(i, col.name())),
        }
    }
    dropped.sort_by_key(|d| d.0);
    // Keys name the leading columns; with one of them gone the frame is no longer keyed.
    let mut nkeys = nkeys as usize;
    if dropped.iter().any(|d| d.0 < nkeys) {
        nkeys = 0;
    }
    let info = FrameInfo {
        nrows,
        ncols_stored: frame.ncols(),
        nkeys,
        columns: infos,
        file_size: envelope.file_size,
        data_size: envelope.data_size,
        meta_size: envelope.meta_size,
        legacy_trailer: envelope.legacy_trailer,
    };
    Ok(Parsed {
        info,
        dropped,
        unchecked_ends: ctx.unchecked_ends.into_inner(),
        missing: ctx.missing.into_inner(),
    })
}

/// Where the sections of a Jay file lie, as its header, trailer and `meta_size` say.
pub(crate) struct Envelope {
    /// File offset of the meta record.
    pub meta_start: u64,
    pub meta_size: u64,
    /// Length of the data section, from byte 8 to the meta record.
    pub data_size: u64,
    pub file_size: u64,
    /// The file ends in the 2018 trailer `00 00 00 00 "JAY1"`.
    legacy_trailer: bool,
}

impl Envelope {
    /// Checks the envelope of a whole file (spec B1 steps 1–2).
    fn check(bytes: &[u8]) -> Result<Envelope> {
        let size = bytes.len();
        let footer = &bytes[size.saturating_sub(FOOTER_LEN as usize)..];
        Envelope::check_parts(&bytes[..size.min(8)], footer, size as u64)
    }

    /// Checks the signature, the version and the framing sizes (spec B1 steps 1–2) of a file
    /// of `size` bytes, given its first 8 bytes and its last 16 (fewer when it is smaller).
    pub(crate) fn check_parts(header: &[u8], footer: &[u8], size: u64) -> Result<Envelope> {
        if size < 24 || header.len() < 8 || footer.len() < FOOTER_LEN as usize {
            return Err(err(
                ErrorClass::TooSmall,
                format!("the file is {size} bytes; a Jay file has at least 24"),
            ));
        }
        if &header[..3] != b"JAY" {
            return Err(err(
                ErrorClass::BadSignature,
                format!("the first bytes are {:?}, not \"JAY\"", show(&header[..4])),
            )
            .at_offset(0));
        }
        let tail = &footer[footer.len() - 4..];
        let legacy_trailer = tail == b"JAY1";
        if &tail[1..] != b"JAY" && !legacy_trailer {
            return Err(err(
                ErrorClass::BadSignature,
                format!(
                    "the file ends in {:?}, not \"1JAY\": it is truncated or not a Jay file",
                    show(tail)
                ),
            )
            .at_offset(size - 4));
        }
        if &header[..8] != HEADER {
            return Err(err(
                ErrorClass::UnsupportedVersion,
                format!(
                    "the header is {:?}; only \"JAY1\" followed by four zero bytes is defined",
                    show(&header[..8])
                ),
            )
            .at_offset(0));
        }
        if size % 8 != 0 {
            return Err(err(
                ErrorClass::BadEnvelope,
                format!("the file size {size} is not a multiple of 8"),
            ));
        }
        let meta_size = read_u64(footer, footer.len() - 16);
        let bad_meta_size = |message: String| {
            err(ErrorClass::BadEnvelope, message)
                .with_field("meta_size")
                .at_offset(size - 16)
        };
        if meta_size > size - 24 {
            return Err(bad_meta_size(format!(
                "meta_size is {meta_size} but the file has only {size} bytes"
            )));
        }
        if meta_size % 8 != 0 {
            return Err(bad_meta_size(format!(
                "meta_size {meta_size} is not a multiple of 8"
            )));
        }
        let meta_start = size - FOOTER_LEN - meta_size;
        Ok(Envelope {
            meta_start,
            meta_size,
            data_size: meta_start - HEADER_LEN,
            file_size: size,
            legacy_trailer,
        })
    }

    /// File offset of the end of the meta record.
    pub(crate) fn meta_end(&self) -> u64 {
        self.meta_start + self.meta_size
    }
}

/// The meta record as a FlatBuffers `Frame`, verified so that reading it cannot go out of
/// bounds (spec B1 step 3).
fn verify_frame(meta: &[u8], meta_start: u64) -> Result<fb::Frame<'_>> {
    let options = flatbuffers::VerifierOptions {
        max_depth: 64,
        max_tables: meta.len() / 4 + 1,
        max_apparent_size: usize::MAX / 2,
        ignore_missing_null_terminator: false,
    };
    fb::root_as_frame_with_opts(&options, meta).map_err(|e| {
        let class = match e {
            flatbuffers::InvalidFlatbuffer::Utf8Error { .. } => ErrorClass::InvalidUtf8,
            _ => ErrorClass::BadMeta,
        };
        // The verifier's trace spans lines and counts from the start of the meta.
        let detail = e.to_string().split_whitespace().collect::<Vec<_>>().join(" ");
        err(
            class,
            format!("the meta record is not a valid Jay Frame ({detail}; positions count from the meta's start)"),
        )
        .at_offset(meta_start)
    })
}

/// The columns without a name: an error, or under `salvage` the columns to leave out.
fn unnamed_columns(
    columns: flatbuffers::Vector<'_, flatbuffers::ForwardsUOffset<fb::Column<'_>>>,
    salvage: bool,
) -> Result<Vec<DroppedColumn>> {
    let mut dropped = Vec::new();
    for (i, col) in columns.iter().enumerate() {
        if col.name().is_none() {
            let e = err(ErrorClass::MissingField, "the column has no name")
                .with_column(i, None)
                .with_field("Column.name");
            if !salvage {
                return Err(e);
            }
            dropped.push((i, None, e));
        }
    }
    Ok(dropped)
}

fn show(bytes: &[u8]) -> String {
    bytes.iter().map(|&b| b as char).collect()
}

/// Where a column's row count comes from.
#[derive(Clone, Copy)]
enum Rows {
    /// A top-level column: `Frame.nrows`.
    Frame(u64),
    /// An array child: the parent's last offset.
    Child(u64),
}

/// The buffers a column names, each present only when the column's type uses it.
#[derive(Clone, Copy)]
struct Buffers {
    /// A non-empty validity bitmap (new layout only).
    validity: Option<BufferRange>,
    data: Option<BufferRange>,
    strdata: Option<BufferRange>,
}

impl Buffers {
    fn named(&self) -> [(&'static str, Option<BufferRange>); 3] {
        [
            ("validity", self.validity),
            ("data", self.data),
            ("strdata", self.strdata),
        ]
    }

    /// Fails when two non-empty buffers of the column share bytes (spec B1 step 3.5).
    fn check_disjoint(&self) -> Result<()> {
        let present: Vec<(&str, BufferRange)> = self
            .named()
            .into_iter()
            .filter_map(|(n, b)| b.filter(|b| b.length > 0).map(|b| (n, b)))
            .collect();
        for (i, (na, a)) in present.iter().enumerate() {
            for (nb, b) in &present[i + 1..] {
                if a.offset < b.offset + b.length && b.offset < a.offset + a.length {
                    return Err(err(
                        ErrorClass::BufferOverlap,
                        format!(
                            "the {na} buffer [{}, +{}) overlaps the {nb} buffer [{}, +{})",
                            a.file_offset(),
                            a.length,
                            b.file_offset(),
                            b.length
                        ),
                    )
                    .at_offset(a.file_offset()));
                }
            }
        }
        Ok(())
    }
}

/// The offsets of a string or array column, as the size check found them.
#[derive(Clone, Copy)]
struct Offsets {
    buffer: BufferRange,
    /// Bytes per offset: 4 or 8.
    width: u8,
}

/// What the size check settles about a column's values.
enum Values<'t> {
    /// Nothing further to check: no values, fixed-width values or one byte per Bool8.
    Plain,
    /// Bool8 stored one bit per row.
    PackedBool,
    /// Offsets into the column's string bytes.
    Strings(Offsets),
    /// Offsets into a child column of the element type.
    Arrays(Offsets, &'t JayType),
}

/// A row count times a width in bytes, or an error when it overflows.
fn bytes_for(n: u64, width: u64, what: &str) -> Result<u64> {
    n.checked_mul(width).ok_or_else(|| {
        err(
            ErrorClass::BufferSize,
            format!("{n} rows of {width}-byte {what} overflow a 64-bit size"),
        )
    })
}

/// Checks every buffer's length against the row count and the type (spec B1 step 3.4) and
/// says how the values are stored.
fn check_sizes<'t>(
    jay_type: &'t JayType,
    layout: Layout,
    nrows: u64,
    buffers: &Buffers,
) -> Result<Values<'t>> {
    let data = buffers.data;
    let data_len = data.map_or(0, |b| b.length);
    let wrong_size = |what: &str, expected: String, got: u64| {
        let e = err(
            ErrorClass::BufferSize,
            format!("the {what} buffer is {got} bytes; {nrows} rows need {expected}"),
        );
        match data {
            Some(b) => e.at_offset(b.file_offset()),
            None => e,
        }
    };
    let n_plus_1 = nrows.checked_add(1).ok_or_else(|| {
        err(
            ErrorClass::BufferSize,
            format!("row count {nrows} overflows"),
        )
    })?;
    if let Some(v) = buffers.validity {
        let need = nrows.div_ceil(8);
        if v.length < need {
            return Err(err(
                ErrorClass::BufferSize,
                format!(
                    "the validity buffer is {} bytes; {nrows} rows need at least {need}",
                    v.length
                ),
            )
            .at_offset(v.file_offset()));
        }
    }
    // The offsets buffer of `nrows + 1` offsets, of the type's width or, for Str64 only, the
    // narrow width datatable's chunked writer keeps under that label.
    let offsets = |width: u8, narrow_allowed: bool| -> Result<Offsets> {
        let need = bytes_for(n_plus_1, width as u64, "offsets")?;
        let narrow = bytes_for(n_plus_1, 4, "offsets")?;
        match data {
            Some(buffer) if buffer.length == need => Ok(Offsets { buffer, width }),
            Some(buffer) if narrow_allowed && buffer.length == narrow => {
                Ok(Offsets { buffer, width: 4 })
            }
            _ => Err(wrong_size("offsets", need.to_string(), data_len)),
        }
    };
    Ok(match jay_type.storage() {
        Storage::Void => Values::Plain,
        Storage::Bool => {
            let packed_len = nrows.div_ceil(8);
            if layout == Layout::New
                && data_len == packed_len
                && (buffers.validity.is_some() || data_len < nrows)
            {
                Values::PackedBool
            } else if data_len != nrows {
                return Err(wrong_size("data", format!("{nrows}"), data_len));
            } else {
                Values::Plain
            }
        }
        Storage::Fixed(width) => {
            let need = bytes_for(nrows, width as u64, "values")?;
            if data_len != need {
                return Err(wrong_size("data", need.to_string(), data_len));
            }
            Values::Plain
        }
        Storage::Strings { offset_width } => {
            Values::Strings(offsets(offset_width, offset_width == 8)?)
        }
        Storage::Arrays {
            element,
            offset_width,
        } => Values::Arrays(offsets(offset_width, false)?, element),
    })
}

struct MetaContext<'a> {
    meta: &'a [u8],
    meta_start: u64,
    data_size: u64,
    file: &'a dyn FileBytes,
    /// String last offsets not at hand, left for the reads (see [`Parsed::unchecked_ends`]).
    unchecked_ends: RefCell<Vec<UncheckedEnd>>,
    /// Array last offsets not at hand (see [`Parsed::missing`]).
    missing: RefCell<Vec<std::ops::Range<u64>>>,
}

impl MetaContext<'_> {
    /// Verifies one column description against the file (spec B1 step 3): its type, row
    /// count, buffers and, for arrays, its child column.
    fn column(&self, col: fb::Column<'_>, rows: Rows, depth: usize) -> Result<ColumnInfo> {
        let layout = if col.type_().is_some() {
            Layout::New
        } else {
            Layout::Old
        };
        let jay_type = self.column_type(col, depth)?;
        if matches!(rows, Rows::Child(_)) && layout == Layout::Old && jay_type != JayType::Void0 {
            return Err(err(
                ErrorClass::MissingField,
                format!("an array child of type {jay_type} in the old layout; only void children may be"),
            )
            .with_field("Column.type"));
        }
        let nrows = row_count(col, layout, rows)?;
        let buffers = column_buffers(col, layout, &jay_type)?;
        for (name, b) in buffers.named() {
            if let Some(b) = b {
                self.check_placement(name, b)?;
            }
        }
        let values = check_sizes(&jay_type, layout, nrows, &buffers)?;
        buffers.check_disjoint()?;

        let (offset_width, bool_packed, child) = match values {
            Values::Plain => (0, false, None),
            Values::PackedBool => (0, true, None),
            Values::Strings(offsets) => {
                self.string_end(offsets, nrows, buffers.strdata)?;
                (offsets.width, false, None)
            }
            Values::Arrays(offsets, element) => {
                let child = self.array_child(col, offsets, nrows, element, depth)?;
                (offsets.width, false, Some(Box::new(child)))
            }
        };
        let stats = self.stats(&col, &jay_type)?;
        Ok(ColumnInfo {
            name: col.name().map(str::to_owned),
            jay_type,
            layout,
            nrows,
            nullcount: col.nullcount(),
            stats,
            validity: buffers.validity,
            data: buffers.data,
            strdata: buffers.strdata,
            offset_width,
            bool_packed,
            child,
        })
    }

    /// The column's type: the new layout's `Type` table or the old layout's `stype`.
    fn column_type(&self, col: fb::Column<'_>, depth: usize) -> Result<JayType> {
        if let Some(t) = col.type_() {
            return self.type_of(t, depth);
        }
        let c = col.stype().0;
        match JayType::scalar_from_code(c) {
            Some(t) => Ok(t),
            None if c == code::ARR32 || c == code::ARR64 => Err(err(
                ErrorClass::MissingField,
                "an array column in the old layout (arrays need the new layout's type, buffers and children)",
            )
            .with_field("Column.type")),
            None => Err(unknown_type(c).with_field("Column.stype")),
        }
    }

    /// The last string offset must end the string bytes (spec B1 step 3.7); when that offset
    /// is not at hand, the check is left for the reads.
    fn string_end(&self, offsets: Offsets, nrows: u64, strdata: Option<BufferRange>) -> Result<()> {
        let at = offsets.buffer.file_offset() + nrows * offsets.width as u64;
        let strdata_len = strdata.map_or(0, |b| b.length);
        match self.offset_at(offsets, nrows) {
            Some(raw) => check_string_end(raw, offsets.width, strdata_len, at),
            None => {
                self.unchecked_ends.borrow_mut().push(UncheckedEnd {
                    column: 0,
                    in_child: false,
                    at,
                    width: offsets.width,
                    rule: EndRule::StringBytes(strdata_len),
                });
                Ok(())
            }
        }
    }

    /// Verifies the one child column of an array column, whose rows the last offset counts.
    fn array_child(
        &self,
        col: fb::Column<'_>,
        offsets: Offsets,
        nrows: u64,
        element: &JayType,
        depth: usize,
    ) -> Result<ColumnInfo> {
        let at = offsets.buffer.file_offset() + nrows * offsets.width as u64;
        let last = self.offset_at(offsets, nrows);
        if let Some(last) = last {
            check_arr32_end(last, offsets.width, at)?;
        }
        let children = col.children().filter(|c| c.len() == 1).ok_or_else(|| {
            err(
                ErrorClass::MissingField,
                format!(
                    "an array column needs exactly one child column, not {}",
                    col.children().map_or(0, |c| c.len())
                ),
            )
            .with_field("Column.children")
        })?;
        let child_col = children.get(0);
        // An old-layout (void) child has the last offset as its row count, so the offset
        // cannot wait for the reads: 0 stands in for it, which passes every check and places
        // no buffer, and the parse is done again once the offset is fetched.
        if last.is_none() && child_col.type_().is_none() {
            self.missing
                .borrow_mut()
                .push(at..at + offsets.width as u64);
        }
        let unchecked_before = self.unchecked_ends.borrow().len();
        let child = self
            .column(child_col, Rows::Child(last.unwrap_or(0)), depth + 1)
            .map_err(|e| e.with_field("child"))?;
        for end in &mut self.unchecked_ends.borrow_mut()[unchecked_before..] {
            end.in_child = true;
        }
        if *element != child.jay_type {
            return Err(err(
                ErrorClass::BadMeta,
                format!(
                    "the array's element type is {element} but its child column is {}",
                    child.jay_type
                ),
            ));
        }
        match last {
            Some(last) => check_array_end(last, child.nrows, at)?,
            None => self.unchecked_ends.borrow_mut().push(UncheckedEnd {
                column: 0,
                in_child: false,
                at,
                width: offsets.width,
                rule: EndRule::ArrayRows(child.nrows),
            }),
        }
        Ok(child)
    }
}

/// The column's row count: the frame's, or for an array child the parent's last offset; a
/// new-layout column states its own, which must agree with the frame's.
fn row_count(col: fb::Column<'_>, layout: Layout, rows: Rows) -> Result<u64> {
    match (layout, rows) {
        (Layout::Old, Rows::Frame(n)) | (Layout::Old, Rows::Child(n)) => Ok(n),
        (Layout::New, Rows::Frame(n)) => {
            if col.nrows() != n {
                return Err(err(
                    ErrorClass::RowCountMismatch,
                    format!("the column has {} rows but the frame has {n}", col.nrows()),
                )
                .with_field("Column.nrows"));
            }
            Ok(n)
        }
        (Layout::New, Rows::Child(_)) => Ok(col.nrows()),
    }
}

/// The buffers the column's type needs, from the old layout's `data`/`strdata` or the new
/// layout's `buffers` vector (validity, data, string bytes), each required when the type
/// uses it.
fn column_buffers(col: fb::Column<'_>, layout: Layout, jay_type: &JayType) -> Result<Buffers> {
    let needed = match jay_type.storage() {
        Storage::Void => 0,
        Storage::Strings { .. } => 3,
        _ => 2,
    };
    match layout {
        Layout::Old => {
            let data = match col.data() {
                Some(b) => Some(range(b)),
                None if needed == 0 => None,
                None => {
                    return Err(
                        err(ErrorClass::MissingField, "the column has no data buffer")
                            .with_field("Column.data"),
                    )
                }
            };
            let strdata = match col.strdata() {
                Some(b) if needed == 3 => Some(range(b)),
                None if needed == 3 => {
                    return Err(err(
                        ErrorClass::MissingField,
                        "the string column has no strdata buffer",
                    )
                    .with_field("Column.strdata"))
                }
                _ => None,
            };
            Ok(Buffers {
                validity: None,
                data,
                strdata,
            })
        }
        Layout::New => {
            let buffers: Vec<BufferRange> = match col.buffers() {
                Some(v) => v.iter().map(range).collect(),
                None if needed == 0 => Vec::new(),
                None => {
                    return Err(err(ErrorClass::MissingField, "the column has no buffers")
                        .with_field("Column.buffers"))
                }
            };
            if buffers.len() < needed {
                return Err(err(
                    ErrorClass::MissingField,
                    format!(
                        "a {jay_type} column needs {needed} buffers but has {}",
                        buffers.len()
                    ),
                )
                .with_field("Column.buffers"));
            }
            Ok(Buffers {
                validity: buffers.first().copied().filter(|b| b.length > 0),
                data: buffers.get(1).copied(),
                strdata: buffers.get(2).copied().filter(|_| needed == 3),
            })
        }
    }
}

impl MetaContext<'_> {
    /// The type of a new-layout `Type` table, following array element types.
    fn type_of(&self, t: fb::Type<'_>, depth: usize) -> Result<JayType> {
        if depth > 64 {
            return Err(err(
                ErrorClass::BadMeta,
                "array types nest deeper than 64 levels",
            ));
        }
        let c = t.stype().0;
        if let Some(scalar) = JayType::scalar_from_code(c) {
            return Ok(scalar);
        }
        if c != code::ARR32 && c != code::ARR64 {
            return Err(unknown_type(c).with_field("Type.stype"));
        }
        let element = t.extra_as_child().ok_or_else(|| {
            err(
                ErrorClass::MissingField,
                "the array type has no element type",
            )
            .with_field("Type.extra")
        })?;
        let element = Box::new(self.type_of(element, depth + 1)?);
        Ok(if c == code::ARR32 {
            JayType::Arr32(element)
        } else {
            JayType::Arr64(element)
        })
    }

    fn check_placement(&self, name: &str, b: BufferRange) -> Result<()> {
        if b.length == 0 {
            return Ok(());
        }
        if b.offset > self.data_size || b.length > self.data_size - b.offset {
            return Err(err(
                ErrorClass::BufferOutOfBounds,
                format!(
                    "the {name} buffer (offset {}, length {}) lies outside the data section of {} bytes",
                    b.offset, b.length, self.data_size
                ),
            )
            .at_offset(HEADER_LEN.saturating_add(b.offset)));
        }
        if b.offset % 8 != 0 {
            return Err(err(
                ErrorClass::BufferMisaligned,
                format!(
                    "the {name} buffer starts at data offset {}, not a multiple of 8",
                    b.offset
                ),
            )
            .at_offset(b.file_offset()));
        }
        Ok(())
    }

    /// The offset at `index`, when it is at hand; the size check has placed the whole buffer
    /// inside the file.
    fn offset_at(&self, offsets: Offsets, index: u64) -> Option<u64> {
        let width = offsets.width as u64;
        let bytes = self
            .file
            .bytes_at(offsets.buffer.file_offset() + index * width, width)?;
        Some(if offsets.width == 4 {
            u32::from_le_bytes(bytes.try_into().ok()?) as u64
        } else {
            u64::from_le_bytes(bytes.try_into().ok()?)
        })
    }

    /// The stats struct, when its tag names the struct of the column's type; otherwise none.
    fn stats(&self, col: &fb::Column<'_>, jay_type: &JayType) -> Result<Option<Stats>> {
        let expected_tag = match jay_type {
            JayType::Bool8 => 1,
            JayType::Int8 => 2,
            JayType::Int16 => 3,
            JayType::Int32 | JayType::Date32 => 4,
            JayType::Int64 | JayType::Time64 => 5,
            JayType::Float32 => 6,
            JayType::Float64 => 7,
            _ => return Ok(None),
        };
        if col.stats_type() != expected_tag {
            return Ok(None);
        }
        let table = &col._tab;
        let slot = table.vtable().get(fb::Column::VT_STATS) as usize;
        if slot == 0 {
            return Ok(None);
        }
        let field = table.loc() + slot;
        let struct_size = [0, 2, 2, 4, 8, 16, 8, 16][expected_tag as usize];
        let target = field + col.stats() as usize;
        let bytes = self.meta.get(target..target + struct_size).ok_or_else(|| {
            err(
                ErrorClass::BadMeta,
                format!("the stats struct at meta offset {target} lies outside the meta"),
            )
            .with_field("Column.stats")
            .at_offset(self.meta_start + field as u64)
        })?;
        let half = struct_size / 2;
        let int = |b: &[u8]| -> i64 {
            match b.len() {
                1 => b[0] as i8 as i64,
                2 => i16::from_le_bytes(b.try_into().unwrap()) as i64,
                4 => i32::from_le_bytes(b.try_into().unwrap()) as i64,
                _ => i64::from_le_bytes(b.try_into().unwrap()),
            }
        };
        let (lo, hi) = (&bytes[..half], &bytes[half..]);
        Ok(Some(match expected_tag {
            6 => Stats::Float {
                min: f32::from_le_bytes(lo.try_into().unwrap()) as f64,
                max: f32::from_le_bytes(hi.try_into().unwrap()) as f64,
            },
            7 => Stats::Float {
                min: f64::from_le_bytes(lo.try_into().unwrap()),
                max: f64::from_le_bytes(hi.try_into().unwrap()),
            },
            _ => Stats::Int {
                min: int(lo),
                max: int(hi),
            },
        }))
    }
}

fn range(b: &fb::Buffer) -> BufferRange {
    BufferRange {
        offset: b.offset(),
        length: b.length(),
    }
}

fn unknown_type(c: u8) -> Error {
    err(
        ErrorClass::UnknownType,
        format!("type code {c} is not a Jay type (codes 0 to 13 are defined)"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn buffers(data: Option<u64>, strdata: Option<u64>) -> Buffers {
        let at = |offset, length| BufferRange { offset, length };
        Buffers {
            validity: None,
            data: data.map(|length| at(0, length)),
            strdata: strdata.map(|length| at(64, length)),
        }
    }

    #[test]
    fn only_str64_may_keep_the_narrow_offsets_of_datatables_chunked_writer() {
        // Three rows: four offsets, 16 bytes narrow, 32 wide.
        let narrow = buffers(Some(16), Some(5));
        match check_sizes(&JayType::Str64, Layout::New, 3, &narrow) {
            Ok(Values::Strings(offsets)) => assert_eq!(offsets.width, 4),
            _ => panic!("a Str64 column with 4-byte offsets is read"),
        }
        let wide = buffers(Some(32), Some(5));
        match check_sizes(&JayType::Str64, Layout::New, 3, &wide) {
            Ok(Values::Strings(offsets)) => assert_eq!(offsets.width, 8),
            _ => panic!("a Str64 column with 8-byte offsets is read"),
        }
        let arrays = JayType::Arr64(Box::new(JayType::Int32));
        let Err(e) = check_sizes(&arrays, Layout::New, 3, &narrow) else {
            panic!("an Arr64 column with 4-byte offsets is refused");
        };
        assert_eq!(e.class(), ErrorClass::BufferSize);
        assert!(
            e.to_string()
                .contains("the offsets buffer is 16 bytes; 3 rows need 32"),
            "{e}"
        );
    }

    #[test]
    fn offsets_without_a_data_buffer_are_a_size_error() {
        let Err(e) = check_sizes(&JayType::Str32, Layout::Old, 3, &buffers(None, Some(5))) else {
            panic!("a string column without offsets is refused");
        };
        assert_eq!(e.class(), ErrorClass::BufferSize);
        assert!(
            e.to_string()
                .contains("the offsets buffer is 0 bytes; 3 rows need 16"),
            "{e}"
        );
    }
}
