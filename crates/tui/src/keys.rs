//! Keys and mouse → [`Action`]s, and the help that lists them.
//!
//! One table, [`BINDINGS`], says what every key does; [`key`] reads it to turn a key press
//! into an action and the `?` popup prints it, so a key cannot work without being listed, nor
//! be listed without working. While the filter bar is open only its editing keys count (those
//! whose action is an edit, [`editing`]), and any other character is typed; while it is closed
//! only the others do. The field picker (`f`, `M`) takes its own few keys while it is open
//! (typing, ↑/↓, Enter, Esc), which its popup lists. What a key means depends only on whether the filter bar is open and
//! which pane has the focus, both readable from `&App`.

use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers, MouseButton, MouseEvent, MouseEventKind};

use crate::action::{Action, Edit, Mouse, Move, PickFor, Seek};
use crate::app::App;
use crate::layout::Pane;

/// A key as the table names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Key {
    code: KeyCode,
    /// Only with Ctrl held.
    ctrl: bool,
    /// Only with Alt (Meta, or Esc before the key) held.
    alt: bool,
}

impl Key {
    /// Whether a press of `code` with these modifiers held is this key: a key without Ctrl or
    /// Alt matches whatever modifiers are held (where a key that needs them is not listed).
    fn matches(&self, code: KeyCode, held: KeyModifiers) -> bool {
        self.code == code
            && (!self.ctrl || held.contains(KeyModifiers::CONTROL))
            && (!self.alt || held.contains(KeyModifiers::ALT))
    }

    /// How many modifiers the key needs: of two keys a press matches, the one needing more wins
    /// (Alt-Backspace over Backspace, Ctrl-C over `c`).
    fn needs(&self) -> u8 {
        u8::from(self.ctrl) + u8::from(self.alt)
    }
}

const fn char(c: char) -> Key {
    code(KeyCode::Char(c))
}

const fn ctrl(c: char) -> Key {
    Key {
        code: KeyCode::Char(c),
        ctrl: true,
        alt: false,
    }
}

const fn alt(c: char) -> Key {
    alt_code(KeyCode::Char(c))
}

const fn code(code: KeyCode) -> Key {
    Key {
        code,
        ctrl: false,
        alt: false,
    }
}

const fn ctrl_code(code: KeyCode) -> Key {
    Key {
        code,
        ctrl: true,
        alt: false,
    }
}

const fn alt_code(code: KeyCode) -> Key {
    Key { code, ctrl: false, alt: true }
}

/// Where a binding applies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum When {
    /// Whichever pane has the focus.
    Always,
    /// Only while this pane has the focus.
    In(Pane),
}

/// One line of the help, and the keys it stands for with what each does.
pub struct Binding {
    /// The keys as the help names them.
    pub keys: &'static str,
    /// What they do, as the help says it.
    pub help: &'static str,
    /// Where they apply (outside the filter bar; in it, every editing key applies).
    pub when: When,
    /// Each key and the action it stands for.
    pub actions: &'static [(Key, Action)],
}

/// What a region's keys do, as the help's line for `v` and the status line (while a region is
/// selected) both say it.
macro_rules! region_keys {
    () => {
        "Enter filters, Esc drops"
    };
}

/// The status line's reminder while a region is selected: the same words as the help's.
pub const REGION_KEYS: &str = region_keys!();

const REGION_HELP: &str = concat!("select a time × latency region: ", region_keys!());

