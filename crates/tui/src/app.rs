//! The viewer's state ([`App`]) and the only place it changes ([`App::update`]).
//!
//! The app is its panes' states side by side (the spectrogram's view, the filter bar, the
//! breakdown, the event list, the replay) with what they share: the capture, the layout, the
//! focus and the worker's latest answer. `update` hands an action to the panes it concerns;
//! each changes only itself and says what it needs from the others (a new question, rows,
//! a clause for the filter), which the app then does. Rendering borrows an `App` immutably
//! (see [`crate::ui`]).
//!
//! `update` never blocks on a scan: when the question changes (the view's rows, the filter,
//! the grouped field, the list's order) it bumps the generation and returns a [`Query`] in
//! its [`Effects`], which the event loop hands to the worker; the answer comes back later as
//! [`Action::Reply`]. The event list's rows on screen are asked for the same way
//! ([`crate::worker::rows`]): `update` reads no capture data at all.
//!
//! A capture being recorded arrives again and again, grown ([`Reply::Grown`], from
//! [`crate::worker::follow`]): the app takes the snapshot, compiles its filter again when the
//! tables grew, lets the view move on ([`View::grown`]), and asks the same question of the grown
//! capture ([`Query::extends`]), which the worker answers by scanning the new chunks only. While
//! it follows (from the start, and after End), the view and the list stay on the newest rows;
//! moving back in time stops that, End resumes it. With rotation, the recording goes on in
//! the next file ([`Reply::NextFile`]): the app shows that one from then on.

use std::sync::Arc;

use iocap_analysis::flame::{By, Node};
use iocap_analysis::units;
use iocap_analysis::{LatencyHist, Measure};
#[cfg(feature = "testing")]
use iocap_filter::FilterError;
use iocap_format::Liveness;
use ratatui::layout::Rect;

use crate::action::{Action, Mouse, Move, PickFor};
use crate::capture::Capture;
use crate::compare::Compare;
#[cfg(feature = "testing")]
use crate::history::History;
use crate::layout::{Layout, Orientation, Pane, Sides};
use crate::panes::breakdown::{Breakdown, Regrouped};
use crate::panes::events::{List, Listed, Sort};
use crate::panes::filter_bar::{FilterBar, Filtered};
use crate::panes::flame::FlamePane;
use crate::panes::picker::{Picked, Picker};
use crate::panes::spectrogram::grid::Grid;
use crate::panes::spectrogram::{Moved, View};
use crate::replay::{Replay, Step};
use crate::theme::{Palette, Theme};
use crate::worker::links::LinksQuery;
use crate::worker::query::{Answer, GroupRow, Query};
use crate::worker::rows::RowsQuery;
use crate::worker::{Grown, NextFile, Reply};

/// What an update asks of the workers: a query for the view (the exact picture, histogram,
/// breakdown and list of a changed view, filter, field or order), rows of the list to decode
/// and a lookup of what the selected event is linked to. A newer question supersedes an older
/// one, so an update asks at most one of each.
#[must_use]
#[derive(Default)]
pub struct Effects {
    /// The view's new question for the query worker; `None` when it did not change.
    pub query: Option<Query>,
    /// The same question of side A, comparing ([`Compare::query`]).
    pub other: Option<Query>,
    /// The list's rows to decode; `None` when the rows on screen did not change.
    pub rows: Option<RowsQuery>,
    /// What the selected event is linked to, for the detail popup; `None` when nothing new
    /// is to be looked up.
    pub links: Option<LinksQuery>,
}

/// How many events match a filter in the whole capture: known from the index without a
/// filter, else from an answer over the whole capture or the worker's count
/// ([`crate::worker::query::count_all`]).
struct Whole {
    /// The filter counted.
    filter: String,
    /// The first generation asked under it: a count from an older one is another filter's.
    since: u64,
    /// The count, once known.
    matched: Option<u64>,
    /// The count is of the capture before it last grew: shown until counted again.
    stale: bool,
    /// When the filter matched nothing: the clause the capture holds a value for that is
    /// nearest one of the filter's (`proc.name=fio` for `proc.name=FIO`).
    near: Option<String>,
}

impl Whole {
    /// The count of `filter` in `cap` as far as known before a scan, from generation `since`.
    fn of(filter: &str, cap: &Capture, since: u64) -> Whole {
        Whole {
            filter: filter.to_owned(),
            since,
            matched: filter.is_empty().then_some(cap.total),
            stale: false,
            near: None,
        }
    }
}

/// The process entries a filter names (`None`: it names none), by the filter's text and the
/// length of the process table they were found in.
type NamedProcs = ((String, usize), Option<Vec<u32>>);

