//! The pictures `export --format svg` draws, as SVG text: one latency heatmap (time × latency,
//! as Brendan Gregg's) with its legend ([`render_heatmap`]), or a comparison of two sides
//! ([`render_comparison`]): their heatmaps one above the other on the same time and latency
//! axes and one colour scale, then their latency distributions overlaid, with each side's
//! percentiles beside them.
//!
//! Every name and filter is written through [`text`]: host strings escaped visibly, then for XML.

use std::fmt::Write as _;

use iocap_analysis::spectro::{column_range, shade, COLS, COLS_PER_DECADE};
use iocap_analysis::units::fmt_ns;
use iocap_analysis::{LatencyHist, Spectrogram};
use iocap_format::escape::escape;

/// Shades of the heatmap's colour scale (0 is an empty cell).
const LEVELS: usize = 9;
/// The plots' left edge (the latency labels are left of it), width, and a latency row's height.
const LEFT: f64 = 80.0;
const PLOT_W: f64 = 800.0;
const CELL_H: f64 = 5.0;
/// The page's width: the plots and a legend column right of them.
const WIDTH: f64 = LEFT + PLOT_W + 150.0;
/// Decade labels of the latency axes, from 1 ns.
const DECADES: [&str; 11] = [
    "1ns", "10ns", "100ns", "1us", "10us", "100us", "1ms", "10ms", "100ms", "1s", "10s",
];
/// The two sides' colours in the distribution plot (blue and orange, told apart by the
/// colour-blind too), and their letters.
const SIDE_COLOURS: [&str; 2] = ["#1f77b4", "#e66101"];
const SIDE_NAMES: [&str; 2] = ["A", "B"];

/// A string for SVG text or an attribute: a name or filter escaped as host strings are (control
/// characters, bidi overrides visible), then for XML.
pub fn text(s: &str) -> String {
    xml(&escape(s.as_bytes()))
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

/// What the heatmaps of one picture share: time columns, latency decades, colour scale.
struct Axes {
    /// Time columns, each `interval` ns, from each capture's start.
    cols: u64,
    interval: u64,
    /// Latency decades shown, `lo_dec..hi_dec` (10^lo_dec ns up).
    lo_dec: usize,
    hi_dec: usize,
    /// The highest cell count of all the heatmaps: the darkest shade.
    max: u64,
    /// What the latency axis measures: `latency`, or another duration field (`--measure`).
    what: &'static str,
}

impl Axes {
    /// Axes over `sps` (same interval): whole decades around every non-empty cell and every
    /// column of `dists` with events (at least 1us..1ms), and `cols` columns or as many as an
    /// event's row needs.
    fn new(sps: &[&Spectrogram], dists: &[&[u64; COLS]], cols: u64, what: &'static str) -> Axes {
        let used = |c: usize| dists.iter().any(|d| d[c] > 0) || sps.iter().any(|sp| sp.rows().any(|(_, r)| r[c] > 0));
        let first = (0..COLS).find(|&c| used(c));
        let last = (0..COLS).rev().find(|&c| used(c));
        let lo_dec = first.map_or(3, |c| c / COLS_PER_DECADE).min(3);
        let hi_dec = last
            .map_or(6, |c| c / COLS_PER_DECADE + 1)
            .clamp(6, COLS / COLS_PER_DECADE);
        // An event at the capture's very end starts a row of its own: draw it, not drop it.
        let rows = sps
            .iter()
            .filter_map(|sp| sp.last_row())
            .map(|r| r + 1)
            .max()
            .unwrap_or(0);
        Axes {
            cols: cols.max(rows).max(1),
            interval: sps.first().map_or(1, |sp| sp.interval()),
            lo_dec,
            hi_dec,
            max: sps.iter().map(|sp| sp.max_cell()).max().unwrap_or(0),
            what,
        }
    }

    /// The first latency column shown and how many.
    fn rows(&self) -> (usize, usize) {
        (
            self.lo_dec * COLS_PER_DECADE,
            (self.hi_dec - self.lo_dec) * COLS_PER_DECADE,
        )
    }

    /// Height of a heatmap's plot.
    fn plot_h(&self) -> f64 {
        self.rows().1 as f64 * CELL_H
    }

    /// The time the columns span, s.
    fn span_s(&self) -> f64 {
        (self.cols * self.interval) as f64 / 1e9
    }
}

/// One heatmap of a picture: what its heading says and what it draws.
struct Panel<'a> {
    heading: String,
    sp: &'a Spectrogram,
    matched: u64,
    /// The id of its group of cells (unique in the document).
    id: &'a str,
}

