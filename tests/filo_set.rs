//! Filo sets (specs/filo.md section 14): the checked-in `data/filo/set.filo` built from golden
//! vectors, written sets read back, projection, missing files, chunking and bad schemas; sets
//! read through an object source (as from object storage) as locally, a fragment fetching only
//! its chunks of the projected columns.

mod common;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow::compute::concat_batches;
use arrow_array::cast::AsArray;
use arrow_array::types::*;
use arrow_array::{Array, ArrayRef, Float64Array, Int32Array, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema};
use arrowsmith::filo::{self, FiloType, Hint, ReaderBuilder, Writer, WriterOptions};
use arrowsmith::source::{CountingObjects, Counts, LocalDir};
use arrowsmith::{ErrorClass, Format, ReadOptions};
use common::{assert_fetched_within_share, copy_dir, fetch_bound};

fn set() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("data/filo/set.filo")
}

fn read_all(builder: ReaderBuilder, path: &Path) -> Vec<RecordBatch> {
    builder
        .build(path)
        .unwrap()
        .collect::<Result<Vec<_>, _>>()
        .unwrap()
}

#[test]
fn the_checked_in_set_reads_with_its_missing_file_as_na() {
    let batches = read_all(ReaderBuilder::new(), &set());
    assert_eq!(batches.len(), 2, "one batch per chunk");
    let all = concat_batches(&batches[0].schema(), &batches).unwrap();
    assert_eq!(all.schema().field(0).data_type(), &DataType::Int32);
    assert_eq!(all.schema().field(1).data_type(), &DataType::Int64);
    let a = all.column(0).as_primitive::<Int32Type>();
    let want_a = [
        None,
        Some(101),
        Some(102),
        Some(103),
        None,
        None,
        None,
        None,
        None,
        None,
    ];
    assert_eq!(a.iter().collect::<Vec<_>>(), want_a);
    let b = all.column(1).as_primitive::<Int64Type>();
    let want_b = [
        None,
        None,
        None,
        None,
        None,
        Some(0),
        Some(1),
        Some(2),
        Some(3),
        Some(4),
    ];
    assert_eq!(b.iter().collect::<Vec<_>>(), want_b);
    // Detected as a Filo set by its schema.json.
    assert_eq!(Format::detect(&set()).unwrap(), Format::Filo);
    let reader = arrowsmith::open(set(), &ReadOptions::default()).unwrap();
    assert_eq!(reader.count(), 2);
}

#[test]
fn projection_opens_only_the_selected_files() {
    let dir = tempfile::tempdir().unwrap();
    let copy = dir.path().join("p.filo");
    copy_dir(&set(), &copy);
    // Damage column a's file: reading only b must not notice.
    std::fs::write(copy.join("chunk-00000/0.bin"), b"\x09\0\0\0").unwrap();
    let batches = read_all(ReaderBuilder::new().with_projection(["b"]), &copy);
    assert_eq!(batches[0].num_columns(), 1);
    assert_eq!(batches[1].column(0).len(), 5);
    let err = ReaderBuilder::new()
        .build(&copy)
        .unwrap()
        .collect::<Result<Vec<_>, _>>()
        .unwrap_err();
    let err = arrowsmith::Error::from_arrow_owned(err);
    assert_eq!(err.class(), ErrorClass::UnknownType);
    assert!(err.to_string().contains("chunk-00000/0.bin"), "{err}");
    assert!(err.to_string().contains("column 0 \"a\""), "{err}");
}

#[test]
fn a_vector_of_the_wrong_length_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let copy = dir.path().join("p.filo");
    copy_dir(&set(), &copy);
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("data/filo/vectors/int_i8.bin"),
        copy.join("chunk-00001/1.bin"),
    )
    .unwrap();
    let err = ReaderBuilder::new()
        .build(&copy)
        .unwrap()
        .collect::<Result<Vec<_>, _>>()
        .unwrap_err();
    let err = arrowsmith::Error::from_arrow_owned(err);
    assert_eq!(err.class(), ErrorClass::RowCountMismatch, "{err}");
}

