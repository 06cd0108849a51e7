//! The object_store storage against real servers: moto's S3 server (and plain HTTP through a
//! public-read object in it), Azurite, and fake-gcs-server (reads only: it takes none of the
//! GCS client's writes). See servers/mod.rs for how they are found; a test whose server is
//! missing is skipped outside CI.

mod servers;

use std::io::Write;
use std::ops::Range;
use std::sync::Arc;

use arrowsmith::source::{ByteSource, ObjectSource, RemoteEntry, Storage, StorageOptions};
use arrowsmith::{Error, ErrorClass};
use arrowsmith_store::ObjectStoreStorage;
use servers::{
    azure_options, create_bucket, create_container, create_gcs_bucket, gcs_options, gcs_upload,
    pending_uploads, put_public, s3_options, Proxy, SECRET,
};

const MIB: usize = 1024 * 1024;

/// `len` bytes in which every range differs from its neighbours.
fn pattern(len: usize, seed: u64) -> Vec<u8> {
    let mut state = seed | 1;
    (0..len)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state as u8
        })
        .collect()
}

fn write_object(storage: &dyn Storage, url: &str, options: &StorageOptions, bytes: &[u8]) {
    let mut writer = storage.create_file(url, options).unwrap();
    writer.write_all(bytes).unwrap();
    writer.finish().unwrap();
}

fn read(source: &dyn ByteSource, ranges: &[Range<u64>]) -> Vec<Vec<u8>> {
    source
        .read_ranges(ranges)
        .unwrap()
        .iter()
        .map(|b| b.as_slice().to_vec())
        .collect()
}

fn expected(bytes: &[u8], ranges: &[Range<u64>]) -> Vec<Vec<u8>> {
    ranges
        .iter()
        .map(|r| bytes[r.start as usize..r.end as usize].to_vec())
        .collect()
}

/// The error's text and its Debug hold no credential.
fn assert_no_secret(error: &Error) {
    for text in [error.to_string(), format!("{error:?}")] {
        assert!(!text.contains(SECRET), "a secret in: {text}");
        assert!(!text.contains("hunter2"), "a URL password in: {text}");
    }
}

fn entry(storage: &dyn Storage, url: &str, options: &StorageOptions) -> RemoteEntry {
    storage.stat(url, options).unwrap()
}

#[test]
fn s3_ranged_reads_equal_the_local_bytes() {
    let Some(moto) = servers::moto() else { return };
    create_bucket(moto.port, "ranges");
    let options = s3_options(moto.port);
    let storage = ObjectStoreStorage;
    let bytes = pattern(3 * MIB + 17, 1);
    let url = "s3://ranges/dir/object.bin";
    write_object(&storage, url, &options, &bytes);

    let object = storage.open_file(url, &options).unwrap();
    assert_eq!(object.size(), bytes.len() as u64);
    assert_eq!(object.location(), url);
    assert!(object.version().is_some_and(|v| !v.is_empty()));
    let ranges = [
        0..1,
        5..4096,
        (2 * MIB as u64)..(2 * MIB as u64 + 70_000),
        100..100,
        (bytes.len() as u64 - 9)..bytes.len() as u64,
        4000..5000, // overlaps the second
    ];
    assert_eq!(read(&*object, &ranges), expected(&bytes, &ranges));
    assert_eq!(object.read_all().unwrap().as_slice(), &bytes[..]);

    let past = object.read_range(0..bytes.len() as u64 + 1).unwrap_err();
    assert_eq!(past.class(), ErrorClass::BufferOutOfBounds);
    assert!(past.to_string().starts_with(url), "{past}");

    // Every returned range sits at its file offset's alignment, as in a memory map.
    for (buffer, range) in object.read_ranges(&ranges).unwrap().iter().zip(&ranges) {
        if !range.is_empty() {
            assert_eq!(buffer.as_ptr() as usize % 8, (range.start % 8) as usize);
        }
    }
}

