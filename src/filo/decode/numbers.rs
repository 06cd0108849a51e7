//! Number and Boolean vectors: SimplePrimitiveVector, ConstPrimitiveVector and
//! DiffPrimitiveVector (specs/filo.md sections 6, 8 and 9).

use std::sync::Arc;

use arrow_array::types::{
    Float32Type, Float64Type, Int32Type, Int64Type, TimestampMillisecondType,
};
use arrow_array::{new_null_array, ArrayRef, ArrowPrimitiveType, BooleanArray, PrimitiveArray};
use arrow_buffer::{ArrowNativeType, BooleanBuffer, Buffer, NullBuffer, ScalarBuffer};
use arrow_schema::{DataType, TimeUnit};
use flatbuffers::Vector;

use super::ints::{int_width, long_width, Ints};
use super::table::{
    bad_info, bounded_length, check_expansion, data_bytes, length, required_info, root, validity,
};
use super::Source;
use crate::error::{Error, ErrorClass, Result};
use crate::filo::gen::vector as fb;
use crate::filo::mapping::{timestamp_utc, FiloType};

/// A SimplePrimitiveVector, or with `constant` a ConstPrimitiveVector (the same table).
pub(super) fn simple_or_const(src: &Source<'_>, constant: bool) -> Result<ArrayRef> {
    let t = root::<fb::SimplePrimitiveVector>(src.fbuf, "SimplePrimitiveVector")?;
    let len = if constant {
        let len = length(t.len(), "ConstPrimitiveVector.len")?;
        check_expansion(len, src.bytes.len())?;
        len
    } else {
        bounded_length(t.len(), src.fbuf, "SimplePrimitiveVector.len")?
    };
    let nulls = validity(t.naMask(), len)?;
    if len == 0 {
        return Ok(new_null_array(src.data_type, 0));
    }
    let table = if constant {
        "ConstPrimitiveVector"
    } else {
        "SimplePrimitiveVector"
    };
    let body = Body {
        data: t.data(),
        constant,
        count: if constant { 1 } else { len },
        len,
        fbuf: src.fbuf,
        owner: src.owner,
        field_info: format!("{table}.info"),
        field_data: format!("{table}.data"),
    };
    let (nbits, signed) = required_info(t.info(), &body.field_info)?;
    match src.filo_type {
        FiloType::Boolean => body.booleans(nbits, signed, nulls),
        FiloType::Double => body.floats::<Float64Type>(nbits, signed, nulls),
        FiloType::Float => body.floats::<Float32Type>(nbits, signed, nulls),
        FiloType::Int => body.ints(nbits, signed, nulls),
        _ => body.longs(nbits, signed, nulls, src),
    }
}

/// A DiffPrimitiveVector: each value is the base plus its packed difference (wrapping, as in
/// filo).
pub(super) fn diff(src: &Source<'_>) -> Result<ArrayRef> {
    let t = root::<fb::DiffPrimitiveVector>(src.fbuf, "DiffPrimitiveVector")?;
    let len = bounded_length(t.len(), src.fbuf, "DiffPrimitiveVector.len")?;
    let nulls = validity(t.naMask(), len)?;
    let field_info = "DiffPrimitiveVector.info";
    let field_data = "DiffPrimitiveVector.data";
    let (nbits, signed) = required_info(t.info(), field_info)?;
    if src.filo_type == FiloType::Int {
        let width = int_width(nbits, signed, field_info)?;
        let base = t.base() as i32;
        let ints = Ints::new(t.data(), len, (width, signed), src.fbuf, field_data)?;
        let mut values = ints.to_i32();
        values.iter_mut().for_each(|v| *v = base.wrapping_add(*v));
        Ok(Arc::new(PrimitiveArray::<Int32Type>::try_new(
            values.into(),
            nulls,
        )?))
    } else {
        let width = long_width(nbits, signed, field_info)?;
        let base = t.base();
        let ints = Ints::new(t.data(), len, (width, signed), src.fbuf, field_data)?;
        let mut values = ints.to_i64();
        values.iter_mut().for_each(|v| *v = base.wrapping_add(*v));
        long_array(src, values, nulls)
    }
}

/// 64-bit values as the Arrow type asked for: Int64 for a Long, else milliseconds in the
/// caller's time zone (UTC when it asked for something else, such as DateTime's instants).
pub(super) fn long_array(
    src: &Source<'_>,
    values: impl Into<ScalarBuffer<i64>>,
    nulls: Option<NullBuffer>,
) -> Result<ArrayRef> {
    let values = values.into();
    Ok(match (src.filo_type, src.data_type) {
        (FiloType::Long, _) => Arc::new(PrimitiveArray::<Int64Type>::try_new(values, nulls)?),
        (_, DataType::Timestamp(TimeUnit::Millisecond, tz)) => Arc::new(
            PrimitiveArray::<TimestampMillisecondType>::try_new(values, nulls)?
                .with_timezone_opt(tz.clone()),
        ),
        _ => Arc::new(
            PrimitiveArray::<TimestampMillisecondType>::try_new(values, nulls)?
                .with_data_type(timestamp_utc()),
        ),
    })
}

