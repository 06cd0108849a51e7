//! Inputs that the fuzz targets (fuzz/, see docs/reliability.md) found to crash, hang or
//! over-allocate, kept so that the normal `cargo test` proves each stays fixed. Each test reads
//! its input the way the target did.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::path::{Path, PathBuf};

use arrow_schema::DataType;
use arrowsmith::{filo, jay, vs, ErrorClass};

/// The system allocator, remembering the largest single allocation of each thread, so that a
/// test can show that an input no longer makes a reader allocate what the input does not
/// justify. Per thread, because the tests run in parallel and some allocate a lot on purpose.
struct LargestAllocation;

thread_local! {
    static LARGEST: Cell<usize> = const { Cell::new(0) };
    static COUNT: Cell<usize> = const { Cell::new(0) };
}

fn note_allocation(size: usize) {
    // `try_with`: the allocator is also called while a thread's locals are torn down.
    let _ = LARGEST.try_with(|largest| largest.set(largest.get().max(size)));
    let _ = COUNT.try_with(|count| count.set(count.get() + 1));
}

unsafe impl GlobalAlloc for LargestAllocation {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        note_allocation(layout.size());
        // SAFETY: the caller's contract is passed on unchanged.
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        note_allocation(layout.size());
        // SAFETY: as above.
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: as above.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        note_allocation(new_size);
        // SAFETY: as above.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: LargestAllocation = LargestAllocation;

/// What `work` returns, and the largest single allocation this thread made while it ran.
fn largest_allocation_of<T>(work: impl FnOnce() -> T) -> (T, usize) {
    LARGEST.with(|largest| largest.set(0));
    let result = work();
    (result, LARGEST.with(Cell::get))
}

/// What `work` returns, and how many allocations this thread made while it ran.
fn allocations_of<T>(work: impl FnOnce() -> T) -> (T, usize) {
    let before = COUNT.with(Cell::get);
    let result = work();
    (result, COUNT.with(Cell::get) - before)
}

/// The error that ends reading `path` as `format`: the file opens, and a batch fails.
fn first_batch_error(path: &std::path::Path, format: arrowsmith::Format) -> arrowsmith::Error {
    let options = arrowsmith::ReadOptions::for_format(format);
    let reader = arrowsmith::open(path, &options).unwrap();
    let error = reader
        .map(|b| b.map(|_| ()))
        .collect::<Result<Vec<()>, _>>()
        .expect_err("a batch that fails");
    arrowsmith::Error::from(error)
}

fn input(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fuzz_regressions")
        .join(name)
}

#[test]
fn a_jay_frame_without_columns_but_a_huge_row_count_reads_in_few_batches() {
    // The `jay` target read this 64-byte frame (no columns, Frame.nrows = 687 865 861) in
    // batches of 3 rows, one empty batch after another, and timed out.
    let bytes = std::fs::read(input("jay_no_columns_huge_nrows.jay")).unwrap();
    let file = jay::JayFile::from_bytes(bytes.clone()).unwrap();
    let nrows = file.info().nrows as usize;
    assert!(nrows > 1 << 20, "{nrows}");
    for salvage in [false, true] {
        let reader = jay::ReaderBuilder::new()
            .with_batch_size(3)
            .with_salvage(salvage)
            .build_from_bytes(bytes.clone())
            .unwrap();
        let batches: Vec<_> = reader.map(Result::unwrap).collect();
        assert_few_batches_of(&batches, nrows);
        assert_eq!(batches[0].num_columns(), 0);
    }
}

/// Batches of a dataless frame of `nrows` rows: all its rows, in batches of at most 2^24 rows
/// (small enough for a writer to take at once), so in few of them.
fn assert_few_batches_of(batches: &[arrow_array::RecordBatch], nrows: usize) {
    const DATALESS_BATCH_ROWS: usize = 1 << 24;
    assert_eq!(batches.len(), nrows.div_ceil(DATALESS_BATCH_ROWS));
    assert!(batches.iter().all(|b| b.num_rows() <= DATALESS_BATCH_ROWS));
    assert_eq!(batches.iter().map(|b| b.num_rows()).sum::<usize>(), nrows);
}

#[test]
fn a_jay_frame_of_void_columns_with_a_huge_row_count_reads_in_few_batches() {
    // all_types.jay with Frame.nrows = 4 194 304 005: every column but the void one disagrees
    // and is dropped by salvage; the void column that is left holds no data, so nothing bounds
    // the row count, and the `jay` target timed out reading it 3 rows at a time.
    let bytes = std::fs::read(input("jay_void_columns_huge_nrows.jay")).unwrap();
    assert!(jay::JayFile::from_bytes(bytes.clone()).is_err());
    let file = jay::JayFile::from_bytes_salvaging(bytes.clone()).unwrap();
    let nrows = file.info().nrows as usize;
    assert!(nrows > 1 << 30, "{nrows}");
    assert!(!file.info().columns.is_empty());
    assert!(file
        .info()
        .columns
        .iter()
        .all(|c| c.jay_type == jay::mapping::JayType::Void0));
    let reader = jay::ReaderBuilder::new()
        .with_batch_size(3)
        .with_salvage(true)
        .build_from_bytes(bytes)
        .unwrap();
    let batches: Vec<_> = reader.map(Result::unwrap).collect();
    assert_few_batches_of(&batches, nrows);
}

#[test]
fn a_vs_meta_that_claims_gigabytes_per_vector_is_not_reserved_up_front() {
    // A 160-byte file whose meta block gives 2^28 - 1 INT16 elements per vector: each batch
    // reserved room for its rows' vectors before decoding any, 6 GiB for the `vs` target's
    // 3-row batches, and ran out of memory.
    let bytes = std::fs::read(input("vs_meta_claims_gigabytes_per_vector.vs")).unwrap();
    let ((), largest) = largest_allocation_of(|| {
        for salvage in [false, true] {
            let reader = vs::ReaderBuilder::new()
                .with_batch_size(3)
                .with_salvage(salvage)
                .build_from_bytes(bytes.clone())
                .unwrap();
            let report = reader.salvage_report().clone();
            let outcome: Result<Vec<_>, _> = reader.collect();
            // The one point's vector does not hold what the meta claims: an error, or with
            // salvage a skipped point.
            if salvage {
                assert_eq!(outcome.unwrap().len(), 0);
                assert_eq!(report.len(), 1);
            } else {
                assert!(outcome.is_err());
            }
        }
    });
    assert!(largest < 256 << 20, "{largest} bytes allocated at once");
}

#[test]
fn an_arrow_ipc_record_batch_whose_list_nulls_outrun_their_buffer_is_an_error() {
    // arrow-ipc 59 panics building this list array (a validity bitmap of 1 byte for 2^34
    // rows) instead of returning an error; the `arrow_ipc` target found it.
    let path = input("arrow_list_nulls_past_buffer.arrow");
    let error = first_batch_error(&path, arrowsmith::Format::ArrowStream);
    assert!(
        error.message().contains("record batch is malformed"),
        "{error}"
    );
    assert_eq!(error.file(), Some(path.as_path()));
    assert!(error.offset().is_some(), "{error}");
}

#[test]
fn a_parquet_file_whose_embedded_arrow_schema_is_malformed_is_an_error() {
    // The ARROW:schema metadata declares an integer 16,777,216 bits wide; arrow-ipc 59 panics
    // decoding it while parquet builds its reader. The `parquet` target found it.
    let path = input("parquet_arrow_schema_int_of_16m_bits.parquet");
    let options = arrowsmith::ReadOptions::for_format(arrowsmith::Format::Parquet);
    let error = arrowsmith::open(&path, &options).err().expect("refused");
    assert!(error.message().contains("embedded Arrow schema"), "{error}");
    assert_eq!(error.class(), arrowsmith::ErrorClass::BadMeta);
    assert_eq!(error.file(), Some(path.as_path()));
}

#[test]
fn a_parquet_column_chunk_at_a_negative_offset_is_refused_when_opened() {
    // The footer of this 808-byte file places a column chunk at a negative offset. parquet 59
    // reads the footer without complaint but asserts on the chunk's byte range when a scan
    // reaches it, so the `parquet` target panicked in the middle of its first batch.
    let path = input("parquet_column_chunk_at_negative_offset.parquet");
    let info = arrowsmith::ecosystem::parquet::describe(&path).unwrap();
    assert!(info.num_row_groups > 0);
    let options = arrowsmith::ReadOptions::for_format(arrowsmith::Format::Parquet);
    let error = arrowsmith::open(&path, &options).err().expect("refused");
    assert_eq!(error.class(), arrowsmith::ErrorClass::BadMeta, "{error}");
    assert!(error.message().contains("may be negative"), "{error}");
    assert!(error.message().contains("row group 0"), "{error}");
    assert_eq!(error.file(), Some(path.as_path()));
}

#[test]
fn a_parquet_page_that_uses_a_dictionary_its_chunk_never_gave_is_an_error() {
    // A data page of this 711-byte file is dictionary-encoded, but its column chunk has no
    // dictionary page: parquet 59 panics ("Decoder for dict should have been set") while
    // decoding the first batch. The `parquet` target found it.
    let path = input("parquet_dictionary_encoded_page_without_dictionary.parquet");
    let error = first_batch_error(&path, arrowsmith::Format::Parquet);
    assert!(error.message().contains("a page is malformed"), "{error}");
    assert!(error.message().contains("dict"), "{error}");
    assert_eq!(error.class(), arrowsmith::ErrorClass::Parquet, "{error}");
    assert_eq!(error.file(), Some(path.as_path()));
}

/// The `read` system calls this thread has made, where the kernel keeps per-thread I/O
/// accounting (`None` where it does not).
fn read_calls_of_this_thread() -> Option<u64> {
    let io = std::fs::read_to_string("/proc/thread-self/io").ok()?;
    let line = io.lines().find(|l| l.starts_with("syscr:"))?;
    line["syscr:".len()..].trim().parse().ok()
}

#[test]
fn a_parquet_page_header_that_skips_strings_past_the_end_of_the_file_is_an_error() {
    // A page header of each file declares a list of strings that runs past the end of the
    // file. parquet 59 skips each string with an `io::copy` that ends quietly at the end of the
    // file, so it went on element after element, one `read` call each: nine minutes of calls for
    // the 963-byte file in a debug build, 13.6 s for the other under the sanitizer. The `parquet`
    // target found them (finding 16). A scan that takes more than a minute fails here rather
    // than hanging the suite.
    for name in [
        "parquet_page_header_list_past_the_end_a.parquet",
        "parquet_page_header_list_past_the_end_b.parquet",
    ] {
        let path = input(name);
        let (done, result) = std::sync::mpsc::channel();
        let scanned = path.clone();
        std::thread::spawn(move || {
            let before = read_calls_of_this_thread();
            let options = arrowsmith::ReadOptions::for_format(arrowsmith::Format::Parquet);
            let error = match arrowsmith::open(&scanned, &options) {
                Err(error) => error,
                Ok(reader) => arrowsmith::Error::from(
                    reader
                        .map(|b| b.map(|_| ()))
                        .collect::<Result<Vec<()>, _>>()
                        .expect_err("a batch that fails"),
                ),
            };
            let reads = read_calls_of_this_thread()
                .zip(before)
                .map(|(after, b)| after - b);
            let _ = done.send((error, reads));
        });
        let (error, reads) = result
            .recv_timeout(std::time::Duration::from_secs(60))
            .unwrap_or_else(|_| panic!("{name}: still reading after a minute"));
        assert!(
            error.message().contains("past the end of the file"),
            "{error}"
        );
        assert_eq!(error.class(), arrowsmith::ErrorClass::Parquet, "{error}");
        assert_eq!(error.file(), Some(path.as_path()));
        if let Some(reads) = reads {
            assert!(
                reads < 1_000,
                "{name}: {reads} read calls for a file of a few hundred bytes"
            );
        }
    }
}

#[test]
fn salvage_does_not_verify_a_void_column_row_by_row() {
    // A frame that salvage reduces to a void column with a huge row count: salvage's check of
    // each column before the first batch walked the void column a million rows at a time.
    // Its 2^64 - 67 108 859 rows are beyond the cap on rows without data: refused at once.
    let bytes = std::fs::read(input("jay_salvage_verifies_huge_void_column.jay")).unwrap();
    let error = jay::ReaderBuilder::new()
        .with_batch_size(3)
        .with_salvage(true)
        .build_from_bytes(bytes.clone())
        .err()
        .expect("more rows without data than the cap");
    assert_eq!(error.class(), ErrorClass::BadMeta, "{error}");
    assert!(error.to_string().contains("max_dataless_rows"), "{error}");
    // With the cap lifted, the reader is built without a pass over the void column.
    let mut reader = jay::ReaderBuilder::new()
        .with_batch_size(3)
        .with_salvage(true)
        .with_max_dataless_rows(u64::MAX)
        .build_from_bytes(bytes)
        .unwrap();
    assert_eq!(reader.next().unwrap().unwrap().num_rows(), 1 << 24);
}

#[test]
fn a_filo_empty_vector_longer_than_its_chunk_is_refused_before_it_is_decoded() {
    // A 68-byte vector whose header makes it an EmptyVector of 13,566,063 NAs (the `filo_vector`
    // target's first byte chose Binary). That many NAs in 4 bytes is what the format allows, and
    // decoding it whole costs a 54 MB offsets buffer; but reading it as a prefix of fewer rows
    // decoded it whole too before the lengths were compared, doubling the cost of an input
    // that took 0.37 s under the sanitizer.
    let data = std::fs::read(input("filo_empty_vector_of_13m_elements.filo")).unwrap();
    let (&choice, bytes) = data.split_first().unwrap();
    assert_eq!(choice as usize % 9, 8, "the target's Binary");
    let info = filo::inspect(bytes).unwrap();
    assert_eq!(info.wire_type, filo::WireType::Empty);
    assert_eq!(info.len, 13_566_063);

    let whole = filo::decode(bytes, &DataType::Binary).unwrap();
    assert_eq!((whole.len(), whole.null_count()), (info.len, info.len));

    let (outcome, largest) =
        largest_allocation_of(|| filo::decode_rows(bytes, &DataType::Binary, info.len / 2));
    let error = outcome.expect_err("a vector longer than its chunk");
    assert_eq!(error.class(), ErrorClass::RowCountMismatch, "{error}");
    assert!(
        error.message().contains("declares 13566063 elements"),
        "{error}"
    );
    assert_eq!(error.offset(), Some(0), "{error}");
    assert_eq!(
        error.field(),
        Some("EmptyVector header (bits 8-31)"),
        "{error}"
    );
    assert!(largest < 1 << 20, "{largest} bytes allocated at once");
}

#[test]
fn an_arrow_batch_without_columns_is_not_cut_into_millions_of_empty_batches() {
    // A 1,173-byte stream: a schema of no fields, then a record batch that declares 16,646,147
    // rows. Cut to the `arrow_ipc` target's batch size of 5 it was 3.3 million empty batches,
    // 3.3 s under the sanitizer. It is handed out whole now; then the stream is damaged.
    let path = input("arrow_batch_without_columns_of_16m_rows.arrow");
    let mut options = arrowsmith::ReadOptions::for_format(arrowsmith::Format::ArrowStream);
    options.scan.batch_size = Some(5);
    let mut reader = arrowsmith::open(&path, &options).unwrap();
    assert_eq!(reader.schema().fields().len(), 0);
    let batch = reader.next().unwrap().unwrap();
    assert_eq!((batch.num_columns(), batch.num_rows()), (0, 16_646_147));
    let error = arrowsmith::Error::from(reader.next().unwrap().expect_err("damage at byte 768"));
    assert!(
        error.message().contains("unexpected NONE message"),
        "{error}"
    );
    assert_eq!(error.offset(), Some(768), "{error}");
    assert!(reader.next().is_none());

    // A row limit still cuts it.
    options.scan.limit = Some(7);
    let rows: Vec<usize> = arrowsmith::open(&path, &options)
        .unwrap()
        .map(|b| b.unwrap().num_rows())
        .collect();
    assert_eq!(rows, [7]);
}

#[test]
fn a_vs_snappy_vector_announcing_more_than_its_bytes_can_hold_is_not_allocated() {
    // A 93-byte file whose meta block claims 268,435,455 one-byte elements per vector, and
    // whose one point is 5 bytes of raw snappy data announcing exactly that: the decoder allocated (and
    // zeroed) 256 MiB for it. Such inputs, a few in every thousand the `vs` target tried, are
    // what drove its process past 2 GB (finding 11). Batches of 3 rows are decoded on the
    // calling thread, so the per-thread measure sees the decoder's allocations.
    let bytes = std::fs::read(input("vs_snappy_announces_256_mib.vs")).unwrap();
    let (outcomes, largest) = largest_allocation_of(|| {
        [false, true].map(|salvage| {
            let reader = vs::ReaderBuilder::new()
                .with_batch_size(3)
                .with_salvage(salvage)
                .build_from_bytes(bytes.clone())
                .unwrap();
            let report = reader.salvage_report().clone();
            let outcome = reader.collect::<Result<Vec<_>, _>>();
            (outcome, report.skipped())
        })
    });
    let [(strict, _), (salvaged, skipped)] = outcomes;
    let error = arrowsmith::Error::from(strict.expect_err("a vector that cannot hold its claim"));
    assert!(
        error
            .message()
            .contains("snappy data of 5 bytes announces 268435455 bytes"),
        "{error}"
    );
    assert_eq!(error.offset(), Some(16), "{error}");
    assert_eq!(salvaged.unwrap().len(), 0);
    let skipped: Vec<String> = skipped.iter().map(ToString::to_string).collect();
    // The point, and the damaged rest of the file after it.
    assert_eq!(skipped.len(), 2, "{skipped:?}");
    assert!(
        skipped
            .iter()
            .any(|s| s.contains("block at byte 16 (1 row)")
                && s.contains("announces 268435455 bytes")),
        "{skipped:?}"
    );
    // What the batch may reserve for the meta block's claim is capped at 16 MiB (finding 4).
    assert!(largest <= 16 << 20, "{largest} bytes allocated at once");
}

/// Writes `batch` to a new file of `format` through the library's format dispatch, as the
/// `write_roundtrip` target does, and reads the file back.
fn round_trip(
    format: arrowsmith::Format,
    batch: &arrow_array::RecordBatch,
) -> (arrowsmith::WriteSummary, Vec<arrow_array::RecordBatch>) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("round-trip");
    let options = arrowsmith::WriteOptions {
        format: Some(format),
        ..Default::default()
    };
    let mut writer = arrowsmith::create(&path, batch.schema(), &options).unwrap();
    writer.write(batch).unwrap();
    let summary = writer.finish().unwrap();
    let back = arrowsmith::open(&path, &arrowsmith::ReadOptions::for_format(format))
        .unwrap()
        .map(|b| b.unwrap())
        .collect();
    (summary, back)
}

