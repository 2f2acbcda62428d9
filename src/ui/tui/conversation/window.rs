//! The window of rows the console holds on the ledger: rows are pushed at
//! the end, the oldest go back to the ledger once the window is full
//! (while following the newest), and older rows are put in front again
//! when the operator scrolls up to them. Far rows forget their drawn
//! lines, so what a long conversation costs is the window, not the
//! history.

use std::collections::HashMap;

use super::super::rows::{ApprovalState, Row, RowKind};
use super::{Below, Conversation, Scroll};
use crate::protocol::DisplayMode;

/// Rows on each side of the view that keep their drawn lines; farther
/// rows keep only what they show, and are drawn again if they come back
/// into view. What a long conversation costs is then its rows, not their
/// lines (a 1 KB answer's lines take several times its text).
const LINES_AROUND: usize = 256;

/// Frames between two passes forgetting far rows' lines.
const FORGET_EVERY: u32 = 64;

/// Rows kept while following the newest: past it the oldest
/// `WINDOW_TRIM` go back to the ledger (paged in again when scrolled up
/// to), so memory follows the window, not the history.
pub const WINDOW_ROWS: usize = 3_000;
const WINDOW_TRIM: usize = 500;

/// Most rows kept; past it the oldest `TRIM_ROWS` go.
pub const MAX_ROWS: usize = 100_000;
const TRIM_ROWS: usize = 10_000;

impl Conversation {
    /// Rows after `row` shown in `mode` (what a view anchored there has
    /// below it).
    pub fn rows_below(&self, row: usize, mode: DisplayMode) -> usize {
        self.below(row, mode).rows
    }

    /// The rows shown after `row` in `mode`, and the newest failure among
    /// them: counted when something changed since it was last asked.
    pub fn below(&self, row: usize, mode: DisplayMode) -> Below {
        let key = (row, self.rows.len(), mode, self.applied_seq);
        if let Some((_, b)) = self.below.get().filter(|(k, _)| *k == key) {
            return b;
        }
        let mut b = Below {
            rows: 0,
            failure: None,
        };
        for (i, r) in self.rows.iter().enumerate().skip(row + 1) {
            if r.visible(mode) {
                b.rows += 1;
                if matches!(r.kind(), RowKind::Alert { .. }) {
                    b.failure = Some(i);
                }
            }
        }
        self.below.set(Some((key, b)));
        b
    }

    /// A frame drew rows `lo..=hi`: every `FORGET_EVERY` frames, rows
    /// farther than `LINES_AROUND` from them forget their drawn lines.
    pub fn drew(&self, lo: usize, hi: usize) {
        let frame = self.frames.get().wrapping_add(1);
        self.frames.set(frame);
        if !frame.is_multiple_of(FORGET_EVERY) {
            return;
        }
        let keep = lo.saturating_sub(LINES_AROUND)..=hi.saturating_add(LINES_AROUND);
        for (i, row) in self.rows.iter().enumerate() {
            if !keep.contains(&i) {
                row.forget_lines();
            }
        }
    }

    pub fn push(&mut self, kind: RowKind, mode: DisplayMode) -> usize {
        if self.rows.len() >= MAX_ROWS {
            self.trim(TRIM_ROWS);
        } else if self.rows.len() >= WINDOW_ROWS && self.scroll == Scroll::Follow {
            self.trim_window();
        }
        let mut row = Row::new(kind, mode);
        row.seq = self.applying;
        self.rows.push(row);
        self.rows.len() - 1
    }

