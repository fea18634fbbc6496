//! The filter bar: the filter in force and the ones before it (for undo), and while `/` has it
//! open the text being typed, parsed and checked on every edit (compiled only on Enter), with the history under ↑/↓ and
//! readline's editing keys. A line wider than the bar scrolls to keep the caret in view
//! ([`line::window`]). Drawn by [`crate::ui::filter_bar`].

pub mod line;

use std::sync::Arc;

use iocap_filter::{Compiled, Expr, FilterError};
use iocap_format::Reader;

use crate::action::{Action, Edit};
use crate::history::History;

/// The bar while it is open.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Input {
    /// The text being typed.
    pub text: String,
    /// Byte offset of the caret, on a char boundary.
    pub caret: usize,
    /// What is wrong with `text`, checked on every edit.
    pub error: Option<FilterError>,
    /// Byte offset where the part of `text` shown starts, when it is wider than the bar: kept
    /// from one keystroke to the next so the text holds still while the caret moves inside
    /// the bar ([`FilterBar::fit`]).
    pub scroll: usize,
}

/// What the open bar shows before its text.
pub const PROMPT: &str = "/ ";

/// The filter bar's state.
pub struct FilterBar {
    /// The filter in force, as the user sees it.
    pub applied: String,
    compiled: Option<Arc<Compiled>>,
    /// Earlier applied filters, for undo.
    pub undo: Vec<String>,
    /// The text being edited while the bar is open; `None` while it is closed.
    pub input: Option<Input>,
    /// Filters applied before, across runs, for ↑/↓.
    pub history: History,
    /// The text the last kill (Ctrl-U, Ctrl-K, Ctrl-W, ...) deleted, for Ctrl-Y.
    killed: String,
}

/// What an update of the filter bar did.
#[must_use]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Filtered {
    /// Nothing outside the bar changed (though its height may have).
    No,
    /// Another filter is in force: a new question.
    Applied,
    /// Undo found nothing to undo.
    NothingToUndo,
}

impl FilterBar {
    /// The bar with `text` in force (it must compile against `reader`). For tests.
    #[cfg(feature = "testing")]
    pub fn new(text: &str, reader: &Reader, history: History) -> Result<FilterBar, FilterError> {
        Ok(FilterBar::compiled_already(text, compile(text, reader)?, history))
    }

    /// The bar with `text` in force, compiled already (by [`compile`], against the same capture).
    pub fn compiled_already(text: &str, compiled: Option<Arc<Compiled>>, history: History) -> FilterBar {
        FilterBar {
            applied: text.trim().to_owned(),
            compiled,
            undo: Vec::new(),
            input: None,
            history,
            killed: String::new(),
        }
    }

    /// The filter in force, compiled; `None` matches everything.
    pub fn compiled(&self) -> Option<&Arc<Compiled>> {
        self.compiled.as_ref()
    }

    /// Compile the filter in force again, against `reader`: a capture being recorded whose
    /// tables grew (compiling judges every process and file entry once, so new ones must be).
    /// It compiled before against fewer entries; should it not now, the old one stays.
    pub fn recompile(&mut self, reader: &Reader) {
        if let Ok(c) = compile(&self.applied, reader) {
            self.compiled = c;
        }
    }

    /// Lines the bar takes: three while it shows an error and its help.
    pub fn lines(&self) -> u16 {
        match &self.input {
            Some(i) if i.error.is_some() => 3,
            _ => 1,
        }
    }

    /// The bar's part of `action`: opening, editing, applying or cancelling, and undo.
    pub fn update(&mut self, action: &Action, reader: &Reader) -> Filtered {
        match action {
            Action::EditFilter => {
                self.open();
                Filtered::No
            }
            Action::FilterEdit(e) => {
                self.edit(*e);
                Filtered::No
            }
            Action::FilterPaste(text) => {
                if self.input.is_none() {
                    self.open();
                }
                if let Some(input) = self.input.as_mut() {
                    // One line: a paste's line breaks and tabs are spaces, other control
                    // characters (an escape sequence in a copied terminal line) are dropped.
                    let clean: String = text
                        .chars()
                        .filter_map(|c| match c {
                            '\n' | '\r' | '\t' => Some(' '),
                            c if c.is_control() => None,
                            c => Some(c),
                        })
                        .collect();
                    input.text.insert_str(input.caret, &clean);
                    input.caret += clean.len();
                    input.error = check(&input.text);
                }
                Filtered::No
            }
            Action::FilterSubmit => {
                let Some(input) = self.input.take() else {
                    return Filtered::No;
                };
                match self.apply(input.text.clone(), true, reader) {
                    Ok(()) => Filtered::Applied,
                    Err(e) => {
                        // Keep the bar open on the mistake.
                        self.input = Some(Input {
                            error: Some(e),
                            ..input
                        });
                        Filtered::No
                    }
                }
            }
            Action::FilterCancel => {
                self.input = None;
                self.history.reset();
                Filtered::No
            }
            Action::Undo => match self.undo.pop() {
                Some(previous) => {
                    // It compiled when it was in force, and the capture is the same.
                    let _ = self.apply(previous, false, reader);
                    Filtered::Applied
                }
                None => Filtered::NothingToUndo,
            },
            _ => Filtered::No,
        }
    }

