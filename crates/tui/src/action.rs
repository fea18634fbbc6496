//! Everything that can happen to the viewer, as data: [`Action`]s are what [`crate::App::update`]
//! takes. Keys and mouse events become actions in [`crate::keys`]; worker replies and ticks
//! arrive as actions too, so a test can drive the whole app without a terminal.

use std::time::Duration;

use crate::worker::Reply;

/// A direction for the cursor or a list selection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Move {
    /// ↑ or `k`.
    Up,
    /// ↓ or `j`.
    Down,
    /// ← or `h`.
    Left,
    /// → or `l`.
    Right,
    /// PgUp: scrub back in time.
    PageUp,
    /// PgDn: scrub forward in time.
    PageDown,
    /// Home: the start of the capture.
    Home,
    /// End: the end of the capture.
    End,
}

/// A jump of the spectrogram's cursor along latency, to where the view's events are: onto the
/// row holding the most of them in the cell reached.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Seek {
    /// `]`: the next slower latency cell with events.
    NextEvents,
    /// `[`: the next faster latency cell with events.
    PrevEvents,
    /// `}`: ten times slower (a decade).
    DecadeSlower,
    /// `{`: ten times faster.
    DecadeFaster,
    /// `>`: the slowest cell with events.
    Slowest,
}

/// What a field picked in the picker (`crate::panes::picker`) is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PickFor {
    /// The breakdown's field.
    GroupBy,
    /// The plot's measure: any duration field.
    Measure,
}

/// An edit of the filter bar's text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Edit {
    /// Type this character at the caret.
    Insert(char),
    /// Delete the character before the caret.
    Backspace,
    /// Delete the character at the caret.
    Delete,
    /// Caret one character left (a character with the marks that combine with it).
    Left,
    /// Caret one character right.
    Right,
    /// Caret to the start (Home, Ctrl-A).
    Home,
    /// Caret to the end (End, Ctrl-E).
    End,
    /// Caret to the start of this or the previous word (Alt-B): words are letters, digits and
    /// `_`, as readline's.
    WordLeft,
    /// Caret past the end of this or the next word (Alt-F).
    WordRight,
    /// Delete from the start to the caret (Ctrl-U), kept for [`Edit::Yank`].
    KillToStart,
    /// Delete from the caret to the end (Ctrl-K), kept for [`Edit::Yank`].
    KillToEnd,
    /// Delete back to the previous space (Ctrl-W: a whole `field=value`), kept for
    /// [`Edit::Yank`].
    KillToSpace,
    /// Delete back to the start of the word (Alt-Backspace), kept for [`Edit::Yank`].
    KillWordBack,
    /// Delete to the end of the word (Alt-D), kept for [`Edit::Yank`].
    KillWordForward,
    /// Put the last deleted text back at the caret (Ctrl-Y).
    Yank,
    /// ↑: older history entry.
    Older,
    /// ↓: newer history entry.
    Newer,
}

/// A mouse gesture, in terminal cells.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mouse {
    /// Left button pressed: in the spectrogram, the cursor there and a region started; elsewhere,
    /// the focus to the pane under it.
    Down {
        /// Column, cells from the left.
        x: u16,
        /// Row, cells from the top.
        y: u16,
    },
    /// Moved with the left button held: stretches the region a press on the plot started.
    Drag {
        /// Column, cells from the left.
        x: u16,
        /// Row, cells from the top.
        y: u16,
    },
    /// Left button released: the region stays selected for Enter (a click leaves none).
    Up {
        /// Column, cells from the left.
        x: u16,
        /// Row, cells from the top.
        y: u16,
    },
    /// Wheel turned up: scrub back in time.
    ScrollUp {
        /// Column, cells from the left.
        x: u16,
        /// Row, cells from the top.
        y: u16,
    },
    /// Wheel turned down: scrub forward in time.
    ScrollDown {
        /// Column, cells from the left.
        x: u16,
        /// Row, cells from the top.
        y: u16,
    },
}

/// One thing that happens to the viewer: a key's meaning, a mouse gesture, a resize, a tick
/// or a worker's reply, all handled by [`crate::App::update`].
#[derive(Clone, Debug)]
pub enum Action {
    /// Leave the viewer.
    Quit,
    /// Open or close the `?` help.
    ToggleHelp,
    /// Focus the next pane.
    FocusNext,
    /// Focus the previous pane.
    FocusPrev,
    /// Cursor in the spectrogram, selection in a list.
    Move(Move),
    /// The spectrogram's cursor to where events are, along latency.
    Seek(Seek),
    /// Zoom in (finer rows) or out (coarser rows) around the cursor.
    ZoomIn,
    /// Zoom out (coarser rows) around the cursor.
    ZoomOut,
    /// Turn the spectrogram: as sysdig draws it (time going down) or as a heatmap (time left→right).
    ToggleOrientation,
    /// Start a region at the cursor, or drop the one selected.
    Mark,
    /// Enter: region (else the cursor's cell) → filter clause; breakdown row → `field=value`;
    /// event → detail popup.
    Activate,
    /// Esc outside the filter bar: close a popup, drop a region.
    Back,
    /// Undo the last change to the applied filter.
    Undo,
    /// Next palette: classic, colour-blind.
    CyclePalette,
    /// Next measure of block requests on the latency axis: latency, queue, queue+device.
    CycleMeasure,
    /// Start or pause the replay.
    PlayPause,
    /// Next replay speed (1×, 10×, 100×).
    Speed,
    /// Events: toggle sort by time / by latency.
    Sort,
    /// Events: go to the event linked to the selected one (a block request's call, a call's
    /// next block request).
    Jump,
    /// Breakdown: group by the next field.
    NextField,
    /// Breakdown: go round the groups' figures: share and p99, their calls' latency split into
    /// disk time and the rest, the largest part of their latency.
    DiskSplit,
    /// Show iostat's figures for the view's block requests in place of the event list, or the
    /// list again.
    ToggleIostat,
    /// Show the latency flame graph of the view's calls by user stack in place of the event
    /// list, then by kernel stack, by both, then the list again.
    CycleFlame,
    /// Open the filter bar.
    EditFilter,
    /// An edit of the open filter bar's text.
    FilterEdit(Edit),
    /// Text put in at once at the caret: a paste (the terminal's bracketed paste), or the
    /// characters typed since the last frame, taken as one edit (opening the bar first when
    /// it is closed).
    FilterPaste(String),
    /// Enter in the filter bar: apply its text.
    FilterSubmit,
    /// Esc in the filter bar: close it, the applied filter unchanged.
    FilterCancel,
    /// Open the field picker: the breakdown's field, or the plot's measure.
    Pick(PickFor),
    /// Typing in the open picker.
    PickerEdit(Edit),
    /// Moving the open picker's selection.
    PickerMove(Move),
    /// Enter in the picker: take the selected field.
    PickerSubmit,
    /// Esc in the picker: close it, nothing changed.
    PickerCancel,
    /// A mouse gesture.
    Mouse(Mouse),
    /// The terminal's new size: width and height in cells.
    Resize(u16, u16),
    /// Time passed since the last tick (moves a playing replay on).
    Tick(Duration),
    /// Compare: pin the filter in force as side A's (on one capture, the bar then edits B's),
    /// or let A follow the bar again (on one capture: the comparison ends).
    Pin,
    /// Compare: the spectrogram as one difference map, or the two sides side by side.
    ToggleSideBySide,
    /// A worker's answer.
    Reply(Reply),
    /// A worker's answer about side A of a comparison.
    OtherReply(Reply),
}
