//! Files as Arrow buffers: mapped where that pays, read into an aligned allocation otherwise.
//! Readers whose formats store values in Arrow's own layout (Jay columns, Filo vectors) slice
//! their arrays out of such a buffer instead of copying them.

use std::fs::File;
use std::path::Path;
use std::ptr::NonNull;
use std::sync::Arc;

use arrow_buffer::{Buffer, MutableBuffer};
use memmap2::Mmap;

/// Files smaller than this are read: a mapping costs more than the copy it saves.
const MAP_THRESHOLD: u64 = 4096;

/// The whole file at `path` as one buffer, and the mapping behind it when it is mapped (see
/// [`file_bytes`]).
pub(crate) fn map_or_read(path: &Path) -> std::io::Result<(Buffer, Option<Arc<Mmap>>)> {
    file_bytes(&File::open(path)?)
}

/// The whole of an open file as one buffer: the one place the readers of every format take a
/// file's bytes from. A regular file of [`MAP_THRESHOLD`] bytes or more is mapped, and the
/// mapping is returned too; arrays sliced from the buffer keep it alive, so their values are
/// read from the page cache without a copy. Another process truncating the file meanwhile can
/// fault the reader: a read past the new end raises SIGBUS, which ends the process (use
/// [`read_aligned`] where that matters, or hold a lock that writers respect, as VS does).
/// Anything else is read into an aligned allocation.
pub(crate) fn file_bytes(file: &File) -> std::io::Result<(Buffer, Option<Arc<Mmap>>)> {
    let metadata = file.metadata()?;
    if !metadata.is_file() || metadata.len() < MAP_THRESHOLD {
        use std::io::Read;
        let mut bytes = Vec::new();
        let mut reader = file;
        reader.read_to_end(&mut bytes)?;
        return Ok((aligned_copy(&bytes), None));
    }
    // SAFETY: the map is read-only and private to this process; see above for truncation.
    let map = Arc::new(unsafe { Mmap::map(file)? });
    let len = map.len();
    let ptr = NonNull::new(map.as_ptr() as *mut u8).expect("a mapping is never null");
    // SAFETY: `ptr` is valid for `len` bytes for as long as the `Mmap` lives, and the buffer
    // keeps it alive.
    let buffer = unsafe { Buffer::from_custom_allocation(ptr, len, map.clone()) };
    Ok((buffer, Some(map)))
}

/// The whole file at `path`, read into an aligned allocation (no mapping).
pub(crate) fn read_aligned(path: &Path) -> std::io::Result<Buffer> {
    use std::io::Read;
    let mut file = File::open(path)?;
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes)?;
    Ok(aligned_copy(&bytes))
}

/// A copy in Arrow's own allocation, which is 64-byte aligned.
pub(crate) fn aligned_copy(bytes: &[u8]) -> Buffer {
    let mut buffer = MutableBuffer::new(bytes.len());
    buffer.extend_from_slice(bytes);
    buffer.into()
}

/// `part`, a slice of `owner`'s bytes, as a buffer sharing `owner`'s memory when its start is
/// aligned for `T` (what Arrow requires of a typed buffer); `None` when it is not, or when
/// `part` does not lie inside `owner`, so that the caller copies it.
pub(crate) fn shared_slice<T>(owner: &Buffer, part: &[u8]) -> Option<Buffer> {
    let base = owner.as_ptr() as usize;
    let start = (part.as_ptr() as usize).checked_sub(base)?;
    if start.checked_add(part.len())? > owner.len()
        || (part.as_ptr() as usize) % std::mem::align_of::<T>() != 0
    {
        return None;
    }
    Some(owner.slice_with_length(start, part.len()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_slice_is_shared_only_inside_its_owner_and_when_aligned() {
        let owner = aligned_copy(&[0u8; 64]);
        let inside = &owner.as_slice()[8..24];
        let shared = shared_slice::<u64>(&owner, inside).unwrap();
        assert_eq!(shared.as_ptr(), inside.as_ptr());
        assert_eq!(shared.len(), 16);
        assert!(shared_slice::<u64>(&owner, &owner.as_slice()[4..20]).is_none());
        assert!(shared_slice::<u32>(&owner, &owner.as_slice()[4..20]).is_some());
        let elsewhere = [0u8; 16];
        assert!(shared_slice::<u8>(&owner, &elsewhere).is_none());
    }
}
