//! Anthropic Messages wire format (`POST {base}/v1/messages`): request
//! lowering, the non-streaming JSON parser and the SSE stream decoder.
//!
//! Lowering keeps the invariants Anthropic enforces: messages alternate
//! user/assistant (consecutive same-role content is merged into one
//! message), the first message is a user message, text blocks are never
//! empty, and each assistant `tool_use` block is answered by a `tool_result`
//! block (same id) at the start of the very next user message. The system
//! prompt and context blocks become `system` text blocks; blocks marked as
//! cache breakpoints get `cache_control` (at most four, the last ones win).
//! Reported input tokens include cache reads and writes. No I/O here.

use serde_json::{json, Value};

use super::classify::{classify_error_code, error_from_value};
use super::sse::SseEvent;
use super::tool_schema::{emit_schema, SchemaMode};
use super::wire::{
    pair_tool_results, parse_arguments, parse_event_json, str_at, turn_state, u64_at, usage,
    Exchange, ParsedRound, ProgressSink, StreamDecoder, StreamState, WireFailure, WireOptions,
};
use super::{
    BlockStability, FailureKind, ProviderProgress, ProviderRequest, ReasoningEffort, ReasoningItem,
    TokenUsage, ToolCall,
};

/// The `anthropic-version` header value.
pub const API_VERSION: &str = "2023-06-01";
/// `max_tokens` is required by the API; used when the request sets none.
pub const DEFAULT_MAX_TOKENS: u32 = 8192;
const MAX_CACHE_BREAKPOINTS: usize = 4;

fn system_blocks(request: &ProviderRequest) -> Vec<Value> {
    let mut blocks: Vec<(&str, bool)> = Vec::new();
    match request.system_blocks.is_empty() {
        true => blocks.push((&request.system_prompt, false)),
        false => blocks.extend(
            request
                .system_blocks
                .iter()
                .map(|b| (b.text.as_str(), b.cache_breakpoint)),
        ),
    }
    // The turn-scoped blocks follow the conversation (`turn_state`).
    for b in &request.context_blocks {
        if b.stability != BlockStability::TurnScoped {
            blocks.push((&b.text, b.cache_breakpoint));
        }
    }
    // One breakpoint is kept for the conversation's end (`messages`).
    let mut budget = MAX_CACHE_BREAKPOINTS - 1;
    let mut out: Vec<Value> = Vec::with_capacity(blocks.len());
    for (text, breakpoint) in blocks.into_iter().rev() {
        if text.trim().is_empty() {
            continue;
        }
        let mut block = json!({"type": "text", "text": text});
        if breakpoint && budget > 0 {
            budget -= 1;
            block["cache_control"] = json!({"type": "ephemeral"});
        }
        out.push(block);
    }
    out.reverse();
    out
}

