//! Salvage: from every damaged fixture, and from files damaged here in known ways, a
//! salvaging read yields exactly the rows and columns that are intact, equal to the undamaged
//! original's, and names every part it skipped.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow::compute::concat_batches;
use arrow_array::{ArrayRef, Int32Array, Int64Array, RecordBatch, RecordBatchReader, StringArray};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use arrowsmith::{bcolz, dataseries, filo, jay, vs, ErrorClass, ReadOptions, SalvageReport};

fn data() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("data")
}

/// Every batch of a reader in one batch, or the first error.
fn read_all(reader: impl RecordBatchReader) -> arrowsmith::Result<RecordBatch> {
    let schema = reader.schema();
    let batches = reader
        .collect::<Result<Vec<_>, _>>()
        .map_err(arrowsmith::Error::from)?;
    Ok(concat_batches(&schema, &batches)?)
}

/// A salvaging read through the format-independent entry point: the rows and what was
/// skipped.
fn salvage(path: &Path) -> arrowsmith::Result<(RecordBatch, Vec<arrowsmith::Skipped>)> {
    let report = SalvageReport::new();
    let reader = arrowsmith::open(path, &ReadOptions::default().with_salvage(report.clone()))?;
    let batch = read_all(reader)?;
    Ok((batch, report.take()))
}

/// Rows `ranges` of `batch`, in order, as one batch.
fn rows_of(batch: &RecordBatch, ranges: &[std::ops::Range<usize>]) -> RecordBatch {
    let parts: Vec<RecordBatch> = ranges
        .iter()
        .map(|r| batch.slice(r.start, r.end - r.start))
        .collect();
    concat_batches(&batch.schema(), &parts).unwrap()
}

fn without_columns(batch: &RecordBatch, dropped: &[&str]) -> RecordBatch {
    let keep: Vec<usize> = (0..batch.num_columns())
        .filter(|&i| !dropped.contains(&batch.schema().field(i).name().as_str()))
        .collect();
    batch.project(&keep).unwrap()
}

fn temp_copy(src: &Path) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let dst = dir.path().join(src.file_name().unwrap());
    copy_recursively(src, &dst);
    (dir, dst)
}

fn copy_recursively(src: &Path, dst: &Path) {
    if src.is_dir() {
        std::fs::create_dir_all(dst).unwrap();
        for entry in std::fs::read_dir(src).unwrap() {
            let entry = entry.unwrap();
            copy_recursively(&entry.path(), &dst.join(entry.file_name()));
        }
    } else {
        std::fs::copy(src, dst).unwrap();
        let mut perms = std::fs::metadata(dst).unwrap().permissions();
        #[allow(clippy::permissions_set_readonly_false)]
        perms.set_readonly(false);
        std::fs::set_permissions(dst, perms).unwrap();
    }
}

// ---- Jay: a damaged column is dropped and named; the others read in full ----

/// The damaged Jay fixtures (data/jay/manifest.json) whose damage is confined to columns: the
/// file each was made from and the columns the damage touches (from the manifest's
/// description and reference message).
const JAY_COLUMN_DAMAGE: &[(&str, &str, &[&str])] = &[
    ("buffer_out_of_file", "tiny", &["A"]),
    ("buffer_into_meta", "tiny", &["A"]),
    ("buffer_length_wraps", "tiny", &["A"]),
    ("buffer_offset_unaligned", "tiny", &["A"]),
    ("buffer_too_short", "tiny", &["A"]),
    ("stype_int32_as_int64", "tiny", &["A"]),
    ("int_validity_overlaps_data", "tiny", &["A"]),
    ("unknown_stype_14", "tiny", &["A"]),
    ("col0_nrows_2", "tiny", &["A"]),
    ("data_section_cut", "tiny", &["B"]),
    ("str_offsets_len_plus4", "tiny", &["B"]),
    ("str_offset_beyond_strdata", "tiny", &["B"]),
    ("str_offsets_decreasing", "tiny", &["B"]),
    ("str_invalid_utf8", "tiny", &["B"]),
    ("bool8_value_2", "all_types", &["b8"]),
    ("array_offsets_beyond_child", "arrays", &["ai"]),
];

