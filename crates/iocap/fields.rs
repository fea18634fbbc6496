//! `iocap fields` (every filter field with its type and description) and `iocap help [TOPIC]`
//! (the filter language guide for `iocap help filter`, a subcommand's help otherwise).

use std::io::Write;

use clap::CommandFactory;
use iocap_filter::fields;
use serde_json::json;

use crate::UsageError;

#[derive(clap::Args, Debug)]
#[command(after_long_help = "See `iocap help filter` for the syntax, with examples.")]
pub struct Args {
    /// Print JSON (an array of {name, type, description}) instead of a table.
    #[arg(long)]
    json: bool,
}

pub fn run(args: Args) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    if args.json {
        let list: Vec<_> = fields::all()
            .iter()
            .map(|f| json!({"name": f.name, "type": f.ty.name(), "description": f.description}))
            .collect();
        serde_json::to_writer_pretty(&mut out, &list)?;
        writeln!(out)?;
        return Ok(());
    }
    write_table(&mut out)?;
    writeln!(out, "\nSee `iocap help filter` for the syntax, with examples.")?;
    Ok(())
}

/// The table `iocap fields` prints (also the end of `iocap help filter`).
fn write_table(out: &mut impl Write) -> std::io::Result<()> {
    let width = fields::all().iter().map(|f| f.name.len()).max().unwrap_or(0);
    for f in fields::all() {
        writeln!(out, "{:width$}  {:8}  {}", f.name, f.ty.name(), f.description)?;
    }
    Ok(())
}

#[derive(clap::Args, Debug)]
pub struct HelpArgs {
    /// `filter` for the filter language, or a subcommand.
    topic: Vec<String>,
}

pub fn help(args: HelpArgs) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    let mut cmd = crate::Cli::command();
    match args.topic.iter().map(String::as_str).collect::<Vec<_>>().as_slice() {
        [] => write!(out, "{}", cmd.render_long_help())?,
        ["filter" | "filters"] => {
            out.write_all(FILTER_HELP.as_bytes())?;
            writeln!(out, "\nFIELDS\n")?;
            write_table(&mut out)?;
        }
        [name, rest @ ..] => {
            let mut sub = cmd
                .find_subcommand_mut(name)
                .ok_or_else(|| {
                    UsageError(format!(
                        "no help topic `{name}` (try `iocap help filter` or `iocap --help`)"
                    ))
                })?
                .clone();
            for r in rest {
                sub = sub
                    .find_subcommand_mut(r)
                    .ok_or_else(|| UsageError(format!("no help topic `{name} {r}`")))?
                    .clone();
            }
            write!(out, "{}", sub.bin_name(format!("iocap {name}")).render_long_help())?;
        }
    }
    Ok(())
}

const FILTER_HELP: &str = r#"IOCAP FILTERS

Every reading command takes a filter after the capture file, as sysdig and tcpdump do:

    iocap report trace.cap 'proc.name=fio and latency>1ms'
    iocap view trace.cap proc.name=postgres and fd.type=file

Quote the filter for the shell when it has spaces, <, > or parentheses.

SYNTAX

    FIELD OP VALUE         latency>1ms   proc.name=fio   fd.name contains fio-r.dat
    FIELD in (V, V, ...)   evt.type in (read, pread64, readv)
    FIELD exists           fd.name exists         (the event has an fd with a name)
    BOOLFIELD              evt.failed             (same as evt.failed=true)
    A and B, A or B, not A, ( ... )               not binds tighter than and, and than or

Operators: = (or ==) != < <= > >=, and for strings contains icontains startswith
endswith glob (shell pattern: * ? [a-z]) in.

Values: bare words may hold path characters (fd.name=/var/lib/pg/base/16384, blk.dev=nvme0n1);
quote values with spaces or ( ) , = < > ! in them: proc.cmdline contains "-c fsync".
Durations need a unit: ns us µs ms s m h (1.5ms, 250us; `0` alone is fine).
Sizes take an optional unit: B KB KiB MB MiB GB GiB TB TiB (4096, 4KiB, 1MB).
Booleans: true false.

A field that does not apply to an event (fd.name of a block request, blk.dev of a syscall)
makes every comparison on it false, != included; `not` inverts that, `exists` tests it.

Strings from the traced host are shown escaped (\n, \x1b, \\): match them as shown.

EXAMPLES (from real investigations)

  Which syscalls of the benchmark are slow (sysdig's spectrogram question):
    proc.name=fio and fd.type=file and latency>1ms
  The slow calls, but not those made to wait (sleeps, polls, futexes, wait4, pipe reads):
    latency>10ms and not evt.waits
  Periodic flush stalls: fsyncs that block the database for tens of milliseconds:
    evt.type in (fsync, fdatasync, sync_file_range) and latency>=10ms
  A bimodal read latency (page cache hit or miss): only the misses:
    evt.type in (read, pread64) and fd.directory startswith /var/lib/postgresql and latency>100us
  A slow remote or dying disk: device time of writes on one disk:
    blk.dev=nvme0n1 and blk.op=write and blk.latency>5ms
  Requests that waited in the queue rather than on the device:
    evt.class=block and blk.queue>1ms
  Cache flushes issued by the filesystem journal (biosnoop's F and FUA rows):
    blk.op=flush or blk.flags contains preflush or blk.flags contains fua
  ioping's reads, within one time window of the capture:
    proc.name=ioping and io.dir=read and evt.time>=30s and evt.time<40s
  What keeps failing:
    evt.failed and not evt.errno in (EAGAIN, EINTR)
  Files opened that do not exist:
    evt.type=openat and evt.errno=ENOENT
  Large writes to anything but the log:
    evt.is_io_write and io.bytes>=1MiB and not fd.name glob '*.log'
"#;

#[cfg(test)]
mod tests {
    use super::*;

    /// Every example filter in the guide parses.
    #[test]
    fn help_examples_parse() {
        let mut checked = 0;
        let mut in_examples = false;
        for line in FILTER_HELP.lines() {
            if line.starts_with("EXAMPLES") {
                in_examples = true;
                continue;
            }
            if in_examples && line.starts_with("    ") {
                let src = line.trim();
                if let Err(e) = iocap_filter::Filter::parse(src) {
                    panic!("{}", e.render(src));
                }
                checked += 1;
            }
        }
        assert!(checked >= 10, "{checked}");
    }
}
