//! The answer streaming into the conversation, drawn as markdown while it
//! arrives: where its finished part ends (`stable_cut`), rendering that
//! part piece by piece once (`StreamCache`), and taking deltas (another
//! run's are ignored, a recorded round's late ones skipped).

use super::super::markdown;
use super::super::theme::Theme;
use super::Conversation;

/// The rendering of a streaming answer's finished part: the text up to
/// `stable_len`, rendered segment by segment as it grows (each segment
/// once), at one width.
#[derive(Debug)]
pub(super) struct StreamCache {
    generation: u64,
    width: u16,
    theme: Theme,
    stable_len: usize,
    /// The info string of the code fence open at `stable_len`, if any.
    fence: Option<String>,
    /// `stable_len` is inside a paragraph (`Cut::soft`).
    soft: bool,
    lines: Vec<ratatui::text::Line<'static>>,
    /// Where the text's finished part ends, as read so far (kept across a
    /// re-render at another width).
    scan: CutScan,
}

/// Lines of an open code fence rendered together at most (a long code
/// block streams in chunks of this many lines, each highlighted once).
const FENCE_CHUNK: usize = 16;

/// Where a streaming text's finished part ends.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Cut {
    pub at: usize,
    /// The info string of the code fence open there, if any.
    pub fence: Option<String>,
    /// Inside a paragraph of plain lines: what follows goes on the next
    /// line of the same paragraph (no blank line between).
    pub soft: bool,
}

/// A line that can only be paragraph text, in any context that starts
/// a paragraph: no list, quote, table, heading, fence, HTML or setext
/// marker, no indentation.
fn plain(line: &str) -> bool {
    let Some(c) = line.chars().next() else {
        return false;
    };
    let marker = matches!(
        c,
        '-' | '*' | '+' | '=' | '#' | '>' | '|' | '`' | '~' | '<' | '_'
    ) || c.is_whitespace()
        || c.is_ascii_digit();
    !marker && !line.trim().is_empty()
}

/// Where a streaming text's finished part ends: after its last blank line
/// outside a code fence, after a closed fence, inside an open fence after
/// every `FENCE_CHUNK`th line of it, or between two plain lines of a
/// paragraph that began after a blank line (its lines are kept as
/// written, so the paragraph renders the same in two parts).
pub fn stable_cut(text: &str) -> Cut {
    let mut scan = CutScan::default();
    scan.feed(text);
    scan.cut
}

/// `stable_cut` as the text grows: the whole lines read so far and where
/// they leave the scan, so each frame reads only the lines that came
/// since the last one.
#[derive(Debug, Clone, Default)]
pub(super) struct CutScan {
    /// Bytes read: the end of the last whole line.
    at: usize,
    /// The open fence: its marker, info string and lines so far.
    fence: Option<(&'static str, String, usize)>,
    /// The last line was a plain line of a paragraph that began after a
    /// blank line (or the text's start).
    in_plain: bool,
    /// The last line was blank (or there was none).
    after_blank: bool,
    pub(super) cut: Cut,
}

impl CutScan {
    /// Read `text`'s whole lines past the ones already read (`text` is
    /// the same text, grown).
    pub(super) fn feed(&mut self, text: &str) {
        if text.get(self.at..).is_none() {
            // Not the text read so far, grown: read it all again.
            *self = CutScan::default();
        }
        if self.at == 0 {
            self.after_blank = true;
        }
        let rest = text.get(self.at..).unwrap_or_default();
        for line in rest.split_inclusive('\n') {
            if !line.ends_with('\n') {
                break;
            }
            let next = self.at + line.len();
            self.line(line, next);
            self.at = next;
        }
    }