#[test]
fn bad_schemas_are_named_errors() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        (
            r#"{"format":"x","version":1,"columns":[{"name":"a","filo_type":"Int"}],"chunks":[]}"#,
            "format",
        ),
        (
            r#"{"format":"arrowsmith-filo-set","version":2,"columns":[{"name":"a","filo_type":"Int"}],"chunks":[]}"#,
            "version",
        ),
        (
            r#"{"format":"arrowsmith-filo-set","version":1,"columns":[],"chunks":[]}"#,
            "columns",
        ),
        (
            r#"{"format":"arrowsmith-filo-set","version":1,"columns":[{"name":"a","filo_type":"int"}],"chunks":[]}"#,
            "columns[0]",
        ),
        (
            r#"{"format":"arrowsmith-filo-set","version":1,"columns":[{"name":"a","filo_type":"Int"},{"name":"a","filo_type":"Int"}],"chunks":[]}"#,
            "columns[1]",
        ),
        (
            r#"{"format":"arrowsmith-filo-set","version":1,"columns":[{"name":"a","filo_type":"Int"}],"chunks":[{"rows":0}]}"#,
            "chunks[0].rows",
        ),
        (
            r#"{"format":"arrowsmith-filo-set","version":1,"columns":[{"name":"a","filo_type":"Int"}],"chunks":[{"rows":16777216}]}"#,
            "chunks[0].rows",
        ),
        ("not json", "schema.json"),
    ];
    for (i, (text, field)) in cases.iter().enumerate() {
        let path = dir.path().join(format!("{i}.filo"));
        std::fs::create_dir(&path).unwrap();
        std::fs::write(path.join("schema.json"), text).unwrap();
        let err = ReaderBuilder::new().build(&path).err().unwrap();
        assert_eq!(err.class(), ErrorClass::BadMeta, "{text}: {err}");
        assert_eq!(err.field(), Some(*field), "{text}: {err}");
    }
}

fn sample(rows: usize) -> RecordBatch {
    let schema = Arc::new(Schema::new(vec![
        Field::new("n", DataType::Int32, true),
        Field::new("name", DataType::Utf8, true),
        Field::new("x", DataType::Float64, true),
        Field::new("dt", filo::mapping::datetime_type(), true),
    ]));
    let n: ArrayRef = Arc::new(Int32Array::from_iter(
        (0..rows).map(|i| (i % 7 != 3).then_some(1000 + (i % 50) as i32)),
    ));
    let name: ArrayRef = Arc::new(StringArray::from_iter(
        (0..rows).map(|i| (i % 5 != 0).then(|| ["red", "green", "blue"][i % 3])),
    ));
    let x: ArrayRef = Arc::new(Float64Array::from_iter(
        (0..rows).map(|i| (i % 11 != 0).then_some(i as f64 / 4.0)),
    ));
    let millis = arrow_array::PrimitiveArray::<TimestampMillisecondType>::from_iter_values(
        (0..rows).map(|i| 1_300_000_000_000 + i as i64 * 1000),
    )
    .with_timezone("UTC");
    let qh =
        arrow_array::Int8Array::from_iter_values(
            (0..rows).map(|i| if i % 2 == 0 { -20 } else { 22 }),
        );
    let dt: ArrayRef = Arc::new(
        arrow_array::StructArray::try_new(
            filo::mapping::datetime_fields(),
            vec![Arc::new(millis), Arc::new(qh)],
            Some(arrow_buffer::NullBuffer::from(
                (0..rows).map(|i| i % 13 != 0).collect::<Vec<_>>(),
            )),
        )
        .unwrap(),
    );
    RecordBatch::try_new(schema, vec![n, name, x, dt]).unwrap()
}