#[test]
fn a_bcolz_string_ending_in_nul_reads_back_without_it_and_the_writer_says_so() {
    // `write_roundtrip` wrote the one-row string "\x16\x16\x16\0\0\0\0" to bcolz and read back
    // "\x16\x16\x16". That is the format (numpy pads fixed-width strings with NULs and strips
    // trailing ones, as docs/bcolz.md says), not damage: the target now expects it, and the
    // writer, which dropped the NULs silently, warns about each column where it happens. The
    // fuzzer's input is in fuzz/corpus/write_roundtrip/bcolz-string-ending-in-nul.
    use std::sync::Arc;
    let schema = Arc::new(arrow_schema::Schema::new(vec![
        arrow_schema::Field::new("s", DataType::Utf8, true),
        arrow_schema::Field::new("b", DataType::Binary, true),
    ]));
    let batch = arrow_array::RecordBatch::try_new(
        schema,
        vec![
            Arc::new(arrow_array::StringArray::from(vec![
                "\u{16}\u{16}\u{16}\0\0\0\0",
                "a\0b",
                "",
            ])),
            Arc::new(arrow_array::BinaryArray::from(vec![
                &b"x\0"[..],
                b"\0",
                b"y",
            ])),
        ],
    )
    .unwrap();
    let (summary, back) = round_trip(arrowsmith::Format::Bcolz, &batch);
    assert_eq!(summary.warnings.len(), 2, "{:?}", summary.warnings);
    assert!(
        summary.warnings[0].contains("column \"s\": 1 value(s) end in NUL"),
        "{:?}",
        summary.warnings
    );
    assert!(
        summary.warnings[1].contains("column \"b\": 2 value(s) end in NUL"),
        "{:?}",
        summary.warnings
    );

    use arrow_array::cast::AsArray;
    let strings: Vec<&str> = back[0]
        .column(0)
        .as_string::<i32>()
        .iter()
        .map(|v| v.unwrap())
        .collect();
    assert_eq!(strings, ["\u{16}\u{16}\u{16}", "a\0b", ""]);
    let bytes: Vec<&[u8]> = back[0]
        .column(1)
        .as_binary::<i32>()
        .iter()
        .map(|v| v.unwrap())
        .collect();
    assert_eq!(bytes, [&b"x"[..], b"", b"y"]);
}

