//! Events in columnar form, and the encoding of a chunk's body.
//!
//! A chunk body is a column directory followed by the columns' bytes (see FORMAT.md). Each
//! column is stored whole, in the encoding that is smallest for it in this chunk:
//! `CONST` (one value for every event), `VARINT` (one varint per event), `DELTA` (zigzag
//! varint of the difference to the previous event), `SPARSE` (only the non-zero values and
//! their positions), `DICT` (up to 256 distinct values, then one index byte per event),
//! `PACKED_DICT` (up to 16 values, indices packed 1, 2 or 4 bits each), `VBYTE` (each value
//! in one of four byte lengths, the 2-bit length codes apart from the value bytes; since 1.2)
//! or, for `ts` only, `GAP` (the time since the same thread's previous syscall ended, as
//! varints) and `GAP_VBYTE` (the same values laid out as VBYTE; since 1.2).
//! Signed columns are zigzag-mapped first. Each column is then compressed on its own (zstd, or
//! stored raw when that is not smaller), so a reader that wants two columns decompresses two.
//! A column missing from the directory is all zeros, which is how block-only columns cost
//! nothing in a chunk of syscalls, and how later versions can add columns.

use crate::model::{Class, Event};
use crate::pack::{self, Packer, Unpacker};
use crate::varint::{self, Cursor};

mod codec;
use codec::{
    decode_column, decode_gap_ts, decode_planes, decode_ref, encode_column, encode_gap, gap_values, put_packed,
    put_planes, ref_codes, unpack_column, varint_len, PlaneBufs,
};

/// A set of columns, for decoding only what a filter or an aggregation reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ColSet(pub u64);

impl ColSet {
    /// No column: reading a chunk with it gives the event count and nothing else.
    pub const NONE: ColSet = ColSet(0);
    /// Every column this version knows.
    pub const ALL: ColSet = ColSet((1 << NCOLS) - 1);

    /// This set with `c` added.
    pub const fn with(self, c: Col) -> ColSet {
        ColSet(self.0 | 1 << c as u64)
    }

    /// The columns in either set.
    pub fn union(self, other: ColSet) -> ColSet {
        ColSet(self.0 | other.0)
    }

    /// Whether `c` is in the set.
    pub fn contains(self, c: Col) -> bool {
        self.0 & (1 << c as u64) != 0
    }

    /// The columns of the set, by on-disk id.
    pub fn cols(self) -> impl Iterator<Item = Col> {
        Col::ALL.into_iter().filter(move |&c| self.contains(c))
    }
}

impl FromIterator<Col> for ColSet {
    fn from_iter<I: IntoIterator<Item = Col>>(iter: I) -> Self {
        iter.into_iter().fold(ColSet::NONE, ColSet::with)
    }
}

/// Most events one chunk may hold. A reader refuses a chunk summary claiming more, because a
/// constant or missing column expands to `events` values from no bytes at all: this cap is
/// what bounds the memory a hostile chunk can make a reader allocate (about 80 bytes per event
/// with every column decoded). It also keeps the worst-case chunk body (about 104 bytes per
/// event, incompressible) under the 64 MiB frame limit. Writers cap their chunks to it.
pub const MAX_CHUNK_EVENTS: u64 = 1 << 18;

/// Most events a chunk may hold per byte of its frame (header and payload). A constant or
/// missing column costs no bytes, so without this a chunk of a few dozen bytes could claim
/// [`MAX_CHUNK_EVENTS`] events, and a small file millions of lines of export. Real recordings
/// take about a byte per event at their densest (1.08 for `dd bs=1` at 6 M events) and 6 bytes
/// on average; the writer splits a chunk denser than this (only identical synthetic events
/// come near it). A reader refuses a chunk that claims more, and an index whose chunks claim
/// more than the bytes between them hold, so a file of `n` bytes yields at most `128 n` events.
pub const MAX_EVENTS_PER_BYTE: u64 = 128;

/// Whether a chunk frame of `frame_len` bytes (header and payload) may hold `events` events
/// ([`MAX_EVENTS_PER_BYTE`]).
pub fn chunk_holds(frame_len: u64, events: u64) -> bool {
    frame_len.saturating_mul(MAX_EVENTS_PER_BYTE) >= events
}

/// The most bytes a column of `n` values of `col`'s type can take in `encoding`, its varints
/// in their shortest form (as writers write them); `None` for an unknown encoding. A reader
/// refuses a column that declares more before decompressing it: without this a few KB of zstd
/// could make every chunk's column 256 MiB, where 2^18 events of the widest type need 3.4 MB.
pub(crate) fn max_column_bytes(col: Col, encoding: u8, n: u64) -> Option<u64> {
    let bits = col.raw_bits();
    // A value's varint: 2 bytes for a u8, 5 for a u32, 10 for a u64.
    let value = u64::from(bits.div_ceil(7));
    // A zigzag delta between two values spans one more bit: 2, 5 and 10 bytes again.
    let delta = u64::from((bits + 1).min(64).div_ceil(7));
    // A count or position, at most n.
    let pos = varint_len(n) as u64;
    let n = n as u128;
    let max = match encoding {
        // One varint, in any of its forms (at most 10 bytes).
        enc::CONST => 10,
        enc::VARINT => n * value as u128,
        enc::DELTA => n * delta as u128,
        // A zigzag delta plus one (0 for no file): 5 bytes for a u32 (34 bits at most).
        enc::REF => n * (bits + 2).min(64).div_ceil(7) as u128,
        enc::GAP => n * 10,
        // k ≤ n, then k gaps (each < n) and k values.
        enc::SPARSE => pos as u128 + n * (pos + value) as u128,
        // k ≤ 256 keys, then one byte per event.
        enc::DICT => 2 + 256 * value as u128 + n,
        // bits, k ≤ 16 keys, then at most 4 bits per event.
        enc::PACKED_DICT => 2 + 16 * value as u128 + n.div_ceil(2),
        // four lengths, 2 bits per event, at most 8 bytes per event.
        enc::VBYTE | enc::GAP_VBYTE => 4 + n.div_ceil(4) + 8 * n,
        // flags, a bitmap stream, width, 8 streams of at most n bytes (each stream's codec
        // and a 10-byte length at most); a stream is stored raw when zstd does not shrink it.
        enc::PLANES | enc::GAP_PLANES => 2 + 9 * 11 + n.div_ceil(8) + 8 * n,
        // The selector, the inner code, then at most `n` values in the largest inner encoding.
        enc::MASKED => {
            let inner = [
                enc::CONST,
                enc::VARINT,
                enc::DELTA,
                enc::SPARSE,
                enc::DICT,
                enc::PACKED_DICT,
                enc::VBYTE,
                enc::PLANES,
            ];
            let most = inner
                .iter()
                .filter_map(|&e| max_column_bytes(col, e, n as u64))
                .max()
                .unwrap_or(0);
            2 + u128::from(most)
        }
        _ => return None,
    };
    Some(u64::try_from(max).unwrap_or(u64::MAX))
}

/// Refuse a column of `n` values whose decompressed size is more than its encoding needs.
fn check_column_size(col: Col, encoding: u8, raw_len: u64, n: usize) -> Result<(), DecodeError> {
    let max = max_column_bytes(col, encoding, n as u64).ok_or(BodyError("unknown column encoding"))?;
    if raw_len > max {
        return Err(DecodeError::TooLarge { col, len: raw_len, max });
    }
    Ok(())
}

/// Column encodings (on-disk codes).
pub(crate) mod enc {
    pub const CONST: u8 = 0;
    pub const VARINT: u8 = 1;
    pub const DELTA: u8 = 2;
    pub const SPARSE: u8 = 3;
    pub const DICT: u8 = 4;
    /// `ts` only: the gap since the same thread's previous syscall ended (see [`super::ungap`]).
    pub const GAP: u8 = 5;
    /// A dictionary of at most 16 values whose indices are packed 1, 2 or 4 bits each.
    pub const PACKED_DICT: u8 = 6;
    /// Each value in 1 of 4 byte lengths, the 2-bit length codes apart from the value bytes
    /// (see [`super::read_vbyte`]).
    pub const VBYTE: u8 = 7;
    /// `ts` only: the values of [`GAP`] laid out as [`VBYTE`].
    pub const GAP_VBYTE: u8 = 8;
    /// Each byte of the values in a stream of its own, the streams compressed one by one,
    /// optionally only the non-zero values behind a presence bitmap (since 1.7; see
    /// `codec::put_planes`).
    pub const PLANES: u8 = 9;
    /// `ts` only: the values of [`GAP`] laid out as [`PLANES`] (since 1.7).
    pub const GAP_PLANES: u8 = 10;
    /// Values for one side of the block/other split only, the rest 0: a selector byte
    /// ([`MASK_BLOCKS`] or [`MASK_OTHERS`]), the inner encoding's code, then that encoding of
    /// the selected events' values (since 1.8; see `codec::decode_masked`).
    pub const MASKED: u8 = 11;
    /// `file` only: each event's file relative to its thread's previous one (since 1.11; see
    /// `codec::ref_codes`).
    pub const REF: u8 = 12;
    /// [`MASKED`]'s selector: the block requests (class code 1).
    pub const MASK_BLOCKS: u8 = 0;
    /// [`MASKED`]'s selector: every event that is not a block request.
    pub const MASK_OTHERS: u8 = 1;

    /// Whether `encoding` is one of the `ts`-only gap encodings.
    pub fn is_gap(encoding: u8) -> bool {
        matches!(encoding, GAP | GAP_VBYTE | GAP_PLANES)
    }
}

/// Reusable buffers for encoding a chunk body.
#[derive(Debug)]
pub(crate) struct EncodeBufs {
    col: Vec<u8>,
    dir: Vec<u8>,
    data: Vec<u8>,
    /// `ts`'s gaps, for its [`enc::GAP_PLANES`] form.
    gaps: Vec<u64>,
    /// A [`enc::MASKED`] column's values, those of the events it keeps.
    masked: Vec<u64>,
    plane_bufs: PlaneBufs,
    /// Each column's form in the last trial ([`store_column`]), by column id.
    forms: [Form; NCOLS as usize],
    /// Full chunks encoded so far, for the trials' rhythm.
    full_chunks: u32,
}

impl Default for EncodeBufs {
    fn default() -> Self {
        EncodeBufs {
            col: Vec::new(),
            dir: Vec::new(),
            data: Vec::new(),
            gaps: Vec::new(),
            masked: Vec::new(),
            plane_bufs: PlaneBufs::default(),
            forms: [Form::Unknown; NCOLS as usize],
            full_chunks: 0,
        }
    }
}

