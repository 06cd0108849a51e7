//! The `arrowsmith` command line, run as a program: conversions between the Arrow ecosystem
//! formats with real data, projection, limit and batch size, the exit codes, atomic output,
//! `inspect`, `head` and `formats`.

mod common;

use common::{arrowsmith, assert_fails, assert_ok_quietly, convert_killed_at, p, stderr, stdout};

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Arc;

use arrow::compute::{cast, concat_batches};
use arrow_array::types::Int16Type;
use arrow_array::{
    ArrayRef, BooleanArray, Date32Array, DictionaryArray, Float64Array, Int32Array, Int64Array,
    ListArray, RecordBatch, StringArray, TimestampMicrosecondArray,
};
use arrow_schema::SchemaRef;
use arrowsmith::{Format, ReadOptions, WriteOptions};
use serde_json::Value;

const FORMATS: [&str; 5] = ["parquet", "arrow", "arrows", "csv", "ndjson"];

/// Columns that every format holds (CSV and NDJSON read them back as Int64, Float64, Utf8,
/// Boolean and Date32 or Utf8, which cast back to these).
fn plain_batch(rows: usize) -> RecordBatch {
    let ids: Vec<i64> = (0..rows as i64).map(|i| i * 1_000_003 - 7).collect();
    let names: Vec<Option<String>> = (0..rows)
        .map(|i| match i % 5 {
            0 => None,
            1 => Some(format!("plain {i}")),
            2 => Some(format!("comma, \"quote\" {i}")),
            3 => Some(format!("ünïcødé ✓ {i}")),
            _ => Some(format!("line\nbreak {i}")),
        })
        .collect();
    let x: Vec<Option<f64>> = (0..rows)
        .map(|i| (i % 7 != 3).then_some(i as f64 * 0.1 - 2.5e-3))
        .collect();
    let flags: Vec<Option<bool>> = (0..rows)
        .map(|i| (i % 11 != 4).then_some(i % 3 == 0))
        .collect();
    let days: Vec<Option<i32>> = (0..rows)
        .map(|i| (i % 13 != 6).then_some(i as i32 * 17 - 1000))
        .collect();
    RecordBatch::try_from_iter([
        ("id", Arc::new(Int64Array::from(ids)) as ArrayRef),
        ("name", Arc::new(StringArray::from(names)) as ArrayRef),
        ("x", Arc::new(Float64Array::from(x)) as ArrayRef),
        ("flag", Arc::new(BooleanArray::from(flags)) as ArrayRef),
        ("day", Arc::new(Date32Array::from(days)) as ArrayRef),
    ])
    .unwrap()
}

/// Types only the binary formats keep exactly: Int32, timestamps with a zone, lists,
/// dictionaries.
fn rich_batch() -> RecordBatch {
    let ints = Int32Array::from(vec![Some(1), None, Some(i32::MIN), Some(i32::MAX)]);
    let times = TimestampMicrosecondArray::from(vec![Some(0), Some(-1), None, Some(1 << 50)])
        .with_timezone("Europe/Amsterdam");
    let lists = ListArray::from_iter_primitive::<arrow_array::types::Int32Type, _, _>(vec![
        Some(vec![Some(1), None]),
        None,
        Some(vec![]),
        Some(vec![Some(3)]),
    ]);
    let dict: DictionaryArray<Int16Type> = vec![Some("b"), Some("a"), None, Some("b")]
        .into_iter()
        .collect();
    RecordBatch::try_from_iter([
        ("ints", Arc::new(ints) as ArrayRef),
        ("times", Arc::new(times) as ArrayRef),
        ("lists", Arc::new(lists) as ArrayRef),
        ("dict", Arc::new(dict) as ArrayRef),
    ])
    .unwrap()
}

/// Writes `batch` with the library, in pieces of `chunk` rows.
fn write(path: &Path, format: Format, batch: &RecordBatch, chunk: usize) {
    let options = WriteOptions {
        format: Some(format),
        ..Default::default()
    };
    let mut writer = arrowsmith::create(path, batch.schema(), &options).unwrap();
    let mut start = 0;
    while start < batch.num_rows() {
        let len = chunk.min(batch.num_rows() - start);
        writer.write(&batch.slice(start, len)).unwrap();
        start += len;
    }
    writer.finish().unwrap();
}

/// Reads a file back with the library: its schema and its batches.
fn read(path: &Path, format: Format) -> (SchemaRef, Vec<RecordBatch>) {
    let options = ReadOptions {
        format: Some(format),
        ..Default::default()
    };
    let reader = arrowsmith::open(path, &options).unwrap();
    let schema = reader.schema();
    let batches = reader.collect::<Result<Vec<_>, _>>().unwrap();
    (schema, batches)
}

fn read_one(path: &Path, format: Format) -> RecordBatch {
    let (schema, batches) = read(path, format);
    concat_batches(&schema, &batches).unwrap()
}

/// Same column names and, after casting what was read to the expected types, same values.
#[track_caller]
fn assert_same_values(expected: &RecordBatch, actual: &RecordBatch, context: &str) {
    let names = |b: &RecordBatch| -> Vec<String> {
        b.schema()
            .fields()
            .iter()
            .map(|f| f.name().clone())
            .collect()
    };
    assert_eq!(names(expected), names(actual), "{context}: columns");
    assert_eq!(expected.num_rows(), actual.num_rows(), "{context}: rows");
    for (i, want) in expected.columns().iter().enumerate() {
        let got = cast(actual.column(i), want.data_type()).unwrap();
        assert_eq!(
            want.to_data(),
            got.to_data(),
            "{context}: column {}",
            names(expected)[i]
        );
    }
}

fn format(name: &str) -> Format {
    name.parse().unwrap()
}

/// No file is left in `dir` but those named.
#[track_caller]
fn assert_only(dir: &Path, names: &[&str]) {
    let mut found: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    found.sort();
    let mut want: Vec<String> = names.iter().map(|s| s.to_string()).collect();
    want.sort();
    assert_eq!(found, want, "the files in {}", dir.display());
}

#[test]
fn every_ecosystem_format_converts_to_every_other() {
    let dir = tempfile::tempdir().unwrap();
    // Strings with commas, quotes, line breaks and non-ASCII characters; nulls in every column.
    let batch = plain_batch(2500);
    for from in FORMATS {
        let input = dir.path().join(format!("in.{from}"));
        write(&input, format(from), &batch, 700);
        for to in FORMATS {
            let output = dir.path().join(format!("out-{from}.{to}"));
            let out = arrowsmith(&["convert", p(&input), p(&output)]);
            assert_ok_quietly(&out);
            let back = read_one(&output, format(to));
            assert_same_values(&batch, &back, &format!("{from} -> {to}"));
        }
    }
}

#[test]
fn binary_formats_keep_types_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let batch = rich_batch();
    for from in ["parquet", "arrow", "arrows"] {
        let input = dir.path().join(format!("in.{from}"));
        write(&input, format(from), &batch, 3);
        for to in ["parquet", "arrow", "arrows"] {
            let output = dir.path().join(format!("out-{from}.{to}"));
            assert_ok_quietly(&arrowsmith(&["convert", p(&input), p(&output)]));
            let back = read_one(&output, format(to));
            assert_eq!(
                back.schema().fields(),
                batch.schema().fields(),
                "{from} -> {to}"
            );
            assert_eq!(back, batch, "{from} -> {to}");
        }
    }
}

