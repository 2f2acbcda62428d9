//! Payloads of workspaces and managed worktrees.

use serde::{Deserialize, Serialize};

use crate::model::workspace::{ExecutionSnapshot, WorktreeSession};

/// `workspace_attached`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorkspaceAttached {
    #[serde(default)]
    pub workspace_id: String,
    #[serde(default)]
    pub anchor: String,
    #[serde(default)]
    pub git: bool,
}

/// `workspace_used`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorkspaceUsed {
    #[serde(default)]
    pub previous_workspace_id: String,
    pub execution: ExecutionSnapshot,
    /// `execution_root_missing` on the fallback after a vanished root.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// `workspace_detached`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorkspaceDetached {
    #[serde(default)]
    pub workspace_id: String,
    #[serde(default)]
    pub anchor: String,
    #[serde(default)]
    pub retained_worktrees: Vec<String>,
}

/// `workspace_missing`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorkspaceMissing {
    #[serde(default)]
    pub workspace_id: String,
    #[serde(default)]
    pub execution_root: String,
    #[serde(default)]
    pub worktree: Option<WorktreeSession>,
    #[serde(default)]
    pub fallback: String,
}

/// `worktree_created`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorktreeCreated {
    #[serde(default)]
    pub workspace_id: String,
    #[serde(default)]
    pub worktree_path: String,
    #[serde(default)]
    pub worktree_branch: String,
    /// Empty on a detached HEAD.
    #[serde(default)]
    pub original_branch: String,
    #[serde(default)]
    pub original_working_directory: String,
}

/// `worktree_removed`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorktreeRemoved {
    #[serde(default)]
    pub workspace_id: String,
    #[serde(default)]
    pub worktree_path: String,
    #[serde(default)]
    pub worktree_branch: String,
    #[serde(default)]
    pub reason: String,
}

/// `worktree_retained`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorktreeRetained {
    #[serde(default)]
    pub workspace_id: String,
    #[serde(default)]
    pub worktree_path: String,
    #[serde(default)]
    pub worktree_branch: String,
    #[serde(default)]
    pub uncommitted_files: usize,
    #[serde(default)]
    pub commits_ahead: usize,
    #[serde(default)]
    pub error: Option<String>,
}
