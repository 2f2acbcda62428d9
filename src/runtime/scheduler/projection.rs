//! `SchedulerProjection`: the read-only snapshot the scheduler consumes,
//! built by one pure builder from the typed durable records (agent, queue
//! entries with their envelopes, work items, tasks, waiting intents,
//! timers, tool executions, emitted tick keys) and `now_ms`. It never
//! mutates anything; per-item readiness comes from `readiness`.
//!
//! Invariants: terminal tasks are never active; legacy subagent tasks and
//! background tasks never block; a wait (blocking task, work-item waiting
//! intent, timer) bound to a work item makes that item not runnable;
//! completed items are never runnable; queued items are never promoted to
//! current here; only `Queued` and `Dequeued` entries are pending input.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use crate::model::agent::AgentRecord;
use crate::model::agent::AgentStatus;
use crate::model::approval::ApprovalRecord;
use crate::model::approval::ApprovalStatus;
use crate::model::decision::ClosureDecision;
use crate::model::decision::PostureView;
use crate::model::decision::RuntimePosture;
use crate::model::decision::TurnPhase;
use crate::model::decision::TurnTerminalKind;
use crate::model::decision::WorkSignal;
use crate::model::message::QueueEntryStatus;
use crate::model::message::{MessageEnvelope, MessageKind, Priority, TrustLevel};
use crate::model::task::TaskRecord;
use crate::model::waiting::PendingWakeHint;
use crate::model::waiting::TimerRecord;
use crate::model::waiting::TimerStatus;
use crate::model::waiting::WaitingIntentRecord;
use crate::model::waiting::WaitingIntentStatus;
use crate::model::work::{WorkItemRecord, WorkItemState};
use crate::runtime::closure::{derive_closure, ClosureFacts};
use crate::runtime::continuation::ContinuationTrigger;
use crate::runtime::posture::{derive_posture, BlockedWork, PostureFacts};
use crate::runtime::queue::QueueEntry;

use super::readiness::{
    derive_work_item_state, has_blocker, intent_work_item, parse_ts_ms, task_blocks,
    task_has_blocking_policy, task_work_item, WorkItemSchedulingState,
};

/// One queue entry with the envelope it refers to.
#[derive(Debug, Clone, Copy)]
pub struct QueuedMessage<'a> {
    pub entry: &'a QueueEntry,
    pub envelope: &'a MessageEnvelope,
}

/// A recorded tool execution: evidence, never re-executed by the scheduler.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolExecutionRef {
    pub id: String,
    pub message_id: Option<String>,
}

/// Everything the builder reads. Queue entries in any status may be
/// passed; only `Queued` and `Dequeued` become pending input.
#[derive(Debug, Clone, Copy)]
pub struct ProjectionInputs<'a> {
    pub agent: &'a AgentRecord,
    pub queue: &'a [QueuedMessage<'a>],
    pub work_items: &'a [WorkItemRecord],
    pub tasks: &'a [TaskRecord],
    pub waiting_intents: &'a [WaitingIntentRecord],
    pub timers: &'a [TimerRecord],
    pub tool_executions: &'a [ToolExecutionRef],
    /// Idempotency keys of system ticks already emitted.
    pub emitted_tick_keys: &'a BTreeSet<String>,
    pub last_turn_terminal: Option<TurnTerminalKind>,
    pub runtime_error: Option<&'a str>,
    /// Approvals still open: pending, or granted with the call running.
    pub pending_approvals: &'a [ApprovalRecord],
    /// Queued message ids after those in `queue`, in dequeue order: a deep
    /// queue is counted and named, but only its head is read and decided on.
    pub queued_beyond: &'a [String],
}

/// Admitted input that still has to be handled, in dequeue order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PendingInput {
    pub message_id: String,
    pub status: QueueEntryStatus,
    pub priority: Priority,
    pub admission_seq: u64,
    pub kind: MessageKind,
    pub trust: TrustLevel,
    pub trigger: ContinuationTrigger,
    pub work_item_id: Option<String>,
    pub task_id: Option<String>,
    pub timer_id: Option<String>,
    pub waiting_intent_id: Option<String>,
}

/// One work item as the scheduler sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkItemView {
    pub id: String,
    pub revision: u64,
    pub state: WorkItemSchedulingState,
    pub blocked_by: Option<String>,
    /// `recheck_at` is due at `now_ms` and not yet consumed.
    pub recheck_due: bool,
}

