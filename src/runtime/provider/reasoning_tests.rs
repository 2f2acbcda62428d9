//! Reasoning and usage on the three wires: the effort each asks for, the
//! reasoning each parses and replays (and the others drop), and the token
//! detail each reports.

use serde_json::{json, Value};

use super::sse::SseEvent;
use super::wire::{StreamDecoder, Streaming, WireOptions};
use super::{
    anthropic_messages as messages, openai_chat as chat, openai_responses as responses,
    ConversationItem, ProviderRequest, ReasoningEffort, ReasoningItem, ToolCall,
};

fn call(id: &str) -> ToolCall {
    ToolCall {
        id: id.into(),
        name: "ExecCommand".into(),
        arguments: json!({"cmd": "ls"}),
        malformed_arguments: None,
    }
}

/// A turn whose first round reasoned (on both wires), then called a tool.
fn request() -> ProviderRequest {
    ProviderRequest {
        system_blocks: Vec::new(),
        cache: None,
        system_prompt: "sys".into(),
        context_blocks: Vec::new(),
        conversation: vec![
            ConversationItem::UserText { text: "go".into() },
            ConversationItem::AssistantRound {
                reasoning: vec![
                    ReasoningItem::Responses {
                        model: String::new(),
                        encrypted_content: Some("enc-1".into()),
                        summary: vec!["look first".into()],
                    },
                    ReasoningItem::Responses {
                        model: String::new(),
                        encrypted_content: None,
                        summary: Vec::new(),
                    },
                    ReasoningItem::Thinking {
                        model: String::new(),
                        thinking: "list it".into(),
                        signature: "sig-1".into(),
                    },
                    ReasoningItem::RedactedThinking {
                        model: String::new(),
                        data: "red-1".into(),
                    },
                ],
                text: String::new(),
                tool_calls: vec![call("c1")],
            },
            ConversationItem::ToolResult {
                call_id: "c1".into(),
                tool_name: "ExecCommand".into(),
                content: "a.txt".into(),
                is_error: false,
                images: Vec::new(),
            },
        ],
        tools: Vec::new(),
        max_output_tokens: None,
        prompt_cache_key: None,
        no_reasoning: false,
        response_schema: None,
    }
}

fn with(effort: Option<ReasoningEffort>) -> WireOptions {
    WireOptions {
        streaming: Streaming::Off,
        reasoning_effort: effort,
        images: true,
    }
}

fn types(items: &Value) -> Vec<String> {
    items
        .as_array()
        .into_iter()
        .flatten()
        .map(|i| i["type"].as_str().unwrap_or_default().to_owned())
        .collect()
}

#[test]
fn responses_ask_for_effort_and_encrypted_reasoning_and_replay_it_in_order() {
    let body = responses::request_body(&request(), "o4-mini", with(Some(ReasoningEffort::High)));
    assert_eq!(body["reasoning"]["effort"], "high");
    assert_eq!(body["include"], json!(["reasoning.encrypted_content"]));
    assert_eq!(body["store"], false);
    // Only this wire's item with content replays, before the call, and
    // without an id the stateless API could not resolve.
    assert_eq!(
        types(&body["input"]),
        [
            "message",
            "reasoning",
            "function_call",
            "function_call_output"
        ]
    );
    assert_eq!(
        body["input"][1],
        json!({"type": "reasoning", "encrypted_content": "enc-1",
               "summary": [{"type": "summary_text", "text": "look first"}]})
    );

    let plain = responses::request_body(&request(), "gpt-4.1", with(None));
    assert!(plain.get("reasoning").is_none() && plain.get("include").is_none());
}

