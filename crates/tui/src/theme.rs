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

/// Levels of a difference map's cells, each sign ("B has more", "A has more"), 0 meaning none.
pub const DIFF_LEVELS: usize = 6;

/// xterm-256 indices of a difference map's levels 1.. where B has more (warm) and where A has
/// more (blue), in the classic palette and the colour-blind one (orange against blue).
const MORE_B: [u8; 5] = [88, 124, 160, 196, 203];
const MORE_B_CB: [u8; 5] = [130, 166, 172, 208, 214];
const MORE_A: [u8; 5] = [24, 25, 26, 33, 39];

/// Which side of a comparison something is of.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    /// Side A: the pinned filter, or the first capture.
    A,
    /// Side B: the filter bar's, the second capture.
    B,
}

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

    /// A comparison side's colour (none without colours): the histogram's bars, the
    /// comparison line's marks.
    pub fn side_color(&self, side: Side) -> Option<Color> {
        match (self.palette, side) {
            (Palette::Mono, _) => None,
            (Palette::ColorBlind, Side::B) => Some(Color::Indexed(MORE_B_CB[3])),
            (_, Side::B) => Some(Color::Indexed(MORE_B[3])),
            (_, Side::A) => Some(Color::Indexed(MORE_A[4])),
        }
    }

    /// Text in a comparison side's colour.
    pub fn side(&self, side: Side) -> Style {
        self.side_color(side).map_or(Style::default(), |c| Style::default().fg(c))
    }

    /// Glyph and style of a difference map's cell: B − A of level `level` (0 to
    /// [`DIFF_LEVELS`] − 1, by [`iocap_analysis::spectro::shade`] of the difference's size),
    /// more events on side `more`. The glyph says the sign without colour: `+` where B has more,
    /// `-` where A has; the largest differences are bold.
    pub fn diff(&self, level: usize, more: Side) -> (char, Style) {
        if level == 0 {
            return (' ', Style::default());
        }
        let i = (level - 1).min(MORE_A.len() - 1);
        let (glyph, ramp) = match (more, self.palette) {
            (Side::B, Palette::ColorBlind) => ('+', MORE_B_CB),
            (Side::B, _) => ('+', MORE_B),
            (Side::A, _) => ('-', MORE_A),
        };
        let style = match self.palette {
            Palette::Mono => Style::default(),
            _ => Style::default().fg(Color::Indexed(ramp[i])),
        };
        let style = if level + 1 >= DIFF_LEVELS {
            style.add_modifier(Modifier::BOLD)
        } else {
            style
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

    /// The `i`-th part of a bar split into parts (a call's anatomy): colours that tell
    /// neighbours apart (the colour-blind palette's from Okabe and Ito's), the label in black;
    /// without colour, reversed and plain by turns.
    pub fn part(&self, i: usize) -> Style {
        const CLASSIC: [Color; 6] = [
            Color::Cyan,
            Color::Yellow,
            Color::Magenta,
            Color::Green,
            Color::LightBlue,
            Color::LightRed,
        ];
        const COLOR_BLIND: [Color; 6] = [
            Color::Indexed(214),
            Color::Indexed(74),
            Color::Indexed(35),
            Color::Indexed(227),
            Color::Indexed(32),
            Color::Indexed(167),
        ];
        let bg = match self.palette {
            Palette::Mono if i.is_multiple_of(2) => return Style::default().add_modifier(Modifier::REVERSED),
            Palette::Mono => return Style::default().add_modifier(Modifier::UNDERLINED),
            Palette::Classic => CLASSIC[i % CLASSIC.len()],
            Palette::ColorBlind => COLOR_BLIND[i % COLOR_BLIND.len()],
        };
        Style::default().bg(bg).fg(Color::Black)
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
