//! The scheduler contract: `decide(&SchedulerProjection, SchedulerInput)`
//! answers "given the current agent state, what should happen next?" with
//! one `SchedulerDecision` carrying its evidence. Pure: it reads the
//! projection (which already holds `now_ms`) and never mutates durable
//! state; the runtime records the decision as a `scheduler_decision` event
//! before any queue mutation and then executes it.
//!
//! Fixed priority (scheduler contract page and agent-state RFC): stopped ->
//! `Stop`; paused or booting -> `Noop` (a paused agent never starts a model
//! turn, dequeues or emits ticks; its input stays queued); turn in progress
//! -> `Noop`; pending input (priority band, then admission order) ->
//! `StartModelTurn` or `ReduceMessageOnly`; pending wake hint ->
//! `EmitSystemTick(wake_hint)`; current runnable work item ->
//! `EmitSystemTick(continue_active)`; otherwise the first queued runnable
//! item -> `EmitSystemTick(queued_available)` (focus is never changed);
//! then waits (blocking task, operator, external, timer); then `Sleep`, or
//! `StayIdle` when already asleep. A tick whose idempotency key was already
//! emitted is suppressed and falls through to the next rule, with
//! `duplicate_tick_suppressed:<key>` in the evidence.

use crate::model::decision::SchedulerDecision;

use crate::model::decision::{DecisionReason, SchedulerDecisionKind};

mod projection;
mod readiness;
#[cfg(test)]
mod tests;

pub use projection::{
    runtime_posture, PendingInput, ProjectionInputs, QueuedMessage, SchedulerProjection,
    ToolExecutionRef, TriggerSources, WorkItemView,
};
pub use readiness::{
    derive_work_item_state, intent_work_item, parse_ts_ms, task_blocks, task_has_blocking_policy,
    task_work_item, WorkItemSchedulingState,
};

use serde::{Deserialize, Serialize};

use super::closure::derive_closure;
use super::continuation::{resolve_continuation, waiting_reason_label};
use crate::model::agent::AgentStatus;
use crate::model::decision::SystemTickReason;
use crate::model::message::QueueEntryStatus;
use crate::model::waiting::PendingWakeHint;
use crate::model::waiting::WaitingIntentStatus;
use crate::model::waiting::WaitingReason;

/// What triggered this evaluation (scheduler contract, `SchedulerInput`).
/// Decisions depend on the projection; the input is recorded as evidence.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SchedulerInput {
    Message,
    WakeHint,
    ContinueActive,
    QueuedAvailable,
    Idle,
}

impl SchedulerInput {
    pub fn as_str(self) -> &'static str {
        match self {
            SchedulerInput::Message => "message",
            SchedulerInput::WakeHint => "wake_hint",
            SchedulerInput::ContinueActive => "continue_active",
            SchedulerInput::QueuedAvailable => "queued_available",
            SchedulerInput::Idle => "idle",
        }
    }
}

impl SchedulerDecision {
    fn new(kind: SchedulerDecisionKind, reason: DecisionReason, evidence: Vec<String>) -> Self {
        SchedulerDecision {
            kind,
            reason,
            model_reentry: false,
            liveness_only: false,
            work_item_id: None,
            task_id: None,
            message_id: None,
            idempotency_key: None,
            evidence,
        }
    }

    /// The tick reason when this is an `EmitSystemTick`.
    pub fn tick_reason(&self) -> Option<SystemTickReason> {
        if self.kind != SchedulerDecisionKind::EmitSystemTick {
            return None;
        }
        match self.reason {
            DecisionReason::WakeHint => Some(SystemTickReason::WakeHint),
            DecisionReason::ContinueActive => Some(SystemTickReason::ContinueActive),
            DecisionReason::QueuedAvailable => Some(SystemTickReason::QueuedAvailable),
            DecisionReason::Stopped
            | DecisionReason::Paused
            | DecisionReason::Booting
            | DecisionReason::TurnInProgress
            | DecisionReason::QueuedInput
            | DecisionReason::LivenessOnlyInput
            | DecisionReason::AwaitingTaskResult
            | DecisionReason::AwaitingOperatorInput
            | DecisionReason::AwaitingExternalChange
            | DecisionReason::AwaitingTimer
            | DecisionReason::NoRunnableWork
            | DecisionReason::RunnableWorkAlreadyTicked
            | DecisionReason::AlreadyAsleep => None,
        }
    }
}

/// `work_queue:continue_active:<id>:<revision>` and
/// `work_queue:queued_available:<id>:<revision>`.
pub fn work_queue_tick_key(reason: SystemTickReason, work_item_id: &str, revision: u64) -> String {
    format!("{}{revision}", work_queue_tick_family(reason, work_item_id))
}