/// The scheduler's snapshot. Serialises to the replay `projection` shape;
/// the `skip`ped fields carry the detail `decide` needs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SchedulerProjection {
    pub status: AgentStatus,
    pub current_work_item_id: Option<String>,
    pub current_work_item_revision: Option<u64>,
    pub queued_work_items: Vec<String>,
    pub runnable_work_items: Vec<String>,
    pub active_tasks: Vec<String>,
    pub has_blocking_active_tasks: bool,
    /// The pending wake hint's reason, if one is pending.
    pub pending_wake_hint: Option<String>,
    pub active_waiting_intents: Vec<String>,
    pub active_work_item_waiting_intents: Vec<String>,
    pub active_agent_waiting_intents: Vec<String>,
    pub active_timers: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pending_approvals: Vec<String>,
    pub turn_in_progress: bool,
    /// The running turn waits for the answer to these approvals.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub turn_awaits: Vec<String>,
    pub runtime_error: Option<String>,
    pub replay_message_ids: Vec<String>,
    pub tool_executions: Vec<String>,
    #[serde(skip)]
    pub(crate) now_ms: i64,
    #[serde(skip)]
    pub(crate) wake_hint: Option<PendingWakeHint>,
    #[serde(skip)]
    pub(crate) pending_inputs: Vec<PendingInput>,
    #[serde(skip)]
    pub(crate) work_items: Vec<WorkItemView>,
    #[serde(skip)]
    pub(crate) tasks: Vec<TaskRecord>,
    #[serde(skip)]
    pub(crate) intents: Vec<WaitingIntentRecord>,
    /// What each pending approval would run, for the posture.
    #[serde(skip)]
    pub(crate) approval_labels: Vec<String>,
    #[serde(skip)]
    pub(crate) timers: Vec<TimerRecord>,
    #[serde(skip)]
    pub(crate) tool_refs: Vec<ToolExecutionRef>,
    #[serde(skip)]
    pub(crate) emitted_tick_keys: BTreeSet<String>,
    #[serde(skip)]
    pub(crate) last_turn_terminal: Option<TurnTerminalKind>,
}

/// Records whose activity a trigger implies: the closure before a trigger
/// ran still had its own task, timer or waiting intent active.
#[derive(Debug, Clone, Copy, Default)]
pub struct TriggerSources<'a> {
    pub task_id: Option<&'a str>,
    pub timer_id: Option<&'a str>,
    pub waiting_intent_id: Option<&'a str>,
}

fn source_ref(envelope: &MessageEnvelope, key: &str) -> Option<String> {
    envelope.source_refs.get(key).cloned()
}

fn pending_input(q: &QueuedMessage<'_>) -> PendingInput {
    let env = q.envelope;
    let timer_id = env.timer_id();
    PendingInput {
        message_id: env.id.clone(),
        status: q.entry.status,
        priority: q.entry.priority,
        admission_seq: q.entry.admission_seq,
        kind: env.kind,
        trust: env.trust,
        trigger: ContinuationTrigger::from_envelope(env),
        work_item_id: env.work_item_id.clone(),
        task_id: env.task_id.clone(),
        timer_id,
        waiting_intent_id: source_ref(env, "waiting_intent_id"),
    }
}

