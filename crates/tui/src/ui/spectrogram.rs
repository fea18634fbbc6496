//! Drawing the spectrogram: event counts per (time interval, latency column) as a heat map,
//! with the cursor, the region being selected, axis labels, drop marks and a legend.
//!
//! Sysdig orientation (default): latency 1 ns … 10 s+ left→right, one row per interval, time
//! going down. Heatmap orientation: time left→right, latency going up. The title says what block
//! requests are plotted by when it is not their latency (`blk: queue`, `blk: q+dev`).
//!
//! Comparing, one plot shows B − A cell by cell (`+` in warm colours where B has more events,
//! `-` in blue where A has, `·` where both have the same, the size of the difference by shade),
//! or two plots show A and B side by side, shaded against one maximum so their shades compare.

use iocap_analysis::drops;
use iocap_analysis::spectro::{self, COLS, COLS_PER_DECADE};
use iocap_analysis::units::{self, Style::Terminal as TERM};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::Frame;

use crate::app::App;
use crate::layout::{self, Layout, Orientation, Pane, LAT_LABEL, TIME_LABEL};
use crate::panes::spectrogram::grid::Grid;
use crate::theme::{Side, Theme, DIFF_LEVELS, HEAT_GLYPHS};
use super::block;
use crate::panes::fit_title;

/// Draw the spectrogram pane in `area`.
pub fn render(app: &App, f: &mut Frame, area: Rect) {
    let focused = app.focus == Pane::Spectrogram;
    let approx = if app.view.grid.approximate { " ≈index" } else { "" };
    let orient = match app.view.orientation {
        Orientation::Sysdig => "latency →",
        Orientation::Heatmap => "time →",
    };
    let row = units::tick(app.view.interval, TERM);
    let sides = match &app.compare {
        None => "",
        Some(c) if c.side_by_side => "A | B ",
        Some(_) => "B−A ",
    };
    let blk = match app.view.measure.label() {
        Some((who, m)) => format!(" ({who}: {m})"),
        None => String::new(),
    };
    // A narrow pane (80 columns) drops the name rather than what is plotted.
    let title = fit_title(
        area.width,
        [
            format!(" Spectrogram {sides}{row}/row, {orient}{approx}{blk} "),
            format!(" {sides}{row}/row, {orient}{approx}{blk} "),
        ],
    );
    f.render_widget(block(app, title, focused), area);
    let geo = &app.layout;
    // No room for a cell (a tiny terminal: the view still holds one interval, `time_cells`).
    if geo.plot.is_empty() || geo.lat_cells == 0 {
        return;
    }
    draw(app, geo, f.buffer_mut());
}

/// Counts of every display cell of `grid`, `[time][lat]`, and their maximum.
fn cells(grid: &Grid, geo: &Layout) -> (Vec<Vec<u64>>, u64) {
    let mut max = 0;
    let out: Vec<Vec<u64>> = (0..geo.time_cells)
        .map(|t| {
            (0..geo.lat_cells)
                .map(|l| {
                    let n = grid.sum(t..t + 1, geo.cell_cols(l));
                    max = max.max(n);
                    n
                })
                .collect()
        })
        .collect();
    (out, max)
}

fn draw(app: &App, geo: &Layout, buf: &mut Buffer) {
    let theme = &app.theme;
    let (b, b_max) = cells(&app.view.grid, geo);
    let key = match (&app.compare, geo.plot_a) {
        (Some(c), Some(plot_a)) => {
            // Side by side: one maximum, so that a shade means the same count on both.
            let (a, a_max) = cells(&c.grid, geo);
            let max = a_max.max(b_max);
            for (plot, counts) in [(plot_a, &a), (geo.plot, &b)] {
                paint(app, geo, plot, |t, l| heat(theme, counts[t][l], max), buf);
            }
            Key::Heat(max)
        }
        // One side answered the new question and the other not yet: their difference would
        // be of two questions.
        (Some(c), None) if c.pending(app.gen) != app.busy => Key::Scanning,
        (Some(c), None) => {
            let (a, _) = cells(&c.grid, geo);
            let diff = |t: usize, l: usize| i128::from(b[t][l]) - i128::from(a[t][l]);
            let rows = 0..geo.time_cells;
            let max = rows.flat_map(|t| (0..geo.lat_cells).map(move |l| (t, l))).map(|(t, l)| diff(t, l).unsigned_abs()).max();
            let max = u64::try_from(max.unwrap_or(0)).unwrap_or(u64::MAX);
            paint(
                app,
                geo,
                geo.plot,
                |t, l| {
                    let d = diff(t, l);
                    let more = if d > 0 { Side::B } else { Side::A };
                    match u64::try_from(d.unsigned_abs()).unwrap_or(u64::MAX) {
                        // The same count on both sides: a dot where there are events.
                        0 if b[t][l] > 0 => ('·', theme.dim()),
                        n => theme.diff(spectro::shade(n, max, DIFF_LEVELS), more),
                    }
                },
                buf,
            );
            Key::Difference(max)
        }
        (None, _) => {
            paint(app, geo, geo.plot, |t, l| heat(theme, b[t][l], b_max), buf);
            Key::Heat(b_max)
        }
    };
    for (i, p) in [geo.plot_a, Some(geo.plot)].into_iter().flatten().enumerate() {
        match app.view.orientation {
            Orientation::Sysdig => sysdig_axes(app, geo, p, i == 0, buf),
            Orientation::Heatmap => heatmap_axes(app, geo, p, buf),
        }
    }
    legend(app, geo, key, buf);
}

