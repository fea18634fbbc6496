//! `iocap spectrogram`: sysdig's spectrogram chisel, from a capture: one line per interval,
//! one character per latency column (ten per decade, 1 ns to 10 s), coloured by how many
//! events fell in the cell. Plain characters when stdout is not a terminal or `NO_COLOR` is set.

use std::io::{IsTerminal, Write};

use iocap_analysis::scan::{self, ScanStats};
use iocap_analysis::spectro::{shade, COLS, COLS_PER_DECADE};
use iocap_analysis::units::parse_duration;
use iocap_analysis::{Measure, Spectrogram};
use iocap_format::Col;

use crate::input::{self, Input};
use crate::UsageError;

/// The most rows printed: a guard against an interval far too small for the capture.
const MAX_ROWS: u64 = 1_000_000;

/// Density characters, from one event to the most (also the plain rendering).
const RAMP: &[u8] = b" .:-=+*#%@";
/// ANSI 256-colour palette for the same levels: green through yellow to red.
const PALETTE: [u8; 10] = [0, 22, 28, 34, 70, 148, 184, 214, 202, 196];

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Color {
    Auto,
    Always,
    Never,
}

#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    sel: input::Selection,
    /// Length of each row.
    #[arg(long, default_value = "500ms", value_name = "DURATION")]
    interval: String,
    /// What the columns are of: any duration field, for the events that have it
    /// (`blk.queue`, `disk.time`, `wait.time` ...); the default, every event's latency.
    #[arg(long, value_name = "FIELD", default_value = "latency")]
    measure: String,
    /// Colour the cells: auto (a terminal without NO_COLOR), always or never.
    #[arg(long, value_enum, default_value_t = Color::Auto)]
    color: Color,
}

pub fn run(args: Args) -> anyhow::Result<()> {
    let interval = parse_duration(&args.interval).map_err(|e| UsageError(format!("--interval: {e}")))?;
    let measure = input::measure_arg(&args.measure)?;
    let mut fleet = args.sel.open(true)?;
    fleet.measure(measure)?;
    // Several captures: rows of wall-clock time (ns since the epoch) from the earliest start.
    let (start, end) = if fleet.is_several() {
        let wall = |t: i128| u64::try_from(t.max(0)).unwrap_or(u64::MAX);
        (wall(fleet.start()), wall(fleet.end()))
    } else {
        scan::capture_span(&fleet.inputs[0].reader)
    };
    if (end - start) / interval > MAX_ROWS {
        return Err(UsageError(format!(
            "--interval {} would print more than {MAX_ROWS} rows for this capture: use a longer one",
            args.interval
        ))
        .into());
    }
    let sp = if fleet.is_several() {
        let mut sp = Spectrogram::covering(start, end, interval);
        for (i, input) in fleet.inputs.iter().enumerate() {
            sp.merge(&bin_shifted(input, measure, start, end, interval, fleet.wall(i))?.0);
        }
        sp
    } else {
        bin(&fleet.inputs[0], measure, start, end, interval)?.0
    };
    let color = match args.color {
        Color::Always => true,
        Color::Never => false,
        Color::Auto => std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty()),
    };
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    render(&mut out, &sp, measure, ((end - start) / interval).min(MAX_ROWS), color)?;
    out.flush()?;
    Ok(())
}

/// The decade labels over the columns: `1ns` at column 0, `10ns` at 10, ... `1s` at 90.
fn header() -> String {
    let labels = [
        "1ns", "10ns", "100ns", "1us", "10us", "100us", "1ms", "10ms", "100ms", "1s",
    ];
    let mut s = String::new();
    for l in labels {
        s.push_str(&format!("{l:<COLS_PER_DECADE$}"));
    }
    s
}

/// Print the rows `0..=max(last_row, span_rows - 1)`, each `time |cells|`; the columns are
/// of `measure`.
pub fn render(
    out: &mut impl Write,
    sp: &Spectrogram,
    measure: Measure,
    span_rows: u64,
    color: bool,
) -> std::io::Result<()> {
    let max = sp.max_cell();
    let last = sp
        .last_row()
        .unwrap_or(0)
        .min(MAX_ROWS)
        .max(span_rows.saturating_sub(1));
    writeln!(out, "{:>10} |{:<COLS$}|", "", header())?;
    for row in 0..=last {
        let counts = sp.row(row);
        let t = (row * sp.interval()) as f64 / 1e9;
        let mut line = format!("{t:>9.3}s |");
        let mut cur: Option<u8> = None;
        for &c in counts.iter() {
            let level = shade(c, max, RAMP.len());
            if color {
                let want = (level > 0).then_some(PALETTE[level]);
                if want != cur {
                    match want {
                        Some(p) => line.push_str(&format!("\x1b[38;5;{p}m")),
                        None => line.push_str("\x1b[0m"),
                    }
                    cur = want;
                }
                line.push(if level > 0 { '█' } else { ' ' });
            } else {
                line.push(RAMP[level] as char);
            }
        }
        if cur.is_some() {
            line.push_str("\x1b[0m");
        }
        line.push('|');
        writeln!(out, "{line}")?;
    }
    let cells = sp.total();
    // Rows cover the capture from its start: what is outside them began before it.
    let before = match sp.outside() {
        0 => String::new(),
        n => format!(" ({n} more began before the recording started)"),
    };
    writeln!(
        out,
        "{} events{before}; one row per {}; columns: 10 per decade of {}; scale: ' ' none, '{}' 1 event .. '{}' {} events",
        cells,
        iocap_analysis::units::fmt_ns(sp.interval()),
        measure.field(),
        RAMP[1] as char,
        RAMP[RAMP.len() - 1] as char,
        max
    )?;
    Ok(())
}

/// The matching events binned by `measure` into a spectrogram over `[start, end)` with rows of
/// `interval` ns: what `iocap spectrogram` prints and `export --format svg` draws.
pub fn bin(
    input: &Input,
    measure: Measure,
    start: u64,
    end: u64,
    interval: u64,
) -> anyhow::Result<(Spectrogram, ScanStats)> {
    bin_shifted(input, measure, start, end, interval, 0)
}

/// [`bin`] with every event's time moved by `shift` ns (a capture's boot clock to the wall
/// clock, where several captures are binned together), over `[start, end)` of that clock.
fn bin_shifted(
    input: &Input,
    measure: Measure,
    start: u64,
    end: u64,
    interval: u64,
    shift: i64,
) -> anyhow::Result<(Spectrogram, ScanStats)> {
    let r = &input.reader;
    let ((sp, _), stats) = scan::scan(
        r,
        &input.filter,
        measure.columns().with(Col::Ts),
        input::threads(r),
        || (Spectrogram::covering(start, end, interval), Vec::new()),
        |(sp, buf): &mut (Spectrogram, Vec<u64>), c, bits| {
            let vals = measure.values(c, buf);
            bits.iter_ones()
                .for_each(|i| sp.add(c.ts[i].saturating_add_signed(shift), vals[i]))
        },
        |a, b| {
            a.0.merge(&b.0);
        },
    )?;
    Ok((sp, stats))
}
