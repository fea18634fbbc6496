//! The status line: the file, whether it is being recorded (and followed), what the keys do
//! with a region selected in the focused spectrogram, how many events match in the whole
//! capture (and, when none does, the value nearest the filter's), drops in the view, block
//! requests never seen complete (in the whole capture), the view's time range and row length,
//! the replay, a scan under way, a recovered file, and the last note.

use iocap_analysis::units::{self, Style::Terminal as TERM};
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use ratatui::Frame;

use crate::app::App;
use crate::keys::REGION_KEYS;
use crate::layout::Pane;
use crate::replay::SPEEDS;

/// Draw the status line in `area`.
pub fn render(app: &App, f: &mut Frame, area: Rect) {
    let t = &app.theme;
    let total = app.cap.total;
    // Matches in the whole capture (the panes say how many of them are in view), once the
    // first scan has answered.
    let matching = match app.matched_all().filter(|_| app.answer.is_some()) {
        Some(n) => format!("{}/{}", units::count(n), units::count(total)),
        None => format!("…/{}", units::count(total)),
    };
    let rel = |ts: u64| units::offset(ts.saturating_sub(app.cap.start));
    let drops = app.drops_in_view();
    let mut spans = vec![Span::raw(format!(" {} ", app.cap.name))];
    if app.cap.is_live() {
        // Early in the line, so that a narrow terminal still shows it.
        spans.push(Span::styled("● LIVE", t.live()));
        spans.push(Span::raw(if app.follows() { " " } else { " (End follows) " }));
    }
    // Where Enter applies it: with the spectrogram's focus (elsewhere it takes a breakdown row
    // or opens an event).
    if app.view.anchor.is_some() && app.focus == Pane::Spectrogram {
        // Early in the line, so that a narrow terminal still shows it.
        spans.push(Span::raw("│ "));
        spans.push(Span::styled(format!("region: {REGION_KEYS}"), t.selection()));
        spans.push(Span::raw(" "));
    }
    spans.push(Span::raw(format!("│ {matching} ")));
    // Right after the count of none, so that a small terminal (where the latency pane has no
    // line for it) still shows it.
    if let Some(near) = app.near_miss() {
        spans.push(Span::styled(format!("did you mean {near}? "), t.error()));
    }
    // With a filter naming processes, how many of the drops were theirs (when the capture
    // says whose they were).
    let theirs = match app.drops_of_named() {
        Some(n) => format!(" ({} theirs)", units::count(n)),
        None => String::new(),
    };
    spans.extend([
        Span::raw("│ "),
        Span::styled(
            format!("drops {}{theirs}", units::count(drops)),
            if drops > 0 { t.drops() } else { Style::default() },
        ),
    ]);
    if app.cap.unseen > 0 {
        // Of the whole capture (the recorder counts them when it finds their requests reused,
        // not when they were lost): block requests it never saw complete, so not shown.
        spans.push(Span::raw(" │ "));
        spans.push(Span::styled(
            format!("{} blk unseen", units::count(app.cap.unseen)),
            t.drops(),
        ));
    }
    if let Some(why) = app.cap.reader.recovery() {
        // A file the recorder never finished (killed, full disk) or that was damaged since:
        // what is shown is what could be read back. Of a recording of several files, which
        // files were missing, unreadable or recovered, each named.
        let what = if app.cap.reader.file_count() > 1 {
            "recording"
        } else {
            "unfinished file, recovered"
        };
        // A copy of standard input that stopped says why first (a full disk), in its words.
        let why = match &app.cut {
            Some(cut) => format!("{cut}; {why}"),
            None => why.to_owned(),
        };
        spans.push(Span::styled(format!(" │ {what}: {why}"), t.error()));
    }
    if let Some(n) = &app.note {
        spans.push(Span::styled(format!(" │ {n}"), t.error()));
    }
    spans.extend([
        Span::raw(format!(
            " │ {}…{} │ {}/row",
            rel(app.view.start),
            rel(app.view_end()),
            units::tick(app.view.interval, TERM)
        )),
    ]);
    if app.replay.playing {
        spans.push(Span::raw(format!(" │ ▶ {}×", SPEEDS[app.replay.speed])));
    }
    if app.busy {
        spans.push(Span::raw(" │ scanning…"));
    }
    // The way to the keys is always said, at the right (`?` alone under 80 columns): what does
    // not fit before it is cut, and says so with `…`. What is wrong (a recovered file, a
    // note) comes before the view's time range, which the spectrogram's axis also shows.
    let hint = if area.width >= 80 { "│ ?: keys " } else { "│ ? " };
    let hint_w = u16::try_from(hint.chars().count()).unwrap_or(u16::MAX).min(area.width);
    let [rest, right] = Layout::horizontal([Constraint::Min(0), Constraint::Length(hint_w)]).areas(area);
    let line = Line::from(spans);
    let cut = line.width() > usize::from(rest.width);
    f.render_widget(Paragraph::new(line).style(t.status()), rest);
    if cut && rest.width > 0 {
        let last = (rest.right() - 1, rest.y);
        f.buffer_mut()[last].set_symbol("…");
    }
    f.render_widget(Paragraph::new(hint).style(t.status()), right);
}
