//! The histogram pane: the latency distribution of the view under the filter, as log2 bars
//! with counts, and p50/p90/p99/p99.9/max from [`iocap_analysis::LatencyHist`] (the numbers
//! `iocap report` prints). Before the first scan answers, bars come from the chunk summaries.
//! Block requests count by the view's measure (`m`: latency, queue, queue+device), which the
//! title names when it is not latency.
//!
//! Comparing, both sides' distributions share the bars, overlaid in one row per range: the
//! upper half of a cell is A's bar, the lower half B's (`▀` A only, `▄` B only, both where both
//! reach, in each side's colour), with a line of figures per side; a B figure whose 99 %
//! interval does not overlap A's is marked `*`, as `iocap compare` flags it.

use std::ops::Range;

use iocap_analysis::units::{self, Style::Terminal as TERM};
use iocap_analysis::{compare, LatencyHist};
use iocap_format::{log2_bucket_range, LOG2_BUCKETS};
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use ratatui::Frame;

use crate::app::App;
use super::{block, counted};
use crate::layout::histogram::{pack, FIGURES, QUANTILES, VALUE_W};
use crate::panes::{self, fit_title};
use crate::theme::Side;

/// Draw the histogram pane in `area`.
pub fn render(app: &App, f: &mut Frame, area: Rect) {
    if app.compare.is_some() {
        return render_compare(app, f, area);
    }
    let (log2, exact) = match app.hist() {
        Some(h) => (h.log2(), true),
        None => (summaries_log2(app), false),
    };
    let n: u64 = log2.iter().sum();
    let what = what(app);
    let title = match exact {
        true => {
            let [long, short] = counted(app, n);
            // A narrow pane keeps the figures whole rather than the words.
            fit_title(area.width, [format!(" {what}, {long} "), format!(" {what}, {short} ")])
        }
        false => format!(" {what}, {} ≈index ", units::count(n)),
    };
    let block = block(app, title, false);
    let inner = block.inner(area);
    f.render_widget(block, area);
    let mut lines = Vec::new();
    match app.hist() {
        Some(h) if !h.is_empty() => {
            let value = |i: usize| match i {
                4 => h.max(),
                _ => h.percentile(QUANTILES[i]),
            };
            // Each figure as wide as its widest value, so that lines of them align.
            for line in pack(usize::from(inner.width)) {
                let figs: Vec<String> = line
                    .into_iter()
                    .map(|i| format!("{} {:<VALUE_W$}", FIGURES[i], units::duration(value(i), TERM)))
                    .collect();
                lines.push(Line::from(figs.join(" ").trim_end().to_owned()));
            }
        }
        Some(_) => {
            lines.push(Line::from("no matching events in view"));
            if let Some(near) = app.near_miss() {
                lines.push(Line::styled(format!("did you mean {near}?"), app.theme.error()));
            }
        }
        None => lines.push(Line::styled("percentiles: scanning…", app.theme.dim())),
    }
    let rows = usize::from(inner.height).saturating_sub(lines.len());
    lines.extend(bars(app, &log2, rows, usize::from(inner.width)));
    f.render_widget(Paragraph::new(lines), inner);
}

/// What the pane plots: latency, and block requests or calls by their measure when not latency.
fn what(app: &App) -> String {
    match app.view.measure.label() {
        Some((who, m)) => format!("Latency, {who} {m}"),
        None => "Latency".into(),
    }
}

/// The pane comparing: A's and B's distributions overlaid, each side's figures on a line.
fn render_compare(app: &App, f: &mut Frame, area: Rect) {
    let (a, b) = (app.compare_answer().map(|a| &a.hist), app.hist());
    let count = |h: Option<&LatencyHist>| h.map_or("…".into(), |h| units::count(h.count()));
    let what = what(app);
    let title = fit_title(
        area.width,
        [
            format!(" {what}, A {} B {} ", count(a), count(b)),
            format!(" A {} B {} ", count(a), count(b)),
        ],
    );
    let block = block(app, title, false);
    let inner = block.inner(area);
    f.render_widget(block, area);
    let width = usize::from(inner.width);
    let mut lines = side_figures(app, a, b, width).to_vec();
    let log2 = |h: Option<&LatencyHist>| h.map_or([0; LOG2_BUCKETS], |h| h.log2());
    let rows = usize::from(inner.height).saturating_sub(lines.len());
    lines.extend(overlaid(app, &log2(a), &log2(b), rows, width));
    f.render_widget(Paragraph::new(lines), inner);
}

