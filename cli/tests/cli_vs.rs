//! `arrowsmith convert` both ways, `convert --append` and `inspect` on VS files.

mod common;
#[path = "../../tests/common/small_disk.rs"]
mod small_disk;

use common::{arrowsmith, assert_fails, assert_ok, data};
use small_disk::SmallDisk;

use std::path::{Path, PathBuf};

use serde_json::Value;

macro_rules! cli {
    ($($a:expr),* $(,)?) => { arrowsmith(&[$(std::ffi::OsStr::new(&$a)),*]) };
}

fn inspect(path: &Path) -> Value {
    serde_json::from_str(&assert_ok(&cli!("inspect", path, "--json"))).unwrap()
}

fn fixture(name: &str) -> PathBuf {
    data("vs").join(name)
}

#[test]
fn vs_to_arrow_to_vs_and_append() {
    let dir = tempfile::tempdir().unwrap();
    let arrow = dir.path().join("p.arrow");
    let back = dir.path().join("p.vs");
    assert_ok(&cli!("convert", fixture("f64_r1_plain.vs"), arrow));
    assert_ok(&cli!("convert", arrow, back));
    assert_eq!(
        std::fs::read(&back).unwrap(),
        std::fs::read(fixture("f64_r1_plain.vs")).unwrap()
    );
    // Appending the same three points again, snappy-compressed.
    assert_ok(&cli!(
        "convert",
        arrow,
        back,
        "--append",
        "--compression",
        "snappy"
    ));
    let report = inspect(&back);
    assert_eq!(report["rows"], 6);
    let s = &report["structure"];
    assert_eq!(s["points"], 6);
    assert_eq!(s["compression"]["none"], 3);
    assert_eq!(s["compression"]["snappy"], 3);
    assert_eq!(s["meta"]["dimensions"], serde_json::json!([3]));
    assert_eq!(s["meta"]["attributes"]["name"], "demo");
    // Parquet keeps the tensor tag through the field metadata.
    let pq = dir.path().join("p.parquet");
    assert_ok(&cli!("convert", back, pq));
    let again = dir.path().join("again.vs");
    assert_ok(&cli!("convert", pq, again, "--compression", "gzip"));
    assert_eq!(inspect(&again)["structure"]["compression"]["gzip"], 6);
}

#[test]
fn inspect_lists_blocks_with_offsets() {
    let report = inspect(&fixture("bool_r1_deleted.vs"));
    let s = &report["structure"];
    assert_eq!(s["points"], 2);
    assert_eq!(s["blank_blocks"], 2);
    let blocks: Vec<(String, u64)> = s["blocks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| {
            (
                b["kind"].as_str().unwrap().to_string(),
                b["offset"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        blocks,
        [
            ("meta".to_string(), 4),
            ("blank".to_string(), 16),
            ("point".to_string(), 21),
            ("blank".to_string(), 40),
            ("point".to_string(), 59)
        ]
    );
    assert_eq!(s["terminal"], 78);
    let text = assert_ok(&cli!("inspect", fixture("i16_r2_gzip.vs")));
    assert!(text.contains("vector compression: gzip × 2"), "{text}");
    // A file without its terminal: inspect says so.
    let text = assert_ok(&cli!("inspect", fixture("no_terminal.vs")));
    assert!(text.contains("no terminal '$'"), "{text}");
}

#[test]
fn bad_input_fails_with_one_line_and_no_output() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("x.arrow");
    let r = cli!("convert", fixture("bad_truncated_block.vs"), out);
    assert_eq!(r.status.code(), Some(1));
    let err = String::from_utf8(r.stderr).unwrap();
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("bad_truncated_block.vs"), "{err}");
    assert!(err.contains("runs past end of file"), "{err}");
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);

    let r = cli!("convert", fixture("no_terminal.vs"), out);
    assert_eq!(r.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&r.stderr).contains("missing terminal"));
    assert_ok(&cli!(
        "convert",
        fixture("no_terminal.vs"),
        out,
        "--lenient-eof"
    ));
    let r = cli!("convert", out, dir.path().join("y.parquet"), "--append");
    assert_eq!(r.status.code(), Some(2));
    let r = cli!(
        "convert",
        out,
        dir.path().join("y.vs"),
        "--compression",
        "lz4"
    );
    assert_eq!(r.status.code(), Some(2));
}

