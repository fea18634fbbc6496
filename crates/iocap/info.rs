//! `iocap info`: what a capture holds, from its index alone.

use iocap_format::{Liveness, Reader};
use serde_json::json;
use std::io::Write;

use crate::{input, text, UsageError};

#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    capture: input::Capture,
    /// More captures: files, directories, quoted patterns (`'caps/*.cap'`).
    more: Vec<String>,
    #[command(flatten)]
    ring: input::Ring,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
}

pub fn run(args: Args) -> anyhow::Result<()> {
    if let Some(w) = args.more.iter().find(|w| !w.is_empty() && !input::names_captures(w)) {
        return Err(UsageError(format!(
            "{}: no such capture (info takes no filter)",
            iocap_format::escape::escape(w.as_bytes())
        ))
        .into());
    }
    let fleet = input::open_fleet(&args.capture, &args.more, &args.ring, true)?;
    let mut out = std::io::stdout().lock();
    if !fleet.is_several() {
        let s = Summary::of(&fleet.inputs[0].reader);
        if args.json {
            serde_json::to_writer_pretty(&mut out, &s.to_json())?;
            writeln!(out)?;
        } else {
            s.write_text(&mut out)?;
        }
        return Ok(());
    }
    let all: Vec<Summary> = fleet.inputs.iter().map(|i| Summary::of(&i.reader)).collect();
    // Escaped from the name's own bytes (one that is not UTF-8 shows as `\xff`, not as U+FFFD).
    let names: Vec<String> = fleet
        .paths
        .iter()
        .map(|p| iocap_format::escape::escape(p.as_os_str().as_encoded_bytes()))
        .collect();
    let total = Total::of(&all);
    if args.json {
        let captures: Vec<serde_json::Value> = all
            .iter()
            .zip(&names)
            .map(|(s, name)| {
                let mut v = s.to_json();
                v["capture"] = json!(name);
                v
            })
            .collect();
        let v = json!({ "captures": captures, "total": total.to_json() });
        serde_json::to_writer_pretty(&mut out, &v)?;
        writeln!(out)?;
    } else {
        for (s, name) in all.iter().zip(&names) {
            writeln!(out, "capture      {name}")?;
            s.write_text(&mut out)?;
            writeln!(out)?;
        }
        total.write_text(&mut out)?;
    }
    Ok(())
}

/// What several captures hold together: `info`'s last line (`total` in JSON).
struct Total {
    captures: usize,
    events: u64,
    syscalls: u64,
    blocks: u64,
    drops: u64,
    unseen: u64,
    unseen_by_disk: Vec<(String, u64)>,
    file_bytes: u64,
    /// The earliest start and the latest end, wall-clock ns.
    start: i128,
    end: i128,
    /// The hosts, each once, in the order first seen (escaped by the reader).
    hosts: Vec<String>,
    clean: bool,
}

impl Total {
    fn of(all: &[Summary]) -> Total {
        let mut hosts: Vec<String> = Vec::new();
        for s in all {
            if !hosts.contains(&s.meta.host) {
                hosts.push(s.meta.host.clone());
            }
        }
        let wall = |s: &Summary, t: u64| i128::from(t) + i128::from(s.boot_to_wall_ns);
        Total {
            captures: all.len(),
            events: all.iter().map(|s| s.events).sum(),
            syscalls: all.iter().map(|s| s.syscalls).sum(),
            blocks: all.iter().map(|s| s.blocks).sum(),
            // Saturating: each file's counts are what it claims.
            drops: all.iter().fold(0u64, |a, s| a.saturating_add(s.drops)),
            unseen: all.iter().fold(0u64, |a, s| a.saturating_add(s.unseen)),
            // Disks are named by their host: of one host's captures (a rotation's) only.
            unseen_by_disk: if hosts.len() == 1 {
                text::merge_disks(all.iter().map(|s| &s.unseen_by_disk[..]))
            } else {
                Vec::new()
            },
            file_bytes: all.iter().map(|s| s.file_bytes).sum(),
            start: all.iter().map(|s| wall(s, s.start_ns)).min().unwrap_or(0),
            end: all.iter().map(|s| wall(s, s.end_ns)).max().unwrap_or(0),
            hosts,
            clean: all.iter().all(|s| s.clean),
        }
    }

    fn to_json(&self) -> serde_json::Value {
        json!({
            "captures": self.captures,
            "events": self.events,
            "syscall_events": self.syscalls,
            "block_events": self.blocks,
            "drops": self.drops,
            "unseen_block_requests": self.unseen,
            "unseen_block_requests_by_disk": text::disks_json(&self.unseen_by_disk),
            "file_bytes": self.file_bytes,
            "start": rfc3339(self.start),
            "end": rfc3339(self.end),
            "duration_ns": u64::try_from(self.end - self.start).unwrap_or(0),
            "hosts": self.hosts,
            "clean": self.clean,
        })
    }

