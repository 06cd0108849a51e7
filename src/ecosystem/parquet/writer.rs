//! Writing Parquet: row groups gathered from the batches, their columns encoded in parallel
//! on the rayon pool and appended to the file in order, with `ArrowWriter`'s bytes.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use ::parquet::arrow::arrow_writer::{
    ArrowColumnChunk, ArrowColumnWriter, ArrowRowGroupWriterFactory,
};
use ::parquet::arrow::{ArrowSchemaConverter, ArrowWriter};
use ::parquet::basic::{
    BrotliLevel, Compression, Encoding, GzipLevel, Type as PhysicalType, ZstdLevel,
};
use ::parquet::errors::ParquetError;
use ::parquet::file::metadata::KeyValue;
use ::parquet::file::properties::WriterProperties;
use ::parquet::file::properties::DEFAULT_MAX_ROW_GROUP_ROW_COUNT;
use ::parquet::file::writer::SerializedFileWriter;
use ::parquet::schema::types::ColumnPath;
use arrow_array::RecordBatch;
use arrow_schema::{Schema, SchemaRef};

use super::super::{split_compression, InFile};
use crate::atomic::{Destination, StreamOutput};
use crate::error::{Error, ErrorClass, Result};
use crate::options::WriteOptions;
use crate::write::{BatchWriter, WriteSummary};

/// The zstd level written when `--compression zstd` names none (zstd's own default).
pub const DEFAULT_ZSTD_LEVEL: i32 = 3;

/// The Parquet codec named by a compression option (`zstd` when there is none).
pub fn compression(spec: Option<&str>) -> Result<Compression> {
    let Some(spec) = spec else {
        return zstd(DEFAULT_ZSTD_LEVEL);
    };
    let (name, level) = split_compression(spec)?;
    let no_level = |c: Compression| match level {
        None => Ok(c),
        Some(_) => Err(Error::invalid_argument(format!(
            "the {name} codec takes no level: {spec:?}"
        ))),
    };
    let bad_level = |e: ::parquet::errors::ParquetError| {
        Error::invalid_argument(format!("compression {spec:?}: {e}"))
    };
    match name.as_str() {
        "none" | "uncompressed" => no_level(Compression::UNCOMPRESSED),
        "snappy" => no_level(Compression::SNAPPY),
        "lz4" | "lz4_raw" => no_level(Compression::LZ4_RAW),
        "zstd" => zstd(level.unwrap_or(DEFAULT_ZSTD_LEVEL)),
        "gzip" => {
            let level = match level {
                None => GzipLevel::default(),
                Some(l) => u32::try_from(l)
                    .map_err(|_| Error::invalid_argument(format!("compression {spec:?}: the gzip level is 0 to 9")))
                    .and_then(|l| GzipLevel::try_new(l).map_err(bad_level))?,
            };
            Ok(Compression::GZIP(level))
        }
        "brotli" => {
            let level = match level {
                None => BrotliLevel::default(),
                Some(l) => u32::try_from(l)
                    .map_err(|_| Error::invalid_argument(format!("compression {spec:?}: the brotli level is 0 to 11")))
                    .and_then(|l| BrotliLevel::try_new(l).map_err(bad_level))?,
            };
            Ok(Compression::BROTLI(level))
        }
        _ => Err(Error::invalid_argument(format!(
            "unknown Parquet compression {spec:?}; use none, snappy, gzip, lz4, zstd or brotli, with an optional level as zstd:9"
        ))),
    }
}

fn zstd(level: i32) -> Result<Compression> {
    ZstdLevel::try_new(level)
        .map(Compression::ZSTD)
        .map_err(|e| Error::invalid_argument(format!("zstd level {level}: {e}")))
}

