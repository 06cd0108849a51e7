//! SQL end to end over the fixtures in `data/`: every query's answer is compared with the same
//! query run by DataFusion over the file's full conversion through the core reader.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow::array::RecordBatch;
use arrow::util::pretty::pretty_format_batches;
use arrowsmith::{Format, ReadOptions};
use arrowsmith_datafusion::{
    arrowsmith_error, ArrowsmithOptions, DataFrameArrowsmithExt, SessionContextArrowsmithExt,
};
use datafusion::datasource::MemTable;
use datafusion::prelude::{SessionConfig, SessionContext};

fn data(relative: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join("data")
        .join(relative)
}

fn quoted(path: &Path) -> String {
    format!("'{}'", path.display())
}

fn session() -> SessionContext {
    session_with_partitions(2)
}

fn session_with_partitions(partitions: usize) -> SessionContext {
    let config = SessionConfig::new().with_target_partitions(partitions);
    let ctx = SessionContext::new_with_config(config);
    ctx.register_arrowsmith().unwrap();
    ctx
}

async fn run(ctx: &SessionContext, sql: &str) -> Vec<RecordBatch> {
    match ctx.sql(sql).await {
        Ok(frame) => frame
            .collect()
            .await
            .unwrap_or_else(|e| panic!("{sql}: {e}")),
        Err(e) => panic!("{sql}: {e}"),
    }
}

fn lines(batches: &[RecordBatch]) -> Vec<String> {
    pretty_format_batches(batches)
        .unwrap()
        .to_string()
        .lines()
        .map(str::to_owned)
        .collect()
}

/// The rows of a table in sorted order: partitions of a scan finish in any order.
fn sorted_lines(batches: &[RecordBatch]) -> Vec<String> {
    let mut lines = lines(batches);
    lines.sort();
    lines
}

/// The whole dataset read by the core reader, as a table `t` of a plain DataFusion session.
async fn reference_session(path: &Path, format: Format) -> SessionContext {
    let options = ReadOptions {
        format: Some(format),
        ..Default::default()
    };
    let reader = arrowsmith::open(path, &options).unwrap();
    let schema = reader.schema();
    let batches: Vec<RecordBatch> = reader.map(|b| b.unwrap()).collect();
    let ctx = SessionContext::new();
    let table = MemTable::try_new(schema, vec![batches]).unwrap();
    ctx.register_table("t", Arc::new(table)).unwrap();
    ctx
}

/// Runs `sql` (with `{t}` for the table) on the path in place and on the reference; the
/// answers must be the same, row for row.
async fn same_answer(ctx: &SessionContext, path: &Path, format: Format, sql: &str) {
    let reference = reference_session(path, format).await;
    let expected = run(&reference, &sql.replace("{t}", "t")).await;
    let in_place = run(ctx, &sql.replace("{t}", &quoted(path))).await;
    assert_same_lines(
        &sorted_lines(&in_place),
        &sorted_lines(&expected),
        &format!("{sql} on {}", path.display()),
    );
}

/// Equal tables, or a failure that shows the first line that differs (not both tables).
fn assert_same_lines(actual: &[String], expected: &[String], what: &str) {
    if let Some(i) =
        (0..actual.len().max(expected.len())).find(|&i| actual.get(i) != expected.get(i))
    {
        panic!(
            "{what}: line {i} differs ({} lines vs {} expected)\n  got:      {:?}\n  expected: {:?}\n  header:   {:?}",
            actual.len(),
            expected.len(),
            actual.get(i),
            expected.get(i),
            expected.get(1)
        );
    }
}

/// Queries for a fixture: everything, counts, a projection with a limit, and aggregates over
/// `numeric` (or counts of `key` when there is none) grouped by `key`, with a filter.
fn queries(key: &str, numeric: Option<&str>) -> Vec<String> {
    let aggregates = match numeric {
        Some(n) => {
            format!("count(*) AS n, sum(\"{n}\") AS s, min(\"{n}\") AS lo, max(\"{n}\") AS hi")
        }
        None => format!("count(*) AS n, count(\"{key}\") AS k"),
    };
    let filter = match numeric {
        Some(n) => format!("\"{n}\" > 0 OR \"{key}\" IS NULL"),
        None => format!("\"{key}\" IS NOT NULL"),
    };
    vec![
        "SELECT count(*) FROM {t}".to_owned(),
        "SELECT * FROM {t}".to_owned(),
        format!("SELECT \"{key}\" FROM {{t}} ORDER BY \"{key}\" NULLS FIRST LIMIT 3"),
        format!(
            "SELECT \"{key}\", {aggregates} FROM {{t}} GROUP BY \"{key}\" ORDER BY \"{key}\" NULLS FIRST"
        ),
        format!("SELECT count(*) FROM {{t}} WHERE {filter}"),
    ]
}

