//! Context that lasts: token budgets, cross-turn compaction into a durable
//! context summary, turn-local recaps and checkpoints, and the agent's
//! working memory files. The pure parts (estimates, planning, summaries)
//! live here; the host performs them at turn start and between rounds
//! (`host/context_ops.rs`). Compaction only chooses what the model reads:
//! the transcript itself is never rewritten, and no compaction decides
//! task activity, work-item completion or waking.

pub mod budget;
pub mod memory;
pub mod plan;
pub mod summary;

use serde::{Deserialize, Serialize};

pub use budget::{ContextBudget, WindowSource};
pub use summary::SummarySource;

/// An agent's compaction state, on its record.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ContextState {
    /// Incremented by each cross-turn compaction.
    #[serde(default)]
    pub epoch: u32,
    /// The last transcript entry folded into the summary: the history the
    /// model reads verbatim starts after it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compacted_through: Option<String>,
    /// Transcript entries folded over all epochs.
    #[serde(default)]
    pub compacted_entries: u64,
    /// The episode whose summary is in effect.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary_episode_id: Option<String>,
    /// What the last prompt cost.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_prompt: Option<PromptUse>,
}

/// What one prompt cost against the window.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct PromptUse {
    pub estimated_tokens: u64,
    /// The provider's own count, when it reported one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reported_input_tokens: Option<u64>,
    pub window: u64,
    pub prompt_budget: u64,
}

impl PromptUse {
    /// The best count available: the provider's, else the estimate.
    pub fn tokens(&self) -> u64 {
        self.reported_input_tokens.unwrap_or(self.estimated_tokens)
    }

    /// "41%" of the window.
    pub fn percent(&self) -> u8 {
        (self.tokens().saturating_mul(100) / self.window.max(1)).min(999) as u8
    }
}

/// An archived context episode (ledger `context_episodes`): the summary
/// made by one compaction and what it folded. The summary of the newest
/// episode is in the prompt; older ones stay searchable.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ContextEpisode {
    pub id: String,
    pub agent_id: String,
    pub epoch: u32,
    pub created_at: String,
    pub summary: String,
    pub source: SummarySource,
    /// Why the model's summary was not used, when it was not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fallback_reason: Option<String>,
    pub folded_entries: u64,
    pub folded_turns: u64,
    pub through_id: String,
    #[serde(default)]
    pub from_ts: String,
    #[serde(default)]
    pub through_ts: String,
    pub workspace_id: String,
    pub tokens_before: u64,
    pub tokens_after: u64,
    pub summary_tokens: u64,
}

/// The prompt block that carries the summary.
pub fn summary_block(e: &ContextEpisode) -> String {
    format!(
        "Context summary (epoch {}, {} earlier turns folded, {} written; the turns below \
         follow it verbatim):\n{}",
        e.epoch,
        e.folded_turns,
        match e.source {
            SummarySource::Model => "model",
            SummarySource::Extractive => "extractively",
        },
        e.summary
    )
}
