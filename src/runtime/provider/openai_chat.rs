//! OpenAI Chat Completions wire format (`POST {base}/chat/completions`) for
//! OpenAI-compatible endpoints (Ollama's `/v1`, OpenRouter, configured
//! gateways): request lowering, the non-streaming parser and the SSE
//! decoder.
//!
//! Lowering: one `system` message (system prompt + context blocks), `user`
//! messages, assistant messages with `tool_calls` (arguments as JSON
//! strings), each followed by one `role: tool` message per call. Only
//! widely supported fields are sent (no `strict`, no `prompt_cache_key`), so
//! compatible servers accept the body. Streams ask for usage with
//! `stream_options.include_usage`; tool-call deltas are merged by `index`.
//! The stop reason is the choice's `finish_reason`. No I/O here.

use serde_json::{json, Value};

use super::classify::{classify_error_code, error_from_value};
use super::sse::SseEvent;
use super::tool_schema::{emit_schema, SchemaMode};
use super::wire::{
    exchanges, parse_arguments, parse_event_json, str_at, system_text, turn_state, u64_at, u64_ptr,
    usage, Exchange, ParsedRound, ProgressSink, StreamDecoder, StreamState, WireFailure,
    WireOptions,
};
use super::{FailureKind, ProviderProgress, ProviderRequest, TokenUsage, ToolCall};

/// The JSON request body.
pub fn request_body(request: &ProviderRequest, model: &str, options: WireOptions) -> Value {
    let streaming = options.streaming;
    let mut messages = Vec::new();
    let system = system_text(request);
    if !system.is_empty() {
        messages.push(json!({"role": "system", "content": system}));
    }
    let state = turn_state(request);
    for exchange in exchanges(request, &state) {
        match exchange {
            Exchange::User(text) => messages.push(json!({"role": "user", "content": text})),
            // Chat Completions has no replayable reasoning.
            Exchange::Assistant {
                text, tool_calls, ..
            } => {
                if text.is_empty() && tool_calls.is_empty() {
                    continue;
                }
                let mut msg = json!({
                    "role": "assistant",
                    "content": if text.is_empty() { Value::Null } else { Value::from(text) },
                });
                if !tool_calls.is_empty() {
                    let calls: Vec<Value> = tool_calls
                        .iter()
                        .map(|c| {
                            json!({
                                "id": c.id,
                                "type": "function",
                                "function": {"name": c.name, "arguments": c.arguments_text()},
                            })
                        })
                        .collect();
                    msg["tool_calls"] = Value::Array(calls);
                }
                messages.push(msg);
            }
            Exchange::ToolResults(results) => {
                for r in results {
                    // A tool message is text only on this wire.
                    let content = r.text(false);
                    messages.push(json!({
                        "role": "tool", "tool_call_id": r.call_id, "content": content,
                    }));
                }
            }
        }
    }
    let mut body = json!({"model": model, "messages": messages, "stream": streaming.is_on()});
    if let Some(effort) = options.reasoning_effort.filter(|_| !request.no_reasoning) {
        body["reasoning_effort"] = json!(effort.as_str());
    }
    if streaming.is_on() {
        body["stream_options"] = json!({"include_usage": true});
    }
    if !request.tools.is_empty() {
        let tools: Vec<Value> = request
            .tools
            .iter()
            .map(|t| {
                json!({
                    "type": "function",
                    "function": {
                        "name": t.name,
                        "description": t.description,
                        "parameters": emit_schema(&t.input_schema, SchemaMode::Relaxed),
                    },
                })
            })
            .collect();
        body["tools"] = Value::Array(tools);
    }
    if let Some(s) = &request.response_schema {
        body["response_format"] = json!({"type": "json_schema", "json_schema": {
            "name": s.name, "schema": s.schema, "strict": true,
        }});
    }
    if let Some(max) = request.max_output_tokens {
        body["max_tokens"] = json!(max);
    }
    body
}

fn usage_of(u: &Value) -> TokenUsage {
    TokenUsage {
        cached_input_tokens: u64_ptr(u, "/prompt_tokens_details/cached_tokens"),
        reasoning_tokens: u64_ptr(u, "/completion_tokens_details/reasoning_tokens"),
        ..usage(
            u64_at(u, "prompt_tokens"),
            u64_at(u, "completion_tokens"),
            u64_at(u, "total_tokens"),
        )
    }
}

