//! How numbers read, in every front end: durations, sizes, counts and times printed, and
//! durations parsed; and names too long for their column cut in the middle ([`cut_middle`]).
//!
//! The viewer draws on a terminal and the commands print for pipes, logs and scripts, so two
//! quantities are written two ways on purpose, chosen by [`Style`]: `µs` on screen and ASCII
//! `us` in reports; sizes in a narrow `4.0K` on screen (the event list's column, as biosnoop)
//! and `4.00KiB` in reports. Each is still one computation, with the same rounding and the
//! same unit steps. Durations typed by the user are read by the filter language's reader
//! ([`iocap_filter::literal`]), so `--interval 1.5ms` and `latency>1.5ms` mean the same.

use iocap_filter::literal::{self, LiteralError};

/// Who the text is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Style {
    /// The viewer: `µs`, sizes as `4.0K`.
    Terminal,
    /// The commands' output, plain ASCII: `us`, sizes as `4.00KiB`.
    Ascii,
}

impl Style {
    fn micro(self) -> &'static str {
        match self {
            Style::Terminal => "µs",
            Style::Ascii => "us",
        }
    }

    /// Duration units, largest first.
    fn duration_units(self) -> [(u64, &'static str); 4] {
        [
            (1_000_000_000, "s"),
            (1_000_000, "ms"),
            (1_000, self.micro()),
            (1, "ns"),
        ]
    }
}

/// A duration in ns with three significant digits and a unit: `0ns`, `850ns`, `1.02us`,
/// `16.4us`, `3.00ms`, `1.50s`; `1234s` past 1000 s. Rounding up to 1000 moves to the next
/// unit (`999_999` ns is `1.00ms`, not `1000us`).
pub fn duration(ns: u64, style: Style) -> String {
    let units = style.duration_units();
    let Some(i) = units.iter().position(|&(scale, _)| ns >= scale).filter(|&i| i < 3) else {
        return format!("{ns}ns");
    };
    let (scale, unit) = units[i];
    let x = ns as f64 / scale as f64;
    let s = if x < 9.995 {
        format!("{x:.2}")
    } else if x < 99.95 {
        format!("{x:.1}")
    } else {
        format!("{x:.0}")
    };
    match i.checked_sub(1) {
        Some(up) if s == "1000" => format!("1.00{}", units[up].1),
        _ => format!("{s}{unit}"),
    }
}

/// [`duration`] for the commands' output.
pub fn fmt_ns(ns: u64) -> String {
    duration(ns, Style::Ascii)
}

