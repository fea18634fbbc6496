//! The comparison's line, under the filter bar while comparing: what side A and side B are
//! (capture and filter), in the colours that tell them apart in the histogram, and how their
//! times are aligned.

use iocap_analysis::units::{self, Style::Terminal as TERM};
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use ratatui::Frame;

use crate::app::App;
use crate::compare::Align;
use crate::panes::{cut, width};
use crate::theme::Side;

/// Draw the comparison's line in `area` (nothing when not comparing).
pub fn render<'a>(app: &'a App, f: &mut Frame, area: Rect) {
    let Some(c) = &app.compare else { return };
    let t = &app.theme;
    let w = usize::from(area.width);
    let bar = "(filter bar)";
    let pinned = |filter: &str| match filter {
        "" => "all events".to_owned(),
        f => f.to_owned(),
    };
    // Each side: its capture (two captures: the file's name) and its filter.
    let name = |n: &'a String| n.rsplit('/').next().unwrap_or(n);
    let (a, b) = match (c.two_captures(), &c.pinned) {
        (true, Some(p)) => ((Some(name(&c.cap.name)), pinned(p)), (Some(name(&app.cap.name)), bar.to_owned())),
        (true, None) => ((Some(name(&c.cap.name)), String::new()), (Some(name(&app.cap.name)), String::new())),
        (false, p) => ((None, pinned(p.as_deref().unwrap_or_default())), (None, bar.to_owned())),
    };
    let align = match c.align {
        Align::Wall => {
            // Where A's start lies on B's time.
            let from = i128::from(c.cap.start) - i128::from(c.offset) - i128::from(app.cap.start);
            let sign = if from < 0 { "-" } else { "+" };
            let abs = u64::try_from(from.unsigned_abs()).unwrap_or(u64::MAX);
            format!("{}, A from {sign}{}", c.align.describe(), units::duration(abs, TERM))
        }
        align => align.describe().to_owned(),
    };
    let align = match (c.two_captures(), &c.pinned) {
        (true, None) => format!("one filter, {align}"),
        _ => align,
    };
    // Each side's share of what the letters and gaps leave (13 cells): what the alignment
    // leaves, but the sides come first on a narrow line (the alignment is cut at its edge).
    let room = w.saturating_sub(13);
    let need = width(&side(a.clone(), usize::MAX)).max(width(&side(b.clone(), usize::MAX)));
    let share = (room.saturating_sub(width(&align)) / 2).max(need.min(room / 2));
    let line = Line::from(vec![
        Span::styled(" A ▀ ", t.side(Side::A)),
        Span::raw(side(a, share)),
        Span::styled("  B ▄ ", t.side(Side::B)),
        Span::raw(side(b, share)),
        Span::styled(format!("  {align}"), t.dim()),
    ]);
    f.render_widget(Paragraph::new(line), area);
}

/// A side as `name · filter` (or either alone) in at most `w` cells: the filter keeps what
/// the name does not need, the name at least half when both are long (each cut in the
/// middle).
fn side((name, filter): (Option<&str>, String), w: usize) -> String {
    match name {
        None => cut(&filter, w),
        Some(name) if filter.is_empty() => cut(name, w),
        Some(name) => {
            let name_w = width(name).min((w / 2).max(w.saturating_sub(width(&filter) + 3)));
            let name = cut(name, name_w);
            let rest = w.saturating_sub(width(&name) + 3);
            format!("{name} · {}", cut(&filter, rest))
        }
    }
}
