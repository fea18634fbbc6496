//! What every reading command starts from: the capture named on the command line, a file or
//! `-` for standard input ([`Capture`]), opened with its filter compiled once ([`open`]: the
//! filter is the words after the file, as sysdig and tcpdump take it), a field named on the
//! command line ([`field_arg`]), how many threads a scan uses, and what to say when the filter
//! matched nothing ([`Input::say_nothing_matched`]).
//!
//! `report`, `events`, `iostat`, `spectrogram` and `info` read several captures as one
//! ([`open_fleet`]): the words before the filter that name captures (by the rule `view` and
//! `export` tell a second capture with, [`names_a_capture`], or a pattern with `*` or
//! `?`), each a file, a directory (its `*.cap` and `*.capN` files) or a pattern over the file
//! names of one directory, and with `--ring` the files each one's recording went on in. Their
//! times are laid on one timeline by wall clock ([`Fleet`]).

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use anyhow::Context;
use iocap_analysis::scan;
use iocap_analysis::Measure;
use iocap_filter::fields::{self, FieldInfo};
use iocap_filter::{Compiled, Filter};
use iocap_format::Reader;

#[cfg(unix)]
use crate::stream::{self, Stream};
use crate::{say, UsageError};

mod recording;

pub use recording::open_recording;

/// The capture argument every reading command takes: a file, or `-` and what it is saved as.
#[derive(clap::Args, Debug)]
pub struct Capture {
    /// The capture file; `-` reads one from standard input (`ssh HOST sudo iocap record -w - |
    /// iocap report -`), kept meanwhile in a temporary file removed on exit.
    pub file: PathBuf,
    /// With `-`: keep what standard input brings in FILE (a new file, 0600), which others can
    /// read as it grows, rather than in a temporary file.
    #[arg(long, value_name = "FILE")]
    pub save: Option<PathBuf>,
}

/// A capture opened for reading, and the copy of standard input it is read from, if it is.
pub struct Opened {
    pub reader: Reader,
    /// Set for `-`: the copy goes on in the background while a follower reads.
    #[cfg(unix)]
    pub stream: Option<Stream>,
}

impl Capture {
    /// Whether it is `-`.
    pub fn is_stdin(&self) -> bool {
        self.file == Path::new("-")
    }

    /// The capture's name in messages.
    pub fn name(&self) -> String {
        #[cfg(unix)]
        if self.is_stdin() {
            return stream::NAME.into();
        }
        self.file.display().to_string()
    }

    /// Its name without the directory, for a heading.
    pub fn short_name(&self) -> String {
        match self.file.file_name() {
            Some(n) if !self.is_stdin() => n.to_string_lossy().into_owned(),
            _ => self.name(),
        }
    }

    /// Open it. From standard input, once all of it has come when `whole`, else as soon as
    /// its header has, to be read on as the rest comes ([`Reader::refresh`]).
    pub fn open(&self, whole: bool) -> anyhow::Result<Opened> {
        #[cfg(unix)]
        {
            let save = stream::save_path(&self.file, self.save.as_deref())?;
            if self.is_stdin() {
                let s = Stream::start(save.as_deref())?;
                let reader = s.open(whole)?;
                return Ok(Opened {
                    reader,
                    stream: Some(s),
                });
            }
        }
        #[cfg(not(unix))]
        if self.is_stdin() || self.save.is_some() {
            return Err(UsageError("`-` and --save need a Unix system".into()).into());
        }
        let _ = whole;
        let reader = Reader::open(&self.file).with_context(|| self.name())?;
        Ok(Opened {
            reader,
            #[cfg(unix)]
            stream: None,
        })
    }
}

/// A capture opened with a compiled filter.
pub struct Input {
    pub reader: Reader,
    pub filter: Compiled,
    /// The filter, checked (what [`Input::filter`] was compiled from, and is compiled from
    /// again against a growing capture's tables).
    pub parsed: Filter,
    /// The filter's source, as typed.
    pub src: String,
    /// Where `evt.time` counts from, ns on the capture's boot clock: its start, or, read with
    /// others, the instant aligned with the earliest one's start ([`Fleet`]).
    pub origin: u64,
    /// The copy of standard input the capture is read from, for `-`.
    #[cfg(unix)]
    pub stream: Option<Stream>,
}