fn reported_error(value: &Value) -> Option<WireFailure> {
    let err = value.get("error").filter(|e| !e.is_null())?;
    let parsed = error_from_value(&json!({"error": err}));
    // The provider said it failed; a code we don't know is its trouble, not
    // a sign that the endpoint speaks another format.
    let kind = classify_error_code(&parsed).unwrap_or(FailureKind::ServerError);
    let what = parsed.message.or(parsed.code).unwrap_or_default();
    Some(WireFailure::reported(
        kind,
        format!("provider error: {what}"),
    ))
}

fn tool_call_of(index: usize, call: &Value) -> Result<ToolCall, WireFailure> {
    let function = call.get("function").unwrap_or(&Value::Null);
    let name = str_at(function, "name")
        .filter(|n| !n.is_empty())
        .ok_or_else(|| WireFailure::invalid("tool call without a function name"))?;
    let id = str_at(call, "id")
        .filter(|i| !i.is_empty())
        .map_or_else(|| format!("call_{index}"), str::to_owned);
    let (arguments, malformed_arguments) = match function.get("arguments") {
        Some(Value::String(raw)) => parse_arguments(raw),
        Some(Value::Null) | None => (json!({}), None),
        Some(other) => (other.clone(), None),
    };
    Ok(ToolCall {
        id,
        name: name.to_owned(),
        arguments,
        malformed_arguments,
    })
}

/// Parses a complete (non-streaming) chat completion.
pub fn parse_response(body: &Value) -> Result<ParsedRound, WireFailure> {
    if let Some(failure) = reported_error(body) {
        return Err(failure);
    }
    let choice = body
        .get("choices")
        .and_then(Value::as_array)
        .and_then(|c| c.first())
        .ok_or_else(|| WireFailure::invalid("completion has no `choices`"))?;
    let message = choice
        .get("message")
        .filter(|m| m.is_object())
        .ok_or_else(|| WireFailure::invalid("choice has no `message` object"))?;
    let mut round = ParsedRound {
        text: str_at(message, "content").unwrap_or_default().to_owned(),
        ..ParsedRound::default()
    };
    let calls = message.get("tool_calls").and_then(Value::as_array);
    for (i, call) in calls.into_iter().flatten().enumerate() {
        round.tool_calls.push(tool_call_of(i, call)?);
    }
    round.usage = body.get("usage").filter(|u| u.is_object()).map(usage_of);
    round.stop_reason = str_at(choice, "finish_reason").map(str::to_owned);
    Ok(round)
}

#[derive(Debug, Default)]
struct PartialCall {
    index: u64,
    id: String,
    name: String,
    arguments: String,
}

/// Folds chat-completion chunks until `data: [DONE]`.
#[derive(Debug, Default)]
pub struct ChatStream {
    text: String,
    calls: Vec<PartialCall>,
    usage: Option<TokenUsage>,
    finish_reason: Option<String>,
    done: bool,
}

impl ChatStream {
    fn merge_call_delta(&mut self, delta: &Value) {
        let id = str_at(delta, "id").unwrap_or_default();
        let index = match delta.get("index").and_then(Value::as_u64) {
            Some(i) => i,
            // Servers that omit `index` send each call whole or start a new
            // call with a new id.
            None => match self.calls.last() {
                Some(last) if id.is_empty() || last.id == id => last.index,
                Some(last) => last.index + 1,
                None => 0,
            },
        };
        let pos = match self.calls.iter().position(|c| c.index == index) {
            Some(p) => p,
            None => {
                self.calls.push(PartialCall {
                    index,
                    ..PartialCall::default()
                });
                self.calls.len() - 1
            }
        };
        let call = &mut self.calls[pos];
        if !id.is_empty() {
            call.id = id.to_owned();
        }
        let function = delta.get("function").unwrap_or(&Value::Null);
        if let Some(name) = str_at(function, "name") {
            call.name.push_str(name);
        }
        match function.get("arguments") {
            Some(Value::String(part)) => call.arguments.push_str(part),
            Some(obj @ Value::Object(_)) => call.arguments = obj.to_string(),
            Some(_) | None => {}
        }
    }
}