#[test]
fn s3_coalesces_only_ranges_a_few_kib_apart() {
    let Some(moto) = servers::moto() else { return };
    create_bucket(moto.port, "coalesce");
    let options = s3_options(moto.port);
    let storage = ObjectStoreStorage;
    let bytes = pattern(2 * MIB + 100, 2);
    let url = "s3://coalesce/columns.bin";
    write_object(&storage, url, &options, &bytes);
    let object = storage.open_file(url, &options).unwrap();
    let gets = || moto.logged("GET /coalesce/columns.bin ");
    let before = gets();

    // Two columns 1 MiB apart: two GETs, each of its own bytes only.
    let far = [0..100, (MIB as u64)..(MIB as u64 + 100)];
    assert_eq!(read(&*object, &far), expected(&bytes, &far));
    assert_eq!(gets() - before, 2, "{}", moto.log_text());

    // Ranges a few hundred bytes apart: one GET.
    let near = [0..100, 400..500, 4000..4100];
    assert_eq!(read(&*object, &near), expected(&bytes, &near));
    assert_eq!(gets() - before, 3, "{}", moto.log_text());
}

#[test]
fn s3_an_object_changed_since_it_was_opened_is_an_error() {
    let Some(moto) = servers::moto() else { return };
    create_bucket(moto.port, "changing");
    let options = s3_options(moto.port);
    let storage = ObjectStoreStorage;
    let url = "s3://changing/file.jay";
    write_object(&storage, url, &options, &pattern(10_000, 3));
    let object = storage.open_file(url, &options).unwrap();
    assert_eq!(object.read_range(0..10).unwrap().len(), 10);

    write_object(&storage, url, &options, &pattern(10_000, 4));
    let error = object.read_ranges(&[0..10, 9000..9010]).unwrap_err();
    let text = error.to_string();
    assert!(text.starts_with(url), "{text}");
    assert!(
        text.contains("changed since it was opened") && text.contains("read it again"),
        "{text}"
    );
    assert_eq!(error.class(), ErrorClass::Io);
    assert_no_secret(&error);
    // Opened again, it reads the new version.
    let again = storage.open_file(url, &options).unwrap();
    assert_eq!(
        again.read_range(0..10).unwrap().as_slice(),
        &pattern(10_000, 4)[..10]
    );
}

#[test]
fn s3_missing_objects_buckets_and_bad_settings_are_clear_errors_without_secrets() {
    let Some(moto) = servers::moto() else { return };
    create_bucket(moto.port, "present");
    let options = s3_options(moto.port);
    let storage = ObjectStoreStorage;
    write_object(&storage, "s3://present/a/b.bin", &options, b"12345");

    let missing = storage
        .open_file("s3://present/a/none.jay", &options)
        .unwrap_err();
    assert_eq!(missing.io_kind(), Some(std::io::ErrorKind::NotFound));
    assert!(
        missing
            .to_string()
            .starts_with("s3://present/a/none.jay: could not open the object: there is no object"),
        "{missing}"
    );
    assert_no_secret(&missing);

    let no_bucket = storage
        .open_file("s3://absent-bucket/x.jay", &options)
        .unwrap_err();
    assert_no_secret(&no_bucket);
    assert_eq!(no_bucket.io_kind(), Some(std::io::ErrorKind::NotFound));
    assert!(
        no_bucket
            .to_string()
            .contains("could not open the object: the bucket (or container) does not exist"),
        "{no_bucket}"
    );
    let listing = storage
        .stat("s3://absent-bucket/x.jay", &options)
        .unwrap_err();
    assert!(
        listing
            .to_string()
            .contains("the bucket (or container) does not exist"),
        "{listing}"
    );
    assert_no_secret(&listing);

    // What is where.
    assert_eq!(
        entry(&storage, "s3://present/a/b.bin", &options),
        RemoteEntry::Object { size: 5 }
    );
    assert_eq!(
        entry(&storage, "s3://present/a", &options),
        RemoteEntry::Prefix
    );
    assert_eq!(
        entry(&storage, "s3://present", &options),
        RemoteEntry::Prefix
    );
    assert_eq!(
        entry(&storage, "s3://present/b", &options),
        RemoteEntry::Missing
    );

    // A directory of objects: a missing key is None, not an error.
    let dir = storage.open_dir("s3://present/a", &options).unwrap();
    assert!(dir.open("none").unwrap().is_none());
    assert_eq!(dir.open("b.bin").unwrap().unwrap().size(), 5);
    let got = dir.get_all(&["b.bin", "none"]).unwrap();
    assert_eq!(got[0].as_ref().unwrap().as_slice(), b"12345");
    assert!(got[1].is_none());
    assert_eq!(dir.list("").unwrap(), Some(vec!["b.bin".to_string()]));

    // An unknown setting names the key and shows no value.
    let mut bad = options.clone();
    bad.set("aws_secret_acess_key", SECRET);
    let unknown = storage.open_file("s3://present/a/b.bin", &bad).unwrap_err();
    assert_eq!(unknown.class(), ErrorClass::InvalidArgument);
    assert!(
        unknown.to_string().contains("\"aws_secret_acess_key\""),
        "{unknown}"
    );
    assert_no_secret(&unknown);

    // The same store for DataFusion to list through, one per bucket and settings.
    let (store, path) = arrowsmith_store::object_store_for("s3://present/a", &options).unwrap();
    assert_eq!(path.as_ref(), "a");
    let (again, _) = arrowsmith_store::object_store_for("s3://present/other", &options).unwrap();
    assert!(Arc::ptr_eq(&store, &again));
    let mut other_options = options.clone();
    other_options.set("timeout", "20s");
    let (other, _) = arrowsmith_store::object_store_for("s3://present/a", &other_options).unwrap();
    assert!(!Arc::ptr_eq(&store, &other));
    let listed = tokio::runtime::Runtime::new().unwrap().block_on(async {
        use futures_util::TryStreamExt;
        store
            .list(Some(&path))
            .try_collect::<Vec<_>>()
            .await
            .unwrap()
    });
    let names: Vec<&str> = listed.iter().map(|m| m.location.as_ref()).collect();
    assert_eq!(names, ["a/b.bin"]);

    // Deleting: gone, and deleting again is no error.
    storage.delete("s3://present/a/b.bin", &options).unwrap();
    assert_eq!(
        entry(&storage, "s3://present/a/b.bin", &options),
        RemoteEntry::Missing
    );
    storage.delete("s3://present/a/b.bin", &options).unwrap();
}

