//! The command line on Filo: every golden vector converted with `--from filo-vector
//! --filo-type T` keeps its values, Arrow columns convert back to the golden bytes, Filo sets
//! convert both ways, `inspect` shows each vector, and bad input fails with one `error:` line.

mod common;

use common::{arrowsmith, assert_fails, assert_ok, data, p, stderr};

use std::fs::File;
use std::path::Path;

use arrow_array::{Array, RecordBatch};
use arrowsmith::filo;
use serde_json::Value;

fn read_arrow(path: &Path) -> Vec<RecordBatch> {
    let reader = arrow::ipc::reader::FileReader::try_new(File::open(path).unwrap(), None).unwrap();
    reader.collect::<Result<Vec<_>, _>>().unwrap()
}

fn manifest() -> Vec<Value> {
    std::fs::read_to_string(data("filo").join("vectors/manifest.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn every_golden_vector_converts_to_arrow_and_back_to_its_bytes() {
    let dir = tempfile::tempdir().unwrap();
    for m in manifest() {
        let name = m["name"].as_str().unwrap();
        let filo_type = m["type"].as_str().unwrap();
        let bin = data("filo").join(format!("vectors/{name}.bin"));
        let arrow = dir.path().join(format!("{name}.arrow"));
        assert_ok(&arrowsmith(&[
            "convert",
            p(&bin),
            p(&arrow),
            "--from",
            "filo-vector",
            "--filo-type",
            filo_type,
        ]));
        let batches = read_arrow(&arrow);
        let rows: usize = batches.iter().map(|b| b.num_rows()).sum();
        assert_eq!(rows, m["values"].as_array().unwrap().len(), "{name}");
        let nulls: usize = batches.iter().map(|b| b.column(0).null_count()).sum();
        let want_nulls = m["values"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|v| v.is_null())
            .count();
        assert_eq!(nulls, want_nulls, "{name}");
        // Back to a vector with the fixture's hint gives filo's bytes.
        let hint = match m["hint"].as_str().unwrap() {
            "SimpleEncoding" => "simple",
            "DictionaryEncoding" => "dict",
            "DiffEncoding" => "diff",
            _ => "auto",
        };
        let out = dir.path().join(format!("{name}.bin"));
        assert_ok(&arrowsmith(&[
            "convert",
            p(&arrow),
            p(&out),
            "--to",
            "filo-vector",
            "--filo-type",
            filo_type,
            "--filo-encoding",
            hint,
        ]));
        assert_eq!(
            std::fs::read(&out).unwrap(),
            std::fs::read(&bin).unwrap(),
            "{name}"
        );
    }
}

#[test]
fn inspect_shows_the_vector_header_and_widths() {
    let bin = data("filo").join("vectors/int_diff_u8.bin");
    let out = arrowsmith(&[
        "inspect",
        p(&bin),
        "--from",
        "filo-vector",
        "--filo-type",
        "Int",
        "--json",
    ]);
    let report: Value = serde_json::from_str(&assert_ok(&out)).unwrap();
    let text = report.to_string();
    for want in [
        "DiffPrimitiveVector",
        "0x00000005",
        "\"base\":254",
        "\"nbits\":8",
        "AllZeroes",
        "\"bytes\":76",
    ] {
        assert!(text.contains(want), "{want} in {text}");
    }
    let out = arrowsmith(&[
        "inspect",
        p(&data("filo").join("vectors/string_dict_300_i16.bin")),
        "--from",
        "filo-vector",
        "--filo-type",
        "String",
    ]);
    let text = assert_ok(&out);
    assert!(
        text.contains("DictStringVector") && text.contains("16/signed") && text.contains("301"),
        "{text}"
    );
}

#[test]
fn inspect_lists_every_column_chunk_of_a_set() {
    let out = arrowsmith(&["inspect", p(&data("filo").join("set.filo")), "--verify"]);
    let text = assert_ok(&out);
    for want in [
        "10 rows, 2 columns, 2 chunks",
        "missing (all NA)",
        "EmptyVector",
        "SimplePrimitiveVector",
    ] {
        assert!(text.contains(want), "{want} in {text}");
    }
}

#[test]
fn sets_convert_both_ways() {
    let dir = tempfile::tempdir().unwrap();
    let parquet = dir.path().join("s.parquet");
    assert_ok(&arrowsmith(&[
        "convert",
        p(&data("filo").join("set.filo")),
        p(&parquet),
    ]));
    let set = dir.path().join("s.filo");
    assert_ok(&arrowsmith(&[
        "convert",
        p(&parquet),
        p(&set),
        "--filo-chunk-size",
        "3",
    ]));
    let info = filo::SetInfo::open(&set).unwrap();
    assert_eq!(info.chunks, vec![3, 3, 3, 1]);
    // A second conversion replaces the set, when asked to.
    let out = arrowsmith(&["convert", p(&parquet), p(&set)]);
    assert_fails(&out, 2, "already exists; set --overwrite to replace it");
    assert_eq!(filo::SetInfo::open(&set).unwrap().chunks, vec![3, 3, 3, 1]);
    assert_ok(&arrowsmith(&[
        "convert",
        p(&parquet),
        p(&set),
        "--overwrite",
    ]));
    assert_eq!(filo::SetInfo::open(&set).unwrap().chunks, vec![10]);
    let arrow = dir.path().join("s.arrow");
    assert_ok(&arrowsmith(&[
        "convert",
        p(&set),
        p(&arrow),
        "--columns",
        "b",
    ]));
    let batches = read_arrow(&arrow);
    assert_eq!(batches[0].num_columns(), 1);
    assert_eq!(batches[0].column(0).null_count(), 5);
    let entries = std::fs::read_dir(dir.path()).unwrap().count();
    assert_eq!(entries, 3, "no temporary directories left");
}

#[test]
fn a_folder_that_is_not_a_set_is_never_replaced() {
    let dir = tempfile::tempdir().unwrap();
    let folder = dir.path().join("photos");
    std::fs::create_dir_all(folder.join("2024")).unwrap();
    std::fs::write(folder.join("2024/beach.jpg"), b"mine").unwrap();
    // Even one with a schema.json of its own.
    std::fs::write(folder.join("schema.json"), b"{\"format\": \"mine\"}").unwrap();
    let input = data("filo").join("set.filo");
    for overwrite in [false, true] {
        let mut args = vec!["convert", p(&input), p(&folder), "--to", "filo"];
        args.extend(overwrite.then_some("--overwrite"));
        let out = arrowsmith(&args);
        assert_fails(&out, 1, "exists and is not a filo set");
    }
    assert_eq!(
        std::fs::read(folder.join("2024/beach.jpg")).unwrap(),
        b"mine"
    );
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
}

#[test]
fn bad_input_fails_with_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let bin = data("filo").join("vectors/int_i8.bin");
    // No element type: a usage error.
    let out = arrowsmith(&[
        "convert",
        p(&bin),
        p(&dir.path().join("x.arrow")),
        "--from",
        "filo-vector",
    ]);
    assert_fails(&out, 2, "--filo-type");
    // The wrong family for the type.
    let out = arrowsmith(&[
        "convert",
        p(&bin),
        p(&dir.path().join("x.arrow")),
        "--from",
        "filo-vector",
        "--filo-type",
        "String",
    ]);
    assert_fails(&out, 1, "int_i8.bin");
    // A damaged vector names the file and the offset.
    let mut bytes = std::fs::read(&bin).unwrap();
    bytes[4] = 0xF0;
    let damaged = dir.path().join("damaged.bin");
    std::fs::write(&damaged, &bytes).unwrap();
    let out = arrowsmith(&[
        "convert",
        p(&damaged),
        p(&dir.path().join("y.arrow")),
        "--from",
        "filo-vector",
        "--filo-type",
        "Int",
    ]);
    assert_fails(&out, 1, "damaged.bin");
    assert!(stderr(&out).contains("at byte"), "{}", stderr(&out));
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        1,
        "no output left"
    );
    // --filo-type with formats it does not apply to.
    let out = arrowsmith(&[
        "convert",
        p(&data("filo").join("set.filo")),
        p(&dir.path().join("z.arrow")),
        "--filo-type",
        "Int",
    ]);
    assert_fails(&out, 2, "--filo-type");
}
