//! One rule for text a model (or anything it read) wrote, wherever Holon
//! shows it to the operator: nothing in it may act on the terminal or hide
//! from the eye. C0 and C1 control characters (an escape sequence's ESC
//! among them) and the Unicode format characters that reorder or hide
//! text (bidi overrides and isolates, zero-width spaces, the combining
//! grapheme joiner, the blank Hangul fillers, the byte-order mark, tag
//! characters, musical and hieroglyph format controls, line and
//! paragraph separators) are
//! shown escaped, `\u{1b}`, so what the operator reads is what is there.
//! The zero-width joiner and non-joiner stay: scripts and emoji need them,
//! and they hide no text.
//! Newlines and tabs are left to the caller (a one-line view collapses
//! them, a multi-line one keeps them).

use std::borrow::Cow;
use std::fmt::Write;

/// At most `max` characters of `s`, with `…` when it was cut.
pub fn truncate_chars(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        None => s.to_owned(),
        Some((at, _)) => format!("{}…", &s[..at]),
    }
}

/// A Unicode format character that can reorder, join or hide text.
pub fn is_hidden_format(c: char) -> bool {
    matches!(c,
        '\u{00AD}'
        | '\u{034F}'
        | '\u{061C}'
        | '\u{115F}'..='\u{1160}'
        | '\u{3164}'
        | '\u{FFA0}'
        | '\u{1D173}'..='\u{1D17A}'
        | '\u{13430}'..='\u{1343F}'
        | '\u{180E}'
        | '\u{200B}'
        | '\u{200E}'..='\u{200F}'
        | '\u{2028}'..='\u{202E}'
        | '\u{2060}'..='\u{206F}'
        | '\u{FEFF}'
        | '\u{FFF9}'..='\u{FFFB}'
        | '\u{E0001}'
        | '\u{E0020}'..='\u{E007F}')
}

/// Whether `c` is shown escaped (newlines and tabs are not).
pub fn needs_escape(c: char) -> bool {
    (c.is_control() && c != '\n' && c != '\t') || is_hidden_format(c)
}

/// `c` as the operator sees it when escaped: `\u{1b}`.
pub fn push_escaped(out: &mut String, c: char) {
    let _ = write!(out, "\\u{{{:x}}}", c as u32);
}

/// `s` with every control and hidden format character escaped, newlines
/// and tabs kept; borrowed when nothing needed it.
pub fn escape_hidden(s: &str) -> Cow<'_, str> {
    if !s.chars().any(needs_escape) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 16);
    for c in s.chars() {
        match needs_escape(c) {
            true => push_escaped(&mut out, c),
            false => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// `s` as one shell word an operator can paste: single-quoted when it
/// shows as it is, else `$'…'` with each hidden or control character as
/// `\xHH` bytes, so the word is exactly `s` (never what it looked like).
pub fn shell_word(s: &str) -> String {
    if !s.chars().any(needs_escape) && !s.contains('\n') && !s.contains('\t') {
        return format!("'{}'", s.replace('\'', "'\\''"));
    }
    let mut out = String::from("$'");
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\'' => out.push_str("\\'"),
            c if needs_escape(c) || c == '\n' || c == '\t' => {
                let mut buf = [0u8; 4];
                for b in c.encode_utf8(&mut buf).bytes() {
                    let _ = write!(out, "\\x{b:02x}");
                }
            }
            c => out.push(c),
        }
    }
    out.push('\'');
    out
}

/// `s` without control characters (newlines and tabs kept) and hidden
/// format characters: text safe to hand to a clipboard, where a paste
/// into a shell would act on what the screen never showed. Whether any
/// were dropped.
pub fn without_hidden(s: &str) -> (String, bool) {
    let kept: String = s.chars().filter(|c| !needs_escape(*c)).collect();
    let dropped = kept.len() != s.len();
    (kept, dropped)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_could_act_or_hide_is_shown_escaped() {
        assert_eq!(escape_hidden("cargo test"), "cargo test");
        assert!(matches!(escape_hidden("plain\ttext\n"), Cow::Borrowed(_)));
        assert_eq!(
            escape_hidden("rm -rf ~\u{1b}[2K\rcargo test"),
            "rm -rf ~\\u{1b}[2K\\u{d}cargo test"
        );
        // A bidi override makes `txt.exe` read as `exe.txt`.
        assert_eq!(escape_hidden("a\u{202e}txt.exe"), "a\\u{202e}txt.exe");
        assert_eq!(escape_hidden("x\u{200b}y\u{feff}"), "x\\u{200b}y\\u{feff}");
        assert_eq!(escape_hidden("c1\u{9b}31m"), "c1\\u{9b}31m");
        assert_eq!(escape_hidden("tag\u{E0041}"), "tag\\u{e0041}");
        assert_eq!(escape_hidden("ls\u{2028}rm"), "ls\\u{2028}rm");
        assert_eq!(escape_hidden("a\u{3164}b"), "a\\u{3164}b");
        // Ordinary text of any script stays as it is.
        assert_eq!(
            escape_hidden("héllo wörld — 漢字 🙂"),
            "héllo wörld — 漢字 🙂"
        );
        assert_eq!(escape_hidden("👨\u{200d}👩"), "👨\u{200d}👩");
    }
    #[test]
    fn a_shell_word_is_exactly_its_text() {
        assert_eq!(shell_word("cargo test"), "'cargo test'");
        assert_eq!(shell_word("it's"), "'it'\\''s'");
        assert_eq!(shell_word("a\u{1b}[2Kb"), "$'a\\x1b[2Kb'");
        assert_eq!(shell_word("x\u{202e}y'\\"), "$'x\\xe2\\x80\\xaey\\'\\\\'");
        assert_eq!(
            without_hidden("ok\u{1b}]0;x\u{7}\n\u{200b}"),
            ("ok]0;x\n".to_owned(), true)
        );
        assert_eq!(
            without_hidden("fine\tline\n"),
            ("fine\tline\n".to_owned(), false)
        );
    }
}