/// Damaged Jay fixtures where every column is damaged (nothing to salvage) or the damage is
/// to the whole file (the envelope, the meta record, the keys): salvage fails as a plain read.
const JAY_NOTHING_TO_SALVAGE: &[&str] = &[
    "size_23",
    "truncated_half",
    "first_bytes_XAY1",
    "last_bytes_1JAX",
    "version_JAY2",
    "header_nonzero_pad",
    "meta_size_too_big",
    "meta_size_huge",
    "meta_size_not_mult8",
    "file_size_not_mult8",
    "meta_size_minus_8",
    "meta_size_plus_8",
    "meta_garbage",
    "missing_columns",
    "name_invalid_utf8",
    "nkeys_5_of_2",
    "nkeys_negative",
];

#[test]
fn every_jay_fixture_with_damaged_columns_salvages_exactly_the_intact_columns() {
    for &(bad, base, damaged) in JAY_COLUMN_DAMAGE {
        let path = data().join(format!("jay/bad/{bad}.jay"));
        let original = read_all(
            jay::ReaderBuilder::new()
                .build(data().join(format!("jay/{base}.jay")))
                .unwrap(),
        )
        .unwrap();
        let (got, skipped) = salvage(&path).unwrap_or_else(|e| panic!("{bad}: {e}"));
        let want = without_columns(&original, damaged);
        assert_eq!(got.schema().fields(), want.schema().fields(), "{bad}");
        assert_eq!(got.columns(), want.columns(), "{bad}");
        assert_eq!(got.num_rows(), original.num_rows(), "{bad}");
        let named: Vec<&str> = skipped
            .iter()
            .map(|s| {
                assert_eq!(s.part, "column", "{bad}: {s}");
                s.column.as_deref().unwrap()
            })
            .collect();
        assert_eq!(named, damaged, "{bad}");
        // The report says where: the column's position in the file.
        let position = original.schema().index_of(damaged[0]).unwrap() as u64;
        assert_eq!(skipped[0].index, Some(position), "{bad}");
        // Without salvage the same file is an error, as before.
        let strict = jay::ReaderBuilder::new()
            .build(&path)
            .and_then(|r| read_all(r).map(|_| ()));
        assert!(strict.is_err(), "{bad} reads without salvage");
    }
}

#[test]
fn jay_fixtures_with_whole_file_damage_or_every_column_damaged_salvage_nothing() {
    for bad in JAY_NOTHING_TO_SALVAGE {
        let path = data().join(format!("jay/bad/{bad}.jay"));
        assert!(salvage(&path).is_err(), "{bad}");
    }
    // Every column damaged: the frame opens, but no column and so no row is given.
    for bad in [
        "frame_nrows_4",
        "nrows_overflow",
        "missing_buffers",
        "missing_name",
    ] {
        let path = data().join(format!("jay/bad/{bad}.jay"));
        let (got, skipped) = salvage(&path).unwrap_or_else(|e| panic!("{bad}: {e}"));
        assert_eq!((got.num_columns(), got.num_rows()), (0, 0), "{bad}");
        assert_eq!(skipped.len(), 2, "{bad}: {skipped:?}");
    }
}

#[test]
fn a_jay_projection_by_index_counts_the_files_columns_when_one_is_dropped() {
    let path = data().join("jay/bad/bool8_value_2.jay");
    let original = read_all(
        jay::ReaderBuilder::new()
            .build(data().join("jay/all_types.jay"))
            .unwrap(),
    )
    .unwrap();
    let reader = jay::ReaderBuilder::new()
        .with_salvage(true)
        .with_projection(vec![2usize, 0, 1])
        .build(&path)
        .unwrap();
    let report = reader.salvage_report().clone();
    let got = read_all(reader).unwrap();
    assert_eq!(got.columns(), original.project(&[2, 1]).unwrap().columns());
    assert_eq!(report.skipped()[0].column.as_deref(), Some("b8"));
}

// ---- DataSeries: a damaged extent is skipped; the others read ----

/// Offsets of the data extents of `type_name`, and the rows of each, in file order.
fn ds_extents(path: &Path, type_name: &str) -> Vec<(u64, usize, usize)> {
    let file = dataseries::DsFile::open(path, Default::default()).unwrap();
    file.extents_of(type_name)
        .unwrap()
        .filter(|e| e.rows > 0)
        .map(|e| (e.offset, e.len, e.rows))
        .collect()
}

