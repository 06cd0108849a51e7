//! The bytes of a VS file: varints, block framing, the meta block and point entries (spec
//! §1–§8). Vector compression is in `vector_codec`, the MessagePack ⇄ JSON conversions of app
//! data in `msgpack_json`.
//!
//! Everything here works on byte slices bounded by the file and checks every size read from
//! the file against the bytes that are actually there before allocating or reading.

use std::ops::Range;

use super::mapping::Resolution;
use crate::error::{Error, ErrorClass, Result};

/// The file's first two bytes.
pub const SIGNATURE: &[u8; 2] = b"VS";
/// Type byte of the meta block.
pub const META: u8 = b'^';
/// Type byte of a point block.
pub const POINT: u8 = b'P';
/// Type byte of a blank (deleted) block.
pub const BLANK: u8 = b'0';
/// Type byte of the terminal block that ends the file.
pub const TERMINAL: u8 = b'$';
/// Bytes of a block header: the type byte and a little-endian `u32` payload length.
pub const BLOCK_HEADER: usize = 5;

/// Largest decompressed STRING/JSON vector accepted by default (the field width).
pub const DEFAULT_MAX_VARIABLE_VECTOR: usize = u32::MAX as usize;

/// Varint byte order (spec §1.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum VarintOrder {
    /// Protocol Buffers LEB128, least significant group first (the format's rule).
    #[default]
    Leb128,
    /// Upstream's prototype code: most significant group first. Read only.
    MsbFirst,
}

/// What a reader does at the end of the file (spec §8).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EofMode {
    /// A file without `'$'` is an error.
    #[default]
    Strict,
    /// A file that ends at a block boundary without `'$'` is accepted.
    Lenient,
}

/// What a reader does with a block type it does not know (spec §7).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum UnknownBlocks {
    /// Step over it (the default).
    #[default]
    Skip,
    /// Fail with an error naming it.
    Error,
}

/// The options that change how bytes are parsed: the `parse` part of a read's
/// [`ReaderOptions`](super::ReaderOptions), which the block walker takes alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct ParseOptions {
    /// Varint byte order (default [`VarintOrder::Leb128`]).
    pub varint: VarintOrder,
    /// End-of-file rule (default [`EofMode::Strict`]).
    pub eof: EofMode,
    /// Unknown block types (default [`UnknownBlocks::Skip`]).
    pub unknown_blocks: UnknownBlocks,
    /// Upper bound on a decompressed STRING/JSON vector.
    pub max_variable_vector: usize,
}

impl Default for ParseOptions {
    fn default() -> Self {
        ParseOptions {
            varint: VarintOrder::Leb128,
            eof: EofMode::Strict,
            unknown_blocks: UnknownBlocks::Skip,
            max_variable_vector: DEFAULT_MAX_VARIABLE_VECTOR,
        }
    }
}

fn envelope(offset: u64, message: impl Into<String>) -> Error {
    Error::new(ErrorClass::BadEnvelope, message).at_offset(offset)
}

/// An error inside the block of type `kind` at `offset`.
pub fn block_error(kind: u8, offset: u64, class: ErrorClass, message: impl AsRef<str>) -> Error {
    Error::new(
        class,
        format!(
            "block '{}' at offset {offset}: {}",
            printable(kind),
            message.as_ref()
        ),
    )
    .at_offset(offset)
}

/// A byte as a character when printable, else as `\xNN`, for messages.
pub fn printable(byte: u8) -> String {
    if byte.is_ascii_graphic() {
        (byte as char).to_string()
    } else {
        format!("\\x{byte:02X}")
    }
}

