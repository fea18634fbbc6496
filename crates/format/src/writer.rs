//! The capture writer.

use std::collections::{BTreeMap, HashMap};
use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::Arc;
use std::thread::JoinHandle;

use crate::columns::{chunk_holds, Columns, EncodeBufs, MAX_CHUNK_EVENTS};
use crate::error::Error;
use crate::frame::{self, Kind, FRAME_HEADER_LEN};
use crate::model::{ContainerEntry, Device, DropStats, Event, FileEntry, Meta, ProcDropStats, ProcEntry, Stack, StrId};
use crate::pack::{self, Packer};
use crate::rollup::Rollup;
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
    /// Where frames go: written here, or by the encoder thread ([`Writer::with_encoder`]).
    back: Back<W>,
    opts: WriterOptions,
    cols: Columns,
    strings: HashMap<Vec<u8>, StrId>,
    next_proc: u32,
    next_file: u32,
    pending_strings: PendingStrings,
    pending_procs: Pending,
    pending_owners: Pending,
    next_container: u32,
    pending_containers: Pending,
    pending_proc_containers: Pending,
    pending_files: Vec<FileEntry>,
    pending_devices: Pending,
    /// Each distinct stack's id, and those not yet written.
    stacks: HashMap<Stack, u32>,
    pending_stacks: Pending,
    drops: u64,
}

impl<W: Write> Writer<W> {
    /// Start a capture: writes the preamble and the header frame. Everything is encoded and
    /// written on the calling thread.
    pub fn new(out: W, meta: &Meta, mut opts: WriterOptions) -> Result<Writer<W>, Error> {
        opts.chunk_events = opts.chunk_events.clamp(1, MAX_CHUNK_EVENTS as usize);
        let mut frames = Frames {
            out: Some(out),
            pos: 0,
            packer: Packer::new(opts.level)?,
            index: Vec::new(),
            others: Vec::new(),
            bufs: EncodeBufs::default(),
            chunk: Vec::new(),
            rollup: Vec::new(),
            frame: Vec::new(),
        };
        frames.write_raw(&frame::preamble())?;
        let json = serde_json::to_vec(meta).map_err(std::io::Error::other)?;
        frames.write_frame(Kind::Header, &json)?;
        let mut w = Writer {
            back: Back::Here {
                frames: Box::new(frames),
                spawn: None,
            },
            cols: Columns::default(),
            opts,
            strings: HashMap::new(),
            next_proc: 1,
            next_file: 1,
            pending_strings: PendingStrings::default(),
            pending_procs: Pending::default(),
            pending_owners: Pending::default(),
            next_container: 1,
            pending_containers: Pending::default(),
            pending_proc_containers: Pending::default(),
            pending_files: Vec::new(),
            pending_devices: Pending::default(),
            stacks: HashMap::new(),
            pending_stacks: Pending::default(),
            drops: 0,
        };
        w.strings.insert(Vec::new(), 0);
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
        tables::encode_proc_container(&mut self.pending_proc_containers, &p);
        p.id
    }

