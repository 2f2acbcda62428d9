//! The composer: a multi-line text field with emacs-style editing, prompt
//! history and the slash-command completion menu (generated from
//! `keymap::COMMANDS`). It only edits text; what a submitted line means
//! (prompt, `!CMD`, `/command`) is decided in `update`.
//!
//! Invariant: `cursor` is always a char boundary of `text`.

use super::keymap::{self, Action, SlashCommand};
use super::wrap::{sanitize_input, width};

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Composer {
    text: String,
    cursor: usize,
    history: Vec<String>,
    /// Position while browsing history (`None`: editing the draft).
    browsing: Option<usize>,
    draft: String,
    /// The last cut text (Ctrl+K/U/W), pasted back by Ctrl+Y.
    kill: String,
    /// The selected completion.
    pub selected: usize,
    /// Esc closed the menu for the current text.
    dismissed: bool,
    /// The calls waiting for the operator here, (id, what): `/approve`
    /// and `/deny` complete them.
    pub approvals: Vec<(String, String)>,
    /// Ctrl+R: the history search's query while one is open.
    search: Option<String>,
    /// Large pastes shown as one placeholder each: (placeholder, text).
    pastes: Vec<(String, String)>,
    /// The `@` file picker.
    pub picker: super::mention::Picker,
}

/// A paste longer than this many characters, or lines, is one
/// placeholder in the composer (expanded when sent).
pub const PASTE_CHARS: usize = 1_000;
pub const PASTE_LINES: usize = 10;

/// One completion candidate: what to insert and how it reads in the menu.
#[derive(Debug, Clone, PartialEq)]
pub struct Candidate {
    pub label: String,
    pub description: String,
    /// The composer text once chosen.
    pub replacement: String,
}

impl Composer {
    pub fn text(&self) -> &str {
        &self.text
    }

    pub fn cursor(&self) -> usize {
        self.cursor
    }

    pub fn is_empty(&self) -> bool {
        self.text.is_empty()
    }

    /// Empty the composer and leave history browsing (Ctrl+C): the next
    /// Up starts again from the newest entry.
    pub fn clear(&mut self) {
        self.set("");
        self.browsing = None;
        self.draft.clear();
        self.pastes.clear();
    }

    // ---- history search (Ctrl+R) ------------------------------------------

    /// The open history search's query.
    pub fn search_query(&self) -> Option<&str> {
        self.search.as_deref()
    }

    /// Ctrl+R: open a search over the history, or find the next older
    /// match of the query.
    pub fn search_older(&mut self) {
        match self.search {
            None => {
                if self.browsing.is_none() {
                    self.draft = self.text.clone();
                }
                self.search = Some(String::new());
                self.find(self.history.len());
            }
            Some(_) => {
                let from = self.browsing.unwrap_or(self.history.len());
                self.find(from);
            }
        }
    }

    /// A character typed or removed in the query: the newest match.
    pub fn search_edit(&mut self, c: Option<char>) {
        let Some(q) = self.search.as_mut() else {
            return;
        };
        match c {
            Some(c) => q.push(c),
            None => {
                q.pop();
            }
        }
        self.find(self.history.len());
    }

    /// Keep the match in the composer (Enter, or any editing key).
    pub fn search_accept(&mut self) {
        self.search = None;
        self.dismissed = true;
    }

    /// Esc / Ctrl+C: back to what was typed before the search.
    pub fn search_cancel(&mut self) {
        self.search = None;
        self.browsing = None;
        self.text = std::mem::take(&mut self.draft);
        self.cursor = self.text.len();
    }

    /// The newest entry before `before` containing the query (any case);
    /// none leaves the text as it is.
    fn find(&mut self, before: usize) {
        let q = self.search.clone().unwrap_or_default().to_lowercase();
        let hit = self.history[..before.min(self.history.len())]
            .iter()
            .rposition(|h| h.to_lowercase().contains(&q));
        if let Some(i) = hit {
            self.recall(i);
        }
    }

    /// The history kept from earlier sessions (oldest first).
    pub fn set_history(&mut self, entries: Vec<String>) {
        self.history = entries;
        self.browsing = None;
    }

