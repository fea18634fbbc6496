//! `iocap iostat`: per-disk, per-interval figures from the block events, in iostat's units
//! (see `iocap_analysis::iostat` for how each one is defined), over intervals from the
//! capture's start or on whole wall-clock multiples of the interval (`--origin wall`, where
//! `iostat -t`'s samples are when it was started on a whole second); with `-f`, each interval
//! printed once it is over, from a capture being recorded.

use std::io::Write;
use std::time::{Duration, Instant};

use iocap_analysis::iostat::MAX_INTERVALS;
use iocap_analysis::units::parse_duration;
use iocap_analysis::{scan, DeviceInterval, IoStat, Scan};
use iocap_format::{BlockOp, Class, Col, ColSet};
use serde_json::json;

use crate::follow::{self, Look};
use crate::input::{self, Input};
use crate::text;
use crate::UsageError;

#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    sel: input::Selection,
    /// Length of each interval: `1s`, `500ms`, `10s`.
    #[arg(long, default_value = "1s", value_name = "DURATION")]
    interval: String,
    /// Where the intervals' boundaries lie: `start` (the capture's start), `wall` (whole
    /// wall-clock multiples of the interval: every second, as `iostat -t` labels its samples),
    /// or an `evt.time` such as `1.018s` (through that instant: another sampler's first sample).
    /// The first interval is cut to the capture.
    #[arg(long, default_value = "start", value_name = "ORIGIN", value_parser = parse_origin)]
    origin: Origin,
    /// Print JSON instead of text (with -f, one object a line: each interval, then the whole).
    #[arg(long)]
    json: bool,
    /// Follow a capture being recorded: print each interval once it is over, until the capture
    /// is finished (or its recorder dies, or Ctrl-C).
    #[arg(short = 'f', long)]
    follow: bool,
}

/// Where the intervals' boundaries lie.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Origin {
    /// From the capture's start, the origin of every relative time (`evt.time`).
    Start,
    /// On whole wall-clock multiples of the interval.
    Wall,
    /// Through this `evt.time`, ns.
    At(u64),
}

fn parse_origin(s: &str) -> Result<Origin, String> {
    match s {
        "start" => Ok(Origin::Start),
        "wall" => Ok(Origin::Wall),
        t => parse_duration(t)
            .map(Origin::At)
            .map_err(|e| format!("{e}; or `start` or `wall`")),
    }
}

impl Origin {
    /// Where interval 0 starts, on the clock of `start` (the capture's start: its boot clock,
    /// or the wall clock for several captures): at most `start`. `boot_to_wall_ns` takes that
    /// clock to the wall clock; `None` when the wall clock is not known.
    fn grid(self, start: u64, interval: u64, boot_to_wall_ns: Option<i64>) -> Result<u64, UsageError> {
        // The last instant at or before `start` that is a whole number of intervals from `at`.
        let back_to = |at: i128| start.saturating_sub((i128::from(start) - at).rem_euclid(i128::from(interval)) as u64);
        match self {
            Origin::Start => Ok(start),
            Origin::Wall => match boot_to_wall_ns {
                None => Err(UsageError(
                    "--origin wall: the capture does not know its wall-clock time".into(),
                )),
                // The epoch, in boot time: whole wall-clock multiples are whole multiples from it.
                Some(to_wall) => Ok(back_to(-i128::from(to_wall))),
            },
            Origin::At(t) => Ok(back_to(i128::from(start) + i128::from(t))),
        }
    }

    fn name(self) -> String {
        match self {
            Origin::Start => "start".into(),
            Origin::Wall => "wall".into(),
            Origin::At(t) => iocap_filter::literal::duration(t),
        }
    }
}

/// How a capture's intervals are laid and labelled.
#[derive(Clone, Copy)]
struct Layout {
    /// Where interval 0 starts ([`Origin::grid`]), ns since boot.
    grid: u64,
    /// The capture's start, which relative times count from.
    start: u64,
    interval: u64,
    origin: Origin,
    /// The capture's `boot_to_wall_ns` (0 for several: their times are wall-clock times).
    to_wall: i64,
}