/// A short label for a latency axis tick: `1ns`, `10µs`, `2.5ms`, `10s`; `0` for zero.
pub fn tick(ns: u64, style: Style) -> String {
    for (scale, unit) in style.duration_units() {
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

/// A byte count in powers of 1024: `512B`, then `4.00KiB`, `1.50MiB` (ASCII) or `4.0K`,
/// `1.5M`, `1016K` (terminal: five cells at most, so a column of five never cuts the unit).
pub fn bytes(b: u64, style: Style) -> String {
    let units: [&str; 7] = match style {
        Style::Ascii => ["B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"],
        Style::Terminal => ["B", "K", "M", "G", "T", "P", "E"],
    };
    if b < 1024 {
        return format!("{b}B");
    }
    let mut x = b as f64;
    let mut u = 0;
    while x >= 1024.0 && u < units.len() - 1 {
        x /= 1024.0;
        u += 1;
    }
    match style {
        Style::Ascii => format!("{x:.2}{}", units[u]),
        // `999.9K` would take six cells: from 100 on, whole units.
        Style::Terminal if x >= 99.95 => format!("{x:.0}{}", units[u]),
        Style::Terminal => format!("{x:.1}{}", units[u]),
    }
}

/// [`bytes`] for the commands' output.
pub fn fmt_bytes(b: u64) -> String {
    bytes(b, Style::Ascii)
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
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A count in at most 5 characters: `999`, `12.3k`, `450k`, `4.5M`, `1.2G` (a column of five
/// never cuts the unit).
pub fn short_count(n: u64) -> String {
    if n < 10_000 {
        return n.to_string();
    }
    for (scale, unit) in [(1e3, 'k'), (1e6, 'M'), (1e9, 'G'), (1e12, 'T'), (1e15, 'P')] {
        let v = n as f64 / scale;
        if v < 99.95 {
            return format!("{v:.1}{unit}");
        }
        if v < 999.5 {
            return format!("{v:.0}{unit}");
        }
    }
    format!("{:.1}E", n as f64 / 1e18)
}

/// `s` in at most `w` columns, each character as wide as `width` says: whole when it fits,
/// else a third of the room from its start and the rest from its end around `…`
/// (`/var/…base/16384`). Paths and names differ at their end more than anywhere (the files
/// of one directory, `kworker/u8:2`), which a cut end would make look alike. The commands count
/// a character as one column (`|_| 1`); the viewer measures each as the terminal draws it.
pub fn cut_middle(s: &str, w: usize, width: impl Fn(char) -> usize) -> String {
    if s.chars().map(&width).sum::<usize>() <= w {
        return s.to_owned();
    }
    let Some(room) = w.checked_sub(1) else {
        return String::new();
    };
    // The start: what fits in a third of the room.
    let (mut head_end, mut used) = (0, 0);
    for (i, c) in s.char_indices() {
        let cw = width(c);
        if used + cw > room / 3 {
            break;
        }
        used += cw;
        head_end = i + c.len_utf8();
    }
    // The end: the rest of the room. The two cannot meet: `s` is wider than `w`.
    let (mut tail_start, mut left) = (s.len(), room - used);
    for (i, c) in s.char_indices().rev() {
        let cw = width(c);
        if cw > left || i < head_end {
            break;
        }
        left -= cw;
        tail_start = i;
    }
    format!("{}…{}", &s[..head_end], &s[tail_start..])
}

/// Parse an interval such as `500ms`, `1s`, `2.5s`, `100us`, `250000ns`, `1m`, `1min`. A bare
/// number is seconds; a space may stand between the number and the unit. The result is at
/// least 1 ns.
pub fn parse_duration(s: &str) -> Result<u64, String> {
    // The filter language's units, and `min`, which a command line reads without ambiguity.
    let units: Vec<(&str, u128)> = literal::DURATION_UNITS
        .iter()
        .copied()
        .chain([("min", 60_000_000_000)])
        .collect();
    let t = s.trim();
    let split = t.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(t.len());
    let (num, unit) = (&t[..split], t[split..].trim());
    let range = || format!("`{s}` is out of range (from 1ns to centuries)");
    match literal::parse_number(&format!("{num}{unit}"), &units, Some(1_000_000_000)) {
        Ok(ns) if (1..=u64::MAX / 2).contains(&ns) => Ok(ns),
        Ok(_) | Err(LiteralError::TooLarge) => Err(range()),
        Err(LiteralError::UnknownUnit { .. }) => {
            Err(format!("unknown unit `{unit}` in `{s}` (use ns, us, ms, s, m or h)"))
        }
        Err(LiteralError::NotANumber | LiteralError::NeedsUnit) => {
            Err(format!("`{s}` is not a duration (try 500ms or 1s)"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_names_are_cut_in_the_middle() {
        let one = |_: char| 1;
        assert_eq!(cut_middle("/data", 12, one), "/data");
        assert_eq!(cut_middle("/var/lib/pg/base/16384", 16, one), "/var/…base/16384");
        // The files of one directory stay apart.
        let cut = |i: u32| cut_middle(&format!("/srv/data/run/dir/file-{i}"), 12, one);
        assert_ne!(cut(17), cut(18));
        assert_eq!(cut(17), "/sr…/file-17");
        assert_eq!(cut_middle("abcdef", 1, one), "…");
        assert_eq!(cut_middle("abcdef", 0, one), "");
        assert_eq!(cut_middle("abcdef", 2, one), "…f");
        // Wide characters count as what they take.
        let wide = |c: char| if c.is_ascii() || c == '…' { 1 } else { 2 };
        let s = cut_middle("日本語のファイル名.txt", 10, wide);
        assert_eq!(s, "日…名.txt");
        assert!(s.chars().map(wide).sum::<usize>() <= 10);
        for w in 0..30 {
            let s = cut_middle("ab日本cd語のeファfイル名.txt", w, wide);
            assert!(s.chars().map(wide).sum::<usize>() <= w, "{w}: {s}");
        }
    }

    #[test]
    fn durations_read_the_same_everywhere() {
        assert_eq!(fmt_ns(0), "0ns");
        assert_eq!(fmt_ns(999), "999ns");
        assert_eq!(fmt_ns(1_024), "1.02us");
        assert_eq!(fmt_ns(16_384), "16.4us");
        assert_eq!(fmt_ns(999_999), "1.00ms");
        assert_eq!(fmt_ns(3_000_000), "3.00ms");
        assert_eq!(fmt_ns(1_500_000_000), "1.50s");
        assert_eq!(fmt_ns(2_000_000_000_000), "2000s");
        assert_eq!(fmt_bytes(512), "512B");
        assert_eq!(fmt_bytes(4096), "4.00KiB");
        assert_eq!(fmt_bytes(3 << 29), "1.50GiB");
    }

    #[test]
    fn the_terminal_style_differs_only_in_spelling() {
        let t = |ns| duration(ns, Style::Terminal);
        assert_eq!(t(0), "0ns");
        assert_eq!(t(850), "850ns");
        assert_eq!(t(12_345), "12.3µs");
        assert_eq!(t(9_999), "10.0µs");
        assert_eq!(t(999_999), "1.00ms");
        assert_eq!(t(1_500_000), "1.50ms");
        assert_eq!(t(250_000_000), "250ms");
        assert_eq!(t(2_000_000_000), "2.00s");
        for ns in [0, 7, 999, 1_000, 12_345, 999_499, 999_999, 5_000_000, u64::MAX] {
            assert_eq!(t(ns).replace('µ', "u"), fmt_ns(ns), "{ns}");
        }
        assert_eq!(tick(10_000, Style::Terminal), "10µs");
        assert_eq!(tick(10_000, Style::Ascii), "10us");
        assert_eq!(tick(2_500_000, Style::Ascii), "2.5ms");
        assert_eq!(tick(0, Style::Ascii), "0");
        assert_eq!(bytes(4096, Style::Terminal), "4.0K");
        assert_eq!(bytes(100, Style::Terminal), "100B");
        assert_eq!(bytes(3 << 29, Style::Terminal), "1.5G");
        // Five cells at most, whatever the count: a column of five never cuts the unit.
        assert_eq!(bytes(1016 << 10, Style::Terminal), "1016K");
        assert_eq!(bytes((999 << 10) + 1000, Style::Terminal), "1000K");
        assert_eq!(bytes(99 << 20, Style::Terminal), "99.0M");
        assert_eq!(bytes(u64::MAX, Style::Terminal), "16.0E");
        for b in (0..64)
            .map(|s| 1u64 << s)
            .chain((0..64).map(|s| u64::MAX >> s))
            .chain([1023, 102_348, 1_048_063])
        {
            assert!(
                bytes(b, Style::Terminal).len() <= 5,
                "{b}: {}",
                bytes(b, Style::Terminal)
            );
        }
    }

    #[test]
    fn counts_and_times() {
        assert_eq!(count(0), "0");
        assert_eq!(count(1234567), "1,234,567");
        assert_eq!(count(123), "123");
        assert_eq!(short_count(12_345), "12.3k");
        assert_eq!(short_count(450_600), "451k");
        assert_eq!(short_count(999_499), "999k");
        assert_eq!(short_count(999_500), "1.0M");
        assert_eq!(short_count(u64::MAX), "18.4E");
        for n in (0..64)
            .map(|s| 1u64 << s)
            .chain((1..20).map(|d| 10u64.pow(d) - 1))
            .chain([
                99_949,
                99_950,
                999_499,
                999_500,
                99_950_000,
                999_500_000,
                999_500_000_000_000_000,
            ])
        {
            assert!(short_count(n).len() <= 5, "{n}: {}", short_count(n));
        }
        assert_eq!(offset(12_345_000_000), "+12.345s");
        assert_eq!(offset(62_500_000_000), "+1m02.5s");
        assert_eq!(wall(1_000_000_000, 1_700_000_000_000_000_000), "22:13:21.000000");
    }

    #[test]
    fn intervals_parse_with_units() {
        assert_eq!(parse_duration("500ms"), Ok(500_000_000));
        assert_eq!(parse_duration("1s"), Ok(1_000_000_000));
        assert_eq!(parse_duration("2.5"), Ok(2_500_000_000));
        assert_eq!(parse_duration("100us"), Ok(100_000));
        assert_eq!(parse_duration("100µs"), Ok(100_000));
        assert_eq!(parse_duration("1m"), Ok(60_000_000_000));
        assert_eq!(parse_duration("1min"), Ok(60_000_000_000));
        assert_eq!(parse_duration(" 10 s "), Ok(10_000_000_000));
        assert!(parse_duration("0s").is_err());
        assert!(parse_duration("").is_err());
        assert!(parse_duration("fast").is_err());
        assert!(parse_duration("1 fortnight")
            .unwrap_err()
            .contains("unknown unit `fortnight`"));
        assert!(parse_duration("1e400s").is_err());
        assert!(parse_duration("99999999999h").unwrap_err().contains("out of range"));
    }
}
