//! Keys and mouse → [`Action`]s, and the help that lists them.
//!
//! One table, [`BINDINGS`], says what every key does outside the filter bar; [`key`] reads it
//! to turn a key press into an action and the `?` popup prints it, so a key cannot work
//! without being listed, nor be listed without working. While the filter bar is open, keys
//! edit its text (`edit`; the `/` line of the table describes them). What a key means
//! depends only on whether the filter bar is open and which pane has the focus, both readable
//! from `&App`.

use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers, MouseButton, MouseEvent, MouseEventKind};

use crate::action::{Action, Edit, Mouse, Move};
use crate::app::App;
use crate::layout::Pane;

/// A key as the table names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Key {
    code: KeyCode,
    /// Only with Ctrl held. A key without it matches whatever modifiers are held.
    ctrl: bool,
}

const fn char(c: char) -> Key {
    Key {
        code: KeyCode::Char(c),
        ctrl: false,
    }
}

const fn ctrl(c: char) -> Key {
    Key {
        code: KeyCode::Char(c),
        ctrl: true,
    }
}

const fn code(code: KeyCode) -> Key {
    Key { code, ctrl: false }
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
    /// Where they apply.
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

/// Every key outside the filter bar, in the order `?` lists them. Earlier lines win: Ctrl-C
/// quits before `c` changes the palette.
pub static BINDINGS: &[Binding] = &[
    Binding {
        keys: "q, Ctrl-C",
        help: "quit",
        when: When::Always,
        actions: &[(char('q'), Action::Quit), (ctrl('c'), Action::Quit)],
    },
    Binding {
        keys: "?",
        help: "this help (Esc closes)",
        when: When::Always,
        actions: &[(char('?'), Action::ToggleHelp)],
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
        actions: &[(char('/'), Action::EditFilter)],
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
        keys: "PgUp/PgDn, wheel",
        help: "scrub back / forward in time",
        when: When::Always,
        actions: &[
            (code(KeyCode::PageUp), Action::Move(Move::PageUp)),
            (code(KeyCode::PageDown), Action::Move(Move::PageDown)),
        ],
    },
    Binding {
        keys: "Home/End",
        help: "start / end of the capture",
        when: When::Always,
        actions: &[
            (code(KeyCode::Home), Action::Move(Move::Home)),
            (code(KeyCode::End), Action::Move(Move::End)),
        ],
    },
    Binding {
        keys: "+ / -",
        help: "zoom in / out (row interval 1ms…10s)",
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
        keys: "m",
        help: "block requests plot latency / queue / queue+device",
        when: When::Always,
        actions: &[(char('m'), Action::CycleMeasure)],
    },
    Binding {
        keys: "o",
        help: "spectrogram orientation: sysdig / heatmap",
        when: When::Always,
        actions: &[(char('o'), Action::ToggleOrientation)],
    },
    Binding {
        keys: "f, F",
        help: "breakdown: next / previous field",
        when: When::Always,
        actions: &[(char('f'), Action::NextField), (char('F'), Action::PrevField)],
    },
    Binding {
        keys: "d",
        help: "breakdown: calls' latency as disk time / other time",
        when: When::Always,
        actions: &[(char('d'), Action::DiskSplit)],
    },
    Binding {
        keys: "s",
        help: "events: sort by time / latency",
        when: When::In(Pane::Events),
        actions: &[(char('s'), Action::Sort)],
    },
    Binding {
        keys: "g",
        help: "events: block request ↔ its call (again: next request)",
        when: When::In(Pane::Events),
        actions: &[(char('g'), Action::Jump)],
    },
    Binding {
        keys: "space",
        help: "replay: play / pause",
        when: When::Always,
        actions: &[(char(' '), Action::PlayPause)],
    },
    Binding {
        keys: "x",
        help: "replay speed 1× / 10× / 100×",
        when: When::Always,
        actions: &[(char('x'), Action::Speed)],
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
    let held_ctrl = k.modifiers.contains(KeyModifiers::CONTROL);
    if app.filter.input.is_some() {
        // Ctrl-C quits from the filter bar too.
        if held_ctrl && k.code == KeyCode::Char('c') {
            return Some(Action::Quit);
        }
        return edit(k.code, held_ctrl).map(Action::FilterEdit).or(match k.code {
            KeyCode::Enter => Some(Action::FilterSubmit),
            KeyCode::Esc => Some(Action::FilterCancel),
            _ => None,
        });
    }
    bound(k.code, held_ctrl, app.focus)
}

/// What [`BINDINGS`] says `code` does with the focus on `focus`.
fn bound(code: KeyCode, held_ctrl: bool, focus: Pane) -> Option<Action> {
    BINDINGS
        .iter()
        .filter(|b| match b.when {
            When::Always => true,
            When::In(pane) => focus == pane,
        })
        .flat_map(|b| b.actions)
        .find(|(key, _)| key.code == code && (held_ctrl || !key.ctrl))
        .map(|(_, action)| action.clone())
}

/// The filter bar's edit for a key: text, caret movement, history.
fn edit(code: KeyCode, ctrl: bool) -> Option<Edit> {
    Some(match code {
        KeyCode::Char(c) if !ctrl => Edit::Insert(c),
        KeyCode::Char('a') => Edit::Home,
        KeyCode::Char('e') => Edit::End,
        KeyCode::Backspace => Edit::Backspace,
        KeyCode::Delete => Edit::Delete,
        KeyCode::Left => Edit::Left,
        KeyCode::Right => Edit::Right,
        KeyCode::Home => Edit::Home,
        KeyCode::End => Edit::End,
        KeyCode::Up => Edit::Older,
        KeyCode::Down => Edit::Newer,
        _ => return None,
    })
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

    /// Every key the help lists does what its line says (no earlier line takes it), where the
    /// line applies, and nothing where it does not.
    #[test]
    fn every_listed_key_does_what_the_help_says() {
        for b in BINDINGS {
            for (k, action) in b.actions {
                for pane in [Pane::Spectrogram, Pane::Breakdown, Pane::Events] {
                    let got = bound(k.code, k.ctrl, pane).map(|a| format!("{a:?}"));
                    let applies = b.when == When::Always || b.when == When::In(pane);
                    let want = applies.then(|| format!("{action:?}"));
                    assert_eq!(got, want, "{} ({}) in {pane:?}", b.keys, b.help);
                }
            }
        }
        // Ctrl-C quits; `c` alone changes the palette; `z` alone does nothing.
        assert!(matches!(
            bound(KeyCode::Char('c'), true, Pane::Events),
            Some(Action::Quit)
        ));
        assert!(matches!(
            bound(KeyCode::Char('c'), false, Pane::Events),
            Some(Action::CyclePalette)
        ));
        assert!(bound(KeyCode::Char('z'), false, Pane::Events).is_none());
    }
}
