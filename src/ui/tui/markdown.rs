//! Markdown in the console, parsed by `pulldown-cmark` (CommonMark with
//! tables, strikethrough and task lists): headings, paragraphs, nested
//! lists, block quotes with their own gutter (`▌`), fenced code named by
//! its language and highlighted (`highlight`) behind a `│` gutter, tables
//! drawn with box characters and wrapped to the width, links underlined
//! with their address, rules. A line break inside a paragraph is kept
//! where the model put it (a 60-line answer is not one paragraph); text is
//! wrapped by display width; code is never re-flowed, only cut at the
//! width.
//!
//! Pure and total: any text renders (raw HTML is shown as written).

use pulldown_cmark::{Alignment, CodeBlockKind, Event, HeadingLevel, Options, Parser, Tag, TagEnd};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};

use super::highlight;
use super::theme::Theme;
use super::wrap::{chop, sanitize, width as text_width, wrap};

/// Render `text` into lines of at most `width` columns, each starting
/// with `indent` (the row's gutter).
pub fn render(text: &str, width: usize, indent: &str, theme: Theme) -> Vec<Line<'static>> {
    let text = sanitize(text);
    let mut r = Renderer {
        out: Vec::new(),
        width: width.max(8),
        indent: indent.to_owned(),
        t: theme,
        spans: Vec::new(),
        styles: Vec::new(),
        containers: Vec::new(),
        pending_marker: None,
        code: None,
        table: None,
        link: None,
        heading: None,
    };
    let options =
        Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TASKLISTS;
    for event in Parser::new_ext(&text, options) {
        r.event(event);
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

/// `text` in pieces, each an `http(s)://` address (true) or the text
/// between (false). An address ends at whitespace or a character it
/// cannot hold unencoded, and the punctuation a sentence puts after it
/// (`.`, `,`, `)` …) is not part of it.
fn bare_urls(text: &str) -> Vec<(&str, bool)> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(at) = ["https://", "http://"]
        .iter()
        .filter_map(|scheme| rest.find(scheme))
        .min()
    {
        let tail = &rest[at..];
        // Whitespace ends it, and so does any character an address does
        // not hold unencoded (`，` after a URL in a Chinese sentence).
        let end = tail
            .find(|c: char| c.is_whitespace() || !c.is_ascii())
            .unwrap_or(tail.len());
        let url = tail[..end].trim_end_matches(['.', ',', ';', ':', '!', '?', ')', ']', '\'', '"']);
        if url.len() <= "https://".len() {
            out.push((&rest[..at + end], false));
            rest = &rest[at + end..];
            continue;
        }
        if at > 0 {
            out.push((&rest[..at], false));
        }
        out.push((url, true));
        rest = &rest[at + url.len()..];
    }
    if !rest.is_empty() {
        out.push((rest, false));
    }
    out
}

/// A container the current block sits in.
enum Container {
    Quote,
    /// A list: the next item's number (`None`: bullets) and its depth.
    List {
        next: Option<u64>,
        depth: usize,
    },
    /// An item: how wide its marker is (continuation lines indent by it).
    Item {
        marker_width: usize,
    },
}

struct CodeBlock {
    lang: String,
    text: String,
}

struct Table {
    align: Vec<Alignment>,
    rows: Vec<Vec<Vec<Span<'static>>>>,
    cell: Vec<Span<'static>>,
    header_rows: usize,
}

struct Renderer {
    out: Vec<Line<'static>>,
    width: usize,
    indent: String,
    t: Theme,
    /// Inline content of the block being collected.
    spans: Vec<Span<'static>>,
    /// Inline styles open (emphasis, strong, links...).
    styles: Vec<Style>,
    containers: Vec<Container>,
    /// A list item's marker, put before its first line.
    pending_marker: Option<String>,
    code: Option<CodeBlock>,
    table: Option<Table>,
    /// The open link's address (shown after its text when different).
    link: Option<String>,
    heading: Option<HeadingLevel>,
}

impl Renderer {
    fn style(&self) -> Style {
        self.styles
            .iter()
            .fold(self.t.text(), |acc, s| acc.patch(*s))
    }

