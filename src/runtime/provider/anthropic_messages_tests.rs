//! Anthropic Messages lowering, parsing and stream decoding.

use super::*;
use crate::model::usage::ConversationItem;
use crate::runtime::provider::{BlockStability, PromptContentBlock};

fn call(id: &str) -> ToolCall {
    ToolCall {
        id: id.into(),
        name: "ExecCommand".into(),
        arguments: json!({"cmd": id}),
        malformed_arguments: None,
    }
}

fn result(id: &str) -> ConversationItem {
    ConversationItem::ToolResult {
        call_id: id.into(),
        tool_name: "ExecCommand".into(),
        content: format!("out {id}"),
        is_error: id == "b",
        images: Vec::new(),
    }
}

#[test]
fn lowering_alternates_and_pairs_results() {
    let request = ProviderRequest {
        system_blocks: Vec::new(),
        cache: None,
        system_prompt: "sys".into(),
        context_blocks: vec![PromptContentBlock {
            text: "ctx".into(),
            stability: BlockStability::Stable,
            cache_breakpoint: true,
        }],
        conversation: vec![
            ConversationItem::AssistantRound {
                reasoning: Vec::new(),
                text: "earlier".into(),
                tool_calls: vec![],
            },
            ConversationItem::UserText {
                text: "do it".into(),
            },
            ConversationItem::AssistantRound {
                reasoning: Vec::new(),
                text: String::new(),
                tool_calls: vec![call("a"), call("b")],
            },
            result("b"),
            result("a"),
            ConversationItem::UserText {
                text: "also this".into(),
            },
        ],
        tools: vec![],
        max_output_tokens: None,
        prompt_cache_key: None,
        no_reasoning: false,
        response_schema: None,
    };
    let body = request_body(
        &request,
        "claude-x",
        WireOptions::plain(crate::runtime::provider::wire::Streaming::On),
    );
    assert_eq!(body["max_tokens"], DEFAULT_MAX_TOKENS);
    assert_eq!(body["system"][1]["cache_control"]["type"], "ephemeral");
    assert!(body["system"][0].get("cache_control").is_none());
    let msgs = body["messages"].as_array().cloned().unwrap_or_default();
    let roles: Vec<&str> = msgs.iter().filter_map(|m| m["role"].as_str()).collect();
    assert_eq!(
        roles,
        vec!["user", "assistant", "user", "assistant", "user"]
    );
    let last = &msgs[4]["content"];
    assert_eq!(last[0]["type"], "tool_result");
    assert_eq!(last[0]["tool_use_id"], "a");
    assert_eq!(last[1]["tool_use_id"], "b");
    assert_eq!(last[1]["is_error"], true);
    assert_eq!(last[2]["type"], "text");
    assert_eq!(msgs[3]["content"][0]["input"], json!({"cmd": "a"}));
}

#[test]
fn parses_blocks_usage_and_errors() {
    let body = json!({
        "content": [{"type": "text", "text": "hi"}, {"type": "tool_use", "id": "t1", "name": "ExecCommand", "input": {"cmd": "ls"}}],
        "stop_reason": "tool_use",
        "usage": {"input_tokens": 10, "cache_read_input_tokens": 90, "output_tokens": 7}
    });
    let round = parse_response(&body).ok();
    assert_eq!(round.as_ref().map(|r| r.tool_calls.len()), Some(1));
    assert_eq!(
        round
            .as_ref()
            .and_then(|r| r.usage)
            .map(|u| (u.input_tokens, u.total_tokens)),
        Some((100, 107))
    );
    assert_eq!(
        round.and_then(|r| r.stop_reason).as_deref(),
        Some("tool_use")
    );
    assert!(parse_response(&json!({"id": "x"})).is_err());
}

