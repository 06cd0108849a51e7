//! `arrowsmith convert INPUT OUTPUT`: batches stream from `arrowsmith::open` to
//! `arrowsmith::create`; the output appears only when everything was written.

use std::path::Path;
use std::time::Instant;

use arrowsmith::bcolz::{self, blosc::Shuffle, NullPolicy};
use arrowsmith::{
    CollisionPolicy, Error, ErrorClass, Format, FormatOptions, ReadOptions, SalvageReport,
    ScanOptions, WriteOptions,
};

use super::progress::Progress;
use super::{print_err, projection, CliResult, ConvertArgs, Failure};

pub(crate) const AFTER_HELP: &str = "Examples:
  arrowsmith convert frame.jay frame.parquet
  arrowsmith convert frame.jay frame.arrow --compression zstd --columns id,name
  arrowsmith convert data.csv data.jay --limit 1000000
  arrowsmith convert in.parquet out.parquet --compression gzip:9 --row-group-size 100000
  arrowsmith convert trace.ds trace.parquet --type Trace::NFS::common --utf8
  arrowsmith convert trace.parquet trace.ds --compress lz4 --extent-size 4194304
  arrowsmith convert table.parquet table.filo --filo-chunk-size 100000
  arrowsmith convert column.bin column.arrow --from filo-vector --filo-type Long
  arrowsmith convert damaged.ds rescued.parquet --salvage

  arrowsmith convert table.bcolz table.parquet
  arrowsmith convert frame.arrow frame.bcolz --compression zstd:5 --bcolz-shuffle 2";