/// Open the document.
fn begin(s: &mut String, height: f64) {
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" viewBox="0 0 {WIDTH} {height}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(s, r#"<rect width="100%" height="100%" fill="white"/>"#);
}

/// A heading, and the line under it: `heading` is text already.
fn heading(s: &mut String, y: f64, heading: &str, note: &str) {
    let _ = writeln!(
        s,
        r#"<text x="{LEFT}" y="{y}" font-size="16" font-weight="bold">{heading}</text>"#
    );
    let _ = writeln!(s, r##"<text x="{LEFT}" y="{}" fill="#555">{note}</text>"##, y + 20.0);
}

/// `file (filter)`, or `file` without a filter, as SVG text.
fn named(file: &str, filter: &str) -> String {
    if filter.is_empty() {
        text(file)
    } else {
        format!("{} ({})", text(file), text(filter))
    }
}

/// One latency heatmap (of `what`: `latency`, or another duration field): `file` under
/// `filter`, `cols` time columns.
pub fn render_heatmap(
    sp: &Spectrogram,
    cols: u64,
    file: &str,
    filter: &str,
    matched: u64,
    what: &'static str,
) -> String {
    let axes = Axes::new(&[sp], &[], cols, what);
    let title = if what == "latency" {
        "Latency".to_string()
    } else {
        what.to_string()
    };
    let panel = Panel {
        heading: format!("{title} heatmap: {}", named(file, filter)),
        sp,
        matched,
        id: "cells",
    };
    let top = 60.0;
    let mut s = String::new();
    begin(&mut s, top + axes.plot_h() + 60.0);
    heatmap(&mut s, &panel, &axes, top);
    legend(&mut s, top, axes.max);
    s.push_str("</svg>\n");
    s
}

/// One side of a comparison, binned.
pub struct Side<'a> {
    /// The capture's name, and the side's filter.
    pub file: &'a str,
    pub filter: &'a str,
    /// Its heatmap, from its own capture's start.
    pub sp: &'a Spectrogram,
    /// Its events per latency column (the heatmap's rows, whole capture).
    pub dist: &'a [u64; COLS],
    /// Its latencies, for the percentiles (as `report` reads them).
    pub hist: &'a LatencyHist,
}

/// Two sides compared: their heatmaps on shared axes and colour scale (`cols` columns at
/// least), then their distributions overlaid, of `what` (`latency`, or another duration).
pub fn render_comparison(sides: [&Side; 2], cols: u64, what: &'static str) -> String {
    let axes = Axes::new(&[sides[0].sp, sides[1].sp], &[sides[0].dist, sides[1].dist], cols, what);
    // Heading, two heatmaps, each with its heading and time axis, the distribution.
    let panel_h = 50.0 + axes.plot_h() + 50.0;
    let top = 70.0;
    let dist_top = top + 2.0 * panel_h + 60.0;
    let dist_h = 200.0;
    let mut s = String::new();
    begin(&mut s, dist_top + dist_h + 60.0);
    heading(
        &mut s,
        24.0,
        "Latency comparison",
        "Each side's time counts from its own capture's start; both heatmaps share their axes and colour scale.",
    );
    for (k, side) in sides.iter().enumerate() {
        let panel = Panel {
            heading: format!("{}: {}", SIDE_NAMES[k], named(side.file, side.filter)),
            sp: side.sp,
            matched: side.hist.count(),
            id: ["cells-a", "cells-b"][k],
        };
        heatmap(&mut s, &panel, &axes, top + k as f64 * panel_h + 50.0);
    }
    legend(&mut s, top + 50.0, axes.max);
    distribution(&mut s, sides, &axes, dist_top, dist_h);
    s.push_str("</svg>\n");
    s
}

/// A heatmap with its heading above `top`, its plot from `top`, and its axes.
fn heatmap(s: &mut String, panel: &Panel, axes: &Axes, top: f64) {
    let sp = panel.sp;
    heading(
        s,
        top - 36.0,
        &panel.heading,
        &format!(
            "{} events; columns of {}; ten rows per decade of {}",
            panel.matched,
            fmt_ns(axes.interval),
            axes.what
        ),
    );
    let (row0, nrows) = axes.rows();
    let plot_h = axes.plot_h();
    let cell_w = PLOT_W / axes.cols as f64;
    let _ = writeln!(
        s,
        r##"<rect x="{LEFT}" y="{top}" width="{PLOT_W}" height="{plot_h}" fill="#f8f8f8" stroke="#888"/>"##
    );
    // Cells: only the non-empty ones, each with its hover title.
    let _ = writeln!(s, r#"<g id="{}" shape-rendering="crispEdges">"#, panel.id);
    for (row, counts) in sp.rows() {
        let x = LEFT + row as f64 * cell_w;
        let t0 = (row * sp.interval()) as f64 / 1e9;
        let t1 = t0 + sp.interval() as f64 / 1e9;
        for (c, &n) in counts.iter().enumerate().skip(row0).take(nrows) {
            if n == 0 {
                continue;
            }
            let y = top + plot_h - (c - row0 + 1) as f64 * CELL_H;
            let (l0, l1) = column_range(c);
            let _ = writeln!(
                s,
                r#"<rect x="{x:.2}" y="{y:.2}" width="{cell_w:.2}" height="{CELL_H}" fill="{}"><title>{t0:.3}s – {t1:.3}s, {} – {}: {n} events</title></rect>"#,
                heat(shade(n, axes.max, LEVELS), LEVELS),
                fmt_ns(l0),
                fmt_ns(l1)
            );
        }
    }
    let _ = writeln!(s, "</g>");
    // Y axis: a label and a grid line per decade.
    for d in axes.lo_dec..=axes.hi_dec {
        let y = top + plot_h - ((d - axes.lo_dec) * COLS_PER_DECADE) as f64 * CELL_H;
        let _ = writeln!(
            s,
            r##"<line x1="{}" y1="{y}" x2="{}" y2="{y}" stroke="#ccc"/><text x="{}" y="{}" text-anchor="end">{}</text>"##,
            LEFT - 5.0,
            LEFT + PLOT_W,
            LEFT - 8.0,
            y + 4.0,
            DECADES[d.min(DECADES.len() - 1)]
        );
    }
    let _ = writeln!(
        s,
        r#"<text transform="translate(18 {}) rotate(-90)" text-anchor="middle">{}</text>"#,
        top + plot_h / 2.0,
        axes.what
    );
    // X axis: about eight ticks at round times.
    let span_s = axes.span_s();
    let step = nice_f(span_s / 8.0);
    let mut t = 0.0;
    while t <= span_s + 1e-9 {
        let x = LEFT + t / span_s * PLOT_W;
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
        LEFT + PLOT_W / 2.0,
        top + plot_h + 40.0
    );
}

/// The colour scale, right of the plots from `top`: one swatch per shade level with the counts
/// it stands for.
fn legend(s: &mut String, top: f64, max: u64) {
    let lx = LEFT + PLOT_W + 20.0;
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
}

/// The sides' latency distributions overlaid, from `top`, `h` high: latency → right on the
/// heatmaps' decades, each side's share of its own events per column ↑ (so sides of unequal
/// counts compare by shape), a step line per side with a hover point per non-empty column;
/// right of it, each side's colour, count and percentiles.
fn distribution(s: &mut String, sides: [&Side; 2], axes: &Axes, top: f64, h: f64) {
    let (row0, nrows) = axes.rows();
    let col_w = PLOT_W / nrows as f64;
    let share = |side: &Side, c: usize| match side.hist.count() {
        0 => 0.0,
        n => side.dist[c] as f64 / n as f64,
    };
    let peak = sides
        .iter()
        .flat_map(|side| (0..COLS).map(move |c| share(side, c)))
        .fold(0.0, f64::max);
    let y_max = nice_f(peak.max(0.01) * 100.0) / 100.0;
    heading(
        s,
        top - 36.0,
        "Latency distribution",
        &format!("Share of each side's events per tenth of a decade of {}.", axes.what),
    );
    let _ = writeln!(
        s,
        r##"<rect x="{LEFT}" y="{top}" width="{PLOT_W}" height="{h}" fill="#f8f8f8" stroke="#888"/>"##
    );
    // Y axis: shares at round steps.
    let step = nice_f(y_max * 100.0 / 4.0) / 100.0;
    let mut v = 0.0;
    while v <= y_max + 1e-9 {
        let y = top + h - v / y_max * h;
        let _ = writeln!(
            s,
            r##"<line x1="{}" y1="{y:.2}" x2="{}" y2="{y:.2}" stroke="#ddd"/><text x="{}" y="{:.2}" text-anchor="end">{}%</text>"##,
            LEFT - 5.0,
            LEFT + PLOT_W,
            LEFT - 8.0,
            y + 4.0,
            fmt_pct(v * 100.0)
        );
        v += step;
    }
    let _ = writeln!(
        s,
        r#"<text transform="translate(18 {}) rotate(-90)" text-anchor="middle">share of events</text>"#,
        top + h / 2.0
    );
    // X axis: the heatmaps' decades.
    for d in axes.lo_dec..=axes.hi_dec {
        let x = LEFT + ((d - axes.lo_dec) * COLS_PER_DECADE) as f64 * col_w;
        let _ = writeln!(
            s,
            r##"<line x1="{x:.2}" y1="{top}" x2="{x:.2}" y2="{}" stroke="#ccc"/><text x="{x:.2}" y="{}" text-anchor="middle">{}</text>"##,
            top + h + 5.0,
            top + h + 18.0,
            DECADES[d.min(DECADES.len() - 1)]
        );
    }
    let _ = writeln!(
        s,
        r#"<text x="{}" y="{}" text-anchor="middle">{}</text>"#,
        LEFT + PLOT_W / 2.0,
        top + h + 40.0,
        axes.what
    );
    let y_of = |f: f64| top + h - f / y_max * h;
    for (k, side) in sides.iter().enumerate() {
        let (colour, name) = (SIDE_COLOURS[k], SIDE_NAMES[k]);
        let _ = writeln!(s, r#"<g id="dist-{}">"#, name.to_lowercase());
        let mut points = String::new();
        for c in row0..row0 + nrows {
            let (x0, y) = (LEFT + (c - row0) as f64 * col_w, y_of(share(side, c)));
            let _ = write!(points, "{x0:.2},{y:.2} {:.2},{y:.2} ", x0 + col_w);
        }
        let _ = writeln!(
            s,
            r#"<polyline points="{}" fill="none" stroke="{colour}" stroke-width="2"/>"#,
            points.trim_end()
        );
        // Every column with events (the decades drawn hold them all): the points add up to
        // the side's count.
        for (c, &n) in side.dist.iter().enumerate().filter(|(_, &n)| n > 0) {
            let x = LEFT + (c as f64 - row0 as f64 + 0.5) * col_w;
            let (l0, l1) = column_range(c);
            let _ = writeln!(
                s,
                r#"<circle cx="{x:.2}" cy="{:.2}" r="3" fill="{colour}"><title>{name}: {} – {}: {n} events ({}%)</title></circle>"#,
                y_of(share(side, c)),
                fmt_ns(l0),
                fmt_ns(l1),
                fmt_pct(share(side, c) * 100.0)
            );
        }
        let _ = writeln!(s, "</g>");
        // Beside the plot: the side's colour, name, count and percentiles.
        let lx = LEFT + PLOT_W + 20.0;
        let ly = top + k as f64 * (h / 2.0);
        let hist = side.hist;
        let figure = |f: &dyn Fn(&LatencyHist) -> u64| {
            if hist.is_empty() {
                "-".to_string()
            } else {
                fmt_ns(f(hist))
            }
        };
        let lines = [
            format!("{} events", hist.count()),
            format!("p50 {}", figure(&|h| h.percentile(50.0))),
            format!("p90 {}", figure(&|h| h.percentile(90.0))),
            format!("p99 {}", figure(&|h| h.percentile(99.0))),
            format!("max {}", figure(&LatencyHist::max)),
        ];
        let _ = writeln!(
            s,
            r##"<g id="figures-{}"><title>{}</title><rect x="{lx}" y="{ly}" width="14" height="14" fill="{colour}"/><text x="{}" y="{}" font-weight="bold">{name}</text>"##,
            name.to_lowercase(),
            named(side.file, side.filter),
            lx + 20.0,
            ly + 11.0
        );
        for (i, line) in lines.iter().enumerate() {
            let _ = writeln!(
                s,
                r#"<text x="{}" y="{:.2}">{line}</text>"#,
                lx + 20.0,
                ly + 28.0 + i as f64 * 15.0
            );
        }
        let _ = writeln!(s, "</g>");
    }
}

/// A percentage with at most one decimal: `12.5`, `3`.
fn fmt_pct(p: f64) -> String {
    let s = format!("{p:.1}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// 1, 2 or 5 times a power of ten, at least `x`.
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
