//! What clients send and get back for workspaces (socket, CLI, console
//! and the UseWorkspace tool alike): the use request, its outcome, the
//! listing, and why an operation was refused.

use crate::model::workspace::UseWorkspace;

use std::path::Path;

use super::git::GitError;
use super::{WorkspaceMode, AGENT_HOME_ID};

/// Why a workspace operation was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WorkspaceError {
    #[error("{path} does not exist")]
    Missing { path: String },
    #[error("{path} is not a directory")]
    NotADirectory { path: String },
    #[error("{path} is not readable: {reason}")]
    NotReadable { path: String, reason: String },
    #[error("no workspace `{workspace_id}` is attached to this agent; `holon workspace list` shows them")]
    Unknown { workspace_id: String },
    #[error("give exactly one of `path` or `workspace_id`")]
    Target,
    #[error("`{workspace_id}` is the active workspace: switch first (`holon workspace use agent_home`), then detach it")]
    DetachActive { workspace_id: String },
    #[error("agent_home is the built-in fallback workspace; it cannot be detached")]
    DetachHome,
    #[error("agent_home has no isolated mode; use it directly")]
    HomeIsolated,
    #[error("the workspace anchor {anchor} no longer exists")]
    AnchorGone { anchor: String },
    #[error("refused: {why}; no agent works there")]
    Refused { why: String },
    #[error("{}", unapproved(root, *never))]
    Unapproved { root: String, never: bool },
    #[error("{anchor} was not a git repository when it was attached, so its `.git` may be a command's: Holon makes no isolated worktree of it; attach it again (`holon workspace detach ID`, then `attach`) if the repository is yours")]
    GitSinceAttached { anchor: String },
    #[error("{anchor} is a repository inside {outer}, whose files a command can write: Holon makes no isolated worktree of it (its git would trust what a command wrote); work in it directly")]
    NestedIsolated { anchor: String, outer: String },
    #[error(transparent)]
    Git(#[from] GitError),
}

fn unapproved(root: &str, never: bool) -> String {
    match never {
        true => format!(
            "refused: {root} is not an attached workspace, and this workspace's approval mode is \
             `never`, so no one is asked to let the sandbox's writable root move there; ask the \
             operator to attach it (`holon workspace add PATH`)"
        ),
        false => format!(
            "not moved: {root} is not an attached workspace and the operator has not approved \
             this move (or the directory changed since they did); call UseWorkspace again and \
             the operator is asked"
        ),
    }
}

impl UseWorkspace {
    /// What an operator typed after `use` (CLI or console): `agent_home`,
    /// an id as Holon makes them (`ws_…`, with no directory of that name
    /// in `base`), or a directory, made absolute against `base` (where the
    /// command or console runs) so the runtime's own cwd never matters.
    pub fn from_target(target: &str, mode: WorkspaceMode, base: &Path) -> UseWorkspace {
        let path = base.join(target);
        let is_id = target == AGENT_HOME_ID
            || (target.starts_with("ws_") && !target.contains('/') && !path.exists());
        match is_id {
            true => UseWorkspace {
                workspace_id: Some(target.to_owned()),
                path: None,
                mode,
            },
            false => UseWorkspace {
                path: Some(path.canonicalize().unwrap_or(path).display().to_string()),
                workspace_id: None,
                mode,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_use_target_is_an_id_or_a_directory_made_absolute() {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().canonicalize().unwrap();
        std::fs::create_dir_all(base.join("ws_named_dir")).unwrap();
        let t = |s: &str| UseWorkspace::from_target(s, WorkspaceMode::Direct, &base);
        assert_eq!(t("agent_home").workspace_id.as_deref(), Some("agent_home"));
        assert_eq!(
            t("ws_repo_1a2b").workspace_id.as_deref(),
            Some("ws_repo_1a2b")
        );
        let here = base.display().to_string();
        assert_eq!(t(".").path.as_deref(), Some(here.as_str()));
        // A directory that looks like an id is still the directory.
        assert_eq!(
            t("ws_named_dir").path,
            Some(base.join("ws_named_dir").display().to_string())
        );
        assert_eq!(t("/abs/x").path.as_deref(), Some("/abs/x"));
    }
}
