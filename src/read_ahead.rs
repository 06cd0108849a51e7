//! Decoding the next batches on a thread of their own while the caller writes the current one.
//!
//! A conversion alternates between the reader (decoding) and the writer (encoding, `write(2)`);
//! run in one thread, each waits for the other. [`read_ahead`] moves the reader to its own
//! thread, a bounded number of batches ahead, so both run at once.

use std::sync::mpsc::{sync_channel, Receiver};
use std::thread::JoinHandle;

use arrow_array::{RecordBatch, RecordBatchReader};
use arrow_schema::{ArrowError, SchemaRef};

/// Batches decoded ahead by default: one being written, one waiting, one being decoded.
pub const DEFAULT_READ_AHEAD: usize = 2;

/// A [`RecordBatchReader`] whose batches are decoded on a thread of their own, at most `depth`
/// batches ahead of the caller (see [`read_ahead`]).
pub struct ReadAhead {
    schema: SchemaRef,
    batches: Option<Receiver<Result<RecordBatch, ArrowError>>>,
    thread: Option<JoinHandle<()>>,
}

/// Runs `reader` on a new thread, `depth` batches (at least one) ahead of the caller.
///
/// Batches and errors arrive in the reader's order; a panic in the reader is raised again in
/// the caller when it reaches that point. Dropping the `ReadAhead` stops the thread after the
/// batch it is decoding.
pub fn read_ahead(
    reader: Box<dyn RecordBatchReader + Send>,
    depth: usize,
) -> std::io::Result<ReadAhead> {
    let schema = reader.schema();
    let (sender, batches) = sync_channel(depth.max(1));
    let thread = std::thread::Builder::new()
        .name("arrowsmith-read-ahead".into())
        .spawn(move || {
            for batch in reader {
                let failed = batch.is_err();
                // A closed channel: the caller has stopped reading.
                if sender.send(batch).is_err() || failed {
                    break;
                }
            }
        })?;
    Ok(ReadAhead {
        schema,
        batches: Some(batches),
        thread: Some(thread),
    })
}

impl ReadAhead {
    /// Stops the reader (if it is still running) and waits for its thread.
    fn stop(&mut self) -> std::thread::Result<()> {
        self.batches = None;
        match self.thread.take() {
            Some(thread) => thread.join(),
            None => Ok(()),
        }
    }
}

impl Iterator for ReadAhead {
    type Item = Result<RecordBatch, ArrowError>;

    fn next(&mut self) -> Option<Self::Item> {
        let next = self.batches.as_ref()?.recv().ok();
        if next.is_none() {
            // The reader is done, or it panicked: then the panic goes on here.
            if let Err(panic) = self.stop() {
                std::panic::resume_unwind(panic);
            }
        }
        next
    }
}

impl RecordBatchReader for ReadAhead {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }
}

impl Drop for ReadAhead {
    fn drop(&mut self) {
        // A panic of the reader's that nobody reached is not raised from a destructor.
        let _ = self.stop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::{ArrayRef, Int64Array};
    use arrow_schema::{DataType, Field, Schema};
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    /// Yields `count` one-column batches (or an error at `fail_at`), counting what it decoded.
    struct Counting {
        schema: SchemaRef,
        next: usize,
        count: usize,
        fail_at: Option<usize>,
        decoded: Arc<AtomicUsize>,
    }

    impl Counting {
        fn new(count: usize, fail_at: Option<usize>) -> (Self, Arc<AtomicUsize>) {
            let decoded = Arc::new(AtomicUsize::new(0));
            let schema = Arc::new(Schema::new(vec![Field::new("i", DataType::Int64, false)]));
            let reader = Counting {
                schema,
                next: 0,
                count,
                fail_at,
                decoded: decoded.clone(),
            };
            (reader, decoded)
        }
    }

    impl Iterator for Counting {
        type Item = Result<RecordBatch, ArrowError>;
        fn next(&mut self) -> Option<Self::Item> {
            if self.next == self.count {
                return None;
            }
            let i = self.next;
            self.next += 1;
            self.decoded.fetch_add(1, Ordering::SeqCst);
            if Some(i) == self.fail_at {
                return Some(Err(ArrowError::ParseError(format!("batch {i} is damaged"))));
            }
            let column: ArrayRef = Arc::new(Int64Array::from(vec![i as i64; 3]));
            Some(Ok(
                RecordBatch::try_new(self.schema.clone(), vec![column]).unwrap()
            ))
        }
    }

    impl RecordBatchReader for Counting {
        fn schema(&self) -> SchemaRef {
            self.schema.clone()
        }
    }

    fn first_values(reader: ReadAhead) -> Vec<Result<i64, ArrowError>> {
        reader
            .map(|b| {
                b.map(|b| {
                    b.column(0)
                        .as_any()
                        .downcast_ref::<Int64Array>()
                        .unwrap()
                        .value(0)
                })
            })
            .collect()
    }

    #[test]
    fn test_batches_arrive_in_order_and_all_of_them() {
        let (reader, _) = Counting::new(50, None);
        let values: Vec<i64> = first_values(read_ahead(Box::new(reader), 2).unwrap())
            .into_iter()
            .map(Result::unwrap)
            .collect();
        assert_eq!(values, (0..50).collect::<Vec<_>>());
    }

    #[test]
    fn test_an_error_ends_the_stream_after_the_batches_before_it() {
        let (reader, decoded) = Counting::new(50, Some(3));
        let values = first_values(read_ahead(Box::new(reader), 2).unwrap());
        assert_eq!(values.len(), 4);
        let before: Vec<i64> = values[..3].iter().map(|v| *v.as_ref().unwrap()).collect();
        assert_eq!(before, [0, 1, 2]);
        let error = values[3].as_ref().unwrap_err().to_string();
        assert!(error.contains("batch 3 is damaged"), "{error}");
        // Nothing is decoded past the error.
        assert_eq!(decoded.load(Ordering::SeqCst), 4);
    }

    #[test]
    fn test_the_reader_stays_at_most_depth_batches_ahead_and_stops_when_dropped() {
        let (reader, decoded) = Counting::new(1_000, None);
        let mut ahead = read_ahead(Box::new(reader), 2).unwrap();
        ahead.next().unwrap().unwrap();
        std::thread::sleep(std::time::Duration::from_millis(100));
        // One taken, two waiting in the channel, one decoded and blocked on sending.
        assert!(decoded.load(Ordering::SeqCst) <= 4, "{decoded:?}");
        drop(ahead);
        assert!(decoded.load(Ordering::SeqCst) <= 4, "{decoded:?}");
    }

    #[test]
    fn test_a_panic_in_the_reader_reaches_the_caller() {
        struct Panicking(SchemaRef);
        impl Iterator for Panicking {
            type Item = Result<RecordBatch, ArrowError>;
            fn next(&mut self) -> Option<Self::Item> {
                panic!("the reader's bug")
            }
        }
        impl RecordBatchReader for Panicking {
            fn schema(&self) -> SchemaRef {
                self.0.clone()
            }
        }
        let schema = Arc::new(Schema::empty());
        let mut ahead = read_ahead(Box::new(Panicking(schema)), 2).unwrap();
        let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| ahead.next()));
        assert!(caught.is_err());
    }
}
