//! `iocap events`: the matching events one per line, as sysdig and biosnoop print them, or as
//! JSON lines keyed by the filter language's field names.

use std::io::Write;
use std::ops::{ControlFlow, Range};

use iocap_analysis::scan;
use iocap_analysis::units::fmt_ns;
use iocap_filter::fields::{self, FieldId, FieldInfo, Value};
use iocap_format::{Cause, Class, ColSet, Event, Meta, Tables};

use crate::input::{self, Input};
use crate::{follow, text, UsageError};

#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    sel: input::Selection,
    /// Stop after this many events.
    #[arg(long, value_name = "N")]
    limit: Option<u64>,
    /// JSON lines keyed by field names instead of text.
    #[arg(long)]
    json: bool,
    /// Follow a capture being recorded: print its events as they come, until it is finished
    /// (or its recorder dies, or Ctrl-C).
    #[arg(short = 'f', long)]
    follow: bool,
}

pub fn run(args: Args) -> anyhow::Result<()> {
    let fleet = args.sel.open(!args.follow)?;
    if fleet.is_several() {
        if args.follow {
            return Err(UsageError("-f follows one capture (with -C, the files of its rotation)".into()).into());
        }
        return several(&fleet, &args);
    }
    let mut input = fleet
        .inputs
        .into_iter()
        .next()
        .ok_or_else(|| anyhow::anyhow!("no capture"))?;
    let keys: Vec<_> = fields::canonical().collect();
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    if !args.json {
        write_header(&mut out, false)?;
    }
    let limit = args.limit.unwrap_or(u64::MAX);
    let mut shown = 0u64;
    // The matching events of `chunks`, until the limit.
    let first_start = input.reader.meta().start_ts;
    let mut print = |input: &Input, chunks: Range<usize>| -> anyhow::Result<ControlFlow<()>> {
        if shown >= limit {
            return Ok(ControlFlow::Break(()));
        }
        let r = &input.reader;
        // Times count from the recording's start: with -C followed, the first file's, so the
        // files of a rotation make one timeline.
        let (meta, tables) = (r.meta(), r.tables());
        let mut err: Option<std::io::Error> = None;
        scan::for_each_match_in(r, &input.filter, ColSet::ALL, chunks, |cols, i| {
            let e = cols.event(i);
            let res = if args.json {
                write_json(&mut out, &keys, &e, meta, tables, first_start)
            } else {
                write_line(&mut out, &e, meta, tables, first_start, None)
            };
            if let Err(x) = res {
                err = Some(x);
                return ControlFlow::Break(());
            }
            shown += 1;
            if shown >= limit {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        })?;
        if let Some(e) = err {
            return Err(e.into());
        }
        if args.follow {
            // Each look's events reach the reader at once, even through a pipe.
            out.flush()?;
        }
        Ok(if shown >= limit {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        })
    };
    if args.follow {
        follow::follow(&mut input, &args.sel.capture, |look| print(look.input, look.new))?;
    } else {
        let all = 0..input.reader.chunks().len();
        let _stopped_at_the_limit = print(&input, all)?;
        if limit > 0 && shown == 0 {
            input.say_nothing_matched("events");
        }
    }
    out.flush()?;
    Ok(())
}

/// The text header: with several hosts, a HOST column after the time.
fn write_header(out: &mut impl Write, host: bool) -> std::io::Result<()> {
    let host = if host {
        format!(" {:<12}", "HOST")
    } else {
        String::new()
    };
    writeln!(
        out,
        "{:>14}{host} {:<16} {:>7} {:<12} {:>9} {:>9} {:>6}  NAME",
        "TIME(s)", "PROC", "PID", "TYPE", "LATENCY", "BYTES", "RES"
    )
}

/// One capture's matching events, a chunk at a time, for the merge of several.
struct Cursor<'a> {
    input: &'a Input,
    /// The next chunk to read.
    chunk: usize,
    /// The matching events of the last chunk read, and how many of them were printed.
    events: Vec<Event>,
    next: usize,
    /// Its boot clock to the wall clock.
    to_wall: i64,
    dec: iocap_format::ChunkDecoder,
    cols: iocap_format::Columns,
    bits: iocap_filter::Bitmap,
}

