//! The stub model provider (the `holon-stub` crate, shared with the
//! benchmarks) and the protocol invariants the tests check requests
//! against.

pub use holon_stub::*;

/// The request every test sends, and the protocol invariants each recorded
/// request must satisfy (model, auth header, tools named verbatim, every
/// tool call answered by exactly one result, in place).
pub mod invariants {
    use holon::model::usage::ConversationItem;
    use holon::model::usage::ToolCall;
    use holon::runtime::provider::{ProviderRequest, ToolSpec};
    use serde_json::{json, Value};

    use super::Recorded;

    pub const TOOLS: [&str; 2] = ["ExecCommand", "ReadFile"];

    /// A conversation with a finished parallel tool round whose results arrive
    /// out of order around an operator message, plus one call never answered.
    pub fn request() -> ProviderRequest {
        let call = |id: &str, name: &str| ToolCall {
            id: id.into(),
            name: name.into(),
            arguments: json!({"arg": id}),
            malformed_arguments: None,
        };
        let result = |id: &str, name: &str| ConversationItem::ToolResult {
            call_id: id.into(),
            tool_name: name.into(),
            content: format!("result of {id}"),
            is_error: false,
            images: Vec::new(),
        };
        ProviderRequest {
        system_blocks: Vec::new(),
        cache: None,
        system_prompt: "You are Holon.".into(),
        context_blocks: Vec::new(),
        conversation: vec![
            ConversationItem::UserText { text: "look around".into() },
            ConversationItem::AssistantRound {
                reasoning: Vec::new(),
                text: "Looking.".into(),
                tool_calls: vec![call("call_1", "ExecCommand"), call("call_2", "ReadFile"), call("call_3", "ExecCommand")],
            },
            result("call_2", "ReadFile"),
            ConversationItem::UserText { text: "operator: hurry".into() },
            result("call_1", "ExecCommand"),
        ],
        tools: TOOLS
            .iter()
            .map(|n| ToolSpec {
                name: (*n).into(),
                description: format!("{n} tool"),
                input_schema: json!({"type": "object", "properties": {"arg": {"type": "string"}}, "required": ["arg"]}),
                freeform_field: None,
            })
            .collect(),
        max_output_tokens: Some(512),
        prompt_cache_key: None,
        no_reasoning: false,
        response_schema: None,
    }
    }

    #[derive(Clone, Copy)]
    pub enum Wire {
        Responses,
        Anthropic,
        Chat,
    }

