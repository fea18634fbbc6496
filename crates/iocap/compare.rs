//! `iocap compare`: two sides, each a capture and a filter, side by side. Their latency
//! histograms aligned bucket by bucket, then a table of count, rate and percentiles for A and B
//! with the change, overall and per group (`--by`). A change is flagged only when the two
//! sides' 99 % intervals do not overlap ([`iocap_analysis::compare`] says how they are made).
//!
//! Each side is one scan, the same as `report`'s ([`report::tally`]), so comparing costs two
//! reports.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::PathBuf;

use iocap_analysis::compare::{disjoint, poisson_interval, quantile_interval, Z99};
use iocap_analysis::units::fmt_ns;
use iocap_analysis::{capture_span, Group, LatencyHist, Measure};
use iocap_format::{escape::escape, log2_bucket_range};
use serde_json::json;

use crate::report::{self, Tally};
use crate::sides::{self, Sides};
use crate::{input, text};

#[derive(clap::Args, Debug)]
#[command(after_help = "\
Two captures, one filter:       iocap compare before.cap after.cap evt.type=fsync
One capture, two filters:       iocap compare trace.cap --a proc.name=postgres --b proc.name=mysqld
The second word is always a capture; --a and --b narrow their side (and the filter words both).")]
pub struct Args {
    /// Capture A.
    a: PathBuf,
    /// Capture B; without it, B is capture A again and --a or --b tells the sides apart.
    b: Option<PathBuf>,
    /// Filter for both sides, as words after the two captures.
    filter: Vec<String>,
    #[command(flatten)]
    own: sides::SideFilters,
    /// Split each side by this field and compare the top groups.
    #[arg(long, value_name = "FIELD")]
    by: Option<String>,
    /// What the histograms and percentiles are of: any duration field, for the events that
    /// have it (`blk.queue`, `disk.time`, `wait.time` ...); the default, every event's latency.
    #[arg(long, value_name = "FIELD", default_value = "latency")]
    measure: String,
    /// How many groups `--by` shows (the largest by events on both sides).
    #[arg(long, default_value_t = 20, value_name = "N")]
    top: usize,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
}

/// One side of the comparison, scanned.
struct Side {
    capture: PathBuf,
    filter: String,
    drops: u64,
    /// Block requests issued whose completion never reached the recorder.
    unseen: u64,
    /// The capture's span (start to stop), over which a rate is counted.
    span_ns: u64,
    tally: Tally,
}

pub fn run(args: Args) -> anyhow::Result<()> {
    let by = args.by.as_deref().map(input::field_arg).transpose()?;
    let measure = input::measure_arg(&args.measure)?;
    let a_capture = input::Capture {
        file: args.a.clone(),
        save: None,
    };
    let sides = Sides {
        a: &a_capture,
        b: args.b.as_deref(),
        words: &args.filter,
        own: &args.own,
    };
    let [a, b] = sides.open("compare")?;
    let side = |mut s: sides::Side| -> anyhow::Result<Side> {
        s.input.measure(measure)?;
        let tally = report::tally(&s.input, by, measure)?;
        let (start, stop) = capture_span(&s.input.reader);
        Ok(Side {
            capture: s.capture,
            drops: s.input.reader.drops(),
            unseen: s.input.reader.unseen(),
            span_ns: stop - start,
            filter: s.input.src,
            tally,
        })
    };
    let a = side(a)?;
    let b = side(b)?;
    let cmp = Comparison {
        overall: metrics(&a.tally.hist, a.span_ns, &b.tally.hist, b.span_ns),
        groups: by.map(|f| groups(f.name, &a, &b, args.top)),
        measure,
        a,
        b,
    };
    let mut out = std::io::stdout().lock();
    if args.json {
        serde_json::to_writer_pretty(&mut out, &cmp.to_json())?;
        writeln!(out)?;
    } else {
        cmp.write_text(&mut out)?;
    }
    Ok(())
}

/// How a figure is printed.
#[derive(Clone, Copy)]
enum Unit {
    Count,
    Rate,
    Ns,
}

