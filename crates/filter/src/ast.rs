//! The syntax tree, with byte spans, and its two renderings: infix (what `Display` prints,
//! which parses back to the same tree) and S-expressions (what the parser tests assert).

use std::fmt;
use std::ops::Range;

/// A filter expression as written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Expr {
    /// The empty filter: every event.
    All,
    /// `a and b`. Chains are left-deep: `a and b and c` is `And(And(a, b), c)`.
    And(Box<Expr>, Box<Expr>),
    /// `a or b`, left-deep like `And`, and binding less tightly than it.
    Or(Box<Expr>, Box<Expr>),
    /// `not` and the span of the keyword.
    Not(Box<Expr>, Range<usize>),
    /// A test of one field.
    Cmp(Cmp),
}

/// `field op value(s)`, `field exists`, or a bare boolean field.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cmp {
    /// The field name as written; the checker looks it up in [`crate::fields`].
    pub field: String,
    /// Byte range of the field name in the source.
    pub field_span: Range<usize>,
    /// How the field is tested.
    pub op: Op,
    /// Byte range of the operator in the source; empty, at the end of the field, for
    /// [`Op::Bare`].
    pub op_span: Range<usize>,
    /// One value for a comparison, several for `in`, none for `exists` and a bare field.
    pub values: Vec<Lit>,
}

/// A literal as written; its meaning (a duration, a size...) depends on the field.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Lit {
    /// The text, without its quotes and with escapes resolved when it was quoted.
    pub text: String,
    /// Whether it was written in quotes, which `Display` keeps.
    pub quoted: bool,
    /// Byte range in the source, quotes included.
    pub span: Range<usize>,
}

/// How a [`Cmp`] tests its field. Every test of a field that does not apply to the event is
/// false, `!=` too: `fd.name!=x` matches no block request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    /// `=`: equal; a string must match whole.
    Eq,
    /// `!=`: present and not equal.
    Ne,
    /// `<`, on numeric fields.
    Lt,
    /// `<=`, on numeric fields.
    Le,
    /// `>`, on numeric fields.
    Gt,
    /// `>=`, on numeric fields.
    Ge,
    /// `contains`: the string holds the value, case-sensitively.
    Contains,
    /// `icontains`: `contains`, ignoring case.
    IContains,
    /// `startswith`: the string begins with the value.
    StartsWith,
    /// `endswith`: the string ends with the value.
    EndsWith,
    /// `glob`: a shell pattern matching the whole string (`*`, `?`, `[a-z]`, `[!a]`, `\x`).
    Glob,
    /// `in (a, b, ...)`: equal to any of the values.
    In,
    /// `exists`: the field applies to the event (`fd.name exists` is false for a block request).
    Exists,
    /// A boolean field alone: `evt.failed`.
    Bare,
}

/// Operators written as words, for parsing and for suggestions.
pub(crate) const WORD_OPS: &[(&str, Op)] = &[
    ("contains", Op::Contains),
    ("icontains", Op::IContains),
    ("startswith", Op::StartsWith),
    ("endswith", Op::EndsWith),
    ("glob", Op::Glob),
    ("in", Op::In),
    ("exists", Op::Exists),
];

impl Op {
    /// The operator as written: `=`, `contains`, ...; empty for [`Op::Bare`].
    pub fn as_str(self) -> &'static str {
        match self {
            Op::Eq => "=",
            Op::Ne => "!=",
            Op::Lt => "<",
            Op::Le => "<=",
            Op::Gt => ">",
            Op::Ge => ">=",
            Op::Contains => "contains",
            Op::IContains => "icontains",
            Op::StartsWith => "startswith",
            Op::EndsWith => "endswith",
            Op::Glob => "glob",
            Op::In => "in",
            Op::Exists => "exists",
            Op::Bare => "",
        }
    }
}

