//! `arrowsmith head INPUT -n N`: the first rows as a table, reading only those.
//!
//! Cells are kept short the way Polars and DuckDB keep them: a list shows its first
//! [`LIST_HEAD`] elements, `…` and its last one, and any cell longer than [`MAX_CELL_CHARS`]
//! characters is cut with `…`, so a column of vectors or long text stays one line per row.

use std::sync::Arc;

use arrow::util::display::{ArrayFormatter, FormatOptions};
use arrow::util::pretty::{pretty_format_batches_with_options, pretty_format_batches_with_schema};
use arrow_array::cast::AsArray;
use arrow_array::{Array, ArrayRef, RecordBatch, StringArray};
use arrow_schema::{ArrowError, DataType, Field, Schema};
use arrowsmith::{Error, Input, ReadOptions, ScanOptions, DEFAULT_BATCH_SIZE};

use super::{print_out, projection, CliResult, HeadArgs};

/// Characters a cell shows at most, the `…` included (Polars' default string length).
pub(crate) const MAX_CELL_CHARS: usize = 32;
/// Leading elements a list shows before `…` and its last element (Polars shows 3).
pub(crate) const LIST_HEAD: usize = 3;

pub(crate) fn run(args: HeadArgs) -> CliResult {
    let (format, stream) = super::open_input(&args.input, args.from)?;
    let mut options = ReadOptions {
        format,
        ..Default::default()
    };
    options.scan = ScanOptions {
        batch_size: Some(args.rows.clamp(1, DEFAULT_BATCH_SIZE)),
        projection: projection(&args.columns),
        limit: Some(args.rows),
        ..Default::default()
    };
    let mut settings = super::settings::Settings::default();
    settings.value("filo_type", args.filo_type.as_ref());
    args.ds_read.settings(&mut settings);
    args.storage.settings(&mut settings)?;
    settings.read(&mut options)?;
    let reader = match (stream, format) {
        (Some(input), _) => arrowsmith::open_stream(input, &options)?,
        (None, Some(_)) => arrowsmith::open(&args.input, &options)?,
        // A URL, recognised as it is opened.
        (None, None) => {
            let input = Input::open(&args.input, &options)?;
            super::check_read_settings(&settings, input.format())?;
            input.reader(&options.scan)?
        }
    };
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
        batches
            .iter()
            .map(|b| shortened(b, &options))
            .collect::<Result<Vec<_>, _>>()
            .and_then(|short| pretty_format_batches_with_options(&short, &options))
            .map(|t| t.to_string())
    }
    .map_err(|e| Error::from_arrow_owned(e).with_file(&args.input))?;
    print_out(&format!("{table}\n"))
}

/// The batch with every cell as its shortened text (nulls stay null, so they print as such).
fn shortened(batch: &RecordBatch, options: &FormatOptions) -> Result<RecordBatch, ArrowError> {
    let mut fields = Vec::with_capacity(batch.num_columns());
    let mut columns: Vec<ArrayRef> = Vec::with_capacity(batch.num_columns());
    for (field, column) in batch.schema().fields().iter().zip(batch.columns()) {
        let cells = (0..column.len())
            .map(|row| cell_text(column, row, options))
            .collect::<Result<Vec<_>, _>>()?;
        fields.push(Field::new(field.name(), DataType::Utf8, true));
        columns.push(Arc::new(StringArray::from(cells)));
    }
    // A frame of rows and no columns (a Jay file can be one) keeps its row count.
    let options = arrow_array::RecordBatchOptions::new().with_row_count(Some(batch.num_rows()));
    RecordBatch::try_new_with_options(Arc::new(Schema::new(fields)), columns, &options)
}

/// One cell's text, shortened; `None` for a null.
fn cell_text(
    column: &ArrayRef,
    row: usize,
    options: &FormatOptions,
) -> Result<Option<String>, ArrowError> {
    if column.is_null(row) {
        return Ok(None);
    }
    let text = match column.data_type() {
        DataType::List(_) => list_text(&column.as_list::<i32>().value(row), options)?,
        DataType::LargeList(_) => list_text(&column.as_list::<i64>().value(row), options)?,
        DataType::FixedSizeList(_, _) => {
            list_text(&column.as_fixed_size_list().value(row), options)?
        }
        _ => ArrayFormatter::try_new(column.as_ref(), options)?
            .value(row)
            .to_string(),
    };
    Ok(Some(truncate(text)))
}

/// `[a, b, c, …, z]` for a list longer than `LIST_HEAD + 1` elements, else all of them.
fn list_text(values: &ArrayRef, options: &FormatOptions) -> Result<String, ArrowError> {
    let formatter = ArrayFormatter::try_new(values.as_ref(), options)?;
    let n = values.len();
    let shown: Vec<String> = if n > LIST_HEAD + 1 {
        (0..LIST_HEAD)
            .map(|i| formatter.value(i).to_string())
            .chain(["…".to_string(), formatter.value(n - 1).to_string()])
            .collect()
    } else {
        (0..n).map(|i| formatter.value(i).to_string()).collect()
    };
    Ok(format!("[{}]", shown.join(", ")))
}

/// The text cut to `MAX_CELL_CHARS` characters, the last one `…`, if it is longer.
fn truncate(text: String) -> String {
    if text.chars().count() <= MAX_CELL_CHARS {
        return text;
    }
    let mut short: String = text.chars().take(MAX_CELL_CHARS - 1).collect();
    short.push('…');
    short
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_text_is_cut_to_the_cell_width_by_characters() {
        assert_eq!(truncate("short".into()), "short");
        let long = "é".repeat(MAX_CELL_CHARS + 5);
        let cut = truncate(long);
        assert_eq!(cut.chars().count(), MAX_CELL_CHARS);
        assert!(cut.ends_with('…'));
        let exact = "x".repeat(MAX_CELL_CHARS);
        assert_eq!(truncate(exact.clone()), exact);
    }
}