/// The whole viewer state.
pub struct App {
    /// The capture being viewed.
    pub cap: Capture,
    /// The palette and the styles drawn with it.
    pub theme: Theme,
    /// Where everything goes, for the terminal size, the filter bar and the orientation now.
    pub layout: Layout,
    /// The pane that has the keyboard.
    pub focus: Pane,
    /// The spectrogram pane: the view's rows, cursor, region and picture.
    pub view: View,
    /// The filter bar: the applied filter, the text being edited, the history.
    pub filter: FilterBar,
    /// The breakdown pane: the grouped field and the selected group.
    pub breakdown: Breakdown,
    /// The event list: its order, selection, scroll and rows on screen.
    pub list: List,
    /// The replay's clock.
    pub replay: Replay,
    /// Side A of a comparison, when comparing (B is the rest of the app: the capture, the
    /// filter bar's filter, the answer).
    pub compare: Option<Compare>,
    /// The latest answer for the current generation (histogram, breakdown, event counts).
    pub answer: Option<Answer>,
    /// Generation of the newest query; answers from older ones are ignored.
    pub gen: u64,
    /// Events matching the applied filter in the whole capture (the side panes say of how
    /// many theirs, in view, are).
    whole: Whole,
    /// A query is out and not yet answered.
    pub busy: bool,
    /// The `?` help is open.
    pub help: bool,
    /// The field picker is open (`f`, `M`).
    pub picker: Option<Picker>,
    /// The process entries the applied filter names, by (filter, process table's length) they
    /// were found for ([`App::drops_of_named`]).
    named_procs: std::cell::RefCell<Option<NamedProcs>>,
    /// iostat's figures for the view are shown in place of the event list (`i`).
    pub iostat: bool,
    /// The flame graph of the view's calls is shown in place of the event list (`w`).
    pub flame: Option<FlamePane>,
    /// A one-line note for the status line (errors, "filter change undone").
    pub note: Option<String>,
    /// The user asked to quit: the event loop ends after this update.
    pub quit: bool,
    /// Why the capture stopped growing before it was finished, when its source can say (a
    /// copy of standard input that hit a full disk): asked when it does, said instead of
    /// blaming the recorder.
    pub why_cut: Option<Box<dyn Fn() -> Option<String>>>,
    /// What [`App::why_cut`] said, once it did: shown with the recovery's details.
    pub cut: Option<String>,
    /// While the capture is being recorded: the view and the list stay on its newest rows.
    pub following: bool,
    /// The capture grew while a question was out: the question is asked again of it once
    /// answered.
    grown_meanwhile: bool,
    /// The question out is the one answered before, of the capture grown: the list's rows
    /// in time order stay where they were.
    extending: bool,
}

impl App {
    /// (Tests and the bench: `iocap view` compiles its filter once, in `check_filter`.)
    /// A viewer on `cap` in a terminal of `area`, showing `filter` (which must compile: the
    /// caller reports a bad one as a usage error before starting the UI), and the query for
    /// the exact picture of its first view (the first frame comes from the index).
    #[cfg(feature = "testing")]
    pub fn new(
        cap: Capture,
        filter: &str,
        area: Rect,
        palette: Palette,
        history: History,
    ) -> Result<(App, Effects), FilterError> {
        let filter = FilterBar::new(filter, &cap.reader, history)?;
        Ok(App::with_filter_bar(cap, filter, area, palette))
    }

    /// [`App::new`] with its filter bar made already (its filter compiled once, by the caller).
    pub fn with_filter_bar(cap: Capture, filter: FilterBar, area: Rect, palette: Palette) -> (App, Effects) {
        // The spectrogram opens as sysdig draws it.
        let layout = Layout::new(area, filter.lines(), Sides::One, Orientation::Sysdig);
        let whole = Whole::of(&filter.applied, &cap, 0);
        let mut app = App {
            theme: Theme::new(palette),
            view: View::new(&cap, &layout),
            layout,
            focus: Pane::Spectrogram,
            filter,
            breakdown: Breakdown::default(),
            list: List::default(),
            replay: Replay::new(cap.start),
            compare: None,
            answer: None,
            gen: 0,
            whole,
            busy: false,
            help: false,
            picker: None,
            named_procs: Default::default(),
            iostat: false,
            flame: None,
            note: None,
            quit: false,
            why_cut: None,
            cut: None,
            following: cap.is_live(),
            grown_meanwhile: false,
            extending: false,
            cap,
        };
        if app.following {
            // A capture being recorded opens on its newest rows (the whole capture, with room
            // to grow), the cursor on the newest.
            let _ = app.view.follow_newest(&app.cap, &app.layout);
        }
        let mut fx = Effects::default();
        app.ask(&mut fx);
        (app, fx)
    }

    /// [`App::with_filter_bar`], comparing capture `a` (side A) with `cap` (side B), both under
    /// the filter bar's filter until `p` pins A's own.
    pub fn comparing(a: Capture, cap: Capture, filter: FilterBar, area: Rect, palette: Palette) -> (App, Effects) {
        let compare = Compare::of_two(a, &cap);
        let (mut app, _) = App::with_filter_bar(cap, filter, area, palette);
        compare.widen(&mut app.cap);
        app.compare = Some(compare);
        app.relayout();
        app.view = View::new(&app.cap, &app.layout);
        let mut fx = Effects::default();
        app.ask(&mut fx);
        (app, fx)
    }

