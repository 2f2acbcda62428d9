//! `view(&State, &mut Frame)`: draws, never changes state (row caches
//! aside). Layout from top: the status line (`status_line.rs`), the
//! conversation (or the top overlay), the working row, a rule, the
//! composer with its completion menu above it, and a one-line key hint
//! generated from the key table.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Clear, Widget};
use ratatui::Frame;

use super::composer::Candidate;
use super::conversation::Scroll;
use super::fmt::elapsed;
use super::keymap::{hint, KeyContext};
use super::overlays::Look;
use super::scroll::visible_lines;
use super::state::{layout_in, State, MENU_ROWS, MIN_SIZE};
use super::theme::Theme;
use super::wrap::{fit, truncate, width};

const SPINNER: [&str; 10] = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];

pub fn view(state: &State, frame: &mut Frame) {
    let screen = frame.area();
    let t = state.theme;
    let buf = frame.buffer_mut();
    if screen.width < MIN_SIZE.0 || screen.height < MIN_SIZE.1 {
        let msg = format!(
            "Enlarge the terminal to at least {}x{}.",
            MIN_SIZE.0, MIN_SIZE.1
        );
        let line = Line::from(Span::styled(msg, t.bold()));
        buf.set_line(screen.x, screen.y, &line, screen.width);
        return;
    }
    let areas = layout_in(state, screen.width, screen.height);
    super::status_line::status_line(state, areas.status, buf);
    let hint_contexts: Vec<KeyContext>;
    let cursor;
    if let Some(top) = state.overlays.top() {
        let look = Look {
            agent_id: &state.agent_id,
            agent: &state.agent,
            theme: t,
            now_ms: state.now_ms,
            runtimes: &state.runtimes,
        };
        cursor = top.draw(areas.overlay, buf, &look);
        hint_contexts = top.hint_contexts();
    } else {
        let mut lines = visible_lines(
            &state.conversation,
            state.scroll_ctx(),
            usize::from(areas.conversation.height),
        );
        if let Some(f) = state.find.as_ref().filter(|f| !f.editing) {
            let mark =
                ratatui::style::Style::default().add_modifier(ratatui::style::Modifier::REVERSED);
            super::find::highlight(&mut lines, &f.query, mark);
        }
        for (i, line) in lines.iter().enumerate() {
            let y = areas.conversation.y + i as u16;
            buf.set_line(0, y, line, areas.conversation.width);
        }
        if let Some(area) = areas.working {
            working_row(state, area, buf);
        }
        rule(state, areas.rule, buf);
        cursor = Some(composer(state, areas.composer, buf));
        if let Some(area) = areas.menu {
            menu(
                &state.composer.candidates(),
                state.composer.selected,
                area,
                buf,
                t,
            );
        }
        hint_contexts = match state.composer.menu_open() {
            true => vec![KeyContext::Composer],
            // The answer keys first, then the composer's, then the rest.
            false => {
                let mut c: Vec<KeyContext> = state
                    .composer_contexts()
                    .into_iter()
                    .filter(|c| !matches!(c, KeyContext::Global | KeyContext::Composer))
                    .collect();
                c.extend([KeyContext::Composer, KeyContext::Global]);
                c
            }
        };
    }
    hint_line(state, &hint_contexts, areas.hint, buf);
    if let Some(pos) = cursor {
        frame.set_cursor_position(pos);
    }
}

fn working_row(state: &State, area: Rect, buf: &mut Buffer) {
    let t = state.theme;
    let Some(w) = state.working() else {
        return;
    };
    let glyph = match w.animated {
        true => SPINNER[(state.now_ms / 100).rem_euclid(10) as usize],
        false => w.glyph,
    };
    let style = if w.needs_operator {
        t.attention()
    } else {
        t.accent().patch(t.bold())
    };
    let mut spans = vec![Span::styled(format!("{glyph} {}", w.label), style)];
    // A running turn: elapsed time and how to interrupt it (Esc, as in
    // Codex CLI and Claude Code).
    let tokens = match w.tokens {
        0 => String::new(),
        n => format!(" · {} tokens", crate::ui::present::compact_count(n)),
    };
    // The hint goes first when the detail (a retry's countdown, say)
    // would not fit whole.
    let short = w
        .elapsed_ms
        .map(|ms| format!(" · {}{tokens}", elapsed(ms)))
        .unwrap_or_default();
    // Scrolled back, Esc returns to the bottom first: the hint says so.
    let esc = match state.conversation.scroll {
        super::conversation::Scroll::Follow => "Esc to interrupt",
        super::conversation::Scroll::Anchor { .. } => "Esc to the bottom",
    };
    let hinted = match w.elapsed_ms {
        Some(_) => format!("{short} · {esc}"),
        None => short.clone(),
    };
    let room_with =
        |tail: &str| usize::from(area.width).saturating_sub(width(&w.label) + 5 + width(tail));
    let tail = match width(&w.detail) <= room_with(&hinted) {
        true => hinted,
        false => short,
    };
    let room = room_with(&tail);
    if !w.detail.is_empty() {
        spans.push(Span::styled(" · ", t.dim()));
        spans.push(Span::styled(truncate(&w.detail, room), t.dim()));
    }
    spans.push(Span::styled(tail, t.dim()));
    buf.set_line(area.x, area.y, &Line::from(spans), area.width);
}

