//! The tables events refer to (strings, processes, files, devices, stacks) and their frames.
//!
//! Table frames are appended as entries appear, always before the first chunk that refers to
//! them. A reader merges every table frame into one [`Tables`]. Strings are escaped here, once,
//! as they are decoded (see [`crate::escape`]), so nothing downstream sees raw host bytes.
//! Writers since 1.1 store strings prefix-coded (kind 9) and files field by field (kind 10);
//! the 1.0 kinds (2 and 4, one whole entry after another) are still read.
//!
//! A few bytes of a table frame can describe a lot: a zstd frame expands up to 32 768 times,
//! a prefix-coded string repeats the one before it, and escaping makes a byte up to four. So
//! what the tables may hold is limited, checked before each allocation: one string at most
//! [`MAX_STRING`] bytes (a longer one is left out), and all the tables together, decoded, at
//! most [`table_budget`] of the file's size ([`crate::Error::OverLimit`] past either).

use std::collections::HashMap;

use crate::error::Limit;
use crate::escape::escape;
use crate::model::{
    ContainerEntry, Device, FdTarget, FdType, FileEntry, ProcEntry, Stack, StackFrame, StackKind, StrId,
};
use crate::varint::{self, Cursor};

/// The longest string a table may hold, in bytes before escaping. Strings are process names
/// (16 bytes), paths (the kernel's PATH_MAX is 4 096; the recorder joins a working directory of
/// up to that with a relative path of up to 256 bytes), socket names (under 128), device names
/// (32) and command lines, which the recorder reads from `/proc` whole and [`crate::Writer`]
/// cuts to this length (an older writer did not). The reader leaves a longer string out (its
/// id reads as `""`, the frame's other entries are read) and reports the frame
/// ([`crate::Limit::String`]).
pub const MAX_STRING: usize = 8 << 10;

/// The most the decoded tables of any capture may take: 1 GiB. That is ten million files with
/// 50-byte paths, more than a day of a whole busy machine opens; past it a capture is refused
/// the rest of its tables (its events still read) rather than take the memory.
pub const MAX_TABLE_BYTES: u64 = 1 << 30;

/// Decoded tables any capture may have, however small: 16 MiB, the tables of 100 000 files (a
/// `/proc` seed of a busy machine, or a tree walk) whatever their paths compress to.
pub const TABLE_BUDGET_FLOOR: u64 = 16 << 20;

/// How many bytes of decoded tables each byte of a file may bring on top of the floor.
/// Prefix coding and zstd store a regular table in very few bytes: measured on synthetic tree
/// walks (`bombs::real_tables_fit_the_budget` in the format tests), decoded tables
/// took 5 to 10 bytes per byte of the file with 40-byte paths, 59 with 1 KiB paths and 213
/// with 4 KiB paths, when every file is also opened, read and closed; a capture of tables alone
/// (the recorder's start, before events), 9 to 102 with 40-byte paths and 590 with 1 KiB ones,
/// which the floor covers up to its 16 MiB. So a small crafted file cannot take more than the
/// floor and a fraction of a MB (8 KB: 18 MiB), and memory stays proportional to a file's size.
pub const TABLE_BYTES_PER_FILE_BYTE: u64 = 256;

/// What a string costs in the budget besides its escaped bytes: its span and index slot
/// (24 bytes, in vectors that may have doubled; the figure is from when each string was a
/// `String` in a hash map, and left as it was, so the budget's limits did not move).
const STRING_COST: u64 = 64;
/// What a process, file or device entry costs in the budget: the entry, its slot in the
/// vector (which may have doubled) and in the index (as [`STRING_COST`], an older figure).
const ENTRY_COST: u64 = 96;
/// What a stack's frame costs in the budget, on top of the stack's [`ENTRY_COST`].
const FRAME_COST: u64 = 24;

/// The most frames a stack table entry may hold (the recorder keeps 64; the kernel's own
/// limit, `kernel.perf_event_max_stack`, is 127 by default).
pub const MAX_STACK_FRAMES: usize = 1024;

/// The largest string, process, file and stack ids of [`Tables`] (0 where none): the shift a
/// joined reader gives the next file's ids.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct MaxIds {
    pub strings: u32,
    pub procs: u32,
    pub files: u32,
    pub stacks: u32,
    pub containers: u32,
}

impl MaxIds {
    /// Whether every id of `other`, moved up by these, still fits a u32.
    pub(crate) fn fit(&self, other: &MaxIds) -> bool {
        let fits = |by: u32, max: u32| by.checked_add(max).is_some();
        fits(self.strings, other.strings)
            && fits(self.procs, other.procs)
            && fits(self.files, other.files)
            && fits(self.stacks, other.stacks)
            && fits(self.containers, other.containers)
    }
}

/// The budget of decoded tables for a file of `file_len` bytes: [`TABLE_BUDGET_FLOOR`] and
/// [`TABLE_BYTES_PER_FILE_BYTE`] per byte, at most [`MAX_TABLE_BYTES`].
pub fn table_budget(file_len: u64) -> u64 {
    file_len
        .saturating_mul(TABLE_BYTES_PER_FILE_BYTE)
        .saturating_add(TABLE_BUDGET_FLOOR)
        .min(MAX_TABLE_BYTES)
}

/// Why a table frame was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum TableError {
    /// Entries that do not decode (a count over the bytes, an out-of-range field, bytes left).
    Corrupt,
    /// A limit passed: `len` bytes where `max` are allowed.
    Over { limit: Limit, len: u64, max: u64 },
}

/// All table entries of a capture, by id.
#[derive(Clone, Debug)]
pub struct Tables {
    strings: Strings,
    procs: Vec<ProcEntry>,
    proc_index: Ids<u32>,
    files: Files,
    devices: Vec<Device>,
    device_index: HashMap<u32, usize>,
    stacks: Vec<(u32, Stack)>,
    stack_index: Ids<u32>,
    containers: Vec<ContainerEntry>,
    container_index: Ids<u32>,
    /// Bytes of decoded tables allowed, and counted so far (never given back when an entry is
    /// replaced: a file that rewrites one id over and over uses its budget up too).
    budget: u64,
    used: u64,
}

impl Default for Tables {
    fn default() -> Self {
        Tables::with_budget(MAX_TABLE_BYTES)
    }
}

impl Tables {
    /// Empty tables that may grow to `budget` bytes decoded (see [`table_budget`]).
    pub(crate) fn with_budget(budget: u64) -> Tables {
        Tables {
            strings: Strings::default(),
            procs: Vec::new(),
            proc_index: Ids::default(),
            files: Files::default(),
            devices: Vec::new(),
            device_index: HashMap::new(),
            stacks: Vec::new(),
            stack_index: Ids::default(),
            containers: Vec::new(),
            container_index: Ids::default(),
            budget,
            used: 0,
        }
    }

