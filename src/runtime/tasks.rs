//! Task records: concrete operational execution units (command tasks,
//! child-agent tasks, sleep jobs). Lifecycle is monotonic:
//! queued -> running -> cancelling -> terminal (completed, failed,
//! cancelled, interrupted); a terminal record is never reopened. A task
//! that ends failed or interrupted carries a failure artifact (category
//! `task`) saying why.

use crate::model::task::{TaskDetail, TaskKind, TaskRecord, TaskStatus};
use crate::model::usage::{FailureArtifact, FailureCategory};

/// Every task lifecycle write goes through this one reducer. Transitions are
/// monotonic: queued -> running -> cancelling -> terminal (and queued or
/// running straight to terminal). A terminal record is never reopened, and
/// a stale non-terminal update of a terminal task is ignored, not an error,
/// so out-of-order task messages cannot corrupt the record. Creation is
/// not a transition: a new record is written with `task_created`.
#[derive(Debug, Clone, PartialEq)]
pub enum TaskTransition {
    Start {
        detail: TaskDetail,
    },
    RequestCancel,
    Finish {
        status: TaskStatus,
        summary: Option<String>,
        detail: TaskDetail,
    },
}

/// What applying a transition did.
#[derive(Debug, Clone, PartialEq)]
pub enum TransitionOutcome {
    /// The record changed; persist it and record `task_status_changed`.
    Applied(Box<TaskRecord>),
    /// Nothing to do: the transition is stale (e.g. `running` after a
    /// terminal status) and was ignored. Callers record that as evidence.
    Ignored {
        current: TaskStatus,
        reason: &'static str,
    },
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum TaskTransitionError {
    #[error("`{0:?}` is not a terminal status")]
    NotTerminal(TaskStatus),
}

pub fn apply_transition(
    current: &TaskRecord,
    transition: TaskTransition,
    now: &str,
) -> Result<TransitionOutcome, TaskTransitionError> {
    if current.status.is_terminal() {
        return Ok(TransitionOutcome::Ignored {
            current: current.status,
            reason: "task is already terminal",
        });
    }
    let mut next = current.clone();
    next.updated_at = now.to_owned();
    match transition {
        TaskTransition::Start { detail } => {
            if current.status.rank() >= TaskStatus::Running.rank() {
                return Ok(TransitionOutcome::Ignored {
                    current: current.status,
                    reason: "task already started",
                });
            }
            next.status = TaskStatus::Running;
            next.detail.merge(detail);
        }
        TaskTransition::RequestCancel => {
            next.status = TaskStatus::Cancelling;
        }
        TaskTransition::Finish {
            status,
            summary,
            detail,
        } => {
            if !status.is_terminal() {
                return Err(TaskTransitionError::NotTerminal(status));
            }
            next.status = status;
            if summary.is_some() {
                next.summary = summary;
            }
            next.detail.merge(detail);
            next.failure_artifact = failure_of(&next).map(Box::new);
        }
    }
    Ok(TransitionOutcome::Applied(Box::new(next)))
}

/// Why a task that ended failed or interrupted did (category `task`):
/// its exit status, a child that failed, or a runtime that stopped under
/// it; `None` for a task that did not fail.
pub fn failure_of(task: &TaskRecord) -> Option<FailureArtifact> {
    let d = task.command_detail();
    let (kind, fallback) = match (task.status, d.exit_status, task.kind) {
        (TaskStatus::Interrupted, ..) => ("interrupted", "the runtime stopped while it ran"),
        (TaskStatus::Failed, Some(_), _) => ("exit_status", "the command exited with an error"),
        (TaskStatus::Failed, None, _) if task.detail.signal.is_some() => {
            ("signal", "a signal ended the command")
        }
        (
            TaskStatus::Failed,
            None,
            TaskKind::ChildAgentTask | TaskKind::SubagentTask | TaskKind::WorktreeSubagentTask,
        ) => ("child_failed", "the child agent failed"),
        (TaskStatus::Failed, None, _) if task.detail.spawn_error.is_some() => {
            ("spawn_failed", "the command could not be started")
        }
        (TaskStatus::Failed, None, _) => ("failed", "the task failed"),
        _ => return None,
    };
    // Bounded like the command: a summary quoting a long command line
    // does not make the artifact a log.
    let summary: String = task
        .summary
        .clone()
        .filter(|s| !s.trim().is_empty())
        .unwrap_or_else(|| fallback.to_owned())
        .chars()
        .take(500)
        .collect();
    let mut a = FailureArtifact::new(FailureCategory::Task, kind, summary);
    a.task_id = Some(task.id.clone());
    a.exit_status = d.exit_status.and_then(|s| i32::try_from(s).ok());
    let task_kind = serde_json::to_value(task.kind)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default();
    a.metadata.insert("task_kind".into(), task_kind);
    if let Some(signal) = task.detail.signal {
        a.metadata.insert("signal".into(), signal.to_string());
    }
    if let Some(cmd) = d.cmd {
        // Bounded: the command names what failed, not a log.
        a.metadata
            .insert("cmd".into(), cmd.chars().take(200).collect());
    }
    Some(a)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::task::WaitPolicy;

    fn record(status: TaskStatus) -> TaskRecord {
        TaskRecord {
            id: "task_1".into(),
            agent_id: "main".into(),
            kind: TaskKind::CommandTask,
            status,
            wait_policy: WaitPolicy::Background,
            work_item_id: None,
            parent_message_id: None,
            summary: None,
            detail: TaskDetail {
                cmd: Some("true".into()),
                ..TaskDetail::default()
            },
            created_at: "t0".into(),
            updated_at: "t0".into(),
            failure_artifact: None,
        }
    }

    fn apply(r: &TaskRecord, t: TaskTransition) -> TransitionOutcome {
        apply_transition(r, t, "t1").unwrap()
    }

    fn finish(status: TaskStatus) -> TaskTransition {
        TaskTransition::Finish {
            status,
            summary: Some("done".into()),
            detail: TaskDetail {
                exit_status: Some(0),
                ..TaskDetail::default()
            },
        }
    }

    #[test]
    fn lifecycle_moves_forward() {
        let r = record(TaskStatus::Queued);
        let TransitionOutcome::Applied(r) = apply(
            &r,
            TaskTransition::Start {
                detail: TaskDetail::default(),
            },
        ) else {
            panic!("start ignored")
        };
        assert_eq!(r.status, TaskStatus::Running);
        let TransitionOutcome::Applied(r) = apply(&r, TaskTransition::RequestCancel) else {
            panic!("cancel ignored")
        };
        assert_eq!(r.status, TaskStatus::Cancelling);
        let TransitionOutcome::Applied(r) = apply(&r, finish(TaskStatus::Cancelled)) else {
            panic!("finish ignored")
        };
        assert_eq!(r.status, TaskStatus::Cancelled);
        // Detail fields merge: the command survives, the exit status joins it.
        assert_eq!(r.detail.cmd.as_deref(), Some("true"));
        assert_eq!(r.detail.exit_status, Some(0));
    }

    #[test]
    fn terminal_is_never_reopened() {
        for terminal in [
            TaskStatus::Completed,
            TaskStatus::Failed,
            TaskStatus::Cancelled,
            TaskStatus::Interrupted,
        ] {
            let r = record(terminal);
            for t in [
                TaskTransition::Start {
                    detail: TaskDetail::default(),
                },
                TaskTransition::RequestCancel,
                finish(TaskStatus::Failed),
            ] {
                match apply(&r, t) {
                    TransitionOutcome::Ignored { current, .. } => assert_eq!(current, terminal),
                    TransitionOutcome::Applied(n) => {
                        panic!("terminal {terminal:?} reopened to {:?}", n.status)
                    }
                }
            }
        }
    }

    #[test]
    fn stale_start_after_running_is_ignored_and_queued_can_finish_directly() {
        let r = record(TaskStatus::Running);
        assert!(matches!(
            apply(
                &r,
                TaskTransition::Start {
                    detail: TaskDetail::default(),
                }
            ),
            TransitionOutcome::Ignored { .. }
        ));
        let q = record(TaskStatus::Queued);
        assert!(
            matches!(apply(&q, finish(TaskStatus::Failed)), TransitionOutcome::Applied(ref n) if n.status == TaskStatus::Failed)
        );
    }

    #[test]
    fn finishing_needs_a_terminal_status() {
        let r = record(TaskStatus::Running);
        assert_eq!(
            apply_transition(&r, finish(TaskStatus::Running), "t"),
            Err(TaskTransitionError::NotTerminal(TaskStatus::Running))
        );
    }

    #[test]
    fn a_failed_or_interrupted_task_says_why() {
        let r = record(TaskStatus::Running);
        let failed = TaskTransition::Finish {
            status: TaskStatus::Failed,
            summary: Some("exit 2: test parser::empty failed".into()),
            detail: TaskDetail {
                exit_status: Some(2),
                ..TaskDetail::default()
            },
        };
        let TransitionOutcome::Applied(n) = apply(&r, failed) else {
            panic!("applied")
        };
        let a = n.failure_artifact.expect("an artifact");
        assert_eq!(
            (a.category, a.kind.as_str()),
            (FailureCategory::Task, "exit_status")
        );
        assert_eq!(a.exit_status, Some(2));
        assert_eq!(a.task_id.as_deref(), Some("task_1"));
        assert_eq!(a.summary, "exit 2: test parser::empty failed");
        assert_eq!(a.metadata.get("cmd").map(String::as_str), Some("true"));
        assert_eq!(
            a.metadata.get("task_kind").map(String::as_str),
            Some("command_task")
        );

        // Killed by a signal: said so, with the signal.
        let killed = TaskTransition::Finish {
            status: TaskStatus::Failed,
            summary: Some("killed by signal 9".into()),
            detail: TaskDetail {
                signal: Some(9),
                ..TaskDetail::default()
            },
        };
        let TransitionOutcome::Applied(k) = apply(&r, killed) else {
            panic!("applied")
        };
        let a = k.failure_artifact.expect("an artifact");
        assert_eq!(a.kind, "signal");
        assert_eq!(a.metadata.get("signal").map(String::as_str), Some("9"));

        let TransitionOutcome::Applied(i) = apply(&r, finish(TaskStatus::Interrupted)) else {
            panic!("applied")
        };
        assert_eq!(
            i.failure_artifact.map(|a| a.kind),
            Some("interrupted".into())
        );
        let TransitionOutcome::Applied(ok) = apply(&r, finish(TaskStatus::Completed)) else {
            panic!("applied")
        };
        assert_eq!(ok.failure_artifact, None);
    }
}