#[test]
fn a_dataseries_double_keeps_its_bits_a_signalling_nan_included() {
    // `write_roundtrip` wrote the float64 with bits 0xFFF5_7C6E_F700_FF0D (a signalling NaN) to
    // DataSeries and read back 0xFFFD_7C6E_F700_FF0D: the writer subtracted a default base of
    // 0.0 from every double, and the subtraction quieted the NaN. Without `opt_doublebase` the
    // values are now stored as they are. The fuzzer's input is in
    // fuzz/corpus/write_roundtrip/dataseries-signalling-nan.
    use arrow_array::cast::AsArray;
    use std::sync::Arc;
    let bits: [u64; 5] = [
        0xFFF5_7C6E_F700_FF0D,
        0x7FF0_0000_0000_0001,
        0x7FF8_0000_0000_0000,
        0x8000_0000_0000_0000,
        1.5f64.to_bits(),
    ];
    let schema = Arc::new(arrow_schema::Schema::new(vec![arrow_schema::Field::new(
        "x",
        DataType::Float64,
        true,
    )]));
    let values =
        arrow_array::Float64Array::from_iter_values(bits.iter().map(|&b| f64::from_bits(b)));
    let batch = arrow_array::RecordBatch::try_new(schema, vec![Arc::new(values)]).unwrap();
    let (_, back) = round_trip(arrowsmith::Format::DataSeries, &batch);
    let got: Vec<u64> = back[0]
        .column(0)
        .as_primitive::<arrow_array::types::Float64Type>()
        .values()
        .iter()
        .map(|v| v.to_bits())
        .collect();
    assert_eq!(got, bits);
}

