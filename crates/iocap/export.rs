//! `iocap export`: the matching events as CSV or JSON lines with every field ([`text`]), as
//! Parquet, a file or a fleet dataset's partition ([`parquet`]), or as an SVG
//! picture for a ticket: a latency heatmap (time × latency, as Brendan Gregg's), or two sides
//! compared, given as `iocap compare` takes them ([`crate::sides`]): their heatmaps on the same
//! axes and colour scale and their distributions overlaid ([`svg`] draws both).
//!
//! The output is a new file (mode 0600) put in place only when it is whole ([`crate::output`]):
//! a symlink planted at the target is replaced, never followed, and a failed or killed export
//! leaves nothing behind. A character device or FIFO at the target is written to in place;
//! `-o -` writes to stdout.

mod cells;
mod parquet;
mod svg;
mod text;

use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use iocap_analysis::spectro::{column, COLS};
use iocap_analysis::units::{fmt_ns, parse_duration};
use iocap_analysis::{scan, LatencyHist, Measure, Spectrogram};
use iocap_format::Col;

use crate::input::{self, Input};
use crate::output;
use crate::sides::{self, SideFilters, Sides};
use crate::UsageError;

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Csv,
    Jsonl,
    Svg,
    /// Every field a typed column (PARQUET.md); `-o DIR/` writes a Hive partition of a dataset.
    Parquet,
    /// The matching calls' user stacks (`record --stacks`) folded for a flame graph, weighted
    /// by latency: `iocap flame`'s default.
    Folded,
    /// The same drawn as an SVG flame graph.
    SvgFlame,
}

#[derive(clap::Args, Debug)]
#[command(after_help = "\
A heatmap:                       iocap export trace.cap evt.type=fsync --format svg -o heat.svg
Two captures compared (SVG):     iocap export before.cap after.cap evt.type=fsync --format svg -o cmp.svg
One capture, two filters (SVG):  iocap export trace.cap --a proc.name=pg --b proc.name=mysqld --format svg -o cmp.svg
Into a fleet's Parquet dataset:  iocap export trace.cap --format parquet -o fleet/   (PARQUET.md)
A latency flame graph:           iocap export trace.cap 'latency>1ms' --format svg-flame -o slow.svg  (iocap flame has more)
Several captures into one:       iocap export db1.cap db2.cap caps/ --format parquet -o fleet/
The second word is capture B when it names an existing file, else the first filter word.")]
pub struct Args {
    #[command(flatten)]
    capture: input::Capture,
    /// Filter, as words joined by spaces: `evt.type=fsync`. With --format svg, a first word that
    /// names an existing file is capture B, compared with the first.
    filter: Vec<String>,
    /// SVG: compare two filters of one capture (or narrow the sides of two).
    #[command(flatten)]
    own: SideFilters,
    /// What to write.
    #[arg(long, value_enum)]
    format: Format,
    /// Where to write it (`-` for stdout). With --format parquet, a directory (or a path ending
    /// in `/`) is a dataset: the file goes to DIR/host=HOST/date=YYYY-MM-DD/part-ID.parquet.
    #[arg(short = 'o', long = "output", value_name = "OUT")]
    output: PathBuf,
    /// SVG: width of a time column (default: the capture split in at most 400 columns).
    #[arg(long, value_name = "DURATION")]
    interval: Option<String>,
    /// SVG: what the latency axis is of: any duration field (`blk.queue`, `disk.time`,
    /// `wait.time` ...), for the events that have it; the default, every event's latency.
    #[arg(long, value_name = "FIELD")]
    measure: Option<String>,
    /// Parquet into a dataset: the files each capture's recording went on in too.
    #[command(flatten)]
    ring: input::Ring,
}

/// What an export writes, its captures opened.
// One lives for the whole export: the size of its largest variant costs nothing.
#[allow(clippy::large_enum_variant)]
enum Export {
    /// The events, or their heatmap.
    One(Input),
    /// Two sides compared, in SVG.
    Two([sides::Side; 2]),
    /// Several captures, each into its partition of a Parquet dataset.
    Dataset(input::Fleet),
}