#[test]
fn s3_writes_appear_only_when_finished_and_abort_or_drop_leaves_nothing() {
    let Some(moto) = servers::moto() else { return };
    create_bucket(moto.port, "writes");
    let options = s3_options(moto.port);
    let storage = ObjectStoreStorage;
    let bytes = pattern(9 * MIB, 5);
    let listed = || {
        storage
            .open_dir("s3://writes", &options)
            .unwrap()
            .list("")
            .unwrap()
            .unwrap()
    };

    // More than a part: a multipart upload, invisible until finished.
    let url = "s3://writes/big.bin";
    let mut writer = storage.create_file(url, &options).unwrap();
    writer.write_all(&bytes).unwrap();
    assert_eq!(entry(&storage, url, &options), RemoteEntry::Missing);
    assert!(listed().is_empty());
    assert_eq!(pending_uploads(moto.port, "writes"), 1);
    writer.finish().unwrap();
    assert_eq!(listed(), vec!["big.bin".to_string()]);
    assert_eq!(pending_uploads(moto.port, "writes"), 0);
    let object = storage.open_file(url, &options).unwrap();
    assert_eq!(object.read_all().unwrap().as_slice(), &bytes[..]);

    // Less than a part: one PUT at finish.
    let mut small = storage
        .create_file("s3://writes/small.bin", &options)
        .unwrap();
    small.write_all(b"tiny").unwrap();
    assert_eq!(
        entry(&storage, "s3://writes/small.bin", &options),
        RemoteEntry::Missing
    );
    small.finish().unwrap();
    assert_eq!(
        entry(&storage, "s3://writes/small.bin", &options),
        RemoteEntry::Object { size: 4 }
    );

    // Aborted, or dropped unfinished: no object, no upload left.
    let mut aborted = storage
        .create_file("s3://writes/aborted.bin", &options)
        .unwrap();
    aborted.write_all(&bytes).unwrap();
    assert_eq!(pending_uploads(moto.port, "writes"), 1);
    aborted.abort().unwrap();
    let mut dropped = storage
        .create_file("s3://writes/dropped.bin", &options)
        .unwrap();
    dropped.write_all(&bytes).unwrap();
    drop(dropped);
    assert_eq!(
        listed(),
        vec!["big.bin".to_string(), "small.bin".to_string()]
    );
    assert_eq!(pending_uploads(moto.port, "writes"), 0);

    // Overwritten: the old object stays whole until the new one is finished.
    let mut over = storage.create_file(url, &options).unwrap();
    over.write_all(&pattern(9 * MIB, 6)).unwrap();
    assert_eq!(
        storage
            .open_file(url, &options)
            .unwrap()
            .read_all()
            .unwrap()
            .as_slice(),
        &bytes[..]
    );
    over.finish().unwrap();
    assert_eq!(
        storage
            .open_file(url, &options)
            .unwrap()
            .read_range(0..100)
            .unwrap()
            .as_slice(),
        &pattern(9 * MIB, 6)[..100]
    );
}

