//! `iocap events`: the matching events one per line, as sysdig and biosnoop print them, or as
//! JSON lines keyed by the filter language's field names.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
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
    /// The fields to print, comma-separated, as `ps -o` takes them: `-o
    /// evt.time,proc.name,blk.queue,latency,blk.flags` (`iocap fields` lists them); with
    /// `--json`, the keys. The default is the line biosnoop and sysdig print.
    #[arg(short = 'o', long = "columns", value_name = "FIELDS", value_delimiter = ',')]
    columns: Vec<String>,
    /// Which time orders the events and is printed: `end` (the default), each event as it
    /// completed, as biosnoop prints them; `start`, each as it began, as strace does (read
    /// ahead as far as an event in flight can have begun, from each chunk's earliest start).
    #[arg(long, value_enum, default_value_t = Order::End)]
    time: Order,
    /// Follow a capture being recorded: print its events as they come, until it is finished
    /// (or its recorder dies, or Ctrl-C).
    #[arg(short = 'f', long)]
    follow: bool,
}

/// The time that orders `events`' rows and is printed: their start or their end.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Order {
    /// As each event began.
    Start,
    /// As each event completed (the file's order).
    End,
}

/// What one line shows: the usual line, or the fields asked for with `-o`.
enum Layout {
    Usual(Order),
    Fields(Vec<&'static FieldInfo>),
}

pub fn run(args: Args) -> anyhow::Result<()> {
    let chosen = (args.columns.iter())
        .map(|name| input::field_arg(name.trim()))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let fleet = args.sel.open(!args.follow)?;
    if args.follow && args.time == Order::Start {
        return Err(UsageError("-f prints events as they complete: not with --time start".into()).into());
    }
    // Every field by name, as `export --format jsonl` keys them; or those asked for, in order.
    let keys: Vec<&'static FieldInfo> = if chosen.is_empty() {
        let mut all: Vec<_> = fields::canonical().collect();
        all.sort_by_key(|f| f.name);
        all
    } else {
        chosen.clone()
    };
    let layout = if chosen.is_empty() {
        Layout::Usual(args.time)
    } else {
        Layout::Fields(chosen)
    };
    // Read whole, every capture is read in the order asked; followed, one is printed as its
    // recorder wrote it, about as the events completed.
    if !args.follow {
        return in_order(&fleet, &args, &keys, &layout);
    }
    if fleet.is_several() {
        return Err(UsageError("-f follows one capture (with -C, the files of its rotation)".into()).into());
    }
    let mut input = fleet
        .inputs
        .into_iter()
        .next()
        .ok_or_else(|| anyhow::anyhow!("no capture"))?;
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    if !args.json {
        write_header(&mut out, &layout, false)?;
    }
    let limit = args.limit.unwrap_or(u64::MAX);
    let mut shown = 0u64;
    // Followed: the matching events of each look's new chunks, until the limit.
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
                write_line(&mut out, &layout, &e, meta, tables, first_start, None)
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
        // Each look's events reach the reader at once, even through a pipe.
        out.flush()?;
        Ok(if shown >= limit {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        })
    };
    follow::follow(&mut input, &args.sel.capture, |look| print(look.input, look.new))?;
    out.flush()?;
    Ok(())
}

/// The text header: with several hosts, a HOST column after the time (the usual line) or
/// first (fields asked for).
fn write_header(out: &mut impl Write, layout: &Layout, host: bool) -> std::io::Result<()> {
    let host = if host {
        format!(" {:<12}", "HOST")
    } else {
        String::new()
    };
    match layout {
        Layout::Usual(order) => {
            let time = match order {
                Order::Start => "START(s)",
                Order::End => "END(s)",
            };
            writeln!(
                out,
                "{time:>14}{host} {:<16} {:>7} {:<12} {:>9} {:>9} {:>6}  NAME",
                "PROC", "PID", "TYPE", "LATENCY", "BYTES", "RES"
            )
        }
        Layout::Fields(fields) => {
            let mut line = host.trim_start().to_string();
            for (i, f) in fields.iter().enumerate() {
                let last = i + 1 == fields.len();
                push_cell(&mut line, &f.name.to_uppercase(), f, last);
            }
            writeln!(out, "{}", line.trim_end())
        }
    }
}

/// How wide a field's column of `-o` is, and whether its values line up on the right.
fn cell_width(f: &FieldInfo) -> (usize, bool) {
    use iocap_filter::fields::FieldType as T;
    match (f.id, f.ty) {
        (FieldId::EvtTime, _) => (14, true),
        (_, T::Duration | T::Bytes) => (9, true),
        (_, T::Int | T::UInt) => (8, true),
        (_, T::Bool) => (5, false),
        (_, T::Str) => (16, false),
    }
}

/// Append one cell of `-o` to `line`: a space between cells, padded to its column's width (at
/// least the field's name), a string cut in the middle to it but in the last column.
fn push_cell(line: &mut String, text: &str, f: &FieldInfo, last: bool) {
    let (w, right) = cell_width(f);
    let w = w.max(f.name.len());
    if !line.is_empty() {
        line.push(' ');
    }
    let text = if last || right {
        text.to_string()
    } else {
        text::truncate(text, w)
    };
    if right {
        line.push_str(&format!("{text:>w$}"));
    } else if last {
        line.push_str(&text);
    } else {
        line.push_str(&format!("{text:<w$}"));
    }
}