    /// Hand the oldest rows back to the ledger: `WINDOW_TRIM` of them, and
    /// the rest of the last one's event, never a question still waiting
    /// for the operator (nor anything after it). The rows left start
    /// where the ledger is paged in again from.
    fn trim_window(&mut self) {
        let waiting =
            |r: &Row| matches!(r.kind(), RowKind::Approval(a) if a.state == ApprovalState::Waiting);
        // Back to following after reading far back (or finding): what
        // was paged in for that goes back at once.
        let over = (self.rows.len() + WINDOW_TRIM).saturating_sub(WINDOW_ROWS);
        let mut n = over.max(WINDOW_TRIM).min(self.rows.len());
        if let Some(w) = self.rows[..n].iter().position(waiting) {
            n = w;
        }
        while n > 0 && n < self.rows.len() && self.rows[n].seq == self.rows[n - 1].seq {
            n += 1;
        }
        if n == 0 || n >= self.rows.len() || self.rows[n].seq == 0 {
            return;
        }
        self.trim(n);
    }

    /// Older rows, built from the ledger's events `first_seq..` the rows'
    /// first: they go in front, and the view stays where it is.
    pub fn prepend_older(&mut self, older: Conversation, first_seq: u64) {
        // A prompt admitted in the older page and taken up in the window
        // has its row here already. Only the page's prompts are looked
        // for (a page has few; the window may hold many).
        let prompt = |r: &Row| matches!(r.kind(), RowKind::Operator { .. });
        let asked: std::collections::HashSet<&str> = older
            .rows
            .iter()
            .filter(|r| prompt(r))
            .filter_map(|r| r.message_id.as_deref())
            .collect();
        let here: std::collections::HashSet<String> = match asked.is_empty() {
            true => Default::default(),
            false => self
                .rows
                .iter()
                .filter(|r| prompt(r))
                .filter_map(|r| r.message_id.as_deref())
                .filter(|m| asked.contains(m))
                .map(str::to_owned)
                .collect(),
        };
        let mut rows: Vec<Row> = older
            .rows
            .into_iter()
            .filter(|r| !(prompt(r) && r.message_id.as_deref().is_some_and(|m| here.contains(m))))
            .collect();
        let n = rows.len();
        rows.append(&mut self.rows);
        self.rows = rows;
        self.tasks.values_mut().for_each(|i| *i += n);
        self.alerts.values_mut().for_each(|i| *i += n);
        self.progress.iter_mut().for_each(|(_, i)| *i += n);
        if let Scroll::Anchor { row, skip } = self.scroll {
            self.scroll = Scroll::Anchor { row: row + n, skip };
        }
        self.find_at = self.find_at.map(|i| i + n);
        self.find_from += n;
        self.first_seq = first_seq;
    }

    /// Forget the `n` oldest rows (a console left open for weeks keeps a
    /// bounded history; `/events` and `/transcript` page the ledger).
    pub(super) fn trim(&mut self, n: usize) {
        let n = n.min(self.rows.len());
        self.rows.drain(..n);
        let shift = |m: &mut HashMap<String, usize>| {
            m.retain(|_, i| *i >= n);
            m.values_mut().for_each(|i| *i -= n);
        };
        shift(&mut self.tasks);
        shift(&mut self.alerts);
        self.progress.retain(|(_, i)| *i >= n);
        self.progress.iter_mut().for_each(|(_, i)| *i -= n);
        self.find_at = self.find_at.and_then(|i| i.checked_sub(n));
        self.find_from = self.find_from.saturating_sub(n);
        if let Scroll::Anchor { row, skip } = self.scroll {
            self.scroll = match row.checked_sub(n) {
                Some(row) => Scroll::Anchor { row, skip },
                None => Scroll::Anchor { row: 0, skip: 0 },
            };
        }
        // What went is in the ledger, from here down.
        if let Some(first) = self.rows.first().filter(|r| r.seq > 0) {
            self.first_seq = first.seq;
        }
    }

    /// Put `history` (older rows) in front of the rows made so far, which
    /// are local only (events wait for the history).
    pub fn prepend_history(&mut self, mut history: Conversation) {
        let local = std::mem::take(&mut self.rows);
        history.rows.extend(local);
        history.echoes = std::mem::take(&mut self.echoes);
        *self = history;
    }
}