/// Every key, in the order `?` lists them. Of two keys a press matches, the one needing more
/// modifiers wins: Ctrl-C quits where `c` changes the palette.
pub static BINDINGS: &[Binding] = &[
    Binding {
        keys: "q, Ctrl-C; ?",
        help: "quit; this help (Esc closes)",
        when: When::Always,
        actions: &[
            (char('q'), Action::Quit),
            (ctrl('c'), Action::Quit),
            (char('?'), Action::ToggleHelp),
        ],
    },
    Binding {
        keys: "Tab, Shift-Tab",
        help: "next / previous pane",
        when: When::Always,
        actions: &[
            (code(KeyCode::Tab), Action::FocusNext),
            (code(KeyCode::BackTab), Action::FocusPrev),
        ],
    },
    Binding {
        keys: "/",
        help: "edit the filter: Enter applies, Esc cancels, ↑/↓ history",
        when: When::Always,
        actions: &[
            (char('/'), Action::EditFilter),
            (code(KeyCode::Enter), Action::FilterSubmit),
            (code(KeyCode::Esc), Action::FilterCancel),
            (code(KeyCode::Up), Action::FilterEdit(Edit::Older)),
            (code(KeyCode::Down), Action::FilterEdit(Edit::Newer)),
        ],
    },
    // The filter bar's own keys, readline's: what people type without thinking.
    Binding {
        keys: "Ctrl-A/E/B/F, ←/→",
        help: "filter bar: start / end, one character left / right",
        when: When::Always,
        actions: &[
            (ctrl('a'), Action::FilterEdit(Edit::Home)),
            (code(KeyCode::Home), Action::FilterEdit(Edit::Home)),
            (ctrl('e'), Action::FilterEdit(Edit::End)),
            (code(KeyCode::End), Action::FilterEdit(Edit::End)),
            (ctrl('b'), Action::FilterEdit(Edit::Left)),
            (code(KeyCode::Left), Action::FilterEdit(Edit::Left)),
            (ctrl('f'), Action::FilterEdit(Edit::Right)),
            (code(KeyCode::Right), Action::FilterEdit(Edit::Right)),
        ],
    },
    Binding {
        keys: "Alt-B/F, Alt-⌫/D",
        help: "filter bar: word left / right, delete word before / after",
        when: When::Always,
        actions: &[
            (alt('b'), Action::FilterEdit(Edit::WordLeft)),
            (ctrl_code(KeyCode::Left), Action::FilterEdit(Edit::WordLeft)),
            (alt_code(KeyCode::Left), Action::FilterEdit(Edit::WordLeft)),
            (alt('f'), Action::FilterEdit(Edit::WordRight)),
            (ctrl_code(KeyCode::Right), Action::FilterEdit(Edit::WordRight)),
            (alt_code(KeyCode::Right), Action::FilterEdit(Edit::WordRight)),
            (alt_code(KeyCode::Backspace), Action::FilterEdit(Edit::KillWordBack)),
            (ctrl_code(KeyCode::Backspace), Action::FilterEdit(Edit::KillWordBack)),
            (alt('d'), Action::FilterEdit(Edit::KillWordForward)),
        ],
    },
    Binding {
        keys: "Ctrl-U/K/W/Y",
        help: "filter bar: delete to start / end / previous space; paste",
        when: When::Always,
        actions: &[
            (ctrl('u'), Action::FilterEdit(Edit::KillToStart)),
            (ctrl('k'), Action::FilterEdit(Edit::KillToEnd)),
            (ctrl('w'), Action::FilterEdit(Edit::KillToSpace)),
            (ctrl('y'), Action::FilterEdit(Edit::Yank)),
            // And the deletes every line editor has.
            (code(KeyCode::Backspace), Action::FilterEdit(Edit::Backspace)),
            (ctrl('h'), Action::FilterEdit(Edit::Backspace)),
            (code(KeyCode::Delete), Action::FilterEdit(Edit::Delete)),
            (ctrl('d'), Action::FilterEdit(Edit::Delete)),
        ],
    },
    Binding {
        keys: "u, Ctrl-Z",
        help: "undo the last filter change",
        when: When::Always,
        actions: &[(char('u'), Action::Undo), (ctrl('z'), Action::Undo)],
    },
    Binding {
        keys: "arrows, hjkl",
        help: "spectrogram: move the cursor; lists: select",
        when: When::Always,
        actions: &[
            (code(KeyCode::Up), Action::Move(Move::Up)),
            (char('k'), Action::Move(Move::Up)),
            (code(KeyCode::Down), Action::Move(Move::Down)),
            (char('j'), Action::Move(Move::Down)),
            (code(KeyCode::Left), Action::Move(Move::Left)),
            (char('h'), Action::Move(Move::Left)),
            (code(KeyCode::Right), Action::Move(Move::Right)),
            (char('l'), Action::Move(Move::Right)),
        ],
    },
    Binding {
        keys: "] [ } { >",
        help: "jump to events: slower / faster; a decade; the slowest",
        when: When::Always,
        actions: &[
            (char(']'), Action::Seek(Seek::NextEvents)),
            (char('['), Action::Seek(Seek::PrevEvents)),
            (char('}'), Action::Seek(Seek::DecadeSlower)),
            (char('{'), Action::Seek(Seek::DecadeFaster)),
            (char('>'), Action::Seek(Seek::Slowest)),
        ],
    },
    Binding {
        keys: "PgUp/Dn, Home/End",
        help: "scrub back / forward (or wheel); start / end (follow live)",
        when: When::Always,
        actions: &[
            (code(KeyCode::PageUp), Action::Move(Move::PageUp)),
            (code(KeyCode::PageDown), Action::Move(Move::PageDown)),
            (code(KeyCode::Home), Action::Move(Move::Home)),
            (code(KeyCode::End), Action::Move(Move::End)),
        ],
    },
    Binding {
        keys: "+ / -",
        help: "zoom in / out (rows of 1ms … the whole capture)",
        when: When::Always,
        actions: &[
            (char('+'), Action::ZoomIn),
            (char('='), Action::ZoomIn),
            (char('-'), Action::ZoomOut),
        ],
    },
    Binding {
        keys: "v, mouse drag",
        help: REGION_HELP,
        when: When::Always,
        actions: &[(char('v'), Action::Mark)],
    },
    Binding {
        keys: "Enter",
        help: "region → filter; breakdown row → filter; event → details",
        when: When::Always,
        actions: &[(code(KeyCode::Enter), Action::Activate)],
    },
    Binding {
        keys: "Esc",
        help: "drop the region, close a popup",
        when: When::Always,
        actions: &[(code(KeyCode::Esc), Action::Back)],
    },
    Binding {
        keys: "m, M",
        help: "plot by: latency, blk queue, disk, runq… / pick any",
        when: When::Always,
        actions: &[(char('m'), Action::CycleMeasure), (char('M'), Action::Pick(PickFor::Measure))],
    },
    Binding {
        keys: "o",
        help: "spectrogram orientation: sysdig / heatmap",
        when: When::Always,
        actions: &[(char('o'), Action::ToggleOrientation)],
    },
    // One line for the breakdown's keys: with `i`, the table is as long as 80×24 shows.
    Binding {
        keys: "f, F; d",
        help: "breakdown: pick a field (type) / next; calls' disk / other",
        when: When::Always,
        actions: &[
            (char('f'), Action::Pick(PickFor::GroupBy)),
            (char('F'), Action::NextField),
            (char('d'), Action::DiskSplit),
        ],
    },
    // One line for both panes in the list's place: the help is as long as 80×24 shows.
    Binding {
        keys: "i; w",
        help: "iostat; flame graph by user/kernel/both stacks / the list",
        when: When::Always,
        actions: &[(char('i'), Action::ToggleIostat), (char('w'), Action::CycleFlame)],
    },
    // One line for the list's keys: with the comparison's, the help is as long as 80×24 shows.
    Binding {
        keys: "s; g",
        help: "events: sort time/latency; g: request ↔ call ↔ waker",
        when: When::In(Pane::Events),
        actions: &[(char('s'), Action::Sort), (char('g'), Action::Jump)],
    },
    Binding {
        keys: "p; b",
        help: "compare: pin the filter as A (bar = B) / unpin; 2 plots",
        when: When::Always,
        actions: &[(char('p'), Action::Pin), (char('b'), Action::ToggleSideBySide)],
    },
    Binding {
        keys: "space, x",
        help: "replay: play / pause; speed 1× / 10× / 100×",
        when: When::Always,
        actions: &[(char(' '), Action::PlayPause), (char('x'), Action::Speed)],
    },
    Binding {
        keys: "c",
        help: "palette: classic / colour-blind (NO_COLOR: none)",
        when: When::Always,
        actions: &[(char('c'), Action::CyclePalette)],
    },
];

