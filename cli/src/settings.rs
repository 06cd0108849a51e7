//! The command line's spelling of the core's settings ([`arrowsmith::SETTINGS`]): each format
//! option is the flag of its key (`--bcolz-chunklen` sets `bcolz_chunklen`, `--from` and `--to`
//! the read and write `format`, `--append` the write `mode`), its value handed to the core as
//! text. Flag values are checked by the core's own parsers while clap reads them, and the core's
//! errors name their setting by key, which becomes the flag here.

use arrowsmith::options::{self, SettingKind};
use arrowsmith::{Error, ReadOptions, WriteOptions};

/// The flags of the subcommands that are no setting of the core: what to read and write,
/// how to report, and the command line's own fragment listing.
#[cfg(test)]
pub(crate) const NOT_SETTINGS: &[&str] = &[
    "quiet",
    "fragment",
    "target-rows",
    "rows",
    "verify",
    "json",
    "help",
    "version",
    // Carries the storage keys of the core's table (object_store's), each as `KEY=VALUE`.
    "storage-option",
];

/// The flag that sets `key`: `--` and the key with `-` for `_`, but for the keys whose flag
/// says more (`format` is `--from` when read, `--to` when written; `mode` is `--append`; a
/// storage key is `--storage-option KEY=…`).
pub(crate) fn flag(key: &str, kind: Option<SettingKind>) -> String {
    match (key, kind) {
        ("format", Some(SettingKind::Write)) => "--to".to_owned(),
        ("format", _) => "--from".to_owned(),
        ("mode", _) => "--append".to_owned(),
        _ if options::is_storage_key(key) => format!("--storage-option {key}=…"),
        _ => format!("--{}", key.replace('_', "-")),
    }
}

/// The core key a flag (without its `--`) sets, if it sets one.
#[cfg(test)]
pub(crate) fn key_of_flag(flag: &str) -> Option<(SettingKind, String)> {
    match flag {
        "from" => Some((SettingKind::Read, "format".to_owned())),
        "to" => Some((SettingKind::Write, "format".to_owned())),
        "append" => Some((SettingKind::Write, "mode".to_owned())),
        _ => {
            let key = flag.replace('-', "_");
            [SettingKind::Read, SettingKind::Write]
                .into_iter()
                .find(|&kind| options::setting(kind, &key).is_some())
                .map(|kind| (kind, key))
        }
    }
}

/// An error's text with the setting it names spelled as its flag.
pub(crate) fn spell_error(e: &Error) -> String {
    e.to_string_spelled(flag)
}

/// A library text (a format's description, the inspect report, a writer's warning) with every
/// setting it names spelled as its flag, and the inspect report's pointers to its own options.
pub(crate) fn spell_text(text: &str) -> String {
    let mut text = text.to_owned();
    for (words, flag) in [
        ("the JSON report", "--json"),
        ("the verify option", "--verify"),
        ("the salvage option reads", "convert --salvage reads"),
    ] {
        text = text.replace(words, flag);
    }
    for setting in options::SETTINGS {
        let phrase = Error::setting_phrase(setting.key);
        if text.contains(&phrase) {
            text = text.replace(&phrase, &flag(setting.key, Some(setting.kind)));
        }
    }
    text
}

/// A clap value parser for the flag of `key`: the core's parser checks the value, which is
/// kept as text for [`Settings`].
pub(crate) fn value_of(
    kind: SettingKind,
    key: &'static str,
) -> impl Fn(&str) -> Result<String, String> + Clone + Send + Sync + 'static {
    move |text: &str| {
        let checked = match kind {
            SettingKind::Read => ReadOptions::default().set(key, text),
            SettingKind::Write => WriteOptions::default().set(key, text),
        };
        let phrase = format!("{}: ", Error::setting_phrase(key));
        checked
            .map(|()| text.to_owned())
            .map_err(|e| e.message().trim_start_matches(&phrase).to_owned())
    }
}

