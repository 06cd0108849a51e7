//! The command line on URLs, against moto's S3 server (started on a free loopback port by each
//! test; skipped with the reason printed when it is missing, a failure with `CI=true`: see
//! store/tests/servers/mod.rs). Held fixtures are uploaded and read through `s3://` URLs by
//! `convert`, `inspect`, `head` and `fragments`, each compared with the same command on the
//! local file; outputs written to `s3://` are downloaded and compared byte for byte with the
//! local output; faults are one `error:` line naming the URL, without the secret.

mod common;
#[path = "../../store/tests/servers/mod.rs"]
mod servers;

use std::path::Path;

use arrowsmith::source::Storage;
use common::{arrowsmith, assert_fails, assert_ok, data, is_written_line, p, stderr, stdout};
use serde_json::Value;
use servers::{create_bucket, put_public, s3_options, Server, SECRET};

/// The `--storage-option`s that reach moto at `port`, with [`SECRET`] as the secret key.
fn storage(port: u16) -> Vec<String> {
    [
        format!("aws_endpoint_url=http://127.0.0.1:{port}"),
        "aws_allow_http=true".to_owned(),
        "aws_access_key_id=testing".to_owned(),
        format!("aws_secret_access_key={SECRET}"),
        "aws_region=us-east-1".to_owned(),
    ]
    .into_iter()
    .flat_map(|option| ["--storage-option".to_owned(), option])
    .collect()
}

/// Runs `arrowsmith args… --storage-option …` against moto.
fn remote(moto: &Server, args: &[&str]) -> std::process::Output {
    let mut all: Vec<String> = args.iter().map(|a| a.to_string()).collect();
    all.extend(storage(moto.port));
    arrowsmith(&all)
}

/// Uploads the local file `path` to `bucket/key`.
fn upload(moto: &Server, bucket: &str, key: &str, path: &Path) {
    put_public(moto.port, bucket, key, &std::fs::read(path).unwrap());
}

/// Uploads every file under the local directory `dir` to `bucket/prefix/…`.
fn upload_dir(moto: &Server, bucket: &str, prefix: &str, dir: &Path) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let entry = entry.unwrap();
        let name = entry.file_name().into_string().unwrap();
        let key = format!("{prefix}/{name}");
        if entry.file_type().unwrap().is_dir() {
            upload_dir(moto, bucket, &key, &entry.path());
        } else {
            upload(moto, bucket, &key, &entry.path());
        }
    }
}

/// The bytes of `bucket/key` in moto, read through the store.
fn download(moto: &Server, bucket: &str, key: &str) -> Vec<u8> {
    let url = format!("s3://{bucket}/{key}");
    let storage = arrowsmith_store::ObjectStoreStorage;
    let object = storage.open_file(&url, &s3_options(moto.port)).unwrap();
    object.read_all().unwrap().as_slice().to_vec()
}

/// Failed with exit 1 and one `error:` line naming `url`, without the secret.
#[track_caller]
fn assert_remote_fails(out: &std::process::Output, url: &str) {
    assert_fails(out, 1, url);
    let text = format!("{}{}", stdout(out), stderr(out));
    assert!(!text.contains(SECRET), "the secret in: {text}");
}

/// `text` with every occurrence of `from` replaced by `to`, after checking there is one.
#[track_caller]
fn renamed(text: &str, from: &str, to: &str) -> String {
    assert!(text.contains(from), "{from:?} not in {text}");
    text.replace(from, to)
}

/// The held single-file fixtures read remotely, by format.
const SINGLE_FILES: &[&str] = &[
    "jay/all_types.jay",
    "jay/strings.jay",
    "jay/wide_1000.jay",
    "jay/zero_rows.jay",
    "dataseries/generated/basic-lz4.ds",
    "dataseries/generated/basic-all.ds",
    "dataseries/bigendian/be-basic-zlib.ds",
    "vs/f64_r1_plain.vs",
    "vs/i16_r2_gzip.vs",
    "vs/json_r1.vs",
];

