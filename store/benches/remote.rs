//! Object storage: bytes and requests. For each format, one table of ten columns (four Int64,
//! three Float64, three Utf8; VS: a one-element Float64 vector and the nine others as each
//! point's app data) of `ARROWSMITH_BENCH_ROWS` rows (default 1 000 000), written by
//! arrowsmith's own writers and uploaded to moto's S3 server on a free loopback port. Read
//! from S3: one fragment of eight (the middle one), one column (a 10 % projection), the whole
//! table; against downloading the whole object (every object of a bcolz or Filo prefix) and
//! reading the local copy, what a user does without ranged reads.
//!
//! Counted through the registered storage: every object and prefix it opens is wrapped in the
//! core's `Counting` / `CountingObjects`, so the bytes are those the readers were served and a
//! round trip is one batched call (a lookup, an open, a `read_ranges`, a `get_all`, a listing),
//! which is how many times a reader waits on the network. The HTTP requests are moto's own log
//! lines (a batch of far-apart ranges is several GETs, sent eight at a time). The time is the
//! best of `ARROWSMITH_BENCH_RUNS` (default 3) wall times.
//!
//! `scripts/bench-remote.sh` (docs/performance.md, "Object storage: bytes and requests").

#[path = "../tests/servers/mod.rs"]
mod servers;

use std::io::Write;
use std::ops::Range;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use arrow_array::{
    ArrayRef, FixedSizeListArray, Float64Array, Int64Array, RecordBatch, RecordBatchReader,
    StringArray,
};
use arrow_buffer::Buffer;
use arrow_schema::{DataType, Field, Schema};
use arrowsmith::source::{
    register_storage, registered_storage, ByteSource, Counting, CountingObjects, Counts,
    ObjectSource, ObjectWrite, RemoteEntry, RemoteOpened, Storage, StorageOptions,
};
use arrowsmith::{Format, Projection, ReadOptions, Result, WriteOptions};
use arrowsmith_store::ObjectStoreStorage;

const BUCKET: &str = "bench";
const FRAGMENTS: usize = 8;

fn env_number(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.replace('_', "").parse().ok())
        .unwrap_or(default)
}

// ---- Counting through the registered storage ----

/// An opened object shared by `Arc`, so that `Counting` can wrap it.
#[derive(Debug)]
struct SharedObject(Arc<dyn ByteSource>);

impl ByteSource for SharedObject {
    fn location(&self) -> &str {
        self.0.location()
    }
    fn size(&self) -> u64 {
        self.0.size()
    }
    fn read_ranges(&self, ranges: &[Range<u64>]) -> Result<Vec<Buffer>> {
        self.0.read_ranges(ranges)
    }
    fn version(&self) -> Option<&str> {
        self.0.version()
    }
}

/// An opened prefix shared by `Arc`, so that `CountingObjects` can wrap it.
#[derive(Debug)]
struct SharedPrefix(Arc<dyn ObjectSource>);

impl ObjectSource for SharedPrefix {
    fn location(&self) -> &str {
        self.0.location()
    }
    fn open(&self, key: &str) -> Result<Option<Arc<dyn ByteSource>>> {
        self.0.open(key)
    }
    fn get_all(&self, keys: &[&str]) -> Result<Vec<Option<Buffer>>> {
        self.0.get_all(keys)
    }
    fn list(&self, prefix: &str) -> Result<Option<Vec<String>>> {
        self.0.list(prefix)
    }
}

/// The object_store storage, with everything read through it counted.
#[derive(Default)]
struct CountingStorage {
    inner: ObjectStoreStorage,
    objects: Arc<Counts>,
    prefixes: Mutex<Vec<Arc<Counts>>>,
    /// Requests outside the sources: a lookup (`stat`: a HEAD, and a listing when there is no
    /// object) and an open (a HEAD for the size and version).
    lookups: AtomicU64,
}

/// What was read since the last reset.
#[derive(Clone, Copy, Default)]
struct Tally {
    round_trips: u64,
    bytes: u64,
}

impl CountingStorage {
    fn tally(&self) -> Tally {
        let prefixes = self.prefixes.lock().unwrap();
        let all = std::iter::once(&self.objects).chain(prefixes.iter());
        all.fold(
            Tally {
                round_trips: self.lookups.load(Ordering::Relaxed),
                bytes: 0,
            },
            |t, c| Tally {
                round_trips: t.round_trips + c.round_trips(),
                bytes: t.bytes + c.bytes(),
            },
        )
    }