/// The family of a work item's tick keys of one reason (every revision).
pub fn work_queue_tick_family(reason: SystemTickReason, work_item_id: &str) -> String {
    format!("work_queue:{}:{work_item_id}:", reason.as_str())
}

/// A tick key's family: the key up to its last segment (the revision or
/// generation). Only a family's newest key is ever looked up, so keeping
/// one per family keeps what is emitted from growing with an agent's life.
pub fn tick_key_family(key: &str) -> &str {
    match key.rfind(':') {
        Some(i) => &key[..=i],
        None => key,
    }
}

/// `wake_hint:<waiting_intent_id or source or "agent">:<generation>`.
pub fn wake_hint_tick_key(hint: &PendingWakeHint) -> String {
    let anchor = hint
        .waiting_intent_id
        .as_deref()
        .or(hint.source.as_deref())
        .unwrap_or("agent");
    format!("wake_hint:{anchor}:{}", hint.generation)
}

/// The control posture the runtime should write after executing
/// `decision`, or `None` to leave it. Control-owned postures (booting,
/// paused, stopped) are never overwritten by scheduler decisions.
pub fn posture_after(current: AgentStatus, decision: &SchedulerDecision) -> Option<AgentStatus> {
    match current {
        AgentStatus::Booting | AgentStatus::Paused | AgentStatus::Stopped => return None,
        AgentStatus::AwakeIdle
        | AgentStatus::AwakeRunning
        | AgentStatus::AwaitingTask
        | AgentStatus::Asleep => {}
    }
    let next = match decision.kind {
        SchedulerDecisionKind::StartModelTurn => AgentStatus::AwakeRunning,
        SchedulerDecisionKind::EmitSystemTick => AgentStatus::AwakeIdle,
        SchedulerDecisionKind::WaitForTask => AgentStatus::AwaitingTask,
        SchedulerDecisionKind::WaitForExternalChange
        | SchedulerDecisionKind::WaitForTimer
        | SchedulerDecisionKind::WaitForOperator
        | SchedulerDecisionKind::Sleep => AgentStatus::Asleep,
        SchedulerDecisionKind::ReduceMessageOnly
        | SchedulerDecisionKind::StayIdle
        | SchedulerDecisionKind::Stop
        | SchedulerDecisionKind::Noop => return None,
    };
    (next != current).then_some(next)
}

/// Decide what happens next.
pub fn decide(p: &SchedulerProjection, input: SchedulerInput) -> SchedulerDecision {
    use SchedulerDecisionKind as K;
    let mut ev = vec![format!("input:{}", input.as_str())];
    let held = |ev: &mut Vec<String>| {
        if let Some(next) = p.pending_inputs().first() {
            ev.push(format!("queued_input_held:{}", next.message_id));
        }
        if p.wake_hint().is_some() {
            ev.push("pending_wake_hint_held".to_owned());
        }
    };
    match p.status {
        AgentStatus::Stopped => {
            ev.push("agent_stopped".to_owned());
            held(&mut ev);
            return SchedulerDecision::new(K::Stop, DecisionReason::Stopped, ev);
        }
        AgentStatus::Paused => {
            ev.push("paused".to_owned());
            held(&mut ev);
            return SchedulerDecision::new(K::Noop, DecisionReason::Paused, ev);
        }
        AgentStatus::Booting => {
            ev.push("booting".to_owned());
            held(&mut ev);
            return SchedulerDecision::new(K::Noop, DecisionReason::Booting, ev);
        }
        AgentStatus::AwakeIdle
        | AgentStatus::AwakeRunning
        | AgentStatus::AwaitingTask
        | AgentStatus::Asleep => {}
    }
    if p.turn_in_progress {
        ev.push("turn_in_progress".to_owned());
        for i in p.operator_interjections() {
            ev.push(format!("operator_interjection_pending:{}", i.message_id));
        }
        return SchedulerDecision::new(K::Noop, DecisionReason::TurnInProgress, ev);
    }
    if let Some(next) = p.pending_inputs().first() {
        return decide_message(p, next, ev);
    }
    if input == SchedulerInput::Message {
        ev.push("message_input_without_pending_message".to_owned());
    }
    ev.push("runtime_idle".to_owned());
    for t in p.tasks.iter().filter(|t| !t.status.is_terminal()) {
        if !task_blocks(t) {
            ev.push(format!("active_task_not_waiting:{}", t.id));
        }
    }
    match p.wake_hint() {
        Some(hint) => {
            let key = wake_hint_tick_key(hint);
            if p.tick_already_emitted(&key) {
                ev.push(format!("duplicate_tick_suppressed:{key}"));
            } else {
                ev.push(format!("pending_wake_hint:{}", hint.reason));
                if !p.runnable_work_items.is_empty() {
                    ev.push("wake_hint_outranks_work_queue".to_owned());
                }
                return tick(SystemTickReason::WakeHint, key, None, ev);
            }
        }
        None => {
            if input == SchedulerInput::WakeHint {
                ev.push("wake_hint_input_without_pending_hint".to_owned());
            }
        }
    }
    if let Some(decision) = work_queue_tick(p, &mut ev) {
        return decision;
    }
    wait_or_sleep(p, ev)
}

