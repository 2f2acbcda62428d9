//! A child after its spawn: its parent's task tools acting on it (input,
//! stop), its terminal closure finishing the supervising task and
//! re-entering the parent, the end of its worktree session, and restart
//! reconciliation.

use super::child_ops::{child_message, delegation_text, RESULT_CHARS};
use super::child_view::{bounded, child_of, latest_brief, live_child_tasks};
use crate::model::agent::AgentKind;
use crate::model::agent::AgentRecord;
use crate::model::agent::AgentStatus;
use crate::model::decision::SchedulerDecisionKind;
use crate::model::decision::TurnTerminalKind;
use crate::model::task::TaskInputReceipt;
use crate::model::task::TaskKind;
use crate::model::task::TaskRecord;
use crate::model::task::TaskStatus;
use crate::model::task::{ChildWorktree, TaskDetail, WorktreeCleanup};
use crate::model::workspace::UseWorkspace;
use crate::model::workspace::WorkspaceMode;
use crate::model::workspace::WorktreeSession;
use crate::model::workspace::AGENT_HOME_ID;
use crate::protocol::events as ev;
use crate::runtime::agents::ops::archive_in;
use crate::runtime::command_tasks::{queue_result_in, transition_in};
use crate::runtime::handle::RuntimeHost;
use crate::runtime::tasks::TaskTransition;
use crate::runtime::RuntimeError;
use crate::store::{Index, Keyed, StoreError, WriteCtx};

/// Finish a child's supervising task on the parent: the terminal status,
/// the child's result in its detail, the result queued to the parent,
/// then the child archived. A task already final is left as it is.
pub(super) fn settle_in(
    tx: &mut WriteCtx<'_>,
    parent: &str,
    task_id: &str,
    status: TaskStatus,
    summary: String,
    extra: TaskDetail,
) -> Result<(), StoreError> {
    let Some(task) = tx.get::<TaskRecord>(Keyed::Tasks, parent, task_id)? else {
        return Ok(());
    };
    let child = child_of(&task);
    if !task.status.is_terminal() {
        let finish = TaskTransition::Finish {
            status,
            summary: Some(summary),
            detail: extra,
        };
        transition_in(tx, parent, task_id, finish)?;
        queue_result_in(tx, parent, task_id)?;
    }
    if let Some(c) = child {
        if tx.get_agent::<AgentRecord>(&c)?.is_some() {
            archive_in(tx, &c, "supervision_completed")?;
        }
    }
    Ok(())
}

/// A supervised child at terminal closure: it has run, and the scheduler
/// finds nothing queued, running or awaited (it would sleep or idle).
pub(crate) fn is_done(agent: &AgentRecord, kind: SchedulerDecisionKind) -> bool {
    matches!(
        kind,
        SchedulerDecisionKind::Sleep | SchedulerDecisionKind::StayIdle
    ) && agent.kind == AgentKind::Child
        && agent.archived_at.is_none()
        && agent.supervision_task_id.is_some()
        && agent.last_turn_terminal.is_some()
        && !agent.turn_in_progress
        && !matches!(agent.status, AgentStatus::Paused | AgentStatus::Stopped)
}

impl RuntimeHost {
    /// `settle_in` as its own write.
    pub(super) async fn settle_child_task(
        &self,
        parent: &str,
        task_id: &str,
        status: TaskStatus,
        summary: &str,
        worktree: Option<ChildWorktree>,
    ) -> Result<(), RuntimeError> {
        let extra = TaskDetail {
            worktree,
            ..TaskDetail::default()
        };
        let (p, t, why) = (parent.to_owned(), task_id.to_owned(), summary.to_owned());
        self.inner
            .store
            .write(move |tx| settle_in(tx, &p, &t, status, why.clone(), extra.clone()))
            .await?;
        Ok(())
    }

    /// `(child id, supervising task id)` of the parent's live children.
    pub fn live_children(&self, parent: &str) -> Result<Vec<(String, String)>, RuntimeError> {
        let rx = self.inner.store.read()?;
        Ok(live_child_tasks(&rx, parent)?
            .into_iter()
            .filter_map(|t| child_of(&t).map(|c| (c, t.id)))
            .collect())
    }