impl StreamDecoder for ChatStream {
    fn on_event(
        &mut self,
        event: &SseEvent,
        progress: ProgressSink<'_>,
    ) -> Result<StreamState, WireFailure> {
        if event.data.trim() == "[DONE]" {
            self.done = true;
            return Ok(StreamState::Done);
        }
        let value = parse_event_json(event)?;
        if let Some(failure) = reported_error(&value) {
            return Err(failure);
        }
        if let Some(u) = value.get("usage").filter(|u| u.is_object()) {
            self.usage = Some(usage_of(u));
        }
        let choices = value.get("choices").and_then(Value::as_array);
        for choice in choices.into_iter().flatten() {
            if let Some(delta) = choice.get("delta") {
                let text = str_at(delta, "content").unwrap_or_default();
                if !text.is_empty() {
                    self.text.push_str(text);
                    progress(ProviderProgress::TextDelta(text.to_owned()));
                }
                let calls = delta.get("tool_calls").and_then(Value::as_array);
                for call in calls.into_iter().flatten() {
                    self.merge_call_delta(call);
                }
            }
            if let Some(reason) = str_at(choice, "finish_reason") {
                self.finish_reason = Some(reason.to_owned());
            }
        }
        Ok(StreamState::Continue)
    }

    fn finish(self: Box<Self>) -> Result<ParsedRound, WireFailure> {
        if !self.done && self.finish_reason.is_none() {
            return Err(WireFailure::truncated("[DONE]"));
        }
        let mut calls = self.calls;
        calls.sort_by_key(|c| c.index);
        let mut tool_calls = Vec::with_capacity(calls.len());
        for (i, c) in calls.into_iter().enumerate() {
            if c.name.is_empty() {
                return Err(WireFailure::invalid(
                    "streamed tool call without a function name",
                ));
            }
            let id = if c.id.is_empty() {
                format!("call_{i}")
            } else {
                c.id
            };
            let (arguments, malformed_arguments) = parse_arguments(&c.arguments);
            tool_calls.push(ToolCall {
                id,
                name: c.name,
                arguments,
                malformed_arguments,
            });
        }
        Ok(ParsedRound {
            reasoning: Vec::new(),
            text: self.text,
            tool_calls,
            usage: self.usage,
            stop_reason: self.finish_reason,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::usage::ConversationItem;

    #[test]
    fn lowers_tool_calls_and_tool_messages() {
        let request = ProviderRequest {
            system_blocks: Vec::new(),
            cache: None,
            system_prompt: "sys".into(),
            context_blocks: vec![],
            conversation: vec![
                ConversationItem::UserText { text: "hi".into() },
                ConversationItem::AssistantRound {
                    reasoning: Vec::new(),
                    text: String::new(),
                    tool_calls: vec![ToolCall {
                        id: "c1".into(),
                        name: "ExecCommand".into(),
                        arguments: json!({"cmd": "ls"}),
                        malformed_arguments: None,
                    }],
                },
            ],
            tools: vec![],
            max_output_tokens: Some(64),
            prompt_cache_key: Some("k".into()),
            no_reasoning: false,
            response_schema: None,
        };
        let body = request_body(
            &request,
            "llama3.2",
            WireOptions::plain(crate::runtime::provider::wire::Streaming::On),
        );
        assert_eq!(body["stream_options"]["include_usage"], true);
        assert_eq!(body["max_tokens"], 64);
        assert!(body.get("prompt_cache_key").is_none());
        let msgs = body["messages"].as_array().cloned().unwrap_or_default();
        assert_eq!(msgs.len(), 4);
        assert_eq!(msgs[2]["content"], Value::Null);
        assert_eq!(
            msgs[2]["tool_calls"][0]["function"]["arguments"],
            r#"{"cmd":"ls"}"#
        );
        assert_eq!(msgs[3]["role"], "tool");
        assert_eq!(msgs[3]["tool_call_id"], "c1");
        assert!(body.get("response_format").is_none());
        // A schema for the final text: the wire's structured output.
        let request = ProviderRequest {
            response_schema: Some(crate::runtime::approvals::review::verdict_schema()),
            ..request
        };
        let plain = WireOptions::plain(crate::runtime::provider::wire::Streaming::Off);
        let body = request_body(&request, "llama3.2", plain);
        let format = &body["response_format"];
        assert_eq!(format["type"], "json_schema");
        assert_eq!(format["json_schema"]["strict"], true);
        assert_eq!(
            format["json_schema"]["schema"]["required"],
            json!(["verdict", "reason"])
        );
    }

    #[test]
    fn parses_parallel_calls_and_rejects_bad_arguments() {
        let body = json!({
            "choices": [{"message": {"content": null, "tool_calls": [
                {"id": "a", "type": "function", "function": {"name": "ExecCommand", "arguments": "{\"cmd\":\"ls\"}"}},
                {"id": "b", "type": "function", "function": {"name": "ReadFile", "arguments": {"path": "x"}}}
            ]}, "finish_reason": "tool_calls"}],
            "usage": {"prompt_tokens": 5, "completion_tokens": 6}
        });
        let round = parse_response(&body).ok();
        assert_eq!(round.as_ref().map(|r| r.tool_calls.len()), Some(2));
        assert_eq!(
            round.as_ref().map(|r| r.tool_calls[1].arguments.clone()),
            Some(json!({"path": "x"}))
        );
        assert_eq!(
            round.and_then(|r| r.usage).map(|u| u.total_tokens),
            Some(11)
        );
        let bad = json!({"choices": [{"message": {"tool_calls": [{"id": "a", "function": {"name": "X", "arguments": "{"}}]}}]});
        let kept = parse_response(&bad).ok();
        assert_eq!(
            kept.as_ref()
                .and_then(|r| r.tool_calls[0].malformed_arguments.as_ref())
                .map(|m| m.raw.as_str()),
            Some("{"),
            "malformed arguments are kept for a tool error, not a failed round"
        );
        assert_eq!(
            kept.map(|r| r.tool_calls[0].arguments_text()).as_deref(),
            Some("{")
        );
        let ctx = json!({"error": {"code": "context_length_exceeded", "message": "too long"}});
        assert_eq!(
            parse_response(&ctx).err().map(|e| e.kind),
            Some(FailureKind::ContextLengthExceeded)
        );
    }

    #[test]
    fn stream_merges_call_fragments_by_index() {
        let mut dec: Box<dyn StreamDecoder> = Box::<ChatStream>::default();
        let chunks = [
            json!({"choices": [{"delta": {"content": "Hi"}}]}),
            json!({"choices": [{"delta": {"tool_calls": [{"index": 0, "id": "a", "function": {"name": "ExecCommand", "arguments": "{\"cmd\""}}]}}]}),
            json!({"choices": [{"delta": {"tool_calls": [{"index": 1, "id": "b", "function": {"name": "ReadFile", "arguments": ""}}]}}]}),
            json!({"choices": [{"delta": {"tool_calls": [{"index": 0, "function": {"arguments": ":\"ls\"}"}}]}}]}),
            json!({"choices": [{"delta": {}, "finish_reason": "tool_calls"}]}),
            json!({"choices": [], "usage": {"prompt_tokens": 1, "completion_tokens": 2, "total_tokens": 3}}),
        ];
        for c in chunks {
            let ev = SseEvent {
                event: None,
                data: c.to_string(),
            };
            assert_eq!(dec.on_event(&ev, &|_| {}).ok(), Some(StreamState::Continue));
        }
        let done = SseEvent {
            event: None,
            data: "[DONE]".into(),
        };
        assert_eq!(dec.on_event(&done, &|_| {}).ok(), Some(StreamState::Done));
        let round = dec.finish().ok();
        let calls: Vec<(String, Value)> = round
            .iter()
            .flat_map(|r| {
                r.tool_calls
                    .iter()
                    .map(|c| (c.id.clone(), c.arguments.clone()))
            })
            .collect();
        assert_eq!(
            calls,
            vec![("a".into(), json!({"cmd": "ls"})), ("b".into(), json!({}))]
        );
        assert_eq!(
            round.and_then(|r| r.stop_reason).as_deref(),
            Some("tool_calls")
        );
    }
}
