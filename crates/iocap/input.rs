//! What every reading command starts from: the capture named on the command line, a file or
//! `-` for standard input ([`Capture`]), opened with its filter compiled once ([`open`]: the
//! filter is the words after the file, as sysdig and tcpdump take it), a field named on the
//! command line ([`field_arg`]), how many threads a scan uses, and what to say when the filter
//! matched nothing ([`Input::say_nothing_matched`]).

use std::path::{Path, PathBuf};

use anyhow::Context;
use iocap_analysis::scan;
use iocap_filter::fields::{self, FieldInfo};
use iocap_filter::{Compiled, Filter};
use iocap_format::Reader;

#[cfg(unix)]
use crate::stream::{self, Stream};
use crate::{say, UsageError};

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
    /// The copy of standard input the capture is read from, for `-`.
    #[cfg(unix)]
    pub stream: Option<Stream>,
}

/// Parse the filter words (a usage error, exit 2, when they do not parse), then open the
/// capture (as [`Capture::open`] does) and compile the filter against it.
pub fn open(capture: &Capture, words: &[String], whole: bool) -> anyhow::Result<Input> {
    let (src, parsed) = parse(words)?;
    let opened = capture.open(whole)?;
    let filter = parsed.compile(opened.reader.meta(), opened.reader.tables());
    Ok(Input {
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
        let filter = parsed.compile(reader.meta(), reader.tables());
        Ok(Input {
            reader,
            filter,
            parsed,
            src,
            #[cfg(unix)]
            stream: None,
        })
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

/// Threads for a scan of `r`: one per core, no more than its chunks.
pub fn threads(r: &Reader) -> usize {
    scan::default_threads(r.chunks().len())
}
