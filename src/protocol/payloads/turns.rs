//! Payloads of a model turn: its start, provider rounds, tool calls, context compaction and checkpoints, its end, a failed turn, and the brief it leaves.

use serde::{Deserialize, Serialize};

use std::path::PathBuf;

use crate::model::context::SummarySource;
use crate::model::decision::TurnTerminalKind;
use crate::model::message::TriggerKind;
use crate::model::usage::{
    FailureArtifact, FailureKind, MalformedArguments, ProviderAttemptTimeline, TokenUsage,
};

/// Where a guidance block came from, as recorded.
pub type Guidance = GuidanceSource;

pub use crate::model::brief::{AttachmentKind, BriefAttachment};

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
    /// Messages that arrived while the agent waited on something else
    /// (settled without a turn, `carried_for_model`), shown to the model
    /// in this turn before its trigger, in admission order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub carried: Vec<String>,
    /// How many more such messages were folded into one line past the
    /// limit (never dropped unsaid).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub carried_folded: u64,
}

/// `turn_context_built`: the prompt frame of a turn's first request, as
/// built (recorded with that round).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TurnContextBuilt {
    #[serde(default)]
    pub run_id: String,
    #[serde(default)]
    pub context_build_ms: u64,
    #[serde(default)]
    pub prompt_tokens_estimate: u64,
    /// The part a provider may cache from turn to turn (system, tools and
    /// the blocks that are not turn-scoped).
    #[serde(default)]
    pub cacheable_tokens_estimate: u64,
    /// The frame's blocks by name, in order.
    #[serde(default)]
    pub sections: Vec<String>,
    #[serde(default)]
    pub prompt_cache_key: String,
    #[serde(default)]
    pub context_fingerprint: String,
    #[serde(default)]
    pub working_memory_revision: u64,
    #[serde(default)]
    pub compression_epoch: u32,
    /// The context window the turn fits, and where its size came from
    /// (configuration, the model's server, the catalog, the default).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub context_window: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window_source: Option<crate::model::context::WindowSource>,
}

/// `provider_round_completed`: telemetry of one model round.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
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
    /// What the round cost in US dollars at the catalog's (or the
    /// operator's) price; absent when unknown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
    /// When the request was sent and the answer was whole.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub provider_started_at: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub provider_completed_at: String,
    /// The frame's cache identity for this round, and the estimated part
    /// of the request a provider may have cached (what it did cache is
    /// `token_usage.cached_input_tokens`).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub prompt_cache_key: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub context_fingerprint: String,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cacheable_tokens_estimate: u64,
    /// The request carried the work-item progress reminder.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub work_item_reminder: bool,
    /// The tools the request carried and their definitions' estimated
    /// tokens.
    #[serde(default, skip_serializing_if = "is_zero_u32")]
    pub tools_sent: u32,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub tool_tokens: u64,
    /// MCP tools left out of the request (found with ToolSearch), and
    /// what their definitions would have cost.
    #[serde(default, skip_serializing_if = "is_zero_u32")]
    pub tools_deferred: u32,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub deferred_tool_tokens: u64,
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
    /// The run's provider attempt that answered (as numbered on
    /// `assistant.delta`; absent when no attempt was numbered): deltas of
    /// it or earlier still on their way are late.
    #[serde(default, skip_serializing_if = "is_zero_u32")]
    pub attempt: u32,
    /// What the model said of its reasoning (Responses summaries,
    /// Anthropic thinking text), the first 2,000 characters; for the
    /// operator only, never sent back as text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_summary: Option<String>,
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
    /// A failed call's structured error, whole: the tool error envelope
    /// (`ok: false`, `tool_name`, `kind`, `message`, `hint`, `field`,
    /// `retryable`, bounded `details`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_error: Option<serde_json::Value>,
}

impl ToolExecuted {
    /// How much of the result's text the event carries.
    pub const PREVIEW_CHARS: usize = 600;

    /// The result's facts, typed: from `result_facts` when the event
    /// carries them, else from the preview's JSON (an event written before
    /// `result_facts`, whose preview parses only when it was not cut).
    pub fn facts(&self) -> Option<ToolFacts> {
        match &self.result_facts {
            Some(map) => ToolFacts::deserialize(map).ok(),
            None => serde_json::from_str(&self.result_preview).ok(),
        }
    }