#[test]
fn binary_formats_keep_schema_and_field_metadata() {
    use std::collections::HashMap;
    let dir = tempfile::tempdir().unwrap();
    let plain = rich_batch();
    let fields: Vec<_> = plain
        .schema()
        .fields()
        .iter()
        .map(|f| {
            let meta = HashMap::from([("origin.dtype".to_string(), format!("{}!", f.name()))]);
            f.as_ref().clone().with_metadata(meta)
        })
        .collect();
    let schema = Arc::new(
        arrow_schema::Schema::new(fields).with_metadata(HashMap::from([(
            "origin.attrs".to_string(),
            r#"{"note": "kept"}"#.to_string(),
        )])),
    );
    let batch = RecordBatch::try_new(schema.clone(), plain.columns().to_vec()).unwrap();
    for from in ["parquet", "arrow", "arrows"] {
        let input = dir.path().join(format!("meta.{from}"));
        write(&input, format(from), &batch, 3);
        for to in ["parquet", "arrow", "arrows"] {
            let output = dir.path().join(format!("meta-{from}.{to}"));
            assert_ok_quietly(&arrowsmith(&["convert", p(&input), p(&output)]));
            let (back, batches) = read(&output, format(to));
            assert_eq!(back, schema, "{from} -> {to}");
            for b in &batches {
                assert_eq!(b.schema(), schema, "{from} -> {to}: a batch's schema");
            }
            let picked = dir.path().join(format!("meta-{from}-picked.{to}"));
            assert_ok_quietly(&arrowsmith(&[
                "convert",
                p(&input),
                p(&picked),
                "--columns",
                "dict,ints",
            ]));
            let (back, _) = read(&picked, format(to));
            assert_eq!(
                back.metadata(),
                schema.metadata(),
                "{from} -> {to} projected"
            );
            assert_eq!(back.field(0), schema.field(3), "{from} -> {to} projected");
        }
    }
}

/// Runs `arrowsmith ARGS...` with `input` on its standard input.
fn arrowsmith_with_stdin(args: &[&str], input: &[u8]) -> Output {
    use std::io::Write;
    use std::process::Stdio;
    let mut child = Command::new(env!("CARGO_BIN_EXE_arrowsmith"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    // The program may stop reading early (a refusal); a broken pipe is then expected.
    let _ = stdin.write_all(input);
    drop(stdin);
    child.wait_with_output().unwrap()
}

#[test]
fn an_arrow_stream_on_stdin_is_an_input() {
    let dir = tempfile::tempdir().unwrap();
    let batch = rich_batch();
    let stream = dir.path().join("in.arrows");
    write(&stream, Format::ArrowStream, &batch, 3);
    let bytes = std::fs::read(&stream).unwrap();
    for to in ["parquet", "arrow"] {
        let output = dir.path().join(format!("piped.{to}"));
        let out = arrowsmith_with_stdin(&["convert", "-", p(&output), "--from", "arrows"], &bytes);
        assert_ok_quietly(&out);
        assert_eq!(read_one(&output, format(to)), batch, "stdin -> {to}");
    }
    // Into a legacy format, the stream's format detected (standard input is always a stream).
    let plain = plain_batch(1000);
    let plain_stream = dir.path().join("plain.arrows");
    write(&plain_stream, Format::ArrowStream, &plain, 300);
    let jay = dir.path().join("piped.jay");
    let out = arrowsmith_with_stdin(
        &["convert", "-", p(&jay)],
        &std::fs::read(&plain_stream).unwrap(),
    );
    assert_ok_quietly(&out);
    assert_same_values(&plain, &read_one(&jay, Format::Jay), "stdin -> jay");

    let out = arrowsmith_with_stdin(&["head", "-", "-n", "2"], &bytes);
    assert_ok_quietly(&out);
    assert!(stdout(&out).contains("ints"), "{}", stdout(&out));

    // Damage names <stdin> and leaves nothing behind; other formats cannot come from a pipe.
    let output = dir.path().join("bad.parquet");
    for cut in [0, 5, bytes.len() / 2, bytes.len() - 9] {
        let out = arrowsmith_with_stdin(&["convert", "-", p(&output)], &bytes[..cut]);
        assert_fails(&out, 1, "<stdin>");
        assert!(!output.exists());
    }
    let out = arrowsmith_with_stdin(&["convert", "-", p(&output), "--from", "jay"], &bytes);
    assert_fails(&out, 2, "standard input");
    let out = arrowsmith_with_stdin(&["inspect", "-"], &bytes);
    assert_fails(&out, 2, "standard input");
}

#[test]
fn explicit_formats_override_names() {
    let dir = tempfile::tempdir().unwrap();
    let batch = plain_batch(50);
    let input = dir.path().join("data.txt");
    write(&input, Format::Csv, &batch, 50);
    let output = dir.path().join("data.bin");
    assert_ok_quietly(&arrowsmith(&[
        "convert",
        p(&input),
        p(&output),
        "--from",
        "csv",
        "--to",
        "arrows",
    ]));
    assert_same_values(
        &batch,
        &read_one(&output, Format::ArrowStream),
        "csv -> arrows",
    );
    // Content wins over a misleading extension.
    let disguised = dir.path().join("really-parquet.csv");
    write(&disguised, Format::Parquet, &batch, 50);
    let output = dir.path().join("out.ndjson");
    assert_ok_quietly(&arrowsmith(&["convert", p(&disguised), p(&output)]));
    assert_same_values(
        &batch,
        &read_one(&output, Format::Ndjson),
        "parquet named .csv",
    );
}

#[test]
fn columns_are_projected_in_the_order_asked_for() {
    let dir = tempfile::tempdir().unwrap();
    let batch = plain_batch(300);
    let want = batch.project(&[2, 0]).unwrap();
    for from in FORMATS {
        let input = dir.path().join(format!("in.{from}"));
        write(&input, format(from), &batch, 100);
        let output = dir.path().join(format!("out-{from}.parquet"));
        assert_ok_quietly(&arrowsmith(&[
            "convert",
            p(&input),
            p(&output),
            "--columns",
            "x,id",
        ]));
        let back = read_one(&output, Format::Parquet);
        assert_same_values(&want, &back, &format!("{from} --columns x,id"));
    }
}

#[test]
fn limit_stops_after_n_rows() {
    let dir = tempfile::tempdir().unwrap();
    let batch = plain_batch(1000);
    for from in FORMATS {
        let input = dir.path().join(format!("in.{from}"));
        write(&input, format(from), &batch, 128);
        for (limit, rows) in [(0, 0), (1, 1), (129, 129), (999, 999), (5000, 1000)] {
            let output = dir.path().join(format!("out-{from}-{limit}.arrow"));
            assert_ok_quietly(&arrowsmith(&[
                "convert",
                p(&input),
                p(&output),
                "--limit",
                &limit.to_string(),
                "--batch-size",
                "100",
            ]));
            let back = read_one(&output, Format::Arrow);
            assert_same_values(
                &batch.slice(0, rows),
                &back,
                &format!("{from} --limit {limit}"),
            );
        }
    }
}

#[test]
fn batch_size_sets_the_rows_per_batch() {
    let dir = tempfile::tempdir().unwrap();
    let batch = plain_batch(1000);
    for from in FORMATS {
        let input = dir.path().join(format!("in.{from}"));
        write(&input, format(from), &batch, 1000);
        let output = dir.path().join(format!("out-{from}.arrows"));
        assert_ok_quietly(&arrowsmith(&[
            "convert",
            p(&input),
            p(&output),
            "--batch-size",
            "64",
        ]));
        let (_, batches) = read(&output, Format::ArrowStream);
        assert_eq!(batches.len(), 16, "{from}: 1000 rows in batches of 64");
        assert!(batches.iter().all(|b| b.num_rows() <= 64), "{from}");
    }
}

fn inspect_json(path: &Path) -> Value {
    let out = arrowsmith(&["inspect", p(path), "--json"]);
    assert_ok_quietly(&out);
    serde_json::from_str(&stdout(&out)).expect("inspect --json prints JSON")
}

#[test]
fn parquet_output_is_zstd_unless_told_otherwise() {
    let dir = tempfile::tempdir().unwrap();
    let batch = plain_batch(1000);
    let input = dir.path().join("in.arrow");
    write(&input, Format::Arrow, &batch, 1000);
    for (args, codec) in [
        (vec![], "ZSTD"),
        (vec!["--compression", "snappy"], "SNAPPY"),
        (vec!["--compression", "gzip:9"], "GZIP"),
        (vec!["--compression", "zstd:19"], "ZSTD"),
        (vec!["--compression", "lz4"], "LZ4_RAW"),
        (vec!["--compression", "brotli"], "BROTLI"),
        (vec!["--compression", "none"], "UNCOMPRESSED"),
    ] {
        let output = dir.path().join("out.parquet");
        let mut command = vec!["convert", p(&input), p(&output), "--overwrite"];
        command.extend(&args);
        assert_ok_quietly(&arrowsmith(&command));
        let report = inspect_json(&output);
        for column in report["structure"]["columns"].as_array().unwrap() {
            assert_eq!(
                column["compression"],
                serde_json::json!([codec]),
                "{args:?}"
            );
        }
        assert_same_values(&batch, &read_one(&output, Format::Parquet), codec);
    }

    let output = dir.path().join("groups.parquet");
    assert_ok_quietly(&arrowsmith(&[
        "convert",
        p(&input),
        p(&output),
        "--row-group-size",
        "300",
    ]));
    let report = inspect_json(&output);
    let groups: Vec<u64> = report["structure"]["row_groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["num_rows"].as_u64().unwrap())
        .collect();
    assert_eq!(groups, vec![300, 300, 300, 100]);
}

#[test]
fn arrow_ipc_output_can_be_compressed() {
    let dir = tempfile::tempdir().unwrap();
    let batch = plain_batch(1000);
    let input = dir.path().join("in.parquet");
    write(&input, Format::Parquet, &batch, 1000);
    for (to, codec) in [
        ("arrow", "lz4"),
        ("arrow", "zstd"),
        ("arrows", "lz4"),
        ("arrows", "zstd:5"),
    ] {
        let output = dir.path().join(format!("out.{to}"));
        assert_ok_quietly(&arrowsmith(&[
            "convert",
            p(&input),
            p(&output),
            "--compression",
            codec,
            "--overwrite",
        ]));
        let report = inspect_json(&output);
        let want = codec.split(':').next().unwrap();
        for b in report["structure"]["batches"].as_array().unwrap() {
            assert_eq!(b["compression"], want, "{to} {codec}");
        }
        // Read back by the CLI (checking every compressed buffer) and by the library.
        let verify = arrowsmith(&["inspect", p(&output), "--verify"]);
        assert_ok_quietly(&verify);
        assert!(stdout(&verify).contains("verify: ok"));
        assert_same_values(&batch, &read_one(&output, format(to)), codec);
    }
}

#[test]
fn damaged_compressed_ipc_fails_cleanly() {
    // Arrow allocates whatever a compressed buffer's length prefix claims: a damaged prefix
    // must be an error, not an abort on an impossible allocation.
    let dir = tempfile::tempdir().unwrap();
    let batch = plain_batch(1000);
    let input = dir.path().join("in.parquet");
    write(&input, Format::Parquet, &batch, 1000);
    for (to, codec) in [("arrows", "zstd"), ("arrow", "lz4")] {
        let good = dir.path().join(format!("good.{to}"));
        assert_ok_quietly(&arrowsmith(&[
            "convert",
            p(&input),
            p(&good),
            "--compression",
            codec,
        ]));
        let report = inspect_json(&good);
        let first = &report["structure"]["batches"][0];
        let body = (first["offset"].as_u64().unwrap() + first["metadata_length"].as_u64().unwrap())
            as usize;
        let bytes = std::fs::read(&good).unwrap();
        for claim in [1i64 << 60, 3, -7] {
            let mut damaged = bytes.clone();
            // The body starts with the first buffer (the id column has no nulls, so no
            // validity buffer): its 8-byte uncompressed length.
            damaged[body..body + 8].copy_from_slice(&claim.to_le_bytes());
            let path = dir.path().join(format!("damaged.{to}"));
            std::fs::write(&path, &damaged).unwrap();
            let out_path = dir.path().join("out.parquet");
            for args in [
                vec!["convert", p(&path), p(&out_path)],
                vec!["inspect", p(&path), "--verify"],
                vec!["head", p(&path)],
            ] {
                let out = arrowsmith(&args);
                assert_fails(&out, 1, "damaged.");
                assert!(
                    stderr(&out).contains("compressed buffer"),
                    "{}",
                    stderr(&out)
                );
            }
            assert!(!out_path.exists());
        }
    }
}

#[test]
fn usage_errors_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.parquet");
    write(&input, Format::Parquet, &plain_batch(10), 10);
    let out_path = dir.path().join("out.parquet");
    let out = p(&out_path);
    let garbage = dir.path().join("garbage.bin");
    std::fs::write(&garbage, b"\x01\x02 not any format \x03").unwrap();

    for args in [
        vec![],
        vec!["frobnicate"],
        vec!["convert", p(&input)],
        vec!["convert", p(&input), out, "--from", "xls"],
        vec!["convert", p(&input), out, "--to", "xls"],
        vec!["convert", p(&input), out, "--batch-size", "0"],
        vec!["convert", p(&input), out, "--limit", "-3"],
        vec!["head", p(&input), "-n", "many"],
    ] {
        let result = arrowsmith(&args);
        assert_eq!(
            result.status.code(),
            Some(2),
            "{args:?}: {}",
            stderr(&result)
        );
        assert!(!stderr(&result).contains("panicked"));
    }

    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec!["convert", p(&garbage), out], "garbage.bin"),
        (vec!["convert", p(&input), "out.xls"], "out.xls"),
        (
            vec!["convert", p(&input), out, "--columns", "id,nope"],
            "nope",
        ),
        (vec!["head", p(&input), "--columns", "nope"], "nope"),
        (
            vec!["convert", p(&input), out, "--compression", "zip"],
            "zip",
        ),
        (
            vec!["convert", p(&input), out, "--compression", "zstd:99"],
            "99",
        ),
        (
            vec!["convert", p(&input), out, "--compression", "snappy:2"],
            "snappy",
        ),
        (
            vec!["convert", p(&input), "out.arrow", "--compression", "gzip"],
            "gzip",
        ),
        (
            vec!["convert", p(&input), "out.csv", "--compression", "zstd"],
            "--compression",
        ),
        (
            vec!["convert", p(&input), "out.csv", "--row-group-size", "5"],
            "--row-group-size",
        ),
        (
            vec![
                "convert",
                p(&input),
                "out.csv",
                "--sentinel-collisions-as-na",
            ],
            "--sentinel-collisions-as-na",
        ),
        (vec!["convert", p(&input), p(&input)], "same file"),
    ];
    for (args, names) in cases {
        assert_fails(&arrowsmith(&args), 2, names);
    }
    // Nothing was written by any of them.
    assert_only(dir.path(), &["in.parquet", "garbage.bin"]);
}

