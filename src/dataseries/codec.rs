//! The eight compression modes of DSv1 (§13), the lookup2 hash (§12.3) and adler32 (§12.1).

use std::io::Write;

use crate::error::{Error, ErrorClass, Result};

/// A compression mode id as stored in an extent header (§13.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Mode {
    /// Stored as is.
    None = 0,
    /// LZO1X (`lzo`).
    Lzo = 1,
    /// zlib deflate (`zlib`).
    Zlib = 2,
    /// bzip2 (`bz2`).
    Bz2 = 3,
    /// LZF (`lzf`).
    Lzf = 4,
    /// Snappy, raw (`snappy`).
    Snappy = 5,
    /// LZ4 block (`lz4`).
    Lz4 = 6,
    /// LZ4 block compressed in high-compression mode (`lz4hc`); LZ4 decodes it.
    Lz4Hc = 7,
}

impl Mode {
    /// Every mode, in id order.
    pub const ALL: [Mode; 8] = [
        Mode::None,
        Mode::Lzo,
        Mode::Zlib,
        Mode::Bz2,
        Mode::Lzf,
        Mode::Snappy,
        Mode::Lz4,
        Mode::Lz4Hc,
    ];

    /// The mode with this id, if the format defines it.
    pub fn from_id(id: u8) -> Option<Mode> {
        Mode::ALL.get(id as usize).copied()
    }

    /// The id stored in an extent header.
    pub fn id(self) -> u8 {
        self as u8
    }

    /// The mode's lower-case name (`"lz4"`, …), as the CLI and `inspect` spell it.
    pub fn name(self) -> &'static str {
        match self {
            Mode::None => "none",
            Mode::Lzo => "lzo",
            Mode::Zlib => "zlib",
            Mode::Bz2 => "bz2",
            Mode::Lzf => "lzf",
            Mode::Snappy => "snappy",
            Mode::Lz4 => "lz4",
            Mode::Lz4Hc => "lz4hc",
        }
    }

    /// The mode named `name`, if there is one.
    pub fn from_name(name: &str) -> Option<Mode> {
        Mode::ALL.iter().copied().find(|m| m.name() == name)
    }
}

/// Name of a mode id, or `unknown` for ids the format does not define.
pub fn mode_name(id: u8) -> &'static str {
    Mode::from_id(id).map(Mode::name).unwrap_or("unknown")
}

/// The largest expansion ratio of the LZ-family codecs (lzo, lzf, snappy, lz4) is well below
/// this; an expected size beyond `compressed * LZ_MAX_RATIO + 1024` cannot be real, so it is
/// rejected before anything that large is allocated.
const LZ_MAX_RATIO: usize = 300;

/// A [`ErrorClass::BadValue`] error about compressed data; the caller adds where it lies.
fn corrupt_data(message: impl Into<String>) -> Error {
    Error::new(ErrorClass::BadValue, message)
}

/// Decompresses `input` (mode `mode`) into `out`, appending exactly `expected` bytes
/// (at most `expected` when `exact` is false). An error is [`ErrorClass::BadValue`]; the caller
/// adds the extent it is in.
pub fn decompress(
    mode: Mode,
    input: &[u8],
    expected: usize,
    exact: bool,
    out: &mut Vec<u8>,
) -> Result<()> {
    let start = out.len();
    let target = Target {
        mode,
        expected,
        exact,
        input_len: input.len(),
    };
    match mode {
        Mode::None => {
            target.check_len(input.len())?;
            out.extend_from_slice(input);
        }
        Mode::Lzo => {
            target.check_lz_bound()?;
            out.reserve(expected.min(target.lz_cap()));
            lzo1x_decompress(input, expected, out)?;
        }
        Mode::Zlib => zlib_into(input, expected, out)?,
        Mode::Bz2 => bz2_into(input, expected, out)?,
        Mode::Lzf => {
            target.check_lz_bound()?;
            let v = lzf::decompress(input, expected.max(1))
                .map_err(|e| corrupt_data(format!("lzf data is corrupt: {e:?}")))?;
            target.check_len(v.len())?;
            out.extend_from_slice(&v);
        }
        Mode::Snappy => snappy_into(&target, input, out)?,
        Mode::Lz4 | Mode::Lz4Hc => lz4_into(&target, input, out)?,
    }
    target.check_len(out.len() - start)
}

/// What one decompression must produce, and the checks of what it did.
struct Target {
    mode: Mode,
    expected: usize,
    /// Exactly `expected` bytes, rather than at most.
    exact: bool,
    input_len: usize,
}

impl Target {
    fn check_len(&self, got: usize) -> Result<()> {
        if got > self.expected || (self.exact && got != self.expected) {
            Err(corrupt_data(format!(
                "{} data decompressed to {got} bytes, expected {}",
                self.mode.name(),
                self.expected
            )))
        } else {
            Ok(())
        }
    }

