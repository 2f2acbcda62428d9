//! MCP servers, for real: the stub server (examples/mcp_stub.rs, built
//! with the official SDK) as a child process speaking stdio, and a
//! scripted model calling its tools through a real runtime. What the model
//! is offered, what it is told, the gate, and each way a server can fail.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};

use super::approvals::wait_requests;
use super::runtime_core::{config, events, kind, prompt, wait_event};
use holon::model::approval::Approval;
use holon::model::approval::ApprovalPolicy;
use holon::model::message::Priority;
use holon::model::usage::ConversationItem;
use holon::runtime::handle::RuntimeHost;
use holon::runtime::provider::scripted::{Scripted, ScriptedProvider};
use holon::runtime::settings::mcp::{ServerConfig, Transport};
use holon::store::{Store, StoreOptions};

/// The stub server, built beside the binary (`cargo test` builds examples).
pub fn stub_server() -> PathBuf {
    let bin = PathBuf::from(env!("CARGO_BIN_EXE_holon"));
    let path = bin
        .parent()
        .map(|d| d.join("examples/mcp_stub"))
        .unwrap_or_default();
    assert!(path.exists(), "{} is not built", path.display());
    path
}

pub fn stub_config(name: &str, args: &[&str]) -> ServerConfig {
    let mut c = ServerConfig::stdio(name, &stub_server().display().to_string(), args);
    if let Transport::Stdio { env, .. } = &mut c.transport {
        env.insert("STUB_SETTING".to_owned(), "1".to_owned());
    }
    c.tool_timeout = Duration::from_secs(10);
    c.sandboxed = false;
    c
}

pub(super) async fn host(
    dir: &Path,
    provider: &Arc<ScriptedProvider>,
    servers: Vec<ServerConfig>,
    approval: Approval,
) -> RuntimeHost {
    let store = Store::open(&dir.join("s.redb"), StoreOptions::default()).unwrap();
    let mut c = config(dir, Arc::clone(provider));
    c.mcp_servers = servers;
    c.policy = ApprovalPolicy {
        approval,
        ..ApprovalPolicy::default()
    };
    let host = RuntimeHost::start(store, c).await.unwrap();
    host.create_agent("main").await.unwrap();
    host
}

