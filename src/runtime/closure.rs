//! Closure: the derived outcome of the current runtime facts (spec
//! "Closure Decision"). `derive_closure` is a pure function of
//! `ClosureFacts`; it owns the precedence order and nothing else. Building
//! the facts (which tasks, waits and timers are in scope) belongs to the
//! scheduler projection, and closure never writes `AgentStatus`.
//!
//! Precedence (scheduler RFC, "Closure Relationship"): runtime error;
//! operator-input wait; active blocking tasks; active waiting intents;
//! active timers; turn in progress; failed terminal turn; runnable work
//! signal; completed terminal turn; no waiting condition. Invariants:
//! `waiting_reason` is present only when the outcome is `waiting`, and
//! `work_signal` only when it is `continuable`.

use crate::model::decision::{
    ClosureDecision, ClosureOutcome, RuntimePosture, TurnPhase, TurnTerminalKind, WorkSignal,
};

use crate::model::waiting::WaitingReason;

/// The facts closure is derived from, already scoped by the projection
/// (ids are kept so the evidence can name them).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClosureFacts {
    pub runtime_error: Option<String>,
    /// Tool calls waiting for the operator's approval.
    pub pending_approvals: Vec<String>,
    /// Work items whose plan status is `needs_input`.
    pub operator_wait_work_items: Vec<String>,
    /// Active (non-terminal) tasks with the blocking wait policy.
    pub blocking_tasks: Vec<String>,
    pub waiting_intents: Vec<String>,
    pub timers: Vec<String>,
    pub turn: TurnPhase,
    pub last_turn_terminal: Option<TurnTerminalKind>,
    pub work_signal: Option<WorkSignal>,
    pub runtime_posture: RuntimePosture,
}

impl ClosureFacts {
    /// No facts at all: an awake agent that has never run a turn.
    pub fn empty() -> Self {
        ClosureFacts {
            runtime_error: None,
            pending_approvals: Vec::new(),
            operator_wait_work_items: Vec::new(),
            blocking_tasks: Vec::new(),
            waiting_intents: Vec::new(),
            timers: Vec::new(),
            turn: TurnPhase::Idle,
            last_turn_terminal: None,
            work_signal: None,
            runtime_posture: RuntimePosture::Awake,
        }
    }
}

/// Derive the closure decision with the RFC's fixed precedence.
pub fn derive_closure(facts: &ClosureFacts) -> ClosureDecision {
    let mut evidence = Vec::new();
    let outcome = select(facts, &mut evidence);
    let (outcome, waiting_reason, work_signal) = match outcome {
        Selected::Failed => (ClosureOutcome::Failed, None, None),
        Selected::Waiting(reason) => (ClosureOutcome::Waiting, Some(reason), None),
        Selected::Continuable(signal) => (ClosureOutcome::Continuable, None, signal),
        Selected::Completed => (ClosureOutcome::Completed, None, None),
    };
    if facts.runtime_posture == RuntimePosture::Sleeping {
        evidence.push("runtime_sleeping".to_owned());
    }
    ClosureDecision {
        outcome,
        waiting_reason,
        work_signal,
        runtime_posture: facts.runtime_posture,
        evidence,
    }
}

enum Selected {
    Failed,
    Waiting(WaitingReason),
    Continuable(Option<WorkSignal>),
    Completed,
}

fn named(evidence: &mut Vec<String>, label: &str, ids: &[String]) {
    evidence.extend(ids.iter().map(|id| format!("{label}:{id}")));
}

