//! The capture writer.

use std::collections::HashMap;
use std::io::Write;

use crate::columns::{Columns, EncodeBufs, MAX_CHUNK_EVENTS};
use crate::error::Error;
use crate::frame::{self, Kind};
use crate::model::{Device, DropStats, Event, FileEntry, Meta, ProcEntry, StrId};
use crate::pack::Packer;
use crate::summary::ChunkSummary;
use crate::tables::{self, Pending, PendingStrings, MAX_STRING};
use crate::varint;

/// What ends a string cut to [`MAX_STRING`] bytes.
const ELLIPSIS: &[u8] = "…".as_bytes();

/// How the writer cuts and compresses chunks.
#[derive(Clone, Debug)]
pub struct WriterOptions {
    /// A chunk is closed once it holds this many events (taken as 1 if 0, and at most
    /// [`crate::MAX_CHUNK_EVENTS`]).
    pub chunk_events: usize,
    /// zstd level for chunks and tables.
    pub level: i32,
}

impl Default for WriterOptions {
    fn default() -> Self {
        WriterOptions {
            chunk_events: 65_536,
            level: 3,
        }
    }
}

/// Writes a capture: a preamble and header, then table, chunk and stats frames as events
/// arrive, then on [`Writer::finish`] the index and trailer.
///
/// Everything [`Writer::flush`]ed is on disk as whole frames, so a file whose writer died
/// (SIGKILL, full disk) reads back up to its last flush. A writer must be finished: dropping
/// it without `finish` leaves a file that readers recover but report as not clean.
///
/// ```
/// use iocap_format::{Event, Meta, Reader, Writer, WriterOptions};
/// let mut w = Writer::new(Vec::new(), &Meta::default(), WriterOptions::default())?;
/// let name = w.intern(b"cat");
/// w.push(&Event::syscall(1_000, 250, 42, 42, 0, 1));
/// let bytes = w.finish(2_000)?;
/// let r = Reader::from_bytes(bytes)?;
/// assert_eq!(r.event_count(), 1);
/// assert!(r.is_clean());
/// # let _ = name;
/// # Ok::<(), iocap_format::Error>(())
/// ```
pub struct Writer<W: Write> {
    out: Option<W>,
    /// Bytes written so far: the offset of the next frame.
    pos: u64,
    opts: WriterOptions,
    packer: Packer,
    cols: Columns,
    strings: HashMap<Vec<u8>, StrId>,
    next_proc: u32,
    next_file: u32,
    pending_strings: PendingStrings,
    pending_procs: Pending,
    pending_owners: Pending,
    pending_files: Vec<FileEntry>,
    pending_devices: Pending,
    drops: u64,
    index: Vec<(u64, ChunkSummary)>,
    others: Vec<(Kind, u64)>,
    bufs: EncodeBufs,
    /// The payload of the chunk being written, kept to reuse its allocation.
    chunk: Vec<u8>,
    frame: Vec<u8>,
}

impl<W: Write> Writer<W> {
    /// Start a capture: writes the preamble and the header frame.
    pub fn new(out: W, meta: &Meta, mut opts: WriterOptions) -> Result<Writer<W>, Error> {
        opts.chunk_events = opts.chunk_events.clamp(1, MAX_CHUNK_EVENTS as usize);
        let mut w = Writer {
            out: Some(out),
            pos: 0,
            packer: Packer::new(opts.level)?,
            cols: Columns::default(),
            opts,
            strings: HashMap::new(),
            next_proc: 1,
            next_file: 1,
            pending_strings: PendingStrings::default(),
            pending_procs: Pending::default(),
            pending_owners: Pending::default(),
            pending_files: Vec::new(),
            pending_devices: Pending::default(),
            drops: 0,
            index: Vec::new(),
            others: Vec::new(),
            bufs: EncodeBufs::default(),
            chunk: Vec::new(),
            frame: Vec::new(),
        };
        w.strings.insert(Vec::new(), 0);
        w.write_raw(&frame::preamble())?;
        let json = serde_json::to_vec(meta).map_err(std::io::Error::other)?;
        w.write_frame(Kind::Header, &json)?;
        Ok(w)
    }

    /// The id of `bytes` in the string table, adding it if it is new. A string longer than
    /// [`crate::MAX_STRING`] (a command line read whole from `/proc` can be megabytes) is cut
    /// to that length, its last three bytes `…`, since readers refuse longer ones.
    pub fn intern(&mut self, bytes: &[u8]) -> StrId {
        let cut;
        let bytes = if bytes.len() > MAX_STRING {
            cut = [&bytes[..MAX_STRING - ELLIPSIS.len()], ELLIPSIS].concat();
            &cut[..]
        } else {
            bytes
        };
        if let Some(&id) = self.strings.get(bytes) {
            return id;
        }
        let id = self.strings.len() as StrId;
        self.strings.insert(bytes.to_vec(), id);
        self.pending_strings.push(id, bytes);
        id
    }

    /// Add a process entry; its `id` is assigned here and returned.
    pub fn add_proc(&mut self, mut p: ProcEntry) -> u32 {
        p.id = self.next_proc;
        self.next_proc += 1;
        tables::encode_proc(&mut self.pending_procs, &p);
        tables::encode_proc_owner(&mut self.pending_owners, &p);
        p.id
    }

    /// Add a file entry; its `id` is assigned here and returned.
    pub fn add_file(&mut self, mut f: FileEntry) -> u32 {
        f.id = self.next_file;
        self.next_file += 1;
        let id = f.id;
        self.pending_files.push(f);
        id
    }