    pub fn set(&mut self, text: &str) {
        self.text = text.to_owned();
        self.cursor = self.text.len();
        self.selected = 0;
        self.dismissed = false;
    }

    /// The draft as an external editor left it: the whole text (pastes
    /// already expanded into it), trailing newlines the editor added
    /// dropped, the cursor at its end.
    pub fn replace_draft(&mut self, text: &str) {
        let text = sanitize_input(text.trim_end_matches(['\n', '\r']));
        self.pastes.clear();
        self.browsing = None;
        self.set(&text);
        self.changed();
    }

    /// A typed character or a paste (one edit, whatever its size).
    pub fn insert(&mut self, s: &str) {
        let s = sanitize_input(s);
        self.text.insert_str(self.cursor, &s);
        self.cursor += s.len();
        self.changed();
    }

    fn changed(&mut self) {
        self.browsing = None;
        self.selected = 0;
        self.dismissed = false;
    }

    /// A bracketed paste: one edit. A large one (over `PASTE_CHARS`
    /// characters or `PASTE_LINES` lines) shows as one placeholder, and
    /// the text goes in whole when sent; a placeholder the operator edits
    /// is sent as typed.
    pub fn paste(&mut self, text: &str) {
        let text = sanitize_input(text);
        let chars = text.chars().count();
        let lines = text.lines().count();
        if chars <= PASTE_CHARS && lines <= PASTE_LINES {
            return self.insert(&text);
        }
        let n = self.pastes.len() + 1;
        let mut label = format!(
            "[pasted {} lines · {} chars",
            super::fmt::thousands(lines as u64),
            super::fmt::thousands(chars as u64)
        );
        if n > 1 {
            label.push_str(&format!(" #{n}"));
        }
        label.push(']');
        self.insert(&label);
        self.pastes.push((label, text));
    }

    /// The text as it will be sent: every placeholder still whole in it
    /// replaced by its paste.
    pub fn expanded(&self) -> String {
        let mut text = self.text.clone();
        for (label, pasted) in &self.pastes {
            if let Some(at) = text.find(label.as_str()) {
                text.replace_range(at..at + label.len(), pasted);
            }
        }
        text
    }

    /// Take the text for submission (pastes expanded) and remember it in
    /// history.
    pub fn submit(&mut self) -> String {
        let text = self.expanded();
        self.text.clear();
        self.pastes.clear();
        self.cursor = 0;
        self.changed();
        if !text.trim().is_empty() && self.history.last() != Some(&text) {
            self.history.push(text.clone());
        }
        text
    }

    fn line_start(&self) -> usize {
        self.text[..self.cursor].rfind('\n').map_or(0, |i| i + 1)
    }

    fn line_end(&self) -> usize {
        self.text[self.cursor..]
            .find('\n')
            .map_or(self.text.len(), |i| self.cursor + i)
    }

    fn prev_char(&self, at: usize) -> usize {
        self.text[..at]
            .char_indices()
            .next_back()
            .map_or(0, |(i, _)| i)
    }

    fn next_char(&self, at: usize) -> usize {
        self.text[at..]
            .chars()
            .next()
            .map_or(at, |c| at + c.len_utf8())
    }

    fn word_left(&self) -> usize {
        let before = &self.text[..self.cursor];
        let trimmed = before.trim_end_matches(|c: char| !c.is_alphanumeric());
        trimmed
            .char_indices()
            .rev()
            .find(|(_, c)| !c.is_alphanumeric())
            .map_or(0, |(i, c)| i + c.len_utf8())
    }

    fn word_right(&self) -> usize {
        let after = &self.text[self.cursor..];
        let skip = after.len()
            - after
                .trim_start_matches(|c: char| !c.is_alphanumeric())
                .len();
        let rest = &after[skip..];
        let word = rest
            .find(|c: char| !c.is_alphanumeric())
            .unwrap_or(rest.len());
        self.cursor + skip + word
    }

    fn cut(&mut self, from: usize, to: usize) {
        if from < to {
            self.kill = self.text[from..to].to_owned();
            self.text.replace_range(from..to, "");
            self.cursor = from;
            self.changed();
        }
    }

    /// Column (in chars) of the cursor within its line.
    fn column(&self) -> usize {
        self.text[self.line_start()..self.cursor].chars().count()
    }

