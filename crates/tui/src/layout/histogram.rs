//! The histogram pane's geometry, which the layout gives room for: the figures over its bars
//! and how many lines they take at a width, and the bars it always keeps. It is drawn by
//! [`crate::ui::histogram`].

/// The figures over the bars, in order: the percentiles of [`QUANTILES`], then the maximum.
pub const FIGURES: [&str; 5] = ["p50", "p90", "p99", "p99.9", "max"];
/// The percentiles the first figures are.
pub const QUANTILES: [f64; 4] = [50.0, 90.0, 99.0, 99.9];
/// The widest duration [`iocap_analysis::units::duration`] writes (`20.0ms`, `1234s`).
pub const VALUE_W: usize = 6;
/// Bars the pane keeps at any terminal size (the layout gives it the room): five rows of a
/// latency range of up to 2^20 (1 µs to 1 s) put two modes a decade apart in rows with one
/// between them, so a bimodal distribution shows as two bars and a gap at 80×24.
pub const MIN_BARS: u16 = 5;

/// The figures in lines of at most `width` cells, as many to a line as fit whole (whatever
/// their values): the indices in [`FIGURES`] of each line's.
pub fn pack(width: usize) -> Vec<Vec<usize>> {
    let mut lines: Vec<Vec<usize>> = vec![Vec::new()];
    let mut used = 0;
    for (i, f) in FIGURES.iter().enumerate() {
        let w = f.len() + 1 + VALUE_W;
        if used > 0 && used + 1 + w > width {
            lines.push(Vec::new());
            used = 0;
        }
        used += w + usize::from(used > 0);
        if let Some(l) = lines.last_mut() {
            l.push(i);
        }
    }
    lines
}

/// The least height of a pane `width` cells wide: borders, the figures' lines and
/// [`MIN_BARS`].
pub fn min_height(width: u16) -> u16 {
    let figures = pack(usize::from(width.saturating_sub(2))).len() as u16;
    2 + figures + MIN_BARS
}
