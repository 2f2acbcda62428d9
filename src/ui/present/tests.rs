//! Presentation tests: one per event kind on a payload built the way the
//! runtime writes it (real record types where the runtime serialises one),
//! robustness on empty and mistyped payloads, unknown kinds, display modes.

use serde_json::{json, Value};

use super::*;
use crate::model::agent::AgentRecord;
use crate::model::agent::AgentStatus;
use crate::model::decision::DecisionReason;
use crate::model::decision::SchedulerDecision;
use crate::model::decision::SchedulerDecisionKind;
use crate::model::event::Provenance;
use crate::model::message::QueueEntryStatus;
use crate::model::message::{
    normalize, AdmissionContext, AdmissionRequest, DeliverySurface, MessageKind, MessageOrigin,
    Priority, TriggerKind,
};
use crate::model::task::TaskKind;
use crate::model::task::TaskRecord;
use crate::model::task::TaskStatus;
use crate::model::task::WaitPolicy;
use crate::model::usage::FailureArtifact;
use crate::model::usage::FailureCategory;
use crate::model::usage::FailureKind;
use crate::model::usage::TokenUsage;
use crate::model::waiting::TimerRecord;
use crate::model::waiting::TimerStatus;
use crate::model::waiting::WaitingIntentRecord;
use crate::model::waiting::WaitingIntentStatus;
use crate::model::waiting::WaitingScope;
use crate::model::work::{PlanStatus, TodoItem, TodoState, WorkItemRecord, WorkItemState};
use crate::protocol::views::ControlAction;
use crate::protocol::views::WorkItemSource;

const TS: &str = "2026-11-22T04:42:17.517Z";

fn record(kind: &str, payload: Value) -> EventRecord {
    EventRecord {
        event_seq: 7,
        id: "evt_1".into(),
        ts: TS.into(),
        kind: kind.into(),
        agent_id: "main".into(),
        provenance: Provenance::default(),
        payload,
    }
}

fn show(kind: EventKind, payload: Value) -> OperatorEvent {
    present(&record(kind.as_str(), payload))
}

#[track_caller]
fn check(p: &OperatorEvent, v: Visibility, c: Category, summary: &str) {
    assert_eq!(
        (p.visibility, p.category, p.summary.as_str()),
        (v, c, summary),
        "{p:#?}"
    );
}

fn envelope(kind: MessageKind, origin: MessageOrigin, text: &str) -> Value {
    let req = AdmissionRequest {
        kind,
        origin,
        admission_context: AdmissionContext::RuntimeOwned,
        ..AdmissionRequest::operator_prompt(
            "main",
            text,
            Priority::Next,
            DeliverySurface::TaskRejoin,
        )
    };
    json!(normalize(req, "msg_2".into(), TS.into()))
}

fn operator_prompt(text: &str) -> Value {
    let req = AdmissionRequest::operator_prompt(
        "main",
        text,
        Priority::Normal,
        DeliverySurface::CliPrompt,
    );
    json!({ "message": normalize(req, "msg_1".into(), TS.into()), "queue_status": "queued", "admission_seq": 1 })
}

fn work_item() -> WorkItemRecord {
    WorkItemRecord {
        id: "wi_1".into(),
        agent_id: "main".into(),
        workspace_id: "agent_home".into(),
        objective: "Ship the release".into(),
        state: WorkItemState::Open,
        plan_status: PlanStatus::Ready,
        todo_list: vec![],
        blocked_by: None,
        recheck_at: None,
        recheck_consumed_at: None,
        result_summary: None,
        revision: 1,
        created_at: TS.into(),
        updated_at: TS.into(),
    }
}

fn task(status: TaskStatus) -> TaskRecord {
    TaskRecord {
        id: "task_1".into(),
        agent_id: "main".into(),
        kind: TaskKind::CommandTask,
        status,
        wait_policy: WaitPolicy::Background,
        work_item_id: None,
        parent_message_id: Some("msg_1".into()),
        summary: Some("cargo build".into()),
        detail: crate::model::task::TaskDetail::from_value(
            json!({ "cmd": "cargo build", "workdir": null, "accepts_input": false, "terminal_reentry": false, "origin": "agent" }),
        ),
        created_at: TS.into(),
        updated_at: TS.into(),
        failure_artifact: None,
    }
}

fn status_change(
    to: TaskStatus,
    exit: Option<i32>,
    summary: &str,
    duration_ms: Option<u64>,
) -> Value {
    json!({
        "task_id": "task_1", "kind": TaskKind::CommandTask, "from": TaskStatus::Running, "to": to,
        "summary": summary, "cmd": "cargo build", "exit_status": exit, "duration_ms": duration_ms,
        "output_preview": if to == TaskStatus::Running { None } else { Some("Finished dev profile") },
        "output_truncated": false,
    })
}

fn intent(status: WaitingIntentStatus) -> Value {
    json!({ "waiting_intent": WaitingIntentRecord {
        id: "wait_1".into(), agent_id: "main".into(), status, scope: WaitingScope::Agent,
        work_item_id: None, source: Some("github".into()), description: Some("review on PR 12".into()),
        external_ref: None, external_trigger_id: None, trigger_count: 0, created_at: TS.into(), updated_at: TS.into(),
    } })
}

fn timer(status: TimerStatus) -> TimerRecord {
    TimerRecord {
        id: "timer_1".into(),
        agent_id: "main".into(),
        status,
        fire_at_ms: 1_700_000_300_000,
        work_item_id: None,
        reason: Some("sleep".into()),
        created_at: TS.into(),
        updated_at: TS.into(),
    }
}

/// A decision as the runtime records it: with the posture and status it
/// was made in.
fn decided(decision: SchedulerDecision) -> Value {
    let made = crate::protocol::events::SchedulerDecisionMade {
        decision,
        posture: crate::model::decision::PostureView {
            posture: crate::model::decision::AgentSchedulingPosture::Idle,
            reason: "nothing to do".into(),
        },
        status: AgentStatus::Asleep,
    };
    json!(made)
}

fn decision(kind: SchedulerDecisionKind, reason: DecisionReason) -> SchedulerDecision {
    SchedulerDecision {
        kind,
        reason,
        model_reentry: false,
        liveness_only: false,
        work_item_id: None,
        task_id: None,
        message_id: None,
        idempotency_key: None,
        evidence: vec!["queue empty".into(), "no open work items".into()],
    }
}

