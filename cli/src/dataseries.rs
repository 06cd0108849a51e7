//! DataSeries options of the command line: the extent type, Utf8 fields and checks on input;
//! level, extent size, XML and type name on output.

use std::path::Path;

use arrow_array::RecordBatchReader;
use arrowsmith::dataseries::{DsReadOptions, DsWriteOptions, Utf8Fields};
use arrowsmith::{Error, Format, ReadOptions};

use super::{DsReadArgs, DsWriteArgs};

/// DataSeries input options with another input format are refused rather than ignored
/// (`--type` also names a DataSeries output's type: [`write_options`]).
pub(crate) fn check_read_args(format: Format, a: &DsReadArgs) -> arrowsmith::Result<()> {
    check_read_args_for(format, None, a)
}

/// As [`check_read_args`], for a conversion to `to`.
pub(crate) fn check_read_args_for(
    format: Format,
    to: Option<Format>,
    a: &DsReadArgs,
) -> arrowsmith::Result<()> {
    let type_for_output = to == Some(Format::DataSeries) && a.utf8.is_none() && !a.no_checks;
    if format != Format::DataSeries
        && !type_for_output
        && (a.ds_type.is_some() || a.utf8.is_some() || a.no_checks)
    {
        return Err(Error::invalid_argument(format!(
            "--type, --utf8 and --no-checks apply to dataseries input, not {format}"
        )));
    }
    Ok(())
}

/// The library's DataSeries read settings from the command line's.
pub(crate) fn read_options(a: &DsReadArgs) -> DsReadOptions {
    DsReadOptions {
        type_name: a.ds_type.clone(),
        utf8: match &a.utf8 {
            Some(names) if names.iter().all(|n| n.is_empty()) => Utf8Fields::All,
            Some(names) => {
                Utf8Fields::Named(names.iter().filter(|n| !n.is_empty()).cloned().collect())
            }
            None => Utf8Fields::Hinted,
        },
        no_checks: a.no_checks,
    }
}

/// Opens any input with the command line's options, DataSeries ones included.
pub(crate) fn open(
    path: &Path,
    options: &ReadOptions,
    a: &DsReadArgs,
) -> arrowsmith::Result<Box<dyn RecordBatchReader + Send>> {
    let mut options = options.clone();
    options.format_options.dataseries = read_options(a);
    arrowsmith::open(path, &options)
}

/// Rows of the extent type a DataSeries input would be read as (for the progress bar), from the
/// extent headers alone; `None` when the file or the type choice fails (the reader reports why).
pub(crate) fn known_rows(path: &Path, a: &DsReadArgs) -> Option<u64> {
    let file = arrowsmith::dataseries::DsFile::open(path, Default::default()).ok()?;
    let t = arrowsmith::dataseries::choose_type(&file, a.ds_type.as_deref()).ok()?;
    Some(file.rows_of(&t.name))
}

/// The library's DataSeries write settings from the command line's. `--type` names the
/// output's extent type when the input is not DataSeries; from DataSeries input it chooses the
/// input's type, whose name the output keeps.
pub(crate) fn write_options(
    w: &DsWriteArgs,
    r: &DsReadArgs,
    from: Format,
) -> arrowsmith::Result<DsWriteOptions> {
    let type_name = r.ds_type.clone().filter(|_| from != Format::DataSeries);
    let xml = match &w.xml {
        Some(x) => Some(std::fs::read_to_string(x).map_err(|e| Error::from(e).with_file(x))?),
        None => None,
    };
    Ok(DsWriteOptions {
        level: w.compress_level,
        extent_size: w.extent_size,
        type_name,
        xml,
    })
}
