//! The checksums of DSv1: adler32 of an extent (§12.1) and Bob Jenkins' lookup2 hash (§12.3),
//! one at a time or several in lanes side by side.

/// adler32 of an extent as stored: bytes [0, 16) then [20, end).
pub fn extent_adler32(extent: &[u8]) -> u32 {
    let mut a = simd_adler32::Adler32::new();
    a.write(&extent[..16]);
    a.write(&extent[20..]);
    a.finish()
}

/// The mixing step of Bob Jenkins' lookup2 hash (§12.3).
#[inline(always)]
pub fn mix(a: &mut u32, b: &mut u32, c: &mut u32) {
    *a = a.wrapping_sub(*b).wrapping_sub(*c) ^ (*c >> 13);
    *b = b.wrapping_sub(*c).wrapping_sub(*a) ^ (*a << 8);
    *c = c.wrapping_sub(*a).wrapping_sub(*b) ^ (*b >> 13);
    *a = a.wrapping_sub(*b).wrapping_sub(*c) ^ (*c >> 12);
    *b = b.wrapping_sub(*c).wrapping_sub(*a) ^ (*a << 16);
    *c = c.wrapping_sub(*a).wrapping_sub(*b) ^ (*b >> 5);
    *a = a.wrapping_sub(*b).wrapping_sub(*c) ^ (*c >> 3);
    *b = b.wrapping_sub(*c).wrapping_sub(*a) ^ (*a << 10);
    *c = c.wrapping_sub(*a).wrapping_sub(*b) ^ (*b >> 15);
}

/// Bob Jenkins' lookup2 `hash(k, length, initval)`, byte-oriented (§12.3).
pub fn lookup2(k: &[u8], initval: u32) -> u32 {
    lookup2_parts(None, k, k.len(), initval)
}

/// lookup2 of 4 zero bytes followed by `body`, without building that concatenation: the
/// variable area's hash (§12.2) when the area is borrowed from the file.
pub fn lookup2_zero_prefixed(body: &[u8], initval: u32) -> u32 {
    if body.len() < 8 {
        let mut k = [0u8; 12];
        k[4..4 + body.len()].copy_from_slice(body);
        return lookup2(&k[..4 + body.len()], initval);
    }
    let mut head = [0u8; 12];
    head[4..].copy_from_slice(&body[..8]);
    lookup2_parts(Some(&head), &body[8..], body.len() + 4, initval)
}

#[inline(always)]
fn word(b: &[u8]) -> u32 {
    u32::from_le_bytes([b[0], b[1], b[2], b[3]])
}

/// lookup2's running state between 12-byte blocks.
#[derive(Clone, Copy)]
struct Lookup2 {
    a: u32,
    b: u32,
    c: u32,
}

impl Lookup2 {
    #[inline(always)]
    fn new(initval: u32) -> Self {
        Lookup2 {
            a: 0x9e37_79b9,
            b: 0x9e37_79b9,
            c: initval,
        }
    }

    #[inline(always)]
    fn block(&mut self, ch: &[u8]) {
        self.a = self.a.wrapping_add(word(&ch[0..4]));
        self.b = self.b.wrapping_add(word(&ch[4..8]));
        self.c = self.c.wrapping_add(word(&ch[8..12]));
        mix(&mut self.a, &mut self.b, &mut self.c);
    }

    /// Hashes the rest of the input (its full blocks, then the tail) and ends; `total` is the
    /// length of the whole input.
    #[inline(always)]
    fn finish(mut self, rest: &[u8], total: usize) -> u32 {
        let mut chunks = rest.chunks_exact(12);
        for ch in &mut chunks {
            self.block(ch);
        }
        let r = chunks.remainder();
        self.c = self.c.wrapping_add(total as u32);
        let mut tail = [0u8; 12];
        tail[..r.len()].copy_from_slice(r);
        self.a = self.a.wrapping_add(word(&tail[0..4]));
        self.b = self.b.wrapping_add(word(&tail[4..8]));
        self.c = self
            .c
            .wrapping_add(u32::from_le_bytes([0, tail[8], tail[9], tail[10]]));
        mix(&mut self.a, &mut self.b, &mut self.c);
        self.c
    }
}

