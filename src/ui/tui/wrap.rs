//! Display-width text helpers: sanitising untrusted text before it reaches
//! the terminal, measuring by display width (wide characters count two),
//! word-wrapping styled spans with first-line and continuation prefixes,
//! and truncating to a width with `…`.
//!
//! Invariant: nothing returned here contains a control character, so event
//! text (model output, command output) can never emit escape sequences.

use ratatui::style::Style;
use ratatui::text::{Line, Span};

/// Display width of a string.
pub fn width(s: &str) -> usize {
    Span::raw(s).width()
}

fn char_width(c: char) -> usize {
    let mut buf = [0u8; 4];
    width(c.encode_utf8(&mut buf))
}

/// Tabs become spaces, `\r\n` and `\r` become `\n`, other control
/// characters (escape sequences included) and hidden format characters
/// (bidi overrides, zero-width ones) are shown escaped (`model::text`):
/// what the operator reads is what is there.
pub fn sanitize(s: &str) -> String {
    clean(s, false)
}

/// What the operator types or pastes: as `sanitize`, but tabs are kept
/// (the text goes to the model exactly; the composer draws a tab as
/// spaces).
pub fn sanitize_input(s: &str) -> String {
    clean(s, true)
}

fn clean(s: &str, keep_tabs: bool) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\t' if keep_tabs => out.push('\t'),
            '\t' => out.push_str("    "),
            '\r' => {
                if chars.peek() != Some(&'\n') {
                    out.push('\n');
                }
            }
            '\n' => out.push('\n'),
            // The operator's own typing or paste: dropped, as before.
            c if keep_tabs && c.is_control() => {}
            c if crate::model::text::needs_escape(c) => {
                crate::model::text::push_escaped(&mut out, c)
            }
            c => out.push(c),
        }
    }
    out
}

/// One line of `s` (whitespace collapsed) cut to `max` display columns,
/// ending in `…` when cut.
pub fn truncate(s: &str, max: usize) -> String {
    let s = sanitize(s);
    let one = s.split_whitespace().collect::<Vec<_>>().join(" ");
    if width(&one) <= max {
        return one;
    }
    let mut out = String::new();
    let mut used = 0;
    for c in one.chars() {
        let w = char_width(c);
        if used + w + 1 > max {
            break;
        }
        out.push(c);
        used += w;
    }
    if max > 0 {
        out.push('…');
    }
    out
}

/// `s` padded with spaces (or truncated) to exactly `w` columns.
pub fn fit(s: &str, w: usize) -> String {
    let t = truncate(s, w);
    let pad = w.saturating_sub(width(&t));
    format!("{t}{}", " ".repeat(pad))
}

/// `s` right-aligned in `w` columns (truncated when longer).
pub fn fit_right(s: &str, w: usize) -> String {
    let t = truncate(s, w);
    let pad = w.saturating_sub(width(&t));
    format!("{}{t}", " ".repeat(pad))
}

/// A word: adjacent non-blank pieces, possibly of different styles.
type Word = Vec<(String, Style)>;

