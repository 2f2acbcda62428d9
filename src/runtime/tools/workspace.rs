//! UseWorkspace: the model chooses where its file and shell tools act.
//! Exactly one of `path` (a directory: its git repository or itself is
//! attached and used) or `workspace_id` (an attached workspace, or
//! `agent_home`); `mode` direct works in the checkout itself, isolated in
//! a Holon-managed git worktree on its own branch.

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

use super::handler::{Gated, Reach, Tool};
use super::host::ToolHost;
use super::{runtime_error, ToolEnv};
use crate::model::approval::Action;
use crate::model::workspace::UseWorkspace as UseWorkspaceRequest;
use crate::model::workspace::WorkspaceMode;
use crate::runtime::tool_outcome::ToolOutcome;
use crate::runtime::workspace::reach::{Mover, RootMove};

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

fn request(args: &UseWorkspaceArgs) -> UseWorkspaceRequest {
    let blank = |s: &Option<String>| s.clone().filter(|s| !s.trim().is_empty());
    UseWorkspaceRequest {
        path: blank(&args.path),
        workspace_id: blank(&args.workspace_id),
        mode: match args.mode {
            Mode::Direct => WorkspaceMode::Direct,
            Mode::Isolated => WorkspaceMode::Isolated,
        },
    }
}

impl Tool for UseWorkspace {
    const NAME: &'static str = "UseWorkspace";
    const DESCRIPTION: &'static str = "Choose where ExecCommand and ApplyPatch act: a directory (path) or an attached workspace \
         (workspace_id; \"agent_home\" is your own directory). mode=isolated works in a managed git \
         worktree on its own branch. Switching never deletes a workspace; a worktree with changes \
         is kept for review. A directory that is not attached (nor inside where you work now) \
         asks the operator first: the sandbox's writable root moves there; the file system's \
         root, the user's home and system directories are refused.";
    type Args = UseWorkspaceArgs;

    /// Alone, the arguments say nothing of where the agent stands: see
    /// `gate_in`.
    fn gate(&self, _: &UseWorkspaceArgs) -> Gated {
        Gated::No
    }

    /// An attached workspace, the agent's home or a directory inside the
    /// current root changes nothing the sandbox grants: the commands and
    /// patches that follow are gated by that workspace's policy. Any
    /// other directory moves the writable root: it asks, like an escape
    /// (`reach`). One never allowed is refused by the call itself.
    fn gate_in(&self, host: &dyn ToolHost, agent_id: &str, args: &UseWorkspaceArgs) -> Gated {
        match host.root_move(agent_id, &request(args)) {
            Ok(RootMove::Outside { root, anchor }) => Gated::By(Action::Workspace {
                path: RootMove::asked(&root, &anchor),
            }),
            Ok(RootMove::Known | RootMove::Refused(_)) | Err(_) => Gated::No,
        }
    }

    fn reach(&self) -> Reach {
        Reach::Roots
    }

    async fn call(&self, env: &ToolEnv<'_>, args: UseWorkspaceArgs) -> ToolOutcome {
        let req = request(&args);
        let host = env.host;
        let mover = Mover::Model {
            approved: env.approved,
        };
        match host.use_workspace_as(env.agent_id, req, mover).await {
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
