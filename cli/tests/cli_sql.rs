//! `arrowsmith sql`, run as a program: printed results, statements from a file, results written
//! to any format, and the exit codes of bad queries and bad data.

mod common;

use common::{arrowsmith, assert_fails, assert_ok_quietly, data, p, stderr, stdout};

use std::path::Path;

use arrowsmith::ReadOptions;

fn rows_of(path: &Path) -> usize {
    arrowsmith::open(path, &ReadOptions::default())
        .unwrap()
        .map(|b| b.unwrap().num_rows())
        .sum()
}

#[test]
fn a_query_over_a_path_prints_a_table() {
    let ds = data("dataseries/generated/basic-zlib.ds");
    let out = arrowsmith(&["sql", &format!("SELECT count(*) AS n FROM '{}'", p(&ds))]);
    assert_ok_quietly(&out);
    let text = stdout(&out);
    assert!(text.contains("| n  |"), "{text}");
    assert!(text.contains("| 40 |"), "{text}");
}

#[test]
fn results_print_as_csv_and_json() {
    let bcolz = data("bcolz/datasets/ctable_mixed");
    let query = format!("SELECT id, name FROM '{}' ORDER BY id LIMIT 2", p(&bcolz));
    let out = arrowsmith(&["sql", &query, "--format", "csv"]);
    assert_ok_quietly(&out);
    assert_eq!(stdout(&out), "id,name\n0,alpha\n1,béta\n");
    let out = arrowsmith(&["sql", &query, "--format", "json"]);
    assert_ok_quietly(&out);
    assert_eq!(
        stdout(&out),
        "{\"id\":0,\"name\":\"alpha\"}\n{\"id\":1,\"name\":\"béta\"}\n"
    );
}

#[test]
fn statements_from_a_file_run_in_order_and_the_last_is_printed() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("report.sql");
    let copy = dir.path().join("packing.jay");
    std::fs::write(
        &script,
        format!(
            "CREATE EXTERNAL TABLE packing STORED AS DATASERIES LOCATION '{}'\n\
             OPTIONS ('format.type' 'Test::Packing', 'format.utf8' 'host');\n\
             COPY (SELECT host, seq FROM packing) TO '{}';\n\
             SELECT host, count(*) AS n FROM '{}' GROUP BY host ORDER BY host;\n",
            p(&data("dataseries/generated/multitype.ds")),
            p(&copy),
            p(&copy)
        ),
    )
    .unwrap();
    let out = arrowsmith(&["sql", "-f", p(&script), "--format", "csv"]);
    assert_ok_quietly(&out);
    assert_eq!(
        stdout(&out),
        "host,n\nalpha.example,99\nbeta.example,103\ngamma.example,98\n"
    );
    assert_eq!(rows_of(&copy), 300);
}

#[test]
fn the_result_is_written_to_any_format() {
    let dir = tempfile::tempdir().unwrap();
    let query = format!(
        "SELECT id, qty, name FROM '{}' WHERE qty > 500",
        p(&data("bcolz/datasets/ctable_mixed"))
    );
    let count = arrowsmith(&[
        "sql",
        &format!("SELECT count(*) FROM ({query})"),
        "--format",
        "csv",
    ]);
    let expected: usize = stdout(&count).lines().nth(1).unwrap().parse().unwrap();
    for name in [
        "out.jay",
        "out.ds",
        "out.bcolz",
        "out.filo",
        "out.parquet",
        "out.arrow",
        "out.csv",
    ] {
        let target = dir.path().join(name);
        let out = arrowsmith(&["sql", &query, "-o", p(&target)]);
        assert_ok_quietly(&out);
        assert_eq!(stdout(&out), "", "{name}: nothing printed");
        assert_eq!(rows_of(&target), expected, "{name}");
    }
    // --to names the format of an output without an extension.
    let target = dir.path().join("no_extension");
    assert_ok_quietly(&arrowsmith(&[
        "sql",
        &query,
        "-o",
        p(&target),
        "--to",
        "jay",
    ]));
    assert_eq!(rows_of(&target), expected);
}

#[test]
fn a_query_that_fails_while_writing_leaves_no_output() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("never.jay");
    let query = format!(
        "SELECT id / (id - id) AS boom FROM '{}'",
        p(&data("bcolz/datasets/ctable_mixed"))
    );
    let out = arrowsmith(&["sql", &query, "-o", p(&target)]);
    assert_fails(&out, 1, "never.jay");
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

#[test]
fn bad_queries_are_usage_errors() {
    assert_fails(&arrowsmith(&["sql", "SELEC 1"]), 2, "SELEC");
    assert_fails(&arrowsmith(&["sql", "SELECT * FROM nowhere"]), 2, "nowhere");
    let jay = data("jay/tiny.jay");
    let out = arrowsmith(&["sql", &format!("SELECT missing FROM '{}'", p(&jay))]);
    assert_fails(&out, 2, "missing");
    let out = arrowsmith(&[
        "sql",
        &format!(
            "CREATE EXTERNAL TABLE t STORED AS JAY LOCATION '{}' OPTIONS ('format.colour' 'red')",
            p(&jay)
        ),
    ]);
    assert_fails(&out, 2, "format.colour");
    // Neither a query nor a file: clap's usage error.
    assert_eq!(arrowsmith(&["sql"]).status.code(), Some(2));
}

#[test]
fn damaged_data_and_missing_files_fail_naming_the_file() {
    let damaged = data("vs/bad_truncated_block.vs");
    let out = arrowsmith(&["sql", &format!("SELECT * FROM '{}'", p(&damaged))]);
    assert_fails(&out, 1, "bad_truncated_block.vs");
    assert!(stderr(&out).contains("at byte"), "{}", stderr(&out));
    let out = arrowsmith(&["sql", "-f", "/nonexistent/report.sql"]);
    assert_fails(&out, 1, "report.sql");
}

#[test]
fn the_result_streams_to_standard_output() {
    let jay = data("jay/all_types.jay");
    let query = format!("SELECT * FROM '{}'", p(&jay));
    let out = arrowsmith(&["sql", &query, "-o", "-"]);
    assert_ok_quietly(&out);
    let stream = arrow::ipc::reader::StreamReader::try_new(std::io::Cursor::new(&out.stdout), None)
        .expect("an Arrow IPC stream on stdout");
    let rows: usize = stream.map(|b| b.unwrap().num_rows()).sum();
    assert_eq!(rows, rows_of(&jay));

    let out = arrowsmith(&["sql", "SELECT 1 AS a, 'x' AS b", "-o", "-", "--to", "csv"]);
    assert_eq!(assert_ok_quietly(&out), "a,b\n1,x\n");

    let out = arrowsmith(&["sql", "SELECT 1 AS a", "-o", "-", "--to", "jay"]);
    assert_fails(&out, 2, "standard output");
}
