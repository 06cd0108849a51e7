//! Every key of [`SETTINGS`]: its default, a good value and a bad one, whose error names it.

use super::*;

/// The field a read key sets, as text.
fn read_probe(key: &str, o: &ReadOptions) -> String {
    let f = &o.format_options;
    match key {
        "format" => format!("{:?}", o.format),
        "columns" => format!("{:?}", o.scan.projection),
        "limit" => format!("{:?}", o.scan.limit),
        "batch_size" => format!("{:?}", o.scan.batch_size),
        "salvage" => format!("{} {}", o.scan.salvage, o.scan.report.is_some()),
        "type" => format!("{:?}", f.dataseries.type_name),
        "utf8" => format!("{:?}", f.dataseries.utf8),
        "no_checks" => format!("{}", f.dataseries.no_checks),
        "filo_type" => format!("{:?}", f.filo.vector_type),
        "filo_dictionary" => format!("{}", f.filo.dictionary_strings),
        "lenient_eof" => format!("{:?}", f.vs.parse.eof),
        "varint" => format!("{:?}", f.vs.parse.varint),
        "app_data" => format!("{:?}", f.vs.app_data),
        "max_dataless_rows" => format!("{}", f.jay.max_dataless_rows),
        "nat_as_null" => format!("{}", f.bcolz.nat_as_null),
        "carray_name" => format!("{:?}", f.bcolz.carray_name),
        "read_ahead" => format!("{}", f.bcolz.read_ahead),
        other => panic!("no probe for read key {other}"),
    }
}

/// The field a write key sets, as text.
fn write_probe(key: &str, o: &WriteOptions) -> String {
    match key {
        "format" => format!("{:?}", o.format),
        "mode" | "overwrite" => format!("{:?}", o.mode),
        "no_sync" => format!("{}", o.durable),
        "compression" => format!("{:?}", o.compression),
        "row_group_size" => format!("{:?}", o.row_group_size),
        "sentinel_collisions_as_na" => format!("{:?}", o.jay),
        "type" | "compress_level" | "extent_size" | "xml" => format!("{:?}", o.dataseries),
        "filo_type" | "filo_chunk_size" | "filo_encoding" => format!("{:?}", o.filo),
        "lenient_eof" => format!("{:?}", o.vs),
        k if k.starts_with("bcolz_") => format!("{:?}", o.bcolz),
        other => panic!("no probe for write key {other}"),
    }
}

/// One key's case: (kind, key, the field at its default, a good value, the field after it, a bad
/// value).
type Case = (
    SettingKind,
    &'static str,
    &'static str,
    &'static str,
    &'static str,
    Option<&'static str>,
);

const CASES: &[Case] = {
    use SettingKind::{Read as R, Write as W};
    &[
        (R, "format", "None", "bcolz", "Some(Bcolz)", Some("zip")),
        (
            R,
            "columns",
            "None",
            "a,b",
            "Some(Names([\"a\", \"b\"]))",
            None,
        ),
        (R, "limit", "None", "0", "Some(0)", Some("-1")),
        (R, "batch_size", "None", "10", "Some(10)", Some("0")),
        (
            R,
            "salvage",
            "false false",
            "true",
            "true true",
            Some("maybe"),
        ),
        (
            R,
            "type",
            "None",
            "Trace::NFS",
            "Some(\"Trace::NFS\")",
            None,
        ),
        (R, "utf8", "Hinted", "a,b", "Named([\"a\", \"b\"])", None),
        (R, "no_checks", "false", "true", "true", Some("2")),
        (R, "filo_type", "None", "Long", "Some(Long)", Some("long")),
        (R, "filo_dictionary", "false", "yes", "true", Some("y")),
        (
            R,
            "lenient_eof",
            "Strict",
            "true",
            "Lenient",
            Some("lenient"),
        ),
        (R, "varint", "Leb128", "msb-first", "MsbFirst", Some("msb")),
        (R, "app_data", "Json", "msgpack", "Msgpack", Some("bson")),
        (R, "max_dataless_rows", "4294967296", "5", "5", Some("five")),
        (R, "nat_as_null", "true", "false", "false", Some("nat")),
        (R, "carray_name", "None", "x", "Some(\"x\")", None),
        (R, "read_ahead", "2", "0", "0", Some("-2")),
        (W, "format", "None", "parquet", "Some(Parquet)", Some("xls")),
        (W, "mode", "Error", "append", "Append", Some("replace")),
        (W, "overwrite", "Error", "true", "Overwrite", Some("sure")),
        (W, "no_sync", "true", "true", "false", Some("off")),
        (W, "compression", "None", "zstd:9", "Some(\"zstd:9\")", None),
        (W, "row_group_size", "None", "100", "Some(100)", Some("0")),
        (
            W,
            "sentinel_collisions_as_na",
            "",
            "true",
            "sentinel_collisions: AsNull",
            Some("na"),
        ),
        (W, "type", "", "T", "type_name: Some(\"T\")", None),
        (
            W,
            "compress_level",
            "",
            "9",
            "level: 9, level_given: true",
            Some("10"),
        ),
        (
            W,
            "extent_size",
            "",
            "4096",
            "extent_size: 4096",
            Some("big"),
        ),
        (
            W,
            "xml",
            "",
            "Cargo.toml",
            "xml: Some(\"[",
            Some("no/such/file.xml"),
        ),
        (
            W,
            "filo_type",
            "",
            "Double",
            "vector_type: Some(Double)",
            Some("double"),
        ),
        (W, "filo_chunk_size", "", "7", "chunk_size: 7", Some("0")),
        (
            W,
            "filo_encoding",
            "",
            "dict",
            "hint: DictionaryEncoding",
            Some("rle"),
        ),
        (W, "lenient_eof", "", "true", "lenient_eof: true", Some("t")),
        (
            W,
            "bcolz_nulls_as_nan",
            "",
            "true",
            "null_policy: Sentinel",
            Some("nan"),
        ),
        (
            W,
            "bcolz_chunklen",
            "",
            "1000",
            "chunklen: Some(1000)",
            Some("0"),
        ),
        (W, "bcolz_shuffle", "", "2", "shuffle: Bit", Some("7")),
        (
            W,
            "bcolz_carray",
            "",
            "true",
            "kind: Some(Carray)",
            Some("one"),
        ),
        (
            W,
            "bcolz_no_sync",
            "",
            "true",
            "durable: false",
            Some("fast"),
        ),
    ]
};