/// Parse the filter words (a usage error, exit 2, when they do not parse), then open the
/// capture (as [`Capture::open`] does) and compile the filter against it.
pub fn open(capture: &Capture, words: &[String], whole: bool) -> anyhow::Result<Input> {
    let (src, parsed) = parse(words)?;
    let opened = capture.open(whole)?;
    // An answer for part of a capture is said to be one (a recorder killed, a copy cut, a file
    // damaged): on standard error, so the answer itself reads as ever.
    if whole && opened.reader.liveness() == iocap_format::Liveness::Recovered {
        let why = opened.reader.recovery().unwrap_or_default();
        crate::say_later(format_args!(
            "iocap: {} was not finished ({why}): read as far as it is whole",
            capture.name()
        ));
    }
    let filter = parsed.compile(opened.reader.meta(), opened.reader.tables());
    Ok(Input {
        origin: opened.reader.meta().start_ts,
        reader: opened.reader,
        filter,
        parsed,
        src,
        #[cfg(unix)]
        stream: opened.stream,
    })
}

/// The filter words joined, and parsed (a usage error when they do not parse).
fn parse(words: &[String]) -> anyhow::Result<(String, Filter)> {
    let src = words.join(" ");
    let parsed = Filter::parse(&src).map_err(|e| UsageError(format!("bad filter: {}", e.render(&src))))?;
    Ok((src, parsed))
}

impl Input {
    /// The same capture with another filter: its reader shared (a clone is a snapshot on the
    /// same source), not opened again; a capture on standard input can only be read once.
    /// Standard input's copy, if any, stays with `self`.
    pub fn with_filter(&self, words: &[String]) -> anyhow::Result<Input> {
        let (src, parsed) = parse(words)?;
        let reader = self.reader.clone();
        let filter = parsed.compile_from(reader.meta(), reader.tables(), self.origin);
        Ok(Input {
            reader,
            filter,
            parsed,
            src,
            origin: self.origin,
            #[cfg(unix)]
            stream: None,
        })
    }

    /// Keep only the events `m` measures (`--measure`): the filter, as typed, and the
    /// measure's clause, compiled again. The source said in messages stays as typed.
    pub fn measure(&mut self, m: Measure) -> anyhow::Result<()> {
        let Some(clause) = m.clause() else {
            return Ok(());
        };
        let extra = Filter::parse(clause).map_err(|e| anyhow::anyhow!("{}", e.render(clause)))?;
        self.parsed = self
            .parsed
            .and(&extra)
            .map_err(|e| anyhow::anyhow!("{}", e.render(clause)))?;
        let r = &self.reader;
        self.filter = self.parsed.compile_from(r.meta(), r.tables(), self.origin);
        Ok(())
    }

    /// The capture's header with its start moved to [`Input::origin`], for printing times
    /// (`evt.time`) on the timeline the capture is read on; `capture.id` must be read from
    /// the capture's own header ([`Reader::meta`]), which this changes.
    pub fn timed_meta(&self) -> std::borrow::Cow<'_, iocap_format::Meta> {
        let meta = self.reader.meta();
        if meta.start_ts == self.origin {
            std::borrow::Cow::Borrowed(meta)
        } else {
            std::borrow::Cow::Owned(iocap_format::Meta {
                start_ts: self.origin,
                ..meta.clone()
            })
        }
    }

    /// Its start and end (the span analyses are laid over, [`scan::capture_span`]) in
    /// wall-clock time, ns since the epoch (its boot clock, for a capture that does not know
    /// the wall clock).
    pub fn wall_span(&self) -> (i128, i128) {
        let (start, end) = scan::capture_span(&self.reader);
        let to_wall = i128::from(self.reader.meta().boot_to_wall_ns);
        (i128::from(start) + to_wall, i128::from(end) + to_wall)
    }

    /// After a scan in which the filter matched no `what` (`events`, `block requests`): when the
    /// capture holds a value near one the filter asked for, one line on stderr naming it
    /// (`no events match; did you mean proc.name=fio?`).
    pub fn say_nothing_matched(&self, what: &str) {
        let r = &self.reader;
        if let Some(near) = self.parsed.near_miss(r.meta(), r.tables()) {
            say(format_args!("iocap: no {what} match; did you mean {near}?"));
        }
    }
}

/// A field named on the command line, or a usage error.
pub fn field_arg(name: &str) -> anyhow::Result<&'static FieldInfo> {
    fields::lookup(name).ok_or_else(|| {
        UsageError(format!(
            "unknown field `{}` (`iocap fields` lists them)",
            iocap_format::escape::escape(name.as_bytes())
        ))
        .into()
    })
}

