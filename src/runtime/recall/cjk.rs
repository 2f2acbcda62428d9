//! Mixed CJK expansion: SQLite's `unicode61` tokenizer keeps a run of
//! Chinese, Japanese or Korean characters as one token, so a search for
//! part of it finds nothing. Indexed text gains the run's single
//! characters and overlapping bigrams; a query's runs become their bigrams
//! (or the character itself), so "上下文" finds "上下文压缩" and mixed
//! Chinese/Latin text keeps both kinds of terms.

/// Whether `c` belongs to a CJK script without spaces between words.
pub fn is_cjk(c: char) -> bool {
    matches!(c as u32,
        0x3040..=0x30FF      // Hiragana, Katakana
        | 0x3400..=0x4DBF    // CJK Extension A
        | 0x4E00..=0x9FFF    // CJK Unified Ideographs
        | 0xAC00..=0xD7AF    // Hangul syllables
        | 0xF900..=0xFAFF    // CJK Compatibility Ideographs
        | 0x20000..=0x2A6DF) // CJK Extension B
}

/// The CJK runs of `text`.
fn runs(text: &str) -> Vec<Vec<char>> {
    let mut out = Vec::new();
    let mut cur = Vec::new();
    for c in text.chars() {
        if is_cjk(c) {
            cur.push(c);
        } else if !cur.is_empty() {
            out.push(std::mem::take(&mut cur));
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

fn bigrams(run: &[char]) -> Vec<String> {
    run.windows(2).map(|w| w.iter().collect()).collect()
}

/// The terms added to indexed text: each CJK run's characters and
/// bigrams, space separated.
pub fn expand_for_index(text: &str) -> String {
    let mut terms = Vec::new();
    for run in runs(text) {
        terms.extend(run.iter().map(char::to_string));
        terms.extend(bigrams(&run));
    }
    terms.join(" ")
}

/// A query's terms: Latin words as they are, CJK runs as their bigrams
/// (a single character as itself). Only letters and digits survive, so no
/// FTS5 syntax reaches the engine.
pub fn query_terms(query: &str) -> Vec<String> {
    let mut terms = Vec::new();
    let mut word = String::new();
    let flush = |w: &mut String, terms: &mut Vec<String>| {
        if !w.is_empty() {
            terms.push(std::mem::take(w).to_lowercase());
        }
    };
    for c in query.chars() {
        if c.is_alphanumeric() && !is_cjk(c) {
            word.push(c);
        } else {
            flush(&mut word, &mut terms);
        }
    }
    flush(&mut word, &mut terms);
    for run in runs(query) {
        match run.len() {
            1 => terms.push(run[0].to_string()),
            _ => terms.extend(bigrams(&run)),
        }
    }
    terms.dedup();
    terms
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_expand_to_characters_and_bigrams() {
        assert_eq!(expand_for_index("the 上下文 cache"), "上 下 文 上下 下文");
        assert_eq!(expand_for_index("plain text"), "");
        assert_eq!(
            expand_for_index("コンテキスト"),
            "コ ン テ キ ス ト コン ンテ テキ キス スト"
        );
    }

    #[test]
    fn queries_keep_latin_words_and_split_cjk_runs() {
        assert_eq!(
            query_terms("上下文 Compaction!"),
            vec!["compaction", "上下", "下文"]
        );
        assert_eq!(query_terms("文"), vec!["文"]);
        assert_eq!(
            query_terms("\"a\" OR b* NEAR(c)"),
            vec!["a", "or", "b", "near", "c"]
        );
    }
}
