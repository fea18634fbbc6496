//! The spectrogram pane: the view (which rows of time, how fine, drawn which way), its cursor
//! and the region being selected, and the picture it shows. Drawn by [`crate::ui::spectrogram`].
//!
//! The view's rows are the question's time range: whenever they move or change size the
//! update says so and the app asks the worker again. They lie within the capture's span
//! (`iocap_analysis::capture_span`): the first row starts at or after its start, the last holds
//! its end; zooming out stops at the rows that show all of it ([`whole`]), and scrolling stops at
//! either end.
//!
//! A capture being recorded grows at its end ([`View::grown`]). Zoomed out all the way, the view
//! keeps showing all of it: its rows leave room for it to double, and once it outgrows them it
//! is shown in coarser rows, again with room. Zoomed in and following (End), the view keeps the
//! newest rows on screen, moving on by half a page when they reach its last row. Time grows
//! downward as sysdig draws it. Otherwise the view stays where the user put it.

pub mod grid;

use iocap_analysis::spectro::{self, COLS};
use iocap_analysis::Measure;
use iocap_filter::literal;

use crate::action::{Action, Mouse, Move, Seek};
use crate::capture::Capture;
use crate::layout::{Layout, Orientation};
use grid::Grid;

/// Row intervals offered by zooming in, 1 ms to 10 s in 1-2-5 steps; the coarsest row is the
/// one that shows the whole capture ([`whole`]), whatever its length.
const INTERVALS: [u64; 13] = [
    1_000_000,
    2_000_000,
    5_000_000,
    10_000_000,
    20_000_000,
    50_000_000,
    100_000_000,
    200_000_000,
    500_000_000,
    1_000_000_000,
    2_000_000_000,
    5_000_000_000,
    10_000_000_000,
];

/// The view: the rows of time shown, the cursor, the region, and the picture.
pub struct View {
    /// How the spectrogram is drawn.
    pub orientation: Orientation,
    /// Start of the first row, ns since boot.
    pub start: u64,
    /// Length of a row.
    pub interval: u64,
    /// Cursor: row (time cell) in the view.
    pub cursor_t: usize,
    /// Cursor: latency cell in the pane.
    pub cursor_l: usize,
    /// The other corner of the region selected (by `v` or a drag), until Enter applies it or
    /// Esc drops it: (row start time, latency cell).
    pub anchor: Option<(u64, usize)>,
    /// The left button went down on the plot and is held: moves stretch the region.
    pub dragging: bool,
    /// What block requests are plotted by (calls always by their latency); the histogram and
    /// the breakdown's percentiles follow.
    pub measure: Measure,
    /// What the pane shows: from the summaries first, then the worker's exact answer.
    pub grid: Grid,
    /// Zoomed out all the way: another layout (a resize, a turn) shows the whole capture
    /// again, in its own rows.
    pub all: bool,
    /// The cursor was put where the events are, or moved: it stays where it is. Until then a
    /// new picture puts it on its busiest cell ([`View::place_cursor`]).
    pub placed: bool,
}

/// Whether an update moved the view's rows (or changed their length): a new question.
#[must_use]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Moved {
    /// The same rows: the answer shown still holds.
    No,
    /// Other rows: ask again.
    Yes,
}

impl View {
    /// The whole capture at the finest interval that shows it in the rows of `layout`, so
    /// that the viewer opens on everything.
    pub fn new(cap: &Capture, layout: &Layout) -> View {
        let interval = whole(cap, layout);
        View {
            orientation: layout.orientation,
            start: cap.start,
            interval,
            cursor_t: 0,
            cursor_l: 0,
            anchor: None,
            dragging: false,
            measure: Measure::LATENCY,
            grid: Grid::empty(cap.start, interval, 0),
            all: true,
            placed: false,
        }
    }

    /// End of the last row shown.
    pub fn end(&self, layout: &Layout) -> u64 {
        self.start
            .saturating_add(self.interval.saturating_mul(layout.time_cells as u64))
    }

    /// Rows of the view that hold some of the capture: those past its end are left blank.
    pub fn rows_in_capture(&self, cap: &Capture, layout: &Layout) -> usize {
        let before = self.start.saturating_sub(cap.start) / self.interval.max(1);
        let rows = rows_needed(cap, self.interval).saturating_sub(before);
        layout.time_cells.min(usize::try_from(rows).unwrap_or(usize::MAX))
    }