/// Checks the 4-byte header (spec §2).
pub fn check_header(bytes: &[u8]) -> Result<()> {
    if bytes.len() < 4 {
        return Err(Error::new(
            ErrorClass::TooSmall,
            format!(
                "truncated header: the file has {} bytes, a VS file at least 4",
                bytes.len()
            ),
        )
        .at_offset(0));
    }
    if &bytes[..2] != SIGNATURE {
        return Err(Error::new(
            ErrorClass::BadSignature,
            format!(
                "bad signature: bytes 0-1 are {:02X} {:02X}, not 56 53 (\"VS\")",
                bytes[0], bytes[1]
            ),
        )
        .at_offset(0));
    }
    let version = u16::from_le_bytes([bytes[2], bytes[3]]);
    if version != 0 {
        return Err(Error::new(
            ErrorClass::UnsupportedVersion,
            format!("unsupported version {version}: only version 0 is defined"),
        )
        .at_offset(2));
    }
    Ok(())
}

/// Asks the CPU to start loading the cache line of `bytes[at]` (nothing when `at` is past the
/// end, or on other architectures). Walking a mapped file is bound by memory latency: the next
/// block's header is only known once this one's length has arrived.
#[inline(always)]
pub fn prefetch(bytes: &[u8], at: usize) {
    #[cfg(target_arch = "x86_64")]
    if at < bytes.len() {
        // SAFETY: a prefetch reads nothing architecturally and cannot fault; the address is
        // inside `bytes`.
        unsafe {
            std::arch::x86_64::_mm_prefetch(
                bytes.as_ptr().add(at) as *const i8,
                std::arch::x86_64::_MM_HINT_T0,
            )
        };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (bytes, at);
}

/// One block: its type byte, the offset of that byte and its payload.
#[derive(Debug, Clone, Copy)]
pub struct Block<'a> {
    /// The type byte.
    pub kind: u8,
    /// Offset of the type byte in the file.
    pub offset: u64,
    /// The payload, after the 5-byte header.
    pub payload: &'a [u8],
}

impl Block<'_> {
    /// Offset just past the block.
    pub fn end(&self) -> u64 {
        self.offset + BLOCK_HEADER as u64 + self.payload.len() as u64
    }
}

/// The error of a file that ends at a block boundary without `'$'` (spec §8).
fn missing_terminal(offset: u64) -> Error {
    envelope(
        offset,
        "missing terminal: the file ends without '$' (read it with eof=lenient to accept the points before the end)",
    )
}

/// The error of a block header cut by the end of the file: `left` bytes remain at `offset`.
fn truncated_header(kind: u8, offset: u64, left: u64) -> Error {
    envelope(
        offset,
        format!(
            "truncated block header: block '{}' at offset {offset} needs 5 header bytes, {left} remain",
            printable(kind)
        ),
    )
}

/// The error of a block whose payload of `length` bytes runs past the end of the file.
fn truncated_block(kind: u8, offset: u64, length: u64, payload_left: u64) -> Error {
    envelope(
        offset,
        format!(
            "truncated block: block '{}' at offset {offset}: length {length} runs past end of file ({payload_left} payload bytes remain)",
            printable(kind),
        ),
    )
}

/// Walks the blocks from a start offset; `next` returns `None` at the terminal (or, leniently,
/// at the end of the file). `terminal` then tells where the `'$'` is.
///
/// A walk may also cover a window of a file read by ranges ([`Blocks::window`]): a block that
/// the window cuts but the file holds ends the walk with `None`, and [`wanted`](Self::wanted)
/// then names the bytes the walk needs to go on. The framing errors are the same as over the
/// whole file: they are judged against the file's size.
pub struct Blocks<'a> {
    bytes: &'a [u8],
    /// Offset in the file of `bytes[0]`.
    base: u64,
    /// Size of the whole file.
    file_len: u64,
    pos: usize,
    eof: EofMode,
    done: bool,
    wanted: Option<Range<u64>>,
    /// Offset of the `'$'` once reached.
    pub terminal: Option<u64>,
}