/// Glyph and style of a cell of `n` events, the highest being `max`.
fn heat(theme: &Theme, n: u64, max: u64) -> (char, Style) {
    theme.heat(spectro::shade(n, max, HEAT_GLYPHS.len()))
}

/// Draw every cell of the view in `plot` as `cell(time cell, latency cell)` says, with the
/// region being selected and the cursor over it; rows past the capture's end stay blank.
fn paint(app: &App, geo: &Layout, plot: Rect, cell: impl Fn(usize, usize) -> (char, Style), buf: &mut Buffer) {
    let theme = &app.theme;
    let here = (app.view.cursor_t, app.view.cursor_l);
    // The region being selected, in display cells.
    let region = app.view.anchor.map(|(t, l)| {
        let at = (t.saturating_sub(app.view.start) / app.view.interval) as i64;
        let at = if t < app.view.start { -1 } else { at };
        (
            at.min(here.0 as i64),
            at.max(here.0 as i64),
            l.min(here.1),
            l.max(here.1),
        )
    });
    let rows = app.view.rows_in_capture(&app.cap, geo);
    for t in 0..rows.min(geo.time_cells) {
        for l in 0..geo.lat_cells {
            let (glyph, mut style) = cell(t, l);
            if let Some((t0, t1, l0, l1)) = region {
                if (t0..=t1).contains(&(t as i64)) && (l0..=l1).contains(&l) {
                    style = style.patch(theme.selection());
                }
            }
            if app.focus == Pane::Spectrogram && (t, l) == here {
                style = style.patch(theme.cursor());
            }
            let (x, y) = match app.view.orientation {
                Orientation::Sysdig => (plot.x + l as u16, plot.y + t as u16),
                Orientation::Heatmap => (plot.x + t as u16, plot.bottom() - 1 - l as u16),
            };
            buf[(x, y)].set_char(glyph).set_style(style);
        }
    }
}

/// Display cell where latency decade `d` (10^d ns) starts.
fn decade_cell(d: usize, cells: usize) -> usize {
    let col = d * COLS_PER_DECADE;
    (0..cells)
        .find(|&c| layout::cell_cols(c, cells).end > col)
        .unwrap_or(cells)
}

/// The latency labels over plot `p` and, for the `first` plot (the leftmost), the time labels
/// and drop marks left of it.
fn sysdig_axes(app: &App, geo: &Layout, p: Rect, first: bool, buf: &mut Buffer) {
    let dim = app.theme.dim();
    // Latency labels over the plot, at each decade that has room. Where they crowd, the unit
    // changes (1ns, 1µs, 1ms, 1s) go first, then the tens, then the hundreds, so a narrow plot
    // drops `100ns` rather than `1µs`.
    let width = geo.lat_cells + 1;
    let mut taken = vec![false; width + 1];
    let mut decades: Vec<usize> = (0..=COLS / COLS_PER_DECADE).collect();
    decades.sort_by_key(|d| (d % 3, *d));
    for d in decades {
        let c = decade_cell(d, geo.lat_cells);
        let label = if d * COLS_PER_DECADE >= COLS {
            "10s+".to_owned()
        } else {
            units::tick(spectro::column_range(d * COLS_PER_DECADE).0.max(1), TERM)
        };
        let w = label.chars().count();
        // The label and one blank after it (none needed at the right edge).
        let span = c..(c + w + 1).min(width + 1);
        if c + w > width || taken[span.clone()].iter().any(|&t| t) || (c > 0 && taken[c - 1]) {
            continue;
        }
        taken[span].iter_mut().for_each(|t| *t = true);
        buf.set_string(p.x + c as u16, p.y - 1, &label, dim);
    }
    if !first {
        return;
    }
    // Time labels left of every few rows, and a drop mark on rows that lost events.
    let every = (geo.time_cells / 4).max(1);
    for t in 0..app.view.rows_in_capture(&app.cap, geo) {
        let y = p.y + t as u16;
        let start = app.view.start + app.view.interval * t as u64;
        if t % every == 0 || t == app.view.cursor_t {
            let label = units::offset(start.saturating_sub(app.cap.start));
            let style = if t == app.view.cursor_t { Style::default() } else { dim };
            buf.set_stringn(p.x - TIME_LABEL, y, &label, usize::from(TIME_LABEL) - 1, style);
        }
        if drops::between(&app.cap.reader, start, start + app.view.interval) > 0 {
            buf.set_string(p.x - 1, y, "!", app.theme.drops());
        }
    }
}

