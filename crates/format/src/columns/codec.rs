//! The column codecs: how one column's values become bytes and back, in each encoding of
//! [`super::enc`] (varints, deltas, sparse, dictionaries and their bit-packed form, thread gaps
//! for timestamps, VBYTE). `columns.rs` holds the model they serve (which columns, their
//! limits, the chunk body's layout) and picks a codec per column.

use super::{enc, BodyError, ColValue, Columns, MIN_COMPRESS};
use crate::bits;
use crate::model::Class;
use crate::pack::{self, Packer, Unpacker};
use crate::varint;

/// Bytes of the LEB128 varint of `v`.
#[inline]
pub(super) fn varint_len(v: u64) -> usize {
    // 7 bits per byte; 0 takes one byte.
    (64 - (v | 1).leading_zeros()).div_ceil(7) as usize
}

/// Encode one column of `n` values (`get(i)` is value `i`'s raw u64) into `out` in the
/// encoding that is smallest for it. Returns the encoding, or `None` (writing nothing) when
/// every value is zero: a missing column reads as zeros.
///
/// Sizes are estimated on a sample (16 runs of 256 consecutive values spread over the chunk):
/// sizing every encoding on every value cost more than compressing. The sample only picks the
/// encoding; what is written is always exact.
pub(super) fn encode_column(
    get: impl Fn(usize) -> u64 + Copy,
    n: usize,
    delta: bool,
    vbyte: bool,
    out: &mut Vec<u8>,
) -> Option<u8> {
    if n == 0 {
        return None;
    }
    let first = get(0);
    if (1..n).all(|i| get(i) == first) {
        if first == 0 {
            return None;
        }
        varint::put(out, first);
        return Some(enc::CONST);
    }
    const RUNS: usize = 16;
    const RUN: usize = 256;
    let (mut varint_bytes, mut delta_bytes, mut sparse_bytes, mut sampled) = (0usize, 0usize, 0usize, 0usize);
    let mut byte_lens = [0usize; 9];
    let runs = if n <= RUNS * RUN { 1 } else { RUNS };
    for r in 0..runs {
        let range = if runs == 1 {
            0..n
        } else {
            (r * (n - RUN) / (RUNS - 1))..(r * (n - RUN) / (RUNS - 1) + RUN)
        };
        sampled += range.len();
        let mut prev = if range.start > 0 { get(range.start - 1) } else { 0 };
        let mut last_nz = range.start;
        for i in range {
            // Branch-free: columns mix zeros and values unpredictably.
            let raw = get(i);
            let len = varint_len(raw);
            varint_bytes += len;
            byte_lens[byte_len(raw)] += 1;
            if delta {
                delta_bytes += varint_len(varint::zigzag(raw.wrapping_sub(prev) as i64));
                prev = raw;
            }
            let nz = usize::from(raw != 0);
            sparse_bytes += nz * (len + varint_len((i - last_nz) as u64));
            last_nz = nz * (i + 1) + (1 - nz) * last_nz;
        }
    }
    let mut best = (varint_bytes, enc::VARINT);
    if delta && delta_bytes < best.0 {
        best = (delta_bytes, enc::DELTA);
    }
    if sparse_bytes < best.0 {
        best = (sparse_bytes, enc::SPARSE);
    }
    // VBYTE decodes about three times faster than varints: it wins ties.
    let (lens, vbyte_values) = vbyte_lens(&byte_lens);
    let vbyte_bytes = 4 + sampled.div_ceil(4) + vbyte_values;
    if vbyte && vbyte_bytes <= best.0 {
        best = (vbyte_bytes, enc::VBYTE);
    }
    // A dictionary costs one byte per value, like a column of one-byte varints, but decodes
    // with a table lookup instead of a branch per byte: it wins ties. (With more than 256
    // distinct values, building it stops at the 257th, early in the chunk.)
    {
        let mut dict = Dict::default();
        let start = out.len();
        if dict.encode(get, n, out) {
            // Exact size now: keep it unless the best other encoding is estimated smaller by
            // more than the dictionary's own keys and a little slack.
            let best_est = (best.0 as u128) * (n as u128) / (sampled as u128);
            if ((out.len() - start) as u128) <= best_est + best_est / 64 + 64 {
                if dict.keys.len() <= 16 {
                    pack_dict(out, start, n, dict.keys.len());
                    return Some(enc::PACKED_DICT);
                }
                return Some(enc::DICT);
            }
        }
        out.truncate(start);
    }
    out.reserve(best.0 * (n / sampled.max(1)) + 16);
    match best.1 {
        enc::VARINT => (0..n).for_each(|i| varint::put(out, get(i))),
        enc::VBYTE => put_vbyte(get, n, lens, out),
        enc::DELTA => {
            let mut prev = 0u64;
            for i in 0..n {
                let raw = get(i);
                varint::put(out, varint::zigzag(raw.wrapping_sub(prev) as i64));
                prev = raw;
            }
        }
        _ => {
            let nz = (0..n).filter(|&i| get(i) != 0).count();
            varint::put(out, nz as u64);
            let mut next = 0usize;
            for i in (0..n).filter(|&i| get(i) != 0) {
                varint::put(out, (i - next) as u64);
                next = i + 1;
            }
            (0..n).map(get).filter(|&v| v != 0).for_each(|v| varint::put(out, v));
        }
    }
    Some(best.1)
}

