//! Workspace operations: attach, use (direct or isolated), detach, list,
//! and recovery of a root that vanished. Discovery and git run first,
//! outside any transaction; the result is then written in one store
//! transaction with its events. Operations are serialised by one lock so
//! two callers cannot race to make the same worktree.

use std::path::{Path, PathBuf};

use crate::model::agent::AgentRecord;
use crate::model::event::Provenance;
use crate::model::workspace::ActiveWorkspace;
use crate::model::workspace::AgentWorkspaces;
use crate::model::workspace::ProjectionKind;
use crate::model::workspace::UseOutcome;
use crate::model::workspace::UseWorkspace;
use crate::model::workspace::WorkspaceBinding;
use crate::model::workspace::WorkspaceMode;
use crate::model::workspace::AGENT_HOME_ID;
use crate::protocol::events::{self as ev, new_event, Event};
use crate::protocol::{ApiError, Request, Response};
use crate::runtime::agent::agent_in;
use crate::runtime::handle::RuntimeHost;
use crate::runtime::sandbox;
use crate::runtime::workspace as ws;
use crate::runtime::workspace::reach::{self, Mover};
use crate::runtime::workspace::session::{discover, end_session, open_worktree, SessionEnd};
use crate::runtime::workspace::target::{attached_target, Target};
use crate::runtime::RuntimeError;
use crate::runtime::WorkspaceError;
use crate::store::{StoreError, WriteCtx};

fn rejected(e: WorkspaceError) -> StoreError {
    StoreError::rejected(RuntimeError::Workspace(e))
}

fn event(tx: &mut WriteCtx<'_>, agent_id: &str, event: Event) -> Result<(), StoreError> {
    tx.append_event(new_event(agent_id, Provenance::default(), event))
        .map(|_| ())
}

