//! A bounded cache of decoded columns, so the second scan of a capture skips decompression
//! and varint decoding ([`ColumnCache`]).
//!
//! Entries are one column of one chunk, stored narrow: every value minus the column's minimum
//! in the smallest of 0 (constant), 1, 2, 4, 8, 16, 24, 32 or 64 bits that holds the range
//! (signed columns zigzag-mapped first, as the file does). A wide column may take a narrower
//! width than its range when the few values that do not fit are cheaper kept aside as patches
//! (row, value): a chunk's latencies are mostly under 16 ms (24 bits) with a rare sleep of
//! seconds. A chunk's event classes, syscall numbers and processes take 1 to 8 bits, so the
//! viewer's usual columns cost 3 to 5 bytes per event instead of 20 or more, and widening them
//! back is a shift, a mask and an add, far cheaper than decoding.
//!
//! The cache holds at most its byte budget. It is scan-resistant rather than LRU: a scan never
//! evicts a column it reads of a chunk it covers, so scanning a capture larger than the budget
//! keeps the chunks that fitted first (and reuses them next time) instead of evicting each chunk
//! just before it is needed again, and two scan threads never evict each other's chunks. Other
//! entries (chunks outside the scan's time range, columns it does not read) are evicted, least
//! recently used first, when the scan needs the room.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use iocap_format::{bits, Col, ColSet, ColValue, ColVecMut, Columns};

/// Values minus `base`, at the narrowest width that holds them: none for a constant, 1, 2 or
/// 4 bits (event classes, syscall numbers and processes of a chunk are often a handful of
/// values), else 8, 16, 24, 32 or 64. The widths under a byte are packed and widened by
/// [`iocap_format::bits`], as the file's packed dictionaries are (a table lookup per byte);
/// 24 bits are read as a little-endian word of three bytes.
#[derive(Debug)]
enum Packed {
    Const,
    /// 1, 2 or 4 bits per value, low bits first, in bytes.
    Bits1(Vec<u8>),
    Bits2(Vec<u8>),
    Bits4(Vec<u8>),
    U8(Vec<u8>),
    U16(Vec<u16>),
    /// Three bytes a value, little-endian.
    U24(Vec<u8>),
    U32(Vec<u32>),
    U64(Vec<u64>),
}

/// Offsets of `8 / L` bits packed `L` to a byte.
fn pack_bits<const L: usize>(offs: &[u64]) -> Vec<u8> {
    let mut p = Vec::with_capacity(offs.len().div_ceil(L));
    bits::pack::<L>(offs.iter().map(|&x| x as u8), &mut p);
    p
}

/// Replace `out` with the `n` values of `8 / L` bits in `p`, plus `base`.
#[inline]
fn unpack_bits<const L: usize, T: ColValue>(p: &[u8], n: usize, base: u64, out: &mut Vec<T>) {
    let table = bits::table::<T, L>(|off| T::from_raw(base + u64::from(off)));
    bits::unpack(p, n, &table, out);
}

/// One cached column of one chunk.
#[derive(Debug)]
pub struct Narrow {
    base: u64,
    len: usize,
    packed: Packed,
    /// Values too wide for `packed` (which holds 0 in their place), as rows and raw values.
    patch_rows: Vec<u32>,
    patch_raw: Vec<u64>,
}

/// Bytes a patch costs: its row and its raw value.
const PATCH_BYTES: usize = 4 + 8;

