//! Fragments: for every fixture of every format and for multi-unit files written here, the
//! rows of all fragments, in order, are exactly the rows of the whole file — at several target
//! sizes, with a projection and with a limit — and a fragment reads only its own part.

mod common;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow::compute::concat_batches;
use arrow_array::{ArrayRef, Float64Array, Int32Array, Int64Array, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use arrowsmith::{
    Format, Fragment, FragmentRange, Projection, ReadOptions, ScanOptions, WriteOptions,
};
use common::data;

fn read(reader: Box<dyn arrow_array::RecordBatchReader + Send>) -> arrowsmith::Result<RecordBatch> {
    let schema = reader.schema();
    let batches = reader
        .collect::<Result<Vec<_>, _>>()
        .map_err(arrowsmith::Error::from_arrow_owned)?;
    Ok(concat_batches(&schema, &batches).expect("same schema"))
}

fn whole(path: &Path, options: &ReadOptions) -> arrowsmith::Result<RecordBatch> {
    read(arrowsmith::open(path, options)?)
}

fn by_fragments(path: &Path, options: &ReadOptions, target: usize) -> (Vec<Fragment>, RecordBatch) {
    let fragments = arrowsmith::fragments(path, options, target)
        .unwrap_or_else(|e| panic!("{}: listing: {e}", path.display()));
    let mut parts = Vec::new();
    let mut schema: Option<SchemaRef> = None;
    for (i, f) in fragments.iter().enumerate() {
        assert_eq!(f.index, i);
        // Every fragment survives a trip through JSON, as it would to another machine.
        let f = Fragment::from_json(&f.to_json()).expect("fragment JSON");
        let batch = read(arrowsmith::open_fragment(&f, options).unwrap())
            .unwrap_or_else(|e| panic!("{}: fragment {i}: {e}", path.display()));
        if f.rows_exact {
            let expected = match options.scan.limit {
                Some(l) => f.rows.min(l as u64),
                None => f.rows,
            };
            assert_eq!(
                batch.num_rows() as u64,
                expected,
                "{}: fragment {i} ({:?}) says {} rows",
                path.display(),
                f.range,
                f.rows
            );
        }
        schema.get_or_insert(batch.schema());
        parts.push(batch);
    }
    let schema = schema.expect("at least one fragment");
    (fragments, concat_batches(&schema, &parts).unwrap())
}

/// Every readable input under `data/`: files and bcolz / Filo set directories, with the
/// format options they need; damaged fixtures (that do not read whole) are left to their own
/// tests.
fn fixtures() -> Vec<(PathBuf, ReadOptions)> {
    let mut out = Vec::new();
    let mut stack = vec![data("")];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let Ok(format) = Format::detect(&path) else {
                if path.is_dir() {
                    stack.push(path);
                }
                continue;
            };
            if format == Format::FiloVector {
                continue;
            }
            if format == Format::DataSeries {
                // A file of several extent types is split per type.
                if let Ok(file) = arrowsmith::dataseries::DsFile::open(&path, Default::default()) {
                    for t in file.candidate_types() {
                        let mut options = ReadOptions::for_format(format);
                        options.format_options.dataseries.type_name = Some(t.name.clone());
                        out.push((path.clone(), options));
                    }
                }
                continue;
            }
            out.push((path, ReadOptions::for_format(format)));
        }
    }
    out.retain(|(path, options)| whole(path, options).is_ok());
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

fn check(path: &Path, options: &ReadOptions) -> usize {
    let all = whole(path, options).unwrap();
    let mut most = 0;
    for target in [1, 3, 1000, usize::MAX] {
        let (fragments, rows) = by_fragments(path, options, target);
        assert_eq!(rows, all, "{} at target {target}", path.display());
        most = most.max(fragments.len());
    }
    // A projection (last column first) and a limit apply within each fragment.
    let columns = all.num_columns();
    if columns > 0 {
        let mut projected = options.clone();
        projected.scan.projection = Some(Projection::Indices(vec![columns - 1, 0]));
        let (_, rows) = by_fragments(path, &projected, 2);
        assert_eq!(
            rows,
            all.project(&[columns - 1, 0]).unwrap(),
            "{}",
            path.display()
        );
    }
    let mut limited = options.clone();
    limited.scan.limit = Some(1);
    let fragments = arrowsmith::fragments(path, &limited, 2).unwrap();
    for f in &fragments {
        let part = read(arrowsmith::open_fragment(f, &limited).unwrap()).unwrap();
        assert!(part.num_rows() <= 1);
    }
    most
}

