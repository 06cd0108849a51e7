//! Every writer through arrow's `RecordBatchWriter` and into a sink: the same bytes as
//! written to a file, and our errors inside arrow's.

use std::io::Write;
use std::path::Path;
use std::sync::{Arc, Mutex};

use arrow_array::{Int64Array, RecordBatch, RecordBatchReader, RecordBatchWriter, StringArray};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use arrowsmith::{BatchWriter, Result, WriteOptions};

/// A writer's `write` then `close`, through arrow's trait.
type WriteAndClose = Box<dyn FnOnce(&RecordBatch) -> Result<()>>;

/// A sink the test can read back after the writer, which owns it, is gone.
#[derive(Clone, Default)]
struct SharedSink(Arc<Mutex<Vec<u8>>>);

impl Write for SharedSink {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl SharedSink {
    fn bytes(&self) -> Vec<u8> {
        self.0.lock().unwrap().clone()
    }
}

fn table() -> RecordBatch {
    let schema = Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, true),
        Field::new("name", DataType::Utf8, true),
    ]));
    RecordBatch::try_new(
        schema,
        vec![
            Arc::new(Int64Array::from(vec![Some(7), None, Some(-3)])),
            Arc::new(StringArray::from(vec![Some("a"), Some("bé"), None])),
        ],
    )
    .unwrap()
}

/// Writes `batch` once to a file through `to_path` and once to a sink through `to_sink`
/// (closed as a `RecordBatchWriter`), and checks that both hold the same bytes.
fn same_bytes<P, S>(name: &str, batch: &RecordBatch, to_path: P, to_sink: S)
where
    P: FnOnce(&Path, SchemaRef) -> Result<Box<dyn BatchWriter>>,
    S: FnOnce(SharedSink, SchemaRef) -> Result<WriteAndClose>,
{
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(name);
    let mut writer = to_path(&path, batch.schema()).unwrap();
    writer.write(batch).unwrap();
    writer.finish().unwrap();
    let on_disk = std::fs::read(&path).unwrap();

    let sink = SharedSink::default();
    let write_and_close = to_sink(sink.clone(), batch.schema()).unwrap();
    write_and_close(batch).unwrap();
    assert!(!on_disk.is_empty(), "{name}");
    assert!(
        sink.bytes() == on_disk,
        "{name}: the sink's bytes differ from the file's"
    );
}

/// Drives a writer through arrow's trait only, as a caller generic over writers would.
fn through_arrow<W: RecordBatchWriter + 'static>(writer: W) -> WriteAndClose {
    Box::new(move |batch| {
        let mut writer = writer;
        writer.write(batch)?;
        writer.close()?;
        Ok(())
    })
}

#[test]
fn every_single_file_writer_writes_the_same_bytes_to_a_sink_as_to_a_file() {
    let batch = table();
    let options = WriteOptions::default();
    same_bytes(
        "t.jay",
        &batch,
        |p, s| {
            Ok(Box::new(arrowsmith::jay::Writer::try_new(
                p,
                s,
                Default::default(),
            )?))
        },
        |k, s| {
            let w = arrowsmith::jay::Writer::try_new_to_sink(k, s, Default::default())?;
            Ok(through_arrow(w))
        },
    );
    same_bytes(
        "t.ds",
        &batch,
        |p, s| {
            let o = arrowsmith::dataseries::WriterOptions::default().with_type_name("t");
            Ok(Box::new(arrowsmith::dataseries::Writer::try_new(p, s, o)?))
        },
        |k, s| {
            let o = arrowsmith::dataseries::WriterOptions::default().with_type_name("t");
            Ok(through_arrow(
                arrowsmith::dataseries::Writer::try_new_to_sink(k, s, o)?,
            ))
        },
    );
    let one_column = batch.project(&[0]).unwrap();
    same_bytes(
        "t.bin",
        &one_column,
        |p, s| {
            let w = arrowsmith::filo::VectorWriter::try_new(p, s, Default::default())?;
            Ok(Box::new(w))
        },
        |k, s| {
            let w = arrowsmith::filo::VectorWriter::try_new_to_sink(k, s, Default::default())?;
            Ok(through_arrow(w))
        },
    );
    let points: Vec<RecordBatch> = arrowsmith::vs::ReaderBuilder::new()
        .build("data/vs/f64_r1_plain.vs")
        .unwrap()
        .collect::<std::result::Result<_, _>>()
        .unwrap();
    same_bytes(
        "t.vs",
        &points[0],
        |p, s| {
            Ok(Box::new(arrowsmith::vs::Writer::try_new(
                p,
                s,
                Default::default(),
            )?))
        },
        |k, s| {
            let w = arrowsmith::vs::Writer::try_new_to_sink(k, s, Default::default())?;
            Ok(through_arrow(w))
        },
    );
    use arrowsmith::ecosystem::{csv, ipc, ndjson, parquet};
    same_bytes(
        "t.parquet",
        &batch,
        |p, s| Ok(Box::new(parquet::Writer::try_new(p, s, &options)?)),
        |k, s| {
            Ok(through_arrow(parquet::Writer::try_new_to_sink(
                k, s, &options,
            )?))
        },
    );
    same_bytes(
        "t.arrow",
        &batch,
        |p, s| Ok(Box::new(ipc::Writer::try_new_file(p, s, &options)?)),
        |k, s| {
            Ok(through_arrow(ipc::Writer::try_new_file_to_sink(
                k, s, &options,
            )?))
        },
    );
    same_bytes(
        "t.arrows",
        &batch,
        |p, s| Ok(Box::new(ipc::Writer::try_new_stream(p, s, &options)?)),
        |k, s| {
            Ok(through_arrow(ipc::Writer::try_new_stream_to_sink(
                k, s, &options,
            )?))
        },
    );
    same_bytes(
        "t.csv",
        &batch,
        |p, s| Ok(Box::new(csv::Writer::try_new(p, s, &options)?)),
        |k, s| Ok(through_arrow(csv::Writer::try_new_to_sink(k, s, &options)?)),
    );
    same_bytes(
        "t.ndjson",
        &batch,
        |p, s| Ok(Box::new(ndjson::Writer::try_new(p, s, &options)?)),
        |k, s| {
            Ok(through_arrow(ndjson::Writer::try_new_to_sink(
                k, s, &options,
            )?))
        },
    );
}

#[test]
fn a_record_batch_writer_reports_our_error_inside_arrows() {
    let dir = tempfile::tempdir().unwrap();
    let wrong = RecordBatch::try_new(
        Arc::new(Schema::new(vec![Field::new("x", DataType::Int64, true)])),
        vec![Arc::new(Int64Array::from(vec![1]))],
    )
    .unwrap();
    let schema = arrowsmith::vs::ReaderBuilder::new()
        .build("data/vs/f64_r1_plain.vs")
        .unwrap()
        .schema();
    let path = dir.path().join("t.vs");
    let mut writer = arrowsmith::vs::Writer::try_new(&path, schema, Default::default()).unwrap();
    let error = RecordBatchWriter::write(&mut writer, &wrong).unwrap_err();
    let ours = arrowsmith::Error::from_arrow(&error).expect("our error inside");
    assert_eq!(
        ours.class(),
        arrowsmith::ErrorClass::InvalidArgument,
        "{ours}"
    );
    assert_eq!(ours.file(), Some(path.as_path()));
}
