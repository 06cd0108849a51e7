//! URLs through the core, against a [`Storage`] of this test's own: `test://data/…` serves the
//! fixtures of `data/` read-only, `test://root/<test>/…` a scratch directory per test. Its
//! objects carry a version (a hash of their bytes), its writes appear only when finished, and
//! it records every object put and deleted, so the tests see the order of an upload and what
//! a failure leaves. The real stores are tested by the `arrowsmith-store` member.

use std::collections::HashMap;
use std::io::Write;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use arrow_array::{Int64Array, RecordBatch, RecordBatchReader, StringArray};
use arrow_buffer::Buffer;
use arrow_schema::{DataType, Field, Schema};

use crate::error::{Error, ErrorClass, Result};
use crate::options::{ReadOptions, WriteMode, WriteOptions};
use crate::source::{
    register_storage, ByteSource, LocalDir, ObjectSource, ObjectWrite, RemoteEntry, Storage,
    StorageOptions,
};
use crate::{Format, Fragment, FragmentRange, Input, ScanOptions};

/// What the test storage did, in order, for one test's scratch directory.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Event {
    Put(String),
    Delete(String),
    Abort(String),
}

/// A request the test storage served: what a store would send over the network.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Request {
    /// `open_file`: a store's HEAD.
    OpenFile,
    /// `stat`: a store's HEAD, then a listing when there is no object.
    Stat,
    /// One batched `read_ranges` of an object: a round trip of ranged GETs.
    Read,
}

/// The test storage: process-wide, as `register_storage` is.
struct TestStorage {
    scratch: tempfile::TempDir,
    events: Mutex<Vec<(String, Event)>>,
    /// Every request, with the URL it was for.
    requests: Mutex<Vec<(String, Request)>>,
    /// Per test: how many more objects may be put before a put fails.
    puts_left: Mutex<HashMap<String, usize>>,
}

fn storage() -> &'static Arc<TestStorage> {
    static STORAGE: OnceLock<Arc<TestStorage>> = OnceLock::new();
    STORAGE.get_or_init(|| {
        let storage = Arc::new(TestStorage {
            scratch: tempfile::tempdir().unwrap(),
            events: Mutex::new(Vec::new()),
            requests: Mutex::new(Vec::new()),
            puts_left: Mutex::new(HashMap::new()),
        });
        assert!(
            register_storage(Arc::clone(&storage) as Arc<dyn Storage>),
            "another storage is registered in this test process"
        );
        storage
    })
}

/// A test's own scratch URL, `test://root/<test>`, empty.
fn scratch(test: &str) -> String {
    let dir = storage().scratch.path().join(test);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    format!("test://root/{test}")
}

/// The events of `test`'s scratch directory, with keys relative to it.
fn events(test: &str) -> Vec<Event> {
    let events = storage().events.lock().unwrap();
    events
        .iter()
        .filter(|(t, _)| t == test)
        .map(|(_, e)| e.clone())
        .collect()
}

/// The requests made for `url` (an object, or a prefix and the objects under it).
fn requests(url: &str) -> Vec<Request> {
    let requests = storage().requests.lock().unwrap();
    requests
        .iter()
        .filter(|(u, _)| u == url || u.starts_with(&format!("{url}/")))
        .map(|(_, r)| *r)
        .collect()
}

fn data_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("data")
}

impl TestStorage {
    /// The local path of `url`, and the test it belongs to (`None` for the fixtures).
    fn path(&self, url: &str) -> Result<(PathBuf, Option<String>)> {
        let rest = url.strip_prefix("test://").unwrap_or(url);
        let (host, key) = rest.split_once('/').unwrap_or((rest, ""));
        let key = key.trim_end_matches('/');
        match host {
            "data" => Ok((data_dir().join(key), None)),
            "root" => {
                let test = key.split('/').next().unwrap_or("").to_owned();
                Ok((self.scratch.path().join(key), Some(test)))
            }
            _ => Err(Error::new(ErrorClass::Io, "no such bucket").with_file(url)),
        }
    }

    fn request(&self, url: &str, request: Request) {
        self.requests
            .lock()
            .unwrap()
            .push((url.to_owned(), request));
    }

    fn record(&self, test: Option<String>, event: Event) {
        if let Some(test) = test {
            self.events.lock().unwrap().push((test, event));
        }
    }

    /// The key of `url` within its test's directory, for the event log.
    fn key_in_test(url: &str) -> String {
        let rest = url.strip_prefix("test://root/").unwrap_or(url);
        rest.split_once('/').map_or("", |(_, key)| key).to_owned()
    }
}

/// A version: a hash of the bytes (an ETag stands for the content as this does).
fn version_of(bytes: &[u8]) -> String {
    let mut hash: u64 = 0xcbf29ce484222325;
    for b in bytes {
        hash = (hash ^ u64::from(*b)).wrapping_mul(0x100000001b3);
    }
    format!("{hash:016x}")
}

/// An object as opened: its bytes then, read again on each read to find it changed, as a
/// store's ranged GET with the opened ETag fails when the object was replaced.
#[derive(Debug)]
struct TestObject {
    url: String,
    path: PathBuf,
    bytes: Buffer,
    version: String,
}

impl TestObject {
    fn open(url: String, path: PathBuf) -> Result<TestObject> {
        let bytes = std::fs::read(&path).map_err(|e| Error::from(e).with_file(&url))?;
        Ok(TestObject {
            url,
            path,
            version: version_of(&bytes),
            bytes: Buffer::from_vec(bytes),
        })
    }
}

