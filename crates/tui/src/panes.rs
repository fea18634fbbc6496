//! The panes' states, one module each. A pane with state of its own (`spectrogram`,
//! `breakdown`, `events`, `filter_bar`) keeps it in a type with an `update` that takes the
//! actions that concern it, changes only that state and returns what it needs from the rest of
//! the app (a new question to the worker, rows to decode); the app does that. They know nothing
//! of the [`crate::app::App`] that holds them: each is drawn by its module of [`crate::ui`],
//! from a shared `&App`.
//!
//! The keys that reach the panes are decided in [`crate::keys`]; where each pane goes, in
//! [`crate::layout`].

pub mod breakdown;
pub mod events;
pub mod filter_bar;
pub mod flame;
pub mod picker;
pub mod spectrogram;

use iocap_analysis::units;
use ratatui::text::Span;

use crate::action::Move;

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

/// Display width of `s` (escaped text may hold wide characters).
pub fn width(s: &str) -> usize {
    Span::raw(s).width()
}

/// `s` in at most `w` columns, cut in the middle (`/var/…base/16384`) as every name and path
/// on screen is ([`units::cut_middle`], which the commands' tables use too).
pub fn cut(s: &str, w: usize) -> String {
    units::cut_middle(s, w, |c| width(c.encode_utf8(&mut [0u8; 4])))
}

/// The first of `titles` that fits a pane `width` cells wide with its corners, else the last.
pub fn fit_title(width: u16, titles: impl IntoIterator<Item = String>) -> String {
    let mut last = String::new();
    for t in titles {
        if self::width(&t) + 2 <= usize::from(width) {
            return t;
        }
        last = t;
    }
    last
}

