//! Every Jay fixture written by datatable 1.1.0 (and every damaged variant) against its
//! manifest: structure, Arrow types and every value; damaged files must fail with their class.

mod common;

use std::ops::Range;
use std::path::Path;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::*;
use arrow_array::{Array, ArrayRef, RecordBatch};
use arrow_buffer::Buffer;
use arrow_schema::{DataType, TimeUnit};
use arrowsmith::jay::{self, ColumnInfo, JayFile, Layout, ReaderBuilder, Stats};
use arrowsmith::source::{ByteSource, Counts, LocalFile};
use arrowsmith::{Error, FragmentRange};
use common::{assert_fetched_within_share, counted, data, read_error};
use serde_json::Value;

fn manifest() -> serde_json::Map<String, Value> {
    let text = std::fs::read_to_string(data("jay").join("manifest.json")).unwrap();
    serde_json::from_str::<Value>(&text)
        .unwrap()
        .as_object()
        .unwrap()
        .clone()
}

/// arrow-rs spelling of the manifest's `arrow_type`.
fn spell(t: &DataType) -> String {
    match t {
        DataType::Timestamp(TimeUnit::Nanosecond, None) => "Timestamp(Nanosecond, None)".into(),
        DataType::List(f) => format!("List({})", spell(f.data_type())),
        DataType::LargeList(f) => format!("LargeList({})", spell(f.data_type())),
        other => format!("{other:?}"),
    }
}

fn read_all(path: &Path, batch_size: usize) -> (Arc<arrow_schema::Schema>, Vec<RecordBatch>) {
    let reader = ReaderBuilder::new()
        .with_batch_size(batch_size)
        .build(path)
        .unwrap();
    let schema = arrow_array::RecordBatchReader::schema(&reader);
    let batches = reader.collect::<Result<Vec<_>, _>>().unwrap();
    (schema, batches)
}

/// Compares row `i` of `array` with a manifest value; the error says where they differ.
fn check_value(array: &ArrayRef, i: usize, expected: &Value) -> Result<(), String> {
    // Logical nulls, so that a Null column counts as all null.
    let is_null = array.logical_nulls().is_some_and(|n| n.is_null(i));
    if expected.is_null() {
        return if is_null {
            Ok(())
        } else {
            Err("expected null".into())
        };
    }
    if is_null {
        return Err(format!("got null, expected {expected}"));
    }
    let int = |got: i64| {
        if expected.as_i64() == Some(got) {
            Ok(())
        } else {
            Err(format!("got {got}, expected {expected}"))
        }
    };
    let float = |got: f64| {
        let want = match expected {
            Value::String(s) if s == "inf" => f64::INFINITY,
            Value::String(s) if s == "-inf" => f64::NEG_INFINITY,
            other => other.as_f64().ok_or(format!("expected {other}"))?,
        };
        if got.to_bits() == want.to_bits() {
            Ok(())
        } else {
            Err(format!("got {got:?}, expected {want:?}"))
        }
    };
    match array.data_type() {
        DataType::Boolean => {
            let got = array.as_boolean().value(i);
            if expected.as_bool() == Some(got) {
                Ok(())
            } else {
                Err(format!("got {got}, expected {expected}"))
            }
        }
        DataType::Int8 => int(array.as_primitive::<Int8Type>().value(i) as i64),
        DataType::Int16 => int(array.as_primitive::<Int16Type>().value(i) as i64),
        DataType::Int32 => int(array.as_primitive::<Int32Type>().value(i) as i64),
        DataType::Int64 => int(array.as_primitive::<Int64Type>().value(i)),
        DataType::Date32 => int(array.as_primitive::<Date32Type>().value(i) as i64),
        DataType::Timestamp(TimeUnit::Nanosecond, None) => {
            int(array.as_primitive::<TimestampNanosecondType>().value(i))
        }
        DataType::Float32 => float(array.as_primitive::<Float32Type>().value(i) as f64),
        DataType::Float64 => float(array.as_primitive::<Float64Type>().value(i)),
        DataType::Utf8 | DataType::LargeUtf8 => {
            let got = if let Some(a) = array.as_string_opt::<i32>() {
                a.value(i)
            } else {
                array.as_string::<i64>().value(i)
            };
            if expected.as_str() == Some(got) {
                Ok(())
            } else {
                Err(format!("got {got:?}, expected {expected}"))
            }
        }
        DataType::List(_) | DataType::LargeList(_) => {
            let items = if let Some(l) = array.as_list_opt::<i32>() {
                l.value(i)
            } else {
                array.as_list::<i64>().value(i)
            };
            let want = expected
                .as_array()
                .ok_or(format!("expected {expected}, got a list"))?;
            if items.len() != want.len() {
                return Err(format!(
                    "list of {} items, expected {expected}",
                    items.len()
                ));
            }
            for (j, w) in want.iter().enumerate() {
                check_value(&items, j, w).map_err(|e| format!("item {j}: {e}"))?;
            }
            Ok(())
        }
        DataType::Null => Err(format!(
            "a Null column holds only nulls, expected {expected}"
        )),
        other => Err(format!("unexpected type {other}")),
    }
}

