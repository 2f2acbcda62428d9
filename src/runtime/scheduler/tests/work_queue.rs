//! Work-queue behaviour: wake hint priority, tick idempotency per
//! revision, queued items never focused, readiness and the wait order.

use super::*;
use crate::model::decision::ClosureOutcome;
use crate::model::decision::ReactivationMode;
use crate::model::message::{MessageBody, MessageKind, Priority};
use crate::model::task::TaskKind;
use crate::model::task::TaskStatus;
use crate::model::task::WaitPolicy;
use crate::model::work::{PlanStatus, WorkItemState};
use crate::runtime::continuation::system_tick_metadata;

use crate::model::decision::SchedulerDecisionKind as K;

#[test]
fn wake_hint_outranks_work_queue_ticks_until_its_key_is_emitted() {
    let mut w = World::new();
    w.current("w1", 3);
    w.wake_hint(7);
    let d = w.decide();
    assert_eq!(
        (d.kind, d.reason),
        (K::EmitSystemTick, DecisionReason::WakeHint)
    );
    assert_eq!(d.idempotency_key.as_deref(), Some("wake_hint:ci:7"));
    assert!(d.liveness_only && has(&d, "wake_hint_outranks_work_queue"));
    w.keys.insert("wake_hint:ci:7".into());
    let d = w.decide();
    assert_eq!(d.reason, DecisionReason::ContinueActive);
    assert!(has(&d, "duplicate_tick_suppressed:wake_hint:ci:7"));
    w.wake_hint(8);
    assert_eq!(w.decide().reason, DecisionReason::WakeHint);
}

#[test]
fn continue_active_tick_is_idempotent_per_revision() {
    let mut w = World::new();
    w.current("w1", 3);
    let d = w.decide();
    assert_eq!(
        (d.kind, d.reason),
        (K::EmitSystemTick, DecisionReason::ContinueActive)
    );
    assert_eq!(d.work_item_id.as_deref(), Some("w1"));
    let key = work_queue_tick_key(SystemTickReason::ContinueActive, "w1", 3);
    assert_eq!(d.idempotency_key.as_deref(), Some(key.as_str()));
    assert_eq!(key, "work_queue:continue_active:w1:3");
    w.keys.insert(key.clone());
    let d = w.decide();
    assert_eq!(
        (d.kind, d.reason),
        (K::Sleep, DecisionReason::RunnableWorkAlreadyTicked)
    );
    assert!(has(&d, &format!("duplicate_tick_suppressed:{key}")));
    assert!(!has(&d, "no_runnable_work"));
    w.work[0].revision = 4;
    let d = w.decide();
    assert_eq!(d.kind, K::EmitSystemTick);
    assert_eq!(
        d.idempotency_key.as_deref(),
        Some("work_queue:continue_active:w1:4")
    );
}

#[test]
fn queued_work_is_offered_but_never_becomes_current() {
    let mut w = World::new();
    w.work("w_done", 1).state = WorkItemState::Completed;
    w.work("w_q", 5);
    let p = w.projection();
    assert_eq!(p.current_work_item_id, None);
    assert_eq!(p.queued_work_items, vec!["w_q"]);
    let d = decide(&p, SchedulerInput::QueuedAvailable);
    assert_eq!(
        (d.kind, d.reason),
        (K::EmitSystemTick, DecisionReason::QueuedAvailable)
    );
    assert_eq!(
        d.idempotency_key.as_deref(),
        Some("work_queue:queued_available:w_q:5")
    );
    assert!(has(&d, "current_work_item_unchanged"));
    let signal = p.closure().work_signal;
    assert_eq!(
        signal.map(|s| s.reactivation_mode),
        Some(ReactivationMode::ActivateQueued)
    );
    assert_eq!(p.current_work_item_revision, None);
    // While a current item is runnable, queued items are not offered even
    // after the current item's tick was suppressed.
    w.current("w_cur", 1);
    w.keys.insert("work_queue:continue_active:w_cur:1".into());
    let d = w.decide();
    assert_eq!(d.kind, K::Sleep);
    assert!(!has(&d, "queued_work_item_runnable:w_q"));
}

#[test]
fn suppressed_queued_item_falls_through_to_the_next_one() {
    let mut w = World::new();
    w.work("w_a", 1);
    w.work("w_b", 2);
    w.keys.insert("work_queue:queued_available:w_a:1".into());
    let d = w.decide();
    assert_eq!(d.work_item_id.as_deref(), Some("w_b"));
    assert!(has(
        &d,
        "duplicate_tick_suppressed:work_queue:queued_available:w_a:1"
    ));
}