    fn reset(&self) {
        self.objects.reset();
        self.prefixes.lock().unwrap().clear();
        self.lookups.store(0, Ordering::Relaxed);
    }
}

impl CountingStorage {
    fn counted_prefix(&self, prefix: Arc<dyn ObjectSource>) -> Arc<dyn ObjectSource> {
        let prefix = CountingObjects::new(SharedPrefix(prefix));
        self.prefixes.lock().unwrap().push(prefix.counts());
        Arc::new(prefix)
    }
}

impl Storage for CountingStorage {
    fn open_file(&self, url: &str, options: &StorageOptions) -> Result<Arc<dyn ByteSource>> {
        self.lookups.fetch_add(1, Ordering::Relaxed);
        let object = SharedObject(self.inner.open_file(url, options)?);
        Ok(Arc::new(Counting::with_counts(
            object,
            Arc::clone(&self.objects),
        )))
    }

    fn open_dir(&self, url: &str, options: &StorageOptions) -> Result<Arc<dyn ObjectSource>> {
        Ok(self.counted_prefix(self.inner.open_dir(url, options)?))
    }

    /// The store's own: a HEAD, and a listing only when there is no object.
    fn open_entry(&self, url: &str, options: &StorageOptions) -> Result<RemoteOpened> {
        let opened = self.inner.open_entry(url, options)?;
        Ok(match opened {
            RemoteOpened::Object(object) => {
                self.lookups.fetch_add(1, Ordering::Relaxed);
                let object = Counting::with_counts(SharedObject(object), Arc::clone(&self.objects));
                RemoteOpened::Object(Arc::new(object))
            }
            RemoteOpened::Prefix(prefix) => {
                self.lookups.fetch_add(2, Ordering::Relaxed);
                RemoteOpened::Prefix(self.counted_prefix(prefix))
            }
        })
    }

    fn stat(&self, url: &str, options: &StorageOptions) -> Result<RemoteEntry> {
        let entry = self.inner.stat(url, options)?;
        let requests = if matches!(entry, RemoteEntry::Object { .. }) {
            1
        } else {
            2
        };
        self.lookups.fetch_add(requests, Ordering::Relaxed);
        Ok(entry)
    }

    fn create_file(&self, url: &str, options: &StorageOptions) -> Result<Box<dyn ObjectWrite>> {
        self.inner.create_file(url, options)
    }

    fn delete(&self, url: &str, options: &StorageOptions) -> Result<()> {
        self.inner.delete(url, options)
    }
}

// ---- The tables ----

fn schema() -> Arc<Schema> {
    let mut fields = Vec::new();
    for i in 0..4 {
        fields.push(Field::new(format!("i{i}"), DataType::Int64, false));
    }
    for i in 0..3 {
        fields.push(Field::new(format!("f{i}"), DataType::Float64, false));
    }
    for i in 0..3 {
        fields.push(Field::new(format!("s{i}"), DataType::Utf8, false));
    }
    Arc::new(Schema::new(fields))
}

fn batch(range: Range<usize>) -> RecordBatch {
    const SYMBOLS: [&str; 8] = [
        "AAPL", "MSFT", "GOOG", "AMZN", "BRK.B", "JPM", "XOM", "TSLA",
    ];
    let mut columns: Vec<ArrayRef> = Vec::new();
    for k in 0..4u64 {
        let values = range
            .clone()
            .map(|i| ((i as u64).wrapping_mul(2_654_435_761 + k) >> k) as i64);
        columns.push(Arc::new(Int64Array::from_iter_values(values)));
    }
    for k in 0..3 {
        let values = range
            .clone()
            .map(|i| ((i * (k + 3)) % 10_007) as f64 / 100.0);
        columns.push(Arc::new(Float64Array::from_iter_values(values)));
    }
    let symbols = range.clone().map(|i| SYMBOLS[i % SYMBOLS.len()]);
    columns.push(Arc::new(StringArray::from_iter_values(symbols)));
    let users = range
        .clone()
        .map(|i| format!("user-{:06}", i * 7919 % 1_000_000));
    columns.push(Arc::new(StringArray::from_iter_values(users)));
    let notes = range.map(|i| format!("note {} of batch {}", i % 97, i / 65_536));
    columns.push(Arc::new(StringArray::from_iter_values(notes)));
    RecordBatch::try_new(schema(), columns).unwrap()
}