#[test]
fn responses_parse_reasoning_items_and_token_details() {
    let round = responses::parse_response(&json!({
        "status": "completed",
        "output": [
            {"type": "reasoning", "id": "rs_1", "encrypted_content": "enc-2",
             "summary": [{"type": "summary_text", "text": "plan"}]},
            {"type": "function_call", "call_id": "c2", "name": "ExecCommand", "arguments": "{}"}
        ],
        "usage": {"input_tokens": 1000, "output_tokens": 300, "total_tokens": 1300,
                  "input_tokens_details": {"cached_tokens": 800},
                  "output_tokens_details": {"reasoning_tokens": 256}}
    }))
    .unwrap();
    assert_eq!(
        round.reasoning,
        [ReasoningItem::Responses {
            model: String::new(),
            encrypted_content: Some("enc-2".into()),
            summary: vec!["plan".into()],
        }]
    );
    assert!(round.text.is_empty(), "reasoning is never the answer");
    let usage = round.usage.unwrap();
    assert_eq!((usage.input_tokens, usage.cached_input_tokens), (1000, 800));
    assert_eq!((usage.output_tokens, usage.reasoning_tokens), (300, 256));
}

#[test]
fn messages_think_within_the_output_reserve_and_replay_signed_blocks_first() {
    let body = messages::request_body(&request(), "claude-x", with(Some(ReasoningEffort::Low)));
    assert_eq!(
        body["thinking"],
        json!({"type": "enabled", "budget_tokens": 2048})
    );
    let assistant = &body["messages"][1];
    assert_eq!(assistant["role"], "assistant");
    assert_eq!(
        types(&assistant["content"]),
        ["thinking", "redacted_thinking", "tool_use"]
    );
    assert_eq!(
        assistant["content"][0],
        json!({"type": "thinking", "thinking": "list it", "signature": "sig-1"})
    );

    // Without thinking on, no thinking block is sent back.
    let plain = messages::request_body(&request(), "claude-x", with(None));
    assert!(plain.get("thinking").is_none());
    assert_eq!(types(&plain["messages"][1]["content"]), ["tool_use"]);

    // The budget stays under max_tokens; too small a reserve turns it off.
    // Thinking comes on top of the answer's allowance, within 64,000.
    assert_eq!(
        messages::thinking_budget(ReasoningEffort::High, 8192),
        Some(24_576)
    );
    assert_eq!(
        messages::thinking_budget(ReasoningEffort::High, 50_000),
        Some(14_000)
    );
    assert_eq!(
        messages::thinking_budget(ReasoningEffort::Minimal, 63_500),
        None
    );
    let mut small = request();
    small.max_output_tokens = Some(1200);
    let body = messages::request_body(&small, "claude-x", with(Some(ReasoningEffort::High)));
    assert_eq!(body["thinking"]["budget_tokens"], 24_576);
    assert_eq!(body["max_tokens"], 1200 + 24_576);
    // The summariser asks for none.
    small.no_reasoning = true;
    let body = messages::request_body(&small, "claude-x", with(Some(ReasoningEffort::High)));
    assert!(
        body.get("thinking").is_none() && body["max_tokens"] == 1200,
        "{body}"
    );
    let body = responses::request_body(&small, "o3", with(Some(ReasoningEffort::High)));
    assert!(body.get("reasoning").is_none(), "{body}");
}

#[test]
fn reasoning_goes_back_only_to_the_model_that_made_it() {
    let mut req = request();
    if let ConversationItem::AssistantRound { reasoning, .. } = &mut req.conversation[1] {
        for r in reasoning.iter_mut() {
            r.stamp("model-a");
        }
    }
    let body = responses::request_body(&req, "model-a", with(Some(ReasoningEffort::Low)));
    assert!(types(&body["input"]).contains(&"reasoning".to_owned()));
    let body = responses::request_body(&req, "model-b", with(Some(ReasoningEffort::Low)));
    assert!(
        !types(&body["input"]).contains(&"reasoning".to_owned()),
        "{body}"
    );
    // On Anthropic, a tool loop whose last round has no thinking of this
    // model's cannot be sent with thinking on: this request goes without.
    let body = messages::request_body(&req, "model-b", with(Some(ReasoningEffort::Low)));
    assert!(body.get("thinking").is_none(), "{body}");
    assert_eq!(types(&body["messages"][1]["content"]), ["tool_use"]);
    let body = messages::request_body(&req, "model-a", with(Some(ReasoningEffort::Low)));
    assert_eq!(body["thinking"]["budget_tokens"], 2048);
}

