//! Where everything goes: the panes' rectangles and the spectrogram's cells at a terminal size.
//!
//! [`Layout::new`] is a pure function of the terminal size, the filter bar's height and the
//! spectrogram's orientation. The app keeps the layout of its current state (computed again
//! when one of the three changes), so its update can ask how many spectrogram rows or list
//! rows fit, and a mouse click which cell it hit, without anything having been drawn; the
//! panes draw into the same rectangles.
//!
//! Shares of the terminal (60% for the top, 40% for the right column, 55% of it for the
//! histogram) give way to what each pane needs to say anything at 80×24: the histogram its
//! percentiles and [`histogram::MIN_BARS`] bars, the breakdown and the list a few rows each.

pub mod histogram;

use std::ops::Range;

use iocap_analysis::spectro::COLS;
use ratatui::layout::{Constraint, Layout as Split, Position, Rect};
use ratatui::widgets::{Block, Borders};


/// The panes that can have the keyboard.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pane {
    /// The spectrogram: a cursor and regions in time × latency.
    Spectrogram,
    /// The breakdown by a field's value.
    Breakdown,
    /// The event list.
    Events,
}

/// How the spectrogram is drawn.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Orientation {
    /// As sysdig: latency left→right, one row per interval, time going down.
    Sysdig,
    /// A heatmap: time left→right, latency going up.
    Heatmap,
}

/// What the spectrogram shows: one side, or a comparison's two.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sides {
    /// One capture under one filter.
    One,
    /// A comparison drawn as one difference map (B − A), in one plot.
    Difference,
    /// A comparison drawn as two plots: A's, then B's (left to right as sysdig draws, top to
    /// bottom as a heatmap).
    SideBySide,
}

/// The least width of the right column (histogram over breakdown): three histogram figures
/// to a line, so two lines hold them.
const RIGHT_MIN: u16 = 36;
/// The least height of the breakdown: borders, its header and two values.
const BREAKDOWN_MIN: u16 = 5;
/// The least height of the event list: borders, its header and three events.
const EVENTS_MIN: u16 = 6;

/// `pct` percent of `n`, rounded down.
fn share(n: u16, pct: u32) -> u16 {
    u16::try_from(u32::from(n) * pct / 100).unwrap_or(n)
}

/// Width of the time labels left of the sysdig-oriented plot, drop marker included.
pub const TIME_LABEL: u16 = 10;
/// Width of the latency labels left of the heatmap plot.
pub const LAT_LABEL: u16 = 7;

/// The frame's rectangles at one terminal size.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    /// The whole terminal.
    pub area: Rect,
    /// The filter bar, at the top (taller while it shows an error).
    pub filter: Rect,
    /// The comparison's line under it (what A and B are, the colours that tell them apart);
    /// empty when not comparing.
    pub compare: Rect,
    /// The spectrogram pane, border and labels included.
    pub spectro: Rect,
    /// The latency histogram pane.
    pub hist: Rect,
    /// The breakdown pane.
    pub breakdown: Rect,
    /// The event list pane.
    pub events: Rect,
    /// The status line, at the bottom.
    pub status: Rect,
    /// How the spectrogram is drawn.
    pub orientation: Orientation,
    /// The spectrogram's cells (no labels, no legend); comparing side by side, B's.
    pub plot: Rect,
    /// Comparing side by side, A's cells (the same rows and columns as `plot`'s).
    pub plot_a: Option<Rect>,
    /// Intervals shown (rows in sysdig orientation, columns in the heatmap).
    pub time_cells: usize,
    /// Latency cells shown (columns in sysdig orientation, rows in the heatmap).
    pub lat_cells: usize,
    /// Rows of events the list shows.
    pub list_rows: usize,
}

