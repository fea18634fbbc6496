//! The capture reader: opens by the footer index, or recovers a file that has none, and
//! follows a file still being written ([`Reader::refresh`]).

use std::collections::{BTreeMap, HashMap};
use std::fs::File;
use std::io;
use std::path::Path;
use std::sync::Arc;

use crate::columns::{chunk_holds, ColSet, Columns, DecodeError, MAX_EVENTS_PER_BYTE};
use crate::error::{Error, Limit};
use crate::frame::{self, FrameHeader, Kind, FRAME_HEADER_LEN, PREAMBLE_LEN, TRAILER_LEN};
use crate::live::{self, Liveness};
use crate::model::{DropStats, Event, Meta, ProcDropStats, ProcDrops};
use crate::pack::Unpacker;
use crate::rollup::Rollup;
use crate::summary::ChunkSummary;
use crate::tables::{table_budget, TableError, Tables};
use crate::varint::Cursor;

/// The most drops placed by process (entries of drop-processes frames) a reader keeps: 64 MiB
/// of them. A recording losing events of ten processes at every reading, four a second, takes
/// four days to reach it; frames past it are refused, and the drops by process read as not
/// recorded.
pub const MAX_DROP_PLACES: usize = 1 << 22;

mod join;

/// Bytes that can be read at any offset from several threads at once.
pub trait Source: Send + Sync {
    /// Fill `buf` from `offset`; an `UnexpectedEof` error when the source ends first.
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()>;
    /// Size in bytes, read when a [`Reader`] opens and again by [`Reader::refresh`].
    fn len(&self) -> io::Result<u64>;
    /// Whether [`Source::len`] is 0.
    fn is_empty(&self) -> io::Result<bool> {
        Ok(self.len()? == 0)
    }
    /// Whether a writer holds the source and is still adding to it (for a file: a recorder's
    /// lock, [`crate::lock_for_writing`]). No by default: bytes in memory are all there is.
    fn writer_alive(&self) -> bool {
        false
    }
}

impl<S: Source + ?Sized> Source for Arc<S> {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        (**self).read_exact_at(buf, offset)
    }

    fn len(&self) -> io::Result<u64> {
        (**self).len()
    }

    fn writer_alive(&self) -> bool {
        (**self).writer_alive()
    }
}

impl Source for File {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        #[cfg(unix)]
        {
            std::os::unix::fs::FileExt::read_exact_at(self, buf, offset)
        }
        #[cfg(windows)]
        {
            let mut done = 0;
            while done < buf.len() {
                let n = std::os::windows::fs::FileExt::seek_read(self, &mut buf[done..], offset + done as u64)?;
                if n == 0 {
                    return Err(io::ErrorKind::UnexpectedEof.into());
                }
                done += n;
            }
            Ok(())
        }
    }

    fn len(&self) -> io::Result<u64> {
        Ok(self.metadata()?.len())
    }

    fn writer_alive(&self) -> bool {
        live::writer_alive(self)
    }
}

impl Source for Vec<u8> {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        let start = usize::try_from(offset).map_err(|_| io::Error::from(io::ErrorKind::UnexpectedEof))?;
        let src = start
            .checked_add(buf.len())
            .and_then(|end| self.get(start..end))
            .ok_or(io::ErrorKind::UnexpectedEof)?;
        buf.copy_from_slice(src);
        Ok(())
    }

    fn len(&self) -> io::Result<u64> {
        Ok(self.len() as u64)
    }
}

/// Where a chunk is and what it holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChunkInfo {
    /// Offset of the chunk's frame in the file.
    pub offset: u64,
    /// The chunk's summary, from the index (or, for a recovered file, from the chunk).
    pub summary: ChunkSummary,
}

/// Scratch space for decoding chunks: one per thread that reads.
#[derive(Debug)]
pub struct ChunkDecoder {
    payload: Vec<u8>,
    body: Vec<u8>,
    unpacker: Unpacker,
    /// A second context for columns, so table and chunk reads share nothing.
    col_unpacker: Option<Unpacker>,
    /// The columns of [`Reader::read_chunk_then`]'s second step, before they join the first's.
    more: Columns,
}

impl ChunkDecoder {
    /// Empty buffers, which grow to the largest chunk read and are kept for the next.
    pub fn new() -> ChunkDecoder {
        ChunkDecoder {
            payload: Vec::new(),
            body: Vec::new(),
            unpacker: Unpacker::new().expect("zstd decompression context"),
            col_unpacker: None,
            more: Columns::default(),
        }
    }
}

impl Default for ChunkDecoder {
    fn default() -> Self {
        ChunkDecoder::new()
    }
}

/// An open capture. Cheap to share between threads: every read is positional.
///
/// A file still being written (see [`Reader::liveness`]) opens with what is on disk so far,
/// and [`Reader::refresh`] adds what the writer appends since. A clone is a snapshot: it shares
/// the source, and the tables until one of the two changes them.
///
/// ```no_run
/// use iocap_format::{ColSet, Columns, ChunkDecoder, Reader};
/// let r = Reader::open("trace.cap")?;
/// let (mut dec, mut cols) = (ChunkDecoder::new(), Columns::default());
/// for i in 0..r.chunks().len() {
///     r.read_chunk(i, ColSet::ALL, &mut dec, &mut cols)?;
///     println!("chunk {i}: {} events", cols.len());
/// }
/// # Ok::<(), iocap_format::Error>(())
/// ```
pub struct Reader<S: Source = File> {
    src: Arc<S>,
    /// Bytes read so far: at open, or at the last [`Reader::refresh`].
    file_len: u64,
    version: (u16, u16),
    meta: Meta,
    tables: Arc<Tables>,
    chunks: Vec<ChunkInfo>,
    drop_stats: Vec<DropStats>,
    /// The drop-processes frames read (kind 18, since 1.22), in file order.
    drop_procs: Vec<ProcDropStats>,
    /// Entries of `drop_procs` together, held to [`MAX_DROP_PLACES`].
    drop_places: usize,
    /// Some of the drops were not placed by process at all: a joined file's recorder did not,
    /// or frames were refused for [`MAX_DROP_PLACES`] ([`Reader::drops_by_process`]).
    drop_procs_lacking: bool,
    /// Offsets of the chunks' rollup frames, increasing ([`Reader::rollup`]): listed, not read,
    /// when the file is opened.
    rollups: Vec<u64>,
    /// Those of `rollups` whose keys hold the file (frame kind 16, since 1.17), increasing.
    file_rollups: Vec<u64>,
    /// Offsets of the rollups' cells' totals frames, increasing ([`Reader::rollup_with_cells`]),
    /// likewise.
    cell_frames: Vec<u64>,
    /// The largest count of the unseen frames read ([`Reader::unseen`]).
    unseen: u64,
    /// Each disk's largest count of the unseen-disks frames read ([`Reader::unseen_by_disk`]).
    unseen_disks: BTreeMap<u32, u64>,
    stop_ts: Option<u64>,
    /// Where a scan stands, while the file is read by scanning (no valid index yet).
    scan: Option<ScanState>,
    liveness: Liveness,
    recovery: Option<String>,
    /// Taken for a file still being written whatever its lock says ([`Reader::assume_writer`]).
    assume_writer: bool,
    /// For several files read as one ([`Reader::join`]): where each file's chunks are, and
    /// how its table ids were moved. `None` for one file, read from `src`.
    parts: Option<Arc<[join::Part<S>]>>,
}

