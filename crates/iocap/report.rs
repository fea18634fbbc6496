//! `iocap report`: how many events matched, their latency distribution (biolatency-style
//! histogram, percentiles), bytes, and optionally the top groups by a field.

use std::io::Write;

use iocap_analysis::group::{Feed, Slots};
use iocap_analysis::rollups::{self, RollupFilter};
use iocap_analysis::scan::ScanStats;
use iocap_analysis::units::{fmt_bytes, fmt_ns};
use iocap_analysis::{FieldGroups, GroupBy, LatencyHist, Measure, Scan};
use iocap_filter::fields::{self, FieldInfo};
use iocap_filter::Bitmap;
use iocap_format::{cell_parts, log2_bucket_range, Col, ColSet, Columns, Rollup};
use serde_json::json;

use crate::input;
use crate::text;

#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    sel: input::Selection,
    /// Split the matching events by this field and show the top groups.
    #[arg(long, value_name = "FIELD")]
    by: Option<String>,
    /// How many groups `--by` shows.
    #[arg(long, default_value_t = 20, value_name = "N")]
    top: usize,
    /// What the histogram and percentiles are of: any duration field (`iocap fields`), for
    /// the events that have it: `blk.queue` (block requests' time before issue), `blk.total`,
    /// `disk.time`, `wait.time`, `wait.journal` ... The default is every event's latency.
    #[arg(long, value_name = "FIELD", default_value = "latency")]
    measure: String,
    /// Log-linear histogram (16 rows per power of two) instead of log2 rows.
    #[arg(long)]
    fine: bool,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
    /// Also say where the matching calls' latency went: on a CPU, in the run queue, blocked by
    /// reason (wait.disk, wait.journal ...), who woke them, and the chains (call, reason, waker).
    #[arg(long)]
    why: bool,
}

/// What `report` accumulates per thread.
struct Acc<'r> {
    hist: LatencyHist,
    bytes: u64,
    groups: Option<FieldGroups<'r>>,
    /// A chunk's measured values, when they are not its latency column.
    measured: Vec<u64>,
}

impl<'r> Acc<'r> {
    fn merge(&mut self, o: Acc<'r>) {
        self.hist.merge(&o.hist);
        self.bytes = self.bytes.saturating_add(o.bytes);
        if let (Some(mine), Some(theirs)) = (&mut self.groups, o.groups) {
            mine.merge(theirs);
        }
    }
}

/// The per-event loop: the totals, and each event's group (keyed as
/// [`FieldGroups::feed`] decides, never by a value printed per event).
struct Totals<'a> {
    cols: &'a Columns,
    /// The measured value of each row ([`Measure::values`]).
    vals: &'a [u64],
    bits: &'a Bitmap,
    hist: &'a mut LatencyHist,
    bytes: &'a mut u64,
}

impl Feed for Totals<'_> {
    type Out = ();

    fn feed<K: Fn(usize) -> u64>(self, key: K, groups: &mut Slots) {
        let c = self.cols;
        for i in self.bits.iter_ones() {
            let (lat, bytes) = (self.vals[i], c.bytes[i]);
            self.hist.add(lat);
            *self.bytes = self.bytes.saturating_add(bytes);
            let g = groups.get(key(i), || c.event(i));
            g.hist.add(lat);
            g.bytes = g.bytes.saturating_add(bytes);
        }
    }
}

/// Fold the keys of `rollup` that `bits` keeps into `acc` (histogram from their cells, exact
/// min, max, sum and bytes; and their groups); returns the events taken.
fn fold_rollup(acc: &mut Acc<'_>, rollup: &Rollup, bits: &Bitmap) -> u64 {
    let Acc {
        hist, bytes, groups, ..
    } = acc;
    let mut taken = 0;
    let mut add = |k: usize, hist: &mut LatencyHist, bytes: &mut u64| {
        if let Some(t) = rollup.totals.get(k) {
            let buckets = rollup.cells_of(k).iter().map(|&(c, n)| (cell_parts(c).0, u64::from(n)));
            hist.add_buckets(buckets, t.min, t.max, t.sum);
            *bytes = bytes.saturating_add(t.bytes);
        }
    };
    for k in bits.iter_ones() {
        add(k, hist, bytes);
        taken += rollup.totals.get(k).map_or(0, |t| t.count);
    }
    if let Some(groups) = groups {
        groups.feed(
            &rollup.keys,
            bits,
            RollupGroups {
                rollup,
                bits,
                add: &mut add,
            },
        );
    }
    taken
}