fn artifact() -> FailureArtifact {
    FailureArtifact {
        category: FailureCategory::Transport,
        kind: "provider_not_configured".into(),
        summary: "No model provider configured: set OPENAI_API_KEY or ANTHROPIC_API_KEY".into(),
        provider: Some("openai".into()),
        model_ref: Some("openai/gpt-5".into()),
        status: None,
        task_id: None,
        exit_status: None,
        source_chain: vec![],
        metadata: Default::default(),
    }
}

fn brief(kind: &str, text: &str, visibility: &str, failure: Option<FailureArtifact>) -> Value {
    json!({ "brief": {
        "id": "brief_1", "agent_id": "main", "work_item_id": null, "kind": kind, "created_at": TS,
        "text": text, "related_message_id": "msg_1", "related_task_id": null, "failure_artifact": failure,
    }, "visibility": visibility })
}

// ---- one test per event kind ------------------------------------------

#[test]
fn agent_created() {
    let p = show(
        EventKind::AgentCreated,
        json!({ "agent": AgentRecord::new("main", TS.into()) }),
    );
    check(
        &p,
        Visibility::Trace,
        Category::Runtime,
        "Agent main created",
    );
}

#[test]
fn agent_state_changed_is_a_state_sync_signal() {
    let payload = json!({ "from": AgentStatus::AwakeIdle, "to": AgentStatus::AwakeRunning, "cause": "StartModelTurn" });
    let p = show(EventKind::AgentStateChanged, payload);
    check(
        &p,
        Visibility::Trace,
        Category::StateSync,
        "Agent state awake_idle -> awake_running (StartModelTurn)",
    );
}

#[test]
fn control_applied() {
    let payload = json!({ "action": ControlAction::Pause, "from": AgentStatus::AwakeIdle, "to": AgentStatus::Paused,
        "note": "no new model turn starts until resumed; tasks keep running" });
    let p = show(EventKind::ControlApplied, payload);
    check(
        &p,
        Visibility::Progress,
        Category::OperatorNotification,
        "Paused: no new model turn starts until resumed; tasks keep running",
    );
}

#[test]
fn message_admitted_operator_prompt_is_the_operators_message() {
    let p = show(
        EventKind::MessageAdmitted,
        operator_prompt("Please  fix\nthe build"),
    );
    check(
        &p,
        Visibility::Progress,
        Category::Message,
        "Operator: Please fix the build",
    );
    assert_eq!(p.body.as_deref(), Some("Please  fix\nthe build"));
    assert!(p.is_operator_message());
}

#[test]
fn message_admitted_runtime_inputs_are_not_operator_messages() {
    let text = "Task task_1 (cargo build) finished: exit status 0.\n";
    let result = envelope(
        MessageKind::TaskResult,
        MessageOrigin::Task {
            task_id: "task_1".into(),
        },
        text,
    );
    let p = show(
        EventKind::MessageAdmitted,
        json!({ "message": result, "queue_status": "queued", "admission_seq": 2 }),
    );
    check(
        &p,
        Visibility::Trace,
        Category::Task,
        "Task result from task_1: Task task_1 (cargo build) finished: exit status 0.",
    );
    assert!(!p.is_operator_message());

    let origin = MessageOrigin::Channel {
        channel_id: "ops".into(),
        sender_id: None,
    };
    let p = show(
        EventKind::MessageAdmitted,
        json!({ "message": envelope(MessageKind::ChannelEvent, origin, "deploy failed"), "queue_status": "queued", "admission_seq": 2 }),
    );
    check(
        &p,
        Visibility::Progress,
        Category::OperatorNotification,
        "Channel message from ops: deploy failed",
    );
    assert!(!p.is_operator_message());

    let origin = MessageOrigin::System {
        subsystem: "work_queue".into(),
    };
    let p = show(
        EventKind::MessageAdmitted,
        json!({ "message": envelope(MessageKind::SystemTick, origin, "continue"), "queue_status": "queued", "admission_seq": 2 }),
    );
    check(
        &p,
        Visibility::Trace,
        Category::Runtime,
        "System tick: continue",
    );
}

#[test]
fn message_rejected_operator_prompt_is_a_turn_result_with_the_hint() {
    let payload = json!({ "message_id": "msg_1", "reason": "agent_stopped",
        "hint": "the agent is stopped: resume it first (`/resume` or the resume control); wake does not cross stopped",
        "kind": MessageKind::OperatorPrompt, "body_preview": "hello" });
    let p = show(EventKind::MessageRejected, payload);
    check(&p, Visibility::TurnResult, Category::Message,
        "Prompt refused: the agent is stopped: resume it first (`/resume` or the resume control); wake does not cross stopped");
    assert_eq!(p.title, "Prompt refused");
    assert_eq!(p.body.as_deref(), Some("hello"));

    let payload = json!({ "message_id": "msg_2", "reason": "agent_stopped", "kind": MessageKind::TaskResult });
    let p = show(EventKind::MessageRejected, payload);
    check(
        &p,
        Visibility::Progress,
        Category::Message,
        "Refused task result: agent stopped",
    );
}

#[test]
fn message_processing_started() {
    let payload = json!({ "message_id": "msg_1", "kind": MessageKind::OperatorPrompt, "priority": Priority::Normal,
        "replay": true, "queue_status": QueueEntryStatus::Dequeued });
    let p = show(EventKind::MessageProcessingStarted, payload);
    check(
        &p,
        Visibility::Trace,
        Category::Message,
        "Processing message msg_1 (operator prompt), replayed after a restart",
    );
}

#[test]
fn message_processed() {
    let payload = json!({ "message_id": "msg_1", "from": QueueEntryStatus::Dequeued, "queue_status": QueueEntryStatus::Processed,
        "detail": { "run_id": "run_1", "turn_terminal": "completed" } });
    let p = show(EventKind::MessageProcessed, payload);
    check(
        &p,
        Visibility::Trace,
        Category::Message,
        "Message msg_1 processed (turn completed)",
    );

    let payload = json!({ "message_id": "msg_2", "from": QueueEntryStatus::Dequeued, "queue_status": QueueEntryStatus::Processed,
        "detail": { "reduced_without_turn": true, "evidence": [] } });
    let p = show(EventKind::MessageProcessed, payload);
    check(
        &p,
        Visibility::Trace,
        Category::Message,
        "Message msg_2 settled without a turn",
    );
}