/// A measure named on the command line (`--measure FIELD`: any duration field), or a usage
/// error.
pub fn measure_arg(name: &str) -> anyhow::Result<Measure> {
    Measure::by_name(name).map_err(|e| {
        UsageError(format!(
            "--measure: {} (`iocap fields` lists them)",
            iocap_format::escape::escape(e.as_bytes())
        ))
        .into()
    })
}

/// Threads for a scan of `r`: one per core, no more than its chunks.
pub fn threads(r: &Reader) -> usize {
    scan::default_threads(r.chunks().len())
}

/// What a reading command reads (`report`, `events`, `iostat`, `spectrogram`): a capture,
/// more captures, the filter, and `--ring`.
#[derive(clap::Args, Debug)]
pub struct Selection {
    #[command(flatten)]
    pub capture: Capture,
    /// More captures (files, directories, quoted patterns: `'caps/*.cap'`), then the filter, as
    /// words joined by spaces: `proc.name=dd and latency>1ms`.
    pub filter: Vec<String>,
    #[command(flatten)]
    pub ring: Ring,
}

impl Selection {
    /// The captures and the filter opened ([`open_fleet`]); `whole`: each read whole now, not
    /// followed.
    pub fn open(&self, whole: bool) -> anyhow::Result<Fleet> {
        open_fleet(&self.capture, &self.filter, &self.ring, whole)
    }
}

/// `--ring`, for the commands that read several captures.
#[derive(clap::Args, Debug, Default)]
pub struct Ring {
    /// Read each capture named with the files its recording went on in (`record -C`: each
    /// file's header names the next, `trace.cap`, `trace.cap1`, ...), as far as they are there.
    #[arg(long)]
    pub ring: bool,
}

/// Several captures read as one: every matching event of each, on one timeline.
///
/// The timeline is the wall clock: it starts at the earliest capture's start
/// ([`Fleet::start`]), and each capture's filter is compiled with `evt.time` counted from the
/// instant of its own boot clock that is that start ([`Input::origin`]), so `evt.time` means
/// the same instant in every capture. Analyses over time (iostat's intervals, the
/// spectrogram's rows) take each event at its wall-clock time, [`Fleet::wall`].
pub struct Fleet {
    /// The captures, in the order named (a directory's and a pattern's files by name).
    pub inputs: Vec<Input>,
    /// Each capture's path as named or found, for messages (not escaped: print it through
    /// `escape`).
    pub paths: Vec<PathBuf>,
}

impl Fleet {
    /// Whether there are several captures (else the one is read as ever, `inputs[0]`).
    pub fn is_several(&self) -> bool {
        self.inputs.len() > 1
    }

    /// The timeline's start: the earliest capture's, wall-clock ns.
    pub fn start(&self) -> i128 {
        self.inputs.iter().map(|i| i.wall_span().0).min().unwrap_or(0)
    }

    /// The timeline's end: the latest capture's, wall-clock ns.
    pub fn end(&self) -> i128 {
        self.inputs.iter().map(|i| i.wall_span().1).max().unwrap_or(0)
    }

    /// How to take capture `i`'s times onto the timeline: add this to a boot-clock time.
    pub fn wall(&self, i: usize) -> i64 {
        self.inputs[i].reader.meta().boot_to_wall_ns
    }

    /// The hosts of the captures, each once, in the order first seen.
    pub fn hosts(&self) -> Vec<&str> {
        let mut out: Vec<&str> = Vec::new();
        for i in &self.inputs {
            let h = i.reader.meta().host.as_str();
            if !out.contains(&h) {
                out.push(h);
            }
        }
        out
    }

    /// Keep only the events `m` measures, in every capture ([`Input::measure`]).
    pub fn measure(&mut self, m: Measure) -> anyhow::Result<()> {
        self.inputs.iter_mut().try_for_each(|i| i.measure(m))
    }

    /// After scans in which the filter matched no `what` in any capture: the first hint a
    /// capture has ([`Input::say_nothing_matched`]'s line), said once.
    pub fn say_nothing_matched(&self, what: &str) {
        let near = self
            .inputs
            .iter()
            .find_map(|i| i.parsed.near_miss(i.reader.meta(), i.reader.tables()));
        if let Some(near) = near {
            say(format_args!("iocap: no {what} match; did you mean {near}?"));
        }
    }
}

/// Whether `word`, after a capture on the command line of `view` or `export`, names a second
/// capture rather than beginning a filter: it names something that exists (a FIFO or a device
/// there is then refused as no capture, clearly), or it is a `.cap` file's name with none of the
/// filter language's operators (a missing file is then said as such). No filter word is either.
pub fn names_a_capture(word: &str) -> bool {
    Path::new(word).exists() || (word.ends_with(".cap") && !word.contains(['=', '<', '>', '!', '(', ')', ' ']))
}

