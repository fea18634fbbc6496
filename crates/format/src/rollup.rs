//! A chunk's rollup (frame kind 13, since 1.12): its events counted by key — class, process,
//! call number and op, and since 1.16 pid — and latency cell, written right after the chunk.
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
//!
//! Since 1.14 a rollup is followed by each cell's own smallest and largest latency, latency sum
//! and bytes ([`CellTotals`], frame kind 14, read only by a question that wants them): a
//! filter on the latency whose bounds no cell's events straddle (`latency>1ms`: decades are
//! column bounds) then keeps or drops whole cells, and the totals of the cells it keeps are
//! exact.

use std::borrow::Cow;
use std::sync::OnceLock;

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

impl KeyTotals {
    /// A key's totals before its events are counted: its smallest latency the largest there is,
    /// so the first event's is smaller.
    const NONE_YET: KeyTotals = KeyTotals {
        count: 0,
        min: u64::MAX,
        max: 0,
        sum: 0,
        bytes: 0,
    };
}

/// What a 1.14 rollup holds of each cell of each key besides its count: the smallest, largest
/// and sum of its latencies, and the sum of its bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CellTotals {
    /// Smallest latency, ns.
    pub min: u64,
    /// Largest latency, ns.
    pub max: u64,
    /// Sum of the latencies, ns.
    pub sum: u128,
    /// Sum of the `bytes` column.
    pub bytes: u64,
}

/// A chunk's events by key and latency cell (see the module).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Rollup {
    /// Offset of the chunk frame it sums, in its own file.
    pub chunk: u64,
    /// One row per key: `class`, `proc`, `nr`, `op` and (since 1.16, [`Rollup::with_pid`])
    /// `pid` hold the key; every other column is 0.
    pub keys: Columns,
    /// Per key, in key order.
    pub totals: Vec<KeyTotals>,
    /// Key `k`'s cells are `cells[ends[k - 1]..ends[k]]` (from 0 for the first).
    pub ends: Vec<u32>,
    /// (cell, events), cells increasing within a key.
    pub cells: Vec<(u16, u32)>,
    /// Whether the keys' `bytes` are summed (since 1.13; a 1.12 rollup has none).
    pub with_bytes: bool,
    /// Whether the keys hold the `pid` column (since 1.16; before, its key of `proc` may hold
    /// several pids, and `keys.pid` is 0): see [`Rollup::holds`].
    pub with_pid: bool,
    /// Whether the keys hold the `file` column (since 1.17, in a chunk where that makes at
    /// most one key per 64 (`EVENTS_PER_FILE_KEY`) events; else `keys.file` is 0): see
    /// [`Rollup::holds`].
    pub with_file: bool,
    /// Each cell's totals, as `cells`, as made ([`Rollup::of`]) or decoded
    /// ([`Rollup::into_decoded`]); empty otherwise, and where the sums would not fit their
    /// encoding.
    pub cell_totals: Vec<CellTotals>,
    /// The cells' totals as read (since 1.14, their own frame, past its chunk offset), decoded
    /// for the keys a question wants by [`Rollup::cell_totals_where`]; empty when not read.
    pub cell_frame: Vec<u8>,
}

/// The columns a rollup's keys may hold: those of a 1.17 rollup with files. An older one lacks
/// `pid`, one without files `file` ([`Rollup::holds`]).
pub fn key_cols() -> ColSet {
    [Col::Class, Col::Proc, Col::Nr, Col::Op, Col::Pid, Col::File]
        .into_iter()
        .collect()
}

/// A rollup's keys hold the file when that makes at most one key per this many events of its
/// chunk. A key costs 15 to 20 bytes (more with many cells), so this bounds what files add to
/// about 0.3 bytes/event; a chunk of many files (a `tar`'s, about a file per three events)
/// goes without, and a question on files reads its columns.
pub const EVENTS_PER_FILE_KEY: usize = 64;

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

/// The latencies cell `c` holds, `[lo, hi]` (both inclusive): those of its bucket below the
/// bound [`latency::past_bound`] compares with, or those at or past it. A cell that holds none
/// (the other side of a bucket no bound crosses, a cell past the last bucket) gives `lo > hi`.
#[inline]
pub fn cell_range(c: u16) -> (u64, u64) {
    static RANGES: OnceLock<Vec<(u64, u64)>> = OnceLock::new();
    let ranges = RANGES.get_or_init(|| {
        let (first, bounds) = (latency::bucket_first_columns(), latency::column_bounds());
        (0..2 * BUCKETS)
            .map(|c| {
                let b = c / 2;
                let (lo, hi) = latency::bucket_range(b);
                let bound = bounds.get(usize::from(first[b]) + 1).copied().unwrap_or(u64::MAX);
                if c & 1 == 0 {
                    (lo, hi.min(bound.saturating_sub(1)))
                } else {
                    (lo.max(bound), hi)
                }
            })
            .collect()
    });
    ranges.get(usize::from(c)).copied().unwrap_or((1, 0))
}

