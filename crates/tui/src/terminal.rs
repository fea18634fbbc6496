//! The terminal guard: raw mode, the alternate screen and mouse capture on, and off again
//! however the viewer ends — normal exit, error return, or panic (through a panic hook that
//! restores the terminal before the panic message is printed, so the message is readable).

use std::io::{self, Stdout};

use crossterm::event::{DisableBracketedPaste, DisableMouseCapture, EnableBracketedPaste, EnableMouseCapture};
use crossterm::execute;
use crossterm::terminal::{disable_raw_mode, enable_raw_mode, EnterAlternateScreen, LeaveAlternateScreen};
use ratatui::backend::CrosstermBackend;
use ratatui::Terminal;

/// The terminal in TUI mode; dropping it restores the terminal.
pub struct TerminalGuard {
    /// The terminal to draw frames on.
    pub terminal: Terminal<CrosstermBackend<Stdout>>,
}

impl TerminalGuard {
    /// Enter TUI mode and install the panic hook.
    pub fn enter() -> io::Result<TerminalGuard> {
        install_panic_hook();
        enable_raw_mode()?;
        let mut stdout = io::stdout();
        // Bracketed paste: a paste arrives as one event (one edit of the filter), not as a
        // keystroke per character, each queued before the next key.
        if let Err(e) = execute!(stdout, EnterAlternateScreen, EnableMouseCapture, EnableBracketedPaste) {
            restore();
            return Err(e);
        }
        match Terminal::new(CrosstermBackend::new(stdout)) {
            Ok(terminal) => Ok(TerminalGuard { terminal }),
            Err(e) => {
                restore();
                Err(e)
            }
        }
    }
}

impl Drop for TerminalGuard {
    fn drop(&mut self) {
        restore();
        let _ = self.terminal.show_cursor();
    }
}

/// Leave TUI mode; safe to call more than once and when not in TUI mode.
fn restore() {
    let _ = disable_raw_mode();
    let _ = execute!(
        io::stdout(),
        LeaveAlternateScreen,
        DisableMouseCapture,
        DisableBracketedPaste,
        crossterm::cursor::Show
    );
}

fn install_panic_hook() {
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        restore();
        previous(info);
    }));
}
