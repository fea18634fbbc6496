//! `iocap export`: the matching events as CSV or JSON lines with every field, or as an SVG
//! picture for a ticket: a latency heatmap (time × latency, as Brendan Gregg's), or two sides
//! compared, given as `iocap compare` takes them ([`crate::sides`]): their heatmaps on the same
//! axes and colour scale and their distributions overlaid ([`svg`] draws both).
//!
//! The output is a new file (mode 0600) put in place only when it is whole ([`crate::output`]):
//! a symlink planted at the target is replaced, never followed, and a failed or killed export
//! leaves nothing behind. A character device or FIFO at the target is written to in place;
//! `-o -` writes to stdout.

mod svg;

use std::io::{BufWriter, Write};
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};

use anyhow::Context;
use iocap_analysis::spectro::{column, COLS};
use iocap_analysis::units::{fmt_ns, parse_duration};
use iocap_analysis::{scan, LatencyHist, Spectrogram};
use iocap_filter::fields;
use iocap_format::{Col, ColSet};

use crate::events::{canonical_fields, event_json};
use crate::input::{self, Input};
use crate::output::{self, Existing};
use crate::sides::{self, SideFilters, Sides};
use crate::UsageError;

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Csv,
    Jsonl,
    Svg,
}

#[derive(clap::Args, Debug)]
#[command(after_help = "\
A heatmap:                       iocap export trace.cap evt.type=fsync --format svg -o heat.svg
Two captures compared (SVG):     iocap export before.cap after.cap evt.type=fsync --format svg -o cmp.svg
One capture, two filters (SVG):  iocap export trace.cap --a proc.name=pg --b proc.name=mysqld --format svg -o cmp.svg
The second word is capture B when it names an existing file, else the first filter word.")]
pub struct Args {
    #[command(flatten)]
    capture: input::Capture,
    /// Filter, as words joined by spaces: `evt.type=fsync`. With --format svg, a first word that
    /// names an existing file is capture B, compared with the first.
    filter: Vec<String>,
    /// SVG: compare two filters of one capture (or narrow the sides of two).
    #[command(flatten)]
    own: SideFilters,
    /// What to write.
    #[arg(long, value_enum)]
    format: Format,
    /// Where to write it (`-` for stdout).
    #[arg(short = 'o', long = "output", value_name = "OUT")]
    output: PathBuf,
    /// SVG: width of a time column (default: the capture split in at most 400 columns).
    #[arg(long, value_name = "DURATION")]
    interval: Option<String>,
}

/// What an export writes, its captures opened.
// One lives for the whole export: the size of its largest variant costs nothing.
#[allow(clippy::large_enum_variant)]
enum Export {
    /// The events, or their heatmap.
    One(Input),
    /// Two sides compared, in SVG.
    Two([sides::Side; 2]),
}

impl Export {
    /// Open what `args` names. The second word is capture B when it names one
    /// ([`sides::names_a_capture`]): a filter word does not, and `iocap export x.cap
    /// proc.name=dd` keeps its meaning. A comparison is only drawn: with CSV or JSON lines it
    /// is a usage error.
    fn open(args: &Args) -> anyhow::Result<Export> {
        let b = args.filter.first().filter(|w| sides::names_a_capture(w)).map(Path::new);
        if b.is_none() && args.own.is_empty() {
            return Ok(Export::One(input::open(&args.capture, &args.filter, true)?));
        }
        if args.format != Format::Svg {
            let why = match b {
                Some(b) => format!(
                    "`{}` names a file, a second capture",
                    iocap_format::escape::escape(b.as_os_str().as_encoded_bytes())
                ),
                None => "--a and --b compare two sides".to_string(),
            };
            return Err(UsageError(format!(
                "{why}: a comparison is drawn only with --format svg (export the events of one side at a time)"
            ))
            .into());
        }
        let sides = Sides {
            a: &args.capture,
            b,
            words: &args.filter[usize::from(b.is_some())..],
            own: &args.own,
        };
        Ok(Export::Two(sides.open("export")?))
    }
}

