//! `iocap view`: the terminal viewer (crate `iocap-tui`) on a capture, a file or `-`; one
//! being recorded is followed as it grows. `iocap view a.cap b.cap [FILTER]` compares two:
//! the second word is a capture when it names something that exists (no filter word does).
//! A whole recording of several files, a directory (`iocap view caps/`) or a rotation from
//! one of its files (`--ring`), is viewed as one capture ([`input::open_recording`]).

use std::io::IsTerminal;
use std::path::{Path, PathBuf};

use anyhow::Context;
use iocap_format::{Liveness, Reader};

use crate::{input, signals, UsageError};

#[derive(clap::Args, Debug)]
#[command(after_help = "\
One capture:         iocap view trace.cap proc.name=postgres and latency>1ms
A whole rotation:    iocap view caps/   or   iocap view caps/trace.cap --ring
Two, compared:       iocap view before.cap after.cap evt.type=fsync
(On one capture, p pins the filter as side A and the filter bar edits side B.)")]
pub struct Args {
    #[command(flatten)]
    capture: input::Capture,
    /// A second capture to compare with the first (side B; the first is side A), then the
    /// filter to start with, as words joined by spaces: `proc.name=dd and latency>1ms`.
    #[arg(value_name = "[B.cap] FILTER")]
    filter: Vec<String>,
    /// Follow the file even though no recorder holds it, until its end arrives: one a shell
    /// writes (`ssh HOST sudo iocap record -w - > trace.cap`). A file being recorded is
    /// followed without it.
    #[arg(short = 'f', long)]
    follow: bool,
    #[command(flatten)]
    ring: input::Ring,
}

pub fn run(args: Args) -> anyhow::Result<()> {
    // SIGTERM, SIGINT, SIGHUP, SIGQUIT: the viewer restores the terminal, then exits.
    signals::install_for_viewer();
    let quit = signals::flag();
    if let Some(rec) = input::open_recording(&args.capture, &args.ring)? {
        if args.filter.first().is_some_and(|w| input::names_a_capture(w)) {
            return Err(UsageError("a recording of several files is viewed alone, not compared".into()).into());
        }
        if args.follow {
            return Err(
                UsageError("-f follows one capture: view the recording's newest file to follow it".into()).into(),
            );
        }
        let filter = checked(&args.filter.join(" "), &rec.reader)?;
        terminal_needed()?;
        return iocap_tui::run_until(Path::new(&rec.name), rec.reader, filter, quit).context("terminal");
    }
    let opened = args.capture.open(false)?;
    let mut r = opened.reader;
    #[cfg(unix)]
    let stream = opened.stream;
    // A second capture, compared with the first: a word after it that names something that
    // exists, or a `.cap` name (no filter word is either).
    let (b, words) = match args.filter.split_first() {
        Some((first, rest)) if input::names_a_capture(first) => (Some(PathBuf::from(first)), rest),
        _ => (None, &args.filter[..]),
    };
    let filter = words.join(" ");
    let Some(b_path) = b else {
        if args.follow && r.liveness() == Liveness::Recovered {
            r.assume_writer().with_context(|| args.capture.name())?;
        }
        let filter = checked(&filter, &r)?;
        terminal_needed()?;
        let name = args.capture.name();
        #[cfg(unix)]
        if let Some(s) = stream {
            let why = Box::new(move || s.failure());
            return iocap_tui::run_copied(Path::new(&name), r, filter, why, quit).context("terminal");
        }
        return iocap_tui::run_until(Path::new(&name), r, filter, quit).context("terminal");
    };
    if args.follow {
        return Err(UsageError("-f follows one capture, not a comparison".into()).into());
    }
    let b = input::Capture {
        file: b_path,
        save: None,
    };
    let b_reader = b.open(false)?.reader;
    // The filter is checked against side B's capture, whose filter bar it becomes; A's is
    // compiled from the same words.
    let filter = checked(&filter, &b_reader)?;
    terminal_needed()?;
    iocap_tui::run_compare_until(
        Path::new(&args.capture.name()),
        r,
        Path::new(&b.name()),
        b_reader,
        filter,
        quit,
    )
    .context("terminal")
}

/// `filter` checked against the capture `r` reads: a bad one is a usage error, reported before
/// the screen is taken over.
fn checked(filter: &str, r: &Reader) -> anyhow::Result<iocap_tui::CheckedFilter> {
    Ok(iocap_tui::check_filter(filter, r).map_err(|e| UsageError(format!("filter: {e}")))?)
}

/// The viewer needs a terminal on standard output.
fn terminal_needed() -> anyhow::Result<()> {
    if !std::io::stdout().is_terminal() {
        return Err(UsageError("view needs a terminal (try `iocap report` or `iocap events`)".into()).into());
    }
    Ok(())
}
