//! UseWorkspace: the model chooses where its file and shell tools act.
//! Exactly one of `path` (a directory: its git repository or itself is
//! attached and used) or `workspace_id` (an attached workspace, or
//! `agent_home`); `mode` direct works in the checkout itself, isolated in
//! a Holon-managed git worktree on its own branch.

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

use super::{parse_args, runtime_error, spec, ToolEnv, ToolOutcome};
use crate::runtime::host::RuntimeHost;
use crate::runtime::provider::{ToolCall, ToolSpec};
use crate::runtime::workspace::UseWorkspace;
use crate::runtime::workspace::WorkspaceMode;

#[derive(Debug, Clone, Copy, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
enum Mode {
    /// Work in the workspace's own checkout.
    #[default]
    Direct,
    /// Work in a managed git worktree on a new branch (parallel-safe;
    /// kept for review when it holds changes).
    Isolated,
}

#[derive(Debug, Deserialize, JsonSchema)]
struct UseWorkspaceArgs {
    /// A directory to work in (absolute, or relative to the current
    /// directory). Give this or workspace_id, not both.
    #[serde(default)]
    path: Option<String>,
    /// An attached workspace's id, or "agent_home" to return to the
    /// agent's own directory. Give this or path, not both.
    #[serde(default)]
    workspace_id: Option<String>,
    #[serde(default, deserialize_with = "super::null_as_default")]
    mode: Mode,
}

pub(super) fn specs() -> Vec<ToolSpec> {
    vec![spec::<UseWorkspaceArgs>(
        "UseWorkspace",
        "Choose where ExecCommand and ApplyPatch act: a directory (path) or an attached workspace \
         (workspace_id; \"agent_home\" is your own directory). mode=isolated works in a managed git \
         worktree on its own branch. Switching never deletes a workspace; a worktree with changes \
         is kept for review.",
    )]
}

pub(super) async fn execute(env: &ToolEnv<'_>, call: &ToolCall) -> Option<ToolOutcome> {
    if call.name != "UseWorkspace" {
        return None;
    }
    let args: UseWorkspaceArgs = match parse_args(call) {
        Ok(a) => a,
        Err(e) => return Some(e),
    };
    let blank = |s: Option<String>| s.filter(|s| !s.trim().is_empty());
    let req = UseWorkspace {
        path: blank(args.path),
        workspace_id: blank(args.workspace_id),
        mode: match args.mode {
            Mode::Direct => WorkspaceMode::Direct,
            Mode::Isolated => WorkspaceMode::Isolated,
        },
    };
    let host = RuntimeHost::from_inner(env.host);
    Some(match host.use_workspace(env.agent_id, req).await {
        Ok(out) => ToolOutcome::ok(json!({
            "ok": true,
            "workspace_id": out.execution.workspace_id,
            "workspace_anchor": out.execution.workspace_anchor,
            "execution_root": out.execution.execution_root,
            "cwd": out.execution.cwd,
            "mode": out.execution.mode,
            "worktree_branch": out.execution.worktree.as_ref().map(|w| &w.worktree_branch),
            "previous_workspace_id": out.previous_workspace_id,
            "note": out.note,
            "retained_worktrees": out.retained.iter().map(|w| &w.worktree_path).collect::<Vec<_>>(),
        })),
        Err(e) => runtime_error(e),
    })
}
