//! Parquet's value encodings, written straight from iocap's columns: the RLE / bit-packing
//! hybrid (dictionary indices and definition levels), `DELTA_BINARY_PACKED` (every integer
//! column), and `PLAIN` (booleans, a dictionary's strings). The parquet crate has these too,
//! but behind column writers that take values one batch at a time and hash every string into
//! a dictionary; iocap's strings are table entries already numbered, so their indices are
//! encoded as they are.

/// The bits needed for values up to `max`.
pub fn bit_width(max: u64) -> u8 {
    (64 - max.leading_zeros()) as u8
}

/// `v` as an unsigned LEB128 varint.
fn uleb(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// `v` zigzag-encoded, as a varint.
fn zigzag(out: &mut Vec<u8>, v: i64) {
    uleb(out, ((v << 1) ^ (v >> 63)) as u64);
}

/// Packs values of `width` bits, least significant bit first, into bytes.
struct BitWriter<'a> {
    out: &'a mut Vec<u8>,
    acc: u128,
    bits: u32,
}

impl<'a> BitWriter<'a> {
    fn new(out: &'a mut Vec<u8>) -> Self {
        BitWriter { out, acc: 0, bits: 0 }
    }

    #[inline]
    fn put(&mut self, v: u64, width: u8) {
        self.acc |= u128::from(v) << self.bits;
        self.bits += u32::from(width);
        if self.bits >= 64 {
            self.out.extend_from_slice(&(self.acc as u64).to_le_bytes());
            self.acc >>= 64;
            self.bits -= 64;
        }
    }

    /// The bits left, to a whole byte.
    fn finish(self) {
        let bytes = self.bits.div_ceil(8) as usize;
        self.out.extend_from_slice(&(self.acc as u64).to_le_bytes()[..bytes]);
    }
}

/// Values below 2^`width` in the RLE / bit-packing hybrid, without a length prefix: looked at
/// in groups of 8, a group of equal values starts a repeated run (as long as the value lasts),
/// the other groups are bit-packed (the last group padded with zeros; the page's value count
/// says where they end).
pub fn rle_hybrid<T: Copy + Default + Eq + Into<u64>>(values: &[T], width: u8, out: &mut Vec<u8>) {
    let value_bytes = usize::from(width).div_ceil(8);
    // Values waiting to be bit-packed: `values[lit..i]`, whole groups of 8.
    let mut lit = 0;
    let mut i = 0;
    while i + 8 <= values.len() {
        let v = values[i];
        if !all_are(&values[i..i + 8], v) {
            i += 8;
            continue;
        }
        let mut j = i + 8;
        while j + 8 <= values.len() && all_are(&values[j..j + 8], v) {
            j += 8;
        }
        while j < values.len() && values[j] == v {
            j += 1;
        }
        bit_pack(&values[lit..i], width, out);
        uleb(out, ((j - i) as u64) << 1);
        out.extend_from_slice(&v.into().to_le_bytes()[..value_bytes]);
        lit = j;
        i = j;
    }
    bit_pack(&values[lit..], width, out);
}

/// Whether every value of `group` is `v`: all compared, no early exit, so that a group is
/// one vector comparison.
#[inline(always)]
fn all_are<T: Copy + Eq>(group: &[T], v: T) -> bool {
    group.iter().fold(true, |all, &x| all & (x == v))
}

/// A bit-packed run of `values` (a multiple of 8 of them, but for the last run).
fn bit_pack<T: Copy + Default + Into<u64>>(values: &[T], width: u8, out: &mut Vec<u8>) {
    if values.is_empty() {
        return;
    }
    let groups = values.len().div_ceil(8);
    uleb(out, (groups as u64) << 1 | 1);
    let mut full = values.chunks_exact(8);
    for group in &mut full {
        pack8(group, width, out);
    }
    let rest = full.remainder();
    if !rest.is_empty() {
        let mut last = [T::default(); 8];
        last[..rest.len()].copy_from_slice(rest);
        pack8(&last, width, out);
    }
}

/// A group of 8 values below 2^`width`, bit-packed: `width` bytes. Up to 16 bits a value
/// the group is built in one register.
#[inline]
fn pack8<T: Copy + Into<u64>>(group: &[T], width: u8, out: &mut Vec<u8>) {
    let bits = usize::from(width);
    if bits <= 8 {
        let word = (group.iter().enumerate()).fold(0u64, |w, (k, &v)| w | v.into() << (k * bits));
        out.extend_from_slice(&word.to_le_bytes()[..bits]);
    } else if bits <= 16 {
        let word = (group.iter().enumerate()).fold(0u128, |w, (k, &v)| w | u128::from(v.into()) << (k * bits));
        out.extend_from_slice(&word.to_le_bytes()[..bits]);
    } else {
        let mut w = BitWriter::new(out);
        group.iter().for_each(|&v| w.put(v.into(), width));
        w.finish();
    }
}

/// Definition levels of a column whose values may be absent (1: present, 0: absent), as a
/// data page (v1) holds them: their byte length, then the hybrid encoding of bit width 1.
pub fn def_levels(defs: &[u8], out: &mut Vec<u8>) {
    let at = out.len();
    out.extend_from_slice(&[0; 4]);
    rle_hybrid(defs, 1, out);
    let len = (out.len() - at - 4) as u32;
    out[at..at + 4].copy_from_slice(&len.to_le_bytes());
}

