//! Several files of one recording read as one capture ([`Reader::join`]): a rotation ring
//! (`record -C`), each file self-contained with its own tables.
//!
//! The joined reader lists every file's chunks one after another in time, each at a place of
//! its own in one offset space (file `k`'s bytes start where file `k - 1`'s end), so a chunk
//! index means one chunk of one file and [`Reader::read_chunk`] finds the file by the offset.
//! Each file numbers its table entries from 1: the joined tables hold every file's entries with
//! its ids moved above the earlier files' ([`Part::shift_ids`] moves a decoded chunk's `proc`
//! and `file` columns alike), so a filter compiled against them judges each file's entries,
//! and a process that lives through several files is several entries of one name, as it is
//! after an `exec`. The files share one boot clock (one host, one boot), so their times are
//! comparable as they are and the first file's start is the origin.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::{Reader, Source};
use crate::columns::{Col, Columns};
use crate::error::Error;
use crate::live::Liveness;
use crate::model::{DropStats, ProcDropStats, ProcDrops};
use crate::summary::ChunkSummary;
use crate::tables::MaxIds;

/// How far apart two files' boot-to-wall offsets may be and still be of one boot: a recorder
/// copies its offset into every file of a rotation, separate recordings of one boot read it
/// again, within microseconds; a reboot moves it by the uptime.
const SAME_BOOT_NS: i64 = 1_000_000_000;

/// One file of a joined reader.
pub(crate) struct Part<S> {
    /// The file's name as shown (escaped), for errors in it.
    name: String,
    /// Where its bytes start in the joined reader's offset space.
    pub(super) base: u64,
    /// Its length, as far as it was read.
    pub(super) len: u64,
    /// Its bytes.
    pub(super) src: Arc<S>,
    /// Added to every nonzero process id of its chunks.
    proc_shift: u32,
    /// Added to every nonzero file id of its chunks.
    file_shift: u32,
    /// Added to every nonzero stack id of its chunks.
    stack_shift: u32,
    /// Drops counted in the files before it, added to its chunks' summaries (which count
    /// from its own start).
    drops_before: u64,
}

impl<S> Part<S> {
    /// Move the ids of a chunk of this file, decoded into `cols`, to the joined tables' ids.
    pub(super) fn shift_ids(&self, cols: &mut Columns) {
        let decoded = cols.decoded();
        if self.proc_shift > 0 && decoded.contains(Col::Proc) {
            shift(&mut cols.proc, self.proc_shift);
        }
        if self.proc_shift > 0 && decoded.contains(Col::WakerProc) {
            shift(&mut cols.waker_proc, self.proc_shift);
        }
        if self.stack_shift > 0 && decoded.contains(Col::StackUser) {
            shift(&mut cols.stack_user, self.stack_shift);
        }
        if self.stack_shift > 0 && decoded.contains(Col::StackKernel) {
            shift(&mut cols.stack_kernel, self.stack_shift);
        }
        if self.file_shift > 0 && decoded.contains(Col::File) {
            shift(&mut cols.file, self.file_shift);
        }
    }

    /// A chunk's summary as this file's index has it, from the joined one.
    pub(super) fn own_summary(&self, joined: &ChunkSummary) -> ChunkSummary {
        ChunkSummary {
            drops: joined.drops.saturating_sub(self.drops_before),
            ..joined.clone()
        }
    }

    /// `e`, an error reading this file, with the file named (its offsets are the file's own).
    pub(super) fn name_in(&self, e: Error) -> Error {
        match e {
            Error::Corrupt { offset, what } => Error::Corrupt {
                offset,
                what: format!("{what} (in {})", self.name),
            },
            e => e,
        }
    }
}