#[test]
fn written_sets_read_back_chunk_by_chunk() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("out.filo");
    let input = sample(1000);
    let mut writer = Writer::try_new(
        &path,
        input.schema(),
        WriterOptions::default().with_chunk_size(300),
    )
    .unwrap();
    // Batches that straddle chunk boundaries.
    writer.write(&input.slice(0, 250)).unwrap();
    writer.write(&input.slice(250, 700)).unwrap();
    writer.write(&input.slice(950, 50)).unwrap();
    let summary = writer.finish().unwrap();
    assert_eq!(summary.rows, 1000);
    let info = filo::SetInfo::open(&path).unwrap();
    assert_eq!(info.chunks, vec![300, 300, 300, 100]);
    assert_eq!(info.columns[3].filo_type, FiloType::DateTime);
    assert!(std::fs::read_to_string(path.join("schema.json"))
        .unwrap()
        .ends_with("}\n"));
    // Each file is one vector of the chunk's rows, with filo's encodings.
    let v = filo::inspect(&std::fs::read(filo::column_file(&path, 0, 0)).unwrap()).unwrap();
    assert_eq!((v.wire_type, v.len), (filo::WireType::DiffPrimitive, 300));
    let v = filo::inspect(&std::fs::read(filo::column_file(&path, 3, 1)).unwrap()).unwrap();
    assert_eq!(v.wire_type, filo::WireType::DictString);

    let batches = read_all(ReaderBuilder::new(), &path);
    assert_eq!(
        batches.iter().map(|b| b.num_rows()).collect::<Vec<_>>(),
        vec![300, 300, 300, 100]
    );
    let back = concat_batches(&batches[0].schema(), &batches).unwrap();
    assert_eq!(back.schema(), input.schema());
    for c in 0..3 {
        assert_eq!(
            back.column(c).to_data(),
            input.column(c).to_data(),
            "column {c}"
        );
    }
    let (a, b) = (back.column(3).as_struct(), input.column(3).as_struct());
    for i in 0..1000 {
        assert_eq!(a.is_valid(i), b.is_valid(i));
        if b.is_valid(i) {
            assert_eq!(
                a.column(0)
                    .as_primitive::<TimestampMillisecondType>()
                    .value(i),
                b.column(0)
                    .as_primitive::<TimestampMillisecondType>()
                    .value(i)
            );
            assert_eq!(
                a.column(1).as_primitive::<Int8Type>().value(i),
                b.column(1).as_primitive::<Int8Type>().value(i)
            );
        }
    }

    // Batch size splits chunks; limit cuts.
    let batches = read_all(
        ReaderBuilder::new()
            .with_batch_size(128)
            .with_limit(500)
            .with_projection(vec![2usize, 0]),
        &path,
    );
    assert_eq!(
        batches.iter().map(|b| b.num_rows()).collect::<Vec<_>>(),
        vec![128, 128, 44, 128, 72]
    );
    assert_eq!(batches[0].schema().field(0).name(), "x");

    // An existing set is refused unless overwriting.
    assert!(Writer::try_new(&path, input.schema(), WriterOptions::default()).is_err());
    let mut w = Writer::try_new(
        &path,
        input.schema(),
        WriterOptions::default()
            .with_overwrite(true)
            .with_hint(Hint::SimpleEncoding),
    )
    .unwrap();
    w.write(&input.slice(0, 10)).unwrap();
    w.finish().unwrap();
    assert_eq!(filo::SetInfo::open(&path).unwrap().chunks, vec![10]);
    let leftovers: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(leftovers.len(), 1, "{leftovers:?}");
}

