//! The waiting plane: waiting intents (durable future conditions, scoped to
//! the agent or a work item), timers, and the pending wake hint. Wake hints
//! are liveness signals; they coalesce and never carry model authority.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WaitingIntentStatus {
    #[default]
    Active,
    Triggered,
    Resolved,
    Cancelled,
    Expired,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WaitingScope {
    #[default]
    Agent,
    WorkItem,
}

/// What a wait is waiting for (the closure's `waitingReason` vocabulary).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WaitingReason {
    AwaitingOperatorInput,
    AwaitingExternalChange,
    AwaitingTaskResult,
    AwaitingTimer,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WaitingIntentRecord {
    pub id: String,
    pub agent_id: String,
    #[serde(default)]
    pub status: WaitingIntentStatus,
    #[serde(default)]
    pub scope: WaitingScope,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub work_item_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// What outside the runtime is awaited (a PR, a pipeline id): a
    /// delivery naming it as `resource` satisfies the wait.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub external_ref: Option<String>,
    /// The trigger a satisfying delivery must come through, when bound.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub external_trigger_id: Option<String>,
    #[serde(default)]
    pub trigger_count: u64,
    pub created_at: String,
    pub updated_at: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TimerStatus {
    #[default]
    Active,
    Fired,
    Completed,
    Cancelled,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TimerRecord {
    pub id: String,
    pub agent_id: String,
    #[serde(default)]
    pub status: TimerStatus,
    /// Epoch milliseconds at which the timer fires.
    pub fire_at_ms: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub work_item_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    pub created_at: String,
    pub updated_at: String,
}

/// A wake hint waiting to become a system tick when the agent is eligible.
/// Later hints coalesce into this one (`coalesced_count`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PendingWakeHint {
    pub reason: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub waiting_intent_id: Option<String>,
    #[serde(default)]
    pub generation: u64,
    #[serde(default)]
    pub coalesced_count: u64,
    pub received_at: String,
    /// Where it came from, when an external trigger delivered it.
    #[serde(default, skip_serializing_if = "HintOrigin::is_empty")]
    pub origin: HintOrigin,
}

/// What a wake hint keeps of the delivery that raised it, so the agent
/// knows which outside system to look at when it wakes. The delivery's
/// body is never kept: only its content type and size.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct HintOrigin {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub external_trigger_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub delivery_mode: Option<String>,
    /// What changed there (`resource` of the delivery).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resource: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content_type: Option<String>,
    #[serde(skip_serializing_if = "is_zero")]
    pub body_bytes: u64,
    /// Every wait the delivery satisfied.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub waiting_intent_ids: Vec<String>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl HintOrigin {
    pub fn is_empty(&self) -> bool {
        *self == HintOrigin::default()
    }
}