#[test]
fn every_fixture_reads_the_same_through_its_fragments() {
    let fixtures = fixtures();
    let formats: std::collections::BTreeSet<&str> = fixtures
        .iter()
        .filter_map(|(_, o)| o.format.map(|f| f.name()))
        .collect();
    for expected in ["jay", "dataseries", "filo", "vs", "bcolz"] {
        assert!(formats.contains(expected), "no {expected} fixture found");
    }
    let mut split = 0;
    for (path, options) in &fixtures {
        if check(path, options) > 1 {
            split += 1;
        }
    }
    assert!(
        split > 10,
        "only {split} fixtures split into several fragments"
    );
}

/// A sample with nulls in three of its four columns; bcolz, which stores no nulls, gets one
/// without.
fn sample(rows: usize) -> RecordBatch {
    sample_with(rows, true)
}

fn sample_with(rows: usize, nulls: bool) -> RecordBatch {
    let schema = Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new("x", DataType::Float64, true),
        Field::new("n", DataType::Int32, true),
        Field::new("s", DataType::Utf8, true),
    ]));
    let id: ArrayRef = Arc::new(Int64Array::from_iter_values(0..rows as i64));
    let x: ArrayRef = Arc::new(Float64Array::from_iter(
        (0..rows).map(|i| (!nulls || i % 7 != 0).then_some(i as f64 / 4.0)),
    ));
    let n: ArrayRef = Arc::new(Int32Array::from_iter(
        (0..rows).map(|i| (!nulls || i % 5 != 0).then_some(i as i32 * 3)),
    ));
    let s: ArrayRef = Arc::new(StringArray::from_iter(
        (0..rows).map(|i| (!nulls || i % 3 != 0).then(|| format!("row {i}"))),
    )) as ArrayRef;
    RecordBatch::try_new(schema, vec![id, x, n, s]).unwrap()
}

/// Writes `batch` in `format` as many small units (extents, chunks, row groups, batches).
fn write_multi_unit(dir: &Path, format: Format, batch: &RecordBatch) -> PathBuf {
    let name = match format {
        Format::Bcolz => "t.bcolz".to_string(),
        _ => format!(
            "t.{}",
            format.extensions().first().copied().unwrap_or("bin")
        ),
    };
    let path = dir.join(name);
    let mut options = WriteOptions {
        format: Some(format),
        row_group_size: Some(1000),
        ..Default::default()
    };
    options.filo = options.filo.with_chunk_size(1000);
    options.dataseries = options.dataseries.with_extent_size(16 * 1024);
    options.bcolz = options.bcolz.with_chunklen(1000);
    let no_nulls;
    let batch = if format == Format::Bcolz {
        no_nulls = sample_with(batch.num_rows(), false);
        &no_nulls
    } else {
        batch
    };
    let mut writer = arrowsmith::create(&path, batch.schema(), &options).unwrap();
    // Arrow IPC writes one record batch per write.
    for start in (0..batch.num_rows()).step_by(1000) {
        let len = 1000.min(batch.num_rows() - start);
        writer.write(&batch.slice(start, len)).unwrap();
    }
    writer.finish().unwrap();
    path
}

const MULTI_UNIT: [Format; 8] = [
    Format::Jay,
    Format::DataSeries,
    Format::Vs,
    Format::Bcolz,
    Format::Filo,
    Format::Parquet,
    Format::Arrow,
    Format::ArrowStream,
];

#[test]
fn multi_unit_files_split_along_their_seams_and_read_back_whole() {
    let dir = tempfile::tempdir().unwrap();
    let batch = sample(10_000);
    for format in MULTI_UNIT {
        let input = if format == Format::Vs {
            // A VS file holds vectors: write the sample's numbers as one-element vectors.
            let vs_batch = vs_sample(10_000);
            let path = dir.path().join("t.vs");
            let mut w =
                arrowsmith::create(&path, vs_batch.schema(), &WriteOptions::default()).unwrap();
            w.write(&vs_batch).unwrap();
            w.finish().unwrap();
            path
        } else {
            write_multi_unit(dir.path(), format, &batch)
        };
        let options = ReadOptions::for_format(format);
        let most = check(&input, &options);
        let fragments = arrowsmith::fragments(&input, &options, 2500).unwrap();
        let total: u64 = fragments.iter().map(|f| f.rows).sum();
        assert_eq!(total, 10_000, "{format}");
        match format {
            Format::ArrowStream => assert_eq!(most, 1, "a stream is read whole"),
            // Jay splits at any row; the others at their units, 1000 rows (or an extent) each.
            _ => {
                assert!(
                    fragments.len() >= 3,
                    "{format}: {} fragments",
                    fragments.len()
                );
                assert!(most >= 10, "{format}: at most {most} fragments at target 1");
            }
        }
        for f in &fragments {
            assert!(f.bytes > 0, "{format}: fragment {} has no bytes", f.index);
            let unit = f.range.unit();
            let expected = match format {
                Format::Jay | Format::Bcolz => "rows",
                Format::DataSeries | Format::Vs => "bytes",
                Format::Filo => "chunks",
                Format::Parquet => "row_groups",
                Format::Arrow => "batches",
                _ => "whole",
            };
            assert_eq!(unit, expected, "{format}");
        }
    }
}

