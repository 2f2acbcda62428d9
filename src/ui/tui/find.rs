//! Finding text in the conversation (Ctrl+F on an empty composer, or
//! `/find TEXT`): type the text, Enter finds the newest match at or above
//! the view, `n` the next older, `N` the next newer, Esc closes. While a
//! match is shown, `n` and `N` are the find's (not an approval's deny).
//! The search covers the whole conversation: past the oldest row held it
//! pages older events in from the runtime's ledger, a bounded number of
//! pages per step (`MAX_PAGES`), then says how far it looked and that `n`
//! goes further. Matches on screen are highlighted.
//!
//! Pure: rows are matched on their plain text in the current display mode
//! (what the operator can see), case-insensitively.

use ratatui::style::Style;
use ratatui::text::{Line, Span};

use super::conversation::{Conversation, Scroll};
use super::msg::Effect;
use super::rows::plain_lines;
use super::scroll;
use super::state::{layout, State};
use crate::protocol::DisplayMode;

/// Older pages (of `pages::OLDER_EVENTS` events) one step may fetch before
/// it stops and says so.
pub const MAX_PAGES: u32 = 40;

/// Width rows are laid out at to be matched: wide enough that a phrase is
/// rarely split across wrapped lines.
const MATCH_WIDTH: usize = 400;

/// The find line. Where the match is, and where the next older search
/// starts, are the conversation's (`find_at`, `find_from`): rows move.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Find {
    /// What is looked for, as typed.
    pub query: String,
    /// The query is being typed (Enter searches).
    pub editing: bool,
    /// An older page was asked for this step; the search goes on when it
    /// arrives.
    pub paging: bool,
    /// Pages fetched in this step.
    pub pages: u32,
    /// What the last step found, or why it stopped.
    pub note: Option<String>,
}

/// Open the find line.
pub fn open(state: &mut State) {
    state.find = Some(Find {
        editing: true,
        ..Find::default()
    });
}

/// Find `query` from the bottom of the view up (`/find TEXT`, or Enter
/// on the find line); an empty one opens the find line.
pub fn start(state: &mut State, query: &str, fx: &mut Vec<Effect>) {
    if query.trim().is_empty() {
        return open(state);
    }
    state.find = Some(Find {
        query: query.to_owned(),
        ..Find::default()
    });
    let c = &mut state.conversation;
    c.find_at = None;
    c.find_from = view_bottom(c) + 1;
    older(state, fx);
}

/// A key while finding; false when it is not the find line's (it then acts
/// as usual).
pub fn on_key(state: &mut State, key: &crossterm::event::KeyEvent, fx: &mut Vec<Effect>) -> bool {
    use crossterm::event::{KeyCode, KeyModifiers};
    let Some(find) = state.find.as_mut() else {
        return false;
    };
    let plain = !key
        .modifiers
        .intersects(KeyModifiers::CONTROL | KeyModifiers::ALT);
    let ctrl_c = key.code == KeyCode::Char('c') && key.modifiers.contains(KeyModifiers::CONTROL);
    if find.editing {
        match key.code {
            KeyCode::Esc => state.find = None,
            _ if ctrl_c => state.find = None,
            KeyCode::Enter if find.query.trim().is_empty() => state.find = None,
            KeyCode::Enter => {
                let query = std::mem::take(&mut find.query);
                start(state, &query, fx);
            }
            KeyCode::Backspace => {
                find.query.pop();
            }
            KeyCode::Char(c) if plain => find.query.push(c),
            _ => {}
        }
        return true;
    }
    // Found: n / N / Esc while the composer is empty; typing a prompt
    // leaves the find line as it is.
    if !state.composer.is_empty() {
        return false;
    }
    match key.code {
        KeyCode::Char('n') if plain => {
            find.pages = 0;
            older(state, fx);
        }
        KeyCode::Char('N') if plain => newer(state),
        KeyCode::Esc => state.find = None,
        _ => return false,
    }
    true
}

