//! Runtime boundary and scenario tests: a real `RuntimeHost` on a real redb
//! file, real child processes, and the scripted provider in place of a
//! model. Each test waits on the event ledger (bounded), never on sleeps.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use holon::model::event::EventRecord;
use holon::model::message::{AdmissionRequest, DeliverySurface, Priority};
use holon::protocol::views::ControlAction;
use holon::runtime::handle::{HostConfig, RuntimeHost};
use holon::runtime::provider::scripted::{Scripted, ScriptedProvider};
use holon::runtime::provider::Provider;
use holon::runtime::RuntimeError;
use holon::store::{Store, StoreOptions};

pub struct Rig {
    /// Kept alive for the test's duration (the store lives in it).
    pub _dir: tempfile::TempDir,
    pub host: RuntimeHost,
    pub provider: Arc<ScriptedProvider>,
}

pub fn config(dir: &std::path::Path, provider: Arc<ScriptedProvider>) -> HostConfig {
    let p: Arc<dyn Provider> = provider;
    let mut c = HostConfig::new(dir.join("data"), Arc::new(move |_| Arc::clone(&p)));
    c.stop_grace = Duration::from_millis(300);
    // Commands run under the real holder, as in a daemon.
    c.holder = Some(env!("CARGO_BIN_EXE_holon").into());
    c
}

pub async fn rig(script: Vec<Scripted>) -> Rig {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("s.redb"), StoreOptions::default()).unwrap();
    let provider = Arc::new(ScriptedProvider::new(script));
    let host = RuntimeHost::start(store, config(dir.path(), Arc::clone(&provider)))
        .await
        .unwrap();
    host.create_agent("main").await.unwrap();
    Rig {
        _dir: dir,
        host,
        provider,
    }
}

pub fn prompt(text: &str, priority: Priority) -> AdmissionRequest {
    AdmissionRequest::operator_prompt("main", text, priority, DeliverySurface::CliPrompt)
}

/// The main agent's events; each is checked to read as its typed
/// payload (`support::assert_typed`) on the way.
pub fn events(host: &RuntimeHost) -> Vec<EventRecord> {
    let rx = host.store().read().unwrap();
    let evs = rx.events("main", 1, 100_000).unwrap();
    super::support::assert_typed(&evs);
    evs
}