    /// Keep each file entry's process, fd and opening time too ([`Tables::file_entries`]),
    /// not only what it refers to: for a reader that writes the entries again.
    pub(crate) fn keep_file_details(&mut self) {
        self.files.details.get_or_insert_with(HashMap::new);
    }

    /// Whether [`Tables::keep_file_details`] was asked.
    pub(crate) fn keeps_file_details(&self) -> bool {
        self.files.details.is_some()
    }

    /// Let the tables grow to `budget` bytes when that is more than they may now: a file read
    /// as it is written has the [`table_budget`] of its length so far.
    pub(crate) fn raise_budget(&mut self, budget: u64) {
        self.budget = self.budget.max(budget);
    }

    /// Bytes of the budget left: a table frame decompressing to more than this is refused
    /// before it is decompressed (its entries would take at least as much).
    pub(crate) fn budget_left(&self) -> u64 {
        self.budget - self.used
    }

    /// Bytes of decoded tables counted so far (strings escaped, and a fixed cost per entry),
    /// and the most this capture's tables may take ([`table_budget`] of its size).
    pub fn budget_used(&self) -> (u64, u64) {
        (self.used, self.budget)
    }

    /// Count `bytes` more against the budget, or refuse them.
    fn charge(&mut self, bytes: u64) -> Result<(), TableError> {
        let used = self.used.saturating_add(bytes);
        if used > self.budget {
            return Err(TableError::Over {
                limit: Limit::Tables,
                len: used,
                max: self.budget,
            });
        }
        self.used = used;
        Ok(())
    }

    /// The (escaped) string with this id; `""` for 0 or an id the file never defined.
    pub fn string(&self, id: StrId) -> &str {
        self.strings.get(id)
    }

    /// The process entry with this id ([`Event::proc`](crate::Event::proc)); `None` for 0 or
    /// an id the file never defined.
    pub fn proc(&self, id: u32) -> Option<&ProcEntry> {
        self.proc_index.get(id).map(|i| &self.procs[i as usize])
    }

    /// What the file entry with this id ([`Event::file`](crate::Event::file)) refers to;
    /// `None` for 0 or an id the file never defined.
    pub fn file(&self, id: u32) -> Option<FdTarget> {
        self.files.ids.get(id).map(|at| self.files.targets[at as usize])
    }

    /// Every process entry, in the order the file defined them.
    pub fn procs(&self) -> &[ProcEntry] {
        &self.procs
    }

    /// The container entry with this id ([`ProcEntry::container`]); `None` for 0 or an id
    /// the file never defined.
    pub fn container(&self, id: u32) -> Option<&ContainerEntry> {
        self.container_index.get(id).map(|i| &self.containers[i as usize])
    }

    /// Every container entry, in the order the file defined them.
    pub fn containers(&self) -> &[ContainerEntry] {
        &self.containers
    }

    /// Which file the file entry `id` refers to, as a number: equal for entries that refer to
    /// the same one ([`FdTarget`]), 0 for 0 or an id the file never defined. A breakdown by a
    /// file's field keys its groups by it: one per file, not per open.
    #[inline]
    pub fn file_key(&self, id: u32) -> u64 {
        self.files.ids.get(id).map_or(0, |at| u64::from(at) + 1)
    }