    /// Whether the view holds the whole capture: what it counts is everything that matches.
    pub fn shows_all(&self, cap: &Capture, layout: &Layout) -> bool {
        self.start <= cap.start && rows_needed(cap, self.interval) <= layout.time_cells as u64
    }

    /// Start time of the row under the cursor.
    pub fn cursor_time(&self) -> u64 {
        self.start
            .saturating_add(self.interval.saturating_mul(self.cursor_t as u64))
    }

    /// The view's part of `action`: moving the cursor (when the pane has the focus), scrubbing,
    /// zooming, the region's mark, the mouse wheel.
    pub fn update(&mut self, action: &Action, cap: &Capture, layout: &Layout) -> Moved {
        match *action {
            Action::Move(m) => {
                self.placed = true;
                self.move_cursor(m, cap, layout)
            }
            Action::Seek(j) => {
                self.placed = true;
                self.seek(j, layout);
                Moved::No
            }
            Action::ZoomIn => self.zoom(-1, cap, layout),
            Action::ZoomOut => self.zoom(1, cap, layout),
            Action::Mark => {
                match self.anchor {
                    Some(_) => self.drop_region(),
                    None => self.anchor = Some((self.cursor_time(), self.cursor_l)),
                }
                Moved::No
            }
            Action::Back => {
                self.drop_region();
                Moved::No
            }
            Action::Mouse(Mouse::ScrollUp { .. }) => self.scrub(-(self.interval as i64) * 3, cap, layout),
            Action::Mouse(Mouse::ScrollDown { .. }) => self.scrub(self.interval as i64 * 3, cap, layout),
            _ => Moved::No,
        }
    }

    /// The other orientation; returns the time to keep under the cursor once the app has
    /// laid the pane out again ([`View::refit`]).
    pub fn turn(&mut self) -> u64 {
        self.orientation = match self.orientation {
            Orientation::Sysdig => Orientation::Heatmap,
            Orientation::Heatmap => Orientation::Sysdig,
        };
        self.cursor_time()
    }

    /// Fit the view to a new `layout` (a resize, a turn), keeping `t` under the cursor: the
    /// whole capture still when zoomed out all the way, and never coarser than that.
    pub fn refit(&mut self, t: u64, cap: &Capture, layout: &Layout) -> Moved {
        self.cursor_l = self.cursor_l.min(layout.lat_cells.saturating_sub(1));
        let most = whole(cap, layout);
        if self.all || self.interval >= most {
            self.interval = most;
            self.all = true;
        }
        self.center_on(t, cap, layout)
    }

    /// The left button pressed on cell `(t, l)`: the cursor there, and a region started that
    /// the drag stretches.
    pub fn press(&mut self, t: usize, l: usize) {
        self.placed = true;
        self.cursor_t = t;
        self.cursor_l = l;
        self.anchor = Some((self.cursor_time(), l));
        self.dragging = true;
    }

    /// The button held and moved to cell `(t, l)`: the cursor there, so the region stretches
    /// to it. Nothing unless the press was on the plot.
    pub fn drag(&mut self, t: usize, l: usize) {
        if self.dragging {
            self.cursor_t = t;
            self.cursor_l = l;
        }
    }

    /// The button released on cell `(t, l)`. A drag leaves its region selected, for Enter to
    /// apply or Esc to drop: releasing applies nothing. A click (no other cell reached) leaves
    /// the cursor there and no region.
    pub fn release(&mut self, t: usize, l: usize) {
        if !self.dragging {
            return;
        }
        self.drag(t, l);
        self.dragging = false;
        if !self.selecting() {
            self.anchor = None;
        }
    }

    /// Events of the picture in display cell `(t, l)`.
    pub fn count_at(&self, t: usize, l: usize, layout: &Layout) -> u64 {
        self.grid.sum(t..t + 1, layout.cell_cols(l))
    }

    /// Events of the picture in latency cell `l`, over the rows in view.
    fn column_count(&self, l: usize, layout: &Layout) -> u64 {
        self.grid.sum(0..layout.time_cells, layout.cell_cols(l))
    }

    /// The row holding the most events of latency cell `l` (the earliest of equals).
    fn busiest_row(&self, l: usize, layout: &Layout) -> Option<usize> {
        (0..layout.time_cells)
            .map(|t| (self.count_at(t, l, layout), t))
            .filter(|&(n, _)| n > 0)
            .max_by_key(|&(n, t)| (n, std::cmp::Reverse(t)))
            .map(|(_, t)| t)
    }

