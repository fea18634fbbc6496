//! Keys and mouse → [`Action`]s. What a key means depends only on whether the filter bar is
//! open and which pane has the focus, both readable from `&App`.

use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers, MouseButton, MouseEvent, MouseEventKind};

use crate::action::{Action, Edit, Mouse, Move};
use crate::app::App;
use crate::layout::Pane;

/// The action for a key press, if it means anything here.
pub fn key(app: &App, k: KeyEvent) -> Option<Action> {
    if k.kind == KeyEventKind::Release {
        return None;
    }
    let ctrl = k.modifiers.contains(KeyModifiers::CONTROL);
    if ctrl && k.code == KeyCode::Char('c') {
        return Some(Action::Quit);
    }
    if app.input.is_some() {
        return Some(match k.code {
            KeyCode::Enter => Action::FilterSubmit,
            KeyCode::Esc => Action::FilterCancel,
            KeyCode::Char(c) if !ctrl => Action::FilterEdit(Edit::Insert(c)),
            KeyCode::Char('a') => Action::FilterEdit(Edit::Home),
            KeyCode::Char('e') => Action::FilterEdit(Edit::End),
            KeyCode::Backspace => Action::FilterEdit(Edit::Backspace),
            KeyCode::Delete => Action::FilterEdit(Edit::Delete),
            KeyCode::Left => Action::FilterEdit(Edit::Left),
            KeyCode::Right => Action::FilterEdit(Edit::Right),
            KeyCode::Home => Action::FilterEdit(Edit::Home),
            KeyCode::End => Action::FilterEdit(Edit::End),
            KeyCode::Up => Action::FilterEdit(Edit::Older),
            KeyCode::Down => Action::FilterEdit(Edit::Newer),
            _ => return None,
        });
    }
    Some(match k.code {
        KeyCode::Char('q') => Action::Quit,
        KeyCode::Char('?') => Action::ToggleHelp,
        KeyCode::Esc => Action::Back,
        KeyCode::Tab => Action::FocusNext,
        KeyCode::BackTab => Action::FocusPrev,
        KeyCode::Char('/') => Action::EditFilter,
        KeyCode::Char('u') => Action::Undo,
        KeyCode::Char('z') if ctrl => Action::Undo,
        KeyCode::Up | KeyCode::Char('k') => Action::Move(Move::Up),
        KeyCode::Down | KeyCode::Char('j') => Action::Move(Move::Down),
        KeyCode::Left | KeyCode::Char('h') => Action::Move(Move::Left),
        KeyCode::Right | KeyCode::Char('l') => Action::Move(Move::Right),
        KeyCode::PageUp => Action::Move(Move::PageUp),
        KeyCode::PageDown => Action::Move(Move::PageDown),
        KeyCode::Home => Action::Move(Move::Home),
        KeyCode::End => Action::Move(Move::End),
        KeyCode::Char('+') | KeyCode::Char('=') => Action::ZoomIn,
        KeyCode::Char('-') => Action::ZoomOut,
        KeyCode::Char('o') => Action::ToggleOrientation,
        KeyCode::Char('v') => Action::Mark,
        KeyCode::Enter => Action::Activate,
        KeyCode::Char('c') => Action::CyclePalette,
        KeyCode::Char(' ') => Action::PlayPause,
        KeyCode::Char('x') => Action::Speed,
        KeyCode::Char('s') if app.focus == Pane::Events => Action::Sort,
        KeyCode::Char('f') => Action::NextField,
        KeyCode::Char('F') => Action::PrevField,
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
