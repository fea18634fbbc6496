//! Group-by: events split by the value of a field, each group with its count, bytes and
//! latency histogram, and the top groups by count.
//!
//! Two halves. [`FieldGroups`] is what a scan thread feeds, one chunk at a time: it tells
//! events apart by a cheap key read from the columns (a process table id, the file a file entry
//! refers to, a syscall number; `group/key.rs`), never by printing a value per event, and keeps
//! one sample event per key.
//! [`FieldGroups::finish`] prints each key's value once and merges keys of equal value into a
//! [`GroupBy`], the groups by value, which gives the top groups. `iocap report --by` and the
//! viewer's breakdown are the same computation.

pub mod key;
mod table;

use std::cell::RefCell;
use std::collections::hash_map::{Entry, HashMap};
use std::fmt::Write as _;
use std::hash::Hash;

use iocap_filter::fields::{self, FieldInfo, Value};
use iocap_filter::Bitmap;
use iocap_format::{ColSet, Columns, Event, Meta, Tables};

use crate::hist::LatencyHist;
use key::{IdCol, KeyOf};
pub use table::{IdHasher, Slots};

/// One group's totals.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Group {
    /// Bytes transferred by the group's events.
    pub bytes: u64,
    /// Latencies of the group's events, ns; its count is the group's event count.
    pub hist: LatencyHist,
    /// Its calls' latency split into disk time and the rest, when the caller adds them
    /// ([`DiskSplit::add`]; the viewer's breakdown does on demand).
    pub disk: DiskSplit,
}

/// Where the latency of some calls (syscalls, io_uring requests) went: the time during which
/// block requests they issued were in flight (`disk.time`) and the rest. Block requests
/// themselves are not calls: their latency is all device time.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DiskSplit {
    /// Calls added.
    pub calls: u64,
    /// Their latencies summed, ns (saturating).
    pub latency: u64,
    /// Their `disk.time` summed, ns (saturating), each at most its call's latency.
    pub disk: u64,
    /// Their `runq.time` summed, ns (saturating), when the caller adds the anatomy.
    pub runq: u64,
    /// Their `wait.time` by reason (`wait.disk` ... `wait.other`, as [`Event::wait_by`]
    /// orders them), summed.
    ///
    /// [`Event::wait_by`]: iocap_format::Event::wait_by
    pub wait: [u64; iocap_format::WAIT_COLS.len()],
}

impl DiskSplit {
    /// Add a call of `latency` ns, `disk_time` ns of which its block requests were in flight.
    /// A disk time beyond the latency (a damaged or hostile capture) counts as the latency.
    #[inline]
    pub fn add(&mut self, latency: u64, disk_time: u64) {
        self.calls += 1;
        self.latency = self.latency.saturating_add(latency);
        self.disk = self.disk.saturating_add(disk_time.min(latency));
    }

    /// Add the anatomy of a call added ([`DiskSplit::add`]): its run queue time and its wait by
    /// reason.
    #[inline]
    pub fn add_anatomy(&mut self, runq: u64, wait: [u64; iocap_format::WAIT_COLS.len()]) {
        self.runq = self.runq.saturating_add(runq);
        for (sum, w) in self.wait.iter_mut().zip(wait) {
            *sum = sum.saturating_add(w);
        }
    }

    /// The part of the calls' summed latency that is the largest: on a CPU (`cpu`), in the run
    /// queue (`runq`) or blocked for a reason (`journal` ...), and its time; `None` without
    /// calls.
    pub fn main_part(&self) -> Option<(&'static str, u64)> {
        let waited: u64 = self.wait.iter().fold(0, |a, &w| a.saturating_add(w));
        let cpu = self.latency.saturating_sub(self.runq).saturating_sub(waited);
        let reasons = iocap_format::Reason::ALL[1..].iter().map(|r| r.name()).zip(self.wait);
        let parts = [("cpu", cpu), ("runq", self.runq)].into_iter().chain(reasons);
        // The first of equals: the latest `max_by_key` keeps is the first of the reversed.
        let best = parts.collect::<Vec<_>>().into_iter().rev().max_by_key(|&(_, t)| t);
        best.filter(|_| self.calls > 0)
    }

    /// The calls' latency outside disk time, ns.
    pub fn other(&self) -> u64 {
        self.latency.saturating_sub(self.disk)
    }

    /// Add the calls of `other`.
    pub fn merge(&mut self, other: &DiskSplit) {
        self.calls = self.calls.saturating_add(other.calls);
        self.latency = self.latency.saturating_add(other.latency);
        self.disk = self.disk.saturating_add(other.disk);
        self.add_anatomy(other.runq, other.wait);
    }
}

