//! The filter bar's text as a line editor sees it: where the caret steps (a character with the
//! marks that combine with it, a word, back to a space), how wide text is on screen, and which
//! part of a line wider than the bar shows ([`window`]) or how one is shortened ([`shorten`]).
//!
//! Offsets are bytes of the text, always on a character boundary.

use ratatui::text::Span;

/// Cells `c` takes on screen: 2 for wide (CJK) characters, 0 for combining marks.
pub fn width(c: char) -> usize {
    Span::raw(c.encode_utf8(&mut [0; 4]) as &str).width()
}

/// Cells `s` takes on screen.
pub fn str_width(s: &str) -> usize {
    s.chars().map(width).sum()
}

/// Where the character before `i` starts, with the marks that combine with it: one caret step
/// left, so the caret never sits inside what shows as one character.
pub fn prev(s: &str, i: usize) -> usize {
    let mut at = i;
    for c in s[..i].chars().rev() {
        at -= c.len_utf8();
        if width(c) > 0 {
            break;
        }
    }
    at
}

/// Where the character at `i` ends, with the marks that combine with it: one caret step right.
pub fn next(s: &str, i: usize) -> usize {
    let mut chars = s[i..].chars();
    let Some(first) = chars.next() else { return i };
    i + first.len_utf8()
        + chars
            .take_while(|&c| width(c) == 0)
            .map(char::len_utf8)
            .sum::<usize>()
}

/// A word's character, as readline's: letters, digits and `_` (`proc`, `name`, `1ms`).
fn in_word(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// Back from `i` over characters that `skip`, then over those that `take`.
fn back(s: &str, i: usize, skip: impl Fn(char) -> bool, take: impl Fn(char) -> bool) -> usize {
    let mut chars = s[..i].char_indices().rev().peekable();
    let mut at = i;
    while let Some(&(j, _)) = chars.peek().filter(|&&(_, c)| skip(c)) {
        at = j;
        chars.next();
    }
    for (j, c) in chars {
        if !take(c) {
            break;
        }
        at = j;
    }
    at
}

/// The start of the word the caret is in or after (Alt-B).
pub fn word_left(s: &str, i: usize) -> usize {
    back(s, i, |c| !in_word(c), in_word)
}

/// The end of the word the caret is in or before (Alt-F).
pub fn word_right(s: &str, i: usize) -> usize {
    let mut chars = s[i..].char_indices().map(|(j, c)| (i + j, c)).peekable();
    while chars.next_if(|&(_, c)| !in_word(c)).is_some() {}
    while chars.next_if(|&(_, c)| in_word(c)).is_some() {}
    chars.peek().map_or(s.len(), |&(j, _)| j)
}

/// Back over spaces, then back to the previous space (Ctrl-W: a whole `field=value`).
pub fn space_left(s: &str, i: usize) -> usize {
    back(s, i, char::is_whitespace, |c| !c.is_whitespace())
}

/// The part of a line that shows in a bar `cells` wide: the text from byte `from` to byte `to`,
/// with `…` before it when `from > 0` and after it when `cut_right`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Window {
    /// Where the shown text starts.
    pub from: usize,
    /// Where it ends.
    pub to: usize,
    /// More text follows what is shown.
    pub cut_right: bool,
}

impl Window {
    /// Whether the caret at `caret` shows (at the end of the text it takes a cell of its own).
    fn shows(&self, s: &str, caret: usize) -> bool {
        self.from <= caret && (caret < self.to || (caret == s.len() && !self.cut_right))
    }
}

/// Where each caret step of a text starts (a character with its combining marks), and how
/// many cells the text before it takes: what [`window`] searches, so that a line of thousands
/// of characters (a pasted filter) costs a few binary searches per keystroke.
struct Steps {
    /// Byte offsets of the steps, then the text's length.
    at: Vec<usize>,
    /// `cells[i]`: cells of the text before `at[i]`.
    cells: Vec<usize>,
}

impl Steps {
    fn new(s: &str) -> Steps {
        let (mut at, mut cells) = (vec![0], vec![0]);
        let mut i = 0;
        while i < s.len() {
            let n = next(s, i);
            cells.push(cells[cells.len() - 1] + str_width(&s[i..n]));
            at.push(n);
            i = n;
        }
        Steps { at, cells }
    }

    /// The step at or before byte `i`.
    fn index(&self, i: usize) -> usize {
        self.at.partition_point(|&a| a <= i).saturating_sub(1)
    }

