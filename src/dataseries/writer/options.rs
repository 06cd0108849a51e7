//! The writer's settings: [`WriterOptions`], a builder of already-parsed values, and
//! [`Compression`], the codecs and level a `compression` setting names.

use super::super::byte_order::ByteOrder;
use super::super::codec::Mode;

/// The codecs and, optionally, the level of a DataSeries `compression` setting
/// (`MODE[,MODE…][:LEVEL]`, `none` or `best`; parsed by its `FromStr`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Compression {
    /// The enabled modes; several use the reference's smallest-wins rule.
    pub modes: Vec<Mode>,
    /// The level the setting names (`best` alone means 9, as the reference tools have it).
    pub level: Option<u32>,
}

/// Options of the DataSeries [`Writer`](super::Writer). The setters take values as they are;
/// [`Writer::try_new`](super::Writer::try_new) refuses a level or extent size out of range.
#[derive(Debug, Clone)]
pub struct WriterOptions {
    pub(super) type_name: Option<String>,
    pub(super) xml: Option<String>,
    pub(super) modes: Vec<Mode>,
    pub(super) level: u32,
    /// Whether `level` was set by [`WriterOptions::with_level`], which a level named by
    /// [`WriterOptions::with_compression`] does not override.
    level_given: bool,
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
            level_given: false,
            extent_size: 1 << 20,
            order: ByteOrder::Little,
            durable: true,
        }
    }
}

impl WriterOptions {
    /// Whether a type name or an ExtentType XML is set: what names the extent type written.
    pub(crate) fn names_its_type(&self) -> bool {
        self.type_name.is_some() || self.xml.is_some()
    }

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
    /// The modes and level of a parsed `compression` setting; a level given by
    /// [`WriterOptions::with_level`] stays.
    pub fn with_compression(mut self, compression: Compression) -> Self {
        self.modes = compression.modes;
        match compression.level {
            Some(level) if !self.level_given => self.level = level,
            _ => {}
        }
        self
    }
    /// Compression level 1..=9 (lzo, zlib and bz2 use it; default 6, or the level
    /// [`WriterOptions::with_compression`] names).
    pub fn with_level(mut self, level: u32) -> Self {
        self.level = level;
        self.level_given = true;
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
}