/// Writes record batches into a new Parquet file, encoding row groups on other threads.
///
/// `write` only gathers rows. A full row group is handed to the rayon pool as one task per
/// Arrow column (arrow-rs's `ArrowColumnWriter`s), and an appender thread writes the encoded
/// row groups to the file in order. Several row groups are encoded at once — as many as the
/// pool has threads, at least two — so that a row group's long column (a string column, say)
/// does not leave the other cores idle while its short ones are done, and the caller reads the
/// next rows meanwhile. Memory is bounded by those row groups in Arrow form and their encoded
/// pages, plus the one being gathered. The bytes are those `ArrowWriter` writes, with the same
/// statistics and embedded Arrow schema.
pub struct Writer {
    schema: SchemaRef,
    path: PathBuf,
    /// Rows per row group.
    row_group_rows: usize,
    /// Rows gathered for the next row group.
    pending: Vec<RecordBatch>,
    pending_rows: usize,
    /// Row groups handed to the encoders so far (the next one's index).
    row_groups: usize,
    appender: Option<Appender>,
    /// Makes each row group's column writers.
    factory: ArrowRowGroupWriterFactory,
    rows: u64,
}

/// The thread that appends encoded row groups to the file, and the way to it; it owns the file
/// until `finish` takes it back.
struct Appender {
    encoded: std::sync::mpsc::SyncSender<EncodingRowGroup>,
    thread: std::thread::JoinHandle<Result<SerializedFileWriter<StreamOutput>>>,
}

/// A row group whose columns are being encoded on the rayon pool: each column's task sends
/// its index and its chunks (one per leaf) when done.
struct EncodingRowGroup {
    columns: usize,
    done: std::sync::mpsc::Receiver<(usize, ColumnResult)>,
}

type ColumnResult = std::result::Result<Vec<ArrowColumnChunk>, ParquetError>;

/// The dictionary a column chunk may build before it falls back to plain encoding. Columns of
/// few distinct values (thousands) still get one; a column of many distinct values gives up
/// after 64 KiB of them instead of after 1 MiB (the crate's default), which had cost hashing
/// every value for a dictionary that was then thrown away. On the 10M-row benchmark frame
/// (docs/performance.md) this made the conversion 10 % faster and the file a third smaller:
/// zstd compresses the plain pages better than the fallback's mix.
const DICTIONARY_PAGE_LIMIT: usize = 64 << 10;

/// The writer's properties for `schema`. An integer column whose dictionary overflows falls
/// back to DELTA_BINARY_PACKED rather than PLAIN: ids, counters and timestamps (the usual
/// integer columns of many distinct values) are near-sorted, so their deltas pack into a few
/// bits each, which is smaller than plain values and leaves zstd little to do. Every Parquet
/// reader decodes it (it is part of the format since 2.0, in version 1 data pages as well).
fn writer_properties(
    schema: &SchemaRef,
    codec: Compression,
    row_group_rows: usize,
) -> std::result::Result<WriterProperties, ParquetError> {
    let mut props = WriterProperties::builder()
        .set_compression(codec)
        .set_max_row_group_row_count(Some(row_group_rows))
        .set_dictionary_page_size_limit(DICTIONARY_PAGE_LIMIT)
        .set_key_value_metadata(footer_key_values(schema));
    // Properties go by column path, and Arrow allows two columns of one name: a path gets the
    // encoding only when every column at it is an integer column.
    let parquet_schema = ArrowSchemaConverter::new().convert(schema)?;
    let mut integer_paths: HashMap<&ColumnPath, bool> = HashMap::new();
    for column in parquet_schema.columns() {
        let integer = matches!(
            column.physical_type(),
            PhysicalType::INT32 | PhysicalType::INT64
        );
        *integer_paths.entry(column.path()).or_insert(true) &= integer;
    }
    for (path, all) in integer_paths {
        if all {
            props = props.set_column_encoding(path.clone(), Encoding::DELTA_BINARY_PACKED);
        }
    }
    Ok(props.build())
}

