//! The lexer: filter text → tokens with byte spans.
//!
//! There are few token kinds on purpose. Keywords (`and`, `contains`, `exists`...) are plain
//! [`Tok::Word`]s that the parser recognizes by position, so a file called `and` can still be
//! matched (`fd.filename=and`), and a bare word may hold path characters
//! (`fd.name=/var/lib/x.db`, `fd.name contains fio-r.dat`): a word runs until whitespace, a
//! parenthesis, a comma, a quote or a comparison symbol.

use std::ops::Range;

use crate::error::FilterError;

/// A comparison written with symbols.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sym {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Tok {
    LParen,
    RParen,
    Comma,
    Sym(Sym),
    /// Unquoted text: a field, a keyword, a number with its unit, a path.
    Word(String),
    /// A quoted string, escapes resolved.
    Quoted(String),
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Token {
    pub tok: Tok,
    pub span: Range<usize>,
}

fn ends_word(c: char) -> bool {
    c.is_whitespace() || matches!(c, '(' | ')' | ',' | '"' | '\'' | '=' | '<' | '>')
}

/// Split `src` into tokens.
pub fn lex(src: &str) -> Result<Vec<Token>, FilterError> {
    let mut out = Vec::new();
    let mut it = src.char_indices().peekable();
    while let Some(&(i, c)) = it.peek() {
        let next_is = |want: char| src[i + c.len_utf8()..].starts_with(want);
        let single = |tok: Tok| Token { tok, span: i..i + 1 };
        match c {
            c if c.is_whitespace() => {
                it.next();
            }
            '(' => {
                it.next();
                out.push(single(Tok::LParen));
            }
            ')' => {
                it.next();
                out.push(single(Tok::RParen));
            }
            ',' => {
                it.next();
                out.push(single(Tok::Comma));
            }
            '=' | '<' | '>' | '!' if c != '!' || next_is('=') => {
                it.next();
                let two = next_is('=');
                if two {
                    it.next();
                }
                let sym = match (c, two) {
                    ('=', _) => Sym::Eq,
                    ('!', _) => Sym::Ne,
                    ('<', false) => Sym::Lt,
                    ('<', true) => Sym::Le,
                    ('>', false) => Sym::Gt,
                    _ => Sym::Ge,
                };
                out.push(Token {
                    tok: Tok::Sym(sym),
                    span: i..i + 1 + usize::from(two),
                });
            }
            '"' | '\'' => {
                it.next();
                let mut s = String::new();
                let mut end = None;
                while let Some((j, d)) = it.next() {
                    if d == c {
                        end = Some(j + 1);
                        break;
                    }
                    if d == '\\' {
                        match it.next() {
                            Some((_, e)) if e == c || e == '\\' => s.push(e),
                            // Other backslashes stay: the tables hold escaped strings
                            // (`\n`, `\x1b`), and users paste them as they see them.
                            Some((_, e)) => {
                                s.push('\\');
                                s.push(e);
                            }
                            None => s.push('\\'),
                        }
                    } else {
                        s.push(d);
                    }
                }
                let Some(end) = end else {
                    return Err(FilterError::new("unclosed quote", i..src.len())
                        .help(format!("add a closing {c} at the end of the string")));
                };
                out.push(Token {
                    tok: Tok::Quoted(s),
                    span: i..end,
                });
            }
            _ => {
                let start = i;
                let mut end = src.len();
                while let Some(&(j, d)) = it.peek() {
                    if ends_word(d) || (d == '!' && src[j + 1..].starts_with('=')) {
                        end = j;
                        break;
                    }
                    it.next();
                }
                out.push(Token {
                    tok: Tok::Word(src[start..end].to_string()),
                    span: start..end,
                });
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(src: &str) -> Vec<String> {
        lex(src)
            .unwrap()
            .into_iter()
            .map(|t| match t.tok {
                Tok::Word(w) => format!("w:{w}"),
                Tok::Quoted(q) => format!("q:{q}"),
                other => format!("{other:?}"),
            })
            .collect()
    }

    #[test]
    fn paths_and_symbols() {
        assert_eq!(
            words("fd.name=/var/lib/x.db and latency>=1.5ms"),
            [
                "w:fd.name",
                "Sym(Eq)",
                "w:/var/lib/x.db",
                "w:and",
                "w:latency",
                "Sym(Ge)",
                "w:1.5ms"
            ]
        );
        assert_eq!(words("a!=b!c"), ["w:a", "Sym(Ne)", "w:b!c"]);
        assert_eq!(
            words(r#"x in ("a b",'c\'d')"#),
            ["w:x", "w:in", "LParen", "q:a b", "Comma", "q:c'd", "RParen"]
        );
    }

    #[test]
    fn spans_are_bytes() {
        let t = lex("µs = 'é'").unwrap();
        assert_eq!(t[0].span, 0..3);
        assert_eq!(t[1].span, 4..5);
        assert_eq!(t[2].span, 6..10);
    }

    #[test]
    fn unclosed_quote() {
        let e = lex("proc.name='fio").unwrap_err();
        assert_eq!(e.message, "unclosed quote");
        assert_eq!(e.span, 10..14);
    }
}
