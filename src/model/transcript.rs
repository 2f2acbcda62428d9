//! The transcript's records: what the model saw and did, turn by turn (an
//! input, an assistant round, a tool call started and its result, a
//! runtime failure, a turn cut off). The runtime keeps and repairs them
//! (`runtime::transcript`); `agent.transcript` and `holon transcript`
//! read them.

use serde::{Deserialize, Serialize};

use super::usage::{ProviderAttemptTimeline, ReasoningItem, TokenUsage, ToolCall};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TranscriptEntry {
    pub id: String,
    pub agent_id: String,
    pub run_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message_id: Option<String>,
    pub ts: String,
    #[serde(flatten)]
    pub body: TranscriptBody,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum TranscriptBody {
    /// A message given to the model, rendered with its provenance.
    Input { text: String },
    AssistantRound {
        round: u32,
        /// The round's reasoning, opaque (replayed, never summarised).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        reasoning: Vec<ReasoningItem>,
        text: String,
        #[serde(default)]
        tool_calls: Vec<ToolCall>,
        /// The round's tokens at the top level (also under `token_usage`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        input_tokens: Option<u64>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        output_tokens: Option<u64>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        token_usage: Option<TokenUsage>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        timeline: Option<ProviderAttemptTimeline>,
    },
    /// Written (durably) just before a call runs.
    ToolStarted {
        call_id: String,
        tool_name: String,
        started_at: String,
    },
    ToolResult {
        call_id: String,
        tool_name: String,
        content: String,
        #[serde(default)]
        is_error: bool,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        images: Vec<ToolImage>,
        /// A failed call's structured error (the tool error envelope).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<serde_json::Value>,
    },
    RuntimeFailure {
        summary: String,
        #[serde(default)]
        failure_artifact: serde_json::Value,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        timeline: Option<ProviderAttemptTimeline>,
    },
    /// A turn cut off before it finished (an abort, a stop, a deadline,
    /// the daily budget): why, and what its answer's last attempt had
    /// streamed, when anything. The model is told on its next turn.
    TurnCut {
        /// Completes "the turn was cut off: …" (`aborted by the operator`).
        reason: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        partial_answer: Option<String>,
    },
}

/// An image a tool returned: one of the types every wire format that
/// carries images takes, checked to be what it says before it is kept.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolImage {
    /// `image/png`, `image/jpeg`, `image/gif` or `image/webp`.
    pub mime_type: String,
    /// The image, base64 (standard alphabet, padded).
    pub data: String,
}

impl ToolImage {
    /// What a request is reckoned to spend on one image: about what a
    /// megapixel costs on the wires that price images by their area.
    pub const TOKENS: u64 = 1_600;
}