fn check_stats(info: &ColumnInfo, expected: &Value) -> Result<(), String> {
    match (&info.stats, expected) {
        (None, Value::Null) => Ok(()),
        (Some(Stats::Int { min, max }), Value::Array(v))
            if v[0].as_i64() == Some(*min) && v[1].as_i64() == Some(*max) =>
        {
            Ok(())
        }
        (Some(Stats::Float { min, max }), Value::Array(v)) => {
            let same = |got: f64, want: &Value| match want {
                Value::String(s) if s == "nan" => got.is_nan(),
                Value::String(s) if s == "inf" => got == f64::INFINITY,
                Value::String(s) if s == "-inf" => got == f64::NEG_INFINITY,
                w => w
                    .as_f64()
                    .map(|w| w.to_bits() == got.to_bits())
                    .unwrap_or(false),
            };
            if same(*min, &v[0]) && same(*max, &v[1]) {
                Ok(())
            } else {
                Err(format!("stats {min} {max} != {expected}"))
            }
        }
        (got, want) => Err(format!("stats {got:?} != {want}")),
    }
}

fn check_ok_fixture(name: &str, entry: &Value) {
    let path = data("jay").join(name);
    let file = JayFile::open(&path).unwrap_or_else(|e| panic!("{name}: {e}"));
    let info = file.info();
    assert_eq!(Some(info.nrows), entry["nrows"].as_u64(), "{name}: nrows");
    assert_eq!(
        Some(info.nkeys as u64),
        entry["nkeys"].as_u64(),
        "{name}: nkeys"
    );
    let columns = entry["columns"].as_array().unwrap();
    assert_eq!(info.columns.len(), columns.len(), "{name}: column count");
    for (col, want) in info.columns.iter().zip(columns) {
        let cname = want["name"].as_str().unwrap();
        assert_eq!(col.name.as_deref(), Some(cname), "{name}: column name");
        assert_eq!(
            col.jay_type.to_string(),
            want["jay_type"].as_str().unwrap(),
            "{name}/{cname}: jay type"
        );
        let layout = if col.layout == Layout::Old {
            "old"
        } else {
            "new"
        };
        assert_eq!(
            layout,
            want["layout"].as_str().unwrap(),
            "{name}/{cname}: layout"
        );
        assert_eq!(
            Some(col.nullcount),
            want["nullcount"].as_u64(),
            "{name}/{cname}: nullcount"
        );
        check_stats(col, &want["stats"]).unwrap_or_else(|e| panic!("{name}/{cname}: {e}"));
    }

    // Several batch sizes, so that values are checked across batch boundaries too.
    for batch_size in [1, 2, 7, 65_536] {
        let (schema, batches) = read_all(&path, batch_size);
        let nkeys_meta = schema.metadata().get("jay.nkeys").cloned();
        let nkeys = entry["nkeys"].as_u64().unwrap();
        assert_eq!(
            nkeys_meta,
            (nkeys > 0).then(|| nkeys.to_string()),
            "{name}: jay.nkeys metadata"
        );
        let total: usize = batches.iter().map(|b| b.num_rows()).sum();
        assert_eq!(
            total as u64, info.nrows,
            "{name}: rows read with batch size {batch_size}"
        );
        for (c, want) in columns.iter().enumerate() {
            let field = schema.field(c);
            assert_eq!(field.name(), want["name"].as_str().unwrap());
            assert!(field.is_nullable());
            assert_eq!(
                spell(field.data_type()),
                want["arrow_type"].as_str().unwrap(),
                "{name}: arrow type of {}",
                field.name()
            );
            let values = want["values"].as_array().unwrap();
            let mut row = 0;
            for batch in &batches {
                let array = batch.column(c);
                assert_eq!(array.data_type(), field.data_type());
                for i in 0..batch.num_rows() {
                    check_value(array, i, &values[row]).unwrap_or_else(|e| {
                        panic!("{name}: column {:?} row {row}: {e}", field.name())
                    });
                    row += 1;
                }
            }
            assert_eq!(row, values.len());
        }
    }
}

#[test]
fn every_good_fixture_reads_as_its_manifest_says() {
    let mut checked = 0;
    for (name, entry) in manifest() {
        if entry["expect"] == "ok" {
            check_ok_fixture(&name, &entry);
            checked += 1;
        }
    }
    assert!(checked >= 40, "only {checked} good fixtures found");
}

