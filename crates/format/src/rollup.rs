//! A chunk's rollup (frame kind 13, since 1.12): its events counted by key — class, process,
//! call number and op — and latency cell, written right after the chunk.
//!
//! A question about a time view asks, of every chunk inside one spectrogram row, only how many
//! of its events fall in each latency column and bucket, by the field it groups by, among
//! those its filter keeps. When the filter and the field read nothing but the key's columns,
//! the rollup answers that without decoding the chunk: a one-hour view of a day's recording
//! reads a few kilobytes per chunk instead of its columns.
//!
//! A latency's **cell** is `2 × bucket + past`: its log-linear bucket
//! ([`crate::latency::bucket`]) and whether it lies past the spectrogram column bound inside
//! that bucket ([`crate::latency::past_bound`]); a bucket straddles at most one. From a cell,
//! both the histogram bucket and the spectrogram column are exact.

use crate::columns::{Col, ColSet, Columns};
use crate::latency::{self, BUCKETS};
use crate::model::{Class, Event};
use crate::varint::{self, Cursor};

/// What a rollup counts per key besides its cells: the exact count, smallest, largest and
/// sum of its latencies, and the sum of its bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KeyTotals {
    /// Events of the key.
    pub count: u64,
    /// Smallest latency, ns.
    pub min: u64,
    /// Largest latency, ns.
    pub max: u64,
    /// Sum of the latencies, ns.
    pub sum: u128,
    /// Sum of the `bytes` column, saturating (0 in a rollup without bytes: see
    /// [`Rollup::with_bytes`]).
    pub bytes: u64,
}

/// A chunk's events by key and latency cell (see the module).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Rollup {
    /// Offset of the chunk frame it sums, in its own file.
    pub chunk: u64,
    /// One row per key: `class`, `proc`, `nr` and `op` hold the key; every other column is 0.
    pub keys: Columns,
    /// Per key, in key order.
    pub totals: Vec<KeyTotals>,
    /// Key `k`'s cells are `cells[ends[k - 1]..ends[k]]` (from 0 for the first).
    pub ends: Vec<u32>,
    /// (cell, events), cells increasing within a key.
    pub cells: Vec<(u16, u32)>,
    /// Whether the keys' `bytes` are summed (since 1.13; a 1.12 rollup has none).
    pub with_bytes: bool,
}

/// The columns a rollup's keys hold.
pub fn key_cols() -> ColSet {
    [Col::Class, Col::Proc, Col::Nr, Col::Op].into_iter().collect()
}

/// The latency cell of `ns` (see the module).
#[inline]
pub fn cell(ns: u64) -> u16 {
    cell_in(latency::bucket_first_columns(), latency::column_bounds(), ns)
}

/// [`cell`], given the tables it reads (fetched once by a loop over many latencies).
#[inline(always)]
fn cell_in(first: &[u8; BUCKETS], bounds: &[u64; latency::COLS + 1], ns: u64) -> u16 {
    let b = latency::bucket(ns);
    (b * 2 + usize::from(latency::past_bound(first, bounds, b, ns))) as u16
}

/// The bucket and spectrogram column of cell `c`.
#[inline]
pub fn cell_parts(c: u16) -> (usize, usize) {
    let b = usize::from(c / 2);
    let first = usize::from(latency::bucket_first_columns().get(b).copied().unwrap_or(0));
    (b, (first + usize::from(c % 2)).min(latency::COLS - 1))
}

