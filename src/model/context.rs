//! An agent's context as it travels: what was compacted (`ContextState`,
//! the archived `ContextEpisode`), how large its last prompt was
//! (`PromptUse`), where a summary or a window size came from, and what a
//! window leaves the prompt (`ContextBudget`). The planning and estimates
//! live in the engine (`runtime::context`); a known model's window is the
//! catalog's (`ContextBudget::for_model`, by it).

use serde::{Deserialize, Serialize};

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
        (self.tokens().saturating_mul(100) / self.window.max(1)).min(255) as u8
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

/// How a summary was made.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SummarySource {
    Model,
    Extractive,
}

impl SummarySource {
    pub fn as_str(self) -> &'static str {
        match self {
            SummarySource::Model => "model",
            SummarySource::Extractive => "extractive",
        }
    }
}

/// The smallest window accepted from configuration or a model's server.
pub const MIN_WINDOW: u64 = 1_024;
/// The largest window accepted from configuration or a model's server.
pub const MAX_WINDOW: u64 = 10_000_000;

/// Where a window size came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WindowSource {
    /// `HOLON_CONTEXT_WINDOW`.
    Environment,
    /// `[model] context_window`.
    ModelConfig,
    /// `[providers.<name>] context_window`.
    ProviderConfig,
    /// The model's server said (Ollama's `/api/show`, an OpenAI-compatible
    /// model list), asked once and kept for a while.
    Server,
    /// The built-in table of common models.
    KnownModel,
    /// Nothing known: [`DEFAULT_WINDOW`].
    Default,
}

/// The older part of the history to fold into the summary.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fold {
    /// How many entries (from the oldest read) fold.
    pub entries: usize,
    /// The last folded entry: the new compaction boundary.
    pub through_id: String,
    /// How many turns (runs) fold.
    pub turns: usize,
    pub tokens_before: u64,
    /// The history left verbatim.
    pub tokens_kept: u64,
}

/// A model's window and what the prompt may use of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ContextBudget {
    pub window: u64,
    pub source: WindowSource,
    /// Kept free for the model's answer.
    pub output_reserve: u64,
    /// What the prompt may use: the window less the reserve and a margin
    /// for estimation error.
    pub prompt_budget: u64,
}

/// The window assumed for a model nobody described.
pub const DEFAULT_WINDOW: u64 = 128_000;

impl ContextBudget {
    pub fn new(window: u64, source: WindowSource) -> ContextBudget {
        let window = window.max(MIN_WINDOW);
        let output_reserve = (window / 8).clamp(256, 16_384);
        let prompt_budget = (window - output_reserve) * 95 / 100;
        ContextBudget {
            window,
            source,
            output_reserve,
            prompt_budget,
        }
    }

    /// Percent of the window a prompt of `tokens` uses.
    pub fn percent(&self, tokens: u64) -> u8 {
        (tokens.saturating_mul(100) / self.window.max(1)).min(255) as u8
    }
}

/// Validate a configured window.
pub fn check_window(n: u64) -> Result<u64, String> {
    if (MIN_WINDOW..=MAX_WINDOW).contains(&n) {
        Ok(n)
    } else {
        Err(format!(
            "{n} is out of range: give a number of tokens from {MIN_WINDOW} to {MAX_WINDOW}"
        ))
    }
}
