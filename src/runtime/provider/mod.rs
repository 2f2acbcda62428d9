//! The provider-neutral model interface: what the turn loop sends
//! (`ProviderRequest`: prompt frame, conversation, tool catalog) and what it
//! gets back (`ProviderOutcome`: one assistant round or a classified
//! failure, plus the attempt timeline). Transports (OpenAI Responses,
//! Anthropic Messages, OpenAI-compatible Chat Completions) lower this to
//! their wire formats; retry and fallback wrap transports; tests use a
//! scripted provider. Shapes follow the runtime spec's Provider Transport
//! Contract and Failure Artifact Envelope.

use crate::model::usage::{
    AttemptOutcome, ConversationItem, FailureArtifact, FailureCategory, FailureKind,
    MalformedArguments, ProviderAttemptRecord, ProviderAttemptTimeline, ReasoningEffort,
    ReasoningItem, ReqwestDiagnostics, TokenUsage, ToolCall, ToolImage, TransportDiagnostics,
};

use serde::{Deserialize, Serialize};

use crate::model::attempt::{RetryNext, RetryNotice};
use crate::model::BoxFuture;

/// `provider/model`, e.g. `openai/gpt-4.1`, `ollama/llama3.2`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ModelRef {
    pub provider: String,
    pub model: String,
}

impl ModelRef {
    /// `provider/model`, checked by [`crate::model::ids::check_model_ref`].
    pub fn parse(s: &str) -> Result<ModelRef, String> {
        let (p, m) = crate::model::ids::check_model_ref(s)?;
        Ok(ModelRef {
            provider: p.to_owned(),
            model: m.to_owned(),
        })
    }
}

impl std::fmt::Display for ModelRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.provider, self.model)
    }
}

/// A tool offered to the model. `input_schema` is a JSON Schema object.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    pub input_schema: serde_json::Value,
    /// The one string argument a wire that supports freeform tools
    /// (OpenAI Responses `custom` tools) sends as raw text instead of a
    /// JSON object; the call then arrives as `{"input": TEXT}`. Other
    /// wires offer the JSON schema as usual.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub freeform_field: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BlockStability {
    Stable,
    AgentScoped,
    TurnScoped,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PromptContentBlock {
    pub text: String,
    pub stability: BlockStability,
    #[serde(default)]
    pub cache_breakpoint: bool,
}

use crate::model::usage::PromptCache;

/// Everything one provider round needs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProviderRequest {
    /// The system prompt as one string (the system blocks joined), for
    /// wires that take one.
    pub system_prompt: String,
    /// The system prompt as blocks with their stability and cache
    /// breakpoints; empty: `system_prompt` is the one block.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub system_blocks: Vec<PromptContentBlock>,
    #[serde(default)]
    pub context_blocks: Vec<PromptContentBlock>,
    pub conversation: Vec<ConversationItem>,
    #[serde(default)]
    pub tools: Vec<ToolSpec>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_output_tokens: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_cache_key: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache: Option<PromptCache>,
    /// Ask for no reasoning whatever the endpoint's effort (the context
    /// summariser: its output allowance is for the summary).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub no_reasoning: bool,
    /// The final text must be JSON under this schema: sent as the wire's
    /// structured-output format where it has one (both OpenAI wires); on
    /// the others the prompt alone asks for it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_schema: Option<ResponseSchema>,
}

/// A JSON schema the final text must follow, and its name.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResponseSchema {
    pub name: String,
    pub schema: serde_json::Value,
}

/// A successful provider round.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProviderRound {
    /// Reasoning items, in order (opaque; replayed to the same wire).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reasoning: Vec<ReasoningItem>,
    /// Assistant text of this round (may be empty when only tools are called).
    pub text: String,
    pub tool_calls: Vec<ToolCall>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_usage: Option<TokenUsage>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_reason: Option<String>,
    /// The model that answered (after any fallback).
    pub model_ref: String,
}