impl Lit {
    /// Whether the word would lex back as one word that the parser reads as a value.
    fn needs_quotes(&self) -> bool {
        self.text.is_empty()
            || self
                .text
                .chars()
                .any(|c| c.is_whitespace() || matches!(c, '(' | ')' | ',' | '"' | '\'' | '=' | '<' | '>' | '!'))
    }
}

impl fmt::Display for Lit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.quoted || self.needs_quotes() {
            f.write_str(&crate::literal::string(&self.text))
        } else {
            f.write_str(&self.text)
        }
    }
}

impl fmt::Display for Cmp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.op {
            Op::Bare => f.write_str(&self.field),
            Op::Exists => write!(f, "{} exists", self.field),
            Op::In => {
                write!(f, "{} in (", self.field)?;
                for (i, v) in self.values.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{v}")?;
                }
                f.write_str(")")
            }
            op if op.as_str().starts_with(|c: char| c.is_alphabetic()) => {
                write!(f, "{} {} ", self.field, op.as_str())?;
                self.values.iter().try_for_each(|v| write!(f, "{v}"))
            }
            op => {
                write!(f, "{}{}", self.field, op.as_str())?;
                self.values.iter().try_for_each(|v| write!(f, "{v}"))
            }
        }
    }
}

impl Expr {
    /// Binding strength, for deciding where `Display` needs parentheses.
    fn level(&self) -> u8 {
        match self {
            Expr::Or(..) => 1,
            Expr::And(..) => 2,
            _ => 3,
        }
    }

    /// The operands of a left-deep chain of one operator (`a and b and c` → `[a, b, c]`), so
    /// that long chains are walked by a loop rather than by recursion.
    pub(crate) fn chain(&self) -> Vec<&Expr> {
        let mut out = Vec::new();
        let mut e = self;
        loop {
            match (self, e) {
                (Expr::And(..), Expr::And(a, b)) | (Expr::Or(..), Expr::Or(a, b)) => {
                    out.push(&**b);
                    e = a;
                }
                _ => {
                    out.push(e);
                    out.reverse();
                    return out;
                }
            }
        }
    }

    /// The S-expression form: `(and (= proc.name fio) (> latency 1ms))`.
    pub fn sexpr(&self) -> String {
        match self {
            Expr::All => "all".into(),
            Expr::And(..) | Expr::Or(..) => {
                let op = if matches!(self, Expr::And(..)) { "and" } else { "or" };
                let ops = self.chain();
                let mut s = ops[0].sexpr();
                for o in &ops[1..] {
                    s = format!("({op} {s} {})", o.sexpr());
                }
                s
            }
            Expr::Not(a, _) => format!("(not {})", a.sexpr()),
            Expr::Cmp(c) => match c.op {
                Op::Bare => c.field.clone(),
                op => {
                    let mut s = format!("({} {}", op.as_str(), c.field);
                    for v in &c.values {
                        s.push(' ');
                        s.push_str(&v.to_string());
                    }
                    s.push(')');
                    s
                }
            },
        }
    }

    fn fmt_at(&self, f: &mut fmt::Formatter<'_>, min_level: u8) -> fmt::Result {
        let paren = self.level() < min_level;
        if paren {
            f.write_str("(")?;
        }
        match self {
            Expr::All => {}
            // Left-associative: an operand that is itself a chain of the same operator (which
            // the chain did not absorb: it was on the right) needs parentheses.
            Expr::And(..) | Expr::Or(..) => {
                let (word, level) = if matches!(self, Expr::And(..)) {
                    (" and ", 3)
                } else {
                    (" or ", 2)
                };
                for (i, o) in self.chain().into_iter().enumerate() {
                    if i > 0 {
                        f.write_str(word)?;
                    }
                    o.fmt_at(f, level)?;
                }
            }
            Expr::Not(a, _) => {
                f.write_str("not ")?;
                a.fmt_at(f, 3)?;
            }
            Expr::Cmp(c) => write!(f, "{c}")?,
        }
        if paren {
            f.write_str(")")?;
        }
        Ok(())
    }
}

impl fmt::Display for Expr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.fmt_at(f, 0)
    }
}
