//! Workspace operations: attach, use (direct or isolated), detach, list,
//! and recovery of a root that vanished. Discovery and git run first,
//! outside any transaction; the result is then written in one store
//! transaction with its events. Operations are serialised by one lock so
//! two callers cannot race to make the same worktree.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::json;

use super::{agent_in, HostInner, RuntimeHost};
use crate::runtime::agent::AgentRecord;
use crate::runtime::events::EventKind;
use crate::runtime::workspace::git::{self, GitError};
use crate::runtime::workspace::{
    self as ws, ActiveWorkspace, AgentWorkspaces, ExecutionSnapshot, ProjectionKind,
    WorkspaceBinding, WorkspaceMode, WorktreeSession, AGENT_HOME_ID,
};
use crate::runtime::RuntimeError;
use crate::store::{NewEvent, Provenance, StoreError, WriteCtx};

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
    #[error(transparent)]
    Git(#[from] GitError),
}

/// What `UseWorkspace` asks for (tool, socket and CLI alike).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct UseWorkspace {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workspace_id: Option<String>,
    #[serde(default)]
    pub mode: WorkspaceMode,
}

/// The answer to a use: the new snapshot, plus guidance when a worktree
/// path was adopted rather than managed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UseOutcome {
    pub execution: ExecutionSnapshot,
    pub previous_workspace_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// Managed worktrees kept because they hold changes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub retained: Vec<WorktreeSession>,
}

/// `workspace.list`: the bindings, which one is active, and the snapshot.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorkspaceList {
    pub agent_id: String,
    pub active_workspace_id: String,
    pub execution: ExecutionSnapshot,
    pub attached: Vec<WorkspaceEntry>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub retained_worktrees: Vec<WorktreeSession>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorkspaceEntry {
    #[serde(flatten)]
    pub binding: WorkspaceBinding,
    pub active: bool,
    /// Whether the anchor directory still exists.
    pub present: bool,
    /// Other agents working directly in this workspace's checkout
    /// (occupancy: isolated mode is the way to work in parallel).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub direct_users: Vec<String>,
}

fn rejected(e: WorkspaceError) -> StoreError {
    StoreError::rejected(RuntimeError::Workspace(e))
}

fn event(
    tx: &mut WriteCtx<'_>,
    agent_id: &str,
    kind: EventKind,
    payload: serde_json::Value,
) -> Result<(), StoreError> {
    tx.append_event(NewEvent {
        agent_id: agent_id.to_owned(),
        kind: kind.as_str(),
        provenance: Provenance::default(),
        payload,
    })
    .map(|_| ())
}