/// Slots of the per-thread cache of [`enc::GAP`]: a thread's slot is its tid modulo this.
pub(super) const GAP_SLOTS: usize = 256;

/// The [`enc::REF`] codes of a `file` column into `codes` (FORMAT.md): 0 for no file, else 1 +
/// the zigzag of the file's difference from the same thread's previous file, if that thread
/// still holds its slot of a 256-entry cache, or else from the previous file of any event.
/// A thread's calls mostly name the file its previous call named, or one it just opened (its
/// id the next one), where raw ids grow and alternate between threads (tar | cat: tar's files
/// and cat's pipe).
pub(super) fn ref_codes(file: &[u32], tid: &[u32], codes: &mut Vec<u64>) {
    codes.clear();
    let mut cache = [(u64::MAX, 0u64); GAP_SLOTS];
    let mut prev = 0u64;
    for (i, &f) in file.iter().enumerate() {
        let v = u64::from(f);
        if v == 0 {
            codes.push(0);
            continue;
        }
        let t = tid.get(i).copied().unwrap_or(0);
        let slot = &mut cache[t as usize % GAP_SLOTS];
        let base = if slot.0 == u64::from(t) { slot.1 } else { prev };
        // Both under 2^32: the zigzag is under 2^33, one more cannot wrap.
        codes.push(varint::zigzag(v.wrapping_sub(base) as i64) + 1);
        *slot = (u64::from(t), v);
        prev = v;
    }
}

/// Decode an [`enc::REF`] `file` column of `n` values into `file`, rebuilding each file from
/// its code and the `tid` column, as [`ref_codes`] made them.
pub(super) fn decode_ref(data: &[u8], n: usize, file: &mut Vec<u32>, tid: &[u32]) -> Result<(), BodyError> {
    if n > data.len() {
        return Err(BodyError("column shorter than its event count"));
    }
    file.resize(n, 0);
    let mut cache = [(u64::MAX, 0u64); GAP_SLOTS];
    let mut prev = 0u64;
    let mut i = 0usize;
    let rebuild = |code: u64| {
        let at = i;
        i += 1;
        if code == 0 {
            return 0;
        }
        let t = tid.get(at).copied().unwrap_or(0);
        let slot = &mut cache[t as usize % GAP_SLOTS];
        let base = if slot.0 == u64::from(t) { slot.1 } else { prev };
        // Modulo 2^64, then cut to 32 bits: a hostile code is a wrong file id, never a panic.
        let v = base.wrapping_add(varint::unzigzag(code - 1) as u64);
        *slot = (u64::from(t), v);
        prev = v;
        v as u32
    };
    match read_varints(data, file, rebuild) {
        Some(pos) if pos == data.len() => Ok(()),
        Some(_) => Err(BodyError("column longer than its event count")),
        None => Err(BodyError("column cut short")),
    }
}

/// The `ts` column as [`enc::GAP_VBYTE`] (1.1 writers: [`enc::GAP`]): each event's start relative to a base that the reader
/// knows from the events before it (FORMAT.md): for a syscall, when the same thread's previous
/// syscall ended, if that thread still holds its slot of a 256-entry cache; otherwise (and
/// for block requests) the previous event's start. A thread's syscalls follow each other
/// after a short time in user space, so the gap is small where the plain delta to the
/// previous start also carries the previous event's latency (real captures: tar 1.99 → 1.24
/// bytes/event, fio O_DIRECT 1.85 → 1.57, after zstd). `None` when every ts is 0. The gaps
/// are left in `gaps` (empty when `ts` was not gap-encoded), for [`enc::GAP_PLANES`].
pub(super) fn encode_gap(c: &Columns, gaps: &mut Vec<u64>, out: &mut Vec<u8>) -> Option<u8> {
    let n = c.len;
    if !gap_values(c, gaps) {
        return encode_column(|i: usize| c.ts.get(i).copied().unwrap_or(0), n, true, false, out);
    }
    // Measured on real captures, against GAP's varints: as small or smaller after zstd (tar
    // 5.69 -> 5.67 bytes/event, fio 5.92 -> 5.91), and faster to decode.
    let mut byte_lens = [0usize; 9];
    gaps.iter().for_each(|&g| byte_lens[byte_len(g)] += 1);
    let (lens, _) = vbyte_lens(&byte_lens);
    put_vbyte(|i| gaps[i], n, lens, out);
    Some(enc::GAP_VBYTE)
}

/// The zigzagged gaps of [`encode_gap`] into `gaps`; false (`gaps` empty) when the `ts` column
/// is better not gap-encoded: one event, or every `ts` the same.
pub(super) fn gap_values(c: &Columns, gaps: &mut Vec<u64>) -> bool {
    let n = c.len;
    let ts = |i: usize| c.ts.get(i).copied().unwrap_or(0);
    gaps.clear();
    let first = ts(0);
    if n <= 1 || (1..n).all(|i| ts(i) == first) {
        return false;
    }
    let mut cache = [(u64::MAX, 0u64); GAP_SLOTS];
    let mut prev = 0u64;
    for i in 0..n {
        let v = ts(i);
        let base = if c.class.get(i).copied().unwrap_or(0) == Class::Block as u8 {
            prev
        } else {
            let tid = c.tid.get(i).copied().unwrap_or(0);
            let slot = &mut cache[tid as usize % GAP_SLOTS];
            let base = if slot.0 == u64::from(tid) { slot.1 } else { prev };
            *slot = (u64::from(tid), v.wrapping_add(c.latency.get(i).copied().unwrap_or(0)));
            base
        };
        gaps.push(varint::zigzag(v.wrapping_sub(base) as i64));
        prev = v;
    }
    true
}

