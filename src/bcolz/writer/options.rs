//! The writer's options ([`WriterOptions`], a builder of already-parsed values that
//! [`Writer::try_new`](super::Writer::try_new) checks together; [`NullPolicy`];
//! [`Compression`]) and bcolz's own choice of rows per chunk ([`default_chunklen`]), which the
//! writer and the appender both follow.

use std::collections::HashMap;

use crate::bcolz::blosc::{Codec, Shuffle};
use crate::bcolz::meta::Kind;

/// What the writer does with Arrow nulls (bcolz cannot store them).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum NullPolicy {
    /// The first null is an error naming the column and the row.
    #[default]
    Reject,
    /// Nulls in float columns become NaN, in temporal columns NaT; others are still errors.
    Sentinel,
}

/// The Blosc codec and, optionally, the level of a bcolz `compression` setting
/// (`codec[:level]`, parsed by its `FromStr`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Compression {
    /// The Blosc codec.
    pub codec: Codec,
    /// The compression level 0–9 the setting names (default: keep the writer's, 5).
    pub level: Option<u8>,
}

/// Options of the bcolz [`Writer`](super::Writer).
#[derive(Debug, Clone)]
pub struct WriterOptions {
    pub(super) kind: Option<Kind>,
    pub(super) chunklen: Option<u64>,
    pub(super) expected_len: Option<u64>,
    pub(super) codec: Codec,
    pub(super) clevel: u8,
    pub(super) shuffle: Shuffle,
    pub(super) null_policy: NullPolicy,
    pub(super) overwrite: bool,
    pub(super) widths: HashMap<String, usize>,
    pub(super) durable: bool,
}

impl Default for WriterOptions {
    fn default() -> Self {
        WriterOptions {
            kind: None,
            chunklen: None,
            expected_len: None,
            codec: Codec::Lz4,
            clevel: 5,
            shuffle: Shuffle::Byte,
            null_policy: NullPolicy::Reject,
            overwrite: false,
            widths: HashMap::new(),
            durable: true,
        }
    }
}

impl WriterOptions {
    /// carray (exactly one column) or ctable; default: ctable, unless the schema metadata says
    /// `bcolz.kind = carray` and there is one column.
    pub fn with_kind(mut self, kind: Kind) -> Self {
        self.kind = Some(kind);
        self
    }
    /// Rows per chunk for every column (default: bcolz's own choice per column).
    pub fn with_chunklen(mut self, chunklen: u64) -> Self {
        self.chunklen = Some(chunklen);
        self
    }
    /// The length hint bcolz's chunklen formula uses (default: the row count when known).
    pub fn with_expected_len(mut self, len: u64) -> Self {
        self.expected_len = Some(len);
        self
    }
    /// The Blosc codec (default [`Codec::Lz4`], as bcolz).
    pub fn with_codec(mut self, codec: Codec) -> Self {
        self.codec = codec;
        self
    }
    /// Compression level 0–9 (default 5).
    pub fn with_clevel(mut self, clevel: u8) -> Self {
        self.clevel = clevel;
        self
    }
    /// Byte or bit shuffle before compression (default [`Shuffle::Byte`], as bcolz).
    pub fn with_shuffle(mut self, shuffle: Shuffle) -> Self {
        self.shuffle = shuffle;
        self
    }
    /// What to do with Arrow nulls (default [`NullPolicy::Reject`]).
    pub fn with_null_policy(mut self, policy: NullPolicy) -> Self {
        self.null_policy = policy;
        self
    }
    /// The null policy in effect.
    pub fn null_policy(&self) -> NullPolicy {
        self.null_policy
    }
    /// The codec and, when it names one, the level of a parsed `compression` setting
    /// (`lz4`, `zstd:9`, …; default `lz4:5`).
    pub fn with_compression(mut self, compression: Compression) -> Self {
        self.codec = compression.codec;
        if let Some(level) = compression.level {
            self.clevel = level;
        }
        self
    }
    /// Whether the finished dataset is flushed to disk (every file and directory, fsync) before
    /// it is renamed into place, and the rename after it (default true). bcolz itself never
    /// syncs; without it a power loss soon after `finish()` can leave empty or missing files.
    pub fn with_durable(mut self, durable: bool) -> Self {
        self.durable = durable;
        self
    }
    /// Whether the new dataset is flushed to disk before it is renamed into place.
    pub fn durable(&self) -> bool {
        self.durable
    }
    /// Replace an existing directory at the target (default `false`: an existing one is an
    /// error).
    pub fn with_overwrite(mut self, overwrite: bool) -> Self {
        self.overwrite = overwrite;
        self
    }
    /// A fixed width (`|S` bytes or `<U` code points) for a string or binary column (default:
    /// the longest value written).
    pub fn with_width(mut self, column: impl Into<String>, width: usize) -> Self {
        self.widths.insert(column.into(), width);
        self
    }
}

/// bcolz's default chunklen for rows of `atomsize` bytes and an expected length (spec A7.1).
pub fn default_chunklen(expectedlen: u64, atomsize: usize) -> u64 {
    let size_mb = (expectedlen as f64 * atomsize as f64 / 1_048_576.0).clamp(1e-4, 1e4);
    let zone = size_mb.log10().trunc() as i32;
    let chunksize = 4096f64 * 2f64.powi(zone + 6);
    let chunksize = chunksize as u64;
    let atom = atomsize as u64;
    let chunksize = ((chunksize / atom) * atom).max(atom);
    chunksize / atom
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunklen_like_bcolz() {
        assert_eq!(default_chunklen(10, 1), 16384);
        assert_eq!(default_chunklen(2, 20), 819);
        assert_eq!(default_chunklen(2000, 8), 16384);
        assert_eq!(default_chunklen(9999, 28), 9362);
        assert_eq!(default_chunklen(10_000_000, 8), 65536);
    }
}