    /// The rows of the breakdown, by the latest answer (comparing: B's groups, then those only
    /// A has).
    pub fn groups(&self) -> &[GroupRow] {
        groups_of(self.answer.as_ref(), self.compare.as_ref())
    }

    /// Comparing, side A's count and p99 for each row of [`App::groups`], once A's answer to
    /// the current question is in.
    pub fn a_groups(&self) -> Option<&[(u64, u64)]> {
        self.compare_answer().map(|_| self.compare.as_ref().map_or(&[][..], |c| &c.a_groups[..]))
    }

    /// Comparing, side A's answer to the same question as the answer shown for B.
    pub fn compare_answer(&self) -> Option<&Answer> {
        let a = self.compare.as_ref()?.answer.as_ref()?;
        (Some(a.gen) == self.answer.as_ref().map(|b| b.gen)).then_some(a)
    }

    /// Histogram of the view, once answered.
    pub fn hist(&self) -> Option<&LatencyHist> {
        self.answer.as_ref().map(|a| &a.hist)
    }

    /// End of the view: of its last row, or of the capture when that is earlier (the rows
    /// past it are blank).
    pub fn view_end(&self) -> u64 {
        self.view.end(&self.layout).min(self.cap.end.saturating_add(1))
    }

    /// Whether the view holds the whole capture, so that what the panes count is every event
    /// that matches.
    pub fn shows_all(&self) -> bool {
        self.view.shows_all(&self.cap, &self.layout)
    }

    /// When the applied filter matched nothing and the capture holds a value near one it asks
    /// for: the clause to type instead.
    pub fn near_miss(&self) -> Option<&str> {
        self.whole.near.as_deref()
    }

    /// Events matching the applied filter in the whole capture, once known (while the
    /// capture is recorded, perhaps before it last grew).
    pub fn matched_all(&self) -> Option<u64> {
        self.whole.matched
    }

    /// Whether the view and the list follow the newest rows of a capture being recorded.
    pub fn follows(&self) -> bool {
        self.following && self.cap.is_live()
    }

    /// When the filter names processes (`proc.name=postgres`, `proc.pid=…`): how many of their
    /// events the recorder lost during the view; `None` when it names none, or the capture does
    /// not say whose events were dropped (before format 1.22).
    pub fn drops_of_named(&self) -> Option<u64> {
        if self.cap.drops == 0 {
            return None;
        }
        let r = &self.cap.reader;
        let key = (self.filter.applied.clone(), r.tables().procs().len());
        let mut cache = self.named_procs.borrow_mut();
        if cache.as_ref().is_none_or(|(k, _)| *k != key) {
            let procs = iocap_filter::Filter::parse(&self.filter.applied)
                .ok()
                .and_then(|f| f.processes(r.meta(), r.tables()));
            *cache = Some((key, procs));
        }
        let procs = cache.as_ref()?.1.as_ref()?;
        iocap_analysis::drops::of_processes(r, procs, self.view.start, self.view_end()).of_processes
    }

    /// Events the recorder lost during the view.
    pub fn drops_in_view(&self) -> u64 {
        if self.cap.drops == 0 {
            return 0;
        }
        iocap_analysis::drops::between(&self.cap.reader, self.view.start, self.view_end())
    }