    /// Until the cursor was placed or moved: onto the picture's busiest cell, so that it starts
    /// where the events are (a first Enter filters to them, not to an empty cell at 1 ns).
    pub fn place_cursor(&mut self, layout: &Layout) {
        if self.placed {
            return;
        }
        let busiest = (0..layout.lat_cells)
            .filter_map(|l| self.busiest_row(l, layout).map(|t| (self.count_at(t, l, layout), t, l)))
            .max_by_key(|&(n, t, l)| (n, std::cmp::Reverse((t, l))));
        if let Some((_, t, l)) = busiest {
            (self.cursor_t, self.cursor_l) = (t, l);
            self.placed = true;
        }
    }

    /// Move the cursor along latency to where the view's events are ([`Seek`]), onto the row
    /// holding the most of them in the cell reached (or its row, when that holds some).
    fn seek(&mut self, j: Seek, layout: &Layout) {
        let cells = layout.lat_cells;
        let full = |l: usize| self.column_count(l, layout) > 0;
        let to = match j {
            Seek::NextEvents => (self.cursor_l + 1..cells).find(|&l| full(l)),
            Seek::PrevEvents => (0..self.cursor_l).rev().find(|&l| full(l)),
            Seek::Slowest => (0..cells).rev().find(|&l| full(l)),
            Seek::DecadeSlower | Seek::DecadeFaster => {
                // Ten of the spectrogram's columns are a decade, whatever a cell's share.
                let col = layout.cell_cols(self.cursor_l).start;
                let want = match j {
                    Seek::DecadeSlower => (col + spectro::COLS_PER_DECADE).min(COLS - 1),
                    _ => col.saturating_sub(spectro::COLS_PER_DECADE),
                };
                (0..cells).find(|&l| layout.cell_cols(l).contains(&want))
            }
        };
        let Some(l) = to else { return };
        self.cursor_l = l;
        if self.count_at(self.cursor_t, l, layout) == 0 {
            if let Some(t) = self.busiest_row(l, layout) {
                self.cursor_t = t;
            }
        }
    }

    /// No region any more (Esc, or Enter has applied it).
    pub fn drop_region(&mut self) {
        self.anchor = None;
        self.dragging = false;
    }

    /// Whether a region of more than the cursor's cell is being selected.
    pub fn selecting(&self) -> bool {
        self.anchor.is_some_and(|a| a != (self.cursor_time(), self.cursor_l))
    }

    /// The capture grew: zoomed out all the way, the view shows all of it still (coarser rows
    /// once it outgrows them); `following`, the newest rows stay in view, half a page on when
    /// they reach the last row, and the cursor on the newest. Moved when the rows changed: the
    /// question is asked again; otherwise only the new chunks need adding to the answer.
    pub fn grown(&mut self, cap: &Capture, layout: &Layout, following: bool) -> Moved {
        let cells = layout.time_cells.max(1) as u64;
        let moved = if self.all {
            if self.start == cap.start && rows_needed(cap, self.interval) <= cells {
                Moved::No
            } else {
                self.interval = whole(cap, layout);
                self.start = cap.start;
                Moved::Yes
            }
        } else if following && cap.last.saturating_sub(self.start) / self.interval >= cells {
            self.start = self.newest_at_half(cap, layout);
            Moved::Yes
        } else {
            Moved::No
        };
        if following {
            self.cursor_on(cap.last, layout);
        }
        moved
    }

    /// End while the capture is recorded: the newest rows half way down the view, with room
    /// below for what comes, the cursor on the newest.
    pub fn follow_newest(&mut self, cap: &Capture, layout: &Layout) -> Moved {
        let start = if self.all { cap.start } else { self.newest_at_half(cap, layout) };
        let moved = if start == self.start { Moved::No } else { Moved::Yes };
        self.start = start;
        self.cursor_on(cap.last, layout);
        moved
    }

    /// The view's start that puts the capture's newest row half way down the view.
    fn newest_at_half(&self, cap: &Capture, layout: &Layout) -> u64 {
        let row = (cap.last - cap.start) / self.interval;
        let back = (layout.time_cells.max(1) / 2) as u64;
        cap.start + row.saturating_sub(back) * self.interval
    }

    /// The cursor on the row of `t`, when that row is in view.
    fn cursor_on(&mut self, t: u64, layout: &Layout) {
        if let Some(r) = t.checked_sub(self.start).map(|d| d / self.interval) {
            if r < layout.time_cells as u64 {
                self.cursor_t = r as usize;
            }
        }
    }