impl ByteSource for TestObject {
    fn location(&self) -> &str {
        &self.url
    }
    fn size(&self) -> u64 {
        self.bytes.len() as u64
    }
    fn read_ranges(&self, ranges: &[Range<u64>]) -> Result<Vec<Buffer>> {
        storage().request(&self.url, Request::Read);
        let now = std::fs::read(&self.path).map_err(|e| Error::from(e).with_file(&self.url))?;
        if version_of(&now) != self.version {
            return Err(Error::new(ErrorClass::Io, "the object was replaced").with_file(&self.url));
        }
        ranges
            .iter()
            .map(|r| {
                crate::source::check_range(&self.url, self.size(), r)?;
                Ok(self
                    .bytes
                    .slice_with_length(r.start as usize, (r.end - r.start) as usize))
            })
            .collect()
    }
    fn version(&self) -> Option<&str> {
        Some(&self.version)
    }
}

#[derive(Debug)]
struct TestPrefix {
    url: String,
    root: PathBuf,
}

impl ObjectSource for TestPrefix {
    fn location(&self) -> &str {
        &self.url
    }
    fn open(&self, key: &str) -> Result<Option<Arc<dyn ByteSource>>> {
        let path = self.root.join(key);
        if !path.is_file() {
            return Ok(None);
        }
        let url = format!("{}/{key}", self.url);
        Ok(Some(Arc::new(TestObject::open(url, path)?)))
    }
    fn list(&self, prefix: &str) -> Result<Option<Vec<String>>> {
        LocalDir::new(&self.root).list(prefix)
    }
}

/// An object being written: its bytes are kept until `finish` puts them.
struct TestWrite {
    url: String,
    path: PathBuf,
    test: Option<String>,
    bytes: Vec<u8>,
}

impl Write for TestWrite {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.bytes.extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl ObjectWrite for TestWrite {
    fn finish(self: Box<Self>) -> Result<()> {
        let storage = storage();
        if let Some(test) = &self.test {
            if let Some(left) = storage.puts_left.lock().unwrap().get_mut(test) {
                if *left == 0 {
                    return Err(
                        Error::new(ErrorClass::Io, "the store went away").with_file(&self.url)
                    );
                }
                *left -= 1;
            }
        }
        std::fs::create_dir_all(self.path.parent().unwrap()).unwrap();
        std::fs::write(&self.path, &self.bytes).map_err(|e| Error::from(e).with_file(&self.url))?;
        let key = TestStorage::key_in_test(&self.url);
        storage.record(self.test.clone(), Event::Put(key));
        Ok(())
    }
    fn abort(self: Box<Self>) -> Result<()> {
        let key = TestStorage::key_in_test(&self.url);
        storage().record(self.test.clone(), Event::Abort(key));
        Ok(())
    }
}

impl Storage for TestStorage {
    fn open_file(&self, url: &str, _: &StorageOptions) -> Result<Arc<dyn ByteSource>> {
        self.request(url, Request::OpenFile);
        let (path, _) = self.path(url)?;
        // A prefix is no object: a store's HEAD of it finds nothing.
        if !path.is_file() {
            let missing = std::io::Error::from(std::io::ErrorKind::NotFound);
            return Err(Error::from(missing).with_file(url));
        }
        Ok(Arc::new(TestObject::open(url.to_owned(), path)?))
    }
    fn open_dir(&self, url: &str, _: &StorageOptions) -> Result<Arc<dyn ObjectSource>> {
        let (root, _) = self.path(url)?;
        Ok(Arc::new(TestPrefix {
            url: url.trim_end_matches('/').to_owned(),
            root,
        }))
    }
    fn stat(&self, url: &str, _: &StorageOptions) -> Result<RemoteEntry> {
        self.request(url, Request::Stat);
        let (path, _) = self.path(url)?;
        if path.is_file() {
            return Ok(RemoteEntry::Object {
                size: path.metadata().unwrap().len(),
            });
        }
        let keys = LocalDir::new(&path).list("")?.unwrap_or_default();
        Ok(match keys.is_empty() {
            true => RemoteEntry::Missing,
            false => RemoteEntry::Prefix,
        })
    }
    fn create_file(&self, url: &str, _: &StorageOptions) -> Result<Box<dyn ObjectWrite>> {
        let (path, test) = self.path(url)?;
        if test.is_none() {
            return Err(Error::new(ErrorClass::Io, "the fixtures are read-only").with_file(url));
        }
        Ok(Box::new(TestWrite {
            url: url.to_owned(),
            path,
            test,
            bytes: Vec::new(),
        }))
    }
    fn delete(&self, url: &str, _: &StorageOptions) -> Result<()> {
        let (path, test) = self.path(url)?;
        let _ = std::fs::remove_file(&path);
        self.record(test, Event::Delete(TestStorage::key_in_test(url)));
        Ok(())
    }
}

/// Every batch of `reader`.
fn batches(reader: Result<Box<dyn RecordBatchReader + Send>>) -> Result<Vec<RecordBatch>> {
    reader?
        .map(|b| b.map_err(Error::from_arrow_owned))
        .collect()
}

/// The batches of the Parquet or Arrow IPC file at `path` read through a counting source
/// with `scan`, and what the read fetched.
fn counted_read(
    path: &Path,
    format: Format,
    scan: &ScanOptions,
) -> (Result<Vec<RecordBatch>>, Arc<crate::source::Counts>) {
    let source = crate::source::Counting::new(crate::source::LocalFile::open(path).unwrap());
    let counts = source.counts();
    let read = batches(crate::ecosystem::open_source(
        Arc::new(source),
        format,
        scan,
    ));
    (read, counts)
}

/// The fixtures of `dir` under data/ whose name ends with `ext`.
fn fixtures(dir: &str, ext: &str) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(data_dir().join(dir))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(ext))
        .map(|n| format!("{dir}/{n}"))
        .collect();
    names.sort();
    names
}

