//! A one-line input inside an overlay (a new agent's name, a work item's
//! objective, a completion note, a blocker, task input, a filter). It
//! reuses the composer's editing; Enter confirms and Esc closes the line
//! (not the overlay).

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};

use super::super::composer::Composer;
use super::super::theme::Theme;
use super::super::wrap::width;

/// What a confirmed input is for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Purpose {
    NewAgent,
    AddWork,
    CompleteWork {
        id: String,
    },
    Blocker {
        id: String,
    },
    TaskInput {
        id: String,
    },
    FilterKind,
    JumpSeq,
    AttachWorkspace,
    /// The note of a denial; `runtime` names another runtime than the
    /// one shown, where the call waits.
    DenyNote {
        id: String,
        agent_id: String,
        runtime: Option<String>,
    },
}

#[derive(Debug, Clone, PartialEq)]
pub struct Input {
    pub prompt: String,
    pub purpose: Purpose,
    pub field: Composer,
}

impl Input {
    pub fn new(prompt: &str, purpose: Purpose, initial: &str) -> Input {
        let mut field = Composer::default();
        field.set(initial);
        Input {
            prompt: prompt.to_owned(),
            purpose,
            field,
        }
    }

    /// Draw the line; returns the cursor position.
    pub fn render(&self, area: Rect, buf: &mut Buffer, theme: Theme) -> (u16, u16) {
        let prompt = format!("{}: ", self.prompt);
        let pw = width(&prompt);
        let avail = usize::from(area.width).saturating_sub(pw + 1).max(1);
        let text = self.field.text();
        let before = &text[..self.field.cursor()];
        // Keep the cursor in view: show the tail when the text is long.
        let skip = width(before).saturating_sub(avail);
        let shown: String = {
            let mut used = 0;
            text.chars()
                .skip_while(|c| {
                    let w = width(&c.to_string());
                    used += w;
                    used <= skip
                })
                .collect()
        };
        let line = Line::from(vec![
            Span::styled(prompt, theme.accent().patch(theme.bold())),
            Span::raw(shown),
        ]);
        buf.set_line(area.x, area.y, &line, area.width);
        let x = area.x + (pw + width(before) - skip).min(usize::from(area.width) - 1) as u16;
        (x, area.y)
    }

    /// The submitted text (trimmed).
    pub fn value(&self) -> String {
        self.field.text().trim().to_owned()
    }
}
