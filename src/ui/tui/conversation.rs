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

mod attention;
mod echo;
mod stream;
mod work;
pub use echo::{Echo, EchoKind};
use stream::StreamCache;
pub use stream::{stable_cut, Cut};

use super::fmt::ts_ms;
use super::rows::{ApprovalState, PromptState, Row, RowKind, Tone};
use crate::model::approval::ApprovalStatus;
use crate::model::attempt::RetryNotice;
use crate::protocol::events::{BriefKind, Event};
use crate::protocol::types::{MessageBody, Priority};
use crate::protocol::EventRecord;
use crate::ui::present::{shows, DisplayMode, OperatorEvent, Visibility};

/// The turn in progress: what the working row shows.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Turn {
    pub run_id: Option<String>,
    pub message_id: Option<String>,
    pub started_ms: Option<i64>,
    /// The latest activity of this turn (never carried into the next).
    pub activity: Option<String>,
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
    /// Input and output tokens of the last turn that ended.
    pub last_turn_tokens: Option<u64>,
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
            last_turn_tokens: None,
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
        }
    }
}

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

/// The lowest display mode that shows a presented event, if any does.
pub fn min_mode(op: &OperatorEvent) -> Option<DisplayMode> {
    DisplayMode::ALL.iter().copied().find(|m| shows(*m, op))
}

impl Conversation {
    /// Rows after `row` shown in `mode` (what a view anchored there has
    /// below it).
    pub fn rows_below(&self, row: usize, mode: DisplayMode) -> usize {
        self.rows
            .get(row + 1..)
            .map_or(0, |rest| rest.iter().filter(|r| r.visible(mode)).count())
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
        let mut n = WINDOW_TRIM.min(self.rows.len());
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
        // has its row here already.
        let here: std::collections::HashSet<&str> = self
            .rows
            .iter()
            .filter(|r| matches!(r.kind(), RowKind::Operator { .. }))
            .filter_map(|r| r.message_id.as_deref())
            .collect();
        let mut rows: Vec<Row> = older
            .rows
            .into_iter()
            .filter(|r| {
                !(matches!(r.kind(), RowKind::Operator { .. })
                    && r.message_id.as_deref().is_some_and(|m| here.contains(m)))
            })
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
        self.first_seq = first_seq;
    }

