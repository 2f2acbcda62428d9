//! Durable approvals: a gated tool call waits for the operator as a record
//! in the store. It survives a restart, runs once when approved (first
//! answer wins), is answered to the model as denied with the operator's
//! note, and "always" extends the workspace's allow-list. Through the
//! binary: the stub provider, a killed daemon, the CLI answering.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::runtime_core::{config, events, kind, prompt, wait_event};
use super::stub_provider::{canned, Canned, StubServer};
use super::support::{daemon_pid, json_lines, poll, stderr, Daemon, Home};
use holon::model::approval::Approval;
use holon::model::approval::ApprovalPolicy;
use holon::model::approval::ApprovalStatus;
use holon::model::message::Priority;
use holon::runtime::handle::RuntimeHost;
use holon::runtime::provider::scripted::{Scripted, ScriptedProvider};
use holon::runtime::RuntimeError;
use holon::store::{Store, StoreOptions};

fn ok<T, E: std::fmt::Debug>(r: Result<T, E>) -> T {
    r.unwrap()
}

pub(super) async fn host_with(
    dir: &std::path::Path,
    provider: &Arc<ScriptedProvider>,
    approval: Approval,
) -> RuntimeHost {
    let store = ok(Store::open(&dir.join("s.redb"), StoreOptions::default()));
    let mut c = config(dir, Arc::clone(provider));
    c.policy = ApprovalPolicy {
        approval,
        ..ApprovalPolicy::default()
    };
    // The turn ends at the request, as it does once its wait for the
    // answer runs out: these tests answer later (approval_wait.rs has
    // the answer that comes in time).
    c.approval_wait = Duration::ZERO;
    let host = ok(RuntimeHost::start(store, c).await);
    ok(host.create_agent("main").await);
    host
}

pub(super) async fn stop(host: RuntimeHost) {
    host.shutdown().await;
    let store = host.store().clone();
    drop(host);
    ok(store.close().await);
}

