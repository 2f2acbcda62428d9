//! The payload of every event kind, as the engine writes it and every
//! client reads it. A key the engine always writes, `null` when it has no
//! value, is a plain `Option`; a key only some producers write is skipped
//! when absent. Fields marked `#[serde(default)]` read as their default
//! when a record written by an older runtime lacks them, so a long-lived
//! ledger stays readable across upgrades; the rest (records, enums) must
//! be there, else the event reads as `Event::Unreadable`. docs/events.md
//! documents these fields; a test checks that every field of every sampled
//! payload is named on the kind's row there.

use std::borrow::Cow;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::runtime::agent::{AgentRecord, AgentStatus, DisplayMode};
use crate::runtime::closure::TurnTerminalKind;
use crate::runtime::context::SummarySource;
use crate::runtime::continuation::SystemTickReason;
use crate::runtime::envelope::{MessageEnvelope, MessageKind, Priority, TriggerKind};
use crate::runtime::host::cancel::CancelReason;
use crate::runtime::host::watch::GuidanceSource;
use crate::runtime::host::ControlAction;
use crate::runtime::posture::PostureView;
use crate::runtime::provider::{
    FailureArtifact, FailureKind, MalformedArguments, ProviderAttemptTimeline, TokenUsage,
};
use crate::runtime::queue::QueueEntryStatus;
use crate::runtime::scheduler::SchedulerDecision;
use crate::runtime::tasks::{TaskKind, TaskRecord, TaskStatus};
use crate::runtime::waiting::{PendingWakeHint, TimerRecord, WaitingIntentRecord};
use crate::runtime::work_items::WorkItemRecord;
use crate::runtime::work_ops::WorkItemSource;
use crate::runtime::workspace::{ExecutionSnapshot, WorktreeSession};

/// `agent_created`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgentCreated {
    pub agent: AgentRecord,
}

/// `agent_state_changed`: the control posture moved through a decision.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgentStateChanged {
    pub from: AgentStatus,
    pub to: AgentStatus,
    /// The decision that moved it.
    pub cause: crate::runtime::scheduler::SchedulerDecisionKind,
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

/// Where a guidance block came from, as recorded.
pub type Guidance = GuidanceSource;

/// `turn_started`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TurnStarted {
    #[serde(default)]
    pub run_id: String,
    #[serde(default)]
    pub message_id: String,
    pub trigger_kind: TriggerKind,
    #[serde(default)]
    pub work_item_id: Option<String>,
    /// The AGENTS.md / CLAUDE.md files loaded (metadata, not content).
    #[serde(default)]
    pub guidance: Vec<Guidance>,
    #[serde(default)]
    pub workspace_id: String,
    #[serde(default)]
    pub execution_root: String,
}

/// `provider_round_completed`: telemetry of one model round.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProviderRoundCompleted {
    #[serde(default)]
    pub run_id: String,
    #[serde(default)]
    pub round: u32,
    #[serde(default)]
    pub model_ref: String,
    #[serde(default)]
    pub token_usage: TokenUsage,
    #[serde(default)]
    pub provider_attempt_timeline: ProviderAttemptTimeline,
    #[serde(default)]
    pub context_build_ms: u64,
    #[serde(default)]
    pub provider_round_ms: u64,
    #[serde(default)]
    pub stop_reason: Option<String>,
    /// The runtime's estimate of the request's tokens.
    #[serde(default)]
    pub prompt_tokens_estimate: u64,
    #[serde(default)]
    pub context_window: u64,
    #[serde(default)]
    pub prompt_budget: u64,
}

/// `assistant_round_recorded`: what the model said and asked for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AssistantRoundRecorded {
    #[serde(default)]
    pub run_id: String,
    #[serde(default)]
    pub round: u32,
    /// The first 400 characters of the round's text.
    #[serde(default)]
    pub text_preview: String,
    #[serde(default)]
    pub tool_names: Vec<String>,
    #[serde(default)]
    pub text_chars: usize,
}

/// `tool_started`: recorded durably before the call runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolStarted {
    #[serde(default)]
    pub run_id: String,
    #[serde(default)]
    pub call_id: String,
    #[serde(default)]
    pub tool_name: String,
}

