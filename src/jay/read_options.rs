//! [`ReaderOptions`]: the Jay read settings beyond the scan, as every front end sets them
//! (the `FormatOptions::jay` of the format-independent entry points).

use serde::{Deserialize, Serialize};

use super::reader::{ReaderBuilder, DEFAULT_MAX_DATALESS_ROWS};

/// The Jay settings of a read, held in [`FormatOptions`](crate::FormatOptions) and taken by
/// [`ReaderBuilder::with_options`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct ReaderOptions {
    /// The most rows read that no data stands behind, as in a frame of void columns only
    /// (default [`DEFAULT_MAX_DATALESS_ROWS`], 2^32; see
    /// [`ReaderBuilder::with_max_dataless_rows`]).
    pub max_dataless_rows: u64,
}

impl Default for ReaderOptions {
    fn default() -> Self {
        ReaderOptions {
            max_dataless_rows: DEFAULT_MAX_DATALESS_ROWS,
        }
    }
}

impl ReaderBuilder {
    /// Every Jay setting of `options` at once (default: [`ReaderOptions::default`]).
    pub fn with_options(self, options: &ReaderOptions) -> Self {
        self.with_max_dataless_rows(options.max_dataless_rows)
    }
}
