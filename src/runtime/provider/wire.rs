//! What the three wire formats share: the parsed round, the wire-level
//! failure, the streaming decoder interface, tool-argument parsing, the
//! system-text rendering and the tool-call/result pairing every lowering
//! goes through.
//!
//! This module does no I/O. Its central invariant is the one every provider
//! enforces: after [`pair_tool_results`], each assistant tool call is
//! followed by exactly one result (a synthetic error result when none was
//! recorded), results sit directly after the round that called them, and
//! results with no matching call are dropped. Wire modules lower the
//! resulting [`Exchange`] sequence, never the raw conversation. Tools'
//! images go with it, the newest first, up to what one request may carry.

use std::borrow::Cow;
use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use super::sse::SseEvent;
use super::{
    BlockStability, ConversationItem, FailureKind, ProviderProgress, ProviderRequest,
    ReasoningEffort, ReasoningItem, TokenUsage, ToolCall, ToolImage,
};

/// The request shape an endpoint speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WireFormat {
    /// OpenAI Responses: POST {base}/responses.
    OpenaiResponses,
    /// Anthropic Messages: POST {base}/v1/messages.
    AnthropicMessages,
    /// OpenAI Chat Completions: POST {base}/chat/completions.
    OpenaiChat,
}

impl WireFormat {
    /// How this wire lowers the prompt frame (the contract's
    /// `ProviderPromptCapability`): every wire sends the whole request
    /// (Holon keeps no provider-side state); OpenAI Responses sends the
    /// frame's `prompt_cache_key`; Anthropic marks cache breakpoints.
    pub fn prompt_capabilities(self) -> &'static [&'static str] {
        match self {
            WireFormat::OpenaiResponses => &["full_request_only", "prompt_cache_key"],
            WireFormat::AnthropicMessages => &["full_request_only", "prompt_cache_blocks"],
            WireFormat::OpenaiChat => &["full_request_only"],
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            WireFormat::OpenaiResponses => "openai_responses",
            WireFormat::AnthropicMessages => "anthropic_messages",
            WireFormat::OpenaiChat => "openai_chat",
        }
    }

    /// The streaming mode used when configuration does not choose one.
    pub fn default_streaming(self) -> Streaming {
        match self {
            WireFormat::OpenaiResponses => Streaming::Off,
            WireFormat::AnthropicMessages | WireFormat::OpenaiChat => Streaming::On,
        }
    }
}

/// Whether a transport asks for an SSE stream (`stream: true`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Streaming {
    On,
    Off,
}

impl Streaming {
    pub fn is_on(self) -> bool {
        match self {
            Streaming::On => true,
            Streaming::Off => false,
        }
    }
}

/// What an endpoint adds to every request besides the conversation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WireOptions {
    pub streaming: Streaming,
    /// The reasoning effort to ask for. The registry sets it only where
    /// the endpoint is known to accept it, so a wire sends it as it is.
    pub reasoning_effort: Option<ReasoningEffort>,
    /// Whether tools' images are sent as image parts (where the wire
    /// carries them); else their results say they were not shown.
    pub images: bool,
}

impl WireOptions {
    /// No reasoning setting.
    pub fn plain(streaming: Streaming) -> WireOptions {
        WireOptions {
            streaming,
            reasoning_effort: None,
            images: true,
        }
    }
}

/// A number at a JSON pointer (`/input_tokens_details/cached_tokens`), or 0.
pub fn u64_ptr(value: &serde_json::Value, pointer: &str) -> u64 {
    value
        .pointer(pointer)
        .and_then(serde_json::Value::as_u64)
        .unwrap_or(0)
}

/// A successfully parsed provider answer, before the chain stamps the model.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ParsedRound {
    /// Reasoning items, in the order the provider sent them.
    pub reasoning: Vec<ReasoningItem>,
    pub text: String,
    pub tool_calls: Vec<ToolCall>,
    pub usage: Option<TokenUsage>,
    pub stop_reason: Option<String>,
}

