//! The event list pane: its order, scroll position and selection, the rows on screen once
//! decoded, and the detail popup of the selected event. Drawn by [`render`].
//!
//! The list is virtual: its length comes from the worker's answer (matching events per chunk,
//! or the slowest events), and only the rows on screen are decoded, off the UI thread: the
//! list says which it lacks ([`List::want`]) and the app hands that request to the rows
//! worker ([`crate::worker::rows`]); a row not decoded yet shows as `…`. What the selected
//! event is linked to (a syscall's block requests, a block request's syscall), which the detail
//! popup shows, is looked up the same way ([`List::want_links`], [`crate::worker::links`]).

pub mod render;

use std::sync::Arc;

use iocap_filter::Compiled;
use iocap_format::Event;

use crate::action::Action;
use crate::layout::Layout;
use crate::panes::step_list;
use crate::worker::links::{self, Links, LinksQuery};
use crate::worker::query::{Answer, EventRef, SLOWEST};
use crate::worker::rows::{Counting, Rows, RowsQuery};

/// Event list order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sort {
    /// In time order, as recorded.
    Time,
    /// Slowest first (the [`SLOWEST`] slowest of the view).
    Latency,
}

/// The list's state.
pub struct List {
    /// The list's order.
    pub sort: Sort,
    /// How many of the slowest events a latency-sorted list keeps ([`SLOWEST`]).
    pub slowest: usize,
    /// First row shown.
    pub top: usize,
    /// The selected row.
    pub sel: usize,
    /// Events decoded so far, near the screen: (index in the list, event), by index.
    pub rows: Vec<(usize, Event)>,
    /// Generation of the newest rows request: a reply to an older one is dropped.
    rows_gen: u64,
    /// The selected event's detail popup is open.
    pub detail: bool,
    /// The latest lookup of what an event is linked to (the detail popup shows it while that
    /// event is selected).
    pub links: Option<Links>,
    /// Generation of the newest lookup: a reply to an older one is dropped.
    links_gen: u64,
    /// The event of the newest lookup, asked and not yet answered.
    links_asked: Option<Event>,
}

/// What an update of the list asks of the app.
#[must_use]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Listed {
    /// Nothing for the app to do.
    Nothing,
    /// Other rows are on screen: ask for those not decoded ([`List::want`]).
    Scrolled,
    /// The order changed: a new question (the slowest events are kept only when sorted by
    /// them), then the rows.
    Resorted,
}

impl Default for List {
    fn default() -> List {
        List {
            sort: Sort::Time,
            slowest: SLOWEST,
            top: 0,
            sel: 0,
            rows: Vec::new(),
            rows_gen: 0,
            detail: false,
            links: None,
            links_gen: 0,
            links_asked: None,
        }
    }
}

impl List {
    /// Events the list can show, by `answer`.
    pub fn len(&self, answer: Option<&Answer>) -> usize {
        match (answer, self.sort) {
            (None, _) => 0,
            (Some(a), Sort::Time) => a.matched as usize,
            (Some(a), Sort::Latency) => a.slowest.len(),
        }
    }

    /// The decoded event at list index `i`, if it has arrived.
    pub fn row(&self, i: usize) -> Option<&Event> {
        self.rows
            .binary_search_by_key(&i, |&(j, _)| j)
            .ok()
            .map(|k| &self.rows[k].1)
    }

    /// How many of the slowest events the question should keep for this list.
    pub fn slowest_wanted(&self) -> usize {
        match self.sort {
            Sort::Time => 0,
            Sort::Latency => self.slowest,
        }
    }

    /// The list's part of `action`: moving the selection (when the pane has the focus), the
    /// order, the detail popup.
    pub fn update(&mut self, action: &Action, answer: Option<&Answer>, layout: &Layout) -> Listed {
        match *action {
            Action::Move(m) => {
                let page = layout.list_rows.max(1);
                self.sel = step_list(self.sel, self.len(answer), m, page);
                if self.sel < self.top {
                    self.top = self.sel;
                } else if self.sel >= self.top + page {
                    self.top = self.sel + 1 - page;
                }
                Listed::Scrolled
            }
            Action::Sort => {
                self.sort = match self.sort {
                    Sort::Time => Sort::Latency,
                    Sort::Latency => Sort::Time,
                };
                self.top = 0;
                self.sel = 0;
                self.forget();
                Listed::Resorted
            }
            Action::Activate => {
                self.detail = !self.detail && self.len(answer) > 0;
                Listed::Nothing
            }
            _ => Listed::Nothing,
        }
    }