    /// Add a container entry; its `id` is assigned here and returned. Its strings must have
    /// been [`Writer::intern`]ed by this writer.
    pub fn add_container(&mut self, mut c: ContainerEntry) -> u32 {
        c.id = self.next_container;
        self.next_container += 1;
        tables::encode_container(&mut self.pending_containers, &c);
        c.id
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

    /// The id of `stack` in the stack table, adding it if it is new (ids from 1). Its frames'
    /// strings must have been [`Writer::intern`]ed by this writer. A stack of more than
    /// [`crate::MAX_STACK_FRAMES`] frames (no kernel gives one) keeps its innermost.
    pub fn add_stack(&mut self, stack: &Stack) -> u32 {
        if let Some(&id) = self.stacks.get(stack) {
            return id;
        }
        let mut stack = stack.clone();
        stack.frames.truncate(crate::tables::MAX_STACK_FRAMES);
        let id = self.stacks.len() as u32 + 1;
        tables::encode_stack(&mut self.pending_stacks, id, &stack);
        self.stacks.insert(stack, id);
        id
    }

    /// Buffer one event; closes and writes the chunk when it is full.
    pub fn push(&mut self, e: &Event) -> Result<(), Error> {
        if self.back.is_closed() {
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

    /// Bytes written so far. With an encoder thread, what it has written: the chunks
    /// handed to it and not yet written (at most one waiting and the one it encodes)
    /// are not counted yet.
    pub fn bytes_written(&self) -> u64 {
        self.back.pos()
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
        self.back.counters(Kind::Stats, p)
    }

    /// Record the drops of the stats frame just written ([`Writer::record_drops`], same `ts`)
    /// placed by process: each process's events dropped since the previous reading (written at
    /// once as a drop-processes frame, kind 18). Processes are written in increasing pid order,
    /// a pid given twice once with the sum of its counts (and the first nonzero entry id), and
    /// those of count 0 left out. A recorder that places its drops writes one after each stats
    /// frame, empty when none of the growth had a process, so that a reader can tell "none of
    /// this process's" from "not recorded".
    pub fn record_drops_by_process(&mut self, by_proc: &ProcDropStats) -> Result<(), Error> {
        let mut procs: Vec<_> = by_proc.procs.iter().filter(|p| p.count > 0).copied().collect();
        procs.sort_by_key(|p| p.pid);
        procs.dedup_by(|b, a| {
            if a.pid != b.pid {
                return false;
            }
            a.count = a.count.saturating_add(b.count);
            if a.proc == 0 {
                a.proc = b.proc;
            }
            true
        });
        let mut p = Vec::with_capacity(8 + 12 * procs.len());
        varint::put(&mut p, by_proc.ts);
        varint::put(&mut p, procs.len() as u64);
        for d in &procs {
            varint::put(&mut p, u64::from(d.pid));
            varint::put(&mut p, u64::from(d.proc));
            varint::put(&mut p, d.count);
        }
        self.write_tables()?;
        self.back.counters(Kind::DropProcs, p)
    }

    /// Record how many block requests the recorder saw issued whose completion never reached
    /// it, disk by disk (kernel `dev_t`, as [`Event::dev`]), cumulative since the file started,
    /// as read at `ts`: written at once as an unseen frame (their sum, which a reader before
    /// 1.15 reads) and an unseen-disks frame.
    pub fn record_unseen(&mut self, ts: u64, by_disk: &BTreeMap<u32, u64>) -> Result<(), Error> {
        let mut p = Vec::with_capacity(20);
        varint::put(&mut p, ts);
        varint::put(&mut p, by_disk.values().fold(0, |a, &n| a.saturating_add(n)));
        self.write_tables()?;
        self.back.counters(Kind::Unseen, p)?;
        let mut p = Vec::with_capacity(8 + 8 * by_disk.len());
        varint::put(&mut p, ts);
        varint::put(&mut p, by_disk.len() as u64);
        for (&dev, &n) in by_disk {
            varint::put(&mut p, u64::from(dev));
            varint::put(&mut p, n);
        }
        self.back.counters(Kind::UnseenDisks, p)
    }

    /// Close the open chunk (if any), write pending tables and flush the output, so that
    /// everything pushed so far survives the recorder being killed. With an encoder thread,
    /// returns once it has written and flushed everything.
    pub fn flush(&mut self) -> Result<(), Error> {
        self.write_chunk()?;
        self.write_tables()?;
        self.back.flush()
    }

    /// Write the last chunk, the index and the trailer, flush, and give back the output.
    /// `stop_ts` is when recording stopped (ns since boot).
    pub fn finish(mut self, stop_ts: u64) -> Result<W, Error> {
        self.write_chunk()?;
        self.write_tables()?;
        let frames = std::mem::replace(&mut self.back, Back::Closed).into_frames()?;
        frames.finish(stop_ts, self.drops)
    }

    fn write_chunk(&mut self) -> Result<(), Error> {
        if self.cols.is_empty() {
            return Ok(());
        }
        // Tables first: a chunk never refers to an entry that is not yet in the file.
        self.write_tables()?;
        self.back.chunk(&mut self.cols, self.drops)
    }

    fn write_tables(&mut self) -> Result<(), Error> {
        // Owners and containers after the processes they are of: a reader applies them to
        // existing entries.
        let kinds = [
            Kind::PrefixStrings,
            Kind::Devices,
            Kind::Containers,
            Kind::Procs,
            Kind::ProcOwners,
            Kind::ProcContainers,
            Kind::ColumnFiles,
            Kind::Stacks,
        ];
        for kind in kinds {
            let raw = match kind {
                Kind::PrefixStrings => self.pending_strings.take_payload(),
                Kind::Devices => self.pending_devices.take_payload(),
                Kind::Procs => self.pending_procs.take_payload(),
                Kind::ProcOwners => self.pending_owners.take_payload(),
                Kind::Containers => self.pending_containers.take_payload(),
                Kind::ProcContainers => self.pending_proc_containers.take_payload(),
                Kind::Stacks => self.pending_stacks.take_payload(),
                _ => tables::encode_files(&std::mem::take(&mut self.pending_files)),
            };
            if let Some(raw) = raw {
                self.back.table(kind, raw)?;
            }
        }
        Ok(())
    }
}

impl<W: Write + Send + 'static> Writer<W> {
    /// Start a capture as [`Writer::new`] does, whose chunks are then summed up, encoded,
    /// compressed and written by a thread of its own, while the caller goes on pushing the
    /// next chunk's events: the recorder's writer thread spends about as long encoding a chunk
    /// as filling it. Tables, stats and chunks reach the file in the order they would
    /// without the thread. The thread is started with the first chunk, from the thread that
    /// closes it, and so runs at that thread's nice value.
    ///
    /// An error of the encoder thread (a full disk) is returned by the next call that hands
    /// it work, and the writer is closed from then on, as [`Writer::new`]'s is after a
    /// failed write.
    pub fn with_encoder(out: W, meta: &Meta, opts: WriterOptions) -> Result<Writer<W>, Error> {
        let mut w = Writer::new(out, meta, opts)?;
        if let Back::Here { spawn, .. } = &mut w.back {
            *spawn = Some(Encoder::<W>::spawn);
        }
        Ok(w)
    }
}

/// Jobs handed to the encoder thread that wait for it, besides the one it works on: one (a
/// chunk, a table or stats), so that the writer can run ahead by a chunk while the encoder is
/// slow for a moment, and three chunks' columns at most are in memory (the open one, the
/// waiting one and the one being encoded).
const QUEUED_CHUNKS: usize = 1;

/// Starts an encoder thread with the frames, or gives them back if no thread can be had.
type Spawn<W> = fn(Box<Frames<W>>) -> Result<Encoder<W>, Box<Frames<W>>>;

/// Where a writer's frames go.
enum Back<W> {
    /// Written on the writer's own thread. `spawn`, if set, moves them to an encoder
    /// thread at the first chunk (a function of [`Writer::with_encoder`]'s, which knows the
    /// output can be sent to another thread).
    Here {
        frames: Box<Frames<W>>,
        spawn: Option<Spawn<W>>,
    },
    /// Written by the encoder thread.
    Thread(Encoder<W>),
    /// Finished, or failed.
    Closed,
}

impl<W: Write> Back<W> {
    fn is_closed(&self) -> bool {
        match self {
            Back::Here { frames, .. } => frames.out.is_none(),
            Back::Thread(_) => false,
            Back::Closed => true,
        }
    }

    fn pos(&self) -> u64 {
        match self {
            Back::Here { frames, .. } => frames.pos,
            Back::Thread(e) => e.pos.load(Ordering::Relaxed),
            Back::Closed => 0,
        }
    }

    fn chunk(&mut self, cols: &mut Columns, drops: u64) -> Result<(), Error> {
        if let Back::Here { spawn: Some(spawn), .. } = *self {
            let Back::Here { frames, .. } = std::mem::replace(self, Back::Closed) else {
                unreachable!("matched Here")
            };
            *self = match spawn(frames) {
                Ok(e) => Back::Thread(e),
                // No thread (out of threads): written here then, as by `Writer::new`.
                Err(frames) => Back::Here { frames, spawn: None },
            };
        }
        match self {
            Back::Here { frames, .. } => {
                frames.chunk(cols, drops)?;
                cols.clear();
                Ok(())
            }
            Back::Thread(e) => {
                let spare = e.spare.try_recv().unwrap_or_default();
                let full = std::mem::replace(cols, *spare);
                self.send(Job::Chunk(Box::new(full), drops))
            }
            Back::Closed => Err(Error::Closed),
        }
    }

    fn table(&mut self, kind: Kind, raw: Vec<u8>) -> Result<(), Error> {
        match self {
            Back::Here { frames, .. } => frames.table(kind, &raw),
            Back::Thread(_) => self.send(Job::Table(kind, raw)),
            Back::Closed => Err(Error::Closed),
        }
    }

    fn counters(&mut self, kind: Kind, payload: Vec<u8>) -> Result<(), Error> {
        match self {
            Back::Here { frames, .. } => frames.counters(kind, &payload),
            Back::Thread(_) => self.send(Job::Counters(kind, payload)),
            Back::Closed => Err(Error::Closed),
        }
    }

    fn flush(&mut self) -> Result<(), Error> {
        match self {
            Back::Here { frames, .. } => frames.flush(),
            Back::Thread(_) => {
                self.send(Job::Flush)?;
                let Back::Thread(e) = self else {
                    unreachable!("sent to a thread")
                };
                match e.flushed.recv() {
                    Ok(()) => Ok(()),
                    // It stopped before flushing: its error.
                    Err(_) => Err(self.fail()),
                }
            }
            Back::Closed => Err(Error::Closed),
        }
    }

    /// Hand `job` to the encoder thread; if it has stopped (an error), its error.
    fn send(&mut self, job: Job) -> Result<(), Error> {
        let Back::Thread(e) = self else {
            return Err(Error::Closed);
        };
        let sent = e.jobs.as_ref().is_some_and(|jobs| jobs.send(job).is_ok());
        if sent {
            Ok(())
        } else {
            Err(self.fail())
        }
    }

    /// The encoder thread stopped early: wait for it and return its error; closed from now on.
    fn fail(&mut self) -> Error {
        match std::mem::replace(self, Back::Closed).into_frames() {
            Err(e) => e,
            // It ended without an error, yet took no more work: it cannot, but say so.
            Ok(_) => Error::Closed,
        }
    }

    /// Everything written: the frames' state back from the encoder thread, once it has
    /// written all it was handed.
    fn into_frames(self) -> Result<Box<Frames<W>>, Error> {
        match self {
            Back::Here { frames, .. } => Ok(frames),
            Back::Thread(mut e) => e.join(),
            Back::Closed => Err(Error::Closed),
        }
    }
}

/// Work for the encoder thread, done in the order handed over.
enum Job {
    Table(Kind, Vec<u8>),
    /// A stats or unseen frame's payload.
    Counters(Kind, Vec<u8>),
    /// A chunk's events and the drops so far; the columns come back cleared, for reuse.
    Chunk(Box<Columns>, u64),
    /// Flush the output, then say so.
    Flush,
}

/// The encoder thread of a writer made by [`Writer::with_encoder`].
struct Encoder<W> {
    /// `None` once the thread is told to finish.
    jobs: Option<SyncSender<Job>>,
    /// Columns of written chunks, for the writer to fill again.
    spare: Receiver<Box<Columns>>,
    /// A message for each [`Job::Flush`] done.
    flushed: Receiver<()>,
    /// The bytes the thread has written.
    pos: Arc<AtomicU64>,
    thread: Option<JoinHandle<Result<Box<Frames<W>>, Error>>>,
}

impl<W: Write + Send + 'static> Encoder<W> {
    fn spawn(frames: Box<Frames<W>>) -> Result<Encoder<W>, Box<Frames<W>>> {
        let (jobs, todo) = sync_channel::<Job>(QUEUED_CHUNKS);
        let (give_back, spare) = sync_channel(QUEUED_CHUNKS + 1);
        let (done, flushed) = sync_channel(1);
        let pos = Arc::new(AtomicU64::new(frames.pos));
        let shown = Arc::clone(&pos);
        // The frames move to the thread through a channel, so that they come back if it
        // cannot be started.
        let (hand, take) = sync_channel::<Box<Frames<W>>>(1);
        let started = std::thread::Builder::new().name("iocap-encoder".into()).spawn(move || {
            let mut frames = take.recv().map_err(|_| Error::Closed)?;
            for job in todo {
                match job {
                    Job::Table(kind, raw) => frames.table(kind, &raw)?,
                    Job::Counters(kind, p) => frames.counters(kind, &p)?,
                    Job::Chunk(mut cols, drops) => {
                        frames.chunk(&cols, drops)?;
                        cols.clear();
                        let _ = give_back.try_send(cols);
                    }
                    Job::Flush => {
                        frames.flush()?;
                        let _ = done.send(());
                    }
                }
                shown.store(frames.pos, Ordering::Relaxed);
            }
            Ok(frames)
        });
        match started {
            Ok(thread) => {
                hand.send(frames).expect("the thread waits for its frames");
                Ok(Encoder {
                    jobs: Some(jobs),
                    spare,
                    flushed,
                    pos,
                    thread: Some(thread),
                })
            }
            Err(_) => Err(frames),
        }
    }
}

impl<W> Encoder<W> {
    /// Tell the thread there is no more work, and wait for it to write what it has.
    fn join(&mut self) -> Result<Box<Frames<W>>, Error> {
        self.jobs = None;
        match self.thread.take().map(JoinHandle::join) {
            Some(Ok(r)) => r,
            Some(Err(_)) => Err(Error::Io(std::io::Error::other(
                "the capture's encoder thread panicked",
            ))),
            None => Err(Error::Closed),
        }
    }
}

impl<W> Drop for Encoder<W> {
    /// A writer dropped unfinished still writes what it was handed (readers recover the
    /// file as one that was not closed): the thread is waited for.
    fn drop(&mut self) {
        let _ = self.join();
    }
}

/// The frames of a capture as they are written: the output, where the next frame goes, and
/// what the index will list.
struct Frames<W> {
    out: Option<W>,
    /// Bytes written so far: the offset of the next frame.
    pos: u64,
    packer: Packer,
    index: Vec<(u64, ChunkSummary)>,
    others: Vec<(Kind, u64)>,
    bufs: EncodeBufs,
    /// The payload of the chunk being written, kept to reuse its allocation.
    chunk: Vec<u8>,
    /// The bytes of its rollup, before compression, likewise.
    rollup: Vec<u8>,
    frame: Vec<u8>,
}

impl<W: Write> Frames<W> {
    fn chunk(&mut self, cols: &Columns, drops: u64) -> Result<(), Error> {
        let summary = ChunkSummary::of(cols, drops);
        let mut p = std::mem::take(&mut self.chunk);
        p.clear();
        let mut head = Vec::with_capacity(128);
        summary.encode(&mut head);
        varint::put(&mut p, head.len() as u64);
        p.extend_from_slice(&head);
        let pos = self.pos;
        let encoded = cols.encode_with(&mut p, Some(&mut self.packer), &mut self.bufs);
        let frame_len = (FRAME_HEADER_LEN + p.len()) as u64;
        if encoded.is_ok() && !chunk_holds(frame_len, summary.events) {
            // Denser than a reader takes (identical events, in practice synthetic ones):
            // written as two chunks of half as many events each.
            self.chunk = p;
            let (a, b) = halves(cols);
            self.chunk(&a, drops)?;
            return self.chunk(&b, drops);
        }
        let r = encoded
            .map_err(Error::from)
            .and_then(|()| self.write_frame(Kind::Chunk, &p));
        self.chunk = p;
        r?;
        self.index.push((pos, summary));
        // The chunk's rollup right after it, then its cells' totals, each its own frame (a
        // question that reads no latency bound needs only the first), listed with the others.
        // The cells' totals are stored uncompressed: zstd saved 27 % of them on a day's
        // synthetic ring, and reading them back was then a fifth of a latency bound's refilter
        // (1.1-1.2 s over an hour, 0.94-0.99 s stored), while on real recordings stored costs
        // 0.1-0.9 % of the file (format_bench --rewrite of sizes.sh's recordings).
        let rollup = Rollup::of(cols, pos);
        let mut raw = std::mem::take(&mut self.rollup);
        raw.clear();
        rollup.encode(&mut raw);
        // One whose keys hold the file is a frame of its own kind, so a reader tells from the
        // index alone whether a question on the file can read it (a 1.16 reader skips it).
        let kind = if rollup.with_file {
            Kind::FileRollup
        } else {
            Kind::Rollup
        };
        let r = self.packed_frame(kind, &raw);
        raw.clear();
        let r = r.and_then(|()| match rollup.encode_cell_totals(&mut raw) {
            true => {
                let mut stored = Vec::with_capacity(raw.len() + 11);
                pack::store(&raw, &mut stored);
                self.frame(Kind::CellTotals, &stored)
            }
            false => Ok(()),
        });
        self.rollup = raw;
        r
    }

