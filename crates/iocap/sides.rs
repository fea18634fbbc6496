//! The two sides of a comparison, as `iocap compare` and `iocap export --format svg` take them:
//! capture A, capture B (or A again), filter words both sides share, and each side's own
//! filter (`--a`, `--b`) and-ed with them ([`Sides::open`]).

use std::path::{Path, PathBuf};

use crate::{input, UsageError};

/// Each side's own filter, flattened into the commands that compare.
#[derive(clap::Args, Debug, Default)]
pub struct SideFilters {
    /// Filter of side A only (and-ed with the filter words).
    #[arg(long = "a", value_name = "FILTER")]
    pub filter_a: Option<String>,
    /// Filter of side B only (and-ed with the filter words).
    #[arg(long = "b", value_name = "FILTER")]
    pub filter_b: Option<String>,
}

impl SideFilters {
    /// Whether neither side has a filter of its own.
    pub fn is_empty(&self) -> bool {
        self.filter_a.is_none() && self.filter_b.is_none()
    }
}

/// What the command line says the two sides are.
pub struct Sides<'a> {
    /// Capture A (a file or `-`, with its `--save`).
    pub a: &'a input::Capture,
    /// Capture B; `None` is capture A again, told apart by `--a`/`--b`.
    pub b: Option<&'a Path>,
    /// The filter words both sides take.
    pub words: &'a [String],
    /// Each side's own filter.
    pub own: &'a SideFilters,
}

/// One side, opened with its filter compiled.
pub struct Side {
    /// The capture's path as given on the command line (not escaped: print it through
    /// `escape`).
    pub capture: PathBuf,
    /// Its name without the directory, for a heading ([`input::Capture::short_name`]).
    pub name: String,
    pub input: input::Input,
}

impl Sides<'_> {
    /// Open both sides before either is scanned, so a bad filter or file on side B is said at
    /// once. One capture with two filters is opened once (`-` can only be read once) and its
    /// reader shared. Without a capture B and without `--a` or `--b`, the sides could only be
    /// the same: a usage error naming `cmd`.
    pub fn open(&self, cmd: &str) -> anyhow::Result<[Side; 2]> {
        if self.b.is_none() && self.own.is_empty() {
            return Err(UsageError(format!(
                "{cmd} needs two captures, or one capture with --a FILTER and/or --b FILTER"
            ))
            .into());
        }
        if self.a.is_stdin() && self.b.is_some_and(|b| b == std::path::Path::new("-")) {
            return Err(UsageError(format!(
                "{cmd} - -: standard input is one capture and is read once; compare it with a file, or \
                 one capture with --a FILTER and --b FILTER"
            ))
            .into());
        }
        let shared = self.words.join(" ");
        let filter_of = |own: &Option<String>| [both(&shared, own.as_deref().unwrap_or(""))];
        let a = input::open(self.a, &filter_of(&self.own.filter_a), true)?;
        let b = match self.b {
            Some(file) => {
                let capture = input::Capture {
                    file: file.to_path_buf(),
                    save: None,
                };
                Side {
                    name: capture.short_name(),
                    input: input::open(&capture, &filter_of(&self.own.filter_b), true)?,
                    capture: capture.file,
                }
            }
            None => Side {
                capture: self.a.file.clone(),
                name: self.a.short_name(),
                input: a.with_filter(&filter_of(&self.own.filter_b))?,
            },
        };
        let a = Side {
            capture: self.a.file.clone(),
            name: self.a.short_name(),
            input: a,
        };
        Ok([a, b])
    }
}

/// The filter words of both sides and-ed with one side's own filter.
fn both(shared: &str, own: &str) -> String {
    match (shared.trim().is_empty(), own.trim().is_empty()) {
        (true, _) => own.to_string(),
        (false, true) => shared.to_string(),
        (false, false) => format!("({shared}) and ({own})"),
    }
}