/// The keys of a rollup into their groups ([`fold_rollup`]).
struct RollupGroups<'a, F: FnMut(usize, &mut LatencyHist, &mut u64)> {
    rollup: &'a Rollup,
    bits: &'a Bitmap,
    add: &'a mut F,
}

impl<F: FnMut(usize, &mut LatencyHist, &mut u64)> Feed for RollupGroups<'_, F> {
    type Out = ();

    fn feed<K: Fn(usize) -> u64>(self, key: K, groups: &mut Slots) {
        for k in self.bits.iter_ones() {
            let g = groups.get(key(k), || self.rollup.keys.event(k));
            (self.add)(k, &mut g.hist, &mut g.bytes);
        }
    }
}

pub fn run(args: Args) -> anyhow::Result<()> {
    let by = args.by.as_deref().map(input::field_arg).transpose()?;
    let measure = input::measure_arg(&args.measure)?;
    let mut fleet = args.sel.open(true)?;
    fleet.measure(measure)?;
    // Saturating: each file's counts are what it claims.
    let unseen = fleet
        .inputs
        .iter()
        .fold(0u64, |a, i| a.saturating_add(i.reader.unseen()));
    // Disks are named by their host: of one host's captures (a rotation's) only.
    let unseen_by_disk = if fleet.hosts().len() == 1 {
        let each: Vec<_> = (fleet.inputs.iter())
            .map(|i| crate::text::unseen_disks(&i.reader))
            .collect();
        crate::text::merge_disks(each.iter().map(Vec::as_slice))
    } else {
        Vec::new()
    };
    let (tally, drops) = if fleet.is_several() {
        let mut all = scan_tally(&fleet.inputs[0], by, measure)?;
        for input in &fleet.inputs[1..] {
            all.merge(scan_tally(input, by, measure)?);
        }
        if all.stats.matched == 0 {
            fleet.say_nothing_matched("events");
        }
        (
            all,
            fleet
                .inputs
                .iter()
                .fold(0u64, |a, i| a.saturating_add(i.reader.drops())),
        )
    } else {
        let input = &fleet.inputs[0];
        (tally(input, by, measure)?, input.reader.drops())
    };
    let named = named_drops(&fleet.inputs);
    let report = Report {
        stats: tally.stats,
        drops,
        named,
        unseen,
        unseen_by_disk,
        hist: tally.hist,
        bytes: tally.bytes,
        groups: by.zip(tally.groups).map(|(f, g)| (f.name, g)),
        top: args.top,
        fine: args.fine,
        measure,
        filter: fleet.inputs[0].src.clone(),
        several: fleet.is_several().then(|| {
            (
                fleet.inputs.len(),
                fleet.hosts().into_iter().map(str::to_owned).collect(),
            )
        }),
    };
    let why = if args.why {
        let mut all = crate::why::Why::default();
        for input in &fleet.inputs {
            all.merge(crate::why::Why::scan(input)?);
        }
        Some(all)
    } else {
        None
    };
    let mut out = std::io::stdout().lock();
    if args.json {
        let mut v = report.to_json();
        if let Some(why) = &why {
            v["why"] = why.to_json(args.top);
        }
        serde_json::to_writer_pretty(&mut out, &v)?;
        writeln!(out)?;
    } else {
        report.write_text(&mut out)?;
        if let Some(why) = &why {
            why.write_text(&mut out, args.top)?;
        }
    }
    Ok(())
}

/// What one scan of a capture gives `report` (and each side of `compare`): the matching events'
/// latency distribution and bytes, and with a field, the same per group.
pub struct Tally {
    /// Events scanned and matched.
    pub stats: ScanStats,
    /// Latency of every matching event.
    pub hist: LatencyHist,
    /// Bytes of every matching event.
    pub bytes: u64,
    /// The matching events split by the field asked for, keyed by its value as printed (`<NA>`
    /// for an event without the field).
    pub groups: Option<GroupBy<String>>,
}

