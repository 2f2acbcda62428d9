//! The conversation model: rows built from presented events (never raw
//! events), local echoes of what the operator sent, and the current turn's
//! live activity. It decides which events become rows, merges rows that
//! describe one thing (a command's start and finish, a runtime error and
//! its failure brief), and hides assistant progress the final brief
//! repeats.
//!
//! Invariants: rows are only appended (indices are stable; the one-time
//! history backfill is put in front before any event row exists); events
//! apply in `event_seq` order and an event at or below `applied_seq` is
//! ignored; a failed send stays visible.

use std::collections::HashMap;

mod apply;
mod attention;
mod echo;
mod stream;
mod window;
mod work;
pub use echo::{Echo, EchoKind};
use stream::StreamCache;
pub use stream::{stable_cut, Cut};
pub use window::{MAX_ROWS, WINDOW_ROWS};

use super::rows::{PromptState, Row, RowKind, Tone};
use crate::model::attempt::RetryNotice;
use crate::protocol::DisplayMode;
use crate::ui::present::{shows, OperatorEvent};

/// The turn in progress: what the working row shows.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Turn {
    pub run_id: Option<String>,
    pub message_id: Option<String>,
    pub started_ms: Option<i64>,
    /// The latest activity of this turn (never carried into the next).
    pub activity: Option<String>,
    /// The turn waits for the operator's answer to a call it asked
    /// (`turn_awaiting_approval`), until something joins it.
    pub awaiting: bool,
    /// The call running now and its activity line, while it runs: what a
    /// server's progress on it is shown after.
    pub tool: Option<(String, String)>,
    /// Tokens this turn's provider rounds used so far (in + out).
    pub tokens: u64,
    /// A provider attempt that failed and what the chain does now, with
    /// when the console heard of it (ms): shown until the next attempt
    /// streams text or the turn moves on.
    pub retry: Option<(RetryNotice, i64)>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scroll {
    /// Show the newest rows (the default).
    Follow,
    /// `row` is the bottom row on screen with `skip` of its lines (counted
    /// from its bottom) below the screen.
    Anchor { row: usize, skip: usize },
}

/// What applying an event means for the core.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Applied {
    /// An `action_required` row arrived.
    pub attention: bool,
    /// An approval was answered and nothing in the conversation waits for
    /// the operator any more.
    pub settled: bool,
}

#[derive(Debug)]
pub struct Conversation {
    pub rows: Vec<Row>,
    pub echoes: Vec<Echo>,
    pub scroll: Scroll,
    pub turn: Option<Turn>,
    /// Streaming assistant text of the current turn: (run id, text).
    pub stream: Option<(String, String)>,
    pub applied_seq: u64,
    /// The streaming answer's finished blocks, rendered once.
    stream_cache: std::cell::RefCell<Option<StreamCache>>,
    /// Bumped whenever the stream starts again (a new round or turn).
    stream_generation: u64,
    /// Characters of a recorded round still to arrive as late deltas:
    /// they belong to that round, not to the next one.
    stream_skip: usize,
    /// The provider attempt the stream's text is of (0: the runtime does
    /// not say), and the last attempt of a recorded round: deltas of it
    /// or earlier are late.
    stream_attempt: u32,
    stream_closed: crate::protocol::client::ClosedAttempts,
    tasks: HashMap<String, usize>,
    alerts: HashMap<String, usize>,
    /// Assistant progress rows of the latest turn: (message id, row).
    progress: Vec<(Option<String>, usize)>,
    /// Operator prompts admitted and not yet taken up (few): only these
    /// are looked for when a message starts or ends.
    waiting: Vec<String>,
    /// Frames drawn, to forget far rows' lines every so often.
    frames: std::cell::Cell<u32>,
    /// The lowest `event_seq` the rows cover: older events are in the
    /// runtime's ledger, paged in when the operator scrolls up to them (0
    /// or 1: there are none).
    pub first_seq: u64,
    /// The `event_seq` of the event being applied (what new rows carry).
    applying: u64,
    /// The run whose compaction is under way: its row says so until
    /// `context_compacted` (or the turn's end) takes its place.
    compacting: Option<String>,
    /// Finding text: the current match's row, and the row the next older
    /// search starts above. Kept here, where rows move, so they move with
    /// them.
    pub find_at: Option<usize>,
    pub find_from: usize,
    /// What is below the view (`below`), counted once per change: a frame
    /// drawn while scrolled back asks every time.
    below: std::cell::Cell<Option<(BelowKey, Below)>>,
}

/// What `Conversation::below` was counted for: the row, the rows held,
/// the display mode and the last event applied.
type BelowKey = (usize, usize, DisplayMode, u64);

/// Rows shown below the view, and the newest failure among them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Below {
    pub rows: usize,
    pub failure: Option<usize>,
}

impl Default for Conversation {
    fn default() -> Self {
        Conversation {
            rows: Vec::new(),
            echoes: Vec::new(),
            scroll: Scroll::Follow,
            turn: None,
            stream: None,
            applied_seq: 0,
            stream_cache: Default::default(),
            stream_generation: 0,
            stream_skip: 0,
            stream_attempt: 0,
            stream_closed: Default::default(),
            tasks: HashMap::new(),
            alerts: HashMap::new(),
            progress: Vec::new(),
            waiting: Vec::new(),
            frames: Default::default(),
            first_seq: 0,
            applying: 0,
            compacting: None,
            find_at: None,
            find_from: 0,
            below: Default::default(),
        }
    }
}

/// The lowest display mode that shows a presented event, if any does.
pub fn min_mode(op: &OperatorEvent) -> Option<DisplayMode> {
    DisplayMode::ALL.iter().copied().find(|m| shows(*m, op))
}

impl Conversation {
    /// The operator prompt `message_id` left the queue: it is no longer
    /// waiting. When its turn starts (`to_end`), the row moves to the end,
    /// where it runs, so the answer shows under the prompt it answers.
    fn prompt_taken_up(&mut self, message_id: &str, to_end: bool) {
        let Some(w) = self.waiting.iter().position(|m| m == message_id) else {
            return;
        };
        self.waiting.remove(w);
        let Some(i) = self.rows.iter().rposition(|r| {
            r.message_id.as_deref() == Some(message_id)
                && matches!(r.kind(), RowKind::Operator { .. })
        }) else {
            return;
        };
        if let RowKind::Operator { state, .. } = self.rows[i].kind_mut() {
            if !matches!(state, PromptState::Waiting(_)) {
                return;
            }
            *state = PromptState::Admitted;
        }
        if to_end && i + 1 < self.rows.len() {
            let mut row = self.rows.remove(i);
            // It stands where its turn starts now: rows stay in seq order.
            row.seq = self.applying;
            self.rows.push(row);
            let last = self.rows.len() - 1;
            let shift = |j: &mut usize| {
                if *j > i {
                    *j -= 1;
                } else if *j == i {
                    *j = last;
                }
            };
            self.tasks.values_mut().for_each(shift);
            self.alerts.values_mut().for_each(shift);
            self.progress.iter_mut().for_each(|(_, j)| shift(j));
            if let Scroll::Anchor { row, .. } = &mut self.scroll {
                shift(row);
            }
            if let Some(at) = &mut self.find_at {
                shift(at);
            }
            if self.find_from > i {
                self.find_from -= 1;
            }
        }
    }

    pub fn note(&mut self, text: impl Into<String>, tone: Tone) {
        self.push(
            RowKind::Note {
                text: text.into(),
                tone,
            },
            DisplayMode::Info,
        );
    }
}

#[cfg(test)]
mod tests;
