//! `iocap export`: the matching events as CSV or JSON lines with every field, or a latency
//! heatmap (time × latency, as Brendan Gregg's) as an SVG picture for a ticket.
//!
//! The output is a new file (mode 0600) put in place only when it is whole ([`crate::output`]):
//! a symlink planted at the target is replaced, never followed, and a failed or killed export
//! leaves nothing behind. A character device or FIFO at the target is written to in place;
//! `-o -` writes to stdout.

use std::fmt::Write as _;
use std::io::{BufWriter, Write};
use std::ops::ControlFlow;
use std::path::PathBuf;

use anyhow::Context;
use iocap_analysis::spectro::{column_range, shade, COLS, COLS_PER_DECADE};
use iocap_analysis::units::{fmt_ns, parse_duration};
use iocap_analysis::{scan, Spectrogram};
use iocap_filter::fields;
use iocap_format::ColSet;

use crate::events::{canonical_fields, event_json};
use crate::input::{self, Input};
use crate::output::{self, Existing};
use crate::UsageError;

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Csv,
    Jsonl,
    Svg,
}

#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    capture: input::Capture,
    /// Filter, as words joined by spaces: `evt.type=fsync`.
    filter: Vec<String>,
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

pub fn run(args: Args) -> anyhow::Result<()> {
    let interval = args
        .interval
        .as_deref()
        .map(parse_duration)
        .transpose()
        .map_err(|e| UsageError(format!("--interval: {e}")))?;
    let input = input::open(&args.capture, &args.filter, true)?;
    let title = args.capture.short_name();
    let write = |out: &mut dyn Write| -> anyhow::Result<()> {
        match args.format {
            Format::Csv => write_csv(out, &input),
            Format::Jsonl => write_jsonl(out, &input),
            Format::Svg => write_svg(out, &input, interval, &title),
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

/// Text for an SVG text node or attribute.
fn xml(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&apos;"),
            // XML 1.0 forbids most control characters even as references.
            c if c.is_control() => o.push('\u{fffd}'),
            c => o.push(c),
        }
    }
    o
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

/// Heatmap colour of a shade level (1..levels-1): light yellow through orange to dark red.
fn heat(level: usize, levels: usize) -> String {
    const STOPS: [(f64, f64, f64); 4] = [
        (255.0, 237.0, 160.0),
        (254.0, 178.0, 76.0),
        (240.0, 59.0, 32.0),
        (128.0, 0.0, 38.0),
    ];
    let t = if levels > 2 {
        (level - 1) as f64 / (levels - 2) as f64
    } else {
        1.0
    };
    let x = t * (STOPS.len() - 1) as f64;
    let i = (x.floor() as usize).min(STOPS.len() - 2);
    let f = x - i as f64;
    let (a, b) = (STOPS[i], STOPS[i + 1]);
    let mix = |p: f64, q: f64| (p + (q - p) * f).round() as u8;
    format!("#{:02x}{:02x}{:02x}", mix(a.0, b.0), mix(a.1, b.1), mix(a.2, b.2))
}

const LEVELS: usize = 9;

fn write_svg(out: &mut dyn Write, input: &Input, interval: Option<u64>, file: &str) -> anyhow::Result<()> {
    let r = &input.reader;
    let (start, end) = scan::capture_span(r);
    let span = (end - start).max(1);
    let interval = interval.unwrap_or_else(|| nice(span.div_ceil(400)).max(1_000_000));
    let cols = span.div_ceil(interval).max(1);
    if cols > 5_000 {
        return Err(UsageError(format!(
            "--interval {} makes {cols} columns (at most 5000): use a longer one",
            fmt_ns(interval)
        ))
        .into());
    }
    let (sp, stats) = crate::spectrogram::bin(input, start, end, interval)?;
    let svg = render_svg(&sp, cols, file, &input.src, stats.matched);
    out.write_all(svg.as_bytes())?;
    Ok(())
}

/// The heatmap as an SVG document: time → right, latency ↑ (log scale, ten rows per decade).
pub fn render_svg(sp: &Spectrogram, cols: u64, file: &str, filter: &str, matched: u64) -> String {
    // Latency rows shown: whole decades around the non-empty cells (at least 1us..1ms).
    let used: Vec<usize> = (0..COLS).filter(|&c| sp.rows().any(|(_, r)| r[c] > 0)).collect();
    let lo_dec = used.first().map_or(3, |&c| c / COLS_PER_DECADE).min(3);
    let hi_dec = used
        .last()
        .map_or(6, |&c| c / COLS_PER_DECADE + 1)
        .clamp(6, COLS / COLS_PER_DECADE);
    let (row0, nrows) = (lo_dec * COLS_PER_DECADE, (hi_dec - lo_dec) * COLS_PER_DECADE);
    let (left, top, plot_w, cell_h) = (80.0, 60.0, 800.0, 5.0);
    let plot_h = nrows as f64 * cell_h;
    let cell_w = plot_w / cols as f64;
    let (width, height) = (left + plot_w + 150.0, top + plot_h + 60.0);
    let max = sp.max_cell();
    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(s, r#"<rect width="100%" height="100%" fill="white"/>"#);
    let heading = if filter.is_empty() {
        format!("Latency heatmap: {file}")
    } else {
        format!("Latency heatmap: {file} ({filter})")
    };
    let _ = writeln!(
        s,
        r#"<text x="{left}" y="24" font-size="16" font-weight="bold">{}</text>"#,
        xml(&heading)
    );
    let _ = writeln!(
        s,
        r##"<text x="{left}" y="44" fill="#555">{matched} events; columns of {}; ten rows per decade of latency</text>"##,
        fmt_ns(sp.interval())
    );
    let _ = writeln!(
        s,
        r##"<rect x="{left}" y="{top}" width="{plot_w}" height="{plot_h}" fill="#f8f8f8" stroke="#888"/>"##
    );
    // Cells: only the non-empty ones, each with its hover title.
    let _ = writeln!(s, r#"<g id="cells" shape-rendering="crispEdges">"#);
    for (row, counts) in sp.rows() {
        if row >= cols {
            continue;
        }
        let x = left + row as f64 * cell_w;
        let t0 = (row * sp.interval()) as f64 / 1e9;
        let t1 = t0 + sp.interval() as f64 / 1e9;
        for (c, &n) in counts.iter().enumerate().skip(row0).take(nrows) {
            if n == 0 {
                continue;
            }
            let y = top + plot_h - (c - row0 + 1) as f64 * cell_h;
            let (l0, l1) = column_range(c);
            let _ = writeln!(
                s,
                r#"<rect x="{x:.2}" y="{y:.2}" width="{cell_w:.2}" height="{cell_h}" fill="{}"><title>{t0:.3}s – {t1:.3}s, {} – {}: {n} events</title></rect>"#,
                heat(shade(n, max, LEVELS), LEVELS),
                fmt_ns(l0),
                fmt_ns(l1)
            );
        }
    }
    let _ = writeln!(s, "</g>");
    // Y axis: a label and a grid line per decade.
    let labels = [
        "1ns", "10ns", "100ns", "1us", "10us", "100us", "1ms", "10ms", "100ms", "1s", "10s",
    ];
    for d in lo_dec..=hi_dec {
        let y = top + plot_h - ((d - lo_dec) * COLS_PER_DECADE) as f64 * cell_h;
        let _ = writeln!(
            s,
            r##"<line x1="{}" y1="{y}" x2="{}" y2="{y}" stroke="#ccc"/><text x="{}" y="{}" text-anchor="end">{}</text>"##,
            left - 5.0,
            left + plot_w,
            left - 8.0,
            y + 4.0,
            labels[d.min(labels.len() - 1)]
        );
    }
    let _ = writeln!(
        s,
        r#"<text transform="translate(18 {}) rotate(-90)" text-anchor="middle">latency</text>"#,
        top + plot_h / 2.0
    );
    // X axis: about eight ticks at round times.
    let span_s = (cols * sp.interval()) as f64 / 1e9;
    let step = nice_f(span_s / 8.0);
    let mut t = 0.0;
    while t <= span_s + 1e-9 {
        let x = left + t / span_s * plot_w;
        let _ = writeln!(
            s,
            r##"<line x1="{x:.2}" y1="{}" x2="{x:.2}" y2="{}" stroke="#888"/><text x="{x:.2}" y="{}" text-anchor="middle">{}</text>"##,
            top + plot_h,
            top + plot_h + 5.0,
            top + plot_h + 18.0,
            fmt_secs(t)
        );
        t += step;
    }
    let _ = writeln!(
        s,
        r#"<text x="{}" y="{}" text-anchor="middle">time since the capture started (s)</text>"#,
        left + plot_w / 2.0,
        top + plot_h + 40.0
    );
    // Legend: one swatch per shade level with the counts it stands for.
    let lx = left + plot_w + 20.0;
    let _ = writeln!(
        s,
        r#"<g id="legend"><text x="{lx}" y="{}">events per cell</text>"#,
        top + 10.0
    );
    let mut from = 1u64;
    let mut drawn = 0;
    for level in 1..LEVELS {
        let upto = (from..=max.max(1))
            .take_while(|&n| shade(n, max, LEVELS) <= level)
            .last();
        let Some(upto) = upto else { continue };
        // Levels no whole count maps to (small maxima) get no swatch, and leave no gap.
        let y = top + 20.0 + drawn as f64 * 18.0;
        drawn += 1;
        let range = if upto == from {
            format!("{from}")
        } else {
            format!("{from}–{upto}")
        };
        let _ = writeln!(
            s,
            r##"<rect x="{lx}" y="{y}" width="14" height="14" fill="{}" stroke="#888"><title>{range} events</title></rect><text x="{}" y="{}">{range}</text>"##,
            heat(level, LEVELS),
            lx + 20.0,
            y + 11.0
        );
        from = upto + 1;
        if upto >= max {
            break;
        }
    }
    let _ = writeln!(s, "</g>");
    s.push_str("</svg>\n");
    s
}

/// 1, 2 or 5 times a power of ten (seconds), at least `x`.
fn nice_f(x: f64) -> f64 {
    let x = if x.is_finite() && x > 0.0 { x } else { 1.0 };
    let p = 10f64.powf(x.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|m| m * p)
        .find(|&v| v >= x * 0.999)
        .unwrap_or(10.0 * p)
}

fn fmt_secs(t: f64) -> String {
    let s = format!("{t:.3}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    format!("{s}s")
}