    /// Forget the `n` oldest rows (a console left open for weeks keeps a
    /// bounded history; `/events` and `/transcript` page the ledger).
    fn trim(&mut self, n: usize) {
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

    /// Put `history` (older rows) in front of the rows made so far, which
    /// are local only (events wait for the history).
    pub fn prepend_history(&mut self, mut history: Conversation) {
        let local = std::mem::take(&mut self.rows);
        history.rows.extend(local);
        history.echoes = std::mem::take(&mut self.echoes);
        *self = history;
    }

    /// Apply one event with its presentation. `operator_task` says whether
    /// a task this event is about was started by the operator.
    pub fn apply(
        &mut self,
        e: &EventRecord,
        typed: &Event,
        op: &OperatorEvent,
        operator_task: bool,
    ) -> Applied {
        if e.event_seq <= self.applied_seq {
            return Applied::default();
        }
        self.applied_seq = e.event_seq;
        self.applying = e.event_seq;
        let message_id = e.provenance.message_id.as_deref().or(typed.message_id());
        let message_id = message_id.map(str::to_owned);
        let mut applied = Applied::default();
        use Event as K;
        match typed {
            K::MessageAdmitted(p) if op.is_operator_message() => {
                let id = p.message.id.clone();
                let text = match &p.message.body {
                    MessageBody::Text { text } => Some(text.clone()),
                    MessageBody::Json { .. } | MessageBody::Brief { .. } => None,
                };
                let text = text.or(op.body.clone()).unwrap_or_default();
                self.take_echo(EchoKind::Prompt, &id, &text);
                // In line until its turn takes it up (then it moves to
                // where it runs, so its answer appears under it).
                let label = match p.message.priority {
                    Priority::Interject => "interjects at the next safe point",
                    Priority::Next => "next in line",
                    Priority::Background => "queued (background)",
                    Priority::Normal => "queued",
                };
                let state = PromptState::Waiting(label.to_owned());
                // The operator answered: earlier questions no longer carry
                // the NEEDS YOUR INPUT mark (only rows that need it do).
                let asked = |r: &Row| {
                    matches!(r.kind(), RowKind::Brief { visibility, .. }
                        if *visibility == Visibility::ActionRequired)
                };
                for row in self.rows.iter_mut().filter(|r| asked(r)) {
                    if let RowKind::Brief { visibility, .. } = row.kind_mut() {
                        *visibility = Visibility::TurnResult;
                    }
                }
                let i = self.push(RowKind::Operator { text, state }, DisplayMode::Info);
                self.waiting.push(id.clone());
                self.rows[i].message_id = Some(id);
            }
            K::MessageInterjected(_) => {
                if let Some(m) = &message_id {
                    self.prompt_taken_up(m, true);
                }
                self.generic(op);
            }
            K::MessageProcessingStarted(_)
            | K::MessageProcessed(_)
            | K::MessageAborted(_)
            | K::MessageDropped(_) => {
                if let Some(m) = &message_id {
                    self.prompt_taken_up(m, false);
                }
                self.generic(op);
            }
            K::MessageRejected(_) => {
                let detail = op.body.iter().map(|b| format!("“{b}”")).collect();
                let kind = RowKind::Alert {
                    summary: op.summary.clone(),
                    detail,
                    message_id: None,
                };
                self.push(kind, min_mode(op).unwrap_or(DisplayMode::Info));
            }
            K::RuntimeError(_) => self.alert(message_id, op, None),
            K::BriefCreated(p) if p.brief.kind == BriefKind::Failure => {
                let mid = message_id.or(Some(p.brief.related_message_id.clone()));
                let text = Some(p.brief.text.trim()).filter(|t| !t.is_empty());
                self.alert(mid, op, text);
            }
            K::BriefCreated(p) => {
                let mut body = p.brief.text.trim().to_owned();
                if let Some(attached) = crate::ui::present::attachments_text(&p.brief.attachments) {
                    body = format!("{body}\n\n{attached}").trim().to_owned();
                }
                // A turn that only asked for approval has nothing to say
                // beyond its waiting row.
                let waits_here = |r: &Row| {
                    matches!(r.kind(), RowKind::Approval(a) if a.state == ApprovalState::Waiting)
                        && r.message_id == message_id
                };
                if body.is_empty() && message_id.is_some() && self.rows.iter().any(waits_here) {
                    return applied;
                }
                self.hide_repeated_progress(message_id.as_deref(), &body);
                applied.attention = op.visibility == Visibility::ActionRequired;
                let kind = RowKind::Brief {
                    visibility: op.visibility,
                    title: op.title.clone(),
                    text: body,
                };
                let i = self.push(kind, DisplayMode::Info);
                self.rows[i].message_id = message_id;
            }
            K::ApprovalRequested(p) => {
                applied.attention = true;
                let i = self.push(
                    RowKind::Approval(attention::approval_row(&p.approval)),
                    DisplayMode::Info,
                );
                self.rows[i].message_id = message_id;
                self.mark_answerable();
            }
            K::ApprovalGranted(p) | K::ApprovalDenied(p) => {
                let a = &p.approval;
                let answer = match a.status {
                    ApprovalStatus::Denied => ApprovalState::Denied {
                        note: a.note.clone(),
                    },
                    _ => ApprovalState::Approved { always: a.always },
                };
                let row = self
                    .rows
                    .iter_mut()
                    .rev()
                    .find(|r| matches!(r.kind(), RowKind::Approval(x) if x.id == a.id));
                match row {
                    Some(row) => {
                        if let RowKind::Approval(x) = row.kind_mut() {
                            x.state = answer;
                        }
                    }
                    // Asked before the history this console holds.
                    None => {
                        let mut x = attention::approval_row(a);
                        x.state = answer;
                        self.push(RowKind::Approval(x), DisplayMode::Info);
                    }
                }
                self.mark_answerable();
                applied.settled = !self.needs_operator();
            }
            K::TaskCreated(p) => self.task_created(&p.task, operator_task),
            K::TaskStatusChanged(p) => self.task_changed(p, operator_task),
            K::ToolStarted(p) => {
                self.set_activity(op);
                if let Some(t) = self.turn.as_mut() {
                    t.tool = Some((p.call_id.clone(), op.summary.clone()));
                }
            }
            K::ToolExecuted(p) => {
                // A call approved after its turn ended is not this turn's
                // activity.
                let ours = self
                    .turn
                    .as_ref()
                    .is_some_and(|t| t.run_id.as_deref() == Some(p.run_id.as_str()));
                if ours {
                    self.set_activity(op);
                }
                self.tool_executed(p, op);
            }
            K::AssistantRoundRecorded(p) => {
                self.set_activity(op);
                self.close_stream(&p.run_id, p.text_chars, p.attempt);
                if let Some(thinking) = crate::ui::present::reasoning_row(p) {
                    self.generic(&thinking);
                }
                let i = self.generic(op);
                if let (Some(i), false) = (i, p.text_preview.trim().is_empty()) {
                    self.progress.push((message_id, i));
                }
            }
            K::TurnStarted(p) => {
                if let Some(m) = &message_id {
                    self.prompt_taken_up(m, true);
                }
                self.turn = Some(Turn {
                    run_id: Some(p.run_id.clone()),
                    message_id,
                    started_ms: ts_ms(&e.ts),
                    activity: None,
                    tool: None,
                    tokens: 0,
                    retry: None,
                });
                self.reset_stream();
                self.stream_skip = 0;
                self.progress.clear();
                self.generic(op);
            }
            K::TurnContextBuilt(_) => {
                self.generic(op);
            }
            K::ProviderRoundCompleted(p) => {
                if let Some(t) = self.turn.as_mut() {
                    t.tokens += p.token_usage.input_tokens + p.token_usage.output_tokens;
                }
                self.generic(op);
            }
            K::TurnTerminal(p) => {
                // An answer cut off (Esc, a stop) stays, marked as such:
                // what the runtime recorded, else what streamed here. The
                // text of an attempt that failed is not an answer: a turn
                // that failed keeps none of it.
                let streamed = self.stream.take().map(|(_, s)| s);
                self.reset_stream();
                // Whatever of the run is still on its way is late.
                self.stream_closed.close_through(&p.run_id, u32::MAX);
                let cut_off = p
                    .partial_answer
                    .clone()
                    .or(streamed.filter(|_| p.cancel_reason.is_some()));
                if let Some(text) = cut_off.filter(|t| !t.trim().is_empty()) {
                    let kind = RowKind::Brief {
                        visibility: Visibility::TurnResult,
                        title: "Interrupted".into(),
                        text,
                    };
                    let i = self.push(kind, DisplayMode::Info);
                    self.rows[i].message_id = message_id.clone();
                    let why = p
                        .cancel_reason
                        .map(|r| r.describe().to_owned())
                        .unwrap_or_else(|| "the turn ended".to_owned());
                    self.push(
                        RowKind::Note {
                            text: format!("the answer above was cut off: {why}"),
                            tone: Tone::Info,
                        },
                        DisplayMode::Info,
                    );
                }
                self.turn = None;
                self.last_turn_tokens =
                    Some(p.token_usage.input_tokens + p.token_usage.output_tokens);
                self.generic(op);
            }
            // Everything else is a presented row when a display mode
            // shows it (`min_mode`), and nothing to merge.
            K::MessageAdmitted(_)
            | K::WorkspaceAttached(_)
            | K::WorkspaceUsed(_)
            | K::WorkspaceDetached(_)
            | K::WorkspaceMissing(_)
            | K::WorktreeCreated(_)
            | K::WorktreeRemoved(_)
            | K::WorktreeRetained(_)
            | K::ContextCompacted(_)
            | K::TurnCheckpoint(_)
            | K::AgentCreated(_)
            | K::AgentArchived(_)
            | K::SkillActivated(_)
            | K::AgentStateChanged(_)
            | K::ControlApplied(_)
            | K::BudgetExceeded(_)
            | K::AgentBudgetChanged(_)
            | K::SchedulerDecision(_)
            | K::SystemTickEmitted(_)
            | K::WorkItemCreated(_)
            | K::WorkItemPicked(_)
            | K::WorkItemUpdated(_)
            | K::WorkItemCompleted(_)
            | K::WorkItemRecheckDue(_)
            | K::TaskOutput(_)
            | K::TaskResultQueued(_)
            | K::TaskReattached(_)
            | K::WaitingIntentCreated(_)
            | K::WaitingIntentTriggered(_)
            | K::WaitingIntentCancelled(_)
            | K::TimerCreated(_)
            | K::TimerFired(_)
            | K::TimerCancelled(_)
            | K::WakeHintSubmitted(_)
            | K::WakeHintCoalesced(_)
            | K::WakeHintIgnored(_)
            | K::ExternalTriggerProvisioned(_)
            | K::ExternalTriggerRotated(_)
            | K::ExternalTriggerRevoked(_)
            | K::ExternalTriggerDelivered(_)
            | K::WorkspacePolicyChanged(_)
            | K::DefaultPolicyChanged(_)
            | K::McpServerApproved(_)
            | K::McpServerSwitched(_)
            | K::McpServerStarted(_)
            | K::McpServerFailed(_)
            | K::McpServerStopped(_)
            | K::StorePruned(_)
            | K::HistoryLost(_)
            | K::RuntimeStarted(_)
            | K::RuntimeStopped(_)
            | K::ConfigReloaded(_)
            | K::DisplayModeChanged(_)
            | K::ModelOverrideChanged(_)
            | K::Unknown { .. }
            | K::Unreadable { .. } => {
                self.generic(op);
            }
        }
        applied
    }

    fn generic(&mut self, op: &OperatorEvent) -> Option<usize> {
        let mode = min_mode(op)?;
        Some(self.push(RowKind::Event(op.clone()), mode))
    }
}

#[cfg(test)]
mod tests;
