//! `iocap view`: the terminal viewer (crate `iocap-tui`) on a capture.

use std::io::IsTerminal;
use std::path::PathBuf;

use anyhow::Context;
use iocap_format::Reader;

use crate::UsageError;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// The capture file.
    file: PathBuf,
    /// Filter to start with, as words joined by spaces: `proc.name=dd and latency>1ms`.
    filter: Vec<String>,
}

pub fn run(args: Args) -> anyhow::Result<()> {
    let r = Reader::open(&args.file).with_context(|| format!("{}", args.file.display()))?;
    let filter = args.filter.join(" ");
    // A bad filter is a usage error, reported before the screen is taken over.
    let filter = iocap_tui::check_filter(&filter, &r).map_err(|e| UsageError(format!("filter: {e}")))?;
    if !std::io::stdout().is_terminal() {
        return Err(UsageError("view needs a terminal (try `iocap report` or `iocap events`)".into()).into());
    }
    iocap_tui::run(&args.file, r, filter).context("terminal")
}
