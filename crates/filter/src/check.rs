//! The checker: [`Expr`] → [`Node`], a tree of typed predicates, or an error.
//!
//! Here field names are resolved against [`crate::fields`], operators against field types,
//! and literals are read as the field's type wants: `1.5ms` → 1 500 000 ns, `4KiB` → 4096,
//! `true`, `ENOENT`. Numeric comparisons become inclusive ranges (`latency>1ms` is
//! `[1ms+1, max]`), so the compiler has one numeric form to turn into column scans.

use crate::ast::{Cmp, Expr, Lit, Op};
use crate::error::{did_you_mean, nearest, FilterError};
use crate::fields::{self, FieldId, FieldInfo, FieldType};
use crate::literal::{self, LiteralError};

/// A checked filter.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Node {
    All,
    And(Box<Node>, Box<Node>),
    Or(Box<Node>, Box<Node>),
    Not(Box<Node>),
    Pred(Pred),
}

impl Node {
    /// Call `f` with every predicate of the tree, by a loop over a stack (a chain of 500
    /// `and`s is no recursion 500 deep).
    pub(crate) fn visit_preds(&self, f: &mut impl FnMut(&Pred)) {
        let mut stack = vec![self];
        while let Some(n) = stack.pop() {
            match n {
                Node::All => {}
                Node::And(a, b) | Node::Or(a, b) => {
                    stack.push(b);
                    stack.push(a);
                }
                Node::Not(a) => stack.push(a),
                Node::Pred(p) => f(p),
            }
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Pred {
    pub field: FieldId,
    pub test: Test,
}

/// What a predicate asks of a field's value. Every test but `Exists` is false when the field
/// is absent.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Test {
    Exists,
    /// The value (booleans as 0/1) lies in one of the inclusive ranges; with `negate`, in none.
    Num {
        ranges: Vec<(i128, i128)>,
        negate: bool,
    },
    /// The string matches; with `negate` (from `!=`), it does not.
    Str {
        m: StrMatch,
        negate: bool,
    },
}

/// A string test.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum StrMatch {
    /// Equal to one of these.
    Eq(Vec<String>),
    Contains(String),
    /// Contains, ignoring case; the needle is stored lower-cased.
    IContains(String),
    StartsWith(String),
    EndsWith(String),
    Glob(String),
}

impl StrMatch {
    pub fn matches(&self, s: &str) -> bool {
        match self {
            StrMatch::Eq(vs) => vs.iter().any(|v| v == s),
            StrMatch::Contains(n) => s.contains(n.as_str()),
            StrMatch::IContains(n) => s.to_lowercase().contains(n.as_str()),
            StrMatch::StartsWith(n) => s.starts_with(n.as_str()),
            StrMatch::EndsWith(n) => s.ends_with(n.as_str()),
            StrMatch::Glob(p) => glob(p.as_bytes(), s.as_bytes()),
        }
    }
}

/// Shell-style glob: `*` any run, `?` one character, `[abc]`/`[a-z]`/`[!a]` a class,
/// `\x` a literal `x`. Iterative, with one backtrack point, so hostile patterns stay linear-ish.
pub(crate) fn glob(pat: &[u8], s: &[u8]) -> bool {
    let (mut p, mut i) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while i < s.len() {
        if p < pat.len() {
            match pat[p] {
                b'*' => {
                    star = Some((p, i));
                    p += 1;
                    continue;
                }
                b'?' => {
                    // One whole UTF-8 character.
                    p += 1;
                    i += utf8_len(s[i]);
                    continue;
                }
                b'[' => {
                    if let Some((matched, next)) = class(pat, p, s, i) {
                        if matched {
                            p = next;
                            i += utf8_len(s[i]);
                            continue;
                        }
                    } else if s[i] == b'[' {
                        p += 1;
                        i += 1;
                        continue;
                    }
                }
                b'\\' if p + 1 < pat.len() => {
                    if pat[p + 1] == s[i] {
                        p += 2;
                        i += 1;
                        continue;
                    }
                }
                c => {
                    if c == s[i] {
                        p += 1;
                        i += 1;
                        continue;
                    }
                }
            }
        }
        match star {
            Some((sp, si)) => {
                p = sp + 1;
                i = si + utf8_len(s[si]);
                star = Some((sp, i));
            }
            None => return false,
        }
    }
    pat[p.min(pat.len())..].iter().all(|&c| c == b'*')
}

fn utf8_len(b: u8) -> usize {
    match b {
        0xf0.. => 4,
        0xe0.. => 3,
        0xc0.. => 2,
        _ => 1,
    }
}

/// Match `s[i]` (one byte: classes are ASCII) against the class at `pat[p] == '['`;
/// `None` when the class is not closed (then `[` is literal).
fn class(pat: &[u8], p: usize, s: &[u8], i: usize) -> Option<(bool, usize)> {
    let mut q = p + 1;
    let negate = matches!(pat.get(q), Some(b'!' | b'^'));
    if negate {
        q += 1;
    }
    let mut matched = false;
    let mut first = true;
    loop {
        let c = *pat.get(q)?;
        if c == b']' && !first {
            return Some((matched != negate, q + 1));
        }
        first = false;
        if pat.get(q + 1) == Some(&b'-') && pat.get(q + 2).is_some_and(|&e| e != b']') {
            let hi = pat[q + 2];
            matched |= (c..=hi).contains(&s[i]);
            q += 3;
        } else {
            matched |= c == s[i];
            q += 1;
        }
    }
}

pub(crate) fn check(e: &Expr) -> Result<Node, FilterError> {
    Ok(match e {
        Expr::All => Node::All,
        Expr::And(..) | Expr::Or(..) => {
            let and = matches!(e, Expr::And(..));
            let ops = e.chain();
            let mut node = check(ops[0])?;
            for o in &ops[1..] {
                let rhs = Box::new(check(o)?);
                node = if and {
                    Node::And(Box::new(node), rhs)
                } else {
                    Node::Or(Box::new(node), rhs)
                };
            }
            node
        }
        Expr::Not(a, _) => Node::Not(Box::new(check(a)?)),
        Expr::Cmp(c) => Node::Pred(check_cmp(c)?),
    })
}

fn field_of(c: &Cmp) -> Result<&'static FieldInfo, FilterError> {
    if let Some(f) = fields::lookup(&c.field) {
        return Ok(f);
    }
    // A value no number reads as (`disk=vda`) rules out the numeric fields: naming them
    // would send the user to a field that then refuses the value.
    let wordy = c.values.iter().any(|v| {
        v.quoted
            || !v
                .text
                .starts_with(|ch: char| ch.is_ascii_digit() || ch == '-' || ch == '.')
    });
    let candidates = fields::all()
        .iter()
        .filter(|f| !wordy || !f.ty.is_numeric() || f.ty == fields::FieldType::Bool)
        .map(|f| f.name);
    let near = nearest(&c.field, candidates, 3);
    let help = did_you_mean(&near).unwrap_or_else(|| "`iocap fields` lists every field".into());
    Err(FilterError::new(format!("unknown field `{}`", c.field), c.field_span.clone()).help(help))
}