/// How the devices of the statistics are named: by one capture's tables, or, of several
/// captures, by the table [`several`] numbered them on.
enum Names<'a> {
    One(&'a Input),
    Many(&'a Renamed),
}

/// The devices of several captures, numbered by name (`host/disk` when the captures are of
/// several hosts): a disk of two files of one host's recording is one device.
#[derive(Default)]
struct Renamed {
    names: Vec<String>,
    /// By number: the block requests the captures' recorders never saw complete.
    unseen: Vec<u64>,
}

impl Renamed {
    /// The number of `input`'s device `dev`, given one if it has none yet.
    fn id(&mut self, input: &Input, dev: u32, hosts: bool) -> u32 {
        let name = iocap_filter::fields::device_name(dev, input.reader.tables());
        let name = if hosts {
            format!("{}/{name}", input.reader.meta().host)
        } else {
            name.into_owned()
        };
        let id = self.names.iter().position(|n| *n == name).unwrap_or_else(|| {
            self.names.push(name);
            self.unseen.push(0);
            self.names.len() - 1
        });
        u32::try_from(id).unwrap_or(u32::MAX)
    }
}

impl Names<'_> {
    fn name(&self, dev: u32) -> String {
        match self {
            Names::One(input) => iocap_filter::fields::device_name(dev, input.reader.tables()).into_owned(),
            Names::Many(r) => r.names.get(dev as usize).cloned().unwrap_or_default(),
        }
    }

    /// The block requests of device `dev` issued whose completion never reached the recorder
    /// ([`Reader::unseen_by_disk`]), which no figure counts: of several captures, the sum of
    /// their counts of the disks named alike.
    ///
    /// [`Reader::unseen_by_disk`]: iocap_format::Reader::unseen_by_disk
    fn unseen(&self, dev: u32) -> u64 {
        match self {
            Names::One(input) => input.reader.unseen_by_disk().get(&dev).copied().unwrap_or(0),
            Names::Many(r) => r.unseen.get(dev as usize).copied().unwrap_or(0),
        }
    }
}

impl Layout {
    /// Empty statistics from the capture's start to `end`.
    fn stats(&self, end: u64) -> anyhow::Result<IoStat> {
        IoStat::on_grid(self.grid, self.start, end.max(self.start), self.interval)
            .map_err(|e| UsageError(format!("--interval: {e}")).into())
    }

    /// A boot time as wall-clock time.
    fn wall(&self, boot_ns: u64) -> String {
        wall_time(i128::from(boot_ns) + i128::from(self.to_wall))
    }

    /// Seconds since the capture's start.
    fn rel(&self, t: u64) -> f64 {
        t.saturating_sub(self.start) as f64 / 1e9
    }
}

/// How long after an interval's end, by the recording's clock, `-f` prints it: the recorder
/// writes what it has at least every 500 ms, and a request still in flight then adds to the
/// qdepth and busy time of the intervals it spans when it completes. A request in flight for
/// longer than this is left out of those figures of intervals already printed (`iostat` on the
/// finished capture counts it).
pub const SETTLE: Duration = Duration::from_secs(2);

pub fn run(args: Args) -> anyhow::Result<()> {
    let interval = parse_duration(&args.interval).map_err(|e| UsageError(format!("--interval: {e}")))?;
    let fleet = args.sel.open(!args.follow)?;
    if fleet.is_several() {
        if args.follow {
            return Err(UsageError("-f follows one capture (with -C, the files of its rotation)".into()).into());
        }
        return several(&fleet, &args, interval);
    }
    let mut input = fleet
        .inputs
        .into_iter()
        .next()
        .ok_or_else(|| anyhow::anyhow!("no capture"))?;
    let r = &input.reader;
    let (start, end) = scan::capture_span(r);
    let to_wall = r.meta().boot_to_wall_ns;
    let grid = args.origin.grid(start, interval, (to_wall != 0).then_some(to_wall))?;
    let layout = Layout {
        grid,
        start,
        interval,
        origin: args.origin,
        to_wall,
    };
    // Checked now, whether followed or not: the same intervals must fit the whole capture.
    layout.stats(end)?;
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    if args.follow {
        let mut live = Live::new(layout)?;
        follow::follow(&mut input, &args.sel.capture, |look| {
            live.step(look, args.json, &mut out)?;
            out.flush()?;
            Ok(std::ops::ControlFlow::Continue(()))
        })?;
    } else {
        let st = whole(&[&input], &layout)?;
        if st.devices().is_empty() {
            input.say_nothing_matched("block requests");
        }
        write(
            &mut out,
            &Names::One(&input),
            &st,
            end_of(&input, &layout),
            &layout,
            args.json,
        )?;
    }
    out.flush()?;
    Ok(())
}

