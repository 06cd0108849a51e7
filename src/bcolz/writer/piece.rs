//! Rows waiting to be cut into chunks: slices of the caller's Arrow arrays, or rows already in
//! stored form. A [`Piece`] is what a column queues, what a chunk job takes and what `encode`
//! turns into a chunk's bytes.

use arrow_array::ArrayRef;
use arrow_buffer::Buffer;

/// Rows waiting to be cut into chunks.
#[derive(Debug, Clone)]
pub(in crate::bcolz) enum Piece {
    /// Rows of an input column, already checked (nulls, widths) and cast to the base type.
    Rows {
        array: ArrayRef,
        offset: usize,
        len: usize,
    },
    /// Rows in stored form (the committed rows of a leftover chunk being appended to):
    /// little-endian, `item` bytes a row, strings NUL-padded.
    Stored {
        bytes: Buffer,
        item: usize,
        offset: usize,
        len: usize,
    },
}

impl Piece {
    pub(super) fn len(&self) -> usize {
        match self {
            Piece::Rows { len, .. } | Piece::Stored { len, .. } => *len,
        }
    }

    /// The first `n` rows, leaving the rest in `self`.
    pub(super) fn split_front(&mut self, n: usize) -> Piece {
        let mut front = self.clone();
        match (&mut front, self) {
            (Piece::Rows { len: fl, .. }, Piece::Rows { offset, len, .. })
            | (Piece::Stored { len: fl, .. }, Piece::Stored { offset, len, .. }) => {
                *fl = n;
                *offset += n;
                *len -= n;
            }
            _ => unreachable!("a clone has the same variant"),
        }
        front
    }
}