    /// One whole line, ending at `next`.
    fn line(&mut self, line: &str, next: usize) {
        let trimmed = line.trim_start();
        let marker = ["```", "~~~"].into_iter().find(|m| trimmed.starts_with(m));
        match (&mut self.fence, marker) {
            (None, Some(m)) => {
                let info = trimmed[3..].trim().to_owned();
                self.fence = Some((m, info, 0));
                (self.in_plain, self.after_blank) = (false, false);
            }
            (Some((open, _, _)), Some(m)) if *open == m => {
                self.fence = None;
                self.cut = Cut {
                    at: next,
                    fence: None,
                    soft: false,
                };
            }
            (Some((_, info, n)), _) => {
                *n += 1;
                if *n % FENCE_CHUNK == 0 {
                    self.cut = Cut {
                        at: next,
                        fence: Some(info.clone()),
                        soft: false,
                    };
                }
            }
            (None, None) if line.trim().is_empty() => {
                self.cut = Cut {
                    at: next,
                    fence: None,
                    soft: false,
                };
                (self.in_plain, self.after_blank) = (false, true);
            }
            (None, None) => {
                let line_plain = plain(line);
                // This line continues a plain paragraph: the part before
                // it is finished.
                if self.in_plain && line_plain {
                    self.cut = Cut {
                        at: self.at,
                        fence: None,
                        soft: true,
                    };
                }
                self.in_plain = line_plain && (self.in_plain || self.after_blank);
                self.after_blank = false;
            }
        }
    }
}

/// Render a piece of a streaming answer: `open` is the fence it starts
/// inside (reopened, its label line dropped), `closes` ends an open
/// fence it stops inside.
fn render_piece(
    text: &str,
    open: Option<&str>,
    closes: bool,
    width: usize,
    theme: Theme,
) -> Vec<ratatui::text::Line<'static>> {
    if text.trim().is_empty() {
        return Vec::new();
    }
    let mut source = String::with_capacity(text.len() + 16);
    if let Some(info) = open {
        source.push_str(&format!("```{info}\n"));
    }
    source.push_str(text);
    if closes {
        source.push_str("\n```");
    }
    let mut lines = markdown::render(&source, width, "  ", theme);
    if open.is_some_and(|info| !info.split_whitespace().next().unwrap_or("").is_empty())
        && !lines.is_empty()
    {
        lines.remove(0);
    }
    lines
}