    /// Scroll the open bar's text so that the caret shows in a bar `width` cells wide (the
    /// prompt included): after every edit and resize.
    pub fn fit(&mut self, width: u16) {
        if let Some(i) = self.input.as_mut() {
            let cells = usize::from(width).saturating_sub(line::str_width(PROMPT));
            i.scroll = line::window(&i.text, i.caret, i.scroll, cells).from;
        }
    }

    /// Narrow the filter in force by `clause` (a region, a breakdown row), for undo to take
    /// back.
    pub fn narrow(&mut self, clause: &str, reader: &Reader) -> Result<(), FilterError> {
        self.apply(joined(&self.applied, clause), true, reader)
    }

    /// Make `text` the filter in force (remembering the old one for undo when `record`).
    fn apply(&mut self, text: String, record: bool, reader: &Reader) -> Result<(), FilterError> {
        let text = text.trim().to_owned();
        let compiled = compile(&text, reader)?;
        if record && text != self.applied {
            self.undo.push(std::mem::replace(&mut self.applied, text.clone()));
            self.history.push(&text);
        } else {
            self.applied = text;
        }
        self.compiled = compiled;
        self.history.reset();
        Ok(())
    }

    /// Open the bar on the filter in force.
    fn open(&mut self) {
        self.input = Some(Input {
            caret: self.applied.len(),
            text: self.applied.clone(),
            error: None,
            scroll: 0,
        });
        self.history.reset();
    }

    fn edit(&mut self, e: Edit) {
        let Some(input) = self.input.as_mut() else { return };
        let (text, caret) = (&input.text, input.caret);
        // What to delete, as a range of `text`, for the kills.
        let kill = match e {
            Edit::KillToStart => Some(0..caret),
            Edit::KillToEnd => Some(caret..text.len()),
            Edit::KillToSpace => Some(line::space_left(text, caret)..caret),
            Edit::KillWordBack => Some(line::word_left(text, caret)..caret),
            Edit::KillWordForward => Some(caret..line::word_right(text, caret)),
            _ => None,
        };
        match e {
            Edit::Insert(c) if !c.is_control() => {
                input.text.insert(input.caret, c);
                input.caret += c.len_utf8();
            }
            Edit::Insert(_) => return,
            Edit::Backspace => {
                let p = line::prev(&input.text, input.caret);
                input.text.replace_range(p..input.caret, "");
                input.caret = p;
            }
            Edit::Delete => {
                let n = line::next(&input.text, input.caret);
                input.text.replace_range(input.caret..n, "");
            }
            Edit::Left => input.caret = line::prev(&input.text, input.caret),
            Edit::Right => input.caret = line::next(&input.text, input.caret),
            Edit::Home => input.caret = 0,
            Edit::End => input.caret = input.text.len(),
            Edit::WordLeft => input.caret = line::word_left(&input.text, input.caret),
            Edit::WordRight => input.caret = line::word_right(&input.text, input.caret),
            Edit::KillToStart | Edit::KillToEnd | Edit::KillToSpace | Edit::KillWordBack | Edit::KillWordForward => {
                let Some(range) = kill.filter(|r| !r.is_empty()) else { return };
                self.killed = input.text[range.clone()].to_owned();
                input.text.replace_range(range.clone(), "");
                input.caret = range.start;
            }
            Edit::Yank => {
                input.text.insert_str(input.caret, &self.killed);
                input.caret += self.killed.len();
            }
            Edit::Older | Edit::Newer => {
                let h = if e == Edit::Older {
                    self.history.older()
                } else {
                    self.history.newer()
                };
                let text = h.map_or_else(|| self.applied.clone(), str::to_owned);
                input.caret = text.len();
                input.text = text;
            }
        }
        input.error = check(&input.text);
    }
}

/// `filter` narrowed by `clause`: `filter and clause`, the filter in parentheses when its
/// loosest operator is `or`.
pub fn joined(filter: &str, clause: &str) -> String {
    if filter.is_empty() {
        clause.to_owned()
    } else if loosest_is_or(filter) {
        format!("({filter}) and {clause}")
    } else {
        // `and` binds as tightly as anything in it: no parentheses to read past.
        format!("{filter} and {clause}")
    }
}

/// Whether `text` is an `or` at its top level (or does not parse): what needs parentheses
/// before ` and ...` is added to it.
fn loosest_is_or(text: &str) -> bool {
    iocap_filter::Filter::parse(text).map_or(true, |f| matches!(f.expr(), Expr::Or(..)))
}

/// What is wrong with `text`, as typed: parsed and checked against the fields, not compiled.
/// Compiling reads the capture's tables (a million files take tens of ms), which only Enter
/// needs; nothing it finds is an error the text has.
fn check(text: &str) -> Option<FilterError> {
    if text.trim().is_empty() {
        return None;
    }
    iocap_filter::Filter::parse(text).err()
}

/// Parse, check and compile `text` against this capture; `None` for an empty filter.
pub fn compile(text: &str, reader: &Reader) -> Result<Option<Arc<Compiled>>, FilterError> {
    compile_from(text, reader, reader.meta().start_ts)
}

/// [`compile`], `evt.time` counted from `origin` (ns of the capture's boot clock) rather than
/// from the capture's start: a comparison's side A, laid on side B's time.
pub fn compile_from(text: &str, reader: &Reader, origin: u64) -> Result<Option<Arc<Compiled>>, FilterError> {
    if text.trim().is_empty() {
        return Ok(None);
    }
    let f = iocap_filter::Filter::parse(text)?;
    Ok(Some(Arc::new(f.compile_from(reader.meta(), reader.tables(), origin))))
}
