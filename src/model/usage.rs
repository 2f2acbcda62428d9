//! What a model round leaves behind, as it travels: tool calls and the
//! replayable conversation items, token usage, and how a provider attempt
//! went (its timeline, and the failure artifact when it failed). Calling
//! providers lives in the engine (`runtime::provider`).

use serde::{Deserialize, Serialize};

pub use super::transcript::ToolImage;

/// A tool call the model requested. `id` is the provider's call id and is
/// echoed back on the matching result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    pub arguments: serde_json::Value,
    /// Set when the model's `arguments` text was not JSON. `arguments` is
    /// then `{}`; the call is answered with an `invalid_arguments` tool
    /// error (the turn goes on, so the model can correct itself) and the
    /// transcript keeps what the model sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub malformed_arguments: Option<MalformedArguments>,
}

/// Tool-call arguments that did not parse: the text as sent and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MalformedArguments {
    pub raw: String,
    pub error: String,
}

impl ToolCall {
    /// The arguments text to echo back to the provider in later rounds:
    /// what the model sent, even when it was not JSON.
    pub fn arguments_text(&self) -> String {
        match &self.malformed_arguments {
            Some(m) => m.raw.clone(),
            None => self.arguments.to_string(),
        }
    }
}

/// One item of the replayable conversation view.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ConversationItem {
    /// Input for the model: an operator prompt, task result, tick, ...
    /// rendered with its provenance label by prompt assembly.
    UserText { text: String },
    /// A previous assistant round: its reasoning (opaque, replayed to the
    /// wire that produced it), its text and the tools it called.
    AssistantRound {
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        reasoning: Vec<ReasoningItem>,
        #[serde(default)]
        text: String,
        #[serde(default)]
        tool_calls: Vec<ToolCall>,
    },
    /// The result of one tool call; exactly one per call id.
    ToolResult {
        call_id: String,
        tool_name: String,
        content: String,
        #[serde(default)]
        is_error: bool,
        /// Images the tool returned (an MCP server's), sent as image parts
        /// where the wire format carries them.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        images: Vec<ToolImage>,
    },
}

/// How hard a reasoning model thinks before it answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ReasoningEffort {
    Minimal,
    Low,
    Medium,
    High,
}

impl ReasoningEffort {
    pub const ALL: [ReasoningEffort; 4] = [
        ReasoningEffort::Minimal,
        ReasoningEffort::Low,
        ReasoningEffort::Medium,
        ReasoningEffort::High,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            ReasoningEffort::Minimal => "minimal",
            ReasoningEffort::Low => "low",
            ReasoningEffort::Medium => "medium",
            ReasoningEffort::High => "high",
        }
    }

    pub fn parse(s: &str) -> Option<ReasoningEffort> {
        ReasoningEffort::ALL.into_iter().find(|e| e.as_str() == s)
    }
}

/// An agent's reasoning setting as the operator gives it: an effort, or
/// `default` for the configured one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EffortChoice {
    Minimal,
    Low,
    Medium,
    High,
    Default,
}

impl EffortChoice {
    pub fn effort(self) -> Option<ReasoningEffort> {
        match self {
            EffortChoice::Minimal => Some(ReasoningEffort::Minimal),
            EffortChoice::Low => Some(ReasoningEffort::Low),
            EffortChoice::Medium => Some(ReasoningEffort::Medium),
            EffortChoice::High => Some(ReasoningEffort::High),
            EffortChoice::Default => None,
        }
    }

    pub fn parse(s: &str) -> Option<EffortChoice> {
        match s {
            "default" => Some(EffortChoice::Default),
            other => ReasoningEffort::parse(other).map(|e| match e {
                ReasoningEffort::Minimal => EffortChoice::Minimal,
                ReasoningEffort::Low => EffortChoice::Low,
                ReasoningEffort::Medium => EffortChoice::Medium,
                ReasoningEffort::High => EffortChoice::High,
            }),
        }
    }
}

