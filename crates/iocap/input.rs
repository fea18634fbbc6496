//! What every reading command starts from: the capture opened with its filter compiled once
//! ([`open`]: the filter is the words after the file, as sysdig and tcpdump take it), a field
//! named on the command line ([`field_arg`]), how many threads a scan uses, and what to say
//! when the filter matched nothing ([`Input::say_nothing_matched`]).

use std::path::Path;

use anyhow::Context;
use iocap_analysis::scan;
use iocap_filter::fields::{self, FieldInfo};
use iocap_filter::{Compiled, Filter};
use iocap_format::Reader;

use crate::{say, UsageError};

/// A capture opened with a compiled filter.
pub struct Input {
    pub reader: Reader,
    pub filter: Compiled,
    /// The filter, checked (what [`Input::filter`] was compiled from).
    pub parsed: Filter,
    /// The filter's source, as typed.
    pub src: String,
}

/// Parse the filter words (a usage error, exit 2, when they do not parse), then open the
/// capture and compile the filter against it.
pub fn open(file: &Path, words: &[String]) -> anyhow::Result<Input> {
    let src = words.join(" ");
    let parsed = Filter::parse(&src).map_err(|e| UsageError(format!("bad filter: {}", e.render(&src))))?;
    let reader = Reader::open(file).with_context(|| format!("{}", file.display()))?;
    let filter = parsed.compile(reader.meta(), reader.tables());
    Ok(Input {
        reader,
        filter,
        parsed,
        src,
    })
}

impl Input {
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
