//! Work item records: the goal-oriented unit of ongoing work. `revision`
//! increments on every new snapshot and is the scheduler's idempotency
//! generation. Focus lives on the agent (`current_work_item_id`), not here;
//! queued, blocked and runnable are derived views.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WorkItemState {
    #[default]
    Open,
    Completed,
}

#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum PlanStatus {
    Draft,
    #[default]
    Ready,
    NeedsInput,
}

#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum TodoState {
    #[default]
    Pending,
    InProgress,
    Completed,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TodoItem {
    pub text: String,
    #[serde(default)]
    pub state: TodoState,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorkItemRecord {
    pub id: String,
    pub agent_id: String,
    #[serde(default = "default_workspace")]
    pub workspace_id: String,
    pub objective: String,
    #[serde(default)]
    pub state: WorkItemState,
    #[serde(default)]
    pub plan_status: PlanStatus,
    #[serde(default)]
    pub todo_list: Vec<TodoItem>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blocked_by: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recheck_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recheck_consumed_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result_summary: Option<String>,
    #[serde(default)]
    pub revision: u64,
    pub created_at: String,
    pub updated_at: String,
}

fn default_workspace() -> String {
    "agent_home".to_owned()
}

/// Why a work-item operation was refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum WorkItemError {
    #[error("no work item `{0}` for this agent")]
    Unknown(String),
    #[error("work item `{0}` is completed; completed work cannot be picked or changed")]
    Completed(String),
    #[error("a work item needs a non-empty objective")]
    EmptyObjective,
}