#[test]
fn message_aborted() {
    let payload = json!({ "message_id": "msg_1", "from": QueueEntryStatus::Dequeued, "queue_status": QueueEntryStatus::Aborted,
        "detail": { "run_id": "run_1", "turn_terminal": "aborted" } });
    check(
        &show(EventKind::MessageAborted, payload),
        Visibility::Progress,
        Category::Message,
        "Message msg_1 aborted",
    );
}

#[test]
fn message_dropped_falls_back_to_the_provenance_message_id() {
    let mut e = record(
        "message_dropped",
        json!({ "from": "queued", "queue_status": "dropped", "detail": { "reason": "superseded" } }),
    );
    e.provenance.message_id = Some("msg_5".into());
    check(
        &present(&e),
        Visibility::Progress,
        Category::Message,
        "Message msg_5 dropped: superseded",
    );
}

#[test]
fn message_interjected() {
    let payload = json!({ "message_id": "msg_3", "from": QueueEntryStatus::Queued, "queue_status": QueueEntryStatus::Interjected,
        "detail": { "run_id": "run_1" } });
    check(
        &show(EventKind::MessageInterjected, payload),
        Visibility::Progress,
        Category::Message,
        "Message msg_3 joined the running turn",
    );
}

#[test]
fn scheduler_decision_in_plain_words() {
    let d = decision(SchedulerDecisionKind::Sleep, DecisionReason::NoRunnableWork);
    let p = show(EventKind::SchedulerDecision, decided(d));
    check(
        &p,
        Visibility::Trace,
        Category::Runtime,
        "Sleep: no runnable work",
    );
    assert_eq!(p.body.as_deref(), Some("queue empty\nno open work items"));

    let mut d = decision(
        SchedulerDecisionKind::WaitForTask,
        DecisionReason::AwaitingTaskResult,
    );
    d.task_id = Some("task_x".into());
    check(
        &show(EventKind::SchedulerDecision, decided(d)),
        Visibility::Trace,
        Category::Runtime,
        "Wait for task task_x",
    );

    let mut d = decision(
        SchedulerDecisionKind::StartModelTurn,
        DecisionReason::QueuedInput,
    );
    d.message_id = Some("msg_x".into());
    check(
        &show(EventKind::SchedulerDecision, decided(d)),
        Visibility::Trace,
        Category::Runtime,
        "Start turn for message msg_x",
    );

    let mut d = decision(
        SchedulerDecisionKind::EmitSystemTick,
        DecisionReason::ContinueActive,
    );
    d.work_item_id = Some("wi_1".into());
    check(
        &show(EventKind::SchedulerDecision, decided(d)),
        Visibility::Trace,
        Category::Runtime,
        "Emit system tick (continue active) for work item wi_1",
    );

    let d = decision(SchedulerDecisionKind::Noop, DecisionReason::TurnInProgress);
    check(
        &show(EventKind::SchedulerDecision, decided(d)),
        Visibility::Trace,
        Category::Runtime,
        "No action: turn in progress",
    );
}

#[test]
fn system_tick_emitted() {
    let payload = json!({ "reason": "continue_active", "idempotency_key": "work_queue:continue_active:wi_1:2",
        "message_id": "msg_4", "work_item_id": "wi_1" });
    check(
        &show(EventKind::SystemTickEmitted, payload),
        Visibility::Trace,
        Category::Runtime,
        "System tick (continue active) for work item wi_1",
    );
}

#[test]
fn turn_started() {
    let payload = json!({ "run_id": "run_1", "message_id": "msg_1", "trigger_kind": TriggerKind::OperatorInput, "work_item_id": null });
    check(
        &show(EventKind::TurnStarted, payload),
        Visibility::Trace,
        Category::Runtime,
        "Turn started for message msg_1 (operator input)",
    );
}

#[test]
fn provider_round_completed_is_telemetry() {
    let usage = TokenUsage {
        input_tokens: 1200,
        output_tokens: 300,
        total_tokens: 1500,
        ..TokenUsage::default()
    };
    let payload = json!({ "run_id": "run_1", "round": 1, "model_ref": "openai/gpt-5", "token_usage": usage,
        "provider_attempt_timeline": {}, "context_build_ms": 3, "provider_round_ms": 2345, "stop_reason": "end_turn" });
    check(
        &show(EventKind::ProviderRoundCompleted, payload),
        Visibility::Trace,
        Category::Trace,
        "Provider round 1: openai/gpt-5, 1200 in / 300 out tokens, 2.3 s, stop: end_turn",
    );
    let deferred = json!({ "run_id": "run_1", "round": 2, "model_ref": "ollama/qwen3",
        "token_usage": usage, "provider_round_ms": 900, "tools_sent": 24, "tool_tokens": 4100,
        "tools_deferred": 33, "deferred_tool_tokens": 4400 });
    check(
        &show(EventKind::ProviderRoundCompleted, deferred),
        Visibility::Trace,
        Category::Trace,
        "Provider round 2: ollama/qwen3, 1200 in / 300 out tokens, 900 ms, 24 tools (~4100 \
         tokens; 33 more behind ToolSearch, ~4400 tokens not sent)",
    );
}

#[test]
fn assistant_round_recorded_distinguishes_text_tools_and_neither() {
    let round = |text: &str, tools: &[&str]| json!({ "run_id": "run_1", "round": 3, "text_preview": text, "tool_names": tools, "text_chars": text.len() });
    let p = show(
        EventKind::AssistantRoundRecorded,
        round("Looking at the\nfailing test", &["ExecCommand"]),
    );
    check(
        &p,
        Visibility::Progress,
        Category::AssistantProgress,
        "Assistant progress: Looking at the failing test",
    );
    assert_eq!(
        p.body.as_deref(),
        Some("Looking at the\nfailing test\n\nRequested tools: ExecCommand")
    );

    let p = show(
        EventKind::AssistantRoundRecorded,
        round("", &["ExecCommand", "TaskStatus", "ExecCommand"]),
    );
    check(
        &p,
        Visibility::Progress,
        Category::AssistantProgress,
        "Model requested tools: ExecCommand x2, TaskStatus",
    );

    let p = show(EventKind::AssistantRoundRecorded, round("  ", &[]));
    check(
        &p,
        Visibility::Progress,
        Category::AssistantProgress,
        "Model round 3 with no text or tool calls",
    );
}