/// Reasoning a model produced in a round. Opaque: it is replayed, in
/// order, to the wire format that produced it (and dropped by the others),
/// never shown to a model as text, never summarised by compaction and
/// never counted as the model's answer. Summaries are for the operator.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ReasoningItem {
    /// An OpenAI Responses `reasoning` item. Without `encrypted_content`
    /// there is nothing a stateless request can replay.
    Responses {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        encrypted_content: Option<String>,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        summary: Vec<String>,
        /// The model that made it (only that model can read it back).
        #[serde(default, skip_serializing_if = "String::is_empty")]
        model: String,
    },
    /// An Anthropic `thinking` block with the signature that lets it be
    /// sent back.
    Thinking {
        thinking: String,
        signature: String,
        #[serde(default, skip_serializing_if = "String::is_empty")]
        model: String,
    },
    /// An Anthropic `redacted_thinking` block.
    RedactedThinking {
        data: String,
        #[serde(default, skip_serializing_if = "String::is_empty")]
        model: String,
    },
}

impl ReasoningItem {
    fn model_mut(&mut self) -> &mut String {
        match self {
            ReasoningItem::Responses { model, .. }
            | ReasoningItem::Thinking { model, .. }
            | ReasoningItem::RedactedThinking { model, .. } => model,
        }
    }

    /// Mark it as made by `model` (the name the wire sends).
    pub fn stamp(&mut self, model: &str) {
        *self.model_mut() = model.to_owned();
    }

    /// Whether `model` may be sent it: the model that made it (an item
    /// recorded before models were noted goes to any).
    pub fn made_by(&self, model: &str) -> bool {
        let made = match self {
            ReasoningItem::Responses { model, .. }
            | ReasoningItem::Thinking { model, .. }
            | ReasoningItem::RedactedThinking { model, .. } => model,
        };
        made.is_empty() || made == model
    }

    /// The operator's view of a round's reasoning: its summaries, the
    /// first 2,000 characters; `None` when it has none.
    pub fn summaries(items: &[ReasoningItem]) -> Option<String> {
        let parts: Vec<String> = items
            .iter()
            .filter_map(ReasoningItem::summary_text)
            .collect();
        let text = parts.join("\n\n");
        (!text.trim().is_empty()).then(|| text.chars().take(2_000).collect())
    }

    /// The human-readable part, if any (Responses summaries, Anthropic
    /// thinking text).
    pub fn summary_text(&self) -> Option<String> {
        match self {
            ReasoningItem::Responses { summary, .. } if !summary.is_empty() => {
                Some(summary.join("\n\n"))
            }
            ReasoningItem::Thinking { thinking, .. } if !thinking.trim().is_empty() => {
                Some(thinking.clone())
            }
            _ => None,
        }
    }
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// Tokens one round (or a sum of rounds) used. `input_tokens` counts every
/// input token, cached or not; `cached_input_tokens` (read from a prompt
/// cache) and `cache_write_tokens` (written to one, where the provider
/// reports it) are parts of it. `reasoning_tokens` is the part of
/// `output_tokens` spent reasoning, where reported.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct TokenUsage {
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub total_tokens: u64,
    #[serde(skip_serializing_if = "is_zero")]
    pub cached_input_tokens: u64,
    #[serde(skip_serializing_if = "is_zero")]
    pub cache_write_tokens: u64,
    #[serde(skip_serializing_if = "is_zero")]
    pub reasoning_tokens: u64,
}

/// How an agent's turns have run over its life: descriptive, never a
/// control input (the contract's `executionProfile`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct TurnProfile {
    pub turns: u64,
    pub total_turn_ms: u64,
    pub total_rounds: u64,
    pub max_turn_ms: u64,
}

impl TurnProfile {
    pub fn add(&mut self, turn_ms: u64, rounds: u32) {
        self.turns = self.turns.saturating_add(1);
        self.total_turn_ms = self.total_turn_ms.saturating_add(turn_ms);
        self.total_rounds = self.total_rounds.saturating_add(u64::from(rounds));
        self.max_turn_ms = self.max_turn_ms.max(turn_ms);
    }

    pub fn is_empty(&self) -> bool {
        self.turns == 0
    }
}

/// An agent's execution profile, as `agent.status` shows it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ExecutionProfileView {
    pub turns: u64,
    pub mean_turn_ms: u64,
    pub max_turn_ms: u64,
    pub mean_rounds_per_turn: f64,
    /// Its tools by mean time, slowest first (at most 3).
    #[serde(default)]
    pub slowest_tools: Vec<ToolLatency>,
}