#[test]
fn fixtures_read_from_s3_equal_their_local_read() {
    let Some(moto) = servers::moto() else { return };
    create_bucket(moto.port, "fixtures");
    let dir = tempfile::tempdir().unwrap();
    for fixture in SINGLE_FILES {
        let local = data(fixture);
        let url = format!("s3://fixtures/{fixture}");
        upload(&moto, "fixtures", fixture, &local);
        let name = fixture.replace('/', "_");

        // convert, whole and projected/limited, equals the local conversion byte for byte.
        for (tag, extra) in [("all", &[][..]), ("some", &["--limit", "3"][..])] {
            let from_s3 = dir.path().join(format!("{name}.{tag}.s3.parquet"));
            let from_disk = dir.path().join(format!("{name}.{tag}.local.parquet"));
            let mut args = vec!["convert", url.as_str(), p(&from_s3)];
            args.extend_from_slice(extra);
            let out = remote(&moto, &args);
            assert_ok(&out);
            let line = stderr(&out);
            assert!(is_written_line(line.trim_end()), "{fixture}: {line}");
            let mut args = vec!["convert", p(&local), p(&from_disk)];
            args.extend_from_slice(extra);
            assert_ok(&arrowsmith(&args));
            assert!(
                std::fs::read(&from_s3).unwrap() == std::fs::read(&from_disk).unwrap(),
                "{fixture} {tag}: the remote conversion differs from the local one"
            );
        }

        // inspect, head and fragments print what they print for the local file.
        let local_text = p(&local);
        for command in [
            &["inspect"][..],
            &["inspect", "--json"][..],
            &["head", "-n", "4"][..],
        ] {
            let mut args = command.to_vec();
            args.push(&url);
            let remote_out = assert_ok(&remote(&moto, &args));
            let mut args = command.to_vec();
            args.push(local_text);
            let local_out = assert_ok(&arrowsmith(&args));
            let local_out = match command[0] {
                "head" => local_out,
                _ => renamed(&local_out, local_text, &url),
            };
            assert_eq!(remote_out, local_out, "{fixture}: {command:?}");
        }
        assert_fragments_equal(&moto, &url, local_text, fixture);
    }
}

/// `fragments` of the URL lists the local file's fragments (indexes, ranges, rows, bytes),
/// each naming the URL and its object's size; and `convert --fragment K` of the URL equals
/// that of the local file.
fn assert_fragments_equal(moto: &Server, url: &str, local: &str, fixture: &str) {
    let target = ["--target-rows", "2"];
    let list = |out: String| -> Vec<Value> {
        out.lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    };
    let mut args = vec!["fragments", url];
    args.extend_from_slice(&target);
    let remote_list = list(assert_ok(&remote(moto, &args)));
    let mut args = vec!["fragments", local];
    args.extend_from_slice(&target);
    let local_list = list(assert_ok(&arrowsmith(&args)));
    assert_eq!(remote_list.len(), local_list.len(), "{fixture}");
    let size = std::fs::metadata(local).unwrap().len();
    for (mut remote_line, local_line) in remote_list.into_iter().zip(local_list) {
        assert_eq!(remote_line["path"], url, "{fixture}");
        assert_eq!(remote_line["object"]["size"], size, "{fixture}");
        assert!(local_line.get("object").is_none(), "{fixture}");
        let object = remote_line.as_object_mut().unwrap();
        object.remove("object");
        object.insert("path".into(), local.into());
        assert_eq!(remote_line, local_line, "{fixture}");
    }
    // The last fragment, converted from the URL and from the file, to standard output.
    let k = (local_list_len(local, &target) - 1).to_string();
    let mut args = vec!["convert", url, "-", "--fragment", &k];
    args.extend_from_slice(&target);
    let remote_rows = remote(moto, &args);
    let mut args = vec!["convert", local, "-", "--fragment", &k];
    args.extend_from_slice(&target);
    let local_rows = arrowsmith(&args);
    assert_ok(&local_rows);
    assert_ok(&remote_rows);
    assert!(
        remote_rows.stdout == local_rows.stdout,
        "{fixture}: fragment {k}"
    );
}

fn local_list_len(local: &str, target: &[&str]) -> usize {
    let mut args = vec!["fragments", local];
    args.extend_from_slice(target);
    assert_ok(&arrowsmith(&args)).lines().count()
}

#[test]
fn conversions_written_to_s3_are_byte_identical_to_local_ones() {
    let Some(moto) = servers::moto() else { return };
    create_bucket(moto.port, "outputs");
    let dir = tempfile::tempdir().unwrap();
    for (input, name) in [
        ("jay/all_types.jay", "out.jay"),
        ("jay/all_types.jay", "out.parquet"),
        ("jay/all_types.jay", "out.arrow"),
        ("jay/all_types.jay", "out.csv"),
        ("dataseries/generated/basic-lz4.ds", "out.ds"),
        ("vs/i16_r2_gzip.vs", "out.vs"),
    ] {
        let input = data(input);
        let url = format!("s3://outputs/converted/{name}");
        let out = remote(&moto, &["convert", p(&input), &url]);
        assert_ok(&out);
        // The closing line names the URL and the object's size, which the store gave.
        let line = stderr(&out);
        assert!(is_written_line(line.trim_end()), "{line}");
        assert!(line.contains(&format!("to {url} (")), "{line}");
        let local = dir.path().join(name);
        assert_ok(&arrowsmith(&["convert", p(&input), p(&local)]));
        let uploaded = download(&moto, "outputs", &format!("converted/{name}"));
        assert!(
            uploaded == std::fs::read(&local).unwrap(),
            "{name}: the uploaded object differs from the local output"
        );
        // An existing object is refused without --overwrite, and replaced with it.
        let again = remote(&moto, &["convert", p(&input), &url]);
        assert_fails(&again, 2, &url);
        assert!(stderr(&again).contains("--overwrite"), "{}", stderr(&again));
        assert_ok(&remote(
            &moto,
            &["convert", p(&input), &url, "--overwrite", "--limit", "1"],
        ));
        assert_ne!(
            download(&moto, "outputs", &format!("converted/{name}")),
            uploaded,
            "{name}: not replaced"
        );
    }
}

