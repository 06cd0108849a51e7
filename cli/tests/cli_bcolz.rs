//! The command line on bcolz directories: inspect (with --verify), head, convert both ways and
//! --append, and clean failures (exit code 1, one `error:` line, nothing left behind).

mod common;

use common::{arrowsmith, assert_fails, assert_ok, data, p, stderr};

use std::path::{Path, PathBuf};

use arrow_array::cast::AsArray;
use arrow_array::types::*;
use arrow_array::{RecordBatch, RecordBatchReader};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use serde_json::Value;

fn read_parquet(path: &Path) -> RecordBatch {
    let file = std::fs::File::open(path).unwrap();
    let reader = ParquetRecordBatchReaderBuilder::try_new(file)
        .unwrap()
        .build()
        .unwrap();
    let schema = reader.schema();
    let batches: Vec<RecordBatch> = reader.map(Result::unwrap).collect();
    arrow::compute::concat_batches(&schema, &batches).unwrap()
}

fn fixture(name: &str) -> PathBuf {
    data("bcolz/datasets").join(name)
}

#[test]
fn inspect_tells_kind_columns_cparams_chunks_and_attrs() {
    let out = assert_ok(&arrowsmith(&[
        "inspect",
        p(&fixture("ctable_mixed")),
        "--json",
    ]));
    let v: Value = serde_json::from_str(&out).unwrap();
    let text = v.to_string();
    assert!(text.contains("\"kind\":\"ctable\""), "{text}");
    for needle in [
        "\"dtype\":\"<U8\"",
        "\"chunklen\":4096",
        "\"cname\":\"lz4\"",
        "\"chunks\":1",
        "\"ratio\":",
        "make.py",
    ] {
        assert!(text.contains(needle), "{needle} missing in {text}");
    }
    let out = assert_ok(&arrowsmith(&[
        "inspect",
        p(&fixture("cp_zstd_sh1")),
        "--verify",
    ]));
    assert!(
        out.contains("bcolz carray, 40000 rows") && out.contains("zstd"),
        "{out}"
    );
    let out = assert_ok(&arrowsmith(&["head", p(&fixture("unicode_U5"))]));
    assert!(out.contains("😀"), "{out}");
}

#[test]
fn verify_finds_a_damaged_chunk_that_inspect_alone_does_not_decode() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("c");
    std::fs::create_dir_all(dir.join("data")).unwrap();
    std::fs::create_dir_all(dir.join("meta")).unwrap();
    for f in [
        "__attrs__",
        "meta/sizes",
        "meta/storage",
        "data/__0.blp",
        "data/__1.blp",
        "data/__2.blp",
    ] {
        std::fs::copy(fixture("cp_lz4_sh1").join(f), dir.join(f)).unwrap();
    }
    let blp = dir.join("data/__1.blp");
    let mut bytes = std::fs::read(&blp).unwrap();
    let n = bytes.len();
    bytes[40..n - 8].iter_mut().for_each(|b| *b = 0xFF);
    std::fs::write(&blp, &bytes).unwrap();
    assert_ok(&arrowsmith(&["inspect", p(&dir)]));
    let out = arrowsmith(&["inspect", p(&dir), "--verify"]);
    assert_ne!(out.status.code(), Some(0));
    assert!(
        stderr(&out).contains("__1.blp")
            || String::from_utf8_lossy(&out.stdout).contains("__1.blp")
    );
}

