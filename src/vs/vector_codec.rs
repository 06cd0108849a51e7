//! Vector compression with state and buffers kept from one vector to the next (spec §6.2).
//!
//! A file holds one compressed stream per point, each a few hundred bytes; per-vector decoder
//! setup and output allocations would cost more than the decompression itself. A reader or
//! writer task keeps one [`VectorDecoder`] / [`VectorEncoder`] for all the vectors it handles.

use std::io::Read;

use super::codec::{block_error, Meta, Point, POINT};
use super::gzip::{Gunzip, GunzipError, Gzip};
use super::mapping::Compression;
use crate::error::{Error, ErrorClass, Result};

/// Decompresses the vectors of one reader task, reusing its inflater and output buffer.
#[derive(Default)]
pub struct VectorDecoder {
    gunzip: Option<Gunzip>,
    snappy: snap::raw::Decoder,
    plain: Vec<u8>,
}

/// The start of a stream in the Snappy framing format.
const SNAPPY_STREAM_ID: &[u8] = &[0xFF, 0x06, 0x00, 0x00, 0x73, 0x4E, 0x61, 0x50, 0x70, 0x59];

fn corrupt(what: &str, e: impl std::fmt::Display) -> Error {
    Error::new(
        ErrorClass::BadValue,
        format!("corrupt compressed vector: {what}: {e}"),
    )
}

fn too_large(what: &str, cap: usize) -> Error {
    Error::new(
        ErrorClass::BufferSize,
        format!("vector length mismatch: {what} data inflates to more than {cap} bytes"),
    )
}

fn read_capped(reader: impl Read, cap: usize, what: &str) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    let limit = (cap as u64).saturating_add(1);
    reader
        .take(limit)
        .read_to_end(&mut out)
        .map_err(|e| corrupt(what, e))?;
    if out.len() > cap {
        return Err(too_large(what, cap));
    }
    Ok(out)
}

/// The Snappy framing format (rare: accepted on read, never written), through `snap`'s reader.
fn unsnap_framed(stored: &[u8], cap: usize) -> Result<Vec<u8>> {
    read_capped(snap::read::FrameDecoder::new(stored), cap, "snappy")
}

impl VectorDecoder {
    /// The plain vector bytes of a point: decompressed, bounded and size-checked. Borrowed from
    /// the file when stored plain, else from this decoder's buffer (valid until its next use).
    pub fn plain<'s, 'a: 's>(
        &'s mut self,
        point: &Point<'a>,
        meta: &Meta,
        max_variable: usize,
    ) -> Result<&'s [u8]> {
        let err = |e: Error| {
            block_error(
                POINT,
                point.offset,
                e.class(),
                format!("vector: {}", e.message()),
            )
        };
        let code = point.vec_option & 0x07;
        // Exact size for fixed types; an upper bound for STRING/JSON.
        let expected = meta.resolution.plain_size(meta.n);
        let cap = expected.unwrap_or(max_variable);
        let stored = point.stored;
        let plain: &[u8] = match code {
            0 => stored,
            1 | 2 => {
                if stored.is_empty() {
                    return Err(err(Error::new(
                        ErrorClass::BadValue,
                        "corrupt compressed vector: empty compressed data",
                    )));
                }
                if code == 1 && stored.starts_with(&[0x1F, 0x8B]) {
                    let gunzip = self.gunzip.get_or_insert_with(Gunzip::default);
                    gunzip
                        .inflate(stored, cap, &mut self.plain)
                        .map_err(|e| match e {
                            GunzipError::Corrupt(m) => corrupt("gzip", m),
                            GunzipError::TooLarge => too_large("gzip", cap),
                        })
                        .map_err(err)?;
                } else if stored.starts_with(SNAPPY_STREAM_ID) {
                    self.plain = unsnap_framed(stored, cap).map_err(err)?;
                } else {
                    self.unsnap_raw(stored, expected, cap).map_err(err)?;
                }
                &self.plain
            }
            c => {
                return Err(err(Error::new(
                    ErrorClass::Unsupported,
                    format!("unsupported compression code {c}"),
                )))
            }
        };
        if let Some(expected) = expected {
            if plain.len() != expected {
                return Err(err(Error::new(
                    ErrorClass::BufferSize,
                    format!(
                        "vector length mismatch: {} bytes, expected {expected} for {} {} elements",
                        plain.len(),
                        meta.n,
                        meta.resolution.name()
                    ),
                )));
            }
        }
        Ok(plain)
    }

    fn unsnap_raw(&mut self, stored: &[u8], expected: Option<usize>, cap: usize) -> Result<()> {
        let len = snap::raw::decompress_len(stored).map_err(|e| corrupt("snappy", e))?;
        match expected {
            Some(expected) if len != expected => {
                return Err(Error::new(
                    ErrorClass::BufferSize,
                    format!("vector length mismatch: snappy data announces {len} bytes, expected {expected}"),
                ))
            }
            None if len > cap => {
                return Err(Error::new(
                    ErrorClass::BufferSize,
                    format!("vector length mismatch: snappy data announces {len} bytes, more than the limit {cap}"),
                ))
            }
            _ => {}
        }
        // Snappy's densest element is a 3-byte copy of 64 bytes, so no stream expands more than
        // 64/3 times. The announced length is the meta block's claim repeated, which only bounds
        // it loosely (a 93-byte point announced 256 MiB), so it is held to what the bytes can give
        // before anything is allocated for it.
        let most = stored.len().saturating_mul(64) / 3;
        if len > most {
            return Err(Error::new(
                ErrorClass::BufferSize,
                format!(
                    "vector length mismatch: snappy data of {} bytes announces {len} bytes, more \
                     than it can decompress to (at most {most})",
                    stored.len()
                ),
            ));
        }
        // Within the checked bound; `resize` only writes what grows past the last vector.
        self.plain.resize(len, 0);
        let written = self
            .snappy
            .decompress(stored, &mut self.plain)
            .map_err(|e| corrupt("snappy", e))?;
        self.plain.truncate(written);
        Ok(())
    }
}

/// Compresses the vectors of one writer task, reusing its compressor state and buffer.
#[derive(Default)]
pub struct VectorEncoder {
    gzip: Option<Gzip>,
    snappy: Option<snap::raw::Encoder>,
    stored: Vec<u8>,
}

impl VectorEncoder {
    /// The option-byte code and the stored bytes of `plain`; empty vectors are always stored
    /// plain (spec §6.2). The bytes borrow `plain` or this encoder's buffer.
    pub fn compress<'s, 'p: 's>(
        &'s mut self,
        plain: &'p [u8],
        compression: Compression,
    ) -> Result<(u8, &'s [u8])> {
        if plain.is_empty() {
            return Ok((0, plain));
        }
        match compression {
            Compression::None => Ok((0, plain)),
            Compression::Gzip => {
                self.stored.clear();
                self.gzip
                    .get_or_insert_with(Gzip::default)
                    .compress(plain, &mut self.stored);
                Ok((1, &self.stored))
            }
            Compression::Snappy => {
                self.stored
                    .resize(snap::raw::max_compress_len(plain.len()), 0);
                let n = self
                    .snappy
                    .get_or_insert_with(snap::raw::Encoder::new)
                    .compress(plain, &mut self.stored)
                    .map_err(|e| Error::new(ErrorClass::BadValue, format!("snappy: {e}")))?;
                self.stored.truncate(n);
                Ok((2, &self.stored))
            }
        }
    }
}
