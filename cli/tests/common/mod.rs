//! What the command-line tests share: running the binary, where the fixtures are, and the
//! exit-status contract every command keeps (0 success, 1 data or I/O error with one `error:`
//! line, 2 usage). Each test file is its own binary and uses only part of this module.
#![allow(
    dead_code,
    reason = "every test binary compiles this module and uses only some of its helpers"
)]

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// Runs the `arrowsmith` binary with `args`, nothing on its standard input.
pub fn arrowsmith<S: AsRef<OsStr>>(args: &[S]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_arrowsmith"))
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("run arrowsmith")
}

/// `data/<relative>` of the repository: the fixtures, written by the formats' reference tools.
pub fn data(relative: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../data")
        .join(relative)
}

/// A path as a command-line argument.
pub fn p(path: &Path) -> &str {
    path.to_str().expect("a UTF-8 path")
}

pub fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Succeeded; returns what it printed.
#[track_caller]
pub fn assert_ok(out: &Output) -> String {
    assert_ok_bytes(out);
    stdout(out)
}

/// Succeeded; returns its standard output as bytes (an Arrow stream, say).
#[track_caller]
pub fn assert_ok_bytes(out: &Output) -> &[u8] {
    assert_eq!(
        out.status.code(),
        Some(0),
        "stdout: {}\nstderr: {}",
        stdout(out),
        stderr(out)
    );
    &out.stdout
}

/// Succeeded with no warning: nothing on stderr but, after a conversion to a file, the one line
/// saying what it wrote; returns what it printed.
#[track_caller]
pub fn assert_ok_quietly(out: &Output) -> String {
    let printed = assert_ok(out);
    let err = stderr(out);
    let mut lines = err.lines();
    if let Some(first) = lines.next() {
        assert!(is_written_line(first), "stderr of a success: {err}");
    }
    assert_eq!(lines.next(), None, "stderr of a success: {err}");
    printed
}

/// `convert`'s closing line: `wrote 1,000 rows × 12 columns to out.parquet (48.2 KiB) in
/// 0.03 s` (or `appended …`).
pub fn is_written_line(line: &str) -> bool {
    (line.starts_with("wrote ") || line.starts_with("appended "))
        && line.contains(" × ")
        && line.contains(" to ")
        && line.ends_with(" s")
}

/// Failed with `code`, never a panic, the first line an `error:` naming `names`; a data or I/O
/// error (1) is that one line alone.
#[track_caller]
pub fn assert_fails(out: &Output, code: i32, names: &str) {
    let err = stderr(out);
    assert_eq!(out.status.code(), Some(code), "stderr: {err}");
    assert!(err.starts_with("error:"), "stderr: {err}");
    assert!(err.contains(names), "stderr should name {names:?}: {err}");
    assert!(!err.contains("internal error"), "a panic: {err}");
    if code == 1 {
        assert_eq!(err.lines().count(), 1, "one line: {err}");
    }
}

/// Copies the directory tree `from` to `to` (created as needed), for tests that damage a
/// fixture directory (bcolz, Filo sets) without touching the original.
pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

/// Runs `arrowsmith` with the library's test hook `ARROWSMITH_PAUSE_AT=<point>`, sends it
/// `signal` once it says it waits at that point, and returns how it ended. A build without the
/// point runs to its end unsignalled.
#[cfg(unix)]
pub fn signalled_at<S: AsRef<OsStr>>(point: &str, signal: i32, args: &[S]) -> Output {
    use std::io::{BufRead, BufReader, Read};
    let mut child = Command::new(env!("CARGO_BIN_EXE_arrowsmith"))
        .args(args)
        .env("ARROWSMITH_PAUSE_AT", point)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run arrowsmith");
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut text = String::new();
    let mut line = String::new();
    while stderr.read_line(&mut line).unwrap() > 0 {
        text.push_str(&line);
        if line.contains(&format!("paused at {point}")) {
            // SAFETY: signals our own child, which is waiting for it.
            unsafe { libc::kill(child.id() as libc::pid_t, signal) };
            break;
        }
        line.clear();
    }
    stderr.read_to_string(&mut text).unwrap();
    Output {
        status: child.wait().unwrap(),
        stdout: Vec::new(),
        stderr: text.into_bytes(),
    }
}

/// Runs `arrowsmith convert ARGS` with the test hook that kills it (SIGKILL) at `step` of its
/// commit (`ARROWSMITH_CRASH_AT`, src/test_hooks.rs), and checks that it died there.
#[cfg(unix)]
#[track_caller]
pub fn convert_killed_at(step: &str, args: &[&str]) {
    use std::os::unix::process::ExitStatusExt;
    let out = Command::new(env!("CARGO_BIN_EXE_arrowsmith"))
        .arg("convert")
        .args(args)
        .env("ARROWSMITH_CRASH_AT", step)
        .output()
        .unwrap();
    assert_eq!(
        out.status.signal(),
        Some(libc::SIGKILL),
        "not killed at {step}: {:?}, stderr: {}",
        out.status,
        stderr(&out)
    );
}

/// Runs `arrowsmith ARGS` with its output captured; fails the test if it still runs after
/// `seconds` (a hang: a FIFO opened twice, work that no bytes stand behind).
pub fn within_seconds(seconds: u64, args: &[&str]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_arrowsmith"))
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run arrowsmith");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(seconds);
    while child.try_wait().unwrap().is_none() {
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            panic!(
                "arrowsmith {args:?} still runs after {seconds} s; stderr: {}",
                stderr(&out)
            );
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}
