//! `arrowsmith::inspect`: the report of what a file holds, against the fixtures' own structure
//! and against damage made on purpose.

mod common;

use std::sync::Arc;

use arrow_array::{Int64Array, RecordBatch};
use arrow_schema::{DataType, Field, Schema};
use arrowsmith::inspect::{inspect, inspect_with_progress, known_rows, InspectOptions};
use arrowsmith::{ErrorClass, Format, ReadOptions};
use common::data;

fn verifying() -> InspectOptions {
    InspectOptions {
        verify: true,
        ..Default::default()
    }
}

#[test]
fn test_a_jay_report_gives_the_frame_its_buffers_and_a_verification() {
    let path = data("jay/tiny.jay");
    let report = inspect(&path, &verifying()).unwrap();
    assert_eq!(report.format, Format::Jay);
    assert_eq!(report.rows, Some(3));
    let json = report.to_json();
    assert_eq!(json["file"], path.display().to_string());
    assert_eq!(json["columns"], 2);
    let structure = &json["structure"];
    assert_eq!(structure["nrows"], 3);
    assert_eq!(
        structure["file_size"],
        std::fs::metadata(&path).unwrap().len()
    );
    // Each buffer's offset lies inside the data section, after the 8-byte header.
    let data_end = 8 + structure["data_size"].as_u64().unwrap();
    for column in structure["columns"].as_array().unwrap() {
        let buffer = &column["buffers"]["data"];
        let start = buffer["offset"].as_u64().unwrap();
        assert!(start >= 8 && start + buffer["length"].as_u64().unwrap() <= data_end);
    }
    assert_eq!(
        json["verify"],
        serde_json::json!({"ok": true, "rows": 3, "batches": 1, "error": null, "damaged": []})
    );
    assert!(report.failure().is_none());
    assert!(json.get("notes").is_none());

    let text = report.to_text();
    let first: Vec<&str> = text.lines().next().unwrap().split_whitespace().collect();
    assert_eq!(first, ["file", path.to_str().unwrap()], "{text}");
    assert!(
        text.contains("\njay structure\n  3 rows, 2 columns"),
        "{text}"
    );
    assert!(
        text.ends_with("\nverify: ok, read 3 rows in 1 batch\n"),
        "{text}"
    );
}

#[test]
fn test_without_verification_a_report_reads_no_batch_of_a_format_that_counts_its_rows() {
    let mut passes = 0;
    let report = inspect_with_progress(
        data("jay/tiny.jay"),
        &InspectOptions::default(),
        &mut |_| passes += 1,
    )
    .unwrap();
    assert_eq!(passes, 0);
    assert!(report.verification.is_none());
    assert!(report.to_json().get("verify").is_none());

    // CSV states no row count: every batch is read to count them, and progress hears of each.
    let mut seen = Vec::new();
    let csv = data("dataseries/inputs/basic.csv");
    let report = inspect_with_progress(&csv, &InspectOptions::default(), &mut |rows| {
        seen.push(rows)
    })
    .unwrap();
    let rows = report.rows.unwrap();
    assert!(rows > 0);
    assert_eq!(seen.last(), Some(&rows));
    assert_eq!(report.structure.as_ref().unwrap().rows, None);
    assert_eq!(known_rows(&csv, Format::Csv), None);
}

#[test]
fn test_known_rows_agree_with_the_reports_of_the_formats_that_state_them() {
    for (path, format) in [
        ("jay/all_types.jay", Format::Jay),
        ("filo/set.filo", Format::Filo),
        ("vs/f64_r1_plain.vs", Format::Vs),
        ("bcolz/datasets/ctable_zipline_like", Format::Bcolz),
    ] {
        let path = data(path);
        let report = inspect(&path, &InspectOptions::default()).unwrap();
        assert_eq!(report.format, format);
        assert!(report.rows.unwrap() > 0, "{}", path.display());
        assert_eq!(known_rows(&path, format), report.rows, "{}", path.display());
    }
}

#[test]
fn test_a_file_of_several_extent_types_reports_the_first_and_names_the_setting() {
    let path = data("dataseries/generated/multitype.ds");
    let mut report = inspect(&path, &InspectOptions::default()).unwrap();
    let json = report.to_json();
    let types = json["structure"]["types"].as_array().unwrap();
    assert!(types.len() >= 2, "{json}");
    assert_eq!(report.notes.len(), 1, "{:?}", report.notes);
    assert!(
        report.notes[0].ends_with("(choose with the type option)"),
        "{}",
        report.notes[0]
    );
    // The rows are those of the type the note names, as the structure counts them.
    let named = types
        .iter()
        .find(|t| report.notes[0].contains(&format!("{:?}", t["name"].as_str().unwrap())))
        .unwrap();
    assert_eq!(json["rows"], named["rows"]);

    // A front end spells the setting its own way; the fields keep the library's words.
    report.spell_with(|text| text.replace("the type option", "--type"));
    let note = report.to_json()["notes"][0].as_str().unwrap().to_string();
    assert!(note.ends_with("(choose with --type)"), "{note}");
    assert!(report.to_text().contains(&format!("\nnote: {note}\n")));
    assert!(report.notes[0].ends_with("(choose with the type option)"));

    // Naming the type reports it without a note.
    let mut options = InspectOptions::default();
    options.read.format_options.dataseries.type_name = Some("Test::Basic".to_string());
    let chosen = inspect(&path, &options).unwrap();
    assert!(chosen.notes.is_empty());
    let basic = types.iter().find(|t| t["name"] == "Test::Basic").unwrap();
    assert_eq!(chosen.to_json()["rows"], basic["rows"]);
}

