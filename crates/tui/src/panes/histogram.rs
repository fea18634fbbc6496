//! The histogram pane: the latency distribution of the view under the filter, as log2 bars
//! with counts, and p50/p90/p99/p99.9/max from [`iocap_analysis::LatencyHist`] (the numbers
//! `iocap report` prints). Before the first scan answers, bars come from the chunk summaries.
//! Block requests count by the view's measure (`m`: latency, queue, queue+device), which the
//! title names when it is not latency.

use iocap_analysis::units::{self, Style::Terminal as TERM};
use iocap_analysis::Measure;
use iocap_format::{log2_bucket_range, LOG2_BUCKETS};
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use ratatui::Frame;

use crate::app::App;
use crate::panes::{block, counted, fit_title};
use crate::panes::spectrogram::render::measure_label;

/// The figures over the bars, in order: the percentiles of [`QUANTILES`], then the maximum.
const FIGURES: [&str; 5] = ["p50", "p90", "p99", "p99.9", "max"];
/// The percentiles the first figures are.
const QUANTILES: [f64; 4] = [50.0, 90.0, 99.0, 99.9];
/// The widest duration [`units::duration`] writes (`20.0ms`, `1234s`).
const VALUE_W: usize = 6;
/// Bars the pane keeps at any terminal size (the layout gives it the room): five rows of a
/// latency range of up to 2^20 (1 µs to 1 s) put two modes a decade apart in rows with one
/// between them, so a bimodal distribution shows as two bars and a gap at 80×24.
pub const MIN_BARS: u16 = 5;

/// The figures in lines of at most `width` cells, as many to a line as fit whole (whatever
/// their values): the indices in [`FIGURES`] of each line's.
fn pack(width: usize) -> Vec<Vec<usize>> {
    let mut lines: Vec<Vec<usize>> = vec![Vec::new()];
    let mut used = 0;
    for (i, f) in FIGURES.iter().enumerate() {
        let w = f.len() + 1 + VALUE_W;
        if used > 0 && used + 1 + w > width {
            lines.push(Vec::new());
            used = 0;
        }
        used += w + usize::from(used > 0);
        if let Some(l) = lines.last_mut() {
            l.push(i);
        }
    }
    lines
}

/// The least height of a pane `width` cells wide: borders, the figures' lines and
/// [`MIN_BARS`].
pub fn min_height(width: u16) -> u16 {
    let figures = pack(usize::from(width.saturating_sub(2))).len() as u16;
    2 + figures + MIN_BARS
}

/// Draw the histogram pane in `area`.
pub fn render(app: &App, f: &mut Frame, area: Rect) {
    let (log2, exact) = match app.hist() {
        Some(h) => (h.log2(), true),
        None => (summaries_log2(app), false),
    };
    let n: u64 = log2.iter().sum();
    let what = match measure_label(app.view.measure) {
        Some(m) => format!("Latency, blk {m}"),
        None => "Latency".into(),
    };
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
        Some(_) => lines.push(Line::from("no matching events in view")),
        None => lines.push(Line::styled("percentiles: scanning…", app.theme.dim())),
    }
    let rows = usize::from(inner.height).saturating_sub(lines.len());
    lines.extend(bars(app, &log2, rows, usize::from(inner.width)));
    f.render_widget(Paragraph::new(lines), inner);
}

/// The log2 histogram of the chunks in view, from the index (no filter, latency only: only
/// shown then).
fn summaries_log2(app: &App) -> [u64; LOG2_BUCKETS] {
    let mut out = [0u64; LOG2_BUCKETS];
    if !app.filter.applied.is_empty() || app.view.measure != Measure::Latency {
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
    let (Some(lo), Some(hi)) = (log2.iter().position(|&c| c > 0), log2.iter().rposition(|&c| c > 0)) else {
        return Vec::new();
    };
    if rows == 0 {
        return Vec::new();
    }
    let per = (hi - lo + 1).div_ceil(rows);
    let groups: Vec<(u64, u64)> = (lo..=hi)
        .step_by(per)
        .map(|b| {
            let end = (b + per).min(hi + 1);
            (log2_bucket_range(b).0, log2[b..end].iter().sum())
        })
        .collect();
    let max = groups.iter().map(|g| g.1).max().unwrap_or(1).max(1);
    // "  1.00ms ████ 12.3k": label, bar, count.
    let bar_w = width.saturating_sub(7 + 1 + 6);
    groups
        .into_iter()
        .map(|(from, count)| {
            let len = ((count as f64 / max as f64) * bar_w as f64).ceil() as usize;
            Line::from(vec![
                Span::styled(format!("{:>6} ", units::duration(from.max(1), TERM)), app.theme.dim()),
                Span::styled("█".repeat(len.min(bar_w)), app.theme.bar()),
                Span::raw(format!(" {}", units::short_count(count))),
            ])
        })
        .collect()
}