fn check_cmp(c: &Cmp) -> Result<Pred, FilterError> {
    let f = field_of(c)?;
    let pred = |test| Ok(Pred { field: f.id, test });
    let op_err = |what: &str| {
        let span = if c.op_span.is_empty() {
            c.field_span.clone()
        } else {
            c.op_span.clone()
        };
        FilterError::new(format!("`{}` is {}: {what}", f.name, a_type(f.ty)), span)
    };
    match c.op {
        Op::Exists => return pred(Test::Exists),
        Op::Bare if f.ty == FieldType::Bool => {
            return pred(Test::Num {
                ranges: vec![(1, 1)],
                negate: false,
            })
        }
        Op::Bare => {
            return Err(
                FilterError::new(format!("`{}` alone is not a condition", f.name), c.field_span.clone()).help(format!(
                    "compare it (`{0}=VALUE`) or test its presence (`{0} exists`)",
                    f.name
                )),
            )
        }
        _ => {}
    }
    if f.ty.is_numeric() {
        let negate = c.op == Op::Ne;
        let mut ranges = Vec::new();
        for v in &c.values {
            let x = number(f, v)?;
            let r = match c.op {
                Op::Eq | Op::Ne | Op::In => (x, x),
                Op::Lt => (i128::MIN, x - 1),
                Op::Le => (i128::MIN, x),
                Op::Gt => (x + 1, i128::MAX),
                Op::Ge => (x, i128::MAX),
                op => {
                    return Err(op_err(&format!("`{}` needs a string field", op.as_str()))
                        .help(format!("compare numbers with = != < <= > >= or in: `{}>=...`", f.name)))
                }
            };
            if f.ty == FieldType::Bool && !matches!(c.op, Op::Eq | Op::Ne | Op::In) {
                return Err(op_err("compare it with = or != true/false"));
            }
            ranges.push(r);
        }
        return pred(Test::Num { ranges, negate });
    }
    let values: Vec<String> = c
        .values
        .iter()
        .map(|v| check_vocabulary(f, c.op, v))
        .collect::<Result<_, _>>()?;
    let first = values.first().cloned().unwrap_or_default();
    let m = match c.op {
        Op::Eq | Op::Ne | Op::In => StrMatch::Eq(values),
        Op::Contains => StrMatch::Contains(first),
        Op::IContains => StrMatch::IContains(first.to_lowercase()),
        Op::StartsWith => StrMatch::StartsWith(first),
        Op::EndsWith => StrMatch::EndsWith(first),
        Op::Glob => StrMatch::Glob(first),
        op => {
            return Err(op_err(&format!("`{}` needs a number, duration or size", op.as_str()))
                .help("compare strings with = != contains icontains startswith endswith glob in"))
        }
    };
    pred(Test::Str {
        m,
        negate: c.op == Op::Ne,
    })
}

