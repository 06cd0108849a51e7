//! The one door to c-blosc 1.x (vendored by `blosc-src`): header parsing in Rust, and the
//! thread-safe `blosc_decompress_ctx` / `blosc_compress_ctx` calls behind checks that make the
//! header's own `cbytes` the real end of the buffer. This is the only `unsafe` code of bcolz
//! besides one `sync_file_range` call in `durable`.
//! No process-global c-blosc state is touched (`blosc_init`, `blosc_set_*`, `blosc_compress`
//! … read environment variables and share state between threads).

use std::ffi::CString;
use std::fmt;

/// Bytes of a Blosc 1.x chunk header.
pub const HEADER_LEN: usize = 16;
/// The largest `nbytes` c-blosc accepts.
pub const MAX_NBYTES: usize = i32::MAX as usize - HEADER_LEN;

/// Chunk flag: the data was byte-shuffled before compression.
pub const FLAG_SHUFFLE: u8 = 0x01;
/// Chunk flag: the data is stored uncompressed after the header.
pub const FLAG_MEMCPYED: u8 = 0x02;
/// Chunk flag: the data was bit-shuffled before compression.
pub const FLAG_BITSHUFFLE: u8 = 0x04;
/// Chunk flag: reserved by c-blosc, never set in a valid chunk.
pub const FLAG_RESERVED: u8 = 0x08;
/// Chunk flag: blocks are compressed whole rather than split per byte of the type.
pub const FLAG_DONT_SPLIT: u8 = 0x10;

/// A codec as bcolz names it in `meta/storage.cparams.cname`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Codec {
    /// Blosc's own LZ77 codec, `blosclz`.
    BloscLz,
    /// LZ4, `lz4`: bcolz's default.
    Lz4,
    /// LZ4 in high-compression mode, `lz4hc` (the same decoder as LZ4).
    Lz4hc,
    /// Snappy, `snappy`: only with the `bcolz-snappy` feature.
    Snappy,
    /// zlib deflate, `zlib`.
    Zlib,
    /// Zstandard, `zstd`.
    Zstd,
}

impl Codec {
    /// Every codec, in the order c-blosc numbers them.
    pub const ALL: [Codec; 6] = [
        Codec::BloscLz,
        Codec::Lz4,
        Codec::Lz4hc,
        Codec::Snappy,
        Codec::Zlib,
        Codec::Zstd,
    ];

    /// The codec's name in `cparams.cname` (`"lz4"`, …).
    pub fn name(self) -> &'static str {
        match self {
            Codec::BloscLz => "blosclz",
            Codec::Lz4 => "lz4",
            Codec::Lz4hc => "lz4hc",
            Codec::Snappy => "snappy",
            Codec::Zlib => "zlib",
            Codec::Zstd => "zstd",
        }
    }

    /// The codec named `name` as `cparams.cname` spells it, if there is one.
    pub fn from_name(name: &str) -> Option<Codec> {
        Codec::ALL.into_iter().find(|c| c.name() == name)
    }

    /// Whether this build of arrowsmith compiled the codec in.
    pub fn available(self) -> bool {
        self != Codec::Snappy || cfg!(feature = "bcolz-snappy")
    }

    /// The codec format number stored in bits 5–7 of a chunk's flags.
    fn format_code(self) -> u8 {
        match self {
            Codec::BloscLz => 0,
            Codec::Lz4 | Codec::Lz4hc => 1,
            Codec::Snappy => 2,
            Codec::Zlib => 3,
            Codec::Zstd => 4,
        }
    }
}

/// The name of the codec format stored in a chunk header (`flags >> 5`), if it is defined.
pub fn format_name(code: u8) -> Option<&'static str> {
    match code {
        0 => Some("blosclz"),
        1 => Some("lz4/lz4hc"),
        2 => Some("snappy"),
        3 => Some("zlib"),
        4 => Some("zstd"),
        _ => None,
    }
}

fn format_available(code: u8) -> bool {
    Codec::ALL
        .into_iter()
        .any(|c| c.format_code() == code && c.available())
}