fn decide_message(
    p: &SchedulerProjection,
    next: &PendingInput,
    mut ev: Vec<String>,
) -> SchedulerDecision {
    ev.push(format!("message:{}", next.message_id));
    ev.push(format!("message_kind:{}", message_kind_label(next)));
    if next.status == QueueEntryStatus::Dequeued {
        ev.push(format!("replay_dequeued_message:{}", next.message_id));
        for tool in p.tool_executions_for(&next.message_id) {
            ev.push(format!("tool_execution_not_replayed:{tool}"));
        }
    }
    let sources = TriggerSources {
        task_id: next.task_id.as_deref(),
        timer_id: next.timer_id.as_deref(),
        waiting_intent_id: next.waiting_intent_id.as_deref(),
    };
    ev.extend(p.revived_sources(sources));
    let prior = derive_closure(&p.closure_facts_before(sources));
    let resolution = resolve_continuation(&next.trigger, &prior);
    ev.push(format!("continuation:{}", resolution.class.as_str()));
    ev.extend(resolution.evidence);
    let (kind, reason) = if resolution.model_visible {
        (
            SchedulerDecisionKind::StartModelTurn,
            DecisionReason::QueuedInput,
        )
    } else {
        (
            SchedulerDecisionKind::ReduceMessageOnly,
            DecisionReason::LivenessOnlyInput,
        )
    };
    let mut d = SchedulerDecision::new(kind, reason, ev);
    d.model_reentry = resolution.model_visible;
    d.liveness_only = !resolution.model_visible;
    d.message_id = Some(next.message_id.clone());
    d.work_item_id = next.work_item_id.clone();
    d.task_id = next.task_id.clone();
    d
}

fn message_kind_label(p: &PendingInput) -> String {
    serde_json::to_value(p.kind)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default()
}

fn tick(
    reason: SystemTickReason,
    key: String,
    work_item_id: Option<String>,
    mut ev: Vec<String>,
) -> SchedulerDecision {
    ev.push(format!("idempotency_key:{key}"));
    let mut d = SchedulerDecision::new(
        SchedulerDecisionKind::EmitSystemTick,
        DecisionReason::of_tick(reason),
        ev,
    );
    d.liveness_only = reason == SystemTickReason::WakeHint;
    d.work_item_id = work_item_id;
    d.idempotency_key = Some(key);
    d
}

fn work_queue_tick(p: &SchedulerProjection, ev: &mut Vec<String>) -> Option<SchedulerDecision> {
    if let Some(current) = p.current_work_item_id.as_deref() {
        match p.work_item(current) {
            None => ev.push(format!("current_work_item_missing:{current}")),
            Some(item) if item.state == WorkItemSchedulingState::Runnable => {
                let key =
                    work_queue_tick_key(SystemTickReason::ContinueActive, &item.id, item.revision);
                if p.tick_already_emitted(&key) {
                    ev.push(format!("duplicate_tick_suppressed:{key}"));
                    // The current focus owns the work queue: queued items are
                    // not offered while it is runnable.
                    return None;
                }
                ev.push("current_work_item_runnable".to_owned());
                ev.push("no_duplicate_tick_for_generation".to_owned());
                return Some(tick(
                    SystemTickReason::ContinueActive,
                    key,
                    Some(item.id.clone()),
                    std::mem::take(ev),
                ));
            }
            Some(item) => ev.push(format!(
                "current_work_item_{}:{}",
                item.state.as_str(),
                item.id
            )),
        }
    }
    for item in p.queued_runnable() {
        let key = work_queue_tick_key(SystemTickReason::QueuedAvailable, &item.id, item.revision);
        if p.tick_already_emitted(&key) {
            ev.push(format!("duplicate_tick_suppressed:{key}"));
            continue;
        }
        ev.push(format!("queued_work_item_runnable:{}", item.id));
        ev.push("current_work_item_unchanged".to_owned());
        ev.push("no_duplicate_tick_for_generation".to_owned());
        return Some(tick(
            SystemTickReason::QueuedAvailable,
            key,
            Some(item.id.clone()),
            std::mem::take(ev),
        ));
    }
    None
}

