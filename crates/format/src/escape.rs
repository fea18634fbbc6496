//! Escaping of strings that came from a traced host.
//!
//! Process names, paths and socket names are bytes that anyone on the traced machine chose.
//! The reader turns every one of them, once, as it decodes the string table, into text that is
//! safe to put on a terminal: printable characters stay as they are; control characters,
//! escape sequences, bidi overrides, zero-width characters and invalid UTF-8 become visible
//! escapes (`\n`, `\x1b`, `\u{202e}`, `\xff`), and a backslash becomes `\\` so that an escape
//! always means the same thing.

use std::fmt::Write;

/// The terminal-safe, visible form of `bytes`.
pub fn escape(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len());
    for chunk in bytes.utf8_chunks() {
        for c in chunk.valid().chars() {
            push_char(&mut out, c);
        }
        for b in chunk.invalid() {
            let _ = write!(out, "\\x{b:02x}");
        }
    }
    out
}

/// `s` with what a terminal would act on made visible (control characters, escape sequences,
/// bidi overrides), as [`escape`] does, but backslashes, line breaks and tabs left alone: for a message that may
/// hold a path the user typed or a name escaped already (`\x1b` stays as it reads). Every line
/// iocap writes to standard error goes through this.
pub fn controls(s: &str) -> std::borrow::Cow<'_, str> {
    // Line breaks and tabs are the message's own (a filter's error draws a caret under the
    // line above): only what acts on the terminal otherwise is escaped.
    let kept = |c: char| matches!(c, '\\' | '\n' | '\t');
    if !s.chars().any(|c| !kept(c) && needs_escape(c)) {
        return std::borrow::Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if kept(c) {
            out.push(c);
        } else {
            push_char(&mut out, c);
        }
    }
    std::borrow::Cow::Owned(out)
}

/// Whether `escape` would change nothing.
pub fn is_safe(s: &str) -> bool {
    s.chars().all(|c| c != '\\' && !needs_escape(c))
}

fn push_char(out: &mut String, c: char) {
    match c {
        '\\' => out.push_str("\\\\"),
        '\n' => out.push_str("\\n"),
        '\t' => out.push_str("\\t"),
        '\r' => out.push_str("\\r"),
        c if (c as u32) < 0x80 && needs_escape(c) => {
            let _ = write!(out, "\\x{:02x}", c as u32);
        }
        c if needs_escape(c) => {
            let _ = write!(out, "\\u{{{:x}}}", c as u32);
        }
        c => out.push(c),
    }
}

fn needs_escape(c: char) -> bool {
    c.is_control()
        || matches!(c,
            // Bidi embeddings, overrides and isolates; marks that reorder text.
            '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{200e}' | '\u{200f}' | '\u{061c}'
            // Zero-width and invisible characters that make two names look the same.
            | '\u{200b}'..='\u{200d}' | '\u{2060}'..='\u{2064}' | '\u{feff}' | '\u{00ad}'
            // Line and paragraph separators, and the private-use / unassigned surrogate-adjacent specials.
            | '\u{2028}' | '\u{2029}' | '\u{fff9}'..='\u{fffb}')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hostile_bytes_become_visible() {
        assert_eq!(escape(b"plain/path.db"), "plain/path.db");
        assert_eq!(escape(b"a\x1b[31mred"), "a\\x1b[31mred");
        assert_eq!(escape(b"new\nline\ttab"), "new\\nline\\ttab");
        assert_eq!(escape("evil\u{202e}gpj.exe".as_bytes()), "evil\\u{202e}gpj.exe");
        assert_eq!(escape(b"bad\xff\xfeutf8"), "bad\\xff\\xfeutf8");
        assert_eq!(escape(b"back\\slash"), "back\\\\slash");
        assert_eq!(escape("café".as_bytes()), "café");
        assert_eq!(escape("\u{9b}31m".as_bytes()), "\\u{9b}31m", "C1 CSI");
        assert_eq!(escape(b"\x7f"), "\\x7f");
    }

    #[test]
    fn a_message_keeps_its_backslashes_and_loses_its_controls() {
        assert_eq!(controls("iocap: /tmp/a\\x1b.cap: gone"), "iocap: /tmp/a\\x1b.cap: gone");
        assert_eq!(
            controls("iocap: /tmp/\x1b]0;pwned\x07.cap"),
            "iocap: /tmp/\\x1b]0;pwned\\x07.cap"
        );
        assert_eq!(controls("bidi \u{202e}cod.exe"), "bidi \\u{202e}cod.exe");
        assert_eq!(
            controls("bad filter\n  proc.nme=x\n  ^"),
            "bad filter\n  proc.nme=x\n  ^"
        );
        assert_eq!(controls("a\rb\x07"), "a\\rb\\x07");
    }

    #[test]
    fn escaped_output_has_no_control_characters() {
        let all: Vec<u8> = (0..=255u8).collect();
        let e = escape(&all);
        assert!(e.chars().all(|c| !c.is_control()));
        assert!(is_safe(&e.replace('\\', "")));
    }
}
