//! Realistic events for the console tests, built the way the runtime
//! writes them (real record types where the runtime serialises one), and
//! helpers to drive a console through `update` and render it.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::backend::TestBackend;
use ratatui::Terminal;
use serde_json::{json, Value};

use super::super::msg::{Connection, Effect, Msg, RequestId};
use super::super::{update, view, Init, State};
use crate::model::agent::AgentStatus;
use crate::model::agent::DisplayMode as StoredMode;
use crate::model::event::Provenance;
use crate::model::message::{normalize, AdmissionRequest, DeliverySurface, Priority};
use crate::model::task::TaskKind;
use crate::model::task::TaskRecord;
use crate::model::task::TaskStatus;
use crate::model::task::WaitPolicy;
use crate::model::usage::FailureArtifact;
use crate::model::usage::FailureCategory;
use crate::model::work::{PlanStatus, TodoItem, TodoState, WorkItemRecord, WorkItemState};
use crate::protocol::{AgentState, AgentSummary, ApiError, EventRecord, Response, WorkItemEntry};

/// 2026-11-22T09:00:00Z in epoch ms.
pub const T0_MS: i64 = 1_795_338_000_000;

pub fn ts(secs: u64) -> String {
    let (h, m, s) = (9 + secs / 3600, (secs / 60) % 60, secs % 60);
    format!("2026-11-22T{h:02}:{m:02}:{s:02}.000Z")
}

/// An agent's ledger being written, one event at a time.
#[derive(Default)]
pub struct Script {
    pub events: Vec<EventRecord>,
    pub clock: u64,
}

impl Script {
    pub fn seq(&self) -> u64 {
        self.events.len() as u64
    }

    /// Advance the clock by `secs`.
    pub fn wait(&mut self, secs: u64) -> &mut Self {
        self.clock += secs;
        self
    }

    pub fn now_ms(&self) -> i64 {
        T0_MS + self.clock as i64 * 1000
    }

    pub fn push(&mut self, kind: &str, mid: Option<&str>, payload: Value) -> EventRecord {
        self.clock += 1;
        let seq = self.seq() + 1;
        let e = EventRecord {
            event_seq: seq,
            id: format!("evt_{seq:04}"),
            ts: ts(self.clock),
            kind: kind.into(),
            agent_id: "main".into(),
            provenance: Provenance {
                message_id: mid.map(str::to_owned),
                ..Provenance::default()
            },
            payload,
        };
        self.events.push(e.clone());
        e
    }

    pub fn prompt(&mut self, mid: &str, text: &str) -> EventRecord {
        let req = AdmissionRequest::operator_prompt(
            "main",
            text,
            Priority::Normal,
            DeliverySurface::HttpControlPrompt,
        );
        let envelope = normalize(req, mid.into(), ts(self.clock + 1));
        let payload = json!({ "message": envelope, "queue_status": "queued", "admission_seq": self.seq() + 1 });
        self.push("message_admitted", Some(mid), payload)
    }

    pub fn decision(
        &mut self,
        decision: &str,
        reason: &str,
        mid: Option<&str>,
        posture: (&str, &str),
        evidence: &[&str],
    ) -> EventRecord {
        let payload = json!({ "decision": decision, "reason": reason, "model_reentry": false, "liveness_only": false,
            "work_item_id": null, "task_id": null, "message_id": mid, "idempotency_key": null, "evidence": evidence,
            "posture": { "posture": posture.0, "reason": posture.1 }, "status": "awake_idle" });
        self.push("scheduler_decision", mid, payload)
    }

    pub fn turn(&mut self, mid: &str, run: &str) -> EventRecord {
        let payload = json!({ "run_id": run, "message_id": mid, "trigger_kind": "operator_input", "work_item_id": null, "guidance": [] });
        self.push("turn_started", Some(mid), payload)
    }