impl<'a> Cursor<'a> {
    fn new(input: &'a Input) -> Cursor<'a> {
        Cursor {
            input,
            chunk: 0,
            events: Vec::new(),
            next: 0,
            to_wall: input.reader.meta().boot_to_wall_ns,
            dec: iocap_format::ChunkDecoder::new(),
            cols: iocap_format::Columns::default(),
            bits: iocap_filter::Bitmap::default(),
        }
    }

    /// The next matching event, in file order, without taking it.
    fn peek(&mut self) -> anyhow::Result<Option<&Event>> {
        let r = &self.input.reader;
        let filter = &self.input.filter;
        while self.next == self.events.len() && self.chunk < r.chunks().len() {
            let i = self.chunk;
            self.chunk += 1;
            if !filter.may_match(&r.chunks()[i].summary) {
                continue;
            }
            r.read_chunk(i, ColSet::ALL, &mut self.dec, &mut self.cols)?;
            filter.eval(&self.cols, &mut self.bits);
            self.events = self.bits.iter_ones().map(|row| self.cols.event(row)).collect();
            self.next = 0;
        }
        Ok(self.events.get(self.next))
    }
}

/// When `e` completed, in wall-clock time (its capture's boot clock moved by `to_wall`): the
/// order of the merge.
fn wall_end(e: &Event, to_wall: i64) -> i128 {
    i128::from(e.end()) + i128::from(to_wall)
}

/// `events` of several captures: their matching events merged in the order they completed by
/// wall clock (each capture's own in file order), times from the earliest capture's start.
fn several(fleet: &input::Fleet, args: &Args) -> anyhow::Result<()> {
    let keys: Vec<_> = fields::canonical().collect();
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    let hosts = fleet.hosts().len() > 1;
    if !args.json {
        write_header(&mut out, hosts)?;
    }
    let limit = args.limit.unwrap_or(u64::MAX);
    let mut cursors: Vec<Cursor> = fleet.inputs.iter().map(Cursor::new).collect();
    let mut shown = 0u64;
    while shown < limit {
        // Few captures: the earliest head is found by a look at each.
        let mut first: Option<(i128, usize)> = None;
        for (i, c) in cursors.iter_mut().enumerate() {
            let to_wall = c.to_wall;
            if let Some(e) = c.peek()? {
                let at = wall_end(e, to_wall);
                if first.is_none_or(|(t, _)| at < t) {
                    first = Some((at, i));
                }
            }
        }
        let Some((_, i)) = first else { break };
        let c = &mut cursors[i];
        let e = c.events[c.next].clone();
        c.next += 1;
        let r = &c.input.reader;
        let (meta, tables) = (r.meta(), r.tables());
        if args.json {
            write_json(&mut out, &keys, &e, meta, tables, c.input.origin)?;
        } else {
            write_line(&mut out, &e, meta, tables, c.input.origin, hosts.then_some(&meta.host))?;
        }
        shown += 1;
    }
    if limit > 0 && shown == 0 {
        fleet.say_nothing_matched("events");
    }
    out.flush()?;
    Ok(())
}

/// A field value as JSON: strings, numbers, booleans; `null` when the event has none.
pub fn json_value(v: &Value<'_>) -> serde_json::Value {
    match v {
        Value::Str(s) => serde_json::Value::String(s.to_string()),
        Value::Int(i) => (*i).into(),
        Value::UInt(u) | Value::Duration(u) | Value::Bytes(u) => (*u).into(),
        Value::Bool(b) => (*b).into(),
        Value::Absent => serde_json::Value::Null,
        #[allow(unreachable_patterns)]
        _ => serde_json::Value::Null,
    }
}

/// One event as a JSON object keyed by field names.
pub fn event_json(keys: &[&'static FieldInfo], e: &Event, meta: &Meta, tables: &Tables) -> serde_json::Value {
    let m: serde_json::Map<String, serde_json::Value> = keys
        .iter()
        .map(|f| (f.name.to_string(), json_value(&fields::value(f, e, meta, tables))))
        .collect();
    serde_json::Value::Object(m)
}

/// One event as a JSON line, `evt.time` counted from `origin` (the timeline's start, on the
/// event's capture's boot clock).
fn write_json(
    out: &mut impl Write,
    keys: &[&'static FieldInfo],
    e: &Event,
    meta: &Meta,
    tables: &Tables,
    origin: u64,
) -> std::io::Result<()> {
    let mut v = event_json(keys, e, meta, tables);
    if origin != meta.start_ts {
        // The capture's own header for every other field (`capture.id` is of its start).
        v[fields::info(FieldId::EvtTime).name] = e.ts.saturating_sub(origin).into();
    }
    serde_json::to_writer(&mut *out, &v)?;
    writeln!(out)
}

/// Field `id` of `e` as printed (by id: a name misspelled here would print nothing).
fn field_text(id: FieldId, e: &Event, meta: &Meta, tables: &Tables) -> String {
    fields::value(fields::info(id), e, meta, tables).to_string()
}

/// One event as a line of text, its time counted from `origin`, with its capture's `host` in a
/// column of its own when several hosts are read.
fn write_line(
    out: &mut impl Write,
    e: &Event,
    meta: &Meta,
    tables: &Tables,
    origin: u64,
    host: Option<&str>,
) -> std::io::Result<()> {
    let rel = e.ts.saturating_sub(origin);
    let mut time = format!("{:>14}", format!("{}.{:09}", rel / 1_000_000_000, rel % 1_000_000_000));
    if let Some(h) = host {
        time.push_str(&format!(" {:<12}", text::truncate(h, 12)));
    }
    let proc = text::truncate(&field_text(FieldId::ProcName, e, meta, tables), 16);
    let mut kind = field_text(FieldId::EvtType, e, meta, tables);
    match e.class {
        // `read` alone would read as the syscall.
        Class::IoUring => kind = format!("uring {kind}"),
        Class::Journal => kind = "jbd2 commit".into(),
        Class::Syscall | Class::Block => {}
    }
    let mut res = field_text(FieldId::EvtRes, e, meta, tables);
    let errno = field_text(FieldId::EvtErrno, e, meta, tables);
    if e.unfinished() {
        // Still in flight when the recording stopped: no result yet (`evt.unfinished`).
        res = "unfin".into();
    } else if fields::returns_address(&meta.arch, e.class, e.nr) && e.ret > 0 {
        res = format!("{:#x}", e.ret);
    } else if !errno.is_empty() {
        res = errno;
    }
    // Syscalls name their fd's file; block requests their disk, op and sector, as biosnoop,
    // then what issued them and their file when the capture knows.
    let name = if e.class == Class::Block {
        let mut s = format!(
            "{} {}",
            field_text(FieldId::BlkDev, e, meta, tables),
            field_text(FieldId::BlkOp, e, meta, tables),
        );
        // A flush has no sector: the kernel gives all ones.
        if e.sector != u64::MAX {
            s.push_str(&format!(" sector {}", e.sector));
        }
        let by = match field_text(FieldId::BlkSyscall, e, meta, tables) {
            _ if Cause::from_code(e.cause) == Cause::IoUring => {
                format!("io_uring {}", fields::evt_type(&meta.arch, Class::IoUring, e.nr))
            }
            _ if Cause::from_code(e.cause) == Cause::Journal => format!("journal commit {}", e.offset),
            call if call.is_empty() => field_text(FieldId::BlkCause, e, meta, tables),
            call => call,
        };
        if by != "none" {
            s.push_str(&format!(" by {by}"));
        }
        let file = field_text(FieldId::FdName, e, meta, tables);
        if !file.is_empty() {
            s.push_str(&format!(" {file}"));
        }
        s
    } else if e.class == Class::Journal {
        format!("transaction {}, {} requests", e.offset, e.disk_reqs)
    } else {
        let n = field_text(FieldId::FdName, e, meta, tables);
        match (n.is_empty(), e.fd) {
            (true, fd) if fd >= 0 => format!("fd {fd}"),
            _ => n,
        }
    };
    let line = format!(
        "{time} {proc:<16} {:>7} {kind:<12} {:>9} {:>9} {res:>6}  {name}",
        e.pid,
        fmt_ns(e.latency),
        e.bytes
    );
    writeln!(out, "{}", line.trim_end())
}