impl<S: Source> Clone for Reader<S> {
    fn clone(&self) -> Self {
        Reader {
            src: Arc::clone(&self.src),
            file_len: self.file_len,
            version: self.version,
            meta: self.meta.clone(),
            tables: Arc::clone(&self.tables),
            chunks: self.chunks.clone(),
            drop_stats: self.drop_stats.clone(),
            drop_procs: self.drop_procs.clone(),
            drop_places: self.drop_places,
            drop_procs_lacking: self.drop_procs_lacking,
            rollups: self.rollups.clone(),
            file_rollups: self.file_rollups.clone(),
            cell_frames: self.cell_frames.clone(),
            unseen: self.unseen,
            unseen_disks: self.unseen_disks.clone(),
            stop_ts: self.stop_ts,
            scan: self.scan.clone(),
            liveness: self.liveness,
            recovery: self.recovery.clone(),
            assume_writer: self.assume_writer,
            parts: self.parts.clone(),
        }
    }
}

/// What [`Reader::refresh`] found appended since the last look.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Growth {
    /// New chunks: the last ones of [`Reader::chunks`] now.
    pub chunks: usize,
    /// Table frames merged into [`Reader::tables`] (new processes, files, strings, devices).
    pub tables: usize,
    /// Drop statistics frames added to [`Reader::drop_stats`], and unseen frames read
    /// ([`Reader::unseen`]).
    pub stats: usize,
    /// Bytes of whole frames read.
    pub bytes: u64,
}

impl Growth {
    /// Whether nothing was added.
    pub fn is_empty(&self) -> bool {
        *self == Growth::default()
    }
}

/// How far the scan of a file without a valid index got.
#[derive(Clone, Debug)]
struct ScanState {
    /// Where the next scan starts: the end of the last whole frame, or the start of bytes
    /// that did not make a frame when last read (a frame being written, or damage).
    resume: u64,
    /// Why the file is read by scanning, then what the scan skipped for good.
    notes: Vec<String>,
    /// What the bytes from `resume` to the end were when last read (a frame cut short, stray
    /// bytes): the end of a live file is not damage yet.
    tail: Option<String>,
    /// The last index frame the scan read: its offset and what it lists.
    index: Option<(u64, Index)>,
    /// From `.0` (where bytes stopped making a frame), no frame magic up to `.1`: a file
    /// only grows at its end, so the next scan looks for one past there only. A hole of 50 GB
    /// after the last frame was searched again at every look of a follower.
    searched: (u64, u64),
}

/// What a reader keeps beyond what every question asks of a capture.
#[derive(Clone, Copy, Debug, Default)]
pub struct ReadOptions {
    /// Each file entry's process, fd and opening time ([`Tables::file_entries`]), not only
    /// what its fd refers to ([`crate::FdTarget`]): for writing the entries again. A tree
    /// walk's recording has an entry for each open; whole, they took 40 bytes each.
    pub file_details: bool,
    /// Refuse a symbolic link at the path, not only what it leads to (`O_NOFOLLOW`): for a
    /// path another file names (a rotation's next file, written in a header), which only a
    /// recorder that made it there should be trusted for.
    pub no_follow: bool,
}

impl Reader<File> {
    /// Open a capture file. Anything but a regular file is refused with
    /// [`Error::NotACapture`]: a FIFO would block the open (and cannot be read by position),
    /// a device reads as endless or empty bytes.
    pub fn open(path: impl AsRef<Path>) -> Result<Reader<File>, Error> {
        Reader::open_with(path, ReadOptions::default())
    }

    /// The next file of a rotation, named by a header: [`Reader::open`], refusing a symbolic
    /// link there ([`ReadOptions::no_follow`]).
    pub fn open_next(path: impl AsRef<Path>) -> Result<Reader<File>, Error> {
        Reader::open_with(
            path,
            ReadOptions {
                no_follow: true,
                ..ReadOptions::default()
            },
        )
    }

    /// [`Reader::open`], keeping what `opts` asks.
    pub fn open_with(path: impl AsRef<Path>, opts: ReadOptions) -> Result<Reader<File>, Error> {
        let path = path.as_ref();
        // Judged before it is opened: opening a device can have effects (a watchdog, a tape
        // that rewinds), and a FIFO would wait for a writer.
        let look = if opts.no_follow {
            std::fs::symlink_metadata(path)?
        } else {
            std::fs::metadata(path)?
        };
        if !look.file_type().is_file() {
            return Err(Error::NotACapture(not_regular(look.file_type())));
        }
        let mut open = std::fs::OpenOptions::new();
        open.read(true);
        // What is there may have changed since the look: a FIFO put there is not waited on
        // (the check below refuses it), a link is not followed when it should not be.
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::custom_flags(
            &mut open,
            libc::O_NONBLOCK | if opts.no_follow { libc::O_NOFOLLOW } else { 0 },
        );
        let file = open.open(path)?;
        let kind = file.metadata()?.file_type();
        if !kind.is_file() {
            return Err(Error::NotACapture(not_regular(kind)));
        }
        Reader::new_with(file, opts)
    }
}

/// What a path that is not a regular file is, for the refusal.
fn not_regular(kind: std::fs::FileType) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if kind.is_fifo() {
            return "it is a FIFO, not a regular file";
        }
        if kind.is_char_device() || kind.is_block_device() {
            return "it is a device, not a regular file";
        }
        if kind.is_socket() {
            return "it is a socket, not a regular file";
        }
    }
    if kind.is_symlink() {
        "it is a symbolic link, which a rotation's next file is never read through"
    } else if kind.is_dir() {
        "it is a directory, not a file"
    } else {
        "it is not a regular file"
    }
}

impl Reader<Vec<u8>> {
    /// Read a capture held in memory.
    pub fn from_bytes(bytes: Vec<u8>) -> Result<Reader<Vec<u8>>, Error> {
        Reader::new(bytes)
    }
}

impl<S: Source> Reader<S> {
    /// Open a capture: by its footer index when it has a valid one, otherwise by scanning
    /// every frame (the file is then reported as not clean).
    pub fn new(src: S) -> Result<Reader<S>, Error> {
        Reader::new_with(src, ReadOptions::default())
    }

    /// [`Reader::new`], keeping what `opts` asks.
    pub fn new_with(src: S, opts: ReadOptions) -> Result<Reader<S>, Error> {
        // Asked before anything is read: a writer that finishes after this leaves its index
        // for the read to find, one that dies leaves what it flushed.
        let alive = src.writer_alive();
        let file_len = src.len()?;
        let mut pre = [0u8; PREAMBLE_LEN];
        if file_len < PREAMBLE_LEN as u64 {
            return Err(Error::NotACapture(if file_len == 0 {
                "the file is empty"
            } else {
                "shorter than the 16-byte preamble"
            }));
        }
        src.read_exact_at(&mut pre, 0)?;
        let version = frame::parse_preamble(&pre)?;
        let mut tables = Tables::with_budget(table_budget(file_len));
        if opts.file_details {
            tables.keep_file_details();
        }
        let mut r = Reader {
            src: Arc::new(src),
            file_len,
            version,
            meta: Meta::default(),
            tables: Arc::new(tables),
            chunks: Vec::new(),
            drop_stats: Vec::new(),
            drop_procs: Vec::new(),
            drop_places: 0,
            drop_procs_lacking: false,
            rollups: Vec::new(),
            file_rollups: Vec::new(),
            cell_frames: Vec::new(),
            unseen: 0,
            unseen_disks: BTreeMap::new(),
            stop_ts: None,
            scan: None,
            liveness: Liveness::Finished,
            recovery: None,
            assume_writer: false,
            parts: None,
        };
        let mut dec = ChunkDecoder::new();
        r.read_header(&mut dec)?;
        r.tables = Arc::new(r.first_tables());
        if let Err(why) = r.open_by_index(&mut dec) {
            r.tables = Arc::new(r.first_tables());
            r.chunks.clear();
            r.drop_stats.clear();
            r.drop_procs.clear();
            r.drop_places = 0;
            r.drop_procs_lacking = false;
            r.rollups.clear();
            r.file_rollups.clear();
            r.cell_frames.clear();
            r.unseen = 0;
            r.unseen_disks.clear();
            r.stop_ts = None;
            r.scan = Some(ScanState {
                resume: PREAMBLE_LEN as u64,
                notes: vec![why],
                tail: None,
                index: None,
                searched: (0, 0),
            });
            r.scan_on(&mut dec, alive)?;
        }
        r.settle_start();
        Ok(r)
    }