    pub fn round(
        &mut self,
        mid: &str,
        run: &str,
        round: u64,
        text: &str,
        tools: &[&str],
    ) -> EventRecord {
        let usage = json!({ "input_tokens": 5200 + round * 800, "output_tokens": 310 });
        let telemetry = json!({ "run_id": run, "round": round, "model_ref": "anthropic/claude-sonnet-4", "token_usage": usage,
            "provider_attempt_timeline": {}, "context_build_ms": 4, "provider_round_ms": 3100, "stop_reason": "tool_use" });
        self.push("provider_round_completed", Some(mid), telemetry);
        let preview: String = text.chars().take(400).collect();
        let payload = json!({ "run_id": run, "round": round, "text_preview": preview, "tool_names": tools, "text_chars": text.chars().count() });
        self.push("assistant_round_recorded", Some(mid), payload)
    }

    #[allow(clippy::too_many_arguments)]
    pub fn tool(
        &mut self,
        mid: &str,
        run: &str,
        name: &str,
        args: Value,
        result: Value,
        ms: u64,
        is_error: bool,
    ) -> EventRecord {
        let preview: String = result.to_string().chars().take(600).collect();
        let payload = json!({ "run_id": run, "tool_execution_id": format!("tool_{}", self.seq()), "call_id": format!("call_{}", self.seq()),
            "tool_name": name, "arguments": args, "is_error": is_error, "duration_ms": ms, "result_preview": preview,
            "result_facts": crate::protocol::events::ToolExecuted::facts_of(&result) });
        self.push("tool_executed", Some(mid), payload)
    }

    pub fn task_created(&mut self, task: &TaskRecord) -> EventRecord {
        let mid = task.parent_message_id.clone();
        self.push("task_created", mid.as_deref(), json!({ "task": task }))
    }

    #[allow(clippy::too_many_arguments)]
    pub fn task_status(
        &mut self,
        id: &str,
        cmd: &str,
        from: TaskStatus,
        to: TaskStatus,
        exit: Option<i32>,
        ms: Option<u64>,
        preview: Option<&str>,
    ) -> EventRecord {
        let summary = match (to, exit) {
            (TaskStatus::Running, _) => cmd.to_owned(),
            (_, Some(code)) => format!("exit status {code}"),
            (_, None) => "killed by signal 9".to_owned(),
        };
        let payload = json!({ "task_id": id, "kind": TaskKind::CommandTask, "from": from, "to": to, "summary": summary,
            "cmd": cmd, "exit_status": exit, "duration_ms": ms, "output_preview": preview, "output_truncated": false });
        self.push("task_status_changed", None, payload)
    }

    pub fn turn_end(
        &mut self,
        mid: &str,
        run: &str,
        kind: &str,
        rounds: u64,
        ms: u64,
        last: &str,
    ) -> EventRecord {
        let payload = json!({ "run_id": run, "message_id": mid, "kind": kind, "rounds": rounds, "last_assistant_message": last, "duration_ms": ms });
        self.push("turn_terminal", Some(mid), payload)
    }

    pub fn brief(
        &mut self,
        mid: &str,
        kind: &str,
        text: &str,
        visibility: &str,
        failure: Option<&FailureArtifact>,
    ) -> EventRecord {
        let brief = json!({ "id": format!("brief_{}", self.seq()), "agent_id": "main", "work_item_id": null, "kind": kind,
            "created_at": ts(self.clock + 1), "text": text, "related_message_id": mid, "related_task_id": null, "failure_artifact": failure });
        self.push(
            "brief_created",
            Some(mid),
            json!({ "brief": brief, "visibility": visibility }),
        )
    }

    pub fn runtime_error(&mut self, mid: &str, run: &str, a: &FailureArtifact) -> EventRecord {
        let payload = json!({ "run_id": run, "phase": "runtime_turn", "failure_kind": "server_error",
            "failure_artifact": a, "provider_attempt_timeline": {}, "token_usage": null });
        self.push("runtime_error", Some(mid), payload)
    }