#[test]
fn test_every_key_has_a_case_and_every_case_a_key() {
    for s in SETTINGS.iter().filter(|s| !s.is_storage()) {
        assert!(
            CASES.iter().any(|c| c.0 == s.kind && c.1 == s.key),
            "no test case for the {} setting {}",
            s.kind.name(),
            s.key
        );
        assert!(!s.doc.is_empty() && !s.default.is_empty(), "{}", s.key);
    }
    for case in CASES {
        assert!(
            setting(case.0, case.1).is_some(),
            "{} is not in SETTINGS",
            case.1
        );
    }
}

#[test]
fn test_every_key_has_its_default_takes_a_good_value_and_names_itself_on_a_bad_one() {
    for &(kind, key, default, good, after, bad) in CASES {
        let (before, set, failed) = match kind {
            SettingKind::Read => {
                let mut o = ReadOptions::default();
                let before = read_probe(key, &o);
                o.set(key, good)
                    .unwrap_or_else(|e| panic!("{key}={good}: {e}"));
                let failed = bad.map(|bad| ReadOptions::default().set(key, bad).unwrap_err());
                (before, read_probe(key, &o), failed)
            }
            SettingKind::Write => {
                let mut o = WriteOptions::default();
                let before = write_probe(key, &o);
                o.set(key, good)
                    .unwrap_or_else(|e| panic!("{key}={good}: {e}"));
                let failed = bad.map(|bad| WriteOptions::default().set(key, bad).unwrap_err());
                (before, write_probe(key, &o), failed)
            }
        };
        if !default.is_empty() {
            assert_eq!(before, default, "the default of {key}");
        }
        assert!(set.contains(after), "{key}={good}: {set} lacks {after}");
        assert_ne!(before, set, "{key}={good} changed nothing");
        if let Some(e) = failed {
            assert_eq!(e.setting(), Some(key), "{e}");
            assert_eq!(e.class(), crate::ErrorClass::InvalidArgument, "{e}");
            assert!(e.to_string().contains(&format!("the {key} option")), "{e}");
        }
    }
}

#[test]
fn test_an_unknown_key_lists_the_valid_ones() {
    let e = ReadOptions::default().set("nope", "1").unwrap_err();
    assert!(e.message().contains("\"nope\""), "{e}");
    assert!(
        e.message().contains("varint") && e.message().contains("nat_as_null"),
        "{e}"
    );
    let e = WriteOptions::default().set("varint", "leb128").unwrap_err();
    assert!(
        e.message().contains("unknown write setting \"varint\""),
        "{e}"
    );
}

