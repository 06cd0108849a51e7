//! Text columns: Utf8, LargeUtf8, Utf8View and dictionaries of those, as Str32 or Str64.

use std::io;

use arrow_array::cast::AsArray;
use arrow_array::types::{
    ArrowDictionaryKeyType, Int16Type, Int32Type, Int64Type, Int8Type, UInt16Type, UInt32Type,
    UInt64Type, UInt8Type,
};
use arrow_array::{Array, GenericStringArray, OffsetSizeTrait};
use arrow_buffer::ArrowNativeType;
use arrow_schema::DataType;

use super::super::spool::{Spool, Stream};
use super::offsets::{bad_offsets, first_decrease, with_offsets, OffsetWord, Offsets};
use super::{bit_words, nulls_of, Buf, EncodeError, EncodeOptions, Encoder, Finished};
use crate::error::ErrorClass;
use crate::jay::mapping::JayType;

pub(super) struct TextEncoder {
    limit: u64,
    offsets: Offsets,
    bytes: Stream,
    /// Text bytes so far (the last offset).
    end: u64,
    rows: u64,
    nullcount: u64,
    /// Dictionary indices of the current batch.
    indices: Vec<usize>,
}

impl TextEncoder {
    pub(super) fn new(large: bool, options: EncodeOptions) -> Self {
        TextEncoder {
            limit: options.offset32_limit,
            offsets: Offsets::new(large),
            bytes: Stream::new(),
            end: 0,
            rows: 0,
            nullcount: 0,
            indices: Vec::new(),
        }
    }

    /// Switches to 64-bit offsets if the column, with `rows` more rows and `text` more bytes,
    /// would outgrow Str32 (A5.2). The whole column is then written as Str64.
    fn fit(&mut self, rows: usize, text: u64) {
        if !self.offsets.wide_mode
            && (self.end.saturating_add(text) > self.limit
                || self.rows.saturating_add(rows as u64) > self.limit)
        {
            self.offsets.wide_mode = true;
        }
    }

    fn append_offsets_array<O: OffsetSizeTrait>(
        &mut self,
        a: &GenericStringArray<O>,
    ) -> Result<(), EncodeError> {
        let n = a.len();
        let offs = a.value_offsets();
        let values = a.values();
        // Arrow guarantees this for arrays built safely; checking it once makes the loops below
        // free of checks and of any risk of panicking on a hand-made array.
        if let Some(i) = first_decrease(offs) {
            return Err(bad_offsets(i, "string"));
        }
        let (first, last) = (offs[0].as_usize(), offs[n].as_usize());
        if last > values.len() {
            return Err(bad_offsets(n.saturating_sub(1), "string"));
        }
        let nulls = nulls_of(a);
        let slots = (last - first) as u64;
        let text = match nulls {
            Some(nulls) if self.end.saturating_add(slots) > self.limit => (0..n)
                .filter(|&i| nulls.is_valid(i))
                .map(|i| (offs[i + 1].as_usize() - offs[i].as_usize()) as u64)
                .sum(),
            _ => slots,
        };
        self.fit(n, text);
        let base = self.end;
        let bytes = &mut self.bytes;
        let end =
            with_offsets!(self.offsets, |out: W| {
                out.reserve(n);
                match nulls {
                    None => {
                        bytes.push_buffer(values.slice_with_length(first, last - first));
                        let shift = base.wrapping_sub(first as u64);
                        out.extend(
                            offs[1..]
                                .iter()
                                .map(|o| W::from_end((o.as_usize() as u64).wrapping_add(shift))),
                        );
                        base + slots
                    }
                    Some(nulls) => {
                        let mut end = base;
                        // A run of source bytes still to copy, [run_start, run_end): the bytes of
                        // consecutive valid rows, interrupted only where a null slot holds bytes.
                        let (mut run_start, mut run_end) = (first, first);
                        let mut flush = |from: usize, to: usize| {
                            if to > from {
                                bytes.push_buffer(values.slice_with_length(from, to - from));
                            }
                        };
                        // Valid rows [from, to): one shift of their offsets, one run of bytes.
                        let mut valid_rows =
                            |from: usize, to: usize, end: &mut u64, out: &mut Vec<W>| {
                                let (s, e) = (offs[from].as_usize(), offs[to].as_usize());
                                if s != run_end {
                                    flush(run_start, run_end);
                                    run_start = s;
                                }
                                run_end = e;
                                let shift = end.wrapping_sub(s as u64);
                                out.extend(offs[from + 1..=to].iter().map(|o| {
                                    W::from_end((o.as_usize() as u64).wrapping_add(shift))
                                }));
                                *end += (e - s) as u64;
                            };
                        let mut row = 0usize;
                        for (word, k) in bit_words(nulls.inner()) {
                            let k = k as usize;
                            let mut b = 0usize;
                            while b < k {
                                let ones = ((word >> b).trailing_ones() as usize).min(k - b);
                                if ones > 0 {
                                    valid_rows(row + b, row + b + ones, &mut end, out);
                                    b += ones;
                                }
                                if b < k {
                                    out.push(W::from_end(end).with_na());
                                    b += 1;
                                }
                            }
                            row += k;
                        }
                        flush(run_start, run_end);
                        end
                    }
                }
            });
        self.nullcount += nulls.map_or(0, |n| n.null_count()) as u64;
        self.end = end;
        Ok(())
    }