/// Reads `fixture` (a file, or a dataset's directory) locally and through its URL (an object,
/// or a prefix), whole and fragment by fragment: the same batches and the same fragments (but
/// for a file's object version, which a remote file's fragments carry), or both failing.
fn same_through_url(fixture: &str, options: &ReadOptions) {
    storage();
    same_at(
        &data_dir().join(fixture),
        &format!("test://data/{fixture}"),
        options,
    );
}

/// [`same_through_url`] for the file or directory at `local`, also at `url`.
fn same_at(local: &Path, url: &str, options: &ReadOptions) {
    let fixture = url;
    let here = batches(crate::open(local, options));
    let there = batches(crate::open(url, options));
    match (&here, &there) {
        (Ok(here), Ok(there)) => assert_eq!(here, there, "{fixture}"),
        (Err(_), Err(e)) => assert!(e.to_string().contains(url), "{fixture}: {e}"),
        _ => panic!("{fixture}: locally {here:?}, through its URL {there:?}"),
    }
    if here.is_err() {
        return;
    }
    let listed_here = crate::fragments(local, options, 3).unwrap();
    let listed_there = crate::fragments(url, options, 3).unwrap();
    assert_eq!(listed_here.len(), listed_there.len(), "{fixture}");
    let size = local.is_file().then(|| local.metadata().unwrap().len());
    let read = ReadOptions {
        scan: options.scan.clone(),
        ..Default::default()
    };
    for (h, t) in listed_here.iter().zip(&listed_there) {
        assert_eq!(t.object.as_ref().map(|o| o.size), size, "{fixture}");
        assert!(t.object.iter().all(|o| o.version.is_some()), "{fixture}");
        // A remote bcolz fragment estimates its bytes otherwise than a local one does.
        let bytes = if size.is_some() { t.bytes } else { h.bytes };
        let t_as_local = Fragment {
            path: h.path.clone(),
            object: None,
            bytes,
            ..t.clone()
        };
        assert_eq!(h, &t_as_local, "{fixture}");
        let from_here = batches(crate::open_fragment(h, &read)).unwrap();
        let from_there = batches(crate::open_fragment(t, &read)).unwrap();
        assert_eq!(from_here, from_there, "{fixture} fragment {}", h.index);
    }
}

#[test]
fn every_jay_dataseries_and_vs_fixture_reads_through_a_url_as_it_reads_locally() {
    let mut count = 0;
    for fixture in fixtures("jay", ".jay")
        .into_iter()
        .chain(fixtures("dataseries/generated", ".ds"))
        .chain(fixtures("dataseries/bigendian", ".ds"))
        .chain(fixtures("vs", ".vs"))
    {
        same_through_url(&fixture, &ReadOptions::default());
        count += 1;
    }
    assert!(count > 50, "{count} fixtures");
    // With a projection and a limit, fragment by fragment.
    let mut options = ReadOptions::default();
    options.set("columns", "A").unwrap();
    options.set("limit", "2").unwrap();
    same_through_url("jay/all_types.jay", &options);
}

#[test]
fn a_bare_filo_vector_reads_through_a_url_as_it_reads_locally() {
    let manifest = std::fs::read_to_string(data_dir().join("filo/vectors/manifest.jsonl")).unwrap();
    let mut count = 0;
    for line in manifest.lines() {
        let entry: serde_json::Value = serde_json::from_str(line).unwrap();
        let name = format!("filo/vectors/{}.bin", entry["name"].as_str().unwrap());
        if !data_dir().join(&name).is_file() {
            continue;
        }
        let mut options = ReadOptions::for_format(Format::FiloVector);
        options
            .set("filo_type", entry["type"].as_str().unwrap())
            .unwrap();
        same_through_url(&name, &options);
        count += 1;
    }
    assert!(count > 10, "{count} vectors");
}

#[test]
fn an_input_through_a_url_is_recognised_and_shared_like_a_local_one() {
    storage();
    let url = "test://data/dataseries/generated/basic-all.ds";
    let input = Input::open(url, &ReadOptions::default()).unwrap();
    assert_eq!(input.format(), Format::DataSeries);
    assert!(input.is_remote() && !input.holds_lock());
    let local = Input::open(
        data_dir().join("dataseries/generated/basic-all.ds"),
        &Default::default(),
    )
    .unwrap();
    assert_eq!(input.schema(), local.schema());
    assert_eq!(input.rows(), local.rows());
    let vs = Input::open("test://data/vs/f64_r1_plain.vs", &ReadOptions::default()).unwrap();
    assert!(
        vs.is_remote() && !vs.holds_lock(),
        "a remote VS input takes no lock"
    );

    // inspect describes a remote Jay file as it does the local one.
    let report = crate::inspect("test://data/jay/all_types.jay", &Default::default()).unwrap();
    let local = crate::inspect(data_dir().join("jay/all_types.jay"), &Default::default()).unwrap();
    assert_eq!(report.to_json()["structure"], local.to_json()["structure"]);
}

#[test]
fn every_bcolz_dataset_and_filo_set_reads_through_a_prefix_url_as_it_reads_locally() {
    let mut count = 0;
    for entry in std::fs::read_dir(data_dir().join("bcolz/datasets")).unwrap() {
        let name = entry.unwrap().file_name().to_string_lossy().into_owned();
        same_through_url(&format!("bcolz/datasets/{name}"), &ReadOptions::default());
        count += 1;
    }
    assert!(count > 20, "{count} datasets");
    same_through_url("filo/set.filo", &ReadOptions::default());
    let input = Input::open("test://data/filo/set.filo", &ReadOptions::default()).unwrap();
    assert_eq!(input.format(), Format::Filo);
    let input = Input::open(
        "test://data/bcolz/datasets/ctable_zipline_like",
        &ReadOptions::default(),
    )
    .unwrap();
    assert_eq!(input.format(), Format::Bcolz);
}