    fn at_column(&self, line_start: usize, col: usize) -> usize {
        let line = &self.text[line_start..];
        let end = line.find('\n').unwrap_or(line.len());
        let idx = line[..end].char_indices().nth(col).map_or(end, |(i, _)| i);
        line_start + idx
    }

    /// Up: the previous line, else older history. Returns false when there
    /// was nothing to do.
    fn up(&mut self) -> bool {
        let start = self.line_start();
        if start > 0 {
            let col = self.column();
            let prev_start = self.text[..start - 1].rfind('\n').map_or(0, |i| i + 1);
            self.cursor = self.at_column(prev_start, col);
            return true;
        }
        let next = match self.browsing {
            None if self.history.is_empty() => return false,
            None => {
                self.draft = self.text.clone();
                self.history.len() - 1
            }
            Some(0) => return false,
            Some(i) => i - 1,
        };
        self.recall(next);
        true
    }

    /// Show history entry `i`. A recalled `/command` opens no menu, so Up
    /// and Down keep walking the history.
    fn recall(&mut self, i: usize) {
        self.browsing = Some(i);
        self.text = self.history[i].clone();
        self.cursor = self.text.len();
        self.dismissed = true;
    }

    fn down(&mut self) -> bool {
        let end = self.line_end();
        if end < self.text.len() {
            let col = self.column();
            self.cursor = self.at_column(end + 1, col);
            return true;
        }
        match self.browsing {
            None => false,
            Some(i) if i + 1 < self.history.len() => {
                self.recall(i + 1);
                true
            }
            Some(_) => {
                self.browsing = None;
                self.text = std::mem::take(&mut self.draft);
                self.cursor = self.text.len();
                true
            }
        }
    }

    /// Apply an editing action; false when it is not an editing action.
    pub fn edit(&mut self, action: Action) -> bool {
        match action {
            Action::Newline => self.insert("\n"),
            Action::Left => self.cursor = self.prev_char(self.cursor),
            Action::Right => self.cursor = self.next_char(self.cursor),
            Action::LineStart => self.cursor = self.line_start(),
            Action::LineEnd => self.cursor = self.line_end(),
            Action::WordLeft => self.cursor = self.word_left(),
            Action::WordRight => self.cursor = self.word_right(),
            Action::DeleteBack => {
                let from = self.prev_char(self.cursor);
                let to = self.cursor;
                self.text.replace_range(from..to, "");
                self.cursor = from;
                self.changed();
            }
            Action::DeleteForward => {
                let to = self.next_char(self.cursor);
                self.text.replace_range(self.cursor..to, "");
                self.changed();
            }
            Action::KillToEnd => {
                let end = self.line_end();
                // At the end of a line, cut the newline itself.
                let end = if end == self.cursor {
                    self.next_char(end)
                } else {
                    end
                };
                self.cut(self.cursor, end);
            }
            Action::KillToStart => self.cut(self.line_start(), self.cursor),
            Action::KillWord => self.cut(self.word_left(), self.cursor),
            Action::Yank => {
                let k = self.kill.clone();
                self.insert(&k);
            }
            Action::HistoryPrev => {
                self.up();
            }
            Action::HistoryNext => {
                self.down();
            }
            _ => return false,
        }
        true
    }

    // ---- completion ------------------------------------------------------

    /// The completion candidates for the text as typed: command names
    /// while the name is being typed, then the command's argument choices.
    /// Whether the menu offers files for an `@` token.
    pub fn mentioning(&self) -> bool {
        !self.dismissed
            && self.cursor == self.text.len()
            && !self.picker.found.is_empty()
            && super::mention::token_at(&self.text, self.cursor).is_some()
    }