/// Bytes of `v` in little-endian order without its high zero bytes (at least one).
#[inline]
pub(super) fn byte_len(v: u64) -> usize {
    ((64 - (v | 1).leading_zeros()) as usize).div_ceil(8)
}

/// The four [`enc::VBYTE`] byte lengths (ascending, the last 8 so that every value fits) that
/// store values with `hist[l]` of them `l` bytes long in the fewest bytes; and those bytes.
pub(super) fn vbyte_lens(hist: &[usize; 9]) -> ([u8; 4], usize) {
    let mut best = ([1, 2, 3, 8], usize::MAX);
    for a in 1..=5u8 {
        for b in a + 1..=6 {
            for c in b + 1..=7 {
                let lens = [a, b, c, 8];
                let cost = (1..=8usize)
                    .map(|l| hist[l] * usize::from(lens.iter().copied().find(|&x| usize::from(x) >= l).unwrap_or(8)))
                    .sum();
                if cost < best.1 {
                    best = (lens, cost);
                }
            }
        }
    }
    best
}

/// Append the [`enc::VBYTE`] encoding of the `n` values (`lens` from [`vbyte_lens`]) to `out`.
pub(super) fn put_vbyte(get: impl Fn(usize) -> u64, n: usize, lens: [u8; 4], out: &mut Vec<u8>) {
    // The code of the shortest length that holds a value of each byte length.
    let mut code_of = [3u8; 9];
    for (l, code) in code_of.iter_mut().enumerate() {
        *code = lens.iter().position(|&x| usize::from(x) >= l).unwrap_or(3) as u8;
    }
    out.extend_from_slice(&lens);
    let ctrl = out.len();
    out.resize(ctrl + n.div_ceil(4), 0);
    for i in 0..n {
        let v = get(i);
        let code = code_of[byte_len(v)];
        out[ctrl + i / 4] |= code << (2 * (i % 4));
        out.extend_from_slice(&v.to_le_bytes()[..usize::from(lens[usize::from(code)])]);
    }
}

/// Decode an [`enc::VBYTE`] column of `n` values into `out`: `lens:[u8; 4]` (each 1..=8), then
/// ⌈n/4⌉ control bytes (value `i`'s 2-bit code in bits 2·(i mod 4) of byte i/4, bits past the
/// last value zero), then each value in `lens[code]` little-endian bytes, back to back.
///
/// Why this layout: where a varint's length is found by scanning its bytes, so that each
/// value's position waits on the load and decode of the one before, here the next position
/// is one add of a table entry away, and the loads are independent; and bytes of 8 bits (no
/// continuation bits) leave zstd less to decompress. All lengths are summed and checked
/// against the bytes before any value is read.
pub(super) fn read_vbyte<T: Default + Copy>(
    data: &[u8],
    n: usize,
    out: &mut Vec<T>,
    mut map: impl FnMut(u64) -> T,
) -> Result<(), BodyError> {
    let cut = || BodyError("vbyte column cut short");
    let lens: [u8; 4] = data.get(..4).and_then(|l| l.try_into().ok()).ok_or_else(cut)?;
    if lens.iter().any(|&l| !(1..=8).contains(&l)) {
        return Err(BodyError("vbyte length out of range"));
    }
    let full = n / 4;
    let ctrl = data.get(4..4 + n.div_ceil(4)).ok_or_else(cut)?;
    let vals = &data[4 + ctrl.len()..];
    // The bytes of each control byte's four values.
    let mut quad = [0usize; 256];
    for (b, q) in quad.iter_mut().enumerate() {
        *q = (0..4).map(|j| usize::from(lens[(b >> (2 * j)) & 3])).sum();
    }
    let mut total: usize = ctrl[..full].iter().map(|&b| quad[usize::from(b)]).sum();
    let rest = n % 4;
    if let Some(&last) = ctrl.get(full) {
        if usize::from(last) >> (2 * rest) != 0 {
            return Err(BodyError("bits set past the last value"));
        }
        total += (0..rest)
            .map(|j| usize::from(lens[usize::from(last >> (2 * j)) & 3]))
            .sum::<usize>();
    }
    if total != vals.len() {
        return Err(BodyError("vbyte lengths do not match the column"));
    }
    let masks = lens.map(|l| u64::MAX >> (64 - 8 * u32::from(l)));
    let lens = lens.map(usize::from);
    out.resize(n, T::default());
    let mut pos = 0usize;
    let mut done = 0usize;
    // While 32 bytes are left, a control byte's four values (at most 32 bytes) are each one
    // 8-byte load and a mask.
    for (dst, &b) in out.chunks_exact_mut(4).zip(ctrl) {
        if pos + 32 > vals.len() {
            break;
        }
        let b = usize::from(b);
        for (j, d) in dst.iter_mut().enumerate() {
            let c = (b >> (2 * j)) & 3;
            let mut w = [0u8; 8];
            w.copy_from_slice(&vals[pos..pos + 8]);
            *d = map(u64::from_le_bytes(w) & masks[c]);
            pos += lens[c];
        }
        done += 4;
    }
    // The last few values, byte by byte (in range: the lengths sum to `vals.len()`).
    for (i, d) in out.iter_mut().enumerate().skip(done) {
        let c = usize::from(ctrl[i / 4] >> (2 * (i % 4))) & 3;
        let mut w = [0u8; 8];
        w[..lens[c]].copy_from_slice(&vals[pos..pos + lens[c]]);
        *d = map(u64::from_le_bytes(w));
        pos += lens[c];
    }
    Ok(())
}

