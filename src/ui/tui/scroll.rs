//! The conversation viewport: which lines are on screen, and scrolling.
//! Everything walks from the bottom anchor outwards and stops when the
//! screen is full, so the cost follows the screen, not the history (rows
//! hidden in the current display mode are skipped).
//!
//! A row's height counts the blank line above it when it stands apart
//! from the previous visible row (`Row::is_block` on either side).

use ratatui::text::Line;

use super::conversation::{Conversation, Scroll};
use super::rows::{self, RowKind};
use super::theme::Theme;
use crate::protocol::DisplayMode;

/// What the walk needs to know to measure rows.
#[derive(Debug, Clone, Copy)]
pub struct Ctx {
    pub width: u16,
    pub mode: DisplayMode,
    pub theme: Theme,
}

fn prev_visible(c: &Conversation, i: usize, mode: DisplayMode) -> Option<usize> {
    (0..i).rev().find(|&j| c.rows[j].visible(mode))
}

fn next_visible(c: &Conversation, i: usize, mode: DisplayMode) -> Option<usize> {
    (i + 1..c.rows.len()).find(|&j| c.rows[j].visible(mode))
}

fn last_visible(c: &Conversation, mode: DisplayMode) -> Option<usize> {
    prev_visible(c, c.rows.len(), mode)
}

fn gap(c: &Conversation, i: usize, mode: DisplayMode) -> usize {
    match prev_visible(c, i, mode) {
        Some(j) => usize::from(c.rows[i].is_block() || c.rows[j].is_block()),
        None => 0,
    }
}

fn height(c: &Conversation, i: usize, ctx: Ctx) -> usize {
    c.rows[i].lines(ctx.width, ctx.mode, ctx.theme).len() + gap(c, i, ctx.mode)
}

/// Lines of the echoes (shown below the rows while following).
fn echo_lines(c: &Conversation, ctx: Ctx) -> Vec<Line<'static>> {
    let mut out = Vec::new();
    for (n, e) in c.echoes.iter().enumerate() {
        if n > 0 || last_visible(c, ctx.mode).is_some() {
            out.push(Line::default());
        }
        let kind: RowKind = e.row();
        out.extend(rows::render(
            &kind,
            usize::from(ctx.width),
            ctx.mode,
            ctx.theme,
        ));
    }
    out
}

/// The bottom `h` lines of the conversation as scrolled (fewer when the
/// whole conversation is shorter: it then starts at the top).
pub fn visible_lines(c: &Conversation, ctx: Ctx, h: usize) -> Vec<Line<'static>> {
    let (start, skip, mut below) = match c.scroll {
        Scroll::Follow => {
            // The answer streaming in, then prompts not yet admitted.
            let mut below = c.stream_lines(ctx.width, ctx.theme, h);
            if !below.is_empty() && last_visible(c, ctx.mode).is_some() {
                below.insert(0, Line::default());
            }
            below.extend(echo_lines(c, ctx));
            (last_visible(c, ctx.mode), 0, below)
        }
        Scroll::Anchor { row, skip } => {
            let row = match c.rows.get(row).is_some_and(|r| r.visible(ctx.mode)) {
                true => Some(row),
                false => prev_visible(c, row.min(c.rows.len()), ctx.mode),
            };
            (row, skip, Vec::new())
        }
    };
    // Collect bottom-up: chunks of whole rows, newest first.
    let mut chunks: Vec<Vec<Line<'static>>> = Vec::new();
    let mut total = below.len();
    let mut i = start;
    let need = h + skip;
    let mut top = start;
    while let Some(r) = i {
        if total >= need {
            break;
        }
        top = Some(r);
        let mut lines: Vec<Line<'static>> = Vec::new();
        if gap(c, r, ctx.mode) == 1 {
            lines.push(Line::default());
        }
        lines.extend(
            c.rows[r]
                .lines(ctx.width, ctx.mode, ctx.theme)
                .iter()
                .cloned(),
        );
        total += lines.len();
        chunks.push(lines);
        i = prev_visible(c, r, ctx.mode);
    }
    if let (Some(lo), Some(hi)) = (top, start) {
        c.drew(lo, hi);
    }
    let mut out: Vec<Line<'static>> = chunks.into_iter().rev().flatten().collect();
    out.append(&mut below);
    let keep = out.len().saturating_sub(skip);
    out.truncate(keep);
    let first = out.len().saturating_sub(h);
    if first > 0 {
        out.drain(..first);
    }
    out
}