#[test]
fn directory_datasets_are_key_prefixes() {
    let Some(moto) = servers::moto() else { return };
    create_bucket(moto.port, "datasets");
    let dir = tempfile::tempdir().unwrap();
    for (fixture, prefix) in [
        ("bcolz/datasets/ctable_mixed", "ctable_mixed.bcolz"),
        // A carray's column is named after its directory, local or remote: the same name.
        ("bcolz/datasets/num_int32", "num_int32"),
        ("filo/set.filo", "set.filo"),
    ] {
        let local = data(fixture);
        upload_dir(&moto, "datasets", prefix, &local);
        let url = format!("s3://datasets/{prefix}");
        let from_s3 = dir.path().join(format!("{prefix}.s3.arrow"));
        let from_disk = dir.path().join(format!("{prefix}.local.arrow"));
        assert_ok(&remote(&moto, &["convert", &url, p(&from_s3)]));
        assert_ok(&arrowsmith(&["convert", p(&local), p(&from_disk)]));
        assert!(
            std::fs::read(&from_s3).unwrap() == std::fs::read(&from_disk).unwrap(),
            "{fixture}: the remote conversion differs from the local one"
        );
        let remote_list = assert_ok(&remote(&moto, &["fragments", &url]));
        let local_list = assert_ok(&arrowsmith(&["fragments", p(&local)]));
        assert_eq!(
            remote_list.lines().count(),
            local_list.lines().count(),
            "{fixture}"
        );
    }

    // Written to a prefix: the objects of the local dataset, byte for byte.
    for (input, name, extra) in [
        (
            "bcolz/datasets/ctable_mixed",
            "written.bcolz",
            &["--bcolz-nulls-as-nan"][..],
        ),
        ("filo/set.filo", "written.filo", &[][..]),
    ] {
        let input = data(input);
        let local = dir.path().join(name);
        let mut args = vec!["convert", p(&input), p(&local)];
        args.extend_from_slice(extra);
        assert_ok(&arrowsmith(&args));
        let url = format!("s3://datasets/{name}");
        let mut args = vec!["convert", p(&input), &url];
        args.extend_from_slice(extra);
        let out = remote(&moto, &args);
        assert_ok(&out);
        let line = stderr(&out);
        assert!(line.contains(&format!("to {url} in ")), "{line}");
        assert_same_objects(&moto, "datasets", name, &local);
    }
}

/// Every file under the local directory `dir` is the object at `bucket/prefix/…`.
fn assert_same_objects(moto: &Server, bucket: &str, prefix: &str, dir: &Path) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let entry = entry.unwrap();
        let name = entry.file_name().into_string().unwrap();
        let key = format!("{prefix}/{name}");
        if entry.file_type().unwrap().is_dir() {
            assert_same_objects(moto, bucket, &key, &entry.path());
        } else {
            let local = std::fs::read(entry.path()).unwrap();
            assert!(download(moto, bucket, &key) == local, "{key}");
        }
    }
}

#[test]
fn faults_are_one_error_line_naming_the_url_without_the_secret() {
    let Some(moto) = servers::moto() else { return };
    create_bucket(moto.port, "faults");
    upload(&moto, "faults", "t.jay", &data("jay/all_types.jay"));
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out.parquet");

    for url in ["s3://faults/missing.jay", "s3://no-such-bucket/t.jay"] {
        for command in [
            vec!["convert", url, p(&out)],
            vec!["inspect", url],
            vec!["head", url],
            vec!["fragments", url],
        ] {
            assert_remote_fails(&remote(&moto, &command), url);
        }
    }
    assert!(!out.exists());

    // A misspelt key names itself, without its value.
    let mut args: Vec<String> = ["inspect", "s3://faults/t.jay"].map(String::from).to_vec();
    args.extend(storage(moto.port));
    args.extend([
        "--storage-option".to_owned(),
        format!("aws_secret_acess_key={SECRET}"),
    ]);
    let bad_key = arrowsmith(&args);
    assert_fails(&bad_key, 2, "s3://faults/t.jay");
    assert!(!stderr(&bad_key).contains(SECRET), "{}", stderr(&bad_key));
    assert!(
        stderr(&bad_key).contains("aws_secret_acess_key"),
        "{}",
        stderr(&bad_key)
    );

    // Appending to an object is refused before anything is read or written.
    let append = remote(
        &moto,
        &[
            "convert",
            p(&data("vs/f64_r1_plain.vs")),
            "s3://faults/t.vs",
            "--append",
        ],
    );
    assert_remote_fails(&append, "s3://faults/t.vs");
    assert!(stderr(&append).contains("--append"), "{}", stderr(&append));
}

