//! The viewer's state ([`App`]) and the only place it changes ([`App::update`]).
//!
//! Rendering borrows an `App` immutably (see [`crate::ui`]). `update` never blocks on a scan:
//! when the view or the filter changes it bumps the generation and returns a [`Query`] in its
//! [`Effects`], which the event loop hands to the worker; the answer comes back later as
//! [`Action::Reply`]. The event list's rows on screen are asked for the same way
//! ([`crate::rows`]): `update` reads no capture data at all.

use std::sync::Arc;
use std::time::Duration;

use iocap_analysis::spectro::{self, COLS};
use iocap_analysis::units;
use iocap_analysis::LatencyHist;
use iocap_filter::fields::{self, FieldInfo};
use iocap_filter::{literal, Compiled, FilterError};
use iocap_format::{Event, Reader};
use ratatui::layout::Rect;

use crate::action::{Action, Edit, Mouse, Move};
use crate::grid::Grid;
use crate::history::History;
use crate::layout::{Layout, Orientation, Pane};
use crate::query::{Answer, EventRef, GroupRow, Query};
use crate::rows::{Counting, RowsQuery};
use crate::theme::{Palette, Theme};
use crate::worker::Reply;

/// Finest and coarsest spectrogram row.
pub const MIN_INTERVAL: u64 = 1_000_000;
pub const MAX_INTERVAL: u64 = 10_000_000_000;
/// Row intervals offered by zooming: 1-2-5 steps.
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
/// Replay speeds.
pub const SPEEDS: [u64; 3] = [1, 10, 100];
/// Fields the breakdown can group by, in the order `f` cycles through them.
pub const GROUP_FIELDS: [&str; 8] = [
    "proc.name",
    "evt.type",
    "fd.name",
    "blk.dev",
    "fd.type",
    "proc.pid",
    "io.dir",
    "evt.errno",
];

/// Event list order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sort {
    Time,
    /// Slowest first (the [`crate::query::SLOWEST`] slowest of the view).
    Latency,
}

/// The filter bar while it is open.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Input {
    pub text: String,
    /// Byte offset of the caret, on a char boundary.
    pub caret: usize,
    /// What is wrong with `text`, checked on every keystroke.
    pub error: Option<FilterError>,
}

/// A capture opened for viewing: the file and facts from its index.
pub struct Capture {
    pub reader: Arc<Reader>,
    /// File name as shown (escaped).
    pub name: String,
    pub start: u64,
    pub end: u64,
    pub total: u64,
}

impl Capture {
    pub fn new(reader: Arc<Reader>, path: &std::path::Path) -> Capture {
        let name = iocap_format::escape::escape(path.as_os_str().as_encoded_bytes());
        // The span every report is laid over; a view needs at least one ns of it.
        let (start, end) = iocap_analysis::capture_span(&reader);
        let end = end.max(start + 1);
        let total = reader.event_count();
        Capture {
            reader,
            name,
            start,
            end,
            total,
        }
    }
}

/// What an update asks of the workers: a query for the view (the exact picture, histogram,
/// breakdown and list of a changed view, filter, field or order) and rows of the list to
/// decode. A newer question supersedes an older one, so an update asks at most one of each.
#[must_use]
#[derive(Default)]
pub struct Effects {
    pub query: Option<Query>,
    pub rows: Option<RowsQuery>,
}

