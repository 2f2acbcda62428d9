//! Tasks: background work an agent supervises (a command, a child agent),
//! with its lifecycle status. The transitions between statuses are the
//! runtime's rule (`runtime::tasks::apply_transition`).

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskKind {
    CommandTask,
    ChildAgentTask,
    SleepJob,
    /// Legacy persisted child-agent task; never blocks scheduling.
    SubagentTask,
    /// Legacy persisted child-agent task; never blocks scheduling.
    WorktreeSubagentTask,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskStatus {
    Queued,
    Running,
    Cancelling,
    Completed,
    Failed,
    Cancelled,
    Interrupted,
}

impl TaskStatus {
    pub fn is_terminal(self) -> bool {
        match self {
            TaskStatus::Completed
            | TaskStatus::Failed
            | TaskStatus::Cancelled
            | TaskStatus::Interrupted => true,
            TaskStatus::Queued | TaskStatus::Running | TaskStatus::Cancelling => false,
        }
    }

    /// Position in the monotonic lifecycle; terminal statuses share the top.
    pub fn rank(self) -> u8 {
        match self {
            TaskStatus::Queued => 0,
            TaskStatus::Running => 1,
            TaskStatus::Cancelling => 2,
            TaskStatus::Completed
            | TaskStatus::Failed
            | TaskStatus::Cancelled
            | TaskStatus::Interrupted => 3,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WaitPolicy {
    #[default]
    Background,
    Blocking,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskRecord {
    pub id: String,
    pub agent_id: String,
    pub kind: TaskKind,
    pub status: TaskStatus,
    #[serde(default)]
    pub wait_policy: WaitPolicy,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub work_item_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_message_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<serde_json::Value>,
    pub created_at: String,
    pub updated_at: String,
    /// Why a failed or interrupted task ended so (category `task`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure_artifact: Option<Box<super::usage::FailureArtifact>>,
}

impl TaskRecord {
    /// A command task's details, typed: what it runs, who started it and
    /// how it ended. Members the record lacks (another kind of task, a
    /// record from an older Holon) are empty.
    pub fn command_detail(&self) -> CommandDetail {
        let detail = self.detail.as_ref();
        let mut d: CommandDetail = detail
            .and_then(|d| CommandDetail::deserialize(d).ok())
            .unwrap_or_default();
        let nonblank = |s: Option<String>| s.map(|s| s.trim().to_owned()).filter(|s| !s.is_empty());
        d.cmd = nonblank(d.cmd);
        d.origin = nonblank(d.origin);
        d
    }
}

/// The members of a command task's `detail` a client shows. The record
/// keeps more (output path, process identity); they stay in `detail`.
#[derive(Debug, Clone, Default, PartialEq, serde::Deserialize)]
#[serde(default)]
pub struct CommandDetail {
    /// The command, trimmed; `None` when blank.
    pub cmd: Option<String>,
    /// `operator` or `agent`.
    pub origin: Option<String>,
    pub exit_status: Option<i64>,
    pub duration_ms: Option<u64>,
    pub accepts_input: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
pub struct TaskInputReceipt {
    pub task_id: String,
    pub accepted_input: bool,
    pub input_target: std::borrow::Cow<'static, str>,
    pub bytes_written: usize,
    pub summary_text: String,
}