    /// Change the state for `action`; what the workers are to do about it is returned.
    pub fn update(&mut self, action: Action) -> Effects {
        let mut effects = Effects::default();
        let fx = &mut effects;
        match action {
            Action::Quit => self.quit = true,
            Action::ToggleHelp => self.help = !self.help,
            Action::Pick(what) => {
                let current = match what {
                    PickFor::GroupBy => self.breakdown.field().name,
                    PickFor::Measure => self.view.measure.field(),
                };
                self.picker = Some(Picker::new(what, current));
            }
            Action::PickerEdit(e) => {
                if let Some(p) = &mut self.picker {
                    p.edit(e);
                }
            }
            Action::PickerMove(m) => {
                if let Some(p) = &mut self.picker {
                    p.step(m);
                }
            }
            Action::PickerCancel => self.picker = None,
            Action::PickerSubmit => {
                let Some(p) = self.picker.take() else { return effects };
                match (p.pick(), p.what) {
                    (Picked::Field(f), PickFor::GroupBy) => {
                        if self.breakdown.group_by(f) == Regrouped::Yes {
                            self.ask(fx);
                        }
                    }
                    (Picked::Field(f), PickFor::Measure) => match Measure::by_name(f.name) {
                        Ok(m) if m != self.view.measure => {
                            self.view.measure = m;
                            self.ask(fx);
                        }
                        Ok(_) => {}
                        Err(e) => self.note = Some(e),
                    },
                    // Nothing matched what was typed: the picker stays open.
                    (Picked::No, _) => self.picker = Some(p),
                }
            }
            Action::FocusNext | Action::FocusPrev => {
                let order = [Pane::Spectrogram, Pane::Breakdown, Pane::Events];
                let i = order.iter().position(|&f| f == self.focus).unwrap_or(0);
                let step = if matches!(action, Action::FocusNext) {
                    1
                } else {
                    order.len() - 1
                };
                self.focus = order[(i + step) % order.len()];
            }
            Action::CyclePalette => self.theme.palette = self.theme.palette.next(),
            Action::CycleMeasure => {
                self.view.measure = self.view.measure.next();
                self.ask(fx);
            }
            Action::Move(Move::End) if self.cap.is_live() && self.focus != Pane::Breakdown => {
                // The newest rows, followed from now on, in the view and the list (in time
                // order: sorted by latency, End is its last row as ever).
                self.following = true;
                if self.view.follow_newest(&self.cap, &self.layout) == Moved::Yes {
                    self.ask(fx);
                } else if self.list.sort == Sort::Latency {
                    if self.focus == Pane::Events {
                        self.list_update(&action, fx);
                    }
                } else if let Some(a) = &self.answer {
                    self.list.follow_end(a, &self.layout);
                    self.load_rows(fx);
                }
            }
            Action::Move(m) => match self.focus {
                Pane::Spectrogram => {
                    if back_in_time(m, self.view.orientation) {
                        self.following = false;
                    }
                    self.view_update(&action, fx);
                }
                Pane::Breakdown => {
                    let groups = groups_of(self.answer.as_ref(), self.compare.as_ref());
                    // A move only selects: the field stays.
                    let _ = self.breakdown.update(&action, groups);
                }
                // The list is hidden under iostat's figures: nothing to move.
                Pane::Events if self.iostat => {}
                Pane::Events if self.flame.is_some() => {
                    let tree = self.flame_tree();
                    if let (Some(p), Some(t)) = (&mut self.flame, tree) {
                        p.step(&t, m);
                    }
                }
                Pane::Events => {
                    if matches!(m, Move::Up | Move::PageUp | Move::Home) {
                        self.following = false;
                    }
                    self.list_update(&action, fx);
                }
            },
            Action::ZoomIn | Action::ZoomOut | Action::Mark | Action::Seek(_) => self.view_update(&action, fx),
            Action::ToggleOrientation => {
                let t = self.view.turn();
                self.relayout();
                self.refit(t, fx);
            }
            Action::Resize(w, h) => {
                let t = self.view.cursor_time();
                self.layout.area = Rect::new(0, 0, w, h);
                self.relayout();
                self.filter.fit(self.layout.filter.width);
                self.refit(t, fx);
            }
            Action::Activate => self.activate(fx),
            Action::Back => {
                let tree = self.flame_tree();
                let zoomed_out = match (&mut self.flame, tree) {
                    (Some(p), Some(t)) if self.focus == Pane::Events && !self.help => p.zoom_out(&t),
                    _ => false,
                };
                // Esc in the flame graph zooms out, and once it shows the whole, goes on as
                // elsewhere: the help, the detail, the region.
                if zoomed_out {
                    return effects;
                }
                if self.help {
                    self.help = false;
                } else if self.list.detail {
                    self.list.detail = false;
                } else {
                    self.view_update(&action, fx);
                }
            }
            Action::NextField => {
                let groups = groups_of(self.answer.as_ref(), self.compare.as_ref());
                if self.breakdown.update(&action, groups) == Regrouped::Yes {
                    self.ask(fx);
                }
            }
            Action::DiskSplit => {
                let groups = groups_of(self.answer.as_ref(), self.compare.as_ref());
                if self.breakdown.update(&action, groups) == Regrouped::Yes {
                    // The same picture: keep it drawn while the groups are counted again.
                    self.ask_keeping_picture(fx);
                }
            }
            Action::CycleFlame => {
                self.flame = match &self.flame {
                    None => Some(FlamePane::new(By::User)),
                    Some(p) => FlamePane::next(p.by).map(FlamePane::new),
                };
                self.iostat = false;
                if self.flame.is_some() {
                    self.ask_keeping_picture(fx);
                }
            }
            Action::ToggleIostat => {
                self.flame = None;
                self.iostat = !self.iostat;
                let known = self.answer.as_ref().is_some_and(|a| a.iostat.is_some());
                if self.iostat && !known {
                    // The same picture: keep it drawn while the figures are computed.
                    self.ask_keeping_picture(fx);
                }
            }
            Action::Sort => self.list_update(&action, fx),
            Action::Jump => match self.list.jump(self.answer.as_ref(), &self.cap.reader, self.filter.compiled()) {
                Ok(q) => fx.links = Some(q),
                Err(why) => self.note = Some(why),
            },
            Action::EditFilter
            | Action::FilterEdit(_)
            | Action::FilterPaste(_)
            | Action::FilterSubmit
            | Action::FilterCancel
            | Action::Undo => {
                let done = self.filter.update(&action, &self.cap.reader);
                // The bar may have opened, closed or grown an error: lay out before asking.
                self.relayout();
                self.filter.fit(self.layout.filter.width);
                match done {
                    Filtered::No => {}
                    Filtered::Applied => {
                        if matches!(action, Action::Undo) {
                            self.note = Some("filter change undone".into());
                            // A region or row that narrowed both sides is undone on both.
                            if let Some(c) = &mut self.compare {
                                c.undone(self.filter.undo.len());
                            }
                        }
                        self.ask(fx);
                    }
                    Filtered::NothingToUndo => self.note = Some("nothing to undo".into()),
                }
            }
            Action::PlayPause | Action::Speed => self.replay.update(&action, self.view.start),
            Action::Mouse(m) => self.mouse(m, fx),
            Action::Tick(dt) => {
                let (interval, rows) = (self.view.interval, self.layout.time_cells);
                match self.replay.tick(dt, (self.cap.start, self.cap.end), interval, rows) {
                    Step::Idle => {}
                    Step::Ended => self.note = Some("replay reached the end".into()),
                    // A view still being answered is not moved on: the replay would outrun
                    // the worker and show nothing but approximations.
                    Step::Follow(_) if self.busy => {}
                    Step::Follow(t) => {
                        if self.view.follow(t, &self.cap, &self.layout) == Moved::Yes {
                            self.ask(fx);
                        }
                    }
                }
            }
            Action::Pin => self.pin(fx),
            Action::ToggleSideBySide => match &mut self.compare {
                Some(c) => {
                    c.side_by_side = !c.side_by_side;
                    self.relayout_keeping(fx);
                }
                None => self.note = Some("nothing to compare: p pins the filter as side A".into()),
            },
            Action::Reply(r) => self.reply(r, fx),
            Action::OtherReply(r) => self.other_reply(r),
        }
        debug_assert_eq!(
            self.layout,
            self.fresh_layout(),
            "every change the layout depends on relayouts"
        );
        effects
    }