/// The whole viewer state.
pub struct App {
    pub cap: Capture,
    pub theme: Theme,
    /// Where everything goes, for the terminal size, the filter bar and the orientation now.
    pub layout: Layout,
    pub focus: Pane,
    pub orientation: Orientation,
    /// Start of the first spectrogram row, ns since boot.
    pub view_start: u64,
    pub interval: u64,
    /// Cursor: interval index in the view, and latency cell (display units) in the pane.
    pub cursor_t: usize,
    pub cursor_l: usize,
    /// The other corner of a region being selected: (row start time, latency cell).
    pub anchor: Option<(u64, usize)>,
    /// The filter in force (text as the user sees it) and its compiled form.
    pub filter: String,
    compiled: Option<Arc<Compiled>>,
    /// Earlier applied filters, for undo.
    pub undo: Vec<String>,
    pub input: Option<Input>,
    pub history: History,
    /// What the spectrogram shows: from summaries first, then the worker's exact answer.
    pub grid: Grid,
    /// The latest answer for the current generation (histogram, breakdown, event counts).
    pub answer: Option<Answer>,
    /// Generation of the newest query; answers from older ones are ignored.
    pub gen: u64,
    /// A query is out and not yet answered.
    pub busy: bool,
    pub group_field: usize,
    pub group_sel: usize,
    pub sort: Sort,
    /// How many of the slowest events a latency-sorted list keeps ([`crate::query::SLOWEST`]).
    pub slowest: usize,
    /// First event-list row shown, and the selected row.
    pub ev_top: usize,
    pub ev_sel: usize,
    /// Events of the list decoded so far, near the screen: (index in the list, event), by
    /// index. Rows on screen not yet here are being decoded ([`Effects::rows`]).
    pub ev_rows: Vec<(usize, Event)>,
    /// Generation of the newest rows request: a reply to an older one is dropped.
    rows_gen: u64,
    pub detail: bool,
    pub help: bool,
    pub playing: bool,
    pub speed: usize,
    /// Replay clock (ns since boot) and time not yet turned into whole rows.
    pub replay_at: u64,
    /// A one-line note for the status line (errors, "filter applied").
    pub note: Option<String>,
    pub quit: bool,
}

impl App {
    /// A viewer on `cap` in a terminal of `area`, showing `filter` (which must compile: the
    /// caller reports a bad one as a usage error before starting the UI), and the query for
    /// the exact picture of its first view (the first frame comes from the index).
    pub fn new(
        cap: Capture,
        filter: &str,
        area: Rect,
        palette: Palette,
        history: History,
    ) -> Result<(App, Effects), FilterError> {
        let compiled = compile(filter, &cap.reader)?;
        let span = cap.end - cap.start;
        let mut app = App {
            theme: Theme::new(palette),
            layout: Layout::new(area, 1, Orientation::Sysdig),
            focus: Pane::Spectrogram,
            orientation: Orientation::Sysdig,
            view_start: cap.start,
            interval: INTERVALS[0],
            cursor_t: 0,
            cursor_l: 0,
            anchor: None,
            filter: filter.trim().to_owned(),
            compiled,
            undo: Vec::new(),
            input: None,
            history,
            grid: Grid::empty(cap.start, INTERVALS[0], 0),
            answer: None,
            gen: 0,
            busy: false,
            group_field: 0,
            group_sel: 0,
            sort: Sort::Time,
            slowest: crate::query::SLOWEST,
            ev_top: 0,
            ev_sel: 0,
            ev_rows: Vec::new(),
            rows_gen: 0,
            detail: false,
            help: false,
            playing: false,
            speed: 0,
            replay_at: cap.start,
            note: None,
            quit: false,
            cap,
        };
        // Pick the finest interval that shows the whole capture, so it opens on everything.
        let rows = app.layout.time_cells.max(1) as u64;
        app.interval = INTERVALS
            .iter()
            .copied()
            .find(|&i| i.saturating_mul(rows) >= span)
            .unwrap_or(MAX_INTERVAL);
        let mut fx = Effects::default();
        app.requery(&mut fx);
        Ok((app, fx))
    }

    /// The decoded event at list index `i`, if it has arrived.
    pub fn ev_row(&self, i: usize) -> Option<&Event> {
        self.ev_rows
            .binary_search_by_key(&i, |&(j, _)| j)
            .ok()
            .map(|k| &self.ev_rows[k].1)
    }

    pub fn compiled(&self) -> Option<&Arc<Compiled>> {
        self.compiled.as_ref()
    }

    pub fn view_end(&self) -> u64 {
        self.view_start
            .saturating_add(self.interval.saturating_mul(self.layout.time_cells as u64))
    }

