//! What the engine answers with and what clients send, beyond the records
//! of the model: an agent's summary, a control action and its outcome, a
//! trigger's view and a delivery's receipt, the prompt preview, a child's
//! supervision snapshot, an admission receipt, work-item requests. The
//! engine builds these (`runtime::inspect`, the host's operations); they
//! are defined here so that the protocol names no engine module.

use serde::{Deserialize, Serialize};

use super::events as ev;
use crate::model::agent::AgentStatus;
use crate::model::context::ContextBudget;
use crate::model::decision::AgentSchedulingPosture;
use crate::model::message::QueueEntryStatus;
use crate::model::task::{ChildWorkspaceMode, ChildWorktree, TaskStatus, WorktreeCleanup};
use crate::model::trigger::{IngressStatus, TriggerDescriptor};
use crate::model::usage::ConversationItem;
use crate::model::waiting::WaitingIntentRecord;
use crate::model::work::{PlanStatus, TodoItem};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ControlAction {
    Pause,
    Resume,
    Stop,
    Wake,
    /// Abort the turn in progress at its next safe point.
    Abort,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ControlOutcome {
    pub agent_id: String,
    pub action: ControlAction,
    pub from: AgentStatus,
    pub to: AgentStatus,
    pub note: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WakeHintOutcome {
    Submitted,
    Coalesced,
    Ignored,
}

/// `trigger.show` and friends: the agent's descriptor, its URL (when the
/// listener is up), its history, recent deliveries and open external
/// waits.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TriggerView {
    pub agent_id: String,
    /// The active descriptor; none after a revoke until a rotate.
    #[serde(default)]
    pub trigger: Option<TriggerDescriptor>,
    /// The capability URL: whoever holds it can wake the agent.
    #[serde(default)]
    pub trigger_url: Option<String>,
    pub ingress: IngressStatus,
    /// Rotated and revoked descriptors, newest first.
    #[serde(default)]
    pub history: Vec<TriggerDescriptor>,
    /// The newest deliveries, newest first.
    #[serde(default)]
    pub recent_deliveries: Vec<RecentDelivery>,
    /// Waits on the outside world still open.
    #[serde(default)]
    pub open_waits: Vec<WaitingIntentRecord>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RecentDelivery {
    pub event_seq: u64,
    pub at: String,
    #[serde(flatten)]
    pub delivery: ev::TriggerDelivered,
}

/// `trigger.deliver` / ingress: what the delivery did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DeliveryReceipt {
    pub agent_id: String,
    pub external_trigger_id: String,
    pub outcome: WakeHintOutcome,
    #[serde(default)]
    pub satisfied_waiting_intent_ids: Vec<String>,
    pub trigger_count: u64,
}

/// What `holon debug prompt` and `/context` show: the frame's sections
/// with their text and estimates, the history, the budget and the
/// compaction state.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PromptPreview {
    pub agent_id: String,
    pub model_ref: String,
    pub budget: ContextBudget,
    pub sections: Vec<PreviewSection>,
    pub history_entries: usize,
    pub history_tokens: u64,
    pub total_tokens: u64,
    pub percent_of_window: u8,
    pub context: crate::model::context::ContextState,
    /// The summary in effect (its episode), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<PreviewSummary>,
    /// Whether the next turn would compact, and how much.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub would_fold: Option<crate::model::context::Fold>,
    pub conversation: Vec<ConversationItem>,
    /// The frame's cache identity.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache: Option<crate::model::usage::PromptCache>,
    /// How the model's wire lowers the frame (`full_request_only`,
    /// `prompt_cache_key`, `prompt_cache_blocks`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub capabilities: Vec<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PreviewSection {
    pub name: String,
    pub tokens: u64,
    pub text: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PreviewSummary {
    pub episode_id: String,
    pub epoch: u32,
    pub source: String,
    pub folded_turns: u64,
    pub summary_tokens: u64,
    pub created_at: String,
}

/// What the parent sees of a child: one projection shared by SpawnAgent,
/// TaskStatus, TaskOutput, AgentGet and the console.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChildSupervision {
    /// The supervising parent agent.
    #[serde(default)]
    pub parent_agent_id: String,
    pub child_agent_id: String,
    pub supervision_task_id: String,
    /// Who cleans up after the child (its worktree): the supervising task,
    /// never the child's identity. Always `supervision_task`.
    #[serde(default = "supervision_task")]
    pub cleanup_owner: String,
    /// Where the child's reports, blocked posture and follow-ups go: the
    /// supervising parent, not the operator's channels. Always
    /// `parent_supervisor`.
    #[serde(default = "parent_supervisor")]
    pub followup_target: String,
    pub label: String,
    pub task_status: TaskStatus,
    pub child_status: AgentStatus,
    pub posture: AgentSchedulingPosture,
    pub posture_reason: String,
    pub archived: bool,
    pub workspace_mode: ChildWorkspaceMode,
    /// The objective of the work item the child focuses on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub current_work_item: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub current_work_item_id: Option<String>,
    pub model_rounds: u64,
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub queue_depth: u64,
    pub tasks_active: u64,
    /// The child's latest brief (bounded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_brief: Option<String>,
    /// The managed worktree, and what cleanup did with it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worktree: Option<ChildWorktree>,
}