/// Byte or bit shuffle before compression.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Shuffle {
    /// No shuffle (`cparams.shuffle` 0).
    None,
    /// Byte shuffle (1): bcolz's default.
    #[default]
    Byte,
    /// Bit shuffle (2).
    Bit,
}

impl Shuffle {
    /// The shuffle with bcolz's `cparams.shuffle` number, if it is defined.
    pub fn from_code(code: i64) -> Option<Shuffle> {
        match code {
            0 => Some(Shuffle::None),
            1 => Some(Shuffle::Byte),
            2 => Some(Shuffle::Bit),
            _ => None,
        }
    }
    /// The shuffle's `cparams.shuffle` number.
    pub fn code(self) -> u8 {
        match self {
            Shuffle::None => 0,
            Shuffle::Byte => 1,
            Shuffle::Bit => 2,
        }
    }
}

/// What is wrong with a chunk: a message and the byte offset (within the chunk) it concerns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BloscError {
    /// Byte offset in the chunk, when the problem has one.
    pub offset: Option<u64>,
    /// What is wrong.
    pub message: String,
}

impl BloscError {
    fn at(offset: u64, message: impl Into<String>) -> Self {
        BloscError {
            offset: Some(offset),
            message: message.into(),
        }
    }
    fn new(message: impl Into<String>) -> Self {
        BloscError {
            offset: None,
            message: message.into(),
        }
    }
}

impl fmt::Display for BloscError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.offset {
            Some(o) => write!(f, "at byte {o} of the Blosc chunk: {}", self.message),
            None => f.write_str(&self.message),
        }
    }
}

impl std::error::Error for BloscError {}

/// The 16-byte header of a Blosc 1.x chunk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChunkHeader {
    /// Blosc format version that wrote the chunk.
    pub version: u8,
    /// Version of the codec format inside.
    pub versionlz: u8,
    /// Shuffle, memcpy and codec bits (`FLAG_*`; the codec in bits 5–7).
    pub flags: u8,
    /// Bytes per item, as shuffling sees them.
    pub typesize: u8,
    /// Bytes of data once decompressed.
    pub nbytes: u32,
    /// Bytes per block, the unit c-blosc compresses separately.
    pub blocksize: u32,
    /// Bytes of the whole chunk, header included.
    pub cbytes: u32,
}

impl ChunkHeader {
    /// The codec format number in bits 5–7 of the flags (see [`format_name`]).
    pub fn codec_code(&self) -> u8 {
        self.flags >> 5
    }
    /// Whether the data is stored uncompressed ([`FLAG_MEMCPYED`]).
    pub fn memcpyed(&self) -> bool {
        self.flags & FLAG_MEMCPYED != 0
    }
    /// The shuffle recorded in the flags (a memcpyed chunk is never actually shuffled).
    pub fn shuffle(&self) -> Shuffle {
        if self.flags & FLAG_BITSHUFFLE != 0 {
            Shuffle::Bit
        } else if self.flags & FLAG_SHUFFLE != 0 {
            Shuffle::Byte
        } else {
            Shuffle::None
        }
    }
}

fn le_i32(bytes: &[u8], at: usize) -> i32 {
    i32::from_le_bytes(bytes[at..at + 4].try_into().expect("4 bytes"))
}