/// Wait (bounded) until an event matching `pred` exists; return it.
pub async fn wait_event(
    host: &RuntimeHost,
    what: &str,
    pred: impl Fn(&EventRecord) -> bool,
) -> EventRecord {
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        if let Some(e) = events(host).into_iter().find(|e| pred(e)) {
            return e;
        }
        if Instant::now() > deadline {
            let kinds: Vec<String> = events(host)
                .iter()
                .map(|e| format!("{} {}", e.event_seq, e.kind))
                .collect();
            panic!(
                "timed out waiting for {what}; events:\n{}",
                kinds.join("\n")
            );
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

pub fn kind(k: &'static str) -> impl Fn(&EventRecord) -> bool {
    move |e| e.kind == k
}

/// Pause the agent, then create a work item and make it the focus: nothing
/// runs until the caller resumes.
async fn paused_with_focus(r: &Rig, objective: &str) -> holon::model::work::WorkItemRecord {
    r.host.control("main", ControlAction::Pause).await.unwrap();
    let req = holon::protocol::views::CreateWorkItem {
        objective: objective.into(),
        ..Default::default()
    };
    let item = r.host.create_work_item("main", req).await.unwrap();
    r.host.pick_work_item("main", &item.id).await.unwrap();
    item
}

fn decision(e: &EventRecord) -> &str {
    e.payload["decision"].as_str().unwrap_or("")
}

/// `until_idle` returns only when every wake was settled: a prompt
/// admitted just before it is fully handled (its turn ran, its brief
/// exists), and it returns at once when nothing is left to do.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn until_idle_waits_for_every_wake_to_be_settled() {
    let r = rig(vec![
        Scripted::text("first answer"),
        Scripted::text("second answer"),
    ])
    .await;
    let wait = std::time::Duration::from_secs(15);
    for (n, text) in ["one", "two"].into_iter().enumerate() {
        r.host.submit(prompt(text, Priority::Normal)).await.unwrap();
        tokio::time::timeout(wait, r.host.until_idle())
            .await
            .expect("the runtime never went idle");
        let briefs = events(&r.host)
            .into_iter()
            .filter(|e| e.kind == "brief_created")
            .count();
        assert_eq!(briefs, n + 1, "the turn for {text:?} ran before idle");
    }
    // Nothing left: it answers at once, however often it is asked.
    for _ in 0..3 {
        tokio::time::timeout(std::time::Duration::from_secs(1), r.host.until_idle())
            .await
            .expect("idle, yet until_idle waited");
    }
}

/// Held for a hand-over, a runtime starts no turn: the prompt stays
/// queued, durable, for the runtime that takes over.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn held_turns_leave_a_prompt_queued_for_the_next_runtime() {
    let r = rig(vec![Scripted::text("not now")]).await;
    r.host.hold_turns();
    r.host
        .submit(prompt("later", Priority::Normal))
        .await
        .unwrap();
    tokio::time::timeout(std::time::Duration::from_secs(15), r.host.until_idle())
        .await
        .expect("the runtime never went idle");
    let evs = events(&r.host);
    assert!(evs.iter().any(|e| e.kind == "message_admitted"));
    assert!(
        !evs.iter().any(|e| e.kind == "turn_started"),
        "a turn started"
    );
    assert_eq!(r.provider.requests().len(), 0);
    let rx = r.host.store().read().unwrap();
    assert_eq!(
        rx.queue_pending("main").unwrap().len(),
        1,
        "the prompt is not queued"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_operator_prompt_runs_one_turn_and_leaves_a_result_brief() {
    let r = rig(vec![Scripted::text("All done: nothing needed.")]).await;
    let admitted = r
        .host
        .submit(prompt("say hi", Priority::Normal))
        .await
        .unwrap();
    let brief = wait_event(&r.host, "brief", kind("brief_created")).await;
    assert_eq!(brief.payload["brief"]["text"], "All done: nothing needed.");
    assert_eq!(brief.payload["brief"]["kind"], "result");
    assert_eq!(brief.payload["visibility"], "turn_result");
    wait_event(&r.host, "sleep decision", |e| {
        e.kind == "scheduler_decision" && decision(e) == "Sleep" && e.event_seq > brief.event_seq
    })
    .await;
    let all = events(&r.host);
    let seq = |pred: &dyn Fn(&EventRecord) -> bool| {
        all.iter()
            .find(|e| pred(e))
            .map(|e| e.event_seq)
            .unwrap_or(0)
    };
    let decided = seq(&|e| e.kind == "scheduler_decision" && decision(e) == "StartModelTurn");
    let started = seq(&|e| e.kind == "message_processing_started");
    let processed = seq(&|e| e.kind == "message_processed");
    let terminal = seq(&|e| e.kind == "turn_terminal");
    assert!(
        decided > 0 && decided < started,
        "decision recorded before the dequeue"
    );
    assert!(
        started < terminal && terminal < processed || processed <= terminal,
        "turn terminal recorded"
    );
    let start = all
        .iter()
        .find(|e| e.kind == "scheduler_decision" && decision(e) == "StartModelTurn");
    assert_eq!(
        start.map(|e| e.payload["message_id"].clone()),
        Some(json!(admitted.message_id))
    );
    // The request carried the operator's text with its provenance label.
    let req = r.provider.requests();
    let first = serde_json::to_string(&req[0].conversation).unwrap_or_default();
    assert!(first.contains("[operator] say hi"), "{first}");
    assert!(req[0].tools.iter().any(|t| t.name == "CreateWorkItem"));
    assert!(
        !req[0].tools.iter().any(|t| t.name == "SystemTick"),
        "SystemTick is never a tool"
    );
    let status = r
        .host
        .store()
        .read()
        .and_then(|rx| rx.agent::<Value>("main"))
        .unwrap_or_default()
        .unwrap_or_default();
    assert_eq!(status["status"], "asleep");
    assert_eq!(status["turn_in_progress"], false);
    r.host.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn work_items_flow_through_tools_and_continue_active_ticks() {
    // The id the runtime creates is read back from the request's work-queue
    // context, as a model would.
    fn work_id(req: &holon::runtime::provider::ProviderRequest) -> String {
        let ctx: String = req.context_blocks.iter().map(|b| b.text.clone()).collect();
        ctx.split_whitespace()
            .find(|w| w.starts_with("work_"))
            .unwrap_or("missing")
            .to_owned()
    }
    let r = rig(vec![
        Scripted::tools(
            "",
            &[("CreateWorkItem", json!({"objective": "write the report"}))],
        ),
        Scripted::text("Created the work item."),
        // The queued_available tick turn picks it and completes it with a
        // same-round report.
        Scripted::With(Arc::new(|req| {
            Scripted::tools(
                "",
                &[("PickWorkItem", json!({"work_item_id": work_id(req)}))],
            )
        })),
        Scripted::With(Arc::new(|req| {
            Scripted::tools(
                "Report written to report.md.",
                &[("CompleteWorkItem", json!({"work_item_id": work_id(req)}))],
            )
        })),
        Scripted::text(""),
    ])
    .await;
    r.host
        .submit(prompt("plan the report", Priority::Normal))
        .await
        .unwrap();
    let created = wait_event(&r.host, "work item", kind("work_item_created")).await;
    let wid = created.payload["work_item"]["id"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    // Not current: the scheduler offers it as queued work, without focusing it.
    let tick = wait_event(&r.host, "queued_available tick", |e| {
        e.kind == "system_tick_emitted"
    })
    .await;
    assert_eq!(tick.payload["reason"], "queued_available");
    assert_eq!(
        tick.payload["idempotency_key"],
        format!("work_queue:queued_available:{wid}:1")
    );
    let done = wait_event(&r.host, "work_done brief", |e| {
        e.kind == "brief_created" && e.payload["visibility"] == "work_done"
    })
    .await;
    assert_eq!(done.payload["brief"]["work_item_id"], json!(wid));
    let completed = wait_event(&r.host, "completed", kind("work_item_completed")).await;
    assert_eq!(
        completed.payload["work_item"]["result_summary"],
        "Report written to report.md."
    );
    assert_eq!(completed.payload["work_item"]["state"], "completed");
    wait_event(&r.host, "sleep", |e| {
        e.kind == "scheduler_decision"
            && decision(e) == "Sleep"
            && e.event_seq > completed.event_seq
    })
    .await;
    // The queued tick never changed focus by itself.
    let picks: Vec<_> = events(&r.host)
        .into_iter()
        .filter(|e| e.kind == "work_item_picked")
        .collect();
    assert_eq!(picks.len(), 1);
    assert_eq!(picks[0].payload["source"], "tool");
    r.host.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tick_for_the_same_revision_is_not_emitted_twice() {
    let r = rig(vec![Scripted::text("looked at it, nothing to do yet")]).await;
    // Set up while paused so no queued_available tick slips in before the pick.
    let item = paused_with_focus(&r, "watch").await;
    r.host.control("main", ControlAction::Resume).await.unwrap();
    wait_event(&r.host, "continue tick", |e| {
        e.kind == "system_tick_emitted" && e.payload["reason"] == "continue_active"
    })
    .await;
    let sleep = wait_event(&r.host, "suppressed then sleep", |e| {
        e.kind == "scheduler_decision"
            && decision(e) == "Sleep"
            && e.payload["evidence"]
                .to_string()
                .contains("duplicate_tick_suppressed")
    })
    .await;
    assert!(sleep.payload["evidence"]
        .to_string()
        .contains(&format!("work_queue:continue_active:{}:1", item.id)));
    let ticks = events(&r.host)
        .iter()
        .filter(|e| e.kind == "system_tick_emitted")
        .count();
    assert_eq!(ticks, 1);
    // A new revision is new work: one more tick.
    r.provider.push(Scripted::text("ok"));
    r.host
        .update_work_item(
            "main",
            holon::protocol::views::UpdateWorkItem {
                work_item_id: item.id.clone(),
                objective: Some("watch closely".into()),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    wait_event(&r.host, "second tick", |e| {
        e.kind == "system_tick_emitted"
            && e.payload["idempotency_key"] == format!("work_queue:continue_active:{}:2", item.id)
    })
    .await;
    r.host.until_idle().await;
    // Only the newest revision's key is kept, and a completed item's go.
    let keys = || {
        let rx = r.host.store().read().unwrap();
        rx.index_list(holon::store::Index::TickKeys, "main")
            .unwrap()
    };
    assert_eq!(
        keys(),
        [format!("work_queue:continue_active:{}:2", item.id)]
    );
    r.host
        .complete_work_item("main", &item.id, None)
        .await
        .unwrap();
    assert!(keys().is_empty(), "{:?}", keys());
    r.host.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exec_command_runs_inline_or_promotes_and_rejoins_after_terminal() {
    let r = rig(vec![
        Scripted::tools("", &[("ExecCommand", json!({"cmd": "echo hello-inline"}))]),
        Scripted::tools(
            "",
            &[(
                "ExecCommand",
                json!({"cmd": "sleep 0.8; echo slow-done", "yield_time_ms": 50}),
            )],
        ),
        Scripted::text("started the slow one"),
        Scripted::text("the slow command finished"),
    ])
    .await;
    r.host
        .submit(prompt("run things", Priority::Normal))
        .await
        .unwrap();
    let queued = wait_event(&r.host, "task result queued", kind("task_result_queued")).await;
    wait_event(&r.host, "second brief", |e| {
        e.kind == "brief_created" && e.payload["brief"]["text"] == "the slow command finished"
    })
    .await;
    let all = events(&r.host);
    let tools: Vec<&EventRecord> = all.iter().filter(|e| e.kind == "tool_executed").collect();
    let first = tools[0].payload["result_preview"]
        .as_str()
        .unwrap_or_default();
    assert!(
        first.contains("\"disposition\":\"completed\"") && first.contains("hello-inline"),
        "{first}"
    );
    let second = tools[1].payload["result_preview"]
        .as_str()
        .unwrap_or_default();
    assert!(second.contains("promoted_to_task"), "{second}");
    // Terminal persisted strictly before the result was queued.
    let task_id = queued.payload["task_id"].as_str().unwrap_or_default();
    let terminal = all
        .iter()
        .find(|e| {
            e.kind == "task_status_changed"
                && e.payload["task_id"] == task_id
                && e.payload["to"] == "completed"
        })
        .map(|e| e.event_seq)
        .unwrap_or(u64::MAX);
    assert!(
        terminal < queued.event_seq,
        "terminal {terminal} before result {}",
        queued.event_seq
    );
    assert!(
        all.iter()
            .filter(|e| e.kind == "task_result_queued")
            .count()
            == 1,
        "the inline command did not re-enter"
    );
    let last_req = r
        .provider
        .requests()
        .pop()
        .map(|r| serde_json::to_string(&r.conversation).unwrap_or_default())
        .unwrap_or_default();
    assert!(
        last_req.contains("slow-done"),
        "the result reached the model: {last_req}"
    );
    // The turn that handed the command off acknowledged; the turn after
    // its result rejoined reported the result.
    let briefs: Vec<&EventRecord> = all.iter().filter(|e| e.kind == "brief_created").collect();
    let ack = briefs
        .iter()
        .find(|e| e.payload["brief"]["text"] == "started the slow one")
        .expect("no brief for the first turn");
    assert_eq!(ack.payload["brief"]["kind"], "ack");
    assert_eq!(ack.payload["brief"]["awaiting_task_ids"], json!([task_id]));
    let result = briefs
        .iter()
        .find(|e| e.payload["brief"]["text"] == "the slow command finished")
        .expect("no brief for the second turn");
    assert_eq!(result.payload["brief"]["kind"], "result");
    r.host.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn paused_agents_queue_but_start_no_turn_and_stopped_agents_refuse() {
    let r = rig(vec![Scripted::text("resumed and answered")]).await;
    r.host.control("main", ControlAction::Pause).await.unwrap();
    r.host
        .submit(prompt("while paused", Priority::Normal))
        .await
        .unwrap();
    wait_event(&r.host, "paused noop", |e| {
        e.kind == "scheduler_decision" && decision(e) == "Noop" && e.payload["reason"] == "paused"
    })
    .await;
    r.host.until_idle().await;
    assert!(
        !events(&r.host).iter().any(|e| e.kind == "turn_started"),
        "no turn while paused"
    );
    r.host.control("main", ControlAction::Resume).await.unwrap();
    wait_event(&r.host, "brief after resume", kind("brief_created")).await;

    r.host.control("main", ControlAction::Stop).await.unwrap();
    match r.host.submit(prompt("after stop", Priority::Normal)).await {
        Err(e @ RuntimeError::AgentStopped { .. }) => {
            assert!(e.to_string().contains("resume"), "{e}")
        }
        other => panic!("expected a stopped refusal, got {other:?}"),
    }
    match r.host.control("main", ControlAction::Wake).await {
        Err(RuntimeError::AgentStopped { .. }) => {}
        other => panic!("wake must not cross stopped: {other:?}"),
    }
    let rejected = wait_event(&r.host, "rejection recorded", kind("message_rejected")).await;
    assert_eq!(rejected.payload["reason"], "agent_stopped");
    wait_event(&r.host, "stop decision", |e| {
        e.kind == "scheduler_decision" && decision(e) == "Stop"
    })
    .await;
    r.host.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wake_hints_outrank_runnable_work_and_coalesce() {
    let r = rig(vec![]).await;
    paused_with_focus(&r, "runnable").await;
    let first = r
        .host
        .wake_hint("main", "ci finished", Some("ci".into()), None)
        .await
        .unwrap();
    let second = r
        .host
        .wake_hint("main", "ci finished again", Some("ci".into()), None)
        .await
        .unwrap();
    assert_eq!(format!("{first:?} {second:?}"), "Submitted Coalesced");
    r.provider.push(Scripted::text("checked ci"));
    r.provider.push(Scripted::text("continued"));
    r.host.control("main", ControlAction::Resume).await.unwrap();
    let tick = wait_event(&r.host, "first tick", kind("system_tick_emitted")).await;
    assert_eq!(
        tick.payload["reason"], "wake_hint",
        "wake hint before continue_active"
    );
    wait_event(&r.host, "continue tick after", |e| {
        e.kind == "system_tick_emitted" && e.payload["reason"] == "continue_active"
    })
    .await;
    let hints = events(&r.host)
        .iter()
        .filter(|e| e.kind == "system_tick_emitted" && e.payload["reason"] == "wake_hint")
        .count();
    assert_eq!(hints, 1, "two hints coalesced into one tick");
    r.host.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sleep_with_duration_wakes_on_its_timer() {
    let r = rig(vec![
        Scripted::tools(
            "resting a moment",
            &[("Sleep", json!({"duration_ms": 150}))],
        ),
        Scripted::text("awake again"),
    ])
    .await;
    r.host
        .submit(prompt("nap", Priority::Normal))
        .await
        .unwrap();
    wait_event(&r.host, "wait for timer", |e| {
        e.kind == "scheduler_decision" && decision(e) == "WaitForTimer"
    })
    .await;
    let fired = wait_event(&r.host, "timer fired", kind("timer_fired")).await;
    let brief = wait_event(&r.host, "brief after timer", |e| {
        e.kind == "brief_created" && e.payload["brief"]["text"] == "awake again"
    })
    .await;
    assert!(brief.event_seq > fired.event_seq);
    // A fired timer leaves the active set: reads stay proportional to
    // the timers still waiting, not to every Sleep ever taken.
    let rx = r.host.store().read().unwrap();
    assert!(rx
        .index_list(holon::store::Index::ActiveTimers, "main")
        .unwrap_or_default()
        .is_empty());
    drop(rx);
    let status = {
        use holon::protocol::{call_json, Request};
        let request = Request::AgentStatus {
            agent_id: "main".into(),
        };
        call_json(&r.host, request).await.unwrap()
    };
    assert_eq!(status["timers_active"], 0);
    r.host.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_asleep_agent_says_when_it_wakes() {
    let r = rig(vec![Scripted::tools(
        "resting an hour",
        &[("Sleep", json!({"duration_ms": 3_600_000}))],
    )])
    .await;
    let before = holon::now_ms();
    r.host
        .submit(prompt("nap", Priority::Normal))
        .await
        .unwrap();
    wait_event(&r.host, "wait for timer", |e| {
        e.kind == "scheduler_decision" && decision(e) == "WaitForTimer"
    })
    .await;
    let status = {
        use holon::protocol::{call_json, Request};
        let request = Request::AgentStatus {
            agent_id: "main".into(),
        };
        call_json(&r.host, request).await.unwrap()
    };
    assert_eq!(status["status"], "asleep", "{status}");
    let until = status["sleeping_until"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    // Timestamps of one shape sort as text.
    let (earliest, latest) = (
        holon::format_ts(before + 3_600_000),
        holon::format_ts(holon::now_ms() + 3_600_000 + 1_000),
    );
    assert!(until >= earliest && until < latest, "{until}");
    // What it was given and how the scheduler took it.
    assert_eq!(status["total_message_count"], 1, "{status}");
    let last = &status["last_continuation"];
    assert_eq!(last["class"], "local_continuation", "{status}");
    assert_eq!(last["model_visible"], true);
    assert_eq!(last["message_kind"], "operator_prompt");
    assert!(last["message_id"]
        .as_str()
        .is_some_and(|m| m.starts_with("msg")));
    r.host.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn interject_prompts_join_the_running_turn_at_a_safe_point() {
    let r = rig(vec![
        Scripted::Delay(
            Duration::from_millis(300),
            Box::new(Scripted::tools("", &[("AgentGet", json!({}))])),
        ),
        Scripted::text("handled both"),
    ])
    .await;
    r.host
        .submit(prompt("long task", Priority::Normal))
        .await
        .unwrap();
    wait_event(&r.host, "turn started", kind("turn_started")).await;
    let inter = r
        .host
        .submit(prompt("also check the logs", Priority::Interject))
        .await
        .unwrap();
    let e = wait_event(&r.host, "interjected", kind("message_interjected")).await;
    assert_eq!(e.payload["message_id"], json!(inter.message_id));
    wait_event(&r.host, "brief", kind("brief_created")).await;
    let reqs = r.provider.requests();
    let last = serde_json::to_string(&reqs[reqs.len() - 1].conversation).unwrap_or_default();
    assert!(last.contains("also check the logs"), "{last}");
    // Only one turn: the interjected prompt is not processed again.
    let turns = events(&r.host)
        .iter()
        .filter(|e| e.kind == "turn_started")
        .count();
    assert_eq!(turns, 1);
    r.host.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn provider_failures_are_visible_failure_briefs_and_runtime_errors() {
    let r = rig(vec![Scripted::Fail(
        holon::model::usage::FailureKind::AuthFailed,
        "openai/gpt: authentication failed (401)".into(),
    )])
    .await;
    r.host
        .submit(prompt("try", Priority::Normal))
        .await
        .unwrap();
    let brief = wait_event(&r.host, "failure brief", kind("brief_created")).await;
    assert_eq!(brief.payload["brief"]["kind"], "failure");
    assert!(brief.payload["brief"]["text"]
        .as_str()
        .unwrap_or_default()
        .contains("401"));
    let err = wait_event(&r.host, "runtime error", kind("runtime_error")).await;
    assert_eq!(err.payload["failure_artifact"]["category"], "transport");
    assert!(err.payload["provider_attempt_timeline"]["attempts"].is_array());
    r.host.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn completing_work_is_not_blocked_by_an_unrelated_running_task() {
    let r = rig(vec![]).await;
    let item = paused_with_focus(&r, "ship it").await;
    let task = r
        .host
        .run_operator_command("main", "sleep 5")
        .await
        .unwrap();
    let id = item.id.clone();
    r.provider.push(Scripted::tools(
        "Shipped.",
        &[("CompleteWorkItem", json!({"work_item_id": id}))],
    ));
    r.provider.push(Scripted::text(""));
    r.host.control("main", ControlAction::Resume).await.unwrap();
    let done = wait_event(&r.host, "completed", kind("work_item_completed")).await;
    assert_eq!(done.payload["work_item"]["id"], json!(item.id));
    // The unrelated task was still running throughout.
    let rx = r.host.store().read().unwrap();
    let t: Value = rx
        .get(holon::store::Keyed::Tasks, "main", &task.id)
        .unwrap_or_default()
        .unwrap_or_default();
    assert_eq!(t["status"], "running");
    drop(rx);
    let stopped = r.host.stop_task("main", &task.id).await.unwrap();
    assert!(matches!(
        stopped.status,
        holon::model::task::TaskStatus::Cancelling | holon::model::task::TaskStatus::Cancelled
    ));
    wait_event(&r.host, "cancelled", |e| {
        e.kind == "task_status_changed" && e.payload["to"] == "cancelled"
    })
    .await;
    r.host.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn agent_state_serves_the_plan_preview_of_open_work() {
    use holon::protocol::Request;
    let r = rig(vec![]).await;
    r.host.control("main", ControlAction::Pause).await.unwrap();
    let plan = format!("# Plan\n\n1. measure\n2. fix\n{}", "x".repeat(3000));
    let req = holon::protocol::views::CreateWorkItem {
        objective: "speed up the build".into(),
        plan: Some(plan.clone()),
        ..Default::default()
    };
    let item = r.host.create_work_item("main", req).await.unwrap();
    let request = Request::AgentState {
        agent_id: "main".into(),
    };
    let state = holon::protocol::call_json(&r.host, request).await.unwrap();
    let w = state["work_items"]
        .as_array()
        .and_then(|a| a.iter().find(|w| w["id"] == item.id.as_str()))
        .cloned()
        .unwrap_or_default();
    let preview = w["plan_preview"].as_str().unwrap_or_default();
    assert!(preview.starts_with("# Plan\n\n1. measure"), "{preview}");
    assert_eq!(preview.chars().count(), 2000, "bounded");
    assert_eq!(w["plan_preview_complete"], false);
    assert!(w["plan_path"]
        .as_str()
        .unwrap_or_default()
        .ends_with("plan.md"));
    r.host.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_in_turn_history_matches_what_the_transcript_rebuilds() {
    use holon::model::usage::ConversationItem;
    let r = rig(vec![
        Scripted::tools("checking", &[("AgentGet", json!({}))]),
        Scripted::text("done one"),
        Scripted::text("done two"),
    ])
    .await;
    r.host
        .submit(prompt("first", Priority::Normal))
        .await
        .unwrap();
    wait_event(&r.host, "first brief", |e| {
        e.kind == "brief_created" && e.payload["brief"]["text"] == "done one"
    })
    .await;
    r.host
        .submit(prompt("second", Priority::Normal))
        .await
        .unwrap();
    wait_event(&r.host, "second brief", |e| {
        e.kind == "brief_created" && e.payload["brief"]["text"] == "done two"
    })
    .await;
    let reqs = r.provider.requests();
    assert_eq!(reqs.len(), 3);
    // Round 2 of turn 1 was built in memory; turn 2 from the transcript.
    let mut expected = reqs[1].conversation.clone();
    expected.push(ConversationItem::AssistantRound {
        reasoning: Vec::new(),
        text: "done one".into(),
        tool_calls: Vec::new(),
    });
    expected.push(ConversationItem::UserText {
        text: "[operator] second".into(),
    });
    assert_eq!(reqs[2].conversation, expected);
    r.host.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_operator_command_can_be_answered_on_its_stdin() {
    let r = rig(vec![]).await;
    let task = r
        .host
        .run_operator_command("main", "read answer; echo got:$answer")
        .await
        .unwrap();
    let receipt = r.host.task_input("main", &task.id, "yes\n").await.unwrap();
    assert!(receipt.accepted_input, "{receipt:?}");
    let done = wait_event(&r.host, "the command's end", |e| {
        e.kind == "task_status_changed"
            && e.payload["task_id"] == task.id.as_str()
            && e.payload["to"] == "completed"
    })
    .await;
    let preview = done.payload["output_preview"].as_str().unwrap_or_default();
    assert!(preview.contains("got:yes"), "{}", done.payload);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deep_queue_is_counted_whole_but_only_its_head_is_read_for_a_decision() {
    let r = rig(vec![Scripted::text("first one handled")]).await;
    r.host.control("main", ControlAction::Pause).await.unwrap();
    let n = holon::runtime::projection::QUEUE_HEAD + 44;
    let mut first = None;
    for i in 0..n {
        let a = r
            .host
            .submit(prompt(&format!("queued {i}"), Priority::Normal))
            .await
            .unwrap();
        first.get_or_insert(a.message_id);
    }
    // An interjection admitted last still comes first.
    let urgent = r
        .host
        .submit(prompt("urgent", Priority::Interject))
        .await
        .unwrap();
    let rx = r.host.store().read().unwrap();
    let live = holon::runtime::projection::load(&rx, "main", 0)
        .unwrap()
        .expect("no agent");
    let p = &live.projection;
    assert_eq!(
        p.replay_message_ids.len(),
        n + 1,
        "every queued message is counted"
    );
    assert_eq!(
        p.pending_inputs().len(),
        holon::runtime::projection::QUEUE_HEAD
    );
    assert_eq!(p.pending_inputs()[0].message_id, urgent.message_id);
    assert_eq!(
        p.pending_inputs()[1].message_id,
        first.clone().unwrap_or_default()
    );
    assert_eq!(
        p.posture().reason,
        format!("{} queued messages (paused)", n + 1)
    );
}

/// TaskStop with `force` kills a task that ignores being asked (TERM) at
/// once, without the grace period an asked stop waits; its receipt says
/// force was asked.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forced_task_stop_kills_a_task_that_ignores_term_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("s.redb"), StoreOptions::default()).unwrap();
    let provider = Arc::new(ScriptedProvider::new(vec![
        Scripted::tools(
            "",
            &[(
                "ExecCommand",
                json!({"cmd": "trap '' TERM; echo ready; sleep 60", "yield_time_ms": 50}),
            )],
        ),
        Scripted::text("started"),
    ]));
    let mut c = config(dir.path(), Arc::clone(&provider));
    // An asked stop would wait longer than this test does.
    c.stop_grace = Duration::from_secs(600);
    let host = RuntimeHost::start(store, c).await.unwrap();
    host.create_agent("main").await.unwrap();
    host.submit(prompt("run it", Priority::Normal))
        .await
        .unwrap();
    let created = wait_event(&host, "the task", |e| e.kind == "task_created").await;
    let task_id = created.payload["task"]["id"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(!task_id.is_empty(), "{}", created.payload);
    wait_event(&host, "the task running", |e| {
        e.kind == "task_status_changed"
            && e.payload["task_id"] == task_id.as_str()
            && e.payload["to"] == "running"
    })
    .await;
    host.stop_task_as("main", &task_id, holon::runtime::operator::StopHow::Force)
        .await
        .unwrap();
    let ended = wait_event(&host, "the task ended", |e| {
        e.kind == "task_status_changed"
            && e.payload["task_id"] == task_id.as_str()
            && matches!(
                e.payload["to"].as_str(),
                Some("cancelled" | "failed" | "interrupted")
            )
    })
    .await;
    assert_eq!(ended.payload["to"], "cancelled", "{}", ended.payload);
    host.shutdown().await;
}

/// TaskOutput's envelope is the contract's: path-only `artifacts` with
/// `output_artifact` indexing the output among them, the ended task's
/// `result_summary`, and a failed task's `failure_artifact`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn task_output_carries_artifacts_result_summary_and_failure_artifact() {
    let r = rig(vec![
        Scripted::tools(
            "",
            &[(
                "ExecCommand",
                json!({"cmd": "sleep 0.4; echo out-marker; exit 3", "yield_time_ms": 50}),
            )],
        ),
        Scripted::text("started"),
    ])
    .await;
    r.host
        .submit(prompt("run it", Priority::Normal))
        .await
        .unwrap();
    let created = wait_event(&r.host, "the task", |e| e.kind == "task_created").await;
    let task_id = created.payload["task"]["id"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    // When its result wakes the agent, the model reads the output.
    r.provider.push(Scripted::tools(
        "",
        &[("TaskOutput", json!({ "task_id": task_id }))],
    ));
    r.provider.push(Scripted::text("read it"));
    let read = wait_event(&r.host, "TaskOutput ran", |e| {
        e.kind == "tool_executed" && e.payload["tool_name"] == "TaskOutput"
    })
    .await;
    let preview = read.payload["result_preview"].as_str().unwrap_or_default();
    for said in [
        "\"artifacts\":[{\"kind\":\"task_output\"",
        "\"output_artifact\":0",
        "\"failure_artifact\":{",
        "\"exit_status\":3",
    ] {
        assert!(preview.contains(said), "{said} in {preview}");
    }
    // What the model was given whole, in its next request.
    wait_event(&r.host, "the reading turn's end", |e| {
        e.kind == "brief_created" && e.payload["brief"]["text"] == "read it"
    })
    .await;
    let given = serde_json::to_string(&r.provider.requests()).unwrap_or_default();
    assert!(
        given.contains("result_summary\\\":\\\"exit status 3"),
        "{given}"
    );
    // Stopping it now stops nothing, and says so; input to it is a
    // failed call.
    r.provider.push(Scripted::tools(
        "",
        &[
            ("TaskStop", json!({ "task_id": task_id })),
            ("TaskInput", json!({ "task_id": task_id, "input": "y\n" })),
        ],
    ));
    r.provider.push(Scripted::text("stopped?"));
    r.host
        .submit(prompt("stop it", Priority::Normal))
        .await
        .unwrap();
    let stop = wait_event(&r.host, "TaskStop ran", |e| {
        e.kind == "tool_executed" && e.payload["tool_name"] == "TaskStop"
    })
    .await;
    let preview = stop.payload["result_preview"].as_str().unwrap_or_default();
    assert!(preview.contains("\"stop_requested\":false"), "{preview}");
    assert!(preview.contains("already ended (failed)"), "{preview}");
    let input = wait_event(&r.host, "TaskInput ran", |e| {
        e.kind == "tool_executed" && e.payload["tool_name"] == "TaskInput"
    })
    .await;
    assert_eq!(input.payload["is_error"], true, "{}", input.payload);
    let preview = input.payload["result_preview"].as_str().unwrap_or_default();
    assert!(preview.contains("\"accepted_input\":false"), "{preview}");
}