impl ExecutionProfileView {
    pub fn of(p: &TurnProfile, tools: &[ToolLatency]) -> Option<ExecutionProfileView> {
        if p.is_empty() {
            return None;
        }
        let mut slowest = tools.to_vec();
        slowest.sort_by_key(|t| std::cmp::Reverse(t.mean_ms()));
        slowest.truncate(3);
        Some(ExecutionProfileView {
            turns: p.turns,
            mean_turn_ms: p.total_turn_ms / p.turns,
            max_turn_ms: p.max_turn_ms,
            mean_rounds_per_turn: p.total_rounds as f64 / p.turns as f64,
            slowest_tools: slowest,
        })
    }
}

/// One tool's timings over an agent's life (`toolLatency`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct ToolLatency {
    pub tool_name: String,
    pub calls: u64,
    pub errors: u64,
    pub total_ms: u64,
    pub max_ms: u64,
    pub last_ms: u64,
}

impl ToolLatency {
    /// Tools kept, at most (an agent with more MCP tools keeps those it
    /// calls most).
    pub const MAX_TOOLS: usize = 64;

    pub fn mean_ms(&self) -> u64 {
        self.total_ms.checked_div(self.calls).unwrap_or(0)
    }

    /// Add one call of `tool` to `list`.
    pub fn record(list: &mut Vec<ToolLatency>, tool: &str, ms: u64, is_error: bool) {
        let i = match list.iter().position(|t| t.tool_name == tool) {
            Some(i) => i,
            None => {
                if list.len() >= Self::MAX_TOOLS {
                    if let Some(least) = (0..list.len()).min_by_key(|&i| list[i].calls) {
                        list.remove(least);
                    }
                }
                list.push(ToolLatency {
                    tool_name: tool.to_owned(),
                    ..ToolLatency::default()
                });
                list.len() - 1
            }
        };
        let t = &mut list[i];
        t.calls = t.calls.saturating_add(1);
        t.errors = t.errors.saturating_add(u64::from(is_error));
        t.total_ms = t.total_ms.saturating_add(ms);
        t.max_ms = t.max_ms.max(ms);
        t.last_ms = ms;
    }
}

impl TokenUsage {
    /// Saturating: an absurd report never wraps a sum.
    pub fn add(&mut self, other: &TokenUsage) {
        let add = |total: &mut u64, n: u64| *total = total.saturating_add(n);
        add(&mut self.input_tokens, other.input_tokens);
        add(&mut self.output_tokens, other.output_tokens);
        add(&mut self.total_tokens, other.total_tokens);
        add(&mut self.cached_input_tokens, other.cached_input_tokens);
        add(&mut self.cache_write_tokens, other.cache_write_tokens);
        add(&mut self.reasoning_tokens, other.reasoning_tokens);
    }
}

/// How a failed attempt is classified (drives retry, fail-fast, fallback).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FailureKind {
    /// No provider is configured for the requested model.
    NotConfigured,
    /// The provider id has no transport Holon supports.
    UnsupportedTransport,
    Timeout,
    Connect,
    /// The response started (HTTP headers arrived) but its body or stream
    /// ended before it was complete: connection reset, EOF before the
    /// stream's terminal event. Retried like a connection failure.
    StreamInterrupted,
    RateLimited,
    ServerError,
    AuthFailed,
    ClientError,
    InvalidResponse,
    ContextLengthExceeded,
}

impl FailureKind {
    /// Retried on the same provider (up to the retry budget).
    pub fn is_retryable(self) -> bool {
        match self {
            FailureKind::Timeout
            | FailureKind::Connect
            | FailureKind::StreamInterrupted
            | FailureKind::RateLimited
            | FailureKind::ServerError => true,
            FailureKind::NotConfigured
            | FailureKind::UnsupportedTransport
            | FailureKind::AuthFailed
            | FailureKind::ClientError
            | FailureKind::InvalidResponse
            | FailureKind::ContextLengthExceeded => false,
        }
    }