    /// End a child's managed worktree session: removed when clean,
    /// retained (and recorded) when it holds changes. What happened, for
    /// the task's detail.
    async fn end_child_worktree(&self, child: &str) -> Option<ChildWorktree> {
        let session: WorktreeSession = self.inner.execution_of(child).ok()?.worktree?;
        let home = UseWorkspace {
            workspace_id: Some(AGENT_HOME_ID.into()),
            path: None,
            mode: WorkspaceMode::Direct,
        };
        let changed = crate::runtime::workspace::git::short_status(std::path::Path::new(
            &session.worktree_path,
        ))
        .map_or(0, |s| s.changed);
        let cleanup = match self.use_workspace(child, home).await {
            Ok(out) if out.retained.is_empty() => WorktreeCleanup::Removed,
            Ok(_) => WorktreeCleanup::Retained,
            Err(e) => {
                tracing::warn!(child, error = %e, "cannot end a child's worktree session");
                WorktreeCleanup::CleanupFailed
            }
        };
        Some(ChildWorktree {
            path: session.worktree_path,
            branch: session.worktree_branch,
            changed_files: changed as u64,
            cleanup,
        })
    }

    /// Stop a child through its supervising task (TaskStop, the operator,
    /// a stopped or archived parent): its turn is cancelled, its worktree
    /// ended, the task cancelled with `summary`, the child archived.
    pub async fn stop_child(
        &self,
        parent: &str,
        task_id: &str,
        summary: &str,
    ) -> Result<TaskRecord, RuntimeError> {
        let task = self.child_task(parent, task_id)?;
        let child = child_of(&task).unwrap_or_default();
        if !task.status.is_terminal() {
            if let Some(a) = self.inner.actors().get(&child) {
                a.cancel
                    .request(crate::protocol::payloads::CancelReason::AgentStopped);
            }
            // Nothing of the child keeps running: its own children and
            // its command tasks stop with it.
            for (_, grandchild) in self.live_children(&child)? {
                Box::pin(self.stop_child(&child, &grandchild, "stopped: its parent was stopped"))
                    .await?;
            }
            self.stop_command_tasks(&child).await;
        }
        let worktree = self.end_child_worktree(&child).await;
        self.settle_child_task(parent, task_id, TaskStatus::Cancelled, summary, worktree)
            .await?;
        self.wake(parent);
        self.wake(&child);
        self.child_task(parent, task_id)
    }

    /// TaskInput on a child task: a further message into the child's queue.
    pub async fn child_input(
        &self,
        parent: &str,
        task_id: &str,
        text: &str,
    ) -> Result<TaskInputReceipt, RuntimeError> {
        let task = self.child_task(parent, task_id)?;
        let child = child_of(&task).unwrap_or_default();
        let receipt = |accepted: bool, summary: String| TaskInputReceipt {
            task_id: task_id.to_owned(),
            accepted_input: accepted,
            input_target: "child_agent_queue".into(),
            bytes_written: if accepted { text.len() } else { 0 },
            summary_text: summary,
        };
        if task.status.is_terminal() {
            return Ok(receipt(
                false,
                format!("the child's task is already {:?}", task.status).to_lowercase(),
            ));
        }
        if text.trim().is_empty() {
            return Ok(receipt(false, "the input is empty".into()));
        }
        let m = child_message(
            &child,
            parent,
            task_id,
            delegation_text(parent, task_id, text, false),
        );
        let admitted = self.submit(m).await?;
        Ok(receipt(
            true,
            format!("queued as {} for child {child}", admitted.message_id),
        ))
    }

    /// The supervising task of a child still under supervision.
    pub(crate) fn live_supervision(&self, agent: &AgentRecord) -> Option<String> {
        let (parent, task) = (
            agent.lineage_parent_agent_id.as_deref()?,
            agent.supervision_task_id.as_deref()?,
        );
        self.child_task(parent, task)
            .ok()
            .filter(|t| !t.status.is_terminal())
            .map(|t| t.id)
    }

    /// A child task of `parent`, or `UnknownTask`.
    pub(crate) fn child_task(
        &self,
        parent: &str,
        task_id: &str,
    ) -> Result<TaskRecord, RuntimeError> {
        self.inner
            .store
            .read()?
            .get::<TaskRecord>(Keyed::Tasks, parent, task_id)?
            .filter(|t| t.kind == TaskKind::ChildAgentTask)
            .ok_or_else(|| RuntimeError::UnknownTask {
                task_id: task_id.to_owned(),
            })
    }

