//! An extent as stored (§3, §12, §13.2): the packed parts compressed by the smallest of the
//! enabled codecs, behind a header carrying both checksums; and the file header.

use std::io::{self, Write};

use super::super::buffers::SpareBuffers;
use super::super::checksum;
use super::super::codec::{self, Mode};
use arrow_array::RecordBatch;

use super::super::byte_order::ByteOrder;
use super::super::extent::MAX_PART;
use super::super::extent::{compact, partly_unpacked_hash_after_fixed, FIXED_HASH_INIT};
use super::super::types::ExtentType;
use super::pack::{pack, Packed};
use crate::error::{Error, ErrorClass, Result};

/// Zeros that pad a part to a multiple of 4 bytes.
const PAD: [u8; 3] = [0; 3];

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

/// Extents whose fixed parts are hashed at once, the lanes of [`checksum::lookup2_many`]: a hash
/// is a single chain of dependent steps, so one chain leaves most of a core idle.
pub(super) const HASH_LANES: usize = checksum::LOOKUP2_LANES;

/// An extent packed and compressed, waiting for the hash its header carries. The hash is left
/// to [`seal`], which takes [`HASH_LANES`] extents at a time in file order: the jobs that
/// compress stay one or two extents small, so that the pool's threads finish the file together.
pub(super) struct Compressed {
    rows: usize,
    /// The variable area's length as packed, 4 leading zeros included (§3).
    var_len: usize,
    parts: [Part; 2],
    modes: [Mode; 2],
    /// The packed fixed part and variable area, which the hash covers, where the stored parts
    /// are other bytes (compressed, or the fixed part compacted).
    plain_fixed: Option<Vec<u8>>,
    plain_var: Option<Vec<u8>>,
}

impl Compressed {
    fn plain_fixed(&self) -> &[u8] {
        self.plain_fixed
            .as_deref()
            .unwrap_or_else(|| self.parts[0].data())
    }

    /// The variable area without its 4 leading zeros.
    fn plain_var_body(&self) -> &[u8] {
        match &self.plain_var {
            Some(var) => &var[4..],
            None => self.parts[1].data(),
        }
    }
}

/// Packs and compresses extents, each given as its rows' batch slices.
pub(super) fn compress(
    t: &ExtentType,
    extents: &[Vec<RecordBatch>],
    order: ByteOrder,
    modes: &[Mode],
    level: u32,
    spare: &SpareBuffers,
) -> Result<Vec<Compressed>> {
    extents
        .iter()
        .map(|rows| {
            let packed = pack(t, rows, order, spare)?;
            compress_packed(t, packed, modes, level, spare)
        })
        .collect()
}

/// Compresses one packed extent's parts with the smallest of the enabled codecs (§13.2).
fn compress_packed(
    t: &ExtentType,
    p: Packed,
    modes: &[Mode],
    level: u32,
    spare: &SpareBuffers,
) -> Result<Compressed> {
    let (plain_fixed, fixed_src) = if t.null_compact {
        let compacted = compact(t, &p.fixed, p.rows);
        (Some(p.fixed), compacted)
    } else {
        (None, p.fixed)
    };
    let (fm, fixed, plain_fixed) =
        match codec::compress_best_in(modes, &fixed_src, level, || spare.take()) {
            (m, Some(bytes)) => {
                let plain = match plain_fixed {
                    Some(uncompacted) => {
                        spare.give(fixed_src);
                        uncompacted
                    }
                    None => fixed_src,
                };
                (m, Part { bytes, from: 0 }, Some(plain))
            }
            (m, None) => (
                m,
                Part {
                    bytes: fixed_src,
                    from: 0,
                },
                plain_fixed,
            ),
        };
    let var_len = p.var.len();
    let (vm, var, plain_var) =
        match codec::compress_best_in(modes, &p.var[4..], level, || spare.take()) {
            (m, Some(bytes)) => (m, Part { bytes, from: 0 }, Some(p.var)),
            (m, None) => (
                m,
                Part {
                    bytes: p.var,
                    from: 4,
                },
                None,
            ),
        };
    for (what, part) in [("fixed", &fixed), ("variable", &var)] {
        if part.data().len() as i64 >= MAX_PART {
            return Err(Error::new(
                ErrorClass::ValueOutOfRange,
                format!("an extent's {what} part is 512 MiB or more; lower the extent size"),
            ));
        }
    }
    Ok(Compressed {
        rows: p.rows,
        var_len,
        parts: [fixed, var],
        modes: [fm, vm],
        plain_fixed,
        plain_var,
    })
}

/// Packs, compresses and seals extents in one go (the XmlType extent, the index).
pub(super) fn encode(
    t: &ExtentType,
    extents: &[Vec<RecordBatch>],
    order: ByteOrder,
    modes: &[Mode],
    level: u32,
    spare: &SpareBuffers,
) -> Result<Vec<Extent>> {
    seal(
        t,
        compress(t, extents, order, modes, level, spare)?,
        order,
        spare,
    )
}

/// Hashes the extents' fixed parts together and assembles each extent as
/// stored (§3, §12): its header with both checksums, then its parts.
pub(super) fn seal(
    t: &ExtentType,
    extents: Vec<Compressed>,
    order: ByteOrder,
    spare: &SpareBuffers,
) -> Result<Vec<Extent>> {
    let fixed: Vec<&[u8]> = extents.iter().map(Compressed::plain_fixed).collect();
    let fixed_hashes = checksum::lookup2_many(&fixed, FIXED_HASH_INIT);
    extents
        .into_iter()
        .zip(fixed_hashes)
        .map(|(c, fixed_hash)| seal_one(t, c, fixed_hash, order, spare))
        .collect()
}

/// One extent's header, given the hash of its fixed part.
fn seal_one(
    t: &ExtentType,
    c: Compressed,
    fixed_hash: u32,
    order: ByteOrder,
    spare: &SpareBuffers,
) -> Result<Extent> {
    let hash = partly_unpacked_hash_after_fixed(fixed_hash, order, c.plain_var_body(), false)?;
    let [fixed, var] = c.parts;
    let [fm, vm] = c.modes;
    for plain in [c.plain_fixed, c.plain_var].into_iter().flatten() {
        spare.give(plain);
    }
    let (fdata, vdata) = (fixed.data(), var.data());
    let name = t.name.as_bytes();
    let header_len = (28 + name.len()).next_multiple_of(4);
    let mut header = Vec::with_capacity(header_len);
    header.extend_from_slice(&order.put_u32(fdata.len() as u32));
    header.extend_from_slice(&order.put_u32(vdata.len() as u32));
    header.extend_from_slice(&order.put_u32(c.rows as u32));
    header.extend_from_slice(&order.put_u32(c.var_len as u32));
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