    pub fn work(&mut self, kind: &str, item: &WorkItemRecord, extra: Value) -> EventRecord {
        let mut payload = json!({ "work_item": item, "source": "operator" });
        if let (Some(p), Some(x)) = (payload.as_object_mut(), extra.as_object()) {
            p.extend(x.clone());
        }
        self.push(kind, None, payload)
    }
}

pub fn task(id: &str, cmd: &str, origin: &str, mid: Option<&str>, created: u64) -> TaskRecord {
    TaskRecord {
        id: id.into(),
        agent_id: "main".into(),
        kind: TaskKind::CommandTask,
        status: TaskStatus::Queued,
        wait_policy: WaitPolicy::Background,
        work_item_id: None,
        parent_message_id: mid.map(str::to_owned),
        summary: Some(cmd.into()),
        detail: crate::model::task::TaskDetail::from_value(
            json!({ "cmd": cmd, "workdir": "/home/op/.holon/agents/main", "accepts_input": false,
            "output_path": format!("/home/op/.holon/agents/main/tasks/{id}.log"), "terminal_reentry": false, "origin": origin }),
        ),
        created_at: ts(created),
        updated_at: ts(created),
        failure_artifact: None,
    }
}

pub fn work_item(id: &str, objective: &str, rev: u64) -> WorkItemRecord {
    WorkItemRecord {
        id: id.into(),
        agent_id: "main".into(),
        workspace_id: "agent_home".into(),
        objective: objective.into(),
        state: WorkItemState::Open,
        plan_status: PlanStatus::Ready,
        todo_list: vec![],
        blocked_by: None,
        recheck_at: None,
        recheck_consumed_at: None,
        result_summary: None,
        revision: rev,
        created_at: ts(10),
        updated_at: ts(10 + rev),
    }
}

pub fn todo(text: &str, state: TodoState) -> TodoItem {
    TodoItem {
        text: text.into(),
        state,
    }
}

pub fn provider_down() -> FailureArtifact {
    FailureArtifact {
        provider: Some("anthropic".into()),
        model_ref: Some("anthropic/claude-sonnet-4".into()),
        status: Some(503),
        ..FailureArtifact::new(
            FailureCategory::Transport,
            "provider_unavailable",
            "The model provider is unavailable (HTTP 503 after 3 attempts)",
        )
    }
}

pub const FIX_TEXT: &str = "Fixed the flaky test.\n\n## What was wrong\n\n`retry_backoff` read the wall clock twice, so a slow CI machine could see the \
deadline pass between the two reads.\n\n## What I changed\n\n- `src/retry.rs`: read the clock **once** per attempt\n- `tests/retry.rs`: a paused-clock \
test that fails on the old code\n\n```\ncargo test retry  # 14 passed\n```\n\nNo other test touches the clock directly.";

/// The work items of the session.
pub fn session_work() -> Vec<WorkItemRecord> {
    let mut release = work_item("wi_release", "Ship the 0.4 release", 3);
    release.todo_list = vec![
        todo("Fix the flaky retry test", TodoState::Completed),
        todo("Deploy to staging", TodoState::InProgress),
        todo("Write the release notes", TodoState::Pending),
    ];
    release.plan_status = PlanStatus::NeedsInput;
    let mut docs = work_item("wi_docs", "Document the retry policy for operators", 1);
    docs.plan_status = PlanStatus::Draft;
    let mut ci = work_item("wi_ci", "Move CI to the new runners", 2);
    ci.blocked_by = Some("waiting for the infra team to provision runners".into());
    let mut flaky = work_item("wi_flaky", "Fix the flaky retry test", 4);
    flaky.state = WorkItemState::Completed;
    flaky.result_summary = Some("clock read once per attempt; regression test added".into());
    vec![release, docs, ci, flaky]
}

