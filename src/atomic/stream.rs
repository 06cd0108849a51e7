//! The output of a single-file writer: an atomic file, standard output or a sink.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

use super::target::{check_target, Existing, Replaceable};
use super::AtomicFile;

/// The output of a single-file writer: a file that appears whole at [`StreamOutput::commit`],
/// standard output when the target is `-` (for a pipe into another program), or a sink the
/// caller hands in.
pub enum StreamOutput {
    /// A new file, renamed into place at the commit.
    File(AtomicFile),
    /// Standard output, flushed at the commit.
    Stdout(BufWriter<io::Stdout>),
    /// The caller's sink (a pipe, a socket, a buffer), flushed at the commit. A sink cannot be
    /// taken back, so a write that fails half-way may leave part of the output in it.
    Sink(BufWriter<Box<dyn Write + Send>>),
    /// A character device, FIFO or socket at the target path (`/dev/null`, a named pipe),
    /// written straight into and flushed at the commit, as standard output is.
    Device(BufWriter<File>, PathBuf),
}

/// How errors of a writer to a sink name their "file".
pub const SINK_NAME: &str = "<sink>";

impl StreamOutput {
    /// A new file at `target` (never standard output), renamed into place at the commit.
    pub fn file(target: &Path) -> Result<StreamOutput> {
        Ok(StreamOutput::File(AtomicFile::create(target)?))
    }

    /// The caller's sink, buffered.
    pub fn sink(sink: impl Write + Send + 'static) -> StreamOutput {
        StreamOutput::Sink(BufWriter::with_capacity(1 << 20, Box::new(sink)))
    }

    /// Whether the commit of a file flushes it to disk first (see [`AtomicFile::set_durable`]);
    /// no effect on standard output or a sink.
    pub fn set_durable(&mut self, durable: bool) {
        if let StreamOutput::File(file) = self {
            file.set_durable(durable);
        }
    }

    /// Starts writing a range of a file out early (see [`AtomicFile::start_writeback`]); no
    /// effect on standard output or a sink.
    pub fn start_writeback(&mut self, offset: u64, len: u64) {
        if let StreamOutput::File(file) = self {
            file.start_writeback(offset, len);
        }
    }

    /// The path the output will have: the target of a file, `<stdout>` or [`SINK_NAME`].
    pub fn name(&self) -> &Path {
        match self {
            StreamOutput::File(file) => file.target(),
            StreamOutput::Stdout(_) => Path::new("<stdout>"),
            StreamOutput::Sink(_) => Path::new(SINK_NAME),
            StreamOutput::Device(_, path) => path,
        }
    }

    /// Where to write one large piece: a file itself once its buffer is flushed (so the piece
    /// is not copied through the buffer), else the buffered stream.
    pub fn unbuffered(&mut self) -> io::Result<&mut dyn Write> {
        Ok(match self {
            StreamOutput::File(file) => file.file_mut()?,
            StreamOutput::Stdout(out) => out,
            StreamOutput::Sink(out) => out,
            StreamOutput::Device(out, _) => out,
        })
    }

    /// Standard output for `-`; the device, FIFO or socket at `target` if it is one, written
    /// straight into; else an [`AtomicFile`] at `target`.
    pub fn create(target: &Path) -> Result<StreamOutput> {
        if target == Path::new("-") {
            return Ok(StreamOutput::Stdout(BufWriter::with_capacity(
                1 << 20,
                io::stdout(),
            )));
        }
        if check_target(target, Replaceable::File, true)? == Existing::Stream {
            let device = std::fs::OpenOptions::new()
                .write(true)
                .open(target)
                .map_err(|e| Error::from(e).with_file(target))?;
            return Ok(StreamOutput::Device(
                BufWriter::with_capacity(1 << 20, device),
                target.to_path_buf(),
            ));
        }
        Ok(StreamOutput::File(AtomicFile::create(target)?))
    }

    /// Completes the output: the rename of a file, the flush of standard output.
    pub fn commit(self) -> Result<()> {
        match self {
            StreamOutput::File(file) => file.commit(),
            StreamOutput::Stdout(mut out) => out
                .flush()
                .map_err(|e| Error::from(e).with_file(Path::new("<stdout>"))),
            StreamOutput::Sink(mut out) => out
                .flush()
                .map_err(|e| Error::from(e).with_file(Path::new(SINK_NAME))),
            StreamOutput::Device(mut out, path) => {
                out.flush().map_err(|e| Error::from(e).with_file(&path))
            }
        }
    }
}

impl Write for StreamOutput {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            StreamOutput::File(f) => f.write(buf),
            StreamOutput::Stdout(o) => o.write(buf),
            StreamOutput::Sink(o) => o.write(buf),
            StreamOutput::Device(o, _) => o.write(buf),
        }
    }
    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        match self {
            StreamOutput::File(f) => f.write_all(buf),
            StreamOutput::Stdout(o) => o.write_all(buf),
            StreamOutput::Sink(o) => o.write_all(buf),
            StreamOutput::Device(o, _) => o.write_all(buf),
        }
    }
    fn flush(&mut self) -> io::Result<()> {
        match self {
            StreamOutput::File(f) => f.flush(),
            StreamOutput::Stdout(o) => o.flush(),
            StreamOutput::Sink(o) => o.flush(),
            StreamOutput::Device(o, _) => o.flush(),
        }
    }
}

/// Where a single-file writer is to send its bytes, before anything is opened: a writer checks
/// its options and schema first, naming [`Destination::name`] in its errors, and opens the
/// output only once they pass, so a refused write never creates a temporary file.
pub(crate) enum Destination {
    /// A new file at the path, renamed into place at the commit.
    File(PathBuf),
    /// A new file at the path, standard output when the path is `-`, or the device or FIFO
    /// at the path, written straight into.
    FileOrStdout(PathBuf),
    /// The caller's sink, named [`SINK_NAME`] in errors.
    Sink(StreamOutput),
}

impl Destination {
    /// The caller's sink, buffered.
    pub(crate) fn sink(sink: impl Write + Send + 'static) -> Destination {
        Destination::Sink(StreamOutput::sink(sink))
    }

    /// The name errors give the output: the path as the caller gave it, or [`SINK_NAME`].
    pub(crate) fn name(&self) -> &Path {
        match self {
            Destination::File(path) | Destination::FileOrStdout(path) => path,
            Destination::Sink(_) => Path::new(SINK_NAME),
        }
    }

    /// Opens the output: creates the temporary file, or takes standard output or the sink.
    /// `durable` says whether a file is flushed to disk before its rename (see
    /// [`AtomicFile::set_durable`]).
    pub(crate) fn open(self, durable: bool) -> Result<StreamOutput> {
        let mut output = match self {
            Destination::File(path) => StreamOutput::file(&path)?,
            Destination::FileOrStdout(path) => StreamOutput::create(&path)?,
            Destination::Sink(sink) => sink,
        };
        output.set_durable(durable);
        Ok(output)
    }
}