    /// The child reached terminal closure (nothing queued, running or
    /// awaited after at least one turn): finish its supervising task with
    /// its last brief, queue that to the parent, archive the child.
    pub(crate) async fn settle_finished_child(
        &self,
        child: &AgentRecord,
    ) -> Result<(), RuntimeError> {
        let (Some(parent), Some(task_id)) = (
            child.lineage_parent_agent_id.clone(),
            child.supervision_task_id.clone(),
        ) else {
            return Ok(());
        };
        let worktree = self.end_child_worktree(&child.id).await;
        let (cid, failed) = (
            child.id.clone(),
            child
                .last_turn_terminal
                .is_some_and(|k| k != TurnTerminalKind::Completed),
        );
        self.inner
            .store
            .write(move |tx| {
                // Input that arrived since the scheduler's decision (a
                // TaskInput) means the child is not done: leave it running.
                let busy = !tx.queue_pending(&cid)?.is_empty()
                    || !tx.index_list(Index::Dequeued, &cid)?.is_empty()
                    || !tx.index_list(Index::ActiveTasks, &cid)?.is_empty();
                if busy {
                    return Ok(());
                }
                let newest =
                    tx.events_of_kind_latest(&cid, ev::EventKind::BriefCreated.as_str(), 1)?;
                let result = latest_brief(newest).unwrap_or_default();
                let (status, summary) = match failed {
                    false => (TaskStatus::Completed, format!("child {cid} finished")),
                    true => (TaskStatus::Failed, format!("child {cid} failed")),
                };
                let extra = TaskDetail {
                    child_result: Some(bounded(&result, RESULT_CHARS)),
                    worktree: worktree.clone(),
                    ..TaskDetail::default()
                };
                settle_in(tx, &parent, &task_id, status, summary, extra.clone())
            })
            .await?;
        if let Some(p) = &child.lineage_parent_agent_id {
            self.wake(p);
        }
        Ok(())
    }

    /// At start: a child whose supervising task is missing or final
    /// archives; one whose task is still open stays (restart-safe).
    pub(crate) async fn reconcile_children(&self) -> Result<(), RuntimeError> {
        let agents: Vec<AgentRecord> = self.inner.store.read()?.agents()?;
        for child in agents
            .iter()
            .filter(|a| a.kind == AgentKind::Child && a.archived_at.is_none())
        {
            let task = match (&child.lineage_parent_agent_id, &child.supervision_task_id) {
                (Some(p), Some(t)) => {
                    self.inner
                        .store
                        .read()?
                        .get::<TaskRecord>(Keyed::Tasks, p, t)?
                }
                _ => None,
            };
            let reason = match &task {
                None => "supervision_missing",
                Some(t) if t.status.is_terminal() => "supervision_completed",
                Some(_) => continue,
            };
            let (id, why) = (child.id.clone(), reason.to_owned());
            self.inner
                .store
                .write(move |tx| archive_in(tx, &id, &why).map(|_| ()))
                .await?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::decision::TurnTerminalKind;

    #[test]
    fn a_child_is_done_only_after_a_turn_when_it_would_rest() {
        let mut c = AgentRecord::new("c", "t".into());
        c.kind = AgentKind::Child;
        c.supervision_task_id = Some("task_1".into());
        assert!(
            !is_done(&c, SchedulerDecisionKind::Sleep),
            "it has not run yet"
        );
        c.last_turn_terminal = Some(TurnTerminalKind::Completed);
        assert!(is_done(&c, SchedulerDecisionKind::Sleep));
        assert!(is_done(&c, SchedulerDecisionKind::StayIdle));
        for waiting in [
            SchedulerDecisionKind::WaitForTask,
            SchedulerDecisionKind::WaitForOperator,
            SchedulerDecisionKind::WaitForExternalChange,
        ] {
            assert!(!is_done(&c, waiting), "{waiting:?}");
        }
        c.status = AgentStatus::Paused;
        assert!(!is_done(&c, SchedulerDecisionKind::Sleep), "paused");
        c.status = AgentStatus::AwakeIdle;
        c.kind = AgentKind::Named;
        assert!(!is_done(&c, SchedulerDecisionKind::Sleep), "not a child");
    }
}