/// A directory the operator named: it exists, is a directory, is readable.
fn existing_dir(path: &Path) -> Result<PathBuf, WorkspaceError> {
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
struct Discovered {
    anchor: PathBuf,
    git: bool,
    /// The checkout the path is in: the anchor, or a linked worktree of it.
    checkout: PathBuf,
    cwd: PathBuf,
}

fn discover(path: &Path) -> Result<Discovered, WorkspaceError> {
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
/// re-entered; otherwise a new one is made under the data dir.
fn isolated_root(
    inner: &HostInner,
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
    // No `binding.git` shortcut: git may have been installed since the
    // attach; `add_worktree` tells "no git", "not a repository" and "no
    // commits" apart.
    let anchor = Path::new(&binding.anchor);
    if !anchor.is_dir() {
        return Err(WorkspaceError::AnchorGone {
            anchor: binding.anchor.clone(),
        });
    }
    let short: String = uuid::Uuid::now_v7().simple().to_string()[20..28].to_owned();
    let dir = inner
        .config
        .data_dir
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
    let original_branch = git::discover(anchor)
        .and_then(|r| r.branch)
        .unwrap_or_default();
    let base_commit = git::head_commit(anchor).unwrap_or_default();
    git::add_worktree(anchor, &dir, &branch)?;
    let real = dir.canonicalize().unwrap_or(dir);
    Ok((
        WorktreeSession {
            workspace_id: binding.workspace_id.clone(),
            original_working_directory: from_cwd.display().to_string(),
            original_branch,
            worktree_path: real.display().to_string(),
            worktree_branch: branch,
            base_commit,
            created_at: crate::format_ts(crate::now_ms()),
        },
        true,
    ))
}

/// What ending an isolated session did with its worktree.
enum SessionEnd {
    Removed(WorktreeSession),
    Retained(WorktreeSession, git::WorktreeChanges, Option<String>),
}

/// End a managed worktree session: a clean worktree is removed with its
/// branch; one with changes (or that cannot be checked) is kept.
fn end_session(anchor: &Path, session: &WorktreeSession) -> SessionEnd {
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

impl RuntimeHost {
    fn agent_record(&self, agent_id: &str) -> Result<AgentRecord, RuntimeError> {
        self.inner
            .store
            .read()?
            .agent(agent_id)?
            .ok_or_else(|| RuntimeError::UnknownAgent {
                agent_id: agent_id.to_owned(),
            })
    }

    /// The agent's execution snapshot.
    pub fn execution_snapshot(&self, agent_id: &str) -> Result<ExecutionSnapshot, RuntimeError> {
        let agent = self.agent_record(agent_id)?;
        Ok(self.inner.snapshot_of(&agent))
    }

    pub fn list_workspaces(&self, agent_id: &str) -> Result<WorkspaceList, RuntimeError> {
        let rx = self.inner.store.read()?;
        let agent: AgentRecord = rx
            .agent(agent_id)?
            .ok_or_else(|| RuntimeError::UnknownAgent {
                agent_id: agent_id.to_owned(),
            })?;
        let others: Vec<AgentRecord> = rx.agents()?;
        let state = &agent.workspaces;
        let attached = state
            .attached
            .iter()
            .map(|b| WorkspaceEntry {
                binding: b.clone(),
                active: state.active_id() == b.workspace_id,
                present: Path::new(&b.anchor).is_dir(),
                direct_users: direct_users(&others, agent_id, &b.anchor),
            })
            .collect();
        Ok(WorkspaceList {
            agent_id: agent_id.to_owned(),
            active_workspace_id: state.active_id().to_owned(),
            execution: self.inner.snapshot_of(&agent),
            attached,
            retained_worktrees: state.retained_worktrees.clone(),
        })
    }

    /// Attach a directory (its git top-level when inside a repository)
    /// without making it active. Attaching twice returns the binding.
    pub async fn attach_workspace(
        &self,
        agent_id: &str,
        path: &Path,
    ) -> Result<WorkspaceBinding, RuntimeError> {
        let _guard = self.inner.workspace_lock.lock().await;
        // A relative path is relative to where the agent is now.
        let path = Path::new(&self.execution_snapshot(agent_id)?.cwd).join(path);
        let found = discover(&path).map_err(RuntimeError::Workspace)?;
        let id = agent_id.to_owned();
        let binding = self
            .inner
            .store
            .write(move |tx| {
                let mut agent = agent_in(tx, &id)?;
                let b = attach_in(tx, &mut agent, &found.anchor, found.git)?;
                tx.put_agent(&id, &agent)?;
                Ok(b)
            })
            .await?;
        Ok(binding)
    }

    /// Make a workspace active (spec: UseWorkspace).
    pub async fn use_workspace(
        &self,
        agent_id: &str,
        req: UseWorkspace,
    ) -> Result<UseOutcome, RuntimeError> {
        let _guard = self.inner.workspace_lock.lock().await;
        let agent = self.agent_record(agent_id)?;
        let state = agent.workspaces.clone();
        let home = self.inner.agent_home(agent_id);
        let current = ws::snapshot(&state, &home);
        let wsr = RuntimeError::Workspace;

        // Resolve the target: its binding (maybe new), root, cwd, mode.
        let (binding, new_binding, root, cwd, adopted) = match (&req.path, &req.workspace_id) {
            (Some(_), Some(_)) | (None, None) => return Err(wsr(WorkspaceError::Target)),
            (None, Some(id)) if id == AGENT_HOME_ID => {
                if req.mode == WorkspaceMode::Isolated {
                    return Err(wsr(WorkspaceError::HomeIsolated));
                }
                return self.activate(agent_id, &state, None, None, false).await;
            }
            (None, Some(id)) => {
                let b = state.binding(id).cloned().ok_or_else(|| {
                    wsr(WorkspaceError::Unknown {
                        workspace_id: id.clone(),
                    })
                })?;
                let anchor = PathBuf::from(&b.anchor);
                if !anchor.is_dir() {
                    return Err(wsr(WorkspaceError::AnchorGone {
                        anchor: b.anchor.clone(),
                    }));
                }
                // Returning to the root already active keeps the cwd.
                let cwd = if current.execution_root == b.anchor {
                    PathBuf::from(&current.cwd)
                } else {
                    anchor.clone()
                };
                (b, false, anchor, cwd, false)
            }
            (Some(p), None) => {
                let path = PathBuf::from(p);
                let path = if path.is_relative() {
                    // Relative to where the agent is now.
                    Path::new(&current.cwd).join(path)
                } else {
                    path
                };
                let found = discover(&path).map_err(wsr)?;
                let anchor = found.anchor.display().to_string();
                let (b, new) = match state.attached.iter().find(|b| b.anchor == anchor) {
                    Some(b) => (b.clone(), false),
                    None => (
                        WorkspaceBinding {
                            workspace_id: ws::workspace_id_for(&found.anchor),
                            anchor,
                            git: found.git,
                            attached_at: crate::format_ts(crate::now_ms()),
                        },
                        true,
                    ),
                };
                let adopted = found.checkout != found.anchor;
                (b, new, found.checkout, found.cwd, adopted)
            }
        };

        if req.mode == WorkspaceMode::Direct || adopted {
            let active = ActiveWorkspace {
                workspace_id: binding.workspace_id.clone(),
                execution_root: root.display().to_string(),
                cwd: cwd.display().to_string(),
                projection_kind: ProjectionKind::CanonicalRoot,
                mode: WorkspaceMode::Direct,
                worktree: None,
                adopted_worktree: adopted,
            };
            let mut out = self
                .activate(
                    agent_id,
                    &state,
                    Some(active),
                    new_binding.then_some(binding.clone()),
                    false,
                )
                .await?;
            if adopted {
                out.note = Some(format!(
                    "{} is an existing git worktree of {}: it is used as the execution root but \
                     Holon does not manage it; for a runtime-managed worktree use mode = \
                     \"isolated\" with workspace_id = \"{}\"",
                    root.display(),
                    binding.anchor,
                    binding.workspace_id
                ));
            }
            return Ok(out);
        }

        // Isolated: already in this workspace's worktree is a no-op.
        if let Some(a) = &state.active {
            if a.workspace_id == binding.workspace_id && a.worktree.is_some() {
                return Ok(UseOutcome {
                    execution: current.clone(),
                    previous_workspace_id: current.workspace_id.clone(),
                    note: Some("already working in this workspace's isolated worktree".into()),
                    retained: vec![],
                });
            }
        }
        let inner = std::sync::Arc::clone(&self.inner);
        let (aid, b, from) = (agent_id.to_owned(), binding.clone(), cwd.clone());
        let st = state.clone();
        let (session, created) =
            tokio::task::spawn_blocking(move || isolated_root(&inner, &aid, &st, &b, &from))
                .await
                .map_err(|e| {
                    RuntimeError::Invalid(format!("worktree creation did not finish: {e}"))
                })?
                .map_err(wsr)?;
        let wt_root = PathBuf::from(&session.worktree_path);
        let wt_cwd = ws::carry_cwd(&root, &cwd, &wt_root);
        let active = ActiveWorkspace {
            workspace_id: binding.workspace_id.clone(),
            execution_root: session.worktree_path.clone(),
            cwd: wt_cwd.display().to_string(),
            projection_kind: ProjectionKind::GitWorktreeRoot,
            mode: WorkspaceMode::Isolated,
            worktree: Some(session.clone()),
            adopted_worktree: false,
        };
        let result = self
            .activate(
                agent_id,
                &state,
                Some(active),
                new_binding.then_some(binding.clone()),
                created,
            )
            .await;
        if result.is_err() && created {
            // Not recorded: undo the worktree so nothing is left untracked.
            let (anchor, s) = (PathBuf::from(&binding.anchor), session);
            let _ = tokio::task::spawn_blocking(move || end_session(&anchor, &s)).await;
        }
        result
    }

    /// Write the switch: end the previous managed session (remove clean,
    /// retain changed), bind the new active workspace, record events.
    async fn activate(
        &self,
        agent_id: &str,
        before: &AgentWorkspaces,
        active: Option<ActiveWorkspace>,
        attach: Option<WorkspaceBinding>,
        created_worktree: bool,
    ) -> Result<UseOutcome, RuntimeError> {
        // Leaving a managed worktree (for anything but itself) ends it.
        let leaving = before.active.as_ref().and_then(|a| {
            let same = active
                .as_ref()
                .and_then(|n| n.worktree.as_ref())
                .zip(a.worktree.as_ref())
                .is_some_and(|(n, o)| n.worktree_path == o.worktree_path);
            (!same).then(|| a.worktree.clone()).flatten()
        });
        let ended = match leaving {
            Some(session) => {
                let anchor = before
                    .binding(&session.workspace_id)
                    .map(|b| PathBuf::from(&b.anchor))
                    .unwrap_or_default();
                Some(
                    tokio::task::spawn_blocking(move || end_session(&anchor, &session))
                        .await
                        .map_err(|e| {
                            RuntimeError::Invalid(format!("worktree cleanup did not finish: {e}"))
                        })?,
                )
            }
            None => None,
        };
        let id = agent_id.to_owned();
        let home = self.inner.agent_home(agent_id);
        let retained_now = match &ended {
            Some(SessionEnd::Retained(s, ..)) => vec![s.clone()],
            _ => vec![],
        };
        let (snapshot, previous) = self
            .inner
            .store
            .write(move |tx| {
                let mut agent = agent_in(tx, &id)?;
                let previous = agent.workspaces.active_id().to_owned();
                if let Some(b) = &attach {
                    attach_in(tx, &mut agent, Path::new(&b.anchor), b.git)?;
                }
                let state = &mut agent.workspaces;
                match &ended {
                    Some(SessionEnd::Removed(s)) => {
                        state
                            .retained_worktrees
                            .retain(|w| w.worktree_path != s.worktree_path);
                        event(
                            tx,
                            &id,
                            EventKind::WorktreeRemoved,
                            json!({
                                "workspace_id": s.workspace_id, "worktree_path": s.worktree_path,
                                "worktree_branch": s.worktree_branch, "reason": "clean",
                            }),
                        )?;
                    }
                    Some(SessionEnd::Retained(s, changes, error)) => {
                        if !state
                            .retained_worktrees
                            .iter()
                            .any(|w| w.worktree_path == s.worktree_path)
                        {
                            state.retained_worktrees.push(s.clone());
                        }
                        event(
                            tx,
                            &id,
                            EventKind::WorktreeRetained,
                            json!({
                                "workspace_id": s.workspace_id, "worktree_path": s.worktree_path,
                                "worktree_branch": s.worktree_branch,
                                "uncommitted_files": changes.uncommitted,
                                "commits_ahead": changes.commits_ahead,
                                "error": error,
                            }),
                        )?;
                    }
                    None => {}
                }
                if let Some(wt) = active.as_ref().and_then(|a| a.worktree.as_ref()) {
                    // Re-entering a retained worktree makes it active again.
                    state
                        .retained_worktrees
                        .retain(|w| w.worktree_path != wt.worktree_path);
                    if created_worktree {
                        event(
                            tx,
                            &id,
                            EventKind::WorktreeCreated,
                            json!({
                                "workspace_id": wt.workspace_id, "worktree_path": wt.worktree_path,
                                "worktree_branch": wt.worktree_branch,
                                "original_branch": wt.original_branch,
                                "original_working_directory": wt.original_working_directory,
                            }),
                        )?;
                    }
                }
                state.active = active.clone();
                let snap = ws::snapshot(state, &home);
                event(
                    tx,
                    &id,
                    EventKind::WorkspaceUsed,
                    json!({
                        "previous_workspace_id": previous,
                        "execution": snap,
                    }),
                )?;
                tx.put_agent(&id, &agent)?;
                Ok((snap, previous))
            })
            .await?;
        self.inner.guidance_watch.watch_agent(
            agent_id,
            &self.inner.agent_home(agent_id),
            Path::new(&snapshot.workspace_anchor),
        );
        Ok(UseOutcome {
            execution: snapshot,
            previous_workspace_id: previous,
            note: None,
            retained: retained_now,
        })
    }

    /// Remove a binding from the agent (spec: DetachWorkspace). Never
    /// deletes a directory or a worktree.
    pub async fn detach_workspace(
        &self,
        agent_id: &str,
        workspace_id: &str,
    ) -> Result<WorkspaceBinding, RuntimeError> {
        let _guard = self.inner.workspace_lock.lock().await;
        let (id, wid) = (agent_id.to_owned(), workspace_id.to_owned());
        Ok(self
            .inner
            .store
            .write(move |tx| {
                let mut agent = agent_in(tx, &id)?;
                if wid == AGENT_HOME_ID {
                    return Err(rejected(WorkspaceError::DetachHome));
                }
                if agent.workspaces.active_id() == wid {
                    return Err(rejected(WorkspaceError::DetachActive {
                        workspace_id: wid.clone(),
                    }));
                }
                let Some(pos) = agent
                    .workspaces
                    .attached
                    .iter()
                    .position(|b| b.workspace_id == wid)
                else {
                    return Err(rejected(WorkspaceError::Unknown {
                        workspace_id: wid.clone(),
                    }));
                };
                let b = agent.workspaces.attached.remove(pos);
                event(
                    tx,
                    &id,
                    EventKind::WorkspaceDetached,
                    json!({
                        "workspace_id": b.workspace_id, "anchor": b.anchor,
                        "retained_worktrees": agent.workspaces.retained_worktrees.iter()
                            .filter(|w| w.workspace_id == b.workspace_id)
                            .map(|w| &w.worktree_path).collect::<Vec<_>>(),
                    }),
                )?;
                tx.put_agent(&id, &agent)?;
                Ok(b)
            })
            .await?)
    }

    /// At start: an active root whose directory is gone (deleted by hand)
    /// falls back to AgentHome with an event; the binding and any
    /// retained-worktree record are kept.
    pub(super) async fn recover_workspace(&self, agent_id: &str) -> Result<(), RuntimeError> {
        let agent = self.agent_record(agent_id)?;
        let Some(active) = &agent.workspaces.active else {
            return Ok(());
        };
        if Path::new(&active.execution_root).is_dir() {
            return Ok(());
        }
        let id = agent_id.to_owned();
        let home = self.inner.agent_home(agent_id);
        self.inner
            .store
            .write(move |tx| {
                let mut agent = agent_in(tx, &id)?;
                let Some(missing) = agent.workspaces.active.take() else {
                    return Ok(());
                };
                event(
                    tx,
                    &id,
                    EventKind::WorkspaceMissing,
                    json!({
                        "workspace_id": missing.workspace_id,
                        "execution_root": missing.execution_root,
                        "worktree": missing.worktree,
                        "fallback": AGENT_HOME_ID,
                    }),
                )?;
                let snap = ws::snapshot(&agent.workspaces, &home);
                event(
                    tx,
                    &id,
                    EventKind::WorkspaceUsed,
                    json!({
                        "previous_workspace_id": missing.workspace_id,
                        "execution": snap, "reason": "execution_root_missing",
                    }),
                )?;
                tx.put_agent(&id, &agent)
            })
            .await?;
        Ok(())
    }
}

/// Add a binding for `anchor` unless one exists; records
/// `workspace_attached` when new.
fn attach_in(
    tx: &mut WriteCtx<'_>,
    agent: &mut AgentRecord,
    anchor: &Path,
    git: bool,
) -> Result<WorkspaceBinding, StoreError> {
    let anchor_s = anchor.display().to_string();
    if let Some(b) = agent
        .workspaces
        .attached
        .iter()
        .find(|b| b.anchor == anchor_s)
    {
        return Ok(b.clone());
    }
    let b = WorkspaceBinding {
        workspace_id: ws::workspace_id_for(anchor),
        anchor: anchor_s,
        git,
        attached_at: tx.now_ts(),
    };
    agent.workspaces.attached.push(b.clone());
    event(
        tx,
        &agent.id,
        EventKind::WorkspaceAttached,
        json!({
            "workspace_id": b.workspace_id, "anchor": b.anchor, "git": b.git,
        }),
    )?;
    Ok(b)
}

/// Agents other than `me` whose active root is `anchor` itself (direct).
fn direct_users(agents: &[AgentRecord], me: &str, anchor: &str) -> Vec<String> {
    agents
        .iter()
        .filter(|a| a.id != me)
        .filter(|a| {
            a.workspaces
                .active
                .as_ref()
                .is_some_and(|w| w.mode == WorkspaceMode::Direct && w.execution_root == anchor)
        })
        .map(|a| a.id.clone())
        .collect()
}

impl HostInner {
    pub(crate) fn snapshot_of(&self, agent: &AgentRecord) -> ExecutionSnapshot {
        ws::snapshot(&agent.workspaces, &self.agent_home(&agent.id))
    }

    /// The active execution root and cwd for tools: read fresh per call,
    /// so a switch takes effect at the next tool call.
    pub(crate) fn execution_of(&self, agent_id: &str) -> Result<ExecutionSnapshot, RuntimeError> {
        let agent: AgentRecord =
            self.store
                .read()?
                .agent(agent_id)?
                .ok_or_else(|| RuntimeError::UnknownAgent {
                    agent_id: agent_id.to_owned(),
                })?;
        Ok(self.snapshot_of(&agent))
    }
}
