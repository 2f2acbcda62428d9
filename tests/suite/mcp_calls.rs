//! An MCP call while it runs: the server's progress reaches clients live,
//! and a call the turn leaves behind (the operator aborted it) is
//! cancelled at the server, not left working.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;

use super::approvals::wait_requests;
use super::mcp::{host, results, stub_config};
use super::runtime_core::{events, kind, prompt, wait_event};
use holon::model::approval::Approval;
use holon::model::message::Priority;
use holon::protocol::views::ControlAction;
use holon::runtime::handle::LiveUpdate;
use holon::runtime::provider::scripted::{Scripted, ScriptedProvider};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn progress_is_shown_live_and_an_abandoned_call_is_cancelled() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("calls.log");
    let provider = Arc::new(ScriptedProvider::new(vec![
        Scripted::tools(
            "Working.",
            &[("mcp__stub__slow", json!({"ms": 900, "steps": 3}))],
        ),
        Scripted::tools(
            "Now a long one.",
            &[("mcp__stub__slow", json!({"ms": 60_000}))],
        ),
        Scripted::text("unreachable"),
    ]));
    let stub = stub_config("stub", &["--log", &log.display().to_string()]);
    let host = host(dir.path(), &provider, vec![stub], Approval::OnRequest).await;
    let mut live = host.subscribe_live();
    host.submit(prompt("go", Priority::Normal)).await.unwrap();

    // The reports in order, for the first call of the turn. The last one
    // races the result (whichever the client reads first wins; once the
    // call is answered its progress is moot), so two are awaited.
    let mut seen = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(15);
    while seen.len() < 2 {
        let left = deadline.saturating_duration_since(Instant::now());
        match tokio::time::timeout(left, live.recv()).await {
            Ok(Ok(LiveUpdate::ToolProgress {
                agent_id,
                call_id,
                progress,
                ..
            })) => {
                assert_eq!(agent_id, "main");
                assert!(!call_id.is_empty());
                seen.push(progress.line());
            }
            Ok(Ok(_)) => {}
            other => panic!("progress stopped after {seen:?}: {other:?}"),
        }
    }
    assert_eq!(seen, ["1/3 step 1 of 3", "2/3 step 2 of 3"]);

    // The second call runs until the operator aborts the turn; the
    // server is told, and stops working on it.
    let calls = || std::fs::read_to_string(&log).unwrap_or_default();
    let deadline = Instant::now() + Duration::from_secs(15);
    while calls().lines().filter(|l| l.starts_with("slow ")).count() < 2 {
        assert!(Instant::now() < deadline, "{}", calls());
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    host.control("main", ControlAction::Abort).await.unwrap();
    wait_event(&host, "the turn's end", kind("turn_terminal")).await;
    let deadline = Instant::now() + Duration::from_secs(10);
    while !calls().contains("cancelled slow") {
        assert!(Instant::now() < deadline, "{}", calls());
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    host.shutdown().await;
}

/// The operator disables a server while a call waits on it: the call's
/// lost connection must not mark the server failed (which would let it
/// start again on the next need); it stays disabled.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_disabled_during_a_call_stays_disabled() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("calls.log");
    let provider = Arc::new(ScriptedProvider::new(vec![
        Scripted::tools("Long.", &[("mcp__stub__slow", json!({"ms": 60_000}))]),
        Scripted::text("It went away."),
        Scripted::text("Nothing to call."),
    ]));
    let stub = stub_config("stub", &["--log", &log.display().to_string()]);
    let host = host(dir.path(), &provider, vec![stub], Approval::OnRequest).await;
    host.submit(prompt("go", Priority::Normal)).await.unwrap();
    let deadline = Instant::now() + Duration::from_secs(15);
    while !std::fs::read_to_string(&log)
        .unwrap_or_default()
        .contains("slow ")
    {
        assert!(
            Instant::now() < deadline,
            "the call never reached the server"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    host.mcp_disable(None, "stub", true).await.unwrap();
    wait_event(&host, "the turn's end", kind("turn_terminal")).await;
    wait_requests(&provider, 2).await;
    let told = results(&provider, 1);
    assert!(told[0].2, "the call failed: {:?}", told[0]);
    assert_eq!(host.mcp_servers(None)[0].state, "disabled");
    host.submit(prompt("again", Priority::Normal))
        .await
        .unwrap();
    wait_requests(&provider, 3).await;
    let offered = provider.requests()[2]
        .tools
        .iter()
        .any(|t| t.name.starts_with("mcp__stub__"));
    assert!(!offered, "a disabled server offers nothing");
    assert_eq!(host.mcp_servers(None)[0].state, "disabled");
    host.shutdown().await;
}

/// A server's life in the ledger of the agent that used it: started,
/// failed when it crashed, started again at the next need after its
/// backoff, and stopped when the runtime stops.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_servers_life_is_recorded_where_it_was_used() {
    let dir = tempfile::tempdir().unwrap();
    let provider = Arc::new(ScriptedProvider::new(vec![
        Scripted::tools(
            "Crash it.",
            &[
                ("mcp__stub__echo", json!({"text": "1"})),
                ("mcp__stub__crash", json!({})),
            ],
        ),
        Scripted::text("It crashed."),
        Scripted::tools("Again.", &[("mcp__stub__echo", json!({"text": "2"}))]),
        Scripted::text("Back."),
    ]));
    let host = host(
        dir.path(),
        &provider,
        vec![stub_config("stub", &[])],
        Approval::OnRequest,
    )
    .await;
    host.submit(prompt("one", Priority::Normal)).await.unwrap();
    wait_requests(&provider, 2).await;
    wait_event(&host, "the failure", kind("mcp_server_failed")).await;
    // Past the first backoff (1 s), the next need starts it again.
    tokio::time::sleep(Duration::from_millis(1100)).await;
    host.submit(prompt("two", Priority::Normal)).await.unwrap();
    wait_requests(&provider, 4).await;
    assert_eq!(results(&provider, 3).last().unwrap().1["text"], "2");
    host.shutdown().await;

    let life: Vec<_> = events(&host)
        .into_iter()
        .filter(|e| e.kind.starts_with("mcp_server_"))
        .map(|e| (e.kind, e.payload))
        .collect();
    let kinds: Vec<&str> = life.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(
        kinds,
        [
            "mcp_server_started",
            "mcp_server_failed",
            "mcp_server_started",
            "mcp_server_stopped"
        ]
    );
    let started = &life[0].1;
    assert_eq!(started["name"], "stub");
    assert_eq!(started["transport"], "stdio");
    assert!(started["tools"].as_u64() > Some(5), "{started}");
    let failed = &life[1].1;
    assert_eq!(failed["failures"], 1);
    assert_eq!(failed["retry_in_ms"], 1000);
    assert!(
        failed["reason"].as_str().unwrap_or("").contains("exit"),
        "{failed}"
    );
    assert_eq!(life[3].1["reason"], "shutdown");
}

/// A turn cancelled while its catalog waits for a server that never
/// answers `initialize` ends at once, not after the startup timeout, and
/// the server is left idle, not "starting".
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_turn_does_not_wait_for_a_server_to_start() {
    let dir = tempfile::tempdir().unwrap();
    let provider = Arc::new(ScriptedProvider::new(vec![Scripted::text("unreachable")]));
    let mut mute = stub_config("mute", &["--mute"]);
    mute.startup_timeout = Duration::from_secs(30);
    let host = host(dir.path(), &provider, vec![mute], Approval::OnRequest).await;
    host.submit(prompt("go", Priority::Normal)).await.unwrap();
    let deadline = Instant::now() + Duration::from_secs(15);
    while host.mcp_servers(None)[0].state != "starting" {
        assert!(Instant::now() < deadline, "{:?}", host.mcp_servers(None));
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // The turn ends without waiting out the server's 30 s start.
    tokio::time::timeout(Duration::from_secs(15), async {
        host.control("main", ControlAction::Abort).await.unwrap();
        wait_event(&host, "the turn's end", kind("turn_terminal")).await
    })
    .await
    .expect("the abort waited for the server's start");
    assert_eq!(host.mcp_servers(None)[0].state, "idle");
    assert!(provider.requests().is_empty(), "no request was sent");
    host.shutdown().await;
}
