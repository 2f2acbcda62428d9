//! An answer that starts over: a stream cut short after some text is
//! retried, the chain says when each attempt starts, and the runtime
//! numbers its live text by attempt, so a console shows the retried
//! answer once and an abort keeps only what the last attempt streamed.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use std::ops::ControlFlow;

use holon::app::control::{server, socket};
use holon::model::attempt::{RetryNext, RetryNotice};
use holon::model::message::Priority;
use holon::model::usage::FailureKind;
use holon::protocol::{follow, ControlAction, RuntimeClient, SubscriptionItem};
use holon::runtime::handle::{HostConfig, LiveUpdate, RuntimeHost};
use holon::runtime::provider::{Provider, ProviderProgress};
use holon::store::{Store, StoreOptions};
use holon::ui::client::SocketClient;

use super::provider_transports::{ok, Setup};
use super::runtime_core::{kind, prompt, wait_event};
use super::stub_provider::invariants::request;
use super::stub_provider::{canned, Canned, Cut, StubServer};

fn chain(stub: &StubServer) -> Setup {
    Setup::new().endpoint("s", stub.base(), None, "openai_responses", "on")
}

#[tokio::test]
async fn a_retried_stream_says_when_its_attempt_starts_before_its_text() {
    let frames = canned::responses_sse(&["Hello", " world"], &[]);
    // The first attempt streams "Hello", then its connection resets.
    let stub = StubServer::start(vec![
        Canned::sse(frames.clone()).cut(Cut::Reset(1)),
        Canned::sse(frames),
    ])
    .await;
    let seen = Mutex::new(Vec::new());
    let progress = |p: ProviderProgress| {
        let item = match p {
            ProviderProgress::AttemptStarted => "↻".to_owned(),
            ProviderProgress::TextDelta(t) => t,
            ProviderProgress::Retrying(n) => format!("retry after {:?}", n.failure_kind),
        };
        seen.lock().unwrap_or_else(|e| e.into_inner()).push(item);
    };
    let o = chain(&stub)
        .chain("s/m", &[])
        .round(&request(), &progress)
        .await;
    assert_eq!(ok(&o).text, "Hello world");
    let seen = seen.into_inner().unwrap_or_else(|e| e.into_inner());
    assert_eq!(
        seen,
        [
            "↻",
            "Hello",
            "retry after StreamInterrupted",
            "↻",
            "Hello",
            " world"
        ]
    );
}

/// A 429 (its `Retry-After` capped at the test policy's 60 ms), then an
/// answer.
fn limited_then_answered() -> Vec<Canned> {
    let body = serde_json::json!({"error": {"message": "slow down", "type": "rate_limit_error"}});
    vec![
        Canned::json(429, body).header("Retry-After", "30"),
        Canned::sse(canned::responses_sse(&["Hello"], &[])),
    ]
}