#[test]
fn a_filo_const_string_that_would_expand_to_gigabytes_is_refused_before_it_is_expanded() {
    // A `filo_vector` run (session 6) stopped on a 73-byte ConstStringVector of 6-byte strings
    // whose length field claimed millions of copies. Within the element bound (16,777,215),
    // so it was expanded: slow, not a hang. But a longer string in as few bytes would have
    // expanded to gigabytes, so the bytes of the copies are bounded as well.
    let value = "x".repeat(100);
    let copies = arrow_array::StringArray::from(vec![value.as_str(); 777]);
    let mut bytes = filo::encode_array(
        &(std::sync::Arc::new(copies) as arrow_array::ArrayRef),
        &filo::EncodeOptions::default(),
    )
    .unwrap();
    let info = filo::inspect(&bytes).unwrap();
    assert_eq!(
        (info.wire_type, info.len),
        (filo::WireType::ConstString, 777)
    );
    let at = bytes
        .windows(4)
        .position(|w| w == 777i32.to_le_bytes())
        .expect("the length field");
    bytes[at..at + 4].copy_from_slice(&(filo::MAX_EMPTY_LEN as i32).to_le_bytes());
    assert_eq!(filo::inspect(&bytes).unwrap().len, filo::MAX_EMPTY_LEN);

    let (outcome, largest) = largest_allocation_of(|| filo::decode(&bytes, &DataType::Utf8));
    let error = outcome.expect_err("1.6 GB of copies from a vector of 200 bytes");
    assert_eq!(error.class(), ErrorClass::BadValue, "{error}");
    assert_eq!(error.field(), Some("ConstStringVector.str"), "{error}");
    assert!(
        error
            .message()
            .contains("16777215 copies of a 100-byte string"),
        "{error}"
    );
    assert!(largest < 1 << 20, "{largest} bytes allocated at once");
    // The same string, as many copies as the bound allows, still reads.
    let fits = 134_217_720 / 100;
    bytes[at..at + 4].copy_from_slice(&(fits as i32).to_le_bytes());
    let array = filo::decode(&bytes, &DataType::Utf8).unwrap();
    assert_eq!(array.len(), fits);
}