impl Export {
    /// Open what `args` names. The second word is capture B when it names one
    /// ([`input::names_a_capture`]): a filter word does not, and `iocap export x.cap
    /// proc.name=dd` keeps its meaning. A comparison is only drawn: with CSV or JSON lines it
    /// is a usage error.
    fn open(args: &Args) -> anyhow::Result<Export> {
        if args.format == Format::Parquet && args.own.is_empty() {
            // Parquet takes several captures (files, directories, patterns, rings), each into
            // the dataset's partition of its host and day.
            let mut fleet = input::open_fleet(&args.capture, &args.filter, &args.ring, true)?;
            if !fleet.is_several() {
                return Ok(Export::One(fleet.inputs.remove(0)));
            }
            if !is_dataset(&args.output) {
                return Err(UsageError(
                    "several captures go into a dataset: -o DIR/ (each into DIR/host=…/date=…/part-….parquet)".into(),
                )
                .into());
            }
            return Ok(Export::Dataset(fleet));
        }
        if args.ring.ring {
            return Err(UsageError("--ring: only --format parquet exports several captures".into()).into());
        }
        let b = args.filter.first().filter(|w| input::names_a_capture(w)).map(Path::new);
        if b.is_none() && args.own.is_empty() {
            return Ok(Export::One(input::open(&args.capture, &args.filter, true)?));
        }
        if args.format != Format::Svg {
            let why = match b {
                Some(b) => format!(
                    "`{}` names a file, a second capture",
                    iocap_format::escape::escape(b.as_os_str().as_encoded_bytes())
                ),
                None => "--a and --b compare two sides".to_string(),
            };
            return Err(UsageError(format!(
                "{why}: a comparison is drawn only with --format svg (export the events of one side at a time)"
            ))
            .into());
        }
        let sides = Sides {
            a: &args.capture,
            b,
            words: &args.filter[usize::from(b.is_some())..],
            own: &args.own,
        };
        Ok(Export::Two(sides.open("export")?))
    }
}

pub fn run(args: Args) -> anyhow::Result<()> {
    let interval = args
        .interval
        .as_deref()
        .map(parse_duration)
        .transpose()
        .map_err(|e| UsageError(format!("--interval: {e}")))?;
    let measure = match &args.measure {
        Some(_) if args.format != Format::Svg => {
            return Err(UsageError("--measure draws a heatmap: only with --format svg".into()).into());
        }
        Some(name) => input::measure_arg(name)?,
        None => Measure::LATENCY,
    };
    let mut export = Export::open(&args)?;
    match &mut export {
        Export::One(input) => input.measure(measure)?,
        Export::Two(sides) => sides.iter_mut().try_for_each(|s| s.input.measure(measure))?,
        Export::Dataset(_) => {}
    }
    let graph = match (&export, args.format) {
        (Export::One(input), Format::Folded | Format::SvgFlame) => Some(crate::flame::Graph::of(
            std::slice::from_ref(input),
            iocap_analysis::flame::By::User,
            iocap_analysis::flame::Weight::Latency,
            &args.capture.name(),
        )?),
        _ => None,
    };
    let write = |out: &mut (dyn Write + Send)| -> anyhow::Result<()> {
        match (&export, args.format) {
            (Export::One(input), Format::Csv) => text::write_csv(out, input),
            (Export::One(input), Format::Jsonl) => text::write_jsonl(out, input),
            (Export::One(input), Format::Parquet) => parquet::write(out, input).map(drop),
            (Export::One(input), Format::Svg) => write_svg(out, input, measure, interval, &args.capture.short_name()),
            (Export::One(_), Format::Folded | Format::SvgFlame) => graph
                .as_ref()
                .map_or(Ok(()), |g| g.write(out, args.format == Format::SvgFlame)),
            (Export::Two(sides), _) => write_comparison(out, sides, measure, interval),
            (Export::Dataset(_), _) => unreachable!("a dataset is written file by file, below"),
        }
    };
    if let Export::Dataset(fleet) = &export {
        for input in &fleet.inputs {
            let path = parquet::partition(&args.output, input.reader.meta())?;
            output::write_whole(&path, &|out| parquet::write(out, input).map(drop))?;
        }
        return Ok(());
    }
    if args.output.as_os_str() == "-" {
        let mut out = BufWriter::new(std::io::stdout());
        write(&mut out)?;
        out.flush()?;
        return Ok(());
    }
    let hive;
    let path = match (&export, args.format) {
        (Export::One(input), Format::Parquet) if is_dataset(&args.output) => {
            hive = parquet::partition(&args.output, input.reader.meta())?;
            &hive
        }
        _ => &args.output,
    };
    output::write_to(path, &write)
}

/// Whether `-o` names a dataset's directory: one that exists, or a path ending in `/`.
fn is_dataset(out: &Path) -> bool {
    out.as_os_str().as_encoded_bytes().ends_with(b"/") || out.is_dir()
}