#[test]
fn background_tasks_do_not_block_work_queue_ticks_but_bound_blocking_tasks_do() {
    let mut w = World::new();
    w.current("w1", 1);
    w.task(
        "t_bg",
        TaskStatus::Running,
        WaitPolicy::Background,
        Some("w1"),
    );
    let d = w.decide();
    assert_eq!(d.reason, DecisionReason::ContinueActive);
    assert!(has(&d, "active_task_not_waiting:t_bg"));
    w.task(
        "t_blk",
        TaskStatus::Running,
        WaitPolicy::Blocking,
        Some("w1"),
    );
    let p = w.projection();
    assert_eq!(
        p.work_item("w1").map(|v| v.state),
        Some(WorkItemSchedulingState::WaitingTask)
    );
    let d = decide(&p, SchedulerInput::Idle);
    assert_eq!(d.kind, K::WaitForTask);
    assert_eq!(
        (d.task_id.as_deref(), d.work_item_id.as_deref()),
        (Some("t_blk"), Some("w1"))
    );
    assert_eq!(
        posture_after(AgentStatus::AwakeIdle, &d),
        Some(AgentStatus::AwaitingTask)
    );
}

#[test]
fn terminal_tasks_are_never_active_and_legacy_kinds_never_block() {
    let mut w = World::new();
    for (id, st) in [
        ("c", TaskStatus::Completed),
        ("f", TaskStatus::Failed),
        ("x", TaskStatus::Cancelled),
        ("i", TaskStatus::Interrupted),
    ] {
        w.task(id, st, WaitPolicy::Blocking, None);
    }
    w.task("legacy", TaskStatus::Running, WaitPolicy::Blocking, None)
        .kind = TaskKind::SubagentTask;
    let p = w.projection();
    assert_eq!(p.active_tasks, vec!["legacy"]);
    assert!(!p.has_blocking_active_tasks);
    assert_eq!(decide(&p, SchedulerInput::Idle).kind, K::Sleep);
    w.task("q", TaskStatus::Cancelling, WaitPolicy::Blocking, None);
    assert!(w.projection().has_blocking_active_tasks);
}

#[test]
fn work_item_waits_make_items_not_runnable_and_agent_waits_do_not() {
    let mut w = World::new();
    w.current("w1", 1).blocked_by = Some("waiting for CI".into());
    w.intent("i_w1", Some("w1"));
    w.intent("i_agent", None);
    let p = w.projection();
    assert_eq!(
        p.work_item("w1").map(|v| v.state),
        Some(WorkItemSchedulingState::WaitingExternal)
    );
    assert_eq!(p.active_work_item_waiting_intents, vec!["i_w1"]);
    assert_eq!(p.active_agent_waiting_intents, vec!["i_agent"]);
    let d = decide(&p, SchedulerInput::Idle);
    assert_eq!(d.kind, K::WaitForExternalChange);
    assert_eq!(d.work_item_id.as_deref(), Some("w1"));
    // An agent-scoped wait alone leaves the item runnable.
    let mut w = World::new();
    w.current("w1", 1);
    w.intent("i_agent", None);
    assert_eq!(w.decide().reason, DecisionReason::ContinueActive);
}

#[test]
fn scheduling_state_precedence() {
    use WorkItemSchedulingState as S;
    let mut w = World::new();
    w.work("done", 1).state = WorkItemState::Completed;
    w.work("input", 1).plan_status = PlanStatus::NeedsInput;
    w.work("task", 1).blocked_by = Some("x".into());
    w.work("ext", 1).blocked_by = Some("x".into());
    w.work("tmr", 1);
    w.work("blk", 1).blocked_by = Some("vendor".into());
    w.work("draft", 1).plan_status = PlanStatus::Draft;
    w.task("t", TaskStatus::Queued, WaitPolicy::Blocking, Some("task"));
    w.task(
        "t_input",
        TaskStatus::Running,
        WaitPolicy::Blocking,
        Some("input"),
    );
    w.intent("i", Some("ext"));
    w.timer("tm", NOW, Some("tmr"));
    let p = w.projection();
    let states: Vec<(&str, S)> = p
        .work_item_states()
        .iter()
        .map(|v| (v.id.as_str(), v.state))
        .collect();
    assert_eq!(
        states,
        vec![
            ("done", S::Completed),
            ("input", S::WaitingOperator),
            ("task", S::WaitingTask),
            ("ext", S::WaitingExternal),
            ("tmr", S::WaitingTimer),
            ("blk", S::Blocked),
            ("draft", S::Runnable),
        ]
    );
    assert_eq!(p.runnable_work_items, vec!["draft"]);
    assert_eq!(p.queued_work_items, vec!["input", "tmr", "draft"]);
}

#[test]
fn legacy_detail_work_item_binds_a_blocking_task() {
    let mut w = World::new();
    w.current("w1", 1);
    w.task("t", TaskStatus::Running, WaitPolicy::Blocking, None)
        .detail =
        crate::model::task::TaskDetail::from_value(serde_json::json!({ "work_item_id": "w1" }));
    assert_eq!(
        w.projection().work_item("w1").map(|v| v.state),
        Some(WorkItemSchedulingState::WaitingTask)
    );
}

