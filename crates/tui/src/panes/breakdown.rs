//! The breakdown pane: which field the view is split by and the selected row; Enter turns the
//! row into a filter clause. Drawn by [`render`]; the groups themselves are the worker's
//! answer.

pub mod render;

use iocap_filter::fields::{self, FieldInfo};
use iocap_filter::literal;

use crate::action::Action;
use crate::panes::step_list;
use crate::worker::query::GroupRow;

/// Fields the breakdown can group by, in the order `f` cycles through them.
pub const GROUP_FIELDS: [&str; 8] = [
    "proc.name",
    "evt.type",
    "fd.name",
    "blk.dev",
    "fd.type",
    "proc.pid",
    "io.dir",
    "evt.errno",
];

/// Rows a page key moves the selection by (the pane is a few rows high).
const PAGE: usize = 5;

/// The grouped field, the selection and what the rows show.
#[derive(Debug, Default)]
pub struct Breakdown {
    /// Index in [`GROUP_FIELDS`].
    pub field: usize,
    /// Selected row.
    pub sel: usize,
    /// Each group's calls' latency split into disk time and the rest, instead of its p99.
    pub split: bool,
}

/// Whether an update changed the grouped field or what the groups show: a new question.
#[must_use]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Regrouped {
    /// The same field: the answer shown still holds.
    No,
    /// Another field, or the split turned on or off: ask again.
    Yes,
}

impl Breakdown {
    /// The field grouped by.
    pub fn field(&self) -> &'static FieldInfo {
        fields::lookup(GROUP_FIELDS[self.field % GROUP_FIELDS.len()]).unwrap_or(&fields::all()[0])
    }

    /// The breakdown's part of `action`: the next or previous field, the disk/other split, and
    /// moving the selection among `groups` (when the pane has the focus).
    pub fn update(&mut self, action: &Action, groups: &[GroupRow]) -> Regrouped {
        match *action {
            Action::NextField | Action::PrevField => {
                let n = GROUP_FIELDS.len();
                let step = if matches!(action, Action::NextField) { 1 } else { n - 1 };
                self.field = (self.field + step) % n;
                self.sel = 0;
                Regrouped::Yes
            }
            // Another question: the split is only computed when shown.
            Action::DiskSplit => {
                self.split = !self.split;
                Regrouped::Yes
            }
            Action::Move(m) => {
                self.sel = step_list(self.sel, groups.len(), m, PAGE);
                Regrouped::No
            }
            _ => Regrouped::No,
        }
    }

    /// A new answer: keep the selection on a row that exists.
    pub fn answered(&mut self, groups: &[GroupRow]) {
        self.sel = self.sel.min(groups.len().saturating_sub(1));
    }

    /// The filter clause for the selected row of `groups`: `field=value`, or that the field
    /// is absent for the `(none)` row.
    pub fn clause(&self, groups: &[GroupRow]) -> Option<String> {
        let field = self.field().name;
        let g = groups.get(self.sel)?;
        Some(if g.value.is_empty() {
            format!("not {field} exists")
        } else {
            format!("{field}={}", literal::string(&g.value))
        })
    }
}