/// The schema's metadata as plain key/value pairs of the footer, as pyarrow writes it, beside
/// the `ARROW:schema` entry that `ArrowWriter` adds and that holds it too: readers that do not
/// decode the Arrow schema (`pq.ParquetFile(…).metadata.metadata`, Polars'
/// `read_parquet_metadata`, Spark) then see the bcolz attrs, the DataSeries type, the Jay keys and
/// the VS attributes. In key order, so that the same input gives the same bytes.
fn footer_key_values(schema: &Schema) -> Option<Vec<KeyValue>> {
    let mut pairs: Vec<KeyValue> = schema
        .metadata()
        .iter()
        .filter(|(key, _)| key.as_str() != ::parquet::arrow::ARROW_SCHEMA_META_KEY)
        .map(|(key, value)| KeyValue::new(key.clone(), value.clone()))
        .collect();
    pairs.sort_by(|a, b| a.key.cmp(&b.key));
    (!pairs.is_empty()).then_some(pairs)
}

impl Writer {
    /// Zstd unless `options.compression` says otherwise; `options.row_group_size` rows per row
    /// group (1,048,576, the `parquet` crate's default, otherwise).
    pub fn try_new(path: &Path, schema: SchemaRef, options: &WriteOptions) -> Result<Writer> {
        Writer::start(Destination::File(path.into()), schema, options)
    }

    super::super::sink_constructor!();

    fn start(output: Destination, schema: SchemaRef, options: &WriteOptions) -> Result<Writer> {
        let path = output.name().to_path_buf();
        let codec = compression(options.compression.as_deref()).map_err(|e| e.with_file(&path))?;
        let row_group_rows = match options.row_group_size {
            Some(0) => {
                return Err(
                    Error::invalid_argument("the row group size must be at least 1 row")
                        .with_file(&path),
                )
            }
            Some(n) => n,
            None => DEFAULT_MAX_ROW_GROUP_ROW_COUNT,
        };
        let props = writer_properties(&schema, codec, row_group_rows).in_file(&path)?;
        // ArrowWriter sets up the Parquet schema and the embedded Arrow schema; its lower
        // layers then take the row groups we encode ourselves.
        let (file_writer, factory) =
            ArrowWriter::try_new(output.open(options.durable)?, schema.clone(), Some(props))
                .and_then(ArrowWriter::into_serialized_writer)
                .in_file(&path)?;
        // The appender waits on one row group while the channel holds the others in flight.
        let in_flight = rayon::current_num_threads().max(2);
        let (encoded, queue) = std::sync::mpsc::sync_channel(in_flight - 1);
        let thread = std::thread::Builder::new()
            .name("arrowsmith-parquet".into())
            .spawn(move || append_row_groups(file_writer, queue))
            .map_err(|e| Error::from(e).with_file(&path))?;
        Ok(Writer {
            schema,
            path,
            row_group_rows,
            pending: Vec::new(),
            pending_rows: 0,
            row_groups: 0,
            appender: Some(Appender { encoded, thread }),
            factory,
            rows: 0,
        })
    }
}

impl Writer {
    /// Starts encoding the gathered rows as one row group and hands it to the appender; blocks
    /// while as many row groups as allowed are in flight.
    fn send_row_group(&mut self) -> Result<()> {
        let batches = Arc::new(std::mem::take(&mut self.pending));
        self.pending_rows = 0;
        let writers = self
            .factory
            .create_column_writers(self.row_groups)
            .in_file(&self.path)?;
        self.row_groups += 1;
        let row_group = encode_row_group(&self.schema, batches, writers).in_file(&self.path)?;
        let sent = match &self.appender {
            Some(appender) => appender.encoded.send(row_group).is_ok(),
            None => false,
        };
        if !sent {
            // The appender stopped on an error: it is the one to report.
            return Err(self.join().err().unwrap_or_else(|| {
                Error::new(ErrorClass::Io, "the Parquet encoder stopped").with_file(&self.path)
            }));
        }
        Ok(())
    }