#[test]
fn convert_both_ways_and_append() {
    let tmp = tempfile::tempdir().unwrap();
    let parquet = tmp.path().join("z.parquet");
    assert_ok(&arrowsmith(&[
        "convert",
        p(&fixture("ctable_zipline_like")),
        p(&parquet),
    ]));
    let table = read_parquet(&parquet);
    assert_eq!(table.num_rows(), 1835);

    let out = tmp.path().join("z.bcolz");
    assert_ok(&arrowsmith(&[
        "convert",
        p(&parquet),
        p(&out),
        "--compression",
        "zlib:3",
        "--bcolz-shuffle",
        "2",
    ]));
    let storage = std::fs::read_to_string(out.join("open/meta/storage")).unwrap();
    assert_eq!(
        storage,
        "{\"dtype\": \"uint32\", \"cparams\": {\"clevel\": 3, \"shuffle\": 2, \"cname\": \"zlib\", \"quantize\": 0}, \"chunklen\": 16384, \"expectedlen\": 1835, \"dflt\": 0}\n"
    );
    // An existing target is refused unless --overwrite; --append adds the rows in place.
    assert_fails(
        &arrowsmith(&["convert", p(&parquet), p(&out)]),
        2,
        "already exists",
    );
    assert_ok(&arrowsmith(&["convert", p(&parquet), p(&out), "--append"]));
    let back = tmp.path().join("back.parquet");
    assert_ok(&arrowsmith(&["convert", p(&out), p(&back)]));
    let twice = read_parquet(&back);
    assert_eq!(twice.num_rows(), 2 * 1835);
    let a = table
        .column_by_name("close")
        .unwrap()
        .as_primitive::<UInt32Type>();
    let b = twice
        .column_by_name("close")
        .unwrap()
        .as_primitive::<UInt32Type>();
    assert_eq!(a.values()[..], b.values()[1835..]);
    assert_ok(&arrowsmith(&[
        "convert",
        p(&parquet),
        p(&out),
        "--overwrite",
        "--bcolz-chunklen",
        "100",
    ]));
    assert_eq!(std::fs::read_dir(out.join("id/data")).unwrap().count(), 19);
    // Without the flush to disk: the same dataset, byte for byte.
    let unsynced = tmp.path().join("unsynced.bcolz");
    assert_ok(&arrowsmith(&[
        "convert",
        p(&parquet),
        p(&unsynced),
        "--bcolz-chunklen",
        "100",
        "--bcolz-no-sync",
    ]));
    for column in [
        "id/data/__7.blp",
        "id/meta/sizes",
        "open/data/__18.blp",
        "__rootdirs__",
    ] {
        assert_eq!(
            std::fs::read(unsynced.join(column)).unwrap(),
            std::fs::read(out.join(column)).unwrap(),
            "{column}"
        );
    }
    // --bcolz-no-sync with --append is a usage error (clap's); bcolz-only options are refused
    // for other outputs.
    let both = arrowsmith(&[
        "convert",
        p(&parquet),
        p(&out),
        "--append",
        "--bcolz-no-sync",
    ]);
    assert_eq!(both.status.code(), Some(2));
    assert!(
        stderr(&both).contains("'--bcolz-no-sync'"),
        "{}",
        stderr(&both)
    );
    assert_fails(
        &arrowsmith(&[
            "convert",
            p(&out),
            p(&tmp.path().join("y.parquet")),
            "--bcolz-no-sync",
        ]),
        2,
        "bcolz",
    );
    assert_fails(
        &arrowsmith(&[
            "convert",
            p(&out),
            p(&tmp.path().join("x.parquet")),
            "--bcolz-carray",
        ]),
        2,
        "bcolz",
    );
}

#[test]
fn overwrite_replaces_a_bcolz_dataset_and_never_another_folder() {
    let tmp = tempfile::tempdir().unwrap();
    let input = fixture("ctable_zipline_like");
    let folder = tmp.path().join("work");
    std::fs::create_dir_all(folder.join("meta")).unwrap();
    std::fs::write(folder.join("meta/notes.txt"), b"mine").unwrap();
    for overwrite in [true, false] {
        let mut args = vec!["convert", p(&input), p(&folder), "--to", "bcolz"];
        args.extend(overwrite.then_some("--overwrite"));
        let out = arrowsmith(&args);
        assert_fails(&out, 1, "exists and is not a bcolz dataset");
    }
    assert_eq!(
        std::fs::read(folder.join("meta/notes.txt")).unwrap(),
        b"mine"
    );
    // A dataset is replaced.
    let out = tmp.path().join("z.bcolz");
    assert_ok(&arrowsmith(&[
        "convert",
        p(&input),
        p(&out),
        "--bcolz-carray",
        "--columns",
        "open",
    ]));
    assert_ok(&arrowsmith(&["convert", p(&input), p(&out), "--overwrite"]));
    assert!(out.join("__rootdirs__").is_file());
    assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 2);
}