fn ds_row_ranges(
    extents: &[(u64, usize, usize)],
    keep: impl Fn(usize) -> bool,
) -> Vec<std::ops::Range<usize>> {
    let mut start = 0;
    let mut ranges = Vec::new();
    for (i, &(_, _, rows)) in extents.iter().enumerate() {
        if keep(i) {
            ranges.push(start..start + rows);
        }
        start += rows;
    }
    ranges
}

#[test]
fn a_dataseries_extent_with_a_flipped_byte_is_skipped_and_the_others_read() {
    for name in ["basic-zlib", "basic-none", "nullcompact"] {
        let src = data().join(format!("dataseries/generated/{name}.ds"));
        let type_name = if name == "nullcompact" {
            "Test::NullCompact"
        } else {
            "Test::Basic"
        };
        let original = read_all(dataseries::ReaderBuilder::new().build(&src).unwrap()).unwrap();
        let extents = ds_extents(&src, type_name);
        assert!(extents.len() >= 3, "{name}");
        let (dir, path) = temp_copy(&src);
        let mut bytes = std::fs::read(&path).unwrap();
        // The middle of the second extent's body: its checksum no longer matches.
        let (offset, len, rows) = extents[1];
        bytes[offset as usize + len - 8] ^= 0x5a;
        std::fs::write(&path, &bytes).unwrap();

        let (got, skipped) = salvage(&path).unwrap();
        assert_eq!(
            got,
            rows_of(&original, &ds_row_ranges(&extents, |i| i != 1)),
            "{name}"
        );
        assert_eq!(skipped.len(), 1, "{name}: {skipped:?}");
        let s = &skipped[0];
        assert_eq!(
            (s.part.as_str(), s.offset, s.rows, s.index),
            ("extent", Some(offset), Some(rows as u64), Some(1))
        );
        assert_eq!(s.reason.file(), Some(path.as_path()));
        drop(dir);
    }
}

#[test]
fn a_cut_dataseries_file_salvages_the_extents_before_the_cut() {
    let src = data().join("dataseries/generated/basic-lz4.ds");
    let original = read_all(dataseries::ReaderBuilder::new().build(&src).unwrap()).unwrap();
    let extents = ds_extents(&src, "Test::Basic");
    let (_dir, path) = temp_copy(&src);
    let bytes = std::fs::read(&path).unwrap();
    // Cut in the middle of the third extent: its header is whole, its body is not.
    let (offset, len, rows) = extents[2];
    std::fs::write(&path, &bytes[..offset as usize + len / 2]).unwrap();

    let (got, skipped) = salvage(&path).unwrap();
    assert_eq!(got, rows_of(&original, &ds_row_ranges(&extents, |i| i < 2)));
    let parts: Vec<(&str, Option<u64>)> =
        skipped.iter().map(|s| (s.part.as_str(), s.rows)).collect();
    // The lost index (no rows of its own) and the cut extent, with its rows.
    assert_eq!(parts, [("index", Some(0)), ("extent", Some(rows as u64))]);
    assert_eq!(skipped[1].offset, Some(offset));
    // The extents after the cut are gone with it; nothing says how many there were.
    let strict = dataseries::ReaderBuilder::new().build(&path);
    assert!(strict.is_err());
}

#[test]
fn a_big_endian_dataseries_file_salvages_like_its_little_endian_twin() {
    for order in ["le", "be"] {
        let src = data().join(format!("dataseries/bigendian/{order}-basic-zlib.ds"));
        let extents = ds_extents(&src, "Test::Basic");
        let (_dir, path) = temp_copy(&src);
        let mut bytes = std::fs::read(&path).unwrap();
        let (offset, len, rows) = extents[0];
        bytes[offset as usize + len - 8] ^= 0xff;
        std::fs::write(&path, &bytes).unwrap();
        let (got, skipped) = salvage(&path).unwrap();
        let lost: u64 = skipped.iter().filter_map(|s| s.rows).sum();
        assert_eq!((got.num_rows(), lost), (0, rows as u64), "{order}");
    }
}

fn upstream_dataseries() -> Option<PathBuf> {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/fixtures/dataseries/upstream");
    if p.is_dir() {
        Some(p)
    } else {
        eprintln!(
            "SKIPPED: upstream DataSeries files not found at {}",
            p.display()
        );
        None
    }
}