#[tokio::test]
async fn every_format_answers_queries_as_its_full_conversion_does() {
    // Four partitions: the multi-extent and multi-chunk fixtures are read in several pieces.
    let ctx = session_with_partitions(4);
    let cases: &[(&str, Format, &str, Option<&str>)] = &[
        ("jay/all_types.jay", Format::Jay, "b8", Some("i64")),
        ("jay/tiny.jay", Format::Jay, "B", Some("A")),
        (
            "dataseries/generated/basic-zlib.ds",
            Format::DataSeries,
            "b",
            Some("l"),
        ),
        (
            "dataseries/generated/packing.ds",
            Format::DataSeries,
            "host",
            Some("seq"),
        ),
        ("vs/i16_r2_gzip.vs", Format::Vs, "app_data", None),
        (
            "bcolz/datasets/ctable_mixed",
            Format::Bcolz,
            "flag",
            Some("qty"),
        ),
        (
            "bcolz/datasets/num_int64",
            Format::Bcolz,
            "num_int64",
            Some("num_int64"),
        ),
        ("filo/set.filo", Format::Filo, "a", Some("b")),
    ];
    for (file, format, key, numeric) in cases {
        let path = data(file);
        for sql in queries(key, *numeric) {
            same_answer(&ctx, &path, *format, &sql).await;
        }
    }
}

fn plan_text(batches: &[RecordBatch]) -> String {
    // EXPLAIN answers with (plan_type, plan) rows; the physical plan is the one that matters.
    lines(batches).join("\n")
}

async fn explain(ctx: &SessionContext, sql: &str) -> String {
    plan_text(&run(ctx, &format!("EXPLAIN {sql}")).await)
}

#[tokio::test]
async fn count_star_is_answered_from_metadata_without_a_scan() {
    let ctx = session();
    for file in [
        "jay/all_types.jay",
        "dataseries/generated/basic-zlib.ds",
        "bcolz/datasets/ctable_mixed",
        "filo/set.filo",
    ] {
        let sql = format!("SELECT count(*) FROM {}", quoted(&data(file)));
        let plan = explain(&ctx, &sql).await;
        let physical = plan.split("physical_plan").nth(1).unwrap_or_default();
        assert!(
            !physical.contains("DataSourceExec"),
            "{file}: count(*) still scans:\n{plan}"
        );
    }
}

#[tokio::test]
async fn projection_and_limit_reach_the_reader() {
    let ctx = session();
    let sql = format!(
        "SELECT \"l\" FROM {} LIMIT 7",
        quoted(&data("dataseries/generated/basic-zlib.ds"))
    );
    let plan = explain(&ctx, &sql).await;
    assert!(plan.contains("projection=[l]"), "{plan}");
    assert!(plan.contains("limit=7"), "{plan}");
    assert!(plan.contains("file_type=dataseries"), "{plan}");
    let rows: usize = run(&ctx, &sql).await.iter().map(|b| b.num_rows()).sum();
    assert_eq!(rows, 7);
}

#[tokio::test]
async fn jay_statistics_carry_the_stored_bounds() {
    use datafusion::catalog::TableProvider;
    use datafusion::common::stats::Precision;
    use datafusion::common::ScalarValue;
    let path = data("jay/all_types_stats.jay");
    let table = arrowsmith_datafusion::ArrowsmithTable::open(&path, None, Default::default())
        .await
        .unwrap();
    let statistics = table.statistics().unwrap();
    assert_eq!(statistics.num_rows, Precision::Exact(5));
    let i8_column = &statistics.column_statistics[1];
    assert_eq!(
        i8_column.min_value,
        Precision::Inexact(ScalarValue::Int8(Some(-127)))
    );
    assert_eq!(
        i8_column.max_value,
        Precision::Inexact(ScalarValue::Int8(Some(127)))
    );
    assert_eq!(i8_column.null_count, Precision::Inexact(1));
}