/// Add `by` to every id but 0 (none). An id past its file's tables (a damaged or hostile
/// chunk's) stays past every table, at most `u32::MAX`: it names no entry, as in its file.
fn shift(ids: &mut [u32], by: u32) {
    // Without a branch, so that it vectorizes: the filtered loop was 7.6 % of a file filter's
    // scan over a joined ring.
    for id in ids.iter_mut() {
        *id = if *id == 0 { 0 } else { id.saturating_add(by) };
    }
}

/// The file whose bytes hold joined offset `off`.
pub(super) fn part_at<S>(parts: &[Part<S>], off: u64) -> &Part<S> {
    let i = parts.partition_point(|p| p.base <= off).saturating_sub(1);
    &parts[i]
}

impl Reader<std::fs::File> {
    /// Open every file of `paths` ([`Reader::open`]), several at once: a day's recording is
    /// tens of files whose indexes are read before the first frame. The results are in the
    /// order of `paths`.
    pub fn open_each(paths: &[std::path::PathBuf]) -> Vec<Result<Reader<std::fs::File>, Error>> {
        let threads = std::thread::available_parallelism()
            .map_or(1, usize::from)
            .clamp(1, paths.len().max(1));
        let next = std::sync::atomic::AtomicUsize::new(0);
        let mut out: Vec<Option<Result<Reader<std::fs::File>, Error>>> = paths.iter().map(|_| None).collect();
        let done = std::sync::Mutex::new(&mut out);
        std::thread::scope(|s| {
            for _ in 0..threads {
                s.spawn(|| loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let Some(path) = paths.get(i) else { break };
                    let r = Reader::open(path);
                    done.lock().unwrap_or_else(std::sync::PoisonError::into_inner)[i] = Some(r);
                });
            }
        });
        out.into_iter()
            .map(|r| r.unwrap_or_else(|| Err(Error::NotOneRecording("not opened".into()))))
            .collect()
    }
}

