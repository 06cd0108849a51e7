//! `convert --salvage` and `inspect --verify` on damaged files: every skipped part is one
//! `warning:` line, the exit status says whether anything was salvaged, and `inspect --verify
//! --json` lists the damage with its offsets before anything is converted.

mod common;

use common::{arrowsmith, copy_dir, data, p, stderr};

use std::path::{Path, PathBuf};

use arrow::compute::concat_batches;
use arrow_array::RecordBatch;
use arrowsmith::ReadOptions;
use serde_json::Value;

fn read(path: &Path) -> RecordBatch {
    let reader = arrowsmith::open(path, &ReadOptions::default()).unwrap();
    let schema = reader.schema();
    let batches: Vec<RecordBatch> = reader.map(Result::unwrap).collect();
    concat_batches(&schema, &batches).unwrap()
}

/// basic-zlib.ds with the second of its four extents damaged (a flipped byte in its body),
/// and the offset and rows of that extent.
fn damaged_dataseries(dir: &Path) -> (PathBuf, u64, usize) {
    let src = data("dataseries/generated/basic-zlib.ds");
    let file = arrowsmith::dataseries::DsFile::open(&src, Default::default()).unwrap();
    let extent = file
        .extents_of("Test::Basic")
        .unwrap()
        .filter(|e| e.rows > 0)
        .nth(1)
        .unwrap()
        .clone();
    let mut bytes = std::fs::read(&src).unwrap();
    bytes[extent.offset as usize + extent.len - 8] ^= 0x5a;
    let path = dir.join("damaged.ds");
    std::fs::write(&path, bytes).unwrap();
    (path, extent.offset, extent.rows)
}