/// The settings the flags of one command gave, as core keys and text values, in order.
#[derive(Debug, Default)]
pub(crate) struct Settings(pub(crate) Vec<(String, String)>);

impl Settings {
    /// `key` set to `true` when the flag was given.
    pub(crate) fn flag(&mut self, key: &str, given: bool) -> &mut Self {
        if given {
            self.0.push((key.to_owned(), "true".to_owned()));
        }
        self
    }

    /// `key` set to the flag's value, when it was given.
    pub(crate) fn value(&mut self, key: &str, value: Option<impl ToString>) -> &mut Self {
        if let Some(value) = value {
            self.0.push((key.to_owned(), value.to_string()));
        }
        self
    }

    /// Sets every read setting on `read`, checked against its format.
    pub(crate) fn read(&self, read: &mut ReadOptions) -> arrowsmith::Result<()> {
        read.set_all(self.0.iter().map(|(k, v)| (k.as_str(), v.as_str())))
    }

    /// Sets every setting on the side (or sides) the core's table has it, checked against the
    /// input's and the output's formats.
    pub(crate) fn conversion(
        &self,
        read: &mut ReadOptions,
        write: &mut WriteOptions,
    ) -> arrowsmith::Result<()> {
        for (key, value) in &self.0 {
            options::set_either(read, write, key, value)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use arrowsmith::Format;
    use clap::{CommandFactory, Parser};

    use super::*;
    use crate::Cli;

    /// A front end cannot offer a setting the core lacks: every flag of every subcommand is
    /// a key of the core's table, or one of the few that are the command line's own.
    #[test]
    fn test_every_flag_names_a_core_key() {
        let cli = Cli::command();
        let mut flags = 0;
        for command in cli.get_subcommands() {
            for arg in command.get_arguments() {
                let Some(long) = arg.get_long() else {
                    continue;
                };
                if NOT_SETTINGS.contains(&long) || (command.get_name() == "sql") {
                    continue;
                }
                flags += 1;
                let (kind, key) = key_of_flag(long)
                    .unwrap_or_else(|| panic!("--{long} of {} is no core key", command.get_name()));
                assert!(options::setting(kind, &key).is_some(), "--{long}");
                assert_eq!(flag(&key, Some(kind)), format!("--{long}"));
            }
        }
        assert!(flags > 30, "{flags} flags");
    }

    /// The same settings through the command line, SQL and Python (SQL needs the `sql`
    /// feature).
    #[cfg(feature = "sql")]
    mod across_front_ends {
        use std::collections::HashMap;

        use arrowsmith::options::SettingKind::{Read, Write};
        use arrowsmith::Format;
        use clap::Parser;

        use super::super::*;
        use crate::{Cli, Command};

        /// Every `'format.*'` key SQL takes names a core key.
        #[test]
        fn test_every_sql_key_names_a_core_key() {
            for key in arrowsmith_datafusion::sql_keys() {
                let name = key.strip_prefix("format.").unwrap();
                let core = arrowsmith_datafusion::core_key(name).unwrap_or_else(|| panic!("{key}"));
                assert!(
                    options::setting(Read, core).is_some()
                        || options::setting(Write, core).is_some(),
                    "{key}"
                );
            }
        }

        /// The options `convert` builds from its flags.
        fn from_flags(flags: &[&str], from: Format, to: Format) -> (ReadOptions, WriteOptions) {
            let mut argv = vec!["arrowsmith", "convert", "in", "out"];
            argv.extend_from_slice(flags);
            let Command::Convert(args) = Cli::try_parse_from(argv).unwrap().command else {
                panic!("not convert");
            };
            let mut read = ReadOptions::for_format(from);
            let mut write = WriteOptions {
                format: Some(to),
                ..Default::default()
            };
            let mut settings = crate::convert::settings(&args).unwrap();
            // Scan settings SQL and Python take otherwise than by key.
            settings.0.retain(|(key, _)| key != "batch_size");
            settings.conversion(&mut read, &mut write).unwrap();
            (read, write)
        }

        /// The options Python's keywords build: each keyword is its key (python/src/options.rs).
        fn from_keywords(
            keywords: &[(&str, &str)],
            from: Format,
            to: Format,
        ) -> (ReadOptions, WriteOptions) {
            let mut read = ReadOptions::for_format(from);
            let mut write = WriteOptions {
                format: Some(to),
                ..Default::default()
            };
            for (key, value) in keywords {
                if options::setting(Read, key).is_some() {
                    read.set_all([(*key, *value)]).unwrap();
                }
                if options::setting(Write, key).is_some() {
                    write.set_all([(*key, *value)]).unwrap();
                }
            }
            (read, write)
        }

        /// A format, the flags of some of its settings, and the same settings by key.
        type Case<'a> = (Format, &'a [&'a str], &'a [(&'a str, &'a str)]);

        /// Settings of every kind, as flags and by key.
        const CASES: &[Case<'static>] = &[
            (
                Format::DataSeries,
                &[
                    "--type",
                    "Test::T",
                    "--utf8=a,b",
                    "--no-checks",
                    "--compress-level",
                    "9",
                    "--extent-size",
                    "4096",
                    "--compression",
                    "lz4",
                ],
                &[
                    ("type", "Test::T"),
                    ("utf8", "a,b"),
                    ("no_checks", "true"),
                    ("compress_level", "9"),
                    ("extent_size", "4096"),
                    ("compression", "lz4"),
                ],
            ),
            (
                Format::Vs,
                &[
                    "--lenient-eof",
                    "--varint",
                    "msb-first",
                    "--app-data",
                    "msgpack",
                    "--compression",
                    "gzip",
                    "--overwrite",
                ],
                &[
                    ("lenient_eof", "true"),
                    ("varint", "msb-first"),
                    ("app_data", "msgpack"),
                    ("compression", "gzip"),
                    ("overwrite", "true"),
                ],
            ),
            (
                Format::Bcolz,
                &[
                    "--nat-as-null",
                    "false",
                    "--carray-name",
                    "c",
                    "--read-ahead",
                    "0",
                    "--bcolz-nulls-as-nan",
                    "--bcolz-chunklen",
                    "10",
                    "--bcolz-shuffle",
                    "2",
                    "--bcolz-carray",
                    "--bcolz-no-sync",
                    "--compression",
                    "zstd:3",
                    "--no-sync",
                ],
                &[
                    ("nat_as_null", "false"),
                    ("carray_name", "c"),
                    ("read_ahead", "0"),
                    ("bcolz_nulls_as_nan", "true"),
                    ("bcolz_chunklen", "10"),
                    ("bcolz_shuffle", "2"),
                    ("bcolz_carray", "true"),
                    ("bcolz_no_sync", "true"),
                    ("compression", "zstd:3"),
                    ("no_sync", "true"),
                ],
            ),
            (
                Format::Filo,
                &[
                    "--filo-dictionary",
                    "--filo-chunk-size",
                    "100",
                    "--filo-encoding",
                    "dict",
                ],
                &[
                    ("filo_dictionary", "true"),
                    ("filo_chunk_size", "100"),
                    ("filo_encoding", "dict"),
                ],
            ),
            (
                Format::FiloVector,
                &["--filo-type", "Long", "--filo-encoding", "diff"],
                &[("filo_type", "Long"), ("filo_encoding", "diff")],
            ),
            (
                Format::Jay,
                &["--sentinel-collisions-as-na", "--max-dataless-rows", "7"],
                &[
                    ("sentinel_collisions_as_na", "true"),
                    ("max_dataless_rows", "7"),
                ],
            ),
            (
                Format::Parquet,
                &["--row-group-size", "1000", "--compression", "gzip:9"],
                &[("row_group_size", "1000"), ("compression", "gzip:9")],
            ),
        ];

        /// The same settings as command-line flags, SQL `OPTIONS` and Python keywords build the
        /// same core options.
        #[test]
        fn test_the_same_settings_mean_the_same_in_every_front_end() {
            for (format, flags, keywords) in CASES {
                let (cli_read, cli_write) = from_flags(flags, *format, *format);
                let (py_read, py_write) = from_keywords(keywords, *format, *format);
                let map: HashMap<String, String> = keywords
                    .iter()
                    .map(|(k, v)| (format!("format.{k}"), v.to_string()))
                    .collect();
                let sql =
                    arrowsmith_datafusion::ArrowsmithOptions::from_map(&map, *format).unwrap();
                let untouched = from_keywords(&[], *format, *format);
                assert_ne!(
                    (format!("{cli_read:?}"), format!("{cli_write:?}")),
                    (format!("{:?}", untouched.0), format!("{:?}", untouched.1)),
                    "{format}: the flags set nothing"
                );
                assert_eq!(cli_read, py_read, "{format}: flags and keywords");
                assert_eq!(cli_read.format_options, sql.read, "{format}: flags and SQL");
                let sql_write = WriteOptions {
                    format: Some(*format),
                    ..sql.write.clone()
                };
                assert_eq!(
                    format!("{cli_write:?}"),
                    format!("{py_write:?}"),
                    "{format}"
                );
                assert_eq!(
                    format!("{cli_write:?}"),
                    format!("{sql_write:?}"),
                    "{format}"
                );
            }
        }
    }

    /// `--storage-option KEY=VALUE` sets, on both sides of a conversion, what the same keys
    /// set by name do (Python's `storage_options`, the core's `set`); a non-storage key is
    /// refused, naming the flag and not the value.
    #[test]
    fn test_storage_options_are_the_core_storage_settings() {
        let argv = [
            "arrowsmith",
            "convert",
            "in.jay",
            "s3://b/out.parquet",
            "--storage-option",
            "aws_region=eu-west-1",
            "--storage-option",
            "aws_secret_access_key=k=v",
        ];
        let crate::Command::Convert(args) = Cli::try_parse_from(argv).unwrap().command else {
            panic!("not convert");
        };
        assert!(!format!("{args:?}").contains("k=v"), "{args:?}");
        let mut read = ReadOptions::for_format(Format::Jay);
        let mut write = WriteOptions {
            format: Some(Format::Parquet),
            ..Default::default()
        };
        crate::convert::settings(&args)
            .unwrap()
            .conversion(&mut read, &mut write)
            .unwrap();
        let mut by_key = ReadOptions::for_format(Format::Jay);
        by_key
            .set_all([
                ("aws_region", "eu-west-1"),
                ("aws_secret_access_key", "k=v"),
            ])
            .unwrap();
        assert_eq!(read.storage, by_key.storage);
        assert_eq!(write.storage, by_key.storage);
        assert_ne!(read.storage, ReadOptions::default().storage);

        let argv = [
            "arrowsmith",
            "head",
            "in.jay",
            "--storage-option",
            "limit=3",
        ];
        let crate::Command::Head(args) = Cli::try_parse_from(argv).unwrap().command else {
            panic!("not head");
        };
        let e = args.storage.settings(&mut Settings::default()).unwrap_err();
        assert!(e.to_string().contains("--storage-option limit"), "{e}");
        assert!(e.class().is_usage());
    }

    /// An error about a setting names it as each front end spells it, from its field.
    #[test]
    fn test_errors_name_the_setting_as_a_flag() {
        let mut read = ReadOptions::for_format(Format::Jay);
        let e = read.set_all([("varint", "leb128")]).unwrap_err();
        assert_eq!(
            spell_error(&e),
            "--varint applies to vs input, not jay [invalid_argument]"
        );
        let e = WriteOptions::default()
            .output_format(std::path::Path::new("out.unknown"))
            .unwrap_err();
        assert!(
            spell_error(&e).contains("name it with --to"),
            "{}",
            spell_error(&e)
        );
        let e = arrowsmith::Format::detect(std::path::Path::new("Cargo.toml")).unwrap_err();
        assert!(
            spell_error(&e).contains("name it with --from"),
            "{}",
            spell_error(&e)
        );
    }
}