    /// Move the view's start to `t` (the replay following its clock), within the capture.
    pub fn follow(&mut self, t: u64, cap: &Capture, layout: &Layout) -> Moved {
        let t = t.clamp(cap.start, self.latest_start(cap, layout));
        if t == self.start {
            return Moved::No;
        }
        self.start = t;
        Moved::Yes
    }

    /// The latest start of the view: its last row holds the capture's end.
    fn latest_start(&self, cap: &Capture, layout: &Layout) -> u64 {
        let back = rows_needed(cap, self.interval).saturating_sub(layout.time_cells.max(1) as u64);
        cap.start.saturating_add(back.saturating_mul(self.interval))
    }

    /// The filter clause for the selected region (or the cursor cell): its rows' time range,
    /// and its latency range: of what is plotted, so under another measure, calls by their
    /// latency and block requests by the measure's field. A bound every event meets is left
    /// out (a region from the capture's first row, to its last, or to the pane's latency
    /// edge), and every literal is the shortest that reads back as the bound. `None` when
    /// that leaves nothing: every event is in the region.
    pub fn region_clause(&self, cap: &Capture, layout: &Layout) -> Option<String> {
        let here = (self.cursor_time(), self.cursor_l);
        let (a, b) = self.anchor.unwrap_or(here);
        let (t0, t1) = (a.min(here.0), a.max(here.0).saturating_add(self.interval));
        let (l0, l1) = (b.min(here.1), b.max(here.1));
        let (c0, c1) = (layout.cell_cols(l0).start, layout.cell_cols(l1).end);
        // `evt.time` counts from the recording's start, 0 for anything before it.
        let origin = cap.reader.meta().start_ts;
        let mut parts = Vec::new();
        if t0 > origin {
            parts.push(format!("evt.time>={}", literal::duration(t0 - origin)));
        }
        // No event starts after the capture's last one.
        if t1 <= cap.last {
            parts.push(format!("evt.time<{}", literal::duration(t1.saturating_sub(origin))));
        }
        let range = |field: &str| {
            let mut r = Vec::new();
            if c0 > 0 {
                r.push(format!("{field}>={}", literal::duration(spectro::column_range(c0).0)));
            }
            if c1 < COLS {
                r.push(format!("{field}<{}", literal::duration(spectro::column_range(c1).0)));
            }
            r.join(" and ")
        };
        let latency = range("latency");
        if !latency.is_empty() {
            // The events measured by a part are selected by it, the others by their latency.
            parts.push(match self.measure {
                m if m.is_latency() => latency,
                m if m.of_calls() => format!(
                    "((evt.class in (block, journal) and {latency}) or ({}))",
                    range(m.field())
                ),
                m => format!("((evt.class!=block and {latency}) or ({}))", range(m.field())),
            });
        }
        (!parts.is_empty()).then(|| parts.join(" and "))
    }

    /// Put `t` (within the capture) under the cursor, keeping the cursor's position on screen
    /// when the view can start there, else moving the cursor onto `t`'s row.
    fn center_on(&mut self, t: u64, cap: &Capture, layout: &Layout) -> Moved {
        let cells = layout.time_cells.max(1);
        let t = t.clamp(cap.start, cap.end);
        let row = (t - cap.start) / self.interval;
        let back = (self.cursor_t.min(cells - 1) as u64).min(row);
        self.start = cap.start + (row - back) * self.interval;
        self.start = self.start.min(self.latest_start(cap, layout));
        self.cursor_t = usize::try_from(row - (self.start - cap.start) / self.interval)
            .unwrap_or(usize::MAX)
            .min(cells - 1);
        // Asked again even when the start stays: a zoom or a new layout changes the rows.
        Moved::Yes
    }

    fn scrub(&mut self, by: i64, cap: &Capture, layout: &Layout) -> Moved {
        let t = if by < 0 {
            self.start.saturating_sub(by.unsigned_abs())
        } else {
            self.start.saturating_add(by as u64)
        };
        self.follow(t, cap, layout)
    }

    /// Scrub by whole pages of rows.
    fn scrub_pages(&mut self, pages: i64, cap: &Capture, layout: &Layout) -> Moved {
        let span = self.interval.saturating_mul(layout.time_cells.max(1) as u64) as i64;
        self.scrub(pages.saturating_mul(span), cap, layout)
    }