    /// Utf8View (the strings Polars exports): the text length from each view, then every
    /// row's bytes (inline in the view up to 12 bytes, else in a data buffer) copied into one
    /// piece for the batch. Per row this is a load of the view and one short copy, where going
    /// through `value(i)` twice costs several times that.
    fn append_views(&mut self, a: &arrow_array::StringViewArray) -> Result<(), EncodeError> {
        let n = a.len();
        let views = a.views();
        let buffers = a.data_buffers();
        let nulls = a.nulls();
        let is_valid = |i: usize| nulls.is_none_or(|m| m.is_valid(i));
        // Checked before any offset is pushed, so a bad view leaves the column as it was.
        let mut text = 0u64;
        for (i, &view) in views.iter().enumerate() {
            if !is_valid(i) {
                continue;
            }
            let len = view as u32 as usize;
            if len > 12 {
                let (buffer, offset) = ((view >> 64) as u32 as usize, (view >> 96) as u32 as usize);
                let inside = buffers
                    .get(buffer)
                    .is_some_and(|b| offset.checked_add(len).is_some_and(|e| e <= b.len()));
                if !inside {
                    return Err(EncodeError::at(
                        i,
                        ErrorClass::BadValue,
                        format!(
                            "string view of {len} bytes at offset {offset} of data buffer \
                             {buffer} is outside the array's {} buffers",
                            buffers.len()
                        ),
                    ));
                }
            }
            text += len as u64;
        }
        self.fit(n, text);
        // 12 bytes of slack: an inline string is copied as all 12 bytes of its view (a fixed
        // size the compiler turns into two moves), and the next string overwrites the excess.
        let mut piece = vec![0u8; text as usize + 12];
        let mut at = 0usize;
        let mut end = self.end;
        let mut nullcount = 0u64;
        with_offsets!(self.offsets, |out: W| {
            out.reserve(n);
            for (i, &view) in views.iter().enumerate() {
                if !is_valid(i) {
                    nullcount += 1;
                    out.push(W::from_end(end).with_na());
                    continue;
                }
                let len = view as u32 as usize;
                if len <= 12 {
                    piece[at..at + 12].copy_from_slice(&view.to_le_bytes()[4..16]);
                } else {
                    let (buffer, offset) =
                        ((view >> 64) as u32 as usize, (view >> 96) as u32 as usize);
                    piece[at..at + len].copy_from_slice(&buffers[buffer][offset..offset + len]);
                }
                at += len;
                end += len as u64;
                out.push(W::from_end(end));
            }
        });
        piece.truncate(at);
        self.bytes
            .push_buffer(arrow_buffer::Buffer::from_vec(piece));
        self.end = end;
        self.nullcount += nullcount;
        Ok(())
    }

