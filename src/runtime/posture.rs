//! The derived agent-level scheduling posture (agent-state RFC, "Derived
//! AgentSchedulingPosture"). Computed from lifecycle, turn, queue, work
//! item, task and wait facts; never stored and never written by the agent.
//! `AgentStatus` (control posture) is a separate, cached projection.
//!
//! Precedence: Archived, ActiveTurn, HasQueuedInput, HasRunnableWork,
//! WaitingForTask, WaitingForExternal (waiting intents and timers),
//! WaitingForOperator, Blocked, Idle. Passive sleep never hides queued input
//! or runnable work. A paused agent keeps its factual posture; the reason
//! string says it is paused.

use crate::model::decision::{AgentSchedulingPosture, PostureView};

use crate::model::agent::AgentStatus;
use crate::model::decision::TurnPhase;

/// A work item that is blocked only by its free-form `blocked_by`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlockedWork {
    pub work_item_id: String,
    pub blocked_by: String,
}

/// The facts posture is derived from (built by the scheduler projection).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PostureFacts {
    pub status: AgentStatus,
    pub turn: TurnPhase,
    /// Message ids of admitted input still pending (queued or dequeued).
    pub queued_inputs: Vec<String>,
    pub runnable_work_items: Vec<String>,
    /// Active blocking tasks (agent-level or bound to open work).
    pub task_waits: Vec<String>,
    /// Active waiting intents (agent-scoped or bound to open work), by
    /// what they wait for.
    pub external_waits: Vec<String>,
    pub timer_waits: Vec<String>,
    /// Open work items with `plan_status = needs_input`.
    pub operator_waits: Vec<String>,
    /// Open approvals (waiting for an answer, or approved and running),
    /// each described.
    pub approvals: Vec<String>,
    /// The running turn waits for the answer to its approvals.
    pub turn_awaits: bool,
    pub blocked_work: Vec<BlockedWork>,
}

fn plural(n: usize, one: &str, many: &str) -> String {
    if n == 1 {
        format!("1 {one}")
    } else {
        format!("{n} {many}")
    }
}

fn one_or_count(ids: &[String], what: &str, many: &str) -> String {
    match ids {
        [only] => format!("{what} {only}"),
        _ => plural(ids.len(), what, many),
    }
}

/// Derive the posture with the RFC precedence.
pub fn derive_posture(facts: &PostureFacts) -> PostureView {
    let (posture, reason) = select(facts);
    let reason = match facts.status {
        AgentStatus::Paused => format!("{reason} (paused)"),
        AgentStatus::Booting
        | AgentStatus::AwakeIdle
        | AgentStatus::AwakeRunning
        | AgentStatus::AwaitingTask
        | AgentStatus::Asleep
        | AgentStatus::Stopped => reason,
    };
    PostureView { posture, reason }
}