/// Every tool result the model was sent in request `i`, by tool name.
pub(super) fn results(provider: &ScriptedProvider, i: usize) -> Vec<(String, Value, bool)> {
    provider.requests()[i]
        .conversation
        .iter()
        .filter_map(|c| match c {
            ConversationItem::ToolResult {
                tool_name,
                content,
                is_error,
                ..
            } => Some((
                tool_name.clone(),
                serde_json::from_str(content).unwrap_or(Value::Null),
                *is_error,
            )),
            _ => None,
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_the_catalog_lost_still_meets_the_gate() {
    // A server that is down offers nothing: a call to one of its tools
    // (offered to the model before it went down) is still gated as a write
    // under its server's own mode.
    let dir = tempfile::tempdir().unwrap();
    let mut exits = stub_config("exits", &["--exit"]);
    exits.approval = Some(Approval::Always);
    let hub = holon::runtime::mcp::Hub::new(vec![exits], dir.path(), Vec::new());
    assert!(hub.specs(None, "main", None).await.is_empty());
    let call = holon::model::usage::ToolCall {
        id: "c".into(),
        name: "mcp__exits__echo".into(),
        arguments: json!({"text": "x"}),
        malformed_arguments: None,
    };
    let gated = hub.gate(None, &call);
    assert_eq!(
        gated,
        Some(holon::model::approval::Action::Tool {
            name: "mcp__exits__echo".into(),
            read_only: false,
            approval: Some(Approval::Always),
        })
    );
    let other = holon::model::usage::ToolCall {
        name: "mcp__nobody__echo".into(),
        ..call
    };
    // A name it cannot place is a write all the same (the call then
    // answers that there is no such tool).
    assert_eq!(
        hub.gate(None, &other),
        Some(holon::model::approval::Action::Tool {
            name: "mcp__nobody__echo".into(),
            read_only: false,
            approval: None,
        })
    );
    hub.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_config_change_keeps_unchanged_servers_and_stops_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    let hub = holon::runtime::mcp::Hub::new(vec![stub_config("a", &[])], dir.path(), Vec::new());
    let names = |specs: &[holon::runtime::provider::ToolSpec]| -> BTreeSet<String> {
        specs
            .iter()
            .filter_map(|t| t.name.split("__").nth(1).map(str::to_owned))
            .collect()
    };
    assert_eq!(
        names(&hub.specs(None, "main", None).await),
        BTreeSet::from(["a".to_owned()])
    );
    let state = |hub: &holon::runtime::mcp::Hub, n: &str| {
        hub.views(None)
            .into_iter()
            .find(|v| v.name == n)
            .map(|v| v.state)
    };
    assert_eq!(state(&hub, "a").as_deref(), Some("running"));
    assert!(!hub.stale(None), "a fresh catalog");
    hub.reconfigure(vec![stub_config("a", &[]), stub_config("b", &[])]);
    assert!(hub.stale(None), "the change makes the catalog stale");
    assert_eq!(
        state(&hub, "a").as_deref(),
        Some("running"),
        "unchanged: goes on"
    );
    assert_eq!(state(&hub, "b").as_deref(), Some("idle"));
    assert_eq!(
        names(&hub.specs(None, "main", None).await),
        BTreeSet::from(["a".to_owned(), "b".to_owned()])
    );
    hub.reconfigure(vec![stub_config("b", &["--log", "/dev/null"])]);
    assert_eq!(state(&hub, "a"), None, "removed");
    assert_eq!(
        state(&hub, "b").as_deref(),
        Some("idle"),
        "changed: a new one"
    );
    assert_eq!(
        names(&hub.specs(None, "main", None).await),
        BTreeSet::from(["b".to_owned()])
    );
    hub.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tools_are_offered_called_and_told_to_the_model() {
    let dir = tempfile::tempdir().unwrap();
    let provider = Arc::new(ScriptedProvider::new(vec![
        Scripted::tools(
            "Using the server.",
            &[
                ("mcp__stub__echo", json!({"text": "hello from mcp"})),
                ("mcp__stub__image", json!({})),
                ("mcp__stub__fail", json!({})),
                ("mcp__stub__big", json!({"bytes": 3_000_000})),
                ("mcp__stub__env", json!(null)),
            ],
        ),
        Scripted::text("Done."),
    ]));
    let mut quiet = stub_config("quiet", &[]);
    quiet.enabled_tools = Some(BTreeSet::from(["echo".to_owned()]));
    let host = host(
        dir.path(),
        &provider,
        vec![stub_config("stub", &[]), quiet],
        Approval::OnRequest,
    )
    .await;
    host.submit(prompt("use the tools", Priority::Normal))
        .await
        .unwrap();
    wait_event(&host, "the turn's end", kind("turn_terminal")).await;
    wait_requests(&provider, 2).await;

    // Offered: the server's tools by their MCP names, with its schema;
    // the one whose schema no provider takes is left out, and the
    // allow-list holds for the second server.
    let offered: Vec<String> = provider.requests()[0]
        .tools
        .iter()
        .map(|t| t.name.clone())
        .filter(|n| n.starts_with("mcp__"))
        .collect();
    assert_eq!(
        offered,
        [
            "mcp__stub__echo",
            "mcp__stub__note",
            "mcp__stub__slow",
            "mcp__stub__image",
            "mcp__stub__big",
            "mcp__stub__fail",
            "mcp__stub__crash",
            "mcp__stub__env",
            "mcp__stub__cwd",
            "mcp__stub__grow",
            "mcp__stub__touch",
            "mcp__quiet__echo",
        ]
    );
    let echo = provider.requests()[0]
        .tools
        .iter()
        .find(|t| t.name == "mcp__stub__echo")
        .cloned()
        .unwrap();
    assert_eq!(echo.description, "Echo the text back.");
    assert_eq!(echo.input_schema["required"], json!(["text"]));
    let views = host.mcp_servers(None);
    assert_eq!(views[0].state, "running");
    assert_eq!(views[0].dropped.len(), 1);
    assert_eq!(views[0].dropped[0].tool, "bad_schema");

    // Told: text, the image (beside its note), the error envelope, a
    // bounded result, and an environment without Holon's own variables.
    let told = results(&provider, 1);
    assert_eq!(told.len(), 5);
    assert_eq!(told[0].1["text"], "hello from mcp");
    assert_eq!(
        told[1].1["attachments"],
        json!(["[image: image/png, 68 bytes, attached]"])
    );
    let sent = provider.requests();
    let images: Vec<_> = sent[1]
        .conversation
        .iter()
        .filter_map(|c| match c {
            ConversationItem::ToolResult { images, .. } if !images.is_empty() => Some(images),
            _ => None,
        })
        .collect();
    assert_eq!(images.len(), 1);
    assert_eq!(images[0][0].mime_type, "image/png");
    assert!(images[0][0].data.starts_with("iVBORw0KGgo"));
    assert!(told[2].2, "fail is an error");
    assert_eq!(told[2].1["message"], "the stub always fails");
    assert_eq!(told[3].1["truncated"]["total_bytes"], 3_000_000);
    assert!(told[3].1["text"].as_str().unwrap().len() <= 32_000);
    let seen: BTreeSet<&str> = told[4].1["text"].as_str().unwrap().split(' ').collect();
    let allowed = [
        "PATH",
        "HOME",
        "LANG",
        "LC_ALL",
        "TMPDIR",
        "USER",
        "TERM",
        "STUB_SETTING",
    ];
    assert!(seen.contains("STUB_SETTING"), "{seen:?}");
    assert!(seen.iter().all(|v| allowed.contains(v)), "{seen:?}");
    let executed = events(&host)
        .into_iter()
        .filter(|e| e.kind == "tool_executed")
        .count();
    assert_eq!(executed, 5);
    host.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_changed_tool_list_is_offered_from_the_next_round() {
    let dir = tempfile::tempdir().unwrap();
    let provider = Arc::new(ScriptedProvider::new(vec![
        Scripted::tools("Growing.", &[("mcp__stub__grow", json!({}))]),
        Scripted::tools("Echo.", &[("mcp__stub__echo", json!({"text": "x"}))]),
        Scripted::tools("Extra.", &[("mcp__stub__extra", json!({}))]),
        Scripted::text("Done."),
    ]));
    let host = host(
        dir.path(),
        &provider,
        vec![stub_config("stub", &[])],
        Approval::OnRequest,
    )
    .await;
    host.submit(prompt("grow", Priority::Normal)).await.unwrap();
    wait_requests(&provider, 4).await;
    let offers = |i: usize| {
        provider.requests()[i]
            .tools
            .iter()
            .any(|t| t.name == "mcp__stub__extra")
    };
    assert!(!offers(0));
    // The notification may land just after the call's answer: by the
    // round after next at the latest, the new tool is offered.
    assert!(offers(2), "the changed list reached the model");
    let told = results(&provider, 3);
    assert_eq!(
        told.last().map(|t| t.1["text"].clone()),
        Some(json!("extra"))
    );
    host.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_disabled_server_stops_and_offers_nothing_until_enabled() {
    let dir = tempfile::tempdir().unwrap();
    let provider = Arc::new(ScriptedProvider::new(vec![
        Scripted::tools("One.", &[("mcp__stub__echo", json!({"text": "1"}))]),
        Scripted::text("Ran."),
        Scripted::text("Nothing to call."),
        Scripted::tools("Three.", &[("mcp__stub__echo", json!({"text": "3"}))]),
        Scripted::text("Ran again."),
    ]));
    let host = host(
        dir.path(),
        &provider,
        vec![stub_config("stub", &[])],
        Approval::OnRequest,
    )
    .await;
    let offered = |i: usize| {
        provider.requests()[i]
            .tools
            .iter()
            .any(|t| t.name == "mcp__stub__echo")
    };
    host.submit(prompt("one", Priority::Normal)).await.unwrap();
    wait_requests(&provider, 2).await;
    wait_event(&host, "the first turn", kind("turn_terminal")).await;
    assert_eq!(host.mcp_servers(None)[0].state, "running");
    let off = host.mcp_disable(None, "stub", true).await.unwrap();
    assert!(off.disabled);
    wait_event(&host, "the switch", kind("mcp_server_switched")).await;
    assert_eq!(host.mcp_servers(None)[0].state, "disabled");
    host.submit(prompt("two", Priority::Normal)).await.unwrap();
    wait_requests(&provider, 3).await;
    assert!(offered(0) && !offered(2), "disabled: not offered");
    host.mcp_disable(None, "stub", false).await.unwrap();
    host.submit(prompt("three", Priority::Normal))
        .await
        .unwrap();
    wait_requests(&provider, 5).await;
    assert!(offered(3));
    assert_eq!(results(&provider, 4).last().unwrap().1["text"], "3");
    let unknown = host.mcp_disable(None, "nope", true).await.unwrap_err();
    assert!(unknown.to_string().contains("there are: stub"), "{unknown}");
    host.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_asks_under_on_write_and_always_allows_the_tool() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("calls.log");
    let provider = Arc::new(ScriptedProvider::new(vec![
        Scripted::tools(
            "Reading, then writing.",
            &[
                ("mcp__stub__echo", json!({"text": "read"})),
                ("mcp__stub__note", json!({"text": "write"})),
            ],
        ),
        Scripted::text("Written."),
        Scripted::tools("Again.", &[("mcp__stub__note", json!({"text": "again"}))]),
        Scripted::text("Written again."),
    ]));
    let log_arg = log.display().to_string();
    let host = host(
        dir.path(),
        &provider,
        vec![stub_config("stub", &["--log", &log_arg])],
        Approval::OnWrite,
    )
    .await;
    host.submit(prompt("write a note", Priority::Normal))
        .await
        .unwrap();
    let asked = wait_event(&host, "the approval", kind("approval_requested")).await;
    let why = asked.payload["approval"]["why"]
        .as_str()
        .unwrap_or_default();
    assert!(why.contains("mcp__stub__note"), "{why}");
    // The turn waits for the answer; the read before it ran.
    let calls = std::fs::read_to_string(&log).unwrap_or_default();
    assert_eq!(calls.lines().count(), 1, "only the read ran: {calls}");
    let id = asked.payload["approval"]["id"].as_str().unwrap().to_owned();
    host.approve("main", &id, true).await.unwrap();
    super::support::poll("the approved call", || {
        let calls = std::fs::read_to_string(&log).unwrap_or_default();
        calls.contains("note").then_some(())
    });
    // The allow-list now names the tool: the next write does not ask.
    host.submit(prompt("again", Priority::Normal))
        .await
        .unwrap();
    wait_requests(&provider, 4).await;
    wait_event(&host, "the second write", |e| {
        e.kind == "tool_executed" && e.payload.to_string().contains("again")
    })
    .await;
    let calls = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(calls.contains("again"), "{calls}");
    assert_eq!(host.approvals(None, false).unwrap().len(), 0);
    host.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn broken_servers_answer_tool_errors_and_the_turn_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let provider = Arc::new(ScriptedProvider::new(vec![
        Scripted::tools(
            "Trying everything.",
            &[
                ("mcp__stub__slow", json!({"ms": 10_000})),
                ("mcp__stub__crash", json!({})),
                ("mcp__stub__echo", json!({"text": "after the crash"})),
            ],
        ),
        Scripted::text("Some of it failed."),
    ]));
    let mut stub = stub_config("stub", &[]);
    stub.tool_timeout = Duration::from_secs(1);
    let mut missing = stub_config("missing", &[]);
    missing.transport = Transport::Stdio {
        command: dir.path().join("no-such-server").display().to_string(),
        args: Vec::new(),
        env: BTreeMap::new(),
        env_passthrough: Vec::new(),
        cwd: None,
    };
    let exits = stub_config("exits", &["--exit"]);
    let mut mute = stub_config("mute", &["--mute"]);
    mute.startup_timeout = Duration::from_secs(1);
    let garbage = stub_config("garbage", &["--garbage"]);
    let stray = stub_config("stray", &["--stray"]);
    let host = host(
        dir.path(),
        &provider,
        vec![stub, missing, exits, mute, garbage, stray],
        Approval::OnRequest,
    )
    .await;
    host.submit(prompt("try", Priority::Normal)).await.unwrap();
    wait_event(&host, "the turn's end", kind("turn_terminal")).await;
    wait_requests(&provider, 2).await;

    let told = results(&provider, 1);
    let message = |i: usize| told[i].1["message"].as_str().unwrap_or_default().to_owned();
    assert!(
        message(0).contains("within 1 s and was cancelled"),
        "{}",
        message(0)
    );
    assert!(message(1).contains("not available"), "{}", message(1));
    // Right after the crash the server is backing off (1 s): the call is
    // told so. A machine slow enough to pass the backoff restarts it
    // instead, and the call runs: both are what a user should see.
    let restarted = told[2].1["text"] == "after the crash";
    assert!(
        restarted || message(2).contains("not available"),
        "{:?}",
        told[2]
    );

    let views: BTreeMap<String, _> = host
        .mcp_servers(None)
        .into_iter()
        .map(|v| (v.name.clone(), v))
        .collect();
    assert_eq!(views["missing"].state, "failed");
    let reason = |n: &str| views[n].reason.clone().unwrap_or_default();
    assert!(
        reason("missing").contains("cannot start"),
        "{}",
        reason("missing")
    );
    assert_eq!(views["exits"].state, "failed");
    assert!(
        reason("mute").contains("did not answer `initialize` within 1 s"),
        "{}",
        reason("mute")
    );
    // A line of garbage before the protocol does not stop a server.
    assert_eq!(views["garbage"].state, "running", "{}", reason("garbage"));
    // Nor does a response to a request it was never sent.
    assert_eq!(views["stray"].state, "running", "{}", reason("stray"));
    if !restarted {
        assert_eq!(views["stub"].state, "failed");
        assert!(reason("stub").contains("exited"), "{}", reason("stub"));
    }
    // The server's stderr is in its log.
    let log = std::fs::read_to_string(&views["stub"].log).unwrap_or_default();
    assert!(log.contains("mcp_stub starting"), "{log}");
    host.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sandboxed_server_writes_only_in_its_own_directory() {
    if !holon::runtime::sandbox::tests_can_sandbox() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let outside = dir.path().join("outside.txt");
    let own = dir.path().join("data/mcp/stub/inside.txt");
    let provider = Arc::new(ScriptedProvider::new(vec![
        Scripted::tools(
            "Writing.",
            &[
                (
                    "mcp__stub__touch",
                    json!({"path": outside.display().to_string()}),
                ),
                (
                    "mcp__stub__touch",
                    json!({"path": own.display().to_string()}),
                ),
            ],
        ),
        Scripted::text("Done."),
    ]));
    let mut stub = stub_config("stub", &[]);
    stub.sandboxed = true;
    let host = host(dir.path(), &provider, vec![stub], Approval::Never).await;
    host.submit(prompt("write", Priority::Normal))
        .await
        .unwrap();
    wait_event(&host, "the turn's end", kind("turn_terminal")).await;
    wait_requests(&provider, 2).await;
    let told = results(&provider, 1);
    let views = host.mcp_servers(None);
    assert_eq!(views[0].state, "running", "{:?}", views[0].reason);
    assert!(told[0].2, "the write outside was refused: {:?}", told[0]);
    assert!(!outside.exists());
    assert!(!told[1].2, "{:?}", told[1]);
    assert!(own.exists());
    host.shutdown().await;
}

/// The stub serving streamable HTTP on a free port: the process and its
/// `/mcp` URL.
fn http_stub(token: &str, log: &std::path::Path) -> (std::process::Child, String) {
    use std::io::BufRead;
    let log = log.display().to_string();
    let mut child = std::process::Command::new(stub_server())
        .args(["--http", "127.0.0.1:0", "--token", token, "--log", &log])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    let stdout = child.stdout.take().unwrap();
    std::io::BufReader::new(stdout)
        .read_line(&mut line)
        .unwrap();
    let addr = line
        .trim()
        .strip_prefix("listening on ")
        .unwrap()
        .to_owned();
    (child, format!("http://{addr}/mcp"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streamable_http_servers_with_a_token_without_one_and_gone() {
    // A variable every test process has, so nothing sets the environment.
    let token = std::env::var("CARGO_PKG_NAME").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let calls = dir.path().join("calls.log");
    let (mut good, url) = http_stub(&token, &calls);
    let (mut other, other_url) = http_stub("not-the-token", &dir.path().join("other.log"));
    let provider = Arc::new(ScriptedProvider::new(vec![
        Scripted::tools(
            "Over HTTP.",
            &[("mcp__web__echo", json!({"text": "over http"}))],
        ),
        Scripted::text("Done."),
        Scripted::tools("Slowly.", &[("mcp__web__slow", json!({"ms": 30_000}))]),
        Scripted::text("It went away."),
    ]));
    let http = |name: &str, url: &str| {
        let mut c = stub_config(name, &[]);
        c.transport = Transport::Http {
            url: url.to_owned(),
            bearer_token_env: Some("CARGO_PKG_NAME".into()),
        };
        c.tool_timeout = Duration::from_secs(5);
        c
    };
    let host = host(
        dir.path(),
        &provider,
        vec![http("web", &url), http("locked", &other_url)],
        Approval::OnRequest,
    )
    .await;
    host.submit(prompt("echo", Priority::Normal)).await.unwrap();
    wait_requests(&provider, 2).await;
    let told = results(&provider, 1);
    assert_eq!(told[0].1["text"], "over http", "{:?}", told[0]);
    let views = host.mcp_servers(None);
    assert_eq!(views[1].name, "locked");
    assert_eq!(views[1].state, "failed");
    let reason = views[1].reason.clone().unwrap_or_default();
    assert!(reason.contains("refused the handshake"), "{reason}");
    assert_eq!(views[0].transport, "http");
    assert_eq!(views[0].state, "running");

    // The server goes away during a call: the model is told, the turn
    // goes on.
    host.submit(prompt("slow", Priority::Normal)).await.unwrap();
    // Gone once the server has the call in hand (it logs each call it
    // serves as it starts).
    super::support::poll("the slow call at the server", || {
        let served = std::fs::read_to_string(&calls).unwrap_or_default();
        served.contains("slow").then_some(())
    });
    good.kill().unwrap();
    let _ = good.wait();
    wait_requests(&provider, 4).await;
    let told = results(&provider, 3);
    let last = told.last().cloned().unwrap();
    assert!(last.2, "{last:?}");
    // The event stream of a streamable HTTP call does not end the call
    // when the server dies: the tool timeout does.
    let message = last.1["message"].as_str().unwrap_or_default().to_owned();
    assert!(
        message.contains("was cancelled") || message.contains("not available"),
        "{message}"
    );
    let _ = other.kill();
    let _ = other.wait();
    host.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_writes_where_the_operator_said_and_nowhere_else() {
    if !holon::runtime::sandbox::tests_can_sandbox() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let notes = dir.path().join("outside/notes");
    let elsewhere = dir.path().join("outside/elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    let mut memory = stub_config("memory", &[]);
    memory.sandboxed = true;
    memory.writable = vec![notes.clone()];
    let data = dir.path().join("data");
    let holon_own = dir.path().join("holon-config");
    std::fs::create_dir_all(&holon_own).unwrap();
    let hub = holon::runtime::mcp::Hub::new(vec![memory], &data, vec![holon_own.clone()]);
    assert!(!hub.specs(None, "main", None).await.is_empty());
    let touch = |path: &std::path::Path| holon::model::usage::ToolCall {
        id: "c".into(),
        name: "mcp__memory__touch".into(),
        arguments: json!({"path": path.display().to_string()}),
        malformed_arguments: None,
    };
    let kept = hub
        .call(
            None,
            "main",
            None,
            &touch(&notes.join("graph.json")),
            10_000,
            None,
        )
        .await;
    assert!(!kept.is_error, "{:?}", kept.content);
    assert!(notes.join("graph.json").exists());
    let refused = hub
        .call(
            None,
            "main",
            None,
            &touch(&elsewhere.join("x")),
            10_000,
            None,
        )
        .await;
    assert!(refused.is_error, "{:?}", refused.content);
    assert!(!elsewhere.join("x").exists());
    hub.stop().await;

    // Holon's own directories can never be given to a server.
    let mut greedy = stub_config("greedy", &[]);
    greedy.sandboxed = true;
    greedy.writable = vec![holon_own.join("sub")];
    let hub = holon::runtime::mcp::Hub::new(vec![greedy], &data, vec![holon_own.clone()]);
    assert!(hub.specs(None, "main", None).await.is_empty());
    let view = hub
        .views(None)
        .into_iter()
        .find(|v| v.name == "greedy")
        .unwrap();
    assert_eq!(view.state, "failed");
    assert!(
        view.reason
            .as_deref()
            .unwrap_or("")
            .contains("overlaps Holon's own"),
        "{view:?}"
    );
    assert!(!holon_own.join("sub").exists());
    hub.stop().await;

    // Nor through a link on the way to a directory not made yet.
    let link = dir.path().join("outside/link");
    std::os::unix::fs::symlink(&holon_own, &link).unwrap();
    let mut sly = stub_config("sly", &[]);
    sly.sandboxed = true;
    sly.writable = vec![link.join("new/deeper")];
    let hub = holon::runtime::mcp::Hub::new(vec![sly], &data, vec![holon_own.clone()]);
    assert!(hub.specs(None, "main", None).await.is_empty());
    assert!(!holon_own.join("new").exists());
    hub.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_to_a_server_that_went_down_is_retryable_and_says_why() {
    let dir = tempfile::tempdir().unwrap();
    let hub = holon::runtime::mcp::Hub::new(vec![stub_config("stub", &[])], dir.path(), Vec::new());
    assert!(!hub.specs(None, "main", None).await.is_empty());
    let call = |name: &str| holon::model::usage::ToolCall {
        id: "c".into(),
        name: name.into(),
        arguments: json!({"text": "x"}),
        malformed_arguments: None,
    };
    let crashed = hub
        .call(None, "main", None, &call("mcp__stub__crash"), 10_000, None)
        .await;
    assert!(crashed.is_error);
    // The catalog is built again while the server backs off: its tools
    // are gone from it, and a call of one says why.
    let rebuilt = hub.specs(None, "main", None).await;
    let echo = hub
        .call(None, "main", None, &call("mcp__stub__echo"), 10_000, None)
        .await;
    if rebuilt.iter().any(|t| t.name == "mcp__stub__echo") {
        // A machine slow enough to pass the backoff restarted it.
        assert!(!echo.is_error, "{:?}", echo.content);
    } else {
        assert!(echo.is_error);
        assert_eq!(echo.content["retryable"], true, "{}", echo.content);
        let message = echo.content["message"].as_str().unwrap_or_default();
        assert!(message.contains("MCP server `stub` is failed"), "{message}");
        assert!(message.contains("last failure"), "{message}");
        assert_ne!(echo.content["kind"], "unknown_tool", "{}", echo.content);
    }
    hub.stop().await;
}