impl Narrow {
    fn pack<T: ColValue>(v: &[T]) -> Narrow {
        let (lo, hi) = v
            .iter()
            .map(|x| x.to_raw())
            .fold((u64::MAX, 0), |(lo, hi), r| (lo.min(r), hi.max(r)));
        let base = if v.is_empty() { 0 } else { lo };
        let range = hi.saturating_sub(base);
        let width = match range {
            0 => 0,
            1 => 1,
            2..=3 => 2,
            4..=15 => 4,
            16..=0xff => 8,
            _ => Self::wide_width(v, base),
        };
        // Offsets from the base; those wider than the width become patches (0 in the packing).
        let limit = if width >= 64 { u64::MAX } else { (1u64 << width) - 1 };
        let (mut patch_rows, mut patch_raw) = (Vec::new(), Vec::new());
        let offs: Vec<u64> = v
            .iter()
            .enumerate()
            .map(|(i, x)| {
                let off = x.to_raw() - base;
                if off > limit {
                    patch_rows.push(i as u32);
                    patch_raw.push(x.to_raw());
                    0
                } else {
                    off
                }
            })
            .collect();
        let packed = match width {
            0 => Packed::Const,
            1 => Packed::Bits1(pack_bits::<8>(&offs)),
            2 => Packed::Bits2(pack_bits::<4>(&offs)),
            4 => Packed::Bits4(pack_bits::<2>(&offs)),
            8 => Packed::U8(offs.iter().map(|&x| x as u8).collect()),
            16 => Packed::U16(offs.iter().map(|&x| x as u16).collect()),
            24 => {
                // A byte of padding, so every value can be read as a 4-byte word.
                let mut p = Vec::with_capacity(offs.len() * 3 + 1);
                for &x in &offs {
                    p.extend_from_slice(&(x as u32).to_le_bytes()[..3]);
                }
                p.push(0);
                Packed::U24(p)
            }
            32 => Packed::U32(offs.iter().map(|&x| x as u32).collect()),
            _ => Packed::U64(offs),
        };
        Narrow {
            base,
            len: v.len(),
            packed,
            patch_rows,
            patch_raw,
        }
    }

    /// Bits per value for values spanning more than a byte: of 8, 16, 24, 32 and 64, the width
    /// that takes the fewest bytes once the values wider than it are kept as patches.
    fn wide_width<T: ColValue>(v: &[T], base: u64) -> u32 {
        // Values by bit length of their offset.
        let mut lens = [0usize; 65];
        for x in v {
            lens[64 - (x.to_raw() - base).leading_zeros() as usize] += 1;
        }
        let wider = |w: u32| lens[w as usize + 1..].iter().sum::<usize>();
        [8, 16, 24, 32, 64]
            .into_iter()
            .min_by_key(|&w| v.len() * w as usize / 8 + wider(w) * PATCH_BYTES)
            .unwrap_or(64)
    }

    /// Replace `out` with the values.
    fn unpack<T: ColValue>(&self, out: &mut Vec<T>) {
        out.clear();
        let (b, n) = (self.base, self.len);
        match &self.packed {
            Packed::Const => out.resize(n, T::from_raw(b)),
            Packed::Bits1(p) => unpack_bits::<8, T>(p, n, b, out),
            Packed::Bits2(p) => unpack_bits::<4, T>(p, n, b, out),
            Packed::Bits4(p) => unpack_bits::<2, T>(p, n, b, out),
            Packed::U8(p) => out.extend(p.iter().map(|&x| T::from_raw(b + u64::from(x)))),
            Packed::U16(p) => out.extend(p.iter().map(|&x| T::from_raw(b + u64::from(x)))),
            Packed::U24(p) => out.extend(
                p.chunks_exact(3)
                    .map(|w| T::from_raw(b + u64::from(u32::from_le_bytes([w[0], w[1], w[2], 0])))),
            ),
            Packed::U32(p) => out.extend(p.iter().map(|&x| T::from_raw(b + u64::from(x)))),
            Packed::U64(p) => out.extend(p.iter().map(|&x| T::from_raw(b.wrapping_add(x)))),
        }
        for (&row, &raw) in self.patch_rows.iter().zip(&self.patch_raw) {
            if let Some(d) = out.get_mut(row as usize) {
                *d = T::from_raw(raw);
            }
        }
    }

    /// Number of values.
    fn len(&self) -> usize {
        self.len
    }

    /// Heap bytes held (a small fixed cost per entry, so a constant column is not free).
    fn bytes(&self) -> usize {
        96 + self.patch_rows.len() * PATCH_BYTES
            + match &self.packed {
                Packed::Const => 0,
                Packed::Bits1(p) | Packed::Bits2(p) | Packed::Bits4(p) | Packed::U8(p) | Packed::U24(p) => p.len(),
                Packed::U16(p) => p.len() * 2,
                Packed::U32(p) => p.len() * 4,
                Packed::U64(p) => p.len() * 8,
            }
    }
}

/// Apply `$body` to column `$col` of `$cols` as `$v` (a `Vec` of the column's type).
macro_rules! with_col {
    ($cols:expr, $col:expr, |$v:ident| $body:expr) => {
        match $cols.get_mut($col) {
            ColVecMut::U8($v) => $body,
            ColVecMut::U32($v) => $body,
            ColVecMut::U64($v) => $body,
            ColVecMut::I32($v) => $body,
            ColVecMut::I64($v) => $body,
        }
    };
}

