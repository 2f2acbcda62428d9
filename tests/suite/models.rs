//! Reasoning models through the real binary against the local stub: the
//! effort asked for, reasoning carried through a tool loop on both wires
//! that have it (encrypted Responses items, signed Anthropic thinking), and
//! cached and reasoning tokens counted.

use std::time::Duration;

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

    // Priced from the catalog: o4-mini at $1.10 / $0.275 cached / $4.40.
    assert_eq!(v["turn_terminal"]["cost_usd"], 0.002096);
    assert_eq!(v["cost_usd"], 0.002096);
    let agent = v["agent_id"].as_str().unwrap().to_owned();
    let usage = home.ok(&["usage", "--agent", &agent, "--since", "1d", "--json"]);
    let rows: Value = serde_json::from_str(&usage).unwrap();
    assert_eq!(rows.as_array().map(Vec::len), Some(1), "{rows}");
    assert_eq!(rows[0]["model_ref"], "openai/o4-mini");
    assert_eq!(rows[0]["rounds"], 2);
    assert_eq!(rows[0]["cached_input_tokens"], 1700);
    assert_eq!(rows[0]["reasoning_tokens"], 150);
    assert!((rows[0]["cost_usd"].as_f64().unwrap() - 0.002096).abs() < 1e-9);
    let models: Value = serde_json::from_str(&home.ok(&["models", "--json"])).unwrap();
    let o4 = models["catalog"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["model"] == "o4-mini")
        .cloned()
        .unwrap();
    assert_eq!(o4["reasoning"], true);
    assert_eq!(o4["credential_env"], "OPENAI_API_KEY");
    // The summary is kept for the operator on the round's event.
    let rounds = super::support::json_lines(&home.ok(&[
        "events",
        "--agent",
        &agent,
        "--kind",
        "assistant_round_recorded",
        "--json",
    ]));
    assert_eq!(rounds[0]["payload"]["reasoning_summary"], "Run it first.");
    assert!(rounds[1]["payload"].get("reasoning_summary").is_none());
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
    assert_eq!(v["turn_terminal"]["token_usage"]["cache_write_tokens"], 40);
    assert_eq!(
        v["turn_terminal"]["token_usage"]["cached_input_tokens"],
        500
    );

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

/// A chain to the stub's Chat Completions endpoint, answers whole.
fn chat_chain(stub: &StubServer) -> std::sync::Arc<dyn holon::runtime::provider::Provider> {
    use holon::runtime::provider::registry::{build_chain, ProviderEndpointConfig};
    let text = format!(
        "base_url = \"{}/v1\"\nwire = \"openai_chat\"\nstreaming = \"off\"\napi_key_env = \"K\"\n",
        stub.base()
    );
    let endpoint: ProviderEndpointConfig = toml::from_str(&text).unwrap();
    let endpoints = std::collections::BTreeMap::from([("stub".to_owned(), endpoint)]);
    let env = std::collections::BTreeMap::from([("K".to_owned(), "k".to_owned())]);
    let policy = holon::runtime::provider::retry::RetryPolicy::default();
    match build_chain("stub/priced", &[], &env, &endpoints, policy) {
        Ok(chain) => std::sync::Arc::new(chain),
        Err(f) => panic!("{}", f.artifact.summary),
    }
}

/// Until every actor of `host` has settled (bounded: it must not hang).
async fn settle(host: &holon::runtime::handle::RuntimeHost) {
    tokio::time::timeout(Duration::from_secs(20), host.until_idle())
        .await
        .unwrap();
}

