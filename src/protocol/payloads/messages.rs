//! Payloads of an agent's control and its message queue: creation, state changes, control actions, admission and settling, scheduler decisions and system ticks.

use serde::{Deserialize, Serialize};

use crate::model::agent::{AgentRecord, AgentStatus};
use crate::model::decision::PostureView;
use crate::model::decision::SchedulerDecision;
use crate::model::decision::SystemTickReason;
use crate::model::decision::TurnTerminalKind;
use crate::model::message::QueueEntryStatus;
use crate::model::message::{MessageEnvelope, MessageKind, Priority};
use crate::protocol::views::ControlAction;

/// `agent_created`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgentCreated {
    pub agent: AgentRecord,
    /// The template the agent home was made from, if one was applied.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub template: Option<crate::model::agent::TemplateProvenance>,
}

/// `agent_archived`: the agent runs nothing more and leaves the listings;
/// its records and ledger stay.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgentArchived {
    pub status_before: AgentStatus,
    /// Why: `operator`, `supervision_completed`, `supervision_missing`,
    /// `parent_archived`, `run_finished`.
    pub reason: String,
    /// The supervising task of a private child, when there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub supervision_task_id: Option<String>,
}

/// `skill_activated`: a successful command read a skill's `SKILL.md` or
/// ran one of its scripts; the skill is turn-active.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SkillActivated {
    pub name: String,
    pub scope: crate::model::skill::SkillScope,
    pub load_reason: crate::model::skill::LoadReason,
    /// What triggered it: the `SKILL.md`, or the `scripts/*` path run.
    pub path: String,
    /// The skill's `SKILL.md`.
    pub entrypoint_path: String,
    pub run_id: String,
}

/// `agent_state_changed`: the control posture moved through a decision.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgentStateChanged {
    pub from: AgentStatus,
    pub to: AgentStatus,
    /// The decision that moved it.
    pub cause: crate::model::decision::SchedulerDecisionKind,
}

/// `control_applied`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ControlApplied {
    pub action: ControlAction,
    pub from: AgentStatus,
    pub to: AgentStatus,
    #[serde(default)]
    pub note: String,
}

/// `message_admitted`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MessageAdmitted {
    pub message: MessageEnvelope,
    pub queue_status: QueueEntryStatus,
    #[serde(default)]
    pub admission_seq: u64,
}

/// `message_rejected`: admission refused (the agent is stopped).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MessageRejected {
    #[serde(default)]
    pub message_id: String,
    #[serde(default)]
    pub reason: String,
    #[serde(default)]
    pub hint: String,
    pub kind: MessageKind,
    /// One line, at most 120 characters.
    #[serde(default)]
    pub body_preview: String,
}

/// `message_processing_started`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MessageProcessingStarted {
    #[serde(default)]
    pub message_id: String,
    pub kind: MessageKind,
    pub priority: Priority,
    /// Dequeued before a restart and processed again.
    #[serde(default)]
    pub replay: bool,
    pub queue_status: QueueEntryStatus,
}

/// `message_processed`, `message_aborted`, `message_interjected` and
/// `message_dropped`: a queue entry reached its final status.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MessageSettled {
    #[serde(default)]
    pub message_id: String,
    pub from: QueueEntryStatus,
    pub queue_status: QueueEntryStatus,
    #[serde(default)]
    pub detail: SettleDetail,
}

/// Why a queue entry settled, as far as known.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SettleDetail {
    /// The turn that processed, aborted or took in the message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn_terminal: Option<TurnTerminalKind>,
    /// Settled by the scheduler without a model turn.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reduced_without_turn: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evidence: Option<Vec<String>>,
    /// Settled without a turn, but its content kept for the agent's next
    /// model turn: it arrived while the agent waited on something else.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub carried_for_model: Option<bool>,
    /// Why a message was dropped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// `scheduler_decision`: the decision, then the posture and status it
/// was made in.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SchedulerDecisionMade {
    #[serde(flatten)]
    pub decision: SchedulerDecision,
    pub posture: PostureView,
    pub status: AgentStatus,
}

/// `system_tick_emitted`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SystemTickEmitted {
    pub reason: SystemTickReason,
    /// Empty when the decision had none.
    #[serde(default)]
    pub idempotency_key: String,
    #[serde(default)]
    pub message_id: String,
    #[serde(default)]
    pub work_item_id: Option<String>,
}