    /// A new answer: keep the selection on a row that exists, and forget the rows decoded
    /// for the previous one, which may not be rows of this one.
    pub fn answered(&mut self, answer: &Answer) {
        let n = self.len(Some(answer));
        self.sel = self.sel.min(n.saturating_sub(1));
        self.top = self.top.min(self.sel);
        self.forget();
    }

    /// Rows arrived from the rows worker: shown unless a newer request superseded them.
    /// Returns the error to tell, when a chunk could not be read.
    pub fn arrived(&mut self, rows: Rows) -> Option<String> {
        if rows.gen != self.rows_gen {
            return None;
        }
        self.rows = rows.rows;
        rows.error
    }

    /// The selected event, once decoded.
    pub fn selected(&self) -> Option<&Event> {
        self.row(self.sel)
    }

    /// What `e` is linked to, if it was looked up.
    pub fn links_of(&self, e: &Event) -> Option<&Links> {
        self.links.as_ref().filter(|l| l.of == *e)
    }

    /// The lookup the detail popup needs: what the selected event is linked to, unless it has
    /// no links, was looked up already or is being looked up.
    pub fn want_links(&mut self) -> Option<LinksQuery> {
        if !self.detail {
            return None;
        }
        let e = self.selected()?.clone();
        if !links::has_links(&e) || self.links_of(&e).is_some() || self.links_asked.as_ref() == Some(&e) {
            return None;
        }
        self.links_gen += 1;
        self.links_asked = Some(e.clone());
        Some(LinksQuery {
            gen: self.links_gen,
            event: e,
        })
    }

    /// A lookup's reply: kept unless a newer lookup superseded it.
    pub fn linked(&mut self, links: Links) {
        if links.gen != self.links_gen {
            return;
        }
        self.links_asked = None;
        self.links = Some(links);
    }

    /// Drop the decoded rows, and the replies still to come for them: they belong to another
    /// answer or order.
    pub fn forget(&mut self) {
        self.rows.clear();
        self.rows_gen += 1;
    }

    /// The request for the rows on screen not decoded yet, if any, for `answer` under `filter`.
    pub fn want(
        &mut self,
        answer: Option<&Answer>,
        filter: Option<&Arc<Compiled>>,
        layout: &Layout,
    ) -> Option<RowsQuery> {
        let visible = layout.list_rows;
        let Some(a) = answer else {
            self.forget();
            return None;
        };
        let refs: Vec<(usize, EventRef)> = match self.sort {
            Sort::Latency => (self.top..(self.top + visible).min(a.slowest.len()))
                .map(|i| (i, EventRef::of(&a.slowest[i])))
                .collect(),
            Sort::Time => {
                let mut out = Vec::new();
                let mut before = 0u64;
                let want = self.top as u64..(self.top + visible) as u64;
                for &(chunk, n) in &a.per_chunk {
                    if before + n > want.start && before < want.end {
                        let from = want.start.saturating_sub(before);
                        let to = (want.end - before).min(n);
                        for k in from..to {
                            out.push(((before + k) as usize, EventRef { chunk, row: k as usize }));
                        }
                    }
                    before += n;
                    if before >= want.end {
                        break;
                    }
                }
                out
            }
        };
        if refs.iter().all(|&(i, _)| self.row(i).is_some()) {
            return None;
        }
        self.rows_gen += 1;
        Some(RowsQuery {
            gen: self.rows_gen,
            answer: a.gen,
            counting: match self.sort {
                Sort::Time => Counting::Matching,
                Sort::Latency => Counting::Rows,
            },
            refs,
            filter: filter.cloned(),
            start: a.spectro.origin(),
            end: a.spectro.end(),
        })
    }
}