#[test]
fn s3_server_stopped_in_the_middle_of_a_read_and_of_a_write() {
    let Some(moto) = servers::moto() else { return };
    create_bucket(moto.port, "faults");
    let direct = s3_options(moto.port);
    let proxy = Proxy::new(moto.port);
    let through = s3_options(proxy.port);
    let storage = ObjectStoreStorage;
    let bytes = pattern(4 * MIB, 7);
    let url = "s3://faults/object.bin";
    write_object(&storage, url, &direct, &bytes);

    // The connection cut after 512 KiB of the object.
    let object = storage.open_file(url, &through).unwrap();
    proxy.cut_after(512 * 1024);
    let error = object.read_all().unwrap_err();
    let text = error.to_string();
    assert!(
        text.starts_with(&format!("{url}: could not read the object")),
        "{text}"
    );
    assert_eq!(error.class(), ErrorClass::Io);
    assert_no_secret(&error);
    // The server gone altogether.
    proxy.cut();
    let error = object.read_range(0..10).unwrap_err();
    assert!(error.to_string().starts_with(url), "{error}");
    assert_no_secret(&error);
    proxy.restore();
    assert_eq!(object.read_range(0..10).unwrap().as_slice(), &bytes[..10]);

    // A multipart upload whose server goes away: an error, and no object.
    let target = "s3://faults/written.bin";
    let mut writer = storage.create_file(target, &through).unwrap();
    writer.write_all(&pattern(9 * MIB, 8)).unwrap();
    proxy.cut();
    let mut error = writer
        .write_all(&pattern(8 * MIB, 9))
        .err()
        .map(Error::from);
    if error.is_none() {
        error = writer.finish().err();
    }
    let error = error.expect("a write through a cut connection fails");
    assert!(error.to_string().starts_with(target), "{error}");
    assert_no_secret(&error);
    proxy.restore();
    assert_eq!(entry(&storage, target, &direct), RemoteEntry::Missing);
    // A small object whose single PUT fails: no object either.
    let mut small = storage.create_file(target, &through).unwrap();
    small.write_all(b"some bytes").unwrap();
    proxy.cut();
    let error = small.finish().unwrap_err();
    assert_no_secret(&error);
    proxy.restore();
    assert_eq!(entry(&storage, target, &direct), RemoteEntry::Missing);
}

fn read_through_storage(port: u16) -> Vec<u8> {
    let storage = ObjectStoreStorage;
    let options = s3_options(port);
    let object = storage.open_file("s3://runtimes/x.bin", &options).unwrap();
    object
        .read_ranges(&[0..4, 10_000..10_004])
        .unwrap()
        .concat_bytes()
}

trait Concat {
    fn concat_bytes(&self) -> Vec<u8>;
}

impl Concat for Vec<arrow_buffer::Buffer> {
    fn concat_bytes(&self) -> Vec<u8> {
        self.iter().flat_map(|b| b.as_slice().to_vec()).collect()
    }
}