#[test]
fn salvaging_a_bcolz_carray_of_thousands_of_missing_chunks_is_linear() {
    // The `bcolz` target (session 6) took 10 s on a 1,008-byte input, 17 s when replayed: a
    // `<U5` carray of 62,590 rows in chunks of 12 whose only chunk files are the three the input
    // holds. Salvage skips the other 5,213 chunks, and each skip walked every damaged range
    // met so far, building a new list per range: 13 million allocations. The ranges are now
    // kept merged in an ordered map. The input is split into files as the target splits it.
    let data = std::fs::read(input("bcolz_5216_chunks_mostly_missing.bin")).unwrap();
    let mut parts = Vec::new();
    let mut rest = &data[..];
    while parts.len() < 6 && rest.len() >= 2 {
        let len = (u16::from_le_bytes([rest[0], rest[1]]) as usize).min(rest.len() - 2);
        parts.push(&rest[2..2 + len]);
        rest = &rest[2 + len..];
    }
    let dir = tempfile::tempdir().unwrap();
    let carray = dir.path().join("c");
    std::fs::create_dir_all(carray.join("meta")).unwrap();
    std::fs::create_dir_all(carray.join("data")).unwrap();
    std::fs::write(carray.join("meta/storage"), parts[0]).unwrap();
    std::fs::write(carray.join("meta/sizes"), parts[1]).unwrap();
    for (k, chunk) in parts[2..parts.len().min(5)].iter().enumerate() {
        std::fs::write(carray.join(format!("data/__{k}.blp")), chunk).unwrap();
    }

    let report = arrowsmith::SalvageReport::default();
    let ((rows, batches_failed), allocations) = allocations_of(|| {
        let reader = arrowsmith::bcolz::ReaderBuilder::new()
            .with_batch_size(100)
            .with_read_ahead(0)
            .with_salvage(true)
            .with_salvage_report(report.clone())
            .build(&carray)
            .unwrap();
        let mut rows = 0;
        let mut failed = 0;
        for batch in reader {
            match batch {
                Ok(b) => rows += b.num_rows(),
                Err(_) => failed += 1,
            }
        }
        (rows, failed)
    });
    let skipped = report.skipped();
    assert!(skipped.len() >= 5_213, "{} chunks skipped", skipped.len());
    let lost: u64 = skipped.iter().map(|s| s.rows.unwrap_or(0)).sum();
    assert!(batches_failed <= 1, "{batches_failed} failed batches");
    assert_eq!(
        rows as u64 + lost,
        62_590,
        "every row is read or counted as lost"
    );
    assert!(
        allocations < 200 * skipped.len(),
        "{allocations} allocations for {} skipped chunks",
        skipped.len()
    );
}

