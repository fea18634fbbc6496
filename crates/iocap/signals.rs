//! Ctrl-C and SIGTERM as a request to stop, for the commands that run until told to (`record`,
//! the followers `events -f` and `iostat -f`): they finish what they were doing (a recording's
//! file, a line of output) instead of dying in the middle of it.

use std::sync::atomic::{AtomicBool, Ordering};

static STOP: AtomicBool = AtomicBool::new(false);

#[cfg(unix)]
extern "C" fn on_signal(_: libc::c_int) {
    STOP.store(true, Ordering::Relaxed);
}

/// From now on SIGINT, SIGTERM (and, when `hangup`, SIGHUP: the terminal went away) only set
/// the flag [`stop_requested`] reads. Elsewhere than on Unix, Ctrl-C ends the process as ever.
#[cfg(not(unix))]
pub fn install(_hangup: bool) {}

/// From now on SIGINT, SIGTERM (and, when `hangup`, SIGHUP: the terminal went away) only set
/// the flag [`stop_requested`] reads.
#[cfg(unix)]
pub fn install(hangup: bool) {
    let hup = if hangup { Some(libc::SIGHUP) } else { None };
    for sig in [libc::SIGINT, libc::SIGTERM].into_iter().chain(hup) {
        // SAFETY: the handler only stores to an atomic, which is async-signal-safe.
        unsafe {
            libc::signal(sig, on_signal as *const () as libc::sighandler_t);
        }
    }
}

/// For the viewer: SIGINT, SIGTERM, SIGHUP and SIGQUIT only set the flag, which the viewer
/// looks at before every frame ([`flag`]), so that it restores the terminal (raw mode, the
/// alternate screen, the mouse) before it exits, however it is told to.
#[cfg(unix)]
pub fn install_for_viewer() {
    install(true);
    // SAFETY: as in install.
    unsafe {
        libc::signal(libc::SIGQUIT, on_signal as *const () as libc::sighandler_t);
    }
}

/// [`install_for_viewer`] elsewhere than on Unix: nothing to do.
#[cfg(not(unix))]
pub fn install_for_viewer() {}

/// The flag the signals set, for a loop that looks at it itself.
pub fn flag() -> &'static AtomicBool {
    &STOP
}

/// Whether a signal [`install`]ed has come.
pub fn stop_requested() -> bool {
    STOP.load(Ordering::Relaxed)
}