#[tokio::test]
async fn create_external_table_works_for_every_format_with_its_options() {
    let ctx = session();
    let cases = [
        ("j", "JAY", data("jay/tiny.jay"), "", 3),
        (
            "d",
            "DATASERIES",
            data("dataseries/generated/multitype.ds"),
            "OPTIONS ('format.type' 'Test::Packing', 'format.utf8' 'true')",
            300,
        ),
        ("v", "VS", data("vs/f64_r1_plain.vs"), "", 3),
        ("b", "BCOLZ", data("bcolz/datasets/ctable_mixed"), "", 2000),
        ("f", "FILO", data("filo/set.filo"), "", 10),
    ];
    for (name, stored_as, path, options, rows) in cases {
        run(
            &ctx,
            &format!(
                "CREATE EXTERNAL TABLE {name} STORED AS {stored_as} LOCATION {} {options}",
                quoted(&path)
            ),
        )
        .await;
        let batches = run(&ctx, &format!("SELECT count(*) AS n FROM {name}")).await;
        let text = lines(&batches).join("\n");
        assert!(text.contains(&format!("| {rows} ")), "{stored_as}: {text}");
    }
    // 'format.utf8' made the DataSeries strings Utf8.
    let schema = ctx.table("d").await.unwrap().schema().clone();
    let host = schema.field_with_unqualified_name("host").unwrap();
    assert_eq!(host.data_type(), &arrow_schema::DataType::Utf8);
}

#[tokio::test]
async fn unknown_or_misplaced_options_are_errors_that_name_them() {
    let ctx = session();
    let jay = quoted(&data("jay/tiny.jay"));
    let e = ctx
        .sql(&format!(
            "CREATE EXTERNAL TABLE t STORED AS JAY LOCATION {jay} OPTIONS ('format.colour' 'red')"
        ))
        .await
        .unwrap_err()
        .to_string();
    assert!(e.contains("'format.colour'"), "{e}");
    let e = ctx
        .sql(&format!(
            "CREATE EXTERNAL TABLE t STORED AS JAY LOCATION {jay} OPTIONS ('format.type' 'x')"
        ))
        .await
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("'format.type' applies to dataseries input, not jay"),
        "{e}"
    );
}

#[tokio::test]
async fn a_directory_of_files_is_one_table() {
    // Not the default ".tmp…" name: DataFusion's listing skips hidden directories.
    let dir = tempfile::Builder::new().prefix("parts").tempdir().unwrap();
    for i in 0..3 {
        std::fs::copy(
            data("dataseries/generated/basic-zlib.ds"),
            dir.path().join(format!("part-{i}.ds")),
        )
        .unwrap();
    }
    std::fs::write(dir.path().join("README.txt"), "not a table").unwrap();
    let ctx = session();
    // As a path …
    let batches = run(
        &ctx,
        &format!(
            "SELECT count(*) AS n, sum(l) AS s FROM {}",
            quoted(dir.path())
        ),
    )
    .await;
    let single = run(
        &ctx,
        &format!(
            "SELECT count(*) AS n, sum(l) AS s FROM {}",
            quoted(&data("dataseries/generated/basic-zlib.ds"))
        ),
    )
    .await;
    let n = |b: &[RecordBatch]| {
        arrow::array::AsArray::as_primitive::<arrow::datatypes::Int64Type>(b[0].column(0).as_ref())
            .value(0)
    };
    assert_eq!(n(&batches), 3 * n(&single));
    // … and as a LOCATION.
    run(
        &ctx,
        &format!(
            "CREATE EXTERNAL TABLE parts STORED AS DATASERIES LOCATION '{}/'",
            dir.path().display()
        ),
    )
    .await;
    let listed = run(&ctx, "SELECT count(*) AS n FROM parts").await;
    assert_eq!(n(&listed), 3 * n(&single));
}

/// Reads a whole output back through the core reader.
fn read_back(path: &Path) -> Vec<RecordBatch> {
    arrowsmith::open(path, &ReadOptions::default())
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .map(|b| b.unwrap())
        .collect()
}

