//! A small markdown renderer for brief bodies: headings, bullet and
//! numbered lists (nested by indentation), block quotes, fenced code
//! blocks, tables and rules kept verbatim, and inline `code`, **strong**
//! and *emphasis*. A line break inside a paragraph is kept where the
//! model put it (a 60-line answer is not one paragraph); each line is
//! wrapped by display width; code is never re-flowed, only cut at the
//! width.
//!
//! Pure and total: unmatched markers stay literal, any text renders.

use ratatui::style::Style;
use ratatui::text::{Line, Span};

use super::theme::Theme;
use super::wrap::{chop, sanitize, wrap};

/// Render `text` into lines of at most `width` columns, each starting
/// with `indent` (the row's gutter).
pub fn render(text: &str, width: usize, indent: &str, theme: Theme) -> Vec<Line<'static>> {
    let text = sanitize(text);
    let mut r = Renderer {
        out: Vec::new(),
        para: Vec::new(),
        width,
        indent: indent.to_owned(),
        theme,
    };
    let mut fence: Option<String> = None;
    for line in text.lines() {
        if let Some(marker) = &fence {
            if line.trim_start().starts_with(marker.as_str()) {
                fence = None;
            } else {
                r.code_line(line);
            }
            continue;
        }
        let trimmed = line.trim_start();
        if trimmed.starts_with("```") || trimmed.starts_with("~~~") {
            r.flush();
            fence = Some(trimmed[..3].to_owned());
            continue;
        }
        r.block_line(line);
    }
    r.flush();
    while r.out.last().is_some_and(|l| l.width() <= r.indent.len()) {
        r.out.pop();
    }
    if r.out.is_empty() {
        r.out.push(Line::from(r.indent.clone()));
    }
    r.out
}

struct Renderer {
    out: Vec<Line<'static>>,
    /// Lines of the paragraph being collected (each kept a line).
    para: Vec<String>,
    width: usize,
    indent: String,
    theme: Theme,
}

impl Renderer {
    fn flush(&mut self) {
        if self.para.is_empty() {
            return;
        }
        let pre = [Span::raw(self.indent.clone())];
        for line in std::mem::take(&mut self.para) {
            let spans = inline(&line, Style::default(), self.theme);
            self.out.extend(wrap(&spans, self.width, &pre, &pre));
        }
    }

    fn blank(&mut self) {
        self.flush();
        let last_blank = self
            .out
            .last()
            .is_none_or(|l| l.width() <= self.indent.len());
        if !last_blank {
            self.out.push(Line::from(self.indent.clone()));
        }
    }

    fn code_line(&mut self, line: &str) {
        let gutter = Span::styled(format!("{}│ ", self.indent), self.theme.dim());
        let avail = self.width.saturating_sub(self.indent.len() + 2).max(1);
        for piece in chop(line, avail) {
            let text = Span::styled(piece, self.theme.code());
            self.out.push(Line::from(vec![gutter.clone(), text]));
        }
    }

    fn verbatim(&mut self, line: &str, style: Style) {
        let avail = self.width.saturating_sub(self.indent.len()).max(1);
        for piece in chop(line, avail) {
            let pre = Span::raw(self.indent.clone());
            self.out
                .push(Line::from(vec![pre, Span::styled(piece, style)]));
        }
    }

    fn block_line(&mut self, line: &str) {
        let trimmed = line.trim_start();
        let depth = (line.len() - trimmed.len()) / 2;
        if trimmed.is_empty() {
            return self.blank();
        }
        if let Some((level, title)) = heading(trimmed) {
            self.blank();
            let style = match level {
                1 => self
                    .theme
                    .bold()
                    .add_modifier(ratatui::style::Modifier::UNDERLINED),
                _ => self.theme.bold(),
            };
            let spans = inline(title, style, self.theme);
            let pre = [Span::raw(self.indent.clone())];
            self.out.extend(wrap(&spans, self.width, &pre, &pre));
            return;
        }
        if is_rule(trimmed) {
            self.flush();
            let w = self.width.saturating_sub(self.indent.len()).min(40);
            return self.verbatim(&"─".repeat(w), self.theme.dim());
        }
        if trimmed.starts_with('|') {
            self.flush();
            return self.verbatim(trimmed, Style::default());
        }
        if let Some(rest) = trimmed.strip_prefix("> ").or(trimmed.strip_prefix('>')) {
            self.flush();
            let pre = [Span::styled(format!("{}│ ", self.indent), self.theme.dim())];
            let spans = inline(rest, self.theme.italic(), self.theme);
            self.out.extend(wrap(&spans, self.width, &pre, &pre));
            return;
        }
        if let Some((marker, rest)) = list_item(trimmed) {
            self.flush();
            let pad = "  ".repeat(depth.min(4));
            let first = format!("{}{pad}{marker} ", self.indent);
            let cont = " ".repeat(first.chars().count());
            let spans = inline(rest, Style::default(), self.theme);
            let first = [Span::raw(first)];
            self.out
                .extend(wrap(&spans, self.width, &first, &[Span::raw(cont)]));
            return;
        }
        self.para.push(trimmed.to_owned());
    }
}

