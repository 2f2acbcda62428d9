//! What the runtime decided and why, as it travels: the closure decision
//! (`ClosureDecision`, its outcome, work signal and runtime posture) and
//! how a turn ended (`TurnTerminalKind`). The rules that derive them
//! (`runtime::closure::derive_closure`) live in the engine.

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

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClosureDecision {
    pub outcome: ClosureOutcome,
    pub waiting_reason: Option<WaitingReason>,
    pub work_signal: Option<WorkSignal>,
    pub runtime_posture: RuntimePosture,
    pub evidence: Vec<String>,
}

/// `SchedulerDecisionKind`, serialised as the RFC writes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum SchedulerDecisionKind {
    StartModelTurn,
    ReduceMessageOnly,
    EmitSystemTick,
    WaitForTask,
    WaitForExternalChange,
    WaitForTimer,
    WaitForOperator,
    Sleep,
    StayIdle,
    Stop,
    Noop,
}

impl SchedulerDecisionKind {
    pub fn as_str(self) -> &'static str {
        match self {
            SchedulerDecisionKind::StartModelTurn => "StartModelTurn",
            SchedulerDecisionKind::ReduceMessageOnly => "ReduceMessageOnly",
            SchedulerDecisionKind::EmitSystemTick => "EmitSystemTick",
            SchedulerDecisionKind::WaitForTask => "WaitForTask",
            SchedulerDecisionKind::WaitForExternalChange => "WaitForExternalChange",
            SchedulerDecisionKind::WaitForTimer => "WaitForTimer",
            SchedulerDecisionKind::WaitForOperator => "WaitForOperator",
            SchedulerDecisionKind::Sleep => "Sleep",
            SchedulerDecisionKind::StayIdle => "StayIdle",
            SchedulerDecisionKind::Stop => "Stop",
            SchedulerDecisionKind::Noop => "Noop",
        }
    }
}

/// Why the decision was taken. Tick reasons are `wake_hint`,
/// `continue_active` and `queued_available`; waits use the closure's
/// waiting-reason vocabulary.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DecisionReason {
    Stopped,
    Paused,
    Booting,
    TurnInProgress,
    QueuedInput,
    LivenessOnlyInput,
    WakeHint,
    ContinueActive,
    QueuedAvailable,
    AwaitingTaskResult,
    AwaitingOperatorInput,
    AwaitingExternalChange,
    AwaitingTimer,
    NoRunnableWork,
    RunnableWorkAlreadyTicked,
    AlreadyAsleep,
}

impl DecisionReason {
    pub fn as_str(self) -> &'static str {
        match self {
            DecisionReason::Stopped => "stopped",
            DecisionReason::Paused => "paused",
            DecisionReason::Booting => "booting",
            DecisionReason::TurnInProgress => "turn_in_progress",
            DecisionReason::QueuedInput => "queued_input",
            DecisionReason::LivenessOnlyInput => "liveness_only_input",
            DecisionReason::WakeHint => "wake_hint",
            DecisionReason::ContinueActive => "continue_active",
            DecisionReason::QueuedAvailable => "queued_available",
            DecisionReason::AwaitingTaskResult => "awaiting_task_result",
            DecisionReason::AwaitingOperatorInput => "awaiting_operator_input",
            DecisionReason::AwaitingExternalChange => "awaiting_external_change",
            DecisionReason::AwaitingTimer => "awaiting_timer",
            DecisionReason::NoRunnableWork => "no_runnable_work",
            DecisionReason::RunnableWorkAlreadyTicked => "runnable_work_already_ticked",
            DecisionReason::AlreadyAsleep => "already_asleep",
        }
    }

    pub(crate) fn of_tick(reason: SystemTickReason) -> Self {
        match reason {
            SystemTickReason::WakeHint => DecisionReason::WakeHint,
            SystemTickReason::ContinueActive => DecisionReason::ContinueActive,
            SystemTickReason::QueuedAvailable => DecisionReason::QueuedAvailable,
        }
    }
}

/// One scheduler decision with its metadata. Serialises to the
/// `scheduler_decision` event data (`decision` holds the kind).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SchedulerDecision {
    #[serde(rename = "decision")]
    pub kind: SchedulerDecisionKind,
    pub reason: DecisionReason,
    pub model_reentry: bool,
    pub liveness_only: bool,
    pub work_item_id: Option<String>,
    pub task_id: Option<String>,
    pub message_id: Option<String>,
    /// Set on `EmitSystemTick`: the key to put on the tick message.
    pub idempotency_key: Option<String>,
    pub evidence: Vec<String>,
}

/// Serialised as the RFC writes it (`WaitingForOperator`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum AgentSchedulingPosture {
    ActiveTurn,
    HasQueuedInput,
    HasRunnableWork,
    WaitingForTask,
    WaitingForExternal,
    WaitingForOperator,
    Blocked,
    Idle,
    Archived,
}

impl AgentSchedulingPosture {
    pub fn as_str(self) -> &'static str {
        match self {
            AgentSchedulingPosture::ActiveTurn => "ActiveTurn",
            AgentSchedulingPosture::HasQueuedInput => "HasQueuedInput",
            AgentSchedulingPosture::HasRunnableWork => "HasRunnableWork",
            AgentSchedulingPosture::WaitingForTask => "WaitingForTask",
            AgentSchedulingPosture::WaitingForExternal => "WaitingForExternal",
            AgentSchedulingPosture::WaitingForOperator => "WaitingForOperator",
            AgentSchedulingPosture::Blocked => "Blocked",
            AgentSchedulingPosture::Idle => "Idle",
            AgentSchedulingPosture::Archived => "Archived",
        }
    }
}

impl std::str::FromStr for AgentSchedulingPosture {
    type Err = serde::de::value::Error;

    /// The name `as_str` gives (as on the wire).
    fn from_str(name: &str) -> Result<Self, Self::Err> {
        use serde::de::IntoDeserializer;
        AgentSchedulingPosture::deserialize(name.into_deserializer())
    }
}

impl std::fmt::Display for AgentSchedulingPosture {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.pad(self.as_str())
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PostureView {
    pub posture: AgentSchedulingPosture,
    /// A short human reason, e.g. "2 queued messages".
    pub reason: String,
}

/// Why the runtime emitted a system tick.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SystemTickReason {
    WakeHint,
    ContinueActive,
    QueuedAvailable,
}

impl SystemTickReason {
    pub fn as_str(self) -> &'static str {
        match self {
            SystemTickReason::WakeHint => "wake_hint",
            SystemTickReason::ContinueActive => "continue_active",
            SystemTickReason::QueuedAvailable => "queued_available",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "wake_hint" => Some(SystemTickReason::WakeHint),
            "continue_active" => Some(SystemTickReason::ContinueActive),
            "queued_available" => Some(SystemTickReason::QueuedAvailable),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::AgentSchedulingPosture as P;

    #[test]
    fn a_posture_reads_back_from_its_name_and_is_that_name_on_the_wire() {
        let all = [
            P::ActiveTurn,
            P::HasQueuedInput,
            P::HasRunnableWork,
            P::WaitingForTask,
            P::WaitingForExternal,
            P::WaitingForOperator,
            P::Blocked,
            P::Idle,
            P::Archived,
        ];
        for p in all {
            assert_eq!(p.as_str().parse::<P>().unwrap(), p);
            assert_eq!(serde_json::to_value(p).unwrap(), p.as_str());
            assert_eq!(format!("{p:<20}|"), format!("{:<20}|", p.as_str()));
        }
        assert!("Sleeping".parse::<P>().is_err());
    }
}