impl SchedulerProjection {
    /// The pure builder.
    pub fn build(inputs: ProjectionInputs<'_>, now_ms: i64) -> Self {
        let agent = inputs.agent;
        let work_items: Vec<WorkItemView> = inputs
            .work_items
            .iter()
            .map(|w| WorkItemView {
                id: w.id.clone(),
                revision: w.revision,
                state: match derive_work_item_state(
                    w,
                    inputs.tasks,
                    inputs.waiting_intents,
                    inputs.timers,
                ) {
                    // A call of this item's turn waits for the operator (or
                    // runs, approved): the item is not runnable until its
                    // outcome is back.
                    s if s != WorkItemSchedulingState::Completed
                        && inputs
                            .pending_approvals
                            .iter()
                            .any(|a| a.work_item_id.as_deref() == Some(w.id.as_str())) =>
                    {
                        WorkItemSchedulingState::WaitingOperator
                    }
                    s => s,
                },
                blocked_by: w.blocked_by.clone().filter(|b| !b.trim().is_empty()),
                recheck_due: has_blocker(w)
                    && w.recheck_consumed_at.is_none()
                    && w.recheck_at
                        .as_deref()
                        .and_then(parse_ts_ms)
                        .is_some_and(|at| at <= now_ms),
            })
            .collect();
        let current = agent.current_work_item_id.as_deref();
        let open_unblocked_queued = |w: &&WorkItemRecord| {
            w.state == WorkItemState::Open && Some(w.id.as_str()) != current && !has_blocker(w)
        };
        let active_intents: Vec<&WaitingIntentRecord> = inputs
            .waiting_intents
            .iter()
            .filter(|i| i.status == WaitingIntentStatus::Active)
            .collect();
        let mut pending_inputs: Vec<PendingInput> = inputs
            .queue
            .iter()
            .filter(|q| q.entry.status.replays_on_restart())
            .map(pending_input)
            .collect();
        pending_inputs.sort_by(|a, b| {
            (a.priority.band(), a.admission_seq, &a.message_id).cmp(&(
                b.priority.band(),
                b.admission_seq,
                &b.message_id,
            ))
        });
        let mut tool_ids: Vec<String> = Vec::new();
        for t in inputs.tool_executions {
            if !tool_ids.contains(&t.id) {
                tool_ids.push(t.id.clone());
            }
        }
        SchedulerProjection {
            status: agent.status,
            current_work_item_id: agent.current_work_item_id.clone(),
            current_work_item_revision: current
                .and_then(|c| inputs.work_items.iter().find(|w| w.id == c))
                .map(|w| w.revision),
            queued_work_items: inputs
                .work_items
                .iter()
                .filter(open_unblocked_queued)
                .map(|w| w.id.clone())
                .collect(),
            runnable_work_items: work_items
                .iter()
                .filter(|w| w.state == WorkItemSchedulingState::Runnable)
                .map(|w| w.id.clone())
                .collect(),
            active_tasks: inputs
                .tasks
                .iter()
                .filter(|t| !t.status.is_terminal())
                .map(|t| t.id.clone())
                .collect(),
            has_blocking_active_tasks: inputs.tasks.iter().any(task_blocks),
            pending_wake_hint: agent.pending_wake_hint.as_ref().map(|h| h.reason.clone()),
            active_waiting_intents: active_intents.iter().map(|i| i.id.clone()).collect(),
            active_work_item_waiting_intents: active_intents
                .iter()
                .filter(|i| intent_work_item(i).is_some())
                .map(|i| i.id.clone())
                .collect(),
            active_agent_waiting_intents: active_intents
                .iter()
                .filter(|i| intent_work_item(i).is_none())
                .map(|i| i.id.clone())
                .collect(),
            active_timers: inputs
                .timers
                .iter()
                .filter(|t| t.status == TimerStatus::Active)
                .map(|t| t.id.clone())
                .collect(),
            pending_approvals: inputs
                .pending_approvals
                .iter()
                .map(|a| a.id.clone())
                .collect(),
            turn_in_progress: agent.turn_in_progress,
            turn_awaits: agent.turn_awaits.clone(),
            runtime_error: inputs.runtime_error.map(str::to_owned),
            replay_message_ids: pending_inputs
                .iter()
                .map(|p| p.message_id.clone())
                .chain(inputs.queued_beyond.iter().cloned())
                .collect(),
            tool_executions: tool_ids,
            now_ms,
            wake_hint: agent.pending_wake_hint.clone(),
            pending_inputs,
            work_items,
            tasks: inputs.tasks.to_vec(),
            intents: inputs.waiting_intents.to_vec(),
            approval_labels: inputs
                .pending_approvals
                .iter()
                .map(|a| match a.status {
                    ApprovalStatus::Pending => {
                        format!("approval needed: {} {} ({})", a.tool_name, a.summary, a.id)
                    }
                    ApprovalStatus::Granted | ApprovalStatus::Denied => {
                        format!(
                            "approved {} {} is running ({})",
                            a.tool_name, a.summary, a.id
                        )
                    }
                })
                .collect(),
            timers: inputs.timers.to_vec(),
            tool_refs: inputs.tool_executions.to_vec(),
            emitted_tick_keys: inputs.emitted_tick_keys.clone(),
            last_turn_terminal: inputs.last_turn_terminal,
        }
    }

    pub fn now_ms(&self) -> i64 {
        self.now_ms
    }

    pub fn turn_phase(&self) -> TurnPhase {
        if self.turn_in_progress {
            TurnPhase::InProgress
        } else {
            TurnPhase::Idle
        }
    }