    /// The most an LZ-family codec can make of the input: more cannot be real.
    fn lz_cap(&self) -> usize {
        self.input_len
            .saturating_mul(LZ_MAX_RATIO)
            .saturating_add(1024)
    }

    /// Refuses an exact size the input cannot expand to, before it is allocated.
    fn check_lz_bound(&self) -> Result<()> {
        if self.exact && self.expected > self.lz_cap() {
            Err(corrupt_data(format!(
                "{} data of {} bytes cannot expand to the {} bytes claimed",
                self.mode.name(),
                self.input_len,
                self.expected
            )))
        } else {
            Ok(())
        }
    }
}

fn zlib_into(input: &[u8], expected: usize, out: &mut Vec<u8>) -> Result<()> {
    let mut d = flate2::Decompress::new(true);
    stream_into(out, expected, |buf| {
        let before_in = d.total_in() as usize;
        let before_out = d.total_out() as usize;
        let status = d
            .decompress(&input[before_in..], buf, flate2::FlushDecompress::Finish)
            .map_err(|e| corrupt_data(format!("zlib data is corrupt: {e}")))?;
        let produced = d.total_out() as usize - before_out;
        let consumed = d.total_in() as usize - before_in;
        Ok((produced, consumed, status == flate2::Status::StreamEnd))
    })
}

fn bz2_into(input: &[u8], expected: usize, out: &mut Vec<u8>) -> Result<()> {
    let mut d = bzip2::Decompress::new(false);
    stream_into(out, expected, |buf| {
        let before_in = d.total_in() as usize;
        let before_out = d.total_out() as usize;
        let status = d
            .decompress(&input[before_in..], buf)
            .map_err(|e| corrupt_data(format!("bz2 data is corrupt: {e}")))?;
        let produced = d.total_out() as usize - before_out;
        let consumed = d.total_in() as usize - before_in;
        Ok((produced, consumed, status == bzip2::Status::StreamEnd))
    })
}

/// Snappy states its decompressed length first: it is checked before the output is allocated.
fn snappy_into(target: &Target, input: &[u8], out: &mut Vec<u8>) -> Result<()> {
    let start = out.len();
    let len = snap::raw::decompress_len(input)
        .map_err(|e| corrupt_data(format!("snappy data is corrupt: {e}")))?;
    target.check_len(len)?;
    if len > target.lz_cap() {
        return Err(corrupt_data(format!(
            "snappy data of {} bytes cannot expand to the {len} bytes it claims",
            input.len()
        )));
    }
    out.resize(start + len, 0);
    let got = snap::raw::Decoder::new()
        .decompress(input, &mut out[start..])
        .map_err(|e| corrupt_data(format!("snappy data is corrupt: {e}")))?;
    target.check_len(got)?;
    out.truncate(start + got);
    Ok(())
}

fn lz4_into(target: &Target, input: &[u8], out: &mut Vec<u8>) -> Result<()> {
    let start = out.len();
    target.check_lz_bound()?;
    let cap = target.expected.min(target.lz_cap());
    out.resize(start + cap, 0);
    let got = lz4_flex::block::decompress_into(input, &mut out[start..])
        .map_err(|e| corrupt_data(format!("lz4 data is corrupt: {e}")))?;
    target.check_len(got)?;
    out.truncate(start + got);
    Ok(())
}

/// LZO1X decoding (the stream of `lzo1x_decompress_safe`) into `out`, producing at most `limit`
/// bytes. Written here rather than taken from lzokay-native, whose decoder indexes out of
/// bounds on some corrupt streams and has no output limit: every length, distance and read is
/// checked, so damaged data is an error and the output never outgrows `limit`.
fn lzo1x_decompress(input: &[u8], limit: usize, out: &mut Vec<u8>) -> Result<()> {
    let mut s = LzoStream {
        input,
        at: 0,
        out,
        start: 0,
        limit,
    };
    s.start = s.out.len();
    s.run()
}

struct LzoStream<'a> {
    input: &'a [u8],
    at: usize,
    out: &'a mut Vec<u8>,
    start: usize,
    limit: usize,
}

