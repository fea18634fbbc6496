//! Drawing the filter bar: the filter in force, or while editing (`/`) the text with its
//! caret, the span of an error highlighted, and the error's message and help on the lines
//! below.

use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use ratatui::Frame;

use crate::app::App;

/// Draw the filter bar in `area`.
pub fn render(app: &App, f: &mut Frame, area: Rect) {
    let t = &app.theme;
    let Some(input) = &app.filter.input else {
        let text = if app.filter.applied.is_empty() {
            Span::styled("(all events)  / to filter", t.dim())
        } else {
            Span::raw(app.filter.applied.clone())
        };
        f.render_widget(
            Paragraph::new(Line::from(vec![Span::styled("filter: ", t.dim()), text])),
            area,
        );
        return;
    };
    let text = &input.text;
    let bad = input.error.as_ref().map(|e| {
        let s = e.span.start.min(text.len());
        s..e.span.end.clamp(s, text.len())
    });
    let mut spans = vec![Span::styled("/ ", t.title(true))];
    // One span per char: the caret and the error span are styled per character.
    let mut chars: Vec<(usize, char)> = text.char_indices().collect();
    chars.push((text.len(), ' '));
    for (i, c) in chars {
        let mut style = ratatui::style::Style::default();
        if let Some(b) = &bad {
            if b.contains(&i) || (b.is_empty() && b.start == i) {
                style = style.patch(t.error());
            }
        }
        if i == input.caret {
            style = style.patch(t.cursor());
        }
        spans.push(Span::styled(c.to_string(), style));
    }
    let mut lines = vec![Line::from(spans)];
    if let Some(e) = &input.error {
        lines.push(Line::styled(format!("  {}", e.message), t.error()));
        if let Some(h) = &e.help {
            lines.push(Line::from(format!("  help: {h}")));
        }
    }
    f.render_widget(Paragraph::new(lines), area);
}
