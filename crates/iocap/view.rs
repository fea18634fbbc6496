//! `iocap view`: the terminal viewer (crate `iocap-tui`) on a capture, a file or `-`; one
//! being recorded is followed as it grows.

use std::io::IsTerminal;
use std::path::Path;

use anyhow::Context;
use iocap_format::Liveness;

use crate::{input, UsageError};

#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    capture: input::Capture,
    /// Filter to start with, as words joined by spaces: `proc.name=dd and latency>1ms`.
    filter: Vec<String>,
    /// Follow the file even though no recorder holds it, until its end arrives: one a shell
    /// writes (`ssh HOST sudo iocap record -w - > trace.cap`). A file being recorded is
    /// followed without it.
    #[arg(short = 'f', long)]
    follow: bool,
}

pub fn run(args: Args) -> anyhow::Result<()> {
    let opened = args.capture.open(false)?;
    let mut r = opened.reader;
    if args.follow && r.liveness() == Liveness::Recovered {
        r.assume_writer().with_context(|| args.capture.name())?;
    }
    let filter = args.filter.join(" ");
    // A bad filter is a usage error, reported before the screen is taken over.
    let filter = iocap_tui::check_filter(&filter, &r).map_err(|e| UsageError(format!("filter: {e}")))?;
    if !std::io::stdout().is_terminal() {
        return Err(UsageError("view needs a terminal (try `iocap report` or `iocap events`)".into()).into());
    }
    iocap_tui::run(Path::new(&args.capture.name()), r, filter).context("terminal")
}