impl Group {
    /// Number of events in the group.
    pub fn count(&self) -> u64 {
        self.hist.count()
    }

    /// Add every event of `other`.
    pub fn merge(&mut self, other: &Group) {
        self.bytes = self.bytes.saturating_add(other.bytes);
        self.hist.merge(&other.hist);
        self.disk.merge(&other.disk);
    }
}

/// Groups by key. Keys are whatever the caller extracts per event (a field's display value).
#[derive(Clone, Debug)]
pub struct GroupBy<K> {
    groups: HashMap<K, Group>,
}

impl<K> Default for GroupBy<K> {
    fn default() -> Self {
        GroupBy { groups: HashMap::new() }
    }
}

impl<K: Hash + Eq + Ord + Clone> GroupBy<K> {
    /// No groups.
    pub fn new() -> Self {
        GroupBy::default()
    }

    /// Count one event of group `key`.
    pub fn add(&mut self, key: K, latency: u64, bytes: u64) {
        let g = self.groups.entry(key).or_default();
        g.bytes = g.bytes.saturating_add(bytes);
        g.hist.add(latency);
    }

    /// Count one event of the group `key` borrows from, cloning the key only for a new group.
    pub fn add_ref<Q>(&mut self, key: &Q, latency: u64, bytes: u64)
    where
        K: std::borrow::Borrow<Q>,
        Q: Hash + Eq + ToOwned<Owned = K> + ?Sized,
    {
        if let Some(g) = self.groups.get_mut(key) {
            g.bytes = g.bytes.saturating_add(bytes);
            g.hist.add(latency);
        } else {
            self.add(key.to_owned(), latency, bytes);
        }
    }

    /// Add the events of `group` to group `key`.
    pub fn add_group(&mut self, key: K, group: Group) {
        match self.groups.entry(key) {
            Entry::Occupied(mut e) => e.get_mut().merge(&group),
            Entry::Vacant(e) => {
                e.insert(group);
            }
        }
    }

    /// Add every group of `other` to the group of the same key.
    pub fn merge(&mut self, other: GroupBy<K>) {
        for (k, g) in other.groups {
            self.add_group(k, g);
        }
    }

    /// Number of distinct keys.
    pub fn len(&self) -> usize {
        self.groups.len()
    }

    /// Whether there is no group (no event was counted).
    pub fn is_empty(&self) -> bool {
        self.groups.is_empty()
    }

    /// The group of `key`; `None` when no event had it.
    pub fn get(&self, key: &K) -> Option<&Group> {
        self.groups.get(key)
    }

    /// Every group, in no particular order.
    pub fn iter(&self) -> impl Iterator<Item = (&K, &Group)> {
        self.groups.iter()
    }

    /// Every group, taken, in no particular order.
    pub fn into_groups(self) -> impl Iterator<Item = (K, Group)> {
        self.groups.into_iter()
    }

    /// The `n` groups with the most events, most first; ties by key, so the order is
    /// deterministic.
    pub fn top(&self, n: usize) -> Vec<(&K, &Group)> {
        let mut all: Vec<(&K, &Group)> = self.groups.iter().collect();
        all.sort_by(|a, b| b.1.count().cmp(&a.1.count()).then_with(|| a.0.cmp(b.0)));
        all.truncate(n);
        all
    }
}

/// A scan's loop over one chunk's matching rows, given each row's group key: implemented by
/// the caller, and called by [`FieldGroups::feed`] with the key function that suits the field
/// and the chunk, so that the loop is compiled for each and a key costs a load, not a call.
pub trait Feed {
    /// What feeding one chunk's rows returns to the scan.
    type Out;

    /// Take the rows, adding row `i` to `groups.get(key(i), || sample of row i)`.
    fn feed<K: Fn(usize) -> u64>(self, key: K, groups: &mut Slots) -> Self::Out;
}

/// Events split by the value of `field`, as one scan thread sees them (see the module's doc).
pub struct FieldGroups<'a> {
    field: &'static FieldInfo,
    key: KeyOf,
    meta: &'a Meta,
    tables: &'a Tables,
    slots: Slots,
    /// Printed values seen, for a field keyed by its printed value ([`KeyOf::Printed`]): the
    /// key is the index. Behind a cell, as the key function reads it while the groups are fed.
    printed: RefCell<Interner>,
    /// The event-type keys of a chunk's rows ([`key::small_type_keys`]).
    type_keys: Vec<u16>,
}