/// VS stores points: the first Float64 column becomes a one-element vector, and the writer
/// packs the other nine into each point's app data.
fn as_points(batch: &RecordBatch) -> RecordBatch {
    let item = Arc::new(Field::new("item", DataType::Float64, false));
    let values = Arc::clone(batch.column_by_name("f0").unwrap());
    let vector = FixedSizeListArray::try_new(Arc::clone(&item), 1, values, None).unwrap();
    let mut fields = vec![Field::new(
        "vector",
        DataType::FixedSizeList(item, 1),
        false,
    )];
    let mut columns: Vec<ArrayRef> = vec![Arc::new(vector)];
    for (field, column) in batch.schema().fields().iter().zip(batch.columns()) {
        if field.name() != "f0" {
            fields.push(field.as_ref().clone());
            columns.push(Arc::clone(column));
        }
    }
    RecordBatch::try_new(Arc::new(Schema::new(fields)), columns).unwrap()
}

/// Writes the table of `rows` rows as `format` at `path`, cut into enough units (extents,
/// chunks, row groups, IPC batches) for [`FRAGMENTS`] fragments and more.
fn write(path: &Path, format: Format, rows: usize) {
    let mut options = WriteOptions {
        format: Some(format),
        durable: false,
        ..Default::default()
    };
    // About 64 bytes a row, in at least 32 extents.
    let extent = (rows * 64 / 32).clamp(16 << 10, 1 << 20);
    options.dataseries = options.dataseries.with_extent_size(extent);
    let chunk = rows.div_ceil(2 * FRAGMENTS).max(1);
    options.bcolz = options.bcolz.with_chunklen(chunk as u64);
    options.filo = options.filo.with_chunk_size(chunk);
    options.row_group_size = Some(chunk);
    let shape = |b: RecordBatch| {
        if format == Format::Vs {
            as_points(&b)
        } else {
            b
        }
    };
    let first = shape(batch(0..0));
    let mut writer = arrowsmith::create(path, first.schema(), &options).unwrap();
    for start in (0..rows).step_by(65_536) {
        writer
            .write(&shape(batch(start..rows.min(start + 65_536))))
            .unwrap();
    }
    writer.finish().unwrap();
}

/// Uploads the file or directory at `local` to `url` (a directory as the objects under its
/// prefix); returns the bytes uploaded and the number of objects.
fn upload(storage: &dyn Storage, local: &Path, url: &str, options: &StorageOptions) -> (u64, u64) {
    if local.is_dir() {
        let mut total = (0, 0);
        for entry in std::fs::read_dir(local).unwrap() {
            let entry = entry.unwrap();
            let name = entry.file_name().into_string().unwrap();
            let (bytes, objects) =
                upload(storage, &entry.path(), &format!("{url}/{name}"), options);
            total = (total.0 + bytes, total.1 + objects);
        }
        return total;
    }
    let bytes = std::fs::read(local).unwrap();
    let mut writer = storage.create_file(url, options).unwrap();
    writer.write_all(&bytes).unwrap();
    writer.finish().unwrap();
    (bytes.len() as u64, 1)
}

/// What a user does without ranged reads: the whole object (every object under a prefix),
/// downloaded to `local`.
fn download(url: &str, directory: bool, options: &StorageOptions, local: &Path) -> Result<()> {
    let storage = registered_storage(url)?;
    if !directory {
        let object = storage.open_file(url, options)?;
        let bytes = object.read_range(0..object.size())?;
        return Ok(std::fs::write(local, bytes.as_slice())?);
    }
    let prefix = storage.open_dir(url, options)?;
    let keys = prefix.list("")?.expect("S3 lists");
    let keys: Vec<&str> = keys.iter().map(String::as_str).collect();
    for (key, bytes) in keys.iter().zip(prefix.get_all(&keys)?) {
        let path = local.join(key);
        std::fs::create_dir_all(path.parent().unwrap())?;
        std::fs::write(path, bytes.expect("listed").as_slice())?;
    }
    Ok(())
}

fn read_rows(reader: Box<dyn RecordBatchReader + Send>) -> usize {
    reader.map(|b| b.unwrap().num_rows()).sum()
}

/// One measured read: counted on its first run, timed as the best of `runs`.
struct Measured {
    rows: usize,
    tally: Tally,
    requests: usize,
    time: Duration,
}