    /// Text given row by row (dictionaries): `row(i)` is `None` for NA.
    fn append_rows<'a>(
        &mut self,
        n: usize,
        row: impl Fn(usize) -> Option<&'a [u8]>,
    ) -> Result<(), EncodeError> {
        let text: u64 = (0..n).filter_map(&row).map(|r| r.len() as u64).sum();
        self.fit(n, text);
        let mut end = self.end;
        let mut nulls = 0u64;
        let bytes = &mut self.bytes;
        with_offsets!(self.offsets, |out: W| {
            out.reserve(n);
            for i in 0..n {
                match row(i) {
                    Some(r) => {
                        bytes.push_slice(r);
                        end += r.len() as u64;
                        out.push(W::from_end(end));
                    }
                    None => {
                        nulls += 1;
                        out.push(W::from_end(end).with_na());
                    }
                }
            }
        });
        self.end = end;
        self.nullcount += nulls;
        Ok(())
    }

    fn append_dictionary<K: ArrowDictionaryKeyType>(
        &mut self,
        array: &dyn Array,
    ) -> Result<bool, EncodeError> {
        let Some(dict) = array.as_dictionary_opt::<K>() else {
            return Ok(false);
        };
        let values = dict.values();
        let keys = dict.keys();
        let nv = values.len();
        let mut indices = std::mem::take(&mut self.indices);
        indices.clear();
        indices.reserve(keys.len());
        for (i, k) in keys.iter().enumerate() {
            indices.push(match k {
                None => usize::MAX,
                Some(k) => match k.to_usize() {
                    Some(k) if k < nv => k,
                    _ => {
                        return Err(EncodeError::at(
                            i,
                            ErrorClass::BadValue,
                            format!("dictionary key {k:?} is outside the {nv} dictionary values"),
                        ))
                    }
                },
            });
        }
        let result = match text_source(values.as_ref()) {
            Some(source) => self.append_rows(indices.len(), |i| match indices[i] {
                usize::MAX => None,
                k => source.get(k),
            }),
            None => Err(EncodeError::mismatch(
                values.as_ref(),
                "text dictionary values",
            )),
        };
        self.indices = indices;
        result.map(|_| true)
    }
}

/// Row access to any of Arrow's three string layouts.
enum TextSource<'a> {
    Utf8(&'a GenericStringArray<i32>),
    Large(&'a GenericStringArray<i64>),
    View(&'a arrow_array::StringViewArray),
}

/// The text bytes a column of Utf8, LargeUtf8 or Utf8View stores for `array` (the lengths of
/// its valid rows), or `None` for other types (dictionaries). A view that points outside its
/// buffers still counts by its length: `append` refuses it later.
pub(crate) fn text_len(array: &dyn Array) -> Option<u64> {
    fn of_offsets<O: OffsetSizeTrait>(a: &GenericStringArray<O>) -> u64 {
        let offs = a.value_offsets();
        let len = |i: usize| offs[i + 1].as_usize().saturating_sub(offs[i].as_usize()) as u64;
        match nulls_of(a) {
            None => offs[a.len()].as_usize().saturating_sub(offs[0].as_usize()) as u64,
            Some(nulls) => nulls.valid_indices().map(len).sum(),
        }
    }
    Some(match text_source(array)? {
        TextSource::Utf8(a) => of_offsets(a),
        TextSource::Large(a) => of_offsets(a),
        TextSource::View(a) => match nulls_of(a) {
            None => a.views().iter().map(|&v| v as u32 as u64).sum(),
            Some(nulls) => nulls
                .valid_indices()
                .map(|i| a.views()[i] as u32 as u64)
                .sum(),
        },
    })
}

fn text_source(array: &dyn Array) -> Option<TextSource<'_>> {
    match array.data_type() {
        DataType::Utf8 => array.as_string_opt::<i32>().map(TextSource::Utf8),
        DataType::LargeUtf8 => array.as_string_opt::<i64>().map(TextSource::Large),
        DataType::Utf8View => array.as_string_view_opt().map(TextSource::View),
        _ => None,
    }
}

impl<'a> TextSource<'a> {
    #[inline]
    fn get(&self, i: usize) -> Option<&'a [u8]> {
        match self {
            TextSource::Utf8(a) => a.is_valid(i).then(|| a.value(i).as_bytes()),
            TextSource::Large(a) => a.is_valid(i).then(|| a.value(i).as_bytes()),
            TextSource::View(a) => a.is_valid(i).then(|| a.value(i).as_bytes()),
        }
    }
}