fn vs_sample(rows: usize) -> RecordBatch {
    let batch = arrowsmith::open(
        data("").join("vs/f64_r1_plain.vs"),
        &ReadOptions::for_format(Format::Vs),
    )
    .unwrap()
    .next()
    .unwrap()
    .unwrap();
    let one = batch.slice(0, 1);
    let copies: Vec<RecordBatch> = (0..rows).map(|_| one.clone()).collect();
    concat_batches(&batch.schema(), &copies).unwrap()
}

/// Damages the bytes of the first unit of a multi-unit file: the first fragment must fail,
/// every later one must read as before — so a fragment reads its own part only.
#[test]
fn a_fragment_reads_only_its_own_part_of_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let batch = sample(10_000);
    for format in [
        Format::DataSeries,
        Format::Bcolz,
        Format::Filo,
        Format::Parquet,
    ] {
        let input = write_multi_unit(dir.path(), format, &batch);
        let options = ReadOptions::for_format(format);
        let fragments = arrowsmith::fragments(&input, &options, 2000).unwrap();
        let good = read(arrowsmith::open_fragment(&fragments[2], &options).unwrap()).unwrap();
        damage_first_unit(&input, format, &fragments[0]);
        let first = arrowsmith::open_fragment(&fragments[0], &options).and_then(read);
        assert!(
            first.is_err(),
            "{format}: the damaged first fragment still read"
        );
        for f in &fragments[1..] {
            let part = read(arrowsmith::open_fragment(f, &options).unwrap())
                .unwrap_or_else(|e| panic!("{format}: fragment {}: {e}", f.index));
            if f.index == 2 {
                assert_eq!(part, good);
            }
        }
    }
}

fn damage_first_unit(input: &Path, format: Format, first: &Fragment) {
    let overwrite = |file: &Path, at: u64, len: usize| {
        use std::io::{Seek, SeekFrom, Write};
        let mut f = std::fs::OpenOptions::new().write(true).open(file).unwrap();
        f.seek(SeekFrom::Start(at)).unwrap();
        f.write_all(&vec![0xA5; len]).unwrap();
    };
    match (format, first.range) {
        (Format::DataSeries, FragmentRange::Bytes { start, .. }) => {
            overwrite(input, start + 64, 64)
        }
        (Format::Bcolz, _) => {
            for column in ["id", "x", "n", "s"] {
                overwrite(&input.join(column).join("data/__0.blp"), 16, 16);
            }
        }
        (Format::Filo, _) => {
            for column in 0..4 {
                overwrite(&arrowsmith::filo::column_file(input, 0, column), 0, 16);
            }
        }
        (Format::Parquet, _) => overwrite(input, 4, 256),
        other => panic!("no damage for {other:?}"),
    }
}

#[test]
fn a_range_in_another_formats_unit_is_refused() {
    let options = ReadOptions {
        format: Some(Format::Jay),
        scan: ScanOptions {
            range: Some(FragmentRange::Chunks { start: 0, end: 1 }),
            ..Default::default()
        },
        ..Default::default()
    };
    let err = arrowsmith::open(data("").join("jay/tiny.jay"), &options)
        .err()
        .expect("refused");
    assert!(err.class().is_usage(), "{err}");
    assert!(err.to_string().contains("range of rows"), "{err}");
}