#[test]
fn exact_mode_and_msb_first_flags() {
    let dir = tempfile::tempdir().unwrap();
    let arrow = dir.path().join("j.arrow");
    assert_ok(&cli!(
        "convert",
        fixture("json_r1.vs"),
        arrow,
        "--app-data",
        "msgpack"
    ));
    let back = dir.path().join("j.vs");
    assert_ok(&cli!("convert", arrow, back));
    assert_eq!(
        std::fs::read(&back).unwrap(),
        std::fs::read(fixture("json_r1.vs")).unwrap()
    );
    let mut bytes = std::fs::read(fixture("f32_r1_d200_snappy.vs")).unwrap();
    bytes[10..12].copy_from_slice(&[0x81, 0x48]);
    let msb = dir.path().join("msb.vs");
    std::fs::write(&msb, bytes).unwrap();
    assert!(!cli!("convert", msb, dir.path().join("a.arrow"))
        .status
        .success());
    assert_ok(&cli!(
        "convert",
        msb,
        dir.path().join("a.arrow"),
        "--varint",
        "msb-first"
    ));
}

#[cfg(unix)]
#[test]
fn a_signal_during_an_append_leaves_the_old_points() {
    // `--append` read and wrote its blocks with no check for a signal, and committed: the
    // signal was ignored, the exit 0.
    let dir = tempfile::tempdir().unwrap();
    let arrow = dir.path().join("p.arrow");
    assert_ok(&cli!("convert", fixture("f64_r1_plain.vs"), arrow));
    let target = dir.path().join("t.vs");
    std::fs::copy(fixture("f64_r1_plain.vs"), &target).unwrap();
    let old = std::fs::read(&target).unwrap();
    let args = [
        "convert",
        arrow.to_str().unwrap(),
        target.to_str().unwrap(),
        "--append",
    ];

    // Before a block is written: the file is as it was, byte for byte.
    let out = common::signalled_at("vs-append-blocks", libc::SIGINT, &args);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{err}");
    assert!(err.contains("interrupted by signal 2"), "{err}");
    assert_eq!(std::fs::read(&target).unwrap(), old);

    // With the new blocks written and flushed, before the byte that commits them: the blocks
    // are cut off again, the file is as it was, byte for byte.
    let out = common::signalled_at("vs-append-commit", libc::SIGTERM, &args);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(143), "{err}");
    assert_eq!(std::fs::read(&target).unwrap(), old);
    assert_eq!(inspect(&target)["rows"], 3);

    // Unsignalled, the append goes through.
    assert_ok(&cli!("convert", arrow, target, "--append"));
    assert_eq!(inspect(&target)["rows"], 6);
}

#[test]
fn an_append_that_fills_the_disk_exits_1_and_leaves_the_file_as_it_was() {
    let Some(disk) = SmallDisk::mount(1 << 20) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    // The fixture's 3 points, 20,000 times over: a few MB of blocks.
    let once = dir.path().join("once.arrow");
    assert_ok(&cli!("convert", fixture("f64_r1_plain.vs"), once));
    let reader =
        arrow::ipc::reader::FileReader::try_new(std::fs::File::open(&once).unwrap(), None).unwrap();
    let schema = reader.schema();
    let batch = reader.map(Result::unwrap).next().unwrap();
    let many = arrow::compute::concat_batches(&schema, &vec![batch; 20_000]).unwrap();
    let input = dir.path().join("many.arrow");
    let mut writer =
        arrow::ipc::writer::FileWriter::try_new(std::fs::File::create(&input).unwrap(), &schema)
            .unwrap();
    writer.write(&many).unwrap();
    writer.finish().unwrap();

    let store = disk.path().join("store.vs");
    std::fs::copy(fixture("f64_r1_plain.vs"), &store).unwrap();
    let before = std::fs::read(&store).unwrap();
    let free = disk.free_bytes();
    assert_fails(
        &cli!("convert", input, store, "--append"),
        1,
        "No space left on device",
    );
    assert!(std::fs::read(&store).unwrap() == before, "the file changed");
    assert_eq!(disk.free_bytes(), free, "the space is not back");
    assert_ok(&cli!("convert", once, store, "--append"));
    assert_eq!(inspect(&store)["rows"], 6);
}