fn runtimes_fixture() -> Option<(servers::Server, Vec<u8>)> {
    let moto = servers::moto()?;
    create_bucket(moto.port, "runtimes");
    let bytes = pattern(20_000, 10);
    write_object(
        &ObjectStoreStorage,
        "s3://runtimes/x.bin",
        &s3_options(moto.port),
        &bytes,
    );
    let mut want = bytes[0..4].to_vec();
    want.extend_from_slice(&bytes[10_000..10_004]);
    Some((moto, want))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reads_from_a_multi_thread_runtime_worker_and_its_blocking_threads() {
    let Some((moto, want)) = runtimes_fixture() else {
        return;
    };
    assert_eq!(read_through_storage(moto.port), want);
    let port = moto.port;
    let blocking = tokio::task::spawn_blocking(move || read_through_storage(port));
    assert_eq!(blocking.await.unwrap(), want);
    // Several at once on the workers: none starves the others.
    let tasks: Vec<_> = (0..4)
        .map(|_| tokio::spawn(async move { read_through_storage(port) }))
        .collect();
    for task in tasks {
        assert_eq!(task.await.unwrap(), want);
    }
}

#[tokio::test(flavor = "current_thread")]
async fn reads_from_a_current_thread_runtime() {
    let Some((moto, want)) = runtimes_fixture() else {
        return;
    };
    assert_eq!(read_through_storage(moto.port), want);
}

#[test]
fn http_reads_a_public_object_and_cannot_list() {
    let Some(moto) = servers::moto() else { return };
    create_bucket(moto.port, "public");
    let bytes = pattern(100_000, 11);
    put_public(moto.port, "public", "dir/file.bin", &bytes);
    let storage = ObjectStoreStorage;
    let mut options = StorageOptions::default();
    options.set("allow_http", "true");
    options.set("max_retries", "1");

    let url = format!("http://127.0.0.1:{}/public/dir/file.bin", moto.port);
    let object = storage.open_file(&url, &options).unwrap();
    assert_eq!(object.size(), bytes.len() as u64);
    let ranges = [0..10, 50_000..60_000, 99_990..100_000];
    assert_eq!(read(&*object, &ranges), expected(&bytes, &ranges));
    assert_eq!(
        entry(&storage, &url, &options),
        RemoteEntry::Object { size: 100_000 }
    );

    let dir_url = format!("http://127.0.0.1:{}/public/dir", moto.port);
    let dir = storage.open_dir(&dir_url, &options).unwrap();
    assert_eq!(dir.list("").unwrap(), None);
    assert_eq!(dir.get("file.bin").unwrap().unwrap().as_slice(), &bytes[..]);
    assert!(dir.get("none.bin").unwrap().is_none());

    // A write to a plain HTTP server is one PUT at finish (moto takes it unsigned).
    let written = pattern(9 * MIB, 13);
    let put_url = format!("http://127.0.0.1:{}/public/dir/put.bin", moto.port);
    let mut writer = storage.create_file(&put_url, &options).unwrap();
    writer.write_all(&written).unwrap();
    assert_eq!(entry(&storage, &put_url, &options), RemoteEntry::Missing);
    writer.finish().unwrap();
    let back = storage
        .open_file("s3://public/dir/put.bin", &s3_options(moto.port))
        .unwrap();
    assert_eq!(back.read_all().unwrap().as_slice(), &written[..]);

    // A password in the URL and a token in its query are in no message.
    let secret_url = format!(
        "http://user:hunter2@127.0.0.1:{}/public/dir/none.bin?token={SECRET}",
        moto.port
    );
    let error = storage.open_file(&secret_url, &options).unwrap_err();
    let shown = format!("http://127.0.0.1:{}/public/dir/none.bin", moto.port);
    assert!(error.to_string().starts_with(&shown), "{error}");
    assert_no_secret(&error);
}

#[test]
fn a_jay_file_read_from_s3_equals_the_local_read() {
    let Some(moto) = servers::moto() else { return };
    create_bucket(moto.port, "jay");
    let options = s3_options(moto.port);
    arrowsmith_store::register();
    arrowsmith_store::register(); // idempotent
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../data/jay");
    for name in ["all_types.jay", "strings.jay", "keyed1.jay"] {
        let local = root.join(name);
        let url = format!("s3://jay/fixtures/{name}");
        let storage = arrowsmith::source::registered_storage(&url).unwrap();
        write_object(&*storage, &url, &options, &std::fs::read(&local).unwrap());

        let source = storage.open_file(&url, &options).unwrap();
        let remote = arrowsmith::jay::JayFile::open_source(source, false).unwrap();
        let remote: Vec<_> = arrowsmith::jay::ReaderBuilder::new()
            .build_from_file(Arc::new(remote))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        let local: Vec<_> = arrowsmith::jay::ReaderBuilder::new()
            .build(&local)
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert!(!local.is_empty());
        assert_eq!(remote, local, "{name}");
    }
}

#[test]
fn opening_a_url_costs_one_head_and_the_readers_own_gets() {
    let Some(moto) = servers::moto() else { return };
    create_bucket(moto.port, "trips");
    let options = s3_options(moto.port);
    arrowsmith_store::register();
    let storage = arrowsmith::source::registered_storage("s3://trips").unwrap();
    let read = arrowsmith::ReadOptions {
        storage: options.clone(),
        ..Default::default()
    };
    let data = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../data");
    let requests = |what: &str| moto.logged(what);
    // Small files, each read whole by its open: named by their format, and not (known by
    // their first bytes, which the open's one GET fetches).
    for (fixture, key) in [
        ("jay/all_types.jay", "all_types.jay"),
        ("jay/all_types.jay", "all_types_jay"),
        ("dataseries/generated/basic-all.ds", "basic-all.ds"),
        ("dataseries/generated/basic-all.ds", "basic-all_ds"),
    ] {
        let url = format!("s3://trips/{key}");
        let bytes = std::fs::read(data.join(fixture)).unwrap();
        write_object(&*storage, &url, &options, &bytes);
        let (head, get) = (format!("HEAD /trips/{key} "), format!("GET /trips/{key} "));
        let before = [requests(&head), requests(&get), requests("GET /trips?")];
        let batches: Vec<_> = arrowsmith::open(&url, &read)
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert!(!batches.is_empty());
        let after = [requests(&head), requests(&get), requests("GET /trips?")];
        let made: Vec<usize> = after.iter().zip(before).map(|(a, b)| a - b).collect();
        assert_eq!(made, [1, 1, 0], "{key}: HEADs, GETs and listings");
    }
    // A prefix: a HEAD that finds no object, then one listing.
    let dataset = data.join("filo/set.filo");
    let keys = arrowsmith::source::LocalDir::new(&dataset)
        .list("")
        .unwrap();
    for name in keys.unwrap() {
        let bytes = std::fs::read(dataset.join(&name)).unwrap();
        write_object(
            &*storage,
            &format!("s3://trips/set.filo/{name}"),
            &options,
            &bytes,
        );
    }
    let before = [requests("HEAD /trips/set.filo "), requests("GET /trips?")];
    let input = arrowsmith::Input::open("s3://trips/set.filo", &read).unwrap();
    assert_eq!(input.format(), arrowsmith::Format::Filo);
    let after = [requests("HEAD /trips/set.filo "), requests("GET /trips?")];
    assert_eq!(after[0] - before[0], 1, "HEADs of the prefix");
    assert_eq!(after[1] - before[1], 1, "listings");
    // Neither an object nor a prefix: not found, naming the URL.
    let missing = arrowsmith::Input::open("s3://trips/none", &read).unwrap_err();
    assert_eq!(
        missing.io_kind(),
        Some(std::io::ErrorKind::NotFound),
        "{missing}"
    );
    assert!(
        missing.to_string().starts_with("s3://trips/none: "),
        "{missing}"
    );
}

#[test]
fn azurite_reads_bounded_ranges_writes_lists_and_deletes() {
    let Some(azurite) = servers::azurite() else {
        return;
    };
    create_container(azurite.port, "data");
    let options = azure_options(azurite.port);
    let storage = ObjectStoreStorage;
    let bytes = pattern(9 * MIB + 5, 12);

    // A multipart (block list) upload, invisible until finished.
    let url = "az://data/set/big.bin";
    let mut writer = storage.create_file(url, &options).unwrap();
    writer.write_all(&bytes).unwrap();
    assert_eq!(entry(&storage, url, &options), RemoteEntry::Missing);
    writer.finish().unwrap();
    write_object(&storage, "az://data/set/small.bin", &options, b"abc");

    // Azurite refuses suffix ranges: every range here is bounded, the last bytes included.
    let object = storage.open_file(url, &options).unwrap();
    assert_eq!(object.size(), bytes.len() as u64);
    let end = bytes.len() as u64;
    let ranges = [
        0..8,
        (end - 8)..end,
        (3 * MIB as u64)..(3 * MIB as u64 + 5000),
    ];
    assert_eq!(read(&*object, &ranges), expected(&bytes, &ranges));

    let dir = storage.open_dir("az://data/set", &options).unwrap();
    // Their Debug names the URL, not the store's configuration (object_store's Debug of an
    // Azure store shows the account key's bytes).
    let debug = format!("{object:?} {dir:?}");
    assert!(debug.contains("az://data/set/big.bin"), "{debug}");
    assert!(
        !debug.contains("AccessKey") && !debug.contains("credential"),
        "{debug}"
    );
    assert_eq!(
        dir.list("").unwrap(),
        Some(vec!["big.bin".to_string(), "small.bin".to_string()])
    );
    assert_eq!(dir.get("small.bin").unwrap().unwrap().as_slice(), b"abc");

    // Replaced after opening: the ETag no longer matches.
    write_object(&storage, url, &options, b"replaced");
    let error = object.read_range(0..8).unwrap_err();
    assert!(
        error.to_string().contains("changed since it was opened"),
        "{error}"
    );

    // Aborted: nothing.
    let mut aborted = storage
        .create_file("az://data/set/aborted.bin", &options)
        .unwrap();
    aborted.write_all(&bytes).unwrap();
    aborted.abort().unwrap();
    assert_eq!(
        entry(&storage, "az://data/set/aborted.bin", &options),
        RemoteEntry::Missing
    );

    storage.delete(url, &options).unwrap();
    assert_eq!(entry(&storage, url, &options), RemoteEntry::Missing);
}

#[test]
fn azurite_refuses_wrong_credentials_with_a_clear_error_without_the_secret() {
    let Some(azurite) = servers::azurite() else {
        return;
    };
    create_container(azurite.port, "locked");
    let storage = ObjectStoreStorage;
    write_object(
        &storage,
        "az://locked/f.bin",
        &azure_options(azurite.port),
        b"x",
    );

    use base64::Engine;
    let wrong_key = base64::engine::general_purpose::STANDARD.encode(SECRET);
    let mut options = azure_options(azurite.port);
    options.set("azure_storage_account_key", &wrong_key);
    let error = storage
        .open_file("az://locked/f.bin", &options)
        .unwrap_err();
    let text = error.to_string();
    assert!(text.starts_with("az://locked/f.bin: "), "{text}");
    assert!(text.contains("refused the credentials"), "{text}");
    assert_eq!(error.io_kind(), Some(std::io::ErrorKind::PermissionDenied));
    for shown in [text, format!("{error:?}")] {
        assert!(!shown.contains(&wrong_key), "{shown}");
    }
    assert_no_secret(&error);
}

#[test]
fn file_urls_go_through_the_same_code() {
    let dir = tempfile::tempdir().unwrap();
    let storage = ObjectStoreStorage;
    let options = StorageOptions::default();
    let url = format!("file://{}/sub/object.bin", dir.path().display());
    let bytes = pattern(9 * MIB + 3, 14);
    let mut writer = storage.create_file(&url, &options).unwrap();
    writer.write_all(&bytes).unwrap();
    assert_eq!(entry(&storage, &url, &options), RemoteEntry::Missing);
    writer.finish().unwrap();
    assert_eq!(
        std::fs::read(dir.path().join("sub/object.bin")).unwrap(),
        bytes
    );

    let object = storage.open_file(&url, &options).unwrap();
    let ranges = [0..3, (5 * MIB as u64)..(5 * MIB as u64 + 10)];
    assert_eq!(read(&*object, &ranges), expected(&bytes, &ranges));
    let prefix = format!("file://{}/sub", dir.path().display());
    assert_eq!(entry(&storage, &prefix, &options), RemoteEntry::Prefix);
    storage.delete(&url, &options).unwrap();
    assert_eq!(entry(&storage, &url, &options), RemoteEntry::Missing);
    let missing = storage.open_file(&url, &options).unwrap_err();
    assert_eq!(missing.io_kind(), Some(std::io::ErrorKind::NotFound));
}

/// Every batch `path` reads (a local path or a URL).
fn read_batches(
    path: &str,
    options: &arrowsmith::ReadOptions,
) -> Result<Vec<arrow_array::RecordBatch>, Error> {
    arrowsmith::open(path, options)?
        .collect::<Result<Vec<_>, _>>()
        .map_err(Error::from)
}

/// The files under `dir`, each with its name relative to `root`.
fn files_under(root: &std::path::Path, dir: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut pending = vec![root.join(dir)];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                pending.push(path);
            } else {
                let name = path.strip_prefix(root).unwrap();
                names.push(name.to_str().unwrap().to_string());
            }
        }
    }
    names.sort();
    names
}

