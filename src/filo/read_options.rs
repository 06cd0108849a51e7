//! [`ReaderOptions`]: the Filo read settings beyond the scan, as every front end sets them
//! (the `FormatOptions::filo` of the format-independent entry points).

use serde::{Deserialize, Serialize};

use super::mapping::FiloType;
use super::reader::ReaderBuilder;
use super::vector::VectorReaderBuilder;

/// The Filo settings of a read, held in [`FormatOptions`](crate::FormatOptions): one for a
/// bare vector, taken by [`VectorReaderBuilder::with_options`], and one for a set, taken by
/// [`ReaderBuilder::with_options`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct ReaderOptions {
    /// The element type of a bare vector (`Format::FiloVector`), which its bytes lack
    /// (required to read one).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vector_type: Option<FiloType>,
    /// Sets: read String columns as `Dictionary(Int32, Utf8)`, keeping filo's dictionary
    /// codes instead of expanding them (default `false`: `Utf8`).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub dictionary_strings: bool,
}

impl ReaderBuilder {
    /// Every Filo set setting of `options` at once (default: [`ReaderOptions::default`]).
    pub fn with_options(self, options: &ReaderOptions) -> Self {
        self.with_dictionary_strings(options.dictionary_strings)
    }
}

impl VectorReaderBuilder {
    /// Every bare-vector setting of `options` at once: its element type, when given.
    pub fn with_options(self, options: &ReaderOptions) -> Self {
        match options.vector_type {
            Some(filo_type) => self.with_filo_type(filo_type),
            None => self,
        }
    }
}