#[test]
fn data_and_io_errors_exit_1_with_one_line_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let good = dir.path().join("good.parquet");
    write(&good, Format::Parquet, &plain_batch(10), 10);
    let missing = dir.path().join("missing.parquet");
    let out_path = dir.path().join("out.arrow");
    let out = p(&out_path);

    let mut cases: Vec<(PathBuf, &str)> = vec![(missing.clone(), "missing.parquet")];
    let noise: Vec<u8> = (0..4000u32)
        .map(|i| (i.wrapping_mul(2654435761) >> 13) as u8)
        .collect();
    for name in [
        "garbage.parquet",
        "garbage.arrow",
        "garbage.arrows",
        "garbage.ndjson",
    ] {
        let path = dir.path().join(name);
        std::fs::write(&path, &noise).unwrap();
        cases.push((path, name));
    }
    let bad_utf8 = dir.path().join("bad.csv");
    std::fs::write(&bad_utf8, b"a,b\n1,\xff\xfe\n").unwrap();
    cases.push((bad_utf8, "bad.csv"));
    // A truncated copy of every binary format.
    for from in ["parquet", "arrow", "arrows"] {
        let whole = dir.path().join(format!("whole.{from}"));
        write(&whole, format(from), &plain_batch(500), 100);
        let bytes = std::fs::read(&whole).unwrap();
        let cut = dir.path().join(format!("cut.{from}"));
        std::fs::write(&cut, &bytes[..bytes.len() * 2 / 3]).unwrap();
        std::fs::remove_file(&whole).unwrap();
        cases.push((cut, "cut."));
    }

    for (input, names) in &cases {
        assert_fails(&arrowsmith(&["convert", p(input), out]), 1, names);
        assert_fails(&arrowsmith(&["inspect", p(input), "--verify"]), 1, names);
        let head = arrowsmith(&["head", p(input)]);
        if input.ends_with("cut.arrows") {
            // The first rows of a cut stream are whole, and head reads no further.
            assert_ok_quietly(&head);
        } else {
            assert_fails(&head, 1, names);
        }
    }
    assert!(!out_path.exists());
    // The system's reason is printed once, not again after the class.
    let o = arrowsmith(&["convert", p(&missing), out]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(err.matches("No such file or directory").count(), 1, "{err}");

    // An output where none can be written.
    let nowhere = dir.path().join("no/such/dir/out.parquet");
    assert_fails(
        &arrowsmith(&["convert", p(&good), p(&nowhere)]),
        1,
        "out.parquet",
    );
}