/// `tool_executed`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolExecuted {
    #[serde(default)]
    pub run_id: String,
    #[serde(default)]
    pub tool_execution_id: String,
    #[serde(default)]
    pub call_id: String,
    #[serde(default)]
    pub tool_name: String,
    #[serde(default)]
    pub arguments: serde_json::Value,
    #[serde(default)]
    pub is_error: bool,
    #[serde(default)]
    pub duration_ms: u64,
    /// The model's arguments when they were not JSON (null otherwise).
    #[serde(default)]
    pub malformed_arguments: Option<MalformedArguments>,
    /// The result's JSON text, cut to 600 characters.
    #[serde(default)]
    pub result_preview: String,
    /// The few fields of the result a console shows (exit status, task
    /// handle, files touched), whole even when the preview is cut.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result_facts: Option<serde_json::Map<String, serde_json::Value>>,
}

impl ToolExecuted {
    /// How much of the result's text the event carries.
    pub const PREVIEW_CHARS: usize = 600;

    /// The result members a console shows, whole: a long result's
    /// preview is cut and no longer parses, but its exit status, task
    /// handle and files still reach every client. `None` when the result
    /// has none of them.
    pub fn facts_of(
        result: &serde_json::Value,
    ) -> Option<serde_json::Map<String, serde_json::Value>> {
        /// Long texts among the facts are cut to this many characters.
        const TEXT_CHARS: usize = 1200;
        let obj = result.as_object()?;
        let mut facts = serde_json::Map::new();
        for key in [
            "task_id",
            "exit_status",
            "disposition",
            "message",
            "error",
            "stdout_preview",
            "files",
        ] {
            let Some(v) = obj.get(key) else { continue };
            let v = match v {
                serde_json::Value::String(s) if s.chars().count() > TEXT_CHARS => {
                    serde_json::Value::String(s.chars().take(TEXT_CHARS).collect())
                }
                other => other.clone(),
            };
            facts.insert(key.to_owned(), v);
        }
        let handle = obj.get("task_handle").and_then(|h| h.get("task_id"));
        if let (Some(task), false) = (handle, facts.contains_key("task_id")) {
            facts.insert("task_id".to_owned(), task.clone());
        }
        (!facts.is_empty()).then_some(facts)
    }
}

/// `workspace_attached`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorkspaceAttached {
    #[serde(default)]
    pub workspace_id: String,
    #[serde(default)]
    pub anchor: String,
    #[serde(default)]
    pub git: bool,
}

/// `workspace_used`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorkspaceUsed {
    #[serde(default)]
    pub previous_workspace_id: String,
    pub execution: ExecutionSnapshot,
    /// `execution_root_missing` on the fallback after a vanished root.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// `workspace_detached`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorkspaceDetached {
    #[serde(default)]
    pub workspace_id: String,
    #[serde(default)]
    pub anchor: String,
    #[serde(default)]
    pub retained_worktrees: Vec<String>,
}

/// `workspace_missing`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorkspaceMissing {
    #[serde(default)]
    pub workspace_id: String,
    #[serde(default)]
    pub execution_root: String,
    #[serde(default)]
    pub worktree: Option<WorktreeSession>,
    #[serde(default)]
    pub fallback: String,
}

/// `worktree_created`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorktreeCreated {
    #[serde(default)]
    pub workspace_id: String,
    #[serde(default)]
    pub worktree_path: String,
    #[serde(default)]
    pub worktree_branch: String,
    /// Empty on a detached HEAD.
    #[serde(default)]
    pub original_branch: String,
    #[serde(default)]
    pub original_working_directory: String,
}

/// `worktree_removed`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorktreeRemoved {
    #[serde(default)]
    pub workspace_id: String,
    #[serde(default)]
    pub worktree_path: String,
    #[serde(default)]
    pub worktree_branch: String,
    #[serde(default)]
    pub reason: String,
}

/// `worktree_retained`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorktreeRetained {
    #[serde(default)]
    pub workspace_id: String,
    #[serde(default)]
    pub worktree_path: String,
    #[serde(default)]
    pub worktree_branch: String,
    #[serde(default)]
    pub uncommitted_files: usize,
    #[serde(default)]
    pub commits_ahead: usize,
    #[serde(default)]
    pub error: Option<String>,
}

