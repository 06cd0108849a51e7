//! Where the writer keeps column buffers until `finish()`.
//!
//! A Jay file stores each column buffer as one contiguous range, and the record batches
//! interleave the columns, so every buffer is a [`Stream`] of byte pieces that grows as batches
//! arrive. Pieces stay in memory (as copies of small encoded chunks, or as zero-copy slices of
//! the caller's Arrow buffers) until the writer's memory limit is reached; then every stream
//! moves its pieces into the [`Spool`], one shared unnamed temporary file, and keeps only their
//! positions. At `finish()` the streams are copied out in column order: spooled pieces with
//! `std::io::copy` (which becomes `copy_file_range` between two files on Linux), in-memory
//! pieces with plain writes.
//!
//! One spool file for all columns (rather than one per column) keeps the number of open file
//! descriptors constant however wide the frame is.

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use arrow_buffer::{ArrowNativeType, Buffer, ToByteSlice};

/// Encoded chunks smaller than this are copied into a stream's tail instead of becoming pieces
/// of their own, so that tiny batches do not produce millions of tiny pieces.
const SMALL_PIECE: usize = 64 * 1024;
/// A stream's tail is sealed into a piece when it would grow past this.
const TAIL_LIMIT: usize = 1 << 20;
/// Writes to the spool file are gathered into blocks of this size.
const SPOOL_BUFFER: usize = 1 << 20;
/// Chunk size when spooled bytes are read back for conversion.
pub(super) const READ_CHUNK: usize = 1 << 20;

/// The shared temporary file that holds spilled pieces, created on first use.
pub(crate) struct Spool {
    dir: PathBuf,
    file: Option<File>,
    /// Bytes written to the file, not counting `buffer`.
    file_len: u64,
    /// Whether the file's cursor is at `file_len` (reads move it).
    at_end: bool,
    buffer: Vec<u8>,
}

impl Spool {
    pub(crate) fn new(dir: PathBuf) -> Spool {
        Spool {
            dir,
            file: None,
            file_len: 0,
            at_end: true,
            buffer: Vec::new(),
        }
    }

    pub(crate) fn dir(&self) -> &Path {
        &self.dir
    }

    /// Total bytes spilled so far.
    pub(crate) fn len(&self) -> u64 {
        self.file_len + self.buffer.len() as u64
    }

    fn file(&mut self) -> io::Result<&mut File> {
        if self.file.is_none() {
            let file = tempfile::tempfile_in(&self.dir).map_err(|e| {
                io::Error::new(
                    e.kind(),
                    format!("cannot create a spool file in {}: {e}", self.dir.display()),
                )
            })?;
            self.file = Some(file);
        }
        Ok(self.file.as_mut().expect("created above"))
    }

    fn write_to_file(&mut self, bytes: &[u8]) -> io::Result<()> {
        let at_end = self.at_end;
        let file_len = self.file_len;
        let file = self.file()?;
        if !at_end {
            file.seek(SeekFrom::Start(file_len))?;
        }
        file.write_all(bytes)?;
        self.at_end = true;
        self.file_len += bytes.len() as u64;
        Ok(())
    }

    /// Appends `bytes`, returning where they start.
    pub(crate) fn append(&mut self, bytes: &[u8]) -> io::Result<u64> {
        let at = self.len();
        if self.buffer.len() + bytes.len() > SPOOL_BUFFER {
            self.flush()?;
        }
        if bytes.len() >= SPOOL_BUFFER {
            self.write_to_file(bytes)?;
        } else {
            if self.buffer.capacity() == 0 {
                self.buffer.reserve_exact(SPOOL_BUFFER);
            }
            self.buffer.extend_from_slice(bytes);
        }
        Ok(at)
    }

    /// Writes the gathered block to the file.
    pub(crate) fn flush(&mut self) -> io::Result<()> {
        if !self.buffer.is_empty() {
            let block = std::mem::take(&mut self.buffer);
            let result = self.write_to_file(&block);
            self.buffer = block;
            self.buffer.clear();
            result?;
        }
        Ok(())
    }

    /// Positions the file at `offset` for reading `len` bytes, which must have been spilled.
    fn reader(&mut self, offset: u64, len: u64) -> io::Result<io::Take<&mut File>> {
        self.flush()?;
        if offset
            .checked_add(len)
            .is_none_or(|end| end > self.file_len)
        {
            return Err(io::Error::other(format!(
                "spool range {offset}+{len} is past the spool's end {}",
                self.file_len
            )));
        }
        self.at_end = false;
        let file = self.file()?;
        file.seek(SeekFrom::Start(offset))?;
        Ok(Read::take(file, len))
    }

