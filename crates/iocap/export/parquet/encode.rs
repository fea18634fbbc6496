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
pub fn rle_hybrid(values: &[u32], width: u8, out: &mut Vec<u8>) {
    let value_bytes = usize::from(width).div_ceil(8);
    // Values waiting to be bit-packed: `values[lit..i]`, whole groups of 8.
    let mut lit = 0;
    let mut i = 0;
    while i + 8 <= values.len() {
        let group = &values[i..i + 8];
        let v = group[0];
        if group.iter().any(|&x| x != v) {
            i += 8;
            continue;
        }
        let mut j = i + 8;
        while j < values.len() && values[j] == v {
            j += 1;
        }
        bit_pack(&values[lit..i], width, out);
        uleb(out, ((j - i) as u64) << 1);
        out.extend_from_slice(&v.to_le_bytes()[..value_bytes]);
        lit = j;
        i = j;
    }
    bit_pack(&values[lit..], width, out);
}

/// A bit-packed run of `values` (a multiple of 8 of them, but for the last run).
fn bit_pack(values: &[u32], width: u8, out: &mut Vec<u8>) {
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
        let mut last = [0; 8];
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
pub fn def_levels(defs: &[u32], out: &mut Vec<u8>) {
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