impl LzoStream<'_> {
    fn corrupt(what: &str) -> Error {
        corrupt_data(format!("lzo data is corrupt: {what}"))
    }

    fn byte(&mut self) -> Result<usize> {
        let b = *self
            .input
            .get(self.at)
            .ok_or_else(|| Self::corrupt("the stream ends inside an instruction"))?;
        self.at += 1;
        Ok(b as usize)
    }

    fn le16(&mut self) -> Result<usize> {
        Ok(self.byte()? | self.byte()? << 8)
    }

    /// A length whose instruction field was 0: `base` + 255 per zero byte + the first non-zero.
    fn long_length(&mut self, base: usize) -> Result<usize> {
        let mut n = base;
        loop {
            match self.byte()? {
                0 => n += 255,
                b => return Ok(n + b),
            }
            if n > self.limit {
                return Err(Self::corrupt("a length exceeds the expected output"));
            }
        }
    }

    fn room(&self, n: usize) -> Result<()> {
        if self.out.len() - self.start + n > self.limit {
            return Err(corrupt_data(format!(
                "lzo data expands past the expected {} bytes",
                self.limit
            )));
        }
        Ok(())
    }

    fn literals(&mut self, n: usize) -> Result<()> {
        let end = self
            .at
            .checked_add(n)
            .filter(|&e| e <= self.input.len())
            .ok_or_else(|| Self::corrupt("a literal run passes the end of the stream"))?;
        self.room(n)?;
        self.out.extend_from_slice(&self.input[self.at..end]);
        self.at = end;
        Ok(())
    }

    fn copy(&mut self, distance: usize, len: usize) -> Result<()> {
        if distance == 0 || distance > self.out.len() - self.start {
            return Err(Self::corrupt(
                "a match reaches before the start of the output",
            ));
        }
        self.room(len)?;
        let from = self.out.len() - distance;
        if distance >= len {
            self.out.extend_from_within(from..from + len);
        } else {
            // Overlapping: the match repeats bytes it is producing.
            for i in 0..len {
                let b = self.out[from + i];
                self.out.push(b);
            }
        }
        Ok(())
    }

    fn run(&mut self) -> Result<()> {
        // `state`: literals copied by the previous instruction (4 = a run of 4 or more), which
        // changes what instructions 0..15 mean.
        let mut state = 0usize;
        match self.input.first().copied() {
            Some(b @ 18..) => {
                self.at = 1;
                let n = b as usize - 17;
                self.literals(n)?;
                state = n.min(4);
            }
            Some(_) => {}
            None => return Err(Self::corrupt("the stream is empty")),
        }
        loop {
            let inst = self.byte()?;
            let (distance, len);
            if inst >= 64 {
                distance = (self.byte()? << 3) + ((inst >> 2) & 7) + 1;
                len = (inst >> 5) + 1;
                state = inst & 3;
            } else if inst >= 32 {
                len = match inst & 31 {
                    0 => self.long_length(31)?,
                    l => l,
                } + 2;
                let v = self.le16()?;
                distance = (v >> 2) + 1;
                state = v & 3;
            } else if inst >= 16 {
                len = match inst & 7 {
                    0 => self.long_length(7)?,
                    l => l,
                } + 2;
                let v = self.le16()?;
                let far = ((inst & 8) << 11) + (v >> 2);
                if far == 0 {
                    // The end marker.
                    if self.at != self.input.len() {
                        return Err(Self::corrupt("bytes follow the end marker"));
                    }
                    return Ok(());
                }
                distance = 16384 + far;
                state = v & 3;
            } else if state == 0 {
                let n = match inst {
                    0 => self.long_length(15)?,
                    l => l,
                } + 3;
                self.literals(n)?;
                state = 4;
                continue;
            } else if state < 4 {
                distance = (inst >> 2) + (self.byte()? << 2) + 1;
                len = 2;
                state = inst & 3;
            } else {
                distance = (inst >> 2) + (self.byte()? << 2) + 2049;
                len = 3;
                state = inst & 3;
            }
            self.copy(distance, len)?;
            self.literals(state)?;
        }
    }
}

/// Runs a streaming decompressor into `out`, growing the buffer only as data is produced, never
/// beyond `expected` bytes (one more byte is offered to detect a stream that is too long).
fn stream_into(
    out: &mut Vec<u8>,
    expected: usize,
    mut step: impl FnMut(&mut [u8]) -> Result<(usize, usize, bool)>,
) -> Result<()> {
    let start = out.len();
    let limit = expected + 1;
    let mut chunk = (expected + 1).clamp(1, 1 << 20);
    loop {
        let have = out.len() - start;
        let want = (have + chunk).min(limit);
        let filled = out.len();
        out.resize(start + want, 0);
        let (produced, consumed, end) = step(&mut out[filled..])?;
        out.truncate(filled + produced);
        if end {
            return Ok(());
        }
        if out.len() - start >= limit {
            return Err(corrupt_data(format!(
                "compressed data expands past the expected {expected} bytes"
            )));
        }
        if produced == 0 && consumed == 0 {
            return Err(corrupt_data(
                "compressed data ends before its stream is complete",
            ));
        }
        chunk = chunk.saturating_mul(2).min(64 << 20);
    }
}

/// liblz4's `LZ4HC_CLEVEL_DEFAULT`, the level of the deprecated `LZ4_compressHC`.
const LZ4HC_DEFAULT_LEVEL: i32 = 9;

/// Compresses `input` with `mode` at `level` (1..=9; only lzo/zlib/bz2 use it). `None` when
/// the codec cannot compress it (which makes the writer fall back to mode 0).
pub fn compress(mode: Mode, input: &[u8], level: u32) -> Option<Vec<u8>> {
    compress_in(mode, input, level, Vec::new())
}