#[test]
fn a_projected_read_of_a_remote_ctable_opens_only_the_projected_columns_metadata() {
    let url = scratch("bcolz_projection");
    let dir = storage().scratch.path().join("bcolz_projection");
    let table = format!("{url}/t.bcolz");
    write_ecosystem(
        &dir.join("t.bcolz"),
        Format::Bcolz,
        &three_columns(20_000),
        20_000,
    );
    let read = |columns: &str| {
        let mut options = ReadOptions::default();
        options.set("columns", columns).unwrap();
        let start = storage().requests.lock().unwrap().len();
        let there = batches(crate::open(&table, &options)).unwrap();
        let here = batches(crate::open(dir.join("t.bcolz"), &options)).unwrap();
        assert_eq!(there, here, "{columns}");
        let requests = storage().requests.lock().unwrap();
        let keys: Vec<String> = requests[start..]
            .iter()
            .filter_map(|(u, _)| u.strip_prefix(&format!("{table}/")))
            .map(str::to_owned)
            .collect();
        keys
    };
    let of_column = |keys: &[String], name: &str| {
        let mut of: Vec<String> = keys
            .iter()
            .filter(|k| k.starts_with(&format!("{name}/")) && !k.contains("/data/"))
            .cloned()
            .collect();
        of.sort();
        of
    };
    let meta = |name: &str| {
        ["__attrs__", "meta/sizes", "meta/storage"]
            .iter()
            .map(|k| format!("{name}/{k}"))
            .collect::<Vec<_>>()
    };
    // The last column: its metadata and the first column's (the ctable's length), not the
    // middle one's.
    let keys = read("hashes");
    assert_eq!(of_column(&keys, "hashes"), meta("hashes"), "{keys:?}");
    assert_eq!(of_column(&keys, "ids"), meta("ids"), "{keys:?}");
    assert!(of_column(&keys, "names").is_empty(), "{keys:?}");
    assert!(!keys.iter().any(|k| k.starts_with("ids/data/")), "{keys:?}");
    // Every column read: every column's metadata.
    let keys = read("ids,names,hashes");
    for name in ["ids", "names", "hashes"] {
        assert_eq!(of_column(&keys, name), meta(name), "{keys:?}");
    }
    // A column the ctable lacks is named in the error with every column, as locally.
    let mut options = ReadOptions::default();
    options.set("columns", "nope").unwrap();
    let e = batches(crate::open(&table, &options))
        .unwrap_err()
        .to_string();
    assert!(e.contains("\"names\""), "{e}");
}

/// A Jay or DataSeries file of `rows` rows at `path`: large enough that its head and tail
/// are a small part of it.
fn write_rows(path: &Path, format: Format, rows: i64) {
    let ids = Int64Array::from_iter_values(0..rows);
    let names = StringArray::from_iter_values((0..rows).map(|i| format!("name {i}")));
    let batch = RecordBatch::try_new(schema(), vec![Arc::new(ids), Arc::new(names)]).unwrap();
    let options = WriteOptions {
        format: Some(format),
        ..Default::default()
    };
    let batches = arrow_array::RecordBatchIterator::new(vec![Ok(batch)], schema());
    crate::write_all(batches, path, &options).unwrap();
}

/// Three columns of `rows` rows: ids, short names, and 16 hex digits that do not compress.
fn three_columns(rows: i64) -> RecordBatch {
    let ids = Int64Array::from_iter_values(0..rows);
    let names = StringArray::from_iter_values((0..rows).map(|i| format!("name {i}")));
    let hashes = StringArray::from_iter_values(
        (0..rows).map(|i| format!("{:016x}", (i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15))),
    );
    RecordBatch::try_from_iter([
        ("ids", Arc::new(ids) as _),
        ("names", Arc::new(names) as _),
        ("hashes", Arc::new(hashes) as _),
    ])
    .unwrap()
}

/// `batch` written as `format` at `path`, in row groups (or batches) of `chunk` rows.
fn write_ecosystem(path: &Path, format: Format, batch: &RecordBatch, chunk: usize) {
    let options = WriteOptions {
        format: Some(format),
        row_group_size: Some(chunk),
        ..Default::default()
    };
    let pieces: Vec<_> = (0..batch.num_rows())
        .step_by(chunk)
        .map(|start| Ok(batch.slice(start, chunk.min(batch.num_rows() - start))))
        .collect();
    let batches = arrow_array::RecordBatchIterator::new(pieces, batch.schema());
    crate::write_all(batches, path, &options).unwrap();
}

#[test]
fn parquet_arrow_ipc_csv_and_ndjson_read_through_a_url_as_they_read_locally() {
    let url = scratch("ecosystem");
    let dir = storage().scratch.path().join("ecosystem");
    let batch = three_columns(5_000);
    let mut projected = ReadOptions::default();
    projected.set("columns", "hashes,ids").unwrap();
    projected.set("limit", "2500").unwrap();
    for (format, name) in [
        (Format::Parquet, "x.parquet"),
        (Format::Arrow, "x.arrow"),
        (Format::ArrowStream, "x.arrows"),
        (Format::Csv, "x.csv"),
        (Format::Ndjson, "x.ndjson"),
    ] {
        write_ecosystem(&dir.join(name), format, &batch, 1_000);
        let object = format!("{url}/{name}");
        let read = batches(crate::open(&object, &ReadOptions::default())).unwrap();
        let rows: usize = read.iter().map(RecordBatch::num_rows).sum();
        assert_eq!(rows, 5_000, "{name}");
        same_at(&dir.join(name), &object, &ReadOptions::default());
        same_at(&dir.join(name), &object, &projected);
        if matches!(
            format,
            Format::Parquet | Format::Arrow | Format::ArrowStream
        ) {
            // inspect describes the footer (or the stream's messages) as it does locally.
            let there = crate::inspect(&object, &Default::default()).unwrap();
            let here = crate::inspect(dir.join(name), &Default::default()).unwrap();
            let (there, here) = (there.to_json(), here.to_json());
            assert!(there["structure"].is_object(), "{name}: {there}");
            assert_eq!(there["structure"], here["structure"], "{name}");
        }
    }
    // Row groups and IPC batches are fragments of a remote object as of a local file.
    for name in ["x.parquet", "x.arrow"] {
        let listed = crate::fragments(format!("{url}/{name}"), &ReadOptions::default(), 1_000);
        assert_eq!(listed.unwrap().len(), 5, "{name}");
    }
}