/// Wrong credentials, which Azurite checks (moto takes any).
#[test]
fn refused_credentials_are_an_error_without_them() {
    let Some(azurite) = servers::azurite() else {
        return;
    };
    servers::create_container(azurite.port, "locked");
    let dir = tempfile::tempdir().unwrap();
    let url = "az://locked/t.jay";
    let endpoint = format!(
        "azure_storage_endpoint=http://127.0.0.1:{}/{}",
        azurite.port,
        servers::AZURITE_ACCOUNT
    );
    let account = format!("azure_storage_account_name={}", servers::AZURITE_ACCOUNT);
    let with_key = |key: &str| {
        [
            "--storage-option".to_owned(),
            format!("azure_storage_account_key={key}"),
            "--storage-option".to_owned(),
            endpoint.clone(),
            "--storage-option".to_owned(),
            account.clone(),
            "--storage-option".to_owned(),
            "allow_http=true".to_owned(),
        ]
    };
    let input = data("jay/all_types.jay");
    let mut args = vec!["convert".to_owned(), p(&input).to_owned(), url.to_owned()];
    args.extend(with_key(servers::AZURITE_KEY));
    assert_ok(&arrowsmith(&args));

    use base64::Engine;
    let wrong_key = base64::engine::general_purpose::STANDARD.encode(SECRET);
    let out = dir.path().join("out.parquet");
    for command in [
        vec!["convert".to_owned(), url.to_owned(), p(&out).to_owned()],
        vec!["inspect".to_owned(), url.to_owned()],
    ] {
        let mut args = command;
        args.extend(with_key(&wrong_key));
        let refused = arrowsmith(&args);
        assert_remote_fails(&refused, url);
        assert!(
            stderr(&refused).contains("refused the credentials"),
            "{}",
            stderr(&refused)
        );
        assert!(
            !stderr(&refused).contains(&wrong_key),
            "{}",
            stderr(&refused)
        );
    }
    assert!(!out.exists());
}

#[test]
fn a_password_in_an_http_url_is_not_shown() {
    let Some(moto) = servers::moto() else { return };
    create_bucket(moto.port, "private");
    // Plain HTTP to the object's URL with a password in it: the server answers, the message
    // names the URL without the password.
    let url = format!(
        "http://user:{SECRET}@127.0.0.1:{}/private/missing.jay",
        moto.port
    );
    let shown = format!("http://127.0.0.1:{}/private/missing.jay", moto.port);
    let out = arrowsmith(&["inspect", &url, "--storage-option", "allow_http=true"]);
    assert_remote_fails(&out, &shown);
}

#[test]
fn storage_options_are_checked_without_showing_their_values() {
    // No server needed: these fail before any request.
    let out = arrowsmith(&[
        "inspect",
        "s3://bucket/t.jay",
        "--storage-option",
        &format!("columns={SECRET}"),
    ]);
    assert_fails(&out, 2, "--storage-option columns");
    assert!(!stderr(&out).contains(SECRET), "{}", stderr(&out));
    let out = arrowsmith(&["inspect", "s3://bucket/t.jay", "--storage-option", SECRET]);
    assert_fails(&out, 2, "KEY=VALUE");
    assert!(!stderr(&out).contains(SECRET), "{}", stderr(&out));
    let out = arrowsmith(&[
        "convert",
        "s3://bucket/t.jay",
        "s3://bucket/t.jay",
        "--overwrite",
    ]);
    assert_fails(&out, 2, "same URL");
}

/// The CLI registers the URL's store in DataFusion's runtime (DataFusion lists the object
/// through it), and the arrowsmith opener hands the core the object's URL.
#[cfg(feature = "sql")]
#[test]
fn sql_reads_s3_urls() {
    let Some(moto) = servers::moto() else { return };
    create_bucket(moto.port, "sql");
    upload(&moto, "sql", "t.jay", &data("jay/all_types.jay"));
    let local = assert_ok(&arrowsmith(&[
        "sql",
        &format!(
            "SELECT count(*) AS n FROM '{}'",
            p(&data("jay/all_types.jay"))
        ),
        "--format",
        "csv",
    ]));
    let from_s3 = remote(
        &moto,
        &[
            "sql",
            "SELECT count(*) AS n FROM 's3://sql/t.jay'",
            "--format",
            "csv",
        ],
    );
    assert_eq!(assert_ok(&from_s3), local);
}