/// Checks that every bad fixture, read to its end as `read` opens it, fails with the class
/// its manifest gives and a message naming the file.
fn check_bad_fixtures<R>(read: impl Fn(&Path) -> arrowsmith::Result<R>)
where
    R: Iterator<Item = Result<RecordBatch, arrow_schema::ArrowError>>,
{
    let mut checked = 0;
    for (name, entry) in manifest() {
        if entry["expect"] != "error" {
            continue;
        }
        let class = entry["error_class"].as_str().unwrap();
        let path = data("jay").join(&name);
        let error = read_error(&name, read(&path));
        assert_eq!(error.class().as_str(), class, "{name}: {error}");
        let text = error.to_string();
        assert!(
            text.contains(&name),
            "{name}: the message does not name the file: {text}"
        );
        checked += 1;
    }
    assert!(checked >= 30, "only {checked} bad fixtures found");
}

#[test]
fn every_bad_fixture_fails_with_its_class() {
    check_bad_fixtures(|path| ReaderBuilder::new().build(path));
}

#[test]
fn projection_limit_and_zero_copy() {
    let path = data("jay").join("all_types.jay");
    let reader = ReaderBuilder::new()
        .with_projection(["s64", "i32"])
        .with_limit(3)
        .build(&path)
        .unwrap();
    let batches: Vec<_> = reader.collect::<Result<_, _>>().unwrap();
    assert_eq!(batches.len(), 1);
    let batch = &batches[0];
    assert_eq!(batch.num_rows(), 3);
    assert_eq!(batch.schema().field(0).name(), "s64");
    assert_eq!(batch.schema().field(1).name(), "i32");
    let i32s = batch.column(1).as_primitive::<Int32Type>();
    assert_eq!(
        i32s.iter().collect::<Vec<_>>(),
        vec![Some(591), Some(0), None]
    );

    // Index projection, and an unknown name is a clear error.
    let reader = ReaderBuilder::new()
        .with_projection([3usize])
        .build(&path)
        .unwrap();
    assert_eq!(
        arrow_array::RecordBatchReader::schema(&reader)
            .field(0)
            .name(),
        "i32"
    );
    let err = ReaderBuilder::new()
        .with_projection(["nope"])
        .build(&path)
        .err()
        .unwrap();
    assert!(err.to_string().contains("nope"), "{err}");
}

#[test]
fn fixed_width_values_and_string_bytes_are_not_copied() {
    let bytes = std::fs::read(data("jay").join("all_types.jay")).unwrap();
    let buffer = arrow_buffer::Buffer::from_vec(bytes);
    let file = Arc::new(JayFile::from_bytes(buffer.clone()).unwrap());
    let range = buffer.as_ptr() as usize..buffer.as_ptr() as usize + buffer.len();
    let inside = |p: *const u8| range.contains(&(p as usize));
    let batch = ReaderBuilder::new()
        .with_batch_size(2)
        .build_from_file(file)
        .unwrap()
        .nth(1)
        .unwrap()
        .unwrap();
    let i32s = batch
        .column_by_name("i32")
        .unwrap()
        .as_primitive::<Int32Type>();
    let f64s = batch
        .column_by_name("f64")
        .unwrap()
        .as_primitive::<Float64Type>();
    let strs = batch.column_by_name("s32").unwrap().as_string::<i32>();
    if buffer.as_ptr().align_offset(8) == 0 {
        assert!(
            inside(i32s.values().inner().as_ptr()),
            "int32 values were copied"
        );
        assert!(
            inside(f64s.values().inner().as_ptr()),
            "float64 values were copied"
        );
    }
    assert!(inside(strs.values().as_ptr()), "string bytes were copied");
    // Rows 2 and 3 of the file: the slice starts inside the column, not at its first row.
    assert_eq!(i32s.iter().collect::<Vec<_>>(), vec![None, Some(-395734)]);
}

#[test]
fn in_memory_and_copied_reads_match_the_mapped_read() {
    for name in [
        "all_types.jay",
        "arrays.jay",
        "strings.jay",
        "wide_1000.jay",
    ] {
        let path = data("jay").join(name);
        let (_, mapped) = read_all(&path, 3);
        let bytes = std::fs::read(&path).unwrap();
        let in_memory: Vec<_> = ReaderBuilder::new()
            .with_batch_size(3)
            .build_from_bytes(bytes)
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        let copied: Vec<_> = ReaderBuilder::new()
            .with_batch_size(3)
            .with_copy(true)
            .build(&path)
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(mapped, in_memory, "{name}");
        assert_eq!(mapped, copied, "{name}");
    }
}