impl<'a> Blocks<'a> {
    /// A walk starting at byte `start` of `bytes`, under the end-of-file rule `eof`.
    pub fn new(bytes: &'a [u8], start: usize, eof: EofMode) -> Blocks<'a> {
        Blocks {
            bytes,
            base: 0,
            file_len: bytes.len() as u64,
            pos: start,
            eof,
            done: false,
            wanted: None,
            terminal: None,
        }
    }

    /// A walk over `bytes`, the bytes of a file of `file_len` bytes from offset `base` on,
    /// starting at the block at file offset `start` (inside the window or at its end).
    pub fn window(bytes: &'a [u8], base: u64, file_len: u64, start: u64, eof: EofMode) -> Self {
        debug_assert!(base <= start && start <= base + bytes.len() as u64);
        debug_assert!(base + bytes.len() as u64 <= file_len);
        Blocks {
            bytes,
            base,
            file_len,
            pos: (start - base) as usize,
            eof,
            done: false,
            wanted: None,
            terminal: None,
        }
    }

    /// Offset in the file of the next block to read.
    pub fn position(&self) -> usize {
        self.base as usize + self.pos
    }

    /// After `next_block` gave `None` at the end of a window: the bytes of the file, from
    /// the offset of the block the window cut, that the walk needs next (never past the end
    /// of the file). `None` at the terminal or the end of the file.
    pub fn wanted(&self) -> Option<Range<u64>> {
        self.wanted.clone()
    }

    /// Whether the window ends before the file does and `offset..end` lies in the file: the
    /// walk then stops and wants those bytes instead of failing.
    #[cold]
    fn cut_by_window(&mut self, offset: u64, end: u64) -> bool {
        if self.base + (self.bytes.len() as u64) < self.file_len && end <= self.file_len {
            self.wanted = Some(offset..end);
            return true;
        }
        false
    }

    /// The next block, `None` at the terminal (or, leniently, at the end of the file, or at
    /// the end of a window: see [`wanted`](Self::wanted)), or an error for a block that runs
    /// past the end.
    pub fn next_block(&mut self) -> Result<Option<Block<'a>>> {
        if self.done {
            return Ok(None);
        }
        let offset = self.base + self.pos as u64;
        let left = self.bytes.len() - self.pos;
        if left == 0 {
            if self.cut_by_window(offset, offset + 1) {
                return Ok(None);
            }
            self.done = true;
            return match self.eof {
                EofMode::Lenient => Ok(None),
                EofMode::Strict => Err(missing_terminal(offset)),
            };
        }
        let kind = self.bytes[self.pos];
        if kind == TERMINAL {
            self.done = true;
            self.terminal = Some(offset);
            return Ok(None);
        }
        if left < BLOCK_HEADER {
            if self.cut_by_window(offset, offset + BLOCK_HEADER as u64) {
                return Ok(None);
            }
            self.done = true;
            return Err(truncated_header(kind, offset, self.file_len - offset));
        }
        let p = self.pos;
        let length = u32::from_le_bytes([
            self.bytes[p + 1],
            self.bytes[p + 2],
            self.bytes[p + 3],
            self.bytes[p + 4],
        ]) as usize;
        if length > left - BLOCK_HEADER {
            let end = offset + (BLOCK_HEADER + length) as u64;
            if self.cut_by_window(offset, end) {
                return Ok(None);
            }
            self.done = true;
            let payload_left = self.file_len - offset - BLOCK_HEADER as u64;
            return Err(truncated_block(kind, offset, length as u64, payload_left));
        }
        let start = p + BLOCK_HEADER;
        self.pos = start + length;
        Ok(Some(Block {
            kind,
            offset,
            payload: &self.bytes[start..start + length],
        }))
    }
}

/// A block as its header gives it: type byte, offset and payload length.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    /// The type byte.
    pub kind: u8,
    /// Offset of the type byte in the file.
    pub offset: u64,
    /// Payload length.
    pub length: u32,
}

impl Header {
    /// Offset just past the block.
    pub fn end(&self) -> u64 {
        self.offset + BLOCK_HEADER as u64 + self.length as u64
    }
}

