//! Fragments: every input splits into pieces that are read independently — by several
//! threads, processes or machines — along its format's natural seams.
//!
//! [`fragments`] lists them from the file's structure alone (extent headers, chunk grids,
//! block headers, row-group and batch footers), without decoding data; [`open_fragment`]
//! reads one, doing work in proportion to the fragment rather than to the file. A
//! [`Fragment`] is plain data that serialises with serde, so a listing made on one machine
//! can be read on another. The rows of all fragments, in order, are exactly the rows of the
//! file.
//!
//! | format | a fragment is | unit of [`FragmentRange`] |
//! |---|---|---|
//! | Jay | any row range (columns are contiguous) | `rows` |
//! | bcolz | a row range on the chunk grid | `rows` |
//! | DataSeries | a run of extents of the chosen type | `bytes` (extent offsets) |
//! | VS | a run of blocks | `bytes` (block offsets) |
//! | Filo set | a run of chunks | `chunks` |
//! | Parquet | a run of row groups | `row_groups` |
//! | Arrow IPC file | a run of record batches | `batches` |
//! | Arrow IPC stream, CSV, NDJSON, bare Filo vector | the whole input | `whole` |
//!
//! An Arrow IPC stream has no index: finding its batch boundaries takes a pass over the whole
//! stream, so it is one fragment, as DataFusion also reads a stream whole.

use std::path::{Path, PathBuf};

use arrow_array::RecordBatchReader;
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::format::Format;
use crate::options::{FormatOptions, ReadOptions};
use crate::scan::{whole, FragmentRange, FragmentSpan};
use crate::{bcolz, dataseries, ecosystem, filo, jay, vs};

/// One independently readable piece of an input.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fragment {
    /// Its position in the listing: 0, 1, …
    pub index: usize,
    /// The input it belongs to.
    pub path: PathBuf,
    /// The input's format.
    pub format: Format,
    /// The part of the input, in the format's own unit.
    pub range: FragmentRange,
    /// Rows in the fragment (exact unless `rows_exact` is false).
    pub rows: u64,
    /// Whether `rows` is exact; whole-input fragments of text formats estimate it.
    pub rows_exact: bool,
    /// Bytes of the input the fragment covers, as stored (compressed).
    pub bytes: u64,
    /// The format settings the listing was made with; the range means something only under
    /// them (the DataSeries extent type above all), so the fragment is opened with them.
    #[serde(default)]
    pub options: FormatOptions,
}

impl Fragment {
    /// The fragment as one line of JSON (what `arrowsmith fragments` prints).
    pub fn to_json(&self) -> String {
        // Plain strings, numbers and enums: serialising cannot fail.
        serde_json::to_string(self).unwrap_or_default()
    }

    /// A fragment back from [`Fragment::to_json`].
    pub fn from_json(text: &str) -> Result<Fragment> {
        serde_json::from_str(text)
            .map_err(|e| Error::invalid_argument(format!("not a fragment's JSON: {e}")))
    }
}

/// Lists the fragments of `path`: pieces of about `target_rows` rows (a hint: each fragment
/// holds at least one natural unit and never cuts one). `options.format` and
/// `options.format_options` are used as [`open`](crate::open) uses them; the scan options are
/// not (a listing is of the whole file).
///
#[doc = include_str!("../docs/fragments.md")]
pub fn fragments(
    path: impl AsRef<Path>,
    options: &ReadOptions,
    target_rows: usize,
) -> Result<Vec<Fragment>> {
    let path = path.as_ref();
    crate::input::refuse_stream(path, "listing fragments")?;
    let format = match options.format {
        Some(f) => f,
        None => Format::detect(path)?,
    };
    let formats = &options.format_options;
    let spans = list(path, format, formats, target_rows).map_err(|e| e.with_file(path))?;
    Ok(spans
        .into_iter()
        .enumerate()
        .map(|(index, span)| Fragment {
            index,
            path: path.to_path_buf(),
            format,
            range: span.range,
            rows: span.rows,
            rows_exact: span.rows_exact,
            bytes: span.bytes,
            options: formats.clone(),
        })
        .collect())
}

fn list(
    path: &Path,
    format: Format,
    formats: &FormatOptions,
    target_rows: usize,
) -> Result<Vec<FragmentSpan>> {
    match format {
        Format::Jay => {
            let file = jay::JayFile::open(path)?;
            file.check_dataless_rows(
                formats
                    .max_dataless_rows
                    .unwrap_or(jay::DEFAULT_MAX_DATALESS_ROWS),
            )?;
            jay::fragments(&file, target_rows)
        }
        Format::DataSeries => {
            let ds = &formats.dataseries;
            let file = dataseries::DsFile::open(path, dataseries::OpenOptions::default())?;
            dataseries::fragments(&file, ds.type_name.as_deref(), target_rows)
        }
        Format::Bcolz => bcolz::fragments(path, target_rows),
        Format::Vs => vs::fragments(path, formats.vs, target_rows),
        Format::Filo => filo::fragments(&filo::SetInfo::open(path)?, target_rows),
        Format::FiloVector => Ok(vec![whole(path, None)?]),
        other => ecosystem::fragments(path, other, target_rows),
    }
}

/// Opens one fragment: its format and format settings come from the fragment, the batch
/// size, projection and limit from `options.scan` (the limit counts the fragment's rows).
pub fn open_fragment(
    fragment: &Fragment,
    options: &ReadOptions,
) -> Result<Box<dyn RecordBatchReader + Send>> {
    let mut scan = options.scan.clone();
    scan.range = Some(fragment.range);
    let read = ReadOptions {
        format: Some(fragment.format),
        scan,
        format_options: fragment.options.clone(),
    };
    crate::dispatch::open(&fragment.path, &read)
}
