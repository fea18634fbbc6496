//! The breakdown pane: which field the view is split by and the selected row; Enter turns the
//! row into a filter clause. Drawn by [`crate::ui::breakdown`]; the groups themselves are the worker's
//! answer.


use std::sync::OnceLock;

use iocap_filter::fields::{self, FieldInfo, FieldType};
use iocap_filter::literal;

use crate::action::Action;
use crate::panes::step_list;
use crate::worker::query::GroupRow;

/// The fields offered first, in this order: the questions asked most. Every other field the
/// breakdown can group by ([`groupable`]) follows, in the schema's order.
const FIRST: [&str; 9] = [
    "proc.name",
    "evt.type",
    "fd.name",
    "blk.dev",
    "fd.type",
    "container.name",
    "proc.pid",
    "io.dir",
    "evt.errno",
];

/// Whether the breakdown offers `field`: every field of the schema whose values are few enough
/// to group, which is all but those the schema marks ([`FieldInfo::group`]: a value per event
/// such as a result, a file offset, a sector; the yes/no views of a field offered whole, such
/// as `evt.failed` of `evt.errno`), durations, and the fields of the capture's header (`host`,
/// `capture.id`: one value in a viewer of one capture). Aliases are offered once, under their
/// field's name.
pub fn groupable(field: &FieldInfo) -> bool {
    field.group && !field.is_alias() && !field.id.is_per_capture() && field.ty != FieldType::Duration
}

/// The fields the breakdown groups by, in the order `F` cycles through them (and the picker, `f`, lists them): [`FIRST`], then
/// every other [`groupable`] one.
pub fn group_fields() -> &'static [&'static FieldInfo] {
    static FIELDS: OnceLock<Vec<&'static FieldInfo>> = OnceLock::new();
    FIELDS.get_or_init(|| {
        let first = FIRST.iter().filter_map(|n| fields::lookup(n));
        let rest = fields::all()
            .iter()
            .filter(|f| groupable(f) && !FIRST.contains(&f.name));
        first.chain(rest).collect()
    })
}

/// Rows a page key moves the selection by (the pane is a few rows high).
const PAGE: usize = 5;

/// The grouped field, the selection and what the rows show.
#[derive(Debug, Default)]
pub struct Breakdown {
    /// Index in [`group_fields`].
    pub field: usize,
    /// Selected row.
    pub sel: usize,
    /// What each group shows besides its count: its share and p99, its calls' latency split
    /// into disk time and the rest, or the part of their latency that is the largest.
    pub split: Split,
}

/// What the breakdown's figures are (`d` goes round them).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Split {
    /// Each group's share of the events and its p99.
    #[default]
    Off,
    /// Its calls' disk time and the rest.
    Disk,
    /// The largest part of its calls' summed latency (`journal`, `cpu`, `runq` ...) and its
    /// share.
    Why,
}

impl Split {
    /// Whether the groups' calls' latency is split (the worker sums the parts).
    pub fn is_on(self) -> bool {
        self != Split::Off
    }
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
        let all = group_fields();
        all.get(self.field % all.len().max(1)).copied().unwrap_or(&fields::all()[0])
    }

    /// Group by `f`, when the breakdown offers it ([`group_fields`]).
    pub fn group_by(&mut self, f: &FieldInfo) -> Regrouped {
        match group_fields().iter().position(|g| g.name == f.name) {
            Some(i) if i != self.field => {
                self.field = i;
                self.sel = 0;
                Regrouped::Yes
            }
            _ => Regrouped::No,
        }
    }

    /// The breakdown's part of `action`: the next field, the disk/other split, and
    /// moving the selection among `groups` (when the pane has the focus).
    pub fn update(&mut self, action: &Action, groups: &[GroupRow]) -> Regrouped {
        match *action {
            Action::NextField => {
                self.field = (self.field + 1) % group_fields().len().max(1);
                self.sel = 0;
                Regrouped::Yes
            }
            // Another question: the split is only computed when shown.
            Action::DiskSplit => {
                self.split = match self.split {
                    Split::Off => Split::Disk,
                    Split::Disk => Split::Why,
                    Split::Why => Split::Off,
                };
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

    /// The filter clause for the selected row of `groups`: `field=value` (a number bare, text
    /// quoted), or that the field is absent for the `(none)` row.
    pub fn clause(&self, groups: &[GroupRow]) -> Option<String> {
        let field = self.field();
        let g = groups.get(self.sel)?;
        Some(match field.ty {
            _ if g.value.is_empty() => format!("not {} exists", field.name),
            FieldType::Str => format!("{}={}", field.name, literal::string(&g.value)),
            _ => format!("{}={}", field.name, g.value),
        })
    }
}