fn words(spans: &[Span<'_>]) -> Vec<Word> {
    let mut out: Vec<Word> = Vec::new();
    let mut current: Word = Vec::new();
    for span in spans {
        let mut piece = String::new();
        for c in span.content.chars() {
            if c.is_whitespace() {
                if !piece.is_empty() {
                    current.push((std::mem::take(&mut piece), span.style));
                }
                if !current.is_empty() {
                    out.push(std::mem::take(&mut current));
                }
            } else {
                piece.push(c);
            }
        }
        if !piece.is_empty() {
            current.push((piece, span.style));
        }
    }
    if !current.is_empty() {
        out.push(current);
    }
    out
}

fn word_width(w: &Word) -> usize {
    w.iter().map(|(s, _)| width(s)).sum()
}

fn prefix_width(p: &[Span<'_>]) -> usize {
    p.iter().map(|s| s.width()).sum()
}

struct Builder {
    lines: Vec<Line<'static>>,
    current: Vec<Span<'static>>,
    /// How many of `current`'s spans are the line's prefix, which text
    /// never joins.
    prefix: usize,
    used: usize,
    width: usize,
    rest: Vec<Span<'static>>,
    rest_w: usize,
}

impl Builder {
    fn avail(&self) -> usize {
        self.width.saturating_sub(self.used)
    }
    fn newline(&mut self) {
        let line = std::mem::replace(&mut self.current, self.rest.clone());
        self.lines.push(Line::from(line));
        self.prefix = self.rest.len();
        self.used = self.rest_w;
    }

    /// Text joins the line's last span when it has the same style: a line
    /// of prose is a few spans, not one per word and space (the lines of
    /// a long conversation are kept, and each span is an allocation).
    fn push(&mut self, text: String, style: Style) {
        self.used += width(&text);
        let past_prefix = self.current.len() > self.prefix;
        match self.current.last_mut() {
            Some(last) if past_prefix && last.style == style => {
                last.content.to_mut().push_str(&text);
            }
            _ => self.current.push(Span::styled(text, style)),
        }
    }

    /// A word longer than a whole line, cut by characters.
    fn hard_break(&mut self, word: Word) {
        for (text, style) in word {
            let (mut piece, mut piece_w) = (String::new(), 0);
            for c in text.chars() {
                let w = char_width(c);
                let used = self.used + piece_w;
                if used + w > self.width && used > self.rest_w {
                    if !piece.is_empty() {
                        self.push(std::mem::take(&mut piece), style);
                        piece_w = 0;
                    }
                    self.newline();
                }
                piece.push(c);
                piece_w += w;
            }
            if !piece.is_empty() {
                self.push(piece, style);
            }
        }
    }
}

/// The style of the space between the line so far and `word`: a space
/// inside one styled run (a link, struck text) keeps its style, so the
/// run reads, and clicks, as one.
fn space_style(line: &[Span<'static>], word: &Word) -> Style {
    match (line.last(), word.first()) {
        (Some(prev), Some((_, next))) if prev.style == *next => *next,
        _ => Style::default(),
    }
}

/// Word-wrap `spans` to `width` columns. The first line starts with
/// `first`, later lines with `rest`. Always returns at least one line.
pub fn wrap(
    spans: &[Span<'_>],
    width: usize,
    first: &[Span<'static>],
    rest: &[Span<'static>],
) -> Vec<Line<'static>> {
    let width = width
        .max(prefix_width(first) + 1)
        .max(prefix_width(rest) + 1);
    let mut b = Builder {
        lines: Vec::new(),
        current: first.to_vec(),
        prefix: first.len(),
        used: prefix_width(first),
        width,
        rest: rest.to_vec(),
        rest_w: prefix_width(rest),
    };
    let mut at_start = true;
    for word in words(spans) {
        let w = word_width(&word);
        let space = usize::from(!at_start);
        if space + w <= b.avail() {
            if space == 1 {
                let style = space_style(&b.current, &word);
                b.push(" ".to_owned(), style);
            }
            for (text, style) in word {
                b.push(text, style);
            }
        } else if w <= width - b.rest_w {
            b.newline();
            for (text, style) in word {
                b.push(text, style);
            }
        } else {
            if space == 1 && b.avail() > 1 {
                let style = space_style(&b.current, &word);
                b.push(" ".to_owned(), style);
            } else if space == 1 {
                b.newline();
            }
            b.hard_break(word);
        }
        at_start = false;
    }
    let last = std::mem::take(&mut b.current);
    b.lines.push(Line::from(last));
    b.lines
}

/// Cut `text` into lines of at most `width` columns by characters (for
/// code and command output, where words must not be re-flowed).
pub fn chop(text: &str, width: usize) -> Vec<String> {
    let width = width.max(1);
    let mut out = Vec::new();
    let mut line = String::new();
    let mut used = 0;
    for c in text.chars() {
        let w = char_width(c);
        if used + w > width && !line.is_empty() {
            out.push(std::mem::take(&mut line));
            used = 0;
        }
        line.push(c);
        used += w;
    }
    out.push(line);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(lines: &[Line<'_>]) -> Vec<String> {
        lines
            .iter()
            .map(|l| l.spans.iter().map(|s| s.content.as_ref()).collect())
            .collect()
    }

    #[test]
    fn wraps_words_with_prefixes() {
        let spans = [Span::raw("the quick brown fox jumps over")];
        let first = [Span::raw("- ")];
        let rest = [Span::raw("  ")];
        let lines = wrap(&spans, 12, &first, &rest);
        assert_eq!(text(&lines), ["- the quick", "  brown fox", "  jumps over"]);
    }

    /// Words of one style join in one span, apart from the prefix; a
    /// change of style starts a new one.
    #[test]
    fn a_line_is_a_span_a_style() {
        let bold = Style::default().add_modifier(ratatui::style::Modifier::BOLD);
        let spans = [
            Span::raw("plain words here "),
            Span::styled("bold", bold),
            Span::raw(" tail"),
        ];
        let lines = wrap(&spans, 80, &[Span::raw("- ")], &[Span::raw("  ")]);
        let contents: Vec<&str> = lines[0].spans.iter().map(|s| s.content.as_ref()).collect();
        assert_eq!(contents, ["- ", "plain words here ", "bold", " tail"]);
    }

    #[test]
    fn cuts_long_words_and_counts_wide_chars() {
        let lines = wrap(&[Span::raw("abcdefghij")], 4, &[], &[]);
        assert_eq!(text(&lines), ["abcd", "efgh", "ij"]);
        assert_eq!(width("日本"), 4);
        assert_eq!(chop("日本語", 4), ["日本", "語"]);
        assert_eq!(truncate("hello world", 6), "hello…");
    }

    #[test]
    fn sanitize_shows_escapes_and_keeps_the_operators_input() {
        assert_eq!(sanitize("a\x1b[31mb\tc\r\nd"), "a\\u{1b}[31mb    c\nd");
        assert_eq!(sanitize("ab\u{202e}c"), "ab\\u{202e}c");
        assert_eq!(sanitize_input("a\x1bb\tc"), "ab\tc");
    }
}
