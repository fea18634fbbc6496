//! `-f`: a report read on as its capture grows (`events -f`, `iostat -f`), the `tail -f` of
//! a recording.
//!
//! [`follow`] hands a command the chunks each look at the capture added
//! ([`iocap_format::Reader::refresh`]), every [`POLL`], until the recording is finished (its
//! index and trailer are written, and no next file of a rotation comes), its writer dies
//! without finishing it (an error, said on stderr: what came is all there will be), or Ctrl-C.
//! With `-C`, once the recorder has finished a file the follower goes on in the next, which
//! the finished file's header names ([`iocap_format::Meta::next_path`]), as the viewer does.
//! Whether anyone still writes is the recorder's lock ([`Liveness`]); a file no recorder holds
//! and that is not finished (a shell's redirect of `record -w -`) is taken for one still being
//! written, with a note, as only the user knows it grows.

use std::collections::HashSet;
use std::ops::{ControlFlow, Range};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::bail;
use iocap_format::{Liveness, Reader};

use crate::input::{Capture, Input};
use crate::output::FileId;
use crate::{say, signals};

/// How often the capture is looked at: with the recorder's flushes (at least every 500 ms), an
/// event is printed within about 0.7 s of its end.
pub const POLL: Duration = Duration::from_millis(200);

/// How long a finished file's successor in a rotation may take to appear (the viewer waits as
/// long): the recorder starts it as it finishes this one, so it is there at once unless the
/// recording stopped with this file.
const NEXT_FILE_WAIT: Duration = Duration::from_secs(1);

/// What [`follow`] tells the command at each look.
pub struct Look<'a> {
    /// The capture as far as it is read, its filter compiled against its tables as they are:
    /// with `-C`, the file of the rotation being followed.
    pub input: &'a Input,
    /// The files of the rotation followed before it, finished, oldest first.
    pub earlier: &'a [Input],
    /// The chunks of `input` added since the last look (every chunk at the first look at a file).
    pub new: Range<usize>,
    /// Whether the recording is finished now: nothing will come after these chunks.
    pub finished: bool,
}

