//! One column being written: its dtype and width, the rows waiting to be cut into chunks
//! ([`Piece`]s that still point into the caller's Arrow arrays), the chunks written so far, and
//! [`take_column`], which checks a batch's column (nulls, string widths) and queues its rows
//! without copying them.

use std::collections::VecDeque;
use std::path::PathBuf;

use arrow::compute::cast;
use arrow_array::cast::AsArray;
use arrow_array::{Array, ArrayRef};
use arrow_buffer::Buffer;
use arrow_schema::DataType;

use super::chunk::{ChunkFiles, ChunkSpec};
use super::encode::{flat_bytes, null_error, RowLayout};
use super::piece::Piece;
use super::NullPolicy;
use crate::bcolz::blosc::{Codec, Shuffle};
use crate::bcolz::mapping::{Base, DType};
use crate::error::{Error, ErrorClass, Result};

/// A column of the dataset being written (or appended to), and its rows not yet in a chunk.
pub(in crate::bcolz) struct Column {
    pub(in crate::bcolz) name: String,
    pub(in crate::bcolz) dtype: DType,
    pub(in crate::bcolz) row_shape: Vec<usize>,
    /// Fixed width (string/binary) from an option or `bcolz.dtype`; values beyond it fail.
    pub(in crate::bcolz) fixed_width: Option<usize>,
    /// The current width of a string/binary column (≥ 1).
    pub(in crate::bcolz) width: usize,
    pub(in crate::bcolz) dir: PathBuf,
    pub(in crate::bcolz) chunklen: Option<u64>,
    /// Rows not yet cut into a chunk, in order.
    pub(in crate::bcolz) pending: VecDeque<Piece>,
    pub(in crate::bcolz) pending_rows: usize,
    /// Full chunks written, with the width they were encoded with and their cbytes.
    pub(in crate::bcolz) chunks: Vec<(usize, u64)>,
    pub(in crate::bcolz) attrs_text: String,
    pub(in crate::bcolz) codec: Codec,
    pub(in crate::bcolz) clevel: u8,
    pub(in crate::bcolz) shuffle: Shuffle,
    /// Chunks hold big-endian values (appending to a `>` dtype); pending rows are little-endian.
    pub(in crate::bcolz) big_endian: bool,
    /// How chunk files reach the disk.
    pub(in crate::bcolz) files: ChunkFiles,
    /// Values written so far that end in NUL, which the NUL padding swallows.
    pub(in crate::bcolz) trailing_nuls: u64,
}

impl Column {
    /// The warning for values whose trailing NULs the file cannot keep, if there were any.
    pub(in crate::bcolz) fn trailing_nul_warning(&self) -> Option<String> {
        (self.trailing_nuls > 0).then(|| {
            format!(
                "column {:?}: {} value(s) end in NUL, which bcolz's NUL-padded fixed-width \
                 strings cannot keep: they read back without their trailing NULs",
                self.name, self.trailing_nuls
            )
        })
    }
}

impl Column {
    pub(in crate::bcolz) fn dtype_with(&self, width: usize) -> DType {
        let base = match self.dtype.base {
            Base::Bytes(_) => Base::Bytes(width),
            Base::Unicode(_) => Base::Unicode(width),
            b => b,
        };
        DType::native(base)
    }

    pub(in crate::bcolz) fn atomsize_for(&self, width: usize) -> usize {
        let item = self.dtype_with(width).itemsize().unwrap_or(1);
        self.row_shape.iter().product::<usize>().max(1) * item
    }

    /// Bytes per code unit of a string column (4 for `U`, 1 for `S`).
    pub(in crate::bcolz) fn unit(&self) -> usize {
        if matches!(self.dtype.base, Base::Unicode(_)) {
            4
        } else {
            1
        }
    }

    pub(in crate::bcolz) fn push_rows(&mut self, piece: Piece) {
        self.pending_rows += piece.len();
        if piece.len() > 0 {
            self.pending.push_back(piece);
        }
    }

    /// Takes the first `n` pending rows (at most all of them).
    pub(super) fn take_rows(&mut self, n: usize) -> Vec<Piece> {
        let mut out = Vec::new();
        let mut left = n.min(self.pending_rows);
        self.pending_rows -= left;
        while left > 0 {
            let front = self.pending.front_mut().expect("pending rows are counted");
            if front.len() <= left {
                left -= front.len();
                out.push(self.pending.pop_front().expect("just seen"));
            } else {
                out.push(front.split_front(left));
                left = 0;
            }
        }
        out
    }