/// The decoded columns a gap-encoded `ts` is rebuilt from: `class`, `tid` and `latency`.
pub(super) type GapBases<'a> = (&'a [u8], &'a [u32], &'a [u64]);

/// Decode a [`enc::GAP`], [`enc::GAP_VBYTE`] or [`enc::GAP_PLANES`] `ts` column of `n` values
/// into `ts`, rebuilding each start from its gap as it is read (one pass, no second walk over
/// the column). `bases` hold the chunk's `n` decoded values of each column.
pub(super) fn decode_gap_ts(
    data: &[u8],
    encoding: u8,
    n: usize,
    unpacker: &mut Option<Unpacker>,
    ts: &mut Vec<u64>,
    (class, tid, latency): GapBases<'_>,
) -> Result<(), BodyError> {
    let mut cache = [(u64::MAX, 0u64); GAP_SLOTS];
    let mut prev = 0u64;
    let mut i = 0usize;
    // Called once per value, in order (`get`: the slices hold `n` values, this keeps a
    // miscount from ever being a panic).
    let rebuild = |z: u64| {
        let d = varint::unzigzag(z) as u64;
        let v = if class.get(i).copied().unwrap_or(0) == Class::Block as u8 {
            prev.wrapping_add(d)
        } else {
            let tid = tid.get(i).copied().unwrap_or(0);
            let slot = &mut cache[tid as usize % GAP_SLOTS];
            let base = if slot.0 == u64::from(tid) { slot.1 } else { prev };
            let v = base.wrapping_add(d);
            *slot = (u64::from(tid), v.wrapping_add(latency.get(i).copied().unwrap_or(0)));
            v
        };
        prev = v;
        i += 1;
        v
    };
    match encoding {
        enc::GAP_VBYTE => read_vbyte(data, n, ts, rebuild),
        enc::GAP_PLANES => decode_planes(data, n, unpacker, ts, rebuild),
        enc::GAP => {
            if n > data.len() {
                return Err(BodyError("column shorter than its event count"));
            }
            ts.resize(n, 0);
            match read_varints(data, ts, rebuild) {
                Some(pos) if pos == data.len() => Ok(()),
                Some(_) => Err(BodyError("column longer than its event count")),
                None => Err(BodyError("column cut short")),
            }
        }
        _ => Err(BodyError("unknown column encoding")),
    }
}

/// The decompressed bytes of a column stored with `codec` (`stored` itself when raw).
pub(super) fn unpack_column<'a>(
    codec: u8,
    raw_len: u64,
    stored: &'a [u8],
    unpacker: &mut Option<Unpacker>,
    scratch: &'a mut Vec<u8>,
) -> Result<&'a [u8], BodyError> {
    match codec {
        pack::RAW if raw_len == stored.len() as u64 => Ok(stored),
        pack::RAW => Err(BodyError("stored size does not match")),
        _ => {
            let u = match unpacker {
                Some(u) => u,
                None => unpacker.insert(Unpacker::new().map_err(|_| BodyError("zstd context"))?),
            };
            u.unpack_parts(codec, raw_len, stored, scratch).map_err(BodyError)?;
            Ok(&scratch[..])
        }
    }
}

/// Index bits per event of a [`enc::PACKED_DICT`] column of `k` (≤ 16) values.
pub(super) fn packed_bits(k: usize) -> usize {
    match k {
        0..=2 => 1,
        3..=4 => 2,
        _ => 4,
    }
}

/// Turn the [`enc::DICT`] encoding of `n` values with `k` ≤ 16 keys at `out[start..]` into
/// [`enc::PACKED_DICT`]: the same keys, then the indices packed `bits` to a byte, first index
/// in the lowest bits. A quarter or half of the bytes for zstd to decode, and a table lookup
/// per byte instead of per event: the small-dictionary columns (tid, nr, fd, file) are most
/// of a chunk's columns, and were most of its decoding time.
pub(super) fn pack_dict(out: &mut Vec<u8>, start: usize, n: usize, k: usize) {
    let width = packed_bits(k);
    let idx = out.split_off(out.len() - n);
    out.insert(start, width as u8);
    match width {
        1 => bits::pack::<8>(idx, out),
        2 => bits::pack::<4>(idx, out),
        _ => bits::pack::<2>(idx, out),
    }
}

/// Decode the indices of a [`enc::PACKED_DICT`] column (everything after its keys) into `n`
/// values of `dict` (its first `k` entries are the keys).
pub(super) fn unpack_dict<T: ColValue>(
    packed: &[u8],
    bits: usize,
    k: usize,
    dict: &[T; 16],
    n: usize,
    out: &mut Vec<T>,
) -> Result<(), BodyError> {
    match bits {
        1 => unpack_lanes::<T, 8>(packed, k, dict, n, out),
        2 => unpack_lanes::<T, 4>(packed, k, dict, n, out),
        _ => unpack_lanes::<T, 2>(packed, k, dict, n, out),
    }
}

