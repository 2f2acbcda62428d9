//! What clients send for workspaces (socket, CLI, console and the
//! UseWorkspace tool alike): the use request, read from what an operator
//! typed. Why an operation was refused is `runtime::WorkspaceError`.

use crate::model::workspace::UseWorkspace;

use std::path::Path;

use super::{WorkspaceMode, AGENT_HOME_ID};

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