impl Encoder for TextEncoder {
    fn append(&mut self, array: &dyn Array) -> Result<(), EncodeError> {
        let n = array.len();
        match array.data_type() {
            DataType::Utf8 => self.append_offsets_array(array.as_string::<i32>())?,
            DataType::LargeUtf8 => self.append_offsets_array(array.as_string::<i64>())?,
            DataType::Utf8View => self.append_views(array.as_string_view())?,
            DataType::Dictionary(key, _) => {
                let done = match key.as_ref() {
                    DataType::Int8 => self.append_dictionary::<Int8Type>(array)?,
                    DataType::Int16 => self.append_dictionary::<Int16Type>(array)?,
                    DataType::Int32 => self.append_dictionary::<Int32Type>(array)?,
                    DataType::Int64 => self.append_dictionary::<Int64Type>(array)?,
                    DataType::UInt8 => self.append_dictionary::<UInt8Type>(array)?,
                    DataType::UInt16 => self.append_dictionary::<UInt16Type>(array)?,
                    DataType::UInt32 => self.append_dictionary::<UInt32Type>(array)?,
                    DataType::UInt64 => self.append_dictionary::<UInt64Type>(array)?,
                    _ => false,
                };
                if !done {
                    return Err(EncodeError::mismatch(array, "a dictionary of text"));
                }
            }
            _ => return Err(EncodeError::mismatch(array, "text")),
        }
        self.rows += n as u64;
        self.offsets.flush();
        Ok(())
    }

    fn held(&self) -> usize {
        self.offsets.held() + self.bytes.held()
    }

    fn spill(&mut self, spool: &mut Spool) -> io::Result<()> {
        self.offsets.spill(spool)?;
        self.bytes.spill(spool)
    }

    fn direct_layout(&self, rows: u64, text: u64) -> Option<Vec<u64>> {
        let wide = self.offsets.wide_mode;
        if !wide && (text > self.limit || rows > self.limit) {
            return None;
        }
        Some(vec![(rows + 1) * if wide { 8 } else { 4 }, text])
    }

    fn drain(&mut self, out: &mut dyn FnMut(usize, &[u8]) -> io::Result<()>) -> io::Result<()> {
        let offsets = &mut self.offsets;
        // A column laid out with 32-bit offsets cannot switch to 64-bit ones half-way.
        if offsets.wide_mode && offsets.narrow.len() > 0 {
            return Err(io::Error::other(
                "internal error: a column laid out with 32-bit offsets outgrew them",
            ));
        }
        let stream = if offsets.wide_mode {
            &mut offsets.wide
        } else {
            &mut offsets.narrow
        };
        stream.drain(&mut |b| out(0, b))?;
        self.bytes.drain(&mut |b| out(1, b))
    }

    fn finish(self: Box<Self>) -> Finished {
        let jay_type = if self.offsets.wide_mode {
            JayType::Str64
        } else {
            JayType::Str32
        };
        Finished {
            jay_type,
            nrows: self.rows,
            nullcount: self.nullcount,
            stats: None,
            validity: None,
            data: vec![self.offsets.finish(), Buf::Plain(self.bytes)],
            child: None,
        }
    }
}