fn supervision_task() -> String {
    "supervision_task".to_owned()
}

fn parent_supervisor() -> String {
    "parent_supervisor".to_owned()
}

impl ChildSupervision {
    /// The worktree's path and what cleanup did with it, once the child
    /// ended.
    pub fn worktree_state(&self) -> Option<(&str, WorktreeCleanup)> {
        let w = self.worktree.as_ref()?;
        Some((w.path.as_str(), w.cleanup))
    }
}

/// A compact, stable per-agent summary (agent-state RFC: a projection, not
/// a source of truth).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgentSummary {
    pub id: String,
    /// Events of its ledger a salvage recorded as lost (`events.page`
    /// marks where).
    #[serde(default, skip_serializing_if = "is_zero_u64")]
    pub lost_events: u64,
    /// Kind, visibility, ownership, preset and lineage.
    pub identity: crate::model::agent::AgentIdentity,
    /// A parent's children: the live ones and the latest finished ones.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub children: Vec<ChildSupervision>,
    pub status: AgentStatus,
    /// The derived `AgentSchedulingPosture` and its short reason.
    pub posture: AgentSchedulingPosture,
    pub posture_reason: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lifecycle_hint: Option<String>,
    pub queue_depth: u64,
    pub last_event_seq: u64,
    pub work_items_open: u64,
    pub work_items_completed: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub current_work_item_id: Option<String>,
    pub tasks_active: u64,
    pub waiting_intents_active: u64,
    pub timers_active: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model_override: Option<String>,
    /// The model its turns use now: the override, else the runtime's
    /// default (absent when none is configured).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Where `model` comes from: `agent_override` or `runtime_default`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_source: Option<String>,
    /// The models a turn falls back to, in order, when `model` fails.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub fallback_models: Vec<String>,
    /// An asleep agent's next timer: when it wakes by itself (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sleeping_until: Option<String>,
    /// The guidance its next turn loads (agent AGENTS.md, then the
    /// workspace's AGENTS.md or CLAUDE.md): where each is, never what it
    /// says. `agent.status` and `agent.state` only; lists leave it out.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub loaded_agents_md: Vec<crate::protocol::payloads::GuidanceSource>,
    /// Where the agent's file and shell tools act.
    pub execution: crate::model::workspace::ExecutionSnapshot,
    /// Context use: the last prompt against the window, and compaction.
    #[serde(default)]
    pub context: ContextView,
    /// The reasoning effort its model is asked for, when one is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_effort: Option<crate::model::usage::ReasoningEffort>,
    /// Tokens and cost, over its life and today (absent before its first
    /// model round).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<UsageView>,
    /// Messages admitted to it over its life.
    #[serde(default)]
    pub total_message_count: u64,
    /// The latest continuation the scheduler derived for a message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_continuation: Option<crate::model::agent::LastContinuation>,
    /// How its turns have run: descriptive, never a control input.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub execution_profile: Option<crate::model::usage::ExecutionProfileView>,
}