/// `context_compacted`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ContextCompacted {
    #[serde(default)]
    pub run_id: String,
    #[serde(default)]
    pub episode_id: String,
    #[serde(default)]
    pub epoch: u32,
    /// `turn_start`, `turn_local` or `context_length_exceeded`.
    #[serde(default)]
    pub trigger: String,
    #[serde(default)]
    pub compacted_message_count: u64,
    #[serde(default)]
    pub compacted_turns: u64,
    pub summary_source: SummarySource,
    #[serde(default)]
    pub fallback_reason: Option<String>,
    #[serde(default)]
    pub summary_chars: usize,
    #[serde(default)]
    pub summary_tokens: u64,
    #[serde(default)]
    pub tokens_before: u64,
    #[serde(default)]
    pub tokens_after: u64,
    #[serde(default)]
    pub summariser_token_usage: Option<TokenUsage>,
    #[serde(default)]
    pub workspace_id: String,
    /// Milliseconds, to the microsecond.
    #[serde(default)]
    pub duration_ms: f64,
}

/// `turn_checkpoint`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TurnCheckpoint {
    #[serde(default)]
    pub run_id: String,
    #[serde(default)]
    pub round: u32,
    #[serde(default)]
    pub recapped_rounds: Vec<u32>,
    #[serde(default)]
    pub work_item_id: Option<String>,
    #[serde(default)]
    pub work_item_revision: Option<u64>,
    #[serde(default)]
    pub invalidated_anchor: Option<Anchor>,
    #[serde(default)]
    pub tokens_before: u64,
    #[serde(default)]
    pub tokens_after: u64,
}

/// A work item at a revision.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Anchor {
    #[serde(default)]
    pub work_item_id: String,
    #[serde(default)]
    pub revision: u64,
}

/// `turn_terminal`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TurnTerminal {
    #[serde(default)]
    pub run_id: String,
    #[serde(default)]
    pub message_id: String,
    pub kind: TurnTerminalKind,
    #[serde(default)]
    pub rounds: u32,
    #[serde(default)]
    pub last_assistant_message: String,
    #[serde(default)]
    pub duration_ms: u64,
    #[serde(default)]
    pub truncated: bool,
    #[serde(default)]
    pub truncation_stop_reason: Option<String>,
    #[serde(default)]
    pub cancel_reason: Option<CancelReason>,
    /// The cancelled attempt's timeline (a cancelled turn only).
    #[serde(default)]
    pub provider_attempt_timeline: Option<ProviderAttemptTimeline>,
    #[serde(default)]
    pub token_usage: TurnTokens,
}

/// A turn's tokens over all its rounds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TurnTokens {
    #[serde(default)]
    pub input_tokens: u64,
    #[serde(default)]
    pub output_tokens: u64,
}

/// `runtime_error`: a turn failed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RuntimeErrorRecorded {
    #[serde(default)]
    pub run_id: String,
    #[serde(default)]
    pub phase: String,
    pub failure_kind: FailureKind,
    pub failure_artifact: FailureArtifact,
    #[serde(default)]
    pub provider_attempt_timeline: ProviderAttemptTimeline,
    #[serde(default)]
    pub token_usage: Option<TokenUsage>,
}

/// `brief_created`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BriefCreated {
    pub brief: Brief,
    pub visibility: BriefVisibility,
}

/// The operator-facing result of a turn (also kept in the briefs ledger).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Brief {
    #[serde(default)]
    pub id: String,
    #[serde(default)]
    pub agent_id: String,
    #[serde(default)]
    pub work_item_id: Option<String>,
    pub kind: BriefKind,
    #[serde(default)]
    pub created_at: String,
    #[serde(default)]
    pub text: String,
    #[serde(default)]
    pub related_message_id: String,
    #[serde(default)]
    pub related_task_id: Option<String>,
    #[serde(default)]
    pub failure_artifact: Option<FailureArtifact>,
    #[serde(default)]
    pub awaiting_task_ids: Vec<String>,
    #[serde(default)]
    pub truncated: bool,
    #[serde(default)]
    pub workspace_id: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BriefKind {
    /// The turn is waiting on tasks it started.
    Ack,
    Result,
    Failure,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BriefVisibility {
    /// The agent waits for the operator.
    ActionRequired,
    /// A work item was completed.
    WorkDone,
    TurnResult,
}

/// `work_item_created`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorkItemCreated {
    pub work_item: WorkItemRecord,
    pub source: WorkItemSource,
    #[serde(default)]
    pub has_plan: bool,
}

