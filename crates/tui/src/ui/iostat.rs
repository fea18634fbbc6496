//! The iostat pane, in place of the event list while `i` shows it: iostat's figures (r/s, w/s,
//! rkB/s, wkB/s, r_await, w_await, aqu-sz, qdepth, %util, as `iocap iostat` computes them) for each
//! disk over the view, from the block requests that match the filter and were issued in it.
//! The title says the window: the whole capture, or the part in view. A disk with requests
//! whose completion the recorder never saw says how many under the table.

use iocap_analysis::iostat::DeviceInterval;
use iocap_analysis::units;
use iocap_filter::fields;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::Line;
use ratatui::widgets::{Cell, Row, Table};
use ratatui::Frame;

use crate::app::App;
use crate::layout::Pane;
use super::block;
use crate::panes::{cut, fit_title};

/// The headings after the disk's, and the widths of their figures: 80×24 leaves 76 cells, of
/// which the disk keeps 6.
const COLUMNS: [(&str, u16); 9] = [
    ("r/s", 7),
    ("w/s", 7),
    ("rkB/s", 8),
    ("wkB/s", 8),
    ("r_await", 7),
    ("w_await", 7),
    ("aqu-sz", 6),
    ("qdepth", 6),
    ("%util", 5),
];

/// Draw the iostat pane in `area`.
pub fn render(app: &App, f: &mut Frame, area: Rect) {
    let rel = |ts: u64| units::offset(ts.saturating_sub(app.cap.start));
    let window = match app.shows_all() {
        true => "the whole capture".to_owned(),
        false => format!("{}…{} in view", rel(app.view.start), rel(app.view_end())),
    };
    let title = fit_title(
        area.width,
        [
            format!(" iostat of {window}, matching block requests (i: events) "),
            format!(" iostat of {window} (i: events) "),
        ],
    );
    let block = block(app, title, app.focus == Pane::Events);
    let inner = block.inner(area);
    f.render_widget(block, area);
    let Some(devices) = app.answer.as_ref().and_then(|a| a.iostat.as_ref()) else {
        f.render_widget(Line::styled("scanning…", app.theme.dim()), inner);
        return;
    };
    if devices.is_empty() {
        f.render_widget(Line::from("no block request matches in view"), inner);
        return;
    }
    let tables = app.cap.reader.tables();
    // Under the table, each shown disk's requests the recorder never saw complete: of the
    // whole capture (they have no time), in no figure. Leaves the header and a row.
    let unseen: Vec<Line> = (devices.iter())
        .filter_map(|d| Some((d.dev, *app.cap.reader.unseen_by_disk().get(&d.dev).filter(|&&n| n > 0)?)))
        .map(|(dev, n)| {
            let said = format!(
                "{}: {} requests never seen complete (whole capture), in no figure",
                fields::device_name(dev, tables),
                units::count(n)
            );
            Line::styled(cut(&said, usize::from(inner.width)), app.theme.drops())
        })
        .collect();
    let below = u16::try_from(unseen.len()).unwrap_or(u16::MAX).min(inner.height.saturating_sub(2));
    let rows_h = u16::try_from(devices.len() + 1).unwrap_or(u16::MAX).min(inner.height - below);
    let [inner, under, _] =
        Layout::vertical([Constraint::Length(rows_h), Constraint::Length(below), Constraint::Min(0)]).areas(inner);
    for (line, y) in unseen.into_iter().zip(under.y..under.bottom()) {
        f.render_widget(line, Rect { y, height: 1, ..under });
    }
    let disk_w = usize::from(inner.width.saturating_sub(COLUMNS.iter().map(|c| c.1 + 1).sum::<u16>()));
    let rows = devices.iter().map(|d| {
        let mut cells = vec![Cell::from(cut(&fields::device_name(d.dev, tables), disk_w))];
        cells.extend(figures(d).into_iter().zip(COLUMNS).map(|(v, (_, w))| {
            Cell::from(Line::from(format!("{v:>w$}", w = usize::from(w))))
        }));
        Row::new(cells)
    });
    let mut widths = vec![Constraint::Min(4)];
    widths.extend(COLUMNS.iter().map(|&(_, w)| Constraint::Length(w)));
    let mut header = vec![Cell::from("DEVICE")];
    header.extend(
        COLUMNS
            .iter()
            .map(|&(h, w)| Cell::from(format!("{h:>w$}", w = usize::from(w)))),
    );
    let header = Row::new(header).style(app.theme.dim());
    f.render_widget(Table::new(rows, widths).header(header).column_spacing(1), inner);
}

/// A disk's figures as the columns show them: rates to a tenth (whole from 10,000 on), times
/// and the queues to a hundredth (ms), utilisation to a tenth of a percent (`iocap iostat`
/// gives rates a hundredth: the columns here are narrower).
fn figures(d: &DeviceInterval) -> [String; 9] {
    let rate = |v: f64| if v < 10_000.0 { format!("{v:.1}") } else { format!("{v:.0}") };
    [
        rate(d.r_per_s),
        rate(d.w_per_s),
        rate(d.rkb_per_s),
        rate(d.wkb_per_s),
        format!("{:.2}", d.r_await_ms),
        format!("{:.2}", d.w_await_ms),
        format!("{:.2}", d.aqu_sz),
        format!("{:.2}", d.qdepth),
        format!("{:.1}", d.util_pct),
    ]
}