/// Walks block headers alone over a window of a file, stepping over payloads the window need
/// not hold: how the block structure of a file read by ranges is listed without fetching its
/// payloads. The framing errors are those of [`Blocks`]; like a windowed [`Blocks`] walk it
/// stops with `None` and a [`wanted`](Self::wanted) range where the window ends first.
pub struct Headers<'a> {
    bytes: &'a [u8],
    base: u64,
    file_len: u64,
    /// Offset in the file of the next header.
    pos: u64,
    eof: EofMode,
    done: bool,
    wanted: Option<Range<u64>>,
    /// Offset of the `'$'` once reached.
    pub terminal: Option<u64>,
}

impl<'a> Headers<'a> {
    /// A walk over `bytes`, the bytes of a file of `file_len` bytes from offset `base` on,
    /// starting at the header at file offset `start` (≥ `base`; past the window, it wants
    /// that header at once).
    pub fn window(bytes: &'a [u8], base: u64, file_len: u64, start: u64, eof: EofMode) -> Self {
        debug_assert!(base <= start && base + bytes.len() as u64 <= file_len);
        Headers {
            bytes,
            base,
            file_len,
            pos: start,
            eof,
            done: false,
            wanted: None,
            terminal: None,
        }
    }

    /// Offset in the file of the next header.
    pub fn position(&self) -> u64 {
        self.pos
    }

    /// The bytes the walk needs next, after `next_header` gave `None` at the end of the window.
    pub fn wanted(&self) -> Option<Range<u64>> {
        self.wanted.clone()
    }

    fn window_end(&self) -> u64 {
        self.base + self.bytes.len() as u64
    }

    /// The next block's header, `None` at the terminal, at the end of the file (leniently) or
    /// at the end of the window, or an error for a block that runs past the end of the file.
    pub fn next_header(&mut self) -> Result<Option<Header>> {
        if self.done {
            return Ok(None);
        }
        let offset = self.pos;
        if offset >= self.window_end() {
            if offset < self.file_len {
                self.wanted = Some(offset..offset + 1);
                return Ok(None);
            }
            self.done = true;
            return match self.eof {
                EofMode::Lenient => Ok(None),
                EofMode::Strict => Err(missing_terminal(offset)),
            };
        }
        let at = (offset - self.base) as usize;
        let kind = self.bytes[at];
        if kind == TERMINAL {
            self.done = true;
            self.terminal = Some(offset);
            return Ok(None);
        }
        let header_end = offset + BLOCK_HEADER as u64;
        if header_end > self.window_end() {
            if header_end <= self.file_len {
                self.wanted = Some(offset..header_end);
                return Ok(None);
            }
            self.done = true;
            return Err(truncated_header(kind, offset, self.file_len - offset));
        }
        let b = &self.bytes[at + 1..at + BLOCK_HEADER];
        let length = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
        let header = Header {
            kind,
            offset,
            length,
        };
        if header.end() > self.file_len {
            self.done = true;
            let payload_left = self.file_len - header_end;
            return Err(truncated_block(kind, offset, length as u64, payload_left));
        }
        self.pos = header.end();
        Ok(Some(header))
    }
}

/// A cursor over one block's payload that names the block and field in its errors.
pub struct Fields<'a> {
    /// Type byte of the block.
    pub kind: u8,
    /// Offset of the block in the file.
    pub offset: u64,
    /// The block's payload.
    pub bytes: &'a [u8],
    /// Cursor position in the payload.
    pub pos: usize,
    /// Varint byte order.
    pub order: VarintOrder,
}

