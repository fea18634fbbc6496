//! The parser: tokens → [`Expr`], by precedence climbing (Pratt).
//!
//! Binding powers, loosest first: `or` < `and` < `not`; `and` and `or` are left-associative.
//! Every error names the token it stopped at (or the end of the input) and, where one is
//! likely, the fix: a misspelled keyword, a unit separated from its number, a missing `)`.

use std::ops::Range;

use crate::ast::{Cmp, Expr, Lit, Op, WORD_OPS};
use crate::error::{did_you_mean, nearest, FilterError};
use crate::lex::{lex, Sym, Tok, Token};

/// Parse a filter; empty or blank text is [`Expr::All`].
pub fn parse(src: &str) -> Result<Expr, FilterError> {
    let tokens = lex(src)?;
    if tokens.is_empty() {
        return Ok(Expr::All);
    }
    let mut p = Parser {
        tokens,
        pos: 0,
        end: src.len(),
        depth: 0,
        connectives: 0,
    };
    let e = p.expr(0)?;
    match p.peek() {
        None => Ok(e),
        Some(t) => Err(FilterError::new("unmatched `)`", t.span.clone()).help("remove it, or add `(` before")),
    }
}

struct Parser {
    tokens: Vec<Token>,
    pos: usize,
    end: usize,
    /// Nesting of parentheses and `not`: bounded so hostile input cannot overflow the stack.
    depth: usize,
    /// `and`/`or` so far: a chain of them is a tree as deep as it is long, which the checker,
    /// the compiler and `Drop` walk recursively.
    connectives: usize,
}

const MAX_DEPTH: usize = 200;
const MAX_CONNECTIVES: usize = 500;

/// (left, right) binding power of an infix keyword.
fn infix(word: &str) -> Option<(u8, u8)> {
    match word {
        "or" => Some((1, 2)),
        "and" => Some((3, 4)),
        _ => None,
    }
}

const NOT_POWER: u8 = 5;

fn describe(t: Option<&Token>) -> String {
    match t.map(|t| &t.tok) {
        None => "the end of the filter".into(),
        Some(Tok::LParen) => "`(`".into(),
        Some(Tok::RParen) => "`)`".into(),
        Some(Tok::Comma) => "`,`".into(),
        Some(Tok::Sym(s)) => format!("`{}`", sym_op(*s).as_str()),
        Some(Tok::Word(w)) => format!("`{w}`"),
        Some(Tok::Quoted(q)) => format!("\"{q}\""),
    }
}

fn sym_op(s: Sym) -> Op {
    match s {
        Sym::Eq => Op::Eq,
        Sym::Ne => Op::Ne,
        Sym::Lt => Op::Lt,
        Sym::Le => Op::Le,
        Sym::Gt => Op::Gt,
        Sym::Ge => Op::Ge,
    }
}

fn is_unit_like(w: &str) -> bool {
    crate::literal::DURATION_UNITS
        .iter()
        .chain(crate::literal::SIZE_UNITS)
        .any(|(u, _)| u == &w)
}

impl Parser {
    fn peek(&self) -> Option<&Token> {
        self.tokens.get(self.pos)
    }

    fn next(&mut self) -> Option<Token> {
        let t = self.tokens.get(self.pos).cloned();
        self.pos += 1;
        t
    }

    /// The span of the next token, or an empty span at the end of the input.
    fn here(&self) -> Range<usize> {
        self.peek().map_or(self.end..self.end, |t| t.span.clone())
    }

    fn peek_word(&self) -> Option<&str> {
        match self.peek().map(|t| &t.tok) {
            Some(Tok::Word(w)) => Some(w),
            _ => None,
        }
    }