#[test]
fn tool_executed_names_the_tool_and_a_compact_hint() {
    let call = |is_error: bool, args: Value| {
        json!({ "run_id": "run_1", "tool_execution_id": "tool_1", "call_id": "call_1", "tool_name": "ExecCommand",
            "arguments": args, "is_error": is_error, "duration_ms": 1234, "result_preview": "{\"exit_status\":0}" })
    };
    let p = show(
        EventKind::ToolExecuted,
        call(
            false,
            json!({ "cmd": "cargo test -q", "yield_time_ms": 10000 }),
        ),
    );
    check(
        &p,
        Visibility::Trace,
        Category::Tool,
        "ExecCommand: cargo test -q (1.2 s)",
    );
    let mut batch = call(
        false,
        json!({ "items": [{ "cmd": "git status" }, { "cmd": "cargo build" }] }),
    );
    batch["tool_name"] = json!("ExecCommandBatch");
    check(
        &show(EventKind::ToolExecuted, batch),
        Visibility::Trace,
        Category::Tool,
        "ExecCommandBatch: 2 commands: git status · cargo build (1.2 s)",
    );
    assert_eq!(
        (p.title.as_str(), p.body.as_deref()),
        ("ExecCommand", Some("{\"exit_status\":0}"))
    );

    let p = show(
        EventKind::ToolExecuted,
        call(true, json!({ "cmd": "make" })),
    );
    check(
        &p,
        Visibility::Trace,
        Category::Tool,
        "ExecCommand failed: make (1.2 s)",
    );

    let sleep = json!({ "tool_name": "Sleep", "arguments": { "duration_ms": 300_000 }, "is_error": false, "duration_ms": 2 });
    check(
        &show(EventKind::ToolExecuted, sleep),
        Visibility::Trace,
        Category::Tool,
        "Sleep: for 5m 00s (2 ms)",
    );
}

#[test]
fn turn_terminal() {
    let payload = json!({ "run_id": "run_1", "message_id": "msg_1", "kind": "completed", "rounds": 3,
        "last_assistant_message": "done", "duration_ms": 12_345 });
    check(
        &show(EventKind::TurnTerminal, payload),
        Visibility::Progress,
        Category::Runtime,
        "Turn completed (12.3 s, 3 rounds)",
    );
    let payload = json!({ "kind": "completed", "rounds": 1, "duration_ms": 900,
        "token_usage": { "input_tokens": 12_300, "output_tokens": 812 } });
    check(
        &show(EventKind::TurnTerminal, payload),
        Visibility::Progress,
        Category::Runtime,
        "Turn completed (900 ms, 1 round, 12.3k in / 812 out tokens)",
    );
    let payload = json!({ "kind": "completed", "rounds": 2, "duration_ms": 900, "cost_usd": 0.01234,
        "token_usage": { "input_tokens": 3_000, "output_tokens": 90 } });
    check(
        &show(EventKind::TurnTerminal, payload),
        Visibility::Progress,
        Category::Runtime,
        "Turn completed (900 ms, 2 rounds, 3.0k in / 90 out tokens, $0.0123)",
    );
}

#[test]
fn brief_created_takes_visibility_from_the_payload() {
    let p = show(
        EventKind::BriefCreated,
        brief("result", "All done: nothing needed.", "turn_result", None),
    );
    check(
        &p,
        Visibility::TurnResult,
        Category::Brief,
        "Result: All done: nothing needed.",
    );
    assert_eq!(p.body.as_deref(), Some("All done: nothing needed."));

    let p = show(
        EventKind::BriefCreated,
        brief(
            "result",
            "Released v1.2.\n\nNotes follow.",
            "work_done",
            None,
        ),
    );
    check(
        &p,
        Visibility::WorkDone,
        Category::Brief,
        "Work done: Released v1.2. …",
    );

    let p = show(
        EventKind::BriefCreated,
        brief(
            "result",
            "Which branch should I use?",
            "action_required",
            None,
        ),
    );
    check(
        &p,
        Visibility::ActionRequired,
        Category::Brief,
        "Needs your input: Which branch should I use?",
    );

    let p = show(
        EventKind::BriefCreated,
        brief("result", "", "turn_result", None),
    );
    check(
        &p,
        Visibility::TurnResult,
        Category::Brief,
        "Result: (no reply text)",
    );

    // A visibility this build does not know is not a brief it can read:
    // shown as trace, never demoted to an empty row.
    let p = show(
        EventKind::BriefCreated,
        brief("result", "ok", "trace", None),
    );
    check(
        &p,
        Visibility::Trace,
        Category::Trace,
        "Unreadable `brief_created` event (a different Holon version wrote it?)",
    );
    assert!(p
        .body
        .as_deref()
        .is_some_and(|b| b.contains("unknown variant `trace`")));
}

#[test]
fn failure_briefs_are_turn_results_that_say_the_turn_failed() {
    let a = artifact();
    let p = show(
        EventKind::BriefCreated,
        brief("failure", &a.summary, "turn_result", Some(a.clone())),
    );
    check(
        &p,
        Visibility::TurnResult,
        Category::Brief,
        "Turn failed: No model provider configured: set OPENAI_API_KEY or ANTHROPIC_API_KEY",
    );
    assert_eq!(p.title, "Turn failed");
    assert_eq!(
        p.body.as_deref(),
        Some(
            format!(
                "{}\nprovider_not_configured · openai · openai/gpt-5",
                a.summary
            )
            .as_str()
        )
    );

    // Even when the payload claims a stronger level.
    let p = show(
        EventKind::BriefCreated,
        brief(
            "failure",
            "Turn aborted by the operator.",
            "action_required",
            None,
        ),
    );
    check(
        &p,
        Visibility::TurnResult,
        Category::Brief,
        "Turn aborted by the operator.",
    );
    assert_eq!(p.title, "Turn failed");
}