    /// The part shown in `cells` when it starts at step `k`: as much as fits, leaving a cell
    /// for the caret at the end of the text and for each `…`.
    fn fill(&self, k: usize, cells: usize) -> Window {
        let (last, from) = (self.at.len() - 1, self.at[k]);
        let room = cells.saturating_sub(usize::from(k > 0));
        // The whole rest, and the caret's cell after it.
        if self.cells[last] - self.cells[k] < room {
            return Window {
                from,
                to: self.at[last],
                cut_right: false,
            };
        }
        let fits = self.cells[k] + room.saturating_sub(1);
        let j = self.cells.partition_point(|&c| c <= fits).saturating_sub(1).max(k);
        Window {
            from,
            to: self.at[j],
            cut_right: true,
        }
    }
}

/// What of `s` shows in a bar `cells` wide with the caret at `caret`, the window having
/// started at `from` before: the same start while the caret shows from there (so the text
/// holds still while the caret moves inside it), else moved just enough to show it; and never
/// empty room on the right while text is hidden on the left (after a deletion).
pub fn window(s: &str, caret: usize, from: usize, cells: usize) -> Window {
    let steps = Steps::new(s);
    let kc = steps.index(caret.min(s.len()));
    let k0 = steps.index(from).min(kc);
    let shows = |k: usize| steps.fill(k, cells).shows(s, steps.at[kc]);
    // The caret beyond the right edge: the first start from which it shows (the later the
    // start, the further right the window reaches).
    let k = if shows(k0) { k0 } else { first(k0 + 1, kc, shows).min(kc) };
    // Room on the right with text hidden on the left: the first start that shows the rest.
    let whole = |k: usize| !steps.fill(k, cells).cut_right;
    let k = if k > 0 && whole(k) { first(0, k, whole) } else { k };
    steps.fill(k, cells)
}