/// [`compress`], writing into `buffer` where the codec's API lets it (lz4), so that a writer
/// can hand the same memory from one extent to the next.
fn compress_in(mode: Mode, input: &[u8], level: u32, buffer: Vec<u8>) -> Option<Vec<u8>> {
    match mode {
        Mode::None => Some(input.to_vec()),
        Mode::Lzo => lzokay_native::compress(input).ok(),
        Mode::Zlib => {
            let mut e = flate2::write::ZlibEncoder::new(
                Vec::with_capacity(input.len() / 2 + 64),
                flate2::Compression::new(level),
            );
            e.write_all(input).ok()?;
            e.finish().ok()
        }
        Mode::Bz2 => {
            let mut e = bzip2::write::BzEncoder::new(
                Vec::with_capacity(input.len() / 2 + 64),
                bzip2::Compression::new(level.clamp(1, 9)),
            );
            e.write_all(input).ok()?;
            e.finish().ok()
        }
        Mode::Lzf => lzf::compress(input).ok(),
        Mode::Snappy => snap::raw::Encoder::new().compress_vec(input).ok(),
        Mode::Lz4 => lz4_default(input, buffer),
        // The reference's `LZ4_compressHC` runs at liblz4's default HC level.
        Mode::Lz4Hc => lz4::block::compress(
            input,
            Some(lz4::block::CompressionMode::HIGHCOMPRESSION(
                LZ4HC_DEFAULT_LEVEL,
            )),
            false,
        )
        .ok(),
    }
}

/// liblz4's `LZ4_compress_default` (the reference's call) into `out`, given the compressed
/// bound's capacity. The `lz4` crate's `compress` zeroes the whole bound first, a megabyte for
/// every part of every extent, which showed in the writer's profile.
fn lz4_default(input: &[u8], mut out: Vec<u8>) -> Option<Vec<u8>> {
    let len = i32::try_from(input.len()).ok()?;
    // SAFETY: a pure function of its argument.
    let bound = unsafe { lz4::liblz4::LZ4_compressBound(len) };
    if bound <= 0 {
        return None;
    }
    out.clear();
    out.reserve(bound as usize);
    // SAFETY: `input` is valid for `len` bytes and `out` has room for `bound` bytes, the most
    // LZ4_compress_default writes; it returns how many it wrote, or 0 when it failed.
    let written = unsafe {
        lz4::liblz4::LZ4_compress_default(
            input.as_ptr().cast(),
            out.as_mut_ptr().cast(),
            len,
            bound,
        )
    };
    if written <= 0 {
        return None;
    }
    // SAFETY: the call initialised the first `written` bytes.
    unsafe { out.set_len(written as usize) };
    Some(out)
}

/// The reference writer's choice (§13.2): try each enabled mode in id order, keep a result
/// only if it is smaller than the input and strictly smaller than the best so far.
pub fn compress_best(modes: &[Mode], input: &[u8], level: u32) -> (Mode, Option<Vec<u8>>) {
    compress_best_in(modes, input, level, Vec::new)
}

/// [`compress_best`], each codec's output going into a buffer from `buffer` where it can.
pub(crate) fn compress_best_in(
    modes: &[Mode],
    input: &[u8],
    level: u32,
    mut buffer: impl FnMut() -> Vec<u8>,
) -> (Mode, Option<Vec<u8>>) {
    if input.is_empty() {
        return (Mode::None, None);
    }
    let mut best: Option<(Mode, Vec<u8>)> = None;
    let mut sorted: Vec<Mode> = modes.iter().copied().filter(|m| *m != Mode::None).collect();
    sorted.sort();
    sorted.dedup();
    for mode in sorted {
        if let Some(out) = compress_in(mode, input, level, buffer()) {
            let limit = best.as_ref().map_or(input.len(), |(_, b)| b.len());
            if out.len() < limit {
                best = Some((mode, out));
            }
        }
    }
    match best {
        Some((m, v)) => (m, Some(v)),
        None => (Mode::None, None),
    }
}

/// adler32 of an extent as stored: bytes [0, 16) then [20, end).
pub fn extent_adler32(extent: &[u8]) -> u32 {
    let mut a = simd_adler32::Adler32::new();
    a.write(&extent[..16]);
    a.write(&extent[20..]);
    a.finish()
}

/// The mixing step of Bob Jenkins' lookup2 hash (§12.3).
#[inline(always)]
pub fn mix(a: &mut u32, b: &mut u32, c: &mut u32) {
    *a = a.wrapping_sub(*b).wrapping_sub(*c) ^ (*c >> 13);
    *b = b.wrapping_sub(*c).wrapping_sub(*a) ^ (*a << 8);
    *c = c.wrapping_sub(*a).wrapping_sub(*b) ^ (*b >> 13);
    *a = a.wrapping_sub(*b).wrapping_sub(*c) ^ (*c >> 12);
    *b = b.wrapping_sub(*c).wrapping_sub(*a) ^ (*a << 16);
    *c = c.wrapping_sub(*a).wrapping_sub(*b) ^ (*b >> 5);
    *a = a.wrapping_sub(*b).wrapping_sub(*c) ^ (*c >> 3);
    *b = b.wrapping_sub(*c).wrapping_sub(*a) ^ (*a << 10);
    *c = c.wrapping_sub(*a).wrapping_sub(*b) ^ (*b >> 15);
}

