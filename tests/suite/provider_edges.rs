//! The provider's edges against the local stub: a stream cut short (a
//! reset mid-body, or an early EOF) is retried in every wire format; an
//! error reported inside a stream keeps its own kind and never presents
//! the stream's HTTP 200 as the cause; malformed tool arguments become a
//! tool error the model can correct; an answer cut by the output limit is
//! reported as truncated; and `--timeout`, abort and shutdown cancel a
//! request in flight at once.

use std::sync::Arc;
use std::time::Duration;

use holon::model::message::Priority;
use holon::model::usage::FailureKind;
use holon::protocol::views::ControlAction;
use holon::runtime::handle::{HostConfig, RuntimeHost};
use holon::runtime::provider::ProviderOutcome;
use holon::store::{Store, StoreOptions};
use serde_json::{json, Value};

use super::provider_transports::{err, ok, run, timeline, Setup};
use super::runtime_core::{events, prompt, wait_event};
use super::stub_provider::canned;
use super::stub_provider::{Canned, Cut, Frame, StubServer};
use super::support::{json_lines, stderr, Home};
use super::turn_e2e::{holon_run, run_json, stub_chain};

fn must<T, E: std::fmt::Debug>(r: Result<T, E>) -> T {
    r.unwrap()
}

/// One chain on the stub speaking `wire`, streaming.
fn streaming(stub: &StubServer, wire: &str) -> Setup {
    Setup::new().endpoint("s", stub.base(), None, wire, "on")
}

