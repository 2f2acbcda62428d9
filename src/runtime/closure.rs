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

use serde::{Deserialize, Serialize};

use super::waiting::WaitingReason;

/// `ClosureDecision.outcome`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ClosureOutcome {
    Completed,
    Continuable,
    Failed,
    Waiting,
}

impl ClosureOutcome {
    pub fn as_str(self) -> &'static str {
        match self {
            ClosureOutcome::Completed => "completed",
            ClosureOutcome::Continuable => "continuable",
            ClosureOutcome::Failed => "failed",
            ClosureOutcome::Waiting => "waiting",
        }
    }
}

/// `ClosureDecision.runtimePosture`: whether the agent is awake or sleeping.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RuntimePosture {
    Awake,
    Sleeping,
}

/// How the last settled turn ended. `BaselineOverBudget` is the turn-local
/// compaction terminal record: the turn could not fit its baseline prompt.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TurnTerminalKind {
    Completed,
    Aborted,
    BaselineOverBudget,
}

impl TurnTerminalKind {
    pub fn as_str(self) -> &'static str {
        match self {
            TurnTerminalKind::Completed => "completed",
            TurnTerminalKind::Aborted => "aborted",
            TurnTerminalKind::BaselineOverBudget => "baseline_over_budget",
        }
    }

    pub fn is_failure(self) -> bool {
        match self {
            TurnTerminalKind::Completed => false,
            TurnTerminalKind::Aborted | TurnTerminalKind::BaselineOverBudget => true,
        }
    }
}

/// Whether a provider/tool turn is executing right now.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TurnPhase {
    #[default]
    Idle,
    InProgress,
}

/// `workSignal.status`: the runnable item is the current focus or queued.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WorkSignalStatus {
    Active,
    Queued,
}

/// `workSignal.reactivationMode`. `ActivateQueued` makes queued work visible
/// to the model; it never mutates `current_work_item_id`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReactivationMode {
    ContinueActive,
    ActivateQueued,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorkSignal {
    pub work_item_id: String,
    pub status: WorkSignalStatus,
    pub reactivation_mode: ReactivationMode,
}

impl WorkSignal {
    pub fn continue_active(work_item_id: &str) -> Self {
        WorkSignal {
            work_item_id: work_item_id.to_owned(),
            status: WorkSignalStatus::Active,
            reactivation_mode: ReactivationMode::ContinueActive,
        }
    }

    pub fn activate_queued(work_item_id: &str) -> Self {
        WorkSignal {
            work_item_id: work_item_id.to_owned(),
            status: WorkSignalStatus::Queued,
            reactivation_mode: ReactivationMode::ActivateQueued,
        }
    }
}

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

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClosureDecision {
    pub outcome: ClosureOutcome,
    pub waiting_reason: Option<WaitingReason>,
    pub work_signal: Option<WorkSignal>,
    pub runtime_posture: RuntimePosture,
    pub evidence: Vec<String>,
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