/// Scroll towards older rows by `n` lines.
pub fn up(c: &mut Conversation, ctx: Ctx, n: usize, h: usize) {
    let (mut row, mut skip) = match c.scroll {
        Scroll::Anchor { row, skip } => (row, skip),
        Scroll::Follow => match last_visible(c, ctx.mode) {
            Some(row) => (row, 0),
            None => return,
        },
    };
    skip += n;
    loop {
        let hgt = height(c, row, ctx);
        if skip < hgt {
            break;
        }
        match prev_visible(c, row, ctx.mode) {
            Some(p) => {
                skip -= hgt;
                row = p;
            }
            None => {
                skip = hgt.saturating_sub(1);
                break;
            }
        }
    }
    c.scroll = Scroll::Anchor { row, skip };
    clamp_top(c, ctx, h);
}

/// Keep the screen full: never scroll above the first line.
fn clamp_top(c: &mut Conversation, ctx: Ctx, h: usize) {
    let Scroll::Anchor { row, skip } = c.scroll else {
        return;
    };
    let mut above = height(c, row, ctx).saturating_sub(skip);
    let mut i = prev_visible(c, row, ctx.mode);
    while let Some(r) = i {
        if above >= h {
            return;
        }
        above += height(c, r, ctx);
        i = prev_visible(c, r, ctx.mode);
    }
    if above >= h {
        return;
    }
    // Not enough above: anchor so the first row's first line is on top.
    let mut acc = 0;
    let mut j = c.rows.iter().position(|r| r.visible(ctx.mode));
    while let Some(r) = j {
        acc += height(c, r, ctx);
        if acc >= h {
            c.scroll = Scroll::Anchor {
                row: r,
                skip: acc - h,
            };
            return;
        }
        j = next_visible(c, r, ctx.mode);
    }
    c.scroll = Scroll::Follow;
}

/// Scroll towards newer rows by `n` lines; past the last row, follow.
pub fn down(c: &mut Conversation, ctx: Ctx, n: usize) {
    let Scroll::Anchor { mut row, skip } = c.scroll else {
        return;
    };
    let mut skip = skip as isize - n as isize;
    while skip < 0 {
        match next_visible(c, row, ctx.mode) {
            Some(nx) => {
                row = nx;
                skip += height(c, row, ctx) as isize;
            }
            None => {
                c.scroll = Scroll::Follow;
                return;
            }
        }
    }
    c.scroll = Scroll::Anchor {
        row,
        skip: skip as usize,
    };
}

/// Jump to the oldest row.
pub fn top(c: &mut Conversation, ctx: Ctx, h: usize) {
    if let Some(first) = c.rows.iter().position(|r| r.visible(ctx.mode)) {
        c.scroll = Scroll::Anchor {
            row: first,
            skip: 0,
        };
        clamp_top(c, ctx, h);
        if let Scroll::Anchor { row, .. } = c.scroll {
            if row == first {
                // One row taller than the screen: show its top.
                let hgt = height(c, first, ctx);
                c.scroll = Scroll::Anchor {
                    row: first,
                    skip: hgt.saturating_sub(h),
                };
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ui::tui::rows::Tone;

    /// Drawing keeps the lines of rows near the view and, every so often,
    /// forgets those of rows far from it: a long conversation holds its
    /// rows, not their lines.
    #[test]
    fn far_rows_forget_their_lines() {
        let mut c = Conversation::default();
        for n in 0..2_000 {
            let text = format!("note {n} with a few words to wrap");
            c.push(
                RowKind::Note {
                    text,
                    tone: Tone::Info,
                },
                DisplayMode::Info,
            );
        }
        let ctx = Ctx {
            width: 80,
            mode: DisplayMode::Info,
            theme: Theme { no_color: true },
        };
        // Everything measured once, as scrolling to the top would.
        for r in &c.rows {
            r.lines(ctx.width, ctx.mode, ctx.theme);
        }
        for _ in 0..64 {
            visible_lines(&c, ctx, 40);
        }
        assert!(c.rows[1_999].has_lines(), "the rows in view keep theirs");
        assert!(c.rows[1_750].has_lines(), "and those near it");
        assert!(!c.rows[0].has_lines(), "far rows forget theirs");
        assert!(!c.rows[1_000].has_lines());
        // Drawn again when they come back into view.
        assert_eq!(c.rows[0].lines(ctx.width, ctx.mode, ctx.theme).len(), 1);
    }
}
