//! End to end: the real runtime with a real provider chain (HTTP to the
//! stub provider on 127.0.0.1), real commands, real files; `holon run`
//! through the real binary; AGENTS.md in the prompt frame and the file
//! watcher. Every recorded provider request is checked: every tool call
//! has exactly one result, right after the call.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};

use super::stub_provider::{self, canned, Canned, Recorded, StubServer};
use holon::model::event::EventRecord;
use holon::model::message::{AdmissionRequest, DeliverySurface, Priority};
use holon::model::work::WorkItemRecord;
use holon::protocol::views::ControlAction;
use holon::runtime::handle::{ConfigReloader, ConfigWatch};
use holon::runtime::handle::{HostConfig, RuntimeHost};
use holon::runtime::host::run_once::RunOutcome;
use holon::runtime::provider::registry::{build_chain, ProviderEndpointConfig};
use holon::runtime::provider::retry::RetryPolicy;
use holon::runtime::provider::scripted::Scripted;
use holon::runtime::provider::Provider;
use holon::store::{Keyed, Store, StoreOptions};

use super::runtime_core::{events, kind, prompt, rig, wait_event};
use super::support::{stderr, Home};

fn ok<T, E: std::fmt::Debug>(r: Result<T, E>) -> T {
    r.unwrap()
}

fn tool_result<'a>(body: &'a Value, call_id: &str) -> &'a str {
    body["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|m| m["role"] == "tool" && m["tool_call_id"] == call_id)
        .and_then(|m| m["content"].as_str())
        .unwrap_or_else(|| panic!("no tool result for {call_id} in {body}"))
}

fn seq_of(evs: &[EventRecord], pred: impl Fn(&EventRecord) -> bool) -> u64 {
    evs.iter()
        .find(|e| pred(e))
        .map(|e| e.event_seq)
        .expect("event not found")
}

/// A host whose provider is set later (once the stub's script is known).
struct Slot(Mutex<Option<Arc<dyn Provider>>>);

impl Slot {
    fn get(&self) -> Arc<dyn Provider> {
        let p = self.0.lock().unwrap_or_else(|e| e.into_inner()).clone();
        p.unwrap_or_else(|| {
            Arc::new(holon::runtime::provider::scripted::ScriptedProvider::new(
                Vec::new(),
            ))
        })
    }
}

