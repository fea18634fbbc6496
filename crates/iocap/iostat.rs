//! `iocap iostat`: per-disk, per-interval figures from the block events, in iostat's units
//! (see `iocap_analysis::iostat` for how each one is defined), over intervals from the
//! capture's start or on whole wall-clock multiples of the interval (`--origin wall`, where
//! `iostat -t`'s samples are when it was started on a whole second).

use std::io::Write;
use std::path::PathBuf;

use iocap_analysis::units::parse_duration;
use iocap_analysis::{scan, DeviceInterval, IoStat};
use iocap_format::{BlockOp, Class, Col, ColSet};
use serde_json::json;

use crate::input;
use crate::text;
use crate::UsageError;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// The capture file.
    file: PathBuf,
    /// Filter, as words joined by spaces (block requests only count): `blk.dev=vda`.
    filter: Vec<String>,
    /// Length of each interval: `1s`, `500ms`, `10s`.
    #[arg(long, default_value = "1s", value_name = "DURATION")]
    interval: String,
    /// Where the intervals' boundaries lie: `start` (the capture's start), `wall` (whole
    /// wall-clock multiples of the interval: every second, as `iostat -t` labels its samples),
    /// or an `evt.time` such as `1.018s` (through that instant: another sampler's first sample).
    /// The first interval is cut to the capture.
    #[arg(long, default_value = "start", value_name = "ORIGIN", value_parser = parse_origin)]
    origin: Origin,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
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
    /// Where interval 0 starts, ns since boot: at most `start`, the capture's start.
    fn grid(self, start: u64, interval: u64, boot_to_wall_ns: i64) -> Result<u64, UsageError> {
        // The last instant at or before `start` that is a whole number of intervals from `at`.
        let back_to = |at: i128| start.saturating_sub((i128::from(start) - at).rem_euclid(i128::from(interval)) as u64);
        match self {
            Origin::Start => Ok(start),
            Origin::Wall if boot_to_wall_ns == 0 => Err(UsageError(
                "--origin wall: the capture does not know its wall-clock time".into(),
            )),
            // The epoch, in boot time: whole wall-clock multiples are whole multiples from it.
            Origin::Wall => Ok(back_to(-i128::from(boot_to_wall_ns))),
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

pub fn run(args: Args) -> anyhow::Result<()> {
    let interval = parse_duration(&args.interval).map_err(|e| UsageError(format!("--interval: {e}")))?;
    let input = input::open(&args.file, &args.filter)?;
    let r = &input.reader;
    let (start, end) = scan::capture_span(r);
    let to_wall = r.meta().boot_to_wall_ns;
    let grid = args.origin.grid(start, interval, to_wall)?;
    let empty = IoStat::on_grid(grid, start, end, interval).map_err(|e| UsageError(format!("--interval: {e}")))?;
    let wall = |boot_ns: u64| wall_time(i128::from(boot_ns) + i128::from(to_wall));
    let want: ColSet = [
        Col::Class,
        Col::Ts,
        Col::Latency,
        Col::Queue,
        Col::Dev,
        Col::Op,
        Col::Bytes,
    ]
    .into_iter()
    .collect();
    let (st, _) = scan::scan(
        r,
        &input.filter,
        want,
        input::threads(r),
        || empty.clone(),
        |st: &mut IoStat, c, bits| {
            for i in bits.iter_ones() {
                if c.class[i] == Class::Block as u8 {
                    st.add(
                        c.dev[i],
                        BlockOp::from_code(c.op[i]),
                        c.bytes[i],
                        c.ts[i],
                        c.queue[i],
                        c.latency[i],
                    );
                }
            }
        },
        |a, b| a.merge(&b),
    )?;
    let tables = r.tables();
    let name = |dev: u32| iocap_filter::fields::device_name(dev, tables).into_owned();
    let mut out = std::io::stdout().lock();
    let totals = st.totals();
    let intervals = st.interval_rows();
    if totals.is_empty() {
        input.say_nothing_matched("block requests");
    }
    if args.json {
        let row = |d: &DeviceInterval| {
            json!({
                "device": name(d.dev),
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
        };
        let v = json!({
            "interval_ns": interval,
            "origin": args.origin.name(),
            "start_ns": start,
            "duration_ns": end - start,
            "start": wall(start),
            "end": wall(end),
            "devices": totals.iter().map(row).collect::<Vec<_>>(),
            "intervals": intervals.iter().map(|rows| json!({
                "start_s": rows.first().map_or(0.0, |d| (d.start - start) as f64 / 1e9),
                "duration_s": rows.first().map_or(0.0, |d| d.duration as f64 / 1e9),
                "start": rows.first().map(|d| wall(d.start)),
                "end": rows.first().map(|d| wall(d.start + d.duration)),
                "devices": rows.iter().map(row).collect::<Vec<_>>(),
            })).collect::<Vec<_>>(),
        });
        serde_json::to_writer_pretty(&mut out, &v)?;
        writeln!(out)?;
        return Ok(());
    }
    if totals.is_empty() {
        writeln!(out, "no block requests matched")?;
        return Ok(());
    }
    let mut out = std::io::BufWriter::new(out);
    for rows in &intervals {
        if let Some(first) = rows.first() {
            let (lo, hi) = (first.start, first.start + first.duration);
            if args.origin == Origin::Wall {
                writeln!(out, "{} .. {}", wall(lo), wall(hi))?;
            } else {
                let rel = |t: u64| (t - start) as f64 / 1e9;
                writeln!(out, "{:.3}s .. {:.3}s", rel(lo), rel(hi))?;
            }
        }
        write_table(&mut out, rows, &name)?;
        writeln!(out)?;
    }
    writeln!(out, "whole capture ({:.3}s)", (end - start) as f64 / 1e9)?;
    write_table(&mut out, &totals, &name)?;
    out.flush()?;
    Ok(())
}

fn write_table(out: &mut impl Write, rows: &[DeviceInterval], name: &dyn Fn(u32) -> String) -> std::io::Result<()> {
    writeln!(
        out,
        "{:<12} {:>9} {:>9} {:>10} {:>10} {:>8} {:>8} {:>7} {:>7} {:>6}",
        "Device", "r/s", "w/s", "rkB/s", "wkB/s", "r_await", "w_await", "aqu-sz", "qdepth", "%util"
    )?;
    for d in rows {
        writeln!(
            out,
            "{:<12} {:>9.2} {:>9.2} {:>10.2} {:>10.2} {:>8.2} {:>8.2} {:>7.2} {:>7.2} {:>6.1}",
            text::truncate(&name(d.dev), 12),
            d.r_per_s,
            d.w_per_s,
            d.rkb_per_s,
            d.wkb_per_s,
            d.r_await_ms,
            d.w_await_ms,
            d.aqu_sz,
            d.qdepth,
            d.util_pct
        )?;
    }
    Ok(())
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
