//! Every field's value for a chunk's matching rows, read from the chunk's columns without
//! building an `Event` per row or asking [`fields::value`] per cell: the exports' fast path.
//!
//! A field is either a number read from one or two columns (latencies, times, pids: a value
//! per event), or decided by a key ([`KeyOf`]: a process or file table id, the syscall number,
//! the device...), which is what [`fields::value`] says of a sample event, asked once per key
//! and kept with its text already in the output's form (escaped for CSV or JSON), so a table
//! entry's strings are escaped once per capture, not once per event. The fields of one key
//! share one lookup per row. What a field means stays [`fields::value`]'s: the numbers read
//! here follow it, and a test compares the exports with the field-by-field path on a varied
//! capture.

use std::collections::HashMap;
use std::hash::BuildHasherDefault;

use iocap_analysis::group::key::{IdCol, KeyOf};
use iocap_analysis::group::IdHasher;
use iocap_filter::fields::{holds_for, FieldId, FieldInfo, FieldType, Read, Value};
use iocap_filter::{fields, Bitmap};
use iocap_format::{Class, Col, ColSlice, Columns, Holds, Meta, Tables};

/// One field's value for one row, its text (a string's) in the output's form.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cell {
    /// The field does not apply to the event.
    Absent,
    /// A signed number.
    Int(i64),
    /// An unsigned number (sizes, durations in ns, ids).
    UInt(u64),
    /// A boolean.
    Bool(bool),
    /// A string: these bytes of [`Cells::text`], in the output's form.
    Str(u32, u32),
}

/// The form a string is kept in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flavor {
    /// A CSV field: quoted when needed, with the formula guard ([`super::text::csv_text`]).
    Csv,
    /// A JSON string, quotes included, as `serde_json` writes it.
    Json,
    /// The string as it is (already escaped by the reader): Parquet's.
    Raw,
}

/// How a field is read.
#[derive(Clone, Copy, Debug)]
enum Source {
    /// The value of the key of group `.0`, its `.1`th field.
    Keyed(usize, usize),
    /// A number per event.
    Num(Num),
}

/// The fields read per event from their columns, each as [`fields::value`] defines it.
#[derive(Clone, Copy, Debug)]
enum Num {
    /// A column ([`Read::Column`]) for the events `of`; `signed` for a field of type int.
    Col { col: Col, of: Holds, signed: bool },
    /// The saturating sum of two columns ([`Read::Sum`]) for the events `of`.
    Sum(Col, Col, Holds),
    /// A column less two others ([`Read::Rest`]) for the events `of`.
    Rest(Col, Col, Col, Holds),
    /// `evt.failed`.
    Failed,
    /// `evt.time`.
    Time,
    /// `fd.num`.
    Fd,
    /// `blk.sector`: absent for a request without one (a flush, all ones).
    Sector,
    /// `io.offset`: present when the event type's group (`.0`, field `.1`) says it is.
    Offset(usize, usize),
}

/// Past this many keys a group forgets what it kept (a hostile capture's distinct error
/// numbers), so memory stays bounded whatever the capture.
const MAX_KEYS: usize = 1 << 16;
/// Ids below this are looked up in a vector rather than hashed.
const DENSE_IDS: u64 = 1 << 20;

/// The fields of one key, and the value of each key seen.
struct Group {
    key: KeyOf,
    /// The fields, as indices into [`Cells::fields`].
    fields: Vec<usize>,
    /// Key → entry, for keys at or above [`DENSE_IDS`] (or any key but a table id).
    sparse: HashMap<u64, u32, BuildHasherDefault<IdHasher>>,
    /// Table id → entry + 1 (0: not seen).
    dense: Vec<u32>,
    /// `fields.len()` cells per entry.
    cells: Vec<Cell>,
    /// The entry of each row of the chunk.
    rows: Vec<u32>,
}

impl Group {
    fn clear(&mut self) {
        self.sparse.clear();
        self.dense.clear();
        self.cells.clear();
    }