    /// Every time is counted from the recording's start; a header that does not know it (0)
    /// starts at the first event instead, so readers have one origin either way (a file being
    /// written may have its first event only after a refresh).
    fn settle_start(&mut self) {
        if self.meta.start_ts == 0 {
            self.meta.start_ts = self.chunks.iter().map(|c| c.summary.min_ts).min().unwrap_or(0);
        }
    }

    /// The tables before any table frame: the devices known at start, from the header. Device
    /// frames add later ones, and rename these (they are newer): one table serves every lookup.
    fn first_tables(&self) -> Tables {
        let mut tables = Tables::with_budget(table_budget(self.file_len));
        if self.tables.keeps_file_details() {
            tables.keep_file_details();
        }
        for d in &self.meta.devices {
            if tables.device_name(d.dev).is_none() {
                tables.add_device(d.clone());
            }
        }
        tables
    }

    /// Read what was appended to the file since it was opened or last refreshed: from the end
    /// of the last whole frame read, every whole frame now there (chunks, tables, drop
    /// statistics), as the recovery scan reads them. A file still being written grows this
    /// way, and once its writer has written the index and trailer the reader is
    /// [`Liveness::Finished`] and clean, as if opened then. Nothing to do (an empty [`Growth`])
    /// for a finished file or one that has not grown.
    ///
    /// Chunks are only ever added at the end: an index into [`Reader::chunks`] keeps its
    /// meaning. The table budget ([`table_budget`]) grows with the file; a table frame over
    /// it waits, while the writer lives, for the file to grow past it.
    ///
    /// ```no_run
    /// use iocap_format::{Liveness, Reader};
    /// let mut r = Reader::open("trace.cap")?;
    /// while r.liveness() == Liveness::Live {
    ///     std::thread::sleep(std::time::Duration::from_millis(250));
    ///     let grown = r.refresh()?;
    ///     let first_new = r.chunks().len() - grown.chunks;
    ///     println!("{} new chunks from chunk {first_new}", grown.chunks);
    /// }
    /// # Ok::<(), iocap_format::Error>(())
    /// ```
    pub fn refresh(&mut self) -> Result<Growth, Error> {
        if self.scan.is_none() {
            return Ok(Growth::default());
        }
        let alive = self.assume_writer || self.src.writer_alive();
        let len = self.src.len()?;
        if len < self.file_len {
            return Err(Error::corrupt(len, "the file shrank while being read"));
        }
        let was = self.liveness;
        if len == self.file_len && alive == (was == Liveness::Live) {
            return Ok(Growth::default());
        }
        self.file_len = len;
        let grown = self.scan_on(&mut ChunkDecoder::new(), alive);
        self.settle_start();
        grown
    }

    /// Take the file for one still being written, whether or not a writer holds its lock:
    /// from now on it is [`Liveness::Live`] until its index and trailer arrive, and its
    /// unwritten end is not damage. For a file that something other than the recorder writes,
    /// which only the user knows is growing (a shell's redirect of `iocap record -w -`, a
    /// copy arriving); a writer that dies is then not seen. Reads on as [`Reader::refresh`]
    /// does. Nothing changes for a finished file.
    pub fn assume_writer(&mut self) -> Result<Growth, Error> {
        self.assume_writer = true;
        self.refresh()
    }

    /// Whether `other` reads the same source: a clone of this reader (a snapshot of the same
    /// capture, perhaps refreshed since), whose chunk indices mean the same chunks.
    pub fn same_source(&self, other: &Reader<S>) -> bool {
        match (&self.parts, &other.parts) {
            (None, None) => Arc::ptr_eq(&self.src, &other.src),
            (Some(a), Some(b)) => Arc::ptr_eq(a, b),
            _ => false,
        }
    }

    /// How far the file is from finished: [`Liveness::Live`] while a recorder writes it, as
    /// of the open or the last [`Reader::refresh`].
    pub fn liveness(&self) -> Liveness {
        self.liveness
    }

    /// The header's metadata. Its `start_ts`, the origin every time in the capture counts from,
    /// is the first event's when the header has none (0).
    pub fn meta(&self) -> &Meta {
        &self.meta
    }

    /// The file's tables (strings, processes, files, devices), the header's devices merged in.
    pub fn tables(&self) -> &Tables {
        &self.tables
    }

    /// Format (major, minor) version of the file.
    pub fn version(&self) -> (u16, u16) {
        self.version
    }

    /// Every chunk, in file order.
    pub fn chunks(&self) -> &[ChunkInfo] {
        &self.chunks
    }

    /// Whether the file was finished cleanly (footer index present and valid). A file being
    /// written is not clean yet, without being damaged ([`Reader::liveness`]).
    pub fn is_clean(&self) -> bool {
        self.scan.is_none()
    }

    /// Why the file had to be recovered by a scan, and what the scan found; `None` for a
    /// clean file, and for a [`Liveness::Live`] one as long as what it lacks is only what its
    /// writer has not written yet.
    pub fn recovery(&self) -> Option<&str> {
        self.recovery.as_deref()
    }

    /// Size of the file in bytes, as far as it was read (at open, or the last refresh).
    pub fn file_len(&self) -> u64 {
        self.file_len
    }

    /// Events in every chunk, from the chunk summaries (nothing is decoded).
    pub fn event_count(&self) -> u64 {
        self.chunks.iter().map(|c| c.summary.events).sum()
    }

    /// Drop counter snapshots in file order.
    pub fn drop_stats(&self) -> &[DropStats] {
        &self.drop_stats
    }

    /// Total events the kernel dropped while recording.
    pub fn drops(&self) -> u64 {
        let from_stats = self.drop_stats.iter().map(DropStats::total).max().unwrap_or(0);
        let from_chunks = self.chunks.iter().map(|c| c.summary.drops).max().unwrap_or(0);
        from_stats.max(from_chunks)
    }

    /// The drop-processes frames (kind 18, since 1.22) in file order: each reading's drops
    /// placed by process, as growth since the previous one. Empty for older captures.
    pub fn drop_stats_by_process(&self) -> &[ProcDropStats] {
        &self.drop_procs
    }

    /// Whether the capture says whose events were dropped: its recorder placed its drops by
    /// process (since 1.22), or nothing was dropped at all. False for a capture with drops
    /// from an older recorder (or a joined recording one of whose files is such): a reader
    /// then says "not recorded", not 0.
    pub fn drops_by_process_recorded(&self) -> bool {
        !self.drop_procs_lacking && (!self.drop_procs.is_empty() || self.drops() == 0)
    }

