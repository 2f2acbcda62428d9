//! OpenAI Responses lowering, parsing and stream decoding.

use super::*;
use crate::model::usage::ConversationItem;
use crate::runtime::provider::ToolSpec;
use std::sync::Mutex;

fn request() -> ProviderRequest {
    ProviderRequest {
        system_blocks: Vec::new(),
        cache: None,
        system_prompt: "sys".into(),
        context_blocks: Vec::new(),
        conversation: vec![
            ConversationItem::UserText { text: "hi".into() },
            ConversationItem::AssistantRound {
                reasoning: Vec::new(),
                text: "checking".into(),
                tool_calls: vec![ToolCall {
                    id: "c1".into(),
                    name: "ExecCommand".into(),
                    arguments: json!({"cmd": "ls"}),
                    malformed_arguments: None,
                }],
            },
            ConversationItem::ToolResult {
                call_id: "c1".into(),
                tool_name: "ExecCommand".into(),
                content: "a.txt".into(),
                is_error: false,
                images: Vec::new(),
            },
        ],
        tools: vec![ToolSpec {
            name: "ExecCommand".into(),
            description: "run".into(),
            input_schema: json!({"type": "object", "properties": {}}),
            freeform_field: None,
        }],
        max_output_tokens: Some(100),
        prompt_cache_key: None,
        no_reasoning: false,
        response_schema: None,
    }
}

#[test]
fn freeform_tools_are_custom_tools_both_ways() {
    let mut req = request();
    req.tools.push(ToolSpec {
        name: "ApplyPatch".into(),
        description: "patch".into(),
        input_schema: json!({"type": "object"}),
        freeform_field: Some("patch".into()),
    });
    let diff = "--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n";
    // A call recorded from a custom call, and one recorded as JSON (an
    // older transcript, or another wire): both replay as custom calls.
    req.conversation.push(ConversationItem::AssistantRound {
        reasoning: Vec::new(),
        text: String::new(),
        tool_calls: vec![
            ToolCall {
                id: "p1".into(),
                name: "ApplyPatch".into(),
                arguments: json!({"input": diff}),
                malformed_arguments: None,
            },
            ToolCall {
                id: "p2".into(),
                name: "ApplyPatch".into(),
                arguments: json!({"patch": diff}),
                malformed_arguments: None,
            },
        ],
    });
    for id in ["p1", "p2"] {
        req.conversation.push(ConversationItem::ToolResult {
            call_id: id.into(),
            tool_name: "ApplyPatch".into(),
            content: "{\"ok\":true}".into(),
            is_error: false,
            images: Vec::new(),
        });
    }
    let body = request_body(
        &req,
        "gpt-5",
        WireOptions::plain(crate::runtime::provider::wire::Streaming::Off),
    );
    assert_eq!(
        body["tools"][1],
        json!({"type": "custom", "name": "ApplyPatch",
        "description": "patch", "format": {"type": "text"}})
    );
    let items = body["input"].as_array().cloned().unwrap_or_default();
    let custom: Vec<&Value> = items
        .iter()
        .filter(|i| i["type"] == "custom_tool_call")
        .collect();
    assert_eq!(custom.len(), 2);
    assert!(custom.iter().all(|c| c["input"] == diff), "{custom:?}");
    let outputs = items
        .iter()
        .filter(|i| i["type"] == "custom_tool_call_output")
        .count();
    assert_eq!(outputs, 2, "each custom call's result is a custom output");
    // The exec call keeps the function form.
    assert!(items
        .iter()
        .any(|i| i["type"] == "function_call_output" && i["call_id"] == "c1"));

    let parsed = parse_response(&json!({"status": "completed", "output": [
        {"type": "custom_tool_call", "call_id": "p3", "name": "ApplyPatch", "input": diff}
    ]}));
    let round = parsed.unwrap();
    assert_eq!(round.tool_calls[0].arguments, json!({"input": diff}));
    assert_eq!(round.tool_calls[0].name, "ApplyPatch");
}

