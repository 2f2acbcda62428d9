//! Agents as they travel: the durable `AgentRecord`, its control status,
//! identity (kind, visibility, ownership, preset, lineage) and display
//! mode. Id rules and agent homes live in the engine (`runtime::agent`).

use serde::{Deserialize, Serialize};

use super::context::ContextState;
use super::decision::TurnTerminalKind;
use super::skill::ActiveSkill;
use super::waiting::PendingWakeHint;
use super::workspace::AgentWorkspaces;

/// The runtime's control posture for one agent (spec: `AgentStatus`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AgentStatus {
    Booting,
    #[default]
    AwakeIdle,
    AwakeRunning,
    AwaitingTask,
    Asleep,
    Paused,
    Stopped,
}

impl AgentStatus {
    /// The status an agent has while no runtime runs it: a turn or a boot
    /// in progress is over (recovery at start, and a turn ended by
    /// shutdown, both apply this); anything else stands.
    pub fn at_rest(self) -> AgentStatus {
        match self {
            AgentStatus::AwakeRunning | AgentStatus::Booting => AgentStatus::AwakeIdle,
            other => other,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            AgentStatus::Booting => "booting",
            AgentStatus::AwakeIdle => "awake_idle",
            AgentStatus::AwakeRunning => "awake_running",
            AgentStatus::AwaitingTask => "awaiting_task",
            AgentStatus::Asleep => "asleep",
            AgentStatus::Paused => "paused",
            AgentStatus::Stopped => "stopped",
        }
    }
}

/// Whether an agent is the operator's public agent or a runtime-private one
/// (e.g. the temporary agent of `holon run`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AgentVisibility {
    #[default]
    Public,
    Private,
}

/// What an agent is (spec "Agent Identity And Visibility Contract"): the
/// runtime's default agent, one created by name, or a delegated child.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AgentKind {
    Default,
    #[default]
    Named,
    Child,
}

/// Who answers for an agent's lifetime: itself, or the parent whose
/// `child_agent_task` supervises it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AgentOwnership {
    #[default]
    SelfOwned,
    ParentSupervised,
}

/// The profile an agent was made with (SpawnAgent's `preset`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ProfilePreset {
    PublicNamed,
    PrivateChild,
}

impl ProfilePreset {
    pub fn as_str(self) -> &'static str {
        match self {
            ProfilePreset::PublicNamed => "public_named",
            ProfilePreset::PrivateChild => "private_child",
        }
    }
}

/// The identity facts every surface shows (AgentGet, `agent show`, the
/// agents overlay), copied from the record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgentIdentity {
    pub kind: AgentKind,
    pub visibility: AgentVisibility,
    pub ownership: AgentOwnership,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile_preset: Option<ProfilePreset>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lineage_parent_agent_id: Option<String>,
    /// The parent's `child_agent_task` that supervises a private child.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub supervision_task_id: Option<String>,
    /// When the agent was archived; archived agents run nothing and are
    /// not listed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub archived_at: Option<String>,
}

/// Main-conversation display mode (`/display`), remembered per agent, with
/// numeric aliases 3, 4, 5. Raw trace inspection is `/events`, not a
/// display mode. The console and the store share this one type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DisplayMode {
    #[default]
    Info,
    Verbose,
    Debug,
}

impl DisplayMode {
    pub const ALL: &'static [DisplayMode] =
        &[DisplayMode::Info, DisplayMode::Verbose, DisplayMode::Debug];

    pub fn as_str(self) -> &'static str {
        match self {
            DisplayMode::Info => "info",
            DisplayMode::Verbose => "verbose",
            DisplayMode::Debug => "debug",
        }
    }

    /// The numeric alias: 3, 4 or 5.
    pub fn level(self) -> u8 {
        match self {
            DisplayMode::Info => 3,
            DisplayMode::Verbose => 4,
            DisplayMode::Debug => 5,
        }
    }

    /// `info`, `verbose`, `debug` (any case) or `3`, `4`, `5`.
    pub fn parse(s: &str) -> Option<DisplayMode> {
        let s = s.trim();
        DisplayMode::ALL
            .iter()
            .copied()
            .find(|m| m.as_str().eq_ignore_ascii_case(s) || m.level().to_string() == s)
    }
}

