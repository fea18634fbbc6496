//! Small values packed several to a byte: `L` lanes of `8 / L` bits (1, 2 or 4), the first
//! value in the lowest bits, the last byte's unused lanes zero.
//!
//! Two places keep columns this way, and both use this module: the file's packed-dictionary
//! columns (indices into up to 16 keys) and the analysis crate's column cache (offsets from a
//! chunk's minimum). Widening goes through a table of the 256 bytes' values, so a byte of
//! packed values becomes `L` values with one fixed-size copy.

/// Append the values of `vals` packed `L` to a byte (`L` of 2, 4 or 8); each value must fit
/// `8 / L` bits (higher bits would spill into the next lane).
pub fn pack<const L: usize>(vals: impl IntoIterator<Item = u8>, out: &mut Vec<u8>) {
    let bits = 8 / L;
    let (mut byte, mut lane) = (0u8, 0);
    for v in vals {
        debug_assert!(usize::from(v) >> bits == 0, "{v} does not fit {bits} bits");
        byte |= v << (lane * bits);
        lane += 1;
        if lane == L {
            out.push(byte);
            (byte, lane) = (0, 0);
        }
    }
    if lane > 0 {
        out.push(byte);
    }
}

/// The `L` values each of the 256 bytes unpacks to, lane `j` of byte `b` being
/// `value(lane j's bits of b)`.
pub fn table<T: Copy + Default, const L: usize>(value: impl Fn(u8) -> T) -> [[T; L]; 256] {
    let bits = 8 / L;
    let mask = (1usize << bits) - 1;
    let mut table = [[T::default(); L]; 256];
    for (b, vals) in table.iter_mut().enumerate() {
        for (j, v) in vals.iter_mut().enumerate() {
            *v = value(((b >> (j * bits)) & mask) as u8);
        }
    }
    table
}

/// Replace `out` with the first `n` values packed in `packed`, through `table` (from
/// [`table`]). Values past the end of a short `packed` read as lane value 0.
#[inline]
pub fn unpack<T: Copy, const L: usize>(packed: &[u8], n: usize, table: &[[T; L]; 256], out: &mut Vec<T>) {
    let zero = table[0][0];
    out.clear();
    out.resize(n, zero);
    let mut rows = out.chunks_exact_mut(L);
    for (dst, &b) in rows.by_ref().zip(packed) {
        dst.copy_from_slice(&table[usize::from(b)]);
    }
    let rest = rows.into_remainder();
    if let Some(&last) = packed.get(n / L) {
        rest.copy_from_slice(&table[usize::from(last)][..rest.len()]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip<const L: usize>(vals: &[u8]) {
        let mut packed = Vec::new();
        pack::<L>(vals.iter().copied(), &mut packed);
        assert_eq!(packed.len(), vals.len().div_ceil(L));
        let t = table::<u64, L>(|v| 1000 + u64::from(v));
        let mut out = vec![7; 3];
        unpack(&packed, vals.len(), &t, &mut out);
        let want: Vec<u64> = vals.iter().map(|&v| 1000 + u64::from(v)).collect();
        assert_eq!(out, want, "L = {L}");
    }

    #[test]
    fn every_width_round_trips_at_every_length() {
        for n in 0..40 {
            let vals: Vec<u8> = (0..n).map(|i| (i * 7 % 251) as u8).collect();
            round_trip::<8>(&vals.iter().map(|v| v & 1).collect::<Vec<_>>());
            round_trip::<4>(&vals.iter().map(|v| v & 3).collect::<Vec<_>>());
            round_trip::<2>(&vals.iter().map(|v| v & 15).collect::<Vec<_>>());
        }
    }

    #[test]
    fn the_first_value_is_in_the_lowest_bits_and_padding_is_zero() {
        let mut packed = Vec::new();
        pack::<4>([1, 2, 3, 0, 3], &mut packed);
        assert_eq!(packed, [0b00_11_10_01, 0b11]);
    }

    #[test]
    fn a_short_input_reads_as_lane_value_zero() {
        let t = table::<u32, 2>(|v| 10 + u32::from(v));
        let mut out = Vec::new();
        unpack(&[0x21], 5, &t, &mut out);
        assert_eq!(out, [11, 12, 10, 10, 10]);
    }
}
