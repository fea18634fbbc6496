//! `iocap iostat`: per-disk, per-interval figures from the block events, in iostat's units
//! (see `iocap_analysis::iostat` for how each one is defined).

use std::io::Write;

use iocap_analysis::units::parse_duration;
use iocap_analysis::{scan, DeviceInterval, IoStat};
use iocap_format::{BlockOp, Class, Col, ColSet};
use serde_json::json;

use crate::input;
use crate::text;
use crate::UsageError;

#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    capture: input::Capture,
    /// Filter, as words joined by spaces (block requests only count): `blk.dev=vda`.
    filter: Vec<String>,
    /// Length of each interval: `1s`, `500ms`, `10s`.
    #[arg(long, default_value = "1s", value_name = "DURATION")]
    interval: String,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
}

pub fn run(args: Args) -> anyhow::Result<()> {
    let interval = parse_duration(&args.interval).map_err(|e| UsageError(format!("--interval: {e}")))?;
    let input = input::open(&args.capture, &args.filter, true)?;
    let r = &input.reader;
    let (start, end) = scan::capture_span(r);
    let empty = IoStat::new(start, end, interval).map_err(|e| UsageError(format!("--interval: {e}")))?;
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
                "util_pct": d.util_pct,
            })
        };
        let v = json!({
            "interval_ns": interval,
            "start_ns": start,
            "duration_ns": end - start,
            "devices": totals.iter().map(row).collect::<Vec<_>>(),
            "intervals": intervals.iter().map(|rows| json!({
                "start_s": rows.first().map_or(0.0, |d| (d.start - start) as f64 / 1e9),
                "duration_s": rows.first().map_or(0.0, |d| d.duration as f64 / 1e9),
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
            let t0 = (first.start - start) as f64 / 1e9;
            writeln!(out, "{:.3}s .. {:.3}s", t0, t0 + first.duration as f64 / 1e9)?;
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
        "{:<12} {:>9} {:>9} {:>10} {:>10} {:>8} {:>8} {:>7} {:>6}",
        "Device", "r/s", "w/s", "rkB/s", "wkB/s", "r_await", "w_await", "aqu-sz", "%util"
    )?;
    for d in rows {
        writeln!(
            out,
            "{:<12} {:>9.2} {:>9.2} {:>10.2} {:>10.2} {:>8.2} {:>8.2} {:>7.2} {:>6.1}",
            text::truncate(&name(d.dev), 12),
            d.r_per_s,
            d.w_per_s,
            d.rkb_per_s,
            d.wkb_per_s,
            d.r_await_ms,
            d.w_await_ms,
            d.aqu_sz,
            d.util_pct
        )?;
    }
    Ok(())
}