/// Booleans (0 or 1), `PLAIN`: one bit each, least significant first.
pub fn plain_bools(values: &[i64], out: &mut Vec<u8>) {
    out.extend(values.chunks(8).map(|byte| {
        byte.iter()
            .enumerate()
            .fold(0u8, |b, (k, &v)| b | u8::from(v != 0) << k)
    }));
}

/// Values of a block: 4 miniblocks of 32.
const BLOCK: usize = 128;
const MINIBLOCK: usize = 32;

/// Integers, `DELTA_BINARY_PACKED`: the first value, then blocks of 128 differences, each
/// block's smallest difference subtracted and its four miniblocks of 32 bit-packed at the
/// width their largest needs. Differences wrap as the format says (i64 arithmetic mod 2^64).
pub fn delta_binary_packed(values: &[i64], out: &mut Vec<u8>) {
    uleb(out, BLOCK as u64);
    uleb(out, (BLOCK / MINIBLOCK) as u64);
    uleb(out, values.len() as u64);
    zigzag(out, values.first().copied().unwrap_or(0));
    let mut deltas = [0u64; BLOCK];
    let mut start = 1;
    while start < values.len() {
        let n = (values.len() - start).min(BLOCK);
        let mut min = i64::MAX;
        for (k, d) in deltas[..n].iter_mut().enumerate() {
            let delta = values[start + k].wrapping_sub(values[start + k - 1]);
            min = min.min(delta);
            *d = delta as u64;
        }
        start += n;
        for d in &mut deltas[..n] {
            *d = d.wrapping_sub(min as u64);
        }
        zigzag(out, min);
        let minis = n.div_ceil(MINIBLOCK);
        let mut widths = [0u8; BLOCK / MINIBLOCK];
        for (m, width) in widths.iter_mut().enumerate().take(minis) {
            let end = ((m + 1) * MINIBLOCK).min(n);
            let max = deltas[m * MINIBLOCK..end].iter().fold(0, |a, &d| a | d);
            *width = bit_width(max);
        }
        out.extend_from_slice(&widths);
        for (m, &width) in widths.iter().enumerate().take(minis) {
            let end = ((m + 1) * MINIBLOCK).min(n);
            // A miniblock is always 32 values long; the last one's padding is zeros.
            deltas[end..(m + 1) * MINIBLOCK].fill(0);
            for group in deltas[m * MINIBLOCK..(m + 1) * MINIBLOCK].chunks_exact(8) {
                pack8(group, width, out);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The hybrid encoding read back as the format describes it (runs: a header `n << 1` and
    /// the value in whole bytes; bit-packed groups: a header `groups << 1 | 1` and `8 ×
    /// width` bits a group, least significant first), `count` values.
    fn read_hybrid(mut bytes: &[u8], width: u8, count: usize) -> Vec<u64> {
        fn uleb(bytes: &mut &[u8]) -> u64 {
            let (mut v, mut shift) = (0, 0);
            loop {
                let b = bytes[0];
                *bytes = &bytes[1..];
                v |= u64::from(b & 0x7f) << shift;
                shift += 7;
                if b < 0x80 {
                    return v;
                }
            }
        }
        let mut out = Vec::new();
        while out.len() < count {
            let header = uleb(&mut bytes);
            if header & 1 == 0 {
                let n = usize::try_from(header >> 1).unwrap();
                let size = usize::from(width).div_ceil(8);
                let mut v = [0u8; 8];
                v[..size].copy_from_slice(&bytes[..size]);
                bytes = &bytes[size..];
                out.extend(std::iter::repeat_n(u64::from_le_bytes(v), n));
            } else {
                let values = usize::try_from(header >> 1).unwrap() * 8;
                let packed = &bytes[..values * usize::from(width) / 8];
                bytes = &bytes[packed.len()..];
                let bit = |at: usize| u64::from(packed[at / 8] >> (at % 8) & 1);
                for k in 0..values {
                    let w = usize::from(width);
                    out.push((0..w).fold(0, |v, b| v | bit(k * w + b) << b));
                }
            }
        }
        assert!(bytes.is_empty(), "{} bytes left over", bytes.len());
        out.truncate(count);
        out
    }

    /// Runs of every length up to 40 (those of 8 or more become repeated runs, shorter ones
    /// bit-packed among their neighbours), of values of several widths, read back whole.
    #[test]
    fn the_hybrid_encoding_reads_back() {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for width in [1u8, 3, 8, 9, 17, 32] {
            let max = if width == 32 {
                u64::from(u32::MAX)
            } else {
                (1 << width) - 1
            };
            for len in [0usize, 1, 7, 8, 9, 16, 100, 1000] {
                let mut values: Vec<u32> = Vec::new();
                while values.len() < len {
                    let run = (next() % 41) as usize;
                    let v = (next() & max) as u32;
                    values.extend(std::iter::repeat_n(v, run.min(len - values.len())));
                }
                let mut out = Vec::new();
                rle_hybrid(&values, width, &mut out);
                let back = read_hybrid(&out, width, values.len());
                let want: Vec<u64> = values.iter().map(|&v| u64::from(v)).collect();
                assert_eq!(back, want, "width {width}, {len} values");
                let bytes: Vec<u8> = values.iter().map(|&v| (v & 1) as u8).collect();
                if width == 1 {
                    let mut out8 = Vec::new();
                    rle_hybrid(&bytes, 1, &mut out8);
                    assert_eq!(out8, out, "levels as bytes encode as the same values as u32");
                }
            }
        }
    }
}