impl<S: Source> Reader<S> {
    /// Read the files of one recording as one capture: `files` are each file's shown name
    /// (escaped) and reader, in any order (they are put in time order by their start), and
    /// `notes` what the caller found wrong with the recording's files besides (a file missing
    /// or that could not be opened), said first in [`Reader::recovery`].
    ///
    /// The joined reader has the first file's header (with the last one's `next_file`), every
    /// file's chunks in time order, their tables with ids moved apart (see the module), drops
    /// counted over the whole recording, and the last file's stop. A file recovered by a scan
    /// is read as far as it could be, and a file still being written as far as it was when
    /// opened (a joined reader does not grow): both are named in [`Reader::recovery`], and the
    /// reader is then [`Liveness::Recovered`]. One file with no notes is returned as it is.
    ///
    /// Refused ([`Error::NotOneRecording`]): no file, files of different hosts or boots (their
    /// clocks are not one), or files that overlap in time (not one recording's rotation).
    pub fn join(files: Vec<(String, Reader<S>)>, notes: Vec<String>) -> Result<Reader<S>, Error> {
        let mut files = files;
        files.sort_by_key(|(_, r)| r.meta.start_ts);
        if files.is_empty() {
            return Err(Error::NotOneRecording("no capture to read".into()));
        }
        for pair in files.windows(2) {
            let ((an, a), (bn, b)) = (&pair[0], &pair[1]);
            if a.meta.host != b.meta.host
                || a.meta.boot_to_wall_ns.abs_diff(b.meta.boot_to_wall_ns) > SAME_BOOT_NS as u64
            {
                return Err(Error::NotOneRecording(format!(
                    "{an} and {bn} were not recorded on one host in one boot: they are not one recording \
                     (iocap report reads several recordings together)"
                )));
            }
            if b.meta.start_ts < a.stop_ts() {
                return Err(Error::NotOneRecording(format!(
                    "{an} and {bn} overlap in time: they are not one recording's files \
                     (iocap report reads several recordings together)"
                )));
            }
        }
        let mut recovery = notes;
        for (name, r) in &files {
            if r.liveness == Liveness::Live {
                recovery.push(format!("{name} is being recorded: read as far as it was when opened"));
            } else if let Some(why) = &r.recovery {
                recovery.push(format!("{name}: {why}"));
            }
        }
        let recovery = (!recovery.is_empty()).then(|| recovery.join("; "));
        if files.len() == 1 {
            let (_, mut r) = files.remove(0);
            r.recovery = recovery.or(r.recovery);
            return Ok(r);
        }
        let first = &files[0].1;
        let mut meta = first.meta.clone();
        meta.next_file = files.last().and_then(|(_, r)| r.meta.next_file.clone());
        let mut joined = Reader {
            src: Arc::clone(&first.src),
            file_len: 0,
            version: first.version,
            meta,
            tables: Arc::clone(&first.tables),
            chunks: Vec::new(),
            drop_stats: Vec::new(),
            drop_procs: Vec::new(),
            drop_places: 0,
            // A file with drops its recorder did not place leaves the joined recording's
            // placement short: said, not summed as if whole.
            drop_procs_lacking: files.iter().any(|(_, r)| !r.drops_by_process_recorded()),
            rollups: Vec::new(),
            cell_frames: Vec::new(),
            file_rollups: Vec::new(),
            // Each file counts its own.
            unseen: files.iter().map(|(_, r)| r.unseen).fold(0, u64::saturating_add),
            unseen_disks: files.iter().fold(BTreeMap::new(), |mut all, (_, r)| {
                for (&dev, &n) in &r.unseen_disks {
                    let sum = all.entry(dev).or_insert(0u64);
                    *sum = sum.saturating_add(n);
                }
                all
            }),
            stop_ts: files.last().map(|(_, r)| r.stop_ts()),
            scan: None,
            liveness: if files.iter().all(|(_, r)| r.liveness == Liveness::Finished) {
                Liveness::Finished
            } else {
                Liveness::Recovered
            },
            recovery,
            assume_writer: false,
            parts: None,
        };
        let mut parts = Vec::with_capacity(files.len());
        // Drops are counted from each file's start; the joined counts go on from the files before.
        let (mut drops_before, mut cpu_before) = (0u64, Vec::<u64>::new());
        joined
            .chunks
            .reserve_exact(files.iter().map(|(_, r)| r.chunks.len()).sum());
        for (k, (name, mut r)) in files.into_iter().enumerate() {
            let base = joined.file_len;
            let shift = if k == 0 {
                MaxIds::default()
            } else {
                joined.tables.max_ids()
            };
            if !shift.fit(&r.tables.max_ids()) {
                return Err(Error::NotOneRecording(format!(
                    "{name}: the recording's files hold more table entries than one capture can number"
                )));
            }
            if k > 0 {
                Arc::make_mut(&mut joined.tables).add_shifted(&r.tables, shift);
            }
            let own_drops = r.drops();
            // Moved, not copied: a day's chunk list is tens of MB of summaries.
            joined
                .chunks
                .extend(std::mem::take(&mut r.chunks).into_iter().map(|mut c| {
                    c.offset += base;
                    c.summary.drops = c.summary.drops.saturating_add(drops_before);
                    c
                }));
            joined.rollups.extend(r.rollups.iter().map(|&at| at + base));
            joined.file_rollups.extend(r.file_rollups.iter().map(|&at| at + base));
            joined.cell_frames.extend(r.cell_frames.iter().map(|&at| at + base));
            // Each file's growth is its own: only the entries' ids move.
            joined.drop_places = joined.drop_places.saturating_add(r.drop_places);
            joined
                .drop_procs
                .extend(std::mem::take(&mut r.drop_procs).into_iter().map(|d| {
                    ProcDropStats {
                        ts: d.ts,
                        procs: d
                            .procs
                            .into_iter()
                            .map(|p| ProcDrops {
                                proc: if p.proc == 0 {
                                    0
                                } else {
                                    p.proc.saturating_add(shift.procs)
                                },
                                ..p
                            })
                            .collect(),
                    }
                }));
            for d in &r.drop_stats {
                joined.drop_stats.push(DropStats {
                    ts: d.ts,
                    per_cpu: d
                        .per_cpu
                        .iter()
                        .enumerate()
                        .map(|(i, n)| n.saturating_add(cpu_before.get(i).copied().unwrap_or(0)))
                        .collect(),
                });
            }
            if let Some(last) = r.drop_stats.iter().max_by_key(|d| d.total()) {
                cpu_before.resize(cpu_before.len().max(last.per_cpu.len()), 0);
                for (b, n) in cpu_before.iter_mut().zip(&last.per_cpu) {
                    *b = b.saturating_add(*n);
                }
            }
            let part_drops_before = drops_before;
            drops_before = drops_before.saturating_add(own_drops);
            joined.file_len = base.saturating_add(r.file_len);
            parts.push(Part {
                name,
                base,
                len: r.file_len,
                src: r.src,
                proc_shift: shift.procs,
                file_shift: shift.files,
                stack_shift: shift.stacks,
                drops_before: part_drops_before,
            });
        }
        joined.parts = Some(parts.into());
        Ok(joined)
    }