    /// Copies `len` spilled bytes starting at `offset` into `out`.
    pub(crate) fn copy_to(
        &mut self,
        offset: u64,
        len: u64,
        out: &mut dyn CopyTarget,
    ) -> io::Result<()> {
        let mut reader = self.reader(offset, len)?;
        let copied = out.copy_from(&mut reader)?;
        if copied != len {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                format!("the spool file ended after {copied} of {len} bytes"),
            ));
        }
        Ok(())
    }

    /// Reads `buf.len()` spilled bytes starting at `offset`.
    pub(crate) fn read_exact_at(&mut self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        self.reader(offset, buf.len() as u64)?.read_exact(buf)
    }
}

/// The output of `finish()`: besides buffered writes, it takes large pieces and spooled ranges
/// without copying them through its buffer.
pub(crate) trait CopyTarget: Write {
    /// Copies the reader's bytes (`io::copy` picks the fastest way for the concrete types:
    /// copy_file_range from file to file on Linux).
    fn copy_from(&mut self, reader: &mut io::Take<&mut File>) -> io::Result<u64>;
    /// Writes a large piece, bypassing any buffer.
    fn write_direct(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.write_all(bytes)
    }
}

/// One piece of a stream.
#[derive(Debug)]
enum Piece {
    Memory(Buffer),
    Spooled { offset: u64, len: u64 },
}

/// The bytes of one column buffer, in order: pieces, then the tail.
#[derive(Debug, Default)]
pub(crate) struct Stream {
    pieces: Vec<Piece>,
    tail: Vec<u8>,
    len: u64,
    /// Bytes of the in-memory pieces.
    held: usize,
}

impl Stream {
    pub(crate) fn new() -> Stream {
        Stream::default()
    }

    /// Total bytes.
    pub(crate) fn len(&self) -> u64 {
        self.len
    }

    /// Bytes held in memory.
    pub(crate) fn held(&self) -> usize {
        self.held + self.tail.len()
    }

    fn seal_tail(&mut self) {
        if !self.tail.is_empty() {
            let tail = std::mem::take(&mut self.tail);
            self.held += tail.len();
            self.pieces.push(Piece::Memory(Buffer::from_vec(tail)));
        }
    }

    fn push_piece(&mut self, buffer: Buffer) {
        self.seal_tail();
        self.len += buffer.len() as u64;
        self.held += buffer.len();
        self.pieces.push(Piece::Memory(buffer));
    }

    /// Appends a copy of `bytes`.
    pub(crate) fn push_slice(&mut self, bytes: &[u8]) {
        if bytes.is_empty() {
            return;
        }
        if bytes.len() >= SMALL_PIECE {
            self.push_piece(Buffer::from_slice_ref(bytes));
            return;
        }
        if self.tail.len() + bytes.len() > TAIL_LIMIT {
            self.seal_tail();
        }
        self.tail.extend_from_slice(bytes);
        self.len += bytes.len() as u64;
    }

    /// Appends the values of `values`, taking the vector when it is large (no copy) and
    /// copying it otherwise; `values` is left empty either way.
    pub(crate) fn push_vec<T: ArrowNativeType>(&mut self, values: &mut Vec<T>) {
        let bytes = std::mem::size_of_val(values.as_slice());
        if bytes >= SMALL_PIECE {
            self.push_piece(Buffer::from_vec(std::mem::take(values)));
        } else {
            self.push_slice(values.as_slice().to_byte_slice());
            values.clear();
        }
    }

    /// Appends an Arrow buffer without copying it when it is large and does not pin a much
    /// larger allocation; otherwise appends a copy.
    pub(crate) fn push_buffer(&mut self, buffer: Buffer) {
        let len = buffer.len();
        let pins_more = buffer.capacity() > 2 * len.max(SMALL_PIECE);
        if len >= SMALL_PIECE && !pins_more {
            self.push_piece(buffer);
        } else {
            self.push_slice(buffer.as_slice());
        }
    }

    /// Moves every in-memory byte into the spool.
    pub(crate) fn spill(&mut self, spool: &mut Spool) -> io::Result<()> {
        self.seal_tail();
        if self.held == 0 {
            return Ok(());
        }
        let mut pieces = Vec::with_capacity(self.pieces.len());
        for piece in self.pieces.drain(..) {
            let (offset, len) = match piece {
                Piece::Memory(buffer) => {
                    let offset = spool.append(buffer.as_slice())?;
                    (offset, buffer.len() as u64)
                }
                Piece::Spooled { offset, len } => (offset, len),
            };
            match pieces.last_mut() {
                Some(Piece::Spooled {
                    offset: last,
                    len: last_len,
                }) if *last + *last_len == offset => *last_len += len,
                _ => pieces.push(Piece::Spooled { offset, len }),
            }
        }
        self.pieces = pieces;
        self.held = 0;
        Ok(())
    }