    pub fn group_field(&self) -> &'static FieldInfo {
        fields::lookup(GROUP_FIELDS[self.group_field % GROUP_FIELDS.len()]).unwrap_or(&fields::all()[0])
    }

    /// Histogram of the view (exact once answered; from the summaries before).
    pub fn hist(&self) -> Option<&LatencyHist> {
        self.answer.as_ref().map(|a| &a.hist)
    }

    pub fn groups(&self) -> &[GroupRow] {
        self.answer.as_ref().map_or(&[], |a| &a.groups)
    }

    /// Events the list can show.
    pub fn ev_len(&self) -> usize {
        match (&self.answer, self.sort) {
            (None, _) => 0,
            (Some(a), Sort::Time) => a.matched as usize,
            (Some(a), Sort::Latency) => a.slowest.len(),
        }
    }

    /// Events the recorder lost during the view.
    pub fn drops_in_view(&self) -> u64 {
        iocap_analysis::drops::between(&self.cap.reader, self.view_start, self.view_end())
    }

    /// Change the state for `action`; what the workers are to do about it is returned.
    pub fn update(&mut self, action: Action) -> Effects {
        let mut effects = Effects::default();
        let fx = &mut effects;
        match action {
            Action::Quit => self.quit = true,
            Action::ToggleHelp => self.help = !self.help,
            Action::FocusNext | Action::FocusPrev => {
                let order = [Pane::Spectrogram, Pane::Breakdown, Pane::Events];
                let i = order.iter().position(|&f| f == self.focus).unwrap_or(0);
                let step = if matches!(action, Action::FocusNext) {
                    1
                } else {
                    order.len() - 1
                };
                self.focus = order[(i + step) % order.len()];
            }
            Action::Move(m) => self.move_cursor(m, fx),
            Action::Scrub(pages) => self.scrub_pages(pages, fx),
            Action::ZoomIn => self.zoom(-1, fx),
            Action::ZoomOut => self.zoom(1, fx),
            Action::ToggleOrientation => {
                let t = self.cursor_time();
                self.orientation = match self.orientation {
                    Orientation::Sysdig => Orientation::Heatmap,
                    Orientation::Heatmap => Orientation::Sysdig,
                };
                self.relayout();
                self.cursor_l = self.cursor_l.min(self.layout.lat_cells.saturating_sub(1));
                self.center_on(t, fx);
            }
            Action::Mark => {
                self.anchor = match self.anchor {
                    Some(_) => None,
                    None => Some((self.cursor_time(), self.cursor_l)),
                }
            }
            Action::Activate => self.activate(fx),
            Action::Back => {
                if self.help {
                    self.help = false;
                } else if self.detail {
                    self.detail = false;
                } else {
                    self.anchor = None;
                }
            }
            Action::Undo => match self.undo.pop() {
                Some(previous) => {
                    let _ = self.apply(previous, false, fx);
                    self.note = Some("filter change undone".into());
                }
                None => self.note = Some("nothing to undo".into()),
            },
            Action::CyclePalette => self.theme.palette = self.theme.palette.next(),
            Action::PlayPause => {
                self.playing = !self.playing;
                if self.playing {
                    self.replay_at = self.view_start;
                }
            }
            Action::Speed => self.speed = (self.speed + 1) % SPEEDS.len(),
            Action::Sort => {
                self.sort = match self.sort {
                    Sort::Time => Sort::Latency,
                    Sort::Latency => Sort::Time,
                };
                self.ev_top = 0;
                self.ev_sel = 0;
                self.forget_rows(fx);
                // Only a latency-sorted list needs the slowest events kept: ask again (the
                // column cache makes it quick), keeping the picture already drawn.
                let grid = self.grid.clone();
                self.requery(fx);
                self.grid = grid;
                self.load_rows(fx);
            }
            Action::NextField | Action::PrevField => {
                let n = GROUP_FIELDS.len();
                let step = if matches!(action, Action::NextField) { 1 } else { n - 1 };
                self.group_field = (self.group_field + step) % n;
                self.group_sel = 0;
                self.requery(fx);
            }
            Action::EditFilter => {
                self.input = Some(Input {
                    caret: self.filter.len(),
                    text: self.filter.clone(),
                    error: None,
                });
                self.history.reset();
                self.relayout();
            }
            Action::FilterEdit(e) => {
                self.edit(e);
                self.relayout();
            }
            Action::FilterSubmit => {
                if let Some(input) = self.input.take() {
                    self.relayout();
                    if let Err(e) = self.apply(input.text.clone(), true, fx) {
                        // Keep the bar open on the mistake.
                        self.input = Some(Input {
                            error: Some(e),
                            ..input
                        });
                        self.relayout();
                    }
                }
            }
            Action::FilterCancel => {
                self.input = None;
                self.history.reset();
                self.relayout();
            }
            Action::Mouse(m) => self.mouse(m, fx),
            Action::Resize(w, h) => {
                let t = self.cursor_time();
                self.layout.area = Rect::new(0, 0, w, h);
                self.relayout();
                self.cursor_l = self.cursor_l.min(self.layout.lat_cells.saturating_sub(1));
                self.center_on(t, fx);
            }
            Action::Tick(dt) => self.tick(dt, fx),
            Action::Reply(r) => self.reply(r, fx),
        }
        debug_assert_eq!(
            self.layout,
            self.fresh_layout(),
            "every change the layout depends on relayouts"
        );
        effects
    }

    /// The layout for the terminal size, the filter bar and the orientation now.
    fn fresh_layout(&self) -> Layout {
        let bar = match &self.input {
            Some(i) if i.error.is_some() => 3,
            _ => 1,
        };
        Layout::new(self.layout.area, bar, self.orientation)
    }

    /// Compute the layout again, after a change of what it depends on.
    fn relayout(&mut self) {
        self.layout = self.fresh_layout();
    }

    /// Start time of the row under the cursor.
    pub fn cursor_time(&self) -> u64 {
        self.view_start
            .saturating_add(self.interval.saturating_mul(self.cursor_t as u64))
    }

    /// Put `t` under the cursor, keeping the cursor's position on screen when possible.
    fn center_on(&mut self, t: u64, fx: &mut Effects) {
        let cells = self.layout.time_cells.max(1);
        self.cursor_t = self.cursor_t.min(cells - 1);
        let back = self.interval.saturating_mul(self.cursor_t as u64);
        let aligned = self.cap.start + (t.saturating_sub(self.cap.start) / self.interval) * self.interval;
        self.view_start = aligned.saturating_sub(back).max(self.cap.start.saturating_sub(back));
        self.requery(fx);
    }

    fn scrub(&mut self, by: i64, fx: &mut Effects) {
        let span = self.interval.saturating_mul(self.layout.time_cells.max(1) as u64);
        let latest = self.cap.end.saturating_sub(span / 2).max(self.cap.start);
        let earliest = self.cap.start.saturating_sub(span / 2);
        let t = if by < 0 {
            self.view_start.saturating_sub(by.unsigned_abs())
        } else {
            self.view_start.saturating_add(by as u64)
        };
        let t = t.clamp(earliest, latest.max(earliest));
        if t != self.view_start {
            self.view_start = t;
            self.requery(fx);
        }
    }

    /// Scrub by whole pages of rows.
    fn scrub_pages(&mut self, pages: i64, fx: &mut Effects) {
        let span = self.interval.saturating_mul(self.layout.time_cells.max(1) as u64) as i64;
        self.scrub(pages.saturating_mul(span), fx);
    }

    fn zoom(&mut self, dir: i32, fx: &mut Effects) {
        let i = INTERVALS
            .iter()
            .position(|&x| x >= self.interval)
            .unwrap_or(INTERVALS.len() - 1);
        let j = (i as i32 + dir).clamp(0, INTERVALS.len() as i32 - 1) as usize;
        if INTERVALS[j] == self.interval {
            return;
        }
        let t = self.cursor_time();
        self.interval = INTERVALS[j];
        self.center_on(t, fx);
    }

    fn move_cursor(&mut self, m: Move, fx: &mut Effects) {
        match self.focus {
            Pane::Spectrogram => self.move_spectro(m, fx),
            Pane::Breakdown => {
                let n = self.groups().len();
                self.group_sel = step_list(self.group_sel, n, m, 5);
            }
            Pane::Events => {
                let n = self.ev_len();
                let page = self.layout.list_rows.max(1);
                self.ev_sel = step_list(self.ev_sel, n, m, page);
                if self.ev_sel < self.ev_top {
                    self.ev_top = self.ev_sel;
                } else if self.ev_sel >= self.ev_top + page {
                    self.ev_top = self.ev_sel + 1 - page;
                }
                self.load_rows(fx);
            }
        }
    }

    fn move_spectro(&mut self, m: Move, fx: &mut Effects) {
        // Moves along time and latency, whichever way the pane is drawn.
        let (dt, dl): (i64, i64) = match (self.orientation, m) {
            (Orientation::Sysdig, Move::Up) | (Orientation::Heatmap, Move::Left) => (-1, 0),
            (Orientation::Sysdig, Move::Down) | (Orientation::Heatmap, Move::Right) => (1, 0),
            (Orientation::Sysdig, Move::Left) | (Orientation::Heatmap, Move::Down) => (0, -1),
            (Orientation::Sysdig, Move::Right) | (Orientation::Heatmap, Move::Up) => (0, 1),
            (_, Move::PageUp) => return self.scrub_pages(-1, fx),
            (_, Move::PageDown) => return self.scrub_pages(1, fx),
            (_, Move::Home) => {
                self.cursor_t = 0;
                let t = self.cap.start;
                return self.center_on(t, fx);
            }
            (_, Move::End) => {
                let t = self.cap.end.saturating_sub(1);
                self.cursor_t = self.layout.time_cells.saturating_sub(1);
                return self.center_on(t, fx);
            }
        };
        let lat = self.layout.lat_cells.max(1) as i64;
        self.cursor_l = (self.cursor_l as i64 + dl).clamp(0, lat - 1) as usize;
        let cells = self.layout.time_cells.max(1) as i64;
        let t = self.cursor_t as i64 + dt;
        if t < 0 {
            self.scrub(-(self.interval as i64), fx);
        } else if t >= cells {
            self.scrub(self.interval as i64, fx);
        } else {
            self.cursor_t = t as usize;
        }
    }

    /// Enter, by pane.
    fn activate(&mut self, fx: &mut Effects) {
        match self.focus {
            Pane::Spectrogram => {
                let clause = self.region_clause();
                let filter = match self.filter.is_empty() {
                    true => clause,
                    false => format!("({}) and {clause}", self.filter),
                };
                self.anchor = None;
                if let Err(e) = self.apply(filter.clone(), true, fx) {
                    self.note = Some(format!("region: {}", e.message));
                }
            }
            Pane::Breakdown => {
                let field = self.group_field().name;
                let Some(g) = self.groups().get(self.group_sel) else {
                    return;
                };
                let clause = if g.value.is_empty() {
                    format!("not {field} exists")
                } else {
                    format!("{field}={}", literal::string(&g.value))
                };
                let filter = match self.filter.is_empty() {
                    true => clause,
                    false => format!("({}) and {clause}", self.filter),
                };
                if let Err(e) = self.apply(filter, true, fx) {
                    self.note = Some(format!("breakdown: {}", e.message));
                }
            }
            Pane::Events => self.detail = !self.detail && self.ev_len() > 0,
        }
    }

    /// The filter clause for the selected region (or the cursor cell).
    pub fn region_clause(&self) -> String {
        let here = (self.cursor_time(), self.cursor_l);
        let (a, b) = self.anchor.unwrap_or(here);
        let (t0, t1) = (a.min(here.0), a.max(here.0).saturating_add(self.interval));
        let (l0, l1) = (b.min(here.1), b.max(here.1));
        let (c0, c1) = (self.layout.cell_cols(l0).start, self.layout.cell_cols(l1).end);
        let rel = |t: u64| literal::duration(t.saturating_sub(self.cap.reader.meta().start_ts));
        let mut parts = vec![format!("evt.time>={}", rel(t0)), format!("evt.time<{}", rel(t1))];
        if c0 > 0 {
            parts.push(format!("latency>={}", literal::duration(spectro::column_range(c0).0)));
        }
        if c1 < COLS {
            parts.push(format!("latency<{}", literal::duration(spectro::column_range(c1).0)));
        }
        parts.join(" and ")
    }

    /// Make `text` the filter in force (remembering the old one for undo when `record`).
    fn apply(&mut self, text: String, record: bool, fx: &mut Effects) -> Result<(), FilterError> {
        let text = text.trim().to_owned();
        let compiled = compile(&text, &self.cap.reader)?;
        if record && text != self.filter {
            self.undo.push(std::mem::replace(&mut self.filter, text.clone()));
            self.history.push(&text);
        } else {
            self.filter = text;
        }
        self.compiled = compiled;
        self.history.reset();
        self.requery(fx);
        Ok(())
    }

    fn edit(&mut self, e: Edit) {
        let Some(input) = self.input.as_mut() else { return };
        let prev = |s: &str, i: usize| s[..i].chars().next_back().map_or(i, |c| i - c.len_utf8());
        let next = |s: &str, i: usize| s[i..].chars().next().map_or(i, |c| i + c.len_utf8());
        match e {
            Edit::Insert(c) if !c.is_control() => {
                input.text.insert(input.caret, c);
                input.caret += c.len_utf8();
            }
            Edit::Insert(_) => return,
            Edit::Backspace => {
                let p = prev(&input.text, input.caret);
                input.text.replace_range(p..input.caret, "");
                input.caret = p;
            }
            Edit::Delete => {
                let n = next(&input.text, input.caret);
                input.text.replace_range(input.caret..n, "");
            }
            Edit::Left => input.caret = prev(&input.text, input.caret),
            Edit::Right => input.caret = next(&input.text, input.caret),
            Edit::Home => input.caret = 0,
            Edit::End => input.caret = input.text.len(),
            Edit::Older | Edit::Newer => {
                let h = if e == Edit::Older {
                    self.history.older()
                } else {
                    self.history.newer()
                };
                let text = h.map_or_else(|| self.filter.clone(), str::to_owned);
                input.caret = text.len();
                input.text = text;
            }
        }
        // Live validation: parsing and checking are microseconds, so every keystroke.
        input.error = compile(&input.text, &self.cap.reader).err();
    }

    fn mouse(&mut self, m: Mouse, fx: &mut Effects) {
        let (x, y) = match m {
            Mouse::Down { x, y } | Mouse::Drag { x, y } | Mouse::Up { x, y } => (x, y),
            Mouse::ScrollUp { .. } => return self.scrub(-(self.interval as i64) * 3, fx),
            Mouse::ScrollDown { .. } => return self.scrub(self.interval as i64 * 3, fx),
        };
        let Some((t, l)) = self.layout.cell_at(x, y) else {
            // A click elsewhere focuses the pane under it.
            if let Some(f) = self.layout.pane_at(x, y) {
                self.focus = f;
            }
            return;
        };
        self.focus = Pane::Spectrogram;
        self.cursor_t = t;
        self.cursor_l = l;
        match m {
            Mouse::Down { .. } => self.anchor = Some((self.cursor_time(), l)),
            Mouse::Up { .. } if self.anchor.is_some_and(|a| a != (self.cursor_time(), l)) => self.activate(fx),
            _ => {}
        }
    }

    fn tick(&mut self, dt: Duration, fx: &mut Effects) {
        if !self.playing {
            return;
        }
        let dt = u64::try_from(dt.as_nanos()).unwrap_or(u64::MAX);
        self.replay_at = self.replay_at.saturating_add(dt.saturating_mul(SPEEDS[self.speed]));
        if self.replay_at >= self.cap.end {
            self.playing = false;
            self.note = Some("replay reached the end".into());
            return;
        }
        // Keep the replay clock on the last row, as the animated spectrogram scrolled.
        let rows = self.layout.time_cells.max(1) as u64;
        let want = self.replay_at.saturating_sub(self.interval.saturating_mul(rows - 1));
        let want = self.cap.start + (want.saturating_sub(self.cap.start) / self.interval) * self.interval;
        if want != self.view_start && !self.busy {
            self.view_start = want;
            self.requery(fx);
        }
    }

    fn reply(&mut self, r: Reply, fx: &mut Effects) {
        match r {
            Reply::Answer(a) if a.gen == self.gen => {
                self.busy = false;
                self.grid = a.grid.clone();
                self.group_sel = self.group_sel.min(a.groups.len().saturating_sub(1));
                if let Some(d) = a.damaged.first() {
                    let (chunks, events) = (a.damaged.len(), a.damaged.iter().map(|d| d.events).sum::<u64>());
                    self.note = Some(format!(
                        "{} unreadable chunk{} left out ({} events); chunk {}: {}",
                        chunks,
                        if chunks == 1 { "" } else { "s" },
                        units::count(events),
                        d.chunk,
                        d.error
                    ));
                }
                self.answer = Some(*a);
                let n = self.ev_len();
                self.ev_sel = self.ev_sel.min(n.saturating_sub(1));
                self.ev_top = self.ev_top.min(self.ev_sel);
                // Rows of the previous answer may not be rows of this one.
                self.forget_rows(fx);
                self.load_rows(fx);
            }
            Reply::Rows(r) if r.gen == self.rows_gen => {
                self.ev_rows = r.rows;
                if let Some(e) = r.error {
                    self.note = Some(e);
                }
            }
            Reply::Failed { gen, error } if gen == self.gen => {
                self.busy = false;
                self.note = Some(error);
            }
            _ => {}
        }
    }

    /// The view or the filter changed: show the summaries' picture now, ask for the exact one.
    fn requery(&mut self, fx: &mut Effects) {
        self.gen += 1;
        let rows = self.layout.time_cells;
        let chunks = self.cap.reader.chunks();
        self.grid = if self.filter.is_empty() {
            Grid::from_summaries(chunks, self.view_start, self.interval, rows)
        } else {
            // Summaries know nothing of the filter: an empty grid says "not yet" honestly.
            Grid::empty(self.view_start, self.interval, rows)
        };
        self.busy = true;
        fx.query = Some(Query {
            gen: self.gen,
            filter: self.compiled.clone(),
            start: self.view_start,
            interval: self.interval,
            rows,
            group: self.group_field(),
            slowest: match self.sort {
                Sort::Time => 0,
                Sort::Latency => self.slowest,
            },
        });
    }

    /// Drop the decoded rows, and the replies still to come for them: they belong to another
    /// answer or order.
    fn forget_rows(&mut self, fx: &mut Effects) {
        self.ev_rows.clear();
        self.rows_gen += 1;
        fx.rows = None;
    }

    /// Ask for the events the list shows, unless they are decoded already.
    fn load_rows(&mut self, fx: &mut Effects) {
        let visible = self.layout.list_rows;
        let Some(a) = &self.answer else {
            self.forget_rows(fx);
            return;
        };
        let refs: Vec<(usize, EventRef)> = match self.sort {
            Sort::Latency => (self.ev_top..(self.ev_top + visible).min(a.slowest.len()))
                .map(|i| (i, EventRef::of(&a.slowest[i])))
                .collect(),
            Sort::Time => {
                let mut out = Vec::new();
                let mut before = 0u64;
                let want = self.ev_top as u64..(self.ev_top + visible) as u64;
                for &(chunk, n) in &a.per_chunk {
                    if before + n > want.start && before < want.end {
                        let from = want.start.saturating_sub(before);
                        let to = (want.end - before).min(n);
                        for k in from..to {
                            out.push(((before + k) as usize, EventRef { chunk, row: k as usize }));
                        }
                    }
                    before += n;
                    if before >= want.end {
                        break;
                    }
                }
                out
            }
        };
        if refs.iter().all(|&(i, _)| self.ev_row(i).is_some()) {
            return;
        }
        self.rows_gen += 1;
        fx.rows = Some(RowsQuery {
            gen: self.rows_gen,
            answer: a.gen,
            counting: match self.sort {
                Sort::Time => Counting::Matching,
                Sort::Latency => Counting::Rows,
            },
            refs,
            filter: self.compiled.clone(),
            start: a.grid.start(),
            end: a.grid.end(),
        });
    }
}

/// Move a list selection of `n` rows.
fn step_list(sel: usize, n: usize, m: Move, page: usize) -> usize {
    let last = n.saturating_sub(1);
    match m {
        Move::Up | Move::Left => sel.saturating_sub(1),
        Move::Down | Move::Right => (sel + 1).min(last),
        Move::PageUp => sel.saturating_sub(page),
        Move::PageDown => (sel + page).min(last),
        Move::Home => 0,
        Move::End => last,
    }
}

/// Parse, check and compile `text` against this capture; `None` for an empty filter.
pub fn compile(text: &str, reader: &Reader) -> Result<Option<Arc<Compiled>>, FilterError> {
    if text.trim().is_empty() {
        return Ok(None);
    }
    let f = iocap_filter::Filter::parse(text)?;
    Ok(Some(Arc::new(f.compile(reader.meta(), reader.tables()))))
}