fn wait(
    kind: SchedulerDecisionKind,
    reason: WaitingReason,
    work_item_id: Option<String>,
    task_id: Option<String>,
    mut ev: Vec<String>,
) -> SchedulerDecision {
    ev.push(format!("waiting_reason:{}", waiting_reason_label(reason)));
    let reason = match reason {
        WaitingReason::AwaitingOperatorInput => DecisionReason::AwaitingOperatorInput,
        WaitingReason::AwaitingExternalChange => DecisionReason::AwaitingExternalChange,
        WaitingReason::AwaitingTaskResult => DecisionReason::AwaitingTaskResult,
        WaitingReason::AwaitingTimer => DecisionReason::AwaitingTimer,
    };
    let mut d = SchedulerDecision::new(kind, reason, ev);
    d.work_item_id = work_item_id;
    d.task_id = task_id;
    d
}

fn wait_or_sleep(p: &SchedulerProjection, mut ev: Vec<String>) -> SchedulerDecision {
    use SchedulerDecisionKind as K;
    let blocking: Vec<_> = p.tasks.iter().filter(|t| task_blocks(t)).collect();
    if let Some(first) = blocking.first() {
        ev.extend(
            blocking
                .iter()
                .map(|t| format!("blocking_task_active:{}", t.id)),
        );
        let item = task_work_item(first).map(str::to_owned);
        let task = Some(first.id.clone());
        return wait(
            K::WaitForTask,
            WaitingReason::AwaitingTaskResult,
            item,
            task,
            ev,
        );
    }
    let needs_input: Vec<&WorkItemView> = p
        .work_items
        .iter()
        .filter(|w| w.state == WorkItemSchedulingState::WaitingOperator)
        .collect();
    if let Some(first) = needs_input
        .iter()
        .find(|w| p.current_work_item_id.as_deref() == Some(&w.id))
        .or(needs_input.first())
    {
        ev.extend(
            needs_input
                .iter()
                .map(|w| format!("work_item_needs_input:{}", w.id)),
        );
        let item = Some(first.id.clone());
        return wait(
            K::WaitForOperator,
            WaitingReason::AwaitingOperatorInput,
            item,
            None,
            ev,
        );
    }
    let intents: Vec<_> = p
        .intents
        .iter()
        .filter(|i| i.status == WaitingIntentStatus::Active)
        .collect();
    if let Some(first) = intents.first() {
        ev.extend(
            intents
                .iter()
                .map(|i| format!("waiting_intent_active:{}", i.id)),
        );
        let item = intent_work_item(first).map(str::to_owned);
        return wait(
            K::WaitForExternalChange,
            WaitingReason::AwaitingExternalChange,
            item,
            None,
            ev,
        );
    }
    let timers: Vec<_> = p
        .timers
        .iter()
        .filter(|t| t.status == crate::model::waiting::TimerStatus::Active)
        .collect();
    if let Some(first) = timers.first() {
        for t in &timers {
            ev.push(format!("timer_active:{}", t.id));
            if t.fire_at_ms <= p.now_ms() {
                ev.push(format!("timer_due:{}", t.id));
            }
        }
        let item = first.work_item_id.clone();
        return wait(
            K::WaitForTimer,
            WaitingReason::AwaitingTimer,
            item,
            None,
            ev,
        );
    }
    for w in &p.work_items {
        if w.state == WorkItemSchedulingState::Blocked {
            ev.push(format!("work_item_blocked:{}", w.id));
        }
        if w.recheck_due {
            ev.push(format!("work_item_recheck_due:{}", w.id));
        }
    }
    // Runnable work only reaches this point when its tick for the current
    // revision was already emitted (the suppression is in the evidence).
    let sleep_reason = if p.runnable_work_items.is_empty() {
        ev.push("no_runnable_work".to_owned());
        DecisionReason::NoRunnableWork
    } else {
        ev.push("runnable_work_already_ticked".to_owned());
        DecisionReason::RunnableWorkAlreadyTicked
    };
    match p.status {
        AgentStatus::Asleep => {
            SchedulerDecision::new(K::StayIdle, DecisionReason::AlreadyAsleep, ev)
        }
        AgentStatus::Booting
        | AgentStatus::AwakeIdle
        | AgentStatus::AwakeRunning
        | AgentStatus::AwaitingTask
        | AgentStatus::Paused
        | AgentStatus::Stopped => SchedulerDecision::new(K::Sleep, sleep_reason, ev),
    }
}