#[test]
fn a_one_column_projection_of_a_remote_parquet_file_fetches_its_footer_and_that_column() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("x.parquet");
    write_ecosystem(&path, Format::Parquet, &three_columns(200_000), 50_000);
    let info = crate::ecosystem::parquet::describe(&path).unwrap();
    let column = |name: &str| {
        let found = info.columns.iter().find(|c| c.path == name).unwrap();
        found.compressed_size as u64
    };
    let (ids, hashes) = (column("ids"), column("hashes"));
    let size = path.metadata().unwrap().len();
    assert!(hashes > 1 << 20 && hashes > 4 * ids, "{hashes} {ids}");
    let scan = ScanOptions {
        projection: Some(crate::scan::Projection::Names(vec!["ids".to_owned()])),
        ..Default::default()
    };
    let (read, counts) = counted_read(&path, Format::Parquet, &scan);
    let read = read.unwrap();
    assert_eq!(
        read.iter().map(RecordBatch::num_rows).sum::<usize>(),
        200_000
    );
    assert_eq!(read[0].num_columns(), 1);
    // The footer comes with the file's last 64 KiB; then the ids' column chunks, one range each.
    let fetched = counts.bytes();
    let tail = size.min(64 << 10);
    assert!(
        fetched >= ids && fetched <= ids + tail,
        "fetched {fetched} bytes of {size}: ids {ids}, hashes {hashes}"
    );
    assert!(counts.round_trips() <= 1 + 4, "{}", counts.round_trips());
}

#[test]
fn a_remote_parquet_row_group_fetches_its_projected_column_chunks_in_one_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("x.parquet");
    write_ecosystem(&path, Format::Parquet, &three_columns(200_000), 50_000);
    let info = crate::ecosystem::parquet::describe(&path).unwrap();
    assert_eq!(info.num_row_groups, 4);
    let size = path.metadata().unwrap().len();
    let tail = size.min(64 << 10);
    let read = |range: Option<FragmentRange>, columns: &[&str]| {
        let scan = ScanOptions {
            projection: Some(crate::scan::Projection::Names(
                columns.iter().map(|c| c.to_string()).collect(),
            )),
            range,
            ..Default::default()
        };
        let (read, counts) = counted_read(&path, Format::Parquet, &scan);
        let rows: usize = read.unwrap().iter().map(RecordBatch::num_rows).sum();
        (rows, counts)
    };
    // One row group of three columns: the tail (with the footer), then its three chunks.
    let group = &info.row_groups[1];
    let (rows, counts) = read(
        Some(FragmentRange::RowGroups { start: 1, end: 2 }),
        &["ids", "names", "hashes"],
    );
    assert_eq!(rows, 50_000);
    assert_eq!(counts.round_trips(), 2, "{counts:?}");
    assert_eq!(counts.bytes(), tail + group.compressed_size as u64);
    // Two of the three columns of every row group: a round trip each, the third not fetched.
    let (rows, counts) = read(None, &["hashes", "ids"]);
    assert_eq!(rows, 200_000);
    assert_eq!(counts.round_trips(), 1 + 4, "{counts:?}");
    let names: u64 = info
        .row_groups
        .iter()
        .map(|g| g.columns[1].compressed_size as u64)
        .sum();
    assert!(
        counts.bytes() <= size - names + tail,
        "{} of {size}, names {names}",
        counts.bytes()
    );
}

#[test]
fn a_fragment_of_a_remote_arrow_ipc_file_fetches_its_footer_and_its_batches_only() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("x.arrow");
    write_ecosystem(&path, Format::Arrow, &three_columns(50_000), 5_000);
    let info = crate::ecosystem::ipc::describe_file(&path).unwrap();
    assert_eq!(info.batches.len(), 10);
    let bytes = std::fs::read(&path).unwrap();
    let size = bytes.len() as u64;
    let footer_len = u64::from(u32::from_le_bytes(
        bytes[bytes.len() - 10..bytes.len() - 6].try_into().unwrap(),
    ));
    // Its length and magic, then the footer (with the schema) and them again.
    let footer = 10 + footer_len + 10;
    let read = |range: Option<FragmentRange>| {
        let scan = ScanOptions {
            range,
            ..Default::default()
        };
        let (read, counts) = counted_read(&path, Format::Arrow, &scan);
        let rows: usize = read.unwrap().iter().map(RecordBatch::num_rows).sum();
        (rows, counts)
    };
    let block = |b: &crate::ecosystem::ipc::IpcBatch| b.metadata_length + b.body_length;
    for (start, end) in [(0, 1), (3, 5), (9, 10)] {
        let (rows, counts) = read(Some(FragmentRange::Batches { start, end }));
        assert_eq!(rows, 5_000 * (end - start) as usize);
        let share: u64 = info.batches[start as usize..end as usize]
            .iter()
            .map(block)
            .sum();
        assert!(share * 4 < size, "a fragment is a small part of the file");
        assert_eq!(counts.bytes(), footer + share, "batches {start}..{end}");
        assert_eq!(counts.round_trips(), 3, "batches {start}..{end}");
    }
    // The whole file: its batches in one request.
    let (rows, counts) = read(None);
    assert_eq!(rows, 50_000);
    let all: u64 = info.batches.iter().map(block).sum();
    assert_eq!(counts.bytes(), footer + all);
    assert_eq!(counts.round_trips(), 3);
    // A dictionary's block is fetched when the file is opened, in a round trip of its own.
    let path = dir.path().join("d.arrow");
    let keys = arrow_array::Int32Array::from_iter_values((0..20_000).map(|i| i % 3));
    let values = Arc::new(StringArray::from(vec!["a", "b", "c"]));
    let dictionary = arrow_array::Int32DictionaryArray::try_new(keys, values).unwrap();
    let batch = RecordBatch::try_from_iter([("d", Arc::new(dictionary) as _)]).unwrap();
    write_ecosystem(&path, Format::Arrow, &batch, 5_000);
    let range = FragmentRange::Batches { start: 1, end: 3 };
    let scan = ScanOptions {
        range: Some(range),
        ..Default::default()
    };
    let (there, counts) = counted_read(&path, Format::Arrow, &scan);
    let mut options = ReadOptions::default();
    options.scan.range = Some(range);
    let here = batches(crate::open(&path, &options));
    assert_eq!(there.unwrap(), here.unwrap());
    assert_eq!(counts.round_trips(), 4, "{counts:?}");
}

