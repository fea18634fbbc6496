//! The event list pane: its order, scroll position and selection, the rows on screen once
//! decoded, and the detail popup of the selected event. Drawn by [`crate::ui::events`].
//!
//! The list is virtual: its length comes from the worker's answer (matching events per chunk,
//! or the slowest events), and only the rows on screen are decoded, off the UI thread: the
//! list says which it lacks ([`List::want`]) and the app hands that request to the rows
//! worker ([`crate::worker::rows`]); a row not decoded yet shows as `…`. What the selected
//! event is linked to (a syscall's block requests, a block request's syscall), which the detail
//! popup shows, is looked up the same way ([`List::want_links`], [`crate::worker::links`]).


use std::sync::Arc;

use iocap_filter::Compiled;
use iocap_format::{Cause, Class, Event, Reader};

use crate::action::Action;
use crate::layout::Layout;
use crate::panes::step_list;
use crate::worker::links::{self, Links, LinksQuery, Target, Want};
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
    /// The call the last jump went from to one of its block requests, and which one: a jump
    /// from the same call goes on to the next.
    jumped_from: Option<(Event, usize)>,
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
            jumped_from: None,
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
    /// for the previous one, which may not be rows of this one, and where the last jump went.
    /// `grown`: the answer is the previous one's question of a capture grown since, whose list
    /// in time order only has rows added at its end: its decoded rows stay.
    pub fn answered(&mut self, answer: &Answer, grown: bool) {
        let n = self.len(Some(answer));
        self.sel = self.sel.min(n.saturating_sub(1));
        self.top = self.top.min(self.sel);
        if grown && self.sort == Sort::Time {
            return;
        }
        // Another list: a jump from a call starts again at its first request.
        self.jumped_from = None;
        self.forget();
    }

    /// Another capture (the next file of a rotation): nothing selected, decoded or looked up,
    /// in the same order; replies still to come for the last one are dropped.
    pub fn restart(&mut self) {
        self.top = 0;
        self.sel = 0;
        self.detail = false;
        self.links = None;
        self.links_gen += 1;
        self.links_asked = None;
        self.jumped_from = None;
        self.forget();
    }

    /// The selection on the last row, which the last page shows (the newest event of a capture
    /// being recorded, in time order).
    pub fn follow_end(&mut self, answer: &Answer, layout: &Layout) {
        let n = self.len(Some(answer));
        self.sel = n.saturating_sub(1);
        self.top = n.saturating_sub(layout.list_rows.max(1));
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
    /// no links, was looked up already or is being looked up. `filter` is compiled against
    /// `reader`, the capture looked in.
    pub fn want_links(
        &mut self,
        answer: Option<&Answer>,
        reader: &Arc<Reader>,
        filter: Option<&Arc<Compiled>>,
    ) -> Option<LinksQuery> {
        if !self.detail {
            return None;
        }
        let e = self.selected()?.clone();
        if !links::has_links(&e) || self.links_of(&e).is_some() || self.links_asked.as_ref() == Some(&e) {
            return None;
        }
        Some(self.lookup(e, Want::Detail, answer, reader, filter))
    }

    /// A lookup of what `e` is linked to, superseding the earlier ones.
    fn lookup(
        &mut self,
        e: Event,
        want: Want,
        answer: Option<&Answer>,
        reader: &Arc<Reader>,
        filter: Option<&Arc<Compiled>>,
    ) -> LinksQuery {
        self.links_gen += 1;
        self.links_asked = Some(e.clone());
        LinksQuery {
            gen: self.links_gen,
            reader: Arc::clone(reader),
            answer: answer.map_or(0, |a| a.gen),
            event: e,
            want,
            filter: filter.cloned(),
            start: answer.map_or(0, |a| a.spectro.origin()),
            end: answer.map_or(0, |a| a.spectro.end()),
        }
    }

    /// The jump key: the lookup of where the event linked to the selected one is (a block
    /// request's call; a call's first block request, or the next one when the last jump went
    /// from this call), or why there is nothing to look for.
    pub fn jump(
        &mut self,
        answer: Option<&Answer>,
        reader: &Arc<Reader>,
        filter: Option<&Arc<Compiled>>,
    ) -> Result<LinksQuery, String> {
        let Some(e) = self.selected().cloned() else {
            return Err("no event selected".into());
        };
        let k = match e.class {
            Class::Block => match Cause::from_code(e.cause) {
                Cause::None => return Err("this block request was issued outside any traced call".into()),
                Cause::Writeback => return Err("a flusher wrote this back: there is no call to go to".into()),
                Cause::Syscall | Cause::IoUring | Cause::Journal if e.link > e.ts => {
                    return Err("this block request's link is damaged (before boot)".into())
                }
                Cause::Syscall | Cause::IoUring | Cause::Journal => 0,
            },
            Class::Journal if e.disk_reqs == 0 => return Err("this journal commit issued no block request".into()),
            Class::Syscall | Class::IoUring if e.disk_reqs == 0 && e.waker == 0 => {
                return Err(if e.wait > 0 {
                    "this call issued no block request, and an interrupt or an idle CPU woke it".into()
                } else {
                    "this call issued no block request and never slept".into()
                })
            }
            // A call that issued no request: what its waker was doing.
            Class::Syscall | Class::IoUring if e.disk_reqs == 0 => 0,
            Class::Syscall | Class::IoUring | Class::Journal => match &self.jumped_from {
                Some((from, k)) if *from == e => k.saturating_add(1),
                _ => 0,
            },
        };
        Ok(self.lookup(e, Want::Jump(k), answer, reader, filter))
    }

    /// A jump's reply: the selection on the linked event, or why it is not in the list.
    fn land(&mut self, l: &Links, answer: Option<&Answer>, layout: &Layout, arch: &str) -> Result<(), String> {
        let from = &l.of;
        let what = |t: &Target| match from.class {
            Class::Block => format!("its {}", kind(&t.linked.event, arch)),
            _ if from.disk_reqs == 0 => format!("its waker's {}", kind(&t.linked.event, arch)),
            _ => format!("block request {} of {}", t.nth + 1, l.found),
        };
        let Some(t) = &l.target else {
            return Err(match (&l.error, from.class) {
                (Some(e), _) => format!("cannot look: {e}"),
                (None, Class::Block) if !l.complete => "its call was not found in the chunks searched".into(),
                (None, Class::Block) => "its call is not in the capture (dropped, or before it began)".into(),
                (None, _) if from.disk_reqs == 0 => {
                    format!("thread {}, which woke it, has no event during the call in the capture", from.waker)
                }
                (None, _) => "its block requests are not in the capture".into(),
            });
        };
        if from.class != Class::Block && from.disk_reqs > 0 {
            // Pressed again, the jump goes on to the next request, even past one not listed.
            self.jumped_from = Some((from.clone(), t.nth));
        }
        let Some(a) = answer.filter(|a| a.gen == l.answer) else {
            return Err("the view changed meanwhile: press g again".into());
        };
        let (chunk, row) = (t.linked.chunk, t.linked.row);
        let index = match (self.sort, t.rank) {
            (_, None) => {
                let ts = t.linked.event.ts;
                let where_ = if (a.spectro.origin()..a.spectro.end()).contains(&ts) {
                    "hidden by the filter"
                } else {
                    "outside the view"
                };
                return Err(format!("{} is {where_}", what(t)));
            }
            (Sort::Time, Some(rank)) => {
                let before: u64 = a.per_chunk.iter().take_while(|&&(c, _)| c < chunk).map(|&(_, n)| n).sum();
                usize::try_from(before).ok().and_then(|b| b.checked_add(rank))
            }
            (Sort::Latency, Some(_)) => a
                .slowest
                .iter()
                .position(|s| (s.chunk as usize, s.row as usize) == (chunk, row)),
        };
        let Some(index) = index.filter(|&i| i < self.len(answer)) else {
            return Err(format!("{} is not among the {} slowest listed", what(t), a.slowest.len()));
        };
        self.sel = index;
        let page = layout.list_rows.max(1);
        if self.sel < self.top || self.sel >= self.top + page {
            // The target a third of the way down, with what led to it above.
            self.top = self.sel.saturating_sub(page / 3);
        }
        Ok(())
    }

    /// A lookup's reply, unless a newer lookup superseded it: kept for the detail popup, and
    /// for a jump, the selection moved onto the linked event. What the app is to do, and what
    /// to tell (where the jump went, or why it could not), naming calls as the syscall table
    /// of `arch` does.
    pub fn linked(
        &mut self,
        links: Links,
        answer: Option<&Answer>,
        layout: &Layout,
        arch: &str,
    ) -> (Listed, Option<String>) {
        if links.gen != self.links_gen {
            return (Listed::Nothing, None);
        }
        self.links_asked = None;
        let done = match links.want {
            Want::Detail => (Listed::Nothing, None),
            Want::Jump(_) => match self.land(&links, answer, layout, arch) {
                Ok(()) => {
                    let to = links.target.as_ref().map(|t| match links.of.class {
                        Class::Block => format!("went to the {} that issued it", kind(&t.linked.event, arch)),
                        _ if links.of.disk_reqs == 0 => format!("went to its waker's {}", kind(&t.linked.event, arch)),
                        _ => format!("went to block request {} of {}", t.nth + 1, links.found),
                    });
                    (Listed::Scrolled, to)
                }
                Err(why) => (Listed::Nothing, Some(why)),
            },
        };
        self.links = Some(links);
        done
    }

    /// Drop the decoded rows, and the replies still to come for them: they belong to another
    /// answer or order.
    pub fn forget(&mut self) {
        self.rows.clear();
        self.rows_gen += 1;
    }

    /// The request for the rows on screen not decoded yet, if any, for `answer` under `filter`
    /// (compiled against `reader`, the capture read).
    pub fn want(
        &mut self,
        answer: Option<&Answer>,
        reader: &Arc<Reader>,
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
            reader: Arc::clone(reader),
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

/// What kind of event `e` is, for a note: `pread64`, `io_uring read`, `block request`; calls
/// named by the syscall table of `arch`.
fn kind(e: &Event, arch: &str) -> String {
    match e.class {
        Class::Syscall => iocap_filter::fields::evt_type(arch, e.class, e.nr).into_owned(),
        Class::IoUring => format!("io_uring {}", iocap_filter::fields::evt_type(arch, e.class, e.nr)),
        Class::Block => "block request".into(),
        Class::Journal => "journal commit".into(),
    }
}