    /// Every file entry's id and what it refers to, in no particular order.
    pub fn files(&self) -> impl Iterator<Item = (u32, FdTarget)> + '_ {
        self.files
            .ids
            .iter()
            .map(|(id, at)| (id, self.files.targets[at as usize]))
    }

    /// How many file entries there are.
    pub fn file_count(&self) -> usize {
        self.files.ids.len()
    }

    /// The ids of the file entries `keep` keeps, in no particular order. What an entry refers
    /// to decides: `keep` is asked once for each distinct [`FdTarget`], with the first id
    /// found of it, and its answer holds for every entry of that target (a tree walk opens
    /// each file again and again: 546,461 entries of 25,157 files in a recording of tar and
    /// find).
    pub fn file_ids_where<'a>(&'a self, mut keep: impl FnMut(u32) -> bool + 'a) -> impl Iterator<Item = u32> + 'a {
        // Per target: not asked yet, or the answer.
        let mut kept: Vec<Option<bool>> = vec![None; self.files.targets.len()];
        self.files.ids.iter().filter_map(move |(id, at)| {
            let k = *kept[at as usize].get_or_insert_with(|| keep(id));
            k.then_some(id)
        })
    }

    /// One file entry's id for each distinct [`FdTarget`], in no particular order.
    pub fn one_file_id_each(&self) -> impl Iterator<Item = u32> + '_ {
        let mut seen = vec![false; self.files.targets.len()];
        self.files
            .ids
            .iter()
            .filter_map(move |(id, at)| (!std::mem::replace(&mut seen[at as usize], true)).then_some(id))
    }

    /// The largest file entry id (0 when none).
    pub fn max_file_id(&self) -> u32 {
        self.files.max_id
    }

    /// Every file entry whole, by id, when the reader was asked to keep them
    /// ([`crate::ReadOptions::file_details`]); `None` when it keeps only what they refer to.
    pub fn file_entries(&self) -> Option<Vec<FileEntry>> {
        let details = self.files.details.as_ref()?;
        let mut all: Vec<FileEntry> = self
            .files()
            .map(|(id, t)| {
                let (pid, fd, open_ts) = details.get(&id).copied().unwrap_or_default();
                FileEntry {
                    id,
                    pid,
                    fd,
                    kind: t.kind,
                    name: t.name,
                    dev: t.dev,
                    open_ts,
                }
            })
            .collect();
        all.sort_by_key(|f| f.id);
        Some(all)
    }

    /// Every block device, one entry per `dev` (a later frame's name replaces an earlier one).
    pub fn devices(&self) -> &[Device] {
        &self.devices
    }

    /// The name of block device `dev` (`vda`), if the capture knows it.
    pub fn device_name(&self, dev: u32) -> Option<&str> {
        self.device_index.get(&dev).map(|&i| self.devices[i].name.as_str())
    }

    /// Number of strings.
    pub fn string_count(&self) -> usize {
        self.strings.len()
    }

    /// The stack with this id ([`Event::stack_user`](crate::Event::stack_user)); `None` for
    /// 0 or an id the file never defined.
    pub fn stack(&self, id: u32) -> Option<&Stack> {
        let i = self.stack_index.get(id)?;
        self.stacks.get(i as usize).map(|(_, s)| s)
    }

    /// What a frame of a `kind` stack is called: its function's name, else its file's
    /// (`[libc.so.6]`, a kernel module's `[ext4]`), else its file's build ID's first 12 digits
    /// (`[build-id:4f2c…]`), else `[unknown]` (`[kernel]` in a kernel stack). Escaped, as every
    /// table string.
    pub fn frame_name(&self, kind: StackKind, f: &StackFrame) -> std::borrow::Cow<'_, str> {
        use std::borrow::Cow;
        let sym = self.string(f.sym);
        if !sym.is_empty() {
            return Cow::Borrowed(sym);
        }
        let module = self.string(f.module);
        let file = module.rsplit('/').next().unwrap_or(module);
        let id = self.string(f.build_id);
        if file.is_empty() && !id.is_empty() {
            let short: String = id.chars().take(12).collect();
            return Cow::Owned(format!("[build-id:{short}…]"));
        }
        match (kind, file) {
            (StackKind::Kernel, "") => Cow::Borrowed("[kernel]"),
            (StackKind::User, "") => Cow::Borrowed("[unknown]"),
            (_, f) if f.starts_with('[') => Cow::Borrowed(f),
            (_, f) => Cow::Owned(format!("[{f}]")),
        }
    }

    /// The names of stack `id`'s frames, outermost first (as a flame graph stacks them);
    /// `None` for 0 or an id the file never defined.
    pub fn stack_names(&self, id: u32) -> Option<Vec<std::borrow::Cow<'_, str>>> {
        let s = self.stack(id)?;
        Some(s.frames.iter().rev().map(|f| self.frame_name(s.kind, f)).collect())
    }

    /// Every stack, with its id, in the order the file defined them.
    pub fn stacks(&self) -> impl Iterator<Item = (u32, &Stack)> + '_ {
        self.stacks.iter().map(|(id, s)| (*id, s))
    }

    /// The largest ids in use (0 where none).
    pub(crate) fn max_ids(&self) -> MaxIds {
        MaxIds {
            strings: self.strings.max_id(),
            procs: self.procs.iter().map(|p| p.id).max().unwrap_or(0),
            files: self.files.max_id,
            stacks: self.stacks.iter().map(|(id, _)| *id).max().unwrap_or(0),
            containers: self.containers.iter().map(|c| c.id).max().unwrap_or(0),
        }
    }

    /// Add every entry of `other` with its ids moved up by `shift` (strings, processes,
    /// files, stacks), so they clash with none of these; devices are merged by number (one
    /// host's). The caller checks that the moved ids fit ([`MaxIds::fit`]). What `other` used
    /// and may use is added to the budget.
    pub(crate) fn add_shifted(&mut self, other: &Tables, shift: MaxIds) {
        let (s, p, f) = (shift.strings, shift.procs, shift.files);
        // A reference past `other`'s strings (a damaged or hostile file's) stays past every
        // string, at most `u32::MAX`: it names none, as in its file.
        let moved = |id: StrId| if id == 0 { 0 } else { id.saturating_add(s) };
        for (id, text) in other.strings.iter() {
            self.strings.insert(moved(id), text);
        }
        for e in &other.procs {
            self.add_proc(ProcEntry {
                id: e.id + p,
                name: moved(e.name),
                exe: moved(e.exe),
                cmdline: moved(e.cmdline),
                user: moved(e.user),
                cgroup: moved(e.cgroup),
                container: if e.container == 0 {
                    0
                } else {
                    e.container.saturating_add(shift.containers)
                },
                ..e.clone()
            });
        }
        for c in &other.containers {
            self.add_container(ContainerEntry {
                id: c.id.saturating_add(shift.containers),
                full_id: moved(c.full_id),
                name: moved(c.name),
                image: moved(c.image),
                pod_name: moved(c.pod_name),
                pod_uid: moved(c.pod_uid),
                namespace: moved(c.namespace),
                ..c.clone()
            });
        }
        for (id, t) in other.files() {
            let details = other.files.details.as_ref().and_then(|d| d.get(&id).copied());
            let t = FdTarget {
                name: moved(t.name),
                ..t
            };
            self.files.add(id + f, t, details);
        }
        for d in &other.devices {
            if self.device_name(d.dev).is_none() {
                self.add_device(d.clone());
            }
        }
        for (id, st) in &other.stacks {
            let frames = st
                .frames
                .iter()
                .map(|fr| StackFrame {
                    sym: moved(fr.sym),
                    module: moved(fr.module),
                    build_id: moved(fr.build_id),
                    ..*fr
                })
                .collect();
            self.add_stack(id.saturating_add(shift.stacks), Stack { kind: st.kind, frames });
        }
        self.budget = self.budget.saturating_add(other.budget);
        self.used = self.used.saturating_add(other.used);
    }

    /// Add (or rename) a device. By an index, like processes and files: the budget lets a
    /// file hold a million devices, which a search per insert would make quadratic.
    pub(crate) fn add_device(&mut self, d: Device) {
        match self.device_index.get(&d.dev) {
            Some(&i) => self.devices[i] = d,
            None => {
                self.device_index.insert(d.dev, self.devices.len());
                self.devices.push(d);
            }
        }
    }

    /// Add a string decoded from a table frame, escaped; one over [`MAX_STRING`] is left out
    /// (its id reads as `""`) and counted in `long`.
    fn add_string(&mut self, id: StrId, bytes: &[u8], long: &mut LeftOut) -> Result<(), TableError> {
        if long.over(bytes.len()) {
            return Ok(());
        }
        let s = escape(bytes);
        self.charge(STRING_COST + s.len() as u64)?;
        self.strings.insert(id, &s);
        Ok(())
    }

    pub(crate) fn add_proc(&mut self, p: ProcEntry) {
        match self.proc_index.get(p.id) {
            Some(i) => self.procs[i as usize] = p,
            None => {
                self.proc_index.insert(p.id, position(self.procs.len()));
                self.procs.push(p);
            }
        }
    }

    /// Add (or replace) a container entry.
    pub(crate) fn add_container(&mut self, c: ContainerEntry) {
        match self.container_index.get(c.id) {
            Some(i) => self.containers[i as usize] = c,
            None => {
                self.container_index.insert(c.id, position(self.containers.len()));
                self.containers.push(c);
            }
        }
    }

    /// Add (or replace) stack `id`.
    pub(crate) fn add_stack(&mut self, id: u32, s: Stack) {
        match self.stack_index.get(id) {
            Some(i) => self.stacks[i as usize] = (id, s),
            None => {
                self.stack_index.insert(id, position(self.stacks.len()));
                self.stacks.push((id, s));
            }
        }
    }

    pub(crate) fn add_file(&mut self, f: FileEntry) {
        self.files.add(f.id, f.target(), Some((f.pid, f.fd, f.open_ts)));
    }

    /// Merge the entries of one table frame's (decompressed) payload.
    pub(crate) fn apply(&mut self, kind: crate::frame::Kind, data: &[u8]) -> Result<(), TableError> {
        use crate::frame::Kind;
        let corrupt = TableError::Corrupt;
        let mut cur = Cursor::new(data);
        let count = cur.varint().ok_or(corrupt)?;
        // Every entry takes at least one byte: a count past the bytes left is corrupt.
        if count > cur.remaining() as u64 {
            return Err(corrupt);
        }
        match kind {
            Kind::PrefixStrings => return self.apply_prefix_strings(cur, count),
            Kind::ColumnFiles => return self.apply_column_files(cur, count),
            Kind::ProcOwners => return self.apply_proc_owners(cur, count),
            Kind::Stacks => return self.apply_stacks(cur, count),
            Kind::Containers => return self.apply_containers(cur, count),
            Kind::ProcContainers => return self.apply_proc_containers(cur, count),
            _ => {}
        }
        let mut long = LeftOut::default();
        for _ in 0..count {
            match entry(kind, &mut cur).ok_or(corrupt)? {
                Entry::String(id, bytes) => self.add_string(id, bytes, &mut long)?,
                Entry::Proc(p) => {
                    self.charge(ENTRY_COST)?;
                    self.add_proc(p);
                }
                Entry::File(f) => {
                    self.charge(ENTRY_COST)?;
                    self.add_file(f);
                }
                Entry::Device(dev, name) => {
                    if !long.over(name.len()) {
                        let name = escape(name);
                        self.charge(ENTRY_COST + name.len() as u64)?;
                        self.add_device(Device { dev, name });
                    }
                }
            }
        }
        if !cur.is_empty() {
            return Err(corrupt);
        }
        long.result()
    }
}