#[test]
fn a_jay_dataseries_or_vs_object_opens_by_url_in_one_open_and_two_reads() {
    let url = scratch("open_trips");
    let dir = storage().scratch.path().join("open_trips");
    let mut objects = Vec::new();
    for (fixture, name) in [
        ("jay/all_types.jay", "small_jay"),
        ("dataseries/generated/basic-all.ds", "small_ds"),
        ("vs/f64_r1_plain.vs", "small_vs"),
    ] {
        std::fs::copy(data_dir().join(fixture), dir.join(name)).unwrap();
        objects.push(name.to_owned());
    }
    for (format, name) in [(Format::Jay, "large_jay"), (Format::DataSeries, "large_ds")] {
        write_rows(&dir.join(name), format, 200_000);
        assert!(dir.join(name).metadata().unwrap().len() > 1 << 20);
        objects.push(name.to_owned());
    }
    // Each named with its format's extension, and without (known by its first bytes).
    for name in objects.clone() {
        let format = name.rsplit('_').next().unwrap();
        let named = format!("{name}.{format}");
        std::fs::copy(dir.join(&name), dir.join(&named)).unwrap();
        objects.push(named);
    }
    for name in objects {
        let object = format!("{url}/{name}");
        // The open: one open (a store's HEAD, for the size), one read of the head and the
        // tail, and one more only when the metadata is larger than the tail.
        let mut reader = crate::open(&object, &ReadOptions::default()).unwrap();
        let opened = requests(&object);
        let reads = opened.iter().filter(|r| **r == Request::Read).count();
        assert!(
            opened.first() == Some(&Request::OpenFile)
                && opened[1..].iter().all(|r| *r == Request::Read)
                && reads <= 2,
            "{name}: {opened:?}"
        );
        // The first batch reads its rows (a pipelined reader reads on, in the background).
        let first = reader.next().unwrap().unwrap();
        assert!(first.num_rows() > 0, "{name}");
        let schema = reader.schema();
        // Read to its end; the requests after it are Input::open's alone.
        reader.for_each(|batch| drop(batch.unwrap()));
        // Input::open alike: its schema comes from the bytes the open fetched.
        let before = requests(&object).len();
        let input = Input::open(&object, &ReadOptions::default()).unwrap();
        let opened = &requests(&object)[before..];
        assert!(
            opened.first() == Some(&Request::OpenFile)
                && opened[1..].iter().all(|r| *r == Request::Read)
                && opened.len() <= 3,
            "{name}: Input::open made {opened:?}"
        );
        assert_eq!(input.schema(), schema, "{name}");
    }
}

#[test]
fn a_missing_object_or_a_prefix_read_as_one_object_is_refused_clearly() {
    storage();
    // A missing object.
    let error = Input::open("test://data/jay/nothing.jay", &ReadOptions::default()).unwrap_err();
    assert_eq!(
        error.io_kind(),
        Some(std::io::ErrorKind::NotFound),
        "{error}"
    );
    // A format of the wrong shape: a prefix read as Jay.
    let error = Input::open(
        "test://data/filo/set.filo",
        &ReadOptions::for_format(Format::Jay),
    )
    .unwrap_err()
    .to_string();
    assert!(error.contains("names a prefix"), "{error}");
}

#[test]
fn a_fragment_of_a_changed_object_is_refused_and_never_mixes_versions() {
    let url = scratch("changed");
    let object = format!("{url}/x.jay");
    let path = storage().scratch.path().join("changed/x.jay");
    std::fs::copy(data_dir().join("jay/all_types.jay"), &path).unwrap();
    let listed = crate::fragments(&object, &ReadOptions::default(), 2).unwrap();
    let input = Input::open(&object, &ReadOptions::default()).unwrap();
    // The same bytes again: the fragments still read.
    std::fs::copy(data_dir().join("jay/all_types.jay"), &path).unwrap();
    batches(crate::open_fragment(&listed[0], &ReadOptions::default())).unwrap();
    // Another object of the same size at the same URL.
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[8] ^= 1; // the first byte of the first column's data
    std::fs::write(&path, &bytes).unwrap();
    let error = crate::open_fragment(&listed[1], &ReadOptions::default())
        .err()
        .expect("a fragment of another version was read");
    let text = error.to_string();
    assert!(
        text.contains("changed since its fragments were listed")
            && text.contains("list them again")
            && text.contains(&object),
        "{text}"
    );
    // An input opened now refuses the old listing's fragments too.
    let now = Input::open(&object, &ReadOptions::default());
    if let Ok(now) = now {
        let text = now
            .fragment_reader(&listed[0], &ScanOptions::default())
            .err()
            .expect("a fragment of another version was read")
            .to_string();
        assert!(
            text.contains("changed since its fragments were listed"),
            "{text}"
        );
    }
    // The input opened before the change reads the version it opened, or fails: never a mix.
    if let Ok(reader) = input.fragment_reader(&listed[0], &ScanOptions::default()) {
        let _ = batches(Ok(reader));
    }
    // The version travels with the fragment's JSON; storage settings never do.
    let json = listed[0].to_json();
    assert!(
        json.contains("\"object\"") && json.contains("\"version\""),
        "{json}"
    );
    assert_eq!(Fragment::from_json(&json).unwrap(), listed[0]);
    let local = crate::fragments(data_dir().join("jay/tiny.jay"), &Default::default(), 1).unwrap();
    assert!(
        !local[0].to_json().contains("object"),
        "{}",
        local[0].to_json()
    );
}

