//! DiffDateTimeVector: milliseconds and UTC offsets, each stored as differences from a base
//! (specs/filo.md section 9.2), read as DateTime or as plain Timestamps.

use std::sync::Arc;

use arrow_array::types::{Int8Type, TimestampMillisecondType};
use arrow_array::{ArrayRef, PrimitiveArray, StructArray};
use arrow_buffer::NullBuffer;

use super::ints::{int_width, long_width, Ints};
use super::numbers::long_array;
use super::table::{bounded_length, ddt_vars, info_pair, missing, required_info, root, validity};
use super::Source;
use crate::error::{Error, ErrorClass, Result};
use crate::filo::gen::vector as fb;
use crate::filo::mapping::{datetime_fields, FiloType};

pub(super) fn diff_datetime(src: &Source<'_>) -> Result<ArrayRef> {
    let t = root::<fb::DiffDateTimeVector>(src.fbuf, "DiffDateTimeVector")?;
    let vars = t.vars().ok_or_else(|| missing("DiffDateTimeVector.vars"))?;
    let (len, base_tz, base_millis) = ddt_vars(vars);
    let len = bounded_length(len, src.fbuf, "DiffDateTimeVector.vars.len")?;
    let nulls = validity(t.naMask(), len)?;
    let field = "DiffDateTimeVector.millisInfo";
    let (nbits, signed) = required_info(t.millisInfo(), field)?;
    let width = long_width(nbits, signed, field)?;
    let millis = Ints::new(
        t.millis(),
        len,
        (width, signed),
        src.fbuf,
        "DiffDateTimeVector.millis",
    )?;
    let mut millis = millis.to_i64();
    millis
        .iter_mut()
        .for_each(|m| *m = base_millis.wrapping_add(*m));
    if src.filo_type == FiloType::Timestamp {
        return long_array(src, millis, nulls);
    }
    let offsets = tz_offsets(&t, src.fbuf, base_tz, len)?;
    let mut quarter_hours = Vec::with_capacity(len);
    for (i, (m, tz)) in millis.iter_mut().zip(offsets).enumerate() {
        if nulls.as_ref().is_some_and(|n| n.is_null(i)) {
            *m = 0;
            quarter_hours.push(0i8);
            continue;
        }
        match i8::try_from(tz).ok().filter(|q| (-95..=95).contains(q)) {
            Some(q) => quarter_hours.push(q),
            None => {
                return Err(Error::new(
                    ErrorClass::BadValue,
                    format!("UTC offset {tz} quarter-hours is outside -95 … 95 (under ±24 h)"),
                )
                .with_field("DiffDateTimeVector.tz")
                .at_row(i as u64))
            }
        }
    }
    datetimes(millis, quarter_hours, nulls)
}

/// Each element's UTC offset in quarter-hours: the base plus its delta, when there are deltas.
fn tz_offsets(
    t: &fb::DiffDateTimeVector<'_>,
    fbuf: &[u8],
    base_tz: i8,
    len: usize,
) -> Result<Vec<i32>> {
    let mut tz = vec![i32::from(base_tz); len];
    if let Some(tz_vec) = t.tz().filter(|v| !v.is_empty()) {
        let field = "DiffDateTimeVector.tzInfo";
        let (nbits, signed) = t.tzInfo().map(info_pair).ok_or_else(|| missing(field))?;
        let width = int_width(nbits, signed, field)?;
        let deltas = Ints::new(
            Some(tz_vec),
            len,
            (width, signed),
            fbuf,
            "DiffDateTimeVector.tz",
        )?;
        for (t, d) in tz.iter_mut().zip(deltas.to_i32()) {
            *t = t.wrapping_add(d);
        }
    }
    Ok(tz)
}

/// The DateTime struct of `millis` and `quarter_hours`, NA where `nulls` says.
fn datetimes(
    millis: Vec<i64>,
    quarter_hours: Vec<i8>,
    nulls: Option<NullBuffer>,
) -> Result<ArrayRef> {
    let millis = PrimitiveArray::<TimestampMillisecondType>::try_new(millis.into(), None)?
        .with_timezone("UTC");
    let quarter_hours = PrimitiveArray::<Int8Type>::try_new(quarter_hours.into(), None)?;
    Ok(Arc::new(StructArray::try_new(
        datetime_fields(),
        vec![Arc::new(millis), Arc::new(quarter_hours)],
        nulls,
    )?))
}