/// The bucket and spectrogram column of cell `c`.
#[inline]
pub fn cell_parts(c: u16) -> (usize, usize) {
    let b = usize::from(c / 2);
    let first = usize::from(latency::bucket_first_columns().get(b).copied().unwrap_or(0));
    (b, (first + usize::from(c % 2)).min(latency::COLS - 1))
}

impl Rollup {
    /// The rollup of `cols` (every column decoded), a chunk to be written at `chunk`. Its keys
    /// hold the file ([`Rollup::with_file`]) when that makes at most one key per
    /// 64 events (`EVENTS_PER_FILE_KEY`), and keys and cells weighing at most half again as much
    /// as without (a key weighing four cells); else (a chunk of many files, as a `tar`'s, or of
    /// processes each busy on several files) not.
    pub fn of(cols: &Columns, chunk: u64) -> Rollup {
        Rollup::build(cols, chunk, cols.len() / EVENTS_PER_FILE_KEY)
    }

    /// [`Rollup::of`], with at most `file_keys` keys with the file.
    fn build(cols: &Columns, chunk: u64, file_keys: usize) -> Rollup {
        let n = cols.len();
        let mut r = Rollup {
            chunk,
            with_bytes: true,
            with_pid: true,
            with_file: true,
            ..Rollup::default()
        };
        // Each event's key and cell, and each key with the file's key without.
        let mut key_of: Vec<u32> = Vec::with_capacity(n);
        let mut cell_of: Vec<u16> = Vec::with_capacity(n);
        let mut base_of: Vec<u32> = Vec::new();
        if !r.key_events(cols, file_keys, &mut key_of, &mut cell_of, &mut base_of) {
            // Too many keys with the file: they would cost more bytes than they save reads.
            (r.keys, r.totals, r.with_file) = (Columns::default(), Vec::new(), false);
            key_of.clear();
            cell_of.clear();
            r.key_events(cols, usize::MAX, &mut key_of, &mut cell_of, &mut base_of);
        }
        r.count_cells(cols, &key_of, &cell_of);
        // Every other question reads each key and cell: files that make them weigh much more
        // slow every question for the few about files.
        if r.with_file && 2 * r.weight() > 3 * r.weight_without_files(&base_of) {
            r.without_files(&base_of, &mut key_of);
            r.count_cells(cols, &key_of, &cell_of);
        }
        // A rollup of no key ends after them, without the pids and files a file rollup
        // (frame kind 16) must go on with: it is written as kind 13.
        r.with_file &= !r.totals.is_empty();
        if !r.cell_totals_fit() {
            r.cell_totals.clear();
        }
        r
    }

    /// What reading the rollup costs, in cells: a key's own figures weigh about as much as four
    /// cells.
    fn weight(&self) -> usize {
        4 * self.totals.len() + self.cells.len()
    }

    /// [`Rollup::weight`] of the rollup without files, its keys merged by `base_of` (a key's
    /// cells then the union of its files' cells).
    fn weight_without_files(&self, base_of: &[u32]) -> usize {
        let bases = base_of.iter().max().map_or(0, |&b| b as usize + 1);
        // `seen[c]` is 1 + the last merged key that counted cell `c`.
        let mut seen = vec![0u32; 2 * BUCKETS];
        let mut by_base: Vec<Vec<usize>> = vec![Vec::new(); bases];
        base_of
            .iter()
            .enumerate()
            .for_each(|(k, &b)| by_base[b as usize].push(k));
        let mut cells = 0;
        for (b, keys) in by_base.iter().enumerate() {
            for &k in keys {
                for &(c, _) in self.cells_of(k) {
                    let at = &mut seen[usize::from(c)];
                    if *at != b as u32 + 1 {
                        *at = b as u32 + 1;
                        cells += 1;
                    }
                }
            }
        }
        4 * bases + cells
    }