/// Mark the last block of the last message as a cache breakpoint (not a
/// thinking block, which cannot carry one; nor an empty text).
fn mark_last_block(out: &mut [(&'static str, Vec<Value>)]) {
    if let Some(block) = out.last_mut().and_then(|(_, c)| c.last_mut()) {
        let kind = block["type"].as_str().unwrap_or_default();
        if kind != "thinking" && kind != "redacted_thinking" {
            block["cache_control"] = json!({"type": "ephemeral"});
        }
    }
}

fn push_content(
    messages: &mut Vec<(&'static str, Vec<Value>)>,
    role: &'static str,
    blocks: Vec<Value>,
) {
    if blocks.is_empty() {
        return;
    }
    match messages.last_mut() {
        Some((last_role, content)) if *last_role == role => content.extend(blocks),
        Some(_) | None => messages.push((role, blocks)),
    }
}

/// The most `max_tokens` a request asks for with thinking on.
const MAX_TOKENS_WITH_THINKING: u32 = 64_000;

/// The thinking budget an effort asks for, on top of the answer's own
/// allowance (`answer`), the two within 64,000 tokens; `None` when less
/// than the API's 1,024-token minimum fits.
pub fn thinking_budget(effort: ReasoningEffort, answer: u32) -> Option<u32> {
    let wanted = match effort {
        ReasoningEffort::Minimal => 1024,
        ReasoningEffort::Low => 2048,
        ReasoningEffort::Medium => 8192,
        ReasoningEffort::High => 24_576,
    };
    let budget = wanted.min(MAX_TOKENS_WITH_THINKING.saturating_sub(answer));
    (budget >= 1024).then_some(budget)
}

fn reasoning_block(item: &ReasoningItem) -> Option<Value> {
    match item {
        ReasoningItem::Thinking {
            model: _,
            thinking,
            signature,
        } => Some(json!({"type": "thinking", "thinking": thinking, "signature": signature})),
        ReasoningItem::RedactedThinking { model: _, data } => {
            Some(json!({"type": "redacted_thinking", "data": data}))
        }
        ReasoningItem::Responses { .. } => None,
    }
}

/// Whether the last assistant message, when it calls tools, begins with a
/// thinking block.
fn tool_loop_thinks(messages: &[Value]) -> bool {
    let Some(last) = messages.iter().rev().find(|m| m["role"] == "assistant") else {
        return true;
    };
    let blocks = last["content"].as_array().cloned().unwrap_or_default();
    let calls = blocks.iter().any(|b| b["type"] == "tool_use");
    let first = blocks
        .first()
        .map(|b| b["type"].clone())
        .unwrap_or_default();
    !calls || first == "thinking" || first == "redacted_thinking"
}

fn messages(request: &ProviderRequest, model: &str, thinking: bool, images: bool) -> Vec<Value> {
    let mut out: Vec<(&'static str, Vec<Value>)> = Vec::new();
    let state = turn_state(request);
    let mut exchanges = pair_tool_results(&request.conversation);
    // A rolling breakpoint on the conversation's last block: the next
    // round (and turn) reads all of it from the cache. The turn state
    // comes after it, so its changes do not spoil that prefix.
    let rolling_at = exchanges.len();
    if let Some(text) = &state {
        exchanges.push(Exchange::User(text));
    }
    for (i, exchange) in exchanges.into_iter().enumerate() {
        if i == rolling_at {
            mark_last_block(&mut out);
        }
        match exchange {
            Exchange::User(text) => {
                let blocks = if text.is_empty() {
                    Vec::new()
                } else {
                    vec![json!({"type": "text", "text": text})]
                };
                push_content(&mut out, "user", blocks);
            }
            Exchange::Assistant {
                reasoning,
                text,
                tool_calls,
            } => {
                // With thinking on, a round's thinking blocks go back
                // first, signed and in order, before its tool_use blocks.
                let mut blocks: Vec<Value> = match thinking {
                    true => reasoning
                        .iter()
                        .filter(|r| r.made_by(model))
                        .filter_map(reasoning_block)
                        .collect(),
                    false => Vec::new(),
                };
                if !text.is_empty() {
                    blocks.push(json!({"type": "text", "text": text}));
                }
                for call in tool_calls {
                    let input = match &call.arguments {
                        Value::Object(_) => call.arguments.clone(),
                        Value::Null => json!({}),
                        other => json!({"value": other}),
                    };
                    blocks.push(json!({
                        "type": "tool_use", "id": call.id, "name": call.name, "input": input,
                    }));
                }
                push_content(&mut out, "assistant", blocks);
            }
            Exchange::ToolResults(results) => {
                let blocks = results
                    .into_iter()
                    .map(|r| {
                        let text = r.text(images);
                        let content = if text.is_empty() {
                            "(no output)"
                        } else {
                            text.as_ref()
                        };
                        let mut block = json!({
                            "type": "tool_result", "tool_use_id": r.call_id, "content": content,
                        });
                        if images && !r.images.is_empty() {
                            block["content"] = super::tool_images::messages_parts(content, &r);
                        }
                        if r.is_error {
                            block["is_error"] = Value::Bool(true);
                        }
                        block
                    })
                    .collect();
                push_content(&mut out, "user", blocks);
            }
        }
    }
    if state.is_none() {
        mark_last_block(&mut out);
    }
    if out.first().is_some_and(|(role, _)| *role == "assistant") {
        let opener = vec![json!({"type": "text", "text": "(conversation continues)"})];
        out.insert(0, ("user", opener));
    }
    out.into_iter()
        .map(|(role, content)| json!({"role": role, "content": content}))
        .collect()
}

/// The JSON request body.
pub fn request_body(request: &ProviderRequest, model: &str, options: WireOptions) -> Value {
    let answer = request.max_output_tokens.unwrap_or(DEFAULT_MAX_TOKENS);
    let mut budget = options
        .reasoning_effort
        .filter(|_| !request.no_reasoning)
        .and_then(|e| thinking_budget(e, answer));
    let mut messages_out = messages(request, model, budget.is_some(), options.images);
    // With thinking on, a tool loop's last assistant message must begin
    // with its thinking block. When it has none (another model, or no
    // thinking, made that round), this request goes without thinking.
    if budget.is_some() && !tool_loop_thinks(&messages_out) {
        budget = None;
        messages_out = messages(request, model, false, options.images);
    }
    let mut body = json!({
        "model": model,
        "max_tokens": answer + budget.unwrap_or(0),
        "messages": messages_out,
        "stream": options.streaming.is_on(),
    });
    if let Some(budget) = budget {
        body["thinking"] = json!({"type": "enabled", "budget_tokens": budget});
    }
    let system = system_blocks(request);
    if !system.is_empty() {
        body["system"] = Value::Array(system);
    }
    if !request.tools.is_empty() {
        let tools: Vec<Value> = request
            .tools
            .iter()
            .map(|t| {
                json!({
                    "name": t.name,
                    "description": t.description,
                    "input_schema": emit_schema(&t.input_schema, SchemaMode::Relaxed),
                })
            })
            .collect();
        body["tools"] = Value::Array(tools);
    }
    body
}

fn usage_of(u: &Value) -> TokenUsage {
    let read = u64_at(u, "cache_read_input_tokens");
    let write = u64_at(u, "cache_creation_input_tokens");
    TokenUsage {
        cached_input_tokens: read,
        cache_write_tokens: write,
        ..usage(
            u64_at(u, "input_tokens")
                .saturating_add(read)
                .saturating_add(write),
            u64_at(u, "output_tokens"),
            0,
        )
    }
}

fn error_failure(value: &Value, default: FailureKind) -> WireFailure {
    let error = error_from_value(value);
    let kind = classify_error_code(&error).unwrap_or(default);
    let what = error.message.or(error.error_type).unwrap_or_default();
    WireFailure::reported(kind, format!("provider error: {what}"))
}

/// Parses a complete (non-streaming) Messages response.
pub fn parse_response(body: &Value) -> Result<ParsedRound, WireFailure> {
    if str_at(body, "type") == Some("error") {
        return Err(error_failure(body, FailureKind::ServerError));
    }
    let content = body
        .get("content")
        .and_then(Value::as_array)
        .ok_or_else(|| WireFailure::invalid("message has no `content` array"))?;
    let mut round = ParsedRound::default();
    for block in content {
        match str_at(block, "type") {
            Some("text") => round
                .text
                .push_str(str_at(block, "text").unwrap_or_default()),
            Some("tool_use") => {
                let (Some(id), Some(name)) = (str_at(block, "id"), str_at(block, "name")) else {
                    return Err(WireFailure::invalid("tool_use block without id or name"));
                };
                round.tool_calls.push(ToolCall {
                    id: id.to_owned(),
                    name: name.to_owned(),
                    arguments: block.get("input").cloned().unwrap_or_else(|| json!({})),
                    malformed_arguments: None,
                });
            }
            Some("thinking") => round.reasoning.push(ReasoningItem::Thinking {
                model: String::new(),
                thinking: str_at(block, "thinking").unwrap_or_default().to_owned(),
                signature: str_at(block, "signature").unwrap_or_default().to_owned(),
            }),
            Some("redacted_thinking") => round.reasoning.push(ReasoningItem::RedactedThinking {
                model: String::new(),
                data: str_at(block, "data").unwrap_or_default().to_owned(),
            }),
            // server tool blocks: not replayed.
            _ => {}
        }
    }
    round.usage = body.get("usage").filter(|u| u.is_object()).map(usage_of);
    round.stop_reason = str_at(body, "stop_reason").map(str::to_owned);
    Ok(round)
}

#[derive(Debug)]
enum Block {
    Text,
    Thinking(ReasoningItem),
    Tool {
        id: String,
        name: String,
        json: String,
    },
    Other,
}

/// Folds Messages SSE events (`message_start`, `content_block_*`,
/// `message_delta`, `message_stop`, `error`).
#[derive(Debug, Default)]
pub struct MessagesStream {
    text: String,
    blocks: Vec<(u64, Block)>,
    usage: Option<TokenUsage>,
    stop_reason: Option<String>,
    stopped: bool,
}

impl MessagesStream {
    fn block_mut(&mut self, index: u64) -> Option<&mut Block> {
        self.blocks
            .iter_mut()
            .find(|(i, _)| *i == index)
            .map(|(_, b)| b)
    }

    fn emit_text(&mut self, text: &str, progress: ProgressSink<'_>) {
        if !text.is_empty() {
            self.text.push_str(text);
            progress(ProviderProgress::TextDelta(text.to_owned()));
        }
    }
}

impl StreamDecoder for MessagesStream {
    fn on_event(
        &mut self,
        event: &SseEvent,
        progress: ProgressSink<'_>,
    ) -> Result<StreamState, WireFailure> {
        let value = parse_event_json(event)?;
        let kind = str_at(&value, "type")
            .or(event.event.as_deref())
            .unwrap_or_default();
        let index = u64_at(&value, "index");
        match kind {
            "message_start" => {
                self.usage = value
                    .get("message")
                    .and_then(|m| m.get("usage"))
                    .map(usage_of);
            }
            "content_block_start" => {
                let cb = value.get("content_block").unwrap_or(&Value::Null);
                let block = match str_at(cb, "type") {
                    Some("text") => {
                        self.emit_text(str_at(cb, "text").unwrap_or_default(), progress);
                        Block::Text
                    }
                    Some("thinking") => Block::Thinking(ReasoningItem::Thinking {
                        model: String::new(),
                        thinking: str_at(cb, "thinking").unwrap_or_default().to_owned(),
                        signature: str_at(cb, "signature").unwrap_or_default().to_owned(),
                    }),
                    Some("redacted_thinking") => Block::Thinking(ReasoningItem::RedactedThinking {
                        model: String::new(),
                        data: str_at(cb, "data").unwrap_or_default().to_owned(),
                    }),
                    Some("tool_use") => Block::Tool {
                        id: str_at(cb, "id").unwrap_or_default().to_owned(),
                        name: str_at(cb, "name").unwrap_or_default().to_owned(),
                        json: String::new(),
                    },
                    _ => Block::Other,
                };
                self.blocks.push((index, block));
            }
            "content_block_delta" => {
                let delta = value.get("delta").unwrap_or(&Value::Null);
                match str_at(delta, "type") {
                    Some("text_delta") => {
                        self.emit_text(str_at(delta, "text").unwrap_or_default(), progress);
                    }
                    Some(kind @ ("thinking_delta" | "signature_delta")) => {
                        let (key, part) = match kind {
                            "thinking_delta" => ("thinking", str_at(delta, "thinking")),
                            _ => ("signature", str_at(delta, "signature")),
                        };
                        let part = part.unwrap_or_default();
                        match (self.block_mut(index), key) {
                            (
                                Some(Block::Thinking(ReasoningItem::Thinking { thinking, .. })),
                                "thinking",
                            ) => thinking.push_str(part),
                            (
                                Some(Block::Thinking(ReasoningItem::Thinking {
                                    signature, ..
                                })),
                                _,
                            ) => signature.push_str(part),
                            _ => {
                                return Err(WireFailure::invalid(format!(
                                    "{kind} for block {index}, which is not a thinking block"
                                )))
                            }
                        }
                    }
                    Some("input_json_delta") => {
                        let part = str_at(delta, "partial_json").unwrap_or_default().to_owned();
                        match self.block_mut(index) {
                            Some(Block::Tool { json, .. }) => json.push_str(&part),
                            Some(Block::Text | Block::Thinking(_) | Block::Other) | None => {
                                return Err(WireFailure::invalid(format!(
                                    "input_json_delta for block {index}, which is not a tool_use block"
                                )))
                            }
                        }
                    }
                    _ => {}
                }
            }
            "message_delta" => {
                if let Some(reason) = value.get("delta").and_then(|d| str_at(d, "stop_reason")) {
                    self.stop_reason = Some(reason.to_owned());
                }
                if let Some(u) = value.get("usage") {
                    // Counts here are cumulative; input is only sometimes
                    // repeated.
                    let mut total = self.usage.unwrap_or_default();
                    let delta = usage_of(u);
                    if delta.input_tokens > 0 {
                        total.input_tokens = delta.input_tokens;
                        total.cached_input_tokens = delta.cached_input_tokens;
                        total.cache_write_tokens = delta.cache_write_tokens;
                    }
                    total.output_tokens = delta.output_tokens;
                    total.total_tokens = total.input_tokens.saturating_add(total.output_tokens);
                    self.usage = Some(total);
                }
            }
            "message_stop" => {
                self.stopped = true;
                return Ok(StreamState::Done);
            }
            "error" => return Err(error_failure(&value, FailureKind::ServerError)),
            _ => {}
        }
        Ok(StreamState::Continue)
    }

    fn finish(self: Box<Self>) -> Result<ParsedRound, WireFailure> {
        if !self.stopped {
            return Err(WireFailure::truncated("message_stop"));
        }
        let mut tool_calls = Vec::new();
        let mut reasoning = Vec::new();
        for (_, block) in self.blocks {
            match block {
                Block::Thinking(item) => reasoning.push(item),
                Block::Tool { id, name, json } => {
                    if id.is_empty() || name.is_empty() {
                        return Err(WireFailure::invalid("tool_use block without id or name"));
                    }
                    let (arguments, malformed_arguments) = parse_arguments(&json);
                    tool_calls.push(ToolCall {
                        id,
                        name,
                        arguments,
                        malformed_arguments,
                    });
                }
                Block::Text | Block::Other => {}
            }
        }
        Ok(ParsedRound {
            reasoning,
            text: self.text,
            tool_calls,
            usage: self.usage,
            stop_reason: self.stop_reason,
        })
    }
}

#[cfg(test)]
#[path = "anthropic_messages_tests.rs"]
mod tests;