#[test]
fn truncated_and_bit_flipped_files_never_panic() {
    // Every prefix and many single-byte corruptions of real files must give Ok or an error.
    for name in [
        "tiny.jay",
        "arrays.jay",
        "all_types_stats.jay",
        "oldstyle_rbound.jay",
    ] {
        let bytes = std::fs::read(data("jay").join(name)).unwrap();
        let step = (bytes.len() / 300).max(1);
        for cut in (0..bytes.len()).step_by(step) {
            let _ = ReaderBuilder::new()
                .build_from_bytes(bytes[..cut].to_vec())
                .map(|r| r.count());
        }
        for at in (0..bytes.len()).step_by(step) {
            for flip in [0x01u8, 0x80, 0xFF] {
                let mut damaged = bytes.clone();
                damaged[at] ^= flip;
                if let Ok(reader) = ReaderBuilder::new()
                    .with_batch_size(2)
                    .build_from_bytes(damaged)
                {
                    for batch in reader {
                        if batch.is_err() {
                            break;
                        }
                    }
                }
            }
        }
    }
}

#[test]
fn rows_without_data_count_against_the_dataless_cap() {
    // arr_void.jay: a list<null> column, rows [null], [], null, [null, null]; its void child
    // holds its 3 elements in no bytes. void_only.jay: 3 rows of two void columns.
    let arrays = data("jay").join("arr_void.jay");
    let read = |path: &Path, cap: u64| {
        ReaderBuilder::new()
            .with_max_dataless_rows(cap)
            .build(path)
            .map(|r| r.map(|b| b.unwrap().num_rows()).sum::<usize>())
    };
    assert_eq!(read(&arrays, 3).unwrap(), 4);
    let error = read(&arrays, 2).unwrap_err();
    assert_eq!(error.class(), arrowsmith::ErrorClass::BadMeta, "{error}");
    let text = error.to_string();
    assert!(
        text.contains("arr_void.jay")
            && text.contains("column 0 \"l\"")
            && text.contains("3 elements"),
        "{text}"
    );
    let void = data("jay").join("void_only.jay");
    assert_eq!(read(&void, 3).unwrap(), 3);
    let error = read(&void, 2).unwrap_err();
    assert!(error.to_string().contains("claims 3 rows"), "{error}");
    // A limit reads fewer rows, within the cap.
    let limited = ReaderBuilder::new()
        .with_max_dataless_rows(2)
        .with_limit(2)
        .build(&void)
        .unwrap();
    assert_eq!(limited.map(|b| b.unwrap().num_rows()).sum::<usize>(), 2);
    // The rows of a frame with a column of data are backed by its bytes: no cap applies.
    let tiny = data("jay").join("tiny.jay");
    assert_eq!(read(&tiny, 0).unwrap(), 3);
}

// ---- Reading by ranges: a source that is not local (`Counting` reads as a remote object) ----

/// Bytes a ranged open fetches besides the meta: the 8-byte header and the file's last 64 KiB.
const TAIL: u64 = 64 << 10;

/// The fixture `bytes` with `PAD` zero bytes between the data section and the meta: still a
/// valid Jay file (buffers are placed from byte 8, the meta from the end), whose data lies
/// outside the tail an open fetches, so that every read of it goes to the source.
fn padded(bytes: &[u8]) -> Vec<u8> {
    const PAD: usize = 128 << 10;
    let n = bytes.len();
    let meta_size = u64::from_le_bytes(bytes[n - 16..n - 8].try_into().unwrap()) as usize;
    let meta_start = n - 16 - meta_size;
    let mut out = bytes[..meta_start].to_vec();
    out.resize(meta_start + PAD, 0);
    out.extend_from_slice(&bytes[meta_start..]);
    out
}

/// A source whose buffers all start at odd addresses, as a remote client's may.
#[derive(Debug)]
struct Unaligned(LocalFile);

impl ByteSource for Unaligned {
    fn location(&self) -> &str {
        self.0.location()
    }

    fn size(&self) -> u64 {
        self.0.size()
    }

    fn read_ranges(&self, ranges: &[Range<u64>]) -> arrowsmith::Result<Vec<Buffer>> {
        let buffers = self.0.read_ranges(ranges)?;
        Ok(buffers
            .iter()
            .map(|b| {
                let mut shifted = Vec::with_capacity(b.len() + 1);
                shifted.push(0);
                shifted.extend_from_slice(b);
                Buffer::from_vec(shifted).slice(1)
            })
            .collect())
    }
}

/// The Jay file `source` reads, opened by ranges, and what the open fetched.
fn open_counted<S: ByteSource + 'static>(source: S) -> (Arc<JayFile>, Arc<Counts>) {
    let (source, counts) = counted(source);
    let file = JayFile::open_source(source, false).unwrap();
    (Arc::new(file), counts)
}