/// The action for a key press, if it means anything here.
pub fn key(app: &App, k: KeyEvent) -> Option<Action> {
    if k.kind == KeyEventKind::Release {
        return None;
    }
    let held = k.modifiers;
    if app.picker.is_some() {
        // The picker takes the keys its popup names: typing, ↑/↓ (pages, ends), Enter, Esc;
        // Ctrl-C still quits.
        return match k.code {
            KeyCode::Char('c') if held.contains(KeyModifiers::CONTROL) => Some(Action::Quit),
            KeyCode::Char(c) if !held.intersects(KeyModifiers::CONTROL | KeyModifiers::ALT) => {
                Some(Action::PickerEdit(Edit::Insert(c)))
            }
            KeyCode::Backspace => Some(Action::PickerEdit(Edit::Backspace)),
            KeyCode::Up => Some(Action::PickerMove(Move::Up)),
            KeyCode::Down => Some(Action::PickerMove(Move::Down)),
            KeyCode::PageUp => Some(Action::PickerMove(Move::PageUp)),
            KeyCode::PageDown => Some(Action::PickerMove(Move::PageDown)),
            KeyCode::Home => Some(Action::PickerMove(Move::Home)),
            KeyCode::End => Some(Action::PickerMove(Move::End)),
            KeyCode::Enter => Some(Action::PickerSubmit),
            KeyCode::Esc => Some(Action::PickerCancel),
            _ => None,
        };
    }
    if app.filter.input.is_some() {
        // Ctrl-C quits from the filter bar too.
        if held.contains(KeyModifiers::CONTROL) && k.code == KeyCode::Char('c') {
            return Some(Action::Quit);
        }
        return bound(k.code, held, None).or(match k.code {
            // Any other character is typed (Shift is how it was typed; Ctrl or Alt with a
            // key the table does not name means nothing).
            KeyCode::Char(c) if !held.intersects(KeyModifiers::CONTROL | KeyModifiers::ALT) => {
                Some(Action::FilterEdit(Edit::Insert(c)))
            }
            _ => None,
        });
    }
    bound(k.code, held, Some(app.focus))
}

