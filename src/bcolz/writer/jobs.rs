//! Chunk jobs in flight: [`ChunkJobs`] starts them on the rayon pool, at most a few per thread
//! so memory stays bounded, and gathers their results (each chunk's cbytes, or the first
//! error); [`queue_full_chunks`] and [`queue_leftovers`] cut the columns' pending rows into
//! jobs.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::mpsc;

use super::chunk::ChunkJob;
use super::column::Column;
use crate::bcolz::background;
use crate::error::{Error, ErrorClass, Result};

/// Chunk jobs running on the rayon pool while the caller goes on with the next batch; at most
/// `limit` at a time (each holds one chunk's rows and output), so memory stays bounded.
pub(in crate::bcolz) struct ChunkJobs {
    done_tx: mpsc::Sender<(usize, u64, Result<u64>)>,
    done: mpsc::Receiver<(usize, u64, Result<u64>)>,
    in_flight: usize,
    limit: usize,
    failed: Option<Error>,
}

impl ChunkJobs {
    pub(in crate::bcolz) fn new() -> ChunkJobs {
        let (done_tx, done) = mpsc::channel();
        ChunkJobs {
            done_tx,
            done,
            in_flight: 0,
            limit: 2 * rayon::current_num_threads() + 2,
            failed: None,
        }
    }

    /// Starts a job, after waiting for an earlier one if `limit` are running.
    pub(super) fn submit(&mut self, columns: &mut [Column], job: ChunkJob) -> Result<()> {
        while self.in_flight >= self.limit {
            self.collect_one(columns);
        }
        self.check()?;
        let tx = self.done_tx.clone();
        self.in_flight += 1;
        rayon::spawn_fifo(move || {
            let (c, k) = (job.column, job.index);
            let result = catch_unwind(AssertUnwindSafe(|| job.run())).unwrap_or_else(|_| {
                Err(Error::new(
                    ErrorClass::Io,
                    format!("writing chunk {k} failed unexpectedly"),
                ))
            });
            let _ = tx.send((c, k, result));
        });
        Ok(())
    }

    fn collect_one(&mut self, columns: &mut [Column]) {
        let Some((c, k, result)) = background::receive(&self.done) else {
            unreachable!("this struct holds a sender");
        };
        self.in_flight -= 1;
        match result {
            Ok(cbytes) => {
                // A leftover chunk is not listed: its cbytes do not count in meta/sizes.
                if let Some(chunk) = columns[c].chunks.get_mut(k as usize) {
                    chunk.1 = cbytes;
                }
            }
            Err(e) => {
                if self.failed.is_none() {
                    self.failed = Some(e.with_column(c, Some(&columns[c].name)));
                }
            }
        }
    }

    /// The first error of a finished job, if any.
    pub(in crate::bcolz) fn check(&mut self) -> Result<()> {
        match self.failed.take() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// Waits for every job; the first error if one failed.
    pub(in crate::bcolz) fn finish(&mut self, columns: &mut [Column]) -> Result<()> {
        while self.in_flight > 0 {
            self.collect_one(columns);
        }
        self.check()
    }
}

impl Drop for ChunkJobs {
    /// Jobs still running write into the dataset directory: wait for them before it is removed.
    fn drop(&mut self) {
        while self.in_flight > 0 && background::receive(&self.done).is_some() {
            self.in_flight -= 1;
        }
    }
}

/// Cuts every full chunk pending in any column and hands it to the chunk jobs.
pub(in crate::bcolz) fn queue_full_chunks(
    columns: &mut [Column],
    jobs: &mut ChunkJobs,
) -> Result<()> {
    let mut queued = Vec::new();
    for (c, col) in columns.iter_mut().enumerate() {
        let Some(chunklen) = col.chunklen else {
            continue;
        };
        let chunklen = chunklen as usize;
        while col.pending_rows >= chunklen {
            queued.push(cut_chunk(col, c, chunklen));
        }
    }
    for job in queued {
        jobs.submit(columns, job)?;
    }
    Ok(())
}

/// Hands the rows left in each column (fewer than a chunk) to the chunk jobs as its last chunk.
pub(in crate::bcolz) fn queue_leftovers(
    columns: &mut [Column],
    jobs: &mut ChunkJobs,
) -> Result<()> {
    let mut queued = Vec::new();
    for (c, col) in columns.iter_mut().enumerate() {
        if col.pending_rows > 0 {
            let rows = col.pending_rows;
            let mut job = cut_chunk(col, c, rows);
            // The leftover is not a full chunk: it does not count in `chunks`.
            col.chunks.pop();
            job.index = col.chunks.len() as u64;
            queued.push(job);
        }
    }
    for job in queued {
        jobs.submit(columns, job)?;
    }
    Ok(())
}

/// Cuts the next `rows` pending rows of column `c` into a chunk job, listing the chunk at the
/// column's current width.
fn cut_chunk(col: &mut Column, c: usize, rows: usize) -> ChunkJob {
    let width = col.width;
    let index = col.chunks.len() as u64;
    col.chunks.push((width, 0));
    ChunkJob {
        column: c,
        index,
        spec: col.chunk_spec(width),
        pieces: col.take_rows(rows),
    }
}
