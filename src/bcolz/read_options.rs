//! [`ReaderOptions`]: the bcolz read settings beyond the scan, as every front end sets them
//! (the `FormatOptions::bcolz` of the format-independent entry points).

use serde::{Deserialize, Serialize};

use super::reader::ReaderBuilder;

/// The bcolz settings of a read, held in [`FormatOptions`](crate::FormatOptions) and taken by
/// [`ReaderBuilder::with_options`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct ReaderOptions {
    /// NaT in datetime64/timedelta64 columns becomes an Arrow null (default `true`).
    pub nat_as_null: bool,
    /// The column name of a carray (default: the directory's name).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub carray_name: Option<String>,
    /// Batches decoded ahead in the background (default 2).
    pub read_ahead: usize,
}

impl Default for ReaderOptions {
    fn default() -> Self {
        ReaderOptions {
            nat_as_null: true,
            carray_name: None,
            read_ahead: 2,
        }
    }
}

impl ReaderBuilder {
    /// Every bcolz setting of `options` at once (default: [`ReaderOptions::default`]).
    pub fn with_options(self, options: &ReaderOptions) -> Self {
        let builder = self
            .with_nat_as_null(options.nat_as_null)
            .with_read_ahead(options.read_ahead);
        match &options.carray_name {
            Some(name) => builder.with_carray_name(name.clone()),
            None => builder,
        }
    }
}