#[tokio::test]
async fn copy_to_writes_every_format_readable_by_the_core() {
    let ctx = session();
    let dir = tempfile::tempdir().unwrap();
    let source = quoted(&data("bcolz/datasets/ctable_mixed"));
    // Jay stores a float NaN as NA: leave NaN out (it is greater than every number to DataFusion).
    let query = format!(
        "SELECT id, qty, price, name FROM {source} WHERE qty > 10 AND price < 1e9 ORDER BY id"
    );
    let expected = lines(&run(&ctx, &query).await);
    for (file, stored_as) in [
        ("out.jay", ""),
        ("out.ds", ""),
        ("out.bcolz", ""),
        ("out.filo", ""),
        ("out_as_dataseries", "STORED AS DATASERIES"),
        ("out.parquet", ""),
        ("out_no_sync.jay", "OPTIONS ('format.no_sync' 'true')"),
    ] {
        let target = dir.path().join(file);
        let written = run(
            &ctx,
            &format!("COPY ({query}) TO '{}' {stored_as}", target.display()),
        )
        .await;
        assert!(lines(&written).join("\n").contains("| "), "{file}");
        let back = read_back(&target);
        let ctx2 = SessionContext::new();
        let table = MemTable::try_new(back[0].schema(), vec![back]).unwrap();
        ctx2.register_table("t", Arc::new(table)).unwrap();
        let again = lines(&run(&ctx2, "SELECT id, qty, price, name FROM t ORDER BY id").await);
        assert_same_lines(&again, &expected, file);
    }
}

#[tokio::test]
async fn copy_to_vs_writes_the_vectors_of_a_vs_query() {
    let ctx = session();
    let dir = tempfile::tempdir().unwrap();
    let source = data("vs/f64_r1_plain.vs");
    let target = dir.path().join("copy.vs");
    run(
        &ctx,
        &format!(
            "COPY (SELECT * FROM {}) TO '{}'",
            quoted(&source),
            target.display()
        ),
    )
    .await;
    // Without ORDER BY, the partitions' rows arrive in any order.
    assert_eq!(
        sorted_lines(&read_back(&target)),
        sorted_lines(&read_back(&source))
    );
}