/// 1, 2 or 5 times a power of ten, at least `x`.
fn nice(x: u64) -> u64 {
    let mut p = 1u64;
    loop {
        for m in [1, 2, 5] {
            if let Some(v) = p.checked_mul(m) {
                if v >= x {
                    return v;
                }
            } else {
                return u64::MAX;
            }
        }
        p = p.saturating_mul(10);
    }
}

/// The time columns of a heatmap over `span` ns: `interval` ns each (by default the span in at
/// most 400, of a whole ms at least), as (interval, columns); too many is a usage error.
fn time_columns(span: u64, interval: Option<u64>) -> anyhow::Result<(u64, u64)> {
    let span = span.max(1);
    let interval = interval.unwrap_or_else(|| nice(span.div_ceil(400)).max(1_000_000));
    let cols = span.div_ceil(interval).max(1);
    if cols > 5_000 {
        return Err(UsageError(format!(
            "--interval {} makes {cols} columns (at most 5000): use a longer one",
            fmt_ns(interval)
        ))
        .into());
    }
    Ok((interval, cols))
}

fn write_svg(
    out: &mut dyn Write,
    input: &Input,
    measure: Measure,
    interval: Option<u64>,
    file: &str,
) -> anyhow::Result<()> {
    let (start, end) = scan::capture_span(&input.reader);
    let (interval, cols) = time_columns(end - start, interval)?;
    let (sp, stats) = crate::spectrogram::bin(input, measure, start, end, interval)?;
    let svg = svg::render_heatmap(&sp, cols, file, &input.src, stats.matched, measure.field());
    out.write_all(svg.as_bytes())?;
    Ok(())
}

/// One side of a comparison, binned by one scan.
struct Binned {
    /// Its heatmap, from its capture's start.
    sp: Spectrogram,
    /// Its events per latency column of the heatmap, every one (one that began before the
    /// capture's start is in no heatmap row).
    dist: [u64; COLS],
    hist: LatencyHist,
    /// A chunk's measured values, when they are not its latency column.
    measured: Vec<u64>,
}

impl Binned {
    fn merge(&mut self, other: Binned) {
        self.sp.merge(&other.sp);
        self.hist.merge(&other.hist);
        for (a, b) in self.dist.iter_mut().zip(other.dist) {
            *a += b;
        }
    }
}