impl Tally {
    /// Add another capture's tally (the same filter and field): exact, as every part is
    /// mergeable and groups are keyed by printed value.
    pub fn merge(&mut self, other: Tally) {
        self.stats.total += other.stats.total;
        self.stats.matched += other.stats.matched;
        self.hist.merge(&other.hist);
        self.bytes = self.bytes.saturating_add(other.bytes);
        if let (Some(mine), Some(theirs)) = (&mut self.groups, other.groups) {
            mine.merge(theirs);
        }
    }
}

/// Scan `input` once: its matching events' totals, their histogram of `measure`, split `by` a
/// field if one is given. Says on stderr when the filter matched nothing.
pub fn tally(input: &input::Input, by: Option<&'static FieldInfo>, measure: Measure) -> anyhow::Result<Tally> {
    let t = scan_tally(input, by, measure)?;
    if t.stats.matched == 0 {
        input.say_nothing_matched("events");
    }
    Ok(t)
}

/// [`tally`], saying nothing.
fn scan_tally(input: &input::Input, by: Option<&'static FieldInfo>, measure: Measure) -> anyhow::Result<Tally> {
    Ok(scan_tally_with(input, by, measure, true)?.0)
}

/// [`scan_tally`], taking the chunks it can from their rollups when `use_rollups` is set (and
/// the measure is latency, all a rollup's cells hold); also returns the events so taken.
fn scan_tally_with(
    input: &input::Input,
    by: Option<&'static FieldInfo>,
    measure: Measure,
    use_rollups: bool,
) -> anyhow::Result<(Tally, u64)> {
    let r = &input.reader;
    // Values print on the timeline the capture is read on (`evt.time`), but for the fields of
    // the header, which are the capture's own.
    let timed = input.timed_meta();
    let meta = match by {
        Some(f) if f.id.is_per_capture() => r.meta(),
        _ => &*timed,
    };
    let tables = r.tables();
    let want = measure
        .columns()
        .with(Col::Bytes)
        .union(by.map_or(ColSet::NONE, FieldGroups::columns));
    let init = || Acc {
        hist: LatencyHist::new(),
        bytes: 0,
        groups: by.map(|f| FieldGroups::new(f, meta, tables)),
        measured: Vec::new(),
    };
    let merge = Acc::merge;
    let threads = input::threads(r);
    // The chunks whose rollup answers (the filter, once each chunk's summary has decided what
    // it can, reads only the rollup's keys, and so does the field), taken from it; the others
    // scanned. A chunk the summary rules out is left to the scan, which skips it.
    let all: Vec<usize> = (0..r.chunks().len()).collect();
    let rollups_answer =
        use_rollups && measure.is_latency() && by.is_none_or(|f| rollups::within_keys(FieldGroups::columns(f)));
    let plan = |i: usize| {
        let s = &r.chunks().get(i)?.summary;
        // The listing says the rollup's keys lack the field (the file, without a file
        // rollup): the columns answer.
        if !rollups_answer || !by.is_none_or(|f| r.rollup_may_hold(i, FieldGroups::columns(f))) {
            return None;
        }
        match RollupFilter::of_chunk(Some(&input.filter), r, i)? {
            f @ (RollupFilter::Keys(_) | RollupFilter::Cells(_)) if !f.may_match(s) => None,
            f => Some(f),
        }
    };
    let (folded, rest) = rollups::fold_then_rest(
        r,
        &all,
        plan,
        threads,
        &|| false,
        &|| (init(), 0u64),
        |(acc, n), _, f, rollup, bits| {
            // A 1.12 rollup has no bytes, one before 1.16 no pids to group by: its
            // chunk's columns answer.
            if !rollup.with_bytes || !by.is_none_or(|f| rollup.holds(FieldGroups::columns(f))) {
                return false;
            }
            let Some(kept) = f.apply(rollup, bits) else {
                return false;
            };
            *n += fold_rollup(acc, &kept, bits);
            true
        },
        |(a, n), (b, m)| {
            merge(a, b);
            *n += m;
        },
    )
    .ok_or_else(|| anyhow::anyhow!("reading the rollups was cancelled"))?;
    let (mut acc, rolled) = folded.unwrap_or_else(|| (init(), 0));
    let (scanned, mut stats) = Scan::new(r, Some(&input.filter))
        .columns(want)
        .threads(threads)
        .chunks(&rest)
        .run(
            init,
            |acc: &mut Acc, _, cols, bits| {
                let vals = measure.values(cols, &mut acc.measured);
                match &mut acc.groups {
                    Some(groups) => groups.feed(
                        cols,
                        bits,
                        Totals {
                            cols,
                            vals,
                            bits,
                            hist: &mut acc.hist,
                            bytes: &mut acc.bytes,
                        },
                    ),
                    None => {
                        for i in bits.iter_ones() {
                            acc.hist.add(vals[i]);
                            acc.bytes = acc.bytes.saturating_add(cols.bytes[i]);
                        }
                    }
                }
            },
            merge,
        )?
        .ok_or_else(|| anyhow::anyhow!("the scan was cancelled"))?;
    merge(&mut acc, scanned);
    stats.matched += rolled;
    // An event without the field is counted under `<NA>`, apart from an empty value.
    let na = |v: &fields::Value| {
        if v.is_absent() {
            "<NA>".to_string()
        } else {
            v.to_string()
        }
    };
    let tally = Tally {
        stats,
        hist: acc.hist,
        bytes: acc.bytes,
        groups: acc.groups.map(|g| g.finish(na)),
    };
    Ok((tally, rolled))
}