#[test]
fn work_item_created() {
    let payload =
        json!({ "work_item": work_item(), "source": WorkItemSource::Operator, "has_plan": false });
    check(
        &show(EventKind::WorkItemCreated, payload),
        Visibility::Progress,
        Category::WorkItem,
        "Work item created: Ship the release (by the operator)",
    );
}

#[test]
fn work_item_picked() {
    let payload = json!({ "work_item_id": "wi_1", "revision": 1, "objective": "Ship the release",
        "previous_work_item_id": null, "source": WorkItemSource::Tool });
    check(
        &show(EventKind::WorkItemPicked, payload),
        Visibility::Progress,
        Category::WorkItem,
        "Working on: Ship the release",
    );
}

#[test]
fn work_item_updated() {
    let mut item = work_item();
    item.blocked_by = Some("waiting for CI".into());
    let payload =
        json!({ "work_item": item, "changed": ["blocked_by"], "source": WorkItemSource::Tool });
    check(
        &show(EventKind::WorkItemUpdated, payload),
        Visibility::Progress,
        Category::WorkItem,
        "Work item blocked by waiting for CI: Ship the release",
    );

    let mut item = work_item();
    item.todo_list = vec![
        TodoItem {
            text: "tag".into(),
            state: TodoState::Completed,
        },
        TodoItem {
            text: "publish".into(),
            state: TodoState::InProgress,
        },
    ];
    let payload =
        json!({ "work_item": item, "changed": ["todo_list"], "source": WorkItemSource::Tool });
    check(
        &show(EventKind::WorkItemUpdated, payload),
        Visibility::Trace,
        Category::WorkItem,
        "Work item updated (todo list): Ship the release",
    );
}

#[test]
fn work_item_completed_is_progress_because_the_brief_carries_work_done() {
    let mut item = work_item();
    item.state = WorkItemState::Completed;
    item.result_summary = Some("v1.2 is on crates.io".into());
    let payload = json!({ "work_item": item, "source": WorkItemSource::Tool });
    let p = show(EventKind::WorkItemCompleted, payload);
    check(
        &p,
        Visibility::Progress,
        Category::WorkItem,
        "Work item completed: Ship the release",
    );
    assert_eq!(p.body.as_deref(), Some("v1.2 is on crates.io"));
}

#[test]
fn work_item_recheck_due() {
    let payload =
        json!({ "work_item_id": "wi_1", "blocked_by": "waiting for CI", "recheck_at": TS });
    check(
        &show(EventKind::WorkItemRecheckDue, payload),
        Visibility::Trace,
        Category::WorkItem,
        "Recheck due for wi_1 (blocked by waiting for CI)",
    );
}

#[test]
fn task_created() {
    let p = show(
        EventKind::TaskCreated,
        json!({ "task": task(TaskStatus::Queued) }),
    );
    check(
        &p,
        Visibility::Trace,
        Category::Task,
        "Task task_1 queued: cargo build",
    );
}

#[test]
fn task_status_changed_terminal_is_progress_with_exit_and_duration() {
    let p = show(
        EventKind::TaskStatusChanged,
        status_change(TaskStatus::Running, None, "cargo build", None),
    );
    check(
        &p,
        Visibility::Trace,
        Category::Task,
        "Task task_1 running: cargo build",
    );

    let p = show(
        EventKind::TaskStatusChanged,
        status_change(
            TaskStatus::Completed,
            Some(0),
            "exit status 0",
            Some(12_345),
        ),
    );
    check(
        &p,
        Visibility::Progress,
        Category::Task,
        "Task task_1 completed: cargo build (exit 0, 12.3 s)",
    );
    assert_eq!(p.body.as_deref(), Some("Finished dev profile"));

    let p = show(
        EventKind::TaskStatusChanged,
        status_change(TaskStatus::Failed, None, "killed by signal 9", Some(1_000)),
    );
    check(
        &p,
        Visibility::Progress,
        Category::Task,
        "Task task_1 failed: cargo build (killed by signal 9, 1.0 s)",
    );
}

#[test]
fn task_output() {
    let payload = json!({ "task_id": "task_1", "bytes": 42, "preview": "Compiling holon" });
    let p = show(EventKind::TaskOutput, payload);
    check(
        &p,
        Visibility::Trace,
        Category::Task,
        "Task task_1 produced output (42 bytes)",
    );
    assert_eq!(p.body.as_deref(), Some("Compiling holon"));
}

#[test]
fn task_result_queued() {
    let payload = json!({ "task_id": "task_1", "message_id": "msg_9" });
    check(
        &show(EventKind::TaskResultQueued, payload),
        Visibility::Trace,
        Category::Task,
        "Task task_1 result queued for the agent (msg_9)",
    );
}

#[test]
fn task_reattached() {
    let payload = json!({ "task_id": "task_1", "pid": 4242, "result_reenters": true });
    check(
        &show(EventKind::TaskReattached, payload),
        Visibility::Progress,
        Category::Task,
        "Task task_1 still runs after the restart; supervised again (holder pid 4242)",
    );
}

#[test]
fn waiting_intent_created() {
    check(
        &show(
            EventKind::WaitingIntentCreated,
            intent(WaitingIntentStatus::Active),
        ),
        Visibility::Progress,
        Category::Waiting,
        "Waiting for: review on PR 12 (github)",
    );
}

#[test]
fn waiting_intent_triggered() {
    check(
        &show(
            EventKind::WaitingIntentTriggered,
            intent(WaitingIntentStatus::Triggered),
        ),
        Visibility::Progress,
        Category::Waiting,
        "Wait resolved: review on PR 12",
    );
}

#[test]
fn waiting_intent_cancelled() {
    check(
        &show(
            EventKind::WaitingIntentCancelled,
            intent(WaitingIntentStatus::Cancelled),
        ),
        Visibility::Trace,
        Category::Waiting,
        "Wait cancelled: review on PR 12",
    );
    check(
        &show(
            EventKind::WaitingIntentCancelled,
            intent(WaitingIntentStatus::Expired),
        ),
        Visibility::Trace,
        Category::Waiting,
        "Wait expired: review on PR 12",
    );
}

#[test]
fn timer_created() {
    let payload = json!({ "timer": timer(TimerStatus::Active), "delay_ms": 300_000 });
    check(
        &show(EventKind::TimerCreated, payload),
        Visibility::Progress,
        Category::Waiting,
        "Timer set for 5m 00s: sleep",
    );
}

