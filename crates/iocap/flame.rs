//! `iocap flame`: the latency flame graph of the matching calls, from the stacks `record
//! --stacks` kept: folded stacks (flamegraph.pl's and inferno's input) on standard output, or
//! an SVG drawn by inferno with `-o FILE.svg`.

use std::collections::{BTreeMap, HashMap};
use std::io::Write;
use std::path::PathBuf;

use iocap_analysis::flame::{By, Flame, Weight};
use iocap_analysis::units::fmt_ns;
use iocap_analysis::Scan;
use iocap_format::ColSet;

use crate::input;

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum ByArg {
    /// The user stack the call returned to: which code path made it.
    User,
    /// The kernel stack of its longest sleep: where it waited.
    Kernel,
    /// The user stack, then the kernel stack under it.
    Both,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum WeightArg {
    /// The calls' summed latency (ns).
    Latency,
    /// How many calls.
    Count,
    /// The calls' summed time asleep, `wait.time` (ns).
    Wait,
}

#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    sel: input::Selection,
    /// Which stacks make the frames.
    #[arg(long, value_enum, default_value_t = ByArg::User)]
    by: ByArg,
    /// What a frame's width counts.
    #[arg(long, value_enum, default_value_t = WeightArg::Latency)]
    weight: WeightArg,
    /// Write the graph here: an SVG when the name ends in `.svg`, else the folded stacks (a new
    /// file, 0600; `-` or no -o: folded stacks on standard output).
    #[arg(short = 'o', long, value_name = "FILE")]
    output: Option<PathBuf>,
    /// Of two captures, A then B: B's graph, each frame red where B spent more there than A,
    /// blue where less (flamegraph.pl's differential); folded, each line's A and B weights.
    #[arg(long)]
    diff: bool,
}

pub fn run(args: Args) -> anyhow::Result<()> {
    let by = match args.by {
        ByArg::User => By::User,
        ByArg::Kernel => By::Kernel,
        ByArg::Both => By::Both,
    };
    let weight = match args.weight {
        WeightArg::Latency => Weight::Latency,
        WeightArg::Count => Weight::Count,
        WeightArg::Wait => Weight::Wait,
    };
    let fleet = args.sel.open(true)?;
    let svg = args
        .output
        .as_ref()
        .is_some_and(|p| p.extension().is_some_and(|e| e == "svg"));
    let graphs = if args.diff {
        let [a, b] = &fleet.inputs[..] else {
            return Err(crate::UsageError(format!(
                "--diff compares two captures, A then B: {} given",
                fleet.inputs.len()
            ))
            .into());
        };
        let g = |i: &input::Input, k: usize| Graph::of(std::slice::from_ref(i), by, weight, &name(&fleet.paths[k]));
        (g(a, 0)?, Some(g(b, 1)?))
    } else {
        (Graph::of(&fleet.inputs, by, weight, &args.sel.capture.name())?, None)
    };
    let write = |out: &mut (dyn Write + Send)| match &graphs {
        (a, Some(b)) => diff(out, a, b, svg),
        (g, None) => g.write(out, svg),
    };
    match &args.output {
        Some(path) if path.as_os_str() != "-" => crate::output::write_to(path, &write),
        _ => {
            let mut out = std::io::BufWriter::new(std::io::stdout());
            write(&mut out)?;
            out.flush()?;
            Ok(())
        }
    }
}

/// The matching calls of some captures by stack, folded.
pub struct Graph {
    flame: Flame,
    /// The folded paths and their weights, summed over the captures (each folded by its own
    /// tables).
    lines: BTreeMap<String, u64>,
    by: By,
    weight: Weight,
    name: String,
}

impl Graph {
    /// Scan `inputs` (named `name`, escaped) for the matching calls' `by` stacks, folded and
    /// weighted by `weight`. Captures without stacks are an error that says how to record them.
    pub fn of(inputs: &[input::Input], by: By, weight: Weight, name: &str) -> anyhow::Result<Graph> {
        if inputs.iter().all(|i| i.reader.tables().stacks().next().is_none()) {
            anyhow::bail!(
                "{} no stacks: record with --stacks (the calls at least as slow as its threshold keep theirs)",
                if inputs.len() > 1 {
                    "these captures have".to_owned()
                } else {
                    format!("{name} has")
                }
            );
        }
        let mut graph = Graph {
            flame: Flame::new(by),
            lines: BTreeMap::new(),
            by,
            weight,
            name: name.to_owned(),
        };
        for input in inputs {
            let r = &input.reader;
            let want = (Flame::COLUMNS.iter().chain(&Flame::ISSUER_COLUMNS)).fold(ColSet::NONE, |s, &c| s.with(c));
            let (mut flame, _) = Scan::new(r, Some(&input.filter))
                .columns(want)
                .threads(input::threads(r))
                .run(
                    || Flame::new(by).with_issuers(),
                    |f, _, cols, bits| bits.iter_ones().for_each(|i| f.add(cols, i)),
                    |a, b| a.merge(b),
                )?
                .ok_or_else(|| anyhow::anyhow!("the scan was cancelled"))?;
            // Block requests take their issuing calls' stacks, whatever the filter says of
            // the calls.
            if flame.has_issued() {
                flame.resolve(&call_stacks(r)?);
            }
            let t = r.tables();
            for (path, w) in flame.folded(t, weight) {
                let sum = graph.lines.entry(path).or_default();
                *sum = sum.saturating_add(w);
            }
            graph.flame.merge(flame);
        }
        Ok(graph)
    }