/// A morning with one agent: a fix (tools, a command task, a patch), an
/// operator command, a failed turn, and a question for the operator.
pub fn session() -> Script {
    let mut s = Script::default();
    let agent = crate::model::agent::AgentRecord::new("main", ts(0));
    s.push("agent_created", None, json!({ "agent": agent }));
    s.push("runtime_started", None, json!({ "status_before": "asleep", "status": "awake_idle", "turn_was_in_progress": false, "replay_message_ids": [] }));
    let work = session_work();
    s.work("work_item_created", &work[0], json!({ "has_plan": true }));
    s.prompt(
        "msg_1",
        "The retry test is flaky on CI again. Find out why and fix it.",
    );
    s.decision(
        "StartModelTurn",
        "queued_input",
        Some("msg_1"),
        ("ActiveTurn", "turn in progress"),
        &["1 queued message"],
    );
    s.turn("msg_1", "run_1");
    s.round(
        "msg_1",
        "run_1",
        1,
        "I'll look at the recent CI failures first.",
        &["ExecCommand"],
    );
    let t1 = task(
        "task_01",
        "rg -n 'FAILED|panicked' ci-logs/",
        "agent",
        Some("msg_1"),
        s.clock,
    );
    s.task_created(&t1);
    s.task_status(
        "task_01",
        &t1.summary.clone().unwrap_or_default(),
        TaskStatus::Queued,
        TaskStatus::Running,
        None,
        None,
        None,
    );
    s.wait(1);
    s.task_status("task_01", "rg -n 'FAILED|panicked' ci-logs/", TaskStatus::Running, TaskStatus::Completed, Some(0), Some(840),
        Some("ci-logs/run-812.txt:2213: test retry::backoff_respects_deadline ... FAILED\nci-logs/run-815.txt:1980: panicked at 'deadline passed'"));
    s.tool("msg_1", "run_1", "ExecCommand", json!({ "cmd": "rg -n 'FAILED|panicked' ci-logs/" }),
        json!({ "disposition": "completed", "duration_ms": 840, "exit_status": 0, "ok": true, "task_id": "task_01" }), 851, false);
    s.wait(5);
    s.round("msg_1", "run_1", 2, "Found it: `retry_backoff` reads the clock twice. Patching the function and adding a regression test.", &["ApplyPatch"]);
    let files = json!({ "ok": true, "files": [
        { "path": "src/retry.rs", "action": "modified", "added": 12, "removed": 5 },
        { "path": "tests/retry.rs", "action": "created", "added": 34, "removed": 0 } ], "summary": "modified src/retry.rs (+12 -5); created tests/retry.rs (+34 -0)" });
    s.tool(
        "msg_1",
        "run_1",
        "ApplyPatch",
        json!({ "patch": "--- a/src/retry.rs\n+++ b/src/retry.rs\n@@ -1 +1 @@\n-a\n+b\n" }),
        files,
        37,
        false,
    );
    s.round(
        "msg_1",
        "run_1",
        3,
        "Running the retry tests.",
        &["ExecCommand"],
    );
    s.tool("msg_1", "run_1", "ExecCommand", json!({ "cmd": "cargo test retry" }),
        json!({ "disposition": "completed", "exit_status": 0, "stdout_preview": "test result: ok. 14 passed" }), 9120, false);
    s.round("msg_1", "run_1", 4, FIX_TEXT, &[]);
    s.turn_end("msg_1", "run_1", "completed", 4, 42_300, FIX_TEXT);
    s.brief("msg_1", "result", FIX_TEXT, "turn_result", None);
    s.wait(60);
    let t2 = task("task_02", "cargo test", "operator", None, s.clock);
    s.task_created(&t2);
    s.task_status(
        "task_02",
        "cargo test",
        TaskStatus::Queued,
        TaskStatus::Running,
        None,
        None,
        None,
    );
    s.wait(20);
    s.task_status("task_02", "cargo test", TaskStatus::Running, TaskStatus::Completed, Some(0), Some(21_400),
        Some("   Compiling holon v0.4.0\n    Finished test profile in 18.2s\n     Running unittests\ntest result: ok. 512 passed; 0 failed\n     Running tests/all.rs\ntest result: ok. 61 passed; 0 failed"));
    s.wait(30);
    s.prompt("msg_2", "Deploy it to staging.");
    s.turn("msg_2", "run_2");
    let a = provider_down();
    s.runtime_error("msg_2", "run_2", &a);
    s.turn_end("msg_2", "run_2", "aborted", 1, 9_800, "");
    s.brief(
        "msg_2",
        "failure",
        &a.summary.clone(),
        "turn_result",
        Some(&a),
    );
    s.wait(120);
    s.prompt("msg_3", "Try again, please.");
    s.turn("msg_3", "run_3");
    s.round(
        "msg_3",
        "run_3",
        1,
        "Before I deploy: which region should staging use?",
        &["UpdateWorkItem"],
    );
    s.work(
        "work_item_updated",
        &work[0],
        json!({ "changed": ["plan_status"] }),
    );
    s.turn_end("msg_3", "run_3", "completed", 1, 4_100, "");
    s.brief("msg_3", "result", "Staging needs a region before I deploy. **eu-west-1** (closest to the testers) or **us-east-1** (where production runs)?", "action_required", None);
    s.decision(
        "WaitForOperator",
        "awaiting_operator_input",
        None,
        (
            "WaitingForOperator",
            "operator input needed for work item wi_release",
        ),
        &[
            "work item wi_release plan_status=needs_input",
            "queue empty",
        ],
    );
    s
}