/// An entry's position in its table's vector. The budget keeps a table far below 2^32
/// entries (each costs [`ENTRY_COST`] of at most [`MAX_TABLE_BYTES`] per file, and a joined
/// reader's files each their own), so this saturates only in theory, below the empty slot's
/// value ([`Slot`]).
fn position(len: usize) -> u32 {
    u32::try_from(len).map_or(u32::MAX - 1, |p| p.min(u32::MAX - 1))
}

/// The file entries: each id's [`FdTarget`] as its position in a list of the distinct ones,
/// 4 bytes an entry where the entry whole took 40 (the 546,461 entries of a recording of tar
/// and find refer to 25,157 files), and each entry's process, fd and opening time only when
/// asked for ([`Tables::keep_file_details`]).
#[derive(Clone, Debug, Default)]
struct Files {
    targets: Vec<FdTarget>,
    /// Where each target is in `targets`. Hashed with SipHash: names come from the file.
    at: HashMap<FdTarget, u32>,
    ids: Ids<u32>,
    max_id: u32,
    details: Option<HashMap<u32, (u32, i32, u64)>>,
}

impl Files {
    /// Set entry `id` (new or replaced) to `target`, with its process, fd and opening time
    /// when they are kept.
    fn add(&mut self, id: u32, target: FdTarget, details: Option<(u32, i32, u64)>) {
        let at = match self.at.get(&target) {
            Some(&at) => at,
            None => {
                let at = position(self.targets.len());
                self.targets.push(target);
                self.at.insert(target, at);
                at
            }
        };
        self.ids.insert(id, at);
        self.max_id = self.max_id.max(id);
        if let Some(all) = &mut self.details {
            all.insert(id, details.unwrap_or_default());
        }
    }
}

/// A value an [`Ids`] holds, with one value that stands for none in its vector's empty
/// slots (an `Option` would double a `u32`'s slot).
trait Slot: Copy + PartialEq {
    /// The empty slot's value, which no caller stores.
    const NONE: Self;
}

impl Slot for u32 {
    // Positions in a table's vector, which the budget keeps far below it (see `position`).
    const NONE: u32 = u32::MAX;
}

impl Slot for (usize, u32) {
    // A span of the strings' buffer, which no string starts at.
    const NONE: (usize, u32) = (usize::MAX, u32::MAX);
}

/// A map from table ids to `V`, for ids a writer gives out 1, 2, 3, ...: a vector indexed by
/// the id, and a hash map for an id far past the count (a damaged or hostile file's), so that
/// one such id does not allocate gigabytes. A tar's recording has a file entry for every file
/// it opened (546,461 in a 4 × 10^6-event one): a vector slot is a fifth of a map's.
#[derive(Clone, Debug)]
struct Ids<V> {
    dense: Vec<V>,
    sparse: HashMap<u32, V>,
    count: usize,
}

impl<V> Default for Ids<V> {
    fn default() -> Self {
        Ids {
            dense: Vec::new(),
            sparse: HashMap::new(),
            count: 0,
        }
    }
}

impl<V: Slot> Ids<V> {
    fn get(&self, id: u32) -> Option<V> {
        match self.dense.get(id as usize) {
            Some(&v) if v != V::NONE => Some(v),
            // Not in the vector: it may have been put in the map before the vector reached it.
            _ if self.sparse.is_empty() => None,
            _ => self.sparse.get(&id).copied(),
        }
    }

    /// Set `id`'s value (a new id, or one whose value is replaced).
    fn insert(&mut self, id: u32, v: V) {
        debug_assert!(v != V::NONE, "an Ids slot's empty value stored");
        let at = id as usize;
        if at >= self.dense.len() && at <= 2 * self.count + 1024 {
            self.dense.resize(at + 1, V::NONE);
        }
        let old = match self.dense.get_mut(at) {
            Some(slot) => Some(std::mem::replace(slot, v))
                .filter(|&old| old != V::NONE)
                .or_else(|| self.sparse.remove(&id)),
            None => self.sparse.insert(id, v),
        };
        self.count += usize::from(old.is_none());
    }

    fn len(&self) -> usize {
        self.count
    }

    /// Every id with its value, in no particular order.
    fn iter(&self) -> impl Iterator<Item = (u32, V)> + '_ {
        let dense = self
            .dense
            .iter()
            .enumerate()
            .filter(|&(_, &v)| v != V::NONE)
            .map(|(id, &v)| (id as u32, v));
        dense.chain(self.sparse.iter().map(|(&id, &v)| (id, v)))
    }
}

/// The tables' strings, escaped, by id: their bytes back to back in one buffer, each id's
/// span of it in an [`Ids`]. A string given a new value (a later frame's) is appended again;
/// the budget counted the old bytes and goes on counting them.
#[derive(Clone, Debug, Default)]
struct Strings {
    text: String,
    spans: Ids<(usize, u32)>,
    max_id: StrId,
}

impl Strings {
    fn get(&self, id: StrId) -> &str {
        self.spans
            .get(id)
            .and_then(|(start, len)| self.text.get(start..start + len as usize))
            .unwrap_or("")
    }

    fn insert(&mut self, id: StrId, s: &str) {
        // A string is at most MAX_STRING bytes escaped four times over: its length fits.
        let Ok(len) = u32::try_from(s.len()) else { return };
        let start = self.text.len();
        self.text.push_str(s);
        self.spans.insert(id, (start, len));
        self.max_id = self.max_id.max(id);
    }

    fn len(&self) -> usize {
        self.spans.len()
    }

    fn max_id(&self) -> StrId {
        self.max_id
    }

    /// Every id with its string, in no particular order.
    fn iter(&self) -> impl Iterator<Item = (StrId, &str)> + '_ {
        self.spans.iter().map(|(id, _)| (id, self.get(id)))
    }
}