/// lookup2 of `head` (a first full 12-byte block, if any) then `rest`; `total` is their length.
fn lookup2_parts(head: Option<&[u8; 12]>, rest: &[u8], total: usize, initval: u32) -> u32 {
    let mut h = Lookup2::new(initval);
    if let Some(head) = head {
        h.block(head);
    }
    h.finish(rest, total)
}

/// `lookup2(inputs[l], inits[l])` for every lane `l`, computed together. One hash is a single
/// chain of dependent steps that leaves most of a core idle; the lanes' chains run side by
/// side, their common length as vectors (four lanes fit a 128-bit register: twice the speed
/// of two scalar chains interleaved, measured on 1 MiB inputs), each rest alone. Eight lanes
/// on x86_64 take the SSE2 kernel, a third less time again than four in the portable loop.
pub fn lookup2_lanes<const N: usize>(inputs: [&[u8]; N], inits: [u32; N]) -> [u32; N] {
    let common = inputs.iter().map(|x| x.len()).min().unwrap_or(0) / 12 * 12;
    let blocks: [&[u8]; N] = std::array::from_fn(|l| &inputs[l][..common]);
    let mut a = [0x9e37_79b9u32; N];
    let mut b = a;
    let mut c = inits;
    #[allow(unused_mut)]
    let mut vectorised = 0;
    #[cfg(target_arch = "x86_64")]
    if let (Ok(inputs), Ok(a), Ok(b), Ok(c)) = (
        <&[&[u8]; 8]>::try_from(&blocks[..]),
        <&mut [u32; 8]>::try_from(&mut a[..]),
        <&mut [u32; 8]>::try_from(&mut b[..]),
        <&mut [u32; 8]>::try_from(&mut c[..]),
    ) {
        vectorised = common / 48 * 48;
        lanes_sse2::blocks(inputs, vectorised, a, b, c);
    }
    for at in (vectorised..common).step_by(12) {
        for l in 0..N {
            let block = &blocks[l][at..at + 12];
            a[l] = a[l].wrapping_add(word(&block[0..4]));
            b[l] = b[l].wrapping_add(word(&block[4..8]));
            c[l] = c[l].wrapping_add(word(&block[8..12]));
        }
        // `mix`, one step for all lanes at a time, so that each step is a vector operation.
        macro_rules! step {
            ($x:ident, $y:ident, $z:ident, $shift:tt $by:literal) => {
                for l in 0..N {
                    $x[l] = $x[l].wrapping_sub($y[l]).wrapping_sub($z[l]) ^ ($z[l] $shift $by);
                }
            };
        }
        step!(a, b, c, >> 13);
        step!(b, c, a, << 8);
        step!(c, a, b, >> 13);
        step!(a, b, c, >> 12);
        step!(b, c, a, << 16);
        step!(c, a, b, >> 5);
        step!(a, b, c, >> 3);
        step!(b, c, a, << 10);
        step!(c, a, b, >> 15);
    }
    std::array::from_fn(|l| {
        Lookup2 {
            a: a[l],
            b: b[l],
            c: c[l],
        }
        .finish(&inputs[l][common..], inputs[l].len())
    })
}

/// How many inputs [`lookup2_many`] hashes at once: the lanes of its SSE2 kernel. Callers
/// that gather inputs for it (extents to seal or to verify) gather this many.
pub const LOOKUP2_LANES: usize = 8;

/// `lookup2(input, init)` of each input, [`LOOKUP2_LANES`] at a time ([`lookup2_lanes`]); a
/// short group fills its empty lanes with its first input, no dearer than leaving them.
pub fn lookup2_many(inputs: &[&[u8]], init: u32) -> Vec<u32> {
    let mut hashes = Vec::with_capacity(inputs.len());
    for group in inputs.chunks(LOOKUP2_LANES) {
        if let [one] = group {
            hashes.push(lookup2(one, init));
            continue;
        }
        let lanes: [&[u8]; LOOKUP2_LANES] =
            std::array::from_fn(|l| *group.get(l).unwrap_or(&group[0]));
        hashes.extend_from_slice(&lookup2_lanes(lanes, [init; LOOKUP2_LANES])[..group.len()]);
    }
    hashes
}