    /// Events dropped while recording in `[from, to)` (ns since boot), process by process,
    /// most first (then by pid); `None` when the capture does not say
    /// ([`Reader::drops_by_process_recorded`]). A reading counts in the range holding its `ts`,
    /// as `iocap_analysis::drops::between` places the total, so the counts' sum is at most
    /// that total; the rest are drops of no known process (a recorder's per-process map was
    /// full, events it threw away itself, a reading racing the counters: see FORMAT.md).
    /// Entries are by (pid, process entry); an entry the recorder did not know (`proc` 0) is
    /// given the last process entry of its pid in the tables, if any.
    ///
    /// This is what the viewer asks for the processes a filter names (with
    /// `iocap_filter::Filter::processes`).
    pub fn drops_by_process(&self, from: u64, to: u64) -> Option<Vec<ProcDrops>> {
        if !self.drops_by_process_recorded() {
            return None;
        }
        let mut sum: HashMap<(u32, u32), u64> = HashMap::new();
        for reading in self.drop_procs.iter().filter(|d| (from..to).contains(&d.ts)) {
            for p in &reading.procs {
                let n = sum.entry((p.pid, p.proc)).or_insert(0);
                *n = n.saturating_add(p.count);
            }
        }
        let mut last_of_pid: HashMap<u32, u32> = HashMap::new();
        if sum.keys().any(|&(_, proc)| proc == 0) {
            for e in self.tables.procs() {
                last_of_pid.insert(e.pid, e.id);
            }
        }
        let mut merged: HashMap<(u32, u32), u64> = HashMap::new();
        for ((pid, proc), n) in sum {
            let proc = if proc == 0 {
                last_of_pid.get(&pid).copied().unwrap_or(0)
            } else {
                proc
            };
            let m = merged.entry((pid, proc)).or_insert(0);
            *m = m.saturating_add(n);
        }
        let mut out: Vec<ProcDrops> = merged
            .into_iter()
            .map(|((pid, proc), count)| ProcDrops { pid, proc, count })
            .collect();
        out.sort_by(|a, b| b.count.cmp(&a.count).then(a.pid.cmp(&b.pid)).then(a.proc.cmp(&b.proc)));
        Some(out)
    }

    /// Block requests the recorder saw issued whose completion never reached it, so that
    /// they are not in the capture (written since 1.9; 0 for older files). Unlike drops this
    /// is not the recorder falling behind: the kernel did not run its completion tracepoint
    /// for them, which the recorder finds when the request is used again.
    pub fn unseen(&self) -> u64 {
        self.unseen
    }

    /// [`Reader::unseen`] disk by disk (kernel `dev_t`, as [`Event::dev`]; written since 1.15,
    /// empty for older files). Its sum is at most the total: the total's frame is written first,
    /// and a recorder killed between the two left only that one.
    pub fn unseen_by_disk(&self) -> &BTreeMap<u32, u64> {
        &self.unseen_disks
    }

    /// When recording stopped (ns since boot): from the footer, or for a recovered file the
    /// latest event end.
    pub fn stop_ts(&self) -> u64 {
        self.stop_ts.unwrap_or_else(|| {
            let last = self
                .chunks
                .iter()
                .map(|c| c.summary.max_ts)
                .max()
                .unwrap_or(self.meta.start_ts);
            last.max(self.meta.start_ts)
        })
    }