/// A failure found while reading a provider's answer (bad shape, bad JSON,
/// or an error the provider reported inside a 200 / a stream).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{detail}")]
pub struct WireFailure {
    pub kind: FailureKind,
    pub detail: String,
    pub origin: WireOrigin,
}

/// Who found a [`WireFailure`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WireOrigin {
    /// Holon's decoder: the answer did not have the wire format's shape.
    Decoder,
    /// The provider itself reported an error inside a successful response
    /// (an SSE error event, an error object in a 200 body); its type and
    /// code decided `kind`.
    ProviderReported,
}

impl WireFailure {
    pub fn new(kind: FailureKind, detail: impl Into<String>) -> WireFailure {
        WireFailure {
            kind,
            detail: detail.into(),
            origin: WireOrigin::Decoder,
        }
    }

    /// An error the provider reported in-band.
    pub fn reported(kind: FailureKind, detail: impl Into<String>) -> WireFailure {
        WireFailure {
            kind,
            detail: detail.into(),
            origin: WireOrigin::ProviderReported,
        }
    }

    pub fn invalid(detail: impl Into<String>) -> WireFailure {
        WireFailure::new(FailureKind::InvalidResponse, detail)
    }

    /// The stream closed before its terminal event.
    pub fn truncated(what: &str) -> WireFailure {
        WireFailure::new(
            FailureKind::StreamInterrupted,
            format!("stream ended before {what} (connection dropped mid-response)"),
        )
    }
}

/// Where streamed text deltas go.
pub type ProgressSink<'a> = &'a (dyn Fn(ProviderProgress) + Send + Sync);

/// Whether a streaming decoder has seen its terminal event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreamState {
    Continue,
    Done,
}

/// Folds a wire format's SSE events into a [`ParsedRound`].
pub trait StreamDecoder: Send {
    /// Consumes one event; text deltas are forwarded to `progress` at once.
    fn on_event(
        &mut self,
        event: &SseEvent,
        progress: ProgressSink<'_>,
    ) -> Result<StreamState, WireFailure>;

    /// The round, once the stream ended (after `Done` or end of body).
    fn finish(self: Box<Self>) -> Result<ParsedRound, WireFailure>;
}

/// Parses a tool call's JSON `arguments` string. An empty string means no
/// arguments (`{}`). Text that is not JSON does not fail the round: the
/// call keeps `{}` plus the text and the parse error, and is answered with
/// an `invalid_arguments` tool error so the model can correct itself.
pub fn parse_arguments(raw: &str) -> (serde_json::Value, Option<super::MalformedArguments>) {
    let empty = || serde_json::Value::Object(Default::default());
    if raw.trim().is_empty() {
        return (empty(), None);
    }
    match serde_json::from_str(raw) {
        Ok(v) => (v, None),
        Err(e) => (
            empty(),
            Some(super::MalformedArguments {
                raw: raw.to_owned(),
                error: e.to_string(),
            }),
        ),
    }
}

/// Parses a JSON event payload inside a stream.
pub fn parse_event_json(event: &SseEvent) -> Result<serde_json::Value, WireFailure> {
    serde_json::from_str(&event.data).map_err(|e| {
        WireFailure::invalid(format!(
            "stream event {} is not JSON: {e}",
            event.event.as_deref().unwrap_or("(unnamed)")
        ))
    })
}

/// The system blocks (or the one system prompt) followed by the context
/// blocks that are not turn-scoped, blank-line separated: the part of the
/// frame that holds still from turn to turn.
pub fn system_text(request: &ProviderRequest) -> String {
    let mut parts: Vec<&str> = Vec::new();
    for block in system_parts(request) {
        if !block.trim().is_empty() {
            parts.push(block);
        }
    }
    for block in &request.context_blocks {
        if block.stability != BlockStability::TurnScoped && !block.text.trim().is_empty() {
            parts.push(&block.text);
        }
    }
    parts.join("\n\n")
}