impl Unit {
    fn fmt(self, v: f64) -> String {
        match self {
            Unit::Count => format!("{}", v.round() as u64),
            Unit::Rate => format!("{v:.1}"),
            Unit::Ns => fmt_ns(v.round() as u64),
        }
    }
}

/// One figure on both sides, with each side's interval when it has one.
struct Metric {
    /// Its name in text.
    name: &'static str,
    /// Its key in JSON.
    key: &'static str,
    unit: Unit,
    /// A's figure; `None` for a percentile or max of no events, a rate over no time.
    a: Option<f64>,
    /// B's figure, as A's.
    b: Option<f64>,
    a_interval: Option<(f64, f64)>,
    b_interval: Option<(f64, f64)>,
}

impl Metric {
    /// Whether both sides have an interval and they do not overlap.
    fn flagged(&self) -> bool {
        match (self.a_interval, self.b_interval) {
            (Some(a), Some(b)) => disjoint(a, b),
            _ => false,
        }
    }

    /// B minus A, when both have the figure.
    fn delta(&self) -> Option<f64> {
        Some(self.b? - self.a?)
    }

    /// The change from A to B, as text: `+1.2ms (+35.0%)`, `0`, `-` when a side has no figure.
    fn delta_text(&self) -> String {
        let (Some(a), Some(d)) = (self.a, self.delta()) else {
            return "-".into();
        };
        if d == 0.0 {
            return "0".into();
        }
        let sign = if d > 0.0 { "+" } else { "-" };
        let abs = self.unit.fmt(d.abs());
        if a > 0.0 {
            format!("{sign}{abs} ({sign}{:.1}%)", 100.0 * d.abs() / a)
        } else {
            format!("{sign}{abs}")
        }
    }

    /// A side's figure as text; `-` when it has none.
    fn value_text(&self, v: Option<f64>) -> String {
        v.map_or("-".into(), |v| self.unit.fmt(v))
    }

    fn interval_text(&self, i: Option<(f64, f64)>) -> String {
        i.map_or(String::new(), |(lo, hi)| {
            format!("[{}, {}]", self.unit.fmt(lo), self.unit.fmt(hi))
        })
    }

    fn to_json(&self) -> serde_json::Value {
        let iv = |i: Option<(f64, f64)>| i.map_or(serde_json::Value::Null, |(lo, hi)| json!([lo, hi]));
        let num = |v: Option<f64>| match (v, self.unit) {
            (None, _) => serde_json::Value::Null,
            (Some(v), Unit::Rate) => json!(v),
            (Some(v), Unit::Count | Unit::Ns) => json!(v.round() as u64),
        };
        json!({
            "a": num(self.a),
            "b": num(self.b),
            "delta": self.delta(),
            "a_interval": iv(self.a_interval),
            "b_interval": iv(self.b_interval),
            "flagged": self.flagged(),
        })
    }
}

/// The percentiles compared, as (text name, JSON key, percent).
const PERCENTILES: [(&str, &str, f64); 4] = [
    ("p50", "p50_ns", 50.0),
    ("p90", "p90_ns", 90.0),
    ("p99", "p99_ns", 99.0),
    ("p99.9", "p999_ns", 99.9),
];

/// Count, rate per second, percentiles and max of two distributions, each side's rate counted
/// over its span.
fn metrics(a: &LatencyHist, a_span: u64, b: &LatencyHist, b_span: u64) -> Vec<Metric> {
    // A capture without a span (one instant) has no rate.
    let secs = |ns: u64| (ns > 0).then(|| ns as f64 / 1e9);
    let (asec, bsec) = (secs(a_span), secs(b_span));
    let rate = |n: u64, s: Option<f64>| s.map(|s| n as f64 / s);
    let count_iv = |n: u64, s: f64| {
        let (lo, hi) = poisson_interval(n, Z99);
        (lo / s, hi / s)
    };
    let mut out = vec![
        Metric {
            name: "count",
            key: "count",
            unit: Unit::Count,
            a: Some(a.count() as f64),
            b: Some(b.count() as f64),
            a_interval: Some(count_iv(a.count(), 1.0)),
            b_interval: Some(count_iv(b.count(), 1.0)),
        },
        Metric {
            name: "rate/s",
            key: "rate_per_s",
            unit: Unit::Rate,
            a: rate(a.count(), asec),
            b: rate(b.count(), bsec),
            a_interval: asec.map(|s| count_iv(a.count(), s)),
            b_interval: bsec.map(|s| count_iv(b.count(), s)),
        },
    ];
    let q = |h: &LatencyHist, pct| quantile_interval(h, pct, Z99).map(|(lo, hi)| (lo as f64, hi as f64));
    for (name, key, pct) in PERCENTILES {
        out.push(Metric {
            name,
            key,
            unit: Unit::Ns,
            a: figure(a, |h| h.percentile(pct)),
            b: figure(b, |h| h.percentile(pct)),
            a_interval: q(a, pct),
            b_interval: q(b, pct),
        });
    }
    // One event decides a max: there is no interval to test it against.
    out.push(Metric {
        name: "max",
        key: "max_ns",
        unit: Unit::Ns,
        a: figure(a, LatencyHist::max),
        b: figure(b, LatencyHist::max),
        a_interval: None,
        b_interval: None,
    });
    out
}