/// Which of its two forms a column that may be stored as byte planes took in the last chunk
/// that tried both ([`store_column`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum Form {
    /// Not tried yet.
    #[default]
    Unknown,
    /// Its usual encoding (compressed or not) was smaller.
    Usual,
    /// Its byte planes were smaller.
    Planes,
}

/// A chunk of at least this many events tries both forms of a column only every
/// [`FORM_TRIAL_EVERY`] chunks, taking the last trial's winner in between: full chunks come
/// at high event rates, where the writer's speed matters (a second zstd pass per wide column
/// cost a fifth of it) and a recording's mix changes slowly. Smaller chunks always try both.
const FORM_TRIAL_ABOVE: usize = 16_384;
/// See [`FORM_TRIAL_ABOVE`].
const FORM_TRIAL_EVERY: u32 = 8;

/// Append a column to `data`: its bytes `usual` (in `encoding`) compressed when that saves an
/// eighth, or its byte planes (after `prefix`: a [`enc::MASKED`] column's selector and inner
/// code) when `planes_of` gives their encoding and values and they are smaller as stored.
/// With `trial`, both forms are compressed and the smaller kept (which becomes `form`);
/// without, the form `form` names (both if unknown). Returns the encoding, codec, raw and
/// stored length for the directory.
#[allow(clippy::too_many_arguments)]
fn store_column(
    encoding: u8,
    usual: &[u8],
    planes_of: Option<(u8, impl Fn(usize) -> u64 + Copy)>,
    prefix: &[u8],
    n: usize,
    packer: Option<&mut Packer>,
    form: &mut Form,
    trial: bool,
    bufs: &mut PlaneBufs,
    data: &mut Vec<u8>,
) -> std::io::Result<(u8, u8, usize, usize)> {
    let start = data.len();
    let Some(p) = packer.filter(|_| usual.len() >= MIN_COMPRESS) else {
        data.extend_from_slice(usual);
        return Ok((encoding, pack::RAW, usual.len(), usual.len()));
    };
    let trial = trial || *form == Form::Unknown;
    let planes_of = planes_of.filter(|_| trial || *form == Form::Planes);
    let mut codec = pack::RAW;
    if trial || planes_of.is_none() {
        // Decompressing costs about a nanosecond per byte, more than decoding the column: a
        // saving under an eighth is not worth it.
        codec = put_packed(usual, p, 8, data)?;
    }
    let Some((alt, get)) = planes_of else {
        return Ok((encoding, codec, usual.len(), data.len() - start));
    };
    let mut planes = std::mem::take(&mut bufs.out);
    planes.clear();
    planes.extend_from_slice(prefix);
    put_planes(get, n, bufs, &mut planes)?;
    // Without a trial the planes are kept unless larger than the usual form uncompressed.
    let rival = if trial { data.len() - start } else { usual.len() };
    let won = planes.len() < rival;
    if trial {
        *form = if won { Form::Planes } else { Form::Usual };
    }
    let result = if won {
        data.truncate(start);
        data.extend_from_slice(&planes);
        (alt, pack::RAW, planes.len(), planes.len())
    } else {
        if !trial {
            data.extend_from_slice(usual);
        }
        (encoding, codec, usual.len(), data.len() - start)
    };
    bufs.out = planes;
    Ok(result)
}

/// Where [`put_ts`], [`put_file`] and [`put_column`] write: scratch space, the directory and
/// the columns.
struct ColumnOut<'a> {
    scratch: &'a mut Vec<u8>,
    plane_bufs: &'a mut PlaneBufs,
    dir: &'a mut Vec<u8>,
    data: &'a mut Vec<u8>,
}

impl ColumnOut<'_> {
    /// Write column `col` straight as byte planes of the `n` values `get(i)`, after `prefix`
    /// (a [`enc::MASKED`] column's selector and inner code), stored raw as `encoding`: a full
    /// chunk between trials whose column took planes last time. False when every value is 0
    /// and the column is left out.
    fn planes(
        &mut self,
        col: Col,
        encoding: u8,
        prefix: &[u8],
        get: impl Fn(usize) -> u64,
        n: usize,
    ) -> std::io::Result<bool> {
        let start = self.data.len();
        self.data.extend_from_slice(prefix);
        if put_planes(get, n, self.plane_bufs, self.data)? == n {
            self.data.truncate(start);
            return Ok(false);
        }
        let len = self.data.len() - start;
        self.entry(col, encoding, pack::RAW, len, len);
        Ok(true)
    }

    /// Store column `col`, built in `scratch` as `encoding`, with [`store_column`] (`planes_of`,
    /// `prefix`, `form` and `trial` as there), and enter it in the directory.
    #[allow(clippy::too_many_arguments)]
    fn store(
        &mut self,
        col: Col,
        encoding: u8,
        planes_of: Option<(u8, impl Fn(usize) -> u64 + Copy)>,
        prefix: &[u8],
        n: usize,
        packer: Option<&mut Packer>,
        form: &mut Form,
        trial: bool,
    ) -> std::io::Result<bool> {
        let (encoding, codec, raw_len, stored_len) = store_column(
            encoding,
            self.scratch,
            planes_of,
            prefix,
            n,
            packer,
            form,
            trial,
            self.plane_bufs,
            self.data,
        )?;
        self.entry(col, encoding, codec, raw_len, stored_len);
        Ok(true)
    }

    /// The column's directory entry.
    fn entry(&mut self, col: Col, encoding: u8, codec: u8, raw_len: usize, stored_len: usize) {
        varint::put(self.dir, col as u64);
        self.dir.extend([encoding, codec]);
        varint::put(self.dir, raw_len as u64);
        varint::put(self.dir, stored_len as u64);
    }
}

/// What [`put_column`] writes a column as.
#[derive(Clone, Copy)]
struct Shape {
    col: Col,
    /// Whether DELTA is tried.
    delta: bool,
    /// The [`enc::MASKED`] selector, when the values given are those of the events it keeps.
    mask: Option<u8>,
    /// Whether both of a wide column's forms are tried ([`store_column`]).
    trial: bool,
}

/// The [`enc::MASKED`] selector the writer tries for `col`, if any.
///
/// A column for one side of the block/other split ([`Col::holds`]) is
/// stored [`enc::MASKED`] when a chunk has both kinds of events. Masked, a chunk's interleaving
/// of block requests and calls is stored once (in `class`), not again in every such column's
/// zeros (fio 4 KiB randread, a third of its events block requests: dev, flags and cause each
/// cost 0.07 bytes/event unmasked).
fn mask_of(col: Col) -> Option<u8> {
    match col.holds() {
        Holds::Blocks => Some(enc::MASK_BLOCKS),
        Holds::Others => Some(enc::MASK_OTHERS),
        Holds::All => None,
    }
}

/// Write the `ts` column of `c` (as gaps, see `codec::encode_gap`); false when it is all
/// zeros and left out.
fn put_ts(
    c: &Columns,
    gaps: &mut Vec<u64>,
    trial: bool,
    packer: Option<&mut Packer>,
    form: &mut Form,
    mut out: ColumnOut,
) -> std::io::Result<bool> {
    out.scratch.clear();
    // A full chunk between trials whose ts took planes last time: planes straight away,
    // without building the usual form.
    if packer.is_some() && !trial && *form == Form::Planes && gap_values(c, gaps) {
        return out.planes(Col::Ts, enc::GAP_PLANES, &[], |i| gaps[i], c.len);
    }
    let Some(encoding) = encode_gap(c, gaps, out.scratch) else {
        return Ok(false);
    };
    let planes_tried = !matches!(encoding, enc::CONST | enc::DICT | enc::PACKED_DICT) && gaps.len() == c.len;
    let planes_of = planes_tried.then_some((enc::GAP_PLANES, |i: usize| gaps[i]));
    out.store(Col::Ts, encoding, planes_of, &[], c.len, packer, form, trial)
}

/// Write the `file` column of `c`: in the smallest of the usual encodings, or as
/// [`enc::REF`] codes (`codes`) when those take fewer bytes; false when every file is 0.
fn put_file(
    c: &Columns,
    codes: &mut Vec<u64>,
    trial: bool,
    packer: Option<&mut Packer>,
    form: &mut Form,
    mut out: ColumnOut,
) -> std::io::Result<bool> {
    out.scratch.clear();
    let get = |i: usize| u64::from(c.file.get(i).copied().unwrap_or(0));
    let Some(mut encoding) = encode_column(get, c.len, false, false, out.scratch) else {
        return Ok(false);
    };
    // A constant or a packed dictionary of a few files is already as small as it gets.
    if !matches!(encoding, enc::CONST | enc::PACKED_DICT) {
        ref_codes(&c.file, &c.tid, codes);
        // Measured on real captures, against the usual encodings, after zstd: find over a tree
        // 0.89 -> 0.30 bytes/event, tar into a pipe (see `ref_codes`) 0.40 -> 0.33.
        if codes.iter().map(|&v| codec::varint_len(v)).sum::<usize>() < out.scratch.len() {
            out.scratch.clear();
            codes.iter().for_each(|&v| varint::put(out.scratch, v));
            encoding = enc::REF;
        }
    }
    let planes_of = None::<(u8, fn(usize) -> u64)>;
    out.store(Col::File, encoding, planes_of, &[], c.len, packer, form, trial)
}

/// Write a column of `n` values (`get(i)`), in the smallest of its encodings (and for a wide
/// column, byte planes: see [`store_column`]), [`enc::MASKED`] when `shape` has a selector;
/// false when every value is 0 and the column is left out.
fn put_column(
    shape: Shape,
    get: impl Fn(usize) -> u64 + Copy,
    n: usize,
    packer: Option<&mut Packer>,
    form: &mut Form,
    mut out: ColumnOut,
) -> std::io::Result<bool> {
    let Shape {
        col,
        delta,
        mask,
        trial,
    } = shape;
    let planes_encoding = if mask.is_some() { enc::MASKED } else { enc::PLANES };
    let prefix = mask.map(|m| [m, enc::PLANES]);
    let prefix = prefix.as_ref().map_or(&[][..], |p| &p[..]);
    out.scratch.clear();
    // A full chunk between trials whose column took planes last time: planes straight away.
    if packer.is_some() && !trial && col.planes_tried() && *form == Form::Planes {
        return out.planes(col, planes_encoding, prefix, get, n);
    }
    if let Some(m) = mask {
        // The inner code is filled in once chosen.
        out.scratch.extend([m, 0]);
    }
    // VBYTE is tried for the latency-like columns only: on ids and sizes (file, bytes) zstd
    // finds more in varints.
    let vbyte = matches!(col, Col::Latency | Col::Queue | Col::DiskTime);
    let Some(inner) = encode_column(get, n, delta, vbyte, out.scratch) else {
        return Ok(false);
    };
    let encoding = match mask {
        Some(_) => {
            out.scratch[1] = inner;
            enc::MASKED
        }
        None => inner,
    };
    // Wide values (ns, sectors) may also be stored as byte planes.
    let planes_tried = col.planes_tried() && !matches!(inner, enc::CONST | enc::DICT | enc::PACKED_DICT);
    let planes_of = planes_tried.then_some((planes_encoding, get));
    out.store(col, encoding, planes_of, prefix, n, packer, form, trial)
}