/// The bottom row of the view (the last row when following).
fn view_bottom(c: &Conversation) -> usize {
    match c.scroll {
        Scroll::Anchor { row, .. } => row,
        Scroll::Follow => c.rows.len().saturating_sub(1),
    }
}

/// Whether row `i` shows `query` (lower-cased) in `mode`.
pub fn matches(c: &Conversation, i: usize, query: &str, mode: DisplayMode) -> bool {
    let Some(row) = c.rows.get(i).filter(|r| r.visible(mode)) else {
        return false;
    };
    plain_lines(row.kind(), MATCH_WIDTH, mode)
        .iter()
        .any(|l| l.to_lowercase().contains(query))
}

/// The next older match: among the rows held, else from older pages.
pub fn older(state: &mut State, fx: &mut Vec<Effect>) {
    let mode = state.mode;
    let Some(find) = state.find.as_mut() else {
        return;
    };
    let query = find.query.to_lowercase();
    let c = &mut state.conversation;
    let from = c.find_from.min(c.rows.len());
    match (0..from).rev().find(|&i| matches(c, i, &query, mode)) {
        Some(i) => {
            c.find_at = Some(i);
            c.find_from = i;
            find.note = None;
            reveal(state, i);
        }
        None => {
            c.find_from = 0;
            // Held still while pages come in: following, the window
            // would hand them back to the ledger with the next row.
            if c.scroll == Scroll::Follow {
                c.scroll = Scroll::Anchor {
                    row: c.rows.len().saturating_sub(1),
                    skip: 0,
                };
            }
            if c.first_seq <= 1 {
                find.note = Some("no older match".into());
            } else if find.pages >= MAX_PAGES {
                let events = u64::from(MAX_PAGES) * super::pages::OLDER_EVENTS;
                find.note = Some(format!(
                    "no match in the {events} older events looked through; n looks further back"
                ));
            } else {
                find.paging = true;
                find.note = Some("looking through older turns…".into());
                // Or a page is on its way already: the search goes on
                // when it arrives either way.
                super::pages::request_older(state, fx);
            }
        }
    }
}

/// An older page arrived in front of the rows (`added` of them): the
/// search, if it waited for it, goes on in them.
pub fn page_arrived(state: &mut State, added: usize, fx: &mut Vec<Effect>) {
    let Some(find) = state.find.as_mut() else {
        return;
    };
    if std::mem::take(&mut find.paging) {
        // Every row held was searched: the new ones are next (the rows
        // already moved down by `added`).
        find.pages += 1;
        state.conversation.find_from = added;
        older(state, fx);
    }
}

/// The page the search waited for did not come (an error, or the window
/// moved on): the search stops, saying so; `n` asks again.
pub fn page_lost(state: &mut State, why: &str) {
    if let Some(find) = state.find.as_mut().filter(|f| f.paging) {
        find.paging = false;
        find.note = Some(format!("{why}; n looks again"));
    }
}

/// The next newer match among the rows held (newer rows are all held).
pub fn newer(state: &mut State) {
    let mode = state.mode;
    let Some(find) = state.find.as_mut() else {
        return;
    };
    let query = find.query.to_lowercase();
    let c = &mut state.conversation;
    let from = c.find_at.map_or(c.rows.len(), |i| i + 1);
    match (from..c.rows.len()).find(|&i| matches(c, i, &query, mode)) {
        Some(i) => {
            c.find_at = Some(i);
            c.find_from = i;
            find.note = None;
            reveal(state, i);
        }
        None => find.note = Some("no newer match".into()),
    }
}

/// Bring row `i` into view, near the top of the screen.
fn reveal(state: &mut State, i: usize) {
    let h = usize::from(layout(state).conversation.height);
    let ctx = state.scroll_ctx();
    let c = &mut state.conversation;
    c.scroll = Scroll::Anchor { row: i, skip: 0 };
    let own = c.rows[i].lines(ctx.width, ctx.mode, ctx.theme).len();
    scroll::down(c, ctx, h.saturating_sub(own + 1));
    state.dirty = true;
}