#[test]
fn timer_fired() {
    let payload = json!({ "timer": timer(TimerStatus::Fired) });
    check(
        &show(EventKind::TimerFired, payload),
        Visibility::Progress,
        Category::Waiting,
        "Timer fired: sleep",
    );
}

#[test]
fn timer_cancelled() {
    let payload = json!({ "timer": timer(TimerStatus::Cancelled) });
    check(
        &show(EventKind::TimerCancelled, payload),
        Visibility::Trace,
        Category::Waiting,
        "Timer cancelled: sleep",
    );
}

#[test]
fn wake_hint_submitted_names_its_source() {
    let mut e = record(
        "wake_hint_submitted",
        json!({ "reason": "ci finished", "waiting_intent_id": null,
        "pending": { "reason": "ci finished", "generation": 1, "coalesced_count": 0, "received_at": TS }, "note": "" }),
    );
    e.provenance.source = Some("github".into());
    check(
        &present(&e),
        Visibility::Trace,
        Category::Waiting,
        "Wake hint: ci finished (from github)",
    );
}

#[test]
fn wake_hint_coalesced() {
    let payload =
        json!({ "reason": "ci finished", "waiting_intent_id": null, "pending": null, "note": "" });
    check(
        &show(EventKind::WakeHintCoalesced, payload),
        Visibility::Trace,
        Category::Waiting,
        "Wake hint merged into the pending one: ci finished",
    );
}

#[test]
fn wake_hint_ignored() {
    let payload = json!({ "reason": "ci finished", "waiting_intent_id": null, "pending": null,
        "note": "agent is stopped; wake does not cross stopped" });
    check(
        &show(EventKind::WakeHintIgnored, payload),
        Visibility::Trace,
        Category::Waiting,
        "Wake hint ignored: agent is stopped; wake does not cross stopped",
    );
}

#[test]
fn runtime_started() {
    let payload = json!({ "status_before": "awake_running", "status": "awake_idle", "turn_was_in_progress": true,
        "replay_message_ids": ["msg_1"] });
    check(
        &show(EventKind::RuntimeStarted, payload),
        Visibility::Progress,
        Category::Runtime,
        "Runtime started; the interrupted turn will be replayed",
    );
    let payload = json!({ "status_before": "awake_idle", "status": "awake_idle", "turn_was_in_progress": false,
        "replay_message_ids": ["msg_1", "msg_2"] });
    check(
        &show(EventKind::RuntimeStarted, payload),
        Visibility::Progress,
        Category::Runtime,
        "Runtime started; 2 messages to replay",
    );
}

#[test]
fn runtime_stopped() {
    check(
        &show(
            EventKind::RuntimeStopped,
            json!({ "reason": "console closed" }),
        ),
        Visibility::Progress,
        Category::Runtime,
        "Runtime stopped: console closed",
    );
}

#[test]
fn runtime_error_is_visible_at_info() {
    let a = artifact();
    let payload = json!({ "run_id": "run_1", "phase": "runtime_turn", "failure_kind": FailureKind::NotConfigured,
        "failure_artifact": a, "provider_attempt_timeline": {}, "token_usage": null });
    let p = show(EventKind::RuntimeError, payload);
    check(
        &p,
        Visibility::TurnResult,
        Category::Runtime,
        "Runtime error: No model provider configured: set OPENAI_API_KEY or ANTHROPIC_API_KEY",
    );
    assert!(shows(DisplayMode::Info, &p));
}

#[test]
fn config_reloaded() {
    check(
        &show(
            EventKind::ConfigReloaded,
            json!({ "source": "config_file", "path": "/h/config.toml", "changed": ["model", "providers"], "applied": true }),
        ),
        Visibility::Progress,
        Category::OperatorNotification,
        "Configuration reloaded (changed: model, providers)",
    );
    check(
        &show(
            EventKind::ConfigReloaded,
            json!({ "source": "config_file", "path": "/h/config.toml", "changed": [], "applied": false,
                    "error": "config.toml:1:5: unclosed table", "note": "the previous configuration stays in effect" }),
        ),
        Visibility::Progress,
        Category::OperatorNotification,
        "Configuration not reloaded, the previous one stays in effect: config.toml:1:5: unclosed table",
    );
}

#[test]
fn display_mode_changed() {
    check(
        &show(
            EventKind::DisplayModeChanged,
            json!({ "from": "info", "to": "verbose" }),
        ),
        Visibility::Trace,
        Category::StateSync,
        "Display mode changed: verbose",
    );
}

#[test]
fn model_override_changed() {
    let p = show(
        EventKind::ModelOverrideChanged,
        json!({ "from": null, "to": "anthropic/claude-sonnet-4" }),
    );
    check(
        &p,
        Visibility::Trace,
        Category::StateSync,
        "Model override set: anthropic/claude-sonnet-4",
    );
    let p = show(
        EventKind::ModelOverrideChanged,
        json!({ "from": "anthropic/claude-sonnet-4", "to": null }),
    );
    check(
        &p,
        Visibility::Trace,
        Category::StateSync,
        "Model override cleared",
    );
}

// ---- robustness ---------------------------------------------------------

#[test]
fn every_kind_presents_on_empty_and_mistyped_payloads() {
    let odd = json!({
        "message": 1, "brief": [], "task": "x", "work_item": null, "visibility": 3, "tool_names": [1, null],
        "arguments": 5, "evidence": "no", "token_usage": { "input_tokens": -1 }, "to": {}, "kind": false,
    });
    for kind in EventKind::ALL {
        for payload in [
            json!({}),
            Value::Null,
            json!([1, 2]),
            json!("text"),
            odd.clone(),
        ] {
            let p = present(&record(kind.as_str(), payload.clone()));
            assert_eq!(p.source_event_kind, kind.as_str());
            assert!(
                !p.summary.trim().is_empty(),
                "{kind}: empty summary on {payload}"
            );
            assert!(!p.summary.contains('\n'), "{kind}: multi-line summary");
            assert!(!p.title.is_empty(), "{kind}: empty title");
            // Only a real operator prompt may claim the operator's row.
            assert!(
                !p.is_operator_message(),
                "{kind}: {payload} claimed an operator message"
            );
        }
    }
}

