//! `@` mentions in the composer: a fuzzy file picker over the files of
//! the agent's execution root. The list is walked off the UI thread (the
//! console's `Effect::IndexFiles`, honouring `.gitignore`) and arrives as
//! `Msg::FileIndex`; matching it is `nucleo-matcher`'s, made for paths.
//! Pure: the index in, the best matches out.

use std::sync::Arc;

use nucleo_matcher::pattern::{CaseMatching, Normalization, Pattern};
use nucleo_matcher::{Config, Matcher};

/// Most candidates the picker offers.
pub const LIMIT: usize = 50;

/// The files of one root, relative to it, as walked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileIndex {
    pub root: String,
    pub files: Vec<String>,
    /// The walk stopped at its bound: the list is not the whole tree.
    pub truncated: bool,
}

/// The `@token` that ends at `cursor`: (its byte start, the query after
/// the `@`). An `@` must start the text or follow whitespace (so an
/// e-mail address is not a mention).
pub fn token_at(text: &str, cursor: usize) -> Option<(usize, &str)> {
    let before = text.get(..cursor)?;
    let start = before
        .char_indices()
        .rev()
        .find(|(_, c)| c.is_whitespace())
        .map_or(0, |(i, c)| i + c.len_utf8());
    let token = &before[start..];
    token.strip_prefix('@').map(|q| (start, q))
}

/// The index's best matches for `query` (all files, shortest first, when
/// it is empty), at most `limit`.
pub fn matches(index: &FileIndex, query: &str, limit: usize) -> Vec<String> {
    if query.is_empty() {
        let mut all: Vec<&String> = index.files.iter().collect();
        all.sort_by_key(|f| (f.len(), f.as_str()));
        return all.into_iter().take(limit).cloned().collect();
    }
    let mut matcher = Matcher::new(Config::DEFAULT.match_paths());
    let pattern = Pattern::parse(query, CaseMatching::Smart, Normalization::Smart);
    let mut found = pattern.match_list(index.files.iter().map(String::as_str), &mut matcher);
    // Best score first; among equals the shorter path.
    found.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.len().cmp(&b.0.len())));
    found
        .into_iter()
        .take(limit)
        .map(|(f, _)| f.to_owned())
        .collect()
}

/// The picker's state in the composer: the index (when walked) and the
/// candidates of the token being typed.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Picker {
    pub index: Option<Arc<FileIndex>>,
    /// The root whose walk was asked for and has not arrived.
    pub walking: Option<String>,
    /// The query the candidates are for, and the candidates.
    pub query: Option<String>,
    pub found: Vec<String>,
}

impl Picker {
    /// Bring the candidates up to date with the composer's text; returns
    /// the root to walk when the picker needs an index it does not have.
    pub fn refresh(&mut self, text: &str, cursor: usize, root: Option<&str>) -> Option<String> {
        let Some((_, query)) = token_at(text, cursor) else {
            self.query = None;
            self.found.clear();
            return None;
        };
        let root = root?;
        match &self.index {
            Some(i) if i.root == root => {
                if self.query.as_deref() != Some(query) {
                    self.found = matches(i, query, LIMIT);
                    self.query = Some(query.to_owned());
                }
                None
            }
            _ if self.walking.as_deref() == Some(root) => None,
            _ => {
                self.walking = Some(root.to_owned());
                Some(root.to_owned())
            }
        }
    }

    /// A walk arrived.
    pub fn indexed(&mut self, index: Arc<FileIndex>) {
        if self.walking.as_deref() == Some(index.root.as_str()) {
            self.walking = None;
        }
        self.index = Some(index);
        self.query = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn index(files: &[&str]) -> FileIndex {
        FileIndex {
            root: "/p".into(),
            files: files.iter().map(|f| (*f).to_owned()).collect(),
            truncated: false,
        }
    }

    #[test]
    fn a_token_starts_at_an_at_sign_after_whitespace() {
        assert_eq!(token_at("fix @src/ma", 11), Some((4, "src/ma")));
        assert_eq!(token_at("@", 1), Some((0, "")));
        assert_eq!(
            token_at("mail me@host", 12),
            None,
            "an address is not a mention"
        );
        assert_eq!(token_at("fix @src done", 13), None, "the token ended");
        assert_eq!(token_at("é @x", 5), Some((3, "x")));
    }

    #[test]
    fn paths_match_fuzzily_best_first() {
        let i = index(&[
            "src/retry.rs",
            "tests/retry.rs",
            "docs/README.md",
            "src/ui/tui/rows.rs",
        ]);
        let found = matches(&i, "retry", 10);
        assert_eq!(found.len(), 2);
        assert_eq!(found[0], "src/retry.rs", "{found:?}");
        assert_eq!(matches(&i, "tuirows", 10), ["src/ui/tui/rows.rs"]);
        assert!(matches(&i, "zzz", 10).is_empty());
        assert_eq!(matches(&i, "", 2), ["src/retry.rs", "docs/README.md"]);
    }

    #[test]
    fn the_picker_asks_for_a_walk_once_and_matches_when_it_arrives() {
        let mut p = Picker::default();
        assert_eq!(p.refresh("hi", 2, Some("/p")), None, "no token, no walk");
        assert_eq!(p.refresh("@re", 3, Some("/p")), Some("/p".into()));
        assert_eq!(p.refresh("@ret", 4, Some("/p")), None, "asked already");
        p.indexed(Arc::new(index(&["src/retry.rs", "lib.rs"])));
        assert_eq!(p.refresh("@ret", 4, Some("/p")), None);
        assert_eq!(p.found, ["src/retry.rs"]);
        assert_eq!(p.refresh("@ret x", 6, Some("/p")), None);
        assert!(p.found.is_empty(), "the token ended");
    }
}