/// The first of `lo..=hi` where `holds`, which is false and then true along it (`hi + 1` if it
/// never holds): a binary search.
fn first(mut lo: usize, hi: usize, holds: impl Fn(usize) -> bool) -> usize {
    let mut hi = hi + 1;
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if holds(mid) {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    lo
}

/// `s` in at most `cells` cells: whole if it fits, else its start and its end with `…` between
/// them, cut between words where it can be, never splitting a character.
pub fn shorten(s: &str, cells: usize) -> String {
    if str_width(s) <= cells {
        return s.to_owned();
    }
    let Some(room) = cells.checked_sub(1) else {
        return String::new();
    };
    let (head, tail) = (room / 2, room - room / 2);
    let mut used = 0;
    let end_of_head = s
        .char_indices()
        .find(|&(_, c)| {
            used += width(c);
            used > head
        })
        .map_or(s.len(), |(i, _)| i);
    used = 0;
    let start_of_tail = s
        .char_indices()
        .rev()
        .find(|&(_, c)| {
            used += width(c);
            used > tail
        })
        .map_or(0, |(i, c)| i + c.len_utf8());
    // Cut between words where that keeps at least half of each end: `… and` reads better than
    // `lat…ms`.
    let (head, tail) = (&s[..end_of_head], &s[start_of_tail.max(end_of_head)..]);
    let head = match head.rfind(' ') {
        Some(i) if str_width(&head[..i]) * 2 >= str_width(head) => &head[..=i],
        _ => head,
    };
    let tail = match tail.find(' ') {
        Some(i) if str_width(&tail[i..]) * 2 >= str_width(tail) => &tail[i..],
        _ => tail,
    };
    format!("{head}…{tail}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_keep_characters_whole() {
        // `e` with a combining acute, then a wide character.
        let s = "ae\u{301}日b";
        assert_eq!(next(s, 0), 1);
        assert_eq!(next(s, 1), 4, "the mark goes with its letter");
        assert_eq!(next(s, 4), 7);
        assert_eq!(prev(s, 7), 4);
        assert_eq!(prev(s, 4), 1);
        assert_eq!(next(s, s.len()), s.len());
        assert_eq!(prev(s, 0), 0);
        assert_eq!(str_width(s), 5);
    }

    #[test]
    fn words_and_spaces() {
        let s = "proc.name=fio and latency>1ms";
        let end = s.len();
        assert_eq!(&s[word_left(s, end)..], "1ms");
        assert_eq!(&s[space_left(s, end)..], "latency>1ms");
        assert_eq!(&s[space_left(s, space_left(s, end))..], "and latency>1ms");
        assert_eq!(&s[..word_right(s, 0)], "proc");
        assert_eq!(&s[..word_right(s, 4)], "proc.name");
        assert_eq!(word_right(s, end), end);
        assert_eq!(word_left(s, 0), 0);
        // Trailing spaces go with the word before, as in a shell.
        assert_eq!(&"a bc  "[space_left("a bc  ", 6)..], "bc  ");
    }

    /// The shown text, `…` where cut, as the bar draws it.
    fn shown(s: &str, w: Window) -> String {
        let left = if w.from > 0 { "…" } else { "" };
        let right = if w.cut_right { "…" } else { "" };
        format!("{left}{}{right}", &s[w.from..w.to])
    }

    #[test]
    fn window_follows_the_caret() {
        let s = "0123456789abcdefghij";
        // Fits (with the caret's cell at the end): all of it.
        assert_eq!(shown(s, window(s, 20, 0, 21)), s);
        // At the end of a longer line: its end, cut on the left.
        let w = window(s, s.len(), 0, 10);
        assert_eq!(shown(s, w), "…cdefghij", "and the caret's cell");
        // Moving left inside the window keeps it still.
        assert_eq!(window(s, 15, w.from, 10), w);
        // Past its left edge: it follows, cut on both sides.
        let w = window(s, 5, w.from, 10);
        assert_eq!((w.from, shown(s, w).as_str()), (5, "…56789abc…"));
        // Home.
        assert_eq!(shown(s, window(s, 0, w.from, 10)), "012345678…");
        // Deleting the tail pulls hidden text back in.
        assert_eq!(shown("0123456789", window("0123456789", 10, 15, 10)), "…23456789");
        // Wide characters are never split: one cell stays blank instead.
        let wide = "日本語の文字列です";
        let w = window(wide, 0, 0, 8);
        assert_eq!(shown(wide, w), "日本語…");
        let w = window(wide, wide.len(), 0, 8);
        assert_eq!(shown(wide, w), "…列です");
        // Too narrow for the marks: at least it starts at the caret.
        assert_eq!(window(s, 3, 0, 1).from, 3);
        assert_eq!(window(s, 3, 0, 0).from, 3);
    }

    /// Every caret and earlier start of a line of narrow, wide and combining characters, in
    /// bars 4 (a wide character between two `…`) to 12 cells wide: the caret shows, the window fits, it stays where it was while
    /// it can, and leaves no room on the right while text is hidden on the left.
    #[test]
    fn window_holds_for_every_caret() {
        let s = "ab日e\u{301}c本語 x\u{301}yz漢字de";
        let carets: Vec<usize> = std::iter::successors(Some(0), |&i| (i < s.len()).then(|| next(s, i))).collect();
        for cells in 4..=12 {
            for &caret in &carets {
                for &from in &carets {
                    let w = window(s, caret, from, cells);
                    assert!(w.shows(s, caret), "{cells} {caret} {from}: {w:?}");
                    // The `…` on the right, or the caret's cell after the text.
                    let used = usize::from(w.from > 0) + str_width(&s[w.from..w.to]) + 1;
                    assert!(used <= cells, "{cells} {caret} {from}: {w:?}");
                    if from <= caret && fill(s, from, cells).shows(s, caret) && fill(s, from, cells).cut_right {
                        assert_eq!(w.from, from, "{cells} {caret}: moved without need");
                    }
                    if w.from > 0 && !w.cut_right {
                        assert!(fill(s, prev(s, w.from), cells).cut_right, "{cells} {caret} {from}: room left");
                    }
                }
            }
        }
    }

    /// [`Steps::fill`] from byte `from`.
    fn fill(s: &str, from: usize, cells: usize) -> Window {
        let steps = Steps::new(s);
        steps.fill(steps.index(from), cells)
    }

    #[test]
    fn shorten_keeps_both_ends() {
        assert_eq!(shorten("short", 10), "short");
        assert_eq!(shorten("0123456789abcdef", 9), "0123…cdef");
        assert_eq!(str_width(&shorten("日本語の文字列です", 9)), 9);
        assert_eq!(shorten("日本語の文字列です", 9), "日本…です");
        assert_eq!(shorten("abc", 0), "");
        // Between words when that keeps most of each end.
        assert_eq!(
            shorten("proc.name=fio and latency>1ms and evt.type=read", 30),
            "proc.name=fio … evt.type=read"
        );
    }
}
