//! The panes, one module each. A pane with state of its own (`spectrogram`, `breakdown`,
//! `events`, `filter_bar`) keeps it in a type with an `update` that takes the actions that
//! concern it, changes only that state and returns what it needs from the rest of the app (a
//! new question to the worker, rows to decode); the app does that. Each draws itself in
//! `render.rs` beside it, from a shared `&App`, changing nothing. The `histogram` pane, the
//! `iostat` pane (in the event list's place while shown) and the `status` line only draw what
//! the app holds; `help` prints the key table; `sides` says what a comparison's two sides are.
//!
//! The keys that reach the panes are decided in [`crate::keys`]; where each pane goes, in
//! [`crate::layout`].

pub mod breakdown;
pub mod events;
pub mod filter_bar;
pub mod help;
pub mod histogram;
pub mod iostat;
pub mod sides;
pub mod spectrogram;
pub mod status;

use iocap_analysis::units;
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

/// Display width of `s` (escaped text may hold wide characters).
pub fn width(s: &str) -> usize {
    Span::raw(s).width()
}

/// `s` in at most `w` columns, cut in the middle (`/var/…base/16384`) as every name and path
/// on screen is ([`units::cut_middle`], which the commands' tables use too).
pub fn cut(s: &str, w: usize) -> String {
    units::cut_middle(s, w, |c| width(c.encode_utf8(&mut [0u8; 4])))
}

/// How the side panes (histogram, breakdown, list) say what they count, `n` events: every
/// one that matches (`1,655 (all)`), or those in the view when it holds part of the capture
/// (`1,651 in view of 1,655`; `1,651 in view` until the whole is counted). The longer form
/// first, then a shorter one for a narrow title.
pub fn counted(app: &App, n: u64) -> [String; 2] {
    let n = units::count(n);
    match (app.shows_all(), app.matched_all()) {
        (true, _) => [format!("{n} (all)"), n],
        (false, Some(all)) => [format!("{n} in view of {}", units::count(all)), format!("{n} in view")],
        (false, None) => [format!("{n} in view"), format!("{n} in view")],
    }
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

/// A pane's border block with its title, highlighted when the pane has the focus.
pub fn block(app: &App, title: String, focused: bool) -> Block<'static> {
    Block::default()
        .borders(Borders::ALL)
        .border_style(app.theme.title(focused))
        .title(Span::styled(title, app.theme.title(focused)))
}