    /// Add (or rename) a block device. A name longer than [`crate::MAX_STRING`] bytes (no
    /// kernel's is) is cut to that length, as [`Writer::intern`] cuts strings.
    pub fn add_device(&mut self, d: &Device) {
        if d.name.len() > MAX_STRING {
            let mut end = MAX_STRING - ELLIPSIS.len();
            while !d.name.is_char_boundary(end) {
                end -= 1;
            }
            let name = format!("{}…", &d.name[..end]);
            tables::encode_device(&mut self.pending_devices, &Device { dev: d.dev, name });
            return;
        }
        tables::encode_device(&mut self.pending_devices, d);
    }

    /// Buffer one event; closes and writes the chunk when it is full.
    pub fn push(&mut self, e: &Event) -> Result<(), Error> {
        if self.out.is_none() {
            return Err(Error::Closed);
        }
        self.cols.push(e);
        if self.cols.len() >= self.opts.chunk_events {
            self.write_chunk()?;
        }
        Ok(())
    }

    /// Events buffered in the open chunk.
    pub fn buffered(&self) -> usize {
        self.cols.len()
    }

    /// Bytes written so far.
    pub fn bytes_written(&self) -> u64 {
        self.pos
    }

    /// Record the recorder's cumulative drop counters (written at once as a stats frame).
    pub fn record_drops(&mut self, stats: &DropStats) -> Result<(), Error> {
        self.drops = stats.total();
        let mut p = Vec::with_capacity(16 + stats.per_cpu.len() * 2);
        varint::put(&mut p, stats.ts);
        varint::put(&mut p, stats.per_cpu.len() as u64);
        for &d in &stats.per_cpu {
            varint::put(&mut p, d);
        }
        self.write_tables()?;
        let pos = self.pos;
        self.write_frame(Kind::Stats, &p)?;
        self.others.push((Kind::Stats, pos));
        Ok(())
    }

    /// Close the open chunk (if any), write pending tables and flush the output, so that
    /// everything pushed so far survives the recorder being killed.
    pub fn flush(&mut self) -> Result<(), Error> {
        self.write_chunk()?;
        self.write_tables()?;
        self.out.as_mut().ok_or(Error::Closed)?.flush()?;
        Ok(())
    }

    /// Write the last chunk, the index and the trailer, flush, and give back the output.
    /// `stop_ts` is when recording stopped (ns since boot).
    pub fn finish(mut self, stop_ts: u64) -> Result<W, Error> {
        self.write_chunk()?;
        self.write_tables()?;
        let mut p = Vec::with_capacity(64 + self.index.len() * 40);
        varint::put(&mut p, stop_ts);
        varint::put(&mut p, self.drops);
        varint::put(&mut p, self.index.len() as u64);
        for (off, s) in &self.index {
            varint::put(&mut p, *off);
            s.encode(&mut p);
        }
        varint::put(&mut p, self.others.len() as u64);
        for (kind, off) in &self.others {
            varint::put(&mut p, *kind as u64);
            varint::put(&mut p, *off);
        }
        let index_at = self.pos;
        self.write_frame(Kind::Index, &p)?;
        self.write_raw(&frame::trailer(index_at))?;
        let mut out = self.out.take().ok_or(Error::Closed)?;
        out.flush()?;
        Ok(out)
    }

    fn write_chunk(&mut self) -> Result<(), Error> {
        if self.cols.is_empty() {
            return Ok(());
        }
        // Tables first: a chunk never refers to an entry that is not yet in the file.
        self.write_tables()?;
        let summary = ChunkSummary::of(&self.cols, self.drops);
        let mut p = std::mem::take(&mut self.chunk);
        p.clear();
        let mut head = Vec::with_capacity(128);
        summary.encode(&mut head);
        varint::put(&mut p, head.len() as u64);
        p.extend_from_slice(&head);
        let pos = self.pos;
        let r = self
            .cols
            .encode_with(&mut p, Some(&mut self.packer), &mut self.bufs)
            .map_err(Error::from)
            .and_then(|()| self.write_frame(Kind::Chunk, &p));
        self.chunk = p;
        r?;
        self.index.push((pos, summary));
        self.cols.clear();
        Ok(())
    }

    fn write_tables(&mut self) -> Result<(), Error> {
        // Owners after the processes they are of: a reader applies them to existing entries.
        let kinds = [
            Kind::PrefixStrings,
            Kind::Devices,
            Kind::Procs,
            Kind::ProcOwners,
            Kind::ColumnFiles,
        ];
        for kind in kinds {
            let raw = match kind {
                Kind::PrefixStrings => self.pending_strings.take_payload(),
                Kind::Devices => self.pending_devices.take_payload(),
                Kind::Procs => self.pending_procs.take_payload(),
                Kind::ProcOwners => self.pending_owners.take_payload(),
                _ => tables::encode_files(&std::mem::take(&mut self.pending_files)),
            };
            if let Some(raw) = raw {
                let mut p = Vec::with_capacity(raw.len() / 2 + 16);
                self.packer.pack(&raw, &mut p)?;
                let pos = self.pos;
                self.write_frame(kind, &p)?;
                self.others.push((kind, pos));
            }
        }
        Ok(())
    }

    fn write_frame(&mut self, kind: Kind, payload: &[u8]) -> Result<(), Error> {
        let mut buf = std::mem::take(&mut self.frame);
        buf.clear();
        frame::encode(&mut buf, kind, payload)?;
        let r = self.write_raw(&buf);
        self.frame = buf;
        r
    }

    fn write_raw(&mut self, bytes: &[u8]) -> Result<(), Error> {
        let out = self.out.as_mut().ok_or(Error::Closed)?;
        if let Err(e) = out.write_all(bytes) {
            // A partial frame may be on disk now: writing more after it would bury whole
            // frames behind garbage, so the writer stops here and readers recover what is before.
            self.out = None;
            return Err(e.into());
        }
        self.pos += bytes.len() as u64;
        Ok(())
    }
}