    /// Indices of the chunks that may hold events starting in `[from, to)`.
    pub fn chunks_in(&self, from: u64, to: u64) -> impl Iterator<Item = usize> + '_ {
        self.chunks
            .iter()
            .enumerate()
            .filter(move |(_, c)| c.summary.max_ts >= from && c.summary.min_ts < to)
            .map(|(i, _)| i)
    }

    /// Decode chunk `i` into `cols`, only the columns in `want`.
    pub fn read_chunk(&self, i: usize, want: ColSet, dec: &mut ChunkDecoder, cols: &mut Columns) -> Result<(), Error> {
        let info = self
            .chunks
            .get(i)
            .ok_or_else(|| Error::corrupt(0, format!("no chunk {i}")))?;
        let Some(parts) = &self.parts else {
            return read_chunk_in(&*self.src, self.file_len, info.offset, &info.summary, want, dec, cols);
        };
        let part = join::part_at(parts, info.offset);
        let own = part.own_summary(&info.summary);
        read_chunk_in(&*part.src, part.len, info.offset - part.base, &own, want, dec, cols)
            .map_err(|e| part.name_in(e))?;
        part.shift_ids(cols);
        Ok(())
    }

    /// [`Reader::read_chunk`] in two steps from one read of the frame: decode `first` into
    /// `cols`, then, only when `go_on` says so, `rest` as well. A scan gives the filter's
    /// columns first and stops at a chunk where nothing matches, so a filter that keeps few
    /// chunks decodes little more than its own columns. Returns whether `rest` was decoded.
    pub fn read_chunk_then(
        &self,
        i: usize,
        (first, rest): (ColSet, ColSet),
        dec: &mut ChunkDecoder,
        cols: &mut Columns,
        go_on: impl FnOnce(&Columns) -> bool,
    ) -> Result<bool, Error> {
        self.read_chunk(i, first, dec, cols)?;
        if !go_on(cols) {
            return Ok(false);
        }
        // read_chunk succeeded, so `i` names a chunk and `dec.payload` holds its frame.
        let info = &self.chunks[i];
        let mut more = std::mem::take(&mut dec.more);
        let decoded = match &self.parts {
            None => decode_chunk(
                &dec.payload,
                info.offset,
                &info.summary,
                rest,
                &mut dec.col_unpacker,
                &mut dec.body,
                &mut more,
            ),
            Some(parts) => {
                let part = join::part_at(parts, info.offset);
                let (off, own) = (info.offset - part.base, part.own_summary(&info.summary));
                let r = decode_chunk(
                    &dec.payload,
                    off,
                    &own,
                    rest,
                    &mut dec.col_unpacker,
                    &mut dec.body,
                    &mut more,
                );
                part.shift_ids(&mut more);
                r.map_err(|e| part.name_in(e))
            }
        };
        cols.adopt(&mut more, rest);
        dec.more = more;
        decoded.map(|()| true)
    }

    /// The rollup of chunk `i` ([`Rollup`]), read and checked: `None` when the chunk has none
    /// (a file from before 1.12, a chunk whose rollup was not written before the recording
    /// stopped) or it cannot be used (damaged, or not this chunk's): the chunk's columns are
    /// then what answers.
    pub fn rollup(&self, i: usize, dec: &mut ChunkDecoder) -> Option<Rollup> {
        let info = self.chunks.get(i)?;
        // Its own payload says which chunk it sums.
        let at = self.rollup_after(info.offset)?;
        let files = self.file_rollups.binary_search(&at).is_ok();
        let (src, len, at, chunk) = self.in_own_file(info.offset, at)?;
        let mut r = read_rollup_in(src, len, at, chunk, &info.summary, files, dec)?;
        if let Some(parts) = &self.parts {
            join::part_at(parts, info.offset).shift_ids(&mut r.keys);
        }
        Some(r)
    }

    /// Whether chunk `i`'s rollup may hold `cols` among its keys ([`Rollup::holds`]), as its
    /// listing says before it is read: false when `cols` has the file and the chunk's rollup
    /// is not a file rollup (a 1.17 chunk of many files, or a file before 1.17), so a question
    /// on the file goes to the chunk's columns without reading the rollup. (A rollup before
    /// 1.16 lacks the pid, which only reading it tells.)
    pub fn rollup_may_hold(&self, i: usize, cols: ColSet) -> bool {
        if !cols.contains(crate::columns::Col::File) {
            return true;
        }
        let Some(info) = self.chunks.get(i) else { return false };
        self.rollup_after(info.offset)
            .is_some_and(|at| self.file_rollups.binary_search(&at).is_ok())
    }

    /// Where a frame at `at`, listed after the chunk at `chunk` (both offsets in this reader's
    /// space), lies in its own file: that file's bytes and length, and the frame's and the
    /// chunk's offsets in it; `None` when the frame lies before that file (not the chunk's).
    fn in_own_file(&self, chunk: u64, at: u64) -> Option<(&S, u64, u64, u64)> {
        let Some(parts) = &self.parts else {
            return Some((&*self.src, self.file_len, at, chunk));
        };
        let part = join::part_at(parts, chunk);
        (at >= part.base).then(|| (&*part.src, part.len, at - part.base, chunk - part.base))
    }

    /// [`Reader::rollup`], with its cells' totals (since 1.14, their own frame after it:
    /// [`Rollup::has_cell_totals`]) when the chunk has them, whole and naming this chunk; they
    /// are checked as they are decoded ([`Rollup::cell_totals_where`]). A question that reads
    /// a latency bound wants them; others need not read them.
    pub fn rollup_with_cells(&self, i: usize, dec: &mut ChunkDecoder) -> Option<Rollup> {
        let mut r = self.rollup(i, dec)?;
        self.add_cell_totals(i, &mut r, dec);
        Some(r)
    }

    /// Add to `r`, chunk `i`'s rollup, its cells' totals, read and checked; false, leaving it
    /// without, when the chunk has none listed after its rollup and before the next chunk, or
    /// they cannot be used.
    fn add_cell_totals(&self, i: usize, r: &mut Rollup, dec: &mut ChunkDecoder) -> bool {
        let (Some(info), Some(at)) = (self.chunks.get(i), self.cell_frame_of(i)) else {
            return false;
        };
        let Some((src, len, at, chunk)) = self.in_own_file(info.offset, at) else {
            return false;
        };
        // The frame names its chunk by its offset in its own file: chunk `i`'s, whatever `r`
        // says.
        let own = std::mem::replace(&mut r.chunk, chunk);
        let got = read_packed_in(src, len, at, Kind::CellTotals, info.summary.events, dec)
            .is_some_and(|raw| r.take_cell_frame(raw));
        r.chunk = own;
        got
    }

    /// Whether chunk `i` may have its rollup's cells' totals (since 1.14): a frame of them is
    /// listed after its rollup, before the next chunk.
    pub fn has_cell_totals(&self, i: usize) -> bool {
        self.has_rollup(i) && self.cell_frame_of(i).is_some()
    }

    /// The offset of the first cells' totals frame listed after chunk `i`'s rollup, if it lies
    /// before the next chunk.
    fn cell_frame_of(&self, i: usize) -> Option<u64> {
        let info = self.chunks.get(i)?;
        let at = after(&self.cell_frames, self.rollup_after(info.offset)?)?;
        self.before_next(i, at).then_some(at)
    }

    /// Whether offset `at` lies before chunk `i + 1` (when there is one after chunk `i`).
    fn before_next(&self, i: usize, at: u64) -> bool {
        let Some(info) = self.chunks.get(i) else { return false };
        self.chunks
            .get(i + 1)
            .is_none_or(|next| next.offset < info.offset || at < next.offset)
    }

    /// Whether chunk `i` may have a rollup: one is listed after it, before the next chunk.
    pub fn has_rollup(&self, i: usize) -> bool {
        let Some(info) = self.chunks.get(i) else { return false };
        self.rollup_after(info.offset).is_some_and(|at| self.before_next(i, at))
    }

    /// The first rollup frame listed after offset `off` (a chunk's, whose rollup follows it).
    fn rollup_after(&self, off: u64) -> Option<u64> {
        after(&self.rollups, off)
    }

    /// Every event in file order (a convenience for tools and tests; viewers decode chunks).
    pub fn events(&self) -> impl Iterator<Item = Result<Event, Error>> + '_ {
        let mut dec = ChunkDecoder::new();
        let mut cols = Columns::default();
        let mut chunk = 0;
        let mut row = 0;
        std::iter::from_fn(move || loop {
            if row < cols.len() {
                row += 1;
                return Some(Ok(cols.event(row - 1)));
            }
            if chunk >= self.chunks.len() {
                return None;
            }
            row = 0;
            chunk += 1;
            if let Err(e) = self.read_chunk(chunk - 1, ColSet::ALL, &mut dec, &mut cols) {
                cols.clear();
                return Some(Err(e));
            }
        })
    }

    fn frame_header(&self, off: u64) -> Result<Option<FrameHeader>, Error> {
        frame_header_in(&*self.src, self.file_len, off)
    }

    /// Read and verify the payload of the frame at `off`.
    fn read_payload(&self, off: u64, h: &FrameHeader, buf: &mut Vec<u8>) -> Result<(), Error> {
        read_payload_in(&*self.src, self.file_len, off, h, buf)
    }

    fn read_header(&mut self, dec: &mut ChunkDecoder) -> Result<(), Error> {
        let off = PREAMBLE_LEN as u64;
        let h = self
            .frame_header(off)?
            .filter(|h| h.kind == Kind::Header as u16)
            .ok_or_else(|| Error::corrupt(off, "no header frame after the preamble"))?;
        self.read_payload(off, &h, &mut dec.payload)?;
        let meta: Meta =
            serde_json::from_slice(&dec.payload).map_err(|e| Error::corrupt(off, format!("header: {e}")))?;
        self.meta = escape_meta(meta);
        Ok(())
    }

    /// Load chunk summaries and tables through the footer index. Any problem is a reason to scan.
    fn open_by_index(&mut self, dec: &mut ChunkDecoder) -> Result<(), String> {
        let io = |e: Error| e.to_string();
        if self.file_len < (PREAMBLE_LEN + TRAILER_LEN + FRAME_HEADER_LEN) as u64 {
            return Err("no footer index (the recording did not finish)".into());
        }
        let mut t = [0u8; TRAILER_LEN];
        self.src
            .read_exact_at(&mut t, self.file_len - TRAILER_LEN as u64)
            .map_err(|e| e.to_string())?;
        let at = frame::parse_trailer(&t).ok_or("no footer index (the recording did not finish)")?;
        let h = self
            .frame_header(at)
            .map_err(io)?
            .filter(|h| h.kind == Kind::Index as u16 && at + h.frame_len() + TRAILER_LEN as u64 == self.file_len)
            .ok_or("the footer index is damaged")?;
        let mut payload = Vec::new();
        self.read_payload(at, &h, &mut payload).map_err(io)?;
        let index = Index::parse(&payload, at).ok_or("the footer index is damaged")?;
        for &(kind, off) in &index.others {
            // A chunk's rollup is read when a question wants it, not at opening: a day's
            // recording has a hundred thousand of them.
            if kind == Kind::Rollup as u64 || kind == Kind::FileRollup as u64 {
                self.rollups.push(off);
                if kind == Kind::FileRollup as u64 {
                    self.file_rollups.push(off);
                }
                continue;
            }
            if kind == Kind::CellTotals as u64 {
                self.cell_frames.push(off);
                continue;
            }
            let bad = || "the footer index is damaged".to_string();
            let h = self.frame_header(off).map_err(io)?.ok_or_else(bad)?;
            if u64::from(h.kind) != kind {
                return Err(bad());
            }
            self.read_payload(off, &h, &mut dec.payload).map_err(io)?;
            self.apply_frame(h.kind, off, dec).map_err(io)?;
        }
        self.chunks = index.chunks;
        self.stop_ts = Some(index.stop_ts);
        Ok(())
    }

    /// Apply one verified non-chunk frame whose payload is in `dec.payload`.
    fn apply_frame(&mut self, kind: u16, off: u64, dec: &mut ChunkDecoder) -> Result<(), Error> {
        match Kind::from_code(kind) {
            Some(
                k @ (Kind::Strings
                | Kind::Procs
                | Kind::Files
                | Kind::Devices
                | Kind::PrefixStrings
                | Kind::ColumnFiles
                | Kind::ProcOwners
                | Kind::Containers
                | Kind::ProcContainers
                | Kind::Stacks),
            ) => {
                let mut cur = Cursor::new(&dec.payload);
                let cut = || Error::corrupt(off, "payload cut short");
                let codec = cur.u8().ok_or_else(cut)?;
                let raw_len = cur.varint().ok_or_else(cut)?;
                // The entries take at least as many bytes decoded as their payload does: a
                // payload larger than the budget left is refused before it is decompressed.
                let tables = Arc::make_mut(&mut self.tables);
                // Raised here rather than as the file grows: tables shared with a snapshot
                // are copied only when they change.
                tables.raise_budget(table_budget(self.file_len));
                let (used, budget) = tables.budget_used();
                if raw_len > tables.budget_left() {
                    return Err(Error::OverLimit {
                        offset: off,
                        limit: Limit::Tables,
                        len: used.saturating_add(raw_len),
                        max: budget,
                    });
                }
                dec.unpacker
                    .unpack_parts(codec, raw_len, cur.rest(), &mut dec.body)
                    .map_err(|e| Error::corrupt(off, e))?;
                tables.apply(k, &dec.body).map_err(|e| match e {
                    TableError::Corrupt => Error::corrupt(off, "table entries do not decode"),
                    TableError::Over { limit, len, max } => Error::OverLimit {
                        offset: off,
                        limit,
                        len,
                        max,
                    },
                })?;
            }
            Some(Kind::Stats) => {
                let mut cur = Cursor::new(&dec.payload);
                let bad = || Error::corrupt(off, "stats frame does not decode");
                let ts = cur.varint().ok_or_else(bad)?;
                let n = cur.varint().ok_or_else(bad)?;
                if n > cur.remaining() as u64 {
                    return Err(bad());
                }
                let per_cpu = (0..n).map(|_| cur.varint().ok_or_else(bad)).collect::<Result<_, _>>()?;
                self.drop_stats.push(DropStats { ts, per_cpu });
            }
            Some(Kind::DropProcs) => {
                let mut cur = Cursor::new(&dec.payload);
                let bad = || Error::corrupt(off, "drop-processes frame does not decode");
                let ts = cur.varint().ok_or_else(bad)?;
                let n = cur.varint().ok_or_else(bad)?;
                if n > cur.remaining() as u64 / 3 {
                    return Err(bad());
                }
                if self.drop_places.saturating_add(n as usize) > MAX_DROP_PLACES {
                    self.drop_procs_lacking = true;
                    return Err(Error::corrupt(
                        off,
                        format!("more drops placed by process than a reader keeps ({MAX_DROP_PLACES})"),
                    ));
                }
                // Decoded whole before it is kept: a damaged frame changes nothing.
                let mut procs: Vec<ProcDrops> = Vec::with_capacity(n as usize);
                for _ in 0..n {
                    let pid = cur.varint().and_then(|v| u32::try_from(v).ok()).ok_or_else(bad)?;
                    let proc = cur.varint().and_then(|v| u32::try_from(v).ok()).ok_or_else(bad)?;
                    let count = cur.varint().ok_or_else(bad)?;
                    if procs.last().is_some_and(|p| p.pid >= pid) {
                        return Err(bad());
                    }
                    procs.push(ProcDrops { pid, proc, count });
                }
                if cur.remaining() != 0 {
                    return Err(bad());
                }
                self.drop_places += procs.len();
                self.drop_procs.push(ProcDropStats { ts, procs });
            }
            Some(Kind::Unseen) => {
                let mut cur = Cursor::new(&dec.payload);
                let bad = || Error::corrupt(off, "unseen frame does not decode");
                let _ts = cur.varint().ok_or_else(bad)?;
                let unseen = cur.varint().ok_or_else(bad)?;
                if cur.remaining() != 0 {
                    return Err(bad());
                }
                self.unseen = self.unseen.max(unseen);
            }
            Some(Kind::UnseenDisks) => {
                let mut cur = Cursor::new(&dec.payload);
                let bad = || Error::corrupt(off, "unseen-disks frame does not decode");
                let _ts = cur.varint().ok_or_else(bad)?;
                let n = cur.varint().ok_or_else(bad)?;
                if n > cur.remaining() as u64 / 2 {
                    return Err(bad());
                }
                // Decoded whole before any is kept: a damaged frame changes nothing.
                let mut disks = Vec::with_capacity(n as usize);
                for _ in 0..n {
                    let dev = cur.varint().and_then(|d| u32::try_from(d).ok()).ok_or_else(bad)?;
                    let count = cur.varint().ok_or_else(bad)?;
                    if disks.last().is_some_and(|&(d, _)| d >= dev) {
                        return Err(bad());
                    }
                    disks.push((dev, count));
                }
                if cur.remaining() != 0 {
                    return Err(bad());
                }
                for (dev, count) in disks {
                    let kept = self.unseen_disks.entry(dev).or_insert(0);
                    *kept = (*kept).max(count);
                }
            }
            // The header was read first; unknown kinds are from newer writers: skipped.
            _ => {}
        }
        Ok(())
    }

    /// Read every frame from where the scan stands to the end of the file, keeping each whole
    /// one. After a damaged frame (bad magic, bad checksum, or a length running past the end)
    /// the scan resumes at the next frame magic, so a flipped length field costs one frame, not
    /// the rest of the file. Bytes at the end that make no frame are where the next scan
    /// starts: in a file being written they are a frame not yet whole. `alive`: whether the
    /// writer held the file before its length was read.
    fn scan_on(&mut self, dec: &mut ChunkDecoder, alive: bool) -> Result<Growth, Error> {
        let Some(mut st) = self.scan.take() else {
            return Ok(Growth::default());
        };
        let r = self.scan_frames(&mut st, dec, alive);
        // The writer is done once its trailer ends the file, whether it has closed it yet or
        // not. (A trailer that cannot be read is no trailer: the scan's state is kept either way.)
        let ended = match &st.index {
            Some((at, _)) => self.ends_with_trailer(*at).unwrap_or(false),
            None => false,
        };
        // Nothing skipped on the way (a table frame the index lists may be among it), and the
        // index lists what the scan read.
        let finished = ended && st.notes.len() == 1 && st.index.as_ref().is_some_and(|(_, i)| i.chunks == self.chunks);
        self.liveness = if finished {
            Liveness::Finished
        } else if alive && !ended {
            Liveness::Live
        } else {
            Liveness::Recovered
        };
        if finished {
            // What the writer listed is what the scan found: the file is as clean as if it had
            // been opened by its index now.
            self.recovery = None;
        } else {
            // Live, only the reason to scan and the unwritten end are not news.
            let notes = match self.liveness {
                Liveness::Live => &st.notes[1..],
                _ => &st.notes[..],
            };
            let tail = st.tail.as_ref().filter(|_| !alive);
            let mut all: Vec<String> = notes.iter().chain(tail).cloned().collect();
            // A file of a thousand bad chunks is said in a line, not a thousand.
            const SAID: usize = 4;
            if all.len() > SAID + 1 {
                let more = all.len() - SAID;
                all.truncate(SAID);
                all.push(format!("{more} more such notes"));
            }
            self.recovery = (!all.is_empty()).then(|| all.join("; "));
            self.scan = Some(st);
        }
        r
    }

    /// The frame loop of [`Reader::scan_on`], from `st.resume` to the end of the file.
    fn scan_frames(&mut self, st: &mut ScanState, dec: &mut ChunkDecoder, alive: bool) -> Result<Growth, Error> {
        let mut grown = Growth::default();
        let mut off = st.resume;
        // Start of the damaged stretch being skipped, and whether it began with a frame
        // header whose length ran past the end (a file cut inside its last frame).
        let mut skipped_from: Option<(u64, bool)> = None;
        st.tail = None;
        while off < self.file_len {
            let left = self.file_len - off;
            let mut runs_past_end = false;
            let good = match self.frame_header(off)? {
                Some(h) if h.frame_len() <= left => self.read_payload(off, &h, &mut dec.payload).is_ok().then_some(h),
                Some(_) => {
                    runs_past_end = true;
                    None
                }
                None => None,
            };
            let Some(h) = good else {
                skipped_from.get_or_insert((off, runs_past_end));
                let from = if st.searched.0 == off {
                    st.searched.1.max(off + 1)
                } else {
                    off + 1
                };
                let next = self.next_frame_magic(from)?;
                if next >= self.file_len {
                    // None to the end: a magic may yet be completed across it.
                    let overlap = frame::FRAME_MAGIC.len() as u64 - 1;
                    st.searched = (off, self.file_len.saturating_sub(overlap).max(off + 1));
                }
                off = next;
                continue;
            };
            if let Some((from, _)) = skipped_from.take() {
                st.notes.push(format!("skipped {} damaged bytes at {from}", off - from));
            }
            match Kind::from_code(h.kind) {
                Some(Kind::Chunk) => {
                    let mut cur = Cursor::new(&dec.payload);
                    match chunk_summary(&mut cur) {
                        Some(summary) if !chunk_holds(h.frame_len(), summary.events) => st.notes.push(format!(
                            "chunk at byte {off}: {}: skipped",
                            too_dense(summary.events, h.frame_len())
                        )),
                        Some(summary) => {
                            self.chunks.push(ChunkInfo { offset: off, summary });
                            grown.chunks += 1;
                        }
                        None => st
                            .notes
                            .push(format!("chunk at byte {off} has a damaged summary: skipped")),
                    }
                }
                Some(Kind::Header) => {}
                Some(Kind::Rollup) => self.rollups.push(off),
                Some(Kind::FileRollup) => {
                    self.rollups.push(off);
                    self.file_rollups.push(off);
                }
                Some(Kind::CellTotals) => self.cell_frames.push(off),
                Some(Kind::Index) => {
                    let mut cur = Cursor::new(&dec.payload);
                    if let Some(ts) = cur.varint() {
                        self.stop_ts = Some(ts);
                    }
                    st.index = Index::parse(&dec.payload, off).map(|i| (off, i));
                }
                kind => match self.apply_frame(h.kind, off, dec) {
                    // Tables over the budget of the file so far: while it is written, the budget
                    // grows with it, and the frame is read again once it has.
                    Err(Error::OverLimit {
                        limit: Limit::Tables, ..
                    }) if alive => break,
                    Err(e) => st.notes.push(e.to_string()),
                    Ok(())
                        if matches!(
                            kind,
                            Some(Kind::Stats | Kind::Unseen | Kind::UnseenDisks | Kind::DropProcs)
                        ) =>
                    {
                        grown.stats += 1
                    }
                    Ok(()) => grown.tables += 1,
                },
            }
            off += h.frame_len();
            grown.bytes += h.frame_len();
            st.resume = off;
        }
        if let Some((from, past_end)) = skipped_from {
            st.resume = from;
            st.tail = Some(match past_end {
                true => format!("the last frame, at byte {from}, was cut short"),
                false if self.file_len - from < FRAME_HEADER_LEN as u64 => {
                    format!("{} stray bytes at the end", self.file_len - from)
                }
                false => format!("skipped {} damaged bytes at {from} up to the end", self.file_len - from),
            });
        }
        Ok(grown)
    }

    /// Whether the file ends with a trailer pointing at the index frame at `at`, right after it.
    fn ends_with_trailer(&self, at: u64) -> Result<bool, Error> {
        let Some(h) = self.frame_header(at)? else {
            return Ok(false);
        };
        if at + h.frame_len() + TRAILER_LEN as u64 != self.file_len {
            return Ok(false);
        }
        let mut t = [0u8; TRAILER_LEN];
        self.src.read_exact_at(&mut t, self.file_len - TRAILER_LEN as u64)?;
        Ok(frame::parse_trailer(&t) == Some(at))
    }

    /// Offset of the next frame magic at or after `from`, or the file length when there is none.
    fn next_frame_magic(&self, mut from: u64) -> Result<u64, Error> {
        const BLOCK: u64 = 64 << 10;
        let magic = frame::FRAME_MAGIC;
        let mut buf = Vec::new();
        while from.saturating_add(magic.len() as u64) <= self.file_len {
            let n = BLOCK.min(self.file_len - from);
            buf.resize(n as usize, 0);
            self.src.read_exact_at(&mut buf, from)?;
            if let Some(i) = buf.windows(magic.len()).position(|w| w == magic) {
                return Ok(from + i as u64);
            }
            // Blocks overlap by magic.len() - 1 bytes so a magic across a boundary is found.
            from += n - (magic.len() as u64 - 1);
        }
        Ok(self.file_len)
    }
}