    #[derive(Clone, Copy)]
    pub enum Auth<'a> {
        Bearer(&'a str),
        AnthropicKey(&'a str),
        None,
    }

    fn ids(values: impl Iterator<Item = Value>, key: &str) -> Vec<String> {
        values
            .filter_map(|v| v[key].as_str().map(str::to_owned))
            .collect()
    }

    /// The invariants every request must satisfy, whatever the test.
    pub fn check_request(r: &Recorded, wire: Wire, auth: Auth<'_>, model: &str) {
        assert_eq!(r.method, "POST");
        assert_eq!(r.body["model"], model, "model in {}", r.body);
        match auth {
            Auth::Bearer(key) => assert_eq!(
                r.headers.get("authorization"),
                Some(&format!("Bearer {key}"))
            ),
            Auth::AnthropicKey(key) => {
                assert_eq!(r.headers.get("x-api-key").map(String::as_str), Some(key));
                assert_eq!(
                    r.headers.get("anthropic-version").map(String::as_str),
                    Some("2023-06-01")
                );
                assert!(!r.headers.contains_key("authorization"));
            }
            Auth::None => assert!(
                !r.headers.contains_key("authorization") && !r.headers.contains_key("x-api-key")
            ),
        }
        let tools = r.body["tools"].as_array().cloned().unwrap_or_default();
        let names: Vec<&str> = tools
            .iter()
            .filter_map(|t| match wire {
                Wire::Chat => t["function"]["name"].as_str(),
                Wire::Responses | Wire::Anthropic => t["name"].as_str(),
            })
            .collect();
        assert_eq!(names, TOOLS, "tool names verbatim");
        match wire {
            Wire::Responses => check_responses_pairing(&r.body),
            Wire::Anthropic => check_anthropic_pairing(&r.body),
            Wire::Chat => check_chat_pairing(&r.body),
        }
    }

    fn check_responses_pairing(body: &Value) {
        assert_eq!(responses_pairing(body), 3);
    }

    /// The same for OpenAI Responses `input` items: one output per call,
    /// after it, and no orphan outputs. Returns the number of calls.
    pub fn responses_pairing(body: &Value) -> usize {
        let input = body["input"].as_array().cloned().unwrap_or_default();
        let of = |ty: &str| ids(input.iter().filter(|i| i["type"] == ty).cloned(), "call_id");
        let calls = of("function_call");
        for id in &calls {
            let call_at = input
                .iter()
                .position(|i| i["type"] == "function_call" && i["call_id"] == *id);
            let outputs: Vec<usize> = input
                .iter()
                .enumerate()
                .filter(|(_, i)| i["type"] == "function_call_output" && i["call_id"] == *id)
                .map(|(n, _)| n)
                .collect();
            assert_eq!(outputs.len(), 1, "exactly one output for {id}");
            assert!(call_at < Some(outputs[0]), "output after call {id}");
        }
        assert_eq!(
            of("function_call_output").len(),
            calls.len(),
            "no orphan outputs"
        );
        calls.len()
    }

    fn check_anthropic_pairing(body: &Value) {
        let msgs = body["messages"].as_array().cloned().unwrap_or_default();
        assert_eq!(msgs.first().map(|m| m["role"].clone()), Some(json!("user")));
        for pair in msgs.windows(2) {
            assert_ne!(pair[0]["role"], pair[1]["role"], "roles alternate");
        }
        for (n, m) in msgs.iter().enumerate() {
            let content = m["content"].as_array().cloned().unwrap_or_default();
            let uses = ids(
                content.iter().filter(|b| b["type"] == "tool_use").cloned(),
                "id",
            );
            if uses.is_empty() {
                continue;
            }
            let next = msgs
                .get(n + 1)
                .map(|m| m["content"].as_array().cloned().unwrap_or_default())
                .unwrap_or_default();
            let results = ids(next.iter().take(uses.len()).cloned(), "tool_use_id");
            assert_eq!(
                results, uses,
                "tool_result blocks first in the next user message, one per tool_use"
            );
            let all = next.iter().filter(|b| b["type"] == "tool_result").count();
            assert_eq!(all, uses.len());
        }
    }

    fn check_chat_pairing(body: &Value) {
        assert_eq!(chat_pairing(body), 3);
    }

    /// Every tool call in a Chat Completions request is answered by exactly
    /// one `role: tool` message, in the run of tool messages right after it,
    /// and no result answers a call that is not there. Returns the number of
    /// calls.
    pub fn chat_pairing(body: &Value) -> usize {
        let msgs = body["messages"].as_array().cloned().unwrap_or_default();
        let mut all_calls = Vec::new();
        for (n, m) in msgs.iter().enumerate() {
            let calls: Vec<String> = m["tool_calls"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|c| c["id"].as_str().map(str::to_owned))
                .collect();
            if calls.is_empty() {
                continue;
            }
            let answers = ids(
                msgs.iter()
                    .skip(n + 1)
                    .take_while(|m| m["role"] == "tool")
                    .cloned(),
                "tool_call_id",
            );
            assert_eq!(
                answers, calls,
                "one role:tool message per call, right after the assistant message"
            );
            all_calls.extend(calls);
        }
        let results = msgs.iter().filter(|m| m["role"] == "tool").count();
        assert_eq!(results, all_calls.len(), "no orphan results");
        all_calls.len()
    }
}