/// The whole statistics, as JSON or as text (every interval, then the whole).
fn write(
    out: &mut impl Write,
    names: &Names,
    st: &IoStat,
    end: u64,
    layout: &Layout,
    json: bool,
) -> anyhow::Result<()> {
    if json {
        write_json(out, names, st, end, layout)
    } else {
        write_intervals(out, names, st, 0, layout)?;
        write_whole(out, names, st, end, layout)
    }
}

/// `iostat` of several captures: each request at its wall-clock time, intervals from the
/// earliest capture's start (or as `--origin` lays them, `evt.time` counting from that start),
/// a device per host and name (`db1/vda`, with several hosts).
fn several(fleet: &input::Fleet, args: &Args, interval: u64) -> anyhow::Result<()> {
    let wall = |t: i128| u64::try_from(t.max(0)).unwrap_or(u64::MAX);
    let (start, end) = (wall(fleet.start()), wall(fleet.end()));
    // Times are wall-clock times, unless a capture does not know it.
    let known = fleet.inputs.iter().all(|i| i.reader.meta().boot_to_wall_ns != 0);
    let layout = Layout {
        grid: args.origin.grid(start, interval, known.then_some(0))?,
        start,
        interval,
        origin: args.origin,
        to_wall: 0,
    };
    let empty = layout.stats(end)?;
    let mut st = empty.clone();
    let hosts = fleet.hosts().len() > 1;
    let mut names = Renamed::default();
    for (i, input) in fleet.inputs.iter().enumerate() {
        let one = accumulate(input, &empty, None, fleet.wall(i))?;
        st.merge_renamed(&one, |dev| names.id(input, dev, hosts));
        // Each file counts its own (a rotated file's count starts again at 0).
        for (&dev, &n) in input.reader.unseen_by_disk().iter() {
            let id = names.id(input, dev, hosts) as usize;
            names.unseen[id] = names.unseen[id].saturating_add(n);
        }
    }
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    if st.devices().is_empty() {
        fleet.say_nothing_matched("block requests");
    }
    write(&mut out, &Names::Many(&names), &st, end, &layout, args.json)?;
    out.flush()?;
    Ok(())
}

/// The columns iostat reads.
fn columns() -> ColSet {
    [
        Col::Class,
        Col::Ts,
        Col::Latency,
        Col::Queue,
        Col::Dev,
        Col::Op,
        Col::Bytes,
    ]
    .into_iter()
    .collect()
}

/// The matching block requests of `chunks` (every chunk: `None`), counted into statistics
/// laid out as `empty` (each scan thread starts from a copy of it), their times moved by
/// `shift` ns (onto the wall clock, for several captures; else 0).
fn accumulate(input: &Input, empty: &IoStat, chunks: Option<&[usize]>, shift: i64) -> anyhow::Result<IoStat> {
    let r = &input.reader;
    let mut s = Scan::new(r, Some(&input.filter))
        .columns(columns())
        .threads(input::threads(r));
    if let Some(c) = chunks {
        s = s.chunks(c);
    }
    let done = s.run(
        || empty.clone(),
        |st: &mut IoStat, _, c, bits| {
            for i in bits.iter_ones() {
                if c.class[i] == Class::Block as u8 {
                    st.add(
                        c.dev[i],
                        BlockOp::from_code(c.op[i]),
                        c.bytes[i],
                        c.ts[i].saturating_add_signed(shift),
                        c.queue[i],
                        c.latency[i],
                    );
                }
            }
        },
        |a, b| a.merge(&b),
    )?;
    Ok(done.ok_or_else(|| anyhow::anyhow!("the scan was cancelled"))?.0)
}