    /// The gutter of the current block: quote bars and list indentation.
    /// `first` puts a pending item marker in place of its indentation.
    fn prefix(&mut self, first: bool) -> Vec<Span<'static>> {
        let mut out = vec![Span::raw(self.indent.clone())];
        let items: Vec<usize> = self
            .containers
            .iter()
            .filter_map(|c| match c {
                Container::Item { marker_width } => Some(*marker_width),
                _ => None,
            })
            .collect();
        let mut item_seen = 0;
        for c in &self.containers {
            match c {
                Container::Quote => out.push(Span::styled("▌ ", self.t.accent())),
                Container::Item { marker_width } => {
                    item_seen += 1;
                    let innermost = item_seen == items.len();
                    match (&self.pending_marker, first && innermost) {
                        (Some(m), true) => out.push(Span::styled(m.clone(), self.t.accent())),
                        _ => out.push(Span::raw(" ".repeat(*marker_width))),
                    }
                }
                Container::List { .. } => {}
            }
        }
        if first {
            self.pending_marker = None;
        }
        out
    }

    fn push_text(&mut self, text: &str) {
        if let Some(table) = self.table.as_mut() {
            let style = self.styles.iter().fold(self.t.text(), |a, s| a.patch(*s));
            table.cell.push(Span::styled(text.to_owned(), style));
            return;
        }
        let style = self.style();
        if self.link.is_some() {
            self.spans.push(Span::styled(text.to_owned(), style));
            return;
        }
        // A bare address in the text is a link too.
        for (piece, url) in bare_urls(text) {
            let style = match url {
                true => super::links::link_style(
                    style
                        .patch(self.t.accent())
                        .add_modifier(Modifier::UNDERLINED),
                    piece,
                ),
                false => style,
            };
            self.spans.push(Span::styled(piece.to_owned(), style));
        }
    }

    /// Wrap the collected inline content as one line of the block (a soft
    /// break ends a line: the model's line breaks are kept).
    fn line_out(&mut self) {
        if self.spans.is_empty() {
            return;
        }
        let spans = std::mem::take(&mut self.spans);
        let first = self.prefix(true);
        let rest = self.prefix(false);
        self.out.extend(wrap(&spans, self.width, &first, &rest));
    }

    fn flush(&mut self) {
        self.line_out();
    }

    /// One blank line between blocks (never two, never at the top).
    fn gap(&mut self) {
        self.flush();
        let tight_item = matches!(self.containers.last(), Some(Container::Item { .. }))
            && self.pending_marker.is_some();
        if tight_item || self.out.is_empty() {
            return;
        }
        let blank_width = self.indent.len();
        if self.out.last().is_some_and(|l| l.width() <= blank_width) {
            return;
        }
        let mut prefix = vec![Span::raw(self.indent.clone())];
        for c in &self.containers {
            if let Container::Quote = c {
                prefix.push(Span::styled("▌ ", self.t.accent()));
            }
        }
        self.out.push(Line::from(prefix));
    }

    fn event(&mut self, e: Event<'_>) {
        match e {
            Event::Start(tag) => self.start(tag),
            Event::End(tag) => self.end(tag),
            Event::Text(text) => match self.code.as_mut() {
                Some(code) => code.text.push_str(&text),
                None => self.push_text(&text),
            },
            Event::Code(code) => {
                let code = match self.t.no_color {
                    true => format!("`{code}`"),
                    false => code.to_string(),
                };
                let style = self.style().patch(self.t.code());
                match self.table.as_mut() {
                    Some(table) => table.cell.push(Span::styled(code, style)),
                    None => self.spans.push(Span::styled(code, style)),
                }
            }
            Event::SoftBreak | Event::HardBreak => match self.table.as_mut() {
                Some(table) => table.cell.push(Span::raw(" ")),
                None => self.line_out(),
            },
            Event::Rule => {
                self.gap();
                let rule = "─".repeat(self.width.saturating_sub(self.indent.len()).min(40));
                let mut prefix = self.prefix(true);
                prefix.push(Span::styled(rule, self.t.dim()));
                self.out.push(Line::from(prefix));
            }
            Event::Html(html) | Event::InlineHtml(html) => {
                for (i, l) in html.lines().enumerate() {
                    if i > 0 {
                        self.line_out();
                    }
                    self.push_text(l);
                }
            }
            Event::TaskListMarker(done) => {
                let mark = if done { "☑ " } else { "☐ " };
                self.push_text(mark);
            }
            Event::FootnoteReference(name) => self.push_text(&format!("[^{name}]")),
            Event::InlineMath(m) | Event::DisplayMath(m) => self.push_text(&m),
        }
    }

    fn start(&mut self, tag: Tag<'_>) {
        match tag {
            Tag::Paragraph => {
                if self.table.is_none() {
                    self.gap();
                }
            }
            Tag::Heading { level, .. } => {
                self.gap();
                self.heading = Some(level);
                let style = match level {
                    HeadingLevel::H1 => self.t.bold().add_modifier(Modifier::UNDERLINED),
                    HeadingLevel::H2 => self.t.bold().patch(self.t.accent()),
                    _ => self.t.bold(),
                };
                self.styles.push(style);
            }
            Tag::BlockQuote(_) => {
                self.gap();
                self.containers.push(Container::Quote);
            }
            Tag::CodeBlock(kind) => {
                self.gap();
                let lang = match kind {
                    CodeBlockKind::Fenced(info) => info.to_string(),
                    CodeBlockKind::Indented => String::new(),
                };
                self.code = Some(CodeBlock {
                    lang,
                    text: String::new(),
                });
            }
            Tag::List(start) => {
                self.flush();
                let depth = self
                    .containers
                    .iter()
                    .filter(|c| matches!(c, Container::List { .. }))
                    .count();
                if depth == 0 {
                    self.gap();
                }
                self.containers.push(Container::List { next: start, depth });
            }
            Tag::Item => {
                self.flush();
                let (marker, depth) = match self.containers.iter_mut().rev().find_map(|c| match c {
                    Container::List { next, depth } => Some((next, *depth)),
                    _ => None,
                }) {
                    Some((Some(n), depth)) => {
                        let m = format!("{n}. ");
                        *n += 1;
                        (m, depth)
                    }
                    Some((None, depth)) => {
                        let bullet = ["• ", "◦ ", "▪ "][depth.min(2)];
                        (bullet.to_owned(), depth)
                    }
                    None => ("• ".to_owned(), 0),
                };
                let _ = depth;
                let marker_width = text_width(&marker);
                self.pending_marker = Some(marker);
                self.containers.push(Container::Item { marker_width });
            }
            Tag::Table(align) => {
                self.gap();
                self.table = Some(Table {
                    align,
                    rows: Vec::new(),
                    cell: Vec::new(),
                    header_rows: 0,
                });
            }
            Tag::TableHead | Tag::TableRow => {
                if let Some(t) = self.table.as_mut() {
                    t.rows.push(Vec::new());
                }
            }
            Tag::TableCell => {}
            Tag::Emphasis => self.styles.push(self.t.italic()),
            Tag::Strong => self.styles.push(self.t.bold()),
            Tag::Strikethrough => self
                .styles
                .push(Style::default().add_modifier(Modifier::CROSSED_OUT)),
            Tag::Link { dest_url, .. } => {
                let style = self.t.accent().add_modifier(Modifier::UNDERLINED);
                self.styles.push(super::links::link_style(style, &dest_url));
                self.link = Some(dest_url.to_string());
            }
            Tag::Image { dest_url, .. } => {
                self.push_text("[image: ");
                self.link = Some(dest_url.to_string());
            }
            Tag::HtmlBlock | Tag::FootnoteDefinition(_) | Tag::MetadataBlock(_) => self.gap(),
            Tag::DefinitionList
            | Tag::DefinitionListTitle
            | Tag::DefinitionListDefinition
            | Tag::Superscript
            | Tag::Subscript => {}
        }
    }

    fn end(&mut self, tag: TagEnd) {
        match tag {
            TagEnd::Paragraph => self.flush(),
            TagEnd::Heading(_) => {
                self.flush();
                self.styles.pop();
                self.heading = None;
            }
            TagEnd::BlockQuote(_) => {
                self.flush();
                self.containers.pop();
            }
            TagEnd::CodeBlock => {
                if let Some(code) = self.code.take() {
                    self.code_block(&code);
                }
            }
            TagEnd::List(_) => {
                self.flush();
                self.containers.pop();
            }
            TagEnd::Item => {
                self.flush();
                if self.pending_marker.is_some() {
                    // An empty item still shows its marker.
                    let line = Line::from(self.prefix(true));
                    self.out.push(line);
                }
                self.containers.pop();
            }
            TagEnd::Table => {
                if let Some(table) = self.table.take() {
                    self.table_out(table);
                }
            }
            TagEnd::TableHead => {
                if let Some(t) = self.table.as_mut() {
                    t.header_rows = t.rows.len();
                }
            }
            TagEnd::TableRow => {}
            TagEnd::TableCell => {
                if let Some(t) = self.table.as_mut() {
                    let cell = std::mem::take(&mut t.cell);
                    if let Some(row) = t.rows.last_mut() {
                        row.push(cell);
                    }
                }
            }
            TagEnd::Emphasis | TagEnd::Strong | TagEnd::Strikethrough => {
                self.styles.pop();
            }
            TagEnd::Link => {
                self.styles.pop();
                if let Some(url) = self.link.take() {
                    self.link_address(&url);
                }
            }
            TagEnd::Image => {
                if let Some(url) = self.link.take() {
                    self.push_text(&format!("]({url})"));
                }
            }
            TagEnd::HtmlBlock | TagEnd::FootnoteDefinition | TagEnd::MetadataBlock(_) => {
                self.flush()
            }
            TagEnd::DefinitionList
            | TagEnd::DefinitionListTitle
            | TagEnd::DefinitionListDefinition
            | TagEnd::Superscript
            | TagEnd::Subscript => {}
        }
    }

    /// After a link's text: its address, dim, unless the text is it.
    fn link_address(&mut self, url: &str) {
        let shown: String = match self.table.as_ref() {
            Some(t) => t.cell.iter().map(|s| s.content.as_ref()).collect(),
            None => self.spans.iter().map(|s| s.content.as_ref()).collect(),
        };
        let bare = url.trim_start_matches("mailto:");
        if url.is_empty() || shown.ends_with(bare) {
            return;
        }
        let span = Span::styled(
            format!(" ({url})"),
            super::links::link_style(self.t.dim(), url),
        );
        match self.table.as_mut() {
            Some(t) => t.cell.push(span),
            None => self.spans.push(span),
        }
    }

    /// A fenced block: its language named above it, its lines highlighted
    /// behind a `│` gutter and cut (never re-flowed) at the width.
    fn code_block(&mut self, code: &CodeBlock) {
        let gutter = |t: Theme| Span::styled("│ ", t.dim());
        let lang = code.lang.split_whitespace().next().unwrap_or("").to_owned();
        if !lang.is_empty() {
            let mut prefix = self.prefix(true);
            prefix.push(Span::styled(format!("┌ {lang}"), self.t.dim()));
            self.out.push(Line::from(prefix));
        }
        let text = code.text.strip_suffix('\n').unwrap_or(&code.text);
        let width = self.width;
        let room = |prefix: &[Span<'static>]| {
            width
                .saturating_sub(prefix.iter().map(Span::width).sum::<usize>() + 2)
                .max(4)
        };
        for spans in highlight::lines(text, &lang, self.t) {
            let mut prefix = self.prefix(lang.is_empty());
            prefix.push(gutter(self.t));
            let room = room(&prefix);
            let mut line = prefix;
            let mut used = 0;
            for s in spans {
                if used >= room {
                    break;
                }
                let piece = chop(&s.content, room - used)
                    .into_iter()
                    .next()
                    .unwrap_or_default();
                used += text_width(&piece);
                line.push(Span::styled(piece, s.style));
            }
            self.out.push(Line::from(line));
        }
        if text.is_empty() {
            let mut line = self.prefix(true);
            line.push(gutter(self.t));
            self.out.push(Line::from(line));
        }
    }

    /// A table with box characters, its columns as wide as their cells
    /// need, shrunk (widest first) to fit, cells wrapped within them.
    fn table_out(&mut self, table: Table) {
        let cols = table.rows.iter().map(Vec::len).max().unwrap_or(0);
        if cols == 0 {
            return;
        }
        let cell_text =
            |c: &Vec<Span<'static>>| -> usize { c.iter().map(Span::width).sum::<usize>() };
        let mut widths = vec![1usize; cols];
        for row in &table.rows {
            for (i, c) in row.iter().enumerate() {
                widths[i] = widths[i].max(cell_text(c));
            }
        }
        let prefix_w: usize = self.prefix(false).iter().map(Span::width).sum();
        // Borders: one per column and one more, plus a space each side.
        let room = self
            .width
            .saturating_sub(prefix_w + cols * 3 + 1)
            .max(cols * 3);
        while widths.iter().sum::<usize>() > room {
            let Some((i, _)) = widths.iter().enumerate().max_by_key(|(_, w)| **w) else {
                break;
            };
            if widths[i] <= 3 {
                break;
            }
            widths[i] -= 1;
        }
        let dim = self.t.dim();
        let border = |l: &str, m: &str, r: &str, widths: &[usize]| -> String {
            let inner: Vec<String> = widths.iter().map(|w| "─".repeat(w + 2)).collect();
            format!("{l}{}{r}", inner.join(m))
        };
        let push = |this: &mut Renderer, text: String| {
            let mut line = this.prefix(false);
            line.push(Span::styled(text, dim));
            this.out.push(Line::from(line));
        };
        push(self, border("┌", "┬", "┐", &widths));
        for (r, row) in table.rows.iter().enumerate() {
            // Each cell wrapped within its column.
            let wrapped: Vec<Vec<Line<'static>>> = (0..cols)
                .map(|i| {
                    let cell = row.get(i).cloned().unwrap_or_default();
                    let style = match r < table.header_rows {
                        true => Style::default().add_modifier(Modifier::BOLD),
                        false => Style::default(),
                    };
                    let cell: Vec<Span<'static>> = cell
                        .into_iter()
                        .map(|s| Span::styled(s.content, s.style.patch(style)))
                        .collect();
                    wrap(&cell, widths[i], &[], &[])
                })
                .collect();
            let height = wrapped.iter().map(Vec::len).max().unwrap_or(1).max(1);
            for h in 0..height {
                let mut line = self.prefix(false);
                line.push(Span::styled("│", dim));
                for (i, cell) in wrapped.iter().enumerate() {
                    let content = cell.get(h).cloned().unwrap_or_default();
                    let w = content.width();
                    let pad = widths[i].saturating_sub(w);
                    let (left, right) = match table.align.get(i) {
                        Some(Alignment::Right) => (pad, 0),
                        Some(Alignment::Center) => (pad / 2, pad - pad / 2),
                        _ => (0, pad),
                    };
                    line.push(Span::raw(" ".repeat(left + 1)));
                    line.extend(content.spans);
                    line.push(Span::raw(" ".repeat(right + 1)));
                    line.push(Span::styled("│", dim));
                }
                self.out.push(Line::from(line));
            }
            if r + 1 == table.header_rows && table.rows.len() > r + 1 {
                push(self, border("├", "┼", "┤", &widths));
            }
        }
        push(self, border("└", "┴", "┘", &widths));
    }
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

    fn md(text: &str, width: usize) -> Vec<String> {
        plain(&render(text, width, "  ", Theme { no_color: true }))
    }

    #[test]
    fn renders_blocks() {
        let text = "# Title\n\nSome *text* with `code` and\na soft break.\n\n- one\n  - nested item\n\n1. first\n\n```\nfn main() {}\n```";
        assert_eq!(
            md(text, 40),
            [
                "  Title",
                "  ",
                "  Some text with `code` and",
                "  a soft break.",
                "  ",
                "  • one",
                "    ◦ nested item",
                "  ",
                "  1. first",
                "  ",
                "  │ fn main() {}",
            ]
        );
    }

    #[test]
    fn snake_case_is_not_emphasis_and_quotes_have_their_own_gutter() {
        assert_eq!(
            md("read work_item_id and **bold**", 60),
            ["  read work_item_id and bold"]
        );
        assert_eq!(
            md("> quoted\n\n```sh\nls\n```", 40),
            ["  ▌ quoted", "  ", "  ┌ sh", "  │ ls"]
        );
    }

    #[test]
    fn tables_are_boxed_and_fit_the_width() {
        let text = "| name | what it does |\n|:-----|-------------:|\n| `a` | a rather long description that must wrap |\n| b | short |";
        let wide = md(text, 80);
        assert_eq!(
            wide,
            [
                "  ┌──────┬──────────────────────────────────────────┐",
                "  │ name │                             what it does │",
                "  ├──────┼──────────────────────────────────────────┤",
                "  │ `a`  │ a rather long description that must wrap │",
                "  │ b    │                                    short │",
                "  └──────┴──────────────────────────────────────────┘",
            ]
        );
        let narrow = md(text, 36);
        assert!(narrow.iter().all(|l| text_width(l) <= 36), "{narrow:#?}");
        assert!(
            narrow.iter().any(|l| l.contains("description")),
            "{narrow:#?}"
        );
    }

    #[test]
    fn links_show_their_address_and_numbered_lists_count() {
        assert_eq!(
            md(
                "See [the docs](https://example.com/docs) or <https://x.dev>.",
                80
            ),
            ["  See the docs (https://example.com/docs) or https://x.dev."]
        );
        assert_eq!(md("3. c\n4. d", 40), ["  3. c", "  4. d"]);
        assert_eq!(
            md("- [x] done\n- [ ] todo", 40),
            ["  • ☑ done", "  • ☐ todo"]
        );
    }

    #[test]
    fn a_link_and_its_address_carry_it_for_the_terminal_and_others_do_not() {
        let lines = render(
            "See [the docs](https://example.com/docs) or [this](file:///etc/passwd).",
            80,
            "  ",
            Theme { no_color: false },
        );
        let linked: Vec<(String, Option<String>)> = lines
            .iter()
            .flat_map(|l| l.spans.iter())
            .map(|s| {
                let url = s
                    .style
                    .underline_color
                    .and_then(super::super::links::link_of);
                (s.content.to_string(), url.map(|(_, u)| u.to_string()))
            })
            .filter(|(_, url)| url.is_some())
            .collect();
        let docs = Some("https://example.com/docs".to_owned());
        let linked_text: String = linked.iter().map(|(t, _)| t.as_str()).collect();
        assert_eq!(
            linked_text, "the docs(https://example.com/docs)",
            "the link's words, the space between them, and its address"
        );
        assert!(
            linked.iter().all(|(_, url)| *url == docs),
            "a file address is not made clickable: {linked:?}"
        );
    }

    #[test]
    fn a_bare_address_is_a_link_without_its_sentence_punctuation() {
        assert_eq!(
            bare_urls("see https://example.com/a?b=1. then (http://x.dev)"),
            [
                ("see ", false),
                ("https://example.com/a?b=1", true),
                (". then (", false),
                ("http://x.dev", true),
                (")", false),
            ]
        );
        assert_eq!(bare_urls("no address"), [("no address", false)]);
        assert_eq!(
            bare_urls("见https://x.com，谢谢"),
            [("见", false), ("https://x.com", true), ("，谢谢", false)]
        );
        assert_eq!(
            bare_urls("https:// alone"),
            [("https://", false), (" alone", false)]
        );
        let lines = render(
            "The build is at https://ci.example.com/run/42.",
            80,
            "  ",
            Theme { no_color: false },
        );
        let linked: Vec<String> = lines
            .iter()
            .flat_map(|l| l.spans.iter())
            .filter(|s| {
                s.style
                    .underline_color
                    .and_then(super::super::links::link_of)
                    .is_some()
            })
            .map(|s| s.content.to_string())
            .collect();
        assert_eq!(linked, ["https://ci.example.com/run/42"]);
    }

    #[test]
    fn anything_renders() {
        for text in [
            "",
            "<div>raw</div>",
            "***",
            "| a |",
            "```\nunclosed",
            "- ",
            "> > deep",
        ] {
            let lines = md(text, 20);
            assert!(!lines.is_empty(), "{text:?}");
        }
    }
}