/// Parses and checks a chunk header (pure Rust; only the first 16 bytes are needed).
pub fn parse_header(chunk: &[u8]) -> Result<ChunkHeader, BloscError> {
    if chunk.len() < HEADER_LEN {
        return Err(BloscError::at(
            0,
            format!(
                "the chunk holds {} bytes, fewer than its 16-byte header",
                chunk.len()
            ),
        ));
    }
    let version = chunk[0];
    let versionlz = chunk[1];
    let flags = chunk[2];
    let typesize = chunk[3];
    if version != 2 {
        return Err(BloscError::at(
            0,
            format!("Blosc format version is {version}, expected 2"),
        ));
    }
    if versionlz != 1 {
        return Err(BloscError::at(
            1,
            format!("Blosc codec format version is {versionlz}, expected 1"),
        ));
    }
    if flags & FLAG_RESERVED != 0 {
        return Err(BloscError::at(
            2,
            format!("flags 0x{flags:02x} set the reserved bit 3"),
        ));
    }
    if format_name(flags >> 5).is_none() {
        return Err(BloscError::at(
            2,
            format!(
                "flags 0x{flags:02x} name codec format {}, which Blosc does not define",
                flags >> 5
            ),
        ));
    }
    if typesize == 0 {
        return Err(BloscError::at(3, "typesize is 0"));
    }
    let field = |at: usize, name: &str| -> Result<u32, BloscError> {
        let v = le_i32(chunk, at);
        u32::try_from(v).map_err(|_| BloscError::at(at as u64, format!("{name} is negative ({v})")))
    };
    let nbytes = field(4, "nbytes")?;
    let blocksize = field(8, "blocksize")?;
    let cbytes = field(12, "cbytes")?;
    if nbytes as usize > MAX_NBYTES {
        return Err(BloscError::at(
            4,
            format!("nbytes {nbytes} exceeds Blosc's limit of {MAX_NBYTES}"),
        ));
    }
    if (cbytes as usize) < HEADER_LEN {
        return Err(BloscError::at(
            12,
            format!("cbytes {cbytes} is smaller than the 16-byte header"),
        ));
    }
    Ok(ChunkHeader {
        version,
        versionlz,
        flags,
        typesize,
        nbytes,
        blocksize,
        cbytes,
    })
}

/// Checks everything c-blosc trusts before it is called: the slice is exactly `cbytes` long,
/// the codec is known and compiled in, and the block table fits.
fn check_before_decompress(chunk: &[u8], header: &ChunkHeader) -> Result<(), BloscError> {
    let cbytes = header.cbytes as usize;
    if chunk.len() != cbytes {
        return Err(BloscError::at(
            12,
            format!(
                "cbytes says the chunk is {cbytes} bytes, but {} bytes are there",
                chunk.len()
            ),
        ));
    }
    let nbytes = header.nbytes as usize;
    if header.memcpyed() {
        if cbytes != nbytes + HEADER_LEN {
            return Err(BloscError::at(
                12,
                format!(
                    "a memcpyed chunk must be nbytes + 16 = {} bytes, but cbytes is {cbytes}",
                    nbytes + HEADER_LEN
                ),
            ));
        }
        return Ok(());
    }
    if nbytes == 0 {
        return Ok(());
    }
    let code = header.codec_code();
    if !format_available(code) {
        let name = format_name(code).unwrap_or("unknown");
        return Err(BloscError::at(
            2,
            format!(
                "the chunk is compressed with {name}, which this build of arrowsmith does not \
                 include (rebuild with the cargo feature bcolz-snappy)"
            ),
        ));
    }
    let blocksize = header.blocksize as usize;
    if blocksize == 0 || blocksize > nbytes {
        return Err(BloscError::at(
            8,
            format!("blocksize {blocksize} must be between 1 and nbytes ({nbytes})"),
        ));
    }
    if blocksize > (i32::MAX as usize - 255 * 4) / 3 {
        return Err(BloscError::at(
            8,
            format!("blocksize {blocksize} is too large"),
        ));
    }
    let nblocks = nbytes.div_ceil(blocksize);
    let table_end = nblocks
        .checked_mul(4)
        .and_then(|t| t.checked_add(HEADER_LEN))
        .unwrap_or(usize::MAX);
    if table_end > cbytes {
        return Err(BloscError::at(
            16,
            format!("{nblocks} block starts do not fit in a chunk of {cbytes} bytes"),
        ));
    }
    Ok(())
}

