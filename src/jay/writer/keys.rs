//! Verifying a requested key (`jay.nkeys`, spec B3.6): the first k columns must be sorted
//! ascending and unique across the whole stream, judged on the values as Jay stores them (NA
//! first, strings by UTF-8 bytes, −0.0 before +0.0, a NaN or an opted-in sentinel collision
//! being NA). The check runs on Arrow's row format, one batch at a time, remembering the last
//! row of the previous batch.

use std::sync::Arc;

use arrow::row::{OwnedRow, RowConverter, SortField};
use arrow_array::cast::AsArray;
use arrow_array::types::{
    Date32Type, Date64Type, Float16Type, Float32Type, Float64Type, Int16Type, Int32Type, Int64Type,
    Int8Type, TimestampNanosecondType,
};
use arrow_array::{Array, ArrayRef, ArrowPrimitiveType, PrimitiveArray, RecordBatch};
use arrow_buffer::{BooleanBuffer, NullBuffer};
use arrow_schema::{DataType, Schema, SortOptions, TimeUnit};

use crate::error::{Error, ErrorClass};
use crate::jay::mapping::NKEYS_METADATA_KEY;

/// What the schema asks for.
pub(crate) enum KeyRequest {
    /// No key requested (no metadata, or `0`).
    None,
    /// A key of k columns, to be verified.
    Check(KeyCheck),
    /// A request that cannot be honoured; its message becomes a warning.
    Invalid(Error),
}

pub(crate) struct KeyCheck {
    k: usize,
    converter: RowConverter,
    last: Option<OwnedRow>,
    /// Why the key cannot be written, once known.
    failure: Option<String>,
}

impl KeyRequest {
    pub(crate) fn from_schema(schema: &Schema) -> KeyRequest {
        let Some(text) = schema.metadata().get(NKEYS_METADATA_KEY) else {
            return KeyRequest::None;
        };
        let ncols = schema.fields().len();
        let k = match text.trim().parse::<usize>() {
            Ok(0) => return KeyRequest::None,
            Ok(k) if k <= ncols => k,
            Ok(k) => {
                return KeyRequest::Invalid(bad_key(format!(
                    "{NKEYS_METADATA_KEY} = {k} but there are only {ncols} columns"
                )))
            }
            Err(_) => {
                return KeyRequest::Invalid(bad_key(format!(
                    "{NKEYS_METADATA_KEY} = {text:?} is not a number of columns"
                )))
            }
        };
        let fields = &schema.fields()[..k];
        if let Some(f) = fields
            .iter()
            .find(|f| matches!(f.data_type(), DataType::List(_) | DataType::LargeList(_)))
        {
            return KeyRequest::Invalid(bad_key(format!(
                "{NKEYS_METADATA_KEY} = {k} but key column {:?} is a list, which cannot be a key",
                f.name()
            )));
        }
        let options = SortOptions {
            descending: false,
            nulls_first: true,
        };
        let sort_fields = fields
            .iter()
            .map(|f| SortField::new_with_options(f.data_type().clone(), options))
            .collect();
        match RowConverter::new(sort_fields) {
            Ok(converter) => KeyRequest::Check(KeyCheck {
                k,
                converter,
                last: None,
                failure: None,
            }),
            Err(e) => KeyRequest::Invalid(bad_key(format!(
                "{NKEYS_METADATA_KEY} = {k} but the key columns cannot be compared: {e}"
            ))),
        }
    }
}

impl KeyCheck {
    /// Checks the rows of one more batch, whose first row is row `row_base` of the stream.
    pub(crate) fn check(&mut self, batch: &RecordBatch, row_base: u64) {
        if self.failure.is_some() || batch.num_rows() == 0 {
            return;
        }
        let columns: Vec<ArrayRef> = batch.columns()[..self.k]
            .iter()
            .map(|c| as_stored(c))
            .collect();
        let rows = match self.converter.convert_columns(&columns) {
            Ok(rows) => rows,
            Err(e) => {
                self.failure = Some(format!("the key columns cannot be compared: {e}"));
                return;
            }
        };
        let verdict = |a: arrow::row::Row<'_>, b: arrow::row::Row<'_>, at: u64| -> Option<String> {
            match a.cmp(&b) {
                std::cmp::Ordering::Less => None,
                std::cmp::Ordering::Equal => Some(format!(
                    "rows {} and {at} have the same key (a key must be unique)",
                    at - 1
                )),
                std::cmp::Ordering::Greater => Some(format!(
                    "row {at} sorts before row {} (a key must be sorted ascending)",
                    at - 1
                )),
            }
        };
        if let Some(last) = &self.last {
            if let Some(why) = verdict(last.row(), rows.row(0), row_base) {
                self.failure = Some(why);
                return;
            }
        }
        for i in 1..rows.num_rows() {
            if let Some(why) = verdict(rows.row(i - 1), rows.row(i), row_base + i as u64) {
                self.failure = Some(why);
                return;
            }
        }
        self.last = Some(rows.row(rows.num_rows() - 1).owned());
    }

    /// The number of key columns to write, or why there is none.
    pub(crate) fn verdict(self) -> Result<usize, Error> {
        match self.failure {
            None => Ok(self.k),
            Some(why) => Err(bad_key(format!(
                "{NKEYS_METADATA_KEY} = {} not written: {why}",
                self.k
            ))),
        }
    }
}

/// Why a requested key is not written. The writer reports it as a warning, not a failure: the
/// data is written all the same, unkeyed.
fn bad_key(message: String) -> Error {
    Error::new(ErrorClass::BadKeys, message)
}

/// The array with the values Jay stores as NA made null: NaN for floats, the sentinel for
/// integers, dates and nanosecond timestamps (possible only under
/// `CollisionPolicy::AsNull`; otherwise the write has already failed).
fn as_stored(array: &ArrayRef) -> ArrayRef {
    match array.data_type() {
        DataType::Float16 => null_where::<Float16Type>(array, |v| v.is_nan()),
        DataType::Float32 => null_where::<Float32Type>(array, |v| v.is_nan()),
        DataType::Float64 => null_where::<Float64Type>(array, |v| v.is_nan()),
        DataType::Int8 => null_where::<Int8Type>(array, |v| v == i8::MIN),
        DataType::Int16 => null_where::<Int16Type>(array, |v| v == i16::MIN),
        DataType::Int32 => null_where::<Int32Type>(array, |v| v == i32::MIN),
        DataType::Int64 => null_where::<Int64Type>(array, |v| v == i64::MIN),
        DataType::Date32 => null_where::<Date32Type>(array, |v| v == i32::MIN),
        DataType::Date64 => null_where::<Date64Type>(array, |v| v == i32::MIN as i64 * 86_400_000),
        DataType::Timestamp(TimeUnit::Nanosecond, _) => {
            null_where::<TimestampNanosecondType>(array, |v| v == i64::MIN)
        }
        _ => Arc::clone(array),
    }
}

fn null_where<P: ArrowPrimitiveType>(
    array: &ArrayRef,
    is_na: impl Fn(P::Native) -> bool,
) -> ArrayRef {
    let Some(a) = array.as_primitive_opt::<P>() else {
        return Arc::clone(array);
    };
    let values = a.values();
    if !values.iter().any(|&v| is_na(v)) {
        return Arc::clone(array);
    }
    let valid = BooleanBuffer::collect_bool(a.len(), |i| a.is_valid(i) && !is_na(values[i]));
    let stored = PrimitiveArray::<P>::new(values.clone(), Some(NullBuffer::new(valid)))
        .with_data_type(a.data_type().clone());
    Arc::new(stored)
}
