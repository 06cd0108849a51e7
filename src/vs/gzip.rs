//! RFC 1952 gzip members around raw deflate, with one inflater / deflater reused for every
//! vector (spec §6.2).
//!
//! Each compressed vector is its own gzip member of a few hundred bytes. Setting up a fresh
//! zlib stream per member (what `flate2`'s `GzDecoder` / `GzEncoder` do) costs more than
//! inflating the member, so the container is handled here and one `flate2::Decompress` /
//! `flate2::Compress` is reset between vectors. The checks follow RFC 1952 §2.3 and what
//! `flate2::read::MultiGzDecoder` enforces: ID1 ID2 = 1F 8B, CM = 8, reserved flag bits zero, the
//! optional header fields, FHCRC when present, then CRC32 and ISIZE of every member; concatenated
//! members are accepted and anything after the last member that is not a member is an error.

use flate2::{Compress, Crc, Decompress, FlushCompress, FlushDecompress, Status};

const FHCRC: u8 = 1 << 1;
const FEXTRA: u8 = 1 << 2;
const FNAME: u8 = 1 << 3;
const FCOMMENT: u8 = 1 << 4;
const RESERVED_FLAGS: u8 = 0xE0;

/// Why gzip data could not be inflated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GunzipError {
    /// Not valid gzip data; the text says what is wrong.
    Corrupt(String),
    /// The data inflates to more than the cap.
    TooLarge,
}

fn corrupt(message: impl Into<String>) -> GunzipError {
    GunzipError::Corrupt(message.into())
}

/// One raw-deflate inflater, reset for each gzip member.
pub struct Gunzip {
    inflater: Decompress,
}

impl Default for Gunzip {
    fn default() -> Self {
        Gunzip {
            inflater: Decompress::new(false),
        }
    }
}

impl Gunzip {
    /// Inflates every member of `data` into `out` (replacing its contents), never writing more
    /// than `cap` + 1 bytes: more than `cap` is [`GunzipError::TooLarge`].
    pub fn inflate(
        &mut self,
        data: &[u8],
        cap: usize,
        out: &mut Vec<u8>,
    ) -> Result<(), GunzipError> {
        let limit = cap.saturating_add(1);
        out.clear();
        let mut filled = 0usize;
        let mut pos = 0usize;
        loop {
            pos += member_header(&data[pos..])?;
            self.inflater.reset(false);
            let member_start = filled;
            loop {
                if filled == out.len() {
                    if filled >= limit {
                        return Err(GunzipError::TooLarge);
                    }
                    // Plain vectors are small and usually near the cap (the exact size for
                    // fixed-width types): start at the cap when it is modest.
                    let grow = if limit <= 1 << 20 {
                        limit
                    } else {
                        filled.max(data.len() * 4).max(4096)
                    };
                    out.resize(filled.saturating_add(grow).min(limit), 0);
                }
                let before_in = self.inflater.total_in();
                let before_out = self.inflater.total_out();
                let status = self
                    .inflater
                    .decompress(&data[pos..], &mut out[filled..], FlushDecompress::None)
                    .map_err(|e| corrupt(format!("invalid deflate data: {e}")))?;
                let used = (self.inflater.total_in() - before_in) as usize;
                let made = (self.inflater.total_out() - before_out) as usize;
                pos += used;
                filled += made;
                match status {
                    Status::StreamEnd => break,
                    Status::Ok | Status::BufError => {
                        if used == 0 && made == 0 && filled < out.len() {
                            return Err(corrupt("unexpected end of gzip data"));
                        }
                    }
                }
            }
            if filled > cap {
                return Err(GunzipError::TooLarge);
            }
            let Some(trailer) = data.get(pos..pos + 8) else {
                return Err(corrupt("truncated gzip trailer"));
            };
            pos += 8;
            let mut crc = Crc::new();
            crc.update(&out[member_start..filled]);
            let stored_crc = u32::from_le_bytes(trailer[..4].try_into().expect("4 bytes"));
            let stored_size = u32::from_le_bytes(trailer[4..].try_into().expect("4 bytes"));
            if crc.sum() != stored_crc {
                return Err(corrupt(format!(
                    "CRC32 mismatch: the trailer says {stored_crc:08X}, the data has {:08X}",
                    crc.sum()
                )));
            }
            if (filled - member_start) as u32 != stored_size {
                return Err(corrupt(format!(
                    "ISIZE mismatch: the trailer says {stored_size} bytes, the member inflates to {}",
                    filled - member_start
                )));
            }
            if pos == data.len() {
                break;
            }
        }
        out.truncate(filled);
        Ok(())
    }
}

