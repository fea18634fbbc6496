//! Drawing the breakdown: what the view is made of — the top values of a field among matching
//! events, with counts, share and p99, the selected row highlighted; or, split (`d`), with
//! where their calls' latency went: disk time and the rest (`-` for a group of block requests
//! only, whose latency is all device time). Comparing, each value's count on side A, on side
//! B and the change (B's values first, then those only A has).

use iocap_analysis::units::{self, Style::Terminal as TERM};
use ratatui::layout::{Constraint, Rect};
use ratatui::text::Line;
use ratatui::widgets::{Cell, Row, Table};
use ratatui::Frame;

use crate::app::App;
use crate::layout::Pane;
use crate::panes::breakdown::Split;
use super::block;
use crate::panes::{cut, fit_title};

/// Draw the breakdown pane in `area`.
pub fn render(app: &App, f: &mut Frame, area: Rect) {
    let field = app.breakdown.field().name;
    let distinct = app.answer.as_ref().map_or(0, |a| a.group_count);
    // Whether the groups count every event that matches or those in view.
    let focused = app.focus == Pane::Breakdown;
    let scope = match app.shows_all() {
        true => "all",
        false => "in view",
    };
    let hint = match app.breakdown.split {
        Split::Off => " f:field",
        Split::Disk => " disk/other",
        Split::Why => " most time in",
    };
    let title = match &app.answer {
        Some(_) => fit_title(
            area.width,
            [
                format!(" By {field} ({distinct}, {scope}){hint} "),
                format!(" By {field} ({distinct}, {scope}) "),
            ],
        ),
        None => format!(" By {field}{hint} "),
    };
    let block = block(app, title, focused);
    let inner = block.inner(area);
    f.render_widget(block, area);
    let Some(a) = &app.answer else {
        f.render_widget(Line::styled("scanning…", app.theme.dim()), inner);
        return;
    };
    let visible = usize::from(inner.height.saturating_sub(1)).max(1);
    let top = app.breakdown.sel.saturating_sub(visible - 1);
    let total = a.matched.max(1);
    let split = app.breakdown.split;
    let compared = app.compare.as_ref().map(|_| app.a_groups());
    let (widths, header) = match (compared.is_some(), split) {
        // Comparing: A's count (`…` until answered), B's and the change (`+10.0k`).
        (true, _) => ([5, 5, 6], ["value", "A", "B", "Δ"]),
        // Counts take 5 cells (`10.0k`), shares 4 (`100%`), durations 6 (`7.00ms`): the value
        // keeps the rest, its names cut in the middle so that those of one directory differ.
        (false, Split::Off) => ([5, 4, 6], ["value", "count", "%", "p99"]),
        (false, Split::Disk) => ([5, 6, 6], ["value", "count", "disk", "other"]),
        // The longest part's name is `writeback`.
        (false, Split::Why) => ([5, 9, 4], ["value", "count", "most in", "%"]),
    };
    let value_w = usize::from(inner.width.saturating_sub(widths.iter().sum::<u16>() + 3));
    let rows = app.groups().iter().enumerate().skip(top).take(visible).map(|(i, g)| {
        let value = match g.label.is_empty() {
            true => "<NA>".to_owned(),
            false => cut(&g.label, value_w),
        };
        let figures = match (compared, split) {
            (Some(Some(a)), _) => {
                let (na, nb) = (a.get(i).map_or(0, |f| f.0), g.count);
                let delta = match nb.cmp(&na) {
                    std::cmp::Ordering::Equal => "0".to_owned(),
                    std::cmp::Ordering::Greater => format!("+{}", units::short_count(nb - na)),
                    std::cmp::Ordering::Less => format!("-{}", units::short_count(na - nb)),
                };
                return row(app, focused && i == app.breakdown.sel, value, [units::short_count(na), units::short_count(nb), delta]);
            }
            (Some(None), _) => {
                let waiting = ["…".into(), units::short_count(g.count), "…".into()];
                return row(app, focused && i == app.breakdown.sel, value, waiting);
            }
            (None, Split::Off) => [
                format!("{:.0}%", g.count as f64 * 100.0 / total as f64),
                units::duration(g.p99, TERM),
            ],
            (None, _) if g.disk.calls == 0 => ["-".into(), "-".into()],
            (None, Split::Disk) => [
                units::duration(g.disk.disk, TERM),
                units::duration(g.disk.other(), TERM),
            ],
            (None, Split::Why) => match g.disk.main_part() {
                Some((name, t)) => [
                    name.to_owned(),
                    format!("{:.0}%", t as f64 * 100.0 / g.disk.latency.max(1) as f64),
                ],
                None => ["-".into(), "-".into()],
            },
        };
        let [a, b] = figures;
        row(app, focused && i == app.breakdown.sel, value, [units::short_count(g.count), a, b])
    });
    let table = Table::new(
        rows,
        [
            Constraint::Min(6),
            Constraint::Length(widths[0]),
            Constraint::Length(widths[1]),
            Constraint::Length(widths[2]),
        ],
    )
    .header(Row::new(header).style(app.theme.dim()));
    f.render_widget(table, inner);
}

/// A row of the table: the value and three figures, highlighted when `selected`.
fn row(app: &App, selected: bool, value: String, figures: [String; 3]) -> Row<'static> {
    let row = Row::new(std::iter::once(value).chain(figures).map(Cell::from));
    if selected {
        row.style(app.theme.cursor())
    } else {
        row
    }
}