/// For an `=`/`!=`/`in` on a field with a closed set of values, reject a value outside it:
/// `fd.type=fiel` would otherwise silently match nothing.
fn check_vocabulary(f: &FieldInfo, op: Op, v: &Lit) -> Result<String, FilterError> {
    if !matches!(op, Op::Eq | Op::Ne | Op::In) {
        return Ok(v.text.clone());
    }
    let Some(vocab) = fields::vocabulary(f.id) else {
        return Ok(v.text.clone());
    };
    if vocab.contains(&v.text.as_str()) || fields::is_numbered_name(f.id, &v.text) {
        return Ok(v.text.clone());
    }
    let near = nearest(&v.text, vocab.iter().copied(), 3);
    let help = did_you_mean(&near).unwrap_or_else(|| {
        if vocab.len() <= 25 {
            format!("one of: {}", vocab.join(", "))
        } else {
            format!("`{}` values are names like {}", f.name, vocab[..3].join(", "))
        }
    });
    Err(FilterError::new(format!("unknown {} `{}`", f.name, v.text), v.span.clone()).help(help))
}

/// A type's name with its article: `an int`, `a uint`, `a duration`.
fn a_type(ty: FieldType) -> String {
    let article = if ty == FieldType::Int { "an" } else { "a" };
    format!("{article} {ty}")
}

/// Read a literal as `f`'s numeric type.
fn number(f: &FieldInfo, v: &Lit) -> Result<i128, FilterError> {
    let t = v.text.as_str();
    let mismatch = |example: &str| {
        FilterError::new(
            format!("expected {} for `{}`, found `{}`", a_type(f.ty), f.name, t),
            v.span.clone(),
        )
        .help(example.to_string())
    };
    match f.ty {
        FieldType::Bool => match t {
            "true" | "1" => Ok(1),
            "false" | "0" => Ok(0),
            _ => Err(mismatch("use true or false")),
        },
        FieldType::Int | FieldType::UInt => {
            let example = if f.ty == FieldType::Int {
                "write a whole number, like 42 or -2"
            } else {
                "write a whole number, like 42"
            };
            let x: i128 = t.parse().map_err(|_| mismatch(example))?;
            let (lo, hi) = if f.ty == FieldType::Int {
                (i128::from(i64::MIN), i128::from(i64::MAX))
            } else {
                (0, i128::from(u64::MAX))
            };
            if x < lo || x > hi {
                return Err(FilterError::new(
                    format!("`{t}` is out of range for `{}`", f.name),
                    v.span.clone(),
                ));
            }
            Ok(x)
        }
        FieldType::Duration => with_unit(
            f,
            v,
            literal::DURATION_UNITS,
            false,
            "durations look like 500us, 1.5ms, 2s (units: ns us µs ms s m h)",
        ),
        FieldType::Bytes => with_unit(
            f,
            v,
            literal::SIZE_UNITS,
            true,
            "sizes look like 4096, 4KiB, 1.5MB (units: B KB KiB MB MiB GB GiB)",
        ),
        FieldType::Str => Err(mismatch("")),
    }
}