    /// Writes every byte, in order, to `out`.
    pub(crate) fn write_to<W: CopyTarget>(&self, spool: &mut Spool, out: &mut W) -> io::Result<()> {
        for piece in &self.pieces {
            match piece {
                Piece::Memory(buffer) if buffer.len() >= SMALL_PIECE => {
                    out.write_direct(buffer.as_slice())?
                }
                Piece::Memory(buffer) => out.write_all(buffer.as_slice())?,
                Piece::Spooled { offset, len } => spool.copy_to(*offset, *len, out)?,
            }
        }
        out.write_all(&self.tail)
    }

    /// Hands every byte held in memory, in order, to `out` and forgets them, keeping the tail's
    /// allocation for the next batch; `len` still counts them. For a column written straight
    /// into the file batch by batch, so a stream that has spilled cannot be drained.
    pub(crate) fn drain(&mut self, out: &mut dyn FnMut(&[u8]) -> io::Result<()>) -> io::Result<()> {
        for piece in self.pieces.drain(..) {
            match piece {
                Piece::Memory(buffer) => out(buffer.as_slice())?,
                Piece::Spooled { .. } => {
                    return Err(io::Error::other(
                        "internal error: a spilled stream cannot be drained",
                    ))
                }
            }
        }
        self.held = 0;
        out(&self.tail)?;
        self.tail.clear();
        Ok(())
    }

    /// Calls `f` with the stream's bytes in order, in chunks whose lengths are multiples of
    /// `unit` bytes (a chunk boundary never splits a value). Spooled bytes are read back in
    /// chunks of about [`READ_CHUNK`] bytes.
    pub(crate) fn for_each_chunk(
        &self,
        spool: &mut Spool,
        unit: usize,
        mut f: impl FnMut(&[u8]) -> io::Result<()>,
    ) -> io::Result<()> {
        let mut carry: Vec<u8> = Vec::new();
        let mut feed =
            |bytes: &[u8], f: &mut dyn FnMut(&[u8]) -> io::Result<()>| -> io::Result<()> {
                let mut bytes = bytes;
                if !carry.is_empty() {
                    let need = unit - carry.len();
                    let take = need.min(bytes.len());
                    carry.extend_from_slice(&bytes[..take]);
                    bytes = &bytes[take..];
                    if carry.len() == unit {
                        f(&carry)?;
                        carry.clear();
                    }
                }
                let whole = bytes.len() / unit * unit;
                if whole > 0 {
                    f(&bytes[..whole])?;
                }
                carry.extend_from_slice(&bytes[whole..]);
                Ok(())
            };
        let mut chunk = Vec::new();
        for piece in &self.pieces {
            match piece {
                Piece::Memory(buffer) => feed(buffer.as_slice(), &mut f)?,
                Piece::Spooled { offset, len } => {
                    let mut done = 0u64;
                    while done < *len {
                        let n = (*len - done).min(READ_CHUNK as u64) as usize;
                        chunk.resize(n, 0);
                        spool.read_exact_at(offset + done, &mut chunk)?;
                        feed(&chunk, &mut f)?;
                        done += n as u64;
                    }
                }
            }
        }
        feed(&self.tail, &mut f)?;
        if !carry.is_empty() {
            return Err(io::Error::other(format!(
                "a stream of {} bytes is not a whole number of {unit}-byte values",
                self.len
            )));
        }
        Ok(())
    }
}

/// Appends bits (LSB first) to a [`Stream`], 64 at a time: the bit layout of Arrow validity
/// bitmaps, for array columns.
#[derive(Debug, Default)]
pub(crate) struct BitStream {
    stream: Stream,
    words: Vec<u64>,
    word: u64,
    nbits: u32,
    len: u64,
}

impl BitStream {
    pub(crate) fn new() -> BitStream {
        BitStream::default()
    }

    /// Appends the low `n` bits of `bits` (`n` ≤ 64).
    #[inline]
    pub(crate) fn push_bits(&mut self, bits: u64, n: u32) {
        debug_assert!(n <= 64);
        if n == 0 {
            return;
        }
        let bits = if n == 64 {
            bits
        } else {
            bits & ((1u64 << n) - 1)
        };
        self.word |= bits << self.nbits;
        let total = self.nbits + n;
        if total >= 64 {
            self.words.push(self.word);
            self.word = if self.nbits == 0 {
                0
            } else {
                bits >> (64 - self.nbits)
            };
            self.nbits = total - 64;
        } else {
            self.nbits = total;
        }
        self.len += n as u64;
    }