    /// The flame graph of the last answer, when it has one.
    pub fn flame_tree(&self) -> Option<Node> {
        let (lines, _) = self.answer.as_ref()?.flame.as_ref()?;
        Some(Node::tree("all", lines))
    }

    /// The layout for the terminal size, the filter bar, the comparison and the orientation
    /// now.
    fn fresh_layout(&self) -> Layout {
        let sides = match &self.compare {
            None => Sides::One,
            Some(c) if c.side_by_side => Sides::SideBySide,
            Some(_) => Sides::Difference,
        };
        Layout::new(self.layout.area, self.filter.lines(), sides, self.view.orientation)
    }

    /// Lay out again after a change that moves the panes, the cursor's time kept in view.
    fn relayout_keeping(&mut self, fx: &mut Effects) {
        let t = self.view.cursor_time();
        self.relayout();
        self.filter.fit(self.layout.filter.width);
        self.refit(t, fx);
    }

    /// `p`: pin the filter in force as side A's, or let A follow the bar again (on one
    /// capture, that ends the comparison). Either way both sides are asked again.
    fn pin(&mut self, fx: &mut Effects) {
        let applied = self.filter.applied.clone();
        let shown = |f: &str| if f.is_empty() { "(all events)".to_owned() } else { f.to_owned() };
        match &mut self.compare {
            None => {
                self.note = Some(format!("A pinned: {}; the filter bar is B's", shown(&applied)));
                self.compare = Some(Compare::pinned(&self.cap, &applied));
            }
            Some(c) if !c.two_captures() => {
                self.note = Some("comparison ended".into());
                self.compare = None;
            }
            Some(c) => match c.pinned {
                Some(_) => {
                    self.note = Some("A follows the filter bar again".into());
                    c.pin(None);
                }
                None => {
                    self.note = Some(format!("A pinned: {}; the filter bar is B's", shown(&applied)));
                    c.pin(Some(applied));
                }
            },
        }
        self.relayout_keeping(fx);
        self.ask(fx);
    }

    /// A reply about side A: its answer to the current question.
    fn other_reply(&mut self, r: Reply) {
        let Some(c) = &mut self.compare else { return };
        match r {
            Reply::Answer(a) if a.gen == self.gen => {
                if !a.damaged.is_empty() {
                    let events = a.damaged.iter().map(|d| d.events).sum::<u64>();
                    self.note = Some(format!(
                        "A: {} unreadable chunk(s) left out ({} events)",
                        a.damaged.len(),
                        units::count(events)
                    ));
                }
                c.grid = Grid::exact(a.spectro.clone());
                c.answer = Some(*a);
                c.merge(self.answer.as_ref().map_or(&[][..], |b| &b.groups));
                self.breakdown.answered(&c.rows);
            }
            Reply::Failed { gen, error } if gen == self.gen => self.note = Some(format!("A: {error}")),
            _ => {}
        }
    }

    /// Compute the layout again, after a change of what it depends on.
    fn relayout(&mut self) {
        self.layout = self.fresh_layout();
    }

