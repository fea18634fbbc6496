//! Layout and the frame: where each pane goes at a given terminal size, the status line, and
//! the help popup. Panes draw themselves (see [`crate::panes`]) from a shared `&App`.
//!
//! Layout is a pure function of the terminal size and the filter bar's state, so [`crate::App`]
//! can ask how many spectrogram rows fit (to size its queries) without having drawn anything.

use iocap_analysis::units::{self, Style::Terminal as TERM};
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Wrap};
use ratatui::Frame;

use crate::app::{App, Focus, Orientation, SPEEDS};
use crate::panes;

/// Where everything goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Areas {
    pub filter: Rect,
    pub spectro: Rect,
    pub hist: Rect,
    pub breakdown: Rect,
    pub events: Rect,
    pub status: Rect,
}

pub fn areas(app: &App) -> Areas {
    let bar = match &app.input {
        Some(i) if i.error.is_some() => 3,
        _ => 1,
    };
    let [filter, main, status] =
        Layout::vertical([Constraint::Length(bar), Constraint::Min(0), Constraint::Length(1)]).areas(app.area);
    let [top, events] = Layout::vertical([Constraint::Percentage(60), Constraint::Min(5)]).areas(main);
    let [spectro, right] = Layout::horizontal([Constraint::Percentage(60), Constraint::Min(20)]).areas(top);
    let [hist, breakdown] = Layout::vertical([Constraint::Percentage(55), Constraint::Min(3)]).areas(right);
    Areas {
        filter,
        spectro,
        hist,
        breakdown,
        events,
        status,
    }
}

/// Where the spectrogram's cells are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Geometry {
    /// The cells (no labels, no legend).
    pub plot: Rect,
    pub time_cells: usize,
    pub lat_cells: usize,
}

/// Width of the time labels left of the sysdig-oriented plot, drop marker included.
pub const TIME_LABEL: u16 = 10;
/// Width of the latency labels left of the heatmap plot.
pub const LAT_LABEL: u16 = 7;

impl Geometry {
    /// The (time cell, latency cell) under terminal cell `(x, y)`.
    pub fn cell_at(&self, x: u16, y: u16, o: Orientation) -> Option<(usize, usize)> {
        let p = self.plot;
        if x < p.x || y < p.y || x >= p.right() || y >= p.bottom() {
            return None;
        }
        let (dx, dy) = (usize::from(x - p.x), usize::from(y - p.y));
        Some(match o {
            Orientation::Sysdig => (dy, dx),
            Orientation::Heatmap => (dx, usize::from(p.height) - 1 - dy),
        })
    }
}

