//! A child agent as its parent's TaskStatus sees it (`child_observability`):
//! derived from the supervision projection the console also uses.

use serde::{Deserialize, Serialize};

use super::views::ChildSupervision;
use crate::model::task::TaskStatus;

/// A child-agent task's child as the parent's TaskStatus reads it: where
/// it is (`running`, `blocked` on managed execution, `waiting` by choice,
/// `terminal`), why, what it works on, and its latest brief.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChildObservability {
    pub phase: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blocked_reason: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub waiting_reason: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub active_work_item_id: Option<String>,
    /// That work item's objective.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub work_summary: Option<String>,
    /// Its latest brief while it works (progress), or once it ended
    /// (its result).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_progress_brief: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_result_brief: Option<String>,
}

impl ChildSupervision {
    /// The child's observability, derived from its supervision.
    pub fn observability(&self) -> ChildObservability {
        // An interrupted task may outlive a restart with its child still
        // alive: only a task that ended for good (or an archived child) is
        // terminal.
        let ended = matches!(
            self.task_status,
            TaskStatus::Completed | TaskStatus::Failed | TaskStatus::Cancelled
        );
        let terminal = ended || self.archived;
        let reason = Some(self.posture_reason.clone());
        use crate::model::decision::AgentSchedulingPosture as P;
        let (phase, blocked, waiting) = match self.posture {
            _ if terminal => ("terminal", None, None),
            // Blocked on managed execution: its own tasks.
            P::WaitingForTask => ("blocked", reason, None),
            // Parked by choice or for someone else: a wait, an operator,
            // a work item's blocker, or nothing to do yet.
            P::WaitingForExternal | P::WaitingForOperator | P::Blocked | P::Idle => {
                ("waiting", None, reason)
            }
            P::ActiveTurn | P::HasQueuedInput | P::HasRunnableWork | P::Archived => {
                ("running", None, None)
            }
        };
        let (progress, result) = match terminal {
            true => (None, self.last_brief.clone()),
            false => (self.last_brief.clone(), None),
        };
        ChildObservability {
            phase: phase.to_owned(),
            blocked_reason: blocked,
            waiting_reason: waiting,
            active_work_item_id: self.current_work_item_id.clone(),
            work_summary: self.current_work_item.clone(),
            last_progress_brief: progress,
            last_result_brief: result,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::agent::AgentStatus;
    use crate::model::task::ChildWorkspaceMode;

    fn child(task_status: TaskStatus, posture: &str) -> ChildSupervision {
        ChildSupervision {
            parent_agent_id: "main".into(),
            cleanup_owner: "supervision_task".into(),
            followup_target: "parent_supervisor".into(),
            child_agent_id: "child_1".into(),
            supervision_task_id: "task_1".into(),
            label: "review".into(),
            task_status,
            child_status: AgentStatus::AwakeRunning,
            posture: posture.parse().unwrap(),
            posture_reason: format!("because {posture}"),
            archived: false,
            workspace_mode: ChildWorkspaceMode::Inherit,
            current_work_item: Some("tidy the logs".into()),
            current_work_item_id: Some("work_1".into()),
            model_rounds: 3,
            input_tokens: 10,
            output_tokens: 5,
            queue_depth: 0,
            tasks_active: 1,
            last_brief: Some("halfway".into()),
            worktree: None,
        }
    }

    #[test]
    fn a_childs_phase_and_reasons_follow_its_posture_and_task() {
        let o = child(TaskStatus::Running, "WaitingForTask").observability();
        assert_eq!(o.phase, "blocked");
        assert_eq!(o.blocked_reason.as_deref(), Some("because WaitingForTask"));
        assert_eq!(o.last_progress_brief.as_deref(), Some("halfway"));
        assert_eq!(o.active_work_item_id.as_deref(), Some("work_1"));
        assert_eq!(o.work_summary.as_deref(), Some("tidy the logs"));
        let parked = child(TaskStatus::Running, "Blocked").observability();
        assert_eq!(
            (parked.phase.as_str(), parked.waiting_reason.is_some()),
            ("waiting", true)
        );
        let restarted = child(TaskStatus::Interrupted, "ActiveTurn").observability();
        assert_eq!(
            restarted.phase, "running",
            "an interrupted task's child may live on"
        );
        let o = child(TaskStatus::Running, "WaitingForExternal").observability();
        assert_eq!(
            (o.phase.as_str(), o.waiting_reason.is_some()),
            ("waiting", true)
        );
        assert_eq!(
            child(TaskStatus::Running, "ActiveTurn")
                .observability()
                .phase,
            "running"
        );
        let done = child(TaskStatus::Completed, "Idle").observability();
        assert_eq!(done.phase, "terminal");
        assert_eq!(done.last_result_brief.as_deref(), Some("halfway"));
        assert_eq!(done.last_progress_brief, None);
    }
}
