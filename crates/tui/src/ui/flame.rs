//! The flame pane, in place of the event list while `w` shows it: the latency flame graph of
//! the view's calls (see [`crate::panes::flame`]), an icicle: the zoomed frame across the top,
//! the frames it calls under it, each as wide as its share of the latency. The last line
//! names the selected frame and its latency.

use iocap_analysis::flame::{By, Node};
use iocap_analysis::units;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::Line;
use ratatui::Frame;

use super::block;
use crate::app::App;
use crate::layout::Pane;
use crate::panes::{cut, fit_title};
use crate::theme::Theme;

/// Draw the flame pane in `area`.
pub fn render(app: &App, f: &mut Frame, area: Rect) {
    let Some(pane) = &app.flame else { return };
    let by = match pane.by {
        By::User => "user",
        By::Kernel => "kernel",
        By::Both => "user and kernel",
    };
    let answer = app.answer.as_ref().and_then(|a| a.flame.as_ref());
    let calls = answer.map_or(String::new(), |(_, n)| format!(", {} calls", units::count(*n)));
    let title = fit_title(
        area.width,
        [
            format!(" flame graph by {by} stack, width = latency{calls} (w: next, Enter/Esc: zoom) "),
            format!(" flame graph by {by} stack{calls} (w: next) "),
            format!(" {by} stacks (w) "),
        ],
    );
    let block = block(app, title, app.focus == Pane::Events);
    let inner = block.inner(area);
    f.render_widget(block, area);
    let Some(tree) = app.flame_tree() else {
        f.render_widget(Line::styled("scanning…", app.theme.dim()), inner);
        return;
    };
    if tree.weight == 0 {
        let why = if app.cap.reader.tables().stacks().next().is_none() {
            "this capture has no stacks: record with --stacks"
        } else {
            "no call in view kept such a stack (only calls at least as slow as --stacks's threshold do)"
        };
        f.render_widget(Line::from(why), inner);
        return;
    }
    if inner.height < 2 || inner.width < 4 {
        return;
    }
    let Some(top) = tree.at(&pane.zoom) else { return };
    let graph = Rect {
        height: inner.height - 1,
        ..inner
    };
    let sel_depth = pane.sel.len() - pane.zoom.len().min(pane.sel.len());
    let selected = tree.at(&pane.sel);
    draw(
        f.buffer_mut(),
        &app.theme,
        top,
        graph,
        (graph.x, graph.width),
        0,
        Some((sel_depth, selected)),
    );
    // The selected frame, named in full: its latency and share of the whole graph.
    let (name, weight) = selected.map_or(("all", tree.weight), |n| (n.name.as_str(), n.weight));
    let share = 100.0 * weight as f64 / tree.weight as f64;
    let text = format!(
        "{name}: {} of latency, {share:.1}% of the graph's",
        units::duration(weight, units::Style::Terminal)
    );
    let w = usize::from(inner.width);
    f.buffer_mut().set_stringn(
        inner.x,
        inner.y + inner.height - 1,
        cut(&text, w),
        w,
        Style::default(),
    );
}

/// Draw `node` at `depth` rows into `area`, over the columns `span` (x, width), and the frames
/// it calls under it; the one that is `sel` (its depth and frame) is shown reversed.
fn draw(
    buf: &mut Buffer,
    theme: &Theme,
    node: &Node,
    area: Rect,
    span: (u16, u16),
    depth: u16,
    sel: Option<(usize, Option<&Node>)>,
) {
    let (x, w) = span;
    if w == 0 || depth >= area.height {
        return;
    }
    let y = area.y + depth;
    let is_sel = sel.is_some_and(|(d, n)| d == usize::from(depth) && n.is_some_and(|n| std::ptr::eq(n, node)));
    let mut style = theme.part(usize::from(depth) + usize::from(x));
    if is_sel {
        style = style.add_modifier(Modifier::REVERSED | Modifier::BOLD);
    }
    // The name, cut to the frame's width less a cell between neighbours.
    let label = cut(&node.name, usize::from(w.saturating_sub(1)));
    let cell = format!("{label:<width$}", width = usize::from(w.saturating_sub(1)));
    buf.set_stringn(x, y, &cell, usize::from(w), style);
    if w > 1 {
        buf.set_stringn(x + w - 1, y, " ", 1, Style::default());
    }
    // Children from the left, each as wide as its share; the rounding of the running sum
    // leaves no gap between them and none past the parent.
    let mut done = 0u64;
    for child in &node.children {
        let from = scale(done, node.weight, w);
        done = done.saturating_add(child.weight);
        let to = scale(done, node.weight, w);
        if to > from {
            draw(buf, theme, child, area, (x + from, to - from), depth + 1, sel);
        }
    }
}

/// `part` of `whole` as a share of `w` cells, rounded down.
fn scale(part: u64, whole: u64, w: u16) -> u16 {
    if whole == 0 {
        return 0;
    }
    let cells = u128::from(part) * u128::from(w) / u128::from(whole);
    u16::try_from(cells).unwrap_or(w).min(w)
}