/// Bob Jenkins' lookup2 `hash(k, length, initval)`, byte-oriented (§12.3).
pub fn lookup2(k: &[u8], initval: u32) -> u32 {
    lookup2_parts(None, k, k.len(), initval)
}

/// lookup2 of 4 zero bytes followed by `body`, without building that concatenation: the
/// variable area's hash (§12.2) when the area is borrowed from the file.
pub fn lookup2_zero_prefixed(body: &[u8], initval: u32) -> u32 {
    if body.len() < 8 {
        let mut k = [0u8; 12];
        k[4..4 + body.len()].copy_from_slice(body);
        return lookup2(&k[..4 + body.len()], initval);
    }
    let mut head = [0u8; 12];
    head[4..].copy_from_slice(&body[..8]);
    lookup2_parts(Some(&head), &body[8..], body.len() + 4, initval)
}

#[inline(always)]
fn word(b: &[u8]) -> u32 {
    u32::from_le_bytes([b[0], b[1], b[2], b[3]])
}

/// lookup2's running state between 12-byte blocks.
#[derive(Clone, Copy)]
struct Lookup2 {
    a: u32,
    b: u32,
    c: u32,
}

impl Lookup2 {
    #[inline(always)]
    fn new(initval: u32) -> Self {
        Lookup2 {
            a: 0x9e37_79b9,
            b: 0x9e37_79b9,
            c: initval,
        }
    }

    #[inline(always)]
    fn block(&mut self, ch: &[u8]) {
        self.a = self.a.wrapping_add(word(&ch[0..4]));
        self.b = self.b.wrapping_add(word(&ch[4..8]));
        self.c = self.c.wrapping_add(word(&ch[8..12]));
        mix(&mut self.a, &mut self.b, &mut self.c);
    }

    /// Hashes the rest of the input (its full blocks, then the tail) and ends; `total` is the
    /// length of the whole input.
    #[inline(always)]
    fn finish(mut self, rest: &[u8], total: usize) -> u32 {
        let mut chunks = rest.chunks_exact(12);
        for ch in &mut chunks {
            self.block(ch);
        }
        let r = chunks.remainder();
        self.c = self.c.wrapping_add(total as u32);
        let mut tail = [0u8; 12];
        tail[..r.len()].copy_from_slice(r);
        self.a = self.a.wrapping_add(word(&tail[0..4]));
        self.b = self.b.wrapping_add(word(&tail[4..8]));
        self.c = self
            .c
            .wrapping_add(u32::from_le_bytes([0, tail[8], tail[9], tail[10]]));
        mix(&mut self.a, &mut self.b, &mut self.c);
        self.c
    }
}

/// lookup2 of `head` (a first full 12-byte block, if any) then `rest`; `total` is their length.
fn lookup2_parts(head: Option<&[u8; 12]>, rest: &[u8], total: usize, initval: u32) -> u32 {
    let mut h = Lookup2::new(initval);
    if let Some(head) = head {
        h.block(head);
    }
    h.finish(rest, total)
}

/// `lookup2(inputs[l], inits[l])` for every lane `l`, computed together. One hash is a single
/// chain of dependent steps that leaves most of a core idle; the lanes' chains run side by
/// side, their common length as vectors (four lanes fit a 128-bit register: twice the speed
/// of two scalar chains interleaved, measured on 1 MiB inputs), each rest alone. Eight lanes
/// on x86_64 take the SSE2 kernel, a third less time again than four in the portable loop.
pub fn lookup2_lanes<const N: usize>(inputs: [&[u8]; N], inits: [u32; N]) -> [u32; N] {
    let common = inputs.iter().map(|x| x.len()).min().unwrap_or(0) / 12 * 12;
    let blocks: [&[u8]; N] = std::array::from_fn(|l| &inputs[l][..common]);
    let mut a = [0x9e37_79b9u32; N];
    let mut b = a;
    let mut c = inits;
    #[allow(unused_mut)]
    let mut vectorised = 0;
    #[cfg(target_arch = "x86_64")]
    if let (Ok(inputs), Ok(a), Ok(b), Ok(c)) = (
        <&[&[u8]; 8]>::try_from(&blocks[..]),
        <&mut [u32; 8]>::try_from(&mut a[..]),
        <&mut [u32; 8]>::try_from(&mut b[..]),
        <&mut [u32; 8]>::try_from(&mut c[..]),
    ) {
        vectorised = common / 48 * 48;
        lanes_sse2::blocks(inputs, vectorised, a, b, c);
    }
    for at in (vectorised..common).step_by(12) {
        for l in 0..N {
            let block = &blocks[l][at..at + 12];
            a[l] = a[l].wrapping_add(word(&block[0..4]));
            b[l] = b[l].wrapping_add(word(&block[4..8]));
            c[l] = c[l].wrapping_add(word(&block[8..12]));
        }
        // `mix`, one step for all lanes at a time, so that each step is a vector operation.
        macro_rules! step {
            ($x:ident, $y:ident, $z:ident, $shift:tt $by:literal) => {
                for l in 0..N {
                    $x[l] = $x[l].wrapping_sub($y[l]).wrapping_sub($z[l]) ^ ($z[l] $shift $by);
                }
            };
        }
        step!(a, b, c, >> 13);
        step!(b, c, a, << 8);
        step!(c, a, b, >> 13);
        step!(a, b, c, >> 12);
        step!(b, c, a, << 16);
        step!(c, a, b, >> 5);
        step!(a, b, c, >> 3);
        step!(b, c, a, << 10);
        step!(c, a, b, >> 15);
    }
    std::array::from_fn(|l| {
        Lookup2 {
            a: a[l],
            b: b[l],
            c: c[l],
        }
        .finish(&inputs[l][common..], inputs[l].len())
    })
}