fn collect(builder: ReaderBuilder, file: &Arc<JayFile>) -> Result<Vec<RecordBatch>, Error> {
    builder
        .build_from_file(Arc::clone(file))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(Error::from)
}

/// Every way the tests read a file: whole (in batches of 2 rows, and of the default size), each
/// column alone, every other column, three limits, and each fragment of about a third of the
/// rows (as `arrowsmith::open_fragment` reads one).
fn reads(file: &JayFile) -> Vec<(String, ReaderBuilder)> {
    let ncols = file.schema().fields().len();
    let nrows = file.info().nrows as usize;
    let mut reads = vec![
        ("whole".to_owned(), ReaderBuilder::new().with_batch_size(2)),
        ("whole, one batch".to_owned(), ReaderBuilder::new()),
    ];
    for c in (0..ncols).filter(|&c| c < 20 || c + 2 > ncols) {
        let builder = ReaderBuilder::new().with_batch_size(3).with_projection([c]);
        reads.push((format!("column {c}"), builder));
    }
    let odd: Vec<usize> = (1..ncols).step_by(2).collect();
    reads.push((
        "odd columns".to_owned(),
        ReaderBuilder::new().with_projection(odd),
    ));
    for limit in [0, 1, nrows / 2] {
        let builder = ReaderBuilder::new().with_batch_size(2).with_limit(limit);
        reads.push((format!("limit {limit}"), builder));
    }
    for span in jay::fragments(file, (nrows / 3).max(1)).unwrap() {
        let builder = ReaderBuilder::new()
            .with_batch_size(2)
            .with_range(span.range);
        reads.push((format!("fragment {:?}", span.range), builder));
    }
    reads
}

/// Bytes of the buffers of column `c` (validity, values or offsets, string bytes).
fn column_bytes(file: &JayFile, c: usize) -> u64 {
    let column = &file.info().columns[c];
    [column.validity, column.data, column.strdata]
        .iter()
        .flatten()
        .map(|b| b.length)
        .sum()
}

#[test]
fn every_fixture_read_by_ranges_equals_its_local_read() {
    let mut checked = 0;
    for (name, entry) in manifest() {
        if entry["expect"] != "ok" {
            continue;
        }
        let path = data("jay").join(&name);
        let local = Arc::new(JayFile::open(&path).unwrap());
        let bytes = std::fs::read(&path).unwrap();
        let meta_size = local.info().meta_size;
        let opened = [
            ("as it is", open_counted(LocalFile::open(&path).unwrap())),
            (
                "padded",
                open_counted(LocalFile::from_bytes(&path, padded(&bytes))),
            ),
            (
                "padded, unaligned",
                open_counted(Unaligned(LocalFile::from_bytes(&path, padded(&bytes)))),
            ),
        ];
        for (how, (remote, counts)) in opened {
            // The open fetched the header and the tail, or the meta when it is larger; only
            // an array of voids (whose row count is its parent's last offset) takes a third
            // trip, for that offset.
            let trips = if how != "as it is" && name == "arr_void.jay" {
                3
            } else {
                2
            };
            assert!(
                counts.round_trips() <= trips,
                "{name} ({how}): {} round trips to open",
                counts.round_trips()
            );
            let most = 8 + TAIL.max(meta_size + 16 + 8) + 8 * (trips - 2);
            assert!(
                counts.bytes() <= most,
                "{name} ({how}): the open fetched {} bytes, more than {most}",
                counts.bytes()
            );
            assert_eq!(remote.schema(), local.schema(), "{name} ({how})");
            // Debug text, as NaN stats are not equal to themselves.
            assert_eq!(
                format!("{:?}", remote.info().columns),
                format!("{:?}", local.info().columns),
                "{name} ({how})"
            );
            for (what, builder) in reads(&local) {
                let expected = collect(builder.clone(), &local);
                let got = collect(builder, &remote);
                match (expected, got) {
                    (Ok(expected), Ok(got)) => {
                        assert_eq!(got, expected, "{name} ({how}), {what}")
                    }
                    (expected, got) => panic!(
                        "{name} ({how}), {what}: read by ranges {:?}, locally {:?}",
                        got.err(),
                        expected.err()
                    ),
                }
            }
        }
        checked += 1;
    }
    assert!(checked >= 40, "only {checked} good fixtures found");
}

#[test]
fn every_bad_fixture_read_by_ranges_fails_with_its_class() {
    check_bad_fixtures(|path| {
        let (source, _) = counted(LocalFile::open(path).unwrap());
        JayFile::open_source(source, false)
            .and_then(|file| ReaderBuilder::new().build_from_file(Arc::new(file)))
    });
}

