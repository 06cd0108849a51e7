use std::path::Path;

use super::*;

fn data(path: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("data")
        .join(path)
}

#[test]
fn a_local_range_is_a_slice_of_the_map() {
    let path = data("jay/all_types.jay");
    let file = LocalFile::open(&path).unwrap();
    let whole = std::fs::read(&path).unwrap();
    assert_eq!(file.size(), whole.len() as u64);
    let parts = file.read_ranges(&[0..8, 16..40]).unwrap();
    assert_eq!(parts[0].as_slice(), &whole[0..8]);
    assert_eq!(parts[1].as_slice(), &whole[16..40]);
    // No copy: the range points into the same bytes as the whole.
    let all = file.read_all().unwrap();
    assert_eq!(parts[1].as_ptr(), all.as_slice()[16..].as_ptr());
}

#[test]
fn a_range_past_the_end_is_an_error_naming_the_file_and_offset() {
    let file = LocalFile::from_bytes("in-memory.bin", vec![0u8; 10]);
    let error = file.read_range(4..12).unwrap_err();
    assert_eq!(error.class(), ErrorClass::BufferOutOfBounds);
    assert_eq!(error.offset(), Some(4));
    let text = error.to_string();
    assert!(
        text.contains("in-memory.bin") && text.contains("10 bytes"),
        "{text}"
    );
}

#[test]
fn a_local_directory_tells_a_missing_object_from_an_error_and_lists_sorted_keys() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("a/data")).unwrap();
    std::fs::write(dir.path().join("a/data/__1.blp"), b"one").unwrap();
    std::fs::write(dir.path().join("a/data/__0.blp"), b"zero").unwrap();
    std::fs::write(dir.path().join("meta"), b"{}").unwrap();
    let root = LocalDir::new(dir.path());
    assert!(root.open("a/data/__2.blp").unwrap().is_none());
    assert!(
        root.open("a").unwrap().is_none(),
        "a directory is no object"
    );
    assert_eq!(
        root.get("a/data/__0.blp").unwrap().unwrap().as_slice(),
        b"zero"
    );
    assert_eq!(
        root.list("").unwrap().unwrap(),
        ["a/data/__0.blp", "a/data/__1.blp", "meta"]
    );
    assert_eq!(
        root.list("a/").unwrap().unwrap(),
        ["a/data/__0.blp", "a/data/__1.blp"]
    );
}

#[test]
fn counting_counts_round_trips_ranges_and_bytes() {
    let file = Counting::new(LocalFile::from_bytes("x", vec![7u8; 100]));
    let counts = file.counts();
    file.read_ranges(&[0..10, 50..60]).unwrap();
    file.read_range(90..100).unwrap();
    assert_eq!(
        (counts.round_trips(), counts.ranges(), counts.bytes()),
        (2, 3, 30)
    );
    assert!(!file.is_local(), "a counted source reads as a remote one");

    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("k"), b"abcdef").unwrap();
    let objects = CountingObjects::new(LocalDir::new(dir.path()));
    let counts = objects.counts();
    let object = objects.open("k").unwrap().unwrap();
    object.read_range(1..3).unwrap();
    objects.get_all(&["k", "missing"]).unwrap();
    assert_eq!(
        (counts.round_trips(), counts.ranges(), counts.bytes()),
        (3, 2, 8)
    );
}

#[test]
fn urls_are_told_from_paths() {
    assert!(is_url("s3://bucket/key.jay"));
    assert!(is_url("HTTPS://host/x"));
    assert!(is_url("abfss://container@account.dfs.core.windows.net/x"));
    assert!(!is_url("file:///tmp/x.jay"));
    assert!(!is_url("data/jay/tiny.jay"));
    assert!(!is_url("weird:name/x"));
    assert!(!is_url("1a://x"));
    assert_eq!(
        local_path(Path::new("file:///tmp/x.jay")),
        Path::new("/tmp/x.jay")
    );
    assert_eq!(local_path(Path::new("rel/x.jay")), Path::new("rel/x.jay"));
}

#[test]
fn storage_options_never_show_their_values() {
    let mut options = StorageOptions::default();
    options.set("AWS_SECRET_ACCESS_KEY", "hunter2");
    assert_eq!(options.get("aws_secret_access_key"), Some("hunter2"));
    let shown = format!("{options:?}");
    assert!(
        shown.contains("aws_secret_access_key") && !shown.contains("hunter2"),
        "{shown}"
    );
}

#[test]
fn a_url_is_shown_without_its_credentials() {
    let shown = |url: &str| shown_url(Path::new(url)).display().to_string();
    assert_eq!(
        shown("https://user:hunter2@host/a/b.jay?X-Amz-Signature=abc#x"),
        "https://host/a/b.jay"
    );
    assert_eq!(
        shown("abfss://container@account.dfs.core.windows.net/t.jay"),
        "abfss://container@account.dfs.core.windows.net/t.jay"
    );
    assert_eq!(shown("https://token@host/x"), "https://host/x");
    // A scheme is the same in any case: an upper-case one hides its token too.
    assert_eq!(shown("HTTPS://token@host/x"), "HTTPS://host/x");
    assert_eq!(shown("Http://user:pw@host/x?sv=1&sig=S"), "Http://host/x");
    assert_eq!(shown("s3://bucket/key.jay"), "s3://bucket/key.jay");
    assert_eq!(shown("gs://bucket"), "gs://bucket");
    assert_eq!(
        shown("https://user:pw@host:8080/p/f.jay?sig=abc#x"),
        "https://host:8080/p/f.jay"
    );
    // A password goes with the user it belongs to, whatever the scheme.
    assert_eq!(shown("az://c:pw@acct/f?sv=1"), "az://acct/f");
    assert_eq!(shown("data/x@y.jay"), "data/x@y.jay");
    let error = Error::invalid_argument("gone").with_file("http://u:hunter2@h/x.jay");
    assert!(!error.to_string().contains("hunter2"), "{error}");
}