pub fn spectro_geometry(app: &App) -> Geometry {
    let inner = Block::default().borders(Borders::ALL).inner(areas(app).spectro);
    // One line of axis labels and one of legend in either orientation.
    let plot = match app.orientation {
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
    let (t, l) = match app.orientation {
        Orientation::Sysdig => (plot.height, plot.width),
        Orientation::Heatmap => (plot.width, plot.height),
    };
    Geometry {
        plot,
        time_cells: usize::from(t),
        lat_cells: usize::from(l),
    }
}

/// Rows of events the list shows.
pub fn events_visible(app: &App) -> usize {
    // Borders and the header line.
    usize::from(areas(app).events.height.saturating_sub(3))
}

/// The focusable pane under terminal cell `(x, y)`.
pub fn pane_at(app: &App, x: u16, y: u16) -> Option<Focus> {
    let a = areas(app);
    let pos = ratatui::layout::Position { x, y };
    [
        (a.spectro, Focus::Spectrogram),
        (a.breakdown, Focus::Breakdown),
        (a.events, Focus::Events),
    ]
    .into_iter()
    .find(|(r, _)| r.contains(pos))
    .map(|(_, f)| f)
}

/// Draw the whole frame.
pub fn render(app: &App, f: &mut Frame) {
    let a = areas(app);
    panes::filter_bar::render(app, f, a.filter);
    panes::spectrogram::render(app, f, a.spectro);
    panes::histogram::render(app, f, a.hist);
    panes::breakdown::render(app, f, a.breakdown);
    panes::events::render(app, f, a.events);
    render_status(app, f, a.status);
    if app.detail {
        panes::events::render_detail(app, f);
    }
    if app.help {
        render_help(app, f);
    }
}

fn render_status(app: &App, f: &mut Frame, area: Rect) {
    let t = &app.theme;
    let total = app.cap.total;
    let matching = match &app.answer {
        Some(a) => format!("{}/{}", units::count(a.matched), units::count(total)),
        None => format!("…/{}", units::count(total)),
    };
    let rel = |ts: u64| units::offset(ts.saturating_sub(app.cap.start));
    let drops = app.drops_in_view();
    let mut spans = vec![
        Span::raw(format!(" {} ", app.cap.name)),
        Span::raw(format!("│ {matching} │ ")),
        Span::styled(
            format!("drops {}", units::count(drops)),
            if drops > 0 { t.drops() } else { Style::default() },
        ),
        Span::raw(format!(
            " │ {}…{} │ {}/row",
            rel(app.view_start),
            rel(app.view_end()),
            units::tick(app.interval, TERM)
        )),
    ];
    if app.playing {
        spans.push(Span::raw(format!(" │ ▶ {}×", SPEEDS[app.speed])));
    }
    if app.busy {
        spans.push(Span::raw(" │ scanning…"));
    }
    if let Some(why) = app.cap.reader.recovery() {
        // A file the recorder never finished (killed, full disk) or that was damaged since:
        // what is shown is what could be read back.
        spans.push(Span::styled(format!(" │ unfinished file, recovered: {why}"), t.error()));
    }
    if let Some(n) = &app.note {
        spans.push(Span::styled(format!(" │ {n}"), t.error()));
    }
    spans.push(Span::raw(" │ ?: keys"));
    f.render_widget(Paragraph::new(Line::from(spans)).style(t.status()), area);
}

/// Every key, as `?` shows them.
pub const KEYS: &[(&str, &str)] = &[
    ("q, Ctrl-C", "quit"),
    ("?", "this help (Esc closes)"),
    ("Tab, Shift-Tab", "next / previous pane"),
    ("/", "edit the filter: Enter applies, Esc cancels, ↑/↓ history"),
    ("u, Ctrl-Z", "undo the last filter change"),
    ("arrows, hjkl", "spectrogram: move the cursor; lists: select"),
    ("PgUp/PgDn, wheel", "scrub back / forward in time"),
    ("Home/End", "start / end of the capture"),
    ("+ / -", "zoom in / out (row interval 1ms…10s)"),
    ("v, mouse drag", "select a time × latency region"),
    ("Enter", "region → filter; breakdown row → filter; event → details"),
    ("Esc", "drop the region, close a popup"),
    ("o", "spectrogram orientation: sysdig / heatmap"),
    ("f, F", "breakdown: next / previous field"),
    ("s", "events: sort by time / latency"),
    ("space", "replay: play / pause"),
    ("x", "replay speed 1× / 10× / 100×"),
    ("c", "palette: classic / colour-blind (NO_COLOR: none)"),
];

fn render_help(app: &App, f: &mut Frame) {
    // 78 columns hold the longest line unwrapped, so every key fits 80×24.
    let area = popup(app.area, 78, KEYS.len() as u16 + 2);
    let lines: Vec<Line> = KEYS
        .iter()
        .map(|(k, what)| {
            Line::from(vec![
                Span::styled(format!("{k:>17} "), Style::default().add_modifier(Modifier::BOLD)),
                Span::raw(*what),
            ])
        })
        .collect();
    f.render_widget(Clear, area);
    f.render_widget(
        Paragraph::new(lines)
            .wrap(Wrap { trim: false })
            .block(Block::default().borders(Borders::ALL).title(" Keys ")),
        area,
    );
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

/// A pane's border block with its title, highlighted when it has the focus.
pub fn pane_block(app: &App, title: String, focused: bool) -> Block<'static> {
    Block::default()
        .borders(Borders::ALL)
        .border_style(app.theme.title(focused))
        .title(Span::styled(title, app.theme.title(focused)))
}