#[test]
fn gcs_reads_every_fixture_as_it_reads_locally() {
    let Some(gcs) = servers::fake_gcs() else {
        return;
    };
    create_gcs_bucket(gcs.port, "fixtures");
    arrowsmith_store::register();
    let remote = arrowsmith::ReadOptions {
        storage: gcs_options(gcs.port),
        ..Default::default()
    };
    let local = arrowsmith::ReadOptions::default();
    let data = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../data");
    let mut inputs = Vec::new();
    for dir in ["jay", "dataseries", "vs"] {
        for name in files_under(&data, dir) {
            if [".jay", ".ds", ".vs"].iter().any(|ext| name.ends_with(ext)) {
                gcs_upload(
                    gcs.port,
                    "fixtures",
                    &name,
                    &std::fs::read(data.join(&name)).unwrap(),
                );
                inputs.push(name);
            }
        }
    }
    // Directories: prefixes, found by a listing.
    for dir in ["filo/set.filo", "bcolz/datasets/cp_lz4_sh1"] {
        for name in files_under(&data, dir) {
            gcs_upload(
                gcs.port,
                "fixtures",
                &name,
                &std::fs::read(data.join(&name)).unwrap(),
            );
        }
        inputs.push(dir.to_string());
    }
    assert!(inputs.len() > 60, "{inputs:?}");
    let (mut read, mut refused) = (0, 0);
    for name in &inputs {
        let url = format!("gs://fixtures/{name}");
        let path = data.join(name);
        match (
            read_batches(path.to_str().unwrap(), &local),
            read_batches(&url, &remote),
        ) {
            (Ok(want), Ok(got)) => {
                assert_eq!(got, want, "{name}");
                read += 1;
            }
            // A bad file is refused the same way, named by its URL.
            (Err(want), Err(got)) => {
                assert_eq!(got.class(), want.class(), "{name}: {got} / {want}");
                assert!(got.to_string().contains(&url), "{got}");
                refused += 1;
            }
            (want, got) => panic!("{name}: locally {want:?}, from GCS {got:?}"),
        }
    }
    assert!(read > 40 && refused > 10, "{read} read, {refused} refused");
    assert_eq!(
        entry(&ObjectStoreStorage, "gs://fixtures/vs", &remote.storage),
        RemoteEntry::Prefix
    );
    assert_eq!(
        entry(&ObjectStoreStorage, "gs://fixtures/none", &remote.storage),
        RemoteEntry::Missing
    );
}

