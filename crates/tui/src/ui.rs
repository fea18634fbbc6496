//! The frame: every pane in its rectangle of the app's [`crate::layout::Layout`], the status
//! line, and the help popup. Panes draw themselves (see [`crate::panes`]) from a shared `&App`.

use iocap_analysis::units::{self, Style::Terminal as TERM};
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Wrap};
use ratatui::Frame;

use crate::app::{App, SPEEDS};
use crate::keys::BINDINGS;
use crate::layout::popup;
use crate::panes;

/// Draw the whole frame.
pub fn render(app: &App, f: &mut Frame) {
    let a = &app.layout;
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

/// Every key, from the table that also decides what they do.
fn render_help(app: &App, f: &mut Frame) {
    // 78 columns hold the longest line unwrapped, so every key fits 80×24.
    let area = popup(app.layout.area, 78, BINDINGS.len() as u16 + 2);
    let lines: Vec<Line> = BINDINGS
        .iter()
        .map(|b| {
            Line::from(vec![
                Span::styled(
                    format!("{:>17} ", b.keys),
                    Style::default().add_modifier(Modifier::BOLD),
                ),
                Span::raw(b.help),
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

/// A pane's border block with its title, highlighted when it has the focus.
pub fn pane_block(app: &App, title: String, focused: bool) -> Block<'static> {
    Block::default()
        .borders(Borders::ALL)
        .border_style(app.theme.title(focused))
        .title(Span::styled(title, app.theme.title(focused)))
}
