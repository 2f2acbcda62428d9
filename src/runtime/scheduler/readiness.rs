//! Work-item readiness: the per-item `WorkItemSchedulingState` and the
//! task and waiting-intent helpers it rests on. Pure functions of typed
//! records. Order: completed; `needs_input` (waiting_operator); an active
//! blocking task bound to the item (waiting_task); an active work-item
//! waiting intent (waiting_external); an active timer bound to the item
//! (waiting_timer); a non-empty `blocked_by` (blocked); else runnable.
//! Terminal tasks, background tasks and legacy subagent tasks never block.

use serde::{Deserialize, Serialize};

use crate::model::task::TaskKind;
use crate::model::task::TaskRecord;
use crate::model::task::WaitPolicy;
use crate::model::waiting::TimerRecord;
use crate::model::waiting::TimerStatus;
use crate::model::waiting::WaitingIntentRecord;
use crate::model::waiting::WaitingIntentStatus;
use crate::model::waiting::WaitingScope;
use crate::model::work::{PlanStatus, WorkItemRecord, WorkItemState};

/// Per-item scheduling state (spec "Work-Item Persistence Foundation").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WorkItemSchedulingState {
    Runnable,
    WaitingOperator,
    WaitingTask,
    WaitingExternal,
    WaitingTimer,
    Blocked,
    Completed,
}

impl WorkItemSchedulingState {
    pub fn as_str(self) -> &'static str {
        match self {
            WorkItemSchedulingState::Runnable => "runnable",
            WorkItemSchedulingState::WaitingOperator => "waiting_operator",
            WorkItemSchedulingState::WaitingTask => "waiting_task",
            WorkItemSchedulingState::WaitingExternal => "waiting_external",
            WorkItemSchedulingState::WaitingTimer => "waiting_timer",
            WorkItemSchedulingState::Blocked => "blocked",
            WorkItemSchedulingState::Completed => "completed",
        }
    }

    /// The older readiness label projected for prompts and listings.
    pub fn readiness(self) -> &'static str {
        match self {
            WorkItemSchedulingState::Runnable => "runnable",
            WorkItemSchedulingState::WaitingOperator => "waiting_for_operator",
            WorkItemSchedulingState::WaitingTask
            | WorkItemSchedulingState::WaitingExternal
            | WorkItemSchedulingState::WaitingTimer
            | WorkItemSchedulingState::Blocked => "blocked",
            WorkItemSchedulingState::Completed => "completed",
        }
    }
}

/// The work item a task belongs to: the first-class field, else the legacy
/// `detail.work_item_id` fallback.
pub fn task_work_item(task: &TaskRecord) -> Option<&str> {
    task.work_item_id
        .as_deref()
        .or(task.detail.work_item_id.as_deref())
}

/// Whether a task with this record would block scheduling while active.
/// Legacy subagent kinds never block.
pub fn task_has_blocking_policy(task: &TaskRecord) -> bool {
    let kind_may_block = match task.kind {
        TaskKind::CommandTask | TaskKind::ChildAgentTask | TaskKind::SleepJob => true,
        TaskKind::SubagentTask | TaskKind::WorktreeSubagentTask => false,
    };
    kind_may_block && task.wait_policy == WaitPolicy::Blocking
}

/// Active (non-terminal) and blocking.
pub fn task_blocks(task: &TaskRecord) -> bool {
    !task.status.is_terminal() && task_has_blocking_policy(task)
}

/// The work item a waiting intent is tied to (work-item scope with an id).
pub fn intent_work_item(intent: &WaitingIntentRecord) -> Option<&str> {
    match intent.scope {
        WaitingScope::WorkItem => intent.work_item_id.as_deref(),
        WaitingScope::Agent => None,
    }
}

/// Derive one item's scheduling state. Specific waits outrank a free-form
/// `blocked_by`; `needs_input` outranks both.
pub fn derive_work_item_state(
    item: &WorkItemRecord,
    tasks: &[TaskRecord],
    intents: &[WaitingIntentRecord],
    timers: &[TimerRecord],
) -> WorkItemSchedulingState {
    let id = item.id.as_str();
    if item.state == WorkItemState::Completed {
        return WorkItemSchedulingState::Completed;
    }
    if item.plan_status == PlanStatus::NeedsInput {
        return WorkItemSchedulingState::WaitingOperator;
    }
    if tasks
        .iter()
        .any(|t| task_blocks(t) && task_work_item(t) == Some(id))
    {
        return WorkItemSchedulingState::WaitingTask;
    }
    if intents
        .iter()
        .any(|i| i.status == WaitingIntentStatus::Active && intent_work_item(i) == Some(id))
    {
        return WorkItemSchedulingState::WaitingExternal;
    }
    if timers
        .iter()
        .any(|t| t.status == TimerStatus::Active && t.work_item_id.as_deref() == Some(id))
    {
        return WorkItemSchedulingState::WaitingTimer;
    }
    if has_blocker(item) {
        return WorkItemSchedulingState::Blocked;
    }
    WorkItemSchedulingState::Runnable
}

/// A non-empty free-form `blocked_by`.
pub(crate) fn has_blocker(item: &WorkItemRecord) -> bool {
    item.blocked_by
        .as_deref()
        .is_some_and(|b| !b.trim().is_empty())
}

/// Parse an RFC 3339 timestamp into epoch milliseconds.
pub fn parse_ts_ms(ts: &str) -> Option<i64> {
    let t = time::OffsetDateTime::parse(ts, &time::format_description::well_known::Rfc3339).ok()?;
    i64::try_from(t.unix_timestamp_nanos() / 1_000_000).ok()
}