async fn budget_host(
    dir: &std::path::Path,
    stub: &StubServer,
) -> holon::runtime::handle::RuntimeHost {
    use holon::runtime::handle::{HostConfig, RuntimeHost};
    use holon::runtime::provider::catalog::Price;
    use holon::store::{Store, StoreOptions};
    let store = Store::open(&dir.join("s.redb"), StoreOptions::default()).unwrap();
    let chain = chat_chain(stub);
    let mut config = HostConfig::new(
        dir.join("data"),
        std::sync::Arc::new(move |_| chain.clone()),
    );
    // $0.10 a token each way: a 34-token round costs $3.40.
    let price = Price {
        input_per_mtok: 100_000.0,
        cached_input_per_mtok: None,
        cache_write_per_mtok: None,
        output_per_mtok: 100_000.0,
    };
    config.pricing.overrides.insert("stub/priced".into(), price);
    config.budget.daily_micro_usd = Some(1_000_000);
    let host = RuntimeHost::start(store, config).await.unwrap();
    host.create_agent("main").await.unwrap();
    host
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_daily_budget_pauses_between_rounds_holds_across_a_restart_and_ends_with_the_day() {
    use super::runtime_core::{events, prompt};
    use holon::model::agent::AgentRecord;
    use holon::model::agent::AgentStatus;
    use holon::model::message::Priority;
    let stub = StubServer::start(vec![
        Canned::json(
            200,
            canned::chat_json(
                "",
                &[("c1", "ExecCommand", r#"{"cmd":"echo spent > spent.txt"}"#)],
            ),
        ),
        Canned::json(200, canned::chat_json("Back the next day.", &[])),
    ])
    .await;
    let dir = tempfile::tempdir().unwrap();
    let host = budget_host(dir.path(), &stub).await;
    host.submit(prompt("go", Priority::Normal)).await.unwrap();
    settle(&host).await;

    // The round that crossed the budget finished (its command ran); the
    // turn stopped before asking again.
    assert_eq!(stub.requests().len(), 1);
    let home = dir.path().join("data/agents/main");
    assert_eq!(
        std::fs::read_to_string(home.join("spent.txt")).unwrap(),
        "spent\n"
    );
    let evs = events(&host);
    let payload = |k: &str| {
        evs.iter()
            .rev()
            .find(|e| e.kind == k)
            .map(|e| e.payload.clone())
            .unwrap_or_else(|| panic!("no {k}"))
    };
    assert_eq!(payload("provider_round_completed")["cost_usd"], 3.4);
    let exceeded = payload("budget_exceeded");
    assert_eq!(exceeded["limit"], "usd");
    assert_eq!(exceeded["spent_usd"], 3.4);
    assert_eq!(exceeded["budget_usd"], 1.0);
    assert!(exceeded["resumes_at"]
        .as_str()
        .unwrap()
        .ends_with("T00:00:00.000Z"));
    let terminal = payload("turn_terminal");
    assert_eq!(terminal["cancel_reason"], "daily_budget");
    assert_eq!(terminal["cost_usd"], 3.4);
    let brief = payload("brief_created")["brief"]["text"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(brief.contains("reached its daily budget"), "why: {brief}");
    assert!(
        brief.contains("Spent $3.40 of $1.00 and 34 tokens today"),
        "what: {brief}"
    );
    assert!(
        brief.contains("resumes by itself at 20") && brief.contains("T00:00:00.000Z"),
        "when: {brief}"
    );
    let agent: AgentRecord = host.store().read().unwrap().agent("main").unwrap().unwrap();
    assert_eq!(agent.status, AgentStatus::Paused);
    assert_eq!(agent.spend_today.cost_micro_usd, 3_400_000);

    // A restart keeps it paused; new input waits.
    host.shutdown().await;
    drop(host);
    let host = budget_host(dir.path(), &stub).await;
    host.submit(prompt("and now?", Priority::Normal))
        .await
        .unwrap();
    settle(&host).await;
    assert_eq!(stub.requests().len(), 1);
    let agent: AgentRecord = host.store().read().unwrap().agent("main").unwrap().unwrap();
    assert_eq!(agent.status, AgentStatus::Paused);

    // The day is over (its record dated yesterday): it resumes by itself
    // and the waiting prompt runs.
    host.store()
        .write(|tx| {
            let mut a: AgentRecord = tx.get_agent("main")?.unwrap();
            a.budget_paused_day = Some("2000-01-01".into());
            a.spend_today.day = "2000-01-01".into();
            tx.put_agent("main", &a)
        })
        .await
        .unwrap();
    host.wake("main");
    settle(&host).await;
    assert_eq!(stub.requests().len(), 2);
    let evs = events(&host);
    let resumed = evs
        .iter()
        .find(|e| {
            e.kind == "control_applied"
                && e.payload["note"].as_str().unwrap_or("").contains("new day")
        })
        .expect("resumed by the new day");
    assert_eq!(resumed.provenance.origin.as_deref(), Some("runtime"));
    let agent: AgentRecord = host.store().read().unwrap().agent("main").unwrap().unwrap();
    assert_ne!(agent.status, AgentStatus::Paused);
    assert!(agent.budget_paused_day.is_none());
    host.shutdown().await;
}

fn responses_chain(
    stub: &StubServer,
    effort: &str,
) -> holon::runtime::provider::retry::ProviderChain {
    use holon::runtime::provider::registry::{build_chain, ProviderEndpointConfig};
    let text = format!(
        "base_url = \"{}/v1\"\nwire = \"openai_responses\"\napi_key_env = \"K\"\nreasoning_effort = {effort:?}\n",
        stub.base()
    );
    let endpoint: ProviderEndpointConfig = toml::from_str(&text).unwrap();
    let endpoints = std::collections::BTreeMap::from([("r".to_owned(), endpoint)]);
    let env = std::collections::BTreeMap::from([("K".to_owned(), "k".to_owned())]);
    let policy = holon::runtime::provider::retry::RetryPolicy::default();
    build_chain("r/some-model", &[], &env, &endpoints, policy)
        .unwrap_or_else(|f| panic!("{}", f.artifact.summary))
}

fn refusal(message: &str) -> Canned {
    Canned::json(
        400,
        json!({"error": {"message": message, "type": "invalid_request_error", "code": null}}),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_effort_is_dropped_once_and_stays_dropped() {
    use holon::runtime::provider::Provider;
    let stub = StubServer::start(vec![
        refusal("Unsupported parameter: 'reasoning.effort' is not supported with this model."),
        Canned::json(200, canned::responses_json("fine", &[])),
        Canned::json(200, canned::responses_json("still fine", &[])),
    ])
    .await;
    let chain = responses_chain(&stub, "high");
    assert_eq!(
        chain.reasoning_effort(),
        Some(holon::model::usage::ReasoningEffort::High)
    );
    let req = super::stub_provider::invariants::request();
    let outcome = chain.round(&req, &|_| {}).await;
    assert_eq!(outcome.result.as_ref().unwrap().text, "fine");
    let dispositions: Vec<_> = outcome
        .timeline
        .attempts
        .iter()
        .map(|a| a.disposition.clone().unwrap_or_default())
        .collect();
    assert_eq!(
        dispositions,
        ["retry_without_reasoning_effort", "return_round"]
    );
    let later = chain.round(&req, &|_| {}).await;
    assert_eq!(later.result.unwrap().text, "still fine");
    let bodies: Vec<Value> = stub.requests().into_iter().map(|r| r.body).collect();
    assert_eq!(bodies[0]["reasoning"]["effort"], "high");
    assert!(bodies[1].get("reasoning").is_none() && bodies[2].get("reasoning").is_none());
    assert_eq!(chain.reasoning_effort(), None, "the status says it is off");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn expired_encrypted_reasoning_is_left_out_once() {
    use holon::model::usage::ConversationItem;
    use holon::model::usage::ReasoningItem;
    use holon::model::usage::ToolCall;
    use holon::runtime::provider::Provider;
    let stub = StubServer::start(vec![
        refusal("The encrypted content for item rs_9 could not be verified."),
        Canned::json(200, canned::responses_json("recovered", &[])),
        refusal("The encrypted content for item rs_9 could not be verified."),
        refusal("The encrypted content for item rs_9 could not be verified."),
    ])
    .await;
    let chain = responses_chain(&stub, "low");
    let mut req = super::stub_provider::invariants::request();
    req.conversation.push(ConversationItem::AssistantRound {
        reasoning: vec![ReasoningItem::Responses {
            model: String::new(),
            encrypted_content: Some("stale".into()),
            summary: Vec::new(),
        }],
        text: String::new(),
        tool_calls: vec![ToolCall {
            id: "c9".into(),
            name: "ExecCommand".into(),
            arguments: json!({}),
            malformed_arguments: None,
        }],
    });
    let outcome = chain.round(&req, &|_| {}).await;
    assert_eq!(outcome.result.unwrap().text, "recovered");
    let bodies: Vec<Value> = stub.requests().into_iter().map(|r| r.body).collect();
    let reasoning_items = |b: &Value| {
        b["input"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|i| i["type"] == "reasoning")
            .count()
    };
    assert_eq!(
        (reasoning_items(&bodies[0]), reasoning_items(&bodies[1])),
        (1, 0)
    );
    // The effort itself was not what failed: it is still asked for.
    assert_eq!(bodies[1]["reasoning"]["effort"], "low");
    // Once only: the same refusal twice is a failure.
    let again = chain.round(&req, &|_| {}).await;
    assert!(again.result.is_err());
}

#[test]
fn an_agent_budget_is_set_shown_and_refused_when_out_of_range() {
    let home = Home::new();
    let out = home.ok(&[
        "agent",
        "budget",
        "main",
        "--daily-usd",
        "2.5",
        "--daily-tokens",
        "2000000",
    ]);
    assert!(
        out.contains("main: budget $2.50 a day, 2000000 tokens a day"),
        "{out}"
    );
    let answer: Value =
        serde_json::from_str(&home.ok(&["agent", "budget", "main", "--json"])).unwrap();
    assert_eq!(
        answer["own"],
        json!({"daily_usd": 2.5, "daily_tokens": 2_000_000})
    );
    let bad = home.run(&["agent", "budget", "main", "--daily-usd=-3"]);
    assert!(!bad.status.success());
    assert!(
        stderr(&bad).contains("daily_usd -3 is out of range"),
        "{}",
        stderr(&bad)
    );
    let cleared: Value =
        serde_json::from_str(&home.ok(&["agent", "budget", "main", "--clear", "--json"])).unwrap();
    assert_eq!(cleared["own"], json!({}));
    let ledger = super::support::json_lines(&home.ok(&[
        "events",
        "--kind",
        "agent_budget_changed",
        "--json",
    ]));
    assert_eq!(ledger.len(), 2, "one event per change, none for a read");
    assert_eq!(ledger[1]["payload"]["to"], json!({}));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prompt_after_the_budget_was_reached_waits_queued_and_a_raised_budget_runs_it() {
    use super::runtime_core::{events, prompt};
    use holon::model::agent::AgentRecord;
    use holon::model::agent::AgentStatus;
    use holon::model::message::Priority;
    use holon::runtime::budget::{set_in, BudgetChange};
    let stub = StubServer::start(vec![
        Canned::json(200, canned::chat_json("first", &[])),
        Canned::json(200, canned::chat_json("second", &[])),
    ])
    .await;
    let dir = tempfile::tempdir().unwrap();
    let host = budget_host(dir.path(), &stub).await;
    // One text round of $3.40: the turn completes; the budget of $1 is now
    // reached, but nothing was cut.
    host.submit(prompt("one", Priority::Normal)).await.unwrap();
    settle(&host).await;
    assert_eq!(stub.requests().len(), 1);
    // The next prompt is not taken: the agent pauses and it waits queued.
    host.submit(prompt("two", Priority::Normal)).await.unwrap();
    settle(&host).await;
    assert_eq!(stub.requests().len(), 1);
    let read = |host: &holon::runtime::handle::RuntimeHost| -> AgentRecord {
        host.store().read().unwrap().agent("main").unwrap().unwrap()
    };
    assert_eq!(read(&host).status, AgentStatus::Paused);
    assert_eq!(
        host.store()
            .read()
            .unwrap()
            .queue_pending("main")
            .unwrap()
            .len(),
        1
    );
    assert!(!events(&host).iter().any(|e| e.kind == "message_aborted"));
    // A raised budget lets it run again, and the waiting prompt runs.
    let change = BudgetChange {
        daily_usd: Some(10.0),
        ..BudgetChange::default()
    };
    host.store()
        .write(move |tx| set_in(tx, "main", change, holon::model::agent::Budget::default()))
        .await
        .unwrap();
    host.wake("main");
    settle(&host).await;
    assert_eq!(stub.requests().len(), 2);
    assert_ne!(read(&host).status, AgentStatus::Paused);
    host.shutdown().await;
}
