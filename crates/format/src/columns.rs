//! Events in columnar form, and the encoding of a chunk's body.
//!
//! A chunk body is a column directory followed by the columns' bytes (see FORMAT.md):
//! each column is stored whole, in one of three encodings, picked per chunk:
//! `CONST` (one value for every event), `VARINT` (one varint per event) or
//! `DELTA` (zigzag varint of the difference to the previous event). Signed columns are
//! zigzag-mapped first. A column missing from the directory is all zeros, which is how block-only
//! columns cost nothing in a chunk of syscalls, and how later versions can add columns.

use crate::model::{Class, Event};
use crate::varint::{self, Cursor};

/// A column of the event table. The discriminant is the on-disk column id.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Col {
    Class = 0,
    Ts = 1,
    Latency = 2,
    Pid = 3,
    Tid = 4,
    Proc = 5,
    Nr = 6,
    Ret = 7,
    Fd = 8,
    File = 9,
    Bytes = 10,
    Dev = 11,
    Sector = 12,
    Queue = 13,
    Op = 14,
    Flags = 15,
}

/// A set of columns, for decoding only what a filter or an aggregation reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ColSet(pub u32);

impl ColSet {
    pub const NONE: ColSet = ColSet(0);
    pub const ALL: ColSet = ColSet((1 << NCOLS) - 1);

    pub fn with(self, c: Col) -> ColSet {
        ColSet(self.0 | 1 << c as u32)
    }

    pub fn union(self, other: ColSet) -> ColSet {
        ColSet(self.0 | other.0)
    }

    pub fn contains(self, c: Col) -> bool {
        self.0 & (1 << c as u32) != 0
    }
}

impl FromIterator<Col> for ColSet {
    fn from_iter<I: IntoIterator<Item = Col>>(iter: I) -> Self {
        iter.into_iter().fold(ColSet::NONE, ColSet::with)
    }
}

const NCOLS: u32 = 16;

/// Most events one chunk may hold. A reader refuses a chunk summary claiming more, because a
/// constant or missing column expands to `events` values from no bytes at all: this cap is
/// what bounds the memory a hostile chunk can make a reader allocate (about 80 bytes per event
/// with every column decoded). It also keeps the worst-case chunk body (about 104 bytes per
/// event, incompressible) under the 64 MiB frame limit. Writers cap their chunks to it.
pub const MAX_CHUNK_EVENTS: u64 = 1 << 18;

/// Column encodings (on-disk codes).
pub(crate) mod enc {
    pub const CONST: u8 = 0;
    pub const VARINT: u8 = 1;
    pub const DELTA: u8 = 2;
}

/// A value stored in a column: mapped to and from the u64 that is varint-encoded.
pub trait ColValue: Copy + Default {
    fn to_raw(self) -> u64;
    /// Values out of range (only in a hostile file) are truncated, never a panic.
    fn from_raw(raw: u64) -> Self;
}

macro_rules! unsigned_col_value {
    ($($t:ty),*) => {$(
        impl ColValue for $t {
            #[inline]
            fn to_raw(self) -> u64 { self as u64 }
            #[inline]
            fn from_raw(raw: u64) -> Self { raw as $t }
        }
    )*};
}
unsigned_col_value!(u8, u32, u64);

impl ColValue for i64 {
    #[inline]
    fn to_raw(self) -> u64 {
        varint::zigzag(self)
    }
    #[inline]
    fn from_raw(raw: u64) -> Self {
        varint::unzigzag(raw)
    }
}

impl ColValue for i32 {
    #[inline]
    fn to_raw(self) -> u64 {
        varint::zigzag(i64::from(self))
    }
    #[inline]
    fn from_raw(raw: u64) -> Self {
        varint::unzigzag(raw) as i32
    }
}

/// Why a chunk body could not be decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BodyError(pub &'static str);

