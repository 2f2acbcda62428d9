//! OpenAI Responses wire format (`POST {base}/responses`): request lowering,
//! the non-streaming JSON parser and the SSE stream decoder.
//!
//! Lowering: the system prompt and context blocks become `instructions`;
//! user text becomes `message` items; an assistant round becomes an
//! assistant `message` (when it has text) plus one `function_call` item per
//! call, immediately followed by the matching `function_call_output` items
//! (pairing from [`pair_tool_results`]). Requests are sent with
//! `store: false`, so the full conversation is replayed each round. Tool
//! names go on the wire verbatim. The stop reason reported is the response
//! `status` (`completed`, or `incomplete:<reason>`). No I/O here.
//!
//! Freeform tools (a spec with `freeform_field`, i.e. ApplyPatch) are
//! offered as `custom` tools whose input is raw text (the unified diff, no
//! JSON escaping); their calls arrive as `custom_tool_call` items, become
//! `{"input": TEXT}` arguments, and are replayed as `custom_tool_call` /
//! `custom_tool_call_output`.

use serde_json::{json, Value};

use super::classify::{classify_error_code, error_from_value};
use super::sse::SseEvent;
use super::tool_schema::{emit_schema, SchemaMode};
use super::wire::{
    exchanges, parse_arguments, parse_event_json, str_at, system_text, turn_state, u64_at, u64_ptr,
    usage, Exchange, ParsedRound, ProgressSink, StreamDecoder, StreamState, WireFailure,
    WireOptions,
};
use super::{FailureKind, ProviderProgress, ProviderRequest, ReasoningItem, TokenUsage, ToolCall};

/// The JSON request body.
/// The raw text of a freeform call: its `input` (as parsed from a
/// `custom_tool_call`), else the tool's own field (a call recorded as JSON),
/// else the arguments text.
fn freeform_input(call: &ToolCall, field: &str) -> String {
    call.arguments
        .get("input")
        .or_else(|| call.arguments.get(field))
        .and_then(Value::as_str)
        .map(str::to_owned)
        .unwrap_or_else(|| call.arguments_text())
}

pub fn request_body(request: &ProviderRequest, model: &str, options: WireOptions) -> Value {
    let streaming = options.streaming;
    let freeform = |name: &str| {
        request
            .tools
            .iter()
            .find(|t| t.name == name)
            .and_then(|t| t.freeform_field.as_deref())
    };
    let mut custom_calls = std::collections::HashSet::new();
    let mut input = Vec::new();
    let state = turn_state(request);
    for exchange in exchanges(request, &state) {
        match exchange {
            Exchange::User(text) => input.push(json!({
                "type": "message",
                "role": "user",
                "content": [{"type": "input_text", "text": text}],
            })),
            Exchange::Assistant {
                reasoning,
                text,
                tool_calls,
            } => {
                // Reasoning replays first, in order; only items this wire
                // made, and only with content a stateless request can send.
                for item in reasoning.iter().filter(|r| r.made_by(model)) {
                    if let ReasoningItem::Responses {
                        encrypted_content: Some(content),
                        summary,
                        ..
                    } = item
                    {
                        let summary: Vec<Value> = summary
                            .iter()
                            .map(|t| json!({"type": "summary_text", "text": t}))
                            .collect();
                        input.push(json!({
                            "type": "reasoning",
                            "summary": summary,
                            "encrypted_content": content,
                        }));
                    }
                }
                if !text.is_empty() {
                    input.push(json!({
                        "type": "message",
                        "role": "assistant",
                        "content": [{"type": "output_text", "text": text}],
                    }));
                }
                for call in tool_calls {
                    match freeform(&call.name) {
                        Some(field) => {
                            custom_calls.insert(call.id.as_str());
                            input.push(json!({
                                "type": "custom_tool_call",
                                "call_id": call.id,
                                "name": call.name,
                                "input": freeform_input(call, field),
                            }));
                        }
                        None => input.push(json!({
                            "type": "function_call",
                            "call_id": call.id,
                            "name": call.name,
                            "arguments": call.arguments_text(),
                        })),
                    }
                }
            }
            Exchange::ToolResults(results) => {
                for r in results {
                    let kind = match custom_calls.contains(r.call_id) {
                        true => "custom_tool_call_output",
                        false => "function_call_output",
                    };
                    let text = r.text(options.images);
                    let mut output = json!(text);
                    if options.images && !r.images.is_empty() {
                        output = super::tool_images::responses_parts(&text, &r);
                    }
                    input.push(json!({
                        "type": kind,
                        "call_id": r.call_id,
                        "output": output,
                    }));
                }
            }
        }
    }
    let mut body = json!({
        "model": model,
        "instructions": system_text(request),
        "input": input,
        "store": false,
        "stream": streaming.is_on(),
    });
    if !request.tools.is_empty() {
        let mode = SchemaMode::Relaxed;
        let tools: Vec<Value> = request
            .tools
            .iter()
            .map(|t| match &t.freeform_field {
                Some(_) => json!({
                    "type": "custom",
                    "name": t.name,
                    "description": t.description,
                    "format": {"type": "text"},
                }),
                None => json!({
                    "type": "function",
                    "name": t.name,
                    "description": t.description,
                    "parameters": emit_schema(&t.input_schema, mode),
                    "strict": mode.strict_flag(),
                }),
            })
            .collect();
        body["tools"] = Value::Array(tools);
        body["parallel_tool_calls"] = Value::Bool(true);
    }
    if let Some(max) = request.max_output_tokens {
        body["max_output_tokens"] = json!(max);
    }
    if let Some(effort) = options.reasoning_effort.filter(|_| !request.no_reasoning) {
        // `store: false` keeps nothing server-side: the reasoning comes
        // back encrypted so the next round can replay it.
        body["reasoning"] = json!({"effort": effort.as_str(), "summary": "auto"});
        body["include"] = json!(["reasoning.encrypted_content"]);
    }
    if let Some(key) = &request.prompt_cache_key {
        body["prompt_cache_key"] = json!(key);
    }
    if let Some(s) = &request.response_schema {
        body["text"] = json!({"format": {
            "type": "json_schema", "name": s.name, "schema": s.schema, "strict": true,
        }});
    }
    body
}