/// The end of the capture `input` reads, as far as it is read.
fn end_of(input: &Input, layout: &Layout) -> u64 {
    scan::capture_span(&input.reader).1.max(layout.start)
}

/// The statistics of the whole capture, the files of a rotation followed oldest first, to the
/// last one's end as it is now.
fn whole(files: &[&Input], layout: &Layout) -> anyhow::Result<IoStat> {
    let end = files.last().map_or(layout.start, |f| end_of(f, layout));
    let empty = layout.stats(end)?;
    let mut st = empty.clone();
    for f in files {
        st.merge(&accumulate(f, &empty, None, 0)?);
    }
    Ok(st)
}

fn row_json(names: &Names, d: &DeviceInterval) -> serde_json::Value {
    json!({
        "device": names.name(d.dev),
        "reads": d.reads,
        "writes": d.writes,
        "read_bytes": d.read_bytes,
        "write_bytes": d.write_bytes,
        "r_per_s": d.r_per_s,
        "w_per_s": d.w_per_s,
        "rkb_per_s": d.rkb_per_s,
        "wkb_per_s": d.wkb_per_s,
        "r_await_ms": d.r_await_ms,
        "w_await_ms": d.w_await_ms,
        "aqu_sz": d.aqu_sz,
        "qdepth": d.qdepth,
        "util_pct": d.util_pct,
    })
}

/// Interval `i` of `st` as an object, as in `intervals`: its span, and a row for each of
/// `devices`.
fn interval_json(names: &Names, st: &IoStat, i: u64, devices: &[u32], layout: &Layout) -> serde_json::Value {
    let (lo, hi) = st.interval_span(i);
    json!({
        "start_s": layout.rel(lo),
        "duration_s": (hi - lo) as f64 / 1e9,
        "start": layout.wall(lo),
        "end": layout.wall(hi),
        "devices": st.interval_row(i, devices).iter().map(|d| row_json(names, d)).collect::<Vec<_>>(),
    })
}

/// The whole capture's object: its span (to `end`) and every device's totals.
fn whole_json(names: &Names, st: &IoStat, end: u64, layout: &Layout) -> serde_json::Value {
    let start = layout.start;
    json!({
        "interval_ns": layout.interval,
        "origin": layout.origin.name(),
        "start_ns": start,
        "duration_ns": end - start,
        "start": layout.wall(start),
        "end": layout.wall(end),
        "devices": (st.totals().iter())
            .map(|d| {
                let mut row = row_json(names, d);
                row["unseen_requests"] = json!(names.unseen(d.dev));
                row
            })
            .collect::<Vec<_>>(),
    })
}

fn write_json(out: &mut impl Write, names: &Names, st: &IoStat, end: u64, layout: &Layout) -> anyhow::Result<()> {
    let mut v = whole_json(names, st, end, layout);
    let devices = st.devices();
    v["intervals"] = (0..st.intervals())
        .map(|i| interval_json(names, st, i, &devices, layout))
        .collect();
    serde_json::to_writer_pretty(&mut *out, &v)?;
    writeln!(out)?;
    Ok(())
}

/// Every interval of `st` from `from` on, as text.
fn write_intervals(out: &mut impl Write, names: &Names, st: &IoStat, from: u64, layout: &Layout) -> anyhow::Result<()> {
    if st.devices().is_empty() {
        // Said once, with the whole capture's line.
        return Ok(());
    }
    let devices = st.devices();
    for i in from..st.intervals() {
        write_interval(out, names, st, i, &devices, layout)?;
    }
    writeln!(out)?;
    Ok(())
}