    /// One step finer (`dir` -1) or coarser (1) on the ladder of [`INTERVALS`] below the
    /// interval that shows the whole capture, which ends it.
    fn zoom(&mut self, dir: i32, cap: &Capture, layout: &Layout) -> Moved {
        let most = whole(cap, layout);
        let mut ladder: Vec<u64> = INTERVALS.iter().copied().filter(|&i| i < most).collect();
        ladder.push(most);
        let i = ladder
            .iter()
            .position(|&x| x >= self.interval)
            .unwrap_or(ladder.len() - 1);
        let j = (i as i32 + dir).clamp(0, ladder.len() as i32 - 1) as usize;
        if ladder[j] == self.interval {
            return Moved::No;
        }
        let t = self.cursor_time();
        self.interval = ladder[j];
        self.all = self.interval == most;
        self.center_on(t, cap, layout)
    }

    fn move_cursor(&mut self, m: Move, cap: &Capture, layout: &Layout) -> Moved {
        // Moves along time and latency, whichever way the pane is drawn.
        let (dt, dl): (i64, i64) = match (self.orientation, m) {
            (Orientation::Sysdig, Move::Up) | (Orientation::Heatmap, Move::Left) => (-1, 0),
            (Orientation::Sysdig, Move::Down) | (Orientation::Heatmap, Move::Right) => (1, 0),
            (Orientation::Sysdig, Move::Left) | (Orientation::Heatmap, Move::Down) => (0, -1),
            (Orientation::Sysdig, Move::Right) | (Orientation::Heatmap, Move::Up) => (0, 1),
            (_, Move::PageUp) => return self.scrub_pages(-1, cap, layout),
            (_, Move::PageDown) => return self.scrub_pages(1, cap, layout),
            (_, Move::Home) => {
                self.cursor_t = 0;
                return self.center_on(cap.start, cap, layout);
            }
            (_, Move::End) => {
                self.cursor_t = layout.time_cells.saturating_sub(1);
                return self.center_on(cap.end.saturating_sub(1), cap, layout);
            }
        };
        let lat = layout.lat_cells.max(1) as i64;
        self.cursor_l = (self.cursor_l as i64 + dl).clamp(0, lat - 1) as usize;
        // Rows past the capture's end are blank: the cursor stays off them.
        let cells = self.rows_in_capture(cap, layout).max(1) as i64;
        let t = self.cursor_t as i64 + dt;
        if t < 0 {
            self.scrub(-(self.interval as i64), cap, layout)
        } else if t >= cells {
            self.scrub(self.interval as i64, cap, layout)
        } else {
            self.cursor_t = t as usize;
            Moved::No
        }
    }
}

/// The row interval that shows the whole capture in the rows of `layout`: the shortest one,
/// rounded up to two significant digits (`160ms`, `2.2s`: labels that read), at least the
/// finest of [`INTERVALS`]. Its rows hold the capture up to its end, so nothing is left out,
/// and the rounding leaves at most about a tenth of them past it. A capture being recorded
/// gets rows for twice its length so far: it fills them as it grows, and is shown in coarser
/// rows (a new scan) only each time it doubles.
pub fn whole(cap: &Capture, layout: &Layout) -> u64 {
    let rows = layout.time_cells.max(1) as u64;
    let room = if cap.is_live() { 2 } else { 1 };
    // The least interval for which `rows_needed` is at most `rows`.
    let least = (cap.end - cap.start)
        .saturating_mul(room)
        .div_ceil(rows)
        .max((cap.last - cap.start).saturating_mul(room) / rows + 1);
    round_up(least).max(INTERVALS[0])
}

/// How many rows of `interval` from the capture's start it takes to show all of it: up to its
/// end, and past its last event (a row holds its start, not its end).
fn rows_needed(cap: &Capture, interval: u64) -> u64 {
    let interval = interval.max(1);
    (cap.end - cap.start)
        .div_ceil(interval)
        .max((cap.last - cap.start) / interval + 1)
}

/// `x` rounded up to two significant digits.
fn round_up(x: u64) -> u64 {
    let mut unit = 1u64;
    while x / unit >= 100 {
        unit *= 10;
    }
    x.div_ceil(unit).saturating_mul(unit)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whole_rows_read_in_two_digits() {
        assert_eq!(round_up(153_846_154), 160_000_000);
        assert_eq!(round_up(2_105_263_158), 2_200_000_000);
        assert_eq!(round_up(2_000_000_000), 2_000_000_000);
        assert_eq!(round_up(99), 99);
        assert_eq!(round_up(101), 110);
        assert_eq!(round_up(u64::MAX), u64::MAX);
    }
}