/// The fixture agent works directly in the operator's `holon` checkout.
pub fn workspaces() -> crate::model::workspace::AgentWorkspaces {
    use crate::model::workspace::*;
    AgentWorkspaces {
        attached: vec![WorkspaceBinding {
            workspace_id: "ws_holon_1a2b3c4d".into(),
            anchor: "/home/op/src/holon".into(),
            git: true,
            attached_at: "2026-11-20T09:00:00Z".into(),
            pin: None,
        }],
        active: Some(ActiveWorkspace {
            workspace_id: "ws_holon_1a2b3c4d".into(),
            execution_root: "/home/op/src/holon".into(),
            cwd: "/home/op/src/holon".into(),
            projection_kind: ProjectionKind::CanonicalRoot,
            mode: WorkspaceMode::Direct,
            worktree: None,
            adopted_worktree: false,
            root_pin: None,
        }),
        retained_worktrees: vec![],
        policies: Default::default(),
        always: Default::default(),
    }
}

pub fn summary(last_event_seq: u64, posture: (&str, &str)) -> AgentSummary {
    AgentSummary {
        lost_events: 0,
        id: "main".into(),
        identity: crate::model::agent::AgentRecord::new("main", String::new()).identity(),
        children: vec![],
        status: AgentStatus::AwakeIdle,
        posture: posture.0.parse().unwrap(),
        posture_reason: posture.1.into(),
        lifecycle_hint: None,
        queue_depth: 0,
        last_event_seq,
        work_items_open: 3,
        work_items_completed: 1,
        current_work_item_id: Some("wi_release".into()),
        tasks_active: 0,
        waiting_intents_active: 0,
        timers_active: 0,
        model_override: Some("anthropic/claude-sonnet-4".into()),
        model: Some("anthropic/claude-sonnet-4".into()),
        model_source: Some("runtime_default".into()),
        fallback_models: Vec::new(),
        sleeping_until: None,
        loaded_agents_md: Vec::new(),
        // A kernel that sandboxes (whatever this machine's is).
        execution: crate::runtime::workspace::snapshot_with(
            &workspaces(),
            std::path::Path::new("/home/op/.holon/data/agents/main"),
            &Default::default(),
            &crate::runtime::sandbox::Support {
                landlock_abi: 7,
                seccomp: true,
                mount_namespace: true,
                missing: None,
            },
        ),
        context: crate::protocol::views::ContextView {
            window: 200_000,
            last_prompt_tokens: Some(82_000),
            percent: Some(41),
            compaction_epoch: 2,
            compacted_entries: 310,
        },
        reasoning_effort: None,
        usage: None,
        total_message_count: 0,
        last_continuation: None,
        execution_profile: None,
    }
}

