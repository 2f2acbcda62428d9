//! An agent's structured working memory: what it is working on, the files
//! it touched, the commands it ran and the last verification, what it
//! waits on and what it last reported. Derived by the runtime at each
//! turn's end from the turn's records (`runtime::context::working`), never
//! written by the model; a revision counts its changes, and the change
//! since the last prompt that showed it is kept as a short delta.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct WorkingMemory {
    /// Counts changes of `current` (0: never derived).
    pub revision: u64,
    /// The revision the agent's last prompt showed.
    pub last_prompted_revision: u64,
    pub current: WorkingState,
    /// What changed since the last prompted revision, a line each.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub pending_delta: Vec<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct WorkingState {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub focus: Option<WorkFocus>,
    /// Files its patches touched, most recent last.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<String>,
    /// Commands it ran, most recent last.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub commands: Vec<CommandNote>,
    /// The last command that built or tested its work.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub verification: Option<CommandNote>,
    /// Tasks whose results it waits for.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub waiting_on: Vec<String>,
    /// The start of its last answer.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_result: Option<String>,
}

/// The work item in focus.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct WorkFocus {
    pub id: String,
    pub objective: String,
    pub plan_status: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub open_todos: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub blocked_by: Option<String>,
}

/// One command and how it ended (`None`: still running, or no status).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct CommandNote {
    pub cmd: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exit_status: Option<i64>,
}