/// Column `c` of `cols`, narrowed.
fn pack_col(cols: &mut Columns, c: Col) -> Narrow {
    with_col!(cols, c, |v| Narrow::pack(v))
}

/// Fill column `c` of `cols` from `n`.
fn unpack_col(cols: &mut Columns, c: Col, n: &Narrow) {
    with_col!(cols, c, |v| n.unpack(v))
}

/// Hits and misses so far, in columns of chunks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CacheStats {
    /// Columns of chunks a scan found held, and so did not decode.
    pub hits: u64,
    /// Columns of chunks a scan had to decode.
    pub misses: u64,
    /// Bytes held now.
    pub bytes: usize,
    /// Columns of chunks held now.
    pub entries: usize,
}

struct Entry {
    col: Arc<Narrow>,
    /// The scan that last used it.
    used: u64,
}

#[derive(Default)]
struct Inner {
    map: HashMap<(usize, Col), Entry>,
    bytes: usize,
    scan: u64,
    /// What the current scan reads: its chunks (increasing) and columns. Never evicted by it.
    chunks: Vec<usize>,
    want: u64,
    /// Whether an entry from an earlier scan may still be held (else eviction has nothing to do).
    stale: bool,
    hits: u64,
    misses: u64,
}

/// Decoded columns of one capture's chunks, up to a byte budget, shared by the threads of a
/// scan and kept across scans. See the module documentation for the policy.
pub struct ColumnCache {
    budget: usize,
    inner: Mutex<Inner>,
}

