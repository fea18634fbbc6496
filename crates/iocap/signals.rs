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

/// Whether a signal [`install`]ed has come.
pub fn stop_requested() -> bool {
    STOP.load(Ordering::Relaxed)
}
