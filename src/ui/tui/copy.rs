//! `/copy`: text from the conversation to the clipboard, through the
//! terminal (OSC 52, written by the console's edge), for when the mouse
//! is kept for the wheel and a drag selects nothing.

use super::msg::Effect;
use super::rows::Tone;
use super::state::State;

/// Most characters `/copy` hands the terminal (terminals bound what an
/// OSC 52 sequence may carry).
const COPY_MAX: usize = 64 * 1024;

/// `/copy`: the row find shows, else the newest answer, as its source
/// text (markdown as written), to the clipboard through the terminal.
pub fn copy(state: &mut State, fx: &mut Vec<Effect>) {
    use super::rows::RowKind;
    let c = &state.conversation;
    let text_of = |k: &RowKind| match k {
        RowKind::Brief { text, .. }
        | RowKind::Operator { text, .. }
        | RowKind::Note { text, .. } => Some(text.clone()),
        RowKind::Alert {
            summary, detail, ..
        } => Some(
            std::iter::once(summary.clone())
                .chain(detail.iter().cloned())
                .collect::<Vec<_>>()
                .join("\n"),
        ),
        _ => None,
    };
    let found = match (state.find.is_some(), c.find_at) {
        (true, Some(i)) => c.rows.get(i).and_then(|r| {
            text_of(r.kind())
                .or_else(|| Some(super::rows::plain_lines(r.kind(), 400, state.mode).join("\n")))
        }),
        _ => c.rows.iter().rev().find_map(|r| match r.kind() {
            RowKind::Brief { .. } => text_of(r.kind()),
            _ => None,
        }),
    };
    let Some(mut text) = found.filter(|t| !t.trim().is_empty()) else {
        return state.conversation.note(
            "Nothing to copy yet: no answer in the conversation.",
            Tone::Info,
        );
    };
    let chars = text.chars().count();
    let mut said = format!("Copied {chars} characters");
    if chars > COPY_MAX {
        text = text.chars().take(COPY_MAX).collect();
        said = format!("Copied the first {COPY_MAX} of {chars} characters");
    }
    state.conversation.note(
        format!(
            "{said} to the clipboard through the terminal (OSC 52: the terminal must allow it; \
             under tmux, `set -g set-clipboard on`)."
        ),
        Tone::Ok,
    );
    fx.push(Effect::Copy { text });
}