/// Progress while a round streams; the turn loop turns text deltas into
/// live "assistant progress" for the console.
#[derive(Debug, Clone, PartialEq)]
pub enum ProviderProgress {
    /// An attempt begins: the first, a retry or a fallback model. Text an
    /// earlier attempt of the round streamed is not part of the answer.
    AttemptStarted,
    TextDelta(String),
    /// An attempt failed and the chain retries or moves to the next
    /// model: the operator is told while the turn waits.
    Retrying(RetryNotice),
}

/// A failed provider round, after retries and fallback.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProviderFailure {
    pub kind: FailureKind,
    pub artifact: FailureArtifact,
}

/// The result of one provider round: the round or its failure, and the
/// attempt timeline either way.
#[derive(Debug, Clone, PartialEq)]
pub struct ProviderOutcome {
    pub result: Result<ProviderRound, ProviderFailure>,
    pub timeline: ProviderAttemptTimeline,
}

/// A question for one model's server about its window.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WindowQuestion {
    pub model_ref: String,
    pub ask: window_probe::WindowAsk,
}

/// Anything that can answer a provider round: a transport chain with retry
/// and fallback, or a scripted provider in tests.
pub trait Provider: Send + Sync {
    /// The model this provider answers for first (`provider/model`).
    fn model_ref(&self) -> String;

    /// The context window this provider's requests must fit, and the
    /// prompt budget within it.
    fn context_budget(&self) -> crate::model::context::ContextBudget {
        crate::model::context::ContextBudget::for_model(&self.model_ref())
    }

    /// What to ask its models' servers about their windows: one question
    /// for each model whose window nobody set, whose server may say, and
    /// that was not asked lately (`now_ms`).
    fn window_questions(&self, _now_ms: i64) -> Vec<WindowQuestion> {
        Vec::new()
    }

    /// Ask one of [`Provider::window_questions`]: `Ok(None)` when the
    /// server named no window.
    fn ask_window<'a>(
        &'a self,
        _question: &'a WindowQuestion,
    ) -> BoxFuture<'a, Result<Option<u64>, String>> {
        Box::pin(async { Ok(None) })
    }

    /// Take what was learned of `model_ref`'s window (`None`: nothing),
    /// not to be asked again before `until_ms`.
    fn learn_window(&self, _model_ref: &str, _window: Option<u64>, _until_ms: i64) {}

    /// The reasoning effort its first model is asked for.
    fn reasoning_effort(&self) -> Option<ReasoningEffort> {
        None
    }

    /// How its first model's wire lowers the prompt frame.
    fn prompt_capabilities(&self) -> Vec<&'static str> {
        vec!["full_request_only"]
    }

    /// The models it falls back to, in order, after its first.
    fn fallback_models(&self) -> Vec<String> {
        Vec::new()
    }

    fn round<'a>(
        &'a self,
        request: &'a ProviderRequest,
        progress: &'a (dyn Fn(ProviderProgress) + Send + Sync),
    ) -> BoxFuture<'a, ProviderOutcome>;
}

/// The failure a turn records when no model provider is configured at all:
/// it says exactly how to configure one.
pub fn not_configured_failure() -> ProviderFailure {
    ProviderFailure {
        kind: FailureKind::NotConfigured,
        artifact: FailureArtifact::new(
            FailureCategory::Runtime,
            "provider_not_configured",
            "No model provider is configured. Set HOLON_MODEL (e.g. openai/gpt-4.1, \
             anthropic/claude-sonnet-4-5 or ollama/llama3.2) and the matching credential: \
             OPENAI_API_KEY, ANTHROPIC_API_KEY or OPENROUTER_API_KEY (Ollama needs none; \
             OLLAMA_HOST or OPENAI_BASE_URL point at other OpenAI-compatible endpoints), \
             or set [model] default in config.toml.",
        ),
    }
}

pub mod anthropic_messages;
pub mod catalog;
pub mod checkup;
pub mod classify;
pub mod codex_auth;
pub mod failure;
pub mod http;
#[cfg(test)]
mod images_tests;
pub mod openai_chat;
pub mod openai_responses;
#[cfg(test)]
mod reasoning_tests;
mod refusal;
pub mod registry;
pub mod retry;
pub mod scripted;
pub mod sse;
mod timeline;
mod tool_images;
pub mod tool_schema;
mod window_ask;
pub mod window_probe;
pub mod wire;