#[test]
fn damage_past_the_tail_is_found_by_the_reads_of_the_damaged_column() {
    // Each a patch of a small fixture; padded, its data lies outside the tail the open
    // fetches. The open succeeds, the other columns read, and the damaged column fails with
    // the class the whole read gives, naming the file, the column and the byte offset.
    for (name, column) in [
        ("bad/str_offsets_decreasing.jay", "B"),
        ("bad/str_offset_beyond_strdata.jay", "B"),
        ("bad/str_invalid_utf8.jay", "B"),
        ("bad/bool8_value_2.jay", "b8"),
        ("bad/array_offsets_beyond_child.jay", "ai"),
    ] {
        let class = manifest()[name]["error_class"].as_str().unwrap().to_owned();
        let path = data("jay").join(name);
        let bytes = padded(&std::fs::read(&path).unwrap());
        let (file, _) = open_counted(LocalFile::from_bytes(&path, bytes));
        let names: Vec<String> = file
            .schema()
            .fields()
            .iter()
            .map(|f| f.name().clone())
            .collect();
        for other in names.iter().filter(|n| *n != column) {
            let read = collect(
                ReaderBuilder::new().with_projection([other.as_str()]),
                &file,
            );
            assert!(read.is_ok(), "{name}, column {other}: {:?}", read.err());
        }
        // The last row alone, and the first alone: a fragment that does not hold the bad
        // value still checks the column's last offset.
        let nrows = file.info().nrows;
        let mut failures = 0;
        for range in [
            FragmentRange::Whole,
            FragmentRange::Rows {
                start: nrows - 1,
                end: nrows,
            },
        ] {
            let builder = ReaderBuilder::new()
                .with_projection([column])
                .with_range(range);
            if let Err(error) = collect(builder, &file) {
                failures += 1;
                assert_eq!(error.class().as_str(), class, "{name}: {error}");
                let text = error.to_string();
                assert!(
                    text.contains(name)
                        && text.contains(&format!("{column:?}"))
                        && text.contains("at byte"),
                    "{name}: {text}"
                );
            }
        }
        assert!(
            failures >= 1,
            "{name}: the damaged column read without error"
        );
    }
    // A string column's last offset is checked by any read of the column, whatever its rows.
    let path = data("jay").join("bad/str_offsets_decreasing.jay");
    let bytes = padded(&std::fs::read(&path).unwrap());
    let (file, _) = open_counted(LocalFile::from_bytes(&path, bytes));
    let first_row = ReaderBuilder::new().with_projection(["B"]).with_limit(1);
    let error = collect(first_row, &file).unwrap_err();
    assert!(
        error.to_string().contains("the last string offset is 0"),
        "{error}"
    );
}

/// A ten-column frame of `rows` rows written by arrowsmith's Jay writer: int32, float64,
/// str32, int64, bool8, int8, int16, float32, date32, str64, each with NAs.
fn write_ten_columns(path: &Path, rows: usize) {
    use arrow_array::{
        BooleanArray, Date32Array, Float32Array, Float64Array, Int16Array, Int32Array, Int64Array,
        Int8Array, LargeStringArray, StringArray,
    };
    use arrow_schema::{Field, Schema};
    let schema = Arc::new(Schema::new(vec![
        Field::new("i32", DataType::Int32, true),
        Field::new("f64", DataType::Float64, true),
        Field::new("s32", DataType::Utf8, true),
        Field::new("i64", DataType::Int64, true),
        Field::new("b8", DataType::Boolean, true),
        Field::new("i8", DataType::Int8, true),
        Field::new("i16", DataType::Int16, true),
        Field::new("f32", DataType::Float32, true),
        Field::new("d32", DataType::Date32, true),
        Field::new("s64", DataType::LargeUtf8, true),
    ]));
    let options = jay::WriterOptions::default().with_durable(false);
    let mut writer = jay::Writer::try_new(path, schema.clone(), options).unwrap();
    let mut rng = common::Rng(0x9E37_79B9_7F4A_7C15);
    for start in (0..rows).step_by(65_536) {
        let n = 65_536.min(rows - start);
        let values: Vec<u64> = (0..n).map(|_| rng.next()).collect();
        let na = |i: usize| values[i] % 31 == 0;
        let pick = |i: usize| (!na(i)).then_some(values[i]);
        let text = |i: usize| pick(i).map(|v| format!("{:x}", v >> (v % 48)));
        let columns: Vec<ArrayRef> = vec![
            Arc::new(Int32Array::from_iter(
                (0..n).map(|i| pick(i).map(|v| v as i32 >> 1)),
            )),
            Arc::new(Float64Array::from_iter(
                (0..n).map(|i| pick(i).map(|v| v as f64)),
            )),
            Arc::new(StringArray::from_iter((0..n).map(text))),
            Arc::new(Int64Array::from_iter(
                (0..n).map(|i| pick(i).map(|v| v as i64 >> 1)),
            )),
            Arc::new(BooleanArray::from_iter(
                (0..n).map(|i| pick(i).map(|v| v & 1 == 1)),
            )),
            Arc::new(Int8Array::from_iter(
                (0..n).map(|i| pick(i).map(|v| (v % 100) as i8)),
            )),
            Arc::new(Int16Array::from_iter(
                (0..n).map(|i| pick(i).map(|v| (v % 9999) as i16)),
            )),
            Arc::new(Float32Array::from_iter(
                (0..n).map(|i| pick(i).map(|v| v as f32)),
            )),
            Arc::new(Date32Array::from_iter(
                (0..n).map(|i| pick(i).map(|v| (v % 40_000) as i32)),
            )),
            Arc::new(LargeStringArray::from_iter((0..n).map(text))),
        ];
        writer
            .write(&RecordBatch::try_new(schema.clone(), columns).unwrap())
            .unwrap();
    }
    writer.finish().unwrap();
}