/// The width of the TIME column: an interval's start, `12.345s` (up to a day and more), or in
/// RFC 3339 with `--origin wall` (at most nanoseconds).
fn time_width(layout: &Layout) -> usize {
    if layout.origin == Origin::Wall {
        30
    } else {
        10
    }
}

/// Interval `i` of `st` as text, a line for each of `devices` (one line per interval for one
/// disk, as `iostat -x -d DEV 1` reads), each beginning with the interval's start; the header
/// before the first. An interval with no disk yet (followed, before any request) is its time
/// alone, as time passes.
fn write_interval(
    out: &mut impl Write,
    names: &Names,
    st: &IoStat,
    i: u64,
    devices: &[u32],
    layout: &Layout,
) -> anyhow::Result<()> {
    let width = time_width(layout);
    if i == 0 {
        write!(out, "{:>width$} ", "TIME")?;
        write_header(out)?;
    }
    let (lo, _) = st.interval_span(i);
    let time = if layout.origin == Origin::Wall {
        layout.wall(lo)
    } else {
        format!("{:.3}s", layout.rel(lo))
    };
    let rows = st.interval_row(i, devices);
    if rows.is_empty() {
        writeln!(out, "{time:>width$}")?;
    }
    for d in rows {
        write!(out, "{time:>width$} ")?;
        write_row(out, &d, &names.name(d.dev))?;
    }
    Ok(())
}

/// The whole capture's totals (to `end`) as text, or that no block request matched.
fn write_whole(out: &mut impl Write, names: &Names, st: &IoStat, end: u64, layout: &Layout) -> anyhow::Result<()> {
    let totals = st.totals();
    if totals.is_empty() {
        writeln!(out, "no block requests matched")?;
        return Ok(());
    }
    writeln!(out, "whole capture ({:.3}s)", layout.rel(end))?;
    write_table(out, &totals, &|dev| names.name(dev))?;
    for d in &totals {
        let n = names.unseen(d.dev);
        if n > 0 {
            writeln!(
                out,
                "{}: {n} block requests issued whose completion never reached the recorder, in no figure above",
                names.name(d.dev)
            )?;
        }
    }
    Ok(())
}

fn write_table(out: &mut impl Write, rows: &[DeviceInterval], name: &dyn Fn(u32) -> String) -> std::io::Result<()> {
    write_header(out)?;
    for d in rows {
        write_row(out, d, &name(d.dev))?;
    }
    Ok(())
}

/// The table's header line.
fn write_header(out: &mut impl Write) -> std::io::Result<()> {
    writeln!(
        out,
        "{:<12} {:>9} {:>9} {:>10} {:>10} {:>8} {:>8} {:>7} {:>7} {:>6}",
        "Device", "r/s", "w/s", "rkB/s", "wkB/s", "r_await", "w_await", "aqu-sz", "qdepth", "%util"
    )
}

/// One disk's line of the table.
fn write_row(out: &mut impl Write, d: &DeviceInterval, name: &str) -> std::io::Result<()> {
    writeln!(
        out,
        "{:<12} {:>9.2} {:>9.2} {:>10.2} {:>10.2} {:>8.2} {:>8.2} {:>7.2} {:>7.2} {:>6.1}",
        text::truncate(name, 12),
        d.r_per_s,
        d.w_per_s,
        d.rkb_per_s,
        d.wkb_per_s,
        d.r_await_ms,
        d.w_await_ms,
        d.aqu_sz,
        d.qdepth,
        d.util_pct
    )
}

/// A wall-clock time, ns since the epoch, in RFC 3339 (UTC) with as many decimals as it needs:
/// `2026-11-22T23:01:18Z`, `2026-11-22T23:01:18.5Z`.
fn wall_time(epoch_ns: i128) -> String {
    let full = crate::info::rfc3339(epoch_ns);
    let (secs, frac) = full.trim_end_matches('Z').split_once('.').unwrap_or((&full, ""));
    match frac.trim_end_matches('0') {
        "" => format!("{secs}Z"),
        frac => format!("{secs}.{frac}Z"),
    }
}

