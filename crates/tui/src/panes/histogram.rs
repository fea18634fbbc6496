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
use crate::panes::block;
use crate::panes::spectrogram::render::measure_label;

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
    let approx = if exact { "" } else { " ≈index" };
    let mut title = format!(" {what}, {} events{approx} ", units::count(n));
    if title.trim_end().chars().count() + 2 > usize::from(area.width) {
        // A narrow pane keeps the figures whole rather than the word.
        title = format!(" {what}, {}{approx} ", units::count(n));
    }
    let block = block(app, title, false);
    let inner = block.inner(area);
    f.render_widget(block, area);
    let mut lines = Vec::new();
    match app.hist() {
        Some(h) if !h.is_empty() => {
            let p = |q: f64| units::duration(h.percentile(q), TERM);
            let figures = [
                format!("p50 {}", p(50.0)),
                format!("p90 {}", p(90.0)),
                format!("p99 {}", p(99.0)),
                format!("p99.9 {}", p(99.9)),
                format!("max {}", units::duration(h.max(), TERM)),
            ];
            // As many figures per line as fit whole: a narrow pane (80×24) takes three lines
            // rather than cutting a number off.
            let width = usize::from(inner.width);
            let mut line = String::new();
            for fig in figures {
                if !line.is_empty() && line.chars().count() + 1 + fig.chars().count() > width {
                    lines.push(Line::from(std::mem::take(&mut line)));
                }
                if !line.is_empty() {
                    line.push(' ');
                }
                line.push_str(&fig);
            }
            lines.push(Line::from(line));
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
