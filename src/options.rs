//! The options of the format-independent entry points ([`open`](crate::open),
//! [`create`](crate::create), [`fragments`](crate::fragments)): the shared
//! [`ScanOptions`] plus each format's own settings, so that every front end (the CLI, SQL
//! `OPTIONS`, Python keywords) fills in one value.

use serde::{Deserialize, Serialize};

use crate::format::Format;
use crate::salvage::SalvageReport;
use crate::scan::ScanOptions;
use crate::sentinel::CollisionPolicy;
use crate::{bcolz, dataseries, filo, vs};

/// Options of [`open`](crate::open) and [`fragments`](crate::fragments).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ReadOptions {
    /// The input format; detected from the content and the name when `None`.
    pub format: Option<Format>,
    /// Batch size, projection, limit and fragment.
    pub scan: ScanOptions,
    /// The settings only some formats have.
    pub format_options: FormatOptions,
}

impl ReadOptions {
    /// Reads `format`, with every other option at its default.
    pub fn for_format(format: Format) -> Self {
        ReadOptions {
            format: Some(format),
            ..Default::default()
        }
    }

    /// Turns salvage on: damaged parts are skipped and recorded in `report`, which the caller
    /// keeps a clone of and reads after the scan.
    pub fn with_salvage(mut self, report: SalvageReport) -> Self {
        self.scan.salvage = true;
        self.scan.report = Some(report);
        self
    }
}

/// The read settings that only some formats have. A [`Fragment`](crate::Fragment) carries
/// them, since its range means something only under the settings it was listed with (the
/// DataSeries extent type, above all).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct FormatOptions {
    /// The element type of a bare Filo vector (`Format::FiloVector`), which its bytes lack.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub filo_type: Option<filo::FiloType>,
    /// Filo sets: read String columns as `Dictionary(Int32, Utf8)`, keeping filo's dictionary
    /// codes instead of expanding them (default `false`: `Utf8`).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub filo_dictionary: bool,
    /// VS: end-of-file mode, varint order, app_data mode, lock wait.
    pub vs: vs::VsReadOptions,
    /// DataSeries: the extent type, Utf8 fields, checks.
    pub dataseries: dataseries::DsReadOptions,
    /// Jay: the most rows read that no data stands behind, as in a frame of void columns only
    /// (default [`jay::DEFAULT_MAX_DATALESS_ROWS`](crate::jay::DEFAULT_MAX_DATALESS_ROWS), 2^32; see
    /// [`jay::ReaderBuilder::with_max_dataless_rows`](crate::jay::ReaderBuilder::with_max_dataless_rows)).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_dataless_rows: Option<u64>,
}

/// Options of [`create`](crate::create), common to every format; each writer takes what
/// applies to it.
#[derive(Debug, Clone)]
pub struct WriteOptions {
    /// The output format; chosen by the file name's extension when `None`.
    pub format: Option<Format>,
    /// Codec name (Parquet: `zstd` (default), `snappy`, `gzip`, `lz4`, `brotli`, `none`;
    /// Arrow IPC: `lz4`, `zstd`, `none`; DataSeries: see
    /// [`dataseries::WriterOptions::from_compression`]; VS: `none`, `gzip`, `snappy`;
    /// bcolz: Blosc's codecs), optionally with a level, as `zstd:9`.
    pub compression: Option<String>,
    /// Rows per Parquet row group.
    pub row_group_size: Option<usize>,
    /// Whether an existing output may be replaced (default `false`: an existing output is an
    /// error). Only an output of the format is ever replaced: a file for a single-file format,
    /// a dataset of the format for bcolz and Filo sets; anything else at the path is refused
    /// untouched (see [`check_target`](crate::atomic::check_target)). A character device,
    /// FIFO or socket is no output to replace: arrows, csv and ndjson are written into it,
    /// with or without this; the other formats refuse it.
    pub overwrite: bool,
    /// Whether a new file or directory is flushed to disk (fsync) before it is renamed into
    /// place (default `true`). Without, the rename still makes the output appear whole, but a
    /// crash or power loss soon after may lose it: for scratch outputs, and for comparisons
    /// with tools that never flush. bcolz also honours its own
    /// [`WriterOptions::with_durable`](crate::bcolz::WriterOptions::with_durable).
    pub durable: bool,
    /// What the writer of a sentinel-based format does with a valid value equal to its sentinel.
    pub sentinel_collisions: CollisionPolicy,
    /// Filo: rows per chunk of a Filo set (default 65,536).
    pub filo_chunk_size: Option<usize>,
    /// Filo: the encoding hint of every column (default: filo's AutoDetect).
    pub filo_hint: Option<filo::Hint>,
    /// Filo: the element type of a bare vector (default: the column's natural type).
    pub filo_type: Option<filo::FiloType>,
    /// VS writer options (`compression` above is parsed as none|gzip|snappy for VS).
    pub vs: vs::VsWriteOptions,
    /// bcolz: layout, chunklen, cparams, null policy, string widths (its own overwrite
    /// setting is also set by `overwrite` above).
    pub bcolz: bcolz::WriterOptions,
    /// DataSeries: level, extent size, extent type XML and type name (`compression` above
    /// chooses the codecs).
    pub dataseries: dataseries::DsWriteOptions,
}

impl Default for WriteOptions {
    fn default() -> Self {
        WriteOptions {
            format: None,
            compression: None,
            row_group_size: None,
            overwrite: false,
            durable: true,
            sentinel_collisions: CollisionPolicy::default(),
            filo_chunk_size: None,
            filo_hint: None,
            filo_type: None,
            vs: vs::VsWriteOptions::default(),
            bcolz: bcolz::WriterOptions::default(),
            dataseries: dataseries::DsWriteOptions::default(),
        }
    }
}