#[test]
fn a_prefetched_object_serves_its_head_and_tail_and_fetches_the_rest_in_one_call() {
    let bytes: Vec<u8> = (0..1_000_000u32).map(|i| (i % 251) as u8).collect();
    let counted = Counting::new(LocalFile::from_bytes("object.bin", bytes.clone()));
    let counts = counted.counts();
    let object = Prefetched::fetch(Arc::new(counted)).unwrap();
    assert_eq!((counts.round_trips(), counts.ranges()), (1, 2));
    assert_eq!(object.head(8), &bytes[..8]);
    let size = bytes.len() as u64;
    // Inside the head and the tail: no request.
    let held = object.read_ranges(&[0..8, size - 65_536..size]).unwrap();
    assert_eq!(held[0].as_slice(), &bytes[..8]);
    assert_eq!(held[1].as_slice(), &bytes[bytes.len() - 65_536..]);
    assert_eq!(counts.round_trips(), 1);
    // Ranges outside them go in one call, in the order asked among the held ones.
    let mixed = object
        .read_ranges(&[500_000..500_010, 16..32, 60_000..70_000])
        .unwrap();
    assert_eq!(mixed[0].as_slice(), &bytes[500_000..500_010]);
    assert_eq!(mixed[1].as_slice(), &bytes[16..32]);
    assert_eq!(mixed[2].as_slice(), &bytes[60_000..70_000]);
    assert_eq!((counts.round_trips(), counts.ranges()), (2, 4));
    // Past the end: the object's own error.
    let error = object.read_range(size - 4..size + 4).unwrap_err();
    assert_eq!(error.class(), ErrorClass::BufferOutOfBounds);
    // A small object is held whole.
    let small = Counting::new(LocalFile::from_bytes("small.bin", bytes[..1000].to_vec()));
    let counts = small.counts();
    let object = Prefetched::fetch(Arc::new(small)).unwrap();
    assert_eq!(object.read_all().unwrap().as_slice(), &bytes[..1000]);
    assert_eq!((counts.round_trips(), counts.ranges()), (1, 1));
}

#[test]
fn the_urls_in_a_message_are_shown_without_their_credentials() {
    assert_eq!(
        urls_shown("error: http://u:pw@host:80/b/k.jay: no object [io]; az://c/k?sig=s3cr3t: x"),
        "error: http://host:80/b/k.jay: no object [io]; az://c/k: x"
    );
    assert_eq!(
        urls_shown("request for url (https://t@acct.blob.core.windows.net/c/k?sv=1&sig=S) failed"),
        "request for url (https://acct.blob.core.windows.net/c/k) failed"
    );
    let unchanged = [
        "wrote 1 row to s3://b/a@b.jay (1 B)",
        "abfss://container@account.dfs.core.windows.net/t.jay",
        "no URL: a:b@c",
    ];
    for text in unchanged {
        assert_eq!(urls_shown(text), text);
    }
}

/// A source that drops the last byte of every range it reads after its first `whole` ranges,
/// as a server that cuts a response short, or gives no ranges at all when `none`.
#[derive(Debug)]
struct Cut {
    inner: LocalFile,
    whole: usize,
    none: bool,
}

impl ByteSource for Cut {
    fn location(&self) -> &str {
        self.inner.location()
    }

    fn size(&self) -> u64 {
        self.inner.size()
    }

    fn read_ranges(&self, ranges: &[Range<u64>]) -> Result<Vec<Buffer>> {
        if self.none {
            return Ok(Vec::new());
        }
        let buffers = self.inner.read_ranges(ranges)?;
        Ok(buffers
            .into_iter()
            .enumerate()
            .map(|(i, b)| match i < self.whole {
                true => b,
                false => b.slice_with_length(0, b.len().saturating_sub(1)),
            })
            .collect())
    }
}

#[test]
fn a_checked_read_names_the_source_offset_and_lengths_of_a_range_that_came_back_short() {
    let cut = |whole, none| Cut {
        inner: LocalFile::from_bytes("s3://bucket/object.bin", vec![5u8; 100]),
        whole,
        none,
    };
    let whole = read_exact(&cut(2, false), &[0..10, 40..60]).unwrap();
    assert_eq!(whole.iter().map(Buffer::len).collect::<Vec<_>>(), [10, 20]);

    let error = read_exact(&cut(1, false), &[0..10, 40..60]).unwrap_err();
    assert_eq!(error.class(), ErrorClass::Io);
    assert_eq!(error.offset(), Some(40));
    assert_eq!(error.file(), Some(Path::new("s3://bucket/object.bin")));
    let text = error.to_string();
    assert!(text.contains("40..60 gave 19 bytes, not 20"), "{text}");

    let error = read_range_exact(&cut(0, true), 3..4).unwrap_err();
    assert!(error
        .to_string()
        .contains("1 byte range was asked for and 0 came back"));
    assert_eq!(error.file(), Some(Path::new("s3://bucket/object.bin")));

    // Past the end: refused before the source is asked.
    let error = read_range_exact(&cut(0, true), 90..101).unwrap_err();
    assert_eq!(error.class(), ErrorClass::BufferOutOfBounds);
    assert_eq!(error.offset(), Some(90));
}