/// The length of the member header at the start of `data` (RFC 1952 §2.3).
fn member_header(data: &[u8]) -> Result<usize, GunzipError> {
    let truncated = || corrupt("truncated gzip header");
    let fixed = data.get(..10).ok_or_else(truncated)?;
    if fixed[0] != 0x1F || fixed[1] != 0x8B {
        return Err(corrupt(format!(
            "invalid gzip header: {:02X} {:02X} instead of 1F 8B",
            fixed[0], fixed[1]
        )));
    }
    if fixed[2] != 8 {
        return Err(corrupt(format!(
            "invalid gzip header: compression method {} (only 8, deflate, exists)",
            fixed[2]
        )));
    }
    let flags = fixed[3];
    if flags & RESERVED_FLAGS != 0 {
        return Err(corrupt(format!(
            "invalid gzip header: reserved flag bits set (FLG {flags:02X})"
        )));
    }
    let mut pos = 10;
    if flags & FEXTRA != 0 {
        let xlen = data.get(pos..pos + 2).ok_or_else(truncated)?;
        pos += 2 + u16::from_le_bytes([xlen[0], xlen[1]]) as usize;
        if pos > data.len() {
            return Err(truncated());
        }
    }
    for field in [FNAME, FCOMMENT] {
        if flags & field != 0 {
            let end = data[pos..]
                .iter()
                .position(|&b| b == 0)
                .ok_or_else(truncated)?;
            pos += end + 1;
        }
    }
    if flags & FHCRC != 0 {
        let stored = data.get(pos..pos + 2).ok_or_else(truncated)?;
        let mut crc = Crc::new();
        crc.update(&data[..pos]);
        if crc.sum() as u16 != u16::from_le_bytes([stored[0], stored[1]]) {
            return Err(corrupt("gzip header CRC16 mismatch"));
        }
        pos += 2;
    }
    Ok(pos)
}

/// One raw-deflate compressor at the default level (6), reset for each vector.
pub struct Gzip {
    deflater: Compress,
}

impl Default for Gzip {
    fn default() -> Self {
        Gzip {
            deflater: Compress::new(flate2::Compression::default(), false),
        }
    }
}