/// `work_item_picked`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorkItemPicked {
    #[serde(default)]
    pub work_item_id: String,
    #[serde(default)]
    pub revision: u64,
    #[serde(default)]
    pub objective: String,
    #[serde(default)]
    pub previous_work_item_id: Option<String>,
    pub source: WorkItemSource,
}

/// `work_item_updated`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorkItemUpdated {
    pub work_item: WorkItemRecord,
    /// `objective`, `plan_status`, `todo_list`, `blocked_by`.
    #[serde(default)]
    pub changed: Vec<String>,
    pub source: WorkItemSource,
}

/// `work_item_completed`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorkItemCompleted {
    pub work_item: WorkItemRecord,
    pub source: WorkItemSource,
}

/// `work_item_recheck_due`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorkItemRecheckDue {
    #[serde(default)]
    pub work_item_id: String,
    #[serde(default)]
    pub blocked_by: Option<String>,
    #[serde(default)]
    pub recheck_at: Option<String>,
}

/// `task_created`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskCreated {
    pub task: TaskRecord,
}

/// `task_status_changed`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskStatusChanged {
    #[serde(default)]
    pub task_id: String,
    pub kind: TaskKind,
    pub from: TaskStatus,
    pub to: TaskStatus,
    #[serde(default)]
    pub summary: Option<String>,
    #[serde(default)]
    pub cmd: Option<String>,
    #[serde(default)]
    pub exit_status: Option<i64>,
    #[serde(default)]
    pub duration_ms: Option<u64>,
    /// The output's tail, once the task ended.
    #[serde(default)]
    pub output_preview: Option<String>,
    #[serde(default)]
    pub output_truncated: Option<bool>,
}

/// `task_output` (reserved: output is read with `task.output`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TaskOutput {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preview: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes: Option<u64>,
}

/// `task_result_queued`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskResultQueued {
    #[serde(default)]
    pub task_id: String,
    #[serde(default)]
    pub message_id: String,
}

/// `waiting_intent_created`, `waiting_intent_triggered`,
/// `waiting_intent_cancelled`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WaitingIntentChanged {
    pub waiting_intent: WaitingIntentRecord,
}

/// `timer_created`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TimerCreated {
    pub timer: TimerRecord,
    #[serde(default)]
    pub delay_ms: u64,
}

/// `timer_fired` (and the reserved `timer_cancelled`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TimerEnded {
    pub timer: TimerRecord,
}

/// `wake_hint_submitted`, `wake_hint_coalesced`, `wake_hint_ignored`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WakeHint {
    #[serde(default)]
    pub reason: String,
    #[serde(default)]
    pub waiting_intent_id: Option<String>,
    /// The agent's pending hint after this one (merged when coalesced).
    #[serde(default)]
    pub pending: Option<PendingWakeHint>,
    /// Why it was ignored; empty otherwise.
    #[serde(default)]
    pub note: String,
}

/// `runtime_started`: the runtime recovered the agent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RuntimeStarted {
    pub status_before: AgentStatus,
    pub status: AgentStatus,
    #[serde(default)]
    pub turn_was_in_progress: bool,
    #[serde(default)]
    pub replay_message_ids: Vec<String>,
}

/// `runtime_stopped` (reserved).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RuntimeStopped {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// `config_reloaded`: AGENTS.md/CLAUDE.md or config.toml changed on disk.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "source", rename_all = "snake_case")]
pub enum ConfigReloaded {
    AgentsMd {
        /// The file names that changed.
        changed: Vec<String>,
        paths: Vec<PathBuf>,
        /// The guidance loaded now.
        #[serde(default)]
        loaded: Vec<Guidance>,
        note: Cow<'static, str>,
    },
    ConfigFile {
        path: PathBuf,
        /// The sections that changed.
        changed: Vec<String>,
        /// False when the new file is invalid and the previous one stays.
        applied: bool,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        note: Option<Cow<'static, str>>,
    },
}

/// `display_mode_changed`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DisplayModeChanged {
    pub from: DisplayMode,
    pub to: DisplayMode,
}

/// `model_override_changed`: null is the runtime's default.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelOverrideChanged {
    #[serde(default)]
    pub from: Option<String>,
    #[serde(default)]
    pub to: Option<String>,
}
