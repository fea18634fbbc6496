//! The event list pane (columns as biosnoop/sysdig print them) and the detail popup.
//!
//! Only the rows on screen are decoded ([`crate::App`] keeps them in `ev_rows`); the list's
//! length comes from the scan's per-chunk counts, so scrolling through millions of events
//! decodes one chunk at a time.

use iocap_filter::fields;
use iocap_format::{BlockOp, Class, Event};
use ratatui::layout::{Constraint, Rect};
use ratatui::text::Line;
use ratatui::widgets::{Cell, Clear, Paragraph, Row, Table};
use ratatui::Frame;

use crate::app::{App, Focus, Sort};
use crate::ui;
use crate::units;

pub fn render(app: &App, f: &mut Frame, area: Rect) {
    let focused = app.focus == Focus::Events;
    let n = app.ev_len();
    let order = match (app.sort, &app.answer) {
        (Sort::Time, _) => "by time".to_string(),
        // Only the slowest K are kept: say of how many.
        (Sort::Latency, Some(a)) if (a.slowest.len() as u64) < a.matched => {
            format!("slowest of {}", units::count(a.matched))
        }
        (Sort::Latency, _) => "slowest first".to_string(),
    };
    let title = if n == 0 {
        format!(" Events, none, {order} ")
    } else {
        format!(
            " Events {}/{}, {order} (s) ",
            units::count(app.ev_sel as u64 + 1),
            units::count(n as u64)
        )
    };
    let block = ui::pane_block(app, title, focused);
    let inner = block.inner(area);
    f.render_widget(block, area);
    let rows = app.ev_rows.iter().map(|(i, e)| {
        let c = columns(app, e);
        let row = Row::new(c.into_iter().map(Cell::from));
        if focused && *i == app.ev_sel {
            row.style(app.theme.cursor())
        } else {
            row
        }
    });
    let widths = [
        Constraint::Length(10),
        Constraint::Length(15),
        Constraint::Length(7),
        Constraint::Length(10),
        Constraint::Min(10),
        Constraint::Length(6),
        Constraint::Length(8),
        Constraint::Length(6),
    ];
    let header = Row::new(["TIME", "PROC", "PID", "TYPE", "FILE/DISK", "BYTES", "LAT", "RES"]).style(app.theme.dim());
    f.render_widget(Table::new(rows, widths).header(header).column_spacing(1), inner);
}

/// The list's cells for one event.
fn columns(app: &App, e: &Event) -> [String; 8] {
    let (meta, tables) = (app.cap.reader.meta(), app.cap.reader.tables());
    let get = |name: &str| fields::lookup(name).map(|fi| fields::value(fi, e, meta, tables).to_string());
    let what = match e.class {
        Class::Syscall => fields::evt_type(&meta.arch, e.class, e.nr).into_owned(),
        Class::Block => format!("blk {}", BlockOp::from_code(e.op).name()),
    };
    let target = match e.class {
        Class::Syscall => get("fd.name").unwrap_or_default(),
        Class::Block => get("blk.dev").unwrap_or_default(),
    };
    [
        units::offset(e.ts.saturating_sub(app.cap.start)),
        get("proc.name").unwrap_or_default(),
        e.pid.to_string(),
        what,
        target,
        if e.bytes > 0 {
            units::bytes(e.bytes)
        } else {
            String::new()
        },
        units::dur(e.latency),
        e.ret.to_string(),
    ]
}

/// The selected event, every field.
pub fn render_detail(app: &App, f: &mut Frame) {
    let Some((_, e)) = app.ev_rows.iter().find(|(i, _)| *i == app.ev_sel) else {
        return;
    };
    let (meta, tables) = (app.cap.reader.meta(), app.cap.reader.tables());
    let mut lines = vec![Line::from(format!(
        "{:>15}  {} UTC ({})",
        "time",
        units::wall(e.ts, meta.boot_to_wall_ns),
        units::offset(e.ts.saturating_sub(app.cap.start))
    ))];
    let mut seen = Vec::new();
    for fi in fields::all() {
        // Aliases share a value with the field before them.
        if seen.contains(&fi.id) {
            continue;
        }
        seen.push(fi.id);
        let v = fields::value(fi, e, meta, tables);
        // Absent fields and false flags say nothing: the popup must fit small terminals.
        if v.is_absent() || v == fields::Value::Bool(false) {
            continue;
        }
        let text = match v {
            fields::Value::Duration(ns) => units::dur(ns),
            other => other.to_string(),
        };
        lines.push(Line::from(format!("{:>15}  {text}", fi.name)));
    }
    let area = ui::popup(app.area, 76, lines.len() as u16 + 2);
    f.render_widget(Clear, area);
    f.render_widget(
        Paragraph::new(lines).block(ui::pane_block(app, " Event (Esc closes) ".into(), true)),
        area,
    );
}