fn failed(response: &Value) -> WireFailure {
    let error = response
        .get("error")
        .map(error_from_value)
        .unwrap_or_default();
    // The provider said it failed; a code we don't know is its trouble, not
    // a sign that the endpoint speaks another format.
    let kind = classify_error_code(&error).unwrap_or(FailureKind::ServerError);
    let what = error
        .message
        .or(error.code)
        .unwrap_or_else(|| "no error detail".to_owned());
    WireFailure::reported(kind, format!("response failed: {what}"))
}

fn parse_output_items(items: &[Value], round: &mut ParsedRound) -> Result<(), WireFailure> {
    for item in items {
        match str_at(item, "type") {
            Some("message") => {
                let parts = item.get("content").and_then(Value::as_array);
                for part in parts.into_iter().flatten() {
                    match str_at(part, "type") {
                        Some("output_text") => {
                            round
                                .text
                                .push_str(str_at(part, "text").unwrap_or_default());
                        }
                        Some("refusal") => {
                            round
                                .text
                                .push_str(str_at(part, "refusal").unwrap_or_default());
                        }
                        _ => {}
                    }
                }
            }
            Some("function_call") => {
                let name = str_at(item, "name")
                    .ok_or_else(|| WireFailure::invalid("function_call item without a name"))?;
                let id = str_at(item, "call_id")
                    .or_else(|| str_at(item, "id"))
                    .ok_or_else(|| WireFailure::invalid("function_call item without a call_id"))?;
                let (arguments, malformed_arguments) = match item.get("arguments") {
                    Some(Value::String(raw)) => parse_arguments(raw),
                    Some(Value::Null) | None => (json!({}), None),
                    Some(other) => (other.clone(), None),
                };
                round.tool_calls.push(ToolCall {
                    id: id.to_owned(),
                    name: name.to_owned(),
                    arguments,
                    malformed_arguments,
                });
            }
            Some("custom_tool_call") => {
                let name = str_at(item, "name")
                    .ok_or_else(|| WireFailure::invalid("custom_tool_call item without a name"))?;
                let id = str_at(item, "call_id")
                    .or_else(|| str_at(item, "id"))
                    .ok_or_else(|| {
                        WireFailure::invalid("custom_tool_call item without a call_id")
                    })?;
                let text = str_at(item, "input").unwrap_or_default();
                round.tool_calls.push(ToolCall {
                    id: id.to_owned(),
                    name: name.to_owned(),
                    arguments: json!({ "input": text }),
                    malformed_arguments: None,
                });
            }
            Some("reasoning") => {
                let summary = item.get("summary").and_then(Value::as_array);
                round.reasoning.push(ReasoningItem::Responses {
                    model: String::new(),
                    encrypted_content: str_at(item, "encrypted_content").map(str::to_owned),
                    summary: summary
                        .into_iter()
                        .flatten()
                        .filter_map(|s| str_at(s, "text"))
                        .filter(|t| !t.is_empty())
                        .map(str::to_owned)
                        .collect(),
                });
            }
            // web search and other items carry nothing we replay.
            _ => {}
        }
    }
    Ok(())
}