/// The system prompt's parts: its blocks, or the one string.
pub fn system_parts(request: &ProviderRequest) -> Vec<&str> {
    match request.system_blocks.is_empty() {
        true => vec![request.system_prompt.as_str()],
        false => request
            .system_blocks
            .iter()
            .map(|b| b.text.as_str())
            .collect(),
    }
}

/// The turn-scoped blocks (work queue, execution, context summary), blank-
/// line separated: sent after the conversation, so that their change from
/// one round or turn to the next leaves the prefix a provider cached
/// (system, tools, the conversation so far) whole.
pub fn turn_state(request: &ProviderRequest) -> Option<String> {
    let mut parts: Vec<&str> = vec![TURN_STATE_HEADER];
    parts.extend(
        request
            .context_blocks
            .iter()
            .filter(|b| b.stability == BlockStability::TurnScoped && !b.text.trim().is_empty())
            .map(|b| b.text.as_str()),
    );
    (parts.len() > 1).then(|| parts.join("\n\n"))
}

/// The first line of the turn state: the model reads it as the runtime's,
/// never as the operator's words.
pub const TURN_STATE_HEADER: &str =
    "[Runtime state for this round: your working state, work queue and environment. Not a message from the operator.]";

/// Whether a user input's text is the turn state.
pub fn is_turn_state(text: &str) -> bool {
    text.starts_with(TURN_STATE_HEADER)
}

/// The exchanges a wire sends: the request's conversation paired, then
/// the turn state (`turn_state(request)`) as the last input.
pub fn exchanges<'a>(request: &'a ProviderRequest, state: &'a Option<String>) -> Vec<Exchange<'a>> {
    let mut exchanges = pair_tool_results(&request.conversation);
    if let Some(text) = state {
        exchanges.push(Exchange::User(text));
    }
    exchanges
}

pub fn u64_at(value: &serde_json::Value, key: &str) -> u64 {
    value
        .get(key)
        .and_then(serde_json::Value::as_u64)
        .unwrap_or(0)
}

pub fn str_at<'v>(value: &'v serde_json::Value, key: &str) -> Option<&'v str> {
    value.get(key).and_then(serde_json::Value::as_str)
}

/// Token usage with `total_tokens` filled in when the provider omits it.
pub fn usage(input: u64, output: u64, total: u64) -> TokenUsage {
    TokenUsage {
        input_tokens: input,
        output_tokens: output,
        total_tokens: if total == 0 {
            input.saturating_add(output)
        } else {
            total
        },
        ..TokenUsage::default()
    }
}

/// The result text sent when the conversation has no result for a call.
pub const MISSING_RESULT: &str =
    "No result was recorded for this tool call (it was interrupted or lost).";

/// One tool result, paired with the call that requested it.
#[derive(Debug, Clone, PartialEq)]
pub struct PairedResult<'a> {
    pub call_id: &'a str,
    pub tool_name: &'a str,
    pub content: Cow<'a, str>,
    pub is_error: bool,
    /// Images the tool returned, for wire formats that carry them (the
    /// newest of the conversation, up to a request's share).
    pub images: Vec<&'a ToolImage>,
    /// Its older images left out of this request.
    pub images_left_out: usize,
}