#[test]
fn the_upstream_damaged_dataseries_files_salvage_every_intact_extent() {
    let Some(up) = upstream_dataseries() else {
        return;
    };
    let original_path = up.join("nfs-2.set-0.ip.ds");
    let type_name = "Trace::Network::IP";
    let read = |path: &Path| {
        let report = SalvageReport::new();
        let reader = dataseries::ReaderBuilder::new()
            .with_type(type_name)
            .with_salvage(true)
            .with_salvage_report(report.clone())
            .build(path)
            .unwrap();
        (read_all(reader).unwrap(), report.take())
    };
    let original = read_all(
        dataseries::ReaderBuilder::new()
            .with_type(type_name)
            .build(&original_path)
            .unwrap(),
    )
    .unwrap();
    let extents = ds_extents(&original_path, type_name);

    // 100 zeros at offset 50 000: exactly the extent holding that offset is lost.
    let (got, skipped) = read(&up.join("corrupt-100-zeros-at-50K.ds"));
    let hit = extents
        .iter()
        .position(|&(o, len, _)| (o..o + len as u64).contains(&50_000))
        .unwrap();
    assert_eq!(
        got,
        rows_of(&original, &ds_row_ranges(&extents, |i| i != hit))
    );
    assert_eq!(skipped.len(), 1);
    assert_eq!(skipped[0].offset, Some(extents[hit].0));
    assert_eq!(
        skipped[0].reason.class(),
        ErrorClass::BadValue,
        "{}",
        skipped[0]
    );

    // The last 100 bytes stomped: index and trailer lost, every data extent before them read.
    let (got, skipped) = read(&up.join("corrupt-stomp-end.ds"));
    let whole: Vec<usize> = (0..extents.len())
        .filter(|&i| extents[i].0 + extents[i].1 as u64 <= 83_304 - 100)
        .collect();
    assert_eq!(
        got,
        rows_of(&original, &ds_row_ranges(&extents, |i| whole.contains(&i)))
    );
    assert_eq!(got.num_rows(), 19_684);
    assert!(skipped.iter().any(|s| s.part == "index"), "{skipped:?}");
}

// ---- bcolz: a damaged chunk's rows are skipped in every column ----

fn int_batch(rows: i64) -> RecordBatch {
    let schema: SchemaRef = Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new("half", DataType::Int32, false),
        Field::new("name", DataType::Utf8, false),
    ]));
    let ids: ArrayRef = Arc::new(Int64Array::from_iter_values(0..rows));
    let halves: ArrayRef = Arc::new(Int32Array::from_iter_values(
        (0..rows).map(|i| (i / 2) as i32),
    ));
    let names: ArrayRef = Arc::new(StringArray::from_iter_values(
        (0..rows).map(|i| format!("n{i}")),
    ));
    RecordBatch::try_new(schema, vec![ids, halves, names]).unwrap()
}

