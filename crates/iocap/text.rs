//! Text output shared by the commands that print tables: bars and cut cells.

/// A bar of `width` characters for `count` out of `max`, as biolatency's stars.
pub fn bar(count: u64, max: u64, width: usize) -> String {
    let n = if max == 0 {
        0
    } else {
        ((count as u128 * width as u128).div_ceil(max as u128)) as usize
    };
    format!("{:<width$}", "*".repeat(n.min(width)))
}

/// At most `n` characters, the cut marked with `…`.
pub fn truncate(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        return s.to_string();
    }
    let mut t: String = s.chars().take(n.saturating_sub(1)).collect();
    t.push('…');
    t
}