#[test]
fn test_a_key_of_another_format_is_refused_by_name() {
    let mut read = ReadOptions::for_format(Format::Jay);
    let e = read.set_all([("varint", "leb128")]).unwrap_err();
    assert_eq!(e.setting(), Some("varint"));
    assert!(
        e.to_string().contains("applies to vs input, not jay"),
        "{e}"
    );
    let spelled = e.to_string_spelled(|key, _| format!("--{key}"));
    assert!(
        spelled.contains("--varint applies to vs input"),
        "{spelled}"
    );
}

#[test]
fn test_overwrite_is_the_boolean_spelling_of_mode() {
    let mut o = WriteOptions::default();
    o.set("overwrite", "true").unwrap();
    assert_eq!(o.mode, WriteMode::Overwrite);
    o.set("overwrite", "false").unwrap();
    assert_eq!(o.mode, WriteMode::Error);
    o.set("mode", "append").unwrap();
    o.set("overwrite", "false").unwrap();
    assert_eq!(o.mode, WriteMode::Append);
}

#[test]
fn test_append_applies_to_vs_and_bcolz_and_always_flushes() {
    let mut o = WriteOptions::default();
    o.set("mode", "append").unwrap();
    assert!(crate::dispatch::check_write(&o, Format::Vs).is_ok());
    let e = crate::dispatch::check_write(&o, Format::Parquet).unwrap_err();
    assert_eq!(e.setting(), Some("mode"), "{e}");
    o.set("bcolz_no_sync", "true").unwrap();
    let e = crate::dispatch::check_write(&o, Format::Bcolz).unwrap_err();
    assert_eq!(e.setting(), Some("bcolz_no_sync"), "{e}");
}

#[test]
fn test_compression_is_checked_by_the_output_format() {
    let mut o = WriteOptions::default();
    o.set("compression", "lzo").unwrap();
    assert!(crate::dispatch::check_write(&o, Format::DataSeries).is_ok());
    let e = crate::dispatch::check_write(&o, Format::Parquet).unwrap_err();
    assert_eq!(e.setting(), Some("compression"), "{e}");
    let e = crate::dispatch::check_write(&o, Format::Jay).unwrap_err();
    assert!(
        e.to_string().contains("applies to parquet, arrow, arrows"),
        "{e}"
    );
}

/// A key of each storage row: the row's own, or one of its family's.
fn storage_key(row: &Setting) -> String {
    match row.key.strip_suffix('*') {
        Some(prefix) => format!("{prefix}some_key"),
        None => row.key.to_owned(),
    }
}

#[test]
fn test_every_storage_key_sets_the_storage_options_on_both_sides() {
    let rows: Vec<&Setting> = SETTINGS.iter().filter(|s| s.is_storage()).collect();
    assert_eq!(rows.len(), 2 * (3 + STORAGE_CLIENT_KEYS.len()));
    for row in rows {
        let key = storage_key(row);
        assert_eq!(setting(row.kind, &key), Some(row), "{key}");
        let stored = match row.kind {
            SettingKind::Read => {
                let mut o = ReadOptions::default();
                o.set(&key, "v1").unwrap();
                o.storage
            }
            SettingKind::Write => {
                let mut o = WriteOptions::default();
                o.set(&key, "v1").unwrap();
                o.storage
            }
        };
        assert_eq!(stored.get(&key), Some("v1"), "{key}");
        assert!(row.applies_to(Format::Jay) && row.applies_to(Format::Parquet));
    }
    // A conversion's input and output may both be URLs: set_either sets both sides.
    let (mut read, mut write) = (
        ReadOptions::for_format(Format::Jay),
        WriteOptions::default(),
    );
    set_either(&mut read, &mut write, "aws_region", "eu-west-1").unwrap();
    assert_eq!(read.storage.get("aws_region"), Some("eu-west-1"));
    assert_eq!(write.storage.get("aws_region"), Some("eu-west-1"));
}

#[test]
fn test_a_storage_value_is_never_shown() {
    const SECRET: &str = "wJalrXUtnFEMI-never-shown";
    let mut read = ReadOptions::default();
    let mut write = WriteOptions::default();
    for key in [
        "aws_secret_access_key",
        "azure_storage_account_key",
        "proxy_url",
    ] {
        read.set(key, SECRET).unwrap();
        write.set(key, SECRET).unwrap();
    }
    let shown = format!("{read:?} {write:?}");
    assert!(!shown.contains(SECRET), "{shown}");
    assert!(shown.contains("aws_secret_access_key"), "{shown}");
    // A family's name is no key; a key that is no setting is refused: by name, not value.
    for (key, what) in [("aws_*", "names a family"), ("aws", "unknown read setting")] {
        let e = ReadOptions::default().set(key, SECRET).unwrap_err();
        let text = format!("{e} {e:?}");
        assert!(text.contains(what) && !text.contains(SECRET), "{text}");
    }
    let e = check_applies(SettingKind::Read, "s3_secret", Format::Jay).unwrap_err();
    assert!(e.to_string().contains("remote storage's"), "{e}");
}