#[test]
fn a_failed_conversion_leaves_no_output_and_an_existing_one_untouched() {
    let dir = tempfile::tempdir().unwrap();
    // A CSV whose schema is inferred from the first 1000 records, with a value past them that
    // does not fit: the conversion fails after batches have been written.
    let mut text = String::from("n,s\n");
    for i in 0..3000 {
        text.push_str(&format!("{i},row {i}\n"));
    }
    text.push_str("not a number,oops\n");
    let input = dir.path().join("late-error.csv");
    std::fs::write(&input, &text).unwrap();
    // And an NDJSON file with a key inference did not see.
    let mut json = String::new();
    for i in 0..1500 {
        json.push_str(&format!("{{\"n\": {i}}}\n"));
    }
    json.push_str("{\"n\": 1, \"surprise\": true}\n");
    let input_json = dir.path().join("late-key.ndjson");
    std::fs::write(&input_json, &json).unwrap();

    for input in [&input, &input_json] {
        for to in FORMATS {
            let output = dir.path().join(format!("new.{to}"));
            let out = arrowsmith(&["convert", p(input), p(&output), "--batch-size", "100"]);
            assert_fails(&out, 1, p(input));
            assert!(
                !output.exists(),
                "{to}: a failed conversion left {output:?}"
            );

            let existing = dir.path().join(format!("existing.{to}"));
            std::fs::write(&existing, b"precious").unwrap();
            let out = arrowsmith(&[
                "convert",
                p(input),
                p(&existing),
                "--batch-size",
                "100",
                "--overwrite",
            ]);
            assert_fails(&out, 1, p(input));
            assert_eq!(std::fs::read(&existing).unwrap(), b"precious");
        }
    }
    let mut left: Vec<&str> = vec!["late-error.csv", "late-key.ndjson"];
    let existing: Vec<String> = FORMATS.iter().map(|f| format!("existing.{f}")).collect();
    left.extend(existing.iter().map(String::as_str));
    assert_only(dir.path(), &left);

    // With a limit that stops before the bad record, the same input converts.
    let output = dir.path().join("head.parquet");
    assert_ok_quietly(&arrowsmith(&[
        "convert",
        p(&input),
        p(&output),
        "--limit",
        "2000",
    ]));
    assert_eq!(read_one(&output, Format::Parquet).num_rows(), 2000);
}

/// Ids and values without nulls, which every output format holds (bcolz refuses nulls).
fn dense_batch(rows: usize) -> RecordBatch {
    let ids: Vec<i64> = (0..rows as i64).collect();
    let x: Vec<f64> = (0..rows).map(|i| i as f64 * 0.5).collect();
    RecordBatch::try_from_iter([
        ("id", Arc::new(Int64Array::from(ids)) as ArrayRef),
        ("x", Arc::new(Float64Array::from(x)) as ArrayRef),
    ])
    .unwrap()
}

#[test]
fn an_existing_output_is_replaced_only_with_overwrite_and_only_if_it_is_one() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.arrow");
    write(&input, Format::Arrow, &dense_batch(20), 20);
    for to in FORMATS {
        let output = dir.path().join(format!("out.{to}"));
        assert_ok_quietly(&arrowsmith(&["convert", p(&input), p(&output)]));
        std::fs::write(&output, b"precious").unwrap();
        let out = arrowsmith(&["convert", p(&input), p(&output)]);
        assert_fails(&out, 2, "already exists; set --overwrite to replace it");
        assert_eq!(std::fs::read(&output).unwrap(), b"precious", "{to}");
        assert_ok_quietly(&arrowsmith(&[
            "convert",
            p(&input),
            p(&output),
            "--overwrite",
        ]));
        assert_eq!(read_one(&output, format(to)).num_rows(), 20, "{to}");

        // A directory is not a file of any single-file format: refused, with or without.
        let folder = dir.path().join(format!("folder.{to}"));
        std::fs::create_dir(&folder).unwrap();
        std::fs::write(folder.join("mine.txt"), b"mine").unwrap();
        for overwrite in [true, false] {
            let mut args = vec!["convert", p(&input), p(&folder)];
            args.extend(overwrite.then_some("--overwrite"));
            let out = arrowsmith(&args);
            assert_fails(&out, 1, "exists and is a directory, not a file");
        }
        assert_eq!(std::fs::read(folder.join("mine.txt")).unwrap(), b"mine");
    }
    let mut left = vec!["in.arrow".to_owned()];
    for to in FORMATS {
        left.extend([format!("out.{to}"), format!("folder.{to}")]);
    }
    assert_only(
        dir.path(),
        &left.iter().map(String::as_str).collect::<Vec<_>>(),
    );
}

/// Makes a FIFO at `path`.
fn mkfifo(path: &Path) {
    let c = std::ffi::CString::new(p(path)).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
}

fn is_fifo(path: &Path) -> bool {
    use std::os::unix::fs::FileTypeExt;
    path.symlink_metadata()
        .is_ok_and(|m| m.file_type().is_fifo())
}

#[test]
fn a_fifo_or_device_output_is_written_into_by_streaming_formats_and_refused_by_the_rest() {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.arrow");
    write(&input, Format::Arrow, &dense_batch(20), 20);
    let fifo = dir.path().join("pipe");
    mkfifo(&fifo);
    for to in ["csv", "ndjson", "arrows"] {
        // The reading end is open before the writer starts (without waiting for one), and the
        // output is smaller than the pipe's buffer, so the writer never blocks.
        let mut reader = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(&fifo)
            .unwrap();
        assert_ok_quietly(&arrowsmith(&["convert", p(&input), p(&fifo), "--to", to]));
        let mut bytes = Vec::new();
        let _ = reader.read_to_end(&mut bytes);
        assert!(is_fifo(&fifo), "{to}: the FIFO was replaced");
        let copy = dir.path().join(format!("copy.{to}"));
        std::fs::write(&copy, &bytes).unwrap();
        assert_eq!(read_one(&copy, format(to)).num_rows(), 20, "{to}");
        std::fs::remove_file(&copy).unwrap();
    }
    for to in ["parquet", "arrow", "jay", "vs", "filo", "bcolz"] {
        let out = arrowsmith(&["convert", p(&input), p(&fifo), "--to", to, "--overwrite"]);
        assert_fails(&out, 1, "the output is a FIFO");
        assert!(is_fifo(&fifo), "{to}: the FIFO was replaced");
    }
    assert_only(dir.path(), &["in.arrow", "pipe"]);
    // A character device likewise: /dev/null takes the streams, and is never renamed over.
    let null = Path::new("/dev/null");
    assert_ok_quietly(&arrowsmith(&["convert", p(&input), p(null), "--to", "csv"]));
    let out = arrowsmith(&["convert", p(&input), p(null), "--to", "parquet"]);
    assert_fails(&out, 1, "the output is a character device");
    use std::os::unix::fs::FileTypeExt;
    assert!(null.metadata().unwrap().file_type().is_char_device());
}