/// [`unpack_dict`] with `L` indices per byte: one fixed-size copy from a table per byte.
pub(super) fn unpack_lanes<T: ColValue, const L: usize>(
    packed: &[u8],
    k: usize,
    dict: &[T; 16],
    n: usize,
    out: &mut Vec<T>,
) -> Result<(), BodyError> {
    if packed.len() != n.div_ceil(L) {
        return Err(BodyError("index count does not match"));
    }
    // Every byte's values, and whether all its indices are below `k`.
    let table = bits::table::<T, L>(|i| dict[usize::from(i)]);
    let valid = bits::table::<bool, L>(|i| usize::from(i) < k).map(|lanes| lanes == [true; L]);
    if !packed.iter().all(|&b| valid[usize::from(b)]) {
        return Err(BodyError("index past the dictionary"));
    }
    if let Some(&last) = packed.get(n / L) {
        // Bits past the last index are zero, so a column has one form.
        if usize::from(last) >> (n % L * (8 / L)) != 0 {
            return Err(BodyError("bits set past the last index"));
        }
    }
    bits::unpack(packed, n, &table, out);
    Ok(())
}

/// Up to 256 distinct values of a column, found with a small open-addressing table.
pub(super) struct Dict {
    keys: Vec<u64>,
    /// Slot → index in `keys` + 1 (0 = empty).
    slots: [u16; 1024],
    slot_keys: [u64; 1024],
}

impl Default for Dict {
    fn default() -> Self {
        Dict {
            keys: Vec::new(),
            slots: [0; 1024],
            slot_keys: [0; 1024],
        }
    }
}

impl Dict {
    /// The index of `raw`, adding it; `None` once there would be more than 256 values.
    #[inline]
    fn index(&mut self, raw: u64) -> Option<u8> {
        let mut h = (raw.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 54) as usize;
        loop {
            match self.slots[h] {
                0 => {
                    if self.keys.len() == 256 {
                        return None;
                    }
                    self.keys.push(raw);
                    self.slots[h] = self.keys.len() as u16;
                    self.slot_keys[h] = raw;
                    return Some((self.keys.len() - 1) as u8);
                }
                i if self.slot_keys[h] == raw => return Some((i - 1) as u8),
                _ => h = (h + 1) & 1023,
            }
        }
    }

    /// Append the DICT encoding of the `n` values to `out`; false (with `out` holding
    /// garbage past its old length) when there are more than 256 distinct values.
    fn encode(&mut self, get: impl Fn(usize) -> u64, n: usize, out: &mut Vec<u8>) -> bool {
        // Indices first, into the tail of `out`; the keys go in front once they are known.
        let start = out.len();
        out.reserve(n + 8 * 257);
        // Runs of one value are common (one thread's burst): skip the hash lookup for them.
        let mut last: Option<(u64, u8)> = None;
        for i in 0..n {
            let raw = get(i);
            let idx = match last {
                Some((v, idx)) if v == raw => idx,
                _ => match self.index(raw) {
                    Some(idx) => idx,
                    None => return false,
                },
            };
            last = Some((raw, idx));
            out.push(idx);
        }
        let mut head = Vec::with_capacity(10 + self.keys.len() * 3);
        varint::put(&mut head, self.keys.len() as u64);
        for &k in &self.keys {
            varint::put(&mut head, k);
        }
        out.splice(start..start, head);
        true
    }
}

/// Fill `out` with the values of the varints at the start of `data`, each mapped by `map`;
/// returns the bytes read, or `None` if `data` ends first or a varint overflows.
///
/// The hot loop of decoding varint columns. While 8 bytes are left, it loads them as one
/// little-endian word and takes every varint that ends inside it (each below 2^56) from the
/// word's stop bits, without a branch per byte or an `Option` per value: the next load waits
/// only on the position after the word's last whole varint, not on each value in turn. A word
/// without a whole varint (nine or ten bytes, rare) and the last few values go through
/// [`varint::read`].
#[inline(always)]
pub(super) fn read_varints<T>(data: &[u8], out: &mut [T], mut map: impl FnMut(u64) -> T) -> Option<usize> {
    let mut pos = 0usize;
    let mut i = 0usize;
    // A word holds at most 8 varints: the room for them is checked once per word.
    while i + 8 <= out.len() {
        let Some(word) = data.get(pos..pos + 8) else { break };
        let w = u64::from_le_bytes(word.try_into().ok()?);
        // Eight one-byte varints, the common case of small values: each byte is its value.
        if w & 0x8080_8080_8080_8080 == 0 {
            for (b, slot) in out[i..i + 8].iter_mut().enumerate() {
                *slot = map((w >> (8 * b)) & 0x7f);
            }
            i += 8;
            pos += 8;
            continue;
        }
        // The high bit clear marks a varint's last byte.
        let mut stops = !w & 0x8080_8080_8080_8080;
        if stops == 0 {
            break;
        }
        let mut start = 0u32;
        while stops != 0 {
            let last = stops.trailing_zeros();
            // The varint's bytes: those after the previous one's end, up to this stop bit.
            let mut x = ((w & (u64::MAX >> (63 - last))) >> start) & 0x7f7f_7f7f_7f7f_7f7f;
            // Squeeze the 7-bit groups together: pairs, then quads, then the two halves.
            x = ((x & 0x7f00_7f00_7f00_7f00) >> 1) | (x & 0x007f_007f_007f_007f);
            x = ((x & 0x3fff_0000_3fff_0000) >> 2) | (x & 0x0000_3fff_0000_3fff);
            x = ((x & 0x0fff_ffff_0000_0000) >> 4) | (x & 0x0000_0000_0fff_ffff);
            out[i] = map(x);
            i += 1;
            start = last + 1;
            stops &= stops - 1;
        }
        pos += (start / 8) as usize;
    }
    for slot in &mut out[i..] {
        *slot = map(varint::read(data, &mut pos)?);
    }
    Some(pos)
}

