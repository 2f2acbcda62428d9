//! Delegation (spec "Agent Identity And Visibility Contract", delegation
//! rules, and "Worktree-Isolated Child Delegation"): `SpawnAgent` makes a
//! private child with its own context and actor, supervised by the
//! parent's `child_agent_task`. The parent's task tools act on that handle;
//! the child's terminal closure finishes the task, its last brief re-enters
//! the parent as the task result, and the child archives. A restart keeps
//! a child whose supervising task is still open; one whose task is gone or
//! final archives.

use crate::model::task::ChildWorkspaceMode;

use serde::Serialize;
use serde_json::json;

use super::child_view::bounded;
use super::child_view::child_supervision;
use crate::model::agent::AgentKind;
use crate::model::agent::AgentOwnership;
use crate::model::agent::AgentRecord;
use crate::model::agent::AgentStatus;
use crate::model::agent::AgentVisibility;
use crate::model::agent::ProfilePreset;
use crate::model::event::Provenance;
use crate::model::message::{
    AdmissionContext, AdmissionRequest, DeliverySurface, MessageBody, MessageKind, MessageOrigin,
    Priority,
};
use crate::model::task::TaskDetail;
use crate::model::task::TaskKind;
use crate::model::task::TaskRecord;
use crate::model::task::TaskStatus;
use crate::model::task::WaitPolicy;
use crate::model::workspace::ActiveWorkspace;
use crate::model::workspace::AgentWorkspaces;
use crate::model::workspace::UseWorkspace;
use crate::model::workspace::WorkspaceMode;
use crate::model::workspace::AGENT_HOME_ID;
use crate::protocol::events::{self as ev, new_event, Event};
use crate::protocol::views::ChildSupervision;
use crate::runtime::admission::{admit_in, Outcome};
use crate::runtime::agent::agent_in;
use crate::runtime::agents::ops::NewAgent;
use crate::runtime::handle::RuntimeHost;
use crate::runtime::RuntimeError;
use crate::store::{Index, Keyed, StoreError};

/// Characters of a child's result the parent's task carries.
pub(super) const RESULT_CHARS: usize = 16_000;
/// Characters of the initial message that make the task's label.
const LABEL_CHARS: usize = 72;

/// A `SpawnAgent` call, checked.
#[derive(Debug, Clone)]
pub struct SpawnRequest {
    pub preset: ProfilePreset,
    pub initial_message: Option<String>,
    pub agent_id: Option<String>,
    pub workspace_mode: ChildWorkspaceMode,
    /// The parent's message and work item the spawn happened in.
    pub parent_message_id: Option<String>,
    pub work_item_id: Option<String>,
}

/// What `SpawnAgent` returns.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Spawned {
    pub agent_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub child_agent_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub supervision_task_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub child_supervision: Option<ChildSupervision>,
}

/// The task's stable label: the first line of the initial message.
pub fn label_of(initial_message: &str) -> String {
    let first = initial_message
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("delegated work");
    bounded(first, LABEL_CHARS)
}

/// How deep `agent` sits in a chain of children (0 for a top-level agent).
fn depth_in(rx_agent: impl Fn(&str) -> Option<AgentRecord>, agent: &AgentRecord) -> u32 {
    let mut depth = 0;
    let mut cur = agent.clone();
    while cur.kind == AgentKind::Child && depth < 64 {
        depth += 1;
        match cur.lineage_parent_agent_id.as_deref().and_then(&rx_agent) {
            Some(p) => cur = p,
            None => break,
        }
    }
    depth
}

/// The text a child's message carries for it: who delegated, and how the
/// result gets back.
pub(super) fn delegation_text(parent: &str, task_id: &str, text: &str, first: bool) -> String {
    if first {
        format!(
            "Delegated to you by agent `{parent}` (supervising task {task_id}):\n\n{text}\n\n\
             Work on this on your own. When it is done, end your turn with a final report: that \
             text is delivered to `{parent}` as the task's result."
        )
    } else {
        format!("Further input from agent `{parent}` (task {task_id}):\n\n{text}")
    }
}

pub(super) fn child_message(
    child: &str,
    parent: &str,
    task_id: &str,
    text: String,
) -> AdmissionRequest {
    AdmissionRequest {
        agent_id: child.to_owned(),
        kind: MessageKind::OperatorPrompt,
        origin: MessageOrigin::Task {
            task_id: task_id.to_owned(),
        },
        priority: Priority::Normal,
        body: MessageBody::Text { text },
        delivery_surface: DeliverySurface::RuntimeSystem,
        admission_context: AdmissionContext::RuntimeOwned,
        work_item_id: None,
        task_id: Some(task_id.to_owned()),
        source_refs: [("supervision_task_id".to_owned(), task_id.to_owned())]
            .into_iter()
            .collect(),
        metadata: Some(json!({ "parent_agent_id": parent })),
        correlation_id: None,
        causation_id: None,
    }
}