fn rule(state: &State, area: Rect, buf: &mut Buffer) {
    let t = state.theme;
    let w = usize::from(area.width);
    let text = match state.conversation.scroll {
        Scroll::Follow => "─".repeat(w),
        Scroll::Anchor { row, .. } => {
            let c = &state.conversation;
            let streaming = match c.stream.is_some() {
                true => " and the answer streaming",
                false => "",
            };
            let label = match c.rows_below(row, state.mode) {
                0 if streaming.is_empty() => " ↓ newer lines below: PgDn, Ctrl+End ".to_owned(),
                0 => " ↓ the answer streaming below: PgDn, Ctrl+End ".to_owned(),
                1 => format!(" ↓ 1 newer row{streaming} below: PgDn, Ctrl+End "),
                n => format!(" ↓ {n} newer rows{streaming} below: PgDn, Ctrl+End "),
            };
            // A failure below the view is said here, where the eye is,
            // whatever the scroll position.
            if let Some(failed) = failure_below(state, row) {
                let room = w.saturating_sub(width(&label) + 6);
                let failed = truncate(&format!("✗ {failed} ·"), room);
                let fill = w.saturating_sub(3 + width(&failed) + width(&label));
                let line = Line::from(vec![
                    Span::styled("── ", t.dim()),
                    Span::styled(failed, t.attention()),
                    Span::styled(format!("{label}{}", "─".repeat(fill)), t.dim()),
                ]);
                buf.set_line(area.x, area.y, &line, area.width);
                return;
            }
            let label = label.as_str();
            let left = 2.min(w);
            let right = w.saturating_sub(left + width(label));
            format!("{}{label}{}", "─".repeat(left), "─".repeat(right))
        }
    };
    buf.set_line(
        area.x,
        area.y,
        &Line::from(Span::styled(text, t.dim())),
        area.width,
    );
}

/// The newest failure shown below row `row` (what the view scrolled back
/// from), if any.
fn failure_below(state: &State, row: usize) -> Option<&str> {
    let c = &state.conversation;
    let i = c.below(row, state.mode).failure?;
    match c.rows.get(i)?.kind() {
        super::rows::RowKind::Alert { summary, .. } => {
            // Cut first: a long summary is not cleaned whole every frame.
            let end = summary
                .char_indices()
                .nth(4 * usize::from(state.width))
                .map_or(summary.len(), |(at, _)| at);
            Some(&summary[..end])
        }
        _ => None,
    }
}

/// Draw the composer; returns the cursor position.
fn composer(state: &State, area: Rect, buf: &mut Buffer) -> (u16, u16) {
    let t = state.theme;
    if let Some(q) = state.composer.search_query() {
        // One line: the query, then the match it found.
        let line = Line::from(vec![
            Span::styled(format!("history `{q}`: "), t.accent()),
            Span::raw(truncate(state.composer.text(), usize::from(area.width))),
        ]);
        buf.set_line(area.x, area.y, &line, area.width);
        let x = (9 + width(q)).min(usize::from(area.width).saturating_sub(1)) as u16;
        return (area.x + x, area.y);
    }
    let mark = Span::styled("› ", t.accent().patch(t.bold()));
    if let Some(f) = state.find.as_ref().filter(|_| state.composer.is_empty()) {
        let text = super::find::line(f);
        let at = 2 + width(&text);
        let line = Line::from(vec![mark, Span::styled(text, t.accent())]);
        buf.set_line(area.x, area.y, &line, area.width);
        let x = at.min(usize::from(area.width).saturating_sub(1)) as u16;
        return (area.x + x, area.y);
    }
    if state.composer.is_empty() {
        let (placeholder, style) = match (state.read_only(), &state.always_armed) {
            (Some(_), _) => (
                format!(
                    "{} is a child agent: read-only · /agent to switch",
                    state.agent_id
                ),
                t.dim(),
            ),
            (None, Some(_)) => (
                "press a again to approve the call always (its row names the rule); any other \
                 key cancels"
                    .to_owned(),
                t.attention(),
            ),
            (None, None) if super::detach::waiting_line(state).is_some() => (
                super::detach::waiting_line(state)
                    .unwrap_or_default()
                    .to_owned(),
                t.attention(),
            ),
            (None, None) if state.quit_asked && state.quit_warning.is_some() => {
                // What quitting stops, after what to do (a narrow line
                // keeps the start).
                let w = state.quit_warning.as_deref().unwrap_or_default();
                let what = w.split(". Quit again to confirm").next().unwrap_or(w);
                (
                    format!("Quit again to confirm, or /detach: {what}"),
                    t.attention(),
                )
            }
            (None, None) if !state.composer.approvals.is_empty() => (
                "a call waits: y approve · a a always · n deny (any other key types)".to_owned(),
                t.attention(),
            ),
            (None, None) => (
                format!("Message {} · /help · !command", state.agent_id),
                t.dim(),
            ),
        };
        let line = Line::from(vec![mark, Span::styled(placeholder, style)]);
        buf.set_line(area.x, area.y, &line, area.width);
        return (area.x + 2, area.y);
    }
    let (lines, (row, col)) = state.composer.layout(usize::from(area.width));
    let h = usize::from(area.height);
    let first = row.saturating_sub(h.saturating_sub(1));
    for (i, l) in lines.iter().enumerate().skip(first).take(h) {
        let pre = if i == 0 {
            mark.clone()
        } else {
            Span::raw("  ")
        };
        let line = Line::from(vec![pre, Span::raw(l.clone())]);
        buf.set_line(area.x, area.y + (i - first) as u16, &line, area.width);
    }
    let x = (2 + col).min(usize::from(area.width).saturating_sub(1)) as u16;
    (area.x + x, area.y + (row - first) as u16)
}

