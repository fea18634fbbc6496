//! The flame pane (`w`, in the event list's place): the latency flame graph of the view's
//! calls, by the stacks `record --stacks` kept, drawn as an icicle (the root at the top, each
//! frame as wide as the latency of the calls through it). A frame is selected with the arrows;
//! Enter zooms in on it (it spans the pane), Esc zooms back out.

use iocap_analysis::flame::{By, Node};

use crate::action::Move;

/// What the flame pane shows and where its selection is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FlamePane {
    /// Which stacks.
    pub by: By,
    /// The frame zoomed in on: its path of names from the root (empty: the whole graph).
    pub zoom: Vec<String>,
    /// The selected frame's path from the root; it starts with `zoom`.
    pub sel: Vec<String>,
}

impl FlamePane {
    /// The whole graph of `by` stacks, nothing selected below the root.
    pub fn new(by: By) -> FlamePane {
        FlamePane {
            by,
            zoom: Vec::new(),
            sel: Vec::new(),
        }
    }

    /// The next kind of stacks `w` shows after this one: user, kernel, then none.
    pub fn next(by: By) -> Option<By> {
        match by {
            By::User => Some(By::Kernel),
            By::Kernel => Some(By::Both),
            By::Both => None,
        }
    }

    /// Move the selection in `tree`: ↓ into the widest frame it calls, ↑ to its caller (not
    /// above the zoomed frame), ← and → to the frame beside it under the same caller.
    pub fn step(&mut self, tree: &Node, m: Move) {
        self.fit(tree);
        match m {
            Move::Down | Move::PageDown => {
                if let Some(first) = tree.at(&self.sel).and_then(|n| n.children.first()) {
                    self.sel.push(first.name.clone());
                }
            }
            Move::Up | Move::PageUp if self.sel.len() > self.zoom.len() => {
                self.sel.pop();
            }
            Move::Left | Move::Right if self.sel.len() > self.zoom.len() => {
                let (parent, name) = self.sel.split_at(self.sel.len() - 1);
                let Some(siblings) = tree.at(parent).map(|p| &p.children) else {
                    return;
                };
                let i = siblings.iter().position(|c| c.name == name[0]).unwrap_or(0);
                let j = if m == Move::Left {
                    i.saturating_sub(1)
                } else {
                    (i + 1).min(siblings.len().saturating_sub(1))
                };
                if let Some(c) = siblings.get(j) {
                    *self.sel.last_mut().expect("a selected frame below the zoom") = c.name.clone();
                }
            }
            Move::Home => self.sel = self.zoom.clone(),
            _ => {}
        }
    }

    /// Zoom in on the selected frame.
    pub fn zoom_in(&mut self, tree: &Node) {
        self.fit(tree);
        self.zoom = self.sel.clone();
    }

    /// Zoom out one frame; false when the whole graph was shown already.
    pub fn zoom_out(&mut self, tree: &Node) -> bool {
        self.fit(tree);
        if self.zoom.pop().is_none() {
            return false;
        }
        true
    }

    /// Keep the zoom and the selection on frames `tree` has (a new answer may lack them):
    /// each is cut to the part of its path that is still there.
    pub fn fit(&mut self, tree: &Node) {
        let keep = |path: &mut Vec<String>| {
            while !path.is_empty() && tree.at(path).is_none() {
                path.pop();
            }
        };
        keep(&mut self.zoom);
        keep(&mut self.sel);
        if !self.sel.starts_with(&self.zoom) {
            self.sel = self.zoom.clone();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree() -> Node {
        let lines = [
            ("db;main;a;fsync".to_owned(), 6),
            ("db;main;b".to_owned(), 3),
            ("sh;wait4".to_owned(), 1),
        ];
        Node::tree("all", &lines)
    }

    #[test]
    fn arrows_walk_the_frames_and_enter_zooms() {
        let t = tree();
        let mut p = FlamePane::new(By::User);
        let path = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        p.step(&t, Move::Down);
        assert_eq!(p.sel, path(&["db"]), "the widest first");
        p.step(&t, Move::Right);
        assert_eq!(p.sel, path(&["sh"]));
        p.step(&t, Move::Right);
        assert_eq!(p.sel, path(&["sh"]), "no frame past the last");
        p.step(&t, Move::Left);
        p.step(&t, Move::Down);
        p.step(&t, Move::Down);
        p.step(&t, Move::Right);
        assert_eq!(p.sel, path(&["db", "main", "b"]));
        p.step(&t, Move::Up);
        p.zoom_in(&t);
        assert_eq!(p.zoom, path(&["db", "main"]));
        p.step(&t, Move::Up);
        assert_eq!(p.sel, path(&["db", "main"]), "not above the zoomed frame");
        assert!(p.zoom_out(&t));
        assert!(p.zoom_out(&t));
        assert!(!p.zoom_out(&t), "the whole graph already");
        // A new answer without the selected frame: the selection keeps what is left of it.
        p.sel = path(&["db", "main", "gone"]);
        p.fit(&t);
        assert_eq!(p.sel, path(&["db", "main"]));
    }
}
