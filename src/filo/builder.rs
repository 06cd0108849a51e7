//! The back-to-front FlatBuffers builder of specs/filo.md Appendix A: the layout of the 2015
//! FlatBuffers Java runtime that filo-scala 0.2.6 ships with (every vtable slot written,
//! trailing absent ones included), which the `flatbuffers` crate's builder does not reproduce.
//!
//! Bytes are kept in reverse order (`rev[k]` is the byte `k + 1` positions before the end), so
//! prepending is a push; `finish` reverses them once.

pub(crate) struct Builder {
    rev: Vec<u8>,
    minalign: usize,
    slots: Vec<usize>,
    object_start: usize,
    vtables: Vec<usize>,
}

impl Builder {
    pub fn with_capacity(capacity: usize) -> Builder {
        Builder {
            rev: Vec::with_capacity(capacity),
            minalign: 1,
            slots: Vec::new(),
            object_start: 0,
            vtables: Vec::new(),
        }
    }

    /// Bytes written so far: positions are remembered as this "distance from the end".
    pub fn off(&self) -> usize {
        self.rev.len()
    }

    pub fn pad(&mut self, k: usize) {
        self.rev.resize(self.rev.len() + k, 0);
    }

    pub fn prep(&mut self, size: usize, extra: usize) {
        self.minalign = self.minalign.max(size);
        let k = (size - (self.off() + extra) % size) % size;
        self.pad(k);
    }

    /// Prepends `bytes` (given in file order), without alignment.
    pub fn put(&mut self, bytes: &[u8]) {
        self.rev.extend(bytes.iter().rev());
    }

    pub fn add_i8(&mut self, x: i8) {
        self.prep(1, 0);
        self.put(&x.to_le_bytes());
    }
    pub fn add_u16(&mut self, x: u16) {
        self.prep(2, 0);
        self.put(&x.to_le_bytes());
    }
    pub fn add_i32(&mut self, x: i32) {
        self.prep(4, 0);
        self.put(&x.to_le_bytes());
    }
    pub fn add_i64(&mut self, x: i64) {
        self.prep(8, 0);
        self.put(&x.to_le_bytes());
    }
    pub fn add_uoffset(&mut self, target: usize) {
        self.prep(4, 0);
        let rel = (self.off() + 4 - target) as u32;
        self.put(&rel.to_le_bytes());
    }

    pub fn start_vector(&mut self, elem_size: usize, n: usize, align: usize) {
        self.prep(4, elem_size * n);
        self.prep(align, elem_size * n);
    }
    pub fn end_vector(&mut self, n: usize) -> usize {
        self.put(&(n as u32).to_le_bytes());
        self.off()
    }

    /// A `[ubyte]` vector whose body is `body` (already little-endian), aligned to `align`.
    pub fn byte_vector(&mut self, body: &[u8], align: usize) -> usize {
        self.start_vector(1, body.len(), align);
        self.put(body);
        self.end_vector(body.len())
    }

    pub fn create_string(&mut self, s: &[u8]) -> usize {
        self.prep(1, 0);
        self.put(&[0]);
        self.start_vector(1, s.len(), 1);
        self.put(s);
        self.end_vector(s.len())
    }

    /// A vector of uoffsets to `targets` (strings), built last first.
    pub fn offset_vector(&mut self, targets: &[usize]) -> usize {
        self.start_vector(4, targets.len(), 4);
        for &t in targets.iter().rev() {
            self.add_uoffset(t);
        }
        self.end_vector(targets.len())
    }

    /// An `[int]` vector.
    pub fn int_vector(&mut self, values: &[i32]) -> usize {
        self.start_vector(4, values.len(), 4);
        for &v in values.iter().rev() {
            self.add_i32(v);
        }
        self.end_vector(values.len())
    }

    /// A `[long]` vector.
    pub fn long_vector(&mut self, values: &[u64]) -> usize {
        self.start_vector(8, values.len(), 8);
        for &v in values.iter().rev() {
            self.add_i64(v as i64);
        }
        self.end_vector(values.len())
    }

    /// The `DataInfo` struct, inline; returns nothing: the caller records the slot.
    pub fn data_info(&mut self, nbits: u16, signed: bool) {
        self.prep(2, 4);
        self.pad(1);
        self.put(&[signed as u8]);
        self.put(&nbits.to_le_bytes());
    }

    /// The `DDTVars` struct, inline.
    pub fn ddt_vars(&mut self, len: i32, base_tz: i8, base_millis: i64) {
        self.prep(8, 16);
        self.put(&base_millis.to_le_bytes());
        self.pad(3);
        self.put(&base_tz.to_le_bytes());
        self.put(&len.to_le_bytes());
    }

    pub fn start_table(&mut self, numfields: usize) {
        self.object_start = self.off();
        self.slots = vec![0; numfields];
    }

    /// Records that field `id` was just written.
    pub fn slot(&mut self, id: usize) {
        self.slots[id] = self.off();
    }

    pub fn end_table(&mut self) -> usize {
        self.add_i32(0);
        let table = self.off();
        let slots = std::mem::take(&mut self.slots);
        for &s in slots.iter().rev() {
            self.add_u16(if s != 0 { (table - s) as u16 } else { 0 });
        }
        self.add_u16((table - self.object_start) as u16);
        let vt_size = (slots.len() + 2) * 2;
        self.add_u16(vt_size as u16);
        let new = self.off();
        let found = self.vtables.iter().copied().find(|&e| {
            let e_size = u16::from_le_bytes([self.rev[e - 1], self.rev[e - 2]]) as usize;
            e_size == vt_size && self.rev[e - e_size..e] == self.rev[new - vt_size..new]
        });
        let soffset = match found {
            Some(existing) => {
                self.rev.truncate(table);
                existing as i64 - table as i64
            }
            None => {
                self.vtables.push(new);
                new as i64 - table as i64
            }
        };
        let le = (soffset as i32).to_le_bytes();
        for (j, b) in le.iter().enumerate() {
            self.rev[table - 1 - j] = *b;
        }
        table
    }

    /// Finishes with the root offset and the header word in front; returns the whole vector.
    pub fn finish(mut self, root: usize, header: u32) -> Vec<u8> {
        self.prep(self.minalign, 4);
        self.add_uoffset(root);
        self.add_i32(header as i32);
        self.rev.reverse();
        self.rev
    }
}