    /// Count each key's cells and their totals, and from them its own, from each event's key
    /// and cell: the cells grouped by key (a counting sort), then counted key by key in a table
    /// of every cell, of which only the cells touched are read back and cleared.
    fn count_cells(&mut self, cols: &Columns, key_of: &[u32], cell_of: &[u16]) {
        let mut at: Vec<usize> = Vec::with_capacity(self.totals.len());
        let mut sum = 0usize;
        for t in &self.totals {
            at.push(sum);
            sum += t.count as usize;
        }
        let mut grouped = vec![0u32; key_of.len()];
        for (i, &k) in key_of.iter().enumerate() {
            let slot = &mut at[k as usize];
            grouped[*slot] = i as u32;
            *slot += 1;
        }
        let empty = (
            0u32,
            CellTotals {
                min: u64::MAX,
                max: 0,
                sum: 0,
                bytes: 0,
            },
        );
        let mut table = vec![empty; 2 * BUCKETS];
        let mut touched: Vec<u16> = Vec::new();
        let mut from = 0usize;
        for k in 0..self.totals.len() {
            let to = from + self.totals[k].count as usize;
            for &i in &grouped[from..to] {
                let c = cell_of[i as usize];
                let (n, ct) = &mut table[usize::from(c)];
                if *n == 0 {
                    touched.push(c);
                }
                *n += 1;
                let ns = cols.latency.get(i as usize).copied().unwrap_or(0);
                ct.min = ct.min.min(ns);
                ct.max = ct.max.max(ns);
                ct.sum += u128::from(ns);
                ct.bytes = ct
                    .bytes
                    .saturating_add(cols.bytes.get(i as usize).copied().unwrap_or(0));
            }
            touched.sort_unstable();
            let t = &mut self.totals[k];
            for &c in &touched {
                let (n, ct) = std::mem::replace(&mut table[usize::from(c)], empty);
                self.cells.push((c, n));
                self.cell_totals.push(ct);
                t.min = t.min.min(ct.min);
                t.max = t.max.max(ct.max);
                t.sum += ct.sum;
                t.bytes = t.bytes.saturating_add(ct.bytes);
            }
            touched.clear();
            self.ends.push(self.cells.len() as u32);
            from = to;
        }
    }

    /// Number each event's key (in `key_of`, keys in order of first appearance, pushed to
    /// `keys` and `totals` with their counts) and its cell (in `cell_of`); with
    /// [`Rollup::with_file`], the file is part of the key, and `base_of` numbers each key's
    /// key without it, in the same order. False, part way, when there would be more than
    /// `most` keys.
    fn key_events(
        &mut self,
        cols: &Columns,
        most: usize,
        key_of: &mut Vec<u32>,
        cell_of: &mut Vec<u16>,
        base_of: &mut Vec<u32>,
    ) -> bool {
        // An event mostly has its neighbour's key, which skips the map.
        let mut ids: IdMap<(u128, u32), u32> = IdMap::default();
        let mut bases: IdMap<u128, u32> = IdMap::default();
        let mut last = (u128::MAX, 0u32);
        let mut memo = [((u128::MAX, 0u32), 0u32); 64];
        let mut id = 0u32;
        let (first, bounds) = (latency::bucket_first_columns(), latency::column_bounds());
        for i in 0..cols.len() {
            let class = cols.class.get(i).copied().unwrap_or(0);
            let proc = cols.proc.get(i).copied().unwrap_or(0);
            let nr = cols.nr.get(i).copied().unwrap_or(0);
            let op = cols.op.get(i).copied().unwrap_or(0);
            // A recorder's process entry is of one pid: the pid adds no key there.
            let pid = cols.pid.get(i).copied().unwrap_or(0);
            let file = match self.with_file {
                true => cols.file.get(i).copied().unwrap_or(0),
                false => 0,
            };
            let key = (
                u128::from(proc) << 96
                    | u128::from(pid) << 64
                    | u128::from(nr) << 32
                    | u128::from(class) << 8
                    | u128::from(op),
                file,
            );
            if key != last {
                // A small direct-mapped memo in front of the map: a chunk has few keys.
                let (k, f) = key;
                let mix = k as u64 ^ (k >> 64) as u64 ^ u64::from(f).rotate_left(40);
                let slot = (mix.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 58) as usize;
                let next = self.totals.len() as u32;
                id = match memo[slot] {
                    (k, id) if k == key => id,
                    _ => *ids.entry(key).or_insert(next),
                };
                memo[slot] = (key, id);
                if id == next {
                    if self.totals.len() >= most {
                        return false;
                    }
                    if self.with_file {
                        let next = bases.len() as u32;
                        base_of.push(*bases.entry(key.0).or_insert(next));
                    }
                    self.totals.push(KeyTotals::NONE_YET);
                    self.keys.push(&Event {
                        class: Class::from_code(u64::from(class)).unwrap_or(Class::Syscall),
                        proc,
                        pid,
                        nr,
                        op,
                        file,
                        ..Event::default()
                    });
                }
                last = key;
            }
            let ns = cols.latency.get(i).copied().unwrap_or(0);
            self.totals[id as usize].count += 1;
            key_of.push(id);
            cell_of.push(cell_in(first, bounds, ns));
        }
        true
    }

    /// Merge the keys that differ only by their file, `base_of` numbering each key's merged
    /// key (in order of first appearance, as [`Rollup::key_events`] does), and renumber
    /// `key_of`: the keys and counts [`Rollup::key_events`] makes without files, their cells
    /// left to count again.
    fn without_files(&mut self, base_of: &[u32], key_of: &mut [u32]) {
        let (mut keys, mut totals) = (Columns::default(), Vec::new());
        for (k, &b) in base_of.iter().enumerate() {
            if b as usize == totals.len() {
                keys.push(&Event {
                    file: 0,
                    ..self.keys.event(k)
                });
                totals.push(KeyTotals::NONE_YET);
            }
            totals[b as usize].count += self.totals[k].count;
        }
        key_of.iter_mut().for_each(|k| *k = base_of[*k as usize]);
        (self.keys, self.totals, self.with_file) = (keys, totals, false);
        self.cells.clear();
        self.cell_totals.clear();
        self.ends.clear();
    }

