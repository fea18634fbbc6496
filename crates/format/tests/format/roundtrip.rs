//! Write → read gives back the same events, tables, drop stats and metadata, for arbitrary
//! (extreme, unordered, hostile) inputs, and time-based chunk lookup finds every event.

use iocap_format::escape::escape;
use iocap_format::{
    ChunkDecoder, Class, Col, ColSet, Columns, Device, DropStats, Event, FdType, FileEntry, Meta, ProcEntry,
    ReadOptions, Reader, Rollup,
};
use proptest::prelude::*;

use crate::util::{files, read_chunks, write, write_by, Expected, Op};

fn u64_extreme() -> impl Strategy<Value = u64> {
    prop_oneof![Just(0), Just(u64::MAX), Just(u64::MAX - 1), 0..10_000u64, any::<u64>()]
}

fn u32_extreme() -> impl Strategy<Value = u32> {
    prop_oneof![Just(0), Just(u32::MAX), 0..100u32, any::<u32>()]
}

fn event() -> impl Strategy<Value = Event> {
    (
        (
            0..4usize,
            u64_extreme(),
            u64_extreme(),
            u32_extreme(),
            u32_extreme(),
            u32_extreme(),
            u32_extreme(),
        ),
        (
            prop_oneof![Just(-1i64), Just(i64::MIN), Just(i64::MAX), -200..5000i64, any::<i64>()],
            prop_oneof![Just(-1i32), Just(i32::MIN), Just(i32::MAX), 0..100i32],
            u32_extreme(),
            u64_extreme(),
            u32_extreme(),
            u64_extreme(),
            u64_extreme(),
            any::<u8>(),
            u32_extreme(),
        ),
        (
            any::<u8>(),
            u64_extreme(),
            u32_extreme(),
            u64_extreme(),
            u64_extreme(),
            u32_extreme(),
            u64_extreme(),
        ),
    )
        .prop_map(
            |(
                (class, ts, latency, pid, tid, proc, nr),
                (ret, fd, file, bytes, dev, sector, queue, op, flags),
                (cause, link, disk_reqs, disk_bytes, disk_time, cpu, offset),
            )| Event {
                class: Class::ALL[class],
                ts,
                latency,
                pid,
                tid,
                proc,
                nr,
                ret,
                fd,
                file,
                bytes,
                dev,
                sector,
                queue,
                op,
                flags,
                cause,
                link,
                disk_reqs,
                disk_bytes,
                disk_time,
                cpu,
                offset,
                // Proptest's tuples stop at 12: a value of its own, made from another's bits.
                prio: cpu.rotate_left(13) ^ disk_reqs,
                runq: disk_time.rotate_left(17),
                wait: link.rotate_left(29),
                sleeps: disk_reqs.rotate_left(5),
                waker: cpu.rotate_left(23),
                wait_disk: disk_time.rotate_left(3),
                wait_throttle: link.rotate_left(7),
                wait_writeback: bytes.rotate_left(11),
                wait_journal: sector.rotate_left(19),
                wait_lock: queue.rotate_left(23),
                wait_reclaim: offset.rotate_left(31),
                wait_timer: disk_bytes.rotate_left(37),
                wait_call: latency.rotate_left(41),
                wait_net: sector.rotate_left(47),
                wait_signal: queue.rotate_left(53),
                wait_other: ts.rotate_left(43),
                reason: op ^ cause,
                waker_proc: proc.rotate_left(3),
                woken: ts.rotate_left(59),
                stack_user: file.rotate_left(7),
                stack_kernel: dev.rotate_left(11),
            },
        )
}

/// Events that look like a recording: rising timestamps, few distinct values.
fn realistic_events() -> impl Strategy<Value = Vec<Event>> {
    prop::collection::vec((1..100_000u64, 100..10_000_000u64, 0..4u32, any::<bool>()), 0..200).prop_map(|v| {
        let mut ts = 5_000_000_000u64;
        v.into_iter()
            .map(|(gap, lat, t, big)| {
                ts += gap;
                let mut e = Event::syscall(ts, lat, 1000, 1000 + t, if big { 17 } else { 0 }, 4096);
                e.fd = 3 + t as i32;
                e.bytes = 4096;
                e
            })
            .collect()
    })
}

