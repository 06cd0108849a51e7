//! One chunk, away from the writer: a [`ChunkJob`] holds the rows of one chunk and what it
//! needs to know of its column ([`ChunkSpec`]); running it encodes the rows (or takes them
//! straight from the Arrow buffer), compresses them in one c-blosc call and writes the chunk
//! file as the column's [`ChunkFiles`] says. Jobs run on rayon threads, each reusing its own
//! scratch buffers.

use std::fs;
use std::io::Write;
use std::path::PathBuf;

use super::encode::{direct_bytes, encode_piece, RowLayout};
use super::piece::Piece;
use crate::bcolz::blosc::{self, Codec, Shuffle};
use crate::bcolz::durable;
use crate::bcolz::journal::{beside, Journal, TEMP_SUFFIX};
use crate::error::{Error, ErrorClass, Result};

/// Everything needed to encode, compress and write one chunk, away from the writer.
#[derive(Debug, Clone)]
pub(super) struct ChunkSpec {
    pub(super) data_dir: PathBuf,
    pub(super) codec: Codec,
    pub(super) clevel: u8,
    pub(super) shuffle: Shuffle,
    pub(super) typesize: usize,
    /// The stored form of the chunk's rows.
    pub(super) layout: RowLayout,
    pub(super) files: ChunkFiles,
}

/// How a chunk file is written.
#[derive(Debug, Clone)]
pub(in crate::bcolz) enum ChunkFiles {
    /// Into a dataset directory nobody sees yet, never flushed (`with_durable(false)`).
    Unsynced,
    /// Into a dataset directory nobody sees yet; the kernel is asked to start writing it out
    /// at once (Linux) and the file is queued to the syncer threads; the whole directory is
    /// flushed again before it is renamed into place.
    SyncedLater(durable::SyncQueue),
    /// Into a live dataset (an append): under a temporary name, flushed (fsync) and renamed
    /// over `__k.blp` through the append's journal (which keeps the file it replaces until the
    /// commit), so a chunk file is never half-written or empty after a crash, and a failed
    /// append can be undone.
    Live(Journal),
}

/// One chunk to encode, compress and write.
pub(super) struct ChunkJob {
    pub(super) column: usize,
    pub(super) index: u64,
    pub(super) spec: ChunkSpec,
    pub(super) pieces: Vec<Piece>,
}

impl ChunkJob {
    /// Encodes, compresses and writes the chunk; returns its Blosc cbytes.
    pub(super) fn run(self) -> Result<u64> {
        SCRATCH.with(|scratch| {
            let mut fresh = Scratch::default();
            let mut borrowed = scratch.try_borrow_mut();
            let scratch = borrowed.as_deref_mut().unwrap_or(&mut fresh);
            let direct = direct_bytes(&self.pieces, &self.spec.layout);
            let src: &[u8] = match &direct {
                Some(buffer) => buffer.as_slice(),
                None => {
                    scratch.encoded.clear();
                    for piece in &self.pieces {
                        encode_piece(piece, &self.spec.layout, &mut scratch.encoded)?;
                    }
                    let swap_unit = self.spec.layout.swap_unit;
                    if swap_unit > 1 {
                        for group in scratch.encoded.chunks_exact_mut(swap_unit) {
                            group.reverse();
                        }
                    }
                    &scratch.encoded
                }
            };
            compress_and_write(&self.spec, self.index, src, &mut scratch.file)
        })
    }
}

/// Buffers a worker thread reuses from chunk to chunk (no allocation, no page faults).
#[derive(Default)]
struct Scratch {
    encoded: Vec<u8>,
    file: Vec<u8>,
}

thread_local! {
    static SCRATCH: std::cell::RefCell<Scratch> = std::cell::RefCell::new(Scratch::default());
}

/// Compresses `src` into a chunk file (`blpk` header + one Blosc chunk) at `data/__{k}.blp`;
/// returns the Blosc cbytes.
fn compress_and_write(spec: &ChunkSpec, k: u64, src: &[u8], file: &mut Vec<u8>) -> Result<u64> {
    file.clear();
    file.extend_from_slice(BLPK_HEADER);
    let cbytes = blosc::compress_append(
        src,
        spec.typesize,
        spec.clevel,
        spec.shuffle,
        spec.codec,
        file,
    )
    .map_err(|e| Error::new(ErrorClass::Io, e.to_string()))?;
    let path = spec.data_dir.join(format!("__{k}.blp"));
    match &spec.files {
        ChunkFiles::Unsynced => {
            fs::write(&path, &file[..]).map_err(|e| Error::from(e).with_file(&path))?
        }
        ChunkFiles::SyncedLater(queue) => {
            let mut f = fs::File::create(&path).map_err(|e| Error::from(e).with_file(&path))?;
            f.write_all(file)
                .map_err(|e| Error::from(e).with_file(&path))?;
            durable::start_writeback(&f);
            drop(f);
            queue.flush_later(path);
        }
        ChunkFiles::Live(journal) => {
            let temp = beside(&path, TEMP_SUFFIX);
            let written = fs::File::create(&temp)
                .and_then(|mut f| f.write_all(file).and_then(|_| f.sync_all()));
            if let Err(e) = written {
                // A full disk: the part written goes back to it at once.
                let _ = fs::remove_file(&temp);
                return Err(Error::from(e).with_file(&temp));
            }
            journal.replace(&temp, &path)?;
        }
    }
    Ok(cbytes as u64)
}

/// The bloscpack header bcolz writes before the Blosc chunk of every chunk file.
const BLPK_HEADER: &[u8; 16] = b"blpk\x01\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00";