#[tokio::test]
async fn a_failed_query_leaves_no_output() {
    let ctx = session();
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("never.jay");
    let source = quoted(&data("bcolz/datasets/ctable_mixed"));
    // The division fails at run time, after the writer was created.
    let result = match ctx
        .sql(&format!(
            "COPY (SELECT id / (id - id) AS boom FROM {source}) TO '{}'",
            target.display()
        ))
        .await
    {
        Ok(frame) => frame.collect().await.map(|_| ()),
        Err(e) => Err(e),
    };
    assert!(result.is_err());
    assert!(!target.exists());
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

#[tokio::test]
async fn copy_to_an_existing_output_needs_overwrite_and_replaces_only_an_output() {
    let ctx = session();
    let dir = tempfile::tempdir().unwrap();
    let source = quoted(&data("bcolz/datasets/ctable_mixed"));
    let copy = |target: &Path, options: &str| {
        format!(
            "COPY (SELECT id FROM {source}) TO '{}' {options}",
            target.display()
        )
    };
    let attempt = |sql: String| {
        let ctx = ctx.clone();
        async move {
            match ctx.sql(&sql).await {
                Ok(frame) => frame.collect().await.map(|_| ()),
                Err(e) => Err(e),
            }
        }
    };
    let overwrite = "OPTIONS ('format.overwrite' 'true')";
    let jay = dir.path().join("out.jay");
    run(&ctx, &copy(&jay, "")).await;
    let before = std::fs::read(&jay).unwrap();
    let error = attempt(copy(&jay, "")).await.unwrap_err();
    assert!(error.to_string().contains("already exists"), "{error}");
    assert_eq!(std::fs::read(&jay).unwrap(), before);
    run(&ctx, &copy(&jay, overwrite)).await;
    assert!(!read_back(&jay).is_empty());
    // A folder of someone's files is no bcolz dataset: refused, untouched.
    let folder = dir.path().join("folder.bcolz");
    std::fs::create_dir(&folder).unwrap();
    std::fs::write(folder.join("mine.txt"), b"mine").unwrap();
    let error = attempt(copy(&folder, overwrite)).await.unwrap_err();
    assert!(
        error
            .to_string()
            .contains("exists and is not a bcolz dataset"),
        "{error}"
    );
    assert_eq!(std::fs::read(folder.join("mine.txt")).unwrap(), b"mine");
}

#[tokio::test]
async fn damaged_files_fail_with_the_arrowsmith_error_and_never_panic() {
    let ctx = session();
    let mut checked = 0;
    let mut damaged: Vec<PathBuf> = std::fs::read_dir(data("jay/bad"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    damaged.push(data("vs/bad_truncated_block.vs"));
    damaged.push(data("vs/bad_signature.vs"));
    damaged.sort();
    for path in damaged {
        let sql = format!("SELECT * FROM {}", quoted(&path));
        let outcome = match ctx.sql(&sql).await {
            Ok(frame) => frame.collect().await.map(|_| ()),
            Err(e) => Err(e),
        };
        let Err(error) = outcome else {
            continue; // Some "bad" fixtures are only bad in a way a full read tolerates.
        };
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let text = error.to_string();
        if let Some(ours) = arrowsmith_error(&error) {
            assert!(text.contains(ours.class().as_str()), "{name}: {text}");
            checked += 1;
        }
        assert!(
            text.contains(&name) || text.contains("table"),
            "{name}: {text}"
        );
    }
    assert!(
        checked > 5,
        "only {checked} damaged files gave arrowsmith errors"
    );
}

#[tokio::test]
async fn a_damaged_extent_is_reported_with_its_file_and_offset() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("damaged.ds");
    let mut bytes = std::fs::read(data("dataseries/generated/basic-zlib.ds")).unwrap();
    // Flip a byte in the middle of the file: inside an extent, past the header.
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0x5a;
    std::fs::write(&path, bytes).unwrap();
    let ctx = session();
    let outcome = match ctx.sql(&format!("SELECT * FROM {}", quoted(&path))).await {
        Ok(frame) => frame.collect().await.map(|_| ()),
        Err(e) => Err(e),
    };
    let error = outcome.expect_err("a flipped byte inside an extent is caught by its checksum");
    let ours = arrowsmith_error(&error).expect("the arrowsmith error inside");
    assert_eq!(ours.file(), Some(path.as_path()), "{error}");
    assert!(ours.offset().is_some(), "{error}");
    assert!(error.to_string().contains("damaged.ds"), "{error}");
}

#[tokio::test]
async fn the_dataframe_api_reads_and_writes() {
    let ctx = session();
    let dir = tempfile::tempdir().unwrap();
    let frame = ctx
        .read_dataseries(
            data("dataseries/generated/basic-zlib.ds"),
            Default::default(),
        )
        .await
        .unwrap()
        .select_columns(&["i", "l", "d"])
        .unwrap();
    let target = dir.path().join("frame.jay");
    let summary = frame
        .write_arrowsmith(
            &target,
            None,
            // basic-zlib.ds holds i32::MIN, Jay's NA sentinel: store it as NA rather than fail.
            {
                let mut options = ArrowsmithOptions::default();
                options.write.jay = arrowsmith::jay::WriterOptions::default()
                    .with_sentinel_collisions(arrowsmith::CollisionPolicy::AsNull);
                options
            },
        )
        .await
        .unwrap();
    assert_eq!(summary.rows, 40);
    let back = ctx.read_jay(&target, Default::default()).await.unwrap();
    assert_eq!(back.count().await.unwrap(), 40);
    let bcolz = ctx
        .read_bcolz(data("bcolz/datasets/num_int64"), Default::default())
        .await
        .unwrap();
    assert_eq!(bcolz.count().await.unwrap(), 2500);
    let filo = ctx
        .read_filo(data("filo/set.filo"), Default::default())
        .await
        .unwrap();
    assert_eq!(filo.count().await.unwrap(), 10);
    let vs = ctx
        .read_vs(data("vs/f64_r1_plain.vs"), Default::default())
        .await
        .unwrap();
    assert_eq!(vs.count().await.unwrap(), 3);
}

#[tokio::test]
async fn csv_and_json_paths_still_go_to_datafusion() {
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("plain.csv");
    std::fs::write(&csv, "a,b\n1,x\n2,y\n").unwrap();
    let ctx = session();
    let batches = run(&ctx, &format!("SELECT sum(a) AS s FROM {}", quoted(&csv))).await;
    assert!(lines(&batches).join("\n").contains("| 3 "));
}

#[tokio::test]
async fn multi_extent_and_multi_chunk_data_is_scanned_by_several_partitions() {
    let ctx = session_with_partitions(4);
    let cases = [
        // 4 extents of 10 rows.
        ("dataseries/generated/basic-zlib.ds", 4),
        // 9 extents of about 33 rows; fragments of at least 75 rows (300 over 4 partitions)
        // take three extents each.
        ("dataseries/generated/packing.ds", 3),
        // 2,500 rows in chunks of 1,000.
        ("bcolz/datasets/num_int64", 3),
        // Two chunks of 5 rows.
        ("filo/set.filo", 2),
        // Any row range of a Jay file: 5 rows in pieces of 2.
        ("jay/all_types.jay", 3),
    ];
    for (file, groups) in cases {
        let sql = format!("SELECT * FROM {}", quoted(&data(file)));
        let plan = explain(&ctx, &sql).await;
        assert!(
            plan.contains(&format!("file_groups={{{groups} groups")),
            "{file}: expected {groups} partitions: {}",
            plan.split("file_groups=")
                .nth(1)
                .unwrap_or(&plan)
                .chars()
                .take(300)
                .collect::<String>()
        );
    }
    // A directory of files is split the same way, file by file.
    let sql = format!(
        "SELECT count(*) FROM {} WHERE l > 0",
        quoted(&data("dataseries/generated/basic-zlib.ds"))
    );
    assert!(explain(&ctx, &sql).await.contains("file_groups={4 groups"));
}

#[tokio::test]
async fn a_scan_that_needs_no_columns_still_counts_every_row() {
    let ctx = session_with_partitions(4);
    // `random() < 2` keeps every row but cannot be answered from statistics: the scan runs,
    // wanting no column at all, even from a Jay frame that has rows and no column.
    for (file, rows) in [
        ("jay/zero_cols_nrows.jay", 5),
        ("dataseries/generated/basic-zlib.ds", 40),
        ("bcolz/datasets/num_int64", 2500),
    ] {
        let sql = format!(
            "SELECT count(*) AS n FROM {} WHERE random() < 2",
            quoted(&data(file))
        );
        let text = lines(&run(&ctx, &sql).await).join("\n");
        assert!(text.contains(&format!("| {rows} ")), "{file}: {text}");
    }
}

#[tokio::test]
async fn insert_into_a_legacy_table_is_refused_and_leaves_its_files_alone() {
    // DataFusion refuses INSERT into a single-file table itself; a directory table comes to the
    // arrowsmith sink with its files, which one writer would replace rather than add to.
    let dir = tempfile::Builder::new().prefix("insert").tempdir().unwrap();
    let path = dir.path().join("frame.jay");
    std::fs::copy(data("jay/tiny.jay"), &path).unwrap();
    let before = std::fs::read(&path).unwrap();
    let ctx = session();
    run(
        &ctx,
        &format!(
            "CREATE EXTERNAL TABLE frames STORED AS JAY LOCATION '{}/'",
            dir.path().display()
        ),
    )
    .await;
    let outcome = match ctx.sql("INSERT INTO frames SELECT * FROM frames").await {
        Ok(frame) => frame.collect().await.map(|_| ()),
        Err(e) => Err(e),
    };
    let error = outcome.expect_err("an INSERT would replace the files with the new rows only");
    assert!(error.to_string().contains("COPY"), "{error}");
    assert_eq!(std::fs::read(&path).unwrap(), before);
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
}

/// The result of running `sql` to its end, or its first error.
async fn outcome(ctx: &SessionContext, sql: &str) -> datafusion::error::Result<Vec<RecordBatch>> {
    ctx.sql(sql).await?.collect().await
}

/// A session whose `s3://bucket` is an in-memory store holding a Jay file of one `id` column
/// at `data/t.jay`, registered as a front end registers the store of a URL.
async fn session_with_a_bucket() -> SessionContext {
    use object_store::{memory::InMemory, path::Path as ObjectPath, ObjectStoreExt, PutPayload};
    let dir = tempfile::tempdir().unwrap();
    let local = dir.path().join("t.jay");
    let ids: arrow::array::ArrayRef = Arc::new(arrow::array::Int64Array::from(vec![1, 2, 3]));
    let batch = RecordBatch::try_from_iter([("id", ids)]).unwrap();
    let reader = arrow::array::RecordBatchIterator::new([Ok(batch.clone())], batch.schema());
    arrowsmith::write_all(reader, &local, &Default::default()).unwrap();
    let store = InMemory::new();
    let bytes = std::fs::read(&local).unwrap();
    store
        .put(&ObjectPath::from("data/t.jay"), PutPayload::from(bytes))
        .await
        .unwrap();
    let ctx = session();
    arrowsmith_datafusion::register_object_store(
        &ctx,
        "s3://bucket",
        Arc::new(store),
        &Default::default(),
    )
    .unwrap();
    ctx
}

const SECRET: &str = "wJalrXUtnFEMI-K7MDENG-EXAMPLEKEY";

#[tokio::test]
async fn a_table_on_an_object_store_is_read_by_url_and_fails_clearly_without_storage() {
    let ctx = session_with_a_bucket().await;
    let options =
        format!("OPTIONS ('aws.access_key_id' 'AKIDEXAMPLE', 'aws.secret_access_key' '{SECRET}')");
    // Declared columns: nothing is read until the scan, which hands the core the object's URL.
    run(
        &ctx,
        &format!(
            "CREATE EXTERNAL TABLE declared (id BIGINT) STORED AS JAY \
             LOCATION 's3://bucket/data/t.jay' {options}"
        ),
    )
    .await;
    // Planning the scan opens the object (to split it into fragments): EXPLAIN shows why it
    // cannot, and no credential.
    let plan = explain(&ctx, "SELECT id FROM declared").await;
    assert!(plan.contains("no remote storage is registered"), "{plan}");
    assert!(!plan.contains(SECRET), "{plan}");
    let scan = outcome(&ctx, "SELECT id FROM declared").await.unwrap_err();
    let ours = arrowsmith_error(&scan).unwrap_or_else(|| panic!("not the core's error: {scan}"));
    assert_eq!(ours.class(), arrowsmith::ErrorClass::Unsupported, "{ours}");
    let text = scan.to_string();
    assert!(text.contains("no remote storage is registered"), "{text}");
    assert!(text.contains("s3://bucket/data/t.jay"), "{text}");
    assert!(!text.contains(SECRET), "{text}");

    // A prefix ending in / is a directory of files, listed through the registered store;
    // each listed object is opened by its URL, here when the schema is inferred.
    for location in ["s3://bucket/data/", "s3://bucket/data/t.jay"] {
        let sql = format!("CREATE EXTERNAL TABLE t STORED AS JAY LOCATION '{location}' {options}");
        let e = outcome(&ctx, &sql).await.unwrap_err().to_string();
        assert!(e.contains("no remote storage is registered"), "{e}");
        assert!(e.contains("s3://bucket/data/t.jay"), "{e}");
        assert!(!e.contains(SECRET), "{e}");
    }

    // A bcolz dataset's key prefix is one table.
    let sql = "CREATE EXTERNAL TABLE b STORED AS BCOLZ LOCATION 's3://bucket/t.bcolz/'";
    let e = outcome(&ctx, sql).await.unwrap_err().to_string();
    assert!(e.contains("no remote storage is registered"), "{e}");
    assert!(e.contains("s3://bucket/t.bcolz"), "{e}");
}

#[tokio::test]
async fn copy_to_a_url_goes_to_the_core_and_fails_clearly_without_storage() {
    let ctx = session();
    let sql = format!(
        "COPY (SELECT 1 AS x) TO 's3://bucket/out.jay' OPTIONS ('aws.secret_access_key' '{SECRET}')"
    );
    let e = outcome(&ctx, &sql).await.unwrap_err();
    let text = e.to_string();
    assert!(text.contains("no remote storage is registered"), "{text}");
    assert!(text.contains("s3://bucket/out.jay"), "{text}");
    assert!(!text.contains(SECRET), "{text}");
    // Nothing was written to a local path spelled like the URL.
    assert!(!Path::new("s3:").exists());
}