struct Report {
    stats: ScanStats,
    drops: u64,
    /// The drops of the processes the filter names; `None` when it names none.
    named: Option<NamedDrops>,
    /// Block requests issued whose completion never reached the recorder (not in `total`).
    unseen: u64,
    /// Their share of each disk (`text::unseen_disks`).
    unseen_by_disk: Vec<(String, u64)>,
    hist: LatencyHist,
    bytes: u64,
    groups: Option<(&'static str, GroupBy<String>)>,
    top: usize,
    fine: bool,
    /// What the histogram is of.
    measure: Measure,
    filter: String,
    /// Read from several captures: how many, and their hosts (escaped by the reader).
    several: Option<(usize, Vec<String>)>,
}

/// The drops of the processes a filter names ([`iocap_filter::Filter::processes`]): what no
/// matched event can say, since the dropped ones are not in the capture.
struct NamedDrops {
    /// The processes, by pid, each once with the name of its first entry (escaped by the
    /// reader).
    procs: Vec<(u32, String)>,
    /// Their events dropped; `None` when a capture does not say whose events were dropped.
    dropped: Option<u64>,
    /// Every event dropped.
    all: u64,
}

/// [`NamedDrops`] of the captures read, for the filter each was compiled with: `None` when the
/// filter narrows no capture's processes (it names no process field, or every process may
/// match it).
fn named_drops(inputs: &[input::Input]) -> Option<NamedDrops> {
    let mut named = NamedDrops {
        procs: Vec::new(),
        dropped: Some(0),
        all: 0,
    };
    for i in inputs {
        let r = &i.reader;
        let ids = i.parsed.processes(r.meta(), r.tables())?;
        let d = iocap_analysis::drops::of_processes(r, &ids, 0, u64::MAX);
        named.all = named.all.saturating_add(d.all);
        named.dropped = named.dropped.zip(d.of_processes).map(|(a, b)| a.saturating_add(b));
        for p in ids.iter().filter_map(|&id| r.tables().proc(id)) {
            if !named.procs.iter().any(|(pid, _)| *pid == p.pid) {
                named.procs.push((p.pid, r.tables().string(p.name).to_owned()));
            }
        }
    }
    Some(named)
}

impl NamedDrops {
    /// `dropped while recording: 102 of this process's events (445287 in all)`.
    fn text(&self) -> String {
        let whose = match &self.procs[..] {
            [] => "the matching processes'".to_owned(),
            [_] => "this process's".to_owned(),
            many => format!("these {} processes'", many.len()),
        };
        match self.dropped {
            Some(n) => format!("dropped while recording: {n} of {whose} events ({} in all)", self.all),
            None => format!(
                "dropped while recording: {} in all, not recorded by process (the recorder predates format 1.22)",
                self.all
            ),
        }
    }