impl<'a> FieldGroups<'a> {
    /// No groups yet, by `field`, for a capture with these `meta` and `tables`.
    pub fn new(field: &'static FieldInfo, meta: &'a Meta, tables: &'a Tables) -> FieldGroups<'a> {
        FieldGroups {
            field,
            key: KeyOf::of(field),
            meta,
            tables,
            slots: Slots::default(),
            printed: RefCell::default(),
            type_keys: Vec::new(),
        }
    }

    /// The columns to decode for grouping by `field`.
    pub fn columns(field: &FieldInfo) -> ColSet {
        KeyOf::of(field).columns()
    }

    /// Feed the rows of chunk `cols` whose `bits` are set through `f`, with the key function
    /// that suits the field.
    #[inline]
    pub fn feed<F: Feed>(&mut self, cols: &Columns, bits: &Bitmap, f: F) -> F::Out {
        let FieldGroups {
            field,
            key,
            meta,
            tables,
            slots,
            printed,
            type_keys,
        } = self;
        let (key, field, meta, tables) = (*key, *field, *meta, *tables);
        if key == KeyOf::Id(IdCol::File) {
            // By the file an entry refers to, not the entry: a tree walk has one per open
            // (546,464 in a recording of tar and find, of 25,157 files).
            let ids = &cols.file;
            return f.feed(|i| ids.get(i).map_or(0, |&x| tables.file_key(x)), slots);
        }
        if let Some(ids) = key.id_column(cols) {
            return f.feed(|i| ids.get(i).map_or(0, |&x| u64::from(x)), slots);
        }
        match key {
            // When most rows match, the keys are built for every row in loops of their own
            // ahead of the per-event work; for a few, only theirs are.
            KeyOf::EventType if bits.count_ones() >= cols.len() / 2 && key::small_type_keys(cols, type_keys) => {
                let keys = &type_keys[..];
                f.feed(|i| keys.get(i).map_or(0, |&k| u64::from(k)), slots)
            }
            KeyOf::Printed(_) => f.feed(
                |i| {
                    let v = fields::value(field, &cols.event(i), meta, tables);
                    printed.borrow_mut().key(&v)
                },
                slots,
            ),
            _ => f.feed(|i| key.key(cols, i), slots),
        }
    }

    /// Add the groups another thread fed.
    pub fn merge(&mut self, other: FieldGroups<'a>) {
        // Printed values are numbered per thread: theirs are numbered again here.
        let interner = other.printed.into_inner();
        let theirs = interner.by_key();
        for (k, g, e) in other.slots.slots {
            let k = match self.key {
                KeyOf::Printed(_) => self.printed.get_mut().key_of_text(theirs[k as usize]),
                _ => k,
            };
            self.slots.add(k, g, e);
        }
    }

    /// The groups by value, each key's value printed once by `name` (which may print an
    /// absent value its own way).
    pub fn finish(self, name: impl Fn(&Value) -> String) -> GroupBy<String> {
        self.finish_by(|v, _| name(v))
    }

    /// The groups by what `key` makes of each key's value and one event of it (the first seen
    /// by the thread that saw it first), called once per key: a value with what is known beside
    /// it (a pid's process name). Keys of equal result are merged.
    pub fn finish_by<K: Hash + Eq + Ord + Clone>(self, key: impl Fn(&Value, &Event) -> K) -> GroupBy<K> {
        let mut by = GroupBy::new();
        for (_, g, e) in self.slots.slots {
            by.add_group(key(&fields::value(self.field, &e, self.meta, self.tables), &e), g);
        }
        by
    }
}

/// Printed values numbered in order of first appearance.
#[derive(Default)]
struct Interner {
    ids: HashMap<Box<str>, u64>,
    /// What the value being numbered prints, reused from one event to the next.
    buf: String,
}

impl Interner {
    /// The number of `v`, as printed (absent apart from an empty string).
    fn key(&mut self, v: &Value) -> u64 {
        let mut buf = std::mem::take(&mut self.buf);
        buf.clear();
        buf.push(if v.is_absent() { '-' } else { '=' });
        let _ = write!(buf, "{v}");
        let k = self.key_of_text(&buf);
        self.buf = buf;
        k
    }

    fn key_of_text(&mut self, text: &str) -> u64 {
        if let Some(&k) = self.ids.get(text) {
            return k;
        }
        let k = self.ids.len() as u64;
        self.ids.insert(text.into(), k);
        k
    }