fn select(facts: &ClosureFacts, evidence: &mut Vec<String>) -> Selected {
    if let Some(message) = &facts.runtime_error {
        evidence.push(format!("runtime_error:{message}"));
        return Selected::Failed;
    }
    if !facts.pending_approvals.is_empty() {
        named(evidence, "approval_open", &facts.pending_approvals);
        return Selected::Waiting(WaitingReason::AwaitingOperatorInput);
    }
    if !facts.operator_wait_work_items.is_empty() {
        named(
            evidence,
            "work_item_needs_input",
            &facts.operator_wait_work_items,
        );
        return Selected::Waiting(WaitingReason::AwaitingOperatorInput);
    }
    if !facts.blocking_tasks.is_empty() {
        named(evidence, "blocking_task_active", &facts.blocking_tasks);
        return Selected::Waiting(WaitingReason::AwaitingTaskResult);
    }
    if !facts.waiting_intents.is_empty() {
        named(evidence, "waiting_intent_active", &facts.waiting_intents);
        return Selected::Waiting(WaitingReason::AwaitingExternalChange);
    }
    if !facts.timers.is_empty() {
        named(evidence, "timer_active", &facts.timers);
        return Selected::Waiting(WaitingReason::AwaitingTimer);
    }
    match facts.turn {
        TurnPhase::InProgress => {
            // The execution pass has not settled: nothing is waiting and
            // nothing has failed or completed yet, so the work continues.
            evidence.push("turn_in_progress".to_owned());
            return Selected::Continuable(None);
        }
        TurnPhase::Idle => {}
    }
    if let Some(kind) = facts.last_turn_terminal.filter(|k| k.is_failure()) {
        evidence.push(format!("last_turn_terminal:{}", kind.as_str()));
        return Selected::Failed;
    }
    if let Some(signal) = &facts.work_signal {
        evidence.push(format!("runnable_work:{}", signal.work_item_id));
        return Selected::Continuable(Some(signal.clone()));
    }
    match facts.last_turn_terminal {
        Some(kind) => evidence.push(format!("last_turn_terminal:{}", kind.as_str())),
        None => evidence.push("no_turn_terminal_observed".to_owned()),
    }
    evidence.push("no_waiting_condition".to_owned());
    Selected::Completed
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::decision::ReactivationMode;

    fn ids(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| (*s).to_owned()).collect()
    }

    /// Every closure fact switched on; each test removes the higher ones.
    fn all_facts() -> ClosureFacts {
        ClosureFacts {
            runtime_error: Some("provider down".into()),
            pending_approvals: Vec::new(),
            operator_wait_work_items: ids(&["w_input"]),
            blocking_tasks: ids(&["t_block"]),
            waiting_intents: ids(&["i_ci"]),
            timers: ids(&["tm_1"]),
            turn: TurnPhase::InProgress,
            last_turn_terminal: Some(TurnTerminalKind::Aborted),
            work_signal: Some(WorkSignal::continue_active("w_run")),
            runtime_posture: RuntimePosture::Awake,
        }
    }

    #[test]
    fn precedence_ladder_follows_the_rfc_order() {
        let mut f = all_facts();
        let step = |f: &ClosureFacts| {
            let d = derive_closure(f);
            (d.outcome, d.waiting_reason)
        };
        assert_eq!(step(&f), (ClosureOutcome::Failed, None));
        f.runtime_error = None;
        assert_eq!(
            step(&f),
            (
                ClosureOutcome::Waiting,
                Some(WaitingReason::AwaitingOperatorInput)
            )
        );
        f.operator_wait_work_items.clear();
        assert_eq!(
            step(&f),
            (
                ClosureOutcome::Waiting,
                Some(WaitingReason::AwaitingTaskResult)
            )
        );
        f.blocking_tasks.clear();
        assert_eq!(
            step(&f),
            (
                ClosureOutcome::Waiting,
                Some(WaitingReason::AwaitingExternalChange)
            )
        );
        f.waiting_intents.clear();
        assert_eq!(
            step(&f),
            (ClosureOutcome::Waiting, Some(WaitingReason::AwaitingTimer))
        );
        f.timers.clear();
        let in_turn = derive_closure(&f);
        assert_eq!(in_turn.outcome, ClosureOutcome::Continuable);
        assert_eq!(in_turn.work_signal, None);
        assert!(in_turn.evidence.contains(&"turn_in_progress".to_owned()));
        f.turn = TurnPhase::Idle;
        assert_eq!(step(&f), (ClosureOutcome::Failed, None));
        f.last_turn_terminal = Some(TurnTerminalKind::Completed);
        let cont = derive_closure(&f);
        assert_eq!(cont.outcome, ClosureOutcome::Continuable);
        assert_eq!(cont.work_signal, Some(WorkSignal::continue_active("w_run")));
        f.work_signal = None;
        let done = derive_closure(&f);
        assert_eq!(done.outcome, ClosureOutcome::Completed);
        assert!(done
            .evidence
            .contains(&"last_turn_terminal:completed".to_owned()));
    }

    #[test]
    fn waiting_reason_only_when_waiting_and_signal_only_when_continuable() {
        let mut f = all_facts();
        for _ in 0..9 {
            let d = derive_closure(&f);
            assert_eq!(
                d.waiting_reason.is_some(),
                d.outcome == ClosureOutcome::Waiting
            );
            if d.work_signal.is_some() {
                assert_eq!(d.outcome, ClosureOutcome::Continuable);
            }
            // Peel one fact per round, top of the ladder first.
            if f.runtime_error.take().is_some() {
                continue;
            }
            if !f.operator_wait_work_items.is_empty() {
                f.operator_wait_work_items.clear();
            } else if !f.blocking_tasks.is_empty() {
                f.blocking_tasks.clear();
            } else if !f.waiting_intents.is_empty() {
                f.waiting_intents.clear();
            } else if !f.timers.is_empty() {
                f.timers.clear();
            } else if f.turn == TurnPhase::InProgress {
                f.turn = TurnPhase::Idle;
            } else if f.last_turn_terminal.take().is_none() {
                f.work_signal = None;
            }
        }
    }

    #[test]
    fn baseline_over_budget_terminal_is_a_failed_turn() {
        let f = ClosureFacts {
            last_turn_terminal: Some(TurnTerminalKind::BaselineOverBudget),
            work_signal: Some(WorkSignal::continue_active("w1")),
            ..ClosureFacts::empty()
        };
        let d = derive_closure(&f);
        assert_eq!(d.outcome, ClosureOutcome::Failed);
        assert!(d
            .evidence
            .contains(&"last_turn_terminal:baseline_over_budget".to_owned()));
    }

    #[test]
    fn no_facts_is_completed_with_explicit_evidence() {
        let d = derive_closure(&ClosureFacts::empty());
        assert_eq!(d.outcome, ClosureOutcome::Completed);
        assert_eq!(
            d.evidence,
            vec!["no_turn_terminal_observed", "no_waiting_condition"]
        );
    }

    #[test]
    fn queued_work_signal_is_continuable_and_names_the_item() {
        let f = ClosureFacts {
            work_signal: Some(WorkSignal::activate_queued("w_q")),
            ..ClosureFacts::empty()
        };
        let d = derive_closure(&f);
        assert_eq!(d.outcome, ClosureOutcome::Continuable);
        assert_eq!(
            d.work_signal.map(|s| s.reactivation_mode),
            Some(ReactivationMode::ActivateQueued)
        );
        assert!(d.evidence.contains(&"runnable_work:w_q".to_owned()));
    }

    #[test]
    fn sleeping_posture_is_reported_independently_of_outcome() {
        let f = ClosureFacts {
            timers: ids(&["tm"]),
            runtime_posture: RuntimePosture::Sleeping,
            ..ClosureFacts::empty()
        };
        let d = derive_closure(&f);
        assert_eq!(d.outcome, ClosureOutcome::Waiting);
        assert_eq!(d.runtime_posture, RuntimePosture::Sleeping);
        assert!(d.evidence.contains(&"runtime_sleeping".to_owned()));
    }
}