/// One entry of a 1.0 table frame (kinds 2 to 5), its strings still raw.
enum Entry<'a> {
    String(StrId, &'a [u8]),
    Proc(ProcEntry),
    File(FileEntry),
    Device(u32, &'a [u8]),
}

/// Decode the next entry of a `kind` frame; `None` when it does not decode.
fn entry<'a>(kind: crate::frame::Kind, cur: &mut Cursor<'a>) -> Option<Entry<'a>> {
    use crate::frame::Kind;
    Some(match kind {
        Kind::Strings => Entry::String(u32::try_from(cur.varint()?).ok()?, cur.len_bytes()?),
        Kind::Procs => Entry::Proc(ProcEntry {
            id: u32::try_from(cur.varint()?).ok()?,
            pid: u32::try_from(cur.varint()?).ok()?,
            ppid: u32::try_from(cur.varint()?).ok()?,
            name: u32::try_from(cur.varint()?).ok()?,
            exe: u32::try_from(cur.varint()?).ok()?,
            cmdline: u32::try_from(cur.varint()?).ok()?,
            start_ts: cur.varint()?,
            ..ProcEntry::default()
        }),
        Kind::Files => Entry::File(FileEntry {
            id: u32::try_from(cur.varint()?).ok()?,
            pid: u32::try_from(cur.varint()?).ok()?,
            fd: i32::try_from(cur.signed()?).ok()?,
            kind: FdType::from_code(cur.u8()?),
            name: u32::try_from(cur.varint()?).ok()?,
            dev: u32::try_from(cur.varint()?).ok()?,
            open_ts: cur.varint()?,
        }),
        Kind::Devices => Entry::Device(u32::try_from(cur.varint()?).ok()?, cur.len_bytes()?),
        _ => return None,
    })
}

/// The strings of a table frame left out for being longer than [`MAX_STRING`]: the frame's
/// other entries are still read (a capture written before writers cut command lines keeps
/// its paths), and the frame is reported with the longest.
#[derive(Default)]
struct LeftOut {
    longest: usize,
}

impl LeftOut {
    /// Whether a string of `len` bytes is over the limit (and so left out).
    fn over(&mut self, len: usize) -> bool {
        let over = len > MAX_STRING;
        if over {
            self.longest = self.longest.max(len);
        }
        over
    }

    /// The frame's result once all its entries are in.
    fn result(&self) -> Result<(), TableError> {
        if self.longest > 0 {
            return Err(TableError::Over {
                limit: Limit::String,
                len: self.longest as u64,
                max: MAX_STRING as u64,
            });
        }
        Ok(())
    }
}

impl Tables {
    /// Entries of a [`crate::frame::Kind::PrefixStrings`] frame: `id_delta shared suffix`
    /// (the id as a zigzag delta to the previous entry's),
    /// each string being the previous one's first `shared` bytes then `suffix`.
    fn apply_prefix_strings(&mut self, mut cur: Cursor, count: u64) -> Result<(), TableError> {
        let (mut id, mut prev, mut total) = (0i64, Vec::new(), 0u64);
        let mut long = LeftOut::default();
        for _ in 0..count {
            id = id
                .checked_add(cur.signed().ok_or(TableError::Corrupt)?)
                .filter(|&i| (0..=i64::from(u32::MAX)).contains(&i))
                .ok_or(TableError::Corrupt)?;
            let shared = usize::try_from(cur.varint().ok_or(TableError::Corrupt)?)
                .ok()
                .filter(|&n| n <= prev.len())
                .ok_or(TableError::Corrupt)?;
            let suffix = cur.len_bytes().ok_or(TableError::Corrupt)?;
            // Shared prefixes could otherwise expand a small frame quadratically: the strings
            // of one frame may total no more than a frame's payload (the budget bounds them
            // across frames).
            total += (shared + suffix.len()) as u64;
            if total > u64::from(crate::frame::MAX_PAYLOAD) {
                return Err(TableError::Corrupt);
            }
            // `prev` holds what the next entry may share, even past MAX_STRING: every byte of
            // it came from a suffix, so it is no longer than the payload, which the budget
            // bounded before it was decompressed.
            prev.truncate(shared);
            prev.extend_from_slice(suffix);
            self.add_string(id as StrId, &prev, &mut long)?;
        }
        if !cur.is_empty() {
            return Err(TableError::Corrupt);
        }
        long.result()
    }

    /// Entries of a [`crate::frame::Kind::ProcOwners`] frame (see `encode_proc_owner`), each
    /// set on the process entry of its id; an id no `Procs` frame defined is skipped.
    /// Entries of a [`crate::frame::Kind::Stacks`] frame: `id kind n (addr sym module
    /// build_id)*n`, kind 0 user, 1 kernel.
    fn apply_stacks(&mut self, mut cur: Cursor, count: u64) -> Result<(), TableError> {
        let corrupt = TableError::Corrupt;
        let id32 = |v: Option<u64>| v.and_then(|v| u32::try_from(v).ok()).ok_or(corrupt);
        for _ in 0..count {
            let id = id32(cur.varint())?;
            let kind = match cur.u8().ok_or(corrupt)? {
                0 => StackKind::User,
                1 => StackKind::Kernel,
                _ => return Err(corrupt),
            };
            let n = usize::try_from(cur.varint().ok_or(corrupt)?).map_err(|_| corrupt)?;
            // Each frame takes at least four bytes.
            if n > MAX_STACK_FRAMES || n > cur.remaining() / 4 {
                return Err(corrupt);
            }
            self.charge(ENTRY_COST + FRAME_COST * n as u64)?;
            let mut frames = Vec::with_capacity(n);
            for _ in 0..n {
                frames.push(StackFrame {
                    addr: cur.varint().ok_or(corrupt)?,
                    sym: id32(cur.varint())?,
                    module: id32(cur.varint())?,
                    build_id: id32(cur.varint())?,
                });
            }
            self.add_stack(id, Stack { kind, frames });
        }
        if !cur.is_empty() {
            return Err(corrupt);
        }
        Ok(())
    }

    /// Entries of a [`crate::frame::Kind::Containers`] frame (see `encode_container`).
    fn apply_containers(&mut self, mut cur: Cursor, count: u64) -> Result<(), TableError> {
        let corrupt = TableError::Corrupt;
        let id32 = |v: Option<u64>| v.and_then(|v| u32::try_from(v).ok()).ok_or(corrupt);
        for _ in 0..count {
            let id = id32(cur.varint())?;
            let runtime = crate::container::Runtime::from_code(cur.u8().ok_or(corrupt)?);
            let mut s = [0; 6];
            for v in &mut s {
                *v = id32(cur.varint())?;
            }
            let [full_id, name, image, pod_name, pod_uid, namespace] = s;
            if id == 0 {
                return Err(corrupt);
            }
            self.charge(ENTRY_COST)?;
            self.add_container(ContainerEntry {
                id,
                runtime,
                full_id,
                name,
                image,
                pod_name,
                pod_uid,
                namespace,
            });
        }
        if !cur.is_empty() {
            return Err(corrupt);
        }
        Ok(())
    }

