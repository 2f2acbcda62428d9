//! What retention removes and reports: per agent, the oldest part of its
//! history that nothing current needs (`holon store prune`, `[store]
//! retain_days`).

use serde::{Deserialize, Serialize};

/// Who asked for a prune.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PruneBy {
    /// `holon store prune` or `store.prune`.
    #[default]
    Operator,
    /// The runtime by itself, for `[store] retain_days`.
    RetainDays,
}

/// What one prune removed from one agent's history (or, in a dry run,
/// would remove). Recorded as the agent's `store_pruned` event.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgentPruned {
    pub agent_id: String,
    /// The cutoff: only what was written before it could go.
    pub older_than: String,
    /// The first and last `event_seq` removed (0 and 0 when none were).
    pub from_seq: u64,
    pub to_seq: u64,
    /// The first `event_seq` the ledger holds now; paging below it
    /// answers "pruned before seq N".
    pub ledger_start: u64,
    pub events: u64,
    /// Sealed blocks removed, and single rows of an older store.
    pub blocks: u64,
    pub rows: u64,
    pub transcript_entries: u64,
    pub tool_executions: u64,
    /// Settled queue entries whose admission event went with the ledger.
    pub queue_entries: u64,
    /// Stored (compressed) bytes removed.
    pub bytes: u64,
    /// What kept the cut from going further, when something did: the
    /// oldest open work item, a queued message, the latest brief, ...
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub held_by: Option<String>,
    #[serde(default)]
    pub by: PruneBy,
}

impl AgentPruned {
    /// Whether anything was (or would be) removed.
    pub fn removed_any(&self) -> bool {
        self.events + self.transcript_entries + self.tool_executions + self.queue_entries > 0
    }
}

/// A prune over every agent.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PruneReport {
    pub older_than: String,
    pub dry_run: bool,
    /// The agents it removed something from (or would).
    pub agents: Vec<AgentPruned>,
    /// Agents looked at.
    pub agents_seen: u64,
    pub events: u64,
    pub bytes: u64,
    pub millis: u64,
}