/// `iostat -f`: the intervals of a capture being recorded, each printed once the recording's
/// clock is [`SETTLE`] past its end; what is left, and the whole capture, once it is finished.
/// With `-C`, the files of the rotation are one recording, counted from the first's start.
///
/// The recording's clock is not this machine's (a stream may come from another host): it is
/// the latest event time read, plus the time elapsed here since it was first read, which the
/// recorder's clock is at least at (it had that event before this reader did). So an idle
/// disk's intervals print on time too, with no event to say so.
struct Live {
    layout: Layout,
    /// Every request read so far, in intervals from the capture's start as far as they go.
    st: IoStat,
    /// The same, with no request: what a scan of new chunks starts from.
    blank: IoStat,
    /// Intervals printed.
    printed: u64,
    /// The latest event time read and when it was first read here.
    clock: (u64, Instant),
}

impl Live {
    fn new(layout: Layout) -> anyhow::Result<Live> {
        let far = layout
            .grid
            .saturating_add(layout.interval.saturating_mul(MAX_INTERVALS));
        let blank = layout.stats(far)?;
        Ok(Live {
            layout,
            st: blank.clone(),
            blank,
            printed: 0,
            clock: (layout.start, Instant::now()),
        })
    }

    /// Take a look's new chunks in, and print what is over.
    fn step(&mut self, look: Look<'_>, json: bool, out: &mut impl Write) -> anyhow::Result<()> {
        let input = look.input;
        if look.finished {
            // The end is known: the rest, counted as `iostat` counts a finished capture.
            let files: Vec<&Input> = look.earlier.iter().chain([input]).collect();
            let st = whole(&files, &self.layout)?;
            let devices = st.devices();
            for i in self.printed..st.intervals() {
                self.write(out, input, &st, i, &devices, json)?;
            }
            let (names, end) = (Names::One(input), end_of(input, &self.layout));
            if json {
                writeln!(out, "{}", whole_json(&names, &st, end, &self.layout))?;
            } else {
                if !devices.is_empty() {
                    // As `iostat` without -f: a blank line between the intervals and the whole.
                    writeln!(out)?;
                }
                write_whole(out, &names, &st, end, &self.layout)?;
            }
            return Ok(());
        }
        let new: Vec<usize> = look.new.clone().collect();
        if !new.is_empty() {
            self.st.merge(&accumulate(input, &self.blank, Some(&new), 0)?);
            let latest = new.iter().map(|&i| input.reader.chunks()[i].summary.max_ts).max();
            if let Some(t) = latest.filter(|&t| t > self.clock.0) {
                self.clock = (t, Instant::now());
            }
        }
        let now = self.clock.0.saturating_add(self.clock.1.elapsed().as_nanos() as u64);
        let devices = self.st.devices();
        while self
            .st
            .interval_span(self.printed)
            .1
            .saturating_add(SETTLE.as_nanos() as u64)
            <= now
        {
            self.write(out, input, &self.st, self.printed, &devices, json)?;
            self.printed += 1;
        }
        Ok(())
    }

    /// Interval `i` of `st`, with a row for each of `devices` (those with requests so far; none
    /// yet: the interval's line alone, as time passes).
    fn write(
        &self,
        out: &mut impl Write,
        input: &Input,
        st: &IoStat,
        i: u64,
        devices: &[u32],
        json: bool,
    ) -> anyhow::Result<()> {
        let names = Names::One(input);
        if json {
            writeln!(out, "{}", interval_json(&names, st, i, devices, &self.layout))?;
            Ok(())
        } else {
            write_interval(out, &names, st, i, devices, &self.layout)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wall_times_are_as_short_as_they_can_be() {
        assert_eq!(wall_time(1_700_000_000_000_000_000), "2023-11-14T22:13:20Z");
        assert_eq!(wall_time(1_700_000_000_500_000_000), "2023-11-14T22:13:20.5Z");
        assert_eq!(wall_time(1_700_000_000_000_000_001), "2023-11-14T22:13:20.000000001Z");
    }
}