/// Decode one column of `n` values. Every count is checked against the bytes before it sizes
/// an allocation; only CONST and SPARSE expand, and `n` is capped by [`MAX_CHUNK_EVENTS`].
pub(super) fn decode_column<T: ColValue>(
    data: &[u8],
    encoding: u8,
    n: usize,
    out: &mut Vec<T>,
) -> Result<(), BodyError> {
    let mut pos = 0usize;
    match encoding {
        enc::CONST => {
            let v = varint::read(data, &mut pos).ok_or(BodyError("constant column cut short"))?;
            out.resize(n, T::from_raw(v));
        }
        enc::VARINT | enc::DELTA | enc::GAP => {
            // Each value takes at least one byte: a count beyond the bytes is corrupt.
            if n > data.len() {
                return Err(BodyError("column shorter than its event count"));
            }
            // Into a pre-sized slice: no capacity check per value in the hot loop.
            out.resize(n, T::default());
            let cut = || BodyError("column cut short");
            if encoding == enc::DELTA {
                let mut prev = 0u64;
                pos = read_varints(data, out, |v| {
                    prev = prev.wrapping_add(varint::unzigzag(v) as u64);
                    T::from_raw(prev)
                })
                .ok_or_else(cut)?;
            } else {
                pos = read_varints(data, out, T::from_raw).ok_or_else(cut)?;
            }
        }
        enc::VBYTE | enc::GAP_VBYTE => {
            read_vbyte(data, n, out, T::from_raw)?;
            pos = data.len();
        }
        enc::SPARSE => {
            let k = varint::read(data, &mut pos).ok_or(BodyError("sparse column cut short"))?;
            // Every non-zero value takes two bytes at least (its gap and itself).
            if k > n as u64 || k > data.len() as u64 / 2 {
                return Err(BodyError("sparse column count over its bytes"));
            }
            out.resize(n, T::default());
            // Two cursors, no allocation: one over the gaps, one over the values after them.
            let short = || BodyError("sparse column cut short");
            let mut vals = pos;
            for _ in 0..k {
                varint::read(data, &mut vals).ok_or_else(short)?;
            }
            let mut next = 0u64;
            for _ in 0..k {
                let gap = varint::read(data, &mut pos).ok_or_else(short)?;
                let at = next.checked_add(gap).filter(|&p| p < n as u64);
                let at = at.ok_or(BodyError("sparse position past the event count"))?;
                out[at as usize] = T::from_raw(varint::read(data, &mut vals).ok_or_else(short)?);
                next = at + 1;
            }
            pos = vals;
        }
        enc::DICT => {
            let k = varint::read(data, &mut pos).ok_or(BodyError("dictionary cut short"))?;
            if k == 0 || k > 256 {
                return Err(BodyError("dictionary size out of range"));
            }
            let mut dict = [T::default(); 256];
            for d in dict.iter_mut().take(k as usize) {
                *d = T::from_raw(varint::read(data, &mut pos).ok_or(BodyError("dictionary cut short"))?);
            }
            let idx = data
                .get(pos..)
                .filter(|i| i.len() == n)
                .ok_or(BodyError("index count does not match"))?;
            if idx.iter().copied().max().is_some_and(|m| u64::from(m) >= k) {
                return Err(BodyError("index past the dictionary"));
            }
            out.extend(idx.iter().map(|&i| dict[usize::from(i)]));
            pos = data.len();
        }
        enc::PACKED_DICT => {
            let bits = usize::from(*data.first().ok_or(BodyError("dictionary cut short"))?);
            pos = 1;
            let k = varint::read(data, &mut pos).ok_or(BodyError("dictionary cut short"))?;
            if !matches!(bits, 1 | 2 | 4) || k == 0 || k > 1 << bits {
                return Err(BodyError("dictionary size out of range"));
            }
            let mut dict = [T::default(); 16];
            for d in dict.iter_mut().take(k as usize) {
                *d = T::from_raw(varint::read(data, &mut pos).ok_or(BodyError("dictionary cut short"))?);
            }
            unpack_dict(&data[pos..], bits, k as usize, &dict, n, out)?;
            pos = data.len();
        }
        _ => return Err(BodyError("unknown column encoding")),
    }
    if pos != data.len() {
        return Err(BodyError("column longer than its event count"));
    }
    Ok(())
}

/// Whether event `i` of class code `class` is one of the events a [`enc::MASKED`] column
/// with selector `which` holds values for: [`enc::MASK_BLOCKS`] the block requests (class code
/// 1, as FORMAT.md counts them), [`enc::MASK_OTHERS`] every other event.
#[inline]
fn kept(which: u8, class: u8) -> bool {
    (class == Class::Block as u8) == (which == enc::MASK_BLOCKS)
}