impl Layout {
    /// The layout of a terminal of `area`, with a filter bar `filter_lines` high (more than
    /// one while it shows an error), the spectrogram showing `sides` drawn in `orientation`.
    pub fn new(area: Rect, filter_lines: u16, sides: Sides, orientation: Orientation) -> Layout {
        let [filter, compare, main, status] = Split::vertical([
            Constraint::Length(filter_lines),
            Constraint::Length(u16::from(sides != Sides::One)),
            Constraint::Min(0),
            Constraint::Length(1),
        ])
        .areas(area);
        // The right column: 40%, but wide enough for three of the histogram's figures to a
        // line (80 columns would leave it 32).
        let right_w = share(area.width, 40).max(RIGHT_MIN).min(area.width);
        // The histogram keeps its figures and MIN_BARS bars, the breakdown a few rows, the
        // list what is left of 60%, at least a few rows: at 80×24 the histogram has 9 rows
        // where 60% would give it 7 (2 bars), and the list 5 events.
        let hist_min = histogram::min_height(right_w);
        let top_h = share(main.height, 60)
            .max(hist_min + BREAKDOWN_MIN)
            .min(main.height.saturating_sub(EVENTS_MIN));
        let hist_h = share(top_h, 55).max(hist_min).min(top_h.saturating_sub(BREAKDOWN_MIN));
        let [top, events] = Split::vertical([Constraint::Length(top_h), Constraint::Min(0)]).areas(main);
        let [spectro, right] = Split::horizontal([Constraint::Min(0), Constraint::Length(right_w)]).areas(top);
        let [hist, breakdown] = Split::vertical([Constraint::Length(hist_h), Constraint::Min(0)]).areas(right);
        let inner = Block::default().borders(Borders::ALL).inner(spectro);
        // One line of axis labels and one of legend in either orientation.
        let plot = match orientation {
            Orientation::Sysdig => Rect {
                x: inner.x + TIME_LABEL.min(inner.width),
                y: inner.y + 1.min(inner.height),
                width: inner.width.saturating_sub(TIME_LABEL),
                height: inner.height.saturating_sub(2),
            },
            Orientation::Heatmap => Rect {
                x: inner.x + LAT_LABEL.min(inner.width),
                y: inner.y,
                width: inner.width.saturating_sub(LAT_LABEL),
                height: inner.height.saturating_sub(2),
            },
        };
        let (plot_a, plot) = match sides {
            Sides::SideBySide => {
                let (a, b) = halves(plot, orientation);
                (Some(a), b)
            }
            _ => (None, plot),
        };
        let (t, l) = match orientation {
            Orientation::Sysdig => (plot.height, plot.width),
            Orientation::Heatmap => (plot.width, plot.height),
        };
        Layout {
            area,
            filter,
            compare,
            spectro,
            hist,
            breakdown,
            events,
            status,
            orientation,
            plot,
            plot_a,
            // At least one: a terminal too small for any row of the plot still views the
            // capture's time (one interval), so the breakdown and the list show its events.
            time_cells: usize::from(t).max(1),
            lat_cells: usize::from(l),
            // Borders and the header line.
            list_rows: usize::from(events.height.saturating_sub(3)),
        }
    }

    /// The (time cell, latency cell) of the spectrogram under terminal cell `(x, y)`, on
    /// either plot when side by side.
    pub fn cell_at(&self, x: u16, y: u16) -> Option<(usize, usize)> {
        let within = |p: Rect| x >= p.x && y >= p.y && x < p.right() && y < p.bottom();
        let p = [Some(self.plot), self.plot_a].into_iter().flatten().find(|&p| within(p))?;
        let (dx, dy) = (usize::from(x - p.x), usize::from(y - p.y));
        Some(match self.orientation {
            Orientation::Sysdig => (dy, dx),
            Orientation::Heatmap => (dx, usize::from(p.height) - 1 - dy),
        })
    }

    /// The spectrogram cell nearest terminal cell `(x, y)`: the one under it, or on the plot's
    /// edge when it is outside (a drag that left the plot). `None` when the plot is empty.
    pub fn nearest_cell(&self, x: u16, y: u16) -> Option<(usize, usize)> {
        // Side by side, A's plot for a point on its side of B's.
        let p = match (self.plot_a, self.orientation) {
            (Some(a), Orientation::Sysdig) if x < self.plot.x => a,
            (Some(a), Orientation::Heatmap) if y < self.plot.y => a,
            _ => self.plot,
        };
        if p.is_empty() {
            return None;
        }
        self.cell_at(x.clamp(p.x, p.right() - 1), y.clamp(p.y, p.bottom() - 1))
    }

    /// The focusable pane under terminal cell `(x, y)`.
    pub fn pane_at(&self, x: u16, y: u16) -> Option<Pane> {
        let pos = Position { x, y };
        [
            (self.spectro, Pane::Spectrogram),
            (self.breakdown, Pane::Breakdown),
            (self.events, Pane::Events),
        ]
        .into_iter()
        .find(|(r, _)| r.contains(pos))
        .map(|(_, p)| p)
    }

    /// Spectrogram columns behind latency cell `cell`.
    pub fn cell_cols(&self, cell: usize) -> Range<usize> {
        cell_cols(cell, self.lat_cells)
    }
}

/// Two plots of the same cells in `plot`, A's then B's, one blank cell between them: side by
/// side as sysdig draws (latency across), one over the other as a heatmap (latency up).
fn halves(plot: Rect, orientation: Orientation) -> (Rect, Rect) {
    match orientation {
        Orientation::Sysdig => {
            let w = plot.width.saturating_sub(1) / 2;
            let a = Rect { width: w, ..plot };
            (a, Rect { x: plot.x + w + 1, ..a })
        }
        Orientation::Heatmap => {
            let h = plot.height.saturating_sub(1) / 2;
            let a = Rect { height: h, ..plot };
            (a, Rect { y: plot.y + h + 1, ..a })
        }
    }
}

/// Spectrogram columns behind latency cell `cell` of `cells`.
pub fn cell_cols(cell: usize, cells: usize) -> Range<usize> {
    let cells = cells.max(1);
    let lo = cell * COLS / cells;
    let hi = ((cell + 1) * COLS / cells).max(lo + 1).min(COLS);
    lo.min(COLS - 1)..hi
}

/// A centred rectangle at most `w` × `h`.
pub fn popup(area: Rect, w: u16, h: u16) -> Rect {
    let w = w.min(area.width);
    let h = h.min(area.height);
    Rect {
        x: area.x + (area.width - w) / 2,
        y: area.y + (area.height - h) / 2,
        width: w,
        height: h,
    }
}