/// The conversation after pairing: what wire modules lower.
#[derive(Debug, Clone, PartialEq)]
pub enum Exchange<'a> {
    User(&'a str),
    Assistant {
        reasoning: &'a [ReasoningItem],
        text: &'a str,
        tool_calls: &'a [ToolCall],
    },
    /// The results of the directly preceding assistant round, in call order.
    ToolResults(Vec<PairedResult<'a>>),
}

/// Pairs every tool call with exactly one result (see the module docs).
pub fn pair_tool_results(conversation: &[ConversationItem]) -> Vec<Exchange<'_>> {
    let mut results: HashMap<&str, PairedResult<'_>> = HashMap::new();
    for item in conversation {
        match item {
            ConversationItem::ToolResult {
                call_id,
                tool_name,
                content,
                is_error,
                images,
            } => {
                results
                    .entry(call_id.as_str())
                    .or_insert_with(|| PairedResult {
                        call_id,
                        tool_name,
                        content: Cow::Borrowed(content),
                        is_error: *is_error,
                        images: images.iter().collect(),
                        images_left_out: 0,
                    });
            }
            ConversationItem::UserText { .. } | ConversationItem::AssistantRound { .. } => {}
        }
    }
    let mut out = Vec::new();
    for item in conversation {
        match item {
            ConversationItem::UserText { text } => out.push(Exchange::User(text)),
            ConversationItem::AssistantRound {
                reasoning,
                text,
                tool_calls,
            } => {
                out.push(Exchange::Assistant {
                    reasoning,
                    text,
                    tool_calls,
                });
                if tool_calls.is_empty() {
                    continue;
                }
                let paired = tool_calls
                    .iter()
                    .map(|call| {
                        results
                            .remove(call.id.as_str())
                            .unwrap_or_else(|| PairedResult {
                                call_id: &call.id,
                                tool_name: &call.name,
                                content: Cow::Borrowed(MISSING_RESULT),
                                is_error: true,
                                images: Vec::new(),
                                images_left_out: 0,
                            })
                    })
                    .collect();
                out.push(Exchange::ToolResults(paired));
            }
            ConversationItem::ToolResult { .. } => {}
        }
    }
    if !results.is_empty() {
        tracing::debug!(
            orphans = results.len(),
            "dropped tool results with no matching call"
        );
    }
    super::tool_images::share_images(&mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn call(id: &str) -> ToolCall {
        ToolCall {
            id: id.into(),
            name: "ExecCommand".into(),
            arguments: json!({}),
            malformed_arguments: None,
        }
    }

    fn result(id: &str, content: &str) -> ConversationItem {
        ConversationItem::ToolResult {
            call_id: id.into(),
            tool_name: "ExecCommand".into(),
            content: content.into(),
            is_error: false,
            images: Vec::new(),
        }
    }

    #[test]
    fn pairs_results_after_their_round_in_call_order() {
        let conv = vec![
            ConversationItem::UserText { text: "go".into() },
            ConversationItem::AssistantRound {
                reasoning: Vec::new(),
                text: String::new(),
                tool_calls: vec![call("a"), call("b"), call("c")],
            },
            result("b", "B"),
            ConversationItem::UserText {
                text: "meanwhile".into(),
            },
            result("a", "A"),
            result("a", "duplicate"),
            result("zzz", "orphan"),
        ];
        let ex = pair_tool_results(&conv);
        assert_eq!(ex.len(), 4);
        assert_eq!(ex[3], Exchange::User("meanwhile"));
        let Exchange::ToolResults(r) = &ex[2] else {
            panic!("expected results, got {:?}", ex[2]);
        };
        let got: Vec<(&str, &str, bool)> = r
            .iter()
            .map(|p| (p.call_id, p.content.as_ref(), p.is_error))
            .collect();
        assert_eq!(
            got,
            vec![
                ("a", "A", false),
                ("b", "B", false),
                ("c", MISSING_RESULT, true)
            ]
        );
    }

    #[test]
    fn arguments_parsing() {
        assert_eq!(parse_arguments(""), (json!({}), None));
        assert_eq!(
            parse_arguments(r#"{"cmd":"ls"}"#),
            (json!({"cmd": "ls"}), None)
        );
        let (value, malformed) = parse_arguments(r#"{"cmd":"#);
        assert_eq!(value, json!({}));
        let malformed = malformed.expect("not flagged");
        assert_eq!(malformed.raw, r#"{"cmd":"#);
        assert!(malformed.error.contains("EOF"), "{}", malformed.error);
    }

    #[test]
    fn usage_fills_total() {
        assert_eq!(usage(3, 4, 0).total_tokens, 7);
        assert_eq!(usage(3, 4, 9).total_tokens, 9);
    }
}