#[test]
fn a_failed_write_leaves_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad.filo");
    let schema = Arc::new(Schema::new(vec![Field::new(
        "t",
        DataType::Timestamp(arrow_schema::TimeUnit::Microsecond, None),
        true,
    )]));
    let t: ArrayRef = Arc::new(arrow_array::TimestampMicrosecondArray::from(vec![1_500]));
    let mut w = Writer::try_new(
        &path,
        schema.clone(),
        WriterOptions::default().with_chunk_size(1),
    )
    .unwrap();
    let err = w
        .write(&RecordBatch::try_new(schema, vec![t]).unwrap())
        .unwrap_err();
    assert_eq!(err.class(), ErrorClass::ValueOutOfRange);
    drop(w);
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

/// String columns read as dictionaries hold the values read as Utf8: a DictStringVector's
/// codes over its dictionary (the strings stored once), other string vectors encoded after.
#[test]
fn string_columns_read_as_dictionaries_hold_the_same_values() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.filo");
    let schema = Arc::new(Schema::new(vec![
        Field::new("few", DataType::Utf8, true),
        Field::new("many", DataType::Utf8, true),
    ]));
    let rows = 3_000;
    let few =
        StringArray::from_iter((0..rows).map(|i| (i % 9 != 0).then(|| ["x", "yy", "zzz"][i % 3])));
    let many = StringArray::from_iter((0..rows).map(|i| Some(format!("v{i}"))));
    let batch = RecordBatch::try_new(schema.clone(), vec![Arc::new(few), Arc::new(many)]).unwrap();
    let options = WriterOptions::default().with_chunk_size(1_000);
    let mut writer = Writer::try_new(&path, schema, options).unwrap();
    writer.write(&batch).unwrap();
    writer.finish().unwrap();

    let plain = read_all(ReaderBuilder::new(), &path);
    let dict = read_all(ReaderBuilder::new().with_dictionary_strings(true), &path);
    assert_eq!(plain.len(), dict.len());
    let dictionary = DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Utf8));
    for (p, d) in plain.iter().zip(&dict) {
        for c in 0..2 {
            assert_eq!(d.schema().field(c).data_type(), &dictionary);
            let back = arrow::compute::cast(d.column(c), &DataType::Utf8).unwrap();
            assert_eq!(&back, p.column(c));
        }
        // filo stores the three strings (and its "" placeholder) once per chunk.
        let keys = d.column(0).as_dictionary::<Int32Type>();
        assert!(
            keys.values().len() <= 4,
            "{} dictionary entries",
            keys.values().len()
        );
    }
    // The same through the format-independent entry point.
    let mut options = ReadOptions::for_format(Format::Filo);
    options.format_options.filo.dictionary_strings = true;
    let reader = arrowsmith::open(&path, &options).unwrap();
    assert_eq!(reader.schema().field(0).data_type(), &dictionary);
}

/// Every fragment of one opened set, read through `build_from_file`, concatenated.
fn read_fragments(set: &Arc<filo::SetInfo>, target_rows: usize) -> (usize, RecordBatch) {
    let fragments = filo::fragments(set, target_rows).unwrap();
    let mut batches = Vec::new();
    for fragment in &fragments {
        let reader = ReaderBuilder::new()
            .with_range(fragment.range)
            .build_from_file(set.clone())
            .unwrap();
        let rows: usize = reader
            .map(|b| {
                let b = b.unwrap();
                batches.push(b.clone());
                b.num_rows()
            })
            .sum();
        assert_eq!(rows as u64, fragment.rows, "{fragment:?}");
    }
    let schema = batches[0].schema();
    (fragments.len(), concat_batches(&schema, &batches).unwrap())
}