    /// The call's arguments decoded as `T`; `None` when they have
    /// another shape.
    pub fn args<T: serde::de::DeserializeOwned>(&self) -> Option<T> {
        T::deserialize(&self.arguments).ok()
    }

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
            "status",
            "approval_id",
            "task_id",
            "exit_status",
            "disposition",
            "message",
            "error",
            "stdout_preview",
            "stderr_preview",
            "files",
        ] {
            let Some(v) = obj.get(key) else { continue };
            let v = match v {
                // A stderr tail keeps its end: the error is in its last lines.
                serde_json::Value::String(s)
                    if key == "stderr_preview" && s.chars().count() > TEXT_CHARS =>
                {
                    let skip = s.chars().count() - TEXT_CHARS;
                    serde_json::Value::String(s.chars().skip(skip).collect())
                }
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

/// `context_compaction_started`: a turn began folding older turns into
/// the context summary (`context_compacted` follows when it is made).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ContextCompactionStarted {
    #[serde(default)]
    pub run_id: String,
    /// `turn_start`, `turn_local` or `context_length_exceeded`.
    #[serde(default)]
    pub trigger: String,
    /// Transcript entries and turns being folded.
    #[serde(default)]
    pub folding_message_count: u64,
    #[serde(default)]
    pub folding_turns: u64,
    /// The history estimate before the fold.
    #[serde(default)]
    pub tokens_before: u64,
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
    /// The model that summarised, and what it cost (absent when unknown).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summariser_model_ref: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summariser_cost_usd: Option<f64>,
    #[serde(default)]
    pub workspace_id: String,
    /// Milliseconds, to the microsecond.
    #[serde(default)]
    pub duration_ms: f64,
}

/// `turn_awaiting_approval`: the turn's calls are all recorded and it
/// waits, up to `wait_ms`, for the operator's answer to these approvals,
/// to go on with it in the same turn.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TurnAwaitingApproval {
    #[serde(default)]
    pub run_id: String,
    #[serde(default)]
    pub message_id: String,
    #[serde(default)]
    pub approval_ids: Vec<String>,
    #[serde(default)]
    pub wait_ms: u64,
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
    /// This turn's place among the agent's turns, from 1 (counted in the
    /// store; 0 in records from before it was).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub turn_index: u64,
    /// When the turn ended (RFC 3339; empty in older records, whose
    /// event `ts` says it).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub completed_at: String,
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
    /// What the turn's rounds cost in US dollars; absent when any round's
    /// cost is unknown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
    /// A cancelled turn: what the model's last attempt had streamed of its
    /// answer when it was cut off (at most 16 KiB; never shown to the model).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partial_answer: Option<String>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

fn is_zero_u32(n: &u32) -> bool {
    *n == 0
}

/// A turn's tokens over all its rounds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TurnTokens {
    #[serde(default)]
    pub input_tokens: u64,
    #[serde(default)]
    pub output_tokens: u64,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cached_input_tokens: u64,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cache_write_tokens: u64,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub reasoning_tokens: u64,
}

/// `agent_budget_changed`: the operator set the agent's own daily budget.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgentBudgetChanged {
    pub from: crate::protocol::views::BudgetView,
    pub to: crate::protocol::views::BudgetView,
}

/// `budget_exceeded`: the agent reached its daily budget and is paused
/// before its next model request (it resumes when the day is over, or by
/// the operator's `/resume`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BudgetExceeded {
    /// `YYYY-MM-DD`, UTC.
    pub day: String,
    pub limit: crate::model::agent::BudgetLimit,
    /// Spent today at priced rounds, in US dollars.
    #[serde(default)]
    pub spent_usd: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget_usd: Option<f64>,
    #[serde(default)]
    pub tokens: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget_tokens: Option<u64>,
    /// When it resumes by itself (the next UTC midnight, RFC 3339).
    pub resumes_at: String,
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
    /// Files the turn attached (AttachToBrief), at most 8.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub attachments: Vec<crate::model::brief::BriefAttachment>,
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

/// Why a turn is being cancelled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CancelReason {
    /// `control abort` from an operator or a client.
    OperatorAbort,
    /// The agent was stopped.
    AgentStopped,
    /// `holon run --timeout` ran out.
    RunTimeout,
    /// The runtime is shutting down (daemon stop, SIGTERM, console quit).
    /// The turn's message is not settled: it replays on the next start.
    RuntimeShutdown,
    /// The agent reached its daily budget (between rounds, never during
    /// one).
    DailyBudget,
}

/// Where a guidance block came from (metadata only, never the content).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct GuidanceSource {
    pub scope: GuidanceScope,
    pub path: PathBuf,
    /// `AGENTS.md` or `CLAUDE.md`.
    pub file_name: std::borrow::Cow<'static, str>,
    pub bytes: usize,
    pub truncated: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GuidanceScope {
    Agent,
    Workspace,
}

/// The few members of a tool's result a console shows (see
/// [`ToolExecuted::facts_of`]), typed. Every member is optional: a tool
/// reports only the ones it has.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct ToolFacts {
    /// `awaiting_approval` when the call waits for the operator.
    pub status: Option<String>,
    pub approval_id: Option<String>,
    pub task_id: Option<String>,
    pub exit_status: Option<i64>,
    pub disposition: Option<String>,
    pub message: Option<String>,
    pub error: Option<String>,
    pub stdout_preview: Option<String>,
    /// The tail of a command's stderr, kept apart from its output.
    pub stderr_preview: Option<String>,
    pub files: Vec<FileChange>,
}

/// One file an applied patch touched.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct FileChange {
    pub action: Option<String>,
    pub path: String,
    pub added: u64,
    pub removed: u64,
}
