//! Applying one event to the conversation, by family (`Family`): the
//! queue and the operator's prompts, briefs, approvals, tasks, tool calls,
//! the running turn, and the other families (a presented row when a
//! display mode shows it, and nothing to merge).

use super::super::fmt::ts_ms;
use super::super::rows::{ApprovalState, PromptState, Row, RowKind, Tone};
use super::{attention, min_mode, Applied, Conversation, EchoKind, Turn};
use crate::model::approval::ApprovalStatus;
use crate::protocol::events::{self as ev, BriefKind, Event, Family};
use crate::protocol::events::{ApprovalEvent, BriefEvent, MessageEvent, TaskEvent};
use crate::protocol::events::{ToolEvent, TurnEvent};
use crate::protocol::types::{MessageBody, Priority};
use crate::protocol::DisplayMode;
use crate::protocol::EventRecord;
use crate::ui::present::{OperatorEvent, Visibility};

impl Conversation {
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
        use Family as F;
        match typed.family() {
            F::Message(m) => self.message_event(m, message_id.as_deref(), op),
            F::Brief(BriefEvent::BriefCreated(p)) => return self.brief(p, message_id, op),
            F::Approval(a) => return self.approval_event(a, message_id),
            F::Task(t) => self.task_event(t, operator_task, op),
            F::Tool(t) => self.tool_event(t, op),
            F::Turn(t) => self.turn_event(e, t, message_id, op),
            // The rest is a presented row when a display mode shows it
            // (`min_mode`), and nothing to merge.
            F::Agent(_)
            | F::Scheduler(_)
            | F::Workspace(_)
            | F::WorkItem(_)
            | F::Wait(_)
            | F::Trigger(_)
            | F::Policy(_)
            | F::Mcp(_)
            | F::Runtime(_)
            | F::Unreadable => {
                self.generic(op);
            }
        }
        Applied::default()
    }

    /// The queue: an operator's prompt joins it, a message is taken up,
    /// joins the running turn, ends or is refused. Another's message
    /// admitted is a row where a mode shows it.
    fn message_event(&mut self, m: MessageEvent<'_>, message_id: Option<&str>, op: &OperatorEvent) {
        use MessageEvent as M;
        match m {
            M::MessageAdmitted(p) if op.is_operator_message() => self.prompt_admitted(p, op),
            M::MessageAdmitted(_) => {
                self.generic(op);
            }
            M::MessageInterjected(_)
            | M::MessageProcessingStarted(_)
            | M::MessageProcessed(_)
            | M::MessageAborted(_)
            | M::MessageDropped(_) => self.message_moved(m, message_id, op),
            M::MessageRejected(_) => self.rejected(op),
        }
    }

    /// An approval is a row answerable at a key until it is answered; its
    /// review is written beside it.
    fn approval_event(&mut self, a: ApprovalEvent<'_>, message_id: Option<String>) -> Applied {
        use ApprovalEvent as A;
        match a {
            A::ApprovalRequested(p) => self.approval_requested(p, message_id),
            A::ApprovalGranted(p) => {
                let always = p.approval.always;
                self.approval_answered(p, ApprovalState::Approved { always })
            }
            A::ApprovalDenied(p) => {
                let note = p.approval.note.clone();
                self.approval_answered(p, ApprovalState::Denied { note })
            }
            A::ApprovalReviewed(p) => {
                self.approval_reviewed(p);
                Applied::default()
            }
        }
    }

    /// A task's row: made when it starts, changed where it is; its output,
    /// its result queued and its reattachment are rows where a mode shows
    /// them.
    fn task_event(&mut self, t: TaskEvent<'_>, operator_task: bool, op: &OperatorEvent) {
        use TaskEvent as T;
        match t {
            T::TaskCreated(p) => self.task_created(&p.task, operator_task),
            T::TaskStatusChanged(p) => self.task_changed(p, operator_task),
            T::TaskOutput(_) | T::TaskResultQueued(_) | T::TaskReattached(_) => {
                self.generic(op);
            }
        }
    }

    /// A tool call: the turn's activity while it runs, then its row.
    fn tool_event(&mut self, t: ToolEvent<'_>, op: &OperatorEvent) {
        match t {
            ToolEvent::ToolStarted(p) => self.tool_started(p, op),
            ToolEvent::ToolExecuted(p) => self.tool_done(p, op),
        }
    }

    /// The running turn: what the working row shows, the model's words,
    /// compaction, and the turn's end or failure.
    fn turn_event(
        &mut self,
        e: &EventRecord,
        t: TurnEvent<'_>,
        message_id: Option<String>,
        op: &OperatorEvent,
    ) {
        use TurnEvent as T;
        match t {
            T::TurnStarted(p) => self.turn_started(e, p, message_id, op),
            T::AssistantRoundRecorded(p) => self.round_recorded(p, message_id, op),
            T::TurnAwaitingApproval(p) => self.turn_awaiting(p, op),
            T::ProviderRoundCompleted(p) => {
                if let Some(t) = self.turn.as_mut() {
                    t.tokens += p.token_usage.input_tokens + p.token_usage.output_tokens;
                }
                self.generic(op);
            }
            T::TurnTerminal(p) => self.turn_ended(p, message_id, op),
            T::RuntimeError(_) => self.alert(message_id, op, None),
            T::ContextCompactionStarted(p) => self.compaction_started(p, op),
            T::ContextCompacted(p) => self.compacted(p, op),
            T::TurnContextBuilt(_) | T::TurnCheckpoint(_) => {
                self.generic(op);
            }
        }
    }

    /// A message was taken up, joined the running turn, or ended: an
    /// operator prompt of it leaves the queue.
    fn message_moved(&mut self, m: MessageEvent<'_>, message_id: Option<&str>, op: &OperatorEvent) {
        let joined = if let MessageEvent::MessageInterjected(p) = m {
            Some(p)
        } else {
            None
        };
        if let Some(id) = message_id {
            self.prompt_taken_up(id, joined.is_some());
        }
        // Something joined the waiting turn: it goes on.
        if let (Some(p), Some(t)) = (joined, self.turn.as_mut()) {
            if p.detail.run_id.is_some() && p.detail.run_id == t.run_id {
                t.awaiting = false;
                self.mark_answerable();
            }
        }
        self.generic(op);
    }

    /// A refused message: an alert quoting what was refused.
    fn rejected(&mut self, op: &OperatorEvent) {
        let detail = op.body.iter().map(|b| format!("“{b}”")).collect();
        let kind = RowKind::Alert {
            summary: op.summary.clone(),
            detail,
            message_id: None,
        };
        self.push(kind, min_mode(op).unwrap_or(DisplayMode::Info));
    }

    /// A call waits for the operator: its row, answerable at a key.
    fn approval_requested(
        &mut self,
        p: &ev::ApprovalChanged,
        message_id: Option<String>,
    ) -> Applied {
        let i = self.push(
            RowKind::Approval(attention::approval_row(&p.approval)),
            DisplayMode::Info,
        );
        self.rows[i].message_id = message_id;
        self.mark_answerable();
        Applied {
            attention: true,
            settled: false,
        }
    }

    /// The reviewer's word, beside the request it is about.
    fn approval_reviewed(&mut self, p: &ev::ApprovalChanged) {
        let a = &p.approval;
        let pending = a.status == ApprovalStatus::Pending;
        let words = (a.review.as_ref()).map(|r| crate::ui::present::review_words(r, pending));
        if let Some(row) = self
            .rows
            .iter_mut()
            .rev()
            .find(|r| matches!(r.kind(), RowKind::Approval(x) if x.id == a.id))
        {
            if let RowKind::Approval(x) = row.kind_mut() {
                x.review = words;
            }
        }
    }

    /// A tool runs: the turn's activity says which.
    fn tool_started(&mut self, p: &ev::ToolStarted, op: &OperatorEvent) {
        self.set_activity(op);
        if let Some(t) = self.turn.as_mut() {
            t.tool = Some((p.call_id.clone(), op.summary.clone()));
        }
    }

    /// A tool's result; the turn's activity only when the call is the
    /// running turn's (one approved after its turn ended is not).
    fn tool_done(&mut self, p: &ev::ToolExecuted, op: &OperatorEvent) {
        let ours = self
            .turn
            .as_ref()
            .is_some_and(|t| t.run_id.as_deref() == Some(p.run_id.as_str()));
        if ours {
            self.set_activity(op);
        }
        self.tool_executed(p, op);
    }

    /// The model's round: its streamed text closed, its reasoning and its
    /// words as rows (text the prompt's answer may point at).
    fn round_recorded(
        &mut self,
        p: &ev::AssistantRoundRecorded,
        message_id: Option<String>,
        op: &OperatorEvent,
    ) {
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

    /// The turn waits for an answer; the keys answer what it waits for.
    fn turn_awaiting(&mut self, p: &ev::TurnAwaitingApproval, op: &OperatorEvent) {
        if let Some(t) = self
            .turn
            .as_mut()
            .filter(|t| t.run_id.as_ref() == Some(&p.run_id))
        {
            t.awaiting = true;
        }
        self.mark_answerable();
        self.generic(op);
    }

    /// A compaction began; one still open never ended (its turn went on
    /// without a summary, or the runtime stopped).
    fn compaction_started(&mut self, p: &ev::ContextCompactionStarted, op: &OperatorEvent) {
        self.end_compaction("Context compaction ended without a new summary");
        self.set_activity(op);
        self.push(RowKind::Event(op.clone()), DisplayMode::Info);
        self.compacting = Some(p.run_id.clone());
    }

    /// An operator prompt joined the queue: in line until its turn takes
    /// it up (then it moves to where it runs, so its answer appears under
    /// it).
    fn prompt_admitted(&mut self, p: &ev::MessageAdmitted, op: &OperatorEvent) {
        let id = p.message.id.clone();
        let text = match &p.message.body {
            MessageBody::Text { text } => Some(text.clone()),
            MessageBody::Json { .. } | MessageBody::Brief { .. } => None,
        };
        let text = text.or(op.body.clone()).unwrap_or_default();
        self.take_echo(EchoKind::Prompt, &id, &text);
        let label = match p.message.priority {
            Priority::Interject => "interjects at the next safe point",
            Priority::Next => "next in line",
            Priority::Background => "queued (background)",
            Priority::Normal => "queued",
        };
        let state = PromptState::Waiting(label.to_owned());
        // The operator answered: earlier questions no longer carry the
        // NEEDS YOUR INPUT mark (only rows that need it do).
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

    /// A brief: a failure merges with the error it reports; an answer
    /// hides the progress it repeats.
    fn brief(
        &mut self,
        p: &ev::BriefCreated,
        message_id: Option<String>,
        op: &OperatorEvent,
    ) -> Applied {
        if p.brief.kind == BriefKind::Failure {
            let mid = message_id.or(Some(p.brief.related_message_id.clone()));
            let text = Some(p.brief.text.trim()).filter(|t| !t.is_empty());
            self.alert(mid, op, text);
            return Applied::default();
        }
        let mut body = p.brief.text.trim().to_owned();
        if let Some(attached) = crate::ui::present::attachments_text(&p.brief.attachments) {
            body = format!("{body}\n\n{attached}").trim().to_owned();
        }
        // A turn that only asked for approval has nothing to say beyond
        // its waiting row.
        let waits_here = |r: &Row| {
            matches!(r.kind(), RowKind::Approval(a) if a.state == ApprovalState::Waiting)
                && r.message_id == message_id
        };
        if body.is_empty() && message_id.is_some() && self.rows.iter().any(waits_here) {
            return Applied::default();
        }
        self.hide_repeated_progress(message_id.as_deref(), &body);
        let kind = RowKind::Brief {
            visibility: op.visibility,
            title: op.title.clone(),
            text: body,
        };
        let i = self.push(kind, DisplayMode::Info);
        self.rows[i].message_id = message_id;
        Applied {
            attention: op.visibility == Visibility::ActionRequired,
            settled: false,
        }
    }

    /// An approval was answered: its row says how, as the event's kind
    /// says (a row is made when it was asked before the rows this console
    /// holds).
    fn approval_answered(&mut self, p: &ev::ApprovalChanged, answer: ApprovalState) -> Applied {
        let a = &p.approval;
        let row = self
            .rows
            .iter_mut()
            .rev()
            .find(|r| matches!(r.kind(), RowKind::Approval(x) if x.id == a.id));
        match row {
            Some(row) => {
                if let RowKind::Approval(x) = row.kind_mut() {
                    x.state = answer;
                    x.by_reviewer = a.review.as_ref().is_some_and(|r| r.applied);
                    x.review =
                        (a.review.as_ref()).map(|r| crate::ui::present::review_words(r, false));
                }
            }
            None => {
                let mut x = attention::approval_row(a);
                x.state = answer;
                self.push(RowKind::Approval(x), DisplayMode::Info);
            }
        }
        self.mark_answerable();
        Applied {
            attention: false,
            settled: !self.needs_operator(),
        }
    }

    fn turn_started(
        &mut self,
        e: &EventRecord,
        p: &ev::TurnStarted,
        message_id: Option<String>,
        op: &OperatorEvent,
    ) {
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
            awaiting: false,
        });
        self.reset_stream();
        self.stream_skip = 0;
        self.progress.clear();
        self.generic(op);
    }

    /// The turn ended. An answer cut off (Esc, a stop) stays, marked as
    /// such: what the runtime recorded, else what streamed here. The text
    /// of an attempt that failed is not an answer: a turn that failed
    /// keeps none of it.
    fn turn_ended(&mut self, p: &ev::TurnTerminal, message_id: Option<String>, op: &OperatorEvent) {
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
            self.rows[i].message_id = message_id;
            let why = p
                .cancel_reason
                .map(|r| r.describe().to_owned())
                .unwrap_or_else(|| "the turn ended".to_owned());
            self.note(format!("the answer above was cut off: {why}"), Tone::Info);
        }
        if self.compacting.as_deref() == Some(p.run_id.as_str()) {
            self.end_compaction("Context compaction ended without a new summary");
        }
        // It waited for an answer that did not come in time (or other
        // input came first): the answer now starts a turn of its own.
        let waited = self.turn.as_ref().filter(|t| t.awaiting);
        let run = waited.and_then(|t| t.run_id.clone());
        if run.is_some_and(|r| self.awaited_by(&r).is_some()) {
            let text = "The turn stopped waiting for your answer; answering now starts a new turn.";
            self.note(text, Tone::Info);
        }
        self.turn = None;
        self.mark_answerable();
        self.generic(op);
    }

    /// A compaction is done: its row (while this console holds it) now
    /// says what it made and how long it took. Compaction is shown at
    /// every display mode, since it can take as long as a round.
    fn compacted(&mut self, p: &ev::ContextCompacted, op: &OperatorEvent) {
        if self.turn.as_ref().and_then(|t| t.run_id.as_deref()) == Some(p.run_id.as_str()) {
            self.set_activity(op);
        }
        let row = match self.compacting.as_deref() == Some(p.run_id.as_str()) {
            true => {
                self.compacting = None;
                self.compaction_row()
            }
            false => None,
        };
        match row {
            Some(i) => *self.rows[i].kind_mut() = RowKind::Event(op.clone()),
            None => {
                self.push(RowKind::Event(op.clone()), DisplayMode::Info);
            }
        }
    }

    /// The compaction under way ends without its `context_compacted`: its
    /// row says `text` instead.
    pub fn end_compaction(&mut self, text: &str) {
        if self.compacting.take().is_none() {
            return;
        }
        if let Some(i) = self.compaction_row() {
            *self.rows[i].kind_mut() = RowKind::Note {
                text: text.to_owned(),
                tone: Tone::Info,
            };
        }
    }

    /// The row of the compaction under way.
    fn compaction_row(&self) -> Option<usize> {
        let started = ev::EventKind::ContextCompactionStarted.as_str();
        self.rows.iter().rposition(
            |r| matches!(r.kind(), RowKind::Event(op) if op.source_event_kind == started),
        )
    }

    pub(super) fn generic(&mut self, op: &OperatorEvent) -> Option<usize> {
        let mode = min_mode(op)?;
        Some(self.push(RowKind::Event(op.clone()), mode))
    }
}