pub fn run(args: Args) -> anyhow::Result<()> {
    let interval = args
        .interval
        .as_deref()
        .map(parse_duration)
        .transpose()
        .map_err(|e| UsageError(format!("--interval: {e}")))?;
    let export = Export::open(&args)?;
    let write = |out: &mut dyn Write| -> anyhow::Result<()> {
        match (&export, args.format) {
            (Export::One(input), Format::Csv) => write_csv(out, input),
            (Export::One(input), Format::Jsonl) => write_jsonl(out, input),
            (Export::One(input), Format::Svg) => write_svg(out, input, interval, &args.capture.short_name()),
            (Export::Two(sides), _) => write_comparison(out, sides, interval),
        }
    };
    if args.output.as_os_str() == "-" {
        let mut out = BufWriter::new(std::io::stdout().lock());
        write(&mut out)?;
        out.flush()?;
        return Ok(());
    }
    let path = &args.output;
    let in_place = |follow: bool| -> anyhow::Result<()> {
        let mut out = BufWriter::new(output::open_in_place(path, follow)?);
        write(&mut out)?;
        out.flush().with_context(|| format!("{}", path.display()))?;
        Ok(())
    };
    match Existing::of(path)? {
        // `-o /dev/null`, `-o /dev/stdout` (a symlink), a FIFO: written as asked, as `cp` and
        // `tee` do; replacing them would turn a device node into a regular file for everyone.
        Existing::CharDevice | Existing::Fifo => in_place(false),
        Existing::Symlink if output::leads_to_stream(path) => in_place(true),
        e @ (Existing::Directory | Existing::BlockDevice | Existing::Socket) => Err(e.refuse(
            path,
            "an export is written to a file, a character device or a FIFO (or `-o -`)",
        )),
        Existing::Nothing | Existing::Regular | Existing::Symlink => {
            let (file, mut new) = output::create(path)?;
            let mut out = BufWriter::new(file);
            write(&mut out)?;
            out.flush().with_context(|| format!("{}", path.display()))?;
            out.get_ref()
                .sync_all()
                .with_context(|| format!("{}", path.display()))?;
            new.publish()
        }
    }
}

fn write_jsonl(out: &mut dyn Write, input: &Input) -> anyhow::Result<()> {
    let r = &input.reader;
    let keys = canonical_fields();
    write_lines(out, input, |line, e| {
        let v = event_json(&keys, e, r.meta(), r.tables());
        // Serializing a Value to a String cannot fail.
        line.push_str(&v.to_string());
    })
}

/// Write one line per matching event, as `fill` renders it; stops at the first write error
/// (a closed pipe, a full disk) and returns it.
fn write_lines(
    out: &mut dyn Write,
    input: &Input,
    mut fill: impl FnMut(&mut String, &iocap_format::Event),
) -> anyhow::Result<()> {
    let mut err = None;
    let mut line = String::new();
    scan::for_each_match(&input.reader, &input.filter, ColSet::ALL, |cols, i| {
        line.clear();
        fill(&mut line, &cols.event(i));
        line.push('\n');
        match out.write_all(line.as_bytes()) {
            Ok(()) => ControlFlow::Continue(()),
            Err(e) => {
                err = Some(e);
                ControlFlow::Break(())
            }
        }
    })?;
    err.map_or(Ok(()), |e| Err(e.into()))
}

/// A CSV field, quoted when it holds a comma, quote or line break (RFC 4180).
fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// A string from the traced host as a CSV field a spreadsheet shows as text: one starting with
/// `=`, `+`, `-`, `@`, a tab or a carriage return would be run as a formula (a file named
/// `=HYPERLINK(...)`), so it gets a leading `'` (OWASP's advice). Numbers are never strings
/// here, so a negative return value stays a number.
fn csv_text(s: &str) -> String {
    if s.starts_with(['=', '+', '-', '@', '\t', '\r']) {
        csv_field(&format!("'{s}"))
    } else {
        csv_field(s)
    }
}

fn write_csv(out: &mut dyn Write, input: &Input) -> anyhow::Result<()> {
    let r = &input.reader;
    let keys = canonical_fields();
    let header: Vec<&str> = keys.iter().map(|f| f.name).collect();
    writeln!(out, "{}", header.join(","))?;
    write_lines(out, input, |line, e| {
        for (k, f) in keys.iter().enumerate() {
            if k > 0 {
                line.push(',');
            }
            match fields::value(f, e, r.meta(), r.tables()) {
                fields::Value::Str(text) => line.push_str(&csv_text(&text)),
                v => line.push_str(&csv_field(&v.to_string())),
            }
        }
    })
}