    /// Write `raw` compressed as a frame of `kind`, listed with the other frames.
    fn packed_frame(&mut self, kind: Kind, raw: &[u8]) -> Result<(), Error> {
        let mut packed = Vec::with_capacity(raw.len() / 2 + 16);
        self.packer.pack(raw, &mut packed)?;
        self.frame(kind, &packed)
    }

    /// Write `payload` as a frame of `kind`, listed with the other frames.
    fn frame(&mut self, kind: Kind, payload: &[u8]) -> Result<(), Error> {
        let at = self.pos;
        self.write_frame(kind, payload)?;
        self.others.push((kind, at));
        Ok(())
    }

    fn table(&mut self, kind: Kind, raw: &[u8]) -> Result<(), Error> {
        self.packed_frame(kind, raw)
    }

    /// A frame of counters (stats, unseen), written uncompressed and listed in the index.
    fn counters(&mut self, kind: Kind, payload: &[u8]) -> Result<(), Error> {
        self.frame(kind, payload)
    }

    fn flush(&mut self) -> Result<(), Error> {
        self.out.as_mut().ok_or(Error::Closed)?.flush()?;
        Ok(())
    }

    /// The index and the trailer, then the output back, flushed.
    fn finish(mut self, stop_ts: u64, drops: u64) -> Result<W, Error> {
        let mut p = Vec::with_capacity(64 + self.index.len() * 40);
        varint::put(&mut p, stop_ts);
        varint::put(&mut p, drops);
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

/// The first and second half of `cols`' events, as two chunks' columns.
fn halves(cols: &Columns) -> (Columns, Columns) {
    let (mut a, mut b) = (Columns::default(), Columns::default());
    let mid = cols.len() / 2;
    for i in 0..cols.len() {
        let half = if i < mid { &mut a } else { &mut b };
        half.push(&cols.event(i));
    }
    (a, b)
}