/// The latency labels left of plot `p`, the time labels under it and drop marks over it.
fn heatmap_axes(app: &App, geo: &Layout, p: Rect, buf: &mut Buffer) {
    let dim = app.theme.dim();
    for d in 0..=COLS / COLS_PER_DECADE {
        let c = decade_cell(d, geo.lat_cells);
        if c >= geo.lat_cells {
            continue;
        }
        // Skip decades that would land on the row of the previous label.
        if d > 0 && decade_cell(d - 1, geo.lat_cells) == c {
            continue;
        }
        let label = units::tick(spectro::column_range(d * COLS_PER_DECADE).0.max(1), TERM);
        buf.set_stringn(
            p.x - LAT_LABEL,
            p.bottom() - 1 - c as u16,
            &label,
            usize::from(LAT_LABEL) - 1,
            dim,
        );
    }
    let y = p.bottom();
    let mut next_free = 0usize;
    let cols = app.view.rows_in_capture(&app.cap, geo);
    for t in (0..cols).step_by(12) {
        let start = app.view.start + app.view.interval * t as u64;
        let label = units::offset(start.saturating_sub(app.cap.start));
        if t < next_free || t + label.len() > geo.time_cells {
            continue;
        }
        buf.set_string(p.x + t as u16, y, &label, dim);
        next_free = t + label.len() + 1;
    }
    for t in 0..cols {
        let start = app.view.start + app.view.interval * t as u64;
        if drops::between(&app.cap.reader, start, start + app.view.interval) > 0 {
            buf.set_string(p.x + t as u16, p.y, "!", app.theme.drops());
        }
    }
}

/// What the legend explains: a heat ramp up to the highest cell count, or a difference map's
/// two ramps up to the largest difference.
enum Key {
    Heat(u64),
    Difference(u64),
    /// A difference map waiting for one side's answer.
    Scanning,
}

/// The bottom line: the heat ramp from 1 to the highest cell count (comparing: B − A's two
/// ramps, up to the largest difference), and the cursor cell's count (comparing: each side's).
fn legend(app: &App, geo: &Layout, key: Key, buf: &mut Buffer) {
    let p = geo.plot;
    let y = p.bottom() + u16::from(app.view.orientation == Orientation::Heatmap);
    let left = geo.plot_a.map_or(p.x, |a| a.x.min(p.x));
    let x0 = left.saturating_sub(match app.view.orientation {
        Orientation::Sysdig => TIME_LABEL,
        Orientation::Heatmap => LAT_LABEL,
    });
    let width = usize::from(p.right() - x0);
    let mut x = x0;
    let dim = app.theme.dim();
    let max = match key {
        Key::Heat(max) => {
            x = buf.set_stringn(x, y, "1 ", width, dim).0;
            for level in 1..HEAT_GLYPHS.len() {
                let (g, s) = app.theme.heat(level);
                x = buf.set_stringn(x, y, g.to_string(), 1, s).0;
            }
            format!(" {}", units::short_count(max))
        }
        Key::Difference(max) => {
            for (words, side) in [("B more ", Side::B), (" A more ", Side::A)] {
                x = buf.set_stringn(x, y, words, width, dim).0;
                for level in 1..DIFF_LEVELS {
                    let (g, s) = app.theme.diff(level, side);
                    x = buf.set_stringn(x, y, g.to_string(), 1, s).0;
                }
            }
            format!(" ±{}", units::short_count(max))
        }
        Key::Scanning => "scanning…".to_owned(),
    };
    let cols = app.layout.cell_cols(app.view.cursor_l);
    let (lo, hi) = (
        spectro::column_range(cols.start).0,
        spectro::column_range(cols.end - 1).1,
    );
    let count = |grid: &Grid| units::count(grid.sum(app.view.cursor_t..app.view.cursor_t + 1, cols.clone()));
    let here = match &app.compare {
        Some(c) => format!("A {} B {}", count(&c.grid), count(&app.view.grid)),
        None => count(&app.view.grid),
    };
    let text = format!(
        "{max} │ cursor {}…{}: {here}",
        units::duration(lo, TERM),
        units::duration(hi, TERM),
    );
    let left = usize::from(p.right().saturating_sub(x));
    buf.set_stringn(x, y, text, left, dim);
}