    fn write_text(&self, out: &mut impl Write) -> std::io::Result<()> {
        writeln!(
            out,
            "total        {} captures from {}: {} events ({} syscall, {} block), {} drops{}{}, {} bytes, {} .. {} ({}){}",
            self.captures,
            self.hosts.join(", "),
            self.events,
            self.syscalls,
            self.blocks,
            self.drops,
            text::unseen(self.unseen),
            text::by_disk(self.unseen_by_disk.iter().map(|(d, n)| (d.as_str(), *n))),
            self.file_bytes,
            rfc3339(self.start),
            rfc3339(self.end),
            fmt_duration(u64::try_from(self.end - self.start).unwrap_or(0)),
            if self.clean { "" } else { ", not all clean" }
        )
    }
}

/// The facts `info` prints, gathered once for both output forms.
struct Summary {
    events: u64,
    syscalls: u64,
    blocks: u64,
    drops: u64,
    /// Block requests issued whose completion never reached the recorder ([`Reader::unseen`]).
    unseen: u64,
    /// Their share of each disk (`text::unseen_disks`).
    unseen_by_disk: Vec<(String, u64)>,
    /// Whose events were dropped, most first, and how many drops are of no known process;
    /// `None`: the capture does not say (`text::drops_by_process`).
    dropped: Option<(Vec<text::Dropped>, u64)>,
    start_ns: u64,
    end_ns: u64,
    boot_to_wall_ns: i64,
    file_bytes: u64,
    chunks: usize,
    clean: bool,
    /// A recorder is still writing the file: not clean, and not damaged either.
    live: bool,
    recovery: Option<String>,
    version: (u16, u16),
    meta: iocap_format::Meta,
    procs: usize,
    files: usize,
    /// Every block device the capture names (header and device frames).
    devices: Vec<String>,
    stacks: Stacks,
    /// The containers its processes ran in (1.23), by full id.
    containers: Vec<Container>,
}

/// A container of the capture's table, as `info` lists it (strings escaped).
struct Container {
    runtime: &'static str,
    full_id: String,
    name: String,
    image: String,
    pod: String,
    namespace: String,
}

impl Container {
    /// Every container of `t`, each once (a joined reader's files each have its entry; the one
    /// with a name is kept), by name.
    fn all(t: &iocap_format::Tables) -> Vec<Container> {
        let mut v: Vec<Container> = t
            .containers()
            .iter()
            .map(|c| Container {
                runtime: c.runtime.name(),
                full_id: t.string(c.full_id).to_owned(),
                name: t.string(c.name).to_owned(),
                image: t.string(c.image).to_owned(),
                pod: t.string(c.pod_name).to_owned(),
                namespace: t.string(c.namespace).to_owned(),
            })
            .collect();
        v.sort_by(|a, b| (&a.full_id, a.name.is_empty()).cmp(&(&b.full_id, b.name.is_empty())));
        v.dedup_by(|later, kept| later.full_id == kept.full_id);
        v.sort_by(|a, b| (&a.name, &a.full_id).cmp(&(&b.name, &b.full_id)));
        v
    }

    /// `name (runtime 12-hex-id)`, or the id alone where the runtime did not name it.
    fn shown(&self) -> String {
        let id = iocap_format::container::short_id(&self.full_id);
        match self.name.as_str() {
            "" => format!("{id} ({})", self.runtime),
            name => format!("{name} ({} {id})", self.runtime),
        }
    }
}

/// Most containers `info` names on its line; the JSON lists every one.
const CONTAINERS_SHOWN: usize = 8;

/// The stack table (`record --stacks`): its stacks, their frames, and how many were named.
#[derive(Default)]
struct Stacks {
    user: usize,
    kernel: usize,
    /// Frames of the stacks, and of those with a function's name, user then kernel.
    frames: [(usize, usize); 2],
}

impl Stacks {
    fn of(t: &iocap_format::Tables) -> Stacks {
        let mut s = Stacks::default();
        for (_, st) in t.stacks() {
            let k = st.kind as usize;
            if st.kind == iocap_format::StackKind::User {
                s.user += 1;
            } else {
                s.kernel += 1;
            }
            s.frames[k].0 += st.frames.len();
            s.frames[k].1 += st.frames.iter().filter(|f| f.sym != 0).count();
        }
        s
    }
}

