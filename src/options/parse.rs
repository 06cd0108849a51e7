//! The text forms of the setting values: `FromStr` for every setting enum and the parsers of
//! flags and counts, so each spelling is parsed once, here. The impls live beside the table
//! rather than beside each enum so the format modules stay free of front-end spellings.

use std::str::FromStr;

use crate::bcolz::{blosc::Shuffle, Kind, NullPolicy};
use crate::dataseries::Utf8Fields;
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