    /// Every text, at its number.
    fn by_key(&self) -> Vec<&str> {
        let mut texts = vec![""; self.ids.len()];
        for (t, &k) in &self.ids {
            texts[k as usize] = t;
        }
        texts
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use iocap_format::{mkdev, Class, Event, FdType, FileEntry, ProcEntry, Reader, Writer, WriterOptions};

    /// Processes sharing a name, files, failed calls, block requests on two disks.
    fn capture() -> Reader<Vec<u8>> {
        let meta = Meta {
            arch: "x86_64".into(),
            start_ts: 1_000,
            devices: vec![iocap_format::Device {
                dev: mkdev(254, 0),
                name: "vda".into(),
            }],
            ..Meta::default()
        };
        let opts = WriterOptions {
            chunk_events: 64,
            ..WriterOptions::default()
        };
        let mut w = Writer::new(Vec::new(), &meta, opts).unwrap();
        let (pg, fio) = (w.intern(b"postgres"), w.intern(b"fio"));
        let procs: Vec<u32> = [(10, pg), (11, pg), (12, fio)]
            .into_iter()
            .map(|(pid, name)| {
                w.add_proc(ProcEntry {
                    pid,
                    ppid: 1,
                    name,
                    ..ProcEntry::default()
                })
            })
            .collect();
        let names = [w.intern(b"/var/lib/a"), w.intern(b"/data/b"), w.intern(b"")];
        let files: Vec<u32> = names
            .iter()
            .enumerate()
            .map(|(i, &name)| {
                w.add_file(FileEntry {
                    pid: 10,
                    fd: 3 + i as i32,
                    kind: if i == 2 { FdType::Pipe } else { FdType::File },
                    name,
                    dev: if i == 0 { mkdev(254, 0) } else { 0 },
                    ..FileEntry::default()
                })
            })
            .collect();
        for i in 0..1_000u64 {
            let p = (i % 3) as usize;
            let e = if i % 7 == 0 {
                Event {
                    class: Class::Block,
                    ts: 1_000 + i * 10,
                    latency: 1_000 + i % 5 * 100,
                    queue: i % 3,
                    pid: 12,
                    tid: 12,
                    proc: procs[2],
                    fd: -1,
                    bytes: 4096 * (1 + i % 2),
                    dev: if i % 2 == 0 { mkdev(254, 0) } else { mkdev(8, 0) },
                    sector: i,
                    op: (i % 3) as u8,
                    flags: (i % 4) as u32,
                    // Issued by a pread64 (17), a write (1), a flusher, nothing.
                    cause: (i % 4) as u8,
                    nr: if i % 3 == 0 { 17 } else { 1 },
                    ..Event::default()
                }
            } else {
                let ret = match i % 5 {
                    0 => -2,
                    1 => -11,
                    _ => (i % 4) as i64 * 512,
                };
                Event {
                    proc: procs[p],
                    fd: if i % 11 == 0 { -1 } else { 3 + (i % 3) as i32 },
                    file: files[(i % 3) as usize],
                    bytes: ret.max(0) as u64,
                    disk_reqs: (i % 3) as u32,
                    disk_bytes: (i % 3) * 4096,
                    ..Event::syscall(
                        1_000 + i * 10,
                        100 + i % 13,
                        10 + p as u32,
                        100 + (i % 4) as u32,
                        (i % 4) as u32,
                        ret,
                    )
                }
            };
            w.push(&e).unwrap();
        }
        Reader::from_bytes(w.finish(20_000).unwrap()).unwrap()
    }

    /// Every row into its group, latency and bytes.
    struct Add<'c>(&'c Columns, &'c Bitmap);

    impl Feed for Add<'_> {
        type Out = ();
        fn feed<K: Fn(usize) -> u64>(self, key: K, groups: &mut Slots) {
            for i in self.1.iter_ones() {
                let g = groups.get(key(i), || self.0.event(i));
                g.hist.add(self.0.latency[i]);
                g.bytes += self.0.bytes[i];
            }
        }
    }