    /// The entry of key `k`, if seen (`dense`: a table id, looked up in [`Group::dense`]
    /// when small enough).
    #[inline(always)]
    fn seen(&self, k: u64, dense: bool) -> Option<u32> {
        if dense && k < DENSE_IDS {
            self.dense.get(k as usize).copied().filter(|&e| e > 0).map(|e| e - 1)
        } else {
            self.sparse.get(&k).copied()
        }
    }

    fn entries(&self) -> usize {
        self.cells.len() / self.fields.len().max(1)
    }
}

/// The exported fields' values for the matching rows of one chunk at a time.
pub struct Cells<'a> {
    fields: Vec<&'static FieldInfo>,
    sources: Vec<Source>,
    groups: Vec<Group>,
    flavor: Flavor,
    meta: &'a Meta,
    tables: &'a Tables,
    /// The strings' bytes.
    text: Vec<u8>,
    /// The matching rows of the chunk loaded.
    rows: Vec<u32>,
    /// Whether they are all the chunk's rows (`rows[i] == i`): read without looking them up.
    all_rows: bool,
    /// How many times the groups forgot their entries ([`Cells::generation`]).
    generation: u64,
}

/// A field decided by a key: its value is its key's entry's ([`Cells::keyed`]).
pub struct Keyed<'s> {
    /// The entry of each row loaded.
    pub rows: &'s [u32],
    /// The entries so far: numbered from 0, in the order their keys were first seen.
    pub entries: usize,
    cells: &'s [Cell],
    stride: usize,
    at: usize,
}

impl Keyed<'_> {
    /// The field's value for `entry`.
    #[inline]
    pub fn cell(&self, entry: u32) -> Cell {
        self.cells[entry as usize * self.stride + self.at]
    }
}