#[test]
fn storage_settings_never_appear_in_errors_fragments_or_reports() {
    const SECRET: &str = "AKIA-never-shown-42";
    storage();
    let mut options = ReadOptions::default();
    options.set("aws_secret_access_key", SECRET).unwrap();
    options.set("aws_access_key_id", SECRET).unwrap();
    let missing = Input::open("test://data/jay/missing.jay", &options).unwrap_err();
    let unknown = Input::open("test://nobucket/x.jay", &options).unwrap_err();
    let fragments = crate::fragments("test://data/jay/tiny.jay", &options, 1).unwrap();
    let report = crate::inspect(
        "test://data/jay/tiny.jay",
        &crate::InspectOptions {
            read: options.clone(),
            verify: true,
        },
    )
    .unwrap();
    let mut write = WriteOptions::default();
    write.set("aws_secret_access_key", SECRET).unwrap();
    write.mode = WriteMode::Append;
    let append = crate::create("test://root/x.bcolz", schema(), &write)
        .err()
        .unwrap();
    let shown = format!(
        "{missing} {missing:?} {unknown} {unknown:?} {} {report:?} {} {append} {options:?} {write:?}",
        fragments[0].to_json(),
        report.to_json(),
    );
    assert!(!shown.contains(SECRET), "{shown}");
}

fn schema() -> Arc<Schema> {
    Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new("name", DataType::Utf8, true),
    ]))
}

fn batch() -> RecordBatch {
    RecordBatch::try_new(
        schema(),
        vec![
            Arc::new(Int64Array::from(vec![1, 2, 3])),
            Arc::new(StringArray::from(vec![Some("a"), None, Some("c")])),
        ],
    )
    .unwrap()
}

fn reader() -> impl RecordBatchReader {
    arrow_array::RecordBatchIterator::new(vec![Ok(batch())], schema())
}

#[test]
fn a_single_file_written_to_a_url_appears_only_when_finished_and_equals_the_local_write() {
    let url = scratch("single");
    let local = tempfile::tempdir().unwrap();
    for format in [
        Format::Jay,
        Format::DataSeries,
        Format::Parquet,
        Format::Arrow,
        Format::ArrowStream,
        Format::Csv,
        Format::Ndjson,
    ] {
        let name = format!("out.{}", format.extensions().first().unwrap_or(&"bin"));
        let object = format!("{url}/{name}");
        let options = WriteOptions {
            format: Some(format),
            ..Default::default()
        };
        let mut writer = crate::create(&object, schema(), &options).unwrap();
        writer.write(&batch()).unwrap();
        let stat = |u: &str| storage().stat(u, &StorageOptions::default()).unwrap();
        assert_eq!(
            stat(&object),
            RemoteEntry::Missing,
            "{format} appeared before finish"
        );
        writer.finish().unwrap();
        let put = storage().scratch.path().join("single").join(&name);
        let here = local.path().join(&name);
        crate::write_all(reader(), &here, &options).unwrap();
        assert_eq!(
            std::fs::read(&put).unwrap(),
            std::fs::read(&here).unwrap(),
            "{format}"
        );
        // The existing-output rule: refused without overwrite, replaced with it.
        let e = crate::create(&object, schema(), &options).err().unwrap();
        assert_eq!(e.setting(), Some("overwrite"), "{e}");
        let overwrite = WriteOptions {
            mode: WriteMode::Overwrite,
            ..options.clone()
        };
        crate::write_all(reader(), &object, &overwrite).unwrap();
    }
    assert!(events("single").iter().all(|e| matches!(e, Event::Put(_))));

    // A bare Filo vector is written to a scratch file first, then sent up the same way.
    let object = format!("{url}/numbers.bin");
    let options = WriteOptions {
        format: Some(Format::FiloVector),
        ..Default::default()
    };
    let mut writer = crate::create(&object, numbers(), &options).unwrap();
    writer.write(&numbers_batch()).unwrap();
    let stat = || storage().stat(&object, &StorageOptions::default()).unwrap();
    assert_eq!(stat(), RemoteEntry::Missing);
    writer.finish().unwrap();
    let here = local.path().join("numbers.bin");
    crate::write_all(numbers_reader(), &here, &options).unwrap();
    let put = storage().scratch.path().join("single/numbers.bin");
    assert_eq!(std::fs::read(put).unwrap(), std::fs::read(here).unwrap());
}

fn numbers() -> Arc<Schema> {
    Arc::new(Schema::new(vec![Field::new("id", DataType::Int64, false)]))
}

fn numbers_batch() -> RecordBatch {
    RecordBatch::try_new(numbers(), vec![Arc::new(Int64Array::from(vec![1, 2, 3]))]).unwrap()
}

fn numbers_reader() -> impl RecordBatchReader {
    arrow_array::RecordBatchIterator::new(vec![Ok(numbers_batch())], numbers())
}

