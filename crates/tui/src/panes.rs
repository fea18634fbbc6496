//! The panes, one module each. A pane with state of its own (`spectrogram`, `breakdown`,
//! `events`, `filter_bar`) keeps it in a type with an `update` that takes the actions that
//! concern it, changes only that state and returns what it needs from the rest of the app (a
//! new question to the worker, rows to decode); the app does that. Each draws itself in
//! `render.rs` beside it, from a shared `&App`, changing nothing. The `histogram` pane and the
//! `status` line only draw what the app holds; `help` prints the key table.
//!
//! The keys that reach the panes are decided in [`crate::keys`]; where each pane goes, in
//! [`crate::layout`].

pub mod breakdown;
pub mod events;
pub mod filter_bar;
pub mod help;
pub mod histogram;
pub mod spectrogram;
pub mod status;

use ratatui::text::Span;
use ratatui::widgets::{Block, Borders};

use crate::action::Move;
use crate::app::App;

/// A list's selection of `n` rows after move `m`, pages of `page` rows.
pub fn step_list(sel: usize, n: usize, m: Move, page: usize) -> usize {
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

/// A pane's border block with its title, highlighted when the pane has the focus.
pub fn block(app: &App, title: String, focused: bool) -> Block<'static> {
    Block::default()
        .borders(Borders::ALL)
        .border_style(app.theme.title(focused))
        .title(Span::styled(title, app.theme.title(focused)))
}