/// The header's strings came from the traced host too (host name, command line, device names):
/// escaped here, once, like the string table.
fn escape_meta(mut m: Meta) -> Meta {
    let esc = |s: &mut String| *s = crate::escape::escape(s.as_bytes());
    esc(&mut m.iocap_version);
    esc(&mut m.host);
    esc(&mut m.kernel);
    esc(&mut m.arch);
    m.command_line.iter_mut().for_each(esc);
    m.missing.iter_mut().for_each(esc);
    m.kept.iter_mut().for_each(esc);
    if let Some(f) = m.filter.as_mut() {
        esc(f);
    }
    if let Some(f) = m.next_file.as_mut() {
        esc(f);
    }
    m.devices.iter_mut().for_each(|d| esc(&mut d.name));
    m
}

/// What an index frame lists: when recording stopped, every chunk, and the other frames.
#[derive(Clone, Debug)]
struct Index {
    stop_ts: u64,
    chunks: Vec<ChunkInfo>,
    /// (kind, offset) of every table and stats frame.
    others: Vec<(u64, u64)>,
}

impl Index {
    /// Parse the payload of the index frame at `at`; `None` when it does not decode, or
    /// points at or past itself.
    fn parse(payload: &[u8], at: u64) -> Option<Index> {
        let mut cur = Cursor::new(payload);
        let stop_ts = cur.varint()?;
        let _drops = cur.varint()?;
        let n = cur.varint()?;
        if n > cur.remaining() as u64 {
            return None;
        }
        let mut chunks: Vec<ChunkInfo> = Vec::new();
        for _ in 0..n {
            let offset = cur.varint()?;
            let summary = ChunkSummary::decode(&mut cur)?;
            // Chunks in file order, each claiming no more than the bytes up to the next one
            // hold: a file cannot list one small chunk many times, nor chunks a byte apart.
            if offset >= at
                || chunks.last().is_some_and(|c| {
                    !chunk_holds(offset.saturating_sub(c.offset), c.summary.events) || offset <= c.offset
                })
            {
                return None;
            }
            chunks.push(ChunkInfo { offset, summary });
        }
        if chunks
            .last()
            .is_some_and(|c| !chunk_holds(at - c.offset, c.summary.events))
        {
            return None;
        }
        let n = cur.varint()?;
        if n > cur.remaining() as u64 {
            return None;
        }
        let mut others = Vec::new();
        for _ in 0..n {
            others.push((cur.varint()?, cur.varint()?));
        }
        cur.is_empty().then_some(Index {
            stop_ts,
            chunks,
            others,
        })
    }
}