    /// Waits for the appender to write everything it was given and takes the file back.
    fn join(&mut self) -> Result<SerializedFileWriter<StreamOutput>> {
        let Some(Appender { encoded, thread }) = self.appender.take() else {
            return Err(
                Error::new(ErrorClass::Io, "the Parquet writer already failed")
                    .with_file(&self.path),
            );
        };
        drop(encoded);
        match thread.join() {
            Ok(result) => result.map_err(|e| e.with_file(&self.path)),
            Err(panic) => std::panic::resume_unwind(panic),
        }
    }
}

impl Drop for Writer {
    /// An unfinished writer waits for its appender (and so for the encoders it waits on), so
    /// that the temporary file is gone when the writer is (the all-or-nothing promise holds at
    /// once, not some time later).
    fn drop(&mut self) {
        if let Some(Appender { encoded, thread }) = self.appender.take() {
            drop(encoded);
            let _ = thread.join();
        }
    }
}

/// Starts encoding a row group: one rayon task per field of the schema.
fn encode_row_group(
    schema: &SchemaRef,
    batches: Arc<Vec<RecordBatch>>,
    writers: Vec<ArrowColumnWriter>,
) -> std::result::Result<EncodingRowGroup, ParquetError> {
    let (done, results) = std::sync::mpsc::channel();
    let Some(first) = batches.first() else {
        return Ok(EncodingRowGroup {
            columns: 0,
            done: results,
        });
    };
    // Writers come one per leaf column, the leaves of each field in order: hand each field its
    // own writers.
    let mut writers = writers.into_iter();
    let mut per_field = Vec::with_capacity(schema.fields().len());
    for (i, field) in schema.fields().iter().enumerate() {
        let leaves = ::parquet::arrow::arrow_writer::compute_leaves(field, first.column(i))?;
        per_field.push(writers.by_ref().take(leaves.len()).collect::<Vec<_>>());
    }
    let columns = per_field.len();
    // On a thread of the pool itself, blocking on the appender could leave no thread to run the
    // tasks it waits for: encode right here instead.
    let inline = rayon::current_thread_index().is_some();
    for (i, writers) in per_field.into_iter().enumerate() {
        let (schema, batches, done) = (schema.clone(), batches.clone(), done.clone());
        let task = move || {
            // The appender may have gone on an earlier error; then nobody waits for this.
            let _ = done.send((i, encode_column(&schema, &batches, i, writers)));
        };
        if inline {
            task();
        } else {
            rayon::spawn(task);
        }
    }
    Ok(EncodingRowGroup {
        columns,
        done: results,
    })
}

/// Feeds field `i` of every batch to the field's column writers and closes them; a panic
/// becomes this column's error instead of taking the pool down.
fn encode_column(
    schema: &SchemaRef,
    batches: &[RecordBatch],
    i: usize,
    mut writers: Vec<ArrowColumnWriter>,
) -> ColumnResult {
    let field = schema.field(i);
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        for batch in batches {
            let leaves = ::parquet::arrow::arrow_writer::compute_leaves(field, batch.column(i))?;
            for (writer, leaf) in writers.iter_mut().zip(&leaves) {
                writer.write(leaf)?;
            }
        }
        writers
            .into_iter()
            .map(ArrowColumnWriter::close)
            .collect::<ColumnResult>()
    }))
    .unwrap_or_else(|_| {
        Err(ParquetError::General(format!(
            "encoding column {} of a row group panicked",
            field.name()
        )))
    })
}

/// The appender thread: waits for each row group's columns in the order the row groups were
/// started and appends them to the file, until the writer hangs up.
fn append_row_groups(
    mut file: SerializedFileWriter<StreamOutput>,
    queue: std::sync::mpsc::Receiver<EncodingRowGroup>,
) -> Result<SerializedFileWriter<StreamOutput>> {
    for EncodingRowGroup { columns, done } in queue {
        if columns == 0 {
            continue;
        }
        let mut chunks: Vec<Option<Vec<ArrowColumnChunk>>> = (0..columns).map(|_| None).collect();
        for _ in 0..columns {
            let (i, result) = done.recv().map_err(|_| {
                Error::new(
                    ErrorClass::Io,
                    "a Parquet column encoder stopped without a result",
                )
            })?;
            chunks[i] = Some(result?);
        }
        let mut row_group = file.next_row_group()?;
        for chunk in chunks.into_iter().flatten().flatten() {
            chunk.append_to_row_group(&mut row_group)?;
        }
        row_group.close()?;
    }
    Ok(file)
}

