//! A tool's images on the three wires: image parts after the result's text
//! where the format carries them (Anthropic Messages, OpenAI Responses), a
//! note where it does not (Chat Completions).

use serde_json::{json, Value};

use super::wire::{Streaming, WireOptions};
use super::{
    anthropic_messages as messages, openai_chat as chat, openai_responses as responses,
    ConversationItem, ProviderRequest, ToolCall, ToolImage,
};

fn request(images: Vec<ToolImage>) -> ProviderRequest {
    ProviderRequest {
        system_blocks: Vec::new(),
        cache: None,
        system_prompt: "sys".into(),
        context_blocks: Vec::new(),
        conversation: vec![
            ConversationItem::UserText {
                text: "look".into(),
            },
            ConversationItem::AssistantRound {
                reasoning: Vec::new(),
                text: String::new(),
                tool_calls: vec![ToolCall {
                    id: "c1".into(),
                    name: "mcp__shots__take".into(),
                    arguments: json!({}),
                    malformed_arguments: None,
                }],
            },
            ConversationItem::ToolResult {
                call_id: "c1".into(),
                tool_name: "mcp__shots__take".into(),
                content: "{\"ok\":true}".into(),
                is_error: false,
                images,
            },
        ],
        tools: Vec::new(),
        max_output_tokens: None,
        prompt_cache_key: None,
        no_reasoning: false,
        response_schema: None,
    }
}

fn two() -> Vec<ToolImage> {
    vec![
        ToolImage {
            mime_type: "image/png".into(),
            data: "iVBORw0KGgo=".into(),
        },
        ToolImage {
            mime_type: "image/jpeg".into(),
            data: "/9j/4A==".into(),
        },
    ]
}

const OFF: WireOptions = WireOptions {
    streaming: Streaming::Off,
    reasoning_effort: None,
    images: true,
};

/// The one item of `items` whose `key` is `value`.
fn find<'a>(items: &'a Value, key: &str, value: &str) -> &'a Value {
    items
        .as_array()
        .and_then(|a| a.iter().find(|i| i[key] == value))
        .unwrap_or(&Value::Null)
}

#[test]
fn anthropic_sends_image_blocks_after_the_text() {
    let body = messages::request_body(&request(two()), "claude-x", OFF);
    let user = &body["messages"][2]["content"][0];
    assert_eq!(user["type"], "tool_result");
    assert_eq!(
        user["content"],
        json!([
            {"type": "text", "text": "{\"ok\":true}"},
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}},
            {"type": "image", "source": {"type": "base64", "media_type": "image/jpeg", "data": "/9j/4A=="}},
        ])
    );
    let plain = messages::request_body(&request(Vec::new()), "claude-x", OFF);
    assert_eq!(
        plain["messages"][2]["content"][0]["content"],
        "{\"ok\":true}"
    );
}

#[test]
fn responses_sends_input_images_as_data_urls() {
    let body = responses::request_body(&request(two()), "gpt-x", OFF);
    let output = &find(&body["input"], "type", "function_call_output")["output"];
    assert_eq!(
        output,
        &json!([
            {"type": "input_text", "text": "{\"ok\":true}"},
            {"type": "input_image", "image_url": "data:image/png;base64,iVBORw0KGgo="},
            {"type": "input_image", "image_url": "data:image/jpeg;base64,/9j/4A=="},
        ])
    );
    let plain = responses::request_body(&request(Vec::new()), "gpt-x", OFF);
    let output = &find(&plain["input"], "type", "function_call_output")["output"];
    assert_eq!(output, "{\"ok\":true}");
}

#[test]
fn a_provider_without_images_is_told_they_were_not_shown() {
    let text_only = WireOptions {
        images: false,
        ..OFF
    };
    let body = messages::request_body(&request(two()), "claude-x", text_only);
    let content = &body["messages"][2]["content"][0]["content"];
    let text = content.as_str().unwrap_or_default();
    assert!(text.contains("[2 images not shown"), "{content}");
    let body = responses::request_body(&request(two()), "gpt-x", text_only);
    let output = &find(&body["input"], "type", "function_call_output")["output"];
    assert!(
        output.as_str().unwrap_or_default().contains("not shown"),
        "{output}"
    );
}

#[test]
fn chat_completions_says_the_images_were_not_shown() {
    let body = chat::request_body(&request(two()), "gpt-x", OFF);
    let tool = find(&body["messages"], "role", "tool");
    let content = tool["content"].as_str().unwrap_or_default();
    assert!(
        content.starts_with("{\"ok\":true}\n[2 images not shown"),
        "{content}"
    );
    assert!(!content.contains("iVBOR"), "{content}");
}

#[test]
fn a_request_carries_the_newest_twenty_images() {
    let image = ToolImage {
        mime_type: "image/png".into(),
        data: "iVBORw0KGgo=".into(),
    };
    let mut req = request(vec![image.clone(); 15]);
    let mut later = request(vec![image; 10]);
    for item in &mut later.conversation {
        if let ConversationItem::AssistantRound { tool_calls, .. } = item {
            tool_calls[0].id = "c2".into();
        }
        if let ConversationItem::ToolResult { call_id, .. } = item {
            *call_id = "c2".into();
        }
    }
    req.conversation
        .extend(later.conversation.into_iter().skip(1));
    let body = messages::request_body(&req, "claude-x", OFF);
    let images = |m: usize| {
        body["messages"][m]["content"][0]["content"]
            .as_array()
            .map_or(0, |parts| {
                parts.iter().filter(|p| p["type"] == "image").count()
            })
    };
    // The later result keeps all 10; the earlier one its first 10 of 15.
    assert_eq!((images(2), images(4)), (10, 10));
    let older = body["messages"][2]["content"][0]["content"][0]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(
        older.ends_with("[5 images not re-sent: a request carries only the newest 20]"),
        "{older}"
    );
}

#[test]
fn an_endpoint_says_whether_its_models_take_images() {
    use super::registry::{resolve_endpoint, ProviderEndpointConfig};
    let env = [("OPENAI_API_KEY".to_owned(), "k".to_owned())].into();
    let mut endpoints = std::collections::BTreeMap::new();
    let blind: ProviderEndpointConfig = toml::from_str(
        "base_url = \"http://127.0.0.1:1/v1\"\nwire = \"openai_responses\"\nimages = false",
    )
    .unwrap();
    endpoints.insert("local".to_owned(), blind);
    let images = |model: &str| resolve_endpoint(model, &env, &endpoints).unwrap().images;
    assert!(!images("local/text-only"));
    assert!(images("openai/gpt-x"));
}
