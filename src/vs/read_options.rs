//! [`ReaderOptions`]: the VS read settings beyond the scan, as every front end sets them (the
//! `FormatOptions::vs` of the format-independent entry points).

use serde::{Deserialize, Serialize};

use super::codec::ParseOptions;
use super::lock::LockWait;

/// The VS settings of a read, held in [`FormatOptions`](crate::FormatOptions) and taken by
/// [`ReaderBuilder::with_options`](super::ReaderBuilder::with_options) and
/// [`VsFile::open`](super::VsFile::open). Its `parse` part is the lower-level
/// [`ParseOptions`] that the block walker of [`codec`](super::codec) takes on its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct ReaderOptions {
    /// How bytes are parsed (default: the format's strict rules).
    pub parse: ParseOptions,
    /// How the app data column is typed (default [`AppDataMode::Json`]).
    pub app_data: AppDataMode,
    /// Whether to add the `vs_offset` column (default `false`).
    pub with_offsets: bool,
    /// Whether to wait for a writer's lock (default [`LockWait::Block`]).
    pub lock: LockWait,
}

/// How `app_data` (and JSON-resolution elements) reach Arrow.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AppDataMode {
    /// JSON text in a `Utf8` column tagged `arrow.json`.
    #[default]
    Json,
    /// The exact msgpack bytes in a `Binary` column (byte-exact round trips).
    Msgpack,
}