/// What the composer's line says while finding.
pub fn line(find: &Find) -> String {
    if find.editing {
        return format!("Find: {}", find.query);
    }
    let head = format!("Find “{}”: n older · N newer · Esc close", find.query);
    match &find.note {
        Some(note) => format!("{head} · {note}"),
        None => head,
    }
}

/// `lines` with every occurrence of `query` (case-insensitive) in `style`.
pub fn highlight(lines: &mut [Line<'static>], query: &str, style: Style) {
    let query = query.to_lowercase();
    if query.is_empty() {
        return;
    }
    for line in lines.iter_mut() {
        let text: String = line.spans.iter().map(|s| s.content.as_ref()).collect();
        // Marks are byte ranges of the lower-cased text, used on the text
        // itself: only where every character keeps its length when
        // lower-cased (else a line is left unmarked, never cut inside a
        // character).
        let mut lower = String::with_capacity(text.len());
        let mut same = true;
        for c in text.chars() {
            let before = lower.len();
            lower.extend(c.to_lowercase());
            same &= lower.len() - before == c.len_utf8();
        }
        if !same || !lower.contains(&query) {
            continue;
        }
        let mut marks = Vec::new();
        let mut at = 0;
        while let Some(i) = lower[at..].find(&query) {
            marks.push((at + i, at + i + query.len()));
            at += i + query.len();
        }
        let mut spans = Vec::new();
        let mut offset = 0;
        for span in line.spans.drain(..) {
            let content = span.content.as_ref();
            let end = offset + content.len();
            let mut cut = offset;
            for &(a, b) in &marks {
                let (a, b) = (a.max(offset), b.min(end));
                if a >= b {
                    continue;
                }
                if a > cut {
                    spans.push(Span::styled(text[cut..a].to_owned(), span.style));
                }
                spans.push(Span::styled(text[a..b].to_owned(), span.style.patch(style)));
                cut = b;
            }
            if cut < end {
                spans.push(Span::styled(text[cut..end].to_owned(), span.style));
            }
            offset = end;
        }
        line.spans = spans;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ratatui::style::{Color, Modifier};

    #[test]
    fn every_occurrence_is_marked_across_spans_and_styles_are_kept() {
        let red = Style::default().fg(Color::Red);
        let mut lines = vec![
            Line::from(vec![
                Span::raw("a Need"),
                Span::styled("le and needle", red),
            ]),
            Line::from("nothing here"),
        ];
        let mark = Style::default().add_modifier(Modifier::REVERSED);
        highlight(&mut lines, "needle", mark);
        let marked: Vec<(String, bool, bool)> = lines[0]
            .spans
            .iter()
            .map(|s| {
                let reversed = s.style.add_modifier.contains(Modifier::REVERSED);
                (
                    s.content.to_string(),
                    reversed,
                    s.style.fg == Some(Color::Red),
                )
            })
            .collect();
        assert_eq!(
            marked,
            [
                ("a ".to_owned(), false, false),
                ("Need".to_owned(), true, false),
                ("le".to_owned(), true, true),
                (" and ".to_owned(), false, true),
                ("needle".to_owned(), true, true),
            ]
        );
        assert_eq!(lines[1].spans.len(), 1, "a line without it is left alone");
    }

    /// Text whose characters change length when lower-cased (the model
    /// writes what it likes) is never cut inside a character.
    #[test]
    fn text_that_changes_length_when_lower_cased_is_left_unmarked() {
        let mark = Style::default().add_modifier(Modifier::REVERSED);
        for text in ["ȺȺabc\u{212A}", "İstanbul abc", "ẞ abc Ω"] {
            let mut lines = vec![Line::from(vec![Span::raw(text), Span::raw(" abc")])];
            highlight(&mut lines, "abc", mark);
            let joined: String = lines[0].spans.iter().map(|s| s.content.as_ref()).collect();
            assert_eq!(joined, format!("{text} abc"));
        }
    }
}
