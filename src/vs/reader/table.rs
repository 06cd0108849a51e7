//! [`BlockTable`]: the point blocks of a file read by ranges, kept by its [`VsFile`](super::VsFile)
//! once walked (see `layout`, which walks and reads it).

/// The point blocks of a file, in file order, from its block headers.
#[derive(Debug, Default)]
pub(super) struct BlockTable {
    pub(super) offsets: Vec<u64>,
    pub(super) lengths: Vec<u32>,
}