fn measure(
    runs: usize,
    storage: &CountingStorage,
    moto: &servers::Server,
    read: impl Fn() -> usize,
) -> Measured {
    // Each request is one log line, its status coloured or not.
    let logged = || moto.logged(" HTTP/1.1");
    let before = logged();
    storage.reset();
    let start = Instant::now();
    let rows = read();
    let mut time = start.elapsed();
    let tally = storage.tally();
    let requests = logged() - before;
    for _ in 1..runs {
        let start = Instant::now();
        assert_eq!(read(), rows);
        time = time.min(start.elapsed());
    }
    Measured {
        rows,
        tally,
        requests,
        time,
    }
}

fn mib(bytes: u64) -> String {
    format!("{:.2} MiB", bytes as f64 / f64::from(1 << 20))
}

fn main() {
    let rows = env_number("ARROWSMITH_BENCH_ROWS", 1_000_000);
    let runs = env_number("ARROWSMITH_BENCH_RUNS", 3).max(1);
    let Some(moto) = servers::moto() else {
        eprintln!("remote bench: no moto server (scripts/test-servers.sh installs it)");
        std::process::exit(1);
    };
    servers::create_bucket(moto.port, BUCKET);
    let storage = Arc::new(CountingStorage::default());
    assert!(
        register_storage(storage.clone()),
        "the first storage registered"
    );
    let storage_options = servers::s3_options(moto.port);
    let dir = tempfile::tempdir().unwrap();

    println!(
        "{rows} rows × 10 columns; best of {runs} runs; moto on 127.0.0.1:{}\n",
        moto.port
    );
    println!(
        "| format | read | rows | bytes | × object | round trips | HTTP requests | time | \
         × download |"
    );
    println!("|---|---|---:|---:|---:|---:|---:|---:|---:|");
    for (format, name, directory) in [
        (Format::Jay, "t.jay", false),
        (Format::DataSeries, "t.ds", false),
        (Format::Vs, "t.vs", false),
        (Format::Bcolz, "t.bcolz", true),
        (Format::Filo, "t.filo", true),
        (Format::Parquet, "t.parquet", false),
        (Format::Arrow, "t.arrow", false),
    ] {
        let local = dir.path().join(name);
        write(&local, format, rows);
        let url = format!("s3://{BUCKET}/{name}");
        let (size, objects) = upload(&*storage, &local, &url, &storage_options);
        let options = ReadOptions {
            format: Some(format),
            storage: storage_options.clone(),
            ..Default::default()
        };
        let fragments = arrowsmith::fragments(&url, &options, rows.div_ceil(FRAGMENTS)).unwrap();
        let fragment = &fragments[fragments.len() / 2];
        let column = if format == Format::Vs { "vector" } else { "i0" };
        let mut projected = options.clone();
        projected.scan.projection = Some(Projection::Names(vec![column.to_owned()]));
        let copy = dir.path().join(format!("copy-{name}"));

        let reads: [(String, Box<dyn Fn() -> usize>); 4] = [
            (
                format!("fragment {} of {}", fragment.index, fragments.len()),
                Box::new(|| read_rows(arrowsmith::open_fragment(fragment, &options).unwrap())),
            ),
            (
                format!("column {column} (1 of 10)"),
                Box::new(|| read_rows(arrowsmith::open(&url, &projected).unwrap())),
            ),
            (
                "whole".to_owned(),
                Box::new(|| read_rows(arrowsmith::open(&url, &options).unwrap())),
            ),
            (
                if directory {
                    format!("download its {objects} objects, read locally")
                } else {
                    "download the object, read locally".to_owned()
                },
                Box::new(|| {
                    let _ = std::fs::remove_dir_all(&copy);
                    download(&url, directory, &options.storage, &copy).unwrap();
                    let local = ReadOptions::for_format(format);
                    read_rows(arrowsmith::open(&copy, &local).unwrap())
                }),
            ),
        ];
        let measured: Vec<(String, Measured)> = reads
            .into_iter()
            .map(|(what, read)| (what, measure(runs, &storage, &moto, read)))
            .collect();
        let download = measured.last().unwrap().1.time.as_secs_f64();
        for (what, m) in measured {
            println!(
                "| {} | {what} | {} | {} | {:.3} | {} | {} | {:.3} s | {:.2} |",
                format.name(),
                m.rows,
                mib(m.tally.bytes),
                m.tally.bytes as f64 / size as f64,
                m.tally.round_trips,
                m.requests,
                m.time.as_secs_f64(),
                m.time.as_secs_f64() / download,
            );
        }
    }
}