#[test]
fn test_compress_level_wins_over_a_level_in_compression_whichever_is_set_first() {
    let settings = [("compression", "zlib:3"), ("compress_level", "8")];
    for order in [[0, 1], [1, 0]] {
        let mut o = WriteOptions::default();
        o.set_all(order.map(|i| settings[i])).unwrap();
        let ds = format!("{:?}", o.dataseries_writer().unwrap());
        assert!(ds.contains("modes: [Zlib], level: 8,"), "{order:?}: {ds}");
    }
    let mut o = WriteOptions::default();
    o.set("compression", "best").unwrap();
    let ds = format!("{:?}", o.dataseries_writer().unwrap());
    assert!(ds.contains("Lz4Hc], level: 9,"), "{ds}");
    o.set("compression", "lzo").unwrap();
    let ds = format!("{:?}", o.dataseries_writer().unwrap());
    assert!(ds.contains("modes: [Lzo], level: 6,"), "{ds}");
}

#[test]
fn test_the_common_write_settings_complete_each_formats_writer_options() {
    let mut o = WriteOptions::default();
    o.set_all([
        ("no_sync", "true"),
        ("mode", "overwrite"),
        ("compression", "zstd:7"),
    ])
    .unwrap();
    let bcolz = format!("{:?}", o.bcolz_writer().unwrap());
    assert!(bcolz.contains("codec: Zstd, clevel: 7,"), "{bcolz}");
    assert!(
        bcolz.contains("overwrite: true,") && bcolz.contains("durable: false"),
        "{bcolz}"
    );
    let filo = format!("{:?}", o.filo_writer());
    assert!(filo.contains("overwrite: true, durable: false"), "{filo}");
    assert!(format!("{:?}", o.jay_writer()).contains("durable: false"));
    o.set("compression", "snappy").unwrap();
    let vs = format!("{:?}", o.vs_writer().unwrap());
    assert!(
        vs.contains("compression: Some(Snappy)") && vs.contains("durable: false"),
        "{vs}"
    );
    o.set("compression", "zstd:10").unwrap();
    let e = o.bcolz_writer().unwrap_err();
    assert_eq!(e.setting(), Some("compression"), "{e}");
}

/// The reference tables of docs/settings.md, rendered from [`SETTINGS`]: the formats'
/// settings, and those of remote storage, which are each a read and a write setting.
fn markdown() -> [String; 2] {
    let mut text = String::from(
        "| key | kind | applies to | values | default | meaning |\n|---|---|---|---|---|---|\n",
    );
    for s in SETTINGS.iter().filter(|s| !s.is_storage()) {
        text.push_str(&format!(
            "| `{}` | {} | {} | {} | {} | {} |\n",
            s.key,
            s.kind.name(),
            s.format_names(),
            s.values.replace('|', "\\|"),
            s.default,
            s.doc
        ));
    }
    let mut storage = String::from("| storage key | default | meaning |\n|---|---|---|\n");
    for s in SETTINGS
        .iter()
        .filter(|s| s.is_storage() && s.kind == SettingKind::Read)
    {
        storage.push_str(&format!("| `{}` | {} | {} |\n", s.key, s.default, s.doc));
    }
    [text, storage]
}

/// docs/settings.md holds the table as [`SETTINGS`] has it: a key added, changed or removed
/// fails here until the reference says so.
#[test]
fn test_the_settings_reference_lists_every_setting() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/settings.md");
    let doc = std::fs::read_to_string(path).unwrap_or_default();
    let tables = markdown();
    if !tables.iter().all(|table| doc.contains(table)) {
        let expected = concat!(env!("CARGO_MANIFEST_DIR"), "/target/settings-table.md");
        let _ = std::fs::write(expected, tables.join("\n"));
        panic!("docs/settings.md lacks the current tables of SETTINGS; they are in {expected}");
    }
    for s in SETTINGS.iter().filter(|s| !s.is_storage()) {
        assert!(
            doc.contains(&format!("| `{}` | {} |", s.key, s.kind.name())),
            "{}",
            s.key
        );
    }
    for s in SETTINGS.iter().filter(|s| s.is_storage()) {
        let write = setting(SettingKind::Write, s.key);
        assert_eq!(write.map(|w| (w.default, w.doc)), Some((s.default, s.doc)));
    }
}