#[test]
fn messages_parse_thinking_whole_and_streamed_with_cache_usage() {
    let round = messages::parse_response(&json!({
        "type": "message",
        "content": [
            {"type": "thinking", "thinking": "hmm", "signature": "sig-2"},
            {"type": "redacted_thinking", "data": "red-2"},
            {"type": "text", "text": "done"}
        ],
        "stop_reason": "end_turn",
        "usage": {"input_tokens": 10, "cache_read_input_tokens": 900,
                  "cache_creation_input_tokens": 90, "output_tokens": 40}
    }))
    .unwrap();
    assert_eq!(round.text, "done");
    assert_eq!(round.reasoning.len(), 2);
    let usage = round.usage.unwrap();
    assert_eq!(usage.input_tokens, 1000);
    assert_eq!(
        (usage.cached_input_tokens, usage.cache_write_tokens),
        (900, 90)
    );

    let frames = [
        json!({"type": "message_start", "message": {"usage":
            {"input_tokens": 5, "cache_read_input_tokens": 50, "output_tokens": 1}}}),
        json!({"type": "content_block_start", "index": 0,
               "content_block": {"type": "thinking", "thinking": ""}}),
        json!({"type": "content_block_delta", "index": 0,
               "delta": {"type": "thinking_delta", "thinking": "step one, "}}),
        json!({"type": "content_block_delta", "index": 0,
               "delta": {"type": "thinking_delta", "thinking": "step two"}}),
        json!({"type": "content_block_delta", "index": 0,
               "delta": {"type": "signature_delta", "signature": "sig-3"}}),
        json!({"type": "content_block_start", "index": 1,
               "content_block": {"type": "text", "text": ""}}),
        json!({"type": "content_block_delta", "index": 1,
               "delta": {"type": "text_delta", "text": "ok"}}),
        json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"},
               "usage": {"output_tokens": 30}}),
        json!({"type": "message_stop"}),
    ];
    let mut stream = Box::<messages::MessagesStream>::default();
    let texts = std::sync::Mutex::new(Vec::new());
    let progress = |p: super::ProviderProgress| {
        if let super::ProviderProgress::TextDelta(t) = p {
            texts.lock().unwrap().push(t)
        }
    };
    for f in frames {
        let event = SseEvent {
            event: None,
            data: f.to_string(),
        };
        stream.on_event(&event, &progress).unwrap();
    }
    let round = stream.finish().unwrap();
    assert_eq!(
        round.reasoning,
        [ReasoningItem::Thinking {
            model: String::new(),
            thinking: "step one, step two".into(),
            signature: "sig-3".into(),
        }]
    );
    assert_eq!(round.text, "ok");
    assert_eq!(
        *texts.lock().unwrap(),
        ["ok"],
        "thinking is not streamed as the answer"
    );
    let usage = round.usage.unwrap();
    assert_eq!(
        (
            usage.input_tokens,
            usage.cached_input_tokens,
            usage.output_tokens
        ),
        (55, 50, 30)
    );
}