impl RuntimeHost {
    /// `SpawnAgent`: a private child under a `child_agent_task`, or a
    /// public named agent with lineage.
    pub async fn spawn_agent(
        &self,
        parent: &str,
        req: SpawnRequest,
    ) -> Result<Spawned, RuntimeError> {
        let parent_rec = self.inner.agent_record(parent)?;
        if parent_rec.archived_at.is_some() {
            return Err(RuntimeError::Invalid(format!(
                "agent `{parent}` is archived"
            )));
        }
        match req.preset {
            ProfilePreset::PublicNamed => self.spawn_named(&parent_rec, req).await,
            ProfilePreset::PrivateChild => self.spawn_child(&parent_rec, req).await,
        }
    }

    async fn spawn_named(
        &self,
        parent: &AgentRecord,
        req: SpawnRequest,
    ) -> Result<Spawned, RuntimeError> {
        let Some(id) = req.agent_id.clone() else {
            return Err(RuntimeError::Invalid(
                "preset `public_named` needs `agent_id`: the new agent's name".into(),
            ));
        };
        if req.workspace_mode == ChildWorkspaceMode::Worktree {
            return Err(RuntimeError::Invalid(
                "`workspace_mode = worktree` is for `private_child`; a public named agent starts \
                 with the caller's attached workspaces"
                    .into(),
            ));
        }
        // A supervised child's reach ends with its task: it may not leave
        // a public agent behind.
        if parent.kind == AgentKind::Child {
            return Err(RuntimeError::Invalid(
                "a child agent cannot create public agents (preset `public_named`); report the \
                 need to your parent instead"
                    .into(),
            ));
        }
        // The caller's attached set only: never its active entry or
        // worktree session.
        let workspaces = AgentWorkspaces {
            attached: parent.workspaces.attached.clone(),
            policies: parent.workspaces.policies.clone(),
            always: parent.workspaces.always.clone(),
            ..AgentWorkspaces::default()
        };
        self.create_named_agent(NewAgent {
            agent_id: id.clone(),
            template: None,
            lineage_parent_agent_id: Some(parent.id.clone()),
            workspaces: Some(workspaces),
        })
        .await?;
        if let Some(text) = req.initial_message.filter(|t| !t.trim().is_empty()) {
            let mut m = AdmissionRequest::operator_prompt(
                &id,
                &text,
                Priority::Normal,
                DeliverySurface::RuntimeSystem,
            );
            m.origin = MessageOrigin::System {
                subsystem: "agent_bootstrap".into(),
            };
            m.admission_context = AdmissionContext::RuntimeOwned;
            m.metadata = Some(json!({ "created_by_agent_id": parent.id }));
            self.submit(m).await?;
        }
        Ok(Spawned {
            agent_id: id,
            child_agent_id: None,
            supervision_task_id: None,
            child_supervision: None,
        })
    }