/// The bootstrap after `script`.
pub fn bootstrap(script: &Script, mode: StoredMode) -> AgentState {
    let last = script.seq();
    let decision = script
        .events
        .iter()
        .rev()
        .find(|e| e.kind == "scheduler_decision")
        .cloned();
    let posture = decision
        .as_ref()
        .map(|d| {
            let p = &d.payload["posture"];
            (
                p["posture"].as_str().unwrap_or("Idle").to_owned(),
                p["reason"].as_str().unwrap_or("").to_owned(),
            )
        })
        .unwrap_or(("Idle".into(), "no runnable work".into()));
    let mut tasks = Vec::new();
    for e in script.events.iter().filter(|e| e.kind == "task_created") {
        let mut t = e.payload["task"].clone();
        let id = t["id"].as_str().unwrap_or_default().to_owned();
        let last = script
            .events
            .iter()
            .rev()
            .find(|x| x.kind == "task_status_changed" && x.payload["task_id"] == id.as_str());
        if let Some(l) = last {
            t["status"] = l.payload["to"].clone();
            t["detail"]["exit_status"] = l.payload["exit_status"].clone();
            t["detail"]["duration_ms"] = l.payload["duration_ms"].clone();
        }
        tasks.push(t);
    }
    AgentState {
        agent: summary(last, (&posture.0, &posture.1)),
        last_event_seq: last,
        closure: serde_json::from_value(json!({ "outcome": "waiting", "waiting_reason": "awaiting_operator_input", "work_signal": null,
            "runtime_posture": "awake", "evidence": ["work item wi_release needs operator input", "no queued input"] })).unwrap(),
        work_items: session_work()
            .into_iter()
            .map(|record| WorkItemEntry {
                record,
                plan_preview: None,
                plan_preview_complete: None,
                plan_path: None,
            })
            .collect(),
        tasks: tasks
            .into_iter()
            .map(|t| serde_json::from_value(t).unwrap())
            .collect(),
        last_decision: decision,
        display_mode: mode,
    }
}

/// An `events.page` answer.
pub fn page(events: &[EventRecord], last: u64) -> Value {
    let next = events.last().map_or(1, |e| e.event_seq + 1);
    json!({ "events": events, "next_seq": next, "last_event_seq": last })
}

pub fn console(width: u16, height: u16) -> State {
    State::new(Init {
        agent_id: "main".into(),
        connection: Connection::Embedded,
        width,
        height,
        notify: crate::ui::tui::NotifyWhen::Always,
        no_color: false,
    })
}

/// A console showing `script`: bootstrapped, history loaded, clock set.
pub fn booted(script: &Script, mode: StoredMode, width: u16, height: u16) -> State {
    let mut st = console(width, height);
    let boot = bootstrap(script, mode);
    let fx = update(
        &mut st,
        Msg::Bootstrap {
            agent_id: "main".into(),
            state: Box::new(boot),
        },
    );
    if script.seq() > 0 {
        let id = call_id(&fx, "events.page");
        let from = script.seq().saturating_sub(499).max(1) as usize;
        let page = page(&script.events[from - 1..], script.seq());
        update(
            &mut st,
            Msg::Response {
                id,
                result: answer(&fx, id, page),
            },
        );
    }
    update(
        &mut st,
        Msg::Tick {
            now_ms: script.now_ms() + 7_000,
        },
    );
    st
}

/// A console with an empty agent (nothing in its ledger yet).
pub fn fresh() -> State {
    booted(&Script::default(), StoredMode::Info, 80, 24)
}

/// The requests among `fx`.
pub fn requests(fx: &[Effect]) -> Vec<crate::protocol::Request> {
    fx.iter()
        .filter_map(|e| match e {
            Effect::Call { request, .. } => Some(request.clone()),
            _ => None,
        })
        .collect()
}