impl Summary {
    fn of<S: iocap_format::Source>(r: &Reader<S>) -> Summary {
        let chunks = r.chunks();
        let sum = |f: fn(&iocap_format::ChunkSummary) -> u64| chunks.iter().map(|c| f(&c.summary)).sum::<u64>();
        let start_ns = r.meta().start_ts;
        Summary {
            events: sum(|s| s.events),
            syscalls: sum(|s| s.syscalls),
            blocks: sum(|s| s.blocks),
            drops: r.drops(),
            unseen: r.unseen(),
            unseen_by_disk: text::unseen_disks(r),
            dropped: text::drops_by_process(r),
            start_ns,
            end_ns: r.stop_ts().max(start_ns),
            boot_to_wall_ns: r.meta().boot_to_wall_ns,
            file_bytes: r.file_len(),
            chunks: chunks.len(),
            clean: r.is_clean(),
            live: r.liveness() == Liveness::Live,
            recovery: r.recovery().map(str::to_owned),
            version: r.version(),
            meta: r.meta().clone(),
            procs: r.tables().procs().len(),
            files: r.tables().file_count(),
            devices: r.tables().devices().iter().map(|d| d.name.clone()).collect(),
            stacks: Stacks::of(r.tables()),
            containers: Container::all(r.tables()),
        }
    }

    fn wall(&self, boot_ns: u64) -> String {
        rfc3339(i128::from(boot_ns) + i128::from(self.boot_to_wall_ns))
    }

    fn to_json(&self) -> serde_json::Value {
        json!({
            "events": self.events,
            "syscall_events": self.syscalls,
            "block_events": self.blocks,
            "drops": self.drops,
            "unseen_block_requests": self.unseen,
            "unseen_block_requests_by_disk": text::disks_json(&self.unseen_by_disk),
            // null: not recorded (a recorder before format 1.22 that dropped events).
            "drops_by_process": self.dropped.as_ref().map(|(p, _)| text::dropped_json(p)),
            "drops_of_no_known_process": self.dropped.as_ref().map(|(_, n)| n),
            "start": self.wall(self.start_ns),
            "end": self.wall(self.end_ns),
            "duration_ns": self.end_ns - self.start_ns,
            "file_bytes": self.file_bytes,
            "bytes_per_event": (self.events > 0).then(|| self.file_bytes as f64 / self.events as f64),
            "chunks": self.chunks,
            "clean": self.clean,
            "live": self.live,
            "recovery": self.recovery,
            "format_version": format!("{}.{}", self.version.0, self.version.1),
            "iocap_version": self.meta.iocap_version,
            "host": self.meta.host,
            "kernel": self.meta.kernel,
            "arch": self.meta.arch,
            "cpus": self.meta.cpus,
            "command_line": self.meta.command_line,
            "filter": self.meta.filter,
            "missing": self.meta.missing,
            "kept": self.meta.kept,
            "stacks_min_ns": self.meta.stacks_min_ns,
            "processes": self.procs,
            "files": self.files,
            "devices": self.devices,
            "containers": self.containers.iter().map(|c| json!({
                "id": iocap_format::container::short_id(&c.full_id),
                "full_id": c.full_id,
                "runtime": c.runtime,
                "name": c.name,
                "image": c.image,
                "k8s_pod_name": c.pod,
                "k8s_ns_name": c.namespace,
            })).collect::<Vec<_>>(),
            "stacks": {
                "user": self.stacks.user,
                "kernel": self.stacks.kernel,
                "user_frames": self.stacks.frames[0].0,
                "user_frames_named": self.stacks.frames[0].1,
                "kernel_frames": self.stacks.frames[1].0,
                "kernel_frames_named": self.stacks.frames[1].1,
            },
        })
    }

