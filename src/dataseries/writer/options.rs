//! The writer's settings: the format-independent ones as front ends spell them, and the
//! [`WriterOptions`] they become.

use super::super::byte_order::ByteOrder;
use super::super::codec::Mode;
use crate::error::{Error, Result};

/// The DataSeries settings of the format-independent [`WriteOptions`](crate::WriteOptions),
/// as every front end spells them (the codecs come from its `compression`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DsWriteOptions {
    /// Compression level 1..=9 (default 6; 9 with `best`).
    pub level: Option<u32>,
    /// Target uncompressed bytes per extent (default 1 MiB).
    pub extent_size: Option<usize>,
    /// The extent type's name (default: `dataseries.name` of the schema, else the file stem).
    pub type_name: Option<String>,
    /// An ExtentType XML to store verbatim (default: derived from the schema).
    pub xml: Option<String>,
}

/// Options of the DataSeries [`Writer`](super::Writer).
#[derive(Debug, Clone)]
pub struct WriterOptions {
    pub(super) type_name: Option<String>,
    pub(super) xml: Option<String>,
    pub(super) modes: Vec<Mode>,
    pub(super) level: u32,
    pub(super) extent_size: usize,
    pub(super) order: ByteOrder,
    pub(super) durable: bool,
}

impl Default for WriterOptions {
    fn default() -> Self {
        WriterOptions {
            type_name: None,
            xml: None,
            modes: vec![Mode::Zlib],
            level: 6,
            extent_size: 1 << 20,
            order: ByteOrder::Little,
            durable: true,
        }
    }
}

impl WriterOptions {
    /// The type name (default: `dataseries.name` from the schema, else the file's stem).
    pub fn with_type_name(mut self, name: impl Into<String>) -> Self {
        self.type_name = Some(name.into());
        self
    }
    /// A user-given ExtentType XML, stored verbatim (default: one derived from the schema).
    pub fn with_extent_type_xml(mut self, xml: impl Into<String>) -> Self {
        self.xml = Some(xml.into());
        self
    }
    /// The enabled compression modes; several use the reference's smallest-wins rule (default:
    /// zlib only).
    pub fn with_modes(mut self, modes: impl IntoIterator<Item = Mode>) -> Self {
        self.modes = modes.into_iter().collect();
        self
    }
    /// Compression level 1..=9 (lzo, zlib and bz2 use it; default 6).
    pub fn with_level(mut self, level: u32) -> Self {
        self.level = level;
        self
    }
    /// Target uncompressed bytes per extent (1 KiB ..= 256 MiB; default 1 MiB).
    pub fn with_extent_size(mut self, bytes: usize) -> Self {
        self.extent_size = bytes;
        self
    }
    /// Byte order of the output (little-endian by default; big-endian exists for tests).
    pub fn with_byte_order(mut self, order: ByteOrder) -> Self {
        self.order = order;
        self
    }

    /// Whether `finish()` flushes the file to disk (fsync) before renaming it over the target
    /// (default `true`). Without, the rename still makes the file appear whole, but a crash soon
    /// after may lose it.
    pub fn with_durable(mut self, durable: bool) -> Self {
        self.durable = durable;
        self
    }

    /// Options from the format-independent settings: the codecs from `compression`, the rest
    /// from `options`.
    pub fn from_settings(compression: Option<&str>, options: &DsWriteOptions) -> Result<Self> {
        let mut o = Self::from_compression(compression)?;
        if let Some(level) = options.level {
            o = o.with_level(level);
        }
        if let Some(bytes) = options.extent_size {
            o = o.with_extent_size(bytes);
        }
        if let Some(name) = &options.type_name {
            o = o.with_type_name(name.clone());
        }
        if let Some(xml) = &options.xml {
            o = o.with_extent_type_xml(xml.clone());
        }
        Ok(o)
    }

    /// Options from a `--compression` value: `MODE[,MODE…][:LEVEL]` (see [`Self::parse_modes`]);
    /// `None` gives the defaults (zlib level 6).
    pub fn from_compression(spec: Option<&str>) -> Result<WriterOptions> {
        let mut o = WriterOptions::default();
        if let Some(spec) = spec {
            let (modes, level) = match spec.rsplit_once(':') {
                Some((m, l)) => (
                    m,
                    Some(
                        l.trim()
                            .parse::<u32>()
                            .ok()
                            .filter(|l| (1..=9).contains(l))
                            .ok_or_else(|| {
                                Error::invalid_argument(format!(
                                    "compression level {l:?} is not 1 to 9"
                                ))
                            })?,
                    ),
                ),
                None => (spec, None),
            };
            o.modes = Self::parse_modes(modes)?;
            if let Some(l) = level {
                o.level = l;
            } else if modes.trim() == "best" {
                // The reference tools' default: every codec at level 9.
                o.level = 9;
            }
        }
        Ok(o)
    }

    /// Parses a `--compress` value: `none`, a mode name, a comma list, or `best`.
    pub fn parse_modes(text: &str) -> Result<Vec<Mode>> {
        let mut out = Vec::new();
        for part in text.split(',').map(str::trim) {
            if part == "best" {
                out.extend(Mode::ALL);
                continue;
            }
            out.push(Mode::from_name(part).ok_or_else(|| {
                Error::invalid_argument(format!(
                    "unknown DataSeries compression {part:?}; use none, lzo, zlib, bz2, lzf, snappy, lz4, lz4hc or best"
                ))
            })?);
        }
        Ok(out)
    }
}