#[test]
fn lowers_calls_and_outputs() {
    let body = request_body(
        &request(),
        "gpt-4.1",
        WireOptions::plain(crate::runtime::provider::wire::Streaming::Off),
    );
    assert_eq!(body["model"], "gpt-4.1");
    assert_eq!(body["instructions"], "sys");
    assert_eq!(body["stream"], false);
    assert_eq!(body["max_output_tokens"], 100);
    assert_eq!(body["tools"][0]["name"], "ExecCommand");
    assert_eq!(body["tools"][0]["strict"], false);
    assert_eq!(
        body["tools"][0]["parameters"]["additionalProperties"],
        false
    );
    let types: Vec<&str> = body["input"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|i| i["type"].as_str())
        .collect();
    assert_eq!(
        types,
        vec![
            "message",
            "message",
            "function_call",
            "function_call_output"
        ]
    );
    assert_eq!(body["input"][2]["arguments"], r#"{"cmd":"ls"}"#);
    assert_eq!(body["input"][3]["call_id"], "c1");
}

#[test]
fn parses_text_calls_usage_and_status() {
    let body = json!({
        "status": "completed",
        "output": [
            {"type": "reasoning", "summary": []},
            {"type": "message", "content": [{"type": "output_text", "text": "ok"}]},
            {"type": "function_call", "call_id": "a", "name": "ExecCommand", "arguments": "{\"cmd\":\"ls\"}"},
            {"type": "function_call", "call_id": "b", "name": "ReadFile", "arguments": ""}
        ],
        "usage": {"input_tokens": 10, "output_tokens": 5, "total_tokens": 15}
    });
    let round = parse_response(&body).ok();
    let round = round.as_ref();
    assert_eq!(round.map(|r| r.text.as_str()), Some("ok"));
    assert_eq!(round.map(|r| r.tool_calls.len()), Some(2));
    assert_eq!(
        round.map(|r| r.tool_calls[1].arguments.clone()),
        Some(json!({}))
    );
    assert_eq!(
        round.and_then(|r| r.usage).map(|u| u.total_tokens),
        Some(15)
    );
    assert_eq!(
        round.and_then(|r| r.stop_reason.clone()).as_deref(),
        Some("completed")
    );
}

#[test]
fn malformed_shapes_are_invalid() {
    let bad_args = json!({"output": [{"type": "function_call", "call_id": "a", "name": "X", "arguments": "{oops"}]});
    assert_eq!(
        parse_response(&bad_args)
            .ok()
            .and_then(|r| r.tool_calls[0].malformed_arguments.clone())
            .map(|m| m.raw),
        Some("{oops".to_owned()),
        "malformed arguments are kept for a tool error, not a failed round"
    );
    assert_eq!(
        parse_response(&json!({"id": 1})).err().map(|e| e.kind),
        Some(FailureKind::InvalidResponse)
    );
    let ctx = json!({"status": "failed", "error": {"code": "context_length_exceeded", "message": "too long"}});
    assert_eq!(
        parse_response(&ctx).err().map(|e| e.kind),
        Some(FailureKind::ContextLengthExceeded)
    );
}

fn ev(data: Value) -> SseEvent {
    SseEvent {
        event: data["type"].as_str().map(str::to_owned),
        data: data.to_string(),
    }
}

#[test]
fn stream_rebuilds_output_from_items() {
    let seen = Mutex::new(Vec::new());
    let sink = |p: ProviderProgress| {
        if let ProviderProgress::TextDelta(d) = p {
            seen.lock().unwrap_or_else(|e| e.into_inner()).push(d)
        }
    };
    let mut dec: Box<dyn StreamDecoder> = Box::<ResponsesStream>::default();
    let events = [
        json!({"type": "response.output_text.delta", "delta": "Hel"}),
        json!({"type": "response.output_text.delta", "delta": "lo"}),
        json!({"type": "response.output_item.done", "item": {"type": "message", "content": [{"type": "output_text", "text": "Hello"}]}}),
        json!({"type": "response.completed", "response": {"status": "completed", "output": [], "usage": {"input_tokens": 1, "output_tokens": 2}}}),
    ];
    let mut states = Vec::new();
    for e in events {
        states.push(dec.on_event(&ev(e), &sink).ok());
    }
    assert_eq!(states.last(), Some(&Some(StreamState::Done)));
    let round = dec.finish().ok();
    assert_eq!(round.as_ref().map(|r| r.text.as_str()), Some("Hello"));
    assert_eq!(round.and_then(|r| r.usage).map(|u| u.total_tokens), Some(3));
    assert_eq!(
        *seen.lock().unwrap_or_else(|e| e.into_inner()),
        vec!["Hel", "lo"]
    );
}

#[test]
fn stream_without_terminal_event_is_truncated() {
    let dec: Box<dyn StreamDecoder> = Box::<ResponsesStream>::default();
    assert_eq!(
        dec.finish().err().map(|e| e.kind),
        Some(FailureKind::StreamInterrupted)
    );
}

#[test]
fn the_turn_state_is_the_last_input_and_not_in_the_instructions() {
    use crate::runtime::provider::{BlockStability, PromptContentBlock};
    let mut r = request();
    r.system_blocks = vec![PromptContentBlock {
        text: "policy".into(),
        stability: BlockStability::Stable,
        cache_breakpoint: true,
    }];
    r.context_blocks = vec![
        PromptContentBlock {
            text: "memory".into(),
            stability: BlockStability::AgentScoped,
            cache_breakpoint: true,
        },
        PromptContentBlock {
            text: "Work queue: none".into(),
            stability: BlockStability::TurnScoped,
            cache_breakpoint: false,
        },
    ];
    let body = request_body(
        &r,
        "gpt-4.1",
        WireOptions::plain(crate::runtime::provider::wire::Streaming::Off),
    );
    assert_eq!(body["instructions"], "policy\n\nmemory");
    let input = body["input"].as_array().unwrap();
    let last = input.last().unwrap();
    assert_eq!(last["role"], "user");
    let state = last["content"][0]["text"].as_str().unwrap();
    assert!(crate::runtime::provider::wire::is_turn_state(state));
    assert!(state.ends_with("\n\nWork queue: none"), "{state}");
    assert_eq!(input[input.len() - 2]["type"], "function_call_output");
}