    pub fn candidates(&self) -> Vec<Candidate> {
        if self.mentioning() {
            let Some((start, _)) = super::mention::token_at(&self.text, self.cursor) else {
                return Vec::new();
            };
            return self
                .picker
                .found
                .iter()
                .map(|path| Candidate {
                    label: format!("@{path}"),
                    description: "file".to_owned(),
                    replacement: format!("{}@{path} ", &self.text[..start]),
                })
                .collect();
        }
        if self.dismissed || self.cursor != self.text.len() || self.text.contains('\n') {
            return Vec::new();
        }
        let Some(rest) = self.text.strip_prefix('/') else {
            return Vec::new();
        };
        match rest.split_once(' ') {
            None => keymap::matching(rest)
                .into_iter()
                .map(|c| Candidate {
                    label: usage(c),
                    description: c.description.to_owned(),
                    replacement: match c.usage.is_empty() {
                        true => format!("/{}", c.name),
                        false => format!("/{} ", c.name),
                    },
                })
                .collect(),
            // The ids of the calls waiting here.
            Some((name @ ("approve" | "deny"), arg)) if !arg.contains(' ') => self
                .approvals
                .iter()
                .filter(|(id, _)| id.starts_with(arg) && id != arg)
                .map(|(id, what)| Candidate {
                    label: id.clone(),
                    description: what.clone(),
                    replacement: format!("/{name} {id} "),
                })
                .collect(),
            Some((name, arg)) if !arg.contains(' ') => {
                let Some(c) = keymap::command(name) else {
                    return Vec::new();
                };
                let choices = c
                    .choices
                    .iter()
                    .filter(|ch| ch.starts_with(arg) && **ch != arg);
                choices
                    .map(|ch| Candidate {
                        label: (*ch).to_owned(),
                        description: c.description.to_owned(),
                        replacement: format!("/{name} {ch}"),
                    })
                    .collect()
            }
            Some(_) => Vec::new(),
        }
    }

    pub fn menu_open(&self) -> bool {
        !self.candidates().is_empty()
    }

    pub fn dismiss_menu(&mut self) {
        self.dismissed = true;
    }

    pub fn select(&mut self, delta: isize) {
        let n = self.candidates().len();
        if n > 0 {
            let i = (self.selected as isize + delta).rem_euclid(n as isize);
            self.selected = i as usize;
        }
    }

    /// Replace the text with the selected candidate. Returns whether
    /// anything was completed.
    pub fn complete(&mut self) -> bool {
        let c = self.candidates();
        let Some(choice) = c.get(self.selected.min(c.len().saturating_sub(1))) else {
            return false;
        };
        let text = choice.replacement.clone();
        self.set(&text);
        true
    }

    // ---- layout ----------------------------------------------------------

    /// The composer wrapped to `width` columns after a 2-column prompt
    /// mark: the visual lines and the cursor's (line, column).
    pub fn layout(&self, width: usize) -> (Vec<String>, (usize, usize)) {
        let avail = width.saturating_sub(2).max(1);
        let mut lines: Vec<String> = Vec::new();
        let mut cursor = None;
        let mut start = 0;
        for logical in self.text.split('\n') {
            // (byte index in the text, what it draws, its width)
            let cells: Vec<(usize, String, usize)> = logical
                .char_indices()
                .map(|(i, c)| {
                    let (shown, w) = match c {
                        // A tab is kept in the text and drawn as spaces.
                        '\t' => (" ".repeat(TAB_WIDTH), TAB_WIDTH),
                        c => (c.to_string(), width_of(c)),
                    };
                    (start + i, shown, w)
                })
                .collect();
            // Greedy, at word boundaries: a word that does not fit moves
            // to the next line whole; a word longer than the line is cut.
            let mut row_start = 0;
            let mut used = 0;
            let mut last_space: Option<usize> = None;
            let mut breaks = Vec::new();
            for (k, (_, shown, w)) in cells.iter().enumerate() {
                if used + w > avail && k > row_start {
                    let at = match last_space {
                        Some(sp) if sp >= row_start => sp + 1,
                        _ => k,
                    };
                    breaks.push(at);
                    row_start = at;
                    used = cells[at..k].iter().map(|c| c.2).sum();
                    last_space = None;
                }
                if shown == " " {
                    last_space = Some(k);
                }
                used += w;
            }
            let mut bounds = vec![0];
            bounds.extend(breaks);
            bounds.push(cells.len());
            for pair in bounds.windows(2) {
                let row = &cells[pair[0]..pair[1]];
                if cursor.is_none() {
                    let mut col = 0;
                    for (i, shown, w) in row {
                        if *i == self.cursor {
                            cursor = Some((lines.len(), col));
                            break;
                        }
                        let _ = shown;
                        col += w;
                    }
                }
                lines.push(row.iter().map(|c| c.1.as_str()).collect());
            }
            let end = start + logical.len();
            if cursor.is_none() && self.cursor == end {
                let row = lines.len() - 1;
                let used: usize = lines[row].chars().map(width_of).sum();
                cursor = Some(match used >= avail && end == self.text.len() {
                    true => {
                        lines.push(String::new());
                        (row + 1, 0)
                    }
                    false => (row, used),
                });
            }
            start = end + 1;
        }
        if lines.is_empty() {
            lines.push(String::new());
        }
        (lines, cursor.unwrap_or((0, 0)))
    }
}