#[test]
fn gcs_a_fragment_fetches_only_its_own_bytes() {
    use arrow_array::{Int64Array, RecordBatch, StringArray};
    use arrow_schema::{DataType, Field, Schema};
    let Some(gcs) = servers::fake_gcs() else {
        return;
    };
    create_gcs_bucket(gcs.port, "frags");
    let options = gcs_options(gcs.port);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("big.jay");
    let schema = Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new("label", DataType::Utf8, false),
    ]));
    let mut writer =
        arrowsmith::create(&path, schema.clone(), &arrowsmith::WriteOptions::default()).unwrap();
    for part in 0..4i64 {
        let ids: Vec<i64> = (part * 100_000..(part + 1) * 100_000).collect();
        let labels: Vec<String> = ids.iter().map(|i| format!("row {i}")).collect();
        let batch = RecordBatch::try_new(
            schema.clone(),
            vec![
                Arc::new(Int64Array::from(ids)),
                Arc::new(StringArray::from(labels)),
            ],
        )
        .unwrap();
        writer.write(&batch).unwrap();
    }
    writer.finish().unwrap();
    let bytes = std::fs::read(&path).unwrap();
    gcs_upload(gcs.port, "frags", "big.jay", &bytes);

    let url = "gs://frags/big.jay";
    let source =
        arrowsmith::source::Counting::new(ObjectStoreStorage.open_file(url, &options).unwrap());
    let counts = source.counts();
    let remote = Arc::new(arrowsmith::jay::JayFile::open_source(Arc::new(source), false).unwrap());
    let local = Arc::new(arrowsmith::jay::JayFile::open(&path).unwrap());
    let spans = arrowsmith::jay::fragments(&local, 100_000).unwrap();
    assert_eq!(spans.len(), 4);
    let span = &spans[2];
    counts.reset();
    let read = |file: &Arc<arrowsmith::jay::JayFile>| -> Vec<RecordBatch> {
        arrowsmith::jay::ReaderBuilder::new()
            .with_range(span.range)
            .build_from_file(Arc::clone(file))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap()
    };
    assert_eq!(read(&remote), read(&local));
    let fetched = counts.bytes();
    assert!(
        fetched <= span.bytes + 64 * 1024 && span.bytes * 3 < bytes.len() as u64,
        "a fragment of {} bytes of {} fetched {fetched}",
        span.bytes,
        bytes.len()
    );
    assert!(fetched >= span.bytes, "{fetched} < {}", span.bytes);
}
