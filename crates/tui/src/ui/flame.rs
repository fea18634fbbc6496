//! The flame pane, in place of the event list while `w` shows it: the latency flame graph of
//! the view's calls (see [`crate::panes::flame`]), an icicle: the zoomed frame across the top,
//! the frames it calls under it, each as wide as its share of the latency. The last line
//! names the selected frame and its latency. Comparing (`p`), it is B's graph, each frame red
//! where its share of B's latency is larger than its share of A's, blue where smaller
//! (flamegraph.pl's differential), and the last line gives both.

use iocap_analysis::flame::{By, Node};
use iocap_analysis::units;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::Line;
use ratatui::Frame;

use super::block;
use crate::app::App;
use crate::layout::Pane;
use crate::panes::{cut, fit_title};
use crate::theme::{Palette, Theme};

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
    // Comparing: A's graph, which B's is coloured against.
    let a_tree = (app.compare.as_ref())
        .and_then(|c| c.answer.as_ref())
        .and_then(|a| a.flame.as_ref())
        .map(|(lines, _)| Node::tree("all", lines));
    let title = match &a_tree {
        Some(_) => fit_title(
            area.width,
            [
                format!(" flame graph of B by {by} stack{calls}: red more than in A, blue less (w: next) "),
                format!(" B − A by {by} stack: red more, blue less (w) "),
                format!(" B − A {by} stacks (w) "),
            ],
        ),
        None => fit_title(
            area.width,
            [
                format!(" flame graph by {by} stack, width = latency{calls} (w: next, Enter/Esc: zoom) "),
                format!(" flame graph by {by} stack{calls} (w: next) "),
                format!(" {by} stacks (w) "),
            ],
        ),
    };
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
    let a = a_tree.as_ref().map(|a| Against {
        total: a.weight,
        b_total: tree.weight,
        node: a.at(&pane.zoom),
    });
    let ctx = Draw {
        theme: &app.theme,
        area: graph,
        sel: (sel_depth, selected),
    };
    draw(f.buffer_mut(), &ctx, top, a, (graph.x, graph.width), 0);
    // The selected frame, named in full: its latency and share of the whole graph (and of A's).
    let (name, weight) = selected.map_or(("all", tree.weight), |n| (n.name.as_str(), n.weight));
    let share = 100.0 * weight as f64 / tree.weight as f64;
    let dur = |ns| units::duration(ns, units::Style::Terminal);
    let text = match &a_tree {
        Some(a) => {
            let aw = a.at(&pane.sel).map_or(0, |n| n.weight);
            let a_share = if a.weight == 0 { 0.0 } else { 100.0 * aw as f64 / a.weight as f64 };
            format!(
                "{name}: B {} ({share:.1}%), A {} ({a_share:.1}%)",
                dur(weight),
                dur(aw)
            )
        }
        None => format!("{name}: {} of latency, {share:.1}% of the graph's", dur(weight)),
    };
    let w = usize::from(inner.width);
    f.buffer_mut().set_stringn(
        inner.x,
        inner.y + inner.height - 1,
        cut(&text, w),
        w,
        Style::default(),
    );
}

/// What every frame is drawn with: the styles, the graph's area and the selected frame (its
/// depth below the zoomed one, and the frame).
struct Draw<'a> {
    theme: &'a Theme,
    area: Rect,
    sel: (usize, Option<&'a Node>),
}

/// Comparing: A's frame at the same path as the one drawn (`None`: A has none there), and both
/// graphs' totals, which each frame's share is of.
#[derive(Clone, Copy)]
struct Against<'a> {
    total: u64,
    b_total: u64,
    node: Option<&'a Node>,
}

impl Against<'_> {
    /// How much larger a share of B's latency `b` (ns) is than A's frame's of A's: -1 to 1.
    fn delta(&self, b: u64) -> f64 {
        let share = |w: u64, total: u64| if total == 0 { 0.0 } else { w as f64 / total as f64 };
        share(b, self.b_total) - share(self.node.map_or(0, |n| n.weight), self.total)
    }

    /// A's frame called `name` under this one.
    fn child(&self, name: &str) -> Against<'_> {
        Against {
            node: self.node.and_then(|n| n.children.iter().find(|c| c.name == name)),
            ..*self
        }
    }
}

/// A frame's colour by how much more (red) or less (blue) of B's latency it holds than of A's:
/// five steps each way, white within half a percent.
fn diff_style(theme: &Theme, delta: f64) -> Style {
    const RED: [u8; 5] = [224, 217, 210, 203, 196];
    const BLUE: [u8; 5] = [189, 153, 117, 75, 33];
    if theme.palette == Palette::Mono {
        return Style::default().add_modifier(if delta > 0.005 { Modifier::BOLD } else { Modifier::DIM });
    }
    let step = ((delta.abs() * 100.0).sqrt() as usize).min(4);
    let bg = match delta {
        d if d > 0.005 => Color::Indexed(RED[step]),
        d if d < -0.005 => Color::Indexed(BLUE[step]),
        _ => Color::Indexed(255),
    };
    Style::default().bg(bg).fg(Color::Black)
}

/// Draw `node` at `depth` rows into the area, over the columns `span` (x, width), and the frames
/// it calls under it; the selected one is shown reversed. Comparing, `a` is A's frame there.
fn draw(buf: &mut Buffer, ctx: &Draw, node: &Node, a: Option<Against>, span: (u16, u16), depth: u16) {
    let (x, w) = span;
    let area = ctx.area;
    if w == 0 || depth >= area.height {
        return;
    }
    let y = area.y + depth;
    let (sel_depth, sel) = ctx.sel;
    let is_sel = sel_depth == usize::from(depth) && sel.is_some_and(|n| std::ptr::eq(n, node));
    let mut style = match &a {
        Some(a) => diff_style(ctx.theme, a.delta(node.weight)),
        None => ctx.theme.part(usize::from(depth) + usize::from(x)),
    };
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
            let a = a.as_ref().map(|a| a.child(&child.name));
            draw(buf, ctx, child, a, (x + from, to - from), depth + 1);
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