fn hostile_bytes() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        prop::collection::vec(any::<u8>(), 0..40),
        Just(b"\x1b[2J\x1b]0;owned\x07".to_vec()),
        Just("evil\u{202e}gpj.exe\u{200b}".as_bytes().to_vec()),
        Just(b"a\\x41\xff\xfe\r\n".to_vec()),
        "[a-z/._-]{0,20}".prop_map(String::into_bytes),
    ]
}

fn meta() -> impl Strategy<Value = Meta> {
    (
        (
            any::<String>(),
            any::<String>(),
            any::<String>(),
            "[a-z0-9_]{0,8}",
            any::<i64>(),
            u64_extreme(),
        ),
        (
            prop::collection::vec(any::<String>(), 0..4),
            prop::option::of(any::<String>()),
            any::<u32>(),
            prop::collection::vec((any::<u32>(), any::<String>()), 0..3),
            prop::option::of(any::<String>()),
            prop::collection::vec(any::<String>(), 0..3),
            prop::collection::vec(any::<String>(), 0..3),
        ),
    )
        .prop_map(
            |((v, host, kernel, arch, b2w, start), (cmd, filter, cpus, devs, next_file, missing, kept))| Meta {
                iocap_version: v,
                host,
                kernel,
                arch,
                boot_to_wall_ns: b2w,
                start_ts: start,
                command_line: cmd,
                filter,
                cpus,
                devices: devs.into_iter().map(|(dev, name)| Device { dev, name }).collect(),
                next_file,
                missing,
                kept,
                stacks_min_ns: (cpus % 2 == 1).then_some(start),
                containers: cpus % 3 == 0,
            },
        )
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        12 => event().prop_map(Op::Event),
        2 => hostile_bytes().prop_map(Op::Str),
        1 => (
            u32_extreme(),
            u32_extreme(),
            u32_extreme(),
            u32_extreme(),
            u64_extreme(),
            proptest::option::of(u32_extreme())
        )
            .prop_map(|(pid, ppid, name, exe, start_ts, uid)| Op::Proc(ProcEntry {
                id: 0,
                pid,
                ppid,
                name,
                exe,
                cmdline: name,
                start_ts,
                uid,
                user: name,
                cgroup: exe,
                container: ppid % 4,
            })),
        1 => (u32_extreme(), any::<i32>(), 0..25u8, u32_extreme(), u64_extreme())
            .prop_map(|(pid, fd, kind, dev, open_ts)| Op::File(FileEntry {
                id: 0,
                pid,
                fd,
                kind: FdType::from_code(kind),
                name: pid,
                dev,
                open_ts,
            })),
        1 => (0..4u32, any::<String>()).prop_map(|(dev, name)| Op::Dev(Device { dev, name })),
        1 => (u64_extreme(), prop::collection::vec(0..1u64 << 40, 0..5))
            .prop_map(|(ts, per_cpu)| Op::Drops(DropStats { ts, per_cpu })),
        1 => Just(Op::Flush),
    ]
}

