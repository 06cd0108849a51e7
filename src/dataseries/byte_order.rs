//! The byte order of a DataSeries file, which its header states (§2) and every number in it
//! follows.

/// Byte order of a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ByteOrder {
    /// Least significant byte first.
    Little,
    /// Most significant byte first.
    Big,
}

impl ByteOrder {
    /// Reads a `u32` from the first 4 bytes of `b` (which must hold them).
    #[inline(always)]
    pub fn u32(self, b: &[u8]) -> u32 {
        let a = [b[0], b[1], b[2], b[3]];
        match self {
            ByteOrder::Little => u32::from_le_bytes(a),
            ByteOrder::Big => u32::from_be_bytes(a),
        }
    }
    /// Reads an `i32` from the first 4 bytes of `b` (which must hold them).
    #[inline(always)]
    pub fn i32(self, b: &[u8]) -> i32 {
        self.u32(b) as i32
    }
    /// Reads a `u64` from the first 8 bytes of `b` (which must hold them).
    #[inline(always)]
    pub fn u64(self, b: &[u8]) -> u64 {
        let a = [b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]];
        match self {
            ByteOrder::Little => u64::from_le_bytes(a),
            ByteOrder::Big => u64::from_be_bytes(a),
        }
    }
    /// Reads an `i64` from the first 8 bytes of `b` (which must hold them).
    #[inline(always)]
    pub fn i64(self, b: &[u8]) -> i64 {
        self.u64(b) as i64
    }
    /// Reads an `f64` from the first 8 bytes of `b` (which must hold them).
    #[inline(always)]
    pub fn f64(self, b: &[u8]) -> f64 {
        f64::from_bits(self.u64(b))
    }
    /// The 4 bytes of `v` in this order.
    pub fn put_u32(self, v: u32) -> [u8; 4] {
        match self {
            ByteOrder::Little => v.to_le_bytes(),
            ByteOrder::Big => v.to_be_bytes(),
        }
    }
    /// The 8 bytes of `v` in this order.
    pub fn put_u64(self, v: u64) -> [u8; 8] {
        match self {
            ByteOrder::Little => v.to_le_bytes(),
            ByteOrder::Big => v.to_be_bytes(),
        }
    }
    /// `"little-endian"` or `"big-endian"`.
    pub fn name(self) -> &'static str {
        match self {
            ByteOrder::Little => "little-endian",
            ByteOrder::Big => "big-endian",
        }
    }
}