/// The values (`get(i)`) of the `n` events that `which` keeps ([`kept`]) into `out`, for a
/// [`enc::MASKED`] column; false (`out` then holds garbage) when the mask would save nothing
/// (every event or none kept) or lose something (an event it drops has a value other than 0).
pub(super) fn gather(class: &[u8], which: u8, get: impl Fn(usize) -> u64, n: usize, out: &mut Vec<u64>) -> bool {
    out.clear();
    if class.len() != n {
        return false;
    }
    for (i, &c) in class.iter().enumerate() {
        let v = get(i);
        if kept(which, c) {
            out.push(v);
        } else if v != 0 {
            return false;
        }
    }
    !out.is_empty() && out.len() < n
}

/// Decode a [`enc::MASKED`] column into `out`, one value per entry of `class` (the chunk's
/// decoded class column): `which:u8`, `inner:u8`, then the `inner` encoding of the values of
/// the events `which` keeps ([`kept`]), in order; every other event gets the raw value 0.
pub(super) fn decode_masked<T: ColValue>(
    data: &[u8],
    class: &[u8],
    unpacker: &mut Option<Unpacker>,
    out: &mut Vec<T>,
) -> Result<(), BodyError> {
    let (&which, rest) = data.split_first().ok_or(BodyError("masked column cut short"))?;
    let (&inner, values) = rest.split_first().ok_or(BodyError("masked column cut short"))?;
    if which > enc::MASK_OTHERS {
        return Err(BodyError("masked column selects unknown events"));
    }
    if inner == enc::MASKED || enc::is_gap(inner) {
        return Err(BodyError("masked column of a masked or gap encoding"));
    }
    let k = class.iter().filter(|&&c| kept(which, c)).count();
    let mut kept_values = Vec::new();
    if inner == enc::PLANES {
        decode_planes(values, k, unpacker, &mut kept_values, T::from_raw)?;
    } else {
        decode_column(values, inner, k, &mut kept_values)?;
    }
    let (mut next, zero) = (kept_values.into_iter(), T::from_raw(0));
    out.clear();
    out.extend(class.iter().map(|&c| {
        if kept(which, c) {
            next.next().unwrap_or(zero)
        } else {
            zero
        }
    }));
    Ok(())
}

/// Append `raw` to `out` as one zstd frame when that saves at least `1/share` of its bytes,
/// else as it is (also when it is under [`MIN_COMPRESS`] bytes); returns the codec, [`pack::ZSTD`]
/// or [`pack::RAW`]. What every column and plane stream is stored as.
pub(super) fn put_packed(raw: &[u8], packer: &mut Packer, share: usize, out: &mut Vec<u8>) -> std::io::Result<u8> {
    let start = out.len();
    if raw.len() >= MIN_COMPRESS {
        packer.compress(raw, out)?;
        if out.len() - start < raw.len() - raw.len() / share {
            return Ok(pack::ZSTD);
        }
        out.truncate(start);
    }
    out.extend_from_slice(raw);
    Ok(pack::RAW)
}

/// Append one stream of a [`enc::PLANES`] column: `codec:u8 stored_len:varint data`, `data`
/// being `raw` itself or one zstd frame of it when that saves a thirty-second. (Whole columns
/// need an eighth, for decoding speed; a plane of low bytes of ns times saves a tenth or so,
/// and file size is what this encoding is for: fio randrw O_DIRECT 6.03 → 5.96 bytes/event.)
fn put_stream(raw: &[u8], packer: &mut Packer, out: &mut Vec<u8>, tmp: &mut Vec<u8>) -> std::io::Result<()> {
    tmp.clear();
    let codec = put_packed(raw, packer, 32, tmp)?;
    out.push(codec);
    varint::put(out, tmp.len() as u64);
    out.extend_from_slice(tmp);
    Ok(())
}

/// Append the [`enc::PLANES`] encoding of the `n` values to `out`, each stream compressed on
/// its own: `flags:u8` (bit 0: a presence bitmap follows, and only the non-zero values are
/// stored), the bitmap stream (⌈n/8⌉ bytes, event `i` at bit `i mod 8` of byte `i/8`) if any,
/// `width:u8` (1–8), then `width` streams, stream `j` holding byte `j` of every stored value.
///
/// Why: wide values measured in ns or sectors have near-random low bytes and skewed high
/// ones. zstd finds no repeats in them, so what it saves is its Huffman coding of literals, one
/// table for all the bytes of a block; with each byte position in a stream of its own, each
/// gets a table fitting its own distribution (the high bytes cost a bit or two, not 8), and
/// the varints' continuation bits are gone. The bitmap drops the zeros of a column that only
/// one class of event has (sector, queue: block requests), where they would dilute each plane.
/// Returns how many of the values are 0.
pub(super) fn put_planes(
    get: impl Fn(usize) -> u64,
    n: usize,
    bufs: &mut PlaneBufs,
    out: &mut Vec<u8>,
) -> std::io::Result<usize> {
    let PlaneBufs {
        values,
        plane,
        tmp,
        packer,
        ..
    } = bufs;
    let packer = match packer {
        Some(p) => p,
        None => packer.insert(Packer::new(PLANES_LEVEL)?),
    };
    // One pass for the zeros and the width, one to lay the bytes out plane by plane.
    let (mut zeros, mut width) = (0usize, 1usize);
    for i in 0..n {
        let v = get(i);
        zeros += usize::from(v == 0);
        width = width.max(byte_len(v));
    }
    let sparse = zeros > n / 8;
    let k = if sparse { n - zeros } else { n };
    out.push(u8::from(sparse));
    values.clear();
    values.resize(k * width, 0);
    let mut bitmap = std::mem::take(plane);
    bitmap.clear();
    bitmap.resize(if sparse { n.div_ceil(8) } else { 0 }, 0);
    let mut at = 0usize;
    for i in 0..n {
        let v = get(i);
        if sparse {
            if v == 0 {
                continue;
            }
            bitmap[i / 8] |= 1 << (i % 8);
        }
        let bytes = v.to_le_bytes();
        for (j, &b) in bytes[..width].iter().enumerate() {
            values[j * k + at] = b;
        }
        at += 1;
    }
    if sparse {
        put_stream(&bitmap, packer, out, tmp)?;
    }
    *plane = bitmap;
    out.push(width as u8);
    for j in 0..width {
        put_stream(&values[j * k..(j + 1) * k], packer, out, tmp)?;
    }
    Ok(zeros)
}