    /// Entries of a [`crate::frame::Kind::ProcContainers`] frame: `proc container` ids, each
    /// set on the process entry of its id; an id no `Procs` frame defined is skipped.
    fn apply_proc_containers(&mut self, mut cur: Cursor, count: u64) -> Result<(), TableError> {
        let corrupt = TableError::Corrupt;
        for _ in 0..count {
            let id = u32::try_from(cur.varint().ok_or(corrupt)?).map_err(|_| corrupt)?;
            let container = u32::try_from(cur.varint().ok_or(corrupt)?).map_err(|_| corrupt)?;
            if let Some(i) = self.proc_index.get(id).map(|i| i as usize) {
                self.procs[i].container = container;
            }
        }
        if !cur.is_empty() {
            return Err(corrupt);
        }
        Ok(())
    }

    fn apply_proc_owners(&mut self, mut cur: Cursor, count: u64) -> Result<(), TableError> {
        let corrupt = TableError::Corrupt;
        for _ in 0..count {
            let id = u32::try_from(cur.varint().ok_or(corrupt)?).map_err(|_| corrupt)?;
            let uid = cur.varint().ok_or(corrupt)?;
            let user = u32::try_from(cur.varint().ok_or(corrupt)?).map_err(|_| corrupt)?;
            let cgroup = u32::try_from(cur.varint().ok_or(corrupt)?).map_err(|_| corrupt)?;
            let uid = match uid {
                0 => None,
                u => Some(u32::try_from(u - 1).map_err(|_| corrupt)?),
            };
            if let Some(i) = self.proc_index.get(id).map(|i| i as usize) {
                let p = &mut self.procs[i];
                (p.uid, p.user, p.cgroup) = (uid, user, cgroup);
            }
        }
        if !cur.is_empty() {
            return Err(corrupt);
        }
        Ok(())
    }

    /// Entries of a [`crate::frame::Kind::ColumnFiles`] frame: `count` values of each field in
    /// turn, every field but `kind` and `dev` as the zigzag delta to the previous entry's.
    fn apply_column_files(&mut self, cur: Cursor, count: u64) -> Result<(), TableError> {
        // Seven fields of at least one byte each.
        if count > cur.remaining() as u64 / 7 {
            return Err(TableError::Corrupt);
        }
        // Counted whole before the entries are allocated.
        self.charge(count.saturating_mul(ENTRY_COST))?;
        self.decode_column_files(cur, count).ok_or(TableError::Corrupt)
    }

    fn decode_column_files(&mut self, mut cur: Cursor, count: u64) -> Option<()> {
        let mut files = vec![FileEntry::default(); count as usize];
        fn delta(cur: &mut Cursor, files: &mut [FileEntry], set: fn(&mut FileEntry, i64) -> Option<()>) -> Option<()> {
            let mut prev = 0i64;
            for f in files.iter_mut() {
                prev = prev.wrapping_add(cur.signed()?);
                set(f, prev)?;
            }
            Some(())
        }
        delta(&mut cur, &mut files, |f, v| {
            f.id = u32::try_from(v).ok()?;
            Some(())
        })?;
        delta(&mut cur, &mut files, |f, v| {
            f.pid = u32::try_from(v).ok()?;
            Some(())
        })?;
        delta(&mut cur, &mut files, |f, v| {
            f.fd = i32::try_from(v).ok()?;
            Some(())
        })?;
        for f in files.iter_mut() {
            f.kind = FdType::from_code(cur.u8()?);
        }
        delta(&mut cur, &mut files, |f, v| {
            f.name = u32::try_from(v).ok()?;
            Some(())
        })?;
        for f in files.iter_mut() {
            f.dev = u32::try_from(cur.varint()?).ok()?;
        }
        // open_ts is a u64: its deltas wrap.
        delta(&mut cur, &mut files, |f, v| {
            f.open_ts = v as u64;
            Some(())
        })?;
        if !cur.is_empty() {
            return None;
        }
        files.into_iter().for_each(|f| self.add_file(f));
        Some(())
    }
}

/// Entries waiting to be written as table frames, already encoded.
#[derive(Debug, Default)]
pub(crate) struct Pending {
    pub count: u64,
    pub bytes: Vec<u8>,
}

impl Pending {
    pub fn take_payload(&mut self) -> Option<Vec<u8>> {
        if self.count == 0 {
            return None;
        }
        let mut out = Vec::with_capacity(self.bytes.len() + 10);
        varint::put(&mut out, self.count);
        out.extend_from_slice(&self.bytes);
        self.count = 0;
        self.bytes.clear();
        Some(out)
    }
}

/// Strings waiting for a [`crate::frame::Kind::PrefixStrings`] frame, already encoded.
#[derive(Debug, Default)]
pub(crate) struct PendingStrings {
    entries: Pending,
    /// The previous entry's id and bytes: the next one is stored relative to them.
    prev_id: StrId,
    prev: Vec<u8>,
}

impl PendingStrings {
    /// Add one string. Paths arrive in directory order (a tar, a find), so consecutive ones
    /// share long prefixes: stored as what they share plus the rest, then compressed, strings
    /// took 40% fewer bytes than whole (real tar of /usr/share: 511 → ~300 KB).
    pub fn push(&mut self, id: StrId, bytes: &[u8]) {
        let p = &mut self.entries;
        p.count += 1;
        let shared = bytes.iter().zip(&self.prev).take_while(|(a, b)| a == b).count();
        varint::put(&mut p.bytes, varint::zigzag(i64::from(id) - i64::from(self.prev_id)));
        varint::put(&mut p.bytes, shared as u64);
        varint::put(&mut p.bytes, (bytes.len() - shared) as u64);
        p.bytes.extend_from_slice(&bytes[shared..]);
        self.prev_id = id;
        self.prev.clear();
        self.prev.extend_from_slice(bytes);
    }

    pub fn take_payload(&mut self) -> Option<Vec<u8>> {
        self.prev_id = 0;
        self.prev.clear();
        self.entries.take_payload()
    }
}

pub(crate) fn encode_proc(p: &mut Pending, e: &ProcEntry) {
    p.count += 1;
    for v in [e.id, e.pid, e.ppid, e.name, e.exe, e.cmdline] {
        varint::put(&mut p.bytes, u64::from(v));
    }
    varint::put(&mut p.bytes, e.start_ts);
}

