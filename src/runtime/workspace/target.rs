//! Where a workspace change goes (`Target`): an attached workspace by its
//! id, or a path discovered and held to where the model may move the
//! writable root; and whether an isolated worktree may be made there.
//! Checked before anything is written (`ops.rs` writes the switch).

use std::path::{Path, PathBuf};

use crate::model::approval::Approval;
use crate::model::workspace::WorkspaceBinding;
use crate::model::workspace::{AgentWorkspaces, ExecutionProfile, ExecutionSnapshot};
use crate::runtime::handle::RuntimeHost;
use crate::runtime::sandbox;
use crate::runtime::workspace as ws;
use crate::runtime::workspace::reach::{self, Mover, RootMove};
use crate::runtime::workspace::session::discover;
use crate::runtime::RuntimeError;
use crate::runtime::WorkspaceError;

/// Where a workspace change goes: its binding (`new_binding` when made
/// now), execution root and cwd, and whether the root is a git worktree
/// Holon adopts without managing.
pub(super) struct Target {
    pub(super) binding: WorkspaceBinding,
    pub(super) new_binding: bool,
    pub(super) root: PathBuf,
    pub(super) cwd: PathBuf,
    pub(super) adopted: bool,
}

/// An attached workspace the agent returns to, by id: its directory must
/// still be there and, for the model, still be the one attached.
pub(super) fn attached_target(
    state: &AgentWorkspaces,
    id: &str,
    mover: Mover<'_>,
    current: &ExecutionSnapshot,
) -> Result<Target, RuntimeError> {
    let b = state.binding(id).cloned().ok_or_else(|| {
        RuntimeError::Workspace(WorkspaceError::Unknown {
            workspace_id: id.to_owned(),
        })
    })?;
    let anchor = PathBuf::from(&b.anchor);
    if !anchor.is_dir() {
        return Err(RuntimeError::Workspace(WorkspaceError::AnchorGone {
            anchor: b.anchor.clone(),
        }));
    }
    // The model returns only to the directory that was
    // attached, not to a link a command put in its place.
    if matches!(mover, Mover::Model { .. }) && !reach::binding_holds(&b) {
        return Err(RuntimeError::Workspace(WorkspaceError::Refused {
            why: format!(
                "{} is no longer the directory that was attached (a link in its \
                 place?); the operator can attach it again",
                b.anchor
            ),
        }));
    }
    // Returning to the root already active keeps the cwd.
    let cwd = if current.execution_root == b.anchor {
        PathBuf::from(&current.cwd)
    } else {
        anchor.clone()
    };
    Ok(Target {
        binding: b,
        new_binding: false,
        root: anchor,
        cwd,
        adopted: false,
    })
}

impl RuntimeHost {
    /// A path the agent moves to: discovered, held to where the model may
    /// move the writable root (`reach::classify`, on this very discovery),
    /// and bound (a binding made when the directory is new).
    pub(super) fn path_target(
        &self,
        agent_id: &str,
        state: &AgentWorkspaces,
        p: &str,
        mover: Mover<'_>,
        current: &ExecutionSnapshot,
    ) -> Result<Target, RuntimeError> {
        let path = PathBuf::from(p);
        let path = if path.is_relative() {
            // Relative to where the agent is now.
            Path::new(&current.cwd).join(path)
        } else {
            path
        };
        let found = discover(&path).map_err(RuntimeError::Workspace)?;
        // What becomes the root must be what was just weighed: the
        // same canonical directory, no link swapped in since.
        if matches!(mover, Mover::Model { .. })
            && sandbox::pin_dir(&found.checkout).map(|p| PathBuf::from(p.path))
                != Some(found.checkout.clone())
        {
            return Err(RuntimeError::Workspace(WorkspaceError::Refused {
                why: format!(
                    "{} changed while it was being chosen (a link in its place?)",
                    found.checkout.display()
                ),
            }));
        }
        if let Mover::Model { approved } = mover {
            let sandboxed = current.policy.backend == ExecutionProfile::Sandboxed;
            let never = current.policy.approval.approval == Approval::Never;
            match self.inner.root_move_to(agent_id, &found)? {
                RootMove::Known => {}
                RootMove::Refused(why) => {
                    return Err(RuntimeError::Workspace(WorkspaceError::Refused { why }))
                }
                // Unconfined, a command reaches it already.
                RootMove::Outside { .. } if !sandboxed => {}
                RootMove::Outside { root, anchor } => {
                    let asked = RootMove::asked(&root, &anchor);
                    let summary =
                        crate::model::approval::approval_text(&reach::workspace_summary(&asked));
                    if approved != Some(summary.as_str()) {
                        return Err(RuntimeError::Workspace(WorkspaceError::Unapproved {
                            root: asked,
                            never,
                        }));
                    }
                }
            }
        }
        let anchor = found.anchor.display().to_string();
        let (b, new) = match state.attached.iter().find(|b| b.anchor == anchor) {
            Some(b) => (b.clone(), false),
            None => (
                WorkspaceBinding {
                    workspace_id: ws::workspace_id_for(&found.anchor),
                    anchor,
                    git: found.git,
                    attached_at: crate::format_ts(crate::now_ms()),
                    pin: sandbox::pin_dir(&found.anchor),
                },
                true,
            ),
        };
        let adopted = found.checkout != found.anchor;
        Ok(Target {
            binding: b,
            new_binding: new,
            root: found.checkout,
            cwd: found.cwd,
            adopted,
        })
    }

    /// Whether the attached workspace `binding` may be given an isolated
    /// worktree: refused for a directory that became a repository after it
    /// was attached, and for a repository nested in a directory commands
    /// can write.
    pub(super) fn may_isolate(
        &self,
        binding: &WorkspaceBinding,
        new_binding: bool,
        state: &AgentWorkspaces,
        home: &Path,
    ) -> Result<(), RuntimeError> {
        // A directory attached before it was a repository: a command may
        // have made its `.git` since. (One that still is none is told so
        // when the worktree is made.)
        if !binding.git && !new_binding && ws::git::discover(Path::new(&binding.anchor)).is_some() {
            return Err(RuntimeError::Workspace(WorkspaceError::GitSinceAttached {
                anchor: binding.anchor.clone(),
            }));
        }
        // A repository inside a directory commands can write (another
        // workspace, the agent's home, Holon's data) may have been made
        // by one: its config and hooks are a command's.
        let canon = |p: &Path| p.canonicalize().unwrap_or_else(|_| p.to_path_buf());
        let anchor = canon(Path::new(&binding.anchor));
        let outer = state
            .attached
            .iter()
            .map(|b| canon(Path::new(&b.anchor)))
            .filter(|a| *a != anchor)
            .chain([canon(home), canon(&self.inner.config.data_dir)])
            .find(|outer| anchor.starts_with(outer));
        if let Some(outer) = outer {
            return Err(RuntimeError::Workspace(WorkspaceError::NestedIsolated {
                anchor: binding.anchor.clone(),
                outer: outer.display().to_string(),
            }));
        }
        Ok(())
    }
}
