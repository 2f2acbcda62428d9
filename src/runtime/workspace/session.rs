//! Where a path leads and the life of a managed worktree: discovery of a
//! directory's workspace (its anchor, checkout and cwd), making or
//! re-entering an isolated worktree, and ending a session (a clean
//! worktree is removed with its branch, one with work is kept). Git and
//! the filesystem only; the host records what happened.

use std::path::{Path, PathBuf};

use super::git;
use super::{AgentWorkspaces, WorkspaceBinding, WorktreeSession};
use crate::runtime::WorkspaceError;

/// A directory the operator named: it exists, is a directory, is readable.
pub(crate) fn existing_dir(path: &Path) -> Result<PathBuf, WorkspaceError> {
    let shown = path.display().to_string();
    let real = path.canonicalize().map_err(|_| WorkspaceError::Missing {
        path: shown.clone(),
    })?;
    if !real.is_dir() {
        return Err(WorkspaceError::NotADirectory { path: shown });
    }
    std::fs::read_dir(&real).map_err(|e| WorkspaceError::NotReadable {
        path: shown,
        reason: e.to_string(),
    })?;
    Ok(real)
}

/// Where a path leads: its binding (existing or to attach), and the root
/// and cwd a direct use would bind.
pub struct Discovered {
    pub anchor: PathBuf,
    pub git: bool,
    /// The checkout the path is in: the anchor, or a linked worktree of it.
    pub checkout: PathBuf,
    pub cwd: PathBuf,
}

pub fn discover(path: &Path) -> Result<Discovered, WorkspaceError> {
    let dir = existing_dir(path)?;
    Ok(match git::discover(&dir) {
        Some(repo) => Discovered {
            anchor: repo.main_toplevel.clone(),
            git: true,
            checkout: repo.toplevel.clone(),
            cwd: dir,
        },
        None => Discovered {
            anchor: dir.clone(),
            git: false,
            checkout: dir.clone(),
            cwd: dir,
        },
    })
}

/// The isolated root for a workspace: a retained worktree of this agent is
/// re-entered; otherwise a new one is made under `<data_dir>/worktrees`.
/// `true` when it was made now.
pub fn open_worktree(
    data_dir: &Path,
    agent_id: &str,
    state: &AgentWorkspaces,
    binding: &WorkspaceBinding,
    from_cwd: &Path,
) -> Result<(WorktreeSession, bool), WorkspaceError> {
    if let Some(kept) = state
        .retained_worktrees
        .iter()
        .find(|w| w.workspace_id == binding.workspace_id && Path::new(&w.worktree_path).is_dir())
    {
        return Ok((kept.clone(), false));
    }
    let anchor = Path::new(&binding.anchor);
    if !anchor.is_dir() {
        return Err(WorkspaceError::AnchorGone {
            anchor: binding.anchor.clone(),
        });
    }
    // Asked now, not trusted from the attach (git may have been installed
    // since): "no git", "not a repository" and "no commits" differ.
    let repo = git::worktree_source(anchor)?;
    let short: String = uuid::Uuid::now_v7().simple().to_string()[20..28].to_owned();
    let dir = data_dir
        .join("worktrees")
        .join(agent_id)
        .join(format!("{}-{short}", binding.workspace_id));
    std::fs::create_dir_all(dir.parent().unwrap_or(&dir)).map_err(|e| {
        WorkspaceError::NotReadable {
            path: dir.display().to_string(),
            reason: e.to_string(),
        }
    })?;
    let branch = format!("holon/{agent_id}/{short}");
    // A worktree deleted by hand leaves a stale entry that blocks nothing
    // here (the name is new) but is worth forgetting.
    git::prune_worktrees(anchor);
    git::add_worktree(anchor, &dir, &branch)?;
    let real = dir.canonicalize().unwrap_or(dir);
    Ok((
        WorktreeSession {
            workspace_id: binding.workspace_id.clone(),
            original_working_directory: from_cwd.display().to_string(),
            original_branch: repo.branch.unwrap_or_default(),
            worktree_path: real.display().to_string(),
            worktree_branch: branch,
            base_commit: repo.head.unwrap_or_default(),
            created_at: crate::format_ts(crate::now_ms()),
        },
        true,
    ))
}

/// What ending an isolated session did with its worktree.
pub enum SessionEnd {
    Removed(WorktreeSession),
    Retained(WorktreeSession, git::WorktreeChanges, Option<String>),
}

/// End a managed worktree session: a clean worktree is removed with its
/// branch; one with changes (or that cannot be checked) is kept.
pub fn end_session(anchor: &Path, session: &WorktreeSession) -> SessionEnd {
    let path = Path::new(&session.worktree_path);
    if !path.is_dir() {
        git::prune_worktrees(anchor);
        return SessionEnd::Removed(session.clone());
    }
    // Its own commits count from where it was made (the branch it came
    // from may have moved, or there was none: a detached HEAD).
    let base = match session.base_commit.is_empty() {
        true => &session.original_branch,
        false => &session.base_commit,
    };
    match git::worktree_changes(path, base) {
        Ok(c) if c.is_clean() => {
            match git::remove_worktree(anchor, path, &session.worktree_branch) {
                Ok(()) => SessionEnd::Removed(session.clone()),
                Err(e) => SessionEnd::Retained(session.clone(), c, Some(e.to_string())),
            }
        }
        Ok(c) => SessionEnd::Retained(session.clone(), c, None),
        Err(e) => SessionEnd::Retained(
            session.clone(),
            git::WorktreeChanges::default(),
            Some(e.to_string()),
        ),
    }
}