    /// Hand `action` to the view; ask again if its rows moved.
    fn view_update(&mut self, action: &Action, fx: &mut Effects) {
        if self.view.update(action, &self.cap, &self.layout) == Moved::Yes {
            self.ask(fx);
        }
    }

    /// The view after a new layout, with `t` under the cursor.
    fn refit(&mut self, t: u64, fx: &mut Effects) {
        if self.view.refit(t, &self.cap, &self.layout) == Moved::Yes {
            self.ask(fx);
        }
    }

    /// Hand `action` to the event list, and do what it asks.
    fn list_update(&mut self, action: &Action, fx: &mut Effects) {
        match self.list.update(action, self.answer.as_ref(), &self.layout) {
            Listed::Nothing => {}
            Listed::Scrolled => {
                self.load_rows(fx);
                self.ask_links(fx);
            }
            Listed::Resorted => {
                fx.rows = None;
                // Only a latency-sorted list needs the slowest events kept: ask again (the
                // column cache makes it quick), keeping the picture already drawn.
                self.ask_keeping_picture(fx);
                self.load_rows(fx);
            }
        }
    }

    /// Enter, by pane.
    fn activate(&mut self, fx: &mut Effects) {
        let (clause, what) = match self.focus {
            Pane::Spectrogram => {
                let (t, l) = (self.view.cursor_t, self.view.cursor_l);
                let exact = !self.view.grid.approximate;
                if exact && !self.view.selecting() && self.view.count_at(t, l, &self.layout) == 0 {
                    // No region, and no event under the cursor (in the exact picture, not the
                    // index's guess): a filter to its cell would empty the view.
                    self.view.drop_region();
                    self.note = Some("no event under the cursor: ] [ > move to events, v selects a region".into());
                    return;
                }
                let clause = self.view.region_clause(&self.cap, &self.layout);
                self.view.drop_region();
                match clause {
                    Some(clause) => (clause, "region"),
                    None => {
                        self.note = Some("the region holds every event: the filter stays".into());
                        return;
                    }
                }
            }
            Pane::Breakdown => match self.breakdown.clause(self.groups()) {
                Some(clause) => (clause, "breakdown"),
                None => return,
            },
            Pane::Events if self.flame.is_some() => {
                let tree = self.flame_tree();
                if let (Some(p), Some(t)) = (&mut self.flame, tree) {
                    p.zoom_in(&t);
                }
                return;
            }
            Pane::Events => {
                // The detail popup opens or closes: at most its links to look up.
                let _ = self.list.update(&Action::Activate, self.answer.as_ref(), &self.layout);
                self.ask_links(fx);
                return;
            }
        };
        let depth = self.filter.undo.len();
        match self.filter.narrow(&clause, &self.cap.reader) {
            Ok(()) => {
                // Side A's own filter is narrowed alike: a region or a row acts on both sides.
                if let Some(c) = &mut self.compare {
                    c.narrow(&clause, depth);
                }
                self.ask(fx);
            }
            Err(e) => self.note = Some(format!("{what}: {}", e.message)),
        }
    }

    /// The mouse: a press focuses the pane under it and, on the spectrogram's plot, puts the
    /// cursor there and starts a region; a drag from there stretches it, to the plot's nearest
    /// cell when outside it; the release leaves it selected (Enter applies it, as after `v`).
    /// A drag that started elsewhere does nothing, and nothing under a popup is pressed.
    fn mouse(&mut self, m: Mouse, fx: &mut Effects) {
        let (x, y) = match m {
            Mouse::Down { x, y } | Mouse::Drag { x, y } | Mouse::Up { x, y } => (x, y),
            Mouse::ScrollUp { .. } | Mouse::ScrollDown { .. } => {
                if matches!(m, Mouse::ScrollUp { .. }) {
                    self.following = false;
                }
                return self.view_update(&Action::Mouse(m), fx);
            }
        };
        if self.help || self.list.detail || self.picker.is_some() {
            return;
        }
        match m {
            Mouse::Down { .. } => {
                if let Some(f) = self.layout.pane_at(x, y) {
                    self.focus = f;
                }
                match self.layout.cell_at(x, y) {
                    Some((t, l)) => self.view.press(t, l),
                    None => self.view.dragging = false,
                }
            }
            _ => {
                let Some((t, l)) = self.layout.nearest_cell(x, y) else { return };
                if matches!(m, Mouse::Up { .. }) {
                    self.view.release(t, l);
                } else {
                    self.view.drag(t, l);
                }
            }
        }
    }