/// Removes what opening `input` reads before its data: the whole file for the formats that
/// map it (the held map keeps its bytes), a bcolz dataset's metadata (`__rootdirs__`,
/// `__attrs__`, each column's `meta/`), leaving the chunk files the reads need.
fn remove_what_opening_reads(input: &Path, format: Format) {
    if format == Format::Filo {
        std::fs::remove_file(input.join("schema.json")).unwrap();
        return;
    }
    if format != Format::Bcolz {
        std::fs::remove_file(input).unwrap();
        return;
    }
    for entry in std::fs::read_dir(input).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            std::fs::remove_dir_all(path.join("meta")).unwrap();
        } else {
            std::fs::remove_file(path).unwrap();
        }
    }
}

#[test]
fn an_input_lists_and_reads_every_fragment_from_the_file_opened_once() {
    let dir = tempfile::tempdir().unwrap();
    let batch = sample(10_000);
    for format in [
        Format::Jay,
        Format::DataSeries,
        Format::Vs,
        Format::Bcolz,
        Format::Filo,
    ] {
        let input = if format == Format::Vs {
            let vs_batch = vs_sample(5_000);
            let path = dir.path().join("t.vs");
            let mut w =
                arrowsmith::create(&path, vs_batch.schema(), &WriteOptions::default()).unwrap();
            w.write(&vs_batch).unwrap();
            w.finish().unwrap();
            path
        } else {
            write_multi_unit(dir.path(), format, &batch)
        };
        let options = ReadOptions::for_format(format);
        let all = whole(&input, &options).unwrap();
        let opened = arrowsmith::Input::open(&input, &options).unwrap();
        remove_what_opening_reads(&input, format);

        let fragments = opened.fragments(1500).unwrap();
        assert!(
            fragments.len() > 2,
            "{format}: {} fragments",
            fragments.len()
        );
        // Opening by path again cannot work any more: what follows reads the held handle.
        assert!(
            arrowsmith::open_fragment(&fragments[0], &options).is_err(),
            "{format}: the input is still there to open again"
        );
        let mut parts = Vec::new();
        for f in &fragments {
            let part = read(opened.fragment_reader(f, &ScanOptions::default()).unwrap())
                .unwrap_or_else(|e| panic!("{format}: fragment {}: {e}", f.index));
            assert_eq!(
                part.num_rows() as u64,
                f.rows,
                "{format}: fragment {}",
                f.index
            );
            parts.push(part);
        }
        assert_eq!(
            concat_batches(&opened.schema(), &parts).unwrap(),
            all,
            "{format}"
        );
        assert_eq!(opened.rows(), Some(all.num_rows() as u64), "{format}");
        assert_eq!(
            read(opened.reader(&ScanOptions::default()).unwrap()).unwrap(),
            all
        );
    }
}

/// Every input under `data/` and a file of each Arrow ecosystem format.
fn every_format(dir: &Path) -> Vec<(PathBuf, ReadOptions)> {
    let mut inputs = fixtures();
    let batch = sample(3_000);
    for format in [Format::Parquet, Format::Arrow, Format::ArrowStream] {
        let path = write_multi_unit(dir, format, &batch);
        inputs.push((path, ReadOptions::for_format(format)));
    }
    for format in [Format::Csv, Format::Ndjson] {
        let path = dir.join(format!("t.{}", format.extensions()[0]));
        let options = WriteOptions {
            format: Some(format),
            ..Default::default()
        };
        arrowsmith::write_all(
            arrow_array::RecordBatchIterator::new([Ok(batch.clone())], batch.schema()),
            &path,
            &options,
        )
        .unwrap();
        inputs.push((path, ReadOptions::for_format(format)));
    }
    inputs
}

#[test]
fn the_rows_and_schema_of_an_input_are_those_of_a_full_read() {
    let dir = tempfile::tempdir().unwrap();
    let mut counted = std::collections::BTreeSet::new();
    for (path, options) in every_format(dir.path()) {
        let format = options.format.unwrap();
        let all = whole(&path, &options).unwrap();
        let input = arrowsmith::Input::open(&path, &options).unwrap();
        assert_eq!(input.format(), format);
        assert_eq!(input.schema(), all.schema(), "{}", path.display());
        match input.rows() {
            Some(rows) => {
                assert_eq!(rows, all.num_rows() as u64, "{}", path.display());
                counted.insert(format.name());
            }
            None => assert!(
                matches!(format, Format::Csv | Format::Ndjson),
                "{}: {format} states its rows",
                path.display()
            ),
        }
    }
    for format in [
        "jay",
        "dataseries",
        "filo",
        "vs",
        "bcolz",
        "parquet",
        "arrow",
        "arrows",
    ] {
        assert!(
            counted.contains(format),
            "no {format} input counted its rows"
        );
    }
}
