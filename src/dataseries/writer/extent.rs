//! An extent as stored (§3, §12, §13.2): the packed parts compressed by the smallest of the
//! enabled codecs, behind a header carrying both checksums; and the file header.

use super::super::codec::{self, Mode};
use super::super::file::{compact, partly_unpacked_hash, ByteOrder, MAX_PART};
use super::super::types::ExtentType;
use super::pack::Packed;
use crate::error::{Error, ErrorClass, Result};

/// Compresses and assembles one extent (§3, §12, §13.2); returns its bytes and `hash ^ adler`.
pub(super) fn assemble(
    t: &ExtentType,
    p: &Packed,
    order: ByteOrder,
    modes: &[Mode],
    level: u32,
) -> Result<(Vec<u8>, u32)> {
    let hash = partly_unpacked_hash(order, &p.fixed, &p.var[4..], false)
        .map_err(|m| Error::new(ErrorClass::BadValue, m))?;
    let compacted;
    let fixed_src: &[u8] = if t.null_compact {
        compacted = compact(t, &p.fixed, p.rows);
        &compacted
    } else {
        &p.fixed
    };
    let var_src = &p.var[4..];
    let (fm, fbytes) = codec::compress_best(modes, fixed_src, level);
    let (vm, vbytes) = codec::compress_best(modes, var_src, level);
    let fdata: &[u8] = fbytes.as_deref().unwrap_or(fixed_src);
    let vdata: &[u8] = vbytes.as_deref().unwrap_or(var_src);
    for (what, d) in [("fixed", fdata), ("variable", vdata)] {
        if d.len() as i64 >= MAX_PART {
            return Err(Error::new(
                ErrorClass::ValueOutOfRange,
                format!("an extent's {what} part is 512 MiB or more; lower the extent size"),
            ));
        }
    }
    let name = t.name.as_bytes();
    let h = (28 + name.len()).next_multiple_of(4);
    let total = h + fdata.len().next_multiple_of(4) + vdata.len().next_multiple_of(4);
    let mut e = Vec::with_capacity(total);
    e.extend_from_slice(&order.put_u32(fdata.len() as u32));
    e.extend_from_slice(&order.put_u32(vdata.len() as u32));
    e.extend_from_slice(&order.put_u32(p.rows as u32));
    e.extend_from_slice(&order.put_u32(p.var.len() as u32));
    e.extend_from_slice(&[0; 4]);
    e.extend_from_slice(&order.put_u32(hash));
    e.push(if fdata.is_empty() { 0 } else { fm.id() });
    e.push(if vdata.is_empty() { 0 } else { vm.id() });
    e.push(name.len() as u8);
    e.push(0);
    e.extend_from_slice(name);
    e.resize(h, 0);
    e.extend_from_slice(fdata);
    e.resize(h + fdata.len().next_multiple_of(4), 0);
    e.extend_from_slice(vdata);
    e.resize(total, 0);
    let adler = codec::extent_adler32(&e);
    e[16..20].copy_from_slice(&order.put_u32(adler));
    Ok((e, hash ^ adler))
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