pub(crate) fn run(args: ConvertArgs) -> CliResult {
    let started = Instant::now();
    let (from, stream) = super::open_input(&args.input, args.from)?;
    let to = match args.to {
        Some(format) => format,
        // Appending: the target exists, so its structure tells.
        None if args.append && args.output.exists() => Format::detect(&args.output)?,
        // Standard output carries the Arrow IPC stream unless another format is named.
        None if arrowsmith::is_stdin(&args.output) => Format::ArrowStream,
        None => Format::for_output(&args.output)?,
    };
    super::dataseries::check_read_args_for(from, Some(to), &args.ds_read)?;
    check_format_options(&args, from, to)?;
    if args.filo_dictionary && from != Format::Filo {
        return Err(Error::invalid_argument("--filo-dictionary applies to filo input").into());
    }
    if args.max_dataless_rows.is_some() && from != Format::Jay {
        return Err(Error::invalid_argument("--max-dataless-rows applies to jay input").into());
    }
    if args.filo_type.is_some() && from != Format::FiloVector && to != Format::FiloVector {
        return Err(
            Error::invalid_argument("--filo-type applies to filo-vector input or output").into(),
        );
    }
    refuse_same_file(&args.input, &args.output)?;

    let mut read_options = ReadOptions {
        format: Some(from),
        scan: ScanOptions {
            batch_size: Some(args.batch_size),
            projection: projection(&args.columns),
            limit: args.limit,
            ..Default::default()
        },
        format_options: FormatOptions {
            filo_type: args.filo_type,
            filo_dictionary: args.filo_dictionary,
            vs: super::vs_read_options(args.lenient_eof, args.varint, args.app_data),
            dataseries: super::dataseries::read_options(&args.ds_read),
            max_dataless_rows: args.max_dataless_rows,
        },
    };
    let report = SalvageReport::new();
    if args.salvage {
        if !from.salvages() {
            return Err(Error::invalid_argument(format!(
                "--salvage applies to jay, dataseries, filo, vs and bcolz input, not {from}"
            ))
            .into());
        }
        read_options = read_options.with_salvage(report.clone());
    }
    let write_options = WriteOptions {
        format: Some(to),
        compression: args.compression.clone(),
        row_group_size: args.row_group_size,
        overwrite: args.overwrite,
        durable: !args.no_sync,
        sentinel_collisions: if args.sentinel_collisions_as_na {
            CollisionPolicy::AsNull
        } else {
            CollisionPolicy::default()
        },
        filo_chunk_size: args.filo_chunk_size,
        filo_hint: args.filo_encoding,
        filo_type: args.filo_type,
        vs: arrowsmith::vs::VsWriteOptions {
            lenient_eof: args.lenient_eof,
            ..Default::default()
        },
        bcolz: bcolz_options(&args, from),
        dataseries: super::dataseries::write_options(&args.ds_write, &args.ds_read, from)?,
    };

    super::interrupt::install();
    let interrupted = || match super::interrupt::received() {
        Some(signal) => Err(Failure::Interrupted {
            signal,
            output: args.output.clone(),
        }),
        None => Ok(()),
    };
    let reader = match args.fragment {
        Some(k) => {
            let target = args.target_rows.unwrap_or(arrowsmith::DEFAULT_TARGET_ROWS);
            let fragments = arrowsmith::fragments(&args.input, &read_options, target)?;
            let fragment = fragments.get(k).ok_or_else(|| {
                Error::invalid_argument(format!(
                    "there is no fragment {k}: the input has {} at --target-rows {target} \
                     (0 to {})",
                    fragments.len(),
                    fragments.len() - 1
                ))
                .with_file(&args.input)
            })?;
            arrowsmith::open_fragment(fragment, &read_options)?
        }
        None => match stream {
            Some(input) => arrowsmith::open_stream(input, &read_options)?,
            None => arrowsmith::open(&args.input, &read_options)?,
        },
    };
    let columns = reader.schema().fields().len();
    if args.append && to == Format::Vs {
        let rows = append(&args, reader, write_options)?;
        return report_written(&args, rows, columns, started);
    }
    let mut writer: Box<dyn arrowsmith::BatchWriter + Send> = if args.append {
        Box::new(bcolz::Appender::try_new(
            &args.output,
            reader.schema(),
            write_options.bcolz.null_policy(),
        )?)
    } else {
        arrowsmith::create(&args.output, reader.schema(), &write_options)?
    };
    let mut progress = Progress::new(
        || match from {
            _ if args.fragment.is_some() => None,
            Format::DataSeries => super::dataseries::known_rows(&args.input, &args.ds_read),
            _ => arrowsmith::inspect::known_rows(&args.input, from),
        },
        args.limit,
    );
    if args.quiet {
        progress.silence();
    }
    // Decoding the next batches overlaps with writing this one.
    let reader = arrowsmith::read_ahead(reader, arrowsmith::DEFAULT_READ_AHEAD)
        .map_err(|e| Error::from(e).with_file(&args.input))?;
    let mut rows = 0u64;
    for batch in reader {
        let batch = batch.map_err(|e| Error::from_arrow_owned(e).with_file(&args.input))?;
        writer
            .write(&batch)
            .map_err(|e| e.with_file(&args.output))?;
        rows += batch.num_rows() as u64;
        progress.add(batch.num_rows());
        interrupted()?;
    }
    interrupted()?;
    let skipped = report.take();
    for part in &skipped {
        print_err(&format!("warning: skipped {part}"));
    }
    if !skipped.is_empty() && rows == 0 {
        // The unfinished writer is dropped, which leaves no output behind.
        return Err(Error::new(
            ErrorClass::BadValue,
            format!(
                "nothing could be salvaged: every part read was damaged ({} skipped)",
                skipped.len()
            ),
        )
        .with_file(&args.input)
        .into());
    }
    let summary = writer.finish().map_err(|e| e.with_file(&args.output))?;
    progress.finish();
    for warning in &summary.warnings {
        print_err(&format!(
            "warning: {}",
            crate::cli_spelling(&warning.to_string())
        ));
    }
    if !skipped.is_empty() {
        let lost: u64 = skipped.iter().filter_map(|s| s.rows).sum();
        let unknown = skipped
            .iter()
            .any(|s| s.rows.is_none() && s.part != "column");
        print_err(&format!(
            "warning: salvaged {rows} rows; skipped {} damaged {} ({lost} rows{})",
            skipped.len(),
            if skipped.len() == 1 { "part" } else { "parts" },
            if unknown {
                " and more whose count is unknown"
            } else {
                ""
            }
        ));
    }
    report_written(&args, summary.rows, columns, started)
}

/// The closing line on stderr, unless `--quiet` or the output is standard output, whose
/// reader (a pipeline) wants the data and nothing else.
fn report_written(args: &ConvertArgs, rows: u64, columns: usize, started: Instant) -> CliResult {
    if !args.quiet && !arrowsmith::is_stdin(&args.output) {
        let written = super::summary::Written {
            output: &args.output,
            rows,
            columns,
            appended: args.append,
            elapsed: started.elapsed(),
        };
        print_err(&written.line());
    }
    Ok(())
}

fn bcolz_options(args: &ConvertArgs, from: Format) -> bcolz::WriterOptions {
    let mut options = bcolz::WriterOptions::default();
    if args.bcolz_nulls_as_nan {
        options = options.with_null_policy(NullPolicy::Sentinel);
    }
    if let Some(n) = args.bcolz_chunklen {
        options = options.with_chunklen(n as u64);
    }
    if let Some(code) = args.bcolz_shuffle {
        options = options.with_shuffle(Shuffle::from_code(code as i64).unwrap_or_default());
    }
    if args.bcolz_carray {
        options = options.with_kind(bcolz::Kind::Carray);
    }
    if args.bcolz_no_sync {
        options = options.with_durable(false);
    }
    // bcolz chooses chunklen from the expected length: the input's row count when known.
    if let Some(rows) = arrowsmith::inspect::known_rows(&args.input, from) {
        let rows = args.limit.map_or(rows, |l| rows.min(l as u64));
        options = options.with_expected_len(rows.max(1));
    }
    options
}

