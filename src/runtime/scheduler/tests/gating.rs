//! Gating (stopped, paused, turn in progress), message selection by
//! priority band and admission order, replay classification, and the
//! StartModelTurn versus ReduceMessageOnly hand-off to continuation.

use super::*;
use crate::model::message::{MessageBody, MessageKind, Priority};
use crate::model::task::TaskStatus;
use crate::model::task::WaitPolicy;
use crate::model::work::PlanStatus;

use crate::model::decision::SchedulerDecisionKind as K;

#[test]
fn stopped_agent_stops_whatever_is_pending() {
    let mut w = busy_world();
    w.agent.status = AgentStatus::Stopped;
    for input in [
        SchedulerInput::Message,
        SchedulerInput::WakeHint,
        SchedulerInput::Idle,
    ] {
        let d = decide(&w.projection(), input);
        assert_eq!(d.kind, K::Stop);
        assert_eq!(d.message_id, None);
        assert!(has(&d, "queued_input_held:m1"));
    }
}

#[test]
fn paused_agent_never_starts_a_turn_or_emits_ticks() {
    let mut w = busy_world();
    w.agent.status = AgentStatus::Paused;
    let d = w.decide();
    assert_eq!((d.kind, d.reason), (K::Noop, DecisionReason::Paused));
    assert!(
        has(&d, "paused") && has(&d, "queued_input_held:m1") && has(&d, "pending_wake_hint_held")
    );
    // Even with nothing but runnable work, a paused agent does nothing.
    let mut only_work = World::new();
    only_work.agent.status = AgentStatus::Paused;
    only_work.current("w1", 1);
    assert_eq!(only_work.decide().kind, K::Noop);
    only_work.agent.status = AgentStatus::AwakeIdle;
    assert_eq!(only_work.decide().kind, K::EmitSystemTick);
}

#[test]
fn turn_in_progress_is_noop_and_names_operator_interjections() {
    let mut w = busy_world();
    w.agent.turn_in_progress = true;
    w.msg(
        "m_int",
        MessageKind::OperatorPrompt,
        Priority::Interject,
        QueueEntryStatus::Queued,
    );
    w.msg(
        "m_sys",
        MessageKind::InternalFollowup,
        Priority::Interject,
        QueueEntryStatus::Queued,
    );
    let d = w.decide();
    assert_eq!(
        (d.kind, d.reason),
        (K::Noop, DecisionReason::TurnInProgress)
    );
    assert!(has(&d, "operator_interjection_pending:m_int"));
    assert!(!has(&d, "operator_interjection_pending:m_sys"));
}

#[test]
fn queued_input_outranks_wake_hint_work_and_waits() {
    let d = busy_world().decide();
    assert_eq!(d.kind, K::StartModelTurn);
    assert_eq!(d.message_id.as_deref(), Some("m1"));
    assert!(d.model_reentry && !d.liveness_only);
}

#[test]
fn next_message_is_chosen_by_priority_band_then_admission_order() {
    let mut w = World::new();
    w.msg(
        "bg",
        MessageKind::OperatorPrompt,
        Priority::Background,
        QueueEntryStatus::Queued,
    );
    w.msg(
        "n1",
        MessageKind::OperatorPrompt,
        Priority::Normal,
        QueueEntryStatus::Queued,
    );
    w.msg(
        "n2",
        MessageKind::OperatorPrompt,
        Priority::Normal,
        QueueEntryStatus::Queued,
    );
    w.msg(
        "nx",
        MessageKind::OperatorPrompt,
        Priority::Next,
        QueueEntryStatus::Queued,
    );
    let p = w.projection();
    assert_eq!(p.replay_message_ids, vec!["nx", "n1", "n2", "bg"]);
    assert_eq!(
        decide(&p, SchedulerInput::Message).message_id.as_deref(),
        Some("nx")
    );
}