/// The two sides' figures, a line each in `width` cells: its letter, then as many of p50, p99,
/// max, p90 and p99.9 (in that order of need, shown in [`FIGURES`]' order) as fit on both
/// lines, each as wide on both so that they align. B's percentiles whose 99 % interval does not
/// overlap A's are marked `*`.
fn side_figures(app: &App, a: Option<&LatencyHist>, b: Option<&LatencyHist>, width: usize) -> [Line<'static>; 2] {
    let figures = |h: Option<&LatencyHist>, against: Option<&LatencyHist>| -> Option<Vec<String>> {
        let h = h.filter(|h| !h.is_empty())?;
        let figure = |i: usize| {
            let (value, flagged) = match i {
                4 => (h.max(), false),
                _ => {
                    let q = QUANTILES[i];
                    let iv = |h: &LatencyHist| compare::quantile_interval(h, q, compare::Z99);
                    let flagged = against.and_then(iv).zip(iv(h)).is_some_and(|(x, y)| compare::disjoint(x, y));
                    (h.percentile(q), flagged)
                }
            };
            format!("{} {}{}", FIGURES[i], units::duration(value, TERM), if flagged { "*" } else { "" })
        };
        Some((0..FIGURES.len()).map(figure).collect())
    };
    let sides = [(Side::A, a, figures(a, None)), (Side::B, b, figures(b, a))];
    // Each figure as wide as its wider side; those that fit, by need.
    let widths: Vec<usize> = (0..FIGURES.len())
        .map(|i| sides.iter().filter_map(|s| s.2.as_ref()).map(|f| panes::width(&f[i])).max().unwrap_or(0))
        .collect();
    let w = |i: usize| widths[i];
    let mut shown = Vec::new();
    // The letter, then a blank and a figure for each shown.
    let mut used = 1;
    for i in [0, 2, 4, 1, 3] {
        if used + 1 + w(i) <= width {
            used += 1 + w(i);
            shown.push(i);
        }
    }
    shown.sort_unstable();
    sides.map(|(side, h, figures)| {
        let letter = Span::styled(format!("{side:?} "), app.theme.side(side));
        let text = match (h, figures) {
            (None, _) => return Line::from(vec![letter, Span::styled("scanning…", app.theme.dim())]),
            (Some(_), None) => "no matching events".to_owned(),
            (Some(_), Some(f)) => {
                let cells: Vec<String> = shown.iter().map(|&i| format!("{:<w$}", f[i], w = w(i))).collect();
                cells.join(" ").trim_end().to_owned()
            }
        };
        Line::from(vec![letter, Span::raw(text)])
    })
}