fn chunk_summary(cur: &mut Cursor<'_>) -> Option<ChunkSummary> {
    let head = cur.len_bytes()?;
    ChunkSummary::decode(&mut Cursor::new(head))
}

/// The frame header at `off` of `src`, whose first `file_len` bytes are read: `None` when
/// no header fits there or the bytes are not one.
fn frame_header_in<S: Source + ?Sized>(src: &S, file_len: u64, off: u64) -> Result<Option<FrameHeader>, Error> {
    if off.saturating_add(FRAME_HEADER_LEN as u64) > file_len {
        return Ok(None);
    }
    let mut b = [0u8; FRAME_HEADER_LEN];
    src.read_exact_at(&mut b, off)?;
    Ok(FrameHeader::parse(&b))
}

/// Read and verify the payload of the frame at `off` of `src` (headed `h`) into `buf`.
fn read_payload_in<S: Source + ?Sized>(
    src: &S,
    file_len: u64,
    off: u64,
    h: &FrameHeader,
    buf: &mut Vec<u8>,
) -> Result<(), Error> {
    let start = off + FRAME_HEADER_LEN as u64;
    if start + u64::from(h.len) > file_len {
        return Err(Error::corrupt(off, "frame runs past the end of the file"));
    }
    buf.clear();
    buf.resize(h.len as usize, 0);
    src.read_exact_at(buf, start)?;
    if !h.verify(buf) {
        return Err(Error::corrupt(off, "checksum mismatch"));
    }
    Ok(())
}