/// How many inputs [`lookup2_many`] hashes at once: the lanes of its SSE2 kernel. Callers
/// that gather inputs for it (extents to seal or to verify) gather this many.
pub const LOOKUP2_LANES: usize = 8;

/// `lookup2(input, init)` of each input, [`LOOKUP2_LANES`] at a time ([`lookup2_lanes`]); a
/// short group fills its empty lanes with its first input, no dearer than leaving them.
pub fn lookup2_many(inputs: &[&[u8]], init: u32) -> Vec<u32> {
    let mut hashes = Vec::with_capacity(inputs.len());
    for group in inputs.chunks(LOOKUP2_LANES) {
        if let [one] = group {
            hashes.push(lookup2(one, init));
            continue;
        }
        let lanes: [&[u8]; LOOKUP2_LANES] =
            std::array::from_fn(|l| *group.get(l).unwrap_or(&group[0]));
        hashes.extend_from_slice(&lookup2_lanes(lanes, [init; LOOKUP2_LANES])[..group.len()]);
    }
    hashes
}

/// lookup2's blocks in SSE2 (every x86_64 CPU has it) for eight lanes, four to a register.
///
/// The portable loop leaves the words to the compiler, which gathers each lane's word into a
/// vector one at a time: three loads and inserts a block per lane, as many instructions as the
/// mix itself. Here each lane's next 48 bytes (four blocks) are three 16-byte loads, turned
/// into the lanes' word vectors by 4 × 4 transposes. And a mix is a chain of dependent steps:
/// one register of four lanes waits on it, two side by side keep the core busy.
#[cfg(target_arch = "x86_64")]
mod lanes_sse2 {
    use std::arch::x86_64::*;