/// Two sides compared by `measure`: each binned from its own capture's start, in columns of one
/// interval over the longer span, so the two heatmaps share their time axis.
fn write_comparison(
    out: &mut dyn Write,
    sides: &[sides::Side; 2],
    measure: Measure,
    interval: Option<u64>,
) -> anyhow::Result<()> {
    let spans = sides.each_ref().map(|s| scan::capture_span(&s.input.reader));
    let longest = spans.iter().map(|(start, end)| end - start).max().unwrap_or(0);
    let (interval, cols) = time_columns(longest, interval)?;
    let mut binned = Vec::with_capacity(2);
    for (side, (start, end)) in sides.iter().zip(spans) {
        let r = &side.input.reader;
        let (b, _) = scan::scan(
            r,
            &side.input.filter,
            measure.columns().with(Col::Ts),
            input::threads(r),
            || Binned {
                sp: Spectrogram::covering(start, end, interval),
                dist: [0; COLS],
                hist: LatencyHist::new(),
                measured: Vec::new(),
            },
            |b: &mut Binned, c, bits| {
                let vals = measure.values(c, &mut b.measured);
                for i in bits.iter_ones() {
                    b.sp.add(c.ts[i], vals[i]);
                    b.dist[column(vals[i])] += 1;
                    b.hist.add(vals[i]);
                }
            },
            Binned::merge,
        )?;
        binned.push(b);
    }
    let pictured: Vec<svg::Side> = sides
        .iter()
        .zip(&binned)
        .map(|(side, b)| svg::Side {
            file: &side.name,
            filter: &side.input.src,
            sp: &b.sp,
            dist: &b.dist,
            hist: &b.hist,
        })
        .collect();
    let svg = svg::render_comparison([&pictured[0], &pictured[1]], cols, measure.field());
    out.write_all(svg.as_bytes())?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};

    use iocap_format::{blk_flags, Class, Event, FdType, ProcEntry};
    use iocap_testkit::{self as capture, Rng, VDA};

    /// A capture at `dir/varied.cap` with every class of event, failed calls, unknown syscall
    /// and opcode numbers, block requests of every op, cause and flag, and processes and files
    /// named with hostile strings: formula starters, CSV's quote and comma, line breaks,
    /// escape sequences, non-ASCII; some events name no process or file, or ones not in the
    /// tables. Several chunks, so table entries recur across them.
    pub(crate) fn varied_capture(dir: &Path) -> PathBuf {
        let path = dir.join("varied.cap");
        let mut meta = capture::meta(1_000_000_000);
        meta.host = "host,\"one\"\n".into();
        let mut w = capture::create(&path, &meta, 500, 1);
        let names: [&[u8]; 10] = [
            b"worker-3",
            b"=HYPERLINK(\"http://x\")",
            b"-rf",
            b"+plus",
            b"@at",
            b"\ttab",
            b"a,b \"q\"",
            b"line\nbreak\r",
            b"\x1b[31mred\xff",
            "d\u{e9}j\u{e0} vu".as_bytes(),
        ];
        let mut procs = Vec::new();
        for (k, name) in names.iter().enumerate() {
            let pid = 100 + k as u32;
            let name = w.intern(name);
            let exe = w.intern(format!("/usr/bin/{k},x").as_bytes());
            let cmdline = w.intern(b"=cmd \"arg\"");
            let user = w.intern(if k % 2 == 0 { b"root".as_slice() } else { b"" });
            let cgroup = w.intern(if k % 3 == 0 {
                b"/system.slice/x.service".as_slice()
            } else {
                b""
            });
            let id = w.add_proc(ProcEntry {
                pid,
                ppid: 1,
                name,
                exe,
                cmdline,
                uid: (k % 2 == 0).then_some(k as u32),
                user,
                cgroup,
                ..ProcEntry::default()
            });
            procs.push((pid, id));
        }
        let files: [(&[u8], FdType, u32); 6] = [
            (b"/var/lib/db,1.dat", FdType::File, VDA),
            (b"/=evil\"name", FdType::File, 8 << 20 | 1),
            (b"/", FdType::Directory, VDA),
            (b"1.2.3.4:5->6.7.8.9:10", FdType::Ipv4, 0),
            (b"pipe:[77]", FdType::Pipe, 0),
            (b"-dash", FdType::File, VDA),
        ];
        let mut file_ids = vec![0, 4242];
        for (k, (name, kind, dev)) in files.iter().enumerate() {
            file_ids.push(capture::add_file(&mut w, 100, 3 + k as i32, *kind, name, *dev));
        }
        let mut rng = Rng::new(17);
        let mut ts = 1_000_000_000;
        for i in 0..3_000u64 {
            ts += 1 + rng.below(100_000);
            let (pid, proc) = *rng.pick(&procs);
            let proc = match i % 97 {
                0 => 0,
                1 => 9_999,
                _ => proc,
            };
            let class = *rng.pick(&[
                Class::Syscall,
                Class::Syscall,
                Class::Block,
                Class::IoUring,
                Class::Journal,
            ]);
            let e = match class {
                Class::Block => Event {
                    op: rng.below(6) as u8,
                    sector: rng.next_u64() >> 20,
                    queue: rng.below(50_000),
                    flags: rng.below(1 << 10) as u32 & !(blk_flags::SEQUENTIAL | blk_flags::RANDOM)
                        | *rng.pick(&[0, blk_flags::SEQUENTIAL, blk_flags::RANDOM]),
                    cause: rng.below(5) as u8,
                    nr: *rng.pick(&[17, 74, 999]),
                    link: rng.below(1_000),
                    file: *rng.pick(&file_ids),
                    ..capture::block(
                        ts,
                        rng.below(10_000_000),
                        pid,
                        proc,
                        *rng.pick(&[VDA, 8 << 20 | 3]),
                        4096,
                    )
                },
                _ => Event {
                    class,
                    ts: if i == 5 { 10 } else { ts },
                    latency: if i == 7 { u64::MAX } else { rng.below(5_000_000) },
                    pid,
                    tid: pid + rng.below(3) as u32,
                    proc,
                    nr: *rng.pick(&[0, 1, 9, 17, 18, 74, 257, 999, 22, 23]),
                    ret: *rng.pick(&[0, 4096, -2, -11, -600, i64::MIN, 0x7f00_0000_1000]),
                    fd: *rng.pick(&[-1, 3, 4, 100]),
                    file: *rng.pick(&file_ids),
                    bytes: rng.below(1 << 20),
                    offset: rng.next_u64(),
                    disk_reqs: rng.below(3) as u32,
                    disk_bytes: rng.below(1 << 16),
                    disk_time: rng.below(1_000_000),
                    cpu: rng.below(4) as u32,
                    ..Event::default()
                },
            };
            w.push(&e).unwrap();
        }
        w.finish(ts + 1).unwrap();
        path
    }
}