fn formats() -> [(&'static str, Vec<Frame>); 3] {
    let d = ["Hello", " world"];
    [
        ("openai_responses", canned::responses_sse(&d, &[])),
        ("anthropic_messages", canned::anthropic_sse(&d, &[])),
        ("openai_chat", canned::chat_sse(&d, &[])),
    ]
}

#[tokio::test]
async fn a_stream_cut_short_is_retried_in_every_wire_format() {
    for (wire, frames) in formats() {
        for cut in [Cut::Reset(2), Cut::Eof(2)] {
            let stub = StubServer::start(vec![
                Canned::sse(frames.clone()).cut(cut),
                Canned::sse(frames.clone()),
            ])
            .await;
            let (o, _) = run(&streaming(&stub, wire).chain("s/m", &[])).await;
            assert_eq!(ok(&o).text, "Hello world", "{wire} {cut:?}");
            assert_eq!(
                timeline(&o),
                ["s/m retrying stream_interrupted", "s/m succeeded"],
                "{wire} {cut:?}"
            );
        }
    }
}

#[tokio::test]
async fn a_stream_cut_on_every_attempt_says_so_and_names_no_wrong_endpoint() {
    let (wire, frames) = formats()[2].clone();
    let script = (0..3)
        .map(|_| Canned::sse(frames.clone()).cut(Cut::Reset(1)))
        .collect();
    let stub = StubServer::start(script).await;
    let (o, _) = run(&streaming(&stub, wire).chain("s/m", &[])).await;
    let f = err(&o);
    assert_eq!(f.kind, FailureKind::StreamInterrupted);
    assert_eq!(f.artifact.kind, "provider_stream_interrupted");
    assert!(
        f.artifact.summary.contains("cut short after 3 attempts"),
        "{}",
        f.artifact.summary
    );
    assert!(
        !f.artifact.summary.contains("speaks"),
        "{}",
        f.artifact.summary
    );
    // A body that really is not the wire format stays invalid_response.
    let stub = StubServer::start(vec![Canned::sse(vec![(None, "{not json".to_owned())])]).await;
    let (o, _) = run(&streaming(&stub, wire).chain("s/m", &[])).await;
    assert_eq!(err(&o).kind, FailureKind::InvalidResponse);
}

fn in_stream(frames: Vec<Frame>, times: usize) -> Vec<Canned> {
    (0..times).map(|_| Canned::sse(frames.clone())).collect()
}

fn assert_labelled(o: &ProviderOutcome, words: &str) {
    let f = err(o);
    let s = &f.artifact.summary;
    assert!(s.contains(words), "{s}");
    assert!(s.contains("(in-stream error after HTTP 200)"), "{s}");
    assert!(
        !s.contains("(200)"),
        "the stream's status is not the cause: {s}"
    );
    assert!(!s.contains("speaks"), "no wrong-endpoint hint: {s}");
    assert_eq!(f.artifact.status, None);
    assert_eq!(
        f.artifact
            .metadata
            .get("in_stream_after_http_status")
            .map(String::as_str),
        Some("200")
    );
}

#[tokio::test]
async fn in_stream_errors_keep_their_own_kind_in_every_wire_format() {
    // Chat Completions: a rate limit inside the stream is retried, and
    // reported as a rate limit, not as "rate limited (200)".
    let hi = (
        None,
        json!({"choices": [{"index": 0, "delta": {"content": "Hi"}}]}).to_string(),
    );
    let limited = json!({"error": {"message": "Rate limit reached", "type": "requests", "code": "rate_limit_exceeded"}});
    let stub = StubServer::start(in_stream(vec![hi, (None, limited.to_string())], 3)).await;
    let (o, _) = run(&streaming(&stub, "openai_chat").chain("s/m", &[])).await;
    assert_eq!(err(&o).kind, FailureKind::RateLimited);
    assert_eq!(stub.requests().len(), 3, "retried like its HTTP 429 twin");
    assert_labelled(&o, "rate limited");

    // Anthropic: an in-stream invalid_request_error is its HTTP 400 twin.
    let bad = json!({"type": "error", "error": {"type": "invalid_request_error", "message": "max_tokens: too large"}});
    let stub = StubServer::start(in_stream(vec![(Some("error".into()), bad.to_string())], 1)).await;
    let (o, _) = run(&streaming(&stub, "anthropic_messages").chain("s/m", &[])).await;
    let f = err(&o);
    assert_eq!(f.kind, FailureKind::ClientError);
    assert_eq!(f.artifact.kind, "provider_request_rejected");
    assert_eq!(timeline(&o), ["s/m fail_fast_aborted client_error"]);
    assert_labelled(&o, "request rejected");
    assert!(
        f.artifact.summary.contains("max_tokens: too large"),
        "{}",
        f.artifact.summary
    );

    // Anthropic: an authentication error inside the stream.
    let auth = json!({"type": "error", "error": {"type": "authentication_error", "message": "invalid x-api-key"}});
    let stub =
        StubServer::start(in_stream(vec![(Some("error".into()), auth.to_string())], 1)).await;
    let (o, _) = run(&streaming(&stub, "anthropic_messages").chain("s/m", &[])).await;
    assert_eq!(err(&o).kind, FailureKind::AuthFailed);
    assert_labelled(&o, "authentication failed");

    // Responses: an `error` event with an invalid-request code.
    let event =
        json!({"type": "error", "code": "invalid_request_error", "message": "unknown parameter"});
    let stub = StubServer::start(in_stream(
        vec![(Some("error".into()), event.to_string())],
        1,
    ))
    .await;
    let (o, _) = run(&streaming(&stub, "openai_responses").chain("s/m", &[])).await;
    assert_eq!(err(&o).kind, FailureKind::ClientError);
    assert_labelled(&o, "request rejected");
}

// ---- through the runtime ----------------------------------------------------

fn openai_env(stub: &StubServer) -> Vec<(&'static str, String)> {
    vec![
        ("HOLON_MODEL", "openai/gpt-edge".to_owned()),
        ("OPENAI_BASE_URL", format!("{}/v1", stub.base())),
        ("OPENAI_API_KEY", "sk-edge".to_owned()),
    ]
}

async fn run_binary(home: &Home, stub: &StubServer, args: &[&str]) -> std::process::Output {
    let env = openai_env(stub);
    let envs: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    holon_run(home, &envs, args).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_tool_arguments_become_a_tool_error_and_the_turn_goes_on() {
    let stub = StubServer::start(vec![
        Canned::json(
            200,
            canned::responses_json(
                "Running it.",
                &[("call_bad", "ExecCommand", r#"{"cmd": "echo hi"#)],
            ),
        ),
        Canned::json(
            200,
            canned::responses_json("Sorry, fixed my arguments.", &[]),
        ),
    ])
    .await;
    let home = Home::new();
    let out = run_binary(&home, &stub, &["--json", "run it"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let v = run_json(&out);
    assert_eq!(v["outcome"], "completed");
    assert_eq!(v["final_text"], "Sorry, fixed my arguments.");
    let requests = stub.requests();
    assert_eq!(requests.len(), 2);
    let items = requests[1].body["input"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let call = items
        .iter()
        .find(|i| i["type"] == "function_call" && i["call_id"] == "call_bad")
        .unwrap_or_else(|| panic!("call not replayed: {items:?}"));
    assert_eq!(
        call["arguments"], r#"{"cmd": "echo hi"#,
        "what the model sent, verbatim"
    );
    let output = items
        .iter()
        .find(|i| i["type"] == "function_call_output" && i["call_id"] == "call_bad")
        .and_then(|i| i["output"].as_str())
        .unwrap_or_default();
    assert!(output.contains("invalid_arguments"), "{output}");
    assert!(output.contains("not valid JSON"), "{output}");
    // The ledger keeps the raw arguments with the execution.
    let agent = v["agent_id"].as_str().unwrap_or_default();
    let ledger = json_lines(&home.ok(&[
        "events",
        "--agent",
        agent,
        "--json",
        "--kind",
        "tool_executed",
    ]));
    assert_eq!(ledger.len(), 1);
    assert_eq!(ledger[0]["payload"]["is_error"], true);
    assert_eq!(
        ledger[0]["payload"]["malformed_arguments"]["raw"],
        r#"{"cmd": "echo hi"#
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_cut_by_the_output_limit_is_reported_as_truncated() {
    let mut cut = canned::responses_json("The first half of the ans", &[]);
    cut["status"] = json!("incomplete");
    cut["incomplete_details"] = json!({"reason": "max_output_tokens"});
    let stub = StubServer::start(vec![Canned::json(200, cut)]).await;
    let home = Home::new();
    let out = run_binary(&home, &stub, &["--json", "write a long answer"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let v = run_json(&out);
    assert_eq!(v["outcome"], "completed");
    assert_eq!(v["truncated"], true, "{v}");
    assert_eq!(v["truncation_stop_reason"], "incomplete:max_output_tokens");
    assert_eq!(v["turn_terminal"]["truncated"], true);
    assert_eq!(v["raw_final_text"], "The first half of the ans");
    let agent = v["agent_id"].as_str().unwrap_or_default();
    let briefs = json_lines(&home.ok(&[
        "events",
        "--agent",
        agent,
        "--json",
        "--kind",
        "brief_created",
    ]));
    let brief = &briefs[0]["payload"]["brief"];
    assert_eq!(brief["truncated"], true);
    assert!(
        brief["text"]
            .as_str()
            .unwrap_or_default()
            .contains("cut off by the model's output limit"),
        "{brief}"
    );
    // A complete answer is not marked.
    let stub = StubServer::start(vec![Canned::json(
        200,
        canned::responses_json("Done.", &[]),
    )])
    .await;
    let v = run_json(&run_binary(&home, &stub, &["--json", "short"]).await);
    assert_eq!(v["truncated"], false);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_timeout_cancels_the_request_in_flight_and_records_it() {
    let slow =
        Canned::json(200, canned::responses_json("too late", &[])).delay(Duration::from_secs(30));
    let stub = StubServer::start(vec![slow]).await;
    let home = Home::new();
    // Ended by its own timeout, not by the model's 30 s answer, and not
    // by the 10 s a stuck shutdown is given either.
    let run = run_binary(&home, &stub, &["--json", "--timeout", "2", "hang please"]);
    let out = tokio::time::timeout(Duration::from_secs(8), run)
        .await
        .expect("the run waited for the model past its --timeout");
    assert!(!out.status.success());
    let v = run_json(&out);
    assert_eq!(v["outcome"], "timed_out");
    assert_eq!(v["failure_artifact"]["kind"], "run_timeout");
    let attempts = v["provider_attempt_timeline"]["attempts"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(attempts.len(), 1, "{v}");
    assert_eq!(attempts[0]["outcome"], "cancelled");
    assert_eq!(attempts[0]["model_ref"], "openai/gpt-edge");
    assert_eq!(v["turn_terminal"]["cancel_reason"], "run_timeout");
}

async fn slow_host(dir: &std::path::Path, stub: &StubServer) -> RuntimeHost {
    let store = must(Store::open(&dir.join("s.redb"), StoreOptions::default()));
    let chain = stub_chain(stub);
    let config = HostConfig::new(dir.join("data"), Arc::new(move |_| Arc::clone(&chain)));
    let host = must(RuntimeHost::start(store, config).await);
    must(host.create_agent("main").await);
    host
}

/// Until the stub has received `n` requests (a model call is in flight).
async fn requested(stub: &StubServer, n: usize) {
    let wait = async {
        while stub.requests().len() < n {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    };
    tokio::time::timeout(Duration::from_secs(10), wait)
        .await
        .expect("the model was never asked");
}

fn slow_script() -> Vec<Canned> {
    let slow = Canned::sse(canned::chat_sse(&["late"], &[])).delay(Duration::from_secs(30));
    vec![slow.clone(), slow]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn abort_drops_the_request_in_flight_at_once() {
    let stub = StubServer::start(slow_script()).await;
    let dir = must(tempfile::tempdir());
    let host = slow_host(dir.path(), &stub).await;
    must(
        host.submit(prompt("take your time", Priority::Normal))
            .await,
    );
    requested(&stub, 1).await;
    must(host.control("main", ControlAction::Abort).await);
    // The request in flight is dropped: the turn ends long before the
    // model's 30 s answer.
    let terminal = tokio::time::timeout(
        Duration::from_secs(1),
        wait_event(&host, "turn_terminal", |e| e.kind == "turn_terminal"),
    )
    .await
    .expect("abort waited for the model");
    assert_eq!(terminal.payload["kind"], "aborted");
    assert_eq!(terminal.payload["cancel_reason"], "operator_abort");
    let attempts = &terminal.payload["provider_attempt_timeline"]["attempts"];
    assert_eq!(attempts[0]["outcome"], "cancelled");
    let evs = events(&host);
    assert!(evs.iter().any(|e| e.kind == "message_aborted"));
    assert!(!evs.iter().any(|e| e.kind == "provider_round_completed"));
    // The operator's abort is on the record, before the turn's end.
    let applied = evs
        .iter()
        .find(|e| e.kind == "control_applied" && e.payload["action"] == "abort")
        .expect("no control_applied for the abort");
    assert!(applied.event_seq < terminal.event_seq);
    // Nothing is left waiting on the model's 30 s answer.
    tokio::time::timeout(Duration::from_secs(15), host.shutdown())
        .await
        .expect("shutdown waited for the dropped request");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_with_a_model_call_in_flight_is_prompt_and_the_message_replays() {
    let stub = StubServer::start(slow_script()).await;
    let dir = must(tempfile::tempdir());
    let host = slow_host(dir.path(), &stub).await;
    let admitted = must(
        host.submit(prompt("survive a restart", Priority::Normal))
            .await,
    );
    requested(&stub, 1).await;
    tokio::time::timeout(Duration::from_secs(1), host.shutdown())
        .await
        .expect("shutdown waited for the model");
    let evs = events(&host);
    let terminal = evs
        .iter()
        .find(|e| e.kind == "turn_terminal")
        .expect("no turn_terminal");
    assert_eq!(terminal.payload["cancel_reason"], "runtime_shutdown");
    assert!(
        !evs.iter()
            .any(|e| e.kind == "message_aborted" || e.kind == "message_processed"),
        "the message stays dequeued so it replays"
    );
    let store = host.store().clone();
    drop(host);
    must(store.close().await);

    // Restart: the message replays (and its turn starts again).
    let stub2 = StubServer::start(vec![Canned::sse(canned::chat_sse(&["Back."], &[]))]).await;
    let store = must(Store::open(
        &dir.path().join("s.redb"),
        StoreOptions::default(),
    ));
    let chain = stub_chain(&stub2);
    let config = HostConfig::new(
        dir.path().join("data"),
        Arc::new(move |_| Arc::clone(&chain)),
    );
    let host = must(RuntimeHost::start(store, config).await);
    let started = wait_event(&host, "runtime_started", |e| e.kind == "runtime_started").await;
    assert_eq!(
        started.payload["replay_message_ids"],
        json!([admitted.message_id])
    );
    let done = wait_event(
        &host,
        "processed",
        |e: &holon::model::event::EventRecord| {
            e.kind == "turn_terminal" && e.payload["kind"] == "completed"
        },
    )
    .await;
    assert_eq!(
        done.payload["message_id"],
        Value::from(admitted.message_id.clone())
    );
    // The turn runs again: the model is not told it was cut off.
    let sent = stub2.requests()[0].body.to_string();
    assert!(sent.contains("survive a restart"), "{sent}");
    assert!(!sent.contains("was cut off"), "{sent}");
    host.shutdown().await;
}
