//! `arrowsmith fragments INPUT`: the pieces `arrowsmith::fragments` splits a file into, one
//! JSON object per line, for a driver that hands them to workers (`convert --fragment K`, the
//! Python package, Ray, Dask).

use arrowsmith::{FormatOptions, Input, ReadOptions};

use super::{input_format, print_out, CliResult, FragmentsArgs};

pub(crate) const AFTER_HELP: &str = "Each line is one fragment: its index, the range it covers \
in the format's own unit (rows, extent or block byte offsets, chunks, row groups, batches, or \
the whole input), its rows (\"rows_exact\": false where they are estimated) and stored bytes. \
`arrowsmith convert INPUT OUT --fragment K` with the same --target-rows converts fragment K.

Examples:
  arrowsmith fragments trace.ds --target-rows 500000
  arrowsmith convert trace.ds part-3.parquet --fragment 3 --target-rows 500000";

pub(crate) fn run(args: FragmentsArgs) -> CliResult {
    arrowsmith::input::refuse_stream(&args.input, "listing fragments")?;
    let format = input_format(&args.input, args.from)?;
    let mut settings = super::settings::Settings::default();
    settings.value("filo_type", args.filo_type.as_ref());
    args.vs_read.settings(&mut settings);
    args.ds_read.settings(&mut settings);
    args.storage.settings(&mut settings)?;
    let mut options = ReadOptions {
        format,
        ..Default::default()
    };
    settings.read(&mut options)?;
    let input = Input::open(&args.input, &options)?;
    if format.is_none() {
        // A URL, recognised as it was opened.
        super::check_read_settings(&settings, input.format())?;
    }
    let fragments = input.fragments(args.target_rows)?;
    let mut text = String::new();
    for fragment in &fragments {
        text.push_str(&fragment_line(fragment));
        text.push('\n');
    }
    print_out(&text)
}

/// One fragment as a JSON line: its index, range, rows and bytes first, then where it is.
pub(crate) fn fragment_line(fragment: &arrowsmith::Fragment) -> String {
    let mut line = serde_json::json!({
        "index": fragment.index,
        "rows": fragment.rows,
        "rows_exact": fragment.rows_exact,
        "bytes": fragment.bytes,
        "range": fragment.range,
        "format": fragment.format,
        "path": fragment.path,
    });
    // A remote object's size and version, which a worker's read checks.
    if let Some(object) = &fragment.object {
        line["object"] = serde_json::to_value(object).unwrap_or_default();
    }
    let options = serde_json::to_value(&fragment.options).unwrap_or_default();
    if options != serde_json::to_value(FormatOptions::default()).unwrap_or_default() {
        line["options"] = options;
    }
    line.to_string()
}