/// Everything a reader gives back equals what was written.
fn check(bytes: Vec<u8>, x: &Expected) -> Result<(), TestCaseError> {
    let r = Reader::from_bytes(bytes.clone()).map_err(|e| TestCaseError::fail(e.to_string()))?;
    prop_assert!(r.is_clean(), "{:?}", r.recovery());
    // A header without a start (0) starts at the first event (`Reader::meta`).
    let mut meta = x.meta.clone();
    if meta.start_ts == 0 {
        meta.start_ts = x.chunks.iter().flatten().map(|e| e.ts).min().unwrap_or(0);
    }
    prop_assert_eq!(r.meta(), &meta);
    prop_assert_eq!(r.stop_ts(), x.stop_ts);
    prop_assert_eq!(r.chunks().len(), x.chunks.len());
    let chunks = read_chunks(&r).map_err(|e| TestCaseError::fail(e.to_string()))?;
    prop_assert_eq!(&chunks, &x.chunks);
    prop_assert_eq!(r.event_count(), x.chunks.iter().map(Vec::len).sum::<usize>() as u64);
    let all: Vec<Event> = r
        .events()
        .collect::<Result<_, _>>()
        .map_err(|e| TestCaseError::fail(e.to_string()))?;
    prop_assert_eq!(all, x.events());

    for (info, evs) in r.chunks().iter().zip(&x.chunks) {
        let s = &info.summary;
        prop_assert_eq!(s.events, evs.len() as u64);
        prop_assert_eq!(s.blocks, evs.iter().filter(|e| e.class == Class::Block).count() as u64);
        prop_assert_eq!(s.min_ts, evs.iter().map(|e| e.ts).min().unwrap());
        prop_assert_eq!(s.max_ts, evs.iter().map(|e| e.ts).max().unwrap());
        prop_assert_eq!(s.max_latency, evs.iter().map(|e| e.latency).max().unwrap());
        prop_assert_eq!(s.log2_hist.iter().sum::<u64>(), s.events);
    }

    let t = r.tables();
    for (raw, id) in &x.strings {
        prop_assert_eq!(t.string(*id), escape(raw));
    }
    prop_assert_eq!(t.string(0), "");
    prop_assert_eq!(t.string_count(), x.strings.len());
    prop_assert_eq!(t.procs(), &x.procs[..]);
    let targets: Vec<_> = x.files.iter().map(|f| (f.id, f.target())).collect();
    prop_assert_eq!(files(t), targets);
    // Whole, on request.
    let whole = Reader::new_with(
        bytes.clone(),
        ReadOptions {
            file_details: true,
            ..ReadOptions::default()
        },
    )
    .unwrap();
    prop_assert_eq!(whole.tables().file_entries(), Some(x.files.clone()));
    prop_assert_eq!(t.file_entries(), None);
    for p in &x.procs {
        prop_assert_eq!(t.proc(p.id), Some(p));
    }
    prop_assert_eq!(t.devices(), &x.devices[..]);
    prop_assert_eq!(r.drop_stats(), &x.drops[..]);
    prop_assert_eq!(r.drops(), x.drops.iter().map(DropStats::total).max().unwrap_or(0));
    Ok(())
}