/// Whether `action` is one of the filter bar's: what a key means while the bar is open.
pub fn editing(action: &Action) -> bool {
    matches!(
        action,
        Action::FilterEdit(_) | Action::FilterPaste(_) | Action::FilterSubmit | Action::FilterCancel
    )
}

/// What [`BINDINGS`] says `code` does with `held` down: in the open filter bar (`focus` is
/// `None`), or with the focus on a pane.
fn bound(code: KeyCode, held: KeyModifiers, focus: Option<Pane>) -> Option<Action> {
    BINDINGS
        .iter()
        .filter(|b| match (focus, b.when) {
            (None, _) | (Some(_), When::Always) => true,
            (Some(f), When::In(pane)) => f == pane,
        })
        .flat_map(|b| b.actions)
        .filter(|(key, action)| editing(action) == focus.is_none() && key.matches(code, held))
        // The first of those needing the most modifiers.
        .fold(None, |best: Option<&(Key, Action)>, this| match best {
            Some(b) if b.0.needs() >= this.0.needs() => Some(b),
            _ => Some(this),
        })
        .map(|(_, action)| action.clone())
}

/// The action for a mouse event, if any.
pub fn mouse(m: MouseEvent) -> Option<Action> {
    let (x, y) = (m.column, m.row);
    Some(Action::Mouse(match m.kind {
        MouseEventKind::Down(MouseButton::Left) => Mouse::Down { x, y },
        MouseEventKind::Drag(MouseButton::Left) => Mouse::Drag { x, y },
        MouseEventKind::Up(MouseButton::Left) => Mouse::Up { x, y },
        MouseEventKind::ScrollUp => Mouse::ScrollUp { x, y },
        MouseEventKind::ScrollDown => Mouse::ScrollDown { x, y },
        _ => return None,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn held(k: &Key) -> KeyModifiers {
        let mut m = KeyModifiers::NONE;
        m.set(KeyModifiers::CONTROL, k.ctrl);
        m.set(KeyModifiers::ALT, k.alt);
        m
    }

    /// Every key the help lists does what its line says (no other line takes it), where the
    /// line applies, and nothing where it does not; the filter bar's keys in the open bar.
    #[test]
    fn every_listed_key_does_what_the_help_says() {
        for b in BINDINGS {
            for (k, action) in b.actions {
                let want = format!("{action:?}");
                if editing(action) {
                    let got = bound(k.code, held(k), None).map(|a| format!("{a:?}"));
                    assert_eq!(got, Some(want), "{} ({}) in the filter bar", b.keys, b.help);
                    // A plain character would be typed, not bound.
                    assert!(
                        k.ctrl || k.alt || !matches!(k.code, KeyCode::Char(_)),
                        "{}: {:?} cannot be typed",
                        b.keys,
                        k.code
                    );
                    continue;
                }
                for pane in [Pane::Spectrogram, Pane::Breakdown, Pane::Events] {
                    let got = bound(k.code, held(k), Some(pane)).map(|a| format!("{a:?}"));
                    let applies = b.when == When::Always || b.when == When::In(pane);
                    assert_eq!(got, applies.then(|| want.clone()), "{} ({}) in {pane:?}", b.keys, b.help);
                }
            }
        }
        let (none, ctrl, alt) = (KeyModifiers::NONE, KeyModifiers::CONTROL, KeyModifiers::ALT);
        let pane = Some(Pane::Events);
        // Ctrl-C quits; `c` alone changes the palette; `z` alone does nothing.
        assert!(matches!(bound(KeyCode::Char('c'), ctrl, pane), Some(Action::Quit)));
        assert!(matches!(
            bound(KeyCode::Char('c'), none, pane),
            Some(Action::CyclePalette)
        ));
        assert!(bound(KeyCode::Char('z'), none, pane).is_none());
        // In the bar: Alt-Backspace is not Backspace, `w` without Ctrl is not Ctrl-W.
        let bar = |code, m| bound(code, m, None).map(|a| format!("{a:?}"));
        assert_eq!(bar(KeyCode::Backspace, alt).as_deref(), Some("FilterEdit(KillWordBack)"));
        assert_eq!(bar(KeyCode::Backspace, none).as_deref(), Some("FilterEdit(Backspace)"));
        assert_eq!(bar(KeyCode::Char('w'), none), None);
        assert_eq!(bar(KeyCode::Char('w'), ctrl).as_deref(), Some("FilterEdit(KillToSpace)"));
    }
}
