//! The frame: every pane drawn in its rectangle of the app's [`crate::layout::Layout`], then
//! the popups (an event's details, the keys) over them. Panes draw themselves (see
//! [`crate::panes`]) from a shared `&App`.

use ratatui::Frame;

use crate::app::App;
use crate::panes;

/// Draw the whole frame.
pub fn render(app: &App, f: &mut Frame) {
    let a = &app.layout;
    panes::filter_bar::render::render(app, f, a.filter);
    panes::sides::render(app, f, a.compare);
    panes::spectrogram::render::render(app, f, a.spectro);
    panes::histogram::render(app, f, a.hist);
    panes::breakdown::render::render(app, f, a.breakdown);
    if app.iostat {
        panes::iostat::render(app, f, a.events);
    } else {
        panes::events::render::render(app, f, a.events);
    }
    panes::status::render(app, f, a.status);
    if app.list.detail {
        panes::events::render::render_detail(app, f);
    }
    if app.help {
        panes::help::render(app, f);
    }
}
