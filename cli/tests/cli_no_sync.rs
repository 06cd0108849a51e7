//! `--no-sync`: every output format is written without a single fsync, and is still whole and
//! readable; without the flag every one is flushed before its rename. The flushes are counted
//! with strace, the only way to see them from outside; where strace cannot trace (not
//! installed, or ptrace forbidden), the test says so and checks only that the outputs read back.

mod common;

use std::path::Path;
use std::process::Command;

use arrowsmith::{Format, ReadOptions};
use common::{arrowsmith, assert_fails, assert_ok, data, p};

/// The fsync and fdatasync calls of one run of the binary (all threads), or `None` when strace
/// cannot trace here.
fn flushes_of(args: &[&str], trace: &Path) -> Option<usize> {
    let status = Command::new("strace")
        .args(["-f", "-qq", "-e", "trace=fsync,fdatasync", "-o", p(trace)])
        .arg(env!("CARGO_BIN_EXE_arrowsmith"))
        .args(args)
        .output()
        .ok()?;
    if !status.status.success() {
        assert!(
            !String::from_utf8_lossy(&status.stderr).contains("error:"),
            "arrowsmith failed under strace: {}",
            String::from_utf8_lossy(&status.stderr)
        );
        return None;
    }
    let log = std::fs::read_to_string(trace).ok()?;
    Some(
        log.lines()
            .filter(|l| l.contains("fsync(") || l.contains("fdatasync("))
            .count(),
    )
}

fn rows_of(path: &Path, options: &ReadOptions) -> usize {
    arrowsmith::open(path, options)
        .unwrap()
        .map(|b| b.unwrap().num_rows())
        .sum()
}

#[test]
fn no_sync_writes_every_format_whole_without_flushing() {
    let tmp = tempfile::tempdir().unwrap();
    let jay = data("jay/tiny.jay");
    let vs = data("vs/f64_r1_plain.vs");
    let bcolz = data("bcolz/datasets/cp_lz4_sh1");
    // (input, output name, format, extra arguments)
    let cases: [(&Path, &str, Format, &[&str]); 11] = [
        (&jay, "t.jay", Format::Jay, &[]),
        (&jay, "t.ds", Format::DataSeries, &[]),
        (&jay, "t.filo", Format::Filo, &[]),
        (
            &jay,
            "t.bin",
            Format::FiloVector,
            &["--to", "filo-vector", "--columns", "A"],
        ),
        (&vs, "t.vs", Format::Vs, &[]),
        (&bcolz, "t.bcolz", Format::Bcolz, &[]),
        (&jay, "t.parquet", Format::Parquet, &[]),
        (&jay, "t.arrow", Format::Arrow, &[]),
        (&jay, "t.arrows", Format::ArrowStream, &[]),
        (&jay, "t.csv", Format::Csv, &[]),
        (&jay, "t.ndjson", Format::Ndjson, &[]),
    ];
    let mut traced = true;
    for (input, name, format, extra) in cases {
        let rows = rows_of(input, &ReadOptions::default());
        for (round, no_sync) in [(0, false), (1, true)] {
            let output = tmp.path().join(format!("{round}-{name}"));
            let mut args = vec!["convert", p(input), p(&output)];
            args.extend_from_slice(extra);
            if no_sync {
                args.push("--no-sync");
            }
            let trace = tmp.path().join("trace.txt");
            match flushes_of(&args, &trace) {
                Some(flushes) if no_sync => {
                    assert_eq!(flushes, 0, "{name} with --no-sync flushed {flushes} times")
                }
                Some(flushes) => assert!(flushes > 0, "{name} was not flushed"),
                None => {
                    traced = false;
                    assert_ok(&arrowsmith(&args));
                }
            }
            let mut read_as = ReadOptions::for_format(format);
            if format == Format::FiloVector {
                read_as.format_options.filo.vector_type = Some("Int".parse().unwrap());
            }
            assert_eq!(
                rows_of(&output, &read_as),
                rows,
                "{name}, --no-sync {no_sync}"
            );
        }
    }
    if !traced {
        eprintln!("strace cannot trace here: the fsync counts were not checked");
    }
}

#[test]
fn no_sync_is_refused_with_append_which_always_flushes() {
    let tmp = tempfile::tempdir().unwrap();
    let target = tmp.path().join("t.vs");
    std::fs::copy(data("vs/f64_r1_plain.vs"), &target).unwrap();
    let out = arrowsmith(&[
        "convert",
        p(&data("vs/f64_r1_plain.vs")),
        p(&target),
        "--append",
        "--no-sync",
    ]);
    assert_fails(&out, 2, "--no-sync");
}