impl std::fmt::Display for DisplayMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgentRecord {
    pub id: String,
    pub created_at: String,
    #[serde(default)]
    pub status: AgentStatus,
    #[serde(default)]
    pub visibility: AgentVisibility,
    #[serde(default)]
    pub kind: AgentKind,
    #[serde(default)]
    pub ownership: AgentOwnership,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile_preset: Option<ProfilePreset>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lineage_parent_agent_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub supervision_task_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub archived_at: Option<String>,
    /// Skills activated by this agent's tool calls (turn-active until a
    /// turn completes, then session-active; `restored` after a restart).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skills: Vec<ActiveSkill>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_override: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub current_work_item_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pending_wake_hint: Option<PendingWakeHint>,
    #[serde(default)]
    pub turn_in_progress: bool,
    /// The running turn waits for the operator's answer to these
    /// approvals (`turn_awaiting_approval`); cleared when it goes on or
    /// ends. A turn cut off while waiting is settled, not replayed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub turn_awaits: Vec<String>,
    /// Contentful messages settled without a turn because they arrived
    /// while the agent waited on something else (a task result during a
    /// timer): their ids, in admission order, shown to the model at the
    /// start of its next turn, whatever starts it. At most
    /// `CARRIED_MAX`; past that they are counted in `carried_folded`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub carried_for_model: Vec<String>,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub carried_folded: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub current_run_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_wake_reason: Option<String>,
    /// The latest continuation the scheduler derived for a message it
    /// took (recorded with its `scheduler_decision`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_continuation: Option<LastContinuation>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_brief_at: Option<String>,
    /// How the last turn ended (closure input).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_turn_terminal: Option<TurnTerminalKind>,
    /// The summary of a runtime failure still in effect (closure input);
    /// cleared when the next turn completes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runtime_error: Option<String>,
    /// When `runtime_error` was recorded (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runtime_error_at: Option<String>,
    #[serde(default)]
    pub display_mode: DisplayMode,
    #[serde(default)]
    pub total_input_tokens: u64,
    #[serde(default)]
    pub total_output_tokens: u64,
    #[serde(default)]
    pub total_model_rounds: u64,
    /// Attached workspaces and the active one (AgentHome when none).
    #[serde(default)]
    pub workspaces: AgentWorkspaces,
    /// Compaction state and the last prompt's size.
    #[serde(default)]
    pub context: ContextState,
    /// Token detail and cost over the agent's life (cost of priced rounds
    /// only; `total_unpriced_rounds` says how many had no known cost).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub total_cached_input_tokens: u64,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub total_cache_write_tokens: u64,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub total_reasoning_tokens: u64,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub total_cost_micro_usd: u64,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub total_unpriced_rounds: u64,
    /// What it spent on the day of its last round (UTC).
    #[serde(default, skip_serializing_if = "DailySpend::is_empty")]
    pub spend_today: DailySpend,
    /// Its own daily budget, over the runtime's `[budget]`.
    #[serde(default, skip_serializing_if = "Budget::is_unset")]
    pub budget: Budget,
    /// Its own reasoning effort (`/model … high`), over the configured one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_effort_override: Option<crate::model::usage::ReasoningEffort>,
    /// Set while the agent is paused by its daily budget: the day it ran
    /// out. It resumes by itself when that day is over.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget_paused_day: Option<String>,
    /// The day the operator resumed it past its budget: the budget does not
    /// pause it again that day.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget_waived_day: Option<String>,
    /// Its structured working memory, derived at each turn's end.
    #[serde(default, skip_serializing_if = "is_default_memory")]
    pub working_memory: crate::model::working::WorkingMemory,
    /// Its tools' timings (`toolLatency`), one entry a tool, bounded.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_latency: Vec<crate::model::usage::ToolLatency>,
    /// How its turns have run (`executionProfile`).
    #[serde(
        default,
        skip_serializing_if = "crate::model::usage::TurnProfile::is_empty"
    )]
    pub turn_profile: crate::model::usage::TurnProfile,
    /// Files the running turn attached to the brief it will end with.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pending_attachments: Vec<crate::model::brief::BriefAttachment>,
    /// The token usage of its last turn that reported any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_turn_usage: Option<crate::model::usage::TokenUsage>,
    /// Events of its ledger a salvage could not read back: known losses,
    /// which verify reports as such and `events.page` marks.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub lost_events: Vec<crate::model::retention::LostRange>,
}