/// lookup2's blocks in SSE2 (every x86_64 CPU has it) for eight lanes, four to a register.
///
/// The portable loop leaves the words to the compiler, which gathers each lane's word into a
/// vector one at a time: three loads and inserts a block per lane, as many instructions as the
/// mix itself. Here each lane's next 48 bytes (four blocks) are three 16-byte loads, turned
/// into the lanes' word vectors by 4 × 4 transposes. And a mix is a chain of dependent steps:
/// one register of four lanes waits on it, two side by side keep the core busy.
#[cfg(target_arch = "x86_64")]
mod lanes_sse2 {
    use std::arch::x86_64::*;

    /// Runs lookup2's 12-byte blocks over `inputs[l][..len]` into lane `l` of `a`, `b`, `c`;
    /// `len` is a multiple of 48.
    pub(super) fn blocks(
        inputs: &[&[u8]; 8],
        len: usize,
        a: &mut [u32; 8],
        b: &mut [u32; 8],
        c: &mut [u32; 8],
    ) {
        assert!(len % 48 == 0 && inputs.iter().all(|x| x.len() >= len));
        // SAFETY: SSE2 is part of x86_64. Every load of an input reads 16 bytes at
        // `at + 16 * k` (k < 3) with `at + 48 <= len`, inside it (asserted above); the state
        // is read and written as two groups of four of its eight lanes.
        unsafe {
            let load =
                |v: &[u32; 8], g: usize| _mm_loadu_si128(v.as_ptr().add(4 * g) as *const __m128i);
            let mut va = [load(a, 0), load(a, 1)];
            let mut vb = [load(b, 0), load(b, 1)];
            let mut vc = [load(c, 0), load(c, 1)];
            // Words 4k..4k+4 of the four lanes of group `g`, one vector per word.
            let transposed = |g: usize, at: usize, k: usize| -> [__m128i; 4] {
                let row = |l: usize| {
                    _mm_loadu_si128(inputs[4 * g + l].as_ptr().add(at + 16 * k) as *const __m128i)
                };
                let (r0, r1, r2, r3) = (row(0), row(1), row(2), row(3));
                let t0 = _mm_unpacklo_epi32(r0, r1);
                let t1 = _mm_unpacklo_epi32(r2, r3);
                let t2 = _mm_unpackhi_epi32(r0, r1);
                let t3 = _mm_unpackhi_epi32(r2, r3);
                [
                    _mm_unpacklo_epi64(t0, t1),
                    _mm_unpackhi_epi64(t0, t1),
                    _mm_unpacklo_epi64(t2, t3),
                    _mm_unpackhi_epi64(t2, t3),
                ]
            };
            for at in (0..len).step_by(48) {
                let group = |g: usize| -> [__m128i; 12] {
                    let [w0, w1, w2] = [
                        transposed(g, at, 0),
                        transposed(g, at, 1),
                        transposed(g, at, 2),
                    ];
                    [
                        w0[0], w0[1], w0[2], w0[3], w1[0], w1[1], w1[2], w1[3], w2[0], w2[1],
                        w2[2], w2[3],
                    ]
                };
                let w = [group(0), group(1)];
                for block in 0..4 {
                    for g in 0..2 {
                        va[g] = _mm_add_epi32(va[g], w[g][3 * block]);
                        vb[g] = _mm_add_epi32(vb[g], w[g][3 * block + 1]);
                        vc[g] = _mm_add_epi32(vc[g], w[g][3 * block + 2]);
                    }
                    macro_rules! step {
                        ($x:ident, $y:ident, $z:ident, $shift:ident::<$by:literal>) => {
                            for g in 0..2 {
                                $x[g] = _mm_xor_si128(
                                    _mm_sub_epi32(_mm_sub_epi32($x[g], $y[g]), $z[g]),
                                    $shift::<$by>($z[g]),
                                );
                            }
                        };
                    }
                    step!(va, vb, vc, _mm_srli_epi32::<13>);
                    step!(vb, vc, va, _mm_slli_epi32::<8>);
                    step!(vc, va, vb, _mm_srli_epi32::<13>);
                    step!(va, vb, vc, _mm_srli_epi32::<12>);
                    step!(vb, vc, va, _mm_slli_epi32::<16>);
                    step!(vc, va, vb, _mm_srli_epi32::<5>);
                    step!(va, vb, vc, _mm_srli_epi32::<3>);
                    step!(vb, vc, va, _mm_slli_epi32::<10>);
                    step!(vc, va, vb, _mm_srli_epi32::<15>);
                }
            }
            let store = |v: &mut [u32; 8], x: [__m128i; 2]| {
                _mm_storeu_si128(v.as_mut_ptr() as *mut __m128i, x[0]);
                _mm_storeu_si128(v.as_mut_ptr().add(4) as *mut __m128i, x[1]);
            };
            store(a, va);
            store(b, vb);
            store(c, vc);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lookup2_vectors() {
        assert_eq!(lookup2(b"", 0), 0xbd49d10d);
        assert_eq!(lookup2(b"", 1972), 0x096a2819);
        assert_eq!(lookup2(b"", 1776), 0x25481311);
        assert_eq!(lookup2(b"DSv1", 1972), 0x962283ef);
        assert_eq!(lookup2(b"abcdefghijkl", 0), 0x0b1b3ea5);
        assert_eq!(lookup2(b"Four score and seven years ago", 1972), 0x4e89695a);
        let (mut a, mut b, mut c) = (0, 0, 1972);
        mix(&mut a, &mut b, &mut c);
        assert_eq!(c, 0x97d3d920);
    }

    #[test]
    fn lookup2_lanes_equal_single_hashes() {
        let data: Vec<u8> = (0..300u32).map(|i| (i * 131 % 251) as u8).collect();
        let lengths = [
            0, 1, 11, 12, 13, 24, 36, 37, 47, 48, 49, 60, 95, 96, 100, 199, 200, 300,
        ];
        for (k, &x_len) in lengths.iter().enumerate() {
            for &y_len in &lengths[k..] {
                let z_len = (x_len + y_len) / 2;
                let inputs = [
                    &data[..x_len],
                    &data[300 - y_len..],
                    &data[7..7 + z_len / 2],
                    &data[..z_len],
                ];
                let inits = [1972, 7, 0, u32::MAX];
                let want: Vec<u32> = inputs
                    .iter()
                    .zip(inits)
                    .map(|(x, i)| lookup2(x, i))
                    .collect();
                assert_eq!(
                    lookup2_lanes(inputs, inits).to_vec(),
                    want,
                    "{x_len} {y_len} {z_len}"
                );
                assert_eq!(
                    lookup2_lanes([inputs[0], inputs[1]], [inits[0], inits[1]]).to_vec(),
                    want[..2],
                );
                // Eight lanes: two vector registers, each lane's data and init its own.
                let eight: [&[u8]; 8] = std::array::from_fn(|l| match l {
                    0..4 => inputs[l],
                    _ => &data[l..l + inputs[l - 4].len().min(300 - l)],
                });
                let inits8: [u32; 8] = std::array::from_fn(|l| 0x9e37_79b9 ^ (l as u32 * 977));
                let want8: Vec<u32> = eight
                    .iter()
                    .zip(inits8)
                    .map(|(x, i)| lookup2(x, i))
                    .collect();
                assert_eq!(lookup2_lanes(eight, inits8).to_vec(), want8);
            }
        }
    }

    #[test]
    fn zero_prefixed_lookup2_equals_lookup2_of_the_concatenation() {
        let body: Vec<u8> = (0..100u8).map(|i| i.wrapping_mul(37)).collect();
        for len in 0..body.len() {
            let mut whole = vec![0u8; 4];
            whole.extend_from_slice(&body[..len]);
            assert_eq!(
                lookup2_zero_prefixed(&body[..len], 1972 + len as u32),
                lookup2(&whole, 1972 + len as u32),
                "{len} bytes"
            );
        }
    }
}