    /// For every field: the groups fed by two threads (chunks split between them) and merged
    /// are those of a plain count by printed value, absent values apart from empty strings.
    #[test]
    fn field_groups_count_by_printed_value_for_every_field() {
        let r = capture();
        let (meta, tables) = (r.meta(), r.tables());
        let name = |v: &Value| {
            if v.is_absent() {
                "<NA>".to_string()
            } else {
                v.to_string()
            }
        };
        for field in fields::all() {
            let mut want = GroupBy::<String>::new();
            let mut threads = [
                FieldGroups::new(field, meta, tables),
                FieldGroups::new(field, meta, tables),
            ];
            let want_cols = FieldGroups::columns(field)
                .with(iocap_format::Col::Latency)
                .with(iocap_format::Col::Bytes);
            let (mut dec, mut all, mut cols) = (Default::default(), Columns::default(), Columns::default());
            for ci in 0..r.chunks().len() {
                r.read_chunk(ci, ColSet::ALL, &mut dec, &mut all).unwrap();
                r.read_chunk(ci, want_cols, &mut dec, &mut cols).unwrap();
                // Every other row, so groups are fed from a bitmap with gaps.
                let mut bits = Bitmap::ones(cols.len());
                for i in (0..cols.len()).step_by(2) {
                    bits.set(i, false);
                }
                for i in bits.iter_ones() {
                    want.add(
                        name(&fields::value(field, &all.event(i), meta, tables)),
                        all.latency[i],
                        all.bytes[i],
                    );
                }
                threads[ci % 2].feed(&cols, &bits, Add(&cols, &bits));
            }
            let [mut a, b] = threads;
            a.merge(b);
            let got = a.finish(name);
            let sorted = |g: &GroupBy<String>| -> Vec<(String, u64, u64)> {
                g.top(usize::MAX)
                    .into_iter()
                    .map(|(k, g)| (k.clone(), g.count(), g.bytes))
                    .collect()
            };
            assert_eq!(sorted(&got), sorted(&want), "{}", field.name);
        }
    }

    #[test]
    fn top_groups_by_count_then_key() {
        let mut a = GroupBy::<String>::new();
        let mut b = GroupBy::<String>::new();
        for (k, lat) in [("cat", 10), ("dd", 1000), ("dd", 3000), ("zsh", 5), ("cat", 20)] {
            a.add_ref(k, lat, 4096);
        }
        b.add("cat".into(), 30, 1);
        b.add("awk".into(), 1, 0);
        a.merge(b);
        let top = a.top(3);
        let keys: Vec<&str> = top.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(keys, ["cat", "dd", "awk"], "3 cats, 2 dds, then awk before zsh by name");
        assert_eq!(top[0].1.count(), 3);
        assert_eq!(top[0].1.bytes, 2 * 4096 + 1);
        assert_eq!(top[1].1.hist.max(), 3000);
        assert_eq!(a.len(), 4);
    }

    /// Disk time is counted up to each call's latency, so the rest never goes below zero;
    /// merging adds.
    #[test]
    fn disk_split_adds_caps_and_merges() {
        let mut a = DiskSplit::default();
        a.add(5_000, 4_000);
        a.add(3_000, 0);
        assert_eq!((a.calls, a.latency, a.disk, a.other()), (2, 8_000, 4_000, 4_000));
        let mut b = DiskSplit::default();
        // A disk time longer than its call (damaged): all of that call is disk time.
        b.add(1_000, 9_000);
        b.add(u64::MAX, u64::MAX);
        assert_eq!((b.calls, b.latency, b.disk, b.other()), (2, u64::MAX, u64::MAX, 0));
        a.merge(&b);
        assert_eq!((a.calls, a.latency, a.disk), (4, u64::MAX, u64::MAX));
        let mut g = Group::default();
        g.disk.add(10, 4);
        let mut h = Group::default();
        h.merge(&g);
        h.merge(&g);
        assert_eq!((h.disk.latency, h.disk.disk, h.disk.other()), (20, 8, 12));
    }

    /// The largest part of the calls' summed latency: a wait's reason, the run queue or the
    /// CPU (the rest), the first of equals; merged sums give the same.
    #[test]
    fn main_part_is_the_largest_of_cpu_runq_and_each_reason() {
        let mut d = DiskSplit::default();
        assert_eq!(d.main_part(), None);
        d.add(10_000, 0);
        d.add_anatomy(1_000, [0, 0, 0, 6_000, 0, 0, 0, 0, 0, 0, 500]);
        assert_eq!(d.main_part(), Some(("journal", 6_000)));
        let mut e = DiskSplit::default();
        e.add(10_000, 0);
        e.add_anatomy(9_000, [0; 11]);
        d.merge(&e);
        assert_eq!((d.runq, d.wait[3]), (10_000, 6_000));
        assert_eq!(d.main_part(), Some(("runq", 10_000)));
        // cpu 3,500 of 20,000 against runq 10,000; equal parts: the first named.
        let mut f = DiskSplit::default();
        f.add(2_000, 0);
        f.add_anatomy(1_000, [0; 11]);
        assert_eq!(f.main_part(), Some(("cpu", 1_000)));
    }
}
