//! Human units shared by every front end: durations and sizes printed the same way on screen
//! and in reports, and interval arguments parsed the same way.

/// A duration in ns with three significant digits and a unit: `0ns`, `850ns`, `1.02us`,
/// `16.4us`, `3.00ms`, `1.50s`; `1234s` past 1000 s.
pub fn fmt_ns(ns: u64) -> String {
    let v = ns as f64;
    let (x, unit) = if ns < 1_000 {
        return format!("{ns}ns");
    } else if ns < 1_000_000 {
        (v / 1e3, "us")
    } else if ns < 1_000_000_000 {
        (v / 1e6, "ms")
    } else {
        (v / 1e9, "s")
    };
    sig3(x, unit)
}

/// Three significant digits; rounding up to 1000 moves to the next unit where there is one.
fn sig3(x: f64, unit: &str) -> String {
    let s = if x < 9.995 {
        format!("{x:.2}")
    } else if x < 99.95 {
        format!("{x:.1}")
    } else {
        format!("{x:.0}")
    };
    match (s.as_str(), unit) {
        ("1000", "us") => "1.00ms".into(),
        ("1000", "ms") => "1.00s".into(),
        _ => format!("{s}{unit}"),
    }
}

/// A byte count in binary units: `512B`, `4.00KiB`, `1.50MiB`, `2.00GiB`.
pub fn fmt_bytes(b: u64) -> String {
    const UNITS: [&str; 6] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    if b < 1024 {
        return format!("{b}B");
    }
    let mut x = b as f64;
    let mut u = 0;
    while x >= 1024.0 && u < UNITS.len() - 1 {
        x /= 1024.0;
        u += 1;
    }
    format!("{x:.2}{}", UNITS[u])
}

/// Parse an interval such as `500ms`, `1s`, `2.5s`, `100us`, `250000ns`, `1m`. A bare number
/// is seconds. The result is at least 1 ns.
pub fn parse_duration(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let split = t.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let scale = match unit.trim() {
        "ns" => 1.0,
        "us" | "µs" => 1e3,
        "ms" => 1e6,
        "" | "s" => 1e9,
        "m" | "min" => 60e9,
        "h" => 3600e9,
        other => return Err(format!("unknown unit `{other}` in `{s}` (use ns, us, ms, s, m or h)")),
    };
    let x: f64 = num
        .parse()
        .map_err(|_| format!("`{s}` is not a duration (try 500ms or 1s)"))?;
    let ns = x * scale;
    if !ns.is_finite() || ns < 1.0 || ns > u64::MAX as f64 / 2.0 {
        return Err(format!("`{s}` is out of range (from 1ns to centuries)"));
    }
    Ok(ns.round() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_the_same_everywhere() {
        assert_eq!(fmt_ns(0), "0ns");
        assert_eq!(fmt_ns(999), "999ns");
        assert_eq!(fmt_ns(1_024), "1.02us");
        assert_eq!(fmt_ns(16_384), "16.4us");
        assert_eq!(fmt_ns(999_999), "1.00ms");
        assert_eq!(fmt_ns(3_000_000), "3.00ms");
        assert_eq!(fmt_ns(1_500_000_000), "1.50s");
        assert_eq!(fmt_bytes(512), "512B");
        assert_eq!(fmt_bytes(4096), "4.00KiB");
        assert_eq!(fmt_bytes(3 << 29), "1.50GiB");
    }

    #[test]
    fn intervals_parse_with_units() {
        assert_eq!(parse_duration("500ms"), Ok(500_000_000));
        assert_eq!(parse_duration("1s"), Ok(1_000_000_000));
        assert_eq!(parse_duration("2.5"), Ok(2_500_000_000));
        assert_eq!(parse_duration("100us"), Ok(100_000));
        assert_eq!(parse_duration("1m"), Ok(60_000_000_000));
        assert!(parse_duration("0s").is_err());
        assert!(parse_duration("fast").is_err());
        assert!(parse_duration("1 fortnight").is_err());
        assert!(parse_duration("1e400s").is_err());
    }
}