#[test]
fn needs_input_waits_for_operator_and_completed_current_is_never_runnable() {
    let mut w = World::new();
    w.current("w1", 1).state = WorkItemState::Completed;
    let d = w.decide();
    assert_eq!(d.kind, K::Sleep);
    assert!(has(&d, "current_work_item_completed:w1"));
    w.work("w2", 1).plan_status = PlanStatus::NeedsInput;
    let d = w.decide();
    assert_eq!(
        (d.kind, d.work_item_id.as_deref()),
        (K::WaitForOperator, Some("w2"))
    );
    assert_eq!(w.projection().closure().outcome, ClosureOutcome::Waiting);
}

#[test]
fn wait_order_is_task_operator_external_timer_then_sleep_or_stay_idle() {
    let mut w = World::new();
    w.task("t", TaskStatus::Running, WaitPolicy::Blocking, None);
    w.work("w_in", 1).plan_status = PlanStatus::NeedsInput;
    w.intent("i", None);
    w.timer("tm", NOW - 1, None);
    assert_eq!(w.decide().kind, K::WaitForTask);
    w.tasks.clear();
    assert_eq!(w.decide().kind, K::WaitForOperator);
    w.work.clear();
    assert_eq!(w.decide().kind, K::WaitForExternalChange);
    w.intents.clear();
    let d = w.decide();
    assert_eq!(d.kind, K::WaitForTimer);
    assert!(has(&d, "timer_due:tm"));
    w.timers.clear();
    assert_eq!(w.decide().kind, K::Sleep);
    w.agent.status = AgentStatus::Asleep;
    let d = w.decide();
    assert_eq!(d.kind, K::StayIdle);
    assert_eq!(posture_after(AgentStatus::Asleep, &d), None);
}

#[test]
fn work_queue_tick_message_continues_even_under_an_agent_wait() {
    let mut w = World::new();
    w.current("w1", 1);
    w.intent("i_agent", None);
    let tick = w.msg(
        "tick",
        MessageKind::SystemTick,
        Priority::Normal,
        QueueEntryStatus::Queued,
    );
    tick.body = MessageBody::Text {
        text: String::new(),
    };
    tick.metadata = Some(system_tick_metadata(
        SystemTickReason::ContinueActive,
        "work_queue:continue_active:w1:1",
    ));
    let d = w.decide();
    assert_eq!(d.kind, K::StartModelTurn);
    assert!(has(&d, "continuation:local_continuation"));
}

#[test]
fn posture_after_never_overrides_control_postures() {
    let mut w = World::new();
    w.prompt("m");
    let start = w.decide();
    assert_eq!(
        posture_after(AgentStatus::Asleep, &start),
        Some(AgentStatus::AwakeRunning)
    );
    for control in [
        AgentStatus::Paused,
        AgentStatus::Stopped,
        AgentStatus::Booting,
    ] {
        assert_eq!(posture_after(control, &start), None);
    }
    let mut idle = World::new();
    idle.agent.status = AgentStatus::AwakeIdle;
    let sleep = idle.decide();
    assert_eq!(
        posture_after(AgentStatus::AwakeIdle, &sleep),
        Some(AgentStatus::Asleep)
    );
}

#[test]
fn decision_serialises_as_scheduler_decision_event_data() {
    let mut w = World::new();
    w.current("w1", 2);
    let v = serde_json::to_value(w.decide()).unwrap_or_default();
    assert_eq!(v["decision"], "EmitSystemTick");
    assert_eq!(v["reason"], "continue_active");
    assert_eq!(v["model_reentry"], false);
    assert_eq!(v["idempotency_key"], "work_queue:continue_active:w1:2");
    assert_eq!(v["evidence"][1], "runtime_idle");
}

#[test]
fn a_tick_keys_family_is_all_but_its_revision_or_generation() {
    let key = work_queue_tick_key(SystemTickReason::ContinueActive, "work_1", 7);
    assert_eq!(tick_key_family(&key), "work_queue:continue_active:work_1:");
    assert_eq!(
        tick_key_family(&key),
        work_queue_tick_family(SystemTickReason::ContinueActive, "work_1")
    );
    let other = work_queue_tick_key(SystemTickReason::QueuedAvailable, "work_1", 7);
    assert_ne!(tick_key_family(&key), tick_key_family(&other));
    assert!(!tick_key_family(&key).starts_with(tick_key_family(&other)));
    // An item whose id extends another's is not of its family.
    let longer = work_queue_tick_key(SystemTickReason::ContinueActive, "work_10", 1);
    assert!(!longer.starts_with(tick_key_family(&key)));
}
