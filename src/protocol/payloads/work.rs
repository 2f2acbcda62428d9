//! Payloads of work items, tasks, waits, timers and wake hints.

use serde::{Deserialize, Serialize};

use crate::model::task::{TaskKind, TaskRecord, TaskStatus};
use crate::model::waiting::{PendingWakeHint, TimerRecord, WaitingIntentRecord};
use crate::model::work::WorkItemRecord;
use crate::protocol::views::WorkItemSource;

/// `work_item_created`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorkItemCreated {
    pub work_item: WorkItemRecord,
    pub source: WorkItemSource,
    #[serde(default)]
    pub has_plan: bool,
}

/// `work_item_picked`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorkItemPicked {
    #[serde(default)]
    pub work_item_id: String,
    #[serde(default)]
    pub revision: u64,
    #[serde(default)]
    pub objective: String,
    #[serde(default)]
    pub previous_work_item_id: Option<String>,
    pub source: WorkItemSource,
}

/// `work_item_updated`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorkItemUpdated {
    pub work_item: WorkItemRecord,
    /// `objective`, `plan_status`, `todo_list`, `blocked_by`.
    #[serde(default)]
    pub changed: Vec<String>,
    pub source: WorkItemSource,
}

/// `work_item_completed`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorkItemCompleted {
    pub work_item: WorkItemRecord,
    pub source: WorkItemSource,
}

/// `work_item_recheck_due`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorkItemRecheckDue {
    #[serde(default)]
    pub work_item_id: String,
    #[serde(default)]
    pub blocked_by: Option<String>,
    #[serde(default)]
    pub recheck_at: Option<String>,
}

/// `task_created`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskCreated {
    pub task: TaskRecord,
}

/// `task_status_changed`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskStatusChanged {
    #[serde(default)]
    pub task_id: String,
    pub kind: TaskKind,
    pub from: TaskStatus,
    pub to: TaskStatus,
    #[serde(default)]
    pub summary: Option<String>,
    #[serde(default)]
    pub cmd: Option<String>,
    #[serde(default)]
    pub exit_status: Option<i64>,
    /// The signal that ended the command, when one did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signal: Option<i32>,
    #[serde(default)]
    pub duration_ms: Option<u64>,
    /// The output's tail, once the task ended.
    #[serde(default)]
    pub output_preview: Option<String>,
    #[serde(default)]
    pub output_truncated: Option<bool>,
}

/// `task_output` (reserved: output is read with `task.output`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TaskOutput {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preview: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes: Option<u64>,
}

/// `task_result_queued`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskResultQueued {
    #[serde(default)]
    pub task_id: String,
    #[serde(default)]
    pub message_id: String,
}

/// `task_reattached`: a restarted runtime supervises a command that
/// outlived the runtime before it again.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskReattached {
    #[serde(default)]
    pub task_id: String,
    /// The holder's pid (the command runs under it).
    #[serde(default)]
    pub pid: i32,
    /// Whether its result reaches the agent when it ends.
    #[serde(default)]
    pub result_reenters: bool,
}

/// `waiting_intent_created`, `waiting_intent_triggered`,
/// `waiting_intent_cancelled`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WaitingIntentChanged {
    pub waiting_intent: WaitingIntentRecord,
}

/// `timer_created`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TimerCreated {
    pub timer: TimerRecord,
    #[serde(default)]
    pub delay_ms: u64,
}

/// `timer_fired` (and the reserved `timer_cancelled`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TimerEnded {
    pub timer: TimerRecord,
}

/// `wake_hint_submitted`, `wake_hint_coalesced`, `wake_hint_ignored`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WakeHint {
    #[serde(default)]
    pub reason: String,
    #[serde(default)]
    pub waiting_intent_id: Option<String>,
    /// The agent's pending hint after this one (merged when coalesced).
    #[serde(default)]
    pub pending: Option<PendingWakeHint>,
    /// Why it was ignored; empty otherwise.
    #[serde(default)]
    pub note: String,
}