/// A word before the filter that names captures: one by [`names_a_capture`]'s rule, or
/// a pattern (`*`, `?`) with none of the filter language's operators (`caps/*.cap*`), or `-`
/// (refused beside others).
pub fn names_captures(word: &str) -> bool {
    word == "-"
        || names_a_capture(word)
        || (word.contains(['*', '?']) && !word.contains(['=', '<', '>', '!', '(', ')', ' ', '\'', '"']))
}

/// Whether a file name is a capture's in a directory: `NAME.cap`, or a rotation's later file
/// `NAME.capN`.
fn is_capture_name(name: &str) -> bool {
    match name.rfind(".cap") {
        Some(i) if i > 0 => name[i + 4..].bytes().all(|b| b.is_ascii_digit()),
        _ => false,
    }
}

/// A file name's order among a rotation's: by name with its trailing number apart, so
/// `t.cap`, `t.cap1`, `t.cap2`, `t.cap10`.
fn rotation_order(name: &str) -> (&str, u64, &str) {
    let digits = name.len() - name.bytes().rev().take_while(u8::is_ascii_digit).count();
    let (stem, n) = name.split_at(digits);
    (stem, n.parse().unwrap_or(0), name)
}

/// Whether `name` matches `pattern`, where `*` is any run of characters and `?` one.
fn glob_match(pattern: &str, name: &str) -> bool {
    let (p, n): (Vec<char>, Vec<char>) = (pattern.chars().collect(), name.chars().collect());
    // The classic backtracking of the last `*`: linear in practice, quadratic at worst.
    let (mut pi, mut ni, mut star, mut mark) = (0, 0, None, 0);
    while ni < n.len() {
        if pi < p.len() && (p[pi] == '?' || p[pi] == n[ni]) {
            pi += 1;
            ni += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some(pi);
            mark = ni;
            pi += 1;
        } else if let Some(s) = star {
            pi = s + 1;
            mark += 1;
            ni = mark;
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|&c| c == '*')
}

/// The files of directory `dir` whose names pass `keep`, in rotation order.
fn files_in(dir: &Path, keep: impl Fn(&str) -> bool) -> anyhow::Result<Vec<PathBuf>> {
    let entries = std::fs::read_dir(dir).with_context(|| dir.display().to_string())?;
    let mut names = Vec::new();
    for e in entries {
        let e = e.with_context(|| dir.display().to_string())?;
        // Judged and ordered by its name as text (bytes that are not UTF-8 as U+FFFD), opened
        // by its name as it is: a name that is not UTF-8 is no reason to leave a capture out.
        let raw = e.file_name();
        let name = raw.to_string_lossy().into_owned();
        // A directory or a socket among them is no capture: only files (or links to them).
        if keep(&name) && e.path().is_file() {
            names.push((name, raw));
        }
    }
    names.sort_by(|a, b| rotation_order(&a.0).cmp(&rotation_order(&b.0)));
    Ok(names.into_iter().map(|(_, raw)| dir.join(raw)).collect())
}

/// The captures one word names: a file, a directory's captures, or a pattern's files.
fn expand(word: &Path) -> anyhow::Result<Vec<PathBuf>> {
    let shown = || iocap_format::escape::escape(word.as_os_str().as_encoded_bytes());
    let name = word.file_name().and_then(|n| n.to_str()).unwrap_or("");
    if name.contains(['*', '?']) {
        let dir = match word.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        if dir.to_string_lossy().contains(['*', '?']) {
            return Err(UsageError(format!(
                "{}: only a file name may hold `*` or `?`, not its directory",
                shown()
            ))
            .into());
        }
        let found = files_in(dir, |n| glob_match(name, n))?;
        if found.is_empty() {
            return Err(UsageError(format!("no capture matches {}", shown())).into());
        }
        return Ok(found);
    }
    if word.is_dir() {
        let found = files_in(word, is_capture_name)?;
        if found.is_empty() {
            return Err(UsageError(format!(
                "no capture in the directory {} (its captures are its *.cap and *.capN files)",
                shown()
            ))
            .into());
        }
        return Ok(found);
    }
    Ok(vec![word.to_path_buf()])
}

/// Open the captures the command line names, `capture` and the words before the filter that
/// name captures ([`names_captures`]), each with the filter in the words after them compiled.
/// One capture (not `--ring`) is opened as [`open`] opens it, on its own timeline; several are
/// laid on one ([`Fleet`]). `-` is one capture only, and `--ring` follows files.
pub fn open_fleet(capture: &Capture, words: &[String], ring: &Ring, whole: bool) -> anyhow::Result<Fleet> {
    let n = words.iter().take_while(|w| names_captures(w)).count();
    let (more, filter) = words.split_at(n);
    if capture.is_stdin() || more.iter().any(|w| w == "-") {
        if !more.is_empty() {
            return Err(
                UsageError("`-` reads one capture from standard input: it cannot be read with others".into()).into(),
            );
        }
        if ring.ring {
            return Err(UsageError("--ring follows a recording's files: not with `-`".into()).into());
        }
    }
    let first_expands = capture.file.is_dir() || capture.file.to_string_lossy().contains(['*', '?']);
    if more.is_empty() && !ring.ring && !first_expands {
        // One file, as ever.
        let input = open(capture, filter, whole)?;
        return Ok(Fleet {
            inputs: vec![input],
            paths: vec![capture.file.clone()],
        });
    }
    let mut paths = Vec::new();
    for w in std::iter::once(capture.file.as_path()).chain(more.iter().map(Path::new)) {
        paths.extend(expand(w)?);
    }
    let (src, parsed) = parse(filter)?;
    let mut seen = HashSet::new();
    let mut readers = Vec::new();
    let mut named = Vec::new();
    let mut queue: std::collections::VecDeque<PathBuf> = paths.into();
    while let Some(path) = queue.pop_front() {
        // Each file once, however often it is named (and a ring that names itself ends).
        let key = std::fs::canonicalize(&path).unwrap_or_else(|_| path.clone());
        if !seen.insert(key) {
            continue;
        }
        let one = Capture {
            file: path.clone(),
            save: None,
        };
        let reader = one.open(whole)?.reader;
        if ring.ring {
            match reader.meta().next_path(&path) {
                Some(next) if next.exists() => queue.push_front(next),
                // Past a file gone from the middle, the next file of the rotation there (the
                // last file names one its recorder had not begun: none is there).
                Some(missing) => {
                    if let Some(later) = recording::later_in_rotation(&missing) {
                        say(format_args!(
                            "iocap: {} is missing (after {}): going on with {}",
                            recording::shown(&missing),
                            recording::shown(&path),
                            recording::shown(&later)
                        ));
                        queue.push_front(later);
                    }
                }
                None => {}
            }
        }
        readers.push(reader);
        named.push(path);
    }
    let start = readers
        .iter()
        .map(|r| i128::from(scan::capture_span(r).0) + i128::from(r.meta().boot_to_wall_ns))
        .min()
        .unwrap_or(0);
    let inputs = readers
        .into_iter()
        .map(|reader| {
            // The timeline's start on this capture's boot clock (0 if it is before the boot):
            // for one capture, its own start.
            let origin = u64::try_from((start - i128::from(reader.meta().boot_to_wall_ns)).max(0)).unwrap_or(u64::MAX);
            Input {
                filter: parsed.compile_from(reader.meta(), reader.tables(), origin),
                reader,
                parsed: parsed.clone(),
                src: src.clone(),
                origin,
                #[cfg(unix)]
                stream: None,
            }
        })
        .collect();
    Ok(Fleet { inputs, paths: named })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_match_whole_names() {
        assert!(glob_match("*.cap", "a.cap"));
        assert!(glob_match("*.cap*", "a.cap12"));
        assert!(glob_match("t?.cap", "t1.cap"));
        assert!(!glob_match("t?.cap", "t12.cap"));
        assert!(!glob_match("*.cap", "a.cap1"));
        assert!(glob_match("*", ""));
        assert!(glob_match("a*b*c", "axxbyyc"));
        assert!(!glob_match("a*b*c", "axxbyy"));
    }

    #[test]
    fn a_directory_holds_captures_and_rotations_in_order() {
        assert!(is_capture_name("t.cap") && is_capture_name("t.cap10"));
        assert!(!is_capture_name(".cap") && !is_capture_name("t.cap.bak") && !is_capture_name("t.capx"));
        let mut v = vec!["t.cap10", "t.cap2", "t.cap", "s.cap"];
        v.sort_by(|a, b| rotation_order(a).cmp(&rotation_order(b)));
        assert_eq!(v, ["s.cap", "t.cap", "t.cap2", "t.cap10"]);
    }
}