    async fn spawn_child(
        &self,
        parent: &AgentRecord,
        req: SpawnRequest,
    ) -> Result<Spawned, RuntimeError> {
        let text = req
            .initial_message
            .clone()
            .filter(|t| !t.trim().is_empty())
            .ok_or_else(|| {
                RuntimeError::Invalid(
                    "preset `private_child` needs `initial_message`: the work to delegate".into(),
                )
            })?;
        if req.agent_id.is_some() {
            return Err(RuntimeError::Invalid(
                "`agent_id` is for `public_named`; a private child's id is chosen by the runtime"
                    .into(),
            ));
        }
        let limits = self.inner.config.agent_limits;
        let worktree_of = child_worktree(parent, req.workspace_mode)?;
        let child_id = format!("child-{}", &uuid::Uuid::new_v4().simple().to_string()[..10]);
        let task_id = crate::new_id("task");
        let label = label_of(&text);
        // The child's own home, from the default template, before any
        // record exists (fail closed: no record without a home).
        let search = self.template_search();
        let home = self.inner.agent_home(&child_id);
        let (h, now) = (home.clone(), crate::format_ts(crate::now_ms()));
        let provenance = tokio::task::spawn_blocking(move || {
            let t = crate::runtime::agents::templates::resolve(
                crate::runtime::agents::templates::DEFAULT_TEMPLATE,
                &search,
            )?;
            crate::runtime::agents::templates::create_home(&h, &t, &now)
        })
        .await
        .map_err(|e| RuntimeError::Invalid(format!("child creation did not finish: {e}")))?
        .map_err(|e| RuntimeError::Invalid(e.to_string()))?;
        let child = child_record(parent, &child_id, &task_id, worktree_of.is_none());
        let detail = TaskDetail {
            child_agent_id: Some(child_id.clone()),
            label: Some(label.clone()),
            preset: Some("private_child".into()),
            workspace_mode: Some(req.workspace_mode),
            terminal_reentry: Some(true),
            ..TaskDetail::default()
        };
        let (pid, tid, c, first) = (
            parent.id.clone(),
            task_id.clone(),
            child.clone(),
            delegation_text(&parent.id, &task_id, &text, true),
        );
        let (msg_id, work_item) = (req.parent_message_id.clone(), req.work_item_id.clone());
        let written = self
            .inner
            .store
            .write(move |tx| {
                may_spawn_in(tx, &pid, limits)?;
                crate::runtime::admission::create_agent_in(tx, &c, Some(provenance.clone()))?;
                let now = tx.now_ts();
                let task = TaskRecord {
                    id: tid.clone(),
                    agent_id: pid.clone(),
                    kind: TaskKind::ChildAgentTask,
                    status: TaskStatus::Running,
                    wait_policy: WaitPolicy::Background,
                    work_item_id: work_item.clone(),
                    parent_message_id: msg_id.clone(),
                    summary: Some(label.clone()),
                    detail: detail.clone(),
                    created_at: now.clone(),
                    updated_at: now,
                    failure_artifact: None,
                };
                tx.put(Keyed::Tasks, &pid, &tid, &task)?;
                tx.index_insert(Index::ActiveTasks, &pid, &tid)?;
                tx.index_insert(Index::ChildTasks, &pid, &tid)?;
                let provenance = Provenance {
                    task_id: Some(tid.clone()),
                    work_item_id: work_item.clone(),
                    message_id: msg_id.clone(),
                    ..Provenance::default()
                };
                tx.append_event(new_event(
                    &pid,
                    provenance,
                    Event::TaskCreated(ev::TaskCreated { task }),
                ))?;
                let message_id = crate::new_id("msg");
                match admit_in(
                    tx,
                    child_message(&c.id, &pid, &tid, first.clone()),
                    &message_id,
                )? {
                    Outcome::Admitted(_) => Ok(()),
                    Outcome::Rejected { .. } => Err(StoreError::rejected(RuntimeError::Invalid(
                        "the child refused its first message".into(),
                    ))),
                }
            })
            .await;
        if let Err(e) = written {
            let _ = std::fs::remove_dir_all(&home);
            return Err(e.into());
        }
        if let Some(ws) = worktree_of {
            let req = UseWorkspace {
                workspace_id: Some(ws),
                path: None,
                mode: WorkspaceMode::Isolated,
            };
            if let Err(e) = self.use_workspace(&child_id, req).await {
                let why = format!("failed: its worktree could not be made: {e}");
                self.settle_child_task(&parent.id, &task_id, TaskStatus::Failed, &why, None)
                    .await?;
                return Err(e);
            }
        }
        self.spawn_actor(&child_id);
        self.wake(&child_id);
        let rx = self.inner.store.read()?;
        let task: Option<TaskRecord> = rx.get(Keyed::Tasks, &parent.id, &task_id)?;
        let supervision = match &task {
            Some(t) => child_supervision(&rx, t)?,
            None => None,
        };
        Ok(Spawned {
            agent_id: child_id.clone(),
            child_agent_id: Some(child_id),
            supervision_task_id: Some(task_id),
            child_supervision: supervision,
        })
    }
}

/// The workspace a child's worktree is made of (`worktree`: the parent's
/// active git workspace, refused elsewhere), or none when it inherits
/// the parent's root.
fn child_worktree(
    parent: &AgentRecord,
    mode: ChildWorkspaceMode,
) -> Result<Option<String>, RuntimeError> {
    let ws = match mode {
        ChildWorkspaceMode::Inherit => None,
        ChildWorkspaceMode::Worktree => {
            let id = parent.workspaces.active_id().to_owned();
            let git = parent.workspaces.binding(&id).is_some_and(|b| b.git);
            if id == AGENT_HOME_ID || !git {
                return Err(RuntimeError::Invalid(
                    "`workspace_mode = worktree` needs an active git workspace (UseWorkspace \
                     a repository first)"
                        .into(),
                ));
            }
            Some(id)
        }
    };
    Ok(ws)
}