fn heading(line: &str) -> Option<(usize, &str)> {
    let level = line.chars().take_while(|c| *c == '#').count();
    let rest = line.get(level..)?;
    match (1..=6).contains(&level) && rest.starts_with(' ') {
        true => Some((level, rest.trim())),
        false => None,
    }
}

fn is_rule(line: &str) -> bool {
    let t: String = line.chars().filter(|c| !c.is_whitespace()).collect();
    t.len() >= 3
        && ["-", "*", "_"]
            .iter()
            .any(|m| t.chars().all(|c| c.to_string() == *m))
}

/// `- x`, `* x`, `+ x` become `•`; `12. x` and `3) x` keep their number.
fn list_item(line: &str) -> Option<(String, &str)> {
    for bullet in ["- ", "* ", "+ "] {
        if let Some(rest) = line.strip_prefix(bullet) {
            return Some(("•".to_owned(), rest));
        }
    }
    let digits = line.chars().take_while(char::is_ascii_digit).count();
    if digits == 0 || digits > 3 {
        return None;
    }
    let after = &line[digits..];
    let rest = after.strip_prefix(". ").or(after.strip_prefix(") "))?;
    Some((line[..digits + 1].to_owned(), rest))
}

/// Inline markup: `code`, **strong** / __strong__, *emphasis* / _emphasis_.
/// An `_` inside a word (snake_case) is never emphasis.
pub fn inline(text: &str, base: Style, theme: Theme) -> Vec<Span<'static>> {
    let chars: Vec<char> = text.chars().collect();
    let mut out: Vec<Span<'static>> = Vec::new();
    let mut plain = String::new();
    let mut i = 0;
    let flush = |plain: &mut String, out: &mut Vec<Span<'static>>| {
        if !plain.is_empty() {
            out.push(Span::styled(std::mem::take(plain), base));
        }
    };
    while i < chars.len() {
        let c = chars[i];
        let prev_word = i > 0 && chars[i - 1].is_alphanumeric();
        if c == '`' {
            if let Some(end) = find(&chars, i + 1, &['`']) {
                flush(&mut plain, &mut out);
                let code: String = chars[i + 1..end].iter().collect();
                let code = match theme.no_color {
                    true => format!("`{code}`"),
                    false => code,
                };
                out.push(Span::styled(code, base.patch(theme.code())));
                i = end + 1;
                continue;
            }
        }
        if (c == '*' || c == '_') && !(c == '_' && prev_word) {
            let double = chars.get(i + 1) == Some(&c);
            let marker: &[char] = if double { &[c, c] } else { &[c] };
            let start = i + marker.len();
            let opens = chars.get(start).is_some_and(|n| !n.is_whitespace());
            if let Some(end) = find(&chars, start, marker).filter(|_| opens) {
                let closes = chars[end - 1] != ' ';
                let after_ok = c != '_'
                    || !chars
                        .get(end + marker.len())
                        .is_some_and(|n| n.is_alphanumeric());
                if closes && after_ok && end > start {
                    flush(&mut plain, &mut out);
                    let inner: String = chars[start..end].iter().collect();
                    let style = match double {
                        true => base.patch(theme.bold()),
                        false => base.patch(theme.italic()),
                    };
                    out.extend(inline(&inner, style, theme));
                    i = end + marker.len();
                    continue;
                }
            }
        }
        plain.push(c);
        i += 1;
    }
    flush(&mut plain, &mut out);
    out
}

/// The index where `marker` next occurs at or after `from`.
fn find(chars: &[char], from: usize, marker: &[char]) -> Option<usize> {
    (from..chars.len()).find(|&j| chars[j..].starts_with(marker))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plain(lines: &[Line<'_>]) -> Vec<String> {
        lines
            .iter()
            .map(|l| l.spans.iter().map(|s| s.content.as_ref()).collect())
            .collect()
    }

    #[test]
    fn renders_blocks() {
        let md = "# Title\n\nSome *text* with `code` and\na soft break.\n\n- one\n  - nested item\n1. first\n\n```\nfn main() {}\n```";
        let lines = render(md, 40, "  ", Theme { no_color: false });
        assert_eq!(
            plain(&lines),
            [
                "  Title",
                "  ",
                "  Some text with code and",
                "  a soft break.",
                "  ",
                "  • one",
                "    • nested item",
                "  1. first",
                "  ",
                "  │ fn main() {}",
            ]
        );
    }

    #[test]
    fn snake_case_is_not_emphasis() {
        let spans = inline(
            "read work_item_id and **bold**",
            Style::default(),
            Theme { no_color: true },
        );
        let text: String = spans.iter().map(|s| s.content.as_ref()).collect();
        assert_eq!(text, "read work_item_id and bold");
    }
}