/// The hidden temporaries beside `target` that its writers left.
fn temporaries(target: &Path) -> usize {
    let prefix = format!(".{}.", target.file_name().unwrap().to_str().unwrap());
    std::fs::read_dir(target.parent().unwrap())
        .unwrap()
        .filter(|e| {
            let name = e.as_ref().unwrap().file_name();
            name.to_str().unwrap().starts_with(&prefix)
        })
        .count()
}

#[test]
fn a_dataset_replaced_under_kill_9_is_the_old_or_the_whole_new_one_at_every_step() {
    let dir = tempfile::tempdir().unwrap();
    let old = dir.path().join("old.arrow");
    let new = dir.path().join("new.arrow");
    write(&old, Format::Arrow, &dense_batch(30), 30);
    write(&new, Format::Arrow, &dense_batch(50), 50);
    for to in ["bcolz", "filo"] {
        let target = dir.path().join(format!("t.{to}"));
        assert_ok_quietly(&arrowsmith(&["convert", p(&old), p(&target)]));
        // Killed before the swap: the old dataset; after it, before the old one is removed:
        // the new one. A temporary is left beside it either way.
        for (step, rows) in [("dir-synced", 30), ("dir-exchanged", 50)] {
            convert_killed_at(step, &["--overwrite", p(&new), p(&target)]);
            assert_eq!(
                read_one(&target, format(to)).num_rows(),
                rows,
                "{to} {step}"
            );
            assert_eq!(temporaries(&target), 1, "{to} {step}");
        }
        // The next write removes what the killed writers left.
        assert_ok_quietly(&arrowsmith(&[
            "convert",
            "--overwrite",
            p(&old),
            p(&target),
        ]));
        assert_eq!(read_one(&target, format(to)).num_rows(), 30, "{to}");
        assert_eq!(temporaries(&target), 0, "{to}");
        // A new dataset killed before it is in place leaves no dataset.
        let fresh = dir.path().join(format!("fresh.{to}"));
        convert_killed_at("dir-synced", &[p(&new), p(&fresh)]);
        assert!(!fresh.exists());
        assert_eq!(temporaries(&fresh), 1, "{to}");
        assert_ok_quietly(&arrowsmith(&["convert", p(&new), p(&fresh)]));
        assert_eq!(temporaries(&fresh), 0, "{to}");
    }
    assert_only(
        dir.path(),
        &[
            "old.arrow",
            "new.arrow",
            "t.bcolz",
            "t.filo",
            "fresh.bcolz",
            "fresh.filo",
        ],
    );
}

#[test]
fn the_temporary_of_a_killed_conversion_is_removed_by_the_next_one() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.arrow");
    write(&input, Format::Arrow, &dense_batch(20), 20);
    for to in ["parquet", "csv", "jay", "dataseries"] {
        let output = dir.path().join(format!("out.{to}"));
        convert_killed_at("file-synced", &[p(&input), p(&output), "--to", to]);
        assert!(!output.exists(), "{to}");
        assert_eq!(temporaries(&output), 1, "{to}");
        assert_ok_quietly(&arrowsmith(&["convert", p(&input), p(&output), "--to", to]));
        assert_eq!(temporaries(&output), 0, "{to}");
    }
}

#[test]
fn inspect_reports_format_schema_rows_and_structure() {
    let dir = tempfile::tempdir().unwrap();
    let batch = plain_batch(1000);
    for from in FORMATS {
        let input = dir.path().join(format!("in.{from}"));
        write(&input, format(from), &batch, 300);
        let report = inspect_json(&input);
        assert_eq!(report["format"], from);
        assert_eq!(report["rows"], 1000, "{from}");
        assert_eq!(report["columns"], 5);
        let names: Vec<&str> = report["schema"]["fields"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["id", "name", "x", "flag", "day"], "{from}");
        assert!(report["structure"].is_object(), "{from}");
        assert!(report.get("verify").is_none());

        let out = arrowsmith(&["inspect", p(&input), "--verify", "--json"]);
        assert_ok_quietly(&out);
        let verified: Value = serde_json::from_str(&stdout(&out)).unwrap();
        assert_eq!(verified["verify"]["ok"], true);
        assert_eq!(verified["verify"]["rows"], 1000);

        let out = arrowsmith(&["inspect", p(&input)]);
        assert_ok_quietly(&out);
        let text = stdout(&out);
        assert!(text.contains(&format!("format   {from}")), "{text}");
        assert!(text.contains("rows     1000"), "{text}");
        assert!(text.contains(&format!("{from} structure")), "{text}");
    }

    let parquet = inspect_json(&dir.path().join("in.parquet"));
    assert_eq!(parquet["structure"]["num_row_groups"], 1);
    let arrow = inspect_json(&dir.path().join("in.arrow"));
    let batches: Vec<u64> = arrow["structure"]["batches"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["rows"].as_u64().unwrap())
        .collect();
    assert_eq!(batches, vec![300, 300, 300, 100]);
    let stream = inspect_json(&dir.path().join("in.arrows"));
    assert_eq!(stream["structure"]["end_of_stream_marker"], true);
    let csv = inspect_json(&dir.path().join("in.csv"));
    assert_eq!(csv["structure"]["records_inferred_from"], 1000);
}

#[test]
fn inspect_verify_reports_a_file_that_does_not_read() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("bad.csv");
    let mut text = String::from("n\n");
    for i in 0..1200 {
        text.push_str(&format!("{i}\n"));
    }
    text.push_str("x\n");
    std::fs::write(&input, &text).unwrap();

    // Without --verify the structure is shown; the row count cannot be, and says why.
    let out = arrowsmith(&["inspect", p(&input)]);
    assert_ok_quietly(&out);
    assert!(
        stdout(&out).contains("rows     unknown"),
        "{}",
        stdout(&out)
    );
    assert!(stdout(&out).contains("note: the rows could not be counted"));

    let out = arrowsmith(&["inspect", p(&input), "--verify"]);
    assert_fails(&out, 1, "bad.csv");
    assert!(stdout(&out).contains("verify: FAILED"), "{}", stdout(&out));

    let out = arrowsmith(&["inspect", p(&input), "--verify", "--json"]);
    assert_fails(&out, 1, "bad.csv");
    let report: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(report["verify"]["ok"], false);
    assert!(report["verify"]["error"]
        .as_str()
        .unwrap()
        .contains("bad.csv"));
}

#[test]
fn head_prints_the_first_rows() {
    let dir = tempfile::tempdir().unwrap();
    let batch = plain_batch(100);
    for from in FORMATS {
        let input = dir.path().join(format!("in.{from}"));
        write(&input, format(from), &batch, 30);
        let out = arrowsmith(&["head", p(&input), "-n", "3"]);
        assert_ok_quietly(&out);
        let text = stdout(&out);
        // Border, header, border, three rows, border.
        assert_eq!(text.lines().count(), 7, "{from}: {text}");
        assert!(text.contains("| id "), "{text}");
        assert!(text.contains("| -7 "), "{text}");
        assert!(text.contains("| 1999999 "), "{text}");
        assert!(!text.contains("| 2999002 "), "{text}");
        assert!(text.contains("null"), "nulls are shown: {text}");

        // (Names with line breaks take two lines of the table.)
        let out = arrowsmith(&["head", p(&input), "--columns", "id,x"]);
        assert_ok_quietly(&out);
        assert_eq!(
            stdout(&out).lines().count(),
            14,
            "{from}: ten rows by default"
        );

        let out = arrowsmith(&["head", p(&input), "-n", "0", "--columns", "x,id"]);
        assert_ok_quietly(&out);
        let text = stdout(&out);
        assert_eq!(text.lines().count(), 4, "{from}: header only: {text}");
        assert!(
            text.find("| x").unwrap() < text.find("| id").unwrap(),
            "{text}"
        );
    }
}