/// Options that belong to one output format are refused with another, rather than ignored.
fn check_format_options(args: &ConvertArgs, from: Format, to: Format) -> arrowsmith::Result<()> {
    let refuse = |option: &str, applies: &str| {
        Err(Error::invalid_argument(format!(
            "{option} applies to {applies} output, not {to}"
        )))
    };
    if let Some(spec) = &args.compression {
        match to {
            Format::Parquet => {
                arrowsmith::ecosystem::parquet::compression(Some(spec))?;
            }
            Format::Arrow | Format::ArrowStream => {
                arrowsmith::ecosystem::ipc::compression(Some(spec))?;
            }
            Format::DataSeries => {
                arrowsmith::dataseries::WriterOptions::from_compression(Some(spec))?;
            }
            Format::Vs => {
                if arrowsmith::vs::Compression::parse(spec).is_none() {
                    return Err(Error::invalid_argument(format!(
                        "--compression {spec}: vs output takes none, gzip or snappy"
                    )));
                }
            }
            Format::Bcolz => {
                bcolz::WriterOptions::default().with_compression(spec)?;
            }
            _ => {
                return refuse(
                    "--compression",
                    "parquet, arrow, arrows, dataseries, vs and bcolz",
                )
            }
        }
    }
    if args.row_group_size.is_some() && to != Format::Parquet {
        return refuse("--row-group-size", "parquet");
    }
    if to != Format::Bcolz {
        for (set, option) in [
            (args.bcolz_nulls_as_nan, "--bcolz-nulls-as-nan"),
            (args.bcolz_chunklen.is_some(), "--bcolz-chunklen"),
            (args.bcolz_shuffle.is_some(), "--bcolz-shuffle"),
            (args.bcolz_carray, "--bcolz-carray"),
            (args.bcolz_no_sync, "--bcolz-no-sync"),
        ] {
            if set {
                return refuse(option, "bcolz");
            }
        }
    }
    if args.sentinel_collisions_as_na && to != Format::Jay {
        return refuse("--sentinel-collisions-as-na", "jay");
    }
    let w = &args.ds_write;
    if to != Format::DataSeries
        && (w.compress_level.is_some() || w.extent_size.is_some() || w.xml.is_some())
    {
        return refuse("--compress-level, --extent-size and --xml", "dataseries");
    }
    if args.filo_chunk_size.is_some() && to != Format::Filo {
        return refuse("--filo-chunk-size", "filo");
    }
    if args.filo_encoding.is_some() && !matches!(to, Format::Filo | Format::FiloVector) {
        return refuse("--filo-encoding", "filo and filo-vector");
    }
    if args.append && !matches!(to, Format::Vs | Format::Bcolz) {
        return refuse("--append", "vs and bcolz");
    }
    let from_vs = from == Format::Vs;
    if (args.varint.is_some() || args.app_data.is_some()) && !from_vs {
        return Err(Error::invalid_argument(
            "--varint and --app-data apply to vs input",
        ));
    }
    if args.lenient_eof && !from_vs && !args.append {
        return Err(Error::invalid_argument(
            "--lenient-eof applies to vs input or to --append",
        ));
    }
    Ok(())
}

/// Writing over the input while reading it would lose it.
fn refuse_same_file(input: &Path, output: &Path) -> arrowsmith::Result<()> {
    if let (Ok(a), Ok(b)) = (input.canonicalize(), output.canonicalize()) {
        if a == b {
            return Err(Error::invalid_argument(
                "INPUT and OUTPUT are the same file; write to another file",
            )
            .with_file(output));
        }
    }
    Ok(())
}

/// `convert --append`: the rows go after the existing points of a VS OUTPUT (spec §13.3).
/// Returns the rows appended.
fn append(
    args: &ConvertArgs,
    reader: Box<dyn arrow_array::RecordBatchReader + Send>,
    options: WriteOptions,
) -> CliResult<u64> {
    let mut vs = options.vs;
    if let Some(spec) = &options.compression {
        vs.compression = arrowsmith::vs::Compression::parse(spec);
    }
    let summary = arrowsmith::vs::append(&args.output, reader, &vs)?;
    Ok(summary.rows)
}