impl Conversation {
    /// The streaming answer as it would be drawn while its turn runs: its
    /// last `max` lines. Its finished part is rendered once, segment by
    /// segment as it grows (`stable_cut`); only the growing rest is
    /// rendered again.
    pub fn stream_lines(
        &self,
        width: u16,
        theme: Theme,
        max: usize,
    ) -> Vec<ratatui::text::Line<'static>> {
        use ratatui::text::{Line, Span};
        let Some((_, text)) = self.stream.as_ref().filter(|_| self.turn.is_some()) else {
            return Vec::new();
        };
        if text.trim().is_empty() || max == 0 {
            return Vec::new();
        }
        let w = usize::from(width);
        let mut cache = self.stream_cache.borrow_mut();
        let mut scan = match cache.as_mut() {
            Some(c) if c.generation == self.stream_generation => std::mem::take(&mut c.scan),
            _ => CutScan::default(),
        };
        scan.feed(text);
        let Cut {
            at: cut,
            fence: fence_at_cut,
            soft,
        } = scan.cut.clone();
        let valid = cache.as_ref().is_some_and(|c| {
            c.generation == self.stream_generation
                && c.width == width
                && c.theme == theme
                && c.stable_len <= cut
        });
        if !valid {
            *cache = Some(StreamCache {
                generation: self.stream_generation,
                width,
                theme,
                stable_len: 0,
                fence: None,
                soft: false,
                lines: Vec::new(),
                scan: CutScan::default(),
            });
        }
        let Some(c) = cache.as_mut() else {
            return Vec::new();
        };
        c.scan = scan;
        if cut > c.stable_len {
            let piece = render_piece(
                &text[c.stable_len..cut],
                c.fence.as_deref(),
                fence_at_cut.is_some(),
                w,
                theme,
            );
            if !piece.is_empty() && !c.lines.is_empty() && c.fence.is_none() && !c.soft {
                c.lines.push(Line::from("  "));
            }
            c.lines.extend(piece);
            c.stable_len = cut;
            c.fence = fence_at_cut;
            c.soft = soft;
        }
        let rest = &text[c.stable_len..];
        let mut tail = render_piece(rest, c.fence.as_deref(), false, w, theme);
        if !c.lines.is_empty() && !tail.is_empty() && c.fence.is_none() && !c.soft {
            tail.insert(0, Line::from("  "));
        }
        let stable = &c.lines;
        let from_stable = max.saturating_sub(tail.len()).min(stable.len());
        let mut out: Vec<Line<'static>> = Vec::with_capacity(from_stable + tail.len());
        out.extend(stable[stable.len() - from_stable..].iter().cloned());
        out.extend(tail);
        // The answer's marker, where its first line is on screen.
        if from_stable == stable.len() {
            if let Some(first) = out.first_mut().and_then(|l| l.spans.first_mut()) {
                *first = Span::styled("● ", theme.accent());
            }
        }
        let skip = out.len().saturating_sub(max);
        out.drain(..skip);
        out
    }

    /// The stream starts again (a new round or turn): nothing of the last
    /// one is drawn or cached.
    pub(super) fn reset_stream(&mut self) {
        self.stream = None;
        self.stream_generation += 1;
    }

    /// A round was recorded, answered by the run's provider `attempt` (0:
    /// not numbered) with `text_chars` characters: its stream is done.
    /// Deltas of that attempt or an earlier one still on their way are
    /// late, and a stream of a later attempt (the next round's text that
    /// overtook the record) goes on. From a runtime that does not number
    /// attempts, as many characters as did not arrive yet are late.
    pub(super) fn close_stream(&mut self, run_id: &str, text_chars: usize, attempt: u32) {
        if attempt > 0 {
            self.stream_closed.close_through(run_id, attempt);
            self.stream_skip = 0;
            if self.stream.is_none() || self.stream_attempt <= attempt {
                self.reset_stream();
            }
            return;
        }
        let got = self.stream.as_ref().map_or(0, |(_, s)| s.chars().count());
        if let Some((run, _)) = self.stream.take().filter(|_| self.stream_attempt > 0) {
            self.stream_closed.close_through(&run, self.stream_attempt);
            self.stream_skip = 0;
        } else {
            self.stream_skip = text_chars.saturating_sub(got);
        }
        self.reset_stream();
    }

    /// Streaming assistant text of the current turn, of the run's provider
    /// `attempt` (0: not numbered). A new attempt (a retry, a fallback
    /// model) starts the answer over. Deltas of another turn than the
    /// running one, and late ones of a round already recorded, are not
    /// drawn.
    pub fn delta(&mut self, run_id: &str, attempt: u32, text: &str) {
        let running = self.turn.as_ref().and_then(|t| t.run_id.as_deref());
        if running.is_some_and(|r| r != run_id) {
            return;
        }
        if self.stream_closed.is_late(run_id, attempt) {
            return;
        }
        let mut text = text;
        if self.stream_skip > 0 {
            let n = text.chars().count().min(self.stream_skip);
            self.stream_skip -= n;
            let at = text.char_indices().nth(n).map_or(text.len(), |(i, _)| i);
            text = &text[at..];
            if text.is_empty() {
                return;
            }
        }
        match &mut self.stream {
            Some((r, t)) if r == run_id && self.stream_attempt == attempt => t.push_str(text),
            _ => {
                self.stream_generation += 1;
                self.stream = Some((run_id.to_owned(), text.to_owned()));
                self.stream_attempt = attempt;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{stable_cut, CutScan};

    #[test]
    fn the_cut_read_as_the_text_grows_is_the_cut_of_the_whole() {
        let mut code = String::new();
        for i in 0..40 {
            code.push_str(&format!("let x{i} = {i};\n"));
        }
        let texts = [
            format!("## Title\n\nIntro line one.\nline two.\n\n```rust\n{code}```\n\n- a\n- b\nlazy\n\nDone.\n"),
            "Para one\nstill one\n\n~~~\nnot ``` closed\n~~~\n> quote\n> more\n\ntail".to_owned(),
        ];
        for text in texts {
            let mut scan = CutScan::default();
            let ends = text.char_indices().map(|(i, _)| i).chain([text.len()]);
            for end in ends {
                // Fed piece by piece, one character at a time.
                scan.feed(&text[..end]);
                assert_eq!(scan.cut, stable_cut(&text[..end]), "at {end} of {text:?}");
            }
        }
        // Given another text than the one read so far, it reads it anew.
        let mut scan = CutScan::default();
        scan.feed("ab\n\ncd\n\nef\n");
        scan.feed("x\n\n");
        assert_eq!(scan.cut, stable_cut("x\n\n"));
    }
}