    fn reply(&mut self, r: Reply, fx: &mut Effects) {
        match r {
            Reply::Answer(a) if a.gen == self.gen => {
                self.busy = false;
                if self.shows_all() {
                    self.whole.matched = Some(a.matched);
                    self.whole.stale = false;
                }
                self.view.grid = Grid::exact(a.spectro.clone());
                self.view.place_cursor(&self.layout);
                if let Some(c) = &mut self.compare {
                    c.merge(&a.groups);
                }
                self.breakdown.answered(groups_of(Some(&a), self.compare.as_ref()));
                if let Some(d) = a.damaged.first() {
                    let (chunks, events) = (a.damaged.len(), a.damaged.iter().map(|d| d.events).sum::<u64>());
                    self.note = Some(format!(
                        "{} unreadable chunk{} left out ({} events); chunk {}: {}",
                        chunks,
                        if chunks == 1 { "" } else { "s" },
                        units::count(events),
                        d.chunk,
                        d.error
                    ));
                }
                self.list.answered(&a, self.extending);
                if self.follows() && self.list.sort == Sort::Time {
                    self.list.follow_end(&a, &self.layout);
                }
                self.answer = Some(*a);
                fx.rows = None;
                self.load_rows(fx);
                if std::mem::take(&mut self.grown_meanwhile) {
                    self.extend(fx);
                }
            }
            Reply::Grown(g) => self.grown(g, fx),
            Reply::NextFile(n) => self.next_file(n, fx),
            Reply::Unfollowed(why) => {
                self.note = Some(format!("stopped following the recording: {why}"));
                self.following = false;
            }
            Reply::Rows(r) => {
                if let Some(e) = self.list.arrived(r) {
                    self.note = Some(e);
                }
                // The selected row may have just arrived under an open popup.
                self.ask_links(fx);
            }
            Reply::Links(l) => {
                let arch = &self.cap.reader.meta().arch;
                let (listed, note) = self.list.linked(*l, self.answer.as_ref(), &self.layout, arch);
                if let Some(n) = note {
                    self.note = Some(n);
                }
                if listed == Listed::Scrolled {
                    self.load_rows(fx);
                    self.ask_links(fx);
                }
            }
            Reply::NearMiss { gen, clause } if gen >= self.whole.since => {
                self.whole.near = Some(clause);
            }
            Reply::Whole { gen, matched } if gen >= self.whole.since => {
                self.whole.matched = Some(matched);
                self.whole.stale = false;
            }
            Reply::Failed { gen, error } if gen == self.gen => {
                self.busy = false;
                self.note = Some(error);
                // What grew meanwhile is asked of with the next question.
                self.grown_meanwhile = false;
            }
            _ => {}
        }
    }

    /// A newer snapshot of the capture being recorded: the filter compiled again when its
    /// tables grew, the view moved on if it follows, and the question asked again of the grown
    /// capture (only the new chunks scanned, unless the view moved).
    /// The capture stopped growing before its end: say why, in the words of its source when
    /// it has some ([`App::why_cut`]), else as a recorder that stopped.
    pub fn say_why_cut(&mut self) {
        match self.why_cut.as_ref().and_then(|why| why()) {
            Some(why) => self.cut = Some(format!("{}: {why}", self.cap.name)),
            None => {
                self.note = Some("the recorder stopped without finishing the file: showing what it wrote".into());
            }
        }
    }

    fn grown(&mut self, g: Grown, fx: &mut Effects) {
        let was = self.cap.liveness;
        self.cap = self.cap.grown(Arc::clone(&g.reader));
        if let Some(c) = &mut self.compare {
            if !c.two_captures() {
                c.grown(g.reader);
            }
            c.widen(&mut self.cap);
        }
        if g.tables {
            self.filter.recompile(&self.cap.reader);
            // The value the hint named may be in them now; the next answer with no match
            // brings the hint again.
            self.whole.near = None;
        }
        match (was, self.cap.liveness) {
            (Liveness::Live, Liveness::Finished) => {
                self.note = Some("the recording finished".into());
            }
            (Liveness::Live, Liveness::Recovered) => self.say_why_cut(),
            _ => {}
        }
        if self.filter.applied.is_empty() {
            self.whole.matched = Some(self.cap.total);
        } else {
            self.whole.stale = true;
        }
        if self.view.grown(&self.cap, &self.layout, self.following) == Moved::Yes {
            self.grown_meanwhile = false;
            self.ask(fx);
        } else {
            self.extend(fx);
        }
    }

    /// The recording went on in the next file of its rotation: that file is the capture now,
    /// shown from its start with the same filter, field, order and drawing, followed as the
    /// first was.
    fn next_file(&mut self, n: NextFile, fx: &mut Effects) {
        self.cap = Capture::new(n.reader, &n.path);
        self.filter.recompile(&self.cap.reader);
        if let Some(c) = &mut self.compare {
            if c.two_captures() {
                c.widen(&mut self.cap);
            } else {
                // Two filters of the recording: of its next file now.
                *c = Compare::pinned(&self.cap, c.pinned.as_deref().unwrap_or_default());
            }
        }
        let (orientation, measure) = (self.view.orientation, self.view.measure);
        self.view = View::new(&self.cap, &self.layout);
        (self.view.orientation, self.view.measure) = (orientation, measure);
        if self.following {
            let _ = self.view.follow_newest(&self.cap, &self.layout);
        }
        self.list.restart();
        self.answer = None;
        self.grown_meanwhile = false;
        self.whole = Whole::of(&self.filter.applied, &self.cap, self.gen + 1);
        self.note = Some(format!("the recording went on in {}", self.cap.name));
        self.ask(fx);
    }

