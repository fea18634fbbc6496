//! Drawing the filter bar: the filter in force (its start and end around a `…` when it is wider
//! than the bar), or while editing (`/`) the part of the text around the caret, `…` where the
//! line goes on beyond the bar, the span of an error highlighted (on the `…` when the span is
//! off that side), and the error's message and help on the lines below.

use std::ops::Range;

use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use ratatui::Frame;

use crate::panes::filter_bar::line::{self, Window};
use crate::panes::filter_bar::{Input, PROMPT};
use crate::app::App;
use crate::theme::Theme;

/// What the closed bar shows before the filter.
const LABEL: &str = "filter: ";

/// Draw the filter bar in `area`.
pub fn render(app: &App, f: &mut Frame, area: Rect) {
    let t = &app.theme;
    let Some(input) = &app.filter.input else {
        let text = if app.filter.applied.is_empty() {
            Span::styled("(all events)  / to filter", t.dim())
        } else {
            let cells = usize::from(area.width).saturating_sub(LABEL.len());
            Span::raw(line::shorten(&app.filter.applied, cells))
        };
        f.render_widget(
            Paragraph::new(Line::from(vec![Span::styled(LABEL, t.dim()), text])),
            area,
        );
        return;
    };
    let text = &input.text;
    let bad = input.error.as_ref().map(|e| {
        let s = e.span.start.min(text.len());
        s..e.span.end.clamp(s, text.len())
    });
    let cells = usize::from(area.width).saturating_sub(line::str_width(PROMPT));
    let window = line::window(text, input.caret, input.scroll, cells);
    let mut lines = vec![edited(input, window, bad.as_ref(), t)];
    if let Some(e) = &input.error {
        lines.push(Line::styled(format!("  {}", e.message), t.error()));
        if let Some(h) = &e.help {
            lines.push(Line::from(format!("  help: {h}")));
        }
    }
    f.render_widget(Paragraph::new(lines), area);
}

/// The line being edited: the prompt, then `window` of the text with the caret and the error
/// span `bad` styled, character by character, by their place in the whole text.
fn edited<'a>(input: &'a Input, window: Window, bad: Option<&Range<usize>>, t: &Theme) -> Line<'a> {
    let text = &input.text;
    let in_bad = |i: usize| bad.is_some_and(|b| b.contains(&i) || (b.is_empty() && b.start == i));
    let mut spans = vec![Span::styled(PROMPT, t.title(true))];
    if window.from > 0 {
        let off_left = bad.is_some_and(|b| b.start < window.from);
        spans.push(Span::styled("…", if off_left { t.error() } else { t.dim() }));
    }
    // A character with the marks that combine with it at a time, so they stay one cell.
    let mut i = window.from;
    while i < window.to {
        let n = line::next(text, i);
        spans.push(Span::styled(&text[i..n], char_style(i, in_bad(i), input.caret, t)));
        i = n;
    }
    if window.cut_right {
        let off_right = bad.is_some_and(|b| b.end > window.to || b.start >= window.to);
        spans.push(Span::styled("…", if off_right { t.error() } else { t.dim() }));
    } else {
        // The caret's cell after the text.
        spans.push(Span::styled(" ", char_style(text.len(), in_bad(text.len()), input.caret, t)));
    }
    Line::from(spans)
}

/// The style of the character at byte `i`: the error's, the caret's, both or neither.
fn char_style(i: usize, bad: bool, caret: usize, t: &Theme) -> Style {
    let mut style = Style::default();
    if bad {
        style = style.patch(t.error());
    }
    if i == caret {
        style = style.patch(t.cursor());
    }
    style
}
