//! The field picker's popup: what was typed, and the fields that match it with their
//! descriptions, the selected one marked; its keys on its last line.

use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph};
use ratatui::Frame;

use crate::app::App;
use crate::layout::popup;
use crate::panes::cut;

/// Draw the picker's popup over the frame, when it is open.
pub fn render(app: &App, f: &mut Frame) {
    let Some(p) = &app.picker else { return };
    let area = popup(app.layout.area, 78, 20);
    let inner_w = usize::from(area.width.saturating_sub(2));
    let matches = p.matches();
    // The query line, the keys' line, the borders: the rest lists matches, scrolled to keep
    // the selection in view.
    let rows = usize::from(area.height.saturating_sub(4));
    let first = p.sel.saturating_sub(rows.saturating_sub(1));
    let name_w = matches.iter().map(|f| f.name.len()).max().unwrap_or(0).min(inner_w / 2);
    let mut lines = vec![Line::from(vec![
        Span::styled("> ", app.theme.dim()),
        // What was typed is the user's own, but escaped all the same.
        Span::raw(cut(&iocap_format::escape::escape(p.query.as_bytes()), inner_w.saturating_sub(3))),
        Span::styled("▏", app.theme.dim()),
    ])];
    if matches.is_empty() {
        lines.push(Line::styled("no field matches", app.theme.error()));
    }
    for (i, field) in matches.iter().enumerate().skip(first).take(rows) {
        let desc_w = inner_w.saturating_sub(name_w + 3);
        let text = format!(" {:<name_w$}  {}", cut(field.name, name_w), cut(field.description, desc_w));
        let style = if i == p.sel {
            Style::default().add_modifier(Modifier::REVERSED)
        } else {
            Style::default()
        };
        lines.push(Line::styled(text, style));
    }
    let keys_y = area.bottom().saturating_sub(2);
    let title = format!(" {}: type to search ({} of {}) ", p.what.title(), matches.len(), p.what.fields().len());
    f.render_widget(Clear, area);
    f.render_widget(
        Paragraph::new(lines).block(Block::default().borders(Borders::ALL).title(title)),
        area,
    );
    if keys_y > area.y {
        let keys = Line::styled(" ↑/↓ select  Enter picks  Esc closes", app.theme.dim());
        f.render_widget(keys, Rect::new(area.x + 1, keys_y, area.width.saturating_sub(2), 1));
    }
}