/// Call `step` with what each look at `input` (opened from `capture`) brings, until the
/// recording is finished (after a last call, `finished`), `step` breaks, or Ctrl-C (`Ok`); or
/// until its writer dies without finishing it (an error saying so, after a last call with
/// what it left).
pub fn follow(
    input: &mut Input,
    capture: &Capture,
    mut step: impl FnMut(Look<'_>) -> anyhow::Result<ControlFlow<()>>,
) -> anyhow::Result<()> {
    signals::install(false);
    let mut name = capture.name();
    // A stream names no file its header could be next to.
    let mut path = (!capture.is_stdin()).then(|| capture.file.clone());
    // A file that ends with its trailer but was damaged reads as recovered whatever is
    // assumed: nothing more will come to it.
    let mut ended = false;
    if input.reader.liveness() == Liveness::Recovered && !is_stream(input) {
        input.reader.assume_writer()?;
        recompile(input);
        ended = input.reader.liveness() != Liveness::Live;
        if !ended {
            say(format_args!(
                "iocap: no recorder holds {name} and it is not finished: following it until it is (Ctrl-C stops)"
            ));
        }
    }
    let mut earlier: Vec<Input> = Vec::new();
    let mut done = 0;
    // The files followed so far: a rotation whose headers name its files in a loop (t.cap →
    // t.cap1 → t.cap → ...) ends at the first file read again, not in printing it again. (A
    // ring's removed file cannot lend its inode to a new one meanwhile: `earlier` keeps every
    // file followed open.)
    let mut followed: HashSet<FileId> = path.iter().filter_map(|p| FileId::at(p)).collect();
    // Which file the path named when it was opened, and whether its replacement was said.
    let mut reading = path.as_deref().and_then(FileId::at);
    let mut replaced_said = false;
    loop {
        let liveness = input.reader.liveness();
        let next = match (liveness, &path) {
            (Liveness::Finished, Some(p)) if !ended => next_file(&input.reader, p)?.filter(|(_, next)| {
                let new = FileId::at(next).is_some_and(|id| followed.insert(id));
                if !new {
                    say(format_args!(
                        "iocap: {} names {} as the next file, which was read already: the rotation loops; \
                         stopping there",
                        shown(p),
                        shown(next)
                    ));
                }
                new
            }),
            _ => None,
        };
        let finished = (ended || liveness == Liveness::Finished) && next.is_none();
        let look = Look {
            input,
            earlier: &earlier,
            new: done..input.reader.chunks().len(),
            finished,
        };
        done = look.new.end;
        if step(look)?.is_break() || finished {
            return Ok(());
        }
        if let Some((reader, p)) = next {
            let filter = input.parsed.compile(reader.meta(), reader.tables());
            let origin = reader.meta().start_ts;
            let old_reader = std::mem::replace(&mut input.reader, reader);
            let old_filter = std::mem::replace(&mut input.filter, filter);
            let old_origin = std::mem::replace(&mut input.origin, origin);
            earlier.push(Input {
                reader: old_reader,
                filter: old_filter,
                parsed: input.parsed.clone(),
                src: input.src.clone(),
                origin: old_origin,
                #[cfg(unix)]
                stream: None,
            });
            name = p.display().to_string();
            reading = FileId::at(&p);
            replaced_said = false;
            path = Some(p);
            done = 0;
            continue;
        }
        if liveness == Liveness::Recovered {
            bail!("{}", died(input, &name));
        }
        if !wait(POLL) {
            return Ok(());
        }
        // The path now names another file (renamed over, removed): what is read is still the
        // file that was opened, which only its recorder (if any) still writes. Said once.
        if let Some(p) = &path {
            if !replaced_said && FileId::at(p) != reading {
                replaced_said = true;
                say(format_args!(
                    "iocap: {} now names another file, or none: still following the file it named",
                    shown(p)
                ));
            }
        }
        let grown = input.reader.refresh()?;
        if grown.tables > 0 {
            // New processes and files must be judged by the filter too.
            recompile(input);
        }
    }
}

/// The file a finished capture's recording went on in (the next of a rotation, which its
/// header names), opened, and its path; `None` when it names none or none comes within
/// [`NEXT_FILE_WAIT`]. A next file that is there and cannot be read (out of descriptors, not a
/// capture) is an error: the recording goes on in it, and stopping here would present what
/// was read as the whole.
fn next_file(reader: &Reader, path: &Path) -> anyhow::Result<Option<(Reader, PathBuf)>> {
    let Some(next) = reader.meta().next_path(path) else {
        return Ok(None);
    };
    let waited = Instant::now();
    loop {
        match Reader::open_next(&next) {
            Ok(r) => return Ok(Some((r, next))),
            Err(iocap_format::Error::Io(e)) if e.kind() == std::io::ErrorKind::NotFound => {
                if waited.elapsed() >= NEXT_FILE_WAIT || !wait(POLL) {
                    return Ok(None);
                }
            }
            Err(e) => bail!("{}, where the recording goes on, cannot be read: {e}", shown(&next)),
        }
    }
}

/// A path as said in a message: escaped (a header names it, and headers are not to be trusted).
fn shown(path: &Path) -> String {
    iocap_format::escape::escape(path.as_os_str().as_encoded_bytes())
}

/// Compile the filter again against the capture's tables as they are now.
fn recompile(input: &mut Input) {
    input.filter = input.parsed.compile(input.reader.meta(), input.reader.tables());
}

/// Sleep `d`, or less when Ctrl-C comes: whether it did not.
fn wait(d: Duration) -> bool {
    let step = Duration::from_millis(25);
    let mut left = d;
    while !left.is_zero() {
        if signals::stop_requested() {
            return false;
        }
        std::thread::sleep(step.min(left));
        left = left.saturating_sub(step);
    }
    !signals::stop_requested()
}

fn is_stream(input: &Input) -> bool {
    #[cfg(unix)]
    return input.stream.is_some();
    #[cfg(not(unix))]
    false
}

/// Why following ended before the capture was finished.
fn died(input: &Input, name: &str) -> String {
    let lost = input.reader.recovery().map(|r| format!(" ({r})")).unwrap_or_default();
    #[cfg(unix)]
    if let Some(s) = &input.stream {
        return match s.failure() {
            Some(why) => format!("{name}: {why}{lost}: nothing more will come"),
            None => format!("{name} ended before the capture was finished{lost}: nothing more will come"),
        };
    }
    format!("the recorder of {name} stopped without finishing it{lost}: nothing more will come")
}