#[test]
fn head_reads_only_what_it_shows() {
    let dir = tempfile::tempdir().unwrap();
    // A CSV whose record 5000 is broken: head -n 5 never reaches it.
    let mut text = String::from("n\n");
    for i in 0..5000 {
        text.push_str(&format!("{i}\n"));
    }
    text.push_str("broken\n");
    let input = dir.path().join("tail-broken.csv");
    std::fs::write(&input, &text).unwrap();
    let out = arrowsmith(&["head", p(&input), "-n", "5"]);
    assert_ok_quietly(&out);
    assert!(stdout(&out).contains("| 4 "));
}

#[test]
fn formats_lists_every_format() {
    let out = arrowsmith(&["formats"]);
    assert_ok_quietly(&out);
    let text = stdout(&out);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 1 + Format::ALL.len(), "{text}");
    assert!(lines[0].starts_with("NAME"));
    for format in Format::ALL {
        let line = lines
            .iter()
            .find(|l| l.split_whitespace().next() == Some(format.name()))
            .unwrap_or_else(|| panic!("{} is listed", format.name()));
        // The library names the setting; the command line spells it as its flag.
        let description = format
            .description()
            .replace("the filo_type option", "--filo-type");
        assert!(line.contains(&description), "{line}");
    }
    assert!(text.contains(".arrow .feather .ipc"));
}

#[test]
fn help_and_version() {
    for args in [vec!["--help"], vec!["convert", "--help"], vec!["--version"]] {
        let out = arrowsmith(&args);
        assert_eq!(out.status.code(), Some(0));
        assert!(!stdout(&out).is_empty());
    }
    let help = stdout(&arrowsmith(&["convert", "--help"]));
    for option in [
        "--from",
        "--to",
        "--columns",
        "--limit",
        "--batch-size",
        "--compression",
        "--row-group-size",
        "--sentinel-collisions-as-na",
    ] {
        assert!(help.contains(option), "{option} in {help}");
    }
}

/// What `convert` said it wrote: the rows, the columns, the path and the size as printed.
fn written(out: &Output) -> (String, String, String, String) {
    let err = stderr(out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let line = err.trim_end();
    assert_eq!(err.lines().count(), 1, "{err}");
    let rest = line.strip_prefix("wrote ").expect(line);
    let (rows, rest) = rest.split_once(" × ").expect(line);
    let (columns, rest) = rest.split_once(" to ").expect(line);
    let (path, rest) = rest.rsplit_once(" (").expect(line);
    let (size, time) = rest.split_once(") in ").expect(line);
    let seconds: f64 = time.strip_suffix(" s").expect(line).parse().expect(line);
    assert!((0.0..60.0).contains(&seconds), "{line}");
    (rows.into(), columns.into(), path.into(), size.into())
}

#[test]
fn convert_says_what_it_wrote_on_stderr_unless_quiet_or_writing_to_standard_output() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.arrow");
    write(&input, Format::Arrow, &plain_batch(1_234), 500);
    let output = dir.path().join("out.parquet");
    let out = arrowsmith(&["convert", p(&input), p(&output)]);
    let size = std::fs::metadata(&output).unwrap().len();
    assert!((1024..1024 * 1024).contains(&size), "{size}");
    let (rows, columns, path, shown) = written(&out);
    assert_eq!(rows, "1,234 rows");
    assert_eq!(columns, "5 columns");
    assert_eq!(path, p(&output));
    assert_eq!(shown, format!("{:.1} KiB", size as f64 / 1024.0));

    // A dataset directory: the size of every file in it.
    let bcolz = dir.path().join("out.bcolz");
    let out = arrowsmith(&["convert", p(&input), p(&bcolz), "--columns", "id"]);
    let (rows, columns, _, shown) = written(&out);
    assert_eq!(
        (rows.as_str(), columns.as_str()),
        ("1,234 rows", "1 column")
    );
    fn du(path: &Path) -> u64 {
        std::fs::read_dir(path)
            .unwrap()
            .map(|e| e.unwrap().path())
            .map(|p| {
                if p.is_dir() {
                    du(&p)
                } else {
                    p.metadata().unwrap().len()
                }
            })
            .sum()
    }
    let size = du(&bcolz);
    let expected = if size < 1024 {
        format!("{size} B")
    } else {
        format!("{:.1} KiB", size as f64 / 1024.0)
    };
    assert_eq!(shown, expected);

    for quiet in ["--quiet", "-q"] {
        let out = arrowsmith(&[
            "convert",
            p(&input),
            p(&output),
            quiet,
            "--limit",
            "1",
            "--overwrite",
        ]);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        assert_eq!(stderr(&out), "", "{quiet}");
    }
    let out = arrowsmith(&["convert", p(&input), "-", "--to", "csv"]);
    assert!(stdout(&out).starts_with("id,name,x,flag,day\n"));
    assert_eq!(stderr(&out), "", "the data went to stdout: nothing else");
}

/// A build without the `sql` feature (`cargo test -p arrowsmith-cli --no-default-features`).
#[cfg(not(feature = "sql"))]
#[test]
fn sql_in_a_build_without_the_feature_says_how_to_get_it() {
    for args in [
        vec!["sql", "SELECT 1"],
        vec!["sql", "-f", "report.sql", "-o", "out.parquet"],
        vec!["sql"],
    ] {
        let out = arrowsmith(&args);
        assert_fails(&out, 2, "`sql` feature");
        assert!(
            stderr(&out).contains("cargo install --path cli"),
            "{}",
            stderr(&out)
        );
        assert_eq!(stderr(&out).lines().count(), 1, "{}", stderr(&out));
    }
    let help = stdout(&arrowsmith(&["--help"]));
    assert!(help.contains("not in this build"), "{help}");
    // Everything else is there.
    let formats = arrowsmith(&["formats"]);
    assert_eq!(formats.status.code(), Some(0));
}

/// A build without the `remote` feature: a URL is refused in one line that names it (without
/// its credentials) and says how to get a build that reads it; nothing is written.
#[cfg(not(feature = "remote"))]
#[test]
fn a_url_in_a_build_without_remote_storage_says_how_to_get_it() {
    let dir = tempfile::tempdir().unwrap();
    let output = dir.path().join("out.parquet");
    let url = "s3://key:secret@bucket/trades.jay";
    let local = common::data("jay/all_types.jay");
    for args in [
        vec!["convert", url, p(&output)],
        vec!["inspect", url],
        vec!["convert", p(&local), "s3://bucket/out.parquet"],
    ] {
        let out = arrowsmith(&args);
        assert_fails(&out, 1, "built without remote storage");
        let message = stderr(&out);
        assert!(message.contains("--features remote"), "{message}");
        assert!(message.contains("s3://bucket/"), "{message}");
        assert!(!message.contains("secret"), "{message}");
        assert_eq!(message.lines().count(), 1, "{message}");
    }
    assert!(!output.exists());
}

#[test]
fn empty_inputs_convert_to_empty_outputs() {
    let dir = tempfile::tempdir().unwrap();
    let header_only = dir.path().join("header.csv");
    std::fs::write(&header_only, "a,b\n").unwrap();
    let empty = dir.path().join("empty.ndjson");
    std::fs::write(&empty, "").unwrap();
    let zero_rows = dir.path().join("zero.parquet");
    let batch = plain_batch(0);
    write(&zero_rows, Format::Parquet, &batch, 1);
    for input in [&header_only, &empty, &zero_rows] {
        for to in FORMATS {
            let output = dir.path().join(format!("out.{to}"));
            assert_ok_quietly(&arrowsmith(&[
                "convert",
                p(input),
                p(&output),
                "--overwrite",
            ]));
            let (_, batches) = read(&output, format(to));
            assert_eq!(batches.iter().map(|b| b.num_rows()).sum::<usize>(), 0);
        }
    }
    // A CSV of no rows still has its header.
    let output = dir.path().join("zero.csv");
    assert_ok_quietly(&arrowsmith(&["convert", p(&zero_rows), p(&output)]));
    assert_eq!(
        std::fs::read_to_string(&output).unwrap(),
        "id,name,x,flag,day\n"
    );
}