// The hot accessors are inlined into the point parser (a million points a second); their
// error paths are kept out of line.
impl<'a> Fields<'a> {
    /// A cursor at the start of `block`'s payload.
    #[inline]
    pub fn new(block: &Block<'a>, order: VarintOrder) -> Fields<'a> {
        Fields {
            kind: block.kind,
            offset: block.offset,
            bytes: block.payload,
            pos: 0,
            order,
        }
    }

    /// Bytes of the payload not read yet.
    #[inline]
    pub fn left(&self) -> usize {
        self.bytes.len() - self.pos
    }

    /// Offset in the file of the cursor.
    fn here(&self) -> u64 {
        self.offset + BLOCK_HEADER as u64 + self.pos as u64
    }

    /// An error of `class` naming the block, `field` and the cursor's file offset.
    #[cold]
    #[inline(never)]
    pub fn error(&self, class: ErrorClass, field: &str, message: impl AsRef<str>) -> Error {
        block_error(
            self.kind,
            self.offset,
            class,
            format!("{field} (byte {}): {}", self.here(), message.as_ref()),
        )
    }

    /// The next `n` bytes, or a `bad_envelope` error naming `field` if the block is shorter.
    #[inline]
    pub fn take(&mut self, n: usize, field: &str) -> Result<&'a [u8]> {
        if n > self.left() {
            return Err(self.short(n, field));
        }
        let s = &self.bytes[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }

    #[cold]
    #[inline(never)]
    fn short(&self, n: usize, field: &str) -> Error {
        self.error(
            ErrorClass::BadEnvelope,
            field,
            format!(
                "malformed block: needs {n} bytes, {} remain in the block",
                self.left()
            ),
        )
    }

    /// The next byte.
    #[inline]
    pub fn u8(&mut self, field: &str) -> Result<u8> {
        Ok(self.take(1, field)?[0])
    }

    /// The next 4 bytes as a little-endian `u32`.
    #[inline]
    pub fn u32le(&mut self, field: &str) -> Result<u32> {
        let b = self.take(4, field)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    /// The next varint, at most `max_bytes` long and `max_value` large.
    #[inline]
    pub fn varuint(&mut self, max_bytes: usize, max_value: u64, field: &str) -> Result<u64> {
        let start = self.pos;
        // One byte: the common case of small lengths.
        if let Some(&byte) = self.bytes.get(start) {
            if byte < 0x80 && (byte as u64) <= max_value {
                self.pos += 1;
                return Ok(byte as u64);
            }
        }
        match read_varuint(&self.bytes[start..], max_bytes, max_value, self.order) {
            Ok((value, used)) => {
                self.pos += used;
                Ok(value)
            }
            Err(e) => Err(self.error(e.class(), field, e.message())),
        }
    }

    /// The next varint as a `u32`.
    #[inline]
    pub fn vu32(&mut self, field: &str) -> Result<u32> {
        Ok(self.varuint(5, u32::MAX as u64, field)? as u32)
    }

    /// A `json` field: `None` when absent (length 0), else one validated msgpack value.
    pub fn json(&mut self, field: &str) -> Result<Option<&'a [u8]>> {
        let bytes = self.json_unchecked(field)?;
        if let Some(bytes) = bytes {
            super::msgpack_json::validate(bytes)
                .map_err(|e| self.error(e.class(), field, e.message()))?;
        }
        Ok(bytes)
    }

    /// A `json` field whose msgpack the caller decodes (and so validates) itself.
    #[inline]
    pub fn json_unchecked(&mut self, field: &str) -> Result<Option<&'a [u8]>> {
        let n = self.vu32(field)? as usize;
        if n == 0 {
            return Ok(None);
        }
        Ok(Some(self.take(n, field)?))
    }
}

/// Decodes one VARUINT from the start of `bytes`: (value, bytes used). An error is
/// [`ErrorClass::BadEnvelope`] when the varint runs past `bytes`, else [`ErrorClass::BadValue`];
/// the caller names the field and block.
pub fn read_varuint(
    bytes: &[u8],
    max_bytes: usize,
    max_value: u64,
    order: VarintOrder,
) -> Result<(u64, usize)> {
    let mut value: u128 = 0;
    for i in 0..max_bytes {
        let Some(&byte) = bytes.get(i) else {
            return Err(Error::new(
                ErrorClass::BadEnvelope,
                "runs past the end of its block: bad varint",
            ));
        };
        let group = (byte & 0x7F) as u128;
        match order {
            VarintOrder::Leb128 => value |= group << (7 * i),
            VarintOrder::MsbFirst => value = (value << 7) | group,
        }
        if value > max_value as u128 {
            return Err(Error::new(
                ErrorClass::BadValue,
                format!("bad varint: varint overflows {max_value}"),
            ));
        }
        if byte & 0x80 == 0 {
            return Ok((value as u64, i + 1));
        }
    }
    Err(Error::new(
        ErrorClass::BadValue,
        format!("bad varint: varint too long (more than {max_bytes} bytes)"),
    ))
}

