//! An extent as stored (§3, §12, §13.2): the packed parts compressed by the smallest of the
//! enabled codecs, behind a header carrying both checksums; and the file header.

use std::io::{self, Write};
use std::sync::{Arc, Mutex};

use super::super::codec::{self, Mode};
use arrow_array::RecordBatch;

use super::super::file::{
    compact, partly_unpacked_hash_after_fixed, ByteOrder, FIXED_HASH_INIT, MAX_PART,
};
use super::super::types::ExtentType;
use super::pack::{pack, Packed};
use crate::error::{Error, ErrorClass, Result};

/// Zeros that pad a part to a multiple of 4 bytes.
const PAD: [u8; 3] = [0; 3];

/// Buffers of extents already written, for the next ones to pack and compress into. Each
/// extent needs a few buffers of about its size; fresh ones cost a page fault per 4 KiB
/// (the allocator returns freed megabytes to the kernel), about 6 % of an lz4 encode's CPU.
#[derive(Clone)]
pub(super) struct SpareBuffers {
    kept: Arc<Mutex<Vec<Vec<u8>>>>,
    most: usize,
}

impl SpareBuffers {
    /// Keeps at most `most` buffers: enough for the extents under way, so that the memory
    /// held stays within what those extents take anyway.
    pub(super) fn new(most: usize) -> SpareBuffers {
        SpareBuffers {
            kept: Arc::default(),
            most,
        }
    }

    /// An empty buffer, one of the kept ones when there is one.
    pub(super) fn take(&self) -> Vec<u8> {
        let spare = self.kept.lock().map(|mut kept| kept.pop());
        let mut buffer = spare.ok().flatten().unwrap_or_default();
        buffer.clear();
        buffer
    }

    pub(super) fn give(&self, buffer: Vec<u8>) {
        // Small ones cost no page faults worth saving, and would come back for a large part.
        if buffer.capacity() < 64 << 10 {
            return;
        }
        if let Ok(mut kept) = self.kept.lock() {
            if kept.len() < self.most {
                kept.push(buffer);
            }
        }
    }
}

/// One extent ready to be written: its header, then its fixed and variable parts, each padded
/// to a multiple of 4 bytes as it is written. The parts keep the buffers packing or compression
/// made, so an uncompressed extent is never copied on its way to the file.
pub(super) struct Extent {
    header: Vec<u8>,
    parts: [Part; 2],
    /// `hash ^ adler32`, which the trailer's checksum chains (§4).
    pub(super) check: u32,
}

/// A part's bytes: `bytes[from..]` (the variable area is packed behind 4 zeros it is stored without).
struct Part {
    bytes: Vec<u8>,
    from: usize,
}

impl Part {
    fn data(&self) -> &[u8] {
        &self.bytes[self.from..]
    }
    fn padding(&self) -> &'static [u8] {
        &PAD[..self.data().len().next_multiple_of(4) - self.data().len()]
    }
}

impl Extent {
    /// Bytes the extent takes in the file.
    pub(super) fn len(&self) -> u64 {
        let parts: usize = self
            .parts
            .iter()
            .map(|p| p.data().len().next_multiple_of(4))
            .sum();
        (self.header.len() + parts) as u64
    }

    pub(super) fn write_to(&self, out: &mut dyn Write) -> io::Result<()> {
        out.write_all(&self.header)?;
        for p in &self.parts {
            out.write_all(p.data())?;
            out.write_all(p.padding())?;
        }
        Ok(())
    }

    /// Hands the parts' buffers back for later extents.
    pub(super) fn recycle(self, spare: &SpareBuffers) {
        for part in self.parts {
            spare.give(part.bytes);
        }
    }
}

/// Packs extents, each given as its rows' batch slices, and assembles them; their fixed parts
/// are hashed two at a time.
pub(super) fn encode(
    t: &ExtentType,
    extents: &[Vec<RecordBatch>],
    order: ByteOrder,
    modes: &[Mode],
    level: u32,
    spare: &SpareBuffers,
) -> Result<Vec<Extent>> {
    let packed = extents
        .iter()
        .map(|rows| pack(t, rows, order, spare))
        .collect::<Result<Vec<_>>>()?;
    let mut fixed_hashes = Vec::with_capacity(packed.len());
    for two in packed.chunks(2) {
        match two {
            [x, y] => {
                let (hx, hy) =
                    codec::lookup2_pair(&x.fixed, FIXED_HASH_INIT, &y.fixed, FIXED_HASH_INIT);
                fixed_hashes.extend([hx, hy]);
            }
            one => fixed_hashes.extend(
                one.iter()
                    .map(|x| codec::lookup2(&x.fixed, FIXED_HASH_INIT)),
            ),
        }
    }
    packed
        .into_iter()
        .zip(fixed_hashes)
        .map(|(p, fixed_hash)| assemble(t, p, fixed_hash, order, modes, level, spare))
        .collect()
}