fn is_default_memory(m: &crate::model::working::WorkingMemory) -> bool {
    *m == crate::model::working::WorkingMemory::default()
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// What an agent spent on one UTC day.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct DailySpend {
    /// `YYYY-MM-DD`, UTC; empty before the first round.
    pub day: String,
    /// Cost of the day's priced rounds, in millionths of a dollar.
    pub cost_micro_usd: u64,
    /// Input plus output tokens of every round of the day.
    pub tokens: u64,
    /// Rounds of the day whose cost is unknown.
    pub unpriced_rounds: u32,
}

impl DailySpend {
    pub fn is_empty(&self) -> bool {
        *self == DailySpend::default()
    }

    /// The spend as of `day`: nothing yet when the record is of another
    /// day (callers pass the budget's day, which never goes back: see
    /// `runtime::budget::budget_day`).
    pub fn on(&self, day: &str) -> DailySpend {
        match self.day == day {
            true => self.clone(),
            false => DailySpend {
                day: day.to_owned(),
                ..DailySpend::default()
            },
        }
    }

    /// One more round on `day`.
    pub fn add(&mut self, day: &str, cost_micro_usd: Option<u64>, tokens: u64) {
        *self = self.on(day);
        match cost_micro_usd {
            Some(c) => self.cost_micro_usd = self.cost_micro_usd.saturating_add(c),
            None => self.unpriced_rounds = self.unpriced_rounds.saturating_add(1),
        }
        self.tokens = self.tokens.saturating_add(tokens);
    }
}

/// A daily budget: dollars where a price is known, tokens for the rest.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Budget {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub daily_micro_usd: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub daily_tokens: Option<u64>,
}

impl Budget {
    pub fn is_unset(&self) -> bool {
        self.daily_micro_usd.is_none() && self.daily_tokens.is_none()
    }

    /// This budget where it sets a limit, else `fallback`'s.
    pub fn over(self, fallback: Budget) -> Budget {
        Budget {
            daily_micro_usd: self.daily_micro_usd.or(fallback.daily_micro_usd),
            daily_tokens: self.daily_tokens.or(fallback.daily_tokens),
        }
    }

    /// Which limit `spend` has reached, if any: the dollar limit counts
    /// priced rounds; the token limit counts every round (it is how a
    /// budget holds where cost is unknown).
    pub fn reached(&self, spend: &DailySpend) -> Option<BudgetLimit> {
        if let Some(limit) = self.daily_micro_usd {
            if spend.cost_micro_usd >= limit {
                return Some(BudgetLimit::Usd);
            }
        }
        match self.daily_tokens {
            Some(limit) if spend.tokens >= limit => Some(BudgetLimit::Tokens),
            _ => None,
        }
    }
}

/// The limit a budget reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BudgetLimit {
    Usd,
    Tokens,
}

/// The most carried messages an agent record names; past it they are
/// counted, and the model is told how many and where they are.
pub const CARRIED_MAX: usize = 50;

impl AgentRecord {
    /// Keep a message settled without a turn for the next model turn.
    pub fn carry_for_model(&mut self, message_id: &str) {
        match self.carried_for_model.len() < CARRIED_MAX {
            true => self.carried_for_model.push(message_id.to_owned()),
            false => self.carried_folded += 1,
        }
    }

