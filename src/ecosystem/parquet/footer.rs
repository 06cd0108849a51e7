//! A look at a Parquet footer's schema before the parquet crate builds it.
//!
//! parquet 59 reserves room for as many children as a group element of the schema declares,
//! before it has found any: a footer of a few hundred bytes asked for 6 GB (fuzz finding 17,
//! docs/reliability.md; arrow-rs bounds the count after 59, apache/arrow-rs#9884). Here the
//! footer's Thrift (compact protocol) is walked as far as the end of its schema list, and a
//! count that is negative or larger than the elements left after its own is refused. This
//! module can go when arrowsmith depends on a parquet release with that bound and the
//! regression test of finding 17 passes without the walk.
//!
//! The walk reads the bytes as parquet 59's decoder does, not as the protocol says, because
//! only then does it find the counts parquet will use: a known field is read as its declared
//! type whatever type its header gives, a header whose low four bits are 0 ends a struct, a
//! varint may run on past ten bytes. Anything parquet would fail on is left for parquet to
//! report.

/// A group element whose declared children cannot all be in the schema.
#[derive(Debug, PartialEq)]
pub(super) struct TooManyChildren {
    /// Its position in the schema list (0 is the root).
    pub element: u64,
    pub declared: i64,
    /// Elements after it in the list.
    pub following: u64,
}

/// Checks the `num_children` of every element of a `FileMetaData`'s schema (field 2, a list
/// of `SchemaElement`s whose field 5 is `num_children`).
pub(super) fn check_schema_children(metadata: &[u8]) -> Result<(), TooManyChildren> {
    let mut walk = Thrift {
        bytes: metadata,
        at: 0,
    };
    match walk.schema_children() {
        Ok(Some(too_many)) => Err(too_many),
        Ok(None) | Err(Malformed) => Ok(()),
    }
}

/// Thrift that parquet fails to decode too, in its own words.
struct Malformed;

/// How deep parquet 59 skips nested values before it gives up.
const SKIP_DEPTH: u32 = 64;

// Thrift compact protocol type ids.
const TRUE: u8 = 1;
const FALSE: u8 = 2;
const BYTE: u8 = 3;
const I16: u8 = 4;
const I32: u8 = 5;
const I64: u8 = 6;
const DOUBLE: u8 = 7;
const BINARY: u8 = 8;
const LIST: u8 = 9;
const SET: u8 = 10;
const MAP: u8 = 11;
const STRUCT: u8 = 12;
const UUID: u8 = 13;