#[test]
fn schemas_survive_a_zero_row_limit() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.arrow");
    let batch = rich_batch();
    write(&input, Format::Arrow, &batch, 4);
    let output = dir.path().join("none.parquet");
    assert_ok_quietly(&arrowsmith(&[
        "convert",
        p(&input),
        p(&output),
        "--limit",
        "0",
    ]));
    let (schema, batches) = read(&output, Format::Parquet);
    assert_eq!(schema.fields(), batch.schema().fields());
    assert_eq!(batches.iter().map(|b| b.num_rows()).sum::<usize>(), 0);
}

#[test]
fn huge_numbers_are_taken_in_stride() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.csv");
    let batch = plain_batch(20);
    write(&input, Format::Csv, &batch, 20);
    let max = u64::MAX.to_string();
    for to in FORMATS {
        let output = dir.path().join(format!("out.{to}"));
        assert_ok_quietly(&arrowsmith(&[
            "convert",
            p(&input),
            p(&output),
            "--batch-size",
            &max,
            "--limit",
            &max,
        ]));
        assert_same_values(&batch, &read_one(&output, format(to)), to);
    }
    assert_ok_quietly(&arrowsmith(&["head", p(&input), "-n", &max]));
}

#[cfg(unix)]
#[test]
fn an_interrupted_conversion_leaves_nothing_behind() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("big.parquet");
    let batch = plain_batch(100_000);
    let options = WriteOptions {
        format: Some(Format::Parquet),
        compression: Some("snappy".into()),
        ..Default::default()
    };
    let mut writer = arrowsmith::create(&input, batch.schema(), &options).unwrap();
    for _ in 0..10 {
        writer.write(&batch).unwrap();
    }
    writer.finish().unwrap();

    for signal in [libc::SIGINT, libc::SIGTERM] {
        let output = dir.path().join("out.csv");
        let child = Command::new(env!("CARGO_BIN_EXE_arrowsmith"))
            .args(["convert", p(&input), p(&output), "--batch-size", "10000"])
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(400));
        // SAFETY: signals our own child process.
        unsafe { libc::kill(child.id() as libc::pid_t, signal) };
        let out = child.wait_with_output().unwrap();
        match out.status.code() {
            // A fast machine may have finished first: then the output is whole.
            Some(0) => assert_eq!(read_one(&output, Format::Csv).num_rows(), 1_000_000),
            code => {
                assert_eq!(code, Some(128 + signal), "stderr: {}", stderr(&out));
                assert!(stderr(&out).contains("interrupted"), "{}", stderr(&out));
                assert!(!output.exists());
            }
        }
        let _ = std::fs::remove_file(&output);
        assert_only(dir.path(), &["big.parquet"]);
    }
}

#[test]
fn head_shortens_wide_lists_and_long_text_as_polars_does() {
    use arrow::util::display::{ArrayFormatter, FormatOptions};
    use arrow_array::{Array, FixedSizeListArray, Float32Array};
    use arrow_schema::{DataType, Field, Schema};

    let dir = tempfile::tempdir().unwrap();
    let dims = 200;
    let values: Vec<f32> = (0..2 * dims).map(|i| i as f32 * 0.25 - 7.0).collect();
    let vectors = FixedSizeListArray::new(
        Arc::new(Field::new("item", DataType::Float32, false)),
        dims as i32,
        Arc::new(Float32Array::from(values.clone())),
        None,
    );
    let short = ListArray::from_iter_primitive::<arrow_array::types::Int32Type, _, _>(vec![
        Some(vec![Some(1), Some(2), Some(3), Some(4)]),
        None,
    ]);
    let long_text = "a sentence far longer than any table cell should ever be".to_string();
    let text = StringArray::from(vec![Some(long_text.as_str()), Some("short")]);
    let schema = Arc::new(Schema::new(vec![
        Field::new("vector", vectors.data_type().clone(), false),
        Field::new("few", short.data_type().clone(), true),
        Field::new("text", DataType::Utf8, true),
    ]));
    let batch = RecordBatch::try_new(
        schema,
        vec![Arc::new(vectors), Arc::new(short), Arc::new(text)],
    )
    .unwrap();
    let input = dir.path().join("wide.arrow");
    write(&input, Format::Arrow, &batch, 2);

    let out = arrowsmith(&["head", p(&input)]);
    assert_ok_quietly(&out);
    let table = stdout(&out);
    let row = |i: usize| table.lines().nth(3 + i).unwrap().to_string();

    // Row 0's vector: its first three elements, `…` and its last, cut at 32 characters.
    let elements = Float32Array::from(values[..dims].to_vec());
    let shown = ArrayFormatter::try_new(&elements, &FormatOptions::default()).unwrap();
    let full = format!(
        "[{}, {}, {}, …, {}]",
        shown.value(0),
        shown.value(1),
        shown.value(2),
        shown.value(dims - 1)
    );
    let expected: String = if full.chars().count() > 32 {
        full.chars().take(31).chain(['…']).collect()
    } else {
        full
    };
    assert!(row(0).contains(&expected), "{expected} in\n{table}");
    // Four elements are all shown: `…` would hide none of them.
    assert!(row(0).contains("[1, 2, 3, 4]"), "{table}");
    assert!(row(1).contains("null"), "{table}");
    let cut: String = long_text.chars().take(31).chain(['…']).collect();
    assert!(
        row(0).contains(&cut) && !row(0).contains(&long_text),
        "{table}"
    );
    assert!(row(1).contains("short"), "{table}");
    // One line per row, none wider than the three capped cells and their borders.
    assert_eq!(table.lines().count(), 3 + 2 + 1, "{table}");
    assert!(
        table.lines().all(|l| l.chars().count() <= 3 * (32 + 3) + 1),
        "{table}"
    );
}