    /// That no matching call has the stacks asked for.
    fn none(&self) -> String {
        let what = match self.by {
            By::User => "a user",
            By::Kernel => "a kernel",
            By::Both => "a",
        };
        format!(
            "no matching call has {what} stack ({} matched without one)",
            self.flame.without
        )
    }

    /// Write the folded stacks, or with `svg` inferno's SVG of them. Nothing to draw is said
    /// on stderr (folded) or an error (an SVG would be empty).
    pub fn write(&self, out: &mut (dyn Write + Send), svg: bool) -> anyhow::Result<()> {
        let lines = &self.lines;
        if lines.is_empty() {
            if svg {
                anyhow::bail!("{}: there is no flame graph to draw", self.none());
            }
            crate::say(format_args!("{}", self.none()));
            return Ok(());
        }
        if svg {
            let mut opts = inferno::flamegraph::Options::default();
            opts.title = title(&self.flame, self.by, &self.name);
            opts.count_name = self.weight.unit().to_owned();
            opts.deterministic = true;
            let folded: Vec<String> = lines.iter().map(|(p, w)| format!("{p} {w}")).collect();
            inferno::flamegraph::from_lines(&mut opts, folded.iter().map(String::as_str), out)?;
        } else {
            for (path, w) in lines {
                writeln!(out, "{path} {w}")?;
            }
        }
        Ok(())
    }
}

/// B's graph against A's: each path with A's and B's weights (flamegraph.pl's differential
/// input), or with `svg` inferno's drawing of it.
fn diff(out: &mut (dyn Write + Send), a: &Graph, b: &Graph, svg: bool) -> anyhow::Result<()> {
    let mut both = BTreeMap::<&str, (u64, u64)>::new();
    for (p, w) in &a.lines {
        both.entry(p).or_default().0 = *w;
    }
    for (p, w) in &b.lines {
        both.entry(p).or_default().1 = *w;
    }
    if both.is_empty() {
        anyhow::bail!("{}, in A nor in B: there is nothing to compare", a.none());
    }
    if svg {
        let mut opts = inferno::flamegraph::Options::default();
        opts.title = format!(
            "B − A: {} (red: more in B, blue: less)",
            title(&b.flame, b.by, &format!("{} → {}", a.name, b.name))
        );
        opts.count_name = b.weight.unit().to_owned();
        opts.deterministic = true;
        let folded: Vec<String> = both.iter().map(|(p, (x, y))| format!("{p} {x} {y}")).collect();
        inferno::flamegraph::from_lines(&mut opts, folded.iter().map(String::as_str), out)?;
    } else {
        for (p, (x, y)) in &both {
            writeln!(out, "{p} {x} {y}")?;
        }
    }
    Ok(())
}

/// The stacks of every call of capture `r` that has any, by its (thread, start).
fn call_stacks(r: &iocap_format::Reader) -> anyhow::Result<HashMap<(u32, u64), (u32, u32)>> {
    use iocap_format::{Class, Col};
    let want = [Col::Class, Col::Tid, Col::Ts, Col::StackUser, Col::StackKernel];
    type Calls = HashMap<(u32, u64), (u32, u32)>;
    let (calls, _) = Scan::new(r, None)
        .columns(want.into_iter().fold(ColSet::NONE, ColSet::with))
        .threads(input::threads(r))
        .run(
            Calls::new,
            |m: &mut Calls, _, cols, bits| {
                for i in bits.iter_ones() {
                    let (u, k) = (cols.stack_user[i], cols.stack_kernel[i]);
                    if cols.class[i] == Class::Syscall as u8 && (u != 0 || k != 0) {
                        m.insert((cols.tid[i], cols.ts[i]), (u, k));
                    }
                }
            },
            |a: &mut Calls, b: Calls| a.extend(b),
        )?
        .ok_or_else(|| anyhow::anyhow!("the scan was cancelled"))?;
    Ok(calls)
}

/// A capture's file name, escaped, as a graph's title names it.
fn name(path: &std::path::Path) -> String {
    let file = path.file_name().unwrap_or(path.as_os_str());
    iocap_format::escape::escape(file.as_encoded_bytes())
}

/// The graph's title: what it is of, and the calls' count and percentiles.
fn title(f: &Flame, by: By, capture: &str) -> String {
    let h = &f.hist;
    format!(
        "{capture}: {} events by {} stack, p50 {} p99 {} max {}",
        h.count(),
        match by {
            By::User => "user",
            By::Kernel => "kernel",
            By::Both => "user and kernel",
        },
        fmt_ns(h.percentile(50.0)),
        fmt_ns(h.percentile(99.0)),
        fmt_ns(h.max()),
    )
}