/// A field's value as a cell of `-o`: times from `origin` in seconds, durations and sizes as
/// the usual line prints them, an absent value `<NA>` (as `report --by` and the viewer say it).
fn cell_text(f: &FieldInfo, e: &Event, meta: &Meta, tables: &Tables, origin: u64) -> String {
    match f.id {
        FieldId::EvtTime => seconds(e.ts.saturating_sub(origin)),
        _ => match fields::value(f, e, meta, tables) {
            Value::Absent => "<NA>".into(),
            Value::Duration(ns) => fmt_ns(ns),
            v => v.to_string(),
        },
    }
}

/// ns as `s.nnnnnnnnn`.
fn seconds(ns: u64) -> String {
    format!("{}.{:09}", ns / 1_000_000_000, ns % 1_000_000_000)
}

/// One capture's matching events in the order asked, a chunk at a time: for `--time start`,
/// and for the merge of several captures.
struct Cursor<'a> {
    input: &'a Input,
    order: Order,
    /// The next chunk to read.
    chunk: usize,
    /// The matching events read and not yet taken, by (time of the order, file position), each
    /// held until no chunk not yet read can hold an earlier one.
    pending: BinaryHeap<Reverse<Pending>>,
    /// Events read so far: each one's file position, which breaks ties.
    read: u64,
    /// The latest time of the order taken so far, and whether an event taken later was
    /// earlier (past the window) and was said.
    taken_up_to: u64,
    said_disorder: bool,
    /// For chunks `i..`, a time before which none of their events began (or ended, as the
    /// order is), `u64::MAX` past the last: how far the events read may be taken.
    later: Vec<u64>,
    /// Its boot clock to the wall clock.
    to_wall: i64,
    dec: iocap_format::ChunkDecoder,
    cols: iocap_format::Columns,
    bits: iocap_filter::Bitmap,
}

/// An event read and not yet taken, ordered by its time and then its place in the file.
struct Pending {
    at: u64,
    seq: u64,
    e: Event,
}

impl PartialEq for Pending {
    fn eq(&self, o: &Self) -> bool {
        (self.at, self.seq) == (o.at, o.seq)
    }
}
impl Eq for Pending {}
impl PartialOrd for Pending {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Pending {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        (self.at, self.seq).cmp(&(o.at, o.seq))
    }
}

impl<'a> Cursor<'a> {
    fn new(input: &'a Input, order: Order) -> Cursor<'a> {
        let chunks = input.reader.chunks();
        // A chunk's summary has the earliest start and the least latency of its events (of
        // every event, matching or not: bounds, which is all the order needs). The recorder
        // writes events about as they complete, so in end order little is held; in start
        // order, as much as began during the longest event in flight.
        let mut later = vec![u64::MAX; chunks.len() + 1];
        for i in (0..chunks.len()).rev() {
            let s = &chunks[i].summary;
            let bound = match order {
                Order::Start => s.min_ts,
                Order::End => s.min_ts.saturating_add(s.min_latency),
            };
            later[i] = later[i + 1].min(bound);
        }
        Cursor {
            input,
            order,
            chunk: 0,
            pending: BinaryHeap::new(),
            read: 0,
            taken_up_to: 0,
            said_disorder: false,
            later,
            to_wall: input.reader.meta().boot_to_wall_ns,
            dec: iocap_format::ChunkDecoder::new(),
            cols: iocap_format::Columns::default(),
            bits: iocap_filter::Bitmap::default(),
        }
    }

    /// Whether the earliest event held may be taken: one before every event of the chunks not
    /// yet read.
    fn ready(&self) -> bool {
        self.pending
            .peek()
            .is_some_and(|Reverse(p)| p.at < self.later[self.chunk] || self.pending.len() > self.order.window())
    }

    /// The next matching event in the order, without taking it.
    fn peek(&mut self) -> anyhow::Result<Option<&Event>> {
        let r = &self.input.reader;
        let filter = &self.input.filter;
        while !self.ready() && self.chunk < r.chunks().len() {
            let i = self.chunk;
            self.chunk += 1;
            if !filter.may_match(&r.chunks()[i].summary) {
                continue;
            }
            r.read_chunk(i, ColSet::ALL, &mut self.dec, &mut self.cols)?;
            filter.eval(&self.cols, &mut self.bits);
            for row in self.bits.iter_ones() {
                let e = self.cols.event(row);
                let at = self.order.time(&e);
                self.read += 1;
                self.pending.push(Reverse(Pending { at, seq: self.read, e }));
            }
        }
        Ok(self.pending.peek().map(|Reverse(p)| &p.e))
    }

    /// Take the event [`Cursor::peek`] gave. Past the window, one taken before an event read
    /// later that precedes it is out of order: said once, on standard error.
    fn take(&mut self) -> Option<Event> {
        let Reverse(p) = self.pending.pop()?;
        if p.at < self.taken_up_to && !self.said_disorder {
            self.said_disorder = true;
            crate::say(format_args!(
                "iocap: an event {} far more than {} events from where it was recorded: some rows are out of order",
                match self.order {
                    Order::Start => "began",
                    Order::End => "ended",
                },
                self.order.window()
            ));
        }
        self.taken_up_to = self.taken_up_to.max(p.at);
        Some(p.e)
    }
}

impl Order {
    /// `e`'s time in this order: when it began, or when it completed.
    fn time(self, e: &Event) -> u64 {
        match self {
            Order::Start => e.ts,
            Order::End => e.end(),
        }
    }