    /// Failure-artifact category.
    pub fn category(self) -> FailureCategory {
        match self {
            FailureKind::Timeout
            | FailureKind::Connect
            | FailureKind::StreamInterrupted
            | FailureKind::RateLimited
            | FailureKind::ServerError
            | FailureKind::AuthFailed
            | FailureKind::ClientError => FailureCategory::Transport,
            FailureKind::UnsupportedTransport | FailureKind::InvalidResponse => {
                FailureCategory::Protocol
            }
            FailureKind::NotConfigured | FailureKind::ContextLengthExceeded => {
                FailureCategory::Runtime
            }
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FailureCategory {
    Transport,
    Protocol,
    Runtime,
    Task,
    Unknown,
}

/// The operator-facing failure envelope (spec: Failure Artifact Envelope).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FailureArtifact {
    pub category: FailureCategory,
    pub kind: String,
    pub summary: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_ref: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_status: Option<i32>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub source_chain: Vec<String>,
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub metadata: std::collections::BTreeMap<String, String>,
}

impl FailureArtifact {
    /// An artifact carrying only its category, kind and summary.
    pub fn new(
        category: FailureCategory,
        kind: &str,
        summary: impl Into<String>,
    ) -> FailureArtifact {
        FailureArtifact {
            category,
            kind: kind.to_owned(),
            summary: summary.into(),
            provider: None,
            model_ref: None,
            status: None,
            task_id: None,
            exit_status: None,
            source_chain: Vec::new(),
            metadata: std::collections::BTreeMap::new(),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AttemptOutcome {
    Retrying,
    RetriesExhausted,
    FailFastAborted,
    Succeeded,
    /// The request was still in flight when its turn was cancelled (abort,
    /// stop, `--timeout`, shutdown) and was dropped.
    Cancelled,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ReqwestDiagnostics {
    pub is_timeout: bool,
    pub is_connect: bool,
    pub is_request: bool,
    pub is_body: bool,
    pub is_decode: bool,
    pub is_redirect: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TransportDiagnostics {
    pub stage: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_ref: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reqwest: Option<ReqwestDiagnostics>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub source_chain: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProviderAttemptRecord {
    pub provider: String,
    pub model_ref: String,
    pub attempt: u32,
    pub max_attempts: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completed_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure_kind: Option<FailureKind>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disposition: Option<String>,
    pub outcome: AttemptOutcome,
    pub advanced_to_fallback: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backoff_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_usage: Option<TokenUsage>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transport_diagnostics: Option<TransportDiagnostics>,
}

impl ProviderAttemptTimeline {
    /// The timeline of a round answered (or refused) in a single attempt,
    /// for providers without retries (scripted, unavailable).
    pub fn single_attempt(
        model_ref: &str,
        outcome: AttemptOutcome,
        failure_kind: Option<FailureKind>,
        token_usage: Option<TokenUsage>,
    ) -> ProviderAttemptTimeline {
        let succeeded = outcome == AttemptOutcome::Succeeded;
        ProviderAttemptTimeline {
            attempts: vec![ProviderAttemptRecord {
                provider: model_ref.split('/').next().unwrap_or("").to_owned(),
                model_ref: model_ref.to_owned(),
                attempt: 1,
                max_attempts: 1,
                started_at: None,
                completed_at: None,
                duration_ms: Some(0),
                failure_kind,
                disposition: None,
                outcome,
                advanced_to_fallback: false,
                backoff_ms: None,
                token_usage,
                transport_diagnostics: None,
            }],
            requested_model_ref: model_ref.to_owned(),
            active_model_ref: Some(model_ref.to_owned()),
            winning_model_ref: succeeded.then(|| model_ref.to_owned()),
            aggregated_token_usage: token_usage,
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ProviderAttemptTimeline {
    pub attempts: Vec<ProviderAttemptRecord>,
    pub requested_model_ref: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub active_model_ref: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub winning_model_ref: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aggregated_token_usage: Option<TokenUsage>,
}

/// The prompt frame's cache identity (the contract's
/// `ProviderPromptCache`): what a transport may key a provider's cache or
/// continuation on, and what changed when it changed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PromptCache {
    pub agent_id: String,
    /// Stable across ordinary next-turn changes (turn-scoped blocks, the
    /// conversation); rotates when the stable or agent-scoped surface
    /// (policy, guidance, skills, memory, working memory, tools) changes.
    pub prompt_cache_key: String,
    /// A diagnostic fingerprint of the whole projected context, turn-scoped
    /// blocks included; never a cache key.
    pub context_fingerprint: String,
    pub working_memory_revision: u64,
    /// How many compactions the agent's context has been through.
    pub compression_epoch: u32,
}