impl BatchWriter for Writer {
    fn write(&mut self, batch: &RecordBatch) -> Result<()> {
        let same_types = batch.num_columns() == self.schema.fields().len()
            && batch
                .columns()
                .iter()
                .zip(self.schema.fields())
                .all(|(column, field)| column.data_type() == field.data_type());
        if !same_types {
            return Err(Error::invalid_argument(
                "the batch's columns are not those the Parquet writer was created with",
            )
            .with_file(&self.path));
        }
        let mut at = 0;
        while at < batch.num_rows() {
            let take = (self.row_group_rows - self.pending_rows).min(batch.num_rows() - at);
            self.pending.push(batch.slice(at, take));
            self.pending_rows += take;
            at += take;
            if self.pending_rows == self.row_group_rows {
                self.send_row_group()?;
            }
        }
        self.rows += batch.num_rows() as u64;
        Ok(())
    }

    fn finish(mut self: Box<Self>) -> Result<WriteSummary> {
        if self.pending_rows > 0 {
            self.send_row_group()?;
        }
        // `into_inner` writes the footer.
        let file = self.join()?;
        file.into_inner().in_file(&self.path)?.commit()?;
        Ok(WriteSummary {
            rows: self.rows,
            warnings: Vec::new(),
        })
    }
}

#[cfg(test)]
mod tests {
    use std::fs::File;

    use super::super::{describe, open};
    use super::*;
    use crate::scan::ScanOptions;
    use ::parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
    use ::parquet::file::reader::{FileReader, SerializedFileReader};
    use arrow_array::builder::{ListBuilder, StringDictionaryBuilder};
    use arrow_array::types::Int32Type;
    use arrow_array::RecordBatchReader;
    use arrow_array::{ArrayRef, Float64Array, Int64Array, StringArray};
    use arrow_schema::{DataType, Field, Schema};

    #[test]
    fn integer_columns_fall_back_to_delta_unless_a_column_of_another_type_shares_their_name() {
        let rows = 50_000; // 400 KB of distinct int64 values: past the 64 KiB dictionary
        let ints = || Arc::new(Int64Array::from_iter_values(0..rows as i64)) as ArrayRef;
        let schema = Arc::new(Schema::new(vec![
            Field::new("id", DataType::Int64, false),
            Field::new("twice", DataType::Int64, false),
            Field::new("twice", DataType::Utf8, false),
            Field::new("price", DataType::Float64, false),
        ]));
        let text = StringArray::from_iter_values((0..rows).map(|i| i.to_string()));
        let prices = Float64Array::from_iter_values((0..rows).map(|i| i as f64 / 3.0));
        let batch = RecordBatch::try_new(
            schema.clone(),
            vec![ints(), ints(), Arc::new(text), Arc::new(prices)],
        )
        .unwrap();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.parquet");
        let mut writer = Writer::try_new(&path, schema, &WriteOptions::default()).unwrap();
        BatchWriter::write(&mut writer, &batch).unwrap();
        Box::new(writer).finish().unwrap();

        let reader = SerializedFileReader::new(File::open(&path).unwrap()).unwrap();
        let group = reader.metadata().row_group(0);
        let delta = |i: usize| {
            group
                .column(i)
                .encodings()
                .any(|e| e == Encoding::DELTA_BINARY_PACKED)
        };
        assert!(delta(0), "id");
        assert!(
            !delta(1),
            "an int64 named like a string column keeps the default"
        );
        assert!(!delta(3), "floats keep the default");
        let back: Vec<RecordBatch> =
            ParquetRecordBatchReaderBuilder::try_new(File::open(&path).unwrap())
                .unwrap()
                .build()
                .unwrap()
                .collect::<std::result::Result<_, _>>()
                .unwrap();
        assert_eq!(back.iter().map(|b| b.num_rows()).sum::<usize>(), rows);
        assert_eq!(
            back[0].column(0).as_ref(),
            batch.column(0).slice(0, back[0].num_rows()).as_ref()
        );
    }