#[test]
fn a_reader_that_goes_away_ends_a_conversion_to_standard_output_quietly() {
    // The pipe's reading end is closed before the binary writes anything, so its first write
    // meets a closed pipe (EPIPE), whatever the timing.
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_arrowsmith"))
        .args([
            "convert",
            p(&common::data("dataseries/generated/basic-zlib.ds")),
            "-",
            "--to",
            "csv",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    assert_eq!(stderr(&out), "");
}

/// Runs `arrowsmith ARGS...` with its address space capped at `memory` bytes (so that an
/// input whose parts grow without end fails the run instead of the machine), failing the test
/// if it runs longer than `seconds`. Its standard input is `input`, written by a thread until
/// the program stops reading (an endless producer ends with a broken pipe).
fn arrowsmith_capped(
    args: &[&str],
    memory: u64,
    seconds: u64,
    input: impl FnOnce(std::process::ChildStdin) + Send + 'static,
) -> Output {
    use std::os::unix::process::CommandExt;
    use std::process::Stdio;
    let mut command = Command::new(env!("CARGO_BIN_EXE_arrowsmith"));
    command
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // SAFETY: setrlimit is async-signal-safe; nothing else runs between fork and exec.
    unsafe {
        command.pre_exec(move || {
            let limit = libc::rlimit {
                rlim_cur: memory,
                rlim_max: memory,
            };
            if libc::setrlimit(libc::RLIMIT_AS, &limit) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let mut child = command.spawn().unwrap();
    let stdin = child.stdin.take().unwrap();
    std::thread::spawn(move || input(stdin));
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(seconds);
    while child.try_wait().unwrap().is_none() {
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            panic!(
                "{args:?} still ran after {seconds} s; stderr: {}",
                stderr(&out)
            );
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    child.wait_with_output().unwrap()
}

/// Writes `head` then `tail` over and over, until the reader goes away.
fn endless(head: &'static [u8], tail: &'static [u8]) -> impl FnOnce(std::process::ChildStdin) {
    move |mut stdin| {
        use std::io::Write;
        let block = tail.repeat((1 << 16) / tail.len().max(1));
        if stdin.write_all(head).is_ok() {
            while stdin.write_all(&block).is_ok() {}
        }
    }
}

const MEMORY_CAP: u64 = 2 << 30;

#[test]
fn endless_inputs_fail_with_bounded_memory() {
    // /dev/zero is a stream of zeros without a line break: CSV and NDJSON fail at their cap on
    // one record, an Arrow stream reads a zero length as its end (no schema: empty).
    let dir = tempfile::tempdir().unwrap();
    let output = dir.path().join("out.parquet");
    let output = p(&output);
    let zero = "/dev/zero";
    let no_input = |_| {};
    for (from, message) in [
        ("csv", "a CSV record is longer than 256 MiB"),
        ("ndjson", "an NDJSON line is longer than 256 MiB"),
        ("arrows", "the stream is empty"),
    ] {
        let out = arrowsmith_capped(
            &["convert", zero, output, "--from", from],
            MEMORY_CAP,
            120,
            no_input,
        );
        assert_fails(&out, 1, message);
        assert!(stderr(&out).contains(zero), "{}", stderr(&out));
    }
    // The formats that seek are refused on a device before anything is read.
    for (from, extra) in [
        ("jay", None),
        ("filo-vector", Some(["--filo-type", "Long"])),
        ("vs", None),
        ("dataseries", None),
        ("parquet", None),
        ("arrow", None),
    ] {
        let mut args = vec!["convert", zero, output, "--from", from];
        args.extend(extra.iter().flatten());
        let out = arrowsmith_capped(&args, MEMORY_CAP, 30, no_input);
        assert_fails(&out, 2, &format!("{zero}: {from} input is read from a"));
        assert!(
            stderr(&out).contains("character device"),
            "{}",
            stderr(&out)
        );
    }
    // A valid start, then one record that never ends: in the records schema inference reads,
    // and after them, where arrow's reader holds it.
    for (args, head, tail, message) in [
        (
            ["--from", "csv"],
            &b"a,b\n1,2\n"[..],
            &b"3"[..],
            "a CSV record",
        ),
        (
            ["--from", "csv"],
            &b"a,b\n1,2\n1,\""[..],
            &b"a quoted field, line after line\n"[..],
            "a CSV record",
        ),
        (
            ["--from", "ndjson"],
            &b"{\"a\": 1}\n{\"a\": \""[..],
            &b"y"[..],
            "an NDJSON line",
        ),
    ] {
        let out = arrowsmith_capped(
            &["convert", "-", output, args[0], args[1]],
            MEMORY_CAP,
            120,
            endless(head, tail),
        );
        assert_fails(&out, 1, message);
    }
    let many_lines: &'static [u8] = Box::leak(
        std::iter::once(&b"a,b\n"[..])
            .chain(std::iter::repeat_n(&b"1,2\n"[..], 3000))
            .collect::<Vec<_>>()
            .concat()
            .into_boxed_slice(),
    );
    let out = arrowsmith_capped(
        &["convert", "-", output, "--from", "csv"],
        MEMORY_CAP,
        120,
        endless(many_lines, b"4"),
    );
    assert_fails(&out, 1, "a CSV record is longer than 256 MiB");
    assert!(stderr(&out).contains("at byte 12004"), "{}", stderr(&out));
}

/// Runs `arrowsmith ARGS...` while a thread writes `bytes` into the FIFO `fifo` (if any) and
/// closes it; fails the test if the program runs longer than 60 s (a FIFO opened twice waits
/// for a second writer that never comes).
fn arrowsmith_with_fifo(args: &[&str], fifo: &Path, bytes: Option<Vec<u8>>) -> Output {
    if let Some(bytes) = bytes {
        let fifo = fifo.to_path_buf();
        std::thread::spawn(move || {
            use std::io::Write;
            // The open waits for the reader; a reader that stops early breaks the pipe.
            let mut writer = std::fs::OpenOptions::new().write(true).open(&fifo).unwrap();
            let _ = writer.write_all(&bytes);
        });
    }
    common::within_seconds(60, args)
}

#[test]
fn a_fifo_or_device_is_opened_once_and_read_as_a_stream() {
    let dir = tempfile::tempdir().unwrap();
    let batch = plain_batch(3000);
    let mut bytes = std::collections::HashMap::new();
    for name in ["arrows", "csv", "ndjson", "parquet", "jay"] {
        let file = dir.path().join(format!("in.{name}"));
        write(&file, format(name), &batch, 700);
        bytes.insert(name, std::fs::read(&file).unwrap());
    }
    let output = dir.path().join("out.arrow");

    // The Arrow stream recognised by its first bytes (the FIFO has no extension), CSV by the
    // FIFO's extension, NDJSON as named.
    for (fifo_name, from, named) in [
        ("p", "arrows", None),
        ("p.csv", "csv", None),
        ("q", "ndjson", Some("ndjson")),
    ] {
        let fifo = dir.path().join(fifo_name);
        mkfifo(&fifo);
        let mut args = vec!["convert", p(&fifo), p(&output)];
        if let Some(named) = named {
            args.extend(["--from", named]);
        }
        let out = arrowsmith_with_fifo(&args, &fifo, Some(bytes[from].clone()));
        assert_ok_quietly(&out);
        assert_same_values(&batch, &read_one(&output, Format::Arrow), from);
        std::fs::remove_file(&output).unwrap();

        let out = arrowsmith_with_fifo(
            &["head", p(&fifo), "-n", "3", "--from", from],
            &fifo,
            Some(bytes[from].clone()),
        );
        assert!(
            assert_ok_quietly(&out).contains("plain 1"),
            "{}",
            stdout(&out)
        );
        std::fs::remove_file(&fifo).unwrap();
    }

    // Formats that seek: recognised from the FIFO's first bytes and refused, or refused as
    // named before the FIFO is opened (no writer ever comes); inspect refuses any stream.
    for from in ["jay", "parquet"] {
        let fifo = dir.path().join(format!("r-{from}"));
        mkfifo(&fifo);
        let out = arrowsmith_with_fifo(
            &["convert", p(&fifo), p(&output)],
            &fifo,
            Some(bytes[from].clone()),
        );
        assert_fails(
            &out,
            2,
            &format!("{}: {from} input is read from a", p(&fifo)),
        );
        assert!(stderr(&out).contains("a FIFO"), "{}", stderr(&out));
    }
    let fifo = dir.path().join("r");
    mkfifo(&fifo);
    let out = arrowsmith_with_fifo(
        &["convert", p(&fifo), p(&output), "--from", "vs"],
        &fifo,
        None,
    );
    assert_fails(&out, 2, "vs input is read from a regular file");
    let out = arrowsmith_with_fifo(&["inspect", p(&fifo)], &fifo, None);
    assert_fails(&out, 2, "inspect reads a file, and this is a FIFO");
    assert!(!output.exists());

    // /dev/stdin is a stream too, and standard input takes CSV when named.
    let out = arrowsmith_with_stdin(&["convert", "/dev/stdin", p(&output)], &bytes["arrows"]);
    assert_ok_quietly(&out);
    assert_same_values(&batch, &read_one(&output, Format::Arrow), "/dev/stdin");
    std::fs::remove_file(&output).unwrap();
    let out = arrowsmith_with_stdin(
        &["convert", "-", p(&output), "--from", "csv"],
        &bytes["csv"],
    );
    assert_ok_quietly(&out);
    assert_same_values(&batch, &read_one(&output, Format::Arrow), "csv on stdin");
}

#[test]
fn every_streaming_output_ends_quietly_when_its_reader_goes_away() {
    // Far more output than a pipe and the writer's buffer hold, so the writer meets the
    // closed pipe (EPIPE) in the middle of a batch.
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("big.arrows");
    write(&input, Format::ArrowStream, &plain_batch(300_000), 50_000);
    for to in ["csv", "ndjson", "arrows"] {
        let mut child = Command::new(env!("CARGO_BIN_EXE_arrowsmith"))
            .args(["convert", p(&input), "-", "--to", to])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut head = vec![0u8; 1000];
        use std::io::Read;
        child.stdout.take().unwrap().read_exact(&mut head).unwrap();
        let out = child.wait_with_output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{to}: {}", stderr(&out));
        assert_eq!(stderr(&out), "", "{to}");
    }
}