#[test]
fn convert_salvage_writes_the_intact_rows_and_warns_once_per_skipped_part() {
    let dir = tempfile::tempdir().unwrap();
    let (input, offset, rows) = damaged_dataseries(dir.path());
    let output = dir.path().join("out.parquet");

    // Without --salvage: the usual error, no output.
    let out = arrowsmith(&["convert", p(&input), p(&output)]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(!output.exists());

    let out = arrowsmith(&["convert", p(&input), p(&output), "--salvage"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let mut warnings: Vec<&str> = err.lines().collect();
    // Then the closing line, for the rows that were written.
    let written = warnings.pop().unwrap_or_default();
    assert!(
        written.starts_with(&format!("wrote {} rows × ", 40 - rows)),
        "{err}"
    );
    assert_eq!(warnings.len(), 2, "{err}");
    let skipped = warnings[0];
    assert!(skipped.starts_with("warning: skipped extent 1 "), "{err}");
    assert!(
        skipped.contains(&format!("at byte {offset} ({rows} rows)")),
        "{err}"
    );
    assert!(skipped.contains("adler32"), "{err}");
    assert!(
        warnings[1].contains(&format!("salvaged {} rows", 40 - rows)),
        "{err}"
    );

    let original = read(&data("dataseries/generated/basic-zlib.ds"));
    let got = read(&output);
    assert_eq!(got.num_rows(), 40 - rows);
    // The intact extents' rows, in order: the first extent, then the third and fourth.
    let head = file_extent_rows(&data("dataseries/generated/basic-zlib.ds"))[0];
    let tail = got.num_rows() - head;
    assert_eq!(
        got.slice(0, head).columns(),
        original.slice(0, head).columns()
    );
    assert_eq!(
        got.slice(head, tail).columns(),
        original.slice(head + rows, tail).columns()
    );
}

fn file_extent_rows(path: &Path) -> Vec<usize> {
    let file = arrowsmith::dataseries::DsFile::open(path, Default::default()).unwrap();
    file.extents_of("Test::Basic")
        .unwrap()
        .filter(|e| e.rows > 0)
        .map(|e| e.rows)
        .collect()
}

#[test]
fn convert_salvage_fails_when_nothing_could_be_read_and_leaves_no_output() {
    let dir = tempfile::tempdir().unwrap();
    let output = dir.path().join("out.arrow");
    // Every column of this Jay frame is damaged.
    let input = data("jay/bad/frame_nrows_4.jay");
    let out = arrowsmith(&["convert", p(&input), p(&output), "--salvage"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert_eq!(err.matches("warning: skipped column").count(), 2, "{err}");
    assert!(err.lines().last().unwrap().starts_with("error:"), "{err}");
    assert!(err.contains("nothing could be salvaged"), "{err}");
    assert!(!output.exists());

    // Damage to the whole file: one error, as without --salvage.
    let input = data("jay/bad/truncated_half.jay");
    let out = arrowsmith(&["convert", p(&input), p(&output), "--salvage"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).starts_with("error:"), "{}", stderr(&out));
}

#[test]
fn convert_salvage_drops_a_damaged_jay_column_and_names_it() {
    let dir = tempfile::tempdir().unwrap();
    let output = dir.path().join("out.arrow");
    let input = data("jay/bad/bool8_value_2.jay");
    let out = arrowsmith(&["convert", p(&input), p(&output), "--salvage"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(
        err.starts_with("warning: skipped column 0 \"b8\": "),
        "{err}"
    );
    let original = read(&data("jay/all_types.jay"));
    let got = read(&output);
    assert_eq!(got.num_columns(), original.num_columns() - 1);
    assert_eq!(got.columns(), &original.columns()[1..]);
}

#[test]
fn salvage_is_a_usage_error_for_the_arrow_formats() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("a.csv");
    std::fs::write(&input, "a\n1\n").unwrap();
    let out = arrowsmith(&[
        "convert",
        p(&input),
        p(&dir.path().join("b.arrow")),
        "--salvage",
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
}

#[test]
fn inspect_verify_lists_every_damaged_part_with_its_offset() {
    let dir = tempfile::tempdir().unwrap();
    let (input, offset, rows) = damaged_dataseries(dir.path());
    let out = arrowsmith(&["inspect", p(&input), "--verify", "--json"]);
    assert_eq!(out.status.code(), Some(1));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let verify = &report["verify"];
    assert_eq!(verify["ok"], false);
    let damaged = verify["damaged"].as_array().unwrap();
    assert_eq!(damaged.len(), 1, "{verify}");
    assert_eq!(damaged[0]["part"], "extent");
    assert_eq!(damaged[0]["offset"], offset);
    assert_eq!(damaged[0]["rows"], rows as u64);
    assert_eq!(damaged[0]["class"], "bad_value");

    // The text form names the same part.
    let out = arrowsmith(&["inspect", p(&input), "--verify"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("damaged: 1 part"), "{text}");
    assert!(
        text.contains(&format!("extent 1 at byte {offset} ({rows} rows)")),
        "{text}"
    );

    // Two damaged bcolz chunks of a carray are both listed, not only the first.
    let carray = dir.path().join("carray");
    copy_dir(&data("bcolz/datasets/cp_lz4_sh1"), &carray);
    for k in [0, 2] {
        let chunk = carray.join(format!("data/__{k}.blp"));
        let bytes = std::fs::read(&chunk).unwrap();
        std::fs::write(&chunk, &bytes[..40]).unwrap();
    }
    let out = arrowsmith(&["inspect", p(&carray), "--verify", "--json"]);
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let chunks: Vec<u64> = report["verify"]["damaged"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["index"].as_u64().unwrap())
        .collect();
    assert_eq!(chunks, [0, 2]);

    // An intact file has an empty list.
    let out = arrowsmith(&["inspect", p(&data("jay/tiny.jay")), "--verify", "--json"]);
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["verify"]["damaged"], serde_json::json!([]));

    // A Jay column whose buffer lies outside the file: the meta cannot be described, but
    // the damage is still listed, and the schema is what salvage reads.
    let out = arrowsmith(&[
        "inspect",
        p(&data("jay/bad/buffer_out_of_file.jay")),
        "--verify",
        "--json",
    ]);
    assert_eq!(out.status.code(), Some(1));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let damaged = &report["verify"]["damaged"];
    assert_eq!(damaged.as_array().unwrap().len(), 1, "{report}");
    assert_eq!(damaged[0]["part"], "column");
    assert_eq!(damaged[0]["column"], "A");
    assert_eq!(damaged[0]["class"], "buffer_out_of_bounds");
    assert_eq!(report["schema"]["fields"][0]["name"], "B");

    // Damage to the whole file: nothing to describe or list; one error, as before.
    let out = arrowsmith(&[
        "inspect",
        p(&data("jay/bad/last_bytes_1JAX.jay")),
        "--verify",
        "--json",
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).starts_with("error:"), "{}", stderr(&out));
}