#[test]
fn summaries_stay_on_one_bounded_line() {
    let long = "word\n".repeat(500);
    for p in [
        show(
            EventKind::BriefCreated,
            brief("result", &long, "turn_result", None),
        ),
        show(EventKind::MessageAdmitted, operator_prompt(&long)),
        show(
            EventKind::AssistantRoundRecorded,
            json!({ "text_preview": long }),
        ),
    ] {
        assert!(p.summary.chars().count() <= SUMMARY_MAX, "{}", p.summary);
        assert!(!p.summary.contains('\n'));
        assert!(p.summary.ends_with('…'), "{}", p.summary);
    }
}

#[test]
fn unknown_kinds_are_generic_trace_rows() {
    let p = present(&record("agent_teleported", json!({ "to": "mars" })));
    check(
        &p,
        Visibility::Trace,
        Category::Trace,
        "Unrecognised event `agent_teleported` (recorded by a newer Holon?)",
    );
    assert_eq!(p.source_event_kind, "agent_teleported");
    assert_eq!(p.body.as_deref(), Some(r#"{"to":"mars"}"#));
    for &mode in DisplayMode::ALL {
        assert!(!shows(mode, &p), "{mode} showed an unknown event");
    }
    let p = present(&record("", json!({})));
    check(
        &p,
        Visibility::Trace,
        Category::Trace,
        "Unrecognised event `(empty kind)` (recorded by a newer Holon?)",
    );
    assert_eq!(p.body, None);
}

// ---- enums, display modes, the human line ------------------------------

#[test]
fn visibility_is_ordered_with_levels_and_snake_case_names() {
    assert!(Visibility::ALL.windows(2).all(|w| w[0] < w[1]));
    let levels: Vec<u8> = Visibility::ALL.iter().map(|v| v.level()).collect();
    assert_eq!(levels, [1, 2, 3, 4, 5]);
    for &v in Visibility::ALL {
        assert_eq!(json!(v), json!(v.as_str()));
        assert_eq!(Visibility::parse(v.as_str()), Some(v));
        assert_eq!(Visibility::parse(&v.level().to_string()), Some(v));
    }
    assert_eq!(Visibility::parse("6"), None);
    for &c in Category::ALL {
        assert_eq!(json!(c), json!(c.as_str()));
        assert_eq!(Category::parse(c.as_str()), Some(c));
    }
    assert_eq!(Category::parse("severity"), None);
}

#[test]
fn operator_event_serialises_without_severity() {
    let p = show(
        EventKind::BriefCreated,
        brief("result", "ok", "work_done", None),
    );
    let v = json!(p);
    assert_eq!(v["visibility"], "work_done");
    assert_eq!(v["category"], "brief");
    assert_eq!(v["source_event_kind"], "brief_created");
    let keys: Vec<&str> = v
        .as_object()
        .map(|o| o.keys().map(String::as_str).collect())
        .unwrap_or_default();
    assert_eq!(keys.len(), 6, "{keys:?}");
    assert!(!keys.contains(&"severity"));
}

#[test]
fn display_modes_parse_names_and_numeric_aliases() {
    for (s, m) in [
        ("info", DisplayMode::Info),
        ("3", DisplayMode::Info),
        ("Verbose", DisplayMode::Verbose),
        ("4", DisplayMode::Verbose),
        (" debug ", DisplayMode::Debug),
        ("5", DisplayMode::Debug),
    ] {
        assert_eq!(DisplayMode::parse(s), Some(m), "{s}");
    }
    for s in ["trace", "2", "", "6"] {
        assert_eq!(DisplayMode::parse(s), None, "{s}");
    }
}

fn modes(p: &OperatorEvent) -> [bool; 3] {
    [DisplayMode::Info, DisplayMode::Verbose, DisplayMode::Debug].map(|m| shows(m, p))
}

#[test]
fn info_shows_results_and_the_operators_own_messages() {
    let brief_row = show(
        EventKind::BriefCreated,
        brief("result", "done", "turn_result", None),
    );
    let needs = show(
        EventKind::BriefCreated,
        brief("result", "which?", "action_required", None),
    );
    let refused = show(
        EventKind::MessageRejected,
        json!({ "kind": "operator_prompt", "hint": "resume first" }),
    );
    let mine = show(EventKind::MessageAdmitted, operator_prompt("hi"));
    for p in [&brief_row, &needs, &refused, &mine] {
        assert_eq!(modes(p), [true, true, true], "{p:?}");
    }
}

#[test]
fn verbose_adds_progress_and_tool_rows() {
    let progress = show(
        EventKind::AssistantRoundRecorded,
        json!({ "text_preview": "thinking" }),
    );
    let tool = show(
        EventKind::ToolExecuted,
        json!({ "tool_name": "ExecCommand", "arguments": { "cmd": "ls" } }),
    );
    let task_done = show(
        EventKind::TaskStatusChanged,
        status_change(TaskStatus::Completed, Some(0), "exit status 0", Some(5)),
    );
    for p in [&progress, &tool, &task_done] {
        assert_eq!(modes(p), [false, true, true], "{p:?}");
    }
    let tick = envelope(
        MessageKind::TaskResult,
        MessageOrigin::Task {
            task_id: "task_1".into(),
        },
        "done",
    );
    let runtime_input = show(
        EventKind::MessageAdmitted,
        json!({ "message": tick, "queue_status": "queued", "admission_seq": 2 }),
    );
    assert!(!shows(DisplayMode::Info, &runtime_input));
}

#[test]
fn debug_adds_curated_trace_but_not_state_sync_or_telemetry() {
    let d = decision(SchedulerDecisionKind::Sleep, DecisionReason::NoRunnableWork);
    let scheduler = show(EventKind::SchedulerDecision, decided(d));
    let task_running = show(
        EventKind::TaskStatusChanged,
        status_change(TaskStatus::Running, None, "cargo build", None),
    );
    for p in [&scheduler, &task_running] {
        assert_eq!(modes(p), [false, false, true], "{p:?}");
    }
    let state = show(
        EventKind::AgentStateChanged,
        json!({ "from": "awake_idle", "to": "asleep", "cause": "Sleep" }),
    );
    let telemetry = show(EventKind::ProviderRoundCompleted, json!({ "round": 1 }));
    let mode = show(
        EventKind::DisplayModeChanged,
        json!({ "from": "info", "to": "debug" }),
    );
    for p in [&state, &telemetry, &mode] {
        assert!(
            !p.summary.starts_with("Unreadable"),
            "read as its kind: {p:?}"
        );
        assert_eq!(modes(p), [false, false, false], "{p:?}");
    }
}

#[test]
fn human_line_has_seq_time_visibility_category_summary() {
    let e = record(
        "brief_created",
        brief("result", "All done.", "turn_result", None),
    );
    let line = human_line(&e, &present(&e));
    assert_eq!(
        line,
        "    7 04:42:17 turn_result     brief                 Result: All done."
    );

    let mut odd = record("agent_created", json!({}));
    odd.ts = "yesterday".into();
    let line = human_line(&odd, &present(&odd));
    assert_eq!(
        line,
        "    7 yesterday trace           trace                 Unreadable `agent_created` event (a different Holon version wrote it?)"
    );
    odd.ts = String::new();
    assert!(human_line(&odd, &present(&odd)).starts_with("    7 --:--:-- trace"));
}

#[test]
fn durations_read_naturally() {
    let cases = [
        (0, "0 ms"),
        (999, "999 ms"),
        (1_000, "1.0 s"),
        (59_999, "59.9 s"),
        (60_000, "1m 00s"),
        (3_599_999, "59m 59s"),
        (3_600_000, "1h 00m"),
        (u64::MAX, "5124095576030h 25m"),
    ];
    for (ms, want) in cases {
        assert_eq!(duration(ms), want, "{ms}");
    }
}

#[test]
fn compaction_is_one_quiet_row_and_checkpoints_are_trace() {
    let p = show(
        EventKind::ContextCompacted,
        json!({"compacted_turns": 38, "summary_tokens": 1_200, "summary_source": "model", "epoch": 3}),
    );
    check(
        &p,
        Visibility::Progress,
        Category::Runtime,
        "Context compacted: 38 turns → 1.2k-token summary",
    );
    assert_eq!(
        crate::ui::tui::conversation::min_mode(&p),
        Some(DisplayMode::Verbose)
    );
    let fallback = show(
        EventKind::ContextCompacted,
        json!({"compacted_turns": 1, "summary_tokens": 300, "summary_source": "extractive"}),
    );
    assert_eq!(
        fallback.summary,
        "Context compacted: 1 turn → 300-token summary (extractive)"
    );
    let c = show(
        EventKind::TurnCheckpoint,
        json!({"recapped_rounds": [1, 2], "invalidated_anchor": {"revision": 4}}),
    );
    check(
        &c,
        Visibility::Trace,
        Category::Runtime,
        "Turn checkpoint: 2 earlier round(s) recapped; work item moved on from revision 4",
    );
}

#[test]
fn mcp_calls_name_their_server_and_tool_and_say_the_result() {
    let call = |is_error: bool, preview: &str| {
        json!({ "run_id": "run_1", "tool_execution_id": "tool_1", "call_id": "call_1",
            "tool_name": "mcp__github__get_issue", "arguments": { "repo": "holon", "number": 7 },
            "is_error": is_error, "duration_ms": 42, "result_preview": preview })
    };
    let ok = show(
        EventKind::ToolExecuted,
        call(
            false,
            r#"{"ok":true,"text":"Issue 7: the console wedges\nbody"}"#,
        ),
    );
    check(
        &ok,
        Visibility::Trace,
        Category::Tool,
        "github · get_issue: holon (42 ms) → Issue 7: the console wedges",
    );
    assert_eq!(ok.title, "github · get_issue");
    let failed = show(
        EventKind::ToolExecuted,
        call(
            true,
            r#"{"ok":false,"kind":"failed","message":"not found"}"#,
        ),
    );
    check(
        &failed,
        Visibility::Trace,
        Category::Tool,
        "github · get_issue failed: holon (42 ms) → not found",
    );
    // A preview cut short is no JSON: the line stops at the duration.
    let cut = show(EventKind::ToolExecuted, call(false, r#"{"ok":true,"te"#));
    assert_eq!(cut.summary, "github · get_issue: holon (42 ms)");
}

#[test]
fn hook_ran_shows_refusals_and_a_first_failure_only() {
    let run = |outcome: &str, failures: u32, extra: Value| {
        let mut p = json!({
            "hook": "guard", "event": "pre_tool", "tool": "ExecCommand",
            "outcome": outcome, "duration_ms": 12, "failures": failures,
            "refused": false, "sandboxed": true, "output_bytes": 0, "timed_out": false,
        });
        if let (Some(p), Some(extra)) = (p.as_object_mut(), extra.as_object()) {
            p.extend(extra.clone());
        }
        show(EventKind::HookRan, p)
    };
    let denied = run("denied", 0, json!({"refused": true, "reason": "no pushes"}));
    check(
        &denied,
        Visibility::Progress,
        Category::Runtime,
        "Hook `guard` (pre_tool, ExecCommand) refused the call: no pushes",
    );
    let first = run(
        "failed",
        1,
        json!({"error": "exited 1: boom", "refused": true}),
    );
    check(
        &first,
        Visibility::TurnResult,
        Category::OperatorNotification,
        "Hook `guard` (pre_tool, ExecCommand) failed; the call was refused (on_error = deny): exited 1: boom",
    );
    assert!(first
        .body
        .is_some_and(|b| b.contains("holon hooks test pre_tool")));
    let again = run("failed", 2, json!({"error": "exited 1: boom"}));
    check(
        &again,
        Visibility::Trace,
        Category::Runtime,
        "Hook `guard` (pre_tool, ExecCommand) failed again (2 in a row)",
    );
    let fine = run("allowed", 0, json!({}));
    check(
        &fine,
        Visibility::Trace,
        Category::Runtime,
        "Hook `guard` (pre_tool, ExecCommand) allowed the call in 12 ms",
    );
    let told = show(
        EventKind::HookRan,
        json!({"hook": "notify", "event": "brief", "outcome": "done", "duration_ms": 3}),
    );
    assert_eq!(told.summary, "Hook `notify` (brief) ran in 3 ms");
}