/// The zstd level of the planes: their low bytes are near-random, where the match search of
/// higher levels finds little and costs time (measured: the same sizes within 0.3 %).
const PLANES_LEVEL: i32 = 1;

/// Scratch space and compressor of [`put_planes`], kept across chunks.
#[derive(Default)]
pub(crate) struct PlaneBufs {
    /// The planes, back to back.
    values: Vec<u8>,
    plane: Vec<u8>,
    tmp: Vec<u8>,
    /// A whole column's planes, for the caller to compare and copy.
    pub(super) out: Vec<u8>,
    packer: Option<Packer>,
}

impl std::fmt::Debug for PlaneBufs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PlaneBufs")
    }
}

/// Read one stream of a [`enc::PLANES`] column at `data[*pos..]` that must hold `len` bytes
/// once decompressed; returns them (in `buf` when they were compressed).
fn read_stream<'a>(
    data: &'a [u8],
    pos: &mut usize,
    len: usize,
    unpacker: &mut Option<Unpacker>,
    buf: &'a mut Vec<u8>,
) -> Result<&'a [u8], BodyError> {
    let cut = || BodyError("planes column cut short");
    let codec = *data.get(*pos).ok_or_else(cut)?;
    *pos += 1;
    let stored = varint::read(data, pos).ok_or_else(cut)?;
    let bytes = usize::try_from(stored)
        .ok()
        .and_then(|s| data.get(*pos..pos.checked_add(s)?))
        .ok_or_else(cut)?;
    *pos += bytes.len();
    // Exactly `len` bytes, or an error (a raw stream of another size, zstd that does not
    // decompress to `len`).
    unpack_column(codec, len as u64, bytes, unpacker, buf)
}

/// Decode a [`enc::PLANES`] (or [`enc::GAP_PLANES`]) column of `n` values into `out`, each
/// value mapped by `map` in order. Every stream's size follows from `n` (and the bitmap),
/// so nothing is allocated beyond `n` values and a stream's bytes.
pub(super) fn decode_planes<T: Default + Copy>(
    data: &[u8],
    n: usize,
    unpacker: &mut Option<Unpacker>,
    out: &mut Vec<T>,
    mut map: impl FnMut(u64) -> T,
) -> Result<(), BodyError> {
    let cut = || BodyError("planes column cut short");
    let flags = *data.first().ok_or_else(cut)?;
    if flags > 1 {
        return Err(BodyError("planes flags unknown"));
    }
    let mut pos = 1;
    let mut buf = Vec::new();
    let bitmap = if flags & 1 != 0 {
        let b = read_stream(data, &mut pos, n.div_ceil(8), unpacker, &mut buf)?.to_vec();
        if b.last()
            .is_some_and(|&last| !n.is_multiple_of(8) && last >> (n % 8) != 0)
        {
            return Err(BodyError("bits set past the last event"));
        }
        Some(b)
    } else {
        None
    };
    let k = bitmap
        .as_ref()
        .map_or(n, |b| b.iter().map(|x| x.count_ones() as usize).sum());
    let width = usize::from(*data.get(pos).ok_or_else(cut)?);
    pos += 1;
    if !(1..=8).contains(&width) {
        return Err(BodyError("planes width out of range"));
    }
    let mut values = vec![0u64; k];
    for j in 0..width {
        let plane = read_stream(data, &mut pos, k, unpacker, &mut buf)?;
        for (v, &b) in values.iter_mut().zip(plane) {
            *v |= u64::from(b) << (8 * j);
        }
    }
    if pos != data.len() {
        return Err(BodyError("column longer than its event count"));
    }
    out.clear();
    out.reserve(n);
    match bitmap {
        None => out.extend(values.into_iter().map(map)),
        Some(b) => {
            let mut next = values.into_iter();
            for i in 0..n {
                let v = if b[i / 8] >> (i % 8) & 1 != 0 {
                    next.next().unwrap_or(0)
                } else {
                    0
                };
                out.push(map(v));
            }
        }
    }
    Ok(())
}