/// `chunks_in` returns every chunk holding an event that starts in the window, and only
/// chunks whose time range meets it.
fn check_time_access(bytes: Vec<u8>, x: &Expected, windows: &[(u64, u64)]) -> Result<(), TestCaseError> {
    let r = Reader::from_bytes(bytes).map_err(|e| TestCaseError::fail(e.to_string()))?;
    for &(a, b) in windows {
        let (from, to) = (a.min(b), a.max(b));
        let got: Vec<usize> = r.chunks_in(from, to).collect();
        for (i, evs) in x.chunks.iter().enumerate() {
            if evs.iter().any(|e| e.ts >= from && e.ts < to) {
                prop_assert!(got.contains(&i), "chunk {} holds an event in [{}, {})", i, from, to);
            }
        }
        for &i in &got {
            let s = &r.chunks()[i].summary;
            prop_assert!(s.max_ts >= from && s.min_ts < to);
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_captures_roundtrip(
        meta in meta(),
        ops in prop::collection::vec(op(), 0..120),
        chunk_events in 1..20usize,
        stop_ts in u64_extreme(),
    ) {
        let (bytes, x) = write(&meta, &ops, chunk_events, stop_ts);
        check(bytes.clone(), &x)?;
        // Every chunk's rollup reads back as its events make it, extreme values included.
        let r = Reader::from_bytes(bytes).unwrap();
        let (mut dec, mut cols) = (ChunkDecoder::new(), Columns::default());
        for i in 0..r.chunks().len() {
            r.read_chunk(i, ColSet::ALL, &mut dec, &mut cols).unwrap();
            let made = Rollup::of(&cols, r.chunks()[i].offset);
            prop_assert_eq!(r.rollup_with_cells(i, &mut dec).and_then(Rollup::into_decoded), Some(made), "chunk {}", i);
        }
    }

    /// A rollup's bytes, whatever they are, decode to a consistent rollup or to nothing.
    #[test]
    fn arbitrary_rollup_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..200), events in 0..50u64) {
        for files in [false, true] {
            if let Some(r) = Rollup::decode(&bytes, events, files) {
                prop_assert_eq!(r.totals.iter().map(|t| t.count).sum::<u64>(), events);
                prop_assert_eq!(r.ends.len(), r.totals.len());
                prop_assert_eq!(r.with_file, files);
            }
        }
    }

    /// A rollup's cells' totals, damaged anywhere (bytes replaced, cut, lengthened), decode
    /// to totals that lie in their cells and add up to their keys', or to nothing.
    #[test]
    fn damaged_cells_totals_never_panic_nor_mislead(
        events in prop::collection::vec((0..4u32, any::<u64>(), any::<u64>()), 1..60),
        edits in prop::collection::vec((any::<usize>(), any::<u8>()), 0..6),
        cut in any::<usize>(),
        extra in prop::collection::vec(any::<u8>(), 0..3),
    ) {
        let mut cols = Columns::default();
        for &(proc, latency, bytes) in &events {
            // Latencies of every scale, bytes that may not add up in 64 bits.
            let latency = latency >> (latency % 64);
            cols.push(&Event { proc, latency, bytes: bytes >> 8, ..Event::default() });
        }
        let made = Rollup::of(&cols, 7);
        let mut frame = Vec::new();
        if !made.encode_cell_totals(&mut frame) {
            return Ok(());
        }
        for &(at, b) in &edits {
            let n = frame.len();
            frame[at % n] = b;
        }
        frame.truncate(frame.len() - cut % 4.min(frame.len()));
        frame.extend_from_slice(&extra);
        let mut read = Rollup::decode(&{ let mut raw = Vec::new(); made.encode(&mut raw); raw }, events.len() as u64, made.with_file).unwrap();
        if !read.take_cell_frame(&frame) {
            return Ok(());
        }
        if let Some(t) = read.cell_totals_where(|_| true) {
            prop_assert_eq!(t.len(), made.cells.len());
            for k in 0..made.totals.len() {
                let span = made.span(k);
                let cells = &t[span.clone()];
                prop_assert_eq!(cells.iter().map(|c| c.sum).sum::<u128>(), made.totals[k].sum);
                prop_assert_eq!(cells.iter().map(|c| u128::from(c.bytes)).sum::<u128>(), u128::from(made.totals[k].bytes));
                for (ct, &(c, n)) in cells.iter().zip(&made.cells[span]) {
                    let (lo, hi) = iocap_format::cell_range(c);
                    prop_assert!(lo <= ct.min && ct.min <= ct.max && ct.max <= hi);
                    prop_assert!(ct.sum >= u128::from(ct.min) * u128::from(n));
                }
            }
        }
    }

    /// The encoder thread changes where frames are encoded, not what: the same calls give
    /// the same bytes, tables, stats and flushes interleaved with chunks in any order.
    #[test]
    fn an_encoder_thread_writes_the_same_bytes(
        meta in meta(),
        ops in prop::collection::vec(op(), 0..120),
        chunk_events in 1..20usize,
        stop_ts in u64_extreme(),
    ) {
        let (here, _) = write(&meta, &ops, chunk_events, stop_ts);
        let (threaded, _) = write_by(&meta, &ops, chunk_events, stop_ts, true);
        prop_assert!(here == threaded, "{} bytes against {}", here.len(), threaded.len());
    }

    #[test]
    fn realistic_events_roundtrip_and_are_found_by_time(
        events in realistic_events(),
        chunk_events in 1..64usize,
        windows in prop::collection::vec((5_000_000_000u64..5_020_000_000, 5_000_000_000u64..5_020_000_000), 1..8),
    ) {
        let ops: Vec<Op> = events.into_iter().map(Op::Event).collect();
        let (bytes, x) = write(&Meta::default(), &ops, chunk_events, 1);
        check(bytes.clone(), &x)?;
        check_time_access(bytes, &x, &windows)?;
    }

    #[test]
    fn extreme_events_are_found_by_time(
        events in prop::collection::vec(event(), 1..80),
        chunk_events in 1..10usize,
        windows in prop::collection::vec((u64_extreme(), u64_extreme()), 1..8),
    ) {
        let ops: Vec<Op> = events.into_iter().map(Op::Event).collect();
        let (bytes, x) = write(&Meta::default(), &ops, chunk_events, 1);
        check_time_access(bytes, &x, &windows)?;
    }

    /// Decoding a subset of columns gives the same values in those columns, zeros elsewhere.
    #[test]
    fn partial_decode_matches_full(events in prop::collection::vec(event(), 1..60), mask in any::<u64>()) {
        let ops: Vec<Op> = events.into_iter().map(Op::Event).collect();
        let (bytes, x) = write(&Meta::default(), &ops, 1000, 1);
        let r = Reader::from_bytes(bytes).unwrap();
        let want = ColSet(mask & ColSet::ALL.0);
        let (mut dec, mut cols) = (ChunkDecoder::new(), Columns::default());
        r.read_chunk(0, want, &mut dec, &mut cols).unwrap();
        prop_assert_eq!(cols.len(), x.chunks[0].len());
        prop_assert_eq!(cols.decoded(), want);
        for (i, e) in x.chunks[0].iter().enumerate() {
            let got = cols.event(i);
            prop_assert_eq!(got.ts, if want.contains(Col::Ts) { e.ts } else { 0 });
            prop_assert_eq!(got.latency, if want.contains(Col::Latency) { e.latency } else { 0 });
            prop_assert_eq!(got.ret, if want.contains(Col::Ret) { e.ret } else { 0 });
            prop_assert_eq!(got.bytes, if want.contains(Col::Bytes) { e.bytes } else { 0 });
            prop_assert_eq!(got.fd, if want.contains(Col::Fd) { e.fd } else { 0 });
            prop_assert_eq!(got.sector, if want.contains(Col::Sector) { e.sector } else { 0 });
            prop_assert_eq!(got.tid, if want.contains(Col::Tid) { e.tid } else { 0 });
            prop_assert_eq!(got.class, if want.contains(Col::Class) { e.class } else { Class::Syscall });
        }
    }

    /// Strings are stored as the prefix they share with the previous one in their frame plus
    /// the rest: paths built from a few pieces (so neighbours share prefixes of every length,
    /// including ones that end inside a UTF-8 sequence), interleaved with flushes that start
    /// new frames, all read back whole.
    #[test]
    fn strings_sharing_prefixes_roundtrip(
        paths in prop::collection::vec(prop::collection::vec(0..5usize, 0..6), 1..80),
        flushes in prop::collection::vec(any::<bool>(), 80),
    ) {
        let pieces: [&[u8]; 5] = [b"/usr", b"/share/", "\u{e9}t\u{e9}".as_bytes(), b"\xff\n", b"a"];
        let mut ops = Vec::new();
        for (p, flush) in paths.iter().zip(&flushes) {
            ops.push(Op::Str(p.iter().flat_map(|&i| pieces[i].iter().copied()).collect()));
            if *flush {
                ops.push(Op::Flush);
            }
        }
        let (bytes, x) = write(&Meta::default(), &ops, 10, 1);
        check(bytes, &x)?;
    }

    /// `ts` is stored as the gap since the same thread's previous syscall ended, with a
    /// 256-slot per-thread cache: threads that share a slot (tids 256 apart), block requests
    /// in between, wrapping ends and decoding `ts` without the columns it is rebuilt from all
    /// give back the written starts.
    #[test]
    fn gap_timestamps_roundtrip_with_threads_sharing_slots(
        events in prop::collection::vec(
            (0..6usize, any::<bool>(), prop_oneof![1..50_000u64, u64_extreme()], u64_extreme(), any::<bool>()),
            1..300,
        ),
        chunk_events in 1..400usize,
    ) {
        let mut ts = 1_000_000u64;
        let events: Vec<Event> = events
            .into_iter()
            .map(|(t, block, gap, latency, jump)| {
                ts = if jump { gap } else { ts.wrapping_add(gap) };
                let tid = [7, 7 + 256, 7 + 512, 8, 0, u32::MAX][t];
                let mut e = Event::syscall(ts, latency, 1, tid, 0, 0);
                if block {
                    e.class = Class::Block;
                }
                e
            })
            .collect();
        let ops: Vec<Op> = events.into_iter().map(Op::Event).collect();
        let (bytes, x) = write(&Meta::default(), &ops, chunk_events, 1);
        check(bytes.clone(), &x)?;
        let r = Reader::from_bytes(bytes).unwrap();
        let (mut dec, mut cols) = (ChunkDecoder::new(), Columns::default());
        for (i, evs) in x.chunks.iter().enumerate() {
            r.read_chunk(i, ColSet::NONE.with(Col::Ts), &mut dec, &mut cols).unwrap();
            prop_assert_eq!(&cols.ts, &evs.iter().map(|e| e.ts).collect::<Vec<_>>());
            prop_assert!(cols.class.is_empty() && cols.tid.is_empty() && cols.latency.is_empty());
        }
    }
}