    fn to_json(&self) -> serde_json::Value {
        json!({
            "processes": self.procs.iter().map(|(pid, name)| json!({ "pid": pid, "name": name })).collect::<Vec<_>>(),
            "dropped": self.dropped,
            "dropped_in_all": self.all,
        })
    }
}

/// Histogram rows as `[lo, hi)` ns and a count: log2 rows from the first to the last non-empty
/// one (as biolatency), or the non-empty log-linear buckets with `fine`.
pub fn histogram_rows(h: &LatencyHist, fine: bool) -> Vec<(u64, u64, u64)> {
    if fine {
        return h.buckets().map(|(lo, hi, c)| (lo, hi.saturating_add(1), c)).collect();
    }
    let log2 = h.log2();
    let Some(first) = log2.iter().position(|&c| c != 0) else {
        return Vec::new();
    };
    let last = log2.iter().rposition(|&c| c != 0).unwrap_or(first);
    (first..=last)
        .map(|b| {
            let (lo, hi) = log2_bucket_range(b);
            (lo, hi, log2[b])
        })
        .collect()
}

impl Report {
    fn percentiles(&self) -> [(&'static str, &'static str, u64); 4] {
        let p = |x| self.hist.percentile(x);
        [
            ("p50", "p50", p(50.0)),
            ("p90", "p90", p(90.0)),
            ("p99", "p99", p(99.0)),
            ("p99.9", "p999", p(99.9)),
        ]
    }

    fn to_json(&self) -> serde_json::Value {
        let h = &self.hist;
        let latency = if h.is_empty() {
            serde_json::Value::Null
        } else {
            let mut m = serde_json::Map::new();
            m.insert("min".into(), json!(h.min()));
            for (_, key, v) in self.percentiles() {
                m.insert(key.into(), json!(v));
            }
            m.insert("max".into(), json!(h.max()));
            m.insert("mean".into(), json!(h.mean()));
            serde_json::Value::Object(m)
        };
        let histogram: Vec<[u64; 3]> = histogram_rows(h, self.fine)
            .into_iter()
            .map(|(lo, hi, c)| [lo, hi, c])
            .collect();
        let mut v = json!({
            "filter": self.filter,
            "matched": self.stats.matched,
            "total": self.stats.total,
            "drops": self.drops,
            "unseen_block_requests": self.unseen,
            "unseen_block_requests_by_disk": crate::text::disks_json(&self.unseen_by_disk),
            "bytes": self.bytes,
            "measure": self.measure.field(),
            "histogram_kind": if self.fine { "log-linear" } else { "log2" },
            "histogram": histogram,
        });
        // Figures of another measure are not the latency's: they go by another key.
        let key = if self.measure.is_latency() {
            "latency_ns"
        } else {
            "measure_ns"
        };
        v[key] = latency;
        if let Some((n, hosts)) = &self.several {
            v["captures"] = json!(n);
            v["hosts"] = json!(hosts);
        }
        if let Some(named) = &self.named {
            v["process_drops"] = named.to_json();
        }
        if let Some((field, groups)) = &self.groups {
            v["by"] = json!(field);
            v["group_count"] = json!(groups.len());
            v["groups"] = groups
                .top(self.top)
                .into_iter()
                .map(|(k, g)| {
                    json!({
                        "key": k,
                        "count": g.count(),
                        "bytes": g.bytes,
                        "p50_ns": g.hist.percentile(50.0),
                        "p99_ns": g.hist.percentile(99.0),
                        "max_ns": g.hist.max(),
                    })
                })
                .collect();
        }
        v
    }

