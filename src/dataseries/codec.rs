//! The eight compression modes of DSv1 (§13); the checksums are in [`super::checksum`].

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

#[cfg(test)]
mod tests {
    use super::*;

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
