//! [`FilterError`]: what is wrong with a filter, where, and the likely fix; and the
//! "did you mean" suggestions that fill its `help`.

use std::fmt;
use std::ops::Range;

/// A filter that does not lex, parse or check.
///
/// `span` is a byte range of the source (possibly empty, at the end, for "expected more"):
/// the CLI puts a caret under it ([`FilterError::render`]), the viewer highlights it in its
/// filter bar.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FilterError {
    /// One line, lower case, no trailing period: ``unknown field `proc.nme` ``.
    pub message: String,
    /// Bytes of the source the message is about.
    pub span: Range<usize>,
    /// The likely fix: ``did you mean `proc.name`?``.
    pub help: Option<String>,
}

impl FilterError {
    pub(crate) fn new(message: impl Into<String>, span: Range<usize>) -> FilterError {
        FilterError {
            message: message.into(),
            span,
            help: None,
        }
    }

    pub(crate) fn help(mut self, help: impl Into<String>) -> FilterError {
        self.help = Some(help.into());
        self
    }

    pub(crate) fn help_opt(mut self, help: Option<String>) -> FilterError {
        self.help = help;
        self
    }

    /// The message, the source line, a caret line under the span and the help, for a terminal:
    ///
    /// ```text
    /// unknown field `proc.nme`
    ///   proc.nme=fio and latency>1ms
    ///   ^^^^^^^^
    ///   help: did you mean `proc.name`?
    /// ```
    ///
    /// Carets are placed by characters, not bytes, so they line up under non-ASCII text.
    pub fn render(&self, src: &str) -> String {
        let start = floor_char_boundary(src, self.span.start.min(src.len()));
        let end = floor_char_boundary(src, self.span.end.clamp(start, src.len()));
        let line_start = src[..start].rfind('\n').map_or(0, |i| i + 1);
        let line_end = src[start..].find('\n').map_or(src.len(), |i| start + i);
        let end = end.min(line_end);
        // A window around the marked place, not the whole line: a filter can be kilobytes
        // (generated, or pasted by mistake), and an error must stay a few lines.
        let before: Vec<char> = src[line_start..start].chars().collect();
        let marked: Vec<char> = src[start..end].chars().collect();
        let after: Vec<char> = src[end..line_end].chars().collect();
        let pre = &before[before.len().saturating_sub(CONTEXT)..];
        let mark = &marked[..marked.len().min(MARK)];
        let post = &after[..after.len().min(CONTEXT)];
        let mut line = String::new();
        let mut pad = pre.len();
        if pre.len() < before.len() {
            line.push('…');
            pad += 1;
        }
        line.extend(pre.iter().chain(mark));
        if mark.len() < marked.len() {
            line.push('…');
        } else {
            line.extend(post);
            if post.len() < after.len() {
                line.push('…');
            }
        }
        let mut out = format!(
            "{}\n  {}\n  {}{}",
            clip(&self.message),
            line,
            " ".repeat(pad),
            "^".repeat(mark.len().max(1))
        );
        if let Some(h) = &self.help {
            out.push_str("\n  help: ");
            out.push_str(&clip(h));
        }
        out
    }
}

/// Characters of the filter shown either side of an error's place.
const CONTEXT: usize = 60;
/// The most characters of a marked place shown (and underlined).
const MARK: usize = 60;
/// The longest message or help shown whole: they can quote a token of the filter.
const MESSAGE: usize = 200;

/// `s`, cut to [`MESSAGE`] characters with a `…` when longer.
fn clip(s: &str) -> std::borrow::Cow<'_, str> {
    match s.char_indices().nth(MESSAGE) {
        Some((i, _)) => format!("{}…", &s[..i]).into(),
        None => s.into(),
    }
}

impl fmt::Display for FilterError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&clip(&self.message))?;
        if let Some(h) = &self.help {
            write!(f, " ({})", clip(h))?;
        }
        Ok(())
    }
}

impl std::error::Error for FilterError {}

fn floor_char_boundary(s: &str, mut i: usize) -> usize {
    while i > 0 && !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// Edit distance counting a swap of two neighbours as one edit (`ro` → `or`, `fiel` → `file`),
/// on chars; inputs are short (field names, keywords, units).
pub(crate) fn distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    // d[i][j]: distance between a[..i] and b[..j].
    let mut d = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in d.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, v) in d[0].iter_mut().enumerate() {
        *v = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut v = (d[i - 1][j] + 1).min(d[i][j - 1] + 1).min(d[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                v = v.min(d[i - 2][j - 2] + 1);
            }
            d[i][j] = v;
        }
    }
    d[a.len()][b.len()]
}

