//! Literals, read and written: how `1.5ms` and `4KiB` become numbers, and how a duration or a
//! string is written so that the filter language reads it back as the same value.
//!
//! The one reader of numbers with units: the filter's checker uses it for `latency>1.5ms`, and
//! `iocap_analysis::units::parse_duration` for every `--interval` and the recorder's times, so a
//! duration means the same wherever it is typed. The writers are what the viewer uses to turn a
//! selected region or a breakdown row into a filter clause.

/// Duration units and their value in ns.
pub const DURATION_UNITS: &[(&str, u128)] = &[
    ("ns", 1),
    ("us", 1_000),
    ("µs", 1_000),
    ("ms", 1_000_000),
    ("s", 1_000_000_000),
    ("m", 60_000_000_000),
    ("h", 3_600_000_000_000),
];

/// Size units and their value in bytes.
pub const SIZE_UNITS: &[(&str, u128)] = &[
    ("B", 1),
    ("KB", 1_000),
    ("KiB", 1 << 10),
    ("MB", 1_000_000),
    ("MiB", 1 << 20),
    ("GB", 1_000_000_000),
    ("GiB", 1 << 30),
    ("TB", 1_000_000_000_000),
    ("TiB", 1 << 40),
];

/// Why a number with a unit did not read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LiteralError {
    /// Not digits with an optional `.fraction` before the unit: `fast`, `1.2.3s`.
    NotANumber,
    /// A number other than zero without a unit, where one is needed: `latency>100`.
    NeedsUnit,
    /// A unit not in the table: `5parsecs`.
    UnknownUnit {
        /// Where the unit starts in the text, in bytes.
        at: usize,
    },
    /// More than `u64::MAX` in the smallest unit.
    TooLarge,
}

/// Read `text` (`1.5ms`, `4KiB`, `250`) as a whole number of the smallest of `units`.
///
/// The number is decimal digits with an optional fraction and the unit follows it directly.
/// A bare number counts in `bare` units; without `bare` only zero may be bare (`latency>100`
/// is ambiguous: sysdig means ns, users often mean ms). The arithmetic is exact (no floating
/// point), a fraction finer than the smallest unit is cut off.
pub fn parse_number(text: &str, units: &[(&str, u128)], bare: Option<u128>) -> Result<u64, LiteralError> {
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let (num, unit) = text.split_at(split);
    let (int, frac) = num.split_once('.').unwrap_or((num, ""));
    let digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    if int.is_empty() || !digits(int) || !digits(frac) {
        return Err(LiteralError::NotANumber);
    }
    let scale = if unit.is_empty() {
        match bare {
            Some(scale) => scale,
            None if int.bytes().all(|b| b == b'0') => 1,
            None => return Err(LiteralError::NeedsUnit),
        }
    } else {
        match units.iter().find(|(u, _)| *u == unit) {
            Some(&(_, s)) => s,
            None => return Err(LiteralError::UnknownUnit { at: split }),
        }
    };
    if int.len() > 30 {
        return Err(LiteralError::TooLarge);
    }
    let int: u128 = int.parse().map_err(|_| LiteralError::NotANumber)?;
    // 18 digits are finer than any unit's smallest part and keep the product in a u128.
    let frac = &frac[..frac.len().min(18)];
    let frac_val: u128 = if frac.is_empty() {
        0
    } else {
        frac.parse().map_err(|_| LiteralError::NotANumber)?
    };
    int.checked_mul(scale)
        .and_then(|x| x.checked_add(frac_val * scale / 10u128.pow(frac.len() as u32)))
        .and_then(|x| u64::try_from(x).ok())
        .ok_or(LiteralError::TooLarge)
}

/// A duration in ns as a literal that reads back exactly: the largest unit that keeps it
/// short, with as many decimals as needed (`5ms`, `3.981072ms`, `250us`, `7ns`).
pub fn duration(ns: u64) -> String {
    const UNITS: [(u64, &str, usize); 3] = [(1_000_000_000, "s", 9), (1_000_000, "ms", 6), (1_000, "us", 3)];
    for (scale, unit, digits) in UNITS {
        if ns >= scale {
            let (whole, frac) = (ns / scale, ns % scale);
            if frac == 0 {
                return format!("{whole}{unit}");
            }
            let frac = format!("{frac:0digits$}");
            return format!("{whole}.{}{unit}", frac.trim_end_matches('0'));
        }
    }
    format!("{ns}ns")
}

/// `s` as a quoted string literal: `"a \"b\" c\\d"`. Any text reads back as itself, quotes and
/// backslashes included.
pub fn string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        if c == '"' || c == '\\' {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_with_units() {
        let d = |t: &str| parse_number(t, DURATION_UNITS, None);
        assert_eq!(d("1.5ms"), Ok(1_500_000));
        assert_eq!(d("250us"), Ok(250_000));
        assert_eq!(d("1µs"), Ok(1_000));
        assert_eq!(d("0"), Ok(0));
        assert_eq!(d("100"), Err(LiteralError::NeedsUnit));
        assert_eq!(d("5parsecs"), Err(LiteralError::UnknownUnit { at: 1 }));
        assert_eq!(d("1.2.3s"), Err(LiteralError::NotANumber));
        assert_eq!(d(".5s"), Err(LiteralError::NotANumber));
        assert_eq!(d("99999999999999999999s"), Err(LiteralError::TooLarge));
        // A bare number in the unit the caller says (seconds for `--interval`).
        assert_eq!(
            parse_number("2.5", DURATION_UNITS, Some(1_000_000_000)),
            Ok(2_500_000_000)
        );
        assert_eq!(parse_number("4096", SIZE_UNITS, Some(1)), Ok(4096));
        assert_eq!(parse_number("1.5KiB", SIZE_UNITS, Some(1)), Ok(1536));
    }

    #[test]
    fn written_literals_read_back() {
        assert_eq!(duration(1_500_000), "1.5ms");
        assert_eq!(duration(3_981_072), "3.981072ms");
        assert_eq!(duration(1_000_000_001), "1.000000001s");
        assert_eq!(duration(2_000_000), "2ms");
        assert_eq!(duration(7), "7ns");
        for ns in [0, 7, 999, 1_000, 1_001, 3_981_072, 1_000_000_001, u64::MAX] {
            assert_eq!(parse_number(&duration(ns), DURATION_UNITS, None), Ok(ns), "{ns}");
        }
        assert_eq!(string(r#"a "b" c\d"#), r#""a \"b\" c\\d""#);
    }
}
