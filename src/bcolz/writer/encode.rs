//! Rows in the form bcolz stores them: little-endian values, tensor rows flattened, strings
//! NUL-padded to the column's width (UTF-32 for `U`). Fixed-width rows without nulls need no
//! encoding at all ([`direct_bytes`]); nulls are refused or, where the policy allows, written
//! as NaN / NaT.

use arrow_array::cast::AsArray;
use arrow_array::{Array, ArrayRef};
use arrow_buffer::Buffer;
use arrow_schema::DataType;

use super::piece::Piece;
use crate::error::{Error, ErrorClass, Result};

/// How a column's rows are laid out in a chunk, at the width the chunk is encoded with.
#[derive(Debug, Clone, Copy)]
pub(super) struct RowLayout {
    /// Bytes a row takes (a tensor row: all its values).
    pub(super) atomsize: usize,
    /// Bytes per code unit of a string column (4 for `U`, 1 for `S`, 1 otherwise).
    pub(super) item_unit: usize,
    /// String width in code units.
    pub(super) width: usize,
    /// Bytes swapped as one unit for a big-endian column (1: little-endian, nothing to do).
    pub(super) swap_unit: usize,
}

/// The chunk's bytes straight from the Arrow buffer, when they are stored as they are: one
/// piece of a fixed-width primitive (or tensor of one) without nulls, little-endian.
pub(super) fn direct_bytes(pieces: &[Piece], spec: &RowLayout) -> Option<Buffer> {
    let [Piece::Rows { array, offset, len }] = pieces else {
        return None;
    };
    if spec.swap_unit > 1 {
        return None;
    }
    let (mut array, mut offset, mut len) = (array.clone(), *offset, *len);
    while let DataType::FixedSizeList(_, k) = array.data_type() {
        let k = *k as usize;
        let list = array.as_fixed_size_list();
        if list.null_count() > 0 {
            return None;
        }
        let values = list.values().slice(list.offset() * k, list.len() * k);
        (array, offset, len) = (values, offset * k, len * k);
    }
    let size = match array.data_type() {
        DataType::Boolean | DataType::Date32 => return None,
        dt => dt.primitive_width()?,
    };
    if array.null_count() > 0 {
        return None;
    }
    let data = array.to_data();
    Some(data.buffers()[0].slice_with_length((data.offset() + offset) * size, len * size))
}

/// Appends the stored bytes of a piece's rows (little-endian) to `out`.
pub(super) fn encode_piece(piece: &Piece, spec: &RowLayout, out: &mut Vec<u8>) -> Result<()> {
    let size = spec.width * spec.item_unit;
    match piece {
        Piece::Stored {
            bytes,
            item,
            offset,
            len,
        } => {
            let raw = &bytes.as_slice()[offset * item..(offset + len) * item];
            if *item == spec.atomsize {
                out.extend_from_slice(raw);
            } else {
                // A string chunk stored narrower than the column is now.
                let start = out.len();
                out.resize(start + len * size, 0);
                for (i, value) in raw.chunks_exact(*item).enumerate() {
                    out[start + i * size..start + i * size + item].copy_from_slice(value);
                }
            }
            Ok(())
        }
        Piece::Rows { array, offset, len } => match array.data_type() {
            DataType::Binary => {
                let strings = array.as_binary::<i32>();
                let values = strings.value_data();
                let offsets = strings.value_offsets();
                let start = out.len();
                // 16 bytes of slack for the wide stores below, cut off at the end.
                out.resize(start + len * size + 16, 0);
                for i in 0..*len {
                    let lo = offsets[offset + i] as usize;
                    let hi = offsets[offset + i + 1] as usize;
                    let at = start + i * size;
                    match values.get(lo..lo + 16) {
                        // Narrow items: one 16-byte load and store instead of a memcpy call, the
                        // bytes past the value masked to zero (its padding; what spills into the
                        // next slot is zeros too, and that slot is written after this one).
                        Some(wide) if size <= 16 => {
                            let word = u128::from_le_bytes(wide.try_into().expect("16 bytes"));
                            let keep = match hi - lo {
                                n if n >= 16 => u128::MAX,
                                n => (1u128 << (8 * n)) - 1,
                            };
                            out[at..at + 16].copy_from_slice(&(word & keep).to_le_bytes());
                        }
                        _ => out[at..at + hi - lo].copy_from_slice(&values[lo..hi]),
                    }
                }
                out.truncate(start + len * size);
                Ok(())
            }
            DataType::Utf8 => {
                let strings = array.as_string::<i32>();
                let start = out.len();
                out.resize(start + len * size, 0);
                for i in 0..*len {
                    let slot = &mut out[start + i * size..start + (i + 1) * size];
                    for (unit, c) in slot
                        .chunks_exact_mut(4)
                        .zip(strings.value(offset + i).chars())
                    {
                        unit.copy_from_slice(&(c as u32).to_le_bytes());
                    }
                }
                Ok(())
            }
            _ => {
                let itemsize = spec.atomsize / spec.width.max(1);
                flat_bytes(&array.slice(*offset, *len), itemsize, 0, true, out)
            }
        },
    }
}

