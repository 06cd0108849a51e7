//! `arrowsmith head INPUT -n N`: the first rows as a table, reading only those.

use arrow::util::display::FormatOptions;
use arrow::util::pretty::{pretty_format_batches_with_options, pretty_format_batches_with_schema};
use arrowsmith::{Error, ReadOptions, ScanOptions, DEFAULT_BATCH_SIZE};

use super::{input_format, print_out, projection, CliResult, HeadArgs};

pub(crate) fn run(args: HeadArgs) -> CliResult {
    let format = input_format(&args.input, args.from)?;
    super::dataseries::check_read_args(format, &args.ds_read)?;
    let mut options = ReadOptions::for_format(format);
    options.scan = ScanOptions {
        batch_size: Some(args.rows.clamp(1, DEFAULT_BATCH_SIZE)),
        projection: projection(&args.columns),
        limit: Some(args.rows),
        ..Default::default()
    };
    options.format_options.filo_type = args.filo_type;
    let reader = super::dataseries::open(&args.input, &options, &args.ds_read)?;
    let schema = reader.schema();
    let mut batches = Vec::new();
    for batch in reader {
        let batch = batch.map_err(|e| Error::from_arrow_owned(e).with_file(&args.input))?;
        if batch.num_rows() > 0 {
            batches.push(batch);
        }
    }
    let table = if batches.is_empty() {
        pretty_format_batches_with_schema(schema, &[]).map(|t| t.to_string())
    } else {
        let options = FormatOptions::default()
            .with_null("null")
            .with_display_error(true);
        pretty_format_batches_with_options(&batches, &options).map(|t| t.to_string())
    }
    .map_err(|e| Error::from_arrow_owned(e).with_file(&args.input))?;
    print_out(&format!("{table}\n"))
}