    /// Pending input in dequeue order (priority band, then admission).
    pub fn pending_inputs(&self) -> &[PendingInput] {
        &self.pending_inputs
    }

    /// Every work item with its derived scheduling state, in record order.
    pub fn work_item_states(&self) -> &[WorkItemView] {
        &self.work_items
    }

    pub fn wake_hint(&self) -> Option<&PendingWakeHint> {
        self.wake_hint.as_ref()
    }

    pub fn tick_already_emitted(&self, key: &str) -> bool {
        self.emitted_tick_keys.contains(key)
    }

    pub fn tool_executions_for<'s>(
        &'s self,
        message_id: &'s str,
    ) -> impl Iterator<Item = &'s str> + 's {
        self.tool_refs
            .iter()
            .filter(move |t| t.message_id.as_deref() == Some(message_id))
            .map(|t| t.id.as_str())
    }

    /// Queued operator interjections: trusted operator prompts with the
    /// `interject` priority that a running turn may take at a safe point.
    pub fn operator_interjections(&self) -> impl Iterator<Item = &PendingInput> {
        self.pending_inputs.iter().filter(|p| {
            p.status == QueueEntryStatus::Queued
                && p.priority == Priority::Interject
                && p.kind == MessageKind::OperatorPrompt
                && p.trust == TrustLevel::TrustedOperator
        })
    }

    pub fn work_item(&self, id: &str) -> Option<&WorkItemView> {
        self.work_items.iter().find(|w| w.id == id)
    }

    /// The current item when it is still open: closure and waits bound to
    /// other items are out of its scope.
    fn focus(&self) -> Option<&WorkItemView> {
        self.current_work_item_id
            .as_deref()
            .and_then(|c| self.work_item(c))
            .filter(|w| w.state != WorkItemSchedulingState::Completed)
    }

    /// Whether a fact bound to `item` belongs in closure scope: unbound facts
    /// always do; bound ones when they concern the focus, or any open item
    /// when there is no focus.
    fn in_closure_scope(&self, item: Option<&str>) -> bool {
        let Some(item) = item else { return true };
        match self.focus() {
            Some(focus) => focus.id == item,
            None => self
                .work_item(item)
                .is_some_and(|w| w.state != WorkItemSchedulingState::Completed),
        }
    }

    /// The closure work signal: current runnable item, else the first
    /// queued runnable one (never promoted to current).
    pub fn work_signal(&self) -> Option<WorkSignal> {
        if let Some(focus) = self
            .focus()
            .filter(|f| f.state == WorkItemSchedulingState::Runnable)
        {
            return Some(WorkSignal::continue_active(&focus.id));
        }
        self.queued_runnable()
            .next()
            .map(|w| WorkSignal::activate_queued(&w.id))
    }

    /// Runnable items other than the current one, in record order.
    pub fn queued_runnable(&self) -> impl Iterator<Item = &WorkItemView> {
        let current = self.current_work_item_id.clone();
        self.work_items.iter().filter(move |w| {
            w.state == WorkItemSchedulingState::Runnable && Some(&w.id) != current.as_ref()
        })
    }

    /// Evidence naming the trigger sources that are no longer active but
    /// count in the closure before the trigger ran.
    pub fn revived_sources(&self, sources: TriggerSources<'_>) -> Vec<String> {
        let mut out = Vec::new();
        if let Some(t) = sources
            .task_id
            .and_then(|id| self.tasks.iter().find(|t| t.id == id))
        {
            if t.status.is_terminal() && task_has_blocking_policy(t) {
                out.push(format!("terminal_blocking_task_result:{}", t.id));
            }
        }
        if let Some(t) = sources
            .timer_id
            .and_then(|id| self.timers.iter().find(|t| t.id == id))
        {
            if t.status != TimerStatus::Active {
                out.push(format!("fired_timer:{}", t.id));
            }
        }
        let intent = sources
            .waiting_intent_id
            .and_then(|id| self.intents.iter().find(|i| i.id == id));
        if let Some(i) = intent.filter(|i| i.status != WaitingIntentStatus::Active) {
            out.push(format!("triggered_waiting_intent:{}", i.id));
        }
        out
    }

    /// Closure facts from the current records.
    pub fn closure_facts(&self) -> ClosureFacts {
        self.closure_facts_before(TriggerSources::default())
    }

    /// Closure facts as they stood before a trigger ran: the trigger's own
    /// task, timer or waiting intent still counts as active.
    pub fn closure_facts_before(&self, sources: TriggerSources<'_>) -> ClosureFacts {
        let operator_wait_work_items = self
            .work_items
            .iter()
            .filter(|w| w.state == WorkItemSchedulingState::WaitingOperator)
            .filter(|w| self.in_closure_scope(Some(&w.id)))
            .map(|w| w.id.clone())
            .collect();
        let blocking_tasks = self
            .tasks
            .iter()
            .filter(|t| {
                task_blocks(t)
                    || (sources.task_id == Some(t.id.as_str()) && task_has_blocking_policy(t))
            })
            .filter(|t| self.in_closure_scope(task_work_item(t)))
            .map(|t| t.id.clone())
            .collect();
        let waiting_intents = self
            .intents
            .iter()
            .filter(|i| {
                i.status == WaitingIntentStatus::Active
                    || sources.waiting_intent_id == Some(i.id.as_str())
            })
            .filter(|i| self.in_closure_scope(intent_work_item(i)))
            .map(|i| i.id.clone())
            .collect();
        let timers = self
            .timers
            .iter()
            .filter(|t| t.status == TimerStatus::Active || sources.timer_id == Some(t.id.as_str()))
            .filter(|t| self.in_closure_scope(t.work_item_id.as_deref()))
            .map(|t| t.id.clone())
            .collect();
        ClosureFacts {
            runtime_error: self.runtime_error.clone(),
            pending_approvals: self.pending_approvals.clone(),
            operator_wait_work_items,
            blocking_tasks,
            waiting_intents,
            timers,
            turn: self.turn_phase(),
            last_turn_terminal: self.last_turn_terminal,
            work_signal: self.work_signal(),
            runtime_posture: runtime_posture(self.status),
        }
    }

    /// The closure decision for the current records.
    pub fn closure(&self) -> ClosureDecision {
        derive_closure(&self.closure_facts())
    }

    pub fn posture_facts(&self) -> PostureFacts {
        let ids_in = |state: WorkItemSchedulingState| {
            self.work_items
                .iter()
                .filter(|w| w.state == state)
                .map(|w| w.id.clone())
                .collect::<Vec<_>>()
        };
        PostureFacts {
            status: self.status,
            turn: self.turn_phase(),
            queued_inputs: self.replay_message_ids.clone(),
            runnable_work_items: self.runnable_work_items.clone(),
            task_waits: self
                .tasks
                .iter()
                .filter(|t| task_blocks(t))
                .map(|t| t.id.clone())
                .collect(),
            external_waits: self
                .intents
                .iter()
                .filter(|i| self.active_waiting_intents.contains(&i.id))
                .map(wait_label)
                .collect(),
            timer_waits: self.active_timers.clone(),
            operator_waits: ids_in(WorkItemSchedulingState::WaitingOperator),
            approvals: self.approval_labels.clone(),
            turn_awaits: self.turn_in_progress && !self.turn_awaits.is_empty(),
            blocked_work: self
                .work_items
                .iter()
                .filter(|w| w.state == WorkItemSchedulingState::Blocked)
                .map(|w| BlockedWork {
                    work_item_id: w.id.clone(),
                    blocked_by: w.blocked_by.clone().unwrap_or_default(),
                })
                .collect(),
        }
    }

    /// The derived agent scheduling posture.
    pub fn posture(&self) -> PostureView {
        derive_posture(&self.posture_facts())
    }
}

/// Awake unless the control posture is asleep, paused or stopped.
pub fn runtime_posture(status: AgentStatus) -> RuntimePosture {
    match status {
        AgentStatus::Booting
        | AgentStatus::AwakeIdle
        | AgentStatus::AwakeRunning
        | AgentStatus::AwaitingTask => RuntimePosture::Awake,
        AgentStatus::Asleep | AgentStatus::Paused | AgentStatus::Stopped => {
            RuntimePosture::Sleeping
        }
    }
}

/// A wait as the posture names it: what it waits for and where, so the
/// console says "waiting on CI for PR 7 (ci pr-7)", not an id.
fn wait_label(w: &WaitingIntentRecord) -> String {
    let what = w.description.as_deref().unwrap_or(&w.id);
    match (&w.source, &w.external_ref) {
        (Some(s), Some(r)) => format!("{what} ({s} {r})"),
        (Some(s), None) => format!("{what} ({s})"),
        (None, _) => what.to_owned(),
    }
}
