//! Array columns: List and LargeList as Arr32 or Arr64, their element column encoded by the
//! same rules.

use std::io;

use arrow_array::cast::AsArray;
use arrow_array::{Array, GenericListArray, OffsetSizeTrait};
use arrow_schema::DataType;

use super::super::spool::{BitStream, Spool};
use super::offsets::{bad_offsets, with_offsets, OffsetWord, Offsets};
use super::{bit_words, nulls_of, EncodeError, EncodeOptions, Encoder, Finished};
use crate::jay::mapping::JayType;

pub(super) struct ListEncoder {
    limit: u64,
    validity: BitStream,
    offsets: Offsets,
    /// Child elements so far (the last offset).
    end: u64,
    rows: u64,
    null_lists: u64,
    child: Box<dyn Encoder>,
    /// Ranges of child elements that the current batch's valid lists refer to.
    ranges: Vec<(usize, usize)>,
}

impl ListEncoder {
    pub(super) fn new(large: bool, child: Box<dyn Encoder>, options: EncodeOptions) -> Self {
        ListEncoder {
            limit: options.offset32_limit,
            validity: BitStream::new(),
            offsets: Offsets::new(large),
            end: 0,
            rows: 0,
            null_lists: 0,
            child,
            ranges: Vec::new(),
        }
    }

    fn append_list<O: OffsetSizeTrait>(
        &mut self,
        a: &GenericListArray<O>,
    ) -> Result<(), EncodeError> {
        let n = a.len();
        let offs = a.value_offsets();
        let child_len = a.values().len();
        let nulls = nulls_of(a);
        let valid = |i: usize| nulls.is_none_or(|nb| nb.is_valid(i));

        // Pass 1: check the offsets, gather the child ranges of valid lists (the elements of a
        // null list are dropped), count the elements.
        self.ranges.clear();
        let mut kept = 0u64;
        for i in 0..n {
            let (s, e) = (offs[i].as_usize(), offs[i + 1].as_usize());
            if e < s || e > child_len {
                return Err(bad_offsets(i, "list"));
            }
            if !valid(i) || s == e {
                continue;
            }
            kept += (e - s) as u64;
            match self.ranges.last_mut() {
                Some(last) if last.1 == s => last.1 = e,
                _ => self.ranges.push((s, e)),
            }
        }
        if !self.offsets.wide_mode && self.end.saturating_add(kept) > self.limit {
            self.offsets.wide_mode = true;
        }

        // The child first: if one of its values cannot be written, nothing of this batch is.
        for &(s, e) in &self.ranges {
            let slice = a.values().slice(s, e - s);
            self.child.append(slice.as_ref()).map_err(|err| {
                let Some(j) = err.index else { return err };
                let element = s + j;
                let row = offs
                    .partition_point(|o| o.as_usize() <= element)
                    .saturating_sub(1);
                let within = element - offs[row].as_usize();
                EncodeError {
                    class: err.class,
                    index: Some(row),
                    message: format!("element {within} of the list: {}", err.message),
                }
            })?;
        }

        // Pass 2: validity and offsets.
        match nulls {
            None => self.validity.push_ones(n as u64),
            Some(nb) => {
                for (w, k) in bit_words(nb.inner()) {
                    self.validity.push_bits(w, k);
                }
            }
        }
        self.validity.flush_words();
        let mut end = self.end;
        with_offsets!(self.offsets, |out: W| {
            out.reserve(n);
            for i in 0..n {
                if valid(i) {
                    end += (offs[i + 1].as_usize() - offs[i].as_usize()) as u64;
                }
                out.push(W::from_end(end));
            }
        });
        self.offsets.flush();
        self.end = end;
        self.rows += n as u64;
        self.null_lists += nulls.map_or(0, |nb| nb.null_count()) as u64;
        Ok(())
    }
}

impl Encoder for ListEncoder {
    fn append(&mut self, array: &dyn Array) -> Result<(), EncodeError> {
        match array.data_type() {
            DataType::List(_) => self.append_list(array.as_list::<i32>()),
            DataType::LargeList(_) => self.append_list(array.as_list::<i64>()),
            _ => Err(EncodeError::mismatch(array, "a list")),
        }
    }

    fn held(&self) -> usize {
        self.validity.held() + self.offsets.held() + self.child.held()
    }

    fn spill(&mut self, spool: &mut Spool) -> io::Result<()> {
        self.validity.spill(spool)?;
        self.offsets.spill(spool)?;
        self.child.spill(spool)
    }

    fn finish(self: Box<Self>) -> Finished {
        let this = *self;
        let child = this.child.finish();
        let element = Box::new(child.jay_type.clone());
        let jay_type = if this.offsets.wide_mode {
            JayType::Arr64(element)
        } else {
            JayType::Arr32(element)
        };
        let validity = (this.null_lists > 0).then(|| this.validity.finish());
        Finished {
            jay_type,
            nrows: this.rows,
            nullcount: this.null_lists,
            stats: None,
            validity,
            data: vec![this.offsets.finish()],
            child: Some(Box::new(child)),
        }
    }
}