    /// What a chunk job of this column needs, with rows encoded at `width`.
    pub(super) fn chunk_spec(&self, width: usize) -> ChunkSpec {
        let dtype = self.dtype_with(width);
        let swap_unit = if self.big_endian {
            self.dtype.swap_unit()
        } else {
            1
        };
        ChunkSpec {
            data_dir: self.dir.join("data"),
            codec: self.codec,
            clevel: self.clevel,
            shuffle: self.shuffle,
            typesize: dtype.typesize(),
            layout: RowLayout {
                atomsize: self.atomsize_for(width),
                item_unit: self.unit(),
                width,
                swap_unit,
            },
            files: self.files.clone(),
        }
    }
}

/// Checks one Arrow column (nulls, string widths) and appends it to the column's pending rows,
/// without copying its values: they are encoded when a chunk job takes them.
pub(in crate::bcolz) fn take_column(
    col: &mut Column,
    array: &ArrayRef,
    first_row: u64,
    policy: NullPolicy,
) -> Result<()> {
    let array: ArrayRef = match array.data_type() {
        DataType::Dictionary(_, v) => cast(array, v)?,
        _ => array.clone(),
    };
    let array: ArrayRef = match array.data_type() {
        DataType::LargeUtf8 | DataType::Utf8View => cast(&array, &DataType::Utf8)?,
        DataType::LargeBinary | DataType::BinaryView | DataType::FixedSizeBinary(_) => {
            cast(&array, &DataType::Binary)?
        }
        _ => array,
    };
    let sentinel_ok = policy == NullPolicy::Sentinel
        && matches!(
            col.dtype.base,
            Base::Float(_) | Base::DateTime(_) | Base::TimeDelta(_)
        );
    let len = array.len();
    match col.dtype.base {
        Base::Bytes(_) | Base::Unicode(_) => {
            if let Some(i) = array
                .nulls()
                .and_then(|nulls| nulls.iter().position(|valid| !valid))
            {
                return Err(null_error(first_row + i as u64));
            }
            let (offsets, bytes) = match array.data_type() {
                DataType::Utf8 => {
                    let strings = array.as_string::<i32>();
                    (strings.value_offsets(), strings.value_data())
                }
                _ => {
                    let binary = array.as_binary::<i32>();
                    (binary.value_offsets(), binary.value_data())
                }
            };
            // numpy pads to the width with NULs and strips them on reading, so a value's own
            // trailing NULs are lost: counted here for a warning.
            col.trailing_nuls += offsets
                .windows(2)
                .filter(|w| w[1] > w[0] && bytes.get(w[1] as usize - 1) == Some(&0))
                .count() as u64;
            let widest = if matches!(col.dtype.base, Base::Unicode(_)) {
                let strings = array.as_string::<i32>();
                (0..len).map(|i| strings.value(i).chars().count()).max()
            } else {
                offsets.windows(2).map(|w| (w[1] - w[0]) as usize).max()
            };
            if let Some(widest) = widest.filter(|&w| w > col.width) {
                if let Some(fixed) = col.fixed_width {
                    let (i, width) = first_wider(&array, col, fixed);
                    return Err(Error::new(
                        ErrorClass::ValueOutOfRange,
                        format!("a value of length {width} does not fit the fixed width {fixed}"),
                    )
                    .at_row(first_row + i as u64));
                }
                col.width = widest;
            }
            col.push_rows(Piece::Rows {
                array,
                offset: 0,
                len,
            });
        }
        _ if has_nulls(&array) => {
            // Refused (an error naming the row), or written as NaN / NaT: encoded now.
            let item = col.atomsize_for(col.width);
            let mut bytes = Vec::with_capacity(len * item);
            flat_bytes(
                &array,
                col.dtype.itemsize().unwrap_or(1),
                first_row,
                sentinel_ok,
                &mut bytes,
            )?;
            col.push_rows(Piece::Stored {
                bytes: Buffer::from_vec(bytes),
                item,
                offset: 0,
                len,
            });
        }
        _ => col.push_rows(Piece::Rows {
            array,
            offset: 0,
            len,
        }),
    }
    Ok(())
}

/// The first value longer than `fixed` code units, and its length.
fn first_wider(array: &ArrayRef, col: &Column, fixed: usize) -> (usize, usize) {
    (0..array.len())
        .map(|i| match col.dtype.base {
            Base::Unicode(_) => array.as_string::<i32>().value(i).chars().count(),
            _ => array.as_binary::<i32>().value(i).len(),
        })
        .enumerate()
        .find(|&(_, w)| w > fixed)
        .unwrap_or((0, fixed))
}

/// Whether an array or, for a fixed-size list, its values hold a null.
fn has_nulls(array: &ArrayRef) -> bool {
    array.null_count() > 0
        || matches!(array.data_type(), DataType::FixedSizeList(..))
            && has_nulls(array.as_fixed_size_list().values())
}