    /// Ask the question answered last again, of the capture as it is now: the worker scans
    /// only the chunks added since. While a question is out, once it is answered.
    fn extend(&mut self, fx: &mut Effects) {
        if self.busy {
            self.grown_meanwhile = true;
            return;
        }
        let base = self.answer.as_ref().map(|a| a.gen).filter(|&g| g == self.gen);
        self.ask_keeping_picture(fx);
        if let Some(q) = fx.query.as_mut() {
            q.extends = base;
        }
        // Side A's worker kept its answer to the same question, when it gave one.
        let a_base = self.compare.as_ref().and_then(|c| c.answer.as_ref()).map(|a| a.gen);
        if let Some(q) = fx.other.as_mut().filter(|_| a_base == base) {
            q.extends = base;
        }
        self.extending = base.is_some();
    }

    /// The question changed: show the summaries' picture now, ask for the exact one.
    fn ask(&mut self, fx: &mut Effects) {
        self.gen += 1;
        self.extending = false;
        if self.whole.filter != self.filter.applied {
            self.whole = Whole::of(&self.filter.applied, &self.cap, self.gen);
        }
        let whole = (self.whole.matched.is_none() || self.whole.stale) && !self.view.shows_all(&self.cap, &self.layout);
        let (v, rows) = (&mut self.view, self.layout.time_cells);
        v.grid = first_grid(&self.cap, &self.filter.applied, v.measure, v.start, v.interval, rows);
        self.busy = true;
        let q = Query {
            gen: self.gen,
            reader: Arc::clone(&self.cap.reader),
            extends: None,
            filter: self.filter.compiled().cloned(),
            filter_text: self.filter.applied.clone(),
            start: v.start,
            interval: v.interval,
            rows,
            measure: v.measure,
            group: self.breakdown.field(),
            split: self.breakdown.split.is_on(),
            slowest: self.list.slowest_wanted(),
            whole,
            iostat: self.iostat,
            flame: self.flame.as_ref().map(|p| p.by),
        };
        if let Some(c) = &mut self.compare {
            let start = c.a_time(q.start);
            c.grid = first_grid(&c.cap, c.filter(&self.filter.applied), q.measure, start, q.interval, rows);
            match c.query(&q, &self.filter.applied, &self.cap.reader) {
                Ok(a) => fx.other = Some(a),
                Err(e) => self.note = Some(format!("A's filter: {}", e.message)),
            }
        }
        fx.query = Some(q);
    }

    /// Ask again for the same view, filter and rows (only the list's order or what the
    /// breakdown shows changed): the picture already drawn stays until the answer.
    fn ask_keeping_picture(&mut self, fx: &mut Effects) {
        let grid = self.view.grid.clone();
        let a_grid = self.compare.as_ref().map(|c| c.grid.clone());
        self.ask(fx);
        self.view.grid = grid;
        if let (Some(c), Some(g)) = (&mut self.compare, a_grid) {
            c.grid = g;
        }
    }

    /// Look up what the selected event is linked to, if the open detail popup needs it.
    fn ask_links(&mut self, fx: &mut Effects) {
        if let Some(q) = self
            .list
            .want_links(self.answer.as_ref(), &self.cap.reader, self.filter.compiled())
        {
            fx.links = Some(q);
        }
    }

    /// Ask for the events the list shows, unless they are decoded already.
    fn load_rows(&mut self, fx: &mut Effects) {
        fx.rows = self
            .list
            .want(self.answer.as_ref(), &self.cap.reader, self.filter.compiled(), &self.layout);
    }
}

/// The breakdown's rows: comparing, B's groups and A's ([`Compare::rows`]); else `answer`'s.
fn groups_of<'a>(answer: Option<&'a Answer>, compare: Option<&'a Compare>) -> &'a [GroupRow] {
    match compare {
        Some(c) => &c.rows,
        None => answer.map_or(&[], |a| &a.groups),
    }
}

/// The picture of a view before its answer: the index's for the whole capture by latency;
/// else (summaries know nothing of a filter nor of queue times) an empty grid, which says
/// "not yet" honestly.
fn first_grid(cap: &Capture, filter: &str, measure: Measure, start: u64, interval: u64, rows: usize) -> Grid {
    if filter.is_empty() && measure.is_latency() {
        Grid::from_summaries(cap.reader.chunks(), start, interval, rows)
    } else {
        Grid::empty(start, interval, rows)
    }
}

/// Whether `m` moves the spectrogram's cursor or view back in time, drawn as `orientation`:
/// what stops following a capture being recorded.
fn back_in_time(m: Move, orientation: Orientation) -> bool {
    matches!(
        (orientation, m),
        (_, Move::PageUp | Move::Home) | (Orientation::Sysdig, Move::Up) | (Orientation::Heatmap, Move::Left)
    )
}