    /// Flat, nested, dictionary and nullable columns, so that fields of several leaves and
    /// repetition levels go through the per-column encoders.
    fn batch(start: usize, rows: usize) -> RecordBatch {
        let mut lists = ListBuilder::new(arrow_array::builder::Int64Builder::new());
        let mut dict = StringDictionaryBuilder::<Int32Type>::new();
        for i in start..start + rows {
            if i % 11 == 0 {
                lists.append_null();
            } else {
                lists.values().append_slice(&vec![i as i64; i % 4]);
                lists.append(true);
            }
            dict.append_value(["red", "green", "blue"][i % 3]);
        }
        let columns: Vec<ArrayRef> = vec![
            Arc::new(Int64Array::from_iter_values(
                (start..start + rows).map(|i| i as i64),
            )),
            Arc::new(Float64Array::from_iter(
                (start..start + rows).map(|i| (i % 5 != 0).then_some(i as f64 * 0.25)),
            )),
            Arc::new(StringArray::from_iter(
                (start..start + rows).map(|i| (i % 7 != 0).then(|| format!("value {i}"))),
            )),
            Arc::new(lists.finish()),
            Arc::new(dict.finish()),
        ];
        let fields: Vec<Field> = columns
            .iter()
            .zip(["id", "x", "s", "l", "d"])
            .map(|(c, name)| Field::new(name, c.data_type().clone(), true))
            .collect();
        RecordBatch::try_new(Arc::new(Schema::new(fields)), columns).unwrap()
    }

    /// Writes the test's batches (odd sizes that straddle row-group boundaries) with our
    /// writer at `ours` and with `ArrowWriter` into memory; returns both files' bytes.
    fn ours_and_arrow_writers(ours: &Path) -> (Vec<u8>, Vec<u8>, usize) {
        let options = WriteOptions {
            row_group_size: Some(3_000),
            ..Default::default()
        };
        let schema = batch(0, 0).schema();
        let mut writer = Writer::try_new(ours, schema.clone(), &options).unwrap();
        let mut reference_input = Vec::new();
        let mut start = 0;
        for len in [1, 999, 2_500, 4_321, 17, 3_000, 162] {
            let b = batch(start, len);
            BatchWriter::write(&mut writer, &b).unwrap();
            reference_input.push(b);
            start += len;
        }
        let summary = Box::new(writer).finish().unwrap();
        assert_eq!(summary.rows, start as u64);

        let props = writer_properties(&schema, compression(None).unwrap(), 3_000).unwrap();
        let mut reference = Vec::new();
        let mut arrow_writer = ArrowWriter::try_new(&mut reference, schema, Some(props)).unwrap();
        for b in &reference_input {
            arrow_writer.write(b).unwrap();
        }
        arrow_writer.close().unwrap();
        (std::fs::read(ours).unwrap(), reference, start)
    }

    #[test]
    fn test_parallel_encoding_writes_the_bytes_of_arrow_writer() {
        let dir = tempfile::tempdir().unwrap();
        let ours = dir.path().join("ours.parquet");
        let (written, reference, start) = ours_and_arrow_writers(&ours);
        assert_eq!(written, reference);

        let info = describe(&ours).unwrap();
        assert_eq!(info.num_rows, start as i64);
        assert_eq!(info.num_row_groups, start.div_ceil(3_000));
    }

    #[test]
    fn test_a_writer_on_a_one_thread_pool_encodes_inline_and_does_not_deadlock() {
        let dir = tempfile::tempdir().unwrap();
        let ours = dir.path().join("ours.parquet");
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .build()
            .unwrap();
        let (written, reference, _) = pool.install(|| ours_and_arrow_writers(&ours));
        assert_eq!(written, reference);
    }

