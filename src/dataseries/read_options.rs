//! [`ReaderOptions`]: the DataSeries read settings beyond the scan, as every front end sets
//! them (the `FormatOptions::dataseries` of the format-independent entry points).

use serde::{Deserialize, Serialize};

use super::extent::Checks;
use super::file::OpenOptions;
use super::mapping::Utf8Fields;

/// The DataSeries settings of a read, held in [`FormatOptions`](crate::FormatOptions) and
/// taken by [`ReaderBuilder::with_options`](super::ReaderBuilder::with_options). The
/// lower-level [`OpenOptions`] of [`DsFile::open`](super::DsFile::open) are derived from it
/// ([`ReaderOptions::open_options`]).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct ReaderOptions {
    /// The extent type to read; needed when the file declares several. Default: the one
    /// type that holds data.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub type_name: Option<String>,
    /// Which variable32 fields are read as Utf8. Default: those the XML marks `arrow_type="utf8"`.
    pub utf8: Utf8Fields,
    /// Skip the adler32, hash and variable32 checks. Default: run them.
    pub no_checks: bool,
}

impl ReaderOptions {
    /// How a file is opened for these settings: with their checks, and scanned past a damaged
    /// index when `lenient` (as salvage reads).
    pub fn open_options(&self, lenient: bool) -> OpenOptions {
        OpenOptions {
            checks: if self.no_checks {
                Checks::NONE
            } else {
                Checks::ALL
            },
            lenient,
        }
    }
}