/// The runtime's answer to the request `id` that `fx` asked for, decoded
/// from its JSON exactly as the socket client decodes it (an answer that
/// does not fit the method's type fails the test).
pub fn answer(fx: &[Effect], id: RequestId, json: Value) -> Box<Result<Response, ApiError>> {
    let request = fx
        .iter()
        .find_map(|e| match e {
            Effect::Call { id: asked, request } if *asked == id => Some(request),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no request {id} in {fx:#?}"));
    Box::new(Ok(Response::decode(request, &json).unwrap()))
}

/// `summary`, of another agent.
pub fn summary_of(agent_id: &str) -> AgentSummary {
    AgentSummary {
        lost_events: 0,
        id: agent_id.into(),
        ..summary(1, ("Idle", "no runnable work"))
    }
}

/// The id of the first `Effect::Call` of `method`.
pub fn call_id(fx: &[Effect], method: &str) -> RequestId {
    fx.iter()
        .find_map(|e| match e {
            Effect::Call { id, request } => {
                let v = serde_json::to_value(request).unwrap_or_default();
                (v["method"] == method).then_some(*id)
            }
            _ => None,
        })
        .unwrap_or_else(|| panic!("no {method} call in {fx:#?}"))
}

pub fn key(code: KeyCode) -> Msg {
    Msg::Key(KeyEvent::new(code, KeyModifiers::NONE))
}

pub fn ctrl(c: char) -> Msg {
    Msg::Key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::CONTROL))
}

pub fn with(code: KeyCode, mods: KeyModifiers) -> Msg {
    Msg::Key(KeyEvent::new(code, mods))
}

/// Type `text` key by key; returns every effect.
pub fn typ(st: &mut State, text: &str) -> Vec<Effect> {
    let mut fx = Vec::new();
    for c in text.chars() {
        fx.extend(update(st, key(KeyCode::Char(c))));
    }
    fx
}

/// Type `text` and press Enter. What Enter keeps in the prompt history
/// (`Effect::RememberPrompt`, tested on its own) is left out.
pub fn enter(st: &mut State, text: &str) -> Vec<Effect> {
    let mut fx = typ(st, text);
    fx.extend(update(st, key(KeyCode::Enter)));
    fx.retain(|e| !matches!(e, Effect::RememberPrompt { .. }));
    fx
}

/// The composer menu's labels, as drawn.
pub fn menu_labels(st: &State) -> Vec<String> {
    st.composer
        .candidates()
        .into_iter()
        .map(|c| c.label)
        .collect()
}

/// Open an overlay with Ctrl+O and a letter.
pub fn prefix(st: &mut State, letter: char) -> Vec<Effect> {
    let mut fx = update(st, ctrl('o'));
    fx.extend(update(st, key(KeyCode::Char(letter))));
    fx
}

/// The screen as text (ratatui's buffer view: one quoted line per row).
pub fn screen(st: &State) -> String {
    let Ok(mut terminal) = Terminal::new(TestBackend::new(st.width, st.height));
    let _ = terminal.draw(|f| view(st, f));
    terminal.backend().to_string()
}

/// A `runtime.status` answer listing `agents`.
pub fn runtime_status(agents: Vec<AgentSummary>) -> Value {
    let status = crate::protocol::RuntimeStatus {
        holon: "holon".into(),
        protocol: crate::protocol::REVISION,
        version: "0.1.0".into(),
        pid: 1,
        mode: "console".into(),
        home: None,
        store: "/h/data/holon.redb".into(),
        socket_path: None,
        started_at: "2026-11-26T10:00:00.000Z".into(),
        uptime_ms: 1,
        activity: crate::protocol::Activity::default(),
        default_model: None,
        agent_count: agents.len() as u64,
        agents,
        last_failure: None,
        store_failure: None,
        http: Default::default(),
        config_fingerprint: None,
        pending_approvals: 0,
    };
    serde_json::to_value(status).unwrap()
}