/// Appends the minimal LEB128 encoding of `value`.
pub fn write_varuint(out: &mut Vec<u8>, mut value: u64) {
    loop {
        let byte = (value & 0x7F) as u8;
        value >>= 7;
        if value == 0 {
            out.push(byte);
            return;
        }
        out.push(byte | 0x80);
    }
}

/// Appends a `json` field holding `msgpack` (`None` or empty: absent).
pub fn write_json_field(out: &mut Vec<u8>, msgpack: Option<&[u8]>) {
    match msgpack {
        Some(bytes) if !bytes.is_empty() => {
            write_varuint(out, bytes.len() as u64);
            out.extend_from_slice(bytes);
        }
        _ => out.push(0),
    }
}

/// The meta block (spec §4).
#[derive(Debug, Clone, PartialEq)]
pub struct Meta {
    /// Offset of the meta block in the file.
    pub offset: u64,
    /// The vectors' dimensions.
    pub dims: Vec<u64>,
    /// The vectors' element type.
    pub resolution: Resolution,
    /// The file's default vector compression code.
    pub pack: u8,
    /// The `paging` byte, kept as stored.
    pub paging: u8,
    /// The raw msgpack of the attributes; `None` when absent.
    pub attributes: Option<Vec<u8>>,
    /// Elements per vector.
    pub n: usize,
}

impl Meta {
    /// Number of dimensions.
    pub fn rank(&self) -> usize {
        self.dims.len()
    }
}

/// N = product(dims), with the zero rule and the i32 bound (spec §4); an error is
/// [`ErrorClass::BadMeta`].
pub fn element_count(dims: &[u64]) -> Result<usize> {
    if dims.contains(&0) {
        return Ok(0);
    }
    let too_large = || {
        Error::new(
            ErrorClass::BadMeta,
            format!("vector too large: dims {dims:?} hold more than 2^31-1 elements"),
        )
    };
    let mut n: u64 = 1;
    for &d in dims {
        n = n
            .checked_mul(d)
            .filter(|&n| n <= i32::MAX as u64)
            .ok_or_else(too_large)?;
    }
    Ok(n as usize)
}

/// Parses and checks a meta block (spec §4).
pub fn parse_meta(block: &Block<'_>, order: VarintOrder) -> Result<Meta> {
    let mut f = Fields::new(block, order);
    let rank = f.vu32("rank")? as usize;
    if rank > f.left() {
        return Err(f.error(
            ErrorClass::BadEnvelope,
            "rank",
            format!(
                "malformed block: rank {rank} needs at least {rank} dimension bytes, {} remain",
                f.left()
            ),
        ));
    }
    let mut dims = Vec::with_capacity(rank);
    for i in 0..rank {
        dims.push(f.vu32(&format!("dims[{i}]"))? as u64);
    }
    let n = element_count(&dims).map_err(|e| f.error(e.class(), "dims", e.message()))?;
    let code = f.u8("resolution")? as i8;
    let resolution = Resolution::from_code(code).ok_or_else(|| {
        f.error(
            ErrorClass::UnknownType,
            "resolution",
            format!("unsupported resolution {code}"),
        )
    })?;
    let pack = f.u8("pack")?;
    let paging = f.u8("paging")?;
    let attributes = f.json("attributes")?.map(<[u8]>::to_vec);
    Ok(Meta {
        offset: block.offset,
        dims,
        resolution,
        pack,
        paging,
        attributes,
        n,
    })
}

/// A point entry, its fields still as bytes (spec §6).
#[derive(Debug, Clone, Copy)]
pub struct Point<'a> {
    /// Offset of the point block in the file.
    pub offset: u64,
    /// Validated msgpack; `None` when absent.
    pub app_data: Option<&'a [u8]>,
    /// The vector's option byte: its compression in the low 3 bits.
    pub vec_option: u8,
    /// The vector's bytes as stored (compressed or not).
    pub stored: &'a [u8],
}