    /// Whether the keys hold every column of `cols` (the key's columns, since 1.16 `pid`, since
    /// 1.17 `file` where [`Rollup::with_file`]): a question that reads more of an event than
    /// that cannot be answered from it.
    pub fn holds(&self, cols: ColSet) -> bool {
        let mut keys = key_cols();
        if !self.with_pid {
            keys = ColSet(keys.0 & !ColSet::NONE.with(Col::Pid).0);
        }
        if !self.with_file {
            keys = ColSet(keys.0 & !ColSet::NONE.with(Col::File).0);
        }
        cols.0 & !keys.0 == 0
    }

    /// Whether the rollup holds each cell's totals ([`CellTotals`], since 1.14), made or read.
    pub fn has_cell_totals(&self) -> bool {
        self.with_bytes && (self.cell_totals.len() == self.cells.len() || !self.cell_frame.is_empty())
    }

    /// Whether the cells' totals can be encoded: each sum past its cell's smallest latency
    /// fits 64 bits, and no key's bytes saturated (its cells' would not add up to it). A chunk
    /// of latencies of days could break the first; such a rollup goes without them.
    fn cell_totals_fit(&self) -> bool {
        (0..self.totals.len()).all(|k| {
            let span = self.span(k);
            let cells = self.cells[span.clone()].iter().zip(&self.cell_totals[span]);
            let bytes = cells.clone().try_fold(0u64, |acc, (_, ct)| acc.checked_add(ct.bytes));
            bytes == Some(self.totals[k].bytes)
                && cells
                    .clone()
                    .all(|(&(_, n), ct)| u64::try_from(ct.sum - u128::from(ct.min) * u128::from(n)).is_ok())
        })
    }

    /// The cells of key `k`.
    pub fn cells_of(&self, k: usize) -> &[(u16, u32)] {
        &self.cells[self.span(k)]
    }

    /// Where key `k`'s cells lie in `cells` (and their totals in `cell_totals`).
    pub fn span(&self, k: usize) -> std::ops::Range<usize> {
        let from = k.checked_sub(1).map_or(0, |p| self.ends[p] as usize);
        from..self.ends[k] as usize
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
        // takes such a rollup for unusable and reads the chunk; the pids after the bytes, for
        // the same reason (a reader before 1.16 wants the entries to end with the bytes).
        if self.with_bytes {
            for t in &self.totals {
                varint::put(out, t.bytes);
            }
            if self.with_pid {
                for k in 0..self.totals.len() {
                    varint::put(out, u64::from(self.keys.pid.get(k).copied().unwrap_or(0)));
                }
                // The files after the pids, for the same reason (since 1.17).
                if self.with_file {
                    for k in 0..self.totals.len() {
                        varint::put(out, u64::from(self.keys.file.get(k).copied().unwrap_or(0)));
                    }
                }
            }
        }
    }

    /// Append the bytes of the cells' totals (their own frame, before compression) to `out`;
    /// false, appending nothing, when the rollup has none ([`Rollup::has_cell_totals`]).
    pub fn encode_cell_totals(&self, out: &mut Vec<u8>) -> bool {
        if !self.has_cell_totals() {
            return false;
        }
        varint::put(out, self.chunk);
        // Each key's cells after their length, so that a reader may step over a key's.
        let mut key = Vec::new();
        for k in 0..self.ends.len() {
            key.clear();
            let span = self.span(k);
            for (&(c, n), ct) in self.cells[span.clone()].iter().zip(&self.cell_totals[span]) {
                varint::put(&mut key, ct.min - cell_range(c).0);
                if n > 1 {
                    varint::put(&mut key, ct.max - ct.min);
                    varint::put(&mut key, (ct.sum - u128::from(ct.min) * u128::from(n)) as u64);
                }
                varint::put(&mut key, ct.bytes);
            }
            varint::put(out, key.len() as u64);
            out.extend_from_slice(&key);
        }
        true
    }

    /// Take `raw`, the bytes of a cells' totals frame ([`Rollup::encode_cell_totals`]), as this
    /// rollup's, undecoded ([`Rollup::cell_totals_where`] decodes them): false, leaving it
    /// without, unless they name its chunk, and it has the bytes they add up to.
    pub fn take_cell_frame(&mut self, raw: &[u8]) -> bool {
        let mut cur = Cursor::new(raw);
        if !self.with_bytes || cur.varint() != Some(self.chunk) || cur.remaining() == 0 {
            return false;
        }
        self.cell_frame.clear();
        self.cell_frame.extend_from_slice(cur.rest());
        true
    }

