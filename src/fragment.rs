//! Fragments: every input splits into pieces that are read independently — by several
//! threads, processes or machines — along its format's natural seams.
//!
//! [`fragments`](crate::fragments) (or [`Input::fragments`](crate::Input::fragments)) lists
//! them from the file's structure alone (extent headers, chunk grids, block headers, row-group
//! and batch footers), without decoding data; [`open_fragment`](crate::open_fragment) (or
//! [`Input::fragment_reader`](crate::Input::fragment_reader)) reads one, doing work in
//! proportion to the fragment rather than to the file. A [`Fragment`] is plain data that
//! serialises with serde, so a listing made on one machine can be read on another. The rows of all fragments, in order, are exactly the rows of the
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
//! A fragment of a remote object (`s3://…`) names the object's size and version (its ETag)
//! in [`Fragment::object`]; reading it from an object that has changed since is an error
//! ("… changed since its fragments were listed; list them again"), never rows of two
//! versions. The settings of remote storage (credentials) are never part of a fragment: the
//! reader gives its own ([`ReadOptions::storage`](crate::ReadOptions::storage)).
//!
//! An Arrow IPC stream has no index: finding its batch boundaries takes a pass over the whole
//! stream, so it is one fragment, as DataFusion also reads a stream whole.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::format::Format;
use crate::options::FormatOptions;
use crate::scan::FragmentRange;

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
    /// The remote object the fragment is of, as it was when listed: reading the fragment
    /// from an object of another size or version is an error. `None` for a local input and a
    /// remote prefix.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub object: Option<ObjectVersion>,
}

/// Which version of a remote object a fragment was listed from.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ObjectVersion {
    /// Its size in bytes.
    pub size: u64,
    /// Its version as the store names it (an ETag); `None` when the store gives none, and
    /// then only the size is compared.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
}

impl ObjectVersion {
    /// "N bytes, version V", for messages.
    pub fn describe(&self) -> String {
        match &self.version {
            Some(version) => format!("{} bytes, version {version}", self.size),
            None => format!("{} bytes", self.size),
        }
    }
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
