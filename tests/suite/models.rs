//! Reasoning models through the real binary against the local stub: the
//! effort asked for, reasoning carried through a tool loop on both wires
//! that have it (encrypted Responses items, signed Anthropic thinking), and
//! cached and reasoning tokens counted.

use serde_json::{json, Value};

use super::stub_provider::{canned, Canned, StubServer};
use super::support::{stderr, Home};
use super::turn_e2e::{holon_run, run_json};

fn config(home: &Home, text: &str) {
    let dir = home.path().join("config");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("config.toml"), text).unwrap();
}

fn frame(data: Value) -> (Option<String>, String) {
    let event = data["type"].as_str().map(str::to_owned);
    (event, data.to_string())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn responses_reasoning_is_replayed_encrypted_and_its_tokens_counted() {
    let mut first = canned::responses_json(
        "",
        &[("call_1", "ExecCommand", r#"{"cmd":"echo thought"}"#)],
    );
    first["output"].as_array_mut().unwrap().insert(
        0,
        json!({"type": "reasoning", "id": "rs_1", "encrypted_content": "enc-opaque-1",
                   "summary": [{"type": "summary_text", "text": "Run it first."}]}),
    );
    first["usage"] = json!({"input_tokens": 1000, "output_tokens": 200, "total_tokens": 1200,
        "input_tokens_details": {"cached_tokens": 600},
        "output_tokens_details": {"reasoning_tokens": 150}});
    let mut second = canned::responses_json("It printed thought.", &[]);
    second["usage"] = json!({"input_tokens": 1300, "output_tokens": 20, "total_tokens": 1320,
        "input_tokens_details": {"cached_tokens": 1100},
        "output_tokens_details": {"reasoning_tokens": 0}});
    let stub = StubServer::start(vec![Canned::json(200, first), Canned::json(200, second)]).await;
    let home = Home::new();
    config(
        &home,
        "[model]\ndefault = \"openai/o4-mini\"\nreasoning_effort = \"high\"\n",
    );
    let base = format!("{}/v1", stub.base());
    let envs = [
        ("OPENAI_BASE_URL", base.as_str()),
        ("OPENAI_API_KEY", "sk-reasoning"),
    ];
    let out = holon_run(&home, &envs, &["--json", "echo something"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let v = run_json(&out);
    assert_eq!(v["final_text"], "It printed thought.");
    assert_eq!(
        v["token_usage"],
        json!({"input_tokens": 2300, "output_tokens": 220, "total_tokens": 2520,
               "cached_input_tokens": 1700, "reasoning_tokens": 150})
    );

    let requests = stub.requests();
    assert_eq!(requests.len(), 2);
    for r in &requests {
        assert_eq!(r.body["reasoning"]["effort"], "high");
        assert_eq!(r.body["include"], json!(["reasoning.encrypted_content"]));
    }
    let input = requests[1].body["input"].as_array().cloned().unwrap();
    let at = |kind: &str| input.iter().position(|i| i["type"] == kind).unwrap();
    assert!(at("reasoning") < at("function_call"), "{input:?}");
    let reasoning = &input[at("reasoning")];
    assert_eq!(reasoning["encrypted_content"], "enc-opaque-1");
    assert!(reasoning.get("id").is_none(), "{reasoning}");
    // The summary is the operator's, not the model's answer.
    assert!(!input
        .iter()
        .any(|i| i["type"] == "message" && i["role"] == "assistant"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn anthropic_thinking_streams_in_and_goes_back_signed_before_the_tool_use() {
    let first = vec![
        frame(json!({"type": "message_start", "message": {"usage":
            {"input_tokens": 10, "cache_read_input_tokens": 500,
             "cache_creation_input_tokens": 40, "output_tokens": 1}}})),
        frame(json!({"type": "content_block_start", "index": 0,
            "content_block": {"type": "thinking", "thinking": ""}})),
        frame(json!({"type": "content_block_delta", "index": 0,
            "delta": {"type": "thinking_delta", "thinking": "I should list "}})),
        frame(json!({"type": "content_block_delta", "index": 0,
            "delta": {"type": "thinking_delta", "thinking": "the directory."}})),
        frame(json!({"type": "content_block_delta", "index": 0,
            "delta": {"type": "signature_delta", "signature": "sig-abc"}})),
        frame(json!({"type": "content_block_stop", "index": 0})),
        frame(json!({"type": "content_block_start", "index": 1,
            "content_block": {"type": "tool_use", "id": "tu_1", "name": "ExecCommand", "input": {}}})),
        frame(json!({"type": "content_block_delta", "index": 1,
            "delta": {"type": "input_json_delta", "partial_json": "{\"cmd\":\"echo listed\"}"}})),
        frame(json!({"type": "content_block_stop", "index": 1})),
        frame(
            json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"},
            "usage": {"output_tokens": 80}}),
        ),
        frame(json!({"type": "message_stop"})),
    ];
    let stub = StubServer::start(vec![
        Canned::sse(first),
        Canned::sse(canned::anthropic_sse(&["Listed."], &[])),
    ])
    .await;
    let home = Home::new();
    config(
        &home,
        &format!(
            "[model]\ndefault = \"claude/sonnet\"\n\n[providers.claude]\nbase_url = {:?}\n\
             wire = \"anthropic_messages\"\napi_key_env = \"CLAUDE_KEY\"\n\
             reasoning_effort = \"medium\"\n",
            stub.base()
        ),
    );
    let out = holon_run(&home, &[("CLAUDE_KEY", "sk-ant-x")], &["--json", "list"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let v = run_json(&out);
    assert_eq!(v["final_text"], "Listed.");
    assert_eq!(v["token_usage"]["cached_input_tokens"], 500);
    assert_eq!(v["token_usage"]["cache_write_tokens"], 40);

    let requests = stub.requests();
    assert_eq!(requests.len(), 2);
    for r in &requests {
        assert_eq!(r.body["thinking"]["type"], "enabled");
        let budget = r.body["thinking"]["budget_tokens"].as_u64().unwrap();
        assert!(budget >= 1024 && budget < r.body["max_tokens"].as_u64().unwrap());
    }
    let assistant = requests[1].body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "assistant")
        .cloned()
        .unwrap();
    assert_eq!(
        assistant["content"][0],
        json!({"type": "thinking", "thinking": "I should list the directory.",
               "signature": "sig-abc"})
    );
    assert_eq!(assistant["content"][1]["type"], "tool_use");
}