impl Rollup {
    /// The rollup of `cols` (every column decoded), a chunk to be written at `chunk`.
    pub fn of(cols: &Columns, chunk: u64) -> Rollup {
        let n = cols.len();
        let mut r = Rollup {
            chunk,
            with_bytes: true,
            ..Rollup::default()
        };
        // Keys are numbered in order of first appearance; an event mostly has its neighbour's
        // key, which skips the map.
        let mut ids: IdMap<u128, u32> = IdMap::default();
        let mut last = u128::MAX;
        let mut memo = [(u128::MAX, 0u32); 64];
        let mut id = 0u32;
        // Each event's key and cell.
        let mut key_of: Vec<u32> = Vec::with_capacity(n);
        let mut cell_of: Vec<u16> = Vec::with_capacity(n);
        let (first, bounds) = (latency::bucket_first_columns(), latency::column_bounds());
        for i in 0..n {
            let class = cols.class.get(i).copied().unwrap_or(0);
            let proc = cols.proc.get(i).copied().unwrap_or(0);
            let nr = cols.nr.get(i).copied().unwrap_or(0);
            let op = cols.op.get(i).copied().unwrap_or(0);
            let key = u128::from(proc) << 64 | u128::from(nr) << 32 | u128::from(class) << 8 | u128::from(op);
            if key != last {
                // A small direct-mapped memo in front of the map: a chunk has few keys.
                let slot = ((key as u64 ^ (key >> 64) as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 58) as usize;
                let next = r.totals.len() as u32;
                id = match memo[slot] {
                    (k, id) if k == key => id,
                    _ => *ids.entry(key).or_insert(next),
                };
                memo[slot] = (key, id);
                if id == next {
                    r.totals.push(KeyTotals {
                        count: 0,
                        min: u64::MAX,
                        max: 0,
                        sum: 0,
                        bytes: 0,
                    });
                    r.keys.push(&Event {
                        class: Class::from_code(u64::from(class)).unwrap_or(Class::Syscall),
                        proc,
                        nr,
                        op,
                        ..Event::default()
                    });
                }
                last = key;
            }
            let ns = cols.latency.get(i).copied().unwrap_or(0);
            let t = &mut r.totals[id as usize];
            t.count += 1;
            t.min = t.min.min(ns);
            t.max = t.max.max(ns);
            t.sum += u128::from(ns);
            t.bytes = t.bytes.saturating_add(cols.bytes.get(i).copied().unwrap_or(0));
            key_of.push(id);
            cell_of.push(cell_in(first, bounds, ns));
        }
        // The cells grouped by key (a counting sort), then counted key by key in a table of
        // every cell, of which only the cells touched are read back and cleared.
        let mut at: Vec<usize> = Vec::with_capacity(r.totals.len());
        let mut sum = 0usize;
        for t in &r.totals {
            at.push(sum);
            sum += t.count as usize;
        }
        let mut grouped = vec![0u16; n];
        for (&k, &c) in key_of.iter().zip(&cell_of) {
            let slot = &mut at[k as usize];
            grouped[*slot] = c;
            *slot += 1;
        }
        let mut counts = vec![0u32; 2 * BUCKETS];
        let mut touched: Vec<u16> = Vec::new();
        let mut from = 0usize;
        for t in &r.totals {
            let to = from + t.count as usize;
            for &c in &grouped[from..to] {
                let k = &mut counts[usize::from(c)];
                if *k == 0 {
                    touched.push(c);
                }
                *k += 1;
            }
            touched.sort_unstable();
            for &c in &touched {
                r.cells.push((c, std::mem::take(&mut counts[usize::from(c)])));
            }
            touched.clear();
            r.ends.push(r.cells.len() as u32);
            from = to;
        }
        r
    }

    /// The cells of key `k`.
    pub fn cells_of(&self, k: usize) -> &[(u16, u32)] {
        let from = k.checked_sub(1).map_or(0, |p| self.ends[p] as usize);
        &self.cells[from..self.ends[k] as usize]
    }

    /// Append the rollup's bytes (before compression) to `out`.
    pub fn encode(&self, out: &mut Vec<u8>) {
        varint::put(out, self.chunk);
        varint::put(out, self.totals.len() as u64);
        for (k, t) in self.totals.iter().enumerate() {
            let e = self.keys.event(k);
            for v in [
                u64::from(e.class as u8),
                u64::from(e.proc),
                u64::from(e.nr),
                u64::from(e.op),
            ] {
                varint::put(out, v);
            }
            for v in [t.count, t.min, t.max, t.sum as u64, (t.sum >> 64) as u64] {
                varint::put(out, v);
            }
            let cells = self.cells_of(k);
            varint::put(out, cells.len() as u64);
            let mut prev = 0u16;
            for (i, &(c, n)) in cells.iter().enumerate() {
                varint::put(out, u64::from(if i == 0 { c } else { c - prev }));
                varint::put(out, u64::from(n));
                prev = c;
            }
        }
        // After every key, so that a 1.12 reader, which wants the entries to end there,
        // takes such a rollup for unusable and reads the chunk.
        if self.with_bytes {
            for t in &self.totals {
                varint::put(out, t.bytes);
            }
        }
    }

    /// Decode a rollup of a chunk of `events` events; `None` unless it is whole and consistent:
    /// every key's cells increasing, within the buckets, and counting its events; its smallest
    /// and largest latency in its first and last cells' buckets, its sum between; every event
    /// of the chunk counted once; then either nothing more (1.12) or every key's bytes (1.13).
    pub fn decode(raw: &[u8], events: u64) -> Option<Rollup> {
        let mut cur = Cursor::new(raw);
        let mut r = Rollup {
            chunk: cur.varint()?,
            ..Rollup::default()
        };
        let nkeys = cur.varint()?;
        // A key takes at least 11 bytes.
        if nkeys > cur.remaining() as u64 / 11 {
            return None;
        }
        let mut total = 0u64;
        for _ in 0..nkeys {
            let class = Class::from_code(cur.varint()?)?;
            let proc = u32::try_from(cur.varint()?).ok()?;
            let nr = u32::try_from(cur.varint()?).ok()?;
            let op = u8::try_from(cur.varint()?).ok()?;
            let (count, min, max) = (cur.varint()?, cur.varint()?, cur.varint()?);
            let sum = u128::from(cur.varint()?) | u128::from(cur.varint()?) << 64;
            let ncells = cur.varint()?;
            if count == 0 || min > max || ncells == 0 || ncells > cur.remaining() as u64 / 2 {
                return None;
            }
            if sum < u128::from(min) * u128::from(count) || sum > u128::from(max) * u128::from(count) {
                return None;
            }
            let (mut prev, mut counted) = (0u64, 0u64);
            for i in 0..ncells {
                let gap = cur.varint()?;
                let c = if i == 0 {
                    gap
                } else {
                    prev.checked_add(gap).filter(|_| gap > 0)?
                };
                let n = cur.varint()?;
                if c >= 2 * BUCKETS as u64 || n == 0 || n > u64::from(u32::MAX) {
                    return None;
                }
                r.cells.push((c as u16, n as u32));
                counted = counted.checked_add(n)?;
                prev = c;
            }
            let cells = &r.cells[r.cells.len() - ncells as usize..];
            let bucket_of = |c: u16| usize::from(c / 2);
            if counted != count
                || latency::bucket(min) != bucket_of(cells[0].0)
                || latency::bucket(max) != bucket_of(cells[cells.len() - 1].0)
            {
                return None;
            }
            total = total.checked_add(count)?;
            r.ends.push(r.cells.len() as u32);
            r.totals.push(KeyTotals {
                count,
                min,
                max,
                sum,
                bytes: 0,
            });
            r.keys.push(&Event {
                class,
                proc,
                nr,
                op,
                ..Event::default()
            });
        }
        if total != events {
            return None;
        }
        if cur.remaining() > 0 {
            for t in &mut r.totals {
                t.bytes = cur.varint()?;
            }
            r.with_bytes = true;
        }
        (cur.remaining() == 0).then_some(r)
    }
}

type IdMap<K, V> = crate::hash::IdMap<K, V>;

#[cfg(test)]
mod tests {
    use super::*;