impl ColumnCache {
    /// A cache holding at most `budget` bytes of column values (0 disables it).
    pub fn new(budget: usize) -> ColumnCache {
        ColumnCache {
            budget,
            inner: Mutex::default(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        // The lock guards plain maps and counters: a panic elsewhere leaves them consistent.
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Start a scan of columns `want` of `chunks` (in increasing order): what it does not
    /// read becomes evictable.
    pub(crate) fn begin(&self, chunks: &[usize], want: ColSet) {
        let mut g = self.lock();
        g.scan += 1;
        g.chunks.clear();
        g.chunks.extend_from_slice(chunks);
        g.want = want.0;
        let g = &mut *g;
        g.stale = g.map.keys().any(|k| Self::evictable(&g.chunks, g.want, k));
    }

    fn evictable(chunks: &[usize], want: u64, &(chunk, c): &(usize, Col)) -> bool {
        !ColSet(want).contains(c) || chunks.binary_search(&chunk).is_err()
    }

    /// The columns of `want` held for `chunk`, marked as used by this scan.
    pub(crate) fn get(&self, chunk: usize, want: ColSet, out: &mut Vec<(Col, Arc<Narrow>)>) {
        out.clear();
        let mut g = self.lock();
        let scan = g.scan;
        for c in want.cols() {
            if let Some(e) = g.map.get_mut(&(chunk, c)) {
                e.used = scan;
                out.push((c, Arc::clone(&e.col)));
            }
        }
        let hits = out.len() as u64;
        g.hits += hits;
        g.misses += want.cols().count() as u64 - hits;
    }

    /// Events in the chunk `got` came from (`None` when nothing was cached).
    pub(crate) fn events(got: &[(Col, Arc<Narrow>)]) -> Option<usize> {
        got.first().map(|(_, n)| n.len())
    }

    /// Fill `cols` (already `len` long, the cached columns not decoded) from `got`.
    pub(crate) fn fill(cols: &mut Columns, got: &[(Col, Arc<Narrow>)]) {
        for (c, n) in got {
            unpack_col(cols, *c, n);
        }
    }

    /// Keep columns `cols_set` of `cols` (chunk `chunk`) if the budget allows.
    pub(crate) fn put(&self, chunk: usize, cols_set: ColSet, cols: &mut Columns) {
        if self.budget == 0 {
            return;
        }
        {
            // Full of what this scan uses (at least a byte per value): skip the packing.
            let g = self.lock();
            if g.bytes + cols.len() > self.budget && !g.stale {
                return;
            }
        }
        for c in cols_set.cols() {
            let n = pack_col(cols, c);
            let size = n.bytes();
            let mut g = self.lock();
            if g.bytes + size > self.budget && !self.evict(&mut g, size) {
                // Full of what this scan uses: keep those rather than churn.
                return;
            }
            let scan = g.scan;
            g.bytes += size;
            let old = g.map.insert(
                (chunk, c),
                Entry {
                    col: Arc::new(n),
                    used: scan,
                },
            );
            if let Some(old) = old {
                g.bytes -= old.col.bytes();
            }
        }
    }

    /// Evict entries earlier scans used, oldest first, until `size` more bytes fit (and a
    /// sixteenth of the budget is free, so the next puts need not evict again). Whether it fits.
    fn evict(&self, g: &mut Inner, size: usize) -> bool {
        if !g.stale {
            return false;
        }
        let mut old: Vec<(u64, (usize, Col))> = g
            .map
            .iter()
            .filter(|(k, _)| Self::evictable(&g.chunks, g.want, k))
            .map(|(k, e)| (e.used, *k))
            .collect();
        old.sort_unstable_by_key(|&(used, (chunk, c))| (used, chunk, c as u8));
        let target = self.budget.saturating_sub(size.max(self.budget / 16));
        let mut left = old.len();
        for (_, k) in old {
            if g.bytes <= target {
                break;
            }
            if let Some(e) = g.map.remove(&k) {
                g.bytes -= e.col.bytes();
            }
            left -= 1;
        }
        g.stale = left > 0;
        g.bytes + size <= self.budget
    }

    /// Whether every column of `want` of `chunk` is held (nothing marked as used).
    pub fn holds(&self, chunk: usize, want: ColSet) -> bool {
        let g = self.lock();
        want.cols().all(|c| g.map.contains_key(&(chunk, c)))
    }

    /// Whether the running scan can add nothing more: less than a MiB left and nothing it may
    /// evict. A scan run only to fill the cache can stop there.
    pub fn full(&self) -> bool {
        let g = self.lock();
        self.budget.saturating_sub(g.bytes) < 1 << 20 && !g.stale
    }

    /// Hits and misses so far, and what is held now.
    pub fn stats(&self) -> CacheStats {
        let g = self.lock();
        CacheStats {
            hits: g.hits,
            misses: g.misses,
            bytes: g.bytes,
            entries: g.map.len(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use iocap_format::Event;

    impl Narrow {
        /// Bits per packed value, and patches.
        fn shape(&self) -> (usize, usize) {
            let packed = self.bytes() - 96 - self.patch_rows.len() * PATCH_BYTES;
            let bits = match self.packed {
                // The 24-bit packing has a byte of padding.
                Packed::U24(_) => (packed - 1) * 8 / self.len,
                _ => packed * 8 / self.len,
            };
            (bits, self.patch_rows.len())
        }
    }

    #[test]
    fn narrow_columns_round_trip_at_every_width() {
        let mut cols = Columns::default();
        for i in 0..300u64 {
            // Latency mostly under 300 µs, every hundredth 6 s.
            let lat = if i % 100 == 50 { 6_000_000_000 } else { 5 + i * 1_000 };
            let mut e = Event::syscall((1 << 40) + i * 1_000, lat, 7, 7, 3, 0);
            e.fd = if i % 2 == 0 { 2 } else { -2 }; // zigzag 4 and 3
            e.op = (i % 4) as u8;
            e.flags = (i % 16) as u32;
            e.ret = -(i as i64);
            e.bytes = i * 10_000_000;
            e.sector = i << 40;
            e.queue = if i == 7 { u64::MAX } else { 0 };
            cols.push(&e);
        }
        let all = ColSet::ALL;
        let packed: Vec<(Col, Arc<Narrow>)> = all.cols().map(|c| (c, Arc::new(pack_col(&mut cols, c)))).collect();
        let shape = |c: Col| packed[c as usize].1.shape();
        // Bits per value and patches: pid is constant, fd two values, op four, flags sixteen, ret 300
        // values (zigzag: 598), ts spans 299 µs, bytes 3 s, sector 49 bits spread evenly; latency
        // spans 6 s but a 24-bit packing and 3 patches are cheaper; queue is 0 but once.
        assert_eq!(shape(Col::Pid), (0, 0));
        assert_eq!(shape(Col::Fd), (1, 0));
        assert_eq!(shape(Col::Op), (2, 0));
        assert_eq!(shape(Col::Flags), (4, 0));
        assert_eq!(shape(Col::Ret), (16, 0));
        assert_eq!(shape(Col::Ts), (24, 0));
        assert_eq!(shape(Col::Bytes), (32, 0));
        assert_eq!(shape(Col::Sector), (64, 0));
        assert_eq!(shape(Col::Latency), (24, 3));
        assert_eq!(shape(Col::Queue), (8, 1));
        let mut back = cols.clone();
        for (c, _) in &packed {
            with_col!(back, *c, |v| v.clear());
        }
        ColumnCache::fill(&mut back, &packed);
        assert_eq!(back, cols);
    }

    #[test]
    fn random_columns_round_trip() {
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for round in 0..400 {
            let n = (next() % 3000) as usize;
            // Mostly values of a few bits over a random base, some outliers of any width.
            let (base, bits, outliers) = (next() >> (next() % 64), next() % 40, next() % 50);
            let v: Vec<u64> = (0..n)
                .map(|_| {
                    if next() % 1000 < outliers {
                        next()
                    } else {
                        base.wrapping_add(next() & ((1u64 << bits) - 1))
                    }
                })
                .collect();
            let mut back: Vec<u64> = Vec::new();
            Narrow::pack(&v).unpack(&mut back);
            assert_eq!(back, v, "round {round}");
            let signed: Vec<i64> = v.iter().map(|&r| r as i64 >> (round % 8)).collect();
            let mut back: Vec<i64> = Vec::new();
            Narrow::pack(&signed).unpack(&mut back);
            assert_eq!(back, signed, "round {round}");
        }
    }

    #[test]
    fn the_budget_holds_and_a_scan_keeps_what_it_reads() {
        let mut cols = Columns::default();
        for i in 0..1000u64 {
            cols.push(&Event::syscall(i * 100, i * 100_000, 1, 1, 0, 0));
        }
        let lat = ColSet::NONE.with(Col::Latency);
        let all: Vec<usize> = (0..5).collect();
        // Latency spans 10^8: 4 bytes per event, 4000 per chunk; room for 2.5 chunks.
        let cache = ColumnCache::new(10_000);
        let mut got = Vec::new();
        let held = |cache: &ColumnCache, got: &mut Vec<_>| -> Vec<usize> {
            (0..5)
                .filter(|&chunk| {
                    cache.get(chunk, lat, got);
                    !got.is_empty()
                })
                .collect()
        };
        cache.begin(&all, lat);
        for chunk in 0..5 {
            cache.get(chunk, lat, &mut got);
            assert!(got.is_empty());
            cache.put(chunk, lat, &mut cols);
        }
        assert_eq!(cache.stats().entries, 2, "the first two kept, the rest refused");
        assert!(cache.holds(0, lat) && cache.holds(1, lat) && !cache.holds(2, lat));
        assert!(!cache.holds(0, lat.with(Col::Ts)));
        assert!(cache.full(), "nothing this scan may evict");
        assert!(cache.stats().bytes <= 10_000);
        // The same scan again, its chunks in any order (two threads): the first two stay.
        cache.begin(&all, lat);
        for chunk in [4, 0, 3, 2, 1] {
            cache.get(chunk, lat, &mut got);
            if got.is_empty() {
                cache.put(chunk, lat, &mut cols);
            }
        }
        assert_eq!(held(&cache, &mut got), [0, 1]);
        // A scan of other chunks evicts what it does not read.
        cache.begin(&[3, 4], lat);
        assert!(!cache.full(), "chunks 0 and 1 may go");
        for chunk in [3, 4] {
            cache.get(chunk, lat, &mut got);
            cache.put(chunk, lat, &mut cols);
        }
        cache.begin(&all, lat);
        assert_eq!(held(&cache, &mut got), [3, 4]);
        // So does a scan of other columns of the same chunks.
        let ts = ColSet::NONE.with(Col::Ts);
        cache.begin(&[3, 4], ts);
        cache.put(3, ts, &mut cols);
        cache.begin(&all, lat);
        assert_eq!(held(&cache, &mut got), [4], "chunk 3's latency made room for its ts");
        let st = cache.stats();
        assert!(st.bytes <= 10_000 && st.hits > 0 && st.misses > 0, "{st:?}");
    }
}