#[test]
fn test_verification_lists_every_damaged_extent_and_keeps_the_error_for_the_caller() {
    let dir = tempfile::tempdir().unwrap();
    let src = data("dataseries/generated/basic-zlib.ds");
    let file = arrowsmith::dataseries::DsFile::open(&src, Default::default()).unwrap();
    let extent = file
        .extents_of("Test::Basic")
        .unwrap()
        .find(|e| e.rows > 0)
        .unwrap()
        .clone();
    let mut bytes = std::fs::read(&src).unwrap();
    bytes[extent.offset as usize + extent.len - 8] ^= 0x5a;
    let path = dir.path().join("damaged.ds");
    std::fs::write(&path, bytes).unwrap();

    // Without verification the structure's own checks do not run: the report is whole.
    let plain = inspect(&path, &InspectOptions::default()).unwrap();
    assert!(plain.structure.is_some() && plain.failure().is_none());

    let report = inspect(&path, &verifying()).unwrap();
    assert!(
        report.structure.is_none(),
        "the structure decodes every extent"
    );
    assert!(report.notes[0].starts_with("the structure could not be read: "));
    let verification = report.verification.as_ref().unwrap();
    assert!(verification.error.is_some());
    assert_eq!(verification.damaged.len(), 1);
    assert_eq!(verification.damaged[0].part, "extent");
    assert_eq!(verification.damaged[0].offset, Some(extent.offset));
    assert_eq!(verification.damaged[0].rows, Some(extent.rows as u64));
    let text = report.to_text();
    assert!(
        text.contains("damaged: 1 part (the salvage option reads the rest)\n  extent "),
        "{text}"
    );
    let failure = report.into_failure().unwrap();
    assert_eq!(failure.class(), ErrorClass::BadValue);
}

#[test]
fn test_damage_that_hides_a_jay_structure_fails_unless_verification_lists_it() {
    let path = data("jay/bad/buffer_out_of_file.jay");
    let error = inspect(&path, &InspectOptions::default()).unwrap_err();
    assert_eq!(error.class(), ErrorClass::BufferOutOfBounds);

    let report = inspect(&path, &verifying()).unwrap();
    assert!(report.structure.is_none());
    assert_eq!(report.schema.field(0).name(), "B");
    assert!(report
        .notes
        .contains(&"the schema is that of the columns salvage can read".to_string()));
    let damaged = &report.verification.as_ref().unwrap().damaged;
    assert_eq!(damaged.len(), 1);
    assert_eq!(damaged[0].column.as_deref(), Some("A"));
    assert_eq!(report.to_json()["structure"], serde_json::Value::Null);
}

#[test]
fn test_a_long_list_of_batches_is_cut_in_the_text_and_whole_in_the_json() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("many.arrow");
    let schema = Arc::new(Schema::new(vec![Field::new("x", DataType::Int64, false)]));
    let mut writer =
        arrowsmith::create(&path, schema.clone(), &arrowsmith::WriteOptions::default()).unwrap();
    for i in 0..60 {
        let column = Int64Array::from(vec![i, i + 1]);
        let batch = RecordBatch::try_new(schema.clone(), vec![Arc::new(column)]).unwrap();
        writer.write(&batch).unwrap();
    }
    writer.finish().unwrap();

    let options = InspectOptions {
        read: ReadOptions::for_format(Format::Arrow),
        verify: true,
    };
    let report = inspect(&path, &options).unwrap();
    assert_eq!(report.rows, Some(120));
    let json = report.to_json();
    assert_eq!(json["structure"]["batches"].as_array().unwrap().len(), 60);
    assert_eq!(json["verify"]["batches"], 60);
    let text = report.to_text();
    assert!(
        text.contains("\n  … and 10 more batches (the JSON report lists them all)\n"),
        "{text}"
    );
    assert_eq!(text.matches("\n     49  ").count(), 1, "{text}");
    assert_eq!(text.matches("\n     50  ").count(), 0, "{text}");
}

#[test]
fn test_a_bare_filo_vector_needs_its_element_type() {
    let path = data("filo/vectors/long_i64.bin");
    let mut options = InspectOptions::default();
    options.read.format = Some(Format::FiloVector);
    let error = inspect(&path, &options).unwrap_err();
    assert_eq!(error.class(), ErrorClass::InvalidArgument);
    assert!(
        error.to_string().contains("the filo_type option"),
        "{error}"
    );

    options.read.format_options.filo.vector_type = Some("Long".parse().unwrap());
    let report = inspect(&path, &options).unwrap();
    let structure = &report.to_json()["structure"];
    assert_eq!(structure["len"], report.rows.unwrap());
    assert!(structure["wire_type"].is_string(), "{structure}");
}