#[test]
fn a_parquet_schema_element_declaring_800_million_children_is_refused_before_parquet_reserves_them()
{
    // 733- and 729-byte files whose footer's root element declares 803 million children:
    // parquet 59 reserved room for all of them (6.4 GB) before finding the second, and the
    // `parquet` target ran out of memory. In the second, the version field before the schema
    // is mistyped as a list, which parquet reads as the i32 it expects (so must the check).
    for name in [
        "parquet_schema_element_of_800m_children.parquet",
        "parquet_schema_children_after_a_mistyped_version.parquet",
    ] {
        let path = input(name);
        let options = arrowsmith::ReadOptions::for_format(arrowsmith::Format::Parquet);
        let (errors, largest) = largest_allocation_of(|| {
            [
                arrowsmith::open(&path, &options).err().expect("refused"),
                arrowsmith::ecosystem::parquet::describe(&path).expect_err("refused"),
            ]
        });
        for error in errors {
            assert_eq!(error.class(), arrowsmith::ErrorClass::BadMeta, "{error}");
            assert!(error.message().contains("803037183 children"), "{error}");
            assert_eq!(error.file(), Some(path.as_path()));
            assert!(error.offset().is_some(), "{error}");
        }
        assert!(
            largest < 1 << 20,
            "{name}: {largest} bytes allocated at once"
        );
    }
}
