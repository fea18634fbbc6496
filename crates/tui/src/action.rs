//! Everything that can happen to the viewer, as data: [`Action`]s are what [`crate::App::update`]
//! takes. Keys and mouse events become actions in [`crate::keys`]; worker replies and ticks
//! arrive as actions too, so a test can drive the whole app without a terminal.

use std::time::Duration;

use crate::worker::Reply;

/// A direction for the cursor or a list selection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Move {
    Up,
    Down,
    Left,
    Right,
    PageUp,
    PageDown,
    Home,
    End,
}

/// An edit of the filter bar's text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Edit {
    Insert(char),
    Backspace,
    Delete,
    Left,
    Right,
    Home,
    End,
    /// ↑: older history entry.
    Older,
    /// ↓: newer history entry.
    Newer,
}

/// A mouse gesture, in terminal cells.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mouse {
    Down { x: u16, y: u16 },
    Drag { x: u16, y: u16 },
    Up { x: u16, y: u16 },
    ScrollUp { x: u16, y: u16 },
    ScrollDown { x: u16, y: u16 },
}

#[derive(Clone, Debug)]
pub enum Action {
    Quit,
    ToggleHelp,
    FocusNext,
    FocusPrev,
    /// Cursor in the spectrogram, selection in a list.
    Move(Move),
    /// Zoom in (finer rows) or out (coarser rows) around the cursor.
    ZoomIn,
    ZoomOut,
    ToggleOrientation,
    /// Start a region at the cursor, or drop the one being selected.
    Mark,
    /// Enter: region → filter clause; breakdown row → `field=value`; event → detail popup.
    Activate,
    /// Esc outside the filter bar: close a popup, drop a region.
    Back,
    /// Undo the last change to the applied filter.
    Undo,
    CyclePalette,
    PlayPause,
    /// Next replay speed (1×, 10×, 100×).
    Speed,
    /// Events: toggle sort by time / by latency.
    Sort,
    /// Breakdown: group by the next / previous field.
    NextField,
    PrevField,
    /// Open the filter bar.
    EditFilter,
    FilterEdit(Edit),
    FilterSubmit,
    FilterCancel,
    Mouse(Mouse),
    Resize(u16, u16),
    Tick(Duration),
    Reply(Reply),
}