/// Columns whose encoded bytes are shorter than this are stored raw: zstd's frame overhead
/// would eat the gain.
const MIN_COMPRESS: usize = 64;

/// A value stored in a column: mapped to and from the u64 that is varint-encoded.
pub trait ColValue: Copy + Default {
    /// Bits of the widest raw value of the type (FORMAT.md): 8 for `u8`, 32 for `u32` and
    /// `i32` (zigzag), 64 for `u64` and `i64` (zigzag).
    const BITS: u32;
    /// The u64 the column stores: the value widened, a signed one zigzag-mapped first.
    fn to_raw(self) -> u64;
    /// Values out of range (only in a hostile file) are truncated, never a panic.
    fn from_raw(raw: u64) -> Self;
}

macro_rules! unsigned_col_value {
    ($($t:ty),*) => {$(
        impl ColValue for $t {
            const BITS: u32 = <$t>::BITS;
            #[inline]
            fn to_raw(self) -> u64 { self as u64 }
            #[inline]
            fn from_raw(raw: u64) -> Self { raw as $t }
        }
    )*};
}
unsigned_col_value!(u8, u32, u64);

impl ColValue for i64 {
    const BITS: u32 = 64;
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
    const BITS: u32 = 32;
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
pub struct BodyError(
    /// What was wrong, for the error message: `column directory cut short`.
    pub &'static str,
);

/// Why a chunk body could not be decoded, with the numbers when a column was too large.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum DecodeError {
    Body(BodyError),
    /// Column `col` declares `len` bytes decompressed where its encoding needs at most `max`
    /// for the chunk's events ([`max_column_bytes`]).
    TooLarge {
        col: Col,
        len: u64,
        max: u64,
    },
}

impl From<BodyError> for DecodeError {
    fn from(e: BodyError) -> DecodeError {
        DecodeError::Body(e)
    }
}

/// Which events a column is for. A column for one side of the block/other split has 0 for
/// the other side's events, as a rule: the writer then stores it for its side alone
/// (masked), and stores it whole for a chunk where an event of the other side has a
/// value (the `unfinished` flag, which any event may carry). A field of one side never reads
/// a column of the other.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Holds {
    /// Every event.
    All,
    /// Block requests ([`Class::Block`]).
    Blocks,
    /// Every event but block requests: syscalls and io_uring requests.
    Others,
}