/// A reader of compact-protocol Thrift. Every value but a boolean takes at least one byte, so
/// each loop over a count read from the bytes ends at the end of them, whatever the count says.
struct Thrift<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Thrift<'_> {
    fn schema_children(&mut self) -> Result<Option<TooManyChildren>, Malformed> {
        // FileMetaData: 1 version (i32), 2 schema, 3 num_rows (i64), 4 row groups, 5 key-value
        // list, 6 created_by, 7 column orders. parquet reads every schema it meets (a repeated
        // field 2 too) up to the row groups, which it refuses before a schema; the walk stops
        // there. The lists of fields 5 and 7 are skipped as their headers say.
        let mut schema_seen = false;
        let mut last_id = 0;
        while let Some((id, ty)) = self.field_begin(last_id)? {
            last_id = id;
            match id {
                1 | 3 => self.vlq().map(drop)?,
                2 => {
                    if let Some(too_many) = self.schema_list()? {
                        return Ok(Some(too_many));
                    }
                    schema_seen = true;
                }
                4 if schema_seen => return Ok(None),
                4 => return Err(Malformed),
                6 => self.binary()?,
                _ => self.skip(ty, SKIP_DEPTH)?,
            }
        }
        Ok(None)
    }

    fn schema_list(&mut self) -> Result<Option<TooManyChildren>, Malformed> {
        let (count, element_type) = self.list_begin()?;
        if element_type != STRUCT || count as usize > self.bytes.len() - self.at {
            return Err(Malformed);
        }
        let count = count as u64;
        for element in 0..count {
            let declared = self.schema_element()?;
            let following = count - element - 1;
            match declared {
                Some(n) if n < 0 || n as u64 > following => {
                    return Ok(Some(TooManyChildren {
                        element,
                        declared: n,
                        following,
                    }))
                }
                _ => {}
            }
        }
        Ok(None)
    }

    /// Reads one `SchemaElement` (1 type, 2 type_length, 3 repetition, 4 name, 5 num_children,
    /// 6 converted type, 7 scale, 8 precision, 9 field id, 10 logical type), returning its
    /// `num_children`.
    fn schema_element(&mut self) -> Result<Option<i64>, Malformed> {
        let mut children = None;
        let mut last_id = 0;
        while let Some((id, ty)) = self.field_begin(last_id)? {
            last_id = id;
            match id {
                5 => children = Some(i64::from(self.zigzag()? as i32)),
                1..=3 | 6..=9 => self.vlq().map(drop)?,
                4 => self.binary()?,
                10 => self.skip(STRUCT, SKIP_DEPTH)?,
                _ => self.skip(ty, SKIP_DEPTH)?,
            }
        }
        Ok(children)
    }

    fn byte(&mut self) -> Result<u8, Malformed> {
        let b = *self.bytes.get(self.at).ok_or(Malformed)?;
        self.at += 1;
        Ok(b)
    }

    /// An unsigned varint, as long as it runs (its high bits shifted out, as parquet does).
    fn vlq(&mut self) -> Result<u64, Malformed> {
        let mut value = 0u64;
        let mut shift = 0u32;
        loop {
            let b = self.byte()?;
            value |= u64::from(b & 0x7f).wrapping_shl(shift);
            if b & 0x80 == 0 {
                return Ok(value);
            }
            shift = shift.wrapping_add(7);
        }
    }

    fn zigzag(&mut self) -> Result<i64, Malformed> {
        let n = self.vlq()?;
        Ok((n >> 1) as i64 ^ -((n & 1) as i64))
    }

    fn binary(&mut self) -> Result<(), Malformed> {
        let len = self.vlq()?;
        self.advance(len)
    }

    fn advance(&mut self, n: u64) -> Result<(), Malformed> {
        let left = (self.bytes.len() - self.at) as u64;
        if n > left {
            return Err(Malformed);
        }
        self.at += n as usize;
        Ok(())
    }

    /// A field's id and type, or `None` at the struct's end.
    fn field_begin(&mut self, last_id: i16) -> Result<Option<(i16, u8)>, Malformed> {
        let b = self.byte()?;
        let ty = b & 0x0f;
        if ty == 0 {
            return Ok(None);
        }
        if ty > UUID {
            return Err(Malformed);
        }
        let id = match b >> 4 {
            0 => self.zigzag()? as i16,
            delta => last_id.checked_add(i16::from(delta)).ok_or(Malformed)?,
        };
        Ok(Some((id, ty)))
    }

    /// A list's or set's element count and element type.
    fn list_begin(&mut self) -> Result<(i32, u8), Malformed> {
        let b = self.byte()?;
        if b == 0 {
            return Ok((0, BYTE));
        }
        let ty = b & 0x0f;
        if ty == 0 || ty > UUID {
            return Err(Malformed);
        }
        let count = match b >> 4 {
            15 => i32::try_from(self.vlq()?).map_err(|_| Malformed)?,
            short => i32::from(short),
        };
        Ok((count, ty))
    }

    /// Skips a value of type `ty` as parquet 59 does (a boolean takes no byte, even as a
    /// collection's element).
    fn skip(&mut self, ty: u8, depth: u32) -> Result<(), Malformed> {
        if depth == 0 {
            return Err(Malformed);
        }
        match ty {
            TRUE | FALSE => Ok(()),
            BYTE => self.advance(1),
            I16 | I32 | I64 => self.vlq().map(drop),
            DOUBLE => self.advance(8),
            BINARY => self.binary(),
            UUID => self.advance(16),
            LIST | SET => {
                let (count, element_type) = self.list_begin()?;
                if matches!(element_type, TRUE | FALSE) {
                    return Ok(());
                }
                for _ in 0..count {
                    self.skip(element_type, depth - 1)?;
                }
                Ok(())
            }
            MAP => {
                let count = i32::try_from(self.vlq()?).map_err(|_| Malformed)?;
                if count <= 0 {
                    return Ok(());
                }
                let types = self.byte()?;
                let (key, value) = (types >> 4, types & 0x0f);
                if [key, value].iter().any(|&t| t == 0 || t > UUID) {
                    return Err(Malformed);
                }
                for _ in 0..count {
                    self.skip(key, depth - 1)?;
                    self.skip(value, depth - 1)?;
                }
                Ok(())
            }
            STRUCT => {
                while let Some((_, field_type)) = self.field_begin(0)? {
                    self.skip(field_type, depth - 1)?;
                }
                Ok(())
            }
            _ => Err(Malformed),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A FileMetaData holding `version` (field 1), then a schema list of elements, each a
    /// name (field 4) and, where given, `num_children` (field 5), then `num_rows` (field 3).
    fn footer(children: &[Option<i32>]) -> Vec<u8> {
        let varint = |mut z: u64| {
            let mut out = Vec::new();
            loop {
                let b = (z & 0x7f) as u8;
                z >>= 7;
                if z == 0 {
                    out.push(b);
                    return out;
                }
                out.push(b | 0x80);
            }
        };
        let zigzag = |n: i64| varint(((n << 1) ^ (n >> 63)) as u64);
        let mut f = vec![0x15, 2]; // field 1, i32: version 1
        f.push(0x19); // field 2, list
        f.push(0xfc); // long form: count follows, structs
        f.extend(varint(children.len() as u64));
        for (k, c) in children.iter().enumerate() {
            f.push(0x48); // field 4, binary
            f.push(2);
            f.extend_from_slice(format!("c{}", k % 10).as_bytes());
            if let Some(c) = c {
                f.push(0x15); // field 5, i32
                f.extend(zigzag(i64::from(*c)));
            }
            f.push(0); // end of the element
        }
        f.push(0x16); // field 3, i64
        f.extend(zigzag(7));
        f.push(0);
        f
    }

    #[test]
    fn counts_that_fit_the_schema_pass() {
        for schema in [
            vec![Some(2), None, None],
            vec![Some(1), Some(1), Some(2), None, None],
            vec![Some(0)],
            (0..40).map(|k| (k == 0).then_some(39)).collect(),
        ] {
            assert_eq!(
                check_schema_children(&footer(&schema)),
                Ok(()),
                "{schema:?}"
            );
        }
    }

    #[test]
    fn a_count_past_the_list_or_negative_is_refused() {
        let cases = [
            (vec![Some(3), None, None], 0, 3, 2),
            (vec![Some(1), Some(2), None], 1, 2, 1),
            (vec![Some(2), Some(-1), None], 1, -1, 1),
            (vec![Some(i32::MAX), None], 0, i64::from(i32::MAX), 1),
        ];
        for (schema, element, declared, following) in cases {
            assert_eq!(
                check_schema_children(&footer(&schema)),
                Err(TooManyChildren {
                    element,
                    declared,
                    following
                }),
                "{schema:?}"
            );
        }
    }

    #[test]
    fn real_footers_are_walked_to_the_end_of_their_schema() {
        use arrow_array::{ArrayRef, Int32Array, RecordBatch, StructArray};
        use arrow_schema::{DataType, Field};
        use std::sync::Arc;
        let inner: ArrayRef = Arc::new(Int32Array::from(vec![1, 2]));
        let nested = StructArray::from(vec![
            (
                Arc::new(Field::new("a", DataType::Int32, false)),
                inner.clone(),
            ),
            (
                Arc::new(Field::new("b", DataType::Int32, false)),
                inner.clone(),
            ),
        ]);
        let batch =
            RecordBatch::try_from_iter([("x", inner.clone()), ("s", Arc::new(nested) as ArrayRef)])
                .unwrap();
        let mut bytes = Vec::new();
        let mut w =
            ::parquet::arrow::ArrowWriter::try_new(&mut bytes, batch.schema(), None).unwrap();
        w.write(&batch).unwrap();
        w.close().unwrap();
        let len = bytes.len();
        let metadata_len = u32::from_le_bytes(bytes[len - 8..len - 4].try_into().unwrap());
        let metadata = &bytes[len - 8 - metadata_len as usize..len - 8];
        let mut walk = Thrift {
            bytes: metadata,
            at: 0,
        };
        // Walked, not given up on: the root and the struct both declare their children.
        assert!(matches!(walk.schema_children(), Ok(None)));
        assert!(
            walk.at > 10 && walk.at < metadata.len(),
            "{} of {}",
            walk.at,
            metadata.len()
        );
    }

    #[test]
    fn malformed_thrift_is_left_to_parquet() {
        let whole = footer(&[Some(3), None, None]);
        // Cut before the offending count is read, the walk cannot tell: no verdict.
        assert_eq!(check_schema_children(&whole[..6]), Ok(()));
        assert_eq!(check_schema_children(&[0xff; 40]), Ok(()));
        assert_eq!(check_schema_children(&[]), Ok(()));
    }
}