#[test]
fn a_fragment_read_by_ranges_fetches_its_share_of_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ten_columns.jay");
    let rows = 200_000;
    write_ten_columns(&path, rows);
    let size = std::fs::metadata(&path).unwrap().len();
    let local = Arc::new(JayFile::open(&path).unwrap());
    let spans = jay::fragments(&local, rows / 8).unwrap();
    assert_eq!(spans.len(), 8);
    for span in spans {
        let (file, counts) = open_counted(LocalFile::open(&path).unwrap());
        let opened = (counts.round_trips(), counts.bytes());
        assert!(opened.0 <= 2 && opened.1 <= 8 + TAIL, "open: {opened:?}");
        let builder = ReaderBuilder::new().with_range(span.range);
        let got = collect(builder.clone(), &file).unwrap();
        assert_eq!(got, collect(builder, &local).unwrap(), "{:?}", span.range);
        eprintln!(
            "fragment {:?} of a {size}-byte file (share {} bytes): open {} trips {} bytes; \
             in all {} trips {} bytes",
            span.range,
            span.bytes,
            opened.0,
            opened.1,
            counts.round_trips(),
            counts.bytes()
        );
        assert_fetched_within_share(
            format_args!("fragment {:?}", span.range),
            counts.bytes(),
            span.bytes,
        );
    }

    // datatable's own layout: oldstyle_rbound.jay (6000 rows of str32, int32 and bool8 from a
    // chunked fread), padded so that its data lies outside the tail.
    let path = data("jay").join("oldstyle_rbound.jay");
    let bytes = padded(&std::fs::read(&path).unwrap());
    let local = Arc::new(JayFile::open(&path).unwrap());
    let data_bytes: u64 = (0..3).map(|c| column_bytes(&local, c)).sum();
    let spans = jay::fragments(&local, 1000).unwrap();
    assert_eq!(spans.len(), 6);
    for span in spans {
        let (file, counts) = open_counted(LocalFile::from_bytes(&path, bytes.clone()));
        counts.reset();
        let builder = ReaderBuilder::new().with_range(span.range);
        let got = collect(builder.clone(), &file).unwrap();
        assert_eq!(got, collect(builder, &local).unwrap(), "{:?}", span.range);
        let share = data_bytes / 6;
        eprintln!(
            "oldstyle_rbound.jay fragment {:?} (data share {share} of {data_bytes} bytes, \
             file {} bytes padded): read {} trips {} bytes",
            span.range,
            bytes.len(),
            counts.round_trips(),
            counts.bytes()
        );
        assert!(
            counts.bytes() <= share + share / 4 + 1024,
            "{:?}: {} bytes fetched for a share of {share}",
            span.range,
            counts.bytes()
        );
    }
}

/// A source that takes a while over every read, as a remote object does.
#[derive(Debug)]
struct Slow(LocalFile);

impl ByteSource for Slow {
    fn location(&self) -> &str {
        self.0.location()
    }

    fn size(&self) -> u64 {
        self.0.size()
    }

    fn read_ranges(&self, ranges: &[Range<u64>]) -> arrowsmith::Result<Vec<Buffer>> {
        std::thread::sleep(std::time::Duration::from_millis(50));
        self.0.read_ranges(ranges)
    }
}

