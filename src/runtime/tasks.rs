//! Task records: concrete operational execution units (command tasks,
//! child-agent tasks, sleep jobs). Lifecycle is monotonic:
//! queued -> running -> cancelling -> terminal (completed, failed,
//! cancelled, interrupted); a terminal record is never reopened.

pub use crate::model::task::*;

/// Every task lifecycle write goes through this one reducer. Transitions are
/// monotonic: queued -> running -> cancelling -> terminal (and queued or
/// running straight to terminal). A terminal record is never reopened, and
/// a stale non-terminal update of a terminal task is ignored, not an error,
/// so out-of-order task messages cannot corrupt the record. Creation is
/// not a transition: a new record is written with `task_created`.
#[derive(Debug, Clone, PartialEq)]
pub enum TaskTransition {
    Start {
        detail: Option<serde_json::Value>,
    },
    RequestCancel,
    Finish {
        status: TaskStatus,
        summary: Option<String>,
        detail: Option<serde_json::Value>,
    },
}

/// What applying a transition did.
#[derive(Debug, Clone, PartialEq)]
pub enum TransitionOutcome {
    /// The record changed; persist it and record `task_status_changed`.
    Applied(TaskRecord),
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

/// Merge `extra` object fields into `detail` (objects only; other values
/// replace).
fn merge_detail(detail: &mut Option<serde_json::Value>, extra: Option<serde_json::Value>) {
    match (detail.as_mut(), extra) {
        (Some(serde_json::Value::Object(base)), Some(serde_json::Value::Object(more))) => {
            base.extend(more);
        }
        (_, Some(v)) => *detail = Some(v),
        (_, None) => {}
    }
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
            merge_detail(&mut next.detail, detail);
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
            merge_detail(&mut next.detail, detail);
        }
    }
    Ok(TransitionOutcome::Applied(next))
}

#[cfg(test)]
mod tests {
    use super::*;

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
            detail: Some(serde_json::json!({"cmd": "true"})),
            created_at: "t0".into(),
            updated_at: "t0".into(),
        }
    }

    fn apply(r: &TaskRecord, t: TaskTransition) -> TransitionOutcome {
        apply_transition(r, t, "t1").unwrap()
    }

    fn finish(status: TaskStatus) -> TaskTransition {
        TaskTransition::Finish {
            status,
            summary: Some("done".into()),
            detail: Some(serde_json::json!({"exit_status": 0})),
        }
    }

    #[test]
    fn lifecycle_moves_forward() {
        let r = record(TaskStatus::Queued);
        let TransitionOutcome::Applied(r) = apply(&r, TaskTransition::Start { detail: None })
        else {
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
        let d = r.detail.unwrap_or_default();
        assert_eq!(d["cmd"], "true");
        assert_eq!(d["exit_status"], 0);
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
                TaskTransition::Start { detail: None },
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
            apply(&r, TaskTransition::Start { detail: None }),
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
}