/// Decompresses a whole chunk into `dst`, which must be exactly `nbytes` long.
pub fn decompress_into(chunk: &[u8], dst: &mut [u8]) -> Result<(), BloscError> {
    let header = parse_header(chunk)?;
    check_before_decompress(chunk, &header)?;
    let nbytes = header.nbytes as usize;
    if dst.len() != nbytes {
        return Err(BloscError::at(
            4,
            format!("nbytes is {nbytes}, but {} bytes were expected", dst.len()),
        ));
    }
    if nbytes == 0 {
        return Ok(());
    }
    if header.memcpyed() {
        dst.copy_from_slice(&chunk[HEADER_LEN..]);
        return Ok(());
    }
    // SAFETY: `chunk` is exactly `cbytes` bytes long (checked above), which is the bound c-blosc
    // range-checks every block start and split size against; `dst` is `nbytes` writable bytes
    // and c-blosc is told so. The ctx call uses no global state.
    let ret = unsafe {
        blosc_src::blosc_decompress_ctx(
            chunk.as_ptr().cast(),
            dst.as_mut_ptr().cast(),
            dst.len(),
            1,
        )
    };
    if ret < 0 || ret as usize != nbytes {
        return Err(BloscError::new(format!(
            "c-blosc failed to decompress the chunk (return code {ret}, expected {nbytes} bytes)"
        )));
    }
    Ok(())
}

/// Decompresses a whole chunk into a new 64-byte aligned Arrow buffer of its `nbytes`, which
/// must be exactly `expected` (checked before anything is allocated). The buffer is not zeroed
/// first: c-blosc writes every byte of it or the call is an error.
pub fn decompress_to_buffer(
    chunk: &[u8],
    expected: usize,
) -> Result<arrow_buffer::MutableBuffer, BloscError> {
    let header = parse_header(chunk)?;
    let nbytes = header.nbytes as usize;
    if nbytes != expected {
        return Err(BloscError::at(
            4,
            format!("nbytes is {nbytes}, but {expected} bytes were expected"),
        ));
    }
    check_before_decompress(chunk, &header)?;
    let mut out = arrow_buffer::MutableBuffer::with_capacity(nbytes);
    if nbytes == 0 {
        return Ok(out);
    }
    if header.memcpyed() {
        out.extend_from_slice(&chunk[HEADER_LEN..]);
        return Ok(out);
    }
    // SAFETY: as in `decompress_into`; `out` has room for `nbytes` bytes (its capacity) and
    // c-blosc is told exactly that.
    let ret = unsafe {
        blosc_src::blosc_decompress_ctx(chunk.as_ptr().cast(), out.as_mut_ptr().cast(), nbytes, 1)
    };
    if ret < 0 || ret as usize != nbytes {
        return Err(BloscError::new(format!(
            "c-blosc failed to decompress the chunk (return code {ret}, expected {nbytes} bytes)"
        )));
    }
    // SAFETY: c-blosc reported all `nbytes` bytes written.
    unsafe { out.set_len(nbytes) };
    Ok(out)
}

/// Decompresses a whole chunk into a new vector of its `nbytes`, which must be at most
/// `max_nbytes` (checked before anything is allocated).
pub fn decompress(chunk: &[u8], max_nbytes: usize) -> Result<Vec<u8>, BloscError> {
    let header = parse_header(chunk)?;
    let nbytes = header.nbytes as usize;
    if nbytes > max_nbytes {
        return Err(BloscError::at(
            4,
            format!("nbytes is {nbytes}, more than the {max_nbytes} bytes expected"),
        ));
    }
    check_before_decompress(chunk, &header)?;
    let mut out = vec![0u8; nbytes];
    decompress_into(chunk, &mut out)?;
    Ok(out)
}

/// Compresses `src` into one Blosc 1.x chunk (blocksize chosen by c-blosc, one thread).
pub fn compress(
    src: &[u8],
    typesize: usize,
    clevel: u8,
    shuffle: Shuffle,
    codec: Codec,
) -> Result<Vec<u8>, BloscError> {
    let mut out = Vec::new();
    compress_append(src, typesize, clevel, shuffle, codec, &mut out)?;
    Ok(out)
}