impl RuntimeHost {
    /// `workspace.files`, `.attach`, `.use` and `.detach` (`.list` is read
    /// from the store alone).
    pub(crate) async fn answer_workspace(&self, request: Request) -> Result<Response, ApiError> {
        match request {
            Request::WorkspaceFiles { agent_id } => {
                let root = PathBuf::from(self.inner.execution_of(&agent_id)?.execution_root);
                let list = tokio::task::spawn_blocking(move || {
                    crate::runtime::workspace::files::walk(
                        &root,
                        crate::runtime::workspace::files::MAX_LISTED,
                    )
                })
                .await
                .map_err(|e| RuntimeError::Io {
                    what: "listing the workspace's files".into(),
                    message: e.to_string(),
                })?;
                Ok(Response::WorkspaceFiles(list))
            }
            Request::WorkspaceAttach { agent_id, path } => Ok(Response::WorkspaceAttach(
                self.attach_workspace(&agent_id, Path::new(&path)).await?,
            )),
            Request::WorkspaceUse { agent_id, target } => Ok(Response::WorkspaceUse(
                self.use_workspace(&agent_id, target).await?,
            )),
            Request::WorkspaceDetach {
                agent_id,
                workspace_id,
            } => Ok(Response::WorkspaceDetach(
                self.detach_workspace(&agent_id, &workspace_id).await?,
            )),
            other => Err(other.misrouted()),
        }
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

    /// Make a workspace active (spec: UseWorkspace), as the operator.
    pub async fn use_workspace(
        &self,
        agent_id: &str,
        req: UseWorkspace,
    ) -> Result<UseOutcome, RuntimeError> {
        self.use_workspace_as(agent_id, req, Mover::Operator).await
    }

    /// Make a workspace active for `mover`. The model is held to where it
    /// may move the writable root (`reach::classify`), judged on this
    /// very discovery: what is checked is what is used.
    pub(crate) async fn use_workspace_as(
        &self,
        agent_id: &str,
        req: UseWorkspace,
        mover: Mover<'_>,
    ) -> Result<UseOutcome, RuntimeError> {
        let _guard = self.inner.workspace_lock.lock().await;
        let agent = self.inner.agent_record(agent_id)?;
        let state = agent.workspaces.clone();
        let home = self.inner.agent_home(agent_id);
        let policy = self.inner.default_policy();
        let current = ws::snapshot(&state, &home, &policy);
        let wsr = RuntimeError::Workspace;

        // Resolve the target: its binding (maybe new), root, cwd, mode.
        let Target {
            binding,
            new_binding,
            root,
            cwd,
            adopted,
        } = match (&req.path, &req.workspace_id) {
            (Some(_), Some(_)) | (None, None) => return Err(wsr(WorkspaceError::Target)),
            (None, Some(id)) if id == AGENT_HOME_ID => {
                if req.mode == WorkspaceMode::Isolated {
                    return Err(wsr(WorkspaceError::HomeIsolated));
                }
                return self.activate(agent_id, &state, None, None, false).await;
            }
            (None, Some(id)) => attached_target(&state, id, mover, &current)?,
            (Some(p), None) => self.path_target(agent_id, &state, p, mover, &current)?,
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
                root_pin: sandbox::pin_dir(&root),
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
        self.may_isolate(&binding, new_binding, &state, &home)?;
        let inner = std::sync::Arc::clone(&self.inner);
        let (aid, b, from) = (agent_id.to_owned(), binding.clone(), cwd.clone());
        let st = state.clone();
        let (session, created) = tokio::task::spawn_blocking(move || {
            open_worktree(&inner.config.data_dir, &aid, &st, &b, &from)
        })
        .await
        .map_err(|e| RuntimeError::Invalid(format!("worktree creation did not finish: {e}")))?
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
            root_pin: sandbox::pin_dir(&wt_root),
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
        let policy = self.inner.default_policy();
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
                            Event::WorktreeRemoved(ev::WorktreeRemoved {
                                workspace_id: s.workspace_id.clone(),
                                worktree_path: s.worktree_path.clone(),
                                worktree_branch: s.worktree_branch.clone(),
                                reason: "clean".into(),
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
                            Event::WorktreeRetained(ev::WorktreeRetained {
                                workspace_id: s.workspace_id.clone(),
                                worktree_path: s.worktree_path.clone(),
                                worktree_branch: s.worktree_branch.clone(),
                                uncommitted_files: changes.uncommitted,
                                commits_ahead: changes.commits_ahead,
                                error: error.clone(),
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
                            Event::WorktreeCreated(ev::WorktreeCreated {
                                workspace_id: wt.workspace_id.clone(),
                                worktree_path: wt.worktree_path.clone(),
                                worktree_branch: wt.worktree_branch.clone(),
                                original_branch: wt.original_branch.clone(),
                                original_working_directory: wt.original_working_directory.clone(),
                            }),
                        )?;
                    }
                }
                state.active = active.clone();
                let snap = ws::snapshot(state, &home, &policy);
                event(
                    tx,
                    &id,
                    Event::WorkspaceUsed(ev::WorkspaceUsed {
                        previous_workspace_id: previous.clone(),
                        execution: snap.clone(),
                        reason: None,
                    }),
                )?;
                tx.put_agent(&id, &agent)?;
                Ok((snap, previous))
            })
            .await?;
        // An archived agent has no actor to reload guidance for.
        if self.has_actor(agent_id) {
            self.inner.guidance_watch.watch_agent(
                agent_id,
                &self.inner.agent_home(agent_id),
                Path::new(&snapshot.workspace_anchor),
            );
        }
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
                    Event::WorkspaceDetached(ev::WorkspaceDetached {
                        workspace_id: b.workspace_id.clone(),
                        anchor: b.anchor.clone(),
                        retained_worktrees: agent
                            .workspaces
                            .retained_worktrees
                            .iter()
                            .filter(|w| w.workspace_id == b.workspace_id)
                            .map(|w| w.worktree_path.clone())
                            .collect(),
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
    pub(crate) async fn recover_workspace(&self, agent_id: &str) -> Result<(), RuntimeError> {
        let agent = self.inner.agent_record(agent_id)?;
        let Some(active) = &agent.workspaces.active else {
            return Ok(());
        };
        if Path::new(&active.execution_root).is_dir() {
            return Ok(());
        }
        let id = agent_id.to_owned();
        let home = self.inner.agent_home(agent_id);
        let policy = self.inner.default_policy();
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
                    Event::WorkspaceMissing(ev::WorkspaceMissing {
                        workspace_id: missing.workspace_id.clone(),
                        execution_root: missing.execution_root.clone(),
                        worktree: missing.worktree.clone(),
                        fallback: AGENT_HOME_ID.to_owned(),
                    }),
                )?;
                let snap = ws::snapshot(&agent.workspaces, &home, &policy);
                event(
                    tx,
                    &id,
                    Event::WorkspaceUsed(ev::WorkspaceUsed {
                        previous_workspace_id: missing.workspace_id.clone(),
                        execution: snap,
                        reason: Some("execution_root_missing".into()),
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
        .iter_mut()
        .find(|b| b.anchor == anchor_s)
    {
        if reach::binding_holds(b) {
            return Ok(b.clone());
        }
        // Attached again where the directory was replaced since (a fresh
        // clone in its place): the operator's choice is pinned anew.
        b.pin = sandbox::pin_dir(anchor);
        b.git = git;
        let b = b.clone();
        attached_event(tx, &agent.id, &b)?;
        return Ok(b);
    }
    let workspace_id = ws::workspace_id_for(anchor);
    // An id names a workspace's policy, its reviewer and its written
    // policy file: two directories never share one, whoever attached the
    // other (a directory named to collide is refused).
    let mut bound: Vec<WorkspaceBinding> = agent.workspaces.attached.clone();
    for other in tx.agent_ids()? {
        if other != agent.id {
            if let Some(a) = tx.get_agent::<AgentRecord>(&other)? {
                bound.extend(a.workspaces.attached);
            }
        }
    }
    if let Some(taken) = bound
        .iter()
        .find(|b| b.workspace_id == workspace_id && b.anchor != anchor_s)
    {
        return Err(StoreError::rejected(RuntimeError::Invalid(format!(
            "{} would be workspace {workspace_id}, which is already {}: attach it from a \
             directory of another name",
            crate::model::text::escape_hidden(&anchor_s),
            crate::model::text::escape_hidden(&taken.anchor)
        ))));
    }
    let b = WorkspaceBinding {
        workspace_id,
        anchor: anchor_s,
        git,
        attached_at: tx.now_ts(),
        pin: sandbox::pin_dir(anchor),
    };
    agent.workspaces.attached.push(b.clone());
    attached_event(tx, &agent.id, &b)?;
    Ok(b)
}

fn attached_event(
    tx: &mut WriteCtx<'_>,
    agent_id: &str,
    b: &WorkspaceBinding,
) -> Result<(), StoreError> {
    event(
        tx,
        agent_id,
        Event::WorkspaceAttached(ev::WorkspaceAttached {
            workspace_id: b.workspace_id.clone(),
            anchor: b.anchor.clone(),
            git: b.git,
        }),
    )
}
