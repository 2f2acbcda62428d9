//! Syntax highlighting of fenced code in the console, by `syntect` with
//! its pure-Rust regex engine. Colours are the terminal's own ANSI ones
//! (as everywhere in the console, so the user's theme decides): the
//! syntax's scopes map to a handful of them (keywords, strings, numbers,
//! comments, names, types). The syntax set is loaded once, on first use
//! (`warm` loads it off the UI thread when the console opens).

use std::sync::OnceLock;

use ratatui::style::{Color, Modifier, Style};
use ratatui::text::Span;
use syntect::easy::HighlightLines;
use syntect::highlighting::{
    Color as SynColor, ScopeSelectors, StyleModifier, Theme as SynTheme, ThemeItem, ThemeSettings,
};
use syntect::parsing::{SyntaxReference, SyntaxSet};

use super::theme::Theme;

fn syntaxes() -> &'static SyntaxSet {
    static SET: OnceLock<SyntaxSet> = OnceLock::new();
    SET.get_or_init(SyntaxSet::load_defaults_newlines)
}

/// Load the syntax set in the background, so the first code block the
/// console draws does not wait for it.
pub fn warm() {
    std::thread::spawn(|| {
        let _ = syntaxes();
    });
}

/// An ANSI colour as a syntect colour: `a == 0` marks "palette index `r`".
const fn ansi(index: u8) -> SynColor {
    SynColor {
        r: index,
        g: 0,
        b: 0,
        a: 0,
    }
}

/// "The terminal's default colour".
const DEFAULT: SynColor = SynColor {
    r: 0,
    g: 0,
    b: 0,
    a: 1,
};

fn theme() -> &'static SynTheme {
    static THEME: OnceLock<SynTheme> = OnceLock::new();
    THEME.get_or_init(|| {
        let item = |scopes: &str, colour: SynColor| ThemeItem {
            scope: scopes.parse::<ScopeSelectors>().unwrap_or_default(),
            style: StyleModifier {
                foreground: Some(colour),
                background: None,
                font_style: None,
            },
        };
        SynTheme {
            name: Some("holon-ansi".into()),
            author: None,
            settings: ThemeSettings {
                foreground: Some(DEFAULT),
                ..ThemeSettings::default()
            },
            scopes: vec![
                item("comment, punctuation.definition.comment", ansi(8)),
                item("string, constant.character", ansi(2)),
                item(
                    "constant.numeric, constant.language, constant.other",
                    ansi(3),
                ),
                item("keyword, storage, keyword.operator.word", ansi(5)),
                item(
                    "entity.name.function, support.function, meta.function-call",
                    ansi(4),
                ),
                item("entity.name.type, support.type, entity.name.class", ansi(6)),
                item("entity.name.tag, markup.heading", ansi(4)),
                item("variable.parameter, entity.other.attribute-name", ansi(3)),
                item("markup.inserted", ansi(2)),
                item("markup.deleted, invalid", ansi(1)),
            ],
        }
    })
}

/// The syntax a fence's info string names (`rust`, `py`, `sh`, ...).
fn syntax_for(lang: &str) -> Option<&'static SyntaxReference> {
    let token = lang.split([' ', ',', '{']).next().unwrap_or("").trim();
    if token.is_empty() {
        return None;
    }
    let set = syntaxes();
    set.find_syntax_by_token(token)
        .or_else(|| set.find_syntax_by_token(&token.to_lowercase()))
}

/// Whether a fence's language is one the console highlights.
pub fn knows(lang: &str) -> bool {
    syntax_for(lang).is_some()
}

/// The code's lines as styled spans; plain spans when the language is
/// unknown, colour is off, or a line does not parse.
pub fn lines(code: &str, lang: &str, t: Theme) -> Vec<Vec<Span<'static>>> {
    let plain = || -> Vec<Vec<Span<'static>>> {
        code.lines()
            .map(|l| vec![Span::styled(l.to_owned(), t.text())])
            .collect()
    };
    if t.no_color {
        return plain();
    }
    let Some(syntax) = syntax_for(lang) else {
        return plain();
    };
    let mut h = HighlightLines::new(syntax, theme());
    let mut out = Vec::new();
    for line in code.lines() {
        // The `newlines` syntaxes expect each line with its end.
        let with_end = format!("{line}\n");
        match h.highlight_line(&with_end, syntaxes()) {
            Ok(parts) => out.push(
                parts
                    .into_iter()
                    .map(|(style, text)| {
                        Span::styled(text.trim_end_matches('\n').to_owned(), style_of(style))
                    })
                    .filter(|s| !s.content.is_empty())
                    .collect(),
            ),
            Err(_) => out.push(vec![Span::raw(line.to_owned())]),
        }
    }
    out
}

fn style_of(s: syntect::highlighting::Style) -> Style {
    let c = s.foreground;
    match (c.a, c.r) {
        (0, 8) => Style::default().add_modifier(Modifier::DIM),
        (0, 1) => Style::default().fg(Color::Red),
        (0, 2) => Style::default().fg(Color::Green),
        (0, 3) => Style::default().fg(Color::Yellow),
        (0, 4) => Style::default().fg(Color::Blue),
        (0, 5) => Style::default().fg(Color::Magenta),
        (0, 6) => Style::default().fg(Color::Cyan),
        _ => Style::default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rust_is_coloured_with_ansi_colours_and_unknown_stays_plain() {
        let t = Theme { no_color: false };
        let lines = lines("fn main() {\n    let s = \"hi\"; // note\n}", "rust", t);
        assert_eq!(lines.len(), 3);
        let styled = |want: &str| {
            lines
                .iter()
                .flatten()
                .find(|s| s.content.contains(want))
                .map(|s| s.style)
        };
        assert_eq!(styled("fn").and_then(|s| s.fg), Some(Color::Magenta));
        assert_eq!(styled("hi").and_then(|s| s.fg), Some(Color::Green));
        assert!(styled("note").is_some_and(|s| s.add_modifier.contains(Modifier::DIM)));
        let text: String = lines[1].iter().map(|s| s.content.as_ref()).collect();
        assert_eq!(
            text, "    let s = \"hi\"; // note",
            "the text is kept whole"
        );
        assert!(knows("py") && knows("Rust") && !knows("no-such-language"));
        let plain = super::lines("x = 1", "no-such-language", t);
        assert_eq!(plain[0][0].content, "x = 1");
        let off = super::lines("fn main() {}", "rust", Theme { no_color: true });
        assert!(off.iter().flatten().all(|s| s.style.fg.is_none()));
    }
}