/// The candidates nearest to `word` (case-insensitively), at most `max`: the names `word` begins
/// (`pread` → `pread64`, `preadv`; a digits-only rest first, then the shortest), then those at the
/// smallest edit distance if it is small enough to be a typo (`opnat` → `openat`); when neither
/// finds one, those containing `word` (`name` → `proc.name`).
pub(crate) fn nearest<'a>(word: &str, candidates: impl IntoIterator<Item = &'a str>, max: usize) -> Vec<&'a str> {
    let lower = word.to_lowercase();
    let limit = (word.chars().count() / 3).clamp(1, 3);
    let scored: Vec<(usize, &str, String)> = candidates
        .into_iter()
        .map(|c| {
            let l = c.to_lowercase();
            (distance(&lower, &l), c, l)
        })
        .collect();
    let long_enough = lower.chars().count() >= 3;
    // A name cut short is a likelier intent than a typo of another: `pread` means `pread64`.
    let mut extended: Vec<&(usize, &str, String)> = scored
        .iter()
        .filter(|(_, _, l)| long_enough && l.len() > lower.len() && l.starts_with(&lower))
        .collect();
    extended.sort_by_key(|(_, c, l)| {
        let rest = &l[lower.len()..];
        (!rest.bytes().all(|b| b.is_ascii_digit()), rest.len(), *c)
    });
    let best = scored.iter().map(|&(d, ..)| d).min().unwrap_or(usize::MAX);
    let typos = scored.iter().filter(|&&(d, ..)| best <= limit && d == best);
    let mut picked: Vec<&str> = extended.into_iter().chain(typos).map(|&(_, c, _)| c).collect();
    if picked.is_empty() && long_enough {
        picked = scored
            .iter()
            .filter(|(_, _, l)| l.contains(&lower))
            .map(|&(_, c, _)| c)
            .collect();
    }
    let mut seen = std::collections::HashSet::new();
    picked.retain(|c| seen.insert(*c));
    picked.truncate(max);
    picked
}

/// ``did you mean `a`?`` or ``did you mean `a`, `b` or `c`?``; `None` with no candidate.
pub(crate) fn did_you_mean(names: &[&str]) -> Option<String> {
    let quoted: Vec<String> = names.iter().map(|n| format!("`{n}`")).collect();
    match quoted.as_slice() {
        [] => None,
        [one] => Some(format!("did you mean {one}?")),
        [rest @ .., last] => Some(format!("did you mean {} or {last}?", rest.join(", "))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distances() {
        assert_eq!(distance("an", "and"), 1);
        assert_eq!(distance("proc.nme", "proc.name"), 1);
        assert_eq!(distance("", "abc"), 3);
        assert_eq!(distance("kitten", "sitting"), 3);
        assert_eq!(distance("ro", "or"), 1);
        assert_eq!(distance("fiel", "file"), 1);
    }

    #[test]
    fn nearest_prefers_a_name_cut_short_then_typos() {
        let calls = ["read", "preadv", "pread64", "preadv2", "pwrite64", "openat"];
        assert_eq!(nearest("pread", calls, 3), ["pread64", "preadv", "preadv2"]);
        assert_eq!(nearest("opnat", calls, 3), ["openat"]);
        assert_eq!(nearest("PREAD", calls, 1), ["pread64"], "case does not matter");
        assert!(
            nearest("re", calls, 3).is_empty(),
            "too short to extend, too far for a typo"
        );
        let fields = ["proc.name", "fd.name", "fd.filename", "latency"];
        assert_eq!(nearest("name", fields, 3), ["proc.name", "fd.name", "fd.filename"]);
    }

    #[test]
    fn render_points_at_chars() {
        let e = FilterError::new("bad", 7..9).help("fix it");
        assert_eq!(e.render("µs µs ab c"), "bad\n  µs µs ab c\n       ^^\n  help: fix it");
        let at_end = FilterError::new("more", 3..3);
        assert_eq!(at_end.render("abc"), "more\n  abc\n     ^");
        let hostile = FilterError::new("x", 100..200);
        assert_eq!(
            hostile.render("ab"),
            "x\n  ab\n    ^",
            "a span past the end does not panic"
        );
    }
}
