//! The `?` popup: every key, printed from the table that also decides what they do
//! ([`crate::keys::BINDINGS`]).

use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Wrap};
use ratatui::Frame;

use crate::app::App;
use crate::keys::BINDINGS;
use crate::layout::popup;

/// Draw the help popup over the frame.
pub fn render(app: &App, f: &mut Frame) {
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