    /// The cells' totals of the keys `want` keeps, in the place of their cells (the others'
    /// are zeros, not to be read), checked: each lies in its cell, and each wanted key's cells
    /// add up to the key's totals. `None` when the rollup has none, or they do not hold.
    pub fn cell_totals_where(&self, want: impl Fn(usize) -> bool) -> Option<Cow<'_, [CellTotals]>> {
        if !self.with_bytes {
            return None;
        }
        if self.cell_totals.len() == self.cells.len() {
            return Some(Cow::Borrowed(&self.cell_totals));
        }
        let mut cur = Cursor::new(&self.cell_frame);
        let totals = cell_totals_from(&mut cur, self, want)?;
        (cur.remaining() == 0).then_some(Cow::Owned(totals))
    }

    /// The rollup with every cell's totals decoded from its frame, and the frame dropped (a
    /// rollup as [`Rollup::of`] makes it); `None` when they do not hold.
    pub fn into_decoded(mut self) -> Option<Rollup> {
        if !self.cell_frame.is_empty() {
            self.cell_totals = self.cell_totals_where(|_| true)?.into_owned();
            self.cell_frame = Vec::new();
        }
        Some(self)
    }

    /// Decode a rollup of a chunk of `events` events; `None` unless it is whole and consistent:
    /// every key's cells increasing, within the buckets, and counting its events; its smallest
    /// and largest latency in its first and last cells' buckets, its sum between; every event
    /// of the chunk counted once; then either nothing more (1.12), or every key's bytes (1.13),
    /// or those and every key's pid (1.16); with `files` (a file rollup, frame kind 16 since
    /// 1.17), those, every key's pid and then every key's file.
    pub fn decode(raw: &[u8], events: u64, files: bool) -> Option<Rollup> {
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
        if cur.remaining() > 0 {
            for k in 0..r.totals.len() {
                r.keys.pid[k] = u32::try_from(cur.varint()?).ok()?;
            }
            r.with_pid = true;
        }
        if files {
            // A file rollup's keys go on with every part: its bytes, pids and files.
            if !r.with_pid {
                return None;
            }
            for k in 0..r.totals.len() {
                r.keys.file[k] = u32::try_from(cur.varint()?).ok()?;
            }
            r.with_file = true;
        }
        (cur.remaining() == 0).then_some(r)
    }
}

/// The cells' totals of rollup `r` (its keys decoded) from `cur`, of the keys `want` keeps
/// (zeros for the others' cells); `None` unless each lies in its cell, and each wanted key's
/// cells add up to the key's totals.
fn cell_totals_from(cur: &mut Cursor, r: &Rollup, want: impl Fn(usize) -> bool) -> Option<Vec<CellTotals>> {
    let mut out = Vec::with_capacity(r.cells.len());
    for (k, t) in r.totals.iter().enumerate() {
        let from = out.len();
        let mut cur = Cursor::new(cur.len_bytes()?);
        if !want(k) {
            let zero = CellTotals {
                min: 0,
                max: 0,
                sum: 0,
                bytes: 0,
            };
            out.resize(from + r.cells_of(k).len(), zero);
            continue;
        }
        for &(c, n) in r.cells_of(k) {
            let (lo, hi) = cell_range(c);
            let min = lo.checked_add(cur.varint()?)?;
            let (max, sum) = match n {
                1 => (min, u128::from(min)),
                _ => {
                    let max = min.checked_add(cur.varint()?)?;
                    (max, u128::from(min) * u128::from(n) + u128::from(cur.varint()?))
                }
            };
            let bytes = cur.varint()?;
            if max > hi || sum > u128::from(max) * u128::from(n) {
                return None;
            }
            out.push(CellTotals { min, max, sum, bytes });
        }
        if cur.remaining() > 0 {
            return None;
        }
        let cells = &out[from..];
        let bytes = cells.iter().try_fold(0u64, |acc, ct| acc.checked_add(ct.bytes));
        if cells.first()?.min != t.min
            || cells.last()?.max != t.max
            || cells.iter().map(|ct| ct.sum).sum::<u128>() != t.sum
            || bytes != Some(t.bytes)
        {
            return None;
        }
    }
    Some(out)
}

type IdMap<K, V> = crate::hash::IdMap<K, V>;

#[cfg(test)]
mod tests {
    use super::*;

    /// Events of (class, proc, nr, latency), each of `latency / 10` bytes, of pid `100 + proc`.
    fn chunk(events: &[(u8, u32, u32, u64)]) -> Columns {
        let mut cols = Columns::default();
        for &(class, proc, nr, latency) in events {
            cols.push(&Event {
                class: Class::from_code(u64::from(class)).unwrap(),
                proc,
                pid: 100 + proc,
                nr,
                latency,
                bytes: latency / 10,
                ..Event::default()
            });
        }
        cols
    }