/// 1, 2 or 5 times a power of ten, at least `x`.
fn nice(x: u64) -> u64 {
    let mut p = 1u64;
    loop {
        for m in [1, 2, 5] {
            if let Some(v) = p.checked_mul(m) {
                if v >= x {
                    return v;
                }
            } else {
                return u64::MAX;
            }
        }
        p = p.saturating_mul(10);
    }
}

/// The time columns of a heatmap over `span` ns: `interval` ns each (by default the span in at
/// most 400, of a whole ms at least), as (interval, columns); too many is a usage error.
fn time_columns(span: u64, interval: Option<u64>) -> anyhow::Result<(u64, u64)> {
    let span = span.max(1);
    let interval = interval.unwrap_or_else(|| nice(span.div_ceil(400)).max(1_000_000));
    let cols = span.div_ceil(interval).max(1);
    if cols > 5_000 {
        return Err(UsageError(format!(
            "--interval {} makes {cols} columns (at most 5000): use a longer one",
            fmt_ns(interval)
        ))
        .into());
    }
    Ok((interval, cols))
}

fn write_svg(out: &mut dyn Write, input: &Input, interval: Option<u64>, file: &str) -> anyhow::Result<()> {
    let (start, end) = scan::capture_span(&input.reader);
    let (interval, cols) = time_columns(end - start, interval)?;
    let (sp, stats) = crate::spectrogram::bin(input, start, end, interval)?;
    let svg = svg::render_heatmap(&sp, cols, file, &input.src, stats.matched);
    out.write_all(svg.as_bytes())?;
    Ok(())
}

/// One side of a comparison, binned by one scan.
struct Binned {
    /// Its heatmap, from its capture's start.
    sp: Spectrogram,
    /// Its events per latency column of the heatmap, every one (one that began before the
    /// capture's start is in no heatmap row).
    dist: [u64; COLS],
    hist: LatencyHist,
}

impl Binned {
    fn merge(&mut self, other: Binned) {
        self.sp.merge(&other.sp);
        self.hist.merge(&other.hist);
        for (a, b) in self.dist.iter_mut().zip(other.dist) {
            *a += b;
        }
    }
}

/// Two sides compared: each binned from its own capture's start, in columns of one interval
/// over the longer span, so the two heatmaps share their time axis.
fn write_comparison(out: &mut dyn Write, sides: &[sides::Side; 2], interval: Option<u64>) -> anyhow::Result<()> {
    let spans = sides.each_ref().map(|s| scan::capture_span(&s.input.reader));
    let longest = spans.iter().map(|(start, end)| end - start).max().unwrap_or(0);
    let (interval, cols) = time_columns(longest, interval)?;
    let mut binned = Vec::with_capacity(2);
    for (side, (start, end)) in sides.iter().zip(spans) {
        let r = &side.input.reader;
        let (b, _) = scan::scan(
            r,
            &side.input.filter,
            ColSet::NONE.with(Col::Ts).with(Col::Latency),
            input::threads(r),
            || Binned {
                sp: Spectrogram::covering(start, end, interval),
                dist: [0; COLS],
                hist: LatencyHist::new(),
            },
            |b: &mut Binned, c, bits| {
                for i in bits.iter_ones() {
                    b.sp.add(c.ts[i], c.latency[i]);
                    b.dist[column(c.latency[i])] += 1;
                    b.hist.add(c.latency[i]);
                }
            },
            Binned::merge,
        )?;
        binned.push(b);
    }
    let pictured: Vec<svg::Side> = sides
        .iter()
        .zip(&binned)
        .map(|(side, b)| svg::Side {
            file: &side.name,
            filter: &side.input.src,
            sp: &b.sp,
            dist: &b.dist,
            hist: &b.hist,
        })
        .collect();
    let svg = svg::render_comparison([&pictured[0], &pictured[1]], cols);
    out.write_all(svg.as_bytes())?;
    Ok(())
}