    #[test]
    fn test_a_writer_dropped_before_finish_leaves_no_file() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("t.parquet");
        let options = WriteOptions {
            row_group_size: Some(100),
            ..Default::default()
        };
        let mut writer = Writer::try_new(&target, batch(0, 0).schema(), &options).unwrap();
        BatchWriter::write(&mut writer, &batch(0, 1_000)).unwrap();
        drop(writer);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    /// The footer's plain key/value pairs, without the `ARROW:schema` entry.
    fn footer_pairs(path: &Path) -> Vec<(String, String)> {
        let reader = SerializedFileReader::new(File::open(path).unwrap()).unwrap();
        let file_meta = reader.metadata().file_metadata();
        file_meta
            .key_value_metadata()
            .into_iter()
            .flatten()
            .filter(|kv| kv.key != ::parquet::arrow::ARROW_SCHEMA_META_KEY)
            .map(|kv| (kv.key.clone(), kv.value.clone().unwrap_or_default()))
            .collect()
    }

    #[test]
    fn test_schema_metadata_of_real_files_is_in_the_footer_as_plain_pairs() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("data");
        let cases = [
            // Written by bcolz 1.2.1 with root attrs, and by bcolz-zipline as zipline does.
            (
                "bcolz/datasets/attrs_carray",
                "bcolz.attrs",
                "\"pressure\": 999.2",
            ),
            ("bcolz/datasets/ctable_zipline_like", "bcolz.kind", "ctable"),
            (
                "dataseries/generated/basic-all.ds",
                "dataseries.xml",
                "<ExtentType",
            ),
            ("jay/keyed2.jay", "jay.nkeys", "2"),
            (
                "vs/f64_r1_plain.vs",
                "vs.attributes",
                "\"metric\":\"euclidean\"",
            ),
        ];
        let dir = tempfile::tempdir().unwrap();
        for (i, (input, key, contains)) in cases.into_iter().enumerate() {
            let reader = crate::open(root.join(input), &Default::default()).unwrap();
            let schema = reader.schema();
            let out = dir.path().join(format!("out{i}.parquet"));
            crate::write_all(reader, &out, &WriteOptions::default()).unwrap();

            let pairs = footer_pairs(&out);
            let mut expected: Vec<(String, String)> = schema
                .metadata()
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            expected.sort();
            assert_eq!(pairs, expected, "{input}: every schema key, in key order");
            let value = &pairs.iter().find(|(k, _)| k == key).unwrap().1;
            assert!(value.contains(contains), "{input}: {key} = {value}");

            // A reader of the Arrow schema sees each key once, with its value.
            let back = open(&out, &ScanOptions::default()).unwrap();
            assert_eq!(back.schema().metadata(), schema.metadata(), "{input}");
        }
    }

    #[test]
    fn test_a_schema_without_metadata_leaves_only_the_arrow_schema_in_the_footer() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("t.parquet");
        let b = batch(0, 10);
        crate::write_all(
            arrow_array::RecordBatchIterator::new([Ok(b.clone())], b.schema()),
            &out,
            &WriteOptions::default(),
        )
        .unwrap();
        assert!(footer_pairs(&out).is_empty());
        let reader = SerializedFileReader::new(File::open(&out).unwrap()).unwrap();
        let keys: Vec<_> = reader
            .metadata()
            .file_metadata()
            .key_value_metadata()
            .unwrap()
            .iter()
            .map(|kv| kv.key.as_str())
            .collect();
        assert_eq!(keys, [::parquet::arrow::ARROW_SCHEMA_META_KEY]);
    }

    #[test]
    fn test_a_batch_of_other_columns_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("t.parquet");
        let mut writer =
            Writer::try_new(&target, batch(0, 0).schema(), &WriteOptions::default()).unwrap();
        let other = batch(0, 10).project(&[1, 0]).unwrap();
        let err = BatchWriter::write(&mut writer, &other).unwrap_err();
        assert!(err.class().is_usage(), "{err}");
    }
}