#[test]
fn chat_sends_effort_only_when_given_and_reads_token_details() {
    let body = chat::request_body(&request(), "o3", with(Some(ReasoningEffort::Medium)));
    assert_eq!(body["reasoning_effort"], "medium");
    let plain = chat::request_body(&request(), "llama", with(None));
    assert!(plain.get("reasoning_effort").is_none());
    // No reasoning replays on this wire; the call still does.
    assert_eq!(plain["messages"][2]["tool_calls"][0]["id"], "c1");

    let round = chat::parse_response(&json!({
        "choices": [{"message": {"content": "hi"}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120,
                  "prompt_tokens_details": {"cached_tokens": 64},
                  "completion_tokens_details": {"reasoning_tokens": 12}}
    }))
    .unwrap();
    let usage = round.usage.unwrap();
    assert_eq!(
        (usage.cached_input_tokens, usage.reasoning_tokens),
        (64, 12)
    );
}

#[test]
fn a_default_effort_goes_only_where_the_endpoint_takes_it() {
    use super::registry::{resolve_endpoint, ProviderEndpointConfig};
    let env = [
        ("OPENAI_API_KEY", "k"),
        ("ANTHROPIC_API_KEY", "k"),
        ("OPENROUTER_API_KEY", "k"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v.to_owned()))
    .collect();
    let mut endpoints = std::collections::BTreeMap::new();
    let own: ProviderEndpointConfig = toml::from_str(
        "base_url = \"http://127.0.0.1:1/v1\"\nwire = \"openai_chat\"\nreasoning_effort = \"low\"",
    )
    .unwrap();
    endpoints.insert("local".to_owned(), own);
    let effort = |model: &str| {
        let mut e = resolve_endpoint(model, &env, &endpoints).unwrap();
        e.default_reasoning_effort(Some(ReasoningEffort::High));
        e.reasoning_effort
    };
    assert_eq!(effort("openai/o3"), Some(ReasoningEffort::High));
    assert_eq!(effort("anthropic/claude-x"), Some(ReasoningEffort::High));
    // An OpenAI-compatible server may refuse the parameter: left out.
    assert_eq!(effort("openrouter/some-model"), None);
    // Configured on the endpoint: the operator's word wins.
    assert_eq!(effort("local/qwen"), Some(ReasoningEffort::Low));
    let bad = toml::from_str::<ProviderEndpointConfig>(
        "base_url = \"x\"\nwire = \"openai_chat\"\nreasoning_effort = \"extreme\"",
    );
    assert!(bad.is_err());
}

#[test]
fn reasoning_survives_the_transcript_and_old_records_read_without_it() {
    let item: ConversationItem = serde_json::from_value(json!({
        "type": "assistant_round", "text": "hi", "tool_calls": []
    }))
    .unwrap();
    assert!(
        matches!(item, ConversationItem::AssistantRound { reasoning, .. } if reasoning.is_empty())
    );
    let round = ConversationItem::AssistantRound {
        reasoning: vec![ReasoningItem::Thinking {
            model: String::new(),
            thinking: "t".into(),
            signature: "s".into(),
        }],
        text: String::new(),
        tool_calls: Vec::new(),
    };
    let back: ConversationItem =
        serde_json::from_value(serde_json::to_value(&round).unwrap()).unwrap();
    assert_eq!(back, round);
}

#[test]
fn absurd_usage_saturates_instead_of_wrapping() {
    let round = messages::parse_response(&json!({
        "type": "message", "content": [{"type": "text", "text": "x"}],
        "usage": {"input_tokens": u64::MAX, "cache_read_input_tokens": 5, "output_tokens": u64::MAX}
    }))
    .unwrap();
    let usage = round.usage.unwrap();
    assert_eq!(
        (usage.input_tokens, usage.total_tokens),
        (u64::MAX, u64::MAX)
    );
    let mut sum = usage;
    sum.add(&usage);
    assert_eq!(sum.output_tokens, u64::MAX);
    let mut agent = crate::model::agent::AgentRecord::new("a", String::new());
    crate::runtime::budget::add_round(&mut agent, "2026-11-25", &usage, Some(u64::MAX));
    crate::runtime::budget::add_round(&mut agent, "2026-11-25", &usage, Some(u64::MAX));
    assert_eq!(agent.total_cost_micro_usd, u64::MAX);
    assert_eq!(agent.spend_today.tokens, u64::MAX);
}
