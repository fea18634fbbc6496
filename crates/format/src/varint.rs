//! LEB128 varints and zigzag, the integer encoding of every column and table.

/// Append `v` as an unsigned LEB128 varint (1–10 bytes).
#[inline]
pub fn put(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Map a signed value onto an unsigned one so that small magnitudes stay small.
#[inline]
pub fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

/// The inverse of [`zigzag`].
#[inline]
pub(crate) fn unzigzag(v: u64) -> i64 {
    ((v >> 1) as i64) ^ -((v & 1) as i64)
}

/// Read the varint at `*pos` in `buf` and move past it; `None` (position unspecified) when
/// the input ends inside it or it overflows 64 bits.
///
/// This is the hot loop of chunk decoding: when 8 bytes are available, a varint of up to 8
/// bytes (values below 2^56, all that timestamps and latencies need) is decoded from one
/// little-endian word without a branch per byte.
#[inline(always)]
pub fn read(buf: &[u8], pos: &mut usize) -> Option<u64> {
    let p = *pos;
    if let Some(&b) = buf.get(p) {
        if b < 0x80 {
            *pos = p + 1;
            return Some(u64::from(b));
        }
    }
    if let Some(w) = buf.get(p..p.wrapping_add(8)) {
        let w = u64::from_le_bytes(w.try_into().ok()?);
        // The high bit clear marks a varint's last byte.
        let stops = !w & 0x8080_8080_8080_8080;
        if stops != 0 {
            let len = (stops.trailing_zeros() / 8 + 1) as usize;
            let mut x = (w & (u64::MAX >> (64 - 8 * len))) & 0x7f7f_7f7f_7f7f_7f7f;
            // Squeeze the 7-bit groups together: pairs, then quads, then the two halves.
            x = ((x & 0x7f00_7f00_7f00_7f00) >> 1) | (x & 0x007f_007f_007f_007f);
            x = ((x & 0x3fff_0000_3fff_0000) >> 2) | (x & 0x0000_3fff_0000_3fff);
            x = ((x & 0x0fff_ffff_0000_0000) >> 4) | (x & 0x0000_0000_0fff_ffff);
            *pos = p + len;
            return Some(x);
        }
    }
    read_slow(buf, pos)
}

#[cold]
#[inline(never)]
fn read_slow(buf: &[u8], pos: &mut usize) -> Option<u64> {
    let mut c = Cursor { buf, pos: *pos };
    let v = c.varint_bytewise()?;
    *pos = c.pos;
    Some(v)
}

/// A cursor over a byte slice that decodes varints and fails (never panics) on a short
/// or overlong input.
#[derive(Debug)]
pub struct Cursor<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    /// A cursor at the start of `buf`.
    pub fn new(buf: &'a [u8]) -> Self {
        Cursor { buf, pos: 0 }
    }

    /// Bytes left after the cursor.
    pub(crate) fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    /// Whether every byte has been read.
    pub(crate) fn is_empty(&self) -> bool {
        self.remaining() == 0
    }

    /// Next unsigned varint, or `None` when the input ends inside it or it overflows 64 bits.
    #[inline]
    pub fn varint(&mut self) -> Option<u64> {
        read(self.buf, &mut self.pos)
    }

    fn varint_bytewise(&mut self) -> Option<u64> {
        let first = *self.buf.get(self.pos)?;
        if first < 0x80 {
            self.pos += 1;
            return Some(u64::from(first));
        }
        let mut v = 0u64;
        let mut shift = 0u32;
        loop {
            let b = *self.buf.get(self.pos)?;
            self.pos += 1;
            if shift == 63 && b > 1 {
                return None;
            }
            v |= u64::from(b & 0x7f) << shift;
            if b < 0x80 {
                return Some(v);
            }
            shift += 7;
            if shift > 63 {
                return None;
            }
        }
    }

    /// Next zigzag-mapped varint, as the signed value.
    pub(crate) fn signed(&mut self) -> Option<i64> {
        self.varint().map(unzigzag)
    }

    /// Next byte, or `None` at the end.
    pub fn u8(&mut self) -> Option<u8> {
        let b = *self.buf.get(self.pos)?;
        self.pos += 1;
        Some(b)
    }

    /// Next `n` bytes, checked against what is left before anything is allocated.
    pub fn bytes(&mut self, n: u64) -> Option<&'a [u8]> {
        let n = usize::try_from(n).ok()?;
        if n > self.remaining() {
            return None;
        }
        let s = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Some(s)
    }

    /// A varint length followed by that many bytes.
    pub fn len_bytes(&mut self) -> Option<&'a [u8]> {
        let n = self.varint()?;
        self.bytes(n)
    }

    /// Every byte left, leaving the cursor at the end.
    pub(crate) fn rest(&mut self) -> &'a [u8] {
        let s = &self.buf[self.pos..];
        self.pos = self.buf.len();
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn varint_roundtrip(v: u64) {
            let mut out = Vec::new();
            put(&mut out, v);
            let mut c = Cursor::new(&out);
            prop_assert_eq!(c.varint(), Some(v));
            prop_assert!(c.is_empty());
        }

        #[test]
        fn fast_read_matches_bytewise(vals in prop::collection::vec(any::<u64>().prop_map(|v| v >> (v % 64)), 1..20)) {
            let mut out = Vec::new();
            vals.iter().for_each(|&v| put(&mut out, v));
            let mut pos = 0;
            for &v in &vals {
                prop_assert_eq!(read(&out, &mut pos), Some(v));
            }
            prop_assert_eq!(pos, out.len());
        }

        #[test]
        fn fast_read_never_panics(bytes in prop::collection::vec(any::<u8>(), 0..24)) {
            let mut pos = 0;
            let mut c = Cursor::new(&bytes);
            while pos < bytes.len() {
                let fast = read(&bytes, &mut pos);
                prop_assert_eq!(fast, c.varint_bytewise());
                if fast.is_none() { break; }
                prop_assert_eq!(pos, c.pos);
            }
        }

        #[test]
        fn zigzag_roundtrip(v: i64) {
            prop_assert_eq!(unzigzag(zigzag(v)), v);
        }
    }

    #[test]
    fn short_and_overlong_varints_fail() {
        assert_eq!(Cursor::new(&[0x80]).varint(), None);
        assert_eq!(Cursor::new(&[0xff; 11]).varint(), None);
        assert_eq!(
            Cursor::new(&[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02]).varint(),
            None
        );
        assert_eq!(
            Cursor::new(&[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01]).varint(),
            Some(u64::MAX)
        );
    }
}