/// Parses a complete Responses object (non-streaming body, or the
/// `response` of a terminal stream event).
pub fn parse_response(body: &Value) -> Result<ParsedRound, WireFailure> {
    if body.get("error").is_some_and(|e| !e.is_null()) || str_at(body, "status") == Some("failed") {
        return Err(failed(body));
    }
    let items = body
        .get("output")
        .and_then(Value::as_array)
        .ok_or_else(|| WireFailure::invalid("response has no `output` array"))?;
    let mut round = ParsedRound::default();
    parse_output_items(items, &mut round)?;
    if let Some(u) = body.get("usage").filter(|u| u.is_object()) {
        round.usage = Some(TokenUsage {
            cached_input_tokens: u64_ptr(u, "/input_tokens_details/cached_tokens"),
            reasoning_tokens: u64_ptr(u, "/output_tokens_details/reasoning_tokens"),
            ..usage(
                u64_at(u, "input_tokens"),
                u64_at(u, "output_tokens"),
                u64_at(u, "total_tokens"),
            )
        });
    }
    round.stop_reason = match str_at(body, "status") {
        Some("incomplete") => {
            let reason = body
                .get("incomplete_details")
                .and_then(|d| str_at(d, "reason"))
                .unwrap_or("unknown");
            Some(format!("incomplete:{reason}"))
        }
        Some(status) => Some(status.to_owned()),
        None => None,
    };
    Ok(round)
}

/// Folds Responses SSE events; the terminal `response.completed` /
/// `response.incomplete` event carries the full response, whose `output` is
/// rebuilt from `response.output_item.done` events when it comes back empty.
#[derive(Debug, Default)]
pub struct ResponsesStream {
    done_items: Vec<Value>,
    streamed_text: String,
    terminal: Option<Value>,
}

impl StreamDecoder for ResponsesStream {
    fn on_event(
        &mut self,
        event: &SseEvent,
        progress: ProgressSink<'_>,
    ) -> Result<StreamState, WireFailure> {
        if event.data.trim() == "[DONE]" {
            return Ok(StreamState::Done);
        }
        let value = parse_event_json(event)?;
        let kind = str_at(&value, "type")
            .or(event.event.as_deref())
            .unwrap_or_default();
        match kind {
            "response.output_text.delta" => {
                let delta = str_at(&value, "delta").unwrap_or_default();
                if !delta.is_empty() {
                    self.streamed_text.push_str(delta);
                    progress(ProviderProgress::TextDelta(delta.to_owned()));
                }
                Ok(StreamState::Continue)
            }
            "response.output_item.done" => {
                if let Some(item) = value.get("item") {
                    self.done_items.push(item.clone());
                }
                Ok(StreamState::Continue)
            }
            "response.completed" | "response.incomplete" => {
                self.terminal = Some(value.get("response").cloned().unwrap_or(Value::Null));
                Ok(StreamState::Done)
            }
            "response.failed" => Err(failed(value.get("response").unwrap_or(&Value::Null))),
            "error" => {
                let error = error_from_value(&value);
                let kind = classify_error_code(&error).unwrap_or(FailureKind::ServerError);
                let what = error.message.or(error.code).unwrap_or_default();
                Err(WireFailure::reported(
                    kind,
                    format!("stream error event: {what}"),
                ))
            }
            _ => Ok(StreamState::Continue),
        }
    }

    fn finish(self: Box<Self>) -> Result<ParsedRound, WireFailure> {
        let Some(mut response) = self.terminal else {
            return Err(WireFailure::truncated("response.completed"));
        };
        if !response.is_object() {
            return Err(WireFailure::invalid(
                "terminal stream event has no `response` object",
            ));
        }
        let output_empty = response
            .get("output")
            .and_then(Value::as_array)
            .is_none_or(Vec::is_empty);
        if output_empty {
            response["output"] = Value::Array(self.done_items);
        }
        let mut round = parse_response(&response)?;
        if round.text.is_empty() && round.tool_calls.is_empty() {
            round.text = self.streamed_text;
        }
        Ok(round)
    }
}

#[cfg(test)]
#[path = "openai_responses_tests.rs"]
mod tests;