macro_rules! columns {
    ($( $(#[$doc:meta])* $field:ident : $ty:ty = $col:ident, $delta:expr; )*) => {
        /// Events as parallel vectors, one per column. Columns that were not decoded are empty;
        /// `len` is the number of events either way.
        #[derive(Clone, Debug, Default, PartialEq, Eq)]
        pub struct Columns {
            len: usize,
            /// Which columns hold values (all of them for a `Columns` built by `push`).
            decoded: u32,
            $( $(#[$doc])* pub $field: Vec<$ty>, )*
        }

        impl Columns {
            /// Append one event (every column).
            pub fn push(&mut self, e: &Event) {
                self.decoded = ColSet::ALL.0;
                self.len += 1;
                $( self.$field.push(columns!(@get e, $field)); )*
            }

            /// Drop every event, keeping the allocations.
            pub fn clear(&mut self) {
                self.len = 0;
                self.decoded = 0;
                $( self.$field.clear(); )*
            }

            /// Event `i` as a row; columns that were not decoded read as zero.
            pub fn event(&self, i: usize) -> Event {
                Event {
                    $( $field: columns!(@set self.$field.get(i).copied().unwrap_or_default(), $field), )*
                }
            }

            /// Append the chunk body encoding of these events to `out`.
            pub fn encode(&self, out: &mut Vec<u8>) {
                let mut dir = Vec::with_capacity(64);
                let mut data = Vec::with_capacity(self.len * 12);
                let mut ncols = 0u64;
                $(
                    if encode_column(&self.$field, $delta, &mut data, &mut dir, Col::$col) {
                        ncols += 1;
                    }
                )*
                varint::put(out, ncols);
                out.extend_from_slice(&dir);
                out.extend_from_slice(&data);
            }

            /// Decode `n` events from a chunk body, only the columns in `want`.
            pub fn decode(&mut self, body: &[u8], n: usize, want: ColSet) -> Result<(), BodyError> {
                self.clear();
                let mut cur = Cursor::new(body);
                let ncols = cur.varint().ok_or(BodyError("column directory cut short"))?;
                if ncols > 64 {
                    return Err(BodyError("column directory too long"));
                }
                let mut dir = Vec::with_capacity(ncols as usize);
                for _ in 0..ncols {
                    let id = cur.varint().ok_or(BodyError("column directory cut short"))?;
                    let encoding = cur.u8().ok_or(BodyError("column directory cut short"))?;
                    let len = cur.varint().ok_or(BodyError("column directory cut short"))?;
                    dir.push((id, encoding, len));
                }
                let mut seen = 0u64;
                for (id, encoding, len) in dir {
                    let data = cur.bytes(len).ok_or(BodyError("column longer than the chunk"))?;
                    if id < 64 {
                        if seen & (1 << id) != 0 {
                            return Err(BodyError("column stored twice"));
                        }
                        seen |= 1 << id;
                    }
                    $(
                        if id == Col::$col as u64 && want.contains(Col::$col) {
                            decode_column(data, encoding, n, &mut self.$field)?;
                        }
                    )*
                    // Other ids are columns from a newer writer: skipped.
                }
                $(
                    if want.contains(Col::$col) && seen & (1 << Col::$col as u64) == 0 {
                        self.$field.resize(n, <$ty>::default());
                    }
                )*
                self.len = n;
                self.decoded = want.0 & ColSet::ALL.0;
                Ok(())
            }
        }
    };
    (@get $e:ident, class) => { $e.class as u8 };
    (@get $e:ident, $field:ident) => { $e.$field };
    (@set $v:expr, class) => { Class::from_code(u64::from($v)).unwrap_or_default() };
    (@set $v:expr, $field:ident) => { $v };
}

columns! {
    /// [`Class`] code.
    class: u8 = Class, false;
    ts: u64 = Ts, true;
    latency: u64 = Latency, false;
    pid: u32 = Pid, false;
    tid: u32 = Tid, false;
    proc: u32 = Proc, false;
    nr: u32 = Nr, false;
    ret: i64 = Ret, false;
    fd: i32 = Fd, false;
    file: u32 = File, false;
    bytes: u64 = Bytes, false;
    dev: u32 = Dev, false;
    sector: u64 = Sector, true;
    queue: u64 = Queue, false;
    op: u8 = Op, false;
    flags: u32 = Flags, false;
}

impl Columns {
    /// Number of events.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The columns that hold values.
    pub fn decoded(&self) -> ColSet {
        ColSet(self.decoded)
    }
}

/// Encode one column into `data`, its directory entry into `dir`. Returns false (and writes
/// nothing) when every value is zero: a missing column reads as zeros.
fn encode_column<T: ColValue>(values: &[T], delta: bool, data: &mut Vec<u8>, dir: &mut Vec<u8>, col: Col) -> bool {
    let Some(first) = values.first() else { return false };
    let first = first.to_raw();
    let start = data.len();
    let encoding = if values.iter().all(|v| v.to_raw() == first) {
        if first == 0 {
            return false;
        }
        varint::put(data, first);
        enc::CONST
    } else if delta {
        let mut prev = 0u64;
        for v in values {
            let raw = v.to_raw();
            varint::put(data, varint::zigzag(raw.wrapping_sub(prev) as i64));
            prev = raw;
        }
        enc::DELTA
    } else {
        for v in values {
            varint::put(data, v.to_raw());
        }
        enc::VARINT
    };
    varint::put(dir, col as u64);
    dir.push(encoding);
    varint::put(dir, (data.len() - start) as u64);
    true
}

fn decode_column<T: ColValue>(data: &[u8], encoding: u8, n: usize, out: &mut Vec<T>) -> Result<(), BodyError> {
    let mut cur = Cursor::new(data);
    match encoding {
        enc::CONST => {
            let v = cur.varint().ok_or(BodyError("constant column cut short"))?;
            out.resize(n, T::from_raw(v));
        }
        enc::VARINT => {
            // Each value takes at least one byte: a count beyond the bytes is corrupt, and
            // checking it first bounds the allocation by the (already capped) body size.
            if n > data.len() {
                return Err(BodyError("column shorter than its event count"));
            }
            out.reserve(n);
            for _ in 0..n {
                out.push(T::from_raw(cur.varint().ok_or(BodyError("column cut short"))?));
            }
        }
        enc::DELTA => {
            if n > data.len() {
                return Err(BodyError("column shorter than its event count"));
            }
            out.reserve(n);
            let mut prev = 0u64;
            for _ in 0..n {
                let d = cur.varint().ok_or(BodyError("column cut short"))?;
                prev = prev.wrapping_add(varint::unzigzag(d) as u64);
                out.push(T::from_raw(prev));
            }
        }
        _ => return Err(BodyError("unknown column encoding")),
    }
    if !cur.is_empty() {
        return Err(BodyError("column longer than its event count"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(n: usize) -> Vec<Event> {
        (0..n)
            .map(|i| Event {
                class: if i % 7 == 0 { Class::Block } else { Class::Syscall },
                ts: 1_000_000 + i as u64 * 997,
                latency: (i as u64 * 31) % 5000,
                pid: 100 + (i % 3) as u32,
                tid: 200 + (i % 5) as u32,
                proc: 1,
                nr: (i % 4) as u32,
                ret: if i % 11 == 0 { -2 } else { 4096 },
                fd: if i % 7 == 0 { -1 } else { 3 },
                file: (i % 2) as u32,
                bytes: 4096,
                dev: if i % 7 == 0 { 0xfd00000 } else { 0 },
                sector: (i as u64) * 8,
                queue: 0,
                op: 1,
                flags: 0,
            })
            .collect()
    }

    #[test]
    fn roundtrip_all_columns() {
        let events = sample(1000);
        let mut cols = Columns::default();
        events.iter().for_each(|e| cols.push(e));
        let mut body = Vec::new();
        cols.encode(&mut body);
        let mut back = Columns::default();
        back.decode(&body, events.len(), ColSet::ALL).unwrap();
        assert_eq!(back, cols);
        assert_eq!(back.event(7), events[7]);
    }

    #[test]
    fn partial_decode_reads_only_wanted_columns() {
        let events = sample(100);
        let mut cols = Columns::default();
        events.iter().for_each(|e| cols.push(e));
        let mut body = Vec::new();
        cols.encode(&mut body);
        let mut back = Columns::default();
        let want = ColSet::NONE.with(Col::Latency).with(Col::Queue);
        back.decode(&body, events.len(), want).unwrap();
        assert_eq!(back.latency, cols.latency);
        assert_eq!(
            back.queue,
            vec![0; 100],
            "an all-zero column is omitted and reads as zeros"
        );
        assert!(back.ts.is_empty());
        assert_eq!(back.len(), 100);
    }

    #[test]
    fn wrong_count_is_an_error() {
        let events = sample(10);
        let mut cols = Columns::default();
        events.iter().for_each(|e| cols.push(e));
        let mut body = Vec::new();
        cols.encode(&mut body);
        let mut back = Columns::default();
        assert!(back.decode(&body, 11, ColSet::ALL).is_err());
        assert!(back.decode(&body, 9, ColSet::ALL).is_err());
    }
}