    /// How many events a cursor holds at most, waiting for an earlier one a later chunk may
    /// hold: a chunk's summary bounds its events' starts (and so their ends) only loosely,
    /// and an event in flight for the whole capture (a shell's `wait4`) would otherwise hold
    /// every other. The recorder writes events about as they complete, so in end order they
    /// are seldom more than a few thousand out of place; in start order, a slow call is as far
    /// from its place as the events recorded while it ran (2^20 of ~250 bytes: ~256 MiB).
    fn window(self) -> usize {
        match self {
            Order::End => 1 << 16,
            Order::Start => 1 << 20,
        }
    }
}

/// When `e` started or completed, as `order` says, in wall-clock time (its capture's boot
/// clock moved by `to_wall`): the order of the merge.
fn wall_time(e: &Event, order: Order, to_wall: i64) -> i128 {
    i128::from(order.time(e)) + i128::from(to_wall)
}

/// `events` in the order `--time` asks, of one capture or several: each capture's matching
/// events in that order ([`Cursor`]), several merged by wall clock, times from the earliest
/// capture's start.
fn in_order(fleet: &input::Fleet, args: &Args, keys: &[&'static FieldInfo], layout: &Layout) -> anyhow::Result<()> {
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    let hosts = fleet.hosts().len() > 1;
    if !args.json {
        write_header(&mut out, layout, hosts)?;
    }
    let limit = args.limit.unwrap_or(u64::MAX);
    let mut cursors: Vec<Cursor> = fleet.inputs.iter().map(|i| Cursor::new(i, args.time)).collect();
    let mut shown = 0u64;
    while shown < limit {
        // Few captures: the earliest head is found by a look at each.
        let mut first: Option<(i128, usize)> = None;
        for (i, c) in cursors.iter_mut().enumerate() {
            let to_wall = c.to_wall;
            if let Some(e) = c.peek()? {
                let at = wall_time(e, args.time, to_wall);
                if first.is_none_or(|(t, _)| at < t) {
                    first = Some((at, i));
                }
            }
        }
        let Some((_, i)) = first else { break };
        let c = &mut cursors[i];
        let Some(e) = c.take() else { break };
        let r = &c.input.reader;
        let (meta, tables) = (r.meta(), r.tables());
        if args.json {
            write_json(&mut out, keys, &e, meta, tables, c.input.origin)?;
        } else {
            write_line(
                &mut out,
                layout,
                &e,
                meta,
                tables,
                c.input.origin,
                hosts.then_some(&meta.host),
            )?;
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
    // Keyed in the order of `keys` (the fields asked for with `-o`, or the schema's).
    out.write_all(b"{")?;
    for (i, f) in keys.iter().enumerate() {
        let v = match f.id {
            // On the timeline the captures are read on; the capture's own header for every
            // other field (`capture.id` is of its start).
            FieldId::EvtTime => serde_json::Value::from(e.ts.saturating_sub(origin)),
            _ => json_value(&fields::value(f, e, meta, tables)),
        };
        if i > 0 {
            out.write_all(b",")?;
        }
        serde_json::to_writer(&mut *out, f.name)?;
        out.write_all(b":")?;
        serde_json::to_writer(&mut *out, &v)?;
    }
    writeln!(out, "}}")
}

/// Field `id` of `e` as printed (by id: a name misspelled here would print nothing).
fn field_text(id: FieldId, e: &Event, meta: &Meta, tables: &Tables) -> String {
    fields::value(fields::info(id), e, meta, tables).to_string()
}

/// One event as a line of text, its time (start or end, as the layout says) counted from
/// `origin`, with its capture's `host` in a column of its own when several hosts are read.
fn write_line(
    out: &mut impl Write,
    layout: &Layout,
    e: &Event,
    meta: &Meta,
    tables: &Tables,
    origin: u64,
    host: Option<&str>,
) -> std::io::Result<()> {
    let order = match layout {
        Layout::Usual(order) => *order,
        Layout::Fields(fields) => {
            let mut line = host.map_or(String::new(), |h| format!("{:<12}", text::truncate(h, 12)));
            for (i, f) in fields.iter().enumerate() {
                let last = i + 1 == fields.len();
                push_cell(&mut line, &cell_text(f, e, meta, tables, origin), f, last);
            }
            return writeln!(out, "{}", line.trim_end());
        }
    };
    let mut time = format!("{:>14}", seconds(order.time(e).saturating_sub(origin)));
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