#[test]
fn the_fragments_of_one_opened_set_read_the_whole_set() {
    // The checked-in set: two chunks of five rows, one column file missing.
    let whole = read_all(ReaderBuilder::new(), &set());
    let whole = concat_batches(&whole[0].schema(), &whole).unwrap();
    let opened = Arc::new(filo::SetInfo::open(set()).unwrap());
    assert_eq!(opened.dir(), set());
    for (target_rows, count) in [(1, 2), (5, 2), (10, 1), (1_000, 1)] {
        let (fragments, got) = read_fragments(&opened, target_rows);
        assert_eq!(fragments, count, "target {target_rows}");
        assert_eq!(got, whole, "target {target_rows}");
    }

    // A written set of four chunks, read through an opened copy whose schema.json is then
    // removed: fragments and readers use what was opened, not the file again.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("f.filo");
    let input = sample(1000);
    let mut writer = Writer::try_new(
        &path,
        input.schema(),
        WriterOptions::default().with_chunk_size(300),
    )
    .unwrap();
    writer.write(&input).unwrap();
    writer.finish().unwrap();
    let opened = Arc::new(filo::SetInfo::open(&path).unwrap());
    std::fs::remove_file(path.join("schema.json")).unwrap();
    assert!(ReaderBuilder::new().build(&path).is_err());
    for (target_rows, count) in [(300, 4), (600, 2), (1000, 1)] {
        let (fragments, got) = read_fragments(&opened, target_rows);
        assert_eq!(fragments, count, "target {target_rows}");
        assert_eq!(got.num_rows(), 1000);
        for c in 0..3 {
            assert_eq!(got.column(c).to_data(), input.column(c).to_data(), "{c}");
        }
    }
    // A range past the set's chunks is refused, naming the set.
    let err = ReaderBuilder::new()
        .with_range(arrowsmith::FragmentRange::Chunks { start: 3, end: 5 })
        .build_from_file(opened.clone())
        .err()
        .unwrap();
    assert!(err.to_string().contains("f.filo"), "{err}");
    assert!(err.to_string().contains("4 chunks"), "{err}");
}

/// The set at `path` opened through a counting object source over its directory, and the
/// counts of what is fetched through it.
fn open_counted(path: &Path) -> (arrowsmith::Result<Arc<filo::SetInfo>>, Arc<Counts>) {
    let objects = CountingObjects::new(LocalDir::new(path));
    let counts = objects.counts();
    (
        filo::SetInfo::open_source(Arc::new(objects)).map(Arc::new),
        counts,
    )
}

/// A scan to compare, and what it is called in messages.
type NamedScan<'a> = (&'a str, Box<dyn Fn() -> ReaderBuilder + 'a>);

/// Every batch (or the error text where reading stops) of one reader of an opened set.
fn scan_opened(
    set: &Arc<filo::SetInfo>,
    reader: ReaderBuilder,
) -> Vec<Result<RecordBatch, String>> {
    match reader.build_from_file(Arc::clone(set)) {
        Err(e) => vec![Err(e.to_string())],
        Ok(r) => r.map(|b| b.map_err(|e| e.to_string())).collect(),
    }
}

#[test]
fn every_set_reads_the_same_through_an_object_source() {
    let dir = tempfile::tempdir().unwrap();
    let written = dir.path().join("w.filo");
    let mut writer = Writer::try_new(
        &written,
        sample(2500).schema(),
        WriterOptions::default().with_chunk_size(700),
    )
    .unwrap();
    writer.write(&sample(2500)).unwrap();
    writer.finish().unwrap();
    for path in [set(), written] {
        let local = Arc::new(filo::SetInfo::open(&path).unwrap());
        let remote = open_counted(&path).0.unwrap();
        assert_eq!(remote, local, "the same place, columns and chunks");
        let last = local.columns.last().unwrap().name.clone();
        let scans: [NamedScan; 5] = [
            ("whole", Box::new(ReaderBuilder::new)),
            (
                "batches",
                Box::new(|| ReaderBuilder::new().with_batch_size(3)),
            ),
            (
                "projection",
                Box::new(|| ReaderBuilder::new().with_projection(vec![last.as_str()])),
            ),
            ("limit", Box::new(|| ReaderBuilder::new().with_limit(7))),
            (
                "dictionaries",
                Box::new(|| ReaderBuilder::new().with_dictionary_strings(true)),
            ),
        ];
        for (what, builder) in &scans {
            let want = scan_opened(&local, builder());
            assert!(want.iter().all(Result::is_ok), "{path:?}, {what}");
            assert_eq!(scan_opened(&remote, builder()), want, "{path:?}, {what}");
        }
        let spans = filo::fragments(&local, 1).unwrap();
        let remote_spans = filo::fragments(&remote, 1).unwrap();
        assert_eq!(
            spans.iter().map(|s| (s.range, s.rows)).collect::<Vec<_>>(),
            remote_spans
                .iter()
                .map(|s| (s.range, s.rows))
                .collect::<Vec<_>>(),
            "{path:?}: the same fragments"
        );
        assert!(spans.len() >= 2);
        for span in &spans {
            let builder = || ReaderBuilder::new().with_range(span.range);
            let want = scan_opened(&local, builder());
            assert_eq!(
                scan_opened(&remote, builder()),
                want,
                "{path:?}, {:?}",
                span.range
            );
        }
    }
}

