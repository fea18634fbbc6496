//! The field picker: what the breakdown groups by (`f`) or what the plot measures (`M`), chosen
//! by typing part of a field's name or description rather than by cycling through them. Drawn
//! by [`crate::ui::picker`].

use iocap_analysis::Measure;
use iocap_filter::fields::{self, FieldInfo};

use crate::action::{Edit, Move, PickFor};
use crate::panes::breakdown::group_fields;
use crate::panes::step_list;

impl PickFor {
    /// The fields offered, in the order shown with nothing typed.
    pub fn fields(self) -> Vec<&'static FieldInfo> {
        match self {
            PickFor::GroupBy => group_fields().to_vec(),
            PickFor::Measure => Measure::all().map(|m| fields::info(m.id())).collect(),
        }
    }

    /// The popup's title.
    pub fn title(self) -> &'static str {
        match self {
            PickFor::GroupBy => "Group the breakdown by",
            PickFor::Measure => "Plot by",
        }
    }
}

/// An open picker: what it is for, what was typed, the selected row of what matches it.
#[derive(Clone, Debug)]
pub struct Picker {
    /// What the field is for.
    pub what: PickFor,
    /// The text typed.
    pub query: String,
    /// The selected row of [`Picker::matches`].
    pub sel: usize,
}

/// What an update of the picker asks of the app.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Picked {
    /// Nothing matches what was typed: still picking.
    No,
    /// This field (Enter).
    Field(&'static FieldInfo),
}

/// Rows a page key moves the selection by.
const PAGE: usize = 10;

impl Picker {
    /// A picker for `what`, the field in use (`current`) selected.
    pub fn new(what: PickFor, current: &str) -> Picker {
        let sel = what.fields().iter().position(|f| f.name == current).unwrap_or(0);
        Picker {
            what,
            query: String::new(),
            sel,
        }
    }

    /// The fields that match what was typed, best first (case aside): each word typed must be
    /// in the name or the description (`wait jour` finds `wait.journal`); those with every word
    /// in their name come first, those whose name starts with the first word first of them;
    /// each in the order offered.
    pub fn matches(&self) -> Vec<&'static FieldInfo> {
        let all = self.what.fields();
        let q = self.query.to_lowercase();
        let words: Vec<&str> = q.split_whitespace().collect();
        if words.is_empty() {
            return all;
        }
        let rank = |f: &FieldInfo| -> Option<u8> {
            let (name, desc) = (f.name.to_lowercase(), f.description.to_lowercase());
            if !words.iter().all(|w| name.contains(w) || desc.contains(w)) {
                return None;
            }
            let in_name = words.iter().all(|w| name.contains(w));
            let starts = name.starts_with(words[0]);
            Some(match (in_name, starts) {
                (true, true) => 0,
                (true, false) => 1,
                (false, true) => 2,
                (false, false) => 3,
            })
        };
        let mut ranked: Vec<(u8, usize, &'static FieldInfo)> =
            (all.iter().enumerate()).filter_map(|(i, &f)| Some((rank(f)?, i, f))).collect();
        ranked.sort_by_key(|&(r, i, _)| (r, i));
        ranked.into_iter().map(|(_, _, f)| f).collect()
    }

    /// Typing (the selection back to the best match), a move, Enter or Esc.
    pub fn edit(&mut self, e: Edit) {
        match e {
            Edit::Insert(c) if !c.is_control() => {
                self.query.push(c);
                self.sel = 0;
            }
            Edit::Backspace => {
                self.query.pop();
                self.sel = 0;
            }
            _ => {}
        }
    }

    /// Move the selection among the matches.
    pub fn step(&mut self, m: Move) {
        self.sel = step_list(self.sel, self.matches().len(), m, PAGE);
    }

    /// Enter: the selected match, if any.
    pub fn pick(&self) -> Picked {
        match self.matches().get(self.sel) {
            Some(f) => Picked::Field(f),
            None => Picked::No,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(p: &Picker) -> Vec<&'static str> {
        p.matches().iter().map(|f| f.name).collect()
    }

    /// Typing narrows the fields, names that start with it first; a description matches too;
    /// the selection goes back to the best match.
    #[test]
    fn typing_finds_a_field() {
        let mut p = Picker::new(PickFor::GroupBy, "proc.name");
        assert_eq!(p.pick(), Picked::Field(fields::lookup("proc.name").unwrap()));
        for c in "blk.c".chars() {
            p.edit(Edit::Insert(c));
        }
        assert_eq!(names(&p)[0], "blk.cause");
        assert_eq!(p.sel, 0);
        p.query = "cgroup".into();
        assert!(names(&p).contains(&"proc.cgroup"), "{:?}", names(&p));
        p.query = "zzzz".into();
        assert!(names(&p).is_empty());
        assert_eq!(p.pick(), Picked::No);
        let mut m = Picker::new(PickFor::Measure, "latency");
        m.query = "wait jour".into();
        assert_eq!(names(&m)[0], "wait.journal");
        m.query = "queue".into();
        assert_eq!(names(&m)[0], "blk.queue");
        m.step(Move::Down);
        assert_eq!(m.sel, 1.min(names(&m).len() - 1));
        // Not a duration, not offered to plot by.
        m.query = "proc".into();
        assert!(names(&m).iter().all(|n| !n.starts_with("proc")), "{:?}", names(&m));
    }
}