    /// How many files this reader reads: 1, or those [`Reader::join`] joined.
    pub fn file_count(&self) -> usize {
        self.parts.as_ref().map_or(1, |p| p.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::columns::{Col, ColSet, Columns};
    use crate::model::{Event, FdType, FileEntry, Meta, ProcEntry, Stack, StackFrame};
    use crate::reader::ChunkDecoder;
    use crate::writer::{Writer, WriterOptions};

    /// A file of a rotation: from `start` to `stop`, one process named `name` (pid `pid`) with
    /// one file `path` open, and `n` calls, 3 events a chunk; `drops` drops counted at its end.
    fn file(start: u64, stop: u64, name: &str, pid: u32, path: &str, n: u64, drops: u64) -> Reader<Vec<u8>> {
        let meta = Meta {
            host: "h".into(),
            arch: "x86_64".into(),
            boot_to_wall_ns: 1_700_000_000_000_000_000,
            start_ts: start,
            ..Meta::default()
        };
        let opts = WriterOptions {
            chunk_events: 3,
            level: 1,
        };
        let mut w = Writer::new(Vec::new(), &meta, opts).unwrap();
        // An unrelated entry first, so the two files' ids of the same kind differ in meaning.
        let other = w.intern(format!("other-{name}").as_bytes());
        w.add_proc(ProcEntry {
            pid: 1,
            name: other,
            ..ProcEntry::default()
        });
        let n_id = w.intern(name.as_bytes());
        let proc = w.add_proc(ProcEntry {
            pid,
            name: n_id,
            ..ProcEntry::default()
        });
        let stack = |sym| Stack {
            frames: vec![StackFrame {
                addr: 1,
                sym,
                ..StackFrame::default()
            }],
            ..Stack::default()
        };
        w.add_stack(&stack(other));
        let stack = w.add_stack(&stack(n_id));
        let p_id = w.intern(path.as_bytes());
        let f = w.add_file(FileEntry {
            pid,
            fd: 3,
            kind: FdType::File,
            name: p_id,
            ..FileEntry::default()
        });
        for i in 0..n {
            w.push(&Event {
                proc,
                file: f,
                fd: 3,
                waker_proc: proc,
                stack_user: stack,
                ..Event::syscall(start + i * 10, 5, pid, pid, 0, 1)
            })
            .unwrap();
        }
        w.record_drops(&DropStats {
            ts: stop - 1,
            per_cpu: vec![drops, 0],
        })
        .unwrap();
        Reader::from_bytes(w.finish(stop).unwrap()).unwrap()
    }

    fn names(r: &Reader<Vec<u8>>) -> Vec<(String, String)> {
        let t = r.tables();
        r.events()
            .map(|e| {
                let e = e.unwrap();
                let p = t.proc(e.proc).unwrap();
                let f = t.file(e.file).unwrap();
                (t.string(p.name).to_string(), t.string(f.name).to_string())
            })
            .collect()
    }

    #[test]
    fn files_join_in_time_order_with_their_own_tables() {
        let a = file(1_000, 2_000, "postgres", 10, "/db", 7, 2);
        let b = file(2_000, 3_000, "nginx", 20, "/www", 5, 3);
        let joined = Reader::join(vec![("b".into(), b), ("a".into(), a)], Vec::new()).unwrap();
        assert_eq!(joined.file_count(), 2);
        assert_eq!(joined.event_count(), 12);
        assert_eq!(joined.chunks().len(), 3 + 2);
        assert_eq!(joined.meta().start_ts, 1_000);
        assert_eq!(joined.stop_ts(), 3_000);
        assert_eq!(joined.liveness(), Liveness::Finished);
        assert_eq!(joined.recovery(), None);
        let mut want = vec![("postgres".to_string(), "/db".to_string()); 7];
        want.extend(vec![("nginx".to_string(), "/www".to_string()); 5]);
        assert_eq!(names(&joined), want);
        // Drops go on from the first file's: 2, then 2 + 3.
        assert_eq!(joined.drops(), 5);
        // b's first chunk closed before b counted any: the 2 of a's.
        assert_eq!(joined.chunks()[3].summary.drops, 2);
        assert_eq!(joined.chunks().last().unwrap().summary.drops, 5);
        let ts: Vec<u64> = joined.events().map(|e| e.unwrap().ts).collect();
        assert!(ts.windows(2).all(|w| w[0] < w[1]), "{ts:?}");
    }

    /// A call's waker and stack name what they named in their own file.
    #[test]
    fn wakers_and_stacks_keep_their_meaning_when_joined() {
        let a = file(1_000, 2_000, "postgres", 10, "/db", 2, 0);
        let b = file(2_000, 3_000, "nginx", 20, "/www", 2, 0);
        let joined = Reader::join(vec![("a".into(), a), ("b".into(), b)], Vec::new()).unwrap();
        let t = joined.tables();
        let seen: Vec<(String, String)> = joined
            .events()
            .map(|e| {
                let e = e.unwrap();
                let waker = t.string(t.proc(e.waker_proc).unwrap().name).to_string();
                let stack = t.stack_names(e.stack_user).unwrap().concat();
                (waker, stack)
            })
            .collect();
        let pair = |n: &str| (n.to_string(), n.to_string());
        assert_eq!(seen, [pair("postgres"), pair("postgres"), pair("nginx"), pair("nginx")]);
    }

    #[test]
    fn a_chunk_read_in_two_steps_is_the_chunk_read_at_once() {
        let a = file(1_000, 2_000, "postgres", 10, "/db", 7, 0);
        let b = file(2_000, 3_000, "nginx", 20, "/www", 5, 0);
        let joined = Reader::join(vec![("a".into(), a), ("b".into(), b)], Vec::new()).unwrap();
        let (first, rest) = (ColSet::NONE.with(Col::File), ColSet::NONE.with(Col::Proc).with(Col::Ts));
        let want = first.union(rest);
        let (mut dec, mut once, mut steps) = (ChunkDecoder::new(), Columns::default(), Columns::default());
        // Chunks of both files: the second file's ids are shifted in each step.
        for i in 0..joined.chunks().len() {
            joined.read_chunk(i, want, &mut dec, &mut once).unwrap();
            let mut seen = None;
            let went_on = joined
                .read_chunk_then(i, (first, rest), &mut dec, &mut steps, |c| {
                    seen = Some((c.decoded(), c.file.clone()));
                    true
                })
                .unwrap();
            assert!(went_on);
            assert_eq!(seen, Some((first, once.file.clone())), "chunk {i}'s first step");
            assert_eq!(steps.decoded(), want, "chunk {i}");
            assert_eq!(
                (&steps.proc, &steps.file, &steps.ts),
                (&once.proc, &once.file, &once.ts),
                "chunk {i}"
            );
            // Told to stop, it decodes no more than the first step's columns.
            assert!(!joined
                .read_chunk_then(i, (first, rest), &mut dec, &mut steps, |_| false)
                .unwrap());
            assert_eq!(steps.decoded(), first);
            assert!(steps.proc.is_empty() && steps.ts.is_empty());
        }
    }

    #[test]
    fn files_of_other_boots_or_overlapping_are_refused() {
        let a = || file(1_000, 2_000, "a", 1, "/a", 1, 0);
        let overlapping = file(1_500, 3_000, "b", 2, "/b", 1, 0);
        let e = Reader::join(vec![("a".into(), a()), ("b".into(), overlapping)], Vec::new())
            .err()
            .unwrap();
        assert!(e.to_string().contains("a and b overlap in time"), "{e}");
        let mut other_boot = file(5_000, 6_000, "b", 2, "/b", 1, 0);
        other_boot.meta.boot_to_wall_ns += 60_000_000_000;
        let e = Reader::join(vec![("a".into(), a()), ("b".into(), other_boot)], Vec::new())
            .err()
            .unwrap();
        assert!(e.to_string().contains("not recorded on one host in one boot"), "{e}");
        let e = Reader::join(Vec::<(String, Reader<Vec<u8>>)>::new(), Vec::new())
            .err()
            .unwrap();
        assert_eq!(e.to_string(), "no capture to read");
    }

    #[test]
    fn notes_and_a_damaged_file_are_said() {
        let a = file(1_000, 2_000, "a", 1, "/a", 4, 0);
        let mut bytes = {
            let b = file(2_000, 3_000, "b", 2, "/b", 4, 0);
            let mut all = vec![0; b.file_len as usize];
            b.src.read_exact_at(&mut all, 0).unwrap();
            all
        };
        // Without its trailer the file is read by a scan: recovered.
        bytes.truncate(bytes.len() - 1);
        let b = Reader::from_bytes(bytes).unwrap();
        let notes = vec!["c is missing".to_string()];
        let joined = Reader::join(vec![("a".into(), a), ("b".into(), b)], notes).unwrap();
        let why = joined.recovery().unwrap();
        assert!(why.starts_with("c is missing; b: "), "{why}");
        assert_eq!(joined.liveness(), Liveness::Recovered);
        assert_eq!(joined.event_count(), 8);
        assert_eq!(names(&joined).len(), 8);
        // A damaged chunk of the second file is named with its file.
        let one = Reader::join(
            vec![("a".into(), file(1_000, 2_000, "a", 1, "/a", 4, 0))],
            vec!["x".into()],
        )
        .unwrap();
        assert_eq!(one.file_count(), 1);
        assert_eq!(one.recovery(), Some("x"));
    }

    #[test]
    fn files_open_several_at_once_in_order() {
        let dir = std::env::temp_dir().join(format!("iocap-open-each-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut paths = Vec::new();
        for k in 0..5u64 {
            let r = file(1_000 * (k + 1), 1_000 * (k + 2), "p", 1, "/f", k + 1, 0);
            let mut bytes = vec![0; r.file_len as usize];
            r.src.read_exact_at(&mut bytes, 0).unwrap();
            let path = dir.join(format!("f{k}.cap"));
            std::fs::write(&path, bytes).unwrap();
            paths.push(path);
        }
        paths.insert(2, dir.join("missing.cap"));
        let got = Reader::open_each(&paths);
        std::fs::remove_dir_all(&dir).unwrap();
        let counts: Vec<Option<u64>> = got.iter().map(|r| r.as_ref().ok().map(Reader::event_count)).collect();
        assert_eq!(counts, [Some(1), Some(2), None, Some(3), Some(4), Some(5)]);
    }
}