/// The bytes of the files of `columns` in chunks `chunks` (a missing file counts nothing).
fn file_bytes(path: &Path, chunks: std::ops::Range<usize>, columns: &[usize]) -> u64 {
    chunks
        .flat_map(|k| columns.iter().map(move |&c| filo::column_file(path, k, c)))
        .filter_map(|f| std::fs::metadata(f).ok())
        .map(|m| m.len())
        .sum()
}

#[test]
fn a_fragment_fetches_only_its_chunks_of_the_projected_columns() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("big.filo");
    let input = sample(24_000);
    let mut writer = Writer::try_new(
        &path,
        input.schema(),
        WriterOptions::default().with_chunk_size(1000),
    )
    .unwrap();
    writer.write(&input).unwrap();
    writer.finish().unwrap();
    let schema_bytes = std::fs::metadata(path.join("schema.json")).unwrap().len();
    let all = [0usize, 1, 2, 3];
    let whole = file_bytes(&path, 0..24, &all);
    let local = Arc::new(filo::SetInfo::open(&path).unwrap());
    let spans = filo::fragments(&local, 2000).unwrap();
    assert_eq!(spans.len(), 12);
    for span in &spans {
        let arrowsmith::FragmentRange::Chunks { start, end } = span.range else {
            panic!("{:?}", span.range)
        };
        let chunks = start as usize..end as usize;
        for columns in [all.to_vec(), vec![1], vec![2, 0]] {
            let share = file_bytes(&path, chunks.clone(), &columns);
            let bound = fetch_bound(share);
            assert!(
                whole > bound,
                "the set ({whole}) is larger than the bound ({bound})"
            );
            let (set, counts) = open_counted(&path);
            let set = set.unwrap();
            assert_eq!(counts.bytes(), schema_bytes, "opening fetches schema.json");
            let reader = ReaderBuilder::new()
                .with_range(span.range)
                .with_projection(columns.clone());
            let rows: usize = scan_opened(&set, reader)
                .into_iter()
                .map(|b| b.unwrap().num_rows())
                .sum();
            assert_eq!(rows as u64, span.rows);
            let what = format!("chunks {chunks:?}, columns {columns:?}");
            assert_eq!(counts.bytes(), schema_bytes + share, "{what}");
            assert_fetched_within_share(&what, counts.bytes(), share);
            // One request for schema.json, then one for all the fragment's chunks.
            assert_eq!(counts.round_trips(), 2, "{what}");
        }
    }
    // A one-column projection of the whole set fetches that column's files.
    for c in all {
        let (set, counts) = open_counted(&path);
        let reader = ReaderBuilder::new().with_projection(vec![c]);
        let rows: usize = scan_opened(&set.unwrap(), reader)
            .into_iter()
            .map(|b| b.unwrap().num_rows())
            .sum();
        assert_eq!(rows, 24_000);
        let column = file_bytes(&path, 0..24, &[c]);
        assert_eq!(counts.bytes(), schema_bytes + column, "column {c}");
        assert_eq!(
            counts.round_trips(),
            2,
            "column {c}: schema.json, then its 24 files"
        );
        assert!(whole > fetch_bound(column), "column {c}");
    }
    // A limit fetches the chunks that hold its rows, and no more.
    let (set, counts) = open_counted(&path);
    let reader = ReaderBuilder::new().with_limit(1500);
    let rows: usize = scan_opened(&set.unwrap(), reader)
        .into_iter()
        .map(|b| b.unwrap().num_rows())
        .sum();
    assert_eq!(rows, 1500);
    assert_eq!(counts.bytes(), schema_bytes + file_bytes(&path, 0..2, &all));
    assert_eq!(counts.round_trips(), 2);
}