/// A [`crate::frame::Kind::ProcOwners`] entry for `e`, when there is anything to say: its id,
/// uid + 1 (0: unknown), user and cgroup string ids.
pub(crate) fn encode_proc_owner(p: &mut Pending, e: &ProcEntry) {
    if e.uid.is_none() && e.user == 0 && e.cgroup == 0 {
        return;
    }
    p.count += 1;
    let uid = e.uid.map_or(0, |u| u64::from(u) + 1);
    for v in [u64::from(e.id), uid, u64::from(e.user), u64::from(e.cgroup)] {
        varint::put(&mut p.bytes, v);
    }
}

/// A [`crate::frame::Kind::ProcContainers`] entry for `e` when it ran in a container: its id
/// and its container's.
pub(crate) fn encode_proc_container(p: &mut Pending, e: &ProcEntry) {
    if e.container == 0 {
        return;
    }
    p.count += 1;
    varint::put(&mut p.bytes, u64::from(e.id));
    varint::put(&mut p.bytes, u64::from(e.container));
}

/// A [`crate::frame::Kind::Containers`] entry: `id runtime full_id name image pod_name
/// pod_uid namespace`, the runtime a byte, the rest varints.
pub(crate) fn encode_container(p: &mut Pending, c: &ContainerEntry) {
    p.count += 1;
    varint::put(&mut p.bytes, u64::from(c.id));
    p.bytes.push(c.runtime.code());
    for v in [c.full_id, c.name, c.image, c.pod_name, c.pod_uid, c.namespace] {
        varint::put(&mut p.bytes, u64::from(v));
    }
}

/// The payload of a [`crate::frame::Kind::ColumnFiles`] frame: field by field, each the
/// delta to the previous entry's, because consecutive entries mostly differ by one id, one
/// string and a few µs (real tar of /usr/share: 289 → ~125 KB compressed).
pub(crate) fn encode_files(files: &[FileEntry]) -> Option<Vec<u8>> {
    if files.is_empty() {
        return None;
    }
    let mut out = Vec::with_capacity(files.len() * 12 + 10);
    varint::put(&mut out, files.len() as u64);
    let delta = |out: &mut Vec<u8>, get: fn(&FileEntry) -> i64| {
        let mut prev = 0i64;
        for f in files {
            let v = get(f);
            varint::put(out, varint::zigzag(v.wrapping_sub(prev)));
            prev = v;
        }
    };
    delta(&mut out, |f| i64::from(f.id));
    delta(&mut out, |f| i64::from(f.pid));
    delta(&mut out, |f| i64::from(f.fd));
    out.extend(files.iter().map(|f| f.kind as u8));
    delta(&mut out, |f| i64::from(f.name));
    files.iter().for_each(|f| varint::put(&mut out, u64::from(f.dev)));
    delta(&mut out, |f| f.open_ts as i64);
    Some(out)
}

/// A [`crate::frame::Kind::Stacks`] entry (see `Tables::apply_stacks`).
pub(crate) fn encode_stack(p: &mut Pending, id: u32, s: &Stack) {
    p.count += 1;
    varint::put(&mut p.bytes, u64::from(id));
    p.bytes.push(s.kind as u8);
    varint::put(&mut p.bytes, s.frames.len() as u64);
    for f in &s.frames {
        varint::put(&mut p.bytes, f.addr);
        varint::put(&mut p.bytes, u64::from(f.sym));
        varint::put(&mut p.bytes, u64::from(f.module));
        varint::put(&mut p.bytes, u64::from(f.build_id));
    }
}