/// The body of a Simple (`count` = `len` values) or Const (`count` = 1, repeated `len` times)
/// primitive vector.
struct Body<'a> {
    data: Option<Vector<'a, u8>>,
    constant: bool,
    /// Values in `data`: `len`, or 1 when `constant`.
    count: usize,
    len: usize,
    fbuf: &'a [u8],
    /// The buffer the vector's bytes are in, when values may be shared with it.
    owner: Option<&'a Buffer>,
    field_info: String,
    field_data: String,
}

impl<'a> Body<'a> {
    /// The `count` elements of `nbits`, checked to be in the vector.
    fn bytes(&self, nbits: u16) -> Result<&'a [u8]> {
        data_bytes(self.data, self.count, nbits, self.fbuf, &self.field_data)
    }

    /// The `len` values in `bytes` as a typed buffer: a slice of the owner's memory when there
    /// is one and the bytes are aligned for `T`, else a copy.
    fn shared<T: ArrowNativeType>(&self, bytes: &[u8]) -> ScalarBuffer<T> {
        let buffer = self
            .owner
            .and_then(|owner| crate::mapped::shared_slice::<T>(owner, bytes))
            .unwrap_or_else(|| crate::mapped::aligned_copy(bytes));
        ScalarBuffer::new(buffer, 0, bytes.len() / std::mem::size_of::<T>())
    }

    /// The one value of a Const vector, `len` times.
    fn repeated<T: Copy>(&self, values: impl IntoIterator<Item = T>) -> Result<Vec<T>> {
        let value = values.into_iter().next().ok_or_else(|| {
            Error::new(ErrorClass::BufferSize, "the constant value is absent")
                .with_field(self.field_data.clone())
        })?;
        Ok(vec![value; self.len])
    }

    fn booleans(&self, nbits: u16, signed: bool, nulls: Option<NullBuffer>) -> Result<ArrayRef> {
        if nbits != 64 {
            let accepted = "(64, any): a u64 bitmap";
            return Err(bad_info(nbits, signed, &self.field_info, accepted));
        }
        let bytes = self.bytes(1)?;
        let values = if self.constant {
            match bytes.first() {
                Some(b) if b & 1 == 1 => BooleanBuffer::new_set(self.len),
                _ => BooleanBuffer::new_unset(self.len),
            }
        } else {
            let bits = self.shared::<u8>(bytes).into_inner();
            if bits.len() * 8 < self.len {
                return Err(Error::new(ErrorClass::BufferSize, "the bitmap is short")
                    .with_field(self.field_data.clone()));
            }
            BooleanBuffer::new(bits, 0, self.len)
        };
        Ok(Arc::new(BooleanArray::new(values, nulls)))
    }

    /// Float64 or Float32 values, stored as filo writes them: `(64, 0)` or `(32, 0)`, a
    /// Const vector's one value repeated.
    fn floats<T: ArrowPrimitiveType>(
        &self,
        nbits: u16,
        signed: bool,
        nulls: Option<NullBuffer>,
    ) -> Result<ArrayRef> {
        let bits = (std::mem::size_of::<T::Native>() * 8) as u16;
        if (nbits, signed) != (bits, false) {
            let accepted = format!("({bits}, 0)");
            return Err(bad_info(nbits, signed, &self.field_info, &accepted));
        }
        let stored = self.shared::<T::Native>(self.bytes(bits)?);
        let values = if self.constant {
            self.repeated(stored.iter().copied())?.into()
        } else {
            stored
        };
        Ok(Arc::new(PrimitiveArray::<T>::try_new(values, nulls)?))
    }

    fn ints(&self, nbits: u16, signed: bool, nulls: Option<NullBuffer>) -> Result<ArrayRef> {
        let width = int_width(nbits, signed, &self.field_info)?;
        let ints = Ints::new(
            self.data,
            self.count,
            (width, signed),
            self.fbuf,
            &self.field_data,
        )?;
        let values = if self.constant {
            self.repeated(ints.to_i32())?.into()
        } else if (nbits, signed) == (32, true) {
            self.shared::<i32>(ints.bytes())
        } else {
            ints.to_i32().into()
        };
        Ok(Arc::new(PrimitiveArray::<Int32Type>::try_new(
            values, nulls,
        )?))
    }

    fn longs(
        &self,
        nbits: u16,
        signed: bool,
        nulls: Option<NullBuffer>,
        src: &Source<'_>,
    ) -> Result<ArrayRef> {
        let width = long_width(nbits, signed, &self.field_info)?;
        let ints = Ints::new(
            self.data,
            self.count,
            (width, signed),
            self.fbuf,
            &self.field_data,
        )?;
        let values = if self.constant {
            self.repeated(ints.to_i64())?.into()
        } else if nbits == 64 {
            // filo marks 64-bit data unsigned whatever its sign; the bytes are i64's.
            self.shared::<i64>(ints.bytes())
        } else {
            ints.to_i64().into()
        };
        long_array(src, values, nulls)
    }
}