    fn expr(&mut self, min_power: u8) -> Result<Expr, FilterError> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(FilterError::new("filter nested too deeply", self.here()));
        }
        let mut lhs = self.prefix()?;
        while let Some(t) = self.peek() {
            let (left, right) = match &t.tok {
                Tok::RParen => break,
                Tok::Word(w) if infix(w).is_some() => infix(w).unwrap_or_default(),
                _ => return Err(self.expected_connective(&lhs)),
            };
            if left < min_power {
                break;
            }
            let kw = self.next().map(|t| t.span).unwrap_or_default();
            self.connectives += 1;
            if self.connectives > MAX_CONNECTIVES {
                return Err(
                    FilterError::new(format!("filter too long: more than {MAX_CONNECTIVES} `and`/`or`"), kw)
                        .help("use `in (a, b, c)` for a list of values"),
                );
            }
            if self.peek().is_none() {
                return Err(FilterError::new(
                    format!(
                        "expected a condition after `{}`, found the end of the filter",
                        self.text(&kw)
                    ),
                    kw,
                )
                .help("remove the trailing operator, or complete the condition"));
            }
            let rhs = self.expr(right)?;
            lhs = if left == 1 {
                Expr::Or(Box::new(lhs), Box::new(rhs))
            } else {
                Expr::And(Box::new(lhs), Box::new(rhs))
            };
        }
        self.depth -= 1;
        Ok(lhs)
    }

    fn text(&self, span: &Range<usize>) -> String {
        self.tokens
            .iter()
            .find(|t| &t.span == span)
            .map_or_else(String::new, |t| match &t.tok {
                Tok::Word(w) => w.clone(),
                _ => String::new(),
            })
    }

    /// What went wrong when a condition is followed by something other than `and`, `or`,
    /// `)` or the end.
    fn expected_connective(&self, lhs: &Expr) -> FilterError {
        let here = self.here();
        let msg = format!(
            "expected `and`, `or` or the end of the filter, found {}",
            describe(self.peek())
        );
        let e = FilterError::new(msg, here);
        let last_value = match lhs {
            Expr::Cmp(c) => c.values.last(),
            _ => None,
        };
        match self.peek_word() {
            Some(w) if is_unit_like(w) && last_value.is_some_and(|v| v.text.parse::<f64>().is_ok()) => {
                let v = last_value.map(|v| v.text.as_str()).unwrap_or_default();
                e.help(format!("write the unit right after the number: `{v}{w}`"))
            }
            Some(w) => {
                let near = nearest(w, ["and", "or"], 1);
                e.help_opt(
                    did_you_mean(&near)
                        .or_else(|| Some("join conditions with `and` or `or`; quote values with spaces".into())),
                )
            }
            None => e.help("join conditions with `and` or `or`"),
        }
    }

    fn prefix(&mut self) -> Result<Expr, FilterError> {
        let here = self.here();
        match self.next() {
            None => Err(FilterError::new(
                "expected a condition, found the end of the filter",
                here,
            )),
            Some(Token { tok: Tok::LParen, span }) => {
                if matches!(self.peek().map(|t| &t.tok), Some(Tok::RParen)) {
                    return Err(FilterError::new("empty parentheses", span.start..self.here().end)
                        .help("put a condition inside, or remove them"));
                }
                let e = self.expr(0)?;
                match self.next() {
                    Some(Token { tok: Tok::RParen, .. }) => Ok(e),
                    _ => Err(FilterError::new("unclosed parenthesis", span).help("add `)` to close it")),
                }
            }
            Some(Token {
                tok: Tok::Word(w),
                span,
            }) if w == "not" => {
                if self.peek().is_none() {
                    return Err(FilterError::new(
                        "expected a condition after `not`, found the end of the filter",
                        span,
                    ));
                }
                self.depth += 1;
                if self.depth > MAX_DEPTH {
                    return Err(FilterError::new("filter nested too deeply", span));
                }
                let e = self.expr(NOT_POWER)?;
                self.depth -= 1;
                Ok(Expr::Not(Box::new(e), span))
            }
            Some(Token {
                tok: Tok::Word(w),
                span,
            }) => self.comparison(w, span),
            Some(t) => {
                let help = match t.tok {
                    Tok::Sym(_) => Some("a condition starts with a field: `latency>1ms`".to_string()),
                    Tok::Quoted(_) => Some("field names are not quoted".to_string()),
                    _ => None,
                };
                Err(
                    FilterError::new(format!("expected a field name, found {}", describe(Some(&t))), t.span)
                        .help_opt(help),
                )
            }
        }
    }

    fn value(&mut self, op: Op, op_span: &Range<usize>) -> Result<Lit, FilterError> {
        match self.peek() {
            // A keyword followed by more of the filter means the value is missing
            // (`latency> and x`); a keyword at the end is a value (`fd.filename=and`).
            Some(Token {
                tok: Tok::Word(w),
                span,
            }) if matches!(w.as_str(), "and" | "or" | "not") && self.tokens.len() > self.pos + 1 => {
                Err(FilterError::new(
                    format!("expected a value after `{}`, found `{w}`", op.as_str()),
                    span.clone(),
                )
                .help(format!("quote it if you mean the word: \"{w}\"")))
            }
            Some(Token {
                tok: Tok::Word(w) | Tok::Quoted(w),
                span,
            }) => {
                let lit = Lit {
                    text: w.clone(),
                    quoted: matches!(self.peek().map(|t| &t.tok), Some(Tok::Quoted(_))),
                    span: span.clone(),
                };
                self.pos += 1;
                Ok(lit)
            }
            other => {
                let span = if other.is_none() { op_span.clone() } else { self.here() };
                Err(FilterError::new(
                    format!("expected a value after `{}`, found {}", op.as_str(), describe(other)),
                    span,
                ))
            }
        }
    }

    fn comparison(&mut self, field: String, field_span: Range<usize>) -> Result<Expr, FilterError> {
        let cmp = |op, op_span, values| {
            Ok(Expr::Cmp(Cmp {
                field: field.clone(),
                field_span: field_span.clone(),
                op,
                op_span,
                values,
            }))
        };
        let Some(t) = self.peek().cloned() else {
            return cmp(Op::Bare, field_span.end..field_span.end, vec![]);
        };
        match t.tok {
            Tok::Sym(s) => {
                self.pos += 1;
                let op = sym_op(s);
                let v = self.value(op, &t.span)?;
                cmp(op, t.span, vec![v])
            }
            Tok::Word(w) if infix(&w).is_some() => cmp(Op::Bare, t.span.start..t.span.start, vec![]),
            Tok::Word(w) => match WORD_OPS.iter().find(|(name, _)| *name == w) {
                Some(&(_, Op::Exists)) => {
                    self.pos += 1;
                    cmp(Op::Exists, t.span, vec![])
                }
                Some(&(_, Op::In)) => {
                    self.pos += 1;
                    let values = self.list(&t.span)?;
                    cmp(Op::In, t.span, values)
                }
                Some(&(_, op)) => {
                    self.pos += 1;
                    let v = self.value(op, &t.span)?;
                    cmp(op, t.span, vec![v])
                }
                None => {
                    let words: Vec<&str> = WORD_OPS.iter().map(|(n, _)| *n).chain(["and", "or"]).collect();
                    let near = nearest(&w, words, 2);
                    Err(
                        FilterError::new(format!("expected an operator after `{field}`, found `{w}`"), t.span)
                            .help_opt(did_you_mean(&near).or_else(|| {
                                Some(
                                    "operators: = != < <= > >= contains icontains startswith endswith glob in exists"
                                        .into(),
                                )
                            })),
                    )
                }
            },
            Tok::RParen => cmp(Op::Bare, t.span.start..t.span.start, vec![]),
            _ => Err(FilterError::new(
                format!("expected an operator after `{field}`, found {}", describe(Some(&t))),
                t.span,
            )),
        }
    }

    /// `( value, value, ... )` after `in`.
    fn list(&mut self, in_span: &Range<usize>) -> Result<Vec<Lit>, FilterError> {
        let open = match self.next() {
            Some(Token { tok: Tok::LParen, span }) => span,
            other => {
                let span = other.map_or(in_span.clone(), |t| t.span);
                return Err(FilterError::new("expected `(` after `in`", span).help("write a list: `in (a, b, c)`"));
            }
        };
        let mut values = Vec::new();
        loop {
            values.push(self.value(Op::In, in_span)?);
            match self.next() {
                Some(Token { tok: Tok::Comma, .. }) => continue,
                Some(Token { tok: Tok::RParen, .. }) => return Ok(values),
                None => {
                    return Err(FilterError::new("unclosed list", open).help("add `)` after the last value"));
                }
                Some(t) => {
                    return Err(FilterError::new(
                        format!("expected `,` or `)` in the list, found {}", describe(Some(&t))),
                        t.span,
                    )
                    .help("separate values with commas; quote values with spaces"));
                }
            }
        }
    }
}