#[test]
fn a_failed_single_file_write_leaves_nothing() {
    let url = scratch("single_failed");
    let object = format!("{url}/out.jay");
    // A batch the writer refuses: the writer is dropped unfinished.
    let mut writer = crate::create(&object, schema(), &WriteOptions::default()).unwrap();
    let other = RecordBatch::try_new(
        Arc::new(Schema::new(vec![Field::new("x", DataType::Int64, false)])),
        vec![Arc::new(Int64Array::from(vec![1]))],
    )
    .unwrap();
    assert!(writer.write(&other).is_err());
    drop(writer);
    // The store fails the upload.
    storage()
        .puts_left
        .lock()
        .unwrap()
        .insert("single_failed".into(), 0);
    let e = crate::write_all(reader(), &object, &WriteOptions::default()).unwrap_err();
    assert!(e.to_string().contains("the store went away"), "{e}");
    assert!(e.to_string().contains(&object), "{e}");
    assert_eq!(
        storage().stat(&object, &StorageOptions::default()).unwrap(),
        RemoteEntry::Missing
    );
    // The writer dropped unfinished aborted its upload; nothing was ever put.
    assert_eq!(events("single_failed"), [Event::Abort("out.jay".into())]);
}

#[test]
fn a_directory_written_to_a_url_puts_its_marker_last_and_removes_what_it_put_on_failure() {
    for (format, name) in [(Format::Bcolz, "out.bcolz"), (Format::Filo, "out.filo")] {
        let test = format!("dir_{format}");
        let url = scratch(&test);
        let dataset = format!("{url}/{name}");
        let options = WriteOptions {
            format: Some(format),
            ..Default::default()
        };
        crate::write_all(numbers_reader(), &dataset, &options).unwrap();
        let puts: Vec<String> = events(&test)
            .into_iter()
            .map(|e| match e {
                Event::Put(key) => key,
                other => panic!("{other:?}"),
            })
            .collect();
        assert!(puts.len() > 1, "{puts:?}");
        let markers = format.dataset_markers();
        let last = puts
            .last()
            .unwrap()
            .trim_start_matches(&format!("{name}/"))
            .to_owned();
        assert!(markers.contains(&last.as_str()), "{format}: {puts:?}");
        assert!(
            puts[..puts.len() - 1]
                .iter()
                .all(|k| !markers.iter().any(|m| k == &format!("{name}/{m}"))),
            "{puts:?}"
        );
        // What was put equals a local write of the same batches, file by file.
        let local = tempfile::tempdir().unwrap();
        let here = local.path().join(name);
        crate::write_all(numbers_reader(), &here, &options).unwrap();
        let keys = LocalDir::new(&here).list("").unwrap().unwrap();
        assert_eq!(keys.len(), puts.len());

        // Exists: refused without overwrite.
        let e = crate::write_all(numbers_reader(), &dataset, &options).unwrap_err();
        assert_eq!(e.setting(), Some("overwrite"), "{e}");

        // A failure after one object: what was put is deleted, no marker was ever put.
        let failing = format!("{url}/failing.{}", format.extensions()[0]);
        storage().puts_left.lock().unwrap().insert(test.clone(), 1);
        let before = events(&test).len();
        let e = crate::write_all(numbers_reader(), &failing, &options).unwrap_err();
        assert!(e.to_string().contains("the store went away"), "{e}");
        storage().puts_left.lock().unwrap().remove(&test);
        let after = &events(&test)[before..];
        let put: Vec<&Event> = after
            .iter()
            .filter(|e| matches!(e, Event::Put(_)))
            .collect();
        let deleted: Vec<&Event> = after
            .iter()
            .filter(|e| matches!(e, Event::Delete(_)))
            .collect();
        assert_eq!(put.len(), 1, "{after:?}");
        assert_eq!(deleted.len(), 1, "{after:?}");
        assert!(
            after.iter().all(|e| !markers
                .iter()
                .any(|m| e == &Event::Put(format!("failing.{}/{m}", format.extensions()[0])))),
            "{after:?}"
        );
        assert_eq!(
            storage()
                .stat(&failing, &StorageOptions::default())
                .unwrap(),
            RemoteEntry::Missing,
            "{after:?}"
        );
    }
}

#[test]
fn appending_to_a_url_is_refused() {
    storage();
    let options = WriteOptions {
        mode: WriteMode::Append,
        ..Default::default()
    };
    for url in ["test://root/append/x.vs", "test://root/append/x.bcolz"] {
        let e = crate::create(url, schema(), &options).err().unwrap();
        let text = e.to_string();
        assert!(
            text.contains("remote storage") && text.contains(url),
            "{text}"
        );
        assert_eq!(e.setting(), Some("mode"));
        let e = crate::write_all(reader(), url, &options).unwrap_err();
        assert!(e.to_string().contains("cannot be"), "{e}");
    }
}

#[test]
fn changing_a_remote_file_in_place_is_refused_before_anything_is_read() {
    use crate::vs::LockWait;
    let url = "test://data/vs/f64_r1_plain.vs";
    let says = |e: Error| {
        let text = e.to_string();
        assert!(
            text.contains("remote storage cannot be") && text.contains(url),
            "{text}"
        );
    };
    says(crate::vs::delete_point(url, 0, LockWait::Try).unwrap_err());
    says(crate::vs::delete_ordinal(url, 0, LockWait::Try).unwrap_err());
    says(crate::vs::compact(url, LockWait::Try).unwrap_err());
    says(crate::vs::append(url, reader(), &Default::default()).unwrap_err());
    let bcolz = "test://data/bcolz/datasets/ctable_zipline_like";
    let e = crate::bcolz::Appender::try_new(bcolz, schema(), Default::default())
        .err()
        .unwrap();
    assert!(
        e.to_string().contains("remote storage cannot be") && e.to_string().contains(bcolz),
        "{e}"
    );
}
