//! `arrowsmith inspect INPUT [--verify] [--json]`: the library's report of what a file holds
//! ([`arrowsmith::inspect`]: the format, the schema, the row count and the format's own
//! structure), with the settings its messages name spelled as this command line's flags, and a
//! progress bar while it reads every batch.

use arrowsmith::inspect::{inspect_with_progress, known_rows, InspectOptions};
use arrowsmith::source::is_url;
use arrowsmith::{Error, ErrorClass, ReadOptions};

use super::progress::Progress;
use super::{input_format, print_out, CliResult, Failure, InspectArgs};

pub(crate) fn run(args: InspectArgs) -> CliResult {
    let path = args.input.as_path();
    arrowsmith::input::refuse_stream(path, "inspect")?;
    let format = input_format(path, args.from)?;
    let mut settings = super::settings::Settings::default();
    settings.value("filo_type", args.filo_type.as_ref());
    args.ds_read.settings(&mut settings);
    args.storage.settings(&mut settings)?;
    let mut read = ReadOptions {
        format,
        ..Default::default()
    };
    settings.read(&mut read)?;
    let options = InspectOptions {
        read,
        verify: args.verify,
    };
    let mut report = {
        // Dropped before the report prints, which clears the bar.
        // A URL's total would take opening it again: its bar counts without one.
        let total = || {
            format
                .filter(|_| !is_url(path))
                .and_then(|f| known_rows(path, f))
        };
        let mut progress = Progress::new(total, None);
        inspect_with_progress(path, &options, &mut |rows| progress.set(rows))?
    };
    if format.is_none() {
        // A URL, recognised as it was opened.
        super::check_read_settings(&settings, report.format)?;
    }
    report.spell_with(super::settings::spell_text);
    let text = if args.json {
        let mut text = serde_json::to_string_pretty(&report.to_json())
            .map_err(|e| Error::new(ErrorClass::Io, e.to_string()))?;
        text.push('\n');
        text
    } else {
        report.to_text()
    };
    print_out(&text)?;
    match report.into_failure() {
        Some(e) => Err(Failure::Error(e)),
        None => Ok(()),
    }
}
