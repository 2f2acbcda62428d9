//! UseWorkspace: the model chooses where its file and shell tools act.
//! Exactly one of `path` (a directory: its git repository or itself is
//! attached and used) or `workspace_id` (an attached workspace, or
//! `agent_home`); `mode` direct works in the checkout itself, isolated in
//! a Holon-managed git worktree on its own branch.

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

use super::handler::{Gated, Reach, Tool};
use super::{runtime_error, ToolEnv, ToolOutcome};
use crate::runtime::host::RuntimeHost;
use crate::runtime::workspace::UseWorkspace as UseWorkspaceRequest;
use crate::runtime::workspace::WorkspaceMode;

#[derive(Debug, Clone, Copy, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub(super) enum Mode {
    /// Work in the workspace's own checkout.
    #[default]
    Direct,
    /// Work in a managed git worktree on a new branch (parallel-safe;
    /// kept for review when it holds changes).
    Isolated,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub(super) struct UseWorkspaceArgs {
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

pub(super) struct UseWorkspace;

impl Tool for UseWorkspace {
    const NAME: &'static str = "UseWorkspace";
    const DESCRIPTION: &'static str = "Choose where ExecCommand and ApplyPatch act: a directory (path) or an attached workspace \
         (workspace_id; \"agent_home\" is your own directory). mode=isolated works in a managed git \
         worktree on its own branch. Switching never deletes a workspace; a worktree with changes \
         is kept for review.";
    type Args = UseWorkspaceArgs;

    /// Choosing where to work changes nothing there: the commands and
    /// patches that follow are gated by that workspace's policy. A
    /// managed worktree is Holon's own operation (`git worktree add`).
    fn gate(&self, _: &UseWorkspaceArgs) -> Gated {
        Gated::No
    }

    fn reach(&self) -> Reach {
        Reach::Runtime
    }

    async fn call(&self, env: &ToolEnv<'_>, args: UseWorkspaceArgs) -> ToolOutcome {
        let blank = |s: Option<String>| s.filter(|s| !s.trim().is_empty());
        let req = UseWorkspaceRequest {
            path: blank(args.path),
            workspace_id: blank(args.workspace_id),
            mode: match args.mode {
                Mode::Direct => WorkspaceMode::Direct,
                Mode::Isolated => WorkspaceMode::Isolated,
            },
        };
        let host = RuntimeHost::from_inner(env.host);
        match host.use_workspace(env.agent_id, req).await {
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
        }
    }
}
