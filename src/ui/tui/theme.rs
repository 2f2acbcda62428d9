//! The console's styles. ANSI colours only, so the user's terminal theme
//! decides the actual colours: default text, dim secondary, one accent (the
//! agent), green and red for success and failure, and one strong style
//! reserved for `action_required`. With `no_color` every style keeps its
//! modifiers (bold, dim, reversed) and drops its colour; meaning is never
//! carried by colour alone (rows also have textual markers).

use ratatui::style::{Color, Modifier, Style};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Theme {
    pub no_color: bool,
}

impl Theme {
    fn fg(self, c: Color) -> Style {
        match self.no_color {
            true => Style::default(),
            false => Style::default().fg(c),
        }
    }

    pub fn text(self) -> Style {
        Style::default()
    }

    pub fn dim(self) -> Style {
        Style::default().add_modifier(Modifier::DIM)
    }

    pub fn bold(self) -> Style {
        Style::default().add_modifier(Modifier::BOLD)
    }

    pub fn italic(self) -> Style {
        Style::default().add_modifier(Modifier::ITALIC)
    }

    /// The agent's accent (its name, the selection, inline code).
    pub fn accent(self) -> Style {
        self.fg(Color::Cyan)
    }

    pub fn ok(self) -> Style {
        self.fg(Color::Green)
    }

    pub fn err(self) -> Style {
        self.fg(Color::Red)
    }

    /// Reserved for `action_required`: impossible to miss even without
    /// colour (bold and reversed).
    pub fn strong(self) -> Style {
        self.fg(Color::Yellow)
            .add_modifier(Modifier::BOLD | Modifier::REVERSED)
    }

    /// The text of an `action_required` row (bold, coloured when allowed).
    pub fn attention(self) -> Style {
        self.fg(Color::Yellow).add_modifier(Modifier::BOLD)
    }

    /// The selected line of a list.
    pub fn selected(self) -> Style {
        Style::default().add_modifier(Modifier::REVERSED)
    }

    pub fn code(self) -> Style {
        self.fg(Color::Cyan)
    }
}