    /// Since 1.16 the pid is part of the key: a process entry whose events carry two pids (a
    /// hand-made capture; the recorder's entries are of one pid each) has a key for each.
    #[test]
    fn a_key_is_of_one_pid() {
        let mut cols = chunk(&[(0, 1, 0, 500), (0, 1, 0, 600), (0, 2, 0, 700)]);
        cols.pid[1] = 7;
        let r = Rollup::of(&cols, 0);
        assert_eq!(r.keys.proc, [1, 1, 2]);
        assert_eq!(r.keys.pid, [101, 7, 102]);
        assert_eq!(r.totals.iter().map(|t| t.count).collect::<Vec<_>>(), [1, 1, 1]);
        let back = Rollup::decode(&encoded(&r), 3, r.with_file).unwrap();
        assert!(back.with_pid);
        assert_eq!(back.keys.pid, [101, 7, 102]);
    }

    /// Since 1.17 the file is part of the key, where that makes at most a key per
    /// [`EVENTS_PER_FILE_KEY`] events and half again as many keys as without; else the rollup
    /// is the one made without files.
    #[test]
    fn a_chunk_of_few_files_has_them_in_its_keys() {
        let n = 10 * EVENTS_PER_FILE_KEY as u32;
        // (processes, files, kept): process `p` reads files `p`, `p + procs`, ... below `files`.
        let cases: [(u32, u32, bool); 4] = [(10, 10, true), (11, 11, false), (2, 3, true), (2, 4, false)];
        for (procs, files, kept) in cases {
            let events: Vec<(u8, u32, u32, u64)> = (0..n).map(|i| (0, 1 + i % procs, 0, 1000 + u64::from(i))).collect();
            let mut cols = chunk(&events);
            let files_of = |p: u32| (1..=files).filter(|f| (f - 1) % procs == p).collect::<Vec<u32>>();
            cols.file = (0..n)
                .map(|i| {
                    let of = files_of(i % procs);
                    of[(i / procs) as usize % of.len()]
                })
                .collect();
            let distinct = cols.file.iter().collect::<std::collections::BTreeSet<_>>().len();
            assert_eq!(distinct, files as usize, "{procs} processes, {files} files");
            let r = Rollup::of(&cols, 0);
            let without = Rollup::build(&cols, 0, 0);
            assert!(!without.with_file);
            assert_eq!(r.with_file, kept, "{procs} processes, {files} files");
            assert_eq!(r.holds(key_cols()), kept);
            if kept {
                assert_eq!(r.totals.len(), files as usize);
                let mut files_of_keys = r.keys.file.clone();
                files_of_keys.sort_unstable();
                assert_eq!(files_of_keys, (1..=files).collect::<Vec<_>>());
            } else {
                assert_eq!(r, without, "{procs} processes, {files} files");
            }
            assert_eq!(r.totals.iter().map(|t| t.count).sum::<u64>(), u64::from(n));
            let back = Rollup::decode(&encoded(&r), u64::from(n), r.with_file).unwrap();
            assert_eq!((back.with_file, &back.keys), (r.with_file, &r.keys));
        }
    }