/// `1.5ms` → 1 500 000 with `units` ([`literal::parse_number`]); a bare number is allowed when
/// `bare_ok` (sizes: bytes), and for durations only `0`, since `latency>100` is ambiguous.
fn with_unit(
    f: &FieldInfo,
    v: &Lit,
    units: &[(&str, u128)],
    bare_ok: bool,
    example: &str,
) -> Result<i128, FilterError> {
    let t = v.text.as_str();
    match literal::parse_number(t, units, bare_ok.then_some(1)) {
        Ok(n) => Ok(i128::from(n)),
        Err(LiteralError::NotANumber) => Err(FilterError::new(
            format!("expected {} for `{}`, found `{}`", a_type(f.ty), f.name, t),
            v.span.clone(),
        )
        .help(example.to_string())),
        Err(LiteralError::NeedsUnit) => Err(FilterError::new(format!("`{t}` needs a unit"), v.span.clone())
            .help(format!("durations take a unit: `{t}s`, `{t}ms`, `{t}us` or `{t}ns`"))),
        Err(LiteralError::UnknownUnit { at }) => {
            let unit = &t[at..];
            let span = if v.quoted {
                v.span.clone()
            } else {
                v.span.start + at.min(v.span.len())..v.span.end
            };
            let near = nearest(unit, units.iter().map(|(u, _)| *u), 2);
            let help = did_you_mean(&near).unwrap_or_else(|| example.to_string());
            Err(FilterError::new(format!("unknown unit `{unit}` for `{}`", f.name), span).help(help))
        }
        Err(LiteralError::TooLarge) => Err(FilterError::new(format!("`{t}` is too large"), v.span.clone())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ranges(src: &str) -> Vec<(i128, i128)> {
        match check(&crate::parse::parse(src).unwrap()).unwrap() {
            Node::Pred(Pred {
                test: Test::Num { ranges, .. },
                ..
            }) => ranges,
            other => panic!("{src}: {other:?}"),
        }
    }

    #[test]
    fn literals_with_units() {
        let max = i128::MAX;
        assert_eq!(ranges("latency>1.5ms"), [(1_500_001, max)]);
        assert_eq!(ranges("latency<=1µs"), [(i128::MIN, 1_000)]);
        assert_eq!(ranges("latency=2m"), [(120_000_000_000, 120_000_000_000)]);
        assert_eq!(ranges("latency>=0"), [(0, max)]);
        assert_eq!(ranges("io.bytes>=4KiB"), [(4096, max)]);
        assert_eq!(ranges("io.bytes<1.5MB"), [(i128::MIN, 1_499_999)]);
        assert_eq!(ranges("io.bytes in (512, 1KB)"), [(512, 512), (1000, 1000)]);
        assert_eq!(ranges("evt.res!=-11"), [(-11, -11)]);
        assert_eq!(ranges("evt.failed=false"), [(0, 0)]);
        assert_eq!(ranges("latency<0.000000001s"), [(i128::MIN, 0)]);
    }

    #[test]
    fn globs() {
        assert!(glob(b"*.db", b"/var/lib/x.db"));
        assert!(glob(b"/var/*/x.??", b"/var/lib/x.db"));
        assert!(!glob(b"*.db", b"/var/lib/x.dbx"));
        assert!(glob(b"fio-[rw].dat", b"fio-r.dat"));
        assert!(!glob(b"fio-[!rw].dat", b"fio-r.dat"));
        assert!(glob(b"a\\*", b"a*") && !glob(b"a\\*", b"ab"));
        assert!(glob(b"[", b"[") && glob(b"*", b""));
        assert!(glob("é?".as_bytes(), "éµ".as_bytes()));
        assert!(!glob(b"a*a*a*a*a*a*b", &[b'a'; 200]));
    }
}