#[test]
fn a_damaged_bcolz_chunk_costs_its_rows_in_every_column() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.bcolz");
    let original = int_batch(5_500);
    let mut writer = bcolz::Writer::try_new(
        &path,
        original.schema(),
        bcolz::WriterOptions::default().with_chunklen(1_000),
    )
    .unwrap();
    writer.write(&original).unwrap();
    writer.finish().unwrap();

    // Chunk 1 of `half` cut short, chunk 3 of `name` deleted, chunk 4 of `id` with a Blosc
    // header that no longer adds up.
    let chunk = |column: &str, k: usize| path.join(column).join(format!("data/__{k}.blp"));
    let cut = std::fs::read(chunk("half", 1)).unwrap();
    std::fs::write(chunk("half", 1), &cut[..cut.len() / 2]).unwrap();
    std::fs::remove_file(chunk("name", 3)).unwrap();
    let mut header = std::fs::read(chunk("id", 4)).unwrap();
    header[16 + 4..16 + 8].copy_from_slice(&7u32.to_le_bytes()); // nbytes
    std::fs::write(chunk("id", 4), &header).unwrap();

    for batch_size in [300, 1_000, 4_096] {
        for read_ahead in [0, 2] {
            let reader = bcolz::ReaderBuilder::new()
                .with_salvage(true)
                .with_batch_size(batch_size)
                .with_read_ahead(read_ahead)
                .build(&path)
                .unwrap();
            let report = reader.salvage_report().clone();
            let got = read_all(reader).unwrap();
            let want = rows_of(&original, &[0..1_000, 2_000..3_000, 5_000..5_500]);
            assert_eq!(
                got.columns(),
                want.columns(),
                "batch size {batch_size}, read-ahead {read_ahead}"
            );
            let mut skipped: Vec<(String, u64, u64)> = report
                .take()
                .into_iter()
                .map(|s| (s.column.unwrap(), s.index.unwrap(), s.rows.unwrap()))
                .collect();
            skipped.sort_by_key(|s| s.1);
            assert_eq!(
                skipped,
                [
                    ("half".into(), 1, 1_000),
                    ("name".into(), 3, 1_000),
                    ("id".into(), 4, 1_000)
                ]
            );
        }
    }
    // A fragment of rows 2 000..4 000 loses only what lies in it.
    let reader = bcolz::ReaderBuilder::new()
        .with_salvage(true)
        .with_range(arrowsmith::FragmentRange::Rows {
            start: 2_000,
            end: 4_000,
        })
        .build(&path)
        .unwrap();
    assert_eq!(
        read_all(reader).unwrap().columns(),
        original.slice(2_000, 1_000).columns()
    );
    // Without salvage, the first damaged chunk fails the read.
    let strict = read_all(bcolz::ReaderBuilder::new().build(&path).unwrap());
    assert!(strict.is_err());
}

#[test]
fn a_damaged_chunk_of_a_bcolz_fixture_is_skipped() {
    // cp_lz4_sh1: a carray of 40 000 int32 in chunks of 16 384 (two full, one leftover).
    let src = data().join("bcolz/datasets/cp_lz4_sh1");
    let original = read_all(bcolz::ReaderBuilder::new().build(&src).unwrap()).unwrap();
    let (_dir, path) = temp_copy(&src);
    let chunk = path.join("data/__0.blp");
    let mut bytes = std::fs::read(&chunk).unwrap();
    bytes[0] = b'X'; // not "blpk"
    std::fs::write(&chunk, &bytes).unwrap();
    let (got, skipped) = salvage(&path).unwrap();
    assert_eq!(got, original.slice(16_384, 40_000 - 16_384));
    assert_eq!(skipped.len(), 1);
    assert_eq!((skipped[0].index, skipped[0].rows), (Some(0), Some(16_384)));
    assert_eq!(skipped[0].reason.class(), ErrorClass::BadSignature);
}

// ---- Filo set: a damaged chunk is skipped in every column ----

#[test]
fn a_damaged_filo_chunk_is_skipped_and_the_other_chunks_read() {
    let src = data().join("filo/set.filo");
    let original = read_all(filo::ReaderBuilder::new().build(&src).unwrap()).unwrap();
    let (_dir, path) = temp_copy(&src);
    let file = path.join("chunk-00000/0.bin");
    let bytes = std::fs::read(&file).unwrap();
    std::fs::write(&file, &bytes[..bytes.len() / 2]).unwrap();
    let (got, skipped) = salvage(&path).unwrap();
    assert_eq!(got, original.slice(5, 5));
    assert_eq!(skipped.len(), 1);
    assert_eq!(
        (skipped[0].part.as_str(), skipped[0].index, skipped[0].rows),
        ("chunk", Some(0), Some(5))
    );
}

// ---- VS: a damaged point block is one row; past a broken header, the rest ----

fn vs_points(path: &Path) -> Vec<(u64, usize)> {
    let file = vs::VsFile::open(path, Default::default()).unwrap();
    let d = file.describe(usize::MAX).unwrap();
    d.blocks
        .iter()
        .filter(|b| b.kind == b'P')
        .map(|b| (b.offset, b.length as usize))
        .collect()
}