    /// Appends `n` set bits.
    pub(crate) fn push_ones(&mut self, mut n: u64) {
        while n > 0 {
            let k = n.min(64) as u32;
            self.push_bits(u64::MAX, k);
            n -= k as u64;
        }
    }

    /// Moves the whole words gathered so far into the stream.
    pub(crate) fn flush_words(&mut self) {
        self.stream.push_vec(&mut self.words);
    }

    pub(crate) fn held(&self) -> usize {
        self.stream.held() + self.words.len() * 8
    }

    pub(crate) fn spill(&mut self, spool: &mut Spool) -> io::Result<()> {
        self.flush_words();
        self.stream.spill(spool)
    }

    /// The finished bitmap: `⌈len/8⌉` bytes, unused bits zero.
    pub(crate) fn finish(mut self) -> Stream {
        self.flush_words();
        let bytes = self.nbits.div_ceil(8) as usize;
        let last = self.word.to_le_bytes();
        self.stream.push_slice(&last[..bytes]);
        debug_assert_eq!(self.stream.len(), self.len.div_ceil(8));
        self.stream
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Collect(Vec<u8>);
    impl Write for Collect {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.0.extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }
    impl CopyTarget for Collect {
        fn copy_from(&mut self, reader: &mut io::Take<&mut File>) -> io::Result<u64> {
            io::copy(reader, self)
        }
    }

    #[test]
    fn streams_keep_order_across_spills() {
        let dir = tempfile::tempdir().unwrap();
        let mut spool = Spool::new(dir.path().to_path_buf());
        let mut a = Stream::new();
        let mut b = Stream::new();
        let mut expected_a = Vec::new();
        let mut expected_b = Vec::new();
        for round in 0..20u32 {
            let mut va: Vec<u32> = (0..(round * 7919 % 40_000)).collect();
            expected_a.extend(va.iter().flat_map(|v| v.to_le_bytes()));
            a.push_vec(&mut va);
            let vb: Vec<u8> = (0..round * 3).map(|i| i as u8).collect();
            expected_b.extend_from_slice(&vb);
            b.push_buffer(Buffer::from_vec(vb));
            if round % 3 == 0 {
                a.spill(&mut spool).unwrap();
                b.spill(&mut spool).unwrap();
                assert_eq!(a.held() + b.held(), 0);
            }
        }
        for (stream, expected) in [(&a, &expected_a), (&b, &expected_b)] {
            assert_eq!(stream.len(), expected.len() as u64);
            let mut out = Collect(Vec::new());
            stream.write_to(&mut spool, &mut out).unwrap();
            assert_eq!(&out.0, expected);
            let mut chunks = Vec::new();
            stream
                .for_each_chunk(&mut spool, 4, |c| {
                    assert_eq!(c.len() % 4, 0);
                    chunks.extend_from_slice(c);
                    Ok(())
                })
                .unwrap_or_else(|e| assert!(expected.len() % 4 != 0, "{e}"));
            if expected.len() % 4 == 0 {
                assert_eq!(&chunks, expected);
            }
        }
    }

    #[test]
    fn bits_pack_lsb_first() {
        let pattern: Vec<bool> = (0..203).map(|i| i % 3 == 0 || i % 7 == 1).collect();
        for split in [1usize, 5, 63, 64, 65, 100] {
            let mut bits = BitStream::new();
            for chunk in pattern.chunks(split) {
                let mut word = 0u64;
                let mut n = 0;
                for &b in chunk {
                    if n == 64 {
                        bits.push_bits(word, 64);
                        word = 0;
                        n = 0;
                    }
                    word |= (b as u64) << n;
                    n += 1;
                }
                bits.push_bits(word, n);
            }
            let stream = bits.finish();
            let mut spool = Spool::new(std::env::temp_dir());
            let mut out = Collect(Vec::new());
            stream.write_to(&mut spool, &mut out).unwrap();
            assert_eq!(out.0.len(), 203usize.div_ceil(8));
            for (i, &b) in pattern.iter().enumerate() {
                assert_eq!(out.0[i / 8] >> (i % 8) & 1 == 1, b, "bit {i} split {split}");
            }
            assert_eq!(out.0[25] >> 3, 0, "unused bits are zero");
        }
    }
}