impl<'a> Cells<'a> {
    /// Cells of `fields` of a capture with these `meta` and `tables`, strings kept as `flavor`.
    pub fn new(fields: &[&'static FieldInfo], flavor: Flavor, meta: &'a Meta, tables: &'a Tables) -> Cells<'a> {
        let mut groups: Vec<Group> = Vec::new();
        let mut group_of = |key: KeyOf, field: usize| -> (usize, usize) {
            let g = match groups.iter().position(|g| g.key == key) {
                Some(g) => g,
                None => {
                    groups.push(Group {
                        key,
                        fields: Vec::new(),
                        sparse: HashMap::default(),
                        dense: Vec::new(),
                        cells: Vec::new(),
                        rows: Vec::new(),
                    });
                    groups.len() - 1
                }
            };
            groups[g].fields.push(field);
            (g, groups[g].fields.len() - 1)
        };
        let mut sources = Vec::with_capacity(fields.len());
        for (k, f) in fields.iter().enumerate() {
            use FieldId::*;
            let num = match (f.read, f.id) {
                (_, BlkSector) => Num::Sector,
                (Read::Column { col, of }, _) => Num::Col {
                    col,
                    of,
                    signed: f.ty == FieldType::Int,
                },
                (Read::Sum { cols: (a, b), of }, _) => Num::Sum(a, b, of),
                (
                    Read::Rest {
                        from,
                        minus: (a, b),
                        of,
                    },
                    _,
                ) => Num::Rest(from, a, b, of),
                (_, EvtFailed) => Num::Failed,
                (_, EvtTime) => Num::Time,
                (_, FdNum) => Num::Fd,
                (_, IoOffset) => {
                    // Whether an event has one is the event type's (a positional call).
                    let (g, j) = group_of(KeyOf::of(fields::info(EvtType)), k);
                    Num::Offset(g, j)
                }
                // Every other field is decided by its key.
                _ => {
                    let (g, j) = group_of(KeyOf::of(f), k);
                    sources.push(Source::Keyed(g, j));
                    continue;
                }
            };
            sources.push(Source::Num(num));
        }
        Cells {
            fields: fields.to_vec(),
            sources,
            groups,
            flavor,
            meta,
            tables,
            text: Vec::new(),
            rows: Vec::new(),
            all_rows: false,
            generation: 0,
        }
    }

    /// Field `field`'s entries, if a key decides it: what a column of distinct values (a
    /// dictionary) is made from without looking at each row's value. An entry stands for the
    /// same value until [`Cells::generation`] changes.
    pub fn keyed(&self, field: usize) -> Option<Keyed<'_>> {
        match self.sources[field] {
            Source::Keyed(g, j) => {
                let group = &self.groups[g];
                Some(Keyed {
                    rows: &group.rows,
                    entries: group.entries(),
                    cells: &group.cells,
                    stride: group.fields.len(),
                    at: j,
                })
            }
            Source::Num(_) => None,
        }
    }

    /// Changes when the entries are forgotten (past [`MAX_KEYS`] of a group): an entry of
    /// [`Cells::keyed`] then stands for another value.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// The bytes a [`Cell::Str`] points into.
    pub fn text(&self, cell: Cell) -> &[u8] {
        match cell {
            Cell::Str(start, len) => &self.text[start as usize..(start + len) as usize],
            _ => &[],
        }
    }

    /// Take the matching rows (`bits`) of chunk `c`: the key of each of its groups looked up,
    /// and the value of a key not seen before computed. Returns how many rows matched.
    pub fn load(&mut self, c: &Columns, bits: &Bitmap) -> usize {
        self.rows.clear();
        self.rows.extend(bits.iter_ones().map(|i| i as u32));
        // Distinct rows of the chunk, as many as it has: every one, in order.
        self.all_rows = self.rows.len() == c.len();
        if self.groups.iter().any(|g| g.entries() >= MAX_KEYS) || self.text.len() >= 1 << 28 {
            // Entries point into `text`: they are forgotten together.
            self.text.clear();
            self.groups.iter_mut().for_each(Group::clear);
            self.generation += 1;
        }
        for g in 0..self.groups.len() {
            self.load_group(g, c);
        }
        self.rows.len()
    }

    fn load_group(&mut self, g: usize, c: &Columns) {
        let key = self.groups[g].key;
        // A table id's key is its column's value: read without choosing the key's kind per row.
        if let Some(ids) = key.id_column(c) {
            return self.assign(g, c, |i| ids.get(i).map_or(0, |&v| u64::from(v)));
        }
        // The other kinds every export has are each given their own loop (the key's kind a
        // constant in it); the rest share one.
        match key {
            KeyOf::EventType => self.assign(g, c, |i| KeyOf::EventType.key(c, i)),
            KeyOf::Error => self.assign(g, c, |i| KeyOf::Error.key(c, i)),
            KeyOf::ClassCauseNr => self.assign(g, c, |i| KeyOf::ClassCauseNr.key(c, i)),
            _ => self.assign(g, c, |i| key.key(c, i)),
        }
    }

    /// Each loaded row's entry in group `g`, its key `key_at` its index in the chunk.
    #[inline(always)]
    fn assign(&mut self, g: usize, c: &Columns, key_at: impl Fn(usize) -> u64) {
        let mut rows = std::mem::take(&mut self.groups[g].rows);
        rows.clear();
        let matching = std::mem::take(&mut self.rows);
        let dense = matches!(self.groups[g].key, KeyOf::Id(IdCol::Proc | IdCol::File));
        let mut last: Option<(u64, u32)> = None;
        for &i in &matching {
            let k = key_at(i as usize);
            let entry = match last {
                Some((lk, e)) if lk == k => e,
                _ => {
                    let e = match self.groups[g].seen(k, dense) {
                        Some(e) => e,
                        None => self.entry(g, k, dense, c, i as usize),
                    };
                    last = Some((k, e));
                    e
                }
            };
            rows.push(entry);
        }
        self.rows = matching;
        self.groups[g].rows = rows;
    }

    /// The entry of key `k` of group `g`, not seen yet, computed from row `i` of `c`.
    #[inline(never)]
    fn entry(&mut self, g: usize, k: u64, dense: bool, c: &Columns, i: usize) -> u32 {
        let group = &mut self.groups[g];
        let e = group.entries() as u32;
        let sample = c.event(i);
        for &field in &group.fields {
            let v = fields::value(self.fields[field], &sample, self.meta, self.tables);
            let cell = cell_of(&v, self.flavor, &mut self.text);
            group.cells.push(cell);
        }
        if dense && k < DENSE_IDS {
            if group.dense.len() <= k as usize {
                group.dense.resize(k as usize + 1, 0);
            }
            group.dense[k as usize] = e + 1;
        } else {
            group.sparse.insert(k, e);
        }
        e
    }

    /// The index in its chunk of the `row`th matching row loaded.
    pub fn row(&self, row: usize) -> usize {
        self.rows[row] as usize
    }

    /// How many rows [`Cells::load`] took.
    pub fn len(&self) -> usize {
        self.rows.len()
    }

    /// Field `field`'s value for the `row`th matching row of chunk `c` (as loaded).
    #[inline]
    pub fn cell(&self, c: &Columns, field: usize, row: usize) -> Cell {
        match self.sources[field] {
            Source::Keyed(g, j) => self.keyed_cell(g, j, row),
            Source::Num(num) => self.num_cell(c, num, row),
        }
    }

    /// Field `field`'s values for the loaded rows, if it is a number read per event (false,
    /// and nothing added, for a keyed field: [`Cells::keyed`]), a column at a time: each
    /// present value appended to `values` (a boolean as 0 or 1, a number past `i64::MAX` cut
    /// to it), and to `present`, when given, 1 or 0 for each row. The values of
    /// [`Cells::cell`], read in one loop per column rather than one choice per cell.
    pub fn fill_numbers(
        &self,
        c: &Columns,
        field: usize,
        values: &mut Vec<i64>,
        present: Option<&mut Vec<u8>>,
    ) -> bool {
        let Source::Num(num) = self.sources[field] else {
            return false;
        };
        if self.all_rows {
            self.fill(c, num, 0..self.rows.len() as u32, values, present);
        } else {
            self.fill(c, num, self.rows.iter().copied(), values, present);
        }
        true
    }

    /// [`Cells::fill_numbers`] of number `num`, for the chunk's rows `rows`.
    #[inline(always)]
    fn fill(
        &self,
        c: &Columns,
        num: Num,
        rows: impl ExactSizeIterator<Item = u32> + Clone,
        values: &mut Vec<i64>,
        present: Option<&mut Vec<u8>>,
    ) {
        let u64_at = |v: &[u64], i: u32| v.get(i as usize).copied().unwrap_or(0);
        let int = |v: u64| i64::try_from(v).unwrap_or(i64::MAX);
        let class = |i: u32| {
            c.class
                .get(i as usize)
                .copied()
                .map_or(Class::Syscall, |k| Class::from_code(u64::from(k)).unwrap_or_default())
        };
        let block = |i: u32| c.class.get(i as usize).copied() == Some(Class::Block as u8);
        let ret = |i: u32| c.ret.get(i as usize).copied().unwrap_or(0);
        match num {
            Num::Col {
                col,
                of: Holds::All,
                signed,
            } => match c.get(col) {
                ColSlice::U8(v) => every(values, present, rows.clone().map(|i| number(v, i, signed))),
                ColSlice::U32(v) => every(values, present, rows.clone().map(|i| number(v, i, signed))),
                ColSlice::U64(v) => every(values, present, rows.clone().map(|i| number(v, i, signed))),
                ColSlice::I32(v) => every(values, present, rows.clone().map(|i| number(v, i, signed))),
                ColSlice::I64(v) => every(values, present, rows.clone().map(|i| number(v, i, signed))),
            },
            Num::Col { col, of, signed } => {
                let has = |i: u32| holds_for(of, class(i));
                match c.get(col) {
                    ColSlice::U8(v) => some(
                        values,
                        present,
                        rows.clone().map(|i| has(i).then(|| number(v, i, signed))),
                    ),
                    ColSlice::U32(v) => some(
                        values,
                        present,
                        rows.clone().map(|i| has(i).then(|| number(v, i, signed))),
                    ),
                    ColSlice::U64(v) => some(
                        values,
                        present,
                        rows.clone().map(|i| has(i).then(|| number(v, i, signed))),
                    ),
                    ColSlice::I32(v) => some(
                        values,
                        present,
                        rows.clone().map(|i| has(i).then(|| number(v, i, signed))),
                    ),
                    ColSlice::I64(v) => some(
                        values,
                        present,
                        rows.clone().map(|i| has(i).then(|| number(v, i, signed))),
                    ),
                }
            }
            Num::Sector => some(
                values,
                present,
                rows.clone().map(|i| {
                    let s = c.sector.get(i as usize).copied().unwrap_or(0);
                    (block(i) && s != u64::MAX).then_some(s as i64)
                }),
            ),
            Num::Sum(a, b, of) => {
                let (a, b) = (c.get(a), c.get(b));
                some(
                    values,
                    present,
                    rows.clone()
                        .map(|i| holds_for(of, class(i)).then(|| int(fields::sum_at(a, b, i as usize)))),
                )
            }
            Num::Rest(f, a, b, of) => {
                let (f, a, b) = (c.get(f), c.get(a), c.get(b));
                some(
                    values,
                    present,
                    rows.clone()
                        .map(|i| holds_for(of, class(i)).then(|| int(fields::rest_at(f, a, b, i as usize)))),
                )
            }
            Num::Failed => every(values, present, rows.clone().map(|i| i64::from(ret(i) < 0))),
            Num::Time => {
                let start = self.meta.start_ts;
                every(
                    values,
                    present,
                    rows.clone().map(|i| int(u64_at(&c.ts, i).saturating_sub(start))),
                )
            }
            Num::Fd => some(
                values,
                present,
                rows.clone().map(|i| match c.fd.get(i as usize).copied().unwrap_or(0) {
                    fd if fd >= 0 && !block(i) => Some(i64::from(fd)),
                    _ => None,
                }),
            ),
            Num::Offset(g, j) => some(
                values,
                present,
                rows.clone().enumerate().map(|(r, i)| match self.keyed_cell(g, j, r) {
                    Cell::Absent => None,
                    _ => Some(u64_at(&c.offset, i) as i64),
                }),
            ),
        }
    }

    #[inline(always)]
    fn keyed_cell(&self, g: usize, j: usize, row: usize) -> Cell {
        let group = &self.groups[g];
        group.cells[group.rows[row] as usize * group.fields.len() + j]
    }

    /// The value of number `num` for the `row`th loaded row.
    #[inline(always)]
    fn num_cell(&self, c: &Columns, num: Num, row: usize) -> Cell {
        let i = self.rows[row] as usize;
        let u64_at = |v: &Vec<u64>| v.get(i).copied().unwrap_or(0);
        let class = c
            .class
            .get(i)
            .copied()
            .map_or(Class::Syscall, |k| Class::from_code(u64::from(k)).unwrap_or_default());
        let block = class == Class::Block;
        let ret = || c.ret.get(i).copied().unwrap_or(0);
        match num {
            Num::Col { col, of, signed } if holds_for(of, class) => {
                let v = c.get(col).wide(i);
                if signed {
                    Cell::Int(v as i64)
                } else {
                    Cell::UInt(v as u64)
                }
            }
            Num::Sum(a, b, of) if holds_for(of, class) => Cell::UInt(fields::sum_at(c.get(a), c.get(b), i)),
            Num::Rest(f, a, b, of) if holds_for(of, class) => {
                Cell::UInt(fields::rest_at(c.get(f), c.get(a), c.get(b), i))
            }
            Num::Col { .. } | Num::Sum(..) | Num::Rest(..) => Cell::Absent,
            Num::Sector => match c.sector.get(i).copied() {
                Some(s) if block && s != u64::MAX => Cell::UInt(s),
                _ => Cell::Absent,
            },
            Num::Failed => Cell::Bool(ret() < 0),
            Num::Time => Cell::UInt(u64_at(&c.ts).saturating_sub(self.meta.start_ts)),
            Num::Fd => match c.fd.get(i).copied().unwrap_or(0) {
                fd if fd >= 0 && !block => Cell::Int(i64::from(fd)),
                _ => Cell::Absent,
            },
            Num::Offset(g, j) => match self.keyed_cell(g, j, row) {
                Cell::Absent => Cell::Absent,
                _ => Cell::Int(u64_at(&c.offset) as i64),
            },
        }
    }
}

/// Value `i` of column `v` as the i64 an export stores: a field of type int as the value
/// is (an i64, or a u64 taken as one: a file offset), any other clamped to `i64::MAX`.
#[inline(always)]
fn number<T: Copy + Into<i128>>(v: &[T], i: u32, signed: bool) -> i64 {
    let x: i128 = v.get(i as usize).map_or(0, |&x| x.into());
    if signed {
        x as i64
    } else {
        x.clamp(0, i128::from(i64::MAX)) as i64
    }
}

/// A value for every row: appended, and each row marked present.
#[inline(always)]
fn every(values: &mut Vec<i64>, present: Option<&mut Vec<u8>>, it: impl ExactSizeIterator<Item = i64>) {
    let n = it.len();
    values.extend(it);
    if let Some(p) = present {
        p.resize(p.len() + n, 1);
    }
}

/// A value for some rows: those appended, and each row marked.
#[inline(always)]
fn some(values: &mut Vec<i64>, present: Option<&mut Vec<u8>>, it: impl Iterator<Item = Option<i64>>) {
    match present {
        Some(p) => {
            for v in it {
                p.push(u8::from(v.is_some()));
                values.extend(v);
            }
        }
        // A column without levels still has a value in every row (0 if one is absent).
        None => values.extend(it.map(|v| v.unwrap_or(0))),
    }
}

/// The cell of value `v`, a string's text appended to `text` in `flavor`'s form.
fn cell_of(v: &Value<'_>, flavor: Flavor, text: &mut Vec<u8>) -> Cell {
    match v {
        Value::Str(s) => {
            let start = text.len();
            match flavor {
                Flavor::Csv => text.extend_from_slice(super::text::csv_text(s).as_bytes()),
                // Writing a string into a vector cannot fail.
                Flavor::Json => {
                    let _ = serde_json::to_writer(&mut *text, s.as_ref());
                }
                Flavor::Raw => text.extend_from_slice(s.as_bytes()),
            }
            Cell::Str(start as u32, (text.len() - start) as u32)
        }
        Value::Int(v) => Cell::Int(*v),
        Value::UInt(v) | Value::Duration(v) | Value::Bytes(v) => Cell::UInt(*v),
        Value::Bool(b) => Cell::Bool(*b),
        Value::Absent => Cell::Absent,
    }
}

/// Append `v` in decimal, as `Display` writes it, without the formatting machinery.
#[inline]
pub fn push_u64(out: &mut Vec<u8>, mut v: u64) {
    let mut buf = [0u8; 20];
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    out.extend_from_slice(&buf[i..]);
}

/// Append `v` in decimal, as `Display` writes it.
#[inline]
pub fn push_i64(out: &mut Vec<u8>, v: i64) {
    if v < 0 {
        out.push(b'-');
    }
    push_u64(out, v.unsigned_abs());
}