    /// Runs lookup2's 12-byte blocks over `inputs[l][..len]` into lane `l` of `a`, `b`, `c`;
    /// `len` is a multiple of 48.
    pub(super) fn blocks(
        inputs: &[&[u8]; 8],
        len: usize,
        a: &mut [u32; 8],
        b: &mut [u32; 8],
        c: &mut [u32; 8],
    ) {
        assert!(len % 48 == 0 && inputs.iter().all(|x| x.len() >= len));
        // SAFETY: SSE2 is part of x86_64. Every load of an input reads 16 bytes at
        // `at + 16 * k` (k < 3) with `at + 48 <= len`, inside it (asserted above); the state
        // is read and written as two groups of four of its eight lanes.
        unsafe {
            let load =
                |v: &[u32; 8], g: usize| _mm_loadu_si128(v.as_ptr().add(4 * g) as *const __m128i);
            let mut va = [load(a, 0), load(a, 1)];
            let mut vb = [load(b, 0), load(b, 1)];
            let mut vc = [load(c, 0), load(c, 1)];
            // Words 4k..4k+4 of the four lanes of group `g`, one vector per word.
            let transposed = |g: usize, at: usize, k: usize| -> [__m128i; 4] {
                let row = |l: usize| {
                    _mm_loadu_si128(inputs[4 * g + l].as_ptr().add(at + 16 * k) as *const __m128i)
                };
                let (r0, r1, r2, r3) = (row(0), row(1), row(2), row(3));
                let t0 = _mm_unpacklo_epi32(r0, r1);
                let t1 = _mm_unpacklo_epi32(r2, r3);
                let t2 = _mm_unpackhi_epi32(r0, r1);
                let t3 = _mm_unpackhi_epi32(r2, r3);
                [
                    _mm_unpacklo_epi64(t0, t1),
                    _mm_unpackhi_epi64(t0, t1),
                    _mm_unpacklo_epi64(t2, t3),
                    _mm_unpackhi_epi64(t2, t3),
                ]
            };
            for at in (0..len).step_by(48) {
                let group = |g: usize| -> [__m128i; 12] {
                    let [w0, w1, w2] = [
                        transposed(g, at, 0),
                        transposed(g, at, 1),
                        transposed(g, at, 2),
                    ];
                    [
                        w0[0], w0[1], w0[2], w0[3], w1[0], w1[1], w1[2], w1[3], w2[0], w2[1],
                        w2[2], w2[3],
                    ]
                };
                let w = [group(0), group(1)];
                for block in 0..4 {
                    for g in 0..2 {
                        va[g] = _mm_add_epi32(va[g], w[g][3 * block]);
                        vb[g] = _mm_add_epi32(vb[g], w[g][3 * block + 1]);
                        vc[g] = _mm_add_epi32(vc[g], w[g][3 * block + 2]);
                    }
                    macro_rules! step {
                        ($x:ident, $y:ident, $z:ident, $shift:ident::<$by:literal>) => {
                            for g in 0..2 {
                                $x[g] = _mm_xor_si128(
                                    _mm_sub_epi32(_mm_sub_epi32($x[g], $y[g]), $z[g]),
                                    $shift::<$by>($z[g]),
                                );
                            }
                        };
                    }
                    step!(va, vb, vc, _mm_srli_epi32::<13>);
                    step!(vb, vc, va, _mm_slli_epi32::<8>);
                    step!(vc, va, vb, _mm_srli_epi32::<13>);
                    step!(va, vb, vc, _mm_srli_epi32::<12>);
                    step!(vb, vc, va, _mm_slli_epi32::<16>);
                    step!(vc, va, vb, _mm_srli_epi32::<5>);
                    step!(va, vb, vc, _mm_srli_epi32::<3>);
                    step!(vb, vc, va, _mm_slli_epi32::<10>);
                    step!(vc, va, vb, _mm_srli_epi32::<15>);
                }
            }
            let store = |v: &mut [u32; 8], x: [__m128i; 2]| {
                _mm_storeu_si128(v.as_mut_ptr() as *mut __m128i, x[0]);
                _mm_storeu_si128(v.as_mut_ptr().add(4) as *mut __m128i, x[1]);
            };
            store(a, va);
            store(b, vb);
            store(c, vc);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lookup2_vectors() {
        assert_eq!(lookup2(b"", 0), 0xbd49d10d);
        assert_eq!(lookup2(b"", 1972), 0x096a2819);
        assert_eq!(lookup2(b"", 1776), 0x25481311);
        assert_eq!(lookup2(b"DSv1", 1972), 0x962283ef);
        assert_eq!(lookup2(b"abcdefghijkl", 0), 0x0b1b3ea5);
        assert_eq!(lookup2(b"Four score and seven years ago", 1972), 0x4e89695a);
        let (mut a, mut b, mut c) = (0, 0, 1972);
        mix(&mut a, &mut b, &mut c);
        assert_eq!(c, 0x97d3d920);
    }

    #[test]
    fn lookup2_lanes_equal_single_hashes() {
        let data: Vec<u8> = (0..300u32).map(|i| (i * 131 % 251) as u8).collect();
        let lengths = [
            0, 1, 11, 12, 13, 24, 36, 37, 47, 48, 49, 60, 95, 96, 100, 199, 200, 300,
        ];
        for (k, &x_len) in lengths.iter().enumerate() {
            for &y_len in &lengths[k..] {
                let z_len = (x_len + y_len) / 2;
                let inputs = [
                    &data[..x_len],
                    &data[300 - y_len..],
                    &data[7..7 + z_len / 2],
                    &data[..z_len],
                ];
                let inits = [1972, 7, 0, u32::MAX];
                let want: Vec<u32> = inputs
                    .iter()
                    .zip(inits)
                    .map(|(x, i)| lookup2(x, i))
                    .collect();
                assert_eq!(
                    lookup2_lanes(inputs, inits).to_vec(),
                    want,
                    "{x_len} {y_len} {z_len}"
                );
                assert_eq!(
                    lookup2_lanes([inputs[0], inputs[1]], [inits[0], inits[1]]).to_vec(),
                    want[..2],
                );
                // Eight lanes: two vector registers, each lane's data and init its own.
                let eight: [&[u8]; 8] = std::array::from_fn(|l| match l {
                    0..4 => inputs[l],
                    _ => &data[l..l + inputs[l - 4].len().min(300 - l)],
                });
                let inits8: [u32; 8] = std::array::from_fn(|l| 0x9e37_79b9 ^ (l as u32 * 977));
                let want8: Vec<u32> = eight
                    .iter()
                    .zip(inits8)
                    .map(|(x, i)| lookup2(x, i))
                    .collect();
                assert_eq!(lookup2_lanes(eight, inits8).to_vec(), want8);
            }
        }
    }

    #[test]
    fn zero_prefixed_lookup2_equals_lookup2_of_the_concatenation() {
        let body: Vec<u8> = (0..100u8).map(|i| i.wrapping_mul(37)).collect();
        for len in 0..body.len() {
            let mut whole = vec![0u8; 4];
            whole.extend_from_slice(&body[..len]);
            assert_eq!(
                lookup2_zero_prefixed(&body[..len], 1972 + len as u32),
                lookup2(&whole, 1972 + len as u32),
                "{len} bytes"
            );
        }
    }

    #[test]
    fn lz4hc_parts_are_real_high_compression_lz4_blocks() {
        // Trace-like records: a counter, a few repeated words and a slowly changing value.
        let mut data = Vec::new();
        for i in 0u32..20_000 {
            data.extend_from_slice(&(i / 3).to_le_bytes());
            data.extend_from_slice([b"read ", b"write", b"open "][(i % 3) as usize]);
            data.extend_from_slice(&((i * 7919) % 113).to_le_bytes());
        }
        let fast = compress(Mode::Lz4, &data, 9).unwrap();
        let high = compress(Mode::Lz4Hc, &data, 9).unwrap();
        assert!(
            high.len() < fast.len(),
            "HC {} bytes, plain {} bytes",
            high.len(),
            fast.len()
        );
        for (mode, packed) in [(Mode::Lz4Hc, &high), (Mode::Lz4, &high)] {
            let mut out = Vec::new();
            decompress(mode, packed, data.len(), true, &mut out).unwrap();
            assert_eq!(out, data, "{}", mode.name());
        }
        assert_eq!(
            lz4_flex::block::decompress(&high, data.len()).unwrap(),
            data
        );
        // With both enabled, the reference's rule picks the smaller HC part.
        assert_eq!(
            compress_best(&[Mode::Lz4, Mode::Lz4Hc], &data, 9).0,
            Mode::Lz4Hc
        );
    }

    #[test]
    fn lzo_decoder_reads_what_lzokay_writes_and_refuses_damage() {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        // Runs, repeats near and far (past 16 KiB and 48 KiB), and noise.
        let mut data = Vec::new();
        for i in 0..120_000usize {
            let r = next();
            match r % 4 {
                0 => data.push((r >> 8) as u8),
                1 => data.push(0),
                2 if data.len() > 20_000 => {
                    let b = data[data.len() - 17_000 + (i % 7)];
                    data.push(b)
                }
                _ => data.extend_from_slice(b"abcabc"),
            }
        }
        for len in [1usize, 3, 4, 5, 17, 18, 300, 5000, data.len()] {
            let packed = lzokay_native::compress(&data[..len]).unwrap();
            let mut out = vec![7u8];
            lzo1x_decompress(&packed, len, &mut out).unwrap();
            assert_eq!(&out[1..], &data[..len], "{len} bytes");
            if len > 0 {
                let mut out = Vec::new();
                assert!(lzo1x_decompress(&packed, len - 1, &mut out).is_err());
                assert!(out.len() < len, "the limit holds while decoding");
            }
            for cut in [0, packed.len() / 2, packed.len() - 1] {
                assert!(lzo1x_decompress(&packed[..cut], len, &mut Vec::new()).is_err());
            }
        }
        // Every single-byte change: an error or some output, never more than the limit.
        let packed = lzokay_native::compress(&data[..5000]).unwrap();
        for i in 0..packed.len() {
            for flip in [0x01u8, 0x80, 0xff] {
                let mut p = packed.clone();
                p[i] ^= flip;
                let mut out = Vec::new();
                let _ = lzo1x_decompress(&p, 5000, &mut out);
                assert!(out.len() <= 5000);
            }
        }
        // A match before the start of the output.
        let stream = [18, b'A', 0x00, 0x10, 0x11, 0, 0];
        let e = lzo1x_decompress(&stream, 100, &mut Vec::new()).unwrap_err();
        assert!(e.message().contains("before the start"), "{e}");
        // Bytes after the end marker.
        let e = lzo1x_decompress(&[18, b'A', 0x11, 0, 0, 0], 100, &mut Vec::new()).unwrap_err();
        assert!(e.message().contains("follow the end marker"), "{e}");
        let mut out = Vec::new();
        lzo1x_decompress(&[18, b'A', 0x11, 0, 0], 100, &mut out).unwrap();
        assert_eq!(out, b"A");
    }

    #[test]
    fn every_mode_round_trips_and_rejects_wrong_lengths() {
        let data: Vec<u8> = (0..5000u32).flat_map(|i| (i % 97).to_le_bytes()).collect();
        for mode in Mode::ALL {
            let packed = compress(mode, &data, 6).unwrap();
            let mut out = vec![9u8];
            decompress(mode, &packed, data.len(), true, &mut out).unwrap();
            assert_eq!(&out[1..], &data[..], "{mode:?}");
            let mut out = Vec::new();
            assert!(decompress(mode, &packed, data.len() + 8, true, &mut out).is_err());
            let mut out = Vec::new();
            assert!(decompress(mode, &packed, data.len() - 8, true, &mut out).is_err());
        }
    }
}
