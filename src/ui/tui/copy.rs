//! `/copy`: text from the conversation to the clipboard, through the
//! terminal (OSC 52, written by the console's edge), for when the mouse
//! is kept for the wheel and a drag selects nothing.

use super::msg::Effect;
use super::rows::Tone;
use super::state::State;

/// Most bytes `/copy` hands the terminal (terminals bound what an OSC 52
/// sequence may carry: ~100,000 bytes once in base64).
const COPY_MAX: usize = 74 * 1024;

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
    if !state.clipboard {
        return state.conversation.note(
            "This terminal cannot take a clipboard write (OSC 52): select the text with the \
             mouse (/mouse off) instead.",
            Tone::Info,
        );
    }
    // What a paste would act on is what the screen showed: controls and
    // hidden characters the screen showed escaped are left out.
    let (kept, dropped) = crate::model::text::without_hidden(&text);
    text = kept;
    let chars = text.chars().count();
    let mut said = format!("Copied {chars} characters");
    if text.len() > COPY_MAX {
        // Terminals bound the sequence's bytes: cut on a character.
        let mut end = COPY_MAX;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
        said = format!(
            "Copied the first {} of {chars} characters",
            text.chars().count()
        );
    }
    let left_out = match dropped {
        true => " (control and hidden characters left out)",
        false => "",
    };
    state.conversation.note(
        format!(
            "{said}{left_out} to the clipboard through the terminal (OSC 52: the terminal must \
             allow it; under tmux, `set -g set-clipboard on`)."
        ),
        Tone::Ok,
    );
    fx.push(Effect::Copy { text });
}