fn select(f: &PostureFacts) -> (AgentSchedulingPosture, String) {
    use AgentSchedulingPosture as P;
    match f.status {
        AgentStatus::Stopped => return (P::Archived, "stopped".to_owned()),
        AgentStatus::Booting
        | AgentStatus::AwakeIdle
        | AgentStatus::AwakeRunning
        | AgentStatus::AwaitingTask
        | AgentStatus::Asleep
        | AgentStatus::Paused => {}
    }
    match f.turn {
        // The contract's precedence keeps a running turn first; its reason
        // says when the turn waits for the operator's answer.
        TurnPhase::InProgress => {
            let why = match (f.turn_awaits, f.approvals.as_slice()) {
                (false, _) | (true, []) => "turn in progress".to_owned(),
                (true, [only]) => format!("turn in progress, waiting for your answer: {only}"),
                (true, many) => format!(
                    "turn in progress, waiting for your answer: {} approvals open",
                    many.len()
                ),
            };
            return (P::ActiveTurn, why);
        }
        TurnPhase::Idle => {}
    }
    if !f.queued_inputs.is_empty() {
        return (
            P::HasQueuedInput,
            plural(f.queued_inputs.len(), "queued message", "queued messages"),
        );
    }
    if !f.runnable_work_items.is_empty() {
        let what = one_or_count(
            &f.runnable_work_items,
            "runnable work item",
            "runnable work items",
        );
        return (P::HasRunnableWork, what);
    }
    if !f.task_waits.is_empty() {
        let what = one_or_count(&f.task_waits, "task", "tasks");
        return (P::WaitingForTask, format!("waiting on {what}"));
    }
    if !f.external_waits.is_empty() {
        let what = match f.external_waits.as_slice() {
            [only] => only.clone(),
            many => plural(many.len(), "external wait", "external waits"),
        };
        return (P::WaitingForExternal, format!("waiting on {what}"));
    }
    if !f.timer_waits.is_empty() {
        let what = one_or_count(&f.timer_waits, "timer", "timers");
        return (P::WaitingForExternal, format!("waiting on {what}"));
    }
    if !f.approvals.is_empty() {
        let what = match f.approvals.as_slice() {
            [only] => only.clone(),
            many => format!("{} approvals open", many.len()),
        };
        return (P::WaitingForOperator, what);
    }
    if !f.operator_waits.is_empty() {
        let what = one_or_count(&f.operator_waits, "work item", "work items");
        return (
            P::WaitingForOperator,
            format!("operator input needed for {what}"),
        );
    }
    match f.blocked_work.as_slice() {
        [] => (P::Idle, "idle".to_owned()),
        [only] => (
            P::Blocked,
            format!(
                "work item {} blocked: {}",
                only.work_item_id, only.blocked_by
            ),
        ),
        many => (P::Blocked, format!("{} work items blocked", many.len())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use AgentSchedulingPosture as P;

    fn ids(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| (*s).to_owned()).collect()
    }

    fn everything() -> PostureFacts {
        PostureFacts {
            status: AgentStatus::Asleep,
            turn: TurnPhase::InProgress,
            queued_inputs: ids(&["m1", "m2"]),
            runnable_work_items: ids(&["w_run"]),
            task_waits: ids(&["task_x"]),
            external_waits: ids(&["i_ci"]),
            timer_waits: ids(&["tm"]),
            operator_waits: ids(&["w_q"]),
            approvals: Vec::new(),
            turn_awaits: false,
            blocked_work: vec![BlockedWork {
                work_item_id: "w_b".into(),
                blocked_by: "vendor reply".into(),
            }],
        }
    }

    #[test]
    fn precedence_ladder_and_reasons() {
        let mut f = everything();
        let mut seen = Vec::new();
        loop {
            let v = derive_posture(&f);
            seen.push((v.posture, v.reason));
            if f.turn == TurnPhase::InProgress {
                f.turn = TurnPhase::Idle;
            } else if !f.queued_inputs.is_empty() {
                f.queued_inputs.clear();
            } else if !f.runnable_work_items.is_empty() {
                f.runnable_work_items.clear();
            } else if !f.task_waits.is_empty() {
                f.task_waits.clear();
            } else if !f.external_waits.is_empty() {
                f.external_waits.clear();
            } else if !f.timer_waits.is_empty() {
                f.timer_waits.clear();
            } else if !f.operator_waits.is_empty() {
                f.operator_waits.clear();
            } else if !f.blocked_work.is_empty() {
                f.blocked_work.clear();
            } else {
                break;
            }
        }
        let want: Vec<(P, &str)> = vec![
            (P::ActiveTurn, "turn in progress"),
            (P::HasQueuedInput, "2 queued messages"),
            (P::HasRunnableWork, "runnable work item w_run"),
            (P::WaitingForTask, "waiting on task task_x"),
            (P::WaitingForExternal, "waiting on i_ci"),
            (P::WaitingForExternal, "waiting on timer tm"),
            (
                P::WaitingForOperator,
                "operator input needed for work item w_q",
            ),
            (P::Blocked, "work item w_b blocked: vendor reply"),
            (P::Idle, "idle"),
        ];
        let got: Vec<(P, &str)> = seen.iter().map(|(p, r)| (*p, r.as_str())).collect();
        assert_eq!(got, want);
    }

    #[test]
    fn a_running_turn_stays_first_and_names_the_approval_it_waits_for() {
        let mut f = everything();
        f.approvals = ids(&["approval needed: ExecCommand `touch a`"]);
        // Open, but the turn does not wait for it (it went on).
        assert_eq!(derive_posture(&f).reason, "turn in progress");
        f.turn_awaits = true;
        let v = derive_posture(&f);
        assert_eq!(v.posture, P::ActiveTurn);
        assert_eq!(
            v.reason,
            "turn in progress, waiting for your answer: approval needed: ExecCommand `touch a`"
        );
        f.approvals.push("approval needed: ApplyPatch a.rs".into());
        let v = derive_posture(&f);
        assert_eq!(
            v.reason,
            "turn in progress, waiting for your answer: 2 approvals open"
        );
    }

    #[test]
    fn stopped_is_archived_whatever_else_is_true() {
        let f = PostureFacts {
            status: AgentStatus::Stopped,
            ..everything()
        };
        assert_eq!(derive_posture(&f).posture, P::Archived);
    }

    #[test]
    fn sleep_does_not_hide_runnable_work_and_paused_is_annotated() {
        let f = PostureFacts {
            status: AgentStatus::Paused,
            turn: TurnPhase::Idle,
            queued_inputs: ids(&["m1"]),
            ..everything()
        };
        let v = derive_posture(&f);
        assert_eq!(v.posture, P::HasQueuedInput);
        assert_eq!(v.reason, "1 queued message (paused)");
        let asleep = PostureFacts {
            status: AgentStatus::Asleep,
            turn: TurnPhase::Idle,
            queued_inputs: Vec::new(),
            ..everything()
        };
        assert_eq!(derive_posture(&asleep).posture, P::HasRunnableWork);
    }

    #[test]
    fn serialises_as_the_rfc_writes_it() {
        for p in [P::WaitingForOperator, P::HasRunnableWork, P::Archived] {
            let json = serde_json::to_string(&p).unwrap_or_default();
            assert_eq!(json, format!("\"{}\"", p.as_str()));
        }
    }
}