/// A private child's record: supervised by its parent through the task
/// `task_id`, with the parent's workspaces and approval policies, and (when
/// it inherits) the parent's root, whose worktree it uses but never manages.
fn child_record(parent: &AgentRecord, child_id: &str, task_id: &str, inherit: bool) -> AgentRecord {
    let mut child = AgentRecord::new(child_id, crate::format_ts(crate::now_ms()));
    child.kind = AgentKind::Child;
    child.visibility = AgentVisibility::Private;
    child.ownership = AgentOwnership::ParentSupervised;
    child.profile_preset = Some(ProfilePreset::PrivateChild);
    child.lineage_parent_agent_id = Some(parent.id.clone());
    child.supervision_task_id = Some(task_id.to_owned());
    child.workspaces.attached = parent.workspaces.attached.clone();
    // The operator's approval policies follow the workspaces.
    child.workspaces.policies = parent.workspaces.policies.clone();
    child.workspaces.always = parent.workspaces.always.clone();
    if inherit {
        // Inherit: the parent's root as it is; a worktree of the
        // parent's is used, never managed, by the child.
        child.workspaces.active = parent.workspaces.active.clone().map(|a| ActiveWorkspace {
            adopted_worktree: a.adopted_worktree || a.worktree.is_some(),
            worktree: None,
            ..a
        });
    }
    child
}

/// Whether `pid` may delegate now: not stopped, under the depth limit and
/// under the number of live children.
fn may_spawn_in(
    tx: &mut crate::store::WriteCtx<'_>,
    pid: &str,
    limits: crate::runtime::settings::limits::AgentLimits,
) -> Result<(), StoreError> {
    let p = agent_in(tx, pid)?;
    if p.archived_at.is_some() || p.status == AgentStatus::Stopped {
        return Err(StoreError::rejected(RuntimeError::Invalid(format!(
            "agent `{pid}` is stopped; it cannot delegate"
        ))));
    }
    let lookup = |id: &str| tx.get_agent::<AgentRecord>(id).ok().flatten();
    let depth = depth_in(lookup, &p) + 1;
    if depth > limits.max_spawn_depth {
        return Err(StoreError::rejected(RuntimeError::Invalid(format!(
            "spawn depth {depth} is over the limit of {} (`[agents] max_spawn_depth`): \
             do this work yourself instead of delegating further",
            limits.max_spawn_depth
        ))));
    }
    let mut live = 0u32;
    for id in tx.index_list(Index::ActiveTasks, pid)? {
        if tx
            .get::<TaskRecord>(Keyed::Tasks, pid, &id)?
            .is_some_and(|t| t.kind == TaskKind::ChildAgentTask)
        {
            live += 1;
        }
    }
    if live >= limits.max_children {
        return Err(StoreError::rejected(RuntimeError::Invalid(format!(
            "`{pid}` already supervises {live} live children, the limit \
             (`[agents] max_children`); wait for one to finish or TaskStop one"
        ))));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_are_the_first_line_bounded() {
        assert_eq!(
            label_of("\n  Investigate the flaky test\nmore"),
            "Investigate the flaky test"
        );
        assert_eq!(label_of("   "), "delegated work");
        let long = label_of(&"x".repeat(200));
        assert_eq!(long.chars().count(), LABEL_CHARS + 1);
    }

    #[test]
    fn depth_counts_child_ancestors() {
        let mut a = AgentRecord::new("a", "t".into());
        let mut b = AgentRecord::new("b", "t".into());
        b.kind = AgentKind::Child;
        b.lineage_parent_agent_id = Some("a".into());
        let mut c = AgentRecord::new("c", "t".into());
        c.kind = AgentKind::Child;
        c.lineage_parent_agent_id = Some("b".into());
        let all = [a.clone(), b.clone(), c.clone()];
        let look = |id: &str| all.iter().find(|r| r.id == id).cloned();
        assert_eq!(depth_in(look, &a), 0);
        assert_eq!(depth_in(look, &b), 1);
        assert_eq!(depth_in(look, &c), 2);
        // A lineage loop cannot hang it.
        a.kind = AgentKind::Child;
        a.lineage_parent_agent_id = Some("c".into());
        let all = [a.clone(), b, c];
        let look = |id: &str| all.iter().find(|r| r.id == id).cloned();
        assert_eq!(depth_in(look, &a), 64);
    }
}