#[tokio::test]
async fn a_failed_attempt_is_told_with_why_and_the_wait_before_the_retry() {
    let stub = StubServer::start(limited_then_answered()).await;
    let seen = Mutex::new(Vec::new());
    let progress = |p: ProviderProgress| {
        if let ProviderProgress::Retrying(n) = p {
            seen.lock().unwrap_or_else(|e| e.into_inner()).push(n);
        }
    };
    let o = chain(&stub)
        .chain("s/m", &[])
        .round(&request(), &progress)
        .await;
    assert_eq!(ok(&o).text, "Hello");
    let seen = seen.into_inner().unwrap_or_else(|e| e.into_inner());
    assert_eq!(
        seen,
        [RetryNotice {
            model_ref: "s/m".into(),
            attempt: 1,
            max_attempts: 3,
            failure_kind: FailureKind::RateLimited,
            status: Some(429),
            next: RetryNext::Retry,
            backoff_ms: Some(60),
        }]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_socket_client_hears_of_the_retry_before_the_answer() {
    let stub = StubServer::start(limited_then_answered()).await;
    let (host, dir) = host_on(&stub).await;
    let path = dir.path().join("control.sock");
    let listener = socket::bind(&path).await.expect("bind");
    let (_stop, rx) = tokio::sync::watch::channel(false);
    let served: Arc<dyn RuntimeClient> = Arc::new(host.clone());
    tokio::spawn(server::serve(listener, served, rx, Default::default()));
    let client = SocketClient::connect(&path).await.expect("connect");
    let (tx, mut heard) = tokio::sync::mpsc::unbounded_channel();
    tokio::spawn(async move {
        let _ = follow(&client, "main", 1, |item| {
            let _ = tx.send(item);
            std::future::ready(ControlFlow::Continue(()))
        })
        .await;
    });
    // Subscribed: the agent's first event arrived (live notices are
    // not replayed to a later subscriber).
    let first = tokio::time::timeout(Duration::from_secs(15), heard.recv()).await;
    assert!(
        matches!(first, Ok(Some(SubscriptionItem::Event(_)))),
        "{first:?}"
    );
    host.submit(prompt("hi", Priority::Normal))
        .await
        .expect("admitted");
    let mut retry = None;
    loop {
        let item = tokio::time::timeout(Duration::from_secs(15), heard.recv())
            .await
            .expect("in time")
            .expect("following");
        match item {
            SubscriptionItem::Retry {
                attempt, notice, ..
            } => retry = Some((attempt, notice.failure_kind, notice.next)),
            SubscriptionItem::Delta { attempt, text, .. } if !text.is_empty() => {
                assert_eq!(attempt, 2, "the retry's text is the next attempt's");
                assert_eq!(
                    retry,
                    Some((1, FailureKind::RateLimited, RetryNext::Retry)),
                    "the retry is told before the answer"
                );
            }
            SubscriptionItem::Event(e) if e.kind == "assistant_round_recorded" => break,
            _ => {}
        }
    }
    assert!(retry.is_some(), "a provider.retry notification arrived");
    host.shutdown().await;
}

/// A runtime with agent `main` whose model is the stub's.
async fn host_on(stub: &StubServer) -> (RuntimeHost, tempfile::TempDir) {
    let chain: Arc<dyn Provider> = Arc::new(chain(stub).chain("s/m", &[]));
    let dir = tempfile::tempdir().expect("a temp dir");
    let store = Store::open(&dir.path().join("s.redb"), StoreOptions::default()).expect("store");
    let config = HostConfig::new(dir.path().join("data"), Arc::new(move |_| chain.clone()));
    let host = RuntimeHost::start(store, config).await.expect("runtime");
    host.create_agent("main").await.expect("agent");
    (host, dir)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_recorded_round_names_the_attempt_that_answered() {
    let frames = canned::responses_sse(&["Hello", " world"], &[]);
    let stub = StubServer::start(vec![
        Canned::sse(frames.clone()).cut(Cut::Reset(1)),
        Canned::sse(frames),
    ])
    .await;
    let (host, _dir) = host_on(&stub).await;
    host.submit(prompt("hi", Priority::Normal))
        .await
        .expect("admitted");
    let round = wait_event(&host, "the round", kind("assistant_round_recorded")).await;
    assert_eq!(round.payload["text_chars"], 11);
    assert_eq!(
        round.payload["attempt"], 2,
        "consoles drop late text of attempt 2 and earlier"
    );
    host.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_that_starts_over_keeps_only_its_last_attempt() {
    let first = canned::responses_sse(&["An early ", "draft"], &[]);
    // The stall is before the stream's end (`response.completed`), after
    // all of its text: the abort comes once every delta is in.
    let second = canned::responses_sse(&["The loop reads ", "the clock twice"], &[]);
    let stub = StubServer::start(vec![
        Canned::sse(first).cut(Cut::Reset(2)),
        Canned::sse(second).stall_before_last(Duration::from_secs(30)),
        Canned::sse(canned::responses_sse(&["Then I stop."], &[])),
    ])
    .await;
    let (host, _dir) = host_on(&stub).await;
    let mut live = host.subscribe_live();
    host.submit(prompt("explain", Priority::Normal))
        .await
        .expect("admitted");
    // Live text, numbered by attempt, until the second attempt stalls.
    let mut seen: Vec<(u32, String)> = Vec::new();
    let last = |seen: &[(u32, String)]| -> String {
        let n = seen.last().map_or(0, |s| s.0);
        seen.iter()
            .filter(|s| s.0 == n)
            .map(|s| s.1.as_str())
            .collect()
    };
    while last(&seen) != "The loop reads the clock twice" {
        match tokio::time::timeout(Duration::from_secs(15), live.recv()).await {
            Ok(Ok(LiveUpdate::AssistantDelta { attempt, text, .. })) => seen.push((attempt, text)),
            Ok(Ok(_)) => {}
            other => panic!("no delta: {other:?} after {seen:?}"),
        }
    }
    let attempts: Vec<(u32, bool)> = seen.iter().map(|s| (s.0, s.1.is_empty())).collect();
    assert_eq!(
        attempts,
        [(1, false), (1, false), (2, true), (2, false), (2, false)],
        "the retry is told before its text: {seen:?}"
    );
    assert_eq!(seen[0].1, "An early ");
    host.control("main", ControlAction::Abort)
        .await
        .expect("abort");
    let ended = wait_event(&host, "the aborted turn", kind("turn_terminal")).await;
    assert_eq!(ended.payload["kind"], "aborted");
    assert_eq!(
        ended.payload["partial_answer"], "The loop reads the clock twice",
        "the first attempt's draft is not part of the answer"
    );
    // The next turn's model is told what it had said and that it was cut.
    host.submit(prompt("go on", Priority::Normal))
        .await
        .expect("admitted");
    wait_event(&host, "the next round", kind("assistant_round_recorded")).await;
    let sent = stub.requests().last().map(|r| r.body.to_string());
    let sent = sent.unwrap_or_default();
    let at = |what: &str| {
        sent.find(what)
            .unwrap_or_else(|| panic!("{what} in {sent}"))
    };
    assert!(at("The loop reads the clock twice") < at("the previous turn was cut off"));
    assert!(at("cut off before it finished: aborted by the operator") < at("go on"));
    assert!(!sent.contains("An early draft"), "{sent}");
    host.shutdown().await;
}