/// A latency figure of `h`; `None` when it has no events (their p50 is not 0: there is none).
fn figure(h: &LatencyHist, f: impl Fn(&LatencyHist) -> u64) -> Option<f64> {
    (!h.is_empty()).then(|| f(h) as f64)
}

/// The groups of either side by `field`, the `top` largest by their events on both sides (then
/// by key) compared; a group one side lacks has no events there.
fn groups(field: &'static str, a: &Side, b: &Side, top: usize) -> Groups {
    let empty = Group::default();
    let mut keys: BTreeMap<&String, (&Group, &Group)> = BTreeMap::new();
    for (k, g) in a.tally.groups.iter().flat_map(|g| g.iter()) {
        keys.entry(k).or_insert((&empty, &empty)).0 = g;
    }
    for (k, g) in b.tally.groups.iter().flat_map(|g| g.iter()) {
        keys.entry(k).or_insert((&empty, &empty)).1 = g;
    }
    let total = keys.len();
    let mut all: Vec<_> = keys.into_iter().collect();
    // Stable: equal totals stay in key order.
    all.sort_by_key(|(_, (ga, gb))| std::cmp::Reverse(ga.count() + gb.count()));
    all.truncate(top);
    let top = all
        .into_iter()
        .map(|(k, (ga, gb))| (k.clone(), metrics(&ga.hist, a.span_ns, &gb.hist, b.span_ns)))
        .collect();
    Groups { field, total, top }
}

/// Both sides scanned, and their figures compared.
struct Comparison {
    a: Side,
    b: Side,
    overall: Vec<Metric>,
    /// With `--by`: the groups compared.
    groups: Option<Groups>,
    /// What the histograms and percentiles are of.
    measure: Measure,
}

/// The groups of both sides (`--by`), the largest compared.
struct Groups {
    /// The field grouped by.
    field: &'static str,
    /// How many groups the two sides have together.
    total: usize,
    /// The largest, as (key, figures).
    top: Vec<(String, Vec<Metric>)>,
}

/// What the flags mean, said under every text comparison and in the JSON.
const METHOD: &str = "* A's and B's 99% intervals [lo, hi] do not overlap. A percentile's interval \
spans the\n  ranks n*q +- 2.576*sqrt(n*q*(1-q)) (binomial order statistics), widened to whole \
histogram\n  buckets; a count's and a rate's is Poisson's (score method). max is not tested.";

impl Comparison {
    /// Log2 rows `[lo, hi)` with A's and B's counts, from the first bucket either side uses to
    /// the last.
    fn histogram(&self) -> Vec<(u64, u64, u64, u64)> {
        let (a, b) = (self.a.tally.hist.log2(), self.b.tally.hist.log2());
        let used = |i: &usize| a[*i] != 0 || b[*i] != 0;
        let (Some(first), Some(last)) = ((0..a.len()).find(used), (0..a.len()).rev().find(used)) else {
            return Vec::new();
        };
        (first..=last)
            .map(|i| {
                let (lo, hi) = log2_bucket_range(i);
                (lo, hi, a[i], b[i])
            })
            .collect()
    }

