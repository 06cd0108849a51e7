//! The text forms of the setting values: `FromStr` for every setting enum and the parsers of
//! flags and counts, so each spelling is parsed once, here. The impls live beside the table
//! rather than beside each enum so the format modules stay free of front-end spellings.

use std::str::FromStr;

use crate::bcolz::blosc::{Codec, Shuffle};
use crate::bcolz::{Kind, NullPolicy};
use crate::dataseries::{Mode, Utf8Fields};
use crate::error::{Error, Result};
use crate::sentinel::CollisionPolicy;
use crate::vs::{AppDataMode, Compression, EofMode, VarintOrder};

use super::WriteMode;

fn expected(what: &str, text: &str) -> Error {
    Error::invalid_argument(format!("expected {what}, got {text:?}"))
}

impl FromStr for CollisionPolicy {
    type Err = Error;
    fn from_str(text: &str) -> Result<Self> {
        match text {
            "error" => Ok(CollisionPolicy::Error),
            "as_null" | "as-null" | "as_na" => Ok(CollisionPolicy::AsNull),
            _ => Err(expected("error or as_null", text)),
        }
    }
}

impl FromStr for EofMode {
    type Err = Error;
    fn from_str(text: &str) -> Result<Self> {
        match text {
            "strict" => Ok(EofMode::Strict),
            "lenient" => Ok(EofMode::Lenient),
            _ => Err(expected("strict or lenient", text)),
        }
    }
}

impl FromStr for VarintOrder {
    type Err = Error;
    fn from_str(text: &str) -> Result<Self> {
        match text {
            "leb128" => Ok(VarintOrder::Leb128),
            "msb-first" | "msb_first" => Ok(VarintOrder::MsbFirst),
            _ => Err(expected("leb128 or msb-first", text)),
        }
    }
}

impl FromStr for AppDataMode {
    type Err = Error;
    fn from_str(text: &str) -> Result<Self> {
        match text {
            "json" => Ok(AppDataMode::Json),
            "msgpack" => Ok(AppDataMode::Msgpack),
            _ => Err(expected("json or msgpack", text)),
        }
    }
}

/// `true` (or empty) reads every variable32 field as Utf8, `false` the hinted ones, anything
/// else is a comma-separated list of field names.
impl FromStr for Utf8Fields {
    type Err = Error;
    fn from_str(text: &str) -> Result<Self> {
        Ok(match text.trim() {
            "true" | "" => Utf8Fields::All,
            "false" => Utf8Fields::Hinted,
            names => {
                let names: Vec<String> = names
                    .split(',')
                    .map(str::trim)
                    .filter(|n| !n.is_empty())
                    .map(str::to_owned)
                    .collect();
                if names.is_empty() {
                    Utf8Fields::All
                } else {
                    Utf8Fields::Named(names)
                }
            }
        })
    }
}

impl FromStr for NullPolicy {
    type Err = Error;
    fn from_str(text: &str) -> Result<Self> {
        match text {
            "reject" => Ok(NullPolicy::Reject),
            "sentinel" => Ok(NullPolicy::Sentinel),
            _ => Err(expected("reject or sentinel", text)),
        }
    }
}

impl FromStr for Shuffle {
    type Err = Error;
    fn from_str(text: &str) -> Result<Self> {
        match text.trim() {
            "0" | "none" => Ok(Shuffle::None),
            "1" | "byte" => Ok(Shuffle::Byte),
            "2" | "bit" => Ok(Shuffle::Bit),
            _ => Err(expected("0 (none), 1 (byte) or 2 (bit)", text)),
        }
    }
}

impl FromStr for Kind {
    type Err = Error;
    fn from_str(text: &str) -> Result<Self> {
        match text {
            "carray" => Ok(Kind::Carray),
            "ctable" => Ok(Kind::Ctable),
            _ => Err(expected("carray or ctable", text)),
        }
    }
}

impl FromStr for Compression {
    type Err = Error;
    fn from_str(text: &str) -> Result<Self> {
        Compression::parse(text).ok_or_else(|| expected("none, gzip or snappy", text))
    }
}

/// A codec list and an optional level, `MODE[,MODE…][:LEVEL]`: `none`, a mode name, a comma
/// list, or `best` (every mode, at level 9 unless one is named).
impl FromStr for crate::dataseries::Compression {
    type Err = Error;
    fn from_str(spec: &str) -> Result<Self> {
        let (names, level) = match spec.rsplit_once(':') {
            Some((names, level)) => (names, Some(level_in(level, 1, 9)?)),
            None => (spec, None),
        };
        let mut modes = Vec::new();
        for part in names.split(',').map(str::trim) {
            if part == "best" {
                modes.extend(Mode::ALL);
                continue;
            }
            modes.push(Mode::from_name(part).ok_or_else(|| {
                Error::invalid_argument(format!(
                    "unknown DataSeries compression {part:?}; use none, lzo, zlib, bz2, lzf, \
                     snappy, lz4, lz4hc or best"
                ))
            })?);
        }
        // The reference tools' `best`: every codec at level 9.
        let level = level.or((names.trim() == "best").then_some(9));
        Ok(crate::dataseries::Compression { modes, level })
    }
}

/// A Blosc codec and an optional level, `codec[:level]` (`lz4`, `zstd:9`, …).
impl FromStr for crate::bcolz::Compression {
    type Err = Error;
    fn from_str(spec: &str) -> Result<Self> {
        let (name, level) = match spec.split_once(':') {
            Some((name, level)) => (name, Some(level_in(level, 0, 9)?)),
            None => (spec, None),
        };
        let codec = Codec::from_name(&name.to_ascii_lowercase()).ok_or_else(|| {
            Error::invalid_argument(format!(
                "unknown bcolz codec {name:?}; known: blosclz, lz4, lz4hc, zlib, zstd, snappy"
            ))
        })?;
        Ok(crate::bcolz::Compression { codec, level })
    }
}

/// A compression level from `min` to `max`.
pub fn level_in<T: FromStr + PartialOrd + From<u8>>(text: &str, min: u8, max: u8) -> Result<T> {
    text.trim()
        .parse::<T>()
        .ok()
        .filter(|l| (T::from(min)..=T::from(max)).contains(l))
        .ok_or_else(|| {
            Error::invalid_argument(format!("compression level {text:?} is not {min} to {max}"))
        })
}

impl FromStr for WriteMode {
    type Err = Error;
    fn from_str(text: &str) -> Result<Self> {
        match text {
            "error" => Ok(WriteMode::Error),
            "overwrite" => Ok(WriteMode::Overwrite),
            "append" => Ok(WriteMode::Append),
            _ => Err(expected("error, overwrite or append", text)),
        }
    }
}

/// A flag: `true`, `1`, `yes` or nothing for on; `false`, `0`, `no` for off.
pub fn flag(text: &str) -> Result<bool> {
    match text.trim().to_ascii_lowercase().as_str() {
        "true" | "1" | "yes" | "" => Ok(true),
        "false" | "0" | "no" => Ok(false),
        _ => Err(expected("true or false", text)),
    }
}

/// A count of at least 1.
pub fn positive(text: &str) -> Result<usize> {
    match text.trim().parse::<usize>() {
        Ok(0) => Err(Error::invalid_argument("must be at least 1, got 0")),
        Ok(n) => Ok(n),
        Err(_) => Err(expected("an integer ≥ 1", text)),
    }
}

/// A count that may be 0.
pub fn count<T: FromStr>(text: &str) -> Result<T> {
    text.trim()
        .parse::<T>()
        .map_err(|_| expected("an integer ≥ 0", text))
}