    #[test]
    fn a_rollup_counts_each_key_by_cell_and_reads_back() {
        let mut cols = chunk(&[
            (0, 1, 0, 500),
            (0, 1, 0, 510),
            (1, 2, 0, 2_000_000),
            (0, 1, 0, 90),
            (0, 3, 1, 7),
        ]);
        cols.file = vec![5, 5, 6, 5, 7];
        // With its files, whatever the chunk's size (`of` keeps them for a key per 64 events).
        let r = Rollup::build(&cols, 4096, usize::MAX);
        assert_eq!(r.totals.len(), 3);
        assert_eq!(r.keys.proc, [1, 2, 3]);
        assert!(r.with_file);
        assert_eq!(r.keys.file, [5, 6, 7]);
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
        // 500 and 510 share a bucket, but 501 (a column bound) parts them.
        assert_eq!(r.cells[1..3], [(cell(500), 1), (cell(510), 1)]);
        assert_eq!(cell(500) / 2, cell(510) / 2);
        assert!(r.has_cell_totals());
        let ct = |min, max, sum, bytes| CellTotals { min, max, sum, bytes };
        assert_eq!(
            r.cell_totals,
            [
                ct(90, 90, 90, 9),
                ct(500, 500, 500, 50),
                ct(510, 510, 510, 51),
                ct(2_000_000, 2_000_000, 2_000_000, 200_000),
                ct(7, 7, 7, 0)
            ]
        );
        // The rollup's frame holds no cells' totals: they have their own.
        let raw = encoded(&r);
        let back = Rollup::decode(&raw, 5, true).unwrap();
        assert!(!back.has_cell_totals());
        let mut cells = Vec::new();
        assert!(r.encode_cell_totals(&mut cells));
        let back = with_cells(&back, &cells).unwrap();
        assert_eq!(back, r);
        let without = |cols: &[Col]| ColSet(key_cols().0 & !cols.iter().copied().collect::<ColSet>().0);
        // As 1.16 wrote it (and 1.17 for a chunk of many files), without files: the pids end
        // the entries, and the keys hold every column but the file.
        let mut v16 = r.clone();
        v16.with_file = false;
        let v16_raw = encoded(&v16);
        assert_eq!(v16_raw, raw[..v16_raw.len()], "the files come after the pids");
        let mut v16_read = v16.clone();
        v16_read.cell_totals.clear();
        v16_read.keys.file.fill(0);
        assert_eq!(Rollup::decode(&v16_raw, 5, false), Some(v16_read));
        // A file rollup's entries go on to the files, and only a file rollup's do.
        assert_eq!(Rollup::decode(&v16_raw, 5, true), None);
        assert_eq!(Rollup::decode(&raw, 5, false), None);
        assert!(r.holds(key_cols()) && !v16.holds(key_cols()));
        assert!(v16.holds(without(&[Col::File])));
        assert!(!r.holds(ColSet::NONE.with(Col::Fd)));
        // As 1.13 to 1.15 wrote it, without pids: the bytes end the entries, and the keys
        // hold every column but the pid and the file.
        let mut v15 = v16.clone();
        v15.with_pid = false;
        let v15_raw = encoded(&v15);
        assert_eq!(v15_raw, raw[..v15_raw.len()], "the pids come after the bytes");
        let mut v15_read = v15.clone();
        v15_read.cell_totals.clear();
        v15_read.keys.pid.fill(0);
        v15_read.keys.file.fill(0);
        assert_eq!(Rollup::decode(&v15_raw, 5, false), Some(v15_read));
        assert_eq!(Rollup::decode(&v15_raw, 5, true), None);
        assert!(!v15.holds(without(&[Col::File])));
        assert!(v15.holds(without(&[Col::Pid, Col::File])));
        // As 1.12 wrote it, without bytes: the keys end the entries.
        let mut v12 = r.clone();
        v12.with_bytes = false;
        v12.with_pid = false;
        v12.with_file = false;
        v12.keys.pid.fill(0);
        v12.keys.file.fill(0);
        let v12_raw = encoded(&v12);
        assert_eq!(v12_raw, raw[..v12_raw.len()], "the bytes come after every key");
        for t in &mut v12.totals {
            t.bytes = 0;
        }
        v12.cell_totals.clear();
        assert_eq!(Rollup::decode(&v12_raw, 5, false), Some(v12.clone()));
        assert_eq!(Rollup::decode(&v12_raw, 5, true), None);
        // Cells' totals need the bytes they add up to.
        assert_eq!(with_cells(&v12, &cells), None);
        // The wrong event count, or any other byte cut (inside a key, inside the bytes), is
        // not a rollup; nor is anything after the bytes.
        assert_eq!(Rollup::decode(&raw, 4, true), None);
        let whole = [v12_raw.len(), v15_raw.len(), v16_raw.len()];
        for cut in 0..raw.len() {
            assert_eq!(Rollup::decode(&raw[..cut], 5, true), None, "cut at {cut}");
            if !whole.contains(&cut) {
                assert_eq!(Rollup::decode(&raw[..cut], 5, false), None, "cut at {cut}");
            }
        }
        let mut long = raw.clone();
        long.push(1);
        assert_eq!(Rollup::decode(&long, 5, true), None);
        assert_eq!(Rollup::decode(&long, 5, false), None);
        // Nor are cells' totals cut anywhere, or longer, or another chunk's.
        for cut in 0..cells.len() {
            assert_eq!(with_cells(&v12_read(&raw), &cells[..cut]), None, "cut at {cut}");
        }
        let mut long = cells.clone();
        long.push(0);
        assert_eq!(with_cells(&v12_read(&raw), &long), None);
        let mut other = r.clone();
        other.chunk += 1;
        other.cell_totals.clear();
        assert_eq!(with_cells(&other, &cells), None);
    }

    /// The file rollup in `raw` (a chunk of 5 events), as read: without its cells' totals.
    fn v12_read(raw: &[u8]) -> Rollup {
        Rollup::decode(raw, 5, true).unwrap()
    }

    /// `r` with the cells' totals of frame `raw`, decoded; `None` when they do not hold.
    fn with_cells(r: &Rollup, raw: &[u8]) -> Option<Rollup> {
        let mut r = r.clone();
        r.take_cell_frame(raw).then_some(())?;
        r.into_decoded()
    }

    fn encoded(r: &Rollup) -> Vec<u8> {
        let mut raw = Vec::new();
        r.encode(&mut raw);
        raw
    }