#[test]
fn replay_classification_only_queued_and_dequeued_are_pending() {
    let mut w = World::new();
    let all = [
        ("q", QueueEntryStatus::Queued),
        ("d", QueueEntryStatus::Dequeued),
        ("p", QueueEntryStatus::Processed),
        ("a", QueueEntryStatus::Aborted),
        ("i", QueueEntryStatus::Interjected),
        ("x", QueueEntryStatus::Dropped),
    ];
    for (id, st) in all.iter().rev() {
        w.msg(id, MessageKind::OperatorPrompt, Priority::Normal, *st);
    }
    w.tools.push(ToolExecutionRef {
        id: "call_1".into(),
        message_id: Some("d".into()),
    });
    let p = w.projection();
    assert_eq!(p.replay_message_ids, vec!["d", "q"]);
    assert_eq!(p.tool_executions, vec!["call_1"]);
    let d = decide(&p, SchedulerInput::Idle);
    assert_eq!(d.message_id.as_deref(), Some("d"));
    assert!(has(&d, "replay_dequeued_message:d"));
    assert!(has(&d, "tool_execution_not_replayed:call_1"));
}

#[test]
fn observational_and_plain_tick_messages_reduce_without_a_turn() {
    for kind in [
        MessageKind::TaskStatus,
        MessageKind::Control,
        MessageKind::BriefAck,
    ] {
        let mut w = World::new();
        w.msg("m", kind, Priority::Normal, QueueEntryStatus::Queued);
        let d = w.decide();
        assert_eq!(
            (d.kind, d.reason),
            (K::ReduceMessageOnly, DecisionReason::LivenessOnlyInput)
        );
        assert!(d.liveness_only && !d.model_reentry);
    }
    let mut w = World::new();
    w.msg(
        "tick",
        MessageKind::SystemTick,
        Priority::Normal,
        QueueEntryStatus::Queued,
    )
    .body = MessageBody::Text {
        text: String::new(),
    };
    assert_eq!(w.decide().kind, K::ReduceMessageOnly);
}

#[test]
fn blocking_task_result_resumes_the_wait_it_satisfied_but_background_result_does_not() {
    // Terminal state was persisted before the result was queued; an
    // agent-scoped waiting intent is also active.
    let mut w = World::new();
    w.intent("i_agent", None);
    w.task("t_block", TaskStatus::Completed, WaitPolicy::Blocking, None);
    w.msg(
        "r1",
        MessageKind::TaskResult,
        Priority::Next,
        QueueEntryStatus::Queued,
    )
    .task_id = Some("t_block".into());
    let p = w.projection();
    assert!(p.active_tasks.is_empty() && !p.has_blocking_active_tasks);
    let d = decide(&p, SchedulerInput::Message);
    assert_eq!(d.kind, K::StartModelTurn);
    assert!(has(&d, "continuation:resume_expected_wait"));
    assert!(has(&d, "terminal_blocking_task_result:t_block"));
    assert_eq!(d.task_id.as_deref(), Some("t_block"));

    w.tasks[0].wait_policy = WaitPolicy::Background;
    let d = w.decide();
    assert_eq!(d.kind, K::ReduceMessageOnly);
    assert!(has(
        &d,
        "mismatched_trigger:task_result:awaiting_external_change"
    ));
}

#[test]
fn mismatched_trigger_stays_liveness_only_and_operator_input_overrides() {
    let mut w = World::new();
    w.current("w1", 2).plan_status = PlanStatus::NeedsInput;
    w.msg(
        "tick",
        MessageKind::TimerTick,
        Priority::Normal,
        QueueEntryStatus::Queued,
    );
    let d = w.decide();
    assert_eq!(d.kind, K::ReduceMessageOnly);
    assert!(has(
        &d,
        "mismatched_trigger:timer_fire:awaiting_operator_input"
    ));
    w.entries[0].status = QueueEntryStatus::Processed;
    w.prompt("op");
    let d = w.decide();
    assert_eq!(d.kind, K::StartModelTurn);
    assert!(has(&d, "continuation:resume_expected_wait"));
}