/// An agent's tokens and cost.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct UsageView {
    pub input_tokens: u64,
    pub output_tokens: u64,
    #[serde(default)]
    pub cached_input_tokens: u64,
    #[serde(default)]
    pub cache_write_tokens: u64,
    #[serde(default)]
    pub reasoning_tokens: u64,
    pub model_rounds: u64,
    /// Cost of its priced rounds, in US dollars.
    pub cost_usd: f64,
    /// Rounds whose cost is unknown (no price, or no usage reported).
    #[serde(default)]
    pub unpriced_rounds: u64,
    /// Today (UTC): its spend, and the budget that applies.
    pub today: DayUsageView,
    /// Its last turn that reported tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_turn: Option<crate::model::usage::TokenUsage>,
}

/// A daily budget in dollars and tokens.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct BudgetView {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub daily_usd: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub daily_tokens: Option<u64>,
}

impl From<crate::model::agent::Budget> for BudgetView {
    fn from(b: crate::model::agent::Budget) -> BudgetView {
        BudgetView {
            daily_usd: b.daily_micro_usd.map(|m| m as f64 / 1_000_000.0),
            daily_tokens: b.daily_tokens,
        }
    }
}

/// `agent.budget`: the agent's own budget, the one that applies (its own
/// over the runtime's), and its spend today.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BudgetAnswer {
    pub agent_id: String,
    pub own: BudgetView,
    pub applies: BudgetView,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub today: Option<DayUsageView>,
}

/// One day's spend against the budget that applies.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct DayUsageView {
    pub day: String,
    pub cost_usd: f64,
    pub tokens: u64,
    #[serde(default)]
    pub unpriced_rounds: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget_usd: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget_tokens: Option<u64>,
    /// Set while its budget has it paused.
    #[serde(default)]
    pub paused_by_budget: bool,
}

/// How full the agent's context is ("ctx 41%").
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ContextView {
    /// The effective model's window (0 when unknown).
    pub window: u64,
    /// The last prompt's tokens (the provider's count when reported).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_prompt_tokens: Option<u64>,
    /// The last prompt as a percentage of its window.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub percent: Option<u8>,
    pub compaction_epoch: u32,
    pub compacted_entries: u64,
}

/// What admission recorded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Admitted {
    pub message_id: String,
    pub agent_id: String,
    pub event_seq: u64,
    pub admission_seq: u64,
    pub queue_status: QueueEntryStatus,
    pub priority: crate::model::message::Priority,
}

/// Who asked for a work-item change; recorded on the event.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WorkItemSource {
    /// A model tool call inside a turn.
    Tool,
    /// The operator through the console or CLI (control plane).
    Operator,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CreateWorkItem {
    pub objective: String,
    #[serde(default)]
    pub plan_status: Option<PlanStatus>,
    #[serde(default)]
    pub plan: Option<String>,
    #[serde(default)]
    pub todo_list: Option<Vec<TodoItem>>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct UpdateWorkItem {
    pub work_item_id: String,
    #[serde(default)]
    pub objective: Option<String>,
    #[serde(default)]
    pub plan_status: Option<PlanStatus>,
    #[serde(default)]
    pub todo_list: Option<Vec<TodoItem>>,
    /// `Some(None)` clears the blocker; `None` leaves it unchanged.
    #[serde(default, with = "double_option")]
    pub blocked_by: Option<Option<String>>,
    /// Milliseconds until the recheck reminder, when setting a blocker.
    #[serde(default)]
    pub recheck_after_ms: Option<u64>,
}

/// `Some(None)` on the wire as `null`: "clear it", apart from absence.
mod double_option {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    pub fn serialize<S: Serializer>(v: &Option<Option<String>>, s: S) -> Result<S::Ok, S::Error> {
        v.serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Option<Option<String>>, D::Error> {
        Option::<String>::deserialize(d).map(Some)
    }
}

/// `workspace.files`: an agent's execution root and the files under it as
/// git would list them, relative to it, at most 20,000 (`truncated` when
/// there were more).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileList {
    pub root: String,
    pub files: Vec<String>,
    #[serde(default)]
    pub truncated: bool,
}

fn is_zero_u64(n: &u64) -> bool {
    *n == 0
}