#[test]
fn a_vs_point_whose_payload_is_damaged_is_skipped_and_the_others_read() {
    for name in ["f64_r1_plain", "i16_r2_gzip", "string_r1"] {
        let src = data().join(format!("vs/{name}.vs"));
        let original = read_all(vs::ReaderBuilder::new().build(&src).unwrap()).unwrap();
        let points = vs_points(&src);
        if points.len() < 2 {
            continue;
        }
        let (_dir, path) = temp_copy(&src);
        let mut bytes = std::fs::read(&path).unwrap();
        // The point option byte of the first point's payload: only 0 is defined.
        let (offset, _) = points[0];
        bytes[offset as usize + 5] = 0xee;
        std::fs::write(&path, &bytes).unwrap();
        let (got, skipped) = salvage(&path).unwrap();
        assert_eq!(got, original.slice(1, original.num_rows() - 1), "{name}");
        assert_eq!(skipped.len(), 1, "{name}: {skipped:?}");
        assert_eq!(
            (skipped[0].offset, skipped[0].rows),
            (Some(offset), Some(1)),
            "{name}"
        );
    }
}

#[test]
fn a_vs_file_cut_inside_its_last_point_salvages_the_points_before() {
    let src = data().join("vs/f64_r1_plain.vs");
    let original = read_all(vs::ReaderBuilder::new().build(&src).unwrap()).unwrap();
    let points = vs_points(&src);
    let (_dir, path) = temp_copy(&src);
    let bytes = std::fs::read(&path).unwrap();
    let (last, _) = *points.last().unwrap();
    std::fs::write(&path, &bytes[..last as usize + 9]).unwrap();
    let (got, skipped) = salvage(&path).unwrap();
    assert_eq!(got, original.slice(0, points.len() - 1));
    assert_eq!(skipped.len(), 1, "{skipped:?}");
    assert_eq!(
        (skipped[0].part.as_str(), skipped[0].offset, skipped[0].rows),
        ("block", Some(last), Some(1))
    );
}

#[test]
fn the_damaged_vs_fixtures_salvage_what_their_manifest_says_is_intact() {
    // bad_truncated_block.vs: no_terminal.vs with its only point cut: nothing is left.
    let (got, skipped) = salvage(&data().join("vs/bad_truncated_block.vs")).unwrap();
    assert_eq!(got.num_rows(), 0);
    assert_eq!(
        (skipped[0].part.as_str(), skipped[0].rows),
        ("block", Some(1))
    );
    // bad_signature.vs: not a VS file at all.
    let err = salvage(&data().join("vs/bad_signature.vs")).unwrap_err();
    assert_eq!(err.class(), ErrorClass::BadSignature);
    // no_terminal.vs: its one point reads, and the missing end is reported.
    let (got, skipped) = salvage(&data().join("vs/no_terminal.vs")).unwrap();
    let lenient = read_all(
        vs::ReaderBuilder::new()
            .with_lenient_eof(true)
            .build(data().join("vs/no_terminal.vs"))
            .unwrap(),
    )
    .unwrap();
    assert_eq!(got, lenient);
    assert_eq!(got.num_rows(), 1);
    assert_eq!((skipped[0].part.as_str(), skipped[0].rows), ("rest", None));
}

// ---- What salvage does not change ----

#[test]
fn an_intact_file_salvages_to_itself_with_nothing_skipped() {
    for rel in [
        "jay/all_types.jay",
        "dataseries/generated/packing.ds",
        "vs/bool_r1_deleted.vs",
        "filo/set.filo",
        "bcolz/datasets/ctable_mixed",
    ] {
        let path = data().join(rel);
        let plain = read_all(arrowsmith::open(&path, &ReadOptions::default()).unwrap()).unwrap();
        let (got, skipped) = salvage(&path).unwrap();
        assert_eq!(got, plain, "{rel}");
        assert!(skipped.is_empty(), "{rel}: {skipped:?}");
    }
}

#[test]
fn salvage_is_refused_where_it_means_nothing_or_could_not_report() {
    // The Arrow ecosystem's formats are read whole or not at all.
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("a.csv");
    std::fs::write(&csv, "a\n1\n").unwrap();
    let err = salvage(&csv).err().unwrap();
    assert!(err.class().is_usage(), "{err}");
    // Salvage with nowhere to report what it skipped.
    let mut options = ReadOptions::default();
    options.scan.salvage = true;
    let err = arrowsmith::open(data().join("jay/tiny.jay"), &options)
        .err()
        .unwrap();
    assert!(
        err.class().is_usage() && err.to_string().contains("report"),
        "{err}"
    );
}