/// Decode the chunk frame at `off` of `src` (its index's summary `summary`) into `cols`, only
/// the columns in `want`.
fn read_chunk_in<S: Source + ?Sized>(
    src: &S,
    file_len: u64,
    off: u64,
    summary: &ChunkSummary,
    want: ColSet,
    dec: &mut ChunkDecoder,
    cols: &mut Columns,
) -> Result<(), Error> {
    let h = frame_header_in(src, file_len, off)?.ok_or_else(|| Error::corrupt(off, "no chunk frame here"))?;
    read_payload_in(src, file_len, off, &h, &mut dec.payload)?;
    if h.kind != Kind::Chunk as u16 {
        return Err(Error::corrupt(off, "not a chunk frame"));
    }
    decode_chunk(
        &dec.payload,
        off,
        summary,
        want,
        &mut dec.col_unpacker,
        &mut dec.body,
        cols,
    )
}

/// The first offset in `list` (increasing) past `off`.
fn after(list: &[u64], off: u64) -> Option<u64> {
    list.get(list.partition_point(|&r| r <= off)).copied()
}

/// The rollup frame at `at` of `src` (a file rollup's with `files`), checked to sum the chunk
/// at `chunk` (`summary`).
fn read_rollup_in<S: Source + ?Sized>(
    src: &S,
    file_len: u64,
    at: u64,
    chunk: u64,
    summary: &ChunkSummary,
    files: bool,
    dec: &mut ChunkDecoder,
) -> Option<Rollup> {
    let kind = if files { Kind::FileRollup } else { Kind::Rollup };
    let raw = read_packed_in(src, file_len, at, kind, summary.events, dec)?;
    Rollup::decode(raw, summary.events, files).filter(|r| r.chunk == chunk)
}

/// The bytes of the packed frame of `kind` at `at` of `src` (a rollup, its cells' totals: at
/// most a few bytes per event of a chunk of `events`), uncompressed into `dec`.
fn read_packed_in<'d, S: Source + ?Sized>(
    src: &S,
    file_len: u64,
    at: u64,
    kind: Kind,
    events: u64,
    dec: &'d mut ChunkDecoder,
) -> Option<&'d [u8]> {
    let h = frame_header_in(src, file_len, at).ok()??;
    if h.kind != kind as u16 {
        return None;
    }
    read_payload_in(src, file_len, at, &h, &mut dec.payload).ok()?;
    let mut cur = Cursor::new(&dec.payload);
    let codec = cur.u8()?;
    let raw_len = cur.varint()?;
    if raw_len > events.saturating_mul(96).saturating_add(64) {
        return None;
    }
    dec.unpacker
        .unpack_parts(codec, raw_len, cur.rest(), &mut dec.body)
        .ok()?;
    Some(&dec.body)
}

/// Why a chunk of `events` events in `bytes` bytes is refused.
fn too_dense(events: u64, bytes: u64) -> String {
    format!("a chunk claims {events} events in {bytes} bytes, more than {MAX_EVENTS_PER_BYTE} a byte")
}

/// Decode a verified chunk payload; `expected` is its summary as the index (or scan) gave it.
fn decode_chunk(
    payload: &[u8],
    off: u64,
    expected: &ChunkSummary,
    want: ColSet,
    unpacker: &mut Option<Unpacker>,
    scratch: &mut Vec<u8>,
    cols: &mut Columns,
) -> Result<(), Error> {
    let mut cur = Cursor::new(payload);
    let own = chunk_summary(&mut cur).ok_or_else(|| Error::corrupt(off, "chunk summary does not decode"))?;
    // The index is checksummed on its own: a chunk that disagrees with it is not the one it
    // describes (an index from another file, or frames moved), so neither can be trusted.
    if own != *expected {
        return Err(Error::corrupt(off, "chunk does not match its index entry"));
    }
    let frame_len = (FRAME_HEADER_LEN + payload.len()) as u64;
    if !chunk_holds(frame_len, own.events) {
        return Err(Error::corrupt(off, too_dense(own.events, frame_len)));
    }
    // The summary decoded, so `events` is at most MAX_CHUNK_EVENTS and fits a usize.
    let n = own.events as usize;
    cols.decode_with(cur.rest(), n, want, unpacker, scratch)
        .map_err(|e| match e {
            DecodeError::Body(e) => Error::corrupt(off, e.0),
            DecodeError::TooLarge { col, len, max } => Error::OverLimit {
                offset: off,
                limit: Limit::Column { col, events: n as u64 },
                len,
                max,
            },
        })
}
