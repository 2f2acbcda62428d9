//! The help overlay, generated from the key and command tables
//! (`keymap::KEYS`, `keymap::COMMANDS`): nothing here is written by hand.

use std::cell::Cell;

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};

use super::super::composer::usage;
use super::super::keymap::{Action, OverlayKind, COMMANDS, HELP_CONTEXTS, KEYS};
use super::super::theme::Theme;
use super::super::wrap::{fit, wrap};
use super::{draw_lines, header, Ctx, Look};

#[derive(Debug, Default)]
pub struct Help {
    /// First line shown.
    top: usize,
    /// Lines at the last draw (for clamping).
    len: Cell<usize>,
}

impl Help {
    pub fn on_action(&mut self, action: Action, ctx: &mut Ctx<'_>) {
        let max = self.len.get().saturating_sub(ctx.page.max(1));
        self.top = match action {
            Action::Up => self.top.saturating_sub(1),
            Action::Down => self.top + 1,
            Action::PageUp => self.top.saturating_sub(ctx.page),
            Action::PageDown => self.top + ctx.page,
            Action::Home => 0,
            Action::End => max,
            _ => self.top,
        }
        .min(max);
    }

    pub fn render(&self, area: Rect, buf: &mut Buffer, look: &Look<'_>) {
        let lines = lines(usize::from(area.width), look.theme);
        self.len.set(lines.len());
        let top = self
            .top
            .min(lines.len().saturating_sub(usize::from(area.height)));
        draw_lines(area, buf, &lines[top..]);
    }
}

/// The whole help text at `width`.
pub fn lines(width: usize, theme: Theme) -> Vec<Line<'static>> {
    let mut out = vec![header("Slash commands", theme)];
    let key_w = COMMANDS
        .iter()
        .filter(|c| c.listed)
        .map(|c| usage(c).chars().count())
        .max()
        .unwrap_or(10)
        .min(width / 2)
        + 2;
    for c in COMMANDS.iter().filter(|c| c.listed) {
        let mut desc = c.description.to_owned();
        if c.while_running != super::super::keymap::WhileRunning::Available {
            desc = format!("{desc} ({})", c.while_running.label());
        }
        out.extend(entry(&usage(c), &desc, key_w, width, theme));
    }
    out.extend(entry(
        "!CMD",
        "run CMD as your own command task in the agent's execution root (never sandboxed: it is yours, not the agent's)",
        key_w,
        width,
        theme,
    ));
    for ctx in HELP_CONTEXTS {
        out.push(Line::default());
        out.push(header(ctx.title(), theme));
        let keys: Vec<_> = KEYS.iter().filter(|b| b.context == *ctx).collect();
        let key_w = keys
            .iter()
            .map(|b| b.keys.chars().count())
            .max()
            .unwrap_or(8)
            .min(width / 2)
            + 2;
        for b in keys {
            out.extend(entry(b.keys, b.description, key_w, width, theme));
        }
    }
    out
}

fn entry(key: &str, desc: &str, key_w: usize, width: usize, theme: Theme) -> Vec<Line<'static>> {
    let first = [Span::styled(
        format!("  {}", fit(key, key_w)),
        theme.accent(),
    )];
    let rest = [Span::raw(" ".repeat(key_w + 2))];
    wrap(&[Span::raw(desc.to_owned())], width, &first, &rest)
}

// ---- as an overlay -----------------------------------------------------------

impl super::OverlayView for Help {
    fn kind(&self) -> OverlayKind {
        OverlayKind::Help
    }

    fn title(&self, _look: &Look<'_>) -> String {
        " Help ".to_owned()
    }

    fn on_action(&mut self, action: Action, ctx: &mut Ctx<'_>) {
        Help::on_action(self, action, ctx)
    }

    fn render(&self, area: Rect, buf: &mut Buffer, look: &Look<'_>) {
        Help::render(self, area, buf, look)
    }
}