/// The two distributions in one row per group of log2 buckets (the groups of [`bars`], over
/// the buckets either side has): A's bar in the upper half of each cell, B's in the lower,
/// both scaled to the larger count, then each side's count.
fn overlaid(app: &App, a: &[u64; LOG2_BUCKETS], b: &[u64; LOG2_BUCKETS], rows: usize, width: usize) -> Vec<Line<'static>> {
    let mut both = [0u64; LOG2_BUCKETS];
    for (o, (x, y)) in both.iter_mut().zip(a.iter().zip(b)) {
        *o = x + y;
    }
    let groups: Vec<(u64, u64, u64)> = bucket_runs(&both, rows)
        .into_iter()
        .map(|r| (log2_bucket_range(r.start).0, a[r.clone()].iter().sum(), b[r].iter().sum()))
        .collect();
    let max = groups.iter().map(|g| g.1.max(g.2)).max().unwrap_or(1).max(1);
    // "  1.00ms ▀▀██▄ 12.3k 10.1k": label, bars, counts.
    let bar_w = width.saturating_sub(7 + 1 + 12);
    let len = |n: u64| bar_len(n, max, bar_w);
    let (ca, cb) = (app.theme.side_color(Side::A), app.theme.side_color(Side::B));
    groups
        .into_iter()
        .map(|(from, na, nb)| {
            let (la, lb) = (len(na), len(nb));
            let mut spans = vec![Span::styled(format!("{:>6} ", units::duration(from.max(1), TERM)), app.theme.dim())];
            for i in 0..la.max(lb) {
                let (glyph, style) = match (i < la, i < lb) {
                    // Both: the upper half in A's colour over B's; without colours, a full block.
                    (true, true) => match (ca, cb) {
                        (Some(ca), Some(cb)) => ("▀", Style::default().fg(ca).bg(cb)),
                        _ => ("█", Style::default()),
                    },
                    (true, false) => ("▀", app.theme.side(Side::A)),
                    _ => ("▄", app.theme.side(Side::B)),
                };
                spans.push(Span::styled(glyph, style));
            }
            // The counts in two columns, after the longest bar.
            let pad = " ".repeat(bar_w - la.max(lb));
            spans.push(Span::raw(format!("{pad} {:>5} {:>5}", units::short_count(na), units::short_count(nb))));
            Line::from(spans)
        })
        .collect()
}

/// The log2 buckets from the lowest to the highest that holds events, in runs of equal length,
/// at most `rows` of them: the buckets each bar counts.
fn bucket_runs(log2: &[u64; LOG2_BUCKETS], rows: usize) -> Vec<Range<usize>> {
    let (Some(lo), Some(hi)) = (log2.iter().position(|&c| c > 0), log2.iter().rposition(|&c| c > 0)) else {
        return Vec::new();
    };
    if rows == 0 {
        return Vec::new();
    }
    let per = (hi - lo + 1).div_ceil(rows);
    (lo..=hi).step_by(per).map(|b| b..(b + per).min(hi + 1)).collect()
}

/// Cells of a bar of `n` where `max` fills `width`: a bar for any events at all.
fn bar_len(n: u64, max: u64, width: usize) -> usize {
    (((n as f64 / max.max(1) as f64) * width as f64).ceil() as usize).min(width)
}

/// The log2 histogram of the chunks in view, from the index (no filter, latency only: only
/// shown then).
fn summaries_log2(app: &App) -> [u64; LOG2_BUCKETS] {
    let mut out = [0u64; LOG2_BUCKETS];
    if !app.filter.applied.is_empty() || !app.view.measure.is_latency() {
        return out;
    }
    let r = &app.cap.reader;
    for i in r.chunks_in(app.view.start, app.view_end()) {
        for (o, c) in out.iter_mut().zip(r.chunks()[i].summary.log2_hist.iter()) {
            *o += c;
        }
    }
    out
}

/// One line per group of log2 buckets between the lowest and highest non-empty one.
fn bars(app: &App, log2: &[u64; LOG2_BUCKETS], rows: usize, width: usize) -> Vec<Line<'static>> {
    let groups: Vec<(u64, u64)> = bucket_runs(log2, rows)
        .into_iter()
        .map(|r| (log2_bucket_range(r.start).0, log2[r].iter().sum()))
        .collect();
    let max = groups.iter().map(|g| g.1).max().unwrap_or(1).max(1);
    // "  1.00ms ████ 12.3k": label, bar, count.
    let bar_w = width.saturating_sub(7 + 1 + 6);
    groups
        .into_iter()
        .map(|(from, count)| {
            Line::from(vec![
                Span::styled(format!("{:>6} ", units::duration(from.max(1), TERM)), app.theme.dim()),
                Span::styled("█".repeat(bar_len(count, max, bar_w)), app.theme.bar()),
                Span::raw(format!(" {}", units::short_count(count))),
            ])
        })
        .collect()
}