pub(super) fn stub_chain(stub: &StubServer) -> Arc<dyn Provider> {
    let text = format!(
        "base_url = \"{}/v1\"\nwire = \"openai_chat\"\nstreaming = \"on\"\napi_key_env = \"STUB_KEY\"\n",
        stub.base()
    );
    let endpoint: ProviderEndpointConfig = ok(toml::from_str(&text));
    let endpoints = BTreeMap::from([("stub".to_owned(), endpoint)]);
    let env = BTreeMap::from([("STUB_KEY".to_owned(), "sk-e2e".to_owned())]);
    let policy = RetryPolicy {
        request_timeout: Duration::from_secs(10),
        ..RetryPolicy::default()
    };
    match build_chain("stub/e2e-model", &[], &env, &endpoints, policy) {
        Ok(chain) => Arc::new(chain),
        Err(f) => panic!("build_chain: {}", f.artifact.summary),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prompt_runs_a_real_command_and_completes_a_work_item_through_a_real_provider() {
    let dir = ok(tempfile::tempdir());
    let store = ok(Store::open(
        &dir.path().join("s.redb"),
        StoreOptions::default(),
    ));
    let slot = Arc::new(Slot(Mutex::new(None)));
    let source = Arc::clone(&slot);
    let config = HostConfig::new(dir.path().join("data"), Arc::new(move |_| source.get()));
    let host = ok(RuntimeHost::start(store, config).await);
    ok(host.create_agent("main").await);
    let home = dir.path().join("data").join("agents").join("main");
    ok(std::fs::write(
        home.join("AGENTS.md"),
        "Answer tersely. e2e-guidance-marker",
    ));

    // Paused, so nothing runs until the script (which names the work
    // item) is in place.
    ok(host.control("main", ControlAction::Pause).await);
    let item = ok(host
        .create_work_item(
            "main",
            holon::protocol::views::CreateWorkItem {
                objective: "write the e2e marker to out.txt".into(),
                ..Default::default()
            },
        )
        .await);
    ok(host.pick_work_item("main", &item.id).await);
    let report_text = "Wrote e2e-marker to out.txt; the file is in place.";
    let complete_args = json!({ "work_item_id": item.id }).to_string();
    let stub = StubServer::start(vec![
        Canned::sse(canned::chat_sse(
            &["Running ", "the command."],
            &[(
                "call_exec",
                "ExecCommand",
                r#"{"cmd":"echo e2e-marker > out.txt; cat out.txt"}"#,
            )],
        )),
        Canned::sse(canned::chat_sse(
            &[report_text],
            &[("call_done", "CompleteWorkItem", &complete_args)],
        )),
        Canned::sse(canned::chat_sse(&["Finished."], &[])),
    ])
    .await;
    *slot.0.lock().unwrap_or_else(|e| e.into_inner()) = Some(stub_chain(&stub));

    let runner = host.clone();
    let run = tokio::spawn(async move {
        let req = AdmissionRequest::operator_prompt(
            "main",
            "write the marker file",
            Priority::Normal,
            DeliverySurface::RunOnce,
        );
        runner.run_once(req, Duration::from_secs(30)).await
    });
    wait_event(&host, "the prompt's admission", kind("message_admitted")).await;
    ok(host.control("main", ControlAction::Resume).await);
    let report = ok(ok(run.await));

    // The run: final text is the work item's same-round report, the raw
    // terminal text is the last assistant message.
    assert_eq!(report.outcome, RunOutcome::Completed, "{report:?}");
    assert_eq!(report.final_text, report_text);
    assert_eq!(report.raw_final_text, "Finished.");
    assert_eq!(
        report.completed_work_item_id.as_deref(),
        Some(item.id.as_str())
    );
    assert_eq!(
        report.turn_terminal.as_ref().map(|t| t["rounds"].clone()),
        Some(json!(3))
    );
    assert_eq!(report.token_usage.input_tokens, 90);
    assert_eq!(report.provider_attempt_timeline.attempts.len(), 3);

    // The command really ran in the agent's execution root.
    assert_eq!(
        ok(std::fs::read_to_string(home.join("out.txt"))),
        "e2e-marker\n"
    );

    // What went over the wire.
    let requests: Vec<Recorded> = stub.requests();
    assert_eq!(requests.len(), 3);
    for r in &requests {
        assert_eq!(r.path, "/v1/chat/completions");
        assert_eq!(r.body["model"], "e2e-model");
        assert_eq!(
            r.headers.get("authorization").map(String::as_str),
            Some("Bearer sk-e2e")
        );
        stub_provider::invariants::chat_pairing(&r.body);
    }
    let first = &requests[0].body;
    let system = first["messages"][0]["content"].as_str().unwrap_or_default();
    assert!(
        system.contains("e2e-guidance-marker"),
        "AGENTS.md in the prompt frame"
    );
    assert_eq!(
        system.matches("e2e-guidance-marker").count(),
        1,
        "included once"
    );
    let tools: Vec<&str> = first["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["function"]["name"].as_str())
        .collect();
    assert!(
        tools.contains(&"ExecCommand") && tools.contains(&"ApplyPatch"),
        "{tools:?}"
    );
    let exec_result: Value = ok(serde_json::from_str(tool_result(
        &requests[1].body,
        "call_exec",
    )));
    assert_eq!(exec_result["disposition"], "completed");
    assert_eq!(exec_result["exit_status"], 0);
    assert!(
        exec_result["stdout_preview"]
            .as_str()
            .unwrap_or_default()
            .contains("e2e-marker"),
        "{exec_result}"
    );
    let done: Value = ok(serde_json::from_str(tool_result(
        &requests[2].body,
        "call_done",
    )));
    assert_eq!(done["ok"], true);
    assert!(done["warning"].is_null(), "a same-round report: {done}");

    // And all of it as events, in order.
    let evs = events(&host);
    let exec = seq_of(&evs, |e| {
        e.kind == "tool_executed"
            && e.payload["tool_name"] == "ExecCommand"
            && e.payload["is_error"] == false
    });
    let completed = seq_of(&evs, |e| {
        e.kind == "work_item_completed" && e.payload["work_item"]["id"] == item.id.as_str()
    });
    let terminal = seq_of(&evs, |e| {
        e.kind == "turn_terminal"
            && e.payload["kind"] == "completed"
            && e.payload["last_assistant_message"] == "Finished."
    });
    let brief = evs
        .iter()
        .find(|e| e.kind == "brief_created")
        .expect("no brief");
    assert!(exec < completed && completed < terminal && terminal < brief.event_seq);
    assert_eq!(brief.payload["visibility"], "work_done");
    assert_eq!(brief.payload["brief"]["kind"], "result");
    assert_eq!(brief.payload["brief"]["work_item_id"], item.id.as_str());
    let started = evs
        .iter()
        .find(|e| e.kind == "turn_started")
        .expect("no turn_started");
    assert_eq!(started.payload["guidance"][0]["file_name"], "AGENTS.md");
    assert_eq!(
        started.payload["guidance"].as_array().map(Vec::len),
        Some(1)
    );
    let rx = ok(host.store().read());
    let stored: Option<WorkItemRecord> = ok(rx.get(Keyed::WorkItems, "main", &item.id));
    assert_eq!(
        stored.and_then(|w| w.result_summary).as_deref(),
        Some(report_text)
    );
    host.shutdown().await;
}

// ---- AGENTS.md and the watcher -------------------------------------------------

fn agent_home(r: &super::runtime_core::Rig) -> PathBuf {
    r._dir.path().join("data").join("agents").join("main")
}

fn reloads(host: &RuntimeHost) -> Vec<EventRecord> {
    events(host)
        .into_iter()
        .filter(|e| e.kind == "config_reloaded")
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agents_md_change_is_recorded_and_used_by_the_next_turn() {
    let r = rig(vec![Scripted::text("one"), Scripted::text("two")]).await;
    let home = agent_home(&r);
    ok(std::fs::write(home.join("AGENTS.md"), "first guidance"));
    let first = wait_event(&r.host, "the first AGENTS.md change", |e| {
        e.kind == "config_reloaded" && e.payload["loaded"][0]["bytes"] == 14
    })
    .await;
    assert_eq!(first.payload["source"], "agents_md");
    assert_eq!(first.payload["changed"], json!(["AGENTS.md"]));

    ok(r.host.submit(prompt("go", Priority::Normal)).await);
    wait_event(&r.host, "the first turn", kind("turn_terminal")).await;

    // Rewriting the same content and adding a CLAUDE.md (shadowed by
    // AGENTS.md) change nothing effective; the real change is recorded.
    ok(std::fs::write(home.join("AGENTS.md"), "first guidance"));
    ok(std::fs::write(
        home.join("CLAUDE.md"),
        "ignored while AGENTS.md exists",
    ));
    ok(std::fs::write(home.join("AGENTS.md"), "second guidance!"));
    wait_event(&r.host, "the second AGENTS.md change", |e| {
        e.kind == "config_reloaded" && e.payload["loaded"][0]["bytes"] == 16
    })
    .await;
    ok(r.host.submit(prompt("again", Priority::Normal)).await);
    wait_event(&r.host, "the second turn", |e| {
        e.kind == "turn_terminal" && e.payload["last_assistant_message"] == "two"
    })
    .await;
    assert_eq!(reloads(&r.host).len(), 2, "{:?}", reloads(&r.host));

    let requests = r.provider.requests();
    let guidance = |i: usize| -> Vec<String> {
        requests[i]
            .context_blocks
            .iter()
            .map(|b| b.text.clone())
            .filter(|t| t.contains("guidance ("))
            .collect()
    };
    assert_eq!(guidance(0).len(), 1);
    assert!(
        guidance(0)[0].ends_with("first guidance"),
        "{:?}",
        guidance(0)
    );
    assert!(
        guidance(1)[0].ends_with("second guidance!"),
        "{:?}",
        guidance(1)
    );

    // Without AGENTS.md the workspace falls back to CLAUDE.md.
    ok(std::fs::remove_file(home.join("AGENTS.md")));
    let fallback = wait_event(&r.host, "the fallback", |e| {
        e.kind == "config_reloaded" && e.payload["loaded"][0]["file_name"] == "CLAUDE.md"
    })
    .await;
    assert_eq!(fallback.payload["loaded"][0]["scope"], "workspace");

    // After shutdown the watcher is gone: changes are not recorded.
    r.host.shutdown().await;
    let before = reloads(&r.host).len();
    ok(std::fs::write(home.join("AGENTS.md"), "after shutdown"));
    tokio::time::sleep(holon::runtime::host::watch::DEBOUNCE * 4).await;
    assert_eq!(reloads(&r.host).len(), before);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_config_file_change_calls_the_reloader_and_is_recorded() {
    let dir = ok(tempfile::tempdir());
    let config_dir = dir.path().join("config");
    ok(std::fs::create_dir_all(&config_dir));
    let path = config_dir.join("config.toml");
    let calls = Arc::new(AtomicUsize::new(0));
    let seen = Arc::clone(&calls);
    let file = path.clone();
    let reload: ConfigReloader = Arc::new(move || {
        // Counted once read: the test's next write waits for the count.
        let text = std::fs::read_to_string(&file).map_err(|e| e.to_string())?;
        seen.fetch_add(1, Ordering::SeqCst);
        if text.contains("broken") {
            Err("config.toml:1:1: broken".to_owned())
        } else {
            let changed = match text.starts_with('#') {
                true => Vec::new(),
                false => vec!["model".to_owned()],
            };
            Ok(holon::runtime::handle::Reloaded {
                changed,
                mcp_servers: None,
                hooks: None,
                reviewer: None,
            })
        }
    });
    let store = ok(Store::open(
        &dir.path().join("s.redb"),
        StoreOptions::default(),
    ));
    let provider: Arc<dyn Provider> = Arc::new(
        holon::runtime::provider::scripted::ScriptedProvider::new(Vec::new()),
    );
    let mut config = HostConfig::new(
        dir.path().join("data"),
        Arc::new(move |_| Arc::clone(&provider)),
    );
    config.config_watch = Some(ConfigWatch {
        path: path.clone(),
        reload,
    });
    let host = ok(RuntimeHost::start(store, config).await);
    ok(host.create_agent("main").await);

    ok(std::fs::write(
        &path,
        "[model]\ndefault = \"openai/gpt-4.1\"\n",
    ));
    let e = wait_event(&host, "the config change", kind("config_reloaded")).await;
    assert_eq!(e.payload["source"], "config_file");
    assert_eq!(e.payload["changed"], json!(["model"]));
    assert_eq!(e.payload["applied"], true);
    assert_eq!(calls.load(Ordering::SeqCst), 1, "one reload for the burst");

    // A comment changes no setting: read again, recorded nowhere.
    ok(std::fs::write(&path, "# a comment\n"));
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while calls.load(Ordering::SeqCst) < 2 && std::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(calls.load(Ordering::SeqCst), 2, "the comment was read");

    ok(std::fs::write(&path, "broken"));
    let e = wait_event(&host, "the broken config", |e| {
        e.kind == "config_reloaded" && e.payload["applied"] == false
    })
    .await;
    assert_eq!(e.payload["error"], "config.toml:1:1: broken");
    assert_eq!(reloads(&host).len(), 2, "the comment was not recorded");

    // Mended back to what runs: nothing changed, but the error is over.
    ok(std::fs::write(&path, "# mended\n"));
    let e = wait_event(&host, "the mended config", |e| {
        e.kind == "config_reloaded"
            && e.payload["applied"] == true
            && e.payload["changed"] == json!([])
    })
    .await;
    assert!(e.payload["error"].is_null(), "{}", e.payload);
    assert_eq!(reloads(&host).len(), 3);
    host.shutdown().await;
}

// ---- holon run through the binary -----------------------------------------------

pub(super) fn run_json(out: &std::process::Output) -> Value {
    let text = String::from_utf8_lossy(&out.stdout);
    serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("bad JSON {text:?}: {e}\n{}", stderr(out)))
}

pub(super) async fn holon_run(
    home: &Home,
    envs: &[(&str, &str)],
    args: &[&str],
) -> std::process::Output {
    let mut cmd = tokio::process::Command::from(home.cmd());
    for var in [
        "OPENAI_API_KEY",
        "OPENAI_BASE_URL",
        "ANTHROPIC_API_KEY",
        "OPENROUTER_API_KEY",
    ] {
        cmd.env_remove(var);
    }
    cmd.envs(envs.iter().copied()).arg("run").args(args);
    ok(cmd.output().await)
}

fn agent_dir(home: &Path, agent: &str) -> PathBuf {
    home.join("data").join("agents").join(agent)
}

/// A run's environment for the stub provider at `base`.
fn stub_envs(base: &str) -> [(&'static str, &str); 3] {
    [
        ("HOLON_MODEL", "openai/gpt-default"),
        ("OPENAI_BASE_URL", base),
        ("OPENAI_API_KEY", "sk-run-e2e"),
    ]
}

/// The model writes the command a run's end names: its escapes and line
/// breaks reach the operator's terminal shown, never acted on, and cannot
/// forge a line of their own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hostile_stopped_command_is_named_on_one_escaped_line() {
    // JSON escapes: the model sends ESC, BEL and a line break.
    let cmd = r"sleep 30 # \u001b]0;pwned\u0007\nholon run: forged";
    let stub = StubServer::start(vec![
        Canned::json(
            200,
            canned::responses_json(
                "Starting it.",
                &[(
                    "call_1",
                    "ExecCommand",
                    &format!(r#"{{"cmd":"{cmd}","yield_time_ms":50}}"#),
                )],
            ),
        ),
        Canned::json(200, canned::responses_json("It runs on.", &[])),
    ])
    .await;
    let home = Home::new();
    let base = format!("{}/v1", stub.base());
    let out = holon_run(&home, &stub_envs(&base), &["start it"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let said = stderr(&out);
    assert!(said.contains("stopped `sleep 30 #"), "{said}");
    assert!(
        !said.contains('\u{1b}') && !said.contains('\u{7}'),
        "{said:?}"
    );
    assert!(
        !said.lines().any(|l| l.starts_with("holon run: forged")),
        "{said}"
    );
}

/// A command still running when a run ends is stopped with it, and the
/// run says so: on stderr, and in `--json`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn holon_run_says_which_running_commands_its_end_stopped() {
    for json in [false, true] {
        let stub = StubServer::start(vec![
            Canned::json(
                200,
                canned::responses_json(
                    "Starting it.",
                    &[(
                        "call_1",
                        "ExecCommand",
                        r#"{"cmd":"sleep 30","yield_time_ms":50}"#,
                    )],
                ),
            ),
            Canned::json(200, canned::responses_json("It runs on.", &[])),
        ])
        .await;
        let home = Home::new();
        let base = format!("{}/v1", stub.base());
        let envs = stub_envs(&base);
        let args: &[&str] = match json {
            true => &["--json", "start the server"],
            false => &["start the server"],
        };
        let out = holon_run(&home, &envs, args).await;
        assert!(out.status.success(), "{}", stderr(&out));
        match json {
            true => {
                let v = run_json(&out);
                assert_eq!(v["commands_stopped"][0]["cmd"], "sleep 30", "{v}");
            }
            false => {
                let said = stderr(&out);
                assert!(
                    said.contains("stopped `sleep 30`, still running when the run ended"),
                    "{said}"
                );
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn holon_run_json_runs_one_bounded_turn_through_the_binary() {
    let stub = StubServer::start(vec![
        Canned::json(
            200,
            canned::responses_json(
                "Creating the file.",
                &[(
                    "call_1",
                    "ExecCommand",
                    r#"{"cmd":"echo run-marker > run.txt; cat run.txt"}"#,
                )],
            ),
        ),
        Canned::json(
            200,
            canned::responses_json("The file says run-marker.", &[]),
        ),
    ])
    .await;
    let home = Home::new();
    let base = format!("{}/v1", stub.base());
    let envs = stub_envs(&base);
    // --model overrides HOLON_MODEL for this run's agent.
    let out = holon_run(
        &home,
        &envs,
        &["--json", "--model", "openai/gpt-e2e", "make the run file"],
    )
    .await;
    assert!(out.status.success(), "{}", stderr(&out));
    let v = run_json(&out);
    assert_eq!(v["final_text"], "The file says run-marker.");
    assert_eq!(v["raw_final_text"], "The file says run-marker.");
    assert_eq!(
        v["token_usage"],
        json!({"input_tokens": 22, "output_tokens": 14, "total_tokens": 36})
    );
    assert_eq!(
        v["provider_attempt_timeline"]["attempts"]
            .as_array()
            .map(Vec::len),
        Some(2)
    );
    assert_eq!(
        v["provider_attempt_timeline"]["winning_model_ref"],
        "openai/gpt-e2e"
    );
    assert!(v["failure_artifact"].is_null(), "{v}");
    assert_eq!(v["turn_terminal"]["kind"], "completed");
    assert_eq!(v["turn_terminal"]["rounds"], 2);
    assert_eq!(v["outcome"], "completed");
    let agent = v["agent_id"].as_str().unwrap_or_default().to_owned();
    assert!(agent.starts_with("run-") && agent.len() == 12, "{agent}");
    let message = v["message_id"].as_str().unwrap_or_default().to_owned();
    assert_eq!(v["turn_terminal"]["message_id"], message.as_str());

    // The command ran in the temporary agent's home, its result went back.
    assert_eq!(
        ok(std::fs::read_to_string(
            agent_dir(home.path(), &agent).join("run.txt")
        )),
        "run-marker\n"
    );
    let requests = stub.requests();
    assert_eq!(requests.len(), 2);
    for r in &requests {
        assert_eq!(r.path, "/v1/responses");
        assert_eq!(r.body["model"], "gpt-e2e");
        stub_provider::invariants::responses_pairing(&r.body);
    }
    let output = requests[1].body["input"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|i| i["type"] == "function_call_output" && i["call_id"] == "call_1")
        .and_then(|i| i["output"].as_str())
        .unwrap_or_default()
        .to_owned();
    assert!(output.contains("run-marker"), "{output}");

    // The ledger: a private agent, the prompt admitted as run_once, and
    // the agent archived afterwards.
    let ledger = super::support::json_lines(&home.ok(&["events", "--agent", &agent, "--json"]));
    let created = ledger
        .iter()
        .find(|e| e["kind"] == "agent_created")
        .expect("no agent_created");
    assert_eq!(created["payload"]["agent"]["visibility"], "private");
    let admitted = ledger
        .iter()
        .find(|e| e["kind"] == "message_admitted")
        .expect("no message_admitted");
    assert_eq!(admitted["provenance"]["delivery_surface"], "run_once");
    assert_eq!(admitted["payload"]["message"]["id"], message.as_str());
    assert!(ledger
        .iter()
        .any(|e| e["kind"] == "agent_archived" && e["payload"]["reason"] == "run_finished"));
    assert!(ledger
        .iter()
        .any(|e| e["kind"] == "model_override_changed" && e["payload"]["to"] == "openai/gpt-e2e"));
    let records: Vec<EventRecord> = ledger
        .iter()
        .map(|v| ok(serde_json::from_value(v.clone())))
        .collect();
    super::support::assert_typed(&records);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn holon_run_without_a_provider_fails_with_how_to_configure_one() {
    let home = Home::new();
    let out = holon_run(&home, &[], &["--json", "hello"]).await;
    assert!(!out.status.success());
    let v = run_json(&out);
    assert_eq!(v["outcome"], "failed");
    let summary = v["failure_artifact"]["summary"]
        .as_str()
        .unwrap_or_default();
    for hint in ["HOLON_MODEL", "OPENAI_API_KEY", "ANTHROPIC_API_KEY"] {
        assert!(summary.contains(hint), "{summary}");
    }
    assert_eq!(v["failure_artifact"]["kind"], "provider_not_configured");
    assert_eq!(v["turn_terminal"]["kind"], "aborted");

    // The human form: the failure on stderr, nothing on stdout.
    let out = holon_run(&home, &[], &["hello"]).await;
    assert!(!out.status.success());
    assert!(out.stdout.is_empty());
    assert!(
        stderr(&out).contains("No model provider is configured"),
        "{}",
        stderr(&out)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn holon_run_refuses_a_store_owned_by_another_runtime_and_unknown_agents() {
    let home = Home::new();
    home.ok(&["status"]);
    ok(std::fs::write(
        home.path().join("config/config.toml"),
        "[store]\nlock_wait_secs = 1\n",
    ));
    let held = ok(Store::open(&home.store_file(), StoreOptions::default()));
    let out = holon_run(&home, &[], &["hello"]).await;
    assert!(!out.status.success());
    let err = stderr(&out);
    // It waited for the lock first, as its own count of the wait says,
    // and says so once.
    assert!(
        err.contains("held by another Holon command, still after 1."),
        "{err}"
    );
    assert_eq!(err.matches("held by").count(), 1, "{err}");
    drop(held);

    let out = holon_run(&home, &[], &["--agent", "nobody", "hello"]).await;
    assert!(!out.status.success());
    assert!(stderr(&out).contains("--create-agent"), "{}", stderr(&out));
}

// ---- ApplyPatch inside a turn ----------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn apply_patch_edits_the_execution_root_all_or_nothing() {
    let good = "--- /dev/null\n+++ b/notes/plan.md\n@@ -0,0 +1,2 @@\n+# Plan\n+step one\n";
    let bad =
        "--- a/notes/plan.md\n+++ b/notes/plan.md\n@@ -1,2 +1,2 @@\n # Plan\n-step 1\n+step two\n\
               --- /dev/null\n+++ b/other.txt\n@@ -0,0 +1 @@\n+never\n";
    let r = rig(vec![
        Scripted::tools(
            "Writing the plan.",
            &[("ApplyPatch", json!({ "patch": good }))],
        ),
        Scripted::tools("Editing it.", &[("ApplyPatch", json!({ "patch": bad }))]),
        Scripted::text("Done."),
    ])
    .await;
    ok(r.host.submit(prompt("plan", Priority::Normal)).await);
    wait_event(&r.host, "the turn", kind("turn_terminal")).await;
    let home = agent_home(&r);
    assert_eq!(
        ok(std::fs::read_to_string(home.join("notes/plan.md"))),
        "# Plan\nstep one\n"
    );
    assert!(
        !home.join("other.txt").exists(),
        "nothing of the failed patch was written"
    );

    let patches: Vec<EventRecord> = events(&r.host)
        .into_iter()
        .filter(|e| e.kind == "tool_executed" && e.payload["tool_name"] == "ApplyPatch")
        .collect();
    assert_eq!(patches.len(), 2);
    assert_eq!(patches[0].payload["is_error"], false);
    let requests = r.provider.requests();
    let result = |i: usize| -> Value {
        requests[i]
            .conversation
            .iter()
            .rev()
            .find_map(|c| match c {
                holon::model::usage::ConversationItem::ToolResult { content, .. } => {
                    serde_json::from_str(content).ok()
                }
                _ => None,
            })
            .unwrap_or_else(|| panic!("no tool result in request {i}"))
    };
    let applied = result(1);
    assert_eq!(
        applied["files"],
        json!([{ "path": "notes/plan.md", "action": "created", "added": 2, "removed": 0 }])
    );
    assert_eq!(patches[1].payload["is_error"], true);
    let refused = result(2);
    assert_eq!(refused["ok"], false);
    assert_eq!(refused["kind"], "conflict");
    assert_eq!(refused["details"]["path"], "notes/plan.md");
    assert_eq!(refused["details"]["line"], 2);
    assert_eq!(refused["details"]["expected"], "step 1");
    assert_eq!(refused["details"]["found"], "step one");
}