    fn write_text(&self, out: &mut impl Write) -> std::io::Result<()> {
        let m = &self.meta;
        writeln!(
            out,
            "events       {} ({} syscall, {} block)",
            self.events, self.syscalls, self.blocks
        )?;
        writeln!(
            out,
            "drops        {}{}{}",
            self.drops,
            text::unseen(self.unseen),
            text::by_disk(self.unseen_by_disk.iter().map(|(d, n)| (d.as_str(), *n)))
        )?;
        if self.drops > 0 {
            match &self.dropped {
                Some((procs, unplaced)) => {
                    writeln!(
                        out,
                        "dropped of   {}",
                        text::dropped_text(procs, *unplaced, TOP_DROPPED)
                    )?;
                }
                None => writeln!(
                    out,
                    "dropped of   not recorded (by process since format 1.22; this is {}.{})",
                    self.version.0, self.version.1
                )?,
            }
        }
        writeln!(out, "start        {}", self.wall(self.start_ns))?;
        writeln!(out, "end          {}", self.wall(self.end_ns))?;
        writeln!(out, "duration     {}", fmt_duration(self.end_ns - self.start_ns))?;
        let per_event = if self.events > 0 {
            format!(", {:.2} bytes/event", self.file_bytes as f64 / self.events as f64)
        } else {
            String::new()
        };
        writeln!(
            out,
            "file         {} bytes in {} chunks{per_event}",
            self.file_bytes, self.chunks
        )?;
        match (&self.recovery, self.live) {
            (None, true) => writeln!(out, "clean        no: being recorded (read up to its last flush)")?,
            (Some(why), true) => writeln!(out, "clean        no: being recorded, damaged ({why})")?,
            (None, false) => writeln!(out, "clean        yes")?,
            (Some(why), false) => writeln!(out, "clean        no: recovered by scanning ({why})")?,
        }
        // Meta's strings were escaped by the reader as it decoded the header.
        writeln!(
            out,
            "format       {}.{} (written by iocap {})",
            self.version.0, self.version.1, m.iocap_version
        )?;
        writeln!(
            out,
            "host         {} ({}, {} CPUs, {})",
            m.host, m.kernel, m.cpus, m.arch
        )?;
        writeln!(out, "command      {}", m.command_line.join(" "))?;
        if let Some(f) = &m.filter {
            writeln!(out, "filter       {f}")?;
        }
        // What the recording's kernel lacked, and so what the capture lacks.
        for what in &m.missing {
            writeln!(out, "missing      {what}")?;
        }
        // What a recording narrowed to some processes kept of others, and why.
        for what in &m.kept {
            writeln!(out, "also kept    {what}")?;
        }
        writeln!(
            out,
            "tables       {} processes, {} files, {} devices",
            self.procs,
            self.files,
            self.devices.len()
        )?;
        if !self.containers.is_empty() {
            let shown: Vec<String> = self
                .containers
                .iter()
                .take(CONTAINERS_SHOWN)
                .map(Container::shown)
                .collect();
            let more = self.containers.len().saturating_sub(CONTAINERS_SHOWN);
            writeln!(
                out,
                "containers   {}: {}{}",
                self.containers.len(),
                shown.join(", "),
                if more > 0 {
                    format!(" and {more} more (--json lists them)")
                } else {
                    String::new()
                }
            )?;
        }
        let s = &self.stacks;
        if let Some(min) = m.stacks_min_ns {
            writeln!(
                out,
                "stacks of   calls at least {} slow: stack.user, stack.kernel, `iocap flame`",
                iocap_analysis::units::fmt_ns(min)
            )?;
        }
        if s.user + s.kernel > 0 {
            let named = |(n, named): (usize, usize)| match n {
                0 => "none".to_owned(),
                n => format!("{named} of {n} frames named ({:.0}%)", 100.0 * named as f64 / n as f64),
            };
            writeln!(
                out,
                "stacks       {} user: {}; {} kernel: {}",
                s.user,
                named(s.frames[0]),
                s.kernel,
                named(s.frames[1])
            )?;
        }
        Ok(())
    }
}

/// Processes `info` names on its `dropped of` line, most drops first (JSON lists them all).
const TOP_DROPPED: usize = 5;

/// Human duration: `1.500s`, `250.000ms`, `3m 2.000s`.
fn fmt_duration(ns: u64) -> String {
    if ns >= 60_000_000_000 {
        format!("{}m {:.3}s", ns / 60_000_000_000, (ns % 60_000_000_000) as f64 / 1e9)
    } else if ns >= 1_000_000_000 {
        format!("{:.3}s", ns as f64 / 1e9)
    } else {
        format!("{:.3}ms", ns as f64 / 1e6)
    }
}

/// RFC 3339 UTC time with nanoseconds from ns since the Unix epoch (civil-from-days, Howard Hinnant).
pub fn rfc3339(epoch_ns: i128) -> String {
    let secs = epoch_ns.div_euclid(1_000_000_000);
    let nanos = epoch_ns.rem_euclid(1_000_000_000);
    let days = secs.div_euclid(86_400);
    let sod = secs.rem_euclid(86_400);
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i128::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{nanos:09}Z",
        sod / 3600,
        sod % 3600 / 60,
        sod % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3339_known_instants() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00.000000000Z");
        assert_eq!(rfc3339(1_700_000_000_123_456_789), "2023-11-14T22:13:20.123456789Z");
        assert_eq!(rfc3339(951_782_400_000_000_000), "2000-02-29T00:00:00.000000000Z");
        assert_eq!(rfc3339(-1), "1969-12-31T23:59:59.999999999Z");
    }
}
