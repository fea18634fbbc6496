//! How numbers look on screen: latencies, byte counts, times, event counts.
//!
//! Every pane and the status line go through these, so the same quantity reads the same way
//! everywhere (and in the snapshots).

/// A latency or duration in ns, in at most 5 characters plus unit: `850ns`, `12.3µs`, `1.50ms`, `2.0s`.
pub fn dur(ns: u64) -> String {
    const UNITS: [(u64, &str); 4] = [(1_000_000_000, "s"), (1_000_000, "ms"), (1_000, "µs"), (1, "ns")];
    for (scale, unit) in UNITS {
        if ns >= scale {
            if scale == 1 {
                return format!("{ns}ns");
            }
            let v = ns as f64 / scale as f64;
            return if v >= 100.0 {
                format!("{v:.0}{unit}")
            } else if v >= 10.0 {
                format!("{v:.1}{unit}")
            } else {
                format!("{v:.2}{unit}")
            };
        }
    }
    "0ns".to_owned()
}

/// A short label for a latency axis tick: `1ns`, `10µs`, `100ms`, `10s`.
pub fn dur_tick(ns: u64) -> String {
    const UNITS: [(u64, &str); 4] = [(1_000_000_000, "s"), (1_000_000, "ms"), (1_000, "µs"), (1, "ns")];
    for (scale, unit) in UNITS {
        if ns >= scale {
            let v = ns as f64 / scale as f64;
            return if v.fract() == 0.0 {
                format!("{v:.0}{unit}")
            } else {
                format!("{v:.1}{unit}")
            };
        }
    }
    "0".to_owned()
}

/// A time offset from the start of the capture: `+12.345s`, `+1m02.5s`.
pub fn offset(ns: u64) -> String {
    let s = ns as f64 / 1e9;
    if s < 60.0 {
        format!("+{s:.3}s")
    } else {
        let m = (s / 60.0).floor();
        format!("+{m:.0}m{:04.1}s", s - m * 60.0)
    }
}

/// Wall-clock time of day (UTC) for a boot-time `ts`: `22:13:21.000123`.
pub fn wall(ts: u64, boot_to_wall_ns: i64) -> String {
    let ns = i128::from(ts) + i128::from(boot_to_wall_ns);
    let ns = ns.rem_euclid(86_400 * 1_000_000_000) as u64;
    let (h, m, s, us) = (
        ns / 3_600_000_000_000,
        ns / 60_000_000_000 % 60,
        ns / 1_000_000_000 % 60,
        ns / 1_000 % 1_000_000,
    );
    format!("{h:02}:{m:02}:{s:02}.{us:06}")
}

/// A count with thousands separators: `12,345,678`.
pub fn count(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A count in at most 5 characters: `999`, `12.3k`, `4.5M`, `1.2G`.
pub fn short_count(n: u64) -> String {
    match n {
        0..=9_999 => n.to_string(),
        10_000..=999_999 => format!("{:.1}k", n as f64 / 1e3),
        1_000_000..=999_999_999 => format!("{:.1}M", n as f64 / 1e6),
        _ => format!("{:.1}G", n as f64 / 1e9),
    }
}

/// Bytes: `512B`, `4.0K`, `1.5M`, `2.0G` (powers of 1024, as biosnoop).
pub fn bytes(n: u64) -> String {
    const UNITS: [(u64, &str); 3] = [(1 << 30, "G"), (1 << 20, "M"), (1 << 10, "K")];
    for (scale, unit) in UNITS {
        if n >= scale {
            return format!("{:.1}{unit}", n as f64 / scale as f64);
        }
    }
    format!("{n}B")
}

/// A duration as a filter literal that reads back exactly: the largest unit that keeps it
/// short, with as many decimals as needed (`5ms`, `3.981072ms`, `250us`, `7ns`).
pub fn filter_dur(ns: u64) -> String {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_keep_three_significant_digits() {
        assert_eq!(dur(0), "0ns");
        assert_eq!(dur(850), "850ns");
        assert_eq!(dur(12_345), "12.3µs");
        assert_eq!(dur(1_500_000), "1.50ms");
        assert_eq!(dur(250_000_000), "250ms");
        assert_eq!(dur(2_000_000_000), "2.00s");
        assert_eq!(dur_tick(10_000), "10µs");
        assert_eq!(filter_dur(1_500_000), "1.5ms");
        assert_eq!(filter_dur(3_981_072), "3.981072ms");
        assert_eq!(filter_dur(1_000_000_001), "1.000000001s");
        assert_eq!(filter_dur(2_000_000), "2ms");
        assert_eq!(filter_dur(7), "7ns");
    }

    #[test]
    fn counts_and_bytes() {
        assert_eq!(count(0), "0");
        assert_eq!(count(1234567), "1,234,567");
        assert_eq!(count(123), "123");
        assert_eq!(short_count(12_345), "12.3k");
        assert_eq!(bytes(4096), "4.0K");
        assert_eq!(bytes(100), "100B");
    }

    #[test]
    fn times() {
        assert_eq!(offset(12_345_000_000), "+12.345s");
        assert_eq!(offset(62_500_000_000), "+1m02.5s");
        assert_eq!(wall(1_000_000_000, 1_700_000_000_000_000_000), "22:13:21.000000");
    }
}