    #[test]
    fn a_cell_s_totals_are_its_own_events() {
        // Three cells of one key, one of two events; another key's cell of three.
        let cols = chunk(&[
            (0, 1, 0, 1_000_000),
            (0, 1, 0, 1_010_000),
            (0, 1, 0, 20),
            (0, 1, 0, 5_000_000_000),
            (1, 2, 0, 4096),
            (1, 2, 0, 4100),
            (1, 2, 0, 4097),
        ]);
        let r = Rollup::of(&cols, 0);
        assert_eq!(r.cells_of(0).len(), 3);
        let at = r.cells.iter().position(|&(c, _)| c == cell(1_000_000)).unwrap();
        assert_eq!(r.cells[at], (cell(1_010_000), 2));
        assert_eq!(
            r.cell_totals[at],
            CellTotals {
                min: 1_000_000,
                max: 1_010_000,
                sum: 2_010_000,
                bytes: 201_000,
            }
        );
        assert_eq!(r.cells_of(1), [(cell(4096), 3)]);
        assert_eq!(r.cell_totals[3].sum, 4096 + 4100 + 4097);
        let back = |r: &Rollup| {
            let back = Rollup::decode(&encoded(r), 7, r.with_file)?;
            let mut cells = Vec::new();
            r.encode_cell_totals(&mut cells);
            with_cells(&back, &cells)
        };
        assert_eq!(back(&r), Some(r.clone()));
        // Totals that do not add up to the key's, or lie outside their cell, are refused.
        let refused = |f: &dyn Fn(&mut Rollup)| {
            let mut bad = r.clone();
            f(&mut bad);
            back(&bad)
        };
        assert_eq!(refused(&|b| b.cell_totals[at].bytes += 1), None, "bytes past the key's");
        assert_eq!(refused(&|b| b.cell_totals[at].sum += 1), None, "sum past the key's");
        assert_eq!(
            refused(&|b| b.cell_totals[at].max = 1_200_000),
            None,
            "max past its cell"
        );
        assert_eq!(refused(&|b| b.cell_totals[0].min = 21), None, "min not the key's");
        // Decoded for some keys only: the others' are neither read nor checked.
        let mut bad = r.clone();
        bad.cell_totals[3].bytes += 1;
        let mut frame = Vec::new();
        bad.encode_cell_totals(&mut frame);
        let mut read = Rollup::decode(&encoded(&r), 7, r.with_file).unwrap();
        assert!(read.take_cell_frame(&frame));
        assert_eq!(read.cell_totals_where(|_| true), None, "key 1's bytes do not add up");
        let first = read.cell_totals_where(|k| k == 0).unwrap();
        assert_eq!(first[..3], r.cell_totals[..3]);
        assert_eq!(first[3].bytes, 0, "key 1's left out");
        // Latencies of centuries in one cell: its sum past its smallest does not fit, and
        // the rollup goes without cells' totals (a reader then reads the chunk).
        let top = latency::bucket_range(BUCKETS - 1).0;
        let huge: Vec<_> = (0..40).flat_map(|_| [(0, 1, 0, top), (0, 1, 0, u64::MAX)]).collect();
        let mut cols = chunk(&huge);
        cols.bytes.iter_mut().for_each(|b| *b = 1);
        let r = Rollup::of(&cols, 0);
        assert_eq!((r.cells.len(), r.totals[0].bytes), (1, 80));
        assert!(!r.has_cell_totals());
        assert!(!r.encode_cell_totals(&mut Vec::new()));
        assert_eq!(Rollup::decode(&encoded(&r), 80, r.with_file), Some(r));
    }

    #[test]
    fn a_cell_s_range_is_what_lands_in_it() {
        let mut seen = vec![(u64::MAX, 0u64); 2 * BUCKETS];
        let values = (0..3_000_000u64)
            .step_by(7)
            .chain((0..64).flat_map(|s| [(1u64 << s) - 1, 1u64 << s, (1u64 << s) + 1]))
            .chain(
                latency::column_bounds()
                    .iter()
                    .flat_map(|&b| [b.saturating_sub(1), b, b + 1]),
            )
            .chain([u64::MAX]);
        for ns in values {
            let c = usize::from(cell(ns));
            let (lo, hi) = cell_range(c as u16);
            assert!(lo <= ns && ns <= hi, "{ns} in cell {c}: {lo}..={hi}");
            seen[c] = (seen[c].0.min(ns), seen[c].1.max(ns));
        }
        // Its bounds are latencies of the cell themselves.
        for c in 0..2 * BUCKETS as u16 {
            let (lo, hi) = cell_range(c);
            if lo <= hi {
                assert_eq!((cell(lo), cell(hi)), (c, c), "cell {c}: {lo}..={hi}");
            }
        }
        assert!(cell_range(2 * BUCKETS as u16).0 > cell_range(2 * BUCKETS as u16).1);
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
            Rollup::decode(&raw, 2, r.with_file)
        };
        assert!(good(&r).is_some());
        r.totals[0].min = 400_000;
        assert_eq!(good(&r), None, "min past its first cell");
        r.totals[0].min = 500;
        r.totals[0].sum = 5;
        assert_eq!(good(&r), None, "sum below count × min");
    }
}