    fn to_json(&self) -> serde_json::Value {
        let side = |s: &Side| {
            json!({
                "capture": s.capture.display().to_string(),
                "filter": s.filter,
                "matched": s.tally.stats.matched,
                "total": s.tally.stats.total,
                "drops": s.drops,
                "unseen_block_requests": s.unseen,
                "span_ns": s.span_ns,
            })
        };
        let metrics = |ms: &[Metric]| {
            let mut m = serde_json::Map::new();
            for x in ms {
                m.insert(x.key.into(), x.to_json());
            }
            serde_json::Value::Object(m)
        };
        let histogram: Vec<[u64; 4]> = self
            .histogram()
            .into_iter()
            .map(|(lo, hi, a, b)| [lo, hi, a, b])
            .collect();
        let mut v = json!({
            "method": METHOD.replace("\n  ", " "),
            "confidence": 0.99,
            "a": side(&self.a),
            "b": side(&self.b),
            "measure": self.measure.field(),
            "histogram_kind": "log2",
            "histogram": histogram,
            "overall": metrics(&self.overall),
        });
        if let Some(g) = &self.groups {
            v["by"] = json!(g.field);
            v["group_count"] = json!(g.total);
            v["groups"] = g
                .top
                .iter()
                .map(|(k, ms)| json!({ "key": k, "metrics": metrics(ms) }))
                .collect();
        }
        v
    }

    fn write_text(&self, out: &mut impl Write) -> std::io::Result<()> {
        for (name, s) in [("A", &self.a), ("B", &self.b)] {
            let st = &s.tally.stats;
            writeln!(
                out,
                "{name}  {}  {}",
                escape(s.capture.display().to_string().as_bytes()),
                if s.filter.is_empty() {
                    "(no filter)".to_string()
                } else {
                    escape(s.filter.as_bytes()).to_string()
                }
            )?;
            writeln!(
                out,
                "   matched {} of {} events in {}, {} dropped while recording{}",
                st.matched,
                st.total,
                fmt_ns(s.span_ns),
                s.drops,
                text::unseen(s.unseen)
            )?;
        }
        let rows = self.histogram();
        if !rows.is_empty() {
            writeln!(out)?;
            let max = rows.iter().map(|r| r.2.max(r.3)).max().unwrap_or(0);
            writeln!(
                out,
                "{:>21} : {:<9} {:<22} {:<9} distribution",
                self.measure.field(),
                "A count",
                "distribution",
                "B count"
            )?;
            for (lo, hi, a, b) in rows {
                let hi = if hi == u64::MAX { "max".to_string() } else { fmt_ns(hi) };
                writeln!(
                    out,
                    "{:>9} -> {:<8} : {:<9} |{}| {:<9} |{}|",
                    fmt_ns(lo),
                    hi,
                    a,
                    text::bar(a, max, 20),
                    b,
                    text::bar(b, max, 20)
                )?;
            }
        }
        writeln!(out)?;
        writeln!(out, "all matching events")?;
        write_metrics(out, &self.overall)?;
        if let Some(g) = &self.groups {
            for (k, ms) in &g.top {
                writeln!(out)?;
                writeln!(out, "{} {}", g.field, text::truncate(k, 48))?;
                write_metrics(out, ms)?;
            }
            if g.total > g.top.len() {
                writeln!(out, "\n({} more groups; --top N shows more)", g.total - g.top.len())?;
            }
        }
        writeln!(out)?;
        writeln!(out, "{METHOD}")?;
        Ok(())
    }
}

/// One table: a row per figure with A and B, their intervals, the change and its flag.
fn write_metrics(out: &mut impl Write, ms: &[Metric]) -> std::io::Result<()> {
    writeln!(out, "  {:<7} {:>9} {:<23} {:>9} {:<23} change", "", "A", "", "B", "")?;
    for m in ms {
        writeln!(
            out,
            "  {:<7} {:>9} {:<23} {:>9} {:<23} {}{}",
            m.name,
            m.value_text(m.a),
            m.interval_text(m.a_interval),
            m.value_text(m.b),
            m.interval_text(m.b_interval),
            m.delta_text(),
            if m.flagged() { " *" } else { "" }
        )?;
    }
    Ok(())
}