/// One column of a [`Columns`], typed: what [`Columns::get`] gives.
#[derive(Clone, Copy, Debug)]
#[allow(missing_docs)]
pub enum ColSlice<'a> {
    U8(&'a [u8]),
    U32(&'a [u32]),
    U64(&'a [u64]),
    I32(&'a [i32]),
    I64(&'a [i64]),
}

/// One column of a [`Columns`], typed and mutable: what [`Columns::get_mut`] gives.
#[derive(Debug)]
#[allow(missing_docs)]
pub enum ColVecMut<'a> {
    U8(&'a mut Vec<u8>),
    U32(&'a mut Vec<u32>),
    U64(&'a mut Vec<u64>),
    I32(&'a mut Vec<i32>),
    I64(&'a mut Vec<i64>),
}

/// The [`ColSlice`] and [`ColVecMut`] variants of a column's type.
trait Sliced: Sized {
    fn sliced(v: &[Self]) -> ColSlice<'_>;
    fn sliced_mut(v: &mut Vec<Self>) -> ColVecMut<'_>;
}

macro_rules! sliced {
    ($($t:ty => $v:ident),*) => {$(
        impl Sliced for $t {
            fn sliced(v: &[$t]) -> ColSlice<'_> {
                ColSlice::$v(v)
            }
            fn sliced_mut(v: &mut Vec<$t>) -> ColVecMut<'_> {
                ColVecMut::$v(v)
            }
        }
    )*};
}
sliced!(u8 => U8, u32 => U32, u64 => U64, i32 => I32, i64 => I64);

impl ColSlice<'_> {
    /// Number of values (0 for a column that was not decoded).
    pub fn len(&self) -> usize {
        match self {
            ColSlice::U8(v) => v.len(),
            ColSlice::U32(v) => v.len(),
            ColSlice::U64(v) => v.len(),
            ColSlice::I32(v) => v.len(),
            ColSlice::I64(v) => v.len(),
        }
    }

    /// Whether there are no values.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Value `i` as an i128 (every column type fits), 0 past the end.
    #[inline]
    pub fn wide(&self, i: usize) -> i128 {
        match self {
            ColSlice::U8(v) => v.get(i).map_or(0, |&x| i128::from(x)),
            ColSlice::U32(v) => v.get(i).map_or(0, |&x| i128::from(x)),
            ColSlice::U64(v) => v.get(i).map_or(0, |&x| i128::from(x)),
            ColSlice::I32(v) => v.get(i).map_or(0, |&x| i128::from(x)),
            ColSlice::I64(v) => v.get(i).map_or(0, |&x| i128::from(x)),
        }
    }
}

/// The event table's columns, declared once: for each, its field of [`Columns`] and type, its
/// [`Col`] and on-disk id, which events it [`Holds`] values for, whether its `DELTA` form is
/// tried, and whether its [`enc::PLANES`] form is compared with its usual one (times in ns,
/// sectors and offsets, whose low bytes are near-random; elsewhere planes seldom win and
/// would cost a second compression). Everything else about a column (its width, the class
/// masks, the list of all of them) is derived from this one table.
macro_rules! columns {
    ($( $(#[$doc:meta])* $field:ident : $ty:ty = $col:ident($id:literal), $holds:ident, delta: $delta:literal, planes: $planes:literal; )*) => {
        /// A column of the event table. The discriminant is the on-disk column id.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        #[repr(u8)]
        pub enum Col {
            $( $(#[$doc])* $col = $id, )*
        }

        /// How many columns this version knows.
        const NCOLS: u32 = [$( Col::$col ),*].len() as u32;

        impl Col {
            /// Every column, by on-disk id (`Col::ALL[id]` is the column with that id).
            pub const ALL: [Col; NCOLS as usize] = [$( Col::$col ),*];

            /// Bits of the widest raw value of the column's type ([`ColValue::BITS`]).
            pub const fn raw_bits(self) -> u32 {
                match self {
                    $( Col::$col => <$ty as ColValue>::BITS, )*
                }
            }

            /// Which events the column holds values for.
            pub const fn holds(self) -> Holds {
                match self {
                    $( Col::$col => Holds::$holds, )*
                }
            }

            /// The column's name: its field of [`Columns`] and of [`Event`].
            pub const fn name(self) -> &'static str {
                match self {
                    $( Col::$col => stringify!($field), )*
                }
            }

            /// Whether the writer tries the column's `DELTA` form.
            const fn delta(self) -> bool {
                match self {
                    $( Col::$col => $delta, )*
                }
            }

            /// Whether the writer compares the column's byte planes with its usual form.
            const fn planes_tried(self) -> bool {
                match self {
                    $( Col::$col => $planes, )*
                }
            }
        }

        /// Events as parallel vectors, one per column. Columns that were not decoded are empty;
        /// `len` is the number of events either way.
        #[derive(Clone, Debug, Default, PartialEq, Eq)]
        pub struct Columns {
            len: usize,
            /// Which columns hold values (all of them for a `Columns` built by `push`).
            decoded: u64,
            $( $(#[$doc])* pub $field: Vec<$ty>, )*
        }

        impl Columns {
            /// Column `c`, typed.
            pub fn get(&self, c: Col) -> ColSlice<'_> {
                match c {
                    $( Col::$col => Sliced::sliced(&self.$field), )*
                }
            }

            /// Column `c`, typed, to change: whoever changes its length keeps the columns
            /// of a [`Columns`] equally long (or empty, not decoded).
            pub fn get_mut(&mut self, c: Col) -> ColVecMut<'_> {
                match c {
                    $( Col::$col => Sliced::sliced_mut(&mut self.$field), )*
                }
            }

            /// Append one event (every column). Inline: the recorder's writer calls it for
            /// every event, and each column's push is a few instructions.
            #[inline]
            pub fn push(&mut self, e: &Event) {
                self.decoded = ColSet::ALL.0;
                self.len += 1;
                $( self.$field.push(columns!(@get e, $field)); )*
            }

            /// Take columns `set` that `other` (the same chunk's events) has decoded, giving
            /// it what these held in their place.
            pub fn adopt(&mut self, other: &mut Columns, set: ColSet) {
                let take = set.0 & other.decoded;
                if take == 0 {
                    return;
                }
                debug_assert_eq!(self.len, other.len, "columns of two chunks");
                $(
                    if take & (1 << Col::$col as u64) != 0 {
                        std::mem::swap(&mut self.$field, &mut other.$field);
                    }
                )*
                self.decoded |= take;
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

        }
    };
    (@get $e:ident, class) => { $e.class as u8 };
    (@get $e:ident, $field:ident) => { $e.$field };
    (@set $v:expr, class) => { Class::from_code(u64::from($v)).unwrap_or_default() };
    (@set $v:expr, $field:ident) => { $v };
}

columns! {
    /// [`Class`] code.
    class: u8 = Class(0), All, delta: false, planes: false;
    /// [`Event::ts`], ns since boot.
    ts: u64 = Ts(1), All, delta: true, planes: true;
    /// [`Event::latency`], ns.
    latency: u64 = Latency(2), All, delta: false, planes: true;
    /// [`Event::pid`].
    pid: u32 = Pid(3), All, delta: false, planes: false;
    /// [`Event::tid`].
    tid: u32 = Tid(4), All, delta: false, planes: false;
    /// [`Event::proc`]: a process table id, 0 when unknown.
    proc: u32 = Proc(5), All, delta: false, planes: false;
    /// [`Event::nr`]: the syscall number.
    nr: u32 = Nr(6), All, delta: false, planes: false;
    /// [`Event::ret`].
    ret: i64 = Ret(7), All, delta: false, planes: false;
    /// [`Event::fd`], -1 for none.
    fd: i32 = Fd(8), All, delta: false, planes: false;
    /// [`Event::file`]: a file table id, 0 when none.
    file: u32 = File(9), All, delta: false, planes: false;
    /// [`Event::bytes`].
    bytes: u64 = Bytes(10), All, delta: false, planes: false;
    /// [`Event::dev`] (block), a kernel `dev_t`.
    dev: u32 = Dev(11), Blocks, delta: false, planes: false;
    /// [`Event::sector`] (block), 512-byte units.
    sector: u64 = Sector(12), Blocks, delta: true, planes: true;
    /// [`Event::queue`] (block), ns.
    queue: u64 = Queue(13), Blocks, delta: false, planes: true;
    /// [`Event::op`] (block), a [`BlockOp`](crate::BlockOp) code.
    op: u8 = Op(14), Blocks, delta: false, planes: false;
    /// [`Event::flags`] (block), [`blk_flags`](crate::blk_flags) bits.
    flags: u32 = Flags(15), Blocks, delta: false, planes: false;
    /// [`Event::cause`] (block), a [`Cause`](crate::Cause) code. Since 1.3.
    cause: u8 = Cause(16), Blocks, delta: false, planes: false;
    /// [`Event::link`] (block): how long before `ts` the linked syscall started. Since 1.3.
    link: u64 = Link(17), Blocks, delta: false, planes: true;
    /// [`Event::disk_reqs`] (syscall). Since 1.3.
    disk_reqs: u32 = DiskReqs(18), Others, delta: false, planes: false;
    /// [`Event::disk_bytes`] (syscall). Since 1.3.
    disk_bytes: u64 = DiskBytes(19), Others, delta: false, planes: false;
    /// [`Event::disk_time`] (syscall), ns. Since 1.3.
    disk_time: u64 = DiskTime(20), Others, delta: false, planes: true;
    /// [`Event::cpu`]. Since 1.5.
    cpu: u32 = Cpu(21), All, delta: false, planes: false;
    /// [`Event::offset`] (positional I/O syscalls), bytes. Since 1.5.
    offset: u64 = Offset(22), Others, delta: false, planes: true;
    /// [`Event::prio`] (block). Since 1.18.
    prio: u32 = Prio(23), Blocks, delta: false, planes: false;
    /// [`Event::runq`] (syscall), ns. Since 1.19.
    runq: u64 = Runq(24), Others, delta: false, planes: false;
    /// [`Event::wait`] (syscall), ns. Since 1.19.
    wait: u64 = Wait(25), Others, delta: false, planes: false;
    /// [`Event::sleeps`] (syscall). Since 1.19.
    sleeps: u32 = Sleeps(26), Others, delta: false, planes: false;
    /// [`Event::waker`] (syscall), a tid. Since 1.19.
    waker: u32 = Waker(27), Others, delta: false, planes: false;
    /// [`Event::wait_disk`] (syscall), ns. Since 1.19.
    wait_disk: u64 = WaitDisk(28), Others, delta: false, planes: false;
    /// [`Event::wait_throttle`] (syscall), ns. Since 1.19.
    wait_throttle: u64 = WaitThrottle(29), Others, delta: false, planes: false;
    /// [`Event::wait_writeback`] (syscall), ns. Since 1.19.
    wait_writeback: u64 = WaitWriteback(30), Others, delta: false, planes: false;
    /// [`Event::wait_journal`] (syscall), ns. Since 1.19.
    wait_journal: u64 = WaitJournal(31), Others, delta: false, planes: false;
    /// [`Event::wait_lock`] (syscall), ns. Since 1.19.
    wait_lock: u64 = WaitLock(32), Others, delta: false, planes: false;
    /// [`Event::wait_reclaim`] (syscall), ns. Since 1.19.
    wait_reclaim: u64 = WaitReclaim(33), Others, delta: false, planes: false;
    /// [`Event::wait_timer`] (syscall), ns. Since 1.19.
    wait_timer: u64 = WaitTimer(34), Others, delta: false, planes: false;
    /// [`Event::wait_call`] (syscall), ns. Since 1.19.
    wait_call: u64 = WaitCall(35), Others, delta: false, planes: false;
    /// [`Event::wait_other`] (syscall), ns. Since 1.19.
    wait_other: u64 = WaitOther(36), Others, delta: false, planes: false;
    /// [`Event::reason`] (syscall), a [`Reason`](crate::Reason) code. Since 1.19.
    reason: u8 = Reason(37), Others, delta: false, planes: false;
    /// [`Event::waker_proc`] (syscall), a process table id. Since 1.19.
    waker_proc: u32 = WakerProc(38), Others, delta: false, planes: false;
    /// [`Event::wait_net`] (syscall), ns. Since 1.19.
    wait_net: u64 = WaitNet(39), Others, delta: false, planes: false;
    /// [`Event::wait_signal`] (syscall), ns. Since 1.19.
    wait_signal: u64 = WaitSignal(40), Others, delta: false, planes: false;
    /// [`Event::woken`] (syscall), ns. Since 1.20.
    woken: u64 = Woken(41), Others, delta: false, planes: false;
    /// [`Event::stack_user`] (syscall), a stack table id. Since 1.21.
    stack_user: u32 = StackUser(42), Others, delta: false, planes: false;
    /// [`Event::stack_kernel`] (syscall), a stack table id. Since 1.21.
    stack_kernel: u32 = StackKernel(43), Others, delta: false, planes: false;
}

impl Columns {
    /// Append the chunk body encoding of these events to `out`, every column stored
    /// raw (uncompressed).
    pub fn encode(&self, out: &mut Vec<u8>) {
        // Without a packer nothing does I/O, so this cannot fail.
        let _ = self.encode_with(out, None, &mut EncodeBufs::default());
    }

    /// Append the chunk body to `out`, compressing columns with `packer` when given.
    pub(crate) fn encode_with(
        &self,
        out: &mut Vec<u8>,
        mut packer: Option<&mut Packer>,
        bufs: &mut EncodeBufs,
    ) -> std::io::Result<()> {
        let EncodeBufs {
            col: scratch,
            dir,
            data,
            gaps,
            masked,
            plane_bufs,
            forms,
            full_chunks,
        } = bufs;
        let trial = self.len < FORM_TRIAL_ABOVE || *full_chunks % FORM_TRIAL_EVERY == 0;
        if self.len >= FORM_TRIAL_ABOVE {
            *full_chunks = full_chunks.wrapping_add(1);
        }
        dir.clear();
        data.clear();
        let mut ncols = 0u64;
        // Masks only where both sides have events (most chunks of a syscall workload
        // have no block request: no column pays a pass to find that out).
        let blocks = self.class.iter().filter(|&&c| c == Class::Block as u8).count();
        let mixed = blocks > 0 && blocks < self.len;
        for col in Col::ALL {
            let form = &mut forms[col as usize];
            let to = ColumnOut {
                scratch: &mut *scratch,
                plane_bufs: &mut *plane_bufs,
                dir: &mut *dir,
                data: &mut *data,
            };
            let packer = packer.as_deref_mut();
            // `get`, not indexing: the fields are public, and a short one reads as zeros.
            macro_rules! plain {
                ($v:expr) => {{
                    let v = $v;
                    self.put_plain(
                        col,
                        |i| v.get(i).map_or(0, |x| x.to_raw()),
                        mixed,
                        trial,
                        masked,
                        packer,
                        form,
                        to,
                    )?
                }};
            }
            let written = match (col, self.get(col)) {
                (Col::Ts, _) => put_ts(self, gaps, trial, packer, form, to)?,
                (Col::File, _) => put_file(self, masked, trial, packer, form, to)?,
                // `ret` is stored as `ret - bytes`: an I/O syscall returns the bytes it moved,
                // so the difference is mostly 0 and the column nearly free.
                (Col::Ret, _) => {
                    let raw = |i: usize| {
                        let (r, b) = (
                            self.ret.get(i).copied().unwrap_or(0),
                            self.bytes.get(i).copied().unwrap_or(0),
                        );
                        varint::zigzag(r.wrapping_sub(b as i64))
                    };
                    self.put_plain(col, raw, mixed, trial, masked, packer, form, to)?
                }
                (_, ColSlice::U8(v)) => plain!(v),
                (_, ColSlice::U32(v)) => plain!(v),
                (_, ColSlice::U64(v)) => plain!(v),
                (_, ColSlice::I32(v)) => plain!(v),
                (_, ColSlice::I64(v)) => plain!(v),
            };
            ncols += u64::from(written);
        }
        varint::put(out, ncols);
        out.extend_from_slice(dir);
        out.extend_from_slice(data);
        Ok(())
    }

    /// Decode `n` events from a chunk body, only the columns in `want`.
    pub fn decode(&mut self, body: &[u8], n: usize, want: ColSet) -> Result<(), BodyError> {
        let mut unpacker = None;
        self.decode_with(body, n, want, &mut unpacker, &mut Vec::new())
            .map_err(|e| match e {
                DecodeError::Body(e) => e,
                DecodeError::TooLarge { .. } => BodyError("column larger than its events need"),
            })
    }

    /// [`Columns::decode`] with reusable decompression state (created on first need)
    /// and scratch space.
    pub(crate) fn decode_with(
        &mut self,
        body: &[u8],
        n: usize,
        want: ColSet,
        unpacker: &mut Option<Unpacker>,
        scratch: &mut Vec<u8>,
    ) -> Result<(), DecodeError> {
        self.clear();
        if n as u64 > MAX_CHUNK_EVENTS {
            return Err(BodyError("more events than a chunk may hold").into());
        }
        // ret is stored relative to bytes (see `encode_with`): decoding it needs both.
        let inner = if want.contains(Col::Ret) {
            want.with(Col::Bytes)
        } else {
            want
        };
        let mut cur = Cursor::new(body);
        let ncols = cur.varint().ok_or(BodyError("column directory cut short"))?;
        if ncols > 64 {
            return Err(BodyError("column directory too long").into());
        }
        let mut dir = [(0u64, 0u8, 0u8, 0u64, 0u64); 64];
        let dir = &mut dir[..ncols as usize];
        for entry in dir.iter_mut() {
            let short = || BodyError("column directory cut short");
            let id = cur.varint().ok_or_else(short)?;
            let encoding = cur.u8().ok_or_else(short)?;
            let codec = cur.u8().ok_or_else(short)?;
            let raw_len = cur.varint().ok_or_else(short)?;
            let stored_len = cur.varint().ok_or_else(short)?;
            *entry = (id, encoding, codec, raw_len, stored_len);
        }
        // A gap-encoded ts is rebuilt from the class, tid and latency of each event.
        let gap = dir.iter().any(|e| e.0 == Col::Ts as u64 && enc::is_gap(e.1));
        let inner = if gap && inner.contains(Col::Ts) {
            inner.with(Col::Class).with(Col::Tid).with(Col::Latency)
        } else {
            inner
        };
        // A REF file column is rebuilt from the tid of each event.
        let file_ref = inner.contains(Col::File) && dir.iter().any(|e| e.0 == Col::File as u64 && e.1 == enc::REF);
        let inner = if file_ref { inner.with(Col::Tid) } else { inner };
        // A masked column's values are placed by each event's class.
        let masked = |e: &(u64, u8, u8, u64, u64)| {
            e.1 == enc::MASKED && e.0 < u64::from(NCOLS) && inner.contains(Col::ALL[e.0 as usize])
        };
        let any_masked = dir.iter().any(masked);
        let inner = if any_masked { inner.with(Col::Class) } else { inner };
        let mut seen = 0u64;
        let mut stored = [&body[..0]; 64];
        for (&(id, encoding, _, _, stored_len), stored) in dir.iter().zip(stored.iter_mut()) {
            *stored = cur.bytes(stored_len).ok_or(BodyError("column longer than the chunk"))?;
            if enc::is_gap(encoding) && id != Col::Ts as u64 {
                return Err(BodyError("gap encoding on a column other than ts").into());
            }
            if encoding == enc::REF && id != Col::File as u64 {
                return Err(BodyError("REF encoding on a column other than file").into());
            }
            if encoding == enc::MASKED && id == Col::Class as u64 {
                return Err(BodyError("masked class column").into());
            }
            if id < 64 {
                if seen & (1 << id) != 0 {
                    return Err(BodyError("column stored twice").into());
                }
                seen |= 1 << id;
            }
        }
        if !cur.is_empty() {
            return Err(BodyError("bytes after the last column").into());
        }
        // A gap-encoded ts is decoded last, its starts rebuilt as its values are read.
        let ts_gap = gap && inner.contains(Col::Ts);
        for (&(id, encoding, codec, raw_len, _), stored) in dir.iter().zip(stored) {
            if id >= u64::from(NCOLS) || !inner.contains(Col::ALL[id as usize]) {
                // Not wanted, or a column from a newer writer: skipped undecoded.
                continue;
            }
            if (ts_gap && id == Col::Ts as u64) || encoding == enc::MASKED || encoding == enc::REF {
                // Decoded below, once what they are rebuilt from is.
                continue;
            }
            check_column_size(Col::ALL[id as usize], encoding, raw_len, n)?;
            let data = unpack_column(codec, raw_len, stored, unpacker, scratch)?;
            match self.get_mut(Col::ALL[id as usize]) {
                ColVecMut::U8(v) => decode_any(data, encoding, n, unpacker, v)?,
                ColVecMut::U32(v) => decode_any(data, encoding, n, unpacker, v)?,
                ColVecMut::U64(v) => decode_any(data, encoding, n, unpacker, v)?,
                ColVecMut::I32(v) => decode_any(data, encoding, n, unpacker, v)?,
                ColVecMut::I64(v) => decode_any(data, encoding, n, unpacker, v)?,
            }
        }
        for col in Col::ALL {
            if inner.contains(col) && seen & (1 << col as u64) == 0 {
                match self.get_mut(col) {
                    ColVecMut::U8(v) => v.resize(n, 0),
                    ColVecMut::U32(v) => v.resize(n, 0),
                    ColVecMut::U64(v) => v.resize(n, 0),
                    ColVecMut::I32(v) => v.resize(n, 0),
                    ColVecMut::I64(v) => v.resize(n, 0),
                }
            }
        }
        if any_masked {
            // Out of `self` while the others are filled (a masked class is refused above).
            let class = std::mem::take(&mut self.class);
            for (e, stored) in dir.iter().zip(stored).filter(|(e, _)| masked(e)) {
                let &(id, encoding, codec, raw_len, _) = e;
                check_column_size(Col::ALL[id as usize], encoding, raw_len, n)?;
                let data = unpack_column(codec, raw_len, stored, unpacker, scratch)?;
                match self.get_mut(Col::ALL[id as usize]) {
                    ColVecMut::U8(v) => codec::decode_masked(data, &class, unpacker, v)?,
                    ColVecMut::U32(v) => codec::decode_masked(data, &class, unpacker, v)?,
                    ColVecMut::U64(v) => codec::decode_masked(data, &class, unpacker, v)?,
                    ColVecMut::I32(v) => codec::decode_masked(data, &class, unpacker, v)?,
                    ColVecMut::I64(v) => codec::decode_masked(data, &class, unpacker, v)?,
                }
            }
            self.class = class;
        }
        if ts_gap {
            let at = dir.iter().position(|e| e.0 == Col::Ts as u64);
            if let Some(k) = at {
                let (_, encoding, codec, raw_len, _) = dir[k];
                check_column_size(Col::Ts, encoding, raw_len, n)?;
                let data = unpack_column(codec, raw_len, stored[k], unpacker, scratch)?;
                decode_gap_ts(
                    data,
                    encoding,
                    n,
                    unpacker,
                    &mut self.ts,
                    (&self.class, &self.tid, &self.latency),
                )?;
            }
            if !want.contains(Col::Latency) {
                self.latency.clear();
            }
        }
        if file_ref {
            if let Some(k) = dir.iter().position(|e| e.0 == Col::File as u64) {
                let (_, encoding, codec, raw_len, _) = dir[k];
                check_column_size(Col::File, encoding, raw_len, n)?;
                let data = unpack_column(codec, raw_len, stored[k], unpacker, scratch)?;
                decode_ref(data, n, &mut self.file, &self.tid)?;
            }
        }
        if (ts_gap || file_ref) && !want.contains(Col::Tid) {
            self.tid.clear();
        }
        if !want.contains(Col::Class) {
            self.class.clear();
        }
        if want.contains(Col::Ret) {
            for (r, &b) in self.ret.iter_mut().zip(&self.bytes) {
                *r = r.wrapping_add(b as i64);
            }
            if !want.contains(Col::Bytes) {
                self.bytes.clear();
            }
        }
        self.len = n;
        self.decoded = want.0 & ColSet::ALL.0;
        Ok(())
    }

    /// Write column `col`, whose raw values are `raw`: for one side of the block/other split
    /// alone ([`enc::MASKED`]) when the chunk has both and the other side's are all 0.
    #[allow(clippy::too_many_arguments)]
    fn put_plain(
        &self,
        col: Col,
        raw: impl Fn(usize) -> u64 + Copy,
        mixed: bool,
        trial: bool,
        masked: &mut Vec<u64>,
        packer: Option<&mut Packer>,
        form: &mut Form,
        to: ColumnOut,
    ) -> std::io::Result<bool> {
        // An all-zero column is left out (it reads as zeros), as `encode_column` would decide
        // after its passes: one pass here first, as most chunks leave a dozen columns all zero
        // (the block ones in a chunk of calls, the anatomy's of calls that never left the CPU).
        if (0..self.len).all(|i| raw(i) == 0) {
            return Ok(false);
        }
        // A column only one side of the block/other split has values for is stored for that
        // side alone, when the chunk has both.
        let mask = mask_of(col).filter(|&m| mixed && codec::gather(&self.class, m, raw, self.len, masked));
        let shape = Shape {
            col,
            delta: col.delta(),
            mask,
            trial,
        };
        match mask {
            Some(_) => put_column(shape, |i| masked[i], masked.len(), packer, form, to),
            None => put_column(shape, raw, self.len, packer, form, to),
        }
    }
}

/// Decode a column's values (any encoding but the ones rebuilt from other columns) into `out`.
fn decode_any<T: ColValue>(
    data: &[u8],
    encoding: u8,
    n: usize,
    unpacker: &mut Option<Unpacker>,
    out: &mut Vec<T>,
) -> Result<(), BodyError> {
    if encoding == enc::PLANES {
        decode_planes(data, n, unpacker, out, T::from_raw)
    } else {
        decode_column(data, encoding, n, out)
    }
}

impl Columns {
    /// Number of events.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether there are no events.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The columns that hold values.
    pub fn decoded(&self) -> ColSet {
        ColSet(self.decoded)
    }
}

#[cfg(test)]
mod tests {
    use super::codec::{byte_len, put_vbyte, read_varints, read_vbyte, vbyte_lens};
    use super::*;
    use crate::pack::Packer;
    use proptest::strategy::Strategy;

    /// The table of columns in FORMAT.md, the one a reader in another language is written
    /// from, says of every column what `columns!` declares: its id, name, type (so its width)
    /// and which events it is for ("block: …" or a syscall's). A column declared with another
    /// width or class than the document gives, or not documented, fails here.
    #[test]
    fn every_column_is_declared_as_format_md_documents_it() {
        let doc = include_str!("../../../FORMAT.md");
        let table = doc
            .split("**Column ids and raw values.**")
            .nth(1)
            .expect("FORMAT.md's column table");
        let rows: Vec<Vec<&str>> = table
            .lines()
            .skip_while(|l| !l.starts_with("| id |"))
            .skip(2)
            .take_while(|l| l.starts_with('|'))
            .map(|l| l.split('|').map(str::trim).skip(1).collect())
            .collect();
        assert_eq!(
            rows.len(),
            Col::ALL.len(),
            "FORMAT.md documents every column, and no other"
        );
        for (row, &col) in rows.iter().zip(&Col::ALL) {
            let (id, name, ty, raw) = (row[0], row[1], row[2], row[3]);
            assert_eq!(id, (col as u8).to_string(), "{name}: ids in order");
            assert_eq!(name, col.name());
            let bits: u32 = ty[1..].parse().unwrap();
            assert_eq!(bits, col.raw_bits(), "{name}: width of {ty}");
            let signed = ty.starts_with('i');
            let holds = if raw.starts_with("block") {
                Holds::Blocks
            } else if raw.starts_with("syscall:") || raw.starts_with("syscall (") || raw.contains(", syscalls ") {
                Holds::Others
            } else {
                Holds::All
            };
            assert_eq!(holds, col.holds(), "{name}: {raw}");
            let empty = Columns::default();
            let typed = match empty.get(col) {
                ColSlice::U8(_) => (8, false),
                ColSlice::U32(_) => (32, false),
                ColSlice::U64(_) => (64, false),
                ColSlice::I32(_) => (32, true),
                ColSlice::I64(_) => (64, true),
            };
            assert_eq!(typed, (bits, signed), "{name}: Columns::get's type");
        }
    }

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
                cause: if i % 7 == 0 { (i % 3) as u8 } else { 0 },
                link: if i % 7 == 0 { (i as u64 * 13) % 900 } else { 0 },
                disk_reqs: if i % 13 == 0 { 2 } else { 0 },
                disk_bytes: if i % 13 == 0 { 8192 } else { 0 },
                disk_time: if i % 13 == 0 { 40_000 + i as u64 } else { 0 },
                cpu: (i % 2) as u32,
                offset: if i % 5 == 0 { i as u64 * 4096 } else { 0 },
                prio: if i % 7 == 0 { 2 << 13 | (i % 8) as u32 } else { 0 },
                runq: if i % 9 == 0 { i as u64 * 11 } else { 0 },
                wait: if i % 9 == 0 { i as u64 * 101 } else { 0 },
                sleeps: if i % 9 == 0 { (i % 3) as u32 } else { 0 },
                waker: if i % 9 == 0 { 300 + (i % 4) as u32 } else { 0 },
                wait_disk: if i % 9 == 0 { i as u64 * 7 } else { 0 },
                wait_timer: if i % 18 == 0 { i as u64 * 3 } else { 0 },
                reason: if i % 9 == 0 { 1 } else { 0 },
                ..Event::default()
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
    fn varint_len_matches_put() {
        for shift in 0..64 {
            for v in [1u64 << shift, (1u64 << shift) - 1, u64::MAX >> shift] {
                let mut out = Vec::new();
                varint::put(&mut out, v);
                assert_eq!(varint_len(v), out.len(), "{v}");
            }
        }
    }

    #[test]
    fn every_encoding_roundtrips() {
        // sparse (mostly zero), dict (few values), delta (rising), varint (random), const
        let n = 500u64;
        let cases: Vec<(Vec<u64>, u8)> = vec![
            (
                (0..n).map(|i| if i % 50 == 3 { 1 << 40 } else { 0 }).collect(),
                enc::SPARSE,
            ),
            (
                (0..n).map(|i| [300, 70_000, 1 << 33][(i % 3) as usize]).collect(),
                enc::PACKED_DICT,
            ),
            ((0..n).map(|i| (i % 40) << 20).collect(), enc::DICT),
            ((0..n).map(|i| (1 << 50) | (i * 1000)).collect(), enc::DELTA),
            (
                (0..n)
                    .map(|i| i.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> (i % 64))
                    .collect(),
                enc::VARINT,
            ),
            (vec![77; n as usize], enc::CONST),
        ];
        for (values, want) in cases {
            let mut out = Vec::new();
            assert_eq!(
                encode_column(|i| values[i], values.len(), true, false, &mut out),
                Some(want)
            );
            let mut back: Vec<u64> = Vec::new();
            decode_column(&out, want, values.len(), &mut back).unwrap();
            assert_eq!(back, values);
        }
    }

    #[test]
    fn ts_is_gap_encoded_and_gap_is_refused_elsewhere() {
        let events = sample(300);
        let mut cols = Columns::default();
        events.iter().for_each(|e| cols.push(e));
        let mut body = Vec::new();
        cols.encode(&mut body);
        // Directory: ncols, then (id, encoding, codec, raw_len, stored_len) per column; the
        // class column comes first, ts second.
        let mut cur = Cursor::new(&body);
        let _ncols = cur.varint().unwrap();
        let mut entries = Vec::new();
        for _ in 0..2 {
            let at = body.len() - cur.remaining();
            let id = cur.varint().unwrap();
            entries.push((id, cur.u8().unwrap(), at));
            cur.varint().unwrap();
            cur.u8().unwrap();
            cur.varint().unwrap();
        }
        assert_eq!(entries[1].0, Col::Ts as u64);
        assert_eq!(entries[1].1, enc::GAP_VBYTE);
        let mut back = Columns::default();
        back.decode(&body, events.len(), ColSet::ALL).unwrap();
        assert_eq!(back.ts, cols.ts);
        // The same bytes with the class column claiming GAP or GAP_VBYTE are refused, not
        // misread.
        assert_eq!(entries[0].0, Col::Class as u64);
        for gap in [enc::GAP, enc::GAP_VBYTE] {
            let mut bad = body.clone();
            bad[entries[0].2 + 1] = gap;
            assert_eq!(
                back.decode(&bad, events.len(), ColSet::ALL),
                Err(BodyError("gap encoding on a column other than ts"))
            );
        }
    }

    /// The encoding and byte offset of column `col`'s directory entry in chunk body `body`.
    fn dir_entry(body: &[u8], col: Col) -> (u8, usize) {
        let mut cur = Cursor::new(body);
        let ncols = cur.varint().unwrap();
        for _ in 0..ncols {
            let at = body.len() - cur.remaining();
            let id = cur.varint().unwrap();
            let encoding = cur.u8().unwrap();
            cur.u8().unwrap();
            cur.varint().unwrap();
            cur.varint().unwrap();
            if id == col as u64 {
                return (encoding, at);
            }
        }
        panic!("no {col:?} column");
    }

    #[test]
    fn files_are_ref_coded_per_thread_and_ref_is_refused_elsewhere() {
        // Two threads: one walks new files, each named by four calls (tar: open, read, read,
        // close), the other names its one pipe in between; some calls name no file.
        let mut cols = Columns::default();
        for i in 0..4000u32 {
            let walker = i % 3 != 2;
            let e = Event {
                tid: if walker { 10 } else { 11 },
                file: match (walker, i % 7) {
                    (_, 6) => 0,
                    (true, _) => 100 + i / 12,
                    (false, _) => 7,
                },
                ts: u64::from(i) * 1000,
                latency: 50,
                ..Event::default()
            };
            cols.push(&e);
        }
        let mut body = Vec::new();
        cols.encode(&mut body);
        let (encoding, _) = dir_entry(&body, Col::File);
        assert_eq!(encoding, enc::REF);
        // Rebuilt from the tids, which a reader that wants the files alone decodes but does not
        // keep.
        let mut back = Columns::default();
        back.decode(&body, cols.len, ColSet::ALL).unwrap();
        assert_eq!(back.file, cols.file);
        back.decode(&body, cols.len, ColSet::NONE.with(Col::File)).unwrap();
        assert_eq!(back.file, cols.file);
        assert!(back.tid.is_empty());
        // Smaller than the best other encoding: those ids take two bytes each as varints.
        let mut plain = Vec::new();
        encode_column(|i| u64::from(cols.file[i]), cols.len, false, false, &mut plain);
        let mut codes = Vec::new();
        ref_codes(&cols.file, &cols.tid, &mut codes);
        // Past each thread's first file (from 0, then from the walker's): no file, the same
        // file, or the next one.
        let far = codes[3..].iter().filter(|&&c| c > 3).count();
        assert_eq!(
            far,
            0,
            "codes over 3: {far} of {}; first ones {:?}",
            codes.len(),
            &codes[..8]
        );
        assert!(codes.len() < plain.len());
        // The same bytes with the tid column claiming REF are refused, not misread.
        let (_, tid_at) = dir_entry(&body, Col::Tid);
        let mut bad = body.clone();
        bad[tid_at + 1] = enc::REF;
        assert_eq!(
            back.decode(&bad, cols.len, ColSet::ALL),
            Err(BodyError("REF encoding on a column other than file"))
        );
    }

    #[test]
    fn lying_ref_columns_are_refused_or_read_as_some_file() {
        let mut file = Vec::new();
        // 0, then file 5 (code 1 + zigzag 5 = 11), the same again (code 1).
        decode_ref(&[0, 11, 1], 3, &mut file, &[1, 1, 1]).unwrap();
        assert_eq!(file, [0, 5, 5]);
        assert_eq!(
            decode_ref(&[0, 11], 3, &mut file, &[]),
            Err(BodyError("column shorter than its event count"))
        );
        assert_eq!(
            decode_ref(&[0, 11, 1, 1], 3, &mut file, &[]),
            Err(BodyError("column longer than its event count"))
        );
        assert_eq!(
            decode_ref(&[0, 0x80, 0x80], 3, &mut file, &[]),
            Err(BodyError("column cut short"))
        );
        // The largest code and missing tids: some file id, no panic.
        let max = [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01];
        decode_ref(&[&max[..], &max[..]].concat(), 2, &mut file, &[]).unwrap();
        assert_eq!(file.len(), 2);
    }

    #[test]
    fn packed_dictionaries_roundtrip_at_every_width_and_length() {
        for k in [1u64, 2, 3, 4, 5, 15] {
            for n in [1usize, 2, 3, 7, 8, 9, 15, 17, 1000, 1001] {
                // k values and a last one: 2 to 16 keys, even for k = 1 not a constant column.
                let values: Vec<u64> = (0..n as u64).map(|i| 1000 + (i * 7 + i / 3) % k).chain([5]).collect();
                let mut out = Vec::new();
                let got = encode_column(|i| values[i], values.len(), false, false, &mut out);
                assert_eq!(got, Some(enc::PACKED_DICT), "k {k} n {n}");
                let mut back: Vec<u64> = Vec::new();
                decode_column(&out, enc::PACKED_DICT, values.len(), &mut back).unwrap();
                assert_eq!(back, values, "k {k} n {n}");
            }
        }
    }

    #[test]
    fn lying_packed_dictionaries_are_refused() {
        let mut back: Vec<u64> = Vec::new();
        // bits 2, k 3 (values 10 20 30), 5 events: indices 0 1 2 0 | 1
        let good = [2, 3, 10, 20, 30, 0b00_10_01_00, 0b01];
        decode_column(&good, enc::PACKED_DICT, 5, &mut back).unwrap();
        assert_eq!(back, [10, 20, 30, 10, 20]);
        let cases: [(&[u8], &str); 6] = [
            (&[2, 3, 10, 20, 30, 0b11_10_01_00, 0b01], "index past the dictionary"),
            (
                &[2, 3, 10, 20, 30, 0b00_10_01_00, 0b0101],
                "bits set past the last index",
            ),
            (&[2, 3, 10, 20, 30, 0b00_10_01_00], "index count does not match"),
            (&[3, 3, 10, 20, 30, 0, 0], "dictionary size out of range"),
            (&[2, 5, 10, 20, 30, 40, 50, 0, 0], "dictionary size out of range"),
            (&[2, 0, 0, 0], "dictionary size out of range"),
        ];
        for (data, want) in cases {
            assert_eq!(
                decode_column(data, enc::PACKED_DICT, 5, &mut back),
                Err(BodyError(want))
            );
        }
    }

    #[test]
    fn latencies_are_vbyte_where_that_is_smaller() {
        // 2-byte values above 2^14: 3-byte varints, 2 bytes and a quarter as VBYTE.
        let values: Vec<u64> = (0..1000u64).map(|i| 16_384 + (i * 2_654_435_761) % 49_000).collect();
        let mut out = Vec::new();
        assert_eq!(
            encode_column(|i| values[i], values.len(), false, true, &mut out),
            Some(enc::VBYTE)
        );
        assert_eq!(out.len(), 4 + 250 + 2000, "lengths, codes, 2 bytes a value");
        let mut back: Vec<u64> = Vec::new();
        decode_column(&out, enc::VBYTE, values.len(), &mut back).unwrap();
        assert_eq!(back, values);
        // Not tried where the writer does not ask for it.
        out.clear();
        assert_eq!(
            encode_column(|i| values[i], values.len(), false, false, &mut out),
            Some(enc::VARINT)
        );
    }

    #[test]
    fn lying_vbyte_columns_are_refused() {
        let mut back: Vec<u64> = Vec::new();
        // lengths 1 2 3 8; 5 values with codes 0 1 2 3 | 0: 1 + 2 + 3 + 8 + 1 bytes
        let mut good = vec![1, 2, 3, 8, 0b11_10_01_00, 0b00];
        good.extend([7, 1, 2, 1, 2, 3, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
        decode_column(&good, enc::VBYTE, 5, &mut back).unwrap();
        assert_eq!(back, [7, 0x201, 0x30201, 0x0807_0605_0403_0201, 9]);
        let with = |i: usize, b: u8| {
            let mut bad = good.clone();
            bad[i] = b;
            bad
        };
        let cases: Vec<(Vec<u8>, &str)> = vec![
            (with(0, 0), "vbyte length out of range"),
            (with(3, 9), "vbyte length out of range"),
            (with(5, 0b0100), "bits set past the last value"),
            (good[..good.len() - 1].to_vec(), "vbyte lengths do not match the column"),
            ([&good[..], &[0]].concat(), "vbyte lengths do not match the column"),
            (with(4, 0b11_11_01_00), "vbyte lengths do not match the column"),
            (good[..5].to_vec(), "vbyte column cut short"),
            (vec![1, 2], "vbyte column cut short"),
        ];
        for (data, want) in cases {
            assert_eq!(
                decode_column(&data, enc::VBYTE, 5, &mut back),
                Err(BodyError(want)),
                "{data:?}"
            );
        }
        // A huge count with few bytes is refused before anything is allocated for it.
        assert_eq!(
            decode_column(&good, enc::VBYTE, 1 << 18, &mut back),
            Err(BodyError("vbyte column cut short"))
        );
    }

    proptest::proptest! {
        #[test]
        fn vbyte_roundtrips(
            values in proptest::collection::vec(proptest::prelude::any::<u64>().prop_map(|v| v >> (v % 64)), 0..300),
        ) {
            let mut hist = [0usize; 9];
            values.iter().for_each(|&v| hist[byte_len(v)] += 1);
            let (lens, value_bytes) = vbyte_lens(&hist);
            let mut out = Vec::new();
            put_vbyte(|i| values[i], values.len(), lens, &mut out);
            proptest::prop_assert_eq!(out.len(), 4 + values.len().div_ceil(4) + value_bytes);
            let mut back: Vec<u64> = Vec::new();
            read_vbyte(&out, values.len(), &mut back, |v| v).unwrap();
            proptest::prop_assert_eq!(back, values);
        }

        /// The word-at-a-time varint loop agrees with the one-at-a-time reader on any bytes,
        /// and takes the same number of them.
        #[test]
        fn read_varints_matches_one_at_a_time(
            // Any width, or mostly one byte with some of two (words of eight one-byte varints
            // take a path of their own).
            values in proptest::prop_oneof![
                proptest::collection::vec(proptest::prelude::any::<u64>().prop_map(|v| v >> (v % 64)), 0..100),
                proptest::collection::vec(0u64..160, 0..100),
            ],
            noise in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..40),
            n_extra in 0usize..3,
        ) {
            let mut bytes = Vec::new();
            values.iter().for_each(|&v| varint::put(&mut bytes, v));
            bytes.extend(&noise);
            let n = values.len() + n_extra;
            let mut pos = 0;
            let want: Option<Vec<u64>> = (0..n).map(|_| varint::read(&bytes, &mut pos)).collect();
            let mut got = vec![0u64; n];
            let got_pos = read_varints(&bytes, &mut got, |v| v);
            proptest::prop_assert_eq!(got_pos.is_some(), want.is_some());
            if let Some(want) = want {
                proptest::prop_assert_eq!(got_pos, Some(pos));
                proptest::prop_assert_eq!(got, want);
            }
        }
    }

    /// Whatever the values, a column as the writer encodes it is within the limit readers
    /// check for its type and encoding: the widest values, zeros between them (sparse), few
    /// distinct values (dictionaries), runs (constant), for every column.
    #[test]
    fn written_columns_are_within_their_limits() {
        for col in Col::ALL {
            let top = u64::MAX >> (64 - col.raw_bits());
            let cases: [Box<dyn Fn(u64) -> u64>; 6] = [
                Box::new(move |_| top),
                Box::new(move |i| if i % 2 == 0 { top } else { 0 }),
                Box::new(move |i| if i % 97 == 0 { top - (i / 97) % 50 } else { 0 }),
                Box::new(move |i| top - i % 200),
                Box::new(move |i| top - i % 9),
                Box::new(move |i| {
                    if i % 2 == 0 {
                        top
                    } else {
                        top - (i.wrapping_mul(0x9e37_79b9) & top)
                    }
                }),
            ];
            for (k, f) in cases.iter().enumerate() {
                for n in [1usize, 5, 1000, 20_000] {
                    for (delta, vbyte) in [(false, false), (true, false), (false, true)] {
                        let mut out = Vec::new();
                        if let Some(e) = encode_column(|i| f(i as u64), n, delta, vbyte, &mut out) {
                            let max = max_column_bytes(col, e, n as u64).unwrap();
                            assert!(
                                out.len() as u64 <= max,
                                "{col:?} case {k} n {n}: encoding {e}, {} > {max}",
                                out.len()
                            );
                        }
                    }
                }
            }
        }
    }

    /// `values` as [`enc::PLANES`], with zstd, decoded back as `T` (`raw` maps a value to
    /// the u64 the column stores).
    fn planes_roundtrip<T: ColValue + PartialEq + std::fmt::Debug>(values: &[T]) -> Vec<u8> {
        let mut out = Vec::new();
        put_planes(
            |i| values[i].to_raw(),
            values.len(),
            &mut PlaneBufs::default(),
            &mut out,
        )
        .unwrap();
        let mut back: Vec<T> = Vec::new();
        decode_planes(&out, values.len(), &mut None, &mut back, T::from_raw).unwrap();
        assert_eq!(back, values);
        out
    }

    #[test]
    fn planes_roundtrip_edge_values() {
        // Empty, one row, the widest values, zeros (all of them, most of them, none).
        let out = planes_roundtrip::<u64>(&[]);
        assert_eq!(out, [0, 1, pack::RAW, 0], "no bitmap, width 1, one empty stream");
        planes_roundtrip(&[0u64]);
        planes_roundtrip(&[u64::MAX]);
        let out = planes_roundtrip(&[u64::MAX, 0, 1, 0, 0]);
        assert_eq!(out[0], 1, "zeros behind a bitmap");
        assert_eq!(out[4], 8, "after the bitmap stream, u64::MAX takes 8 planes");
        planes_roundtrip(&[7u64; 9]);
        planes_roundtrip(&vec![0u64; 1000]);
        // Negative values of a signed column (zigzag).
        planes_roundtrip(&[-1i64, i64::MIN, i64::MAX, 0, 5, -300]);
        planes_roundtrip(&[i32::MIN, -1, 0, i32::MAX]);
        // Long enough for zstd, dense and sparse, every width.
        for width in 1..=8u32 {
            let top = u64::MAX >> (64 - 8 * width);
            let dense: Vec<u64> = (0..5000u64)
                .map(|i| (i.wrapping_mul(0x9e37_79b9_7f4a_7c15) & top) | 1)
                .collect();
            let out = planes_roundtrip(&dense);
            assert_eq!((out[0], u32::from(out[1])), (0, width), "no bitmap, {width} planes");
            let sparse: Vec<u64> = dense
                .iter()
                .enumerate()
                .map(|(i, &v)| if i % 3 == 0 { v } else { 0 })
                .collect();
            planes_roundtrip(&sparse);
        }
    }

    #[test]
    fn lying_planes_columns_are_refused() {
        let mut back: Vec<u64> = Vec::new();
        // 5 events, bitmap 0b10101 (values at 0, 2, 4), width 2: planes [1 2 3] and [0 0 9].
        let good = [1, 0, 1, 0b10101, 2, 0, 3, 1, 2, 3, 0, 3, 0, 0, 9];
        decode_planes(&good, 5, &mut None, &mut back, |v| v).unwrap();
        assert_eq!(back, [1, 0, 2, 0, 0x903]);
        let with = |i: usize, b: u8| {
            let mut bad = good.to_vec();
            bad[i] = b;
            bad
        };
        let cases: Vec<(Vec<u8>, &str)> = vec![
            (with(0, 2), "planes flags unknown"),
            (with(3, 0b110101), "bits set past the last event"),
            (with(3, 0b11101), "stored size does not match"),
            (with(4, 0), "planes width out of range"),
            (with(4, 9), "planes width out of range"),
            (with(2, 2), "stored size does not match"),
            (with(1, 7), "unknown compression codec"),
            (with(6, 50), "planes column cut short"),
            (good[..good.len() - 1].to_vec(), "planes column cut short"),
            ([&good[..], &[0]].concat(), "column longer than its event count"),
            (vec![], "planes column cut short"),
        ];
        for (data, want) in cases {
            assert_eq!(
                decode_planes(&data, 5, &mut None, &mut back, |v| v),
                Err(BodyError(want)),
                "{data:?}"
            );
        }
        // A stream claiming zstd that is no zstd frame.
        let bad = [0, 1, 1, 5, 0, 0, 0, 0, 0];
        assert!(decode_planes(&bad, 5, &mut None, &mut back, |v| v).is_err());
    }

    /// The masked column of class codes `class` stored as `data`, decoded.
    fn masked(data: &[u8], class: &[u8]) -> Result<Vec<u64>, BodyError> {
        let mut out = Vec::new();
        codec::decode_masked(data, class, &mut None, &mut out).map(|()| out)
    }

    #[test]
    fn lying_masked_columns_are_refused() {
        // Events 0 and 2 are block requests (class code 1; 2 is io_uring, not block).
        let class = [1, 0, 1, 2, 0];
        let good = [enc::MASK_BLOCKS, enc::VARINT, 5, 7];
        assert_eq!(masked(&good, &class), Ok(vec![5, 0, 7, 0, 0]));
        let others = [enc::MASK_OTHERS, enc::VARINT, 1, 2, 3];
        assert_eq!(masked(&others, &class), Ok(vec![0, 1, 0, 2, 3]));
        // A column of zero kept values: every event 0.
        assert_eq!(masked(&[enc::MASK_BLOCKS, enc::VARINT], &[0, 0]), Ok(vec![0, 0]));
        let with = |i: usize, b: u8| {
            let mut bad = good.to_vec();
            bad[i] = b;
            bad
        };
        let cases: Vec<(Vec<u8>, &str)> = vec![
            (with(0, 2), "masked column selects unknown events"),
            (with(1, enc::MASKED), "masked column of a masked or gap encoding"),
            (with(1, enc::GAP), "masked column of a masked or gap encoding"),
            (with(1, enc::GAP_PLANES), "masked column of a masked or gap encoding"),
            (with(1, 99), "unknown column encoding"),
            ([&good[..], &[9]].concat(), "column longer than its event count"),
            (good[..3].to_vec(), "column shorter than its event count"),
            (vec![enc::MASK_BLOCKS], "masked column cut short"),
            (vec![], "masked column cut short"),
        ];
        for (data, want) in cases {
            assert_eq!(masked(&data, &class), Err(BodyError(want)), "{data:?}");
        }
        // The class column cannot be placed by itself.
        let mut body = vec![1, Col::Class as u8, enc::MASKED, pack::RAW, 3, 3];
        body.extend([enc::MASK_BLOCKS, enc::CONST, 1]);
        let mut back = Columns::default();
        assert_eq!(
            back.decode(&body, 2, ColSet::ALL),
            Err(BodyError("masked class column"))
        );
    }

    /// A chunk of block requests among calls: the columns only block requests have values in
    /// (and those only calls have) are stored for their events alone, and read back whole,
    /// also when asked for alone (the class they are placed by then decoded behind the scenes).
    #[test]
    fn one_sided_columns_are_masked_and_read_back() {
        let mut cols = wide_chunk(3, true);
        let n = cols.len();
        for i in 0..n {
            if cols.class[i] == Class::Block as u8 {
                cols.dev[i] = 7 << 20;
                cols.flags[i] = 1 + (i % 3) as u32;
                cols.cause[i] = 1;
            } else if i % 3 == 1 {
                cols.disk_time[i] = 1_000 + i as u64;
            }
        }
        let mut body = Vec::new();
        cols.encode_with(
            &mut body,
            Some(&mut Packer::new(3).unwrap()),
            &mut EncodeBufs::default(),
        )
        .unwrap();
        let encodings: std::collections::HashMap<u64, u8> = directory(&body).0.iter().map(|e| (e.0, e.1)).collect();
        for col in [Col::Dev, Col::Flags, Col::Cause, Col::Sector, Col::Queue, Col::DiskTime] {
            assert_eq!(encodings[&(col as u64)], enc::MASKED, "{col:?}");
        }
        assert_ne!(encodings[&(Col::Latency as u64)], enc::MASKED);
        let mut back = Columns::default();
        back.decode(&body, n, ColSet::ALL).unwrap();
        assert_eq!(back, cols);
        back.decode(&body, n, ColSet::NONE.with(Col::Sector).with(Col::DiskTime))
            .unwrap();
        assert_eq!((&back.sector, &back.disk_time), (&cols.sector, &cols.disk_time));
        assert!(back.class.is_empty(), "class was not asked for");
        // A call with a sector (no recorder writes one, a file may hold one): the column is
        // kept whole, and nothing is lost.
        cols.sector[1] = 42;
        let mut body = Vec::new();
        cols.encode(&mut body);
        back.decode(&body, n, ColSet::ALL).unwrap();
        assert_eq!(back, cols);
        let sector = directory(&body).0.into_iter().find(|e| e.0 == Col::Sector as u64);
        assert_ne!(sector.map(|e| e.1), Some(enc::MASKED));
    }

    /// 20 000 events with wide random values: ns times, and when `blocks`, a block request
    /// every third event at a random sector.
    fn wide_chunk(seed: u64, blocks: bool) -> Columns {
        let mut rng = seed | 1;
        let mut next = move || {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng
        };
        let mut cols = Columns::default();
        let mut ts = 1u64 << 40;
        for i in 0..20_000u64 {
            ts += 1_000 + next() % 50_000;
            let mut e = Event::syscall(ts, 2_000 + next() % 200_000, 7, 7 + (i % 2) as u32, 209, 1);
            if blocks && i % 3 == 0 {
                e.class = Class::Block;
                e.sector = 1_000_000 + (next() % 65_536) * 8;
                e.queue = next() % 5_000;
            }
            cols.push(&e);
        }
        cols
    }

    /// A directory entry: id, encoding, codec, raw_len, stored_len.
    type Entry = (u64, u8, u8, u64, u64);

    /// A chunk body's directory, and a cursor at its first column's bytes.
    fn directory(body: &[u8]) -> (Vec<Entry>, Cursor<'_>) {
        let mut cur = Cursor::new(body);
        let mut dir = Vec::new();
        for _ in 0..cur.varint().unwrap() {
            let id = cur.varint().unwrap();
            let (encoding, codec) = (cur.u8().unwrap(), cur.u8().unwrap());
            dir.push((id, encoding, codec, cur.varint().unwrap(), cur.varint().unwrap()));
        }
        (dir, cur)
    }

    /// `cols` encoded with zstd by `bufs` (a writer's across chunks); checks that it reads
    /// back the same, whole and `ts` alone, and that each column is within the limit readers
    /// check; returns the (column id, encoding) pairs stored as planes (a masked column's
    /// planes as [`enc::MASKED`]).
    fn encode_wide(cols: &Columns, bufs: &mut EncodeBufs) -> Vec<(u64, u8)> {
        let mut body = Vec::new();
        let mut packer = Packer::new(3).unwrap();
        cols.encode_with(&mut body, Some(&mut packer), bufs).unwrap();
        let (dir, mut cur) = directory(&body);
        let mut planes = Vec::new();
        for (id, encoding, codec, raw_len, stored_len) in dir {
            let max = max_column_bytes(Col::ALL[id as usize], encoding, cols.len() as u64).unwrap();
            assert!(raw_len <= max, "column {id}: {raw_len} > {max}");
            let data = cur.bytes(stored_len).unwrap();
            // A masked column's planes are stored raw: its inner code is its second byte.
            let masked_planes = encoding == enc::MASKED && codec == pack::RAW && data[1] == enc::PLANES;
            if matches!(encoding, enc::PLANES | enc::GAP_PLANES) || masked_planes {
                assert_eq!(codec, pack::RAW, "the planes are compressed one by one");
                planes.push((id, encoding));
            }
        }
        let mut back = Columns::default();
        back.decode(&body, cols.len(), ColSet::ALL).unwrap();
        assert_eq!(&back, cols);
        // ts alone: its gaps rebuilt from class, tid and latency decoded behind the scenes.
        back.decode(&body, cols.len(), ColSet::NONE.with(Col::Ts)).unwrap();
        assert_eq!(back.ts, cols.ts);
        assert!(back.latency.is_empty());
        planes
    }

    /// Wide random values (ns times, sectors) are written as byte planes, `ts` as GAP_PLANES,
    /// when that is smaller than their usual form compressed.
    #[test]
    fn wide_columns_are_written_as_planes_and_read_back() {
        let planes = encode_wide(&wide_chunk(1, true), &mut EncodeBufs::default());
        assert_eq!(
            planes,
            [
                (Col::Ts as u64, enc::GAP_PLANES),
                (Col::Latency as u64, enc::PLANES),
                (Col::Sector as u64, enc::MASKED),
                (Col::Queue as u64, enc::MASKED)
            ]
        );
    }

    /// Full chunks between trials take the form that won the last trial without building the
    /// other: planes straight away, and a column of zeros is still left out.
    #[test]
    fn full_chunks_between_trials_keep_the_last_form() {
        let mut bufs = EncodeBufs::default();
        let first = encode_wide(&wide_chunk(1, true), &mut bufs);
        assert_eq!(first.len(), 4, "{first:?}");
        assert_eq!(bufs.forms[Col::Sector as usize], Form::Planes);
        // The next chunk is no trial: it has no block requests, so no sector or queue column.
        let second = encode_wide(&wide_chunk(2, false), &mut bufs);
        assert_eq!(
            second,
            [(Col::Ts as u64, enc::GAP_PLANES), (Col::Latency as u64, enc::PLANES)]
        );
        assert_eq!(bufs.full_chunks, 2);
        for seed in 3..=8 {
            encode_wide(&wide_chunk(seed, true), &mut bufs);
        }
        // The 9th full chunk is a trial again: with constant latencies, its usual form wins.
        let mut cols = wide_chunk(10, true);
        cols.latency.iter_mut().for_each(|l| *l = 5_000);
        let trial = encode_wide(&cols, &mut bufs);
        assert!(!trial.contains(&(Col::Latency as u64, enc::PLANES)), "{trial:?}");
        assert_eq!(
            bufs.forms[Col::Latency as usize],
            Form::Planes,
            "a constant is no trial"
        );
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