/// Compresses and assembles one extent (§3, §12, §13.2), given the hash of its fixed part.
fn assemble(
    t: &ExtentType,
    p: Packed,
    fixed_hash: u32,
    order: ByteOrder,
    modes: &[Mode],
    level: u32,
    spare: &SpareBuffers,
) -> Result<Extent> {
    let hash = partly_unpacked_hash_after_fixed(fixed_hash, order, &p.var[4..], false)
        .map_err(|m| Error::new(ErrorClass::BadValue, m))?;
    let fixed_src = if t.null_compact {
        let compacted = compact(t, &p.fixed, p.rows);
        spare.give(p.fixed);
        compacted
    } else {
        p.fixed
    };
    let var_len = p.var.len();
    let (fm, fixed) = match codec::compress_best_in(modes, &fixed_src, level, || spare.take()) {
        (m, Some(bytes)) => {
            spare.give(fixed_src);
            (m, Part { bytes, from: 0 })
        }
        (m, None) => (
            m,
            Part {
                bytes: fixed_src,
                from: 0,
            },
        ),
    };
    let (vm, var) = match codec::compress_best_in(modes, &p.var[4..], level, || spare.take()) {
        (m, Some(bytes)) => {
            spare.give(p.var);
            (m, Part { bytes, from: 0 })
        }
        (m, None) => (
            m,
            Part {
                bytes: p.var,
                from: 4,
            },
        ),
    };
    let (fdata, vdata) = (fixed.data(), var.data());
    for (what, d) in [("fixed", fdata), ("variable", vdata)] {
        if d.len() as i64 >= MAX_PART {
            return Err(Error::new(
                ErrorClass::ValueOutOfRange,
                format!("an extent's {what} part is 512 MiB or more; lower the extent size"),
            ));
        }
    }
    let name = t.name.as_bytes();
    let header_len = (28 + name.len()).next_multiple_of(4);
    let mut header = Vec::with_capacity(header_len);
    header.extend_from_slice(&order.put_u32(fdata.len() as u32));
    header.extend_from_slice(&order.put_u32(vdata.len() as u32));
    header.extend_from_slice(&order.put_u32(p.rows as u32));
    header.extend_from_slice(&order.put_u32(var_len as u32));
    header.extend_from_slice(&[0; 4]);
    header.extend_from_slice(&order.put_u32(hash));
    header.push(if fdata.is_empty() { 0 } else { fm.id() });
    header.push(if vdata.is_empty() { 0 } else { vm.id() });
    header.push(name.len() as u8);
    header.push(0);
    header.extend_from_slice(name);
    header.resize(header_len, 0);
    // adler32 of the extent as stored, its own slot (bytes 16..20) left out.
    let mut adler = simd_adler32::Adler32::new();
    adler.write(&header[..16]);
    adler.write(&header[20..]);
    for part in [&fixed, &var] {
        adler.write(part.data());
        adler.write(part.padding());
    }
    let adler = adler.finish();
    header[16..20].copy_from_slice(&order.put_u32(adler));
    Ok(Extent {
        header,
        parts: [fixed, var],
        check: hash ^ adler,
    })
}

/// The file header (§2): magic, then the byte-order and float-format probes.
pub(super) fn header_bytes(order: ByteOrder) -> [u8; 40] {
    let mut h = [0u8; 40];
    h[..4].copy_from_slice(b"DSv1");
    h[4..8].copy_from_slice(&order.put_u32(0x1234_5678));
    h[8..16].copy_from_slice(&order.put_u64(0x1234_5678_9ABC_DEF0));
    h[16..24].copy_from_slice(&order.put_u64(std::f64::consts::PI.to_bits()));
    h[24..32].copy_from_slice(&order.put_u64(f64::INFINITY.to_bits()));
    h[32..40].copy_from_slice(&order.put_u64(0x7ff8_0000_0000_0000));
    h
}