#[test]
fn stream_accumulates_json_deltas_and_rejects_malformed() {
    let sink = |_: ProviderProgress| {};
    let run = |parts: &[&str]| {
        let mut dec: Box<dyn StreamDecoder> = Box::<MessagesStream>::default();
        let mut events = vec![
            json!({"type": "message_start", "message": {"usage": {"input_tokens": 3, "output_tokens": 1}}}),
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "tool_use", "id": "t", "name": "ExecCommand", "input": {}}}),
        ];
        for p in parts {
            events.push(json!({"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": p}}));
        }
        events.push(json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 9}}));
        events.push(json!({"type": "message_stop"}));
        for e in events {
            let ev = SseEvent {
                event: None,
                data: e.to_string(),
            };
            dec.on_event(&ev, &sink)?;
        }
        dec.finish()
    };
    let ok = run(&["{\"cmd\":", "\"ls\"}"]).ok();
    assert_eq!(
        ok.as_ref().map(|r| r.tool_calls[0].arguments.clone()),
        Some(json!({"cmd": "ls"}))
    );
    assert_eq!(
        ok.and_then(|r| r.usage)
            .map(|u| (u.input_tokens, u.output_tokens)),
        Some((3, 9))
    );
    // Malformed arguments do not fail the round: the call carries them.
    let cut = run(&["{\"cmd\":"]).ok();
    let call = cut.as_ref().map(|r| &r.tool_calls[0]);
    assert_eq!(call.map(|c| c.arguments.clone()), Some(json!({})));
    assert_eq!(
        call.and_then(|c| c.malformed_arguments.as_ref())
            .map(|m| m.raw.as_str()),
        Some("{\"cmd\":")
    );
}

#[test]
fn overloaded_stream_error_is_server_error() {
    let mut dec = MessagesStream::default();
    let ev = SseEvent {
        event: Some("error".into()),
        data:
            json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})
                .to_string(),
    };
    assert_eq!(
        dec.on_event(&ev, &|_| {}).err().map(|e| e.kind),
        Some(FailureKind::ServerError)
    );
}

#[test]
fn system_blocks_lead_and_the_turn_state_follows_the_conversation_past_a_rolling_breakpoint() {
    let block = |text: &str, stability, cache_breakpoint| PromptContentBlock {
        text: text.into(),
        stability,
        cache_breakpoint,
    };
    let request = ProviderRequest {
        system_prompt: "policy".into(),
        system_blocks: vec![block("policy", BlockStability::Stable, true)],
        context_blocks: vec![
            block("guidance", BlockStability::AgentScoped, true),
            block("Work queue: none", BlockStability::TurnScoped, false),
        ],
        conversation: vec![
            ConversationItem::UserText {
                text: "do it".into(),
            },
            ConversationItem::AssistantRound {
                reasoning: Vec::new(),
                text: String::new(),
                tool_calls: vec![call("a")],
            },
            result("a"),
        ],
        tools: vec![],
        max_output_tokens: None,
        prompt_cache_key: None,
        cache: None,
        no_reasoning: false,
        response_schema: None,
    };
    let body = request_body(
        &request,
        "claude",
        WireOptions::plain(crate::runtime::provider::wire::Streaming::Off),
    );
    let system = body["system"].as_array().unwrap();
    let texts: Vec<&str> = system.iter().map(|b| b["text"].as_str().unwrap()).collect();
    assert_eq!(
        texts,
        ["policy", "guidance"],
        "no turn-scoped block in the system"
    );
    assert!(system
        .iter()
        .all(|b| b["cache_control"]["type"] == "ephemeral"));
    let messages = body["messages"].as_array().unwrap();
    let last = messages.last().unwrap()["content"].as_array().unwrap();
    // The tool result closes the cached prefix; the turn state follows.
    assert_eq!(last[0]["type"], "tool_result");
    assert_eq!(last[0]["cache_control"]["type"], "ephemeral");
    assert!(last[1]["text"]
        .as_str()
        .unwrap()
        .ends_with("\n\nWork queue: none"));
    assert!(last[1].get("cache_control").is_none());
    let marks = body.to_string().matches("cache_control").count();
    assert!(marks <= 4, "at most four breakpoints: {marks}");
}