pub(crate) fn encode_device(p: &mut Pending, d: &Device) {
    p.count += 1;
    varint::put(&mut p.bytes, u64::from(d.dev));
    varint::put(&mut p.bytes, d.name.len() as u64);
    p.bytes.extend_from_slice(d.name.as_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_keep_every_value_dense_or_far() {
        let mut ids = Ids::default();
        for id in 1..=3000u32 {
            ids.insert(id, id * 10);
        }
        // Far past the count: in the map, not a vector of 4 billion slots.
        ids.insert(u32::MAX, 7);
        ids.insert(4_000_000, 8);
        assert!(ids.dense.len() <= 2 * 3000 + 1025, "{}", ids.dense.len());
        assert_eq!(
            (ids.get(1), ids.get(3000), ids.get(u32::MAX), ids.get(4_000_000)),
            (Some(10), Some(30_000), Some(7), Some(8))
        );
        assert_eq!((ids.get(0), ids.get(3001), ids.get(5_000_000)), (None, None, None));
        // Replaced, not counted twice; one the map held is found once the vector reaches it.
        ids.insert(2, 99);
        assert_eq!((ids.get(2), ids.len()), (Some(99), 3002));
        for id in 3001..=2_100_000u32 {
            ids.insert(id, 1);
        }
        assert_eq!(ids.get(4_000_000), Some(8));
        // Now near enough for the vector, which takes it over from the map.
        ids.insert(4_000_000, 9);
        assert!(ids.dense.len() > 4_000_000 && !ids.sparse.contains_key(&4_000_000));
        assert_eq!((ids.get(4_000_000), ids.len()), (Some(9), 2_100_002));
        assert_eq!(ids.iter().count(), ids.len());
    }

    #[test]
    fn strings_read_back_replaced_and_listed() {
        let mut t = Tables::default();
        t.strings.insert(1, "fio");
        t.strings.insert(7, "");
        t.strings.insert(u32::MAX, "far");
        t.strings.insert(1, "postgres");
        assert_eq!(
            (t.string(1), t.string(7), t.string(u32::MAX), t.string(2)),
            ("postgres", "", "far", "")
        );
        assert_eq!((t.string_count(), t.max_ids().strings), (3, u32::MAX));
        let mut all: Vec<(StrId, &str)> = t.strings.iter().collect();
        all.sort();
        assert_eq!(all, vec![(1, "postgres"), (7, ""), (u32::MAX, "far")]);
    }

    fn entry(id: u32, name: StrId, fd: i32) -> FileEntry {
        FileEntry {
            id,
            pid: 7,
            fd,
            kind: FdType::File,
            name,
            dev: 3,
            open_ts: u64::from(id) * 10,
        }
    }

    /// Entries of the same file keep it once; each id still says which it is, a replaced
    /// entry moves, and the entries' other fields are kept only when asked.
    #[test]
    fn file_entries_keep_each_file_once() {
        let mut t = Tables::default();
        for id in 1..=1000u32 {
            t.add_file(entry(id, 1 + id % 2, id as i32));
        }
        t.add_file(entry(u32::MAX, 2, 4));
        t.add_file(entry(10, 3, 5));
        assert_eq!(
            (t.file_count(), t.files.targets.len(), t.max_file_id()),
            (1001, 3, u32::MAX)
        );
        assert_eq!(t.file(11).map(|f| (f.kind, f.name, f.dev)), Some((FdType::File, 2, 3)));
        assert_eq!((t.file(10).unwrap().name, t.file(u32::MAX).unwrap().name), (3, 2));
        assert_eq!((t.file(0), t.file(1001)), (None, None));
        // Asked once per file, of an id of it; the answer holds for all of its entries.
        let mut asked = Vec::new();
        let mut two: Vec<u32> = t
            .file_ids_where(|id| {
                asked.push(id);
                t.file(id).unwrap().name == 2
            })
            .collect();
        two.sort_unstable();
        assert_eq!(asked.len(), 3);
        let want: Vec<u32> = (1..=1000)
            .filter(|id| id % 2 == 1 && *id != 10)
            .chain([u32::MAX])
            .collect();
        assert_eq!(two, want);
        let mut one_each: Vec<StrId> = t.one_file_id_each().map(|id| t.file(id).unwrap().name).collect();
        one_each.sort_unstable();
        assert_eq!(one_each, vec![1, 2, 3]);
        assert_eq!(t.file_entries(), None);

        let mut whole = Tables::default();
        whole.keep_file_details();
        whole.add_file(entry(2, 1, 9));
        whole.add_file(entry(1, 1, 8));
        assert_eq!(whole.file_entries(), Some(vec![entry(1, 1, 8), entry(2, 1, 9)]));
        // Moved into joined tables that keep them too.
        let mut joined = Tables::default();
        joined.keep_file_details();
        joined.add_shifted(
            &whole,
            MaxIds {
                files: 5,
                ..MaxIds::default()
            },
        );
        let moved = joined.file_entries().unwrap();
        assert_eq!(
            moved.iter().map(|f| (f.id, f.fd, f.open_ts)).collect::<Vec<_>>(),
            vec![(6, 8, 10), (7, 9, 20)]
        );
    }

    /// A reference past a joined file's strings (damaged, hostile) is moved without
    /// overflowing and still names no string; a real one names its own.
    #[test]
    fn shifted_string_references_past_the_strings_stay_dangling() {
        let mut other = Tables::default();
        other.strings.insert(1, "fio");
        other.add_proc(ProcEntry {
            id: 1,
            name: 1,
            exe: u32::MAX,
            ..ProcEntry::default()
        });
        let mut joined = Tables::default();
        joined.strings.insert(1, "sh");
        joined.add_shifted(
            &other,
            MaxIds {
                strings: 1,
                procs: 1,
                ..MaxIds::default()
            },
        );
        let p = joined.proc(2).expect("the moved process");
        assert_eq!(joined.string(p.name), "fio");
        assert_eq!(p.exe, u32::MAX);
        assert_eq!(joined.string(p.exe), "");
    }

    /// Stack entries read back as written; a bad kind, or a frame count over the limit or
    /// the bytes, refuses the frame rather than allocating for it.
    #[test]
    fn containers_read_back_shifted_and_bad_ones_are_refused() {
        use crate::container::Runtime;
        use crate::frame::Kind;
        let c = ContainerEntry {
            id: 3,
            runtime: Runtime::CriO,
            full_id: 1,
            name: 2,
            image: 0,
            pod_name: 4,
            pod_uid: 5,
            namespace: 6,
        };
        let mut p = Pending::default();
        encode_container(&mut p, &c);
        let mut t = Tables::default();
        t.apply(Kind::Containers, &p.take_payload().unwrap()).unwrap();
        assert_eq!(t.container(3), Some(&c));
        t.add_proc(ProcEntry {
            id: 9,
            ..ProcEntry::default()
        });
        encode_proc_container(
            &mut p,
            &ProcEntry {
                id: 9,
                container: 3,
                ..ProcEntry::default()
            },
        );
        encode_proc_container(
            &mut p,
            &ProcEntry {
                id: 77,
                container: 3,
                ..ProcEntry::default()
            },
        );
        encode_proc_container(
            &mut p,
            &ProcEntry {
                id: 8,
                container: 0,
                ..ProcEntry::default()
            },
        );
        t.apply(Kind::ProcContainers, &p.take_payload().unwrap()).unwrap();
        assert_eq!(t.proc(9).map(|p| p.container), Some(3));
        assert_eq!(t.proc(77), None, "an entry no Procs frame defined is skipped");
        // A joined reader moves container ids up as it moves process ids.
        let mut joined = Tables::default();
        joined.add_shifted(
            &t,
            MaxIds {
                containers: 10,
                strings: 100,
                ..MaxIds::default()
            },
        );
        let moved = joined.container(13).expect("moved up");
        assert_eq!((moved.full_id, moved.image, moved.runtime), (101, 0, Runtime::CriO));
        assert_eq!(joined.proc(9).map(|p| p.container), Some(13));
        // An unknown runtime's code reads as unknown; a zero id, a cut entry, bytes left over are refused.
        let raw = |b: &[u8]| [&[1u8][..], b].concat();
        let mut t = Tables::default();
        t.apply(Kind::Containers, &raw(&[1, 99, 0, 0, 0, 0, 0, 0])).unwrap();
        assert_eq!(t.container(1).map(|c| c.runtime), Some(Runtime::Unknown));
        for bad in [
            &[0u8, 1, 0, 0, 0, 0, 0, 0][..],
            &[1, 1, 0, 0],
            &[1, 1, 0, 0, 0, 0, 0, 0, 7],
        ] {
            assert!(Tables::default().apply(Kind::Containers, &raw(bad)).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn stacks_read_back_and_bad_ones_are_refused() {
        use crate::frame::Kind;
        let kernel = Stack {
            kind: StackKind::Kernel,
            frames: vec![
                StackFrame {
                    addr: 0xffff_ffff_8100_0000,
                    sym: 3,
                    module: 4,
                    build_id: 5,
                },
                StackFrame::default(),
            ],
        };
        let mut p = Pending::default();
        encode_stack(&mut p, 7, &kernel);
        encode_stack(&mut p, 9, &Stack::default());
        let mut t = Tables::default();
        t.apply(Kind::Stacks, &p.take_payload().unwrap()).unwrap();
        assert_eq!(t.stack(7), Some(&kernel));
        assert_eq!(t.stack(9), Some(&Stack::default()));
        assert_eq!((t.stack(0), t.stack(8)), (None, None));
        assert_eq!(t.stacks().map(|(id, _)| id).collect::<Vec<_>>(), [7, 9]);

        let refused = |entry: &[u8]| {
            let mut payload = vec![1];
            payload.extend_from_slice(entry);
            Tables::default().apply(Kind::Stacks, &payload)
        };
        // id 1, kind 2 (neither user nor kernel), no frames.
        assert_eq!(refused(&[1, 2, 0]), Err(TableError::Corrupt));
        // 1 025 frames (varint 0x81 0x08): over MAX_STACK_FRAMES, whatever follows.
        assert_eq!(refused(&[1, 0, 0x81, 0x08, 0, 0, 0, 0]), Err(TableError::Corrupt));
        // Two frames claimed, one's bytes there.
        assert_eq!(refused(&[1, 0, 2, 5, 0, 0, 0]), Err(TableError::Corrupt));
        assert_eq!(refused(&[1, 0, 1, 5, 0, 0, 0]), Ok(()));
    }
}
