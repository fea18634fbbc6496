//! Replay: a clock running through the capture at 1×, 10× or 100× its speed, which the view
//! follows so that the clock's row is the last one shown, as sysdig's animated spectrogram
//! scrolled.

use std::time::Duration;

use crate::action::Action;

/// Replay speeds.
pub const SPEEDS: [u64; 3] = [1, 10, 100];

/// The replay's state.
#[derive(Debug)]
pub struct Replay {
    /// The clock is running.
    pub playing: bool,
    /// Index in [`SPEEDS`].
    pub speed: usize,
    /// The clock, ns since boot.
    pub at: u64,
}

/// Where a tick leaves the replay.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// Not playing.
    Idle,
    /// The clock passed the end of the capture: stopped.
    Ended,
    /// The view should start here.
    Follow(u64),
}

impl Replay {
    /// Stopped, at `start`.
    pub fn new(start: u64) -> Replay {
        Replay {
            playing: false,
            speed: 0,
            at: start,
        }
    }

    /// The replay's part of `action`: play or pause (playing starts at the view's start,
    /// `view_start`), the next speed.
    pub fn update(&mut self, action: &Action, view_start: u64) {
        match action {
            Action::PlayPause => {
                self.playing = !self.playing;
                if self.playing {
                    self.at = view_start;
                }
            }
            Action::Speed => self.speed = (self.speed + 1) % SPEEDS.len(),
            _ => {}
        }
    }

    /// `dt` of wall time passed: move the clock, and say where a view of `rows` rows of
    /// `interval` ns, aligned on rows from the capture's `start`, should start to show it on
    /// its last row; stops at the capture's `end`.
    pub fn tick(&mut self, dt: Duration, (start, end): (u64, u64), interval: u64, rows: usize) -> Step {
        if !self.playing {
            return Step::Idle;
        }
        let dt = u64::try_from(dt.as_nanos()).unwrap_or(u64::MAX);
        self.at = self.at.saturating_add(dt.saturating_mul(SPEEDS[self.speed]));
        if self.at >= end {
            self.playing = false;
            return Step::Ended;
        }
        let rows = rows.max(1) as u64;
        let want = self.at.saturating_sub(interval.saturating_mul(rows - 1));
        Step::Follow(start + (want.saturating_sub(start) / interval) * interval)
    }
}