fn menu(candidates: &[Candidate], selected: usize, area: Rect, buf: &mut Buffer, t: Theme) {
    Clear.render(area, buf);
    let n = candidates.len();
    let first = selected
        .saturating_sub(MENU_ROWS - 1)
        .min(n.saturating_sub(MENU_ROWS));
    let label_w = candidates
        .iter()
        .map(|c| width(&c.label))
        .max()
        .unwrap_or(8)
        .min(usize::from(area.width) / 2)
        + 2;
    for (i, c) in candidates
        .iter()
        .enumerate()
        .skip(first)
        .take(usize::from(area.height))
    {
        let y = area.y + (i - first) as u16;
        let style = if i == selected {
            t.selected()
        } else {
            t.text()
        };
        let desc_w = usize::from(area.width).saturating_sub(label_w + 2);
        let line = Line::from(vec![
            Span::styled(
                format!(" {}", fit(&c.label, label_w)),
                style.patch(t.accent()),
            ),
            Span::styled(fit(&c.description, desc_w), style.patch(t.dim())),
        ]);
        buf.set_line(area.x, y, &line, area.width);
        if i == selected {
            buf.set_style(
                Rect {
                    y,
                    height: 1,
                    ..area
                },
                t.selected(),
            );
        }
    }
}

fn hint_line(state: &State, contexts: &[KeyContext], area: Rect, buf: &mut Buffer) {
    let t = state.theme;
    let pairs = match state.prefix {
        true => hint(&[KeyContext::Prefix]),
        false => hint(contexts),
    };
    let w = usize::from(area.width).saturating_sub(1);
    let mut spans: Vec<Span> = vec![Span::raw(" ")];
    if state.prefix {
        spans.push(Span::styled("Ctrl+O then: ", t.accent()));
    }
    if state.composer.menu_open() && state.overlays.is_empty() && !state.prefix {
        let text = format!(
            "Tab complete · Up/Down choose · Enter {} · Esc close",
            super::keys::menu_enter_word(state)
        );
        spans.push(Span::styled(truncate(&text, w), t.dim()));
    } else {
        // Whole pairs only: drop the last ones when the line is full.
        let mut used: usize = spans.iter().map(Span::width).sum();
        for (i, (keys, word)) in pairs.iter().enumerate() {
            // The first key that works here: Shift+Enter only where the
            // terminal tells it from Enter.
            let key = keys
                .split(" / ")
                .find(|k| state.shift_enter || *k != "Shift+Enter")
                .unwrap_or(keys);
            let sep = if i > 0 { 3 } else { 0 };
            let need = sep + width(key) + 1 + width(word);
            if used + need > w {
                break;
            }
            used += need;
            if i > 0 {
                spans.push(Span::styled(" · ", t.dim()));
            }
            spans.push(Span::styled(key.to_owned(), t.bold()));
            spans.push(Span::styled(format!(" {word}"), t.dim()));
        }
    }
    buf.set_line(area.x, area.y, &Line::from(spans), area.width);
}

/// The conversation as plain text lines at `width`, as the current display
/// mode shows it: what an inline (`--no-alt-screen`) console leaves in the
/// terminal's scrollback when it exits. At most the last `max_rows` rows.
pub fn transcript_lines(state: &State, width: u16, max_rows: usize) -> Vec<String> {
    let rows: Vec<_> = state
        .conversation
        .rows
        .iter()
        .filter(|r| r.visible(state.mode))
        .collect();
    let skip = rows.len().saturating_sub(max_rows);
    let mut out = Vec::new();
    for (i, row) in rows.into_iter().skip(skip).enumerate() {
        if i > 0 && row.is_block() {
            out.push(String::new());
        }
        for line in row.lines(width, state.mode, state.theme).iter() {
            let text: String = line.spans.iter().map(|s| s.content.as_ref()).collect();
            out.push(text.trim_end().to_owned());
        }
    }
    out
}