pub(super) async fn wait_requests(provider: &ScriptedProvider, n: usize) {
    let deadline = Instant::now() + Duration::from_secs(15);
    while provider.requests().len() < n {
        assert!(Instant::now() < deadline, "no request {n}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn posture(host: &RuntimeHost) -> (String, String) {
    let rx = ok(host.store().read());
    let live = ok(holon::runtime::projection::load(&rx, "main", 0));
    let p = live.expect("no agent").projection.posture();
    (p.posture.as_str().to_owned(), p.reason.clone())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gated_command_survives_a_restart_and_runs_once_when_approved() {
    let dir = ok(tempfile::tempdir());
    // Inside the agent's home: the sandbox lets the command write there.
    let out = dir.path().join("data/agents/main/ran.txt");
    let cmd = format!("echo ran >> {}", out.display());
    let provider = Arc::new(ScriptedProvider::new(vec![
        Scripted::tools(
            "Writing the file.",
            &[("ExecCommand", json!({ "cmd": cmd }))],
        ),
        Scripted::text("The approved command ran."),
    ]));
    let host = host_with(dir.path(), &provider, Approval::OnWrite).await;
    ok(host
        .submit(prompt("append to the file", Priority::Normal))
        .await);
    let asked = wait_event(&host, "the approval request", kind("approval_requested")).await;
    let id = asked.payload["approval"]["id"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(asked.payload["approval"]["why"]
        .as_str()
        .unwrap_or_default()
        .contains("on_write"));
    wait_event(&host, "the turn's end", kind("turn_terminal")).await;
    let (p, reason) = posture(&host);
    assert_eq!(p, "WaitingForOperator", "{reason}");
    assert!(reason.contains("approval needed: ExecCommand"), "{reason}");
    assert!(!out.exists(), "nothing ran before the answer");
    // The model was told the call waits, and why.
    let told = serde_json::to_string(&provider.requests()).unwrap_or_default();
    assert!(
        told.contains("approvals (on_write)"),
        "the frame states the policy"
    );

    // A restart: the approval is still pending and nothing runs.
    stop(host).await;
    let host = host_with(dir.path(), &provider, Approval::OnWrite).await;
    host.until_idle().await;
    let pending = ok(host.approvals(None, false));
    assert_eq!(pending.len(), 1);
    assert_eq!(pending[0].id, id);
    assert!(!out.exists());
    assert_eq!(provider.requests().len(), 1, "no turn without an answer");

    // Two answers at once: the first wins, the other is told.
    let (a, b) = tokio::join!(
        host.approve("main", &id, false),
        host.deny("main", &id, None)
    );
    let (won, lost) = match (a, b) {
        (Ok(w), Err(l)) => (w.status, l),
        (Err(l), Ok(w)) => (w.status, l),
        other => panic!("exactly one answer wins: {other:?}"),
    };
    assert!(
        matches!(lost, RuntimeError::ApprovalAnswered { .. }),
        "{lost}"
    );
    if won == ApprovalStatus::Denied {
        // The race went to the denial: nothing ran, the model was told.
        wait_requests(&provider, 2).await;
        assert!(!out.exists());
        return;
    }
    wait_requests(&provider, 2).await;
    let text = ok(std::fs::read_to_string(&out));
    assert_eq!(text, "ran\n", "ran exactly once");
    // The call that ran is recorded as any call is (the console shows its
    // command row, or a patch's diff): once, with its outcome.
    let call_id = asked.payload["approval"]["call_id"].clone();
    let ran: Vec<_> = events(&host)
        .into_iter()
        .filter(|e| {
            e.kind == "tool_executed"
                && e.payload["call_id"] == call_id
                && e.payload["result_facts"]["status"] != "awaiting_approval"
        })
        .collect();
    assert_eq!(ran.len(), 1, "{ran:?}");
    assert_eq!(ran[0].payload["result_facts"]["exit_status"], 0);
    assert_eq!(
        ran[0].payload["run_id"],
        asked.payload["approval"]["run_id"]
    );
    let second = serde_json::to_string(&provider.requests()[1].conversation).unwrap_or_default();
    assert!(
        second.contains("The operator approved ExecCommand"),
        "{second}"
    );
    assert!(
        second.contains("exit_status"),
        "the result came back: {second}"
    );
    // Answering again, or an unknown id: clear errors.
    let again = host.approve("main", &id, false).await;
    assert!(
        matches!(again, Err(RuntimeError::ApprovalAnswered { .. })),
        "{again:?}"
    );
    let unknown = host.approve("main", "apr_nope", false).await;
    assert!(
        matches!(unknown, Err(RuntimeError::UnknownApproval { .. })),
        "{unknown:?}"
    );
    wait_event(&host, "the second turn", |e| {
        e.kind == "turn_terminal" && e.event_seq > asked.event_seq + 5
    })
    .await;
    let (p, _) = posture(&host);
    assert_ne!(p, "WaitingForOperator");
    let granted = events(&host)
        .into_iter()
        .filter(|e| e.kind == "approval_granted")
        .count();
    assert_eq!(granted, 1);
    stop(host).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_denial_reaches_the_model_with_the_note_and_always_allow_stops_asking() {
    let dir = ok(tempfile::tempdir());
    let provider = Arc::new(ScriptedProvider::new(vec![
        Scripted::tools("", &[("ExecCommand", json!({"cmd": "ls -la"}))]),
        Scripted::text("Understood, not listing."),
        Scripted::tools("", &[("ExecCommand", json!({"cmd": "echo one"}))]),
        Scripted::text("Ran it."),
        Scripted::tools("", &[("ExecCommand", json!({"cmd": "echo two"}))]),
        Scripted::text("Ran the second without asking."),
    ]));
    let host = host_with(dir.path(), &provider, Approval::Always).await;
    ok(host
        .submit(prompt("list the files", Priority::Normal))
        .await);
    let asked = wait_event(&host, "the first request", kind("approval_requested")).await;
    let id = asked.payload["approval"]["id"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let denied = ok(host
        .deny("main", &id, Some("not in this directory".into()))
        .await);
    assert_eq!(denied.status, ApprovalStatus::Denied);
    wait_requests(&provider, 2).await;
    let told = serde_json::to_string(&provider.requests()[1].conversation).unwrap_or_default();
    assert!(
        told.contains("denied") && told.contains("not in this directory"),
        "{told}"
    );

    ok(host
        .submit(prompt("echo something", Priority::Normal))
        .await);
    let second = wait_event(&host, "the second request", |e| {
        e.kind == "approval_requested" && e.payload["approval"]["id"] != id.as_str()
    })
    .await;
    let id2 = second.payload["approval"]["id"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let granted = ok(host.approve("main", &id2, true).await);
    assert!(granted.always);
    // The rule is kept over the runtime's default, which the workspace
    // still follows, and the ledger says so.
    let own = events(&host)
        .into_iter()
        .find(|e| e.kind == "workspace_policy_changed")
        .expect("the allow-list change is recorded");
    assert_eq!(own.payload["source"], "runtime");
    assert_eq!(own.payload["policy"]["allow_commands"][0], "echo one");
    assert_eq!(own.payload["always"]["allow_commands"][0], "echo one");
    wait_requests(&provider, 4).await;
    let snapshot = ok(host.execution_snapshot("main"));
    assert_eq!(
        snapshot.policy.approval.allow_commands,
        vec!["echo one".to_owned()]
    );
    // A later default reaches the workspace, with the rule kept on top.
    use holon::model::approval::PolicyChange;
    let mode = |approval| PolicyChange {
        approval: Some(approval),
        ..PolicyChange::default()
    };
    ok(host.default_policy(mode(Approval::OnWrite)).await);
    let snapshot = ok(host.execution_snapshot("main"));
    assert_eq!(snapshot.policy.approval.approval, Approval::OnWrite);
    assert_eq!(snapshot.policy.approval.allow_commands, ["echo one"]);
    ok(host.default_policy(mode(Approval::Always)).await);
    // "echo one" allowed `echo one`, not every echo: the next one asks.
    ok(host.submit(prompt("echo again", Priority::Normal)).await);
    wait_requests(&provider, 5).await;
    let third = wait_event(&host, "the third request", |e| {
        e.kind == "approval_requested"
            && e.payload["approval"]["id"] != id.as_str()
            && e.payload["approval"]["id"] != id2.as_str()
    })
    .await;
    assert_eq!(third.payload["approval"]["summary"], "`echo two`");
    // One rule is forgotten by name; an unknown one, or one of the
    // runtime's default, is refused with where it lives.
    let forget = |rule: &str| PolicyChange {
        forget: vec![rule.to_owned()],
        ..PolicyChange::default()
    };
    let unknown = host
        .set_workspace_policy("main", "agent_home", forget("echo three"))
        .await;
    let unknown = format!("{:?}", unknown.err());
    assert!(
        unknown.contains("no rule `echo three` in agent_home"),
        "{unknown}"
    );
    ok(host
        .default_policy(PolicyChange {
            allow_commands: vec!["cargo test".into()],
            ..PolicyChange::default()
        })
        .await);
    let elsewhere = host
        .set_workspace_policy("main", "agent_home", forget("cargo test"))
        .await;
    let elsewhere = format!("{:?}", elsewhere.err());
    assert!(
        elsewhere.contains("holon policy --forget='cargo test'"),
        "{elsewhere}"
    );
    ok(host.default_policy(forget("cargo test")).await);
    let after = ok(host
        .set_workspace_policy("main", "agent_home", forget("echo one"))
        .await);
    assert!(after.always.is_empty(), "{:?}", after.always);
    assert_eq!(after.source, holon::model::workspace::PolicySource::Runtime);
    let snapshot = ok(host.execution_snapshot("main"));
    assert!(snapshot.policy.approval.allow_commands.is_empty());
    ok(host
        .set_workspace_policy(
            "main",
            "agent_home",
            PolicyChange {
                allow_commands: vec!["echo one".into()],
                ..PolicyChange::default()
            },
        )
        .await);
    // A reset forgets what "always" allowed, also with a change after it.
    let reset = PolicyChange {
        reset: true,
        ..mode(Approval::Always)
    };
    let back = ok(host.set_workspace_policy("main", "agent_home", reset).await);
    assert!(back.always.is_empty() && back.policy.allow_commands.is_empty());
    let snapshot = ok(host.execution_snapshot("main"));
    assert!(snapshot.policy.approval.allow_commands.is_empty());
    stop(host).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_default_policy_gates_a_project_workspace_and_outlives_a_restart() {
    use holon::model::approval::{DefaultPolicySource, PolicyChange};
    let dir = ok(tempfile::tempdir());
    let project = ok(tempfile::tempdir());
    let notes = project.path().join("notes.txt");
    let provider = Arc::new(ScriptedProvider::new(vec![Scripted::tools(
        "Creating it.",
        &[("ExecCommand", json!({ "cmd": "touch notes.txt" }))],
    )]));
    // Config `[policy]` asks for nothing; the operator's default does.
    let host = host_with(dir.path(), &provider, Approval::OnRequest).await;
    let used = ok(host
        .use_workspace(
            "main",
            holon::protocol::types::UseWorkspace {
                path: Some(project.path().display().to_string()),
                ..Default::default()
            },
        )
        .await);
    assert_ne!(used.execution.workspace_id, "agent_home");
    let shown = ok(host.default_policy(PolicyChange::default()).await);
    assert_eq!(shown.source, DefaultPolicySource::Config);
    let set = ok(host
        .default_policy(PolicyChange {
            approval: Some(Approval::OnWrite),
            ..PolicyChange::default()
        })
        .await);
    assert_eq!(
        (set.policy.approval, set.source),
        (Approval::OnWrite, DefaultPolicySource::Operator)
    );
    let recorded = wait_event(&host, "the change", kind("default_policy_changed")).await;
    assert_eq!(recorded.payload["source"], "operator");
    let snapshot = ok(host.execution_snapshot("main"));
    assert_eq!(snapshot.policy.approval.approval, Approval::OnWrite);

    ok(host.submit(prompt("make notes", Priority::Normal)).await);
    let asked = wait_event(&host, "the approval request", kind("approval_requested")).await;
    assert_eq!(
        asked.payload["approval"]["workspace_id"],
        used.execution.workspace_id.as_str()
    );
    wait_event(&host, "the turn's end", kind("turn_terminal")).await;
    assert!(!notes.exists(), "nothing ran before the answer");

    // The default is the store's, not the process's: a restart with the
    // same config keeps it, and a reset returns to the file.
    stop(host).await;
    let host = host_with(dir.path(), &provider, Approval::OnRequest).await;
    let kept = ok(host.default_policy(PolicyChange::default()).await);
    assert_eq!(kept.policy.approval, Approval::OnWrite);
    assert_eq!(kept.source, DefaultPolicySource::Operator);
    let reset = ok(host
        .default_policy(PolicyChange {
            reset: true,
            ..PolicyChange::default()
        })
        .await);
    assert_eq!(
        (reset.policy.approval, reset.source),
        (Approval::OnRequest, DefaultPolicySource::Config)
    );
    let snapshot = ok(host.execution_snapshot("main"));
    assert_eq!(snapshot.policy.approval.approval, Approval::OnRequest);
    // A bad entry is refused and changes nothing.
    let bad = host
        .default_policy(PolicyChange {
            allow_commands: vec!["  ".into()],
            ..PolicyChange::default()
        })
        .await;
    assert!(bad.is_err(), "{bad:?}");
    let after = ok(host.default_policy(PolicyChange::default()).await);
    assert_eq!(after.source, DefaultPolicySource::Config);
    stop(host).await;
}

// ---- through the binary: the daemon, a kill -9, the CLI answering --------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gated_command_is_approved_from_the_cli_after_the_daemon_was_killed() {
    let home = Home::new();
    // Inside the agent's home: the sandbox lets the command write there.
    let out = home.path().join("data/agents/main/ran.txt");
    let cmd = format!("echo ran >> {}", out.display());
    let call = json!({ "cmd": cmd }).to_string();
    let stub = StubServer::start(vec![
        Canned::json(
            200,
            canned::responses_json("Appending.", &[("call_1", "ExecCommand", &call)]),
        ),
        Canned::json(200, canned::responses_json("It ran once.", &[])),
    ])
    .await;
    ok(std::fs::create_dir_all(home.path().join("config")));
    ok(std::fs::write(
        home.path().join("config/config.toml"),
        "[policy]\napproval = \"on_write\"\nallow_commands = [\"cargo test\"]\n",
    ));
    let base = format!("{}/v1", stub.base());
    let detach = || {
        let out = ok(home
            .cmd()
            .env("HOLON_MODEL", "openai/gpt-approvals")
            .env("OPENAI_BASE_URL", &base)
            .env("OPENAI_API_KEY", "sk-approvals")
            .arg("--detach")
            .output());
        assert!(out.status.success(), "{}", stderr(&out));
    };
    detach();
    let _daemon = Daemon(&home);
    home.ok(&["send", "append to the file"]);
    let pending: Vec<Value> = poll("the approval", || {
        let v: Vec<Value> =
            serde_json::from_str(&home.ok(&["approvals", "--json"])).unwrap_or_default();
        (!v.is_empty()).then_some(v)
    });
    let id = pending[0]["id"].as_str().unwrap_or_default().to_owned();
    let listed = home.ok(&["approvals"]);
    assert!(
        listed.contains(&id) && listed.contains("echo ran"),
        "{listed}"
    );
    let status: Value = ok(serde_json::from_str(
        &home.ok(&["daemon", "status", "--json"]),
    ));
    assert_eq!(status["status"]["pending_approvals"], 1, "{status}");
    // Its turn waits for the answer: the runtime is not settled.
    assert_eq!(status["status"]["activity"]["settled"], false, "{status}");

    super::support::kill_daemon(daemon_pid(&home));
    let refused = home.run(&["approve", &id]);
    assert!(!refused.status.success());
    assert!(
        stderr(&refused).contains("no runtime is running"),
        "{}",
        stderr(&refused)
    );
    // Listing works without it; the approval is still there.
    assert!(home.ok(&["approvals"]).contains(&id));
    detach();
    assert!(!out.exists(), "nothing ran on restart");
    // Killed while its turn waited for the answer: the turn is settled at
    // the restart, not replayed (its model call is not paid again).
    let evs = json_lines(&home.ok(&["events", "--json", "--limit", "5000"]));
    let restarted = evs
        .iter()
        .find(|e| e["kind"] == "runtime_started" && e["payload"]["turn_was_in_progress"] == true)
        .cloned()
        .unwrap_or_default();
    assert_eq!(
        restarted["payload"]["replay_message_ids"],
        json!([]),
        "{restarted}"
    );
    let settled = evs.iter().any(|e| {
        e["kind"] == "message_processed"
            && e["payload"]["detail"]["evidence"][0]
                .as_str()
                .is_some_and(|s| s.starts_with("waited_on_approval:"))
    });
    assert!(settled, "the waiting turn's message was settled");
    let answer = home.ok(&["approve", &id]);
    assert!(answer.contains("approved ExecCommand"), "{answer}");
    poll("the second model turn", || {
        (stub.requests().len() >= 2).then_some(())
    });
    assert_eq!(stub.requests().len(), 2, "one request for the answer");
    assert_eq!(
        ok(std::fs::read_to_string(&out)),
        "ran\n",
        "ran exactly once"
    );
    let again = home.run(&["approve", &id]);
    assert!(!again.status.success());
    assert!(
        stderr(&again).contains("already answered"),
        "{}",
        stderr(&again)
    );
    let denied_unknown = home.run(&["deny", "apr_nope"]);
    assert!(
        stderr(&denied_unknown).contains("no approval"),
        "{}",
        stderr(&denied_unknown)
    );
    // The workspace policy, set from the CLI.
    let policy = home.ok(&["workspace", "policy", "agent_home", "--approval", "always"]);
    assert!(
        policy.contains("approval always (its own policy)"),
        "{policy}"
    );
    let evs = json_lines(&home.ok(&["events", "--json", "--limit", "5000"]));
    for k in [
        "approval_requested",
        "approval_granted",
        "workspace_policy_changed",
    ] {
        assert!(evs.iter().any(|e| e["kind"] == k), "{k}");
    }
    super::support::assert_typed_lines(&home, "main");
}

#[test]
fn two_attached_consoles_see_the_request_and_the_second_answer_is_told() {
    use super::pty::Console;
    let rt = ok(tokio::runtime::Runtime::new());
    let home = Home::new();
    let call = json!({ "cmd": "echo from-the-console" }).to_string();
    let stub = rt.block_on(StubServer::start(vec![
        Canned::json(
            200,
            canned::responses_json("Echoing.", &[("call_1", "ExecCommand", &call)]),
        ),
        Canned::json(200, canned::responses_json("Echoed.", &[])),
    ]));
    ok(std::fs::create_dir_all(home.path().join("config")));
    ok(std::fs::write(
        home.path().join("config/config.toml"),
        "[policy]\napproval = \"always\"\n",
    ));
    let base = format!("{}/v1", stub.base());
    let out = ok(home
        .cmd()
        .env("HOLON_MODEL", "openai/gpt-approvals")
        .env("OPENAI_BASE_URL", &base)
        .env("OPENAI_API_KEY", "sk-approvals")
        .arg("--detach")
        .output());
    assert!(out.status.success(), "{}", stderr(&out));
    let _daemon = Daemon(&home);
    let mut one = Console::start(home.path(), &["attach"], 120, 40, &[]);
    let mut two = Console::start(home.path(), &["attach"], 120, 40, &[]);
    for c in [&one, &two] {
        c.wait_until("attached", |s| s.contains("streaming"));
    }
    one.type_text("echo something for me");
    one.enter();
    let id = poll("the approval", || {
        let v: Vec<Value> =
            serde_json::from_str(&home.ok(&["approvals", "--json"])).unwrap_or_default();
        v.first().and_then(|a| a["id"].as_str().map(str::to_owned))
    });
    for c in [&one, &two] {
        c.wait_until("the approval row", |s| {
            s.contains("NEEDS YOUR INPUT")
                && s.contains("Needs you")
                && s.contains("$ echo from-the-console")
                && s.contains(&id)
                && !s.contains("from-the-console ✓")
        });
    }
    // One key answers it in the first console; the second sees the row
    // settle and its banner clear without a prompt of its own.
    one.key(b"y");
    for c in [&one, &two] {
        c.wait_until("the answered row", |s| {
            s.contains("✓ approved ExecCommand `echo from-the-console`")
                && !s.contains("NEEDS YOUR INPUT")
        });
    }
    two.type_text(&format!("/approve {id}"));
    two.enter();
    two.wait_for("already answered: granted");
    two.wait_for("Echoed.");
    // The answer went on in the turn that asked: one turn, not two.
    let evs = json_lines(&home.ok(&["events", "--json", "--limit", "5000"]));
    let turns = evs.iter().filter(|e| e["kind"] == "turn_started").count();
    assert_eq!(turns, 1, "one turn");
    for c in [&mut one, &mut two] {
        c.type_text("/quit");
        c.enter();
        assert_eq!(c.wait_exit(), 0);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn while_an_approved_command_runs_no_other_turn_starts_without_its_result() {
    let dir = ok(tempfile::tempdir());
    let provider = Arc::new(ScriptedProvider::new(vec![
        Scripted::tools(
            "",
            &[("ExecCommand", json!({"cmd": "sleep 1 && echo slow-done"}))],
        ),
        Scripted::text("The slow command finished."),
        Scripted::text("Nothing else to do."),
        Scripted::text("Nothing else to do."),
    ]));
    let host = host_with(dir.path(), &provider, Approval::OnWrite).await;
    // Runnable work would otherwise re-enter the model at once (set up
    // while paused, so the prompt's turn is the first).
    ok(host
        .control("main", holon::protocol::views::ControlAction::Pause)
        .await);
    let item = ok(host
        .create_work_item(
            "main",
            holon::protocol::views::CreateWorkItem {
                objective: "build it".into(),
                ..Default::default()
            },
        )
        .await);
    ok(host.pick_work_item("main", &item.id).await);
    ok(host.submit(prompt("build it", Priority::Normal)).await);
    ok(host
        .control("main", holon::protocol::views::ControlAction::Resume)
        .await);
    let asked = wait_event(&host, "the approval request", kind("approval_requested")).await;
    let id = asked.payload["approval"]["id"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    wait_event(&host, "the turn's end", kind("turn_terminal")).await;
    let before = provider.requests().len();
    let approving = {
        let host = host.clone();
        let id = id.clone();
        tokio::spawn(async move { host.approve("main", &id, false).await })
    };
    wait_event(&host, "the grant", kind("approval_granted")).await;
    host.until_idle().await;
    let (p, reason) = posture(&host);
    assert_eq!(p, "WaitingForOperator", "{reason}");
    assert!(reason.starts_with("approved ExecCommand"), "{reason}");
    assert_eq!(
        provider.requests().len(),
        before,
        "no turn while it runs: {}",
        serde_json::to_string(&provider.requests().last().map(|r| r.conversation.clone()))
            .unwrap_or_default()
    );
    ok(ok(approving.await));
    wait_requests(&provider, before + 1).await;
    let next = serde_json::to_string(&provider.requests()[before].conversation).unwrap_or_default();
    assert!(
        next.contains("slow-done"),
        "the first turn after sees the result: {next}"
    );
    stop(host).await;
}

/// An approved ApplyPatch is recorded like any patch that ran: its
/// `tool_executed` carries the files and the diff, so the console shows
/// the change, not only that it was approved.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approved_patch_is_recorded_with_its_files_and_diff() {
    let dir = ok(tempfile::tempdir());
    let patch = "--- /dev/null\n+++ b/new.rs\n@@ -0,0 +1,2 @@\n+fn main() {}\n+// approved\n";
    let provider = Arc::new(ScriptedProvider::new(vec![
        Scripted::tools("Adding it.", &[("ApplyPatch", json!({ "patch": patch }))]),
        Scripted::text("Added."),
    ]));
    let host = host_with(dir.path(), &provider, Approval::Always).await;
    ok(host.submit(prompt("add new.rs", Priority::Normal)).await);
    let asked = wait_event(&host, "the approval request", kind("approval_requested")).await;
    let id = asked.payload["approval"]["id"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    ok(host.approve("main", &id, false).await);
    wait_requests(&provider, 2).await;
    let call_id = asked.payload["approval"]["call_id"].clone();
    let ran = events(&host)
        .into_iter()
        .find(|e| {
            e.kind == "tool_executed"
                && e.payload["call_id"] == call_id
                && e.payload["result_facts"]["status"] != "awaiting_approval"
        })
        .expect("the approved patch's record");
    assert_eq!(ran.payload["tool_name"], "ApplyPatch");
    assert_eq!(ran.payload["is_error"], false);
    assert_eq!(ran.payload["result_facts"]["files"][0]["path"], "new.rs");
    assert_eq!(ran.payload["result_facts"]["files"][0]["added"], 2);
    assert!(ran.payload["arguments"]["patch"]
        .as_str()
        .unwrap_or_default()
        .contains("+// approved"));
    stop(host).await;
}

/// As a hostile model would: commands dressed as readers that delete
/// (an escaped newline joining `-dele` and `te`, a `$'…'` option) are
/// asked about under `on_write`, and nothing runs before an answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_writer_dressed_as_a_reader_still_asks_under_on_write() {
    let dir = ok(tempfile::tempdir());
    let home = dir.path().join("data/agents/main");
    ok(std::fs::create_dir_all(&home));
    let victim = home.join("victim.txt");
    ok(std::fs::write(&victim, "keep me"));
    let root = home.display().to_string();
    let tricks = [
        format!("find {root} -name victim.txt -dele\\\nte"),
        format!("find {root} -name victim.txt $'-delete'"),
    ];
    let calls: Vec<(&str, serde_json::Value)> = tricks
        .iter()
        .map(|cmd| ("ExecCommand", json!({ "cmd": cmd })))
        .collect();
    let provider = Arc::new(ScriptedProvider::new(vec![
        Scripted::tools("Just looking.", &calls),
        Scripted::text("Waiting."),
    ]));
    let host = host_with(dir.path(), &provider, Approval::OnWrite).await;
    ok(host.submit(prompt("look around", Priority::Normal)).await);
    wait_event(&host, "the turn's end", kind("turn_terminal")).await;
    let asked = ok(host.store().read())
        .events_of_kind("main", "approval_requested", 0, 100)
        .unwrap_or_default();
    assert_eq!(asked.len(), 2, "each trick asks: {asked:?}");
    assert!(victim.exists(), "a command ran before its answer");
    stop(host).await;
}

/// Attack: a model names a program whose name carries a terminal escape,
/// and the operator answers "always". The rule it leaves is the model's
/// text: `holon policy rules` and `holon workspace policy` show it
/// escaped, never as a control the terminal would act on, and the
/// printed removal command names the rule exactly.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rule_made_of_hostile_text_is_shown_escaped_and_forgotten_exactly() {
    let home = Home::new();
    let hostile = "tidy\u{1b}[2J\u{1b}[31m\u{202e}";
    let call = json!({ "cmd": format!("{hostile} notes.txt") }).to_string();
    let stub = StubServer::start(vec![
        Canned::json(
            200,
            canned::responses_json("Tidying.", &[("call_1", "ExecCommand", &call)]),
        ),
        Canned::json(200, canned::responses_json("Done.", &[])),
    ])
    .await;
    ok(std::fs::create_dir_all(home.path().join("config")));
    ok(std::fs::write(
        home.path().join("config/config.toml"),
        "[policy]\napproval = \"on_write\"\n",
    ));
    let base = format!("{}/v1", stub.base());
    let out = ok(home
        .cmd()
        .env("HOLON_MODEL", "openai/gpt-hostile")
        .env("OPENAI_BASE_URL", &base)
        .env("OPENAI_API_KEY", "sk-hostile")
        .arg("--detach")
        .output());
    assert!(out.status.success(), "{}", stderr(&out));
    let _daemon = Daemon(&home);
    home.ok(&["send", "tidy the notes"]);
    let pending: Vec<Value> = poll("the approval", || {
        let v: Vec<Value> =
            serde_json::from_str(&home.ok(&["approvals", "--json"])).unwrap_or_default();
        (!v.is_empty()).then_some(v)
    });
    let id = pending[0]["id"].as_str().unwrap_or_default().to_owned();
    home.ok(&["approve", &id, "--always"]);
    let rules = poll("the always rule", || {
        let r = home.ok(&["policy", "rules"]);
        r.contains("tidy").then_some(r)
    });
    assert!(
        !rules.contains('\u{1b}') && !rules.contains('\u{202e}'),
        "{rules:?}"
    );
    assert!(
        rules.contains("tidy\\u{1b}[2J\\u{1b}[31m\\u{202e}"),
        "{rules}"
    );
    assert!(
        rules.contains("--forget=$'tidy\\x1b[2J\\x1b[31m\\xe2\\x80\\xae'"),
        "{rules}"
    );
    let policy = home.ok(&["workspace", "policy", "agent_home"]);
    assert!(!policy.contains('\u{1b}'), "{policy:?}");
    // The command it printed, as a shell reads it, is the rule itself.
    let forgot = home.ok(&[
        "workspace",
        "policy",
        "agent_home",
        &format!("--forget={hostile}"),
    ]);
    assert!(!forgot.contains("tidy"), "{forgot}");
    assert!(home
        .ok(&["policy", "rules"])
        .contains("no \"always\" rules"));
}