#[test]
fn a_reader_dropped_mid_read_reads_nothing_after_its_drop() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ten_columns.jay");
    write_ten_columns(&path, 200_000);
    let (file, counts) = open_counted(Slow(LocalFile::open(&path).unwrap()));
    // Large enough a scan to decode its batches ahead, on the pool.
    let mut reader = ReaderBuilder::new()
        .with_batch_size(10_000)
        .build_from_file(file)
        .unwrap();
    assert_eq!(reader.next().unwrap().unwrap().num_rows(), 10_000);
    drop(reader);
    let (trips, bytes) = (counts.round_trips(), counts.bytes());
    std::thread::sleep(std::time::Duration::from_millis(300));
    assert_eq!(
        (counts.round_trips(), counts.bytes()),
        (trips, bytes),
        "the batches decoded ahead went on reading after the reader was dropped"
    );
    assert!(
        bytes < std::fs::metadata(&path).unwrap().len() / 2,
        "{bytes} bytes read"
    );
}

/// What reading one column by ranges took: the bytes of the column's buffers, the bytes and
/// round trips of the open, and the bytes and round trips of the read after it.
struct ColumnRead {
    column: u64,
    opened: u64,
    open_trips: u64,
    read: u64,
    read_trips: u64,
}

/// Opens `source` by ranges, reads its column `c` alone and checks it equals `local`'s.
#[track_caller]
fn read_one_column<S: ByteSource + 'static>(
    source: S,
    local: &Arc<JayFile>,
    c: usize,
) -> ColumnRead {
    let (file, counts) = open_counted(source);
    let (opened, open_trips) = (counts.bytes(), counts.round_trips());
    let builder = ReaderBuilder::new().with_projection([c]);
    let got = collect(builder.clone(), &file).unwrap();
    assert_eq!(got, collect(builder, local).unwrap(), "column {c}");
    ColumnRead {
        column: column_bytes(local, c),
        opened,
        open_trips,
        read: counts.bytes() - opened,
        read_trips: counts.round_trips() - open_trips,
    }
}

#[test]
fn a_one_column_projection_fetches_about_that_columns_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ten_columns.jay");
    write_ten_columns(&path, 200_000);
    let size = std::fs::metadata(&path).unwrap().len();
    let local = Arc::new(JayFile::open(&path).unwrap());
    for c in 0..10 {
        let r = read_one_column(LocalFile::open(&path).unwrap(), &local, c);
        eprintln!(
            "column {c} of a {size}-byte file: {} bytes of buffers; fetched {} bytes in {} \
             trips after an open of {} bytes",
            r.column,
            r.read,
            r.open_trips + r.read_trips,
            r.opened
        );
        // A few bytes per batch: starts rounded down to 8, the offset shared by two batches,
        // the byte after a batch's text.
        let most = r.column + r.column / 100 + 1024;
        assert!(r.read <= most, "column {c}: {} bytes", r.read);
        assert!(
            r.read + r.opened >= r.column,
            "column {c}: {} bytes",
            r.read
        );
        assert!(r.read + r.opened <= most + TAIL + 8);
    }

    // datatable's own files: a column of wide_1000.jay (1000 columns, 3 rows, a meta larger
    // than the tail) and the int32 column of oldstyle_rbound.jay, padded.
    let path = data("jay").join("wide_1000.jay");
    let local = Arc::new(JayFile::open(&path).unwrap());
    let meta = local.info().meta_size;
    for c in [0, 1, 2, 3, 500, 998, 999] {
        let r = read_one_column(LocalFile::open(&path).unwrap(), &local, c);
        assert_eq!(r.open_trips, 2, "the meta is larger than the tail");
        assert!(r.opened <= 8 + meta + 16 + 8, "{} bytes to open", r.opened);
        eprintln!(
            "wide_1000.jay column {c}: {} bytes of buffers; fetched {} bytes in {} trips after \
             an open of {} bytes ({} bytes in the file)",
            r.column,
            r.read,
            r.read_trips,
            r.opened,
            local.info().file_size
        );
        assert!(r.read <= r.column + 16, "column {c}: {} bytes", r.read);
    }
    let path = data("jay").join("oldstyle_rbound.jay");
    let bytes = padded(&std::fs::read(&path).unwrap());
    let local = Arc::new(JayFile::open(&path).unwrap());
    assert_eq!(local.schema().field(1).name(), "I");
    let r = read_one_column(LocalFile::from_bytes(&path, bytes.clone()), &local, 1);
    eprintln!(
        "oldstyle_rbound.jay column I: {} bytes of buffers; fetched {} bytes after an open of \
         {} ({} bytes padded)",
        r.column,
        r.read,
        r.opened,
        bytes.len()
    );
    assert!(
        r.read >= r.column && r.read <= r.column + 16,
        "{} bytes",
        r.read
    );
    assert!(r.opened <= 8 + TAIL, "{} bytes to open", r.opened);
}
