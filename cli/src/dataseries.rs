//! DataSeries options of the command line: the extent type, Utf8 fields and checks on input;
//! level, extent size, XML and type name on output.

use std::path::Path;

use arrow_array::RecordBatchReader;
use arrow_schema::SchemaRef;
use arrowsmith::dataseries::{ReaderBuilder, Writer, WriterOptions};
use arrowsmith::{BatchWriter, Error, Format, ReadOptions, WriteOptions};

use super::{DsReadArgs, DsWriteArgs};

/// DataSeries input options with another input format are refused rather than ignored.
pub(crate) fn check_read_args(format: Format, a: &DsReadArgs) -> arrowsmith::Result<()> {
    if format != Format::DataSeries && (a.ds_type.is_some() || a.utf8.is_some() || a.no_checks) {
        return Err(Error::invalid_argument(format!(
            "--type, --utf8 and --no-checks apply to dataseries input, not {format}"
        )));
    }
    Ok(())
}

/// The DataSeries reader with its options.
pub(crate) fn builder(options: &ReadOptions, a: &DsReadArgs) -> ReaderBuilder {
    let mut b = ReaderBuilder::new()
        .with_batch_size(options.batch_size)
        .with_checks(!a.no_checks);
    if let Some(p) = &options.projection {
        b = b.with_projection(p.clone());
    }
    if let Some(l) = options.limit {
        b = b.with_limit(l);
    }
    if let Some(t) = &a.ds_type {
        b = b.with_type(t.clone());
    }
    match &a.utf8 {
        Some(names) if names.iter().all(|n| n.is_empty()) => b = b.with_utf8_all(),
        Some(names) => b = b.with_utf8(names.iter().filter(|n| !n.is_empty()).cloned()),
        None => {}
    }
    b
}

/// Opens any input; DataSeries with the command line's options.
pub(crate) fn open(
    path: &Path,
    options: &ReadOptions,
    a: &DsReadArgs,
) -> arrowsmith::Result<Box<dyn RecordBatchReader + Send>> {
    if options.format == Some(Format::DataSeries) {
        Ok(Box::new(builder(options, a).build(path)?))
    } else {
        arrowsmith::open(path, options)
    }
}

/// Rows of the extent type a DataSeries input would be read as (for the progress bar), from the
/// extent headers alone; `None` when the file or the type choice fails (the reader reports why).
pub(crate) fn known_rows(path: &Path, a: &DsReadArgs) -> Option<u64> {
    let file = arrowsmith::dataseries::DsFile::open(path, Default::default()).ok()?;
    let t = arrowsmith::dataseries::choose_type(&file, a.ds_type.as_deref()).ok()?;
    Some(file.rows_of(&t.name))
}

/// The DataSeries writer with the command line's options.
pub(crate) fn create(
    path: &Path,
    schema: SchemaRef,
    options: &WriteOptions,
    a: &DsWriteArgs,
) -> arrowsmith::Result<Box<dyn BatchWriter + Send>> {
    let mut o = WriterOptions::from_compression(options.compression.as_deref())?;
    if let Some(l) = a.compress_level {
        o = o.with_level(l);
    }
    if let Some(s) = a.extent_size {
        o = o.with_extent_size(s);
    }
    if let Some(n) = &a.type_name {
        o = o.with_type_name(n.clone());
    }
    if let Some(x) = &a.xml {
        let text = std::fs::read_to_string(x).map_err(|e| Error::from(e).with_file(x))?;
        o = o.with_extent_type_xml(text);
    }
    Ok(Box::new(Writer::try_new(path, schema, o)?))
}