    /// Events of (class, proc, nr, latency), each of `latency / 10` bytes.
    fn chunk(events: &[(u8, u32, u32, u64)]) -> Columns {
        let mut cols = Columns::default();
        for &(class, proc, nr, latency) in events {
            cols.push(&Event {
                class: Class::from_code(u64::from(class)).unwrap(),
                proc,
                nr,
                latency,
                bytes: latency / 10,
                ..Event::default()
            });
        }
        cols
    }

    #[test]
    fn a_rollup_counts_each_key_by_cell_and_reads_back() {
        let cols = chunk(&[
            (0, 1, 0, 500),
            (0, 1, 0, 510),
            (1, 2, 0, 2_000_000),
            (0, 1, 0, 90),
            (0, 3, 1, 7),
        ]);
        let r = Rollup::of(&cols, 4096);
        assert_eq!(r.totals.len(), 3);
        assert_eq!(r.keys.proc, [1, 2, 3]);
        assert_eq!(
            r.totals[0],
            KeyTotals {
                count: 3,
                min: 90,
                max: 510,
                sum: 1100,
                bytes: 9 + 50 + 51,
            }
        );
        assert_eq!(r.totals[1].bytes, 200_000);
        assert_eq!(r.cells_of(0), [(cell(90), 1), (cell(500), 1), (cell(510), 1)]);
        assert_eq!(r.cells_of(2), [(cell(7), 1)]);
        let mut raw = Vec::new();
        r.encode(&mut raw);
        assert_eq!(Rollup::decode(&raw, 5), Some(r.clone()));
        // The same without bytes, as 1.12 wrote it: the keys end the entries.
        let mut old = r.clone();
        old.with_bytes = false;
        let mut old_raw = Vec::new();
        old.encode(&mut old_raw);
        assert_eq!(old_raw, raw[..old_raw.len()], "the bytes come after every key");
        for t in &mut old.totals {
            t.bytes = 0;
        }
        assert_eq!(Rollup::decode(&old_raw, 5), Some(old));
        // The wrong event count, or any other byte cut (inside a key, or inside the bytes),
        // is not a rollup.
        assert_eq!(Rollup::decode(&raw, 4), None);
        for cut in (0..raw.len()).filter(|&c| c != old_raw.len()) {
            assert_eq!(Rollup::decode(&raw[..cut], 5), None, "cut at {cut}");
        }
        // Nor are bytes for more keys than it has.
        let mut long = raw.clone();
        long.push(1);
        assert_eq!(Rollup::decode(&long, 5), None);
    }

    #[test]
    fn a_cell_gives_the_bucket_and_column_of_its_latencies() {
        for ns in (0..200_000u64)
            .chain((0..64).map(|s| 1u64 << s))
            .chain([u64::MAX, 3_162_278, 10_000_000_000])
        {
            let (b, c) = cell_parts(cell(ns));
            assert_eq!(b, latency::bucket(ns), "{ns}");
            let by_search = latency::column_bounds()
                .partition_point(|&bound| bound <= ns)
                .saturating_sub(1);
            assert_eq!(c, by_search.min(latency::COLS - 1), "{ns}");
        }
    }

    #[test]
    fn an_inconsistent_rollup_is_refused() {
        let cols = chunk(&[(0, 1, 0, 500), (0, 1, 0, 510)]);
        let mut r = Rollup::of(&cols, 0);
        let good = |r: &Rollup| {
            let mut raw = Vec::new();
            r.encode(&mut raw);
            Rollup::decode(&raw, 2)
        };
        assert!(good(&r).is_some());
        r.totals[0].min = 400_000;
        assert_eq!(good(&r), None, "min past its first cell");
        r.totals[0].min = 500;
        r.totals[0].sum = 5;
        assert_eq!(good(&r), None, "sum below count × min");
    }
}