    fn write_text(&self, out: &mut impl Write) -> std::io::Result<()> {
        let st = &self.stats;
        let pct = if st.total > 0 {
            100.0 * st.matched as f64 / st.total as f64
        } else {
            0.0
        };
        if let Some((n, hosts)) = &self.several {
            writeln!(out, "captures {n} from {}", hosts.join(", "))?;
        }
        if !self.filter.is_empty() {
            writeln!(out, "filter   {}", iocap_format::escape::escape(self.filter.as_bytes()))?;
        }
        writeln!(
            out,
            "matched  {} of {} events ({pct:.1}%), {} dropped while recording{}{}",
            st.matched,
            st.total,
            self.drops,
            crate::text::unseen(self.unseen),
            crate::text::by_disk(self.unseen_by_disk.iter().map(|(d, n)| (d.as_str(), *n)))
        )?;
        // Said when there is something to say: a capture that dropped nothing says 0 above.
        if let Some(named) = self.named.as_ref().filter(|n| n.all > 0) {
            writeln!(out, "         {}", named.text())?;
        }
        let h = &self.hist;
        if h.is_empty() {
            return Ok(());
        }
        let what = self.measure.field();
        write!(out, "{what:<8} min {}", fmt_ns(h.min()))?;
        for (name, _, v) in self.percentiles() {
            write!(out, "  {name} {}", fmt_ns(v))?;
        }
        writeln!(
            out,
            "  max {}  mean {}",
            fmt_ns(h.max()),
            fmt_ns(h.mean().round() as u64)
        )?;
        writeln!(out, "bytes    {} ({})", fmt_bytes(self.bytes), self.bytes)?;
        writeln!(out)?;
        let rows = histogram_rows(h, self.fine);
        let max = rows.iter().map(|r| r.2).max().unwrap_or(0);
        writeln!(out, "{what:>21} : {:<9} distribution", "count")?;
        for (lo, hi, c) in rows {
            let hi = if hi == u64::MAX { "max".to_string() } else { fmt_ns(hi) };
            writeln!(
                out,
                "{:>9} -> {:<8} : {:<9} |{}|",
                fmt_ns(lo),
                hi,
                c,
                text::bar(c, max, 40)
            )?;
        }
        if let Some((field, groups)) = &self.groups {
            writeln!(out)?;
            let top = groups.top(self.top);
            let w = top
                .iter()
                .map(|(k, _)| k.chars().count())
                .max()
                .unwrap_or(0)
                .clamp(field.len(), 48);
            writeln!(
                out,
                "{field:<w$}  {:>9}  {:>9}  {:>9}  {:>9}  {:>10}",
                "count", "p50", "p99", "max", "bytes"
            )?;
            for (k, g) in top {
                writeln!(
                    out,
                    "{:<w$}  {:>9}  {:>9}  {:>9}  {:>9}  {:>10}",
                    text::truncate(k, 48),
                    g.count(),
                    fmt_ns(g.hist.percentile(50.0)),
                    fmt_ns(g.hist.percentile(99.0)),
                    fmt_ns(g.hist.max()),
                    fmt_bytes(g.bytes)
                )?;
            }
            if groups.len() > self.top {
                writeln!(out, "({} more groups; --top N shows more)", groups.len() - self.top)?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use iocap_analysis::Group;
    use iocap_format::{Class, Event, FdType};
    use iocap_testkit::{add_file, add_proc, block, create, meta, Rng};

    use super::*;

    const START: u64 = 1_000_000_000;

    /// 60,000 events over 6 s in chunks of 1,000: calls of three processes (reads, writes and
    /// fsyncs on a file each, wide latencies, bytes) and block requests. From 2 s to 3 s, dd's
    /// calls go to 20 more files: too many for those chunks' rollups to hold the files.
    fn capture(path: &Path) {
        let mut w = create(path, &meta(START), 1_000, 3);
        let procs = [
            (add_proc(&mut w, 10, 1, b"postgres"), 10),
            (add_proc(&mut w, 11, 1, b"dd"), 11),
            (add_proc(&mut w, 12, 1, b"fio"), 12),
        ];
        let files: Vec<u32> = procs
            .iter()
            .map(|&(_, pid)| add_file(&mut w, pid, 3, FdType::File, b"/data/table", 0))
            .collect();
        let many: Vec<(i32, u32)> = (4..24)
            .map(|fd| {
                (
                    fd,
                    add_file(&mut w, 11, fd, FdType::File, format!("/data/dd/{fd}").as_bytes(), 0),
                )
            })
            .collect();
        let mut rng = Rng::new(19);
        for i in 0..60_000u64 {
            let ts = START + i * 100_000;
            let latency = 1 + (rng.next_u64() % 24).pow(6) + rng.below(1_000);
            let p = rng.below(3) as usize;
            let (proc, pid) = procs[p];
            let e = if rng.below(5) == 0 {
                block(ts, latency, pid, proc, 0x0800_0000, 4096 * (1 + rng.below(8)))
            } else {
                let nr = *rng.pick(&[0u32, 1, 74]);
                let (fd, file) = match p == 1 && (20_000..30_000).contains(&i) {
                    true => *rng.pick(&many),
                    false => (3, files[p]),
                };
                Event {
                    class: Class::Syscall,
                    ts,
                    latency,
                    pid,
                    tid: pid,
                    proc,
                    nr,
                    fd,
                    file,
                    bytes: if nr == 74 { 0 } else { rng.below(65_536) },
                    ..Event::default()
                }
            };
            w.push(&e).unwrap();
        }
        w.finish(START + 6_000_000_000).unwrap();
    }

    fn open(path: &Path, filter: &str) -> input::Input {
        let capture = input::Capture {
            file: path.to_path_buf(),
            save: None,
        };
        let words: Vec<String> = filter.split_whitespace().map(str::to_owned).collect();
        input::open(&capture, &words, true).unwrap()
    }

    /// Every figure `report` prints: matched, the histogram, bytes, and each group's.
    fn figures(t: &Tally) -> (u64, LatencyHist, u64, Vec<(String, Group)>) {
        let groups = t.groups.as_ref().map_or(Vec::new(), |g| {
            let mut v: Vec<(String, Group)> = g.iter().map(|(k, g)| (k.clone(), g.clone())).collect();
            v.sort_by(|a, b| a.0.cmp(&b.0));
            v
        });
        (t.stats.matched, t.hist.clone(), t.bytes, groups)
    }

    #[test]
    fn rollups_answer_exactly_what_the_columns_do() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.cap");
        capture(&path);
        let field = |name: &str| fields::lookup(name).unwrap();
        // How many of the matching events the rollups answer.
        #[derive(Debug, PartialEq)]
        enum Rolled {
            None,
            Some,
            All,
        }
        // (filter, field, how many matches the rollups answer)
        let cases = [
            ("", None, Rolled::All),
            ("proc.name=postgres", None, Rolled::All),
            ("evt.type=read or proc.name=dd", Some("proc.name"), Rolled::All),
            // Chunks across the window's edges are read.
            ("evt.time>=1.55s and evt.time<4.2s", Some("evt.type"), Rolled::Some),
            ("evt.class=block and evt.time>2s", Some("proc.name"), Rolled::Some),
            ("not proc.name=fio and evt.time<5s", Some("evt.class"), Rolled::All),
            // Latency bounds on cell bounds (decades, the other column bounds, the buckets'),
            // or in cells none of this capture's latencies crosses (1 + n^6 + [0, 1000) ns):
            // the cells' own totals answer.
            ("latency>1ms and proc.name=postgres", None, Rolled::All),
            ("latency>=10us", Some("proc.name"), Rolled::All),
            ("not latency<100us or proc.name=dd", Some("evt.type"), Rolled::All),
            (
                "latency>500us and latency<=2.51ms and evt.time<4s",
                Some("evt.class"),
                Rolled::All,
            ),
            // 532 µs lies among the latencies from 9^6 ns of a key of every chunk: the chunks
            // are read.
            ("latency>532us", None, Rolled::None),
            // Reads a column besides the keys: the chunks' columns answer.
            ("fd.num=3", None, Rolled::None),
            ("latency>1ms and fd.num=3", None, Rolled::None),
            // Since 1.17 the file is a key's, in a chunk of few files: those of 2 s to 3 s,
            // of many, are read.
            ("", Some("fd.name"), Rolled::Some),
            ("fd.name=/data/table and latency>1ms", Some("proc.name"), Rolled::Some),
            ("fd.type=file and evt.time<2s", Some("fd.directory"), Rolled::All),
            ("fd.directory=/data/dd", None, Rolled::None),
            // proc.pid is each event's pid column, not its process entry's: since 1.16 a
            // key's.
            ("proc.name=dd", Some("proc.pid"), Rolled::All),
            ("proc.pid!=11 and latency>1ms", Some("proc.pid"), Rolled::All),
        ];
        for (filter, by, rolls) in cases {
            let input = open(&path, filter);
            let by = by.map(field);
            let (with, rolled) = scan_tally_with(&input, by, Measure::LATENCY, true).unwrap();
            let (without, none) = scan_tally_with(&input, by, Measure::LATENCY, false).unwrap();
            assert_eq!(none, 0);
            let matched = without.stats.matched;
            assert!(matched > 0, "{filter:?} matches something");
            let got = match rolled {
                0 => Rolled::None,
                n if n == matched => Rolled::All,
                _ => Rolled::Some,
            };
            assert_eq!(
                got, rolls,
                "{filter:?} by {by:?}: {rolled} of {matched} events from rollups"
            );
            assert_eq!(figures(&with), figures(&without), "{filter:?} by {by:?}");
            assert_eq!(with.stats.total, 60_000);
        }
    }
}