/// Columns a tab takes in the composer.
const TAB_WIDTH: usize = 4;

fn width_of(c: char) -> usize {
    let mut b = [0u8; 4];
    width(c.encode_utf8(&mut b))
}

/// `/display [info|verbose|debug|3|4|5]`.
pub fn usage(c: &SlashCommand) -> String {
    match c.usage.is_empty() {
        true => format!("/{}", c.name),
        false => format!("/{} {}", c.name, c.usage),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn typed(s: &str) -> Composer {
        let mut c = Composer::default();
        c.insert(s);
        c
    }

    #[test]
    fn emacs_keys() {
        let mut c = typed("hello brave world");
        c.edit(Action::WordLeft);
        c.edit(Action::KillWord);
        assert_eq!(c.text(), "hello world");
        c.edit(Action::LineStart);
        c.edit(Action::KillToEnd);
        assert_eq!(c.text(), "");
        c.edit(Action::Yank);
        assert_eq!(c.text(), "hello world");
        c.edit(Action::LineStart);
        c.edit(Action::DeleteForward);
        c.edit(Action::WordRight);
        c.edit(Action::KillToStart);
        assert_eq!(c.text(), " world");
    }

    #[test]
    fn history_and_lines() {
        let mut c = typed("first");
        c.submit();
        c.insert("a\nb");
        assert!(c.up(), "moves to the first line");
        assert_eq!(c.cursor(), 1);
        assert!(c.up(), "then to history");
        assert_eq!(c.text(), "first");
        assert!(c.down());
        assert_eq!(c.text(), "a\nb", "the draft comes back");
    }

    #[test]
    fn completes_commands_and_arguments() {
        let mut c = typed("/di");
        let names: Vec<String> = c.candidates().into_iter().map(|x| x.label).collect();
        assert_eq!(names, ["/display [info|verbose|debug|3|4|5]"]);
        assert!(c.complete());
        assert_eq!(c.text(), "/display ");
        c.insert("v");
        assert!(c.complete());
        assert_eq!(c.text(), "/display verbose");
    }

    #[test]
    fn layout_wraps_and_places_the_cursor() {
        let c = typed("abcdef\ngh");
        let (lines, cursor) = c.layout(6);
        assert_eq!(lines, ["abcd", "ef", "gh"]);
        assert_eq!(cursor, (2, 2));
    }

    #[test]
    fn layout_wraps_at_word_boundaries() {
        let mut c = typed("fix the retry loop");
        // 13 columns, 11 for text: words move whole.
        let (lines, cursor) = c.layout(13);
        assert_eq!(lines, ["fix the ", "retry loop"]);
        assert_eq!(cursor, (1, 10));
        // The cursor inside a moved word follows it.
        c.edit(Action::LineStart);
        for _ in 0..10 {
            c.edit(Action::Right);
        }
        assert_eq!(c.layout(13).1, (1, 2), "after `re`");
        // A word longer than the line is cut.
        let (lines, _) = typed("a supercalifragilistic word").layout(12);
        assert_eq!(
            lines.concat(),
            "a supercalifragilistic word",
            "nothing lost"
        );
        assert!(lines.iter().all(|l| l.chars().count() <= 10), "{lines:?}");
        // At the end of a full line the cursor takes the next.
        let (lines, cursor) = typed("abcdefghij").layout(12);
        assert_eq!(lines, ["abcdefghij", ""]);
        assert_eq!(cursor, (1, 0));
    }
}