/// The error of a null that bcolz cannot store, at `row` of the input.
pub(super) fn null_error(row: u64) -> Error {
    Error::new(
        ErrorClass::BadValue,
        "has a null; bcolz cannot store nulls (set the bcolz_nulls_as_nan option to write them as NaN/NaT in float and temporal columns)",
    )
    .with_setting("bcolz_nulls_as_nan")
    .at_row(row)
}

/// Little-endian bytes of a fixed-size column (tensor rows flattened), nulls checked.
pub(super) fn flat_bytes(
    array: &ArrayRef,
    itemsize: usize,
    first_row: u64,
    sentinel_ok: bool,
    out: &mut Vec<u8>,
) -> Result<()> {
    if let DataType::FixedSizeList(_, k) = array.data_type() {
        let list = array.as_fixed_size_list();
        let k = *k as usize;
        let values = list.values().slice(list.offset() * k, list.len() * k);
        let start = out.len();
        // Row index of a child element, for error messages.
        if values.null_count() > 0 && !sentinel_ok {
            let e = (0..values.len()).find(|&e| values.is_null(e)).unwrap_or(0);
            return Err(null_error(first_row + (e / k.max(1)) as u64));
        }
        flat_bytes(&values, itemsize, first_row, sentinel_ok, out)?;
        if list.null_count() > 0 {
            if !sentinel_ok {
                let i = (0..list.len()).find(|&i| list.is_null(i)).unwrap_or(0);
                return Err(null_error(first_row + i as u64));
            }
            let item = itemsize;
            let per_row = out.len().saturating_sub(start) / list.len().max(1);
            for i in (0..list.len()).filter(|&i| list.is_null(i)) {
                for e in 0..per_row / item {
                    let at = start + i * per_row + e * item;
                    out[at..at + item].copy_from_slice(&nan_bytes(item));
                }
            }
        }
        return Ok(());
    }
    let n = array.len();
    match array.data_type() {
        DataType::Boolean => {
            let a = array.as_boolean();
            if let Some(i) = (0..n).find(|&i| a.is_null(i)) {
                return Err(null_error(first_row + i as u64));
            }
            out.extend((0..n).map(|i| a.value(i) as u8));
        }
        DataType::Date32 => {
            let a = array.as_primitive::<arrow_array::types::Date32Type>();
            for i in 0..n {
                let v = if a.is_null(i) {
                    if !sentinel_ok {
                        return Err(null_error(first_row + i as u64));
                    }
                    i64::MIN
                } else {
                    a.value(i) as i64
                };
                out.extend_from_slice(&v.to_le_bytes());
            }
        }
        dt => {
            let size = dt.primitive_width().ok_or_else(|| {
                Error::new(
                    ErrorClass::UnsupportedType,
                    format!("Arrow type {dt} has no bcolz dtype"),
                )
            })?;
            let data = array.to_data();
            let buf =
                &data.buffers()[0].as_slice()[data.offset() * size..(data.offset() + n) * size];
            let start = out.len();
            out.extend_from_slice(buf);
            if array.null_count() > 0 {
                if !sentinel_ok {
                    let i = (0..n).find(|&i| array.is_null(i)).unwrap_or(0);
                    return Err(null_error(first_row + i as u64));
                }
                let fill = match dt {
                    DataType::Float16 | DataType::Float32 | DataType::Float64 => nan_bytes(size),
                    _ => i64::MIN.to_le_bytes().to_vec(),
                };
                for i in (0..n).filter(|&i| array.is_null(i)) {
                    out[start + i * size..start + (i + 1) * size].copy_from_slice(&fill);
                }
            }
        }
    }
    Ok(())
}

fn nan_bytes(size: usize) -> Vec<u8> {
    match size {
        2 => 0x7E00u16.to_le_bytes().to_vec(),
        4 => 0x7FC0_0000u32.to_le_bytes().to_vec(),
        _ => 0x7FF8_0000_0000_0000u64.to_le_bytes().to_vec(),
    }
}
