//! Colours and the heat ramp: the default sysdig-like palette, a colour-blind-safe one, and
//! none at all when `NO_COLOR` is set.
//!
//! The heat ramp also varies the glyph (` .:-=+*#%@`), so a heatmap stays readable without
//! colour and in monochrome snapshots.

use ratatui::style::{Color, Modifier, Style};

/// Which palette to draw with.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Palette {
    /// Black → green → yellow → red, as sysdig's spectrogram.
    #[default]
    Classic,
    /// Dark blue → teal → yellow (viridis-like): distinguishable with red-green colour blindness.
    ColorBlind,
    /// No colour at all (`NO_COLOR`): glyphs and bold/reverse only.
    Mono,
}

impl Palette {
    /// The palette for this environment: `Mono` when `NO_COLOR` is set and not empty
    /// (<https://no-color.org>), else `Classic`.
    pub fn from_env() -> Palette {
        match std::env::var_os("NO_COLOR") {
            Some(v) if !v.is_empty() => Palette::Mono,
            _ => Palette::Classic,
        }
    }

    /// The next palette for the palette key (Mono is kept when it came from `NO_COLOR`).
    pub fn next(self) -> Palette {
        match self {
            Palette::Classic => Palette::ColorBlind,
            Palette::ColorBlind => Palette::Classic,
            Palette::Mono => Palette::Mono,
        }
    }

}

/// Glyphs from empty to hottest.
pub const HEAT_GLYPHS: [char; 10] = [' ', '.', ':', '-', '=', '+', '*', '#', '%', '@'];

/// xterm-256 indices, coldest first (index 0 is "no events").
const CLASSIC: [u8; 10] = [16, 22, 28, 34, 70, 142, 184, 220, 208, 196];
const COLOR_BLIND: [u8; 10] = [16, 17, 19, 25, 31, 37, 72, 107, 184, 226];

/// Styles used across panes, derived from a [`Palette`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Theme {
    /// The palette drawn with now.
    pub palette: Palette,
}

impl Theme {
    /// Styles in `palette`.
    pub fn new(palette: Palette) -> Theme {
        Theme { palette }
    }

    fn color(&self, c: Color) -> Style {
        match self.palette {
            Palette::Mono => Style::default(),
            _ => Style::default().fg(c),
        }
    }

    /// Glyph and style of heat level `level` ([`iocap_analysis::spectro::shade`] of a cell).
    pub fn heat(&self, level: usize) -> (char, Style) {
        let level = level.min(HEAT_GLYPHS.len() - 1);
        let glyph = HEAT_GLYPHS[level];
        let style = match self.palette {
            Palette::Mono => Style::default(),
            Palette::Classic => Style::default().fg(Color::Indexed(CLASSIC[level])),
            Palette::ColorBlind => Style::default().fg(Color::Indexed(COLOR_BLIND[level])),
        };
        (glyph, style)
    }

    /// Pane titles, and the focused pane's border.
    pub fn title(&self, focused: bool) -> Style {
        if focused {
            self.color(Color::Cyan).add_modifier(Modifier::BOLD)
        } else {
            Style::default()
        }
    }

    /// The cursor row / cell and the selected list row.
    pub fn cursor(&self) -> Style {
        Style::default().add_modifier(Modifier::REVERSED)
    }

    /// A region being selected on the spectrogram.
    pub fn selection(&self) -> Style {
        match self.palette {
            Palette::Mono => Style::default().add_modifier(Modifier::UNDERLINED),
            _ => Style::default().bg(Color::Indexed(24)),
        }
    }

    /// Histogram bars.
    pub fn bar(&self) -> Style {
        match self.palette {
            Palette::ColorBlind => self.color(Color::Indexed(31)),
            _ => self.color(Color::Green),
        }
    }

    /// Errors (the filter bar's bad span, worker failures).
    pub fn error(&self) -> Style {
        match self.palette {
            Palette::Mono => Style::default().add_modifier(Modifier::REVERSED | Modifier::BOLD),
            Palette::ColorBlind => Style::default().fg(Color::Indexed(208)).add_modifier(Modifier::BOLD),
            Palette::Classic => Style::default().fg(Color::Red).add_modifier(Modifier::BOLD),
        }
    }

    /// The marker of a capture being recorded.
    pub fn live(&self) -> Style {
        match self.palette {
            Palette::Mono => Style::default().add_modifier(Modifier::BOLD),
            _ => Style::default().fg(Color::Green).add_modifier(Modifier::BOLD),
        }
    }

    /// Drops: a marker on the spectrogram rows that lost events, and the status count.
    pub fn drops(&self) -> Style {
        match self.palette {
            Palette::Mono => Style::default().add_modifier(Modifier::BOLD),
            _ => Style::default().fg(Color::Magenta).add_modifier(Modifier::BOLD),
        }
    }

    /// Secondary text: axis labels, hints.
    pub fn dim(&self) -> Style {
        match self.palette {
            Palette::Mono => Style::default(),
            _ => Style::default().fg(Color::DarkGray),
        }
    }

    /// The status line's background.
    pub fn status(&self) -> Style {
        match self.palette {
            Palette::Mono => Style::default().add_modifier(Modifier::REVERSED),
            _ => Style::default().bg(Color::Indexed(236)).fg(Color::Indexed(252)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mono_has_no_colour() {
        let t = Theme::new(Palette::Mono);
        for l in 0..10 {
            assert_eq!(t.heat(l).1, Style::default());
        }
        assert_eq!(t.heat(9).0, '@');
    }
}
