//! `iocap events`: the matching events one per line, as sysdig and biosnoop print them, or as
//! JSON lines keyed by the filter language's field names.

use std::io::Write;
use std::ops::{ControlFlow, Range};

use iocap_analysis::scan;
use iocap_analysis::units::fmt_ns;
use iocap_filter::fields::{self, FieldId, FieldInfo, Value};
use iocap_format::{Cause, Class, ColSet, Event, Meta, Tables};

use crate::input::{self, Input};
use crate::{follow, text};

#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    capture: input::Capture,
    /// Filter, as words joined by spaces: `fd.type=file and latency>1ms`.
    filter: Vec<String>,
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
    let mut input = input::open(&args.capture, &args.filter, !args.follow)?;
    let keys = canonical_fields();
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    if !args.json {
        writeln!(
            out,
            "{:>14} {:<16} {:>7} {:<12} {:>9} {:>9} {:>6}  NAME",
            "TIME(s)", "PROC", "PID", "TYPE", "LATENCY", "BYTES", "RES"
        )?;
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
        let rebased;
        let meta = if r.meta().start_ts == first_start {
            r.meta()
        } else {
            rebased = Meta {
                start_ts: first_start,
                ..r.meta().clone()
            };
            &rebased
        };
        let tables = r.tables();
        let mut err: Option<std::io::Error> = None;
        scan::for_each_match_in(r, &input.filter, ColSet::ALL, chunks, |cols, i| {
            let e = cols.event(i);
            let res = if args.json {
                write_json(&mut out, &keys, &e, meta, tables)
            } else {
                write_line(&mut out, &e, meta, tables)
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
        follow::follow(&mut input, &args.capture, |look| print(look.input, look.new))?;
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

/// Every field once: aliases (which read the same value as a field listed before them) left out.
pub fn canonical_fields() -> Vec<&'static FieldInfo> {
    let mut seen = Vec::new();
    fields::all()
        .iter()
        .filter(|f| {
            if seen.contains(&f.id) {
                return false;
            }
            seen.push(f.id);
            true
        })
        .collect()
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

fn write_json(
    out: &mut impl Write,
    keys: &[&'static FieldInfo],
    e: &Event,
    meta: &Meta,
    tables: &Tables,
) -> std::io::Result<()> {
    serde_json::to_writer(&mut *out, &event_json(keys, e, meta, tables))?;
    writeln!(out)
}

/// Field `id` of `e` as printed (by id: a name misspelled here would print nothing).
fn field_text(id: FieldId, e: &Event, meta: &Meta, tables: &Tables) -> String {
    fields::value(fields::info(id), e, meta, tables).to_string()
}

fn write_line(out: &mut impl Write, e: &Event, meta: &Meta, tables: &Tables) -> std::io::Result<()> {
    let rel = e.ts.saturating_sub(meta.start_ts);
    let time = format!("{}.{:09}", rel / 1_000_000_000, rel % 1_000_000_000);
    let proc = text::truncate(&field_text(FieldId::ProcName, e, meta, tables), 16);
    let mut kind = field_text(FieldId::EvtType, e, meta, tables);
    if e.class == Class::IoUring {
        // `read` alone would read as the syscall.
        kind = format!("uring {kind}");
    }
    let mut res = field_text(FieldId::EvtRes, e, meta, tables);
    let errno = field_text(FieldId::EvtErrno, e, meta, tables);
    if fields::returns_address(&meta.arch, e.class, e.nr) && e.ret > 0 {
        res = format!("{:#x}", e.ret);
    } else if !errno.is_empty() {
        res = errno;
    }
    // Syscalls name their fd's file; block requests their disk, op and sector, as biosnoop,
    // then what issued them and their file when the capture knows.
    let name = if e.class == Class::Block {
        let mut s = format!(
            "{} {} sector {}",
            field_text(FieldId::BlkDev, e, meta, tables),
            field_text(FieldId::BlkOp, e, meta, tables),
            field_text(FieldId::BlkSector, e, meta, tables)
        );
        let by = match field_text(FieldId::BlkSyscall, e, meta, tables) {
            _ if Cause::from_code(e.cause) == Cause::IoUring => {
                format!("io_uring {}", fields::evt_type(&meta.arch, Class::IoUring, e.nr))
            }
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
    } else {
        let n = field_text(FieldId::FdName, e, meta, tables);
        match (n.is_empty(), e.fd) {
            (true, fd) if fd >= 0 => format!("fd {fd}"),
            _ => n,
        }
    };
    let line = format!(
        "{time:>14} {proc:<16} {:>7} {kind:<12} {:>9} {:>9} {res:>6}  {name}",
        e.pid,
        fmt_ns(e.latency),
        e.bytes
    );
    writeln!(out, "{}", line.trim_end())
}