#[test]
fn missing_and_damaged_objects_through_an_object_source() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.filo");
    copy_dir(&set(), &path);
    // A missing column file is an all-NA chunk, as locally (the checked-in set has one).
    let (opened, _) = open_counted(&path);
    let opened = opened.unwrap();
    let local = scan_opened(
        &Arc::new(filo::SetInfo::open(&path).unwrap()),
        ReaderBuilder::new(),
    );
    assert_eq!(scan_opened(&opened, ReaderBuilder::new()), local);
    // A damaged one is an error naming the object.
    let damaged = filo::column_file(&path, 1, 1);
    std::fs::write(&damaged, [1u8, 2, 3]).unwrap();
    let err = scan_opened(&opened, ReaderBuilder::new())
        .pop()
        .unwrap()
        .unwrap_err();
    assert!(err.contains(&damaged.display().to_string()), "{err}");
    // Salvage skips that chunk.
    let salvaged = scan_opened(&opened, ReaderBuilder::new().with_salvage(true));
    let rows: usize = salvaged
        .iter()
        .map(|b| b.as_ref().unwrap().num_rows())
        .sum();
    assert_eq!(rows, 5);
    // No schema.json: a missing file, named.
    std::fs::remove_file(path.join("schema.json")).unwrap();
    let err = open_counted(&path).0.unwrap_err();
    assert_eq!(err.class(), ErrorClass::Io, "{err}");
    assert_eq!(err.io_kind(), Some(std::io::ErrorKind::NotFound), "{err}");
    assert!(
        err.to_string()
            .contains(&path.join("schema.json").display().to_string()),
        "{err}"
    );
}

#[test]
fn a_remote_set_fetches_chunks_in_requests_of_at_most_64_mib() {
    // Ten chunks of 2^19 strings: before any file is fetched a string is reckoned at 32
    // bytes, so the first request takes four chunks (64 MiB); the files are tiny (one
    // constant string each), so the next request takes the other six.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("strings.filo");
    let chunk = 1 << 19;
    let schema = Arc::new(Schema::new(vec![Field::new("s", DataType::Utf8, true)]));
    let mut writer = Writer::try_new(
        &path,
        schema.clone(),
        WriterOptions::default().with_chunk_size(chunk),
    )
    .unwrap();
    let values: ArrayRef = Arc::new(StringArray::from_iter_values(std::iter::repeat_n(
        "x", chunk,
    )));
    let batch = RecordBatch::try_new(schema, vec![values]).unwrap();
    for _ in 0..10 {
        writer.write(&batch).unwrap();
    }
    writer.finish().unwrap();
    let (set, counts) = open_counted(&path);
    let rows: usize = scan_opened(&set.unwrap(), ReaderBuilder::new())
        .into_iter()
        .map(|b| b.unwrap().num_rows())
        .sum();
    assert_eq!(rows, 10 * chunk);
    assert_eq!(counts.ranges(), 1 + 10, "schema.json and the ten files");
    assert_eq!(
        counts.round_trips(),
        1 + 2,
        "schema.json, then 4 chunks, then 6"
    );
}
