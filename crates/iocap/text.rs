//! Text output shared by the commands that print tables: bars and cut cells, and what a
//! capture lacks.

/// A bar of `width` characters for `count` out of `max`, as biolatency's stars.
pub fn bar(count: u64, max: u64, width: usize) -> String {
    let n = if max == 0 {
        0
    } else {
        ((count as u128 * width as u128).div_ceil(max as u128)) as usize
    };
    format!("{:<width$}", "*".repeat(n.min(width)))
}

/// At most `n` characters, cut in the middle as the viewer cuts (`/var/…base/16384`): names
/// differ at their end, which a cut end would hide.
pub fn truncate(s: &str, n: usize) -> String {
    iocap_analysis::units::cut_middle(s, n, |_| 1)
}

/// What follows a capture's drops when block requests were issued whose completion never
/// reached the recorder (`Reader::unseen`): they are not in the capture either, but
/// the recorder did not fall behind. Nothing when there were none.
pub fn unseen(n: u64) -> String {
    if n == 0 {
        return String::new();
    }
    format!(", {n} block requests issued whose completion never reached the recorder")
}