impl Gzip {
    /// Appends one gzip member holding `plain` to `out`: the bytes `flate2::write::GzEncoder`
    /// writes at the default level (no name, mtime 0, XFL 0, OS 255 "unknown").
    pub fn compress(&mut self, plain: &[u8], out: &mut Vec<u8>) {
        out.extend_from_slice(&[0x1F, 0x8B, 8, 0, 0, 0, 0, 0, 0, 0xFF]);
        self.deflater.reset();
        let mut input = plain;
        loop {
            // Deflate's worst case is a few bytes per 16 KiB block over the input.
            out.reserve(input.len() + input.len() / 1000 + 64);
            let before = self.deflater.total_in();
            let status = self
                .deflater
                .compress_vec(input, out, FlushCompress::Finish)
                .expect("deflating into a Vec with room cannot fail");
            input = &input[(self.deflater.total_in() - before) as usize..];
            if status == Status::StreamEnd {
                break;
            }
        }
        let mut crc = Crc::new();
        crc.update(plain);
        out.extend_from_slice(&crc.sum().to_le_bytes());
        out.extend_from_slice(&(plain.len() as u32).to_le_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::io::{Read, Write};

    /// The container as `flate2` reads it: the reference for verdicts and output.
    fn reference(data: &[u8], cap: usize) -> Result<Vec<u8>, ()> {
        let mut decoder = flate2::read::MultiGzDecoder::new(data);
        let mut out = Vec::new();
        (&mut decoder)
            .take(cap as u64 + 1)
            .read_to_end(&mut out)
            .map_err(|_| ())?;
        if out.len() > cap || !decoder.into_inner().is_empty() {
            return Err(());
        }
        Ok(out)
    }

    fn member(plain: &[u8], builder: flate2::GzBuilder) -> Vec<u8> {
        let mut encoder = builder.write(Vec::new(), flate2::Compression::new(3));
        encoder.write_all(plain).unwrap();
        encoder.finish().unwrap()
    }

    #[test]
    fn writes_what_gz_encoder_writes() {
        let plain: Vec<u8> = (0..5000u32).map(|i| (i * 7 % 251) as u8).collect();
        let mut gzip = Gzip::default();
        for chunk in [&plain[..0], &plain[..1], &plain[..512], &plain[..]] {
            let mut mine = Vec::new();
            gzip.compress(chunk, &mut mine);
            let mut encoder =
                flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
            encoder.write_all(chunk).unwrap();
            assert_eq!(mine, encoder.finish().unwrap());
            let mut back = Vec::new();
            Gunzip::default()
                .inflate(&mine, chunk.len(), &mut back)
                .unwrap();
            assert_eq!(back, chunk);
        }
    }

    #[test]
    fn header_fields_and_checks() {
        let plain = b"the quick brown fox jumps over the lazy dog".repeat(3);
        let full = member(
            &plain,
            flate2::GzBuilder::new()
                .filename("v.bin")
                .comment("c")
                .extra(vec![1, 2, 3])
                .mtime(7),
        );
        let mut out = Vec::new();
        let mut gunzip = Gunzip::default();
        gunzip.inflate(&full, plain.len(), &mut out).unwrap();
        assert_eq!(out, plain);
        // FHCRC (flate2 cannot write it): header CRC16 over the 10 fixed bytes.
        let mut with_hcrc = full[..10].to_vec();
        with_hcrc[3] = FHCRC;
        let mut crc = Crc::new();
        crc.update(&with_hcrc);
        with_hcrc.extend_from_slice(&(crc.sum() as u16).to_le_bytes());
        let plain_member = member(&plain, flate2::GzBuilder::new());
        with_hcrc.extend_from_slice(&plain_member[10..]);
        assert_eq!(reference(&with_hcrc, 1000).unwrap(), plain);
        gunzip.inflate(&with_hcrc, 1000, &mut out).unwrap();
        assert_eq!(out, plain);
        with_hcrc[10] ^= 1;
        assert!(reference(&with_hcrc, 1000).is_err());
        assert!(matches!(
            gunzip.inflate(&with_hcrc, 1000, &mut out),
            Err(GunzipError::Corrupt(m)) if m.contains("CRC16")
        ));
        // Data CRC and ISIZE.
        let n = plain_member.len();
        for at in [n - 8, n - 1] {
            let mut bad = plain_member.clone();
            bad[at] ^= 0x10;
            assert!(reference(&bad, 1000).is_err());
            let e = gunzip.inflate(&bad, 1000, &mut out).unwrap_err();
            assert!(format!("{e:?}").contains(if at == n - 8 { "CRC32" } else { "ISIZE" }));
        }
        // Too large for the cap, and exactly the cap.
        assert_eq!(
            gunzip.inflate(&plain_member, plain.len() - 1, &mut out),
            Err(GunzipError::TooLarge)
        );
        gunzip
            .inflate(&plain_member, plain.len(), &mut out)
            .unwrap();
        // Trailing bytes that are no member.
        let mut trailing = plain_member.clone();
        trailing.push(0);
        assert!(reference(&trailing, 1000).is_err());
        assert!(gunzip.inflate(&trailing, 1000, &mut out).is_err());
    }

    fn flags_strategy() -> impl Strategy<Value = (bool, bool, bool, u32)> {
        (any::<bool>(), any::<bool>(), any::<bool>(), any::<u32>())
    }

    proptest! {
        /// Concatenated members with any header fields inflate like `MultiGzDecoder`, and any
        /// damage is refused whenever `MultiGzDecoder` refuses it.
        #[test]
        fn agrees_with_multi_gz_decoder(
            plain in proptest::collection::vec(0u8..4, 0..3000),
            cuts in proptest::collection::vec(0usize..3000, 0..3),
            flags in flags_strategy(),
            cap_slack in -3i64..3,
            damage in proptest::option::of((any::<usize>(), any::<u8>())),
            truncate in proptest::option::of(any::<usize>()),
        ) {
            let mut cuts: Vec<usize> = cuts.into_iter().map(|c| c.min(plain.len())).collect();
            cuts.push(0);
            cuts.push(plain.len());
            cuts.sort_unstable();
            let mut data = Vec::new();
            for w in cuts.windows(2) {
                let (name, comment, extra, mtime) = flags;
                let mut b = flate2::GzBuilder::new().mtime(mtime);
                if name { b = b.filename("n"); }
                if comment { b = b.comment("a comment"); }
                if extra { b = b.extra(vec![9; 5]); }
                data.extend_from_slice(&member(&plain[w[0]..w[1]], b));
            }
            if let Some((at, xor)) = damage {
                let at = at % data.len();
                data[at] ^= xor;
            }
            if let Some(len) = truncate {
                data.truncate(1 + len % data.len());
            }
            let cap = (plain.len() as i64 + cap_slack).max(0) as usize;
            let expected = reference(&data, cap);
            let mut out = vec![7; 3];
            let got = Gunzip::default().inflate(&data, cap, &mut out);
            match expected {
                Ok(bytes) => {
                    prop_assert_eq!(got, Ok(()));
                    prop_assert_eq!(out, bytes);
                }
                Err(()) => prop_assert!(got.is_err()),
            }
        }
    }
}