    pub fn new(id: &str, created_at: String) -> Self {
        AgentRecord {
            id: id.to_owned(),
            created_at,
            status: AgentStatus::AwakeIdle,
            visibility: AgentVisibility::Public,
            kind: AgentKind::Named,
            ownership: AgentOwnership::SelfOwned,
            profile_preset: None,
            lineage_parent_agent_id: None,
            supervision_task_id: None,
            archived_at: None,
            skills: Vec::new(),
            model_override: None,
            current_work_item_id: None,
            pending_wake_hint: None,
            turn_in_progress: false,
            turn_awaits: Vec::new(),
            carried_for_model: Vec::new(),
            carried_folded: 0,
            current_run_id: None,
            last_wake_reason: None,
            last_continuation: None,
            last_brief_at: None,
            last_turn_terminal: None,
            runtime_error: None,
            runtime_error_at: None,
            display_mode: DisplayMode::Info,
            total_input_tokens: 0,
            total_output_tokens: 0,
            total_model_rounds: 0,
            workspaces: Default::default(),
            context: Default::default(),
            total_cached_input_tokens: 0,
            total_cache_write_tokens: 0,
            total_reasoning_tokens: 0,
            total_cost_micro_usd: 0,
            total_unpriced_rounds: 0,
            spend_today: DailySpend::default(),
            budget: Budget::default(),
            budget_paused_day: None,
            budget_waived_day: None,
            working_memory: Default::default(),
            tool_latency: Vec::new(),
            last_turn_usage: None,
            pending_attachments: Vec::new(),
            turn_profile: Default::default(),
            reasoning_effort_override: None,
            lost_events: Vec::new(),
        }
    }
}

impl AgentRecord {
    pub fn identity(&self) -> AgentIdentity {
        AgentIdentity {
            kind: self.kind,
            visibility: self.visibility,
            ownership: self.ownership,
            profile_preset: self.profile_preset,
            lineage_parent_agent_id: self.lineage_parent_agent_id.clone(),
            supervision_task_id: self.supervision_task_id.clone(),
            archived_at: self.archived_at.clone(),
        }
    }

    /// Shown in public listings and status routes: public and not
    /// archived.
    pub fn is_listed(&self) -> bool {
        self.visibility == AgentVisibility::Public && self.archived_at.is_none()
    }

    /// A private child still under its parent's supervision.
    pub fn supervised_by(&self, parent: &str) -> bool {
        self.kind == AgentKind::Child
            && self.archived_at.is_none()
            && self.lineage_parent_agent_id.as_deref() == Some(parent)
    }
}

/// Provenance kept at `.holon/state/template.json` and in `agent_created`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TemplateProvenance {
    pub selector: String,
    pub source_dir: String,
    /// SHA-256 of the template's `AGENTS.md` as applied.
    pub agents_md_sha256: String,
    pub skills: Vec<String>,
    pub applied_at: String,
}

/// The latest continuation the scheduler derived: for which message, of
/// which kind, what class (`resume_expected_wait`, `resume_override`,
/// `local_continuation`, `liveness_only`), whether the model saw it, and
/// when.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LastContinuation {
    pub class: String,
    pub model_visible: bool,
    pub message_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message_kind: Option<String>,
    pub at: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_thousand_carried_messages_keep_fifty_ids_and_count_the_rest() {
        let mut agent = AgentRecord::new("a", "2026-11-29T00:00:00Z".into());
        for i in 0..1_000 {
            agent.carry_for_model(&format!("msg_{i}"));
        }
        assert_eq!(agent.carried_for_model.len(), CARRIED_MAX);
        assert_eq!(agent.carried_for_model[0], "msg_0");
        assert_eq!(agent.carried_folded, 1_000 - CARRIED_MAX as u64);
        // Nothing carried, nothing written: the record's shape is as before.
        let plain = serde_json::to_value(AgentRecord::new("b", String::new())).unwrap();
        assert!(plain.get("carried_for_model").is_none() && plain.get("carried_folded").is_none());
    }
}