/// Compresses `src` into one Blosc 1.x chunk appended to `out`; returns the chunk's length
/// (cbytes). `out` keeps its capacity from call to call, so a reused vector costs neither an
/// allocation nor zeroing.
pub fn compress_append(
    src: &[u8],
    typesize: usize,
    clevel: u8,
    shuffle: Shuffle,
    codec: Codec,
    out: &mut Vec<u8>,
) -> Result<usize, BloscError> {
    if !codec.available() {
        return Err(BloscError::new(format!(
            "codec {} is not compiled into this build of arrowsmith (cargo feature bcolz-snappy)",
            codec.name()
        )));
    }
    if src.len() > MAX_NBYTES {
        return Err(BloscError::new(format!(
            "a chunk of {} bytes exceeds Blosc's limit of {MAX_NBYTES}",
            src.len()
        )));
    }
    if clevel > 9 {
        return Err(BloscError::new(format!("clevel {clevel} is not in 0..=9")));
    }
    let typesize = typesize.clamp(1, 255);
    let cname = CString::new(codec.name()).expect("codec names have no NUL");
    // c-blosc never needs more than the input plus its header (it stores the chunk memcpyed
    // when compressing does not pay).
    let room = src.len() + HEADER_LEN;
    out.reserve(room);
    let start = out.len();
    let dst = out.spare_capacity_mut();
    // SAFETY: `src` is readable for `src.len()` bytes; `dst` is the vector's spare capacity,
    // writable for at least `room` bytes, and c-blosc is told `room`; `cname` is a
    // NUL-terminated string that outlives the call. c-blosc writes only bytes it reports.
    let ret = unsafe {
        blosc_src::blosc_compress_ctx(
            clevel as i32,
            shuffle.code() as i32,
            typesize,
            src.len(),
            src.as_ptr().cast(),
            dst.as_mut_ptr().cast(),
            room,
            cname.as_ptr(),
            0,
            1,
        )
    };
    if ret <= 0 || ret as usize > room {
        return Err(BloscError::new(format!(
            "c-blosc failed to compress a chunk of {} bytes (return code {ret})",
            src.len()
        )));
    }
    // SAFETY: c-blosc initialised the first `ret` bytes of the spare capacity (checked ≤ room).
    unsafe { out.set_len(start + ret as usize) };
    Ok(ret as usize)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_every_codec_and_shuffle() {
        let data: Vec<u8> = (0..100_000u32)
            .flat_map(|i| (i / 7).to_le_bytes())
            .collect();
        for codec in Codec::ALL.into_iter().filter(|c| c.available()) {
            for shuffle in [Shuffle::None, Shuffle::Byte, Shuffle::Bit] {
                let chunk = compress(&data, 4, 5, shuffle, codec).unwrap();
                let header = parse_header(&chunk).unwrap();
                assert_eq!(header.nbytes as usize, data.len());
                assert_eq!(header.cbytes as usize, chunk.len());
                assert_eq!(decompress(&chunk, data.len()).unwrap(), data, "{codec:?}");
                let buffer = decompress_to_buffer(&chunk, data.len()).unwrap();
                assert_eq!(buffer.as_slice(), &data[..], "{codec:?}");
            }
        }
    }

    #[test]
    fn damaged_chunks_are_errors() {
        let data: Vec<u8> = (0..10_000u32).flat_map(|i| i.to_le_bytes()).collect();
        let chunk = compress(&data, 4, 5, Shuffle::Byte, Codec::Lz4).unwrap();
        // Truncated.
        assert!(decompress(&chunk[..chunk.len() - 1], data.len()).is_err());
        // Reserved flag, undefined codec, wrong version.
        for (at, value) in [(2, chunk[2] | 0x08), (2, (chunk[2] & 0x1f) | 0xE0), (0, 3)] {
            let mut bad = chunk.clone();
            bad[at] = value;
            assert!(decompress(&bad, data.len()).is_err());
        }
        // Garbage payload: c-blosc must report it, never return zeros.
        let mut bad = chunk.clone();
        for b in &mut bad[24..] {
            *b = 0xAB;
        }
        assert!(decompress(&bad, data.len()).is_err());
        // nbytes larger than allowed: no allocation.
        assert!(decompress(&chunk, 100).is_err());
        assert!(decompress_to_buffer(&chunk, 100).is_err());
        assert!(decompress_to_buffer(&bad, data.len()).is_err());
    }
}
