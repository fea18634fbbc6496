//! The frame: every pane drawn in its rectangle of the app's [`crate::layout::Layout`], then
//! the popups (an event's details, the keys) over them, each by its module here from a shared
//! `&App`, changing nothing. The panes' states are in [`crate::panes`], which knows nothing of
//! the app: `app` uses `panes`, `ui` both, and nothing goes the other way. The `histogram`
//! pane, the `iostat` pane (in the event list's place while shown) and the `status` line only
//! draw what the app holds; `help` prints the key table; `sides` says what a comparison's two
//! sides are.

pub mod breakdown;
pub mod events;
pub mod filter_bar;
pub mod help;
pub mod picker;
pub mod histogram;
pub mod flame;
pub mod iostat;
pub mod sides;
pub mod spectrogram;
pub mod status;

use iocap_analysis::units;
use ratatui::text::Span;
use ratatui::widgets::{Block, Borders};
use ratatui::Frame;

use crate::app::App;

/// Draw the whole frame.
pub fn render(app: &App, f: &mut Frame) {
    let a = &app.layout;
    filter_bar::render(app, f, a.filter);
    sides::render(app, f, a.compare);
    spectrogram::render(app, f, a.spectro);
    histogram::render(app, f, a.hist);
    breakdown::render(app, f, a.breakdown);
    if app.iostat {
        iostat::render(app, f, a.events);
    } else if app.flame.is_some() {
        flame::render(app, f, a.events);
    } else {
        events::render(app, f, a.events);
    }
    status::render(app, f, a.status);
    if app.list.detail {
        events::render_detail(app, f);
    }
    picker::render(app, f);
    if app.help {
        help::render(app, f);
    }
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

/// A pane's border block with its title, highlighted when the pane has the focus.
pub fn block(app: &App, title: String, focused: bool) -> Block<'static> {
    Block::default()
        .borders(Borders::ALL)
        .border_style(app.theme.title(focused))
        .title(Span::styled(title, app.theme.title(focused)))
}