#[test]
fn failures_exit_1_and_leave_nothing_behind() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("x.parquet");
    assert_fails(
        &arrowsmith(&["convert", p(&fixture("object_pickled")), p(&out)]),
        1,
        "object",
    );
    assert!(!out.exists());
    // NaT becomes null, which bcolz cannot store without --bcolz-nulls-as-nan.
    let arrow = tmp.path().join("t.arrow");
    assert_ok(&arrowsmith(&[
        "convert",
        p(&fixture("datetime64_ns")),
        p(&arrow),
    ]));
    let target = tmp.path().join("t.bcolz");
    assert_fails(&arrowsmith(&["convert", p(&arrow), p(&target)]), 1, "null");
    let left: Vec<_> = std::fs::read_dir(tmp.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(left.len(), 1, "{left:?}");
    assert_ok(&arrowsmith(&[
        "convert",
        p(&arrow),
        p(&target),
        "--bcolz-nulls-as-nan",
        "--bcolz-carray",
    ]));
    assert!(target.join("meta/sizes").is_file());
    // A missing chunk file: the error names it.
    let broken = tmp.path().join("broken");
    assert_ok(&arrowsmith(&[
        "convert",
        p(&arrow),
        p(&broken),
        "--to",
        "bcolz",
        "--bcolz-nulls-as-nan",
        "--bcolz-chunklen",
        "100",
    ]));
    std::fs::remove_file(broken.join("data/__3.blp")).unwrap();
    assert_fails(&arrowsmith(&["convert", p(&broken), p(&out)]), 1, "__3.blp");
    assert!(!out.exists());
}

#[test]
fn two_appends_at_once_keep_both_appends_rows() {
    use std::sync::Arc;
    let tmp = tempfile::tempdir().unwrap();
    // The rows of ctable_zipline_like, many times over: an append long enough to overlap.
    let small = tmp.path().join("small.parquet");
    assert_ok(&arrowsmith(&[
        "convert",
        p(&fixture("ctable_zipline_like")),
        p(&small),
    ]));
    let table = read_parquet(&small);
    let copies = vec![table.clone(); 150];
    let many = arrow::compute::concat_batches(&table.schema(), &copies).unwrap();
    let input = tmp.path().join("many.parquet");
    let file = std::fs::File::create(&input).unwrap();
    let mut writer = parquet::arrow::ArrowWriter::try_new(file, many.schema(), None).unwrap();
    writer.write(&many).unwrap();
    writer.close().unwrap();
    let n = many.num_rows() as u64;

    let out = tmp.path().join("bars.bcolz");
    assert_ok(&arrowsmith(&["convert", p(&input), p(&out)]));
    let out = Arc::new(out);
    let input = Arc::new(input);
    for round in 1..=6u64 {
        let appenders: Vec<_> = (0..2)
            .map(|_| {
                let (input, out) = (input.clone(), out.clone());
                std::thread::spawn(move || arrowsmith(&["convert", p(&input), p(&out), "--append"]))
            })
            .collect();
        for appender in appenders {
            assert_ok(&appender.join().unwrap());
        }
        let info = arrowsmith::bcolz::open_info(&*out).unwrap();
        assert_eq!(
            info.nrows,
            n * (1 + 2 * round),
            "round {round}: rows were lost"
        );
    }
    // Nothing but the dataset's own files is left.
    let verify = assert_ok(&arrowsmith(&["inspect", p(&out), "--verify"]));
    assert!(verify.contains(&format!("{} rows", n * 13)), "{verify}");
    for column in ["open", "id"] {
        let names: Vec<String> = std::fs::read_dir(out.join(column).join("data"))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert!(names.iter().all(|n| n.starts_with("__")), "{names:?}");
    }
}