/// Parses and checks a point block (spec §6), validating its app data.
pub fn parse_point<'a>(block: &Block<'a>, order: VarintOrder) -> Result<Point<'a>> {
    parse_point_with(block, order, true)
}

/// [`parse_point`]; `validate = false` leaves the app_data msgpack to a caller that decodes it.
pub fn parse_point_with<'a>(
    block: &Block<'a>,
    order: VarintOrder,
    validate: bool,
) -> Result<Point<'a>> {
    let mut f = Fields::new(block, order);
    let option = f.u8("point_option")?;
    if option & 0x07 != 0 {
        return Err(f.error(
            ErrorClass::Unsupported,
            "point_option",
            format!("unsupported point option 0x{option:02X} (low 3 bits must be 0)"),
        ));
    }
    let app_data = if validate {
        f.json("app_data")?
    } else {
        f.json_unchecked("app_data")?
    };
    let vec_option = f.u8("vec_option")?;
    let stored_len = f.u32le("stored_len")? as usize;
    let stored = f.take(stored_len, "vector")?;
    Ok(Point {
        offset: block.offset,
        app_data,
        vec_option,
        stored,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_both_orders() {
        let cases: [(u64, &[u8]); 8] = [
            (0, &[0x00]),
            (127, &[0x7F]),
            (128, &[0x80, 0x01]),
            (200, &[0xC8, 0x01]),
            (300, &[0xAC, 0x02]),
            (16383, &[0xFF, 0x7F]),
            (16384, &[0x80, 0x80, 0x01]),
            (4294967295, &[0xFF, 0xFF, 0xFF, 0xFF, 0x0F]),
        ];
        for (value, bytes) in cases {
            let mut out = Vec::new();
            write_varuint(&mut out, value);
            assert_eq!(out, bytes);
            assert_eq!(
                read_varuint(bytes, 5, u32::MAX as u64, VarintOrder::Leb128).unwrap(),
                (value, bytes.len())
            );
        }
        let msb: [(u64, &[u8]); 4] = [
            (128, &[0x81, 0x00]),
            (200, &[0x81, 0x48]),
            (300, &[0x82, 0x2C]),
            (16384, &[0x81, 0x80, 0x00]),
        ];
        for (value, bytes) in msb {
            assert_eq!(
                read_varuint(bytes, 5, u32::MAX as u64, VarintOrder::MsbFirst).unwrap(),
                (value, bytes.len())
            );
        }
        // Non-minimal accepted, too long and overflowing refused.
        assert_eq!(
            read_varuint(&[0x80, 0x00], 5, u32::MAX as u64, VarintOrder::Leb128).unwrap(),
            (0, 2)
        );
        assert!(
            read_varuint(&[0x80; 6], 5, u32::MAX as u64, VarintOrder::Leb128)
                .unwrap_err()
                .message()
                .contains("too long")
        );
        assert!(read_varuint(
            &[0xFF, 0xFF, 0xFF, 0xFF, 0x1F],
            5,
            u32::MAX as u64,
            VarintOrder::Leb128
        )
        .unwrap_err()
        .message()
        .contains("overflows"));
        let short = read_varuint(&[0x80], 5, u32::MAX as u64, VarintOrder::Leb128).unwrap_err();
        assert_eq!(short.class(), ErrorClass::BadEnvelope);
        assert!(short.message().contains("runs past"));
    }

    #[test]
    fn element_counts() {
        assert_eq!(element_count(&[]).unwrap(), 1);
        assert_eq!(element_count(&[2, 3]).unwrap(), 6);
        assert_eq!(
            element_count(&[u32::MAX as u64, u32::MAX as u64, 0]).unwrap(),
            0
        );
        assert!(element_count(&[u32::MAX as u64, 2]).is_err());
        assert_eq!(
            element_count(&[i32::MAX as u64]).unwrap(),
            i32::MAX as usize
        );
    }
}
